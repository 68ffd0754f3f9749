/*
 * cmd_controller.c — `mcgit controller`: run the reconcile loop.
 *
 * SIGTERM and SIGINT are blocked while a pass runs and only let in while the
 * loop sleeps (ppoll with the old mask), so a pass is never interrupted
 * half-way (no EINTR inside libgit2 or the cluster store) and a signal that
 * arrives during a pass ends the loop as soon as the pass is done.
 */
#include "cli/cli.h"
#include "controller/controller.h"
#include "gitops/gitops.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
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
    "usage: mcgit controller --repo R --trust F --cluster C [--revoked K]\n"
    "                        [--remote NAME] [--once] [--interval SECONDS]\n"
    "                        [--keep-configs N] [-q | -v]\n"
    "       mcgit controller --repo URL --mirror DIR --trust F --cluster C ...\n"
    "\n"
    "R is a clone of the config repo. A URL (https://, ssh://, file://,\n"
    "user@host:path) is mirrored into the bare repository DIR (created on first\n"
    "use; a DIR that mirrors another URL is refused). For a private remote, put\n"
    "the files username and password (https) or ssh-privatekey (ssh) in a\n"
    "directory named by $MCGIT_GIT_CREDENTIALS.\n"
    "\n"
    "Each pass: fetch the source branch when R has a remote (origin, or --remote);\n"
    "verify every new source commit against the trust root F; render it onto the\n"
    "rendered branch; publish the rendered configs the pools use to the cluster C\n"
    "(local:DIR or kube); plan each pool's rollout (by zone, then oldest nodes\n"
    "first, at most maxUnavailable at a time; new nodes at once; paused pools\n"
    "wait) and write the nodes' desiredConfig and the pools' status.\n"
    "\n"
    "A refused commit (bad signature, invalid tree) rolls out nowhere, and an\n"
    "unreachable remote stops nothing: the pools keep their last good target and\n"
    "report RenderDegraded (reason RenderFailed or FetchFailed) with the reason.\n"
    "\n"
    "  --revoked K         a revocation list (OpenSSH KRL or public keys): a\n"
    "                      commit by a revoked key or certificate is refused;\n"
    "                      F and K are read again on every pass (K '': none)\n"
    "  --once              one pass; exit 1 if a commit was refused, the fetch\n"
    "                      failed or another controller holds the Lease\n"
    "  --interval SECONDS  time between passes (default 5)\n"
    "  --keep-configs N    older rendered configs of each pool kept published\n"
    "                      besides those in use (default 3; git keeps them all)\n"
    "  -q, -v              less or more logging on stderr\n"
    "SIGTERM or SIGINT finishes the current pass and exits 0. On a cluster with\n"
    "leader election (kube), only the holder of the Lease acts; identity\n"
    "$MCGIT_IDENTITY, else HOST_PID.\n",
    run,
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

/* Print the lines of now that were not in before (both sorted). */
static void log_new(const char *prefix, const mcg_strv *now, const mcg_strv *before)
{
    for (size_t i = 0; i < now->n; i++)
        if (!mcg_strv_contains(before, now->v[i]))
            mcg_cli_error("controller", "%s%s", prefix, now->v[i]);
}

static void strv_copy(mcg_strv *dst, const mcg_strv *src)
{
    mcg_strv_free(dst);
    for (size_t i = 0; i < src->n; i++)
        mcg_strv_push(dst, src->v[i]);
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"repo", required_argument, 0, 'r'},
                                         {"trust", required_argument, 0, 't'},
                                         {"revoked", required_argument, 0, 'K'},
                                         {"cluster", required_argument, 0, 'c'},
                                         {"remote", required_argument, 0, 'R'},
                                         {"once", no_argument, 0, '1'},
                                         {"interval", required_argument, 0, 'i'},
                                         {"keep-configs", required_argument, 0, 'k'},
                                         {"mirror", required_argument, 0, 'm'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"verbose", no_argument, 0, 'v'},
                                         {0, 0, 0, 0}};
    mcg_controller_opts o = {0};
    const char *cluster = NULL, *mirror = NULL;
    bool once = false;
    double interval = 5;
    uint64_t keep = MCG_KEEP_CONFIGS_DEFAULT;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hqv", opts, NULL)) != -1) {
        switch (c) {
        case 'h': return mcg_cli_help(&mcg_cmd_controller);
        case 'r': o.repo = optarg; break;
        case 't': o.trust = optarg; break;
        case 'K': o.revoked = *optarg ? optarg : NULL; break;
        case 'c': cluster = optarg; break;
        case 'R': o.remote = optarg; break;
        case 'm': mirror = optarg; break;
        case '1': once = true; break;
        case 'q': mcg_verbosity = 0; break;
        case 'v': mcg_verbosity = 2; break;
        case 'i': {
            char *end;
            interval = strtod(optarg, &end);
            if (end == optarg || *end || !(interval >= 0.05 && interval <= 86400))
                return mcg_cli_usage_error(&mcg_cmd_controller, "bad --interval '%s'", optarg);
            break;
        }
        case 'k':
            if (!mcg_parse_u64(optarg, &keep) || keep > 1000)
                return mcg_cli_usage_error(&mcg_cmd_controller,
                                           "--keep-configs: expected 0..1000, got '%s'", optarg);
            break;
        default: return mcg_cli_usage_error(&mcg_cmd_controller, NULL);
        }
    }
    if (!o.repo || !o.trust || !cluster || optind != argc)
        return mcg_cli_usage_error(&mcg_cmd_controller, "--repo, --trust and --cluster are required");
    o.keep_configs = (unsigned)keep;
    bool url = mcg_gitops_is_url(o.repo);
    if (url && !mirror)
        return mcg_cli_usage_error(&mcg_cmd_controller,
                                   "--repo URL needs --mirror DIR (where to keep the clone)");
    if (!url && mirror)
        return mcg_cli_usage_error(&mcg_cmd_controller, "--mirror goes with --repo URL");
    if (url && o.remote && strcmp(o.remote, "origin") != 0)
        return mcg_cli_usage_error(&mcg_cmd_controller, "a mirror fetches from origin only");
    mcg_err err = {0};
    if (url) {
        if (mcg_gitops_mirror(o.repo, mirror, &err) != 0) {
            mcg_cli_error("controller", "%s", err.msg);
            return MCG_EXIT_FAIL;
        }
        o.repo = mirror;
        o.remote = "origin";
    }
    char identity[256];
    const char *id = getenv("MCGIT_IDENTITY");
    if (id && *id)
        snprintf(identity, sizeof(identity), "%s", id);
    else {
        /* host and pid: two replicas on one host never share an identity */
        char host[200] = "";
        if (gethostname(host, sizeof(host) - 1) != 0 || !host[0])
            snprintf(host, sizeof(host), "mcgit-controller");
        snprintf(identity, sizeof(identity), "%s_%ld", host, (long)getpid());
    }
    mcg_cluster *cl = NULL;
    if (mcg_cluster_open(&cl, cluster, &err) != 0) {
        mcg_cli_error("controller", "%s", err.msg);
        return MCG_EXIT_FAIL;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &old);
    sigset_t wait_mask = old; /* while sleeping: the caller's mask without our two */
    sigdelset(&wait_mask, SIGTERM);
    sigdelset(&wait_mask, SIGINT);

    int status = MCG_EXIT_OK;
    char last[2200] = "";
    mcg_strv last_unmanaged = {0};
    while (!stop) {
        mcg_pass_result res;
        memset(&res, 0, sizeof(res));
        mcg_err perr = {0};
        bool leader = false;
        int rc = mcg_cluster_lead(cl, identity, &leader, &perr);
        if (!rc && !leader)
            rc = mcg_err_set(&perr, MCG_ECONFLICT, "not the leader (identity %s): waiting",
                             identity);
        else if (rc)
            mcg_err_prefix(&perr, "leader election");
        if (!rc)
            rc = mcg_controller_pass(&res, &o, cl, (int64_t)time(NULL), &perr);
        char msg[2200] = "";
        if (rc == MCG_ECONFLICT && !leader)
            snprintf(msg, sizeof(msg), "%s", perr.msg);
        else if (rc)
            snprintf(msg, sizeof(msg), "pass failed: %s", perr.msg);
        else if (res.refused || res.fetch_failed)
            snprintf(msg, sizeof(msg), "%s%s%s", res.fetch_error,
                     res.fetch_failed && res.refused ? "; " : "", res.refusal);
        /* say each problem once, and once more when it is over */
        if (msg[0] && strcmp(msg, last) != 0)
            mcg_cli_error("controller", "%s", msg);
        else if (!msg[0] && last[0] && mcg_verbosity > 0)
            fprintf(stderr, "mcgit controller: recovered: the last pass went through\n");
        snprintf(last, sizeof(last), "%s", msg);
        if (!rc) {
            log_new("node unmanaged: ", &res.unmanaged, &last_unmanaged);
            strv_copy(&last_unmanaged, &res.unmanaged);
        }
        if (!rc && res.updates && mcg_verbosity > 0)
            fprintf(stderr, "mcgit controller: %zu node%s given a new desiredConfig\n", res.updates,
                    res.updates == 1 ? "" : "s");
        if (!rc && mcg_verbosity > 1)
            fprintf(stderr, "mcgit controller: pass over %zu nodes: %zu desiredConfig and %zu "
                            "other writes\n",
                    res.nodes, res.updates, res.writes);
        bool failed = rc || res.refused || res.fetch_failed;
        mcg_pass_result_clear(&res);
        if (once) {
            status = failed ? MCG_EXIT_FAIL : MCG_EXIT_OK;
            break;
        }
        if (leader && !rc && mcg_cluster_watches(cl)) {
            /* Watch-driven: wake as soon as a node changes (an agent finished,
             * a node joined), at the latest after the interval for new
             * commits. Signals are let in only while waiting, and the stop
             * flag is lent to the backend only here, so a pass always runs to
             * its end. */
            /* In slices, renewing the Lease between them (mcg_cluster_lead
             * sends nothing while it is fresh), so an idle leader stays the
             * leader instead of letting a standby take over every interval. */
            long left = (long)(interval * 1000);
            while (left > 0 && !stop) {
                long slice = left < 4000 ? left : 4000;
                mcg_err werr = {0};
                cl->stop = &stop;
                sigprocmask(SIG_SETMASK, &wait_mask, NULL);
                int wrc = mcg_cluster_wait_change(cl, NULL, slice, &werr);
                sigprocmask(SIG_BLOCK, &block, NULL);
                cl->stop = NULL;
                if (wrc < 0 && mcg_verbosity > 1)
                    fprintf(stderr, "mcgit controller: watch: %s\n", werr.msg);
                if (wrc == 1)
                    break; /* a node changed: pass now */
                left -= slice;
                bool still = false;
                mcg_err lerr = {0};
                if (left > 0 && (mcg_cluster_lead(cl, identity, &still, &lerr) != 0 || !still))
                    break; /* lost it: the top of the loop says so */
            }
            continue;
        }
        struct timespec ts = {(time_t)interval, (long)((interval - (double)(time_t)interval) * 1e9)};
        struct timespec end;
        clock_gettime(CLOCK_MONOTONIC, &end);
        end.tv_sec += ts.tv_sec;
        end.tv_nsec += ts.tv_nsec;
        if (end.tv_nsec >= 1000000000L) {
            end.tv_sec++;
            end.tv_nsec -= 1000000000L;
        }
        /* a pending SIGTERM is delivered as soon as ppoll unblocks it */
        while (!stop) {
            struct timespec now, left;
            clock_gettime(CLOCK_MONOTONIC, &now);
            left.tv_sec = end.tv_sec - now.tv_sec;
            left.tv_nsec = end.tv_nsec - now.tv_nsec;
            if (left.tv_nsec < 0) {
                left.tv_sec--;
                left.tv_nsec += 1000000000L;
            }
            if (left.tv_sec < 0)
                break;
            if (ppoll(NULL, 0, &left, &wait_mask) == 0 || errno != EINTR)
                break;
        }
    }
    mcg_strv_free(&last_unmanaged);
    mcg_cluster_free(cl);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return status;
}
