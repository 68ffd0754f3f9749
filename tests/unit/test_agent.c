/*
 * test_agent.c — the node agent against real temp roots and the local
 * cluster backend: fresh apply, updates, units as `systemctl --root` lays
 * them out, backups, drift, --force, symlink escapes, refused configs,
 * disruption policy decisions, reboots and rollback on failure.
 *
 * Each test gets a fresh directory holding a local:DIR cluster with node
 * n1 (its root DIR/roots/n1, with etc/passwd and etc/group naming core as
 * 1000:1000) and an "outside" directory that must stay empty.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/agent.h"
#include "agent/agent_int.h"
#include "fsio/fsio.h"
#include "render/render.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    char dir[256];
    char root[320];
    char outside[320];
    mcg_cluster *c;
    mcg_agent_opts o;
} fx;

static void rm_rf(const char *p)
{
    char *cmd = mcg_sprintf("rm -rf '%s'", p);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

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
    char *cmd = mcg_sprintf("find '%s' -name '.mcgit-*.tmp' -o -name '.*.tmp' | wc -l", dir);
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
    snprintf(f->dir, sizeof(f->dir), "/tmp/mcgit-agent-test.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    char *spec = mcg_sprintf("local:%s/cl", f->dir);
    mcg_err e = {0};
    assert_int_equal(mcg_cluster_open(&f->c, spec, &e), 0);
    free(spec);
    mcg_labels l = {0};
    assert_int_equal(f->c->ops->add_node(f->c, "n1", &l, 1000, &e), 0);
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
    rm_rf(f->dir);
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
    assert_int_equal(f->c->ops->put_config(f->c, name, spec, len, &e), 0);
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
    if (mcg_agent_open(&a, &f->o, &e) != 0)
        fail_msg("open: %s", e.msg);
    mcg_agent_result res;
    if (mcg_agent_run_once(&res, a, f->c, &e) != 0)
        fail_msg("run_once: %s", e.msg);
    mcg_agent_free(a);
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
    char *name =
        deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},"
                  "\"passwd\":{\"users\":[{\"name\":\"core\",\"sshAuthorizedKeys\":"
                  "[\"ssh-ed25519 AAAAC3Nza k1\",\"ssh-ed25519 AAAAC3Nzb k2\"]}]},"
                  "\"storage\":{\"files\":["
                  "{\"path\":\"/etc/a.conf\",\"contents\":{\"source\":\"data:,hello%0A\"}},"
                  "{\"path\":\"/etc/deep/er/b.conf\",\"mode\":384,\"user\":{\"name\":\"core\"},"
                  "\"group\":{\"name\":\"wheel\"},\"contents\":{\"source\":\"data:;base64,Yg==\"}},"
                  "{\"path\":\"/etc/empty\"}],"
                  "\"directories\":[{\"path\":\"/var/d\",\"mode\":448}],"
                  "\"links\":[{\"path\":\"/etc/l\",\"target\":\"/etc/a.conf\"}]}}");
    mcg_agent_result r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_string_equal(r.config, name);
    assert_true(r.applied);
    assert_file(f->root, "etc/a.conf", "hello\n", 0644);
    assert_file(f->root, "etc/deep/er/b.conf", "b", 0600);
    assert_file(f->root, "etc/empty", "", 0644);
    assert_link(f->root, "etc/l", "/etc/a.conf");
    struct stat st;
    char *p = mcg_sprintf("%s/etc/deep/er/b.conf", f->root);
    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_uid, 1000);
    assert_int_equal(st.st_gid, 10);
    free(p);
    p = mcg_sprintf("%s/var/d", f->root);
    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_mode, S_IFDIR | 0700);
    free(p);
    assert_file(f->root, "home/core/.ssh/authorized_keys.d/mcgit",
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
    assert_non_null(strstr(cur, name));
    free(cur);
    assert_false(exists(f->root, "var/lib/mcgit/journal.json"));
    assert_int_equal(count_temps(f->root), 0);
    /* a second pass changes nothing and stays Done */
    r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_false(r.applied);
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
    assert_file(f->root, "etc/systemd/system/m.service", "[Service]\nExecStart=/bin/true\n", 0644);
    /* an enablement link removed by hand is drift */
    char *p = mcg_sprintf("%s/etc/systemd/system/timers.target.wants/t@x.service", f->root);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(pass(f).state, MCG_AGENT_DEGRADED);
    assert_node(f, "Degraded", n2, "timers.target.wants/t@x.service: missing");
    assert_int_equal(symlink("/usr/lib/systemd/system/t@.service", p), 0);
    /* a link that a disabled unit must not have is drift too */
    char *q = mcg_sprintf("%s/etc/systemd/system/multi-user.target.wants/a.service", f->root);
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
    assert_non_null(strstr(r.reason, "/etc/a: content differs"));
    assert_non_null(strstr(r.reason, "/etc/b: mode file 0644, want file 0600"));
    assert_non_null(strstr(r.reason, "/etc/c: missing"));
    assert_non_null(strstr(r.reason, "/etc/systemd/system/m.service: not a symbolic link"));
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
    assert_non_null(strstr(r.reason, "/etc/c:"));
    rmdir(pc);
    put(f->root, "etc/c", "ccc", 0644);
    /* offline: drift is still checked on the kept copy */
    put(f->root, "etc/a", "zzz", 0644);
    mcg_agent *a = NULL;
    mcg_err e = {0};
    assert_int_equal(mcg_agent_open(&a, &f->o, &e), 0);
    assert_int_equal(mcg_agent_check_drift(&r, a, &e), 0);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_non_null(strstr(r.reason, "/etc/a: content differs"));
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
    rm_rf(etc);
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
    assert_non_null(strstr(r.reason, "not published"));
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
    assert_non_null(strstr(r.reason, "user 'x' not found in /etc/passwd"));
    assert_false(exists(f->root, "etc/a"));
    assert_node(f, "Degraded", NULL, "user 'x' not found in /etc/passwd");
    /* core missing with SSH keys */
    put(f->root, "etc/passwd", "root:x:0:0::/root:/bin/sh\n", 0644);
    char *n2 = deploy(f, "{\"ignition\":{\"version\":\"3.4.0\"},\"passwd\":{\"users\":[{\"name\":"
                         "\"core\",\"sshAuthorizedKeys\":[\"ssh-ed25519 AAAA k\"]}]}}");
    r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DEGRADED);
    assert_non_null(strstr(r.reason, "user 'core' not found in /etc/passwd"));
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
    assert_non_null(strstr(r.reason, "/etc/h"));
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
    assert_int_equal(f->c->ops->put_policy(f->c, spec, &e), 0);
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
        assert_int_equal(mcg_acfg_load(&o, &root, mcg_strdup("old"), os, strlen(os), false, &e), 0);
        assert_int_equal(mcg_acfg_load(&n, &root, mcg_strdup("new"), ns, strlen(ns), false, &e), 0);
        mcg_plan_actions act;
        mcg_plan_decide(&act, o, n, &pol);
        char *got = mcg_plan_actions_str(&act);
        if (strcmp(got, cases[i].want))
            fail_msg("case %zu: got '%s', want '%s'", i, got, cases[i].want);
        free(got);
        mcg_plan_actions_free(&act);
        /* with no policy: Reboot for files and units, None for SSH keys */
        mcg_plan_decide(&act, o, n, NULL);
        got = mcg_plan_actions_str(&act);
        bool ssh = strstr(cases[i].new_json, "sshAuthorized") != NULL;
        bool nochange = !strcmp(cases[i].old_json, cases[i].new_json);
        if (!*cases[i].new_json)
            ssh = false;
        assert_string_equal(got, ssh || nochange ? "None" : "Reboot");
        free(got);
        mcg_plan_actions_free(&act);
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
    assert_int_equal(f->c->ops->put_policy(f->c, spec, &e), 0);
    json_decref(spec);
    char *log = mcg_sprintf("%s/systemctl.log", f->dir);
    char *sc = mcg_sprintf("echo >>'%s'", log);
    char *bootf = mcg_sprintf("%s/boot_id", f->dir);
    put(f->dir, "boot_id", "boot-1\n", 0644);
    setenv("MCGIT_BOOT_ID_FILE", bootf, 1);
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
    assert_non_null(strstr(r.reason, "reboot command 'exit 3' failed (exit 3)"));
    f->o.reboot_command = "true";
    r = pass(f);
    assert_int_equal(r.state, MCG_AGENT_DONE);
    assert_true(r.rebooted);
    assert_node(f, "Done", n1, NULL);
    f->o.reboot_command = NULL;
    free(n1);
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
    assert_non_null(strstr(r.reason, "state directory"));
    free(sd);
    free(n1);
    free(n2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fresh_apply, setup, teardown),
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
    };
    return cmocka_run_group_tests_name("agent", tests, NULL, NULL);
}
