/*
 * events.c — the Kubernetes Events a controller pass records about pools,
 * as MCO's controllers do: RenderedConfigGenerated when a pool gets a new
 * target, SetDesiredConfig when nodes are given it (one event per pool per
 * pass, naming the node when there is one), and the pool's transitions:
 * Updated when every node is Done at the target, Degraded (Warning) when
 * the pool turns Degraded. Best effort: a backend without events (local)
 * records nothing, and a refused event changes nothing.
 */
#include "controller/controller_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The pool object `name` among prev_pools, or NULL. */
static const json_t *prev_of(const json_t *prev_pools, const char *name)
{
    size_t k;
    json_t *pp;
    json_array_foreach(prev_pools, k, pp) {
        const char *nm =
            json_string_value(json_object_get(json_object_get(pp, "metadata"), "name"));
        if (nm && !strcmp(nm, name))
            return pp;
    }
    return NULL;
}

/* The previous object's condition `type` status ("True"/"False"), or NULL. */
static const char *prev_status(const json_t *prev, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(prev, "status"), "conditions"), i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && !strcmp(t, type))
            return json_string_value(json_object_get(c, "status"));
    }
    return NULL;
}

/* Record one event; the first refusal's message goes to failed (n bytes). */
static void emit(mcg_cluster *c, const char *pool, bool warning, const char *reason,
                 const char *message, char *failed, size_t n)
{
    mcg_event ev = {"mcgit-controller", true, pool, warning, reason, message};
    mcg_err e = {0};
    if (mcg_cluster_event(c, &ev, &e) != 0 && !failed[0]) /* best effort */
        mcg_bfmt(failed, n, "%s", e.msg);
}

void mcg_ctl_emit_events(mcg_cluster *c, const mcg_rollout_plan *plan, const json_t *prev_pools,
                         const mcg_strv *targeted, const char *source, char *failed, size_t fn)
{
    failed[0] = '\0';
    mcg_strv done = {0};
    for (size_t i = 0; i < targeted->n; i++)
        mcg_strv_push(&done, targeted->v[i]);
    mcg_strv_sort(&done);
    for (size_t p = 0; p < plan->npools; p++) {
        const mcg_pool_status *st = &plan->pools[p];
        const json_t *prev = prev_of(prev_pools, st->pool);
        const char *was = json_string_value(json_object_get(
            json_object_get(json_object_get(prev, "spec"), "configuration"), "name"));
        char *msg = NULL;
        if (st->target && (!was || strcmp(was, st->target) != 0)) {
            msg =
                mcg_sprintf("%s successfully generated (source commit %.12s)", st->target, source);
            emit(c, st->pool, false, "RenderedConfigGenerated", msg, failed, fn);
            free(msg);
            msg = NULL;
        }
        /* the nodes of this pool given a new desiredConfig in this pass */
        size_t n = 0;
        const mcg_desired_update *first = NULL;
        for (size_t u = 0; u < plan->nupdates; u++) {
            const mcg_desired_update *d = &plan->updates[u];
            if (strcmp(d->pool, st->pool) != 0)
                continue;
            char *line = mcg_sprintf("%s %s", d->node, d->desired);
            bool ok = done.n && bsearch(&line, done.v, done.n, sizeof(*done.v), mcg_strcmp_ptr);
            free(line);
            if (ok && !n++)
                first = d;
        }
        if (n == 1)
            msg = mcg_sprintf("Targeted node %s to config %s", first->node, first->desired);
        else if (n > 1)
            msg = mcg_sprintf("Set target for %zu nodes to config %s", n, first->desired);
        if (msg)
            emit(c, st->pool, false, "SetDesiredConfig", msg, failed, fn);
        free(msg);
        msg = NULL;
        /* transitions: only against a pool object that said otherwise */
        const mcg_condition *upd = &st->conds[MCG_COND_UPDATED];
        const char *pu = prev_status(prev, upd->type);
        if (upd->status && pu && !strcmp(pu, "False")) {
            msg = mcg_sprintf("All nodes are updated with MachineConfig %s",
                              st->target ? st->target : "?");
            emit(c, st->pool, false, "Updated", msg, failed, fn);
            free(msg);
            msg = NULL;
        }
        const mcg_condition *deg = &st->conds[MCG_COND_DEGRADED];
        const char *pd = prev_status(prev, deg->type);
        if (deg->status && (!pd || !strcmp(pd, "False")))
            emit(c, st->pool, true, "Degraded",
                 *deg->message  ? deg->message
                 : *deg->reason ? deg->reason
                                : "the pool is degraded",
                 failed, fn);
    }
    mcg_strv_free(&done);
}
