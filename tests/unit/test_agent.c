/*
 * test_agent.c — the node agent against real temp roots and the local
 * cluster backend: fresh apply, updates, units as `systemctl --root` lays
 * them out, backups, drift, --force, symlink escapes, refused configs,
 * disruption policy decisions, reboots and rollback on failure.
 *
 * Each test gets a fresh directory holding a local:DIR cluster with node
 * n1 (its root DIR/roots/n1, with etc/passwd and etc/group naming core as
 * 1000:1000) and an "outside" directory that must stay empty. A test double
 * of the cluster interface wraps the local backend to make it unreachable,
 * refuse node updates or fail a drain.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testlib.h"

#include "agent/agent.h"
#include "agent/agent_int.h"
#include "cluster/cluster_int.h" /* a test double backend */
#include "fsio/fsio.h"
#include "render/render.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

typedef struct {
    char dir[256];
    char root[320];
    char outside[320];
    mcg_cluster *c;
    mcg_agent_opts o;
} fx;

static void put(const char *root, const char *rel, const char *data, int mode)
{
    char *p = mcg_sprintf("%s/%s", root, rel);
    char *d = mcg_strdup(p);
    *strrchr(d, '/') = '\0';
    mcg_err e = {0};
    assert_int_equal(mcg_mkdirs(d, 0755, &e), 0);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(data, f);
    fclose(f);
    chmod(p, (mode_t)mode);
    free(d);
    free(p);
}

/* Contents of root/rel, or NULL when it cannot be read (caller frees). */
static char *get(const char *root, const char *rel)
{
    char *p = mcg_sprintf("%s/%s", root, rel), *data = NULL;
    size_t len;
    mcg_err e = {0};
    if (mcg_read_file(p, 1 << 20, &data, &len, &e) != 0)
        data = NULL;
    free(p);
    return data;
}

static void assert_file(const char *root, const char *rel, const char *want, int mode)
{
    char *got = get(root, rel);
    if (!got)
        fail_msg("%s: missing", rel);
    assert_string_equal(got, want);
    free(got);
    char *p = mcg_sprintf("%s/%s", root, rel);
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_mode, S_IFREG | (mode_t)mode);
    free(p);
}

static void assert_link(const char *root, const char *rel, const char *target)
{
    char *p = mcg_sprintf("%s/%s", root, rel);
    char buf[4096];
    ssize_t n = readlink(p, buf, sizeof(buf) - 1);
    if (n < 0)
        fail_msg("%s: not a symlink", rel);
    buf[n] = '\0';
    assert_string_equal(buf, target);
    free(p);
}

static bool exists(const char *root, const char *rel)
{
    char *p = mcg_sprintf("%s/%s", root, rel);
    struct stat st;
    bool ok = lstat(p, &st) == 0;
    free(p);
    return ok;
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

/* Leftover temp files anywhere below dir. */
static int count_temps(const char *dir)
{
    char *cmd = mcg_sprintf(
        "find '%s' -type f \\( -name '.mcgit-*.tmp' -o -name '.*.tmp' \\) | wc -l", dir);
    FILE *f = popen(cmd, "r");
    int n = -1;
    if (f) {
        if (fscanf(f, "%d", &n) != 1)
            n = -1;
        pclose(f);
    }
    free(cmd);
    return n;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    mcg_test_tmpdir(f->dir, "agent");
    char *spec = mcg_sprintf("local:%s/cl", f->dir);
    mcg_err e = {0};
    assert_int_equal(mcg_cluster_open(&f->c, spec, &e), 0);
    free(spec);
    mcg_labels l = {0};
    assert_int_equal(mcg_cluster_add_node(f->c, "n1", &l, 1000, &e), 0);
    snprintf(f->root, sizeof(f->root), "%s/cl/roots/n1", f->dir);
    snprintf(f->outside, sizeof(f->outside), "%s/outside", f->dir);
    assert_int_equal(mkdir(f->outside, 0755), 0);
    put(f->root, "etc/passwd",
        "root:x:0:0:root:/root:/bin/sh\ncore:x:1000:1000::/home/core:/bin/sh\n", 0644);
    put(f->root, "etc/group", "root:x:0:\nwheel:x:10:core\ncore:x:1000:\n", 0644);
    f->o.node = "n1";
    f->o.root = f->root;
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

/* Render an Ignition config (JSON text) and publish it; returns its name. */
static char *publish(fx *f, const char *ign_json)
{
    char *wrapped = mcg_sprintf("{\"config\": %s}", ign_json);
    mcg_ignition ign;
    mcg_err e = {0};
    if (mcg_ignition_parse_json(&ign, "test", wrapped, strlen(wrapped), &e) != 0)
        fail_msg("parse: %s", e.msg);
    char *spec, *name;
    size_t len;
    char hash[MCG_HASH_HEX + 1];
    assert_int_equal(mcg_render_name(&ign, "worker", &spec, &len, hash, &name, &e), 0);
    assert_int_equal(mcg_cluster_put_config(f->c, name, spec, len, &e), 0);
    mcg_ignition_free(&ign);
    free(spec);
    free(wrapped);
    return name;
}

static void set_desired(fx *f, const char *name)
{
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.desired = name;
    mcg_err e = {0};
    assert_int_equal(mcg_cluster_patch_node(f->c, "n1", &p, &e), 0);
}

static char *deploy(fx *f, const char *ign_json)
{
    char *name = publish(f, ign_json);
    set_desired(f, name);
    return name;
}

static mcg_agent_result pass(fx *f)
{
    mcg_agent *a = NULL;
    mcg_err e = {0};
    if (mcg_agent_open(&a, &f->o, f->c, &e) != 0)
        fail_msg("open: %s", e.msg);
    mcg_agent_result res;
    if (mcg_agent_run_once(&res, a, f->c, &e) != 0)
        fail_msg("run_once: %s", e.msg);
    mcg_agent_free(a);
    return res;
}

/* ------------------------------------------------ cluster test double */

/* The local backend behind switches: unreachable, node updates refused, drain failing. */
typedef struct {
    mcg_cluster base;
    mcg_cluster *inner;
    bool offline, fail_patch, fail_drain;
    int patches_refused;
} dbl;

static int d_get_node(mcg_cluster *c, const char *name, mcg_node *out, mcg_err *err)
{
    dbl *d = (dbl *)c;
    if (d->offline)
        return mcg_err_set(err, MCG_EIO, "cluster unreachable: connection refused");
    return mcg_cluster_get_node(d->inner, name, out, err);
}

static int d_patch_node(mcg_cluster *c, const char *name, const mcg_node_patch *p, mcg_err *err)
{
    dbl *d = (dbl *)c;
    if (d->offline || d->fail_patch) {
        d->patches_refused++;
        return mcg_err_set(err, MCG_EIO, "cluster unreachable: connection refused");
    }
    return mcg_cluster_patch_node(d->inner, name, p, err);
}

static int d_get_config(mcg_cluster *c, const char *name, char **spec, size_t *len, mcg_err *err)
{
    dbl *d = (dbl *)c;
    if (d->offline)
        return mcg_err_set(err, MCG_EIO, "cluster unreachable: connection refused");
    return mcg_cluster_get_config(d->inner, name, spec, len, err);
}

static int d_get_policy(mcg_cluster *c, json_t **spec, mcg_err *err)
{
    dbl *d = (dbl *)c;
    if (d->offline)
        return mcg_err_set(err, MCG_EIO, "cluster unreachable: connection refused");
    return mcg_cluster_get_policy_json(d->inner, spec, err);
}

static int d_drain(mcg_cluster *c, const char *name, mcg_err *err)
{
    dbl *d = (dbl *)c;
    if (d->fail_drain)
        return mcg_err_set(err, MCG_EIO, "evicting pods of %s: timed out", name);
    return mcg_cluster_drain(d->inner, name, err);
}

static void d_free(mcg_cluster *c)
{
    free(c);
}

static const mcg_cluster_ops dbl_ops = {
    .get_node = d_get_node,
    .patch_node = d_patch_node,
    .get_config = d_get_config,
    .get_policy = d_get_policy,
    .drain = d_drain,
    .free = d_free,
};

static dbl *dbl_new(fx *f)
{
    dbl *d = calloc(1, sizeof(*d));
    d->base.ops = &dbl_ops;
    d->base.spec = (char *)"double";
    d->inner = f->c;
    return d;
}

static mcg_agent_result pass_c(fx *f, mcg_cluster *c)
{
    mcg_agent *a = NULL;
    mcg_err e = {0};
    if (mcg_agent_open(&a, &f->o, c, &e) != 0)
        fail_msg("open: %s", e.msg);
    mcg_agent_result res;
    if (mcg_agent_run_once(&res, a, c, &e) != 0)
        fail_msg("run_once: %s", e.msg);
    mcg_agent_free(a);
    assert_null(strchr(res.reason, '\n'));
    return res;
}

static mcg_node node(fx *f)
{
    mcg_node n;
    mcg_err e = {0};
    assert_int_equal(mcg_cluster_get_node(f->c, "n1", &n, &e), 0);
    return n;
}

static void assert_node(fx *f, const char *state, const char *current, const char *reason_part)
{
    mcg_node n = node(f);
    assert_non_null(n.state);
    assert_string_equal(n.state, state);
    if (current) {
        assert_non_null(n.current);
        assert_string_equal(n.current, current);
    }
    if (reason_part) {
        if (!n.reason || !strstr(n.reason, reason_part))
            fail_msg("reason '%s' lacks '%s'", n.reason ? n.reason : "(none)", reason_part);
    } else {
        assert_null(n.reason);
    }
    assert_false(n.unschedulable);
    mcg_node_clear(&n);
}

#define UNIT_A                                                                                     \
    "[Unit]\\nDescription=a\\n[Service]\\nExecStart=/bin/true\\n[Install]\\n"                      \
    "WantedBy=multi-user.target\\nRequiredBy=foo.target\\nAlias=a-alias.service\\n"

/* ------------------------------------------------------------ tests */

static void test_fresh_apply(void **state)
{
    fx *f = *state;
    mode_t um = umask(022);
    char *name =
        deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},"
                  "\"passwd\":{\"users\":[{\"name\":\"core\",\"sshAuthorizedKeys\":"
                  "[\"ssh-ed25519 AAAAC3Nza k1\",\"ssh-ed25519 AAAAC3Nzb k2\"]}]},"
                  "\"storage\":{\"files\":["
                  "{\"path\":\"/etc/a.conf\",\"contents\":{\"source\":\"data:,hello%0A\"}},"
                  "{\"path\":\"/etc/deep/er/b.conf\",\"mode\":384,\"user\":{\"name\":\"core\"},"
                  "\"group\":{\"name\":\"wheel\"},\"contents\":{\"source\":\"data:;base64,Yg==\"}},"
                  "{\"path\":\"/etc/empty\"},"
                  "{\"path\":\"/etc/gw\",\"mode\":436},"
                  "{\"path\":\"/etc/x\",\"mode\":493,\"group\":{\"id\":10}}],"
                  "\"directories\":[{\"path\":\"/var/d\",\"mode\":448}],"
                  "\"links\":[{\"path\":\"/etc/l\",\"target\":\"/etc/a.conf\"}]}}");
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_string_equal(r.config, name);
    assert_true(r.applied);
    assert_file(f->root, "etc/a.conf", "hello\n", 0644);
    assert_file(f->root, "etc/deep/er/b.conf", "b", 0600);
    assert_file(f->root, "etc/empty", "", 0644);
    assert_file(f->root, "etc/gw", "", 0664); /* though the umask cuts 020 */
    assert_file(f->root, "etc/x", "", 0755);
    assert_link(f->root, "etc/l", "/etc/a.conf");
    struct stat st;
    char *p = mcg_sprintf("%s/etc/deep/er/b.conf", f->root);
    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_uid, 1000);
    assert_int_equal(st.st_gid, 10);
    free(p);
    p = mcg_sprintf("%s/etc/x", f->root);
    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_gid, 10);
    free(p);
    p = mcg_sprintf("%s/var/d", f->root);
    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_mode, S_IFDIR | 0700);
    free(p);
    assert_file(f->root, "home/core/.ssh/authorized_keys.d/ignition",
                "ssh-ed25519 AAAAC3Nza k1\nssh-ed25519 AAAAC3Nzb k2\n", 0600);
    p = mcg_sprintf("%s/home/core/.ssh/authorized_keys.d", f->root);
    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_mode, S_IFDIR | 0700);
    assert_int_equal(st.st_uid, 1000);
    free(p);
    assert_node(f, "Done", name, NULL);
    /* the state dir keeps the current config, no journal, no temp files */
    char *cur = get(f->root, "var/lib/mcgit/current");
    assert_non_null(cur);
    assert_contains(cur, name);
    free(cur);
    assert_false(exists(f->root, "var/lib/mcgit/journal.json"));
    assert_int_equal(count_temps(f->root), 0);
    /* a second pass changes nothing and stays Done */
    r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_false(r.applied);
    umask(um);
    free(name);
}

static void test_update(void **state)
{
    fx *f = *state;
    put(f->root, "etc/pre.conf", "original\n", 0640);
    put(f->root, "etc/pre2.conf", "original2\n", 0600);
    char *n1 =
        deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                  "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"data:,a1\"}},"
                  "{\"path\":\"/etc/b\",\"contents\":{\"source\":\"data:,b1\"}},"
                  "{\"path\":\"/etc/c\",\"contents\":{\"source\":\"data:,c1\"}},"
                  "{\"path\":\"/etc/pre.conf\",\"contents\":{\"source\":\"data:,managed\"}}]}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    assert_file(f->root, "etc/pre.conf", "managed", 0644);
    char *n2 =
        deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                  "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"data:,a2\"}},"
                  "{\"path\":\"/etc/b\",\"contents\":{\"source\":\"data:,b1\"}},"
                  "{\"path\":\"/etc/d\",\"mode\":420,\"contents\":{\"source\":\"data:,d2\"}},"
                  "{\"path\":\"/etc/pre2.conf\",\"contents\":{\"source\":\"data:,m2\"}}]}}");
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_string_equal(r.config, n2);
    assert_file(f->root, "etc/a", "a2", 0644);
    assert_file(f->root, "etc/b", "b1", 0644);
    assert_false(exists(f->root, "etc/c")); /* removed: mcgit created it */
    assert_file(f->root, "etc/d", "d2", 0644);
    assert_file(f->root, "etc/pre.conf", "original\n", 0640); /* backup restored */
    assert_file(f->root, "etc/pre2.conf", "m2", 0644);
    assert_node(f, "Done", n2, NULL);
    /* back to n1: pre2 restored, pre managed again */
    set_desired(f, n1);
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    assert_file(f->root, "etc/pre2.conf", "original2\n", 0600);
    assert_file(f->root, "etc/pre.conf", "managed", 0644);
    assert_file(f->root, "etc/c", "c1", 0644);
    assert_false(exists(f->root, "etc/d"));
    /* an empty config gives everything back */
    char *n3 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    assert_file(f->root, "etc/pre.conf", "original\n", 0640);
    assert_false(exists(f->root, "etc/a"));
    assert_int_equal(count_entries(f->root), 2); /* etc, var */
    free(n1);
    free(n2);
    free(n3);
}

/* Symlinks under etc/systemd/system as "path -> target" lines, sorted. */
static char *link_layout(const char *root)
{
    char *cmd = mcg_sprintf(
        "cd '%s' && find etc/systemd/system -type l -printf '%%p -> %%l\\n' | sort", root);
    FILE *p = popen(cmd, "r");
    mcg_buf b = MCG_BUF_INIT;
    char line[1024];
    while (p && fgets(line, sizeof(line), p))
        mcg_buf_puts(&b, line);
    if (p)
        pclose(p);
    free(cmd);
    return mcg_buf_detach(&b, NULL);
}

static void test_units(void **state)
{
    fx *f = *state;
    put(f->root, "usr/lib/systemd/system/sys.service",
        "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n", 0644);
    put(f->root, "usr/lib/systemd/system/t@.service",
        "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=timers.target\nDefaultInstance=x\n",
        0644);
    char *n1 = deploy(
        f,
        "{\"ignition\":{\"version\":\"3.4.0\"},\"systemd\":{\"units\":["
        "{\"name\":\"a.service\",\"enabled\":true,\"contents\":\"" UNIT_A "\","
        "\"dropins\":[{\"name\":\"10-env.conf\",\"contents\":\"[Service]\\nEnvironment=X=1\\n\"}]},"
        "{\"name\":\"sys.service\",\"enabled\":true},"
        "{\"name\":\"t@.service\",\"enabled\":true},"
        "{\"name\":\"m.service\",\"mask\":true}]}}");
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_file(f->root, "etc/systemd/system/a.service",
                "[Unit]\nDescription=a\n[Service]\nExecStart=/bin/true\n[Install]\n"
                "WantedBy=multi-user.target\nRequiredBy=foo.target\nAlias=a-alias.service\n",
                0644);
    assert_file(f->root, "etc/systemd/system/a.service.d/10-env.conf",
                "[Service]\nEnvironment=X=1\n", 0644);
    char *got = link_layout(f->root);
    assert_string_equal(
        got,
        "etc/systemd/system/a-alias.service -> /etc/systemd/system/a.service\n"
        "etc/systemd/system/foo.target.requires/a.service -> /etc/systemd/system/a.service\n"
        "etc/systemd/system/m.service -> /dev/null\n"
        "etc/systemd/system/multi-user.target.wants/a.service -> /etc/systemd/system/a.service\n"
        "etc/systemd/system/multi-user.target.wants/sys.service -> "
        "/usr/lib/systemd/system/sys.service\n"
        "etc/systemd/system/timers.target.wants/t@x.service -> "
        "/usr/lib/systemd/system/t@.service\n");
    /* the same as systemctl --root makes, when systemctl is here */
    if (access("/usr/bin/systemctl", X_OK) == 0 || access("/bin/systemctl", X_OK) == 0) {
        char *ref = mcg_sprintf("%s/ref", f->dir);
        char *a = get(f->root, "etc/systemd/system/a.service");
        put(ref, "etc/systemd/system/a.service", a, 0644);
        put(ref, "usr/lib/systemd/system/sys.service",
            "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n", 0644);
        put(ref, "usr/lib/systemd/system/t@.service",
            "[Service]\nExecStart=/bin/"
            "true\n[Install]\nWantedBy=timers.target\nDefaultInstance=x\n",
            0644);
        char *cmd =
            mcg_sprintf("systemctl --root='%s' enable a.service sys.service t@.service "
                        ">/dev/null 2>&1 && systemctl --root='%s' mask m.service >/dev/null 2>&1",
                        ref, ref);
        assert_int_equal(system(cmd), 0);
        char *want = link_layout(ref);
        assert_string_equal(got, want);
        free(want);
        free(cmd);
        free(a);
        free(ref);
    }
    free(got);
    /* disable a, unmask m (now with contents), drop the drop-in and sys */
    char *n2 = deploy(
        f, "{\"ignition\":{\"version\":\"3.4.0\"},\"systemd\":{\"units\":["
           "{\"name\":\"a.service\",\"enabled\":false,\"contents\":\"" UNIT_A "\"},"
           "{\"name\":\"t@.service\",\"enabled\":true},"
           "{\"name\":\"m.service\",\"contents\":\"[Service]\\nExecStart=/bin/true\\n\"}]}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    got = link_layout(f->root);
    assert_string_equal(got, "etc/systemd/system/timers.target.wants/t@x.service -> "
                             "/usr/lib/systemd/system/t@.service\n");
    free(got);
    assert_false(exists(f->root, "etc/systemd/system/a.service.d/10-env.conf"));
    /* the directories mcgit made for the drop-in and the links went with them */
    assert_false(exists(f->root, "etc/systemd/system/a.service.d"));
    assert_false(exists(f->root, "etc/systemd/system/multi-user.target.wants"));
    assert_false(exists(f->root, "etc/systemd/system/foo.target.requires"));
    assert_true(exists(f->root, "etc/systemd/system/timers.target.wants"));
    assert_file(f->root, "etc/systemd/system/m.service", "[Service]\nExecStart=/bin/true\n", 0644);
    /* an enablement link removed by hand is drift */
    char *p = mcg_sprintf("%s/etc/systemd/system/timers.target.wants/t@x.service", f->root);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(pass(f).state, MCG_AGENT_DEGRADED);
    assert_node(f, "Degraded", n2, "timers.target.wants/t@x.service: missing");
    assert_int_equal(symlink("/usr/lib/systemd/system/t@.service", p), 0);
    /* a link that a disabled unit must not have is drift too */
    char *q = mcg_sprintf("%s/etc/systemd/system/multi-user.target.wants/a.service", f->root);
    char *qd = mcg_sprintf("%s/etc/systemd/system/multi-user.target.wants", f->root);
    assert_int_equal(mkdir(qd, 0755), 0);
    free(qd);
    assert_int_equal(symlink("/etc/systemd/system/a.service", q), 0);
    assert_int_equal(pass(f).state, MCG_AGENT_DEGRADED);
    assert_node(f, "Degraded", n2, "multi-user.target.wants/a.service: present");
    assert_int_equal(unlink(q), 0);
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    assert_node(f, "Done", n2, NULL);
    free(p);
    free(q);
    free(n1);
    free(n2);
}

/* The whole file root/rel, its length in *n. */
static char *get_n(const char *root, const char *rel, size_t *n)
{
    char *p = mcg_sprintf("%s/%s", root, rel), *data = NULL;
    mcg_err e = {0};
    if (mcg_read_file(p, 1u << 24, &data, n, &e) != 0)
        fail_msg("%s", e.msg);
    free(p);
    return data;
}

/*
 * Large base64 and gzip'd files arrive whole, percent-encoded ones too; the
 * drift check compares them exactly (a change in the last byte is drift),
 * and the same bytes written another way are not a change.
 */
static void test_streamed_contents(void **state)
{
    fx *f = *state;
    size_t n = 200000;
    unsigned char *big = mcg_malloc(n), *text = mcg_malloc(n);
    for (size_t i = 0; i < n; i++) {
        big[i] = (unsigned char)(i * 2654435761u >> 11);
        text[i] = (unsigned char)("streamed\n"[i % 9]);
    }
    mcg_buf b64 = MCG_BUF_INIT, gzb = MCG_BUF_INIT, pct = MCG_BUF_INIT;
    mcg_base64_encode(big, n, &b64);
    mcg_buf z = mcg_test_gzip(text, n);
    mcg_base64_encode((unsigned char *)z.ptr, z.len, &gzb);
    mcg_dataurl_encode(big, 70000, &pct);
    char *cfg = mcg_sprintf("{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                            "{\"path\":\"/etc/big\",\"contents\":{\"source\":\"data:;base64,%s\"}},"
                            "{\"path\":\"/etc/gz\",\"contents\":{\"source\":\"data:;base64,%s\","
                            "\"compression\":\"gzip\"}},"
                            "{\"path\":\"/etc/pct\",\"contents\":{\"source\":\"%s\"}}]}}",
                            b64.ptr, gzb.ptr, pct.ptr);
    free(deploy(f, cfg));
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    size_t len;
    char *got = get_n(f->root, "etc/big", &len);
    assert_int_equal(len, n);
    assert_memory_equal(got, big, n);
    free(got);
    got = get_n(f->root, "etc/gz", &len);
    assert_int_equal(len, n);
    assert_memory_equal(got, text, n);
    free(got);
    got = get_n(f->root, "etc/pct", &len);
    assert_int_equal(len, 70000);
    assert_memory_equal(got, big, 70000);
    free(got);
    /* no drift; then the last byte of the gzip'd file changed is drift */
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    char *p = mcg_sprintf("%s/etc/gz", f->root);
    FILE *fp = fopen(p, "r+b");
    assert_non_null(fp);
    fseek(fp, -1, SEEK_END);
    fputc('X', fp);
    fclose(fp);
    free(p);
    r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_non_null(strstr(r.reason, "/etc/gz: content differs"));

    /* entries compared across encodings */
    mcg_buf plain64 = MCG_BUF_INIT, text64 = MCG_BUF_INIT;
    mcg_base64_encode(big, 70000, &plain64);
    mcg_base64_encode(text, n, &text64);
    text[n - 1] ^= 1;
    mcg_buf z2 = mcg_test_gzip(text, n), gz2 = MCG_BUF_INIT;
    mcg_base64_encode((unsigned char *)z2.ptr, z2.len, &gz2);
    const char *fmt = "{\"config\":{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                      "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"%s%s\"%s}}]}}}";
    char *specs[] = {
        mcg_sprintf(fmt, "", pct.ptr, ""),                                       /* 0 percent */
        mcg_sprintf(fmt, "data:;base64,", plain64.ptr, ""),                      /* 1 same bytes */
        mcg_sprintf(fmt, "data:;base64,", gzb.ptr, ",\"compression\":\"gzip\""), /* 2 text */
        mcg_sprintf(fmt, "data:;base64,", text64.ptr, ""),                       /* 3 same as 2 */
        mcg_sprintf(fmt, "data:;base64,", gz2.ptr, ",\"compression\":\"gzip\""), /* 4 last byte */
    };
    mcg_acfg *c[5];
    mcg_sroot root;
    mcg_err e = {0};
    assert_int_equal(mcg_sroot_open(&root, f->root, &e), 0);
    for (int i = 0; i < 5; i++) {
        if (mcg_acfg_load(&c[i], &root, "s", specs[i], strlen(specs[i]), false, &e) != 0)
            fail_msg("spec %d: %s", i, e.msg);
        assert_non_null(c[i]->ents[0].data);
    }
    assert_true(mcg_ent_equal(&c[0]->ents[0], &c[1]->ents[0]));
    assert_true(mcg_ent_equal(&c[1]->ents[0], &c[0]->ents[0]));
    assert_true(mcg_ent_equal(&c[2]->ents[0], &c[3]->ents[0]));
    assert_true(mcg_ent_equal(&c[2]->ents[0], &c[2]->ents[0]));
    assert_false(mcg_ent_equal(&c[2]->ents[0], &c[4]->ents[0]));
    assert_false(mcg_ent_equal(&c[3]->ents[0], &c[4]->ents[0]));
    assert_false(mcg_ent_equal(&c[0]->ents[0], &c[2]->ents[0]));
    for (int i = 0; i < 5; i++) {
        mcg_acfg_free(c[i]);
        free(specs[i]);
    }
    mcg_sroot_close(&root);
    mcg_buf_free(&plain64);
    mcg_buf_free(&text64);
    mcg_buf_free(&z2);
    mcg_buf_free(&gz2);
    mcg_buf_free(&b64);
    mcg_buf_free(&gzb);
    mcg_buf_free(&pct);
    mcg_buf_free(&z);
    free(cfg);
    free(big);
    free(text);
}

/* A data: URL bad at its very end is refused before anything is written. */
static void test_streamed_bad_tail(void **state)
{
    fx *f = *state;
    mcg_buf b64 = MCG_BUF_INIT;
    unsigned char *zeros = mcg_calloc(90000, 1);
    mcg_base64_encode(zeros, 90000, &b64);
    free(zeros);
    b64.ptr[b64.len - 1] = '!';
    char *spec =
        mcg_sprintf("{\"config\":{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                    "{\"path\":\"/etc/first\",\"contents\":{\"source\":\"data:,one\"}},"
                    "{\"path\":\"/etc/z/bad\",\"contents\":{\"source\":\"data:;base64,%s\"}}]}}}",
                    b64.ptr);
    unsigned char d[MCG_SHA256_LEN];
    char hex[2 * MCG_SHA256_LEN + 1];
    mcg_sha256(spec, strlen(spec), d);
    mcg_hex(d, sizeof(d), hex);
    hex[MCG_HASH_HEX] = '\0';
    char *name = mcg_sprintf("rendered-worker-%s", hex);
    mcg_agent *a = NULL;
    mcg_err e = {0};
    assert_int_equal(mcg_agent_open(&a, &f->o, NULL, &e), 0);
    mcg_agent_result r;
    assert_int_equal(mcg_agent_apply(&r, a, name, spec, strlen(spec), &e), 0);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_non_null(strstr(r.reason, "invalid base64: unexpected character at 119999"));
    assert_false(exists(f->root, "etc/first"));
    assert_false(exists(f->root, "etc/z"));
    assert_int_equal(count_temps(f->root), 0);
    mcg_agent_free(a);
    mcg_buf_free(&b64);
    free(spec);
    free(name);
}

static void test_drift(void **state)
{
    fx *f = *state;
    char *n1 =
        deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                  "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"data:,aaa\"}},"
                  "{\"path\":\"/etc/b\",\"mode\":384,\"contents\":{\"source\":\"data:,bbb\"}},"
                  "{\"path\":\"/etc/c\",\"contents\":{\"source\":\"data:,ccc\"}}]},"
                  "\"systemd\":{\"units\":[{\"name\":\"m.service\",\"mask\":true}]}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    put(f->root, "etc/a", "aab", 0644); /* same size, other bytes */
    char *pb = mcg_sprintf("%s/etc/b", f->root);
    chmod(pb, 0644);
    char *pc = mcg_sprintf("%s/etc/c", f->root);
    unlink(pc);
    char *pm = mcg_sprintf("%s/etc/systemd/system/m.service", f->root);
    unlink(pm);
    put(f->root, "etc/systemd/system/m.service", "x", 0644);
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_contains(r.reason, "/etc/a: content differs");
    assert_contains(r.reason, "/etc/b: mode file 0644, want file 0600");
    assert_contains(r.reason, "/etc/c: missing");
    assert_contains(r.reason, "/etc/systemd/system/m.service: not a symbolic link");
    assert_null(strchr(r.reason, '\n'));
    assert_node(f, "Degraded", n1, "/etc/a: content differs");
    /* nothing was overwritten */
    assert_file(f->root, "etc/a", "aab", 0644);
    assert_false(exists(f->root, "etc/c"));
    /* put back by hand: Done again by itself */
    put(f->root, "etc/a", "aaa", 0644);
    chmod(pb, 0600);
    put(f->root, "etc/c", "ccc", 0644);
    unlink(pm);
    assert_int_equal(symlink("/dev/null", pm), 0);
    r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_node(f, "Done", n1, NULL);
    /* a type change (a directory where a file belongs) is drift */
    unlink(pc);
    assert_int_equal(mkdir(pc, 0644), 0);
    r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_contains(r.reason, "/etc/c:");
    rmdir(pc);
    put(f->root, "etc/c", "ccc", 0644);
    /* offline: drift is still checked on the kept copy */
    put(f->root, "etc/a", "zzz", 0644);
    mcg_agent *a = NULL;
    mcg_err e = {0};
    assert_int_equal(mcg_agent_open(&a, &f->o, NULL, &e), 0);
    assert_int_equal(mcg_agent_check_drift(&r, a, &e), 0);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_contains(r.reason, "/etc/a: content differs");
    mcg_agent_free(a);
    free(pb);
    free(pc);
    free(pm);
    free(n1);
}

static void test_force(void **state)
{
    fx *f = *state;
    char *n1 =
        deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                  "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"data:,aaa\"}},"
                  "{\"path\":\"/etc/b\",\"mode\":384,\"contents\":{\"source\":\"data:,bbb\"}}]}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    put(f->root, "etc/a", "changed by hand", 0600);
    char *pb = mcg_sprintf("%s/etc/b", f->root);
    unlink(pb);
    assert_int_equal(pass(f).state, MCG_AGENT_DEGRADED);
    f->o.force = true;
    mcg_agent_result r = pass(f);
    f->o.force = false;
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_false(r.rebooted); /* same config: nothing changed, no actions */
    assert_file(f->root, "etc/a", "aaa", 0644);
    assert_file(f->root, "etc/b", "bbb", 0600);
    assert_node(f, "Done", n1, NULL);
    free(pb);
    free(n1);
}

/* A config that writes one harmless file and one through the trap. */
static void escape_case(fx *f, const char *trap_path, const char *want_reason)
{
    char *json = mcg_sprintf("{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                             "{\"path\":\"/aaa/ok.conf\",\"contents\":{\"source\":\"data:,ok\"}},"
                             "{\"path\":\"%s\",\"contents\":{\"source\":\"data:,evil\"}}]}}",
                             trap_path);
    char *n = deploy(f, json);
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    if (!strstr(r.reason, want_reason))
        fail_msg("reason '%s' lacks '%s'", r.reason, want_reason);
    assert_int_equal(count_entries(f->outside), 0);
    assert_false(exists(f->root, "aaa/ok.conf")); /* nothing written */
    mcg_node nd = node(f);
    assert_string_equal(nd.state, "Degraded");
    assert_null(nd.current);
    mcg_node_clear(&nd);
    free(n);
    free(json);
}

static void test_symlink_etc(void **state)
{
    fx *f = *state;
    char *etc = mcg_sprintf("%s/etc", f->root);
    mcg_test_rm_rf(etc);
    assert_int_equal(symlink(f->outside, etc), 0);
    escape_case(f, "/etc/foo.conf", "/etc: is a symbolic link");
    /* also through the absolute-looking name: the root's etc, not the host's */
    free(etc);
}

static void test_symlink_deeper(void **state)
{
    fx *f = *state;
    char *x = mcg_sprintf("%s/etc/x", f->root), *y = mcg_sprintf("%s/etc/x/y", f->root);
    assert_int_equal(mkdir(x, 0755), 0);
    assert_int_equal(symlink(f->outside, y), 0);
    escape_case(f, "/etc/x/y/z/deep.conf", "/etc/x/y: is a symbolic link");
    /* a relative symlink climbing out is refused the same way */
    unlink(y);
    assert_int_equal(symlink("../../../../../outside", y), 0);
    escape_case(f, "/etc/x/y/z2.conf", "/etc/x/y: is a symbolic link");
    free(x);
    free(y);
}

static void test_symlink_target(void **state)
{
    fx *f = *state;
    char *t = mcg_sprintf("%s/t.conf", f->outside), *l = mcg_sprintf("%s/etc/t.conf", f->root);
    assert_int_equal(symlink(t, l), 0);
    escape_case(f, "/etc/t.conf", "/etc/t.conf: is a symbolic link");
    free(t);
    free(l);
}

static void test_bad_hash(void **state)
{
    fx *f = *state;
    char *good = publish(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                            "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"data:,a\"}}]}}");
    /* the same name, other bytes: altered in the store */
    char *path = mcg_sprintf("%s/cl/configs/%s.json", f->dir, good);
    char *spec = mcg_sprintf("{\n  \"config\": {\n    \"ignition\": {\n      \"version\": "
                             "\"3.4.0\"\n    },\n    \"storage\": {\"files\": [{\"path\": "
                             "\"/etc/a\", \"contents\": {\"source\": \"data:,evil\"}}]}\n  }\n}\n");
    mcg_err e = {0};
    assert_int_equal(mcg_write_file_atomic(path, spec, strlen(spec), 0644, &e), 0);
    set_desired(f, good);
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    char *want = mcg_sprintf("rendered config %s does not match its hash", good);
    assert_string_equal(r.reason, want);
    assert_node(f, "Degraded", NULL, want);
    assert_false(exists(f->root, "etc/a"));
    /* a config that is not published at all */
    set_desired(f, "rendered-worker-00000000000000000000000000000000");
    r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_contains(r.reason, "not published");
    free(want);
    free(spec);
    free(path);
    free(good);
}

static void test_missing_user(void **state)
{
    fx *f = *state;
    char *n = deploy(
        f,
        "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
        "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"data:,a\"}},"
        "{\"path\":\"/etc/b\",\"user\":{\"name\":\"x\"},\"contents\":{\"source\":\"data:,b\"}}]}}");
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_contains(r.reason, "user 'x' not found in /etc/passwd");
    assert_false(exists(f->root, "etc/a"));
    assert_node(f, "Degraded", NULL, "user 'x' not found in /etc/passwd");
    /* core missing with SSH keys: skipped, as MCO's daemon does (a log line) */
    put(f->root, "etc/passwd", "root:x:0:0::/root:/bin/sh\n", 0644);
    char *n2 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"passwd\":{\"users\":[{\"name\":"
                         "\"core\",\"sshAuthorizedKeys\":[\"ssh-ed25519 AAAA k\"]}]}}");
    r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_false(exists(f->root, "home/core"));
    free(n);
    free(n2);
}

static void test_rollback_on_failure(void **state)
{
    fx *f = *state;
    put(f->root, "etc/pre", "orig", 0600);
    char *n1 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                         "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"data:,one\"}}]}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    /* the hard link's target is missing: linking fails after the files are written */
    char *n2 =
        deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                  "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"data:,two\"}},"
                  "{\"path\":\"/etc/pre\",\"contents\":{\"source\":\"data:,managed\"}},"
                  "{\"path\":\"/etc/b\",\"contents\":{\"source\":\"data:,new\"}}],"
                  "\"links\":[{\"path\":\"/etc/h\",\"hard\":true,\"target\":\"/etc/missing\"}]}}");
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_contains(r.reason, "/etc/h");
    assert_string_equal(r.config, n1);
    assert_file(f->root, "etc/a", "one", 0644);
    assert_file(f->root, "etc/pre", "orig", 0600);
    assert_false(exists(f->root, "etc/b"));
    assert_false(exists(f->root, "etc/h"));
    assert_int_equal(count_temps(f->root), 0);
    assert_node(f, "Degraded", n1, "applying");
    /* the current config is still n1 and clean */
    set_desired(f, n1);
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    assert_node(f, "Done", n1, NULL);
    free(n1);
    free(n2);
}

static void test_policy(void **state)
{
    fx *f = *state;
    mcg_err e = {0};
    json_error_t je;
    json_t *spec = json_loads(
        "{\"nodeDisruptionPolicy\":{\"files\":["
        "{\"path\":\"/etc/"
        "chrony.conf\",\"actions\":[{\"type\":\"Restart\",\"restart\":{\"serviceName\":\"chronyd."
        "service\"}}]},"
        "{\"path\":\"/etc/"
        "containers\",\"actions\":[{\"type\":\"Reload\",\"reload\":{\"serviceName\":\"crio."
        "service\"}}]},"
        "{\"path\":\"/etc/containers/registries.d\",\"actions\":[{\"type\":\"None\"}]},"
        "{\"path\":\"/etc/drain\",\"actions\":[{\"type\":\"Drain\"},{\"type\":\"DaemonReload\"}]}],"
        "\"units\":[{\"name\":\"x.service\",\"actions\":[{\"type\":\"None\"}]}]}}",
        0, &je);
    assert_non_null(spec);
    assert_int_equal(mcg_cluster_put_policy(f->c, spec, &e), 0);
    json_decref(spec);
    mcg_disruption_policy pol;
    assert_int_equal(mcg_cluster_get_policy(f->c, &pol, &e), 0);

    struct {
        const char *old_json, *new_json, *want;
    } cases[] = {
        {"", "\"storage\":{\"files\":[{\"path\":\"/etc/chrony.conf\"}]}",
         "Restart chronyd.service"},
        {"", "\"storage\":{\"files\":[{\"path\":\"/etc/containers/a/b.conf\"}]}",
         "Reload crio.service"},
        {"", "\"storage\":{\"files\":[{\"path\":\"/etc/containers/registries.d/x\"}]}", "None"},
        {"", "\"storage\":{\"files\":[{\"path\":\"/etc/containersX\"}]}", "Reboot"},
        {"", "\"storage\":{\"files\":[{\"path\":\"/etc/other\"}]}", "Reboot"},
        {"", "\"storage\":{\"files\":[{\"path\":\"/etc/drain\"},{\"path\":\"/etc/chrony.conf\"}]}",
         "Drain, DaemonReload, Restart chronyd.service"},
        {"", "\"storage\":{\"files\":[{\"path\":\"/etc/other\"},{\"path\":\"/etc/chrony.conf\"}]}",
         "Reboot"},
        {"",
         "\"passwd\":{\"users\":[{\"name\":\"core\",\"sshAuthorizedKeys\":[\"ssh-ed25519 AAAA "
         "k\"]}]}",
         "None"},
        {"", "\"systemd\":{\"units\":[{\"name\":\"x.service\",\"contents\":\"[Unit]\"}]}", "None"},
        {"", "\"systemd\":{\"units\":[{\"name\":\"y.service\",\"contents\":\"[Unit]\"}]}",
         "Reboot"},
        {"\"storage\":{\"files\":[{\"path\":\"/etc/chrony.conf\"}]}", "",
         "Restart chronyd.service"},
        {"\"storage\":{\"files\":[{\"path\":\"/etc/other\"}]}",
         "\"storage\":{\"files\":[{\"path\":\"/etc/other\"}]}", "None"},
    };
    mcg_sroot root;
    assert_int_equal(mcg_sroot_open(&root, f->root, &e), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        mcg_acfg *o = NULL, *n = NULL;
        char *os = mcg_sprintf("{\"config\":{\"ignition\":{\"version\":\"3.4.0\"}%s%s}}",
                               *cases[i].old_json ? "," : "", cases[i].old_json);
        char *ns = mcg_sprintf("{\"config\":{\"ignition\":{\"version\":\"3.4.0\"}%s%s}}",
                               *cases[i].new_json ? "," : "", cases[i].new_json);
        assert_int_equal(mcg_acfg_load(&o, &root, "old", os, strlen(os), false, &e), 0);
        assert_int_equal(mcg_acfg_load(&n, &root, "new", ns, strlen(ns), false, &e), 0);
        free(os);
        free(ns);
        mcg_disruption act;
        mcg_plan_decide(&act, o, n, &pol);
        char *got = mcg_disruption_str(&act);
        if (strcmp(got, cases[i].want))
            fail_msg("case %zu: got '%s', want '%s'", i, got, cases[i].want);
        free(got);
        mcg_disruption_free(&act);
        /* with no policy: Reboot for files and units, None for SSH keys,
         * MCO's built-in rules (registries.d: Reload crio.service) */
        mcg_plan_decide(&act, o, n, NULL);
        got = mcg_disruption_str(&act);
        bool ssh = strstr(cases[i].new_json, "sshAuthorized") != NULL;
        bool nochange = !strcmp(cases[i].old_json, cases[i].new_json);
        bool builtin = strstr(cases[i].new_json, "/etc/containers/registries.d/") != NULL;
        if (!*cases[i].new_json)
            ssh = false;
        assert_string_equal(got, builtin           ? "Reload crio.service"
                                 : ssh || nochange ? "None"
                                                   : "Reboot");
        free(got);
        mcg_disruption_free(&act);
        mcg_acfg_free(o);
        mcg_acfg_free(n);
    }
    mcg_sroot_close(&root);
    mcg_policy_free(&pol);
}

static void test_actions_live(void **state)
{
    fx *f = *state;
    mcg_err e = {0};
    json_error_t je;
    json_t *spec = json_loads("{\"nodeDisruptionPolicy\":{\"files\":["
                              "{\"path\":\"/etc/"
                              "chrony.conf\",\"actions\":[{\"type\":\"Drain\"},{\"type\":"
                              "\"Restart\",\"restart\":{\"serviceName\":\"chronyd.service\"}}]}]}}",
                              0, &je);
    assert_int_equal(mcg_cluster_put_policy(f->c, spec, &e), 0);
    json_decref(spec);
    char *log = mcg_sprintf("%s/systemctl.log", f->dir);
    char *sc = mcg_sprintf("echo >>'%s'", log);
    char *bootf = mcg_sprintf("%s/boot_id", f->dir);
    put(f->dir, "boot_id", "boot-1\n", 0644);
    setenv("MCGIT_BOOT_ID_FILE", bootf, 1);
    /* live: the fake root is proven to be node n1 by its bound machine-id */
    put(f->root, "etc/machine-id", "0123456789abcdef0123456789abcdef\n", 0644);
    mcg_node_patch bp = MCG_NODE_PATCH_INIT;
    bp.bound_machine_id = "0123456789abcdef0123456789abcdef";
    assert_int_equal(mcg_cluster_patch_node(f->c, "n1", &bp, &e), 0);
    f->o.live = true;
    f->o.systemctl = sc;
    char *reb = mcg_sprintf("echo reboot >>'%s'", log);
    f->o.reboot_command = reb;
    /* a Restart action runs systemctl; Drain cordons and uncordons */
    char *n1 =
        deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                  "{\"path\":\"/etc/chrony.conf\",\"contents\":{\"source\":\"data:,s1\"}}]}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    char *l = get(f->dir, "systemctl.log");
    assert_string_equal(l, "restart chronyd.service\n");
    free(l);
    assert_node(f, "Done", n1, NULL);
    /* an uncovered file: Reboot; Working until the boot id changes */
    char *n2 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                         "{\"path\":\"/etc/chrony.conf\",\"contents\":{\"source\":\"data:,s1\"}},"
                         "{\"path\":\"/etc/other\",\"contents\":{\"source\":\"data:,o\"}}]}}");
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_WORKING);
    l = get(f->dir, "systemctl.log");
    assert_string_equal(l, "restart chronyd.service\nreboot\n");
    free(l);
    mcg_node nd = node(f);
    assert_string_equal(nd.state, "Working");
    assert_true(nd.unschedulable);
    assert_string_equal(nd.current, n1);
    mcg_node_clear(&nd);
    /* the machine rebooted */
    put(f->dir, "boot_id", "boot-2\n", 0644);
    r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_true(r.rebooted);
    assert_node(f, "Done", n2, NULL);
    l = get(f->dir, "systemctl.log");
    assert_string_equal(l, "restart chronyd.service\nreboot\n"); /* no second reboot */
    free(l);
    unsetenv("MCGIT_BOOT_ID_FILE");
    f->o.live = false;
    f->o.systemctl = NULL;
    f->o.reboot_command = NULL;
    free(reb);
    free(sc);
    free(log);
    free(bootf);
    free(n1);
    free(n2);
}

static void test_reboot_not_live(void **state)
{
    fx *f = *state;
    char *n1 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                         "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"data:,a\"}}]}}");
    f->o.reboot_command = "exit 3";
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_contains(r.reason, "reboot command 'exit 3' failed (exit 3)");
    f->o.reboot_command = "true";
    r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_true(r.rebooted);
    assert_node(f, "Done", n1, NULL);
    f->o.reboot_command = NULL;
    free(n1);
}

/* Not live: systemctl actions are logged as skipped, nothing is run. */
static void test_actions_not_live(void **state)
{
    fx *f = *state;
    mcg_err e = {0};
    json_error_t je;
    json_t *spec =
        json_loads("{\"nodeDisruptionPolicy\":{\"files\":[{\"path\":\"/etc/chrony.conf\","
                   "\"actions\":[{\"type\":\"DaemonReload\"},{\"type\":\"Restart\","
                   "\"restart\":{\"serviceName\":\"chronyd.service\"}}]}]}}",
                   0, &je);
    assert_int_equal(mcg_cluster_put_policy(f->c, spec, &e), 0);
    json_decref(spec);
    char *log = mcg_sprintf("%s/systemctl.log", f->dir);
    char *sc = mcg_sprintf("echo >>'%s'", log);
    f->o.systemctl = sc;
    char *n1 =
        deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                  "{\"path\":\"/etc/chrony.conf\",\"contents\":{\"source\":\"data:,s1\"}}]}}");
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_false(r.rebooted);
    assert_int_equal(access(log, F_OK), -1); /* nothing ran */
    assert_file(f->root, "etc/chrony.conf", "s1", 0644);
    assert_node(f, "Done", n1, NULL);
    f->o.systemctl = NULL;
    free(sc);
    free(log);
    free(n1);
}

/*
 * The component-by-component walk used where the kernel has no openat2
 * refuses a symlink anywhere on the way, makes missing directories, and
 * names the component in the way.
 */
static void test_walk_fallback(void **state)
{
    fx *f = *state;
    mcg_sroot r;
    mcg_err e = {0};
    assert_int_equal(mcg_sroot_open(&r, f->root, &e), 0);
    r.no_openat2 = true;
    char *x = mcg_sprintf("%s/etc/x", f->root);
    assert_int_equal(symlink(f->outside, x), 0);
    put(f->root, "etc/file", "f", 0644);
    int dfd;
    const char *base;
    assert_int_equal(mcg_sroot_parent(&r, "etc/x/y/z", true, &dfd, &base, &e), MCG_ETRUST);
    assert_string_equal(e.msg, "/etc/x: is a symbolic link (refusing to follow it)");
    assert_int_equal(mcg_sroot_parent(&r, "etc/x/z", false, &dfd, &base, &e), MCG_ETRUST);
    assert_int_equal(mcg_sroot_parent(&r, "etc/file/z", true, &dfd, &base, &e), MCG_ETRUST);
    assert_string_equal(e.msg, "/etc/file: is not a directory");
    assert_int_equal(mcg_sroot_parent(&r, "etc/new/deep/f", false, &dfd, &base, &e), MCG_ENOTFOUND);
    mcg_strv made = {0};
    r.made = &made;
    assert_int_equal(mcg_sroot_parent(&r, "etc/new/deep/f", true, &dfd, &base, &e), 0);
    assert_string_equal(base, "f");
    assert_int_equal(made.n, 2);
    assert_string_equal(made.v[0], "etc/new");
    assert_string_equal(made.v[1], "etc/new/deep");
    r.made = NULL;
    assert_true(exists(f->root, "etc/new/deep"));
    assert_int_equal(count_entries(f->outside), 0);
    assert_int_equal(mcg_sroot_sync(&r, &e), 0);
    mcg_strv_free(&made);
    mcg_sroot_close(&r);
    free(x);
}

static void test_state_dir_option(void **state)
{
    fx *f = *state;
    char *sd = mcg_sprintf("%s/state", f->dir);
    f->o.state_dir = sd;
    char *n1 =
        deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                  "{\"path\":\"/var/lib/mcgit/x\",\"contents\":{\"source\":\"data:,a\"}}]}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    assert_false(exists(f->root, "var/lib/mcgit/current"));
    assert_true(exists(f->dir, "state/current"));
    f->o.state_dir = NULL;
    /* with the default state dir, a config may not write into it */
    char *n2 =
        deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                  "{\"path\":\"/var/lib/mcgit/current\",\"contents\":{\"source\":\"data:,a\"}}]}}");
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_contains(r.reason, "state directory");
    free(sd);
    free(n1);
    free(n2);
}

/* Owners are part of the drift check (as root: only root sets them). */
static void test_drift_owner(void **state)
{
    fx *f = *state;
    if (geteuid() != 0)
        mcg_test_skip("not root: an agent that is not root does not chown, nor check owners");
    char *n1 =
        deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{"
                  "\"files\":["
                  "{\"path\":\"/etc/o\",\"user\":{\"name\":\"core\"},\"group\":{\"name\":"
                  "\"wheel\"},\"contents\":{\"source\":\"data:,o\"}},"
                  "{\"path\":\"/etc/r\",\"mode\":416,\"contents\":{\"source\":\"data:,r\"}}],"
                  "\"directories\":[{\"path\":\"/etc/d\",\"user\":{\"id\":1000}}],"
                  "\"links\":[{\"path\":\"/etc/l\",\"target\":\"/etc/o\",\"group\":{\"id\":"
                  "10}}]}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    char *po = mcg_sprintf("%s/etc/o", f->root), *pr = mcg_sprintf("%s/etc/r", f->root);
    char *pd = mcg_sprintf("%s/etc/d", f->root), *pl = mcg_sprintf("%s/etc/l", f->root);
    struct stat st;
    assert_int_equal(lstat(pl, &st), 0);
    assert_int_equal(st.st_gid, 10);
    /* someone hands the files to other owners */
    assert_int_equal(chown(po, 0, 0), 0);
    assert_int_equal(chown(pr, 1000, 1000), 0);
    assert_int_equal(chmod(pr, 0644), 0);
    assert_int_equal(chown(pd, 0, 0), 0);
    assert_int_equal(lchown(pl, 0, 0), 0);
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_contains(r.reason, "/etc/o: owner 0:0, want 1000:10");
    assert_non_null(
        strstr(r.reason, "/etc/r: mode file 0644, want file 0640 and owner 1000:1000, want 0:0"));
    assert_contains(r.reason, "/etc/d: owner 0:0, want 1000:0");
    assert_contains(r.reason, "/etc/l: owner 0:0, want 0:10");
    assert_node(f, "Degraded", n1, "/etc/o: owner 0:0, want 1000:10");
    /* nothing was changed back */
    assert_int_equal(stat(po, &st), 0);
    assert_int_equal(st.st_uid, 0);
    /* put back by hand: Done again by itself */
    assert_int_equal(chown(po, 1000, 10), 0);
    assert_int_equal(chown(pr, 0, 0), 0);
    assert_int_equal(chmod(pr, 0640), 0);
    assert_int_equal(chown(pd, 1000, 0), 0);
    assert_int_equal(lchown(pl, 0, 10), 0);
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    assert_node(f, "Done", n1, NULL);
    /* drifted again, and --force puts the owners back */
    assert_int_equal(chown(po, 0, 0), 0);
    assert_int_equal(chown(pd, 0, 0), 0);
    assert_int_equal(lchown(pl, 1000, 1000), 0);
    assert_int_equal(pass(f).state, MCG_AGENT_DEGRADED);
    f->o.force = true;
    r = pass(f);
    f->o.force = false;
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_int_equal(stat(po, &st), 0);
    assert_true(st.st_uid == 1000 && st.st_gid == 10);
    assert_int_equal(stat(pd, &st), 0);
    assert_true(st.st_uid == 1000 && st.st_gid == 0);
    assert_int_equal(lstat(pl, &st), 0);
    assert_true(st.st_uid == 0 && st.st_gid == 10);
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    assert_node(f, "Done", n1, NULL);
    free(po);
    free(pr);
    free(pd);
    free(pl);
    free(n1);
}

/* Is dir (relative to the root) in the state directory's list of directories mcgit made? */
static bool listed_created(fx *f, const char *dir)
{
    char *data = get(f->root, "var/lib/mcgit/created-dirs.json");
    if (!data)
        return false;
    char *q = mcg_sprintf("\"%s\"", dir);
    bool ok = strstr(data, q) != NULL;
    free(q);
    free(data);
    return ok;
}

/*
 * Directories mcgit made — on the way to a file, or as a config's own
 * directories — go once no config needs them, if empty. Directories that
 * were there before, or that hold something else, stay.
 */
static void test_created_dirs(void **state)
{
    fx *f = *state;
    char *p = mcg_sprintf("%s/etc/keep", f->root);
    assert_int_equal(mkdir(p, 0755), 0);
    free(p);
    p = mcg_sprintf("%s/etc/keep2", f->root);
    assert_int_equal(mkdir(p, 0755), 0);
    free(p);
    char *n1 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{"
                         "\"files\":["
                         "{\"path\":\"/etc/keep/a\",\"contents\":{\"source\":\"data:,a\"}},"
                         "{\"path\":\"/opt/x/y/z/f\",\"contents\":{\"source\":\"data:,f\"}},"
                         "{\"path\":\"/opt/x/g\",\"contents\":{\"source\":\"data:,g\"}},"
                         "{\"path\":\"/usr/share/s/1\",\"contents\":{\"source\":\"data:,1\"}},"
                         "{\"path\":\"/usr/share/s/2\",\"contents\":{\"source\":\"data:,2\"}}],"
                         "\"directories\":["
                         "{\"path\":\"/srv/d1\",\"mode\":448},"
                         "{\"path\":\"/srv/d2\"},"
                         "{\"path\":\"/etc/keep2\",\"mode\":448}]}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    static const char *const made[] = {"opt",    "opt/x",  "opt/x/y", "opt/x/y/z", "srv",
                                       "srv/d1", "srv/d2", "usr",     "usr/share", "usr/share/s"};
    for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++)
        if (!listed_created(f, made[i]))
            fail_msg("%s: not listed as made by mcgit", made[i]);
    assert_false(listed_created(f, "etc"));
    assert_false(listed_created(f, "etc/keep"));
    assert_false(listed_created(f, "etc/keep2"));
    /* someone else puts a file into one of them */
    put(f->root, "srv/d2/user.txt", "mine", 0644);
    /* n2: one file of usr/share/s and the file in etc/keep stay, the rest leaves */
    char *n2 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{"
                         "\"files\":["
                         "{\"path\":\"/etc/keep/b\",\"contents\":{\"source\":\"data:,b\"}},"
                         "{\"path\":\"/usr/share/s/2\",\"contents\":{\"source\":\"data:,2\"}}]}}");
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_false(exists(f->root, "opt"));    /* the whole chain mcgit made */
    assert_false(exists(f->root, "srv/d1")); /* a directory of the config, made by mcgit */
    assert_file(f->root, "srv/d2/user.txt", "mine", 0644); /* not empty: left */
    assert_true(exists(f->root, "srv"));
    assert_true(exists(f->root, "etc/keep"));  /* there before mcgit */
    assert_true(exists(f->root, "etc/keep2")); /* a config directory that was there before */
    assert_false(exists(f->root, "usr/share/s/1"));
    assert_file(f->root, "usr/share/s/2", "2", 0644);
    assert_false(listed_created(f, "srv/d2")); /* left with someone's file: no longer mcgit's */
    assert_false(listed_created(f, "srv"));
    assert_false(listed_created(f, "opt"));
    assert_true(listed_created(f, "usr/share/s"));
    /* n3: nothing at all; usr/share/s and its parents mcgit made go too */
    char *n3 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    assert_false(exists(f->root, "usr"));
    assert_true(exists(f->root, "srv/d2/user.txt"));
    assert_true(exists(f->root, "etc/keep"));
    assert_false(exists(f->root, "etc/keep/a"));
    assert_false(exists(f->root, "etc/keep/b"));
    /* back to n1: the same tree as the first time */
    set_desired(f, n1);
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    assert_file(f->root, "opt/x/y/z/f", "f", 0644);
    assert_true(listed_created(f, "opt/x/y"));
    assert_false(listed_created(f, "srv/d2")); /* it exists already: not made this time */
    free(n1);
    free(n2);
    free(n3);
}

/*
 * A write that fails half-way through an update — after paths were
 * removed, a backup restored and a directory made — puts the previous
 * files back: Degraded, the old config still current, no temp files.
 */
static void test_rollback_midway(void **state)
{
    fx *f = *state;
    put(f->root, "etc/pre", "from the image", 0600);
    char *n1 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                         "{\"path\":\"/etc/gone\",\"contents\":{\"source\":\"data:,gone1\"}},"
                         "{\"path\":\"/etc/keep\",\"contents\":{\"source\":\"data:,k1\"}},"
                         "{\"path\":\"/etc/pre\",\"contents\":{\"source\":\"data:,managed1\"}}]}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    char *n2 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                         "{\"path\":\"/etc/keep\",\"contents\":{\"source\":\"data:,k2\"}},"
                         "{\"path\":\"/etc/zz\",\"contents\":{\"source\":\"data:,zz\"}},"
                         "{\"path\":\"/new/dir/f\",\"contents\":{\"source\":\"data:,f\"}}],"
                         "\"directories\":[{\"path\":\"/made/here\"}]}}");
    /* /etc/zz cannot be written: a directory sits at its temp name */
    char tmp[64];
    mcg_agent_tmpname("zz", tmp);
    char *blocker = mcg_sprintf("%s/etc/%s", f->root, tmp);
    assert_int_equal(mkdir(blocker, 0755), 0);
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    if (!strstr(r.reason, "applying") || !strstr(r.reason, "/etc/zz"))
        fail_msg("reason: %s", r.reason);
    assert_string_equal(r.config, n1);
    assert_file(f->root, "etc/gone", "gone1", 0644);   /* removed, then put back */
    assert_file(f->root, "etc/pre", "managed1", 0644); /* backup restored, then taken again */
    assert_file(f->root, "etc/keep", "k1", 0644);
    assert_false(exists(f->root, "etc/zz"));
    assert_false(exists(f->root, "made")); /* the directory made on the way is gone again */
    assert_false(exists(f->root, "new"));
    assert_false(exists(f->root, "var/lib/mcgit/journal.json"));
    assert_int_equal(count_temps(f->root), 0);
    assert_node(f, "Degraded", n1, "/etc/zz");
    /* the next pass tries again: Degraded again, still nothing half-done */
    assert_int_equal(pass(f).state, MCG_AGENT_DEGRADED);
    assert_file(f->root, "etc/keep", "k1", 0644);
    /* the obstacle gone, the update goes through */
    assert_int_equal(rmdir(blocker), 0);
    r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_false(exists(f->root, "etc/gone"));
    assert_file(f->root, "etc/pre", "from the image", 0600);
    assert_file(f->root, "etc/zz", "zz", 0644);
    assert_file(f->root, "new/dir/f", "f", 0644);
    assert_true(exists(f->root, "made/here"));
    assert_node(f, "Done", n2, NULL);
    free(blocker);
    free(n1);
    free(n2);
}

/* A policy that cannot be read: Degraded, nothing written, fixed by a good one. */
static void test_bad_policy(void **state)
{
    fx *f = *state;
    char *n1 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                         "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"data:,a1\"}}]}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    json_error_t je;
    json_t *bad = json_loads("{\"nodeDisruptionPolicy\":{\"files\":[{\"path\":\"/etc/a\","
                             "\"actions\":[{\"type\":\"Explode\"}]}]}}",
                             0, &je);
    mcg_err e = {0};
    assert_int_equal(mcg_cluster_put_policy(f->c, bad, &e), 0);
    json_decref(bad);
    char *n2 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                         "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"data:,a2\"}},"
                         "{\"path\":\"/etc/b\",\"contents\":{\"source\":\"data:,b2\"}}]}}");
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    if (strncmp(r.reason, "node disruption policy: ", 24) != 0 || !strstr(r.reason, "Explode"))
        fail_msg("reason: %s", r.reason);
    assert_null(strchr(r.reason, '\n'));
    assert_string_equal(r.config, n1);
    assert_file(f->root, "etc/a", "a1", 0644);
    assert_false(exists(f->root, "etc/b"));
    assert_node(f, "Degraded", n1, "node disruption policy");
    json_t *good = json_loads("{\"nodeDisruptionPolicy\":{\"files\":[{\"path\":\"/etc\","
                              "\"actions\":[{\"type\":\"None\"}]}]}}",
                              0, &je);
    assert_int_equal(mcg_cluster_put_policy(f->c, good, &e), 0);
    json_decref(good);
    r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_false(r.rebooted);
    assert_file(f->root, "etc/b", "b2", 0644);
    assert_node(f, "Done", n2, NULL);
    free(n1);
    free(n2);
}

/* A drain that fails: Degraded, uncordoned, nothing written. */
static void test_drain_fails(void **state)
{
    fx *f = *state;
    dbl *d = dbl_new(f);
    char *n1 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                         "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"data:,a1\"}}]}}");
    d->fail_drain = true; /* a Reboot (no policy) drains first */
    mcg_agent_result r = pass_c(f, &d->base);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_string_equal(r.reason, "drain: evicting pods of n1: timed out");
    assert_false(exists(f->root, "etc/a"));
    assert_node(f, "Degraded", NULL, "drain: evicting pods of n1: timed out"); /* uncordoned */
    d->fail_drain = false;
    r = pass_c(f, &d->base);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_node(f, "Done", n1, NULL);
    mcg_cluster_free(&d->base);
    free(n1);
}

/*
 * Offline: with the cluster unreachable the agent still checks drift on
 * its own copy of the config, and reports once the cluster is back; an
 * update whose final report cannot be made keeps its journal until it can.
 */
static void test_offline(void **state)
{
    fx *f = *state;
    dbl *d = dbl_new(f);
    char *n1 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                         "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"data:,a1\"}}]}}");
    assert_int_equal(pass_c(f, &d->base).state, MCG_AGENT_DONE);
    d->offline = true;
    mcg_agent_result r = pass_c(f, &d->base);
    assert_true(r.offline);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_string_equal(r.config, n1);
    put(f->root, "etc/a", "changed", 0644);
    r = pass_c(f, &d->base);
    assert_true(r.offline);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_contains(r.reason, "/etc/a: content differs");
    assert_node(f, "Done", n1, NULL); /* could not be told */
    d->offline = false;
    r = pass_c(f, &d->base);
    assert_false(r.offline);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_node(f, "Degraded", n1, "/etc/a: content differs"); /* told now */
    put(f->root, "etc/a", "a1", 0644);
    assert_int_equal(pass_c(f, &d->base).state, MCG_AGENT_DONE);
    assert_node(f, "Done", n1, NULL);
    /* an update whose reports are refused: files written, journal kept */
    char *n2 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                         "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"data:,a2\"}}]}}");
    d->fail_patch = true;
    r = pass_c(f, &d->base);
    assert_true(r.offline);
    assert_true(d->patches_refused > 0);
    assert_file(f->root, "etc/a", "a2", 0644);
    assert_true(exists(f->root, "var/lib/mcgit/journal.json"));
    mcg_node n = node(f);
    assert_string_equal(n.current, n1);
    mcg_node_clear(&n);
    d->fail_patch = false;
    r = pass_c(f, &d->base);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_false(exists(f->root, "var/lib/mcgit/journal.json"));
    assert_node(f, "Done", n2, NULL);
    mcg_cluster_free(&d->base);
    free(n1);
    free(n2);
}

static void rm_file(const char *dir, const char *rel)
{
    char *p = mcg_sprintf("%s/%s", dir, rel);
    unlink(p);
    free(p);
}

static bool str_eq_or_null(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* ------------------------------------------- kernel arguments, OS image, FIPS */

/* Publish a whole rendered spec ({"config": ..., "kernelArguments": ...}). */
static char *deploy_spec(fx *f, const char *spec_json)
{
    mcg_ignition ign;
    mcg_err e = {0};
    if (mcg_ignition_parse_json(&ign, "test", spec_json, strlen(spec_json), &e) != 0)
        fail_msg("parse: %s", e.msg);
    char *spec, *name;
    size_t len;
    char hash[MCG_HASH_HEX + 1];
    assert_int_equal(mcg_render_name(&ign, "worker", &spec, &len, hash, &name, &e), 0);
    assert_int_equal(f->c->ops->put_config(f->c, name, spec, len, &e), 0);
    mcg_ignition_free(&ign);
    free(spec);
    set_desired(f, name);
    return name;
}

enum {
    H_OSTREE = 1, /* run/ostree-booted + usr/bin/rpm-ostree */
    H_KCMD = 2,   /* etc/kernel/cmdline */
    H_GRUBBY = 4, /* usr/sbin/grubby */
    H_GRUB = 8,   /* etc/default/grub + usr/sbin/update-grub */
    H_GRUB2 = 16, /* etc/default/grub + usr/sbin/grub2-mkconfig */
    H_BOOTC = 32, /* usr/bin/bootc */
};

static void make_host(fx *f, int h)
{
    if (h & H_OSTREE) {
        put(f->root, "run/ostree-booted", "", 0644);
        put(f->root, "usr/bin/rpm-ostree", "#!/bin/false\n", 0755);
    }
    if (h & H_KCMD)
        put(f->root, "etc/kernel/cmdline", "root=UUID=1234 ro quiet\n", 0644);
    if (h & H_GRUBBY)
        put(f->root, "usr/sbin/grubby", "#!/bin/false\n", 0755);
    if (h & (H_GRUB | H_GRUB2))
        put(f->root, "etc/default/grub", "GRUB_CMDLINE_LINUX=\"quiet\"\n", 0644);
    if (h & H_GRUB)
        put(f->root, "usr/sbin/update-grub", "#!/bin/false\n", 0755);
    if (h & H_GRUB2)
        put(f->root, "usr/sbin/grub2-mkconfig", "#!/bin/false\n", 0755);
    if (h & H_BOOTC)
        put(f->root, "usr/bin/bootc", "#!/bin/false\n", 0755);
}

/*
 * A --host-exec prefix that records each command line in DIR/cmds.log and
 * exits with the status in DIR/status (0 when absent). Caller frees.
 */
static char *recorder(fx *f)
{
    /* queries (what the node boots) are answered, not logged: only changes are */
    char *script = mcg_sprintf(
        "#!/bin/sh\ncase \"$*\" in\n"
        "'rpm-ostree status --json --booted') printf '%%s' '{\"deployments\":[{\"booted\":true,"
        "\"origin\":\"fedora:fedora/x86_64/coreos/stable\"}]}'; exit 0;;\n"
        "'bootc status --json') printf '%%s' '{\"status\":{\"booted\":{\"image\":{\"image\":"
        "{\"image\":\"quay.io/base:1\"}}}}}'; exit 0;;\nesac\n"
        "printf '%%s\\n' \"$*\" >>'%s/cmds.log'\n"
        "[ -f '%s/status' ] && exit \"$(cat '%s/status')\"\nexit 0\n",
        f->dir, f->dir, f->dir);
    put(f->dir, "rec", script, 0755);
    free(script);
    return mcg_sprintf("%s/rec", f->dir);
}

#define IGN "\"config\":{\"ignition\":{\"version\":\"3.4.0\"}"
#define FILE_X                                                                                     \
    ",\"storage\":{\"files\":[{\"path\":\"/etc/x\",\"contents\":{\"source\":\"data:,x\"}}]}"

/*
 * One update from nothing on a node of each kind: the exact commands issued
 * (through the recorder), the exact file written under the root, the state.
 */
static void test_os_fields(void **state)
{
    fx *f = *state;
    static const struct {
        const char *name;
        int host;
        const char *spec;
        const char *log;    /* exact cmds.log, NULL: no command ran */
        const char *file;   /* a file the update writes under the root */
        const char *data;   /* ... with these bytes */
        const char *reason; /* NULL: Done; else Degraded with this */
    } t[] = {
        {"ostree: rpm-ostree kargs", H_OSTREE,
         "{" IGN "},\"kernelArguments\":[\"nosmt\",\"a=\\\"b c\\\"\"]}",
         "rpm-ostree kargs --delete-if-present=nosmt --delete-if-present=a=\"b c\" "
         "--append=nosmt --append=a=\"b c\"\n",
         NULL, NULL, NULL},
        {"kernel-install: /etc/kernel/cmdline", H_KCMD | H_GRUBBY,
         "{" IGN "},\"kernelArguments\":[\"nosmt\",\"quiet\"]}", "kernel-install add-all\n",
         "etc/kernel/cmdline", "root=UUID=1234 ro nosmt quiet\n", NULL},
        {"grubby", H_GRUBBY | H_GRUB, "{" IGN "},\"kernelArguments\":[\"nosmt\",\"a=1\"]}",
         "grubby --update-kernel=ALL --remove-args=nosmt a=1\n"
         "grubby --update-kernel=ALL --args=nosmt a=1\n",
         NULL, NULL, NULL},
        {"GRUB drop-in and update-grub", H_GRUB,
         "{" IGN "},\"kernelArguments\":[\"nosmt\",\"a=$x\",\"b=\\\"c d\\\"\"]}", "update-grub\n",
         "etc/default/grub.d/50-mcgit.cfg",
         "# written by mcgit: the MachineConfig kernelArguments\n"
         "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX nosmt a=\\$x b=\\\"c d\\\"\"\n",
         NULL},
        {"GRUB drop-in and grub2-mkconfig", H_GRUB2, "{" IGN "},\"kernelArguments\":[\"nosmt\"]}",
         "grub2-mkconfig -o /boot/grub2/grub.cfg\n", "etc/default/grub.d/50-mcgit.cfg",
         "# written by mcgit: the MachineConfig kernelArguments\n"
         "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX nosmt\"\n",
         NULL},
        {"ostree: image, kernel, extensions, kargs in order", H_OSTREE,
         "{\"baseOSExtensionsContainerImage\":\"\"," IGN "},\"extensions\":[\"usbguard\","
         "\"kerberos\",\"usbguard\"],\"kernelArguments\":[\"nosmt\"],\"kernelType\":\"realtime\","
         "\"osImageURL\":\"quay.io/x/os@sha256:00\"}",
         "rpm-ostree rebase --experimental ostree-unverified-registry:quay.io/x/os@sha256:00\n"
         "rpm-ostree override remove kernel kernel-core kernel-modules kernel-modules-core "
         "kernel-modules-extra --install kernel-rt-core --install kernel-rt-modules --install "
         "kernel-rt-modules-extra --install kernel-rt-kvm\n"
         "rpm-ostree update --install usbguard --install krb5-workstation --install libkadm5\n"
         "rpm-ostree kargs --delete-if-present=nosmt --append=nosmt\n",
         NULL, NULL, NULL},
        {"bootc: the OS image", H_BOOTC, "{" IGN "},\"osImageURL\":\"quay.io/x/os:1\"}",
         "bootc switch quay.io/x/os:1\n", NULL, NULL, NULL},
        {"no boot loader: Degraded, nothing written", 0,
         "{" IGN FILE_X "},\"kernelArguments\":[\"nosmt\"]}", NULL, NULL, NULL,
         "kernelArguments: node n1 has no boot loader configuration mcgit can change"},
        {"bootc: no extensions", H_BOOTC, "{" IGN FILE_X "},\"extensions\":[\"usbguard\"]}", NULL,
         NULL, NULL, "extensions: node n1 cannot install extensions (no rpm-ostree)"},
        {"not image-based: no OS image", H_GRUB, "{" IGN FILE_X "},\"osImageURL\":\"quay.io/x\"}",
         NULL, NULL, NULL, "osImageURL: node n1 is not image-based (no rpm-ostree or bootc)"},
        {"not ostree: no kernel type", H_GRUB | H_BOOTC,
         "{" IGN FILE_X "},\"kernelType\":\"64k-pages\"}", NULL, NULL, NULL,
         "kernelType: node n1 cannot switch to the 64k-pages kernel (no rpm-ostree)"},
        {"extensions container: Degraded", H_OSTREE,
         "{\"baseOSExtensionsContainerImage\":\"quay.io/ext:1\"," IGN FILE_X "}}", NULL, NULL, NULL,
         "baseOSExtensionsContainerImage: node n1 cannot use it"},
        {"another user in a first config, not on the node", H_OSTREE,
         "{" IGN FILE_X ",\"passwd\":{\"users\":[{\"name\":\"admin\"}]}}}", NULL, NULL, NULL,
         "passwd.users: entry admin is not on node n1"},
    };
    char *rec = recorder(f);
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        /* a fresh node root each time */
        mcg_test_rm_rf(f->root);
        put(f->root, "etc/passwd", "core:x:1000:1000::/home/core:/bin/sh\n", 0644);
        put(f->root, "etc/group", "core:x:1000:\n", 0644);
        rm_file(f->dir, "cmds.log");
        make_host(f, t[i].host);
        f->o.host_exec = rec;
        char *name = deploy_spec(f, t[i].spec);
        mcg_agent_result r = pass(f);
        char *log = get(f->dir, "cmds.log");
        if (!str_eq_or_null(log, t[i].log))
            fail_msg("%s: commands\n%s\nwant\n%s", t[i].name, log ? log : "(none)",
                     t[i].log ? t[i].log : "(none)");
        free(log);
        if (t[i].reason) {
            if (r.state != MCG_AGENT_DEGRADED || !strstr(r.reason, t[i].reason))
                fail_msg("%s: state %d reason '%s'", t[i].name, r.state, r.reason);
            assert_false(exists(f->root, "etc/x")); /* nothing half-applied */
            bool unrec = !strncmp(t[i].reason, "unreconcilable: ", 16);
            assert_int_equal(r.unreconcilable, unrec);
            assert_node(f, unrec ? "Unreconcilable" : "Degraded", NULL, t[i].reason);
        } else {
            if (r.state != MCG_AGENT_DONE)
                fail_msg("%s: %s", t[i].name, r.reason);
            assert_true(r.rebooted); /* every one of these needs a reboot */
            assert_node(f, "Done", name, NULL);
        }
        if (t[i].file) {
            char *got = get(f->root, t[i].file);
            if (!got || strcmp(got, t[i].data))
                fail_msg("%s: %s holds\n%s", t[i].name, t[i].file, got ? got : "(nothing)");
            free(got);
        }
        free(name);
    }
    f->o.host_exec = NULL;
    free(rec);
}

/* Changes: old arguments go, new ones come, each way; a re-run changes nothing. */
static void test_os_kargs_update(void **state)
{
    fx *f = *state;
    char *rec = recorder(f);
    f->o.host_exec = rec;
    make_host(f, H_KCMD);
    char *n1 = deploy_spec(f, "{" IGN "},\"kernelArguments\":[\"nosmt\",\"a=1\"]}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    assert_file(f->root, "etc/kernel/cmdline", "root=UUID=1234 ro quiet nosmt a=1\n", 0644);
    char *n2 = deploy_spec(f, "{" IGN "},\"kernelArguments\":[\"a=2\",\"quiet\"]}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    assert_file(f->root, "etc/kernel/cmdline", "root=UUID=1234 ro a=2 quiet\n", 0644);
    char *n3 = deploy_spec(f, "{" IGN "}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    /* the arguments mcgit added are gone (quiet too: the config had it) */
    assert_file(f->root, "etc/kernel/cmdline", "root=UUID=1234 ro\n", 0644);
    char *log = get(f->dir, "cmds.log");
    assert_string_equal(log, "kernel-install add-all\nkernel-install add-all\n"
                             "kernel-install add-all\n");
    free(log);
    /* an unchanged argument list issues nothing */
    char *n4 = deploy_spec(f, "{" IGN FILE_X "}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    log = get(f->dir, "cmds.log");
    assert_string_equal(log, "kernel-install add-all\nkernel-install add-all\n"
                             "kernel-install add-all\n");
    free(log);
    /* GRUB: the drop-in goes when the arguments do */
    put(f->root, "etc/default/grub", "", 0644);
    put(f->root, "usr/sbin/update-grub", "", 0755);
    rm_file(f->root, "etc/kernel/cmdline");
    char *n5 = deploy_spec(f, "{" IGN "},\"kernelArguments\":[\"nosmt\"]}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    assert_true(exists(f->root, "etc/default/grub.d/50-mcgit.cfg"));
    char *n6 = deploy_spec(f, "{" IGN "}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    assert_false(exists(f->root, "etc/default/grub.d/50-mcgit.cfg"));
    f->o.host_exec = NULL;
    free(rec);
    free(n1), free(n2), free(n3), free(n4), free(n5), free(n6);
}

/* A failing command: Degraded naming the field, command and node; the next pass retries it. */
static void test_os_command_fails(void **state)
{
    fx *f = *state;
    char *rec = recorder(f);
    f->o.host_exec = rec;
    f->o.reboot_command = "true";
    make_host(f, H_OSTREE);
    put(f->dir, "status", "1", 0644);
    char *n1 = deploy_spec(f, "{" IGN FILE_X "},\"extensions\":[\"sysstat\"],"
                              "\"kernelArguments\":[\"nosmt\"]}");
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    char *want = mcg_sprintf("extensions: '%s rpm-ostree update --install sysstat' failed "
                             "(exit 1) on node n1",
                             rec);
    assert_string_equal(r.reason, want);
    free(want);
    assert_false(r.rebooted);
    assert_file(f->root, "etc/x", "x", 0644); /* files are in place */
    rm_file(f->dir, "status");
    r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_true(r.rebooted);
    assert_node(f, "Done", n1, NULL);
    char *log = get(f->dir, "cmds.log");
    assert_string_equal(log, "rpm-ostree update --install sysstat\n"
                             "rpm-ostree update --install sysstat\n"
                             "rpm-ostree kargs --delete-if-present=nosmt --append=nosmt\n");
    free(log);
    f->o.host_exec = NULL;
    f->o.reboot_command = NULL;
    free(rec);
    free(n1);
}

/* Not live and no --host-exec: nothing runs (logged as skipped); files still written. */
static void test_os_not_live(void **state)
{
    fx *f = *state;
    make_host(f, H_GRUB);
    char *n1 = deploy_spec(f, "{" IGN "},\"kernelArguments\":[\"nosmt\"]}");
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_false(exists(f->dir, "cmds.log"));
    assert_true(exists(f->root, "etc/default/grub.d/50-mcgit.cfg"));
    assert_node(f, "Done", n1, NULL);
    free(n1);
}

/* FIPS: set at install; a change, or a node in the other mode, is Degraded. */
static void test_os_fips(void **state)
{
    fx *f = *state;
    char *n1 = deploy_spec(f, "{" IGN FILE_X "}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    char *n2 = deploy_spec(f, "{" IGN FILE_X "},\"fips\":true}");
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_contains(r.reason, "unreconcilable: fips changed from false to true on node n1");
    assert_true(r.unreconcilable); /* the node's state: Unreconcilable, as MCO writes it */
    assert_node(f, "Unreconcilable", NULL, "fips changed");
    assert_string_equal(r.config, n1);
    /* a node whose kernel says FIPS is off cannot take fips: true */
    mcg_test_rm_rf(f->root);
    put(f->root, "etc/passwd", "core:x:1000:1000::/home/core:/bin/sh\n", 0644);
    put(f->root, "proc/sys/crypto/fips_enabled", "0\n", 0444);
    assert_int_equal(pass(f).state, MCG_AGENT_DEGRADED);
    assert_node(f, "Unreconcilable", NULL, "fips is true but node n1 runs with FIPS mode off");
    /* ... and one that is on, can */
    put(f->root, "proc/sys/crypto/fips_enabled", "1\n", 0444);
    r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_node(f, "Done", n2, NULL);
    free(n1);
    free(n2);
}

/* core's password hash: set in etc/shadow (mode and the other lines kept), no reboot. */
static void test_os_password_hash(void **state)
{
    fx *f = *state;
    const char *shadow = "root:*:19000:0:99999:7:::\ncore:!!:19000:0:99999:7:::\n";
    put(f->root, "etc/shadow", shadow, 0640);
    char *n1 = deploy_spec(f, "{" IGN ",\"passwd\":{\"users\":[{\"name\":\"core\","
                              "\"passwordHash\":\"$6$s$h\"}]}}}");
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_false(r.rebooted);
    assert_file(f->root, "etc/shadow",
                "root:*:19000:0:99999:7:::\ncore:$6$s$h:19000:0:99999:7:::\n", 0640);
    /* unset again: locked, as MCO leaves it */
    char *n2 = deploy_spec(f, "{" IGN FILE_X "}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    assert_file(f->root, "etc/shadow", "root:*:19000:0:99999:7:::\ncore:*:19000:0:99999:7:::\n",
                0640);
    /* no core in etc/shadow: Degraded, nothing written */
    put(f->root, "etc/shadow", "root:*:19000:0:99999:7:::\n", 0640);
    char *n3 =
        deploy_spec(f, "{" IGN ",\"storage\":{\"files\":[{\"path\":\"/etc/y\"}]},"
                       "\"passwd\":{\"users\":[{\"name\":\"core\",\"passwordHash\":\"h\"}]}}}");
    r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_contains(r.reason, "passwordHash: user core is not in /etc/shadow on node n1");
    assert_false(exists(f->root, "etc/y"));
    free(n1);
    free(n2);
    free(n3);
}

/* A kill between two OS steps: the journal resumes at the step not yet done. */
static void test_os_resume(void **state)
{
    fx *f = *state;
    char *rec = recorder(f);
    f->o.host_exec = rec;
    make_host(f, H_OSTREE);
    /* the first command succeeds, then the agent "dies" in the second (exit 9
     * stands in for the kill: the journal still says step 1) */
    char *script = mcg_sprintf(
        "#!/bin/sh\ncase \"$*\" in *status*) printf '%%s' '{\"deployments\":[{\"booted\":true,"
        "\"origin\":\"fedora:fedora/x86_64/coreos/stable\"}]}'; exit 0;; esac\n"
        "printf '%%s\\n' \"$*\" >>'%s/cmds.log'\n"
        "case \"$*\" in *kargs*) exit 9;; esac\nexit 0\n",
        f->dir);
    put(f->dir, "rec", script, 0755);
    free(script);
    char *n1 = deploy_spec(f, "{" IGN "},\"kernelArguments\":[\"nosmt\"],"
                              "\"osImageURL\":\"quay.io/x:1\"}");
    assert_int_equal(pass(f).state, MCG_AGENT_DEGRADED);
    free(rec);
    rec = recorder(f); /* a working one */
    f->o.host_exec = rec;
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    char *log = get(f->dir, "cmds.log");
    assert_string_equal(log, "rpm-ostree rebase --experimental "
                             "ostree-unverified-registry:quay.io/x:1\n"
                             "rpm-ostree kargs --delete-if-present=nosmt --append=nosmt\n"
                             "rpm-ostree kargs --delete-if-present=nosmt --append=nosmt\n");
    free(log);
    assert_node(f, "Done", n1, NULL);
    /* the image booted before the first rebase was kept */
    char *base = get(f->root, "var/lib/mcgit/base-image");
    assert_non_null(base);
    assert_string_equal(base, "rpm-ostree ostree fedora:fedora/x86_64/coreos/stable");
    free(base);
    /* osImageURL unset again: back to it */
    rm_file(f->dir, "cmds.log");
    char *n2 = deploy_spec(f, "{" IGN "},\"kernelArguments\":[\"nosmt\"]}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    log = get(f->dir, "cmds.log");
    assert_string_equal(log, "rpm-ostree rebase fedora:fedora/x86_64/coreos/stable\n");
    free(log);
    assert_false(exists(f->root, "var/lib/mcgit/base-image")); /* used: gone */
    f->o.host_exec = NULL;
    free(rec);
    free(n1);
    free(n2);
}

/* ------------------------------------------------ the journal, typed */

/* A journal with every field set, each OS step kind once. */
static void full_journal(mcg_journal *j, const char *target, const char *from)
{
    memset(j, 0, sizeof(*j));
    j->target = mcg_strdup(target);
    j->from = from ? mcg_strdup(from) : NULL;
    j->phase = MCG_PHASE_HEALTH;
    j->force = true;
    j->cordoned = true;
    j->reboot = true;
    j->drain = false;
    j->daemon_reload = true;
    mcg_strv_push(&j->reload, "crio.service");
    mcg_strv_push(&j->restart, "chronyd.service");
    mcg_strv_push(&j->disk.backups, "etc/a");
    mcg_strv_push(&j->disk.restores, "etc/b");
    mcg_strv_push(&j->disk.mkdirs, "etc/new");
    mcg_osstep_add(&j->os, MCG_OSSTEP_RECORD, "osImageURL", "base-image", NULL, true);
    mcg_osstep_add(&j->os, MCG_OSSTEP_RUN, "osImageURL", "rpm-ostree rebase 'x'", NULL, false);
    mcg_osstep_add(&j->os, MCG_OSSTEP_WRITE, "kernelArguments", "etc/kernel/cmdline", "a b\n",
                   false);
    mcg_osstep_add(&j->os, MCG_OSSTEP_REMOVE, "kernelArguments", "etc/default/grub.d/50.cfg", NULL,
                   false);
    mcg_osstep_add(&j->os, MCG_OSSTEP_SHADOW, "passwordHash", "$6$x$y", NULL, false);
    mcg_osstep_add(&j->os, MCG_OSSTEP_RESTORE, "osImageURL", "base-image", NULL, false);
    j->os_step = 3;
    j->boot_id = mcg_strdup("0f3c");
    j->has_deadline = true;
    j->health_deadline = 1767225600;
    j->revert = mcg_strdup("health check api failed");
    j->installed = mcg_strdup("taken as installed: storage.disks (not checked)");
}

/* Written from the struct and read back: every field the same, the bytes too. */
static void test_journal_round_trip(void **state)
{
    (void)state;
    mcg_journal j, k;
    mcg_err e = {0};
    full_journal(&j, "rendered-worker-2", "rendered-worker-1");
    char *text = mcg_agent_journal_dump(&j);
    if (mcg_agent_journal_parse(&k, text, strlen(text), &e) != 0)
        fail_msg("parse: %s", e.msg);
    assert_string_equal(k.target, j.target);
    assert_string_equal(k.from, j.from);
    assert_int_equal(k.phase, MCG_PHASE_HEALTH);
    assert_true(k.force && k.cordoned && k.reboot && !k.drain && k.daemon_reload);
    assert_string_equal(k.reload.v[0], "crio.service");
    assert_string_equal(k.restart.v[0], "chronyd.service");
    assert_string_equal(k.disk.backups.v[0], "etc/a");
    assert_string_equal(k.disk.restores.v[0], "etc/b");
    assert_string_equal(k.disk.mkdirs.v[0], "etc/new");
    assert_int_equal(k.os.n, 6);
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(k.os.v[i].kind, j.os.v[i].kind);
        assert_string_equal(k.os.v[i].field, j.os.v[i].field);
        assert_string_equal(k.os.v[i].arg, j.os.v[i].arg);
        assert_int_equal(k.os.v[i].bootc, j.os.v[i].bootc);
    }
    assert_string_equal(k.os.v[2].data, "a b\n");
    assert_int_equal(k.os_step, 3);
    assert_string_equal(k.boot_id, "0f3c");
    assert_true(k.has_deadline);
    assert_int_equal(k.health_deadline, 1767225600);
    assert_string_equal(k.revert, j.revert);
    assert_string_equal(k.installed, j.installed);
    char *again = mcg_agent_journal_dump(&k);
    assert_string_equal(again, text);
    assert_contains(text, "\"version\": 1");
    free(again);
    free(text);
    mcg_agent_journal_clear(&k);
    /* the optional fields absent, from null: still the same both ways */
    mcg_agent_journal_clear(&j);
    memset(&j, 0, sizeof(j));
    j.target = mcg_strdup("rendered-worker-1");
    text = mcg_agent_journal_dump(&j);
    assert_int_equal(mcg_agent_journal_parse(&k, text, strlen(text), &e), 0);
    assert_null(k.from);
    assert_null(k.boot_id);
    assert_false(k.has_deadline);
    assert_null(k.revert);
    assert_null(k.installed);
    assert_int_equal(k.phase, MCG_PHASE_WRITE);
    again = mcg_agent_journal_dump(&k);
    assert_string_equal(again, text);
    free(again);
    free(text);
    mcg_agent_journal_clear(&k);
    mcg_agent_journal_clear(&j);
}

/* journal.json with one change applied to a good one: key = value (JSON), or key deleted. */
static char *journal_with(const char *target, const char *from, const char *key, const char *value)
{
    mcg_journal j;
    full_journal(&j, target, from);
    char *text = mcg_agent_journal_dump(&j);
    mcg_agent_journal_clear(&j);
    json_t *o = json_loads(text, 0, NULL);
    free(text);
    if (value)
        json_object_set_new(o, key, json_loads(value, JSON_DECODE_ANY, NULL));
    else
        json_object_del(o, key);
    text = json_dumps(o, JSON_SORT_KEYS | JSON_INDENT(1));
    json_decref(o);
    return text;
}

static const struct bad_journal {
    const char *key, *value, *want;
} bad_journals[] = {
    {"version", "99", "state journal.json: version 99 is not one this agent knows (it knows 1)"},
    {"version", NULL, "state journal.json: no 'version'"},
    {"version", "\"1\"", "state journal.json: 'version' must be an integer"},
    {"osStep", NULL, "state journal.json: no 'osStep'"},
    {"target", NULL, "state journal.json: no 'target'"},
    {"reboot", "\"yes\"", "state journal.json: 'reboot' must be true or false"},
    {"restart", "[\"a.service\", 3]", "state journal.json: 'restart' must be a list of strings"},
    {"healthDeadline", "\"soon\"", "state journal.json: 'healthDeadline' must be an integer"},
    {"from", "7", "state journal.json: 'from' must be a string or null"},
    {"surprise", "true", "state journal.json: unknown key 'surprise'"},
    {"phase", "\"celebrate\"", "state journal.json: unknown phase 'celebrate'"},
    {"osStep", "7", "state journal.json: osStep 7 of 1 steps"},
    {"os", "[{\"field\":\"kernelType\",\"frobnicate\":\"x\"}]",
     "state journal.json: os[0] (kernelType): 'frobnicate' is not a kind of step"},
    {"os", "[{\"field\":\"kernelArguments\",\"write\":\"etc/x\"}]",
     "state journal.json: os[0] (kernelArguments): malformed write step"},
    {"os", "[{\"run\":\"true\"}]", "state journal.json: os[0] has no field"},
};

/* Each wrong journal is refused whole, naming what is wrong. */
static void test_journal_refused(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad_journals) / sizeof(*bad_journals); i++) {
        const struct bad_journal *b = &bad_journals[i];
        char *text = journal_with("rendered-worker-2", "rendered-worker-1", b->key, b->value);
        if (!strcmp(b->key, "osStep") && b->value) { /* one step only */
            json_t *o = json_loads(text, 0, NULL);
            json_object_set_new(o, "os",
                                json_loads("[{\"field\":\"f\",\"run\":\"true\"}]", 0, NULL));
            free(text);
            text = json_dumps(o, JSON_SORT_KEYS);
            json_decref(o);
        }
        mcg_journal j;
        mcg_err e = {0};
        int rc = mcg_agent_journal_parse(&j, text, strlen(text), &e);
        if (rc != MCG_EINVAL || !strstr(e.msg, b->want))
            fail_msg("%s = %s: rc %d, '%s', want '%s'", b->key, b->value ? b->value : "(gone)", rc,
                     e.msg, b->want);
        assert_null(j.target); /* cleared */
        free(text);
    }
}

/*
 * A journal the agent cannot read whole — of version 99, missing a key,
 * with a wrong type — is not resumed: the node Degraded naming why, and
 * nothing written (the files, current, the journal itself as they were).
 */
static void test_journal_refused_pass(void **state)
{
    fx *f = *state;
    char *n1 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                         "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"data:,a1\"}}]}}");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    char *n2 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":["
                         "{\"path\":\"/etc/a\",\"contents\":{\"source\":\"data:,a2\"}}]}}");
    static const struct bad_journal cases[] = {
        {"version", "99", "state journal.json: version 99 is not one this agent knows"},
        {"cordoned", NULL, "state journal.json: no 'cordoned'"},
        {"osStep", "\"2\"", "state journal.json: 'osStep' must be an integer"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char *text = journal_with(n2, n1, cases[i].key, cases[i].value);
        put(f->root, "var/lib/mcgit/journal.json", text, 0600);
        mcg_agent_result r = pass(f);
        assert_int_equal(r.state, MCG_AGENT_DEGRADED);
        assert_contains(r.reason, cases[i].want);
        assert_contains(r.reason, "not resumed, nothing written");
        assert_string_equal(r.config, n1);
        assert_node(f, "Degraded", n1, cases[i].want);
        assert_file(f->root, "etc/a", "a1", 0644);
        char *cur = get(f->root, "var/lib/mcgit/current");
        assert_contains(cur, n1);
        free(cur);
        char *after = get(f->root, "var/lib/mcgit/journal.json");
        assert_string_equal(after, text);
        free(after);
        char *kept = mcg_sprintf("var/lib/mcgit/configs/%s.json", n2);
        assert_false(exists(f->root, kept));
        free(kept);
        free(text);
    }
    /* once the journal is taken away, the update goes on */
    rm_file(f->root, "var/lib/mcgit/journal.json");
    assert_int_equal(pass(f).state, MCG_AGENT_DONE);
    assert_file(f->root, "etc/a", "a2", 0644);
    free(n1);
    free(n2);
}

/* A journal as the agent wrote it before the journal was typed: read, and written back byte for
 * byte (an agent upgraded mid-update resumes it). */
static void test_journal_earlier_format(void **state)
{
    (void)state;
    const char *text = "{\n"
                       " \"backups\": [\n  \"etc/a\"\n ],\n"
                       " \"cordoned\": false,\n"
                       " \"daemonReload\": false,\n"
                       " \"drain\": false,\n"
                       " \"force\": false,\n"
                       " \"from\": null,\n"
                       " \"mkdirs\": [],\n"
                       " \"os\": [\n"
                       "  {\n   \"bootc\": false,\n   \"field\": \"osImageURL\",\n"
                       "   \"record\": \"base-image\"\n  },\n"
                       "  {\n   \"field\": \"osImageURL\",\n"
                       "   \"run\": \"rpm-ostree rebase 'x'\"\n  }\n"
                       " ],\n"
                       " \"osStep\": 0,\n"
                       " \"phase\": \"apply\",\n"
                       " \"reboot\": true,\n"
                       " \"reload\": [],\n"
                       " \"restart\": [],\n"
                       " \"restores\": [],\n"
                       " \"target\": \"rendered-worker-1\",\n"
                       " \"version\": 1\n"
                       "}";
    mcg_journal j;
    mcg_err e = {0};
    if (mcg_agent_journal_parse(&j, text, strlen(text), &e) != 0)
        fail_msg("parse: %s", e.msg);
    assert_int_equal(j.os.n, 2);
    assert_int_equal(j.os.v[0].kind, MCG_OSSTEP_RECORD);
    assert_int_equal(j.os.v[1].kind, MCG_OSSTEP_RUN);
    char *again = mcg_agent_journal_dump(&j);
    assert_string_equal(again, text);
    free(again);
    mcg_agent_journal_clear(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fresh_apply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_streamed_contents, setup, teardown),
        cmocka_unit_test_setup_teardown(test_streamed_bad_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update, setup, teardown),
        cmocka_unit_test_setup_teardown(test_units, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drift, setup, teardown),
        cmocka_unit_test_setup_teardown(test_force, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_etc, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_deeper, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_target, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_hash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollback_on_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_actions_live, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reboot_not_live, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state_dir_option, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drift_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_created_dirs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollback_midway, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_actions_not_live, setup, teardown),
        cmocka_unit_test_setup_teardown(test_walk_fallback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_os_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_os_kargs_update, setup, teardown),
        cmocka_unit_test_setup_teardown(test_os_command_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_os_not_live, setup, teardown),
        cmocka_unit_test_setup_teardown(test_os_fips, setup, teardown),
        cmocka_unit_test_setup_teardown(test_os_password_hash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_os_resume, setup, teardown),
        cmocka_unit_test(test_journal_round_trip),
        cmocka_unit_test(test_journal_refused),
        cmocka_unit_test(test_journal_earlier_format),
        cmocka_unit_test_setup_teardown(test_journal_refused_pass, setup, teardown),
    };
    return cmocka_run_group_tests_name("agent", tests, NULL, NULL);
}
