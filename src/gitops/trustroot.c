/*
 * trustroot.c — the trust root as every command and the controller load
 * it, and the check a command makes before it signs on top of history.
 *
 * The trust root is an allowed_signers file given out of band, with the
 * checkpoints it names, and optionally a revocation file: one loader for
 * all of them, so the CLI, the hooks and the controller cannot read it
 * differently. A command that signs (heartbeat, approve, rollback) takes
 * its root from --trust, else the repository's own mcgit.trust (a
 * server), else git's gpg.ssh.allowedSignersFile (an operator's clone),
 * and verifies what it builds on before it signs: a signature over a
 * commit id covers the whole history below it, so signing on top of
 * history nobody verified would lend it a trusted name.
 */
#include "fsio/fsio.h"
#include "gitops/gitops_int.h"

#include <stdlib.h>
#include <string.h>

int mcg_gitops_load_trust(mcg_signers **out, const char *path, const char *revoked, mcg_err *err)
{
    char *data = NULL;
    size_t len = 0;
    mcg_signers *s = NULL;
    *out = NULL;
    int rc = mcg_read_file_named(path, MCG_SIGNERS_MAX_TEXT, &data, &len, err);
    if (rc == 0)
        rc = mcg_signers_parse(&s, path, data, len, err);
    if (rc == 0)
        rc = mcg_signers_checkpoints(s, path, data, len, err);
    if (rc)
        mcg_err_prefix(err, "trust root (an allowed_signers file)");
    free(data);
    data = NULL;
    if (rc == 0 && revoked && *revoked) {
        rc = mcg_read_file_named(revoked, MCG_REVOKED_MAX_SIZE, &data, &len, err);
        if (rc == 0)
            rc = mcg_signers_revoke(s, revoked, data, len, err);
        free(data);
    }
    if (rc == 0) {
        *out = s; /* transferred */
        s = NULL;
    }
    mcg_signers_free(s);
    return rc;
}

/* The first of keys set in r's configuration (a path: ~/ expanded), or NULL. */
static char *config_path(mcg_repo *r, const char *const *keys, size_t n)
{
    git_config *cfg = NULL;
    char *found = NULL;
    if (git_repository_config_snapshot(&cfg, r->git) != 0)
        return NULL;
    for (size_t i = 0; i < n && !found; i++) {
        git_buf b = {0};
        if (git_config_get_path(&b, cfg, keys[i]) == 0 && b.ptr && *b.ptr)
            found = mcg_strdup(b.ptr);
        git_buf_dispose(&b);
    }
    git_config_free(cfg);
    return found;
}

int mcg_gitops_signing_trust(mcg_signers **out, mcg_repo *r, const char *trust, const char *revoked,
                             mcg_err *err)
{
    static const char *const tkeys[] = {"mcgit.trust", "gpg.ssh.allowedSignersFile"};
    static const char *const rkeys[] = {"mcgit.revoked", "gpg.ssh.revocationFile"};
    char *t = trust ? NULL : config_path(r, tkeys, 2);
    char *k = revoked ? NULL : config_path(r, rkeys, 2);
    *out = NULL;
    int rc;
    if (!trust && !t)
        rc = mcg_err_set(err, MCG_EINVAL,
                         "no trust root to verify the history it signs on: give --trust F (an "
                         "allowed_signers file), or set git config gpg.ssh.allowedSignersFile");
    else
        rc = mcg_gitops_load_trust(out, trust ? trust : t, revoked ? revoked : k, err);
    free(t);
    free(k);
    return rc;
}

int mcg_gitops_verify_base(mcg_repo *r, const char *rev, bool parents_only, const mcg_signers *root,
                           mcg_err *err)
{
    char sha[MCG_SHA_HEX + 1];
    git_oid oid;
    git_commit *c = NULL;
    int rc = mcg_repo_resolve(r, rev, sha, err);
    if (rc)
        return rc;
    git_oid_fromstr(&oid, sha);
    if (git_commit_lookup(&c, r->git, &oid) != 0)
        return mcg_git_err(err, sha);
    unsigned n = parents_only ? git_commit_parentcount(c) : 1;
    for (unsigned i = 0; i < n && !rc; i++) {
        char tip[MCG_SHA_HEX + 1];
        git_oid_tostr(tip, sizeof(tip), parents_only ? git_commit_parent_id(c, i) : &oid);
        mcg_verify_report rep = {0};
        rc = mcg_gitops_verify(&rep, r, tip, NULL, root, err);
        for (size_t k = 0; !rc && k < rep.n; k++)
            if (!rep.v[k].good)
                rc = mcg_err_set(err, MCG_ETRUST,
                                 "refusing to sign on top of unverified history: commit %.12s: "
                                 "%s%s (a signature covers all history below it; reset to the "
                                 "last good commit, or record a checkpoint, docs/trust.md)",
                                 rep.v[k].sha, rep.v[k].reason,
                                 rep.nbad > 1 ? " (and more; `mcgit verify` lists them)" : "");
        mcg_verify_report_free(&rep);
    }
    git_commit_free(c);
    return rc;
}
