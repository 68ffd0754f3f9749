/*
 * signers.c — the allowed_signers file (ssh-keygen(1), ALLOWED SIGNERS).
 *
 * Each line names who (principals), under which conditions (namespaces=,
 * valid-after=, valid-before=, cert-authority, and for FIDO keys
 * no-touch-required and verify-required) and which key. The parser follows
 * OpenSSH's sshsig.c line by line (quoted principals, quoted option values,
 * case-insensitive option names, a key comment after the key) and reads
 * every key type OpenSSH reads, but refuses rather than skips: this file is
 * a trust root, so a line mcgit cannot fully understand — an unknown option,
 * an unknown key type, a malformed key — fails the whole file with
 * "<name>:<line>:". Keys OpenSSH reads that mcgit never trusts (ssh-dss,
 * RSA under 2048 bits) are kept: their signatures are refused one by one.
 *
 * Times are read as UTC whether or not they end in Z (ssh-keygen would use
 * the local zone without it): the pure core has no time zone. Out-of-range
 * days and seconds are carried over as mktime(3) carries them
 * (20230230 is 2023-03-02), so that every time ssh-keygen reads, mcgit reads.
 */
#include "trust/trust_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------ patterns */

/* Glob match of s against pattern p[0..plen) with * and ?, no recursion. */
static bool match_one(const char *s, const char *p, size_t plen)
{
    size_t si = 0, pi = 0, star = SIZE_MAX, mark = 0, slen = strlen(s);
    while (si < slen) {
        if (pi < plen && p[pi] == '*') {
            star = pi++;
            mark = si;
        } else if (pi < plen && (p[pi] == '?' || p[pi] == s[si])) {
            si++;
            pi++;
        } else if (star != SIZE_MAX) {
            pi = star + 1;
            si = ++mark;
        } else {
            return false;
        }
    }
    while (pi < plen && p[pi] == '*')
        pi++;
    return pi == plen;
}

int mcg_trust_match_list(const char *s, const char *list)
{
    int positive = 0;
    const char *p = list;
    for (;;) {
        bool neg = *p == '!';
        if (neg)
            p++;
        size_t n = strcspn(p, ",");
        if (match_one(s, p, n)) {
            if (neg)
                return -1;
            positive = 1;
        }
        if (p[n] == '\0')
            return positive;
        p += n + 1;
    }
}

/* --------------------------------------------------------------- times */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static unsigned digits(const char *s, size_t n)
{
    unsigned v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (unsigned)(s[i] - '0');
    return v;
}

static bool ascii_ieq(const char *a, size_t n, const char *b)
{
    if (strlen(b) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char x = a[i] >= 'A' && a[i] <= 'Z' ? (char)(a[i] - 'A' + 'a') : a[i];
        if (x != b[i])
            return false;
    }
    return true;
}

/*
 * Parse YYYYMMDD[HHMM[SS]] with an optional Z or UTC suffix as UTC unix
 * seconds. Years 1970..9999; the result must be after the epoch.
 */
static bool parse_time(const char *s, int64_t *out)
{
    size_t n = strlen(s);
    if (n > 1 && ascii_ieq(s + n - 1, 1, "z"))
        n -= 1;
    else if (n > 3 && ascii_ieq(s + n - 3, 3, "utc"))
        n -= 3;
    if (n != 8 && n != 12 && n != 14)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    unsigned y = digits(s, 4), mo = digits(s + 4, 2), d = digits(s + 6, 2);
    unsigned h = n >= 12 ? digits(s + 8, 2) : 0, mi = n >= 12 ? digits(s + 10, 2) : 0;
    unsigned sec = n == 14 ? digits(s + 12, 2) : 0;
    /* the ranges glibc's strptime accepts; mktime carries the rest over */
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 61)
        return false;
    *out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
    return *out > 0;
}

/* ---------------------------------------------------------------- lines */

static void signer_clear(mcg_signer *e)
{
    free(e->principals);
    free(e->namespaces);
    free(e->blob);
    free(e->where);
    memset(e, 0, sizeof(*e));
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t';
}

static const char *skip_ws(const char *p)
{
    while (is_ws(*p))
        p++;
    return p;
}

/* A key type OpenSSH names (plain or certificate), at s[0..n). */
static bool is_key_type(const char *s, size_t n)
{
    return mcg_sshkey_type((const unsigned char *)s, n, NULL) != NULL;
}

/*
 * Read a double-quoted option value at *pp (\" is a literal quote, as in
 * OpenSSH's opt_dequote) into a new string; advances *pp past the quote.
 */
static int dequote(const char **pp, char **out, const char *where, const char *opt, mcg_err *err)
{
    const char *p = *pp;
    if (*p != '"')
        return mcg_err_set(err, MCG_EINVAL, "%s: value of option %s must be in double quotes",
                           where, opt);
    p++;
    mcg_buf b = MCG_BUF_INIT;
    for (; *p && *p != '"'; p++) {
        if (p[0] == '\\' && p[1] == '"')
            p++;
        mcg_buf_putc(&b, *p);
    }
    if (*p != '"') {
        mcg_buf_free(&b);
        return mcg_err_set(err, MCG_EINVAL, "%s: unterminated quote in option %s", where, opt);
    }
    *pp = p + 1;
    *out = mcg_buf_detach(&b, NULL);
    return 0;
}

/*
 * The value of option opt (namespaces, valid-after or valid-before) into
 * e, each at most once; *val is taken when it is kept (set to NULL).
 */
static int option_value(mcg_signer *e, const char *opt, char **val, const char *where, mcg_err *err)
{
    if (opt[0] == 'n') {
        if (e->namespaces)
            return mcg_err_set(err, MCG_EINVAL, "%s: option namespaces given twice", where);
        if (!**val)
            return mcg_err_set(err, MCG_EINVAL, "%s: option namespaces is empty", where);
        e->namespaces = *val; /* transferred */
        *val = NULL;
        return 0;
    }
    int64_t *t = strcmp(opt, "valid-after") == 0 ? &e->valid_after : &e->valid_before;
    if (*t)
        return mcg_err_set(err, MCG_EINVAL, "%s: option %s given twice", where, opt);
    if (!parse_time(*val, t)) {
        char v[64];
        mcg_trust_printable((const unsigned char *)*val, strlen(*val), v, sizeof(v));
        return mcg_err_set(err, MCG_EINVAL, "%s: invalid %s time '%s' (want YYYYMMDD[HHMM[SS]][Z])",
                           where, opt, v);
    }
    free(*val);
    *val = NULL;
    return 0;
}

/* Parse the options field at *pp into e, leaving *pp after it. */
static int parse_options(mcg_signer *e, const char **pp, const char *where, mcg_err *err)
{
    const char *p = *pp;
    char *val = NULL;
    int rc = MCG_EINVAL;

    for (;;) {
        size_t n = strcspn(p, "=, \t");
        const char *opt = NULL;
        if (ascii_ieq(p, n, "cert-authority") || ascii_ieq(p, n, "no-touch-required") ||
            ascii_ieq(p, n, "verify-required")) {
            /* flags: no value */
            if (p[n] == '=') {
                char name[32];
                mcg_trust_printable((const unsigned char *)p, n, name, sizeof(name));
                mcg_err_set(err, MCG_EINVAL, "%s: option %s takes no value", where, name);
                goto out;
            }
            bool *flag = ascii_ieq(p, n, "cert-authority")      ? &e->ca
                         : ascii_ieq(p, n, "no-touch-required") ? &e->no_touch
                                                                : &e->verify_required;
            *flag = true;
            p += n;
            goto next;
        } else if (ascii_ieq(p, n, "namespaces")) {
            opt = "namespaces";
        } else if (ascii_ieq(p, n, "valid-after")) {
            opt = "valid-after";
        } else if (ascii_ieq(p, n, "valid-before")) {
            opt = "valid-before";
        } else {
            char name[64];
            mcg_trust_printable((const unsigned char *)p, n, name, sizeof(name));
            mcg_err_set(err, MCG_EINVAL, "%s: unknown option '%s'", where, name);
            goto out;
        }
        p += n;
        if (*p != '=') {
            mcg_err_set(err, MCG_EINVAL, "%s: option %s needs a value", where, opt);
            goto out;
        }
        p++;
        if ((rc = dequote(&p, &val, where, opt, err)) != 0)
            goto out;
        if ((rc = option_value(e, opt, &val, where, err)) != 0)
            goto out;
        rc = MCG_EINVAL;
    next:
        if (*p == '\0' || is_ws(*p))
            break;
        if (*p != ',') {
            char c[8];
            mcg_trust_printable((const unsigned char *)p, 1, c, sizeof(c));
            mcg_err_set(err, MCG_EINVAL, "%s: unexpected '%s' after option %s", where, c,
                        opt ? opt : "flag");
            goto out;
        }
        p++;
        if (*p == '\0' || is_ws(*p)) {
            mcg_err_set(err, MCG_EINVAL, "%s: empty option after ','", where);
            goto out;
        }
    }
    if (e->valid_after && e->valid_before && e->valid_before <= e->valid_after) {
        mcg_err_set(err, MCG_EINVAL, "%s: valid-before is not later than valid-after", where);
        goto out;
    }
    *pp = p;
    rc = 0;
out:
    free(val);
    return rc;
}

/* The principals at *pp, maybe quoted, into e; *pp is left after them. */
static int parse_principals(mcg_signer *e, const char **pp, const char *where, mcg_err *err)
{
    const char *p = *pp, *start;
    size_t n;
    if (*p == '"') {
        start = ++p;
        n = strcspn(p, "\"");
        if (p[n] != '"')
            return mcg_err_set(err, MCG_EINVAL, "%s: unterminated quote in principals", where);
        p += n + 1;
        if (*p && !is_ws(*p))
            return mcg_err_set(err, MCG_EINVAL, "%s: unexpected text after quoted principals",
                               where);
    } else {
        start = p;
        n = strcspn(p, " \t");
        p += n;
        if (is_key_type(start, n))
            return mcg_err_set(err, MCG_EINVAL, "%s: missing principals before the key", where);
    }
    if (n == 0)
        return mcg_err_set(err, MCG_EINVAL, "%s: empty principals", where);
    if (n > 255) /* must fit mcg_sig_result.principal */
        return mcg_err_set(err, MCG_EINVAL, "%s: principals are longer than 255 bytes", where);
    e->principals = mcg_strndup(start, n);
    *pp = p;
    return 0;
}

/*
 * [options] keytype at *pp: the options into e, the key type (n bytes)
 * left at *pp. A word that is no option but is followed by a key is
 * refused as an unknown key type.
 */
static int parse_options_type(mcg_signer *e, const char **pp, size_t *tn, const char *where,
                              mcg_err *err)
{
    const char *p = skip_ws(*pp);
    size_t n = strcspn(p, " \t");
    int rc;
    if (n == 0)
        return mcg_err_set(err, MCG_EINVAL, "%s: missing key", where);
    if (!is_key_type(p, n)) {
        const char *next = skip_ws(p + n);
        if (!memchr(p, '=', n) && !memchr(p, '"', n) && !memchr(p, ',', n) &&
            !ascii_ieq(p, n, "cert-authority") && !ascii_ieq(p, n, "no-touch-required") &&
            !ascii_ieq(p, n, "verify-required") && strncmp(next, "AAAA", 4) == 0) {
            char t[64];
            mcg_trust_printable((const unsigned char *)p, n, t, sizeof(t));
            return mcg_err_set(err, MCG_EINVAL, "%s: unknown key type '%s'", where, t);
        }
        if ((rc = parse_options(e, &p, where, err)) != 0)
            return rc;
        p = skip_ws(p);
        n = strcspn(p, " \t");
        if (n == 0)
            return mcg_err_set(err, MCG_EINVAL, "%s: missing key", where);
    }
    if (!is_key_type(p, n)) {
        char t[64];
        mcg_trust_printable((const unsigned char *)p, n, t, sizeof(t));
        return mcg_err_set(err, MCG_EINVAL, "%s: unknown key type '%s'", where, t);
    }
    *pp = p;
    *tn = n;
    return 0;
}

/*
 * The base64 key at p (n bytes), of the type the line names, into e: the
 * blob's own type must be that type; a CA keeps its plain key.
 */
static int parse_key(mcg_signer *e, const char *p, size_t n, const char *type, const char *where,
                     mcg_err *err)
{
    mcg_buf key = MCG_BUF_INIT;
    mcg_err derr = {0, ""};
    char why[160];
    int rc = MCG_EINVAL;
    if (mcg_base64_decode(p, n, &key, &derr) != 0) {
        mcg_err_set(err, MCG_EINVAL, "%s: bad base64 in key: %s", where, derr.msg);
        goto out;
    }
    mcg_wire w = {(const unsigned char *)key.ptr, key.len};
    const unsigned char *bt;
    size_t btn;
    if (!mcg_wire_string(&w, &bt, &btn)) {
        mcg_err_set(err, MCG_EINVAL, "%s: key blob is truncated", where);
        goto out;
    }
    if (btn != strlen(type) || memcmp(bt, type, btn) != 0) {
        char t[64];
        mcg_trust_printable(bt, btn, t, sizeof(t));
        mcg_err_set(err, MCG_EINVAL, "%s: key type mismatch: line says %s, key blob is '%s'", where,
                    type, t);
        goto out;
    }
    mcg_sshpub k;
    if (!mcg_sshkey_parse(&k, (const unsigned char *)key.ptr, key.len, why, sizeof(why))) {
        mcg_err_set(err, MCG_EINVAL, "%s: %s", where, why);
        goto out;
    }
    if (e->ca) {
        /* OpenSSH compares a CA's public part only: keep the plain key */
        mcg_buf plain = MCG_BUF_INIT;
        mcg_sshkey_plain_blob(&k, &plain);
        e->blob_len = plain.len;
        e->blob = (unsigned char *)mcg_buf_detach(&plain, NULL);
    } else {
        e->blob_len = key.len;
        e->blob = (unsigned char *)mcg_buf_detach(&key, NULL); /* transferred */
    }
    rc = 0;
out:
    mcg_buf_free(&key);
    return rc;
}

/*
 * Parse one NUL-terminated line into e. Returns 1 for a blank or comment
 * line (e untouched), 0 for an entry, or an error.
 */
static int parse_line(mcg_signer *e, const char *line, const char *where, mcg_err *err)
{
    const char *p = skip_ws(line);
    char *type = NULL;
    int rc = MCG_EINVAL;
    size_t n = 0;

    if (*p == '\0' || *p == '#')
        return 1;
    if ((rc = parse_principals(e, &p, where, err)) != 0 ||
        (rc = parse_options_type(e, &p, &n, where, err)) != 0)
        goto out;
    rc = MCG_EINVAL;
    type = mcg_strndup(p, n);
    /* base64 key; anything after it is a comment */
    p = skip_ws(p + n);
    n = strcspn(p, " \t");
    if (n == 0) {
        mcg_err_set(err, MCG_EINVAL, "%s: missing key after %s", where, type);
        goto out;
    }
    if ((rc = parse_key(e, p, n, type, where, err)) != 0)
        goto out;
    e->where = mcg_strdup(where);
    rc = 0;
out:
    free(type);
    return rc;
}

/* ----------------------------------------------------------------- sets */

int mcg_signers_parse(mcg_signers **out, const char *name, const char *text, size_t len,
                      mcg_err *err)
{
    mcg_signers *s = mcg_calloc(1, sizeof(*s));
    mcg_signer e = {0};
    char *line = NULL, *where = NULL;
    size_t cap = 0, lineno = 0;
    int rc = MCG_EINVAL;

    *out = NULL;
    if (len > MCG_SIGNERS_MAX_TEXT) {
        rc = mcg_err_set(err, MCG_EINVAL, "%s: file is larger than %d bytes", name,
                         MCG_SIGNERS_MAX_TEXT);
        goto out;
    }
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        lineno++;
        free(where);
        where = mcg_sprintf("%s:%zu", name, lineno);
        if (n > MCG_SIGNERS_MAX_LINE) {
            rc = mcg_err_set(err, MCG_EINVAL, "%s: line is longer than %d bytes", where,
                             MCG_SIGNERS_MAX_LINE);
            goto out;
        }
        if (memchr(text + pos, '\0', n)) {
            rc = mcg_err_set(err, MCG_EINVAL, "%s: line contains a NUL byte", where);
            goto out;
        }
        free(line);
        line = mcg_strndup(text + pos, n);
        pos += n + (nl != NULL);
        if (n && line[n - 1] == '\r')
            line[n - 1] = '\0';

        rc = parse_line(&e, line, where, err);
        if (rc < 0)
            goto out;
        if (rc == 0) {
            if (s->n == cap) {
                cap = cap ? cap * 2 : 8;
                s->v = mcg_realloc(s->v, cap * sizeof(*s->v));
            }
            s->v[s->n++] = e; /* transferred */
            memset(&e, 0, sizeof(e));
        }
    }
    *out = s; /* transferred */
    s = NULL;
    rc = 0;
out:
    signer_clear(&e);
    mcg_signers_free(s);
    free(line);
    free(where);
    return rc;
}

void mcg_signers_free(mcg_signers *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        signer_clear(&s->v[i]);
    free(s->v);
    mcg_revoked_free(s->revoked);
    mcg_strv_free(&s->checkpoints);
    free(s);
}

size_t mcg_signers_count(const mcg_signers *s)
{
    return s ? s->n : 0;
}

static void append_copies(mcg_signers *to, const mcg_signers *from)
{
    for (size_t i = 0; from && i < from->n; i++) {
        const mcg_signer *f = &from->v[i];
        mcg_signer *t = &to->v[to->n++];
        t->principals = mcg_strdup(f->principals);
        t->ca = f->ca;
        t->no_touch = f->no_touch;
        t->verify_required = f->verify_required;
        t->namespaces = f->namespaces ? mcg_strdup(f->namespaces) : NULL;
        t->valid_after = f->valid_after;
        t->valid_before = f->valid_before;
        t->blob = mcg_malloc(f->blob_len);
        memcpy(t->blob, f->blob, f->blob_len);
        t->blob_len = f->blob_len;
        t->where = mcg_strdup(f->where);
    }
}

mcg_signers *mcg_signers_union(const mcg_signers *a, const mcg_signers *b)
{
    mcg_signers *s = mcg_calloc(1, sizeof(*s));
    s->v = mcg_calloc(mcg_signers_count(a) + mcg_signers_count(b), sizeof(*s->v));
    append_copies(s, a);
    append_copies(s, b);
    s->revoked = mcg_revoked_merge(a ? a->revoked : NULL, b ? b->revoked : NULL);
    return s;
}

void mcg_signers_digest_field(EVP_MD_CTX *md, const void *p, size_t n)
{
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
    EVP_DigestUpdate(md, len, sizeof(len));
    if (n)
        EVP_DigestUpdate(md, p, n);
}

void mcg_signers_digest(const mcg_signers *s, unsigned char out[32])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned int olen = 0;
    if (!md)
        abort(); /* out of memory, as mcg_malloc */
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    mcg_signers_digest_field(md, "mcgit-signers-v1", 16);
    for (size_t i = 0; i < mcg_signers_count(s); i++) {
        const mcg_signer *e = &s->v[i];
        char times[64];
        snprintf(times, sizeof(times), "%lld %lld %d%d%d", (long long)e->valid_after,
                 (long long)e->valid_before, e->ca, e->no_touch, e->verify_required);
        mcg_signers_digest_field(md, e->principals, strlen(e->principals));
        mcg_signers_digest_field(md, e->namespaces ? e->namespaces : "",
                                 e->namespaces ? strlen(e->namespaces) + 1 : 0);
        mcg_signers_digest_field(md, times, strlen(times));
        mcg_signers_digest_field(md, e->blob, e->blob_len);
    }
    mcg_revoked_digest(s ? s->revoked : NULL, md);
    for (size_t i = 0; s && i < s->checkpoints.n; i++)
        mcg_signers_digest_field(md, s->checkpoints.v[i], strlen(s->checkpoints.v[i]));
    EVP_DigestFinal_ex(md, out, &olen);
    EVP_MD_CTX_free(md);
}

int mcg_signers_key_ns(const mcg_signers *s, const mcg_signers *key, const char *ns, char *why,
                       size_t whylen)
{
    int rc = -1;
    if (why && whylen)
        why[0] = '\0';
    if (!s || !key || key->n != 1)
        return -1;
    const mcg_signer *k = &key->v[0];
    for (size_t i = 0; i < s->n; i++) {
        const mcg_signer *e = &s->v[i];
        if (e->ca || e->blob_len != k->blob_len || memcmp(e->blob, k->blob, k->blob_len) != 0)
            continue;
        if (!e->namespaces || mcg_trust_match_list(ns, e->namespaces) == 1)
            return 1;
        if (rc < 0 && why)
            snprintf(why, whylen, "%s (%s) allows namespaces \"%s\", approvals use \"%s\"",
                     e->where, e->principals, e->namespaces, ns);
        rc = 0;
    }
    return rc;
}

/* ----------------------------------------------------------- checkpoints */

#define CHECKPOINT_TAG "mcgit-checkpoint:"
#define CHECKPOINT_HEX 40 /* a SHA-1 commit id in hex */

/*
 * One line of the trust root: 1 with the commit id in id when it is a
 * checkpoint line ("# mcgit-checkpoint: <40 hex> [comment]"), 0 when it is
 * any other line, -1 when it is a malformed checkpoint line.
 */
static int checkpoint_line(const char *l, size_t n, char id[CHECKPOINT_HEX + 1])
{
    size_t i = 0, tl = strlen(CHECKPOINT_TAG);
    while (i < n && (l[i] == ' ' || l[i] == '\t'))
        i++;
    if (i == n || l[i++] != '#')
        return 0;
    while (i < n && (l[i] == ' ' || l[i] == '\t'))
        i++;
    if (n - i < tl || strncasecmp(l + i, CHECKPOINT_TAG, tl) != 0)
        return 0;
    for (i += tl; i < n && (l[i] == ' ' || l[i] == '\t');)
        i++;
    size_t h = 0;
    while (i + h < n && h <= CHECKPOINT_HEX && strchr("0123456789abcdef", l[i + h]) && l[i + h])
        h++;
    bool end = i + h == n || l[i + h] == ' ' || l[i + h] == '\t' || l[i + h] == '\r';
    if (h != CHECKPOINT_HEX || !end)
        return -1;
    memcpy(id, l + i, CHECKPOINT_HEX);
    id[CHECKPOINT_HEX] = '\0';
    return 1;
}

int mcg_signers_checkpoints(mcg_signers *s, const char *name, const char *text, size_t len,
                            mcg_err *err)
{
    mcg_strv found = {0};
    size_t lineno = 0;
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        char id[CHECKPOINT_HEX + 1];
        lineno++;
        int c = checkpoint_line(text + pos, n, id);
        if (c < 0) {
            mcg_strv_free(&found);
            return mcg_err_set(err, MCG_EINVAL,
                               "%s:%zu: a checkpoint line is '# " CHECKPOINT_TAG
                               " <commit id, 40 lower-case hex digits>'",
                               name, lineno);
        }
        if (c > 0 && !mcg_strv_contains(&found, id))
            mcg_strv_push(&found, id);
        pos += n + (nl ? 1 : 0);
    }
    for (size_t i = 0; i < found.n; i++)
        mcg_strv_push(&s->checkpoints, found.v[i]);
    mcg_strv_free(&found);
    return 0;
}

size_t mcg_signers_checkpoint_count(const mcg_signers *s)
{
    return s ? s->checkpoints.n : 0;
}

const char *mcg_signers_checkpoint(const mcg_signers *s, size_t i)
{
    return s && i < s->checkpoints.n ? s->checkpoints.v[i] : NULL;
}

void mcg_signers_inherit_revoked(mcg_signers *dst, const mcg_signers *src)
{
    mcg_revoked *merged = mcg_revoked_merge(dst->revoked, src ? src->revoked : NULL);
    mcg_revoked_free(dst->revoked);
    dst->revoked = merged;
}
