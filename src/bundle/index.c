/*
 * index.c — the bundle's pack indexed into the quarantine by libgit2's
 * indexer, chunk by chunk as it is read, and the same bytes handed to a
 * pack scan (pack/scan*.c) on a second thread, which reads every commit,
 * tree and tag as it goes by and checks the commits' signatures meanwhile.
 * Before the indexer resolves a delta, the scan's declared sizes bound what
 * that will take (check_sizes), and the pack's delta graph is resolved
 * (pack/graph.c: libgit2 1.5.1 loops for ever on a delta whose result is
 * its own base, or on any cycle).
 */
#include "bundle/bundle_int.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A big-endian 32-bit number at p. */
static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/*
 * The pack's own checksum, computed as it streams by: SHA-1 of everything
 * but the last 20 bytes, which are held back until the next chunk shows
 * they were not the end.
 */
typedef struct pack_sum {
    EVP_MD_CTX *md;
    unsigned char tail[GIT_OID_RAWSZ];
    size_t ntail;
} pack_sum;

/* Feed n more pack bytes. */
static void pack_sum_feed(pack_sum *c, const unsigned char *p, size_t n)
{
    if (!c->md)
        return;
    if (n >= GIT_OID_RAWSZ) {
        EVP_DigestUpdate(c->md, c->tail, c->ntail);
        EVP_DigestUpdate(c->md, p, n - GIT_OID_RAWSZ);
        memcpy(c->tail, p + n - GIT_OID_RAWSZ, GIT_OID_RAWSZ);
        c->ntail = GIT_OID_RAWSZ;
        return;
    }
    if (c->ntail + n > GIT_OID_RAWSZ) {
        size_t out = c->ntail + n - GIT_OID_RAWSZ; /* at most ntail, as n < 20 */
        EVP_DigestUpdate(c->md, c->tail, out);
        memmove(c->tail, c->tail + out, c->ntail - out);
        c->ntail -= out;
    }
    memcpy(c->tail + c->ntail, p, n);
    c->ntail += n;
}

/* Whether the pack ended in the checksum of what came before. */
static bool pack_sum_ok(pack_sum *c)
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    return c->md && c->ntail == GIT_OID_RAWSZ && EVP_DigestFinal_ex(c->md, d, &len) == 1 &&
           len == GIT_OID_RAWSZ && memcmp(d, c->tail, GIT_OID_RAWSZ) == 0;
}

/*
 * Bounded memory: libgit2's indexer allocates each delta's result at the
 * size the delta declares when it resolves it, so a small pack of copy
 * instructions can ask for gigabytes. Before any delta is resolved, the
 * scan's sizes (pack/scan.c: every object's declared inflated size) are
 * checked: no object may exceed MAX_OBJECT (the largest file mcgit reads
 * from a tree), and all together no more than INFLATE_RATIO times the pack
 * plus INFLATE_FLOOR — far more than text history compresses by (a config
 * repository's pack inflates 3 to 30 times), far less than a delta bomb.
 */
#define MAX_OBJECT ((uint64_t)MCG_MAX_SOURCE_FILE)
#define INFLATE_RATIO 1024u
#define INFLATE_FLOOR ((uint64_t)256 * 1024 * 1024)

static int check_sizes(mcg_pack_scanner *pre, uint64_t pack_bytes, mcg_err *err)
{
    mcg_pack_sizes z;
    /* what was parsed counts even when the rest does not parse */
    bool whole = mcg_pack_scan_sizes(pre, &z);
    if (z.largest > MAX_OBJECT)
        return mcg_err_set(err, MCG_EINVAL,
                           "refused before indexing: the object at offset %llu of the bundle's "
                           "pack would inflate to %llu bytes, over the limit of %llu for one "
                           "object (a delta bomb?)",
                           (unsigned long long)z.largest_off, (unsigned long long)z.largest,
                           (unsigned long long)MAX_OBJECT);
    uint64_t budget = pack_bytes > (UINT64_MAX - INFLATE_FLOOR) / INFLATE_RATIO
                          ? UINT64_MAX
                          : INFLATE_FLOOR + pack_bytes * INFLATE_RATIO;
    if (z.total > budget)
        return mcg_err_set(err, MCG_EINVAL,
                           "refused before indexing: the bundle's %llu-byte pack would inflate "
                           "to %llu bytes, over its budget of %llu (%u times its size and "
                           "256 MiB)",
                           (unsigned long long)pack_bytes, (unsigned long long)z.total,
                           (unsigned long long)budget, INFLATE_RATIO);
    if (!whole)
        return mcg_err_set(err, MCG_EINVAL,
                           "damaged or truncated bundle: its pack does not parse to its end "
                           "(refused before indexing)");
    return 0;
}

/*
 * The delta graph, resolved before the indexer resolves anything: a delta
 * on itself, a cycle, a chain deeper than MCG_PACK_MAX_CHAIN or an object
 * made twice is refused; a base nobody has keeps the thin-pack message.
 */
static int check_graph(mcg_pack_graph *g, git_odb *odb, mcg_err *err)
{
    mcg_pack_limits lim = {.max_object = MAX_OBJECT,
                           .ratio = INFLATE_RATIO,
                           .floor = INFLATE_FLOOR,
                           .max_depth = MCG_PACK_MAX_CHAIN};
    git_oid base;
    mcg_err e = {0};
    int rc = mcg_pack_graph_check(g, odb, &lim, "the bundle's pack", &base, &e);
    if (rc == MCG_ENOTFOUND) {
        char sha[GIT_OID_HEXSZ + 1];
        git_oid_tostr(sha, sizeof(sha), &base);
        return mcg_err_set(err, MCG_ENOTFOUND,
                           "missing delta base %s: the bundle's pack is thin and this "
                           "repository lacks an object it builds on (import the bundles "
                           "before it first), or its deltas build on each other in a cycle",
                           sha);
    }
    if (rc)
        mcg_err_set(err, rc, "%s", e.msg);
    return rc;
}

/* The indexer's progress: objects received, then deltas resolved. */
static int indexer_progress_cb(const git_indexer_progress *s, void *payload)
{
    const mcg_bundle_progress *p = payload;
    if (s->total_deltas && s->indexed_deltas)
        mcg_bundle_tick(p, "resolving deltas", s->indexed_deltas, s->total_deltas);
    else
        mcg_bundle_tick(p, "receiving objects", s->received_objects, s->total_objects);
    return 0;
}

int mcg_bundle_index_pack(char **name, mcg_packscan **scan, mcg_bundle_reader *rd, const char *q,
                          const char *objects, git_odb *odb, const mcg_bundle_progress *prog,
                          mcg_bundle_report *rep, mcg_err *err)
{
    git_indexer *idx = NULL;
    mcg_pack_graph *graph = NULL;
    mcg_pack_scanner *pre = mcg_pack_scan_start();
    git_indexer_options o;
    git_indexer_progress stats = {0};
    char *packdir = mcg_sprintf("%s/pack", q);
    pack_sum sum = {.md = EVP_MD_CTX_new()};
    int rc = 0;
    *name = NULL;
    /* not GIT_INDEXER_OPTIONS_INIT: it leaves fields to the compiler */
    git_indexer_options_init(&o, GIT_INDEXER_OPTIONS_VERSION);
    if (sum.md && EVP_DigestInit_ex(sum.md, EVP_sha1(), NULL) != 1) {
        EVP_MD_CTX_free(sum.md);
        sum.md = NULL;
    }
    /* a thin pack's deltas on the repository's objects: the scan reads those bases too */
    mcg_pack_scan_bases(pre, objects);
    /*
     * No o.verify: libgit2 1.5's connectivity check leaks every object the
     * repo already has. connect.c does the same check instead.
     */
    if (prog && prog->fn) {
        o.progress_cb = indexer_progress_cb;
        o.progress_cb_payload = (void *)prog;
    }
    if ((rc = mcg_pack_graph_new(&graph, q, err)) != 0)
        goto out;
    if (git_indexer_new(&idx, packdir, 0444, odb, &o) != 0) {
        rc = mcg_git_err(err, "indexer");
        goto out;
    }
    for (;;) {
        if ((rc = mcg_bundle_reader_fill(rd, err)) != 0)
            goto out;
        if (rd->eof)
            break;
        size_t n = rd->len - rd->pos;
        mcg_pack_scan_feed(pre, rd->buf + rd->pos, n);
        mcg_pack_graph_feed(graph, rd->buf + rd->pos, n);
        pack_sum_feed(&sum, (const unsigned char *)rd->buf + rd->pos, n);
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
    if ((rc = check_sizes(pre, rep->pack_bytes, err)) != 0 ||
        (rc = check_graph(graph, odb, err)) != 0)
        goto out;
    if (git_indexer_commit(idx, &stats) != 0) {
        const git_error *e = git_error_last();
        rc = mcg_err_set(err, MCG_EINVAL, "damaged or truncated bundle: %s",
                         e && e->message ? e->message : "indexer error");
        /* an intact thin pack whose delta base this repository lacks: say which */
        mcg_packscan *s = pack_sum_ok(&sum) ? mcg_pack_scan_finish(pre) : NULL;
        git_oid base;
        if (s)
            pre = NULL;
        if (mcg_packscan_missing_base(s, odb, &base)) {
            char sha[GIT_OID_HEXSZ + 1];
            git_oid_tostr(sha, sizeof(sha), &base);
            rc = mcg_err_set(err, MCG_ENOTFOUND,
                             "missing delta base %s: the bundle's pack is thin and this "
                             "repository lacks an object it builds on (import the bundles "
                             "before it first)",
                             sha);
        }
        mcg_packscan_free(s);
        goto out;
    }
    rep->objects = stats.total_objects;
    *name = mcg_strdup(git_indexer_name(idx));
    *scan = mcg_pack_scan_finish(pre);
    rep->prechecked = mcg_packscan_checked(*scan);
    pre = NULL;
out:
    mcg_pack_scan_abort(pre);
    mcg_bundle_tick(prog, NULL, 0, 0);
    git_indexer_free(idx);
    mcg_pack_graph_free(graph);
    EVP_MD_CTX_free(sum.md);
    free(packdir);
    return rc;
}

/*
 * The object ids of a pack, read from its .idx (version 2: magic, version,
 * 256 fan-out counts, then the sorted ids) — the index libgit2 just wrote.
 */
int mcg_bundle_read_idx_oids(mcg_oidmap *out, const char *idx, mcg_err *err)
{
    unsigned char head[8 + 256 * 4];
    unsigned char raw[256 * GIT_OID_RAWSZ];
    int rc = 0;
    FILE *f = fopen(idx, "rbe");
    if (!f)
        return mcg_err_set_os(err, MCG_EIO, errno, "%s", idx);
    if (fread(head, 1, sizeof(head), f) != sizeof(head) || memcmp(head, "\377tOc", 4) ||
        be32(head + 4) != 2) {
        rc = mcg_err_set(err, MCG_EIO, "%s: not a version 2 pack index", idx);
        goto out;
    }
    uint32_t n = be32(head + 8 + 255 * 4);
    mcg_oidmap_reserve(out, n);
    for (uint32_t i = 0; i < n;) {
        size_t want = n - i < 256 ? n - i : 256;
        if (fread(raw, GIT_OID_RAWSZ, want, f) != want) {
            rc = mcg_err_set(err, MCG_EIO, "%s: truncated", idx);
            goto out;
        }
        for (size_t j = 0; j < want; j++, i++) {
            git_oid oid;
            git_oid_fromraw(&oid, raw + j * GIT_OID_RAWSZ);
            mcg_oidmap_put(out, &oid, 0);
        }
    }
out:
    fclose(f);
    return rc;
}
