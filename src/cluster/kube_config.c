/*
 * kube_config.c — where the Kubernetes API server is and who we are.
 *
 * Two sources, as client-go has them:
 *   - a kubeconfig file (`--cluster kube:PATH`): the current-context names
 *     a cluster (server, CA, insecure-skip-tls-verify, tls-server-name) and
 *     a user (client certificate and key, bearer token or token file);
 *   - the in-cluster service account (`--cluster kube`): the server from
 *     KUBERNETES_SERVICE_HOST/PORT, the token, CA and namespace from the
 *     files the kubelet mounts (the token is re-read when it rotates).
 * Parsing is pure (bytes in, struct out) so it is unit-tested as a table;
 * loading the files a config names is a separate step. Certificates and
 * keys stay in memory: nothing is written to temporary files. Exec and
 * auth-provider plugins and basic auth are refused by name rather than
 * silently ignored.
 */
#include "cluster/kube_int.h"
#include "model/model.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void mcg_kube_buf_wipe(mcg_buf *b)
{
    if (b->ptr)
        mcg_wipe(b->ptr, b->cap);
    mcg_buf_free(b);
}

static void wipe_str(char **s)
{
    if (*s) {
        mcg_wipe(*s, strlen(*s));
        free(*s);
        *s = NULL;
    }
}

void mcg_kube_config_free(mcg_kube_config *c)
{
    if (!c)
        return;
    free(c->source);
    free(c->server);
    free(c->tls_server_name);
    mcg_buf_free(&c->ca);
    free(c->ca_file);
    mcg_buf_free(&c->cert);
    free(c->cert_file);
    mcg_kube_buf_wipe(&c->key);
    free(c->key_file);
    wipe_str(&c->token);
    free(c->token_file);
    free(c->ns);
    memset(c, 0, sizeof(*c));
}

int mcg_kube_read_file(const char *path, size_t limit, mcg_buf *out, mcg_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return mcg_err_set_os(err, errno == ENOENT ? MCG_ENOTFOUND : MCG_EIO, errno, "%s", path);
    int rc = 0;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", path);
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = mcg_err_set(err, MCG_EINVAL, "%s: not a regular file", path);
        goto out;
    }
    if ((uint64_t)st.st_size > limit) {
        rc = mcg_err_set(err, MCG_ENOMEM, "%s: larger than %zu bytes", path, limit);
        goto out;
    }
    /* Read into a buffer sized once, so a secret is never copied by a realloc. */
    size_t cap = (size_t)st.st_size + 1, len = 0;
    out->ptr = mcg_malloc(cap + 1);
    out->cap = cap + 1;
    for (;;) {
        if (len == cap) {
            rc = mcg_err_set(err, MCG_ENOMEM, "%s: grew while being read", path);
            goto out;
        }
        ssize_t r = read(fd, out->ptr + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", path);
            goto out;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    out->len = len;
    out->ptr[len] = '\0';
out:
    if (rc)
        mcg_kube_buf_wipe(out);
    close(fd);
    return rc;
}

/* ------------------------------------------------------------- YAML */

/*
 * The first document of a kubeconfig, as JSON, through the model's one YAML
 * converter: scalars stay strings except plain null/true/false.
 */
static int yaml_to_json(json_t **out, const char *file, const char *data, size_t len, mcg_err *err)
{
    mcg_diags d = {0};
    int rc = mcg_yaml_to_json(out, file, data, len, MCG_YAML_STRINGS, &d);
    if (rc)
        mcg_err_set(err, rc, "kubeconfig %s", d.count ? d.msgs[0] : file);
    mcg_diags_free(&d);
    return rc;
}

/* ----------------------------------------------------------- parsing */

/* A string field: absent or null leaves *out NULL; anything but text is refused. */
static int get_str(const json_t *obj, const char *key, const char *where, const char *file,
                   const char **out, mcg_err *err)
{
    *out = NULL;
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return mcg_err_set(err, MCG_EINVAL, "kubeconfig %s: %s.%s must be a string", file, where,
                           key);
    *out = json_string_value(v);
    return 0;
}

/* The entry named name in list key ("clusters", "contexts", "users"): its inner object. */
static int find_named(const json_t *root, const char *list, const char *inner, const char *name,
                      const char *file, const json_t **out, mcg_err *err)
{
    *out = NULL;
    json_t *arr = json_object_get(root, list);
    if (arr && !json_is_array(arr) && !json_is_null(arr))
        return mcg_err_set(err, MCG_EINVAL, "kubeconfig %s: %s must be a list", file, list);
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        json_t *n = json_object_get(e, "name");
        if (json_is_string(n) && !strcmp(json_string_value(n), name)) {
            json_t *o = json_object_get(e, inner);
            if (!json_is_object(o))
                return mcg_err_set(err, MCG_EINVAL, "kubeconfig %s: %s '%s' has no %s", file, list,
                                   name, inner);
            *out = o;
            return 0;
        }
    }
    return mcg_err_set(err, MCG_EINVAL, "kubeconfig %s: %.*s '%s' not found", file,
                       (int)strlen(list) - 1, list, name);
}

/* Standard base64 with line breaks allowed (kubeconfigs are sometimes wrapped). */
static int decode_data(mcg_buf *out, const char *in, const char *what, const char *file,
                       mcg_err *err)
{
    mcg_buf clean = MCG_BUF_INIT;
    for (const char *p = in; *p; p++)
        if (*p != '\n' && *p != '\r' && *p != ' ' && *p != '\t')
            mcg_buf_putc(&clean, *p);
    mcg_err e = {0};
    int rc = mcg_base64_decode(clean.ptr ? clean.ptr : "", clean.len, out, &e);
    mcg_kube_buf_wipe(&clean);
    if (rc) {
        mcg_kube_buf_wipe(out);
        return mcg_err_set(err, rc, "kubeconfig %s: %s: %s", file, what, e.msg);
    }
    if (!out->len)
        return mcg_err_set(err, MCG_EINVAL, "kubeconfig %s: %s is empty", file, what);
    return 0;
}

/* A file named in the kubeconfig, resolved against the kubeconfig's directory. */
static char *resolve(const char *kubeconfig, const char *name)
{
    if (name[0] == '/')
        return mcg_strdup(name);
    const char *slash = strrchr(kubeconfig, '/');
    if (!slash)
        return mcg_strdup(name);
    return mcg_sprintf("%.*s/%s", (int)(slash - kubeconfig), kubeconfig, name);
}

/* Validate and normalise the server URL: http(s)://host[:port][/path], no trailing slash. */
static int set_server(mcg_kube_config *c, const char *url, const char *file, mcg_err *err)
{
    size_t n = strlen(url);
    bool https = !strncmp(url, "https://", 8), http = !strncmp(url, "http://", 7);
    if (!https && !http)
        return mcg_err_set(err, MCG_EINVAL,
                           "kubeconfig %s: server '%s' must be an https:// (or http://) URL", file,
                           url);
    const char *host = url + (https ? 8 : 7);
    if (!*host || *host == '/')
        return mcg_err_set(err, MCG_EINVAL, "kubeconfig %s: server '%s' has no host", file, url);
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == '?' || *p == '#' || *p == '\x7f')
            return mcg_err_set(err, MCG_EINVAL,
                               "kubeconfig %s: server URL may not hold spaces, '?' or '#'", file);
    while (n && url[n - 1] == '/')
        n--;
    c->server = mcg_strndup(url, n);
    return 0;
}

/* KEY-data (base64) into *data, or else KEY (a file, resolved against path) into *file. */
static int data_or_file(const json_t *obj, const char *data_key, const char *file_key,
                        const char *where, const char *path, mcg_buf *data, char **file,
                        mcg_err *err)
{
    const char *s;
    int rc;
    if ((rc = get_str(obj, data_key, where, path, &s, err)) != 0)
        return rc;
    if (s && *s)
        return decode_data(data, s, data_key, path, err);
    if ((rc = get_str(obj, file_key, where, path, &s, err)) != 0)
        return rc;
    if (s && *s)
        *file = resolve(path, s);
    return 0;
}

/*
 * The current context: its namespace into out, the names of its cluster
 * and user, and the cluster's entry.
 */
static int kc_context(mcg_kube_config *out, const json_t *root, const char *path,
                      const char **cluster_name, const char **user_name, const json_t **cl,
                      mcg_err *err)
{
    const char *s, *ctx_name = NULL;
    const json_t *ctx = NULL;
    int rc;
    if ((s = json_string_value(json_object_get(root, "kind"))) && strcmp(s, "Config") != 0)
        return mcg_err_set(err, MCG_EINVAL, "kubeconfig %s: kind is '%s', expected Config", path,
                           s);
    if ((rc = get_str(root, "current-context", "", path, &ctx_name, err)) != 0)
        return rc;
    if (!ctx_name || !*ctx_name)
        return mcg_err_set(err, MCG_EINVAL, "kubeconfig %s: no current-context is set", path);
    if ((rc = find_named(root, "contexts", "context", ctx_name, path, &ctx, err)) != 0 ||
        (rc = get_str(ctx, "cluster", "context", path, cluster_name, err)) != 0 ||
        (rc = get_str(ctx, "user", "context", path, user_name, err)) != 0 ||
        (rc = get_str(ctx, "namespace", "context", path, &s, err)) != 0)
        return rc;
    if (s && *s)
        out->ns = mcg_strdup(s);
    if (!*cluster_name || !**cluster_name)
        return mcg_err_set(err, MCG_EINVAL, "kubeconfig %s: context '%s' names no cluster", path,
                           ctx_name);
    return find_named(root, "clusters", "cluster", *cluster_name, path, cl, err);
}

/* The cluster: server, TLS verification, server name, certificate authority. */
static int kc_cluster(mcg_kube_config *out, const json_t *cl, const char *cluster_name,
                      const char *path, mcg_err *err)
{
    const char *s;
    int rc;
    if ((rc = get_str(cl, "server", "cluster", path, &s, err)) != 0)
        return rc;
    if (!s || !*s)
        return mcg_err_set(err, MCG_EINVAL, "kubeconfig %s: cluster '%s' has no server", path,
                           cluster_name);
    if ((rc = set_server(out, s, path, err)) != 0)
        return rc;
    json_t *ins = json_object_get(cl, "insecure-skip-tls-verify");
    if (ins && !json_is_boolean(ins) && !json_is_null(ins))
        return mcg_err_set(err, MCG_EINVAL,
                           "kubeconfig %s: cluster.insecure-skip-tls-verify must be true or false",
                           path);
    out->insecure = json_is_true(ins);
    if ((rc = get_str(cl, "tls-server-name", "cluster", path, &s, err)) != 0)
        return rc;
    if (s && *s)
        out->tls_server_name = mcg_strdup(s);
    if ((rc = data_or_file(cl, "certificate-authority-data", "certificate-authority", "cluster",
                           path, &out->ca, &out->ca_file, err)) != 0)
        return rc;
    if (out->insecure && (out->ca.len || out->ca_file))
        return mcg_err_set(err, MCG_EINVAL,
                           "kubeconfig %s: cluster '%s' sets both a certificate authority and "
                           "insecure-skip-tls-verify",
                           path, cluster_name);
    if (json_object_get(cl, "proxy-url"))
        return mcg_err_set(err, MCG_EINVAL, "kubeconfig %s: cluster.proxy-url is not supported",
                           path);
    return 0;
}

/* The user (NULL: anonymous): a client certificate and key, or a token (or its file). */
static int kc_user(mcg_kube_config *out, const json_t *user, const char *user_name,
                   const char *path, mcg_err *err)
{
    const char *s;
    int rc;
    static const char *const refused[] = {"exec", "auth-provider", "username", "password",
                                          "as",   "as-groups",     NULL};
    for (const char *const *r = refused; user && *r; r++)
        if (json_object_get(user, *r) && !json_is_null(json_object_get(user, *r)))
            return mcg_err_set(err, MCG_EINVAL,
                               "kubeconfig %s: user '%s': '%s' is not supported (use a client "
                               "certificate or a token)",
                               path, user_name, *r);
    if ((rc = data_or_file(user, "client-certificate-data", "client-certificate", "user", path,
                           &out->cert, &out->cert_file, err)) != 0 ||
        (rc = data_or_file(user, "client-key-data", "client-key", "user", path, &out->key,
                           &out->key_file, err)) != 0)
        return rc;
    bool has_cert = out->cert.len || out->cert_file, has_key = out->key.len || out->key_file;
    if (has_cert != has_key)
        return mcg_err_set(err, MCG_EINVAL, "kubeconfig %s: user '%s' has a client %s but no %s",
                           path, user_name, has_cert ? "certificate" : "key",
                           has_cert ? "client key" : "client certificate");
    if ((rc = get_str(user, "token", "user", path, &s, err)) != 0)
        return rc;
    if (s && *s) {
        out->token = mcg_strdup(s);
    } else {
        if ((rc = get_str(user, "tokenFile", "user", path, &s, err)) != 0)
            return rc;
        if (s && *s)
            out->token_file = resolve(path, s);
    }
    if (out->token && strpbrk(out->token, "\r\n"))
        return mcg_err_set(err, MCG_EINVAL, "kubeconfig %s: user '%s': token holds a line break",
                           path, user_name);
    return 0;
}

/* The document held secrets (token, key data): wipe its users' strings. */
static void kc_wipe(json_t *root)
{
    const char *k;
    json_t *v;
    json_t *users = json_object_get(root, "users");
    size_t i;
    json_t *u;
    json_array_foreach(users, i, u) {
        json_object_foreach(json_object_get(u, "user"), k, v) {
            if (json_is_string(v))
                mcg_wipe((char *)json_string_value(v), json_string_length(v));
        }
    }
}

int mcg_kube_config_parse(mcg_kube_config *out, const char *path, const char *data, size_t len,
                          mcg_err *err)
{
    memset(out, 0, sizeof(*out));
    json_t *root = NULL;
    int rc = yaml_to_json(&root, path, data, len, err);
    if (rc)
        return rc;
    const char *cluster_name = NULL, *user_name = NULL;
    const json_t *cl = NULL, *user = NULL;
    if (!json_is_object(root)) {
        rc = mcg_err_set(err, MCG_EINVAL, "kubeconfig %s: not a mapping", path);
        goto out;
    }
    if ((rc = kc_context(out, root, path, &cluster_name, &user_name, &cl, err)) != 0)
        goto out;
    out->source = mcg_sprintf("kubeconfig %s", path);
    if ((rc = kc_cluster(out, cl, cluster_name, path, err)) != 0)
        goto out;
    /* user (a context may name none: anonymous) */
    if (user_name && *user_name &&
        (rc = find_named(root, "users", "user", user_name, path, &user, err)) != 0)
        goto out;
    rc = kc_user(out, user, user_name, path, err);
out:
    if (root)
        kc_wipe(root);
    json_decref(root);
    if (rc)
        mcg_kube_config_free(out);
    return rc;
}

/* Trim trailing whitespace of a token read from a file. */
static int token_from_buf(char **out, mcg_buf *b, const char *path, mcg_err *err)
{
    size_t n = b->len;
    while (n && (b->ptr[n - 1] == '\n' || b->ptr[n - 1] == '\r' || b->ptr[n - 1] == ' '))
        n--;
    if (!n)
        return mcg_err_set(err, MCG_EINVAL, "%s: empty token", path);
    if (memchr(b->ptr, '\n', n) || memchr(b->ptr, '\r', n) || memchr(b->ptr, '\0', n))
        return mcg_err_set(err, MCG_EINVAL, "%s: token holds a line break or NUL", path);
    *out = mcg_strndup(b->ptr, n);
    return 0;
}

int mcg_kube_config_load(mcg_kube_config *c, mcg_err *err)
{
    int rc = 0;
    mcg_buf b = MCG_BUF_INIT;
    if (c->ca_file) {
        if ((rc = mcg_kube_read_file(c->ca_file, MCG_KUBE_MAX_FILE, &c->ca, err)) != 0)
            return mcg_err_prefix(err, "%s: certificate-authority", c->source);
        free(c->ca_file);
        c->ca_file = NULL;
    }
    if (c->cert_file) {
        if ((rc = mcg_kube_read_file(c->cert_file, MCG_KUBE_MAX_FILE, &c->cert, err)) != 0)
            return mcg_err_prefix(err, "%s: client-certificate", c->source);
        free(c->cert_file);
        c->cert_file = NULL;
    }
    if (c->key_file) {
        if ((rc = mcg_kube_read_file(c->key_file, MCG_KUBE_MAX_FILE, &c->key, err)) != 0)
            return mcg_err_prefix(err, "%s: client-key", c->source);
        free(c->key_file);
        c->key_file = NULL;
    }
    if (c->token_file) {
        /* Checked now so a wrong path fails at start; re-read on every change later. */
        if ((rc = mcg_kube_read_file(c->token_file, 64u << 10, &b, err)) == 0)
            rc = token_from_buf(&c->token, &b, c->token_file, err);
        mcg_kube_buf_wipe(&b);
        if (rc)
            return mcg_err_prefix(err, "%s: token file", c->source);
    }
    if (c->ca.len && !strstr(c->ca.ptr, "-----BEGIN CERTIFICATE-----"))
        return mcg_err_set(err, MCG_EINVAL, "%s: certificate authority is not PEM", c->source);
    if (c->cert.len && !strstr(c->cert.ptr, "-----BEGIN CERTIFICATE-----"))
        return mcg_err_set(err, MCG_EINVAL, "%s: client certificate is not PEM", c->source);
    if (c->key.len && !strstr(c->key.ptr, "PRIVATE KEY-----"))
        return mcg_err_set(err, MCG_EINVAL, "%s: client key is not a PEM private key", c->source);
    return 0;
}

int mcg_kube_config_from_file(mcg_kube_config *out, const char *path, mcg_err *err)
{
    memset(out, 0, sizeof(*out));
    mcg_buf b = MCG_BUF_INIT;
    int rc = mcg_kube_read_file(path, MCG_KUBE_MAX_FILE, &b, err);
    if (rc)
        return mcg_err_prefix(err, "kubeconfig");
    rc = mcg_kube_config_parse(out, path, b.ptr, b.len, err);
    mcg_kube_buf_wipe(&b);
    if (!rc && (rc = mcg_kube_config_load(out, err)) != 0)
        mcg_kube_config_free(out);
    return rc;
}

int mcg_kube_config_in_cluster(mcg_kube_config *out, const char *sa_dir, const char *host,
                               const char *port, mcg_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!host || !*host || !port || !*port)
        return mcg_err_set(err, MCG_EINVAL,
                           "kube: not running in a cluster (KUBERNETES_SERVICE_HOST and "
                           "KUBERNETES_SERVICE_PORT are not set); use --cluster kube:KUBECONFIG");
    uint64_t p;
    if (!mcg_parse_u64(port, &p) || p == 0 || p > 65535)
        return mcg_err_set(err, MCG_EINVAL, "kube: KUBERNETES_SERVICE_PORT '%s' is not a port",
                           port);
    for (const char *h = host; *h; h++)
        if (!(*h == '.' || *h == '-' || *h == ':' || (*h >= '0' && *h <= '9') ||
              (*h >= 'a' && *h <= 'z') || (*h >= 'A' && *h <= 'Z')))
            return mcg_err_set(err, MCG_EINVAL, "kube: KUBERNETES_SERVICE_HOST '%s' is not a host",
                               host);
    out->source = mcg_sprintf("in-cluster service account (%s)", sa_dir);
    out->server = strchr(host, ':') ? mcg_sprintf("https://[%s]:%s", host, port)
                                    : mcg_sprintf("https://%s:%s", host, port);
    out->ca_file = mcg_sprintf("%s/ca.crt", sa_dir);
    out->token_file = mcg_sprintf("%s/token", sa_dir);
    mcg_buf b = MCG_BUF_INIT;
    char *nsf = mcg_sprintf("%s/namespace", sa_dir);
    mcg_err e = {0};
    if (mcg_kube_read_file(nsf, 4096, &b, &e) == 0) {
        size_t n = b.len;
        while (n && (b.ptr[n - 1] == '\n' || b.ptr[n - 1] == ' '))
            n--;
        if (n)
            out->ns = mcg_strndup(b.ptr, n);
    }
    mcg_buf_free(&b);
    free(nsf);
    int rc = mcg_kube_config_load(out, err);
    if (rc)
        mcg_kube_config_free(out);
    return rc;
}
