/*
 * controller_int.h — shared inside controller/: how a pass records its
 * metrics (metrics.c; every function accepts m == NULL, recording nothing),
 * and the loop's side of an operator's `mcgit sync` (sync.c).
 */
#ifndef MCG_CONTROLLER_INT_H
#define MCG_CONTROLLER_INT_H

#include "controller/controller.h"
#include "rollout/rollout.h"

/* ------------------------------------------------------------ safe rollouts (safe.c) */

/* What a pass holds of each pool's safe rollout, in the order of its pool views. */
typedef struct mcg_safe_pool {
    char *target, *node, *check, *source, *since; /* status.rolloutHalt (target NULL: none) */
    bool halted;                                  /* the halt holds (not resumed) */
    bool raised_now;                              /* first seen in this pass */
    char *halted_msg;                             /* RolloutHalted's message */
    char *held_msg;                               /* "waiting for the window ..." */
    char *healthy_at;                             /* status.canary.healthyAt, kept */
    int64_t healthy_unix;
    int64_t rolling_since; /* status.rolloutSince: when its rollout to the target began (0: none) */
} mcg_safe_pool;

typedef struct mcg_safe_in {
    const json_t *const *prev; /* per pool view: its object before the pass (NULL: none) */
    const mcg_node *nodes;
    size_t nnodes;
    const mcg_rendered_log *log; /* the rendered branch, newest first */
    const char *source;          /* the source commit of the targets */
    int64_t now;
} mcg_safe_in;

/*
 * Fill the views' halted, held, canary_passed and disrupts from the pools'
 * objects, the nodes and the clock; returns what the pass records (free
 * with mcg_safe_pools_free).
 */
mcg_safe_pool *mcg_safe_pools(mcg_pool_view *pv, size_t np, const mcg_safe_in *in);
void mcg_safe_pools_free(mcg_safe_pool *sp, size_t n);
/* status.rolloutHalt and status.canary of one pool's object. */
void mcg_safe_status(json_t *status, const mcg_safe_pool *sp, const mcg_pool_status *st,
                     int64_t now);

/* A fetch that failed (fetch) or whose new commits were refused (verify). */
void mcg_ctl_record_fetch(mcg_metrics *m, double seconds, bool failed, bool refused);

/*
 * The verify-and-render step: rep's verification (rep->n commits in
 * rep->seconds), the render in render_seconds; refused: a commit failed
 * verification; failed: the render failed otherwise. Nothing is observed
 * when there was nothing new (no commit verified, nothing created).
 */
void mcg_ctl_record_render(mcg_metrics *m, const mcg_verify_report *rep, double render_seconds,
                           bool created, bool refused, bool failed);

/*
 * The accepted bundle imports recorded in the repository at path repo
 * (mcg_gitops_import_stats):
 * mcgit_bundle_imports_total follows the record, the newest import's time
 * goes to mcgit_bundle_last_import_timestamp_seconds. Nothing when none.
 */
void mcg_ctl_record_imports(mcg_metrics *m, const char *repo);

/*
 * After a pass: every pool's machine counts, every node's state and pool,
 * and rollout durations (a pool's rollout starts when the pass first sees
 * it not Updated at its target, and ends when it is; observed then). Series
 * of pools and nodes that are gone are dropped. now: unix seconds.
 */
void mcg_ctl_record_status(mcg_metrics *m, const mcg_rollout_plan *plan, const mcg_node *nodes,
                           size_t nnodes, int64_t now);
/* Safe rollouts: mcgit_rollout_halted per pool, a halt raised in this pass
 * in mcgit_health_check_failures_total, mcgit_disruptions_in_progress. */
void mcg_ctl_record_safe(mcg_metrics *m, const mcg_rollout_plan *plan, const mcg_safe_pool *sp,
                         const mcg_node *nodes, size_t nnodes);

/*
 * Kubernetes Events about pools after a pass (events.c): a new target,
 * the nodes given it (targeted: "node rendered-config" lines written),
 * Updated and Degraded transitions against prev_pools (the pool objects
 * before the pass). source: the source commit of the target. Best effort:
 * the first refusal's message goes to failed (n bytes; "" when none).
 */
void mcg_ctl_emit_events(mcg_cluster *c, const mcg_rollout_plan *plan, const json_t *prev_pools,
                         const mcg_strv *targeted, const char *source, char *failed, size_t n);

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

/* ------------------------------------------------------------ attest.c */

/* How many of pool's nodes (by the plan's membership) are attested. */
size_t mcg_ctl_attested_count(mcg_cluster *c, const mcg_node *nodes, size_t n,
                              const mcg_rollout_plan *plan, const char *pool, mcg_strv *digests);

#endif
