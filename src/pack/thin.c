/*
 * thin.c — entries of thin packs, as git writes for incremental bundles
 * (pack-objects --thin): an object may be stored as a delta on an object
 * the reader already has (a prerequisite's tree or blob), named by its id
 * (REF_DELTA), or on one written earlier in the pack (OFS_DELTA). The
 * reader completes such a pack from its own objects (git index-pack
 * --fix-thin; libgit2's indexer given the repository's object database).
 *
 * Deltas are made here (mcg_pack_delta_create) against one candidate the
 * caller names — the same path's object in the parent commit, which for a
 * configuration history is nearly always the best base — and kept only when
 * the entry comes out smaller than the alternative. Chains are cut at
 * MCG_PACK_MAX_DEPTH deltas. Everything is deterministic: zlib at its
 * default level, as git's packs, and no threads.
 */
#include "pack/pack_int.h"

#include <stdlib.h>
#include <string.h>

/* libgit2's last error in err, prefixed with what was being done. */
static int thin_git_err(mcg_err *err, const char *what)
{
    const git_error *e = git_error_last();
    return mcg_err_set(err, MCG_EIO, "%s: %s", what, e && e->message ? e->message : "git error");
}

/* Deflate len bytes at p (default level, as git): a new buffer of *zlen bytes, NULL on failure. */
static unsigned char *deflate_all(const void *p, size_t len, size_t *zlen)
{
    uLongf n = compressBound((uLong)len);
    unsigned char *z = mcg_malloc(n);
    if (compress2(z, &n, p, (uLong)len, Z_DEFAULT_COMPRESSION) != Z_OK) {
        free(z);
        return NULL;
    }
    *zlen = n;
    return z;
}

/* Emit header and deflated data; a write error in err. */
static int emit_entry(mcg_pack_writer *w, const unsigned char *h, size_t hn, const unsigned char *z,
                      size_t zn, mcg_err *err)
{
    if (mcg_pack_writer_emit(w, h, hn, true) != 0 || mcg_pack_writer_emit(w, z, zn, true) != 0)
        return mcg_err_set_os(err, MCG_EIO, w->err_no, "write");
    return 0;
}

/* Write the object id whole: read through odb, deflated. */
static int mcg_pack_write_whole(mcg_pack_writer *w, git_odb *odb, const git_oid *id, mcg_err *err)
{
    git_odb_object *obj = NULL;
    if (git_odb_read(&obj, odb, id) != 0)
        return thin_git_err(err, "object");
    /* zlib's default level, as git's packs */
    int rc = mcg_pack_writer_add(w, git_odb_object_type(obj), git_odb_object_data(obj),
                                 git_odb_object_size(obj), Z_DEFAULT_COMPRESSION, NULL, NULL, err);
    git_odb_object_free(obj);
    return rc;
}

uint64_t mcg_pack_thin_depth(const mcg_pack_writer *w, const git_oid *id)
{
    uint64_t d = 0;
    return mcg_oidmap_get(&w->depth, id, &d) ? d : 0;
}

/*
 * Whether base may be o's delta base here: written earlier with a chain
 * short enough (*off its offset, *ofs true), or an object the reader has.
 */
static bool base_usable(const mcg_pack_writer *w, const git_oid *base, bool *ofs, uint64_t *off)
{
    if (mcg_oidmap_get(&w->ids, base, off)) {
        *ofs = true;
        return mcg_pack_thin_depth(w, base) < MCG_PACK_MAX_DEPTH;
    }
    *ofs = false;
    return w->thin && mcg_oidmap_get(w->thin, base, NULL);
}

int mcg_pack_thin_entry(mcg_pack_writer *w, git_odb *odb, const mcg_pack_place *o, size_t beat,
                        bool *wrote, mcg_err *err)
{
    git_odb_object *obj = NULL, *bobj = NULL;
    unsigned char *delta = NULL, *zd = NULL, *zw = NULL;
    size_t dlen = 0, zdlen = 0, zwlen = 0;
    bool ofs = false;
    uint64_t off = 0;
    int rc = 0;
    *wrote = false;
    if (!o->has_base || !base_usable(w, &o->base, &ofs, &off))
        return beat ? 0 : (*wrote = true, mcg_pack_write_whole(w, odb, &o->id, err));
    if (git_odb_read(&obj, odb, &o->id) != 0)
        return thin_git_err(err, "object");
    git_object_t t = git_odb_object_type(obj);
    size_t len = git_odb_object_size(obj);
    if (t < GIT_OBJECT_COMMIT || t > GIT_OBJECT_TAG) {
        rc = mcg_err_set(err, MCG_EIO, "pack: an object of unknown type");
        goto out;
    }
    /* A base of another type, or unreadable, or too big: no delta. */
    if (len <= MCG_PACK_MAX_OBJECT && git_odb_read(&bobj, odb, &o->base) == 0 &&
        git_odb_object_type(bobj) == t && git_odb_object_size(bobj) <= MCG_PACK_MAX_OBJECT)
        delta = mcg_pack_delta_create(&dlen, git_odb_object_data(bobj), git_odb_object_size(bobj),
                                      git_odb_object_data(obj), len, len);
    if (delta && !(zd = deflate_all(delta, dlen, &zdlen))) {
        rc = mcg_err_set(err, MCG_EIO, "pack: cannot compress an object");
        goto out;
    }
    unsigned char hd[48], hw[16];
    uint64_t at = w->written;
    size_t nd =
        zd ? mcg_pack_entry_header(hd, ofs ? MCG_PACK_OFS : MCG_PACK_REF, dlen, at - off, &o->base)
           : 0;
    if (!beat) {
        if (!(zw = deflate_all(git_odb_object_data(obj), len, &zwlen))) {
            rc = mcg_err_set(err, MCG_EIO, "pack: cannot compress an object");
            goto out;
        }
        size_t nw = mcg_pack_entry_header(hw, mcg_pack_type_of(t), len, 0, NULL);
        beat = nw + zwlen;
        if (!zd || nd + zdlen >= beat) {
            *wrote = true;
            rc = emit_entry(w, hw, nw, zw, zwlen, err);
            goto out;
        }
    }
    if (zd && nd + zdlen < beat) {
        *wrote = true;
        if ((rc = emit_entry(w, hd, nd, zd, zdlen, err)) == 0) {
            mcg_oidmap_put(&w->depth, &o->id, ofs ? mcg_pack_thin_depth(w, &o->base) + 1 : 1);
            if (ofs)
                w->ofs++;
            else
                w->refs++;
        }
    }
out:
    free(delta);
    free(zd);
    free(zw);
    git_odb_object_free(bobj);
    git_odb_object_free(obj);
    return rc;
}

void mcg_pack_writer_thin(mcg_pack_writer *w, const mcg_oidmap *have)
{
    w->thin = have;
}

int mcg_pack_write_object(mcg_pack_writer *w, git_odb *odb, const mcg_pack_place *o, mcg_err *err)
{
    bool wrote = false;
    uint64_t at = w->written;
    int rc = mcg_pack_thin_entry(w, odb, o, 0, &wrote, err);
    if (!rc)
        mcg_oidmap_put(&w->ids, &o->id, at);
    return rc;
}
