/*
 * test_kube.c — the kube backend's pure parts: kubeconfig and in-cluster
 * configuration, response validation, error text, retry/backoff decisions,
 * merge-patch diffs, the watch stream framer and the leader-election rule.
 *
 * Parsers are tested as tables of inputs that must pass and inputs that must
 * fail with a message naming the file and what is wrong. Talking to a real
 * API server is tests/integration/test_kube_backend.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"
#include <curl/curl.h>

#include "cluster/kube_int.h"

/* A scratch directory for file-based cases. */
static char tmpdir[256];

static int setup_dir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "%s/mcgit-kube-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int teardown_dir(void **state)
{
    (void)state;
    mcg_test_rm_rf(tmpdir);
    return 0;
}

static void write_file(const char *name, const char *text)
{
    char *p = mcg_sprintf("%s/%s", tmpdir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(p);
}

/* -------------------------------------------------------- kubeconfig */

#define PEM_CERT "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
#define PEM_KEY "-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\n"

static char *b64(const char *s)
{
    mcg_buf b = MCG_BUF_INIT;
    mcg_base64_encode((const unsigned char *)s, strlen(s), &b);
    size_t n;
    return mcg_buf_detach(&b, &n);
}

static const char *KC_HEAD = "apiVersion: v1\n"
                             "kind: Config\n"
                             "current-context: ctx\n"
                             "contexts:\n"
                             "- name: other\n"
                             "  context: {cluster: nope, user: nope}\n"
                             "- name: ctx\n"
                             "  context:\n"
                             "    cluster: c1\n"
                             "    user: u1\n"
                             "    namespace: team-a\n";

static int parse_kc(mcg_kube_config *c, const char *clusters_users, mcg_err *err)
{
    char *doc = mcg_sprintf("%s%s", KC_HEAD, clusters_users);
    int rc = mcg_kube_config_parse(c, "/etc/kube/config.yaml", doc, strlen(doc), err);
    free(doc);
    return rc;
}

static void test_kubeconfig_data_fields(void **state)
{
    (void)state;
    char *ca = b64(PEM_CERT), *cert = b64(PEM_CERT), *key = b64(PEM_KEY);
    char *body = mcg_sprintf("clusters:\n"
                             "- name: c1\n"
                             "  cluster:\n"
                             "    server: https://10.0.0.1:6443/\n"
                             "    certificate-authority-data: %s\n"
                             "    tls-server-name: kubernetes.default.svc\n"
                             "users:\n"
                             "- name: u1\n"
                             "  user:\n"
                             "    client-certificate-data: %s\n"
                             "    client-key-data: %s\n",
                             ca, cert, key);
    mcg_kube_config c;
    mcg_err err = {0};
    assert_int_equal(parse_kc(&c, body, &err), 0);
    assert_string_equal(c.server, "https://10.0.0.1:6443");
    assert_string_equal(c.tls_server_name, "kubernetes.default.svc");
    assert_int_equal(c.ca.len, strlen(PEM_CERT));
    assert_memory_equal(c.ca.ptr, PEM_CERT, c.ca.len);
    assert_memory_equal(c.cert.ptr, PEM_CERT, c.cert.len);
    assert_memory_equal(c.key.ptr, PEM_KEY, c.key.len);
    assert_null(c.ca_file);
    assert_null(c.token);
    assert_false(c.insecure);
    assert_string_equal(c.ns, "team-a");
    assert_contains(c.source, "/etc/kube/config.yaml");
    /* load has nothing to read and checks the PEM */
    assert_int_equal(mcg_kube_config_load(&c, &err), 0);
    mcg_kube_config_free(&c);
    free(body);
    free(ca);
    free(cert);
    free(key);
}

static void test_kubeconfig_file_fields(void **state)
{
    (void)state;
    const char *body = "clusters:\n"
                       "- name: c1\n"
                       "  cluster:\n"
                       "    server: https://api.example:443\n"
                       "    certificate-authority: pki/ca.crt\n"
                       "users:\n"
                       "- name: u1\n"
                       "  user:\n"
                       "    client-certificate: /abs/admin.crt\n"
                       "    client-key: admin.key\n"
                       "    tokenFile: tok\n";
    mcg_kube_config c;
    mcg_err err = {0};
    assert_int_equal(parse_kc(&c, body, &err), 0);
    assert_string_equal(c.ca_file, "/etc/kube/pki/ca.crt"); /* relative to the kubeconfig */
    assert_string_equal(c.cert_file, "/abs/admin.crt");
    assert_string_equal(c.key_file, "/etc/kube/admin.key");
    assert_string_equal(c.token_file, "/etc/kube/tok");
    mcg_kube_config_free(&c);
}

static void test_kubeconfig_token_insecure(void **state)
{
    (void)state;
    const char *body = "clusters:\n"
                       "- name: c1\n"
                       "  cluster:\n"
                       "    server: http://127.0.0.1:8080\n"
                       "    insecure-skip-tls-verify: true\n"
                       "users:\n"
                       "- name: u1\n"
                       "  user:\n"
                       "    token: abc.def\n";
    mcg_kube_config c;
    mcg_err err = {0};
    assert_int_equal(parse_kc(&c, body, &err), 0);
    assert_true(c.insecure);
    assert_string_equal(c.token, "abc.def");
    assert_string_equal(c.server, "http://127.0.0.1:8080");
    mcg_kube_config_free(&c);
    /* JSON is YAML too; a context without a user is anonymous */
    const char *json =
        "{\"kind\":\"Config\",\"current-context\":\"x\",\"contexts\":[{\"name\":\"x\","
        "\"context\":{\"cluster\":\"k\"}}],\"clusters\":[{\"name\":\"k\","
        "\"cluster\":{\"server\":\"https://[::1]:6443\"}}]}";
    assert_int_equal(mcg_kube_config_parse(&c, "k.json", json, strlen(json), &err), 0);
    assert_string_equal(c.server, "https://[::1]:6443");
    assert_null(c.token);
    assert_int_equal(c.cert.len, 0);
    mcg_kube_config_free(&c);
}

static const struct {
    const char *doc; /* appended to KC_HEAD unless it starts with '!' (whole document) */
    const char *msg;
} kc_bad[] = {
    {"!apiVersion: v1\nkind: Config\nclusters: []\n", "no current-context is set"},
    {"!current-context: x\ncontexts: []\n", "context 'x' not found"},
    {"!kind: Pod\n", "kind is 'Pod', expected Config"},
    {"!current-context: [\n", "invalid YAML"},
    {"!", "empty file"},
    {"!- a\n- b\n", "not a mapping"},
    {"!a: &x 1\nb: *x\n", "aliases are not supported"},
    {"!current-context: a\ncurrent-context: b\n", "duplicate key 'current-context'"},
    {"clusters: []\n", "cluster 'c1' not found"},
    {"clusters:\n- name: c1\n  cluster: {}\n", "cluster 'c1' has no server"},
    {"clusters:\n- name: c1\n", "clusters 'c1' has no cluster"},
    {"clusters:\n- name: c1\n  cluster: {server: ftp://x}\n", "must be an https://"},
    {"clusters:\n- name: c1\n  cluster: {server: 'https://'}\n", "has no host"},
    {"clusters:\n- name: c1\n  cluster: {server: 'https://a b'}\n", "may not hold spaces"},
    {"clusters:\n- name: c1\n  cluster: {server: [1]}\n", "cluster.server must be a string"},
    {"clusters:\n- name: c1\n  cluster: {server: 'https://a', insecure-skip-tls-verify: yes}\n",
     "insecure-skip-tls-verify must be true or false"},
    {"clusters:\n- name: c1\n  cluster: {server: 'https://a', insecure-skip-tls-verify: true, "
     "certificate-authority: ca}\n",
     "both a certificate authority and insecure-skip-tls-verify"},
    {"clusters:\n- name: c1\n  cluster: {server: 'https://a', certificate-authority-data: '!!'}\n",
     "certificate-authority-data: invalid base64"},
    {"clusters:\n- name: c1\n  cluster: {server: 'https://a', proxy-url: 'http://p'}\n",
     "proxy-url is not supported"},
    {"clusters:\n- name: c1\n  cluster: {server: 'https://a'}\nusers: []\n", "user 'u1' not found"},
    {"clusters:\n- name: c1\n  cluster: {server: 'https://a'}\nusers:\n- name: u1\n  user:\n"
     "    exec: {command: aws}\n",
     "'exec' is not supported"},
    {"clusters:\n- name: c1\n  cluster: {server: 'https://a'}\nusers:\n- name: u1\n  user:\n"
     "    auth-provider: {name: gcp}\n",
     "'auth-provider' is not supported"},
    {"clusters:\n- name: c1\n  cluster: {server: 'https://a'}\nusers:\n- name: u1\n  user:\n"
     "    username: admin\n",
     "'username' is not supported"},
    {"clusters:\n- name: c1\n  cluster: {server: 'https://a'}\nusers:\n- name: u1\n  user:\n"
     "    client-certificate: a.crt\n",
     "has a client certificate but no client key"},
    {"clusters:\n- name: c1\n  cluster: {server: 'https://a'}\nusers:\n- name: u1\n  user:\n"
     "    client-key-data: QUJD\n",
     "has a client key but no client certificate"},
    {"clusters:\n- name: c1\n  cluster: {server: 'https://a'}\nusers:\n- name: u1\n  user:\n"
     "    token: \"a\\nb\"\n",
     "token holds a line break"},
    {"clusters: {}\n", "clusters must be a list"},
};

static void test_kubeconfig_bad(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(kc_bad) / sizeof(kc_bad[0]); i++) {
        mcg_kube_config c;
        mcg_err err = {0};
        char *doc = kc_bad[i].doc[0] == '!' ? mcg_strdup(kc_bad[i].doc + 1)
                                            : mcg_sprintf("%s%s", KC_HEAD, kc_bad[i].doc);
        int rc = mcg_kube_config_parse(&c, "/home/op/.kube/config", doc, strlen(doc), &err);
        if (rc == 0)
            fail_msg("case %zu: accepted, want \"%s\"", i, kc_bad[i].msg);
        assert_contains(err.msg, "kubeconfig /home/op/.kube/config");
        assert_contains(err.msg, kc_bad[i].msg);
        assert_null(strchr(err.msg, '\n'));
        free(doc);
        mcg_kube_config_free(&c); /* a no-op on a failed parse, and safe */
    }
}

static void test_kubeconfig_load_files(void **state)
{
    (void)state;
    write_file("ca.crt", PEM_CERT);
    write_file("client.crt", PEM_CERT);
    write_file("client.key", PEM_KEY);
    write_file("token", "tok-1\n");
    write_file("kubeconfig", "kind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: "
                             "{cluster: k, user: u}\nclusters:\n- name: k\n  cluster:\n"
                             "    server: https://127.0.0.1:6443\n"
                             "    certificate-authority: ca.crt\nusers:\n- name: u\n  user:\n"
                             "    client-certificate: client.crt\n    client-key: client.key\n"
                             "    tokenFile: token\n");
    char *path = mcg_sprintf("%s/kubeconfig", tmpdir);
    mcg_kube_config c;
    mcg_err err = {0};
    assert_int_equal(mcg_kube_config_from_file(&c, path, &err), 0);
    assert_memory_equal(c.ca.ptr, PEM_CERT, strlen(PEM_CERT));
    assert_memory_equal(c.key.ptr, PEM_KEY, strlen(PEM_KEY));
    assert_string_equal(c.token, "tok-1");
    assert_null(c.ca_file);
    assert_non_null(c.token_file); /* kept: re-read when it changes */
    mcg_kube_config_free(&c);

    /* a named file that is missing is named in the error */
    write_file("kubeconfig2", "kind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: "
                              "{cluster: k}\nclusters:\n- name: k\n  cluster:\n"
                              "    server: https://127.0.0.1:6443\n"
                              "    certificate-authority: missing.crt\n");
    char *p2 = mcg_sprintf("%s/kubeconfig2", tmpdir);
    assert_int_not_equal(mcg_kube_config_from_file(&c, p2, &err), 0);
    assert_contains(err.msg, "certificate-authority");
    assert_contains(err.msg, "missing.crt");
    free(p2);

    /* not PEM */
    write_file("ca.crt", "garbage");
    assert_int_not_equal(mcg_kube_config_from_file(&c, path, &err), 0);
    assert_contains(err.msg, "certificate authority is not PEM");
    free(path);

    /* the kubeconfig itself missing */
    assert_int_not_equal(mcg_kube_config_from_file(&c, "/nonexistent/kc", &err), 0);
    assert_contains(err.msg, "kubeconfig: /nonexistent/kc");
}

static void test_in_cluster(void **state)
{
    (void)state;
    write_file("ca.crt", PEM_CERT);
    write_file("token", "sa-token\n");
    write_file("namespace", "mcgit-system\n");
    mcg_kube_config c;
    mcg_err err = {0};
    assert_int_equal(mcg_kube_config_in_cluster(&c, tmpdir, "10.96.0.1", "443", &err), 0);
    assert_string_equal(c.server, "https://10.96.0.1:443");
    assert_string_equal(c.token, "sa-token");
    assert_string_equal(c.ns, "mcgit-system");
    assert_int_equal(c.ca.len, strlen(PEM_CERT));
    mcg_kube_config_free(&c);
    assert_int_equal(mcg_kube_config_in_cluster(&c, tmpdir, "fd00::1", "6443", &err), 0);
    assert_string_equal(c.server, "https://[fd00::1]:6443");
    mcg_kube_config_free(&c);

    assert_int_not_equal(mcg_kube_config_in_cluster(&c, tmpdir, NULL, NULL, &err), 0);
    assert_contains(err.msg, "KUBERNETES_SERVICE_HOST");
    assert_int_not_equal(mcg_kube_config_in_cluster(&c, tmpdir, "h", "99999", &err), 0);
    assert_contains(err.msg, "not a port");
    assert_int_not_equal(mcg_kube_config_in_cluster(&c, tmpdir, "h/x", "1", &err), 0);
    assert_contains(err.msg, "not a host");
    write_file("token", "\n");
    assert_int_not_equal(mcg_kube_config_in_cluster(&c, tmpdir, "h", "1", &err), 0);
    assert_contains(err.msg, "empty token");
    assert_int_not_equal(mcg_kube_config_in_cluster(&c, "/nonexistent", "h", "1", &err), 0);
    assert_contains(err.msg, "/nonexistent/ca.crt");
}

/* --------------------------------------------------- retry / backoff */

static void test_retryable(void **state)
{
    (void)state;
    static const struct {
        long status;
        int curl;
        unsigned flags;
        bool want;
    } t[] = {
        {429, 0, 0, true},
        {429, 0, MCG_KUBE_NO_RETRY_429, false},
        {500, 0, 0, true},
        {502, 0, 0, true},
        {503, 0, 0, true},
        {504, 0, 0, true},
        {503, 0, MCG_KUBE_NO_RETRY, false},
        {400, 0, 0, false},
        {401, 0, 0, false},
        {403, 0, 0, false},
        {404, 0, 0, false},
        {409, 0, 0, false},
        {410, 0, 0, false},
        {422, 0, 0, false},
        {0, CURLE_COULDNT_CONNECT, 0, true},
        {0, CURLE_OPERATION_TIMEDOUT, 0, true},
        {0, CURLE_RECV_ERROR, 0, true},
        {0, CURLE_SEND_ERROR, 0, true},
        {0, CURLE_GOT_NOTHING, 0, true},
        {0, CURLE_PEER_FAILED_VERIFICATION, 0, false}, /* a wrong CA never heals */
        {0, CURLE_SSL_CERTPROBLEM, 0, false},
        {0, CURLE_COULDNT_RESOLVE_HOST, 0, false},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (mcg_kube_retryable(t[i].status, t[i].curl, t[i].flags) != t[i].want)
            fail_msg("case %zu (status %ld curl %d): want %d", i, t[i].status, t[i].curl,
                     t[i].want);
}

static void test_retry_delay(void **state)
{
    (void)state;
    mcg_kube_backoff b = {5, 200, 1000, 30000};
    /* exponential, with jitter between half and all of it */
    long want[] = {200, 400, 800, 1000};
    for (unsigned r = 1; r <= 4; r++) {
        long lo = mcg_kube_retry_delay(&b, r, -1, 0);
        long hi = mcg_kube_retry_delay(&b, r, -1, UINT32_MAX);
        assert_true(lo >= want[r - 1] / 2 && lo <= want[r - 1]);
        assert_true(hi >= want[r - 1] / 2 && hi <= want[r - 1]);
        for (uint32_t x = 0; x < 1000; x += 37) {
            long d = mcg_kube_retry_delay(&b, r, -1, x * 2654435761u);
            assert_true(d >= want[r - 1] / 2 && d <= want[r - 1]);
        }
    }
    /* bounded: after `attempts` tries, no more */
    assert_int_equal(mcg_kube_retry_delay(&b, 5, -1, 0), -1);
    assert_int_equal(mcg_kube_retry_delay(&b, 0, -1, 0), -1);
    /* Retry-After is a lower bound, and capped */
    assert_int_equal(mcg_kube_retry_delay(&b, 1, 3, 0), 3000);
    assert_int_equal(mcg_kube_retry_delay(&b, 1, 3600, 0), 30000);
    assert_true(mcg_kube_retry_delay(&b, 4, 0, 0) >= 500); /* 0 does not shorten the backoff */
    /* large retry counts do not overflow */
    mcg_kube_backoff big = {1000, 200, 5000, 30000};
    assert_true(mcg_kube_retry_delay(&big, 999, -1, UINT32_MAX) <= 5000);
}

static void test_retry_after_parse(void **state)
{
    (void)state;
    assert_int_equal(mcg_kube_parse_retry_after("1"), 1);
    assert_int_equal(mcg_kube_parse_retry_after(" 120\r\n"), 120);
    assert_int_equal(mcg_kube_parse_retry_after("0"), 0);
    assert_int_equal(mcg_kube_parse_retry_after(NULL), -1);
    assert_int_equal(mcg_kube_parse_retry_after(""), -1);
    assert_int_equal(mcg_kube_parse_retry_after("-1"), -1);
    assert_int_equal(mcg_kube_parse_retry_after("1.5"), -1);
    assert_int_equal(mcg_kube_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), -1);
    assert_int_equal(mcg_kube_parse_retry_after("99999999999999"), -1);
}

/* ---------------------------------------------------------- responses */

static void test_parse_object(void **state)
{
    (void)state;
    json_t *o;
    mcg_err err = {0};
    const char *ok = "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\"}}";
    assert_int_equal(mcg_kube_parse_object(&o, "GET /x", ok, strlen(ok), 1024, &err), 0);
    assert_string_equal(json_string_value(json_object_get(o, "kind")), "Node");
    json_decref(o);
    static const struct {
        const char *body;
        size_t max;
        const char *msg;
    } bad[] = {
        {"[1,2]", 1024, "not a JSON object"},
        {"\"str\"", 1024, "invalid JSON"},
        {"{\"a\":1", 1024, "invalid JSON"},
        {"{\"a\":1,\"a\":2}", 1024, "invalid JSON"},
        {"{\"a\":\"\\u0000\"}", 1024, "invalid JSON"},
        {"", 1024, "empty response"},
        {"{\"a\":1}", 3, "larger than 3 bytes"},
        {"{\"a\":1} trailing", 1024, "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        o = NULL;
        assert_int_not_equal(
            mcg_kube_parse_object(&o, "GET /x", bad[i].body, strlen(bad[i].body), bad[i].max, &err),
            0);
        assert_null(o);
        assert_contains(err.msg, "GET /x: ");
        assert_contains(err.msg, bad[i].msg);
    }
}

static void test_error_text(void **state)
{
    (void)state;
    char out[200];
    const char *st =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
        "\"message\":\"nodes \\\"n1\\\" is forbidden: User \\\"nobody\\\" cannot get "
        "resource \\\"nodes\\\"\\nsecond line\",\"reason\":\"Forbidden\",\"code\":403}";
    mcg_kube_error_text(out, sizeof(out), 403, st, strlen(st));
    assert_string_equal(out, "nodes \"n1\" is forbidden: User \"nobody\" cannot get resource "
                             "\"nodes\" second line");
    /* not JSON: a short cleaned excerpt */
    const char *html = "<html>\r\n<body>\x1b[31mbad gateway</body></html>";
    mcg_kube_error_text(out, sizeof(out), 502, html, strlen(html));
    assert_null(strchr(out, '\x1b'));
    assert_null(strchr(out, '\n'));
    assert_contains(out, "bad gateway");
    /* nothing: the reason phrase */
    mcg_kube_error_text(out, sizeof(out), 503, "", 0);
    assert_string_equal(out, "Service Unavailable");
    mcg_kube_error_text(out, sizeof(out), 299, NULL, 0);
    assert_string_equal(out, "no message");
    /* JSON without a message */
    mcg_kube_error_text(out, sizeof(out), 404, "{\"kind\":\"Status\"}", 17);
    assert_string_equal(out, "Not Found");
    /* long messages are cut, marked, and never split a UTF-8 sequence */
    mcg_buf b = MCG_BUF_INIT;
    mcg_buf_puts(&b, "{\"message\":\"");
    for (int i = 0; i < 300; i++)
        mcg_buf_puts(&b, "\xc3\xa9");
    mcg_buf_puts(&b, "\"}");
    char small[21];
    mcg_kube_error_text(small, sizeof(small), 500, b.ptr, b.len);
    assert_true(strlen(small) <= 20);
    assert_contains(small, "...");
    json_t *valid = json_string(small);
    assert_non_null(valid); /* still valid UTF-8 */
    json_decref(valid);
    mcg_buf_free(&b);
    /* C1 controls in UTF-8 are removed too */
    char c1[64];
    mcg_kube_clean_line(c1, sizeof(c1),
                        "a\xc2\x9b"
                        "31mb",
                        7);
    assert_string_equal(c1, "a 31mb");
}

static void test_merge_diff(void **state)
{
    (void)state;
    json_t *a = json_loads("{\"x\":1,\"y\":{\"p\":1,\"q\":2},\"z\":[1,2],\"gone\":true}", 0, NULL);
    json_t *b =
        json_loads("{\"x\":1,\"y\":{\"p\":1,\"q\":3,\"r\":4},\"z\":[1],\"new\":\"v\"}", 0, NULL);
    json_t *d = mcg_kube_merge_diff(a, b);
    json_t *want =
        json_loads("{\"y\":{\"q\":3,\"r\":4},\"z\":[1],\"gone\":null,\"new\":\"v\"}", 0, NULL);
    assert_true(json_equal(d, want));
    json_decref(d);
    json_decref(want);
    assert_null(mcg_kube_merge_diff(a, a));
    /* a null in the target removes; a null where nothing was is no change */
    json_t *c = json_loads("{\"x\":null,\"y\":{\"p\":1,\"q\":2},\"z\":[1,2],\"gone\":true,"
                           "\"never\":null}",
                           0, NULL);
    d = mcg_kube_merge_diff(a, c);
    want = json_loads("{\"x\":null}", 0, NULL);
    assert_true(json_equal(d, want));
    json_decref(d);
    json_decref(want);
    /* nested empty objects that match produce no patch */
    json_t *e1 = json_loads("{\"s\":{}}", 0, NULL), *e2 = json_loads("{\"s\":{}}", 0, NULL);
    assert_null(mcg_kube_merge_diff(e1, e2));
    json_decref(e1);
    json_decref(e2);
    json_t *s = mcg_kube_strip_nulls(c);
    want = json_loads("{\"y\":{\"p\":1,\"q\":2},\"z\":[1,2],\"gone\":true}", 0, NULL);
    assert_true(json_equal(s, want));
    json_decref(s);
    json_decref(want);
    json_decref(a);
    json_decref(b);
    json_decref(c);
}

static void test_rv_cmp(void **state)
{
    (void)state;
    assert_true(mcg_kube_rv_cmp("9", "10") < 0);
    assert_true(mcg_kube_rv_cmp("10", "9") > 0);
    assert_int_equal(mcg_kube_rv_cmp("10", "10"), 0);
    assert_int_equal(mcg_kube_rv_cmp("abc", "abc"), 0);
    assert_int_equal(mcg_kube_rv_cmp("abc", "abd"), 1);
    assert_int_equal(mcg_kube_rv_cmp(NULL, "1"), 1);
}

/* ------------------------------------------------------------- watch */

typedef struct seen {
    char log[2048];
    int n;
} seen;

static void on_ev(const char *type, json_t *obj, void *arg)
{
    seen *s = arg;
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    size_t l = strlen(s->log);
    snprintf(s->log + l, sizeof(s->log) - l, "%s:%s:%s;", type, name ? name : "-", rv ? rv : "-");
    s->n++;
}

static void test_stream_feed(void **state)
{
    (void)state;
    const char *events =
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"5\"}}}"
        "\n"
        "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"b\",\"resourceVersion\":\"6\"}"
        "}}\r\n"
        "\n"
        "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}\n"
        "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"10\"}"
        "}}\n";
    /* fed in every chunk size, the events come out the same */
    for (size_t chunk = 1; chunk < strlen(events); chunk += 7) {
        mcg_kube_stream s;
        memset(&s, 0, sizeof(s));
        s.max_line = 4096;
        seen sn;
        memset(&sn, 0, sizeof(sn));
        for (size_t off = 0; off < strlen(events); off += chunk) {
            size_t n = strlen(events) - off < chunk ? strlen(events) - off : chunk;
            assert_int_equal(mcg_kube_stream_feed(&s, events + off, n, on_ev, &sn), 0);
        }
        assert_string_equal(sn.log, "ADDED:a:5;MODIFIED:b:6;BOOKMARK:-:9;DELETED:a:10;");
        mcg_kube_stream_free(&s);
    }
    /* 410 Gone: re-list */
    mcg_kube_stream s;
    memset(&s, 0, sizeof(s));
    s.max_line = 4096;
    seen sn;
    memset(&sn, 0, sizeof(sn));
    const char *gone = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
                       "\"reason\":\"Expired\",\"message\":\"too old resource version: 1 (5)\"}}\n";
    assert_int_equal(mcg_kube_stream_feed(&s, gone, strlen(gone), on_ev, &sn), MCG_ENOTFOUND);
    assert_true(s.gone);
    assert_contains(s.err, "too old resource version");
    assert_int_equal(sn.n, 0);
    mcg_kube_stream_free(&s);
    /* other errors, junk, unknown types and oversized lines end the stream */
    static const struct {
        const char *data;
        int rc;
        const char *msg;
    } bad[] = {
        {"{\"type\":\"ERROR\",\"object\":{\"code\":500,\"message\":\"boom\"}}\n", MCG_EIO,
         "500: boom"},
        {"not json\n", MCG_EINVAL, "malformed event"},
        {"{\"type\":\"ADDED\"}\n", MCG_EINVAL, "malformed event"},
        {"{\"type\":\"ADDED\",\"object\":[]}\n", MCG_EINVAL, "malformed event"},
        {"{\"type\":\"EXPLODED\",\"object\":{}}\n", MCG_EINVAL, "unknown event type"},
        {"{\"type\":\"ADDED\",\"object\":{\"x\":\"................................................"
         "\"}}",
         MCG_EINVAL, "larger than 32 bytes"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&s, 0, sizeof(s));
        s.max_line = 32;
        if (i < 5)
            s.max_line = 4096;
        assert_int_equal(mcg_kube_stream_feed(&s, bad[i].data, strlen(bad[i].data), on_ev, &sn),
                         bad[i].rc);
        assert_contains(s.err, bad[i].msg);
        /* once broken, it stays broken */
        assert_int_not_equal(mcg_kube_stream_feed(&s, "\n", 1, on_ev, &sn), 0);
        mcg_kube_stream_free(&s);
    }
}

/* ------------------------------------------------------------- lease */

static void test_lease_decide(void **state)
{
    (void)state;
    mcg_kube_lease l = {"ctl-a", 15, 0};
    /* we hold it: renew, whatever the clocks say */
    assert_int_equal(mcg_kube_lease_decide(&l, "ctl-a", 0, 1000000), MCG_LEASE_RENEW);
    /* someone else, seen changing just now: follow */
    assert_int_equal(mcg_kube_lease_decide(&l, "ctl-b", 100000, 100000), MCG_LEASE_FOLLOW);
    assert_int_equal(mcg_kube_lease_decide(&l, "ctl-b", 100000, 114999), MCG_LEASE_FOLLOW);
    /* not renewed for a whole duration by our clock: take it */
    assert_int_equal(mcg_kube_lease_decide(&l, "ctl-b", 100000, 115001), MCG_LEASE_TAKE);
    /* the holder's renewTime plays no part (clock skew cannot make two leaders) */
    l.renew_ms = 1;
    assert_int_equal(mcg_kube_lease_decide(&l, "ctl-b", 100000, 100001), MCG_LEASE_FOLLOW);
    /* released or never held: take */
    mcg_kube_lease free_l = {"", 15, 0};
    assert_int_equal(mcg_kube_lease_decide(&free_l, "ctl-b", 0, 0), MCG_LEASE_TAKE);
    mcg_kube_lease none = {NULL, 0, 0};
    assert_int_equal(mcg_kube_lease_decide(&none, "ctl-b", 0, 0), MCG_LEASE_TAKE);
    /* no duration: 15 s */
    mcg_kube_lease nod = {"ctl-a", 0, 0};
    assert_int_equal(mcg_kube_lease_decide(&nod, "ctl-b", 0, 14000), MCG_LEASE_FOLLOW);
    assert_int_equal(mcg_kube_lease_decide(&nod, "ctl-b", 0, 16000), MCG_LEASE_TAKE);
}

static void test_time_micro(void **state)
{
    (void)state;
    char buf[40];
    mcg_kube_time_micro(1767225600123LL, buf);
    assert_string_equal(buf, "2026-01-01T00:00:00.123000Z");
    int64_t ms;
    assert_true(mcg_kube_time_parse_ms(buf, &ms));
    assert_int_equal(ms, 1767225600123LL);
    assert_true(mcg_kube_time_parse_ms("2026-01-01T00:00:00Z", &ms));
    assert_int_equal(ms, 1767225600000LL);
    assert_true(mcg_kube_time_parse_ms("2026-01-01T00:00:00.5Z", &ms));
    assert_int_equal(ms, 1767225600500LL);
    assert_false(mcg_kube_time_parse_ms("2026-01-01T00:00:00.Z", &ms));
    assert_false(mcg_kube_time_parse_ms("2026-01-01T00:00:00+01:00", &ms));
    assert_false(mcg_kube_time_parse_ms("yesterday", &ms));
}

static void test_escape(void **state)
{
    (void)state;
    char *e = mcg_kube_escape("metadata.name=node-1");
    assert_string_equal(e, "metadata.name%3Dnode-1");
    free(e);
    e = mcg_kube_escape("machineconfiguration.mcgit.io/rendered=true&x y");
    assert_string_equal(e, "machineconfiguration.mcgit.io%2Frendered%3Dtrue%26x%20y");
    free(e);
}

/* The backend refuses what it cannot open, with the reason. */
static void test_open_errors(void **state)
{
    (void)state;
    mcg_cluster *c = NULL;
    mcg_err err = {0};
    assert_int_not_equal(mcg_cluster_open(&c, "kube:", &err), 0);
    assert_contains(err.msg, "expected kube:KUBECONFIG");
    assert_int_not_equal(mcg_cluster_open(&c, "kubernetes", &err), 0);
    assert_contains(err.msg, "expected local:DIR, kube or kube:KUBECONFIG");
    write_file("kc", "kind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: "
                     "{cluster: k}\nclusters:\n- name: k\n  cluster:\n"
                     "    server: https://127.0.0.1:1\n");
    char *spec = mcg_sprintf("kube:%s/kc", tmpdir);
    setenv("MCGIT_NAMESPACE", "Bad_NS", 1);
    assert_int_not_equal(mcg_cluster_open(&c, spec, &err), 0);
    assert_contains(err.msg, "namespace 'Bad_NS'");
    unsetenv("MCGIT_NAMESPACE");
    /* opening does not connect; the first call says the server is unreachable, in one line */
    setenv("MCGIT_KUBE_RETRIES", "2", 1);
    assert_int_equal(mcg_cluster_open(&c, spec, &err), 0);
    mcg_node *nodes = NULL;
    size_t n = 0;
    assert_int_not_equal(mcg_cluster_list_nodes(c, &nodes, &n, &err), 0);
    assert_contains(err.msg, "GET /api/v1/nodes");
    assert_contains(err.msg, "after 2 attempts");
    assert_null(strchr(err.msg, '\n'));
    assert_null(mcg_cluster_node_root(c, "n1"));
    bool leader = true;
    assert_int_not_equal(mcg_cluster_lead(c, "me", &leader, &err), 0);
    assert_false(leader);
    assert_contains(err.msg, "leader election (Lease mcgit/mcgit-controller)");
    mcg_cluster_free(c);
    unsetenv("MCGIT_KUBE_RETRIES");
    free(spec);
}

/* The wrappers give backends without lead/wait_change their defaults. */
static void test_defaults_local(void **state)
{
    (void)state;
    char *spec = mcg_sprintf("local:%s/local", tmpdir);
    mcg_cluster *c = NULL;
    mcg_err err = {0};
    assert_int_equal(mcg_cluster_open(&c, spec, &err), 0);
    bool leader = false;
    assert_int_equal(mcg_cluster_lead(c, "x", &leader, &err), 0);
    assert_true(leader);
    assert_int_equal(mcg_cluster_wait_change(c, NULL, 10, &err), 0);
    volatile sig_atomic_t stop = 1;
    mcg_cluster_set_stop(c, &stop);
    assert_int_equal(mcg_cluster_wait_change(c, NULL, 60000, &err), 0); /* returns at once */
    mcg_cluster_free(c);
    free(spec);
}

/* The Event object: namespace, the involved object with its uid and group,
 * type, reason, message, source; no uid when unknown. */
static void test_event_object(void **state)
{
    (void)state;
    mcg_event ev = {"mcgit-agent", false, "w1", true, "ConfigDriftDetected", "drift: /etc/x"};
    json_t *o = mcg_kube_event_object(&ev, "u-1", "default", "w1.00ff", "host1", 1767225600);
    assert_non_null(o);
    assert_string_equal(mcg_kube_str_at(o, "metadata", "namespace"), "default");
    assert_string_equal(mcg_kube_str_at(o, "metadata", "name"), "w1.00ff");
    assert_string_equal(mcg_kube_str_at(o, "involvedObject", "kind"), "Node");
    assert_string_equal(mcg_kube_str_at(o, "involvedObject", "apiVersion"), "v1");
    assert_string_equal(mcg_kube_str_at(o, "involvedObject", "uid"), "u-1");
    assert_string_equal(mcg_kube_str_at(o, "type", NULL), "Warning");
    assert_string_equal(mcg_kube_str_at(o, "reason", NULL), "ConfigDriftDetected");
    assert_string_equal(mcg_kube_str_at(o, "message", NULL), "drift: /etc/x");
    assert_string_equal(mcg_kube_str_at(o, "source", "component"), "mcgit-agent");
    assert_string_equal(mcg_kube_str_at(o, "source", "host"), "host1");
    assert_string_equal(mcg_kube_str_at(o, "firstTimestamp", NULL), "2026-01-01T00:00:00Z");
    json_decref(o);
    mcg_event pe = {"mcgit-controller", true, "worker", false, "SetDesiredConfig", "m"};
    o = mcg_kube_event_object(&pe, NULL, "default", "worker.1", "", 0);
    assert_non_null(o);
    assert_string_equal(mcg_kube_str_at(o, "involvedObject", "kind"), "MachineConfigPool");
    assert_string_equal(mcg_kube_str_at(o, "involvedObject", "apiVersion"), MCG_KUBE_GV);
    assert_null(mcg_kube_str_at(o, "involvedObject", "uid"));
    assert_null(mcg_kube_str_at(o, "source", "host"));
    assert_string_equal(mcg_kube_str_at(o, "type", NULL), "Normal");
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_object),
        cmocka_unit_test(test_kubeconfig_data_fields),
        cmocka_unit_test(test_kubeconfig_file_fields),
        cmocka_unit_test(test_kubeconfig_token_insecure),
        cmocka_unit_test(test_kubeconfig_bad),
        cmocka_unit_test_setup_teardown(test_kubeconfig_load_files, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_in_cluster, setup_dir, teardown_dir),
        cmocka_unit_test(test_retryable),
        cmocka_unit_test(test_retry_delay),
        cmocka_unit_test(test_retry_after_parse),
        cmocka_unit_test(test_parse_object),
        cmocka_unit_test(test_error_text),
        cmocka_unit_test(test_merge_diff),
        cmocka_unit_test(test_rv_cmp),
        cmocka_unit_test(test_stream_feed),
        cmocka_unit_test(test_lease_decide),
        cmocka_unit_test(test_time_micro),
        cmocka_unit_test(test_escape),
        cmocka_unit_test_setup_teardown(test_open_errors, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_defaults_local, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
