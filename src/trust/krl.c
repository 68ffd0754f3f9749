/*
 * krl.c — revoked keys: OpenSSH key revocation lists (PROTOCOL.krl) and
 * plain lists of public keys, the two formats `ssh-keygen -Y verify -r`
 * and git's gpg.ssh.revocationFile read.
 *
 * Both become one set: revoked key blobs (compared without their
 * certificate, as OpenSSH compares them), SHA-1 and SHA-256 fingerprints,
 * and per CA (or for any CA) revoked certificate serial ranges and key ids.
 * A key is revoked when it, or for a certificate its CA key, is in the set,
 * or the certificate's serial or key id is revoked under its CA — the rules
 * of OpenSSH's ssh_krl_check_key() and sshkey_in_file(..., check_ca).
 *
 * Parsing is strict and fails closed, as OpenSSH's is: an unknown section,
 * data left over in a section, a serial of zero, a truncated field — the
 * whole file is refused, and so every signature checked against it. Signed
 * KRLs are refused too (ssh-keygen does not write them; mcgit does not
 * judge a KRL's signature) — say so rather than ignore the signature.
 */
#include "trust/trust_int.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KRL_MAGIC "SSHKRL\n\0"
#define KRL_MAGIC_LEN 8
#define KRL_VERSION 1

enum {
    SECTION_CERTIFICATES = 1,
    SECTION_EXPLICIT_KEY = 2,
    SECTION_FINGERPRINT_SHA1 = 3,
    SECTION_SIGNATURE = 4,
    SECTION_FINGERPRINT_SHA256 = 5,
    CERT_SERIAL_LIST = 0x20,
    CERT_SERIAL_RANGE = 0x21,
    CERT_SERIAL_BITMAP = 0x22,
    CERT_KEY_ID = 0x23,
};

#define BITMAP_MAX_BYTES 2048 /* OpenSSH's SSHBUF_MAX_BIGNUM */

typedef struct blob {
    unsigned char *p;
    size_t n;
} blob;

/* Certificates revoked under one CA (ca.n == 0: under any CA). */
typedef struct rev_ca {
    blob ca;
    uint64_t (*range)[2]; /* inclusive [lo, hi] */
    size_t nrange, caprange;
    blob *kid;
    size_t nkid, capkid;
} rev_ca;

struct mcg_revoked {
    char *name; /* for messages */
    blob *key;  /* plain key blobs */
    size_t nkey, capkey;
    blob *sha1, *sha256;
    size_t nsha1, capsha1, nsha256, capsha256;
    rev_ca *ca;
    size_t nca, capca;
};

/* Append a copy of p[0..len) to the array *v (*n used, *cap allocated). */
static void blob_add(blob **v, size_t *n, size_t *cap, const void *p, size_t len)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        *v = mcg_realloc(*v, *cap * sizeof(**v));
    }
    (*v)[*n].p = mcg_malloc(len ? len : 1);
    if (len)
        memcpy((*v)[*n].p, p, len);
    (*v)[*n].n = len;
    (*n)++;
}

/* Whether p[0..len) is one of the n blobs of v. */
static bool blob_in(const blob *v, size_t n, const void *p, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].n == len && (len == 0 || memcmp(v[i].p, p, len) == 0))
            return true;
    return false;
}

/* Free n blobs and the array. */
static void blobs_free(blob *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].p);
    free(v);
}

/* The entry for CA ca[0..len) (len 0: any CA), created if missing. */
static rev_ca *ca_entry(mcg_revoked *r, const unsigned char *ca, size_t len)
{
    for (size_t i = 0; i < r->nca; i++)
        if (r->ca[i].ca.n == len && (len == 0 || memcmp(r->ca[i].ca.p, ca, len) == 0))
            return &r->ca[i];
    if (r->nca == r->capca) {
        r->capca = r->capca ? r->capca * 2 : 4;
        r->ca = mcg_realloc(r->ca, r->capca * sizeof(*r->ca));
    }
    rev_ca *c = &r->ca[r->nca++];
    memset(c, 0, sizeof(*c));
    c->ca.p = mcg_malloc(len ? len : 1);
    if (len)
        memcpy(c->ca.p, ca, len);
    c->ca.n = len;
    return c;
}

/* Revoke serials lo..hi under c; a run continuing the last range extends it. */
static void range_add(rev_ca *c, uint64_t lo, uint64_t hi)
{
    if (c->nrange && c->range[c->nrange - 1][1] != UINT64_MAX &&
        c->range[c->nrange - 1][1] + 1 == lo) {
        c->range[c->nrange - 1][1] = hi; /* a bitmap's run */
        return;
    }
    if (c->nrange == c->caprange) {
        c->caprange = c->caprange ? c->caprange * 2 : 8;
        c->range = mcg_realloc(c->range, c->caprange * sizeof(*c->range));
    }
    c->range[c->nrange][0] = lo;
    c->range[c->nrange][1] = hi;
    c->nrange++;
}

void mcg_revoked_free(mcg_revoked *r)
{
    if (!r)
        return;
    blobs_free(r->key, r->nkey);
    blobs_free(r->sha1, r->nsha1);
    blobs_free(r->sha256, r->nsha256);
    for (size_t i = 0; i < r->nca; i++) {
        free(r->ca[i].ca.p);
        free(r->ca[i].range);
        blobs_free(r->ca[i].kid, r->ca[i].nkid);
    }
    free(r->ca);
    free(r->name);
    free(r);
}

/* Copy every entry of from (may be NULL) into to. */
static void add_all(mcg_revoked *to, const mcg_revoked *from)
{
    if (!from)
        return;
    if (!to->name)
        to->name = mcg_strdup(from->name);
    for (size_t i = 0; i < from->nkey; i++)
        blob_add(&to->key, &to->nkey, &to->capkey, from->key[i].p, from->key[i].n);
    for (size_t i = 0; i < from->nsha1; i++)
        blob_add(&to->sha1, &to->nsha1, &to->capsha1, from->sha1[i].p, from->sha1[i].n);
    for (size_t i = 0; i < from->nsha256; i++)
        blob_add(&to->sha256, &to->nsha256, &to->capsha256, from->sha256[i].p, from->sha256[i].n);
    for (size_t i = 0; i < from->nca; i++) {
        const rev_ca *f = &from->ca[i];
        rev_ca *t = ca_entry(to, f->ca.p, f->ca.n);
        for (size_t j = 0; j < f->nrange; j++)
            range_add(t, f->range[j][0], f->range[j][1]);
        for (size_t j = 0; j < f->nkid; j++)
            blob_add(&t->kid, &t->nkid, &t->capkid, f->kid[j].p, f->kid[j].n);
    }
}

mcg_revoked *mcg_revoked_merge(const mcg_revoked *a, const mcg_revoked *b)
{
    if (!a && !b)
        return NULL;
    mcg_revoked *r = mcg_calloc(1, sizeof(*r));
    add_all(r, a);
    add_all(r, b);
    return r;
}

/* ------------------------------------------------------------- checking */

/* Is the plain key `plain` (wire blob) revoked by key, SHA-1 or SHA-256? */
static bool plain_revoked(const mcg_revoked *r, const mcg_buf *plain)
{
    unsigned char d1[SHA_DIGEST_LENGTH], d256[MCG_SHA256_LEN];
    SHA1((const unsigned char *)plain->ptr, plain->len, d1);
    mcg_sha256(plain->ptr, plain->len, d256);
    return blob_in(r->sha1, r->nsha1, d1, sizeof(d1)) ||
           blob_in(r->sha256, r->nsha256, d256, sizeof(d256)) ||
           blob_in(r->key, r->nkey, plain->ptr, plain->len);
}

/* Whether c revokes cert by key id, or by serial (never serial 0). */
static bool cert_revoked_under(const rev_ca *c, const mcg_sshcert *cert)
{
    if (blob_in(c->kid, c->nkid, cert->key_id, cert->key_id_len))
        return true;
    if (cert->serial == 0) /* the default serial is never revoked (OpenSSH) */
        return false;
    for (size_t i = 0; i < c->nrange; i++)
        if (cert->serial >= c->range[i][0] && cert->serial <= c->range[i][1])
            return true;
    return false;
}

int mcg_revoked_check(const mcg_revoked *r, const mcg_sshpub *k, mcg_err *err)
{
    mcg_buf plain = MCG_BUF_INIT;
    char fp[64];
    int rc = MCG_ETRUST;

    if (!r)
        return 0;
    mcg_sshkey_plain_blob(k, &plain);
    mcg_ssh_fingerprint((const unsigned char *)plain.ptr, plain.len, fp);
    if (plain_revoked(r, &plain)) {
        mcg_err_set(err, MCG_ETRUST, "key %s is revoked (%s)", fp, r->name);
        goto out;
    }
    if (k->is_cert) {
        const mcg_sshcert *c = &k->cert;
        char kid[80];
        mcg_trust_printable(c->key_id, c->key_id_len, kid, sizeof(kid));
        for (size_t i = 0; i < r->nca; i++) {
            const rev_ca *e = &r->ca[i];
            bool mine =
                e->ca.n == 0 || (e->ca.n == c->ca_len && memcmp(e->ca.p, c->ca, c->ca_len) == 0);
            if (mine && cert_revoked_under(e, c)) {
                mcg_err_set(err, MCG_ETRUST,
                            "certificate '%s' (serial %llu, key %s) is revoked (%s)", kid,
                            (unsigned long long)c->serial, fp, r->name);
                goto out;
            }
        }
        mcg_buf ca = MCG_BUF_INIT;
        mcg_buf_put(&ca, c->ca, c->ca_len);
        bool ca_revoked = plain_revoked(r, &ca);
        char cafp[64];
        mcg_ssh_fingerprint(c->ca, c->ca_len, cafp);
        mcg_buf_free(&ca);
        if (ca_revoked) {
            mcg_err_set(err, MCG_ETRUST, "certificate '%s' is signed by revoked CA key %s (%s)",
                        kid, cafp, r->name);
            goto out;
        }
    }
    rc = 0;
out:
    mcg_buf_free(&plain);
    return rc;
}

/* -------------------------------------------------------------- parsing */

/* Read one byte; false when none is left. */
static bool wire_u8(mcg_wire *w, unsigned *v)
{
    if (w->len < 1)
        return false;
    *v = w->p[0];
    w->p++;
    w->len--;
    return true;
}

/* MCG_EINVAL with "<name>: KRL <what>". */
static int krl_err(mcg_err *err, const char *name, const char *what)
{
    return mcg_err_set(err, MCG_EINVAL, "%s: KRL %s", name, what);
}

/* A serial bitmap subsection (s): an offset, then a bit per serial revoked. */
static int serial_bitmap(rev_ca *c, mcg_wire *s, const char *name, mcg_err *err)
{
    const unsigned char *bm;
    size_t bn;
    uint64_t lo;
    if (!mcg_wire_u64(s, &lo) || !mcg_wire_string(s, &bm, &bn))
        return krl_err(err, name, "serial bitmap is truncated");
    if (bn && (bm[0] & 0x80))
        return krl_err(err, name, "serial bitmap is negative");
    while (bn && bm[0] == 0) {
        bm++;
        bn--;
    }
    if (bn > BITMAP_MAX_BYTES)
        return krl_err(err, name, "serial bitmap is too large");
    for (size_t bit = 0; bit < bn * 8; bit++) {
        if (!(bm[bn - 1 - bit / 8] & (1u << (bit % 8))))
            continue;
        if (bit > 0 && lo + bit < lo)
            return krl_err(err, name, "serial bitmap wraps");
        if (lo + bit == 0)
            return krl_err(err, name, "revokes serial 0");
        range_add(c, lo + bit, lo + bit);
    }
    return 0;
}

/* A KRL certificates section: CA key, reserved, then serial and key id subsections. */
static int parse_certs(mcg_revoked *r, mcg_wire *w, const char *name, mcg_err *err)
{
    const unsigned char *ca, *reserved;
    size_t ca_len, reserved_len;
    char why[160];

    if (!mcg_wire_string(w, &ca, &ca_len) || !mcg_wire_string(w, &reserved, &reserved_len))
        return krl_err(err, name, "certificate section is truncated");
    if (ca_len) {
        mcg_sshpub k;
        if (!mcg_sshkey_parse(&k, ca, ca_len, why, sizeof(why)))
            return mcg_err_set(err, MCG_EINVAL, "%s: KRL certificate section CA key: %s", name,
                               why);
    }
    rev_ca *c = ca_entry(r, ca, ca_len);
    while (w->len) {
        unsigned type;
        const unsigned char *d;
        size_t dn;
        if (!wire_u8(w, &type) || !mcg_wire_string(w, &d, &dn))
            return krl_err(err, name, "certificate subsection is truncated");
        mcg_wire s = {d, dn};
        uint64_t lo, hi;
        switch (type) {
        case CERT_SERIAL_LIST:
            while (s.len) {
                if (!mcg_wire_u64(&s, &lo))
                    return krl_err(err, name, "serial list is truncated");
                if (lo == 0)
                    return krl_err(err, name, "revokes serial 0");
                range_add(c, lo, lo);
            }
            break;
        case CERT_SERIAL_RANGE:
            if (!mcg_wire_u64(&s, &lo) || !mcg_wire_u64(&s, &hi))
                return krl_err(err, name, "serial range is truncated");
            if (lo == 0 || lo > hi)
                return krl_err(err, name, "has an invalid serial range");
            range_add(c, lo, hi);
            break;
        case CERT_SERIAL_BITMAP: {
            int rc = serial_bitmap(c, &s, name, err);
            if (rc)
                return rc;
            break;
        }
        case CERT_KEY_ID:
            while (s.len) {
                const unsigned char *id;
                size_t idn;
                if (!mcg_wire_string(&s, &id, &idn) || memchr(id, '\0', idn))
                    return krl_err(err, name, "key id list is malformed");
                blob_add(&c->kid, &c->nkid, &c->capkid, id, idn);
            }
            break;
        default:
            return mcg_err_set(err, MCG_EINVAL, "%s: KRL certificate subsection type %u is unknown",
                               name, type);
        }
        if (s.len)
            return krl_err(err, name, "certificate subsection has trailing data");
    }
    return 0;
}

/* A binary KRL (the magic already checked). */
static int parse_krl(mcg_revoked *r, const unsigned char *data, size_t len, const char *name,
                     mcg_err *err)
{
    mcg_wire w = {data + KRL_MAGIC_LEN, len - KRL_MAGIC_LEN};
    uint32_t version;
    uint64_t krl_version, date, flags;
    const unsigned char *reserved, *comment;
    size_t reserved_len, comment_len;
    int rc;

    if (!mcg_wire_u32(&w, &version))
        return krl_err(err, name, "header is truncated");
    if (version != KRL_VERSION)
        return mcg_err_set(err, MCG_EINVAL, "%s: KRL format version %u is not supported", name,
                           (unsigned)version);
    if (!mcg_wire_u64(&w, &krl_version) || !mcg_wire_u64(&w, &date) || !mcg_wire_u64(&w, &flags) ||
        !mcg_wire_string(&w, &reserved, &reserved_len) ||
        !mcg_wire_string(&w, &comment, &comment_len))
        return krl_err(err, name, "header is truncated");
    while (w.len) {
        unsigned type;
        const unsigned char *d;
        size_t dn;
        if (!wire_u8(&w, &type) || !mcg_wire_string(&w, &d, &dn))
            return krl_err(err, name, "section is truncated");
        mcg_wire s = {d, dn};
        switch (type) {
        case SECTION_CERTIFICATES:
            if ((rc = parse_certs(r, &s, name, err)) != 0)
                return rc;
            break;
        case SECTION_EXPLICIT_KEY:
        case SECTION_FINGERPRINT_SHA1:
        case SECTION_FINGERPRINT_SHA256:
            while (s.len) {
                const unsigned char *b;
                size_t bn;
                if (!mcg_wire_string(&s, &b, &bn))
                    return krl_err(err, name, "key section is truncated");
                if (type == SECTION_EXPLICIT_KEY) {
                    blob_add(&r->key, &r->nkey, &r->capkey, b, bn);
                } else if (type == SECTION_FINGERPRINT_SHA1) {
                    if (bn != SHA_DIGEST_LENGTH)
                        return krl_err(err, name, "SHA-1 fingerprint is not 20 bytes");
                    blob_add(&r->sha1, &r->nsha1, &r->capsha1, b, bn);
                } else {
                    if (bn != MCG_SHA256_LEN)
                        return krl_err(err, name, "SHA-256 fingerprint is not 32 bytes");
                    blob_add(&r->sha256, &r->nsha256, &r->capsha256, b, bn);
                }
            }
            break;
        case SECTION_SIGNATURE:
            return mcg_err_set(err, MCG_EINVAL,
                               "%s: signed KRLs are not supported (remove the signature)", name);
        default:
            return mcg_err_set(err, MCG_EINVAL, "%s: KRL section type %u is unknown", name, type);
        }
        if (s.len)
            return krl_err(err, name, "section has trailing data");
    }
    return 0;
}

/*
 * The key of a key list line (type: tn bytes, its base64: bn bytes) added
 * to r as its plain key; key and plain are scratch buffers.
 */
static int list_key(mcg_revoked *r, const char *type, size_t tn, const char *b64, size_t bn,
                    mcg_buf *key, mcg_buf *plain, const char *name, size_t lineno, mcg_err *err)
{
    mcg_err derr = {0, ""};
    key->len = 0;
    if (mcg_base64_decode(b64, bn, key, &derr) != 0)
        return mcg_err_set(err, MCG_EINVAL, "%s:%zu: bad base64 in key: %s", name, lineno,
                           derr.msg);
    mcg_sshpub k;
    char why[160];
    mcg_wire w = {(const unsigned char *)key->ptr, key->len};
    const unsigned char *bt;
    size_t btn;
    if (!mcg_wire_string(&w, &bt, &btn) || btn != tn || memcmp(bt, type, tn) != 0)
        return mcg_err_set(err, MCG_EINVAL, "%s:%zu: key type does not match the key blob", name,
                           lineno);
    if (!mcg_sshkey_parse(&k, (const unsigned char *)key->ptr, key->len, why, sizeof(why)))
        return mcg_err_set(err, MCG_EINVAL, "%s:%zu: %s", name, lineno, why);
    plain->len = 0;
    mcg_sshkey_plain_blob(&k, plain);
    blob_add(&r->key, &r->nkey, &r->capkey, plain->ptr, plain->len);
    return 0;
}

/* A text list of public keys ("type base64 [comment]"), as sshkey_in_file reads it. */
static int parse_list(mcg_revoked *r, const char *text, size_t len, const char *name, mcg_err *err)
{
    size_t lineno = 0;
    mcg_buf key = MCG_BUF_INIT, plain = MCG_BUF_INIT;
    int rc = MCG_EINVAL;

    for (size_t pos = 0; pos < len;) {
        const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos, i = 0;
        pos += n + (nl != NULL);
        lineno++;
        if (n && line[n - 1] == '\r')
            n--;
        if (memchr(line, '\0', n)) {
            mcg_err_set(err, MCG_EINVAL, "%s:%zu: line contains a NUL byte", name, lineno);
            goto out;
        }
        while (i < n && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (i == n || line[i] == '#')
            continue;
        size_t t0 = i;
        while (i < n && line[i] != ' ' && line[i] != '\t')
            i++;
        size_t tn = i - t0;
        while (i < n && (line[i] == ' ' || line[i] == '\t'))
            i++;
        size_t b0 = i;
        while (i < n && line[i] != ' ' && line[i] != '\t')
            i++;
        bool is_cert;
        if (!mcg_sshkey_type((const unsigned char *)line + t0, tn, &is_cert) || i == b0) {
            mcg_err_set(err, MCG_EINVAL, "%s:%zu: not a public key (want \"type base64\")", name,
                        lineno);
            goto out;
        }
        if (list_key(r, line + t0, tn, line + b0, i - b0, &key, &plain, name, lineno, err) != 0)
            goto out;
    }
    rc = 0;
out:
    mcg_buf_free(&key);
    mcg_buf_free(&plain);
    return rc;
}

int mcg_signers_revoke(mcg_signers *s, const char *name, const void *data, size_t len, mcg_err *err)
{
    mcg_revoked *r = mcg_calloc(1, sizeof(*r));
    int rc;

    r->name = mcg_strdup(name);
    if (len > MCG_REVOKED_MAX_SIZE) {
        rc = mcg_err_set(err, MCG_EINVAL, "%s: file is larger than %d bytes", name,
                         MCG_REVOKED_MAX_SIZE);
        goto out;
    }
    if (len >= KRL_MAGIC_LEN && memcmp(data, KRL_MAGIC, KRL_MAGIC_LEN) == 0)
        rc = parse_krl(r, data, len, name, err);
    else
        rc = parse_list(r, data, len, name, err);
    if (rc != 0)
        goto out;
    mcg_revoked *merged = mcg_revoked_merge(s->revoked, r);
    mcg_revoked_free(s->revoked);
    s->revoked = merged;
out:
    mcg_revoked_free(r);
    return rc;
}

size_t mcg_signers_revoked_count(const mcg_signers *s)
{
    const mcg_revoked *r = s ? s->revoked : NULL;
    size_t n = 0;
    if (!r)
        return 0;
    n = r->nkey + r->nsha1 + r->nsha256;
    for (size_t i = 0; i < r->nca; i++)
        n += r->ca[i].nrange + r->ca[i].nkid;
    return n;
}

void mcg_revoked_digest(const mcg_revoked *r, EVP_MD_CTX *md)
{
    char tag[64];
    if (!r) {
        mcg_signers_digest_field(md, "no-revocations", 14);
        return;
    }
    snprintf(tag, sizeof(tag), "revoked %zu %zu %zu %zu", r->nkey, r->nsha1, r->nsha256, r->nca);
    mcg_signers_digest_field(md, tag, strlen(tag));
    for (size_t i = 0; i < r->nkey; i++)
        mcg_signers_digest_field(md, r->key[i].p, r->key[i].n);
    for (size_t i = 0; i < r->nsha1; i++)
        mcg_signers_digest_field(md, r->sha1[i].p, r->sha1[i].n);
    for (size_t i = 0; i < r->nsha256; i++)
        mcg_signers_digest_field(md, r->sha256[i].p, r->sha256[i].n);
    for (size_t i = 0; i < r->nca; i++) {
        const rev_ca *c = &r->ca[i];
        mcg_signers_digest_field(md, c->ca.p, c->ca.n);
        for (size_t k = 0; k < c->nrange; k++) {
            snprintf(tag, sizeof(tag), "%llu-%llu", (unsigned long long)c->range[k][0],
                     (unsigned long long)c->range[k][1]);
            mcg_signers_digest_field(md, tag, strlen(tag));
        }
        for (size_t k = 0; k < c->nkid; k++)
            mcg_signers_digest_field(md, c->kid[k].p, c->kid[k].n);
    }
}
