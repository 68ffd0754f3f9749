/*
 * gitops — where configs come from and where renders go: config
 * directories, git repositories (libgit2), signed-history verification,
 * rendered commits, rollback and bundles.
 */
#ifndef MCG_GITOPS_H
#define MCG_GITOPS_H

#include "model/model.h"
#include "render/render.h"

/* ------------------------------------------------------------ template */

typedef struct mcg_template_file {
    const char *path; /* relative to the repo root */
    const unsigned char *data;
    size_t len;
} mcg_template_file;

/* repo-template/ and hooks/, compiled in (generated at build time). */
extern const mcg_template_file mcg_template_files[];
extern const mcg_template_file mcg_hook_files[];

/*
 * Create a new config repo in dir (which must not exist or be empty) from
 * the template, and `git init` it (libgit2; no commit). Fails without
 * touching an existing non-empty directory.
 */
int mcg_gitops_init(const char *dir, mcg_err *err);

/* ------------------------------------------------------------ sources */

#define MCG_MAX_SOURCE_FILE (16u * 1024u * 1024u)

/*
 * Load a config directory (a working tree) into a finished model: reads
 * mcgit.yaml, pools/ and machineconfigs/ YAML files in sorted order,
 * refusing symbolic links and non-regular files. Problems go to diags;
 * returns MCG_EINVAL when there were any, MCG_EIO when dir is unreadable.
 * *out is set either way (free with mcg_model_free).
 */
int mcg_source_load_dir(mcg_model **out, const char *dir, mcg_diags *diags, mcg_err *err);


/* ------------------------------------------------------------ git repos */

#include "trust/trust.h"

#define MCG_SHA_HEX 40

typedef struct mcg_repo mcg_repo;

/*
 * Open the git repository at path (bare or not). Starts libgit2. The source
 * branch is mcgit.yaml's sourceBranch as committed at HEAD (default main),
 * the rendered branch likewise (default rendered). In a pre-receive hook the
 * quarantine object directory (GIT_QUARANTINE_PATH) is added as an
 * alternate so new objects can be read before they are accepted.
 */
int mcg_repo_open(mcg_repo **out, const char *path, mcg_err *err);
void mcg_repo_free(mcg_repo *r);
const char *mcg_repo_source_branch(const mcg_repo *r);
const char *mcg_repo_rendered_branch(const mcg_repo *r);
/* Resolve a revision (sha, branch, tag, HEAD~2 ...) to a commit sha. */
int mcg_repo_resolve(const mcg_repo *r, const char *rev, char sha[MCG_SHA_HEX + 1], mcg_err *err);
/* Is a a descendant of (or equal to) b? */
bool mcg_repo_descends(const mcg_repo *r, const char *a, const char *b);

/* ------------------------------------------------------------ verify */

typedef struct mcg_verdict {
    char sha[MCG_SHA_HEX + 1];
    bool good;
    char principal[256];
    char fingerprint[64];
    char reason[512];
} mcg_verdict;

typedef struct mcg_verify_report {
    mcg_verdict *v; /* parents before children */
    size_t n;
    size_t nbad;
} mcg_verify_report;

void mcg_verify_report_free(mcg_verify_report *rep);

/*
 * Verify every commit reachable from `tip` and not from `since` (NULL: the
 * last verified commit recorded in refs/mcgit/verified when it is an
 * ancestor of tip, else from the root), merges included. A commit is good
 * when its SSH signature verifies with a key of the trust root `root`, or of
 * .mcgit/allowed_signers as it stands in the commit's first parent, provided
 * that parent is good (or below `since`). Returns 0 after checking every
 * commit (report->nbad says how many failed), or an error when the range
 * itself cannot be read.
 */
int mcg_gitops_verify(mcg_verify_report *rep, mcg_repo *r, const char *tip, const char *since,
                      const mcg_signers *root, mcg_err *err);
/*
 * Record tip as the last verified commit (refs/mcgit/verified). A tip that
 * the recorded commit already descends from leaves it unchanged, so the
 * mark never moves back.
 */
int mcg_gitops_mark_verified(mcg_repo *r, const char *tip, mcg_err *err);

/* Load the config files of a commit's tree into a finished model. */
int mcg_gitops_load_commit(mcg_model **out, mcg_repo *r, const char *sha, mcg_diags *diags,
                           mcg_err *err);

/* ------------------------------------------------------------ render */

typedef struct mcg_render_result {
    bool created;                   /* false: this source was already rendered */
    char rendered[MCG_SHA_HEX + 1]; /* the rendered commit for the source */
    char source[MCG_SHA_HEX + 1];
} mcg_render_result;

/*
 * Verify (every new commit up to rev), render the tree of rev and append a
 * commit to the rendered branch: per pool spec.json, name, files/<path>,
 * units/<unit> (+ <unit>.d/). Author and committer are mcgit <mcgit@localhost>
 * at the source commit's committer time, so the same source history renders
 * to the same commit ids anywhere. Nothing moves if verification or the
 * render fails (bad verdicts in *rep when rep is given), or if rev does not
 * descend from the last rendered source (use rollback to go back). *out_render
 * (optional) receives the render.
 */
int mcg_gitops_render(mcg_render_result *res, mcg_render **out_render, mcg_verify_report *rep,
                      mcg_repo *r, const char *rev, const mcg_signers *root, mcg_diags *diags,
                      mcg_err *err);

/*
 * Append a commit restoring the tree of a rendered commit (or of the render
 * of a source commit), whole or only pool `pool`'s part, with trailer
 * Rollback-To: <rendered sha>. now is the commit time.
 */
int mcg_gitops_rollback(char out[MCG_SHA_HEX + 1], mcg_repo *r, const char *rev, const char *pool,
                        int64_t now, mcg_err *err);

/* One rendered commit, newest first in a log. */
typedef struct mcg_log_entry {
    char rendered[MCG_SHA_HEX + 1];
    char source[MCG_SHA_HEX + 1];   /* Source-Commit trailer, "" if none */
    char rollback[MCG_SHA_HEX + 1]; /* Rollback-To trailer, "" if none */
    int64_t time;
    int offset; /* minutes east of UTC */
    mcg_strv pools; /* "pool rendered-pool-hash" */
} mcg_log_entry;

typedef struct mcg_log {
    mcg_log_entry *e;
    size_t n;
} mcg_log;

int mcg_gitops_log(mcg_log *out, mcg_repo *r, mcg_err *err);
void mcg_log_free(mcg_log *l);

/*
 * Read a file from the tree of the rendered branch's tip: e.g.
 * "worker/spec.json". ENOTFOUND when there is no such file or branch.
 */
int mcg_gitops_read_rendered(char **data, size_t *len, mcg_repo *r, const char *path,
                             char tip_out[MCG_SHA_HEX + 1], mcg_err *err);

/*
 * Fetch the source branch from a remote, fast-forward only. Credentials for
 * a private remote come from the directory named by $MCGIT_GIT_CREDENTIALS:
 * files `username` + `password` (https) or `ssh-privatekey` (ssh; user from
 * the URL, else `git`), offered once each — a rejected credential fails the
 * fetch instead of looping.
 */
int mcg_gitops_fetch(mcg_repo *r, const char *remote, char sha_out[MCG_SHA_HEX + 1],
                     mcg_err *err);

/* Whether REPO names a remote repository (scheme://... or user@host:path). */
bool mcg_gitops_is_url(const char *repo);

/*
 * The controller's mirror of a remote config repo: a bare repository at dir
 * whose remote `origin` is url, created if missing (atomically: built under
 * a temporary name, then renamed). An existing dir whose origin differs is
 * refused, so one mirror never mixes two histories.
 */
int mcg_gitops_mirror(const char *url, const char *dir, mcg_err *err);


/* ------------------------------------------------------------ signing */

/* The key pair and mcg_sshsig_sign are trust's (trust/trust.h). */
/*
 * Stage every change in the work tree at path and commit it on the branch
 * HEAD points at, signed with key (NULL: unsigned), author and committer
 * "mcgit demo" at time when. The new commit id goes to out.
 */
int mcg_gitops_commit_worktree(char out[MCG_SHA_HEX + 1], const char *path, const char *message,
                               const mcg_sshkey *key, int64_t when, mcg_err *err);

/* ------------------------------------------------------------ bundles */
/*
 * Air-gapped transport as standard git bundles (git's gitformat-bundle):
 * "# v2 git bundle", "-<oid> <subject>" prerequisites, "<oid> <refname>"
 * lines, a blank line, then a packfile. See docs/bundles.md.
 */

#define MCG_BUNDLE_PROGRESS 1u /* draw a progress bar on stderr */

typedef struct mcg_bundle_create_opts {
    const char *since;       /* NULL: a full bundle; else only what is new since REV */
    const char *const *refs; /* refs to include (dwim'd: "main", "v1", "refs/x/y") */
    size_t nrefs;            /* 0: HEAD, the source branch and every tag */
    unsigned flags;          /* MCG_BUNDLE_PROGRESS */
} mcg_bundle_create_opts;

typedef struct mcg_bundle_info {
    size_t nrefs, nprerequisites, nobjects;
    uint64_t bytes; /* the whole bundle file */
} mcg_bundle_info;

/*
 * Write a bundle of r to path ("-": standard output, refused when it is a
 * terminal), atomically: an unnamed temp file in the same directory
 * (O_TMPFILE; a named one where the file system has none), fsync, rename.
 * The pack is streamed, never held whole: the repo's stored pack entries
 * copied when (nearly) every object is packed, else git_packbuilder's
 * output, its deltas rewritten as OFS_DELTA. With opts->since, the
 * prerequisites are the commits outside the new set that new commits name
 * as parents, and refs whose commit is not new are left out; nothing new at
 * all is an error (MCG_EINVAL). info may be NULL.
 */
int mcg_bundle_create(mcg_bundle_info *info, mcg_repo *r, const char *path,
                      const mcg_bundle_create_opts *opts, mcg_err *err);

typedef enum mcg_bundle_action {
    MCG_BUNDLE_SKIP,    /* not imported: HEAD, the rendered branch, other namespaces */
    MCG_BUNDLE_SAME,    /* the repo already has this value */
    MCG_BUNDLE_CREATE,  /* a new ref */
    MCG_BUNDLE_FORWARD, /* a fast-forward */
    MCG_BUNDLE_STALE,   /* the repo is ahead: refused (rollback protection) */
    MCG_BUNDLE_REWRITE, /* diverged history or a moved tag: refused */
} mcg_bundle_action;

typedef struct mcg_bundle_ref {
    char *name;                    /* as listed in the bundle (untrusted text, validated) */
    char old_sha[MCG_SHA_HEX + 1]; /* "" when the repo has no such ref */
    char new_sha[MCG_SHA_HEX + 1];
    mcg_bundle_action action;
    const char *note;          /* why skipped (static text), or NULL */
    mcg_verify_report verify;  /* the commits checked for this ref */
    const char *verified_with; /* its commits were checked with this ref (a tag on the
                                  branch): the other ref's name, owned by the report; or NULL */
} mcg_bundle_ref;

typedef struct mcg_bundle_report {
    int version;            /* 2 or 3 */
    mcg_strv prerequisites; /* commit ids */
    mcg_bundle_ref *refs;
    size_t nrefs;
    uint64_t pack_bytes;
    size_t objects;
    size_t prechecked;      /* commit signatures checked while the pack was indexed */
    bool accepted;          /* every check passed */
    bool imported;          /* refs were moved (import only) */
    bool rendered;          /* the source branch's new tip was rendered */
    mcg_render_result render;
} mcg_bundle_report;

void mcg_bundle_report_free(mcg_bundle_report *rep);

/*
 * Check what importing the bundle at path ("-": standard input) into r would
 * do, changing nothing: the header (v2, or v3 with only
 * @object-format=sha1), that every prerequisite is present, the pack
 * (indexed into a quarantine directory objects/mcgit-incoming-XXXXXX that is
 * removed before returning), every object the refs reach present in the
 * pack or the repo, every ref tip present, every ref update a
 * fast-forward (an identical ref is a no-op; a repo ahead of the bundle is
 * "stale"), every new commit signed under the trust root (see
 * mcg_gitops_verify) and the new source tip rendering cleanly. rep is
 * filled as far as the checks got; rep->accepted says whether all passed.
 * Returns 0 when accepted, else the first refusal's code with a one-line
 * reason in err.
 */
int mcg_bundle_verify(mcg_bundle_report *rep, mcg_repo *r, const char *path,
                      const mcg_signers *root, unsigned flags, mcg_err *err);

/*
 * The checks of mcg_bundle_verify, then: move the quarantined pack into
 * objects/pack/, move the refs (compare-and-swap against the values
 * checked), record the source branch's new tip as verified
 * (mcg_gitops_mark_verified: every commit up to it was just checked) and
 * render it (mcg_gitops_render; diags receives render problems). SIGINT,
 * SIGTERM, SIGHUP and SIGQUIT are held back from the pack move to the end,
 * so a signal never leaves an import half done. On any refusal the
 * repository's refs and object files are exactly as they were. A failure of
 * the final render is reported in err after the refs have moved
 * (rep->imported is true).
 */
int mcg_bundle_import(mcg_bundle_report *rep, mcg_repo *r, const char *path,
                      const mcg_signers *root, unsigned flags, mcg_diags *diags, mcg_err *err);

/*
 * Remove what an interrupted bundle command leaves: the quarantine of a
 * verify or import in progress, or the temp file a bundle is being written
 * to. Async-signal-safe: call it from a SIGINT/SIGTERM/SIGHUP handler, then
 * re-raise the signal. A quarantine left by a process that could not run it
 * (kill -9) is removed by the next verify or import of that repository.
 */
void mcg_bundle_signal_cleanup(void);

/* ------------------------------------------------------------ end bundles */

#endif
