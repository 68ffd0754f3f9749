/*
 * controller — the reconcile loop: fetch → verify → render → publish →
 * roll out → status.
 *
 * One pass (controller.c) reads the config repo and the cluster, decides
 * with the pure planner (rollout/) which nodes get which target now, writes
 * desiredConfig and the pools' status, and returns. The loop (loop.c) runs
 * passes until SIGTERM, finishing the pass in progress.
 */
#ifndef MCG_CONTROLLER_H
#define MCG_CONTROLLER_H

#include "cluster/cluster.h"
#include "gitops/gitops.h"
#include "metrics/metrics.h"

/* Older rendered configs kept published per pool by default (beyond those in use). */
#define MCG_KEEP_CONFIGS_DEFAULT 3

typedef struct mcg_controller_opts {
    const char *repo;    /* path of the config repo (a clone/mirror when it has a remote) */
    const char *trust;   /* trust root: allowed_signers file */
    const char *revoked; /* revocation list (KRL or key list) attached to it, NULL: none */
    const char *remote;  /* remote to fetch from, NULL: "origin" when it exists */
    /* How many older rendered configs of each pool stay published besides
     * the ones nodes and pools use: the newest ones on the rendered branch. */
    unsigned keep_configs;
    /* Seconds a fetch may talk to the remote; 0: MCG_FETCH_TIMEOUT_DEFAULT. */
    unsigned fetch_timeout;
    /* Where a pass records what it did (mcg_controller_metrics_declare'd);
     * NULL: nowhere. */
    mcg_metrics *metrics;
    /* A site's controller (docs/sites.md): after each pass, its cluster's
     * status recorded as a signed record on refs/mcgit/status/<site>
     * (mcg_site_record) when it changed. NULL: none. */
    const char *site, *site_key;
} mcg_controller_opts;

typedef struct mcg_pass_result {
    bool refused;           /* a new source commit was refused (verification or render) */
    char refusal[1024];     /* why, one line */
    bool fetch_failed;      /* the remote could not be fetched; the pass went on without it */
    char fetch_error[1024]; /* why, one line, credentials in URLs removed */
    size_t updates;         /* desiredConfig writes made */
    size_t nodes;
    size_t writes;         /* pool, config and policy objects written */
    mcg_strv unmanaged;    /* "node: reason" for nodes no pool manages because of a conflict */
    mcg_strv targeted;     /* "node rendered-config" for each desiredConfig written */
    mcg_strv overrides;    /* "pool rendered-config": rolling out outside its maintenance
                              windows on an operator's `mcgit sync --now` */
    char event_error[512]; /* the first Kubernetes Event refused in this pass, "" none */
    char stale[1024];      /* SourceStale: the newest verified source is older than
                              maxSourceAge (every pool carries the condition); "" fresh */
    char site_record[41];  /* the status record this pass made (opts site), "" none */
    char site_error[512];  /* why none could be made, "" when it could */
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

/* The controller daemon (`mcgit controller`). */
typedef struct mcg_controller_run_opts {
    mcg_controller_opts pass; /* what each pass does */
    const char *cluster;      /* "local:DIR", "kube" or "kube:KUBECONFIG" */
    const char *identity;     /* leader election identity; NULL: the default */
    double interval;          /* seconds between passes, at most (0.05..86400) */
    bool once;                /* one pass, then return */
    int verbosity;            /* 0 quiet, 1 normal, 2 verbose; logs go to stderr */
    /* --metrics-bind-address: serve /metrics (and the webhook) there; NULL: not at all */
    const char *metrics_bind;
    /* --webhook-token-file: POST /hooks/git with this token wakes the loop;
     * NULL: no webhook (needs metrics_bind) */
    const char *webhook_token;
} mcg_controller_run_opts;

/*
 * Open the cluster and run passes until SIGTERM or SIGINT (the pass in
 * progress finishes first; the handlers are installed for the run and the
 * signal mask is restored after it), or one pass with o->once. Only the
 * holder of the leader lease acts. Problems of a pass are logged to stderr
 * (once each, "recovered" when over), not returned: the next pass retries.
 * Returns an error (err set, nothing logged) only when the loop could not
 * start; *pass_failed says whether the --once pass failed, was refused, or
 * could not fetch, or this replica was not the leader.
 */
int mcg_controller_run(const mcg_controller_run_opts *o, bool *pass_failed, mcg_err *err);

/*
 * Declare the controller's metric families in m (docs/operations.md,
 * "Metrics"): pools, nodes, rollouts, fetch, verify and render.
 */
int mcg_controller_metrics_declare(mcg_metrics *m, mcg_err *err);

/* The default leader election identity: $MCGIT_IDENTITY, else HOST_PID
 * (two replicas on one host never share one). */
void mcg_controller_default_identity(char *out, size_t n);

/*
 * Copy src to out (size n), replacing the user-information part of any URL
 * ("user:token" in https://user:token@host becomes "***"), so error messages from
 * fetches never publish credentials into pool status. An ssh:// URL's user
 * name alone (ssh://git@host) is no secret and stays.
 */
void mcg_controller_redact_urls(char *out, size_t n, const char *src);

#endif
