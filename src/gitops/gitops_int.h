/*
 * gitops_int.h — shared inside gitops/.
 */
#ifndef MCG_GITOPS_INT_H
#define MCG_GITOPS_INT_H

#include "gitops/gitops.h"
#include "pack/pack.h" /* oid maps, and the pack scan repo.c consults */

#include <git2.h>
#include <git2/sys/odb_backend.h>
#include <stdatomic.h>

struct mcg_repo {
    git_repository *git;
    char *source_branch;
    char *rendered_branch;
};

/* Read a blob at path in a tree; ENOTFOUND when absent. */
int mcg_git_read_path(char **data, size_t *len, git_repository *repo, const git_tree *tree,
                      const char *path, mcg_err *err);
/*
 * Load the config files of a tree (mcgit.yaml, pools/, machineconfigs/)
 * into a finished model, as mcg_gitops_load_commit does for a commit's
 * tree; label names the tree in messages. *out is set either way.
 */
int mcg_git_load_tree(mcg_model **out, mcg_repo *r, const git_tree *tree, const char *label,
                      mcg_diags *diags, mcg_err *err);
/* The value of trailer `key` in a commit message, or false. */
bool mcg_git_trailer(const char *msg, const char *key, char out[MCG_SHA_HEX + 1]);

/* The trailer that marks a rendered commit made by the pure rule (rendered.c). */
#define MCG_RENDER_RULE_TRAILER "Render-Rule: 2"

/*
 * The pure rendered history (rendered.c; see there for the rule). A chain
 * knows R(S) for the source commits S the rendered branch already holds
 * (rule 2 only; *rule2_tip says whether its tip is such a commit, may be
 * NULL), and mcg_chain_render makes R(tip) and every missing R below it,
 * writing objects only, never refs. The tip's render problems go to diags
 * (may be NULL) and its render to *out_rd (may be NULL). Afterwards
 * mcg_chain_count/mcg_chain_at list the rendering source commits reachable
 * from the tip, oldest first, with their rendered commits. out NULL: only
 * walk (the tip need not render; nothing is reported for it).
 */
typedef struct mcg_chain mcg_chain;
int mcg_chain_new(mcg_chain **out, mcg_repo *r, bool *rule2_tip, mcg_err *err);
void mcg_chain_free(mcg_chain *ch);
int mcg_chain_render(git_oid *out, mcg_chain *ch, const git_oid *tip, mcg_diags *diags,
                     mcg_render **out_rd, mcg_err *err);
size_t mcg_chain_count(const mcg_chain *ch);
void mcg_chain_at(const mcg_chain *ch, size_t i, git_oid *source, git_oid *rendered);
bool mcg_chain_lookup(const mcg_chain *ch, const git_oid *source, git_oid *rendered);
/*
 * A second handle on r's repository whose new objects stay in memory (*mem,
 * the in-memory backend of its own object database; scratch.c): rendered
 * history computed there writes nothing. mcg_repo_scratch_persist writes
 * what it holds into r — one pack from 100 objects on, else loose objects —
 * and empties it. Free the handle with mcg_repo_free.
 */
int mcg_repo_scratch(mcg_repo **out, git_odb_backend **mem, const mcg_repo *r, mcg_err *err);
int mcg_repo_scratch_persist(mcg_repo *r, mcg_repo *scratch, git_odb_backend *mem, mcg_err *err);
/* Rendered commits written, and trees rendered (memo misses), so far. */
void mcg_chain_stats(const mcg_chain *ch, size_t *made, size_t *renders);

/* ------------------------------------------------------------ approvals.c */

#define MCG_APPROVAL_NAMESPACE "mcgit-approval"
#define MCG_APPROVALS_REF "refs/notes/mcgit-approvals"

/*
 * mcg_gitops_verify in two steps, so that the second can be shared between
 * threads (verify_pool.c). The walk: the range (since, tip] as
 * mcg_gitops_verify resolves it, parents before children, and the
 * approvals to use.
 */
typedef struct mcg_vrange {
    git_oid *order; /* the range in walk order */
    size_t n;
    git_oid notes; /* the approvals notes commit, when has_notes */
    bool has_notes;
} mcg_vrange;
int mcg_verify_walk(mcg_vrange *vr, mcg_repo *r, const char *tip, const mcg_verify_opts *o,
                    const mcg_signers *root, mcg_err *err);
void mcg_vrange_free(mcg_vrange *vr);
/*
 * Verify order[from, to) of the walk into out[0, to - from), taking every
 * commit of the range before `from` as good; returns how many are bad.
 * With from 0 and to n it is one pass of mcg_gitops_verify. When every
 * commit before `from` is indeed good, the verdicts are exactly that
 * pass's. Only reads vr and r's objects: threads may run chunks of one
 * walk at once, each with its own handle on the repository.
 */
size_t mcg_verify_chunk(mcg_verdict *out, mcg_repo *r, const mcg_vrange *vr, size_t from, size_t to,
                        const mcg_verify_opts *o, const mcg_signers *root);
/*
 * The same for any run of commits: verify ids[0, n), parents before
 * children, into out[pos[i]] (pos NULL: out[i]), taking every commit
 * outside ids as good (whatever it is) and a parent inside them as its
 * verdict there; the bad ones are counted in *nbad. notes: the approvals
 * notes commit, or NULL. Stops before the next commit once *stop (may be
 * NULL) is true; returns how many were verified.
 */
size_t mcg_verify_list(mcg_verdict *out, const size_t *pos, size_t *nbad, mcg_repo *r,
                       const git_oid *ids, size_t n, const git_oid *notes, const mcg_verify_opts *o,
                       const mcg_signers *root, const atomic_bool *stop);

/*
 * With o->tip_now and no o->now (a receiver without verified history): the
 * range's newest commit (its tip, last in vr) must also verify as arriving
 * at o->tip_now; when it does not, its verdict becomes that refusal.
 */
void mcg_verify_tip_now(mcg_verify_report *rep, mcg_repo *r, const mcg_vrange *vr,
                        const mcg_verify_opts *o, const mcg_signers *root);

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
 * nonzero, at now. commit_signer is who signed c (mcg_sig_result.signer:
 * distinct signers are distinct keys, a certificate by its CA and key id). 0 when satisfied (or
 * no rule applies); else MCG_ETRUST with the reason in why.
 */
int mcg_approvals_check(char *why, size_t whylen, git_repository *repo, const git_commit *c,
                        const git_commit *parent, const mcg_signers *set, const char *commit_signer,
                        const git_oid *notes, int64_t now, mcg_policy_cache *pc);

/* ------------------------------------------------------------ heartbeat.c */

/* Author/committer for a commit mcgit makes for the operator (o->name, else git config). */
int mcg_git_signature_for(git_signature **out, mcg_repo *r, const mcg_rollback_opts *o,
                          const char *who, mcg_err *err);
/* A commit of tree on parent (may be NULL), signed with o->sign; its id in out. */
int mcg_git_commit_signed(git_oid *out, mcg_repo *r, const git_tree *tree, const git_commit *parent,
                          const char *msg, const git_signature *sig, const mcg_rollback_opts *o,
                          mcg_err *err);

/* ------------------------------------------------------------ knownhosts.c */

#define MCG_SSH_FP_LEN 64 /* "SHA256:" and 43 base64 characters, as ssh-keygen -l */

typedef enum mcg_knownhosts_verdict {
    MCG_KH_MATCH,    /* the offered key is listed for the host */
    MCG_KH_UNKNOWN,  /* no line names the host */
    MCG_KH_MISMATCH, /* lines name the host, none with the offered key */
    MCG_KH_REVOKED,  /* a @revoked line holds the offered key */
} mcg_knownhosts_verdict;

typedef struct mcg_knownhosts_result {
    char name[320];  /* the name looked up: host, or [host]:port off port 22 */
    char known[400]; /* the host's listed keys, "type SHA256:..., ..." (three, then "...") */
    size_t nknown;
} mcg_knownhosts_result;

/* "SHA256:<base64, unpadded>" of a key whose SHA-256 is sha256, as ssh-keygen -l prints it. */
void mcg_kh_fingerprint(char out[MCG_SSH_FP_LEN], const unsigned char sha256[MCG_SHA256_LEN]);
/*
 * Judge the host key whose SHA-256 (of its wire blob) is offered, for host
 * on port (<= 0 or 22: the plain name), against known_hosts text (len
 * bytes). res is filled either way.
 */
mcg_knownhosts_verdict mcg_knownhosts_check(mcg_knownhosts_result *res, const char *text,
                                            size_t len, const char *host, int port,
                                            const unsigned char offered[MCG_SHA256_LEN]);

/* ------------------------------------------------------------ netstream.c */

/*
 * A deadline for the network I/O of one fetch on this thread: every socket
 * libgit2 opens until mcg_deadline_finish waits at most until it (connect,
 * reads, writes), and a watchdog thread shuts them down when it passes, so
 * libssh2, which waits on the socket itself, stops too. seconds 0: none.
 */
typedef struct mcg_deadline mcg_deadline;
int mcg_deadline_start(mcg_deadline **out, unsigned seconds, mcg_err *err);
/*
 * Let d's streams connect to host (before the fetch). Once a host is
 * listed, a stream to any other is refused ("the remote redirects to
 * another host, HOST"): libgit2 follows an HTTP redirect by connecting
 * there, and before Debian's deb12u2 build hands the credential callback
 * the original URL, so this is where a redirect to another host is seen.
 */
void mcg_deadline_allow_host(mcg_deadline *d, const char *host);
/* Whether d's deadline has passed (then marked expired); NULL: false. */
bool mcg_deadline_passed(mcg_deadline *d);
/* Stop the watchdog and free d; true when the deadline passed. NULL: false. */
bool mcg_deadline_finish(mcg_deadline *d);

/* ------------------------------------------------------------ remote_pack.c */

/*
 * Every pack a fetch brings is checked before libgit2's indexer resolves
 * it (pack/graph.c), and indexed within the fetch's deadline: an object
 * database backend that takes libgit2's "write this pack" (it outranks the
 * packed backend) keeps a copy for the graph check and runs the indexer
 * itself, its progress callback watching the deadline. Installed once per
 * repository; mcg_transport_pack_begin arms it for a fetch on this thread
 * (url for messages, dl its deadline), mcg_transport_pack_end disarms it and
 * returns why it refused a pack ("" none; valid until the next begin), and
 * in *indexing whether a pack had begun to arrive (then it was being
 * received, checked or indexed).
 */
int mcg_transport_pack_begin(git_repository *repo, const char *url, mcg_deadline *dl, mcg_err *err);
const char *mcg_transport_pack_end(bool *indexing);

/* ------------------------------------------------------------ transport.c */

/*
 * What a fetch from url needs from the credentials directory
 * ($MCGIT_GIT_CREDENTIALS): callbacks for credentials and host key or TLS
 * checks, headers (a bearer token) and the CA bundle, all set in *fo. Freed
 * (secrets wiped) by mcg_transport_free, after the fetch.
 */
typedef struct mcg_transport mcg_transport;
int mcg_transport_open(mcg_transport **out, const char *url, git_fetch_options *fo, mcg_err *err);
/*
 * The failed fetch's one-line reason: "URL: CAUSE: detail", the URL without
 * a password, the cause one of: cannot resolve host, connection refused,
 * timed out, authentication failed, host key refused, TLS certificate
 * refused, not a git repository, or the transport's own message.
 */
int mcg_transport_error(mcg_transport *t, bool expired, unsigned seconds, mcg_err *err);
/*
 * Before the fetch: d's streams may connect only to the remote's host and
 * the proxies' (the environment's, repo's http.proxy). Through a proxy no
 * redirect is followed at all (fo->follow_redirects NONE): the stream then
 * goes to the proxy, whatever host a redirect names.
 */
void mcg_transport_pin(mcg_transport *t, git_fetch_options *fo, git_repository *repo,
                       mcg_deadline *d);
/* The remote's URL as messages show it (no password). */
const char *mcg_transport_url(const mcg_transport *t);
void mcg_transport_free(mcg_transport *t);

#endif
