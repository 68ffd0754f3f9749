/*
 * plan.c — what a source commit would do once rendered, before anything is
 * written: `mcgit plan`, the pre-receive hook and `bundle verify|import`.
 *
 * The new side is the commit's render (from a model the caller loaded, or
 * loaded here); the old side is, per pool, the rendered branch tip's
 * <pool>/spec.json — what the controller rolls out from. Both specs are
 * parsed the same way (mcg_ignition_parse_json) and compared with
 * mcg_render_diff under the new commit's node disruption policy. Nothing
 * here writes; node counts are the caller's (they need a cluster).
 */
#include "gitops/gitops_int.h"

#include <stdlib.h>
#include <string.h>

/* Contracts of the public functions: gitops.h. */
void mcg_commit_plan_free(mcg_commit_plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        free(p->pools[i].old_name);
        mcg_diff_free(&p->pools[i].diff);
    }
    free(p->pools);
    mcg_render_free(p->render);
    mcg_model_free(p->model);
    free(p);
}

/*
 * The old side of one pool: its rendered tip's name into pp->old_name and its
 * parsed spec into *old (*has_old true); neither when the rendered branch or
 * the pool's directory in it does not exist. Errors reading or parsing them.
 */
static int load_old(mcg_commit_plan_pool *pp, mcg_ignition *old, bool *has_old, mcg_repo *r,
                    const char *pool, mcg_err *err)
{
    char *data = NULL, *path = NULL;
    size_t len = 0;
    int rc = 0;
    *has_old = false;
    path = mcg_sprintf("%s/name", pool);
    rc = mcg_gitops_read_rendered(&data, &len, r, path, NULL, err);
    if (rc == MCG_ENOTFOUND) {
        rc = 0; /* a new pool, or no rendered branch yet */
        goto out;
    }
    if (rc)
        goto out;
    pp->old_name = mcg_strndup(data, len);
    pp->old_name[strcspn(pp->old_name, "\n")] = '\0';
    free(data);
    data = NULL;
    free(path);
    path = mcg_sprintf("%s/spec.json", pool);
    if ((rc = mcg_gitops_read_rendered(&data, &len, r, path, NULL, err)) != 0)
        goto out;
    if ((rc = mcg_ignition_parse_json(old, path, data, len, err)) != 0)
        goto out;
    *has_old = true;
out:
    free(data);
    free(path);
    return rc;
}

int mcg_gitops_commit_plan_make(mcg_commit_plan **out, mcg_repo *r, const char *sha, mcg_model *m,
                                mcg_render *rd, mcg_err *err)
{
    mcg_commit_plan *p = mcg_calloc(1, sizeof(*p));
    int rc = 0;
    *out = NULL;
    p->model = m; /* transferred */
    p->render = rd;
    snprintf(p->source, sizeof(p->source), "%s", sha);
    char *ren = mcg_sprintf("refs/heads/%s", r->rendered_branch);
    if (mcg_repo_resolve(r, ren, p->rendered, NULL) != 0)
        p->rendered[0] = '\0'; /* no rendered branch yet */
    free(ren);
    p->pools = mcg_calloc(rd->n ? rd->n : 1, sizeof(*p->pools));
    for (size_t i = 0; i < rd->n; i++) {
        const mcg_rendered_pool *rp = &rd->pools[i];
        mcg_commit_plan_pool *pp = &p->pools[p->n++];
        mcg_ignition old, cur;
        memset(&old, 0, sizeof(old));
        memset(&cur, 0, sizeof(cur));
        bool has_old = false;
        pp->name = rp->pool;
        pp->pool = mcg_model_pool(m, rp->pool);
        pp->new_name = rp->name;
        pp->error = rp->error;
        if ((rc = load_old(pp, &old, &has_old, r, rp->pool, err)) != 0) {
            mcg_ignition_free(&old);
            goto out;
        }
        if (!rp->error) {
            rc = mcg_ignition_parse_json(&cur, rp->name, rp->spec, rp->spec_len, err);
            if (rc == 0)
                mcg_render_diff(&pp->diff, has_old ? &old : NULL, &cur, &m->policy);
        }
        mcg_ignition_free(&old);
        mcg_ignition_free(&cur);
        if (rc)
            goto out;
    }
    *out = p; /* transferred */
    p = NULL;
out:
    if (p) {
        p->model = NULL; /* the caller's on failure */
        p->render = NULL;
    }
    mcg_commit_plan_free(p);
    return rc;
}

int mcg_gitops_commit_plan(mcg_commit_plan **out, mcg_repo *r, const char *sha, mcg_diags *diags,
                           mcg_err *err)
{
    mcg_model *m = NULL;
    mcg_render *rd = NULL;
    *out = NULL;
    int rc = mcg_gitops_load_commit(&m, r, sha, diags, err);
    if (rc == 0 && mcg_render_model(&rd, m, diags) != 0)
        rc = mcg_err_set(err, MCG_EINVAL, "commit %.12s does not render", sha);
    if (rc == 0)
        rc = mcg_gitops_commit_plan_make(out, r, sha, m, rd, err);
    if (rc) {
        mcg_render_free(rd);
        mcg_model_free(m);
    }
    return rc;
}

/* ------------------------------------------------------------ unreconcilable */

/* The field an unreconcilable diff key names, as a MachineConfig spells it. */
static const char *section_field(const char *key)
{
    static const struct {
        const char *key, *field;
    } f[] = {
        {"disks", "spec.config.storage.disks"},
        {"raid", "spec.config.storage.raid"},
        {"filesystems", "spec.config.storage.filesystems"},
        {"luks", "spec.config.storage.luks"},
        {"groups", "spec.config.passwd.groups"},
        {"users", "spec.config.passwd.users (users other than core)"},
        {"kernelArguments", "spec.config.kernelArguments (Ignition's own)"},
        {"fips", "spec.fips"},
    };
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (!strcmp(f[i].key, key))
            return f[i].field;
    return key;
}

/* Whether MachineConfig mc sets the unreconcilable section key. */
static bool mc_sets(const mcg_machineconfig *mc, const char *key)
{
    if (!strcmp(key, "fips"))
        return mc->config.os.fips;
    json_t *v = mc->config.extra ? json_object_get(mc->config.extra, key) : NULL;
    return v && (json_is_array(v) ? json_array_size(v) != 0 : json_object_size(v) != 0);
}

/* Whether pool pp's change is refused: a section an installed node cannot
 * take changes from its current target (a first config has none to change). */
static bool refuses(const mcg_commit_plan_pool *pp)
{
    return pp->old_name && !pp->error && pp->diff.unreconcilable;
}

/* "MachineConfig a, b" of pool pp that set key, or "" when none does (it was removed). */
static void setters(mcg_buf *b, const mcg_commit_plan *p, const mcg_commit_plan_pool *pp,
                    const char *key)
{
    mcg_strv names = {0};
    if (pp->pool)
        mcg_render_select(&names, p->model, pp->pool);
    size_t found = 0;
    for (size_t i = 0; i < names.n; i++)
        for (size_t j = 0; j < p->model->nmcs; j++) {
            const mcg_machineconfig *mc = &p->model->mcs[j];
            if (strcmp(mc->name, names.v[i]) || !mc_sets(mc, key))
                continue;
            mcg_buf_printf(b, "%s%s", found++ ? ", " : "MachineConfig ", mc->name);
        }
    mcg_strv_free(&names);
}

void mcg_commit_plan_unreconcilable(const mcg_commit_plan *p, mcg_strv *out)
{
    mcg_buf b = MCG_BUF_INIT;
    for (size_t i = 0; i < p->n; i++) {
        const mcg_commit_plan_pool *pp = &p->pools[i];
        if (!refuses(pp))
            continue;
        for (size_t j = 0; j < pp->diff.n; j++) {
            const mcg_diff_item *it = &pp->diff.items[j];
            if (it->kind != MCG_DIFF_UNRECONCILABLE)
                continue;
            b.len = 0;
            mcg_buf_printf(&b, "pool %s: ", pp->name);
            size_t at = b.len;
            setters(&b, p, pp, it->key);
            bool named = b.len > at;
            mcg_buf_printf(&b, "%s%s %s", named ? ": " : "", section_field(it->key),
                           it->op == MCG_DIFF_REMOVED ? "removed"
                           : it->op == MCG_DIFF_ADDED ? "added"
                                                      : "changed");
            mcg_buf_printf(&b,
                           " (from %s): unreconcilable, an installed node cannot take it "
                           "(MCO refuses it too); revert it, or reinstall the pool's nodes",
                           pp->old_name ? pp->old_name : "none");
            mcg_strv_push(out, b.ptr);
        }
    }
    mcg_buf_free(&b);
}

/* ------------------------------------------------------------ output */

/* One change as "  <op> <kind> <key> (<what>): <actions>" into b (the key
 * left out when it is the kind's name: kernelArguments). */
static void item_line(mcg_buf *b, const mcg_commit_plan_pool *pp, const mcg_diff_item *it)
{
    const char *kind = mcg_diff_kind_name(it->kind);
    mcg_buf_printf(b, "  %s %s", mcg_diff_op_name(it->op), kind);
    if (strcmp(it->key, kind)) /* "kernelArguments kernelArguments" says it once */
        mcg_buf_printf(b, " %s", it->key);
    if (it->what.n) {
        mcg_buf_puts(b, " (");
        for (size_t i = 0; i < it->what.n; i++)
            mcg_buf_printf(b, "%s%s", i ? ", " : "", it->what.v[i]);
        mcg_buf_puts(b, ")");
    }
    if (it->kind == MCG_DIFF_UNRECONCILABLE) {
        mcg_buf_puts(b, refuses(pp) ? ": refused: unreconcilable (an installed node cannot take it)"
                                    : ": taken as installed (the pool's first config)");
    } else {
        char *a = mcg_disruption_str(&it->actions);
        mcg_buf_printf(b, ": %s", a);
        free(a);
    }
}

/* A duration as the pool spelt it, back from seconds: "1h30m", "10m", "45s". */
static void put_duration(mcg_buf *b, int64_t s)
{
    if (s >= 3600)
        mcg_buf_printf(b, "%lldh", (long long)(s / 3600));
    if (s % 3600 >= 60)
        mcg_buf_printf(b, "%lldm", (long long)(s % 3600 / 60));
    if (s % 60 || !s)
        mcg_buf_printf(b, "%llds", (long long)(s % 60));
}

/* The checks, canary and windows a change of pool p meets (safe rollouts). */
static void safe_lines(mcg_strv *out, const mcg_pool *p)
{
    const mcg_rollout_spec *r = &p->rollout;
    mcg_buf b = MCG_BUF_INIT;
    if (r->present && r->canary > 0) {
        mcg_buf_printf(&b, "  canary: %lld node%s first, the next wave after ",
                       (long long)r->canary, r->canary == 1 ? "" : "s");
        put_duration(&b, r->canary_pause);
        mcg_buf_puts(&b, " healthy");
        mcg_strv_push(out, b.ptr);
    }
    if (r->present && r->nchecks) {
        b.len = 0;
        mcg_buf_puts(&b, "  health checks:");
        for (size_t i = 0; i < r->nchecks; i++)
            mcg_buf_printf(&b, "%s %s (%s%s)", i ? "," : "", r->checks[i].name,
                           r->checks[i].unit ? "unit " : "",
                           r->checks[i].unit ? r->checks[i].unit : r->checks[i].command.v[0]);
        mcg_buf_puts(&b, " within ");
        put_duration(&b, r->health_timeout);
        mcg_buf_printf(&b, "; on failure: %s", r->halt_only ? "Halt" : "Revert");
        mcg_strv_push(out, b.ptr);
    }
    static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    for (size_t i = 0; i < p->nwindows; i++) {
        const mcg_window *w = &p->windows[i];
        b.len = 0;
        mcg_buf_puts(&b, "  maintenance window: ");
        for (int d = 0, n = 0; d < 7; d++)
            if (w->days & (1u << d))
                mcg_buf_printf(&b, "%s%s", n++ ? "," : "", days[d]);
        mcg_buf_printf(&b, " %02d:%02d for ", w->start / 60, w->start % 60);
        put_duration(&b, (int64_t)w->duration * 60);
        mcg_buf_printf(&b, " %s", w->tz);
        mcg_strv_push(out, b.ptr);
    }
    mcg_buf_free(&b);
}

char *mcg_commit_plan_title(const mcg_commit_plan *p)
{
    return mcg_sprintf("plan for %.12s (rendered tip: %.12s)", p->source,
                       p->rendered[0] ? p->rendered : "none");
}

void mcg_commit_plan_lines(const mcg_commit_plan *p, mcg_strv *out)
{
    mcg_buf b = MCG_BUF_INIT;
    for (size_t i = 0; i < p->n; i++) {
        const mcg_commit_plan_pool *pp = &p->pools[i];
        b.len = 0;
        if (pp->error) {
            mcg_buf_printf(&b, "pool %s: does not render: %s", pp->name, pp->error);
            mcg_strv_push(out, b.ptr);
            continue;
        }
        bool same = pp->old_name && !strcmp(pp->old_name, pp->new_name);
        if (same) {
            mcg_buf_printf(&b, "pool %s: %s (unchanged)", pp->name, pp->new_name);
            mcg_strv_push(out, b.ptr);
            continue;
        }
        mcg_buf_printf(&b, "pool %s: %s -> %s", pp->name, pp->old_name ? pp->old_name : "none",
                       pp->new_name);
        mcg_strv_push(out, b.ptr);
        for (size_t j = 0; j < pp->diff.n; j++) {
            b.len = 0;
            item_line(&b, pp, &pp->diff.items[j]);
            mcg_strv_push(out, b.ptr);
        }
        b.len = 0;
        char *a = mcg_disruption_str(&pp->diff.actions);
        mcg_buf_printf(&b, "  actions: %s%s", a,
                       refuses(pp) ? "; refused: unreconcilable, no node will take it" : "");
        free(a);
        mcg_strv_push(out, b.ptr);
        b.len = 0;
        if (pp->nodes_known) {
            mcg_buf_printf(&b, "  nodes: %zu of %zu, %lld wave%s at maxUnavailable %lld", pp->nodes,
                           pp->machines, (long long)pp->waves, pp->waves == 1 ? "" : "s",
                           (long long)pp->max_unavailable);
        } else {
            mcg_buf_puts(&b, "  nodes: unknown (no --cluster), maxUnavailable ");
            if (!pp->pool || !pp->pool->max_unavailable_set)
                mcg_buf_puts(&b, "1");
            else
                mcg_buf_printf(&b, "%lld%s", (long long)pp->pool->max_unavailable,
                               pp->pool->max_unavailable_is_percent ? "%" : "");
        }
        if (pp->pool && pp->pool->paused)
            mcg_buf_puts(&b, "; pool paused: nothing rolls out until it is resumed");
        mcg_strv_push(out, b.ptr);
        if (pp->pool)
            safe_lines(out, pp->pool);
    }
    mcg_buf_free(&b);
}

json_t *mcg_commit_plan_json(const mcg_commit_plan *p)
{
    json_t *pools = json_array();
    for (size_t i = 0; i < p->n; i++) {
        const mcg_commit_plan_pool *pp = &p->pools[i];
        json_t *o = json_object();
        json_object_set_new(o, "pool", json_string(pp->name));
        json_object_set_new(o, "old", pp->old_name ? json_string(pp->old_name) : json_null());
        json_object_set_new(o, "new",
                            pp->new_name && !pp->error ? json_string(pp->new_name) : json_null());
        if (pp->error)
            json_object_set_new(o, "error", json_string(pp->error));
        bool changed = !pp->error && !(pp->old_name && !strcmp(pp->old_name, pp->new_name));
        json_object_set_new(o, "changed", json_boolean(changed));
        json_t *changes = json_array();
        for (size_t j = 0; changed && j < pp->diff.n; j++) {
            const mcg_diff_item *it = &pp->diff.items[j];
            json_t *what = json_array();
            for (size_t k = 0; k < it->what.n; k++)
                json_array_append_new(what, json_string(it->what.v[k]));
            json_array_append_new(
                changes, json_pack("{s:s,s:s,s:s,s:o,s:o}", "kind", mcg_diff_kind_name(it->kind),
                                   "op", mcg_diff_op_name(it->op), "key", it->key, "what", what,
                                   "actions", mcg_disruption_json(&it->actions)));
        }
        json_object_set_new(o, "changes", changes);
        json_object_set_new(o, "actions",
                            changed ? mcg_disruption_json(&pp->diff.actions) : json_array());
        json_object_set_new(o, "unreconcilable", json_boolean(changed && refuses(pp)));
        json_object_set_new(o, "paused", json_boolean(pp->pool && pp->pool->paused));
        if (pp->nodes_known) {
            json_object_set_new(o, "machineCount", json_integer((json_int_t)pp->machines));
            json_object_set_new(o, "nodes", json_integer((json_int_t)pp->nodes));
            json_object_set_new(o, "maxUnavailable", json_integer(pp->max_unavailable));
            json_object_set_new(o, "waves", json_integer(pp->waves));
        } else {
            json_object_set_new(o, "machineCount", json_null());
            json_object_set_new(o, "nodes", json_null());
            json_object_set_new(o, "maxUnavailable", json_null());
            json_object_set_new(o, "waves", json_null());
        }
        json_array_append_new(pools, o);
    }
    json_t *warnings = json_array();
    for (size_t i = 0;
         p->model && !p->model->settings.warnings_as_errors && i < p->model->warnings.count; i++)
        json_array_append_new(warnings, json_string(p->model->warnings.msgs[i]));
    return json_pack("{s:i,s:s,s:o,s:o,s:o}", "version", 1, "source", p->source, "renderedTip",
                     p->rendered[0] ? json_string(p->rendered) : json_null(), "pools", pools,
                     "warnings", warnings);
}
