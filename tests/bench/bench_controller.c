/*
 * bench_controller.c — worlds for the controller benchmark
 * (tests/bench/bench_controller.sh).
 *
 *   bench_controller setup DIR N MAXUNAVAILABLE
 *       DIR/repo: a config repo with 10 pools (master, worker, custom1..8),
 *       each with one MachineConfig of its own, in one signed commit (an
 *       in-process ed25519 key, DIR/key; DIR/trust is its allowed_signers),
 *       rendered onto the rendered branch. DIR/cluster: a local cluster of N
 *       nodes spread evenly over the pools, 3 zones, distinct creation
 *       times, every node Done at its pool's rendered config — a converged
 *       cluster, so the next controller pass has nothing to do. Node objects
 *       are written directly (no fsync): this is set-up, not the measurement.
 *   bench_controller change DIR
 *       one more signed commit changing the MachineConfigs of master and
 *       worker, so every pool (custom pools inherit worker's) gets a new
 *       target: the next controller pass starts a rollout in all 10 pools.
 *   bench_controller plan N
 *       the pure planner alone (mcg_rollout_plan_make) on N synthetic nodes
 *       in 10 pools, half of each at an old config: prints seconds per plan.
 */
#include "cluster/cluster.h"
#include "fsio/fsio.h"
#include "gitops/gitops.h"
#include "rollout/rollout.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NPOOLS 10
#define T0 1767225600 /* 2026-01-01T00:00:00Z */

static const char *pool_name(size_t i, char buf[32])
{
    if (i == 0)
        return "master";
    if (i == 1)
        return "worker";
    snprintf(buf, 32, "custom%zu", i - 1);
    return buf;
}

static int put(const char *path, const char *text)
{
    mcg_err e = {0};
    if (mcg_write_file_atomic(path, text, strlen(text), 0644, &e) != 0) {
        fprintf(stderr, "bench_controller: %s\n", e.msg);
        return -1;
    }
    return 0;
}

static int put_mc(const char *repo, const char *name, const char *role, const char *path,
                  const char *contents)
{
    char *p = mcg_sprintf("%s/machineconfigs/%s.yaml", repo, name);
    char *y = mcg_sprintf("apiVersion: machineconfiguration.openshift.io/v1\n"
                          "kind: MachineConfig\n"
                          "metadata:\n"
                          "  name: %s\n"
                          "  labels:\n"
                          "    machineconfiguration.openshift.io/role: %s\n"
                          "spec:\n"
                          "  config:\n"
                          "    ignition:\n"
                          "      version: 3.4.0\n"
                          "    storage:\n"
                          "      files:\n"
                          "      - path: %s\n"
                          "        contents:\n"
                          "          source: data:,%s\n",
                          name, role, path, contents);
    int rc = put(p, y);
    free(p);
    free(y);
    return rc;
}

static int load_key(mcg_sshkey *key, const char *dir)
{
    char *p = mcg_sprintf("%s/key", dir);
    char *data = NULL;
    size_t len = 0;
    mcg_err e = {0};
    int rc = mcg_read_file(p, 1024, &data, &len, &e);
    free(p);
    if (rc || len != sizeof(key->sk)) {
        fprintf(stderr, "bench_controller: %s/key: %s\n", dir, rc ? e.msg : "bad size");
        free(data);
        return -1;
    }
    memcpy(key->sk, data, sizeof(key->sk));
    memcpy(key->pk, key->sk + 32, sizeof(key->pk));
    sodium_memzero(data, len);
    free(data);
    return 0;
}

static int commit(const char *dir, const char *msg, int64_t when)
{
    mcg_sshkey key;
    char sha[MCG_SHA_HEX + 1];
    mcg_err e = {0};
    if (load_key(&key, dir) != 0)
        return -1;
    char *repo = mcg_sprintf("%s/repo", dir);
    int rc = mcg_gitops_commit_worktree(sha, repo, msg, &key, when, &e);
    mcg_sshkey_wipe(&key);
    free(repo);
    if (rc)
        fprintf(stderr, "bench_controller: commit: %s\n", e.msg);
    return rc ? -1 : 0;
}

static int cmd_setup(const char *dir, size_t n, const char *maxu)
{
    mcg_err e = {0};
    char *repo = mcg_sprintf("%s/repo", dir), *p;
    char buf[32];
    int rc = -1;
    mcg_repo *r = NULL;
    mcg_signers *root = NULL;
    char *names[NPOOLS] = {0};

    if (mcg_mkdirs(dir, 0755, &e) != 0 || mcg_gitops_init(repo, &e) != 0) {
        fprintf(stderr, "bench_controller: %s\n", e.msg);
        goto out;
    }
    /* key and trust root */
    mcg_sshkey key;
    mcg_sshkey_generate(&key);
    p = mcg_sprintf("%s/key", dir);
    rc = mcg_write_file_atomic(p, key.sk, sizeof(key.sk), 0600, &e);
    free(p);
    char *pub = mcg_sshkey_public_line(&key, "bench");
    char *line = mcg_sprintf("bench@mcgit %s\n", pub);
    p = mcg_sprintf("%s/trust", dir);
    rc = rc ? rc : put(p, line);
    free(p);
    free(line);
    free(pub);
    mcg_sshkey_wipe(&key);
    if (rc)
        goto out;
    rc = -1;
    /* pools and their MachineConfigs */
    for (size_t i = 0; i < NPOOLS; i++) {
        const char *pn = pool_name(i, buf);
        char *mcname = mcg_sprintf("10-%s-file", pn), *path = mcg_sprintf("/etc/bench/%s", pn);
        int r1 = put_mc(repo, mcname, pn, path, "pool%20file%0A");
        free(mcname);
        free(path);
        if (r1)
            goto out;
        const char *mu = maxu;
        char *y = mcg_sprintf("apiVersion: machineconfiguration.openshift.io/v1\n"
                              "kind: MachineConfigPool\n"
                              "metadata:\n"
                              "  name: %s\n"
                              "spec:\n"
                              "  machineConfigSelector:\n"
                              "    matchLabels:\n"
                              "      machineconfiguration.openshift.io/role: %s\n"
                              "  nodeSelector:\n"
                              "    matchLabels:\n"
                              "      node-role.kubernetes.io/%s: \"\"\n"
                              "  maxUnavailable: %s\n",
                              pn, pn, pn, mu);
        p = mcg_sprintf("%s/pools/%s.yaml", repo, pn);
        r1 = put(p, y);
        free(p);
        free(y);
        if (r1)
            goto out;
    }
    if (commit(dir, "bench: 10 pools", T0) != 0)
        goto out;
    /* render, as the first controller pass would */
    char *data = NULL;
    size_t len = 0;
    p = mcg_sprintf("%s/trust", dir);
    if (mcg_read_file(p, 1 << 20, &data, &len, &e) != 0 ||
        mcg_signers_parse(&root, p, data, len, &e) != 0 || mcg_repo_open(&r, repo, &e) != 0) {
        fprintf(stderr, "bench_controller: %s\n", e.msg);
        free(p);
        free(data);
        goto out;
    }
    free(p);
    free(data);
    mcg_render_result res;
    mcg_diags diags = {0};
    if (mcg_gitops_render(&res, NULL, NULL, r, NULL, root, &diags, &e) != 0) {
        fprintf(stderr, "bench_controller: render: %s%s%s\n", e.msg, diags.count ? ": " : "",
                diags.count ? diags.msgs[0] : "");
        mcg_diags_free(&diags);
        goto out;
    }
    mcg_diags_free(&diags);
    for (size_t i = 0; i < NPOOLS; i++) {
        char *f = mcg_sprintf("%s/name", pool_name(i, buf));
        size_t nl;
        int r1 = mcg_gitops_read_rendered(&names[i], &nl, r, f, NULL, &e);
        free(f);
        if (r1) {
            fprintf(stderr, "bench_controller: %s\n", e.msg);
            goto out;
        }
        names[i][strcspn(names[i], "\n")] = '\0';
    }
    /* the nodes, converged */
    p = mcg_sprintf("%s/cluster/nodes", dir);
    int r1 = mcg_mkdirs(p, 0755, &e);
    free(p);
    if (r1) {
        fprintf(stderr, "bench_controller: %s\n", e.msg);
        goto out;
    }
    for (size_t k = 0; k < n; k++) {
        size_t pi = k % NPOOLS;
        const char *pn = pool_name(pi, buf);
        char nm[64], key1[96], zone[16];
        snprintf(nm, sizeof(nm), "%s-%05zu", pn, k / NPOOLS);
        snprintf(key1, sizeof(key1), "node-role.kubernetes.io/%s", pn);
        snprintf(zone, sizeof(zone), "zone-%c", (char)('a' + k % 3));
        mcg_node nd = {0};
        nd.name = nm;
        mcg_labels_set(&nd.labels, key1, "");
        if (pi >= 2)
            mcg_labels_set(&nd.labels, "node-role.kubernetes.io/worker", "");
        mcg_labels_set(&nd.labels, "kubernetes.io/hostname", nm);
        mcg_labels_set(&nd.labels, MCG_ZONE_LABEL, zone);
        nd.created = T0 + (int64_t)((k * 7919) % n);
        nd.ready = true;
        nd.desired = names[pi];
        nd.current = names[pi];
        nd.state = MCG_STATE_DONE;
        json_t *o = mcg_node_to_json(&nd);
        mcg_buf b = MCG_BUF_INIT;
        mcg_json_canonical(o, &b, &e);
        json_decref(o);
        mcg_labels_free(&nd.labels);
        p = mcg_sprintf("%s/cluster/nodes/%s.json", dir, nm);
        FILE *f = fopen(p, "w");
        bool ok = f && fwrite(b.ptr, 1, b.len, f) == b.len;
        ok = (f && fclose(f) == 0) && ok;
        mcg_buf_free(&b);
        if (!ok) {
            fprintf(stderr, "bench_controller: %s: write failed\n", p);
            free(p);
            goto out;
        }
        free(p);
    }
    rc = 0;
out:
    for (size_t i = 0; i < NPOOLS; i++)
        free(names[i]);
    mcg_repo_free(r);
    mcg_signers_free(root);
    free(repo);
    return rc;
}

static int cmd_change(const char *dir)
{
    char *repo = mcg_sprintf("%s/repo", dir);
    int rc = put_mc(repo, "20-master-change", "master", "/etc/bench/change", "v2%0A");
    rc = rc ? rc : put_mc(repo, "20-worker-change", "worker", "/etc/bench/change", "v2%0A");
    free(repo);
    return rc ? rc : commit(dir, "bench: change every pool", T0 + 3600);
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmd_plan(size_t n)
{
    mcg_pool pools[NPOOLS];
    mcg_pool_view views[NPOOLS];
    char buf[32];
    memset(pools, 0, sizeof(pools));
    memset(views, 0, sizeof(views));
    for (size_t i = 0; i < NPOOLS; i++) {
        pools[i].name = mcg_strdup(pool_name(i, buf));
        pools[i].node_selector.present = true;
        char *k = mcg_sprintf("node-role.kubernetes.io/%s", pools[i].name);
        mcg_labels_set(&pools[i].node_selector.match, k, "");
        free(k);
        pools[i].max_unavailable_set = true;
        pools[i].max_unavailable_is_percent = true;
        pools[i].max_unavailable = 10;
        views[i].pool = &pools[i];
        views[i].target = "rendered-new";
        views[i].configuration = "rendered-old";
    }
    mcg_labels *labels = mcg_calloc(n, sizeof(*labels));
    char **names = mcg_calloc(n, sizeof(*names));
    mcg_node_view *nv = mcg_calloc(n, sizeof(*nv));
    for (size_t k = 0; k < n; k++) {
        size_t pi = k % NPOOLS;
        names[k] = mcg_sprintf("%s-%06zu", pool_name(pi, buf), k / NPOOLS);
        char *key = mcg_sprintf("node-role.kubernetes.io/%s", pool_name(pi, buf));
        mcg_labels_set(&labels[k], key, "");
        free(key);
        if (pi >= 2)
            mcg_labels_set(&labels[k], "node-role.kubernetes.io/worker", "");
        mcg_labels_set(&labels[k], MCG_ZONE_LABEL, k % 3 == 0 ? "a" : k % 3 == 1 ? "b" : "c");
        const char *cfg = (k / NPOOLS) % 2 ? "rendered-new" : "rendered-old";
        nv[k] = (mcg_node_view){names[k], &labels[k], (int64_t)((k * 7919) % n), true, false,
                                cfg,      cfg,        MCG_STATE_DONE, NULL};
    }
    int reps = n >= 100000 ? 3 : 10;
    double best = 1e9;
    for (int r = 0; r < reps; r++) {
        mcg_rollout_plan *plan = NULL;
        mcg_err e = {0};
        double t = mono();
        if (mcg_rollout_plan_make(&plan, nv, n, views, NPOOLS, 0, &e) != 0) {
            fprintf(stderr, "bench_controller: %s\n", e.msg);
            return 1;
        }
        t = mono() - t;
        if (t < best)
            best = t;
        mcg_rollout_plan_free(plan);
    }
    printf("plan_seconds %.6f\n", best);
    for (size_t k = 0; k < n; k++) {
        free(names[k]);
        mcg_labels_free(&labels[k]);
    }
    free(names);
    free(labels);
    free(nv);
    for (size_t i = 0; i < NPOOLS; i++) {
        free(pools[i].name);
        mcg_labels_free(&pools[i].node_selector.match);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (sodium_init() < 0)
        return 1;
    if (argc == 5 && !strcmp(argv[1], "setup"))
        return cmd_setup(argv[2], (size_t)strtoul(argv[3], NULL, 10), argv[4]) ? 1 : 0;
    if (argc == 3 && !strcmp(argv[1], "change"))
        return cmd_change(argv[2]) ? 1 : 0;
    if (argc == 3 && !strcmp(argv[1], "plan"))
        return cmd_plan((size_t)strtoul(argv[2], NULL, 10));
    fprintf(stderr, "usage: bench_controller setup DIR N MAXUNAVAILABLE | change DIR | plan N\n");
    return 2;
}
