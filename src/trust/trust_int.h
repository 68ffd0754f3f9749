/*
 * trust_int.h — shared inside trust/: the SSH wire-format reader, public key
 * blobs, allowed_signers entries and the pattern and time helpers that both
 * the parser (signers.c) and the verifier (sshsig.c) need.
 */
#ifndef MCG_TRUST_INT_H
#define MCG_TRUST_INT_H

#include "trust/trust.h"

#include <openssl/evp.h>

/* ------------------------------------------------------ SSH wire reader */

/* A read cursor over untrusted bytes (RFC 4251 encodings). Never owns. */
typedef struct mcg_wire {
    const unsigned char *p;
    size_t len; /* bytes left */
} mcg_wire;

/* Read a big-endian uint32; false (cursor unchanged) when too short. */
bool mcg_wire_u32(mcg_wire *w, uint32_t *v);
/* Read a big-endian uint64; false (cursor unchanged) when too short. */
bool mcg_wire_u64(mcg_wire *w, uint64_t *v);
/* Read a uint32-length-prefixed string; *s points into the input. */
bool mcg_wire_string(mcg_wire *w, const unsigned char **s, size_t *n);

/* ------------------------------------------------------ public keys */

/* Plain key algorithms. MCG_KEY_DSA is parsed (OpenSSH reads it) but never trusted. */
enum {
    MCG_KEY_ED25519 = 1,
    MCG_KEY_ECDSA = 2, /* nistp256, nistp384, nistp521 */
    MCG_KEY_RSA = 3,
    MCG_KEY_SK_ED25519 = 4, /* sk-ssh-ed25519@openssh.com (FIDO) */
    MCG_KEY_SK_ECDSA = 5,   /* sk-ecdsa-sha2-nistp256@openssh.com (FIDO) */
    MCG_KEY_DSA = 6,
};

#define MCG_RSA_MIN_BITS 2048    /* mcgit trusts no smaller RSA key */
#define MCG_RSA_OPENSSH_MIN 1024 /* OpenSSH reads none smaller */
#define MCG_RSA_MAX_BITS 16384
#define MCG_CERT_MAX_PRINCIPALS 256 /* as OpenSSH's SSHKEY_CERT_MAX_PRINCIPALS */

/* sk signature flags (PROTOCOL.u2f, FIDO) */
#define MCG_SK_USER_PRESENT 0x01
#define MCG_SK_USER_VERIFIED 0x04

/* One key type OpenSSH knows: its plain and certificate names. */
typedef struct mcg_keytype {
    int type;          /* MCG_KEY_* */
    const char *name;  /* "ssh-ed25519", ... */
    const char *cert;  /* "ssh-ed25519-cert-v01@openssh.com", ... */
    const char *curve; /* ecdsa: "nistp256" ...; NULL otherwise */
    int bits;          /* ecdsa: 256, 384 or 521 */
} mcg_keytype;

/* A user or host certificate (PROTOCOL.certkeys); pointers into the key blob. */
typedef struct mcg_sshcert {
    uint64_t serial;
    uint32_t type; /* 1 user, 2 host */
    const unsigned char *key_id, *principals, *ca;
    size_t key_id_len, principals_len, ca_len; /* principals: a list of strings */
    size_t nprincipals;
    uint64_t valid_after, valid_before; /* valid_before is exclusive */
} mcg_sshcert;

/*
 * A parsed public key or certificate; the pointers point into the blob it
 * came from, which must outlive it.
 */
typedef struct mcg_sshpub {
    const mcg_keytype *kt;
    bool is_cert;
    const unsigned char *pk; /* ed25519: 32 bytes; ecdsa: uncompressed point */
    size_t pk_len;
    const unsigned char *e, *n; /* rsa: big-endian magnitudes, no leading zero */
    size_t e_len, n_len;
    const unsigned char *app; /* sk: the FIDO application ("ssh:") */
    size_t app_len;
    const unsigned char *fields; /* the key's fields after its type (and a cert's nonce) */
    size_t fields_len;
    mcg_sshcert cert;    /* when is_cert */
    const char *refused; /* a key OpenSSH reads but mcgit never trusts: why (static) */
} mcg_sshpub;

/*
 * Parse a public key or certificate blob strictly: a known type, canonical
 * field encodings, sane sizes (RSA: an odd modulus of 1024..16384 bits, an
 * odd e >= 3 of at most 64 bits; ecdsa: a point OpenSSL validates), no
 * trailing bytes; for a certificate also a well-formed body, a plain CA key
 * and a CA signature that verifies (rsa-sha2-256/512 only for RSA CAs).
 * Keys OpenSSH accepts but mcgit will not trust (ssh-dss, RSA under 2048
 * bits) parse with k->refused set. On failure writes a reason to
 * why[whylen] and returns false.
 */
bool mcg_sshkey_parse(mcg_sshpub *k, const unsigned char *blob, size_t len, char *why,
                      size_t whylen);

/* The key type named by s[0..n) (plain or certificate name), or NULL. */
const mcg_keytype *mcg_sshkey_type(const unsigned char *s, size_t n, bool *is_cert);

/* The wire blob of k without its certificate (k itself when plain), appended to out. */
void mcg_sshkey_plain_blob(const mcg_sshpub *k, mcg_buf *out);

/* A signature value (string sigtype, string bytes [, byte flags, uint32 counter]). */
typedef struct mcg_sigval {
    const EVP_MD *hash;         /* rsa: by sigtype; ecdsa: by curve */
    const unsigned char *bytes; /* ed25519, rsa */
    size_t len;
    const unsigned char *r, *s; /* ecdsa: magnitudes of r and s */
    size_t r_len, s_len;
    uint8_t flags; /* sk only */
    uint32_t counter;
} mcg_sigval;

/*
 * Parse the signature value sig for key k: the signature type must be the
 * one the key defines (rsa-sha2-256/512 for RSA; ssh-rsa, SHA-1, refused),
 * the bytes of the right form. Returns 0, or MCG_ETRUST with
 * "signature is malformed: ..." or "signature uses unsupported ...".
 */
int mcg_sigval_parse(mcg_sigval *v, const mcg_sshpub *k, const unsigned char *sig, size_t len,
                     mcg_err *err);

/*
 * The cryptographic check: true when v is k's signature over data. For sk
 * keys, data is wrapped as PROTOCOL.u2f defines (SHA-256 of the
 * application, flags, counter, SHA-256 of data); flags are not judged here.
 */
bool mcg_sigval_verify(const mcg_sshpub *k, const mcg_sigval *v, const unsigned char *data,
                       size_t len);

/* Append string(s) (uint32 length, bytes) to b. */
void mcg_wire_put_string(mcg_buf *b, const void *s, size_t n);

/* ------------------------------------------------------ allowed signers */

/* Revoked keys and certificates (krl.c), from a KRL or a plain key list. */
typedef struct mcg_revoked mcg_revoked;

typedef struct mcg_signer {
    char *principals;     /* as written, dequoted */
    bool ca;              /* cert-authority: blob is a CA key for user certificates */
    bool no_touch;        /* no-touch-required: sk signatures need not have user presence */
    bool verify_required; /* verify-required: sk signatures must have user verification */
    char *namespaces;     /* pattern list, or NULL: any namespace */
    int64_t valid_after;  /* 0: unset */
    int64_t valid_before; /* 0: unset */
    unsigned char *blob;  /* public key, wire format */
    size_t blob_len;
    char *where; /* "<name>:<line>", for messages */
} mcg_signer;

struct mcg_signers {
    mcg_signer *v;
    size_t n;
    mcg_revoked *revoked; /* owned; NULL: nothing revoked */
    mcg_strv checkpoints; /* commit ids the trust root names (mcg_signers_checkpoints) */
};

/* ------------------------------------------------------ revocation */

void mcg_revoked_free(mcg_revoked *r);
/* Feed one field to md, its length first (8 bytes, big-endian), so fields cannot run together. */
void mcg_signers_digest_field(EVP_MD_CTX *md, const void *p, size_t n);
/* Feed a canonical encoding of every entry of r (NULL: none) to md (mcg_signers_digest). */
void mcg_revoked_digest(const mcg_revoked *r, EVP_MD_CTX *md);
/* A deep copy of a, then b's entries added (either may be NULL; NULL when both are). */
mcg_revoked *mcg_revoked_merge(const mcg_revoked *a, const mcg_revoked *b);
/*
 * 0 when key k (its blob `blob`) is not revoked by r (NULL: nothing is);
 * otherwise MCG_ETRUST with "key SHA256:... is revoked (<file>)" or
 * "certificate ... is revoked (<file>)". A certificate is revoked when its
 * key, its CA key, or its serial or key id under its CA (or under any CA) is.
 */
int mcg_revoked_check(const mcg_revoked *r, const mcg_sshpub *k, mcg_err *err);

/*
 * OpenSSH match_pattern_list(): 1 when s matches a positive pattern of the
 * comma-separated list and no negated ("!") one, -1 when a negated pattern
 * matches, 0 otherwise. Patterns use * and ?.
 */
int mcg_trust_match_list(const char *s, const char *list);

/*
 * Copy untrusted bytes for a message: printable ASCII kept, anything else
 * (and the quote character) shown as '?', cut with "..." to fit outlen.
 */
void mcg_trust_printable(const unsigned char *s, size_t n, char *out, size_t outlen);

#endif
