/*
 * agent — the part of mcgit that runs on a node: it applies a rendered
 * config to the filesystem under a root directory, reports the node's state
 * through the cluster interface and watches managed files for drift.
 *
 * The idea, as in MCO's machine-config-daemon: read the node's
 * desiredConfig; when it differs from what is on disk, fetch the rendered
 * config (refusing one whose bytes do not match the hash in its name), plan
 * the change (files, directories, links, units, drop-ins, enablement links,
 * core's SSH keys), decide the disruption actions from the node disruption
 * policy, cordon and drain when they need it, write a journal, apply, run
 * the actions, uncordon and report Done. When the disk already holds the
 * desired config, compare every managed path with it (drift) and report
 * Degraded, without touching anything, until someone puts the path back.
 *
 * Safety rules that hold for every path: nothing is written outside the
 * root (paths are resolved inside it without following any symlink); every
 * file is replaced atomically (temp file in the same directory, rename); a
 * journal in the state directory, written and synced before the first
 * change, lets a restarted agent finish an interrupted update, so a kill -9
 * at any moment ends with the node exactly at the target.
 *
 * Ownership: an mcg_agent from mcg_agent_open() is the caller's and is
 * released with mcg_agent_free(). Results are plain structs the caller owns.
 */
#ifndef MCG_AGENT_H
#define MCG_AGENT_H

#include <signal.h>

#include "cluster/cluster.h"
#include "metrics/metrics.h"

/* How an agent runs. Strings are borrowed for the agent's lifetime. */
typedef struct mcg_agent_opts {
    const char *node;      /* node name (required with a cluster) */
    const char *root;      /* filesystem to manage; "/" is the host */
    const char *state_dir; /* NULL: <root>/var/lib/mcgit, resolved inside the root */
    bool live;             /* the root is the host's: run systemctl and reboots */
    bool force;            /* re-apply the whole config even when it is current */
    /* only the node key is read (--print-node-key): the state directory is
     * not locked, so that it works beside the running agent; the lock is
     * taken only to make the key when there is none yet */
    bool key_only;
    const char *reboot_command; /* NULL: "systemctl reboot" when live, nothing otherwise */
    const char *systemctl;      /* NULL: "systemctl" */
    /*
     * Prefix for the host commands of kernel arguments, OS image, extensions
     * and kernel type (rpm-ostree, bootc, grubby, kernel-install, update-grub):
     * run as "PREFIX CMD ARGS" (e.g. "chroot /rootfs"). NULL: run directly when
     * live; when not live they run only through a prefix (tests record them).
     */
    const char *host_exec;
    int verbosity; /* 0 quiet, 1 normal, 2 verbose; logs go to stderr */
    /* Where mcg_agent_loop records its passes (mcg_agent_metrics_declare'd);
     * NULL: nowhere. */
    mcg_metrics *metrics;
} mcg_agent_opts;

typedef enum {
    MCG_AGENT_DONE = 0,     /* disk = desired config, no drift */
    MCG_AGENT_WORKING = 1,  /* update in progress (e.g. waiting for a reboot) */
    MCG_AGENT_DEGRADED = 2, /* apply failed, config refused, or drift found */
} mcg_agent_state;

#define MCG_AGENT_REASON 1024

/* What one pass did. */
typedef struct mcg_agent_result {
    mcg_agent_state state;
    char reason[MCG_AGENT_REASON]; /* one line; empty when Done */
    bool unreconcilable;           /* Degraded by a change MCO calls unreconcilable: the
                                      node's state is reported as Unreconcilable */
    char config[256];              /* the rendered config on disk afterwards ("" if none) */
    bool applied;                  /* this pass changed files */
    bool offline;                  /* the cluster could not be reached */
    bool rebooted;                 /* a Reboot action was carried out (or recorded) */
    size_t written, removed;       /* paths written / removed this pass */
} mcg_agent_result;

typedef struct mcg_agent mcg_agent;

/*
 * Open the root (which must exist) and the state directory (created 0700
 * when missing). Fails with a message when either cannot be opened or the
 * default state directory's path inside the root holds a symlink.
 *
 * A live root (o->live, or the root is "/") is first proven to be node
 * o->node of cluster c (mcg_agent_verify_host); c may be NULL only for a
 * root that is not live. A refusal (MCG_ETRUST, one line naming the node and
 * this host) comes before anything is created or written.
 * *out is NULL on failure.
 */
int mcg_agent_open(mcg_agent **out, const mcg_agent_opts *o, mcg_cluster *c, mcg_err *err);

/* --------------------------------------------------------- node identity */

#define MCG_MACHINE_ID_SIZE 33 /* 32 hex digits and a NUL */

/* Who this host is. */
typedef struct mcg_host_identity {
    char machine_id[MCG_MACHINE_ID_SIZE]; /* ROOT/etc/machine-id */
    char boot_id[64];                     /* the running kernel's */
    char system_uuid[64];                 /* DMI product UUID; "" when unreadable */
    char hostname[256];                   /* for messages only */
} mcg_host_identity;

/*
 * Read ROOT/etc/machine-id (no symlink followed at etc/ or machine-id) into
 * out: 32 lowercase hex digits, else an error naming the file.
 */
int mcg_agent_machine_id(const char *root, char out[MCG_MACHINE_ID_SIZE], mcg_err *err);

/* This host's identity: the machine-id under root, the kernel's boot id,
 * the DMI system UUID when readable, the host name. */
int mcg_agent_host_identity(mcg_host_identity *out, const char *root, mcg_err *err);

/*
 * Pure: does host h match node n? Every identity n carries must equal h's
 * (nodeInfo machineID, bound machine-id, nodeInfo bootID, and systemUUID
 * when h's is known); n must carry a machine-id (reported or bound). 0, or
 * MCG_ETRUST with one line naming the node, this host and what differs.
 */
int mcg_agent_identity_match(const mcg_host_identity *h, const mcg_node *n, mcg_err *err);

/* Whether an agent on root manages the live host: live was asked for, or
 * root is the directory "/" is. */
bool mcg_agent_root_is_live(const char *root, bool live);

/*
 * Prove this host is node `node` of cluster c: read this host's identity
 * (machine-id under root) and the node, and match them. Reads only.
 */
int mcg_agent_verify_host(const char *root, const char *node, mcg_cluster *c, mcg_err *err);

/* Close the agent's descriptors and free its cached configs. NULL is a no-op. */
void mcg_agent_free(mcg_agent *a);
/* The public line of the node key (made at the first call, <state>/node.key),
 * for `mcgit agent --print-node-key`; the caller frees *line. */
int mcg_agent_node_key_line(char **line, mcg_agent *a, mcg_err *err);

/*
 * One reconcile pass against the cluster: finish a leftover journal, read
 * the node, update to its desiredConfig or check drift, and report the
 * outcome on the node (state, reason, currentConfig, unschedulable).
 * Returns 0 when the pass ran (its outcome, Done or Degraded, is in *res)
 * and a negative code only when the agent could not run at all (the
 * message in err). When the cluster is unreachable the drift check still
 * runs on the locally kept config and res->offline is set.
 */
int mcg_agent_run_once(mcg_agent_result *res, mcg_agent *a, mcg_cluster *c, mcg_err *err);

/*
 * Apply a rendered config given as bytes (name + canonical spec), with no
 * cluster: no node is patched and no disruption policy is read (actions are
 * logged only). The name must match the spec's hash. Used by tools and the
 * benchmarks; outcome in *res as for mcg_agent_run_once.
 */
int mcg_agent_apply(mcg_agent_result *res, mcg_agent *a, const char *name, const char *spec,
                    size_t len, mcg_err *err);

/*
 * Compare the disk with the config the state directory says is current
 * (kept parsed in memory between calls). res->state is Done or Degraded
 * with each drifted path and what differs in res->reason; nothing is
 * written. Done with an empty config when no config was ever applied.
 */
int mcg_agent_check_drift(mcg_agent_result *res, mcg_agent *a, mcg_err *err);

/*
 * Run passes every interval seconds until *stop becomes non-zero (set it
 * from a SIGTERM/SIGINT handler; the sleep wakes on signals). --force
 * applies to the first pass only. Returns 0 on a clean stop.
 */
int mcg_agent_loop(mcg_agent *a, mcg_cluster *c, unsigned interval, volatile sig_atomic_t *stop,
                   mcg_err *err);

/*
 * Declare the agent's metric families in m (docs/operations.md, "Metrics"):
 * passes and their duration, the node's state, drift detections, applies,
 * reboots.
 */
int mcg_agent_metrics_declare(mcg_metrics *m, mcg_err *err);

/* "Done", "Working" or "Degraded". */
const char *mcg_agent_state_name(mcg_agent_state s);

#endif
