/*
 * cmd_approve.c — `mcgit approve`: an approval for the two-person rule.
 */
#include "cli/cli.h"
#include "fsio/fsio.h"
#include "gitops/gitops.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run(int argc, char **argv);

const mcg_cmd mcg_cmd_approve = {
    .name = "approve",
    .summary = "approve a commit for the two-person rule of .mcgit/policy.yaml",
    .usage = "usage: mcgit approve --repo R REV [--key FILE] [--trust F] [--revoked K]\n"
             "\n"
             "Sign the commit REV names (an SSH signature over its id, namespace\n"
             "mcgit-approval, made like git's own: `ssh-keygen -Y sign` with --key FILE,\n"
             "else git config user.signingkey when gpg.format is ssh) and add it to the\n"
             "commit's note in refs/notes/mcgit-approvals. A commit that changes a path\n"
             "an `approvals` rule of .mcgit/policy.yaml names is accepted once its own\n"
             "signature and its approvals come from `required` distinct trusted\n"
             "signers (keys; a certificate by its CA and key id). Push the approvals\n"
             "with the branch, or before it:\n"
             "  git push origin main refs/notes/mcgit-approvals\n"
             "Bundles carry them too. Prints the approved commit and the new notes\n"
             "commit; an approval the note already holds changes nothing and says so.\n"
             "Warns first when the key's lines in git's gpg.ssh.allowedSignersFile,\n"
             "git config mcgit.trust or the commit's parent's .mcgit/allowed_signers\n"
             "leave out namespace mcgit-approval (the approval would not count).\n"
             "Before it signs, the history REV builds on (its parents) is verified under\n"
             "the trust root (--trust, else git config mcgit.trust or\n"
             "gpg.ssh.allowedSignersFile); an approval on top of history that does not\n"
             "verify is refused.\n",
    .run = run,
    .opts = mcg_cli_signer_opts,
};

/* Warn, before signing, when the signing key's trust lines leave out approvals. */
static void warn_namespaces(mcg_repo *r, const char *rev, const char *key)
{
    size_t kl = strlen(key);
    char *pub =
        kl > 4 && !strcmp(key + kl - 4, ".pub") ? mcg_strdup(key) : mcg_sprintf("%s.pub", key);
    char *text = NULL;
    size_t len = 0;
    mcg_strv w = {0};
    if (mcg_read_file(pub, 64 * 1024, &text, &len, NULL) == 0)
        mcg_gitops_approve_warnings(r, rev, text, len, &w);
    for (size_t i = 0; i < w.n; i++)
        mcg_cli_error("approve", "warning: %s", w.v[i]);
    mcg_strv_free(&w);
    free(text);
    free(pub);
}

static int run(int argc, char **argv)
{
    mcg_cli_signer a;
    int ex = mcg_cli_signer_args(&mcg_cmd_approve, argc, argv, 1, &a);
    if (ex >= 0)
        return ex;
    mcg_err err = {0};
    mcg_repo *r = NULL;
    mcg_ssh_signer signer = {0};
    char approved[MCG_SHA_HEX + 1], notes[MCG_SHA_HEX + 1];
    int rc = mcg_repo_open(&r, a.repo, &err);
    if (!rc)
        rc = mcg_cli_signer_check(r, &a, argv[optind], true, &err);
    if (!rc)
        rc = mcg_ssh_signer_init(&signer, r, a.key, &err);
    signer.ns = "mcgit-approval";
    if (!rc)
        warn_namespaces(r, argv[optind], signer.key);
    if (!rc)
        rc = mcg_gitops_approve(notes, approved, r, argv[optind], mcg_ssh_signer_sign, &signer,
                                &err);
    if (rc)
        mcg_cli_error("approve", "%s", err.msg);
    else if (!notes[0])
        printf("commit %s already carries this approval; nothing changed\n", approved);
    else
        printf("approved %s (refs/notes/mcgit-approvals %.12s)\n", approved, notes);
    mcg_ssh_signer_free(&signer);
    mcg_repo_free(r);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
