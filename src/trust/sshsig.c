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
 * string(bytes) as the key type defines (sk- keys add the FIDO flags and
 * counter). The reserved field is accepted whatever it holds
 * (PROTOCOL.sshsig: ignore it); the signature covers it. The public key may
 * be an OpenSSH certificate, trusted through a cert-authority line.
 *
 * Who may sign is decided as ssh-keygen -Y find-principals / -Y verify
 * decide it (see find_signer and docs/trust.md for where mcgit departs from
 * OpenSSH on purpose), after the revocation list attached to the signer set
 * (krl.c) has had its say.
 *
 * The verifier fails closed, in the manner of OpenSSH's sshsig.c: the result
 * starts as a refusal, every parse step and policy check jumps to `out` on
 * failure, and success is set only after the last check. Everything is an
 * allow-list (one version, two hash algorithms, one namespace, the key types
 * of sshkey.c with their signature types), nothing may trail any structure,
 * and digests are wiped before returning.
 */
#include "trust/trust_int.h"

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

/* The cryptographic check of v by key k over data. Returns 0 or MCG_ETRUST. */
static int verify_inner(const mcg_sshpub *k, const mcg_sigval *v, const char *fp,
                        const unsigned char *data, size_t data_len, mcg_err *err)
{
    if (!mcg_sigval_verify(k, v, data, data_len))
        return mcg_err_set(err, MCG_ETRUST, "signature does not verify (key %s)", fp);
    return 0;
}

/*
 * The principal a line's pattern list admits: the first of its own
 * comma-separated entries that the list matches (git asks ssh-keygen about
 * each principal find-principals prints, and a line of negations admits
 * nobody). Writes it to out and returns true, or false.
 */
static bool line_principal(const char *list, char *out, size_t outlen)
{
    for (const char *p = list;;) {
        size_t n = strcspn(p, ",");
        char *one = mcg_strndup(p, n);
        bool ok = n && mcg_trust_match_list(one, list) == 1;
        if (ok)
            snprintf(out, outlen, "%s", one);
        free(one);
        if (ok)
            return true;
        if (p[n] == '\0')
            return false;
        p += n + 1;
    }
}

/*
 * For a cert-authority line: the certificate must be a user certificate,
 * valid at `when` (valid_after <= when < valid_before, as OpenSSH's
 * sshkey_cert_check_authority), and list a principal the line's pattern
 * list matches; that principal goes to out. Otherwise a reason in why.
 */
static bool cert_admits(const mcg_sshpub *k, const mcg_signer *e, int64_t when, char *out,
                        size_t outlen, char *why, size_t whylen)
{
    const mcg_sshcert *c = &k->cert;
    char kid[80];
    mcg_trust_printable(c->key_id, c->key_id_len, kid, sizeof(kid));
    if (c->type != 1) {
        snprintf(why, whylen, "certificate '%s' is not a user certificate (%s)", kid, e->where);
        return false;
    }
    uint64_t t = when < 0 ? 0 : (uint64_t)when;
    if (when < 0 || t < c->valid_after || t >= c->valid_before) {
        char at[32], a[32], b[32];
        mcg_time_iso(at, when);
        mcg_time_iso(a, c->valid_after > INT64_MAX ? INT64_MAX : (int64_t)c->valid_after);
        if (c->valid_before > (uint64_t)253402300799) /* after 9999: "forever" */
            snprintf(b, sizeof(b), "forever");
        else
            mcg_time_iso(b, (int64_t)c->valid_before);
        snprintf(why, whylen, "certificate '%s' is not valid at %s (valid from %s to %s)", kid, at,
                 a, b);
        return false;
    }
    mcg_wire w = {c->principals, c->principals_len};
    const unsigned char *s;
    size_t n;
    while (mcg_wire_string(&w, &s, &n)) {
        char *p = mcg_strndup((const char *)s, n);
        bool ok = mcg_trust_match_list(p, e->principals) == 1;
        if (ok)
            snprintf(out, outlen, "%s", p);
        free(p);
        if (ok)
            return true;
    }
    snprintf(why, whylen, "certificate '%s' names no principal allowed by %s", kid, e->where);
    return false;
}

/*
 * Whether line e, which holds the signing key, refuses the signature: its
 * namespaces, its validity window at `when`, and for sk keys the flags it
 * requires. The reason goes to why (whylen bytes).
 */
static bool line_refuses(const mcg_signer *e, bool sk, const mcg_sigval *v, const char *fp,
                         int64_t when, const char *ns, char *why, size_t whylen)
{
    if (e->namespaces && mcg_trust_match_list(ns, e->namespaces) != 1) {
        snprintf(why, whylen,
                 "key %s is not allowed for namespace %s (%s); its line (%s) allows "
                 "namespaces \"%s\"",
                 fp, ns, e->where, e->principals, e->namespaces);
    } else if ((e->valid_after && when < e->valid_after) ||
               (e->valid_before && when > e->valid_before)) {
        bool after = e->valid_after && when < e->valid_after;
        char at[32], lim[32];
        mcg_time_iso(at, when);
        mcg_time_iso(lim, after ? e->valid_after : e->valid_before);
        snprintf(why, whylen, "key %s is not valid at %s (%s %s, %s)", fp, at,
                 after ? "valid-after" : "valid-before", lim, e->where);
    } else if (sk && !e->no_touch && !(v->flags & MCG_SK_USER_PRESENT)) {
        snprintf(why, whylen,
                 "key %s signed without user presence (flags 0x%02x; %s has no "
                 "no-touch-required)",
                 fp, v->flags, e->where);
    } else if (sk && e->verify_required && !(v->flags & MCG_SK_USER_VERIFIED)) {
        snprintf(why, whylen,
                 "key %s signed without user verification (flags 0x%02x; %s has "
                 "verify-required)",
                 fp, v->flags, e->where);
    } else {
        return false;
    }
    return true;
}

/*
 * Find the allowed_signers line that lets this key sign namespace git at
 * `when`: a plain line holding the same key (a certificate only matches
 * that very certificate, not its key), or a cert-authority line
 * holding the CA key of a certificate it admits; its namespaces, validity
 * window and, for sk keys, the flags the line requires must hold too.
 * Returns it with the principal in principal[256], or NULL with the reason
 * from the first line holding the key (or "not in allowed signers").
 */
static const mcg_signer *find_signer(const mcg_signers *signers, const unsigned char *blob,
                                     size_t len, const mcg_sshpub *k, const mcg_sigval *v,
                                     const char *fp, int64_t when, const char *ns,
                                     char principal[256], mcg_err *err)
{
    char first[512] = "", why[512];
    bool sk = k->kt->type == MCG_KEY_SK_ED25519 || k->kt->type == MCG_KEY_SK_ECDSA;

    for (size_t i = 0; i < mcg_signers_count(signers); i++) {
        const mcg_signer *e = &signers->v[i];
        why[0] = '\0';
        if (!e->ca) {
            /* OpenSSH's sshkey_equal: same type (a certificate is not its key), same key */
            bool same = e->blob_len == len && mcg_memeq_ct(e->blob, blob, len);
            if (!same)
                continue;
            if (!line_principal(e->principals, principal, 256))
                snprintf(why, sizeof(why), "key %s has no principal in %s", fp, e->where);
            else /* the whole field, as find-principals reports it */
                snprintf(principal, 256, "%s", e->principals);
        } else {
            if (!k->is_cert || e->blob_len != k->cert.ca_len ||
                !mcg_memeq_ct(e->blob, k->cert.ca, e->blob_len))
                continue;
            cert_admits(k, e, when, principal, 256, why, sizeof(why));
        }
        /* why set: refused above */
        if (!why[0] && !line_refuses(e, sk, v, fp, when, ns, why, sizeof(why)))
            return e;
        if (!first[0])
            snprintf(first, sizeof(first), "%s", why);
        principal[0] = '\0';
    }
    principal[0] = '\0';
    if (!first[0])
        mcg_err_set(err, MCG_ETRUST, "key %s is not in allowed signers", fp);
    else
        mcg_err_set(err, MCG_ETRUST, "%s", first);
    return NULL;
}

/* A signature taken apart, its key parsed and the signed data built. */
typedef struct prepared {
    mcg_buf blob, data;
    sshsig s;
    mcg_sshpub k;
    mcg_sigval in;
} prepared;

static void prepared_free(prepared *p)
{
    if (p->data.ptr)
        mcg_wipe(p->data.ptr, p->data.len);
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
                   const void *msg, size_t msg_len, const char *ns, mcg_err *err)
{
    unsigned char h[crypto_hash_sha512_BYTES];
    size_t hlen = 0;
    char why[160], t[48];
    mcg_buf plain = MCG_BUF_INIT;
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
    mcg_sshkey_plain_blob(&p->k, &plain);
    mcg_ssh_fingerprint((const unsigned char *)plain.ptr, plain.len, res->fingerprint);
    snprintf(res->keytype, sizeof(res->keytype), "%s",
             p->k.is_cert ? p->k.kt->cert : p->k.kt->name);
    if (p->k.refused) {
        mcg_err_set(err, MCG_ETRUST, "signature key is refused: %s", p->k.refused);
        goto out;
    }
    if (mcg_sigval_parse(&p->in, &p->k, p->s.sig, p->s.sig_len, err) != 0)
        goto out;

    if (p->s.ns_len != strlen(ns) || memcmp(p->s.ns, ns, p->s.ns_len) != 0) {
        mcg_trust_printable(p->s.ns, p->s.ns_len, t, sizeof(t));
        mcg_err_set(err, MCG_ETRUST, "signature namespace is '%s', not '%s'", t, ns);
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
    mcg_wire_put_string(&p->data, p->s.ns, p->s.ns_len);
    mcg_wire_put_string(&p->data, p->s.reserved, p->s.reserved_len);
    mcg_wire_put_string(&p->data, p->s.halg, p->s.halg_len);
    mcg_wire_put_string(&p->data, h, hlen);
    rc = 0;
out:
    mcg_buf_free(&plain);
    mcg_wipe(h, sizeof(h));
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
    mcg_wire_put_string(&b, p->s.pub, p->s.pub_len);
    mcg_wire_put_string(&b, p->data.ptr, p->data.len);
    mcg_wire_put_string(&b, p->s.sig, p->s.sig_len);
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
    if (prepare(&p, &res, armored, armored_len, msg, msg_len, SIG_NAMESPACE, &err) == 0 &&
        verify_inner(&p.k, &p.in, res.fingerprint, (const unsigned char *)p.data.ptr, p.data.len,
                     &err) == 0) {
        memo_digest(&p, digest);
        rc = 0;
    }
    prepared_free(&p);
    return rc;
}

/*
 * The identity distinct signers are counted by: the key that signed, by its
 * fingerprint, whether it signed as a plain key or through a certificate.
 * One private key is one signer however many certificates it holds (two
 * CAs, two key ids, renewed short-lived certificates, or a plain line and a
 * certificate of the same key): each can be made at will by whoever holds
 * the key, so none is a second person.
 */
static void signer_id(char *out, size_t outlen, const char *fp)
{
    snprintf(out, outlen, "key %s", fp);
}

/* mcg_sshsig_verify_memo for namespace ns. */
static int verify_ns(mcg_sig_result *res, const mcg_signers *signers, const mcg_sigmemo *memo,
                     const char *armored, size_t armored_len, const void *msg, size_t msg_len,
                     int64_t when, const char *ns, mcg_err *err)
{
    prepared p = {0};
    const mcg_signer *signer;
    char principal[256];
    unsigned char d[MCG_SIGMEMO_DIGEST];
    int rc = MCG_ETRUST;

    memset(res, 0, sizeof(*res));
    if (prepare(&p, res, armored, armored_len, msg, msg_len, ns, err) != 0)
        goto out;
    if (signers && mcg_revoked_check(signers->revoked, &p.k, err) != 0) {
        res->revoked = true;
        goto out;
    }
    if (!(signer = find_signer(signers, p.s.pub, p.s.pub_len, &p.k, &p.in, res->fingerprint, when,
                               ns, principal, err)))
        goto out;
    if (memo)
        memo_digest(&p, d);
    if (!(memo && memo_has(memo, d)) &&
        verify_inner(&p.k, &p.in, res->fingerprint, (const unsigned char *)p.data.ptr, p.data.len,
                     err) != 0)
        goto out;
    snprintf(res->principal, sizeof(res->principal), "%s", principal);
    signer_id(res->signer, sizeof(res->signer), res->fingerprint);
    rc = 0;
out:
    prepared_free(&p);
    return rc;
}

int mcg_sshsig_verify_memo(mcg_sig_result *res, const mcg_signers *signers, const mcg_sigmemo *memo,
                           const char *armored, size_t armored_len, const void *msg, size_t msg_len,
                           int64_t when, mcg_err *err)
{
    return verify_ns(res, signers, memo, armored, armored_len, msg, msg_len, when, SIG_NAMESPACE,
                     err);
}

int mcg_sshsig_verify_ns(mcg_sig_result *res, const mcg_signers *signers, const char *armored,
                         size_t armored_len, const void *msg, size_t msg_len, int64_t when,
                         const char *ns, mcg_err *err)
{
    return verify_ns(res, signers, NULL, armored, armored_len, msg, msg_len, when, ns, err);
}

int mcg_sshsig_verify(mcg_sig_result *res, const mcg_signers *signers, const char *armored,
                      size_t armored_len, const void *msg, size_t msg_len, int64_t when,
                      mcg_err *err)
{
    return mcg_sshsig_verify_memo(res, signers, NULL, armored, armored_len, msg, msg_len, when,
                                  err);
}
