/*
 * cluster_int.h — shared inside cluster/ (and by test doubles): the private
 * backend table, the handle every backend embeds, backend constructors and
 * the node JSON reader.
 *
 * A backend fills a mcg_cluster_ops table and embeds struct mcg_cluster as
 * the first member of its own handle. The wrappers in cluster.c call it
 * with these guarantees, so a backend checks none of them again:
 *   - err is never NULL (a scratch record stands in for a caller's NULL);
 *   - names are valid: node names DNS-1123 subdomains, rendered config
 *     names "rendered-" + a subdomain, pool names DNS labels;
 *   - out-parameters are initialised (NULL, 0, an empty node) before the
 *     op runs;
 *   - every write op runs only after fence() (when the backend has one)
 *     returned 0.
 * Ops return 0 or a negative MCG_E* code with err set.
 */
#ifndef MCG_CLUSTER_INT_H
#define MCG_CLUSTER_INT_H

#include "cluster/cluster.h"

typedef struct mcg_cluster_ops {
    /* reads */
    int (*list_nodes)(mcg_cluster *c, mcg_node **out, size_t *n, mcg_err *err);
    int (*get_node)(mcg_cluster *c, const char *name, mcg_node *out, mcg_err *err);
    int (*get_config)(mcg_cluster *c, const char *name, char **spec, size_t *len, mcg_err *err);
    int (*list_configs)(mcg_cluster *c, mcg_strv *names, mcg_err *err);
    int (*list_pools)(mcg_cluster *c, json_t **items, mcg_err *err); /* JSON array, sorted */
    int (*get_policy)(mcg_cluster *c, json_t **spec, mcg_err *err);  /* ENOTFOUND: none */
    char *(*node_root)(mcg_cluster *c, const char *name);
    /* writes (fenced) */
    int (*patch_node)(mcg_cluster *c, const char *name, const mcg_node_patch *p, mcg_err *err);
    int (*add_node)(mcg_cluster *c, const char *name, const mcg_labels *labels, int64_t now,
                    mcg_err *err);
    int (*remove_node)(mcg_cluster *c, const char *name, mcg_err *err);
    int (*label_node)(mcg_cluster *c, const char *name, const char *edits, mcg_err *err);
    int (*put_config)(mcg_cluster *c, const char *name, const char *spec, size_t len, mcg_err *err);
    int (*delete_config)(mcg_cluster *c, const char *name, mcg_err *err);
    int (*put_pool)(mcg_cluster *c, const char *name, const json_t *obj, mcg_err *err);
    int (*delete_pool)(mcg_cluster *c, const char *name, mcg_err *err);
    int (*put_policy)(mcg_cluster *c, const json_t *spec, mcg_err *err);
    /* an action on the node itself, run by its agent (not fenced) */
    int (*drain)(mcg_cluster *c, const char *name, mcg_err *err);
    void (*free)(mcg_cluster *c);

    /* Optional (NULL): the wrappers supply the default. */

    /* May this handle write now? MCG_ECONFLICT with the reason when not.
     * Default: always. */
    int (*fence)(mcg_cluster *c, mcg_err *err);
    /* mcg_cluster_lead; default: always the leader. */
    int (*lead)(mcg_cluster *c, const char *identity, bool *leader, mcg_err *err);
    /* mcg_cluster_wait_change; default: a sleep. */
    int (*wait_change)(mcg_cluster *c, const char *node, long timeout_ms, mcg_err *err);
    /* Operator requests (see cluster.h); NULL: MCG_EINVAL "not supported". pause_pool
     * and the sync writes are fenced; answer_sync gets a cleaned line. */
    int (*pause_pool)(mcg_cluster *c, const char *pool, bool pause, bool *changed, bool *git_paused,
                      mcg_err *err);
    int (*get_sync)(mcg_cluster *c, mcg_sync_state *out, mcg_err *err);
    int (*annotate_pool)(mcg_cluster *c, const char *pool, const char *key, const char *value,
                         mcg_err *err);
    int (*request_sync)(mcg_cluster *c, uint64_t *gen, mcg_err *err);
    int (*answer_sync)(mcg_cluster *c, uint64_t gen, bool failed, const char *result, mcg_err *err);
    /* mcg_cluster_patch_nodes over valid names only, after one fence();
     * a backend whose batch takes time fences each write itself (kube).
     * Default: fence and patch_node for each. */
    int (*patch_nodes)(mcg_cluster *c, const char *const *names, const mcg_node_patch *patches,
                       size_t n, int *rcs, mcg_err *err);
    /* mcg_cluster_event, fenced, name and reason checked; default: nothing recorded. */
    int (*event)(mcg_cluster *c, const mcg_event *ev, mcg_err *err);
} mcg_cluster_ops;

/* The part of every backend's handle that the wrappers use. */
struct mcg_cluster {
    const mcg_cluster_ops *ops;
    char *spec; /* as given: "local:DIR" */
    /* Set through mcg_cluster_set_stop(); may be NULL. */
    volatile sig_atomic_t *stop;
};

int mcg_cluster_local_open(mcg_cluster **out, const char *spec, const char *dir, mcg_err *err);
/* kubeconfig: a file, or NULL for the in-cluster service account. */
int mcg_cluster_kube_open(mcg_cluster **out, const char *spec, const char *kubeconfig,
                          mcg_err *err);

/* Parse a Kubernetes Node object into n (cleared first; err may be NULL). */
int mcg_node_from_json(mcg_node *n, const json_t *o, mcg_err *err);
/* The MCG_ANN_HEALTH_FAILURE value a patch sets: NULL leave (check NULL), "" clear,
 * else the JSON {check, config}. Caller frees. */
char *mcg_node_failure_value(const char *check, const char *config);

/* Name rules the wrappers enforce, for backends that read names from storage. */
bool mcg_cluster_config_name_ok(const char *name);
/* The pool of rendered config name (rendered-POOL-HASH), a new string, or
 * NULL when the name has no such shape. */
char *mcg_cluster_config_pool(const char *name);

#endif
