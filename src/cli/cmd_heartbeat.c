/*
 * cmd_heartbeat.c — `mcgit heartbeat`: a signed empty commit proving the
 * source is current (freeze protection).
 */
#include "cli/cli.h"
#include "gitops/gitops.h"

#include <getopt.h>
#include <stdio.h>

static int run(int argc, char **argv);

const mcg_cmd mcg_cmd_heartbeat = {
    .name = "heartbeat",
    .summary = "a signed empty commit proving the source is current (maxSourceAge)",
    .usage = "usage: mcgit heartbeat --repo R [--key FILE] [--trust F] [--revoked K]\n"
             "\n"
             "Write a signed commit on the source branch of R whose tree is the tip's:\n"
             "nothing changes on any node, but the newest verified source commit is now.\n"
             "When .mcgit/policy.yaml sets maxSourceAge (e.g. 720h), the controller marks\n"
             "every pool SourceStale once the newest verified source commit is older than\n"
             "that, since a source that stops moving may be an attacker withholding\n"
             "updates (a stale bundle carried to an air-gapped site); a quiet site signs\n"
             "a heartbeat to show it is not. Signed as git signs (`ssh-keygen -Y sign\n"
             "-n git`) with --key FILE, else git config user.signingkey with gpg.format\n"
             "ssh; author from git config user.name and user.email. Push it (or bundle\n"
             "it) like any change. Prints the new commit.\n"
             "Before it signs, the history it builds on is verified under the trust\n"
             "root (--trust, else git config mcgit.trust or gpg.ssh.allowedSignersFile):\n"
             "a signature covers all history below it, so a heartbeat is refused on top\n"
             "of a commit that does not verify (docs/trust.md, \"Trust changes\").\n",
    .run = run,
    .opts = mcg_cli_signer_opts,
};

static int run(int argc, char **argv)
{
    mcg_cli_signer a;
    int ex = mcg_cli_signer_args(&mcg_cmd_heartbeat, argc, argv, 0, &a);
    if (ex >= 0)
        return ex;
    mcg_err err = {0};
    mcg_repo *r = NULL;
    mcg_ssh_signer signer = {0};
    char out[MCG_SHA_HEX + 1];
    int rc = mcg_repo_open(&r, a.repo, &err);
    if (!rc)
        rc = mcg_cli_signer_check(r, &a, mcg_repo_source_branch(r), false, &err);
    if (!rc)
        rc = mcg_ssh_signer_init(&signer, r, a.key, &err);
    if (!rc) {
        mcg_rollback_opts o = {0};
        o.sign = mcg_ssh_signer_sign;
        o.sign_ctx = &signer;
        rc = mcg_gitops_heartbeat(out, r, &o, &err);
    }
    if (rc)
        mcg_cli_error("heartbeat", "%s", err.msg);
    else
        printf("%s\n", out);
    mcg_ssh_signer_free(&signer);
    mcg_repo_free(r);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
