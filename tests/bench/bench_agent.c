/*
 * bench_agent.c — the agent's apply and drift check on a large config.
 *
 * The tree is N files of SIZE bytes (deterministic pseudo-random bytes) in
 * 100 directories under /etc/bench. Run by tests/bench/bench_agent.sh:
 *   bench_agent tree DIR [N SIZE]   write the same tree as plain files
 *                                   (the cp -a / sha256sum baseline)
 *   bench_agent apply ROOT [N SIZE] apply it as a rendered config with
 *                                   mcg_agent_apply(); prints seconds
 *                                   (wall and CPU)
 *   bench_agent drift ROOT          drift check of the current config:
 *                                   cold (load + parse + compare) and warm
 *                                   (the parsed config kept, as the agent's
 *                                   loop does); prints seconds
 * Configs this size are over the 1.5 MiB rendered-config limit, so the
 * benchmark builds the spec itself and bypasses the cluster store.
 */
#include "agent/agent.h"
#include "fsio/fsio.h"
#include "render/render.h"

#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU time (user + system) of this process so far. */
static double cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The process's peak RSS (VmHWM) in KiB, -1 when unknown. */
static long peak_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmHWM:", 6))
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

/* Give freed memory back and restart the peak RSS from the current RSS
 * (Linux: clear_refs 5), so what follows is measured without the set-up. */
static void peak_reset(void)
{
    malloc_trim(0);
    int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (write(fd, "5", 1) != 1)
            fprintf(stderr, "bench_agent: cannot reset the peak RSS\n");
        close(fd);
    }
}

static void fill(unsigned char *buf, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = (unsigned char)(x >> 24);
    }
}

static char *rel_path(size_t i)
{
    return mcg_sprintf("etc/bench/d%02zu/f%05zu", i % 100, i);
}

static int cmd_tree(const char *dir, size_t n, size_t size)
{
    unsigned char *buf = mcg_malloc(size);
    mcg_err e = {0};
    for (size_t i = 0; i < n; i++) {
        char *rel = rel_path(i), *p = mcg_sprintf("%s/%s", dir, rel);
        char *d = mcg_strdup(p);
        *strrchr(d, '/') = '\0';
        if (i < 100 && mcg_mkdirs(d, 0755, &e) != 0) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        fill(buf, size, i);
        FILE *f = fopen(p, "wb");
        if (!f || fwrite(buf, 1, size, f) != size || fclose(f) != 0) {
            perror(p);
            return 1;
        }
        free(d);
        free(p);
        free(rel);
    }
    free(buf);
    return 0;
}

static int cmd_apply(const char *root, size_t n, size_t size)
{
    mcg_ignition ign;
    memset(&ign, 0, sizeof(ign));
    ign.version = mcg_strdup("3.4.0");
    ign.storage = mcg_calloc(n, sizeof(*ign.storage));
    ign.nstorage = n;
    unsigned char *buf = mcg_malloc(size);
    for (size_t i = 0; i < n; i++) {
        mcg_storage *s = &ign.storage[i];
        char *rel = rel_path(i);
        s->kind = MCG_NODE_FILE;
        s->path = mcg_sprintf("/%s", rel);
        free(rel);
        s->has_mode = true;
        s->mode = 0644;
        s->overwrite = MCG_TRUE;
        s->has_contents = true;
        fill(buf, size, i);
        mcg_buf b = MCG_BUF_INIT;
        mcg_buf_puts(&b, "data:;base64,");
        mcg_base64_encode(buf, size, &b);
        s->source = mcg_buf_detach(&b, NULL);
    }
    free(buf);
    json_t *j = mcg_render_spec_json(&ign);
    mcg_ignition_free(&ign);
    mcg_buf spec = MCG_BUF_INIT;
    mcg_err e = {0};
    if (mcg_json_canonical(j, &spec, &e) != 0) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    json_decref(j);
    unsigned char d[MCG_SHA256_LEN];
    char hex[2 * MCG_SHA256_LEN + 1];
    mcg_sha256(spec.ptr, spec.len, d);
    mcg_hex(d, sizeof(d), hex);
    hex[MCG_HASH_HEX] = '\0';
    char *name = mcg_sprintf("rendered-bench-%s", hex);

    mcg_agent_opts o;
    memset(&o, 0, sizeof(o));
    o.node = "bench";
    o.root = root;
    mcg_agent *a = NULL;
    mcg_agent_result res;
    if (mcg_agent_open(&a, &o, NULL, &e) != 0) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    /* the parse alone (model + decoders: every URL decoded and checked, then
     * only located, as the apply does), to split the apply time */
    double p0 = now();
    mcg_ignition check;
    if (mcg_ignition_parse_json_refs(&check, name, spec.ptr, spec.len, &e) != 0) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    double p1 = now();
    mcg_ignition_free(&check);
    printf("parse_seconds %.3f\n", p1 - p0);
    /* the agent's peak: the spec it received (held, as an agent holds what it
     * fetched) and whatever the apply adds; not the building of the spec */
    peak_reset();
    long base_kib = peak_kib();
    double t0 = now(), c0 = cpu();
    int rc = mcg_agent_apply(&res, a, name, spec.ptr, spec.len, &e);
    double t1 = now(), c1 = cpu();
    long apply_kib = peak_kib();
    if (rc || res.state != MCG_AGENT_DONE) {
        fprintf(stderr, "apply: %s\n", rc ? e.msg : res.reason);
        return 1;
    }
    printf("apply_seconds %.3f\napply_cpu_seconds %.3f\nspec_bytes %zu\nwritten %zu\n", t1 - t0,
           c1 - c0, spec.len, res.written);
    printf("apply_peak_rss_kib %ld\napply_start_rss_kib %ld\n", apply_kib, base_kib);
    mcg_agent_free(a);
    mcg_buf_free(&spec);
    free(name);
    return 0;
}

static int cmd_drift(const char *root, int warm_runs)
{
    mcg_agent_opts o;
    memset(&o, 0, sizeof(o));
    o.node = "bench";
    o.root = root;
    mcg_agent *a = NULL;
    mcg_agent_result res;
    mcg_err e = {0};
    if (mcg_agent_open(&a, &o, NULL, &e) != 0) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    double t0 = now();
    mcg_agent_check_drift(&res, a, &e);
    double t1 = now();
    printf("drift_cold_seconds %.3f\n", t1 - t0);
    if (res.state != MCG_AGENT_DONE) {
        fprintf(stderr, "drift: %s\n", res.reason);
        return 1;
    }
    double best = 1e9;
    for (int i = 0; i < warm_runs; i++) {
        t0 = now();
        mcg_agent_check_drift(&res, a, &e);
        t1 = now();
        if (t1 - t0 < best)
            best = t1 - t0;
    }
    if (warm_runs)
        printf("drift_warm_seconds %.3f\n", best);
    mcg_agent_free(a);
    return 0;
}

int main(int argc, char **argv)
{
    size_t n = 10000, size = 4096;
    if (argc >= 5) {
        n = (size_t)strtoul(argv[3], NULL, 10);
        size = (size_t)strtoul(argv[4], NULL, 10);
    }
    if (argc >= 3 && !strcmp(argv[1], "tree"))
        return cmd_tree(argv[2], n, size);
    if (argc >= 3 && !strcmp(argv[1], "apply"))
        return cmd_apply(argv[2], n, size);
    if (argc >= 3 && !strcmp(argv[1], "drift"))
        return cmd_drift(argv[2], argc >= 4 ? atoi(argv[3]) : 3);
    fprintf(stderr, "usage: bench_agent tree|apply DIR [N SIZE] | drift ROOT [WARM_RUNS]\n");
    return 2;
}
