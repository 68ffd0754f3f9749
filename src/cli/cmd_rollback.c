/*
 * cmd_rollback.c — `mcgit rollback`: a signed source commit restoring an
 * earlier config.
 */
#include "cli/cli.h"
#include "gitops/gitops.h"
#include "osenv/osenv.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static int run(int argc, char **argv);

const mcg_cmd mcg_cmd_rollback = {
    .name = "rollback",
    .summary = "return the nodes to an earlier config (a signed source commit)",
    .usage = "usage: mcgit rollback --repo R REV [--key FILE] [--trust F] [--revoked K]\n"
             "\n"
             "Write a signed commit on the source branch of R that restores the\n"
             "machineconfigs/ and pools/ of REV's source commit, keeping .mcgit/ and\n"
             "mcgit.yaml as they are (a rollback never undoes a trust change), with the\n"
             "message `Rollback to <short> (<subject>)` and trailer `Rollback-To: <sha>`.\n"
             "Push it (or bundle it) like any change; once rendered, each pool's rendered\n"
             "name is the earlier one again. In a clone whose work tree is on the source\n"
             "branch, the work tree is updated too; local changes in the way refuse it\n"
             "(never to be committed into the rollback), and so does a work tree its\n"
             "branch moved away from (a controller's clone: its fetches move the branch\n"
             "only); make the rollback in your own clone then.\n"
             "\n"
             "REV is a source commit; a rendered commit id from any clone (recomputed\n"
             "here: rendered history is a pure function of source history); or a\n"
             "rendered config name rendered-<pool>-<hash> (the newest source commit that\n"
             "renders to it).\n"
             "\n"
             "The commit is signed as git signs (`ssh-keygen -Y sign -n git -f KEY`,\n"
             "program from git config gpg.ssh.program): the key is FILE, else git config\n"
             "user.signingkey with gpg.format ssh. Author: git config user.name and\n"
             "user.email.\n"
             "\n"
             "Prints the new commit, then per pool `<pool> <old name> -> <new name>`.\n"
             "A REV whose configs the branch already holds changes nothing and says so\n"
             "(exit 0). An unknown REV or no key is refused (exit 1) and nothing is\n"
             "written. Before it signs, the history it builds on (the source branch)\n"
             "and REV's are verified under the trust root (--trust, else git config\n"
             "mcgit.trust or gpg.ssh.allowedSignersFile): a rollback on top of a\n"
             "commit that does not verify is refused (docs/trust.md).\n",
    .run = run,
    .opts = mcg_cli_signer_opts,
};

static int run(int argc, char **argv)
{
    mcg_cli_signer a;
    int ex = mcg_cli_signer_args(&mcg_cmd_rollback, argc, argv, 1, &a);
    if (ex >= 0)
        return ex;
    mcg_err err = {0};
    mcg_repo *r = NULL;
    mcg_ssh_signer signer = {0};
    mcg_rollback_result res = {0};
    char target[MCG_SHA_HEX + 1] = "";
    int rc = mcg_repo_open(&r, a.repo, &err);
    /* an unknown REV is refused before asking for a key; then the source
     * commit it names is the REV (found once, however it was named) */
    if (!rc)
        rc = mcg_gitops_rollback_target(target, r, argv[optind], &err);
    if (!rc)
        rc = mcg_ssh_signer_init(&signer, r, a.key, &err);
    if (!rc) {
        mcg_rollback_opts o = {0};
        o.sign = mcg_ssh_signer_sign;
        o.sign_ctx = &signer;
        /* what it builds on (the branch) and what it restores (the target) */
        o.verify = true;
        o.trust = a.trust;
        o.revoked = a.revoked;
        rc = mcg_gitops_rollback(&res, r, target, &o, &err);
    }
    if (rc) {
        mcg_cli_error("rollback", "%s", err.msg);
    } else if (res.unchanged) {
        printf("source branch '%s' already holds the configs of %.12s; nothing changed\n",
               mcg_repo_source_branch(r), res.target);
    } else {
        printf("%s\n", res.commit);
        for (size_t i = 0; i < res.npools; i++) {
            const mcg_rollback_pool *p = &res.pools[i];
            const char *from = p->from ? p->from : "-", *to = p->to ? p->to : "-";
            printf("    %s: %s -> %s%s\n", p->pool, from, to,
                   strcmp(from, to) ? "" : " (unchanged)");
        }
        mcg_log_line("rollback",
                     "committed on %s%s; push it to the repository the "
                     "controller reads (unless this is it), or bundle it for an air-gapped "
                     "site",
                     mcg_repo_source_branch(r), res.checked_out ? " (work tree updated)" : "");
    }
    mcg_rollback_result_free(&res);
    mcg_ssh_signer_free(&signer);
    mcg_repo_free(r);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
