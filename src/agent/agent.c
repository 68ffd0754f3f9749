/*
 * agent.c — the node agent's reconcile pass: prove the host, finish a
 * leftover journal, read the node, then update to its desiredConfig or
 * check drift, and report.
 *
 * The update itself lives in files of its own, bottom up: the state
 * directory (state.c), the journal (journal.c), reporting (report.c),
 * planning (plan.c), the phases (phases.c) and health (health.c). The pass
 * plans an update (mcg_agent_plan), writes its journal and carries it out
 * (mcg_agent_update_run); a failed health check hands back the config to
 * go back to, and the pass starts that update (update_carry_out).
 */
#include "agent/agent_int.h"
#include "fsio/fsio.h"
#include "osenv/osenv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DRIFT_LIST_MAX 10

/* ------------------------------------------------------------- update */

static int update_to(mcg_agent *a, mcg_cluster *c, const char *name, const char *spec, size_t len,
                     const char *revert, mcg_agent_result *res, mcg_err *err);
static bool preflight_drift(mcg_agent *a, mcg_cluster *c, const char *name, mcg_agent_result *res);

/*
 * Carry out u (its journal written), and the revert a failed health check
 * asks for: an update of its own, back to the config that was healthy.
 */
static int update_carry_out(mcg_agent *a, mcg_cluster *c, mcg_update *u, mcg_agent_result *res,
                            mcg_err *err)
{
    int rc = mcg_agent_update_run(a, c, u, res, err);
    if (!rc && u->revert_to)
        rc = update_to(a, c, u->revert_to, u->revert_spec, u->revert_len, u->revert_reason, res,
                       err);
    mcg_agent_update_free(u);
    return rc;
}

/*
 * Update the disk to config name/spec (the hash is checked when planned):
 * plan, cordon and drain, write the journal, then carry it out. revert:
 * why this update goes back to a healthy config (NULL: an ordinary one).
 */
static int update_to(mcg_agent *a, mcg_cluster *c, const char *name, const char *spec, size_t len,
                     const char *revert, mcg_agent_result *res, mcg_err *err)
{
    mcg_err e = {0};
    mcg_update u;
    if (!revert && preflight_drift(a, c, name, res))
        return 0;
    if (mcg_agent_plan(a, c, name, spec, len, revert, &u, res)) {
        if (mcg_agent_journal_write(a, &u.j, &e) == 0)
            return update_carry_out(a, c, &u, res, err);
        if (u.j.cordoned)
            mcg_agent_uncordon(a, c);
        mcg_agent_reason(res, MCG_AGENT_DEGRADED, "%s", e.msg);
        mcg_agent_update_free(&u);
    }
    mcg_agent_report_degraded(a, c, res);
    char *from = mcg_agent_current_name(a);
    snprintf(res->config, sizeof(res->config), "%s", from ? from : "");
    free(from);
    return 0;
}

/* ------------------------------------------------------------- drift */

/* "drift: ..." for cur into b (ten paths at most); false when nothing drifted. */
static bool drift_reason(mcg_agent *a, const mcg_acfg *cur, mcg_buf *b)
{
    mcg_strv diffs = {0};
    mcg_err e = {0};
    mcg_drift_check(&a->root, cur, &diffs, &e);
    if (diffs.n) {
        mcg_buf_puts(b, "drift: ");
        for (size_t i = 0; i < diffs.n && i < DRIFT_LIST_MAX; i++)
            mcg_buf_printf(b, "%s%s", i ? "; " : "", diffs.v[i]);
        if (diffs.n > DRIFT_LIST_MAX)
            mcg_buf_printf(b, "; and %zu more", diffs.n - DRIFT_LIST_MAX);
    }
    bool found = diffs.n > 0;
    mcg_strv_free(&diffs);
    return found;
}

static void drift_pass(mcg_agent *a, mcg_cluster *c, const mcg_node *n, mcg_agent_result *res)
{
    mcg_acfg *cur = mcg_agent_current(a);
    if (!cur) {
        res->state = MCG_AGENT_DONE;
        return;
    }
    snprintf(res->config, sizeof(res->config), "%s", cur->name);
    mcg_buf b = MCG_BUF_INIT;
    if (drift_reason(a, cur, &b)) {
        mcg_agent_reason(res, MCG_AGENT_DEGRADED, "%s", b.ptr);
        if (c && n &&
            (!n->state || strcmp(n->state, "Degraded") || !n->reason ||
             strcmp(n->reason, res->reason)))
            mcg_agent_report_degraded(a, c, res);
        else
            mcg_agent_log(a, 2, "Degraded: %s", res->reason);
    } else {
        res->state = MCG_AGENT_DONE;
        if (c && n &&
            (!n->state || strcmp(n->state, "Done") || (n->reason && *n->reason) || !n->current ||
             strcmp(n->current, cur->name))) {
            mcg_node_patch p = MCG_NODE_PATCH_INIT;
            p.current = cur->name;
            p.state = "Done";
            p.reason = "";
            mcg_agent_patch(a, c, &p);
            mcg_agent_log(a, 1, "Done: %s", cur->name);
            a->degraded_evented[0] = '\0'; /* a new problem is a new event */
        }
        mcg_agent_attest(a, c, n, cur->name);
    }
    mcg_buf_free(&b);
}

/*
 * MCO's preflight drift check: before an update the disk must still hold
 * the current config. A drifted node is not updated: Degraded naming the
 * drift and the update refused, until the files are put back or a re-apply
 * is forced (--force, the force file). True when the update is refused.
 */
static bool preflight_drift(mcg_agent *a, mcg_cluster *c, const char *name, mcg_agent_result *res)
{
    mcg_acfg *cur = a->force ? NULL : mcg_agent_current(a);
    mcg_buf b = MCG_BUF_INIT;
    if (!cur || !drift_reason(a, cur, &b)) {
        mcg_buf_free(&b);
        return false;
    }
    mcg_agent_reason(res, MCG_AGENT_DEGRADED,
                     "not updating to %s: the disk no longer holds %s: %s (put it back, or force a "
                     "re-apply: touch /run/machine-config-daemon-force)",
                     name, cur->name, b.ptr);
    snprintf(res->config, sizeof(res->config), "%s", cur->name);
    mcg_agent_report_degraded(a, c, res);
    mcg_buf_free(&b);
    return true;
}

int mcg_agent_check_drift(mcg_agent_result *res, mcg_agent *a, mcg_err *err)
{
    (void)err;
    memset(res, 0, sizeof(*res));
    drift_pass(a, NULL, NULL, res);
    return 0;
}

/* ------------------------------------------------------------- passes */

/*
 * Finish a journal left by an earlier run, if any (*had). A journal this
 * agent cannot read whole — another version, a key missing or unknown, a
 * wrong type, an unknown phase or step — is refused: the node Degraded
 * with why, nothing written, the journal left for someone to look at.
 */
static int resume(mcg_agent *a, mcg_cluster *c, mcg_agent_result *res, bool *had, mcg_err *err)
{
    mcg_err e = {0};
    mcg_update u;
    memset(&u, 0, sizeof(u));
    *had = false;
    int rc = mcg_agent_journal_read(a, &u.j, &e);
    if (rc == MCG_ENOTFOUND)
        return 0;
    *had = true;
    if (rc == MCG_EINVAL) {
        mcg_agent_reason(res, MCG_AGENT_DEGRADED, "%s: not resumed, nothing written", e.msg);
        char *cur = mcg_agent_current_name(a);
        snprintf(res->config, sizeof(res->config), "%s", cur ? cur : "");
        free(cur);
        mcg_agent_report_degraded(a, c, res);
        return 0;
    }
    if (rc)
        return mcg_err_set(err, rc, "%s", e.msg);
    u.resumed = true;
    return update_carry_out(a, c, &u, res, err);
}

/*
 * A target whose health check failed is not applied again while it stays
 * the desired config: the node stays Degraded with the reason (and, after a
 * revert, the config it went back to). Another desired config forgets it.
 * True when the pass ends here.
 */
static bool held_failed(mcg_agent *a, mcg_cluster *c, const char *desired, const char *cur,
                        mcg_agent_result *res)
{
    char *data = NULL;
    size_t len = 0;
    mcg_err e = {0};
    if (mcg_agent_state_read(a, MCG_AGENT_FAILED_TARGET, &data, &len, &e) != 0)
        return false;
    char *nl = strchr(data, '\n');
    const char *reason = nl ? nl + 1 : "";
    if (nl)
        *nl = '\0';
    bool held = desired && !strcmp(data, desired);
    if (held) {
        char *end = strchr(reason, '\n');
        mcg_agent_reason(res, MCG_AGENT_DEGRADED, "%.*s%s%s",
                         end ? (int)(end - reason) : (int)strlen(reason), reason,
                         cur && strcmp(cur, data) ? "; reverted to " : "",
                         cur && strcmp(cur, data) ? cur : "");
        snprintf(res->config, sizeof(res->config), "%s", cur ? cur : "");
        mcg_agent_report_degraded(a, c, res);
    } else {
        unlinkat(a->statefd, MCG_AGENT_FAILED_TARGET, 0);
    }
    free(data);
    return held;
}

/* MCO's way to make its daemon apply its config again, whatever the disk holds. */
#define FORCE_FILE (&MCG_FORCE_FILE[1]) /* relative to the root */

/* Whether the root holds FORCE_FILE; it is removed, and the pass applies with force and
 * reboots, as MCO's daemon does. */
static bool take_force_file(mcg_agent *a)
{
    int dfd;
    const char *base;
    mcg_err e = {0};
    struct stat st;
    if (mcg_sroot_parent(&a->root, FORCE_FILE, false, &dfd, &base, &e) != 0 ||
        fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return false;
    if (unlinkat(dfd, base, 0) != 0)
        mcg_agent_log(a, 1, "/%s: cannot remove it: %s", FORCE_FILE, strerror(errno));
    a->force = true;
    a->force_reboot = true; /* as MCO's daemon: re-applied, then a reboot */
    return true;
}

int mcg_agent_apply(mcg_agent_result *res, mcg_agent *a, const char *name, const char *spec,
                    size_t len, mcg_err *err)
{
    memset(res, 0, sizeof(*res));
    bool had;
    int rc = resume(a, NULL, res, &had, err);
    if (rc || (had && res->state != MCG_AGENT_DONE))
        return rc;
    char *cur = mcg_agent_current_name(a);
    bool same = cur && !strcmp(cur, name);
    free(cur);
    if (same && !a->force) {
        drift_pass(a, NULL, NULL, res);
        return 0;
    }
    rc = update_to(a, NULL, name, spec, len, NULL, res, err);
    if (!rc && res->state == MCG_AGENT_DONE)
        a->force = false;
    return rc;
}

/*
 * A live host is proven to be the node again at the start of every pass,
 * before a journal is resumed or anything is written, cordoned or reported:
 * a node unbound and bound to new hardware while this agent runs is not
 * managed from here any more. 0: proven. MCG_ETRUST: this host is not (or
 * no longer) the node, err says why in one line. *offline: the node could
 * not be read (cluster unreachable): nothing proven, the pass may only
 * check drift without writing.
 */
static int reprove_host(mcg_agent *a, mcg_cluster *c, bool *offline, mcg_err *err)
{
    mcg_host_identity h;
    mcg_node n;
    mcg_err e = {0};
    *offline = false;
    if (!a->live)
        return 0;
    memset(&n, 0, sizeof(n));
    if (mcg_agent_host_identity(&h, a->o.root ? a->o.root : "/", &e) != 0)
        return mcg_err_set(err, MCG_ETRUST, "refusing to manage this host as node %s: %s",
                           a->o.node, e.msg);
    int rc = mcg_cluster_get_node(c, a->o.node, &n, &e);
    if (rc == MCG_ENOTFOUND || rc == MCG_EINVAL)
        return mcg_err_set(err, MCG_ETRUST, "refusing to manage this host (%s): node %s: %s",
                           h.hostname, a->o.node, e.msg);
    if (rc) {
        *offline = true;
        mcg_agent_log(a, 1, "identity not re-proven (%s): checking drift offline, nothing written",
                      e.msg);
        return 0;
    }
    rc = mcg_agent_identity_match(&h, &n, err);
    mcg_node_clear(&n);
    return rc;
}

int mcg_agent_run_once(mcg_agent_result *res, mcg_agent *a, mcg_cluster *c, mcg_err *err)
{
    memset(res, 0, sizeof(*res));
    mcg_node n;
    memset(&n, 0, sizeof(n));
    char *spec = NULL, *cur = NULL;
    size_t len = 0;
    bool had, offline;
    mcg_err e = {0};
    int rc = reprove_host(a, c, &offline, err);
    if (rc)
        return rc;
    if (offline) {
        drift_pass(a, NULL, NULL, res);
        res->offline = true;
        return 0;
    }
    rc = resume(a, c, res, &had, err);
    if (rc || (had && res->state != MCG_AGENT_DONE))
        return rc;
    if ((rc = mcg_cluster_get_node(c, a->o.node, &n, &e)) != 0) {
        if (rc == MCG_ENOTFOUND || rc == MCG_EINVAL)
            return mcg_err_set(err, rc, "%s", e.msg);
        rc = 0;
        mcg_agent_log(a, 1, "cluster unreachable (%s): checking drift offline", e.msg);
        drift_pass(a, NULL, NULL, res);
        res->offline = true;
        goto out;
    }
    cur = mcg_agent_current_name(a);
    if (held_failed(a, c, n.desired, cur, res))
        goto out;
    if (take_force_file(a))
        mcg_agent_log(a, 1, "/%s found (and removed): re-applying %s", FORCE_FILE,
                      n.desired ? n.desired : "nothing");
    if (!n.desired || !*n.desired) {
        drift_pass(a, cur ? c : NULL, &n, res);
        goto out;
    }
    if (cur && !strcmp(cur, n.desired) && !a->force) {
        drift_pass(a, c, &n, res);
        goto out;
    }
    if (mcg_cluster_get_config(c, n.desired, &spec, &len, &e) != 0) {
        mcg_agent_reason(res, MCG_AGENT_DEGRADED, "rendered config %s: %s", n.desired, e.msg);
        mcg_agent_report_degraded(a, c, res);
        snprintf(res->config, sizeof(res->config), "%s", cur ? cur : "");
        goto out;
    }
    rc = update_to(a, c, n.desired, spec, len, NULL, res, err);
    if (!rc && res->state == MCG_AGENT_DONE)
        a->force = a->force_reboot = false;
out:
    free(spec);
    free(cur);
    mcg_node_clear(&n);
    return rc;
}

int mcg_agent_loop(mcg_agent *a, mcg_cluster *c, unsigned interval, volatile sig_atomic_t *stop,
                   mcg_err *err)
{
    mcg_agent_state last = MCG_AGENT_DONE;
    bool first = true;
    char last_drift[MCG_AGENT_REASON] = "";
    a->stop = stop;
    while (!*stop) {
        mcg_agent_result res;
        mcg_err e = {0};
        double t0 = mcg_mono_seconds();
        int rc = mcg_agent_run_once(&res, a, c, &e);
        mcg_agent_record_pass(a, rc, &res, mcg_mono_seconds() - t0, last_drift, sizeof(last_drift));
        if (rc == MCG_ETRUST) /* this host is no longer the node: stop, in one line */
            return mcg_err_set(err, rc, "%s", e.msg);
        if (rc) {
            mcg_agent_log(a, 1, "pass failed: %s", e.msg);
            if (rc == MCG_ENOTFOUND && first)
                return mcg_err_set(err, rc, "%s", e.msg);
        } else if (first || res.state != last) {
            if (res.state == MCG_AGENT_DONE && !res.config[0]) /* nothing applied: not "Done" */
                mcg_agent_log(a, 1, "no config on this node yet: waiting for its desiredConfig");
            else
                mcg_agent_log(a, 1, "%s%s%s", mcg_agent_state_name(res.state),
                              res.reason[0] ? ": " : "", res.reason);
            last = res.state;
        }
        first = false;
        a->force = a->force_reboot = false;
        /* Until the interval has passed or our node changed (a backend that
         * watches, kube, wakes at once on a new desiredConfig; local sleeps).
         * The stop flag is lent to the backend only while waiting, so a pass
         * in progress always finishes. */
        mcg_err we = {0};
        mcg_cluster_set_stop(c, stop);
        if (!*stop && mcg_cluster_wait_change(c, a->o.node, (long)interval * 1000, &we) < 0)
            mcg_agent_log(a, 2, "waiting for changes: %s", we.msg);
        mcg_cluster_set_stop(c, NULL);
    }
    return 0;
}
