/*
 * node.c — the node record: clearing, and its Kubernetes Node JSON shape
 * (what the local backend stores and the kube backend reads and writes),
 * with the RFC 3339 times it carries.
 *
 * Labels of a Node object are gathered unsorted and sorted once
 * (mcg_labels_add + mcg_labels_finish), so a node with very many labels
 * costs O(n log n), not a sorted insert per label.
 */
#include "cluster/cluster_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    free(n->failed_check);
    free(n->failed_config);
    free(n->machine_id);
    free(n->boot_id);
    free(n->system_uuid);
    free(n->bound_machine_id);
    free(n->node_key);
    free(n->attestation);
    memset(n, 0, sizeof(*n));
}

void mcg_nodes_free(mcg_node *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mcg_node_clear(&nodes[i]);
    free(nodes);
}

char *mcg_node_failure_value(const char *check, const char *config)
{
    if (!check)
        return NULL;
    if (!*check)
        return mcg_strdup("");
    json_t *o = json_pack("{s:s,s:s}", "check", check, "config", config ? config : "");
    char *s = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(o);
    return s;
}

/* The failed check of annotation value v (JSON {check, config}), when it is one. */
static void read_failure(mcg_node *n, const char *v)
{
    json_t *o = v ? json_loads(v, 0, NULL) : NULL;
    const char *check = json_string_value(json_object_get(o, "check"));
    const char *config = json_string_value(json_object_get(o, "config"));
    if (check && *check && config) {
        n->failed_check = mcg_strdup(check);
        n->failed_config = mcg_strdup(config);
    }
    json_decref(o);
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
    if (n->bound_machine_id)
        json_object_set_new(ann, MCG_ANN_MACHINE_ID, json_string(n->bound_machine_id));
    if (n->node_key)
        json_object_set_new(ann, MCG_ANN_NODE_KEY, json_string(n->node_key));
    if (n->attestation)
        json_object_set_new(ann, MCG_ANN_ATTESTATION, json_string(n->attestation));
    char *failure = mcg_node_failure_value(n->failed_check, n->failed_config);
    if (failure && *failure)
        json_object_set_new(ann, MCG_ANN_HEALTH_FAILURE, json_string(failure));
    free(failure);
    char ts[32];
    mcg_time_iso(ts, n->created);
    json_t *o =
        json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:o},s:{s:b},s:{s:[{s:s,s:s}]}}", "apiVersion", "v1",
                  "kind", "Node", "metadata", "name", n->name, "creationTimestamp", ts, "labels",
                  labels, "annotations", ann, "spec", "unschedulable", n->unschedulable, "status",
                  "conditions", "type", "Ready", "status", n->ready ? "True" : "False");
    json_t *info = json_object();
    if (n->machine_id)
        json_object_set_new(info, "machineID", json_string(n->machine_id));
    if (n->boot_id)
        json_object_set_new(info, "bootID", json_string(n->boot_id));
    if (n->system_uuid)
        json_object_set_new(info, "systemUUID", json_string(n->system_uuid));
    if (json_object_size(info))
        json_object_set_new(json_object_get(o, "status"), "nodeInfo", info);
    else
        json_decref(info);
    return o;
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
    json_object_foreach(json_object_get(md, "labels"), k, v) {
        if (json_is_string(v))
            mcg_labels_add(&n->labels, k, json_string_value(v));
    }
    mcg_labels_finish(&n->labels);
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
    ANN(bound_machine_id, MCG_ANN_MACHINE_ID);
    ANN(node_key, MCG_ANN_NODE_KEY);
    ANN(attestation, MCG_ANN_ATTESTATION);
#undef ANN
    read_failure(n, json_string_value(json_object_get(ann, MCG_ANN_HEALTH_FAILURE)));
    json_t *info = json_object_get(json_object_get(o, "status"), "nodeInfo");
#define INFO(field, key)                                                                           \
    do {                                                                                           \
        json_t *a = json_object_get(info, key);                                                    \
        if (json_is_string(a) && *json_string_value(a))                                            \
            n->field = mcg_strdup(json_string_value(a));                                           \
    } while (0)
    INFO(machine_id, "machineID");
    INFO(boot_id, "bootID");
    INFO(system_uuid, "systemUUID");
#undef INFO
    json_t *ts = json_object_get(md, "creationTimestamp");
    if (json_is_string(ts))
        mcg_time_parse(json_string_value(ts), &n->created);
    n->unschedulable = json_is_true(json_object_get(json_object_get(o, "spec"), "unschedulable"));
    size_t i;
    json_t *cond;
    json_array_foreach(json_object_get(json_object_get(o, "status"), "conditions"), i, cond) {
        json_t *t = json_object_get(cond, "type"), *s = json_object_get(cond, "status");
        if (json_is_string(t) && !strcmp(json_string_value(t), "Ready"))
            n->ready = json_is_string(s) && !strcmp(json_string_value(s), "True");
    }
    return 0;
}
