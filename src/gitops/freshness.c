/*
 * freshness.c — freeze protection: how old the newest verified source is,
 * against .mcgit/policy.yaml's maxSourceAge.
 *
 * An attacker who cannot sign can still withhold updates: serve an old but
 * validly signed history, or carry a stale bundle to an air-gapped site.
 * Signatures cannot show that; time can. The newest verified commit of the
 * source branch (the verified mark) is compared with the policy that commit
 * itself puts in force.
 */
#include "gitops/gitops_int.h"

#include <stdlib.h>
#include <string.h>

int mcg_gitops_source_freshness(mcg_source_freshness *out, mcg_repo *r, const mcg_signers *root,
                                mcg_err *err)
{
    git_oid oid;
    git_commit *c = NULL;
    git_tree *tree = NULL;
    char *data = NULL;
    size_t len = 0;
    int rc = 0;
    memset(out, 0, sizeof(*out));
    if (!mcg_gitops_verified_mark(r, root, out->commit))
        return 0; /* nothing verified yet: nothing to judge */
    git_oid_fromstr(&oid, out->commit);
    if (git_commit_lookup(&c, r->git, &oid) != 0 || git_commit_tree(&tree, c) != 0) {
        rc = mcg_git_err(err, out->commit);
        goto out;
    }
    out->time = (int64_t)git_commit_committer(c)->when.time;
    mcg_err e2 = {0};
    int rr = mcg_git_read_path(&data, &len, r->git, tree, ".mcgit/policy.yaml", &e2);
    if (rr == MCG_ENOTFOUND)
        goto out;
    if (rr != 0) {
        rc = mcg_err_set(err, rr, "%.12s: %s", out->commit, e2.msg);
        goto out;
    }
    mcg_signpolicy *p = NULL;
    mcg_diags d = {0};
    if (mcg_signpolicy_parse(&p, ".mcgit/policy.yaml", data, len, &d) != 0)
        rc = mcg_err_set(err, MCG_EINVAL, "%.12s: %s", out->commit,
                         d.count ? d.msgs[0] : ".mcgit/policy.yaml does not parse");
    else
        out->max_age = p->max_source_age;
    mcg_signpolicy_free(p);
    mcg_diags_free(&d);
out:
    free(data);
    git_tree_free(tree);
    git_commit_free(c);
    return rc;
}

char *mcg_source_stale_message(const mcg_source_freshness *f, int64_t now)
{
    if (!f->commit[0] || f->max_age <= 0 || now - f->time <= f->max_age)
        return NULL;
    char when[32], age[32], max[32];
    mcg_human_duration(now - f->time, age);
    mcg_human_duration(f->max_age, max);
    return mcg_sprintf("the newest verified source commit %.12s (%s) is %s old, more than "
                       "maxSourceAge %s: updates may be withheld (a quiet site proves it is "
                       "current with `mcgit heartbeat`)",
                       f->commit, mcg_time_iso(when, f->time), age, max);
}
