/*
 * bench_parsers.c — time against input size for the parsers of untrusted
 * text that bench_pack_parsers.c does not cover: repository YAML into the
 * model (a MachineConfig of many files, a pool of many labels), data: URLs
 * and gzip, allowed_signers, an SSHSIG signature over a growing message,
 * kubeconfig, and Kubernetes API bodies (one NodeList object read node by
 * node, and a watch stream fed in 4 KiB chunks).
 *
 * Each input doubles three times (1x, 2x, 4x, 8x); the time is the fastest
 * of three runs. A linear parser keeps its time per byte flat, a quadratic
 * one multiplies it by 8 from the smallest input to the largest. Prints one
 * line per size and a final line per parser with the ratio of the largest
 * input's ns/byte to the smallest's, and exits 1 if any ratio is over 3
 * (linear within cache effects).
 *
 *   build/tests/bench/bench_parsers [SCALE]      (SCALE multiplies base sizes; default 1)
 *
 * Not run by ctest; figures in docs/PERFORMANCE.md ("Parser cost").
 */
#include "cluster/kube_int.h"
#include "model/model.h"
#include "trust/trust.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

/* Monotonic seconds. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------ inputs */

/* A MachineConfig with n files, each a short data: URL. */
static void make_mc(mcg_buf *b, size_t n)
{
    mcg_buf_puts(b, "apiVersion: machineconfiguration.openshift.io/v1\n"
                    "kind: MachineConfig\n"
                    "metadata:\n"
                    "  name: 50-many\n"
                    "  labels:\n"
                    "    machineconfiguration.openshift.io/role: worker\n"
                    "spec:\n"
                    "  config:\n"
                    "    ignition:\n"
                    "      version: 3.4.0\n"
                    "    storage:\n"
                    "      files:\n");
    for (size_t i = 0; i < n; i++)
        mcg_buf_printf(b,
                       "      - path: /etc/bench/f%08zu.conf\n"
                       "        mode: 420\n"
                       "        contents:\n"
                       "          source: data:,value%%3D%zu%%0A\n",
                       i, i);
}

/* A pool whose node selector has n labels. */
static void make_pool(mcg_buf *b, size_t n)
{
    mcg_buf_puts(b, "apiVersion: machineconfiguration.openshift.io/v1\n"
                    "kind: MachineConfigPool\n"
                    "metadata:\n"
                    "  name: worker\n"
                    "spec:\n"
                    "  machineConfigSelector:\n"
                    "    matchLabels:\n"
                    "      machineconfiguration.openshift.io/role: worker\n"
                    "  nodeSelector:\n"
                    "    matchLabels:\n");
    for (size_t i = 0; i < n; i++)
        mcg_buf_printf(b, "      example.com/label-%08zu: \"v%zu\"\n", i, i);
}

/* Parse one repository file into a fresh model and finish it; its time. */
static double run_model(const mcg_buf *b, const char *path)
{
    mcg_diags d = {0};
    mcg_model *m = mcg_model_new();
    double t0 = now();
    mcg_model_add_file(m, path, b->ptr, b->len, &d);
    mcg_model_finish(m, &d);
    double t = now() - t0;
    size_t problems = d.count;
    if (problems)
        fprintf(stderr, "%s\n", d.msgs[0]);
    mcg_diags_free(&d);
    mcg_model_free(m);
    if (problems) {
        fprintf(stderr, "model: %zu problems in %s\n", problems, path);
        exit(1);
    }
    return t;
}

static double run_mc(const mcg_buf *b)
{
    return run_model(b, "machineconfigs/50-many.yaml");
}

static double run_pool(const mcg_buf *b)
{
    return run_model(b, "pools/worker.yaml");
}

/* A base64 data: URL of n bytes. */
static void make_url(mcg_buf *b, size_t n)
{
    unsigned char *raw = mcg_malloc(n);
    for (size_t i = 0; i < n; i++)
        raw[i] = (unsigned char)(i * 131 + (i >> 8));
    mcg_dataurl_encode(raw, n, b);
    mcg_buf_putc(b, '\0');
    b->len--;
    free(raw);
}

static double run_url(const mcg_buf *b)
{
    mcg_buf out = {0};
    mcg_err err = {0};
    double t0 = now();
    int rc = mcg_dataurl_decode(b->ptr, &out, &err);
    double t = now() - t0;
    mcg_buf_free(&out);
    if (rc != 0) {
        fprintf(stderr, "dataurl: %s\n", err.msg);
        exit(1);
    }
    return t;
}

/* A gzip stream of about n bytes (text that compresses about 3:1). */
static void make_gzip(mcg_buf *b, size_t n)
{
    size_t plain = n * 3;
    unsigned char *raw = mcg_malloc(plain);
    unsigned x = 12345;
    for (size_t i = 0; i < plain; i++) {
        x = x * 1103515245u + 12345u;
        raw[i] = (unsigned char)("abcdefgh ijklmnop\n"[(x >> 16) % 18]);
    }
    z_stream z = {0};
    if (deflateInit2(&z, 6, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        exit(1);
    uLong cap = deflateBound(&z, (uLong)plain);
    unsigned char *out = mcg_malloc(cap);
    z.next_in = raw;
    z.avail_in = (uInt)plain;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        exit(1);
    mcg_buf_put(b, out, z.total_out);
    deflateEnd(&z);
    free(out);
    free(raw);
}

static double run_gzip(const mcg_buf *b)
{
    mcg_buf out = {0};
    mcg_err err = {0};
    double t0 = now();
    int rc = mcg_gunzip((const unsigned char *)b->ptr, b->len, (size_t)1 << 30, &out, &err);
    double t = now() - t0;
    mcg_buf_free(&out);
    if (rc != 0) {
        fprintf(stderr, "gunzip: %s\n", err.msg);
        exit(1);
    }
    return t;
}

/* allowed_signers with n distinct ed25519 keys. */
static void make_signers(mcg_buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mcg_sshkey k;
        mcg_sshkey_generate(&k);
        char *line = mcg_sshkey_public_line(&k, NULL);
        mcg_buf_printf(b, "user%zu@example.com namespaces=\"git\" %s\n", i, line);
        free(line);
        mcg_sshkey_wipe(&k);
    }
}

static double run_signers(const mcg_buf *b)
{
    mcg_signers *s = NULL;
    mcg_err err = {0};
    double t0 = now();
    int rc = mcg_signers_parse(&s, "allowed_signers", b->ptr, b->len, &err);
    double t = now() - t0;
    mcg_signers_free(s);
    if (rc != 0) {
        fprintf(stderr, "signers: %s\n", err.msg);
        exit(1);
    }
    return t;
}

/* The message an SSHSIG signs (n bytes); the signature is made once per size. */
static mcg_sshkey sig_key;
static mcg_signers *sig_set;
static char *sig_armor;

static void make_sigmsg(mcg_buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mcg_buf_putc(b, (char)('a' + i % 26));
    free(sig_armor);
    sig_armor = mcg_sshsig_sign(&sig_key, b->ptr, b->len);
}

static double run_sshsig(const mcg_buf *b)
{
    mcg_sig_result res;
    mcg_err err = {0};
    double t0 = now();
    int rc = mcg_sshsig_verify(&res, sig_set, sig_armor, strlen(sig_armor), b->ptr, b->len,
                               1767225600, &err);
    double t = now() - t0;
    if (rc != 0) {
        fprintf(stderr, "sshsig: %s\n", err.msg);
        exit(1);
    }
    return t;
}

/* A kubeconfig with n clusters, users and contexts; the current one is the last. */
static void make_kubeconfig(mcg_buf *b, size_t n)
{
    mcg_buf_puts(b, "apiVersion: v1\nkind: Config\nclusters:\n");
    for (size_t i = 0; i < n; i++)
        mcg_buf_printf(b,
                       "- name: c%zu\n  cluster:\n    server: https://10.0.%zu.%zu:6443\n"
                       "    certificate-authority: ca%zu.crt\n",
                       i, (i >> 8) & 255, i & 255, i);
    mcg_buf_puts(b, "users:\n");
    for (size_t i = 0; i < n; i++)
        mcg_buf_printf(b, "- name: u%zu\n  user:\n    token: t0k3n-%zu\n", i, i);
    mcg_buf_puts(b, "contexts:\n");
    for (size_t i = 0; i < n; i++)
        mcg_buf_printf(b, "- name: x%zu\n  context:\n    cluster: c%zu\n    user: u%zu\n", i, i,
                       i);
    mcg_buf_printf(b, "current-context: x%zu\n", n - 1);
}

static double run_kubeconfig(const mcg_buf *b)
{
    mcg_kube_config cfg;
    mcg_err err = {0};
    double t0 = now();
    int rc = mcg_kube_config_parse(&cfg, "/etc/mcgit/kubeconfig", b->ptr, b->len, &err);
    double t = now() - t0;
    if (rc != 0) {
        fprintf(stderr, "kubeconfig: %s\n", err.msg);
        exit(1);
    }
    mcg_kube_config_free(&cfg);
    return t;
}

/* One Node object as the API server writes it. */
static void put_node(mcg_buf *b, size_t i)
{
    mcg_buf_printf(
        b,
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"worker-%zu\","
        "\"resourceVersion\":\"%zu\",\"labels\":{\"node-role.kubernetes.io/worker\":\"\","
        "\"kubernetes.io/hostname\":\"worker-%zu\"},\"annotations\":{"
        "\"machineconfiguration.openshift.io/currentConfig\":\"rendered-worker-0123456789abcdef\","
        "\"machineconfiguration.openshift.io/desiredConfig\":\"rendered-worker-0123456789abcdef\","
        "\"machineconfiguration.openshift.io/state\":\"Done\"}},"
        "\"spec\":{},\"status\":{\"nodeInfo\":{\"machineID\":\"%032zx\",\"bootID\":\"b-%zu\","
        "\"systemUUID\":\"u-%zu\"}}}",
        i, i + 1000, i, i, i, i);
}

/* A NodeList of n nodes. */
static void make_nodelist(mcg_buf *b, size_t n)
{
    mcg_buf_puts(b, "{\"apiVersion\":\"v1\",\"kind\":\"NodeList\",\"metadata\":"
                    "{\"resourceVersion\":\"99\"},\"items\":[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            mcg_buf_putc(b, ',');
        put_node(b, i);
    }
    mcg_buf_puts(b, "]}");
}

static double run_nodelist(const mcg_buf *b)
{
    json_t *o = NULL;
    mcg_err err = {0};
    double t0 = now();
    if (mcg_kube_parse_object(&o, "GET /api/v1/nodes", b->ptr, b->len, (size_t)1 << 30, &err) !=
        0) {
        fprintf(stderr, "nodelist: %s\n", err.msg);
        exit(1);
    }
    json_t *items = json_object_get(o, "items");
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        mcg_node node;
        if (mcg_node_from_json(&node, it, &err) != 0) {
            fprintf(stderr, "node: %s\n", err.msg);
            exit(1);
        }
        mcg_node_clear(&node);
    }
    double t = now() - t0;
    json_decref(o);
    return t;
}

/* A watch stream of n MODIFIED events, one per line. */
static void make_watch(mcg_buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mcg_buf_puts(b, "{\"type\":\"MODIFIED\",\"object\":");
        put_node(b, i);
        mcg_buf_puts(b, "}\n");
    }
}

static void count_event(const char *type, json_t *obj, void *arg)
{
    (void)type;
    (void)obj;
    (*(size_t *)arg)++;
}

static double run_watch(const mcg_buf *b)
{
    mcg_kube_stream s = {.max_line = (size_t)1 << 20};
    size_t events = 0;
    double t0 = now();
    for (size_t off = 0; off < b->len; off += 4096) {
        size_t len = b->len - off < 4096 ? b->len - off : 4096;
        if (mcg_kube_stream_feed(&s, b->ptr + off, len, count_event, &events) != 0) {
            fprintf(stderr, "watch: %s\n", s.err);
            exit(1);
        }
    }
    double t = now() - t0;
    mcg_kube_stream_free(&s);
    if (!events)
        exit(1);
    return t;
}

/* ------------------------------------------------------------ driver */

typedef struct parser {
    const char *name;
    const char *unit;
    size_t base;
    void (*make)(mcg_buf *, size_t);
    double (*run)(const mcg_buf *);
} parser;

static const parser PARSERS[] = {
    {"MachineConfig YAML -> model", "files", 2500, make_mc, run_mc},
    {"pool YAML, node selector -> model", "labels", 10000, make_pool, run_pool},
    {"data: URL (base64)", "bytes", 1 << 20, make_url, run_url},
    {"gzip", "bytes", 1 << 19, make_gzip, run_gzip},
    {"allowed_signers", "keys", 1000, make_signers, run_signers},
    {"SSHSIG over a message", "bytes", 1 << 20, make_sigmsg, run_sshsig},
    {"kubeconfig", "contexts", 2500, make_kubeconfig, run_kubeconfig},
    {"NodeList -> nodes", "nodes", 1000, make_nodelist, run_nodelist},
    {"watch stream -> events", "events", 1000, make_watch, run_watch},
};

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    if (scale <= 0) {
        fprintf(stderr, "usage: bench_parsers [SCALE]\n");
        return 2;
    }
    mcg_sshkey_generate(&sig_key);
    char *line = mcg_sshkey_public_line(&sig_key, NULL);
    mcg_buf sl = {0};
    mcg_buf_printf(&sl, "bench@example.com %s\n", line);
    free(line);
    mcg_err err = {0};
    if (mcg_signers_parse(&sig_set, "bench", sl.ptr, sl.len, &err) != 0) {
        fprintf(stderr, "signers: %s\n", err.msg);
        return 1;
    }
    mcg_buf_free(&sl);

    int bad = 0;
    printf("%-36s %12s %12s %10s %9s\n", "parser", "input", "bytes", "seconds", "ns/byte");
    char summary[sizeof PARSERS / sizeof PARSERS[0]][160];
    for (size_t p = 0; p < sizeof PARSERS / sizeof PARSERS[0]; p++) {
        const parser *ps = &PARSERS[p];
        double first = 0, last = 0, t1 = 0, t8 = 0;
        size_t b1 = 0, b8 = 0;
        for (size_t k = 1; k <= 8; k *= 2) {
            size_t n = (size_t)((double)ps->base * scale) * k;
            mcg_buf b = {0};
            ps->make(&b, n);
            double best = 1e9;
            for (int r = 0; r < 3; r++) {
                double t = ps->run(&b);
                if (t < best)
                    best = t;
            }
            double nsb = best * 1e9 / (double)b.len;
            printf("%-36s %8zu %-5s %10zu %10.4f %9.2f\n", ps->name, n, ps->unit, b.len, best,
                   nsb);
            if (k == 1) {
                first = nsb;
                t1 = best;
                b1 = b.len;
            }
            last = nsb;
            t8 = best;
            b8 = b.len;
            mcg_buf_free(&b);
        }
        double ratio = last / first;
        snprintf(summary[p], sizeof summary[p],
                 "| %s | %.1f → %.1f MB | %.4f s | %.4f s | %.1f → %.1f (x%.1f) |", ps->name,
                 (double)b1 / 1e6, (double)b8 / 1e6, t1, t8, first, last, ratio);
        if (ratio > 3.0)
            bad = 1;
    }
    printf("\n| parser | input 1x → 8x | 1x | 8x | ns/byte 1x → 8x |\n| --- | --- | --- | --- | --- |\n");
    for (size_t p = 0; p < sizeof PARSERS / sizeof PARSERS[0]; p++)
        printf("%s\n", summary[p]);
    free(sig_armor);
    mcg_signers_free(sig_set);
    mcg_sshkey_wipe(&sig_key);
    return bad;
}
