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

/* Older rendered configs kept published per pool by default (beyond those in use). */
#define MCG_KEEP_CONFIGS_DEFAULT 3

typedef struct mcg_controller_opts {
    const char *repo;  /* path of the config repo (a clone/mirror when it has a remote) */
    const char *trust; /* trust root: allowed_signers file */
    const char *revoked; /* revocation list (KRL or key list) attached to it, NULL: none */
    const char *remote; /* remote to fetch from, NULL: "origin" when it exists */
    /* How many older rendered configs of each pool stay published besides
     * the ones nodes and pools use: the newest ones on the rendered branch. */
    unsigned keep_configs;
} mcg_controller_opts;

typedef struct mcg_pass_result {
    bool refused;           /* a new source commit was refused (verification or render) */
    char refusal[1024];     /* why, one line */
    bool fetch_failed;      /* the remote could not be fetched; the pass went on without it */
    char fetch_error[1024]; /* why, one line, credentials in URLs removed */
    size_t updates;         /* desiredConfig writes made */
    size_t nodes;
    size_t writes;          /* pool, config and policy objects written */
    mcg_strv unmanaged;     /* "node: reason" for nodes no pool manages because of a conflict */
} mcg_pass_result;

/*
 * One reconcile pass at time now. Returns 0 when the pass ran (even if a
 * commit was refused or the fetch failed: see res), an error when the repo
 * or cluster could not be read at all. A fetch failure or a refused commit
 * leaves the pools on their last good target, and every pool's
 * RenderDegraded condition (reason FetchFailed or RenderFailed) says why.
 * res is always initialised; release it with mcg_pass_result_clear().
 */
int mcg_controller_pass(mcg_pass_result *res, const mcg_controller_opts *o, mcg_cluster *c,
                        int64_t now, mcg_err *err);
void mcg_pass_result_clear(mcg_pass_result *res);

/*
 * Kubernetes-style duration as kubectl prints AGE (apimachinery's
 * duration.HumanDuration): 42s, 5m3s, 4h42m, 3d4h, 2y10d; "0s" for -1 s
 * (clock skew), "<invalid>" below that.
 */
void mcg_human_duration(int64_t seconds, char out[32]);

/*
 * Copy src to out (size n), replacing the user-information part of any URL
 * ("user:token" in https://user:token@host becomes "***"), so error messages from
 * fetches never publish credentials into pool status.
 */
void mcg_redact_urls(char *out, size_t n, const char *src);

#endif
