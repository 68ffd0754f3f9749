/*
 * sign.c — making SSH signatures in-process: an ed25519 key pair
 * (libsodium) and git's SSH signature format (PROTOCOL.sshsig, namespace
 * "git", hash sha512), so tools like `mcgit demo` can produce commits that
 * `git verify-commit` and mcg_sshsig_verify accept without running git or
 * ssh-keygen. The inverse of sshsig.c, for the one key type mcgit makes.
 */
#include "trust/trust_int.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define SIG_NAMESPACE "git"
#define SIG_HASH "sha512"

static void put_u32(mcg_buf *b, uint32_t v)
{
    unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    mcg_buf_put(b, x, 4);
}

/* string "ssh-ed25519", string pk: the public key blob. */
static void pubkey_blob(mcg_buf *b, const unsigned char pk[32])
{
    mcg_wire_put_string(b, "ssh-ed25519", 11);
    mcg_wire_put_string(b, pk, 32);
}

void mcg_sshkey_generate(mcg_sshkey *key)
{
    if (sodium_init() < 0)
        abort();
    crypto_sign_keypair(key->pk, key->sk);
}

void mcg_sshkey_wipe(mcg_sshkey *key)
{
    mcg_wipe(key, sizeof(*key));
}

char *mcg_sshkey_public_line(const mcg_sshkey *key, const char *comment)
{
    mcg_buf blob = MCG_BUF_INIT, out = MCG_BUF_INIT;
    pubkey_blob(&blob, key->pk);
    mcg_buf_puts(&out, "ssh-ed25519 ");
    mcg_base64_encode((unsigned char *)blob.ptr, blob.len, &out);
    if (comment)
        mcg_buf_printf(&out, " %s", comment);
    mcg_buf_free(&blob);
    return mcg_buf_detach(&out, NULL);
}

char *mcg_sshsig_sign(const mcg_sshkey *key, const void *msg, size_t len)
{
    return mcg_sshsig_sign_ns(key, SIG_NAMESPACE, msg, len);
}

int mcg_sshkey_from_secret(mcg_sshkey *key, const void *sk, size_t len)
{
    unsigned char pk[32];
    memset(key, 0, sizeof(*key));
    if (sodium_init() < 0)
        abort();
    if (len != sizeof(key->sk))
        return MCG_EINVAL;
    memcpy(key->sk, sk, sizeof(key->sk));
    /* the public half, from the seed, must be the one stored with it */
    crypto_sign_ed25519_sk_to_pk(pk, key->sk);
    unsigned char again_pk[32], again_sk[64];
    crypto_sign_seed_keypair(again_pk, again_sk, key->sk);
    bool ok = !sodium_memcmp(pk, again_pk, sizeof(pk));
    mcg_wipe(again_sk, sizeof(again_sk));
    if (!ok) {
        mcg_sshkey_wipe(key);
        return MCG_EINVAL;
    }
    memcpy(key->pk, pk, sizeof(pk));
    return 0;
}

char *mcg_sshsig_sign_ns(const mcg_sshkey *key, const char *ns, const void *msg, size_t len)
{
    unsigned char h[crypto_hash_sha512_BYTES], sig[crypto_sign_BYTES];
    mcg_buf signed_data = MCG_BUF_INIT, blob = MCG_BUF_INIT, sigblob = MCG_BUF_INIT,
            pk = MCG_BUF_INIT, b64 = MCG_BUF_INIT, out = MCG_BUF_INIT;

    if (sodium_init() < 0)
        abort();
    crypto_hash_sha512(h, len ? msg : (const void *)"", len);
    /* what is signed: "SSHSIG" ns reserved hash H(msg) */
    mcg_buf_put(&signed_data, "SSHSIG", 6);
    mcg_wire_put_string(&signed_data, ns, strlen(ns));
    mcg_wire_put_string(&signed_data, "", 0);
    mcg_wire_put_string(&signed_data, SIG_HASH, strlen(SIG_HASH));
    mcg_wire_put_string(&signed_data, h, sizeof(h));
    crypto_sign_detached(sig, NULL, (unsigned char *)signed_data.ptr, signed_data.len, key->sk);
    mcg_wire_put_string(&sigblob, "ssh-ed25519", 11);
    mcg_wire_put_string(&sigblob, sig, sizeof(sig));
    /* the blob: "SSHSIG" version key ns reserved hash signature */
    mcg_buf_put(&blob, "SSHSIG", 6);
    put_u32(&blob, 1);
    pubkey_blob(&pk, key->pk);
    mcg_wire_put_string(&blob, pk.ptr, pk.len);
    mcg_wire_put_string(&blob, ns, strlen(ns));
    mcg_wire_put_string(&blob, "", 0);
    mcg_wire_put_string(&blob, SIG_HASH, strlen(SIG_HASH));
    mcg_wire_put_string(&blob, sigblob.ptr, sigblob.len);
    mcg_base64_encode((unsigned char *)blob.ptr, blob.len, &b64);
    mcg_buf_puts(&out, "-----BEGIN SSH SIGNATURE-----\n");
    for (size_t i = 0; i < b64.len; i += 70)
        mcg_buf_printf(&out, "%.*s\n", (int)(b64.len - i < 70 ? b64.len - i : 70), b64.ptr + i);
    mcg_buf_puts(&out, "-----END SSH SIGNATURE-----");
    mcg_wipe(h, sizeof(h));
    mcg_wipe(signed_data.ptr, signed_data.len);
    mcg_buf_free(&pk);
    mcg_buf_free(&signed_data);
    mcg_buf_free(&blob);
    mcg_buf_free(&sigblob);
    mcg_buf_free(&b64);
    return mcg_buf_detach(&out, NULL);
}
