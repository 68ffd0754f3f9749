/*
 * scratch.c — a repository handle whose new objects stay in memory until
 * they are written out together (mcg_repo_scratch, mcg_repo_scratch_persist).
 *
 * Rendering writes many small objects: a rendered commit per source
 * commit, and the blobs and trees of every render. Through the repository's
 * own object database each write costs far more than the object: libgit2
 * first asks every backend whether the object exists ("freshen"), and on a
 * miss — a new object always misses — re-reads the pack directory before
 * asking again (opendir, readdir, a stat per pack). An import of 5,000
 * commits spent a third of its render there.
 *
 * So the scratch handle has an object database of its own, two backends:
 *
 *   store  (priority 1000)  the objects written, in memory (an oid map);
 *                           a write of an object the disk already holds
 *                           keeps nothing
 *   disk   (priority 1)     reads from the repository's objects directory,
 *                           its alternates and, inside a git hook, the
 *                           push quarantine: libgit2's pack and loose
 *                           backends for each, asked directly, never
 *                           refreshed on a miss
 *
 * Neither has a refresh or freshen method, so a write is a hash, one lookup
 * per backend and a copy. Nothing reaches the disk until
 * mcg_repo_scratch_persist: 100 objects or more become one pack with its
 * index, written by pack/'s writer (each to a temporary file, fsynced,
 * renamed),
 * fewer are written loose, as git's transfer.unpackLimit does — so a
 * render killed at any moment has written nothing, and a long history is
 * not thousands of loose files.
 */
#include "fsio/fsio.h"
#include "osenv/osenv.h"
#include "gitops/gitops_int.h"

#include <git2/sys/repository.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCRATCH_UNPACK_LIMIT 100 /* objects; fewer are written loose (git's default) */
#define SCRATCH_MAX_DIRS 16      /* objects directories read: own, alternates, quarantine */

/* ------------------------------------------------------------ disk */

typedef struct disk_backend {
    git_odb_backend parent;
    git_odb_backend *inner[2 * SCRATCH_MAX_DIRS]; /* pack then loose, per directory */
    size_t n;
} disk_backend;

static int disk_read(void **data, size_t *len, git_object_t *type, git_odb_backend *b,
                     const git_oid *id)
{
    disk_backend *d = (disk_backend *)b;
    for (size_t i = 0; i < d->n; i++)
        if (d->inner[i]->read && d->inner[i]->read(data, len, type, d->inner[i], id) == 0)
            return 0;
    return GIT_ENOTFOUND;
}

static int disk_read_header(size_t *len, git_object_t *type, git_odb_backend *b, const git_oid *id)
{
    disk_backend *d = (disk_backend *)b;
    for (size_t i = 0; i < d->n; i++)
        if (d->inner[i]->read_header && d->inner[i]->read_header(len, type, d->inner[i], id) == 0)
            return 0;
    return GIT_ENOTFOUND;
}

static int disk_read_prefix(git_oid *out, void **data, size_t *len, git_object_t *type,
                            git_odb_backend *b, const git_oid *prefix, size_t plen)
{
    disk_backend *d = (disk_backend *)b;
    bool found = false;
    for (size_t i = 0; i < d->n; i++) {
        git_oid id;
        void *p = NULL;
        size_t l = 0;
        git_object_t t;
        if (!d->inner[i]->read_prefix ||
            d->inner[i]->read_prefix(&id, &p, &l, &t, d->inner[i], prefix, plen) != 0)
            continue;
        if (found && !git_oid_equal(&id, out)) {
            git_odb_backend_data_free(b, p);
            git_odb_backend_data_free(b, *data);
            *data = NULL;
            return GIT_EAMBIGUOUS;
        }
        if (found) {
            git_odb_backend_data_free(b, p); /* the same object twice */
            continue;
        }
        *out = id;
        *data = p;
        *len = l;
        *type = t;
        found = true;
    }
    return found ? 0 : GIT_ENOTFOUND;
}

static int disk_exists(git_odb_backend *b, const git_oid *id)
{
    disk_backend *d = (disk_backend *)b;
    for (size_t i = 0; i < d->n; i++)
        if (d->inner[i]->exists && d->inner[i]->exists(d->inner[i], id))
            return 1;
    return 0;
}

static int disk_exists_prefix(git_oid *out, git_odb_backend *b, const git_oid *prefix, size_t plen)
{
    disk_backend *d = (disk_backend *)b;
    bool found = false;
    for (size_t i = 0; i < d->n; i++) {
        git_oid id;
        if (!d->inner[i]->exists_prefix ||
            d->inner[i]->exists_prefix(&id, d->inner[i], prefix, plen) != 0)
            continue;
        if (found && !git_oid_equal(&id, out))
            return GIT_EAMBIGUOUS;
        *out = id;
        found = true;
    }
    return found ? 0 : GIT_ENOTFOUND;
}

/* Look again at the packs on disk (after a persist added one). */
static void disk_rescan(disk_backend *d)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->inner[i]->refresh)
            d->inner[i]->refresh(d->inner[i]);
}

static void disk_free(git_odb_backend *b)
{
    disk_backend *d = (disk_backend *)b;
    for (size_t i = 0; i < d->n; i++)
        d->inner[i]->free(d->inner[i]);
    free(d);
}

/* Add the pack and loose backends of one objects directory (skipped when unusable). */
static void disk_add_dir(disk_backend *d, const char *dir)
{
    git_odb_backend *pack = NULL, *loose = NULL;
    if (d->n + 2 > sizeof(d->inner) / sizeof(d->inner[0]))
        return;
    if (git_odb_backend_pack(&pack, dir) == 0)
        d->inner[d->n++] = pack;
    if (git_odb_backend_loose(&loose, dir, -1, 0, 0, 0) == 0)
        d->inner[d->n++] = loose;
}

/*
 * The objects directories a repository reads: its own, those its
 * objects/info/alternates names (relative ones from the objects directory;
 * one level, as git), and the push quarantine of a git hook.
 */
static disk_backend *disk_new(const char *objects)
{
    disk_backend *d = mcg_calloc(1, sizeof(*d));
    git_odb_init_backend(&d->parent, GIT_ODB_BACKEND_VERSION);
    d->parent.read = disk_read;
    d->parent.read_header = disk_read_header;
    d->parent.read_prefix = disk_read_prefix;
    d->parent.exists = disk_exists;
    d->parent.exists_prefix = disk_exists_prefix;
    d->parent.free = disk_free;
    disk_add_dir(d, objects);
    char *alt_path = mcg_sprintf("%s/info/alternates", objects), *alt = NULL;
    size_t alen = 0;
    if (mcg_read_file(alt_path, 1 << 20, &alt, &alen, NULL) == 0) {
        for (char *line = alt, *next; line && *line; line = next) {
            next = strchr(line, '\n');
            if (next)
                *next++ = '\0';
            if (!*line || *line == '#')
                continue;
            char *dir = line[0] == '/' ? mcg_strdup(line) : mcg_sprintf("%s/%s", objects, line);
            disk_add_dir(d, dir);
            free(dir);
        }
    }
    free(alt);
    free(alt_path);
    const char *q = mcg_env_get("GIT_QUARANTINE_PATH");
    if (q && *q)
        disk_add_dir(d, q);
    return d;
}

/* ------------------------------------------------------------ store */

typedef mcg_pack_obj stored; /* what mcg_pack_store packs */

typedef struct store_backend {
    git_odb_backend parent;
    disk_backend *disk; /* what is on disk already (owned by the odb) */
    mcg_oidmap map;     /* id -> index in v */
    stored *v;
    size_t n, cap;
} store_backend;

static const stored *store_find(const store_backend *s, const git_oid *id)
{
    uint64_t i;
    return mcg_oidmap_get(&s->map, id, &i) ? &s->v[i] : NULL;
}

static int store_read(void **data, size_t *len, git_object_t *type, git_odb_backend *b,
                      const git_oid *id)
{
    const stored *o = store_find((store_backend *)b, id);
    if (!o)
        return GIT_ENOTFOUND;
    /* NUL-terminated, as libgit2's own backends hand out objects (commit
     * parsing and signature extraction scan the text with strchr) */
    unsigned char *p = git_odb_backend_data_alloc(b, o->len + 1);
    if (!p)
        return -1;
    memcpy(p, o->data, o->len);
    p[o->len] = '\0';
    *data = p;
    *len = o->len;
    *type = o->type;
    return 0;
}

static int store_read_header(size_t *len, git_object_t *type, git_odb_backend *b, const git_oid *id)
{
    const stored *o = store_find((store_backend *)b, id);
    if (!o)
        return GIT_ENOTFOUND;
    *len = o->len;
    *type = o->type;
    return 0;
}

static int store_read_prefix(git_oid *out, void **data, size_t *len, git_object_t *type,
                             git_odb_backend *b, const git_oid *prefix, size_t plen)
{
    store_backend *s = (store_backend *)b;
    const stored *hit = NULL;
    for (size_t i = 0; i < s->n; i++)
        if (git_oid_ncmp(&s->v[i].id, prefix, plen) == 0) {
            if (hit)
                return GIT_EAMBIGUOUS;
            hit = &s->v[i];
        }
    if (!hit)
        return GIT_ENOTFOUND;
    *out = hit->id;
    return store_read(data, len, type, b, &hit->id);
}

static int store_exists(git_odb_backend *b, const git_oid *id)
{
    return store_find((store_backend *)b, id) != NULL;
}

static int store_exists_prefix(git_oid *out, git_odb_backend *b, const git_oid *prefix, size_t plen)
{
    store_backend *s = (store_backend *)b;
    bool found = false;
    for (size_t i = 0; i < s->n; i++)
        if (git_oid_ncmp(&s->v[i].id, prefix, plen) == 0) {
            if (found)
                return GIT_EAMBIGUOUS;
            *out = s->v[i].id;
            found = true;
        }
    return found ? 0 : GIT_ENOTFOUND;
}

static int store_write(git_odb_backend *b, const git_oid *id, const void *data, size_t len,
                       git_object_t type)
{
    store_backend *s = (store_backend *)b;
    if (store_find(s, id) || disk_exists(&s->disk->parent, id))
        return 0; /* held already */
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->v = mcg_realloc(s->v, s->cap * sizeof(*s->v));
    }
    stored *o = &s->v[s->n];
    o->id = *id;
    o->type = type;
    o->len = len;
    o->data = mcg_malloc(len ? len : 1);
    memcpy(o->data, data, len);
    mcg_oidmap_put(&s->map, id, s->n++);
    return 0;
}

/* Forget every object held. */
static void store_reset(store_backend *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].data);
    s->n = 0;
    mcg_oidmap_free(&s->map);
    memset(&s->map, 0, sizeof(s->map));
}

static void store_free(git_odb_backend *b)
{
    store_backend *s = (store_backend *)b;
    store_reset(s);
    free(s->v);
    free(s);
}

/* ------------------------------------------------------------ the handle */

int mcg_repo_scratch(mcg_repo **out, git_odb_backend **mem_out, const mcg_repo *r, mcg_err *err)
{
    git_odb *odb = NULL;
    mcg_repo *s = mcg_calloc(1, sizeof(*s));
    int rc = 0;
    *out = NULL;
    if (mem_out)
        *mem_out = NULL;
    mcg_gitops_lib_init(); /* balanced by mcg_repo_free */
    s->source_branch = mcg_strdup(r->source_branch);
    s->rendered_branch = mcg_strdup(r->rendered_branch);
    char *objects = mcg_sprintf("%sobjects", git_repository_path(r->git));
    if (git_repository_open(&s->git, git_repository_path(r->git)) != 0 || git_odb_new(&odb) != 0) {
        rc = mcg_git_err(err, "in-memory object store");
        goto out;
    }
    disk_backend *disk = disk_new(objects);
    if (git_odb_add_backend(odb, &disk->parent, 1) != 0) {
        disk_free(&disk->parent); /* not added: still ours */
        rc = mcg_git_err(err, "in-memory object store");
        goto out;
    }
    store_backend *st = mcg_calloc(1, sizeof(*st));
    git_odb_init_backend(&st->parent, GIT_ODB_BACKEND_VERSION);
    st->parent.read = store_read;
    st->parent.read_header = store_read_header;
    st->parent.read_prefix = store_read_prefix;
    st->parent.exists = store_exists;
    st->parent.exists_prefix = store_exists_prefix;
    st->parent.write = store_write;
    st->parent.free = store_free;
    st->disk = disk;
    if (git_odb_add_backend(odb, &st->parent, 1000) != 0) {
        store_free(&st->parent);
        rc = mcg_git_err(err, "in-memory object store");
        goto out;
    }
    git_repository_set_odb(s->git, odb);
    if (mem_out)
        *mem_out = &st->parent; /* owned by the odb */
out:
    git_odb_free(odb);
    free(objects);
    if (rc) {
        mcg_repo_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

/*
 * Everything held as one pack with its version-2 index, both made by
 * pack/ (mcg_pack_store): the ids are known (libgit2 hashed each object as
 * it was written, with its collision-detecting SHA-1), so nothing is
 * inflated or hashed again. Objects are whole (no deltas; `git gc` finds
 * them), under the pack's name pack-<SHA-1 of its contents>.
 */
static int persist_pack(const char *packdir, store_backend *s, mcg_err *err)
{
    int rc = mcg_pack_store(packdir, s->v, s->n, err);
    if (rc)
        mcg_err_prefix(err, "writing the rendered objects");
    return rc;
}

int mcg_repo_scratch_persist(mcg_repo *r, mcg_repo *scratch, git_odb_backend *mem, mcg_err *err)
{
    store_backend *s = (store_backend *)mem;
    git_odb *odb = NULL;
    int rc = 0;
    (void)scratch;
    if (s->n == 0)
        return 0;
    if (git_repository_odb(&odb, r->git) != 0)
        return mcg_git_err(err, "object database");
    if (s->n >= SCRATCH_UNPACK_LIMIT) {
        char *packdir = mcg_sprintf("%sobjects/pack", git_repository_path(r->git));
        rc = persist_pack(packdir, s, err);
        free(packdir);
    } else {
        for (size_t i = 0; i < s->n && !rc; i++) {
            git_oid id;
            if (git_odb_write(&id, odb, s->v[i].data, s->v[i].len, s->v[i].type) != 0)
                rc = mcg_git_err(err, "writing the rendered objects");
        }
    }
    if (!rc && git_odb_refresh(odb) != 0)
        rc = mcg_git_err(err, "object database");
    git_odb_free(odb);
    if (!rc) {
        disk_rescan(s->disk);
        store_reset(s);
    }
    return rc;
}
