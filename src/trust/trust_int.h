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
/* Read a uint32-length-prefixed string; *s points into the input. */
bool mcg_wire_string(mcg_wire *w, const unsigned char **s, size_t *n);
/* Read a string and check it equals the NUL-terminated `want`. */
bool mcg_wire_string_is(mcg_wire *w, const char *want);

/* ------------------------------------------------------ public keys */

enum { MCG_KEY_ED25519 = 1, MCG_KEY_ECDSA_P256 = 2, MCG_KEY_RSA = 3 };

#define MCG_RSA_MIN_BITS 2048
#define MCG_RSA_MAX_BITS 16384

/* A parsed public key; the pointers point into the blob it came from. */
typedef struct mcg_sshkey {
    int type;                /* MCG_KEY_* */
    const char *name;        /* "ssh-ed25519", ... (static) */
    const unsigned char *pk; /* ed25519: 32 bytes; ecdsa: 65-byte uncompressed point */
    size_t pk_len;
    const unsigned char *e, *n; /* rsa: big-endian magnitudes, no leading zero */
    size_t e_len, n_len;
} mcg_sshkey;

/*
 * Parse a public key blob strictly: a supported type, canonical field
 * encodings, sane sizes (RSA: an odd modulus of 2048..16384 bits, an odd
 * e >= 3 of at most 64 bits; P-256: a point OpenSSL validates) and no
 * trailing bytes. On failure writes a reason to why[whylen], returns false.
 */
bool mcg_sshkey_parse(mcg_sshkey *k, const unsigned char *blob, size_t len, char *why,
                      size_t whylen);

/* The static name of a key type from a string, or NULL if unsupported. */
const char *mcg_sshkey_type_name(const unsigned char *s, size_t n);

/*
 * An OpenSSL key for an ecdsa or rsa mcg_sshkey (the caller frees it with
 * EVP_PKEY_free), or NULL with the OpenSSL error queue cleared.
 */
EVP_PKEY *mcg_sshkey_to_evp(const mcg_sshkey *k);

/* ------------------------------------------------------ allowed signers */

typedef struct mcg_signer {
    char *principals;     /* as written, dequoted */
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
};

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

/* Format unix time t as "YYYY-MM-DDTHH:MM:SSZ" into out[32]. */
void mcg_trust_fmt_time(int64_t t, char out[32]);

#endif
