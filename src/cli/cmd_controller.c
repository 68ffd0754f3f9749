/*
 * cmd_controller.c — `mcgit controller`: parse the options, make the mirror
 * of a --repo URL, and run the controller's loop (controller/loop.c).
 */
#include "cli/cli.h"
#include "controller/controller.h"
#include "gitops/gitops.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run(int argc, char **argv);

static const mcg_opt controller_opts[] = {
    MCG_OPT_HELP,
    MCG_OPT_VALUE('r', "repo", "R", "the config repo: a clone, or a URL with --mirror"),
    MCG_OPT_TRUST,
    MCG_OPT_CLUSTER,
    MCG_OPT_VALUE('K', "revoked", "K",
                  "a revocation list (OpenSSH KRL or public keys): a\n"
                  "commit by a revoked key or certificate is refused;\n"
                  "F and K are read again on every pass (K '': none)"),
    MCG_OPT_VALUE('R', "remote", "NAME", "the remote to fetch from (default: origin)"),
    MCG_OPT_VALUE('m', "mirror", "DIR", "mirror the URL R into the bare repository DIR"),
    MCG_OPT_FLAG('1', "once",
                 "one pass; exit 1 if a commit was refused, the fetch\n"
                 "failed or another controller holds the Lease"),
    MCG_OPT_VALUE('i', "interval", "SECONDS",
                  "the longest time between passes (default 5): a pass\n"
                  "also starts as soon as a node changes (a watch on\n"
                  "kube, inotify on local:DIR) and, when R has no\n"
                  "remote, as soon as its source branch moves"),
    MCG_OPT_VALUE('k', "keep-configs", "N",
                  "older rendered configs of each pool kept published\n"
                  "besides those in use (default 3; git keeps them all)"),
    MCG_OPT_VALUE('T', "fetch-timeout", "SECONDS",
                  "the longest a fetch may take, however the server\n"
                  "behaves (default 300); then FetchFailed, timed out"),
    MCG_OPT_VALUE('M', "metrics-bind-address", "HOST:PORT",
                  "serve Prometheus metrics at http://HOST:PORT/metrics\n"
                  "(pools, nodes, rollouts, fetch, verify, render; see\n"
                  "docs/operations.md); port 0: any free one"),
    MCG_OPT_VALUE('W', "webhook-token-file", "F",
                  "also accept POST /hooks/git on that listener: a\n"
                  "call carrying the token in F (Authorization:\n"
                  "Bearer, or a forge's X-Gitlab-Token or\n"
                  "X-Hub-Signature-256) starts a pass at once; a\n"
                  "wrong or missing token gets 401. `mcgit hook\n"
                  "install --webhook-url` makes pushes call it"),
    MCG_OPT_VALUE('S', "site", "NAME",
                  "this controller runs site NAME (sites/NAME.yaml):\n"
                  "only the pools its spec.pools names, with its\n"
                  "maxUnavailable and maintenanceWindows in place of\n"
                  "each pool's; after each pass whose status changed,\n"
                  "record it as a signed record (as `mcgit site record`)"),
    MCG_OPT_VALUE('Y', "site-key", "FILE", "with --site: the site's private key"),
    MCG_OPT_SHORT_FLAG('q', "quiet", "less logging on stderr"),
    MCG_OPT_SHORT_FLAG('v', "verbose", "more logging on stderr"),
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_controller = {
    .name = "controller",
    .summary = "reconcile the cluster with the config repo",
    .usage = "usage: mcgit controller --repo R --trust F --cluster C [--revoked K]\n"
             "                        [--remote NAME] [--once] [--interval SECONDS]\n"
             "                        [--keep-configs N] [--fetch-timeout SECONDS] [-q | -v]\n"
             "                        [--metrics-bind-address HOST:PORT [--webhook-token-file F]]\n"
             "                        [--site NAME --site-key FILE]\n"
             "       mcgit controller --repo URL --mirror DIR --trust F --cluster C ...\n"
             "\n"
             "R is a clone of the config repo. A URL (https://, ssh://, file://,\n"
             "user@host:path) is mirrored into the bare repository DIR (created on first\n"
             "use; a DIR that mirrors another URL is refused). For a private remote, put\n"
             "the files of a Flux Git Secret in a directory named by $MCGIT_GIT_CREDENTIALS:\n"
             "identity (or ssh-privatekey) and known_hosts, required, for ssh; username and\n"
             "password, token, or bearerToken, and ca.crt for https (see `mcgit help fetch`).\n"
             "\n"
             "Each pass: fetch the source branch when R has a remote (origin, or --remote);\n"
             "verify every new source commit against the trust root F; render it onto the\n"
             "rendered branch; publish the rendered configs the pools use to the cluster C\n"
             "(local:DIR or kube; without --cluster, $MCGIT_CLUSTER); plan each pool's\n"
             "rollout (by zone, then oldest nodes first, at most maxUnavailable at a time;\n"
             "new nodes first, counted the same; paused pools wait) and write the nodes'\n"
             "desiredConfig and the pools' status. A pool is paused by git (spec.paused)\n"
             "or by an operator\n"
             "(`mcgit pool pause`); `mcgit sync` asks for a pass at once, and the pass\n"
             "records its result as the answer.\n"
             "\n"
             "A refused commit (bad signature, invalid tree) rolls out nowhere, and an\n"
             "unreachable remote stops nothing: the pools keep their last good target and\n"
             "report RenderDegraded (reason RenderFailed or FetchFailed) with the reason.\n"
             "\n"
             "SIGTERM or SIGINT finishes the current pass and exits 0. On a cluster with\n"
             "leader election (kube), only the holder of the Lease acts; identity\n"
             "$MCGIT_IDENTITY, else HOST_PID.\n",
    .run = run,
    .opts = controller_opts,
};

/* --interval: seconds, 0.05 to 86400. */
static bool parse_interval(const char *arg, double *interval)
{
    char *end;
    *interval = strtod(arg, &end);
    return !(end == arg || *end || !(*interval >= 0.05 && *interval <= 86400));
}

/* Which options go together: -1 when they do, else the exit status. */
static int check_usage(const mcg_controller_opts *o, const char *cluster, const char *mirror,
                       const char *metrics_bind, const char *webhook_token, bool extra_args)
{
    if (!o->repo || !o->trust || !cluster || extra_args)
        return mcg_cli_usage_error(
            &mcg_cmd_controller,
            "--repo, --trust and --cluster are required (--cluster: or $MCGIT_CLUSTER)");
    if (webhook_token && !metrics_bind)
        return mcg_cli_usage_error(
            &mcg_cmd_controller,
            "--webhook-token-file needs --metrics-bind-address (its listener)");
    if (!o->site != !o->site_key)
        return mcg_cli_usage_error(&mcg_cmd_controller, "--site and --site-key go together");
    bool url = mcg_gitops_is_url(o->repo);
    if (url && !mirror)
        return mcg_cli_usage_error(&mcg_cmd_controller,
                                   "--repo URL needs --mirror DIR (where to keep the clone)");
    if (!url && mirror)
        return mcg_cli_usage_error(&mcg_cmd_controller, "--mirror goes with --repo URL");
    if (url && o->remote && strcmp(o->remote, "origin") != 0)
        return mcg_cli_usage_error(&mcg_cmd_controller, "a mirror fetches from origin only");
    return -1;
}

/* The command line, as run reads it. */
typedef struct ctl_args {
    mcg_controller_opts o;
    const char *cluster, *mirror, *metrics_bind, *webhook_token;
    bool once;
    double interval;
    uint64_t keep, fetch_timeout;
} ctl_args;

/* An option that takes a number: -1 when it is good, else the exit status. */
static int number_opt(int c, ctl_args *a)
{
    switch (c) {
    case 'i':
        if (!parse_interval(optarg, &a->interval))
            return mcg_cli_usage_error(&mcg_cmd_controller, "bad --interval '%s'", optarg);
        break;
    case 'T':
        if (!mcg_parse_u64(optarg, &a->fetch_timeout) || !a->fetch_timeout ||
            a->fetch_timeout > 86400)
            return mcg_cli_usage_error(&mcg_cmd_controller, "bad --fetch-timeout '%s'", optarg);
        break;
    case 'k':
        if (!mcg_parse_u64(optarg, &a->keep) || a->keep > 1000)
            return mcg_cli_usage_error(&mcg_cmd_controller,
                                       "--keep-configs: expected 0..1000, got '%s'", optarg);
        break;
    default:
        return mcg_cli_usage_error(&mcg_cmd_controller, NULL);
    }
    return -1;
}

/* Parse the options into a: -1 when run goes on, else the exit status. */
static int parse_args(int argc, char **argv, ctl_args *a)
{
    int c, ex, st = -1;
    const mcg_optbind binds[] = {{'r', &a->o.repo, NULL},
                                 {'t', &a->o.trust, NULL},
                                 {'c', &a->cluster, NULL},
                                 {'R', &a->o.remote, NULL},
                                 {'m', &a->mirror, NULL},
                                 {'1', NULL, &a->once},
                                 {'M', &a->metrics_bind, NULL},
                                 {'W', &a->webhook_token, NULL},
                                 {'S', &a->o.site, NULL},
                                 {'Y', &a->o.site_key, NULL},
                                 MCG_BIND_END};
    optind = 1;
    while (st < 0 &&
           (c = mcg_cli_parse_next(&mcg_cmd_controller, ~0u, argc, argv, binds, &ex)) > 0) {
        switch (c) {
        case 'K':
            a->o.revoked = *optarg ? optarg : NULL;
            break;
        case 'q':
            mcg_verbosity = 0;
            break;
        case 'v':
            mcg_verbosity = 2;
            break;
        default:
            st = number_opt(c, a);
        }
    }
    if (st < 0 && c < 0)
        st = ex;
    if (st >= 0)
        return st;
    a->cluster = mcg_cli_cluster(a->cluster);
    return check_usage(&a->o, a->cluster, a->mirror, a->metrics_bind, a->webhook_token,
                       optind != argc);
}

static int run(int argc, char **argv)
{
    ctl_args a = {.interval = 5,
                  .keep = MCG_KEEP_CONFIGS_DEFAULT,
                  .fetch_timeout = MCG_FETCH_TIMEOUT_DEFAULT};
    int status = parse_args(argc, argv, &a);
    if (status >= 0)
        return status;
    mcg_controller_opts o = a.o;
    o.keep_configs = (unsigned)a.keep;
    o.fetch_timeout = (unsigned)a.fetch_timeout;
    mcg_err err = {0};
    if (mcg_gitops_is_url(o.repo)) {
        if (mcg_gitops_mirror(o.repo, a.mirror, &err) != 0) {
            mcg_cli_error("controller", "%s", err.msg);
            return MCG_EXIT_FAIL;
        }
        o.repo = a.mirror;
        o.remote = "origin";
    }
    mcg_controller_run_opts ro = {.pass = o,
                                  .cluster = a.cluster,
                                  .interval = a.interval,
                                  .once = a.once,
                                  .verbosity = mcg_verbosity,
                                  .metrics_bind = a.metrics_bind,
                                  .webhook_token = a.webhook_token};
    bool failed = false;
    if (mcg_controller_run(&ro, &failed, &err) != 0) {
        mcg_cli_error("controller", "%s", err.msg);
        return MCG_EXIT_FAIL;
    }
    return failed ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
