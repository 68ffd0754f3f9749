/*
 * controller.c — one reconcile pass.
 *
 * The target of each pool is what the rendered branch's tip says (a fresh
 * render, or a rollback), never a render that was refused: a source commit
 * that fails verification or rendering rolls out nowhere, and the pools keep
 * the last good target while their RenderDegraded condition says why. Pool
 * definitions (selectors, maxUnavailable, paused) and the disruption policy
 * come from the source commit of that tip, so they too change only through
 * verified commits. An unreachable remote is the same: the pass goes on with
 * what the repo already holds, and RenderDegraded (reason FetchFailed) says
 * so in every pool. The one thing an operator adds on the cluster side is a
 * pause (`mcgit pool pause`, an annotation on the pool object): it can only
 * hold a rollout, never start one.
 *
 * Cost: one pass reads every node once (one snapshot), plans in
 * O(n log n), and writes only what changed — the desiredConfig of the nodes
 * the plan moves, and pool, policy and config objects whose content differs
 * from what the cluster holds — so a pass with nothing to do writes nothing.
 */
#include "controller/controller_int.h"
#include "site/site.h"
#include "fsio/fsio.h"
#include "osenv/osenv.h"
#include "render/render.h"
#include "rollout/rollout.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
            json_t *e =
                json_pack("{s:s,s:s}", "key", s->exprs[i].key, "operator", ops[s->exprs[i].op]);
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
    json_array_foreach(json_object_get(json_object_get(prev, "status"), "conditions"), i, c) {
        json_t *t = json_object_get(c, "type");
        if (json_is_string(t) && !strcmp(json_string_value(t), type))
            return c;
    }
    return NULL;
}

/*
 * The MachineConfigs of pool p in m, in merge order, as MCO's
 * configuration.source: ObjectReferences to the MachineConfigs of the
 * source commit the target was rendered from (they live in git, not in the
 * cluster).
 */
static json_t *source_refs(const mcg_model *m, const mcg_pool *p)
{
    mcg_strv names = {0};
    mcg_render_select(&names, m, p);
    json_t *a = json_array();
    for (size_t i = 0; i < names.n; i++)
        json_array_append_new(a, json_pack("{s:s,s:s,s:s}", "apiVersion", MCG_API_OPENSHIFT, "kind",
                                           "MachineConfig", "name", names.v[i]));
    mcg_strv_free(&names);
    return a;
}

/*
 * status.configuration: the name the plan says, with its source — the
 * target's when it is the target (MCO copies spec.configuration once the
 * pool is updated), else the one the previous object gave that name.
 */
static json_t *status_configuration(const mcg_pool_status *st, const json_t *prev,
                                    const json_t *target_src)
{
    if (!st->configuration)
        return NULL;
    json_t *c = json_pack("{s:s}", "name", st->configuration);
    const json_t *pc = json_object_get(json_object_get(prev, "status"), "configuration");
    const char *pname = json_string_value(json_object_get(pc, "name"));
    json_t *psrc = json_object_get(pc, "source");
    if (st->target && !strcmp(st->configuration, st->target))
        json_object_set(c, "source", (json_t *)target_src);
    else if (pname && !strcmp(pname, st->configuration) && json_is_array(psrc))
        json_object_set(c, "source", psrc);
    return c;
}

/* The pool's conditions, lastTransitionTime kept from prev unless the status changed. */
static json_t *conditions(const mcg_pool_status *st, const json_t *prev, const char *ts)
{
    json_t *conds = json_array();
    for (int i = 0; i < MCG_COND_COUNT; i++) {
        const mcg_condition *c = &st->conds[i];
        if (!c->type)
            continue; /* a condition this pool does not carry */
        json_t *pcnd = prev_condition(prev, c->type);
        const char *pstat = pcnd ? json_string_value(json_object_get(pcnd, "status")) : NULL;
        json_t *plt = pcnd ? json_object_get(pcnd, "lastTransitionTime") : NULL;
        json_t *lt = (!mcg_rollout_condition_changed(pstat, c) && json_is_string(plt))
                         ? json_incref(plt)
                         : json_string(ts);
        json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s,s:o}", "type", c->type, "status",
                                               c->status ? "True" : "False", "reason", c->reason,
                                               "message", c->message, "lastTransitionTime", lt));
    }
    return conds;
}

/*
 * The pool's spec as git defines it, and the target. spec.paused is not
 * git's: it is the operator's pause (cluster.h), passed through from prev
 * (false on a new object); git's pause is status.pausedInGit.
 */
static json_t *pool_spec(const mcg_pool *p, const mcg_pool_status *st, const json_t *prev,
                         const json_t *target_src)
{
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
    json_t *pp = json_object_get(json_object_get(prev, "spec"), "paused");
    json_object_set_new(spec, "paused", json_is_boolean(pp) ? json_incref(pp) : json_false());
    if (st->target)
        json_object_set_new(spec, "configuration",
                            json_pack("{s:s,s:O}", "name", st->target, "source", target_src));
    return spec;
}

static json_t *pool_object(const mcg_model *m, const mcg_pool *p, const mcg_pool_status *st,
                           const json_t *prev, const mcg_safe_pool *sp, int64_t now,
                           size_t attested)
{
    char ts[32];
    mcg_time_iso(ts, now);
    json_t *md = json_object();
    json_object_set_new(md, "name", json_string(p->name));
    json_t *pc = json_object_get(json_object_get(prev, "metadata"), "creationTimestamp");
    json_object_set_new(md, "creationTimestamp",
                        json_is_string(pc) ? json_incref(pc) : json_string(ts));
    json_t *src = source_refs(m, p);
    json_t *spec = pool_spec(p, st, prev, src);
    json_t *status = json_object();
    json_t *cfg = status_configuration(st, prev, src);
    if (cfg)
        json_object_set_new(status, "configuration", cfg);
    /* the generation this status answers: the backend sets the one it wrote */
    json_t *gen = json_object_get(json_object_get(prev, "metadata"), "generation");
    json_object_set_new(status, "observedGeneration",
                        json_is_integer(gen) ? json_incref(gen) : json_integer(1));
    json_object_set_new(status, MCG_POOL_PAUSED_IN_GIT, json_boolean(p->paused));
    json_object_set_new(status, "machineCount", json_integer((json_int_t)st->machine_count));
    json_object_set_new(status, "readyMachineCount", json_integer((json_int_t)st->ready_count));
    json_object_set_new(status, "updatedMachineCount", json_integer((json_int_t)st->updated_count));
    json_object_set_new(status, "unavailableMachineCount",
                        json_integer((json_int_t)st->unavailable_count));
    json_object_set_new(status, "degradedMachineCount",
                        json_integer((json_int_t)st->degraded_count));
    /* mcgit's: nodes whose signed attestation verifies (docs/sites.md) */
    json_object_set_new(status, "attestedMachineCount", json_integer((json_int_t)attested));
    json_object_set_new(status, "conditions", conditions(st, prev, ts));
    if (sp)
        mcg_safe_status(status, sp, st, now);
    json_decref(src);
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
            return mcg_err_set(err, MCG_ETRUST,
                               "rendered config of pool %s does not match its name",
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

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The previous pool object called name in prev (a JSON array), or NULL. */
static json_t *prev_pool(const json_t *prev, const char *name)
{
    size_t k;
    json_t *pp;
    json_array_foreach(prev, k, pp) {
        json_t *nm = json_object_get(json_object_get(pp, "metadata"), "name");
        if (json_is_string(nm) && !strcmp(json_string_value(nm), name))
            return pp;
    }
    return NULL;
}

/*
 * Whether prev already says what obj says: the spec, the status and the
 * metadata this controller writes. A store may add fields of its own
 * (kube: uid, resourceVersion, managedFields), which do not count, and
 * names the object in its own group (kube: apiVersion
 * machineconfiguration.mcgit.io/v1), which does not count either.
 */
static bool pool_same(const json_t *prev, const json_t *obj)
{
    if (!prev)
        return false;
    static const char *const top[] = {"kind", "spec", "status", NULL};
    for (const char *const *k = top; *k; k++)
        if (!json_equal(json_object_get(prev, *k), json_object_get(obj, *k)))
            return false;
    const json_t *pm = json_object_get(prev, "metadata"), *om = json_object_get(obj, "metadata");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)om, key, v) {
        if (!json_equal(json_object_get(pm, key), v))
            return false;
    }
    return true;
}

/* Whether the URL scheme ending at sep ("://") is ssh's (ssh, git+ssh, ssh+git). */
static bool ssh_scheme(const char *start, const char *sep)
{
    const char *s = sep;
    while (s > start && (isalnum((unsigned char)s[-1]) || s[-1] == '+'))
        s--;
    size_t l = (size_t)(sep - s);
    return (l == 3 && !strncmp(s, "ssh", 3)) || (l == 7 && !strncmp(s, "git+ssh", 7)) ||
           (l == 7 && !strncmp(s, "ssh+git", 7));
}

void mcg_controller_redact_urls(char *out, size_t n, const char *src)
{
    mcg_buf b = MCG_BUF_INIT;
    const char *p = src;
    for (;;) {
        const char *sep = strstr(p, "://");
        if (!sep) {
            mcg_buf_puts(&b, p);
            break;
        }
        /* an ssh user name is no secret (git@, the deploy key is): kept, unless a password follows
         */
        bool keep_user = ssh_scheme(p, sep);
        sep += 3;
        mcg_buf_put(&b, p, (size_t)(sep - p));
        size_t auth = strcspn(sep, "/?# \t'\"");
        const char *at = memchr(sep, '@', auth);
        if (at) {
            const char *last = at; /* the last '@' of the authority ends the user info */
            while ((at = memchr(last + 1, '@', auth - (size_t)(last + 1 - sep))))
                last = at;
            if (keep_user && !memchr(sep, ':', (size_t)(last - sep)) &&
                !memchr(sep, '@', (size_t)(last - sep)))
                mcg_buf_put(&b, sep, (size_t)(last - sep));
            else
                mcg_buf_puts(&b, "***");
            p = last;
        } else {
            p = sep;
        }
    }
    snprintf(out, n, "%s", b.ptr ? b.ptr : "");
    mcg_buf_free(&b);
}

void mcg_pass_result_clear(mcg_pass_result *res)
{
    if (res) {
        mcg_strv_free(&res->unmanaged);
        mcg_strv_free(&res->targeted);
        mcg_strv_free(&res->overrides);
    }
}

/*
 * 1. Fetch the source branch when the repo has the remote. No remote at all
 * is the normal case of a repo operators push to directly; a remote that
 * was asked for (--remote) but does not exist is a failure like any other.
 */
static void fetch(mcg_pass_result *res, const mcg_controller_opts *o, mcg_repo *r,
                  const mcg_signers *root, int64_t now)
{
    char fetched[MCG_SHA_HEX + 1];
    char none[300];
    mcg_err ferr = {0};
    const char *remote = o->remote ? o->remote : "origin";
    double t0 = mcg_mono_seconds();
    mcg_fetch_opts fo = {.now = now, .timeout = o->fetch_timeout};
    int frc = mcg_gitops_fetch(r, remote, root, &fo, fetched, &ferr);
    double took = mcg_mono_seconds() - t0;
    /* gitops reports a missing remote as MCG_ENOTFOUND "no remote 'NAME'"; a
     * remote without the source branch is MCG_ENOTFOUND too, with another message */
    snprintf(none, sizeof(none), "no remote '%s'", remote);
    if (frc == MCG_ENOTFOUND && !o->remote && !strcmp(ferr.msg, none))
        return; /* no remote: nothing fetched, nothing to count */
    mcg_ctl_record_fetch(o->metrics, took, frc && frc != MCG_ETRUST, frc == MCG_ETRUST);
    if (!frc)
        return;
    char msg[MCG_ERR_MSG];
    mcg_controller_redact_urls(msg, sizeof(msg), ferr.msg);
    if (frc == MCG_ETRUST) {
        /* Fetched, but a new commit failed verification: nothing moved,
         * and the pools name the refused commit as for a local push. */
        res->refused = true;
        snprintf(res->refusal, sizeof(res->refusal), "%s", msg);
        return;
    }
    res->fetch_failed = true;
    mcg_bfmt(res->fetch_error, sizeof(res->fetch_error), "fetch from %s failed: %s", remote, msg);
}

/* 2. Verify every new source commit and render the tip onto the rendered branch. */
static void render(mcg_pass_result *res, mcg_repo *r, const mcg_signers *root, mcg_metrics *mx)
{
    mcg_render_result rres;
    mcg_verify_report rep = {0};
    mcg_diags diags = {0};
    mcg_err rerr = {0};
    double t0 = mcg_mono_seconds();
    int rrc = mcg_gitops_render(&rres, NULL, &rep, r, NULL, root, &diags, &rerr);
    mcg_ctl_record_render(mx, &rep, mcg_mono_seconds() - t0 - rep.seconds, !rrc && rres.created,
                          rrc && rep.nbad, rrc != 0);
    if (rrc != 0) {
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
            mcg_bfmt(res->refusal, sizeof(res->refusal), "%s%s%s", why, diags.count ? ": " : "",
                     diags.count ? diags.msgs[0] : "");
    }
    mcg_verify_report_free(&rep);
    mcg_diags_free(&diags);
}

/*
 * The names the cluster must keep published: every node's desired and
 * current config, every pool's target and configuration, and per pool the
 * newest `keep` other rendered configs of the rendered branch (log, newest
 * first). Sorted, for bsearch.
 */
static void keep_set(mcg_strv *keep, const mcg_node *nodes, size_t nnodes,
                     const mcg_rollout_plan *plan, const mcg_rendered_log *log, unsigned nkeep)
{
    for (size_t i = 0; i < nnodes; i++) {
        if (nodes[i].desired && *nodes[i].desired)
            mcg_strv_push(keep, nodes[i].desired);
        if (nodes[i].current && *nodes[i].current)
            mcg_strv_push(keep, nodes[i].current);
    }
    for (size_t i = 0; i < plan->nupdates; i++)
        mcg_strv_push(keep, plan->updates[i].desired);
    for (size_t p = 0; p < plan->npools; p++) {
        const mcg_pool_status *st = &plan->pools[p];
        if (st->target)
            mcg_strv_push(keep, st->target);
        if (st->configuration)
            mcg_strv_push(keep, st->configuration);
        size_t plen = strlen(st->pool);
        mcg_strv older = {0};
        for (size_t e = 0; e < log->n && older.n < nkeep; e++)
            for (size_t j = 0; j < log->e[e].pools.n; j++) {
                const char *line = log->e[e].pools.v[j]; /* "pool rendered-pool-hash" */
                if (strncmp(line, st->pool, plen) != 0 || line[plen] != ' ')
                    continue;
                const char *name = line + plen + 1;
                if ((!st->target || strcmp(name, st->target) != 0) &&
                    !mcg_strv_contains(&older, name) && older.n < nkeep)
                    mcg_strv_push(&older, name);
            }
        for (size_t j = 0; j < older.n; j++)
            mcg_strv_push(keep, older.v[j]);
        mcg_strv_free(&older);
    }
    mcg_strv_sort(keep);
}

/*
 * One pass's state, handed from phase to phase (mcg_controller_pass);
 * everything it holds is freed by pass_free.
 */
typedef struct {
    const mcg_controller_opts *o;
    mcg_cluster *c;
    int64_t now;
    mcg_pass_result *res;
    mcg_signers *root; /* the trust root, revocations applied */
    mcg_repo *r;
    mcg_rendered_log log;      /* the rendered branch, newest first */
    char src[MCG_SHA_HEX + 1]; /* the source commit of the rendered tip ("": none) */
    mcg_model *m;              /* the model of src */
    mcg_diags diags;
    tip_pool *tips; /* each pool's rendered config at the tip */
    size_t ntips;
    char *render_error; /* why the pools stay on src (NULL: they do not) */
    mcg_node *nodes;    /* one snapshot, sorted by name */
    size_t nnodes;
    json_t *prev_pools; /* the pool objects before the pass */
    mcg_rollout_plan *plan;
    mcg_strv untrusted;  /* per pool of m: its UntrustedChanges message ("" none) */
    mcg_safe_pool *safe; /* per pool of m: its safe rollout (safe.c) */
} pass;

static void pass_free(pass *p)
{
    mcg_safe_pools_free(p->safe, p->m ? p->m->npools : 0);
    mcg_strv_free(&p->untrusted);
    free(p->render_error);
    mcg_rollout_plan_free(p->plan);
    json_decref(p->prev_pools);
    mcg_nodes_free(p->nodes, p->nnodes);
    tip_free(p->tips, p->ntips);
    mcg_rendered_log_free(&p->log);
    mcg_diags_free(&p->diags);
    mcg_model_free(p->m);
    mcg_repo_free(p->r);
    mcg_signers_free(p->root);
}

/* Open: the trust root and revocations, re-read every pass, and the repo. */
static int pass_open(pass *p, mcg_err *err)
{
    int rc = mcg_gitops_load_trust(&p->root, p->o->trust, p->o->revoked, err);
    if (!rc)
        rc = mcg_repo_open(&p->r, p->o->repo, err);
    return rc;
}

/*
 * 3. The last good state: the rendered tip, the source it came from (none:
 * p->src stays "", nothing to roll out), its pools' configs, the source's
 * freshness, and why the pools stay there when the fetch or render failed.
 */
static int pass_last_good(pass *p, mcg_err *err)
{
    mcg_pass_result *res = p->res;
    int rc;
    if ((rc = mcg_gitops_log(&p->log, p->r, err)) != 0)
        return rc;
    if (p->log.n)
        memcpy(p->src, p->log.e[0].source, sizeof(p->src));
    if (!p->src[0])
        return 0; /* nothing was ever rendered: nothing to roll out */
    if ((rc = mcg_gitops_load_commit(&p->m, p->r, p->src, &p->diags, err)) != 0)
        return rc;
    /* a site's controller runs the pools its site file names, by its policy
     * (docs/sites.md); a site not declared is said by its record (9) */
    if (p->o->site)
        mcg_model_apply_site(p->m, p->o->site);
    if ((rc = read_tip(&p->tips, &p->ntips, p->r, p->m, err)) != 0)
        return rc;
    /* freeze protection: the newest verified source against maxSourceAge */
    mcg_source_freshness fresh;
    if ((rc = mcg_gitops_source_freshness(&fresh, p->r, p->root, err)) != 0)
        return rc;
    char *stale = mcg_source_stale_message(&fresh, p->now);
    if (stale)
        snprintf(res->stale, sizeof(res->stale), "%s", stale);
    free(stale);
    if (res->fetch_failed || res->refused)
        p->render_error =
            mcg_sprintf("%s%s%s (pools stay on source commit %.12s)", res->fetch_error,
                        res->fetch_failed && res->refused ? "; " : "", res->refusal, p->src);
    return 0;
}

/* 4. Publish the targets and the disruption policy (only what changed). */
static int pass_publish(pass *p, mcg_err *err)
{
    json_t *pol = NULL, *cur_pol = NULL;
    int rc = 0;
    for (size_t i = 0; i < p->ntips; i++)
        if ((rc = mcg_cluster_put_config(p->c, p->tips[i].name, p->tips[i].spec,
                                         p->tips[i].spec_len, err)) != 0)
            goto out;
    pol = mcg_policy_to_json(&p->m->policy);
    int grc = mcg_cluster_get_policy_json(p->c, &cur_pol, err);
    if (grc && grc != MCG_ENOTFOUND) {
        rc = grc;
        goto out;
    }
    if (grc == MCG_ENOTFOUND || !json_equal(cur_pol, pol)) {
        if ((rc = mcg_cluster_put_policy(p->c, pol, err)) != 0)
            goto out;
        p->res->writes++;
    }
out:
    json_decref(pol);
    json_decref(cur_pol);
    return rc;
}

/*
 * Per pool of m (in order), the UntrustedChanges message: the commits by
 * keys not trusted now whose changes the pool's current config still holds
 * (mcg_gitops_untrusted_pools), "" when none. What cannot be computed
 * leaves "" (the condition is an alarm; the pass goes on).
 */
static void untrusted_messages(mcg_strv *msgs, mcg_repo *r, const mcg_signers *root,
                               const mcg_model *m)
{
    mcg_strv lines = {0};
    mcg_gitops_untrusted_pools(&lines, r, root, NULL);
    for (size_t i = 0; i < m->npools; i++) {
        mcg_buf b = MCG_BUF_INIT;
        size_t pl = strlen(m->pools[i].name);
        for (size_t k = 0; k < lines.n; k++)
            if (!strncmp(lines.v[k], m->pools[i].name, pl) && lines.v[k][pl] == '\t') {
                mcg_buf_puts(&b, b.len ? "; " : "changes by keys not trusted now still in force: ");
                mcg_buf_puts(&b, lines.v[k] + pl + 1);
            }
        mcg_buf_putc(&b, '\0');
        mcg_strv_push(msgs, b.ptr);
        mcg_buf_free(&b);
    }
    mcg_strv_free(&lines);
}

/*
 * Whether updating a node of the pool from its configuration to its target
 * drains or reboots it, under the repo's disruption policy (what
 * maxConcurrentDisruptions counts). Unknown (a new pool, a config the
 * cluster no longer holds): yes.
 */
static bool pool_disrupts(pass *p, const mcg_pool_view *pv)
{
    const char *from = pv->configuration, *to = pv->target;
    const tip_pool *tip = NULL;
    for (size_t j = 0; j < p->ntips; j++)
        if (!strcmp(p->tips[j].pool, pv->pool->name))
            tip = &p->tips[j];
    if (!from || !*from || !to || !*to || !strcmp(from, to) || !tip)
        return true;
    char *old = NULL;
    size_t len = 0;
    mcg_ignition oi, ni;
    memset(&oi, 0, sizeof(oi));
    memset(&ni, 0, sizeof(ni));
    bool yes = true;
    if (mcg_cluster_get_config(p->c, from, &old, &len, NULL) == 0 &&
        mcg_ignition_parse_json(&oi, from, old, len, NULL) == 0 &&
        mcg_ignition_parse_json(&ni, to, tip->spec, tip->spec_len, NULL) == 0) {
        mcg_diff d;
        mcg_render_diff(&d, &oi, &ni, &p->m->policy);
        yes = d.actions.reboot || d.actions.drain;
        mcg_diff_free(&d);
    }
    mcg_ignition_free(&oi);
    mcg_ignition_free(&ni);
    free(old);
    return yes;
}

/* What the planner sees of each pool: its target, why it is held, its
 * pause, the changes by keys not trusted now it still holds. */
static mcg_pool_view *pool_views(pass *p)
{
    const mcg_model *m = p->m;
    const mcg_pass_result *res = p->res;
    mcg_pool_view *pviews = mcg_calloc(m->npools ? m->npools : 1, sizeof(*pviews));
    const json_t **prev = mcg_calloc(m->npools ? m->npools : 1, sizeof(*prev));
    untrusted_messages(&p->untrusted, p->r, p->root, m);
    for (size_t i = 0; i < m->npools; i++) {
        const char *target = NULL;
        for (size_t j = 0; j < p->ntips; j++)
            if (!strcmp(p->tips[j].pool, m->pools[i].name))
                target = p->tips[j].name;
        json_t *pp = prev_pool(p->prev_pools, m->pools[i].name);
        const char *configuration = json_string_value(json_object_get(
            json_object_get(json_object_get(pp, "status"), "configuration"), "name"));
        prev[i] = pp;
        pviews[i] = (mcg_pool_view){.pool = &m->pools[i],
                                    .target = target,
                                    .render_error = p->render_error,
                                    .configuration = configuration,
                                    .render_reason = res->refused ? "RenderFailed" : "FetchFailed",
                                    .stale = res->stale[0] ? res->stale : NULL,
                                    .operator_paused = mcg_pool_object_operator_paused(pp),
                                    .untrusted = p->untrusted.v[i][0] ? p->untrusted.v[i] : NULL};
    }
    mcg_safe_in in = {prev, p->nodes, p->nnodes, &p->log, p->src, p->now};
    p->safe = mcg_safe_pools(pviews, m->npools, &in);
    free(prev);
    for (size_t i = 0; m->settings.max_disruptions > 0 && i < m->npools; i++)
        pviews[i].disrupts = pool_disrupts(p, &pviews[i]);
    for (size_t i = 0; i < m->npools; i++)
        if (pviews[i].window_override) {
            char *line = mcg_sprintf("%s %s", m->pools[i].name, pviews[i].target);
            mcg_strv_push(&p->res->overrides, line);
            free(line);
        }
    return pviews;
}

/*
 * A pool object written by an mcgit before status.pausedInGit held git's
 * pause in spec.paused, which is now the operator's: where git pauses the
 * pool and the object has no status.pausedInGit, that spec.paused is git's
 * and is cleared once, so that the signed commit that resumes the pool
 * resumes it (an object that also has the older pause annotation is an
 * operator's pause anyway, and is left for `mcgit pool resume`). Best effort: what fails is tried
 * again next pass.
 */
static void migrate_git_pause(pass *p)
{
    size_t k;
    json_t *pp;
    json_array_foreach(p->prev_pools, k, pp) {
        json_t *spec = json_object_get(pp, "spec");
        const char *name =
            json_string_value(json_object_get(json_object_get(pp, "metadata"), "name"));
        const mcg_pool *mp = name ? mcg_model_pool(p->m, name) : NULL;
        bool changed = false;
        if (!mp || !mp->paused || !json_is_true(json_object_get(spec, "paused")) ||
            json_object_get(json_object_get(pp, "status"), MCG_POOL_PAUSED_IN_GIT) ||
            json_object_get(json_object_get(json_object_get(pp, "metadata"), "annotations"),
                            MCG_ANN_PAUSED) ||
            mcg_cluster_pause_pool(p->c, name, false, &changed, NULL, NULL) != 0)
            continue;
        json_object_set_new(spec, "paused", json_false());
    }
}

/* 5. Plan on one snapshot of the nodes (and of the pool objects). */
static int pass_plan(pass *p, mcg_err *err)
{
    mcg_node_view *views = NULL;
    mcg_pool_view *pviews = NULL;
    int rc;
    if ((rc = mcg_cluster_list_nodes(p->c, &p->nodes, &p->nnodes, err)) != 0 ||
        (rc = mcg_cluster_list_pools(p->c, &p->prev_pools, err)) != 0)
        return rc;
    migrate_git_pause(p);
    const mcg_node *nodes = p->nodes;
    size_t nnodes = p->nnodes;
    p->res->nodes = nnodes;
    qsort(p->nodes, nnodes, sizeof(*nodes), node_cmp);
    views = mcg_calloc(nnodes ? nnodes : 1, sizeof(*views));
    for (size_t i = 0; i < nnodes; i++)
        views[i] = (mcg_node_view){nodes[i].name,    &nodes[i].labels,       nodes[i].created,
                                   nodes[i].ready,   nodes[i].unschedulable, nodes[i].desired,
                                   nodes[i].current, nodes[i].state,         nodes[i].reason};
    pviews = pool_views(p);
    rc = mcg_rollout_plan_make(&p->plan, views, nnodes, pviews, p->m->npools,
                               p->m->settings.max_disruptions, err);
    free(views);
    free(pviews);
    return rc;
}

/*
 * 6. Write desiredConfig, compare-and-swap on the value planned from, as
 * one batch (the local store makes them durable with one sync); list the
 * nodes the plan cannot manage.
 */
static int pass_desired(pass *p, mcg_err *err)
{
    const mcg_rollout_plan *plan = p->plan;
    mcg_pass_result *res = p->res;
    int rc = 0;
    if (plan->nupdates) {
        const char **names = mcg_calloc(plan->nupdates, sizeof(*names));
        mcg_node_patch *patches = mcg_calloc(plan->nupdates, sizeof(*patches));
        int *rcs = mcg_calloc(plan->nupdates, sizeof(*rcs));
        for (size_t i = 0; i < plan->nupdates; i++) {
            const mcg_desired_update *u = &plan->updates[i];
            mcg_node key = {0};
            key.name = u->node;
            const mcg_node *cur = bsearch(&key, p->nodes, p->nnodes, sizeof(*p->nodes), node_cmp);
            mcg_node_patch np = MCG_NODE_PATCH_INIT;
            np.desired = u->desired;
            np.if_desired = cur && cur->desired ? cur->desired : "";
            names[i] = u->node;
            patches[i] = np;
        }
        rc = mcg_cluster_patch_nodes(p->c, names, patches, plan->nupdates, rcs, err);
        for (size_t i = 0; i < plan->nupdates && !rc; i++)
            if (rcs[i] == 0) {
                res->updates++;
                char *line = mcg_sprintf("%s %s", names[i], patches[i].desired);
                mcg_strv_push(&res->targeted, line);
                free(line);
            }
        free(names);
        free(patches);
        free(rcs);
        if (rc)
            return rc;
    }
    for (size_t i = 0; i < plan->nmembers; i++)
        if (plan->members[i].kind == MCG_MEMBER_CONFLICT) {
            char *line = mcg_sprintf("%s: %s", plan->members[i].node, plan->members[i].reason);
            mcg_strv_push(&res->unmanaged, line);
            free(line);
        }
    mcg_strv_sort(&res->unmanaged);
    return 0;
}

/* A Kubernetes Event for each rollout halted in this pass (best effort). */
static void halt_events(pass *p)
{
    for (size_t i = 0; p->safe && i < p->m->npools; i++) {
        if (!p->safe[i].raised_now || !p->safe[i].halted_msg)
            continue;
        mcg_event ev = {"mcgit-controller",   true, p->m->pools[i].name, true, "RolloutHalted",
                        p->safe[i].halted_msg};
        mcg_cluster_event(p->c, &ev, NULL);
    }
}

/*
 * 7. Status: the pools' objects (written only when they changed), metrics
 * and events; pools removed from the repo lose their objects.
 */
static int pass_status(pass *p, mcg_err *err)
{
    const mcg_model *m = p->m;
    mcg_pass_result *res = p->res;
    int rc = 0;
    mcg_strv digests = {0};
    for (size_t i = 0; i < m->npools; i++) {
        json_t *prev = prev_pool(p->prev_pools, m->pools[i].name);
        size_t attested =
            mcg_ctl_attested_count(p->c, p->nodes, p->nnodes, p->plan, m->pools[i].name, &digests);
        json_t *obj = pool_object(m, &m->pools[i], &p->plan->pools[i], prev,
                                  p->safe ? &p->safe[i] : NULL, p->now, attested);
        if (!pool_same(prev, obj)) {
            rc = mcg_cluster_put_pool(p->c, m->pools[i].name, obj, err);
            res->writes++;
        }
        json_decref(obj);
        if (rc)
            break;
    }
    mcg_strv_free(&digests);
    if (rc)
        return rc;
    mcg_ctl_record_status(p->o->metrics, p->plan, p->nodes, p->nnodes, p->now);
    mcg_ctl_record_safe(p->o->metrics, p->plan, p->safe, p->nodes, p->nnodes);
    halt_events(p);
    mcg_ctl_emit_events(p->c, p->plan, p->prev_pools, &res->targeted, p->src, res->event_error,
                        sizeof(res->event_error));
    /* pools removed from the repo lose their objects */
    size_t k;
    json_t *pp;
    json_array_foreach(p->prev_pools, k, pp) {
        json_t *nm = json_object_get(json_object_get(pp, "metadata"), "name");
        if (json_is_string(nm) && !mcg_model_pool(m, json_string_value(nm)))
            mcg_cluster_delete_pool(p->c, json_string_value(nm), NULL);
    }
    return 0;
}

/*
 * 8. Unpublish what nothing uses, beyond a few older configs per pool:
 * git keeps every rendered config, and a rollback publishes it again.
 * Only on a pass that moved no node: while a wave is out nothing new
 * becomes unused (the nodes not yet moved still run the old config),
 * and a rollout then costs no list of configs per wave. The pass after
 * the last wave, or any quiet pass, collects.
 */
static void pass_collect(pass *p)
{
    mcg_strv keep = {0}, published = {0};
    if (p->res->updates)
        return;
    keep_set(&keep, p->nodes, p->nnodes, p->plan, &p->log, p->o->keep_configs);
    if (mcg_cluster_list_configs(p->c, &published, NULL) == 0)
        for (size_t i = 0; i < published.n; i++)
            if (!keep.n || !bsearch(&published.v[i], keep.v, keep.n, sizeof(*keep.v), str_cmp))
                mcg_cluster_delete_config(p->c, published.v[i], NULL);
    mcg_strv_free(&published);
    mcg_strv_free(&keep);
}

/*
 * 9. A site's controller records its cluster's status, when it changed, as
 * a signed record (docs/sites.md). A failure to record fails no rollout:
 * it is said in res->site_error.
 */
static void pass_site(pass *p)
{
    mcg_site_record_result sr;
    mcg_err e = {0};
    if (!p->o->site)
        return;
    if (mcg_site_record(&sr, p->r, p->c, p->o->site, p->o->site_key, p->now, false, &e) != 0)
        mcg_bfmt(p->res->site_error, sizeof(p->res->site_error), "%s", e.msg);
    else
        snprintf(p->res->site_record, sizeof(p->res->site_record), "%s", sr.commit);
}

/*
 * One pass, phase by phase: open, fetch (1), verify and render (2), the
 * last good state (3), publish (4), plan (5), desiredConfig (6), status
 * (7), collect (8), the site's record (9).
 */
int mcg_controller_pass(mcg_pass_result *res, const mcg_controller_opts *o, mcg_cluster *c,
                        int64_t now, mcg_err *err)
{
    memset(res, 0, sizeof(*res));
    pass p = {.o = o, .c = c, .now = now, .res = res};
    int rc;
    if ((rc = pass_open(&p, err)) != 0)
        goto out;
    fetch(res, o, p.r, p.root, now);
    /* a new mirror whose first fetch failed has no source branch yet:
     * nothing to render, and nothing to refuse beyond the fetch's failure */
    char held[MCG_SHA_HEX + 1];
    mcg_err herr = {0};
    if (!res->fetch_failed ||
        mcg_repo_resolve(p.r, mcg_repo_source_branch(p.r), held, &herr) != MCG_ENOTFOUND)
        render(res, p.r, p.root, o->metrics);
    if ((rc = pass_last_good(&p, err)) != 0 || !p.src[0])
        goto out;
    if ((rc = pass_publish(&p, err)) != 0 || (rc = pass_plan(&p, err)) != 0 ||
        (rc = pass_desired(&p, err)) != 0 || (rc = pass_status(&p, err)) != 0)
        goto out;
    pass_collect(&p);
    pass_site(&p);
out:
    pass_free(&p);
    return rc;
}
