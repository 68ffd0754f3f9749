/*
 * controller — the reconcile loop: fetch → verify → render → publish →
 * roll out → status.
 *
 * One pass reads the config repo and the cluster, decides with the pure
 * planner (rollout/) which nodes get which target now, writes desiredConfig
 * and the pools' status, and returns. The loop runs passes until SIGTERM,
 * finishing the pass in progress.
 */
#ifndef MCG_CONTROLLER_H
#define MCG_CONTROLLER_H

#include "cluster/cluster.h"
#include "gitops/gitops.h"

typedef struct mcg_controller_opts {
    const char *repo;  /* path of the config repo (a clone/mirror when it has a remote) */
    const char *trust; /* trust root: allowed_signers file */
    const char *remote; /* remote to fetch from, NULL: "origin" when it exists */
} mcg_controller_opts;

typedef struct mcg_pass_result {
    bool refused;        /* a new source commit was refused (verification or render) */
    char refusal[1024];  /* why, one line */
    bool fetch_failed;
    size_t updates;      /* desiredConfig writes made */
    size_t nodes;
} mcg_pass_result;

/*
 * One reconcile pass at time now. Returns 0 when the pass ran (even if a
 * commit was refused: see res->refused), an error when the repo or cluster
 * could not be read at all.
 */
int mcg_controller_pass(mcg_pass_result *res, const mcg_controller_opts *o, mcg_cluster *c,
                        int64_t now, mcg_err *err);

/* Kubernetes-style duration as kubectl prints AGE: 42s, 5m3s, 4h42m, 3d4h, 2y10d. */
void mcg_human_duration(int64_t seconds, char out[32]);

#endif
