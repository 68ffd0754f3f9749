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

/* Add id, not yet located in a pack, with a candidate delta base (NULL: none). */
static void rset_add(mcg_bundle_objset *s, const git_oid *id, const git_oid *base)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->v = mcg_realloc(s->v, s->cap * sizeof(*s->v));
    }
    memset(&s->v[s->n], 0, sizeof(s->v[s->n]));
    s->v[s->n].id = *id;
    s->v[s->n].pack = -1;
    if (base) {
        s->v[s->n].has_base = true;
        s->v[s->n].base = *base;
    }
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
        rset_add(s, root, NULL);
    else
        mcg_oidmap_put(&s->have, root, 0);
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
                rset_add(s, &e, NULL);
            else
                mcg_oidmap_put(&s->have, &e, 0);
            if ((mode & 0170000) == 0040000)
                mcg_oidv_push(&stack, &e);
        }
        git_odb_object_free(obj);
    }
    mcg_oidv_free(&stack);
    return rc;
}

/* git's tree order: names bytewise, a tree's name as if followed by '/'. */
static int entry_order(const mcg_pack_tree_entry *a, const mcg_pack_tree_entry *b)
{
    size_t n = a->namelen < b->namelen ? a->namelen : b->namelen;
    int c = memcmp(a->name, b->name, n);
    if (c || a->namelen == b->namelen)
        return c;
    unsigned ca = a->namelen > n ? a->name[n] : ((a->mode & 0170000) == 0040000 ? '/' : 0);
    unsigned cb = b->namelen > n ? b->name[n] : ((b->mode & 0170000) == 0040000 ? '/' : 0);
    return (int)ca - (int)cb;
}

/* A tree to list and the same path's tree in the parent (zero: none). */
typedef struct tree_pair {
    git_oid tree, parent;
    bool has_parent;
} tree_pair;

/* The entries of raw tree obj into *v (n of them); false when malformed. */
static bool tree_entries(mcg_pack_tree_entry **v, size_t *n, git_odb_object *obj)
{
    const unsigned char *p = git_odb_object_data(obj), *end = p + git_odb_object_size(obj);
    size_t cap = 0;
    *n = 0;
    while (p < end) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 32;
            *v = mcg_realloc(*v, cap * sizeof(**v));
        }
        if (!mcg_pack_tree_entry_next(&(*v)[*n], &p, end))
            return false;
        (*n)++;
    }
    return true;
}

/*
 * Thin packs: every tree and blob below root not in s->seen, into s, each
 * with the object at its path below parent (when has_parent) as its
 * candidate delta base.
 */
static int rset_tree_thin(mcg_bundle_objset *s, git_odb *odb, const git_oid *root,
                          const git_oid *parent, mcg_err *err)
{
    tree_pair *stack = NULL;
    size_t n = 0, cap = 0;
    mcg_pack_tree_entry *te = NULL, *pe = NULL;
    size_t nte = 0, npe = 0;
    int rc = 0;
    if (!mcg_oidmap_put(&s->seen, root, 0))
        return 0;
    rset_add(s, root, parent);
    stack = mcg_malloc(sizeof(*stack));
    cap = 1;
    stack[n++] = (tree_pair){
        .tree = *root, .parent = parent ? *parent : (git_oid){{0}}, .has_parent = parent != NULL};
    while (n && !rc) {
        tree_pair tp = stack[--n];
        git_odb_object *obj = NULL, *pobj = NULL;
        npe = 0;
        if (git_odb_read(&obj, odb, &tp.tree) != 0 || git_odb_object_type(obj) != GIT_OBJECT_TREE) {
            git_odb_object_free(obj);
            rc = mcg_git_err(err, "tree");
            break;
        }
        if (!tree_entries(&te, &nte, obj) ||
            (tp.has_parent && git_odb_read(&pobj, odb, &tp.parent) == 0 &&
             git_odb_object_type(pobj) == GIT_OBJECT_TREE && !tree_entries(&pe, &npe, pobj)))
            rc = mcg_err_set(err, MCG_EIO, "a tree of the repo is malformed");
        for (size_t i = 0, j = 0; i < nte && !rc; i++) {
            const mcg_pack_tree_entry *e = &te[i];
            bool dir = (e->mode & 0170000) == 0040000;
            if ((e->mode & 0170000) == 0160000 || !mcg_oidmap_put(&s->seen, &e->id, 0))
                continue; /* a submodule, or already had */
            while (j < npe && entry_order(&pe[j], e) < 0)
                j++;
            const git_oid *base = NULL;
            if (j < npe && entry_order(&pe[j], e) == 0 &&
                ((pe[j].mode & 0170000) == 0040000) == dir && (pe[j].mode & 0170000) != 0160000)
                base = &pe[j].id;
            rset_add(s, &e->id, base);
            if (!dir)
                continue;
            if (n == cap) {
                cap *= 2;
                stack = mcg_realloc(stack, cap * sizeof(*stack));
            }
            stack[n++] = (tree_pair){
                .tree = e->id, .parent = base ? *base : (git_oid){{0}}, .has_parent = base != NULL};
        }
        git_odb_object_free(pobj);
        git_odb_object_free(obj);
    }
    free(stack);
    free(te);
    free(pe);
    return rc;
}

/*
 * Thin packs: the new commits oldest first, each with its new trees and
 * blobs, bases from its first parent (new, or a prerequisite).
 */
static int collect_thin(mcg_bundle_objset *s, mcg_repo *r, git_odb *odb,
                        const mcg_bundle_reflist *refs, const git_oid *since, mcg_err *err)
{
    git_revwalk *walk = NULL;
    mcg_oidv parents = {0};
    git_oid id;
    int rc = mcg_bundle_walk_new(&walk, r, refs, since, err);
    if (rc)
        return rc;
    if (git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE) != 0) {
        rc = mcg_git_err(err, "revwalk");
        goto out;
    }
    for (;;) {
        int wr = git_revwalk_next(&id, walk);
        if (wr == GIT_ITEROVER)
            break;
        if (wr != 0) {
            rc = mcg_git_err(err, "revwalk");
            break;
        }
        git_odb_object *obj = NULL, *pobj = NULL;
        git_oid tree, ptree;
        bool has_ptree = false;
        if (!mcg_oidmap_put(&s->seen, &id, 0))
            continue;
        if (git_odb_read(&obj, odb, &id) != 0) {
            rc = mcg_git_err(err, "commit");
            break;
        }
        parents.n = 0;
        if (!raw_commit_ids(&tree, &parents, git_odb_object_data(obj), git_odb_object_size(obj)))
            rc = mcg_err_set(err, MCG_EIO, "a commit of the repo is malformed");
        git_odb_object_free(obj);
        if (rc)
            break;
        rset_add(s, &id, parents.n ? &parents.v[0] : NULL);
        if (parents.n && git_odb_read(&pobj, odb, &parents.v[0]) == 0)
            has_ptree =
                raw_commit_ids(&ptree, NULL, git_odb_object_data(pobj), git_odb_object_size(pobj));
        git_odb_object_free(pobj);
        if ((rc = rset_tree_thin(s, odb, &tree, has_ptree ? &ptree : NULL, err)) != 0)
            break;
    }
out:
    mcg_oidv_free(&parents);
    git_revwalk_free(walk);
    return rc;
}

int mcg_bundle_collect(mcg_bundle_objset *s, mcg_repo *r, const mcg_bundle_reflist *refs,
                       const git_oid *since, const mcg_oidv *prereqs, mcg_err *err)
{
    git_odb *odb = NULL;
    git_oid id;
    int rc = 0;
    if (git_repository_odb(&odb, mcg_repo_git(r)) != 0)
        return mcg_git_err(err, "odb");
    for (size_t i = 0; i < prereqs->n && !rc; i++) {
        git_commit *c = NULL;
        mcg_oidmap_put(&s->have, &prereqs->v[i], 0);
        if (git_commit_lookup(&c, mcg_repo_git(r), &prereqs->v[i]) != 0)
            rc = mcg_git_err(err, "commit");
        else
            rc = rset_tree(s, odb, git_commit_tree_id(c), false, err);
        git_commit_free(c);
    }
    if (rc)
        goto out;
    if (since) {
        rc = collect_thin(s, r, odb, refs, since, err);
        goto tags;
    }
    /* A full bundle: all the commits the refs reach (a plain walk over raw commits, each read
     * once). */
    mcg_oidv todo = {0};
    for (size_t i = 0; i < refs->n; i++)
        mcg_oidv_push(&todo, &refs->v[i].commit);
    while (todo.n) {
        id = todo.v[--todo.n];
        git_odb_object *obj = NULL;
        git_oid tree;
        if (!mcg_oidmap_put(&s->seen, &id, 0))
            continue;
        rset_add(s, &id, NULL);
        if (git_odb_read(&obj, odb, &id) != 0) {
            rc = mcg_git_err(err, "commit");
            break;
        }
        if (!raw_commit_ids(&tree, &todo, git_odb_object_data(obj), git_odb_object_size(obj)))
            rc = mcg_err_set(err, MCG_EIO, "a commit of the repo is malformed");
        git_odb_object_free(obj);
        if (rc || (rc = rset_tree(s, odb, &tree, true, err)) != 0)
            break;
    }
    mcg_oidv_free(&todo);
tags:
    if (rc)
        goto out;
    for (size_t i = 0; i < refs->n && !rc; i++) {
        git_oid t = refs->v[i].target;
        for (int depth = 0; depth < 16; depth++) {
            git_tag *tag = NULL;
            if (git_object_lookup((git_object **)&tag, mcg_repo_git(r), &t, GIT_OBJECT_TAG) != 0)
                break;
            if (mcg_oidmap_put(&s->seen, &t, 0))
                rset_add(s, &t, NULL);
            t = *git_tag_target_id(tag);
            git_tag_free(tag);
        }
    }
out:
    git_odb_free(odb);
    return rc;
}

void mcg_bundle_objset_free(mcg_bundle_objset *s)
{
    free(s->v);
    mcg_oidmap_free(&s->seen);
    mcg_oidmap_free(&s->have);
    memset(s, 0, sizeof(*s));
}
