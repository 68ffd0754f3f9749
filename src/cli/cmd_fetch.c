/*
 * cmd_fetch.c — `mcgit fetch`: bring the source branch from a remote,
 * fast-forward only.
 */
#include "cli/cli.h"
#include "gitops/verify.h"
#include "gitops/remote.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int run(int argc, char **argv);

static const mcg_opt fetch_opts[] = {
    MCG_OPT_HELP,
    MCG_OPT_VALUE('r', "repo", "R", "the config repo"),
    MCG_OPT_TRUST,
    MCG_OPT_REVOKED,
    MCG_OPT_VALUE('R', "remote", "NAME", "the remote to fetch from (default: origin)"),
    MCG_OPT_VALUE('T', "timeout", "SECONDS",
                  "bound the whole fetch: transfer, pack check, indexing (default: 300)"),
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_fetch = {
    .name = "fetch",
    .summary = "fetch the source branch from a remote (fast-forward only)",
    .usage = "usage: mcgit fetch --repo R --trust F [--revoked K] [--remote NAME]\n"
             "                   [--timeout SECONDS]\n"
             "\n"
             "Fetch the source branch from remote NAME (default origin) over file://,\n"
             "https:// or ssh:// and move the local source branch to it, only if that is a\n"
             "fast-forward and every new commit verifies under the trust root F (as\n"
             "`mcgit verify`, and against this host's clock when the branch is extended).\n"
             "A rewritten or rewound remote branch, or an unsigned or untrusted commit, is\n"
             "refused (exit 1) and the local branch stays where it was. Prints the new\n"
             "tip, or one line saying the branch was already up to date. --revoked K (a\n"
             "KRL or a list of public keys) refuses commits by those keys. --timeout bounds\n"
             "the whole fetch, however the server behaves: the transfer, then checking\n"
             "and indexing the pack (default 300). The pack's delta graph is resolved\n"
             "before libgit2 indexes it: a delta whose result is its own base, a cycle,\n"
             "a base nobody has, a chain over 1000 deep or an object over 16 MiB is\n"
             "refused.\n"
             "\n"
             "Credentials and pins are files in the directory $MCGIT_GIT_CREDENTIALS (the\n"
             "key names of Flux's Git Secrets and Kubernetes' SSH and basic auth Secrets):\n"
             "  identity, ssh-privatekey  ssh: the deploy key (ed25519, unencrypted); the\n"
             "                      user is the URL's, else username's, else git\n"
             "  known_hosts         ssh: required; the server's host key must be listed\n"
             "                      (plain or hashed names, [host]:port off port 22)\n"
             "  username, password  https: basic auth\n"
             "  token               https: basic auth as username, else x-access-token\n"
             "  bearerToken         https: an Authorization: Bearer header\n"
             "  ca.crt              https: the CA certificates trusted for the server,\n"
             "                      in place of the system's\n"
             "The directory and its files must be private, as ssh requires of ~/.ssh:\n"
             "owned by this user or root, writable by no one else (unless on a read-only\n"
             "mount, as Kubernetes mounts a Secret), a secret (key, password, token,\n"
             "bearerToken) readable by no one else (0600 or 0400; a root-owned 0440 file\n"
             "of a pod's fsGroup is fine); anything else is refused naming the file.\n"
             "A proxy comes from https_proxy, http_proxy and no_proxy (or git's\n"
             "http.proxy). An HTTP redirect is followed only on the first request and\n"
             "only within the remote's host (none through a proxy or with a bearer\n"
             "token): a redirect to another host is refused before any request or\n"
             "credential goes there. A failure is one line naming the URL and the cause\n"
             "(cannot resolve host, connection refused, timed out, authentication\n"
             "failed, host key refused, TLS certificate refused, redirect refused, not a\n"
             "git repository); https:// to an IP address fails, as Debian's libgit2\n"
             "matches no IP address in a certificate (use a host name); an unknown or\n"
             "changed host key, or a certificate that does not verify, is never accepted,\n"
             "and nothing moves.\n",
    .run = run,
    .opts = fetch_opts,
};

static int run(int argc, char **argv)
{
    const char *repo = NULL, *remote = "origin", *trust = NULL, *revoked = NULL;
    uint64_t timeout = MCG_FETCH_TIMEOUT_DEFAULT;
    int c, ex;
    const mcg_optbind binds[] = {{'r', &repo, NULL},
                                 {'R', &remote, NULL},
                                 {'t', &trust, NULL},
                                 {'K', &revoked, NULL},
                                 MCG_BIND_END};
    optind = 1;
    while ((c = mcg_cli_parse_next(&mcg_cmd_fetch, ~0u, argc, argv, binds, &ex)) > 0) {
        switch (c) {
        case 'T':
            if (!mcg_parse_u64(optarg, &timeout) || !timeout || timeout > 86400)
                return mcg_cli_usage_error(&mcg_cmd_fetch, "bad --timeout '%s'", optarg);
            break;
        }
    }
    if (c < 0)
        return ex;
    if (!repo || !trust || optind != argc)
        return mcg_cli_usage_error(&mcg_cmd_fetch, "--repo and --trust are required");
    mcg_err err = {0};
    mcg_repo *r = NULL;
    mcg_signers *root = NULL;
    char sha[MCG_SHA_HEX + 1], before[MCG_SHA_HEX + 1] = "";
    int rc = mcg_gitops_load_trust(&root, trust, revoked, &err);
    if (!rc)
        rc = mcg_repo_open(&r, repo, &err);
    if (!rc) {
        char *ref = mcg_sprintf("refs/heads/%s", mcg_repo_source_branch(r));
        if (mcg_repo_resolve(r, ref, before, NULL) != 0)
            before[0] = '\0'; /* no source branch yet */
        free(ref);
        mcg_fetch_opts fo = {.now = (int64_t)time(NULL), .timeout = (unsigned)timeout};
        rc = mcg_gitops_fetch(r, remote, root, &fo, sha, &err);
    }
    if (rc)
        mcg_cli_error("fetch", "%s", err.msg);
    else if (!strcmp(before, sha))
        printf("%s already up to date at %s; nothing fetched\n", mcg_repo_source_branch(r), sha);
    else
        printf("%s\n", sha);
    mcg_repo_free(r);
    mcg_signers_free(root);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
