/*
 * cmd_agent.c — `mcgit agent`: the node agent. Applies the node's desired
 * rendered config under a root directory, reports Done / Working /
 * Degraded on the node, and watches for drift. See docs/agent.md.
 */
#include "agent/agent.h"
#include "cli/cli.h"
#include "osenv/osenv.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run(int argc, char **argv);

static const mcg_opt agent_opts[] = {
    MCG_OPT_HELP,
    MCG_OPT_VALUE('n', "node", "N", "the node to reconcile"),
    MCG_OPT_CLUSTER,
    MCG_OPT_VALUE('r', "root", "DIR",
                  "filesystem to manage (default: the cluster's root\n"
                  "for the node, DIR/roots/N for local:DIR; `--root /`\n"
                  "is the host)"),
    MCG_OPT_VALUE('s', "state-dir", "DIR",
                  "journal, backups, current config\n"
                  "(default <root>/var/lib/mcgit)"),
    MCG_OPT_FLAG('L', "live",
                 "the root is the host's: run systemctl actions and\n"
                 "reboots (implied by --root /)"),
    MCG_OPT_FLAG('1', "once", "one pass; exit 0 when Done, 1 when Degraded"),
    MCG_OPT_FLAG('P', "print-node-key",
                 "print the node key's public line (made at the first\n"
                 "start, <state>/node.key) and exit: pin it with `mcgit\n"
                 "node bind --node-key`. Give the agent's own --root\n"
                 "(`/` for the service) and --state-dir: another state\n"
                 "directory holds another key"),
    MCG_OPT_VALUE('i', "interval", "SECONDS", "time between passes (default 30)"),
    MCG_OPT_FLAG('f', "force", "re-apply the whole config once, over drift (no reboot of its own)"),
    MCG_OPT_VALUE('R', "reboot-command", "CMD",
                  "how to reboot (default `systemctl reboot` when\n"
                  "live; not live: run only when given, a Reboot\n"
                  "counts as done once it exits 0)"),
    MCG_OPT_VALUE('S', "systemctl", "CMD",
                  "systemctl to run when live (e.g. `chroot /rootfs\n"
                  "systemctl`); not live: a pool's unit health checks\n"
                  "run only through it"),
    MCG_OPT_VALUE('X', "host-exec", "PREFIX",
                  "run rpm-ostree, bootc, grubby, kernel-install and\n"
                  "update-grub as `PREFIX CMD ARGS` (e.g. `chroot\n"
                  "/rootfs`), and a pool's command health checks; not\n"
                  "live: they run only when this is given"),
    MCG_OPT_VALUE('M', "metrics-bind-address", "HOST:PORT",
                  "serve Prometheus metrics at http://HOST:PORT/metrics\n"
                  "(passes, node state, drift detections, applies,\n"
                  "reboots; see docs/operations.md); port 0: any free one"),
    MCG_OPT_SHORT_FLAG('v', "verbose", "more logging on stderr"),
    MCG_OPT_SHORT_FLAG('q', "quiet", "less logging on stderr"),
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_agent = {
    .name = "agent",
    .summary = "apply a node's rendered config, report its state, detect drift",
    .usage =
        "usage: mcgit agent --node N --cluster C [--root DIR] [--state-dir DIR] [--live]\n"
        "                   [--once] [--interval SECONDS] [--force]\n"
        "                   [--reboot-command CMD] [--systemctl CMD] [--host-exec PREFIX]\n"
        "                   [--metrics-bind-address HOST:PORT]\n"
        "       mcgit agent --node N --cluster C [--root DIR] [--state-dir DIR] --print-node-key\n"
        "\n"
        "Reconcile node N of cluster C (local:DIR, kube or kube:KUBECONFIG; without\n"
        "--cluster, $MCGIT_CLUSTER): when its desiredConfig differs from the config on\n"
        "disk, fetch the rendered config (refused unless its bytes match the hash in\n"
        "its name), cordon and drain when the disruption policy needs it, write files,\n"
        "units and core's SSH keys atomically under the root, apply kernel arguments,\n"
        "OS image, extensions and kernel type through the node's rpm-ostree, bootc or\n"
        "boot loader (a reboot),\n"
        "run the actions, uncordon and report Done.\n"
        "Otherwise compare every managed path with the config and report Degraded on\n"
        "drift, overwriting nothing; an update is not applied over drift either (the\n"
        "node stays Degraded naming it) until the path is put back or a re-apply is\n"
        "forced: --force re-applies once; ROOT/run/machine-config-daemon-force (MCO's\n"
        "force file, removed when found) re-applies and reboots, as MCO's daemon does.\n"
        "A live host (--root /, --live) is managed only once this host is proven to be\n"
        "node N: its machine-id (ROOT/etc/machine-id) and boot id must match the Node's\n"
        "status.nodeInfo from its kubelet, or the machine-id bound with `mcgit node bind`;\n"
        "otherwise the agent refuses before writing or cordoning anything.\n"
        "A pool's health checks run after each update, each bounded by healthTimeout\n"
        "(a check still running then is killed with its process group, and fails);\n"
        "a check this agent cannot run (not live, without --systemctl or --host-exec)\n"
        "fails, saying why: the node reverts and the pool halts, never reported passed.\n"
        "An interrupted update resumes from its journal; a journal this agent cannot\n"
        "read whole (another version, a missing or unknown key, a wrong type) is not\n"
        "resumed: the node goes Degraded saying why, and nothing is written.\n"
        "",
    .run = run,
    .opts = agent_opts,
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

/* What the command line asks for. */
typedef struct {
    mcg_agent_opts o;
    const char *cluster;
    const char *metrics_bind;
    bool once, print_key;
    uint64_t interval;
} agent_args;

/* What the options must say together: -1 when they do, else the exit status. */
static int check_args(agent_args *args, bool extra_args)
{
    const mcg_agent_opts *o = &args->o;
    args->cluster = mcg_cli_cluster(args->cluster);
    if (!o->node || !args->cluster || extra_args)
        return mcg_cli_usage_error(
            &mcg_cmd_agent, "--node and --cluster are required (--cluster: or $MCGIT_CLUSTER)");
    if (o->root && !*o->root)
        return mcg_cli_usage_error(&mcg_cmd_agent, "--root: empty path");
    if (args->once && args->metrics_bind)
        return mcg_cli_usage_error(&mcg_cmd_agent,
                                   "--metrics-bind-address goes with the loop, not --once");
    return -1;
}

/* Parse the command line into args: -1 when the agent is to run, else the exit status. */
static int parse_args(int argc, char **argv, agent_args *args)
{
    mcg_agent_opts *o = &args->o;
    memset(args, 0, sizeof(*args));
    o->verbosity = 1;
    args->interval = 30;
    int ch, ex;
    const mcg_optbind binds[] = {{'n', &o->node, NULL},
                                 {'c', &args->cluster, NULL},
                                 {'r', &o->root, NULL},
                                 {'s', &o->state_dir, NULL},
                                 {'L', NULL, &o->live},
                                 {'1', NULL, &args->once},
                                 {'P', NULL, &args->print_key},
                                 {'f', NULL, &o->force},
                                 {'R', &o->reboot_command, NULL},
                                 {'S', &o->systemctl, NULL},
                                 {'X', &o->host_exec, NULL},
                                 {'M', &args->metrics_bind, NULL},
                                 MCG_BIND_END};
    optind = 1;
    while ((ch = mcg_cli_parse_next(&mcg_cmd_agent, ~0u, argc, argv, binds, &ex)) > 0) {
        switch (ch) {
        case 'i':
            if (!mcg_parse_u64(optarg, &args->interval) || args->interval == 0 ||
                args->interval > 86400)
                return mcg_cli_usage_error(&mcg_cmd_agent, "--interval: expected 1..86400 seconds");
            break;
        case 'v':
            o->verbosity = 2;
            break;
        case 'q':
            o->verbosity = 0;
            break;
        }
    }
    if (ch < 0)
        return ex;
    return check_args(args, optind != argc);
}

/* --print-node-key: the node key's public line. */
static int print_key(mcg_agent *a)
{
    mcg_err err = {0};
    char *line = NULL;
    if (mcg_agent_node_key_line(&line, a, &err) != 0) {
        mcg_cli_error("agent", "%s", err.msg);
        return MCG_EXIT_FAIL;
    }
    printf("%s\n", line);
    free(line);
    return MCG_EXIT_OK;
}

/* --once: one pass, its outcome printed; the exit status. */
static int run_once(mcg_agent *a, mcg_cluster *c, const char *node)
{
    mcg_err err = {0};
    mcg_agent_result res;
    if (mcg_agent_run_once(&res, a, c, &err) != 0) {
        mcg_cli_error("agent", "%s", err.msg);
        return MCG_EXIT_FAIL;
    }
    printf("%s %s %s%s%s\n", node,
           res.unreconcilable ? "Unreconcilable" : mcg_agent_state_name(res.state),
           res.config[0] ? res.config : "-", res.reason[0] ? " " : "", res.reason);
    return res.state == MCG_AGENT_DEGRADED ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}

/* The loop until SIGTERM or SIGINT, with the metrics listener when asked; the exit status. */
static int run_loop(mcg_agent *a, mcg_cluster *c, const agent_args *args, mcg_metrics *mx)
{
    mcg_err err = {0};
    mcg_metrics_server *srv = NULL;
    int status = MCG_EXIT_FAIL;
    if (args->metrics_bind) {
        mcg_metrics_server_opts so = {.bind = args->metrics_bind, .metrics = mx, .who = "agent"};
        if (mcg_metrics_serve(&srv, &so, &err) != 0) {
            mcg_cli_error("agent", "--metrics-bind-address: %s", err.msg);
            goto out;
        }
        if (args->o.verbosity > 0)
            mcg_log_line("agent", "node=%s: serving metrics on %s (port %u)", args->o.node,
                         args->metrics_bind, mcg_metrics_server_port(srv));
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (mcg_agent_loop(a, c, (unsigned)args->interval, &stop_flag, &err) != 0) {
        mcg_cli_error("agent", "%s", err.msg);
        goto out;
    }
    status = MCG_EXIT_OK;
out:
    mcg_metrics_server_free(srv);
    return status;
}

/*
 * Whether cluster c has node (the root it keeps for the node exists only
 * then); a node it does not have is named as such, not as a missing
 * directory. A cluster that cannot answer now is left to the passes.
 */
static bool node_known(mcg_cluster *c, const char *node, const char *cluster)
{
    mcg_node n = {0};
    mcg_err err = {0};
    int rc = mcg_cluster_get_node(c, node, &n, &err);
    mcg_node_clear(&n);
    if (rc != MCG_ENOTFOUND)
        return true;
    mcg_cli_error("agent", "cluster %s has no node '%s' (add it: mcgit node add --cluster %s %s)",
                  cluster, node, cluster, node);
    return false;
}

static int run(int argc, char **argv)
{
    agent_args args;
    int status = parse_args(argc, argv, &args);
    if (status >= 0)
        return status;
    mcg_agent_opts o = args.o;
    mcg_err err = {0};
    mcg_cluster *c = NULL;
    mcg_agent *a = NULL;
    mcg_metrics *mx = NULL;
    char *root = NULL;
    status = MCG_EXIT_FAIL;
    if (mcg_cluster_open(&c, args.cluster, &err) != 0) {
        mcg_cli_error("agent", "%s", err.msg);
        goto out;
    }
    /* before anything is written under a root, and before a bad name could
     * leave the cluster without a default root for it */
    if (!mcg_name_is_dns_subdomain(o.node)) {
        mcg_cli_error("agent", "invalid node name '%s'", o.node);
        goto out;
    }
    if (!o.root) {
        root = mcg_cluster_node_root(c, o.node);
        o.root = root ? root : "/";
        if (root && !node_known(c, o.node, args.cluster))
            goto out;
    }
    if (args.metrics_bind) {
        o.metrics = mx = mcg_metrics_new();
        if (mcg_agent_metrics_declare(mx, &err) != 0) {
            mcg_cli_error("agent", "%s", err.msg);
            goto out;
        }
    }
    o.key_only = args.print_key;
    if (mcg_agent_open(&a, &o, c, &err) != 0) {
        mcg_cli_error("agent", "%s", err.msg);
        goto out;
    }
    status = args.print_key ? print_key(a)
             : args.once    ? run_once(a, c, o.node)
                            : run_loop(a, c, &args, mx);
out:
    mcg_agent_free(a);
    mcg_metrics_free(mx);
    mcg_cluster_free(c);
    free(root);
    return status;
}
