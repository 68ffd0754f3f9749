/*
 * controller_int.h — shared inside controller/: the loop's side of an
 * operator's `mcgit sync` (sync.c).
 */
#ifndef MCG_CONTROLLER_INT_H
#define MCG_CONTROLLER_INT_H

#include "controller/controller.h"

/*
 * Before a pass: the newest sync request to answer after it, or 0 when every
 * request is answered already (by this loop: answered, or by any replica).
 * A cluster whose sync state cannot be read gives 0 (the pass runs anyway).
 */
uint64_t mcg_controller_sync_begin(mcg_cluster *cl, uint64_t answered);

/*
 * After the pass that began with gen (non-zero): record its result as the
 * answer to every request up to gen. rc, res and perr are the pass's.
 * Returns whether the answer was written (else the next turn tries again).
 */
bool mcg_controller_sync_answer(mcg_cluster *cl, uint64_t gen, int rc, const mcg_pass_result *res,
                                const mcg_err *perr);

/* While waiting: whether a request newer than answered is waiting (a read). */
bool mcg_controller_sync_wanted(mcg_cluster *cl, uint64_t answered);

#endif
