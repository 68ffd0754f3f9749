/*
 * transport.c — what a fetch brings to the wire: credentials, host key and
 * TLS checks, and one line a user can act on when it fails.
 *
 * Everything comes from the credentials directory $MCGIT_GIT_CREDENTIALS,
 * under the key names of Flux's Git secrets and Kubernetes' SSH and basic
 * auth secrets, so a mounted Secret works unchanged:
 *   identity or ssh-privatekey   the ssh deploy key (user from the URL, else
 *                                `username`, else git)
 *   known_hosts                  required for ssh: the server's host key is
 *                                checked against it (knownhosts.c); libgit2
 *                                1.5 would only read ~/.ssh/known_hosts
 *   username, password           https basic auth
 *   token                        https basic auth with `username`, else
 *                                x-access-token (GitHub's form; GitLab and
 *                                Gitea take any user name with a token)
 *   bearerToken                  https `Authorization: Bearer` (Flux's key)
 *   ca.crt                       the CA certificates trusted for the https
 *                                server, in place of the system's
 * Each credential is offered once: a rejected one fails the fetch instead of
 * looping. A TLS certificate libgit2 found invalid is never accepted here, and
 * no secret enters a message or a log.
 */
#include "fsio/fsio.h"
#include "osenv/osenv.h"
#include "gitops/gitops_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define SYSTEM_CA_FILE "/etc/ssl/certs/ca-certificates.crt" /* libgit2's in Debian */
#define SECRET_MAX (64 * 1024)

struct mcg_transport {
    char *shown;     /* the URL for messages: no password */
    char scheme[8];  /* ssh, https, http, file */
    char *host;      /* NULL for local paths */
    int port;        /* -1: the scheme's default */
    const char *dir; /* credentials directory, NULL: none */
    char *known;     /* known_hosts text (ssh) */
    size_t known_len;
    char *header; /* "Authorization: Bearer ..." (wiped) */
    char *headers[1];
    int tries;                       /* credentials offered */
    bool ca;                         /* ca.crt of the directory is the CA bundle */
    bool elsewhere;                  /* asked for credentials by another host (a redirect) */
    bool no_key;                     /* ssh asked for a key the directory does not have */
    char offered[300];               /* the credential offered, no secret: "the ssh key PATH ..." */
    char refusal[MCG_ERR_MSG - 200]; /* our own reason for stopping the fetch, "" none */
};

/* A small secret from dir/name, trailing newlines stripped; NULL if absent. */
static char *cred_file(const char *dir, const char *name, size_t *lenp)
{
    char *path = mcg_sprintf("%s/%s", dir, name), *data = NULL;
    size_t len = 0;
    mcg_err e = {0};
    if (mcg_read_file_named(path, SECRET_MAX, &data, &len, &e) != 0) {
        data = NULL;
    } else {
        while (len && (data[len - 1] == '\n' || data[len - 1] == '\r'))
            data[--len] = '\0';
    }
    free(path);
    if (lenp)
        *lenp = len;
    return data;
}

static void wipe_free(char *s)
{
    if (s)
        mcg_wipe(s, strlen(s));
    free(s);
}

/* The readable file dir/name (name among names), or NULL. */
static char *cred_path(const char *dir, const char *const *names)
{
    for (; dir && *names; names++) {
        char *p = mcg_sprintf("%s/%s", dir, *names);
        if (access(p, R_OK) == 0)
            return p;
        free(p);
    }
    return NULL;
}

static int cred_ssh(git_credential **out, mcg_transport *t, const char *user)
{
    static const char *const keys[] = {"identity", "ssh-privatekey", NULL};
    char *key = cred_path(t->dir, keys), *name = NULL;
    int rc = GIT_PASSTHROUGH;
    if (!key) {
        t->no_key = true;
        return rc;
    }
    if (!user)
        user = name = cred_file(t->dir, "username", NULL);
    rc = git_credential_ssh_key_new(out, user ? user : "git", NULL, key, NULL);
    mcg_bfmt(t->offered, sizeof(t->offered), "the ssh key %s for user %s", key,
             user ? user : "git");
    free(name);
    free(key);
    return rc;
}

static int cred_userpass(git_credential **out, mcg_transport *t, const char *user_from_url)
{
    char *user = cred_file(t->dir, "username", NULL), *pass = cred_file(t->dir, "token", NULL);
    const char *u = user ? user : "x-access-token"; /* a token: the forges' user name */
    bool token = pass != NULL;
    int rc = GIT_PASSTHROUGH;
    if (!token) {
        pass = cred_file(t->dir, "password", NULL);
        u = user ? user : user_from_url ? user_from_url : "git";
    }
    if (pass) {
        rc = git_credential_userpass_plaintext_new(out, u, pass);
        mcg_bfmt(t->offered, sizeof(t->offered), "the %s for user %s", token ? "token" : "password",
                 u);
    }
    free(user);
    wipe_free(pass);
    return rc;
}

/* Whether url (scheme://[user@]host[:port]/...) names t's host: a redirect elsewhere gets nothing.
 */
static bool same_host(const mcg_transport *t, const char *url)
{
    const char *h = url ? strstr(url, "://") : NULL;
    if (!h || !t->host)
        return true; /* scp-like ssh, or no URL to compare: the remote's own */
    h += 3;
    size_t n = strcspn(h, "/?#");
    const char *at = memchr(h, '@', n);
    if (at)
        n -= (size_t)(at + 1 - h), h = at + 1;
    if (*h == '[')
        h++, n = strcspn(h, "]");
    else
        n = strcspn(h, ":/?#");
    return strlen(t->host) == n && !strncasecmp(h, t->host, n);
}

static int cred_cb(git_credential **out, const char *url, const char *user_from_url,
                   unsigned int allowed, void *payload)
{
    mcg_transport *t = payload;
    if (!same_host(t, url)) { /* never hand a credential to another host */
        t->elsewhere = true;
        return GIT_PASSTHROUGH;
    }
    if (allowed & GIT_CREDENTIAL_USERNAME) {
        /* ssh asks who first when the URL does not say */
        char *user = t->dir ? cred_file(t->dir, "username", NULL) : NULL;
        int rc = git_credential_username_new(out, user ? user : "git");
        free(user);
        return rc;
    }
    /* Offer each credential once: a rejected one must fail, not loop. */
    if (!t->dir || t->tries++ > 0)
        return GIT_PASSTHROUGH;
    int rc = GIT_PASSTHROUGH;
    if (allowed & GIT_CREDENTIAL_SSH_KEY)
        rc = cred_ssh(out, t, user_from_url);
    if (rc == GIT_PASSTHROUGH && (allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT))
        rc = cred_userpass(out, t, user_from_url);
    return rc;
}

/* The key type named at the start of an ssh key blob, or "". */
static void key_type(char *out, size_t n, const unsigned char *blob, size_t len)
{
    out[0] = '\0';
    if (len < 4)
        return;
    size_t tl =
        ((size_t)blob[0] << 24) | ((size_t)blob[1] << 16) | ((size_t)blob[2] << 8) | blob[3];
    if (tl > 0 && tl < 64 && tl + 4 <= len && tl < n) {
        memcpy(out, blob + 4, tl);
        out[tl] = '\0';
        for (size_t i = 0; i < tl; i++)
            if (out[i] < 0x21 || out[i] > 0x7e)
                out[i] = '?';
    }
}

/*
 * Why a listed host offers another key, into why: the key changed, or
 * known_hosts lacks the type the ssh library chose (it prefers ECDSA, then
 * Ed25519, then RSA, whatever known_hosts holds).
 */
static void mismatch_why(char *why, size_t n, const mcg_knownhosts_result *res, const char *type,
                         const char *scan, const char *host)
{
    char pat[80];
    snprintf(pat, sizeof(pat), "%s ", type);
    if (!*type || strstr(res->known, pat)) /* base64 fingerprints hold no space */
        snprintf(why, n, "the host key changed, or someone is in the middle");
    else
        mcg_bfmt(why, n,
                 "known_hosts has no %s key for it: add the server's, checked (`ssh-keyscan%s "
                 "%s` lists every type), or the host key changed",
                 type, scan, host);
}

/* libgit2's verdict on the server's ssh host key is replaced by known_hosts'. */
static int check_hostkey(mcg_transport *t, const git_cert_hostkey *hk, const char *host)
{
    unsigned char sha[MCG_SHA256_LEN];
    char type[64] = "", fp[MCG_SSH_FP_LEN], why[200];
    if (hk->type & GIT_CERT_SSH_RAW) {
        mcg_sha256(hk->hostkey, hk->hostkey_len, sha);
        key_type(type, sizeof(type), (const unsigned char *)hk->hostkey, hk->hostkey_len);
    } else if (hk->type & GIT_CERT_SSH_SHA256) {
        memcpy(sha, hk->hash_sha256, sizeof(sha));
    } else {
        snprintf(t->refusal, sizeof(t->refusal),
                 "host key refused: the ssh library gave no SHA-256 of %s's key to check", host);
        goto refuse;
    }
    mcg_kh_fingerprint(fp, sha);
    mcg_knownhosts_result res;
    char scan[32] = "";
    if (t->port > 0 && t->port != 22)
        snprintf(scan, sizeof(scan), " -p %d", t->port);
    switch (mcg_knownhosts_check(&res, t->known, t->known_len, host, t->port, sha)) {
    case MCG_KH_MATCH:
        return 0;
    case MCG_KH_UNKNOWN:
        mcg_bfmt(t->refusal, sizeof(t->refusal),
                 "host key refused: %s is not in known_hosts (the server offers %s%s%s); add its "
                 "key (`ssh-keyscan%s %s`) after checking it; nothing fetched",
                 res.name, type, *type ? " " : "", fp, scan, host);
        break;
    case MCG_KH_MISMATCH:
        mismatch_why(why, sizeof(why), &res, type, scan, host);
        mcg_bfmt(t->refusal, sizeof(t->refusal),
                 "host key refused: %s offers %s%s%s, known_hosts has %s (%s); nothing fetched",
                 res.name, type, *type ? " " : "", fp, res.known, why);
        break;
    case MCG_KH_REVOKED:
        mcg_bfmt(t->refusal, sizeof(t->refusal),
                 "host key refused: %s offers %s%s%s, marked @revoked in known_hosts; nothing "
                 "fetched",
                 res.name, type, *type ? " " : "", fp);
        break;
    }
refuse:
    git_error_set_str(GIT_ERROR_SSH, t->refusal);
    return GIT_ECERTIFICATE;
}

static int cert_cb(git_cert *cert, int valid, const char *host, void *payload)
{
    if (cert->cert_type == GIT_CERT_HOSTKEY_LIBSSH2)
        return check_hostkey(payload, (const git_cert_hostkey *)cert, host);
    /* TLS: libgit2 checked the chain against the CA bundle and the name;
     * an invalid certificate keeps its error, and is never retried. */
    return valid ? 0 : GIT_PASSTHROUGH;
}

/*
 * Split url into scheme, host and port; the URL for messages loses its
 * password. scp-like user@host:path is ssh on port 22; a path is file.
 */
static void parse_url(mcg_transport *t, const char *url)
{
    const char *sep = strstr(url, "://"), *h;
    t->port = -1;
    if (!sep) {
        const char *at = strchr(url, '@'), *colon = strchr(url, ':');
        t->shown = mcg_strdup(url);
        snprintf(t->scheme, sizeof(t->scheme), "%s", mcg_gitops_is_url(url) ? "ssh" : "file");
        if (*t->scheme == 's')
            t->host = mcg_sprintf("%.*s", (int)(colon - at - 1), at + 1);
        return;
    }
    snprintf(t->scheme, sizeof(t->scheme), "%.*s", (int)(sep - url), url);
    h = sep + 3;
    const char *end = h + strcspn(h, "/?#"), *at = NULL;
    for (const char *p = h; p < end; p++)
        if (*p == '@')
            at = p;
    const char *colon = at ? memchr(h, ':', (size_t)(at - h)) : NULL;
    if (colon) /* user:password@ */
        t->shown = mcg_sprintf("%.*s%s", (int)(colon - url), url, at);
    else
        t->shown = mcg_strdup(url);
    if (at)
        h = at + 1;
    const char *hend = end;
    if (*h == '[') { /* [v6 address] */
        const char *rb = memchr(h, ']', (size_t)(end - h));
        hend = rb ? rb : end;
        t->host = mcg_sprintf("%.*s", (int)(hend - h - 1), h + 1);
        hend = rb ? rb + 1 : end;
    } else {
        const char *pc = memchr(h, ':', (size_t)(end - h));
        hend = pc ? pc : end;
        t->host = mcg_sprintf("%.*s", (int)(hend - h), h);
    }
    if (hend < end && *hend == ':')
        t->port = atoi(hend + 1);
}

/*
 * The CA bundle for https: dir/ca.crt when present, else the system's.
 * libgit2 keeps one bundle for the process; it is set before each fetch.
 */
static int set_ca(mcg_transport *t, mcg_err *err)
{
    static bool custom; /* the bundle in libgit2 is not the system's */
    static const char *const names[] = {"ca.crt", NULL};
    char *ca = strcmp(t->scheme, "https") ? NULL : cred_path(t->dir, names);
    int rc = 0;
    if (ca) {
        if (git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, ca, NULL) != 0) {
            const git_error *e = git_error_last();
            rc = mcg_err_set(err, MCG_EINVAL, "%s: ca.crt: %s", t->shown,
                             e && e->message ? e->message : "cannot load it");
        }
        custom = t->ca = true;
    } else if (custom && access(SYSTEM_CA_FILE, R_OK) == 0) {
        if (git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, SYSTEM_CA_FILE, NULL) == 0)
            custom = false;
    }
    free(ca);
    return rc;
}

/* A bearer token from dir/bearerToken as a header; never sent on to another host. */
static int set_bearer(mcg_transport *t, git_fetch_options *fo, mcg_err *err)
{
    size_t len = 0;
    char *tok = t->dir ? cred_file(t->dir, "bearerToken", &len) : NULL;
    if (!tok)
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)tok[i] < 0x21 || tok[i] == 0x7f) {
            wipe_free(tok);
            return mcg_err_set(err, MCG_EINVAL,
                               "%s: bearerToken: not a token (a space or control character)",
                               t->shown);
        }
    t->header = mcg_sprintf("Authorization: Bearer %s", tok);
    wipe_free(tok);
    t->headers[0] = t->header;
    fo->custom_headers.strings = t->headers;
    fo->custom_headers.count = 1;
    fo->follow_redirects = GIT_REMOTE_REDIRECT_NONE;
    return 0;
}

/* ssh: known_hosts is required and read now, before any connection. */
static int load_known_hosts(mcg_transport *t, mcg_err *err)
{
    char *path = t->dir ? mcg_sprintf("%s/known_hosts", t->dir) : NULL, scan[32] = "";
    mcg_err e = {0};
    if (t->port > 0 && t->port != 22)
        snprintf(scan, sizeof(scan), " -p %d", t->port);
    int rc = 0;
    if (!path || mcg_read_file_named(path, 4 * 1024 * 1024, &t->known, &t->known_len, &e) != 0)
        rc = mcg_err_set(err, MCG_EINVAL,
                         "%s: host key: ssh remotes need the server's host key in %s "
                         "(`ssh-keyscan%s %s`, checked out of band); nothing fetched",
                         t->shown, path ? path : "known_hosts of $MCGIT_GIT_CREDENTIALS", scan,
                         t->host ? t->host : "HOST");
    free(path);
    return rc;
}

/* The host of a proxy setting ("[scheme://][user[:pass]@]host[:port][/]"), or NULL. */
static char *proxy_host(const char *v)
{
    if (!v || !*v)
        return NULL;
    const char *h = strstr(v, "://");
    h = h ? h + 3 : v;
    size_t n = strcspn(h, "/?#");
    const char *at = NULL;
    for (const char *p = h; p < h + n; p++)
        if (*p == '@')
            at = p;
    if (at) {
        n -= (size_t)(at + 1 - h);
        h = at + 1;
    }
    if (*h == '[')
        return mcg_strndup(h + 1, strcspn(h + 1, "]"));
    size_t hn = strcspn(h, ":/?#");
    return hn ? mcg_strndup(h, hn < n ? hn : n) : NULL;
}

void mcg_transport_pin(mcg_transport *t, git_fetch_options *fo, git_repository *repo,
                       mcg_deadline *d)
{
    static const char *const vars[] = {"http_proxy",  "HTTP_PROXY", "https_proxy",
                                       "HTTPS_PROXY", "all_proxy",  "ALL_PROXY"};
    bool proxied = false;
    git_config *cfg = NULL;
    git_buf b = {0};
    if (!t->host || !strcmp(t->scheme, "file"))
        return;
    mcg_deadline_allow_host(d, t->host);
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        char *h = proxy_host(mcg_env_get(vars[i]));
        proxied |= h != NULL;
        mcg_deadline_allow_host(d, h);
        free(h);
    }
    if (repo && git_repository_config_snapshot(&cfg, repo) == 0 &&
        git_config_get_string_buf(&b, cfg, "http.proxy") == 0) {
        char *h = proxy_host(b.ptr);
        proxied |= h != NULL;
        mcg_deadline_allow_host(d, h);
        free(h);
    }
    git_buf_dispose(&b);
    git_config_free(cfg);
    if (proxied) /* the stream goes to the proxy: a redirect's host is not seen there */
        fo->follow_redirects = GIT_REMOTE_REDIRECT_NONE;
}

/*
 * The credentials directory and its files, judged as OpenSSH judges a
 * private key and its known_hosts: owned by this user or root; writable by
 * no one else (a directory that is, on a read-only mount — Kubernetes'
 * Secret volumes are 1777 tmpfs mounted read-only — can gain no file);
 * a secret readable by no one else: not by others at all, and not by the
 * group either when it is this user's own file (a root-owned 0440 file of
 * the pod's fsGroup, as the kubelet mounts a Secret, is fine).
 */
static int check_perm(const char *dir, const char *name, bool secret, mcg_err *err)
{
    char *path = name ? mcg_sprintf("%s/%s", dir, name) : mcg_strdup(dir);
    struct stat st;
    struct statvfs vfs;
    int rc = 0;
    unsigned mode = 0;
    if (stat(path, &st) != 0) {
        if (!name)
            rc = mcg_err_set(err, MCG_EINVAL, "$MCGIT_GIT_CREDENTIALS: %s: %s", path,
                             strerror(errno));
        free(path);
        return rc;
    }
    mode = st.st_mode & 07777;
    bool ro = statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_RDONLY);
    if (st.st_uid != geteuid() && st.st_uid != 0)
        rc = mcg_err_set(err, MCG_EINVAL,
                         "$MCGIT_GIT_CREDENTIALS: %s: owned by uid %u, not by this user (%u) or "
                         "root: refused, as ssh refuses such a key",
                         path, (unsigned)st.st_uid, (unsigned)geteuid());
    else if ((mode & 022) && !ro)
        rc = mcg_err_set(err, MCG_EINVAL,
                         "$MCGIT_GIT_CREDENTIALS: %s: writable by group or others (mode %04o): "
                         "anyone could change it; `chmod go-w %s`",
                         path, mode, path);
    else if (secret && ((mode & 004) || (st.st_uid == geteuid() && (mode & 077))))
        rc = mcg_err_set(err, MCG_EINVAL,
                         "$MCGIT_GIT_CREDENTIALS: %s: readable by %s (mode %04o): a secret "
                         "must be 0600 or stricter, as ssh insists for a private key; "
                         "`chmod 600 %s`",
                         path, (mode & 004) ? "others" : "group or others", mode, path);
    free(path);
    return rc;
}

/* The credentials directory, and every file of it mcgit reads. */
static int check_creds(const char *dir, mcg_err *err)
{
    static const char *const secrets[] = {"identity", "ssh-privatekey", "password", "token",
                                          "bearerToken"};
    static const char *const others[] = {"known_hosts", "username", "ca.crt"};
    int rc = check_perm(dir, NULL, false, err);
    for (size_t i = 0; !rc && i < sizeof(secrets) / sizeof(secrets[0]); i++)
        rc = check_perm(dir, secrets[i], true, err);
    for (size_t i = 0; !rc && i < sizeof(others) / sizeof(others[0]); i++)
        rc = check_perm(dir, others[i], false, err);
    return rc;
}

int mcg_transport_open(mcg_transport **out, const char *url, git_fetch_options *fo, mcg_err *err)
{
    mcg_transport *t = calloc(1, sizeof(*t));
    int rc = 0;
    *out = NULL;
    if (!t)
        return mcg_err_set(err, MCG_ENOMEM, "out of memory");
    const char *dir = mcg_env_get("MCGIT_GIT_CREDENTIALS");
    t->dir = dir && *dir ? dir : NULL;
    parse_url(t, url);
    if (t->dir && strcmp(t->scheme, "file") != 0 && (rc = check_creds(t->dir, err)) != 0)
        mcg_err_prefix(err, "%s: credentials refused", t->shown);
    if (!rc && !strcmp(t->scheme, "ssh"))
        rc = load_known_hosts(t, err);
    if (!rc)
        rc = set_ca(t, err);
    if (!rc)
        rc = set_bearer(t, fo, err);
    if (rc) {
        mcg_transport_free(t);
        return rc;
    }
    /*
     * A redirect is followed only on the first request, and only within the
     * remote's host: mcg_transport_pin lists the hosts the fetch's streams
     * may reach (libgit2 without Debian's deb12u2 update tells the
     * credential callback the original URL, so same_host alone cannot see
     * a redirect). A bearer token, a header on every request, follows none.
     */
    if (!t->header)
        fo->follow_redirects = GIT_REMOTE_REDIRECT_INITIAL;
    fo->callbacks.credentials = cred_cb;
    fo->callbacks.certificate_check = cert_cb;
    fo->callbacks.payload = t;
    fo->proxy_opts.type = GIT_PROXY_AUTO; /* https_proxy, no_proxy, http.proxy */
    *out = t;
    return 0;
}

/* libgit2's message on one line: newlines become "; ", mbedTLS's "! " marks go. */
static void one_line(char *out, size_t n, const char *m)
{
    size_t o = 0;
    for (const char *p = m; *p && o + 3 < n; p++) {
        if (*p == '\n' || *p == '\r') {
            while (p[1] == '\n' || p[1] == '\r' || p[1] == ' ' || p[1] == '!')
                p++;
            if (p[1] && o > 0)
                out[o++] = ';', out[o++] = ' ';
        } else if ((unsigned char)*p >= 0x20) {
            out[o++] = *p;
        }
    }
    while (o > 0 && (out[o - 1] == ' ' || out[o - 1] == ';'))
        o--;
    out[o] = '\0';
}

/* The cause a user acts on, from libgit2's message m and what happened here. */
static const char *cause_of(const mcg_transport *t, const git_error *e, const char *m)
{
    if (strstr(m, "redirects to another host") || strstr(m, "unexpected http status code: 30"))
        return "redirect refused";
    if (strstr(m, "failed to resolve address"))
        return "cannot resolve host";
    if (strstr(m, "timed out"))
        return "timed out";
    if (strstr(m, "Connection refused"))
        return "connection refused";
    if ((e && e->klass == GIT_ERROR_SSL) || strstr(m, "certificate"))
        return "TLS certificate refused";
    if (t->tries > 1 || t->no_key || strstr(m, "authenticat") || strstr(m, "credentials") ||
        strstr(m, "401") || strstr(m, "403"))
        return "authentication failed";
    if (strstr(m, "not appear to be a git repository") || strstr(m, "404") ||
        strstr(m, "not found") || strstr(m, "Not a git repository") ||
        strstr(m, "failed to resolve path") || strstr(m, "could not find repository"))
        return "not a git repository";
    if (strstr(m, "EOF") || strstr(m, "closed") || strstr(m, "reset by peer"))
        return "connection closed by the server";
    return "fetch failed";
}

/* Whether host is an IPv4 or IPv6 address rather than a name. */
static bool is_ip(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return host && (inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1);
}

/* Why authentication failed, in words a user acts on. */
static int auth_error(mcg_transport *t, const char *m, mcg_err *err)
{
    const char *dir = t->dir ? t->dir : "$MCGIT_GIT_CREDENTIALS";
    if (t->elsewhere)
        return mcg_err_set(err, MCG_EIO,
                           "%s: authentication failed: the remote redirected to another host, "
                           "which asks for credentials; they are sent to %s only",
                           t->shown, t->host);
    if (t->header)
        return mcg_err_set(err, MCG_EIO,
                           "%s: authentication failed: the server refused the bearer token "
                           "(%s/bearerToken)",
                           t->shown, dir);
    if (t->offered[0])
        return mcg_err_set(err, MCG_EIO, "%s: authentication failed: the server refused %s",
                           t->shown, t->offered);
    if (t->no_key)
        return mcg_err_set(err, MCG_EIO,
                           "%s: authentication failed: no identity or ssh-privatekey in %s (%s)",
                           t->shown, dir, m);
    if (strcmp(t->scheme, "ssh") != 0)
        return mcg_err_set(err, MCG_EIO,
                           "%s: authentication failed: the server asks for credentials and %s "
                           "has none (username and password, token or bearerToken)",
                           t->shown, dir);
    return mcg_err_set(err, MCG_EIO, "%s: authentication failed: %s", t->shown, m);
}

/* " (through the proxy in VAR)" when a proxy variable is set and m is not about the host. */
static const char *proxy_note(const mcg_transport *t, const char *m)
{
    static const char *const vars[] = {"https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"};
    int first = strcmp(t->scheme, "https") ? 2 : 0;
    if (!t->host || strstr(m, t->host))
        return "";
    for (int i = first; i < first + 2; i++)
        if (mcg_env_get(vars[i]) && *mcg_env_get(vars[i]))
            return i % 2 ? " (the proxy in HTTPS_PROXY or HTTP_PROXY)"
                         : " (the proxy in https_proxy or http_proxy)";
    return "";
}

int mcg_transport_error(mcg_transport *t, bool expired, unsigned seconds, mcg_err *err)
{
    const git_error *e = git_error_last();
    char m[600];
    if (t->refusal[0])
        return mcg_err_set(err, MCG_EIO, "%s: %s", t->shown, t->refusal);
    if (expired)
        return mcg_err_set(err, MCG_EIO,
                           "%s: timed out: no answer within %u s (the server hangs or is too "
                           "slow); nothing fetched",
                           t->shown, seconds);
    one_line(m, sizeof(m), e && e->message ? e->message : "unknown error");
    const char *cause = cause_of(t, e, m);
    if (!strcmp(cause, "authentication failed"))
        return auth_error(t, m, err);
    if (strstr(m, "redirects to another host"))
        return mcg_err_set(err, MCG_EIO,
                           "%s: redirect refused: %s; no request and no credential went there "
                           "(if the repository has moved, set the remote's URL to its new place)",
                           t->shown, m);
    if (!strcmp(cause, "redirect refused"))
        return mcg_err_set(err, MCG_EIO,
                           "%s: redirect refused: the server answers with a redirect (%s), which "
                           "mcgit does not follow %s; set the remote's URL to where it points",
                           t->shown, m,
                           t->header ? "with a bearer token"
                                     : "through a proxy or after the "
                                       "first request");
    if (!strcmp(cause, "TLS certificate refused") && is_ip(t->host) &&
        (strstr(m, "Common Name") || strstr(m, "CN")))
        return mcg_err_set(err, MCG_EIO,
                           "%s: %s: %s (Debian's libgit2, built on mbedTLS, cannot match an IP "
                           "address in a certificate: use a host name the certificate names, "
                           "through /etc/hosts if need be)",
                           t->shown, cause, m);
    if (!strcmp(cause, "TLS certificate refused"))
        return mcg_err_set(err, MCG_EIO, "%s: %s: %s (%s)", t->shown, cause, m,
                           t->ca ? "checked against ca.crt of the credentials directory"
                                 : "checked against the system's CAs; a private CA goes in "
                                   "ca.crt of $MCGIT_GIT_CREDENTIALS");
    return mcg_err_set(err, MCG_EIO, "%s: %s: %s%s", t->shown, cause, m, proxy_note(t, m));
}

const char *mcg_transport_url(const mcg_transport *t)
{
    return t->shown;
}

void mcg_transport_free(mcg_transport *t)
{
    if (!t)
        return;
    wipe_free(t->header);
    free(t->shown);
    free(t->host);
    free(t->known);
    free(t);
}
