/*
 * cmd_rollback.c — `mcgit rollback`: restore an earlier render.
 */
#include "cli/cli.h"
#include "gitops/gitops.h"

#include <getopt.h>
#include <stdio.h>
#include <time.h>

static int run(int argc, char **argv);

const mcg_cmd mcg_cmd_rollback = {
    "rollback",
    "return the nodes to an earlier rendered config",
    "usage: mcgit rollback --repo R REV [--pool P]\n"
    "\n"
    "REV is a rendered commit, or a source commit that was rendered. Append a\n"
    "commit to the rendered branch whose tree equals that render's (with --pool,\n"
    "only pool P's part), with trailer `Rollback-To: <sha>`. The controller rolls\n"
    "it out like any render; it stays the target until a newer source commit is\n"
    "rendered. An unknown REV is refused (exit 1) and nothing is written.\n",
    run,
};

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"repo", required_argument, 0, 'r'},
                                         {"pool", required_argument, 0, 'p'},
                                         {0, 0, 0, 0}};
    const char *repo = NULL, *pool = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'h': return mcg_cli_help(&mcg_cmd_rollback);
        case 'r': repo = optarg; break;
        case 'p': pool = optarg; break;
        default: return mcg_cli_usage_error(&mcg_cmd_rollback, NULL);
        }
    }
    if (!repo || argc - optind != 1)
        return mcg_cli_usage_error(&mcg_cmd_rollback, "expected --repo R and one REV");
    mcg_err err = {0};
    mcg_repo *r = NULL;
    char sha[MCG_SHA_HEX + 1];
    int rc = mcg_repo_open(&r, repo, &err);
    if (!rc)
        rc = mcg_gitops_rollback(sha, r, argv[optind], pool, (int64_t)time(NULL), &err);
    if (rc)
        mcg_cli_error("rollback", "%s", err.msg);
    else
        printf("%s\n", sha);
    mcg_repo_free(r);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
