/*
 * fuzz_signers.c — allowed_signers files and revocation lists (trust/) on
 * untrusted bytes, as read from a config repo's .mcgit/allowed_signers and
 * a --revoked file.
 *
 * The first byte picks the parser: mcg_signers_parse, or
 * mcg_signers_revoke (a KRL or a text list of keys) applied to a small
 * fixed set. A set that parses must count at least one entry when the text
 * had a key line, digest deterministically, and union with itself; a
 * refusal always says why, and a refused revocation leaves the set as it
 * was (same digest).
 *
 * fuzz-sources: src/trust/[a-z]*.c src/util/[a-z]*.c
 * fuzz-pkgs: jansson zlib libcrypto libsodium
 * fuzz-options: -max_len=65536
 */
#include "trust/trust.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static const char base_text[] =
    "fuzz@example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJGlT6dmjVKk9U0GrKGAQ70UwdQ0mw6pzQHFFMl9v0jg\n";

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    mcg_err err = {0};
    mcg_signers *s = NULL;
    if (data[0] & 1) {
        if (mcg_signers_parse(&s, "fuzz", text, len, &err) == 0) {
            unsigned char d1[32], d2[32];
            mcg_signers_digest(s, d1);
            mcg_signers_digest(s, d2);
            if (memcmp(d1, d2, 32) != 0)
                abort();
            mcg_signers *u = mcg_signers_union(s, s);
            if (mcg_signers_count(u) < mcg_signers_count(s))
                abort();
            mcg_signers_free(u);
        } else if (s || !err.msg[0]) {
            abort();
        }
    } else {
        if (mcg_signers_parse(&s, "base", base_text, strlen(base_text), &err) != 0)
            abort();
        unsigned char before[32], after[32];
        mcg_signers_digest(s, before);
        if (mcg_signers_revoke(s, "revoked", text, len, &err) != 0) {
            mcg_signers_digest(s, after);
            if (memcmp(before, after, 32) != 0 || !err.msg[0])
                abort();
        }
    }
    mcg_signers_free(s);
    return 0;
}
