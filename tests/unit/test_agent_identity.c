/*
 * test_agent_identity.c — the agent's proof that it runs on its node:
 * matching a host's identity against a node's (table), reading the
 * machine-id under a root (valid, garbage, symlinked, missing), what
 * counts as a live root, and mcg_agent_open refusing a live root whose
 * node is another machine before it creates anything.
 */
#include "agent/agent.h"
#include "cluster/cluster_int.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"

#define MID "0123456789abcdef0123456789abcdef"
#define OTHER "fedcba9876543210fedcba9876543210"
#define BOOT "0c296445-df48-428b-9caa-14d7a2ae87a1"

typedef struct {
    const char *desc;
    const char *machine_id, *boot_id, *system_uuid, *bound; /* the node's */
    const char *host_uuid;                                  /* this host's ("" unknown) */
    int rc;
    const char *msg; /* substring of the refusal */
} match_case;

static const match_case match_cases[] = {
    {"kubelet identity matches", MID, BOOT, NULL, NULL, "", 0, NULL},
    {"machine-id case-insensitive", "0123456789ABCDEF0123456789ABCDEF", BOOT, NULL, NULL, "", 0,
     NULL},
    {"bound only matches", NULL, NULL, NULL, MID, "", 0, NULL},
    {"both match", MID, BOOT, NULL, MID, "", 0, NULL},
    {"machine-id differs", OTHER, BOOT, NULL, NULL, "", MCG_ETRUST,
     "node w1 has machine-id " OTHER ", this host (h) has " MID},
    {"bound differs", NULL, NULL, NULL, OTHER, "", MCG_ETRUST,
     "node w1 has bound machine-id " OTHER},
    {"kubelet matches, bound differs", MID, BOOT, NULL, OTHER, "", MCG_ETRUST,
     "bound machine-id " OTHER},
    {"boot id differs", MID, "11111111-2222-3333-4444-555555555555", NULL, NULL, "", MCG_ETRUST,
     "node w1 has boot id 11111111-2222-3333-4444-555555555555, this host (h) has " BOOT},
    {"system UUID differs", MID, BOOT, "AAAA", NULL, "bbbb", MCG_ETRUST,
     "node w1 has system UUID AAAA, this host (h) has bbbb"},
    {"system UUID case-insensitive", MID, BOOT, "AAAA", NULL, "aaaa", 0, NULL},
    {"system UUID unknown here: not compared", MID, BOOT, "AAAA", NULL, "", 0, NULL},
    {"no identity at all", NULL, NULL, NULL, NULL, "", MCG_ETRUST,
     "node w1 has no machine-id (no kubelet nodeInfo, not bound)"},
    {"empty binding is none", NULL, BOOT, NULL, "", "", MCG_ETRUST, "node w1 has no machine-id"},
};

static void test_match_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(match_cases) / sizeof(match_cases[0]); i++) {
        const match_case *t = &match_cases[i];
        mcg_host_identity h;
        memset(&h, 0, sizeof(h));
        snprintf(h.machine_id, sizeof(h.machine_id), "%s", MID);
        snprintf(h.boot_id, sizeof(h.boot_id), "%s", BOOT);
        snprintf(h.system_uuid, sizeof(h.system_uuid), "%s", t->host_uuid);
        snprintf(h.hostname, sizeof(h.hostname), "h");
        mcg_node n;
        memset(&n, 0, sizeof(n));
        n.name = (char *)"w1";
        n.machine_id = (char *)t->machine_id;
        n.boot_id = (char *)t->boot_id;
        n.system_uuid = (char *)t->system_uuid;
        n.bound_machine_id = (char *)t->bound;
        mcg_err e = {0};
        int rc = mcg_agent_identity_match(&h, &n, &e);
        if (rc != t->rc)
            fail_msg("%s: rc %d, want %d (%s)", t->desc, rc, t->rc, e.msg);
        if (t->msg && !strstr(e.msg, t->msg))
            fail_msg("%s: message '%s' lacks '%s'", t->desc, e.msg, t->msg);
        if (t->msg && (strchr(e.msg, '\n') || !strstr(e.msg, "refusing to manage this host")))
            fail_msg("%s: not one refusal line: '%s'", t->desc, e.msg);
        /* the NULL-err contract */
        assert_int_equal(mcg_agent_identity_match(&h, &n, NULL), t->rc);
    }
}

static char tmp[64];

static void put(const char *rel, const char *data)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", tmp, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(data, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    char made[256];
    mcg_test_tmpdir(made, "identity");
    assert_true(strlen(made) < sizeof(tmp));
    memcpy(tmp, made, strlen(made) + 1);
    char p[256];
    snprintf(p, sizeof(p), "%s/etc", tmp);
    assert_int_equal(mkdir(p, 0755), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mcg_test_rm_rf(tmp);
    return 0;
}

typedef struct {
    const char *content; /* NULL: a symlink to a valid file; "": missing */
    int rc;
    const char *msg;
} mid_case;

static const mid_case mid_cases[] = {
    {MID "\n", 0, NULL},
    {MID, 0, NULL},
    {"uninitialized\n", MCG_EINVAL, "is not 32 hex digits"},
    {"0123456789ABCDEF0123456789ABCDEF\n", MCG_EINVAL, "is not 32 hex digits"},
    {MID "0\n", MCG_EINVAL, "is not 32 hex digits"},
    {"\n", MCG_EINVAL, "is not 32 hex digits"},
    {"", MCG_EIO, "cannot read this host's machine-id"},
    {NULL, MCG_EIO, "cannot read this host's machine-id"},
};

static void test_machine_id(void **state)
{
    (void)state;
    char p[256], q[256];
    snprintf(p, sizeof(p), "%s/etc/machine-id", tmp);
    snprintf(q, sizeof(q), "%s/valid", tmp);
    for (size_t i = 0; i < sizeof(mid_cases) / sizeof(mid_cases[0]); i++) {
        const mid_case *t = &mid_cases[i];
        unlink(p);
        if (!t->content) {
            put("valid", MID "\n");
            assert_int_equal(symlink(q, p), 0);
        } else if (*t->content) {
            put("etc/machine-id", t->content);
        }
        char out[MCG_MACHINE_ID_SIZE];
        mcg_err e = {0};
        int rc = mcg_agent_machine_id(tmp, out, &e);
        if (rc != t->rc)
            fail_msg("case %zu: rc %d, want %d (%s)", i, rc, t->rc, e.msg);
        if (!rc)
            assert_string_equal(out, MID);
        else {
            assert_string_equal(out, "");
            assert_contains(e.msg, t->msg);
            assert_contains(e.msg, "etc/machine-id");
        }
    }
    /* etc itself a symlink: refused */
    char etc[256], real[256];
    snprintf(etc, sizeof(etc), "%s/etc", tmp);
    snprintf(real, sizeof(real), "%s/realetc", tmp);
    unlink(p);
    assert_int_equal(rename(etc, real), 0);
    put("realetc/machine-id", MID "\n");
    assert_int_equal(symlink(real, etc), 0);
    char out[MCG_MACHINE_ID_SIZE];
    assert_int_equal(mcg_agent_machine_id(tmp, out, NULL), MCG_EIO);
}

static void test_host_identity(void **state)
{
    (void)state;
    put("etc/machine-id", MID "\n");
    mcg_host_identity h;
    mcg_err e = {0};
    assert_int_equal(mcg_agent_host_identity(&h, tmp, &e), 0);
    assert_string_equal(h.machine_id, MID);
    /* the running kernel's boot id, nothing else */
    char boot[64] = {0};
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    assert_non_null(f);
    assert_non_null(fgets(boot, sizeof(boot), f));
    fclose(f);
    boot[strcspn(boot, "\n")] = '\0';
    assert_string_equal(h.boot_id, boot);
    assert_true(h.hostname[0] != '\0');
}

static void test_root_is_live(void **state)
{
    (void)state;
    assert_true(mcg_agent_root_is_live("/", false));
    assert_true(mcg_agent_root_is_live("//", false));
    assert_true(mcg_agent_root_is_live("/..", false));
    assert_true(mcg_agent_root_is_live(tmp, true));
    assert_false(mcg_agent_root_is_live(tmp, false));
    assert_false(mcg_agent_root_is_live("/nonexistent-mcgit", false));
}

/* mcg_agent_open on a live fake root: refused before the state directory
 * exists unless the node is this host; NULL cluster refused. */
static void test_open_refuses(void **state)
{
    (void)state;
    put("etc/machine-id", MID "\n");
    char spec[128], statedir[128], vardir[128];
    snprintf(spec, sizeof(spec), "local:%s/cl", tmp);
    snprintf(statedir, sizeof(statedir), "%s/state", tmp);
    snprintf(vardir, sizeof(vardir), "%s/var", tmp);
    mcg_cluster *c = NULL;
    mcg_err e = {0};
    assert_int_equal(mcg_cluster_open(&c, spec, &e), 0);
    mcg_labels l = {0};
    assert_int_equal(mcg_cluster_add_node(c, "n1", &l, 1000, &e), 0);
    mcg_agent_opts o;
    memset(&o, 0, sizeof(o));
    o.node = "n1";
    o.root = tmp;
    o.live = true;
    mcg_agent *a = (mcg_agent *)&o; /* must come back NULL */
    assert_int_equal(mcg_agent_open(&a, &o, NULL, &e), MCG_EUSAGE);
    assert_null(a);
    assert_int_equal(mcg_agent_open(&a, &o, c, &e), MCG_ETRUST);
    assert_null(a);
    assert_contains(e.msg, "node n1 has no machine-id");
    struct stat st;
    assert_int_not_equal(stat(vardir, &st), 0);
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.bound_machine_id = OTHER;
    assert_int_equal(mcg_cluster_patch_node(c, "n1", &p, &e), 0);
    o.state_dir = statedir;
    assert_int_equal(mcg_agent_open(&a, &o, c, &e), MCG_ETRUST);
    assert_contains(e.msg, "bound machine-id " OTHER);
    assert_int_not_equal(stat(statedir, &st), 0);
    /* the local backend keeps a binding to another machine under its lock */
    p.bound_machine_id = MID;
    assert_int_equal(mcg_cluster_patch_node(c, "n1", &p, &e), MCG_ECONFLICT);
    p.bound_machine_id = "";
    assert_int_equal(mcg_cluster_patch_node(c, "n1", &p, &e), 0);
    p.bound_machine_id = MID;
    assert_int_equal(mcg_cluster_patch_node(c, "n1", &p, &e), 0);
    assert_int_equal(mcg_agent_open(&a, &o, c, &e), 0);
    assert_non_null(a);
    mcg_agent_free(a);
    assert_int_equal(stat(statedir, &st), 0);
    /* the binding survives a Ready patch and is read back */
    mcg_node_patch r = MCG_NODE_PATCH_INIT;
    r.ready = 0;
    assert_int_equal(mcg_cluster_patch_node(c, "n1", &r, &e), 0);
    mcg_node n;
    assert_int_equal(mcg_cluster_get_node(c, "n1", &n, &e), 0);
    assert_string_equal(n.bound_machine_id, MID);
    mcg_node_clear(&n);
    mcg_cluster_free(c);
}

/* status.nodeInfo round-trips through the Node JSON shape. */
static void test_node_json(void **state)
{
    (void)state;
    mcg_node n;
    memset(&n, 0, sizeof(n));
    n.name = (char *)"w1";
    n.machine_id = (char *)MID;
    n.boot_id = (char *)BOOT;
    n.system_uuid = (char *)"AAAA";
    n.bound_machine_id = (char *)OTHER;
    json_t *o = mcg_node_to_json(&n);
    mcg_node m;
    assert_int_equal(mcg_node_from_json(&m, o, NULL), 0);
    json_decref(o);
    assert_string_equal(m.machine_id, MID);
    assert_string_equal(m.boot_id, BOOT);
    assert_string_equal(m.system_uuid, "AAAA");
    assert_string_equal(m.bound_machine_id, OTHER);
    mcg_node_clear(&m);
    /* empty strings (a Node created without a kubelet) are no identity */
    json_error_t je;
    o = json_loads("{\"metadata\":{\"name\":\"w1\"},\"status\":{\"nodeInfo\":"
                   "{\"machineID\":\"\",\"bootID\":\"\",\"systemUUID\":\"\"}}}",
                   0, &je);
    assert_non_null(o);
    assert_int_equal(mcg_node_from_json(&m, o, NULL), 0);
    json_decref(o);
    assert_null(m.machine_id);
    assert_null(m.boot_id);
    assert_null(m.system_uuid);
    mcg_node_clear(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match_table),
        cmocka_unit_test_setup_teardown(test_machine_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_host_identity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_root_is_live, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_refuses, setup, teardown),
        cmocka_unit_test(test_node_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
