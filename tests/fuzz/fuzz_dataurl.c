/*
 * fuzz_dataurl.c — data: URLs (RFC 2397) and gzip, as Ignition file
 * contents carry them: mcg_dataurl_decode on the input as a URL, mcg_gunzip
 * on the decoded bytes and on the raw input (1 MiB output limit).
 *
 * A URL that decodes must survive a round trip: mcg_dataurl_encode of the
 * bytes decodes to the same bytes. Gunzip must respect its limit. The
 * chunked decoder (mcg_datadec, chunk size from the input's length) must
 * agree with the whole-buffer decoders: the same bytes, or a refusal (with
 * the same message when nothing is inflated).
 *
 * fuzz-sources: src/util/[a-z]*.c
 * fuzz-pkgs: jansson zlib libcrypto libsodium
 * fuzz-options: -max_len=65536
 */
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#define LIMIT (1u << 20)

static void gunzip_check(const unsigned char *in, size_t len)
{
    mcg_buf out = MCG_BUF_INIT;
    mcg_err err = {0};
    if (mcg_gunzip(in, len, LIMIT, &out, &err) == 0) {
        if (out.len > LIMIT)
            abort();
    } else if (!err.msg[0]) {
        abort();
    }
    mcg_buf_free(&out);
}

/* url (len bytes) through mcg_datadec, cap bytes at a time, against want / want_rc. */
static void chunked_check(const char *url, size_t len, bool gz, size_t cap, const mcg_buf *want,
                          int want_rc, const char *want_msg)
{
    mcg_dataref ref;
    mcg_err err = {0};
    if (mcg_dataref_init(&ref, url, len, &err) != 0) {
        if (want_rc == 0)
            abort();
        return;
    }
    ref.gzip = gz;
    mcg_datadec d;
    mcg_buf got = MCG_BUF_INIT;
    unsigned char *buf = malloc(cap);
    int rc = mcg_datadec_start(&d, &ref, LIMIT, &err);
    while (rc == 0) {
        size_t n = 0;
        if ((rc = mcg_datadec_read(&d, buf, cap, &n, &err)) != 0 || n == 0)
            break;
        if (n > cap)
            abort();
        mcg_buf_put(&got, buf, n);
    }
    mcg_datadec_end(&d);
    if ((rc == 0) != (want_rc == 0))
        abort();
    if (rc == 0 && (got.len != want->len || (got.len && memcmp(got.ptr, want->ptr, got.len))))
        abort();
    if (rc != 0 && !gz && strcmp(err.msg, want_msg) != 0)
        abort();
    mcg_buf_free(&got);
    free(buf);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char *url = malloc(size + 1);
    memcpy(url, data, size);
    url[size] = '\0';
    mcg_buf dec = MCG_BUF_INIT;
    mcg_err err = {0};
    if (mcg_dataurl_decode(url, &dec, &err) == 0) {
        mcg_buf enc = MCG_BUF_INIT, again = MCG_BUF_INIT;
        mcg_dataurl_encode((const unsigned char *)dec.ptr, dec.len, &enc);
        mcg_buf_putc(&enc, '\0');
        if (mcg_dataurl_decode(enc.ptr, &again, &err) != 0 || again.len != dec.len ||
            (dec.len && memcmp(again.ptr, dec.ptr, dec.len) != 0))
            abort();
        mcg_buf_free(&enc);
        mcg_buf_free(&again);
        gunzip_check((const unsigned char *)dec.ptr, dec.len);
    } else if (!err.msg[0]) {
        abort();
    }
    {
        size_t len = strlen(url), cap = 1 + size % 67;
        mcg_buf raw = MCG_BUF_INIT, plain = MCG_BUF_INIT;
        mcg_err e1 = {0}, e2 = {0};
        int rc = mcg_dataurl_decode_n(url, len, &raw, &e1);
        chunked_check(url, len, false, cap, &raw, rc, e1.msg);
        int zrc = rc ? rc : mcg_gunzip((unsigned char *)raw.ptr, raw.len, LIMIT, &plain, &e2);
        chunked_check(url, len, true, cap, &plain, zrc, rc ? e1.msg : e2.msg);
        mcg_buf_free(&raw);
        mcg_buf_free(&plain);
    }
    mcg_buf_free(&dec);
    gunzip_check(data, size);
    free(url);
    return 0;
}
