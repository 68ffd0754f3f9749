/*
 * bundle_int.h — shared inside bundle/. Bundle code works on the libgit2
 * repository under a handle (mcg_repo_git) and, during an import, on
 * quarantine views of it (view.c, mcg_repo_open_view), passing what the pack
 * scan learnt to verification as explicit hints.
 */
#ifndef MCG_BUNDLE_INT_H
#define MCG_BUNDLE_INT_H

#include "bundle/bundle.h"
#include "gitops/gitops.h"
#include "pack/pack.h"

#include <git2.h>
#include <git2/sys/odb_backend.h>
#include <sys/types.h>

#define MCG_BUNDLE_MAX_LINE (64 * 1024) /* one header line */
#define MCG_BUNDLE_MAX_REFS 100000      /* refs + prerequisites */
#define MCG_BUNDLE_CHUNK (256 * 1024)   /* bytes per indexer append */

/* Report progress, if anyone listens (what NULL: the step has ended). */
static inline void mcg_bundle_tick(const mcg_bundle_progress *p, const char *what, uint64_t cur,
                                   uint64_t total)
{
    if (p && p->fn)
        p->fn(p->ctx, what, cur, total);
}

/* ------------------------------------------------------------ format.c */

/*
 * A buffered reader over a file descriptor (or over bytes in memory),
 * counting what it consumed: the header is read line by line, then the
 * rest — the pack — goes to the indexer chunk by chunk.
 */
typedef struct mcg_bundle_reader {
    int fd;           /* -1 for a reader over memory */
    const char *name; /* for messages */
    char *buf;        /* MCG_BUNDLE_CHUNK bytes (owned), or the memory read */
    size_t pos, len;
    bool eof;
    bool mem; /* buf is the whole input: no more after it */
} mcg_bundle_reader;

/* A reader over len bytes at data (not copied: data must outlive it; nothing to free). */
void mcg_bundle_reader_mem(mcg_bundle_reader *rd, const char *name, const void *data, size_t len);
/* Refill an empty buffer; at the end rd->eof is set. Fails only on a read error. */
int mcg_bundle_reader_fill(mcg_bundle_reader *rd, mcg_err *err);

typedef struct mcg_bundle_hdr_ref {
    git_oid oid;
    char *name; /* validated as a ref name, unique in the header */
} mcg_bundle_hdr_ref;

typedef struct mcg_bundle_hdr {
    int version; /* 2 or 3 */
    mcg_oidv prereqs;
    mcg_bundle_hdr_ref *refs;
    size_t nrefs, cap;
} mcg_bundle_hdr;

/*
 * Parse a bundle header from rd up to and including its blank line (the
 * pack follows in rd): "# v2 git bundle" or "# v3 git bundle" with only
 * @object-format=sha1, prerequisites, refs (each name once, at least one),
 * at most MCG_BUNDLE_MAX_REFS lines of MCG_BUNDLE_MAX_LINE bytes. Cost is
 * linear in the header's size. MCG_EINVAL with a one-line reason (untrusted
 * text shown shortened, controls replaced) when refused; h holds what was
 * read either way (free with mcg_bundle_hdr_free).
 */
int mcg_bundle_hdr_parse(mcg_bundle_hdr *h, mcg_bundle_reader *rd, mcg_err *err);
void mcg_bundle_hdr_free(mcg_bundle_hdr *h);

/* Writing a v2 header: the first line, prerequisites, refs, then the blank line. */
void mcg_bundle_hdr_put_start(mcg_buf *out);
void mcg_bundle_hdr_put_prereq(mcg_buf *out, const git_oid *id, const char *subject);
void mcg_bundle_hdr_put_ref(mcg_buf *out, const git_oid *id, const char *name);
void mcg_bundle_hdr_put_end(mcg_buf *out);

/* ------------------------------------------------------------ refs.c */

typedef struct mcg_bundle_bref {
    char *name;
    git_oid target; /* what the ref line names (a tag object for annotated tags) */
    git_oid commit; /* target peeled to a commit */
} mcg_bundle_bref;

typedef struct mcg_bundle_reflist {
    mcg_bundle_bref *v;
    size_t n, cap;
} mcg_bundle_reflist;

void mcg_bundle_reflist_free(mcg_bundle_reflist *l);
/* The default selection: HEAD (= the source branch tip), the source branch, every tag. */
int mcg_bundle_refs_default(mcg_bundle_reflist *l, mcg_repo *r, mcg_err *err);
/* Refs as named on the command line (dwim'd); each must peel to a commit. */
int mcg_bundle_refs_named(mcg_bundle_reflist *l, mcg_repo *r, const char *const *names, size_t n,
                          mcg_err *err);
/* Sort for the header: HEAD first, then by name. */
void mcg_bundle_refs_sort(mcg_bundle_reflist *l);
/* A revwalk over the refs' commits, hiding since (may be NULL). */
int mcg_bundle_walk_new(git_revwalk **out, mcg_repo *r, const mcg_bundle_reflist *refs,
                        const git_oid *since, mcg_err *err);
/*
 * For an incremental bundle: keep only the refs whose commit is new, and
 * find the prerequisites — the parents of new commits that are not new.
 * Nothing new is an error (MCG_EINVAL naming since_name).
 */
int mcg_bundle_refs_incremental(mcg_oidv *prereqs, mcg_bundle_reflist *refs, mcg_repo *r,
                                const git_oid *since, const char *since_name, mcg_err *err);

/* ------------------------------------------------------------ collect.c */

/* The objects a bundle holds, each with where it is stored (found later). */
typedef struct mcg_bundle_objset {
    mcg_pack_place *v;
    size_t n, cap;
    mcg_oidmap seen; /* every id collected, and the prerequisites' objects */
    mcg_oidmap have; /* the prerequisites and their trees' objects: the receiver's */
} mcg_bundle_objset;

/*
 * What git_packbuilder_insert_walk and the tag objects would give the
 * packbuilder: the new commits, their trees and blobs minus those the
 * prerequisites' trees have, and the tag objects the refs name. With
 * since (a thin pack): oldest commit first, each object with a candidate
 * delta base, and s->have filled.
 */
int mcg_bundle_collect(mcg_bundle_objset *s, mcg_repo *r, const mcg_bundle_reflist *refs,
                       const git_oid *since, const mcg_oidv *prereqs, mcg_err *err);
void mcg_bundle_objset_free(mcg_bundle_objset *s);

/* ------------------------------------------------------------ outfile.c */

/* Where a bundle goes: standard output, or a file replaced atomically. */
typedef struct mcg_bundle_out {
    int fd;
    bool to_stdout;
    bool anon;  /* fd is an O_TMPFILE: linked at the end */
    char *path; /* the target */
    char *tmp;  /* the temp name, once there is one */
} mcg_bundle_out;

/* Open path ("-": standard output, refused when a terminal) for writing. */
int mcg_bundle_out_open(mcg_bundle_out *o, const char *path, mcg_err *err);
/* All written: make it durable and put it in place. */
int mcg_bundle_out_commit(mcg_bundle_out *o, mcg_err *err);
/* Close, removing the temp file if it is still there. */
void mcg_bundle_out_close(mcg_bundle_out *o);

/* ------------------------------------------------------------ quarantine.c */

#define MCG_BUNDLE_QUARANTINE_PREFIX "mcgit-incoming-"

/* Set what a signal removes: a quarantine directory, a temp file (NULL: none). Main thread only. */
void mcg_bundle_pending_set(const char *dir, const char *file);
/*
 * Lock the objects directory shared for this run (*fd keeps the lock, -1
 * when none could be had), removing stale quarantines first when no other
 * run is alive.
 */
void mcg_bundle_quarantine_lock(int *fd, const char *objects);
/* Create objects/mcgit-incoming-XXXXXX/pack (lock held); *qdir = the quarantine (caller frees). */
int mcg_bundle_quarantine_create(char **qdir, const char *objects, mcg_err *err);
/* Remove the quarantine qdir and what it holds, and forget it for signals. */
void mcg_bundle_quarantine_drop(const char *qdir);

/* ------------------------------------------------------------ index.c */

/*
 * Stream the rest of rd into an indexer writing into qdir/pack; *name =
 * the pack's hash (caller frees). The same bytes go to a pack scan, which
 * checks the commits' signatures and reads the objects meanwhile: *scan
 * (caller frees); it resolves a thin pack's deltas on the repository's
 * objects (objects: its objects directory) as the indexer does, and a base
 * missing from both is refused naming it. Fills rep->pack_bytes, objects
 * and prechecked.
 */
int mcg_bundle_index_pack(char **name, mcg_packscan **scan, mcg_bundle_reader *rd, const char *qdir,
                          const char *objects, git_odb *odb, const mcg_bundle_progress *prog,
                          mcg_bundle_report *rep, mcg_err *err);
/* The object ids a version 2 pack index lists, into the set out. */
int mcg_bundle_read_idx_oids(mcg_oidmap *out, const char *idx, mcg_err *err);

/* ------------------------------------------------------------ view.c */

/*
 * Open a view of r in *v whose object database is the quarantined pack in
 * qdir first, then r's own objects directory (objects) and its alternates.
 * Read-only. Free it with mcg_repo_free.
 */
int mcg_bundle_view_open(mcg_repo **v, mcg_repo *r, const char *qdir, const char *objects,
                         mcg_err *err);
/* Whether id is in the set of ids pack (an mcg_oidmap). */
bool mcg_bundle_in_pack(const git_oid *id, void *pack);
/*
 * Confirm what the scan learnt against the indexer's ids (pack) and return
 * it as verification hints: always the signature memo (hints->memo); when
 * the scan is complete, its signer-file hints (hints->scan), and each view
 * gets an object database backend with its commits.
 */
int mcg_bundle_views_attach_scan(mcg_repo *const *views, size_t n, mcg_packscan *scan,
                                 const mcg_oidmap *pack, mcg_verify_opts *hints, mcg_err *err);

/* ------------------------------------------------------------ classify.c */

/* Decide what happens to one ref (br->action); refusals set err and return nonzero. */
int mcg_bundle_classify(mcg_bundle_ref *br, mcg_repo *q, const git_oid *new_oid, mcg_err *err);
/* The update of any ref, whatever its namespace: CREATE, SAME, FORWARD, or
 * a refusal (STALE, REWRITE; a tag that moves when is_tag). */
int mcg_bundle_classify_any(mcg_bundle_ref *br, mcg_repo *q, const git_oid *new_oid, bool is_tag,
                            mcg_err *err);
/* Peel a ref's new value to a commit sha within the quarantined view q. */
int mcg_bundle_peel_commit(char sha[MCG_SHA_HEX + 1], mcg_repo *q, const mcg_bundle_ref *br,
                           mcg_err *err);

/* ------------------------------------------------------------ connect.c */

/* A connectivity check from the bundle's tips, run on either thread. */
typedef struct mcg_bundle_conn {
    mcg_repo *view;
    const mcg_packscan *scan; /* a complete scan of the pack, or NULL: walk the objects */
    const mcg_oidmap *pack;   /* ids in the quarantined pack */
    const git_oid *tips;      /* what the bundle's ref lines name */
    size_t ntips;
    int rc; /* the result, also returned */
    mcg_err err;
} mcg_bundle_conn;

/* Every object the tips reach is in the pack or the repo: 0, else rc and err in c. */
int mcg_bundle_check_connected(mcg_bundle_conn *c);

/* ------------------------------------------------------------ verify.c */

/* One ref to verify: the range (since, tip], or none when `with` covers it. */
typedef struct mcg_bundle_vref {
    char tip[MCG_SHA_HEX + 1];   /* "" none */
    char since[MCG_SHA_HEX + 1]; /* as passed to mcg_gitops_verify: "" = NULL */
    char eff[MCG_SHA_HEX + 1];   /* the since that applies, "" none */
    ssize_t with;                /* a ref whose range holds this one, or -1 */
} mcg_bundle_vref;

/*
 * Verify the range of each of rep's refs that want[i] names on two threads
 * (views q and q2, mcg_gitops_verify_ranges), checking connectivity from
 * tips alongside, and fill each ref's report. Returns the connectivity
 * refusal, or an error when a range could not be read; bad verdicts are
 * left in the reports.
 */
int mcg_bundle_verify_all(mcg_repo *q, mcg_repo *q2, mcg_bundle_report *rep,
                          const mcg_bundle_vref *want, const git_oid *tips, size_t ntips,
                          const mcg_oidmap *pack, const mcg_signers *root,
                          const mcg_verify_opts *hints, const mcg_bundle_progress *prog,
                          mcg_err *err);

/* ------------------------------------------------------------ packrefs.c */

/* More refs than this move by one write of packed-refs, not a transaction of lock files. */
#define MCG_BUNDLE_PACKED_REFS 256
/*
 * Move the report's accepted refs (created or forwarded) at once through
 * packed-refs: each compared with its checked value under packed-refs.lock.
 * 0, or an error in err (MCG_ECONFLICT when one changed: nothing moved).
 */
int mcg_bundle_move_packed(mcg_repo *r, const mcg_bundle_report *rep, mcg_err *err);

#endif
