/*
 * scan.c — reading a pack as it is indexed: commit signatures checked,
 * links collected, commits kept, so that what follows the indexing need not
 * read the pack again. This file is the parser; scan_thread.c runs it.
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
 * most MCG_SCAN_QUEUE bytes waiting (the feeder waits beyond that); delta
 * bases are cached up to MCG_SCAN_CACHE bytes; kept commits up to
 * MCG_SCAN_COMMITS bytes; links take ~40 bytes per distinct id named.
 */
#include "pack/pack_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ objects */

/* The object's id: SHA-1 of "<type> <len>\0" and its content. False if OpenSSL fails. */
static bool object_id(EVP_MD_CTX *md, git_oid *out, int type, const unsigned char *data, size_t len)
{
    static const char *const names[] = {"", "commit", "tree", "", "tag"};
    char hdr[32];
    int n = snprintf(hdr, sizeof(hdr), "%s %zu", names[type], len);
    unsigned int olen = 0;
    return md && EVP_DigestInit_ex(md, EVP_sha1(), NULL) == 1 &&
           EVP_DigestUpdate(md, hdr, (size_t)n + 1) == 1 && EVP_DigestUpdate(md, data, len) == 1 &&
           EVP_DigestFinal_ex(md, out->id, &olen) == 1 && olen == GIT_OID_RAWSZ;
}

/* Record that object by names id (the first naming object is kept). */
static void link_add(mcg_pack_scanner *p, const git_oid *id, size_t by)
{
    mcg_oidmap_put(&p->links, id, by);
}

typedef struct link_ctx {
    mcg_pack_scanner *p;
    size_t by;
} link_ctx;

/* mcg_pack_commit_links' callback: a parent is a link. */
static void link_cb(const git_oid *id, void *ctx)
{
    link_ctx *l = ctx;
    link_add(l->p, id, l->by);
}

/* A commit's links: its tree and parents. False when malformed. */
static bool commit_links(mcg_pack_scanner *p, size_t by, const unsigned char *c, size_t n)
{
    link_ctx l = {p, by};
    git_oid tree;
    if (!mcg_pack_commit_links(&tree, link_cb, &l, (const char *)c, n))
        return false;
    link_add(p, &tree, by);
    return true;
}

/* A tag's link: its target. */
static bool tag_link(mcg_pack_scanner *p, size_t by, const unsigned char *c, size_t n)
{
    git_oid id;
    if (!mcg_pack_tag_target(&id, (const char *)c, n))
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
static bool tree_links(mcg_pack_scanner *p, size_t by, const git_oid *self, const unsigned char *t,
                       size_t n)
{
    const unsigned char *end = t + n, *prev = NULL;
    size_t prevn = 0;
    bool prevdir = false;
    mcg_scan_hint h = {.tree = *self};
    mcg_pack_tree_entry e;
    while (t < end) {
        if (!mcg_pack_tree_entry_next(&e, &t, end))
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

/* Drop the least recently used bases until the cache fits. */
static void cache_evict(mcg_pack_scanner *p)
{
    while (p->cache_bytes > MCG_SCAN_CACHE && p->fifo_n) {
        mcg_scan_qent e = p->fifo[p->fifo_head];
        p->fifo_head = (p->fifo_head + 1) % p->fifo_cap;
        p->fifo_n--;
        mcg_scan_obj *o = &p->objs[e.obj];
        if (o->cached && o->gen == e.gen) {
            p->cache_bytes -= o->len;
            free(o->data);
            o->data = NULL;
            o->cached = false;
        }
    }
}

/* Queue object i as the most recently used base. */
static void cache_push(mcg_pack_scanner *p, size_t i)
{
    if (p->fifo_n == p->fifo_cap) {
        /* drop stale entries; grow when live ones fill more than half */
        size_t live = 0;
        for (size_t k = 0; k < p->fifo_n; k++) {
            mcg_scan_qent e = p->fifo[(p->fifo_head + k) % p->fifo_cap];
            if (p->objs[e.obj].cached && p->objs[e.obj].gen == e.gen)
                live++;
        }
        size_t ncap = !p->fifo_cap ? 1024 : live * 2 > p->fifo_cap ? p->fifo_cap * 2 : p->fifo_cap;
        mcg_scan_qent *nf = mcg_malloc(ncap * sizeof(*nf));
        size_t n = 0;
        for (size_t k = 0; k < p->fifo_n; k++) {
            mcg_scan_qent e = p->fifo[(p->fifo_head + k) % p->fifo_cap];
            if (p->objs[e.obj].cached && p->objs[e.obj].gen == e.gen)
                nf[n++] = e;
        }
        free(p->fifo);
        p->fifo = nf;
        p->fifo_head = 0;
        p->fifo_n = n;
        p->fifo_cap = ncap;
    }
    mcg_scan_obj *o = &p->objs[i];
    o->gen++;
    p->fifo[(p->fifo_head + p->fifo_n) % p->fifo_cap] = (mcg_scan_qent){i, o->gen};
    p->fifo_n++;
}

/* Keep object i's data as a delta base. */
static void cache_add(mcg_pack_scanner *p, size_t i)
{
    p->objs[i].cached = true;
    p->cache_bytes += p->objs[i].len;
    cache_push(p, i);
    cache_evict(p);
}

/* Object i (a commit, tree or tag) is read: its id, links, and where it stays. */
static void object_read(mcg_pack_scanner *p, size_t i, unsigned char *data, size_t len)
{
    mcg_scan_obj *o = &p->objs[i];
    git_oid id;
    if (!object_id(p->md, &id, o->type, data, len)) {
        free(data);
        p->incomplete = true;
        return;
    }
    mcg_oidmap_put(&p->ids, &id, i);
    bool ok = o->type == MCG_PACK_COMMIT ? commit_links(p, i, data, len)
              : o->type == MCG_PACK_TREE ? tree_links(p, i, &id, data, len)
                                         : tag_link(p, i, data, len);
    if (!ok)
        p->incomplete = true; /* libgit2's reading will name the damage */
    o->data = data;
    o->len = len;
    if (o->type == MCG_PACK_COMMIT && p->commit_bytes + len <= MCG_SCAN_COMMITS) {
        p->commit_bytes += len;
        pthread_mutex_lock(&p->mu);
        if (p->ncommits == p->capcommits) {
            p->capcommits = p->capcommits ? p->capcommits * 2 : 1024;
            p->commits = mcg_realloc(p->commits, p->capcommits * sizeof(*p->commits));
        }
        mcg_scan_commit *k = &p->commits[p->ncommits++];
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

/* The pack cannot be parsed further: the scan is incomplete. */
static void scan_break(mcg_pack_scanner *p)
{
    p->sc.state = S_BROKEN;
    free(p->sc.out);
    p->sc.out = NULL;
    p->incomplete = true;
}

/* Whether the header bytes held make a whole object header (with a delta's base). */
static bool objhdr_complete(const mcg_scan_state *s)
{
    size_t i = 0;
    while (i < s->hlen && (s->hdr[i] & 0x80))
        i++;
    if (i >= s->hlen)
        return false;
    int type = (s->hdr[0] >> 4) & 7;
    if (type == MCG_PACK_OFS) {
        size_t j = i + 1;
        while (j < s->hlen && (s->hdr[j] & 0x80))
            j++;
        return j < s->hlen;
    }
    if (type == MCG_PACK_REF)
        return s->hlen - (i + 1) >= GIT_OID_RAWSZ;
    return true;
}

/* The index of the object starting at off, if there is one. */
static bool obj_at(const mcg_pack_scanner *p, uint64_t off, size_t *idx)
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

/*
 * A thin pack's REF_DELTA on an object of the repository: type o from it,
 * and keep its content in s->ext when the delta's result is to be read.
 * False when the repository does not have it (or it is too big to read).
 */
static bool repo_base(mcg_pack_scanner *p, mcg_scan_obj *o)
{
    static const unsigned char types[] = {[GIT_OBJECT_COMMIT] = MCG_PACK_COMMIT,
                                          [GIT_OBJECT_TREE] = MCG_PACK_TREE,
                                          [GIT_OBJECT_BLOB] = MCG_PACK_BLOB,
                                          [GIT_OBJECT_TAG] = MCG_PACK_TAG};
    mcg_scan_state *s = &p->sc;
    git_odb_object *b = NULL;
    size_t len;
    git_object_t t;
    if (!p->bases || git_odb_read_header(&len, &t, p->bases, &s->ref_base) != 0 ||
        t < GIT_OBJECT_COMMIT || t > GIT_OBJECT_TAG)
        return false;
    if (t == GIT_OBJECT_BLOB) {
        o->type = MCG_PACK_BLOB; /* only inflated, as every blob */
        return true;
    }
    if (len > MCG_SCAN_MAX_OBJECT || git_odb_read(&b, p->bases, &s->ref_base) != 0)
        return false;
    free(s->ext);
    s->ext_len = git_odb_object_size(b);
    s->ext = mcg_malloc(s->ext_len ? s->ext_len : 1);
    memcpy(s->ext, git_odb_object_data(b), s->ext_len);
    git_odb_object_free(b);
    o->type = types[t];
    return true;
}

/* Account one object's declared inflated size v (the object at offset off). */
static void size_add(mcg_pack_scanner *p, uint64_t v, uint64_t off)
{
    mcg_pack_sizes *z = &p->sizes;
    z->total = z->total > UINT64_MAX - v ? UINT64_MAX : z->total + v;
    if (v > z->largest) {
        z->largest = v;
        z->largest_off = off;
    }
    p->sc.sized = true;
}

/*
 * A delta's declared result size, from the first n bytes of its data: two
 * varints, the base's size and the result's. Data that ends inside them is
 * damaged (the indexer refuses it); one that overflows is taken as huge.
 */
static void delta_sized(mcg_pack_scanner *p, const unsigned char *d, size_t n)
{
    uint64_t v[2] = {0, 0};
    size_t i = 0;
    for (int k = 0; k < 2; k++)
        for (int shift = 0;; shift += 7) {
            if (i >= n)
                goto out;
            if (shift > 63) {
                v[1] = UINT64_MAX;
                goto out;
            }
            unsigned char c = d[i++];
            v[k] |= (uint64_t)(c & 0x7f) << shift;
            if (!(c & 0x80))
                break;
        }
out:
    size_add(p, v[1], p->sc.off);
}

/* An OFS_DELTA's base, from the offset encoded at h, into p->sc.base; false when bad. */
static bool ofs_base(mcg_pack_scanner *p, const unsigned char *h)
{
    mcg_scan_state *s = &p->sc;
    size_t i = 0;
    uint64_t ofs = h[i] & 0x7f;
    while (h[i] & 0x80) {
        i++;
        if (ofs > (UINT64_MAX >> 8))
            return false;
        ofs = ((ofs + 1) << 7) | (h[i] & 0x7f);
    }
    return !(ofs == 0 || ofs > s->off || !obj_at(p, s->off - ofs, &s->base));
}

/* An object header is complete: record the object, find its base, start inflating. */
/* A new, zeroed entry at the end of p->objs. */
static mcg_scan_obj *obj_push(mcg_pack_scanner *p)
{
    if (p->nobjs == p->capobjs) {
        /* signature checks on the other thread read commits through objs */
        pthread_mutex_lock(&p->mu);
        p->capobjs = p->capobjs ? p->capobjs * 2 : 4096;
        p->objs = mcg_realloc(p->objs, p->capobjs * sizeof(*p->objs));
        pthread_mutex_unlock(&p->mu);
    }
    mcg_scan_obj *o = &p->objs[p->nobjs++];
    memset(o, 0, sizeof(*o));
    return o;
}

/* A REF_DELTA base neither in the pack so far nor in the repository:
 * remembered, its number (from 1) returned. */
static uint32_t ref_push(mcg_pack_scanner *p, const git_oid *base)
{
    if (p->nrefs == p->caprefs) {
        p->caprefs = p->caprefs ? p->caprefs * 2 : 64;
        p->refs = mcg_realloc(p->refs, p->caprefs * sizeof(*p->refs));
    }
    p->refs[p->nrefs++] = *base;
    return (uint32_t)p->nrefs;
}

static void objhdr_start(mcg_pack_scanner *p)
{
    mcg_scan_state *s = &p->sc;
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
    s->sized = false;
    if (s->type != MCG_PACK_OFS && s->type != MCG_PACK_REF)
        size_add(p, s->size, s->off); /* a whole object: its header says it */
    mcg_scan_obj *o = obj_push(p);
    o->off = s->off;
    s->base_known = false;
    if (s->type >= MCG_PACK_COMMIT && s->type <= MCG_PACK_TAG) {
        o->type = (unsigned char)s->type;
    } else if (s->type == MCG_PACK_OFS) {
        if (!ofs_base(p, h + i)) {
            scan_break(p);
            return;
        }
        s->base_known = true;
    } else if (s->type == MCG_PACK_REF) {
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
        const mcg_scan_obj *b = &p->objs[s->base];
        o->type = b->type;
        o->ref = b->ref;
    } else if (s->type == MCG_PACK_REF && repo_base(p, o)) {
        /* typed (and its base kept) from the repository */
    } else if (s->type == MCG_PACK_REF) {
        o->ref = ref_push(p, &s->ref_base);
    }
    /* Read commits, trees and tags (and deltas on them) whole; blobs only to their end. */
    s->keep = o->type != MCG_PACK_NONE && o->type != MCG_PACK_BLOB;
    if (s->keep && (s->size > MCG_SCAN_MAX_OBJECT || (s->base_known && !p->objs[s->base].data))) {
        s->keep = false;
        p->incomplete = true; /* too big, or its base has left the cache */
    }
    s->out = s->keep ? mcg_malloc(s->size + 1) : NULL; /* +1: an overlong object shows */
    if (inflateReset(&s->z) != Z_OK) {
        scan_break(p);
        return;
    }
    s->z.next_out = s->keep ? s->out : s->scratch;
    s->z.avail_out = s->keep ? (uInt)s->size + 1 : MCG_SCAN_SCRATCH;
    s->state = S_ZDATA;
}

/* The current object's data has ended: resolve its delta, read it. */
static void object_done(mcg_pack_scanner *p)
{
    mcg_scan_state *s = &p->sc;
    size_t i = p->nobjs - 1;
    if (s->keep) {
        unsigned char *content = s->out;
        size_t len = (size_t)s->size;
        s->out = NULL;
        if (s->ext) {
            unsigned char *r =
                mcg_pack_delta_apply(&len, s->ext, s->ext_len, content, len, MCG_SCAN_MAX_OBJECT);
            free(content);
            content = r;
        } else if (s->type == MCG_PACK_OFS || s->type == MCG_PACK_REF) {
            const mcg_scan_obj *b = &p->objs[s->base];
            if (b->cached)
                cache_push(p, s->base); /* used: its delta family may want it again */
            unsigned char *r =
                mcg_pack_delta_apply(&len, b->data, b->len, content, len, MCG_SCAN_MAX_OBJECT);
            free(content);
            content = r;
        }
        if (content)
            object_read(p, i, content, len);
        else
            p->incomplete = true;
    }
    free(s->ext);
    s->ext = NULL;
    s->i++;
    s->hlen = 0;
    s->state = s->i == s->nobj ? S_TRAILER : S_OBJHDR;
}

/*
 * Inflate what s->z holds of the current object: a kept object into its
 * buffer (more than the header said is Z_DATA_ERROR), a blob through the
 * scratch buffer. zlib's last result.
 */
static int zdata_inflate(mcg_pack_scanner *p)
{
    mcg_scan_state *s = &p->sc;
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
            if (!s->sized) /* a delta: its header is in the first scratchful */
                delta_sized(p, s->scratch, MCG_SCAN_SCRATCH);
            s->z.next_out = s->scratch;
            s->z.avail_out = MCG_SCAN_SCRATCH;
            continue;
        }
        if (s->z.avail_in == 0)
            break; /* the rest comes with the next mcg_scan_chunk */
        if (zr == Z_BUF_ERROR) {
            zr = Z_DATA_ERROR;
            break;
        }
    }
    return zr;
}

/* Feed n pack bytes through the parser's states (scanner thread only). */
void mcg_scan_bytes(mcg_pack_scanner *p, const unsigned char *b, size_t n)
{
    mcg_scan_state *s = &p->sc;
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
            int zr = zdata_inflate(p);
            size_t used = before - s->z.avail_in;
            b += used;
            n -= used;
            s->pos += used;
            if (zr == Z_STREAM_END) {
                if (s->z.total_out != s->size) {
                    scan_break(p);
                    break;
                }
                if (!s->sized)
                    delta_sized(p, s->keep ? s->out : s->scratch,
                                s->keep ? (size_t)s->size : MCG_SCAN_SCRATCH - s->z.avail_out);
                object_done(p);
            } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
                scan_break(p);
                break;
            }
        }
    }
}

bool mcg_scan_reached_end(const mcg_pack_scanner *p)
{
    return p->sc.state == S_TRAILER;
}
