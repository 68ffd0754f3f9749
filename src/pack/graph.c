/*
 * graph.c — a pack's delta graph checked before libgit2 indexes it.
 *
 * libgit2 1.5.1's indexer follows a delta's base without remembering where
 * it has been: a delta whose result is its own base (a blob, then a
 * REF_DELTA on it that makes that same blob again) sends it round for ever,
 * its chain array growing until the memory is gone, whatever the declared
 * sizes say. So every pack mcgit hands to the indexer (a bundle's, a
 * fetch's) is first resolved here, the way git's index-pack resolves one:
 *
 *   1. parse: every entry's header is read and its data inflated to find
 *      where it ends; an OFS_DELTA's base must be the start of an earlier
 *      entry (a distance of 0 is the delta itself); a whole object's id is
 *      hashed as it streams; every size an entry declares — a whole
 *      object's, a delta's result — is held to the limits (one object, and
 *      all of them against the pack's size).
 *   2. resolve: from each whole object, and then from each object of the
 *      repository a REF_DELTA names, its deltas are applied depth first
 *      (the bases along the path kept only while a sibling still needs
 *      them, and past 128 MiB of them the oldest dropped and rebuilt from
 *      their chain when needed), each result hashed. An id made twice (a delta that rebuilds
 *      its own base, or any copy) is refused; so is a chain deeper than the
 *      limit. A delta never reached has no base it can be built from: its
 *      base is itself, or in a cycle, or nowhere.
 *
 * The pack's bytes are kept in an unlinked temporary file, not in memory;
 * the check maps it. Memory is the entries' table (about 100 bytes each),
 * one delta's data and at most 128 MiB of bases along one path of the graph
 * (each object itself bounded by the limits).
 */
#include "pack/pack_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define NONE UINT32_MAX
#define EXTERNAL UINT64_MAX      /* in ids: an object of the repository used as a base */
#define HOLD ((size_t)128 << 20) /* bases kept along the walk's path (lim->hold 0) */

typedef struct gent {
    uint64_t off, zoff; /* where the entry starts, where its zlib data starts */
    uint64_t size;      /* as its header says: the object's, or the delta data's */
    uint32_t base;      /* OFS_DELTA: the base's entry */
    uint32_t depth;
    uint8_t type;  /* as stored */
    uint8_t otype; /* the object's type, once resolved */
    bool done;
    git_oid ref; /* REF_DELTA: the base's id */
    git_oid id;  /* once resolved */
} gent;

struct mcg_pack_graph {
    int fd;
    uint64_t len;
    int err_no;
    /* the check's */
    const unsigned char *map;
    const mcg_pack_limits *lim;
    const char *what;
    git_odb *have;
    gent *e;
    uint32_t n;
    uint32_t *kid_start, *kids; /* OFS_DELTAs by base entry (CSR) */
    struct gref *refs;          /* REF_DELTAs sorted by base id */
    uint32_t nrefs;
    mcg_oidmap ids; /* id -> entry, or EXTERNAL */
    EVP_MD_CTX *md;
    z_stream z;
    bool zinit;
    unsigned char scratch[64 * 1024];
};

int mcg_pack_graph_new(mcg_pack_graph **out, const char *dir, mcg_err *err)
{
    mcg_pack_graph *g = calloc(1, sizeof(*g));
    *out = NULL;
    if (!g)
        return mcg_err_set(err, MCG_ENOMEM, "out of memory");
    char *path = mcg_sprintf("%s/.mcgit-graph-XXXXXX", dir);
    g->fd = mkostemp(path, O_CLOEXEC);
    if (g->fd < 0) {
        int e = errno;
        free(g);
        int rc = mcg_err_set_os(err, MCG_EIO, e, "%s", path);
        free(path);
        return rc;
    }
    unlink(path);
    free(path);
    *out = g;
    return 0;
}

void mcg_pack_graph_feed(mcg_pack_graph *g, const void *p, size_t n)
{
    const char *b = p;
    while (g && n && !g->err_no) {
        ssize_t w = write(g->fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            g->err_no = w < 0 ? errno : EIO;
            return;
        }
        b += w;
        n -= (size_t)w;
        g->len += (uint64_t)w;
    }
}

void mcg_pack_graph_free(mcg_pack_graph *g)
{
    if (!g)
        return;
    if (g->fd >= 0)
        close(g->fd);
    free(g->e);
    free(g->kid_start);
    free(g->kids);
    free(g->refs);
    mcg_oidmap_free(&g->ids);
    free(g);
}

/* ------------------------------------------------------------ refusals */

/* "refused before indexing: WHAT at offset OFF: " and fmt with detail, as code. */
static int refuse_as(mcg_pack_graph *g, mcg_err *err, int code, const char *fmt, uint64_t off,
                     const char *detail)
{
    char why[400];
    mcg_bfmt(why, sizeof(why), fmt, detail);
    return mcg_err_set(err, code, "refused before indexing: %s at offset %llu: %s", g->what,
                       (unsigned long long)off, why);
}

static int refuse(mcg_pack_graph *g, mcg_err *err, const char *fmt, uint64_t off,
                  const char *detail)
{
    return refuse_as(g, err, MCG_EINVAL, fmt, off, detail);
}

static bool expired(const mcg_pack_graph *g)
{
    return g->lim->expired && g->lim->expired(g->lim->ctx);
}

static int timed_out(mcg_pack_graph *g, mcg_err *err)
{
    return mcg_err_set(err, MCG_EIO, "%s: timed out while checking its deltas", g->what);
}

/* ------------------------------------------------------------ parse */

/* An entry's type and size at *pos; false when the header runs off or overflows. */
static bool entry_header(mcg_pack_graph *g, uint64_t *pos, gent *e)
{
    const unsigned char *p = g->map;
    uint64_t i = *pos, end = g->len - GIT_OID_RAWSZ;
    if (i >= end)
        return false;
    unsigned char c = p[i++];
    e->type = (c >> 4) & 7;
    e->size = c & 15;
    for (int shift = 4; c & 0x80; shift += 7) {
        if (i >= end || shift > 57)
            return false;
        c = p[i++];
        e->size |= (uint64_t)(c & 0x7f) << shift;
    }
    *pos = i;
    return true;
}

/* The entry of e (number i) starting at off: its OFS base among the earlier entries. */
static int ofs_base(mcg_pack_graph *g, uint64_t *pos, gent *e, uint32_t i, mcg_err *err)
{
    const unsigned char *p = g->map;
    uint64_t end = g->len - GIT_OID_RAWSZ, k = *pos;
    if (k >= end)
        return refuse(g, err, "%s", e->off, "truncated entry");
    uint64_t ofs = p[k] & 0x7f;
    while (p[k++] & 0x80) {
        if (k >= end || ofs > (UINT64_MAX >> 8))
            return refuse(g, err, "%s", e->off, "a delta's base offset does not parse");
        ofs = ((ofs + 1) << 7) | (p[k] & 0x7f);
    }
    *pos = k;
    if (ofs == 0)
        return refuse(g, err, "%s", e->off, "a delta whose base is itself");
    if (ofs > e->off)
        return refuse(g, err, "%s", e->off, "a delta whose base lies before the pack");
    uint32_t lo = 0, hi = i;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (g->e[mid].off < e->off - ofs)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == i || g->e[lo].off != e->off - ofs)
        return refuse(g, err, "%s", e->off, "a delta whose base is not the start of an entry");
    e->base = lo;
    return 0;
}

/* A delta's declared result size, from its first n bytes; UINT64_MAX when it does not parse. */
static uint64_t delta_result(const unsigned char *d, size_t n)
{
    uint64_t v[2] = {0, 0};
    size_t i = 0;
    for (int k = 0; k < 2; k++)
        for (int shift = 0;; shift += 7) {
            if (i >= n || shift > 63)
                return UINT64_MAX;
            unsigned char c = d[i++];
            v[k] |= (uint64_t)(c & 0x7f) << shift;
            if (!(c & 0x80))
                break;
        }
    return v[1];
}

/*
 * Inflate the entry's data from e->zoff: into out (e->size + 1 bytes) when
 * not NULL, else through g->scratch, hashing a whole object into g->md and
 * reading a delta's declared result size into *result. The entry's end in
 * *end. False when damaged (more or less data than the header says).
 */
static bool inflate_entry(mcg_pack_graph *g, const gent *e, unsigned char *out, uint64_t *end,
                          uint64_t *result)
{
    z_stream *z = &g->z;
    if (inflateReset(z) != Z_OK)
        return false;
    z->next_in = (unsigned char *)g->map + e->zoff;
    uint64_t avail = g->len - GIT_OID_RAWSZ - e->zoff, got = 0;
    z->avail_in = (uInt)(avail > UINT32_MAX ? UINT32_MAX : avail);
    int zr;
    do {
        uint64_t room = out ? e->size + 1 - got : sizeof(g->scratch);
        z->next_out = out ? out + got : g->scratch;
        z->avail_out = (uInt)(room > sizeof(g->scratch) ? sizeof(g->scratch) : room);
        uInt before = z->avail_out;
        zr = inflate(z, Z_NO_FLUSH);
        size_t made = before - z->avail_out;
        if (!out && e->type < MCG_PACK_OFS)
            EVP_DigestUpdate(g->md, g->scratch, made);
        if (!out && result && got == 0 && made)
            *result = delta_result(g->scratch, made);
        got += made;
        if (got > e->size)
            return false;
    } while (zr == Z_OK);
    *end = e->zoff + (uint64_t)(z->next_in - (g->map + e->zoff));
    return zr == Z_STREAM_END && got == e->size;
}

static const char *const type_names[] = {"", "commit", "tree", "blob", "tag"};

/* Hash the header of a whole object into g->md. */
static bool hash_start(mcg_pack_graph *g, int type, uint64_t size)
{
    char hdr[40];
    int n = snprintf(hdr, sizeof(hdr), "%s %llu", type_names[type], (unsigned long long)size);
    return EVP_DigestInit_ex(g->md, EVP_sha1(), NULL) == 1 &&
           EVP_DigestUpdate(g->md, hdr, (size_t)n + 1) == 1;
}

/* Record id as entry i's (or EXTERNAL): a second object with one id is refused. */
static int id_put(mcg_pack_graph *g, const git_oid *id, uint64_t i, uint64_t off, mcg_err *err)
{
    char sha[GIT_OID_HEXSZ + 1];
    if (mcg_oidmap_put(&g->ids, id, i))
        return 0;
    git_oid_tostr(sha, sizeof(sha), id);
    return refuse(g, err,
                  "object %s made a second time (a delta whose result is its own base, or a "
                  "copy)",
                  off, sha);
}

/* The sizes entry e declares: one object's, and the running total. */
static int sizes_ok(mcg_pack_graph *g, const gent *e, uint64_t declared, uint64_t *total,
                    mcg_err *err)
{
    const mcg_pack_limits *l = g->lim;
    char d[120];
    uint64_t budget = g->len > (UINT64_MAX - l->floor) / (l->ratio ? l->ratio : 1)
                          ? UINT64_MAX
                          : l->floor + g->len * l->ratio;
    if (declared > l->max_object || e->size > 8 * l->max_object + 64) {
        mcg_bfmt(d, sizeof(d), "%llu bytes, over the limit of %llu for one object",
                 (unsigned long long)(declared > e->size ? declared : e->size),
                 (unsigned long long)l->max_object);
        return refuse(g, err, "an object would inflate to %s", e->off, d);
    }
    *total = *total > UINT64_MAX - declared ? UINT64_MAX : *total + declared;
    if (*total > budget) {
        mcg_bfmt(d, sizeof(d), "%llu bytes, over the pack's budget of %llu",
                 (unsigned long long)*total, (unsigned long long)budget);
        return refuse(g, err, "its objects would inflate to %s", e->off, d);
    }
    return 0;
}

/* Entry i at *pos: header, base, data; whole objects hashed, sizes held to the limits. */
static int parse_entry(mcg_pack_graph *g, uint32_t i, uint64_t *pos, uint64_t *total, mcg_err *err)
{
    gent *e = &g->e[i];
    e->off = *pos;
    e->base = NONE;
    if (!entry_header(g, pos, e))
        return refuse(g, err, "%s", e->off, "an entry header that does not parse");
    int rc = 0;
    if (e->type == MCG_PACK_OFS) {
        rc = ofs_base(g, pos, e, i, err);
    } else if (e->type == MCG_PACK_REF) {
        if (*pos + GIT_OID_RAWSZ > g->len - GIT_OID_RAWSZ)
            return refuse(g, err, "%s", e->off, "truncated entry");
        git_oid_fromraw(&e->ref, g->map + *pos);
        *pos += GIT_OID_RAWSZ;
    } else if (e->type >= MCG_PACK_COMMIT && e->type <= MCG_PACK_TAG) {
        e->otype = e->type;
        if (!hash_start(g, e->type, e->size))
            return mcg_err_set(err, MCG_EIO, "%s: SHA-1 unavailable", g->what);
    } else {
        return refuse(g, err, "an entry of unknown type %s", e->off, e->type == 5 ? "5" : "0");
    }
    if (rc)
        return rc;
    e->zoff = *pos;
    uint64_t declared = e->otype ? e->size : UINT64_MAX;
    if ((rc = sizes_ok(g, e, e->otype ? e->size : 0, total, err)) != 0)
        return rc;
    if (!inflate_entry(g, e, NULL, pos, e->otype ? NULL : &declared))
        return refuse(g, err, "%s", e->off, "damaged data (it does not inflate to its size)");
    if (e->otype) {
        unsigned int olen = 0;
        if (EVP_DigestFinal_ex(g->md, e->id.id, &olen) != 1 || olen != GIT_OID_RAWSZ)
            return mcg_err_set(err, MCG_EIO, "%s: SHA-1 unavailable", g->what);
        e->done = true;
        return id_put(g, &e->id, i, e->off, err);
    }
    return sizes_ok(g, e, declared, total, err);
}

/* Whether the pack ends in the SHA-1 of what comes before (a damaged pack is named so). */
static bool checksum_ok(mcg_pack_graph *g)
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    return EVP_DigestInit_ex(g->md, EVP_sha1(), NULL) == 1 &&
           EVP_DigestUpdate(g->md, g->map, g->len - GIT_OID_RAWSZ) == 1 &&
           EVP_DigestFinal_ex(g->md, d, &len) == 1 && len == GIT_OID_RAWSZ &&
           memcmp(d, g->map + g->len - GIT_OID_RAWSZ, GIT_OID_RAWSZ) == 0;
}

/* Every entry parsed (pass 1). */
static int parse_all(mcg_pack_graph *g, mcg_err *err)
{
    const unsigned char *p = g->map;
    if (g->len < 12 + GIT_OID_RAWSZ || memcmp(p, "PACK", 4) != 0 ||
        (mcg_pack_be32(p + 4) != 2 && mcg_pack_be32(p + 4) != 3))
        return mcg_err_set(err, MCG_EINVAL, "refused before indexing: %s is not a git pack",
                           g->what);
    if (!checksum_ok(g))
        return mcg_err_set(err, MCG_EINVAL,
                           "refused before indexing: %s is damaged or truncated (its checksum "
                           "does not match its contents)",
                           g->what);
    uint32_t n = mcg_pack_be32(p + 8);
    if (n > (g->len - 12 - GIT_OID_RAWSZ) / 3) /* an entry takes 3 bytes at least */
        return mcg_err_set(err, MCG_EINVAL,
                           "refused before indexing: %s declares %u objects in %llu bytes", g->what,
                           n, (unsigned long long)g->len);
    g->e = calloc(n ? n : 1, sizeof(*g->e));
    if (!g->e)
        return mcg_err_set(err, MCG_ENOMEM, "out of memory");
    g->n = n;
    mcg_oidmap_reserve(&g->ids, n);
    uint64_t pos = 12, total = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (expired(g))
            return timed_out(g, err);
        int rc = parse_entry(g, i, &pos, &total, err);
        if (rc)
            return rc;
    }
    if (g->len - pos != GIT_OID_RAWSZ)
        return refuse(g, err, "%s", pos, "data after the last entry");
    return 0;
}

/* ------------------------------------------------------------ resolve */

/* A REF_DELTA, by its base's id. */
typedef struct gref {
    git_oid base;
    uint32_t entry;
} gref;

static int gref_cmp(const void *a, const void *b)
{
    return git_oid_cmp(&((const gref *)a)->base, &((const gref *)b)->base);
}

/* Children lists: OFS_DELTAs by base entry, REF_DELTAs sorted by base id. */
static void index_kids(mcg_pack_graph *g)
{
    uint32_t *fill = mcg_calloc((size_t)g->n + 1, sizeof(uint32_t));
    g->kid_start = mcg_calloc((size_t)g->n + 1, sizeof(uint32_t));
    g->kids = mcg_malloc(((size_t)g->n + 1) * sizeof(uint32_t));
    g->refs = mcg_malloc(((size_t)g->n + 1) * sizeof(gref));
    for (uint32_t i = 0; i < g->n; i++)
        if (g->e[i].type == MCG_PACK_OFS)
            g->kid_start[g->e[i].base + 1]++;
    for (uint32_t i = 0; i < g->n; i++)
        g->kid_start[i + 1] += g->kid_start[i];
    for (uint32_t i = 0; i < g->n; i++) {
        const gent *e = &g->e[i];
        if (e->type == MCG_PACK_OFS)
            g->kids[g->kid_start[e->base] + fill[e->base]++] = i;
        else if (e->type == MCG_PACK_REF)
            g->refs[g->nrefs++] = (gref){e->ref, i};
    }
    free(fill);
    qsort(g->refs, g->nrefs, sizeof(gref), gref_cmp);
}

/* The first of the REF_DELTAs on id, in g->refs; g->nrefs when none. */
static uint32_t refs_first(const mcg_pack_graph *g, const git_oid *id)
{
    uint32_t lo = 0, hi = g->nrefs;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (git_oid_cmp(&g->refs[mid].base, id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->nrefs && git_oid_equal(&g->refs[lo].base, id) ? lo : g->nrefs;
}

/* A resolved object whose deltas are being built: one step of the depth-first walk. */
typedef struct frame {
    uint32_t entry; /* NONE: an object of the repository */
    uint32_t depth;
    uint8_t otype;
    git_oid id;
    unsigned char *data;
    size_t len;
    uint32_t ofs, ofs_end, ref; /* the next child in g->kids, in g->refs */
} frame;

static void frame_init(const mcg_pack_graph *g, frame *f, uint32_t entry, const git_oid *id)
{
    f->entry = entry;
    f->id = *id;
    f->ofs = entry == NONE ? 0 : g->kid_start[entry];
    f->ofs_end = entry == NONE ? 0 : g->kid_start[entry + 1];
    f->ref = refs_first(g, id);
}

/* f's next delta (advanced past it when take), NONE when all are built. */
static uint32_t next_kid(const mcg_pack_graph *g, frame *f, bool take)
{
    if (f->ofs < f->ofs_end)
        return g->kids[take ? f->ofs++ : f->ofs];
    if (f->ref < g->nrefs && git_oid_equal(&g->refs[f->ref].base, &f->id))
        return g->refs[take ? f->ref++ : f->ref].entry;
    return NONE;
}

/* Delta c applied to base (blen bytes): the result in *out, or NULL when it does not apply. */
static void apply_one(mcg_pack_graph *g, uint32_t c, const unsigned char *base, size_t blen,
                      unsigned char **out, size_t *outlen)
{
    gent *e = &g->e[c];
    uint64_t end;
    unsigned char *d = mcg_malloc(e->size + 1);
    bool ok = inflate_entry(g, e, d, &end, NULL);
    *out = ok ? mcg_pack_delta_apply(outlen, base, blen, d, e->size, g->lim->max_object) : NULL;
    free(d);
}

/* Build delta c on f: its result in *out (*outlen bytes), id recorded. */
static int build(mcg_pack_graph *g, const frame *f, uint32_t c, unsigned char **out, size_t *outlen,
                 mcg_err *err)
{
    gent *e = &g->e[c];
    apply_one(g, c, f->data, f->len, out, outlen);
    if (!*out)
        return refuse(g, err, "%s", e->off, "a delta that does not apply to its base");
    unsigned int olen = 0;
    if (!hash_start(g, f->otype, *outlen) || EVP_DigestUpdate(g->md, *out, *outlen) != 1 ||
        EVP_DigestFinal_ex(g->md, e->id.id, &olen) != 1 || olen != GIT_OID_RAWSZ) {
        free(*out);
        return mcg_err_set(err, MCG_EIO, "%s: SHA-1 unavailable", g->what);
    }
    e->otype = f->otype;
    e->depth = f->depth + 1;
    e->done = true;
    int rc = id_put(g, &e->id, c, e->off, err);
    if (rc)
        free(*out);
    return rc;
}

/* The content of the repository's object id, or NULL. */
static unsigned char *repo_object(mcg_pack_graph *g, const git_oid *id, size_t *len)
{
    git_odb_object *o = NULL;
    if (!g->have || git_odb_read(&o, g->have, id) != 0)
        return NULL;
    *len = git_odb_object_size(o);
    unsigned char *d = mcg_malloc(*len + 1);
    memcpy(d, git_odb_object_data(o), *len);
    git_odb_object_free(o);
    return d;
}

/*
 * f's content again, its data having been dropped to bound memory: rebuilt
 * from the whole object (or the repository's) its chain starts at. False
 * when that fails (it built before: the pack file changed under us).
 */
static bool rebuild(mcg_pack_graph *g, frame *f)
{
    uint32_t *chain = mcg_malloc(((size_t)f->depth + 1) * sizeof(*chain)), n = 0;
    const git_oid *ext = f->entry == NONE ? &f->id : NULL;
    for (uint32_t c = f->entry; c != NONE && n <= f->depth;) {
        chain[n++] = c;
        uint64_t v = 0;
        if (g->e[c].type == MCG_PACK_OFS)
            c = g->e[c].base;
        else if (g->e[c].type != MCG_PACK_REF)
            c = NONE;
        else if (mcg_oidmap_get(&g->ids, &g->e[c].ref, &v) && v != EXTERNAL)
            c = (uint32_t)v;
        else
            ext = &g->e[c].ref, c = NONE;
    }
    size_t len = 0;
    unsigned char *d = NULL;
    uint64_t end;
    if (ext) {
        d = repo_object(g, ext, &len);
    } else if (n) { /* the chain's whole object */
        const gent *w = &g->e[chain[--n]];
        d = mcg_malloc(w->size + 1);
        len = w->size;
        if (!inflate_entry(g, w, d, &end, NULL))
            free(d), d = NULL;
    }
    while (d && n) {
        unsigned char *next = NULL;
        size_t nlen = 0;
        apply_one(g, chain[--n], d, len, &next, &nlen);
        free(d);
        d = next, len = nlen;
    }
    free(chain);
    f->data = d;
    f->len = len;
    return d != NULL;
}

/* Drop the data of frames below the top (the oldest first) while more than hold is held. */
static void drop_held(frame *st, size_t sp, size_t *held, size_t hold)
{
    for (size_t i = 0; i + 1 < sp && *held > hold; i++)
        if (st[i].data) {
            *held -= st[i].len;
            free(st[i].data);
            st[i].data = NULL;
        }
}

/*
 * Every delta built on root (its data taken over), depth first. The bases
 * kept along the path are bounded: past lim->hold bytes (0: HOLD) the oldest are dropped
 * and rebuilt from their chain when their next delta is built.
 */
static int walk(mcg_pack_graph *g, frame root, mcg_err *err)
{
    size_t sp = 1, cap = 64, held = root.len;
    frame *st = mcg_malloc(cap * sizeof(*st));
    int rc = 0;
    char lim[32];
    st[0] = root;
    while (sp && !rc) {
        frame *f = &st[sp - 1];
        uint32_t c = next_kid(g, f, true);
        if (c == NONE) {
            held -= f->data ? f->len : 0;
            free(f->data);
            sp--;
            continue;
        }
        if (expired(g)) {
            rc = timed_out(g, err);
        } else if (f->depth + 1 > g->lim->max_depth) {
            snprintf(lim, sizeof(lim), "%u", g->lim->max_depth);
            rc = refuse(g, err, "a chain of deltas deeper than %s", g->e[c].off, lim);
        } else if (!f->data) {
            if (rebuild(g, f))
                held += f->len;
            else
                rc = refuse(g, err, "%s", g->e[c].off, "a base that cannot be built again");
        }
        frame k = {.depth = f->depth + 1, .otype = f->otype};
        if (!rc)
            rc = build(g, f, c, &k.data, &k.len, err);
        if (rc)
            break;
        frame_init(g, &k, c, &g->e[c].id);
        if (next_kid(g, f, false) == NONE) { /* the base is done with: drop it */
            held -= f->len;
            free(f->data);
            sp--;
        }
        if (sp == cap)
            st = mcg_realloc(st, (cap *= 2) * sizeof(*st));
        st[sp++] = k;
        held += k.len;
        drop_held(st, sp, &held, g->lim->hold ? g->lim->hold : HOLD);
    }
    while (sp)
        free(st[--sp].data);
    free(st);
    return rc;
}

/* Walk from every whole object of the pack that has deltas. */
static int walk_pack(mcg_pack_graph *g, mcg_err *err)
{
    for (uint32_t i = 0; i < g->n; i++) {
        gent *e = &g->e[i];
        if (e->type > MCG_PACK_TAG ||
            (g->kid_start[i] == g->kid_start[i + 1] && refs_first(g, &e->id) == g->nrefs))
            continue;
        frame f = {.otype = e->otype, .len = e->size};
        uint64_t end;
        frame_init(g, &f, i, &e->id);
        f.data = mcg_malloc(e->size + 1);
        if (!inflate_entry(g, e, f.data, &end, NULL)) {
            free(f.data);
            return refuse(g, err, "%s", e->off, "damaged data");
        }
        int rc = walk(g, f, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* Walk from every object of the repository a REF_DELTA still unbuilt names. */
static int walk_repo(mcg_pack_graph *g, mcg_err *err)
{
    static const uint8_t types[] = {[GIT_OBJECT_COMMIT] = MCG_PACK_COMMIT,
                                    [GIT_OBJECT_TREE] = MCG_PACK_TREE,
                                    [GIT_OBJECT_BLOB] = MCG_PACK_BLOB,
                                    [GIT_OBJECT_TAG] = MCG_PACK_TAG};
    for (uint32_t k = 0; g->have && k < g->nrefs; k++) {
        const gref *r = &g->refs[k];
        size_t len;
        git_object_t t;
        if (g->e[r->entry].done || mcg_oidmap_get(&g->ids, &r->base, NULL) ||
            git_odb_read_header(&len, &t, g->have, &r->base) != 0 || t < GIT_OBJECT_COMMIT ||
            t > GIT_OBJECT_TAG)
            continue;
        if (len > g->lim->max_object)
            return refuse(g, err, "a delta on an object of the repository over the limit%s",
                          g->e[r->entry].off, "");
        frame f = {.entry = NONE, .otype = types[t]};
        if (!(f.data = repo_object(g, &r->base, &f.len)))
            continue;
        frame_init(g, &f, NONE, &r->base);
        int rc = id_put(g, &r->base, EXTERNAL, g->e[r->entry].off, err);
        if (rc) {
            free(f.data);
            return rc;
        }
        if ((rc = walk(g, f, err)) != 0)
            return rc;
    }
    return 0;
}

/* A delta never built: where its chain starts, and what it lacks. */
static int unresolved(mcg_pack_graph *g, git_oid *missing, mcg_err *err)
{
    for (uint32_t i = 0; i < g->n; i++) {
        if (g->e[i].done)
            continue;
        uint32_t r = i;
        while (g->e[r].type == MCG_PACK_OFS)
            r = g->e[r].base;
        char sha[GIT_OID_HEXSZ + 1];
        git_oid_tostr(sha, sizeof(sha), &g->e[r].ref);
        if (missing)
            *missing = g->e[r].ref;
        return refuse_as(g, err, MCG_ENOTFOUND,
                         "a delta on %s, which neither the pack builds nor the repository has "
                         "(a delta on its own result, a cycle of deltas, or a thin pack's base "
                         "missing here)",
                         g->e[i].off, sha);
    }
    return 0;
}

int mcg_pack_graph_check(mcg_pack_graph *g, git_odb *have, const mcg_pack_limits *lim,
                         const char *what, git_oid *missing, mcg_err *err)
{
    if (g->err_no)
        return mcg_err_set_os(err, MCG_EIO, g->err_no, "%s: keeping a copy to check", what);
    g->lim = lim;
    g->what = what;
    g->have = have;
    void *m = g->len ? mmap(NULL, g->len, PROT_READ, MAP_PRIVATE, g->fd, 0) : MAP_FAILED;
    if (m == MAP_FAILED)
        return mcg_err_set(err, MCG_EINVAL, "refused before indexing: %s is empty or unreadable",
                           what);
    g->map = m;
    g->md = EVP_MD_CTX_new();
    int rc = 0;
    if (!g->md || inflateInit(&g->z) != Z_OK)
        rc = mcg_err_set(err, MCG_ENOMEM, "out of memory");
    else
        g->zinit = true;
    if (!rc)
        rc = parse_all(g, err);
    if (!rc) {
        index_kids(g);
        rc = walk_pack(g, err);
    }
    if (!rc)
        rc = walk_repo(g, err);
    if (!rc)
        rc = unresolved(g, missing, err);
    if (g->zinit)
        inflateEnd(&g->z);
    EVP_MD_CTX_free(g->md);
    munmap(m, g->len);
    g->map = NULL;
    return rc;
}
