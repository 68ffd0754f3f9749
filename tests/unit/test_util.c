/*
 * test_util.c — the strict decoders (base64, percent, data: URLs, gzip),
 * clean-path checks, canonical JSON and the small helpers under them.
 *
 * Decoders are tested as tables of inputs that must decode to given bytes
 * and inputs that must be refused with a message naming what is wrong.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testlib.h"
#include <zlib.h>

#include "util/util.h"

/* ------------------------------------------------------------ base64 */

typedef struct {
    const char *in;
    const char *out; /* expected bytes when want_err is NULL */
    size_t out_len;
    const char *want_err;
} b64_case;

static const b64_case b64_cases[] = {
    {"", "", 0, NULL},
    {"aA==", "h", 1, NULL},
    {"aGk=", "hi", 2, NULL},
    {"aGVsbG8=", "hello", 5, NULL},
    {"aGVsbG8h", "hello!", 6, NULL},
    {"AAECAw==", "\0\1\2\3", 4, NULL},
    {"+/+/", "\xfb\xff\xbf", 3, NULL},
    {"aGVsbG8", NULL, 0, "not a multiple of 4"},
    {"aGVsbG8==", NULL, 0, "not a multiple of 4"},
    {"aGVs bG8=", NULL, 0, "not a multiple of 4"},
    {"aGVs\nbG8", NULL, 0, "unexpected character"},
    {"aGV*bG8=", NULL, 0, "unexpected character at 3"},
    {"aGk=aGk=", NULL, 0, "unexpected character at 3"},
    {"a===", NULL, 0, "unexpected character at 1"},
    {"====", NULL, 0, "unexpected character at 0"},
    {"aG=a", NULL, 0, "data after padding"},
    {"aG==", NULL, 0, "non-zero padding bits"},
    {"aGVsbG9=", NULL, 0, "non-zero padding bits"},
    {"aGVsbG8_", NULL, 0, "unexpected character"},
    {"aGVsbG8-", NULL, 0, "unexpected character"},
};

static void test_base64_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(b64_cases) / sizeof(b64_cases[0]); i++) {
        const b64_case *c = &b64_cases[i];
        mcg_buf out = MCG_BUF_INIT;
        mcg_err err = {0};
        int rc = mcg_base64_decode(c->in, strlen(c->in), &out, &err);
        if (!c->want_err) {
            if (rc != 0)
                fail_msg("base64 '%s': unexpected error: %s", c->in, err.msg);
            assert_int_equal(out.len, c->out_len);
            if (c->out_len)
                assert_memory_equal(out.ptr, c->out, c->out_len);
        } else {
            if (rc == 0)
                fail_msg("base64 '%s': decoded, want error '%s'", c->in, c->want_err);
            assert_int_equal(rc, MCG_EINVAL);
            assert_contains(err.msg, c->want_err);
        }
        mcg_buf_free(&out);
    }
}

static void test_base64_roundtrip(void **state)
{
    (void)state;
    unsigned char in[300];
    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (unsigned char)(i * 7 + 3);
    for (size_t n = 0; n <= sizeof(in); n += (n < 12 ? 1 : 37)) {
        mcg_buf enc = MCG_BUF_INIT, dec = MCG_BUF_INIT;
        mcg_err err = {0};
        mcg_base64_encode(in, n, &enc);
        assert_int_equal(enc.len, (n + 2) / 3 * 4);
        assert_int_equal(mcg_base64_decode(enc.ptr ? enc.ptr : "", enc.len, &dec, &err), 0);
        assert_int_equal(dec.len, n);
        if (n)
            assert_memory_equal(dec.ptr, in, n);
        mcg_buf_free(&enc);
        mcg_buf_free(&dec);
    }
}

/* The fast decoder appends to what is there and leaves it alone on failure. */
static void test_base64_append(void **state)
{
    (void)state;
    mcg_buf out = MCG_BUF_INIT;
    mcg_err err = {0};
    mcg_buf_puts(&out, "pre:");
    assert_int_equal(mcg_base64_decode("aGVsbG8=", 8, &out, &err), 0);
    assert_string_equal(out.ptr, "pre:hello");
    assert_int_equal(mcg_base64_decode("aGVs*G8=", 8, &out, &err), MCG_EINVAL);
    assert_contains(err.msg, "unexpected character at 4");
    assert_int_equal(out.len, 9);
    assert_string_equal(out.ptr, "pre:hello");
    /* a long input: every sextet value, in every position of a quad */
    mcg_buf enc = MCG_BUF_INIT, dec = MCG_BUF_INIT;
    unsigned char in[3 * 4096 + 2];
    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (unsigned char)(i * 131 + (i >> 8));
    mcg_base64_encode(in, sizeof(in), &enc);
    assert_int_equal(mcg_base64_decode(enc.ptr, enc.len, &dec, &err), 0);
    assert_int_equal(dec.len, sizeof(in));
    assert_memory_equal(dec.ptr, in, sizeof(in));
    /* a bad character deep inside is located exactly */
    enc.ptr[5001] = '.';
    mcg_buf_free(&dec);
    assert_int_equal(mcg_base64_decode(enc.ptr, enc.len, &dec, &err), MCG_EINVAL);
    assert_contains(err.msg, "unexpected character at 5001");
    assert_int_equal(dec.len, 0);
    mcg_buf_free(&enc);
    mcg_buf_free(&dec);
    mcg_buf_free(&out);
}

/* ------------------------------------------------------------ data URLs */

typedef struct {
    const char *url;
    const char *out;
    size_t out_len;
    const char *want_err;
} dataurl_case;

static const dataurl_case dataurl_cases[] = {
    {"data:,", "", 0, NULL},
    {"data:,hello", "hello", 5, NULL},
    {"data:,hello%20world%0A", "hello world\n", 12, NULL},
    {"data:,%2f%2F", "//", 2, NULL},
    {"data:,a,b", "a,b", 3, NULL},
    {"data:,%00x", "\0x", 2, NULL},
    {"data:text/plain,plain", "plain", 5, NULL},
    {"data:text/plain;charset=utf-8,%C3%A9", "\xc3\xa9", 2, NULL},
    {"data:;base64,aGVsbG8=", "hello", 5, NULL},
    {"data:text/plain;charset=utf-8;base64,aGk=", "hi", 2, NULL},
    {"data:;base64,", "", 0, NULL},
    {"https://example.com/x", NULL, 0, "only data: URLs are supported"},
    {"DATA:,x", NULL, 0, "only data: URLs are supported"},
    {"", NULL, 0, "only data: URLs are supported"},
    {"data:hello", NULL, 0, "no ','"},
    {"data:,50%", NULL, 0, "bad percent escape at offset 8"},
    {"data:,%4", NULL, 0, "bad percent escape at offset 6"},
    {"data:,%zz", NULL, 0, "bad percent escape at offset 6"},
    {"data:,ok%2", NULL, 0, "bad percent escape"},
    {"data:,%g0", NULL, 0, "bad percent escape"},
    {"data:;base64,aGVsbG8", NULL, 0, "invalid data URL: invalid base64"},
    {"data:;base64,!!!!", NULL, 0, "invalid data URL: invalid base64: unexpected character"},
    {"data:;base64,aGk=\n", NULL, 0, "invalid base64"},
};

static void test_dataurl_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(dataurl_cases) / sizeof(dataurl_cases[0]); i++) {
        const dataurl_case *c = &dataurl_cases[i];
        mcg_buf out = MCG_BUF_INIT;
        mcg_err err = {0};
        int rc = mcg_dataurl_decode(c->url, &out, &err);
        if (!c->want_err) {
            if (rc != 0)
                fail_msg("data URL '%s': unexpected error: %s", c->url, err.msg);
            assert_int_equal(out.len, c->out_len);
            if (c->out_len)
                assert_memory_equal(out.ptr, c->out, c->out_len);
        } else {
            if (rc == 0)
                fail_msg("data URL '%s': decoded, want error '%s'", c->url, c->want_err);
            assert_contains(err.msg, c->want_err);
        }
        mcg_buf_free(&out);
    }
}

static void test_dataurl_roundtrip(void **state)
{
    (void)state;
    unsigned char in[256];
    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (unsigned char)i;
    mcg_buf enc = MCG_BUF_INIT, dec = MCG_BUF_INIT;
    mcg_err err = {0};
    mcg_dataurl_encode(in, sizeof(in), &enc);
    assert_int_equal(strncmp(enc.ptr, "data:,", 6), 0);
    assert_null(strchr(enc.ptr + 6, ','));
    assert_null(strchr(enc.ptr, ' '));
    assert_int_equal(mcg_dataurl_decode(enc.ptr, &dec, &err), 0);
    assert_int_equal(dec.len, sizeof(in));
    assert_memory_equal(dec.ptr, in, sizeof(in));
    mcg_buf_free(&enc);
    mcg_buf_free(&dec);

    mcg_dataurl_encode((const unsigned char *)"", 0, &enc);
    assert_string_equal(enc.ptr, "data:,");
    mcg_buf_free(&enc);
}

/* ------------------------------------------------------------ JSON reader */

typedef struct {
    const char *in;
    const char *canon; /* mcg_json_canonical of the result, minus the newline; NULL: refused */
    const char *want_err;
} json_case;

static const json_case json_cases[] = {
    {"{}", "{}", NULL},
    {" [ ] ", "[]", NULL},
    {"{\"a\":1}", "{\n  \"a\": 1\n}", NULL},
    {"[true,false,null]", "[\n  true,\n  false,\n  null\n]", NULL},
    {"[0,-0,12,-34,9223372036854775807,-9223372036854775808]",
     "[\n  0,\n  0,\n  12,\n  -34,\n  9223372036854775807,\n  -9223372036854775808\n]", NULL},
    {"[1.5,-2e3,1E+2,0.25e1,1e-400]", "[\n  1.5,\n  -2000.0,\n  100.0,\n  2.5,\n  0.0\n]", NULL},
    {"[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]", "[\n  \"\\\"\\\\/\\b\\f\\n\\r\\t\"\n]", NULL},
    {"[\"\\u00e9\\u20AC\\ud83d\\ude00\"]", "[\n  \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"\n]",
     NULL},
    {"[\"\xc3\xa9 caf\xc3\xa9 \xf4\x8f\xbf\xbf\"]",
     "[\n  \"\xc3\xa9 caf\xc3\xa9 \xf4\x8f\xbf\xbf\"\n]", NULL},
    {"{\"a\":{\"b\":[{\"c\":\"d\"}]}}",
     "{\n  \"a\": {\n    \"b\": [\n      {\n        \"c\": \"d\"\n"
     "      }\n    ]\n  }\n}",
     NULL},
    {"\r\n\t{\"k\" : \"v\" }\n", "{\n  \"k\": \"v\"\n}", NULL},
    {"", NULL, "1: invalid JSON: '[' or '{' expected"},
    {"  ", NULL, "'[' or '{' expected"},
    {"\"s\"", NULL, "'[' or '{' expected"},
    {"1", NULL, "'[' or '{' expected"},
    {"\xef\xbb\xbf{}", NULL, "'[' or '{' expected"},
    {"{} x", NULL, "end of file expected"},
    {"{}{}", NULL, "end of file expected"},
    {"{", NULL, "string expected"},
    {"{\"a\"}", NULL, "':' expected"},
    {"{\"a\":}", NULL, "invalid token"},
    {"{\"a\":1,}", NULL, "string expected"},
    {"{\"a\":1 \"b\":2}", NULL, "',' or '}' expected"},
    {"{\"a\":1,\"a\":2}", NULL, "duplicate object key 'a'"},
    {"{\"a\":{\"b\":1,\"c\":{},\"b\":2}}", NULL, "duplicate object key 'b'"},
    {"{'a':1}", NULL, "string expected"},
    {"[1,]", NULL, "invalid token"},
    {"[1 2]", NULL, "',' or ']' expected"},
    {"[", NULL, "premature end of input"},
    {"[01]", NULL, "',' or ']' expected"},
    {"[-]", NULL, "invalid number"},
    {"[1.]", NULL, "invalid number"},
    {"[.5]", NULL, "invalid token"},
    {"[1e]", NULL, "invalid number"},
    {"[1e+]", NULL, "invalid number"},
    {"[+1]", NULL, "invalid token"},
    {"[9223372036854775808]", NULL, "too big integer"},
    {"[-9223372036854775809]", NULL, "too big negative integer"},
    {"[1e400]", NULL, "real number overflow"},
    {"[tru]", NULL, "invalid token"},
    {"[truex]", NULL, "',' or ']' expected"},
    {"[True]", NULL, "invalid token"},
    {"[\"abc]", NULL, "premature end of input"},
    {"[\"a\nb\"]", NULL, "control character 0xa"},
    {"[\"a\tb\"]", NULL, "control character 0x9"},
    {"[\"\\x\"]", NULL, "invalid escape"},
    {"[\"\\u12\"]", NULL, "invalid escape"},
    {"[\"\\u12g4\"]", NULL, "invalid escape"},
    {"[\"\\u0000\"]", NULL, "\\u0000 is not allowed"},
    {"[\"\\ud83d\"]", NULL, "invalid Unicode '\\uD83D'"},
    {"[\"\\ud83dx\"]", NULL, "invalid Unicode"},
    {"[\"\\ud83d\\u0041\"]", NULL, "invalid Unicode"},
    {"[\"\\ude00\"]", NULL, "invalid Unicode '\\uDE00'"},
    {"[\"\xff\"]", NULL, "invalid UTF-8"},
    {"[\"\xc0\xaf\"]", NULL, "invalid UTF-8"},         /* overlong '/' */
    {"[\"\xe0\x80\xaf\"]", NULL, "invalid UTF-8"},     /* overlong, 3 bytes */
    {"[\"\xed\xa0\x80\"]", NULL, "invalid UTF-8"},     /* a surrogate */
    {"[\"\xf4\x90\x80\x80\"]", NULL, "invalid UTF-8"}, /* beyond U+10FFFF */
    {"[\"\xc3\"]", NULL, "invalid UTF-8"},
    {"[\"\x80\"]", NULL, "invalid UTF-8"},
    {"[1]\n\n  x", NULL, "3: invalid JSON: end of file expected"},
};

static void test_json_parse_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(json_cases) / sizeof(json_cases[0]); i++) {
        const json_case *c = &json_cases[i];
        json_t *v = (json_t *)1;
        mcg_err err = {0};
        int rc = mcg_json_parse(&v, "t.json", c->in, strlen(c->in), &err);
        if (c->canon) {
            if (rc != 0)
                fail_msg("case %zu '%s': unexpected error: %s", i, c->in, err.msg);
            mcg_buf b = MCG_BUF_INIT;
            assert_int_equal(mcg_json_canonical(v, &b, &err), 0);
            b.ptr[--b.len] = '\0';
            if (strcmp(b.ptr, c->canon))
                fail_msg("case %zu '%s': got '%s'", i, c->in, b.ptr);
            mcg_buf_free(&b);
            json_decref(v);
        } else {
            if (rc == 0)
                fail_msg("case %zu '%s': accepted, want error '%s'", i, c->in, c->want_err);
            assert_int_equal(rc, MCG_EINVAL);
            assert_null(v);
            assert_contains(err.msg, "t.json:");
            assert_contains(err.msg, c->want_err);
        }
        /* jansson's reader accepts exactly the same texts */
        json_error_t je;
        json_t *j = json_loadb(c->in, strlen(c->in), JSON_REJECT_DUPLICATES, &je);
        if ((j != NULL) != (c->canon != NULL))
            fail_msg("case %zu '%s': jansson %s it", i, c->in, j ? "accepts" : "refuses");
        json_decref(j);
    }
    /* embedded NUL bytes are refused wherever they are */
    json_t *v;
    mcg_err err = {0};
    assert_int_equal(mcg_json_parse(&v, "t", "[\"a\0b\"]", 7, &err), MCG_EINVAL);
    assert_int_equal(mcg_json_parse(&v, "t", "[1]\0", 4, &err), MCG_EINVAL);
}

/* Nesting: 2048 values deep is the limit, as for jansson. */
static void test_json_parse_depth(void **state)
{
    (void)state;
    for (int depth = 2046; depth <= 2050; depth++) {
        for (int scalar = 0; scalar < 2; scalar++) {
            mcg_buf b = MCG_BUF_INIT;
            for (int i = 0; i < depth; i++)
                mcg_buf_putc(&b, '[');
            if (scalar)
                mcg_buf_putc(&b, '1');
            for (int i = 0; i < depth; i++)
                mcg_buf_putc(&b, ']');
            json_t *v = NULL;
            mcg_err err = {0};
            int rc = mcg_json_parse(&v, "t", b.ptr, b.len, &err);
            json_error_t je;
            json_t *j = json_loadb(b.ptr, b.len, JSON_REJECT_DUPLICATES, &je);
            if ((rc == 0) != (j != NULL))
                fail_msg("depth %d%s: mcgit %s, jansson %s", depth, scalar ? " + scalar" : "",
                         rc ? err.msg : "ok", j ? "ok" : je.text);
            if (rc)
                assert_contains(err.msg, "maximum parsing depth");
            json_decref(v);
            json_decref(j);
            mcg_buf_free(&b);
        }
    }
}

/*
 * Differential test: thousands of mutations of small documents, each read
 * by mcg_json_parse and by jansson; both accept or both refuse, and what
 * both accept is the same value.
 */
static void test_json_parse_vs_jansson(void **state)
{
    (void)state;
    static const char *const seeds[] = {
        ("{\"config\":{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":[{\"path\":"
         "\"/etc/a\",\"mode\":420,\"contents\":{\"source\":\"data:;base64,aGk=\"}}]}}}"),
        "[1,-2.5e3,\"a\\u00e9\\n\",true,false,null,{},[],{\"x\":[0]}]",
        "{\"k\":\"\\ud83d\\ude00 \xc3\xa9\",\"l\":[\"\\\\\",\"\\/\"]}",
    };
    static const char alphabet[] =
        "{}[]\":,\\ -+.eE0123456789tfnulrsaxu\n\t\x01\x7f\xc3\xa9\xed\xf4";
    uint64_t x = 0x2545F4914F6CDD1Dull;
    int accepted = 0, refused = 0;
    for (int iter = 0; iter < 20000; iter++) {
        const char *seed = seeds[iter % 3];
        char doc[512];
        size_t n = strlen(seed);
        memcpy(doc, seed, n);
        int muts = 1 + iter % 3;
        for (int m = 0; m < muts; m++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            size_t pos = (size_t)(x % (n + 1));
            char ch = alphabet[(x >> 20) % (sizeof(alphabet) - 1)];
            switch ((x >> 40) % 3) {
            case 0: /* replace */
                if (pos < n)
                    doc[pos] = ch;
                break;
            case 1: /* insert */
                if (n + 1 < sizeof(doc)) {
                    memmove(doc + pos + 1, doc + pos, n - pos);
                    doc[pos] = ch;
                    n++;
                }
                break;
            default: /* delete */
                if (pos < n) {
                    memmove(doc + pos, doc + pos + 1, n - pos - 1);
                    n--;
                }
            }
        }
        json_t *v = NULL;
        mcg_err err = {0};
        int rc = mcg_json_parse(&v, "t", doc, n, &err);
        json_error_t je;
        json_t *j = json_loadb(doc, n, JSON_REJECT_DUPLICATES, &je);
        if ((rc == 0) != (j != NULL))
            fail_msg("'%.*s': mcgit %s, jansson %s", (int)n, doc, rc ? err.msg : "accepts",
                     j ? "accepts" : je.text);
        if (j) {
            if (!json_equal(v, j))
                fail_msg("'%.*s': different values", (int)n, doc);
            accepted++;
        } else {
            refused++;
        }
        json_decref(v);
        json_decref(j);
    }
    assert_true(accepted > 1000);
    assert_true(refused > 1000);
}

/* ------------------------------------------------------------ gzip */

static void test_gunzip_ok(void **state)
{
    (void)state;
    size_t n = 100000;
    unsigned char *plain = mcg_malloc(n);
    for (size_t i = 0; i < n; i++)
        plain[i] = (unsigned char)("mcgit\n"[i % 6] ^ (i / 1000));
    mcg_buf gz = mcg_test_gzip(plain, n), out = MCG_BUF_INIT;
    mcg_err err = {0};
    assert_int_equal(mcg_gunzip((unsigned char *)gz.ptr, gz.len, n, &out, &err), 0);
    assert_int_equal(out.len, n);
    assert_memory_equal(out.ptr, plain, n);
    mcg_buf_free(&out);
    mcg_buf_free(&gz);

    /* The empty file. */
    gz = mcg_test_gzip("", 0);
    assert_int_equal(mcg_gunzip((unsigned char *)gz.ptr, gz.len, 0, &out, &err), 0);
    assert_int_equal(out.len, 0);
    mcg_buf_free(&out);
    mcg_buf_free(&gz);
    free(plain);
}

static void test_gunzip_limit(void **state)
{
    (void)state;
    /* A small input that expands far beyond the limit is stopped early. */
    size_t n = 4u * 1024u * 1024u;
    unsigned char *zeros = mcg_calloc(n, 1);
    mcg_buf gz = mcg_test_gzip(zeros, n), out = MCG_BUF_INIT;
    mcg_err err = {0};
    assert_true(gz.len < 16384);
    assert_int_equal(mcg_gunzip((unsigned char *)gz.ptr, gz.len, 1536u * 1024u, &out, &err),
                     MCG_ENOMEM);
    assert_contains(err.msg, "expands beyond 1572864 bytes");
    assert_true(out.len <= 1536u * 1024u);
    mcg_buf_free(&out);

    /* Exactly at the limit is fine; one byte less is not. */
    assert_int_equal(mcg_gunzip((unsigned char *)gz.ptr, gz.len, n, &out, &err), 0);
    assert_int_equal(out.len, n);
    mcg_buf_free(&out);
    assert_int_equal(mcg_gunzip((unsigned char *)gz.ptr, gz.len, n - 1, &out, &err), MCG_ENOMEM);
    mcg_buf_free(&out);
    mcg_buf_free(&gz);
    free(zeros);
}

static void test_gunzip_bad(void **state)
{
    (void)state;
    const char *text = "hello, gzip\n";
    mcg_buf gz = mcg_test_gzip(text, strlen(text)), out = MCG_BUF_INIT;
    mcg_err err = {0};

    /* Not gzip at all. */
    assert_int_equal(mcg_gunzip((const unsigned char *)"hello", 5, 1024, &out, &err), MCG_EINVAL);
    assert_contains(err.msg, "invalid gzip data");
    mcg_buf_free(&out);

    /* Empty input. */
    assert_int_equal(mcg_gunzip((const unsigned char *)"", 0, 1024, &out, &err), MCG_EINVAL);
    assert_contains(err.msg, "invalid gzip data");
    mcg_buf_free(&out);

    /* Truncated at every length. */
    for (size_t cut = 1; cut < gz.len; cut++) {
        mcg_err_clear(&err);
        if (mcg_gunzip((unsigned char *)gz.ptr, cut, 1024, &out, &err) == 0)
            fail_msg("gzip truncated to %zu of %zu bytes was accepted", cut, gz.len);
        assert_contains(err.msg, "invalid gzip data");
        mcg_buf_free(&out);
    }

    /* Trailing bytes after the stream. */
    mcg_buf tail = MCG_BUF_INIT;
    mcg_buf_put(&tail, gz.ptr, gz.len);
    mcg_buf_puts(&tail, "junk");
    assert_int_equal(mcg_gunzip((unsigned char *)tail.ptr, tail.len, 1024, &out, &err), MCG_EINVAL);
    assert_contains(err.msg, "trailing bytes");
    mcg_buf_free(&out);
    mcg_buf_free(&tail);

    /* A flipped byte in the body or the CRC. */
    mcg_buf bad = MCG_BUF_INIT;
    mcg_buf_put(&bad, gz.ptr, gz.len);
    bad.ptr[bad.len - 6] ^= 0x55; /* CRC32 */
    assert_int_equal(mcg_gunzip((unsigned char *)bad.ptr, bad.len, 1024, &out, &err), MCG_EINVAL);
    assert_contains(err.msg, "invalid gzip data");
    mcg_buf_free(&out);
    mcg_buf_free(&bad);
    mcg_buf_free(&gz);
}

/* ------------------------------------------------------------ paths */

static void test_clean_path(void **state)
{
    (void)state;
    static const char *const good[] = {"/etc",         "/etc/chrony.conf", "/a/b/c",
                                       "/etc/.hidden", "/etc/..x",         "/etc/x..",
                                       "/a/.../b",     "/a b/c",           NULL};
    static const char *const bad[] = {"",         "/",        "//",      "etc/x", "./etc",
                                      "../etc",   "/etc/",    "/etc//x", "//etc", "/etc/../x",
                                      "/etc/./x", "/etc/.",   "/etc/..", "/..",   "/.",
                                      "/a/b/",    "relative", "~/x",     NULL};
    for (const char *const *p = good; *p; p++)
        if (!mcg_path_is_clean_abs(*p))
            fail_msg("'%s' should be clean", *p);
    for (const char *const *p = bad; *p; p++)
        if (mcg_path_is_clean_abs(*p))
            fail_msg("'%s' should be refused", *p);
    assert_false(mcg_path_is_clean_abs(NULL));
}

/* ------------------------------------------------------------ canonical JSON */

static char *canon(const json_t *v)
{
    mcg_buf b = MCG_BUF_INIT;
    mcg_err err = {0};
    assert_int_equal(mcg_json_canonical(v, &b, &err), 0);
    return mcg_buf_detach(&b, NULL);
}

static void test_canonical_json(void **state)
{
    (void)state;
    /* The same value built in two insertion orders gives the same bytes. */
    json_t *a = json_object();
    json_object_set_new(a, "zeta", json_integer(1));
    json_object_set_new(a, "alpha", json_pack("{s:[i,i], s:s}", "list", 2, 1, "name", "é ü €"));
    json_object_set_new(a, "Beta", json_true());
    json_object_set_new(a, "_", json_null());
    json_t *b = json_object();
    json_object_set_new(b, "_", json_null());
    json_object_set_new(b, "Beta", json_true());
    json_object_set_new(b, "alpha", json_pack("{s:s, s:[i,i]}", "name", "é ü €", "list", 2, 1));
    json_object_set_new(b, "zeta", json_integer(1));
    char *sa = canon(a), *sb = canon(b);
    assert_string_equal(sa, sb);
    /* Keys sorted bytewise (upper case before '_' before lower case), two
     * spaces of indent, raw UTF-8, one trailing newline. */
    assert_string_equal(sa, "{\n"
                            "  \"Beta\": true,\n"
                            "  \"_\": null,\n"
                            "  \"alpha\": {\n"
                            "    \"list\": [\n"
                            "      2,\n"
                            "      1\n"
                            "    ],\n"
                            "    \"name\": \"\xc3\xa9 \xc3\xbc \xe2\x82\xac\"\n"
                            "  },\n"
                            "  \"zeta\": 1\n"
                            "}\n");
    assert_null(strstr(sa, "\\u"));
    free(sa);
    free(sb);
    json_decref(a);
    json_decref(b);

    /* Escapes: control characters are escaped, '/' is not. */
    json_t *s = json_pack("{s:s}", "k", "a/b\n\t\"\x01");
    char *ss = canon(s);
    assert_string_equal(ss, "{\n  \"k\": \"a/b\\n\\t\\\"\\u0001\"\n}\n");
    free(ss);
    json_decref(s);

    /* Empty containers and scalars at the top. */
    json_t *e = json_object();
    char *se = canon(e);
    assert_string_equal(se, "{}\n");
    free(se);
    json_decref(e);
    json_t *i = json_integer(42);
    char *si = canon(i);
    assert_string_equal(si, "42\n");
    free(si);
    json_decref(i);
}

static void test_canonical_json_many_keys(void **state)
{
    (void)state;
    /* Enough keys to make hash-table order differ from insertion order. */
    json_t *fwd = json_object(), *rev = json_object();
    for (int k = 0; k < 500; k++) {
        char key[16];
        snprintf(key, sizeof(key), "k%03d", k);
        json_object_set_new(fwd, key, json_integer(k));
        snprintf(key, sizeof(key), "k%03d", 499 - k);
        json_object_set_new(rev, key, json_integer(499 - k));
    }
    char *sf = canon(fwd), *sr = canon(rev);
    assert_string_equal(sf, sr);
    assert_true(strstr(sf, "\"k000\"") < strstr(sf, "\"k001\""));
    assert_true(strstr(sf, "\"k498\"") < strstr(sf, "\"k499\""));
    free(sf);
    free(sr);
    json_decref(fwd);
    json_decref(rev);
}

/* ------------------------------------------------------------ hashing */

static void test_sha256_hex(void **state)
{
    (void)state;
    unsigned char d[MCG_SHA256_LEN];
    char hex[2 * MCG_SHA256_LEN + 1];
    mcg_sha256("abc", 3, d);
    mcg_hex(d, sizeof(d), hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    mcg_sha256("", 0, d);
    mcg_hex(d, sizeof(d), hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_true(mcg_memeq_ct("abcd", "abcd", 4));
    assert_false(mcg_memeq_ct("abcd", "abce", 4));
    assert_true(mcg_memeq_ct("x", "y", 0));
}

/* ------------------------------------------------------------ small helpers */

static void test_parse_u64(void **state)
{
    (void)state;
    uint64_t v = 7;
    assert_true(mcg_parse_u64("0", &v));
    assert_int_equal(v, 0);
    assert_true(mcg_parse_u64("18446744073709551615", &v));
    assert_true(v == UINT64_MAX);
    assert_false(mcg_parse_u64("18446744073709551616", &v));
    assert_false(mcg_parse_u64("", &v));
    assert_false(mcg_parse_u64(NULL, &v));
    assert_false(mcg_parse_u64("-1", &v));
    assert_false(mcg_parse_u64("+1", &v));
    assert_false(mcg_parse_u64("1 ", &v));
    assert_false(mcg_parse_u64("0x10", &v));
}

static void test_buf_strv_diags(void **state)
{
    (void)state;
    mcg_buf b = MCG_BUF_INIT;
    char *empty = mcg_buf_detach(&b, NULL);
    assert_string_equal(empty, "");
    free(empty);
    mcg_buf_puts(&b, "a");
    mcg_buf_putc(&b, 'b');
    mcg_buf_printf(&b, "%d-%s", 42, "x");
    for (int i = 0; i < 1000; i++)
        mcg_buf_putc(&b, 'z');
    assert_int_equal(b.len, 1006);
    assert_int_equal(strncmp(b.ptr, "ab42-xz", 7), 0);
    assert_int_equal(b.ptr[b.len], '\0');
    mcg_buf_free(&b);
    mcg_buf_free(NULL);

    mcg_strv s = {0};
    mcg_strv_push(&s, "b");
    mcg_strv_push(&s, "a");
    mcg_strv_push(&s, "B");
    mcg_strv_sort(&s);
    assert_string_equal(s.v[0], "B");
    assert_string_equal(s.v[1], "a");
    assert_string_equal(s.v[2], "b");
    assert_true(mcg_strv_contains(&s, "a"));
    assert_false(mcg_strv_contains(&s, "c"));
    mcg_strv_free(&s);
    mcg_strv_free(NULL);

    mcg_diags d = {0};
    for (int i = 0; i < 20; i++)
        mcg_diags_add(&d, "f.yaml:%d: problem", i + 1);
    assert_int_equal(d.count, 20);
    assert_string_equal(d.msgs[19], "f.yaml:20: problem");
    mcg_diags_free(&d);
    mcg_diags_free(NULL);

    mcg_err err = {0};
    assert_int_equal(mcg_err_set(&err, MCG_EINVAL, "x.yaml:%d: bad", 3), MCG_EINVAL);
    assert_int_equal(mcg_err_prefix(&err, "loading %s", "dir"), MCG_EINVAL);
    assert_string_equal(err.msg, "loading dir: x.yaml:3: bad");
    assert_int_equal(mcg_err_set(NULL, MCG_EIO, "dropped"), MCG_EIO);
    assert_int_equal(mcg_err_set(NULL, MCG_ENOTFOUND, "dropped"), MCG_ENOTFOUND);
    /* without a record the code is unknown: MCG_EIO, never 0 */
    assert_int_equal(mcg_err_prefix(NULL, "loading %s", "dir"), MCG_EIO);
    mcg_err_clear(NULL);
    mcg_err_clear(&err);
    assert_int_equal(err.code, 0);
    assert_string_equal(err.msg, "");
}

/* mcg_bfmt: a cut is visible ("..." at the end) and reported; the error
 * record's messages are formatted the same way. */
static void test_bfmt_truncation(void **state)
{
    (void)state;
    static const struct {
        size_t cap;
        const char *arg;
        bool ok;
        const char *want;
    } cases[] = {
        {16, "short", true, "x=short"},
        {8, "short", true, "x=short"}, /* 7 chars + NUL: fits exactly */
        {7, "short", false, "x=s..."}, /* one too many */
        {4, "abcdef", false, "..."},   /* the smallest buffer */
        {12, "", true, "x="},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[32];
        memset(buf, 'Z', sizeof(buf));
        bool ok = mcg_bfmt(buf, cases[i].cap, "x=%s", cases[i].arg);
        assert_int_equal(ok, cases[i].ok);
        assert_string_equal(buf, cases[i].want);
        assert_true(strlen(buf) < cases[i].cap);
    }
    char big[2 * MCG_ERR_MSG];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    mcg_err e = {0};
    assert_int_equal(mcg_err_set(&e, MCG_EINVAL, "%s", big), MCG_EINVAL);
    assert_int_equal(strlen(e.msg), MCG_ERR_MSG - 1);
    assert_string_equal(e.msg + MCG_ERR_MSG - 4, "...");
    mcg_err_set(&e, MCG_EIO, "inner");
    assert_int_equal(mcg_err_prefix(&e, "%s", big), MCG_EIO);
    assert_string_equal(e.msg + MCG_ERR_MSG - 4, "...");
}

/* mcg_diags_sort: by file, then line and column as numbers, then message;
 * reports without a location first; nothing dropped. */
static void test_diags_sort(void **state)
{
    (void)state;
    static const struct {
        const char *in[8];
        const char *want[8];
    } cases[] = {
        {{"b.yaml:2: x", "a.yaml:10: y", "a.yaml:9: z", NULL},
         {"a.yaml:9: z", "a.yaml:10: y", "b.yaml:2: x", NULL}},
        {{"a.yaml:3: b", "a.yaml:3: a", "a.yaml:3: a", NULL},
         {"a.yaml:3: a", "a.yaml:3: a", "a.yaml:3: b", NULL}},
        {{"pools/x.yaml:4:12: col", "pools/x.yaml:4:3: col", "pools/: no worker", NULL},
         {"pools/: no worker", "pools/x.yaml:4:3: col", "pools/x.yaml:4:12: col", NULL}},
        {{"z.yaml:1: located", "commit abc refused: why", "another: text", NULL},
         {"commit abc refused: why", "another: text", "z.yaml:1: located", NULL}},
        {{"machineconfigs/a.yaml:1: m", "machineconfigs/a.yaml.bak:1: m", "machineconfigs/:1: m",
          NULL},
         {"machineconfigs/:1: m", "machineconfigs/a.yaml:1: m", "machineconfigs/a.yaml.bak:1: m",
          NULL}},
        {{"only", NULL}, {"only", NULL}},
        {{NULL}, {NULL}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        mcg_diags d = {0};
        for (size_t i = 0; cases[c].in[i]; i++)
            mcg_diags_add(&d, "%s", cases[c].in[i]);
        mcg_diags_sort(&d);
        size_t n = 0;
        for (; cases[c].want[n]; n++) {
            assert_true(n < d.count);
            assert_string_equal(d.msgs[n], cases[c].want[n]);
        }
        assert_int_equal(d.count, n);
        mcg_diags_free(&d);
    }
    mcg_diags_sort(NULL);
}

/* ------------------------------------------------------ edit distance */

static void test_edit_distance(void **state)
{
    (void)state;
    static const struct {
        const char *a, *b;
        size_t limit, want;
    } t[] = {
        {"", "", 2, 0},
        {"mode", "mode", 2, 0},
        {"mdoe", "mode", 2, 1},         /* one swap of neighbours */
        {"contnets", "contents", 2, 1}, /* the same, further in */
        {"contens", "contents", 2, 1},  /* a letter left out */
        {"enable", "enabled", 2, 1},
        {"sauce", "source", 2, 2},
        {"ca", "abc", 5, 3},    /* no substring edited twice (OSA, not full DL) */
        {"Mode", "mode", 2, 1}, /* case counts */
        {"", "abc", 5, 3},
        {"abc", "", 5, 3},
        {"filesystem", "files", 2, 3}, /* five apart in length: past the limit at once */
        {"kitten", "sitting", 5, 3},
        {"kitten", "sitting", 2, 3}, /* above the limit: limit + 1 */
        {"path", "hard", 9, 3},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        size_t d = mcg_edit_distance(t[i].a, t[i].b, t[i].limit);
        if (d != t[i].want)
            fail_msg("'%s' -> '%s' (limit %zu): %zu, want %zu", t[i].a, t[i].b, t[i].limit, d,
                     t[i].want);
        assert_int_equal(mcg_edit_distance(t[i].b, t[i].a, t[i].limit), d); /* symmetric */
    }
}

static void test_did_you_mean(void **state)
{
    (void)state;
    static const char *const files[] = {"path",  "overwrite", "mode",   "user",
                                        "group", "contents",  "append", NULL};
    static const char *const ids[] = {"id", "name", NULL};
    static const char *const opts[] = {"help", "repo", "trust", "revoked", NULL};
    static const struct {
        const char *word;
        const char *const *cands;
        const char *want; /* NULL: no suggestion */
    } t[] = {
        {"contnets", files, "contents"},
        {"mdoe", files, "mode"},
        {"Mode", files, "mode"},
        {"grop", files, "group"},
        {"overwirte", files, "overwrite"},
        {"mode", files, NULL},       /* a known key is no misspelling */
        {"filesystem", files, NULL}, /* Ignition 2.x's, far from every 3.x key */
        {"hard", files, NULL},
        {"modes", files, "mode"},
        {"nd", ids, NULL},  /* two letters: one edit is half the word */
        {"uid", ids, "id"}, /* three letters: one edit */
        {"nmae", ids, "name"},
        {"nxmx", ids, NULL}, /* four letters: two edits is half the word */
        {"trsut", opts, "trust"},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        const char *got = mcg_did_you_mean(t[i].word, t[i].cands);
        if (!got != !t[i].want || (got && strcmp(got, t[i].want)))
            fail_msg("'%s': got %s, want %s", t[i].word, got ? got : "(none)",
                     t[i].want ? t[i].want : "(none)");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bfmt_truncation),
        cmocka_unit_test(test_base64_table),
        cmocka_unit_test(test_base64_roundtrip),
        cmocka_unit_test(test_dataurl_table),
        cmocka_unit_test(test_dataurl_roundtrip),
        cmocka_unit_test(test_gunzip_ok),
        cmocka_unit_test(test_gunzip_limit),
        cmocka_unit_test(test_gunzip_bad),
        cmocka_unit_test(test_clean_path),
        cmocka_unit_test(test_canonical_json),
        cmocka_unit_test(test_canonical_json_many_keys),
        cmocka_unit_test(test_sha256_hex),
        cmocka_unit_test(test_parse_u64),
        cmocka_unit_test(test_buf_strv_diags),
        cmocka_unit_test(test_diags_sort),
        cmocka_unit_test(test_base64_append),
        cmocka_unit_test(test_json_parse_table),
        cmocka_unit_test(test_json_parse_depth),
        cmocka_unit_test(test_json_parse_vs_jansson),
        cmocka_unit_test(test_edit_distance),
        cmocka_unit_test(test_did_you_mean),
    };
    return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
