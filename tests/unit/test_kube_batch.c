/*
 * test_kube_batch.c — the kube backend's concurrent writes against a small
 * fake API server (plain HTTP on 127.0.0.1, one thread per connection):
 * a wave of node patches (mcg_cluster_patch_nodes) and a drain's evictions
 * go out concurrently but never more than MCGIT_KUBE_INFLIGHT at once; each
 * node gets its own result (a failure neither stops nor hides the others,
 * and is reported with the node's name); a retryable answer is retried; and
 * a Lease lost in the middle of a wave stops every write not yet sent.
 *
 * The fake server answers by the node's name: ok-* 200 (after delay_ms),
 * gone-* 404, bad-* 422, flaky-* 503 once then 200, moved-* (GET) a node
 * whose desiredConfig is "other". The Lease is always held by "other".
 * Against the real kube-apiserver: tests/integration/test_kube_backend.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "fsio/fsio.h"
#include "osenv/osenv.h"

#include "cluster/kube_int.h"

/* ------------------------------------------------------- fake server */

typedef struct fake {
    int lfd;
    int port;
    pthread_t th;
    pthread_mutex_t mu;
    long delay_ms; /* before answering a PATCH or an eviction */
    int inflight;  /* PATCH/POST requests being answered now */
    int max_inflight;
    int patches;    /* PATCH requests received */
    int evictions;  /* eviction POSTs received */
    int pod_lists;  /* pod lists served */
    int flaky_seen; /* flaky-* PATCHes so far */
    int pdb_seen;   /* evictions of pod pdb-* so far */
    bool bad_body;  /* a PATCH without the desiredConfig annotation */
} fake;

static fake F;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void reply(int fd, int code, const char *reason, const char *body)
{
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     code, reason, strlen(body));
    if (write(fd, head, (size_t)n) != n || write(fd, body, strlen(body)) != (ssize_t)strlen(body))
        return;
}

static void status_reply(int fd, int code, const char *reason, const char *msg)
{
    char *b = mcg_sprintf("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                          "\"message\":\"%s\",\"code\":%d}",
                          msg, code);
    reply(fd, code, reason, b);
    free(b);
}

static void node_reply(int fd, const char *name, const char *desired)
{
    char *b =
        mcg_sprintf("{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\","
                    "\"resourceVersion\":\"7\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\","
                    "\"annotations\":{\"" MCG_ANN_DESIRED "\":\"%s\"}}}",
                    name, desired);
    reply(fd, 200, "OK", b);
    free(b);
}

/* Count a write in flight while it is answered (max_inflight: the peak). */
static void write_begin(void)
{
    pthread_mutex_lock(&F.mu);
    if (++F.inflight > F.max_inflight)
        F.max_inflight = F.inflight;
    pthread_mutex_unlock(&F.mu);
    sleep_ms(F.delay_ms);
}

static void write_end(void)
{
    pthread_mutex_lock(&F.mu);
    F.inflight--;
    pthread_mutex_unlock(&F.mu);
}

static void serve(int fd, const char *method, const char *path, const char *body)
{
    const char *np = "/api/v1/nodes/";
    if (!strcmp(method, "PATCH") && !strncmp(path, np, strlen(np))) {
        const char *name = path + strlen(np);
        write_begin();
        pthread_mutex_lock(&F.mu);
        F.patches++;
        if (!strstr(body, MCG_ANN_DESIRED "\":\"rendered-x-2\""))
            F.bad_body = true;
        bool flaky_first = !strncmp(name, "flaky-", 6) && F.flaky_seen++ == 0;
        pthread_mutex_unlock(&F.mu);
        if (!strncmp(name, "gone-", 5))
            status_reply(fd, 404, "Not Found", "nodes not found");
        else if (!strncmp(name, "bad-", 4))
            status_reply(fd, 422, "Unprocessable Entity", "Node is invalid");
        else if (flaky_first)
            status_reply(fd, 503, "Service Unavailable", "try again");
        else
            node_reply(fd, name, "rendered-x-2");
        write_end();
    } else if (!strcmp(method, "GET") && !strncmp(path, np, strlen(np))) {
        node_reply(fd, path + strlen(np), "other");
    } else if (!strcmp(method, "GET") && strstr(path, "/leases/mcgit-controller")) {
        reply(fd, 200, "OK",
              "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\",\"metadata\":"
              "{\"name\":\"mcgit-controller\",\"namespace\":\"mcgit\",\"resourceVersion\":\"99\"},"
              "\"spec\":{\"holderIdentity\":\"other\",\"leaseDurationSeconds\":15}}");
    } else if (!strcmp(method, "GET") && !strcmp(path, "/apis/policy")) {
        reply(fd, 200, "OK", "{\"kind\":\"APIGroup\",\"versions\":[{\"version\":\"v1\"}]}");
    } else if (!strcmp(method, "GET") && !strncmp(path, "/api/v1/pods?", 13)) {
        pthread_mutex_lock(&F.mu);
        int round = F.pod_lists++;
        int pdb = F.pdb_seen;
        pthread_mutex_unlock(&F.mu);
        /* first round: five pods; then the PDB-blocked one until it is evicted */
        if (round == 0)
            reply(fd, 200, "OK",
                  "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":["
                  "{\"metadata\":{\"namespace\":\"a\",\"name\":\"p1\"}},"
                  "{\"metadata\":{\"namespace\":\"a\",\"name\":\"p2\"}},"
                  "{\"metadata\":{\"namespace\":\"a\",\"name\":\"p3\"}},"
                  "{\"metadata\":{\"namespace\":\"a\",\"name\":\"p4\"}},"
                  "{\"metadata\":{\"namespace\":\"a\",\"name\":\"pdb-1\"}}]}");
        else if (pdb < 2)
            reply(fd, 200, "OK",
                  "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"2\"},\"items\":["
                  "{\"metadata\":{\"namespace\":\"a\",\"name\":\"pdb-1\"}}]}");
        else
            reply(fd, 200, "OK",
                  "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"3\"},\"items\":[]}");
    } else if (!strcmp(method, "POST") && strstr(path, "/eviction")) {
        write_begin();
        pthread_mutex_lock(&F.mu);
        F.evictions++;
        bool blocked = strstr(path, "/pods/pdb-") && F.pdb_seen++ == 0;
        pthread_mutex_unlock(&F.mu);
        if (blocked)
            status_reply(fd, 429, "Too Many Requests",
                         "Cannot evict pod as it would violate the pod's disruption budget.");
        else
            reply(fd, 201, "Created", "{\"kind\":\"Status\",\"status\":\"Success\"}");
        write_end();
    } else {
        status_reply(fd, 404, "Not Found", "no such path");
    }
}

/* One connection: HTTP/1.1 requests one after another until EOF. */
static void *conn_main(void *arg)
{
    int fd = (int)(intptr_t)arg;
    mcg_buf in = MCG_BUF_INIT;
    char chunk[4096];
    for (;;) {
        char *end = in.len ? memmem(in.ptr, in.len, "\r\n\r\n", 4) : NULL;
        if (!end) {
            ssize_t r = read(fd, chunk, sizeof(chunk));
            if (r <= 0)
                break;
            mcg_buf_put(&in, chunk, (size_t)r);
            continue;
        }
        size_t head_len = (size_t)(end - in.ptr) + 4;
        size_t clen = 0;
        const char *cl = memmem(in.ptr, head_len, "Content-Length:", 15);
        if (cl)
            clen = strtoul(cl + 15, NULL, 10);
        while (in.len < head_len + clen) {
            ssize_t r = read(fd, chunk, sizeof(chunk));
            if (r <= 0)
                goto out;
            mcg_buf_put(&in, chunk, (size_t)r);
        }
        char method[16] = "", path[512] = "";
        sscanf(in.ptr, "%15s %511s", method, path);
        char *body = mcg_strndup(in.ptr + head_len, clen);
        serve(fd, method, path, body);
        free(body);
        memmove(in.ptr, in.ptr + head_len + clen, in.len - head_len - clen);
        in.len -= head_len + clen;
    }
out:
    mcg_buf_free(&in);
    close(fd);
    return NULL;
}

static void *accept_main(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(F.lfd, NULL, NULL);
        if (fd < 0)
            return NULL;
        pthread_t t;
        if (pthread_create(&t, NULL, conn_main, (void *)(intptr_t)fd) == 0)
            pthread_detach(t);
        else
            close(fd);
    }
}

static char kcpath[300];
static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    memset(&F, 0, sizeof(F));
    pthread_mutex_init(&F.mu, NULL);
    F.lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(F.lfd >= 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(F.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t al = sizeof(a);
    assert_int_equal(getsockname(F.lfd, (struct sockaddr *)&a, &al), 0);
    F.port = ntohs(a.sin_port);
    assert_int_equal(listen(F.lfd, 64), 0);
    assert_int_equal(pthread_create(&F.th, NULL, accept_main, NULL), 0);
    snprintf(tmpdir, sizeof(tmpdir), "%s/mcgit-kbatch-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(tmpdir));
    snprintf(kcpath, sizeof(kcpath), "%s/kubeconfig", tmpdir);
    FILE *f = fopen(kcpath, "w");
    assert_non_null(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            "clusters:\n- name: k\n  cluster: {server: 'http://127.0.0.1:%d'}\n"
            "users:\n- name: u\n  user: {token: secret}\n"
            "contexts:\n- name: c\n  context: {cluster: k, user: u}\n",
            F.port);
    fclose(f);
    setenv("MCGIT_KUBE_INFLIGHT", "4", 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    shutdown(F.lfd, SHUT_RDWR);
    close(F.lfd);
    pthread_join(F.th, NULL);
    mcg_test_rm_rf(tmpdir);
    unsetenv("MCGIT_KUBE_INFLIGHT");
    return 0;
}

static mcg_cluster *open_fake(void)
{
    char *spec = mcg_sprintf("kube:%s", kcpath);
    mcg_cluster *c = NULL;
    mcg_err e = {0};
    int rc = mcg_cluster_open(&c, spec, &e);
    free(spec);
    if (rc)
        fail_msg("open: %s", e.msg);
    return c;
}

/* ------------------------------------------------------------- tests */

/* Each node its own result; at most 4 in flight, and really concurrent. */
static void test_wave_results(void **state)
{
    (void)state;
    F.delay_ms = 100;
    mcg_cluster *c = open_fake();
    static const char *const names[] = {"ok-1", "ok-2", "gone-1",  "ok-3",    "bad-1",   "ok-4",
                                        "ok-5", "ok-6", "flaky-1", "moved-1", "Bad_Name"};
    enum { N = sizeof(names) / sizeof(names[0]) };
    mcg_node_patch ps[N];
    for (size_t i = 0; i < N; i++) {
        mcg_node_patch p = MCG_NODE_PATCH_INIT;
        p.desired = "rendered-x-2";
        if (!strncmp(names[i], "moved-", 6))
            p.if_desired = "rendered-x-1"; /* the server says "other": a lost race */
        ps[i] = p;
    }
    int rcs[N];
    mcg_err e = {0};
    int rc = mcg_cluster_patch_nodes(c, names, ps, N, rcs, &e);
    assert_int_equal(rc, MCG_EINVAL);
    assert_contains(e.msg, "node 'bad-1': PATCH /api/v1/nodes/bad-1: 422 Unprocessable Entity: "
                           "Node is invalid");
    static const int want[N] = {0, 0, MCG_ENOTFOUND, 0,         MCG_EINVAL, 0, 0,
                                0, 0, MCG_ECONFLICT, MCG_EINVAL};
    for (size_t i = 0; i < N; i++)
        if (rcs[i] != want[i])
            fail_msg("%s: rc %d, want %d", names[i], rcs[i], want[i]);
    /* every valid node but moved-1 was patched (flaky-1 twice), nothing more */
    assert_int_equal(F.patches, 10);
    assert_false(F.bad_body);
    assert_true(F.max_inflight <= 4);
    assert_true(F.max_inflight >= 2);
    mcg_cluster_free(c);
}

/* Two failures: both named, the first with its message. */
static void test_wave_all_failures_named(void **state)
{
    (void)state;
    mcg_cluster *c = open_fake();
    static const char *const names[] = {"bad-1", "ok-1", "bad-2", "bad-3"};
    mcg_node_patch ps[4];
    for (size_t i = 0; i < 4; i++) {
        mcg_node_patch p = MCG_NODE_PATCH_INIT;
        p.desired = "rendered-x-2";
        ps[i] = p;
    }
    int rcs[4];
    mcg_err e = {0};
    assert_int_equal(mcg_cluster_patch_nodes(c, names, ps, 4, rcs, &e), MCG_EINVAL);
    assert_contains(e.msg, "node 'bad-1': PATCH /api/v1/nodes/bad-1: 422");
    assert_contains(e.msg, "2 more failed: bad-2, bad-3");
    assert_int_equal(rcs[1], 0);
    assert_int_equal(F.patches, 4);
    /* err may be NULL */
    assert_int_equal(mcg_cluster_patch_nodes(c, names, ps, 4, rcs, NULL), MCG_EINVAL);
    mcg_cluster_free(c);
}

/*
 * A leader whose Lease is lost in the middle of a wave: the first four
 * writes go out while the Lease is fresh; they take longer than a third of
 * the lease, so the next write's fence renews first, finds the Lease held
 * by "other", and from then on nothing more is sent.
 */
static void test_wave_fenced_mid_batch(void **state)
{
    (void)state;
    F.delay_ms = 2300;
    mcg_cluster *c = open_fake();
    mcg_kube *k = (mcg_kube *)c;
    k->identity = mcg_strdup("me");
    k->leader = true;
    k->lease_duration_s = 6; /* renew after 2 s; valid for 4 s */
    k->lead_ok_ms = mcg_mono_ms();
    enum { N = 10 };
    const char *names[N];
    char buf[N][16];
    mcg_node_patch ps[N];
    for (size_t i = 0; i < N; i++) {
        snprintf(buf[i], sizeof(buf[i]), "ok-%zu", i);
        names[i] = buf[i];
        mcg_node_patch p = MCG_NODE_PATCH_INIT;
        p.desired = "rendered-x-2";
        ps[i] = p;
    }
    int rcs[N];
    mcg_err e = {0};
    assert_int_equal(mcg_cluster_patch_nodes(c, names, ps, N, rcs, &e), MCG_ECONFLICT);
    assert_contains(e.msg, "not the leader: Lease mcgit/mcgit-controller is not held by 'me'");
    assert_contains(e.msg, "(6 of 10 node writes not sent)");
    assert_int_equal(F.patches, 4);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(rcs[i], i < 4 ? 0 : MCG_ECONFLICT);
    /* and a later wave sends nothing at all */
    F.delay_ms = 0;
    assert_int_equal(mcg_cluster_patch_nodes(c, names, ps, N, rcs, &e), MCG_ECONFLICT);
    assert_int_equal(F.patches, 4);
    mcg_cluster_free(c);
}

/* A drain's evictions go out together, bounded; a PDB's 429 is waited out. */
static void test_drain_concurrent(void **state)
{
    (void)state;
    F.delay_ms = 100;
    setenv("MCGIT_KUBE_DRAIN_TIMEOUT", "20", 1);
    mcg_cluster *c = open_fake();
    mcg_err e = {0};
    int rc = mcg_cluster_drain(c, "ok-1", &e);
    if (rc)
        fail_msg("drain: %s", e.msg);
    assert_int_equal(F.evictions, 6); /* five pods, the PDB-blocked one twice */
    assert_true(F.max_inflight >= 2);
    assert_true(F.max_inflight <= 4);
    assert_true(F.pod_lists >= 3);
    unsetenv("MCGIT_KUBE_DRAIN_TIMEOUT");
    mcg_cluster_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wave_results, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wave_all_failures_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wave_fenced_mid_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain_concurrent, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
