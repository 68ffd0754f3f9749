/*
 * sync.c — the controller's side of `mcgit sync`: an operator asks for a
 * pass now by raising a counter on the cluster side (cluster.h, "operator
 * requests"); the loop reads the counter before each pass, and after it
 * records the pass's result as the answer to every request up to the value
 * it read. A request that arrives during a pass is newer than the answer,
 * so the loop passes again at once instead of waiting.
 */
#include "controller/controller_int.h"

#include <stdio.h>
#include <string.h>

uint64_t mcg_controller_sync_begin(mcg_cluster *cl, uint64_t answered)
{
    mcg_sync_state st;
    if (mcg_cluster_get_sync(cl, &st, NULL) != 0)
        return 0;
    uint64_t done = st.handled > answered ? st.handled : answered;
    return st.requested > done ? st.requested : 0;
}

bool mcg_controller_sync_answer(mcg_cluster *cl, uint64_t gen, int rc, const mcg_pass_result *res,
                                const mcg_err *perr)
{
    char line[sizeof(((mcg_sync_state *)0)->result)];
    bool failed = rc || res->refused || res->fetch_failed;
    if (rc)
        mcg_bfmt(line, sizeof(line), "pass failed: %s", perr->msg);
    else if (res->refused || res->fetch_failed)
        mcg_bfmt(line, sizeof(line), "%s%s%s", res->fetch_error,
                 res->fetch_failed && res->refused ? "; " : "", res->refusal);
    else
        mcg_bfmt(line, sizeof(line), "pass done over %zu node%s: %zu given a new desiredConfig%s%s",
                 res->nodes, res->nodes == 1 ? "" : "s", res->updates,
                 res->stale[0] ? "; SourceStale: " : "", res->stale);
    return mcg_cluster_answer_sync(cl, gen, failed, line, NULL) == 0;
}

bool mcg_controller_sync_wanted(mcg_cluster *cl, uint64_t answered)
{
    return mcg_controller_sync_begin(cl, answered) != 0;
}
