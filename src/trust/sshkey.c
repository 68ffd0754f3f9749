/*
 * sshkey.c — SSH public key blobs: reading the wire format, strict parsing
 * of the three supported key types, fingerprints, and conversion to OpenSSL
 * keys.
 *
 * A key is accepted only in its canonical encoding (minimal positive mpints,
 * exact lengths, nothing after the last field), so two blobs name the same
 * key exactly when their bytes are equal: the verifier can then match a
 * signature's key against allowed_signers by comparing bytes.
 */
#include "trust/trust_int.h"

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/param_build.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------ SSH wire reader */

bool mcg_wire_u32(mcg_wire *w, uint32_t *v)
{
    if (w->len < 4)
        return false;
    *v = (uint32_t)w->p[0] << 24 | (uint32_t)w->p[1] << 16 | (uint32_t)w->p[2] << 8 | w->p[3];
    w->p += 4;
    w->len -= 4;
    return true;
}

bool mcg_wire_string(mcg_wire *w, const unsigned char **s, size_t *n)
{
    mcg_wire t = *w;
    uint32_t l;
    if (!mcg_wire_u32(&t, &l) || l > t.len)
        return false;
    *s = t.p;
    *n = l;
    w->p = t.p + l;
    w->len = t.len - l;
    return true;
}

bool mcg_wire_string_is(mcg_wire *w, const char *want)
{
    const unsigned char *s;
    size_t n;
    return mcg_wire_string(w, &s, &n) && n == strlen(want) && memcmp(s, want, n) == 0;
}

void mcg_trust_printable(const unsigned char *s, size_t n, char *out, size_t outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 4 < outlen; i++)
        out[o++] = s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\'' ? (char)s[i] : '?';
    if (o + 4 >= outlen && o < n) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

/* ------------------------------------------------------ key blobs */

static const char *const key_names[] = {
    [MCG_KEY_ED25519] = "ssh-ed25519",
    [MCG_KEY_ECDSA_P256] = "ecdsa-sha2-nistp256",
    [MCG_KEY_RSA] = "ssh-rsa",
};

static int key_type_of(const unsigned char *s, size_t n)
{
    for (int t = MCG_KEY_ED25519; t <= MCG_KEY_RSA; t++)
        if (strlen(key_names[t]) == n && memcmp(key_names[t], s, n) == 0)
            return t;
    return 0;
}

const char *mcg_sshkey_type_name(const unsigned char *s, size_t n)
{
    int t = key_type_of(s, n);
    return t ? key_names[t] : NULL;
}

/*
 * Read an mpint that must be strictly positive and minimally encoded; the
 * magnitude (without the sign byte) is returned in *m, *mlen.
 */
static bool wire_posint(mcg_wire *w, const unsigned char **m, size_t *mlen)
{
    const unsigned char *s;
    size_t n;
    if (!mcg_wire_string(w, &s, &n) || n == 0 || (s[0] & 0x80))
        return false;
    if (s[0] == 0) {
        if (n < 2 || !(s[1] & 0x80))
            return false; /* a needless leading zero */
        s++;
        n--;
    }
    *m = s;
    *mlen = n;
    return true;
}

static size_t bit_length(const unsigned char *m, size_t n)
{
    size_t bits = (n - 1) * 8;
    for (unsigned c = m[0]; c; c >>= 1)
        bits++;
    return bits;
}

/* Check a key with OpenSSL's own public-key validation (point on the curve, order). */
static bool evp_key_ok(const mcg_sshkey *k)
{
    EVP_PKEY *pkey = mcg_sshkey_to_evp(k);
    EVP_PKEY_CTX *ctx = NULL;
    bool ok = false;
    if (!pkey)
        goto out;
    if (!(ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL)))
        goto out;
    ok = EVP_PKEY_public_check(ctx) == 1;
out:
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(pkey);
    ERR_clear_error();
    return ok;
}

bool mcg_sshkey_parse(mcg_sshkey *k, const unsigned char *blob, size_t len, char *why,
                      size_t whylen)
{
    mcg_wire w = {blob, len};
    const unsigned char *s;
    size_t n;

    memset(k, 0, sizeof(*k));
    if (!mcg_wire_string(&w, &s, &n)) {
        snprintf(why, whylen, "key blob is truncated");
        return false;
    }
    if (!(k->type = key_type_of(s, n))) {
        char t[48];
        mcg_trust_printable(s, n, t, sizeof(t));
        snprintf(why, whylen, "key type '%s' is not supported", t);
        return false;
    }
    k->name = key_names[k->type];

    switch (k->type) {
    case MCG_KEY_ED25519:
        if (!mcg_wire_string(&w, &k->pk, &k->pk_len)) {
            snprintf(why, whylen, "ssh-ed25519 key blob is truncated");
            return false;
        }
        if (k->pk_len != 32) {
            snprintf(why, whylen, "ssh-ed25519 public key is %zu bytes, not 32", k->pk_len);
            return false;
        }
        break;
    case MCG_KEY_ECDSA_P256:
        if (!mcg_wire_string(&w, &s, &n)) {
            snprintf(why, whylen, "ecdsa-sha2-nistp256 key blob is truncated");
            return false;
        }
        if (n != 8 || memcmp(s, "nistp256", 8) != 0) {
            snprintf(why, whylen, "ecdsa-sha2-nistp256 key names another curve");
            return false;
        }
        if (!mcg_wire_string(&w, &k->pk, &k->pk_len)) {
            snprintf(why, whylen, "ecdsa-sha2-nistp256 key blob is truncated");
            return false;
        }
        if (k->pk_len != 65 || k->pk[0] != 0x04) {
            snprintf(why, whylen, "ecdsa-sha2-nistp256 point is not 65 uncompressed bytes");
            return false;
        }
        break;
    case MCG_KEY_RSA:
        if (!wire_posint(&w, &k->e, &k->e_len) || !wire_posint(&w, &k->n, &k->n_len)) {
            snprintf(why, whylen, "ssh-rsa key blob is truncated or not canonical");
            return false;
        }
        if (k->e_len > 8 || !(k->e[k->e_len - 1] & 1) || (k->e_len == 1 && k->e[0] < 3)) {
            snprintf(why, whylen, "ssh-rsa exponent is not an odd number from 3 to 2^64");
            return false;
        }
        size_t bits = bit_length(k->n, k->n_len);
        if (bits < MCG_RSA_MIN_BITS || bits > MCG_RSA_MAX_BITS) {
            snprintf(why, whylen, "ssh-rsa key is %zu bits, must be %d to %d", bits,
                     MCG_RSA_MIN_BITS, MCG_RSA_MAX_BITS);
            return false;
        }
        if (!(k->n[k->n_len - 1] & 1)) {
            snprintf(why, whylen, "ssh-rsa modulus is even");
            return false;
        }
        break;
    }
    if (w.len != 0) {
        snprintf(why, whylen, "%s key blob has trailing data (%zu bytes)", k->name, w.len);
        return false;
    }
    /* OpenSSL's own check for the point; for RSA it is a costly primality test */
    if (k->type == MCG_KEY_ECDSA_P256 && !evp_key_ok(k)) {
        snprintf(why, whylen, "%s public key is invalid", k->name);
        return false;
    }
    return true;
}

EVP_PKEY *mcg_sshkey_to_evp(const mcg_sshkey *k)
{
    OSSL_PARAM_BLD *bld = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    EVP_PKEY *pkey = NULL;
    BIGNUM *n = NULL, *e = NULL;
    const char *alg;

    if (!(bld = OSSL_PARAM_BLD_new()))
        goto out;
    if (k->type == MCG_KEY_ECDSA_P256) {
        alg = "EC";
        if (!OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) ||
            !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, k->pk, k->pk_len))
            goto out;
    } else if (k->type == MCG_KEY_RSA) {
        alg = "RSA";
        if (!(n = BN_bin2bn(k->n, (int)k->n_len, NULL)) ||
            !(e = BN_bin2bn(k->e, (int)k->e_len, NULL)) ||
            !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) ||
            !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e))
            goto out;
    } else {
        goto out;
    }
    if (!(params = OSSL_PARAM_BLD_to_param(bld)) ||
        !(ctx = EVP_PKEY_CTX_new_from_name(NULL, alg, NULL)) || EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1) {
        EVP_PKEY_free(pkey);
        pkey = NULL;
    }
out:
    if (!pkey)
        ERR_clear_error();
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(n);
    BN_free(e);
    return pkey;
}

/* ------------------------------------------------------ fingerprints */

void mcg_ssh_fingerprint(const unsigned char *blob, size_t len, char out[64])
{
    unsigned char d[MCG_SHA256_LEN];
    mcg_buf b = MCG_BUF_INIT;

    mcg_sha256(blob, len, d);
    mcg_base64_encode(d, sizeof(d), &b);
    while (b.len && b.ptr[b.len - 1] == '=')
        b.len--;
    snprintf(out, 64, "SHA256:%.*s", (int)b.len, b.ptr);
    mcg_buf_free(&b);
}
