/*
 * cmd_demo.c — `mcgit demo`: its options and its directory; the story is
 * the demo module's (demo/demo.h).
 */
#include "cli/cli.h"
#include "demo/demo.h"
#include "fsio/fsio.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int run(int argc, char **argv);

static const mcg_opt demo_opts[] = {
    MCG_OPT_HELP,
    MCG_OPT_VALUE('d', "dir", "DIR", "where to create it (default: a new directory\nunder /tmp)"),
    MCG_OPT_FLAG('k', "keep", "leave the controller and agents running"),
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_demo = {
    .name = "demo",
    .summary = "run the whole loop on one machine, narrated",
    .usage =
        "usage: mcgit demo [--dir DIR] [--keep]\n"
        "\n"
        "Create, in DIR (default: a new directory under /tmp), a config repo with\n"
        "pools master, worker and infra, a throwaway ed25519 signing key, and a\n"
        "local cluster of 3 master, 3 worker and 1 infra node; start the controller\n"
        "and one agent per node; then show: the first rollout; a signed config\n"
        "change rolling across the workers at most maxUnavailable at a time; a\n"
        "hand-edited file reported as drift (the agent reports it and never\n"
        "overwrites it; the demo has it re-applied through MCO's force file, with\n"
        "the reboot it brings, and the node returns to Done); an unsigned\n"
        "commit refused by every pool; and `mcgit rollback` to the first render (a\n"
        "signed commit on main restoring its configs). Finally print where the\n"
        "repo and the cluster are, to explore with `git log -p rendered` (git\n"
        "needed) and `mcgit status`. The controller and agents are stopped at the end, or when\n"
        "the demo is interrupted, unless --keep is given (then their PIDs are\n"
        "printed).\n",
    .run = run,
    .opts = demo_opts,
};

/* The demo's directory: dir made (it must hold no demo yet), or a new one under /tmp. */
static int demo_dir(char out[PATH_MAX], const char *dir)
{
    if (!dir) {
        snprintf(out, PATH_MAX, "/tmp/mcgit-demo.XXXXXX");
        if (!mkdtemp(out)) {
            mcg_cli_error_os("demo", errno, "mkdtemp");
            return -1;
        }
        return 0;
    }
    mcg_err err = {0};
    if (mcg_mkdirs(dir, 0755, &err) != 0 || !realpath(dir, out)) {
        mcg_cli_error("demo", "%s: %s", dir, err.msg[0] ? err.msg : strerror(errno));
        return -1;
    }
    char *probe = mcg_sprintf("%s/repo", out);
    struct stat st;
    bool exists = lstat(probe, &st) == 0;
    free(probe);
    if (exists) {
        mcg_cli_error("demo", "%s already holds a demo; give an empty --dir", out);
        return -1;
    }
    return 0;
}

static int run(int argc, char **argv)
{
    const char *dir = NULL;
    bool keep = false;
    const mcg_optbind binds[] = {{'d', &dir, NULL}, {'k', NULL, &keep}, MCG_BIND_END};
    int ex = mcg_cli_parse(&mcg_cmd_demo, argc, argv, binds);
    if (ex >= 0)
        return ex;
    if (optind != argc)
        return mcg_cli_usage_error(&mcg_cmd_demo, "unexpected argument '%s'", argv[optind]);
    char where[PATH_MAX], self[PATH_MAX];
    if (demo_dir(where, dir) != 0)
        return MCG_EXIT_FAIL;
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        mcg_cli_error("demo", "cannot find the mcgit binary");
        return MCG_EXIT_FAIL;
    }
    self[n] = '\0';
    mcg_demo_opts o = {.dir = where,
                       .self = self,
                       .keep = keep,
                       .pools_table = mcg_cli_status_pools,
                       .nodes_table = mcg_cli_status_nodes};
    mcg_err err = {0};
    if (mcg_demo_run(&o, &err) != 0) {
        if (err.msg[0])
            mcg_cli_error("demo", "%s", err.msg);
        mcg_cli_error("demo", "failed; the logs are in %s/logs", where);
        return MCG_EXIT_FAIL;
    }
    return MCG_EXIT_OK;
}
