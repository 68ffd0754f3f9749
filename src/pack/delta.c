/*
 * delta.c — applying a git delta (pack format, git's
 * Documentation/gitformat-pack.txt): the base's size and the result's size
 * as little-endian base-128 numbers, then instructions — a byte with the
 * high bit set copies a range of the base (offset and length bytes present
 * as its low bits say; length 0 means 0x10000), any other non-zero byte
 * inserts that many literal bytes. The delta comes from an untrusted pack:
 * every range is checked against the base and against the size the delta
 * announced, which is itself capped by the caller.
 *
 * And making one (mcg_pack_delta_create), for thin packs: the base is cut
 * into 16-byte blocks, each indexed by a polynomial hash; a hash of the 16
 * bytes at each position of the target is rolled along, and where it finds
 * a block of the base that really matches, the match is extended forwards
 * (and backwards over bytes not yet emitted) and written as a copy; bytes
 * between copies are inserted literally. Deterministic: same input, same
 * delta.
 */
#include "pack/pack.h"

#include <stdlib.h>
#include <string.h>

/* A size varint of a delta (7 bits per byte, little end first); false when it does not end. */
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

unsigned char *mcg_pack_delta_apply(size_t *outlen, const unsigned char *base, size_t blen,
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

/* ------------------------------------------------------------ making */

#define DELTA_BLOCK 16
#define DELTA_MULT 0x01000193u  /* the rolling hash's multiplier */
#define DELTA_CHAIN 64          /* candidate blocks looked at per position */
#define DELTA_COPY_MAX 0x10000u /* bytes per copy instruction, as git writes them */
#define DELTA_LAZY 1024         /* matches shorter than this look a block ahead for a longer one */

/* The hash of DELTA_BLOCK bytes at p. */
static uint32_t block_hash(const unsigned char *p)
{
    uint32_t h = 0;
    for (int i = 0; i < DELTA_BLOCK; i++)
        h = h * DELTA_MULT + p[i];
    return h;
}

/* A growing delta, abandoned once it exceeds its limit. */
typedef struct delta_out {
    unsigned char *p;
    size_t n, cap, max;
    bool over;
} delta_out;

/* Append n bytes, or mark the delta as over its limit. */
static void dout_put(delta_out *o, const void *b, size_t n)
{
    if (o->over || n > o->max - o->n) {
        o->over = true;
        return;
    }
    if (o->n + n > o->cap) {
        while (o->n + n > o->cap)
            o->cap = o->cap ? o->cap * 2 : 256;
        o->p = mcg_realloc(o->p, o->cap);
    }
    memcpy(o->p + o->n, b, n);
    o->n += n;
}

/* A size as a delta writes it (7 bits per byte, little end first). */
static void dout_varint(delta_out *o, uint64_t v)
{
    unsigned char b[10];
    size_t n = 0;
    do {
        b[n] = v & 0x7f;
        v >>= 7;
        if (v)
            b[n] |= 0x80;
        n++;
    } while (v);
    dout_put(o, b, n);
}

/* Insert instructions for the literal bytes p[0..n). */
static void dout_insert(delta_out *o, const unsigned char *p, size_t n)
{
    while (n && !o->over) {
        unsigned char k = n > 127 ? 127 : (unsigned char)n;
        dout_put(o, &k, 1);
        dout_put(o, p, k);
        p += k;
        n -= k;
    }
}

/* Copy instructions for len bytes of the base at off. */
static void dout_copy(delta_out *o, uint64_t off, uint64_t len)
{
    while (len && !o->over) {
        uint64_t k = len > DELTA_COPY_MAX ? DELTA_COPY_MAX : len;
        unsigned char b[8];
        size_t n = 1;
        b[0] = 0x80;
        for (int i = 0; i < 4; i++)
            if ((off >> (8 * i)) & 0xff) {
                b[0] |= (unsigned char)(1u << i);
                b[n++] = (unsigned char)(off >> (8 * i));
            }
        if (k != 0x10000) /* length 0 stands for 0x10000 */
            for (int i = 0; i < 3; i++)
                if ((k >> (8 * i)) & 0xff) {
                    b[0] |= (unsigned char)(0x10u << i);
                    b[n++] = (unsigned char)(k >> (8 * i));
                }
        dout_put(o, b, n);
        off += k;
        len -= k;
    }
}

/* The base's blocks, hashed: chains of block index + 1 per slot, 0 ending a chain. */
typedef struct delta_index {
    const unsigned char *base;
    size_t blen;
    const uint32_t *head, *next;
    size_t bits;
} delta_index;

/*
 * The longest match of the target at pos (whose block hash is h) among the
 * base's blocks in h's chain: its length (0: none), its offset in *off.
 */
static size_t delta_match(const delta_index *ix, const unsigned char *t, size_t tlen, size_t pos,
                          uint32_t h, size_t *off)
{
    size_t slot = ((uint32_t)(h * 0x9e3779b1u)) >> (32 - ix->bits), best = 0;
    int looked = 0;
    for (uint32_t c = ix->head[slot]; c && looked < DELTA_CHAIN; c = ix->next[c - 1], looked++) {
        size_t b = (size_t)(c - 1) * DELTA_BLOCK, n = 0;
        while (b + n < ix->blen && pos + n < tlen && ix->base[b + n] == t[pos + n])
            n++;
        if (n > best) {
            best = n;
            *off = b;
        }
    }
    return best;
}

unsigned char *mcg_pack_delta_create(size_t *outlen, const unsigned char *base, size_t blen,
                                     const unsigned char *t, size_t tlen, size_t max)
{
    delta_out o = {.max = max};
    size_t nblocks = blen / DELTA_BLOCK, bits = 4;
    while (((size_t)1 << bits) < nblocks && bits < 30)
        bits++;
    size_t nb = (size_t)1 << bits;
    uint32_t *head = NULL, *next = NULL; /* block index + 1; 0 ends a chain */
    uint32_t top = 1;                    /* DELTA_MULT ** (DELTA_BLOCK - 1) */
    if (blen > UINT32_MAX || tlen > UINT32_MAX)
        return NULL;
    for (int i = 1; i < DELTA_BLOCK; i++)
        top *= DELTA_MULT;
    dout_varint(&o, blen);
    dout_varint(&o, tlen);
    if (nblocks) {
        head = mcg_calloc(nb, sizeof(*head));
        next = mcg_calloc(nblocks, sizeof(*next));
        /* the last block of a chain is the first in the base: earlier copies win ties */
        for (size_t k = nblocks; k-- > 0;) {
            size_t slot = (block_hash(base + k * DELTA_BLOCK) * 0x9e3779b1u) >> (32 - bits);
            next[k] = head[slot];
            head[slot] = (uint32_t)k + 1;
        }
    }
    delta_index ix = {base, blen, head, next, bits};
    size_t pos = 0, lit = 0; /* where the target is read; where unwritten literals begin */
    uint32_t h = 0;
    bool have_h = false;
    while (nblocks && pos + DELTA_BLOCK <= tlen && !o.over) {
        if (!have_h) {
            h = block_hash(t + pos);
            have_h = true;
        }
        size_t off = 0, best = delta_match(&ix, t, tlen, pos, h, &off);
        if (best < DELTA_BLOCK) {
            if (pos + DELTA_BLOCK < tlen)
                h = (h - t[pos] * top) * DELTA_MULT + t[pos + DELTA_BLOCK];
            pos++;
            continue;
        }
        /*
         * A short match may be the tail of a better one that starts a few
         * bytes on at a block boundary of the base: look ahead a block.
         */
        for (size_t k = 1; best < DELTA_LAZY && k < DELTA_BLOCK && pos + k + DELTA_BLOCK <= tlen;
             k++) {
            size_t off2 = 0,
                   len2 = delta_match(&ix, t, tlen, pos + k, block_hash(t + pos + k), &off2);
            if (len2 >= DELTA_BLOCK && pos + k + len2 > pos + best) {
                pos += k;
                best = len2;
                off = off2;
                k = 0;
            }
        }
        /* extend backwards over literals not yet written */
        while (pos > lit && off > 0 && base[off - 1] == t[pos - 1]) {
            pos--;
            off--;
            best++;
        }
        dout_insert(&o, t + lit, pos - lit);
        dout_copy(&o, off, best);
        pos += best;
        lit = pos;
        have_h = false;
    }
    dout_insert(&o, t + lit, tlen - lit);
    free(head);
    free(next);
    if (o.over) {
        free(o.p);
        return NULL;
    }
    *outlen = o.n;
    return o.p;
}
