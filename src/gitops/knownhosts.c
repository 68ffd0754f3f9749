/*
 * knownhosts.c — OpenSSH known_hosts, read by mcgit itself.
 *
 * libgit2 1.5 checks an ssh server's host key only against
 * $HOME/.ssh/known_hosts, and hands the final word to a certificate check
 * callback with the key the server offered. mcgit pins host keys in the
 * known_hosts file of its credentials directory instead (the file Flux and
 * Kubernetes' SSH auth Secrets carry), so the callback decides here.
 *
 * The format is OpenSSH's (sshd(8), SSH_KNOWN_HOSTS FILE FORMAT): per line
 * an optional marker (@revoked; @cert-authority lines are skipped, host
 * certificates are not supported), host patterns, key type, base64 key and
 * a comment. Patterns are comma-separated, may use * and ?, and a pattern
 * starting with ! excludes the host; a host on a port other than 22 is
 * written [host]:port. Hashed entries (|1|salt|hash, ssh-keygen -H) hold
 * HMAC-SHA1(salt, name). Names compare case-insensitively.
 *
 * The verdict fails closed: the offered key must be listed for the host on
 * a line that is not @revoked, and on no @revoked line. Lines that cannot
 * be parsed are skipped, as OpenSSH does; they can only fail to match.
 */
#include "gitops/gitops_int.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* OpenSSH's match_pattern: * and ?, case-insensitive. */
static bool glob_match(const char *s, const char *p, size_t plen)
{
    if (plen == 0)
        return *s == '\0';
    if (*p == '*') {
        for (;; s++) {
            if (glob_match(s, p + 1, plen - 1))
                return true;
            if (!*s)
                return false;
        }
    }
    if (!*s)
        return false;
    if (*p != '?' && tolower((unsigned char)*p) != tolower((unsigned char)*s))
        return false;
    return glob_match(s + 1, p + 1, plen - 1);
}

/* A hashed name |1|salt|hash against name: HMAC-SHA1(salt, name) == hash. */
static bool hashed_match(const char *field, size_t len, const char *name)
{
    const char *salt = field + 3, *end = field + len;
    const char *bar = memchr(salt, '|', (size_t)(end - salt));
    mcg_buf s = MCG_BUF_INIT, h = MCG_BUF_INIT;
    mcg_err e = {0};
    bool ok = false;
    if (!bar || mcg_base64_decode(salt, (size_t)(bar - salt), &s, &e) != 0 ||
        mcg_base64_decode(bar + 1, (size_t)(end - bar - 1), &h, &e) != 0)
        goto out;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    if (s.len != 20 || h.len != 20 ||
        !HMAC(EVP_sha1(), s.ptr, (int)s.len, (const unsigned char *)name, strlen(name), mac,
              &maclen))
        goto out;
    ok = maclen == 20 && mcg_memeq_ct(mac, h.ptr, 20);
out:
    mcg_buf_free(&s);
    mcg_buf_free(&h);
    return ok;
}

/* Whether the host field (patterns or one hashed name) names name. */
static bool host_field_matches(const char *field, size_t len, const char *name)
{
    if (len > 3 && !strncmp(field, "|1|", 3))
        return hashed_match(field, len, name);
    bool hit = false;
    for (const char *p = field, *end = field + len; p < end;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t plen = (size_t)((comma ? comma : end) - p);
        bool neg = plen > 0 && *p == '!';
        if (glob_match(name, p + neg, plen - neg)) {
            if (neg)
                return false; /* an excluded host: the line does not apply */
            hit = true;
        }
        p += plen + 1;
    }
    return hit;
}

/* The next whitespace-separated field of a line, or false. */
static bool next_field(const char **p, const char *end, const char **f, size_t *flen)
{
    while (*p < end && (**p == ' ' || **p == '\t'))
        (*p)++;
    *f = *p;
    while (*p < end && **p != ' ' && **p != '\t')
        (*p)++;
    *flen = (size_t)(*p - *f);
    return *flen > 0;
}

void mcg_kh_fingerprint(char out[MCG_SSH_FP_LEN], const unsigned char sha256[MCG_SHA256_LEN])
{
    mcg_buf b = MCG_BUF_INIT;
    mcg_base64_encode(sha256, MCG_SHA256_LEN, &b);
    while (b.len && b.ptr[b.len - 1] == '=')
        b.ptr[--b.len] = '\0';
    snprintf(out, MCG_SSH_FP_LEN, "SHA256:%s", b.ptr ? b.ptr : "");
    mcg_buf_free(&b);
}

/* Record a known key of the host (type and fingerprint) for the message. */
static void note_known(mcg_knownhosts_result *res, const char *type, size_t tlen,
                       const unsigned char sha[MCG_SHA256_LEN])
{
    char fp[MCG_SSH_FP_LEN];
    mcg_kh_fingerprint(fp, sha);
    size_t used = strlen(res->known);
    if (res->nknown < 3)
        snprintf(res->known + used, sizeof(res->known) - used, "%s%.*s %s", res->nknown ? ", " : "",
                 (int)(tlen > 40 ? 40 : tlen), type, fp);
    else if (res->nknown == 3)
        snprintf(res->known + used, sizeof(res->known) - used, ", ...");
    res->nknown++;
}

/* One line: 1 when it lists the host, with *key_hit when its key is the offered one. */
static int check_line(const char *p, const char *end, const char *name,
                      const unsigned char offered[MCG_SHA256_LEN], bool *revoked, bool *key_hit,
                      mcg_knownhosts_result *res)
{
    const char *f, *hosts, *type, *b64;
    size_t flen, hlen, tlen, blen;
    if (!next_field(&p, end, &f, &flen) || *f == '#')
        return 0;
    *revoked = flen == 8 && !strncmp(f, "@revoked", 8);
    if (*f == '@') {
        if (!*revoked)
            return 0; /* @cert-authority: host certificates are not supported */
        if (!next_field(&p, end, &f, &flen))
            return 0;
    }
    hosts = f, hlen = flen;
    if (!next_field(&p, end, &type, &tlen) || !next_field(&p, end, &b64, &blen))
        return 0;
    if (!host_field_matches(hosts, hlen, name))
        return 0;
    mcg_buf key = MCG_BUF_INIT;
    mcg_err e = {0};
    if (mcg_base64_decode(b64, blen, &key, &e) != 0) {
        mcg_buf_free(&key);
        return 0;
    }
    unsigned char sha[MCG_SHA256_LEN];
    mcg_sha256(key.ptr, key.len, sha);
    mcg_buf_free(&key);
    *key_hit = mcg_memeq_ct(sha, offered, MCG_SHA256_LEN);
    if (!*revoked)
        note_known(res, type, tlen, sha);
    return 1;
}

mcg_knownhosts_verdict mcg_knownhosts_check(mcg_knownhosts_result *res, const char *text,
                                            size_t len, const char *host, int port,
                                            const unsigned char offered[MCG_SHA256_LEN])
{
    memset(res, 0, sizeof(*res));
    if (port > 0 && port != 22)
        snprintf(res->name, sizeof(res->name), "[%s]:%d", host, port);
    else
        snprintf(res->name, sizeof(res->name), "%s", host);
    bool listed = false, match = false, revoked_hit = false;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        while (eol > p && eol[-1] == '\r')
            eol--;
        bool revoked = false, key_hit = false;
        if (check_line(p, eol, res->name, offered, &revoked, &key_hit, res) == 1) {
            if (revoked)
                revoked_hit |= key_hit;
            else
                listed = true, match |= key_hit;
        }
        p = nl ? nl + 1 : end;
    }
    if (revoked_hit)
        return MCG_KH_REVOKED;
    return match ? MCG_KH_MATCH : listed ? MCG_KH_MISMATCH : MCG_KH_UNKNOWN;
}
