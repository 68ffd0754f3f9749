/*
 * sshkey.c — SSH public key blobs: reading the wire format, strict parsing
 * of every key type OpenSSH signs with (ed25519, ecdsa p256/p384/p521, rsa,
 * and the FIDO sk- types) and of OpenSSH certificates, checking signature
 * values by those keys, fingerprints, and conversion to OpenSSL keys.
 *
 * A key is accepted only in its canonical encoding (minimal positive mpints,
 * exact lengths, nothing after the last field), so two blobs name the same
 * key exactly when their bytes are equal: the verifier can then match a
 * signature's key against allowed_signers by comparing bytes.
 *
 * A certificate is checked as OpenSSH's cert_parse() checks it when it reads
 * one: its CA key must be a plain key and the CA's signature over the
 * certificate must verify. Whether it is valid at a time, for a principal,
 * is the verifier's business (sshsig.c).
 */
#include "trust/trust_int.h"

#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <sodium.h>
#include <stdlib.h>
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

bool mcg_wire_u64(mcg_wire *w, uint64_t *v)
{
    uint32_t hi, lo;
    mcg_wire t = *w;
    if (!mcg_wire_u32(&t, &hi) || !mcg_wire_u32(&t, &lo))
        return false;
    *v = (uint64_t)hi << 32 | lo;
    *w = t;
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

static const mcg_keytype key_types[] = {
    {MCG_KEY_ED25519, "ssh-ed25519", "ssh-ed25519-cert-v01@openssh.com", NULL, 0},
    {MCG_KEY_ECDSA, "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256-cert-v01@openssh.com", "nistp256",
     256},
    {MCG_KEY_ECDSA, "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp384-cert-v01@openssh.com", "nistp384",
     384},
    {MCG_KEY_ECDSA, "ecdsa-sha2-nistp521", "ecdsa-sha2-nistp521-cert-v01@openssh.com", "nistp521",
     521},
    {MCG_KEY_RSA, "ssh-rsa", "ssh-rsa-cert-v01@openssh.com", NULL, 0},
    {MCG_KEY_SK_ED25519, "sk-ssh-ed25519@openssh.com", "sk-ssh-ed25519-cert-v01@openssh.com", NULL,
     0},
    {MCG_KEY_SK_ECDSA, "sk-ecdsa-sha2-nistp256@openssh.com",
     "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com", "nistp256", 256},
    {MCG_KEY_DSA, "ssh-dss", "ssh-dss-cert-v01@openssh.com", NULL, 0},
};
#define NTYPES (sizeof(key_types) / sizeof(key_types[0]))

/* Whether s[0..n) equals the string want. */
static bool bytes_is(const unsigned char *s, size_t n, const char *want)
{
    return strlen(want) == n && memcmp(s, want, n) == 0;
}

const mcg_keytype *mcg_sshkey_type(const unsigned char *s, size_t n, bool *is_cert)
{
    for (size_t i = 0; i < NTYPES; i++) {
        if (bytes_is(s, n, key_types[i].name) || bytes_is(s, n, key_types[i].cert)) {
            if (is_cert)
                *is_cert = bytes_is(s, n, key_types[i].cert);
            return &key_types[i];
        }
    }
    return NULL;
}

void mcg_wire_put_string(mcg_buf *b, const void *s, size_t n)
{
    unsigned char l[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                          (unsigned char)(n >> 8), (unsigned char)n};
    mcg_buf_put(b, l, 4);
    mcg_buf_put(b, s, n);
}

void mcg_sshkey_plain_blob(const mcg_sshpub *k, mcg_buf *out)
{
    mcg_wire_put_string(out, k->kt->name, strlen(k->kt->name));
    mcg_buf_put(out, k->fields, k->fields_len);
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

/* The number of significant bits of the big-endian magnitude m[0..n), m[0] != 0. */
static size_t bit_length(const unsigned char *m, size_t n)
{
    size_t bits = (n - 1) * 8;
    for (unsigned c = m[0]; c; c >>= 1)
        bits++;
    return bits;
}

static EVP_PKEY *mcg_sshkey_to_evp(const mcg_sshpub *k);

/* Check a key with OpenSSL's own public-key validation (point on the curve, order). */
static bool evp_key_ok(const mcg_sshpub *k)
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

/* Bytes of an uncompressed point on a curve of `bits` bits. */
static size_t ec_point_len(int bits)
{
    return 1 + 2 * (((size_t)bits + 7) / 8);
}

/* An RSA key's exponent and modulus; one under 2048 bits is parsed but refused. */
static bool rsa_fields(mcg_sshpub *k, mcg_wire *w, char *why, size_t whylen)
{
    if (!wire_posint(w, &k->e, &k->e_len) || !wire_posint(w, &k->n, &k->n_len)) {
        snprintf(why, whylen, "ssh-rsa key blob is truncated or not canonical");
        return false;
    }
    if (k->e_len > 8 || !(k->e[k->e_len - 1] & 1) || (k->e_len == 1 && k->e[0] < 3)) {
        snprintf(why, whylen, "ssh-rsa exponent is not an odd number from 3 to 2^64");
        return false;
    }
    size_t bits = bit_length(k->n, k->n_len);
    if (bits < MCG_RSA_OPENSSH_MIN || bits > MCG_RSA_MAX_BITS) {
        snprintf(why, whylen, "ssh-rsa key is %zu bits, must be %d to %d", bits, MCG_RSA_MIN_BITS,
                 MCG_RSA_MAX_BITS);
        return false;
    }
    if (!(k->n[k->n_len - 1] & 1)) {
        snprintf(why, whylen, "ssh-rsa modulus is even");
        return false;
    }
    if (bits < MCG_RSA_MIN_BITS)
        k->refused = "ssh-rsa keys under 2048 bits are not trusted";
    return true;
}

/* Read the key fields of type kt (after the type name, and a cert's nonce). */
static bool parse_fields(mcg_sshpub *k, mcg_wire *w, char *why, size_t whylen)
{
    const mcg_keytype *kt = k->kt;
    const unsigned char *s;
    size_t n;

    k->fields = w->p;
    switch (kt->type) {
    case MCG_KEY_ED25519:
    case MCG_KEY_SK_ED25519:
        if (!mcg_wire_string(w, &k->pk, &k->pk_len)) {
            snprintf(why, whylen, "%s key blob is truncated", kt->name);
            return false;
        }
        if (k->pk_len != 32) {
            snprintf(why, whylen, "%s public key is %zu bytes, not 32", kt->name, k->pk_len);
            return false;
        }
        break;
    case MCG_KEY_ECDSA:
    case MCG_KEY_SK_ECDSA:
        if (!mcg_wire_string(w, &s, &n) || !mcg_wire_string(w, &k->pk, &k->pk_len)) {
            snprintf(why, whylen, "%s key blob is truncated", kt->name);
            return false;
        }
        if (!bytes_is(s, n, kt->curve)) {
            snprintf(why, whylen, "%s key names another curve", kt->name);
            return false;
        }
        if (k->pk_len != ec_point_len(kt->bits) || k->pk[0] != 0x04) {
            snprintf(why, whylen, "%s point is not %zu uncompressed bytes", kt->name,
                     ec_point_len(kt->bits));
            return false;
        }
        break;
    case MCG_KEY_RSA:
        if (!rsa_fields(k, w, why, whylen))
            return false;
        break;
    case MCG_KEY_DSA:
        for (int i = 0; i < 4; i++) {
            const unsigned char *m;
            size_t ml;
            if (!wire_posint(w, &m, &ml)) {
                snprintf(why, whylen, "ssh-dss key blob is truncated or not canonical");
                return false;
            }
        }
        k->refused = "ssh-dss (DSA) keys are not supported";
        break;
    }
    if (kt->type == MCG_KEY_SK_ED25519 || kt->type == MCG_KEY_SK_ECDSA) {
        if (!mcg_wire_string(w, &k->app, &k->app_len) || memchr(k->app, '\0', k->app_len)) {
            snprintf(why, whylen, "%s key has no valid application", kt->name);
            return false;
        }
    }
    k->fields_len = (size_t)(w->p - k->fields);
    return true;
}

/* A string list of strings (cert principals) or of name/value pairs (options). */
static bool string_list(const unsigned char *p, size_t len, bool pairs, size_t *count)
{
    mcg_wire w = {p, len};
    size_t c = 0;
    while (w.len) {
        const unsigned char *s;
        size_t n;
        if (!mcg_wire_string(&w, &s, &n) || (!pairs && memchr(s, '\0', n)))
            return false;
        if (pairs && !mcg_wire_string(&w, &s, &n))
            return false;
        c++;
    }
    if (count)
        *count = c;
    return true;
}

/* The certificate part after the key fields, the CA key and its signature. */
static bool parse_cert(mcg_sshpub *k, const unsigned char *blob, mcg_wire *w, char *why,
                       size_t whylen)
{
    mcg_sshcert *c = &k->cert;
    const unsigned char *crit, *exts, *reserved, *sig;
    size_t crit_len, exts_len, reserved_len, sig_len;
    char cwhy[128];

    if (!mcg_wire_u64(w, &c->serial) || !mcg_wire_u32(w, &c->type) ||
        !mcg_wire_string(w, &c->key_id, &c->key_id_len) ||
        !mcg_wire_string(w, &c->principals, &c->principals_len) ||
        !mcg_wire_u64(w, &c->valid_after) || !mcg_wire_u64(w, &c->valid_before) ||
        !mcg_wire_string(w, &crit, &crit_len) || !mcg_wire_string(w, &exts, &exts_len) ||
        !mcg_wire_string(w, &reserved, &reserved_len) || !mcg_wire_string(w, &c->ca, &c->ca_len)) {
        snprintf(why, whylen, "%s certificate is truncated", k->kt->cert);
        return false;
    }
    size_t signed_len = (size_t)(w->p - blob);
    if (!mcg_wire_string(w, &sig, &sig_len)) {
        snprintf(why, whylen, "%s certificate is truncated", k->kt->cert);
        return false;
    }
    if (c->type != 1 && c->type != 2) {
        snprintf(why, whylen, "certificate type %u is unknown", (unsigned)c->type);
        return false;
    }
    if (memchr(c->key_id, '\0', c->key_id_len) ||
        !string_list(c->principals, c->principals_len, false, &c->nprincipals) ||
        !string_list(crit, crit_len, true, NULL) || !string_list(exts, exts_len, true, NULL)) {
        snprintf(why, whylen, "certificate has a malformed key id, principals or options");
        return false;
    }
    if (c->nprincipals > MCG_CERT_MAX_PRINCIPALS) {
        snprintf(why, whylen, "certificate lists more than %d principals", MCG_CERT_MAX_PRINCIPALS);
        return false;
    }
    /* the CA: a plain key whose signature over everything before it verifies */
    mcg_sshpub ca;
    mcg_sigval v;
    mcg_err err = {0, ""};
    mcg_wire cw = {c->ca, c->ca_len};
    const unsigned char *ct;
    size_t ctn;
    bool ca_is_cert = false;
    /* looked at before parsing, so that certificates never nest */
    if (mcg_wire_string(&cw, &ct, &ctn) && mcg_sshkey_type(ct, ctn, &ca_is_cert) && ca_is_cert) {
        snprintf(why, whylen, "certificate CA key is itself a certificate");
        return false;
    }
    if (!mcg_sshkey_parse(&ca, c->ca, c->ca_len, cwhy, sizeof(cwhy))) {
        snprintf(why, whylen, "certificate CA key is invalid: %s", cwhy);
        return false;
    }
    if (ca.refused) {
        snprintf(why, whylen, "certificate CA key is refused: %s", ca.refused);
        return false;
    }
    if (mcg_sigval_parse(&v, &ca, sig, sig_len, &err) != 0) {
        snprintf(why, whylen, "certificate CA %s", err.msg);
        return false;
    }
    if (!mcg_sigval_verify(&ca, &v, blob, signed_len)) {
        snprintf(why, whylen, "certificate CA signature does not verify");
        return false;
    }
    return true;
}

bool mcg_sshkey_parse(mcg_sshpub *k, const unsigned char *blob, size_t len, char *why,
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
    if (!(k->kt = mcg_sshkey_type(s, n, &k->is_cert))) {
        char t[48];
        mcg_trust_printable(s, n, t, sizeof(t));
        snprintf(why, whylen, "key type '%s' is not supported", t);
        return false;
    }
    if (k->is_cert && !mcg_wire_string(&w, &s, &n)) {
        snprintf(why, whylen, "%s certificate is truncated", k->kt->cert);
        return false;
    }
    if (!parse_fields(k, &w, why, whylen))
        return false;
    if (k->is_cert && !parse_cert(k, blob, &w, why, whylen))
        return false;
    if (w.len != 0) {
        snprintf(why, whylen, "%s key blob has trailing data (%zu bytes)",
                 k->is_cert ? k->kt->cert : k->kt->name, w.len);
        return false;
    }
    /* OpenSSL's own check for the point; for RSA it is a costly primality test */
    if ((k->kt->type == MCG_KEY_ECDSA || k->kt->type == MCG_KEY_SK_ECDSA) && !evp_key_ok(k)) {
        snprintf(why, whylen, "%s public key is invalid", k->kt->name);
        return false;
    }
    return true;
}

/* OpenSSL's name of the NIST curve of `bits` bits. */
static const char *ossl_group(int bits)
{
    return bits == 256 ? "prime256v1" : bits == 384 ? "secp384r1" : "secp521r1";
}

/*
 * An OpenSSL key for an ecdsa, sk-ecdsa or rsa key (the caller frees it with
 * EVP_PKEY_free), or NULL with the OpenSSL error queue cleared.
 */
static EVP_PKEY *mcg_sshkey_to_evp(const mcg_sshpub *k)
{
    OSSL_PARAM_BLD *bld = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    EVP_PKEY *pkey = NULL;
    BIGNUM *n = NULL, *e = NULL;
    const char *alg;

    if (!(bld = OSSL_PARAM_BLD_new()))
        goto out;
    if (k->kt->type == MCG_KEY_ECDSA || k->kt->type == MCG_KEY_SK_ECDSA) {
        alg = "EC";
        if (!OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
                                             ossl_group(k->kt->bits), 0) ||
            !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, k->pk, k->pk_len))
            goto out;
    } else if (k->kt->type == MCG_KEY_RSA) {
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

/* ------------------------------------------------------ signature values */

/* MCG_ETRUST with "signature is malformed: <what>". */
static int malformed(mcg_err *err, const char *what)
{
    return mcg_err_set(err, MCG_ETRUST, "signature is malformed: %s", what);
}

/* Read a positive, minimally encoded mpint of at most max bytes of magnitude. */
static bool wire_sig_int(mcg_wire *w, const unsigned char **m, size_t *n, size_t max)
{
    return wire_posint(w, m, n) && *n <= max;
}

/* The hash ECDSA uses on a curve of `bits` bits (RFC 5656). */
static const EVP_MD *ecdsa_hash(int bits)
{
    return bits == 256 ? EVP_sha256() : bits == 384 ? EVP_sha384() : EVP_sha512();
}

int mcg_sigval_parse(mcg_sigval *v, const mcg_sshpub *k, const unsigned char *sig, size_t len,
                     mcg_err *err)
{
    const mcg_keytype *kt = k->kt;
    mcg_wire w = {sig, len};
    const unsigned char *st;
    size_t stn;
    char t[48];
    bool sk = kt->type == MCG_KEY_SK_ED25519 || kt->type == MCG_KEY_SK_ECDSA;

    memset(v, 0, sizeof(*v));
    if (!mcg_wire_string(&w, &st, &stn) || !mcg_wire_string(&w, &v->bytes, &v->len))
        return malformed(err, "bad encoding of the signature field");
    if (sk) { /* byte flags, uint32 counter */
        if (w.len < 1)
            return malformed(err, "bad encoding of the signature field");
        v->flags = w.p[0];
        w.p++;
        w.len--;
        if (!mcg_wire_u32(&w, &v->counter))
            return malformed(err, "bad encoding of the signature field");
    }
    if (w.len != 0)
        return malformed(err, "bad encoding of the signature field");
    mcg_trust_printable(st, stn, t, sizeof(t));
    if (kt->type == MCG_KEY_RSA) {
        if (strcmp(t, "rsa-sha2-256") == 0)
            v->hash = EVP_sha256();
        else if (strcmp(t, "rsa-sha2-512") == 0)
            v->hash = EVP_sha512();
        else if (strcmp(t, "ssh-rsa") == 0)
            return mcg_err_set(err, MCG_ETRUST,
                               "signature uses unsupported algorithm ssh-rsa (SHA-1)");
        else
            return mcg_err_set(err, MCG_ETRUST,
                               "signature is malformed: signature type '%s' for an ssh-rsa key", t);
    } else if (kt->type == MCG_KEY_DSA) {
        return mcg_err_set(err, MCG_ETRUST, "signature uses unsupported algorithm ssh-dss");
    } else if (!bytes_is(st, stn, kt->name)) {
        return mcg_err_set(err, MCG_ETRUST,
                           "signature is malformed: signature type '%s' for a %s key", t, kt->name);
    }
    if ((kt->type == MCG_KEY_ED25519 || kt->type == MCG_KEY_SK_ED25519) &&
        v->len != crypto_sign_BYTES)
        return mcg_err_set(err, MCG_ETRUST,
                           "signature is malformed: %s signature is %zu bytes, not 64", kt->name,
                           v->len);
    if (kt->type == MCG_KEY_ECDSA || kt->type == MCG_KEY_SK_ECDSA) {
        size_t max = ((size_t)kt->bits + 7) / 8;
        mcg_wire rs = {v->bytes, v->len};
        char what[96];
        v->hash = ecdsa_hash(kt->bits);
        if (!wire_sig_int(&rs, &v->r, &v->r_len, max) ||
            !wire_sig_int(&rs, &v->s, &v->s_len, max) || rs.len != 0) {
            snprintf(what, sizeof(what), "bad %s signature encoding", kt->name);
            return malformed(err, what);
        }
    }
    if (kt->type == MCG_KEY_RSA && (v->len == 0 || v->len > k->n_len))
        return mcg_err_set(err, MCG_ETRUST,
                           "signature is malformed: RSA signature is %zu bytes for a %zu-byte "
                           "modulus",
                           v->len, k->n_len);
    return 0;
}

/* ECDSA: (r, s) -> DER ECDSA-Sig-Value, then EVP over hash of data. */
static bool verify_ecdsa(EVP_PKEY *pkey, const EVP_MD *hash, const mcg_sigval *v,
                         const unsigned char *data, size_t data_len)
{
    ECDSA_SIG *es = NULL;
    BIGNUM *br = NULL, *bs = NULL;
    unsigned char *der = NULL;
    EVP_MD_CTX *md = NULL;
    int derlen;
    bool ok = false;

    if (!(es = ECDSA_SIG_new()) || !(br = BN_bin2bn(v->r, (int)v->r_len, NULL)) ||
        !(bs = BN_bin2bn(v->s, (int)v->s_len, NULL)) || !ECDSA_SIG_set0(es, br, bs))
        goto out;
    br = bs = NULL; /* transferred */
    if ((derlen = i2d_ECDSA_SIG(es, &der)) <= 0)
        goto out;
    if (!(md = EVP_MD_CTX_new()) || EVP_DigestVerifyInit(md, NULL, hash, NULL, pkey) != 1)
        goto out;
    ok = EVP_DigestVerify(md, der, (size_t)derlen, data, data_len) == 1;
out:
    EVP_MD_CTX_free(md);
    OPENSSL_free(der);
    ECDSA_SIG_free(es);
    BN_free(br);
    BN_free(bs);
    return ok;
}

/* RSA PKCS#1 v1.5 with SHA-256 or SHA-512; a short signature is left-padded. */
static bool verify_rsa(EVP_PKEY *pkey, const EVP_MD *hash, size_t modlen, const unsigned char *sig,
                       size_t sig_len, const unsigned char *data, size_t data_len)
{
    EVP_MD_CTX *md = NULL;
    EVP_PKEY_CTX *pctx = NULL;
    unsigned char *padded = NULL;
    bool ok = false;

    if (sig_len == 0 || sig_len > modlen)
        goto out;
    padded = mcg_calloc(1, modlen);
    memcpy(padded + (modlen - sig_len), sig, sig_len);
    if (!(md = EVP_MD_CTX_new()) || EVP_DigestVerifyInit(md, &pctx, hash, NULL, pkey) != 1 ||
        EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1)
        goto out;
    ok = EVP_DigestVerify(md, padded, modlen, data, data_len) == 1;
out:
    EVP_MD_CTX_free(md); /* frees pctx */
    free(padded);
    return ok;
}

bool mcg_sigval_verify(const mcg_sshpub *k, const mcg_sigval *v, const unsigned char *data,
                       size_t len)
{
    const mcg_keytype *kt = k->kt;
    unsigned char wrapped[32 + 1 + 4 + 32];
    EVP_PKEY *pkey = NULL;
    bool ok = false;

    if (sodium_init() < 0)
        return false;
    if (kt->type == MCG_KEY_SK_ED25519 || kt->type == MCG_KEY_SK_ECDSA) {
        /* PROTOCOL.u2f: what the token signed */
        mcg_sha256(k->app, k->app_len, wrapped);
        wrapped[32] = v->flags;
        wrapped[33] = (unsigned char)(v->counter >> 24);
        wrapped[34] = (unsigned char)(v->counter >> 16);
        wrapped[35] = (unsigned char)(v->counter >> 8);
        wrapped[36] = (unsigned char)v->counter;
        mcg_sha256(data, len, wrapped + 37);
        data = wrapped;
        len = sizeof(wrapped);
    }
    switch (kt->type) {
    case MCG_KEY_ED25519:
    case MCG_KEY_SK_ED25519:
        ok = crypto_sign_verify_detached(v->bytes, data, len, k->pk) == 0;
        break;
    case MCG_KEY_ECDSA:
    case MCG_KEY_SK_ECDSA:
        if ((pkey = mcg_sshkey_to_evp(k)))
            ok = verify_ecdsa(pkey, v->hash, v, data, len);
        break;
    case MCG_KEY_RSA:
        if ((pkey = mcg_sshkey_to_evp(k)))
            ok = verify_rsa(pkey, v->hash, k->n_len, v->bytes, v->len, data, len);
        break;
    default:
        break;
    }
    EVP_PKEY_free(pkey);
    ERR_clear_error();
    mcg_wipe(wrapped, sizeof(wrapped));
    return ok;
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
