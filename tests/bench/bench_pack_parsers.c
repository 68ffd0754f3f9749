/*
 * bench_pack_parsers.c — time against input size for the parsers of
 * untrusted pack and bundle bytes: the bundle header (refs only, so the
 * duplicate check dominates), raw tree entries, delta application and the
 * pack scan. Each input doubles three times; a linear parser keeps its
 * cost per byte flat, a quadratic one doubles it each step. Prints one line
 * per size and, per parser, the ratio of the largest input's ns/byte to the
 * smallest's (about 1 when linear).
 *
 *   build/tests/bench/bench_pack_parsers
 *
 * Not run by ctest; figures in docs/PERFORMANCE.md ("Parser cost").
 */
#include "bundle/bundle_int.h"
#include "pack/pack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#define H40 "0123456789abcdef0123456789abcdef01234567"

/* Monotonic seconds. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A header of n distinct refs. */
static void make_header(mcg_buf *b, size_t n)
{
    mcg_buf_puts(b, "# v2 git bundle\n");
    for (size_t i = 0; i < n; i++)
        mcg_buf_printf(b, H40 " refs/heads/branch-%zu\n", i);
    mcg_buf_putc(b, '\n');
}

/* Parse the header in b once; its time. */
static double run_header(const mcg_buf *b)
{
    mcg_bundle_hdr h = {0};
    mcg_bundle_reader rd;
    mcg_err err = {0};
    mcg_bundle_reader_mem(&rd, "bench", b->ptr, b->len);
    double t0 = now();
    if (mcg_bundle_hdr_parse(&h, &rd, &err) != 0) {
        fprintf(stderr, "header: %s\n", err.msg);
        exit(1);
    }
    double t = now() - t0;
    mcg_bundle_hdr_free(&h);
    return t;
}

/* A raw tree of n entries. */
static void make_tree(mcg_buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mcg_buf_printf(b, "100644 file-%08zu", i);
        mcg_buf_putc(b, '\0');
        mcg_buf_put(b, H40, 20);
    }
}

/* Walk every entry of the tree in b; its time. */
static double run_tree(const mcg_buf *b)
{
    const unsigned char *p = (const unsigned char *)b->ptr, *end = p + b->len;
    mcg_pack_tree_entry e;
    size_t n = 0;
    double t0 = now();
    while (p < end && mcg_pack_tree_entry_next(&e, &p, end))
        n++;
    double t = now() - t0;
    if (p != end || !n)
        exit(1);
    return t;
}

/* A base of 64 KiB and a delta making n bytes of it: alternate copies and inserts. */
static void make_delta(mcg_buf *d, unsigned char **base, size_t *blen, size_t n)
{
    *blen = 65536;
    *base = mcg_malloc(*blen);
    for (size_t i = 0; i < *blen; i++)
        (*base)[i] = (unsigned char)(i * 31);
    unsigned char v[10];
    size_t k = 0;
    for (uint64_t x = *blen; k == 0 || x; x >>= 7)
        v[k++] = (unsigned char)((x & 127) | (x >> 7 ? 128 : 0));
    mcg_buf_put(d, v, k);
    k = 0;
    for (uint64_t x = n; k == 0 || x; x >>= 7)
        v[k++] = (unsigned char)((x & 127) | (x >> 7 ? 128 : 0));
    mcg_buf_put(d, v, k);
    for (size_t made = 0; made < n;) {
        if ((made / 64) % 2 == 0 && n - made >= 64) {
            unsigned char c[4] = {0x80 | 0x01 | 0x02 | 0x10, (unsigned char)(made & 0xff),
                                  (unsigned char)((made >> 8) & 0x7f), 64};
            mcg_buf_put(d, c, 4);
            made += 64;
        } else {
            size_t take = n - made < 32 ? n - made : 32;
            mcg_buf_putc(d, (char)take);
            for (size_t i = 0; i < take; i++)
                mcg_buf_putc(d, 'x');
            made += take;
        }
    }
}

/* Apply the delta; its time. */
static double run_delta(const mcg_buf *d, const unsigned char *base, size_t blen, size_t n)
{
    size_t len = 0;
    double t0 = now();
    unsigned char *out =
        mcg_pack_delta_apply(&len, base, blen, (const unsigned char *)d->ptr, d->len, n);
    double t = now() - t0;
    if (!out || len != n)
        exit(1);
    free(out);
    return t;
}

/* One pack entry: type, size header, zlib data. */
static void pack_entry(mcg_buf *b, int type, const void *data, size_t len)
{
    unsigned char h[16];
    size_t n = 0;
    uint64_t size = len;
    unsigned char c = (unsigned char)(type << 4 | (size & 15));
    for (size >>= 4; size; size >>= 7) {
        h[n++] = c | 0x80;
        c = size & 0x7f;
    }
    h[n++] = c;
    mcg_buf_put(b, h, n);
    uLongf zlen = compressBound((uLong)len);
    unsigned char *z = mcg_malloc(zlen);
    if (compress2(z, &zlen, data, (uLong)len, 1) != Z_OK)
        exit(1);
    mcg_buf_put(b, z, zlen);
    free(z);
}

/* A pack of n small blobs and a tree per 16 of them naming them (trailer not checked). */
static void make_pack(mcg_buf *b, size_t n)
{
    size_t ntrees = n / 16, total = n + ntrees;
    unsigned char head[12] = {'P', 'A', 'C', 'K', 0, 0, 0, 2};
    for (int i = 0; i < 4; i++)
        head[8 + i] = (unsigned char)(total >> (24 - 8 * i));
    mcg_buf_put(b, head, 12);
    mcg_buf tree = MCG_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        char blob[64];
        int len = snprintf(blob, sizeof(blob), "blob number %zu\n", i);
        pack_entry(b, 3, blob, (size_t)len);
        git_oid id;
        git_odb_hash(&id, blob, (size_t)len, GIT_OBJECT_BLOB);
        mcg_buf_printf(&tree, "100644 f%02zu", i % 16);
        mcg_buf_putc(&tree, '\0');
        mcg_buf_put(&tree, id.id, 20);
        if (i % 16 == 15) {
            pack_entry(b, 2, tree.ptr, tree.len);
            tree.len = 0;
        }
    }
    mcg_buf_put(b, H40, 20); /* a trailer's place */
    mcg_buf_free(&tree);
}

/* Scan the pack in 256 KiB chunks, as an import feeds it; its time. */
static double run_scan(const mcg_buf *b)
{
    double t0 = now();
    mcg_pack_scanner *p = mcg_pack_scan_start();
    for (size_t off = 0; off < b->len; off += 256 * 1024)
        mcg_pack_scan_feed(p, b->ptr + off, b->len - off < 256 * 1024 ? b->len - off : 256 * 1024);
    mcg_packscan *s = mcg_pack_scan_finish(p);
    double t = now() - t0;
    mcg_packscan_free(s);
    return t;
}

/* The fastest of three runs of expr, into var. */
#define BEST(var, expr)                                                                            \
    do {                                                                                           \
        (var) = 1e9;                                                                               \
        for (int r_ = 0; r_ < 3; r_++) {                                                           \
            double t_ = (expr);                                                                    \
            if (t_ < (var))                                                                        \
                (var) = t_;                                                                        \
        }                                                                                          \
    } while (0)

/* Print one size's line; its ns per byte. */
static double report(const char *what, size_t bytes, double secs)
{
    double ns = secs * 1e9 / (double)bytes;
    printf("%-14s %10zu bytes %9.4f s %8.2f ns/byte\n", what, bytes, secs, ns);
    return ns;
}

int main(void)
{
    git_libgit2_init();
    double first = 0, last = 0, t = 0;
    for (size_t k = 0, n = 12500; k < 4; k++, n *= 2) {
        mcg_buf b = MCG_BUF_INIT;
        make_header(&b, n);
        BEST(t, run_header(&b));
        last = report("bundle header", b.len, t);
        if (!k)
            first = last;
        mcg_buf_free(&b);
    }
    printf("bundle header: x%.2f ns/byte from 1x to 8x the size\n", last / first);
    for (size_t k = 0, n = 32000; k < 4; k++, n *= 2) {
        mcg_buf b = MCG_BUF_INIT;
        make_tree(&b, n);
        BEST(t, run_tree(&b));
        last = report("tree entries", b.len, t);
        if (!k)
            first = last;
        mcg_buf_free(&b);
    }
    printf("tree entries: x%.2f ns/byte from 1x to 8x the size\n", last / first);
    for (size_t k = 0, n = 1u << 20; k < 4; k++, n *= 2) {
        mcg_buf d = MCG_BUF_INIT;
        unsigned char *base = NULL;
        size_t blen = 0;
        make_delta(&d, &base, &blen, n);
        BEST(t, run_delta(&d, base, blen, n));
        last = report("delta apply", n, t);
        if (!k)
            first = last;
        free(base);
        mcg_buf_free(&d);
    }
    printf("delta apply: x%.2f ns/byte from 1x to 8x the size\n", last / first);
    for (size_t k = 0, n = 20000; k < 4; k++, n *= 2) {
        mcg_buf b = MCG_BUF_INIT;
        make_pack(&b, n);
        BEST(t, run_scan(&b));
        last = report("pack scan", b.len, t);
        if (!k)
            first = last;
        mcg_buf_free(&b);
    }
    printf("pack scan: x%.2f ns/byte from 1x to 8x the size\n", last / first);
    git_libgit2_shutdown();
    return 0;
}
