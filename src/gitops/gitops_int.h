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

#endif
