/*
 * fuzz_sshsig.c — SSH signatures (SSHSIG, PROTOCOL.sshsig) on untrusted
 * bytes: the armour, the blob inside it, the public key and signature
 * value blobs, checked against a fixed allowed_signers set over the
 * message "msg" (namespace git), and the cryptography alone
 * (mcg_sshsig_check). The first byte picks the form of the rest: armoured
 * text as given, or the binary blob, armoured here (base64 between the
 * BEGIN/END lines), so mutations reach the blob and key parsers directly.
 *
 * Whatever the input, verification must not both fail and name a principal,
 * and must not succeed without one; a signature that verifies must also
 * pass mcg_sshsig_check. The seeds are real ssh-keygen -Y sign outputs by
 * the keys in the set below (ed25519 and ECDSA P-256), so mutations start
 * from signatures that verify.
 *
 * fuzz-sources: src/trust/[a-z]*.c src/util/[a-z]*.c
 * fuzz-pkgs: jansson zlib libcrypto libsodium
 * fuzz-options: -max_len=16384
 */
#include "trust/trust.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static const char signers_text[] =
    "fuzz@example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJGlT6dmjVKk9U0GrKGAQ70UwdQ0mw6pzQHFFMl9v0jg\n"
    "fuzz2@example namespaces=\"git\" ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBJBs4UovlV88hBCGD46YU/i0JAHSwP95T3uydx5ubr33a1ehmX8yS+Gfu8eeIVe57COWe/5v0On6oBBFPRtRUQY=\n";

/* Armour a binary SSHSIG blob as ssh-keygen does (76-column base64 lines). */
static void armour(const unsigned char *blob, size_t len, mcg_buf *out)
{
    mcg_buf b64 = MCG_BUF_INIT;
    mcg_base64_encode(blob, len, &b64);
    mcg_buf_puts(out, "-----BEGIN SSH SIGNATURE-----\n");
    for (size_t i = 0; i < b64.len; i += 76) {
        mcg_buf_put(out, b64.ptr + i, b64.len - i < 76 ? b64.len - i : 76);
        mcg_buf_putc(out, '\n');
    }
    mcg_buf_puts(out, "-----END SSH SIGNATURE-----\n");
    mcg_buf_free(&b64);
}

int LLVMFuzzerTestOneInput(const unsigned char *in, size_t insize)
{
    static mcg_signers *set;
    if (insize < 1)
        return 0;
    mcg_buf arm = MCG_BUF_INIT;
    const unsigned char *data = in + 1;
    size_t size = insize - 1;
    if (in[0] & 1) {
        armour(data, size, &arm);
        data = (const unsigned char *)arm.ptr;
        size = arm.len;
    }
    if (!set) {
        mcg_err e = {0};
        if (mcg_signers_parse(&set, "fuzz", signers_text, strlen(signers_text), &e) != 0)
            abort();
    }
    mcg_sig_result res;
    memset(&res, 0, sizeof(res));
    mcg_err err = {0};
    int rc = mcg_sshsig_verify(&res, set, (const char *)data, size, "msg", 3, 1767225600, &err);
    if (rc == 0 && !res.principal[0])
        abort();
    if (rc != 0 && (res.principal[0] || !err.msg[0]))
        abort();
    unsigned char dig[MCG_SIGMEMO_DIGEST];
    int crc = mcg_sshsig_check(dig, (const char *)data, size, "msg", 3);
    if (rc == 0 && crc != 0)
        abort();
    /* another namespace: the same signature must not pass for it */
    memset(&res, 0, sizeof(res));
    int nrc = mcg_sshsig_verify_ns(&res, set, (const char *)data, size, "msg", 3, 1767225600,
                                   "mcgit-approval", &err);
    if (rc == 0 && nrc == 0)
        abort();
    mcg_buf_free(&arm);
    return 0;
}
