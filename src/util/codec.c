/*
 * codec.c — SHA-256, hex, canonical JSON and the strict decoders that turn
 * Ignition's data: URLs into bytes.
 *
 * Decoders are allow-lists: anything outside the grammar is refused with a
 * message saying what was found, never silently skipped.
 */
#include "util/util.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <string.h>
#include <zlib.h>

void mcg_sha256(const void *data, size_t len, unsigned char out[MCG_SHA256_LEN])
{
    SHA256(data, len, out);
}

void mcg_hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

bool mcg_memeq_ct(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++)
        d |= x[i] ^ y[i];
    return d == 0;
}

static int dump_cb(const char *buffer, size_t size, void *data)
{
    mcg_buf_put(data, buffer, size);
    return 0;
}

int mcg_json_canonical(const json_t *v, mcg_buf *out, mcg_err *err)
{
    if (json_dump_callback(v, dump_cb, out, JSON_SORT_KEYS | JSON_INDENT(2) | JSON_ENCODE_ANY) != 0)
        return mcg_err_set(err, MCG_EINVAL, "cannot serialise JSON");
    mcg_buf_putc(out, '\n');
    return 0;
}

static int b64val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

int mcg_base64_decode(const char *in, size_t len, mcg_buf *out, mcg_err *err)
{
    if (len % 4 != 0)
        return mcg_err_set(err, MCG_EINVAL, "invalid base64: length %zu is not a multiple of 4",
                           len);
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            unsigned char c = (unsigned char)in[i + j];
            if (c == '=' && i + 4 == len && j >= 2) {
                v[j] = 0;
                pad++;
                continue;
            }
            if (pad)
                return mcg_err_set(err, MCG_EINVAL, "invalid base64: data after padding");
            v[j] = b64val(c);
            if (v[j] < 0)
                return mcg_err_set(err, MCG_EINVAL, "invalid base64: unexpected character at %zu",
                                   i + (size_t)j);
        }
        unsigned char o[3];
        o[0] = (unsigned char)(v[0] << 2 | v[1] >> 4);
        o[1] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
        o[2] = (unsigned char)((v[2] & 3) << 6 | v[3]);
        /* Non-canonical encodings (stray bits under the padding) are refused. */
        if ((pad == 2 && (v[1] & 15)) || (pad == 1 && (v[2] & 3)))
            return mcg_err_set(err, MCG_EINVAL, "invalid base64: non-zero padding bits");
        mcg_buf_put(out, o, (size_t)(3 - pad));
    }
    return 0;
}

void mcg_base64_encode(const unsigned char *in, size_t len, mcg_buf *out)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < len)
            v |= in[i + 2];
        char q[4] = {tbl[v >> 18 & 63], tbl[v >> 12 & 63], tbl[v >> 6 & 63], tbl[v & 63]};
        if (i + 1 >= len)
            q[2] = '=';
        if (i + 2 >= len)
            q[3] = '=';
        mcg_buf_put(out, q, 4);
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int mcg_dataurl_decode(const char *url, mcg_buf *out, mcg_err *err)
{
    if (strncmp(url, "data:", 5) != 0)
        return mcg_err_set(err, MCG_EINVAL, "only data: URLs are supported");
    const char *meta = url + 5;
    const char *comma = strchr(meta, ',');
    if (!comma)
        return mcg_err_set(err, MCG_EINVAL, "invalid data URL: no ','");
    size_t mlen = (size_t)(comma - meta);
    bool b64 = mlen >= 7 && memcmp(comma - 7, ";base64", 7) == 0;
    const char *data = comma + 1;
    if (b64)
        return mcg_base64_decode(data, strlen(data), out, err)
                   ? mcg_err_prefix(err, "invalid data URL")
                   : 0;
    for (const char *p = data; *p; p++) {
        if (*p == '%') {
            int hi = hexval(p[1]), lo = hi < 0 ? -1 : hexval(p[2]);
            if (hi < 0 || lo < 0)
                return mcg_err_set(err, MCG_EINVAL,
                                   "invalid data URL: bad percent escape at offset %zu",
                                   (size_t)(p - url));
            mcg_buf_putc(out, (char)(hi << 4 | lo));
            p += 2;
        } else {
            mcg_buf_putc(out, *p);
        }
    }
    return 0;
}

void mcg_dataurl_encode(const unsigned char *in, size_t len, mcg_buf *out)
{
    static const char digits[] = "0123456789ABCDEF";
    mcg_buf_puts(out, "data:,");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = in[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            (c && strchr("-_.~", c))) {
            mcg_buf_putc(out, (char)c);
        } else {
            char e[3] = {'%', digits[c >> 4], digits[c & 15]};
            mcg_buf_put(out, e, 3);
        }
    }
}

int mcg_gunzip(const unsigned char *in, size_t len, size_t limit, mcg_buf *out, mcg_err *err)
{
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
        return mcg_err_set(err, MCG_EIO, "cannot start gzip decoder");
    zs.next_in = (unsigned char *)in;
    zs.avail_in = (uInt)len;
    unsigned char chunk[16384];
    int rc = 0, zr;
    do {
        zs.next_out = chunk;
        zs.avail_out = sizeof(chunk);
        zr = inflate(&zs, Z_NO_FLUSH);
        if (zr != Z_OK && zr != Z_STREAM_END) {
            rc = mcg_err_set(err, MCG_EINVAL, "invalid gzip data%s%s", zs.msg ? ": " : "",
                             zs.msg ? zs.msg : "");
            goto out;
        }
        size_t got = sizeof(chunk) - zs.avail_out;
        if (out->len + got > limit) {
            rc = mcg_err_set(err, MCG_ENOMEM, "gzip data expands beyond %zu bytes", limit);
            goto out;
        }
        mcg_buf_put(out, chunk, got);
        if (zr != Z_STREAM_END && got == 0 && zs.avail_in == 0) {
            rc = mcg_err_set(err, MCG_EINVAL, "invalid gzip data: truncated");
            goto out;
        }
    } while (zr != Z_STREAM_END);
    if (zs.avail_in != 0)
        rc = mcg_err_set(err, MCG_EINVAL, "invalid gzip data: trailing bytes");
out:
    inflateEnd(&zs);
    return rc;
}

bool mcg_path_is_clean_abs(const char *p)
{
    if (!p || p[0] != '/' || p[1] == '\0')
        return false;
    const char *c = p + 1;
    for (;;) {
        const char *e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if (n == 0)
            return false; /* "//" or trailing '/' */
        if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        if (!e)
            return true;
        c = e + 1;
    }
}
