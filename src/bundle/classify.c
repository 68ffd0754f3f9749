/*
 * classify.c — what importing a bundle would do to each ref it lists. Only
 * branches and tags are imported (not HEAD, not the rendered branch, which
 * is made locally); a new ref is created, a branch moves only forward, an
 * identical ref is a no-op. A repo ahead of the bundle is "stale" — a
 * rollback, refused — and diverged history or a moved tag is refused too.
 */
#include "bundle/bundle_int.h"

#include <string.h>

/* Is a a descendant of b? 1 yes, 0 no, -1 history unreadable (err set). */
static int descends(git_repository *repo, const git_oid *a, const git_oid *b, mcg_err *err)
{
    int d = git_graph_descendant_of(repo, a, b);
    if (d < 0) {
        const git_error *e = git_error_last();
        mcg_err_set(err, MCG_EINVAL, "incomplete bundle: %s",
                    e && e->message ? e->message : "history cannot be read");
        return -1;
    }
    return d;
}

int mcg_bundle_classify(mcg_bundle_ref *br, mcg_repo *q, const git_oid *new_oid, mcg_err *err)
{
    const char *name = br->name;
    bool is_tag = !strncmp(name, "refs/tags/", 10);
    bool is_notes = !strcmp(name, "refs/notes/mcgit-approvals");
    if (!strcmp(name, "HEAD")) {
        br->note = "HEAD is not imported";
        return 0;
    }
    if (strncmp(name, "refs/heads/", 11) && !is_tag && !is_notes) {
        br->note = "only branches, tags and refs/notes/mcgit-approvals are imported";
        return 0;
    }
    if (!is_tag && !is_notes && !strcmp(name + 11, mcg_repo_rendered_branch(q))) {
        br->note = "the rendered branch is made locally";
        return 0;
    }
    return mcg_bundle_classify_any(br, q, new_oid, is_tag, err);
}

int mcg_bundle_classify_any(mcg_bundle_ref *br, mcg_repo *q, const git_oid *new_oid, bool is_tag,
                            mcg_err *err)
{
    const char *name = br->name;
    git_oid old;
    int d;
    br->action = MCG_BUNDLE_SKIP;
    if (git_reference_name_to_id(&old, mcg_repo_git(q), name) != 0) {
        br->action = MCG_BUNDLE_CREATE;
        return 0;
    }
    git_oid_tostr(br->old_sha, sizeof(br->old_sha), &old);
    if (git_oid_equal(&old, new_oid)) {
        br->action = MCG_BUNDLE_SAME;
        return 0;
    }
    if (is_tag) {
        br->action = MCG_BUNDLE_REWRITE;
        return mcg_err_set(err, MCG_ECONFLICT,
                           "%s: the bundle moves an existing tag (%.12s -> %.12s)", name,
                           br->old_sha, br->new_sha);
    }
    if ((d = descends(mcg_repo_git(q), new_oid, &old, err)) < 0)
        return err->code;
    if (d == 1) {
        br->action = MCG_BUNDLE_FORWARD;
        return 0;
    }
    if ((d = descends(mcg_repo_git(q), &old, new_oid, err)) < 0)
        return err->code;
    if (d == 1) {
        br->action = MCG_BUNDLE_STALE;
        return mcg_err_set(err, MCG_ECONFLICT,
                           "stale bundle: %s %.12s is older than the repo's %.12s (rollback "
                           "refused)",
                           name, br->new_sha, br->old_sha);
    }
    br->action = MCG_BUNDLE_REWRITE;
    return mcg_err_set(err, MCG_ECONFLICT,
                       "%s: not a fast-forward (%.12s does not descend from the repo's %.12s), "
                       "refused",
                       name, br->new_sha, br->old_sha);
}

int mcg_bundle_peel_commit(char sha[MCG_SHA_HEX + 1], mcg_repo *q, const mcg_bundle_ref *br,
                           mcg_err *err)
{
    git_object *obj = NULL, *peeled = NULL;
    git_oid oid;
    int rc = 0;
    git_oid_fromstr(&oid, br->new_sha);
    if (git_object_lookup(&obj, mcg_repo_git(q), &oid, GIT_OBJECT_ANY) != 0)
        rc = mcg_err_set(err, MCG_EINVAL, "incomplete bundle: %s points to missing object %s",
                         br->name, br->new_sha);
    else if (git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT) != 0)
        rc = mcg_err_set(err, MCG_EINVAL, "%s does not point to a commit", br->name);
    else
        git_oid_tostr(sha, MCG_SHA_HEX + 1, git_object_id(peeled));
    git_object_free(peeled);
    git_object_free(obj);
    return rc;
}
