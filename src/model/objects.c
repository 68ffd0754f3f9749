/*
 * objects.c — MachineConfigPool, MachineConfig, MachineConfiguration and
 * mcgit.yaml documents into the model.
 *
 * Which kinds a file may hold follows from where it is: pools/ holds pools,
 * machineconfigs/ holds MachineConfigs (and the cluster MachineConfiguration),
 * mcgit.yaml holds repo settings. Every problem is collected, not just the
 * first, so `mcgit validate` can list them all.
 */
#include "model/model_int.h"

#include <stdlib.h>
#include <string.h>

mcg_model *mcg_model_new(void)
{
    mcg_model *m = mcg_calloc(1, sizeof(*m));
    m->settings.source_branch = mcg_strdup("main");
    m->settings.rendered_branch = mcg_strdup("rendered");
    return m;
}

static void selector_free(mcg_selector *s)
{
    mcg_labels_free(&s->match);
    for (size_t i = 0; i < s->nexprs; i++) {
        free(s->exprs[i].key);
        mcg_strv_free(&s->exprs[i].values);
    }
    free(s->exprs);
}

static void rules_free(mcg_policy_rule *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].key);
        for (size_t j = 0; j < r[i].nactions; j++)
            free(r[i].actions[j].service);
        free(r[i].actions);
    }
    free(r);
}

void mcg_policy_free(mcg_disruption_policy *p)
{
    if (!p)
        return;
    rules_free(p->files, p->nfiles);
    rules_free(p->units, p->nunits);
    for (size_t j = 0; j < p->nsshkey; j++)
        free(p->sshkey[j].service);
    free(p->sshkey);
    memset(p, 0, sizeof(*p));
}

void mcg_pool_clear(mcg_pool *p)
{
    free(p->name);
    mcg_pool_rollout_free(p);
    selector_free(&p->mc_selector);
    selector_free(&p->node_selector);
    memset(p, 0, sizeof(*p));
}

void mcg_model_free(mcg_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->npools; i++)
        mcg_pool_clear(&m->pools[i]);
    free(m->pools);
    for (size_t i = 0; i < m->nmcs; i++) {
        free(m->mcs[i].name);
        mcg_labels_free(&m->mcs[i].labels);
        mcg_ignition_free(&m->mcs[i].config);
    }
    free(m->mcs);
    for (size_t i = 0; i < m->nsites; i++)
        mcg_model_site_clear(&m->sites[i]);
    free(m->sites);
    mcg_policy_free(&m->policy);
    free(m->settings.source_branch);
    free(m->settings.rendered_branch);
    mcg_diags_free(&m->warnings);
    mcg_strv_free(&m->files);
    free(m);
}

const char *const mcg_model_mc_spec_keys[] = {"config",
                                              "kernelArguments",
                                              "extensions",
                                              "osImageURL",
                                              "kernelType",
                                              "fips",
                                              "baseOSExtensionsContainerImage",
                                              NULL};

/* ------------------------------------------------------------ helpers */

/* `spec:` with nothing after it is null in YAML: as good as absent. */
static bool json_is_null_or_absent(const json_t *v)
{
    return !v || json_is_null(v);
}

static void parse_labels(mcg_pctx *c, const json_t *obj, const char *name, mcg_labels *out)
{
    json_t *o = mcg_get_obj(c, obj, "labels", name);
    if (!o)
        return;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        if (!json_is_string(v)) {
            mcg_pctx_err(c, v, "label '%s' must be a string (quote it)", k);
            continue;
        }
        mcg_labels_add(out, k, json_string_value(v));
    }
    mcg_labels_finish(out);
}

/*
 * A pool's nodeSelector of no labels and no expressions ({}) selects every
 * node: MCO's node controller updates no node of such a pool (a
 * SelectingAll warning); mcgit refuses it where it is written.
 */
static void check_selects_some(mcg_pctx *c, const json_t *sel)
{
    if (!json_is_object(sel))
        return;
    const json_t *ml = json_object_get(sel, "matchLabels");
    const json_t *me = json_object_get(sel, "matchExpressions");
    if (json_object_size(sel) > (size_t)(ml != NULL) + (me != NULL))
        return; /* an unknown field: said already */
    if ((!ml || json_is_null(ml) || (json_is_object(ml) && !json_object_size(ml))) &&
        (!me || json_is_null(me) || (json_is_array(me) && !json_array_size(me))))
        mcg_pctx_err(c, sel,
                     "spec.nodeSelector is empty: it would select every node, whose updates "
                     "MCO's controller refuses (SelectingAll); select the pool's nodes by a "
                     "label, such as node-role.kubernetes.io/worker: \"\"");
}

static void parse_selector(mcg_pctx *c, const json_t *spec, const char *key, mcg_selector *out)
{
    json_t *s = json_object_get(spec, key);
    if (!s || json_is_null(s))
        return;
    if (!json_is_object(s)) {
        mcg_pctx_err(c, s, "field 'spec.%s' must be a mapping", key);
        return;
    }
    out->present = true;
    char name[128];
    snprintf(name, sizeof(name), "spec.%s", key);
    static const char *const keys[] = {"matchLabels", "matchExpressions", NULL};
    mcg_check_keys(c, s, name, keys);
    json_t *ml = mcg_get_obj(c, s, "matchLabels", name);
    const char *k;
    json_t *v;
    json_object_foreach(ml, k, v) {
        if (!json_is_string(v)) {
            mcg_pctx_err(c, v, "%s.matchLabels['%s'] must be a string (quote it)", name, k);
            continue;
        }
        mcg_labels_add(&out->match, k, json_string_value(v));
    }
    mcg_labels_finish(&out->match);
    json_t *me = mcg_get_arr(c, s, "matchExpressions", name);
    size_t i;
    json_t *e;
    json_array_foreach(me, i, e) {
        char ename[160];
        mcg_bfmt(ename, sizeof(ename), "%s.matchExpressions[%zu]", name, i);
        if (!json_is_object(e)) {
            mcg_pctx_err(c, e, "field '%s' must be a mapping", ename);
            continue;
        }
        static const char *const ek[] = {"key", "operator", "values", NULL};
        mcg_check_keys(c, e, ename, ek);
        char *ekey = NULL, *op = NULL;
        mcg_get_str(c, e, "key", ename, &ekey);
        mcg_get_str(c, e, "operator", ename, &op);
        mcg_sel_expr x = {0};
        bool ok = ekey && op;
        if (!ekey)
            mcg_pctx_err(c, e, "field '%s.key' is required", ename);
        if (!op)
            mcg_pctx_err(c, e, "field '%s.operator' is required", ename);
        else if (!strcmp(op, "In"))
            x.op = MCG_SEL_IN;
        else if (!strcmp(op, "NotIn"))
            x.op = MCG_SEL_NOTIN;
        else if (!strcmp(op, "Exists"))
            x.op = MCG_SEL_EXISTS;
        else if (!strcmp(op, "DoesNotExist"))
            x.op = MCG_SEL_DOESNOTEXIST;
        else {
            mcg_pctx_err(c, json_object_get(e, "operator"),
                         "operator '%s' is not one of In, NotIn, Exists, DoesNotExist", op);
            ok = false;
        }
        json_t *vals = mcg_get_arr(c, e, "values", ename);
        json_t *given = json_object_get(e, "values");
        if (!vals && given && !json_is_null(given))
            ok = false; /* "must be a list" said it: not also "needs values" */
        size_t j;
        json_t *vv;
        json_array_foreach(vals, j, vv) {
            if (!json_is_string(vv)) {
                mcg_pctx_err(c, vv, "%s.values[%zu] must be a string", ename, j);
                ok = false;
            } else {
                mcg_strv_push(&x.values, json_string_value(vv));
            }
        }
        if (ok && (x.op == MCG_SEL_IN || x.op == MCG_SEL_NOTIN) && x.values.n == 0) {
            mcg_pctx_err(c, e, "%s: operator %s needs values", ename, op);
            ok = false;
        }
        if (ok && (x.op == MCG_SEL_EXISTS || x.op == MCG_SEL_DOESNOTEXIST) && x.values.n) {
            mcg_pctx_err(c, e, "%s: operator %s takes no values", ename, op);
            ok = false;
        }
        free(op);
        if (!ok) {
            free(ekey);
            mcg_strv_free(&x.values);
            continue;
        }
        x.key = ekey;
        out->exprs = mcg_realloc(out->exprs, (out->nexprs + 1) * sizeof(*out->exprs));
        out->exprs[out->nexprs++] = x;
    }
}

/* metadata.name, validated; returns NULL (and reports) when missing. */
static char *parse_meta_name(mcg_pctx *c, const json_t *root, const char *kind, bool label_only)
{
    json_t *md = mcg_get_obj(c, root, "metadata", "metadata");
    char *name = NULL;
    if (!md) {
        mcg_pctx_err(c, root, "%s has no metadata.name", kind);
        return NULL;
    }
    mcg_get_str(c, md, "name", "metadata.name", &name);
    if (!name) {
        mcg_pctx_err(c, md, "%s has no metadata.name", kind);
        return NULL;
    }
    bool ok = label_only ? mcg_name_is_dns_label(name) : mcg_name_is_dns_subdomain(name);
    if (!ok) {
        mcg_pctx_err(c, json_object_get(md, "name"), "%s name '%s' is not a valid DNS-1123 %s",
                     kind, name, label_only ? "label" : "subdomain");
        free(name);
        return NULL;
    }
    return name;
}

void mcg_parse_max_unavailable(mcg_pctx *c, const json_t *spec, bool *set, bool *is_percent,
                               int64_t *value)
{
    json_t *mu = json_object_get(spec, "maxUnavailable");
    if (json_is_integer(mu)) {
        *set = true;
        *value = (int64_t)json_integer_value(mu);
        if (*value < 0)
            mcg_pctx_err(c, mu, "maxUnavailable must not be negative");
    } else if (json_is_string(mu)) {
        const char *s = json_string_value(mu);
        size_t n = strlen(s);
        uint64_t v = 0;
        char *num = n ? mcg_strndup(s, n - 1) : mcg_strdup("");
        if (n < 2 || s[n - 1] != '%' || !mcg_parse_u64(num, &v))
            mcg_pctx_err(c, mu,
                         "maxUnavailable '%s' must be an integer or a percentage like \"10%%\"", s);
        else if (v > 100)
            mcg_pctx_err(c, mu,
                         "maxUnavailable '%s' is over 100%% (a percentage of the pool's nodes: 1%% "
                         "to 100%%)",
                         s);
        free(num);
        *set = true;
        *is_percent = true;
        *value = (int64_t)v;
    } else if (mu && !json_is_null(mu)) {
        mcg_pctx_err(c, mu, "maxUnavailable must be an integer or a percentage");
    }
}

/* ------------------------------------------------------------ pools */

static void parse_pool(mcg_model *m, mcg_pctx *c, const json_t *root)
{
    int before = c->errors;
    mcg_pool p = {0};
    p.loc.file = c->file;
    p.loc.line = mcg_pctx_line(c, root);
    p.name = parse_meta_name(c, root, "MachineConfigPool", true);
    json_t *spec = mcg_get_obj(c, root, "spec", "spec");
    if (!spec) {
        if (json_is_null_or_absent(json_object_get(root, "spec")))
            mcg_pctx_err(c, root, "MachineConfigPool has no spec");
    } else {
        static const char *const keys[] = {
            "machineConfigSelector", "nodeSelector", "maxUnavailable",     "paused",
            "configuration",         "rollout",      "maintenanceWindows", NULL};
        mcg_check_keys(c, spec, "spec", keys);
        parse_selector(c, spec, "machineConfigSelector", &p.mc_selector);
        parse_selector(c, spec, "nodeSelector", &p.node_selector);
        check_selects_some(c, json_object_get(spec, "nodeSelector"));
        mcg_parse_max_unavailable(c, spec, &p.max_unavailable_set, &p.max_unavailable_is_percent,
                                  &p.max_unavailable);
        mcg_tri paused = MCG_UNSET;
        mcg_get_bool(c, spec, "paused", "spec.paused", &paused);
        p.paused = paused == MCG_TRUE;
        mcg_parse_pool_rollout(c, spec, &p);
    }
    if (c->errors != before) {
        mcg_pool_rollout_free(&p);
        free(p.name);
        selector_free(&p.mc_selector);
        selector_free(&p.node_selector);
        return;
    }
    m->pools = mcg_realloc(m->pools, (m->npools + 1) * sizeof(*m->pools));
    m->pools[m->npools++] = p;
}

/* ------------------------------------------------------------ MCs */

typedef struct embedded {
    mcg_pctx *outer;
    const json_t *cfg; /* the spec.config string, for its line */
    mcg_ignition *out;
    int docs;
    int rc;
} embedded;

static void embedded_doc(json_t *root, mcg_linemap *lines, void *arg)
{
    embedded *e = arg;
    if (e->docs++) {
        mcg_pctx_err(e->outer, e->cfg, "spec.config holds more than one document");
        e->rc = MCG_EINVAL;
        return;
    }
    mcg_pctx c = {.file = e->outer->file,
                  .lines = lines,
                  .base_line = e->outer->base_line,
                  .diags = e->outer->diags,
                  .warns = e->outer->warns};
    e->rc = mcg_ignition_from_json(&c, root, "spec.config", e->out);
    e->outer->errors += c.errors;
}

static void parse_mc(mcg_model *m, mcg_pctx *c, const json_t *root)
{
    int before = c->errors;
    mcg_machineconfig mc = {0};
    mc.loc.file = c->file;
    mc.loc.line = mcg_pctx_line(c, root);
    mc.name = parse_meta_name(c, root, "MachineConfig", false);
    json_t *md = json_object_get(root, "metadata");
    if (json_is_object(md))
        parse_labels(c, md, "metadata.labels", &mc.labels);
    json_t *spec = mcg_get_obj(c, root, "spec", "spec");
    if (!spec)
        goto done; /* MCO: a MachineConfig without a spec changes nothing */
    mcg_check_keys(c, spec, "spec", mcg_model_mc_spec_keys);
    json_t *cfg = json_object_get(spec, "config");
    if (!cfg || json_is_null(cfg)) {
        /* valid: MCO skips the Ignition part of such an MC */
    } else if (json_is_string(cfg)) {
        /* An embedded JSON (or YAML) document, as `oc` users sometimes write. */
        const char *s = json_string_value(cfg);
        int line = mcg_pctx_line(c, cfg);
        embedded e = {c, cfg, &mc.config, 0, MCG_EINVAL};
        int synt = mcg_yaml_each_doc(c->file, s, json_string_length(cfg),
                                     strchr(s, '\n') ? line : line - 1, c->diags, embedded_doc, &e);
        c->errors += synt;
        if (!e.docs && !synt)
            mcg_pctx_err(c, cfg, "spec.config is empty");
        mc.has_config = true;
    } else {
        mcg_ignition_from_json(c, cfg, "spec.config", &mc.config);
        mc.has_config = true;
    }
    mcg_osspec_from_json(c, spec, &mc.config.os);
    mcg_osspec_check_host(c, spec, &mc.config.os);
done:
    if (c->errors != before) {
        free(mc.name);
        mcg_labels_free(&mc.labels);
        mcg_ignition_free(&mc.config);
        return;
    }
    m->mcs = mcg_realloc(m->mcs, (m->nmcs + 1) * sizeof(*m->mcs));
    m->mcs[m->nmcs++] = mc;
}

/* ------------------------------------------------------------ policy */

static void parse_actions(mcg_pctx *c, const json_t *holder, const char *name, mcg_action **out,
                          size_t *n)
{
    json_t *arr = mcg_get_arr(c, holder, "actions", name);
    if (!arr) {
        mcg_pctx_err(c, holder, "field '%s.actions' is required", name);
        return;
    }
    size_t i;
    json_t *a;
    json_array_foreach(arr, i, a) {
        char an[200];
        snprintf(an, sizeof(an), "%s.actions[%zu]", name, i);
        char *type = NULL;
        if (!json_is_object(a) || (mcg_get_str(c, a, "type", an, &type), !type)) {
            if (json_is_object(a))
                mcg_pctx_err(c, a, "field '%s.type' is required", an);
            else
                mcg_pctx_err(c, a, "field '%s' must be a mapping", an);
            continue;
        }
        static const char *const ak[] = {"type", "reload", "restart", NULL};
        mcg_check_keys(c, a, an, ak);
        mcg_action act = {0};
        const char *sub = NULL;
        if (!strcmp(type, "None"))
            act.type = MCG_ACT_NONE;
        else if (!strcmp(type, "Reboot"))
            act.type = MCG_ACT_REBOOT;
        else if (!strcmp(type, "Drain"))
            act.type = MCG_ACT_DRAIN;
        else if (!strcmp(type, "DaemonReload"))
            act.type = MCG_ACT_DAEMON_RELOAD;
        else if (!strcmp(type, "Reload"))
            act.type = MCG_ACT_RELOAD, sub = "reload";
        else if (!strcmp(type, "Restart"))
            act.type = MCG_ACT_RESTART, sub = "restart";
        else if (!strcmp(type, "Special"))
            act.type = MCG_ACT_SPECIAL;
        else {
            mcg_pctx_err(c, json_object_get(a, "type"),
                         "action type '%s' is not one of None, Reboot, Drain, Reload, Restart, "
                         "DaemonReload, Special",
                         type);
            free(type);
            continue;
        }
        if (sub) {
            json_t *so = json_object_get(a, sub);
            json_t *svc = json_is_object(so) ? json_object_get(so, "serviceName") : NULL;
            if (!json_is_string(svc) || !mcg_name_is_unit(json_string_value(svc))) {
                mcg_pctx_err(c, so ? so : a, "action %s needs %s.serviceName (a unit name)", type,
                             sub);
                free(type);
                continue;
            }
            act.service = mcg_strdup(json_string_value(svc));
        }
        free(type);
        *out = mcg_realloc(*out, (*n + 1) * sizeof(**out));
        (*out)[(*n)++] = act;
    }
}

static void parse_rules(mcg_pctx *c, const json_t *ndp, const char *list, const char *keyname,
                        mcg_policy_rule **out, size_t *n)
{
    char name[128];
    snprintf(name, sizeof(name), "nodeDisruptionPolicy.%s", list);
    json_t *arr = mcg_get_arr(c, ndp, list, name);
    size_t i;
    json_t *r;
    json_array_foreach(arr, i, r) {
        char rn[160];
        snprintf(rn, sizeof(rn), "%s[%zu]", name, i);
        if (!json_is_object(r)) {
            mcg_pctx_err(c, r, "field '%s' must be a mapping", rn);
            continue;
        }
        static const char *const fk[] = {"path", "actions", NULL};
        static const char *const uk[] = {"name", "actions", NULL};
        mcg_check_keys(c, r, rn, !strcmp(keyname, "path") ? fk : uk);
        mcg_policy_rule rule = {0};
        mcg_get_str(c, r, keyname, rn, &rule.key);
        if (!rule.key) {
            mcg_pctx_err(c, r, "field '%s.%s' is required", rn, keyname);
            continue;
        }
        if (!strcmp(keyname, "path") && !mcg_path_is_clean_abs(rule.key))
            mcg_pctx_err(c, json_object_get(r, keyname), "'%s' is not an absolute clean path",
                         rule.key);
        parse_actions(c, r, rn, &rule.actions, &rule.nactions);
        *out = mcg_realloc(*out, (*n + 1) * sizeof(**out));
        (*out)[(*n)++] = rule;
    }
}

static int mcg_policy_from_json(mcg_pctx *c, const json_t *spec, mcg_disruption_policy *out)
{
    int before = c->errors;
    memset(out, 0, sizeof(*out));
    out->present = true;
    json_t *ndp = mcg_get_obj(c, spec, "nodeDisruptionPolicy", "spec.nodeDisruptionPolicy");
    if (ndp) {
        static const char *const keys[] = {"files", "units", "sshkey", NULL};
        mcg_check_keys(c, ndp, "nodeDisruptionPolicy", keys);
        parse_rules(c, ndp, "files", "path", &out->files, &out->nfiles);
        parse_rules(c, ndp, "units", "name", &out->units, &out->nunits);
        json_t *ssh = mcg_get_obj(c, ndp, "sshkey", "nodeDisruptionPolicy.sshkey");
        if (ssh) {
            out->has_sshkey = true;
            parse_actions(c, ssh, "nodeDisruptionPolicy.sshkey", &out->sshkey, &out->nsshkey);
        }
    }
    if (c->errors != before) {
        mcg_policy_free(out);
        return MCG_EINVAL;
    }
    return 0;
}

static json_t *actions_json(const mcg_action *a, size_t n)
{
    static const char *const names[] = {"None",    "Reboot",       "Drain",  "Reload",
                                        "Restart", "DaemonReload", "Special"};
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_pack("{s:s}", "type", names[a[i].type]);
        if (a[i].type == MCG_ACT_RELOAD || a[i].type == MCG_ACT_RESTART)
            json_object_set_new(o, a[i].type == MCG_ACT_RELOAD ? "reload" : "restart",
                                json_pack("{s:s}", "serviceName", a[i].service));
        json_array_append_new(arr, o);
    }
    return arr;
}

static json_t *rules_json(const mcg_policy_rule *r, size_t n, const char *keyname)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_pack("{s:s,s:o}", keyname, r[i].key, "actions",
                                             actions_json(r[i].actions, r[i].nactions)));
    return arr;
}

json_t *mcg_policy_to_json(const mcg_disruption_policy *p)
{
    json_t *ndp = json_object();
    json_object_set_new(ndp, "files", rules_json(p->files, p->nfiles, "path"));
    json_object_set_new(ndp, "units", rules_json(p->units, p->nunits, "name"));
    if (p->has_sshkey)
        json_object_set_new(ndp, "sshkey",
                            json_pack("{s:o}", "actions", actions_json(p->sshkey, p->nsshkey)));
    return json_pack("{s:o}", "nodeDisruptionPolicy", ndp);
}

int mcg_policy_parse_json(mcg_disruption_policy *out, const char *what, const char *data,
                          size_t len, mcg_err *err)
{
    memset(out, 0, sizeof(*out));
    json_error_t je;
    json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return mcg_err_set(err, MCG_EINVAL, "%s:%d: invalid JSON: %s", what, je.line, je.text);
    mcg_diags d = {0};
    mcg_pctx c = {.file = what, .diags = &d};
    json_t *spec = json_is_object(root) && json_is_object(json_object_get(root, "spec"))
                       ? json_object_get(root, "spec")
                       : root;
    int rc = 0;
    if (mcg_policy_from_json(&c, spec, out) != 0)
        rc = mcg_err_set(err, MCG_EINVAL, "%s", d.count ? d.msgs[0] : what);
    mcg_diags_free(&d);
    json_decref(root);
    return rc;
}

static void parse_machineconfiguration(mcg_model *m, mcg_pctx *c, const json_t *root)
{
    char *name = parse_meta_name(c, root, "MachineConfiguration", false);
    if (!name)
        return;
    if (strcmp(name, "cluster") != 0) {
        mcg_pctx_err(c, root, "MachineConfiguration must be named 'cluster' (got '%s')", name);
        free(name);
        return;
    }
    free(name);
    if (m->policy.present) {
        mcg_pctx_err(c, root, "MachineConfiguration 'cluster' is defined twice");
        return;
    }
    json_t *spec = mcg_get_obj(c, root, "spec", "spec");
    if (!spec) {
        m->policy.present = true;
        return;
    }
    mcg_policy_from_json(c, spec, &m->policy);
}

/* ------------------------------------------------------------ settings */

bool mcg_model_branch_name_ok(const char *s)
{
    if (!*s || *s == '-' || *s == '/' || strstr(s, "..") || strstr(s, "//") ||
        s[strlen(s) - 1] == '/' || strlen(s) > 200)
        return false;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x21 || strchr("~^:?*[\\", *p))
            return false;
    return true;
}

static void parse_settings(mcg_model *m, mcg_pctx *c, const json_t *root)
{
    static const char *const keys[] = {
        "sourceBranch", "renderedBranch",           "apiGroup", "signatures",
        "warnings",     "maxConcurrentDisruptions", NULL};
    mcg_check_keys(c, root, "", keys);
    bool has = false;
    if (mcg_get_int(c, root, "maxConcurrentDisruptions", "maxConcurrentDisruptions", &has,
                    &m->settings.max_disruptions) &&
        has && m->settings.max_disruptions < 1)
        mcg_pctx_err(c, json_object_get(root, "maxConcurrentDisruptions"),
                     "maxConcurrentDisruptions must be at least 1 (leave it out for no limit)");
    char *src = NULL, *ren = NULL, *grp = NULL, *sig = NULL, *warn = NULL;
    mcg_get_str(c, root, "warnings", "warnings", &warn);
    if (warn && strcmp(warn, "error") && strcmp(warn, "warn"))
        mcg_pctx_err(c, json_object_get(root, "warnings"),
                     "warnings must be 'warn' (the default) or 'error'");
    m->settings.warnings_as_errors = warn && !strcmp(warn, "error");
    free(warn);
    mcg_get_str(c, root, "sourceBranch", "sourceBranch", &src);
    mcg_get_str(c, root, "renderedBranch", "renderedBranch", &ren);
    mcg_get_str(c, root, "apiGroup", "apiGroup", &grp);
    mcg_get_str(c, root, "signatures", "signatures", &sig);
    if (src && !mcg_model_branch_name_ok(src))
        mcg_pctx_err(c, json_object_get(root, "sourceBranch"), "'%s' is not a valid branch name",
                     src);
    else if (src) {
        free(m->settings.source_branch);
        m->settings.source_branch = src, src = NULL;
        m->settings.source_set = true;
    }
    if (ren && !mcg_model_branch_name_ok(ren))
        mcg_pctx_err(c, json_object_get(root, "renderedBranch"), "'%s' is not a valid branch name",
                     ren);
    else if (ren) {
        free(m->settings.rendered_branch);
        m->settings.rendered_branch = ren, ren = NULL;
        m->settings.rendered_set = true;
    }
    if (grp && strcmp(grp, "machineconfiguration.openshift.io") &&
        strcmp(grp, "machineconfiguration.mcgit.io"))
        mcg_pctx_err(c, json_object_get(root, "apiGroup"), "unknown apiGroup '%s'", grp);
    if (sig && strcmp(sig, "required"))
        mcg_pctx_err(c, json_object_get(root, "signatures"),
                     "signatures must be 'required' (mcgit never accepts unsigned commits)");
    if (m->settings.source_branch && m->settings.rendered_branch &&
        !strcmp(m->settings.source_branch, m->settings.rendered_branch))
        mcg_pctx_err(c, root, "sourceBranch and renderedBranch must differ");
    free(src);
    free(ren);
    free(grp);
    free(sig);
}

/* ------------------------------------------------------------ dispatch */

typedef enum { FILE_POOLS, FILE_MCS, FILE_SITES, FILE_SETTINGS, FILE_OTHER } file_kind;

static bool has_yaml_ext(const char *s)
{
    size_t n = strlen(s);
    return (n > 5 && !strcmp(s + n - 5, ".yaml")) || (n > 4 && !strcmp(s + n - 4, ".yml")) ||
           (n > 5 && !strcmp(s + n - 5, ".json"));
}

static file_kind classify(const char *rel)
{
    if (!strcmp(rel, "mcgit.yaml"))
        return FILE_SETTINGS;
    if (!strncmp(rel, "pools/", 6) && !strchr(rel + 6, '/') && has_yaml_ext(rel + 6))
        return FILE_POOLS;
    if (!strncmp(rel, "machineconfigs/", 15) && !strchr(rel + 15, '/') && has_yaml_ext(rel + 15))
        return FILE_MCS;
    if (!strncmp(rel, "sites/", 6) && !strchr(rel + 6, '/') && has_yaml_ext(rel + 6))
        return FILE_SITES;
    return FILE_OTHER;
}

bool mcg_model_wants_file(const char *relpath)
{
    return classify(relpath) != FILE_OTHER;
}

typedef struct addctx {
    mcg_model *m;
    const char *file;
    file_kind kind;
    mcg_diags *diags;
} addctx;

static void add_doc(json_t *root, mcg_linemap *lines, void *arg)
{
    addctx *a = arg;
    mcg_pctx c = {.file = a->file,
                  .lines = lines,
                  .base_line = 1,
                  .diags = a->diags,
                  .warns = &a->m->warnings};
    if (json_is_null(root))
        return;
    if (!json_is_object(root)) {
        mcg_pctx_err(&c, root, "document must be a mapping");
        return;
    }
    if (a->kind == FILE_SETTINGS) {
        parse_settings(a->m, &c, root);
        return;
    }
    if (a->kind == FILE_SITES) {
        mcg_parse_site(a->m, &c, root);
        return;
    }
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
    char *api = NULL, *kind = NULL;
    mcg_get_str(&c, root, "apiVersion", "apiVersion", &api);
    mcg_get_str(&c, root, "kind", "kind", &kind);
    if (!kind)
        mcg_pctx_err(&c, root, "document has no kind");
    else if (!api)
        mcg_pctx_err(&c, root, "document has no apiVersion");
    else {
        bool is_mcfg = !strcmp(kind, "MachineConfiguration");
        bool api_ok = !strcmp(api, MCG_API_OPENSHIFT) || !strcmp(api, MCG_API_MCGIT) ||
                      (is_mcfg && !strcmp(api, "operator.openshift.io/v1"));
        if (!api_ok)
            mcg_pctx_err(&c, json_object_get(root, "apiVersion"),
                         "apiVersion '%s' is not supported (use %s or %s)", api, MCG_API_OPENSHIFT,
                         MCG_API_MCGIT);
        else if (a->kind == FILE_POOLS && strcmp(kind, "MachineConfigPool") != 0)
            mcg_pctx_err(&c, json_object_get(root, "kind"),
                         "kind '%s' does not belong in pools/ (MachineConfigPool only)", kind);
        else if (a->kind == FILE_MCS && strcmp(kind, "MachineConfig") != 0 && !is_mcfg)
            mcg_pctx_err(&c, json_object_get(root, "kind"),
                         "kind '%s' does not belong in machineconfigs/ (MachineConfig or "
                         "MachineConfiguration)",
                         kind);
        else {
            mcg_check_keys(&c, root, "", top);
            if (a->kind == FILE_POOLS)
                parse_pool(a->m, &c, root);
            else if (is_mcfg)
                parse_machineconfiguration(a->m, &c, root);
            else
                parse_mc(a->m, &c, root);
        }
    }
    free(api);
    free(kind);
}

void mcg_model_add_file(mcg_model *m, const char *relpath, const char *data, size_t len,
                        mcg_diags *diags)
{
    file_kind k = classify(relpath);
    if (k == FILE_OTHER)
        return;
    mcg_strv_push(&m->files, relpath);
    addctx a = {m, m->files.v[m->files.n - 1], k, diags};
    if (memchr(data, '\0', len)) {
        mcg_diags_add(diags, "%s: file contains a NUL byte", relpath);
        return;
    }
    size_t before = diags->count;
    mcg_yaml_each_doc(a.file, data, len, 0, diags, add_doc, &a);
    if (k == FILE_POOLS && diags->count != before)
        m->pools_refused = true; /* a pool may be missing because of it */
}

/* Equal names (an error reported below) fall back to file and line, so the
 * report does not depend on qsort's handling of ties. */
static int loc_cmp(const mcg_loc *a, const mcg_loc *b)
{
    int r = strcmp(a->file, b->file);
    return r ? r : (a->line > b->line) - (a->line < b->line);
}

static int pool_cmp(const void *a, const void *b)
{
    const mcg_pool *x = a, *y = b;
    int r = strcmp(x->name, y->name);
    return r ? r : loc_cmp(&x->loc, &y->loc);
}

static int mc_cmp(const void *a, const void *b)
{
    const mcg_machineconfig *x = a, *y = b;
    int r = strcmp(x->name, y->name);
    return r ? r : loc_cmp(&x->loc, &y->loc);
}

void mcg_model_finish(mcg_model *m, mcg_diags *diags)
{
    if (m->npools > 1)
        qsort(m->pools, m->npools, sizeof(*m->pools), pool_cmp);
    if (m->nmcs > 1)
        qsort(m->mcs, m->nmcs, sizeof(*m->mcs), mc_cmp);
    for (size_t i = 1; i < m->npools; i++)
        if (!strcmp(m->pools[i].name, m->pools[i - 1].name))
            mcg_diags_add(diags, "%s:%d: pool '%s' is already defined at %s:%d",
                          m->pools[i].loc.file, m->pools[i].loc.line, m->pools[i].name,
                          m->pools[i - 1].loc.file, m->pools[i - 1].loc.line);
    for (size_t i = 1; i < m->nmcs; i++)
        if (!strcmp(m->mcs[i].name, m->mcs[i - 1].name))
            mcg_diags_add(diags, "%s:%d: MachineConfig '%s' is already defined at %s:%d",
                          m->mcs[i].loc.file, m->mcs[i].loc.line, m->mcs[i].name,
                          m->mcs[i - 1].loc.file, m->mcs[i - 1].loc.line);
    mcg_model_finish_sites(m, diags);
    /* An MC no pool selects reaches no node: legal (MCO), but rarely meant. */
    for (size_t i = 0; m->npools && !m->pools_refused && i < m->nmcs; i++) {
        bool selected = false;
        for (size_t j = 0; j < m->npools && !selected; j++)
            selected = !mcg_selector_is_empty(&m->pools[j].mc_selector) &&
                       mcg_selector_matches(&m->pools[j].mc_selector, &m->mcs[i].labels);
        if (!selected)
            mcg_diags_add(&m->warnings,
                          "%s:%d: MachineConfig '%s' is selected by no pool's "
                          "machineConfigSelector (no node gets it)",
                          m->mcs[i].loc.file, m->mcs[i].loc.line, m->mcs[i].name);
    }
    if (m->settings.warnings_as_errors)
        for (size_t i = 0; i < m->warnings.count; i++)
            mcg_diags_add(diags, "%s (mcgit.yaml: warnings: error)", m->warnings.msgs[i]);
    if (!mcg_model_pool(m, "worker") && m->npools && !m->pools_refused)
        mcg_diags_add(diags, "pools/: there is no pool 'worker' (custom pools inherit from it)");
    mcg_diags_sort(&m->warnings);
    mcg_diags_sort(diags);
}

const mcg_pool *mcg_model_pool(const mcg_model *m, const char *name)
{
    for (size_t i = 0; i < m->npools; i++)
        if (!strcmp(m->pools[i].name, name))
            return &m->pools[i];
    return NULL;
}
