/*
 * connect.c — every object reachable from the bundle's refs must be in the pack or
 * already in the repo, as git's fetch checks (rev-list --objects): a bundle
 * complete only in its header is refused before anything moves. The walk
 * reads each commit, tag and tree of the pack that the refs reach, once;
 * an object the repo already has ends the walk there (the repo is taken to
 * be complete), and blobs are only looked up, never read. When the pack
 * scan read the whole pack (view->scan set), its links answer instead:
 * every id an object of the pack names must be in the pack or the repo.
 */
#include "bundle/bundle_int.h"

#include <stdlib.h>

typedef struct pending_obj {
    git_oid id, by; /* the object, and what named it (for the message) */
} pending_obj;

typedef struct objstack {
    pending_obj *v;
    size_t n, cap;
} objstack;

/* Push id, named by by, to be checked. */
static void objstack_push(objstack *s, const git_oid *id, const git_oid *by)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->v = mcg_realloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n].id = *id;
    s->v[s->n].by = *by;
    s->n++;
}

/* The refusal: by names id, which neither the pack nor the repo has. */
static int incomplete(mcg_err *err, const git_oid *by, const git_oid *id)
{
    char a[MCG_SHA_HEX + 1], b[MCG_SHA_HEX + 1];
    git_oid_tostr(a, sizeof(a), by);
    git_oid_tostr(b, sizeof(b), id);
    return mcg_err_set(err, MCG_EINVAL,
                       "incomplete bundle: object %s needs %s, which neither the bundle nor the "
                       "repo has",
                       a, b);
}

/* mcg_pack_commit_links' callback: collect a parent. */
static void push_parent(const git_oid *id, void *parents)
{
    mcg_oidv_push(parents, id);
}

/* What a raw commit names: its tree and parents. */
static bool raw_commit_links(objstack *todo, const git_oid *self, const char *p, size_t len)
{
    mcg_oidv parents = {0};
    git_oid tree;
    bool ok = mcg_pack_commit_links(&tree, push_parent, &parents, p, len);
    if (ok) {
        for (size_t i = 0; i < parents.n; i++)
            objstack_push(todo, &parents.v[i], self);
        objstack_push(todo, &tree, self);
    }
    mcg_oidv_free(&parents);
    return ok;
}

/* What a raw tag names: "object <hex>\n" first. */
static bool raw_tag_link(objstack *todo, const git_oid *self, const char *p, size_t len)
{
    git_oid id;
    if (!mcg_pack_tag_target(&id, p, len))
        return false;
    objstack_push(todo, &id, self);
    return true;
}

/*
 * Check a raw tree's entries ("<octal mode> <name>\0<20-byte id>"):
 * subtrees go to todo, blobs must be in the pack or the repo, submodules
 * (mode 160000) are links to other repositories. False when malformed.
 */
static bool raw_tree_links(mcg_bundle_conn *c, git_odb *odb, mcg_oidmap *seen, objstack *todo,
                           const git_oid *self, const unsigned char *p, size_t len, int *rc)
{
    const unsigned char *end = p + len;
    mcg_pack_tree_entry e;
    while (p < end && !*rc) {
        if (!mcg_pack_tree_entry_next(&e, &p, end))
            return false;
        if ((e.mode & 0170000) == 0040000) {
            if (!mcg_oidmap_get(seen, &e.id, NULL))
                objstack_push(todo, &e.id, self);
        } else if ((e.mode & 0170000) != 0160000) {
            /* A blob is only looked up: in the pack, or in the repo. */
            if (mcg_oidmap_put(seen, &e.id, 0) && !mcg_oidmap_get(c->pack, &e.id, NULL) &&
                !git_odb_exists(odb, &e.id))
                *rc = incomplete(&c->err, self, &e.id);
        }
    }
    return true;
}

int mcg_bundle_check_connected(mcg_bundle_conn *c)
{
    git_odb *odb = NULL;
    mcg_oidmap seen = {0};
    objstack todo = {0};
    mcg_err *err = &c->err;
    int rc = 0;
    if (git_repository_odb(&odb, mcg_repo_git(c->view)) != 0) {
        rc = mcg_git_err(err, "quarantine");
        goto out;
    }
    if (c->scan) {
        /*
         * The scan read every commit, tree and tag of the pack: each id they
         * name must be in the pack or the repo (git's index-pack checks the
         * same, as it indexes). The tips were looked up already.
         */
        const git_oid *by = NULL, *missing = NULL;
        if (mcg_packscan_connected(c->scan, mcg_bundle_in_pack, (void *)c->pack, odb, &by,
                                   &missing))
            rc = incomplete(err, by ? by : missing, missing);
        goto out;
    }
    for (size_t i = 0; i < c->ntips; i++)
        objstack_push(&todo, &c->tips[i], &c->tips[i]);
    while (todo.n && !rc) {
        pending_obj p = todo.v[--todo.n];
        if (!mcg_oidmap_put(&seen, &p.id, 0))
            continue; /* already checked */
        if (!mcg_oidmap_get(c->pack, &p.id, NULL)) {
            if (!git_odb_exists(odb, &p.id))
                rc = incomplete(err, &p.by, &p.id);
            continue;
        }
        git_odb_object *obj = NULL;
        if (git_odb_read(&obj, odb, &p.id) != 0) {
            rc = mcg_git_err(err, "damaged bundle");
            break;
        }
        const char *data = git_odb_object_data(obj);
        size_t len = git_odb_object_size(obj);
        bool ok = true;
        switch (git_odb_object_type(obj)) {
        case GIT_OBJECT_COMMIT:
            ok = raw_commit_links(&todo, &p.id, data, len);
            break;
        case GIT_OBJECT_TAG:
            ok = raw_tag_link(&todo, &p.id, data, len);
            break;
        case GIT_OBJECT_TREE:
            ok = raw_tree_links(c, odb, &seen, &todo, &p.id, (const unsigned char *)data, len, &rc);
            break;
        default:
            break;
        }
        git_odb_object_free(obj);
        if (!ok) {
            char sha[MCG_SHA_HEX + 1];
            git_oid_tostr(sha, sizeof(sha), &p.id);
            rc = mcg_err_set(err, MCG_EINVAL, "damaged bundle: object %s is malformed", sha);
        }
    }
out:
    free(todo.v);
    mcg_oidmap_free(&seen);
    git_odb_free(odb);
    c->rc = rc;
    return rc;
}
