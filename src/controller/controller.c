/*
 * controller.c — one reconcile pass.
 *
 * The target of each pool is what the rendered branch's tip says (a fresh
 * render, or a rollback), never a render that was refused: a source commit
 * that fails verification or rendering rolls out nowhere, and the pools keep
 * the last good target while their RenderDegraded condition says why. Pool
 * definitions (selectors, maxUnavailable, paused) and the disruption policy
 * come from the source commit of that tip, so they too change only through
 * verified commits.
 */
#include "controller/controller.h"
#include "fsio/fsio.h"
#include "rollout/rollout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mcg_human_duration(int64_t s, char out[32])
{
    if (s < 0) {
        snprintf(out, 32, "<invalid>");
        return;
    }
    int64_t m = s / 60, h = s / 3600, d = h / 24;
    if (s < 120)
        snprintf(out, 32, "%llds", (long long)s);
    else if (m < 10)
        s % 60 ? snprintf(out, 32, "%lldm%llds", (long long)m, (long long)(s % 60))
               : snprintf(out, 32, "%lldm", (long long)m);
    else if (m < 180)
        snprintf(out, 32, "%lldm", (long long)m);
    else if (h < 8)
        m % 60 ? snprintf(out, 32, "%lldh%lldm", (long long)h, (long long)(m % 60))
               : snprintf(out, 32, "%lldh", (long long)h);
    else if (h < 48)
        snprintf(out, 32, "%lldh", (long long)h);
    else if (h < 24 * 8)
        h % 24 ? snprintf(out, 32, "%lldd%lldh", (long long)d, (long long)(h % 24))
               : snprintf(out, 32, "%lldd", (long long)d);
    else if (h < 24 * 365 * 2)
        snprintf(out, 32, "%lldd", (long long)d);
    else if (h < 24 * 365 * 8)
        d % 365 ? snprintf(out, 32, "%lldy%lldd", (long long)(d / 365), (long long)(d % 365))
                : snprintf(out, 32, "%lldy", (long long)(d / 365));
    else
        snprintf(out, 32, "%lldy", (long long)(d / 365));
}

static json_t *selector_json(const mcg_selector *s)
{
    if (!s->present)
        return json_null();
    json_t *o = json_object();
    if (s->match.n) {
        json_t *ml = json_object();
        for (size_t i = 0; i < s->match.n; i++)
            json_object_set_new(ml, s->match.items[i].key, json_string(s->match.items[i].value));
        json_object_set_new(o, "matchLabels", ml);
    }
    if (s->nexprs) {
        static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist"};
        json_t *me = json_array();
        for (size_t i = 0; i < s->nexprs; i++) {
            json_t *vals = json_array();
            for (size_t j = 0; j < s->exprs[i].values.n; j++)
                json_array_append_new(vals, json_string(s->exprs[i].values.v[j]));
            json_t *e = json_pack("{s:s,s:s}", "key", s->exprs[i].key, "operator",
                                  ops[s->exprs[i].op]);
            if (json_array_size(vals))
                json_object_set_new(e, "values", vals);
            else
                json_decref(vals);
            json_array_append_new(me, e);
        }
        json_object_set_new(o, "matchExpressions", me);
    }
    return o;
}

/* The previous pool object's condition `type`, or NULL. */
static json_t *prev_condition(const json_t *prev, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(prev, "status"), "conditions"), i, c)
    {
        json_t *t = json_object_get(c, "type");
        if (json_is_string(t) && !strcmp(json_string_value(t), type))
            return c;
    }
    return NULL;
}

static json_t *pool_object(const mcg_pool *p, const mcg_pool_status *st, const json_t *prev,
                           int64_t now)
{
    char ts[32];
    mcg_time_format(now, ts);
    json_t *md = json_object();
    json_object_set_new(md, "name", json_string(p->name));
    json_t *pc = json_object_get(json_object_get(prev, "metadata"), "creationTimestamp");
    json_object_set_new(md, "creationTimestamp", json_is_string(pc) ? json_incref(pc) : json_string(ts));
    json_t *spec = json_object();
    json_object_set_new(spec, "machineConfigSelector", selector_json(&p->mc_selector));
    json_object_set_new(spec, "nodeSelector", selector_json(&p->node_selector));
    if (p->max_unavailable_is_percent) {
        char pct[32];
        snprintf(pct, sizeof(pct), "%lld%%", (long long)p->max_unavailable);
        json_object_set_new(spec, "maxUnavailable", json_string(pct));
    } else
        json_object_set_new(spec, "maxUnavailable",
                            json_integer(p->max_unavailable_set ? p->max_unavailable : 1));
    json_object_set_new(spec, "paused", json_boolean(p->paused));
    if (st->target)
        json_object_set_new(spec, "configuration", json_pack("{s:s}", "name", st->target));
    json_t *conds = json_array();
    for (int i = 0; i < MCG_COND_COUNT; i++) {
        const mcg_condition *c = &st->conds[i];
        json_t *pcnd = prev_condition(prev, c->type);
        const char *pstat = pcnd ? json_string_value(json_object_get(pcnd, "status")) : NULL;
        json_t *plt = pcnd ? json_object_get(pcnd, "lastTransitionTime") : NULL;
        const char *reason = c->reason, *message = c->message;
        bool status = c->status;
        json_t *lt = (!mcg_rollout_condition_changed(pstat, c) && json_is_string(plt))
                         ? json_incref(plt)
                         : json_string(ts);
        json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s,s:o}", "type", c->type, "status",
                                               status ? "True" : "False", "reason", reason,
                                               "message", message, "lastTransitionTime", lt));
    }
    json_t *status = json_object();
    if (st->configuration)
        json_object_set_new(status, "configuration", json_pack("{s:s}", "name", st->configuration));
    json_object_set_new(status, "machineCount", json_integer((json_int_t)st->machine_count));
    json_object_set_new(status, "readyMachineCount", json_integer((json_int_t)st->ready_count));
    json_object_set_new(status, "updatedMachineCount", json_integer((json_int_t)st->updated_count));
    json_object_set_new(status, "unavailableMachineCount",
                        json_integer((json_int_t)st->unavailable_count));
    json_object_set_new(status, "degradedMachineCount",
                        json_integer((json_int_t)st->degraded_count));
    json_object_set_new(status, "conditions", conds);
    return json_pack("{s:s,s:s,s:o,s:o,s:o}", "apiVersion", MCG_API_OPENSHIFT, "kind",
                     "MachineConfigPool", "metadata", md, "spec", spec, "status", status);
}

/* What the rendered branch's tip says for every pool. */
typedef struct tip_pool {
    char *pool;
    char *name;
    char *spec;
    size_t spec_len;
} tip_pool;

static void tip_free(tip_pool *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(t[i].pool);
        free(t[i].name);
        free(t[i].spec);
    }
    free(t);
}

/* Read <pool>/name and <pool>/spec.json of the rendered tip for each pool. */
static int read_tip(tip_pool **out, size_t *n, mcg_repo *r, const mcg_model *m, mcg_err *err)
{
    *out = mcg_calloc(m->npools ? m->npools : 1, sizeof(**out));
    *n = 0;
    for (size_t i = 0; i < m->npools; i++) {
        tip_pool *t = &(*out)[*n];
        char *np = mcg_sprintf("%s/name", m->pools[i].name);
        char *sp = mcg_sprintf("%s/spec.json", m->pools[i].name);
        char *name = NULL;
        size_t nlen = 0;
        int rc = mcg_gitops_read_rendered(&name, &nlen, r, np, NULL, err);
        if (!rc)
            rc = mcg_gitops_read_rendered(&t->spec, &t->spec_len, r, sp, NULL, err);
        free(np);
        free(sp);
        if (rc == MCG_ENOTFOUND) {
            free(name);
            free(t->spec);
            t->spec = NULL;
            continue; /* pool not rendered (yet) */
        }
        if (rc) {
            free(name);
            return rc;
        }
        name[strcspn(name, "\n")] = '\0';
        if (!mcg_render_name_matches(name, t->spec, t->spec_len)) {
            free(name);
            return mcg_err_set(err, MCG_ETRUST, "rendered config of pool %s does not match its name",
                               m->pools[i].name);
        }
        t->pool = mcg_strdup(m->pools[i].name);
        t->name = name;
        (*n)++;
    }
    return 0;
}

static int node_cmp(const void *a, const void *b)
{
    return strcmp(((const mcg_node *)a)->name, ((const mcg_node *)b)->name);
}

static bool strv_has(const mcg_strv *v, const char *s)
{
    return s && *s && mcg_strv_contains(v, s);
}

int mcg_controller_pass(mcg_pass_result *res, const mcg_controller_opts *o, mcg_cluster *c,
                        int64_t now, mcg_err *err)
{
    memset(res, 0, sizeof(*res));
    mcg_signers *root = NULL;
    mcg_repo *r = NULL;
    mcg_model *m = NULL;
    mcg_diags diags = {0};
    mcg_verify_report rep = {0};
    tip_pool *tips = NULL;
    size_t ntips = 0;
    mcg_node *nodes = NULL;
    size_t nnodes = 0;
    json_t *prev_pools = NULL;
    mcg_rollout_plan *plan = NULL;
    mcg_node_view *views = NULL;
    mcg_pool_view *pviews = NULL;
    mcg_strv used = {0};
    int rc;
    char *data = NULL;
    size_t len = 0;

    if ((rc = mcg_read_file(o->trust, 1u << 20, &data, &len, err)) != 0 ||
        (rc = mcg_signers_parse(&root, o->trust, data, len, err)) != 0)
        goto out;
    if ((rc = mcg_repo_open(&r, o->repo, err)) != 0)
        goto out;
    /* 1. fetch, when the repo mirrors a remote */
    char fetched[MCG_SHA_HEX + 1];
    mcg_err ferr = {0};
    const char *remote = o->remote ? o->remote : "origin";
    int frc = mcg_gitops_fetch(r, remote, fetched, &ferr);
    if (frc && frc != MCG_ENOTFOUND) {
        res->fetch_failed = true;
        snprintf(res->refusal, sizeof(res->refusal), "fetch from %s failed: %s", remote, ferr.msg);
    } else if (frc == MCG_ENOTFOUND && o->remote) {
        res->fetch_failed = true;
        snprintf(res->refusal, sizeof(res->refusal), "%s", ferr.msg);
    }
    /* 2. verify + render (appends to the rendered branch) */
    mcg_render_result rres;
    mcg_err rerr = {0};
    if (mcg_gitops_render(&rres, NULL, &rep, r, NULL, root, &diags, &rerr) != 0) {
        res->refused = true;
        const char *why = rerr.msg;
        for (size_t i = 0; i < rep.n; i++)
            if (!rep.v[i].good) {
                snprintf(res->refusal, sizeof(res->refusal), "commit %.12s refused: %s",
                         rep.v[i].sha, rep.v[i].reason);
                why = NULL;
                break;
            }
        if (why)
            snprintf(res->refusal, sizeof(res->refusal), "%s%s%s", why, diags.count ? ": " : "",
                     diags.count ? diags.msgs[0] : "");
    }
    /* 3. the last good state: rendered tip and the source it came from */
    mcg_log log = {0};
    char src[MCG_SHA_HEX + 1] = "";
    if (mcg_gitops_log(&log, r, err) == 0 && log.n)
        memcpy(src, log.e[0].source, sizeof(src));
    mcg_log_free(&log);
    if (!src[0]) {
        /* nothing was ever rendered: nothing to roll out */
        rc = 0;
        goto out;
    }
    mcg_diags_free(&diags);
    if ((rc = mcg_gitops_load_commit(&m, r, src, &diags, err)) != 0)
        goto out;
    if ((rc = read_tip(&tips, &ntips, r, m, err)) != 0)
        goto out;
    /* 4. publish the targets and the disruption policy */
    for (size_t i = 0; i < ntips; i++)
        if ((rc = c->ops->put_config(c, tips[i].name, tips[i].spec, tips[i].spec_len, err)) != 0)
            goto out;
    json_t *pol = mcg_policy_to_json(&m->policy);
    rc = c->ops->put_policy(c, pol, err);
    json_decref(pol);
    if (rc)
        goto out;
    /* 5. plan */
    if ((rc = mcg_cluster_list_nodes(c, &nodes, &nnodes, err)) != 0 ||
        (rc = c->ops->list_pools(c, &prev_pools, err)) != 0)
        goto out;
    res->nodes = nnodes;
    qsort(nodes, nnodes, sizeof(*nodes), node_cmp);
    views = mcg_calloc(nnodes ? nnodes : 1, sizeof(*views));
    for (size_t i = 0; i < nnodes; i++)
        views[i] = (mcg_node_view){nodes[i].name,    &nodes[i].labels, nodes[i].created,
                                   nodes[i].ready,   nodes[i].unschedulable,
                                   nodes[i].desired, nodes[i].current, nodes[i].state,
                                   nodes[i].reason};
    pviews = mcg_calloc(m->npools ? m->npools : 1, sizeof(*pviews));
    for (size_t i = 0; i < m->npools; i++) {
        const char *target = NULL, *configuration = NULL;
        for (size_t j = 0; j < ntips; j++)
            if (!strcmp(tips[j].pool, m->pools[i].name))
                target = tips[j].name;
        size_t k;
        json_t *pp;
        json_array_foreach(prev_pools, k, pp)
        {
            json_t *nm = json_object_get(json_object_get(pp, "metadata"), "name");
            if (json_is_string(nm) && !strcmp(json_string_value(nm), m->pools[i].name))
                configuration = json_string_value(json_object_get(
                    json_object_get(json_object_get(pp, "status"), "configuration"), "name"));
        }
        pviews[i] = (mcg_pool_view){&m->pools[i], target,
                                    res->refused ? res->refusal : NULL, configuration};
    }
    if ((rc = mcg_rollout_plan_make(&plan, views, nnodes, pviews, m->npools, err)) != 0)
        goto out;
    /* 6. write desiredConfig (compare-and-swap on the value we planned from) */
    for (size_t i = 0; i < plan->nupdates; i++) {
        const mcg_desired_update *u = &plan->updates[i];
        const char *old = "";
        mcg_node key = {0};
        key.name = u->node;
        const mcg_node *cur = bsearch(&key, nodes, nnodes, sizeof(*nodes), node_cmp);
        if (cur && cur->desired)
            old = cur->desired;
        mcg_node_patch p = MCG_NODE_PATCH_INIT;
        p.desired = u->desired;
        p.if_desired = old;
        mcg_err perr = {0};
        int prc = mcg_cluster_patch_node(c, u->node, &p, &perr);
        if (prc == 0)
            res->updates++;
        else if (prc != MCG_ECONFLICT && prc != MCG_ENOTFOUND) {
            rc = mcg_err_set(err, prc, "%s", perr.msg);
            goto out;
        }
    }
    for (size_t i = 0; i < plan->nmembers; i++)
        if (plan->members[i].kind == MCG_MEMBER_CONFLICT)
            fprintf(stderr, "mcgit controller: node %s is unmanaged: %s\n", plan->members[i].node,
                    plan->members[i].reason);
    /* 7. pool status */
    for (size_t i = 0; i < m->npools; i++) {
        const mcg_pool_status *st = &plan->pools[i];
        json_t *prev = NULL;
        size_t k;
        json_t *pp;
        json_array_foreach(prev_pools, k, pp)
        {
            json_t *nm = json_object_get(json_object_get(pp, "metadata"), "name");
            if (json_is_string(nm) && !strcmp(json_string_value(nm), m->pools[i].name))
                prev = pp;
        }
        json_t *obj = pool_object(&m->pools[i], st, prev, now);
        rc = c->ops->put_pool(c, m->pools[i].name, obj, err);
        json_decref(obj);
        if (rc)
            goto out;
        if (st->target)
            mcg_strv_push(&used, st->target);
        if (st->configuration)
            mcg_strv_push(&used, st->configuration);
    }
    /* pools removed from the repo lose their objects */
    size_t k;
    json_t *pp;
    json_array_foreach(prev_pools, k, pp)
    {
        json_t *nm = json_object_get(json_object_get(pp, "metadata"), "name");
        if (json_is_string(nm) && !mcg_model_pool(m, json_string_value(nm)))
            c->ops->delete_pool(c, json_string_value(nm), NULL);
    }
    /* 8. garbage-collect published configs nothing uses (git keeps them all) */
    for (size_t i = 0; i < nnodes; i++) {
        if (nodes[i].desired)
            mcg_strv_push(&used, nodes[i].desired);
        if (nodes[i].current)
            mcg_strv_push(&used, nodes[i].current);
    }
    for (size_t i = 0; i < plan->nupdates; i++)
        mcg_strv_push(&used, plan->updates[i].desired);
    mcg_strv published = {0};
    if (c->ops->list_configs(c, &published, NULL) == 0)
        for (size_t i = 0; i < published.n; i++)
            if (!strv_has(&used, published.v[i]))
                c->ops->delete_config(c, published.v[i], NULL);
    mcg_strv_free(&published);
    rc = 0;
out:
    mcg_strv_free(&used);
    free(views);
    free(pviews);
    mcg_rollout_plan_free(plan);
    json_decref(prev_pools);
    mcg_nodes_free(nodes, nnodes);
    tip_free(tips, ntips);
    mcg_verify_report_free(&rep);
    mcg_diags_free(&diags);
    mcg_model_free(m);
    mcg_repo_free(r);
    mcg_signers_free(root);
    free(data);
    return rc;
}
