/*
 * gitops/plan.h — the commit plan: what a source commit would change in
 * each pool, and with what disruption, before it rolls out (`mcgit plan`,
 * the pre-receive hook, bundle verify).
 */
#ifndef MCG_GITOPS_PLAN_H
#define MCG_GITOPS_PLAN_H

#include "model/model.h"
#include "render/render.h"
#include "gitops/repo.h"

/* One pool of a plan (gitops/plan.c). */
typedef struct mcg_commit_plan_pool {
    const char *name;     /* the pool's name (in the plan's render) */
    const mcg_pool *pool; /* the pool in the plan's model */
    char *old_name;       /* the rendered branch tip's name for the pool; NULL: none */
    const char *new_name; /* rendered-<pool>-<hash> of the planned commit */
    const char *error;    /* non-NULL: the pool does not render (diff empty) */
    mcg_diff diff;        /* old -> new, with the disruption actions */
    /* the caller's, from a cluster (nodes_known false: unknown) */
    bool nodes_known;
    size_t machines;         /* the pool's nodes */
    size_t nodes;            /* of them, those not at new_name yet */
    int64_t max_unavailable; /* effective (mcg_rollout_max_unavailable) */
    int64_t waves;           /* mcg_rollout_waves */
} mcg_commit_plan_pool;

typedef struct mcg_commit_plan {
    char source[MCG_SHA_HEX + 1];   /* the planned source commit */
    char rendered[MCG_SHA_HEX + 1]; /* the rendered branch tip compared with, "" when none */
    mcg_model *model;               /* the commit's model (warnings, pools, policy) */
    mcg_render *render;
    mcg_commit_plan_pool *pools; /* sorted by pool name */
    size_t n;
} mcg_commit_plan;

/*
 * The plan of source commit sha (already verified by the caller): load and
 * render it, then compare each pool with the rendered branch tip's
 * <pool>/spec.json under the commit's node disruption policy. Writes
 * nothing. A commit that does not load or render: MCG_EINVAL with every
 * problem in diags. Free *out with mcg_commit_plan_free.
 */
int mcg_gitops_commit_plan(mcg_commit_plan **out, mcg_repo *r, const char *sha, mcg_diags *diags,
                           mcg_err *err);
/* The same for a model and render the caller made of sha; both transferred
 * to *out on success (the caller keeps them on failure). */
int mcg_gitops_commit_plan_make(mcg_commit_plan **out, mcg_repo *r, const char *sha, mcg_model *m,
                                mcg_render *rd, mcg_err *err);
void mcg_commit_plan_free(mcg_commit_plan *p);
/*
 * Pushed to out, one line per change of a pool's current target that an
 * installed node cannot take (MCO's unreconcilable sections: disks, RAID,
 * filesystems, LUKS, users other than core, groups, Ignition's own
 * kernelArguments, fips), naming the pool, the MachineConfigs that set the
 * field and the field: "pool P: MachineConfig M: spec.config.storage.disks
 * added (from rendered-P-...): unreconcilable, ...". None for a pool
 * without a target yet (its first config: nodes take those sections as
 * installed). The render, the pre-receive hook and `mcgit plan` refuse
 * such a commit.
 */
void mcg_commit_plan_unreconcilable(const mcg_commit_plan *p, mcg_strv *out);
/*
 * The plan as text lines (docs/operations.md, "Before you push"), pushed to
 * out: per pool "pool P: OLD -> NEW" (or "(unchanged)"), one line per change
 * "  <op> <kind> <key> (<what>): <actions>" (no key for kernelArguments),
 * "  actions: ..." and
 * "  nodes: ...". Warnings are not included.
 */
void mcg_commit_plan_lines(const mcg_commit_plan *p, mcg_strv *out);
/* "plan for <source, 12 digits> (rendered tip: <12 digits>|none)"; caller frees. */
char *mcg_commit_plan_title(const mcg_commit_plan *p);
/* The plan as the `mcgit plan -o json` document (docs/commands.md); new reference. */
json_t *mcg_commit_plan_json(const mcg_commit_plan *p);

#endif
