/*
 * refs.c — which refs a bundle carries: by default HEAD, the source branch
 * and every tag that leads to a commit, or the refs named; for an
 * incremental bundle only those with new commits, and as prerequisites the
 * parents of new commits that are not new themselves.
 */
#include "bundle/bundle_int.h"

#include <stdlib.h>
#include <string.h>

void mcg_bundle_reflist_free(mcg_bundle_reflist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* Whether the list has a ref of that name. */
static bool breflist_has(const mcg_bundle_reflist *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, name))
            return true;
    return false;
}

/* Add ref `name` pointing at target; only refs that peel to a commit. */
static int breflist_add(mcg_bundle_reflist *l, git_repository *repo, const char *name,
                        const git_oid *target, mcg_err *err)
{
    git_object *obj = NULL, *peeled = NULL;
    int rc = 0;
    if (breflist_has(l, name))
        return 0;
    if (git_object_lookup(&obj, repo, target, GIT_OBJECT_ANY) != 0 ||
        git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT) != 0) {
        rc = mcg_err_set(err, MCG_EINVAL, "%s does not point to a commit", name);
        goto out;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = mcg_realloc(l->v, l->cap * sizeof(*l->v));
    }
    mcg_bundle_bref *b = &l->v[l->n++];
    b->name = mcg_strdup(name);
    b->target = *target;
    b->commit = *git_object_id(peeled);
out:
    git_object_free(peeled);
    git_object_free(obj);
    return rc;
}

/* HEAD first, then by name. */
static int bref_cmp(const void *a, const void *b)
{
    const mcg_bundle_bref *x = a, *y = b;
    /* HEAD first (as git writes it last-or-first does not matter to readers). */
    bool hx = !strcmp(x->name, "HEAD"), hy = !strcmp(y->name, "HEAD");
    if (hx != hy)
        return hx ? -1 : 1;
    return strcmp(x->name, y->name);
}

int mcg_bundle_refs_default(mcg_bundle_reflist *l, mcg_repo *r, mcg_err *err)
{
    char *branch = mcg_sprintf("refs/heads/%s", mcg_repo_source_branch(r));
    git_oid oid;
    git_reference_iterator *it = NULL;
    git_reference *ref = NULL;
    int rc = 0;
    if (git_reference_name_to_id(&oid, mcg_repo_git(r), branch) != 0) {
        rc = mcg_err_set(err, MCG_ENOTFOUND, "no branch '%s' to bundle", mcg_repo_source_branch(r));
        goto out;
    }
    if ((rc = breflist_add(l, mcg_repo_git(r), "HEAD", &oid, err)) != 0 ||
        (rc = breflist_add(l, mcg_repo_git(r), branch, &oid, err)) != 0)
        goto out;
    if (git_reference_iterator_glob_new(&it, mcg_repo_git(r), "refs/tags/*") != 0) {
        rc = mcg_git_err(err, "refs/tags");
        goto out;
    }
    while (git_reference_next(&ref, it) == 0) {
        git_reference *res = NULL;
        mcg_err ignore = {0};
        /* Tags that do not lead to a commit are not part of a config history. */
        if (git_reference_resolve(&res, ref) == 0 && git_reference_target(res))
            breflist_add(l, mcg_repo_git(r), git_reference_name(ref), git_reference_target(res),
                         &ignore);
        git_reference_free(res);
        git_reference_free(ref);
        ref = NULL;
    }
    /* approvals for the two-person rule travel with the history they approve */
    if (git_reference_name_to_id(&oid, mcg_repo_git(r), "refs/notes/mcgit-approvals") == 0)
        rc = breflist_add(l, mcg_repo_git(r), "refs/notes/mcgit-approvals", &oid, err);
out:
    git_reference_iterator_free(it);
    free(branch);
    return rc;
}

int mcg_bundle_refs_named(mcg_bundle_reflist *l, mcg_repo *r, const char *const *names, size_t n,
                          mcg_err *err)
{
    for (size_t i = 0; i < n; i++) {
        git_reference *ref = NULL, *res = NULL;
        int rc = 0;
        if (git_reference_dwim(&ref, mcg_repo_git(r), names[i]) != 0)
            return mcg_err_set(err, MCG_ENOTFOUND, "no ref '%s'", names[i]);
        if (git_reference_resolve(&res, ref) != 0 || !git_reference_target(res))
            rc = mcg_git_err(err, names[i]);
        else
            rc = breflist_add(l, mcg_repo_git(r), git_reference_name(ref),
                              git_reference_target(res), err);
        git_reference_free(res);
        git_reference_free(ref);
        if (rc)
            return rc;
    }
    return 0;
}

int mcg_bundle_walk_new(git_revwalk **out, mcg_repo *r, const mcg_bundle_reflist *refs,
                        const git_oid *since, mcg_err *err)
{
    git_revwalk *w = NULL;
    *out = NULL;
    if (git_revwalk_new(&w, mcg_repo_git(r)) != 0 || git_revwalk_sorting(w, GIT_SORT_TIME) != 0)
        goto fail;
    for (size_t i = 0; i < refs->n; i++)
        if (git_revwalk_push(w, &refs->v[i].commit) != 0)
            goto fail;
    if (since && git_revwalk_hide(w, since) != 0)
        goto fail;
    *out = w;
    return 0;
fail:
    git_revwalk_free(w);
    return mcg_git_err(err, "revwalk");
}

int mcg_bundle_refs_incremental(mcg_oidv *prereqs, mcg_bundle_reflist *refs, mcg_repo *r,
                                const git_oid *since, const char *since_name, mcg_err *err)
{
    git_revwalk *walk = NULL;
    mcg_oidv commits = {0};
    git_oid oid;
    int rc;
    if ((rc = mcg_bundle_walk_new(&walk, r, refs, since, err)) != 0)
        return rc;
    while ((rc = git_revwalk_next(&oid, walk)) == 0)
        mcg_oidv_push(&commits, &oid);
    if (rc != GIT_ITEROVER) {
        rc = mcg_git_err(err, "revwalk");
        goto out;
    }
    rc = 0;
    mcg_oidv_sort(&commits);
    for (size_t i = 0; i < commits.n; i++) {
        git_commit *c = NULL;
        if (git_commit_lookup(&c, mcg_repo_git(r), &commits.v[i]) != 0) {
            rc = mcg_git_err(err, "commit");
            goto out;
        }
        for (unsigned p = 0; p < git_commit_parentcount(c); p++)
            if (!mcg_oidv_has(&commits, git_commit_parent_id(c, p)))
                mcg_oidv_push(prereqs, git_commit_parent_id(c, p));
        git_commit_free(c);
    }
    mcg_oidv_sort(prereqs);
    size_t kept = 0;
    for (size_t i = 0; i < refs->n; i++) {
        if (!mcg_oidv_has(&commits, &refs->v[i].commit)) {
            free(refs->v[i].name);
            continue;
        }
        refs->v[kept++] = refs->v[i];
    }
    refs->n = kept;
    if (!refs->n || !commits.n)
        rc = mcg_err_set(err, MCG_EINVAL, "nothing to bundle: no new commits since %s", since_name);
out:
    git_revwalk_free(walk);
    mcg_oidv_free(&commits);
    return rc;
}

void mcg_bundle_refs_sort(mcg_bundle_reflist *l)
{
    if (l->n)
        qsort(l->v, l->n, sizeof(*l->v), bref_cmp);
}
