/*
 * gitops_int.h — shared inside gitops/.
 */
#ifndef MCG_GITOPS_INT_H
#define MCG_GITOPS_INT_H

#include "gitops/gitops.h"

#include <git2.h>
#include <git2/sys/odb_backend.h>

struct mcg_repo {
    git_repository *git;
    char *source_branch;
    char *rendered_branch;
    const mcg_sigmemo *memo;          /* signatures already checked (bundle import), or NULL */
    const struct mcg_packscan *scan;  /* what a scan of the quarantined pack knows, or NULL */
};

/* Convert libgit2's last error into err, prefixed with what was being done. */
int mcg_git_err(mcg_err *err, const char *what);
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
 * A second handle on r's repository whose new objects stay in memory (a
 * mempack backend, *mem, in front of the others): rendered history computed
 * there writes nothing. mcg_repo_scratch_persist writes what it holds into
 * r as one pack (and empties it). Free the handle with mcg_repo_free.
 */
int mcg_repo_scratch(mcg_repo **out, git_odb_backend **mem, const mcg_repo *r, mcg_err *err);
int mcg_repo_scratch_persist(mcg_repo *r, mcg_repo *scratch, git_odb_backend *mem, mcg_err *err);
/* Rendered commits written, and trees rendered (memo misses), so far. */
void mcg_chain_stats(const mcg_chain *ch, size_t *made, size_t *renders);

/*
 * A map from object ids to 64-bit values, or a set of ids (values unused),
 * safe against ids chosen to collide (oidmap.c). Zero-initialise; free with
 * mcg_oidmap_free.
 */
typedef struct mcg_oidmap {
    git_oid *keys;
    uint64_t *vals;
    unsigned char *used;
    size_t cap, n;
} mcg_oidmap;
/* Make room for n more ids. */
void mcg_oidmap_reserve(mcg_oidmap *m, size_t n);
/* Add o -> v; true when o was not there yet (an existing value is kept). */
bool mcg_oidmap_put(mcg_oidmap *m, const git_oid *o, uint64_t v);
/* Whether o is there; its value in *v (v may be NULL). */
bool mcg_oidmap_get(const mcg_oidmap *m, const git_oid *o, uint64_t *v);
void mcg_oidmap_free(mcg_oidmap *m);

/*
 * Raw object parsing for untrusted packs (bundle.c). A commit's tree and
 * parents ("tree X\n", then "parent X\n" lines; each parent to `parent`,
 * which may be NULL); a tag's target ("object X\n" first); the next entry
 * of a tree ("<octal mode> <name>\0<20-byte id>", *p advanced past it).
 * Each false when malformed.
 */
bool mcg_git_commit_links(git_oid *tree, void (*parent)(const git_oid *, void *), void *ctx,
                          const char *p, size_t len);
bool mcg_git_tag_target(git_oid *out, const char *p, size_t len);
typedef struct mcg_tree_entry {
    unsigned mode;
    const unsigned char *name; /* not NUL-terminated */
    size_t namelen;
    git_oid id;
} mcg_tree_entry;
bool mcg_git_tree_entry_next(mcg_tree_entry *e, const unsigned char **p, const unsigned char *end);

/*
 * Apply a git delta (pack format) to base: the result in a new buffer of
 * *outlen bytes, or NULL when the delta is malformed, does not fit base, or
 * would make more than max bytes. (bundle.c)
 */
unsigned char *mcg_git_delta_apply(size_t *outlen, const unsigned char *base, size_t blen,
                                   const unsigned char *d, size_t dlen, size_t max);

/*
 * Reading a pack while it is indexed (precheck.c; see there).
 * mcg_precheck_start starts a thread; mcg_precheck_feed hands it a copy of
 * the next pack bytes (waiting while 4 MiB are queued); mcg_precheck_finish
 * says the pack has ended, checks signatures left on the calling thread too,
 * joins, and returns what the scan learnt; mcg_precheck_abort stops without
 * it. Each frees p.
 */
typedef struct mcg_precheck mcg_precheck;
typedef struct mcg_packscan mcg_packscan;
mcg_precheck *mcg_precheck_start(void);
void mcg_precheck_feed(mcg_precheck *p, const void *buf, size_t n);
mcg_packscan *mcg_precheck_finish(mcg_precheck *p);
void mcg_precheck_abort(mcg_precheck *p);

void mcg_packscan_free(mcg_packscan *s);
/* The memo of commit signatures that verified, and how many. */
const mcg_sigmemo *mcg_packscan_memo(const mcg_packscan *s);
size_t mcg_packscan_checked(const mcg_packscan *s);
/*
 * Check the scan against the indexer's ids (in_pack) and the types of
 * REF_DELTA bases it could not follow (read through odb); afterwards
 * mcg_packscan_complete says whether its links, commits and hints stand.
 */
void mcg_packscan_confirm(mcg_packscan *s, bool (*in_pack)(const git_oid *, void *), void *ctx,
                          git_odb *odb);
bool mcg_packscan_complete(const mcg_packscan *s);
/*
 * Connectivity from a complete scan: every id an object of the pack names
 * is in the pack or in odb. 0 when so; 1 with *missing and the object that
 * names it (*by, NULL if unknown) when not.
 */
int mcg_packscan_connected(const mcg_packscan *s, bool (*in_pack)(const git_oid *, void *),
                           void *ctx, git_odb *odb, const git_oid **by, const git_oid **missing);
/*
 * The signer file of a root tree, as git_tree_entry_bypath(root,
 * ".mcgit/allowed_signers") would find it: true with *present (and *blob,
 * the entry's id when it is a blob entry) when the scan knows; false when
 * the trees must be read.
 */
bool mcg_packscan_signers(const mcg_packscan *s, const git_oid *root, bool *present, git_oid *blob);
/* A read-only object database backend serving the scan's commits (*out NULL: none). */
int mcg_packscan_backend(git_odb_backend **out, const mcg_packscan *s);

#endif
