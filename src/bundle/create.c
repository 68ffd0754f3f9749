/*
 * create.c — a bundle written: the header (format.c) for the refs refs.c
 * chose, then the pack, streamed to the file (outfile.c), never held whole.
 *
 * The pack is either the stored entries of a packed repository copied as
 * they are (pack reuse, pack/reuse.c: nearly every object to bundle is in a
 * pack), or git_packbuilder's output with its REF_DELTAs turned into
 * OFS_DELTAs on the way (pack/writer.c); either way about the size of git's
 * bundle. Objects that are in no pack go through the packbuilder in both
 * cases, its stream spliced in after the copied entries.
 *
 * An incremental bundle (--since) carries a thin pack, as git's do: no
 * packbuilder, every object written here (write_thin) in collect.c's
 * order, a stored entry copied or an object deltified on the same path's
 * object of its parent commit, which may be one the receiver has
 * (REF_DELTA on a prerequisite's tree or blob; pack/thin.c).
 */
#include "bundle/bundle_int.h"
#include "fsio/fsio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REUSE_MAX_LOOSE_PERCENT 10 /* more loose objects than this: packbuilder only */

typedef struct write_ctx {
    mcg_pack_writer *pw;
    size_t nobj, done; /* objects in the pack; written before the packbuilder's */
    git_packbuilder *pb;
    const mcg_bundle_progress *prog;
} write_ctx;

/* git_packbuilder_foreach's callback: the stream through the writer. */
static int pack_write_cb(void *buf, size_t size, void *payload)
{
    write_ctx *w = payload;
    if (mcg_pack_writer_stream(w->pw, buf, size) != 0)
        return -1;
    mcg_bundle_tick(w->prog, "writing objects", w->done + git_packbuilder_written(w->pb), w->nobj);
    return 0;
}

/* The packbuilder's progress: counting, then compressing. */
static int pack_progress_cb(int stage, uint32_t current, uint32_t total, void *payload)
{
    const mcg_bundle_progress *p = payload;
    if (stage == GIT_PACKBUILDER_ADDING_OBJECTS)
        mcg_bundle_tick(p, "counting objects", current, total ? total : current);
    else
        mcg_bundle_tick(p, "compressing objects", current, total);
    return 0;
}

/* Insert annotated tag objects (and tags of tags) so the ref lines resolve. */
static int insert_tags(git_packbuilder *pb, git_repository *repo, const mcg_bundle_reflist *refs,
                       mcg_err *err)
{
    for (size_t i = 0; i < refs->n; i++) {
        git_oid id = refs->v[i].target;
        for (int depth = 0; depth < 16; depth++) {
            git_tag *tag = NULL;
            if (git_object_lookup((git_object **)&tag, repo, &id, GIT_OBJECT_TAG) != 0)
                break; /* not a tag: the walk already has it */
            int rc = git_packbuilder_insert(pb, &id, NULL);
            id = *git_tag_target_id(tag);
            git_tag_free(tag);
            if (rc != 0)
                return mcg_git_err(err, "pack");
        }
    }
    return 0;
}

/* Why the writer failed, in err: a write error (prefixed by where), a stream it could not parse. */
static int writer_err(mcg_err *err, const mcg_pack_writer *pw, const char *where)
{
    if (mcg_pack_writer_errno(pw))
        return mcg_err_set_os(err, MCG_EIO, mcg_pack_writer_errno(pw), "%s", where);
    if (mcg_pack_writer_failure(pw))
        return mcg_err_set(err, MCG_EIO, "pack: %s", mcg_pack_writer_failure(pw));
    return 0;
}

/*
 * The pack by reuse: the packed objects' stored entries, pack by pack in
 * the order they are stored (so a delta's base comes first), then the
 * packbuilder's objects (those not in a pack), spliced in.
 */
static int write_reused(write_ctx *w, mcg_bundle_objset *set, const mcg_pack_reuse *packs,
                        mcg_repo *r, mcg_err *err)
{
    git_odb *odb = NULL;
    size_t packed = 0;
    int rc = 0;
    for (size_t i = 0; i < set->n; i++)
        if (set->v[i].pack >= 0)
            set->v[packed++] = set->v[i]; /* the loose ones are in the packbuilder */
    mcg_pack_reuse_order(set->v, packed);
    w->nobj = packed + git_packbuilder_object_count(w->pb);
    if (w->nobj > UINT32_MAX)
        return mcg_err_set(err, MCG_EINVAL, "too many objects for one pack");
    if (git_repository_odb(&odb, mcg_repo_git(r)) != 0)
        return mcg_git_err(err, "odb");
    if (mcg_pack_writer_begin(w->pw, (uint32_t)w->nobj) != 0) {
        rc = writer_err(err, w->pw, "write");
        goto out;
    }
    for (size_t i = 0; i < packed && !rc; i++) {
        rc = mcg_pack_reuse_copy(w->pw, packs, &set->v[i], odb, err);
        mcg_bundle_tick(w->prog, "writing objects", i + 1, w->nobj);
    }
    if (rc)
        goto out;
    w->done = packed;
    if (git_packbuilder_object_count(w->pb) &&
        (git_packbuilder_foreach(w->pb, pack_write_cb, w) != 0 || !mcg_pack_writer_done(w->pw))) {
        if ((rc = writer_err(err, w->pw, "write")) == 0)
            rc = mcg_git_err(err, "pack");
        goto out;
    }
    if (mcg_pack_writer_end(w->pw) != 0)
        rc = writer_err(err, w->pw, "write");
out:
    git_odb_free(odb);
    return rc;
}

/*
 * The thin pack of an incremental bundle: the objects collect.c listed,
 * in its order (every candidate base before the object, or the
 * receiver's), each stored entry copied when it will do, else written by
 * pack/thin.c.
 */
static int write_thin(write_ctx *w, mcg_bundle_objset *set, const mcg_pack_reuse *packs,
                      mcg_repo *r, mcg_err *err)
{
    git_odb *odb = NULL;
    int rc = 0;
    if (set->n > UINT32_MAX)
        return mcg_err_set(err, MCG_EINVAL, "too many objects for one pack");
    w->nobj = set->n;
    if (git_repository_odb(&odb, mcg_repo_git(r)) != 0)
        return mcg_git_err(err, "odb");
    mcg_pack_writer_thin(w->pw, &set->have);
    if (mcg_pack_writer_begin(w->pw, (uint32_t)set->n) != 0) {
        rc = writer_err(err, w->pw, "write");
        goto out;
    }
    for (size_t i = 0; i < set->n && !rc; i++) {
        if (packs && mcg_pack_reuse_find(packs, &set->v[i]))
            rc = mcg_pack_reuse_copy(w->pw, packs, &set->v[i], odb, err);
        else
            rc = mcg_pack_write_object(w->pw, odb, &set->v[i], err);
        mcg_bundle_tick(w->prog, "writing objects", i + 1, w->nobj);
    }
    if (!rc && mcg_pack_writer_end(w->pw) != 0)
        rc = writer_err(err, w->pw, "write");
out:
    git_odb_free(odb);
    return rc;
}

/* The objects of an incremental bundle, with their bases (collect.c), read without caching. */
static int collect_thin(mcg_bundle_objset *set, mcg_repo *r, const mcg_bundle_reflist *refs,
                        const git_oid *since, const mcg_oidv *prereqs, mcg_err *err)
{
    /* as in plan_reuse: the repo's own objects, listed, each read once */
    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0);
    git_libgit2_opts(GIT_OPT_ENABLE_CACHING, 0);
    int rc = mcg_bundle_collect(set, r, refs, since, prereqs, err);
    git_libgit2_opts(GIT_OPT_ENABLE_CACHING, 1);
    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 1);
    return rc;
}

/*
 * Decide whether to copy stored entries: collect what the bundle holds and
 * find each object in the repo's packs. Reuse when at most
 * REUSE_MAX_LOOSE_PERCENT of them are elsewhere (those are inserted into
 * pb); otherwise *reuse stays false and nothing has been inserted.
 */
static int plan_reuse(bool *reuse, mcg_bundle_objset *set, const mcg_pack_reuse *packs,
                      git_packbuilder *pb, mcg_repo *r, const mcg_bundle_reflist *refs,
                      const git_oid *since, const mcg_oidv *prereqs, mcg_err *err)
{
    size_t loose = 0;
    int rc;
    *reuse = false;
    /*
     * The repo's own objects are read to list them, not to trust them: the
     * entries copied are checked against their CRC, and whoever reads the
     * bundle hashes every object. So no second hashing on read (as git's
     * pack-objects does not).
     */
    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0);
    /* Each object is read once: caching them would only cost memory. */
    git_libgit2_opts(GIT_OPT_ENABLE_CACHING, 0);
    rc = mcg_bundle_collect(set, r, refs, since, prereqs, err);
    git_libgit2_opts(GIT_OPT_ENABLE_CACHING, 1);
    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 1);
    if (rc)
        return rc;
    for (size_t i = 0; i < set->n; i++)
        loose += !mcg_pack_reuse_find(packs, &set->v[i]);
    if (loose * 100 > set->n * REUSE_MAX_LOOSE_PERCENT)
        return 0;
    for (size_t i = 0; i < set->n; i++)
        if (set->v[i].pack < 0 && git_packbuilder_insert(pb, &set->v[i].id, NULL) != 0)
            return mcg_git_err(err, "pack");
    *reuse = true;
    return 0;
}

/* The header: prerequisites with their subjects, then the refs. */
static void write_header(mcg_buf *hdr, mcg_repo *r, const mcg_oidv *prereqs,
                         const mcg_bundle_reflist *refs)
{
    mcg_bundle_hdr_put_start(hdr);
    for (size_t i = 0; i < prereqs->n; i++) {
        git_commit *c = NULL;
        const char *subject = NULL;
        if (git_commit_lookup(&c, mcg_repo_git(r), &prereqs->v[i]) == 0)
            subject = git_commit_summary(c);
        mcg_bundle_hdr_put_prereq(hdr, &prereqs->v[i], subject);
        git_commit_free(c);
    }
    for (size_t i = 0; i < refs->n; i++)
        mcg_bundle_hdr_put_ref(hdr, &refs->v[i].target, refs->v[i].name);
    mcg_bundle_hdr_put_end(hdr);
}

/* The refs to bundle and, with opts->since, the prerequisites. */
static int select_refs(mcg_bundle_reflist *refs, mcg_oidv *prereqs, git_oid *since_oid,
                       const git_oid **since, mcg_repo *r, const mcg_bundle_create_opts *opts,
                       mcg_err *err)
{
    int rc = opts->nrefs ? mcg_bundle_refs_named(refs, r, opts->refs, opts->nrefs, err)
                         : mcg_bundle_refs_default(refs, r, err);
    if (rc)
        return rc;
    if (opts->since) {
        char sha[MCG_SHA_HEX + 1];
        if ((rc = mcg_repo_resolve(r, opts->since, sha, err)) != 0)
            return rc;
        git_oid_fromstr(since_oid, sha);
        *since = since_oid;
        if ((rc = mcg_bundle_refs_incremental(prereqs, refs, r, *since, opts->since, err)) != 0)
            return rc;
    }
    /* A full bundle holds every commit its refs reach: at least theirs. */
    if (!refs->n)
        return mcg_err_set(err, MCG_EINVAL, "nothing to bundle: no refs");
    mcg_bundle_refs_sort(refs);
    return 0;
}

/* The repository's own packs, for their stored entries to be reused (NULL: none). */
static mcg_pack_reuse *open_reuse(mcg_repo *r)
{
    git_buf objdir = GIT_BUF_INIT;
    mcg_pack_reuse *packs = NULL;
    if (git_repository_item_path(&objdir, mcg_repo_git(r), GIT_REPOSITORY_ITEM_OBJECTS) == 0) {
        char *dir = mcg_sprintf("%spack", objdir.ptr);
        packs = mcg_pack_reuse_open(dir);
        free(dir);
    }
    git_buf_dispose(&objdir);
    return packs;
}

/* Every object the refs reach, and their tags, into the packbuilder (*walk: the caller's). */
static int insert_walk(git_packbuilder *pb, git_revwalk **walk, mcg_repo *r,
                       const mcg_bundle_reflist *refs, mcg_err *err)
{
    int rc;
    if ((rc = mcg_bundle_walk_new(walk, r, refs, NULL, err)) != 0)
        return rc;
    if (git_packbuilder_insert_walk(pb, *walk) != 0)
        return mcg_git_err(err, "pack");
    return insert_tags(pb, mcg_repo_git(r), refs, err);
}

/* The packbuilder's pack through the writer (path: for messages). */
static int write_packbuilder(write_ctx *w, git_packbuilder *pb, const char *path, mcg_err *err)
{
    int rc;
    if (git_packbuilder_foreach(pb, pack_write_cb, w) == 0 && mcg_pack_writer_done(w->pw))
        return 0;
    if ((rc = writer_err(err, w->pw, path)) != 0)
        return rc;
    if (!mcg_pack_writer_done(w->pw))
        return mcg_err_set(err, MCG_EIO, "pack: the pack ended early");
    return mcg_git_err(err, "pack");
}

int mcg_bundle_create(mcg_bundle_info *info, mcg_repo *r, const char *path,
                      const mcg_bundle_create_opts *opts, mcg_err *err)
{
    mcg_bundle_reflist refs = {0};
    mcg_oidv prereqs = {0};
    git_revwalk *walk = NULL;
    git_packbuilder *pb = NULL;
    git_oid since_oid;
    const git_oid *since = NULL;
    mcg_buf hdr = MCG_BUF_INIT;
    mcg_bundle_out out = {.fd = -1};
    write_ctx w = {0};
    mcg_bundle_objset set = {0};
    mcg_pack_reuse *packs = NULL;
    bool reuse = false;
    int rc = 0;
    const mcg_bundle_progress *prog = &opts->progress;
    mcg_bundle_info local = {0};

    if (!strcmp(path, "-") && isatty(STDOUT_FILENO))
        return mcg_err_set(err, MCG_EUSAGE, "refusing to write a bundle to a terminal");
    if ((rc = select_refs(&refs, &prereqs, &since_oid, &since, r, opts, err)) != 0)
        goto out;
    write_header(&hdr, r, &prereqs, &refs);

    /* The pack: new commits with only the trees and blobs the prerequisites lack. */
    if (git_packbuilder_new(&pb, mcg_repo_git(r)) != 0) {
        rc = mcg_git_err(err, "pack");
        goto out;
    }
    git_packbuilder_set_threads(pb, 0); /* one per CPU for the delta search */
    if (prog->fn)
        git_packbuilder_set_callbacks(pb, pack_progress_cb, (void *)prog);
    packs = open_reuse(r);
    if (since) {
        if ((rc = collect_thin(&set, r, &refs, since, &prereqs, err)) != 0)
            goto out;
    } else if (packs &&
               (rc = plan_reuse(&reuse, &set, packs, pb, r, &refs, since, &prereqs, err)) != 0) {
        goto out;
    }
    if (!reuse && !since && (rc = insert_walk(pb, &walk, r, &refs, err)) != 0)
        goto out;

    if ((rc = mcg_bundle_out_open(&out, path, err)) != 0)
        goto out;
    if ((rc = mcg_pack_writer_new(&w.pw, out.fd, err)) != 0)
        goto out;
    w.nobj = git_packbuilder_object_count(pb);
    w.pb = pb;
    w.prog = prog;
    if (mcg_write_all(out.fd, hdr.ptr, hdr.len) != 0) {
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", path);
        goto out;
    }
    if (since)
        rc = write_thin(&w, &set, packs, r, err);
    else if (reuse)
        rc = write_reused(&w, &set, packs, r, err);
    else
        rc = write_packbuilder(&w, pb, path, err);
    if (rc)
        goto out;
    mcg_bundle_tick(prog, NULL, 0, 0);
    if ((rc = mcg_bundle_out_commit(&out, err)) != 0)
        goto out;
    local.nrefs = refs.n;
    local.nprerequisites = prereqs.n;
    local.nobjects = w.nobj;
    local.bytes = hdr.len + mcg_pack_writer_written(w.pw);
    if (info)
        *info = local;
out:
    mcg_bundle_tick(prog, NULL, 0, 0);
    mcg_pack_writer_free(w.pw);
    mcg_bundle_out_close(&out);
    mcg_buf_free(&hdr);
    mcg_pack_reuse_free(packs);
    mcg_bundle_objset_free(&set);
    git_packbuilder_free(pb);
    git_revwalk_free(walk);
    mcg_oidv_free(&prereqs);
    mcg_bundle_reflist_free(&refs);
    return rc;
}
