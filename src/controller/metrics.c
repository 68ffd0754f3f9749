/*
 * metrics.c — what a controller pass tells Prometheus.
 *
 * The families are declared once (mcg_controller_metrics_declare) and a pass
 * records into them at three points: after the fetch, after verify and
 * render, and after the plan (pool counts, node states, rollout
 * durations). Gauges that describe the cluster are set afresh each pass, so
 * a removed pool or node stops being reported. Rollout durations are
 * measured by this process: a rollout under way when the controller starts
 * is timed from then.
 */
#include "controller/controller_int.h"
#include "fsio/fsio.h"

#include <string.h>
#include <time.h>

/* Bucket bounds, in seconds. */
static const double fast_buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                      0.5,   1,      2.5,   5,    10,    30,   60,  300};
static const double rollout_buckets[] = {1,   5,    10,   30,   60,   120,   300,
                                         600, 1200, 1800, 3600, 7200, 14400, 86400};

#define NFAST (sizeof(fast_buckets) / sizeof(*fast_buckets))
#define NROLLOUT (sizeof(rollout_buckets) / sizeof(*rollout_buckets))

static const char *const node_states[] = {"Done", "Working", "Degraded", "Unreconcilable",
                                          "Unknown"};

int mcg_controller_metrics_declare(mcg_metrics *m, mcg_err *err)
{
    static const struct {
        const char *name;
        mcg_metric_type type;
        const char *labels;
        const char *help;
    } fams[] = {
        {"mcgit_pool_machines", MCG_METRIC_GAUGE, "pool", "Nodes in the pool (MACHINECOUNT)."},
        {"mcgit_pool_updated_machines", MCG_METRIC_GAUGE, "pool",
         "Nodes of the pool Done at its target (UPDATEDMACHINECOUNT)."},
        {"mcgit_pool_ready_machines", MCG_METRIC_GAUGE, "pool",
         "Nodes of the pool updated, ready and schedulable (READYMACHINECOUNT)."},
        {"mcgit_pool_degraded_machines", MCG_METRIC_GAUGE, "pool",
         "Nodes of the pool Degraded or Unreconcilable (DEGRADEDMACHINECOUNT)."},
        {"mcgit_pool_updating_machines", MCG_METRIC_GAUGE, "pool",
         "Nodes of the pool given the target and not Done at it yet."},
        {"mcgit_pool_updated", MCG_METRIC_GAUGE, "pool",
         "1 when every node of the pool is Done at its target, else 0."},
        {"mcgit_pool_untrusted_changes", MCG_METRIC_GAUGE, "pool",
         "1 while the pool's config holds changes by keys not trusted now (UntrustedChanges)."},
        {"mcgit_rollout_halted", MCG_METRIC_GAUGE, "pool",
         "1 while the pool's rollout is halted by a failed health check (RolloutHalted)."},
        {"mcgit_health_check_failures_total", MCG_METRIC_COUNTER, "pool,check",
         "Health checks that failed on a node after an update, by pool and check (each failure "
         "that halted a rollout, counted once)."},
        {"mcgit_disruptions_in_progress", MCG_METRIC_GAUGE, NULL,
         "Nodes updating now across all pools (what maxConcurrentDisruptions caps)."},
        {"mcgit_pool_rollout_started_timestamp_seconds", MCG_METRIC_GAUGE, "pool",
         "When the pool's rollout under way began (unix seconds); 0: none under way."},
        {"mcgit_node_state", MCG_METRIC_GAUGE, "node,pool,state",
         "1 for the node's state (Done, Working, Degraded, Unreconcilable, Unknown), 0 for the "
         "others; pool \"\" when no pool manages it."},
        {"mcgit_fetch_failures_total", MCG_METRIC_COUNTER, NULL,
         "Fetches of the source branch that failed (the remote could not be read)."},
        {"mcgit_verify_failures_total", MCG_METRIC_COUNTER, NULL,
         "Passes that refused a new source commit (signature, policy or fast-forward)."},
        {"mcgit_render_failures_total", MCG_METRIC_COUNTER, NULL,
         "Passes whose verified source commit did not render (invalid configuration)."},
        {"mcgit_renders_total", MCG_METRIC_COUNTER, NULL,
         "Rendered commits written by the controller."},
        {"mcgit_verified_commits_total", MCG_METRIC_COUNTER, NULL,
         "Source commits verified by the controller's renders."},
        {"mcgit_passes_total", MCG_METRIC_COUNTER, "result",
         "Reconcile passes, by result (ok, failed, not_leader)."},
        {"mcgit_bundle_imports_total", MCG_METRIC_COUNTER, NULL,
         "Bundle imports the controller's repository accepted (mcgit bundle import; refused "
         "imports change nothing and are not counted)."},
        {"mcgit_bundle_last_import_timestamp_seconds", MCG_METRIC_GAUGE, NULL,
         "When the newest accepted bundle import was made (unix seconds); 0: none recorded."},
    };
    for (size_t i = 0; i < sizeof(fams) / sizeof(*fams); i++) {
        int rc = mcg_metrics_declare(m, fams[i].name, fams[i].type, fams[i].help, fams[i].labels,
                                     NULL, 0, err);
        if (rc)
            return rc;
    }
    int rc;
    if ((rc = mcg_metrics_declare(m, "mcgit_fetch_duration_seconds", MCG_METRIC_HISTOGRAM,
                                  "Fetches of the source branch, with the verification of the "
                                  "fetched commits.",
                                  NULL, fast_buckets, NFAST, err)) != 0 ||
        (rc = mcg_metrics_declare(m, "mcgit_verify_duration_seconds", MCG_METRIC_HISTOGRAM,
                                  "Verification of new source commits before a render.", NULL,
                                  fast_buckets, NFAST, err)) != 0 ||
        (rc = mcg_metrics_declare(m, "mcgit_render_duration_seconds", MCG_METRIC_HISTOGRAM,
                                  "Rendering a verified source commit onto the rendered branch.",
                                  NULL, fast_buckets, NFAST, err)) != 0 ||
        (rc = mcg_metrics_declare(m, "mcgit_pass_duration_seconds", MCG_METRIC_HISTOGRAM,
                                  "Whole reconcile passes.", NULL, fast_buckets, NFAST, err)) !=
            0 ||
        (rc = mcg_metrics_declare(m, "mcgit_rollout_duration_seconds", MCG_METRIC_HISTOGRAM,
                                  "From a pool's new target to every node Done at it.", "pool",
                                  rollout_buckets, NROLLOUT, err)) != 0)
        return rc;
    return 0;
}

void mcg_ctl_record_fetch(mcg_metrics *m, double seconds, bool failed, bool refused)
{
    if (!m)
        return;
    mcg_metrics_observe(m, "mcgit_fetch_duration_seconds", NULL, seconds);
    if (failed)
        mcg_metrics_add(m, "mcgit_fetch_failures_total", NULL, 1);
    if (refused)
        mcg_metrics_add(m, "mcgit_verify_failures_total", NULL, 1);
}

void mcg_ctl_record_render(mcg_metrics *m, const mcg_verify_report *rep, double render_seconds,
                           bool created, bool refused, bool failed)
{
    if (!m)
        return;
    if (rep->n) {
        mcg_metrics_observe(m, "mcgit_verify_duration_seconds", NULL, rep->seconds);
        mcg_metrics_add(m, "mcgit_verified_commits_total", NULL, (double)rep->n);
    }
    if (refused)
        mcg_metrics_add(m, "mcgit_verify_failures_total", NULL, 1);
    else if (failed)
        mcg_metrics_add(m, "mcgit_render_failures_total", NULL, 1);
    if (created || (failed && !refused))
        mcg_metrics_observe(m, "mcgit_render_duration_seconds", NULL, render_seconds);
    if (created)
        mcg_metrics_add(m, "mcgit_renders_total", NULL, 1);
}

void mcg_ctl_record_safe(mcg_metrics *m, const mcg_rollout_plan *plan, const mcg_safe_pool *sp,
                         const mcg_node *nodes, size_t nnodes)
{
    if (!m || !plan)
        return;
    mcg_metrics_reset(m, "mcgit_rollout_halted");
    for (size_t p = 0; p < plan->npools; p++) {
        const char *const *lv = MCG_LV(plan->pools[p].pool);
        mcg_metrics_set(m, "mcgit_rollout_halted", lv,
                        plan->pools[p].conds[MCG_COND_ROLLOUT_HALTED].status ? 1 : 0);
        if (sp && sp[p].raised_now) {
            const char *const lv2[] = {plan->pools[p].pool, sp[p].check, NULL};
            mcg_metrics_add(m, "mcgit_health_check_failures_total", lv2, 1);
        }
    }
    size_t busy = 0;
    for (size_t i = 0; i < nnodes; i++)
        busy += nodes[i].desired && *nodes[i].desired &&
                (!nodes[i].current || strcmp(nodes[i].desired, nodes[i].current)) &&
                !(nodes[i].state && (!strcmp(nodes[i].state, "Degraded") ||
                                     !strcmp(nodes[i].state, "Unreconcilable")));
    mcg_metrics_set(m, "mcgit_disruptions_in_progress", NULL, (double)busy);
}

void mcg_ctl_record_status(mcg_metrics *m, const mcg_rollout_plan *plan, const mcg_node *nodes,
                           size_t nnodes, int64_t now)
{
    if (!m)
        return;
    static const char *const per_pool[] = {
        "mcgit_pool_machines",          "mcgit_pool_updated_machines",  "mcgit_pool_ready_machines",
        "mcgit_pool_degraded_machines", "mcgit_pool_updating_machines", "mcgit_pool_updated",
        "mcgit_pool_untrusted_changes"};
    for (size_t i = 0; i < sizeof(per_pool) / sizeof(*per_pool); i++)
        mcg_metrics_reset(m, per_pool[i]);
    for (size_t p = 0; p < plan->npools; p++) {
        const mcg_pool_status *st = &plan->pools[p];
        const char *const *lv = MCG_LV(st->pool);
        bool updated = st->target && st->configuration && !strcmp(st->target, st->configuration) &&
                       st->updated_count == st->machine_count;
        mcg_metrics_set(m, "mcgit_pool_machines", lv, (double)st->machine_count);
        mcg_metrics_set(m, "mcgit_pool_updated_machines", lv, (double)st->updated_count);
        mcg_metrics_set(m, "mcgit_pool_ready_machines", lv, (double)st->ready_count);
        mcg_metrics_set(m, "mcgit_pool_degraded_machines", lv, (double)st->degraded_count);
        mcg_metrics_set(m, "mcgit_pool_updating_machines", lv, (double)st->updating_count);
        mcg_metrics_set(m, "mcgit_pool_updated", lv, updated ? 1 : 0);
        mcg_metrics_set(m, "mcgit_pool_untrusted_changes", lv,
                        st->conds[MCG_COND_UNTRUSTED_CHANGES].status ? 1 : 0);
        double started = 0;
        mcg_metrics_get(m, "mcgit_pool_rollout_started_timestamp_seconds", lv, &started);
        if (!updated && st->target && started == 0)
            mcg_metrics_set(m, "mcgit_pool_rollout_started_timestamp_seconds", lv, (double)now);
        else if (updated && started > 0) {
            mcg_metrics_observe(m, "mcgit_rollout_duration_seconds", lv,
                                (double)now - started >= 0 ? (double)now - started : 0);
            mcg_metrics_set(m, "mcgit_pool_rollout_started_timestamp_seconds", lv, 0);
        } else if (!started)
            mcg_metrics_set(m, "mcgit_pool_rollout_started_timestamp_seconds", lv, 0);
    }
    mcg_metrics_reset(m, "mcgit_node_state");
    for (size_t i = 0; i < nnodes && i < plan->nmembers; i++) {
        const mcg_membership *mb = &plan->members[i];
        const char *pool = mb->pool ? mb->pool : "";
        const char *state = nodes[i].state && *nodes[i].state ? nodes[i].state : "Unknown";
        bool known = false;
        for (size_t s = 0; s < sizeof(node_states) / sizeof(*node_states); s++)
            known |= !strcmp(state, node_states[s]);
        if (!known)
            state = "Unknown";
        for (size_t s = 0; s < sizeof(node_states) / sizeof(*node_states); s++)
            mcg_metrics_set(m, "mcgit_node_state", MCG_LV(nodes[i].name, pool, node_states[s]),
                            !strcmp(state, node_states[s]) ? 1 : 0);
    }
}

void mcg_ctl_record_imports(mcg_metrics *m, const char *repo)
{
    mcg_import_stats st;
    mcg_repo *r = NULL;
    if (!m || !repo || mcg_repo_open(&r, repo, NULL) != 0)
        return;
    bool have = mcg_gitops_import_stats(r, &st);
    mcg_repo_free(r);
    if (!have)
        return;
    double seen = 0;
    mcg_metrics_get(m, "mcgit_bundle_imports_total", NULL, &seen);
    /* the record only grows; a smaller one (the repository replaced) adds nothing */
    if ((double)st.imports > seen)
        mcg_metrics_add(m, "mcgit_bundle_imports_total", NULL, (double)st.imports - seen);
    mcg_metrics_set(m, "mcgit_bundle_last_import_timestamp_seconds", NULL, (double)st.last);
}
