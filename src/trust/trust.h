/*
 * trust — who may sign the config repo, and checking that they did.
 *
 * Pure pieces (bytes and times in, verdicts out):
 *
 *   - an allowed_signers parser (ssh-keygen(1) "ALLOWED SIGNERS", the file
 *     git's gpg.ssh.allowedSignersFile names),
 *   - revocation lists (OpenSSH KRLs or plain key lists, git's
 *     gpg.ssh.revocationFile) attached to a signer set,
 *   - a verifier for OpenSSH "SSHSIG" signatures (openssh-portable
 *     PROTOCOL.sshsig) as git writes them into a commit's gpgsig header, and
 *   - an ed25519 signer that writes them (for commits mcgit makes itself).
 *
 * Key types: ssh-ed25519 and sk-ssh-ed25519@openssh.com (libsodium),
 * ecdsa-sha2-nistp256/384/521, sk-ecdsa-sha2-nistp256@openssh.com and
 * ssh-rsa with rsa-sha2-256/512 signatures, modulus >= 2048 bits (OpenSSL),
 * each also as an OpenSSH user certificate under a cert-authority line.
 * ssh-dss and smaller RSA keys are read (OpenSSH reads them) but never
 * trusted. Every refusal is MCG_ETRUST or MCG_EINVAL with a one-line reason
 * in the mcg_err.
 */
#ifndef MCG_TRUST_H
#define MCG_TRUST_H

#include "util/util.h"

/* Size limits: larger inputs are refused, never truncated. */
#define MCG_SIGNERS_MAX_TEXT (1024 * 1024) /* whole allowed_signers file */
#define MCG_SIGNERS_MAX_LINE (16 * 1024)   /* one line of it */
#define MCG_SSHSIG_MAX_ARMOR (64 * 1024)   /* one armored signature */

/* A parsed allowed_signers file: an ordered list of (principals, options, key). */
typedef struct mcg_signers mcg_signers;

/*
 * Parse allowed_signers text (len bytes, need not be NUL-terminated) into a
 * new set in *out, which the caller releases with mcg_signers_free. `name`
 * is used only in messages ("<name>:<line>: ...").
 *
 * Grammar, one entry per line, fields separated by spaces or tabs:
 *     principals [options] keytype base64-key [comment]
 *   - principals: a comma-separated pattern list (*, ? wildcards, ! negation),
 *     optionally in double quotes (then it may contain spaces); at most 255
 *     bytes. mcgit does not match identities against it: it is reported as
 *     the signer's name (as git's find-principals does).
 *   - options, comma-separated, keywords case-insensitive, values in double
 *     quotes (as ssh-keygen requires; \" escapes a quote):
 *       cert-authority             the key is a CA: it admits OpenSSH user
 *                                  certificates it signed that list a
 *                                  principal the line's patterns match
 *       namespaces="pattern-list"  the key may sign only these namespaces
 *       valid-after="TIME"         valid at or after TIME
 *       valid-before="TIME"        valid at or before TIME
 *       no-touch-required          sk keys: signatures without the user-presence
 *                                  flag are accepted (mcgit; ssh-keygen 9.2 does
 *                                  not know this option in allowed_signers)
 *       verify-required            sk keys: the user-verified flag is required
 *     TIME is YYYYMMDD, YYYYMMDDHHMM or YYYYMMDDHHMMSS, optionally followed
 *     by "Z" or "UTC". mcgit: TIME is always UTC, with or without the
 *     suffix (ssh-keygen reads an unsuffixed time in the local time zone;
 *     write the Z to mean the same thing in both). Any other option is
 *     refused.
 *   - keytype: any type OpenSSH reads (see the top of this file), plain or
 *     certificate; it must equal the type inside the key blob.
 * Blank lines and lines whose first non-blank character is '#' are skipped;
 * CRLF line ends are accepted. Any malformed line fails the whole parse with
 * MCG_EINVAL and "<name>:<line>: <what is wrong>"; *out is then NULL.
 */
int mcg_signers_parse(mcg_signers **out, const char *name, const char *text, size_t len,
                      mcg_err *err);

/* Release a set from mcg_signers_parse or mcg_signers_union. NULL is a no-op. */
void mcg_signers_free(mcg_signers *s);

/* Number of entries (key lines) in s; 0 for NULL. */
size_t mcg_signers_count(const mcg_signers *s);

/*
 * A new set holding copies of the entries of a, then those of b (either may
 * be NULL: an empty set). Used to extend the trust root with a repo's own
 * allowed_signers. The caller frees the result; a and b are unchanged.
 */
mcg_signers *mcg_signers_union(const mcg_signers *a, const mcg_signers *b);

/*
 * SHA-256 over a canonical encoding of every entry of s (principals,
 * options, key), in order: equal for equal sets, so a record of work done
 * under one trust root can tell when the root has changed. NULL: the digest
 * of the empty set.
 */
void mcg_signers_digest(const mcg_signers *s, unsigned char out[32]);

/*
 * Whether the plain key of `key` (a set of one line, e.g. a public key file
 * parsed with a principal in front) may sign namespace ns under s: 1 when a
 * line of s holding that key admits ns; 0 when lines hold it but none
 * admits ns (why, may be NULL, says which line and its namespaces, e.g.
 * `trust:2 (bob@example.com) allows namespaces "git", approvals use
 * "mcgit-approval"`); -1 when no plain line holds it. Certificate
 * authorities are not considered.
 */
int mcg_signers_key_ns(const mcg_signers *s, const mcg_signers *key, const char *ns, char *why,
                       size_t whylen);

/* Size limit of a revocation file (KRL or key list). */
#define MCG_REVOKED_MAX_SIZE (16 * 1024 * 1024)

/*
 * Parse a revocation file (len bytes named `name` in messages) and add what
 * it revokes to s (not NULL; may be called again to add another file): an
 * OpenSSH KRL (binary, starts "SSHKRL\n\0"; sections of
 * explicit keys, SHA-1 and SHA-256 fingerprints, certificate serials,
 * serial ranges and bitmaps and key ids per CA or for any CA) or else a
 * text list of public keys ("type base64 [comment]", '#' comments). From
 * then on mcg_sshsig_verify refuses any signature by a revoked key, by a
 * certificate of a revoked key, by a certificate whose CA key is revoked or
 * whose serial (non-zero) or key id is revoked under its CA. The revocation
 * travels with mcg_signers_union. A malformed file, an unknown KRL section
 * or a signed KRL is refused with MCG_EINVAL ("<name>: ..." or
 * "<name>:<line>: ...") and s is unchanged.
 */
int mcg_signers_revoke(mcg_signers *s, const char *name, const void *data, size_t len,
                       mcg_err *err);

/* Add what src revokes (NULL: nothing) to dst: a set made from one key line
 * (a site's status key, say) refused for the trust root's revocations too. */
void mcg_signers_inherit_revoked(mcg_signers *dst, const mcg_signers *src);

/* Number of revocation entries (keys, fingerprints, serial ranges, key ids) in s. */
size_t mcg_signers_revoked_count(const mcg_signers *s);

/*
 * Checkpoints of a trust root (docs/trust.md, "Trust changes"): lines of
 * the allowed_signers text given out of band of the form
 *     # mcgit-checkpoint: <commit id, 40 lower-case hex digits> [comment]
 * (a comment to ssh-keygen and git). Each names a commit up to which a
 * receiver without verified history counts the history as verified: the
 * operator records one when revoking a key or removing a signer. Adds
 * those of text to s (repeats once); a line that starts so but names no
 * full commit id refuses the whole file with MCG_EINVAL, "<name>:<line>:
 * ...", and s is unchanged. Only ever called on the trust root: a repo's
 * own .mcgit/allowed_signers names no checkpoint. Not copied by
 * mcg_signers_union; part of mcg_signers_digest.
 */
int mcg_signers_checkpoints(mcg_signers *s, const char *name, const char *text, size_t len,
                            mcg_err *err);
size_t mcg_signers_checkpoint_count(const mcg_signers *s);
/* Checkpoint i (0-based) of s, or NULL past the end. */
const char *mcg_signers_checkpoint(const mcg_signers *s, size_t i);

/* Who signed, filled by mcg_sshsig_verify. */
typedef struct mcg_sig_result {
    char principal[256];  /* principals field of the allowed_signers line that accepted the key;
                             for a certificate, the certificate principal the line admitted */
    char fingerprint[64]; /* "SHA256:<unpadded base64>" of the key (without certificate),
                             as ssh-keygen -l prints it */
    char keytype[64];     /* "ssh-ed25519", "ssh-ed25519-cert-v01@openssh.com", ... */
    bool revoked;         /* refused because the key or certificate is revoked */
    char signer[384];     /* on success, who signed for counting distinct signers: "key
                             SHA256:..." of the key that signed, plain or certified (a
                             certificate counts as the key it certifies) */
} mcg_sig_result;

/*
 * Verify an armored SSH signature over msg for namespace "git" at time
 * `when` (unix seconds; for a commit, its committer time).
 *
 * `armored` is "-----BEGIN SSH SIGNATURE-----\n", base64 lines, and
 * "-----END SSH SIGNATURE-----" with at most one '\n' after it (what
 * git_commit_extract_signature returns, or what ssh-keygen -Y sign writes).
 * The blob is parsed strictly: magic "SSHSIG", version 1, a supported
 * public key, namespace, reserved, hash algorithm sha256 or sha512, and the
 * signature, with no trailing data anywhere.
 *
 * Returns 0 and fills *res when the signature's key is not revoked (see
 * mcg_signers_revoke), a line of `signers` admits it — a plain line holding
 * the same key (byte for byte) that names some principal, or a
 * cert-authority line holding the CA key of a user certificate that is valid
 * at `when` (valid_after <= when < valid_before) and lists a principal the
 * line's patterns match — that line permits namespace git, its validity
 * window contains `when`, for sk keys the signature's flags carry user
 * presence (unless no-touch-required) and user verification (if
 * verify-required), and the signature verifies. Otherwise returns
 * MCG_ETRUST with one of:
 *     signature is malformed: <what>
 *     signature namespace is '<ns>', not 'git'
 *     signature uses unsupported <hash algorithm or ssh-rsa (SHA-1)>
 *     signature key is refused: <what> (unsupported type, RSA < 2048 bits, ...)
 *     key SHA256:... is not in allowed signers
 *     key SHA256:... is not allowed for namespace git (<name>:<line>)
 *     key SHA256:... is not valid at <time> (valid-before <time>, <name>:<line>)
 *     key SHA256:... signed without user presence (flags 0x.., <name>:<line> ...)
 *     certificate '<id>' is not valid at <time> (valid from <t> to <t>)
 *     certificate '<id>' names no principal allowed by <name>:<line>
 *     key SHA256:... is revoked (<file>) / certificate '<id>' ... is revoked
 *     signature does not verify (key SHA256:...)
 * On failure res->fingerprint and res->keytype are still filled once the
 * signature's public key has been parsed (else they are empty), and
 * res->principal is empty. signers may be NULL (an empty set). msg may be
 * NULL when msg_len is 0.
 */
int mcg_sshsig_verify(mcg_sig_result *res, const mcg_signers *signers, const char *armored,
                      size_t armored_len, const void *msg, size_t msg_len, int64_t when,
                      mcg_err *err);

/*
 * mcg_sshsig_verify for another namespace (e.g. "mcgit-approval"): the
 * signature must name ns, and the allowed_signers line's namespaces= (if
 * any) must admit it. Messages say ns where mcg_sshsig_verify says git.
 */
int mcg_sshsig_verify_ns(mcg_sig_result *res, const mcg_signers *signers, const char *armored,
                         size_t armored_len, const void *msg, size_t msg_len, int64_t when,
                         const char *ns, mcg_err *err);

/*
 * Checking a signature's cryptography ahead of time.
 *
 * The expensive part of mcg_sshsig_verify, the public-key arithmetic, does
 * not depend on who is trusted or when: whether a key's signature over a
 * message holds is a fact of the bytes. mcg_sshsig_check establishes that
 * fact alone (on any thread, before the signer sets are known) and returns a
 * digest of it; a memo of such digests lets mcg_sshsig_verify_memo skip the
 * arithmetic for those signatures and only them, while every other check —
 * form, namespace, hash algorithm, the key in the signer set, its
 * namespaces and validity window — runs as always.
 */
#define MCG_SIGMEMO_DIGEST 32

/*
 * When `armored` is a well-formed namespace-git SSH signature (as
 * mcg_sshsig_verify parses it) that verifies over msg by the key it names,
 * whoever that key belongs to: returns 0 and fills digest (SHA-256 of the
 * public key, the signed data including the message's digest, and the
 * signature). Otherwise MCG_ETRUST. Pure and thread-safe.
 */
int mcg_sshsig_check(unsigned char digest[MCG_SIGMEMO_DIGEST], const char *armored,
                     size_t armored_len, const void *msg, size_t msg_len);

/* A read-only set of digests from mcg_sshsig_check; safe to share between threads. */
typedef struct mcg_sigmemo mcg_sigmemo;

/* A memo of n digests (copied; duplicates kept once). Free with mcg_sigmemo_free. */
mcg_sigmemo *mcg_sigmemo_new(const unsigned char (*digests)[MCG_SIGMEMO_DIGEST], size_t n);
void mcg_sigmemo_free(mcg_sigmemo *m);
/* Distinct digests held; 0 for NULL. */
size_t mcg_sigmemo_count(const mcg_sigmemo *m);

/*
 * mcg_sshsig_verify, except that a signature whose digest is in memo (may
 * be NULL) is not verified cryptographically again. Same results, same
 * messages; a digest only ever stands for a signature that verified.
 */
int mcg_sshsig_verify_memo(mcg_sig_result *res, const mcg_signers *signers, const mcg_sigmemo *memo,
                           const char *armored, size_t armored_len, const void *msg, size_t msg_len,
                           int64_t when, mcg_err *err);

/*
 * Fingerprint of an SSH public key blob (wire format) as ssh-keygen -l
 * prints it: "SHA256:" and the unpadded base64 of SHA-256(blob), always 50
 * characters plus NUL. Any bytes are accepted.
 */
void mcg_ssh_fingerprint(const unsigned char *blob, size_t len, char out[64]);

/*
 * Split a commit object's data (raw, len bytes; the object's content, not
 * NUL-terminated) into its signature and the data it signs, as git does
 * (commit.c, parse_buffer_signed_by_header): from the header only. Every
 * header line "gpgsig VALUE" and its continuation lines (leading space
 * removed, newlines kept) are appended to sig; every other line, and the
 * whole message after the first empty line, to payload; a header of another
 * hash's signature ("gpgsig-sha256 ...") with its continuations goes to
 * neither. A "gpgsig" line in the message is message text. Returns 0 when
 * the header holds a signature, else -1 (the commit is unsigned; sig and
 * payload are filled as far as they go).
 */
int mcg_commit_split_signature(mcg_buf *sig, mcg_buf *payload, const void *raw, size_t len);

/* ------------------------------------------------------------ signing */

/*
 * An ed25519 key pair (libsodium layout: sk holds the seed and the public
 * key). Wipe it with mcg_sshkey_wipe.
 */
typedef struct mcg_sshkey {
    unsigned char pk[32];
    unsigned char sk[64];
} mcg_sshkey;

/* A new random key pair (the system's random source; aborts if libsodium cannot start). */
void mcg_sshkey_generate(mcg_sshkey *key);
/* Zero a key pair. */
void mcg_sshkey_wipe(mcg_sshkey *key);
/* "ssh-ed25519 AAAA... comment" (comment may be NULL; the caller frees). */
char *mcg_sshkey_public_line(const mcg_sshkey *key, const char *comment);
/*
 * An armored SSH signature (namespace git, sha512) of msg[len], as
 * ssh-keygen -Y sign -n git writes it without the final newline; the caller
 * frees it. mcg_sshsig_verify accepts it for a line holding key's public key.
 */
char *mcg_sshsig_sign(const mcg_sshkey *key, const void *msg, size_t len);
/* The same in namespace ns (e.g. "mcgit-attestation"). */
char *mcg_sshsig_sign_ns(const mcg_sshkey *key, const char *ns, const void *msg, size_t len);
/* key from its 64-byte secret (libsodium's: the seed, then the public key),
 * checked: the public half must be the seed's. MCG_EINVAL otherwise. */
int mcg_sshkey_from_secret(mcg_sshkey *key, const void *sk, size_t len);

/*
 * Node attestation (docs/sites.md): a node's signed statement of what it
 * applied, in namespace mcgit-attestation, with the node key the operator
 * pinned (`mcgit node bind --node-key`).
 */
#define MCG_ATTEST_NS "mcgit-attestation"
typedef struct mcg_attestation {
    char node[254];
    char machine_id[64];
    char boot_id[64];
    char config[254]; /* the rendered config applied */
    char digest[80];  /* "sha256:" and the SHA-256 of its spec, in hex */
} mcg_attestation;
/* The annotation value: JSON of the fields and the signature (caller frees). */
char *mcg_trust_attestation_sign(const mcg_sshkey *key, const mcg_attestation *a);
/*
 * Parse an annotation value (at most 16 KiB) into out and verify its
 * signature against pinned, an OpenSSH public key line. MCG_ETRUST or
 * MCG_EINVAL with one line otherwise. It says nothing of whether the config
 * is the expected one: the caller compares out's fields.
 */
int mcg_trust_attestation_verify(mcg_attestation *out, const char *annotation, const char *pinned,
                                 mcg_err *err);

#endif
