/*
 * test_controller.c — controller passes against a local cluster, in
 * process: a config repo made from the template with libgit2 and signed
 * with a fresh ed25519 key (trusted through an allowed_signers file), three
 * nodes (a master and two workers) in a local:DIR cluster.
 *
 * A first pass renders, publishes the rendered configs and the policy,
 * gives the new nodes their targets and writes the pools' status; a second pass with nothing new
 * writes nothing; an unsigned commit is refused, rolls out nowhere and shows in the pools'
 * RenderDegraded condition; mcg_controller_run with once runs one pass and
 * says whether it failed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testlib.h"

#include "controller/controller.h"
#include "fsio/fsio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T0 1767225600 /* 2026-01-01T00:00:00Z */

typedef struct {
    char dir[256];
    char repo[300];
    char trust[300];
    char cluster[300];
    mcg_sshkey key;
    mcg_cluster *c;
    mcg_controller_opts o;
} fx;

static void write_text(const char *path, const char *text)
{
    mcg_err e = {0};
    if (mcg_write_file_atomic(path, text, strlen(text), 0644, &e) != 0)
        fail_msg("%s", e.msg);
}

static void commit(fx *f, const char *msg, bool sign, int64_t when)
{
    char sha[MCG_SHA_HEX + 1];
    mcg_err e = {0};
    if (mcg_gitops_commit_worktree(sha, f->repo, msg, sign ? &f->key : NULL, when, &e) != 0)
        fail_msg("commit: %s", e.msg);
}

static void add_node(fx *f, const char *name, const char *labels, int64_t when)
{
    mcg_labels l = {0};
    mcg_err e = {0};
    assert_int_equal(mcg_labels_parse_arg(&l, labels, &e), 0);
    if (mcg_cluster_add_node(f->c, name, &l, when, &e) != 0)
        fail_msg("add %s: %s", name, e.msg);
    mcg_labels_free(&l);
}

/* Make the worker MC's motd say text (a change to commit). */
static void change_motd(fx *f, const char *text)
{
    char *mc = mcg_sprintf("%s/machineconfigs/50-worker-motd.yaml", f->repo);
    char *data = NULL;
    size_t len = 0;
    mcg_err e = {0};
    assert_int_equal(mcg_read_file(mc, 1 << 20, &data, &len, &e), 0);
    char *at = strstr(data, "data:,");
    assert_non_null(at);
    char *out = mcg_sprintf("%.*sdata:,%s\n", (int)(at - data), data, text);
    write_text(mc, out);
    free(out);
    free(data);
    free(mc);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    mcg_test_tmpdir(f->dir, "ctl");
    snprintf(f->repo, sizeof(f->repo), "%s/repo", f->dir);
    snprintf(f->trust, sizeof(f->trust), "%s/allowed_signers", f->dir);
    snprintf(f->cluster, sizeof(f->cluster), "local:%s/cluster", f->dir);
    mcg_err e = {0};
    if (mcg_gitops_init(f->repo, &e) != 0)
        fail_msg("init: %s", e.msg);
    mcg_sshkey_generate(&f->key);
    char *pub = mcg_sshkey_public_line(&f->key, "test");
    char *line = mcg_sprintf("operator@test %s\n", pub);
    write_text(f->trust, line);
    free(line);
    free(pub);
    char *mc = mcg_sprintf("%s/machineconfigs/50-worker-motd.yaml", f->repo);
    write_text(mc, "apiVersion: machineconfiguration.openshift.io/v1\n"
                   "kind: MachineConfig\n"
                   "metadata:\n"
                   "  name: 50-worker-motd\n"
                   "  labels:\n"
                   "    machineconfiguration.openshift.io/role: worker\n"
                   "spec:\n"
                   "  config:\n"
                   "    ignition:\n"
                   "      version: 3.2.0\n"
                   "    storage:\n"
                   "      files:\n"
                   "      - path: /etc/motd\n"
                   "        mode: 420\n"
                   "        contents:\n"
                   "          source: data:,hello\n");
    free(mc);
    commit(f, "first", true, T0);
    assert_int_equal(mcg_cluster_open(&f->c, f->cluster, &e), 0);
    add_node(f, "master-0", "node-role.kubernetes.io/master=", T0 - 300);
    add_node(f, "worker-0", "node-role.kubernetes.io/worker=", T0 - 200);
    add_node(f, "worker-1", "node-role.kubernetes.io/worker=", T0 - 100);
    f->o.repo = f->repo;
    f->o.trust = f->trust;
    f->o.keep_configs = MCG_KEEP_CONFIGS_DEFAULT;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    mcg_cluster_free(f->c);
    mcg_sshkey_wipe(&f->key);
    mcg_test_rm_rf(f->dir);
    free(f);
    return 0;
}

static mcg_pass_result pass(fx *f, int64_t now)
{
    mcg_pass_result res;
    mcg_err e = {0};
    if (mcg_controller_pass(&res, &f->o, f->c, now, &e) != 0)
        fail_msg("pass: %s", e.msg);
    return res;
}

static char *desired(fx *f, const char *node)
{
    mcg_node n;
    mcg_err e = {0};
    assert_int_equal(mcg_cluster_get_node(f->c, node, &n, &e), 0);
    char *d = n.desired ? mcg_strdup(n.desired) : NULL;
    mcg_node_clear(&n);
    return d;
}

/* The status condition of a pool by type, or NULL. */
static const json_t *condition(const json_t *pools, const char *pool, const char *type)
{
    size_t i, j;
    json_t *p, *c;
    json_array_foreach(pools, i, p) {
        const char *nm = json_string_value(json_object_get(json_object_get(p, "metadata"), "name"));
        if (!nm || strcmp(nm, pool) != 0)
            continue;
        json_array_foreach(json_object_get(json_object_get(p, "status"), "conditions"), j, c) {
            const char *t = json_string_value(json_object_get(c, "type"));
            if (t && !strcmp(t, type))
                return c;
        }
    }
    return NULL;
}

/* A first pass rolls out: new nodes (no config yet) get their pool's
 * rendered config, maxUnavailable (1) at a time per pool, and it is
 * published. */
static void test_first_pass(void **state)
{
    fx *f = *state;
    mcg_pass_result res = pass(f, T0 + 10);
    assert_false(res.refused);
    assert_false(res.fetch_failed);
    assert_int_equal(res.nodes, 3);
    assert_int_equal(res.updates, 2); /* master-0 and worker-0; worker-1 waits its turn */
    assert_true(res.writes >= 3);     /* policy and two pools */
    mcg_pass_result_clear(&res);
    char *m = desired(f, "master-0"), *w0 = desired(f, "worker-0"), *w1 = desired(f, "worker-1");
    assert_non_null(m);
    assert_non_null(w0);
    assert_null(w1);
    assert_int_equal(strncmp(m, "rendered-master-", 16), 0);
    assert_int_equal(strncmp(w0, "rendered-worker-", 16), 0);
    char *spec = NULL;
    size_t len = 0;
    mcg_err e = {0};
    assert_int_equal(mcg_cluster_get_config(f->c, w0, &spec, &len, &e), 0);
    assert_non_null(memmem(spec, len, "/etc/motd", 9));
    free(spec);
    json_t *pools = NULL;
    assert_int_equal(mcg_cluster_list_pools(f->c, &pools, &e), 0);
    assert_int_equal(json_array_size(pools), 2);
    const json_t *c = condition(pools, "worker", "Updating");
    assert_non_null(c);
    assert_string_equal(json_string_value(json_object_get(c, "status")), "True");
    json_decref(pools);
    free(m);
    free(w0);
    free(w1);
}

/* With nothing new and no node change, a pass writes nothing. */
static void test_idle_pass_writes_nothing(void **state)
{
    fx *f = *state;
    mcg_pass_result res = pass(f, T0 + 10);
    mcg_pass_result_clear(&res);
    res = pass(f, T0 + 10);
    assert_int_equal(res.updates, 0);
    assert_int_equal(res.writes, 0);
    mcg_pass_result_clear(&res);
}

/* Unused configs are collected on a pass that moves no node, never while a
 * wave goes out (nothing becomes unused then; it saves a list per wave). */
static void test_collect_on_quiet_pass(void **state)
{
    fx *f = *state;
    f->o.keep_configs = 0;
    mcg_pass_result res = pass(f, T0 + 10);
    mcg_pass_result_clear(&res);
    mcg_err e = {0};
    const char *stale = "rendered-worker-00000000000000000000000000000000";
    assert_int_equal(mcg_cluster_put_config(f->c, stale, "{}\n", 3, &e), 0);
    static const char *const nodes[] = {"master-0", "worker-0", "worker-1"};
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < 3; i++) { /* their agents are done */
            char *d = desired(f, nodes[i]);
            mcg_node_patch p = MCG_NODE_PATCH_INIT;
            p.current = d;
            p.state = "Done";
            if (d)
                assert_int_equal(mcg_cluster_patch_node(f->c, nodes[i], &p, &e), 0);
            free(d);
        }
        if (round == 0) { /* worker-1's turn: its first config */
            res = pass(f, T0 + 15);
            assert_int_equal(res.updates, 1);
            mcg_pass_result_clear(&res);
        }
    }
    res = pass(f, T0 + 20); /* a quiet pass collects it */
    assert_int_equal(res.updates, 0);
    mcg_pass_result_clear(&res);
    char *spec = NULL;
    size_t len = 0;
    assert_int_equal(mcg_cluster_get_config(f->c, stale, &spec, &len, &e), MCG_ENOTFOUND);
    assert_int_equal(mcg_cluster_put_config(f->c, stale, "{}\n", 3, &e), 0); /* again */
    change_motd(f, "goodbye");
    commit(f, "second", true, T0 + 60);
    res = pass(f, T0 + 70);
    assert_true(res.updates > 0);
    mcg_pass_result_clear(&res);
    assert_int_equal(mcg_cluster_get_config(f->c, stale, &spec, &len, &e), 0);
    free(spec);
    res = pass(f, T0 + 80); /* the wave is out, its node not back yet: nothing moves */
    assert_int_equal(res.updates, 0);
    mcg_pass_result_clear(&res);
    assert_int_equal(mcg_cluster_get_config(f->c, stale, &spec, &len, &e), MCG_ENOTFOUND);
}

/* An unsigned commit is refused: nothing moves, the pools say why. */
static void test_unsigned_commit_refused(void **state)
{
    fx *f = *state;
    mcg_pass_result res = pass(f, T0 + 10);
    mcg_pass_result_clear(&res);
    char *before = desired(f, "worker-0");
    change_motd(f, "goodbye");
    commit(f, "unsigned change", false, T0 + 60);
    res = pass(f, T0 + 70);
    assert_true(res.refused);
    assert_non_null(strstr(res.refusal, "sign"));
    assert_int_equal(res.updates, 0);
    mcg_pass_result_clear(&res);
    char *after = desired(f, "worker-0");
    assert_string_equal(before, after);
    json_t *pools = NULL;
    mcg_err e = {0};
    assert_int_equal(mcg_cluster_list_pools(f->c, &pools, &e), 0);
    const json_t *c = condition(pools, "worker", "RenderDegraded");
    assert_non_null(c);
    assert_string_equal(json_string_value(json_object_get(c, "status")), "True");
    assert_string_equal(json_string_value(json_object_get(c, "reason")), "RenderFailed");
    json_decref(pools);
    free(before);
    free(after);
}

/* The daemon entry point: one pass with once, failing when refused. */
static void test_run_once(void **state)
{
    fx *f = *state;
    mcg_controller_run_opts ro = {.pass = f->o,
                                  .cluster = f->cluster,
                                  .identity = "test-identity",
                                  .interval = 1,
                                  .once = true};
    bool failed = true;
    mcg_err e = {0};
    assert_int_equal(mcg_controller_run(&ro, &failed, &e), 0);
    assert_false(failed);
    char *w0 = desired(f, "worker-0");
    assert_non_null(w0);
    free(w0);
    change_motd(f, "unsigned");
    commit(f, "unsigned", false, T0 + 60);
    assert_int_equal(mcg_controller_run(&ro, &failed, &e), 0);
    assert_true(failed);
    ro.cluster = "nowhere:x";
    assert_int_equal(mcg_controller_run(&ro, &failed, &e), MCG_EINVAL);
    assert_non_null(strstr(e.msg, "expected local:DIR"));
    char id[256];
    setenv("MCGIT_IDENTITY", "replica-a", 1);
    mcg_controller_default_identity(id, sizeof(id));
    assert_string_equal(id, "replica-a");
    unsetenv("MCGIT_IDENTITY");
    mcg_controller_default_identity(id, sizeof(id));
    char suffix[32];
    snprintf(suffix, sizeof(suffix), "_%ld", (long)getpid());
    assert_non_null(strstr(id, suffix));
}

/* Fetch errors name URLs without their secrets; an ssh user name is none. */
static void test_redact_urls(void **state)
{
    (void)state;
    char out[256];
    mcg_controller_redact_urls(out, sizeof(out), "https://user:tok@git.example/cfg.git: 401");
    assert_string_equal(out, "https://***@git.example/cfg.git: 401");
    mcg_controller_redact_urls(out, sizeof(out), "https://tok@git.example/cfg.git");
    assert_string_equal(out, "https://***@git.example/cfg.git");
    mcg_controller_redact_urls(out, sizeof(out),
                               "ssh://git@git.example:2222/ops/cfg.git: host key refused");
    assert_string_equal(out, "ssh://git@git.example:2222/ops/cfg.git: host key refused");
    mcg_controller_redact_urls(out, sizeof(out), "git+ssh://deploy@h/x and ssh://u:pw@h/y");
    assert_string_equal(out, "git+ssh://deploy@h/x and ssh://***@h/y");
    mcg_controller_redact_urls(out, sizeof(out), "ssh://a@b@h/x");
    assert_string_equal(out, "ssh://***@h/x");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_first_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_pass_writes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsigned_commit_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collect_on_quiet_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_once, setup, teardown),
        cmocka_unit_test(test_redact_urls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
