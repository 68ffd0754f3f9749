/*
 * demo — `mcgit demo`: the whole loop on one machine, told as it happens.
 *
 * A config repo with pools master, worker and infra, a throwaway ed25519
 * signing key and a local cluster of seven nodes are made under a
 * directory; the controller and one agent per node run as processes of the
 * mcgit binary; then five chapters — the first rollout, a signed change
 * rolling across the workers, drift on one node, an unsigned commit
 * refused, a rollback — are narrated on standard output, each waiting on
 * the cluster for what it shows. It drives the product's own modules
 * (gitops, cluster) and commands; nothing of it is part of them.
 */
#ifndef MCG_DEMO_H
#define MCG_DEMO_H

#include "cluster/cluster.h"
#include "util/util.h"

#include <stdbool.h>

typedef struct mcg_demo_opts {
    const char *dir;  /* an existing directory without a demo in it (absolute) */
    const char *self; /* the mcgit binary the controller and the agents run as */
    bool keep;        /* the controller and agents outlive the demo (their PIDs are printed) */
    /* The tables `mcgit status` prints (pools; nodes -o wide), into out. */
    int (*pools_table)(mcg_cluster *cl, const char *format, mcg_buf *out, mcg_err *err);
    int (*nodes_table)(mcg_cluster *cl, const char *format, mcg_buf *out, mcg_err *err);
} mcg_demo_opts;

/*
 * Run the demo in o->dir, printing its story on standard output. 0 when it
 * went through; otherwise the error that stopped it in err (the logs of the
 * controller and agents are in o->dir/logs). Unless o->keep, or on failure,
 * every process it started has been stopped when it returns; a demo that
 * dies takes them with it.
 */
int mcg_demo_run(const mcg_demo_opts *o, mcg_err *err);

#endif
