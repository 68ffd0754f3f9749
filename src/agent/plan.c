/*
 * plan.c — planning an update before anything changes: the target checked
 * against its hash and parsed (its kept copy written meanwhile), the old
 * config found, the OS steps (osconf.c), the node disruption policy, the
 * disk plan (mcg_plan_prepare: nothing is written), the disruption actions;
 * then the node reported Working, and cordoned and drained when the update
 * reboots or drains. The result is the update's journal at its first phase.
 */
#include "agent/agent_int.h"
#include "render/render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What planning works out, beside the journal, until the update starts. */
typedef struct {
    mcg_disruption_policy pol;
    mcg_disruption act;
    mcg_agent_pending copy; /* the kept copy of the target, until it is written */
} plan_work;

static bool under_state(const mcg_agent *a, const char *path)
{
    if (!a->state_rel)
        return false;
    size_t n = strlen(a->state_rel);
    return !strncmp(path, a->state_rel, n) && (path[n] == '\0' || path[n] == '/');
}

/* The old config: the one cached for drift checks when it is current, else loaded. */
static void load_old(mcg_agent *a, mcg_update *u)
{
    mcg_err e = {0};
    const char *from = u->j.from;
    if (from && a->cur && !strcmp(a->cur->name, from)) {
        u->old = a->cur; /* parsed already (drift checks): transferred */
        a->cur = NULL;
    } else if (from && mcg_agent_config_load(a, from, false, &u->old, &e) != 0) {
        mcg_agent_log(a, 1, "previous config %s: %s (treating as none)", from, e.msg);
        u->old = NULL;
    }
}

/*
 * Plan, first part: the target name/spec checked against its hash and
 * parsed (its kept copy written meanwhile), the old config found. False
 * when the update is refused (reason in res).
 */
static bool plan_load(mcg_agent *a, mcg_update *u, plan_work *w, const char *name, const char *spec,
                      size_t len, mcg_agent_result *res)
{
    mcg_err e = {0};
    if (!mcg_render_name_matches(name, spec, len) || !mcg_name_is_dns_subdomain(name)) {
        mcg_agent_reason(res, MCG_AGENT_DEGRADED, "rendered config %s does not match its hash",
                         name);
        return false;
    }
    load_old(a, u);
    /* the kept copy of the config is written back while it is parsed */
    char *cpath = mcg_sprintf("configs/%s.json", name);
    int rc = mcg_agent_state_start(a, cpath, spec, len, &w->copy, &e);
    free(cpath);
    if (rc) {
        mcg_agent_reason(res, MCG_AGENT_DEGRADED, "%s", e.msg);
        return false;
    }
    if (mcg_acfg_load(&u->new_cfg, &a->root, name, spec, len, true, &e) != 0) {
        mcg_agent_reason(res, MCG_AGENT_DEGRADED, "rendered config %s: %s", name, e.msg);
        return false;
    }
    mcg_acfg_keep_ssh(u->new_cfg, u->old);           /* keys leaving: an empty keys file, as MCO */
    for (size_t i = 0; i < u->new_cfg->notes.n; i++) /* skipped, as MCO's daemon skips it */
        mcg_agent_log(a, 1, "%s", u->new_cfg->notes.v[i]);
    if (mcg_agent_state_finish(a, &w->copy, &e) != 0) {
        mcg_agent_reason(res, MCG_AGENT_DEGRADED, "%s", e.msg);
        return false;
    }
    for (size_t i = 0; i < u->new_cfg->n; i++)
        if (under_state(a, u->new_cfg->ents[i].path)) {
            mcg_agent_reason(res, MCG_AGENT_DEGRADED, "/%s is inside the agent's state directory",
                             u->new_cfg->ents[i].path);
            return false;
        }
    return true;
}

/*
 * Plan, second part: the OS steps, the node disruption policy, the disk
 * plan (mcg_plan_prepare: nothing is written yet) and the actions. False
 * when the update is refused (reason in res).
 */
static bool plan_changes(mcg_agent *a, mcg_cluster *c, mcg_update *u, plan_work *w,
                         mcg_agent_result *res)
{
    mcg_err e = {0};
    bool os_reboot = false;
    mcg_host host;
    const char *name = u->j.target;
    mcg_host_detect(&host, &a->root, a->live);
    if (mcg_osplan_make(&u->j.os, &os_reboot, &a->root, &host, u->old, u->new_cfg, a->o.node, &e) !=
        0) {
        mcg_agent_reason(res, MCG_AGENT_DEGRADED, "rendered config %s: %s", name, e.msg);
        /* the OS plan names a refusal of MCO's isConfigReconcilable so */
        res->unreconcilable = !strncmp(e.msg, "unreconcilable: ", 16);
        return false;
    }
    if (u->j.os.n)
        mcg_agent_log(a, 1, "OS steps: %zu (boot loader: %s)", u->j.os.n, mcg_boot_name(host.boot));
    if (c && mcg_cluster_get_policy(c, &w->pol, &e) != 0) {
        mcg_agent_reason(res, MCG_AGENT_DEGRADED, "node disruption policy: %s", e.msg);
        return false;
    }
    if (mcg_plan_prepare(&u->j.disk, &a->root, a->statefd, u->old, u->new_cfg, &e) != 0) {
        mcg_agent_reason(res, MCG_AGENT_DEGRADED, "%s", e.msg);
        return false;
    }
    if (u->old)
        mcg_plan_decide(&w->act, u->old, u->new_cfg, c ? &w->pol : NULL);
    else /* a first apply: what the node already holds needs nothing */
        mcg_plan_decide_first(&w->act, &a->root, u->new_cfg, c ? &w->pol : NULL);
    if (os_reboot) /* MCO: kernel arguments, OS image, extensions, kernel type need one */
        w->act.reboot = true;
    if (a->force_reboot) /* MCO's force file: the re-apply always reboots */
        w->act.reboot = true;
    char *acts = mcg_disruption_str(&w->act);
    mcg_agent_log(a, 1, "update %s -> %s: actions %s", u->j.from ? u->j.from : "nothing", name,
                  acts);
    free(acts);
    return true;
}

/*
 * Before the journal: the node reported Working, and cordoned and drained
 * when the update reboots or drains. False when the drain failed (reason
 * in res, node uncordoned).
 */
static bool plan_drain(mcg_agent *a, mcg_cluster *c, mcg_update *u, const plan_work *w,
                       mcg_agent_result *res)
{
    mcg_err e = {0};
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    const char *name = u->j.target;
    p.state = "Working";
    p.reason = "";
    mcg_agent_patch(a, c, &p);
    if (!c || !(w->act.reboot || w->act.drain))
        return true;
    mcg_node_patch q = MCG_NODE_PATCH_INIT;
    q.unschedulable = 1;
    /* once per target: a drain that keeps failing is retried every pass */
    bool tell = strcmp(a->drain_evented, name) != 0;
    if (mcg_agent_patch(a, c, &q) == 0) {
        u->j.cordoned = true;
        if (tell)
            mcg_agent_event(a, c, false, "Cordon", "Cordoned node to apply update");
    }
    if (tell)
        mcg_agent_event(a, c, false, "Drain", "Draining node to update config.");
    snprintf(a->drain_evented, sizeof(a->drain_evented), "%s", name);
    if (mcg_cluster_drain(c, a->o.node, &e) != 0) {
        mcg_agent_reason(res, MCG_AGENT_DEGRADED, "drain: %s", e.msg);
        if (u->j.cordoned)
            mcg_agent_uncordon(a, c);
        return false;
    }
    return true;
}

/* The journal's disruption from the actions decided, and the first config's note. */
static void plan_journal(mcg_agent *a, mcg_update *u, plan_work *w, const char *revert)
{
    mcg_journal *j = &u->j;
    j->phase = MCG_PHASE_WRITE;
    j->force = a->force;
    j->reboot = w->act.reboot;
    j->drain = w->act.drain;
    j->daemon_reload = w->act.daemon_reload;
    for (size_t i = 0; i < w->act.reload.n; i++)
        mcg_strv_push(&j->reload, w->act.reload.v[i]);
    for (size_t i = 0; i < w->act.restart.n; i++)
        mcg_strv_push(&j->restart, w->act.restart.v[i]);
    if (revert) /* going back after a failed health check: ends Degraded */
        j->revert = mcg_strdup(revert);
    /* a first config: the install-time sections it holds, for the status */
    j->installed = u->old ? NULL : mcg_osconf_installed_note(&a->root, u->new_cfg);
}

bool mcg_agent_plan(mcg_agent *a, mcg_cluster *c, const char *name, const char *spec, size_t len,
                    const char *revert, mcg_update *u, mcg_agent_result *res)
{
    plan_work w;
    memset(&w, 0, sizeof(w));
    memset(u, 0, sizeof(*u));
    w.copy.fd = -1;
    u->j.target = mcg_strdup(name);
    u->j.from = mcg_agent_current_name(a);
    bool ok = plan_load(a, u, &w, name, spec, len, res) && plan_changes(a, c, u, &w, res) &&
              plan_drain(a, c, u, &w, res);
    if (ok)
        plan_journal(a, u, &w, revert);
    mcg_agent_state_abort(a, &w.copy); /* only when planning stopped before it was written */
    mcg_disruption_free(&w.act);
    mcg_policy_free(&w.pol);
    if (!ok)
        mcg_agent_update_free(u);
    return ok;
}
