/*
 * test_cluster_local.c — the cluster interface over the `local:DIR`
 * backend: nodes added, patched (desired/current/state/reason, cordon,
 * Ready, compare-and-swap on desiredConfig), labelled and removed; batch
 * patches; configs, pools and the policy object; the lock that keeps
 * concurrent writers from losing updates; names refused before the backend
 * sees them; a DIR that does not exist is read as an error and created by
 * nothing but a write; every wrapper called with err == NULL; an operator's
 * pause and sync requests.
 *
 * Each test gets a fresh temp directory; the cluster lives in DIR/c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testlib.h"

#include "cluster/cluster.h"
#include "fsio/fsio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    char dir[256];
    char cdir[300];
    mcg_cluster *c;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    mcg_test_tmpdir(f->dir, "cl");
    snprintf(f->cdir, sizeof(f->cdir), "%s/c", f->dir);
    char *spec = mcg_sprintf("local:%s", f->cdir);
    mcg_err e = {0};
    assert_int_equal(mcg_cluster_open(&f->c, spec, &e), 0);
    free(spec);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    mcg_cluster_free(f->c);
    mcg_test_rm_rf(f->dir);
    free(f);
    return 0;
}

static void add(fx *f, const char *name, const char *labels, int64_t when)
{
    mcg_labels l = {0};
    mcg_err e = {0};
    if (labels)
        assert_int_equal(mcg_labels_parse_arg(&l, labels, &e), 0);
    if (mcg_cluster_add_node(f->c, name, &l, when, &e) != 0)
        fail_msg("add %s: %s", name, e.msg);
    mcg_labels_free(&l);
}

static mcg_node get(fx *f, const char *name)
{
    mcg_node n;
    mcg_err e = {0};
    if (mcg_cluster_get_node(f->c, name, &n, &e) != 0)
        fail_msg("get %s: %s", name, e.msg);
    return n;
}

static bool exists(const char *dir, const char *rel)
{
    char *p = mcg_sprintf("%s/%s", dir, rel);
    struct stat st;
    bool ok = stat(p, &st) == 0;
    free(p);
    return ok;
}

/* A node is added Ready, with its labels, creation time and root. */
static void test_add_and_get(void **state)
{
    fx *f = *state;
    add(f, "n1", "node-role.kubernetes.io/worker=,zone=a", 1000);
    mcg_node n = get(f, "n1");
    assert_string_equal(n.name, "n1");
    assert_true(n.ready);
    assert_false(n.unschedulable);
    assert_int_equal(n.created, 1000);
    assert_int_equal(n.labels.n, 2);
    assert_string_equal(mcg_labels_get(&n.labels, "zone"), "a");
    assert_null(n.desired);
    mcg_node_clear(&n);
    assert_true(exists(f->cdir, "roots/n1"));
    char *root = mcg_cluster_node_root(f->c, "n1");
    assert_non_null(root);
    assert_non_null(strstr(root, "/roots/n1"));
    free(root);

    mcg_err e = {0};
    mcg_labels none = {0};
    assert_int_equal(mcg_cluster_add_node(f->c, "n1", &none, 5, &e), MCG_ECONFLICT);
    assert_non_null(strstr(e.msg, "already exists"));
    assert_int_equal(mcg_cluster_get_node(f->c, "n2", &n, &e), MCG_ENOTFOUND);
    assert_string_equal(e.msg, "node 'n2' not found");
    assert_null(n.name);
}

/* desired/current/state/reason, cordon and Ready are written field by field;
 * "" clears; NULL leaves a field alone. */
static void test_patch_fields(void **state)
{
    fx *f = *state;
    mcg_err e = {0};
    add(f, "n1", NULL, 1);
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.desired = "rendered-worker-1";
    p.state = "Working";
    p.reason = "updating";
    p.unschedulable = 1;
    p.ready = 0;
    assert_int_equal(mcg_cluster_patch_node(f->c, "n1", &p, &e), 0);
    mcg_node n = get(f, "n1");
    assert_string_equal(n.desired, "rendered-worker-1");
    assert_string_equal(n.state, "Working");
    assert_string_equal(n.reason, "updating");
    assert_null(n.current);
    assert_true(n.unschedulable);
    assert_false(n.ready);
    mcg_node_clear(&n);

    mcg_node_patch q = MCG_NODE_PATCH_INIT;
    q.current = "rendered-worker-1";
    q.state = "Done";
    q.reason = "";
    q.unschedulable = 0;
    q.ready = 1;
    assert_int_equal(mcg_cluster_patch_node(f->c, "n1", &q, &e), 0);
    n = get(f, "n1");
    assert_string_equal(n.desired, "rendered-worker-1"); /* left alone */
    assert_string_equal(n.current, "rendered-worker-1");
    assert_string_equal(n.state, "Done");
    assert_null(n.reason); /* cleared */
    assert_false(n.unschedulable);
    assert_true(n.ready);
    mcg_node_clear(&n);

    /* compare-and-swap on desiredConfig */
    mcg_node_patch cas = MCG_NODE_PATCH_INIT;
    cas.desired = "rendered-worker-2";
    cas.if_desired = "rendered-worker-0";
    assert_int_equal(mcg_cluster_patch_node(f->c, "n1", &cas, &e), MCG_ECONFLICT);
    assert_non_null(strstr(e.msg, "desiredConfig changed"));
    cas.if_desired = "rendered-worker-1";
    assert_int_equal(mcg_cluster_patch_node(f->c, "n1", &cas, &e), 0);
    n = get(f, "n1");
    assert_string_equal(n.desired, "rendered-worker-2");
    mcg_node_clear(&n);

    assert_int_equal(mcg_cluster_patch_node(f->c, "gone", &q, &e), MCG_ENOTFOUND);
}

/* A batch gives each node its own result, bad names included. */
static void test_patch_batch(void **state)
{
    fx *f = *state;
    mcg_err e = {0};
    add(f, "a", NULL, 1);
    add(f, "b", NULL, 2);
    mcg_node_patch ps[4];
    const char *names[4] = {"a", "b", "missing", "Bad_Name"};
    for (int i = 0; i < 4; i++) {
        mcg_node_patch p = MCG_NODE_PATCH_INIT;
        p.desired = "rendered-w-1";
        p.if_desired = "";
        ps[i] = p;
    }
    ps[1].if_desired = "rendered-w-0"; /* b's desired is unset: conflict */
    int rcs[4] = {9, 9, 9, 9};
    assert_int_equal(mcg_cluster_patch_nodes(f->c, names, ps, 4, rcs, &e), 0);
    assert_int_equal(rcs[0], 0);
    assert_int_equal(rcs[1], MCG_ECONFLICT);
    assert_int_equal(rcs[2], MCG_ENOTFOUND);
    assert_int_equal(rcs[3], MCG_EINVAL);
    mcg_node n = get(f, "a");
    assert_string_equal(n.desired, "rendered-w-1");
    mcg_node_clear(&n);
    n = get(f, "b");
    assert_null(n.desired);
    mcg_node_clear(&n);
}

/* Listing is sorted; labels edit atomically; removal is final. */
static void test_list_label_remove(void **state)
{
    fx *f = *state;
    mcg_err e = {0};
    add(f, "n2", "a=1", 2);
    add(f, "n1", "a=1,b=2", 1);
    assert_int_equal(mcg_cluster_label_node(f->c, "n1", "b-,c=3,a=9", &e), 0);
    mcg_node *nodes = NULL;
    size_t n = 0;
    assert_int_equal(mcg_cluster_list_nodes(f->c, &nodes, &n, &e), 0);
    assert_int_equal(n, 2);
    assert_string_equal(nodes[0].name, "n1");
    assert_string_equal(nodes[1].name, "n2");
    assert_int_equal(nodes[0].labels.n, 2);
    assert_string_equal(mcg_labels_get(&nodes[0].labels, "a"), "9");
    assert_string_equal(mcg_labels_get(&nodes[0].labels, "c"), "3");
    assert_null(mcg_labels_get(&nodes[0].labels, "b"));
    mcg_nodes_free(nodes, n);
    assert_int_equal(mcg_cluster_label_node(f->c, "n1", "bad key=x", &e), MCG_EUSAGE);

    assert_int_equal(mcg_cluster_remove_node(f->c, "n2", &e), 0);
    assert_int_equal(mcg_cluster_remove_node(f->c, "n2", &e), MCG_ENOTFOUND);
    assert_int_equal(mcg_cluster_list_nodes(f->c, &nodes, &n, &e), 0);
    assert_int_equal(n, 1);
    mcg_nodes_free(nodes, n);
    /* a stray file that is no node name is not listed */
    char *p = mcg_sprintf("%s/nodes/Not_A_Node.json", f->cdir);
    assert_int_equal(mcg_write_file_atomic(p, "{}", 2, 0644, &e), 0);
    free(p);
    assert_int_equal(mcg_cluster_list_nodes(f->c, &nodes, &n, &e), 0);
    assert_int_equal(n, 1);
    mcg_nodes_free(nodes, n);
}

/* Configs, pools and the policy: written whole, listed sorted. */
static void test_objects(void **state)
{
    fx *f = *state;
    mcg_err e = {0};
    const char *spec = "{\"config\":{}}\n";
    assert_int_equal(mcg_cluster_put_config(f->c, "rendered-w-2", spec, strlen(spec), &e), 0);
    assert_int_equal(mcg_cluster_put_config(f->c, "rendered-w-1", spec, strlen(spec), &e), 0);
    char *got = NULL;
    size_t len = 0;
    assert_int_equal(mcg_cluster_get_config(f->c, "rendered-w-1", &got, &len, &e), 0);
    assert_int_equal(len, strlen(spec));
    assert_memory_equal(got, spec, len);
    free(got);
    assert_int_equal(mcg_cluster_get_config(f->c, "rendered-w-9", &got, &len, &e), MCG_ENOTFOUND);
    assert_null(got);
    mcg_strv names = {0};
    assert_int_equal(mcg_cluster_list_configs(f->c, &names, &e), 0);
    assert_int_equal(names.n, 2);
    assert_string_equal(names.v[0], "rendered-w-1");
    mcg_strv_free(&names);
    assert_int_equal(mcg_cluster_delete_config(f->c, "rendered-w-1", &e), 0);
    assert_int_equal(mcg_cluster_delete_config(f->c, "rendered-w-1", &e), 0); /* gone: fine */

    json_t *pool =
        json_pack("{s:{s:s},s:{s:b}}", "metadata", "name", "worker", "spec", "paused", 0);
    assert_int_equal(mcg_cluster_put_pool(f->c, "worker", pool, &e), 0);
    assert_int_equal(mcg_cluster_put_pool(f->c, "infra", pool, &e), 0);
    json_decref(pool);
    json_t *items = NULL;
    assert_int_equal(mcg_cluster_list_pools(f->c, &items, &e), 0);
    assert_int_equal(json_array_size(items), 2);
    json_decref(items);
    assert_int_equal(mcg_cluster_delete_pool(f->c, "infra", &e), 0);

    json_t *pol = NULL;
    assert_int_equal(mcg_cluster_get_policy_json(f->c, &pol, &e), MCG_ENOTFOUND);
    assert_null(pol);
    mcg_disruption_policy dp;
    assert_int_equal(mcg_cluster_get_policy(f->c, &dp, &e), 0); /* none: defaults */
    json_t *want = json_pack("{s:{}}", "nodeDisruptionPolicy");
    assert_int_equal(mcg_cluster_put_policy(f->c, want, &e), 0);
    assert_int_equal(mcg_cluster_get_policy_json(f->c, &pol, &e), 0);
    assert_true(json_equal(pol, want));
    json_decref(pol);
    json_decref(want);
}

/* Names are checked before the backend sees them: nothing is written. */
static void test_bad_names(void **state)
{
    fx *f = *state;
    static const char *const bad_nodes[] = {"", "UPPER", "a_b", "-a", "../x", "a/b", NULL};
    mcg_err e = {0};
    mcg_labels none = {0};
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.state = "Done";
    for (const char *const *b = bad_nodes; *b; b++) {
        mcg_node n;
        assert_int_equal(mcg_cluster_add_node(f->c, *b, &none, 1, &e), MCG_EINVAL);
        assert_non_null(strstr(e.msg, "invalid node name"));
        assert_int_equal(mcg_cluster_get_node(f->c, *b, &n, &e), MCG_EINVAL);
        assert_int_equal(mcg_cluster_patch_node(f->c, *b, &p, &e), MCG_EINVAL);
        assert_int_equal(mcg_cluster_label_node(f->c, *b, "a=1", &e), MCG_EINVAL);
        assert_int_equal(mcg_cluster_remove_node(f->c, *b, &e), MCG_EINVAL);
        assert_int_equal(mcg_cluster_drain(f->c, *b, &e), MCG_EINVAL);
        assert_int_equal(mcg_cluster_wait_change(f->c, *b, 10, &e), MCG_EINVAL);
        assert_null(mcg_cluster_node_root(f->c, *b));
    }
    assert_int_equal(mcg_cluster_put_config(f->c, "worker-1", "{}", 2, &e), MCG_EINVAL);
    assert_string_equal(e.msg, "invalid rendered config name 'worker-1'");
    assert_int_equal(mcg_cluster_put_config(f->c, "rendered-../x", "{}", 2, &e), MCG_EINVAL);
    assert_int_equal(mcg_cluster_delete_config(f->c, "rendered-A", &e), MCG_EINVAL);
    json_t *o = json_object();
    assert_int_equal(mcg_cluster_put_pool(f->c, "a.b", o, &e), MCG_EINVAL);
    assert_string_equal(e.msg, "invalid pool name 'a.b'");
    assert_int_equal(mcg_cluster_delete_pool(f->c, "../p", &e), MCG_EINVAL);
    json_decref(o);
    assert_false(exists(f->cdir, "")); /* nothing created */
}

/* Reading a DIR that does not exist fails and creates nothing. */
static void test_missing_dir(void **state)
{
    fx *f = *state;
    mcg_err e = {0};
    mcg_node *nodes = NULL;
    size_t n = 7;
    assert_int_equal(mcg_cluster_list_nodes(f->c, &nodes, &n, &e), MCG_ENOTFOUND);
    assert_non_null(strstr(e.msg, "no such directory"));
    assert_null(nodes);
    assert_int_equal(n, 0);
    mcg_strv names = {0};
    assert_int_equal(mcg_cluster_list_configs(f->c, &names, &e), MCG_ENOTFOUND);
    assert_false(exists(f->cdir, ""));
}

/* Every wrapper takes err == NULL: codes come back, nothing crashes, even on
 * the paths that set an error (missing DIR, bad names, conflicts). */
/* Events: checked by the wrapper, recorded nowhere by the local backend. */
static void test_events(void **state)
{
    fx *f = *state;
    mcg_err e = {0};
    mcg_event ok = {"mcgit-agent", false, "n1", false, "NodeDone", "m"};
    assert_int_equal(mcg_cluster_event(f->c, &ok, &e), 0);
    mcg_event bad_node = {"mcgit-agent", false, "Bad_Name", false, "NodeDone", "m"};
    assert_int_equal(mcg_cluster_event(f->c, &bad_node, &e), MCG_EINVAL);
    assert_contains(e.msg, "invalid node name 'Bad_Name'");
    mcg_event bad_pool = {"mcgit-controller", true, "a.b", false, "Updated", "m"};
    assert_int_equal(mcg_cluster_event(f->c, &bad_pool, NULL), MCG_EINVAL);
    mcg_event no_reason = {"mcgit-agent", false, "n1", false, "", "m"};
    assert_int_equal(mcg_cluster_event(f->c, &no_reason, &e), MCG_EINVAL);
    assert_contains(e.msg, "reason, message and component needed");
    mcg_event no_msg = {"mcgit-agent", false, "n1", false, "NodeDone", NULL};
    assert_int_equal(mcg_cluster_event(f->c, &no_msg, NULL), MCG_EINVAL);
}

static void test_null_err(void **state)
{
    fx *f = *state;
    mcg_node *nodes = NULL;
    size_t n = 0;
    mcg_node one;
    mcg_strv names = {0};
    json_t *items = NULL;
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.state = "Done";
    /* before the directory exists */
    assert_int_equal(mcg_cluster_list_nodes(f->c, &nodes, &n, NULL), MCG_ENOTFOUND);
    assert_int_equal(mcg_cluster_get_node(f->c, "n1", &one, NULL), MCG_ENOTFOUND);
    assert_int_equal(mcg_cluster_patch_node(f->c, "n1", &p, NULL), MCG_ENOTFOUND);
    assert_int_equal(mcg_cluster_remove_node(f->c, "n1", NULL), MCG_ENOTFOUND);
    assert_int_equal(mcg_cluster_label_node(f->c, "n1", "a=1", NULL), MCG_ENOTFOUND);
    assert_int_equal(mcg_cluster_list_configs(f->c, &names, NULL), MCG_ENOTFOUND);
    assert_int_equal(mcg_cluster_list_pools(f->c, &items, NULL), MCG_ENOTFOUND);
    assert_null(items);
    const char *nm[1] = {"n1"};
    int rcs[1];
    assert_int_equal(mcg_cluster_patch_nodes(f->c, nm, &p, 1, rcs, NULL), MCG_ENOTFOUND);
    /* bad names */
    assert_int_equal(mcg_cluster_get_node(f->c, "Bad", &one, NULL), MCG_EINVAL);
    assert_int_equal(mcg_cluster_add_node(f->c, "Bad", NULL, 1, NULL), MCG_EINVAL);
    assert_int_equal(mcg_cluster_put_config(f->c, "x", "{}", 2, NULL), MCG_EINVAL);
    assert_int_equal(mcg_cluster_delete_config(f->c, "x", NULL), MCG_EINVAL);
    assert_int_equal(mcg_cluster_delete_pool(f->c, "a.b", NULL), MCG_EINVAL);
    /* writes and their refusals */
    assert_int_equal(mcg_cluster_add_node(f->c, "n1", NULL, 1, NULL), 0);
    assert_int_equal(mcg_cluster_add_node(f->c, "n1", NULL, 1, NULL), MCG_ECONFLICT);
    mcg_node_patch cas = MCG_NODE_PATCH_INIT;
    cas.desired = "rendered-w-1";
    cas.if_desired = "rendered-w-0";
    assert_int_equal(mcg_cluster_patch_node(f->c, "n1", &cas, NULL), MCG_ECONFLICT);
    assert_int_equal(mcg_cluster_label_node(f->c, "n1", "bad key=1", NULL), MCG_EUSAGE);
    assert_int_equal(
        mcg_cluster_get_config(f->c, "rendered-w-1", &(char *){NULL}, &(size_t){0}, NULL),
        MCG_ENOTFOUND);
    assert_int_equal(mcg_cluster_put_config(f->c, "rendered-w-1", "{}", 2, NULL), 0);
    assert_int_equal(mcg_cluster_list_configs(f->c, &names, NULL), 0);
    assert_int_equal(names.n, 1);
    mcg_strv_free(&names);
    assert_int_equal(mcg_cluster_delete_config(f->c, "rendered-w-1", NULL), 0);
    assert_int_equal(mcg_cluster_delete_pool(f->c, "worker", NULL), 0);
    json_t *pol = NULL;
    assert_int_equal(mcg_cluster_get_policy_json(f->c, &pol, NULL), MCG_ENOTFOUND);
    mcg_disruption_policy dp;
    assert_int_equal(mcg_cluster_get_policy(f->c, &dp, NULL), 0);
    bool leader = false;
    assert_int_equal(mcg_cluster_lead(f->c, "me", &leader, NULL), 0);
    assert_true(leader);
    assert_int_equal(mcg_cluster_drain(f->c, "n1", NULL), 0);
    assert_int_equal(mcg_cluster_wait_change(f->c, "n1", 1, NULL), 0);
    assert_int_equal(mcg_cluster_list_nodes(f->c, &nodes, &n, NULL), 0);
    assert_int_equal(n, 1);
    mcg_nodes_free(nodes, n);
    /* a corrupt node object */
    char *path = mcg_sprintf("%s/nodes/n1.json", f->cdir);
    mcg_err e = {0};
    assert_int_equal(mcg_write_file_atomic(path, "{junk", 5, 0644, &e), 0);
    free(path);
    assert_int_equal(mcg_cluster_get_node(f->c, "n1", &one, NULL), MCG_EINVAL);
    assert_int_equal(mcg_cluster_patch_node(f->c, "n1", &p, NULL), MCG_EINVAL);
    assert_int_equal(mcg_cluster_list_nodes(f->c, &nodes, &n, NULL), MCG_EINVAL);
}

/* Concurrent label edits of different keys from several processes under
 * the lock: none is lost. */
static void test_lock_no_lost_update(void **state)
{
    fx *f = *state;
    add(f, "n1", NULL, 1);
    enum { PROCS = 4, EDITS = 25 };
    pid_t pids[PROCS];
    for (int i = 0; i < PROCS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            mcg_cluster *c = NULL;
            char *spec = mcg_sprintf("local:%s", f->cdir);
            int bad = mcg_cluster_open(&c, spec, NULL) != 0;
            for (int k = 0; k < EDITS && !bad; k++) {
                char edit[64];
                snprintf(edit, sizeof(edit), "p%d-k%d=v", i, k);
                bad = mcg_cluster_label_node(c, "n1", edit, NULL) != 0;
            }
            mcg_cluster_free(c);
            free(spec);
            _exit(bad);
        }
    }
    for (int i = 0; i < PROCS; i++) {
        int st = 0;
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    mcg_node n = get(f, "n1");
    assert_int_equal(n.labels.n, PROCS * EDITS);
    mcg_node_clear(&n);
}

/* The spec is kept as given, for messages. */
/* metadata.generation and status.observedGeneration of the one pool object. */
static void pool_gens(fx *f, json_int_t *gen, json_int_t *observed)
{
    json_t *items = NULL;
    assert_int_equal(mcg_cluster_list_pools(f->c, &items, NULL), 0);
    json_t *o = json_array_get(items, 0);
    *gen = json_integer_value(json_object_get(json_object_get(o, "metadata"), "generation"));
    *observed =
        json_integer_value(json_object_get(json_object_get(o, "status"), "observedGeneration"));
    json_decref(items);
}

/*
 * An operator's requests: a pause is spec.paused, which the controller's
 * pool writes keep (git's pause is status.pausedInGit); each change of spec
 * moves metadata.generation and a controller write sets observedGeneration
 * to it; a pause of a pool the cluster lacks is refused, writing nothing;
 * the sync counter counts every request (also from other processes), an
 * answer never moves backwards, and the controller's wait wakes on another
 * process's request but not on its own answer.
 */
static void test_requests(void **state)
{
    fx *f = *state;
    mcg_err e = {0};
    bool changed = true, git = false;
    json_int_t gen = 0, observed = 0;
    add(f, "n1", NULL, 1);
    assert_int_equal(mcg_cluster_pause_pool(f->c, "worker", true, &changed, &git, &e),
                     MCG_ENOTFOUND);
    assert_false(changed);
    assert_non_null(strstr(e.msg, "has no pool 'worker'"));
    assert_false(exists(f->cdir, "pools/worker.json"));
    assert_int_equal(mcg_cluster_pause_pool(f->c, "Bad_Name", true, &changed, NULL, NULL),
                     MCG_EINVAL);

    /* the controller's object: spec.paused false, git's pause in the status */
    json_t *pool = json_pack("{s:{s:s},s:{s:b,s:i},s:{s:b,s:i}}", "metadata", "name", "worker",
                             "spec", "paused", 0, "maxUnavailable", 1, "status", "pausedInGit", 1,
                             "observedGeneration", 1);
    assert_int_equal(mcg_cluster_put_pool(f->c, "worker", pool, &e), 0);
    pool_gens(f, &gen, &observed);
    assert_int_equal(gen, 1);
    assert_int_equal(observed, 1);
    assert_int_equal(mcg_cluster_pause_pool(f->c, "worker", true, &changed, &git, &e), 0);
    assert_true(changed);
    assert_true(git); /* status.pausedInGit as the controller wrote it */
    pool_gens(f, &gen, &observed);
    assert_int_equal(gen, 2); /* spec changed: a new generation, not yet observed */
    assert_int_equal(observed, 1);
    assert_int_equal(mcg_cluster_pause_pool(f->c, "worker", true, &changed, &git, &e), 0);
    assert_false(changed);
    /* the controller writes the object again, spec.paused false: the pause stays */
    assert_int_equal(mcg_cluster_put_pool(f->c, "worker", pool, &e), 0);
    json_t *items = NULL;
    assert_int_equal(mcg_cluster_list_pools(f->c, &items, &e), 0);
    assert_true(mcg_pool_object_operator_paused(json_array_get(items, 0)));
    assert_true(mcg_pool_object_git_paused(json_array_get(items, 0)));
    json_decref(items);
    pool_gens(f, &gen, &observed);
    assert_int_equal(gen, 2);
    assert_int_equal(observed, 2); /* that write was a pass over generation 2 */
    /* a spec change of the controller's own moves the generation too */
    json_object_set_new(json_object_get(pool, "spec"), "maxUnavailable", json_integer(2));
    assert_int_equal(mcg_cluster_put_pool(f->c, "worker", pool, &e), 0);
    pool_gens(f, &gen, &observed);
    assert_int_equal(gen, 3);
    assert_int_equal(observed, 3);
    assert_int_equal(mcg_cluster_pause_pool(f->c, "worker", false, &changed, NULL, &e), 0);
    assert_true(changed);
    assert_int_equal(mcg_cluster_list_pools(f->c, &items, &e), 0);
    assert_false(mcg_pool_object_operator_paused(json_array_get(items, 0)));
    assert_null(
        json_object_get(json_object_get(json_array_get(items, 0), "metadata"), "annotations"));
    json_decref(items);
    assert_int_equal(mcg_cluster_pause_pool(f->c, "worker", false, &changed, NULL, &e), 0);
    assert_false(changed);
    json_decref(pool);

    mcg_sync_state st;
    assert_int_equal(mcg_cluster_get_sync(f->c, &st, &e), 0);
    assert_int_equal(st.requested, 0);
    assert_int_equal(st.handled, 0);
    uint64_t sgen = 0;
    assert_int_equal(mcg_cluster_request_sync(f->c, &sgen, &e), 0);
    assert_int_equal(sgen, 1);
    /* requests from other processes at once: each counts */
    for (int i = 0; i < 4; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            mcg_cluster *c = NULL;
            uint64_t g;
            char *spec = mcg_sprintf("local:%s", f->cdir);
            int bad =
                mcg_cluster_open(&c, spec, NULL) != 0 || mcg_cluster_request_sync(c, &g, NULL) != 0;
            mcg_cluster_free(c);
            free(spec);
            _exit(bad);
        }
    }
    for (int i = 0; i < 4; i++) {
        int ws = 0;
        wait(&ws);
        assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    }
    assert_int_equal(mcg_cluster_get_sync(f->c, &st, &e), 0); /* seen now */
    assert_int_equal(st.requested, 5);
    assert_int_equal(mcg_cluster_answer_sync(f->c, 5, false, "pass done\nover 1 node", &e), 0);
    assert_int_equal(mcg_cluster_answer_sync(f->c, 3, true, "older", &e), 0); /* ignored */
    assert_int_equal(mcg_cluster_get_sync(f->c, &st, &e), 0);
    assert_int_equal(st.handled, 5);
    assert_false(st.failed);
    assert_string_equal(st.result, "pass done over 1 node");
    assert_true(st.handled_at[0] != '\0');
    /* our own answer does not wake the controller's wait; a request does */
    assert_int_equal(mcg_cluster_wait_change(f->c, NULL, 300, &e), 0);
    assert_int_equal(mcg_cluster_answer_sync(f->c, 5, false, "again", &e), 0);
    assert_int_equal(mcg_cluster_wait_change(f->c, NULL, 300, &e), 0);
    pid_t pid = fork();
    if (pid == 0) {
        usleep(100000);
        mcg_cluster *c = NULL;
        uint64_t g;
        char *spec = mcg_sprintf("local:%s", f->cdir);
        int bad =
            mcg_cluster_open(&c, spec, NULL) != 0 || mcg_cluster_request_sync(c, &g, NULL) != 0;
        mcg_cluster_free(c);
        free(spec);
        _exit(bad);
    }
    assert_int_equal(mcg_cluster_wait_change(f->c, NULL, 5000, &e), 1);
    int ws = 0;
    waitpid(pid, &ws, 0);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    assert_int_equal(mcg_cluster_get_sync(f->c, &st, NULL), 0);
    assert_int_equal(st.requested, 6);
}

static void test_spec(void **state)
{
    fx *f = *state;
    assert_non_null(strstr(mcg_cluster_spec(f->c), "local:"));
    mcg_cluster *c = NULL;
    assert_int_equal(mcg_cluster_open(&c, "local:", NULL), MCG_EINVAL);
    assert_null(c);
    assert_int_equal(mcg_cluster_open(&c, "nfs:x", NULL), MCG_EINVAL);
    mcg_cluster_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_add_and_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_patch_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_patch_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_label_remove, setup, teardown),
        cmocka_unit_test_setup_teardown(test_objects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_null_err, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_no_lost_update, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spec, setup, teardown),
        cmocka_unit_test_setup_teardown(test_requests, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
