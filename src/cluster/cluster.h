/*
 * cluster — where nodes, published rendered configs, pool status and the
 * cluster-wide MachineConfiguration live. One interface, one file per
 * backend (like curl's lib/vtls/): `local:DIR` (a state directory of JSON
 * files under a lock, the embedded default) and `kube` (the Kubernetes API:
 * kube.c, kubeapi.c, kubecfg.c).
 *
 * Node fields mirror a Kubernetes Node: name, labels, creation time, the
 * Ready condition, spec.unschedulable, and the annotations
 * machineconfiguration.mcgit.io/{desiredConfig,currentConfig,state,reason}.
 */
#ifndef MCG_CLUSTER_H
#define MCG_CLUSTER_H

#include "model/model.h"

#include <signal.h>

#define MCG_ANN_PREFIX "machineconfiguration.mcgit.io/"
#define MCG_ANN_DESIRED MCG_ANN_PREFIX "desiredConfig"
#define MCG_ANN_CURRENT MCG_ANN_PREFIX "currentConfig"
#define MCG_ANN_STATE MCG_ANN_PREFIX "state"
#define MCG_ANN_REASON MCG_ANN_PREFIX "reason"

typedef struct mcg_node {
    char *name;
    mcg_labels labels;
    int64_t created; /* unix seconds */
    bool ready;
    bool unschedulable;
    char *desired; /* NULL when unset */
    char *current;
    char *state;
    char *reason;
} mcg_node;

void mcg_node_clear(mcg_node *n);
void mcg_nodes_free(mcg_node *nodes, size_t n);

/* A field-level change to one node, applied atomically (read-modify-write
 * under the backend's lock, so concurrent writers never lose an update).
 * NULL strings are left alone; "" clears. */
typedef struct mcg_node_patch {
    const char *desired;
    const char *current;
    const char *state;
    const char *reason;
    int unschedulable; /* -1 leave, 0 or 1 set */
    int ready;         /* -1 leave, 0 or 1 set */
    /* Only apply when the node's desiredConfig equals this (NULL: always). */
    const char *if_desired;
} mcg_node_patch;

#define MCG_NODE_PATCH_INIT {NULL, NULL, NULL, NULL, -1, -1, NULL}

typedef struct mcg_cluster mcg_cluster;

typedef struct mcg_cluster_ops {
    int (*list_nodes)(mcg_cluster *c, mcg_node **out, size_t *n, mcg_err *err);
    int (*get_node)(mcg_cluster *c, const char *name, mcg_node *out, mcg_err *err);
    int (*patch_node)(mcg_cluster *c, const char *name, const mcg_node_patch *p, mcg_err *err);
    int (*add_node)(mcg_cluster *c, const char *name, const mcg_labels *labels, int64_t now,
                    mcg_err *err);
    int (*remove_node)(mcg_cluster *c, const char *name, mcg_err *err);
    /* Apply label edits "k=v,k2-" (set k, remove k2) to the node's current
     * labels atomically: concurrent edits of other keys are never lost. */
    int (*label_node)(mcg_cluster *c, const char *name, const char *edits, mcg_err *err);
    /* Published rendered configs: canonical spec bytes by rendered name. */
    int (*put_config)(mcg_cluster *c, const char *name, const char *spec, size_t len, mcg_err *err);
    int (*get_config)(mcg_cluster *c, const char *name, char **spec, size_t *len, mcg_err *err);
    int (*list_configs)(mcg_cluster *c, mcg_strv *names, mcg_err *err);
    int (*delete_config)(mcg_cluster *c, const char *name, mcg_err *err);
    /* MachineConfigPool objects (Kubernetes shape, with status). */
    int (*put_pool)(mcg_cluster *c, const char *name, const json_t *obj, mcg_err *err);
    int (*list_pools)(mcg_cluster *c, json_t **items, mcg_err *err); /* JSON array, sorted */
    int (*delete_pool)(mcg_cluster *c, const char *name, mcg_err *err);
    /* The MachineConfiguration "cluster" (its spec: nodeDisruptionPolicy). */
    int (*put_policy)(mcg_cluster *c, const json_t *spec, mcg_err *err);
    int (*get_policy)(mcg_cluster *c, json_t **spec, mcg_err *err); /* ENOTFOUND: none */
    /* Evict the node's pods (local: nothing to evict). */
    int (*drain)(mcg_cluster *c, const char *name, mcg_err *err);
    /* Default root directory of a node's filesystem, or NULL (caller frees). */
    char *(*node_root)(mcg_cluster *c, const char *name);
    void (*free)(mcg_cluster *c);
    /*
     * Ops below are optional (NULL): call them through the mcg_cluster_*
     * wrappers, which supply the default.
     *
     * Leader election: try to become (or stay) the one acting controller
     * under this identity; call it before every pass and act only when
     * *leader. On an error *leader is false. Cheap to call often (kube: no
     * request while renewed less than a third of the lease duration ago).
     * Once called, the backend fences writes: every mutating op fails with
     * MCG_ECONFLICT "not the leader ..." unless the lease was renewed within
     * the lease duration minus a margin, so a replica that lost the lease
     * (or stalled) never writes alongside the new leader. Default: always
     * the leader (a local cluster has one controller).
     */
    int (*lead)(mcg_cluster *c, const char *identity, bool *leader, mcg_err *err);
    /*
     * Wait up to timeout_ms for a change that matters to nodes (any node
     * when node is NULL, else that one): returns 1 on a change, 0 when the
     * time passed quietly, negative with err when changes cannot be watched
     * (after having waited, so a loop over it never spins). Default: sleep.
     */
    int (*wait_change)(mcg_cluster *c, const char *node, long timeout_ms, mcg_err *err);
    /* Several node patches in one go: rcs[i] gets each node's own result (0,
     * MCG_ECONFLICT when its if_desired no longer holds, MCG_ENOTFOUND);
     * the return value is an error that stopped the whole batch. NULL: the
     * wrapper applies them one by one with patch_node. */
    int (*patch_nodes)(mcg_cluster *c, const char *const *names, const mcg_node_patch *patches,
                       size_t n, int *rcs, mcg_err *err);
} mcg_cluster_ops;

struct mcg_cluster {
    const mcg_cluster_ops *ops;
    char *spec; /* as given: "local:DIR" */
    /* Set by the caller (e.g. to its SIGTERM flag): long waits (wait_change,
     * retry backoff, drain) return early once *stop is non-zero. May be NULL. */
    volatile sig_atomic_t *stop;
};

/*
 * Open a cluster from its spec: "local:DIR" (DIR is created if missing),
 * "kube" (in-cluster service account) or "kube:KUBECONFIG".
 */
int mcg_cluster_open(mcg_cluster **out, const char *spec, mcg_err *err);
void mcg_cluster_free(mcg_cluster *c);

/* Convenience wrappers over ops. */
int mcg_cluster_list_nodes(mcg_cluster *c, mcg_node **out, size_t *n, mcg_err *err);
int mcg_cluster_get_node(mcg_cluster *c, const char *name, mcg_node *out, mcg_err *err);
int mcg_cluster_patch_node(mcg_cluster *c, const char *name, const mcg_node_patch *p,
                           mcg_err *err);
int mcg_cluster_get_config(mcg_cluster *c, const char *name, char **spec, size_t *len,
                           mcg_err *err);
int mcg_cluster_get_policy(mcg_cluster *c, mcg_disruption_policy *out, mcg_err *err);
/* ops->lead, or "always the leader". */
int mcg_cluster_lead(mcg_cluster *c, const char *identity, bool *leader, mcg_err *err);
/* ops->patch_nodes, or patch_node for each (see there). */
int mcg_cluster_patch_nodes(mcg_cluster *c, const char *const *names,
                            const mcg_node_patch *patches, size_t n, int *rcs, mcg_err *err);
/* Whether the backend can wait for node changes (ops->wait_change). */
bool mcg_cluster_watches(const mcg_cluster *c);
/* ops->wait_change, or a sleep of timeout_ms (ended early by *c->stop). */
int mcg_cluster_wait_change(mcg_cluster *c, const char *node, long timeout_ms, mcg_err *err);

/* Node as a Kubernetes Node object (for -o json). */
json_t *mcg_node_to_json(const mcg_node *n);
/* RFC 3339 UTC ("2026-01-01T00:00:00Z"); parse returns false on junk. */
void mcg_time_format(int64_t t, char out[32]);
bool mcg_time_parse(const char *s, int64_t *out);

#endif
