/*
 * gitops/sign.h — signing as git does, and the signed commits mcgit writes
 * for an operator: approvals, rollbacks, heartbeats, the demo's commits.
 */
#ifndef MCG_GITOPS_SIGN_H
#define MCG_GITOPS_SIGN_H

#include "trust/trust.h"
#include "gitops/repo.h"

/*
 * Sign a commit buffer (namespace git): a new armored SSH signature in
 * *armored (the caller frees it), or an error. ctx is the signer's own.
 */
typedef int (*mcg_commit_sign_fn)(char **armored, const char *buf, size_t len, void *ctx,
                                  mcg_err *err);

/* Signing as git does for gpg.format ssh: `PROGRAM -Y sign -n NS -f KEY` (NS: git). */
typedef struct mcg_ssh_signer {
    char *program;  /* git config gpg.ssh.program, default ssh-keygen */
    char *key;      /* a key file; its private key may be in ssh-agent, or encrypted */
    const char *ns; /* the signature namespace; NULL: git (static text, not owned) */
} mcg_ssh_signer;

/*
 * The signer for repository r (its git config, with the user's global one):
 * key_file when given (--key), else user.signingkey (a leading ~/ expanded)
 * when gpg.format is ssh. No key: MCG_EINVAL saying how to configure one.
 * Free with mcg_ssh_signer_free.
 */
int mcg_ssh_signer_init(mcg_ssh_signer *out, mcg_repo *r, const char *key_file, mcg_err *err);
void mcg_ssh_signer_free(mcg_ssh_signer *s);
/* mcg_commit_sign_fn for a const mcg_ssh_signer * (ctx): runs the program. */
int mcg_ssh_signer_sign(char **armored, const char *buf, size_t len, void *ctx, mcg_err *err);

/*
 * The two-person rule's approvals (.mcgit/policy.yaml, docs/trust.md): sign
 * "<commit id>\n" for the commit REV names with sign (whose namespace must
 * be mcgit-approval) and add the signature to that commit's note in
 * refs/notes/mcgit-approvals (a new notes commit; earlier approvals kept).
 * The commit approved and the new notes commit go to approved and
 * note_commit. When the note already holds the same signature nothing is
 * written: 0 is returned with note_commit "".
 */
int mcg_gitops_approve(char note_commit[MCG_SHA_HEX + 1], char approved[MCG_SHA_HEX + 1],
                       mcg_repo *r, const char *rev, mcg_commit_sign_fn sign, void *sign_ctx,
                       mcg_err *err);

/*
 * Before `mcgit approve` signs with the public key pubkey (len bytes, an
 * OpenSSH public key line): one warning line per allowed_signers file that
 * lists that key only on lines whose namespaces= leave out mcgit-approval
 * (git config gpg.ssh.allowedSignersFile, mcgit.trust, and REV's parent's
 * .mcgit/allowed_signers), pushed to out. Never fails: what cannot be read
 * is not checked.
 */
void mcg_gitops_approve_warnings(mcg_repo *r, const char *rev, const char *pubkey, size_t len,
                                 mcg_strv *out);

/*
 * Whether refs/notes/mcgit-approvals may move from old (NULL or "": it is
 * not set) to new where refs arrive (push, fetch, bundle import): approvals
 * only grow. new must name a commit (not a deletion, not a blob), descend
 * from old, and hold every note old holds with its text kept as the start
 * of the new text (approvals are appended). 0, or MCG_ECONFLICT/MCG_EINVAL
 * with one line in err.
 */
int mcg_gitops_approvals_grow(mcg_repo *r, const char *old, const char *new, mcg_err *err);

typedef struct mcg_rollback_opts {
    mcg_commit_sign_fn sign; /* required */
    void *sign_ctx;
    const char *name, *email; /* author and committer; NULL: git config user.name/email */
    int64_t when;             /* 0: now (then the offset is the local zone's) */
    int offset;               /* minutes east of UTC, with when */
    /* Before signing, verify what it builds on (the source tip, and the
     * target when the tip does not descend from it) under the trust root
     * mcg_gitops_signing_trust finds for trust and revoked (each NULL: the
     * repository's git config). false: no check (the demo's own repo). */
    bool verify;
    const char *trust, *revoked;
} mcg_rollback_opts;

/* What a rollback does to one pool: its rendered config before and after
 * (NULL where the pool has none). */
typedef struct mcg_rollback_pool {
    char *pool, *from, *to;
} mcg_rollback_pool;

typedef struct mcg_rollback_result {
    char commit[MCG_SHA_HEX + 1]; /* the new source commit */
    char target[MCG_SHA_HEX + 1]; /* the source commit whose configs it restores */
    mcg_rollback_pool *pools;     /* per pool, sorted by name */
    size_t npools;
    bool checked_out; /* the work tree was updated */
    bool unchanged;   /* the tip already holds REV's configs: nothing written,
                         commit is "" (mcg_gitops_rollback returned 0) */
} mcg_rollback_result;

void mcg_rollback_result_free(mcg_rollback_result *res);

/*
 * Freeze protection: a signed commit on the source branch with the tip's
 * tree (nothing changes on any node), so a quiet site proves its source is
 * current (maxSourceAge). Signed and authored as a rollback is (o). The new
 * commit id goes to out; the branch moves by compare-and-swap.
 */
int mcg_gitops_heartbeat(char out[MCG_SHA_HEX + 1], mcg_repo *r, const mcg_rollback_opts *o,
                         mcg_err *err);

/*
 * The source commit REV names: a commit of the source branch; a rendered
 * commit (its Source-Commit), held here or — when absent — made by any
 * clone from this source history (the pure rendered history is computed,
 * objects in memory only, and its ids or a unique prefix matched); or a
 * rendered config name rendered-<pool>-<hash> (the newest source commit
 * that renders to it). MCG_ENOTFOUND with one line when it names none.
 */
int mcg_gitops_rollback_target(char target[MCG_SHA_HEX + 1], mcg_repo *r, const char *rev,
                               mcg_err *err);

/*
 * Roll back: a new commit on the source branch whose tree is the branch
 * tip's with machineconfigs/ and pools/ those of REV's source commit (see
 * mcg_gitops_rollback_target) — .mcgit/ and mcgit.yaml untouched, so a
 * rollback never undoes a trust change — message "Rollback to <short>
 * (<subject>)" with trailer Rollback-To: <target>, signed by o->sign. In a
 * repository with a work tree whose HEAD is the source branch, the work
 * tree is updated first (a safe checkout: local changes in the way refuse
 * the rollback, changing nothing). When the tip already holds those configs
 * nothing is written and res->unchanged says so (returns 0). Refused,
 * writing nothing, when REV is unknown, the result does not render, or
 * signing fails. The branch moves by compare-and-swap.
 */
int mcg_gitops_rollback(mcg_rollback_result *res, mcg_repo *r, const char *rev,
                        const mcg_rollback_opts *o, mcg_err *err);

/* The key pair and mcg_sshsig_sign are trust's (trust/trust.h). */
/*
 * Stage every change in the work tree at path and commit it on the branch
 * HEAD points at, signed with key (NULL: unsigned), author and committer
 * "mcgit demo" at time when. The new commit id goes to out.
 */
int mcg_gitops_commit_worktree(char out[MCG_SHA_HEX + 1], const char *path, const char *message,
                               const mcg_sshkey *key, int64_t when, mcg_err *err);

#endif
