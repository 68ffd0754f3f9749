/*
 * fuzz_dataurl.c — data: URLs (RFC 2397) and gzip, as Ignition file
 * contents carry them: mcg_dataurl_decode on the input as a URL, mcg_gunzip
 * on the decoded bytes and on the raw input (1 MiB output limit).
 *
 * A URL that decodes must survive a round trip: mcg_dataurl_encode of the
 * bytes decodes to the same bytes. Gunzip must respect its limit.
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
    mcg_buf_free(&dec);
    gunzip_check(data, size);
    free(url);
    return 0;
}
