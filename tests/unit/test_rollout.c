/*
 * test_rollout.c — the rollout planner as the pure function it is.
 *
 * Each test builds a small "world" (pools with node-role selectors, nodes
 * with labels and observed configs), plans once and checks membership,
 * desiredConfig writes and pool status. A property test then drives whole
 * rollouts with a fixed-seed PRNG, completing and failing nodes at random,
 * and checks after every plan that the planner never takes more nodes out
 * of service than maxUnavailable allows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "testlib.h"

#include "rollout/rollout.h"

/* ---------------------------------------------------------------- world */

#define MAXP 12
#define MAXN 64

typedef struct world {
    mcg_pool pools[MAXP];
    mcg_pool_view views[MAXP];
    size_t npools;
    mcg_labels labels[MAXN];
    mcg_node_view nodes[MAXN];
    size_t nnodes;
    mcg_rollout_plan *plan;
} world;

static void role_label(mcg_labels *l, const char *role)
{
    char key[128];
    snprintf(key, sizeof(key), "node-role.kubernetes.io/%s", role);
    mcg_labels_set(l, key, "");
}

/* A pool selecting nodes labelled node-role.kubernetes.io/<name>. */
static mcg_pool_view *add_pool(world *w, const char *name, const char *target)
{
    assert_true(w->npools < MAXP);
    mcg_pool *p = &w->pools[w->npools];
    memset(p, 0, sizeof(*p));
    p->name = mcg_strdup(name);
    p->node_selector.present = true;
    role_label(&p->node_selector.match, name);
    mcg_pool_view *v = &w->views[w->npools++];
    memset(v, 0, sizeof(*v));
    v->pool = p;
    v->target = target;
    return v;
}

static void set_max(mcg_pool_view *v, int64_t n, bool percent)
{
    mcg_pool *p = (mcg_pool *)v->pool;
    p->max_unavailable_set = true;
    p->max_unavailable_is_percent = percent;
    p->max_unavailable = n;
}

/* A ready node with roles "a,b" (may be ""), created at its index. */
static mcg_node_view *add_node(world *w, const char *name, const char *roles, const char *current,
                               const char *desired, const char *state)
{
    assert_true(w->nnodes < MAXN);
    size_t i = w->nnodes++;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", roles);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        role_label(&w->labels[i], tok);
    mcg_node_view *n = &w->nodes[i];
    memset(n, 0, sizeof(*n));
    n->name = name;
    n->labels = &w->labels[i];
    n->created = 1000 + (int64_t)i;
    n->ready = true;
    n->current = current;
    n->desired = desired;
    n->state = state;
    return n;
}

/* A settled node at config cfg. */
static mcg_node_view *add_done(world *w, const char *name, const char *roles, const char *cfg)
{
    return add_node(w, name, roles, cfg, cfg, MCG_STATE_DONE);
}

static void set_zone(world *w, mcg_node_view *n, const char *zone)
{
    mcg_labels_set(&w->labels[n - w->nodes], MCG_ZONE_LABEL, zone);
}

static const mcg_rollout_plan *plan(world *w)
{
    mcg_err err = {0};
    mcg_rollout_plan_free(w->plan);
    w->plan = NULL;
    int rc = mcg_rollout_plan_make(&w->plan, w->nodes, w->nnodes, w->views, w->npools, 0, &err);
    if (rc != 0)
        fail_msg("plan failed: %s", err.msg);
    assert_non_null(w->plan);
    return w->plan;
}

static const mcg_desired_update *find_update(const mcg_rollout_plan *p, const char *node)
{
    for (size_t i = 0; i < p->nupdates; i++)
        if (strcmp(p->updates[i].node, node) == 0)
            return &p->updates[i];
    return NULL;
}

static size_t count_kind(const mcg_rollout_plan *p, mcg_update_kind kind)
{
    size_t n = 0;
    for (size_t i = 0; i < p->nupdates; i++)
        n += p->updates[i].kind == kind;
    return n;
}

static void assert_update(const mcg_rollout_plan *p, const char *node, const char *desired,
                          mcg_update_kind kind)
{
    const mcg_desired_update *u = find_update(p, node);
    if (!u)
        fail_msg("no update for %s", node);
    assert_string_equal(u->desired, desired);
    assert_int_equal(u->kind, kind);
}

static int setup(void **state)
{
    *state = mcg_calloc(1, sizeof(world));
    return 0;
}

static int teardown(void **state)
{
    world *w = *state;
    mcg_rollout_plan_free(w->plan);
    for (size_t i = 0; i < w->npools; i++) {
        free(w->pools[i].name);
        mcg_labels_free(&w->pools[i].node_selector.match);
    }
    for (size_t i = 0; i < MAXN; i++)
        mcg_labels_free(&w->labels[i]);
    free(w);
    return 0;
}

/* ----------------------------------------------------------- membership */

static void test_membership(void **state)
{
    world *w = *state;
    add_pool(w, "master", "rendered-master-1");
    add_pool(w, "worker", "rendered-worker-1");
    add_pool(w, "infra", "rendered-infra-1");
    add_pool(w, "gpu", "rendered-gpu-1");
    add_done(w, "w", "worker", "x");
    add_done(w, "m", "master,worker", "x");
    add_done(w, "i", "infra,worker", "x");
    add_done(w, "i-only", "infra", "x");
    add_done(w, "ig", "infra,gpu,worker", "x");
    add_done(w, "mig", "master,infra,gpu", "x");
    add_done(w, "none", "", "x");
    add_done(w, "other", "storage", "x");
    const mcg_rollout_plan *p = plan(w);

    struct {
        const char *node;
        mcg_member_kind kind;
        const char *pool;
    } want[] = {
        {"w", MCG_MEMBER_POOL, "worker"},  {"m", MCG_MEMBER_POOL, "master"},
        {"i", MCG_MEMBER_POOL, "infra"},   {"i-only", MCG_MEMBER_POOL, "infra"},
        {"ig", MCG_MEMBER_CONFLICT, NULL}, {"mig", MCG_MEMBER_POOL, "master"},
        {"none", MCG_MEMBER_NONE, NULL},   {"other", MCG_MEMBER_NONE, NULL},
    };
    assert_int_equal(p->nmembers, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const mcg_membership *m = &p->members[i]; /* input order */
        assert_string_equal(m->node, want[i].node);
        assert_int_equal(m->kind, want[i].kind);
        if (want[i].pool)
            assert_string_equal(m->pool, want[i].pool);
        else
            assert_null(m->pool);
        assert_ptr_equal(mcg_rollout_plan_member(p, want[i].node), m);
    }
    const mcg_membership *c = mcg_rollout_plan_member(p, "ig");
    assert_string_equal(c->reason, "belongs to 2 custom pools: gpu, infra");
    assert_null(mcg_rollout_plan_member(p, "i")->reason);
    assert_null(mcg_rollout_plan_member(p, "nosuch"));
    assert_null(mcg_rollout_plan_member(p, "a"));
    assert_null(mcg_rollout_plan_member(p, "zzz"));

    /* unmanaged nodes get nothing; counts only include members */
    assert_null(find_update(p, "ig"));
    assert_null(find_update(p, "none"));
    assert_int_equal(mcg_rollout_plan_pool(p, "worker")->machine_count, 1);
    assert_int_equal(mcg_rollout_plan_pool(p, "master")->machine_count, 2);
    assert_int_equal(mcg_rollout_plan_pool(p, "infra")->machine_count, 2);
    assert_int_equal(mcg_rollout_plan_pool(p, "gpu")->machine_count, 0);
    assert_null(mcg_rollout_plan_pool(p, "storage"));
}

static void test_pool_of(void **state)
{
    world *w = *state;
    add_pool(w, "worker", NULL);
    add_pool(w, "zeta", NULL);
    add_pool(w, "alpha", NULL);
    add_pool(w, "master", NULL);
    mcg_pool pools[4];
    for (size_t i = 0; i < 4; i++)
        pools[i] = w->pools[i];

    mcg_labels l = {0};
    char *why = (char *)"untouched";
    assert_null(mcg_rollout_pool_of(&l, pools, 4, &why));
    assert_null(why);
    assert_null(mcg_rollout_pool_of(NULL, pools, 4, &why));
    assert_null(mcg_rollout_pool_of(&l, NULL, 0, NULL));

    role_label(&l, "worker");
    assert_ptr_equal(mcg_rollout_pool_of(&l, pools, 4, &why), &pools[0]);
    assert_null(why);
    role_label(&l, "zeta");
    assert_ptr_equal(mcg_rollout_pool_of(&l, pools, 4, NULL), &pools[1]);
    role_label(&l, "alpha");
    assert_null(mcg_rollout_pool_of(&l, pools, 4, NULL)); /* conflict without a reason wanted */
    assert_null(mcg_rollout_pool_of(&l, pools, 4, &why));
    assert_string_equal(why, "belongs to 2 custom pools: alpha, zeta");
    free(why);
    role_label(&l, "master");
    assert_ptr_equal(mcg_rollout_pool_of(&l, pools, 4, &why), &pools[3]);
    assert_null(why);
    mcg_labels_free(&l);

    /* an absent selector matches nothing; a present empty one matches every node */
    mcg_pool any = {.name = (char *)"any", .node_selector = {.present = true}};
    mcg_pool never = {.name = (char *)"never"};
    assert_ptr_equal(mcg_rollout_pool_of(NULL, &any, 1, NULL), &any);
    assert_null(mcg_rollout_pool_of(NULL, &never, 1, NULL));

    assert_true(mcg_rollout_pool_is_builtin("master"));
    assert_true(mcg_rollout_pool_is_builtin("worker"));
    assert_false(mcg_rollout_pool_is_builtin("workers"));
    assert_false(mcg_rollout_pool_is_builtin(NULL));
}

/* ------------------------------------------------------- maxUnavailable */

static void test_max_unavailable(void **state)
{
    (void)state;
    struct {
        bool set, pct;
        int64_t v;
        size_t count;
        int64_t want;
    } t[] = {
        {false, false, 0, 10, 1},  /* default 1 */
        {false, false, 0, 0, 1},   /* default 1, empty pool */
        {true, false, 3, 10, 3},   /* integer */
        {true, false, 3, 2, 3},    /* integer above the count is kept */
        {true, false, 0, 10, 1},   /* 0 means 1 (MCO) */
        {true, false, -4, 10, 1},  /* nonsense means 1 */
        {true, true, 10, 25, 2},   /* 2.5 rounds down */
        {true, true, 10, 5, 1},    /* 0.5 -> 0 -> at least 1 */
        {true, true, 100, 7, 7},   /* "100%" */
        {true, true, 50, 0, 1},    /* empty pool */
        {true, true, 33, 10, 3},   /* 3.3 */
        {true, true, 99, 100, 99}, /* exact */
        {true, true, 150, 4, 4},   /* above 100 acts as 100 */
        {true, true, 0, 10, 1},    /* 0% means 1 */
        {true, true, 25, 10000, 2500},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        mcg_pool p = {.max_unavailable_set = t[i].set,
                      .max_unavailable_is_percent = t[i].pct,
                      .max_unavailable = t[i].v};
        int64_t got = mcg_rollout_max_unavailable(&p, t[i].count);
        if (got != t[i].want)
            fail_msg("case %zu: got %lld want %lld", i, (long long)got, (long long)t[i].want);
    }
    assert_int_equal(mcg_rollout_max_unavailable(NULL, 5), 1);
    /* no overflow at the extremes */
    mcg_pool big = {.max_unavailable_set = true,
                    .max_unavailable_is_percent = true,
                    .max_unavailable = INT64_MAX};
    assert_true(mcg_rollout_max_unavailable(&big, (size_t)1 << 40) == (int64_t)1 << 40);
    big.max_unavailable = 50;
    assert_true(mcg_rollout_max_unavailable(&big, SIZE_MAX) > 0);
}

/* mcg_rollout_waves: ceil(todo / effective maxUnavailable of the pool's count). */
static void test_waves(void **state)
{
    (void)state;
    static const struct {
        bool set, pct;
        int64_t v;
        size_t count, todo;
        int64_t want;
    } t[] = {
        {false, false, 0, 3, 3, 3},  /* default 1: one node at a time */
        {false, false, 0, 3, 0, 0},  /* nothing to do */
        {true, false, 2, 5, 5, 3},   /* 2 + 2 + 1 */
        {true, false, 2, 5, 4, 2},   /* exact */
        {true, false, 10, 5, 5, 1},  /* above the count */
        {true, true, 50, 10, 10, 2}, /* 5 at a time */
        {true, true, 50, 10, 3, 1},  /* only 3 need it */
        {true, true, 10, 5, 5, 5},   /* 0.5 -> 1 at a time */
        {true, true, 100, 7, 7, 1},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        mcg_pool p = {.max_unavailable_set = t[i].set,
                      .max_unavailable_is_percent = t[i].pct,
                      .max_unavailable = t[i].v};
        int64_t got = mcg_rollout_waves(&p, t[i].count, t[i].todo);
        if (got != t[i].want)
            fail_msg("case %zu: got %lld want %lld", i, (long long)got, (long long)t[i].want);
    }
    assert_int_equal(mcg_rollout_waves(NULL, 4, 4), 4);
}

/* ------------------------------------------------------------- capacity */

static void test_capacity_basic(void **state)
{
    world *w = *state;
    mcg_pool_view *v = add_pool(w, "worker", "new");
    set_max(v, 2, false);
    for (int i = 0; i < 5; i++) {
        static const char *names[] = {"w0", "w1", "w2", "w3", "w4"};
        add_done(w, names[i], "worker", "old");
    }
    const mcg_rollout_plan *p = plan(w);
    assert_int_equal(p->nupdates, 2);
    assert_update(p, "w0", "new", MCG_UPDATE_ROLLOUT); /* oldest first */
    assert_update(p, "w1", "new", MCG_UPDATE_ROLLOUT);
    assert_string_equal(p->updates[0].pool, "worker");
    const mcg_pool_status *st = &p->pools[0];
    assert_int_equal(st->machine_count, 5);
    assert_int_equal(st->updated_count, 0);
    assert_int_equal(st->updating_count, 2);
    assert_int_equal(st->unavailable_count, 2); /* as the plan leaves them */
    assert_int_equal(st->max_unavailable, 2);
    assert_true(st->conds[MCG_COND_UPDATING].status);
    assert_string_equal(st->conds[MCG_COND_UPDATING].message,
                        "All nodes are updating to MachineConfig new (2 of 5 nodes updating)");
    assert_false(st->conds[MCG_COND_UPDATED].status);
}

static void test_capacity_unavailable(void **state)
{
    world *w = *state;
    mcg_pool_view *v = add_pool(w, "worker", "new");
    set_max(v, 3, false);
    add_done(w, "notready", "worker", "old")->ready = false; /* unavailable, not a candidate */
    add_done(w, "cordoned", "worker", "old")->unschedulable = true;
    add_node(w, "working", "worker", "old", "new", MCG_STATE_WORKING); /* in flight */
    add_done(w, "a", "worker", "old");
    add_done(w, "b", "worker", "old");
    const mcg_rollout_plan *p = plan(w);
    /* 3 - 3 unavailable = 0 */
    assert_int_equal(p->nupdates, 0);
    assert_int_equal(p->pools[0].unavailable_count, 3);
    assert_string_equal(p->pools[0].conds[MCG_COND_UPDATING].message,
                        "All nodes are updating to MachineConfig new (1 of 5 nodes updating)");

    /* the cordoned node is uncordoned: one slot */
    w->nodes[1].unschedulable = false;
    p = plan(w);
    assert_int_equal(p->nupdates, 1);
    assert_update(p, "cordoned", "new", MCG_UPDATE_ROLLOUT);
}

static void test_capacity_degraded(void **state)
{
    world *w = *state;
    mcg_pool_view *v = add_pool(w, "worker", "new");
    set_max(v, 2, false);
    /* failing at the target: counts against capacity, not a candidate */
    mcg_node_view *f = add_node(w, "failing", "worker", "old", "new", MCG_STATE_DEGRADED);
    f->reason = "write /etc/x: read-only file system";
    add_done(w, "a", "worker", "old");
    add_done(w, "b", "worker", "old");
    add_done(w, "c", "worker", "old");
    const mcg_rollout_plan *p = plan(w);
    assert_int_equal(p->nupdates, 1);
    assert_update(p, "a", "new", MCG_UPDATE_ROLLOUT);
    const mcg_pool_status *st = &p->pools[0];
    assert_int_equal(st->degraded_count, 1);
    assert_int_equal(st->unavailable_count, 2);
    assert_true(st->conds[MCG_COND_NODE_DEGRADED].status);
    assert_true(st->conds[MCG_COND_DEGRADED].status);
    assert_false(st->conds[MCG_COND_RENDER_DEGRADED].status);
    assert_string_equal(st->conds[MCG_COND_NODE_DEGRADED].message,
                        "Node failing is reporting: \"write /etc/x: read-only file system\"");
    assert_string_equal(st->conds[MCG_COND_DEGRADED].reason, "NodesDegraded");
    /* NodeDegraded keeps MCO's reason */
    assert_string_equal(st->conds[MCG_COND_NODE_DEGRADED].reason,
                        "1 nodes are reporting degraded status on sync");

    /* with maxUnavailable 1 the failing node blocks the rollout */
    set_max(v, 1, false);
    p = plan(w);
    assert_int_equal(p->nupdates, 0);
}

static void test_retarget_failing(void **state)
{
    world *w = *state;
    mcg_pool_view *v = add_pool(w, "worker", "good"); /* e.g. a rollback */
    set_max(v, 1, false);
    add_node(w, "bad1", "worker", "good", "bad", MCG_STATE_DEGRADED);
    add_node(w, "bad2", "worker", "good", "bad", MCG_STATE_UNRECONCILABLE);
    add_done(w, "a", "worker", "good");
    add_done(w, "b", "worker", "older");
    add_node(w, "nodesired", "worker", "older", NULL, MCG_STATE_WORKING);
    add_node(w, "busy", "worker", "older", "bad", MCG_STATE_WORKING);
    const mcg_rollout_plan *p = plan(w);
    /* unavailable: bad1, bad2, nodesired, busy = 4 >= 1: no capacity, but the failing and
     * desired-less nodes are retargeted at no cost; busy is left to finish */
    assert_int_equal(p->nupdates, 3);
    assert_update(p, "bad1", "good", MCG_UPDATE_RETARGET);
    assert_update(p, "bad2", "good", MCG_UPDATE_RETARGET);
    assert_update(p, "nodesired", "good", MCG_UPDATE_RETARGET);
    assert_null(find_update(p, "b"));
    assert_null(find_update(p, "busy"));
    assert_int_equal(p->pools[0].degraded_count, 2);
    assert_string_equal(
        p->pools[0].conds[MCG_COND_NODE_DEGRADED].message,
        "Node bad1 is reporting: \"Degraded\", Node bad2 is reporting: \"Unreconcilable\"");

    /* a failing node that is not ready stays */
    w->nodes[0].ready = false;
    p = plan(w);
    assert_null(find_update(p, "bad1"));
}

static void test_drift(void **state)
{
    world *w = *state;
    mcg_pool_view *v = add_pool(w, "worker", "new");
    set_max(v, 1, false);
    /* drift on a settled node: Degraded with current == desired */
    add_node(w, "drift", "worker", "old", "old", MCG_STATE_DEGRADED)->reason =
        "/etc/chrony.conf: content differs";
    add_done(w, "a", "worker", "old");
    const mcg_rollout_plan *p = plan(w);
    assert_int_equal(p->pools[0].degraded_count, 1);
    /* counted unavailable (capacity 0), retargeted at no cost */
    assert_int_equal(p->nupdates, 1);
    assert_update(p, "drift", "new", MCG_UPDATE_RETARGET);

    /* drift at the target: degraded, unavailable, nothing to write */
    w->nodes[0].current = w->nodes[0].desired = "new";
    p = plan(w);
    assert_int_equal(p->nupdates, 0);
    assert_int_equal(p->pools[0].updated_count, 0);
    assert_int_equal(p->pools[0].unavailable_count, 1);
    assert_true(p->pools[0].conds[MCG_COND_DEGRADED].status);
}

static void test_percent(void **state)
{
    world *w = *state;
    mcg_pool_view *v = add_pool(w, "worker", "new");
    set_max(v, 10, true);
    static char names[25][16];
    for (int i = 0; i < 25; i++) {
        snprintf(names[i], sizeof(names[i]), "n%02d", i);
        add_done(w, names[i], "worker", "old");
    }
    const mcg_rollout_plan *p = plan(w);
    assert_int_equal(p->nupdates, 2); /* 10% of 25 */
    assert_int_equal(p->pools[0].max_unavailable, 2);
    set_max(v, 100, true);
    p = plan(w);
    assert_int_equal(p->nupdates, 25);
    assert_string_equal(p->pools[0].conds[MCG_COND_UPDATING].message,
                        "All nodes are updating to MachineConfig new (25 of 25 nodes updating)");
}

static void test_default_one(void **state)
{
    world *w = *state;
    add_pool(w, "worker", "new");
    add_done(w, "a", "worker", "old");
    add_done(w, "b", "worker", "old");
    add_done(w, "c", "worker", "old");
    const mcg_rollout_plan *p = plan(w);
    assert_int_equal(p->nupdates, 1);
    assert_int_equal(p->pools[0].max_unavailable, 1);
}

/* ------------------------------------------------------------- ordering */

static void test_ordering(void **state)
{
    world *w = *state;
    mcg_pool_view *v = add_pool(w, "worker", "new");
    set_max(v, 100, true);
    mcg_node_view *n;
    n = add_done(w, "nozone-old", "worker", "old");
    n->created = 1;
    n = add_done(w, "b-old", "worker", "old");
    n->created = 5;
    set_zone(w, n, "zone-b");
    n = add_done(w, "a-new", "worker", "old");
    n->created = 30;
    set_zone(w, n, "zone-a");
    n = add_done(w, "a-old", "worker", "old");
    n->created = 20;
    set_zone(w, n, "zone-a");
    n = add_done(w, "a-tie-y", "worker", "old");
    n->created = 25;
    set_zone(w, n, "zone-a");
    n = add_done(w, "a-tie-x", "worker", "old");
    n->created = 25;
    set_zone(w, n, "zone-a");
    n = add_done(w, "emptyzone", "worker", "old");
    n->created = 0;
    set_zone(w, n, ""); /* an empty zone is no zone */
    n = add_done(w, "nozone-new", "worker", "old");
    n->created = 2;
    const char *want[] = {"a-old", "a-tie-x",   "a-tie-y",    "a-new",
                          "b-old", "emptyzone", "nozone-old", "nozone-new"};
    const mcg_rollout_plan *p = plan(w);
    assert_int_equal(p->nupdates, 8);
    for (size_t i = 0; i < 8; i++)
        assert_string_equal(p->updates[i].node, want[i]);

    /* with room for 3, the first 3 in that order */
    set_max(v, 3, false);
    p = plan(w);
    assert_int_equal(p->nupdates, 3);
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(p->updates[i].node, want[i]);
}

/* --------------------------------------------------------------- paused */

static void test_paused(void **state)
{
    world *w = *state;
    mcg_pool_view *v = add_pool(w, "worker", "new");
    v->configuration = "old";
    ((mcg_pool *)v->pool)->paused = true;
    set_max(v, 5, false);
    add_done(w, "a", "worker", "old");
    add_done(w, "b", "worker", "new");
    add_node(w, "c", "worker", "old", "new", MCG_STATE_WORKING);
    add_node(w, "d", "worker", "old", "new", MCG_STATE_DEGRADED);
    const mcg_rollout_plan *p = plan(w);
    assert_int_equal(p->nupdates, 0);
    const mcg_pool_status *st = &p->pools[0];
    assert_int_equal(st->machine_count, 4);
    assert_int_equal(st->updated_count, 1);
    assert_int_equal(st->ready_count, 1);
    assert_int_equal(st->unavailable_count, 2);
    assert_int_equal(st->degraded_count, 1);
    assert_int_equal(st->updating_count, 2);
    assert_false(st->conds[MCG_COND_UPDATED].status);
    assert_false(st->conds[MCG_COND_UPDATING].status);
    assert_string_equal(st->conds[MCG_COND_UPDATING].reason, "Paused");
    assert_string_equal(st->conds[MCG_COND_UPDATING].message,
                        "Pool is paused; will not update to MachineConfig new (paused in git)");
    assert_string_equal(st->configuration, "old");

    /* an operator's pause holds the rollout the same way and is named */
    ((mcg_pool *)v->pool)->paused = false;
    v->operator_paused = true;
    p = plan(w);
    assert_int_equal(p->nupdates, 0);
    assert_false(p->pools[0].conds[MCG_COND_UPDATING].status);
    assert_string_equal(
        p->pools[0].conds[MCG_COND_UPDATING].message,
        "Pool is paused; will not update to MachineConfig new (paused by an operator)");
    ((mcg_pool *)v->pool)->paused = true;
    p = plan(w);
    assert_string_equal(
        p->pools[0].conds[MCG_COND_UPDATING].message,
        "Pool is paused; will not update to MachineConfig new (paused in git and by an operator)");
    assert_int_equal(p->nupdates, 0);
    /* resumed by the operator, still paused in git: nothing moves */
    v->operator_paused = false;
    p = plan(w);
    assert_int_equal(p->nupdates, 0);
    /* neither: the rollout goes on */
    ((mcg_pool *)v->pool)->paused = false;
    p = plan(w);
    assert_true(p->nupdates > 0);
    ((mcg_pool *)v->pool)->paused = true;

    /* a node joining a paused pool gets what the pool runs, not the target */
    add_node(w, "joiner", "worker", NULL, NULL, NULL);
    p = plan(w);
    assert_int_equal(p->nupdates, 1);
    assert_update(p, "joiner", "old", MCG_UPDATE_NEW_NODE);
    /* ... and nothing when the pool has never reported a configuration */
    v->configuration = NULL;
    p = plan(w);
    assert_int_equal(p->nupdates, 0);
    assert_null(p->pools[0].configuration);

    /* a paused pool whose nodes are all at the target is Updated */
    teardown(state);
    setup(state);
    w = *state;
    v = add_pool(w, "worker", "new");
    ((mcg_pool *)v->pool)->paused = true;
    add_done(w, "a", "worker", "new");
    p = plan(w);
    assert_true(p->pools[0].conds[MCG_COND_UPDATED].status);
    assert_string_equal(p->pools[0].configuration, "new");
}

/* ------------------------------------------------------------ new nodes */

static void test_new_nodes(void **state)
{
    world *w = *state;
    mcg_pool_view *v = add_pool(w, "worker", "new");
    set_max(v, 3, false);
    add_node(w, "fresh2", "worker", NULL, NULL, NULL)->created = 50;
    add_node(w, "fresh1", "worker", "", "", NULL)->created = 40; /* "" = none */
    add_node(w, "fresh3", "worker", NULL, NULL, NULL)->ready = false;
    add_done(w, "a", "worker", "old");
    add_done(w, "b", "worker", "old");
    /* a joining node already given a config, still working on it: it uses
     * one unit of capacity, like any node updating */
    mcg_node_view *j = add_node(w, "joining", "worker", NULL, "new", MCG_STATE_WORKING);
    const mcg_rollout_plan *p = plan(w);
    assert_int_equal(p->nupdates, 2); /* 3 - 1: new nodes first, oldest first */
    assert_int_equal(count_kind(p, MCG_UPDATE_NEW_NODE), 2);
    assert_string_equal(p->updates[0].node, "fresh1"); /* created 40 */
    assert_string_equal(p->updates[1].node, "fresh2");
    assert_null(find_update(p, "fresh3"));
    assert_null(find_update(p, "a"));
    assert_null(find_update(p, "joining"));

    /* once the joining node is Done, a unit comes back: the next new node
     * (not ready: it still gets its first config) */
    j->current = "new";
    j->state = MCG_STATE_DONE;
    w->nodes[1].desired = "new"; /* fresh1 and fresh2 are applying theirs */
    w->nodes[0].desired = "new";
    p = plan(w);
    assert_int_equal(p->nupdates, 1);
    assert_update(p, "fresh3", "new", MCG_UPDATE_NEW_NODE);
    const mcg_pool_status *st = &p->pools[0];
    assert_int_equal(st->unavailable_count, 3); /* the three applying their first config */

    /* no target: nothing for anyone (no status.configuration either) */
    w->views[0].target = NULL;
    p = plan(w);
    assert_int_equal(p->nupdates, 0);
}

/* The first rollout of three masters that have never been configured keeps
 * etcd's quorum: one at a time (maxUnavailable 1), the next only when the
 * one before is Done. */
static void test_first_rollout_one_at_a_time(void **state)
{
    world *w = *state;
    add_pool(w, "master", "m1");
    mcg_node_view *m[3] = {add_node(w, "master-0", "master", NULL, NULL, NULL),
                           add_node(w, "master-1", "master", NULL, NULL, NULL),
                           add_node(w, "master-2", "master", NULL, NULL, NULL)};
    for (int i = 0; i < 3; i++) {
        const mcg_rollout_plan *p = plan(w);
        assert_int_equal(p->nupdates, 1);
        assert_update(p, m[i]->name, "m1", MCG_UPDATE_NEW_NODE);
        m[i]->desired = "m1";
        m[i]->state = MCG_STATE_WORKING;
        assert_int_equal(plan(w)->nupdates, 0); /* it is applying: nobody else */
        m[i]->current = "m1";
        m[i]->state = MCG_STATE_DONE;
    }
    assert_int_equal(plan(w)->nupdates, 0);
    assert_true(plan(w)->pools[0].conds[MCG_COND_UPDATED].status);
}

/* --------------------------------------------------------- render error */

static void test_render_error(void **state)
{
    world *w = *state;
    mcg_pool_view *v = add_pool(w, "worker", NULL);
    v->render_error = "machineconfigs/10-x.yaml:3: unknown key 'foo'";
    v->configuration = "old";
    set_max(v, 5, false);
    add_done(w, "a", "worker", "old");
    add_done(w, "b", "worker", "older");
    const mcg_rollout_plan *p = plan(w);
    assert_int_equal(p->nupdates, 0);
    const mcg_pool_status *st = &p->pools[0];
    assert_true(st->conds[MCG_COND_RENDER_DEGRADED].status);
    assert_string_equal(st->conds[MCG_COND_RENDER_DEGRADED].reason, "RenderFailed");
    assert_string_equal(st->conds[MCG_COND_RENDER_DEGRADED].message,
                        "Failed to render configuration for pool worker: "
                        "machineconfigs/10-x.yaml:3: unknown key 'foo'");
    assert_true(st->conds[MCG_COND_DEGRADED].status);
    assert_string_equal(st->conds[MCG_COND_DEGRADED].message,
                        st->conds[MCG_COND_RENDER_DEGRADED].message);
    assert_false(st->conds[MCG_COND_NODE_DEGRADED].status);
    assert_false(st->conds[MCG_COND_UPDATED].status);
    assert_false(st->conds[MCG_COND_UPDATING].status);
    assert_null(st->target);
    assert_string_equal(st->configuration, "old");

    /* a render error beside the last good target: that rollout goes on (MCO) */
    v->target = "good";
    add_node(w, "deg", "worker", "old", "good", MCG_STATE_DEGRADED);
    p = plan(w);
    assert_int_equal(count_kind(p, MCG_UPDATE_ROLLOUT), 2);
    st = &p->pools[0];
    assert_true(st->conds[MCG_COND_RENDER_DEGRADED].status);
    assert_string_equal(st->conds[MCG_COND_DEGRADED].reason, "RenderAndNodesDegraded");
    assert_string_equal(st->conds[MCG_COND_DEGRADED].message,
                        "Failed to render configuration for pool worker: "
                        "machineconfigs/10-x.yaml:3: unknown key 'foo'; "
                        "Node deg is reporting: \"Degraded\"");

    /* a render error about this pool ("pool worker: ...") names it once */
    v->render_error = "pool worker: MachineConfig 99-x: storage.disks changed";
    p = plan(w);
    assert_string_equal(p->pools[0].conds[MCG_COND_RENDER_DEGRADED].message,
                        "Failed to render configuration for pool worker: MachineConfig 99-x: "
                        "storage.disks changed");

    /* the caller names the cause: an unreachable source is FetchFailed */
    v->render_error = "fetch from origin failed: connection refused";
    v->render_reason = "FetchFailed";
    w->nnodes--;
    p = plan(w);
    st = &p->pools[0];
    assert_int_equal(count_kind(p, MCG_UPDATE_ROLLOUT), 2); /* the last good target rolls on */
    assert_string_equal(st->conds[MCG_COND_RENDER_DEGRADED].reason, "FetchFailed");
    assert_string_equal(st->conds[MCG_COND_RENDER_DEGRADED].message, v->render_error);
    assert_true(st->conds[MCG_COND_DEGRADED].status);
    assert_string_equal(st->conds[MCG_COND_DEGRADED].reason, "FetchFailed");
    v->render_reason = "";
    p = plan(w);
    assert_string_equal(p->pools[0].conds[MCG_COND_RENDER_DEGRADED].reason, "RenderFailed");
}

/* ---------------------------------------------------- status and counts */

static void test_fully_updated(void **state)
{
    world *w = *state;
    mcg_pool_view *v = add_pool(w, "worker", "new");
    v->configuration = "old";
    add_done(w, "a", "worker", "new");
    add_done(w, "b", "worker", "new");
    add_done(w, "c", "worker", "old");
    const mcg_rollout_plan *p = plan(w);
    const mcg_pool_status *st = &p->pools[0];
    assert_string_equal(st->configuration, "old");
    assert_string_equal(st->target, "new");
    assert_int_equal(st->updated_count, 2);
    assert_int_equal(st->ready_count, 2);
    assert_int_equal(st->updating_count, 1); /* c, just given the target */
    assert_string_equal(st->conds[MCG_COND_UPDATED].reason, "NotAllNodesUpdated");
    assert_string_equal(st->conds[MCG_COND_UPDATED].message, "2 of 3 nodes updated to new");

    /* c finishes: configuration moves */
    w->nodes[2].current = w->nodes[2].desired = "new";
    p = plan(w);
    st = &p->pools[0];
    assert_int_equal(p->nupdates, 0);
    assert_int_equal(st->updated_count, 3);
    assert_int_equal(st->ready_count, 3);
    assert_int_equal(st->unavailable_count, 0);
    assert_int_equal(st->updating_count, 0);
    assert_string_equal(st->configuration, "new");
    assert_true(st->conds[MCG_COND_UPDATED].status);
    assert_string_equal(st->conds[MCG_COND_UPDATED].reason, "AllNodesUpdated");
    assert_string_equal(st->conds[MCG_COND_UPDATED].message,
                        "All nodes are updated with MachineConfig new");
    assert_false(st->conds[MCG_COND_UPDATING].status);
    assert_string_equal(st->conds[MCG_COND_UPDATING].reason, "");
    assert_string_equal(st->conds[MCG_COND_UPDATING].message, "");
    assert_false(st->conds[MCG_COND_DEGRADED].status);
    for (int c = 0; c < MCG_COND_COUNT; c++) {
        if (c == MCG_COND_ROLLOUT_HALTED) { /* a pool without spec.rollout has none */
            assert_null(st->conds[c].type);
            continue;
        }
        assert_non_null(st->conds[c].type);
        assert_non_null(st->conds[c].reason);
        assert_non_null(st->conds[c].message);
    }
    assert_string_equal(st->conds[MCG_COND_UPDATED].type, "Updated");
    assert_string_equal(st->conds[MCG_COND_UPDATING].type, "Updating");
    assert_string_equal(st->conds[MCG_COND_DEGRADED].type, "Degraded");
    assert_string_equal(st->conds[MCG_COND_NODE_DEGRADED].type, "NodeDegraded");
    assert_string_equal(st->conds[MCG_COND_RENDER_DEGRADED].type, "RenderDegraded");

    /* a done node that becomes unready: not Updated, configuration stays as given */
    w->nodes[0].ready = false;
    p = plan(w);
    st = &p->pools[0];
    assert_int_equal(st->updated_count, 3);
    assert_int_equal(st->ready_count, 2);
    assert_int_equal(st->unavailable_count, 1);
    assert_false(st->conds[MCG_COND_UPDATED].status);
    assert_string_equal(st->configuration, "old");
}

static void test_empty_pool(void **state)
{
    world *w = *state;
    add_pool(w, "infra", "rendered-infra-1");
    const mcg_rollout_plan *p = plan(w);
    const mcg_pool_status *st = &p->pools[0];
    assert_int_equal(st->machine_count, 0);
    assert_true(st->conds[MCG_COND_UPDATED].status); /* as in MCO */
    assert_string_equal(st->configuration, "rendered-infra-1");

    /* and no pools, no nodes at all */
    mcg_rollout_plan *empty = NULL;
    assert_int_equal(mcg_rollout_plan_make(&empty, NULL, 0, NULL, 0, 0, NULL), 0);
    assert_int_equal(empty->nmembers + empty->nupdates + empty->npools, 0);
    assert_null(mcg_rollout_plan_member(empty, "x"));
    mcg_rollout_plan_free(empty);
    mcg_rollout_plan_free(NULL);
}

static void test_counts_mixed(void **state)
{
    world *w = *state;
    mcg_pool_view *v = add_pool(w, "worker", "T");
    set_max(v, 1, false);
    add_done(w, "done", "worker", "T");
    add_done(w, "done-unready", "worker", "T")->ready = false;
    add_done(w, "done-cordoned", "worker", "T")->unschedulable = true;
    add_node(w, "working", "worker", "S", "T", MCG_STATE_WORKING);
    add_node(w, "done-noticed", "worker", "S", "T", MCG_STATE_DONE); /* agent not yet started */
    add_node(w, "degraded", "worker", "S", "T", MCG_STATE_DEGRADED);
    add_node(w, "unrec", "worker", "T", "T", MCG_STATE_UNRECONCILABLE);
    add_node(w, "nostate", "worker", "T", "T", NULL);
    add_done(w, "old", "worker", "S");
    const mcg_rollout_plan *p = plan(w);
    const mcg_pool_status *st = &p->pools[0];
    assert_int_equal(p->nupdates, 0); /* far over maxUnavailable */
    assert_int_equal(st->machine_count, 9);
    assert_int_equal(st->updated_count, 3);
    assert_int_equal(st->ready_count, 1);
    assert_int_equal(st->unavailable_count, 7);
    assert_int_equal(st->degraded_count, 2);
    assert_int_equal(st->updating_count, 5);
    assert_string_equal(
        st->conds[MCG_COND_NODE_DEGRADED].message,
        "Node degraded is reporting: \"Degraded\", Node unrec is reporting: \"Unreconcilable\"");
}

static void test_degraded_message(void **state)
{
    world *w = *state;
    add_pool(w, "worker", "T");
    static const char *names[] = {"e", "d", "c", "b", "a"};
    for (int i = 0; i < 5; i++)
        add_node(w, names[i], "worker", "S", "T", MCG_STATE_DEGRADED);
    w->nodes[4].reason = "line one\nline two\ttab";
    w->nodes[2].reason = "say \"no\" \\ twice"; /* c: quoted as Go's %q would */
    char longr[600];
    memset(longr, 'x', sizeof(longr) - 1);
    longr[sizeof(longr) - 1] = '\0';
    memcpy(longr + 198, "\xc3\xa9", 2); /* é straddling the cut at 200 */
    w->nodes[3].reason = longr;
    const mcg_rollout_plan *p = plan(w);
    const char *msg = p->pools[0].conds[MCG_COND_NODE_DEGRADED].message;
    char want[1024];
    snprintf(want, sizeof(want),
             "Node a is reporting: \"line one line two tab\", Node b is reporting: \"%.198s"
             "\xc3\xa9...\", Node c is reporting: \"say \\\"no\\\" \\\\ twice\", and 2 more",
             longr);
    assert_string_equal(msg, want);

    /* cut inside the multi-byte character: backs up to its start */
    memcpy(longr + 198, "x\xc3\xa9", 3);
    p = plan(w);
    msg = p->pools[0].conds[MCG_COND_NODE_DEGRADED].message;
    snprintf(want, sizeof(want),
             "Node a is reporting: \"line one line two tab\", Node b is reporting: \"%.199s...\", "
             "Node c is reporting: \"say \\\"no\\\" \\\\ twice\", and 2 more",
             longr);
    assert_string_equal(msg, want);
}

/* --------------------------------------------------------- bad inputs */

static void test_bad_inputs(void **state)
{
    world *w = *state;
    mcg_err err = {0};
    mcg_rollout_plan *p = (mcg_rollout_plan *)&err; /* must be reset to NULL */
    add_pool(w, "worker", "T");
    add_done(w, "a", "worker", "T");
    add_done(w, "a", "worker", "T");
    assert_int_equal(mcg_rollout_plan_make(&p, w->nodes, 2, w->views, 1, 0, &err), MCG_EINVAL);
    assert_null(p);
    assert_string_equal(err.msg, "rollout: duplicate node 'a'");

    w->nodes[1].name = "";
    assert_int_equal(mcg_rollout_plan_make(&p, w->nodes, 2, w->views, 1, 0, &err), MCG_EINVAL);
    assert_string_equal(err.msg, "rollout: node 1 has no name");
    w->nodes[1].name = NULL;
    assert_int_equal(mcg_rollout_plan_make(&p, w->nodes, 2, w->views, 1, 0, NULL), MCG_EINVAL);
    w->nodes[1].name = "b";

    add_pool(w, "worker", "T");
    assert_int_equal(mcg_rollout_plan_make(&p, w->nodes, 2, w->views, 2, 0, &err), MCG_EINVAL);
    assert_string_equal(err.msg, "rollout: duplicate pool 'worker'");
    w->views[1].pool = NULL;
    assert_int_equal(mcg_rollout_plan_make(&p, w->nodes, 2, w->views, 2, 0, &err), MCG_EINVAL);
    assert_string_equal(err.msg, "rollout: pool 1 has no name");
    assert_null(p);
    w->views[1].pool = &w->pools[1];
}

static void test_condition_helpers(void **state)
{
    (void)state;
    mcg_condition t = {
        .type = "Updated", .status = true, .reason = (char *)"", .message = (char *)""};
    mcg_condition f = t;
    f.status = false;
    assert_true(mcg_rollout_condition_changed(NULL, &t));
    assert_false(mcg_rollout_condition_changed("True", &t));
    assert_true(mcg_rollout_condition_changed("False", &t));
    assert_false(mcg_rollout_condition_changed("False", &f));
    assert_true(mcg_rollout_condition_changed("Unknown", &f));
    assert_string_equal(mcg_rollout_condition_status(true), "True");
    assert_string_equal(mcg_rollout_condition_status(false), "False");
}

/* -------------------------------------------------------------- property */

/* xorshift64*: a fixed seed gives the same run everywhere */
static uint64_t rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static bool chance(uint64_t *s, unsigned pct)
{
    return rnd(s) % 100 < pct;
}

#define SIMN 20

/* Nodes not settled at their own desiredConfig, joining ones left out ("updating"). */
static size_t count_updating(const world *w)
{
    size_t n = 0;
    for (size_t i = 0; i < w->nnodes; i++) {
        const mcg_node_view *v = &w->nodes[i];
        if (!v->current || !*v->current)
            continue;
        n += !v->desired || strcmp(v->desired, v->current) != 0 || !v->state ||
             strcmp(v->state, MCG_STATE_DONE) != 0;
    }
    return n;
}

/* Nodes out of service: updating, or not ready, or cordoned (joining ones left out). */
static size_t count_out(const world *w)
{
    size_t n = 0;
    for (size_t i = 0; i < w->nnodes; i++) {
        const mcg_node_view *v = &w->nodes[i];
        if (!v->current || !*v->current)
            continue;
        n += !v->ready || v->unschedulable || strcmp(v->desired, v->current) != 0 ||
             strcmp(v->state, MCG_STATE_DONE) != 0;
    }
    return n;
}

static void apply_plan(world *w)
{
    for (size_t i = 0; i < w->plan->nupdates; i++) {
        const mcg_desired_update *u = &w->plan->updates[i];
        for (size_t j = 0; j < w->nnodes; j++)
            if (strcmp(w->nodes[j].name, u->node) == 0) {
                /* configs are the static strings "T0".."T3": keep pointers stable */
                static const char *cfgs[] = {"T0", "T1", "T2", "T3"};
                for (size_t c = 0; c < 4; c++)
                    if (strcmp(cfgs[c], u->desired) == 0)
                        w->nodes[j].desired = cfgs[c];
            }
    }
}

static bool converged(const world *w, const char *target)
{
    for (size_t i = 0; i < w->nnodes; i++) {
        const mcg_node_view *v = &w->nodes[i];
        if (strcmp(v->current, target) || strcmp(v->desired, target) ||
            strcmp(v->state, MCG_STATE_DONE) || !v->ready || v->unschedulable)
            return false;
    }
    return true;
}

/*
 * One simulated rollout. chaos adds failures, readiness flaps, cordons and
 * target changes for the first 60 steps; after that nodes only complete.
 */
static void simulate(world *w, uint64_t seed, bool chaos)
{
    uint64_t s = seed;
    static char names[SIMN][16];
    mcg_pool_view *v = add_pool(w, "worker", "T1");
    if (chance(&s, 50))
        set_max(v, (int64_t)(rnd(&s) % 6), false); /* 0..5, 0 means 1 */
    else
        set_max(v, (int64_t)(rnd(&s) % 101), true);
    int64_t maxu = mcg_rollout_max_unavailable(v->pool, SIMN);
    for (int i = 0; i < SIMN; i++) {
        snprintf(names[i], sizeof(names[i]), "n%02d", i);
        mcg_node_view *n = add_done(w, names[i], "worker", "T0");
        n->created = (int64_t)(rnd(&s) % 5);
        if (chance(&s, 70)) {
            static const char *zones[] = {"a", "b", "c"};
            set_zone(w, n, zones[rnd(&s) % 3]);
        }
    }
    const char *target = "T1";
    for (int step = 0;; step++) {
        bool wild = chaos && step < 60;
        if (wild && chance(&s, 5)) { /* new render or rollback */
            static const char *targets[] = {"T1", "T2", "T3"};
            target = targets[rnd(&s) % 3];
            v->target = target;
        }
        size_t out_before = count_out(w);
        plan(w);
        /* the plan's own rollout writes fit in the room left */
        size_t room = (int64_t)out_before < maxu ? (size_t)(maxu - (int64_t)out_before) : 0;
        assert_true(count_kind(w->plan, MCG_UPDATE_ROLLOUT) <= room);
        assert_int_equal(count_kind(w->plan, MCG_UPDATE_NEW_NODE), 0);
        apply_plan(w);
        size_t updating = count_updating(w), out = count_out(w);
        if ((int64_t)out_before <= maxu) {
            if ((int64_t)out > maxu || (int64_t)updating > maxu)
                fail_msg("seed %llu step %d: %zu out, %zu updating, maxUnavailable %lld",
                         (unsigned long long)seed, step, out, updating, (long long)maxu);
        } else {
            assert_true(out <= out_before);
        }
        if (!wild && converged(w, target)) {
            assert_true(w->plan->pools[0].conds[MCG_COND_UPDATED].status);
            return;
        }
        if (step > 2000)
            fail_msg("seed %llu: no convergence", (unsigned long long)seed);
        /* agents */
        for (size_t i = 0; i < w->nnodes; i++) {
            mcg_node_view *n = &w->nodes[i];
            bool pending = strcmp(n->desired, n->current) != 0;
            if (wild && chance(&s, 3))
                n->ready = !n->ready;
            else if (!wild)
                n->ready = true;
            if (wild && chance(&s, 2))
                n->unschedulable = !n->unschedulable;
            else if (!wild)
                n->unschedulable = false;
            if (!strcmp(n->state, MCG_STATE_DEGRADED)) {
                if (chance(&s, 30) || !wild) { /* retry succeeds */
                    n->current = n->desired;
                    n->state = MCG_STATE_DONE;
                }
            } else if (pending && chance(&s, 40)) {
                if (wild && chance(&s, 20)) {
                    n->state = MCG_STATE_DEGRADED;
                } else {
                    n->current = n->desired;
                    n->state = MCG_STATE_DONE;
                }
            } else if (pending) {
                n->state = MCG_STATE_WORKING;
            } else if (wild && chance(&s, 1)) {
                n->state = MCG_STATE_DEGRADED; /* drift */
            }
        }
    }
}

static void test_property_rollout(void **state)
{
    for (uint64_t seed = 1; seed <= 300; seed++) {
        teardown(state);
        setup(state);
        simulate(*state, seed * 0x9E3779B97F4A7C15ULL, false);
    }
}

static void test_property_chaos(void **state)
{
    for (uint64_t seed = 1; seed <= 300; seed++) {
        teardown(state);
        setup(state);
        simulate(*state, seed * 0x9E3779B97F4A7C15ULL + 7, true);
    }
}

/* ----------------------------------------------------------- performance */

static void test_scale(void **state)
{
    (void)state;
    enum { N = 10000, P = 10 };
    static const char *poolnames[P] = {"master", "worker", "c1", "c2", "c3",
                                       "c4",     "c5",     "c6", "c7", "c8"};
    mcg_pool pools[P];
    mcg_pool_view views[P];
    memset(pools, 0, sizeof(pools));
    memset(views, 0, sizeof(views));
    for (int i = 0; i < P; i++) {
        pools[i].name = (char *)poolnames[i];
        pools[i].node_selector.present = true;
        role_label(&pools[i].node_selector.match, poolnames[i]);
        pools[i].max_unavailable_set = true;
        pools[i].max_unavailable_is_percent = true;
        pools[i].max_unavailable = 10;
        views[i].pool = &pools[i];
        views[i].target = "new";
    }
    mcg_labels *labels = mcg_calloc(N, sizeof(*labels));
    mcg_node_view *nodes = mcg_calloc(N, sizeof(*nodes));
    char(*names)[24] = mcg_calloc(N, sizeof(*names));
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "node-%05d", (i * 7919) % N);
        role_label(&labels[i], "worker");
        if (i % P > 1)
            role_label(&labels[i], poolnames[i % P]);
        if (i % 97 == 0)
            role_label(&labels[i], "master");
        mcg_labels_set(&labels[i], MCG_ZONE_LABEL, (i % 3) ? "zone-a" : "zone-b");
        nodes[i] = (mcg_node_view){.name = names[i],
                                   .labels = &labels[i],
                                   .created = (int64_t)(N - i) / 10,
                                   .ready = true,
                                   .desired = "old",
                                   .current = "old",
                                   .state = MCG_STATE_DONE};
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    mcg_rollout_plan *p = NULL;
    mcg_err err = {0};
    assert_int_equal(mcg_rollout_plan_make(&p, nodes, N, views, P, 0, &err), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    print_message("plan of %d nodes x %d pools: %.3f s\n", N, P, secs);
    size_t total = 0, updates = 0;
    for (int i = 0; i < P; i++) {
        total += p->pools[i].machine_count;
        updates += (size_t)p->pools[i].max_unavailable;
    }
    assert_int_equal(total, N);
    assert_int_equal(p->nupdates, updates);
    assert_non_null(mcg_rollout_plan_member(p, "node-00042"));
    /* generous: the plan takes a few ms; this only catches quadratic behaviour */
    assert_true(secs < 5.0);
    mcg_rollout_plan_free(p);
    for (int i = 0; i < N; i++)
        mcg_labels_free(&labels[i]);
    for (int i = 0; i < P; i++)
        mcg_labels_free(&pools[i].node_selector.match);
    free(labels);
    free(nodes);
    free(names);
}

/*
 * Safe rollouts in the planner: a disruption budget shared by two pools
 * goes to the pool waiting longest (then input order); a canary's first
 * wave is its size, and the next waits for canary_passed; a halted or held
 * pool starts nothing.
 */
static void test_safe_rollouts(void **state)
{
    world *w = *state;
    mcg_pool_view *a = add_pool(w, "alpha", "new-a");
    mcg_pool_view *b = add_pool(w, "beta", "new-b");
    set_max(a, 3, false);
    set_max(b, 3, false);
    a->disrupts = b->disrupts = true;
    add_done(w, "a1", "alpha", "old-a");
    add_done(w, "a2", "alpha", "old-a");
    add_done(w, "b1", "beta", "old-b");
    add_done(w, "b2", "beta", "old-b");
    /* budget 1, beta waiting longer: beta's first node goes, alone */
    a->waiting_since = 2000;
    b->waiting_since = 1000;
    mcg_err err = {0};
    mcg_rollout_plan_free(w->plan);
    w->plan = NULL;
    assert_int_equal(
        mcg_rollout_plan_make(&w->plan, w->nodes, w->nnodes, w->views, w->npools, 1, &err), 0);
    assert_int_equal(w->plan->nupdates, 1);
    assert_string_equal(w->plan->updates[0].node, "b1");
    /* the other way round */
    a->waiting_since = 500;
    mcg_rollout_plan_free(w->plan);
    w->plan = NULL;
    assert_int_equal(
        mcg_rollout_plan_make(&w->plan, w->nodes, w->nnodes, w->views, w->npools, 1, &err), 0);
    assert_int_equal(w->plan->nupdates, 1);
    assert_string_equal(w->plan->updates[0].node, "a1");
    /* no budget: every node that capacity allows */
    assert_int_equal(plan(w)->nupdates, 4);
    /* a halted pool and a held one start nothing */
    a->halted = "node a9: health check x failed";
    b->held = "waiting for the window";
    b->held_reason = "MaintenanceWindow";
    assert_int_equal(plan(w)->nupdates, 0);
    a->halted = NULL;
    b->held = NULL;
    /* a canary of 1: one node, then nothing until it is done and its pause passed */
    mcg_pool *pa = (mcg_pool *)a->pool;
    pa->rollout.present = true;
    pa->rollout.canary = 1;
    const mcg_rollout_plan *p = plan(w);
    size_t alpha = 0;
    for (size_t i = 0; i < p->nupdates; i++)
        alpha += !strcmp(p->updates[i].pool, "alpha");
    assert_int_equal(alpha, 1);
    w->nodes[0].desired = "new-a"; /* a1 took it, not done yet */
    p = plan(w);
    for (size_t i = 0; i < p->nupdates; i++)
        assert_string_not_equal(p->updates[i].pool, "alpha");
    w->nodes[0].current = "new-a"; /* done: the pause still holds */
    p = plan(w);
    assert_true(p->pools[0].canary_done);
    for (size_t i = 0; i < p->nupdates; i++)
        assert_string_not_equal(p->updates[i].pool, "alpha");
    a->canary_passed = true;
    p = plan(w);
    assert_non_null(find_update(p, "a2"));
    pa->rollout.present = false;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_membership, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pool_of, setup, teardown),
        cmocka_unit_test(test_max_unavailable),
        cmocka_unit_test_setup_teardown(test_capacity_basic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capacity_unavailable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capacity_degraded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retarget_failing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drift, setup, teardown),
        cmocka_unit_test_setup_teardown(test_percent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ordering, setup, teardown),
        cmocka_unit_test_setup_teardown(test_paused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_nodes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_rollout_one_at_a_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_render_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fully_updated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_pool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counts_mixed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_degraded_message, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_inputs, setup, teardown),
        cmocka_unit_test(test_condition_helpers),
        cmocka_unit_test_setup_teardown(test_property_rollout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_property_chaos, setup, teardown),
        cmocka_unit_test(test_scale),
        cmocka_unit_test(test_waves),
        cmocka_unit_test_setup_teardown(test_safe_rollouts, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
