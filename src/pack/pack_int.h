/*
 * pack_int.h — shared inside pack/: the pack format's constants, the
 * writer's state (reuse.c writes entries through it) and the scanner's
 * (scan.c parses, scan_thread.c runs it, scan_result.c and scan_odb.c
 * answer from what it found).
 */
#ifndef MCG_PACK_INT_H
#define MCG_PACK_INT_H

#include "pack/pack.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <zlib.h>

/* Object types as a pack stores them. */
enum {
    MCG_PACK_NONE = 0, /* not a pack type: "not known yet" */
    MCG_PACK_COMMIT = 1,
    MCG_PACK_TREE = 2,
    MCG_PACK_BLOB = 3,
    MCG_PACK_TAG = 4,
    MCG_PACK_OFS = 6, /* a delta on the object some bytes back */
    MCG_PACK_REF = 7, /* a delta on the object with a given id */
};

/* A big-endian 32-bit number at p. */
static inline uint32_t mcg_pack_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ------------------------------------------------------------ writer.c */

#define MCG_PACK_CACHE_BYTES (16u * 1024 * 1024) /* contents of recent objects */
#define MCG_PACK_CACHE_OBJECTS 8192
#define MCG_PACK_MAX_OBJECT (8u * 1024 * 1024) /* larger objects are passed on, not read */
#define MCG_PACK_OUT_BUF (256 * 1024)

typedef struct mcg_pack_cached {
    uint64_t off; /* where the object starts in the output */
    int type;
    unsigned char *data;
    size_t len;
} mcg_pack_cached;

struct mcg_pack_writer {
    int fd;
    mcg_buf *mem;     /* or, when set, the pack goes here (mcg_pack_writer_new_mem) */
    bool embedded;    /* the stream's objects go into a pack begun with _begin */
    int err_no;       /* write(2) failed */
    const char *fail; /* the stream could not be parsed (a bug, not bad input) */
    EVP_MD_CTX *sha;  /* of everything written but the trailer */
    unsigned char out[MCG_PACK_OUT_BUF];
    size_t nout;
    uint64_t written; /* bytes emitted */

    /* parser state */
    enum { OS_PACK, OS_HEAD, OS_REF, OS_OFS, OS_DATA, OS_TRAILER, OS_DONE } st;
    unsigned char hold[64]; /* pack header, object header, base id or offset */
    size_t nhold, hlen;     /* bytes held; of them, the object header */
    uint32_t left;          /* objects still to come */
    uint64_t in;            /* bytes consumed */
    uint64_t in_start;      /* where the current object starts, in the input */
    uint64_t out_start;     /* ... and in the output */
    int type;               /* of the current object, as written by libgit2 */
    uint64_t size;          /* inflated size from its header */
    bool has_base;          /* the base's output offset is known */
    uint64_t base_out;
    z_stream z;
    bool z_init;
    unsigned char *data; /* inflated data of the current object, or NULL */
    size_t ndata;
    unsigned char scratch[16384];

    mcg_oidmap ids;     /* object id -> output offset, for every object whose id is known */
    uint64_t *in_offs;  /* input offset of each object, in order ... */
    uint64_t *out_offs; /* ... and its output offset (for OFS_DELTA input) */
    size_t noffs, capoffs;
    mcg_pack_cached cache[MCG_PACK_CACHE_OBJECTS]; /* a ring, ordered by offset */
    size_t chead, ccount, cbytes;
    size_t refs, ofs; /* deltas written as REF_DELTA, as OFS_DELTA */

    const mcg_oidmap *thin; /* objects the reader has (a thin pack's REF_DELTA bases), or NULL */
    mcg_oidmap depth;       /* thin packs: delta chain depth of each delta written */

    /* whole objects written by mcg_pack_writer_add */
    z_stream zd; /* one deflate stream for all, reset per object */
    bool zd_init;
    int zd_level;
    unsigned char *zbuf;
    size_t zcap;
    unsigned char sum[GIT_OID_RAWSZ]; /* the trailer, once mcg_pack_writer_end wrote it */
};

/* Emit bytes: into the SHA-1 (unless hash is false: the trailer) and the output. */
int mcg_pack_writer_emit(mcg_pack_writer *w, const void *p, size_t n, bool hash);
/*
 * Write an object header for w->type and w->size at w->out_start: a delta
 * with has_base becomes an OFS_DELTA to base_out; a REF_DELTA without
 * takes its base id from w->hold + w->hlen.
 */
int mcg_pack_writer_header(mcg_pack_writer *w);
/*
 * An entry header into h (32 bytes at most): type and size, then an
 * OFS_DELTA's distance back to its base (ofs) or a REF_DELTA's base id
 * (ref). The one encoder of entry headers: every entry mcgit writes starts
 * with its bytes. Returns its length.
 */
size_t mcg_pack_entry_header(unsigned char *h, int type, uint64_t size, uint64_t ofs,
                             const git_oid *ref);
/* A libgit2 object type as a pack stores it; MCG_PACK_NONE for any other. */
int mcg_pack_type_of(git_object_t t);

/* ------------------------------------------------------------ thin.c */

#define MCG_PACK_MAX_DEPTH 50 /* delta chains made for thin packs, as git's default */

/*
 * Thin packs: write o as a delta on o->base when that is allowed (written
 * here, chain not too deep, or one the reader has) and smaller than the
 * alternative — the caller's entry of beat bytes, or, beat 0, the object
 * written whole, which is then written instead. *wrote says whether
 * anything was written. The caller records o->id in w->ids.
 */
int mcg_pack_thin_entry(mcg_pack_writer *w, git_odb *odb, const mcg_pack_place *o, size_t beat,
                        bool *wrote, mcg_err *err);
/* The depth of the chain ending at written object id (0: not a delta). */
uint64_t mcg_pack_thin_depth(const mcg_pack_writer *w, const git_oid *id);

/* ------------------------------------------------------------ scan*.c */

#define MCG_SCAN_QUEUE (4u * 1024 * 1024)      /* pack bytes waiting for the scanner */
#define MCG_SCAN_CACHE (8u * 1024 * 1024)      /* tree and tag delta bases (LRU) */
#define MCG_SCAN_COMMITS (64u * 1024 * 1024)   /* commits kept */
#define MCG_SCAN_MAX_OBJECT (4u * 1024 * 1024) /* larger commits/trees are not read */
#define MCG_SCAN_SCRATCH (64u * 1024)

typedef struct mcg_scan_chunk {
    struct mcg_scan_chunk *next;
    size_t len;
    unsigned char data[];
} mcg_scan_chunk;

/* One object of the pack, in pack order. */
typedef struct mcg_scan_obj {
    uint64_t off;
    unsigned char type;  /* resolved MCG_PACK_COMMIT..TAG, or MCG_PACK_NONE: unknown */
    bool cached;         /* data is a delta base in the cache */
    unsigned char *data; /* commit (kept) or cached base; NULL otherwise */
    size_t len;
    uint32_t ref; /* type unknown: index+1 of the REF_DELTA at its chain's root */
    uint32_t gen; /* cached: which of its entries in the cache's queue is current */
} mcg_scan_obj;

/* An entry of the cache's queue; stale when gen is not the object's. */
typedef struct mcg_scan_qent {
    size_t obj;
    uint32_t gen;
} mcg_scan_qent;

/* A commit kept, for the backend and the signature checks. */
typedef struct mcg_scan_commit {
    git_oid id;
    size_t obj; /* index in objs */
    bool ok;    /* its signature verified: digest is set */
    unsigned char digest[MCG_SIGMEMO_DIGEST];
} mcg_scan_commit;

/* What a tree says about the signer file. */
typedef struct mcg_scan_hint {
    git_oid tree;
    bool has_dir, has_file;
    git_oid dir;  /* ".mcgit", a tree entry */
    git_oid file; /* "allowed_signers", a blob entry (regular, executable or link) */
} mcg_scan_hint;

/* The byte-level parser's state. */
typedef struct mcg_scan_state {
    enum { S_PACKHDR, S_OBJHDR, S_ZDATA, S_TRAILER, S_BROKEN } state;
    uint64_t pos;     /* pack bytes consumed */
    uint32_t nobj, i; /* objects in the pack, objects done */
    unsigned char hdr[32];
    size_t hlen;
    /* the current object */
    uint64_t off, size;
    int type;    /* as stored */
    size_t base; /* index of the base (OFS, or REF found) */
    bool base_known;
    git_oid ref_base;   /* MCG_PACK_REF */
    unsigned char *ext; /* a REF_DELTA's base read from the repository (thin packs), or NULL */
    size_t ext_len;
    bool keep;  /* inflate into out */
    bool sized; /* the object's inflated size is accounted (a delta: once its header is read) */
    unsigned char *out;
    z_stream z;
    bool zinit;
    unsigned char *scratch;
} mcg_scan_state;

struct mcg_pack_scanner {
    pthread_t th;
    bool threaded;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    mcg_scan_chunk *head, *tail;
    size_t queued;
    bool eof, stop, scan_done;
    mcg_scan_commit *commits;
    size_t ncommits, capcommits, next;
    /* the scanner's own */
    mcg_scan_state sc;
    mcg_scan_obj *objs;
    size_t nobjs, capobjs;
    mcg_scan_qent *fifo; /* cached bases, least recently used first (ring) */
    size_t fifo_head, fifo_n, fifo_cap;
    size_t cache_bytes, commit_bytes;
    mcg_oidmap ids;   /* id -> index in objs, commits, trees and tags */
    mcg_oidmap links; /* id named -> index in objs of the first object naming it */
    git_oid *refs;    /* REF_DELTA bases not resolved, by index+1 in ref_of */
    size_t nrefs, caprefs;
    mcg_scan_hint *hints;
    size_t nhints, caphints;
    EVP_MD_CTX *md;
    git_odb *bases;       /* the repository's objects: a thin pack's REF_DELTA bases, or NULL */
    bool incomplete;      /* an object could not be typed or read */
    mcg_pack_sizes sizes; /* what the objects parsed so far declare they inflate to */
    bool odd_tree;        /* a tree out of git's order, or with odd modes or names */
};

struct mcg_packscan {
    mcg_sigmemo *memo;
    size_t checked;
    bool complete;
    bool hints_ok;
    mcg_scan_obj *objs; /* for commit data */
    size_t nobjs;
    mcg_scan_commit *commits; /* sorted by id */
    size_t ncommits;
    mcg_scan_hint *hints; /* sorted by tree */
    size_t nhints;
    mcg_oidmap links, ids;
    git_oid *refs;
    size_t nrefs;
};

/* Parse the next n pack bytes (scanner thread only). */
void mcg_scan_bytes(mcg_pack_scanner *p, const unsigned char *b, size_t n);
/* Whether the whole pack was parsed, up to its trailer. */
bool mcg_scan_reached_end(const mcg_pack_scanner *p);
void mcg_scan_objs_free(mcg_scan_obj *objs, size_t n);
int mcg_scan_commit_cmp(const void *a, const void *b);
int mcg_scan_hint_cmp(const void *a, const void *b);

#endif
