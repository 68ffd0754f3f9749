/*
 * safe.c — what a pass knows of a pool's safe rollout (spec.rollout,
 * spec.maintenanceWindows), for the planner, and what it records of it in
 * the pool's status, so that it holds across passes and a failover:
 *
 *   status.rolloutHalt  {target, node, check, source, since}: a node's
 *                       health check failed on target (the node is
 *                       Degraded at that desiredConfig, and carries the
 *                       failed check and config as structured fields:
 *                       MCG_ANN_HEALTH_FAILURE). The pool holds the rollout
 *                       (RolloutHalted) until its target moves on (a new
 *                       source commit) or `mcgit pool resume` stamps the
 *                       pool with MCG_ANN_RESUMED after since.
 *   status.canary       {target, healthyAt}: when the canary wave was first
 *                       seen done at target; the next wave waits canaryPause
 *                       from then.
 *
 * The controller never signs anything: a rollback after a halt stays a
 * signed commit, which the RolloutHalted message names.
 */
#include "controller/controller_int.h"
#include "fsio/fsio.h"
#include "osenv/osenv.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void mcg_safe_pools_free(mcg_safe_pool *sp, size_t n)
{
    for (size_t i = 0; sp && i < n; i++) {
        free(sp[i].node);
        free(sp[i].check);
        free(sp[i].source);
        free(sp[i].target);
        free(sp[i].since);
        free(sp[i].halted_msg);
        free(sp[i].held_msg);
        free(sp[i].healthy_at);
    }
    free(sp);
}

static const char *sget(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/*
 * The node Degraded by a health check at target (its check's name into
 * check), or NULL: what the agent reports as a structured field beside its
 * human reason (mcg_node.failed_check and failed_config), never the reason.
 */
static const mcg_node *failed_node(const mcg_node *nodes, size_t nn, const char *target,
                                   char check[64])
{
    for (size_t i = 0; target && i < nn; i++) {
        const mcg_node *n = &nodes[i];
        if (!n->state || strcmp(n->state, "Degraded") || !n->desired ||
            strcmp(n->desired, target) || !n->failed_check || !n->failed_config ||
            strcmp(n->failed_config, target))
            continue;
        snprintf(check, 64, "%s", n->failed_check);
        return n;
    }
    return NULL;
}

/* The newest rendered source before `source` whose render holds config name: the last good. */
static const char *last_good_source(const mcg_rendered_log *log, const char *pool, const char *name)
{
    if (!name)
        return NULL;
    char *want = mcg_sprintf("%s %s", pool, name);
    const char *found = NULL;
    for (size_t i = 0; log && i < log->n && !found; i++)
        if (mcg_strv_contains(&log->e[i].pools, want))
            found = log->e[i].source;
    free(want);
    return found;
}

/*
 * The halt of pool p: carried from its status when it is about the same
 * target, or raised now by a node failing a check at the target.
 */
static void halt_of(mcg_safe_pool *sp, const mcg_safe_in *in, const json_t *prev,
                    const char *target, const char *cfg)
{
    const json_t *h = json_object_get(json_object_get(prev, "status"), "rolloutHalt");
    if (target && sget(h, "target") && !strcmp(sget(h, "target"), target)) {
        sp->target = mcg_strdup(target);
        sp->node = mcg_strdup(sget(h, "node") ? sget(h, "node") : "?");
        sp->check = mcg_strdup(sget(h, "check") ? sget(h, "check") : "?");
        sp->source = mcg_strdup(sget(h, "source") ? sget(h, "source") : "");
        sp->since = mcg_strdup(sget(h, "since") ? sget(h, "since") : "");
    } else {
        char check[64];
        const mcg_node *n = failed_node(in->nodes, in->nnodes, target, check);
        if (!n)
            return;
        char ts[32];
        mcg_time_iso(ts, in->now);
        sp->target = mcg_strdup(target);
        sp->node = mcg_strdup(n->name);
        sp->check = mcg_strdup(check);
        sp->source = mcg_strdup(in->source ? in->source : "");
        sp->since = mcg_strdup(ts);
        sp->raised_now = true;
    }
    const char *resumed =
        sget(json_object_get(json_object_get(prev, "metadata"), "annotations"), MCG_ANN_RESUMED);
    sp->halted = !(resumed && strcmp(resumed, sp->since) >= 0);
    if (!sp->halted)
        return;
    const char *good =
        last_good_source(in->log, sget(json_object_get(prev, "metadata"), "name"), cfg);
    const char *pool = sget(json_object_get(prev, "metadata"), "name");
    char *next = good ? mcg_sprintf("in a clone of the config repo, `mcgit rollback --repo . "
                                    "%.12s` and a push restore the last good source, or push "
                                    "a fix",
                                    good)
                      : mcg_strdup("push a fix");
    sp->halted_msg = mcg_sprintf("node %s: health check %s failed on source commit %.12s (%s); "
                                 "no further node gets it. Next: %s; `mcgit pool resume %s` "
                                 "goes on as it is",
                                 sp->node, sp->check, sp->source, target, next, pool ? pool : "");
    free(next);
}

/*
 * The next opening of p's maintenance windows after now, or 0 while one is
 * open. The zone's UTC offset now is taken for the week ahead (a daylight
 * saving change inside it moves an opening by that hour).
 */
static int64_t next_opening(const mcg_pool *p, int64_t now, const mcg_window **which)
{
    int64_t best = 0;
    for (size_t i = 0; i < p->nwindows; i++) {
        const mcg_window *w = &p->windows[i];
        struct tm lt;
        if (mcg_tz_local(w->tz, now, &lt) != 0)
            continue;
        int64_t local = now + (int64_t)lt.tm_gmtoff;
        int64_t day0 = local - (local % 86400 + 86400) % 86400;
        int wday0 = lt.tm_wday;
        for (int k = -1; k <= 7; k++) {
            int wd = ((wday0 + k) % 7 + 7) % 7;
            if (!(w->days & (1u << wd)))
                continue;
            int64_t ws = day0 + (int64_t)k * 86400 + (int64_t)w->start * 60;
            int64_t we = ws + (int64_t)w->duration * 60;
            if (ws <= local && local < we)
                return 0;
            int64_t at = ws - (int64_t)lt.tm_gmtoff;
            if (ws > local && (!best || at < best)) {
                best = at;
                *which = w;
            }
        }
    }
    return best;
}

/* "waiting for the window Sat 02:00 Europe/Berlin, in 2d 3h", or NULL when one is open. */
static char *window_wait(const mcg_pool *p, int64_t now)
{
    const mcg_window *w = NULL;
    if (!p->nwindows)
        return NULL;
    int64_t at = next_opening(p, now, &w);
    if (!at || !w)
        return NULL;
    static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    struct tm lt;
    char in[32];
    mcg_human_duration(at - now, in);
    if (mcg_tz_local(w->tz, at, &lt) != 0)
        return NULL;
    return mcg_sprintf("waiting for the window %s %02d:%02d %s, in %s", days[lt.tm_wday],
                       lt.tm_hour, lt.tm_min, w->tz, in);
}

/* Whether the canary recorded in prev's status passed its pause at target. */
static bool canary_passed(mcg_safe_pool *sp, const mcg_pool *p, const json_t *prev,
                          const char *target, int64_t now)
{
    const json_t *cn = json_object_get(json_object_get(prev, "status"), "canary");
    const char *t = sget(cn, "target");
    json_t *at = json_object_get(cn, "healthySince");
    if (!target || !t || strcmp(t, target) || !json_is_integer(at))
        return false;
    sp->healthy_unix = (int64_t)json_integer_value(at);
    sp->healthy_at = mcg_strdup(sget(cn, "healthyAt") ? sget(cn, "healthyAt") : "");
    return now >= sp->healthy_unix + p->rollout.canary_pause;
}

/* When the pool's rollout to its target began: kept in its status, else now (0: not rolling). */
static int64_t rolling_since(const json_t *prev, const mcg_pool_view *pv, int64_t now)
{
    if (!pv->target || !*pv->target ||
        (pv->configuration && !strcmp(pv->configuration, pv->target)))
        return 0;
    const json_t *rs = json_object_get(json_object_get(prev, "status"), "rolloutSince");
    const char *t = sget(rs, "target");
    json_t *at = json_object_get(rs, "since");
    int64_t since = 0;
    if (!t || strcmp(t, pv->target))
        return now;
    /* a timestamp, as kubectl describe shows it; seconds from an older controller */
    if (json_is_string(at) && mcg_time_parse(json_string_value(at), &since))
        return since;
    return json_is_integer(at) ? (int64_t)json_integer_value(at) : now;
}

mcg_safe_pool *mcg_safe_pools(mcg_pool_view *pv, size_t np, const mcg_safe_in *in)
{
    mcg_safe_pool *sp = mcg_calloc(np ? np : 1, sizeof(*sp));
    for (size_t i = 0; i < np; i++) {
        const mcg_pool *p = pv[i].pool;
        const json_t *prev = in->prev[i];
        const char *target = pv[i].target && *pv[i].target ? pv[i].target : NULL;
        halt_of(&sp[i], in, prev, target, pv[i].configuration);
        if (sp[i].halted)
            pv[i].halted = sp[i].halted_msg;
        sp[i].held_msg = window_wait(p, in->now);
        const char *now = sget(json_object_get(json_object_get(prev, "metadata"), "annotations"),
                               MCG_ANN_SYNC_NOW);
        if (sp[i].held_msg && target && now && !strcmp(now, target)) {
            free(sp[i].held_msg); /* the operator's override (`mcgit sync --now`) */
            sp[i].held_msg = NULL;
            pv[i].window_override = true;
        }
        if (sp[i].held_msg) {
            pv[i].held = sp[i].held_msg;
            pv[i].held_reason = "MaintenanceWindow";
        }
        pv[i].canary_passed = canary_passed(&sp[i], p, prev, target, in->now);
        pv[i].waiting_since = sp[i].rolling_since = rolling_since(prev, &pv[i], in->now);
        /* every update of a rolling pool counts against maxConcurrentDisruptions */
        pv[i].disrupts = true;
    }
    /* a halt holds every pool rolling out the same source commit */
    for (size_t i = 0; i < np; i++)
        for (size_t k = 0; sp[i].halted && k < np; k++)
            if (k != i && !pv[k].halted && pv[k].target && pv[k].configuration &&
                strcmp(pv[k].target, pv[k].configuration))
                pv[k].halted = sp[i].halted_msg;
    return sp;
}

void mcg_safe_status(json_t *status, const mcg_safe_pool *sp, const mcg_pool_status *st,
                     int64_t now)
{
    if (sp->target)
        json_object_set_new(status, "rolloutHalt",
                            json_pack("{s:s,s:s,s:s,s:s,s:s}", "target", sp->target, "node",
                                      sp->node, "check", sp->check, "source", sp->source, "since",
                                      sp->since));
    if (sp->rolling_since && st->target) { /* with a disruption budget, the longest waiting first */
        char ts[32];
        mcg_time_iso(ts, sp->rolling_since);
        json_object_set_new(status, "rolloutSince",
                            json_pack("{s:s,s:s}", "target", st->target, "since", ts));
    }
    if (sp->healthy_at && st->target)
        json_object_set_new(status, "canary",
                            json_pack("{s:s,s:s,s:I}", "target", st->target, "healthyAt",
                                      sp->healthy_at, "healthySince",
                                      (json_int_t)sp->healthy_unix));
    else if (st->canary_done && st->target) {
        char ts[32];
        mcg_time_iso(ts, now);
        json_object_set_new(status, "canary",
                            json_pack("{s:s,s:s,s:I}", "target", st->target, "healthyAt", ts,
                                      "healthySince", (json_int_t)now));
    }
}
