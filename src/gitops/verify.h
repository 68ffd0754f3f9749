/*
 * gitops/verify.h — signed history: the verdict on every new source commit,
 * the verified mark, and what a trust change leaves behind (the blast
 * radius of a commit, pools holding untrusted changes, source freshness).
 */
#ifndef MCG_GITOPS_VERIFY_H
#define MCG_GITOPS_VERIFY_H

#include "trust/trust.h"
#include "gitops/repo.h"

/* A commit without a signature: its verdict's reason, exactly. */
#define MCG_REASON_UNSIGNED "commit is not signed"

typedef struct mcg_verdict {
    char sha[MCG_SHA_HEX + 1];
    bool good;
    char principal[256];
    char fingerprint[64];
    char reason[512];
    /* Held: bad, with a valid signature by a key the trust root no longer
     * trusts (revoked, its line deleted); reason says which. Nothing makes
     * a held commit good: it counts only below the receiver's verified mark
     * or a checkpoint of the trust root, which are not verified again
     * (docs/trust.md, "Trust changes"). Kept to report a revoked key's
     * commits and what they left (`verify --all`, UntrustedChanges). */
    bool held;
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
     * NULL: what neither the repository's verified mark
     * (mcg_gitops_verified_mark) nor a checkpoint of the trust root
     * (mcg_signers_checkpoints) reaches, each where tip descends from it
     * (unless from_root: then the whole history). */
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
int mcg_gitops_mark_verified(mcg_repo *r, const char *tip, const mcg_signers *root, mcg_err *err);

/*
 * The trust root: the allowed_signers file at path with the checkpoints it
 * names (mcg_signers_checkpoints), and the revocation file revoked (NULL or
 * "": none). The one loader of the CLI, the hooks and the controller. A
 * file missing, too large or malformed: an error naming it, *out NULL.
 */
int mcg_gitops_load_trust(mcg_signers **out, const char *path, const char *revoked, mcg_err *err);
/*
 * The trust root a command that signs verifies with: trust (--trust), else
 * r's git config mcgit.trust, else gpg.ssh.allowedSignersFile; revoked
 * (--revoked), else mcgit.revoked, else gpg.ssh.revocationFile. None: an
 * error saying how to give one.
 */
int mcg_gitops_signing_trust(mcg_signers **out, mcg_repo *r, const char *trust, const char *revoked,
                             mcg_err *err);
/*
 * Before signing on top of rev (parents_only: on top of its parents, for
 * an approval of rev itself): every commit of that history not below r's
 * verified mark or a checkpoint of root must verify under root, else
 * MCG_ETRUST naming the first bad commit. Nothing is written.
 */
int mcg_gitops_verify_base(mcg_repo *r, const char *rev, bool parents_only, const mcg_signers *root,
                           mcg_err *err);

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

#endif
