/*
 * sshsig.c — verify an OpenSSH SSHSIG signature (openssh-portable
 * PROTOCOL.sshsig), the format git writes for gpg.format=ssh.
 *
 *     -----BEGIN SSH SIGNATURE-----
 *     base64 of: "SSHSIG" uint32(1) string(publickey) string(namespace)
 *                string(reserved) string(hash_algorithm) string(signature)
 *     -----END SSH SIGNATURE-----
 *
 * The signature covers "SSHSIG" string(namespace) string(reserved)
 * string(hash_algorithm) string(H(message)), and is itself string(sigtype)
 * string(bytes) as the key type defines. The reserved field is accepted
 * whatever it holds (PROTOCOL.sshsig: ignore it); the signature covers it.
 *
 * The verifier fails closed, in the manner of OpenSSH's sshsig.c: the result
 * starts as a refusal, every parse step and policy check jumps to `out` on
 * failure, and success is set only after the last check. Everything is an
 * allow-list (one version, two hash algorithms, one namespace, three key
 * types with their signature types), nothing may trail any structure, and
 * digests are wiped before returning.
 */
#include "trust/trust_int.h"

#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/rsa.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIG_MAGIC "SSHSIG"
#define SIG_MAGIC_LEN 6
#define SIG_VERSION 1
#define SIG_NAMESPACE "git"
#define ARMOR_BEGIN "-----BEGIN SSH SIGNATURE-----\n"
#define ARMOR_END "\n-----END SSH SIGNATURE-----"

/* The fields of a signature blob; pointers into the decoded blob. */
typedef struct sshsig {
    const unsigned char *pub, *ns, *reserved, *halg, *sig;
    size_t pub_len, ns_len, reserved_len, halg_len, sig_len;
} sshsig;

static int malformed(mcg_err *err, const char *what)
{
    return mcg_err_set(err, MCG_ETRUST, "signature is malformed: %s", what);
}

/*
 * Strip the armor: the BEGIN line, non-empty base64 lines, the END line and
 * at most one newline after it. The base64 is decoded strictly into blob.
 */
static int dearmor(const char *a, size_t len, mcg_buf *blob, mcg_err *err)
{
    const size_t blen = sizeof(ARMOR_BEGIN) - 1, elen = sizeof(ARMOR_END) - 1;
    mcg_buf b64 = MCG_BUF_INIT;
    mcg_err derr = {0, ""};
    int rc = MCG_ETRUST;

    if (len > MCG_SSHSIG_MAX_ARMOR) {
        malformed(err, "armored signature is too large");
        goto out;
    }
    if (len < blen || memcmp(a, ARMOR_BEGIN, blen) != 0) {
        malformed(err, "missing BEGIN SSH SIGNATURE line");
        goto out;
    }
    if (a[len - 1] == '\n')
        len--;
    if (len < blen + elen - 1 || memcmp(a + len - elen, ARMOR_END, elen) != 0) {
        malformed(err, "missing END SSH SIGNATURE line");
        goto out;
    }
    /* the body: a[blen, end), lines separated by '\n', none empty */
    size_t end = len - elen;
    if (end <= blen) {
        malformed(err, "no data inside the armor");
        goto out;
    }
    for (size_t p = blen;;) {
        const char *nl = memchr(a + p, '\n', end - p);
        size_t n = nl ? (size_t)(nl - (a + p)) : end - p;
        if (n == 0) {
            malformed(err, "empty line inside the armor");
            goto out;
        }
        mcg_buf_put(&b64, a + p, n);
        if (!nl)
            break;
        p += n + 1;
    }
    if (mcg_base64_decode(b64.ptr, b64.len, blob, &derr) != 0) {
        mcg_err_set(err, MCG_ETRUST, "signature is malformed: %s", derr.msg);
        goto out;
    }
    rc = 0;
out:
    mcg_buf_free(&b64);
    return rc;
}

/* Split a signature blob into its fields; all must be present, nothing after. */
static int parse_blob(sshsig *s, const unsigned char *blob, size_t len, mcg_err *err)
{
    mcg_wire w = {blob, len};
    uint32_t version;

    if (len < SIG_MAGIC_LEN || memcmp(blob, SIG_MAGIC, SIG_MAGIC_LEN) != 0)
        return malformed(err, "bad magic (not an SSHSIG blob)");
    w.p += SIG_MAGIC_LEN;
    w.len -= SIG_MAGIC_LEN;
    if (!mcg_wire_u32(&w, &version))
        return malformed(err, "truncated before the version");
    if (version != SIG_VERSION)
        return mcg_err_set(err, MCG_ETRUST, "signature is malformed: version %u is not supported",
                           (unsigned)version);
    if (!mcg_wire_string(&w, &s->pub, &s->pub_len))
        return malformed(err, "truncated in the public key");
    if (!mcg_wire_string(&w, &s->ns, &s->ns_len))
        return malformed(err, "truncated in the namespace");
    if (!mcg_wire_string(&w, &s->reserved, &s->reserved_len))
        return malformed(err, "truncated in the reserved field");
    if (!mcg_wire_string(&w, &s->halg, &s->halg_len))
        return malformed(err, "truncated in the hash algorithm");
    if (!mcg_wire_string(&w, &s->sig, &s->sig_len))
        return malformed(err, "truncated in the signature");
    if (w.len != 0)
        return mcg_err_set(err, MCG_ETRUST,
                           "signature is malformed: trailing data after the signature (%zu bytes)",
                           w.len);
    return 0;
}

/* Read a positive, minimally encoded mpint of at most max bytes of magnitude. */
static bool wire_sig_int(mcg_wire *w, const unsigned char **m, size_t *n, size_t max)
{
    const unsigned char *s;
    size_t l;
    if (!mcg_wire_string(w, &s, &l) || l == 0 || (s[0] & 0x80))
        return false;
    if (s[0] == 0) {
        if (l < 2 || !(s[1] & 0x80))
            return false;
        s++;
        l--;
    }
    *m = s;
    *n = l;
    return l <= max;
}

/* ECDSA: (r, s) -> DER ECDSA-Sig-Value, then EVP over SHA-256 of data. */
static bool verify_ecdsa(EVP_PKEY *pkey, const unsigned char *r, size_t rn, const unsigned char *s,
                         size_t sn, const unsigned char *data, size_t data_len)
{
    ECDSA_SIG *es = NULL;
    BIGNUM *br = NULL, *bs = NULL;
    unsigned char *der = NULL;
    EVP_MD_CTX *md = NULL;
    int derlen;
    bool ok = false;

    if (!(es = ECDSA_SIG_new()) || !(br = BN_bin2bn(r, (int)rn, NULL)) ||
        !(bs = BN_bin2bn(s, (int)sn, NULL)) || !ECDSA_SIG_set0(es, br, bs))
        goto out;
    br = bs = NULL; /* transferred */
    if ((derlen = i2d_ECDSA_SIG(es, &der)) <= 0)
        goto out;
    if (!(md = EVP_MD_CTX_new()) || EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pkey) != 1)
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

/* The inner signature: its algorithm (checked against the key) and bytes. */
typedef struct inner_sig {
    const EVP_MD *rsa_hash; /* rsa-sha2-256 / rsa-sha2-512 */
    const unsigned char *bytes;
    size_t len;
    const unsigned char *r, *s; /* ecdsa: magnitudes of r and s */
    size_t r_len, s_len;
} inner_sig;

/*
 * Parse the inner signature (string sigtype, string bytes) for key k: the
 * type must be the one the key defines, the bytes of the right size.
 * Returns 0, or MCG_ETRUST with the reason set.
 */
static int parse_inner(inner_sig *in, const mcg_sshkey *k, const unsigned char *sig, size_t sig_len,
                       mcg_err *err)
{
    mcg_wire w = {sig, sig_len};
    const unsigned char *st;
    size_t stn;
    char t[48];

    memset(in, 0, sizeof(*in));
    if (!mcg_wire_string(&w, &st, &stn) || !mcg_wire_string(&w, &in->bytes, &in->len) || w.len != 0)
        return malformed(err, "bad encoding of the signature field");
    mcg_trust_printable(st, stn, t, sizeof(t));
    if (k->type == MCG_KEY_RSA) {
        if (strcmp(t, "rsa-sha2-256") == 0)
            in->rsa_hash = EVP_sha256();
        else if (strcmp(t, "rsa-sha2-512") == 0)
            in->rsa_hash = EVP_sha512();
        else if (strcmp(t, "ssh-rsa") == 0)
            return mcg_err_set(err, MCG_ETRUST,
                               "signature uses unsupported algorithm ssh-rsa (SHA-1)");
        else
            return mcg_err_set(err, MCG_ETRUST,
                               "signature is malformed: signature type '%s' for an ssh-rsa key", t);
    } else if (stn != strlen(k->name) || memcmp(st, k->name, stn) != 0) {
        return mcg_err_set(err, MCG_ETRUST,
                           "signature is malformed: signature type '%s' for a %s key", t, k->name);
    }
    if (k->type == MCG_KEY_ED25519 && in->len != crypto_sign_BYTES)
        return mcg_err_set(err, MCG_ETRUST,
                           "signature is malformed: ssh-ed25519 signature is %zu bytes, not 64",
                           in->len);
    if (k->type == MCG_KEY_ECDSA_P256) {
        mcg_wire rs = {in->bytes, in->len};
        if (!wire_sig_int(&rs, &in->r, &in->r_len, 32) ||
            !wire_sig_int(&rs, &in->s, &in->s_len, 32) || rs.len != 0)
            return malformed(err, "bad ecdsa-sha2-nistp256 signature encoding");
    }
    if (k->type == MCG_KEY_RSA && (in->len == 0 || in->len > k->n_len))
        return mcg_err_set(err, MCG_ETRUST,
                           "signature is malformed: RSA signature is %zu bytes for a %zu-byte "
                           "modulus",
                           in->len, k->n_len);
    return 0;
}

/* The cryptographic check of in by key k over data. Returns 0 or MCG_ETRUST. */
static int verify_inner(const mcg_sshkey *k, const inner_sig *in, const char *fp,
                        const unsigned char *data, size_t data_len, mcg_err *err)
{
    EVP_PKEY *pkey = NULL;
    bool ok = false;
    int rc = MCG_ETRUST;

    if (k->type == MCG_KEY_ED25519) {
        ok = crypto_sign_verify_detached(in->bytes, data, data_len, k->pk) == 0;
    } else {
        if (!(pkey = mcg_sshkey_to_evp(k))) {
            mcg_err_set(err, MCG_ETRUST, "cannot load %s key %s", k->name, fp);
            goto out;
        }
        if (k->type == MCG_KEY_RSA)
            ok = verify_rsa(pkey, in->rsa_hash, k->n_len, in->bytes, in->len, data, data_len);
        else
            ok = verify_ecdsa(pkey, in->r, in->r_len, in->s, in->s_len, data, data_len);
    }
    if (!ok) {
        mcg_err_set(err, MCG_ETRUST, "signature does not verify (key %s)", fp);
        goto out;
    }
    rc = 0;
out:
    EVP_PKEY_free(pkey);
    ERR_clear_error();
    return rc;
}

static void put_string(mcg_buf *b, const void *s, size_t n)
{
    unsigned char l[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                          (unsigned char)(n >> 8), (unsigned char)n};
    mcg_buf_put(b, l, 4);
    mcg_buf_put(b, s, n);
}

/*
 * Find the allowed_signers line that lets this key sign namespace git at
 * `when`. Returns it, or NULL with the reason from the first line holding
 * the key (or "not in allowed signers").
 */
static const mcg_signer *find_signer(const mcg_signers *signers, const unsigned char *blob,
                                     size_t len, const char *fp, int64_t when, mcg_err *err)
{
    const mcg_signer *refused = NULL;
    const char *why = NULL;
    int64_t bound = 0;

    for (size_t i = 0; i < mcg_signers_count(signers); i++) {
        const mcg_signer *e = &signers->v[i];
        const char *no = NULL;
        if (e->blob_len != len || !mcg_memeq_ct(e->blob, blob, len))
            continue;
        if (e->namespaces && mcg_trust_match_list(SIG_NAMESPACE, e->namespaces) != 1)
            no = "namespaces";
        else if (e->valid_after && when < e->valid_after)
            no = "valid-after";
        else if (e->valid_before && when > e->valid_before)
            no = "valid-before";
        if (!no)
            return e;
        if (!refused) {
            refused = e;
            why = no;
            bound = strcmp(no, "valid-after") == 0 ? e->valid_after : e->valid_before;
        }
    }
    if (!refused) {
        mcg_err_set(err, MCG_ETRUST, "key %s is not in allowed signers", fp);
    } else if (strcmp(why, "namespaces") == 0) {
        mcg_err_set(err, MCG_ETRUST, "key %s is not allowed for namespace %s (%s)", fp,
                    SIG_NAMESPACE, refused->where);
    } else {
        char at[32], lim[32];
        mcg_trust_fmt_time(when, at);
        mcg_trust_fmt_time(bound, lim);
        mcg_err_set(err, MCG_ETRUST, "key %s is not valid at %s (%s %s, %s)", fp, at, why, lim,
                    refused->where);
    }
    return NULL;
}

/* A signature taken apart, its key parsed and the signed data built. */
typedef struct prepared {
    mcg_buf blob, data;
    sshsig s;
    mcg_sshkey k;
    inner_sig in;
} prepared;

static void prepared_free(prepared *p)
{
    if (p->data.ptr)
        sodium_memzero(p->data.ptr, p->data.len);
    mcg_buf_free(&p->data);
    mcg_buf_free(&p->blob);
}

/*
 * Everything but the signers and the cryptography: the armor and blob
 * parsed strictly, the key accepted, the namespace git, the hash algorithm
 * supported; p->data is then what the key signed. Fills res's fingerprint
 * and keytype once the key is parsed.
 */
static int prepare(prepared *p, mcg_sig_result *res, const char *armored, size_t armored_len,
                   const void *msg, size_t msg_len, mcg_err *err)
{
    unsigned char h[crypto_hash_sha512_BYTES];
    size_t hlen = 0;
    char why[128], t[48];
    int rc = MCG_ETRUST;

    if (sodium_init() < 0) {
        mcg_err_set(err, MCG_ETRUST, "cannot initialise libsodium");
        goto out;
    }
    if (msg == NULL && msg_len != 0) {
        mcg_err_set(err, MCG_ETRUST, "no message to verify");
        goto out;
    }
    if (dearmor(armored, armored_len, &p->blob, err) != 0 ||
        parse_blob(&p->s, (const unsigned char *)p->blob.ptr, p->blob.len, err) != 0)
        goto out;

    if (!mcg_sshkey_parse(&p->k, p->s.pub, p->s.pub_len, why, sizeof(why))) {
        mcg_err_set(err, MCG_ETRUST, "signature key is refused: %s", why);
        goto out;
    }
    mcg_ssh_fingerprint(p->s.pub, p->s.pub_len, res->fingerprint);
    snprintf(res->keytype, sizeof(res->keytype), "%s", p->k.name);
    if (parse_inner(&p->in, &p->k, p->s.sig, p->s.sig_len, err) != 0)
        goto out;

    if (p->s.ns_len != strlen(SIG_NAMESPACE) || memcmp(p->s.ns, SIG_NAMESPACE, p->s.ns_len) != 0) {
        mcg_trust_printable(p->s.ns, p->s.ns_len, t, sizeof(t));
        mcg_err_set(err, MCG_ETRUST, "signature namespace is '%s', not '%s'", t, SIG_NAMESPACE);
        goto out;
    }
    if (p->s.halg_len == 6 && memcmp(p->s.halg, "sha256", 6) == 0) {
        mcg_sha256(msg_len ? msg : "", msg_len, h);
        hlen = MCG_SHA256_LEN;
    } else if (p->s.halg_len == 6 && memcmp(p->s.halg, "sha512", 6) == 0) {
        crypto_hash_sha512(h, msg_len ? msg : (const void *)"", msg_len);
        hlen = crypto_hash_sha512_BYTES;
    } else {
        mcg_trust_printable(p->s.halg, p->s.halg_len, t, sizeof(t));
        mcg_err_set(err, MCG_ETRUST, "signature uses unsupported hash algorithm '%s'", t);
        goto out;
    }
    mcg_buf_put(&p->data, SIG_MAGIC, SIG_MAGIC_LEN);
    put_string(&p->data, p->s.ns, p->s.ns_len);
    put_string(&p->data, p->s.reserved, p->s.reserved_len);
    put_string(&p->data, p->s.halg, p->s.halg_len);
    put_string(&p->data, h, hlen);
    rc = 0;
out:
    sodium_memzero(h, sizeof(h));
    return rc;
}

/*
 * What a memo remembers of a signature that verified: SHA-256 over the
 * public key, the signed data (which holds the message's digest) and the
 * signature, each length-prefixed. Equal digests mean this key's signature
 * over this message, whatever armor or commit it came in.
 */
static void memo_digest(const prepared *p, unsigned char out[MCG_SIGMEMO_DIGEST])
{
    mcg_buf b = MCG_BUF_INIT;
    put_string(&b, p->s.pub, p->s.pub_len);
    put_string(&b, p->data.ptr, p->data.len);
    put_string(&b, p->s.sig, p->s.sig_len);
    mcg_sha256(b.ptr, b.len, out);
    mcg_buf_free(&b);
}

struct mcg_sigmemo {
    unsigned char (*d)[MCG_SIGMEMO_DIGEST]; /* sorted, unique */
    size_t n;
};

static int digest_cmp(const void *a, const void *b)
{
    return memcmp(a, b, MCG_SIGMEMO_DIGEST);
}

mcg_sigmemo *mcg_sigmemo_new(const unsigned char (*digests)[MCG_SIGMEMO_DIGEST], size_t n)
{
    mcg_sigmemo *m = mcg_calloc(1, sizeof(*m));
    m->d = mcg_malloc((n ? n : 1) * sizeof(*m->d));
    if (n)
        memcpy(m->d, digests, n * sizeof(*m->d));
    qsort(m->d, n, sizeof(*m->d), digest_cmp);
    for (size_t i = 0; i < n; i++)
        if (!m->n || memcmp(m->d[m->n - 1], m->d[i], MCG_SIGMEMO_DIGEST) != 0)
            memmove(m->d[m->n++], m->d[i], MCG_SIGMEMO_DIGEST);
    return m;
}

void mcg_sigmemo_free(mcg_sigmemo *m)
{
    if (!m)
        return;
    free(m->d);
    free(m);
}

size_t mcg_sigmemo_count(const mcg_sigmemo *m)
{
    return m ? m->n : 0;
}

static bool memo_has(const mcg_sigmemo *m, const unsigned char d[MCG_SIGMEMO_DIGEST])
{
    return m && m->n && bsearch(d, m->d, m->n, sizeof(*m->d), digest_cmp) != NULL;
}

int mcg_sshsig_check(unsigned char digest[MCG_SIGMEMO_DIGEST], const char *armored,
                     size_t armored_len, const void *msg, size_t msg_len)
{
    prepared p = {0};
    mcg_sig_result res = {0};
    mcg_err err = {0};
    int rc = MCG_ETRUST;
    if (prepare(&p, &res, armored, armored_len, msg, msg_len, &err) == 0 &&
        verify_inner(&p.k, &p.in, res.fingerprint, (const unsigned char *)p.data.ptr, p.data.len,
                     &err) == 0) {
        memo_digest(&p, digest);
        rc = 0;
    }
    prepared_free(&p);
    return rc;
}

int mcg_sshsig_verify_memo(mcg_sig_result *res, const mcg_signers *signers,
                           const mcg_sigmemo *memo, const char *armored, size_t armored_len,
                           const void *msg, size_t msg_len, int64_t when, mcg_err *err)
{
    prepared p = {0};
    const mcg_signer *signer;
    unsigned char d[MCG_SIGMEMO_DIGEST];
    int rc = MCG_ETRUST;

    memset(res, 0, sizeof(*res));
    if (prepare(&p, res, armored, armored_len, msg, msg_len, err) != 0)
        goto out;
    if (!(signer = find_signer(signers, p.s.pub, p.s.pub_len, res->fingerprint, when, err)))
        goto out;
    if (memo)
        memo_digest(&p, d);
    if (!(memo && memo_has(memo, d)) &&
        verify_inner(&p.k, &p.in, res->fingerprint, (const unsigned char *)p.data.ptr, p.data.len,
                     err) != 0)
        goto out;
    snprintf(res->principal, sizeof(res->principal), "%s", signer->principals);
    rc = 0;
out:
    prepared_free(&p);
    return rc;
}

int mcg_sshsig_verify(mcg_sig_result *res, const mcg_signers *signers, const char *armored,
                      size_t armored_len, const void *msg, size_t msg_len, int64_t when,
                      mcg_err *err)
{
    return mcg_sshsig_verify_memo(res, signers, NULL, armored, armored_len, msg, msg_len, when,
                                  err);
}
