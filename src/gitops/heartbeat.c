/*
 * heartbeat.c — signed commits mcgit makes on the source branch for the
 * operator: the shared commit-and-sign step, and `mcgit heartbeat`, an
 * empty signed commit by which a quiet site proves its source is current
 * (freeze protection: maxSourceAge in .mcgit/policy.yaml).
 */
#include "gitops/gitops_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int mcg_git_signature_for(git_signature **out, mcg_repo *r, const mcg_rollback_opts *o,
                          const char *who, mcg_err *err)
{
    *out = NULL;
    if (o->name) {
        int64_t when = o->when ? o->when : (int64_t)time(NULL);
        if (git_signature_new(out, o->name, o->email ? o->email : "", (git_time_t)when,
                              o->offset) != 0)
            return mcg_git_err(err, "signature");
        return 0;
    }
    if (git_signature_default(out, r->git) != 0)
        return mcg_err_set(err, MCG_EINVAL, "who is %s? set git config user.name and user.email",
                           who);
    if (o->when) {
        git_signature *t = NULL;
        if (git_signature_new(&t, (*out)->name, (*out)->email, (git_time_t)o->when, o->offset) !=
            0) {
            git_signature_free(*out);
            *out = NULL;
            return mcg_git_err(err, "signature");
        }
        git_signature_free(*out);
        *out = t;
    }
    return 0;
}

int mcg_git_commit_signed(git_oid *out, mcg_repo *r, const git_tree *tree, const git_commit *parent,
                          const char *msg, const git_signature *sig, const mcg_rollback_opts *o,
                          mcg_err *err)
{
    git_buf buf = GIT_BUF_INIT_CONST(NULL, 0);
    memset(&buf, 0, sizeof(buf));
    char *armored = NULL;
    int rc = 0;
    const git_commit *parents[1] = {parent};
    if (git_commit_create_buffer(&buf, r->git, sig, sig, NULL, msg, tree, parent ? 1 : 0,
                                 parents) != 0) {
        rc = mcg_git_err(err, "commit");
        goto out;
    }
    if ((rc = o->sign(&armored, buf.ptr, buf.size, o->sign_ctx, err)) != 0)
        goto out;
    if (git_commit_create_with_signature(out, r->git, buf.ptr, armored, "gpgsig") != 0)
        rc = mcg_git_err(err, "commit");
out:
    free(armored);
    git_buf_dispose(&buf);
    return rc;
}

int mcg_gitops_heartbeat(char out[MCG_SHA_HEX + 1], mcg_repo *r, const mcg_rollback_opts *o,
                         mcg_err *err)
{
    char *ref = mcg_sprintf("refs/heads/%s", r->source_branch);
    git_oid tip_oid, oid;
    git_commit *tip = NULL;
    git_tree *tree = NULL;
    git_signature *sig = NULL;
    git_reference *moved = NULL;
    char stamp[32];
    char *msg = NULL;
    int rc = 0;
    out[0] = '\0';
    if (git_reference_name_to_id(&tip_oid, r->git, ref) != 0) {
        rc = mcg_err_set(err, MCG_ENOTFOUND, "no source branch '%s'", r->source_branch);
        goto out;
    }
    if (git_commit_lookup(&tip, r->git, &tip_oid) != 0 || git_commit_tree(&tree, tip) != 0) {
        rc = mcg_git_err(err, ref);
        goto out;
    }
    if ((rc = mcg_git_signature_for(&sig, r, o, "signing the heartbeat", err)) != 0)
        goto out;
    msg = mcg_sprintf("Heartbeat %s\n\nThe source is current as of this signed commit "
                      "(maxSourceAge, .mcgit/policy.yaml).\n",
                      mcg_time_iso(stamp, (int64_t)sig->when.time));
    /* The tree is the tip's: nothing changes on any node. */
    if ((rc = mcg_git_commit_signed(&oid, r, tree, tip, msg, sig, o, err)) != 0)
        goto out;
    if (git_reference_create_matching(&moved, r->git, ref, &oid, 1, &tip_oid, "mcgit heartbeat") !=
        0) {
        rc = mcg_git_err(err, ref);
        goto out;
    }
    git_oid_tostr(out, MCG_SHA_HEX + 1, &oid);
out:
    free(msg);
    git_reference_free(moved);
    git_signature_free(sig);
    git_tree_free(tree);
    git_commit_free(tip);
    free(ref);
    return rc;
}
