/*
 * controller_int.h — shared inside controller/: how a pass records its
 * metrics (metrics.c). Every function accepts m == NULL (records nothing).
 */
#ifndef MCG_CONTROLLER_INT_H
#define MCG_CONTROLLER_INT_H

#include "controller/controller.h"
#include "rollout/rollout.h"

/* Seconds on the monotonic clock, for durations. */
double mcg_ctl_mono(void);

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
 * After a pass: every pool's machine counts, every node's state and pool,
 * and rollout durations (a pool's rollout starts when the pass first sees
 * it not Updated at its target, and ends when it is; observed then). Series
 * of pools and nodes that are gone are dropped. now: unix seconds.
 */
void mcg_ctl_record_status(mcg_metrics *m, const mcg_rollout_plan *plan, const mcg_node *nodes,
                           size_t nnodes, int64_t now);

/*
 * Kubernetes Events about pools after a pass (events.c): a new target,
 * the nodes given it (targeted: "node rendered-config" lines written),
 * Updated and Degraded transitions against prev_pools (the pool objects
 * before the pass). source: the source commit of the target. Best effort:
 * the first refusal's message goes to failed (n bytes; "" when none).
 */
void mcg_ctl_emit_events(mcg_cluster *c, const mcg_rollout_plan *plan, const json_t *prev_pools,
                         const mcg_strv *targeted, const char *source, char *failed, size_t n);

#endif
