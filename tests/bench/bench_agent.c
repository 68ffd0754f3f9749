/*
 * bench_agent.c — the agent's apply and drift check on the configs a user
 * can make (tests/bench/gen_configs.py --agent typical|largest, rendered by
 * the product's own renderer). Run by tests/bench/bench_agent.sh:
 *   bench_agent spec DIR OUT [REPEAT]  render the config directory DIR as
 *                                    `mcgit render` does and write worker's
 *                                    spec to OUT; prints its size, its
 *                                    files' decoded bytes, and the median
 *                                    time of REPEAT mcg_render_name() calls
 *                                    (the canonical spec writer) on it
 *   bench_agent apply ROOT SPEC      apply the spec in file SPEC with
 *                                    mcg_agent_apply(); prints seconds
 *                                    (wall and CPU), the parse alone, and
 *                                    the JSON read alone (mcg_json_parse
 *                                    and jansson's json_loadb)
 *   bench_agent drift ROOT [WARM]    drift check of the current config:
 *                                    cold (load + parse + compare) and warm
 *                                    (the parsed config kept, as the agent's
 *                                    loop does); prints seconds
 */
#include "agent/agent.h"
#include "fsio/fsio.h"
#include "gitops/gitops.h"
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of n times. */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

static int cmd_spec(const char *dir, const char *out, int repeat)
{
    mcg_diags diags = {0};
    mcg_err e = {0};
    mcg_model *m = NULL;
    mcg_render *r = NULL;
    if (mcg_source_load_dir(&m, dir, &diags, &e) != 0 || mcg_render_model(&r, m, &diags) != 0) {
        fprintf(stderr, "bench_agent: %s\n", diags.count ? diags.msgs[0] : e.msg);
        return 1;
    }
    const mcg_rendered_pool *rp = mcg_render_pool(r, "worker");
    FILE *f = fopen(out, "wb");
    if (!rp || !f || fwrite(rp->spec, 1, rp->spec_len, f) != rp->spec_len || fclose(f) != 0) {
        perror(out);
        return 1;
    }
    size_t decoded = 0, files = 0;
    for (size_t i = 0; i < rp->merged.nstorage; i++)
        if (rp->merged.storage[i].kind == MCG_NODE_FILE) {
            files++;
            decoded += rp->merged.storage[i].data_len;
        }
    double *t = mcg_calloc((size_t)repeat, sizeof(*t));
    for (int i = 0; i < repeat; i++) {
        char *spec = NULL, *name = NULL, hash[MCG_HASH_HEX + 1];
        size_t len = 0;
        double t0 = now();
        if (mcg_render_name(&rp->merged, "worker", &spec, &len, hash, &name, &e) != 0) {
            fprintf(stderr, "bench_agent: %s\n", e.msg);
            return 1;
        }
        t[i] = now() - t0;
        if (len != rp->spec_len || memcmp(spec, rp->spec, len) != 0) {
            fprintf(stderr, "bench_agent: mcg_render_name is not the rendered spec\n");
            return 1;
        }
        free(spec);
        free(name);
    }
    printf("spec_bytes %zu\nfiles %zu\nunits %zu\ndecoded_bytes %zu\nname %s\n", rp->spec_len, files,
           rp->merged.nunits, decoded, rp->name);
    if (repeat)
        printf("render_name_seconds %.6f\n", median(t, repeat));
    free(t);
    mcg_render_free(r);
    mcg_model_free(m);
    mcg_diags_free(&diags);
    return 0;
}

/* The JSON read of the spec alone: this reader's and jansson's, median of 7. */
static void json_reads(const char *spec, size_t len)
{
    double a[7], b[7];
    for (int i = 0; i < 7; i++) {
        json_t *j = NULL;
        json_error_t je;
        mcg_err e = {0};
        double t0 = now();
        mcg_json_parse(&j, "spec", spec, len, &e);
        double t1 = now();
        json_decref(j);
        double t2 = now();
        j = json_loadb(spec, len, JSON_REJECT_DUPLICATES, &je);
        double t3 = now();
        json_decref(j);
        a[i] = t1 - t0;
        b[i] = t3 - t2;
    }
    printf("json_reader_seconds %.6f\njson_jansson_seconds %.6f\n", median(a, 7), median(b, 7));
}

static int cmd_apply(const char *root, const char *specfile)
{
    char *spec = NULL;
    size_t len = 0;
    mcg_err e = {0};
    if (mcg_read_file(specfile, 64u << 20, &spec, &len, &e) != 0) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    unsigned char d[MCG_SHA256_LEN];
    char hex[2 * MCG_SHA256_LEN + 1];
    mcg_sha256(spec, len, d);
    mcg_hex(d, sizeof(d), hex);
    hex[MCG_HASH_HEX] = '\0';
    char *name = mcg_sprintf("rendered-worker-%s", hex);

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
    json_reads(spec, len);
    /* the apply's parse alone (model + decoders), to split the apply time */
    double p0 = now();
    mcg_ignition check;
    if (mcg_ignition_parse_json(&check, name, spec, len, &e) != 0) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    double p1 = now();
    mcg_ignition_free(&check);
    printf("parse_seconds %.6f\n", p1 - p0);
    /* the agent's peak: the spec it received (held, as an agent holds what it
     * fetched) and whatever the apply adds */
    peak_reset();
    long base_kib = peak_kib();
    double t0 = now(), c0 = cpu();
    int rc = mcg_agent_apply(&res, a, name, spec, len, &e);
    double t1 = now(), c1 = cpu();
    long apply_kib = peak_kib();
    if (rc || res.state != MCG_AGENT_DONE) {
        fprintf(stderr, "apply: %s\n", rc ? e.msg : res.reason);
        return 1;
    }
    printf("apply_seconds %.6f\napply_cpu_seconds %.6f\nspec_bytes %zu\nwritten %zu\n", t1 - t0,
           c1 - c0, len, res.written);
    printf("apply_peak_rss_kib %ld\napply_start_rss_kib %ld\n", apply_kib, base_kib);
    mcg_agent_free(a);
    free(spec);
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
    printf("drift_cold_seconds %.6f\n", t1 - t0);
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
        printf("drift_warm_seconds %.6f\n", best);
    mcg_agent_free(a);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "spec"))
        return cmd_spec(argv[2], argv[3], argc >= 5 ? atoi(argv[4]) : 21);
    if (argc >= 4 && !strcmp(argv[1], "apply"))
        return cmd_apply(argv[2], argv[3]);
    if (argc >= 3 && !strcmp(argv[1], "drift"))
        return cmd_drift(argv[2], argc >= 4 ? atoi(argv[3]) : 3);
    fprintf(stderr, "usage: bench_agent spec DIR OUT [REPEAT] | apply ROOT SPEC | drift ROOT [WARM_RUNS]\n");
    return 2;
}
