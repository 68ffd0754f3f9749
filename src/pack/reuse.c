/*
 * reuse.c — a repository's stored pack entries copied into a new pack.
 *
 * libgit2 1.5's packbuilder computes every delta again, even for objects a
 * `git gc` has already stored as deltas: on a packed repository that search
 * is nearly all of the time `bundle create` takes. So when (nearly) every
 * object to bundle is in the repository's own packs, their stored entries
 * are copied into the bundle instead, as git does: the compressed bytes
 * unchanged (checked against the CRC-32 the pack index records), a delta's
 * header rewritten to point at its base's new position (OFS_DELTA). A delta
 * whose base is not in the bundle (an incremental bundle's prerequisite
 * side, or an unreachable object) is written whole — or, in a thin pack
 * (thin.c), kept as it is when the receiver has its base (REF_DELTA), else
 * made a delta on the object's candidate base when that is smaller. In a
 * thin pack an object stored whole also becomes such a delta when smaller. Objects not in a pack
 * (loose, or in an alternate) go through the packbuilder as usual, and its
 * stream is spliced in.
 *
 * Packs are read through read-only maps of their .idx (version 2) and .pack
 * files; every offset and length in them is checked before it is used.
 */
#include "pack/pack_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct rpack {
    const unsigned char *idx, *pack; /* mapped */
    size_t idxlen, packlen;
    uint32_t n; /* objects */
    const unsigned char *oids, *crcs, *offs, *large;
    size_t nlarge;
    uint64_t *sorted; /* entry offsets, ascending */
    uint32_t *order;  /* index position of each sorted offset */
} rpack;

/* Unmap and free; p is left empty. */
static void rpack_close(rpack *p)
{
    if (p->idx)
        munmap((void *)p->idx, p->idxlen);
    if (p->pack)
        munmap((void *)p->pack, p->packlen);
    free(p->sorted);
    free(p->order);
    memset(p, 0, sizeof(*p));
}

/* Map a regular, non-empty file read-only; NULL otherwise. */
static const void *map_file(const char *path, size_t *len)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    void *m = MAP_FAILED;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        *len = (size_t)st.st_size;
        m = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0);
    }
    close(fd);
    return m == MAP_FAILED ? NULL : m;
}

/* Offset of the object at index position i; UINT64_MAX when out of range. */
static uint64_t rpack_offset(const rpack *p, uint32_t i)
{
    uint32_t o = mcg_pack_be32(p->offs + 4 * (size_t)i);
    if (!(o & 0x80000000u))
        return o;
    o &= 0x7fffffffu;
    if (o >= p->nlarge)
        return UINT64_MAX;
    const unsigned char *l = p->large + 8 * (size_t)o;
    return (uint64_t)mcg_pack_be32(l) << 32 | mcg_pack_be32(l + 4);
}

/* qsort_r: index positions by the offsets (arg) they map to. */
static int cmp_u64_pos(const void *a, const void *b, void *arg)
{
    const uint64_t *offs = arg;
    uint64_t x = offs[*(const uint32_t *)a], y = offs[*(const uint32_t *)b];
    return x < y ? -1 : x > y;
}

/* Map pack-N.idx and pack-N.pack; false when they are not a usable pair. */
static bool rpack_open(rpack *p, const char *idxpath, const char *packpath)
{
    memset(p, 0, sizeof(*p));
    if (!(p->idx = map_file(idxpath, &p->idxlen)) || !(p->pack = map_file(packpath, &p->packlen)))
        goto bad;
    const unsigned char *x = p->idx;
    if (p->idxlen < 8 + 1024 + 40 || memcmp(x, "\377tOc", 4) || mcg_pack_be32(x + 4) != 2)
        goto bad;
    p->n = mcg_pack_be32(x + 8 + 255 * 4);
    size_t need = 8 + 1024 + (size_t)p->n * 28 + 40;
    if (p->idxlen < need || (p->idxlen - need) % 8)
        goto bad;
    p->oids = x + 8 + 1024;
    p->crcs = p->oids + (size_t)p->n * 20;
    p->offs = p->crcs + (size_t)p->n * 4;
    p->large = p->offs + (size_t)p->n * 4;
    p->nlarge = (p->idxlen - need) / 8;
    if (p->packlen < 32 || memcmp(p->pack, "PACK", 4) ||
        (mcg_pack_be32(p->pack + 4) != 2 && mcg_pack_be32(p->pack + 4) != 3) ||
        mcg_pack_be32(p->pack + 8) != p->n ||
        memcmp(p->pack + p->packlen - 20, p->large + 8 * p->nlarge, 20) != 0)
        goto bad; /* not the pack this index describes */
    uint64_t *offs = mcg_malloc((p->n ? p->n : 1) * sizeof(*offs));
    p->order = mcg_malloc((p->n ? p->n : 1) * sizeof(*p->order));
    for (uint32_t i = 0; i < p->n; i++) {
        offs[i] = rpack_offset(p, i);
        p->order[i] = i;
        if (offs[i] < 12 || offs[i] >= p->packlen - 20) {
            free(offs);
            goto bad;
        }
    }
    qsort_r(p->order, p->n, sizeof(*p->order), cmp_u64_pos, offs);
    p->sorted = mcg_malloc((p->n ? p->n : 1) * sizeof(*p->sorted));
    for (uint32_t i = 0; i < p->n; i++)
        p->sorted[i] = offs[p->order[i]];
    free(offs);
    return true;
bad:
    rpack_close(p);
    return false;
}

/* Index position of id in p, or false. */
static bool rpack_find(const rpack *p, const git_oid *id, uint32_t *pos)
{
    const unsigned char *fan = p->idx + 8;
    uint32_t lo = id->id[0] ? mcg_pack_be32(fan + 4 * (id->id[0] - 1)) : 0,
             hi = mcg_pack_be32(fan + 4 * id->id[0]);
    if (hi > p->n)
        return false;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = memcmp(p->oids + 20 * (size_t)mid, id->id, 20);
        if (!c) {
            *pos = mid;
            return true;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* The entry starting at off: its index position and where it ends. */
static bool rpack_entry(const rpack *p, uint64_t off, uint32_t *pos, uint64_t *end)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->sorted[mid] == off) {
            *pos = p->order[mid];
            *end = mid + 1 < p->n ? p->sorted[mid + 1] : p->packlen - 20;
            return true;
        }
        if (p->sorted[mid] < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* Order by pack, then offset. */
static int robj_by_place(const void *a, const void *b)
{
    const mcg_pack_place *x = a, *y = b;
    if (x->pack != y->pack)
        return x->pack < y->pack ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

struct mcg_pack_reuse {
    rpack *packs;
    size_t n;
};

/* Object o's entry in pack p, where its index says, with the CRC it records (*len: its length). */
static int entry_checked(const rpack *p, const mcg_pack_place *o, size_t *len, mcg_err *err)
{
    const unsigned char *e = p->pack + o->off;
    uint32_t pos;
    uint64_t end;
    if (!rpack_entry(p, o->off, &pos, &end) || pos != o->pos)
        return mcg_err_set(err, MCG_EIO, "pack: index and pack disagree");
    *len = (size_t)(end - o->off);
    if ((uint32_t)crc32_z(0, e, *len) != mcg_pack_be32(p->crcs + 4 * (size_t)pos)) {
        char sha[GIT_OID_HEXSZ + 1];
        git_oid_tostr(sha, sizeof(sha), &o->id);
        return mcg_err_set(err, MCG_EIO, "pack: object %s is damaged (CRC mismatch; run git fsck)",
                           sha);
    }
    return 0;
}

/*
 * A stored delta (n bytes at d) of object id, written at offset at as an
 * OFS_DELTA on base, written earlier at base_out.
 */
static int emit_ofs_delta(mcg_pack_writer *w, const git_oid *id, const git_oid *base, uint64_t at,
                          uint64_t base_out, uint64_t size, const unsigned char *d, size_t n,
                          mcg_err *err)
{
    w->out_start = at;
    w->base_out = base_out;
    w->has_base = true;
    w->type = MCG_PACK_OFS;
    w->size = size;
    if (mcg_pack_writer_header(w) != 0 || mcg_pack_writer_emit(w, d, n, true) != 0)
        return mcg_err_set_os(err, MCG_EIO, w->err_no, "write");
    if (w->thin)
        mcg_oidmap_put(&w->depth, id, mcg_pack_thin_depth(w, base) + 1);
    return 0;
}

/* An entry's type and size (len bytes at e); *h: the header's length so far. */
static bool entry_type_size(const unsigned char *e, size_t len, size_t *h, int *type,
                            uint64_t *size)
{
    *type = (e[0] >> 4) & 7;
    *size = e[0] & 15;
    for (int shift = 4; e[(*h)++] & 0x80; shift += 7) {
        if (*h >= len || shift > 57)
            return false;
        *size |= (uint64_t)(e[*h] & 0x7f) << shift;
    }
    return true;
}

/* An OFS_DELTA entry's base (its offset at e + *h, *h moved past it), in pack p. */
static int ofs_entry_base(git_oid *base, const rpack *p, const mcg_pack_place *o,
                          const unsigned char *e, size_t len, size_t *h, mcg_err *err)
{
    uint64_t ofs = e[*h] & 127;
    while (e[(*h)++] & 0x80) {
        if (*h >= len || ofs >> 56)
            return mcg_err_set(err, MCG_EIO, "pack: bad delta offset");
        ofs = ((ofs + 1) << 7) | (e[*h] & 127);
    }
    uint32_t bpos;
    uint64_t bend;
    if (!ofs || ofs > o->off || !rpack_entry(p, o->off - ofs, &bpos, &bend))
        return mcg_err_set(err, MCG_EIO, "pack: a delta's base is not in its pack");
    git_oid_fromraw(base, p->oids + 20 * (size_t)bpos);
    return 0;
}

/* A stored delta (n bytes at d) of object id written as a REF_DELTA on base. */
static int emit_ref_delta(mcg_pack_writer *w, const git_oid *id, const git_oid *base, uint64_t size,
                          const unsigned char *d, size_t n, mcg_err *err)
{
    int rc = 0;
    unsigned char hd[48];
    size_t nd = mcg_pack_entry_header(hd, MCG_PACK_REF, size, 0, base);
    if (mcg_pack_writer_emit(w, hd, nd, true) != 0 || mcg_pack_writer_emit(w, d, n, true) != 0)
        rc = mcg_err_set_os(err, MCG_EIO, w->err_no, "write");
    mcg_oidmap_put(&w->depth, id, 1);
    w->refs++;
    return rc;
}

/*
 * Copy one stored entry: a whole object as it is, a delta whose base has
 * been written as an OFS_DELTA to it, any other delta written whole.
 */
int mcg_pack_reuse_copy(mcg_pack_writer *w, const mcg_pack_reuse *r, const mcg_pack_place *o,
                        git_odb *odb, mcg_err *err)
{
    const rpack *p = &r->packs[o->pack];
    const unsigned char *e = p->pack + o->off;
    size_t len = 0;
    int rc = entry_checked(p, o, &len, err);
    if (rc)
        return rc;
    /* The header: type, size, then a delta's base. */
    size_t h = 0;
    int type;
    uint64_t size;
    if (!entry_type_size(e, len, &h, &type, &size))
        return mcg_err_set(err, MCG_EIO, "pack: bad entry header");
    uint64_t at = w->written;
    git_oid base;
    bool delta = type == MCG_PACK_OFS || type == MCG_PACK_REF, have_base = false;
    uint64_t base_out = 0;
    if ((type == MCG_PACK_OFS || type == MCG_PACK_REF) && h >= len)
        return mcg_err_set(err, MCG_EIO, "pack: bad entry header");
    if (type == MCG_PACK_OFS) {
        if ((rc = ofs_entry_base(&base, p, o, e, len, &h, err)) != 0)
            return rc;
        have_base = mcg_oidmap_get(&w->ids, &base, &base_out);
    } else if (type == MCG_PACK_REF) {
        if (len - h < GIT_OID_RAWSZ)
            return mcg_err_set(err, MCG_EIO, "pack: bad entry header");
        git_oid_fromraw(&base, e + h);
        h += GIT_OID_RAWSZ;
        have_base = mcg_oidmap_get(&w->ids, &base, &base_out);
    } else if (type < MCG_PACK_COMMIT || type > MCG_PACK_TAG) {
        return mcg_err_set(err, MCG_EIO, "pack: unknown entry type");
    }
    bool wrote = false;
    /* a thin pack: a stored delta on a base written too deep in a chain is not copied */
    if (have_base && w->thin && mcg_pack_thin_depth(w, &base) >= MCG_PACK_MAX_DEPTH)
        have_base = false;
    if (!delta) {
        /* a thin pack may hold it as a smaller delta on the receiver's version */
        if (o->has_base && (rc = mcg_pack_thin_entry(w, odb, o, len, &wrote, err)) != 0)
            return rc;
        if (!wrote && mcg_pack_writer_emit(w, e, len, true) != 0)
            rc = mcg_err_set_os(err, MCG_EIO, w->err_no, "write");
    } else if (have_base) {
        rc = emit_ofs_delta(w, &o->id, &base, at, base_out, size, e + h, len - h, err);
    } else if (w->thin && mcg_oidmap_get(w->thin, &base, NULL)) {
        /* its base is the receiver's: the stored delta, naming the base (REF_DELTA) */
        rc = emit_ref_delta(w, &o->id, &base, size, e + h, len - h, err);
    } else {
        /* no base here: a delta on the thin pack's candidate, or whole */
        rc = mcg_pack_thin_entry(w, odb, o, 0, &wrote, err);
    }
    if (!rc)
        mcg_oidmap_put(&w->ids, &o->id, at);
    return rc;
}

mcg_pack_reuse *mcg_pack_reuse_open(const char *dir)
{
    mcg_pack_reuse *r = mcg_calloc(1, sizeof(*r));
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t cap = 0;
    while (d && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 9 || strncmp(e->d_name, "pack-", 5) || strcmp(e->d_name + len - 4, ".idx"))
            continue;
        char *idx = mcg_sprintf("%s/%s", dir, e->d_name);
        char *pack = mcg_sprintf("%s/%.*spack", dir, (int)(len - 3), e->d_name);
        if (r->n == cap) {
            cap = cap ? cap * 2 : 4;
            r->packs = mcg_realloc(r->packs, cap * sizeof(*r->packs));
        }
        if (rpack_open(&r->packs[r->n], idx, pack))
            r->n++;
        free(idx);
        free(pack);
    }
    if (d)
        closedir(d);
    if (!r->n) {
        mcg_pack_reuse_free(r);
        return NULL;
    }
    return r;
}

void mcg_pack_reuse_free(mcg_pack_reuse *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        rpack_close(&r->packs[i]);
    free(r->packs);
    free(r);
}

bool mcg_pack_reuse_find(const mcg_pack_reuse *r, mcg_pack_place *o)
{
    o->pack = -1;
    for (size_t k = 0; k < r->n && o->pack < 0; k++)
        if (rpack_find(&r->packs[k], &o->id, &o->pos) &&
            (o->off = rpack_offset(&r->packs[k], o->pos)) != UINT64_MAX)
            o->pack = (int)k;
    return o->pack >= 0;
}

void mcg_pack_reuse_order(mcg_pack_place *v, size_t n)
{
    qsort(v, n, sizeof(*v), robj_by_place);
}
