/*
 * cmd_init.c — `mcgit init DIR`: a new config repo from the template.
 */
#include "cli/cli.h"
#include "gitops/gitops.h"

#include <getopt.h>
#include <stdio.h>

static int run(int argc, char **argv);

static const mcg_opt init_opts[] = {
    MCG_OPT_HELP,
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_init = {
    .name = "init",
    .summary = "create a new config repo from the template",
    .usage = "usage: mcgit init DIR\n"
             "\n"
             "Create DIR (which must not exist, or be empty) holding a new config repo:\n"
             "mcgit.yaml, .mcgit/allowed_signers, pools master and worker, and the empty\n"
             "MachineConfigs 00-master and 00-worker; then `git init` it with branch main.\n"
             "Nothing is committed: review, then commit with a signature (git commit -S).\n",
    .run = run,
    .opts = init_opts,
};

static int run(int argc, char **argv)
{
    int ex = mcg_cli_parse(&mcg_cmd_init, argc, argv, NULL); /* --help only */
    if (ex >= 0)
        return ex;
    if (argc - optind != 1)
        return mcg_cli_usage_error(&mcg_cmd_init, "expected exactly one DIR");
    mcg_err err = {0};
    if (mcg_gitops_init(argv[optind], &err) != 0) {
        mcg_cli_error("init", "%s", err.msg);
        return MCG_EXIT_FAIL;
    }
    mcg_cli_info("Initialised config repo in %s", argv[optind]);
    return MCG_EXIT_OK;
}
