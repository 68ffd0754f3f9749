/*
 * rollout — pure rollout planning: which pool each node belongs to, which
 * nodes get which rendered config now, and every pool's status.
 *
 * The planner is a function of observed state. The caller hands in a view of
 * every node (labels, readiness, desired/current config, agent state) and of
 * every pool (its MachineConfigPool, the rendered config it should run, the
 * render error if any, the status.configuration last published), and gets
 * back one mcg_rollout_plan: membership, the desiredConfig writes to make,
 * and the status to publish. Nothing here reads files, clocks or the
 * environment, so the same inputs always give the same plan.
 *
 * Rules follow MCO's node controller (pkg/controller/node/) as
 * docs/concepts.md ("Rollout") describes them; rollout.c documents each
 * predicate and the places where mcgit is deliberately stricter. The safety property the
 * planner keeps: the writes of one plan never bring the number of a pool's
 * nodes that are not settled (current != desired, or state not Done, or not
 * ready) above the pool's maxUnavailable, and never raise it when it is
 * already there.
 *
 * Ownership: a plan owns copies of every string in it; inputs are only read
 * during the call and may be freed afterwards. mcg_rollout_plan_free()
 * releases everything.
 */
#ifndef MCG_ROLLOUT_H
#define MCG_ROLLOUT_H

#include "model/model.h"

/* The zone label that orders a rollout (nodes without it go last). */
#define MCG_ZONE_LABEL "topology.kubernetes.io/zone"

/* Node states as agents report them. */
#define MCG_STATE_DONE "Done"
#define MCG_STATE_WORKING "Working"
#define MCG_STATE_DEGRADED "Degraded"
#define MCG_STATE_UNRECONCILABLE "Unreconcilable"

/* ------------------------------------------------------------- inputs */

/* Observed state of one node. NULL and "" mean the same for every string. */
typedef struct mcg_node_view {
    const char *name;         /* unique, non-empty */
    const mcg_labels *labels; /* NULL = no labels */
    int64_t created;          /* creation time, unix seconds */
    bool ready;               /* Ready condition True */
    bool unschedulable;       /* spec.unschedulable (cordoned) */
    const char *desired;      /* desiredConfig, NULL/"" if none */
    const char *current;      /* currentConfig, NULL/"" if none */
    const char *state;        /* "Done", "Working", "Degraded", "Unreconcilable", NULL */
    const char *reason;       /* the agent's reason (why Degraded), NULL if none */
} mcg_node_view;

/* One pool and what it should run. */
typedef struct mcg_pool_view {
    const mcg_pool *pool;      /* name, node_selector, max_unavailable, paused */
    const char *target;        /* rendered config this pool should run; NULL/"" if none */
    const char *render_error;  /* non-NULL: the last render failed with this message */
    const char *configuration; /* status.configuration as last published, NULL if none */
    const char *render_reason; /* CamelCase reason for render_error; NULL/"": "RenderFailed" */
    const char *stale;         /* non-NULL: the newest verified source is older than
                                  maxSourceAge (.mcgit/policy.yaml); this message says so */
    bool operator_paused;      /* paused by an operator on the cluster side (`mcgit pool
                                  pause`); the pool is paused when this or pool->paused */
    const char *untrusted;     /* non-NULL: the pool's current config still holds changes
                                  from commits by keys not trusted now; this message names
                                  them (UntrustedChanges) */
    /* Safe rollouts (the pool's spec.rollout and maintenance windows): */
    const char *halted; /* non-NULL: RolloutHalted, this message (a node's health check
                           failed on this source commit); holds the rollout as a pause */
    const char *held;   /* non-NULL: why no update starts now (outside the maintenance
                           windows); held_reason is its CamelCase reason */
    const char *held_reason;
    bool canary_passed;    /* the canary wave was healthy at the target for canaryPause */
    bool window_override;  /* outside its windows, rolling out on `mcgit sync --now` */
    int64_t waiting_since; /* when its rollout to the target began (unix seconds, 0:
                              unknown): with a disruption budget, the pool waiting
                              longest goes first */
    bool disrupts;         /* updates to the target drain or reboot: they count against
                              maxConcurrentDisruptions */
} mcg_pool_view;

/* ------------------------------------------------------------ outputs */

typedef enum {
    MCG_MEMBER_NONE = 0, /* no pool's nodeSelector matches */
    MCG_MEMBER_POOL,     /* belongs to .pool */
    MCG_MEMBER_CONFLICT, /* matched by 2+ custom pools: unmanaged, see .reason */
} mcg_member_kind;

typedef struct mcg_membership {
    char *node;
    mcg_member_kind kind;
    char *pool;   /* MCG_MEMBER_POOL: the pool's name; else NULL */
    char *reason; /* MCG_MEMBER_CONFLICT: "belongs to 2 custom pools: a, b"; else NULL */
} mcg_membership;

typedef enum {
    MCG_UPDATE_NEW_NODE = 0, /* node had no config at all: gets it at once, no capacity used */
    MCG_UPDATE_RETARGET,     /* failing (or desired-less) node moved; already counted unavailable */
    MCG_UPDATE_ROLLOUT,      /* settled node moved to the target; uses one unit of capacity */
} mcg_update_kind;

/* One desiredConfig write. */
typedef struct mcg_desired_update {
    char *node;
    char *pool;
    char *desired; /* the new desiredConfig */
    mcg_update_kind kind;
} mcg_desired_update;

typedef enum {
    MCG_COND_UPDATED = 0,
    MCG_COND_UPDATING,
    MCG_COND_DEGRADED, /* NodeDegraded or RenderDegraded */
    MCG_COND_NODE_DEGRADED,
    MCG_COND_RENDER_DEGRADED,
    MCG_COND_SOURCE_STALE,      /* the newest verified source commit is older than maxSourceAge */
    MCG_COND_UNTRUSTED_CHANGES, /* the pool's config holds changes by keys not trusted now */
    MCG_COND_ROLLOUT_HALTED,    /* a health check failed: no further node gets the target
                                   (only pools with spec.rollout have it: type NULL otherwise) */
    MCG_COND_COUNT,
} mcg_cond_type;

/* A pool condition. lastTransitionTime is the caller's: see mcg_rollout_condition_changed(). */
typedef struct mcg_condition {
    const char *type; /* static string: "Updated", "NodeDegraded", ... */
    bool status;      /* True / False */
    char *reason;     /* CamelCase (NodeDegraded: MCO's sentence), "" when none; never NULL */
    char *message;    /* "" when none; never NULL */
} mcg_condition;

/* A pool's status, computed as if this plan's desiredConfig writes were already made. */
typedef struct mcg_pool_status {
    char *pool;
    char *target;             /* copy of the view's target, NULL if none */
    char *configuration;      /* status.configuration: target when Updated, else the previous one */
    int64_t max_unavailable;  /* effective, from mcg_rollout_max_unavailable */
    size_t machine_count;     /* nodes whose pool this is */
    size_t updated_count;     /* done at the target */
    size_t ready_count;       /* updated, ready and schedulable */
    size_t unavailable_count; /* see rollout.c: unavailable() */
    size_t degraded_count;    /* state Degraded or Unreconcilable */
    size_t updating_count;    /* desired == target but not yet done at it */
    bool canary_done;         /* spec.rollout.canary nodes, and no more, are done at the target */
    mcg_condition conds[MCG_COND_COUNT]; /* indexed by mcg_cond_type */
} mcg_pool_status;

typedef struct mcg_rollout_plan {
    mcg_membership *members; /* one per input node, in input order */
    size_t nmembers;
    mcg_desired_update *updates; /* per pool in input order: new nodes, retargets, rollout */
    size_t nupdates;
    mcg_pool_status *pools; /* one per input pool, in input order */
    size_t npools;
    const mcg_membership **by_name; /* internal: members sorted by node name */
} mcg_rollout_plan;

/* ---------------------------------------------------------- functions */

/*
 * Plan one reconcile step. nodes/pools may be empty (NULL with count 0).
 * On success *out holds a new plan (free with mcg_rollout_plan_free) and 0 is
 * returned. Fails with MCG_EINVAL, *out NULL, when a node has no name, two
 * nodes or two pools share a name, or a pool view has no pool.
 *
 * Membership: master wins over everything, one custom pool over worker; two
 * or more custom pools (without master) make the node unmanaged (CONFLICT).
 * Desired writes, per pool: see rollout.c for the exact rules; in short, new
 * nodes (no current, no desired config) get the target at once without using
 * capacity (the pool's status.configuration instead when paused or without a
 * target); then failing or desired-less nodes, already unavailable, are
 * retargeted; then up to maxUnavailable - unavailable settled nodes, ordered
 * by zone (nodes without a zone last), oldest first, then name. Paused pools
 * and pools without a target get no rollout; a render error beside a target
 * (the last good render) does not stop it. Nodes still Working are not
 * retargeted. Updates come per pool in input order, each group in rollout
 * order. Safe rollouts: a halted pool holds as a paused one; a held one
 * (outside its windows) starts no update; a canary's first wave is
 * spec.rollout.canary nodes, and the next waits until they are done and
 * canary_passed; max_disruptions (0: no limit) caps the nodes updating at
 * once across all pools whose updates disrupt, the pool waiting longest
 * (waiting_since) served first.
 */
int mcg_rollout_plan_make(mcg_rollout_plan **out, const mcg_node_view *nodes, size_t nnodes,
                          const mcg_pool_view *pools, size_t npools, int64_t max_disruptions,
                          mcg_err *err);

/* Free a plan and everything in it. NULL is a no-op. */
void mcg_rollout_plan_free(mcg_rollout_plan *plan);

/* The membership of the node called name, or NULL if the plan has no such node. O(log n). */
const mcg_membership *mcg_rollout_plan_member(const mcg_rollout_plan *plan, const char *name);

/* The status of the pool called name, or NULL if the plan has no such pool. */
const mcg_pool_status *mcg_rollout_plan_pool(const mcg_rollout_plan *plan, const char *name);

/*
 * The pool a node with these labels belongs to, by the membership rules
 * above, among pools[0..npools). NULL when no pool matches or on a conflict;
 * then, if conflict is non-NULL, *conflict is set to a new string with the
 * reason ("belongs to 2 custom pools: a, b", names sorted) or NULL when
 * simply no pool matches. labels may be NULL. Used by `mcgit status` and
 * `mcgit node add` without building a plan.
 */
const mcg_pool *mcg_rollout_pool_of(const mcg_labels *labels, const mcg_pool *pools, size_t npools,
                                    char **conflict);

/*
 * The effective maxUnavailable of pool p with count nodes: unset -> 1; an
 * integer as given; a percentage of count rounded down (percentages above 100
 * act as 100). Always at least 1, as MCO does (0 or a percentage rounding to
 * 0 mean 1).
 */
int64_t mcg_rollout_max_unavailable(const mcg_pool *p, size_t count);

/*
 * How many waves a rollout of todo of a pool's count nodes takes when every
 * node is settled and stays so: ceil(todo / mcg_rollout_max_unavailable(p,
 * count)), the planner moving at most maxUnavailable settled nodes at a
 * time. 0 when todo is 0.
 */
int64_t mcg_rollout_waves(const mcg_pool *p, size_t count, size_t todo);

/* True when p is one of the two built-in pools, "master" or "worker". */
bool mcg_rollout_pool_is_builtin(const char *name);

/*
 * True when a condition's lastTransitionTime should move: prev_status is the
 * status last published for this condition type ("True", "False", "Unknown",
 * or NULL when there was none) and it differs from next->status. Reason or
 * message changes alone do not move it (the Kubernetes convention). next
 * must not be NULL.
 */
bool mcg_rollout_condition_changed(const char *prev_status, const mcg_condition *next);

/* "True" or "False". */
const char *mcg_rollout_condition_status(bool status);

#endif
