/*
 * gitops_int.h — shared inside gitops/.
 */
#ifndef MCG_GITOPS_INT_H
#define MCG_GITOPS_INT_H

#include "gitops/gitops.h"
#include "pack/pack.h" /* oid maps, and the pack scan repo.c consults */

#include <git2.h>
#include <git2/sys/odb_backend.h>

struct mcg_repo {
    git_repository *git;
    char *source_branch;
    char *rendered_branch;
};

/* Convert libgit2's last error into err, prefixed with what was being done. */
int mcg_git_err(mcg_err *err, const char *what);
/* Read a blob at path in a tree; ENOTFOUND when absent. */
int mcg_git_read_path(char **data, size_t *len, git_repository *repo, const git_tree *tree,
                      const char *path, mcg_err *err);
/* The value of trailer `key` in a commit message, or false. */
bool mcg_git_trailer(const char *msg, const char *key, char out[MCG_SHA_HEX + 1]);

/* ------------------------------------------------------------ approvals.c */

#define MCG_APPROVAL_NAMESPACE "mcgit-approval"
#define MCG_APPROVALS_REF "refs/notes/mcgit-approvals"

/* The last .mcgit/policy.yaml parsed, by blob id. Zero-initialise. */
typedef struct mcg_policy_cache {
    git_oid blob;
    bool valid;
    mcg_signpolicy *policy; /* NULL: did not parse (error) */
    char error[512];
} mcg_policy_cache;
void mcg_policy_cache_free(mcg_policy_cache *pc);

/*
 * The two-person rule for commit c over one parent: the policy in
 * parent's tree, the paths c changes relative to it, and the approvals in
 * the note of c in the notes commit `notes` (NULL: none), verified with set
 * (the signers that parent allows) at c's committer time and, when now is
 * nonzero, at now. commit_principal is who signed c. 0 when satisfied (or
 * no rule applies); else MCG_ETRUST with the reason in why.
 */
int mcg_approvals_check(char *why, size_t whylen, git_repository *repo, const git_commit *c,
                        const git_commit *parent, const mcg_signers *set,
                        const char *commit_principal, const git_oid *notes, int64_t now,
                        mcg_policy_cache *pc);

#endif
