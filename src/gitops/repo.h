/*
 * gitops/repo.h — a config repository (libgit2): opening it, its branch
 * names, resolving revisions, the source branch watch, library start-up
 * and the counts of bundle imports it took.
 */
#ifndef MCG_GITOPS_REPO_H
#define MCG_GITOPS_REPO_H

#include "util/util.h"

#define MCG_SHA_HEX 40

typedef struct mcg_repo mcg_repo;

/*
 * Open the git repository at path (bare or not). Starts libgit2. The source
 * branch is the repository's git config mcgit.sourceBranch (default main),
 * the rendered branch mcgit.renderedBranch (default rendered): never read
 * from a tree or HEAD, which pushers write. A commit whose mcgit.yaml names
 * other branches does not load (mcg_gitops_load_commit). In a pre-receive hook the
 * quarantine object directory (GIT_QUARANTINE_PATH) is added as an
 * alternate so new objects can be read before they are accepted.
 */
int mcg_repo_open(mcg_repo **out, const char *path, mcg_err *err);
void mcg_repo_free(mcg_repo *r);
const char *mcg_repo_source_branch(const mcg_repo *r);
const char *mcg_repo_rendered_branch(const mcg_repo *r);
/*
 * libgit2's handle on r's repository (owned by r), for the modules that may
 * use libgit2 themselves (bundle; see tests/layering.py). Its type is only
 * declared here, so including this header does not pull in libgit2.
 */
struct git_repository;
struct git_repository *mcg_repo_git(const mcg_repo *r);
/* Convert libgit2's last error into err, prefixed with what was being done. */
int mcg_git_err(mcg_err *err, const char *what);
/*
 * A second handle on r's repository, with r's branch names, whose object
 * database is odb (a reference is taken; the caller keeps its own): how
 * bundle import looks at quarantined objects before they are admitted.
 * Free it with mcg_repo_free.
 */
struct git_odb;
int mcg_repo_open_view(mcg_repo **out, const mcg_repo *r, struct git_odb *odb, mcg_err *err);

/*
 * Accepted bundle imports into a repository (imports.c): how many, and the
 * unix time of the newest. mcgit bundle import counts one with
 * mcg_gitops_note_import (atomic, serialised between concurrent imports);
 * a refused import counts nothing. mcg_gitops_import_stats: false (and
 * zeros) when none was ever recorded or the record cannot be read.
 */
typedef struct mcg_import_stats {
    uint64_t imports;
    int64_t last;
} mcg_import_stats;
int mcg_gitops_note_import(mcg_repo *r, int64_t now, mcg_err *err);
bool mcg_gitops_import_stats(const mcg_repo *r, mcg_import_stats *out);
/*
 * git_libgit2_init with mcgit's settings; every gitops and bundle entry
 * point calls it instead (balanced by git_libgit2_shutdown, as before), and
 * so does anything else that writes through libgit2. The first
 * initialisation turns on GIT_OPT_ENABLE_FSYNC_GITDIR: the objects, packs,
 * refs and reflogs mcgit writes (server, mirror, bundle import, rollback)
 * reach the disk before a ref can name them, so a power cut never leaves a
 * ref naming a lost object. Returns git_libgit2_init's count.
 */
int mcg_gitops_lib_init(void);
/* Resolve a revision (sha, branch, tag, HEAD~2 ...) to a commit sha. */
int mcg_repo_resolve(const mcg_repo *r, const char *rev, char sha[MCG_SHA_HEX + 1], mcg_err *err);
/* The committer time of commit sha in *t; 0, or MCG_ENOTFOUND. */
int mcg_gitops_commit_time(int64_t *t, mcg_repo *r, const char *sha);
/*
 * `git reset --hard REV` in the work tree at path (the demo drops a commit
 * it was shown refused). Refs, index and work tree move together.
 */
int mcg_gitops_reset_hard(const char *path, const char *rev, mcg_err *err);
/*
 * A watch on the source branch of the repository at path, for a daemon
 * that looks at it every quarter second. The repository is opened once and
 * whether it has a remote is decided once; each read is one ref lookup on
 * that handle (no configuration is read again, nothing accumulates).
 * mcg_gitops_tip_watch_open: MCG_EIO when path cannot be opened (*out
 * NULL). mcg_gitops_tip_watch_read: the branch's tip in sha, when the
 * repository has no remote (a repo operators push to directly) and the
 * branch exists; false otherwise (w may be NULL). The watch holds libgit2
 * initialised until mcg_gitops_tip_watch_free (NULL: no-op).
 */
typedef struct mcg_tip_watch mcg_tip_watch;
int mcg_gitops_tip_watch_open(mcg_tip_watch **out, const char *path);
bool mcg_gitops_tip_watch_read(mcg_tip_watch *w, char sha[MCG_SHA_HEX + 1]);
void mcg_gitops_tip_watch_free(mcg_tip_watch *w);
/* Is a a descendant of (or equal to) b? */
bool mcg_repo_descends(const mcg_repo *r, const char *a, const char *b);

#endif
