/*
 * pack — what libgit2 1.5 lacks for reading and writing git packs of
 * untrusted origin, used by bundle/ (and, for the scan's hints, by
 * gitops/repo.c):
 *
 *   oids.c       lists, maps and sets of object ids
 *   rawobj.c     the links of raw commits, tags and trees
 *   delta.c      applying a git delta
 *   writer.c     the pack writer: every pack mcgit writes goes through it
 *                (a packbuilder stream passed on, REF_DELTA -> OFS_DELTA;
 *                stored entries, deltas and whole objects written in)
 *   thin.c       thin packs' deltas
 *   reuse.c      a repository's stored pack entries copied into a pack
 *   store.c      objects held in memory stored as a pack with its index
 *   scan*.c      reading a pack as it is indexed (a thread, its result, an
 *                object database backend serving its commits)
 *   graph.c      a pack's delta graph resolved before libgit2 indexes it
 *                (no delta on itself, no cycle, no base missing, chains
 *                and sizes bounded)
 *
 * Everything that parses takes its input as untrusted: lengths and offsets
 * are checked before use, and every function returns "malformed" rather
 * than reading out of bounds. Ownership of what a function hands out is
 * stated beside it.
 */
#ifndef MCG_PACK_H
#define MCG_PACK_H

#include "trust/trust.h"
#include "util/util.h"

#include <git2.h>
#include <git2/sys/odb_backend.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ object ids */

/* A growable list of ids. Zero-initialise; free with mcg_oidv_free. */
typedef struct mcg_oidv {
    git_oid *v;
    size_t n, cap;
} mcg_oidv;

void mcg_oidv_push(mcg_oidv *a, const git_oid *o);
/* Sort and drop duplicates, so that mcg_oidv_has can search. */
void mcg_oidv_sort(mcg_oidv *a);
/* Whether o is in a (which must be sorted). */
bool mcg_oidv_has(const mcg_oidv *a, const git_oid *o);
void mcg_oidv_free(mcg_oidv *a);

/*
 * A map from object ids to 64-bit values, or a set of ids (values unused),
 * safe against ids chosen to collide: the slot comes from the id mixed with
 * a per-process random key. Zero-initialise; free with mcg_oidmap_free.
 * Callers may walk the table: slot i holds keys[i] -> vals[i] when used[i].
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

/* ------------------------------------------------------------ raw objects */

/*
 * Exactly 40 hex digits at s, NUL-terminated or not (what follows is the
 * caller's to check; a NUL among the 40 is refused).
 */
bool mcg_pack_parse_oid(git_oid *out, const char *s);

/*
 * The tree and parents of a raw commit of len bytes at p: "tree <hex>\n",
 * then "parent <hex>\n" lines, as git writes a commit's first header
 * lines. Each parent is passed to parent(id, ctx) (parent may be NULL).
 * False when malformed (parents already passed stay passed).
 */
bool mcg_pack_commit_links(git_oid *tree, void (*parent)(const git_oid *, void *), void *ctx,
                           const char *p, size_t len);
/* The target of a raw tag: "object <hex>\n" first. False when malformed. */
bool mcg_pack_tag_target(git_oid *out, const char *p, size_t len);

/* One entry of a raw tree. */
typedef struct mcg_pack_tree_entry {
    unsigned mode;             /* octal digits as written, at most 7 */
    const unsigned char *name; /* inside the tree, not NUL-terminated, never empty */
    size_t namelen;
    git_oid id;
} mcg_pack_tree_entry;

/*
 * The entry of a raw tree at *p ("<octal mode> <name>\0<20-byte id>"), *p
 * advanced past it; end is the tree's end. False when malformed (an empty
 * mode or name, no NUL, a short id).
 */
bool mcg_pack_tree_entry_next(mcg_pack_tree_entry *e, const unsigned char **p,
                              const unsigned char *end);

/*
 * Apply a git delta (pack format: base size, result size, then copy and
 * insert instructions) of dlen bytes to base: the result in a new buffer
 * (caller frees) of *outlen bytes, or NULL when the delta is malformed,
 * names another base size, copies from outside base, or would make more
 * than max bytes.
 */
unsigned char *mcg_pack_delta_apply(size_t *outlen, const unsigned char *base, size_t blen,
                                    const unsigned char *d, size_t dlen, size_t max);
/*
 * Make a git delta that turns base (blen bytes) into target (tlen bytes),
 * as mcg_pack_delta_apply reads it: a new buffer (caller frees) of *outlen
 * bytes, or NULL when it would be longer than max bytes (or an input is
 * over 4 GiB). The same inputs always give the same delta.
 */
unsigned char *mcg_pack_delta_create(size_t *outlen, const unsigned char *base, size_t blen,
                                     const unsigned char *target, size_t tlen, size_t max);

/* ------------------------------------------------------------ writing */

/*
 * Where an object is stored: packs[pack] at off (index position pos); pack
 * -1: not in a pack. For a thin pack, base (when has_base) is the object to
 * try as its delta base when the stored entry will not do: the same path's
 * object in the parent commit.
 */
typedef struct mcg_pack_place {
    git_oid id;
    int pack;
    uint32_t pos;
    uint64_t off;
    bool has_base;
    git_oid base;
} mcg_pack_place;

/*
 * A pack written to a file descriptor: git_packbuilder_foreach's stream
 * passed through with every REF_DELTA whose base it has already written
 * turned into an OFS_DELTA (as git writes packs), its trailing SHA-1
 * computed again. Memory is bounded (see writer.c). Failures are either a
 * write(2) error (mcg_pack_writer_errno) or a stream it could not parse
 * (mcg_pack_writer_failure: a bug in the producer, not bad input).
 */
typedef struct mcg_pack_writer mcg_pack_writer;

/* A writer onto fd (not closed by it). MCG_EIO when no SHA-1 digest is available. */
int mcg_pack_writer_new(mcg_pack_writer **out, int fd, mcg_err *err);
/* A writer appending to mem (the caller's) instead of a file. */
int mcg_pack_writer_new_mem(mcg_pack_writer **out, mcg_buf *mem, mcg_err *err);
void mcg_pack_writer_free(mcg_pack_writer *w);
/*
 * The next n bytes of a pack stream (git_packbuilder_foreach's callback
 * data): parsed, rewritten, written. 0, or -1 on failure.
 */
int mcg_pack_writer_stream(mcg_pack_writer *w, const void *p, size_t n);
/*
 * Begin a pack of nobj objects here: the header is written now, entries
 * are copied in (mcg_pack_reuse_copy), and a stream that follows
 * contributes only its objects — its header and trailer are dropped, and
 * mcg_pack_writer_end writes the trailer. 0, or -1 on a write error.
 */
int mcg_pack_writer_begin(mcg_pack_writer *w, uint32_t nobj);
/* End a pack begun with mcg_pack_writer_begin: the SHA-1 trailer, flushed. */
int mcg_pack_writer_end(mcg_pack_writer *w);
/*
 * Write an object (commit, tree, blob or tag; len bytes at data) whole,
 * after mcg_pack_writer_begin: its entry header and its data deflated at
 * zlib level (git's packs: Z_DEFAULT_COMPRESSION). *off and *crc, when not
 * NULL: where the entry starts in the pack and the CRC-32 of its bytes, as
 * a pack index records them. 0, or an error in err.
 */
int mcg_pack_writer_add(mcg_pack_writer *w, git_object_t type, const void *data, size_t len,
                        int level, uint64_t *off, uint32_t *crc, mcg_err *err);
/* Whether a stream has ended (its trailer was seen). */
bool mcg_pack_writer_done(const mcg_pack_writer *w);
/* Bytes written so far. */
uint64_t mcg_pack_writer_written(const mcg_pack_writer *w);
/* The errno of a failed write, 0 none. */
int mcg_pack_writer_errno(const mcg_pack_writer *w);
/* Why a stream could not be parsed (static text), NULL none. */
const char *mcg_pack_writer_failure(const mcg_pack_writer *w);

/*
 * Make the pack thin: have holds the objects its reader already has (an
 * incremental bundle's prerequisites and their trees), which entries may
 * then name as REF_DELTA bases. have must outlive the writer. Without
 * this, a pack is self-contained.
 */
void mcg_pack_writer_thin(mcg_pack_writer *w, const mcg_oidmap *have);
/*
 * Write the object o->id (read through odb; after mcg_pack_writer_begin):
 * as a delta on o->base when it has one that the pack may use (written
 * before, or one the reader has) and that makes it smaller, else whole.
 */
int mcg_pack_write_object(mcg_pack_writer *w, git_odb *odb, const mcg_pack_place *o, mcg_err *err);

/* ------------------------------------------------------------ store */

/* An object held in memory, its id already computed. */
typedef struct mcg_pack_obj {
    git_oid id;
    git_object_t type;
    size_t len;
    unsigned char *data;
} mcg_pack_obj;

/*
 * The n objects at objs (n >= 1, ids distinct) as one pack of whole
 * objects (deflated at zlib's fastest level: git gc repacks them) with its
 * version-2 index, under packdir (made when missing) as pack-<SHA-1 of the
 * pack>: the pack first, then its index (readers look for the index), each
 * to a temporary file, fsynced and renamed; a pack whose index cannot be
 * written is removed unless it was there before. Nothing is hashed again:
 * the ids are the caller's. 0, or an error in err.
 */
int mcg_pack_store(const char *packdir, const mcg_pack_obj *objs, size_t n, mcg_err *err);

/* ------------------------------------------------------------ reuse */

/*
 * A repository's own packs (version 2 .idx with their .pack), mapped
 * read-only, so that their stored entries can be copied into a new pack
 * instead of compressed and deltified again. Every offset and length read
 * from them is checked before it is used; a damaged entry is caught by the
 * CRC-32 its index records.
 */
typedef struct mcg_pack_reuse mcg_pack_reuse;

/* Map every pack-*.idx/.pack pair in packdir; NULL when there is none usable. */
mcg_pack_reuse *mcg_pack_reuse_open(const char *packdir);
void mcg_pack_reuse_free(mcg_pack_reuse *r);
/* Find o->id in the packs: sets o->pack, o->pos and o->off; false when in none. */
bool mcg_pack_reuse_find(const mcg_pack_reuse *r, mcg_pack_place *o);
/* Sort places by pack and offset, the order in which a delta's base comes first. */
void mcg_pack_reuse_order(mcg_pack_place *v, size_t n);
/*
 * Copy o's stored entry into w (after mcg_pack_writer_begin, in an order
 * where a delta's base comes first, as mcg_pack_reuse_order's): a whole
 * object as it is, a delta whose base w has written as an OFS_DELTA to it,
 * any other delta read through odb and written whole. In a thin pack
 * (mcg_pack_writer_thin) a delta on a base the reader has stays a delta
 * (REF_DELTA), and an object written whole or stored whole becomes a delta
 * on o->base instead when that is smaller (see mcg_pack_write_object).
 */
int mcg_pack_reuse_copy(mcg_pack_writer *w, const mcg_pack_reuse *r, const mcg_pack_place *o,
                        git_odb *odb, mcg_err *err);

/* ------------------------------------------------------------ scan */

/*
 * Reading a pack while it is indexed (scan.c; see there). start begins a
 * thread; feed hands it a copy of the next pack bytes (waiting while
 * 4 MiB are queued); finish says the pack has ended, checks signatures
 * left on the calling thread too, joins, and returns what the scan learnt
 * (free with mcg_packscan_free); abort stops without it. finish and abort
 * free the scanner; both accept NULL.
 */
typedef struct mcg_pack_scanner mcg_pack_scanner;
typedef struct mcg_packscan mcg_packscan;

/*
 * What a pack's objects declare they inflate to, before anything inflates
 * them: a whole object's size from its entry header, a delta's result size
 * from its delta header (the first bytes of its data) — what libgit2's
 * indexer allocates when it resolves that delta.
 */
typedef struct mcg_pack_sizes {
    uint64_t total;       /* the sum over all objects (saturating) */
    uint64_t largest;     /* the largest one */
    uint64_t largest_off; /* its offset in the pack */
} mcg_pack_sizes;

mcg_pack_scanner *mcg_pack_scan_start(void);
/*
 * Before the first feed: a REF_DELTA whose base is not in the pack (a
 * thin pack) is resolved against the repository whose objects directory
 * is objects, opened read-only for the scanner's own use. 0, or -1 when
 * it cannot be opened (the scan then works without).
 */
int mcg_pack_scan_bases(mcg_pack_scanner *p, const char *objects);
void mcg_pack_scan_feed(mcg_pack_scanner *p, const void *buf, size_t n);
mcg_packscan *mcg_pack_scan_finish(mcg_pack_scanner *p);
void mcg_pack_scan_abort(mcg_pack_scanner *p);
/*
 * After the last feed, before the indexer resolves any delta: wait until
 * the scan has parsed every byte fed (its signature checks go on), then the
 * declared sizes in *out. False when the scan did not parse the whole pack
 * (no thread, a damaged or truncated pack): the sizes are then unknown. The
 * scanner stays for finish or abort.
 */
bool mcg_pack_scan_sizes(mcg_pack_scanner *p, mcg_pack_sizes *out);

void mcg_packscan_free(mcg_packscan *s);
/* The memo of commit signatures that verified (owned by s), and how many. */
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
 * The first REF_DELTA base the scan could not find, in the pack as far as
 * it read it or in the repository, that odb does not have either: true
 * with *out (a thin pack whose base the receiver lacks).
 */
bool mcg_packscan_missing_base(const mcg_packscan *s, git_odb *odb, git_oid *out);
/*
 * Connectivity from a complete scan: every id an object of the pack names
 * is in the pack or in odb. 0 when so; 1 with *missing and the object that
 * names it (*by, NULL if unknown) when not (both point into s).
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
/*
 * A read-only object database backend serving the scan's commits (*out
 * NULL: none to serve). s must outlive the backend. 0, or -1 when libgit2
 * refuses the backend.
 */
int mcg_packscan_backend(git_odb_backend **out, const mcg_packscan *s);

/* ------------------------------------------------------------ graph */

/*
 * What a pack of untrusted origin may ask for before libgit2's indexer
 * sees it. libgit2 1.5.1 follows a delta whose result is its own base (or
 * any cycle) without end, its memory growing; every pack mcgit indexes is
 * first resolved by mcg_pack_graph_check.
 */
typedef struct mcg_pack_limits {
    uint64_t max_object;        /* one object's inflated size (a delta's declared result) */
    uint64_t ratio;             /* all objects together: at most ratio times the pack's size ... */
    uint64_t floor;             /* ... plus floor bytes */
    unsigned max_depth;         /* the longest chain of deltas */
    size_t hold;                /* bases kept at once while resolving (0: 128 MiB), then rebuilt */
    bool (*expired)(void *ctx); /* the caller's deadline has passed (NULL: none) */
    void *ctx;
} mcg_pack_limits;

/* Chains deeper than this are refused: git writes 50 by default, 4095 at most. */
#define MCG_PACK_MAX_CHAIN 1000

typedef struct mcg_pack_graph mcg_pack_graph;

/*
 * A check of a pack that arrives in pieces: its bytes are kept in an
 * unlinked temporary file in dir (the same file system as the pack being
 * indexed), not in memory. 0, or an error in err.
 */
int mcg_pack_graph_new(mcg_pack_graph **out, const char *dir, mcg_err *err);
/* The next n bytes of the pack (a write error is reported by the check). */
void mcg_pack_graph_feed(mcg_pack_graph *g, const void *p, size_t n);
/*
 * After the last feed, before the indexer resolves anything: parse every
 * entry and resolve every delta (a REF_DELTA on an object of the pack, or
 * of have, the repository's objects, may be NULL), hashing each result.
 * Refused, one line naming what (e.g. "the bundle's pack") and the
 * entry's offset: an entry that does not parse or inflate to its size; a
 * size over lim; an OFS_DELTA on itself or not on an earlier entry; a chain
 * deeper than lim->max_depth; an object made twice (a delta whose result
 * is its own base); a delta that cannot be built (a cycle, or a base
 * neither the pack nor have holds: MCG_ENOTFOUND, that base in *missing
 * when not NULL). 0 when every object resolves once.
 */
int mcg_pack_graph_check(mcg_pack_graph *g, git_odb *have, const mcg_pack_limits *lim,
                         const char *what, git_oid *missing, mcg_err *err);
void mcg_pack_graph_free(mcg_pack_graph *g);

#endif
