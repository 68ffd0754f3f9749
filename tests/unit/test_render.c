/*
 * test_render.c — selection, merge, canonical spec and content names.
 *
 * Each test builds a small config repo from YAML strings (through the real
 * parser) — most on a cmocka fixture of the standard pools (std_pools,
 * std_master), freed by its teardown even when the test fails — renders it,
 * and checks one rule of docs/concepts.md
 * ("Rendering") or docs/config-repo.md: keyed merges
 * field by field, drop-ins per unit, SSH keys united in order, custom pools
 * inheriting worker, order by name, defaults normalised before hashing, the
 * pool name left out of the hash, and the refusals (a pool selecting
 * nothing, a path below a file, a config over 1.5 MiB).
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

#include "gitops/gitops.h" /* mcg_source_load_dir, for the fixtures */
#include "render/render.h"

#define API "apiVersion: machineconfiguration.openshift.io/v1\n"
#define ROLE "machineconfiguration.openshift.io/role"

/* ------------------------------------------------------------ building repos */

typedef struct repo {
    mcg_model *m;
    mcg_render *r;
    mcg_diags diags;
    int rc;
} repo;

/* A MachineConfig NAME for ROLE; BODY is YAML at the config's level (4 spaces). */
static char *mc_yaml(const char *name, const char *role, const char *body)
{
    return mcg_sprintf(API "kind: MachineConfig\n"
                           "metadata:\n"
                           "  name: %s\n"
                           "  labels:\n"
                           "    " ROLE ": %s\n"
                           "spec:\n"
                           "  config:\n"
                           "    ignition:\n"
                           "      version: 3.2.0\n"
                           "%s",
                       name, role, body ? body : "");
}

/* A pool selecting role ROLE (or with SELECTOR as given, YAML at 2 spaces). */
static char *pool_yaml(const char *name, const char *selector)
{
    if (selector)
        return mcg_sprintf(API "kind: MachineConfigPool\nmetadata:\n  name: %s\nspec:\n%s", name,
                           selector);
    return mcg_sprintf(API "kind: MachineConfigPool\nmetadata:\n  name: %s\nspec:\n"
                           "  machineConfigSelector:\n    matchLabels:\n      " ROLE ": %s\n",
                       name, name);
}

static void add(repo *rp, const char *path, char *yaml /* freed */)
{
    if (!rp->m)
        rp->m = mcg_model_new();
    mcg_model_add_file(rp->m, path, yaml, strlen(yaml), &rp->diags);
    free(yaml);
}

static void add_mc(repo *rp, const char *name, const char *role, const char *body)
{
    char *path = mcg_sprintf("machineconfigs/%s.yaml", name);
    add(rp, path, mc_yaml(name, role, body));
    free(path);
}

static void add_pool(repo *rp, const char *name, const char *selector)
{
    char *path = mcg_sprintf("pools/%s.yaml", name);
    add(rp, path, pool_yaml(name, selector));
    free(path);
}

/* master + worker pools, as repo-template has. */
static void add_std_pools(repo *rp)
{
    add_pool(rp, "master", NULL);
    add_pool(rp, "worker", NULL);
}

/* Finish and render; the model must be valid. */
static void render(repo *rp)
{
    mcg_model_finish(rp->m, &rp->diags);
    if (rp->diags.count)
        fail_msg("invalid model: %s", rp->diags.msgs[0]);
    rp->rc = mcg_render_model(&rp->r, rp->m, &rp->diags);
}

static void render_ok(repo *rp)
{
    render(rp);
    if (rp->rc != 0)
        fail_msg("render failed: %s", rp->diags.count ? rp->diags.msgs[0] : "?");
    assert_int_equal(rp->diags.count, 0);
}

static void repo_free(repo *rp)
{
    mcg_render_free(rp->r);
    mcg_model_free(rp->m);
    mcg_diags_free(&rp->diags);
    memset(rp, 0, sizeof(*rp));
}

/* master + worker pools and an empty 00-master. */
static void add_std_master(repo *rp)
{
    add_std_pools(rp);
    add_mc(rp, "00-master", "master", NULL);
}

/* The same and an empty 00-worker. */
static void add_std_mcs(repo *rp)
{
    add_std_master(rp);
    add_mc(rp, "00-worker", "worker", NULL);
}

/*
 * The fixtures most tests start from (cmocka setups; the teardown frees the
 * repo even when the test fails): the master and worker pools, and with
 * std_master an empty 00-master too.
 */
static int std_pools(void **state)
{
    repo *rp = mcg_calloc(1, sizeof(*rp));
    add_std_pools(rp);
    *state = rp;
    return 0;
}

static int std_master(void **state)
{
    std_pools(state);
    add_mc(*state, "00-master", "master", NULL);
    return 0;
}

static int repo_teardown(void **state)
{
    repo_free(*state);
    free(*state);
    return 0;
}

static const mcg_rendered_pool *pool(const repo *rp, const char *name)
{
    const mcg_rendered_pool *p = mcg_render_pool(rp->r, name);
    if (!p)
        fail_msg("no rendered pool '%s'", name);
    return p;
}

static const mcg_storage *entry(const mcg_rendered_pool *p, const char *path)
{
    for (size_t i = 0; i < p->merged.nstorage; i++)
        if (!strcmp(p->merged.storage[i].path, path))
            return &p->merged.storage[i];
    fail_msg("pool %s has no entry '%s'", p->pool, path);
    return NULL;
}

static const mcg_unit *unit(const mcg_rendered_pool *p, const char *name)
{
    for (size_t i = 0; i < p->merged.nunits; i++)
        if (!strcmp(p->merged.units[i].name, name))
            return &p->merged.units[i];
    fail_msg("pool %s has no unit '%s'", p->pool, name);
    return NULL;
}

static const mcg_dropin *dropin(const mcg_unit *u, const char *name)
{
    for (size_t i = 0; i < u->ndropins; i++)
        if (!strcmp(u->dropins[i].name, name))
            return &u->dropins[i];
    fail_msg("unit %s has no drop-in '%s'", u->name, name);
    return NULL;
}

/* The MC names of a rendered pool, comma-separated (caller frees). */
static char *mc_list(const mcg_rendered_pool *p)
{
    mcg_buf b = MCG_BUF_INIT;
    for (size_t i = 0; i < p->mcs.n; i++)
        mcg_buf_printf(&b, "%s%s", i ? "," : "", p->mcs.v[i]);
    return mcg_buf_detach(&b, NULL);
}

static void assert_mcs(const mcg_rendered_pool *p, const char *want)
{
    char *got = mc_list(p);
    if (strcmp(got, want) != 0)
        fail_msg("pool %s merges [%s], want [%s]", p->pool, got, want);
    free(got);
}

/* The rendered spec of a pool parsed back as JSON (caller decrefs). */
static json_t *spec_of(const mcg_rendered_pool *p)
{
    json_error_t je;
    json_t *j = json_loadb(p->spec, p->spec_len, 0, &je);
    if (!j)
        fail_msg("spec of %s is not JSON: %s", p->pool, je.text);
    return j;
}

/* ------------------------------------------------------------ merge: files */

static void test_file_field_by_field(void **state)
{
    repo *rp = *state;
    add_mc(rp, "10-a", "worker",
           "    storage:\n      files:\n"
           "      - path: /etc/a\n"
           "        mode: 0600\n"
           "        overwrite: false\n"
           "        user: {name: root}\n"
           "        contents: {source: \"data:,one\"}\n");
    add_mc(rp, "20-b", "worker",
           "    storage:\n      files:\n"
           "      - path: /etc/a\n"
           "        mode: 0640\n"
           "        group: {name: wheel}\n");
    add_mc(rp, "30-c", "worker",
           "    storage:\n      files:\n"
           "      - path: /etc/a\n"
           "        user: {id: 1000}\n");
    add_mc(rp, "00-master", "master", NULL);
    render_ok(rp);
    const mcg_rendered_pool *w = pool(rp, "worker");
    assert_mcs(w, "10-a,20-b,30-c");
    const mcg_storage *s = entry(w, "/etc/a");
    assert_int_equal(s->kind, MCG_NODE_FILE);
    assert_int_equal(s->mode, 0640);             /* the later mode wins */
    assert_string_equal(s->source, "data:,one"); /* contents kept: 20-b, 30-c leave it unset */
    assert_int_equal(s->data_len, 3);
    assert_int_equal(s->overwrite, MCG_FALSE); /* kept */
    assert_null(s->user.name);                 /* user replaced as a whole: by id */
    assert_true(s->user.has_id);
    assert_int_equal(s->user.id, 1000);
    assert_string_equal(s->group.name, "wheel");
    /* the entry remembers the last MC that touched it */
    assert_string_equal(s->loc.file, "machineconfigs/30-c.yaml");

    json_t *j = spec_of(w);
    json_t *f = json_array_get(
        json_object_get(json_object_get(json_object_get(j, "config"), "storage"), "files"), 0);
    assert_string_equal(json_string_value(json_object_get(f, "path")), "/etc/a");
    assert_int_equal(json_integer_value(json_object_get(f, "mode")), 0640);
    assert_true(json_is_false(json_object_get(f, "overwrite")));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(f, "contents"), "source")), "data:,one");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(f, "user"), "id")), 1000);
    assert_string_equal(json_string_value(json_object_get(json_object_get(f, "group"), "name")),
                        "wheel");
    json_decref(j);
}

static void test_file_later_contents_win(void **state)
{
    repo *rp = *state;
    /* gzip'ed "hello gzip\n" first, then plain contents: the later contents
     * replace source and compression together. */
    add_mc(rp, "10-a", "worker",
           "    storage:\n      files:\n"
           "      - path: /etc/a\n"
           "        contents:\n"
           "          compression: gzip\n"
           "          source: data:;base64,H4sIAAAAAAACA8tIzcnJV0ivyizgAgA5fGNWCwAAAA==\n");
    add_mc(rp, "20-b", "worker",
           "    storage:\n      files:\n"
           "      - path: /etc/a\n"
           "        contents: {source: \"data:,two\"}\n"
           "      - path: /etc/b\n"
           "        contents:\n"
           "          compression: gzip\n"
           "          source: data:;base64,H4sIAAAAAAACA8tIzcnJV0ivyizgAgA5fGNWCwAAAA==\n");
    add_mc(rp, "30-c", "worker",
           "    storage:\n      files:\n"
           "      - path: /etc/b\n"
           "        contents: {source: \"data:,\"}\n");
    render_ok(rp);
    const mcg_rendered_pool *w = pool(rp, "worker");
    const mcg_storage *a = entry(w, "/etc/a");
    assert_string_equal(a->source, "data:,two");
    assert_null(a->compression);
    assert_int_equal(a->data_len, 3);
    assert_memory_equal(a->data, "two", 3);
    /* explicitly empty contents win over earlier contents */
    const mcg_storage *b = entry(w, "/etc/b");
    assert_string_equal(b->source, "data:,");
    assert_null(b->compression);
    assert_int_equal(b->data_len, 0);
}

static void test_file_replaced_by_directory(void **state)
{
    repo *rp = *state;
    add_mc(rp, "10-a", "worker",
           "    storage:\n"
           "      files:\n"
           "      - path: /etc/x\n"
           "        mode: 0600\n"
           "        user: {name: root}\n"
           "        contents: {source: \"data:,file\"}\n"
           "      directories:\n"
           "      - path: /etc/y\n"
           "        mode: 0700\n"
           "      links:\n"
           "      - path: /etc/z\n"
           "        target: /etc/x\n");
    add_mc(rp, "20-b", "worker",
           "    storage:\n"
           "      directories:\n"
           "      - path: /etc/x\n"
           "      links:\n"
           "      - path: /etc/y\n"
           "        target: /etc/x\n"
           "        hard: false\n"
           "      files:\n"
           "      - path: /etc/z\n");
    render_ok(rp);
    const mcg_rendered_pool *w = pool(rp, "worker");
    assert_int_equal(w->merged.nstorage, 3);
    const mcg_storage *x = entry(w, "/etc/x");
    assert_int_equal(x->kind, MCG_NODE_DIR); /* replaced whole: nothing of the file left */
    assert_int_equal(x->mode, 0755);         /* the directory default, not the file's 0600 */
    assert_null(x->user.name);
    assert_null(x->source);
    assert_false(x->has_contents);
    const mcg_storage *y = entry(w, "/etc/y");
    assert_int_equal(y->kind, MCG_NODE_LINK);
    assert_string_equal(y->target, "/etc/x");
    const mcg_storage *z = entry(w, "/etc/z");
    assert_int_equal(z->kind, MCG_NODE_FILE);
    assert_null(z->target);
    assert_int_equal(z->mode, 0644);

    json_t *j = spec_of(w);
    json_t *st = json_object_get(json_object_get(j, "config"), "storage");
    assert_int_equal(json_array_size(json_object_get(st, "files")), 1);
    assert_int_equal(json_array_size(json_object_get(st, "directories")), 1);
    assert_int_equal(json_array_size(json_object_get(st, "links")), 1);
    json_t *d = json_array_get(json_object_get(st, "directories"), 0);
    assert_string_equal(json_string_value(json_object_get(d, "path")), "/etc/x");
    assert_null(json_object_get(d, "contents"));
    assert_null(json_object_get(d, "user"));
    json_decref(j);
}

/* ------------------------------------------------------------ merge: units */

static void test_dropins_per_unit(void **state)
{
    repo *rp = *state;
    add_mc(rp, "10-a", "worker",
           "    systemd:\n      units:\n"
           "      - name: a.service\n"
           "        contents: \"[Service]\\nExecStart=/bin/a\\n\"\n"
           "        dropins:\n"
           "        - {name: 20-second.conf, contents: '# two'}\n"
           "        - {name: 10-first.conf, contents: '# one'}\n"
           "      - name: b.service\n"
           "        dropins:\n"
           "        - {name: 10-first.conf, contents: '# b-one'}\n");
    add_mc(rp, "20-b", "worker",
           "    systemd:\n      units:\n"
           "      - name: a.service\n"
           "        dropins:\n"
           "        - {name: 20-second.conf, contents: '# two-b'}\n"
           "        - {name: 30-third.conf, contents: '# three'}\n"
           "        - {name: 10-first.conf}\n");
    render_ok(rp);
    const mcg_rendered_pool *w = pool(rp, "worker");
    const mcg_unit *a = unit(w, "a.service");
    assert_string_equal(a->contents, "[Service]\nExecStart=/bin/a\n"); /* kept */
    assert_int_equal(a->ndropins, 3);
    assert_string_equal(dropin(a, "10-first.conf")->contents, "# one"); /* unset: kept */
    assert_string_equal(dropin(a, "20-second.conf")->contents, "# two-b");
    assert_string_equal(dropin(a, "30-third.conf")->contents, "# three");
    /* sorted by name in the canonical form */
    assert_string_equal(a->dropins[0].name, "10-first.conf");
    assert_string_equal(a->dropins[2].name, "30-third.conf");
    /* another unit's drop-in of the same name is its own */
    const mcg_unit *b = unit(w, "b.service");
    assert_int_equal(b->ndropins, 1);
    assert_string_equal(b->dropins[0].contents, "# b-one");
    assert_null(b->contents);
}

static void test_unit_enabled_mask_field_by_field(void **state)
{
    repo *rp = *state;
    add_mc(rp, "10-a", "worker",
           "    systemd:\n      units:\n"
           "      - {name: a.service, enabled: true, contents: '# a'}\n"
           "      - {name: b.service, mask: true}\n"
           "      - {name: c.service, enabled: true}\n");
    add_mc(rp, "20-b", "worker",
           "    systemd:\n      units:\n"
           "      - {name: a.service, mask: true}\n"
           "      - {name: b.service, enabled: false}\n"
           "      - {name: c.service, contents: '# c'}\n");
    add_mc(rp, "30-c", "worker",
           "    systemd:\n      units:\n"
           "      - {name: a.service, enabled: false}\n"
           "      - {name: b.service, mask: false}\n");
    render_ok(rp);
    const mcg_rendered_pool *w = pool(rp, "worker");
    const mcg_unit *a = unit(w, "a.service");
    assert_int_equal(a->enabled, MCG_FALSE);
    assert_int_equal(a->mask, MCG_TRUE);
    assert_string_equal(a->contents, "# a");
    const mcg_unit *b = unit(w, "b.service");
    assert_int_equal(b->enabled, MCG_FALSE);
    assert_int_equal(b->mask, MCG_FALSE);
    const mcg_unit *c = unit(w, "c.service");
    assert_int_equal(c->enabled, MCG_TRUE);
    assert_int_equal(c->mask, MCG_UNSET); /* never given: left out of the spec */
    assert_string_equal(c->contents, "# c");

    json_t *j = spec_of(w);
    json_t *units =
        json_object_get(json_object_get(json_object_get(j, "config"), "systemd"), "units");
    assert_int_equal(json_array_size(units), 3);
    json_t *cj = json_array_get(units, 2);
    assert_string_equal(json_string_value(json_object_get(cj, "name")), "c.service");
    assert_true(json_is_true(json_object_get(cj, "enabled")));
    assert_null(json_object_get(cj, "mask"));
    json_decref(j);
}

/* ------------------------------------------------------------ merge: SSH keys */

static void test_ssh_keys_united(void **state)
{
    repo *rp = *state;
    add_mc(rp, "10-a", "worker",
           "    passwd:\n      users:\n      - name: core\n"
           "        sshAuthorizedKeys: [\"ssh-ed25519 K1\", \"ssh-ed25519 K2\"]\n");
    add_mc(rp, "20-b", "worker",
           "    passwd:\n      users:\n      - name: core\n"
           "        sshAuthorizedKeys: [\"ssh-ed25519 K2\", \"ssh-ed25519 K3\", "
           "\"ssh-ed25519 K1\"]\n");
    add_mc(rp, "30-c", "worker",
           "    passwd:\n      users:\n      - name: core\n"
           "        sshAuthorizedKeys: [\"ssh-ed25519 K0\", \"ssh-ed25519 K3\"]\n");
    render_ok(rp);
    const mcg_rendered_pool *w = pool(rp, "worker");
    assert_int_equal(w->merged.ssh_keys.n, 4);
    assert_string_equal(w->merged.ssh_keys.v[0], "ssh-ed25519 K1");
    assert_string_equal(w->merged.ssh_keys.v[1], "ssh-ed25519 K2");
    assert_string_equal(w->merged.ssh_keys.v[2], "ssh-ed25519 K3");
    assert_string_equal(w->merged.ssh_keys.v[3], "ssh-ed25519 K0"); /* not sorted */
    json_t *j = spec_of(w);
    json_t *u = json_array_get(
        json_object_get(json_object_get(json_object_get(j, "config"), "passwd"), "users"), 0);
    assert_string_equal(json_string_value(json_object_get(u, "name")), "core");
    json_t *keys = json_object_get(u, "sshAuthorizedKeys");
    assert_int_equal(json_array_size(keys), 4);
    assert_string_equal(json_string_value(json_array_get(keys, 3)), "ssh-ed25519 K0");
    json_decref(j);
    /* master has no keys: no passwd section at all */
    j = spec_of(pool(rp, "master"));
    assert_null(json_object_get(json_object_get(j, "config"), "passwd"));
    json_decref(j);
}

/* ------------------------------------------------------------ selection */

static void test_custom_pool_inherits_worker(void **state)
{
    repo *rp = *state;
    add_pool(rp, "infra", NULL); /* selects role infra only */
    add_mc(rp, "00-master", "master",
           "    storage:\n      files:\n      - {path: /etc/role, contents: {source: "
           "\"data:,master\"}}\n");
    add_mc(rp, "00-worker", "worker",
           "    storage:\n      files:\n      - {path: /etc/role, contents: {source: "
           "\"data:,worker\"}}\n"
           "      - {path: /etc/worker-only, mode: 0600}\n");
    add_mc(rp, "50-worker", "worker",
           "    storage:\n      files:\n      - {path: /etc/late, contents: {source: "
           "\"data:,worker\"}}\n");
    /* sorts before worker's MCs, yet merges after them: the pool's own win */
    add_mc(rp, "05-infra", "infra",
           "    storage:\n      files:\n      - {path: /etc/role, contents: {source: "
           "\"data:,infra\"}}\n"
           "      - {path: /etc/late, mode: 0640}\n");
    render_ok(rp);
    const mcg_rendered_pool *infra = pool(rp, "infra");
    assert_mcs(infra, "00-worker,50-worker,05-infra");
    assert_string_equal(entry(infra, "/etc/role")->source, "data:,infra");
    assert_int_equal(entry(infra, "/etc/worker-only")->mode, 0600);
    const mcg_storage *late = entry(infra, "/etc/late");
    assert_int_equal(late->mode, 0640);
    assert_string_equal(late->source, "data:,worker");

    /* master does not inherit worker */
    const mcg_rendered_pool *master = pool(rp, "master");
    assert_mcs(master, "00-master");
    assert_int_equal(master->merged.nstorage, 1);
    assert_string_equal(entry(master, "/etc/role")->source, "data:,master");
    /* worker does not see the custom pool's MCs */
    const mcg_rendered_pool *worker = pool(rp, "worker");
    assert_mcs(worker, "00-worker,50-worker");
    assert_string_equal(entry(worker, "/etc/role")->source, "data:,worker");
    assert_int_equal(worker->merged.nstorage, 3);
}

static void test_custom_pool_selecting_worker_too(void **state)
{
    (void)state;
    /* The MCO way of writing a custom pool: role In [worker, infra]. Worker's
     * MCs still come first and only once. */
    repo rp = {0};
    add_std_pools(&rp);
    add_pool(&rp, "infra",
             "  machineConfigSelector:\n"
             "    matchExpressions:\n"
             "    - {key: " ROLE ", operator: In, values: [worker, infra]}\n");
    add_mc(&rp, "00-master", "master", NULL);
    add_mc(&rp, "10-worker", "worker", NULL);
    add_mc(&rp, "01-infra", "infra", NULL);
    add_mc(&rp, "20-worker", "worker", NULL);
    render_ok(&rp);
    assert_mcs(pool(&rp, "infra"), "10-worker,20-worker,01-infra");
    repo_free(&rp);
}

static void test_order_by_name(void **state)
{
    (void)state;
    /* Created in reverse order; the merge goes by name: 99-x last. */
    repo rp = {0};
    add_mc(
        &rp, "99-x", "worker",
        "    storage:\n      files:\n      - {path: /etc/a, contents: {source: \"data:,99\"}}\n");
    add_mc(&rp, "50-x", "worker",
           "    storage:\n      files:\n      - {path: /etc/a, contents: {source: \"data:,50\"}}\n"
           "      - {path: /etc/b, mode: 0600}\n");
    add_mc(&rp, "10-x", "worker",
           "    storage:\n      files:\n      - {path: /etc/a, contents: {source: \"data:,10\"}}\n"
           "      - {path: /etc/b, mode: 0700}\n");
    add_mc(&rp, "00-master", "master", NULL);
    add_pool(&rp, "worker", NULL);
    add_pool(&rp, "master", NULL);
    render_ok(&rp);
    const mcg_rendered_pool *w = pool(&rp, "worker");
    assert_mcs(w, "10-x,50-x,99-x");
    assert_string_equal(entry(w, "/etc/a")->source, "data:,99");
    assert_int_equal(entry(w, "/etc/b")->mode, 0600);
    /* pools come out sorted by name too */
    assert_string_equal(rp.r->pools[0].pool, "master");
    assert_string_equal(rp.r->pools[1].pool, "worker");
    repo_free(&rp);
}

static void test_render_select_api(void **state)
{
    repo *rp = *state;
    add_pool(rp, "gpu", NULL);
    add_mc(rp, "b", "worker", NULL);
    add_mc(rp, "a", "gpu", NULL);
    add_mc(rp, "c", "master", NULL);
    render_ok(rp);
    mcg_strv v = {0};
    mcg_render_select(&v, rp->m, mcg_model_pool(rp->m, "gpu"));
    assert_int_equal(v.n, 2);
    assert_string_equal(v.v[0], "b");
    assert_string_equal(v.v[1], "a");
    mcg_strv_free(&v);
    mcg_render_select(&v, rp->m, mcg_model_pool(rp->m, "master"));
    assert_int_equal(v.n, 1);
    assert_string_equal(v.v[0], "c");
    mcg_strv_free(&v);
}

/* ------------------------------------------------------------ refusals */

static void test_pool_selecting_nothing(void **state)
{
    (void)state;
    /* master selects nothing: refused; the other pools still render. A
     * custom pool whose own selector is empty still inherits worker's MCs. */
    repo rp = {0};
    add_std_pools(&rp);
    add_pool(&rp, "empty", "  machineConfigSelector: {}\n");
    add_mc(&rp, "00-worker", "worker", NULL);
    render(&rp);
    assert_int_equal(rp.rc, MCG_EINVAL);
    assert_int_equal(rp.diags.count, 1);
    assert_string_equal(rp.diags.msgs[0], "pools/master.yaml:1: pool 'master' selects no "
                                          "MachineConfig (check machineConfigSelector)");
    const mcg_rendered_pool *m = pool(&rp, "master");
    assert_non_null(m->error);
    assert_null(m->name);
    assert_null(m->spec);
    const mcg_rendered_pool *w = pool(&rp, "worker"), *e = pool(&rp, "empty");
    assert_null(w->error);
    assert_non_null(w->name);
    assert_string_equal(e->hash, w->hash);
    assert_mcs(e, "00-worker");
    repo_free(&rp);

    /* worker with an empty selector, a custom pool with none at all */
    add_pool(&rp, "master", NULL);
    add_pool(&rp, "worker", "  machineConfigSelector: {}\n");
    add_pool(&rp, "none", "  paused: true\n");
    add_mc(&rp, "00-master", "master", NULL);
    add_mc(&rp, "00-worker", "worker", NULL);
    render(&rp);
    assert_int_equal(rp.rc, MCG_EINVAL);
    assert_int_equal(rp.diags.count, 2);
    assert_string_equal(rp.diags.msgs[0], "pools/none.yaml:1: pool 'none' selects no "
                                          "MachineConfig (check machineConfigSelector)");
    assert_string_equal(rp.diags.msgs[1], "pools/worker.yaml:1: pool 'worker' selects no "
                                          "MachineConfig (check machineConfigSelector)");
    assert_null(pool(&rp, "master")->error);
    repo_free(&rp);
}

static void test_path_below_file(void **state)
{
    repo *rp = *state;
    add_mc(rp, "00-master", "master",
           "    storage:\n"
           "      links:\n"
           "      - {path: /etc/l, target: /tmp}\n"
           "      files:\n"
           "      - path: /etc/l/x/y\n");
    add_mc(rp, "10-a", "worker", "    storage:\n      files:\n      - path: /etc/a\n");
    add_mc(rp, "20-b", "worker",
           "    storage:\n"
           "      directories:\n"
           "      - path: /etc/d\n"
           "      files:\n"
           "      - path: /etc/d/ok\n"
           "      - path: /etc/a/b\n");
    render(rp);
    assert_int_equal(rp->rc, MCG_EINVAL);
    assert_int_equal(rp->diags.count, 2);
    assert_string_equal(rp->diags.msgs[0], "machineconfigs/00-master.yaml:15: path '/etc/l/x/y' "
                                           "lies below '/etc/l', which is a link");
    assert_string_equal(rp->diags.msgs[1], "machineconfigs/20-b.yaml:16: path '/etc/a/b' lies "
                                           "below '/etc/a', which is a file");
}

static void test_link_needs_target(void **state)
{
    (void)state;
    /* A link may be completed by a later MC (field by field); what is still
     * missing after the merge is refused. */
    repo rp = {0};
    add_std_pools(&rp);
    add_mc(&rp, "00-master", "master",
           "    storage:\n      links:\n      - {path: /etc/l, overwrite: true}\n");
    add_mc(&rp, "10-a", "worker",
           "    storage:\n      links:\n      - {path: /etc/l, overwrite: true}\n"
           "      - {path: /etc/h, target: rel/ative}\n");
    add_mc(&rp, "20-b", "worker",
           "    storage:\n      links:\n      - {path: /etc/l, target: /x}\n"
           "      - {path: /etc/h, hard: true}\n");
    render(&rp);
    assert_int_equal(rp.rc, MCG_EINVAL);
    assert_int_equal(rp.diags.count, 2);
    assert_string_equal(rp.diags.msgs[0],
                        "machineconfigs/00-master.yaml:13: link '/etc/l' has no target");
    assert_string_equal(rp.diags.msgs[1], "machineconfigs/20-b.yaml:14: hard link '/etc/h' needs "
                                          "an absolute clean target (got 'rel/ative')");
    repo_free(&rp);

    /* completed by the later MC: fine */
    add_std_master(&rp);
    add_mc(&rp, "10-a", "worker", "    storage:\n      links:\n      - {path: /etc/l}\n");
    add_mc(&rp, "20-b", "worker",
           "    storage:\n      links:\n      - {path: /etc/l, target: /x, hard: true}\n");
    render_ok(&rp);
    assert_string_equal(entry(pool(&rp, "worker"), "/etc/l")->target, "/x");
    repo_free(&rp);
}

static void test_too_large(void **state)
{
    (void)state;
    /* Two files of 800 KiB of base64 each: every one is fine, together they
     * are over 1.5 MiB of rendered config. */
    mcg_buf big = MCG_BUF_INIT;
    mcg_buf_puts(&big, "    storage:\n      files:\n");
    for (int f = 0; f < 2; f++) {
        mcg_buf_printf(&big,
                       "      - path: /var/big%d\n        contents:\n"
                       "          source: data:;base64,",
                       f);
        for (int i = 0; i < 800 * 1024 / 4; i++)
            mcg_buf_puts(&big, "AAAA");
        mcg_buf_puts(&big, "\n");
    }
    repo rp = {0};
    add_std_master(&rp);
    add_mc(&rp, "10-big", "worker", big.ptr);
    render(&rp);
    assert_int_equal(rp.rc, MCG_EINVAL);
    assert_int_equal(rp.diags.count, 1);
    assert_contains(rp.diags.msgs[0], "pools/worker.yaml:1: pool 'worker': rendered config is ");
    assert_contains(rp.diags.msgs[0], "bytes, over the 1.5 MiB limit");
    assert_null(pool(&rp, "master")->error);
    repo_free(&rp);
    mcg_buf_free(&big);
}

/* ------------------------------------------------------------ names and hashes */

static void test_hash_excludes_pool_name(void **state)
{
    repo *rp = *state;
    add_pool(rp, "infra", NULL);
    const char *body = "    storage:\n      files:\n      - {path: /etc/a, contents: {source: "
                       "\"data:,same\"}}\n";
    add_mc(rp, "00-master", "master", body);
    add_mc(rp, "00-worker", "worker", body);
    render_ok(rp);
    const mcg_rendered_pool *m = pool(rp, "master"), *w = pool(rp, "worker"),
                            *i = pool(rp, "infra");
    assert_string_equal(m->hash, w->hash);
    assert_string_equal(m->hash, i->hash); /* infra = worker's MCs, nothing of its own */
    assert_int_equal(m->spec_len, w->spec_len);
    assert_memory_equal(m->spec, w->spec, m->spec_len);
    char want[128];
    snprintf(want, sizeof(want), "rendered-master-%s", m->hash);
    assert_string_equal(m->name, want);
    snprintf(want, sizeof(want), "rendered-worker-%s", m->hash);
    assert_string_equal(w->name, want);
    assert_string_not_equal(m->name, w->name);

    /* hash = first 32 hex digits of SHA-256 over the spec bytes */
    unsigned char d[MCG_SHA256_LEN];
    char hex[2 * MCG_SHA256_LEN + 1];
    mcg_sha256(w->spec, w->spec_len, d);
    mcg_hex(d, sizeof(d), hex);
    assert_int_equal(strlen(w->hash), MCG_HASH_HEX);
    assert_memory_equal(w->hash, hex, MCG_HASH_HEX);
    assert_true(mcg_render_name_matches(w->name, w->spec, w->spec_len));
    assert_true(mcg_render_name_matches(m->name, w->spec, w->spec_len));
}

static void test_name_matches(void **state)
{
    repo *rp = *state;
    add_mc(rp, "00-worker", "worker", NULL);
    render_ok(rp);
    const mcg_rendered_pool *w = pool(rp, "worker");
    assert_true(mcg_render_name_matches(w->name, w->spec, w->spec_len));
    char *tampered = mcg_strndup(w->spec, w->spec_len);
    tampered[w->spec_len - 3] ^= 1;
    assert_false(mcg_render_name_matches(w->name, tampered, w->spec_len));
    free(tampered);
    assert_false(mcg_render_name_matches(w->name, w->spec, w->spec_len - 1));
    char *bad = mcg_strdup(w->name);
    bad[strlen(bad) - 1] = bad[strlen(bad) - 1] == '0' ? '1' : '0';
    assert_false(mcg_render_name_matches(bad, w->spec, w->spec_len));
    free(bad);
    assert_false(mcg_render_name_matches("rendered-worker", w->spec, w->spec_len));
    assert_false(mcg_render_name_matches("", w->spec, w->spec_len));
    char *noprefix = mcg_sprintf("worker-x-%s", w->hash);
    assert_false(mcg_render_name_matches(noprefix, w->spec, w->spec_len));
    free(noprefix);
}

static void test_defaults_normalised(void **state)
{
    (void)state;
    /* Worker says it all explicitly, master leaves the defaults unset and in
     * another order and Ignition version: same spec, same hash. */
    repo rp = {0};
    add_std_pools(&rp);
    add_mc(&rp, "00-worker", "worker",
           "    storage:\n"
           "      files:\n"
           "      - {path: /etc/b, mode: 0644, overwrite: true, contents: {source: \"data:,\"}}\n"
           "      - {path: /etc/a, mode: 0644, overwrite: true}\n"
           "      directories:\n"
           "      - {path: /etc/d, mode: 0755, overwrite: true}\n"
           "      links:\n"
           "      - {path: /etc/l, target: /etc/a, hard: false, overwrite: true}\n"
           "    systemd:\n"
           "      units:\n"
           "      - {name: z.service, contents: '# z'}\n"
           "      - name: a.service\n"
           "        dropins: [{name: b.conf, contents: '# b'}, {name: a.conf, contents: '# a'}]\n");
    add_mc(&rp, "00-master", "master",
           "    systemd:\n"
           "      units:\n"
           "      - name: a.service\n"
           "        dropins: [{name: a.conf, contents: '# a'}, {name: b.conf, contents: '# b'}]\n"
           "      - {name: z.service, contents: '# z'}\n"
           "    storage:\n"
           "      links:\n"
           "      - {path: /etc/l, target: /etc/a}\n"
           "      directories:\n"
           "      - {path: /etc/d}\n"
           "      files:\n"
           "      - {path: /etc/a}\n"
           "      - {path: /etc/b, contents: {source: \"data:,\"}}\n");
    render_ok(&rp);
    const mcg_rendered_pool *m = pool(&rp, "master"), *w = pool(&rp, "worker");
    if (strcmp(m->hash, w->hash) != 0)
        fail_msg("specs differ:\n%s\n---\n%s", m->spec, w->spec);
    /* the canonical form: version 3.4.0, defaults spelled out, sorted */
    json_t *j = spec_of(w);
    json_t *cfg = json_object_get(j, "config");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(cfg, "ignition"), "version")), "3.4.0");
    json_t *files = json_object_get(json_object_get(cfg, "storage"), "files");
    json_t *fa = json_array_get(files, 0);
    assert_string_equal(json_string_value(json_object_get(fa, "path")), "/etc/a");
    assert_int_equal(json_integer_value(json_object_get(fa, "mode")), 0644);
    assert_true(json_is_true(json_object_get(fa, "overwrite")));
    assert_null(json_object_get(fa, "contents"));
    json_t *l = json_array_get(json_object_get(json_object_get(cfg, "storage"), "links"), 0);
    assert_true(json_is_false(json_object_get(l, "hard")));
    assert_null(json_object_get(l, "mode"));
    json_t *d = json_array_get(json_object_get(json_object_get(cfg, "storage"), "directories"), 0);
    assert_int_equal(json_integer_value(json_object_get(d, "mode")), 0755);
    json_decref(j);
    /* canonical bytes: sorted keys, 2-space indent, trailing newline */
    assert_int_equal(w->spec[w->spec_len - 1], '\n');
    assert_int_equal(strncmp(w->spec, "{\n  \"config\": {\n    \"ignition\": {\n", 33), 0);
    repo_free(&rp);
}

static void test_different_content_different_hash(void **state)
{
    (void)state;
    static const char *const variants[] = {
        "    storage:\n      files:\n      - {path: /etc/a}\n",
        "    storage:\n      files:\n      - {path: /etc/a, mode: 0600}\n",
        "    storage:\n      files:\n      - {path: /etc/a, overwrite: false}\n",
        "    storage:\n      files:\n      - {path: /etc/a, contents: {source: \"data:,x\"}}\n",
        "    storage:\n      directories:\n      - {path: /etc/a}\n",
        "    storage:\n      links:\n      - {path: /etc/a, target: /x}\n",
        "    systemd:\n      units:\n      - {name: a.service}\n",
        "    systemd:\n      units:\n      - {name: a.service, enabled: false}\n",
        "    passwd:\n      users:\n      - {name: core, sshAuthorizedKeys: [k]}\n",
        NULL, /* nothing at all */
    };
    char hashes[10][MCG_HASH_HEX + 1];
    size_t n = 0;
    for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
        repo rp = {0};
        add_std_master(&rp);
        add_mc(&rp, "00-worker", "worker", variants[v]);
        render_ok(&rp);
        memcpy(hashes[n], pool(&rp, "worker")->hash, sizeof(hashes[n]));
        for (size_t k = 0; k < n; k++)
            if (!strcmp(hashes[k], hashes[n]))
                fail_msg("variants %zu and %zu hash the same", k, n);
        n++;
        repo_free(&rp);
    }
    assert_int_equal(n, 10);
}

static void test_creation_order_irrelevant(void **state)
{
    (void)state;
    /* The same repo with its files added in two orders renders the same. */
    const char *names[] = {"00-worker", "10-a", "20-b", "30-c"};
    const char *bodies[] = {
        NULL,
        "    storage:\n      files:\n      - {path: /etc/z, contents: {source: \"data:,a\"}}\n"
        "      - {path: /etc/y, mode: 0600}\n",
        "    systemd:\n      units:\n      - {name: b.service, enabled: true}\n"
        "      - {name: a.service, mask: true}\n",
        "    storage:\n      files:\n      - {path: /etc/y, contents: {source: \"data:,c\"}}\n"
        "    passwd:\n      users:\n      - {name: core, sshAuthorizedKeys: [k2, k1]}\n",
    };
    char *spec[2] = {NULL, NULL};
    for (int pass = 0; pass < 2; pass++) {
        repo rp = {0};
        if (pass == 0)
            add_std_pools(&rp);
        for (int i = 0; i < 4; i++) {
            int k = pass == 0 ? i : 3 - i;
            add_mc(&rp, names[k], "worker", bodies[k]);
        }
        add_mc(&rp, "00-master", "master", NULL);
        if (pass == 1) {
            add_pool(&rp, "worker", NULL);
            add_pool(&rp, "master", NULL);
        }
        render_ok(&rp);
        spec[pass] = mcg_strdup(pool(&rp, "worker")->spec);
        repo_free(&rp);
    }
    assert_string_equal(spec[0], spec[1]);
    free(spec[0]);
    free(spec[1]);
}

/* ------------------------------------------------------------ the merge API */

static void parse_ign(mcg_ignition *out, const char *json)
{
    mcg_err err = {0};
    if (mcg_ignition_parse_json(out, "test.json", json, strlen(json), &err) != 0)
        fail_msg("cannot parse: %s", err.msg);
}

static void test_merge_api(void **state)
{
    (void)state;
    mcg_ignition dst = {0}, a, b;
    parse_ign(&a,
              "{\"config\": {\"ignition\": {\"version\": \"3.4.0\"},"
              " \"storage\": {\"files\": [{\"path\": \"/etc/a\", \"mode\": 384}]},"
              " \"passwd\": {\"users\": [{\"name\": \"core\", \"sshAuthorizedKeys\": [\"k1\"]}]},"
              " \"systemd\": {\"units\": [{\"name\": \"a.service\", \"enabled\": true}]}}}");
    parse_ign(&b, "{\"config\": {\"ignition\": {\"version\": \"3.4.0\"},"
                  " \"storage\": {\"files\": [{\"path\": \"/etc/a\", \"contents\": {\"source\": "
                  "\"data:,b\"}}, {\"path\": \"/etc/b\"}]},"
                  " \"passwd\": {\"users\": [{\"name\": \"core\", \"sshAuthorizedKeys\": [\"k2\", "
                  "\"k1\"]}]},"
                  " \"systemd\": {\"units\": [{\"name\": \"a.service\", \"mask\": true}]}}}");
    mcg_ignition_merge(&dst, &a);
    mcg_ignition_merge(&dst, &b);
    assert_int_equal(dst.nstorage, 2);
    assert_int_equal(dst.storage[0].mode, 0600);
    assert_string_equal(dst.storage[0].source, "data:,b");
    assert_int_equal(dst.ssh_keys.n, 2);
    assert_string_equal(dst.ssh_keys.v[0], "k1");
    assert_string_equal(dst.ssh_keys.v[1], "k2");
    assert_int_equal(dst.nunits, 1);
    assert_int_equal(dst.units[0].enabled, MCG_TRUE);
    assert_int_equal(dst.units[0].mask, MCG_TRUE);
    /* merging is idempotent */
    mcg_ignition_merge(&dst, &b);
    assert_int_equal(dst.nstorage, 2);
    assert_int_equal(dst.ssh_keys.n, 2);
    mcg_ignition_free(&dst);
    mcg_ignition_free(&a);
    mcg_ignition_free(&b);
}

/* A rendered spec parses back to a config that renders to the same bytes. */
static void test_spec_round_trip(void **state)
{
    repo *rp = *state;
    add_mc(rp, "00-worker", "worker",
           "    storage:\n"
           "      files:\n"
           "      - path: /etc/gz\n"
           "        user: {name: root}\n"
           "        group: {id: 10}\n"
           "        contents:\n"
           "          compression: gzip\n"
           "          source: data:;base64,H4sIAAAAAAACA8tIzcnJV0ivyizgAgA5fGNWCwAAAA==\n"
           "      links: [{path: /etc/l, target: /etc/gz, hard: true}]\n"
           "      disks: [{device: /dev/sdb}]\n"
           "    systemd:\n"
           "      units:\n"
           "      - {name: a.service, enabled: true, contents: \"[X]\\nk=x\\u00e9\","
           " dropins: [{name: a.conf}]}\n"
           "    passwd:\n      users: [{name: core, passwordHash: h, sshAuthorizedKeys: [k1]},"
           " {name: admin}]\n"
           "      groups: [{name: wheel}]\n"
           "    kernelArguments: {shouldExist: [quiet]}\n"
           "  kernelArguments: [nosmt, 'a=\"b c\"']\n  extensions: [usbguard]\n  fips: true\n"
           "  kernelType: realtime\n  osImageURL: quay.io/os:1\n"
           "  baseOSExtensionsContainerImage: quay.io/ext:1\n");
    render_ok(rp);
    const mcg_rendered_pool *w = pool(rp, "worker");
    mcg_ignition back;
    mcg_err err = {0};
    if (mcg_ignition_parse_json(&back, "spec.json", w->spec, w->spec_len, &err) != 0)
        fail_msg("%s\n%s", err.msg, w->spec);
    char *spec = NULL, *name = NULL;
    size_t len = 0;
    char hash[MCG_HASH_HEX + 1];
    assert_int_equal(mcg_render_name(&back, "worker", &spec, &len, hash, &name, &err), 0);
    assert_int_equal(len, w->spec_len);
    assert_memory_equal(spec, w->spec, len);
    assert_string_equal(name, w->name);
    assert_int_equal(back.storage[0].data_len, 11);
    assert_string_equal(back.password_hash, "h");
    assert_int_equal(back.os.kargs.n, 2);
    assert_string_equal(back.os.kargs.v[1], "a=\"b c\"");
    assert_true(back.os.fips);
    assert_string_equal(back.os.kernel_type, "realtime");
    assert_non_null(json_object_get(back.extra, "disks"));
    assert_non_null(json_object_get(back.extra, "users"));
    free(spec);
    free(name);
    mcg_ignition_free(&back);
}

/* ------------------------------------------------------------ canonical bytes */

/* mcg_render_name writes the canonical spec directly; it must be exactly what
 * jansson prints with mcg_json_canonical for the same document read back. */
static void assert_same_as_jansson(const mcg_ignition *ign)
{
    char *spec = NULL, *name = NULL;
    size_t len = 0;
    char hash[MCG_HASH_HEX + 1];
    mcg_err err = {0};
    assert_int_equal(mcg_render_name(ign, "p", &spec, &len, hash, &name, &err), 0);
    json_t *j = json_loadb(spec, len, JSON_REJECT_DUPLICATES, NULL);
    assert_non_null(j);
    mcg_buf want = MCG_BUF_INIT;
    assert_int_equal(mcg_json_canonical(j, &want, &err), 0);
    if (len != want.len || memcmp(spec, want.ptr, len) != 0)
        fail_msg("direct canonical spec differs from jansson's:\n%s\n---\n%s", spec, want.ptr);
    json_decref(j);
    mcg_buf_free(&want);
    free(spec);
    free(name);
}

static void test_canonical_matches_jansson(void **state)
{
    (void)state;
    /* every string field with every character class jansson escapes or not */
    mcg_buf odd = MCG_BUF_INIT;
    for (int c = 1; c < 0x80; c++)
        mcg_buf_putc(&odd, (char)c);
    mcg_buf_puts(&odd, "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 / \\ \" end");
    mcg_ignition ign = {0};
    ign.version = mcg_strdup("3.4.0");
    ign.nstorage = 4;
    ign.storage = mcg_calloc(4, sizeof(*ign.storage));
    mcg_storage *f = &ign.storage[0];
    f->kind = MCG_NODE_FILE;
    f->path = mcg_sprintf("/etc/%s", "f\"q\\x\xc3\xa9");
    f->has_mode = true;
    f->mode = 0755;
    f->overwrite = MCG_FALSE;
    f->has_contents = true;
    f->source = mcg_strdup(odd.ptr);
    f->compression = mcg_strdup("gzip");
    f->user.has_id = true;
    f->user.id = 2147483647;
    f->group.name = mcg_strdup(odd.ptr);
    mcg_storage *d = &ign.storage[1];
    d->kind = MCG_NODE_DIR;
    d->path = mcg_strdup("/etc/d");
    d->has_mode = true;
    d->mode = 0;
    mcg_storage *l = &ign.storage[2];
    l->kind = MCG_NODE_LINK;
    l->path = mcg_strdup("/etc/l");
    l->target = mcg_strdup(odd.ptr);
    l->hard = MCG_TRUE;
    l->overwrite = MCG_TRUE;
    l->user.name = mcg_strdup("u");
    mcg_storage *f2 = &ign.storage[3];
    f2->kind = MCG_NODE_FILE;
    f2->path = mcg_strdup("/etc/plain");
    ign.nunits = 2;
    ign.units = mcg_calloc(2, sizeof(*ign.units));
    ign.units[0].name = mcg_strdup("a.service");
    ign.units[0].contents = mcg_strdup(odd.ptr);
    ign.units[0].enabled = MCG_FALSE;
    ign.units[0].mask = MCG_TRUE;
    ign.units[0].ndropins = 2;
    ign.units[0].dropins = mcg_calloc(2, sizeof(mcg_dropin));
    ign.units[0].dropins[0].name = mcg_strdup("a.conf");
    ign.units[0].dropins[0].contents = mcg_strdup(odd.ptr);
    ign.units[0].dropins[1].name = mcg_strdup("b.conf");
    ign.units[1].name = mcg_strdup("b.service");
    mcg_strv_push(&ign.ssh_keys, odd.ptr);
    mcg_strv_push(&ign.ssh_keys, "ssh-ed25519 AAAA");
    assert_same_as_jansson(&ign);
    /* core among other users, each kept section, the fields beside config */
    ign.password_hash = mcg_strdup(odd.ptr);
    ign.extra = json_pack("{s:[{s:s,s:s},{s:s}],s:[{s:s}],s:[{s:s,s:[{s:i}]}],s:[{s:s}],"
                          "s:[{s:s}],s:[{s:s}],s:{s:[s]}}",
                          "users", "name", "admin", "shell", odd.ptr, "name", "zed", "groups",
                          "name", "wheel", "disks", "device", "/dev/sdb", "partitions", "number", 1,
                          "filesystems", "device", "/dev/sdb1", "luks", "name", "d", "raid", "name",
                          "md0", "kernelArguments", "shouldExist", odd.ptr);
    mcg_strv_push(&ign.os.kargs, odd.ptr);
    mcg_strv_push(&ign.os.kargs, "nosmt");
    mcg_strv_push(&ign.os.extensions, "usbguard");
    ign.os.fips = true;
    ign.os.kernel_type = mcg_strdup("64k-pages");
    ign.os.os_image_url = mcg_strdup(odd.ptr);
    ign.os.ext_image = mcg_strdup("quay.io/ext");
    assert_same_as_jansson(&ign);
    mcg_strv_free(&ign.ssh_keys); /* core by its password hash alone */
    assert_same_as_jansson(&ign);
    json_object_del(ign.extra, "users");
    assert_same_as_jansson(&ign);
    free(ign.password_hash);
    ign.password_hash = NULL; /* no core, groups only */
    assert_same_as_jansson(&ign);
    mcg_strv_push(&ign.ssh_keys, odd.ptr);

    /* and every subset: no keys, no units, one kind of storage only, nothing */
    mcg_strv_free(&ign.ssh_keys);
    assert_same_as_jansson(&ign);
    for (size_t i = 0; i < ign.nunits; i++) {
        free(ign.units[i].name);
        free(ign.units[i].contents);
        for (size_t k = 0; k < ign.units[i].ndropins; k++) {
            free(ign.units[i].dropins[k].name);
            free(ign.units[i].dropins[k].contents);
        }
        free(ign.units[i].dropins);
    }
    ign.nunits = 0;
    assert_same_as_jansson(&ign);
    ign.nstorage = 1;
    assert_same_as_jansson(&ign);
    ign.nstorage = 4;
    mcg_ignition_free(&ign);
    mcg_ignition empty = {0};
    assert_same_as_jansson(&empty);
    mcg_buf_free(&odd);

    /* and the fixtures' rendered pools */
    static const char *const dirs[] = {MCG_FIXTURES "/large", MCG_SOURCE_DIR "/repo-template",
                                       MCG_FIXTURES "/mco"};
    for (size_t k = 0; k < 3; k++) {
        mcg_model *m = NULL;
        mcg_diags dg = {0};
        mcg_err err = {0};
        mcg_render *r = NULL;
        assert_int_equal(mcg_source_load_dir(&m, dirs[k], &dg, &err), 0);
        assert_int_equal(mcg_render_model(&r, m, &dg), 0);
        for (size_t i = 0; i < r->n; i++)
            assert_same_as_jansson(&r->pools[i].merged);
        mcg_render_free(r);
        mcg_model_free(m);
        mcg_diags_free(&dg);
    }
}

/* ------------------------------------------------------------ MachineConfig fields */

/*
 * MCO's MergeMachineConfigs for the fields beside the config, one rule per
 * case: the MCs (worker's, at spec level), then either the fields the
 * rendered worker spec must hold (everything but "config", as JSON) or the
 * refusal.
 */
static void test_mc_fields_merge(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        const char *mc[3][2]; /* name, spec-level YAML */
        const char *want;     /* JSON of the spec without "config", or NULL */
        const char *err;
    } t[] = {
        {"kernelArguments concatenated in name order, repeats kept (MCO's e2e test 67825)",
         {{"20-b", "  kernelArguments: ['b=1 c', nosmt]\n"},
          {"10-a", "  kernelArguments: [a, b=1]\n"},
          {"30-c", "  kernelArguments: [a, d]\n"}},
         "{\"kernelArguments\": [\"a\", \"b=1\", \"b=1\", \"c\", \"nosmt\", \"a\", \"d\"]}",
         NULL},
        {"extensions appended",
         {{"10-a", "  extensions: [usbguard]\n"},
          {"20-b", "  extensions: [kerberos, usbguard]\n"},
          {NULL, NULL}},
         "{\"extensions\": [\"usbguard\", \"kerberos\", \"usbguard\"]}",
         NULL},
        {"fips true if any MC sets it",
         {{"10-a", "  fips: true\n"}, {"20-b", "  fips: false\n"}, {NULL, NULL}},
         "{\"fips\": true}",
         NULL},
        {"kernelType: the last non-default value in merge order (MCO's MergeMachineConfigs)",
         {{"10-a", "  kernelType: realtime\n"},
          {"20-b", "  kernelType: 64k-pages\n"},
          {"30-c", "  kernelType: default\n"}},
         "{\"kernelType\": \"64k-pages\"}",
         NULL},
        {"kernelType 64k-pages over default",
         {{"10-a", "  kernelType: 64k-pages\n"}, {"20-b", "  kernelType: default\n"}, {NULL, NULL}},
         "{\"kernelType\": \"64k-pages\"}",
         NULL},
        {"osImageURL: the last non-empty value",
         {{"10-a", "  osImageURL: quay.io/a/os:1\n"},
          {"20-b", "  osImageURL: quay.io/b/os:2\n"},
          {"30-c", "  osImageURL: \"\"\n"}},
         "{\"osImageURL\": \"quay.io/b/os:2\"}",
         NULL},
        {"baseOSExtensionsContainerImage: the last non-empty value",
         {{"10-a", "  baseOSExtensionsContainerImage: quay.io/a/ext:1\n"},
          {"20-b", "  baseOSExtensionsContainerImage: quay.io/b/ext:2\n"},
          {NULL, NULL}},
         "{\"baseOSExtensionsContainerImage\": \"quay.io/b/ext:2\"}",
         NULL},
        {"defaults are left out of the spec",
         {{"10-a", "  kernelType: default\n  fips: false\n  kernelArguments: []\n"},
          {NULL, NULL},
          {NULL, NULL}},
         "{}",
         NULL},
        {"kernel-devel with the realtime kernel is refused",
         {{"10-a", "  extensions: [kernel-devel]\n"},
          {"20-b", "  kernelType: realtime\n"},
          {NULL, NULL}},
         NULL,
         "pools/worker.yaml:1: pool 'worker': the kernel-devel extension is not supported with "
         "kernelType realtime"},
        {"kernel-devel with the default kernel is fine",
         {{"10-a", "  extensions: [kernel-devel]\n"}, {NULL, NULL}, {NULL, NULL}},
         "{\"extensions\": [\"kernel-devel\"]}",
         NULL},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        repo rp = {0};
        add_std_mcs(&rp);
        for (size_t k = 0; k < 3 && t[i].mc[k][0]; k++)
            add_mc(&rp, t[i].mc[k][0], "worker", t[i].mc[k][1]);
        render(&rp);
        if (t[i].err) {
            if (rp.rc == 0)
                fail_msg("%s: rendered", t[i].name);
            assert_contains(rp.diags.msgs[0], t[i].err);
            repo_free(&rp);
            continue;
        }
        if (rp.rc)
            fail_msg("%s: %s", t[i].name, rp.diags.msgs[0]);
        json_t *j = spec_of(pool(&rp, "worker"));
        json_object_del(j, "config");
        json_t *want = json_loads(t[i].want, 0, NULL);
        if (!json_equal(j, want)) {
            char *got = json_dumps(j, JSON_SORT_KEYS);
            fail_msg("%s: got %s, want %s", t[i].name, got, t[i].want);
        }
        json_decref(want);
        json_decref(j);
        /* master has none of them, and its name is that of an empty config */
        json_t *mj = spec_of(pool(&rp, "master"));
        assert_int_equal(json_object_size(mj), 1);
        json_decref(mj);
        repo_free(&rp);
    }
}

/* A custom pool: worker's kernel arguments first, then its own; its own image wins. */
static void test_mc_fields_custom_pool(void **state)
{
    repo *rp = *state;
    add_pool(rp, "infra", NULL);
    add_mc(rp, "00-master", "master", NULL);
    add_mc(rp, "99-worker-args", "worker",
           "  kernelArguments: [w]\n  osImageURL: quay.io/w/os:1\n");
    add_mc(rp, "10-infra-args", "infra",
           "  kernelArguments: [i, w]\n  osImageURL: quay.io/i/os:1\n");
    render_ok(rp);
    json_t *j = spec_of(pool(rp, "infra"));
    json_t *want = json_loads("[\"w\", \"i\", \"w\"]", 0, NULL);
    assert_true(json_equal(json_object_get(j, "kernelArguments"), want));
    assert_string_equal(json_string_value(json_object_get(j, "osImageURL")), "quay.io/i/os:1");
    json_decref(want);
    json_decref(j);
}

/* The fields are part of the hash: a kernel argument renames the config. */
static void test_mc_fields_hashed(void **state)
{
    (void)state;
    repo a = {0}, b = {0};
    add_std_mcs(&a);
    add_std_master(&b);
    add_mc(&b, "00-worker", "worker", "  kernelArguments: [nosmt]\n");
    render_ok(&a);
    render_ok(&b);
    assert_string_not_equal(pool(&a, "worker")->name, pool(&b, "worker")->name);
    /* without the fields, worker and master still share the empty config's hash */
    assert_string_equal(pool(&a, "worker")->hash, pool(&a, "master")->hash);
    repo_free(&a);
    repo_free(&b);
}

/* Unreconcilable sections merge entry by entry; core's password hash: the later wins. */
static void test_unreconcilable_merge(void **state)
{
    repo *rp = *state;
    add_mc(
        rp, "10-a", "worker",
        "    storage:\n      disks:\n      - {device: /dev/sdb, wipeTable: true}\n"
        "      - {device: /dev/sda}\n"
        "    passwd:\n      users:\n      - {name: zed}\n      - {name: core, passwordHash: one}\n"
        "      - {name: admin, shell: /bin/sh}\n");
    add_mc(rp, "20-b", "worker",
           "    storage:\n      disks:\n      - {device: /dev/sdb, partitions: [{label: var}]}\n"
           "    passwd:\n      users:\n      - {name: admin, uid: 1001}\n"
           "      - {name: core, passwordHash: two}\n");
    render_ok(rp);
    json_t *j = spec_of(pool(rp, "worker"));
    json_t *cfg = json_object_get(j, "config");
    json_t *want = json_loads(
        "{\"disks\": [{\"device\": \"/dev/sda\"}, {\"device\": \"/dev/sdb\", \"wipeTable\": true,"
        " \"partitions\": [{\"label\": \"var\"}]}]}",
        0, NULL);
    if (!json_equal(json_object_get(cfg, "storage"), want))
        fail_msg("storage: %s", json_dumps(json_object_get(cfg, "storage"), JSON_SORT_KEYS));
    json_decref(want);
    want = json_loads("{\"users\": [{\"name\": \"admin\", \"shell\": \"/bin/sh\", \"uid\": 1001},"
                      " {\"name\": \"core\", \"passwordHash\": \"two\"}, {\"name\": \"zed\"}]}",
                      0, NULL);
    if (!json_equal(json_object_get(cfg, "passwd"), want))
        fail_msg("passwd: %s", json_dumps(json_object_get(cfg, "passwd"), JSON_SORT_KEYS));
    json_decref(want);
    json_decref(j);
}

/*
 * Merge b (n drop-ins: every other one of a's again, and as many new ones)
 * into a (n drop-ins) of one unit; the seconds it took. Checks the result.
 */
static double merge_dropins(size_t n)
{
    mcg_ignition a = {0}, b = {0};
    a.nunits = b.nunits = 1;
    a.units = mcg_calloc(1, sizeof(mcg_unit));
    b.units = mcg_calloc(1, sizeof(mcg_unit));
    a.units[0].name = mcg_strdup("a.service");
    b.units[0].name = mcg_strdup("a.service");
    a.units[0].dropins = mcg_calloc(n, sizeof(mcg_dropin));
    b.units[0].dropins = mcg_calloc(n, sizeof(mcg_dropin));
    for (size_t i = 0; i < n; i++) {
        a.units[0].dropins[i].name = mcg_sprintf("%zu.conf", i);
        a.units[0].dropins[i].contents = mcg_strdup("# a");
        b.units[0].dropins[i].name = mcg_sprintf("%zu.conf", i % 2 ? i : n + i);
        b.units[0].dropins[i].contents = mcg_strdup("# b");
    }
    a.units[0].ndropins = b.units[0].ndropins = n;
    clock_t t0 = clock();
    mcg_ignition_merge(&a, &b);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    assert_int_equal(a.units[0].ndropins, n + n / 2);
    assert_string_equal(a.units[0].dropins[0].contents, "# a"); /* field by field */
    assert_string_equal(a.units[0].dropins[1].contents, "# b");
    char *first_new = mcg_sprintf("%zu.conf", n);
    assert_string_equal(a.units[0].dropins[n].name, first_new);
    free(first_new);
    mcg_ignition_free(&a);
    mcg_ignition_free(&b);
    return secs;
}

/* Issue 17: the drop-in merge was quadratic too; 4x the drop-ins, ~4x the time. */
static void test_many_dropins_merge(void **state)
{
    (void)state;
    double small = merge_dropins(20000), big = merge_dropins(80000);
    if (big > 0.5 && big > 10 * (small > 0.001 ? small : 0.001))
        fail_msg("drop-in merge is not linear: 20,000 in %.3f s, 80,000 in %.3f s", small, big);
}

/* Merge n kept users onto n (half of them the same names); seconds taken. */
static double merge_users(size_t n)
{
    mcg_ignition a = {0}, b = {0};
    json_t *ua = json_array(), *ub = json_array();
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof(name), "u%zu", i);
        json_array_append_new(ua, json_pack("{s:s,s:i}", "name", name, "uid", (int)i));
        snprintf(name, sizeof(name), "u%zu", i % 2 ? i : n + i);
        json_array_append_new(ub, json_pack("{s:s,s:s}", "name", name, "shell", "/bin/sh"));
    }
    a.extra = json_pack("{s:o}", "users", ua);
    b.extra = json_pack("{s:o}", "users", ub);
    clock_t t0 = clock();
    mcg_ignition_merge(&a, &b);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    json_t *u = json_object_get(a.extra, "users");
    assert_int_equal(json_array_size(u), n + n / 2);
    /* u1: field by field (uid kept, shell added); u0 untouched */
    assert_int_equal(json_integer_value(json_object_get(json_array_get(u, 1), "uid")), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(u, 1), "shell")),
                        "/bin/sh");
    assert_null(json_object_get(json_array_get(u, 0), "shell"));
    mcg_ignition_free(&a);
    mcg_ignition_free(&b);
    return secs;
}

/* Kept sections merge through an index too: 4x the users, ~4x the time. */
static void test_many_users_merge(void **state)
{
    (void)state;
    double small = merge_users(20000), big = merge_users(80000);
    if (big > 0.5 && big > 10 * (small > 0.001 ? small : 0.001))
        fail_msg("kept sections merge is not linear: 20,000 in %.3f s, 80,000 in %.3f s", small,
                 big);
}

/* ------------------------------------------------------------ diff */

#define POLICY                                                                                     \
    API "kind: MachineConfiguration\nmetadata:\n  name: cluster\nspec:\n"                          \
        "  nodeDisruptionPolicy:\n"                                                                \
        "    files:\n"                                                                             \
        "    - path: /etc/chrony.conf\n"                                                           \
        "      actions:\n"                                                                         \
        "      - type: Restart\n"                                                                  \
        "        restart:\n"                                                                       \
        "          serviceName: chronyd.service\n"                                                 \
        "    units:\n"                                                                             \
        "    - name: crio.service\n"                                                               \
        "      actions:\n"                                                                         \
        "      - type: Drain\n"                                                                    \
        "    sshkey:\n"                                                                            \
        "      actions:\n"                                                                         \
        "      - type: Reload\n"                                                                   \
        "        reload:\n"                                                                        \
        "          serviceName: sshd.service\n"

#define CHRONY(V)                                                                                  \
    "    storage:\n      files:\n      - path: /etc/chrony.conf\n"                                 \
    "        mode: 420\n        contents:\n          source: data:," V "\n"

/* One diff case: worker's 10-x MC body before (NULL: no rendered config) and after. */
typedef struct diff_case {
    const char *name;
    const char *old_body, *new_body;
    bool policy;
    const char *want;    /* the items, "op kind key (what): actions" joined by "; " */
    const char *actions; /* the whole change's actions */
} diff_case;

static const diff_case diff_cases[] = {
    {"nothing changed", CHRONY("a"), CHRONY("a"), true, "", "None"},
    {"file contents under a Restart rule", CHRONY("a"), CHRONY("b"), true,
     "changed file /etc/chrony.conf (contents): Restart chronyd.service",
     "Restart chronyd.service"},
    {"same change without a policy: Reboot", CHRONY("a"), CHRONY("b"), false,
     "changed file /etc/chrony.conf (contents): Reboot", "Reboot"},
    {"mode only", CHRONY("a"),
     "    storage:\n      files:\n      - path: /etc/chrony.conf\n"
     "        mode: 384\n        contents:\n          source: data:,a\n",
     true, "changed file /etc/chrony.conf (mode): Restart chronyd.service",
     "Restart chronyd.service"},
    {"file added and removed, a directory added", CHRONY("a"),
     "    storage:\n      files:\n      - path: /etc/new.conf\n"
     "        contents:\n          source: data:,x\n"
     "      directories:\n      - path: /etc/d\n",
     true,
     "removed file /etc/chrony.conf: Restart chronyd.service; added directory /etc/d: Reboot; "
     "added file /etc/new.conf: Reboot",
     "Reboot"},
    {"unit drop-ins and enabled, under a Drain rule: and a daemon-reload (links changed)",
     "    systemd:\n      units:\n      - name: crio.service\n        dropins:\n"
     "        - name: 10-a.conf\n          contents: \"[Service]\\nA=1\\n\"\n",
     "    systemd:\n      units:\n      - name: crio.service\n        enabled: true\n"
     "        dropins:\n        - name: 10-a.conf\n          contents: \"[Service]\\nA=2\\n\"\n"
     "        - name: 20-b.conf\n          contents: \"[Service]\\nB=1\\n\"\n",
     true,
     "changed unit crio.service (enabled, dropin 10-a.conf, dropin 20-b.conf): Drain, DaemonReload",
     "Drain, DaemonReload"},
    {"a unit added without a rule, to a node with no config", NULL,
     "    systemd:\n      units:\n      - name: x.service\n        contents: \"[Unit]\\n\"\n", true,
     "added unit x.service: Reboot", "Reboot"},
    {"SSH keys and the password hash under the sshkey rule, as MCO", CHRONY("a"),
     CHRONY(
         "a") "    passwd:\n      users:\n      - name: core\n        sshAuthorizedKeys:\n"
              "        - ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE3m8S3Ey4tJ2Ykq6vQW2nC0m5J0Kc7q op\n"
              "        passwordHash: $6$x$y\n",
     true,
     "added sshAuthorizedKeys core (1 added, 0 removed): Reload sshd.service; added passwordHash "
     "core: Reload sshd.service",
     "Reload sshd.service"},
    {"the password hash alone: the sshkey rule", CHRONY("a"),
     CHRONY("a") "    passwd:\n      users:\n      - name: core\n        passwordHash: $6$x$y\n",
     true, "added passwordHash core: Reload sshd.service", "Reload sshd.service"},
    {"kernel arguments and kernel type: Reboot", CHRONY("a") "  kernelArguments: [quiet]\n",
     CHRONY("a") "  kernelArguments: [nosmt]\n  kernelType: realtime\n", true,
     "changed kernelArguments kernelArguments (+nosmt, -quiet): Reboot; "
     "added os kernelType (realtime): Reboot",
     "Reboot"},
    {"fips is unreconcilable", CHRONY("a"), CHRONY("a") "  fips: true\n", true,
     "changed unreconcilable fips (true): None", "None"},
};

/* The worker pool's parsed spec with 10-x's body (and the policy when asked). */
static void diff_side(repo *rp, mcg_ignition *out, const char *body, bool policy)
{
    add_std_mcs(rp);
    if (body)
        add_mc(rp, "10-x", "worker", body);
    if (policy)
        add(rp, "machineconfigs/policy.yaml", mcg_strdup(POLICY));
    render_ok(rp);
    const mcg_rendered_pool *p = pool(rp, "worker");
    mcg_err err = {0};
    if (mcg_ignition_parse_json(out, p->name, p->spec, p->spec_len, &err) != 0)
        fail_msg("spec does not parse: %s", err.msg);
}

/* mcg_render_diff: each change, its what, and its actions under the policy. */
static void test_diff(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(diff_cases) / sizeof(diff_cases[0]); i++) {
        const diff_case *dc = &diff_cases[i];
        repo a = {0}, b = {0};
        mcg_ignition oi, ni;
        memset(&oi, 0, sizeof(oi));
        memset(&ni, 0, sizeof(ni));
        if (dc->old_body)
            diff_side(&a, &oi, dc->old_body, dc->policy);
        diff_side(&b, &ni, dc->new_body, dc->policy);
        mcg_diff d;
        mcg_render_diff(&d, dc->old_body ? &oi : NULL, &ni, &b.m->policy);
        mcg_buf got = MCG_BUF_INIT;
        mcg_buf_puts(&got, "");
        for (size_t j = 0; j < d.n; j++) {
            const mcg_diff_item *it = &d.items[j];
            mcg_buf_printf(&got, "%s%s %s %s", j ? "; " : "", mcg_diff_op_name(it->op),
                           mcg_diff_kind_name(it->kind), it->key);
            for (size_t k = 0; k < it->what.n; k++)
                mcg_buf_printf(&got, "%s%s%s", k ? ", " : " (", it->what.v[k],
                               k + 1 == it->what.n ? ")" : "");
            char *acts = mcg_disruption_str(&it->actions);
            mcg_buf_printf(&got, ": %s", acts);
            free(acts);
        }
        if (strcmp(got.ptr, dc->want))
            fail_msg("%s:\n got  %s\n want %s", dc->name, got.ptr, dc->want);
        char *all = mcg_disruption_str(&d.actions);
        if (strcmp(all, dc->actions))
            fail_msg("%s: actions %s, want %s", dc->name, all, dc->actions);
        assert_int_equal(d.unreconcilable, strstr(dc->want, "unreconcilable") != NULL);
        free(all);
        mcg_buf_free(&got);
        mcg_diff_free(&d);
        mcg_ignition_free(&oi);
        mcg_ignition_free(&ni);
        repo_free(&a);
        repo_free(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_file_field_by_field, std_pools, repo_teardown),
        cmocka_unit_test_setup_teardown(test_file_later_contents_win, std_master, repo_teardown),
        cmocka_unit_test_setup_teardown(test_file_replaced_by_directory, std_master, repo_teardown),
        cmocka_unit_test_setup_teardown(test_dropins_per_unit, std_master, repo_teardown),
        cmocka_unit_test_setup_teardown(test_unit_enabled_mask_field_by_field, std_master,
                                        repo_teardown),
        cmocka_unit_test_setup_teardown(test_ssh_keys_united, std_master, repo_teardown),
        cmocka_unit_test_setup_teardown(test_custom_pool_inherits_worker, std_pools, repo_teardown),
        cmocka_unit_test(test_custom_pool_selecting_worker_too),
        cmocka_unit_test(test_order_by_name),
        cmocka_unit_test_setup_teardown(test_render_select_api, std_pools, repo_teardown),
        cmocka_unit_test(test_pool_selecting_nothing),
        cmocka_unit_test_setup_teardown(test_path_below_file, std_pools, repo_teardown),
        cmocka_unit_test(test_link_needs_target),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test_setup_teardown(test_hash_excludes_pool_name, std_pools, repo_teardown),
        cmocka_unit_test_setup_teardown(test_name_matches, std_master, repo_teardown),
        cmocka_unit_test(test_defaults_normalised),
        cmocka_unit_test(test_different_content_different_hash),
        cmocka_unit_test(test_creation_order_irrelevant),
        cmocka_unit_test(test_merge_api),
        cmocka_unit_test_setup_teardown(test_spec_round_trip, std_master, repo_teardown),
        cmocka_unit_test(test_canonical_matches_jansson),
        cmocka_unit_test(test_mc_fields_merge),
        cmocka_unit_test_setup_teardown(test_mc_fields_custom_pool, std_pools, repo_teardown),
        cmocka_unit_test(test_mc_fields_hashed),
        cmocka_unit_test_setup_teardown(test_unreconcilable_merge, std_master, repo_teardown),
        cmocka_unit_test(test_many_dropins_merge),
        cmocka_unit_test(test_many_users_merge),
        cmocka_unit_test(test_diff),
    };
    return cmocka_run_group_tests_name("render", tests, NULL, NULL);
}
