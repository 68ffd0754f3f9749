/*
 * verify.c — the checks after indexing, on two threads with a view of the
 * quarantine each: the second thread checks connectivity first, then both
 * verify the refs' ranges (mcg_gitops_verify_ranges, gitops/verify_pool.c,
 * which gives exactly the verdicts and messages of one mcg_gitops_verify
 * pass per range). Most signatures' arithmetic is already done by then
 * (pack/scan*.c); a pack the scan could not read whole leaves more here.
 */
#include "bundle/bundle_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The second thread's first task. */
static void connectivity(void *ctx)
{
    mcg_bundle_check_connected(ctx);
}

/* Progress of the verification, as the import's bar shows it. */
static void verify_tick(void *ctx, uint64_t done, uint64_t total)
{
    mcg_bundle_tick(ctx, "verifying commits", done, total);
}

int mcg_bundle_verify_all(mcg_repo *q, mcg_repo *q2, mcg_bundle_report *rep,
                          const mcg_bundle_vref *want, const git_oid *tips, size_t ntips,
                          const mcg_oidmap *pack, const mcg_signers *root,
                          const mcg_verify_opts *hints, const mcg_bundle_progress *prog,
                          mcg_err *err)
{
    char mark[MCG_SHA_HEX + 1];
    mcg_verify_opts o = *hints;
    /* History arriving at a repo that holds verified history is also
     * checked against this host's clock (mcg_verify_opts.now). */
    o.now = mcg_gitops_verified_mark(q, root, mark) ? (int64_t)time(NULL) : 0;
    /* Without verified history, the new source tip must still be valid now. */
    o.tip_now = o.now ? 0 : (int64_t)time(NULL);
    char *src = mcg_sprintf("refs/heads/%s", mcg_repo_source_branch(q));
    mcg_bundle_conn conn = {
        .view = q2, .scan = hints->scan, .pack = pack, .tips = tips, .ntips = ntips};
    mcg_verify_threads th = {.helper = q2,
                             .first = connectivity,
                             .first_ctx = &conn,
                             .tick = verify_tick,
                             .tick_ctx = (void *)prog};
    mcg_verify_range *ranges = mcg_calloc(rep->nrefs ? rep->nrefs : 1, sizeof(*ranges));
    size_t *which = mcg_calloc(rep->nrefs ? rep->nrefs : 1, sizeof(*which));
    size_t n = 0;
    mcg_err verr = {0};

    for (size_t i = 0; i < rep->nrefs; i++)
        if (want[i].tip[0] && want[i].with < 0) {
            ranges[n].tip = want[i].tip;
            ranges[n].since = want[i].since[0] ? want[i].since : NULL;
            ranges[n].newest = !strcmp(rep->refs[i].name, src);
            which[n++] = i;
        }
    int rc = mcg_gitops_verify_ranges(ranges, n, q, &th, &o, root, &verr);
    mcg_bundle_tick(prog, NULL, 0, 0);
    if (conn.rc) { /* the connectivity refusal comes first */
        *err = conn.err;
        rc = conn.rc;
    } else if (rc) {
        *err = verr;
    }
    for (size_t k = 0; k < n; k++) {
        if (!rc) {
            rep->refs[which[k]].verify = ranges[k].rep;
            memset(&ranges[k].rep, 0, sizeof(ranges[k].rep));
        }
        mcg_verify_report_free(&ranges[k].rep);
    }
    free(ranges);
    free(which);
    free(src);
    return rc;
}
