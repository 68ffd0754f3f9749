/*
 * bench_labels.c — the cost of label sets against their size.
 *
 *     bench_labels [MAX]      (MAX labels at most, default 160000)
 *
 * For N = 1250, 2500, 5000, ... 80000, 160000 (up to MAX), times (best of 3, CPU seconds):
 *
 *   node    a Node object with N labels (JSON, keys in the order the API
 *           server sends them: sorted) read with mcg_node_from_json, as
 *           every node list and watch event does
 *   node-r  the same with the keys in reverse order (an adversary's)
 *   mc      a MachineConfig YAML file with N labels through
 *           mcg_model_add_file, as every render does
 *   set     N mcg_labels_set calls in key order
 *
 * and prints "case N seconds ns-per-label". Linear cost shows as a flat
 * ns-per-label column; the quadratic one this replaced doubled it with
 * every doubling of N (80,000 labels took 9.7 s per Node object).
 */
#include "cluster/cluster_int.h"
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void key_of(char *out, size_t n, size_t i)
{
    snprintf(out, n, "example.com/label-%07zu", i);
}

/* A Node object with n labels, keys added in order or reversed. */
static json_t *node_json(size_t n, bool reverse)
{
    json_t *labels = json_object();
    for (size_t j = 0; j < n; j++) {
        char k[64];
        key_of(k, sizeof(k), reverse ? n - 1 - j : j);
        json_object_set_new(labels, k, json_string("v"));
    }
    return json_pack("{s:s,s:s,s:{s:s,s:o}}", "apiVersion", "v1", "kind", "Node", "metadata",
                     "name", "n1", "labels", labels);
}

static char *mc_yaml(size_t n)
{
    mcg_buf b = MCG_BUF_INIT;
    mcg_buf_puts(&b, "apiVersion: machineconfiguration.openshift.io/v1\n"
                     "kind: MachineConfig\nmetadata:\n  name: 50-big\n  labels:\n");
    for (size_t j = 0; j < n; j++) {
        char k[64];
        key_of(k, sizeof(k), j);
        mcg_buf_printf(&b, "    %s: v\n", k);
    }
    mcg_buf_puts(&b, "spec:\n  config:\n    ignition:\n      version: 3.2.0\n");
    size_t len;
    return mcg_buf_detach(&b, &len);
}

static double run_node(const json_t *o, size_t n)
{
    double t = cpu_s();
    mcg_node nd;
    if (mcg_node_from_json(&nd, o, NULL) != 0 || nd.labels.n != n) {
        fprintf(stderr, "bench_labels: node parse failed\n");
        exit(1);
    }
    t = cpu_s() - t;
    mcg_node_clear(&nd);
    return t;
}

static double run_mc(const char *yaml, size_t n)
{
    mcg_model *m = mcg_model_new();
    mcg_diags d = {0};
    double t = cpu_s();
    mcg_model_add_file(m, "machineconfigs/50-big.yaml", yaml, strlen(yaml), &d);
    t = cpu_s() - t;
    if (d.count || m->nmcs != 1 || m->mcs[0].labels.n != n) {
        fprintf(stderr, "bench_labels: MachineConfig parse failed\n");
        exit(1);
    }
    mcg_diags_free(&d);
    mcg_model_free(m);
    return t;
}

static double run_set(size_t n)
{
    mcg_labels l = {0};
    double t = cpu_s();
    for (size_t j = 0; j < n; j++) {
        char k[64];
        key_of(k, sizeof(k), j);
        mcg_labels_set(&l, k, "v");
    }
    t = cpu_s() - t;
    mcg_labels_free(&l);
    return t;
}

static void report(const char *what, size_t n, double best)
{
    printf("%-7s %7zu %9.4f %8.1f\n", what, n, best, best * 1e9 / (double)n);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    size_t max = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 160000;
    printf("%-7s %7s %9s %8s\n", "case", "labels", "cpu_s", "ns/label");
    for (size_t n = 1250; n <= max; n *= 2) {
        json_t *sorted = node_json(n, false), *rev = node_json(n, true);
        char *yaml = mc_yaml(n);
        double b[4] = {1e9, 1e9, 1e9, 1e9};
        for (int r = 0; r < 3; r++) {
            double t;
            if ((t = run_node(sorted, n)) < b[0])
                b[0] = t;
            if ((t = run_node(rev, n)) < b[1])
                b[1] = t;
            if ((t = run_mc(yaml, n)) < b[2])
                b[2] = t;
            if ((t = run_set(n)) < b[3])
                b[3] = t;
        }
        report("node", n, b[0]);
        report("node-r", n, b[1]);
        report("mc", n, b[2]);
        report("set", n, b[3]);
        json_decref(sorted);
        json_decref(rev);
        free(yaml);
    }
    return 0;
}
