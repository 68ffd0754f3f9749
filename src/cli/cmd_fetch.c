/*
 * cmd_fetch.c — `mcgit fetch`: bring the source branch from a remote,
 * fast-forward only.
 */
#include "cli/cli.h"
#include "gitops/gitops.h"

#include <getopt.h>
#include <stdio.h>

static int run(int argc, char **argv);

const mcg_cmd mcg_cmd_fetch = {
    "fetch",
    "fetch the source branch from a remote (fast-forward only)",
    "usage: mcgit fetch --repo R [--remote NAME]\n"
    "\n"
    "Fetch the source branch from remote NAME (default origin) over file://,\n"
    "https:// or ssh:// and move the local source branch to it, only if that is a\n"
    "fast-forward: a rewritten or rewound remote branch is refused (exit 1) and\n"
    "the local branch stays. Prints the new tip. Signatures are checked when the\n"
    "new commits are rendered (`mcgit render --repo`).\n",
    run,
};

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"repo", required_argument, 0, 'r'},
                                         {"remote", required_argument, 0, 'R'},
                                         {0, 0, 0, 0}};
    const char *repo = NULL, *remote = "origin";
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'h': return mcg_cli_help(&mcg_cmd_fetch);
        case 'r': repo = optarg; break;
        case 'R': remote = optarg; break;
        default: return mcg_cli_usage_error(&mcg_cmd_fetch, NULL);
        }
    }
    if (!repo || optind != argc)
        return mcg_cli_usage_error(&mcg_cmd_fetch, "--repo is required");
    mcg_err err = {0};
    mcg_repo *r = NULL;
    char sha[MCG_SHA_HEX + 1];
    int rc = mcg_repo_open(&r, repo, &err);
    if (!rc)
        rc = mcg_gitops_fetch(r, remote, sha, &err);
    if (rc)
        mcg_cli_error("fetch", "%s", err.msg);
    else
        printf("%s\n", sha);
    mcg_repo_free(r);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
