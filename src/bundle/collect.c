/*
 * collect.c — the objects a bundle holds, listed one by one so that each
 * can be found in the repository's packs and its stored entry copied
 * (pack/reuse.c). The set is the packbuilder's: the new commits, every
 * tree and blob below them that the prerequisites' trees do not have, and
 * the tag objects the refs name. Submodule entries name commits of other
 * repositories and are left out, as git leaves them.
 */
#include "bundle/bundle_int.h"

#include <stdlib.h>
#include <string.h>

/* mcg_pack_commit_links' callback: collect a parent. */
static void push_parent(const git_oid *id, void *parents)
{
    mcg_oidv_push(parents, id);
}

/* The tree and parents (pushed to *parents, which may be NULL) of a raw commit. */
static bool raw_commit_ids(git_oid *tree, mcg_oidv *parents, const char *p, size_t len)
{
    return mcg_pack_commit_links(tree, parents ? push_parent : NULL, parents, p, len);
}

/* Add id, not yet located in a pack. */
static void rset_add(mcg_bundle_objset *s, const git_oid *id)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->v = mcg_realloc(s->v, s->cap * sizeof(*s->v));
    }
    memset(&s->v[s->n], 0, sizeof(s->v[s->n]));
    s->v[s->n].id = *id;
    s->v[s->n].pack = -1;
    s->n++;
}

/*
 * Every tree and blob below tree `root` that is not in s->seen: into seen,
 * and (unless only marking what the prerequisites have) into s.
 */
static int rset_tree(mcg_bundle_objset *s, git_odb *odb, const git_oid *root, bool add,
                     mcg_err *err)
{
    mcg_oidv stack = {0};
    int rc = 0;
    if (!mcg_oidmap_put(&s->seen, root, 0))
        return 0;
    if (add)
        rset_add(s, root);
    mcg_oidv_push(&stack, root);
    while (stack.n && !rc) {
        git_oid id = stack.v[--stack.n];
        git_odb_object *obj = NULL;
        if (git_odb_read(&obj, odb, &id) != 0 || git_odb_object_type(obj) != GIT_OBJECT_TREE) {
            git_odb_object_free(obj);
            rc = mcg_git_err(err, "tree");
            break;
        }
        const unsigned char *p = git_odb_object_data(obj), *end = p + git_odb_object_size(obj);
        while (p < end) {
            unsigned mode = 0;
            while (p < end && *p >= '0' && *p <= '7')
                mode = mode * 8 + (unsigned)(*p++ - '0');
            const unsigned char *nul = p < end ? memchr(p, '\0', (size_t)(end - p)) : NULL;
            if (!nul || end - nul - 1 < GIT_OID_RAWSZ) {
                rc = mcg_err_set(err, MCG_EIO, "a tree of the repo is malformed");
                break;
            }
            git_oid e;
            git_oid_fromraw(&e, nul + 1);
            p = nul + 1 + GIT_OID_RAWSZ;
            if ((mode & 0170000) == 0160000 || !mcg_oidmap_put(&s->seen, &e, 0))
                continue; /* a submodule, or already had */
            if (add)
                rset_add(s, &e);
            if ((mode & 0170000) == 0040000)
                mcg_oidv_push(&stack, &e);
        }
        git_odb_object_free(obj);
    }
    mcg_oidv_free(&stack);
    return rc;
}

int mcg_bundle_collect(mcg_bundle_objset *s, mcg_repo *r, const mcg_bundle_reflist *refs,
                       const git_oid *since, const mcg_oidv *prereqs, mcg_err *err)
{
    git_odb *odb = NULL;
    git_revwalk *walk = NULL;
    git_oid id;
    int rc = 0;
    if (git_repository_odb(&odb, r->git) != 0)
        return mcg_git_err(err, "odb");
    for (size_t i = 0; i < prereqs->n && !rc; i++) {
        git_commit *c = NULL;
        if (git_commit_lookup(&c, r->git, &prereqs->v[i]) != 0)
            rc = mcg_git_err(err, "commit");
        else
            rc = rset_tree(s, odb, git_commit_tree_id(c), false, err);
        git_commit_free(c);
    }
    /*
     * The commits: all those the refs reach for a full bundle (a plain walk
     * over raw commits, each read once), those not reachable from since
     * otherwise (libgit2's revwalk, which knows how to hide).
     */
    mcg_oidv todo = {0};
    if (since) {
        if ((rc = mcg_bundle_walk_new(&walk, r, refs, since, err)) != 0)
            goto out;
    } else {
        for (size_t i = 0; i < refs->n; i++)
            mcg_oidv_push(&todo, &refs->v[i].commit);
    }
    for (;;) {
        if (since) {
            int wr = git_revwalk_next(&id, walk);
            if (wr == GIT_ITEROVER)
                break;
            if (wr != 0) {
                rc = mcg_git_err(err, "revwalk");
                break;
            }
        } else if (todo.n) {
            id = todo.v[--todo.n];
        } else {
            break;
        }
        git_odb_object *obj = NULL;
        git_oid tree;
        if (!mcg_oidmap_put(&s->seen, &id, 0))
            continue;
        rset_add(s, &id);
        if (git_odb_read(&obj, odb, &id) != 0) {
            rc = mcg_git_err(err, "commit");
            break;
        }
        if (!raw_commit_ids(&tree, since ? NULL : &todo, git_odb_object_data(obj),
                            git_odb_object_size(obj)))
            rc = mcg_err_set(err, MCG_EIO, "a commit of the repo is malformed");
        git_odb_object_free(obj);
        if (rc || (rc = rset_tree(s, odb, &tree, true, err)) != 0)
            break;
    }
    mcg_oidv_free(&todo);
    if (rc)
        goto out;
    for (size_t i = 0; i < refs->n && !rc; i++) {
        git_oid t = refs->v[i].target;
        for (int depth = 0; depth < 16; depth++) {
            git_tag *tag = NULL;
            if (git_object_lookup((git_object **)&tag, r->git, &t, GIT_OBJECT_TAG) != 0)
                break;
            if (mcg_oidmap_put(&s->seen, &t, 0))
                rset_add(s, &t);
            t = *git_tag_target_id(tag);
            git_tag_free(tag);
        }
    }
out:
    git_revwalk_free(walk);
    git_odb_free(odb);
    return rc;
}

void mcg_bundle_objset_free(mcg_bundle_objset *s)
{
    free(s->v);
    mcg_oidmap_free(&s->seen);
    memset(s, 0, sizeof(*s));
}
