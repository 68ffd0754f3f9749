/*
 * cmd_pool.c — `mcgit pool pause|resume POOL`: an operator's pause of a
 * pool, MCO's spec.paused on the cluster side (cluster.h, "operator
 * requests"). It can only hold a rollout: resume lifts the operator's pause,
 * never git's spec.paused.
 */
#include "cli/cli.h"
#include "cluster/cluster.h"

#include <stdio.h>
#include <string.h>

static int run(int argc, char **argv);

const mcg_cmd mcg_cmd_pool = {
    .name = "pool",
    .summary = "pause or resume a pool's rollout from the cluster side",
    .usage = "usage: mcgit pool pause POOL [--cluster C] [--wait [--timeout SECONDS]]\n"
             "       mcgit pool resume POOL [--cluster C] [--wait [--timeout SECONDS]]\n"
             "\n"
             "pause holds POOL's rollout at once, without a commit: the controller gives\n"
             "its nodes no new desiredConfig (a node that joins gets what the pool runs)\n"
             "until the pause is lifted. It is MCO's operator pause, spec.paused: true on\n"
             "the pool's MachineConfigPool object (local:DIR: DIR/pools/POOL.json; kube:\n"
             "`kubectl patch mcp POOL --type merge -p '{\"spec\":{\"paused\":true}}'` does\n"
             "the same). The controller never writes that field, so nothing from git\n"
             "undoes it. A node already updating finishes its update.\n"
             "\n"
             "resume lifts that pause only (spec.paused false, and the older annotation\n"
             "machineconfiguration.mcgit.io/paused removed). A pool paused in git\n"
             "(spec.paused: true in pools/POOL.yaml, shown as status.pausedInGit) stays\n"
             "paused, and resume says so: only a signed commit resumes it. Either pause\n"
             "holds the pool; `mcgit status` lists paused pools and why (git or operator).\n"
             "resume also lifts a rollout halted by a failed health check (RolloutHalted,\n"
             "a pool's spec.rollout): the rollout goes on with the same config (stamped\n"
             "as machineconfiguration.mcgit.io/resumed on the pool object).\n"
             "\n"
             "Either one asks the controller for a pass at once (as `mcgit sync`); with\n"
             "--wait it waits for that pass (up to --timeout, default 60 s). A pause or\n"
             "resume that changes nothing says so and exits 0. Without --cluster, C is\n"
             "$MCGIT_CLUSTER.\n",
    .run = run,
    .opts = mcg_cli_wait_opts,
};

/* What happened, in one line on stdout. */
static void say(const char *pool, bool pause, bool changed, bool git_paused)
{
    if (pause && changed)
        printf("pool %s paused by an operator: its nodes get no new config until `mcgit pool "
               "resume %s`%s\n",
               pool, pool, git_paused ? " (it is paused in git too)" : "");
    else if (pause)
        printf("pool %s is already paused by an operator; nothing changed\n", pool);
    else if (changed && git_paused)
        printf("pool %s: operator pause removed, but the pool stays paused: spec.paused is true "
               "in git (resume it with a signed commit)\n",
               pool);
    else if (changed)
        printf("pool %s resumed: the controller rolls it out again\n", pool);
    else if (git_paused)
        printf("pool %s has no operator pause; nothing changed (it stays paused: spec.paused is "
               "true in git)\n",
               pool);
    else
        printf("pool %s is not paused; nothing changed\n", pool);
}

static int run(int argc, char **argv)
{
    mcg_cli_wait_args a;
    int parsed = mcg_cli_wait_args_parse(&mcg_cmd_pool, argc, argv, &a);
    if (parsed >= 0)
        return parsed;
    if (argc - optind != 2 || (strcmp(argv[optind], "pause") && strcmp(argv[optind], "resume")))
        return mcg_cli_usage_error(&mcg_cmd_pool, "expected pause POOL or resume POOL");
    bool pause = !strcmp(argv[optind], "pause");
    const char *pool = argv[optind + 1];
    if (!a.cluster)
        return mcg_cli_usage_error(&mcg_cmd_pool, "--cluster is required (or $MCGIT_CLUSTER)");
    mcg_err err = {0};
    mcg_cluster *cl = NULL;
    bool changed = false, git_paused = false;
    uint64_t gen = 0;
    int rc = mcg_cluster_open(&cl, a.cluster, &err);
    if (!rc)
        rc = mcg_cluster_pause_pool(cl, pool, pause, &changed, &git_paused, &err);
    if (!rc && changed)
        rc = mcg_cluster_request_sync(cl, &gen, &err);
    int ex = MCG_EXIT_OK;
    if (rc) {
        mcg_cli_error("pool", "%s", err.msg);
        ex = MCG_EXIT_FAIL;
    } else {
        say(pool, pause, changed, git_paused);
        fflush(stdout);
        if (a.wait && changed)
            ex = mcg_cli_sync_wait("pool", cl, gen, a.timeout);
    }
    mcg_cluster_free(cl);
    return ex;
}
