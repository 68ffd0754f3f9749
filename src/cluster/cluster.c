/*
 * cluster.c — backend selection, shared node helpers and wrappers.
 */
#include "cluster/cluster.h"
#include "cluster/cluster_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int mcg_cluster_open(mcg_cluster **out, const char *spec, mcg_err *err)
{
    *out = NULL;
    if (!strncmp(spec, "local:", 6) && spec[6])
        return mcg_cluster_local_open(out, spec, spec + 6, err);
    if (!strcmp(spec, "kube"))
        return mcg_cluster_kube_open(out, spec, NULL, err);
    if (!strncmp(spec, "kube:", 5))
        return mcg_cluster_kube_open(out, spec, spec + 5, err);
    return mcg_err_set(err, MCG_EINVAL,
                       "cluster '%s': expected local:DIR, kube or kube:KUBECONFIG", spec);
}

void mcg_cluster_free(mcg_cluster *c)
{
    if (c)
        c->ops->free(c);
}

void mcg_node_clear(mcg_node *n)
{
    if (!n)
        return;
    free(n->name);
    mcg_labels_free(&n->labels);
    free(n->desired);
    free(n->current);
    free(n->state);
    free(n->reason);
    memset(n, 0, sizeof(*n));
}

void mcg_nodes_free(mcg_node *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mcg_node_clear(&nodes[i]);
    free(nodes);
}

int mcg_cluster_list_nodes(mcg_cluster *c, mcg_node **out, size_t *n, mcg_err *err)
{
    return c->ops->list_nodes(c, out, n, err);
}

int mcg_cluster_get_node(mcg_cluster *c, const char *name, mcg_node *out, mcg_err *err)
{
    return c->ops->get_node(c, name, out, err);
}

int mcg_cluster_patch_node(mcg_cluster *c, const char *name, const mcg_node_patch *p,
                           mcg_err *err)
{
    return c->ops->patch_node(c, name, p, err);
}

int mcg_cluster_get_config(mcg_cluster *c, const char *name, char **spec, size_t *len,
                           mcg_err *err)
{
    return c->ops->get_config(c, name, spec, len, err);
}

int mcg_cluster_get_policy(mcg_cluster *c, mcg_disruption_policy *out, mcg_err *err)
{
    memset(out, 0, sizeof(*out));
    json_t *spec = NULL;
    int rc = c->ops->get_policy(c, &spec, err);
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

int mcg_cluster_lead(mcg_cluster *c, const char *identity, bool *leader, mcg_err *err)
{
    if (c->ops->lead)
        return c->ops->lead(c, identity, leader, err);
    *leader = true;
    return 0;
}

int mcg_cluster_patch_nodes(mcg_cluster *c, const char *const *names,
                            const mcg_node_patch *patches, size_t n, int *rcs, mcg_err *err)
{
    if (c->ops->patch_nodes)
        return c->ops->patch_nodes(c, names, patches, n, rcs, err);
    for (size_t i = 0; i < n; i++) {
        mcg_err e = {0};
        rcs[i] = c->ops->patch_node(c, names[i], &patches[i], &e);
        if (rcs[i] && rcs[i] != MCG_ECONFLICT && rcs[i] != MCG_ENOTFOUND)
            return mcg_err_set(err, rcs[i], "%s", e.msg);
    }
    return 0;
}

bool mcg_cluster_watches(const mcg_cluster *c)
{
    return c->ops->wait_change != NULL;
}

int mcg_cluster_wait_change(mcg_cluster *c, const char *node, long timeout_ms, mcg_err *err)
{
    if (c->ops->wait_change)
        return c->ops->wait_change(c, node, timeout_ms, err);
    /* no change notifications: sleep, in slices so a stop request ends it */
    struct timespec end, now;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += timeout_ms / 1000;
    end.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (end.tv_nsec >= 1000000000L) {
        end.tv_sec++;
        end.tv_nsec -= 1000000000L;
    }
    for (;;) {
        if (c->stop && *c->stop)
            return 0;
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t left = (int64_t)(end.tv_sec - now.tv_sec) * 1000 +
                       (end.tv_nsec - now.tv_nsec) / 1000000;
        if (left <= 0)
            return 0;
        struct timespec ts = {0, (long)(left > 200 ? 200 : left) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

void mcg_time_format(int64_t t, char out[32])
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

bool mcg_time_parse(const char *s, int64_t *out)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (!end || *end)
        return false;
    *out = (int64_t)timegm(&tm);
    return true;
}

json_t *mcg_node_to_json(const mcg_node *n)
{
    json_t *labels = json_object(), *ann = json_object();
    for (size_t i = 0; i < n->labels.n; i++)
        json_object_set_new(labels, n->labels.items[i].key, json_string(n->labels.items[i].value));
    if (n->desired)
        json_object_set_new(ann, MCG_ANN_DESIRED, json_string(n->desired));
    if (n->current)
        json_object_set_new(ann, MCG_ANN_CURRENT, json_string(n->current));
    if (n->state)
        json_object_set_new(ann, MCG_ANN_STATE, json_string(n->state));
    if (n->reason)
        json_object_set_new(ann, MCG_ANN_REASON, json_string(n->reason));
    char ts[32];
    mcg_time_format(n->created, ts);
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:o},s:{s:b},s:{s:[{s:s,s:s}]}}", "apiVersion", "v1",
                     "kind", "Node", "metadata", "name", n->name, "creationTimestamp", ts,
                     "labels", labels, "annotations", ann, "spec", "unschedulable",
                     n->unschedulable, "status", "conditions", "type", "Ready", "status",
                     n->ready ? "True" : "False");
}

int mcg_node_from_json(mcg_node *n, const json_t *o, mcg_err *err)
{
    memset(n, 0, sizeof(*n));
    json_t *md = json_object_get(o, "metadata");
    json_t *name = json_object_get(md, "name");
    if (!json_is_string(name))
        return mcg_err_set(err, MCG_EINVAL, "node object has no metadata.name");
    n->name = mcg_strdup(json_string_value(name));
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(md, "labels"), k, v)
    {
        if (json_is_string(v))
            mcg_labels_set(&n->labels, k, json_string_value(v));
    }
    json_t *ann = json_object_get(md, "annotations");
#define ANN(field, key)                                                                            \
    do {                                                                                           \
        json_t *a = json_object_get(ann, key);                                                     \
        if (json_is_string(a))                                                                     \
            n->field = mcg_strdup(json_string_value(a));                                           \
    } while (0)
    ANN(desired, MCG_ANN_DESIRED);
    ANN(current, MCG_ANN_CURRENT);
    ANN(state, MCG_ANN_STATE);
    ANN(reason, MCG_ANN_REASON);
#undef ANN
    json_t *ts = json_object_get(md, "creationTimestamp");
    if (json_is_string(ts))
        mcg_time_parse(json_string_value(ts), &n->created);
    n->unschedulable = json_is_true(json_object_get(json_object_get(o, "spec"), "unschedulable"));
    size_t i;
    json_t *cond;
    json_array_foreach(json_object_get(json_object_get(o, "status"), "conditions"), i, cond)
    {
        json_t *t = json_object_get(cond, "type"), *s = json_object_get(cond, "status");
        if (json_is_string(t) && !strcmp(json_string_value(t), "Ready"))
            n->ready = json_is_string(s) && !strcmp(json_string_value(s), "True");
    }
    return 0;
}
