/*
 * bundle — air-gapped transport of config history as standard git bundles
 * (git's gitformat-bundle): "# v2 git bundle", "-<oid> <subject>"
 * prerequisites, "<oid> <refname>" lines, a blank line, then a packfile.
 * Create writes one atomically; verify and import check one in a
 * quarantine before anything moves. See docs/bundles.md and
 * docs/architecture.md.
 *
 *   format.c      the header: parsed (untrusted) and written
 *   refs.c        which refs a bundle carries, and an incremental bundle's
 *                 prerequisites
 *   collect.c     which objects it carries, when stored entries are reused
 *   outfile.c     the output file, replaced atomically
 *   create.c      mcg_bundle_create
 *   quarantine.c  the quarantine directory and its cleanup on signals
 *   index.c       the pack indexed into the quarantine, scanned meanwhile
 *   view.c        repository handles that see the quarantine
 *   classify.c    what each ref update would do (fast-forward only)
 *   connect.c     every object the refs reach is present
 *   verify.c      signatures checked on two threads
 *   import.c      mcg_bundle_verify and mcg_bundle_import, step by step
 */
#ifndef MCG_BUNDLE_H
#define MCG_BUNDLE_H

#include "gitops/gitops.h"

/*
 * Progress of a long step, for a display: `what` names the step ("counting
 * objects", "receiving objects", "verifying commits", ...) at cur of total
 * (total 0: not known yet); what == NULL says the current step has ended.
 * Calls never overlap, but may come from a thread of the bundle code's own.
 * A NULL fn (or a NULL mcg_bundle_progress pointer) means no progress.
 */
typedef struct mcg_bundle_progress {
    void (*fn)(void *ctx, const char *what, uint64_t cur, uint64_t total);
    void *ctx;
} mcg_bundle_progress;

typedef struct mcg_bundle_create_opts {
    const char *since;            /* NULL: a full bundle; else only what is new since REV */
    const char *const *refs;      /* refs to include (dwim'd: "main", "v1", "refs/x/y") */
    size_t nrefs;                 /* 0: HEAD, the source branch and every tag */
    mcg_bundle_progress progress; /* {NULL}: none */
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
    size_t prechecked; /* commit signatures checked while the pack was indexed */
    bool accepted;     /* every check passed */
    bool imported;     /* refs were moved (import only) */
    bool rendered;     /* the source branch's new tip was rendered */
    mcg_render_result render;
    char newest[MCG_SHA_HEX + 1]; /* the new source tip the bundle brings, "" none */
    int64_t newest_time;          /* its committer time (freeze protection: how old) */
    mcg_strv plan;    /* what the new source tip does, as text: "plan for <tip> (rendered tip:
                         <sha>)" then mcg_commit_plan_lines; empty when the bundle brings no new tip
                         or was refused first */
    char *plan_error; /* why there is no plan although the tip renders, or NULL (owned) */
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
                      const mcg_signers *root, const mcg_bundle_progress *progress, mcg_err *err);

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
                      const mcg_signers *root, const mcg_bundle_progress *progress,
                      mcg_diags *diags, mcg_err *err);

/*
 * A bundle that carries refs of one namespace only, checked by their owner
 * (a site's status records: site/): refs under prefix are imported, every
 * other ref is skipped; each created or fast-forwarded one is passed to
 * check with a view q that sees the quarantine, before anything moves.
 */
typedef struct mcg_bundle_refs_only {
    const char *prefix; /* e.g. "refs/mcgit/status/" */
    int (*check)(void *ctx, mcg_repo *q, const mcg_bundle_ref *br, mcg_err *err);
    void *ctx;
} mcg_bundle_refs_only;

/*
 * mcg_bundle_import for such a bundle: the header, prerequisites, the pack
 * indexed into a quarantine (every bound of mcg_bundle_import), every ref
 * tip present and its update a fast-forward (an older value refused as
 * stale), every object the refs reach present, only->check for each new
 * value; then the pack and the refs move (compare-and-swap). No signature
 * of a source commit is checked and nothing is rendered. Any refusal
 * changes nothing.
 */
int mcg_bundle_import_only(mcg_bundle_report *rep, mcg_repo *r, const char *path,
                           const mcg_bundle_refs_only *only, mcg_err *err);

/*
 * Remove what an interrupted bundle command leaves: the quarantine of a
 * verify or import in progress, or the temp file a bundle is being written
 * to. Async-signal-safe: call it from a SIGINT/SIGTERM/SIGHUP handler, then
 * re-raise the signal. A quarantine left by a process that could not run it
 * (kill -9) is removed by the next verify or import of that repository.
 */
void mcg_bundle_signal_cleanup(void);

#endif
