/*
 * bundle.c — git bundles in and out, verified before anything moves.
 *
 * A bundle (git's Documentation/gitformat-bundle.txt) is a text header —
 * "# v2 git bundle" (or v3 with "@capability" lines), "-<oid> <comment>"
 * prerequisites, "<oid> <refname>" refs, a blank line — then a packfile.
 * libgit2 1.5 knows nothing of bundles, so the header is written and parsed
 * here.
 *
 * Create streams the pack to the file: the stored entries of a packed
 * repository copied as they are (pack reuse), or git_packbuilder's output
 * with its REF_DELTAs turned into OFS_DELTAs on the way (as git writes
 * them); either way about the size of git's bundle.
 *
 * Import is quarantined: the pack is streamed into git_indexer in a fresh
 * directory objects/mcgit-incoming-XXXXXX — and, on a second thread, through
 * precheck.c, which reads every commit, tree and tag as it goes by and
 * checks the commits' signatures meanwhile — and repository handles whose
 * object database is that pack first, then the repo's, see it. Against them
 * every check runs — refs present, fast-forward only, every object the refs
 * reach present, every new commit signed under the trust root (on two
 * threads), the new source tip renders. Only then are pack and index
 * renamed into objects/pack/ and the refs moved (locked, compared, then
 * swapped). Every other path removes the quarantine — and so does a signal,
 * or the next run after a kill -9 — so a refused bundle leaves the refs and
 * object files exactly as they were.
 */
#include "gitops/gitops_int.h"
#include "fsio/fsio.h"

#include <git2/sys/odb_backend.h>
#include <git2/sys/repository.h>
#include <openssl/evp.h>
#include <zlib.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUNDLE_MAX_LINE (64 * 1024) /* one header line */
#define BUNDLE_MAX_REFS 100000      /* refs + prerequisites */
#define BUNDLE_CHUNK (256 * 1024)   /* bytes per indexer append */

/* ------------------------------------------------------------ oid lists */

typedef struct oidv {
    git_oid *v;
    size_t n, cap;
} oidv;

static void oidv_push(oidv *a, const git_oid *o)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 256;
        a->v = mcg_realloc(a->v, a->cap * sizeof(*a->v));
    }
    a->v[a->n++] = *o;
}

static int oid_cmp(const void *a, const void *b)
{
    return git_oid_cmp(a, b);
}

/* Sort and drop duplicates, so oidv_has can bsearch. */
static void oidv_sort(oidv *a)
{
    if (!a->n)
        return;
    qsort(a->v, a->n, sizeof(*a->v), oid_cmp);
    size_t j = 1;
    for (size_t i = 1; i < a->n; i++)
        if (!git_oid_equal(&a->v[i], &a->v[j - 1]))
            a->v[j++] = a->v[i];
    a->n = j;
}

static bool oidv_has(const oidv *a, const git_oid *o)
{
    return a->n && bsearch(o, a->v, a->n, sizeof(*a->v), oid_cmp) != NULL;
}

static void oidv_free(oidv *a)
{
    free(a->v);
    memset(a, 0, sizeof(*a));
}

/* Object id maps and sets (oidmap.c). */
typedef mcg_oidmap oidmap;
typedef oidmap oidset;

static bool oidmap_put(oidmap *m, const git_oid *o, uint64_t v)
{
    return mcg_oidmap_put(m, o, v);
}

static bool oidmap_get(const oidmap *m, const git_oid *o, uint64_t *v)
{
    return mcg_oidmap_get(m, o, v);
}

static void oidmap_free(oidmap *m)
{
    mcg_oidmap_free(m);
}

static void oidmap_reserve(oidmap *m, size_t n)
{
    mcg_oidmap_reserve(m, n);
}

static void oidset_reserve(oidset *s, size_t n)
{
    oidmap_reserve(s, n);
}

/* Add o; true when it was not there yet. */
static bool oidset_add(oidset *s, const git_oid *o)
{
    return oidmap_put(s, o, 0);
}

static bool oidset_has(const oidset *s, const git_oid *o)
{
    return oidmap_get(s, o, NULL);
}

static void oidset_free(oidset *s)
{
    oidmap_free(s);
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Exactly 40 hex digits at s (what follows is the caller's to check). */
static bool parse_oid(git_oid *out, const char *s)
{
    for (int i = 0; i < MCG_SHA_HEX; i++)
        if (!s[i] || !strchr("0123456789abcdefABCDEF", s[i]))
            return false;
    return git_oid_fromstrn(out, s, MCG_SHA_HEX) == 0;
}

/*
 * The tree and parents of a raw commit: "tree <hex>\n", then "parent
 * <hex>\n" lines, as git writes a commit's first header lines. Parents are
 * appended to *parents (may be NULL). False when malformed.
 */
bool mcg_git_commit_links(git_oid *tree, void (*parent)(const git_oid *, void *), void *ctx,
                          const char *p, size_t len)
{
    const char *end = p + len;
    if (len < 6 + MCG_SHA_HEX || memcmp(p, "tree ", 5) != 0 || p[5 + MCG_SHA_HEX] != '\n' ||
        !parse_oid(tree, p + 5))
        return false;
    p += 6 + MCG_SHA_HEX;
    while (end - p >= 8 + MCG_SHA_HEX && !memcmp(p, "parent ", 7)) {
        git_oid id;
        if (p[7 + MCG_SHA_HEX] != '\n' || !parse_oid(&id, p + 7))
            return false;
        if (parent)
            parent(&id, ctx);
        p += 8 + MCG_SHA_HEX;
    }
    return true;
}

static void push_parent(const git_oid *id, void *parents)
{
    oidv_push(parents, id);
}

static bool raw_commit_ids(git_oid *tree, oidv *parents, const char *p, size_t len)
{
    return mcg_git_commit_links(tree, parents ? push_parent : NULL, parents, p, len);
}

bool mcg_git_tag_target(git_oid *out, const char *p, size_t len)
{
    return len >= 8 + MCG_SHA_HEX && memcmp(p, "object ", 7) == 0 && p[7 + MCG_SHA_HEX] == '\n' &&
           parse_oid(out, p + 7);
}

bool mcg_git_tree_entry_next(mcg_tree_entry *e, const unsigned char **pp, const unsigned char *end)
{
    const unsigned char *p = *pp, *q = p;
    e->mode = 0;
    while (q < end && *q >= '0' && *q <= '7' && q - p < 7)
        e->mode = e->mode * 8 + (unsigned)(*q++ - '0');
    if (q == p || q >= end || *q != ' ')
        return false;
    const unsigned char *nul = memchr(q + 1, '\0', (size_t)(end - q - 1));
    if (!nul || nul == q + 1 || end - nul - 1 < GIT_OID_RAWSZ)
        return false;
    e->name = q + 1;
    e->namelen = (size_t)(nul - e->name);
    git_oid_fromraw(&e->id, nul + 1);
    *pp = nul + 1 + GIT_OID_RAWSZ;
    return true;
}

/* ------------------------------------------------------------ progress */

/* A one-line bar on stderr, redrawn at most every 1% (terminals only). */
typedef struct progress {
    bool on;
    const char *what;
    int last; /* last percentage drawn, -1 none */
} progress;

static void progress_draw(progress *p, const char *what, uint64_t cur, uint64_t total)
{
    if (!p->on || !total)
        return;
    int pct = (int)(cur * 100 / total);
    if (what != p->what) {
        if (p->what && p->last >= 0)
            fputc('\n', stderr);
        p->what = what;
        p->last = -1;
    }
    if (pct == p->last)
        return;
    p->last = pct;
    char bar[31];
    int fill = pct * 30 / 100;
    for (int i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    fprintf(stderr, "\r%-20s [%s] %3d%% (%llu/%llu)", what, bar, pct, (unsigned long long)cur,
            (unsigned long long)total);
    fflush(stderr);
}

static void progress_end(progress *p)
{
    if (p->on && p->what && p->last >= 0)
        fputc('\n', stderr);
    p->what = NULL;
    p->last = -1;
}

/* ============================================================ cleanup on signals */

/*
 * The quarantine is objects/mcgit-incoming-XXXXXX/pack/, holding the pack
 * being indexed and its index. Three things remove it:
 *
 *   - the import or verify that made it, on every path out;
 *   - a signal: mcg_bundle_signal_cleanup() (async-signal-safe), which the
 *     command line calls from its SIGINT/SIGTERM/SIGHUP handlers;
 *   - the next run, for one left by a process that died without running
 *     either (kill -9, a crash, power loss). Every live run holds a shared
 *     flock() on the objects directory from before it creates its
 *     quarantine until after it has removed it; a run that can take the
 *     lock exclusively knows that no other run is alive, so every
 *     mcgit-incoming-* directory it finds is stale and is removed. The lock
 *     dies with its process, so a kill -9 never leaves it held.
 *
 * The prefix is mcgit's own: git's receive-pack quarantines (incoming-*)
 * are never touched.
 */
#define QUARANTINE_PREFIX "mcgit-incoming-"

/*
 * What a signal handler must remove: the live quarantine, or the temp file a
 * bundle is being written to. Written only by the main thread, with `armed`
 * cleared while the paths change, so a handler sees complete strings.
 */
static struct {
    volatile sig_atomic_t armed;
    char dir[PATH_MAX];  /* the quarantine, "" none */
    char pack[PATH_MAX]; /* dir/pack */
    char file[PATH_MAX]; /* a bundle's temp file, "" none */
} pending;

/*
 * Remove a quarantine: every file in its pack/ directory, pack/, itself.
 * Only what an import makes: anything else inside (a directory someone put
 * there) makes the rmdir fail and the directory stay. Async-signal-safe:
 * open, getdents64, unlinkat, rmdir, no allocation.
 */
static void quarantine_remove(const char *dir, const char *packdir)
{
    int fd = open(packdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        /* Repeat until a pass removes nothing: removal during a scan may skip names. */
        bool removed = true;
        for (int pass = 0; removed && pass < 16; pass++) {
            _Alignas(8) char buf[4096];
            ssize_t n;
            removed = false;
            lseek(fd, 0, SEEK_SET);
            while ((n = getdents64(fd, buf, sizeof(buf))) > 0) {
                for (ssize_t off = 0; off < n;) {
                    const struct dirent64 *e = (const struct dirent64 *)(buf + off);
                    off += e->d_reclen;
                    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
                        unlinkat(fd, e->d_name, 0) == 0)
                        removed = true;
                }
            }
        }
        close(fd);
    }
    rmdir(packdir);
    rmdir(dir);
}

void mcg_bundle_signal_cleanup(void)
{
    if (!pending.armed)
        return;
    if (pending.file[0])
        unlink(pending.file);
    if (pending.dir[0])
        quarantine_remove(pending.dir, pending.pack);
}

/* Set what a signal removes (NULL: nothing). Main thread only. */
static void pending_set(const char *dir, const char *file)
{
    pending.armed = 0;
    atomic_signal_fence(memory_order_seq_cst); /* disarmed before the paths change */
    pending.dir[0] = pending.pack[0] = pending.file[0] = '\0';
    if (dir && strlen(dir) + sizeof("/pack") <= sizeof(pending.dir)) {
        snprintf(pending.dir, sizeof(pending.dir), "%s", dir);
        snprintf(pending.pack, sizeof(pending.pack), "%s/pack", dir);
    }
    if (file && strlen(file) < sizeof(pending.file))
        snprintf(pending.file, sizeof(pending.file), "%s", file);
    atomic_signal_fence(memory_order_seq_cst); /* the paths are complete before arming */
    pending.armed = pending.dir[0] || pending.file[0];
}

/* ============================================================ create */

typedef struct bref {
    char *name;
    git_oid target; /* what the ref line names (a tag object for annotated tags) */
    git_oid commit; /* target peeled to a commit */
} bref;

typedef struct breflist {
    bref *v;
    size_t n, cap;
} breflist;

static void breflist_free(breflist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static bool breflist_has(const breflist *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, name))
            return true;
    return false;
}

/* Add ref `name` pointing at target; only refs that peel to a commit. */
static int breflist_add(breflist *l, git_repository *repo, const char *name, const git_oid *target,
                        mcg_err *err)
{
    git_object *obj = NULL, *peeled = NULL;
    int rc = 0;
    if (breflist_has(l, name))
        return 0;
    if (git_object_lookup(&obj, repo, target, GIT_OBJECT_ANY) != 0 ||
        git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT) != 0) {
        rc = mcg_err_set(err, MCG_EINVAL, "%s does not point to a commit", name);
        goto out;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = mcg_realloc(l->v, l->cap * sizeof(*l->v));
    }
    bref *b = &l->v[l->n++];
    b->name = mcg_strdup(name);
    b->target = *target;
    b->commit = *git_object_id(peeled);
out:
    git_object_free(peeled);
    git_object_free(obj);
    return rc;
}

static int bref_cmp(const void *a, const void *b)
{
    const bref *x = a, *y = b;
    /* HEAD first (as git writes it last-or-first does not matter to readers). */
    bool hx = !strcmp(x->name, "HEAD"), hy = !strcmp(y->name, "HEAD");
    if (hx != hy)
        return hx ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The default selection: HEAD (= the source branch tip), the source branch, every tag. */
static int default_refs(breflist *l, mcg_repo *r, mcg_err *err)
{
    char *branch = mcg_sprintf("refs/heads/%s", r->source_branch);
    git_oid oid;
    git_reference_iterator *it = NULL;
    git_reference *ref = NULL;
    int rc = 0;
    if (git_reference_name_to_id(&oid, r->git, branch) != 0) {
        rc = mcg_err_set(err, MCG_ENOTFOUND, "no branch '%s' to bundle", r->source_branch);
        goto out;
    }
    if ((rc = breflist_add(l, r->git, "HEAD", &oid, err)) != 0 ||
        (rc = breflist_add(l, r->git, branch, &oid, err)) != 0)
        goto out;
    if (git_reference_iterator_glob_new(&it, r->git, "refs/tags/*") != 0) {
        rc = mcg_git_err(err, "refs/tags");
        goto out;
    }
    while (git_reference_next(&ref, it) == 0) {
        git_reference *res = NULL;
        mcg_err ignore = {0};
        /* Tags that do not lead to a commit are not part of a config history. */
        if (git_reference_resolve(&res, ref) == 0 && git_reference_target(res))
            breflist_add(l, r->git, git_reference_name(ref), git_reference_target(res), &ignore);
        git_reference_free(res);
        git_reference_free(ref);
        ref = NULL;
    }
out:
    git_reference_iterator_free(it);
    free(branch);
    return rc;
}

static int named_refs(breflist *l, mcg_repo *r, const char *const *names, size_t n, mcg_err *err)
{
    for (size_t i = 0; i < n; i++) {
        git_reference *ref = NULL, *res = NULL;
        int rc = 0;
        if (git_reference_dwim(&ref, r->git, names[i]) != 0)
            return mcg_err_set(err, MCG_ENOTFOUND, "no ref '%s'", names[i]);
        if (git_reference_resolve(&res, ref) != 0 || !git_reference_target(res))
            rc = mcg_git_err(err, names[i]);
        else
            rc = breflist_add(l, r->git, git_reference_name(ref), git_reference_target(res), err);
        git_reference_free(res);
        git_reference_free(ref);
        if (rc)
            return rc;
    }
    return 0;
}

static int walk_new(git_revwalk **out, mcg_repo *r, const breflist *refs, const git_oid *since,
                    mcg_err *err)
{
    git_revwalk *w = NULL;
    *out = NULL;
    if (git_revwalk_new(&w, r->git) != 0 || git_revwalk_sorting(w, GIT_SORT_TIME) != 0)
        goto fail;
    for (size_t i = 0; i < refs->n; i++)
        if (git_revwalk_push(w, &refs->v[i].commit) != 0)
            goto fail;
    if (since && git_revwalk_hide(w, since) != 0)
        goto fail;
    *out = w;
    return 0;
fail:
    git_revwalk_free(w);
    return mcg_git_err(err, "revwalk");
}

/* ------------------------------------------------------- pack writer: REF_DELTA -> OFS_DELTA */

/*
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
 * OFS_CACHE_BYTES, are kept for their deltas to be applied to. A delta whose
 * base has left the cache keeps its REF_DELTA (valid in a pack; 18 bytes
 * more), and so do deltas built on it, since its id stays unknown. Per
 * object ~40 bytes (id and offset) are kept.
 */
#define OFS_CACHE_BYTES (16u * 1024 * 1024) /* contents of recent objects */
#define OFS_CACHE_OBJECTS 8192
#define OFS_MAX_OBJECT (8u * 1024 * 1024) /* larger objects are passed on, not read */
#define OFS_OUT_BUF (256 * 1024)

enum { OBJ_COMMIT = 1, OBJ_TREE = 2, OBJ_BLOB = 3, OBJ_TAG = 4, OBJ_OFS = 6, OBJ_REF = 7 };

typedef struct pw_cached {
    uint64_t off; /* where the object starts in the output */
    int type;
    unsigned char *data;
    size_t len;
} pw_cached;

typedef struct pack_writer {
    int fd;
    bool embedded;    /* the stream's objects go into a pack begun by the caller */
    int err_no;       /* write(2) failed */
    const char *fail; /* the stream could not be parsed (a bug, not bad input) */
    EVP_MD_CTX *sha;  /* of everything written but the trailer */
    unsigned char out[OFS_OUT_BUF];
    size_t nout;
    uint64_t written; /* bytes emitted */

    /* parser state */
    enum { OS_PACK, OS_HEAD, OS_REF, OS_OFS, OS_DATA, OS_TRAILER, OS_DONE } st;
    unsigned char hold[64]; /* pack header, object header, base id or offset */
    size_t nhold, hlen;     /* bytes held; of them, the object header */
    uint32_t left;          /* objects still to come */
    uint64_t in;            /* bytes consumed */
    uint64_t in_start;      /* where the current object starts, in the input */
    uint64_t out_start;     /* ... and in the output */
    int type;               /* of the current object, as written by libgit2 */
    uint64_t size;          /* inflated size from its header */
    bool has_base;          /* the base's output offset is known */
    uint64_t base_out;
    z_stream z;
    bool z_init;
    unsigned char *data; /* inflated data of the current object, or NULL */
    size_t ndata;
    unsigned char scratch[16384];

    oidmap ids;         /* object id -> output offset, for every object whose id is known */
    uint64_t *in_offs;  /* input offset of each object, in order ... */
    uint64_t *out_offs; /* ... and its output offset (for OFS_DELTA input) */
    size_t noffs, capoffs;
    pw_cached cache[OFS_CACHE_OBJECTS]; /* a ring, ordered by offset */
    size_t chead, ccount, cbytes;
    size_t refs, ofs; /* deltas written as REF_DELTA, as OFS_DELTA */
} pack_writer;

static int pw_flush(pack_writer *w)
{
    if (w->nout && mcg_write_all(w->fd, w->out, w->nout) != 0) {
        w->err_no = errno;
        return -1;
    }
    w->nout = 0;
    return 0;
}

/* Emit bytes: into the SHA-1 (unless the trailer) and the output buffer. */
static int pw_emit(pack_writer *w, const void *p, size_t n, bool hash)
{
    if (hash)
        EVP_DigestUpdate(w->sha, p, n);
    w->written += n;
    while (n) {
        size_t k = OFS_OUT_BUF - w->nout < n ? OFS_OUT_BUF - w->nout : n;
        memcpy(w->out + w->nout, p, k);
        w->nout += k;
        p = (const unsigned char *)p + k;
        n -= k;
        if (w->nout == OFS_OUT_BUF && pw_flush(w) != 0)
            return -1;
    }
    return 0;
}

static int pw_bad(pack_writer *w, const char *why)
{
    w->fail = why;
    return -1;
}

static const pw_cached *pw_cache_find(const pack_writer *w, uint64_t off)
{
    size_t lo = 0, hi = w->ccount;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const pw_cached *c = &w->cache[(w->chead + mid) % OFS_CACHE_OBJECTS];
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
static void pw_cache_add(pack_writer *w, uint64_t off, int type, unsigned char *data, size_t len)
{
    if (len > OFS_CACHE_BYTES / 4) {
        free(data);
        return;
    }
    while (w->ccount && (w->ccount == OFS_CACHE_OBJECTS || w->cbytes + len > OFS_CACHE_BYTES)) {
        pw_cached *old = &w->cache[w->chead];
        w->cbytes -= old->len;
        free(old->data);
        w->chead = (w->chead + 1) % OFS_CACHE_OBJECTS;
        w->ccount--;
    }
    pw_cached *c = &w->cache[(w->chead + w->ccount) % OFS_CACHE_OBJECTS];
    c->off = off;
    c->type = type;
    c->data = data;
    c->len = len;
    w->ccount++;
    w->cbytes += len;
}

/* A size varint of a delta (7 bits per byte, little end first). */
static bool delta_varint(uint64_t *out, const unsigned char **p, const unsigned char *end)
{
    uint64_t v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        unsigned char c = *(*p)++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

unsigned char *mcg_git_delta_apply(size_t *outlen, const unsigned char *base, size_t blen,
                                   const unsigned char *d, size_t dlen, size_t max)
{
    const unsigned char *end = d + dlen;
    uint64_t bsize, rsize;
    if (!delta_varint(&bsize, &d, end) || bsize != blen || !delta_varint(&rsize, &d, end) ||
        rsize > max)
        return NULL;
    unsigned char *out = mcg_malloc(rsize ? rsize : 1);
    size_t pos = 0;
    while (d < end) {
        unsigned cmd = *d++;
        if (cmd & 0x80) {
            uint64_t off = 0, n = 0;
            for (int i = 0; i < 4; i++)
                if (cmd & (1u << i)) {
                    if (d == end)
                        goto bad;
                    off |= (uint64_t)*d++ << (8 * i);
                }
            for (int i = 0; i < 3; i++)
                if (cmd & (0x10u << i)) {
                    if (d == end)
                        goto bad;
                    n |= (uint64_t)*d++ << (8 * i);
                }
            if (!n)
                n = 0x10000;
            if (off > blen || n > blen - off || n > rsize - pos)
                goto bad;
            memcpy(out + pos, base + off, n);
            pos += n;
        } else if (cmd) {
            if (cmd > (size_t)(end - d) || cmd > rsize - pos)
                goto bad;
            memcpy(out + pos, d, cmd);
            d += cmd;
            pos += cmd;
        } else {
            goto bad;
        }
    }
    if (pos != rsize)
        goto bad;
    *outlen = pos;
    return out;
bad:
    free(out);
    return NULL;
}

static const git_object_t obj_types[] = {
    [OBJ_COMMIT] = GIT_OBJECT_COMMIT,
    [OBJ_TREE] = GIT_OBJECT_TREE,
    [OBJ_BLOB] = GIT_OBJECT_BLOB,
    [OBJ_TAG] = GIT_OBJECT_TAG,
};

/* The current object has ended: learn its id if its content can be had. */
static void pw_object_done(pack_writer *w)
{
    unsigned char *content = NULL;
    size_t len = 0;
    int type = w->type;
    if (!w->data) {
        /* too big to read: its id stays unknown */
    } else if (type != OBJ_OFS && type != OBJ_REF) {
        content = w->data;
        len = w->ndata;
        w->data = NULL;
    } else if (w->has_base) {
        const pw_cached *b = pw_cache_find(w, w->base_out);
        if (b) {
            type = b->type;
            content = mcg_git_delta_apply(&len, b->data, b->len, w->data, w->ndata, OFS_MAX_OBJECT);
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
    oidmap_put(&w->ids, &id, w->out_start);
    pw_cache_add(w, w->out_start, type, content, len);
}

/* Write the current object's header: as given, or REF_DELTA -> OFS_DELTA. */
static int pw_write_header(pack_writer *w)
{
    unsigned char h[32];
    size_t n = 0;
    int type = w->type;
    if ((type == OBJ_REF || type == OBJ_OFS) && w->has_base)
        type = OBJ_OFS;
    uint64_t size = w->size;
    unsigned char c = (unsigned char)(type << 4 | (size & 15));
    size >>= 4;
    while (size) {
        h[n++] = c | 0x80;
        c = size & 0x7f;
        size >>= 7;
    }
    h[n++] = c;
    if (type == OBJ_OFS) {
        /* git's offset encoding: big end first, each continuation minus one. */
        unsigned char o[16];
        size_t pos = sizeof(o) - 1;
        uint64_t ofs = w->out_start - w->base_out;
        o[pos] = ofs & 127;
        while (ofs >>= 7)
            o[--pos] = (unsigned char)(128 | (--ofs & 127));
        memcpy(h + n, o + pos, sizeof(o) - pos);
        n += sizeof(o) - pos;
        w->ofs++;
    } else if (type == OBJ_REF) {
        memcpy(h + n, w->hold + w->hlen, GIT_OID_RAWSZ);
        n += GIT_OID_RAWSZ;
        w->refs++;
    }
    return pw_emit(w, h, n, true);
}

/* The object header in hold is complete: start the object's data. */
static int pw_start_data(pack_writer *w)
{
    if (w->noffs == w->capoffs) {
        w->capoffs = w->capoffs ? w->capoffs * 2 : 1024;
        w->in_offs = mcg_realloc(w->in_offs, w->capoffs * sizeof(*w->in_offs));
        w->out_offs = mcg_realloc(w->out_offs, w->capoffs * sizeof(*w->out_offs));
    }
    w->in_offs[w->noffs] = w->in_start;
    w->out_offs[w->noffs++] = w->out_start;
    if (pw_write_header(w) != 0)
        return -1;
    if (!w->z_init) {
        if (inflateInit(&w->z) != Z_OK)
            return pw_bad(w, "zlib");
        w->z_init = true;
    } else if (inflateReset(&w->z) != Z_OK) {
        return pw_bad(w, "zlib");
    }
    w->data = w->size <= OFS_MAX_OBJECT ? mcg_malloc(w->size ? w->size : 1) : NULL;
    w->ndata = 0;
    w->st = OS_DATA;
    return 0;
}

/*
 * Feed compressed data of the current object; *used = the bytes that belong
 * to it (the rest starts the next object). Its inflated bytes go to
 * w->data when it is small enough to be read, else nowhere.
 */
static int pw_data(pack_writer *w, const unsigned char *p, size_t n, size_t *used)
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
    if (pw_emit(w, p, *used, true) != 0)
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
static bool pw_in_to_out(const pack_writer *w, uint64_t in, uint64_t *out)
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
static int pw_finish(pack_writer *w)
{
    unsigned char sum[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(w->sha, sum, &len) != 1 || len != GIT_OID_RAWSZ)
        return pw_bad(w, "sha1");
    return pw_emit(w, sum, len, false) != 0 || pw_flush(w) != 0 ? -1 : 0;
}

/* git_packbuilder_foreach's callback: parse, rewrite, write. */
static int pw_write(pack_writer *w, const unsigned char *p, size_t n)
{
    while (n) {
        size_t used = 1;
        switch (w->st) {
        case OS_PACK:
            w->hold[w->nhold++] = *p;
            if (w->nhold == 12) {
                if (memcmp(w->hold, "PACK\0\0\0\2", 8) != 0)
                    return pw_bad(w, "not a version 2 pack");
                w->left = be32(w->hold + 8);
                if (!w->embedded && pw_emit(w, w->hold, 12, true) != 0)
                    return -1;
                w->st = w->left ? OS_HEAD : OS_TRAILER;
                w->nhold = 0;
            }
            break;
        case OS_HEAD:
            if (w->nhold == 0) {
                w->in_start = w->in;
                w->out_start = w->written;
            }
            if (w->nhold == 10)
                return pw_bad(w, "an object header is too long");
            w->hold[w->nhold++] = *p;
            if (!(*p & 0x80)) {
                w->type = (w->hold[0] >> 4) & 7;
                w->size = w->hold[0] & 15;
                for (size_t i = 1; i < w->nhold; i++)
                    w->size |= (uint64_t)(w->hold[i] & 0x7f) << (4 + 7 * (i - 1));
                w->has_base = false;
                w->hlen = w->nhold;
                if (w->type == OBJ_REF) {
                    w->st = OS_REF;
                } else if (w->type == OBJ_OFS) {
                    w->st = OS_OFS;
                    w->nhold = 0;
                } else if (w->type >= OBJ_COMMIT && w->type <= OBJ_TAG) {
                    if (pw_start_data(w) != 0)
                        return -1;
                } else {
                    return pw_bad(w, "an object has an unknown type");
                }
            }
            break;
        case OS_REF:
            /* The base's id: the GIT_OID_RAWSZ bytes after the header. */
            w->hold[w->nhold++] = *p;
            if (w->nhold == w->hlen + GIT_OID_RAWSZ) {
                git_oid base;
                git_oid_fromraw(&base, w->hold + w->hlen);
                w->has_base = oidmap_get(&w->ids, &base, &w->base_out);
                if (pw_start_data(w) != 0)
                    return -1;
            }
            break;
        case OS_OFS:
            if (w->nhold == 10)
                return pw_bad(w, "a delta offset is too long");
            w->hold[w->nhold++] = *p;
            if (!(*p & 0x80)) {
                uint64_t ofs = w->hold[0] & 127;
                for (size_t i = 1; i < w->nhold; i++)
                    ofs = ((ofs + 1) << 7) | (w->hold[i] & 127);
                if (ofs == 0 || ofs > w->in_start ||
                    !pw_in_to_out(w, w->in_start - ofs, &w->base_out))
                    return pw_bad(w, "a delta's base is not in the pack");
                w->has_base = true;
                if (pw_start_data(w) != 0)
                    return -1;
            }
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
                if (!w->embedded && pw_finish(w) != 0)
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

static int pw_init(pack_writer *w, int fd)
{
    memset(w, 0, sizeof(*w));
    w->fd = fd;
    w->sha = EVP_MD_CTX_new();
    if (!w->sha || EVP_DigestInit_ex(w->sha, EVP_sha1(), NULL) != 1)
        return -1;
    return 0;
}

static void pw_free(pack_writer *w)
{
    if (w->z_init)
        inflateEnd(&w->z);
    EVP_MD_CTX_free(w->sha);
    free(w->data);
    for (size_t i = 0; i < w->ccount; i++)
        free(w->cache[(w->chead + i) % OFS_CACHE_OBJECTS].data);
    free(w->in_offs);
    free(w->out_offs);
    oidmap_free(&w->ids);
}

/* ------------------------------------------------------------ pack reuse */

/*
 * libgit2 1.5's packbuilder computes every delta again, even for objects a
 * `git gc` has already stored as deltas: on a packed repository that search
 * is nearly all of the time `bundle create` takes. So when (nearly) every
 * object to bundle is in the repository's own packs, their stored entries
 * are copied into the bundle instead, as git does: the compressed bytes
 * unchanged (checked against the CRC-32 the pack index records), a delta's
 * header rewritten to point at its base's new position (OFS_DELTA). A delta
 * whose base is not in the bundle (an incremental bundle's prerequisite
 * side, or an unreachable object) is written whole. Objects not in a pack
 * (loose, or in an alternate) go through the packbuilder as usual, and its
 * stream is spliced in.
 *
 * Packs are read through read-only maps of their .idx (version 2) and .pack
 * files; every offset and length in them is checked before it is used.
 */
#define REUSE_MAX_LOOSE_PERCENT 10 /* more loose objects than this: packbuilder only */

typedef struct rpack {
    const unsigned char *idx, *pack; /* mapped */
    size_t idxlen, packlen;
    uint32_t n; /* objects */
    const unsigned char *oids, *crcs, *offs, *large;
    size_t nlarge;
    uint64_t *sorted; /* entry offsets, ascending */
    uint32_t *order;  /* index position of each sorted offset */
} rpack;

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
    uint32_t o = be32(p->offs + 4 * (size_t)i);
    if (!(o & 0x80000000u))
        return o;
    o &= 0x7fffffffu;
    if (o >= p->nlarge)
        return UINT64_MAX;
    const unsigned char *l = p->large + 8 * (size_t)o;
    return (uint64_t)be32(l) << 32 | be32(l + 4);
}

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
    if (p->idxlen < 8 + 1024 + 40 || memcmp(x, "\377tOc", 4) || be32(x + 4) != 2)
        goto bad;
    p->n = be32(x + 8 + 255 * 4);
    size_t need = 8 + 1024 + (size_t)p->n * 28 + 40;
    if (p->idxlen < need || (p->idxlen - need) % 8)
        goto bad;
    p->oids = x + 8 + 1024;
    p->crcs = p->oids + (size_t)p->n * 20;
    p->offs = p->crcs + (size_t)p->n * 4;
    p->large = p->offs + (size_t)p->n * 4;
    p->nlarge = (p->idxlen - need) / 8;
    if (p->packlen < 32 || memcmp(p->pack, "PACK", 4) ||
        (be32(p->pack + 4) != 2 && be32(p->pack + 4) != 3) || be32(p->pack + 8) != p->n ||
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
    uint32_t lo = id->id[0] ? be32(fan + 4 * (id->id[0] - 1)) : 0, hi = be32(fan + 4 * id->id[0]);
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

/* One object to bundle: found in packs[pack] at off, or loose (pack -1). */
typedef struct robj {
    git_oid id;
    int pack;
    uint32_t pos; /* index position in its pack */
    uint64_t off;
} robj;

typedef struct rset {
    robj *v;
    size_t n, cap;
    oidset seen; /* every id collected, and the prerequisites' objects */
} rset;

static void rset_add(rset *s, const git_oid *id)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->v = mcg_realloc(s->v, s->cap * sizeof(*s->v));
    }
    memset(&s->v[s->n], 0, sizeof(s->v[s->n]));
    s->v[s->n].id = *id;
    s->v[s->n].pack = -1;
    s->n++;
}

/*
 * Every tree and blob below tree `root` that is not in s->seen: into seen,
 * and (unless only marking what the prerequisites have) into s.
 */
static int rset_tree(rset *s, git_odb *odb, const git_oid *root, bool add, mcg_err *err)
{
    oidv stack = {0};
    int rc = 0;
    if (!oidset_add(&s->seen, root))
        return 0;
    if (add)
        rset_add(s, root);
    oidv_push(&stack, root);
    while (stack.n && !rc) {
        git_oid id = stack.v[--stack.n];
        git_odb_object *obj = NULL;
        if (git_odb_read(&obj, odb, &id) != 0 || git_odb_object_type(obj) != GIT_OBJECT_TREE) {
            git_odb_object_free(obj);
            rc = mcg_git_err(err, "tree");
            break;
        }
        const unsigned char *p = git_odb_object_data(obj), *end = p + git_odb_object_size(obj);
        while (p < end) {
            unsigned mode = 0;
            while (p < end && *p >= '0' && *p <= '7')
                mode = mode * 8 + (unsigned)(*p++ - '0');
            const unsigned char *nul = p < end ? memchr(p, '\0', (size_t)(end - p)) : NULL;
            if (!nul || end - nul - 1 < GIT_OID_RAWSZ) {
                rc = mcg_err_set(err, MCG_EIO, "a tree of the repo is malformed");
                break;
            }
            git_oid e;
            git_oid_fromraw(&e, nul + 1);
            p = nul + 1 + GIT_OID_RAWSZ;
            if ((mode & 0170000) == 0160000 || !oidset_add(&s->seen, &e))
                continue; /* a submodule, or already had */
            if (add)
                rset_add(s, &e);
            if ((mode & 0170000) == 0040000)
                oidv_push(&stack, &e);
        }
        git_odb_object_free(obj);
    }
    oidv_free(&stack);
    return rc;
}

/*
 * The objects the bundle holds — what insert_walk + insert_tags give the
 * packbuilder: the new commits, their trees and blobs minus those the
 * prerequisites' trees have, and the tag objects the refs name.
 */
static int rset_collect(rset *s, mcg_repo *r, const breflist *refs, const git_oid *since,
                        const oidv *prereqs, mcg_err *err)
{
    git_odb *odb = NULL;
    git_revwalk *walk = NULL;
    git_oid id;
    int rc = 0;
    if (git_repository_odb(&odb, r->git) != 0)
        return mcg_git_err(err, "odb");
    for (size_t i = 0; i < prereqs->n && !rc; i++) {
        git_commit *c = NULL;
        if (git_commit_lookup(&c, r->git, &prereqs->v[i]) != 0)
            rc = mcg_git_err(err, "commit");
        else
            rc = rset_tree(s, odb, git_commit_tree_id(c), false, err);
        git_commit_free(c);
    }
    /*
     * The commits: all those the refs reach for a full bundle (a plain walk
     * over raw commits, each read once), those not reachable from since
     * otherwise (libgit2's revwalk, which knows how to hide).
     */
    oidv todo = {0};
    if (since) {
        if ((rc = walk_new(&walk, r, refs, since, err)) != 0)
            goto out;
    } else {
        for (size_t i = 0; i < refs->n; i++)
            oidv_push(&todo, &refs->v[i].commit);
    }
    for (;;) {
        if (since) {
            int wr = git_revwalk_next(&id, walk);
            if (wr == GIT_ITEROVER)
                break;
            if (wr != 0) {
                rc = mcg_git_err(err, "revwalk");
                break;
            }
        } else if (todo.n) {
            id = todo.v[--todo.n];
        } else {
            break;
        }
        git_odb_object *obj = NULL;
        git_oid tree;
        if (!oidset_add(&s->seen, &id))
            continue;
        rset_add(s, &id);
        if (git_odb_read(&obj, odb, &id) != 0) {
            rc = mcg_git_err(err, "commit");
            break;
        }
        if (!raw_commit_ids(&tree, since ? NULL : &todo, git_odb_object_data(obj),
                            git_odb_object_size(obj)))
            rc = mcg_err_set(err, MCG_EIO, "a commit of the repo is malformed");
        git_odb_object_free(obj);
        if (rc || (rc = rset_tree(s, odb, &tree, true, err)) != 0)
            break;
    }
    oidv_free(&todo);
    if (rc)
        goto out;
    for (size_t i = 0; i < refs->n && !rc; i++) {
        git_oid t = refs->v[i].target;
        for (int depth = 0; depth < 16; depth++) {
            git_tag *tag = NULL;
            if (git_object_lookup((git_object **)&tag, r->git, &t, GIT_OBJECT_TAG) != 0)
                break;
            if (oidset_add(&s->seen, &t))
                rset_add(s, &t);
            t = *git_tag_target_id(tag);
            git_tag_free(tag);
        }
    }
out:
    git_revwalk_free(walk);
    git_odb_free(odb);
    return rc;
}

/* The repo's own packs (objects/pack/pack-*.idx with their .pack), mapped. */
static void rpacks_open(rpack **out, size_t *n, mcg_repo *r)
{
    git_buf objdir = GIT_BUF_INIT;
    *out = NULL;
    *n = 0;
    if (git_repository_item_path(&objdir, r->git, GIT_REPOSITORY_ITEM_OBJECTS) != 0)
        return;
    char *dir = mcg_sprintf("%spack", objdir.ptr);
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t cap = 0;
    while (d && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 9 || strncmp(e->d_name, "pack-", 5) || strcmp(e->d_name + len - 4, ".idx"))
            continue;
        char *idx = mcg_sprintf("%s/%s", dir, e->d_name);
        char *pack = mcg_sprintf("%s/%.*spack", dir, (int)(len - 3), e->d_name);
        if (*n == cap) {
            cap = cap ? cap * 2 : 4;
            *out = mcg_realloc(*out, cap * sizeof(**out));
        }
        if (rpack_open(&(*out)[*n], idx, pack))
            (*n)++;
        free(idx);
        free(pack);
    }
    if (d)
        closedir(d);
    free(dir);
    git_buf_dispose(&objdir);
}

static int robj_by_place(const void *a, const void *b)
{
    const robj *x = a, *y = b;
    if (x->pack != y->pack)
        return x->pack < y->pack ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Write the object id as a whole object: read it, deflate it. */
static int reuse_whole(pack_writer *w, git_odb *odb, const git_oid *id, mcg_err *err)
{
    git_odb_object *obj = NULL;
    int rc = 0;
    if (git_odb_read(&obj, odb, id) != 0)
        return mcg_git_err(err, "object");
    static const int types[] = {[GIT_OBJECT_COMMIT] = OBJ_COMMIT,
                                [GIT_OBJECT_TREE] = OBJ_TREE,
                                [GIT_OBJECT_BLOB] = OBJ_BLOB,
                                [GIT_OBJECT_TAG] = OBJ_TAG};
    git_object_t t = git_odb_object_type(obj);
    size_t len = git_odb_object_size(obj);
    uLongf zlen = compressBound((uLong)len);
    unsigned char *z = mcg_malloc(zlen);
    if (t < GIT_OBJECT_COMMIT || t > GIT_OBJECT_TAG ||
        compress2(z, &zlen, git_odb_object_data(obj), (uLong)len, Z_DEFAULT_COMPRESSION) != Z_OK) {
        rc = mcg_err_set(err, MCG_EIO, "pack: cannot compress an object");
    } else {
        unsigned char h[16];
        size_t n = 0;
        uint64_t size = len;
        unsigned char c = (unsigned char)(types[t] << 4 | (size & 15));
        for (size >>= 4; size; size >>= 7) {
            h[n++] = c | 0x80;
            c = size & 0x7f;
        }
        h[n++] = c;
        if (pw_emit(w, h, n, true) != 0 || pw_emit(w, z, zlen, true) != 0)
            rc = mcg_err_set(err, MCG_EIO, "write: %s", strerror(w->err_no));
    }
    free(z);
    git_odb_object_free(obj);
    return rc;
}

/*
 * Copy one stored entry: a whole object as it is, a delta whose base has
 * been written as an OFS_DELTA to it, any other delta written whole.
 */
static int reuse_entry(pack_writer *w, const rpack *p, const robj *o, git_odb *odb, mcg_err *err)
{
    const unsigned char *e = p->pack + o->off;
    uint32_t pos;
    uint64_t end;
    if (!rpack_entry(p, o->off, &pos, &end) || pos != o->pos)
        return mcg_err_set(err, MCG_EIO, "pack: index and pack disagree");
    size_t len = (size_t)(end - o->off);
    if ((uint32_t)crc32_z(0, e, len) != be32(p->crcs + 4 * (size_t)pos)) {
        char sha[MCG_SHA_HEX + 1];
        git_oid_tostr(sha, sizeof(sha), &o->id);
        return mcg_err_set(err, MCG_EIO, "pack: object %s is damaged (CRC mismatch; run git fsck)",
                           sha);
    }
    /* The header: type, size, then a delta's base. */
    size_t h = 0;
    int type = (e[0] >> 4) & 7;
    uint64_t size = e[0] & 15;
    for (int shift = 4; e[h++] & 0x80; shift += 7) {
        if (h >= len || shift > 57)
            return mcg_err_set(err, MCG_EIO, "pack: bad entry header");
        size |= (uint64_t)(e[h] & 0x7f) << shift;
    }
    uint64_t at = w->written;
    git_oid base;
    bool delta = type == OBJ_OFS || type == OBJ_REF, have_base = false;
    uint64_t base_out = 0;
    if ((type == OBJ_OFS || type == OBJ_REF) && h >= len)
        return mcg_err_set(err, MCG_EIO, "pack: bad entry header");
    if (type == OBJ_OFS) {
        uint64_t ofs = e[h] & 127;
        while (e[h++] & 0x80) {
            if (h >= len || ofs >> 56)
                return mcg_err_set(err, MCG_EIO, "pack: bad delta offset");
            ofs = ((ofs + 1) << 7) | (e[h] & 127);
        }
        uint32_t bpos;
        uint64_t bend;
        if (!ofs || ofs > o->off || !rpack_entry(p, o->off - ofs, &bpos, &bend))
            return mcg_err_set(err, MCG_EIO, "pack: a delta's base is not in its pack");
        git_oid_fromraw(&base, p->oids + 20 * (size_t)bpos);
        have_base = oidmap_get(&w->ids, &base, &base_out);
    } else if (type == OBJ_REF) {
        if (len - h < GIT_OID_RAWSZ)
            return mcg_err_set(err, MCG_EIO, "pack: bad entry header");
        git_oid_fromraw(&base, e + h);
        h += GIT_OID_RAWSZ;
        have_base = oidmap_get(&w->ids, &base, &base_out);
    } else if (type < OBJ_COMMIT || type > OBJ_TAG) {
        return mcg_err_set(err, MCG_EIO, "pack: unknown entry type");
    }
    int rc = 0;
    if (!delta) {
        if (pw_emit(w, e, len, true) != 0)
            rc = mcg_err_set(err, MCG_EIO, "write: %s", strerror(w->err_no));
    } else if (!have_base) {
        rc = reuse_whole(w, odb, &o->id, err);
    } else {
        w->out_start = at;
        w->base_out = base_out;
        w->has_base = true;
        w->type = OBJ_OFS;
        w->size = size;
        if (pw_write_header(w) != 0 || pw_emit(w, e + h, len - h, true) != 0)
            rc = mcg_err_set(err, MCG_EIO, "write: %s", strerror(w->err_no));
    }
    if (!rc)
        oidmap_put(&w->ids, &o->id, at);
    return rc;
}

/*
 * Where a bundle goes: standard output, or a file replaced atomically. The
 * file is first written unnamed (O_TMPFILE in the target's directory), so
 * that even kill -9 leaves nothing behind, then given a temp name and
 * renamed over the target. File systems without O_TMPFILE (vfat USB sticks)
 * get a named temp file instead, which a signal handler removes
 * (mcg_bundle_signal_cleanup) and kill -9 leaves as FILE.tmp-XXXXXX.
 */
typedef struct bundle_out {
    int fd;
    bool to_stdout;
    bool anon;  /* fd is an O_TMPFILE: linked at the end */
    char *path; /* the target */
    char *tmp;  /* the temp name, once there is one */
} bundle_out;

static int out_open(bundle_out *o, const char *path, mcg_err *err)
{
    memset(o, 0, sizeof(*o));
    o->fd = -1;
    if (!strcmp(path, "-")) {
        if (isatty(STDOUT_FILENO))
            return mcg_err_set(err, MCG_EUSAGE, "refusing to write a bundle to a terminal");
        o->fd = STDOUT_FILENO;
        o->to_stdout = true;
        return 0;
    }
    o->path = mcg_strdup(path);
    char *copy = mcg_strdup(path);
    mode_t mask = umask(0);
    umask(mask);
    o->fd = open(dirname(copy), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    free(copy);
    if (o->fd >= 0 && access("/proc/self/fd", X_OK) == 0) {
        o->anon = true;
        return 0;
    }
    if (o->fd >= 0)
        close(o->fd); /* no /proc to link it through */
    o->tmp = mcg_sprintf("%s.tmp-XXXXXX", path);
    o->fd = mkostemp(o->tmp, O_CLOEXEC);
    if (o->fd < 0) {
        int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        return mcg_err_set(err, MCG_EIO, "%s: %s", path, strerror(e));
    }
    pending_set(NULL, o->tmp);
    if (fchmod(o->fd, 0666 & ~mask) != 0) {
        /* vfat and the like have no modes: the file keeps what it got */
    }
    return 0;
}

/* Give an O_TMPFILE a unique temp name beside the target. */
static int out_link_anon(bundle_out *o)
{
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
    for (int tries = 0; tries < 100; tries++) {
        static const char chars[] =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        unsigned char rnd[6];
        char suffix[7];
        if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
            return -1;
        for (int i = 0; i < 6; i++)
            suffix[i] = chars[rnd[i] % (sizeof(chars) - 1)];
        suffix[6] = '\0';
        free(o->tmp);
        o->tmp = mcg_sprintf("%s.tmp-%s", o->path, suffix);
        pending_set(NULL, o->tmp);
        if (linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) == 0)
            return 0;
        pending_set(NULL, NULL);
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

/* All written: make it durable and put it in place. */
static int out_commit(bundle_out *o, mcg_err *err)
{
    if (o->to_stdout)
        return 0;
    if (fsync(o->fd) != 0)
        return mcg_err_set(err, MCG_EIO, "%s: fsync: %s", o->path, strerror(errno));
    if (o->anon && out_link_anon(o) != 0)
        return mcg_err_set(err, MCG_EIO, "%s: %s", o->path, strerror(errno));
    if (rename(o->tmp, o->path) != 0)
        return mcg_err_set(err, MCG_EIO, "%s: %s", o->path, strerror(errno));
    pending_set(NULL, NULL);
    free(o->tmp);
    o->tmp = NULL; /* renamed: nothing to remove */
    char *copy = mcg_strdup(o->path);
    mcg_fsync_dir(dirname(copy));
    free(copy);
    return 0;
}

/* Close, removing the temp file if it is still there. */
static void out_close(bundle_out *o)
{
    if (o->fd >= 0 && !o->to_stdout)
        close(o->fd);
    if (o->tmp) {
        unlink(o->tmp);
        pending_set(NULL, NULL);
        free(o->tmp);
    }
    free(o->path);
    memset(o, 0, sizeof(*o));
    o->fd = -1;
}

typedef struct write_ctx {
    pack_writer pw;
    size_t nobj, done; /* objects in the pack; written before the packbuilder's */
    git_packbuilder *pb;
    progress *prog;
} write_ctx;

static int pack_write_cb(void *buf, size_t size, void *payload)
{
    write_ctx *w = payload;
    if (pw_write(&w->pw, buf, size) != 0)
        return -1;
    progress_draw(w->prog, "writing objects", w->done + git_packbuilder_written(w->pb), w->nobj);
    return 0;
}

static int pack_progress_cb(int stage, uint32_t current, uint32_t total, void *payload)
{
    progress *p = payload;
    if (stage == GIT_PACKBUILDER_ADDING_OBJECTS)
        progress_draw(p, "counting objects", current, total ? total : current);
    else
        progress_draw(p, "compressing objects", current, total);
    return 0;
}

/* Insert annotated tag objects (and tags of tags) so the ref lines resolve. */
static int insert_tags(git_packbuilder *pb, git_repository *repo, const breflist *refs,
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

/*
 * For an incremental bundle: keep only the refs whose commit is new, and
 * find the prerequisites — the parents of new commits that are not new.
 * Nothing new is an error.
 */
static int incremental_set(oidv *prereqs, breflist *refs, mcg_repo *r, const git_oid *since,
                           const char *since_name, mcg_err *err)
{
    git_revwalk *walk = NULL;
    oidv commits = {0};
    git_oid oid;
    int rc;
    if ((rc = walk_new(&walk, r, refs, since, err)) != 0)
        return rc;
    while ((rc = git_revwalk_next(&oid, walk)) == 0)
        oidv_push(&commits, &oid);
    if (rc != GIT_ITEROVER) {
        rc = mcg_git_err(err, "revwalk");
        goto out;
    }
    rc = 0;
    oidv_sort(&commits);
    for (size_t i = 0; i < commits.n; i++) {
        git_commit *c = NULL;
        if (git_commit_lookup(&c, r->git, &commits.v[i]) != 0) {
            rc = mcg_git_err(err, "commit");
            goto out;
        }
        for (unsigned p = 0; p < git_commit_parentcount(c); p++)
            if (!oidv_has(&commits, git_commit_parent_id(c, p)))
                oidv_push(prereqs, git_commit_parent_id(c, p));
        git_commit_free(c);
    }
    oidv_sort(prereqs);
    size_t kept = 0;
    for (size_t i = 0; i < refs->n; i++) {
        if (!oidv_has(&commits, &refs->v[i].commit)) {
            free(refs->v[i].name);
            continue;
        }
        refs->v[kept++] = refs->v[i];
    }
    refs->n = kept;
    if (!refs->n || !commits.n)
        rc = mcg_err_set(err, MCG_EINVAL, "nothing to bundle: no new commits since %s", since_name);
out:
    git_revwalk_free(walk);
    oidv_free(&commits);
    return rc;
}

/*
 * The pack by reuse: the packed objects' stored entries, pack by pack in
 * the order they are stored (so a delta's base comes first), then the
 * packbuilder's objects (those not in a pack), spliced in.
 */
static int write_reused(write_ctx *w, rset *set, const rpack *packs, mcg_repo *r, mcg_err *err)
{
    git_odb *odb = NULL;
    size_t packed = 0;
    int rc = 0;
    for (size_t i = 0; i < set->n; i++)
        if (set->v[i].pack >= 0)
            set->v[packed++] = set->v[i]; /* the loose ones are in the packbuilder */
    qsort(set->v, packed, sizeof(*set->v), robj_by_place);
    w->nobj = packed + git_packbuilder_object_count(w->pb);
    if (w->nobj > UINT32_MAX)
        return mcg_err_set(err, MCG_EINVAL, "too many objects for one pack");
    unsigned char head[12] = {'P', 'A', 'C', 'K', 0, 0, 0, 2};
    for (int i = 0; i < 4; i++)
        head[8 + i] = (unsigned char)(w->nobj >> (24 - 8 * i));
    if (git_repository_odb(&odb, r->git) != 0)
        return mcg_git_err(err, "odb");
    if (pw_emit(&w->pw, head, sizeof(head), true) != 0) {
        rc = mcg_err_set(err, MCG_EIO, "write: %s", strerror(w->pw.err_no));
        goto out;
    }
    for (size_t i = 0; i < packed && !rc; i++) {
        rc = reuse_entry(&w->pw, &packs[set->v[i].pack], &set->v[i], odb, err);
        progress_draw(w->prog, "writing objects", i + 1, w->nobj);
    }
    if (rc)
        goto out;
    w->done = packed;
    w->pw.embedded = true;
    if (git_packbuilder_object_count(w->pb) &&
        (git_packbuilder_foreach(w->pb, pack_write_cb, w) != 0 || w->pw.st != OS_DONE)) {
        if (w->pw.err_no)
            rc = mcg_err_set(err, MCG_EIO, "write: %s", strerror(w->pw.err_no));
        else if (w->pw.fail)
            rc = mcg_err_set(err, MCG_EIO, "pack: %s", w->pw.fail);
        else
            rc = mcg_git_err(err, "pack");
        goto out;
    }
    if (pw_finish(&w->pw) != 0)
        rc = mcg_err_set(err, MCG_EIO, "write: %s", strerror(w->pw.err_no));
out:
    git_odb_free(odb);
    return rc;
}

/*
 * Decide whether to copy stored entries: collect what the bundle holds and
 * find each object in the repo's packs. Reuse when at most
 * REUSE_MAX_LOOSE_PERCENT of them are elsewhere (those are inserted into
 * pb); otherwise *reuse stays false and nothing has been inserted.
 */
static int plan_reuse(bool *reuse, rset *set, rpack *packs, size_t npacks, git_packbuilder *pb,
                      mcg_repo *r, const breflist *refs, const git_oid *since, const oidv *prereqs,
                      mcg_err *err)
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
    rc = rset_collect(set, r, refs, since, prereqs, err);
    git_libgit2_opts(GIT_OPT_ENABLE_CACHING, 1);
    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 1);
    if (rc)
        return rc;
    for (size_t i = 0; i < set->n; i++) {
        robj *o = &set->v[i];
        for (size_t k = 0; k < npacks && o->pack < 0; k++)
            if (rpack_find(&packs[k], &o->id, &o->pos) &&
                (o->off = rpack_offset(&packs[k], o->pos)) != UINT64_MAX)
                o->pack = (int)k;
        loose += o->pack < 0;
    }
    if (loose * 100 > set->n * REUSE_MAX_LOOSE_PERCENT)
        return 0;
    for (size_t i = 0; i < set->n; i++)
        if (set->v[i].pack < 0 && git_packbuilder_insert(pb, &set->v[i].id, NULL) != 0)
            return mcg_git_err(err, "pack");
    *reuse = true;
    return 0;
}

int mcg_bundle_create(mcg_bundle_info *info, mcg_repo *r, const char *path,
                      const mcg_bundle_create_opts *opts, mcg_err *err)
{
    breflist refs = {0};
    oidv prereqs = {0};
    git_revwalk *walk = NULL;
    git_packbuilder *pb = NULL;
    git_oid since_oid;
    const git_oid *since = NULL;
    mcg_buf hdr = MCG_BUF_INIT;
    bundle_out out = {.fd = -1};
    write_ctx *w = NULL;
    rset set = {0};
    rpack *packs = NULL;
    size_t npacks = 0;
    bool reuse = false;
    int rc = 0;
    progress prog = {opts->flags & MCG_BUNDLE_PROGRESS, NULL, -1};
    mcg_bundle_info local = {0};

    if (!strcmp(path, "-") && isatty(STDOUT_FILENO))
        return mcg_err_set(err, MCG_EUSAGE, "refusing to write a bundle to a terminal");
    rc = opts->nrefs ? named_refs(&refs, r, opts->refs, opts->nrefs, err)
                     : default_refs(&refs, r, err);
    if (rc)
        goto out;
    if (opts->since) {
        char sha[MCG_SHA_HEX + 1];
        if ((rc = mcg_repo_resolve(r, opts->since, sha, err)) != 0)
            goto out;
        git_oid_fromstr(&since_oid, sha);
        since = &since_oid;
        if ((rc = incremental_set(&prereqs, &refs, r, since, opts->since, err)) != 0)
            goto out;
    }
    /* A full bundle holds every commit its refs reach: at least theirs. */
    if (!refs.n) {
        rc = mcg_err_set(err, MCG_EINVAL, "nothing to bundle: no refs");
        goto out;
    }
    qsort(refs.v, refs.n, sizeof(*refs.v), bref_cmp);

    /* Header. */
    mcg_buf_puts(&hdr, "# v2 git bundle\n");
    for (size_t i = 0; i < prereqs.n; i++) {
        git_commit *c = NULL;
        char sha[MCG_SHA_HEX + 1];
        git_oid_tostr(sha, sizeof(sha), &prereqs.v[i]);
        const char *subject = NULL;
        if (git_commit_lookup(&c, r->git, &prereqs.v[i]) == 0)
            subject = git_commit_summary(c);
        mcg_buf_printf(&hdr, "-%s %s\n", sha, subject ? subject : "");
        git_commit_free(c);
    }
    for (size_t i = 0; i < refs.n; i++) {
        char sha[MCG_SHA_HEX + 1];
        git_oid_tostr(sha, sizeof(sha), &refs.v[i].target);
        mcg_buf_printf(&hdr, "%s %s\n", sha, refs.v[i].name);
    }
    mcg_buf_putc(&hdr, '\n');

    /* The pack: new commits with only the trees and blobs the prerequisites lack. */
    if (git_packbuilder_new(&pb, r->git) != 0) {
        rc = mcg_git_err(err, "pack");
        goto out;
    }
    git_packbuilder_set_threads(pb, 0); /* one per CPU for the delta search */
    if (prog.on)
        git_packbuilder_set_callbacks(pb, pack_progress_cb, &prog);
    rpacks_open(&packs, &npacks, r);
    if (npacks &&
        (rc = plan_reuse(&reuse, &set, packs, npacks, pb, r, &refs, since, &prereqs, err)) != 0)
        goto out;
    if (!reuse) {
        if ((rc = walk_new(&walk, r, &refs, since, err)) != 0)
            goto out;
        if (git_packbuilder_insert_walk(pb, walk) != 0) {
            rc = mcg_git_err(err, "pack");
            goto out;
        }
        if ((rc = insert_tags(pb, r->git, &refs, err)) != 0)
            goto out;
    }

    if ((rc = out_open(&out, path, err)) != 0)
        goto out;
    w = mcg_calloc(1, sizeof(*w));
    if (pw_init(&w->pw, out.fd) != 0) {
        rc = mcg_err_set(err, MCG_EIO, "sha1: no digest");
        goto out;
    }
    w->nobj = git_packbuilder_object_count(pb);
    w->pb = pb;
    w->prog = &prog;
    if (mcg_write_all(out.fd, hdr.ptr, hdr.len) != 0) {
        rc = mcg_err_set(err, MCG_EIO, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (reuse) {
        if ((rc = write_reused(w, &set, packs, r, err)) != 0)
            goto out;
    } else if (git_packbuilder_foreach(pb, pack_write_cb, w) != 0 || w->pw.st != OS_DONE) {
        if (w->pw.err_no)
            rc = mcg_err_set(err, MCG_EIO, "%s: %s", path, strerror(w->pw.err_no));
        else if (w->pw.fail)
            rc = mcg_err_set(err, MCG_EIO, "pack: %s", w->pw.fail);
        else if (w->pw.st != OS_DONE)
            rc = mcg_err_set(err, MCG_EIO, "pack: the pack ended early");
        else
            rc = mcg_git_err(err, "pack");
        goto out;
    }
    progress_end(&prog);
    if ((rc = out_commit(&out, err)) != 0)
        goto out;
    local.nrefs = refs.n;
    local.nprerequisites = prereqs.n;
    local.nobjects = w->nobj;
    local.bytes = hdr.len + w->pw.written;
    if (info)
        *info = local;
out:
    progress_end(&prog);
    if (w)
        pw_free(&w->pw);
    free(w);
    out_close(&out);
    mcg_buf_free(&hdr);
    for (size_t i = 0; i < npacks; i++)
        rpack_close(&packs[i]);
    free(packs);
    free(set.v);
    oidset_free(&set.seen);
    git_packbuilder_free(pb);
    git_revwalk_free(walk);
    oidv_free(&prereqs);
    breflist_free(&refs);
    return rc;
}

/* ============================================================ read */

/* A buffered reader over a file descriptor, counting what it consumed. */
typedef struct reader {
    int fd;
    const char *name;
    char *buf;
    size_t pos, len;
    bool eof;
} reader;

static int rd_fill(reader *rd, mcg_err *err)
{
    if (rd->pos < rd->len || rd->eof)
        return 0;
    for (;;) {
        ssize_t n = read(rd->fd, rd->buf, BUNDLE_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return mcg_err_set(err, MCG_EIO, "%s: %s", rd->name, strerror(errno));
        rd->pos = 0;
        rd->len = (size_t)n;
        rd->eof = n == 0;
        return 0;
    }
}

/*
 * One header line into line (without its LF). *complete is false when the
 * input ended first. Lines longer than BUNDLE_MAX_LINE are refused.
 */
static int rd_line(reader *rd, mcg_buf *line, bool *complete, mcg_err *err)
{
    int rc;
    line->len = 0;
    if (line->ptr)
        line->ptr[0] = '\0';
    *complete = false;
    for (;;) {
        if ((rc = rd_fill(rd, err)) != 0)
            return rc;
        if (rd->eof)
            return 0;
        const char *start = rd->buf + rd->pos;
        const char *nl = memchr(start, '\n', rd->len - rd->pos);
        size_t n = nl ? (size_t)(nl - start) : rd->len - rd->pos;
        if (line->len + n > BUNDLE_MAX_LINE)
            return mcg_err_set(err, MCG_EINVAL, "not a git bundle: header line too long");
        mcg_buf_put(line, start, n);
        rd->pos += n + (nl ? 1 : 0);
        if (nl) {
            *complete = true;
            return 0;
        }
    }
}

typedef struct hdr_ref {
    git_oid oid;
    char *name;
} hdr_ref;

typedef struct bundle_hdr {
    int version;
    oidv prereqs;
    hdr_ref *refs;
    size_t nrefs, cap;
} bundle_hdr;

static void hdr_free(bundle_hdr *h)
{
    oidv_free(&h->prereqs);
    for (size_t i = 0; i < h->nrefs; i++)
        free(h->refs[i].name);
    free(h->refs);
    memset(h, 0, sizeof(*h));
}

/* Print untrusted header text safely: at most 80 bytes, controls as '?'. */
static const char *untrusted(char out[96], const char *s)
{
    size_t j = 0;
    for (size_t i = 0; s[i] && j < 80; i++)
        out[j++] = (unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f ? '?' : s[i];
    if (strlen(s) > 80) {
        memcpy(out + j, "...", 3);
        j += 3;
    }
    out[j] = '\0';
    return out;
}

static int parse_header(bundle_hdr *h, reader *rd, mcg_err *err)
{
    mcg_buf line = MCG_BUF_INIT;
    bool complete;
    char safe[96];
    int rc;
    if ((rc = rd_line(rd, &line, &complete, err)) != 0)
        goto out;
    if (complete && !strcmp(line.ptr, "# v2 git bundle"))
        h->version = 2;
    else if (complete && !strcmp(line.ptr, "# v3 git bundle"))
        h->version = 3;
    else if (complete && !strncmp(line.ptr, "# v", 3) && strstr(line.ptr, " git bundle")) {
        rc = mcg_err_set(err, MCG_EINVAL, "unsupported bundle version: %s",
                         untrusted(safe, line.ptr + 2));
        goto out;
    } else {
        rc = mcg_err_set(err, MCG_EINVAL, "not a git bundle (no '# v2 git bundle' header)");
        goto out;
    }
    for (;;) {
        if ((rc = rd_line(rd, &line, &complete, err)) != 0)
            goto out;
        if (!complete) {
            rc = mcg_err_set(err, MCG_EINVAL, "truncated bundle: the header ends early");
            goto out;
        }
        if (line.len == 0)
            break; /* the pack follows */
        if (h->prereqs.n + h->nrefs >= BUNDLE_MAX_REFS) {
            rc = mcg_err_set(err, MCG_EINVAL, "bundle header lists more than %d refs",
                             BUNDLE_MAX_REFS);
            goto out;
        }
        if (strlen(line.ptr) != line.len) {
            rc = mcg_err_set(err, MCG_EINVAL, "not a git bundle: NUL byte in the header");
            goto out;
        }
        if (line.ptr[0] == '@') {
            /* Capabilities: an allow-list of one. */
            if (h->version != 3 || h->prereqs.n || h->nrefs) {
                rc = mcg_err_set(err, MCG_EINVAL, "bad bundle header line: %s",
                                 untrusted(safe, line.ptr));
                goto out;
            }
            if (strcmp(line.ptr + 1, "object-format=sha1") != 0) {
                rc = mcg_err_set(err, MCG_EINVAL, "unsupported bundle capability '%s'",
                                 untrusted(safe, line.ptr + 1));
                goto out;
            }
            continue;
        }
        git_oid oid;
        if (line.ptr[0] == '-') {
            if (!parse_oid(&oid, line.ptr + 1) ||
                (line.ptr[1 + MCG_SHA_HEX] && line.ptr[1 + MCG_SHA_HEX] != ' ')) {
                rc = mcg_err_set(err, MCG_EINVAL, "bad prerequisite line: %s",
                                 untrusted(safe, line.ptr));
                goto out;
            }
            oidv_push(&h->prereqs, &oid);
            continue;
        }
        const char *name = line.ptr + MCG_SHA_HEX + 1;
        int valid = 0;
        if (!parse_oid(&oid, line.ptr) || line.ptr[MCG_SHA_HEX] != ' ' ||
            git_reference_name_is_valid(&valid, name) != 0 || !valid) {
            rc = mcg_err_set(err, MCG_EINVAL, "bad ref line: %s", untrusted(safe, line.ptr));
            goto out;
        }
        for (size_t i = 0; i < h->nrefs; i++)
            if (!strcmp(h->refs[i].name, name)) {
                rc = mcg_err_set(err, MCG_EINVAL, "ref %s is listed twice", untrusted(safe, name));
                goto out;
            }
        if (h->nrefs == h->cap) {
            h->cap = h->cap ? h->cap * 2 : 16;
            h->refs = mcg_realloc(h->refs, h->cap * sizeof(*h->refs));
        }
        h->refs[h->nrefs].oid = oid;
        h->refs[h->nrefs].name = mcg_strdup(name);
        h->nrefs++;
    }
    if (!h->nrefs)
        rc = mcg_err_set(err, MCG_EINVAL, "bundle lists no refs");
out:
    mcg_buf_free(&line);
    return rc;
}

/* ============================================================ quarantine */

/* Remove every mcgit-incoming-XXXXXX under objects (caller holds the lock exclusively). */
static void quarantine_remove_stale(const char *objects)
{
    DIR *d = opendir(objects);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, QUARANTINE_PREFIX, strlen(QUARANTINE_PREFIX)) != 0 ||
            strlen(e->d_name) != strlen(QUARANTINE_PREFIX) + 6)
            continue;
        char *dir = mcg_sprintf("%s%s", objects, e->d_name);
        char *pack = mcg_sprintf("%s/pack", dir);
        quarantine_remove(dir, pack);
        free(pack);
        free(dir);
    }
    closedir(d);
}

/*
 * Lock the objects directory shared for this run (*fd keeps the lock),
 * removing stale quarantines first when no other run is alive. A file
 * system without flock() gets no cleanup, never a wrong one.
 */
static void quarantine_lock(int *fd, const char *objects)
{
    *fd = open(objects, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*fd < 0)
        return;
    if (flock(*fd, LOCK_EX | LOCK_NB) == 0) {
        quarantine_remove_stale(objects);
        /* Downgrade: a run that takes the exclusive lock in between finds
         * no quarantine of ours yet. */
        if (flock(*fd, LOCK_SH) == 0)
            return;
    } else if (errno == EWOULDBLOCK) {
        int rc;
        while ((rc = flock(*fd, LOCK_SH)) != 0 && errno == EINTR)
            ;
        if (rc == 0)
            return;
    }
    close(*fd);
    *fd = -1;
}

static int indexer_progress_cb(const git_indexer_progress *s, void *payload)
{
    progress *p = payload;
    if (s->total_deltas && s->indexed_deltas)
        progress_draw(p, "resolving deltas", s->indexed_deltas, s->total_deltas);
    else
        progress_draw(p, "receiving objects", s->received_objects, s->total_objects);
    return 0;
}

/*
 * Stream the rest of rd into an indexer writing into q/pack; *name = pack
 * hash. The same bytes go to a precheck thread, which checks the commits'
 * signatures and reads the objects meanwhile: *scan.
 */
static int index_pack(char **name, mcg_packscan **scan, reader *rd, const char *q, git_odb *odb,
                      progress *prog, mcg_bundle_report *rep, mcg_err *err)
{
    git_indexer *idx = NULL;
    mcg_precheck *pre = mcg_precheck_start();
    git_indexer_options o = GIT_INDEXER_OPTIONS_INIT;
    git_indexer_progress stats = {0};
    char *packdir = mcg_sprintf("%s/pack", q);
    int rc = 0;
    *name = NULL;
    /*
     * No o.verify: libgit2 1.5's connectivity check leaks every object the
     * repo already has. check_connected() does the same check instead.
     */
    if (prog->on) {
        o.progress_cb = indexer_progress_cb;
        o.progress_cb_payload = prog;
    }
    if (git_indexer_new(&idx, packdir, 0444, odb, &o) != 0) {
        rc = mcg_git_err(err, "indexer");
        goto out;
    }
    for (;;) {
        if ((rc = rd_fill(rd, err)) != 0)
            goto out;
        if (rd->eof)
            break;
        size_t n = rd->len - rd->pos;
        mcg_precheck_feed(pre, rd->buf + rd->pos, n);
        if (git_indexer_append(idx, rd->buf + rd->pos, n, &stats) != 0) {
            const git_error *e = git_error_last();
            rc = mcg_err_set(err, MCG_EINVAL, "damaged bundle: the pack does not index (%s)",
                             e && e->message ? e->message : "indexer error");
            goto out;
        }
        rd->pos = rd->len;
        rep->pack_bytes += n;
    }
    if (rep->pack_bytes == 0) {
        rc = mcg_err_set(err, MCG_EINVAL, "truncated bundle: no pack data");
        goto out;
    }
    if (git_indexer_commit(idx, &stats) != 0) {
        const git_error *e = git_error_last();
        rc = mcg_err_set(err, MCG_EINVAL, "damaged or truncated bundle: %s",
                         e && e->message ? e->message : "indexer error");
        goto out;
    }
    rep->objects = stats.total_objects;
    *name = mcg_strdup(git_indexer_name(idx));
    *scan = mcg_precheck_finish(pre);
    rep->prechecked = mcg_packscan_checked(*scan);
    pre = NULL;
out:
    mcg_precheck_abort(pre);
    progress_end(prog);
    git_indexer_free(idx);
    free(packdir);
    return rc;
}

/* ============================================================ check */

static void report_reset(mcg_bundle_report *rep)
{
    memset(rep, 0, sizeof(*rep));
}

void mcg_bundle_report_free(mcg_bundle_report *rep)
{
    if (!rep)
        return;
    for (size_t i = 0; i < rep->nrefs; i++) {
        free(rep->refs[i].name);
        mcg_verify_report_free(&rep->refs[i].verify);
    }
    free(rep->refs);
    mcg_strv_free(&rep->prerequisites);
    memset(rep, 0, sizeof(*rep));
}

/* Is a a descendant of b? 1 yes, 0 no, -1 history unreadable (err set). */
static int descends(git_repository *repo, const git_oid *a, const git_oid *b, mcg_err *err)
{
    int d = git_graph_descendant_of(repo, a, b);
    if (d < 0) {
        const git_error *e = git_error_last();
        mcg_err_set(err, MCG_EINVAL, "incomplete bundle: %s",
                    e && e->message ? e->message : "history cannot be read");
        return -1;
    }
    return d;
}

/* Decide what happens to one ref; refusals set err and return nonzero. */
static int classify(mcg_bundle_ref *br, mcg_repo *q, const git_oid *new_oid, mcg_err *err)
{
    const char *name = br->name;
    git_oid old;
    bool is_tag = !strncmp(name, "refs/tags/", 10);
    int d;
    if (!strcmp(name, "HEAD")) {
        br->note = "HEAD is not imported";
        return 0;
    }
    if (strncmp(name, "refs/heads/", 11) && !is_tag) {
        br->note = "only branches and tags are imported";
        return 0;
    }
    if (!is_tag && !strcmp(name + 11, q->rendered_branch)) {
        br->note = "the rendered branch is made locally";
        return 0;
    }
    br->action = MCG_BUNDLE_SKIP;
    if (git_reference_name_to_id(&old, q->git, name) != 0) {
        br->action = MCG_BUNDLE_CREATE;
        return 0;
    }
    git_oid_tostr(br->old_sha, sizeof(br->old_sha), &old);
    if (git_oid_equal(&old, new_oid)) {
        br->action = MCG_BUNDLE_SAME;
        return 0;
    }
    if (is_tag) {
        br->action = MCG_BUNDLE_REWRITE;
        return mcg_err_set(err, MCG_ECONFLICT,
                           "%s: the bundle moves an existing tag (%.12s -> %.12s)", name,
                           br->old_sha, br->new_sha);
    }
    if ((d = descends(q->git, new_oid, &old, err)) < 0)
        return err->code;
    if (d == 1) {
        br->action = MCG_BUNDLE_FORWARD;
        return 0;
    }
    if ((d = descends(q->git, &old, new_oid, err)) < 0)
        return err->code;
    if (d == 1) {
        br->action = MCG_BUNDLE_STALE;
        return mcg_err_set(err, MCG_ECONFLICT,
                           "stale bundle: %s %.12s is older than the repo's %.12s (rollback "
                           "refused)",
                           name, br->new_sha, br->old_sha);
    }
    br->action = MCG_BUNDLE_REWRITE;
    return mcg_err_set(err, MCG_ECONFLICT,
                       "%s: not a fast-forward (%.12s does not descend from the repo's %.12s), "
                       "refused",
                       name, br->new_sha, br->old_sha);
}

/* Peel a ref value to a commit sha within the quarantined view. */
static int peel_commit(char sha[MCG_SHA_HEX + 1], mcg_repo *q, const mcg_bundle_ref *br,
                       mcg_err *err)
{
    git_object *obj = NULL, *peeled = NULL;
    git_oid oid;
    int rc = 0;
    git_oid_fromstr(&oid, br->new_sha);
    if (git_object_lookup(&obj, q->git, &oid, GIT_OBJECT_ANY) != 0)
        rc = mcg_err_set(err, MCG_EINVAL, "incomplete bundle: %s points to missing object %s",
                         br->name, br->new_sha);
    else if (git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT) != 0)
        rc = mcg_err_set(err, MCG_EINVAL, "%s does not point to a commit", br->name);
    else
        git_oid_tostr(sha, MCG_SHA_HEX + 1, git_object_id(peeled));
    git_object_free(peeled);
    git_object_free(obj);
    return rc;
}

typedef struct session {
    mcg_repo q;      /* a view of the repo that also sees the quarantine (main thread) */
    mcg_repo q2;     /* the same view for the second thread */
    char *objects;   /* the repo's objects directory (with a trailing '/') */
    char *qdir;      /* objects/mcgit-incoming-XXXXXX */
    char *pack_name; /* pack-<name>.{pack,idx} inside qdir/pack */
    int lockfd;      /* the objects directory, flock()ed shared; -1 none */
    mcg_packscan *scan; /* what was learnt reading the pack as it was indexed */
    char source_tip[MCG_SHA_HEX + 1]; /* new source tip to render, "" none */
} session;

static void view_close(mcg_repo *v)
{
    git_repository_free(v->git);
    v->git = NULL;
}

static void session_end(session *s)
{
    view_close(&s->q);
    view_close(&s->q2);
    if (s->qdir) {
        char *pack = mcg_sprintf("%s/pack", s->qdir);
        quarantine_remove(s->qdir, pack);
        free(pack);
        pending_set(NULL, NULL);
    }
    if (s->lockfd >= 0)
        close(s->lockfd); /* drops the lock, once the quarantine is gone */
    free(s->qdir);
    free(s->objects);
    free(s->pack_name);
    mcg_packscan_free(s->scan);
    memset(s, 0, sizeof(*s));
    s->lockfd = -1;
}

/* Create the quarantine objects/mcgit-incoming-XXXXXX/pack (lock held). */
static int quarantine_create(session *s, mcg_err *err)
{
    s->qdir = mcg_sprintf("%s" QUARANTINE_PREFIX "XXXXXX", s->objects);
    if (!mkdtemp(s->qdir)) {
        int e = errno;
        free(s->qdir);
        s->qdir = NULL;
        return mcg_err_set(err, MCG_EIO, "quarantine in %s: %s", s->objects, strerror(e));
    }
    pending_set(s->qdir, NULL);
    char *packdir = mcg_sprintf("%s/pack", s->qdir);
    int mk = mkdir(packdir, 0700);
    free(packdir);
    if (mk != 0)
        return mcg_err_set(err, MCG_EIO, "quarantine: %s", strerror(errno));
    return 0;
}

/*
 * Open a view of r in v whose object database is the quarantined pack first
 * (during an import nearly every read is of a new object), then r's own
 * object directory and its alternates. Read-only: nothing writes through it.
 */
static int view_open(mcg_repo *v, mcg_repo *r, const session *s, mcg_err *err)
{
    git_odb *odb = NULL;
    git_odb_backend *qpack = NULL;
    int rc = 0;
    v->source_branch = r->source_branch;
    v->rendered_branch = r->rendered_branch;
    if (git_repository_open_ext(&v->git, git_repository_path(r->git), GIT_REPOSITORY_OPEN_NO_SEARCH,
                                NULL) != 0 ||
        git_odb_new(&odb) != 0 || git_odb_backend_pack(&qpack, s->qdir) != 0) {
        rc = mcg_git_err(err, "quarantine");
        goto out;
    }
    if (git_odb_add_backend(odb, qpack, 2) != 0) {
        qpack->free(qpack);
        rc = mcg_git_err(err, "quarantine");
        goto out;
    }
    /* qpack: transferred to odb */
    if (git_odb_add_disk_alternate(odb, s->objects) != 0) {
        rc = mcg_git_err(err, "quarantine");
        goto out;
    }
    git_repository_set_odb(v->git, odb);
out:
    git_odb_free(odb);
    return rc;
}

static bool in_pack(const git_oid *id, void *pack)
{
    return mcg_oidmap_get(pack, id, NULL);
}

/*
 * Give both views what the scan of the pack learnt, once it is confirmed
 * against the indexer's ids: the signature memo always; when the scan is
 * complete, its commits (an object database backend before the pack's) and
 * its signer-file hints too.
 */
static int views_attach_scan(session *s, const oidmap *pack, mcg_err *err)
{
    git_odb *odb = NULL;
    if (git_repository_odb(&odb, s->q.git) != 0)
        return mcg_git_err(err, "quarantine");
    mcg_packscan_confirm(s->scan, in_pack, (void *)pack, odb);
    git_odb_free(odb);
    mcg_repo *views[] = {&s->q, &s->q2};
    for (size_t i = 0; i < 2; i++) {
        mcg_repo *v = views[i];
        git_odb_backend *be = NULL;
        v->memo = mcg_packscan_memo(s->scan);
        if (!mcg_packscan_complete(s->scan))
            continue;
        v->scan = s->scan;
        if (mcg_packscan_backend(&be, s->scan) != 0 || git_repository_odb(&odb, v->git) != 0) {
            if (be)
                be->free(be);
            return mcg_git_err(err, "quarantine");
        }
        if (be && git_odb_add_backend(odb, be, 3) != 0) {
            be->free(be);
            git_odb_free(odb);
            return mcg_git_err(err, "quarantine");
        }
        git_odb_free(odb);
    }
    return 0;
}

/*
 * The object ids of a pack, read from its .idx (version 2: magic, version,
 * 256 fan-out counts, then the sorted ids) — the index libgit2 just wrote.
 */
static int read_idx_oids(oidset *out, const char *idx, mcg_err *err)
{
    unsigned char head[8 + 256 * 4];
    unsigned char raw[256 * GIT_OID_RAWSZ];
    int rc = 0;
    FILE *f = fopen(idx, "rbe");
    if (!f)
        return mcg_err_set(err, MCG_EIO, "%s: %s", idx, strerror(errno));
    if (fread(head, 1, sizeof(head), f) != sizeof(head) || memcmp(head, "\377tOc", 4) ||
        be32(head + 4) != 2) {
        rc = mcg_err_set(err, MCG_EIO, "%s: not a version 2 pack index", idx);
        goto out;
    }
    uint32_t n = be32(head + 8 + 255 * 4);
    oidset_reserve(out, n);
    for (uint32_t i = 0; i < n;) {
        size_t want = n - i < 256 ? n - i : 256;
        if (fread(raw, GIT_OID_RAWSZ, want, f) != want) {
            rc = mcg_err_set(err, MCG_EIO, "%s: truncated", idx);
            goto out;
        }
        for (size_t j = 0; j < want; j++, i++) {
            git_oid oid;
            git_oid_fromraw(&oid, raw + j * GIT_OID_RAWSZ);
            oidset_add(out, &oid);
        }
    }
out:
    fclose(f);
    return rc;
}

/* ------------------------------------------------------------ connectivity */

/*
 * Every object reachable from the bundle's refs must be in the pack or
 * already in the repo, as git's fetch checks (rev-list --objects): a bundle
 * complete only in its header is refused before anything moves. The walk
 * reads each commit, tag and tree of the pack that the refs reach, once;
 * an object the repo already has ends the walk there (the repo is taken to
 * be complete), and blobs are only looked up, never read.
 */
typedef struct conn_ctx {
    mcg_repo *view;
    const oidset *pack;  /* ids in the quarantined pack */
    const git_oid *tips; /* what the bundle's ref lines name */
    size_t ntips;
    int rc;
    mcg_err err;
} conn_ctx;

typedef struct pending_obj {
    git_oid id, by; /* the object, and what named it (for the message) */
} pending_obj;

typedef struct objstack {
    pending_obj *v;
    size_t n, cap;
} objstack;

static void objstack_push(objstack *s, const git_oid *id, const git_oid *by)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->v = mcg_realloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n].id = *id;
    s->v[s->n].by = *by;
    s->n++;
}

static int incomplete(mcg_err *err, const git_oid *by, const git_oid *id)
{
    char a[MCG_SHA_HEX + 1], b[MCG_SHA_HEX + 1];
    git_oid_tostr(a, sizeof(a), by);
    git_oid_tostr(b, sizeof(b), id);
    return mcg_err_set(err, MCG_EINVAL,
                       "incomplete bundle: object %s needs %s, which neither the bundle nor the "
                       "repo has",
                       a, b);
}

/* What a raw commit names: its tree and parents. */
static bool raw_commit_links(objstack *todo, const git_oid *self, const char *p, size_t len)
{
    oidv parents = {0};
    git_oid tree;
    bool ok = raw_commit_ids(&tree, &parents, p, len);
    if (ok) {
        for (size_t i = 0; i < parents.n; i++)
            objstack_push(todo, &parents.v[i], self);
        objstack_push(todo, &tree, self);
    }
    oidv_free(&parents);
    return ok;
}

/* What a raw tag names: "object <hex>\n" first. */
static bool raw_tag_link(objstack *todo, const git_oid *self, const char *p, size_t len)
{
    git_oid id;
    if (!mcg_git_tag_target(&id, p, len))
        return false;
    objstack_push(todo, &id, self);
    return true;
}

/*
 * Check a raw tree's entries ("<octal mode> <name>\0<20-byte id>"):
 * subtrees go to todo, blobs must be in the pack or the repo, submodules
 * (mode 160000) are links to other repositories. False when malformed.
 */
static bool raw_tree_links(conn_ctx *c, git_odb *odb, oidset *seen, objstack *todo,
                           const git_oid *self, const unsigned char *p, size_t len, int *rc)
{
    const unsigned char *end = p + len;
    mcg_tree_entry e;
    while (p < end && !*rc) {
        if (!mcg_git_tree_entry_next(&e, &p, end))
            return false;
        if ((e.mode & 0170000) == 0040000) {
            if (!oidset_has(seen, &e.id))
                objstack_push(todo, &e.id, self);
        } else if ((e.mode & 0170000) != 0160000) {
            /* A blob is only looked up: in the pack, or in the repo. */
            if (oidset_add(seen, &e.id) && !oidset_has(c->pack, &e.id) &&
                !git_odb_exists(odb, &e.id))
                *rc = incomplete(&c->err, self, &e.id);
        }
    }
    return true;
}

static int check_connected(conn_ctx *c)
{
    git_odb *odb = NULL;
    oidset seen = {0};
    objstack todo = {0};
    mcg_err *err = &c->err;
    int rc = 0;
    if (git_repository_odb(&odb, c->view->git) != 0) {
        rc = mcg_git_err(err, "quarantine");
        goto out;
    }
    if (c->view->scan) {
        /*
         * The scan read every commit, tree and tag of the pack: each id they
         * name must be in the pack or the repo (git's index-pack checks the
         * same, as it indexes). The tips were looked up already.
         */
        const git_oid *by = NULL, *missing = NULL;
        if (mcg_packscan_connected(c->view->scan, in_pack, (void *)c->pack, odb, &by, &missing))
            rc = incomplete(err, by ? by : missing, missing);
        goto out;
    }
    for (size_t i = 0; i < c->ntips; i++)
        objstack_push(&todo, &c->tips[i], &c->tips[i]);
    while (todo.n && !rc) {
        pending_obj p = todo.v[--todo.n];
        if (!oidset_add(&seen, &p.id))
            continue; /* already checked */
        if (!oidset_has(c->pack, &p.id)) {
            if (!git_odb_exists(odb, &p.id))
                rc = incomplete(err, &p.by, &p.id);
            continue;
        }
        git_odb_object *obj = NULL;
        if (git_odb_read(&obj, odb, &p.id) != 0) {
            rc = mcg_git_err(err, "damaged bundle");
            break;
        }
        const char *data = git_odb_object_data(obj);
        size_t len = git_odb_object_size(obj);
        bool ok = true;
        switch (git_odb_object_type(obj)) {
        case GIT_OBJECT_COMMIT:
            ok = raw_commit_links(&todo, &p.id, data, len);
            break;
        case GIT_OBJECT_TAG:
            ok = raw_tag_link(&todo, &p.id, data, len);
            break;
        case GIT_OBJECT_TREE:
            ok = raw_tree_links(c, odb, &seen, &todo, &p.id, (const unsigned char *)data, len, &rc);
            break;
        default:
            break;
        }
        git_odb_object_free(obj);
        if (!ok) {
            char sha[MCG_SHA_HEX + 1];
            git_oid_tostr(sha, sizeof(sha), &p.id);
            rc = mcg_err_set(err, MCG_EINVAL, "damaged bundle: object %s is malformed", sha);
        }
    }
out:
    free(todo.v);
    oidset_free(&seen);
    git_odb_free(odb);
    c->rc = rc;
    return rc;
}

/* ------------------------------------------------------------ verification on two threads */

/*
 * The checks after indexing run on two threads, each with its own view of
 * the repo (libgit2 objects are not shared between threads; the odb locks
 * internally). Most signatures' arithmetic is already done by then
 * (precheck.c); a pack the scan could not read whole leaves more here:
 *
 *   the second thread   connectivity, then verification jobs
 *   the main thread     plans the jobs, then verification jobs
 *
 * A ref's range (since, tip] is cut along tip's first-parent chain at
 * c_K, c_2K, ... into jobs mcg_gitops_verify(tip = c_jK, since = c_(j+1)K),
 * the oldest with the ref's own since. The pieces partition the range: each
 * is "reachable from c_jK and not from c_(j+1)K", every cut descends from
 * since (checked; else the range is verified whole), and a commit reachable
 * from a lower cut is never in a higher piece. A commit's verdict depends on
 * its signature, the trust root and its first parent (whose allowed_signers
 * counts when the parent is good or below since): within a piece the parent
 * either is in the piece, as in the whole range, or is the cut below, which
 * a piece takes as good — and is checked by the piece below. So when every
 * piece is all good, the whole range is; when any commit is bad the import
 * is refused, and the ref is verified again in one piece so that the report
 * and the message are exactly those of mcg_gitops_verify over the range.
 */
#define VERIFY_MIN_PIECE 64 /* commits; fewer is not worth a piece */
#define VERIFY_PIECES 16    /* per ref, at most */

typedef struct vjob {
    size_t ref; /* index in the report's refs */
    char tip[MCG_SHA_HEX + 1];
    char since[MCG_SHA_HEX + 1]; /* "" none */
    size_t commits;              /* first-parent commits in the piece, for progress */
    mcg_verify_report vr;
    int rc;
    mcg_err err;
} vjob;

typedef struct vpool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool published;
    vjob *jobs;
    size_t njobs, next;
    const mcg_signers *root;
    int64_t now; /* mcg_verify_opts.now */
    progress *prog;
    uint64_t done, total; /* commits verified, for the progress bar */
} vpool;

/* The next job, waiting until jobs are published; NULL when none is left. */
static vjob *vpool_take(vpool *p)
{
    vjob *j = NULL;
    pthread_mutex_lock(&p->mu);
    while (!p->published)
        pthread_cond_wait(&p->cv, &p->mu);
    if (p->next < p->njobs)
        j = &p->jobs[p->next++];
    pthread_mutex_unlock(&p->mu);
    return j;
}

static void vpool_publish(vpool *p, vjob *jobs, size_t n)
{
    pthread_mutex_lock(&p->mu);
    p->jobs = jobs;
    p->njobs = n;
    p->published = true;
    for (size_t i = 0; i < n; i++)
        p->total += jobs[i].commits;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void vpool_run(vpool *p, mcg_repo *view)
{
    vjob *j;
    while ((j = vpool_take(p)) != NULL) {
        mcg_verify_opts o = {j->since[0] ? j->since : NULL, p->now, view->memo, view->scan};
        j->rc = mcg_gitops_verify(&j->vr, view, j->tip, &o, p->root, &j->err);
        pthread_mutex_lock(&p->mu);
        p->done += j->commits;
        progress_draw(p->prog, "verifying commits", p->done, p->total);
        pthread_mutex_unlock(&p->mu);
    }
}

typedef struct worker {
    vpool *pool;
    conn_ctx *conn;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    check_connected(w->conn);
    vpool_run(w->pool, w->conn->view);
    return NULL;
}

/*
 * The since a ref's verification uses: `since` when given, else (as
 * mcg_gitops_verify does) the last verified commit when tip descends from
 * it; "" for none.
 */
static void effective_since(char out[MCG_SHA_HEX + 1], mcg_repo *v, const char *tip,
                            const char *since, const mcg_signers *root)
{
    out[0] = '\0';
    if (since) {
        snprintf(out, MCG_SHA_HEX + 1, "%s", since);
        return;
    }
    char sha[MCG_SHA_HEX + 1];
    if (!mcg_gitops_verified_mark(v, root, sha))
        return;
    if (mcg_repo_descends(v, tip, sha))
        memcpy(out, sha, sizeof(sha));
}

/*
 * Add the jobs verifying (since, tip] for ref i to *jobs: the pieces of
 * tip's first-parent chain, newest first, or the whole range in one job.
 */
static int plan_ref(vjob **jobs, size_t *n, size_t *cap, mcg_repo *v, size_t i, const char *tip,
                    const char *since, mcg_err *err)
{
    oidv chain = {0};
    git_oid cur, stop;
    bool has_stop = since[0] != '\0';
    bool reached = !has_stop;
    int rc = 0;
    git_oid_fromstr(&cur, tip);
    if (has_stop)
        git_oid_fromstr(&stop, since);
    for (;;) {
        git_commit *c = NULL;
        if (has_stop && git_oid_equal(&cur, &stop)) {
            reached = true;
            break;
        }
        if (git_commit_lookup(&c, v->git, &cur) != 0) {
            rc = mcg_git_err(err, "damaged bundle");
            goto out;
        }
        oidv_push(&chain, &cur);
        unsigned np = git_commit_parentcount(c);
        if (np)
            cur = *git_commit_parent_id(c, 0);
        git_commit_free(c);
        if (!np)
            break;
    }
    size_t piece = chain.n / VERIFY_PIECES;
    if (piece < VERIFY_MIN_PIECE)
        piece = VERIFY_MIN_PIECE;
    size_t cuts = chain.n > piece ? (chain.n - 1) / piece : 0;
    /* Every cut must descend from since; the lowest is enough to ask. */
    if (cuts && !reached) {
        char low[MCG_SHA_HEX + 1];
        git_oid_tostr(low, sizeof(low), &chain.v[cuts * piece]);
        if (!mcg_repo_descends(v, low, since))
            cuts = 0;
    }
    for (size_t k = 0; k <= cuts; k++) {
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 16;
            *jobs = mcg_realloc(*jobs, *cap * sizeof(**jobs));
        }
        vjob *j = &(*jobs)[(*n)++];
        memset(j, 0, sizeof(*j));
        j->ref = i;
        git_oid_tostr(j->tip, sizeof(j->tip), &chain.v[k * piece]);
        if (k < cuts)
            git_oid_tostr(j->since, sizeof(j->since), &chain.v[(k + 1) * piece]);
        else
            memcpy(j->since, since, MCG_SHA_HEX + 1);
        j->commits = k < cuts ? piece : chain.n - k * piece;
    }
out:
    oidv_free(&chain);
    return rc;
}

/* One ref to verify: the range (since, tip], or none when `with` covers it. */
typedef struct vref {
    char tip[MCG_SHA_HEX + 1];
    char since[MCG_SHA_HEX + 1]; /* as passed to mcg_gitops_verify: "" = NULL */
    char eff[MCG_SHA_HEX + 1];   /* the since that applies, "" none */
    ssize_t with;                /* a ref whose range holds this one, or -1 */
} vref;

/*
 * Verify the range of each of rep's refs that want[i] names (tip "" = none;
 * with >= 0 = covered by that ref's) on two threads, checking connectivity
 * from tips alongside, and fill each ref's report. Returns an error when a
 * check could not run, or the connectivity refusal; bad verdicts are left in
 * the reports for the caller to refuse.
 */
static int verify_all(session *s, mcg_bundle_report *rep, vref *want, const git_oid *tips,
                      size_t ntips, const oidset *pack, const mcg_signers *root, progress *prog,
                      mcg_err *err)
{
    vjob *jobs = NULL;
    size_t njobs = 0, cap = 0;
    char mark[MCG_SHA_HEX + 1];
    /* History arriving at a repo that holds verified history is also
     * checked against this host's clock (mcg_verify_opts.now). */
    vpool pool = {.root = root,
                  .now = mcg_gitops_verified_mark(&s->q, root, mark) ? (int64_t)time(NULL) : 0,
                  .prog = prog};
    conn_ctx conn = {.view = &s->q2, .pack = pack, .tips = tips, .ntips = ntips};
    worker w = {&pool, &conn};
    pthread_t th;
    bool threaded = false;
    int rc = 0, plan_rc = 0;
    mcg_err plan_err = {0};

    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.cv, NULL);
    /* The worker takes no signals: they go to the main thread, which cleans up. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    threaded = pthread_create(&th, NULL, worker_main, &w) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!threaded)
        conn.view = &s->q; /* one thread: it runs everything below in turn */

    for (size_t i = 0; i < rep->nrefs && !plan_rc; i++)
        if (want[i].tip[0] && want[i].with < 0)
            plan_rc = plan_ref(&jobs, &njobs, &cap, &s->q, i, want[i].tip, want[i].eff, &plan_err);
    vpool_publish(&pool, plan_rc ? NULL : jobs, plan_rc ? 0 : njobs);
    if (!threaded)
        check_connected(&conn);
    vpool_run(&pool, &s->q);
    if (threaded)
        pthread_join(th, NULL);
    progress_end(prog);

    if (conn.rc) {
        *err = conn.err;
        rc = conn.rc;
        goto out;
    }
    if (plan_rc) {
        *err = plan_err;
        rc = plan_rc;
        goto out;
    }
    /* Pieces were planned newest first: gather each ref's oldest first. */
    for (size_t i = 0; i < rep->nrefs && !rc; i++) {
        mcg_bundle_ref *br = &rep->refs[i];
        if (!want[i].tip[0] || want[i].with >= 0)
            continue;
        size_t total = 0, bad = 0;
        for (size_t k = 0; k < njobs; k++)
            if (jobs[k].ref == i) {
                if (jobs[k].rc) {
                    *err = jobs[k].err;
                    rc = jobs[k].rc;
                    goto out;
                }
                total += jobs[k].vr.n;
                bad += jobs[k].vr.nbad;
            }
        if (bad) {
            /* Refused: the report and reason of one pass over the whole range. */
            mcg_verify_opts o = {want[i].since[0] ? want[i].since : NULL, pool.now, s->q.memo,
                                 s->q.scan};
            if ((rc = mcg_gitops_verify(&br->verify, &s->q, want[i].tip, &o, root, err)) != 0)
                goto out;
            continue;
        }
        br->verify.v = mcg_calloc(total ? total : 1, sizeof(*br->verify.v));
        for (size_t k = njobs; k-- > 0;)
            if (jobs[k].ref == i) {
                memcpy(br->verify.v + br->verify.n, jobs[k].vr.v,
                       jobs[k].vr.n * sizeof(*jobs[k].vr.v));
                br->verify.n += jobs[k].vr.n;
                mcg_verify_report_free(&jobs[k].vr); /* copied: not held twice */
            }
    }
out:
    for (size_t k = 0; k < njobs; k++)
        mcg_verify_report_free(&jobs[k].vr);
    free(jobs);
    pthread_cond_destroy(&pool.cv);
    pthread_mutex_destroy(&pool.mu);
    return rc;
}

static int open_input(int *fd, const char *path, mcg_err *err)
{
    if (!strcmp(path, "-")) {
        *fd = STDIN_FILENO;
        return 0;
    }
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return mcg_err_set(err, errno == ENOENT ? MCG_ENOTFOUND : MCG_EIO, "%s: %s", path,
                           strerror(errno));
    struct stat st;
    if (fstat(*fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        close(*fd);
        *fd = -1;
        return mcg_err_set(err, MCG_EIO, "%s: not a file", path);
    }
    return 0;
}

/* Every check of verify/import, leaving the quarantine in s on success. */
static int check_bundle(session *s, mcg_bundle_report *rep, mcg_repo *r, const char *path,
                        const mcg_signers *root, unsigned flags, mcg_err *err)
{
    bundle_hdr h = {0};
    reader rd = {-1, path, NULL, 0, 0, false};
    git_odb *odb = NULL;
    git_buf objdir = {0};
    progress prog = {(flags & MCG_BUNDLE_PROGRESS) != 0, NULL, -1};
    mcg_model *m = NULL;
    mcg_render *rd_out = NULL;
    mcg_diags diags = {0};
    oidset pack = {0};
    bool strict_off = false;
    vref *want = NULL;
    git_oid *tips = NULL;
    char *src_ref = NULL, *idx = NULL;
    int rc;

    if ((rc = open_input(&rd.fd, path, err)) != 0)
        return rc;
    rd.buf = mcg_malloc(BUNDLE_CHUNK);
    if ((rc = parse_header(&h, &rd, err)) != 0)
        goto out;
    rep->version = h.version;
    for (size_t i = 0; i < h.prereqs.n; i++) {
        char sha[MCG_SHA_HEX + 1];
        git_oid_tostr(sha, sizeof(sha), &h.prereqs.v[i]);
        mcg_strv_push(&rep->prerequisites, sha);
    }
    rep->refs = mcg_calloc(h.nrefs, sizeof(*rep->refs));
    for (size_t i = 0; i < h.nrefs; i++) {
        mcg_bundle_ref *br = &rep->refs[rep->nrefs++];
        br->name = mcg_strdup(h.refs[i].name);
        git_oid_tostr(br->new_sha, sizeof(br->new_sha), &h.refs[i].oid);
    }

    /* Prerequisites must already be here. */
    if (git_repository_odb(&odb, r->git) != 0) {
        rc = mcg_git_err(err, "odb");
        goto out;
    }
    for (size_t i = 0; i < h.prereqs.n; i++) {
        git_commit *c = NULL;
        if (git_commit_lookup(&c, r->git, &h.prereqs.v[i]) != 0) {
            rc = mcg_err_set(err, MCG_ENOTFOUND,
                             "missing prerequisite %s: import the bundle it came after first",
                             rep->prerequisites.v[i]);
            goto out;
        }
        git_commit_free(c);
    }

    /* Quarantine: objects/mcgit-incoming-XXXXXX/pack. */
    if (git_repository_item_path(&objdir, r->git, GIT_REPOSITORY_ITEM_OBJECTS) != 0) {
        rc = mcg_git_err(err, "objects");
        goto out;
    }
    s->objects = mcg_strdup(objdir.ptr);
    quarantine_lock(&s->lockfd, s->objects);
    if ((rc = quarantine_create(s, err)) != 0)
        goto out;
    /*
     * Bounded memory: object reads go through 8 MiB windows, at most 32 MiB
     * mapped (libgit2 1.5's indexer still maps the whole pack file for its
     * delta pass: page cache, not heap), and the parsed-object cache is kept
     * small, since a long history is read once.
     */
    git_libgit2_opts(GIT_OPT_SET_MWINDOW_SIZE, (size_t)(8 * 1024 * 1024));
    git_libgit2_opts(GIT_OPT_SET_MWINDOW_MAPPED_LIMIT, (size_t)(32 * 1024 * 1024));
    git_libgit2_opts(GIT_OPT_SET_CACHE_MAX_SIZE, (ssize_t)(2 * 1024 * 1024));
    if ((rc = index_pack(&s->pack_name, &s->scan, &rd, s->qdir, odb, &prog, rep, err)) != 0)
        goto out;
    /*
     * The indexer has just computed every quarantined object's id from its
     * content: reading them back need not hash each one again (libgit2's
     * strict verification, a third of the cost of reading a tree; git's own
     * fetch does not re-hash what it reads for its connectivity check
     * either). The repo's own objects read meanwhile are few (prerequisites,
     * the signer file below the first new commit). Back on before anything
     * is written.
     */
    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0);
    strict_off = true;
    if ((rc = view_open(&s->q, r, s, err)) != 0 || (rc = view_open(&s->q2, r, s, err)) != 0)
        goto out;
    idx = mcg_sprintf("%s/pack/pack-%s.idx", s->qdir, s->pack_name);
    if ((rc = read_idx_oids(&pack, idx, err)) != 0)
        goto out;
    if ((rc = views_attach_scan(s, &pack, err)) != 0)
        goto out;

    /* Refs: present, and fast-forward only; which ranges to verify. */
    src_ref = mcg_sprintf("refs/heads/%s", r->source_branch);
    want = mcg_calloc(rep->nrefs ? rep->nrefs : 1, sizeof(*want));
    tips = mcg_calloc(rep->nrefs ? rep->nrefs : 1, sizeof(*tips));
    for (size_t i = 0; i < rep->nrefs; i++) {
        mcg_bundle_ref *br = &rep->refs[i];
        git_object *obj = NULL;
        want[i].with = -1;
        git_oid_fromstr(&tips[i], br->new_sha);
        if (git_object_lookup(&obj, s->q.git, &tips[i], GIT_OBJECT_ANY) != 0) {
            rc = mcg_err_set(err, MCG_EINVAL, "incomplete bundle: %s points to missing object %s",
                             br->name, br->new_sha);
            goto out;
        }
        git_object_free(obj);
        if ((rc = classify(br, &s->q, &tips[i], err)) != 0)
            goto out;
        if (br->action != MCG_BUNDLE_CREATE && br->action != MCG_BUNDLE_FORWARD)
            continue;
        if ((rc = peel_commit(want[i].tip, &s->q, br, err)) != 0)
            goto out;
        /*
         * Every new commit is verified. For the source branch the range is
         * the one `mcgit render` will check (since the last verified
         * commit), so the render after the move cannot fail on trust; other
         * refs from their current value.
         */
        bool is_src = !strcmp(br->name, src_ref);
        if (!is_src && br->old_sha[0])
            memcpy(want[i].since, br->old_sha, sizeof(want[i].since));
        effective_since(want[i].eff, &s->q, want[i].tip, want[i].since[0] ? want[i].since : NULL,
                        root);
        if (is_src)
            memcpy(s->source_tip, want[i].tip, sizeof(s->source_tip));
        /* A ref inside the range of an earlier one (a tag on the branch) is verified with it. */
        for (size_t j = 0; j < i && want[i].with < 0; j++)
            if (want[j].tip[0] && want[j].with < 0 && !strcmp(want[j].eff, want[i].eff) &&
                mcg_repo_descends(&s->q, want[j].tip, want[i].tip))
                want[i].with = (ssize_t)j;
        if (want[i].with >= 0)
            br->verified_with = rep->refs[want[i].with].name;
    }

    /* Connectivity and signatures, on two threads. */
    if ((rc = verify_all(s, rep, want, tips, rep->nrefs, &pack, root, &prog, err)) != 0)
        goto out;
    for (size_t i = 0; i < rep->nrefs; i++) {
        const mcg_verify_report *vr = &rep->refs[i].verify;
        if (!vr->nbad)
            continue;
        const mcg_verdict *v = NULL;
        for (size_t j = 0; j < vr->n && !v; j++)
            if (!vr->v[j].good)
                v = &vr->v[j];
        rc = mcg_err_set(err, MCG_ETRUST, "commit %s: %s (%zu of %zu new commit%s refused)", v->sha,
                         v->reason, vr->nbad, vr->n, vr->n == 1 ? "" : "s");
        goto out;
    }

    /* The new source tip must render, as `mcgit render --repo` will. */
    if (s->source_tip[0]) {
        if (mcg_gitops_load_commit(&m, &s->q, s->source_tip, &diags, err) != 0 ||
            mcg_render_model(&rd_out, m, &diags) != 0) {
            rc = mcg_err_set(err, MCG_EINVAL, "commit %s does not render: %s", s->source_tip,
                             diags.count ? diags.msgs[0] : err->msg);
            goto out;
        }
    }
    rep->accepted = true;
out:
    if (strict_off)
        git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 1);
    mcg_render_free(rd_out);
    mcg_model_free(m);
    mcg_diags_free(&diags);
    oidset_free(&pack);
    free(want);
    free(tips);
    free(src_ref);
    free(idx);
    git_buf_dispose(&objdir);
    git_odb_free(odb);
    hdr_free(&h);
    free(rd.buf);
    if (rd.fd >= 0 && rd.fd != STDIN_FILENO)
        close(rd.fd);
    return rc;
}

int mcg_bundle_verify(mcg_bundle_report *rep, mcg_repo *r, const char *path,
                      const mcg_signers *root, unsigned flags, mcg_err *err)
{
    session s = {.lockfd = -1};
    report_reset(rep);
    git_libgit2_init();
    int rc = check_bundle(&s, rep, r, path, root, flags, err);
    session_end(&s);
    git_libgit2_shutdown();
    return rc;
}

/* fsync a file by path. */
static int fsync_path(const char *p)
{
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/*
 * Move qdir/pack/pack-N.{pack,idx} into objects/pack/ (pack first: readers
 * look for the idx). An import killed (-9) between this and move_refs
 * leaves a complete, unreferenced pack: harmless, as after an interrupted
 * git fetch, and gone at the next git gc.
 */
static int move_pack(session *s, mcg_err *err)
{
    static const char *const ext[] = {"pack", "idx"};
    char *dest_dir = mcg_sprintf("%spack", s->objects);
    int rc = 0;
    if ((rc = mcg_mkdirs(dest_dir, 0755, err)) != 0)
        goto out;
    for (size_t i = 0; i < 2 && !rc; i++) {
        char *from = mcg_sprintf("%s/pack/pack-%s.%s", s->qdir, s->pack_name, ext[i]);
        char *to = mcg_sprintf("%s/pack-%s.%s", dest_dir, s->pack_name, ext[i]);
        if (fsync_path(from) != 0 || rename(from, to) != 0)
            rc = mcg_err_set(err, MCG_EIO, "%s: %s", to, strerror(errno));
        free(from);
        free(to);
    }
    mcg_fsync_dir(dest_dir);
out:
    free(dest_dir);
    return rc;
}

/* Move every accepted ref: lock all, compare with what was checked, then set. */
static int move_refs(mcg_repo *r, const mcg_bundle_report *rep, mcg_err *err)
{
    git_transaction *tx = NULL;
    git_signature *sig = NULL;
    int rc = 0;
    if (git_transaction_new(&tx, r->git) != 0 ||
        git_signature_now(&sig, "mcgit", "mcgit@localhost") != 0) {
        rc = mcg_git_err(err, "refs");
        goto out;
    }
    for (size_t i = 0; i < rep->nrefs; i++) {
        const mcg_bundle_ref *br = &rep->refs[i];
        if (br->action != MCG_BUNDLE_CREATE && br->action != MCG_BUNDLE_FORWARD)
            continue;
        git_oid cur, want;
        if (git_transaction_lock_ref(tx, br->name) != 0) {
            rc = mcg_git_err(err, br->name);
            goto out;
        }
        int have = git_reference_name_to_id(&cur, r->git, br->name) == 0;
        char cur_sha[MCG_SHA_HEX + 1] = "";
        if (have)
            git_oid_tostr(cur_sha, sizeof(cur_sha), &cur);
        if (strcmp(cur_sha, br->old_sha) != 0) {
            rc = mcg_err_set(err, MCG_ECONFLICT, "%s changed during the import; nothing moved",
                             br->name);
            goto out;
        }
        git_oid_fromstr(&want, br->new_sha);
        if (git_transaction_set_target(tx, br->name, &want, sig, "mcgit bundle import") != 0) {
            rc = mcg_git_err(err, br->name);
            goto out;
        }
    }
    if (git_transaction_commit(tx) != 0)
        rc = mcg_git_err(err, "refs");
out:
    git_signature_free(sig);
    git_transaction_free(tx); /* unlocks anything not committed */
    return rc;
}

int mcg_bundle_import(mcg_bundle_report *rep, mcg_repo *r, const char *path,
                      const mcg_signers *root, unsigned flags, mcg_diags *diags, mcg_err *err)
{
    session s = {.lockfd = -1};
    mcg_verify_report vr = {0};
    bool any = false, blocked = false;
    sigset_t stop, old;
    report_reset(rep);
    git_libgit2_init();
    int rc = check_bundle(&s, rep, r, path, root, flags, err);
    if (rc)
        goto out;
    for (size_t i = 0; i < rep->nrefs; i++)
        if (rep->refs[i].action == MCG_BUNDLE_CREATE || rep->refs[i].action == MCG_BUNDLE_FORWARD)
            any = true;
    if (!any)
        goto out; /* up to date: nothing to move */
    view_close(&s.q);
    view_close(&s.q2);
    /*
     * From here the import completes, whatever signal comes: pack, refs,
     * verified mark and render, then the signal is delivered.
     */
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    sigaddset(&stop, SIGQUIT);
    blocked = pthread_sigmask(SIG_BLOCK, &stop, &old) == 0;
    if ((rc = move_pack(&s, err)) != 0)
        goto out;
    git_odb *odb = NULL;
    if (git_repository_odb(&odb, r->git) == 0) {
        git_odb_refresh(odb);
        git_odb_free(odb);
    }
    if ((rc = move_refs(r, rep, err)) != 0)
        goto out;
    rep->imported = true;
    if (s.source_tip[0]) {
        /*
         * Every commit up to the new tip was verified above, in the range
         * mcg_gitops_render checks: record it, so the render does not verify
         * the same commits again.
         */
        if ((rc = mcg_gitops_mark_verified(r, s.source_tip, root, err)) == 0)
            rc = mcg_gitops_render(&rep->render, NULL, &vr, r, s.source_tip, root, diags, err);
        if (rc)
            mcg_err_prefix(err, "imported, but the render failed");
        else
            rep->rendered = true;
    }
out:
    mcg_verify_report_free(&vr);
    session_end(&s);
    if (blocked)
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    git_libgit2_shutdown();
    return rc;
}
