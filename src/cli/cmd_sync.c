/*
 * cmd_sync.c — `mcgit sync`: ask the controller for a pass now, and wait
 * for its answer. The request is a counter on the cluster side (not HTTP):
 * the controller reads it before each pass and records the result after.
 */
#include "cli/cli.h"
#include "cluster/cluster.h"
#include "osenv/osenv.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int run(int argc, char **argv);
static const mcg_opt sync_opts[];

const mcg_cmd mcg_cmd_sync = {
    .name = "sync",
    .summary = "ask the controller for a pass now, and wait for its result",
    .usage = "usage: mcgit sync [--cluster C] [--now POOL] [--wait] [--timeout SECONDS]\n"
             "\n"
             "Ask the controller for a reconcile pass now rather than at the end of its\n"
             "--interval: a request on the cluster side that the controller watches (local:DIR:\n"
             "DIR/sync.json, noticed at once; kube: annotations of the MachineConfiguration\n"
             "`cluster`, noticed within 4 s). The controller answers each request after the\n"
             "pass it started, with that pass's result. Requests made while a pass runs are\n"
             "answered by the next one, which starts at once.\n"
             "\n"
             "--now POOL is the operator's override of POOL's maintenance windows\n"
             "(spec.maintenanceWindows): the pool's current target rolls out at once,\n"
             "outside its windows, and the pool's Updating condition says it was asked\n"
             "for (recorded on the pool object as machineconfiguration.mcgit.io/sync-now;\n"
             "a later target waits for its window again).\n"
             "\n"
             "Without --cluster, C is $MCGIT_CLUSTER.\n",
    .run = run,
    .opts = sync_opts,
};

int mcg_cli_sync_wait(const char *cmd, mcg_cluster *cl, uint64_t gen, double timeout)
{
    struct timespec start, now;
    mcg_mono_now(&start);
    bool local = !strncmp(mcg_cluster_spec(cl), "local:", 6);
    for (;;) {
        mcg_sync_state st;
        mcg_err err = {0};
        if (mcg_cluster_get_sync(cl, &st, &err) != 0) {
            mcg_cli_error(cmd, "%s", err.msg);
            return MCG_EXIT_FAIL;
        }
        if (st.handled >= gen) {
            if (st.failed) {
                mcg_cli_error(cmd, "sync #%llu answered at %s: %s", (unsigned long long)gen,
                              st.handled_at, st.result);
                return MCG_EXIT_FAIL;
            }
            printf("sync #%llu answered at %s: %s\n", (unsigned long long)gen, st.handled_at,
                   st.result);
            return MCG_EXIT_OK;
        }
        mcg_mono_now(&now);
        double gone = (double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
        if (gone >= timeout) {
            mcg_cli_error(cmd,
                          "no controller answered sync #%llu within %g s (is a controller running "
                          "against %s, and is it the leader?)",
                          (unsigned long long)gen, timeout, mcg_cluster_spec(cl));
            return MCG_EXIT_FAIL;
        }
        double slice = local ? 0.1 : 0.5;
        if (gone + slice > timeout)
            slice = timeout - gone;
        struct timespec ts = {(time_t)slice, (long)((slice - (double)(time_t)slice) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* Parse --timeout SECONDS (0..86400); -1 when arg is not one. */
static int mcg_cli_parse_timeout(const char *arg, double *out)
{
    char *end = NULL;
    double v = strtod(arg, &end);
    if (end == arg || *end || !(v >= 0 && v <= 86400))
        return -1;
    *out = v;
    return 0;
}

/* The wait options, which sync's table has too. */
#define WAIT_OPT_WAIT                                                                              \
    MCG_OPT_FLAG('w', "wait",                                                                      \
                 "wait for the answer and print it; exit 1 when the\n"                             \
                 "pass failed, was refused or could not fetch")
#define WAIT_OPT_TIMEOUT                                                                           \
    MCG_OPT_VALUE('t', "timeout", "SECONDS", "how long --wait waits (default 60); past it,\nexit 1")

const mcg_opt mcg_cli_wait_opts[] = {
    MCG_OPT_HELP, MCG_OPT_CLUSTER, WAIT_OPT_WAIT, WAIT_OPT_TIMEOUT, MCG_OPT_END,
};

/* sync's: the wait options and --now POOL. */
static const mcg_opt sync_opts[] = {
    MCG_OPT_HELP,
    MCG_OPT_CLUSTER,
    MCG_OPT_VALUE('n', "now", "POOL",
                  "roll POOL's current target out now, outside its\nmaintenance windows"),
    WAIT_OPT_WAIT,
    WAIT_OPT_TIMEOUT,
    MCG_OPT_END,
};

int mcg_cli_wait_args_parse(const mcg_cmd *cmd, int argc, char **argv, mcg_cli_wait_args *out)
{
    const char *cluster = NULL;
    int c, ex;
    out->wait = false;
    out->timeout = 60;
    out->now = NULL;
    const mcg_optbind binds[] = {
        {'c', &cluster, NULL}, {'w', NULL, &out->wait}, {'n', &out->now, NULL}, MCG_BIND_END};
    optind = 1;
    while ((c = mcg_cli_parse_next(cmd, ~0u, argc, argv, binds, &ex)) > 0)
        if (mcg_cli_parse_timeout(optarg, &out->timeout) != 0) /* 't' */
            return mcg_cli_usage_error(cmd, "bad --timeout '%s'", optarg);
    if (c < 0)
        return ex;
    out->cluster = mcg_cli_cluster(cluster);
    return -1;
}

/* --now POOL: the override, for the pool's current target, on its object. */
static int sync_now(mcg_cluster *cl, const char *pool, mcg_err *err)
{
    json_t *items = NULL, *p;
    size_t i;
    int rc = mcg_cluster_list_pools(cl, &items, err);
    const char *target = NULL;
    bool found = false;
    json_array_foreach(items, i, p) {
        const char *n = json_string_value(json_object_get(json_object_get(p, "metadata"), "name"));
        if (n && !strcmp(n, pool)) {
            found = true;
            target = json_string_value(json_object_get(
                json_object_get(json_object_get(p, "spec"), "configuration"), "name"));
        }
    }
    if (!rc && !found)
        rc =
            mcg_err_set(err, MCG_ENOTFOUND, "no pool '%s' (`mcgit status pools` lists them)", pool);
    else if (!rc && !target)
        rc = mcg_err_set(err, MCG_ENOTFOUND, "pool %s has no target yet to roll out", pool);
    /* the override names a config the cluster holds, never one to come */
    char *spec = NULL;
    size_t len = 0;
    if (!rc && mcg_cluster_get_config(cl, target, &spec, &len, NULL) != 0)
        rc = mcg_err_set(err, MCG_ENOTFOUND,
                         "pool %s: its target %s is not published yet; nothing to roll out now",
                         pool, target);
    free(spec);
    if (!rc)
        rc = mcg_cluster_annotate_pool(cl, pool, MCG_ANN_SYNC_NOW, target, err);
    if (!rc)
        printf("pool %s: %s rolls out now, outside its maintenance windows (an operator's "
               "override)\n",
               pool, target);
    json_decref(items);
    return rc;
}

static int run(int argc, char **argv)
{
    mcg_cli_wait_args a;
    int parsed = mcg_cli_wait_args_parse(&mcg_cmd_sync, argc, argv, &a);
    if (parsed >= 0)
        return parsed;
    if (optind != argc)
        return mcg_cli_usage_error(&mcg_cmd_sync, "unexpected argument '%s'", argv[optind]);
    if (!a.cluster)
        return mcg_cli_usage_error(&mcg_cmd_sync, "--cluster is required (or $MCGIT_CLUSTER)");
    const char *cluster = a.cluster;
    bool wait = a.wait;
    double timeout = a.timeout;
    mcg_err err = {0};
    mcg_cluster *cl = NULL;
    uint64_t gen = 0;
    int rc = mcg_cluster_open(&cl, cluster, &err);
    if (!rc && a.now)
        rc = sync_now(cl, a.now, &err);
    if (!rc)
        rc = mcg_cluster_request_sync(cl, &gen, &err);
    int ex = MCG_EXIT_OK;
    if (rc) {
        mcg_cli_error("sync", "%s", err.msg);
        ex = MCG_EXIT_FAIL;
    } else if (wait) {
        mcg_cli_info("sync #%llu requested; waiting for the controller's pass",
                     (unsigned long long)gen);
        ex = mcg_cli_sync_wait("sync", cl, gen, timeout);
    } else {
        printf("sync #%llu requested: the controller passes at once (`mcgit sync --wait` waits "
               "for its result)\n",
               (unsigned long long)gen);
    }
    mcg_cluster_free(cl);
    return ex;
}
