/*
 * store.c — objects held in memory stored as one pack with its index: the
 * render's scratch store (gitops/scratch.c) writes its objects here.
 *
 * The pack goes through the pack writer (writer.c) like every pack mcgit
 * writes, into memory; the version-2 index is made from the offsets and
 * CRC-32s the writer reports: fan-out, ids, CRC-32s, offsets (64-bit ones
 * apart), the pack's checksum and its own.
 */
#include "pack/pack_int.h"
#include "fsio/fsio.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct entry_pos {
    const git_oid *id;
    uint64_t off;
    uint32_t crc;
} entry_pos;

static int cmp_entry(const void *a, const void *b)
{
    return git_oid_cmp(((const entry_pos *)a)->id, ((const entry_pos *)b)->id);
}

/* Big-endian 32-bit number out. */
static void put32(mcg_buf *b, uint32_t v)
{
    unsigned char c[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    mcg_buf_put(b, c, 4);
}

/* The pack of objs into pack, its SHA-1 in sum, each entry's offset and CRC-32 in pos. */
static int write_pack(mcg_buf *pack, entry_pos *pos, const mcg_pack_obj *objs, size_t n,
                      unsigned char sum[GIT_OID_RAWSZ], mcg_err *err)
{
    mcg_pack_writer *w = NULL;
    int rc = mcg_pack_writer_new_mem(&w, pack, err);
    if (rc)
        return rc;
    mcg_pack_writer_begin(w, (uint32_t)n); /* into memory: cannot fail */
    for (size_t i = 0; i < n && !rc; i++) {
        pos[i].id = &objs[i].id;
        rc = mcg_pack_writer_add(w, objs[i].type, objs[i].data, objs[i].len, Z_BEST_SPEED,
                                 &pos[i].off, &pos[i].crc, err);
    }
    if (!rc && mcg_pack_writer_end(w) != 0)
        rc = mcg_err_set(err, MCG_EIO, "no SHA-1");
    if (!rc)
        memcpy(sum, w->sum, GIT_OID_RAWSZ);
    mcg_pack_writer_free(w);
    return rc;
}

/* The version-2 index of the n entries at pos (sorted here) of the pack whose SHA-1 is sum. */
static int write_index(mcg_buf *idx, entry_pos *pos, size_t n,
                       const unsigned char sum[GIT_OID_RAWSZ], mcg_err *err)
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    qsort(pos, n, sizeof(*pos), cmp_entry);
    mcg_buf_put(idx, "\377tOc", 4);
    put32(idx, 2);
    for (unsigned first = 0, k = 0; first < 256; first++) {
        while (k < n && pos[k].id->id[0] <= first)
            k++;
        put32(idx, (uint32_t)k);
    }
    for (size_t i = 0; i < n; i++)
        mcg_buf_put(idx, pos[i].id->id, GIT_OID_RAWSZ);
    for (size_t i = 0; i < n; i++)
        put32(idx, pos[i].crc);
    uint32_t nlarge = 0;
    for (size_t i = 0; i < n; i++)
        put32(idx, pos[i].off < 0x80000000u ? (uint32_t)pos[i].off : (0x80000000u | nlarge++));
    for (size_t i = 0; i < n; i++)
        if (pos[i].off >= 0x80000000u) {
            put32(idx, (uint32_t)(pos[i].off >> 32));
            put32(idx, (uint32_t)pos[i].off);
        }
    mcg_buf_put(idx, sum, GIT_OID_RAWSZ);
    if (EVP_Digest(idx->ptr, idx->len, d, &dlen, EVP_sha1(), NULL) != 1 || dlen != GIT_OID_RAWSZ)
        return mcg_err_set(err, MCG_EIO, "no SHA-1");
    mcg_buf_put(idx, d, GIT_OID_RAWSZ);
    return 0;
}

/*
 * The pack, then its index, written under packdir as pack-<sum>; a pack
 * whose index cannot be written is removed (unless it was there before).
 */
static int write_pack_files(const char *packdir, const unsigned char sum[GIT_OID_RAWSZ],
                            const mcg_buf *pack, const mcg_buf *idx, mcg_err *err)
{
    char hex[2 * GIT_OID_RAWSZ + 1];
    int rc;
    mcg_hex(sum, GIT_OID_RAWSZ, hex);
    if ((rc = mcg_mkdirs(packdir, 0755, err)) != 0)
        return rc;
    char *path = mcg_sprintf("%s/pack-%s.pack", packdir, hex);
    bool had = access(path, F_OK) == 0; /* the same objects, packed before */
    if ((rc = mcg_write_file_atomic(path, pack->ptr, pack->len, 0444, err)) != 0)
        goto out;
    char *idxpath = mcg_sprintf("%s/pack-%s.idx", packdir, hex);
    rc = mcg_write_file_atomic(idxpath, idx->ptr, idx->len, 0444, err);
    free(idxpath);
    if (rc) {
        if (!had)
            unlink(path); /* a pack without its index is only litter */
        goto out;
    }
    mcg_fsync_dir(packdir);
out:
    free(path);
    return rc;
}

int mcg_pack_store(const char *packdir, const mcg_pack_obj *objs, size_t n, mcg_err *err)
{
    mcg_buf pack = MCG_BUF_INIT, idx = MCG_BUF_INIT;
    entry_pos *pos = mcg_calloc(n ? n : 1, sizeof(*pos));
    unsigned char sum[GIT_OID_RAWSZ];
    int rc;
    if ((rc = write_pack(&pack, pos, objs, n, sum, err)) == 0 &&
        (rc = write_index(&idx, pos, n, sum, err)) == 0)
        rc = write_pack_files(packdir, sum, &pack, &idx, err);
    free(pos);
    mcg_buf_free(&pack);
    mcg_buf_free(&idx);
    return rc;
}
