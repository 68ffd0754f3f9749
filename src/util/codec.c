/*
 * codec.c — SHA-256, hex, canonical JSON, a strict JSON reader for
 * rendered specs, and the strict decoders that turn Ignition's data: URLs
 * into bytes.
 *
 * Decoders are allow-lists: anything outside the grammar is refused with a
 * message saying what was found, never silently skipped. The ones on the
 * agent's path (JSON, base64, percent) work on whole runs of bytes and
 * reserve their output once.
 */
#include "util/util.h"

#include <errno.h>
#include <math.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

/* ------------------------------------------------------------ JSON reader */

/*
 * A recursive-descent reader over the whole buffer. jansson's own reader
 * pulls every byte through a stream with a UTF-8 check and appends it to a
 * string buffer one at a time; here a string without escapes or non-ASCII
 * bytes (all of base64, most of everything else) is found by a tight scan
 * and copied once into its json_t. Depth counts every value, as jansson's
 * does, so the same texts hit the limit.
 */

#define JSON_MAX_DEPTH 2048

typedef struct {
    const unsigned char *p, *end;
    int line;
    int depth;
    const char *what;
    mcg_err *err;
    mcg_buf tmp; /* a string with escapes or non-ASCII bytes, decoded */
    bool failed;
} jreader;

static void jfail(jreader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jfail(jreader *r, const char *fmt, ...)
{
    if (r->failed)
        return;
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    mcg_err_set(r->err, MCG_EINVAL, "%s:%d: invalid JSON: %s", r->what, r->line, msg);
    r->failed = true;
}

static void jskip_ws(jreader *r)
{
    for (; r->p < r->end; r->p++) {
        unsigned char c = *r->p;
        if (c == '\n')
            r->line++;
        else if (c != ' ' && c != '\t' && c != '\r')
            break;
    }
}

/* Length of the valid UTF-8 sequence at p (non-ASCII lead byte), or 0. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned char c = p[0];
    size_t n;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0; /* continuation byte, overlong lead (C0, C1) or beyond U+10FFFF */
    }
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3Fu);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static void utf8_put(mcg_buf *b, uint32_t cp)
{
    char o[4];
    size_t n;
    if (cp < 0x80) {
        o[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        o[0] = (char)(0xF0 | cp >> 18);
        o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
        o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    mcg_buf_put(b, o, n);
}

/* Four hex digits at p (p + 4 <= end checked by the caller), or -1. */
static long hex4(const unsigned char *p)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hexval((char)p[i]);
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

static bool jplain(unsigned char c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/*
 * Skip plain string bytes from p: eight at a time while no byte of the
 * word can end the scan (the bit tricks never miss such a byte; they may
 * stop early, and the byte loop then decides), then one at a time.
 */
static const unsigned char *jplain_run(const unsigned char *p, const unsigned char *end)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    while (end - p >= 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
        uint64_t stop = ((q - ones) & ~q) | ((b - ones) & ~b) | (x - ones * 0x20) | x;
        if (stop & high)
            break;
        p += 8;
    }
    while (p < end && jplain(*p))
        p++;
    return p;
}

/*
 * The escape at *p (a backslash) of a string, decoded into r->tmp; *p
 * moves past it. False (r failed) when it is invalid.
 */
static bool jescape(jreader *r, const unsigned char **pp)
{
    const unsigned char *p = *pp, *end = r->end;
    if (end - p < 2) {
        jfail(r, "premature end of input in a string");
        return false;
    }
    char e = (char)p[1];
    const char *simple = strchr("\"\\/bfnrt", e);
    if (e && simple) {
        static const char repl[] = "\"\\/\b\f\n\r\t";
        mcg_buf_putc(&r->tmp, repl[simple - "\"\\/bfnrt"]);
        *pp = p + 2;
        return true;
    }
    long cp = e == 'u' && end - p >= 6 ? hex4(p + 2) : -1;
    if (cp < 0) {
        jfail(r, "invalid escape in a string");
        return false;
    }
    p += 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        long lo = end - p >= 6 && p[0] == '\\' && p[1] == 'u' ? hex4(p + 2) : -1;
        if (lo < 0xDC00 || lo > 0xDFFF) {
            jfail(r, "invalid Unicode '\\u%04lX'", cp);
            return false;
        }
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        p += 6;
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        jfail(r, "invalid Unicode '\\u%04lX'", cp);
        return false;
    } else if (cp == 0) {
        jfail(r, "\\u0000 is not allowed");
        return false;
    }
    utf8_put(&r->tmp, (uint32_t)cp);
    *pp = p;
    return true;
}

/*
 * The string at r->p (its opening quote). *s points into the input (no
 * escapes: the common case) or into r->tmp, valid until the next string;
 * not NUL-terminated.
 */
static bool jstring(jreader *r, const char **s, size_t *n)
{
    const unsigned char *p = r->p + 1, *start = p, *end = r->end;
    p = jplain_run(p, end);
    if (p < end && *p == '"') {
        *s = (const char *)start;
        *n = (size_t)(p - start);
        r->p = p + 1;
        return true;
    }
    r->tmp.len = 0;
    mcg_buf_put(&r->tmp, start, (size_t)(p - start));
    for (;;) {
        if (p >= end) {
            jfail(r, "premature end of input in a string");
            return false;
        }
        unsigned char c = *p;
        if (c == '"')
            break;
        if (c < 0x20) {
            jfail(r, "control character 0x%x in a string", c);
            return false;
        }
        if (c >= 0x80) {
            size_t k = utf8_seq(p, end);
            if (!k) {
                jfail(r, "invalid UTF-8 in a string");
                return false;
            }
            mcg_buf_put(&r->tmp, p, k);
            p += k;
        } else if (c != '\\') {
            const unsigned char *q = jplain_run(p, end);
            mcg_buf_put(&r->tmp, p, (size_t)(q - p));
            p = q;
        } else if (!jescape(r, &p)) {
            return false;
        }
    }
    *s = r->tmp.ptr ? r->tmp.ptr : "";
    *n = r->tmp.len;
    r->p = p + 1;
    return true;
}

static bool jdigit(const jreader *r, const unsigned char *p)
{
    return p < r->end && *p >= '0' && *p <= '9';
}

static json_t *jnumber(jreader *r)
{
    const unsigned char *p = r->p;
    bool real = false;
    if (*p == '-')
        p++;
    if (jdigit(r, p) && *p == '0')
        p++;
    else if (jdigit(r, p))
        while (jdigit(r, p))
            p++;
    else
        goto bad;
    if (p < r->end && *p == '.') {
        if (!jdigit(r, ++p))
            goto bad;
        while (jdigit(r, p))
            p++;
        real = true;
    }
    if (p < r->end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < r->end && (*p == '+' || *p == '-'))
            p++;
        if (!jdigit(r, p))
            goto bad;
        while (jdigit(r, p))
            p++;
        real = true;
    }
    r->tmp.len = 0;
    mcg_buf_put(&r->tmp, r->p, (size_t)(p - r->p));
    r->p = p;
    errno = 0;
    if (!real) {
        long long v = strtoll(r->tmp.ptr, NULL, 10);
        if (errno == ERANGE) {
            jfail(r, "too big %sinteger", v < 0 ? "negative " : "");
            return NULL;
        }
        return json_integer((json_int_t)v);
    }
    double d = strtod(r->tmp.ptr, NULL); /* the C locale: mcgit never sets another */
    if (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL)) {
        jfail(r, "real number overflow");
        return NULL;
    }
    return json_real(d);
bad:
    jfail(r, "invalid number");
    return NULL;
}

static json_t *jvalue(jreader *r);

static json_t *jarray(jreader *r)
{
    json_t *a = json_array();
    r->p++;
    jskip_ws(r);
    if (r->p < r->end && *r->p == ']') {
        r->p++;
        return a;
    }
    for (;;) {
        json_t *v = jvalue(r);
        if (!v)
            goto bad;
        json_array_append_new(a, v);
        jskip_ws(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            jskip_ws(r);
            continue;
        }
        if (r->p < r->end && *r->p == ']') {
            r->p++;
            return a;
        }
        jfail(r, "',' or ']' expected");
        goto bad;
    }
bad:
    json_decref(a);
    return NULL;
}

static json_t *jobject(jreader *r)
{
    json_t *o = json_object();
    char *key = NULL;
    r->p++;
    jskip_ws(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        return o;
    }
    for (;;) {
        const char *k;
        size_t kn;
        if (r->p >= r->end || *r->p != '"') {
            jfail(r, "string expected as an object key");
            goto bad;
        }
        if (!jstring(r, &k, &kn))
            goto bad;
        key = mcg_strndup(k, kn); /* r->tmp is reused by the value */
        if (json_object_get(o, key)) {
            jfail(r, "duplicate object key '%.60s'", key);
            goto bad;
        }
        jskip_ws(r);
        if (r->p >= r->end || *r->p != ':') {
            jfail(r, "':' expected");
            goto bad;
        }
        r->p++;
        jskip_ws(r);
        json_t *v = jvalue(r);
        if (!v)
            goto bad;
        json_object_set_new_nocheck(o, key, v);
        free(key);
        key = NULL;
        jskip_ws(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            jskip_ws(r);
            continue;
        }
        if (r->p < r->end && *r->p == '}') {
            r->p++;
            return o;
        }
        jfail(r, "',' or '}' expected");
        goto bad;
    }
bad:
    free(key);
    json_decref(o);
    return NULL;
}

static json_t *jliteral(jreader *r, const char *word, json_t *v)
{
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) {
        jfail(r, "invalid token");
        return NULL;
    }
    r->p += n;
    return v;
}

/* One value at r->p (whitespace already skipped). */
static json_t *jvalue(jreader *r)
{
    json_t *v = NULL;
    if (++r->depth > JSON_MAX_DEPTH) {
        jfail(r, "maximum parsing depth reached");
        return NULL;
    }
    if (r->p >= r->end) {
        jfail(r, "premature end of input");
        return NULL;
    }
    switch (*r->p) {
    case '{':
        v = jobject(r);
        break;
    case '[':
        v = jarray(r);
        break;
    case '"': {
        const char *s;
        size_t n;
        if (jstring(r, &s, &n))
            v = json_stringn_nocheck(s, n);
        break;
    }
    case 't':
        v = jliteral(r, "true", json_true());
        break;
    case 'f':
        v = jliteral(r, "false", json_false());
        break;
    case 'n':
        v = jliteral(r, "null", json_null());
        break;
    default:
        if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9'))
            v = jnumber(r);
        else
            jfail(r, "invalid token");
    }
    r->depth--;
    return v;
}

int mcg_json_parse(json_t **out, const char *what, const char *data, size_t len, mcg_err *err)
{
    jreader r = {.p = (const unsigned char *)data,
                 .end = (const unsigned char *)data + len,
                 .line = 1,
                 .what = what,
                 .err = err,
                 .tmp = MCG_BUF_INIT};
    *out = NULL;
    jskip_ws(&r);
    json_t *v = NULL;
    if (r.p >= r.end || (*r.p != '{' && *r.p != '['))
        jfail(&r, "'[' or '{' expected");
    else if ((v = jvalue(&r)) != NULL) {
        jskip_ws(&r);
        if (r.p != r.end) {
            jfail(&r, "end of file expected");
            json_decref(v);
            v = NULL;
        }
    }
    mcg_buf_free(&r.tmp);
    if (!v)
        return MCG_EINVAL;
    *out = v;
    return 0;
}

/* Sextet of each base64 character; -1 for anything else ('=' included). */
/* clang-format off */
static const signed char b64tab[256] = {
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, /* 0x00 */
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, /* 0x10 */
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 62, -1, -1, -1, 63, /* 0x20 + / */
    52, 53, 54, 55, 56, 57, 58, 59, 60, 61, -1, -1, -1, -1, -1, -1, /* 0x30 0-9 */
    -1, 0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, /* 0x40 A-O */
    15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, -1, -1, -1, -1, -1, /* 0x50 P-Z */
    -1, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, /* 0x60 a-o */
    41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, -1, -1, -1, -1, -1, /* 0x70 p-z */
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, /* 0x80 - 0xff */
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
};
/* clang-format on */

/*
 * Room for extra more bytes (and the terminating NUL) after out->len, grown
 * once to the exact size instead of a byte at a time. NULL when the size
 * overflows.
 */
static unsigned char *buf_room(mcg_buf *out, size_t extra)
{
    if (extra > SIZE_MAX / 2 - out->len)
        return NULL;
    if (out->cap - out->len < extra + 1 || !out->ptr) {
        size_t cap = out->len + extra + 1;
        out->ptr = mcg_realloc(out->ptr, cap);
        out->cap = cap;
    }
    return (unsigned char *)out->ptr + out->len;
}

/* The first character of quad q (4 bytes) that is not in the alphabet. */
static size_t b64_bad_at(const unsigned char *q)
{
    size_t j = 0;
    while (j < 4 && b64tab[q[j]] >= 0)
        j++;
    return j;
}

/*
 * Decodes four characters at a time straight into room reserved once for
 * the whole output; only the last quad may hold padding. On failure out is
 * left as it was.
 */
int mcg_base64_decode(const char *in, size_t len, mcg_buf *out, mcg_err *err)
{
    if (len % 4 != 0)
        return mcg_err_set(err, MCG_EINVAL, "invalid base64: length %zu is not a multiple of 4",
                           len);
    if (len == 0)
        return 0;
    const unsigned char *s = (const unsigned char *)in;
    unsigned char *o = buf_room(out, len / 4 * 3);
    if (!o)
        return mcg_err_set(err, MCG_ENOMEM, "invalid base64: %zu bytes is too large", len);
    size_t i = 0;
    for (; i + 4 < len; i += 4) {
        int a = b64tab[s[i]], b = b64tab[s[i + 1]], c = b64tab[s[i + 2]], d = b64tab[s[i + 3]];
        if ((a | b | c | d) < 0)
            goto bad_char;
        unsigned v = (unsigned)a << 18 | (unsigned)b << 12 | (unsigned)c << 6 | (unsigned)d;
        o[0] = (unsigned char)(v >> 16);
        o[1] = (unsigned char)(v >> 8);
        o[2] = (unsigned char)v;
        o += 3;
    }
    /* the last quad: "xxxx", "xxx=" or "xx==" */
    int pad = s[i + 3] != '=' ? 0 : s[i + 2] != '=' ? 1 : 2;
    int v[4];
    for (int j = 0; j < 4 - pad; j++)
        if ((v[j] = b64tab[s[i + (size_t)j]]) < 0) {
            if (s[i + (size_t)j] == '=' && j >= 2)
                return mcg_err_set(err, MCG_EINVAL, "invalid base64: data after padding");
            goto bad_char;
        }
    for (int j = 4 - pad; j < 4; j++)
        v[j] = 0;
    /* Non-canonical encodings (stray bits under the padding) are refused. */
    if ((pad == 2 && (v[1] & 15)) || (pad == 1 && (v[2] & 3)))
        return mcg_err_set(err, MCG_EINVAL, "invalid base64: non-zero padding bits");
    o[0] = (unsigned char)(v[0] << 2 | v[1] >> 4);
    o[1] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
    o[2] = (unsigned char)((v[2] & 3) << 6 | v[3]);
    o += 3 - pad;
    out->len = (size_t)(o - (unsigned char *)out->ptr);
    out->ptr[out->len] = '\0';
    return 0;
bad_char:
    out->ptr[out->len] = '\0';
    return mcg_err_set(err, MCG_EINVAL, "invalid base64: unexpected character at %zu",
                       i + b64_bad_at(s + i));
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

/* Where the payload of a data: URL is (what follows its ','), not checked yet. */
typedef struct {
    const char *p; /* n bytes, not NUL-terminated */
    size_t n;
    bool base64; /* ";base64": else percent-encoded */
} payload;

static int payload_find(payload *pl, const char *url, size_t len, mcg_err *err)
{
    if (len < 5 || memcmp(url, "data:", 5) != 0)
        return mcg_err_set(err, MCG_EINVAL, "only data: URLs are supported");
    const char *meta = url + 5;
    const char *comma = memchr(meta, ',', len - 5);
    if (!comma)
        return mcg_err_set(err, MCG_EINVAL, "invalid data URL: no ','");
    size_t mlen = (size_t)(comma - meta);
    pl->base64 = mlen >= 7 && memcmp(comma - 7, ";base64", 7) == 0;
    pl->p = comma + 1;
    pl->n = len - (size_t)(pl->p - url);
    return 0;
}

/* mcg_dataurl_decode of the len bytes at url (no NUL needed). */
static int mcg_dataurl_decode_n(const char *url, size_t len, mcg_buf *out, mcg_err *err)
{
    payload ref = {NULL, 0, false};
    int rc = payload_find(&ref, url, len, err);
    if (rc)
        return rc;
    if (ref.base64)
        return mcg_base64_decode(ref.p, ref.n, out, err) ? mcg_err_prefix(err, "invalid data URL")
                                                         : 0;
    unsigned char *o = buf_room(out, ref.n); /* decoding never grows the data */
    if (!o)
        return mcg_err_set(err, MCG_ENOMEM, "invalid data URL: too large");
    const char *p = ref.p, *end = ref.p + ref.n;
    while (p < end) {
        const char *pct = memchr(p, '%', (size_t)(end - p));
        size_t n = (size_t)((pct ? pct : end) - p);
        memcpy(o, p, n);
        o += n;
        p += n;
        if (!pct)
            break;
        int hi = end - p > 1 ? hexval(p[1]) : -1, lo = hi < 0 || end - p < 3 ? -1 : hexval(p[2]);
        if (hi < 0 || lo < 0) {
            out->ptr[out->len] = '\0';
            return mcg_err_set(err, MCG_EINVAL,
                               "invalid data URL: bad percent escape at offset %zu",
                               (size_t)(p - url));
        }
        *o++ = (unsigned char)(hi << 4 | lo);
        p += 3;
    }
    out->len = (size_t)(o - (unsigned char *)out->ptr);
    out->ptr[out->len] = '\0';
    return 0;
}

int mcg_dataurl_decode(const char *url, mcg_buf *out, mcg_err *err)
{
    return mcg_dataurl_decode_n(url, strlen(url), out, err);
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
