/*
 * cluster — where nodes, published rendered configs, pool status and the
 * cluster-wide MachineConfiguration live. One interface, backends behind it
 * (like curl's lib/vtls/): `local:DIR` (local.c: a state directory of JSON
 * files under a lock, the embedded default) and `kube` (the Kubernetes API:
 * kube_*.c). Callers see only the functions in this header; each backend
 * fills a private table of operations (cluster_int.h), and the common checks
 * (names, write fencing, NULL error records) live once in cluster.c.
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
/* A failed health check, beside the human reason: JSON {"check": NAME, "config": RENDERED} */
#define MCG_ANN_HEALTH_FAILURE MCG_ANN_PREFIX "healthFailure"
/* The machine-id of the host bound to this node by `mcgit node bind` (or
 * `node add --machine-id`): the identity an agent proves on a host without a
 * kubelet (see docs/agent.md, "Node identity"). */
#define MCG_ANN_MACHINE_ID MCG_ANN_PREFIX "machineID"
/* The node's public key (an OpenSSH ed25519 line) the operator pinned with
 * `mcgit node bind --node-key`: what an attestation must verify against. */
#define MCG_ANN_NODE_KEY MCG_ANN_PREFIX "nodeKey"
/* The agent's signed statement of what it applied, written on Done
 * (docs/sites.md, "Node attestation"). */
#define MCG_ANN_ATTESTATION MCG_ANN_PREFIX "attestation"

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
    /* The health check that failed on this node, and the rendered config it
     * failed at (MCG_ANN_HEALTH_FAILURE, written by the agent beside its
     * human reason); NULL when none. What the controller halts a pool on. */
    char *failed_check;
    char *failed_config;
    /* Who the node is (NULL when unknown): status.nodeInfo as the kubelet
     * reports it, and the machine-id bound by mcgit (MCG_ANN_MACHINE_ID). */
    char *machine_id;
    char *boot_id;
    char *system_uuid;
    char *bound_machine_id;
    char *node_key;    /* MCG_ANN_NODE_KEY, NULL when none pinned */
    char *attestation; /* MCG_ANN_ATTESTATION, NULL when none */
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
    /* The failed health check (MCG_ANN_HEALTH_FAILURE): NULL leave, "" clear,
     * else set with failed_config (the rendered config it failed at). */
    const char *failed_check;
    const char *failed_config;
    int unschedulable; /* -1 leave, 0 or 1 set */
    int ready;         /* -1 leave, 0 or 1 set */
    /* Only apply when the node's desiredConfig equals this (NULL: always). */
    const char *if_desired;
    /* The bound machine-id (MCG_ANN_MACHINE_ID); NULL leave, "" clear. */
    const char *bound_machine_id;
    /* The pinned node key (MCG_ANN_NODE_KEY) and the attestation
     * (MCG_ANN_ATTESTATION); NULL leave, "" clear. */
    const char *node_key;
    const char *attestation;
} mcg_node_patch;

/* Leaves everything alone; set the fields to change. */
#define MCG_NODE_PATCH_INIT                                                                        \
    {                                                                                              \
        .unschedulable = -1, .ready = -1                                                           \
    }

/*
 * A cluster handle. Its backend is private (cluster_int.h): callers use the
 * mcg_cluster_* functions below only. Every one of them
 *   - accepts err == NULL (the message is then dropped, the code returned);
 *   - checks names before a backend sees them: node names are DNS-1123
 *     subdomains, rendered config names "rendered-" + a subdomain, pool
 *     names DNS labels (MCG_EINVAL "invalid node name 'x'" and so on);
 *   - fences writes: once mcg_cluster_lead() has been called on a handle,
 *     every write (patch, add, remove, label, put, delete) fails with
 *     MCG_ECONFLICT "not the leader ..." unless this handle still surely
 *     holds the leader lease (see mcg_cluster_lead);
 *   - initialises its out-parameters, also on failure.
 */
typedef struct mcg_cluster mcg_cluster;

/*
 * Open a cluster from its spec: "local:DIR" (DIR is created by the first
 * write), "kube" (in-cluster service account) or "kube:KUBECONFIG".
 * Free with mcg_cluster_free() (NULL is a no-op).
 */
int mcg_cluster_open(mcg_cluster **out, const char *spec, mcg_err *err);
void mcg_cluster_free(mcg_cluster *c);

/* The spec the cluster was opened with ("local:DIR"), for messages. */
const char *mcg_cluster_spec(const mcg_cluster *c);

/*
 * Where long waits (wait_change, retry backoff, drain) look for a stop
 * request: they return early once *stop is non-zero. NULL: never.
 */
void mcg_cluster_set_stop(mcg_cluster *c, volatile sig_atomic_t *stop);

/* ----------------------------------------------------------------- nodes */

/* Every node, sorted by name, as one snapshot. Free with mcg_nodes_free(). */
int mcg_cluster_list_nodes(mcg_cluster *c, mcg_node **out, size_t *n, mcg_err *err);
/* One node (MCG_ENOTFOUND: no such node). Clear with mcg_node_clear(). */
int mcg_cluster_get_node(mcg_cluster *c, const char *name, mcg_node *out, mcg_err *err);
/* Apply a patch atomically; MCG_ECONFLICT when p->if_desired no longer holds. */
int mcg_cluster_patch_node(mcg_cluster *c, const char *name, const mcg_node_patch *p, mcg_err *err);
/* Several node patches in one go (a rollout wave): rcs[i] gets each node's
 * own result (0, MCG_ECONFLICT when its if_desired no longer holds,
 * MCG_ENOTFOUND, MCG_EINVAL for a bad name, or why its write failed); a
 * node whose patch failed is left as it was. The return value is an error
 * that fails the batch: a write the fence refused (nothing more is sent
 * once it refuses), or a node's failure other than ECONFLICT/ENOTFOUND
 * (the message names the node, and the others that failed). The kube
 * backend sends the patches concurrently (MCGIT_KUBE_INFLIGHT at most,
 * default 16), fencing each write; local applies them under one lock. */
int mcg_cluster_patch_nodes(mcg_cluster *c, const char *const *names, const mcg_node_patch *patches,
                            size_t n, int *rcs, mcg_err *err);
/* A new node, Ready, created at now (kube: the API server's clock).
 * MCG_ECONFLICT when it exists. labels may be NULL. local: the node's root
 * DIR/roots/NAME is made, its etc/passwd and etc/group naming root and core
 * unless they exist. */
int mcg_cluster_add_node(mcg_cluster *c, const char *name, const mcg_labels *labels, int64_t now,
                         mcg_err *err);
int mcg_cluster_remove_node(mcg_cluster *c, const char *name, mcg_err *err);
/* Apply label edits "k=v,k2-" (set k, remove k2) to the node's current
 * labels atomically: concurrent edits of other keys are never lost. */
int mcg_cluster_label_node(mcg_cluster *c, const char *name, const char *edits, mcg_err *err);
/* Evict the node's pods (local: nothing to evict). */
int mcg_cluster_drain(mcg_cluster *c, const char *name, mcg_err *err);
/* Default root directory of a node's filesystem, or NULL (caller frees). */
char *mcg_cluster_node_root(mcg_cluster *c, const char *name);

/* ------------------------------------------------------ rendered configs */

/*
 * A published rendered config is owned by its pool (ownerReferences, kube:
 * with the pool object's uid, so that deleting the pool deletes its configs)
 * and carries MCO's annotation naming the version of the controller that
 * generated it (mcgit's, MCGIT_VERSION). local:DIR keeps this metadata
 * beside the spec bytes, in DIR/configs/.meta/NAME.json.
 */
#define MCG_ANN_GENERATED_BY "machineconfiguration.openshift.io/generated-by-controller-version"

/* Publish canonical spec bytes under their rendered name (idempotent). */
int mcg_cluster_put_config(mcg_cluster *c, const char *name, const char *spec, size_t len,
                           mcg_err *err);
/* The published bytes (caller frees *spec); MCG_ENOTFOUND: not published. */
int mcg_cluster_get_config(mcg_cluster *c, const char *name, char **spec, size_t *len,
                           mcg_err *err);
/* Names of the published configs, sorted, appended to names. */
int mcg_cluster_list_configs(mcg_cluster *c, mcg_strv *names, mcg_err *err);
/* Unpublish; a config already gone is not an error. */
int mcg_cluster_delete_config(mcg_cluster *c, const char *name, mcg_err *err);

/* ------------------------------------------- pools and the cluster policy */

/* Create or update a MachineConfigPool object (Kubernetes shape, with status). */
int mcg_cluster_put_pool(mcg_cluster *c, const char *name, const json_t *obj, mcg_err *err);
/* Every MachineConfigPool object as a JSON array sorted by name (caller
 * decrefs; NULL on failure). */
int mcg_cluster_list_pools(mcg_cluster *c, json_t **items, mcg_err *err);
/* Delete a pool object; one already gone is not an error. */
int mcg_cluster_delete_pool(mcg_cluster *c, const char *name, mcg_err *err);
/* The MachineConfiguration "cluster": write its spec (nodeDisruptionPolicy). */
int mcg_cluster_put_policy(mcg_cluster *c, const json_t *spec, mcg_err *err);
/* Its spec as stored (caller decrefs); MCG_ENOTFOUND when there is none. */
int mcg_cluster_get_policy_json(mcg_cluster *c, json_t **spec, mcg_err *err);
/* Its spec parsed; no MachineConfiguration gives the defaults (returns 0). */
int mcg_cluster_get_policy(mcg_cluster *c, mcg_disruption_policy *out, mcg_err *err);

/* ------------------------------------------------- leadership and watches */

/*
 * Leader election: try to become (or stay) the one acting controller under
 * this identity; call it before every pass and act only when *leader. On
 * an error *leader is false. Cheap to call often (kube: no request while
 * renewed less than a third of the lease duration ago). Once called, writes
 * through this handle are fenced (see above): a replica that lost the lease
 * (or stalled) never writes alongside the new leader. A backend without
 * leader election (local: one controller) always says *leader = true.
 */
int mcg_cluster_lead(mcg_cluster *c, const char *identity, bool *leader, mcg_err *err);
/* Whether the backend can wait for node changes rather than sleep. */
bool mcg_cluster_watches(const mcg_cluster *c);
/*
 * Wait up to timeout_ms for a change that matters to nodes (any node when
 * node is NULL, else that one): returns 1 on a change, 0 when the time
 * passed quietly (or a stop was requested), negative with err when changes
 * cannot be watched (after having waited, so a loop over it never spins).
 * Without watches: a sleep of timeout_ms, ended early by a stop request.
 */
int mcg_cluster_wait_change(mcg_cluster *c, const char *node, long timeout_ms, mcg_err *err);

/* ------------------------------------------------------------- events */

/* What happened to a node or a pool, for people watching the cluster
 * (kubectl describe, kubectl get events). Reasons are MCO's where MCO has
 * one ("SetDesiredConfig", "Drain", "Reboot", ...). */
typedef struct mcg_event {
    const char *component; /* who reports: "mcgit-controller", "mcgit-agent" */
    bool pool;             /* the object is the MachineConfigPool `name`, else the Node */
    const char *name;
    bool warning;        /* type Warning, else Normal */
    const char *reason;  /* UpperCamelCase */
    const char *message; /* one line */
} mcg_event;

/*
 * Record an event (kube: a core/v1 Event in namespace default, where the
 * API server keeps events about cluster-scoped objects, its involvedObject
 * the Node or MachineConfigPool with its uid, so `kubectl describe` lists
 * it; local: nothing is recorded). Best effort: a refusal
 * (no RBAC, the object gone) is returned and changes nothing else; one try,
 * no retries. Fenced like every write (a replica that lost the lease
 * reports nothing). MCG_EINVAL for a bad name or a missing reason.
 */
int mcg_cluster_event(mcg_cluster *c, const mcg_event *ev, mcg_err *err);

/* ------------------------------------------------------ operator requests */

/*
 * What an operator asks of the controller on the cluster side, outside git:
 *
 * A pause: spec.paused = true on the pool's MachineConfigPool object, MCO's
 * own field (`mcgit pool pause`, or `kubectl patch mcp POOL --type merge -p
 * '{"spec":{"paused":true}}'`; the annotation MCG_ANN_PAUSED = "true", an
 * earlier way, counts too). spec.paused is the operator's alone: the
 * controller never writes it (put_pool keeps what the object holds), so it
 * is never undone from git. Git's own spec.paused (pools/POOL.yaml) is
 * published as status.pausedInGit (MCG_POOL_PAUSED_IN_GIT). The pool is
 * paused when either says so; `mcgit pool resume` lifts the operator's
 * pause only, a signed commit lifts git's.
 *
 * A sync (`mcgit sync`): a counter of requests, and the newest request a
 * controller pass answered with that pass's result. local:DIR keeps them in
 * DIR/sync.json, kube in annotations of the MachineConfiguration "cluster".
 */
#define MCG_ANN_PAUSED MCG_ANN_PREFIX "paused"
/*
 * `mcgit pool resume` on a pool whose status holds a rollout halt
 * (status.rolloutHalt, a failed health check): the time it was lifted, RFC
 * 3339; the halt holds only while this is older than the halt.
 */
#define MCG_ANN_RESUMED MCG_ANN_PREFIX "resumed"
#define MCG_POOL_PAUSED_IN_GIT "pausedInGit"

/*
 * Set (pause) or lift (!pause) the operator's pause of pool, atomically:
 * pause sets spec.paused true; resume sets it false and removes
 * MCG_ANN_PAUSED, and lifts a rollout halt (MCG_ANN_RESUMED set to now).
 * *changed says whether the operator's pause or the halt changed (false:
 * it already was so). *git_paused (may be NULL) gets status.pausedInGit
 * (git's pause as the controller last published it). A change moves the
 * object's metadata.generation (kube: the API server; local: the store), so
 * status.observedGeneration says when a controller pass has seen it.
 * MCG_ENOTFOUND when the cluster has no MachineConfigPool of that
 * name (the controller makes them at its first pass).
 */
int mcg_cluster_pause_pool(mcg_cluster *c, const char *pool, bool pause, bool *changed,
                           bool *git_paused, mcg_err *err);

/*
 * `mcgit sync --now POOL`: the operator's override of POOL's maintenance
 * windows for its current target, the annotation's value (the controller
 * rolls that target out outside the windows, and says so).
 */
#define MCG_ANN_SYNC_NOW MCG_ANN_PREFIX "sync-now"
/* Set annotation key of an existing pool object to value (an operator's request). */
int mcg_cluster_annotate_pool(mcg_cluster *c, const char *pool, const char *key, const char *value,
                              mcg_err *err);

/* Whether a MachineConfigPool object carries the operator's pause
 * (spec.paused true, or MCG_ANN_PAUSED "true"). */
bool mcg_pool_object_operator_paused(const json_t *pool);
/* Whether its rollout halt (status.rolloutHalt) holds: not lifted by a resume since. */
bool mcg_pool_object_halt_pending(const json_t *pool);
/* Whether it says git pauses the pool (status.pausedInGit true). */
bool mcg_pool_object_git_paused(const json_t *pool);

typedef struct mcg_sync_state {
    uint64_t requested;  /* requests made so far (0: none ever) */
    uint64_t handled;    /* the newest request a pass answered (0: none) */
    bool failed;         /* that pass failed, was refused or could not fetch */
    char handled_at[32]; /* when, RFC 3339 ("" none) */
    char result[512];    /* that pass's result, one printable line */
} mcg_sync_state;

/* The sync requests and answers; all zero when none was ever made. */
int mcg_cluster_get_sync(mcg_cluster *c, mcg_sync_state *out, mcg_err *err);
/* Ask for a controller pass now: the counter goes up by one, atomically
 * (concurrent requests each count); *gen gets the new value. */
int mcg_cluster_request_sync(mcg_cluster *c, uint64_t *gen, mcg_err *err);
/* Record that a pass answered every request up to gen (never moves
 * backwards); result is one line (control characters become spaces). */
int mcg_cluster_answer_sync(mcg_cluster *c, uint64_t gen, bool failed, const char *result,
                            mcg_err *err);

/* Node as a Kubernetes Node object (for -o json). */
json_t *mcg_node_to_json(const mcg_node *n);
bool mcg_time_parse(const char *s, int64_t *out);

/* libcurl's global initialisation (not thread-safe: once, from main, before any
 * thread starts; the kube backend's client calls it too, for other entry points). */
int mcg_cluster_lib_init(void);

#endif
