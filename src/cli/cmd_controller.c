/*
 * cmd_controller.c — `mcgit controller`: run the reconcile loop.
 */
#include "cli/cli.h"
#include "controller/controller.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int run(int argc, char **argv);

const mcg_cmd mcg_cmd_controller = {
    "controller",
    "reconcile the cluster with the config repo",
    "usage: mcgit controller --repo R --trust F --cluster C [--remote NAME] [--once]\n"
    "                        [--interval SECONDS]\n"
    "\n"
    "Each pass: fetch the source branch when R has a remote (origin, or --remote;\n"
    "unreachable: keep the last good state and say so); verify every new source\n"
    "commit against the trust root F; render it onto the rendered branch; publish\n"
    "the rendered configs the pools use to the cluster C (local:DIR); plan each\n"
    "pool's rollout (oldest nodes first by zone, at most maxUnavailable at a\n"
    "time; new nodes at once; paused pools wait) and write the nodes'\n"
    "desiredConfig and the pools' status. A refused commit rolls out nowhere:\n"
    "the pools keep their last good target and report RenderDegraded.\n"
    "\n"
    "  --once              one pass; exit 1 if a commit was refused\n"
    "  --interval SECONDS  time between passes (default 5)\n"
    "SIGTERM or SIGINT finishes the current pass and exits.\n",
    run,
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"repo", required_argument, 0, 'r'},
                                         {"trust", required_argument, 0, 't'},
                                         {"cluster", required_argument, 0, 'c'},
                                         {"remote", required_argument, 0, 'R'},
                                         {"once", no_argument, 0, '1'},
                                         {"interval", required_argument, 0, 'i'},
                                         {0, 0, 0, 0}};
    mcg_controller_opts o = {0};
    const char *cluster = NULL;
    bool once = false;
    double interval = 5;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'h': return mcg_cli_help(&mcg_cmd_controller);
        case 'r': o.repo = optarg; break;
        case 't': o.trust = optarg; break;
        case 'c': cluster = optarg; break;
        case 'R': o.remote = optarg; break;
        case '1': once = true; break;
        case 'i': {
            char *end;
            interval = strtod(optarg, &end);
            if (*end || interval < 0.05 || interval > 86400)
                return mcg_cli_usage_error(&mcg_cmd_controller, "bad --interval '%s'", optarg);
            break;
        }
        default: return mcg_cli_usage_error(&mcg_cmd_controller, NULL);
        }
    }
    if (!o.repo || !o.trust || !cluster || optind != argc)
        return mcg_cli_usage_error(&mcg_cmd_controller, "--repo, --trust and --cluster are required");
    mcg_err err = {0};
    mcg_cluster *cl = NULL;
    if (mcg_cluster_open(&cl, cluster, &err) != 0) {
        mcg_cli_error("controller", "%s", err.msg);
        return MCG_EXIT_FAIL;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    int status = MCG_EXIT_OK;
    char last[1024] = "";
    while (!stop) {
        mcg_pass_result res;
        mcg_err perr = {0};
        int rc = mcg_controller_pass(&res, &o, cl, (int64_t)time(NULL), &perr);
        char msg[1100] = "";
        if (rc)
            snprintf(msg, sizeof(msg), "pass failed: %s", perr.msg);
        else if (res.refused || res.fetch_failed)
            snprintf(msg, sizeof(msg), "%s", res.refusal);
        if (msg[0] && strcmp(msg, last) != 0)
            mcg_cli_error("controller", "%s", msg);
        snprintf(last, sizeof(last), "%s", msg);
        if (!rc && res.updates && mcg_verbosity > 0)
            fprintf(stderr, "mcgit controller: %zu node%s given a new desiredConfig\n", res.updates,
                    res.updates == 1 ? "" : "s");
        if (once) {
            status = (rc || res.refused) ? MCG_EXIT_FAIL : MCG_EXIT_OK;
            break;
        }
        struct timespec ts = {(time_t)interval, (long)((interval - (double)(time_t)interval) * 1e9)};
        while (!stop && nanosleep(&ts, &ts) != 0)
            ;
    }
    mcg_cluster_free(cl);
    return status;
}
