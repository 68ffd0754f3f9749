/*
 * gitops_int.h — shared inside gitops/.
 */
#ifndef MCG_GITOPS_INT_H
#define MCG_GITOPS_INT_H

#include "gitops/gitops.h"

#include <git2.h>

struct mcg_repo {
    git_repository *git;
    char *source_branch;
    char *rendered_branch;
    const mcg_sigmemo *memo; /* signatures already checked (bundle import), or NULL */
};

/* Convert libgit2's last error into err, prefixed with what was being done. */
int mcg_git_err(mcg_err *err, const char *what);
/* Read a blob at path in a tree; ENOTFOUND when absent. */
int mcg_git_read_path(char **data, size_t *len, git_repository *repo, const git_tree *tree,
                      const char *path, mcg_err *err);
/* The value of trailer `key` in a commit message, or false. */
bool mcg_git_trailer(const char *msg, const char *key, char out[MCG_SHA_HEX + 1]);

/*
 * Apply a git delta (pack format) to base: the result in a new buffer of
 * *outlen bytes, or NULL when the delta is malformed, does not fit base, or
 * would make more than max bytes. (bundle.c)
 */
unsigned char *mcg_git_delta_apply(size_t *outlen, const unsigned char *base, size_t blen,
                                   const unsigned char *d, size_t dlen, size_t max);

/*
 * Checking a pack's commit signatures while it streams by (precheck.c).
 * mcg_precheck_start starts a thread; mcg_precheck_feed hands it a copy of
 * the next pack bytes (waiting while 16 MiB are queued); mcg_precheck_finish
 * says the pack has ended, checks what is left on the calling thread too,
 * joins, and returns the memo of every commit signature that verified
 * (*checked of them); mcg_precheck_abort stops without one. Each frees p.
 * The memo only saves work (see trust.h): it decides nothing.
 */
typedef struct mcg_precheck mcg_precheck;
mcg_precheck *mcg_precheck_start(void);
void mcg_precheck_feed(mcg_precheck *p, const void *buf, size_t n);
mcg_sigmemo *mcg_precheck_finish(mcg_precheck *p, size_t *checked);
void mcg_precheck_abort(mcg_precheck *p);

#endif
