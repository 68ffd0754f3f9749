/*
 * cluster.c — the cluster interface: backend selection and the mcg_cluster_*
 * wrappers, the only way into a backend's private ops table.
 *
 * What every backend would otherwise repeat happens here once, in this
 * order: a NULL error record is replaced by a scratch one (so backends may
 * read err->code), out-parameters are initialised, write ops are fenced
 * (ops->fence: the kube backend's leader lease), and names are checked
 * against the rules Kubernetes itself applies. Only then is the backend
 * called. Optional ops (fence, lead, wait_change, patch_nodes) get their
 * defaults here too.
 */
#include "cluster/cluster_int.h"
#include "osenv/osenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A caller's NULL error record becomes this scratch one. */
#define ERR_OR_SCRATCH(err, scratch) ((err) ? (err) : ((scratch) = (mcg_err){0}, &(scratch)))

int mcg_cluster_open(mcg_cluster **out, const char *spec, mcg_err *err)
{
    *out = NULL;
    if (!strncmp(spec, "local:", 6) && spec[6])
        return mcg_cluster_local_open(out, spec, spec + 6, err);
    if (!strcmp(spec, "kube"))
        return mcg_cluster_kube_open(out, spec, NULL, err);
    if (!strncmp(spec, "kube:", 5))
        return mcg_cluster_kube_open(out, spec, spec + 5, err);
    return mcg_err_set(err, MCG_EINVAL, "cluster '%s': expected local:DIR, kube or kube:KUBECONFIG",
                       spec);
}

void mcg_cluster_free(mcg_cluster *c)
{
    if (c)
        c->ops->free(c);
}

const char *mcg_cluster_spec(const mcg_cluster *c)
{
    return c->spec;
}

void mcg_cluster_set_stop(mcg_cluster *c, volatile sig_atomic_t *stop)
{
    c->stop = stop;
}

char *mcg_cluster_config_pool(const char *name)
{
    size_t pre = strlen("rendered-");
    const char *dash = strrchr(name, '-');
    if (strncmp(name, "rendered-", pre) != 0 || !dash || dash <= name + pre)
        return NULL;
    return mcg_strndup(name + pre, (size_t)(dash - name) - pre);
}

bool mcg_cluster_config_name_ok(const char *name)
{
    return !strncmp(name, "rendered-", 9) && mcg_name_is_dns_subdomain(name);
}

/* ------------------------------------------------------------ checks */

/* 0 when name is a valid node name, else MCG_EINVAL with the name. */
static int check_node(const char *name, mcg_err *err)
{
    if (name && mcg_name_is_dns_subdomain(name))
        return 0;
    return mcg_err_set(err, MCG_EINVAL, "invalid node name '%s'", name ? name : "");
}

/* 0 when name is a valid rendered config name ("rendered-" + subdomain). */
static int check_config(const char *name, mcg_err *err)
{
    if (name && mcg_cluster_config_name_ok(name))
        return 0;
    return mcg_err_set(err, MCG_EINVAL, "invalid rendered config name '%s'", name ? name : "");
}

/* 0 when name is a valid pool name (DNS label). */
static int check_pool(const char *name, mcg_err *err)
{
    if (name && mcg_name_is_dns_label(name))
        return 0;
    return mcg_err_set(err, MCG_EINVAL, "invalid pool name '%s'", name ? name : "");
}

/* May this handle write now (the backend's fence, if it has one)? */
static int fence(mcg_cluster *c, mcg_err *err)
{
    return c->ops->fence ? c->ops->fence(c, err) : 0;
}

/* ------------------------------------------------------------- reads */

int mcg_cluster_list_nodes(mcg_cluster *c, mcg_node **out, size_t *n, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    *out = NULL;
    *n = 0;
    return c->ops->list_nodes(c, out, n, err);
}

int mcg_cluster_get_node(mcg_cluster *c, const char *name, mcg_node *out, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    memset(out, 0, sizeof(*out));
    int rc = check_node(name, err);
    return rc ? rc : c->ops->get_node(c, name, out, err);
}

int mcg_cluster_get_config(mcg_cluster *c, const char *name, char **spec, size_t *len, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    *spec = NULL;
    *len = 0;
    int rc = check_config(name, err);
    return rc ? rc : c->ops->get_config(c, name, spec, len, err);
}

int mcg_cluster_list_configs(mcg_cluster *c, mcg_strv *names, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    return c->ops->list_configs(c, names, err);
}

int mcg_cluster_list_pools(mcg_cluster *c, json_t **items, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    *items = NULL;
    int rc = c->ops->list_pools(c, items, err);
    if (rc) {
        json_decref(*items);
        *items = NULL;
    }
    return rc;
}

int mcg_cluster_get_policy_json(mcg_cluster *c, json_t **spec, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    *spec = NULL;
    return c->ops->get_policy(c, spec, err);
}

int mcg_cluster_get_policy(mcg_cluster *c, mcg_disruption_policy *out, mcg_err *err)
{
    memset(out, 0, sizeof(*out));
    json_t *spec = NULL;
    int rc = mcg_cluster_get_policy_json(c, &spec, err);
    if (rc == MCG_ENOTFOUND)
        return 0; /* no policy: defaults */
    if (rc)
        return rc;
    char *s = json_dumps(spec, JSON_COMPACT);
    json_decref(spec);
    rc = mcg_policy_parse_json(out, "MachineConfiguration/cluster", s, strlen(s), err);
    free(s);
    return rc;
}

char *mcg_cluster_node_root(mcg_cluster *c, const char *name)
{
    if (check_node(name, NULL) != 0)
        return NULL;
    return c->ops->node_root(c, name);
}

/* ------------------------------------------------------------ writes */

/* One node patch: fenced, name checked. */
static int patch_one(mcg_cluster *c, const char *name, const mcg_node_patch *p, mcg_err *err)
{
    int rc;
    if ((rc = fence(c, err)) != 0 || (rc = check_node(name, err)) != 0)
        return rc;
    return c->ops->patch_node(c, name, p, err);
}

int mcg_cluster_patch_node(mcg_cluster *c, const char *name, const mcg_node_patch *p, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    return patch_one(c, name, p, err);
}

/*
 * A backend's batch gets the valid names only (a bad name is that node's
 * MCG_EINVAL, as in the one-by-one path); without a batch op every patch is
 * fenced on its own, so a long batch renews the lease on the way.
 */
int mcg_cluster_patch_nodes(mcg_cluster *c, const char *const *names, const mcg_node_patch *patches,
                            size_t n, int *rcs, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    int rc = 0;
    if (!c->ops->patch_nodes) {
        for (size_t i = 0; i < n && !rc; i++) {
            mcg_err e = {0};
            if ((rcs[i] = check_node(names[i], NULL)) != 0)
                continue;
            rcs[i] = patch_one(c, names[i], &patches[i], &e);
            if (rcs[i] && rcs[i] != MCG_ECONFLICT && rcs[i] != MCG_ENOTFOUND)
                rc = mcg_err_set(err, rcs[i], "%s", e.msg);
        }
        return rc;
    }
    if ((rc = fence(c, err)) != 0)
        return rc;
    const char **vn = mcg_calloc(n ? n : 1, sizeof(*vn));
    mcg_node_patch *vp = mcg_calloc(n ? n : 1, sizeof(*vp));
    int *vr = mcg_calloc(n ? n : 1, sizeof(*vr));
    size_t *at = mcg_calloc(n ? n : 1, sizeof(*at));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        rcs[i] = check_node(names[i], NULL);
        if (rcs[i])
            continue;
        vn[k] = names[i];
        vp[k] = patches[i];
        at[k++] = i;
    }
    if (k)
        rc = c->ops->patch_nodes(c, vn, vp, k, vr, err);
    for (size_t j = 0; j < k; j++)
        rcs[at[j]] = vr[j];
    free(vn);
    free(vp);
    free(vr);
    free(at);
    return rc;
}

int mcg_cluster_add_node(mcg_cluster *c, const char *name, const mcg_labels *labels, int64_t now,
                         mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    static const mcg_labels none = {0};
    int rc = fence(c, err);
    if (rc)
        return rc;
    if (!name || !mcg_name_is_dns_subdomain(name))
        return mcg_err_set(err, MCG_EINVAL, "invalid node name '%s' (DNS-1123 subdomain)",
                           name ? name : "");
    return c->ops->add_node(c, name, labels ? labels : &none, now, err);
}

int mcg_cluster_remove_node(mcg_cluster *c, const char *name, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    int rc;
    if ((rc = fence(c, err)) != 0 || (rc = check_node(name, err)) != 0)
        return rc;
    return c->ops->remove_node(c, name, err);
}

int mcg_cluster_label_node(mcg_cluster *c, const char *name, const char *edits, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    int rc;
    if ((rc = fence(c, err)) != 0 || (rc = check_node(name, err)) != 0)
        return rc;
    return c->ops->label_node(c, name, edits ? edits : "", err);
}

int mcg_cluster_drain(mcg_cluster *c, const char *name, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    int rc = check_node(name, err);
    return rc ? rc : c->ops->drain(c, name, err);
}

int mcg_cluster_put_config(mcg_cluster *c, const char *name, const char *spec, size_t len,
                           mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    int rc;
    if ((rc = fence(c, err)) != 0 || (rc = check_config(name, err)) != 0)
        return rc;
    return c->ops->put_config(c, name, spec, len, err);
}

int mcg_cluster_delete_config(mcg_cluster *c, const char *name, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    int rc;
    if ((rc = fence(c, err)) != 0 || (rc = check_config(name, err)) != 0)
        return rc;
    return c->ops->delete_config(c, name, err);
}

int mcg_cluster_put_pool(mcg_cluster *c, const char *name, const json_t *obj, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    int rc;
    if ((rc = fence(c, err)) != 0 || (rc = check_pool(name, err)) != 0)
        return rc;
    return c->ops->put_pool(c, name, obj, err);
}

int mcg_cluster_delete_pool(mcg_cluster *c, const char *name, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    int rc;
    if ((rc = fence(c, err)) != 0 || (rc = check_pool(name, err)) != 0)
        return rc;
    return c->ops->delete_pool(c, name, err);
}

int mcg_cluster_put_policy(mcg_cluster *c, const json_t *spec, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    int rc = fence(c, err);
    return rc ? rc : c->ops->put_policy(c, spec, err);
}

/* ------------------------------------------------ leadership, watches */

int mcg_cluster_lead(mcg_cluster *c, const char *identity, bool *leader, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    *leader = false;
    if (c->ops->lead)
        return c->ops->lead(c, identity, leader, err);
    *leader = true;
    return 0;
}

bool mcg_cluster_watches(const mcg_cluster *c)
{
    return c->ops->wait_change != NULL;
}

/* No change notifications: sleep, in slices so a stop request ends it. */
static void sleep_ms(mcg_cluster *c, long timeout_ms)
{
    struct timespec end, now;
    mcg_mono_now(&end);
    end.tv_sec += timeout_ms / 1000;
    end.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (end.tv_nsec >= 1000000000L) {
        end.tv_sec++;
        end.tv_nsec -= 1000000000L;
    }
    for (;;) {
        if (c->stop && *c->stop)
            return;
        mcg_mono_now(&now);
        int64_t left =
            (int64_t)(end.tv_sec - now.tv_sec) * 1000 + (end.tv_nsec - now.tv_nsec) / 1000000;
        if (left <= 0)
            return;
        struct timespec ts = {0, (long)(left > 200 ? 200 : left) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

int mcg_cluster_wait_change(mcg_cluster *c, const char *node, long timeout_ms, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    if (node) {
        int rc = check_node(node, err);
        if (rc)
            return rc;
    }
    if (c->ops->wait_change)
        return c->ops->wait_change(c, node, timeout_ms, err);
    sleep_ms(c, timeout_ms);
    return 0;
}

/* ------------------------------------------------------------- events */

int mcg_cluster_event(mcg_cluster *c, const mcg_event *ev, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    int rc = ev->pool ? check_pool(ev->name, err) : check_node(ev->name, err);
    if (rc)
        return rc;
    if (!ev->reason || !*ev->reason || !ev->message || !ev->component)
        return mcg_err_set(err, MCG_EINVAL, "event about %s: reason, message and component needed",
                           ev->name);
    if (!c->ops->event)
        return 0;
    if ((rc = fence(c, err)) != 0)
        return rc;
    return c->ops->event(c, ev, err);
}

/* ------------------------------------------------- operator requests */

/* MCG_EINVAL for a backend without operator requests. */
static int unsupported(mcg_cluster *c, const char *what, mcg_err *err)
{
    return mcg_err_set(err, MCG_EINVAL, "cluster %s: %s is not supported by this backend", c->spec,
                       what);
}

int mcg_cluster_pause_pool(mcg_cluster *c, const char *pool, bool pause, bool *changed,
                           bool *git_paused, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    bool gp = false;
    *changed = false;
    if (git_paused)
        *git_paused = false;
    int rc;
    if ((rc = fence(c, err)) != 0 || (rc = check_pool(pool, err)) != 0)
        return rc;
    if (!c->ops->pause_pool)
        return unsupported(c, "pausing a pool", err);
    rc = c->ops->pause_pool(c, pool, pause, changed, &gp, err);
    if (git_paused)
        *git_paused = gp;
    return rc;
}

int mcg_cluster_annotate_pool(mcg_cluster *c, const char *pool, const char *key, const char *value,
                              mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    int rc;
    if ((rc = fence(c, err)) != 0 || (rc = check_pool(pool, err)) != 0)
        return rc;
    if (!c->ops->annotate_pool)
        return unsupported(c, "annotating a pool", err);
    return c->ops->annotate_pool(c, pool, key, value, err);
}

bool mcg_pool_object_halt_pending(const json_t *pool)
{
    const char *since = json_string_value(
        json_object_get(json_object_get(json_object_get(pool, "status"), "rolloutHalt"), "since"));
    const char *resumed = json_string_value(json_object_get(
        json_object_get(json_object_get(pool, "metadata"), "annotations"), MCG_ANN_RESUMED));
    return since && !(resumed && strcmp(resumed, since) >= 0);
}

bool mcg_pool_object_operator_paused(const json_t *pool)
{
    json_t *ann = json_object_get(json_object_get(pool, "metadata"), "annotations");
    json_t *v = json_object_get(ann, MCG_ANN_PAUSED);
    return json_is_true(json_object_get(json_object_get(pool, "spec"), "paused")) ||
           (json_is_string(v) && !strcmp(json_string_value(v), "true"));
}

bool mcg_pool_object_git_paused(const json_t *pool)
{
    return json_is_true(json_object_get(json_object_get(pool, "status"), MCG_POOL_PAUSED_IN_GIT));
}

int mcg_cluster_get_sync(mcg_cluster *c, mcg_sync_state *out, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    memset(out, 0, sizeof(*out));
    if (!c->ops->get_sync)
        return unsupported(c, "sync", err);
    return c->ops->get_sync(c, out, err);
}

int mcg_cluster_request_sync(mcg_cluster *c, uint64_t *gen, mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    *gen = 0;
    int rc = fence(c, err);
    if (rc)
        return rc;
    if (!c->ops->request_sync)
        return unsupported(c, "sync", err);
    return c->ops->request_sync(c, gen, err);
}

int mcg_cluster_answer_sync(mcg_cluster *c, uint64_t gen, bool failed, const char *result,
                            mcg_err *err)
{
    mcg_err scratch;
    err = ERR_OR_SCRATCH(err, scratch);
    int rc = fence(c, err);
    if (rc)
        return rc;
    if (!c->ops->answer_sync)
        return unsupported(c, "sync", err);
    /* one printable line, bounded like every result */
    char line[sizeof(((mcg_sync_state *)0)->result)];
    mcg_bfmt(line, sizeof(line), "%s", result ? result : "");
    for (char *p = line; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    return c->ops->answer_sync(c, gen, failed, line, err);
}
