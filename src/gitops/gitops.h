/*
 * gitops — where configs come from and where renders go: config
 * directories, git repositories (libgit2), signed-history verification,
 * rendered commits and rollback. Bundles are in bundle/bundle.h.
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

typedef struct mcg_hook_install_opts {
    const char *repo;          /* the repository (bare or not) */
    const char *trust;         /* absolute path of the trust root, for mcgit.trust */
    const char *revoked; /* absolute path of a revocation list, for mcgit.revoked; NULL: keep */
    const char *source_branch; /* NULL: keep mcgit.sourceBranch (default main) */
    const char *webhook_url;   /* NULL: keep mcgit.webhookURL ("" removes it) */
    const char *webhook_token; /* absolute path, for mcgit.webhookTokenFile; NULL: keep */
} mcg_hook_install_opts;

/*
 * Install pre-receive, post-receive and (unless the repository is bare,
 * where nothing is committed) pre-commit into the repository's hooks
 * directory (atomically each; the paths of those written are pushed to
 * installed, which may be NULL: a hook already holding these bytes with mode
 * 0755 is left alone), record trust and (when given) the source branch in its
 * git config, and point HEAD at the source branch. The hooks run `mcgit` from
 * PATH, or git config mcgit.binary when set (install leaves it alone).
 * *changed (may be NULL) says whether anything changed: a hook, a setting or
 * HEAD. *binary (may be NULL) is set to mcgit.binary's value, or NULL when
 * it is not set (free it).
 */
int mcg_gitops_hook_install(const mcg_hook_install_opts *o, mcg_strv *installed, bool *changed,
                            char **binary, mcg_err *err);

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
/*
 * Check dir's .mcgit/policy.yaml, if any (docs/trust.md, "Two-person
 * rule"): problems go to diags (MCG_EINVAL), and one warning line per path
 * pattern that matches no file of the tree (.git left out) to warnings.
 */
int mcg_source_check_policy_dir(const char *dir, mcg_diags *diags, mcg_strv *warnings);

/* ------------------------------------------------------------ git repos */

#include "trust/trust.h"

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

/* ------------------------------------------------------------ verify */

typedef struct mcg_verdict {
    char sha[MCG_SHA_HEX + 1];
    bool good;
    char principal[256];
    char fingerprint[64];
    char reason[512];
    /* Held: the commit's signature is valid but its key (or an approval's)
     * is not trusted now — revoked, removed, expired (reason says which).
     * A held commit is good only when a later good commit of the range
     * descends from it (docs/trust.md, "Trust changes"): then good is true
     * and vouched_by names the nearest such commit; else it is bad. */
    bool held;
    char vouched_by[MCG_SHA_HEX + 1];
} mcg_verdict;

typedef struct mcg_verify_report {
    mcg_verdict *v; /* parents before children */
    size_t n;
    size_t nbad;
    double seconds; /* mcg_gitops_render: the wall time its verification took */
} mcg_verify_report;

void mcg_verify_report_free(mcg_verify_report *rep);

/* How far committer times may disagree: with the first parent, and ahead
 * of the receiver's clock for history arriving now (seconds). */
#define MCG_CLOCK_SKEW 3600

struct mcg_packscan;

typedef struct mcg_verify_opts {
    /* Verify only what is not reachable from since (trusted as verified).
     * NULL: the repository's verified mark (mcg_gitops_verified_mark) when
     * tip descends from it (unless from_root), else the whole history. */
    const char *since;
    bool from_root; /* with since NULL: ignore the verified mark */
    /* Nonzero: this history is arriving now (push, fetch, bundle import) on
     * a receiver that already holds verified history; each commit's key
     * must also be valid at `now` (this host's clock) and its committer
     * time no later than now + MCG_CLOCK_SKEW. 0: history already held, or
     * a first fetch, is judged by its own committer times only. */
    int64_t now;
    /* With now 0: a receiver without verified history (a first push, fetch
     * or bundle import); nonzero: the newest commit (the tip) must still
     * verify as arriving at this time, so old history reaches a new
     * receiver only under a commit signed by a key valid now
     * (docs/trust.md, "The newest commit must be valid now"). */
    int64_t tip_now;
    /* Hints that save work and never change a verdict (a test proves it):
     * signatures whose cryptography was already checked, and what a scan
     * of an incoming pack learnt of its trees. Both may be NULL. */
    const mcg_sigmemo *memo;
    const struct mcg_packscan *scan;
    /* The approvals (refs/notes/mcgit-approvals) to use: a notes commit id,
     * e.g. the value a push is about to give the ref. NULL: the ref's value
     * in the repository, if any. */
    const char *approvals;
} mcg_verify_opts;

/*
 * Verify every commit reachable from `tip` and not from the lower bound
 * (see mcg_verify_opts; opts may be NULL), merges included, parents before
 * children. A commit is good when its SSH signature (namespace git)
 * verifies, at its committer time, under the signers of every one of its
 * parents: the trust root `root` plus .mcgit/allowed_signers as it stands
 * in that parent (a parent that failed verification contributes the root
 * alone; a parentless commit has the root alone); and its committer time is
 * no more than MCG_CLOCK_SKEW before its first parent's. See
 * docs/concepts.md. Returns 0 after checking every commit (report->nbad
 * says how many failed), or an error when the range itself cannot be read.
 */
int mcg_gitops_verify(mcg_verify_report *rep, mcg_repo *r, const char *tip,
                      const mcg_verify_opts *opts, const mcg_signers *root, mcg_err *err);

/* One range for mcg_gitops_verify_ranges: as mcg_gitops_verify takes it. */
typedef struct mcg_verify_range {
    const char *tip;       /* a revision */
    const char *since;     /* a revision, or NULL: the verified mark when tip descends from it */
    mcg_verify_report rep; /* the result (free with mcg_verify_report_free) */
    bool newest;           /* its tip is checked at opts->tip_now (the source branch) */
} mcg_verify_range;

/* How mcg_gitops_verify_ranges may use a second thread. */
typedef struct mcg_verify_threads {
    /* A second handle on the same repository (same object database, hints
     * attached alike), used only by the second thread; NULL: one thread. */
    mcg_repo *helper;
    /* Run first on the second thread (on the calling one when there is no
     * second), before it takes verification work; may be NULL. */
    void (*first)(void *ctx);
    void *first_ctx;
    /* Progress in commits, called under a lock from either thread; may be NULL. */
    void (*tick)(void *ctx, uint64_t done, uint64_t total);
    void *tick_ctx;
    /* For tests: the walk of the first range waits until the second thread
     * has read ahead of it all it can (see verify_pool.c). */
    bool ahead_first;
} mcg_verify_threads;

/*
 * mcg_gitops_verify of each of n ranges, the work shared by the calling
 * thread and a second one (th may be NULL: one thread). Each
 * ranges[i].rep is exactly what mcg_gitops_verify(r, tip, opts with
 * since) reports — the same verdicts, order, first bad commit and
 * messages — and the return is its error for the first range (in order)
 * whose range cannot be read. The approvals ref is read once for all
 * ranges when opts->approvals is NULL.
 */
int mcg_gitops_verify_ranges(mcg_verify_range *ranges, size_t n, mcg_repo *r,
                             const mcg_verify_threads *th, const mcg_verify_opts *opts,
                             const mcg_signers *root, mcg_err *err);
/* The since a range's verification uses: since, else the verified mark tip
 * descends from; "" when none. */
void mcg_gitops_effective_since(char out[MCG_SHA_HEX + 1], mcg_repo *r, const char *tip,
                                const char *since, const mcg_signers *root);
/*
 * The last commit of the source branch verified: true with its id in sha
 * when this repository holds such a mark for the same source branch. The
 * mark is a file in the git directory (mcgit/verified) that no push, fetch
 * or bundle can write. It is kept across trust root changes (root is not
 * compared): a trust change applies to history that arrives after it
 * (docs/trust.md, "Trust changes").
 */
bool mcg_gitops_verified_mark(mcg_repo *r, const mcg_signers *root, char sha[MCG_SHA_HEX + 1]);
/*
 * Record tip as verified under root (atomically). A tip that the recorded
 * commit already descends from leaves it unchanged, so the mark never moves
 * back.
 */
int mcg_gitops_mark_verified(mcg_repo *r, const char *tip, const mcg_signers *root,
                             mcg_err *err);

/*
 * Check one ref update of a push ("<old> <new> <ref>" as git's pre-receive
 * hook reads them; all-zero ids for a create or delete) at time now. Returns
 * 0 when it may go ahead, else the first refusal's code with one line per
 * reason ("refusing <ref>: ...") added to out:
 *   - refs under refs/mcgit/ and the rendered branch: never by a push;
 *   - the source branch: not deleted, fast-forward only, every new commit
 *     verified (arrival checks at now unless the branch is new), and the
 *     new tree loads and renders; when accepted, its plan (mcg_plan_lines)
 *     follows as "plan: ..." lines;
 *   - tags (under refs/tags/): created only, their history verified likewise;
 *   - refs/notes/mcgit-approvals: only grows (mcg_gitops_approvals_grow);
 *   - anything else: accepted and read by nothing; another branch (not
 *     deleted) gets one "note: <branch> is not the source branch (<source>):
 *     ..." line.
 * approvals: the value the same push gives refs/notes/mcgit-approvals
 * (approvals for the two-person rule pushed with the branch), or NULL for
 * the ref's current value.
 */
int mcg_gitops_receive_check(mcg_repo *r, const mcg_signers *root, const char *old,
                             const char *new, const char *ref, int64_t now,
                             const char *approvals, mcg_diags *out);

/* The longest ref name an update line may carry, with its NUL. */
#define MCG_REFNAME_MAX 4096

/*
 * One line of what git's receive-pack writes to the hooks: "<old> <new>
 * <ref>\n" (len bytes, the '\n' included), two ids of 40 lower-case hex
 * digits and a ref name without spaces or control characters, shorter than
 * MCG_REFNAME_MAX. true and the three fields filled when it is one; false
 * (nothing filled) for anything else — truncated, overlong, extra fields.
 */
bool mcg_gitops_receive_parse_line(const char *line, size_t len, char old[MCG_SHA_HEX + 1],
                                   char new[MCG_SHA_HEX + 1], char ref[MCG_REFNAME_MAX]);

/*
 * The pre-receive hook: input (len bytes) is its stdin, one update line per
 * ref. Every line is parsed first; one that does not parse adds "refusing
 * push: cannot parse update line N: '<its first 80 bytes>'" and refuses the
 * push (MCG_EINVAL) — fail closed. Then each parsed update is judged by
 * mcg_gitops_receive_check at now, with the approvals note the same push
 * sets (if any). Returns 0 when the push may go ahead, else the first
 * refusal's code; out gets every line for the pusher, in order.
 */
int mcg_gitops_pre_receive(mcg_repo *r, const mcg_signers *root, const char *input, size_t len,
                           int64_t now, mcg_diags *out);

/*
 * The post-receive hook: input as for mcg_gitops_pre_receive (a line that
 * does not parse adds "ignoring push: cannot parse ..." and makes the
 * result MCG_EINVAL). When the push moved the source branch (not a
 * deletion), *source_moved is set and its new tip rendered as
 * mcg_gitops_render does: out gets the render's diagnostics, sorted, then
 * "render failed: ..." or "rendered <source> as <branch> <rendered>" (12
 * digits each; nothing when it was rendered already), and the render's code
 * is returned.
 */
int mcg_gitops_post_receive(bool *source_moved, mcg_repo *r, const mcg_signers *root,
                            const char *input, size_t len, mcg_diags *out);

/*
 * The blast radius of source commit `commit` (typically one a revoked key
 * signed): for each pool whose config at the rendered branch's tip still
 * holds a change the commit made, one line "<pool>: <kind> <key>[, ...]"
 * pushed to out (kinds as mcg_diff_kind_name). A change counts as replaced
 * once the same kind and key changed again between the commit's rendered
 * commit and the tip. Nothing when the rendered branch does not hold the
 * commit's render.
 */
int mcg_gitops_blast_radius(mcg_strv *out, mcg_repo *r, const char *commit, mcg_err *err);

/*
 * The pools whose current rendered config still holds changes from commits
 * of the verified source history whose keys the trust root `root` no
 * longer trusts (held commits, docs/trust.md "Trust changes"): one line
 * "<pool>\t<commit, 12 digits>: <kind> <key>, ..." per pool and commit,
 * pushed to out. The held commits are kept in mcgit/untrusted in the git
 * directory (a cache: recomputed from the root when the trust root changes,
 * extended when the source moves on). Nothing before anything is verified.
 */
int mcg_gitops_untrusted_pools(mcg_strv *out, mcg_repo *r, const mcg_signers *root, mcg_err *err);

/* How fresh the verified source is (freeze protection, docs/trust.md). */
typedef struct mcg_source_freshness {
    char commit[MCG_SHA_HEX + 1]; /* the newest verified source commit, "" none */
    int64_t time;                 /* its committer time */
    int64_t max_age;              /* maxSourceAge of its .mcgit/policy.yaml, 0: none */
} mcg_source_freshness;

/*
 * Fill out for the repository's newest verified source commit (the mark
 * made under root): its time and the maxSourceAge its own policy sets. A
 * repo with nothing verified gives an empty result and 0.
 */
int mcg_gitops_source_freshness(mcg_source_freshness *out, mcg_repo *r, const mcg_signers *root,
                                mcg_err *err);
/* The SourceStale message at time now (caller frees), or NULL when fresh or no limit. */
char *mcg_source_stale_message(const mcg_source_freshness *f, int64_t now);

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
 * Verify (every new commit up to rev), then make the rendered commit of rev
 * and move the rendered branch to it. The rendered commit R(S) of a source
 * commit S is a pure function of S's history (docs/concepts.md, "Rendered
 * history"): its tree holds per pool spec.json, name, files/<path>,
 * units/<unit> (+ <unit>.d/); author and committer are mcgit
 * <mcgit@localhost> at S's committer time; the message ends in the
 * trailers Render-Rule: 2 (Rollback-To copied from S) and Source-Commit: S;
 * its parents are R of the nearest rendering ancestors along each of S's
 * parents. So every clone computes the same ids, whatever it rendered
 * before; R of every commit below rev not rendered yet is made too (only
 * rev's render problems are reported). The branch moves when rev descends
 * from the last rendered source, stays when rev was rendered already, and
 * nothing moves if verification or the render fails (bad verdicts in *rep
 * when rep is given) or rev went sideways (MCG_ECONFLICT). A rendered
 * branch made by an older mcgit is replaced; its old tip stays as
 * refs/mcgit/rendered-legacy/<sha>. *out_render (optional) receives the
 * render.
 */
int mcg_gitops_render(mcg_render_result *res, mcg_render **out_render, mcg_verify_report *rep,
                      mcg_repo *r, const char *rev, const mcg_signers *root, mcg_diags *diags,
                      mcg_err *err);

/* ------------------------------------------------------------ plan */

/* One pool of a plan (gitops/plan.c). */
typedef struct mcg_plan_pool {
    const char *name;     /* the pool's name (in the plan's render) */
    const mcg_pool *pool; /* the pool in the plan's model */
    char *old_name;       /* the rendered branch tip's name for the pool; NULL: none */
    const char *new_name; /* rendered-<pool>-<hash> of the planned commit */
    const char *error;    /* non-NULL: the pool does not render (diff empty) */
    mcg_diff diff;        /* old -> new, with the disruption actions */
    /* the caller's, from a cluster (nodes_known false: unknown) */
    bool nodes_known;
    size_t machines;         /* the pool's nodes */
    size_t nodes;            /* of them, those not at new_name yet */
    int64_t max_unavailable; /* effective (mcg_rollout_max_unavailable) */
    int64_t waves;           /* mcg_rollout_waves */
} mcg_plan_pool;

typedef struct mcg_plan {
    char source[MCG_SHA_HEX + 1];   /* the planned source commit */
    char rendered[MCG_SHA_HEX + 1]; /* the rendered branch tip compared with, "" when none */
    mcg_model *model;               /* the commit's model (warnings, pools, policy) */
    mcg_render *render;
    mcg_plan_pool *pools; /* sorted by pool name */
    size_t n;
} mcg_plan;

/*
 * The plan of source commit sha (already verified by the caller): load and
 * render it, then compare each pool with the rendered branch tip's
 * <pool>/spec.json under the commit's node disruption policy. Writes
 * nothing. A commit that does not load or render: MCG_EINVAL with every
 * problem in diags. Free *out with mcg_plan_free.
 */
int mcg_gitops_plan(mcg_plan **out, mcg_repo *r, const char *sha, mcg_diags *diags, mcg_err *err);
/* The same for a model and render the caller made of sha; both transferred
 * to *out on success (the caller keeps them on failure). */
int mcg_gitops_plan_make(mcg_plan **out, mcg_repo *r, const char *sha, mcg_model *m,
                         mcg_render *rd, mcg_err *err);
void mcg_plan_free(mcg_plan *p);
/*
 * Pushed to out, one line per change of a pool's current target that an
 * installed node cannot take (MCO's unreconcilable sections: disks, RAID,
 * filesystems, LUKS, users other than core, groups, Ignition's own
 * kernelArguments, fips), naming the pool, the MachineConfigs that set the
 * field and the field: "pool P: MachineConfig M: spec.config.storage.disks
 * added (from rendered-P-...): unreconcilable, ...". None for a pool
 * without a target yet (its first config: nodes take those sections as
 * installed). The render, the pre-receive hook and `mcgit plan` refuse
 * such a commit.
 */
void mcg_plan_unreconcilable(const mcg_plan *p, mcg_strv *out);
/*
 * The plan as text lines (docs/operations.md, "Before you push"), pushed to
 * out: per pool "pool P: OLD -> NEW" (or "(unchanged)"), one line per change
 * "  <op> <kind> <key> (<what>): <actions>" (no key for kernelArguments),
 * "  actions: ..." and
 * "  nodes: ...". Warnings are not included.
 */
void mcg_plan_lines(const mcg_plan *p, mcg_strv *out);
/* "plan for <source, 12 digits> (rendered tip: <12 digits>|none)"; caller frees. */
char *mcg_plan_title(const mcg_plan *p);
/* The plan as the `mcgit plan -o json` document (docs/commands.md); new reference. */
json_t *mcg_plan_json(const mcg_plan *p);

/* ------------------------------------------------------------ rollback */

/*
 * Sign a commit buffer (namespace git): a new armored SSH signature in
 * *armored (the caller frees it), or an error. ctx is the signer's own.
 */
typedef int (*mcg_commit_sign_fn)(char **armored, const char *buf, size_t len, void *ctx,
                                  mcg_err *err);

/* Signing as git does for gpg.format ssh: `PROGRAM -Y sign -n NS -f KEY` (NS: git). */
typedef struct mcg_ssh_signer {
    char *program; /* git config gpg.ssh.program, default ssh-keygen */
    char *key;     /* a key file; its private key may be in ssh-agent, or encrypted */
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
 * Whether refs/notes/mcgit-approvals may move from old (NULL or "": it is
 * not set) to new where refs arrive (push, fetch, bundle import): approvals
 * only grow. new must name a commit (not a deletion, not a blob), descend
 * from old, and hold every note old holds with its text kept as the start
 * of the new text (approvals are appended). 0, or MCG_ECONFLICT/MCG_EINVAL
 * with one line in err.
 */
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

int mcg_gitops_approvals_grow(mcg_repo *r, const char *old, const char *new, mcg_err *err);

typedef struct mcg_rollback_opts {
    mcg_commit_sign_fn sign; /* required */
    void *sign_ctx;
    const char *name, *email; /* author and committer; NULL: git config user.name/email */
    int64_t when;             /* 0: now (then the offset is the local zone's) */
    int offset;               /* minutes east of UTC, with when */
} mcg_rollback_opts;

typedef struct mcg_rollback_result {
    char commit[MCG_SHA_HEX + 1]; /* the new source commit */
    char target[MCG_SHA_HEX + 1]; /* the source commit whose configs it restores */
    mcg_strv pools;               /* "pool old new" per pool, "-" where it has none */
    bool checked_out;             /* the work tree was updated */
    bool unchanged;               /* the tip already holds REV's configs: nothing written,
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

/* One rendered commit, newest first in a log. */
typedef struct mcg_log_entry {
    char rendered[MCG_SHA_HEX + 1];
    char source[MCG_SHA_HEX + 1];   /* Source-Commit trailer, "" if none */
    char rollback[MCG_SHA_HEX + 1]; /* Rollback-To trailer, "" if none: the target source
                                       commit (rule 2), or rendered commit (older mcgit) */
    bool rule2;                     /* made by the pure rule (Render-Rule: 2) */
    int64_t time;
    int offset;     /* minutes east of UTC */
    mcg_strv pools; /* "pool rendered-pool-hash" */
    /* filled by mcg_gitops_log_sources when the source commit is held: */
    char *subject, *author; /* NULL when not */
    char signer[64];        /* fingerprint of the key whose signature holds, or "" */
    char principal[256];    /* who that key is under the trust root, or "" */
} mcg_log_entry;

typedef struct mcg_log {
    mcg_log_entry *e;
    size_t n;
} mcg_log;

/* Every commit of the rendered branch, newest first (children before parents). */
int mcg_gitops_log(mcg_log *out, mcg_repo *r, mcg_err *err);
/*
 * Add what each entry's source commit says: subject, author, the
 * fingerprint of the key whose signature over it holds, and with root (may
 * be NULL) the principal trusting that key (root plus .mcgit/allowed_signers
 * of its first parent, at its committer time).
 */
int mcg_gitops_log_sources(mcg_log *l, mcg_repo *r, const mcg_signers *root, mcg_err *err);
void mcg_log_free(mcg_log *l);

/*
 * Read a file from the tree of the rendered branch's tip: e.g.
 * "worker/spec.json". ENOTFOUND when there is no such file or branch.
 */
int mcg_gitops_read_rendered(char **data, size_t *len, mcg_repo *r, const char *path,
                             char tip_out[MCG_SHA_HEX + 1], mcg_err *err);

/* How long a fetch may talk to its remote unless told otherwise, in seconds. */
#define MCG_FETCH_TIMEOUT_DEFAULT 300

typedef struct mcg_fetch_opts {
    int64_t now;      /* this host's clock: when the branch is held, new commits arrive now */
    unsigned timeout; /* seconds for the whole transfer; 0: MCG_FETCH_TIMEOUT_DEFAULT */
} mcg_fetch_opts;

/*
 * Fetch the source branch from a remote, fast-forward only, and move the
 * local branch only after every new commit verified under root (see
 * mcg_gitops_verify; when the branch is held already, its new commits
 * arrive at o->now). A refusal ("commit <id> refused: <why>", MCG_ETRUST)
 * moves nothing, so a remote cleaned up later fetches cleanly. Tags are not
 * fetched. o may be NULL (now 0, the default timeout).
 *
 * The transfer ends by o->timeout, however the server behaves. Credentials
 * and pins come from the directory named by $MCGIT_GIT_CREDENTIALS (Flux's
 * and Kubernetes' Secret key names): `identity` or `ssh-privatekey` (ssh; user
 * from the URL, else `username`, else git) with `known_hosts`, required for
 * ssh and the only source of trusted host keys; `username` + `password`, or
 * `token` (basic auth as `username`, else x-access-token), or `bearerToken`
 * (an Authorization: Bearer header), and `ca.crt` (https, the CAs trusted in
 * place of the system's). Each is offered once: a rejected credential fails
 * the fetch instead of looping. A transport failure is one line, MCG_EIO,
 * "URL: CAUSE: detail" (the URL without a password; causes: cannot resolve
 * host, connection refused, timed out, authentication failed, host key
 * refused, TLS certificate refused, not a git repository); nothing moves.
 */
int mcg_gitops_fetch(mcg_repo *r, const char *remote, const mcg_signers *root,
                     const mcg_fetch_opts *o, char sha_out[MCG_SHA_HEX + 1], mcg_err *err);

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

#endif
