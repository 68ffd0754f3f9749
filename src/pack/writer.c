/*
 * writer.c — a pack stream written to a file, REF_DELTA -> OFS_DELTA.
 *
 * libgit2 1.5's packbuilder writes every delta as a REF_DELTA: type 7 and
 * the 20-byte id of its base. git writes OFS_DELTA: type 6 and the distance
 * back to the base, one to three bytes here, which makes a bundle of a
 * long history about 9 % smaller. So the pack stream is rewritten on its way
 * to the file. Each object's header is parsed and its compressed data
 * inflated — to find where it ends, and to learn the object's id (SHA-1 of
 * "<type> <size>\0" and the content; for a delta, the result of applying it
 * to its base) — and passed on unchanged. A REF_DELTA whose base has
 * already been written (libgit2 writes every base before its deltas)
 * becomes an OFS_DELTA. The pack's trailing SHA-1 is computed again over
 * what was written.
 *
 * Memory is bounded: the contents of the most recent objects, up to
 * MCG_PACK_CACHE_BYTES, are kept for their deltas to be applied to. A delta whose
 * base has left the cache keeps its REF_DELTA (valid in a pack; 18 bytes
 * more), and so do deltas built on it, since its id stays unknown. Per
 * object ~40 bytes (id and offset) are kept.
 *
 * The same writer writes packs whose entries come from elsewhere, between
 * mcg_pack_writer_begin and mcg_pack_writer_end: stored entries copied
 * (reuse.c), deltas made here (thin.c), and whole objects
 * (mcg_pack_writer_add: bundles' leftovers, and the render's scratch store
 * through store.c). Every entry header is encoded by mcg_pack_entry_header.
 */
#include "pack/pack_int.h"
#include "fsio/fsio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
/* Write out the output buffer; -1 with err_no on failure. */
static int pw_flush(mcg_pack_writer *w)
{
    if (w->mem) {
        mcg_buf_put(w->mem, w->out, w->nout);
    } else if (w->nout && mcg_write_all(w->fd, w->out, w->nout) != 0) {
        w->err_no = errno;
        return -1;
    }
    w->nout = 0;
    return 0;
}

/* Emit bytes: into the SHA-1 (unless the trailer) and the output buffer. */
int mcg_pack_writer_emit(mcg_pack_writer *w, const void *p, size_t n, bool hash)
{
    if (hash)
        EVP_DigestUpdate(w->sha, p, n);
    w->written += n;
    while (n) {
        size_t k = MCG_PACK_OUT_BUF - w->nout < n ? MCG_PACK_OUT_BUF - w->nout : n;
        memcpy(w->out + w->nout, p, k);
        w->nout += k;
        p = (const unsigned char *)p + k;
        n -= k;
        if (w->nout == MCG_PACK_OUT_BUF && pw_flush(w) != 0)
            return -1;
    }
    return 0;
}

/* The stream cannot be parsed: why (static text), and -1. */
static int pw_bad(mcg_pack_writer *w, const char *why)
{
    w->fail = why;
    return -1;
}

/* The cached content of the object written at off, or NULL. */
static const mcg_pack_cached *pw_cache_find(const mcg_pack_writer *w, uint64_t off)
{
    size_t lo = 0, hi = w->ccount;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const mcg_pack_cached *c = &w->cache[(w->chead + mid) % MCG_PACK_CACHE_OBJECTS];
        if (c->off == off)
            return c;
        if (c->off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Keep an object's content (taking ownership of data), evicting the oldest. */
static void pw_cache_add(mcg_pack_writer *w, uint64_t off, int type, unsigned char *data,
                         size_t len)
{
    if (len > MCG_PACK_CACHE_BYTES / 4) {
        free(data);
        return;
    }
    while (w->ccount &&
           (w->ccount == MCG_PACK_CACHE_OBJECTS || w->cbytes + len > MCG_PACK_CACHE_BYTES)) {
        mcg_pack_cached *old = &w->cache[w->chead];
        w->cbytes -= old->len;
        free(old->data);
        w->chead = (w->chead + 1) % MCG_PACK_CACHE_OBJECTS;
        w->ccount--;
    }
    mcg_pack_cached *c = &w->cache[(w->chead + w->ccount) % MCG_PACK_CACHE_OBJECTS];
    c->off = off;
    c->type = type;
    c->data = data;
    c->len = len;
    w->ccount++;
    w->cbytes += len;
}

/* Pack types to libgit2's. */
static const git_object_t obj_types[] = {
    [MCG_PACK_COMMIT] = GIT_OBJECT_COMMIT,
    [MCG_PACK_TREE] = GIT_OBJECT_TREE,
    [MCG_PACK_BLOB] = GIT_OBJECT_BLOB,
    [MCG_PACK_TAG] = GIT_OBJECT_TAG,
};

/* The current object has ended: learn its id if its content can be had. */
static void pw_object_done(mcg_pack_writer *w)
{
    unsigned char *content = NULL;
    size_t len = 0;
    int type = w->type;
    if (!w->data) {
        /* too big to read: its id stays unknown */
    } else if (type != MCG_PACK_OFS && type != MCG_PACK_REF) {
        content = w->data;
        len = w->ndata;
        w->data = NULL;
    } else if (w->has_base) {
        const mcg_pack_cached *b = pw_cache_find(w, w->base_out);
        if (b) {
            type = b->type;
            content =
                mcg_pack_delta_apply(&len, b->data, b->len, w->data, w->ndata, MCG_PACK_MAX_OBJECT);
        }
    }
    free(w->data);
    w->data = NULL;
    if (!content)
        return;
    git_oid id;
    if (git_odb_hash(&id, content, len, obj_types[type]) != 0) {
        free(content);
        return;
    }
    mcg_oidmap_put(&w->ids, &id, w->out_start);
    pw_cache_add(w, w->out_start, type, content, len);
}

size_t mcg_pack_entry_header(unsigned char *h, int type, uint64_t size, uint64_t ofs,
                             const git_oid *ref)
{
    size_t n = 0;
    unsigned char c = (unsigned char)(type << 4 | (size & 15));
    for (size >>= 4; size; size >>= 7) {
        h[n++] = c | 0x80;
        c = size & 0x7f;
    }
    h[n++] = c;
    if (type == MCG_PACK_OFS) {
        /* git's offset encoding: big end first, each continuation minus one */
        unsigned char o[16];
        size_t pos = sizeof(o) - 1;
        o[pos] = ofs & 127;
        while (ofs >>= 7)
            o[--pos] = (unsigned char)(128 | (--ofs & 127));
        memcpy(h + n, o + pos, sizeof(o) - pos);
        n += sizeof(o) - pos;
    } else if (type == MCG_PACK_REF) {
        memcpy(h + n, ref->id, GIT_OID_RAWSZ);
        n += GIT_OID_RAWSZ;
    }
    return n;
}

int mcg_pack_type_of(git_object_t t)
{
    switch (t) {
    case GIT_OBJECT_COMMIT:
        return MCG_PACK_COMMIT;
    case GIT_OBJECT_TREE:
        return MCG_PACK_TREE;
    case GIT_OBJECT_BLOB:
        return MCG_PACK_BLOB;
    case GIT_OBJECT_TAG:
        return MCG_PACK_TAG;
    default:
        return MCG_PACK_NONE;
    }
}

/* Write the current object's header: as given, or REF_DELTA -> OFS_DELTA. */
int mcg_pack_writer_header(mcg_pack_writer *w)
{
    unsigned char h[32];
    int type = w->type;
    git_oid ref;
    if ((type == MCG_PACK_REF || type == MCG_PACK_OFS) && w->has_base)
        type = MCG_PACK_OFS;
    if (type == MCG_PACK_OFS)
        w->ofs++;
    else if (type == MCG_PACK_REF) {
        git_oid_fromraw(&ref, w->hold + w->hlen);
        w->refs++;
    }
    uint64_t ofs = type == MCG_PACK_OFS ? w->out_start - w->base_out : 0;
    size_t n = mcg_pack_entry_header(h, type, w->size, ofs, type == MCG_PACK_REF ? &ref : NULL);
    return mcg_pack_writer_emit(w, h, n, true);
}

/* The object header in hold is complete: start the object's data. */
static int pw_start_data(mcg_pack_writer *w)
{
    if (w->noffs == w->capoffs) {
        w->capoffs = w->capoffs ? w->capoffs * 2 : 1024;
        w->in_offs = mcg_realloc(w->in_offs, w->capoffs * sizeof(*w->in_offs));
        w->out_offs = mcg_realloc(w->out_offs, w->capoffs * sizeof(*w->out_offs));
    }
    w->in_offs[w->noffs] = w->in_start;
    w->out_offs[w->noffs++] = w->out_start;
    if (mcg_pack_writer_header(w) != 0)
        return -1;
    if (!w->z_init) {
        if (inflateInit(&w->z) != Z_OK)
            return pw_bad(w, "zlib");
        w->z_init = true;
    } else if (inflateReset(&w->z) != Z_OK) {
        return pw_bad(w, "zlib");
    }
    w->data = w->size <= MCG_PACK_MAX_OBJECT ? mcg_malloc(w->size ? w->size : 1) : NULL;
    w->ndata = 0;
    w->st = OS_DATA;
    return 0;
}

/*
 * Feed compressed data of the current object; *used = the bytes that belong
 * to it (the rest starts the next object). Its inflated bytes go to
 * w->data when it is small enough to be read, else nowhere.
 */
static int pw_data(mcg_pack_writer *w, const unsigned char *p, size_t n, size_t *used)
{
    if (n > (1u << 30))
        n = 1u << 30;
    w->z.next_in = (unsigned char *)p;
    w->z.avail_in = (uInt)n;
    int zr;
    for (;;) {
        unsigned char *dst = w->scratch;
        size_t room = sizeof(w->scratch);
        bool keep = w->data && w->ndata < w->size;
        if (keep) {
            dst = w->data + w->ndata;
            room = w->size - w->ndata;
        } else if (w->data) {
            room = 1; /* full: only the end of the stream may follow */
        }
        uInt in_before = w->z.avail_in;
        w->z.next_out = dst;
        w->z.avail_out = (uInt)room;
        zr = inflate(&w->z, Z_NO_FLUSH);
        if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
            return pw_bad(w, "an object does not inflate");
        size_t got = room - w->z.avail_out;
        if (keep)
            w->ndata += got;
        else if (w->data && got)
            return pw_bad(w, "an object is longer than its header says");
        if (zr == Z_STREAM_END || !w->z.avail_in)
            break;
        if (!got && w->z.avail_in == in_before)
            return pw_bad(w, "an object does not inflate");
    }
    *used = n - w->z.avail_in;
    if (mcg_pack_writer_emit(w, p, *used, true) != 0)
        return -1;
    if (zr == Z_STREAM_END) {
        if (w->z.total_out != w->size)
            return pw_bad(w, "an object's size differs from its header");
        pw_object_done(w);
        w->st = --w->left ? OS_HEAD : OS_TRAILER;
        w->nhold = 0;
    }
    return 0;
}

/* Output offset of the object at input offset in (OFS_DELTA input). */
static bool pw_in_to_out(const mcg_pack_writer *w, uint64_t in, uint64_t *out)
{
    size_t lo = 0, hi = w->noffs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (w->in_offs[mid] == in) {
            *out = w->out_offs[mid];
            return true;
        }
        if (w->in_offs[mid] < in)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* End the pack: its SHA-1 over everything written, and flush. */
int mcg_pack_writer_end(mcg_pack_writer *w)
{
    unsigned char sum[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(w->sha, sum, &len) != 1 || len != GIT_OID_RAWSZ)
        return pw_bad(w, "sha1");
    memcpy(w->sum, sum, GIT_OID_RAWSZ);
    return mcg_pack_writer_emit(w, sum, len, false) != 0 || pw_flush(w) != 0 ? -1 : 0;
}

/* One byte c of an object's header (OS_HEAD): type and size, then what follows it. */
static int pw_head_byte(mcg_pack_writer *w, unsigned char c)
{
    if (w->nhold == 0) {
        w->in_start = w->in;
        w->out_start = w->written;
    }
    if (w->nhold == 10)
        return pw_bad(w, "an object header is too long");
    w->hold[w->nhold++] = c;
    if (c & 0x80)
        return 0;
    w->type = (w->hold[0] >> 4) & 7;
    w->size = w->hold[0] & 15;
    for (size_t i = 1; i < w->nhold; i++)
        w->size |= (uint64_t)(w->hold[i] & 0x7f) << (4 + 7 * (i - 1));
    w->has_base = false;
    w->hlen = w->nhold;
    if (w->type == MCG_PACK_REF) {
        w->st = OS_REF;
    } else if (w->type == MCG_PACK_OFS) {
        w->st = OS_OFS;
        w->nhold = 0;
    } else if (w->type >= MCG_PACK_COMMIT && w->type <= MCG_PACK_TAG) {
        if (pw_start_data(w) != 0)
            return -1;
    } else {
        return pw_bad(w, "an object has an unknown type");
    }
    return 0;
}

/* One byte c of an OFS_DELTA's base offset (OS_OFS); the base must be in the pack. */
static int pw_ofs_byte(mcg_pack_writer *w, unsigned char c)
{
    if (w->nhold == 10)
        return pw_bad(w, "a delta offset is too long");
    w->hold[w->nhold++] = c;
    if (c & 0x80)
        return 0;
    uint64_t ofs = w->hold[0] & 127;
    for (size_t i = 1; i < w->nhold; i++)
        ofs = ((ofs + 1) << 7) | (w->hold[i] & 127);
    if (ofs == 0 || ofs > w->in_start || !pw_in_to_out(w, w->in_start - ofs, &w->base_out))
        return pw_bad(w, "a delta's base is not in the pack");
    w->has_base = true;
    return pw_start_data(w) != 0 ? -1 : 0;
}

int mcg_pack_writer_stream(mcg_pack_writer *w, const void *data, size_t n)
{
    const unsigned char *p = data;
    while (n) {
        size_t used = 1;
        switch (w->st) {
        case OS_PACK:
            w->hold[w->nhold++] = *p;
            if (w->nhold == 12) {
                if (memcmp(w->hold, "PACK\0\0\0\2", 8) != 0)
                    return pw_bad(w, "not a version 2 pack");
                w->left = mcg_pack_be32(w->hold + 8);
                if (!w->embedded && mcg_pack_writer_emit(w, w->hold, 12, true) != 0)
                    return -1;
                w->st = w->left ? OS_HEAD : OS_TRAILER;
                w->nhold = 0;
            }
            break;
        case OS_HEAD:
            if (pw_head_byte(w, *p) != 0)
                return -1;
            break;
        case OS_REF:
            /* The base's id: the GIT_OID_RAWSZ bytes after the header. */
            w->hold[w->nhold++] = *p;
            if (w->nhold == w->hlen + GIT_OID_RAWSZ) {
                git_oid base;
                git_oid_fromraw(&base, w->hold + w->hlen);
                w->has_base = mcg_oidmap_get(&w->ids, &base, &w->base_out);
                if (pw_start_data(w) != 0)
                    return -1;
            }
            break;
        case OS_OFS:
            if (pw_ofs_byte(w, *p) != 0)
                return -1;
            break;
        case OS_DATA:
            if (pw_data(w, p, n, &used) != 0)
                return -1;
            if (!used && w->st == OS_DATA)
                return pw_bad(w, "an object does not inflate");
            break;
        case OS_TRAILER:
            /* libgit2's checksum of the stream it wrote: ours replaces it. */
            used = n < GIT_OID_RAWSZ - w->nhold ? n : GIT_OID_RAWSZ - w->nhold;
            w->nhold += used;
            if (w->nhold == GIT_OID_RAWSZ) {
                if (!w->embedded && mcg_pack_writer_end(w) != 0)
                    return -1;
                w->st = OS_DONE;
            }
            break;
        case OS_DONE:
            return pw_bad(w, "data after the pack's end");
        }
        w->in += used;
        p += used;
        n -= used;
    }
    return 0;
}

int mcg_pack_writer_new(mcg_pack_writer **out, int fd, mcg_err *err)
{
    mcg_pack_writer *w = mcg_calloc(1, sizeof(*w));
    *out = NULL;
    w->fd = fd;
    w->sha = EVP_MD_CTX_new();
    if (!w->sha || EVP_DigestInit_ex(w->sha, EVP_sha1(), NULL) != 1) {
        mcg_pack_writer_free(w);
        return mcg_err_set(err, MCG_EIO, "sha1: no digest");
    }
    *out = w;
    return 0;
}

int mcg_pack_writer_new_mem(mcg_pack_writer **out, mcg_buf *mem, mcg_err *err)
{
    int rc = mcg_pack_writer_new(out, -1, err);
    if (rc == 0)
        (*out)->mem = mem;
    return rc;
}

/*
 * len bytes at p deflated at level: into the writer's buffer (*zlen
 * bytes), through one stream reset for each object — an allocation per
 * object would cost more than a small commit. NULL when zlib fails.
 */
static const unsigned char *pw_deflate(mcg_pack_writer *w, const void *p, size_t len, int level,
                                       size_t *zlen)
{
    if (w->zd_init && w->zd_level != level) {
        deflateEnd(&w->zd);
        w->zd_init = false;
    }
    if (!w->zd_init) {
        memset(&w->zd, 0, sizeof(w->zd));
        if (deflateInit(&w->zd, level) != Z_OK)
            return NULL;
        w->zd_init = true;
        w->zd_level = level;
    } else if (deflateReset(&w->zd) != Z_OK) {
        return NULL;
    }
    size_t bound = deflateBound(&w->zd, (uLong)len);
    if (bound > w->zcap) {
        w->zcap = bound;
        w->zbuf = mcg_realloc(w->zbuf, w->zcap);
    }
    w->zd.next_in = (Bytef *)p;
    w->zd.avail_in = (uInt)len;
    w->zd.next_out = w->zbuf;
    w->zd.avail_out = (uInt)w->zcap;
    if (deflate(&w->zd, Z_FINISH) != Z_STREAM_END)
        return NULL;
    *zlen = w->zcap - w->zd.avail_out;
    return w->zbuf;
}

int mcg_pack_writer_add(mcg_pack_writer *w, git_object_t type, const void *data, size_t len,
                        int level, uint64_t *off, uint32_t *crc, mcg_err *err)
{
    int ptype = mcg_pack_type_of(type);
    size_t zlen = 0;
    const unsigned char *z = NULL;
    if (ptype == MCG_PACK_NONE)
        return mcg_err_set(err, MCG_EIO, "pack: an object of unknown type");
    if (len > UINT32_MAX || !(z = pw_deflate(w, data, len, level, &zlen)))
        return mcg_err_set(err, MCG_EIO, "pack: cannot compress an object");
    unsigned char h[32];
    size_t hn = mcg_pack_entry_header(h, ptype, len, 0, NULL);
    if (off)
        *off = w->written;
    if (crc)
        *crc = (uint32_t)crc32(crc32(0L, h, (uInt)hn), z, (uInt)zlen);
    if (mcg_pack_writer_emit(w, h, hn, true) != 0 || mcg_pack_writer_emit(w, z, zlen, true) != 0)
        return mcg_err_set_os(err, MCG_EIO, w->err_no, "write");
    return 0;
}

void mcg_pack_writer_free(mcg_pack_writer *w)
{
    if (!w)
        return;
    if (w->z_init)
        inflateEnd(&w->z);
    if (w->zd_init)
        deflateEnd(&w->zd);
    free(w->zbuf);
    EVP_MD_CTX_free(w->sha);
    free(w->data);
    for (size_t i = 0; i < w->ccount; i++)
        free(w->cache[(w->chead + i) % MCG_PACK_CACHE_OBJECTS].data);
    free(w->in_offs);
    free(w->out_offs);
    mcg_oidmap_free(&w->ids);
    mcg_oidmap_free(&w->depth);
    free(w);
}

int mcg_pack_writer_begin(mcg_pack_writer *w, uint32_t nobj)
{
    unsigned char head[12] = {'P', 'A', 'C', 'K', 0, 0, 0, 2};
    for (int i = 0; i < 4; i++)
        head[8 + i] = (unsigned char)(nobj >> (24 - 8 * i));
    w->embedded = true;
    return mcg_pack_writer_emit(w, head, sizeof(head), true);
}

bool mcg_pack_writer_done(const mcg_pack_writer *w)
{
    return w->st == OS_DONE;
}

uint64_t mcg_pack_writer_written(const mcg_pack_writer *w)
{
    return w->written;
}

int mcg_pack_writer_errno(const mcg_pack_writer *w)
{
    return w->err_no;
}

const char *mcg_pack_writer_failure(const mcg_pack_writer *w)
{
    return w->fail;
}
