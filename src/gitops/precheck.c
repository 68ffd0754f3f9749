/*
 * precheck.c — reading a pack as it is indexed: commit signatures checked,
 * links collected, commits kept, so that what follows the indexing need not
 * read the pack again.
 *
 * Bundle import streams the pack into libgit2's indexer on the calling
 * thread, and libgit2 can read nothing back before the indexer is done —
 * after which every read of a deltified commit or tree re-applies its delta
 * chain (libgit2 1.5 caches only a chain's base), the bulk of the checks'
 * time. So a second thread reads the same bytes as they go by, as git's
 * index-pack does with its own pack: it follows the object headers,
 * inflates every object, resolves the deltas of commits, trees and tags
 * against bases kept in a bounded cache (a blob is only inflated, to find
 * its end), and for each such object
 *   - computes its id (SHA-1 with OpenSSL, only ever compared with the ids
 *     libgit2's collision-detecting indexer wrote: an object the scan got
 *     wrong cannot match one),
 *   - records the ids it names (a commit's tree and parents, a tree's
 *     entries, a tag's target) — the pack's links, for the connectivity
 *     check (mcg_packscan_connected),
 *   - for a tree, its ".mcgit" subtree and "allowed_signers" blob entries
 *     (mcg_packscan_signers),
 *   - keeps commits (served to libgit2 by an object database backend,
 *     mcg_packscan_backend) and checks their signatures cryptographically
 *     (mcg_sshsig_check; the calling thread helps once the indexer is done).
 *
 * None of it decides anything alone. The signature memo only spares the
 * arithmetic of signatures that verified (trust.h). Ids, links and hints
 * are used only when the scan is complete — every object of the pack typed,
 * every commit, tree and tag read and its id found among the indexer's —
 * else the checks read the pack through libgit2 as before. A tree whose
 * entries are not in git's strict order (or repeat a name, or have a mode
 * git does not write, or a '/' in a name) disables the signer hints, since
 * name lookup in such a tree may not match libgit2's.
 *
 * Memory: the pack is handed over in copies of the indexer's chunks, at
 * most PRECHECK_QUEUE bytes waiting (the feeder waits beyond that); delta
 * bases are cached up to PRECHECK_CACHE bytes; kept commits up to
 * PRECHECK_COMMITS bytes; links take ~40 bytes per distinct id named.
 */
#include "gitops/gitops_int.h"

#include <git2/sys/odb_backend.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define PRECHECK_QUEUE (4u * 1024 * 1024)    /* pack bytes waiting for the scanner */
#define PRECHECK_CACHE (8u * 1024 * 1024)    /* tree and tag delta bases (LRU) */
#define PRECHECK_COMMITS (64u * 1024 * 1024) /* commits kept */
#define PRECHECK_MAX_OBJECT (4u * 1024 * 1024) /* larger commits/trees are not read */
#define PRECHECK_SCRATCH (64u * 1024)

enum { T_NONE = 0, T_COMMIT = 1, T_TREE = 2, T_BLOB = 3, T_TAG = 4, T_OFS = 6, T_REF = 7 };

typedef struct chunk {
    struct chunk *next;
    size_t len;
    unsigned char data[];
} chunk;

/* One object of the pack, in pack order. */
typedef struct pobj {
    uint64_t off;
    unsigned char type;  /* resolved T_COMMIT..T_TAG, or T_NONE: unknown */
    bool cached;         /* data is a delta base in the cache */
    unsigned char *data; /* commit (kept) or cached base; NULL otherwise */
    size_t len;
    uint32_t ref;        /* type unknown: index+1 of the REF_DELTA at its chain's root */
    uint32_t gen;        /* cached: which of its entries in the cache's queue is current */
} pobj;

/* An entry of the cache's queue; stale when gen is not the object's. */
typedef struct qent {
    size_t obj;
    uint32_t gen;
} qent;

/* A commit kept, for the backend and the signature checks. */
typedef struct kcommit {
    git_oid id;
    size_t obj; /* index in objs */
    bool ok;    /* its signature verified: digest is set */
    unsigned char digest[MCG_SIGMEMO_DIGEST];
} kcommit;

/* What a tree says about the signer file. */
typedef struct thint {
    git_oid tree;
    bool has_dir, has_file;
    git_oid dir;  /* ".mcgit", a tree entry */
    git_oid file; /* "allowed_signers", a blob entry (regular, executable or link) */
} thint;

typedef struct scan {
    enum { S_PACKHDR, S_OBJHDR, S_ZDATA, S_TRAILER, S_BROKEN } state;
    uint64_t pos;     /* pack bytes consumed */
    uint32_t nobj, i; /* objects in the pack, objects done */
    unsigned char hdr[32];
    size_t hlen;
    /* the current object */
    uint64_t off, size;
    int type;          /* as stored */
    size_t base;       /* index of the base (OFS, or REF found) */
    bool base_known;
    git_oid ref_base;  /* T_REF */
    bool keep;         /* inflate into out */
    unsigned char *out;
    z_stream z;
    bool zinit;
    unsigned char *scratch;
} scan;

struct mcg_precheck {
    pthread_t th;
    bool threaded;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    chunk *head, *tail;
    size_t queued;
    bool eof, stop, scan_done;
    kcommit *commits;
    size_t ncommits, capcommits, next;
    /* the scanner's own */
    scan sc;
    pobj *objs;
    size_t nobjs, capobjs;
    qent *fifo; /* cached bases, least recently used first (ring) */
    size_t fifo_head, fifo_n, fifo_cap;
    size_t cache_bytes, commit_bytes;
    mcg_oidmap ids;   /* id -> index in objs, commits, trees and tags */
    mcg_oidmap links; /* id named -> index in objs of the first object naming it */
    git_oid *refs;    /* REF_DELTA bases not resolved, by index+1 in ref_of */
    size_t nrefs, caprefs;
    thint *hints;
    size_t nhints, caphints;
    EVP_MD_CTX *md;
    bool incomplete; /* an object could not be typed or read */
    bool odd_tree;   /* a tree out of git's order, or with odd modes or names */
};

struct mcg_packscan {
    mcg_sigmemo *memo;
    size_t checked;
    bool complete;
    bool hints_ok;
    pobj *objs; /* for commit data */
    size_t nobjs;
    kcommit *commits; /* sorted by id */
    size_t ncommits;
    thint *hints; /* sorted by tree */
    size_t nhints;
    mcg_oidmap links, ids;
    git_oid *refs;
    size_t nrefs;
};

/* ------------------------------------------------------------ objects */

/* The object's id: SHA-1 of "<type> <len>\0" and its content. False if OpenSSL fails. */
static bool object_id(EVP_MD_CTX *md, git_oid *out, int type, const unsigned char *data,
                      size_t len)
{
    static const char *const names[] = {"", "commit", "tree", "", "tag"};
    char hdr[32];
    int n = snprintf(hdr, sizeof(hdr), "%s %zu", names[type], len);
    unsigned int olen = 0;
    return md && EVP_DigestInit_ex(md, EVP_sha1(), NULL) == 1 &&
           EVP_DigestUpdate(md, hdr, (size_t)n + 1) == 1 && EVP_DigestUpdate(md, data, len) == 1 &&
           EVP_DigestFinal_ex(md, out->id, &olen) == 1 && olen == GIT_OID_RAWSZ;
}

static void link_add(mcg_precheck *p, const git_oid *id, size_t by)
{
    mcg_oidmap_put(&p->links, id, by);
}

typedef struct link_ctx {
    mcg_precheck *p;
    size_t by;
} link_ctx;

static void link_cb(const git_oid *id, void *ctx)
{
    link_ctx *l = ctx;
    link_add(l->p, id, l->by);
}

/* A commit's links: its tree and parents. False when malformed. */
static bool commit_links(mcg_precheck *p, size_t by, const unsigned char *c, size_t n)
{
    link_ctx l = {p, by};
    git_oid tree;
    if (!mcg_git_commit_links(&tree, link_cb, &l, (const char *)c, n))
        return false;
    link_add(p, &tree, by);
    return true;
}

/* A tag's link: its target. */
static bool tag_link(mcg_precheck *p, size_t by, const unsigned char *c, size_t n)
{
    git_oid id;
    if (!mcg_git_tag_target(&id, (const char *)c, n))
        return false;
    link_add(p, &id, by);
    return true;
}

/*
 * git's tree order: names compared bytewise, a tree's name as if followed
 * by '/'. Negative, zero (same name) or positive.
 */
static int tree_order(const unsigned char *a, size_t an, bool adir, const unsigned char *b,
                      size_t bn, bool bdir)
{
    size_t n = an < bn ? an : bn;
    int c = memcmp(a, b, n);
    if (c)
        return c;
    if (an == bn)
        return 0;
    unsigned ca = an > n ? a[n] : (adir ? '/' : 0);
    unsigned cb = bn > n ? b[n] : (bdir ? '/' : 0);
    return (int)ca - (int)cb;
}

/* A tree's entries: links, order, and the signer-file hint. */
static bool tree_links(mcg_precheck *p, size_t by, const git_oid *self, const unsigned char *t,
                       size_t n)
{
    const unsigned char *end = t + n, *prev = NULL;
    size_t prevn = 0;
    bool prevdir = false;
    thint h = {.tree = *self};
    mcg_tree_entry e;
    while (t < end) {
        if (!mcg_git_tree_entry_next(&e, &t, end))
            return false;
        bool dir = (e.mode & 0170000) == 0040000;
        /*
         * Out of git's strict order, a name repeated, a mode git does not
         * write or a name with '/': name lookup in such a tree may not be
         * what libgit2's is, so no signer hints at all.
         */
        if ((prev && tree_order(prev, prevn, prevdir, e.name, e.namelen, dir) >= 0) ||
            (e.mode != 040000 && e.mode != 0100644 && e.mode != 0100755 && e.mode != 0120000 &&
             e.mode != 0160000) ||
            memchr(e.name, '/', e.namelen))
            p->odd_tree = true;
        prev = e.name;
        prevn = e.namelen;
        prevdir = dir;
        if ((e.mode & 0170000) != 0160000) /* a gitlink names a commit elsewhere */
            link_add(p, &e.id, by);
        if (dir && e.namelen == 6 && memcmp(e.name, ".mcgit", 6) == 0) {
            h.has_dir = true;
            h.dir = e.id;
        } else if (!dir && (e.mode & 0170000) != 0160000 && e.namelen == 15 &&
                   memcmp(e.name, "allowed_signers", 15) == 0) {
            h.has_file = true;
            h.file = e.id;
        }
    }
    if (h.has_dir || h.has_file) {
        if (p->nhints == p->caphints) {
            p->caphints = p->caphints ? p->caphints * 2 : 256;
            p->hints = mcg_realloc(p->hints, p->caphints * sizeof(*p->hints));
        }
        p->hints[p->nhints++] = h;
    }
    return true;
}

static void cache_evict(mcg_precheck *p)
{
    while (p->cache_bytes > PRECHECK_CACHE && p->fifo_n) {
        qent e = p->fifo[p->fifo_head];
        p->fifo_head = (p->fifo_head + 1) % p->fifo_cap;
        p->fifo_n--;
        pobj *o = &p->objs[e.obj];
        if (o->cached && o->gen == e.gen) {
            p->cache_bytes -= o->len;
            free(o->data);
            o->data = NULL;
            o->cached = false;
        }
    }
}

/* Queue object i as the most recently used base. */
static void cache_push(mcg_precheck *p, size_t i)
{
    if (p->fifo_n == p->fifo_cap) {
        /* drop stale entries; grow when live ones fill more than half */
        size_t live = 0;
        for (size_t k = 0; k < p->fifo_n; k++) {
            qent e = p->fifo[(p->fifo_head + k) % p->fifo_cap];
            if (p->objs[e.obj].cached && p->objs[e.obj].gen == e.gen)
                live++;
        }
        size_t ncap = !p->fifo_cap ? 1024 : live * 2 > p->fifo_cap ? p->fifo_cap * 2 : p->fifo_cap;
        qent *nf = mcg_malloc(ncap * sizeof(*nf));
        size_t n = 0;
        for (size_t k = 0; k < p->fifo_n; k++) {
            qent e = p->fifo[(p->fifo_head + k) % p->fifo_cap];
            if (p->objs[e.obj].cached && p->objs[e.obj].gen == e.gen)
                nf[n++] = e;
        }
        free(p->fifo);
        p->fifo = nf;
        p->fifo_head = 0;
        p->fifo_n = n;
        p->fifo_cap = ncap;
    }
    pobj *o = &p->objs[i];
    o->gen++;
    p->fifo[(p->fifo_head + p->fifo_n) % p->fifo_cap] = (qent){i, o->gen};
    p->fifo_n++;
}

static void cache_add(mcg_precheck *p, size_t i)
{
    p->objs[i].cached = true;
    p->cache_bytes += p->objs[i].len;
    cache_push(p, i);
    cache_evict(p);
}

/* Object i (a commit, tree or tag) is read: its id, links, and where it stays. */
static void object_read(mcg_precheck *p, size_t i, unsigned char *data, size_t len)
{
    pobj *o = &p->objs[i];
    git_oid id;
    if (!object_id(p->md, &id, o->type, data, len)) {
        free(data);
        p->incomplete = true;
        return;
    }
    mcg_oidmap_put(&p->ids, &id, i);
    bool ok = o->type == T_COMMIT ? commit_links(p, i, data, len)
              : o->type == T_TREE ? tree_links(p, i, &id, data, len)
                                  : tag_link(p, i, data, len);
    if (!ok)
        p->incomplete = true; /* libgit2's reading will name the damage */
    o->data = data;
    o->len = len;
    if (o->type == T_COMMIT && p->commit_bytes + len <= PRECHECK_COMMITS) {
        p->commit_bytes += len;
        pthread_mutex_lock(&p->mu);
        if (p->ncommits == p->capcommits) {
            p->capcommits = p->capcommits ? p->capcommits * 2 : 1024;
            p->commits = mcg_realloc(p->commits, p->capcommits * sizeof(*p->commits));
        }
        kcommit *k = &p->commits[p->ncommits++];
        memset(k, 0, sizeof(*k));
        k->id = id;
        k->obj = i;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    } else {
        cache_add(p, i); /* kept only as a delta base, while there is room */
    }
}

/* ------------------------------------------------------------ scanning */

static void scan_break(mcg_precheck *p)
{
    p->sc.state = S_BROKEN;
    free(p->sc.out);
    p->sc.out = NULL;
    p->incomplete = true;
}

static bool objhdr_complete(const scan *s)
{
    size_t i = 0;
    while (i < s->hlen && (s->hdr[i] & 0x80))
        i++;
    if (i >= s->hlen)
        return false;
    int type = (s->hdr[0] >> 4) & 7;
    if (type == T_OFS) {
        size_t j = i + 1;
        while (j < s->hlen && (s->hdr[j] & 0x80))
            j++;
        return j < s->hlen;
    }
    if (type == T_REF)
        return s->hlen - (i + 1) >= GIT_OID_RAWSZ;
    return true;
}

/* The index of the object starting at off, if there is one. */
static bool obj_at(const mcg_precheck *p, uint64_t off, size_t *idx)
{
    size_t lo = 0, hi = p->nobjs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->objs[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    *idx = lo;
    return lo < p->nobjs && p->objs[lo].off == off;
}

static void objhdr_start(mcg_precheck *p)
{
    scan *s = &p->sc;
    const unsigned char *h = s->hdr;
    size_t i = 0;
    s->type = (h[0] >> 4) & 7;
    s->size = h[0] & 15;
    for (int shift = 4; h[i] & 0x80; shift += 7) {
        i++;
        if (shift > 57) {
            scan_break(p);
            return;
        }
        s->size |= (uint64_t)(h[i] & 0x7f) << shift;
    }
    i++;
    if (p->nobjs == p->capobjs) {
        /* signature checks on the other thread read commits through objs */
        pthread_mutex_lock(&p->mu);
        p->capobjs = p->capobjs ? p->capobjs * 2 : 4096;
        p->objs = mcg_realloc(p->objs, p->capobjs * sizeof(*p->objs));
        pthread_mutex_unlock(&p->mu);
    }
    pobj *o = &p->objs[p->nobjs++];
    memset(o, 0, sizeof(*o));
    o->off = s->off;
    s->base_known = false;
    if (s->type >= T_COMMIT && s->type <= T_TAG) {
        o->type = (unsigned char)s->type;
    } else if (s->type == T_OFS) {
        uint64_t ofs = h[i] & 0x7f;
        while (h[i] & 0x80) {
            i++;
            if (ofs > (UINT64_MAX >> 8)) {
                scan_break(p);
                return;
            }
            ofs = ((ofs + 1) << 7) | (h[i] & 0x7f);
        }
        if (ofs == 0 || ofs > s->off || !obj_at(p, s->off - ofs, &s->base)) {
            scan_break(p);
            return;
        }
        s->base_known = true;
    } else if (s->type == T_REF) {
        git_oid_fromraw(&s->ref_base, h + i);
        uint64_t b;
        if (mcg_oidmap_get(&p->ids, &s->ref_base, &b)) {
            s->base = (size_t)b;
            s->base_known = true;
        }
    } else {
        scan_break(p);
        return;
    }
    if (s->base_known) {
        const pobj *b = &p->objs[s->base];
        o->type = b->type;
        o->ref = b->ref;
    } else if (s->type == T_REF) {
        if (p->nrefs == p->caprefs) {
            p->caprefs = p->caprefs ? p->caprefs * 2 : 64;
            p->refs = mcg_realloc(p->refs, p->caprefs * sizeof(*p->refs));
        }
        p->refs[p->nrefs++] = s->ref_base;
        o->ref = (uint32_t)p->nrefs;
    }
    /* Read commits, trees and tags (and deltas on them) whole; blobs only to their end. */
    s->keep = o->type != T_NONE && o->type != T_BLOB;
    if (s->keep && (s->size > PRECHECK_MAX_OBJECT ||
                    (s->base_known && !p->objs[s->base].data))) {
        s->keep = false;
        p->incomplete = true; /* too big, or its base has left the cache */
    }
    s->out = s->keep ? mcg_malloc(s->size + 1) : NULL; /* +1: an overlong object shows */
    if (inflateReset(&s->z) != Z_OK) {
        scan_break(p);
        return;
    }
    s->z.next_out = s->keep ? s->out : s->scratch;
    s->z.avail_out = s->keep ? (uInt)s->size + 1 : PRECHECK_SCRATCH;
    s->state = S_ZDATA;
}

static void object_done(mcg_precheck *p)
{
    scan *s = &p->sc;
    size_t i = p->nobjs - 1;
    if (s->keep) {
        unsigned char *content = s->out;
        size_t len = (size_t)s->size;
        s->out = NULL;
        if (s->type == T_OFS || s->type == T_REF) {
            const pobj *b = &p->objs[s->base];
            if (b->cached)
                cache_push(p, s->base); /* used: its delta family may want it again */
            unsigned char *r =
                mcg_git_delta_apply(&len, b->data, b->len, content, len, PRECHECK_MAX_OBJECT);
            free(content);
            content = r;
        }
        if (content)
            object_read(p, i, content, len);
        else
            p->incomplete = true;
    }
    s->i++;
    s->hlen = 0;
    s->state = s->i == s->nobj ? S_TRAILER : S_OBJHDR;
}

static void scan_bytes(mcg_precheck *p, const unsigned char *b, size_t n)
{
    scan *s = &p->sc;
    while (n && s->state != S_BROKEN && s->state != S_TRAILER) {
        if (s->state == S_PACKHDR) {
            size_t take = 12 - s->hlen < n ? 12 - s->hlen : n;
            memcpy(s->hdr + s->hlen, b, take);
            s->hlen += take;
            b += take;
            n -= take;
            s->pos += take;
            if (s->hlen < 12)
                continue;
            uint32_t ver = (uint32_t)s->hdr[4] << 24 | (uint32_t)s->hdr[5] << 16 |
                           (uint32_t)s->hdr[6] << 8 | s->hdr[7];
            if (memcmp(s->hdr, "PACK", 4) != 0 || (ver != 2 && ver != 3)) {
                scan_break(p);
                break;
            }
            s->nobj = (uint32_t)s->hdr[8] << 24 | (uint32_t)s->hdr[9] << 16 |
                      (uint32_t)s->hdr[10] << 8 | s->hdr[11];
            s->hlen = 0;
            s->state = s->nobj ? S_OBJHDR : S_TRAILER;
        } else if (s->state == S_OBJHDR) {
            if (s->hlen == 0)
                s->off = s->pos;
            if (s->hlen == sizeof(s->hdr)) {
                scan_break(p);
                break;
            }
            s->hdr[s->hlen++] = *b++;
            n--;
            s->pos++;
            if (objhdr_complete(s))
                objhdr_start(p);
        } else { /* S_ZDATA */
            s->z.next_in = (unsigned char *)b;
            s->z.avail_in = (uInt)(n > UINT32_MAX ? UINT32_MAX : n);
            uInt before = s->z.avail_in;
            int zr;
            for (;;) {
                zr = inflate(&s->z, Z_NO_FLUSH);
                if (zr == Z_STREAM_END || (zr != Z_OK && zr != Z_BUF_ERROR))
                    break;
                if (s->z.avail_out == 0) {
                    if (s->keep) { /* more than the header said */
                        zr = Z_DATA_ERROR;
                        break;
                    }
                    s->z.next_out = s->scratch;
                    s->z.avail_out = PRECHECK_SCRATCH;
                    continue;
                }
                if (s->z.avail_in == 0)
                    break; /* the rest comes with the next chunk */
                if (zr == Z_BUF_ERROR) {
                    zr = Z_DATA_ERROR;
                    break;
                }
            }
            size_t used = before - s->z.avail_in;
            b += used;
            n -= used;
            s->pos += used;
            if (zr == Z_STREAM_END) {
                if (s->z.total_out != s->size) {
                    scan_break(p);
                    break;
                }
                object_done(p);
            } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
                scan_break(p);
                break;
            }
        }
    }
}

/* ------------------------------------------------------------ signatures */

/*
 * Split a raw commit as git_commit_extract_signature does: the value of its
 * first "gpgsig" header (continuation lines joined by '\n', each without its
 * leading space) and everything else, which is what was signed. False when
 * there is no such header. (A split that differs from libgit2's only makes
 * a digest nobody looks up.)
 */
static bool split_signed(const unsigned char *c, size_t n, mcg_buf *sig, mcg_buf *payload)
{
    static const char field[] = "gpgsig ";
    const size_t flen = sizeof(field) - 1;
    size_t p = 0;
    while (p < n) {
        const unsigned char *nl = memchr(c + p, '\n', n - p);
        if (!nl || nl == c + p)
            return false; /* the headers ended without one */
        size_t e = (size_t)(nl - c) + 1;
        if (e - p > flen && memcmp(c + p, field, flen) == 0) {
            mcg_buf_put(sig, c + p + flen, e - 1 - (p + flen));
            while (e < n && c[e] == ' ') {
                const unsigned char *nl2 = memchr(c + e, '\n', n - e);
                if (!nl2)
                    return false;
                mcg_buf_put(sig, "\n", 1);
                mcg_buf_put(sig, c + e + 1, (size_t)(nl2 - (c + e + 1)));
                e = (size_t)(nl2 - c) + 1;
            }
            mcg_buf_put(payload, c, p);
            mcg_buf_put(payload, c + e, n - e);
            return true;
        }
        p = e;
    }
    return false;
}

/* Check the next kept commit's signature, if any (mu held on entry and exit). */
static bool check_next(mcg_precheck *p)
{
    if (p->next >= p->ncommits)
        return false;
    size_t k = p->next++;
    /* objs moves only on the scanner thread, which holds mu to read it here too */
    const unsigned char *data = p->objs[p->commits[k].obj].data;
    size_t len = p->objs[p->commits[k].obj].len;
    mcg_buf sig = MCG_BUF_INIT, payload = MCG_BUF_INIT;
    unsigned char d[MCG_SIGMEMO_DIGEST];
    pthread_mutex_unlock(&p->mu);
    bool ok = split_signed(data, len, &sig, &payload) &&
              mcg_sshsig_check(d, sig.ptr, sig.len, payload.ptr, payload.len) == 0;
    mcg_buf_free(&sig);
    mcg_buf_free(&payload);
    pthread_mutex_lock(&p->mu);
    p->commits[k].ok = ok;
    if (ok)
        memcpy(p->commits[k].digest, d, sizeof(d));
    return true;
}

/* ------------------------------------------------------------ threads */

static void *scanner_main(void *arg)
{
    mcg_precheck *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->stop)
            break;
        if (p->head) {
            chunk *c = p->head;
            p->head = c->next;
            if (!p->head)
                p->tail = NULL;
            p->queued -= c->len;
            pthread_cond_broadcast(&p->cv); /* room for the feeder */
            pthread_mutex_unlock(&p->mu);
            scan_bytes(p, c->data, c->len);
            free(c);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        if (p->eof && !p->scan_done) {
            p->scan_done = true;
            pthread_cond_broadcast(&p->cv);
        }
        if (check_next(p))
            continue;
        if (p->scan_done)
            break;
        pthread_cond_wait(&p->cv, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

mcg_precheck *mcg_precheck_start(void)
{
    mcg_precheck *p = mcg_calloc(1, sizeof(*p));
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->sc.scratch = mcg_malloc(PRECHECK_SCRATCH);
    p->md = EVP_MD_CTX_new();
    if (inflateInit(&p->sc.z) == Z_OK) {
        p->sc.zinit = true;
        /* The scanner takes no signals: they go to the main thread, which cleans up. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        p->threaded = pthread_create(&p->th, NULL, scanner_main, p) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    return p;
}

void mcg_precheck_feed(mcg_precheck *p, const void *buf, size_t n)
{
    if (!p || !p->threaded || !n)
        return;
    chunk *c = mcg_malloc(sizeof(*c) + n);
    c->next = NULL;
    c->len = n;
    memcpy(c->data, buf, n);
    pthread_mutex_lock(&p->mu);
    while (p->queued >= PRECHECK_QUEUE && !p->stop)
        pthread_cond_wait(&p->cv, &p->mu);
    if (p->tail)
        p->tail->next = c;
    else
        p->head = c;
    p->tail = c;
    p->queued += n;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void objs_free(pobj *objs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(objs[i].data);
    free(objs);
}

static void precheck_free(mcg_precheck *p)
{
    for (chunk *c = p->head, *nx; c; c = nx) {
        nx = c->next;
        free(c);
    }
    objs_free(p->objs, p->nobjs);
    free(p->commits);
    free(p->fifo);
    free(p->refs);
    free(p->hints);
    mcg_oidmap_free(&p->ids);
    mcg_oidmap_free(&p->links);
    free(p->sc.out);
    free(p->sc.scratch);
    if (p->sc.zinit)
        inflateEnd(&p->sc.z);
    EVP_MD_CTX_free(p->md);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static int kcommit_cmp(const void *a, const void *b)
{
    return git_oid_cmp(&((const kcommit *)a)->id, &((const kcommit *)b)->id);
}

static int thint_cmp(const void *a, const void *b)
{
    return git_oid_cmp(&((const thint *)a)->tree, &((const thint *)b)->tree);
}

mcg_packscan *mcg_precheck_finish(mcg_precheck *p)
{
    if (!p)
        return NULL;
    if (p->threaded) {
        pthread_mutex_lock(&p->mu);
        p->eof = true;
        pthread_cond_broadcast(&p->cv);
        for (;;) { /* help until the scan is over and no commit is left */
            if (check_next(p))
                continue;
            if (p->scan_done)
                break;
            pthread_cond_wait(&p->cv, &p->mu);
        }
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->th, NULL);
    }
    mcg_packscan *s = mcg_calloc(1, sizeof(*s));
    unsigned char(*d)[MCG_SIGMEMO_DIGEST] =
        mcg_malloc((p->ncommits ? p->ncommits : 1) * sizeof(*d));
    for (size_t i = 0; i < p->ncommits; i++)
        if (p->commits[i].ok)
            memcpy(d[s->checked++], p->commits[i].digest, MCG_SIGMEMO_DIGEST);
    s->memo = mcg_sigmemo_new((const unsigned char(*)[MCG_SIGMEMO_DIGEST])d, s->checked);
    free(d);
    s->complete = p->threaded && !p->incomplete && p->sc.state == S_TRAILER;
    s->hints_ok = s->complete && !p->odd_tree;
    /* Hand over what the checks use; the cached bases go. */
    for (size_t i = 0; i < p->nobjs; i++)
        if (p->objs[i].cached) {
            free(p->objs[i].data);
            p->objs[i].data = NULL;
        }
    s->objs = p->objs;
    s->nobjs = p->nobjs;
    s->commits = p->commits;
    s->ncommits = p->ncommits;
    if (s->ncommits)
        qsort(s->commits, s->ncommits, sizeof(*s->commits), kcommit_cmp);
    s->hints = p->hints;
    s->nhints = p->nhints;
    if (s->nhints)
        qsort(s->hints, s->nhints, sizeof(*s->hints), thint_cmp);
    s->links = p->links;
    s->ids = p->ids;
    s->refs = p->refs;
    s->nrefs = p->nrefs;
    p->objs = NULL;
    p->nobjs = 0;
    p->commits = NULL;
    p->hints = NULL;
    p->refs = NULL;
    memset(&p->links, 0, sizeof(p->links));
    memset(&p->ids, 0, sizeof(p->ids));
    precheck_free(p);
    return s;
}

void mcg_precheck_abort(mcg_precheck *p)
{
    if (!p)
        return;
    if (p->threaded) {
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->th, NULL);
    }
    precheck_free(p);
}

/* ------------------------------------------------------------ the result */

void mcg_packscan_free(mcg_packscan *s)
{
    if (!s)
        return;
    mcg_sigmemo_free(s->memo);
    objs_free(s->objs, s->nobjs);
    free(s->commits);
    free(s->hints);
    free(s->refs);
    mcg_oidmap_free(&s->links);
    mcg_oidmap_free(&s->ids);
    free(s);
}

const mcg_sigmemo *mcg_packscan_memo(const mcg_packscan *s)
{
    return s ? s->memo : NULL;
}

size_t mcg_packscan_checked(const mcg_packscan *s)
{
    return s ? s->checked : 0;
}

/*
 * Confirm the scan against the indexer: every id the scan computed is one
 * the indexer wrote (in_pack), and every REF_DELTA the scan could not follow
 * has a blob for its base (so its chain holds only blobs). Otherwise the
 * scan is not used.
 */
void mcg_packscan_confirm(mcg_packscan *s, bool (*in_pack)(const git_oid *, void *), void *ctx,
                          git_odb *odb)
{
    if (!s || !s->complete)
        return;
    for (size_t i = 0; i < s->ids.cap && s->complete; i++)
        if (s->ids.used[i] && !in_pack(&s->ids.keys[i], ctx))
            s->complete = false;
    for (size_t i = 0; i < s->nobjs && s->complete; i++)
        if (s->objs[i].type == T_NONE) {
            size_t len;
            git_object_t t;
            uint32_t r = s->objs[i].ref;
            if (!r || git_odb_read_header(&len, &t, odb, &s->refs[r - 1]) != 0 ||
                t != GIT_OBJECT_BLOB)
                s->complete = false;
        }
    if (!s->complete)
        s->hints_ok = false;
}

bool mcg_packscan_complete(const mcg_packscan *s)
{
    return s && s->complete;
}

int mcg_packscan_connected(const mcg_packscan *s, bool (*in_pack)(const git_oid *, void *),
                           void *ctx, git_odb *odb, const git_oid **by, const git_oid **missing)
{
    for (size_t i = 0; i < s->links.cap; i++) {
        if (!s->links.used[i])
            continue;
        const git_oid *id = &s->links.keys[i];
        if (in_pack(id, ctx) || git_odb_exists(odb, id))
            continue;
        /* name the object that needs it by its id */
        uint64_t by_obj = s->links.vals[i];
        *missing = id;
        *by = NULL;
        for (size_t j = 0; j < s->ids.cap && !*by; j++)
            if (s->ids.used[j] && s->ids.vals[j] == by_obj)
                *by = &s->ids.keys[j];
        return 1;
    }
    return 0;
}

bool mcg_packscan_signers(const mcg_packscan *s, const git_oid *root, bool *present, git_oid *blob)
{
    if (!s || !s->hints_ok)
        return false;
    thint key = {.tree = *root};
    const thint *h = !s->nhints ? NULL : bsearch(&key, s->hints, s->nhints, sizeof(*s->hints), thint_cmp);
    uint64_t dummy;
    if (!h) {
        /* no hint: the tree has neither entry, if the scan read it */
        if (!mcg_oidmap_get(&s->ids, root, &dummy))
            return false;
        *present = false;
        return true;
    }
    if (!h->has_dir) {
        *present = false;
        return true;
    }
    key.tree = h->dir;
    const thint *d = bsearch(&key, s->hints, s->nhints, sizeof(*s->hints), thint_cmp);
    if (!d) {
        if (!mcg_oidmap_get(&s->ids, &h->dir, &dummy))
            return false; /* .mcgit is not in the pack: ask the repo */
        *present = false;
        return true;
    }
    *present = d->has_file;
    if (d->has_file)
        *blob = d->file;
    return true;
}

/* ------------------------------------------------------------ the backend */

typedef struct kbackend {
    git_odb_backend parent;
    const mcg_packscan *scan;
} kbackend;

static const kcommit *find_commit(const mcg_packscan *s, const git_oid *id)
{
    kcommit key;
    key.id = *id;
    if (!s->ncommits)
        return NULL;
    return bsearch(&key, s->commits, s->ncommits, sizeof(*s->commits), kcommit_cmp);
}

static int kb_read(void **data, size_t *len, git_object_t *type, git_odb_backend *b,
                   const git_oid *id)
{
    const kbackend *kb = (const kbackend *)b;
    const kcommit *k = find_commit(kb->scan, id);
    if (!k)
        return GIT_ENOTFOUND;
    const pobj *o = &kb->scan->objs[k->obj];
    /* NUL-terminated, as libgit2's own backends return objects (its parsers rely on it) */
    unsigned char *out = git_odb_backend_data_alloc(b, o->len + 1);
    if (!out)
        return -1;
    memcpy(out, o->data, o->len);
    out[o->len] = '\0';
    *data = out;
    *len = o->len;
    *type = GIT_OBJECT_COMMIT;
    return 0;
}

static int kb_read_header(size_t *len, git_object_t *type, git_odb_backend *b, const git_oid *id)
{
    const kbackend *kb = (const kbackend *)b;
    const kcommit *k = find_commit(kb->scan, id);
    if (!k)
        return GIT_ENOTFOUND;
    *len = kb->scan->objs[k->obj].len;
    *type = GIT_OBJECT_COMMIT;
    return 0;
}

static int kb_exists(git_odb_backend *b, const git_oid *id)
{
    return find_commit(((const kbackend *)b)->scan, id) != NULL;
}

static void kb_free(git_odb_backend *b)
{
    free(b);
}

int mcg_packscan_backend(git_odb_backend **out, const mcg_packscan *s)
{
    *out = NULL;
    if (!s || !s->complete || !s->ncommits)
        return 0;
    kbackend *kb = mcg_calloc(1, sizeof(*kb));
    if (git_odb_init_backend(&kb->parent, GIT_ODB_BACKEND_VERSION) != 0) {
        free(kb);
        return -1;
    }
    kb->scan = s;
    kb->parent.read = kb_read;
    kb->parent.read_header = kb_read_header;
    kb->parent.exists = kb_exists;
    kb->parent.free = kb_free;
    *out = &kb->parent;
    return 0;
}
