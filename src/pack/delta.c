/*
 * delta.c — applying a git delta (pack format, git's
 * Documentation/gitformat-pack.txt): the base's size and the result's size
 * as little-endian base-128 numbers, then instructions — a byte with the
 * high bit set copies a range of the base (offset and length bytes present
 * as its low bits say; length 0 means 0x10000), any other non-zero byte
 * inserts that many literal bytes. The delta comes from an untrusted pack:
 * every range is checked against the base and against the size the delta
 * announced, which is itself capped by the caller.
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
