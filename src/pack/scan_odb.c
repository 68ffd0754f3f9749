/*
 * scan_odb.c — a read-only object database backend serving the commits a
 * pack scan kept, so that libgit2 reads them from memory instead of
 * re-applying their delta chains in the quarantined pack.
 */
#include "pack/pack_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct kbackend {
    git_odb_backend parent;
    const mcg_packscan *scan;
} kbackend;

/* The kept commit with id, or NULL. */
static const mcg_scan_commit *find_commit(const mcg_packscan *s, const git_oid *id)
{
    mcg_scan_commit key;
    key.id = *id;
    if (!s->ncommits)
        return NULL;
    return bsearch(&key, s->commits, s->ncommits, sizeof(*s->commits), mcg_scan_commit_cmp);
}

/* read: a kept commit's bytes in a libgit2-owned buffer; GIT_ENOTFOUND for anything else. */
static int kb_read(void **data, size_t *len, git_object_t *type, git_odb_backend *b,
                   const git_oid *id)
{
    const kbackend *kb = (const kbackend *)b;
    const mcg_scan_commit *k = find_commit(kb->scan, id);
    if (!k)
        return GIT_ENOTFOUND;
    const mcg_scan_obj *o = &kb->scan->objs[k->obj];
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

/* read_header: a kept commit's size and type. */
static int kb_read_header(size_t *len, git_object_t *type, git_odb_backend *b, const git_oid *id)
{
    const kbackend *kb = (const kbackend *)b;
    const mcg_scan_commit *k = find_commit(kb->scan, id);
    if (!k)
        return GIT_ENOTFOUND;
    *len = kb->scan->objs[k->obj].len;
    *type = GIT_OBJECT_COMMIT;
    return 0;
}

/* exists: whether id is a kept commit. */
static int kb_exists(git_odb_backend *b, const git_oid *id)
{
    return find_commit(((const kbackend *)b)->scan, id) != NULL;
}

/* free: the backend only; the scan stays its owner's. */
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