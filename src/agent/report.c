/*
 * report.c — what the agent tells: its log lines (each naming the node),
 * the node's state and reason, Kubernetes Events about the node, and the
 * metrics of its passes.
 */
#include "agent/agent_int.h"
#include "fsio/fsio.h"
#include "osenv/osenv.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *mcg_agent_state_name(mcg_agent_state s)
{
    return s == MCG_AGENT_DONE ? "Done" : s == MCG_AGENT_WORKING ? "Working" : "Degraded";
}

void mcg_agent_log(mcg_agent *a, int level, const char *fmt, ...)
{
    if (a->o.verbosity < level)
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    mcg_vbfmt(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* every line names the node, as node=NAME */
    if (a->o.node)
        mcg_log_line("agent", "node=%s: %s", a->o.node, line);
    else
        mcg_log_line("agent", "%s", line);
}

void mcg_agent_reason(mcg_agent_result *res, mcg_agent_state st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcg_vbfmt(res->reason, sizeof(res->reason), fmt, ap);
    va_end(ap);
    for (char *p = res->reason; *p; p++) /* one line */
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    res->state = st;
}

int mcg_agent_patch(mcg_agent *a, mcg_cluster *c, const mcg_node_patch *p)
{
    if (!c)
        return 0;
    mcg_err e = {0};
    int rc = mcg_cluster_patch_node(c, a->o.node, p, &e);
    if (rc)
        mcg_agent_log(a, 1, "cannot update node %s: %s", a->o.node, e.msg);
    return rc;
}

void mcg_agent_event(mcg_agent *a, mcg_cluster *c, bool warning, const char *reason,
                     const char *fmt, ...)
{
    if (!c || !a->o.node)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    mcg_vbfmt(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    mcg_event ev = {"mcgit-agent", false, a->o.node, warning, reason, msg};
    mcg_err e = {0};
    if (mcg_cluster_event(c, &ev, &e) != 0) /* best effort */
        mcg_agent_log(a, 2, "event %s not recorded: %s", reason, e.msg);
}

/* The Event's reason for a Degraded reason: MCO's for drift and for an update refused over it. */
static const char *degraded_event_reason(const char *reason)
{
    if (!strncmp(reason, "drift: ", 7))
        return "ConfigDriftDetected";
    if (!strncmp(reason, "not updating to ", 16) && strstr(reason, ": drift: "))
        return "PreflightConfigDriftCheckFailed";
    return "NodeDegraded";
}

void mcg_agent_report_degraded(mcg_agent *a, mcg_cluster *c, mcg_agent_result *res)
{
    mcg_agent_log(a, 1, "Degraded: %s", res->reason);
    if (c && strcmp(a->degraded_evented, res->reason) != 0) { /* once per reason */
        mcg_agent_event(a, c, true, degraded_event_reason(res->reason), "%s", res->reason);
        snprintf(a->degraded_evented, sizeof(a->degraded_evented), "%s", res->reason);
    }
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.state = res->unreconcilable ? "Unreconcilable" : "Degraded"; /* MCO's states */
    p.reason = res->reason;
    mcg_agent_patch(a, c, &p);
}

void mcg_agent_uncordon(mcg_agent *a, mcg_cluster *c)
{
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.unschedulable = 0;
    mcg_agent_patch(a, c, &p);
}

int mcg_agent_metrics_declare(mcg_metrics *m, mcg_err *err)
{
    static const double buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                     0.5,   1,      2.5,   5,    10,    30,   60,  300};
    int rc;
    if ((rc = mcg_metrics_declare(m, "mcgit_agent_passes_total", MCG_METRIC_COUNTER,
                                  "Agent passes, by result (ok, failed, offline: the cluster "
                                  "could not be reached and drift was checked locally).",
                                  "node,result", NULL, 0, err)) != 0 ||
        (rc = mcg_metrics_declare(m, "mcgit_agent_pass_duration_seconds", MCG_METRIC_HISTOGRAM,
                                  "Agent passes: an update (apply, actions) or a drift check.",
                                  "node", buckets, sizeof(buckets) / sizeof(*buckets), err)) != 0 ||
        (rc = mcg_metrics_declare(m, "mcgit_agent_node_state", MCG_METRIC_GAUGE,
                                  "1 for the node's state after the last pass (Done, Working, "
                                  "Degraded), 0 for the others.",
                                  "node,state", NULL, 0, err)) != 0 ||
        (rc = mcg_metrics_declare(m, "mcgit_agent_drift_detections_total", MCG_METRIC_COUNTER,
                                  "Times drift was found (a managed path differs from the "
                                  "config on disk; counted once until it changes).",
                                  "node", NULL, 0, err)) != 0 ||
        (rc = mcg_metrics_declare(m, "mcgit_agent_applies_total", MCG_METRIC_COUNTER,
                                  "Passes that changed files (an update applied).", "node", NULL, 0,
                                  err)) != 0 ||
        (rc = mcg_metrics_declare(m, "mcgit_agent_reboots_total", MCG_METRIC_COUNTER,
                                  "Reboot actions carried out (or recorded, not live).", "node",
                                  NULL, 0, err)) != 0)
        return rc;
    return 0;
}

void mcg_agent_record_pass(mcg_agent *a, int rc, const mcg_agent_result *res, double seconds,
                           char *last_drift, size_t n)
{
    mcg_metrics *m = a->o.metrics;
    const char *node = a->o.node ? a->o.node : "";
    if (!m)
        return;
    const char *result = rc ? "failed" : res->offline ? "offline" : "ok";
    mcg_metrics_add(m, "mcgit_agent_passes_total", MCG_LV(node, result), 1);
    mcg_metrics_observe(m, "mcgit_agent_pass_duration_seconds", MCG_LV(node), seconds);
    if (rc)
        return;
    for (int s = MCG_AGENT_DONE; s <= MCG_AGENT_DEGRADED; s++)
        mcg_metrics_set(m, "mcgit_agent_node_state",
                        MCG_LV(node, mcg_agent_state_name((mcg_agent_state)s)),
                        res->state == (mcg_agent_state)s ? 1 : 0);
    bool drift = res->state == MCG_AGENT_DEGRADED && !strncmp(res->reason, "drift: ", 7);
    if (drift && strcmp(last_drift, res->reason) != 0)
        mcg_metrics_add(m, "mcgit_agent_drift_detections_total", MCG_LV(node), 1);
    snprintf(last_drift, n, "%s", drift ? res->reason : "");
    if (res->applied)
        mcg_metrics_add(m, "mcgit_agent_applies_total", MCG_LV(node), 1);
    if (res->rebooted)
        mcg_metrics_add(m, "mcgit_agent_reboots_total", MCG_LV(node), 1);
}
