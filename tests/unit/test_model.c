/*
 * test_model.c — the config repo parser, as a table.
 *
 * Every case is one file (sometimes two) handed to mcg_model_add_file under a
 * repo path, then mcg_model_finish. A passing case must produce no
 * diagnostic (and may check what was parsed); a failing case names the
 * place ("machineconfigs/x.yaml:13:") the first diagnostic must start with
 * and a phrase it must contain, so each refusal is pinned to its file, line
 * and field. Each case runs as its own cmocka test, named after the case.
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
#include <zlib.h>

#include "model/model.h"

#define assert_contains(hay, needle)                                                               \
    do {                                                                                           \
        const char *h_ = (hay), *n_ = (needle);                                                    \
        if (!h_ || !strstr(h_, n_))                                                                \
            fail_msg("expected \"%s\" to contain \"%s\"", h_ ? h_ : "(null)", n_);                 \
    } while (0)

/* ------------------------------------------------------------ fixtures */

/* clang-format off: the YAML below is laid out one line per line, numbered. */

#define API "apiVersion: machineconfiguration.openshift.io/v1\n"

/* Lines 1-10 of a MachineConfig named N; the config's body starts on line 11
 * at four spaces of indent, spec-level fields at two. */
#define MC_HEAD(N)                                                                                 \
    API                                                        /*  1 */                            \
        "kind: MachineConfig\n"                                /*  2 */                            \
        "metadata:\n"                                          /*  3 */                            \
        "  name: " N "\n"                                      /*  4 */                            \
        "  labels:\n"                                          /*  5 */                            \
        "    machineconfiguration.openshift.io/role: worker\n" /* 6 */                             \
        "spec:\n"                                              /*  7 */                            \
        "  config:\n"                                          /*  8 */                            \
        "    ignition:\n"                                      /*  9 */                            \
        "      version: 3.4.0\n"                               /* 10 */

/* Lines 1-5 of a MachineConfigPool named N; its spec starts on line 6. */
#define POOL_HEAD(N)                                                                               \
    API                             /*  1 */                                                       \
        "kind: MachineConfigPool\n" /*  2 */                                                       \
        "metadata:\n"               /*  3 */                                                       \
        "  name: " N "\n"           /*  4 */                                                       \
        "spec:\n"                   /*  5 */

#define WORKER_POOL                                                                                \
    POOL_HEAD("worker")                                                                            \
    "  machineConfigSelector:\n"                                                                   \
    "    matchLabels:\n"                                                                           \
    "      machineconfiguration.openshift.io/role: worker\n"

/* Lines 11-13: one file entry at PATH (line 13). */
#define FILE_AT(PATH)                                                                              \
    "    storage:\n"           /* 11 */                                                            \
    "      files:\n"           /* 12 */                                                            \
    "      - path: " PATH "\n" /* 13 */

#define MCF "machineconfigs/x.yaml"
#define POOLF "pools/worker.yaml"

/* printf 'hello gzip\n' | gzip -n9 | base64 -w0 */
#define GZ_HELLO "H4sIAAAAAAACA8tIzcnJV0ivyizgAgA5fGNWCwAAAA=="
/* sha256 / sha512 of "hello gzip\n" (decompressed), sha256 of the gzip bytes */
#define SHA256_HELLO "cc19744a9c456a1d13c6a45c61299b20c80952c22e867bdfbecece10bd2ae150"
#define SHA512_HELLO                                                                               \
    "decd9a872e9c917b98f76e6843f2ba92747b318fbba35bb47db90ea6449587032cf4607286ade7100a7f"         \
    "809caace2efda5a45eb3df792255c5498249186a61f4"
#define SHA256_GZ_HELLO "b5b74c5b094305e197b02d90dfb1ccfe86e1c1e0d4dd428e843042ec21fd2062"

/* clang-format on */

typedef struct parse_case {
    const char *name;
    const char *path;
    const char *yaml;
    const char *where; /* NULL: must pass; else the first diagnostic starts with it */
    const char *what;  /* ...and contains this */
    int nobj;          /* pools + MCs in the model afterwards (-1: do not check) */
    void (*check)(const mcg_model *m);
    const char *path2; /* optional second file */
    const char *yaml2;
} parse_case;

/* ------------------------------------------------------------ checks */

static const mcg_storage *find_storage(const mcg_ignition *ign, const char *path)
{
    for (size_t i = 0; i < ign->nstorage; i++)
        if (!strcmp(ign->storage[i].path, path))
            return &ign->storage[i];
    fail_msg("no storage entry '%s'", path);
    return NULL;
}

static void check_full(const mcg_model *m)
{
    assert_int_equal(m->nmcs, 1);
    const mcg_machineconfig *mc = &m->mcs[0];
    assert_string_equal(mc->name, "50-full");
    assert_string_equal(mc->loc.file, MCF);
    assert_int_equal(mc->loc.line, 1);
    assert_string_equal(mcg_labels_get(&mc->labels, "machineconfiguration.openshift.io/role"),
                        "worker");
    const mcg_ignition *ign = &mc->config;
    assert_string_equal(ign->version, "3.4.0");
    /* SSH keys deduplicated in order of first appearance */
    assert_int_equal(ign->ssh_keys.n, 2);
    assert_string_equal(ign->ssh_keys.v[0], "ssh-ed25519 AAAA key1");
    assert_string_equal(ign->ssh_keys.v[1], "ssh-ed25519 AAAA key2");
    assert_int_equal(ign->nstorage, 3);
    const mcg_storage *f = find_storage(ign, "/etc/chrony.conf");
    assert_int_equal(f->kind, MCG_NODE_FILE);
    assert_int_equal(f->loc.line, 20);
    assert_true(f->has_mode);
    assert_int_equal(f->mode, 0644);
    assert_int_equal(f->overwrite, MCG_TRUE);
    assert_string_equal(f->user.name, "root");
    assert_false(f->user.has_id);
    assert_null(f->group.name);
    assert_true(f->group.has_id);
    assert_int_equal(f->group.id, 0);
    assert_true(f->has_contents);
    assert_string_equal(f->source, "data:,server%20ntp.example.com%0A");
    assert_null(f->compression);
    assert_int_equal(f->data_len, strlen("server ntp.example.com\n"));
    assert_memory_equal(f->data, "server ntp.example.com\n", f->data_len);
    const mcg_storage *d = find_storage(ign, "/etc/mcgit.d");
    assert_int_equal(d->kind, MCG_NODE_DIR);
    assert_int_equal(d->mode, 0750);
    assert_int_equal(d->overwrite, MCG_UNSET);
    const mcg_storage *l = find_storage(ign, "/etc/localtime");
    assert_int_equal(l->kind, MCG_NODE_LINK);
    assert_string_equal(l->target, "../usr/share/zoneinfo/UTC");
    assert_int_equal(l->hard, MCG_UNSET);
    assert_false(l->has_mode);
    assert_int_equal(ign->nunits, 2);
    const mcg_unit *u = &ign->units[0];
    assert_string_equal(u->name, "chronyd.service");
    assert_int_equal(u->loc.line, 37);
    assert_int_equal(u->enabled, MCG_TRUE);
    assert_int_equal(u->mask, MCG_UNSET);
    assert_null(u->contents);
    assert_int_equal(u->ndropins, 1);
    assert_string_equal(u->dropins[0].name, "10-mcgit.conf");
    assert_string_equal(u->dropins[0].contents, "[Service]\nNice=5\n");
    assert_int_equal(u->dropins[0].loc.line, 40);
    assert_string_equal(ign->units[1].name, "debug.service");
    assert_int_equal(ign->units[1].mask, MCG_TRUE);
    assert_int_equal(ign->units[1].enabled, MCG_UNSET);
    assert_string_equal(ign->units[1].contents, "[Unit]\nDescription=debug\n");
}

static void check_embedded(const mcg_model *m)
{
    assert_int_equal(m->nmcs, 1);
    const mcg_ignition *ign = &m->mcs[0].config;
    assert_string_equal(ign->version, "3.2.0");
    assert_int_equal(ign->nstorage, 1);
    assert_string_equal(ign->storage[0].path, "/etc/a");
    assert_int_equal(ign->storage[0].mode, 0600);
    assert_int_equal(ign->storage[0].data_len, 1);
    assert_int_equal(ign->storage[0].data[0], 'a');
    /* line of the entry inside the block scalar, counted in the outer file */
    assert_int_equal(ign->storage[0].loc.line, 8);
}

static void check_one_mc(const mcg_model *m)
{
    assert_int_equal(m->nmcs, 1);
    assert_int_equal(m->npools, 0);
}

static void check_two_mcs(const mcg_model *m)
{
    assert_int_equal(m->nmcs, 2);
    /* sorted by name by mcg_model_finish */
    assert_string_equal(m->mcs[0].name, "00-a");
    assert_string_equal(m->mcs[1].name, "10-b");
    assert_int_equal(m->mcs[0].loc.line, 13);
    assert_int_equal(m->mcs[1].loc.line, 3);
}

static void check_two_pools(const mcg_model *m)
{
    assert_int_equal(m->npools, 2);
    assert_string_equal(m->pools[0].name, "master");
    assert_string_equal(m->pools[1].name, "worker");
    assert_int_equal(m->pools[1].loc.line, 1);
    assert_int_equal(m->pools[0].loc.line, 10);
    assert_false(m->pools[0].max_unavailable_set);
    assert_false(m->pools[0].paused);
}

static void check_modes(const mcg_model *m)
{
    const mcg_ignition *ign = &m->mcs[0].config;
    assert_int_equal(ign->nstorage, 6);
    for (size_t i = 0; i < 4; i++) {
        assert_true(ign->storage[i].has_mode);
        assert_int_equal(ign->storage[i].mode, 0644);
    }
    assert_int_equal(find_storage(ign, "/etc/e")->mode, 0755);
    assert_int_equal(find_storage(ign, "/etc/f")->mode, 0);
    assert_true(find_storage(ign, "/etc/f")->has_mode);
}

static void check_gzip(const mcg_model *m)
{
    const mcg_storage *s = &m->mcs[0].config.storage[0];
    assert_string_equal(s->compression, "gzip");
    assert_string_equal(s->source, "data:;base64," GZ_HELLO);
    assert_int_equal(s->data_len, 11);
    assert_memory_equal(s->data, "hello gzip\n", 11);
}

static void check_percent(const mcg_model *m)
{
    const mcg_storage *s = &m->mcs[0].config.storage[0];
    assert_null(s->compression);
    assert_int_equal(s->data_len, 6);
    assert_memory_equal(s->data, "caf\xc3\xa9\n", 6);
    const mcg_storage *e = &m->mcs[0].config.storage[1];
    assert_true(e->has_contents);
    assert_int_equal(e->data_len, 0);
    const mcg_storage *n = &m->mcs[0].config.storage[2];
    assert_false(n->has_contents);
    assert_null(n->source);
}

static void check_selectors(const mcg_model *m)
{
    assert_int_equal(m->npools, 1);
    const mcg_pool *p = &m->pools[0];
    assert_true(p->mc_selector.present);
    assert_int_equal(p->mc_selector.match.n, 0);
    assert_int_equal(p->mc_selector.nexprs, 2);
    assert_string_equal(p->mc_selector.exprs[0].key, "machineconfiguration.openshift.io/role");
    assert_int_equal(p->mc_selector.exprs[0].op, MCG_SEL_IN);
    assert_int_equal(p->mc_selector.exprs[0].values.n, 2);
    assert_string_equal(p->mc_selector.exprs[0].values.v[1], "infra");
    assert_int_equal(p->mc_selector.exprs[1].op, MCG_SEL_NOTIN);
    assert_string_equal(p->mc_selector.exprs[1].values.v[0], "true");
    assert_int_equal(p->node_selector.match.n, 1);
    assert_string_equal(mcg_labels_get(&p->node_selector.match, "node-role.kubernetes.io/worker"),
                        "");
    assert_int_equal(p->node_selector.nexprs, 2);
    assert_int_equal(p->node_selector.exprs[0].op, MCG_SEL_DOESNOTEXIST);
    assert_int_equal(p->node_selector.exprs[1].op, MCG_SEL_EXISTS);
    assert_int_equal(p->node_selector.exprs[1].values.n, 0);
    assert_true(p->max_unavailable_set);
    assert_false(p->max_unavailable_is_percent);
    assert_int_equal(p->max_unavailable, 2);
    assert_true(p->paused);

    /* and they select what Kubernetes would */
    mcg_labels l = {0};
    mcg_labels_set(&l, "machineconfiguration.openshift.io/role", "infra");
    assert_true(mcg_selector_matches(&p->mc_selector, &l));
    mcg_labels_set(&l, "example.com/skip", "true");
    assert_false(mcg_selector_matches(&p->mc_selector, &l));
    mcg_labels_set(&l, "example.com/skip", "false");
    assert_true(mcg_selector_matches(&p->mc_selector, &l));
    mcg_labels_set(&l, "machineconfiguration.openshift.io/role", "master");
    assert_false(mcg_selector_matches(&p->mc_selector, &l));
    mcg_labels_free(&l);

    mcg_labels_set(&l, "node-role.kubernetes.io/worker", "");
    assert_false(mcg_selector_matches(&p->node_selector, &l)); /* no hostname */
    mcg_labels_set(&l, "kubernetes.io/hostname", "n1");
    assert_true(mcg_selector_matches(&p->node_selector, &l));
    mcg_labels_set(&l, "node-role.kubernetes.io/infra", "");
    assert_false(mcg_selector_matches(&p->node_selector, &l));
    mcg_labels_free(&l);
}

static void check_percent_unavailable(const mcg_model *m)
{
    const mcg_pool *p = mcg_model_pool(m, "worker");
    assert_non_null(p);
    assert_true(p->max_unavailable_set);
    assert_true(p->max_unavailable_is_percent);
    assert_int_equal(p->max_unavailable, 25);
    assert_false(p->paused);
}

static void check_rollout(const mcg_model *m)
{
    const mcg_pool *p = mcg_model_pool(m, "worker");
    assert_non_null(p);
    const mcg_rollout_spec *r = &p->rollout;
    assert_true(r->present);
    assert_int_equal(r->canary, 1);
    assert_int_equal(r->canary_pause, 600);
    assert_int_equal(r->health_timeout, 300);
    assert_false(r->halt_only);
    assert_int_equal(r->nchecks, 2);
    assert_string_equal(r->checks[0].name, "kubelet");
    assert_string_equal(r->checks[0].unit, "kubelet.service");
    assert_string_equal(r->checks[1].name, "api-reachable");
    assert_null(r->checks[1].unit);
    assert_int_equal(r->checks[1].command.n, 2);
    assert_string_equal(r->checks[1].command.v[0], "/usr/local/bin/check-api");
    assert_int_equal(p->nwindows, 1);
    assert_int_equal(p->windows[0].days, (1u << 6) | 1u); /* Sat, Sun */
    assert_int_equal(p->windows[0].start, 120);
    assert_int_equal(p->windows[0].duration, 240);
    assert_string_equal(p->windows[0].tz, "Europe/Berlin");
}

static void check_no_rollout(const mcg_model *m)
{
    const mcg_pool *p = mcg_model_pool(m, "worker");
    assert_non_null(p);
    assert_false(p->rollout.present);
    assert_int_equal(p->nwindows, 0);
    assert_int_equal(m->settings.max_disruptions, 0);
}

static void check_budget(const mcg_model *m)
{
    assert_int_equal(m->settings.max_disruptions, 2);
}

static void check_settings(const mcg_model *m)
{
    assert_string_equal(m->settings.source_branch, "config/main");
    assert_string_equal(m->settings.rendered_branch, "rendered-configs");
    assert_int_equal(m->nmcs + m->npools, 0);
}

static void check_policy(const mcg_model *m)
{
    assert_true(m->policy.present);
    assert_int_equal(m->policy.nfiles, 1);
    assert_string_equal(m->policy.files[0].key, "/etc/chrony.conf");
    assert_int_equal(m->policy.files[0].nactions, 1);
    assert_int_equal(m->policy.files[0].actions[0].type, MCG_ACT_RESTART);
    assert_string_equal(m->policy.files[0].actions[0].service, "chronyd.service");
    assert_int_equal(m->nmcs, 0);
}

static void check_links(const mcg_model *m)
{
    const mcg_ignition *ign = &m->mcs[0].config;
    const mcg_storage *h = find_storage(ign, "/usr/local/bin/tool");
    assert_int_equal(h->hard, MCG_TRUE);
    assert_string_equal(h->target, "/usr/bin/tool");
    assert_int_equal(h->overwrite, MCG_FALSE);
    assert_true(h->user.has_id);
    assert_int_equal(h->user.id, 1000);
}

/* ------------------------------------------------------------ the table */

/* clang-format off */
static const parse_case cases[] = {
    /* ---------------------------------------------------- passing */
    {"pass: YAML config with files, dirs, links, units, keys", MCF,
     MC_HEAD("50-full")
     "    passwd:\n"                                  /* 11 */
     "      users:\n"                                 /* 12 */
     "      - name: core\n"                           /* 13 */
     "        sshAuthorizedKeys:\n"                   /* 14 */
     "        - ssh-ed25519 AAAA key1\n"              /* 15 */
     "        - ssh-ed25519 AAAA key2\n"              /* 16 */
     "        - ssh-ed25519 AAAA key1\n"              /* 17 */
     "    storage:\n"                                 /* 18 */
     "      files:\n"                                 /* 19 */
     "      - path: /etc/chrony.conf\n"               /* 20 */
     "        mode: 0644\n"                           /* 21 */
     "        overwrite: true\n"                      /* 22 */
     "        user:\n"                                /* 23 */
     "          name: root\n"                         /* 24 */
     "        group:\n"                               /* 25 */
     "          id: 0\n"                              /* 26 */
     "        contents:\n"                            /* 27 */
     "          source: data:,server%20ntp.example.com%0A\n" /* 28 */
     "      directories:\n"                           /* 29 */
     "      - path: /etc/mcgit.d\n"                   /* 30 */
     "        mode: 0750\n"                           /* 31 */
     "      links:\n"                                 /* 32 */
     "      - path: /etc/localtime\n"                 /* 33 */
     "        target: ../usr/share/zoneinfo/UTC\n"    /* 34 */
     "    systemd:\n"                                 /* 35 */
     "      units:\n"                                 /* 36 */
     "      - name: chronyd.service\n"                /* 37 */
     "        enabled: true\n"                        /* 38 */
     "        dropins:\n"                             /* 39 */
     "        - name: 10-mcgit.conf\n"                /* 40 */
     "          contents: \"[Service]\\nNice=5\\n\"\n" /* 41 */
     "      - name: debug.service\n"                  /* 42 */
     "        mask: true\n"                           /* 43 */
     "        contents: |\n"                          /* 44 */
     "          [Unit]\n"                             /* 45 */
     "          Description=debug\n",                 /* 46 */
     NULL, NULL, 1, check_full, NULL, NULL},

    {"pass: config as an embedded JSON string", MCF,
     API "kind: MachineConfig\n"
     "metadata:\n"
     "  name: 10-json\n"
     "spec:\n"
     "  config: |\n"                                                   /* 6 */
     "    {\"ignition\": {\"version\": \"3.2.0\"},\n"                  /* 7 */
     "     \"storage\": {\"files\": [{\"path\": \"/etc/a\", \"mode\": 384,\n" /* 8 */
     "       \"contents\": {\"source\": \"data:,a\"}}]}}\n",           /* 9 */
     NULL, NULL, 1, check_embedded, NULL, NULL},

    {"pass: config as a one-line JSON string", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: 10-json\nspec:\n"
     "  config: '{\"ignition\":{\"version\":\"3.0.0\"}}'\n",
     NULL, NULL, 1, check_one_mc, NULL, NULL},

    {"pass: several documents in one file", MCF,
     "# two MachineConfigs\n"                          /* 1 */
     "---\n"                                           /* 2 */
     API "kind: MachineConfig\n"                       /* 3-4 */
     "metadata:\n  name: 10-b\n"                       /* 5-6 */
     "spec:\n  config:\n    ignition:\n      version: 3.1.0\n" /* 7-10 */
     "---\n"                                           /* 11 */
     "---\n"                                           /* 12: empty */
     API "kind: MachineConfig\n"                       /* 13-14 */
     "metadata:\n  name: 00-a\n"
     "spec:\n  config:\n    ignition:\n      version: 3.3.0\n"
     "...\n",
     NULL, NULL, 2, check_two_mcs, NULL, NULL},

    {"pass: several pools in one file", "pools/all.yaml",
     WORKER_POOL                                       /* 1-8 */
     "---\n"                                           /* 9 */
     POOL_HEAD("master")
     "  machineConfigSelector:\n"
     "    matchLabels:\n"
     "      machineconfiguration.openshift.io/role: master\n",
     NULL, NULL, 2, check_two_pools, NULL, NULL},

    {"pass: mcgit's own apiVersion", MCF,
     "apiVersion: machineconfiguration.mcgit.io/v1\n"
     "kind: MachineConfig\nmetadata:\n  name: x\nspec:\n  config:\n    ignition:\n"
     "      version: 3.4.0\n",
     NULL, NULL, 2, NULL, POOLF,
     "apiVersion: machineconfiguration.mcgit.io/v1\n"
     "kind: MachineConfigPool\nmetadata:\n  name: worker\nspec: {}\n"},

    {"pass: octal and decimal modes", MCF,
     MC_HEAD("x")
     "    storage:\n"
     "      files:\n"
     "      - path: /etc/a\n"
     "        mode: 0644\n"
     "      - path: /etc/b\n"
     "        mode: 0o644\n"
     "      - path: /etc/c\n"
     "        mode: 420\n"
     "      - path: /etc/d\n"
     "        mode: 0x1a4\n"
     "      - path: /etc/f\n"
     "        mode: 0\n"
     "      directories:\n"
     "      - path: /etc/e\n"
     "        mode: 0o755\n",
     NULL, NULL, 1, check_modes, NULL, NULL},

    {"pass: gzip + base64 data URL with sha256 verification", MCF,
     MC_HEAD("x") FILE_AT("/etc/gz")
     "        contents:\n"
     "          compression: gzip\n"
     "          source: data:;base64," GZ_HELLO "\n"
     "          verification:\n"
     "            hash: sha256-" SHA256_HELLO "\n",
     NULL, NULL, 1, check_gzip, NULL, NULL},

    {"pass: sha512 verification", MCF,
     MC_HEAD("x") FILE_AT("/etc/v")
     "        contents:\n"
     "          source: data:,hello%20gzip%0a\n"
     "          verification:\n"
     "            hash: sha512-" SHA512_HELLO "\n",
     NULL, NULL, 1, NULL, NULL, NULL},

    {"pass: percent-encoded data URL, empty contents, no contents", MCF,
     MC_HEAD("x") FILE_AT("/etc/p")
     "        contents:\n"
     "          source: \"data:text/plain;charset=utf-8,caf%C3%A9%0A\"\n"
     "      - path: /etc/empty\n"
     "        contents:\n"
     "          source: \"data:,\"\n"
     "      - path: /etc/none\n",
     NULL, NULL, 1, check_percent, NULL, NULL},

    {"pass: selectors with matchExpressions, maxUnavailable, paused", POOLF,
     POOL_HEAD("worker")
     "  machineConfigSelector:\n"
     "    matchExpressions:\n"
     "    - key: machineconfiguration.openshift.io/role\n"
     "      operator: In\n"
     "      values: [worker, infra]\n"
     "    - key: example.com/skip\n"
     "      operator: NotIn\n"
     "      values: [\"true\"]\n"
     "  nodeSelector:\n"
     "    matchLabels:\n"
     "      node-role.kubernetes.io/worker: \"\"\n"
     "    matchExpressions:\n"
     "    - key: node-role.kubernetes.io/infra\n"
     "      operator: DoesNotExist\n"
     "    - key: kubernetes.io/hostname\n"
     "      operator: Exists\n"
     "  maxUnavailable: 2\n"
     "  paused: true\n",
     NULL, NULL, 1, check_selectors, NULL, NULL},

    {"pass: maxUnavailable as a percentage", POOLF,
     WORKER_POOL "  maxUnavailable: \"25%\"\n  paused: false\n", NULL, NULL, 1,
     check_percent_unavailable, NULL, NULL},

    {"pass: spec.rollout and maintenanceWindows (safe rollouts)", POOLF,
     WORKER_POOL "  maxUnavailable: 1\n  rollout:\n    canary: 1\n    canaryPause: 10m\n"
                 "    healthChecks:\n    - name: kubelet\n      unit: kubelet.service\n"
                 "    - name: api-reachable\n      command: [\"/usr/local/bin/check-api\", \"--quick\"]\n"
                 "    healthTimeout: 5m\n    onFailure: Revert\n"
                 "  maintenanceWindows:\n  - days: [Sat, Sun]\n    start: \"02:00\"\n"
                 "    duration: 4h\n    timeZone: Europe/Berlin\n",
     NULL, NULL, 1, check_rollout, NULL, NULL},
    {"pass: a pool written for MCO has no rollout and no windows", POOLF, WORKER_POOL, NULL, NULL,
     1, check_no_rollout, NULL, NULL},
    {"pass: maxConcurrentDisruptions", "mcgit.yaml", "maxConcurrentDisruptions: 2\n", NULL, NULL,
     0, check_budget, NULL, NULL},
    {"pass: mcgit.yaml", "mcgit.yaml",
     "# settings\nsourceBranch: config/main\nrenderedBranch: rendered-configs\n"
     "apiGroup: machineconfiguration.mcgit.io\nsignatures: required\n",
     NULL, NULL, 0, check_settings, NULL, NULL},

    {"pass: MachineConfiguration cluster in machineconfigs/", "machineconfigs/cluster.yaml",
     "apiVersion: operator.openshift.io/v1\n"
     "kind: MachineConfiguration\n"
     "metadata:\n  name: cluster\n"
     "spec:\n"
     "  nodeDisruptionPolicy:\n"
     "    files:\n"
     "    - path: /etc/chrony.conf\n"
     "      actions:\n"
     "      - type: Restart\n"
     "        restart:\n"
     "          serviceName: chronyd.service\n",
     NULL, NULL, 0, check_policy, NULL, NULL},

    {"pass: unsupported fields left empty or default", MCF,
     MC_HEAD("x")
     "    kernelArguments: {}\n"
     "  kernelArguments: []\n"
     "  extensions: []\n"
     "  osImageURL: \"\"\n"
     "  kernelType: default\n"
     "  fips: false\n",
     NULL, NULL, 1, NULL, NULL, NULL},

    {"pass: a MachineConfig as a JSON document", "machineconfigs/x.json",
     "{\"apiVersion\": \"machineconfiguration.openshift.io/v1\", \"kind\": \"MachineConfig\",\n"
     " \"metadata\": {\"name\": \"x\", \"labels\": {\"a\": \"b\"}},\n"
     " \"spec\": {\"config\": {\"ignition\": {\"version\": \"3.4.0\"},\n"
     "   \"storage\": {\"files\": [{\"path\": \"/etc/x\", \"mode\": 420}]}}}}\n",
     NULL, NULL, 1, NULL, NULL, NULL},

    {"pass: hard link, owners by id, overwrite false", MCF,
     MC_HEAD("x")
     "    storage:\n"
     "      links:\n"
     "      - path: /usr/local/bin/tool\n"
     "        target: /usr/bin/tool\n"
     "        hard: true\n"
     "        overwrite: false\n"
     "        user: {id: 1000}\n"
     "        group: {name: wheel}\n",
     NULL, NULL, 1, check_links, NULL, NULL},

    {"pass: file that is not a config file is ignored", "machineconfigs/README.md",
     "this: [is not yaml", NULL, NULL, 0, NULL, NULL, NULL},

    {"pass: comments only", MCF, "# nothing here yet\n", NULL, NULL, 0, NULL, NULL, NULL},

    /* ---------------------------------------------------- paths */
    {"refuse: path with ..", MCF, MC_HEAD("x") FILE_AT("/etc/../shadow"), MCF ":13:",
     "field 'storage.files[0].path' must be an absolute clean path (got '/etc/../shadow')",
     0, NULL, NULL, NULL},
    {"refuse: path with //", MCF, MC_HEAD("x") FILE_AT("/etc//x"), MCF ":13:",
     "must be an absolute clean path (got '/etc//x')", 0, NULL, NULL, NULL},
    {"refuse: path with trailing /", MCF, MC_HEAD("x") FILE_AT("/etc/x/"), MCF ":13:",
     "must be an absolute clean path (got '/etc/x/')", 0, NULL, NULL, NULL},
    {"refuse: relative path", MCF, MC_HEAD("x") FILE_AT("etc/x"), MCF ":13:",
     "must be an absolute clean path (got 'etc/x')", 0, NULL, NULL, NULL},
    {"refuse: path with .", MCF, MC_HEAD("x") FILE_AT("/etc/./x"), MCF ":13:",
     "absolute clean path", 0, NULL, NULL, NULL},
    {"refuse: root as a path", MCF, MC_HEAD("x") FILE_AT("/"), MCF ":13:", "absolute clean path",
     0, NULL, NULL, NULL},
    {"refuse: directory path not clean", MCF,
     MC_HEAD("x") "    storage:\n      directories:\n      - path: /var/lib/\n", MCF ":13:",
     "field 'storage.directories[0].path' must be an absolute clean path", 0, NULL, NULL, NULL},
    {"refuse: link path not clean", MCF,
     MC_HEAD("x") "    storage:\n      links:\n      - target: /x\n        path: a/b\n",
     MCF ":14:", "field 'storage.links[0].path' must be an absolute clean path",
     0, NULL, NULL, NULL},
    {"refuse: missing path", MCF,
     MC_HEAD("x") "    storage:\n      files:\n      - mode: 420\n", MCF ":13:",
     "field 'storage.files[0].path' is required", 0, NULL, NULL, NULL},
    {"refuse: hard link with a relative target", MCF,
     MC_HEAD("x") "    storage:\n      links:\n      - path: /a\n        hard: true\n"
     "        target: b\n",
     MCF ":15:", "field 'storage.links[0].target' of a hard link must be an absolute clean path",
     0, NULL, NULL, NULL},

    /* ---------------------------------------------------- modes */
    {"refuse: mode over 0777 (setuid)", MCF, MC_HEAD("x") FILE_AT("/etc/a") "        mode: 04755\n",
     MCF ":14:", "field 'storage.files[0].mode' must be at most 0777 (got 04755)",
     0, NULL, NULL, NULL},
    {"refuse: sticky directory", MCF,
     MC_HEAD("x") "    storage:\n      directories:\n      - path: /tmp2\n        mode: 01777\n",
     MCF ":14:", "field 'storage.directories[0].mode' must be at most 0777", 0, NULL, NULL, NULL},
    {"refuse: negative mode", MCF, MC_HEAD("x") FILE_AT("/etc/a") "        mode: -1\n", MCF ":14:",
     "field 'storage.files[0].mode' must not be negative", 0, NULL, NULL, NULL},
    {"refuse: mode as a quoted string", MCF,
     MC_HEAD("x") FILE_AT("/etc/a") "        mode: \"0644\"\n", MCF ":14:",
     "field 'storage.files[0].mode' must be an integer", 0, NULL, NULL, NULL},
    {"refuse: integer out of range", MCF,
     MC_HEAD("x") FILE_AT("/etc/a") "        mode: 99999999999999999999\n", MCF ":14:",
     "integer '99999999999999999999' is out of range", 0, NULL, NULL, NULL},

    /* ---------------------------------------------------- contents */
    {"refuse: remote source (https)", MCF,
     MC_HEAD("x") FILE_AT("/etc/a") "        contents:\n          source: https://example.com/a\n",
     MCF ":15:", "remote sources are not supported, use a data: URL", 0, NULL, NULL, NULL},
    {"refuse: remote source (s3)", MCF,
     MC_HEAD("x") FILE_AT("/etc/a") "        contents:\n          source: s3://bucket/a\n",
     MCF ":15:", "remote sources are not supported", 0, NULL, NULL, NULL},
    {"refuse: bad base64", MCF,
     MC_HEAD("x") FILE_AT("/etc/a") "        contents:\n          source: data:;base64,aGVsbG8\n",
     MCF ":15:", "field 'storage.files[0].contents.source': invalid data URL: invalid base64",
     0, NULL, NULL, NULL},
    {"refuse: bad percent escape", MCF,
     MC_HEAD("x") FILE_AT("/etc/a") "        contents:\n          source: data:,100%zz\n",
     MCF ":15:", "bad percent escape", 0, NULL, NULL, NULL},
    {"refuse: bad gzip", MCF,
     MC_HEAD("x") FILE_AT("/etc/a")
     "        contents:\n          compression: gzip\n          source: data:,not-gzip\n",
     MCF ":16:", "invalid gzip data", 0, NULL, NULL, NULL},
    {"refuse: gzip of no source", MCF,
     MC_HEAD("x") FILE_AT("/etc/a") "        contents:\n          compression: gzip\n",
     MCF ":15:", "field 'storage.files[0].contents.source': invalid gzip data",
     0, NULL, NULL, NULL},
    {"refuse: compression other than gzip", MCF,
     MC_HEAD("x") FILE_AT("/etc/a")
     "        contents:\n          compression: bzip2\n          source: data:,x\n",
     MCF ":15:", "field 'storage.files[0].contents.compression' must be gzip (got 'bzip2')",
     0, NULL, NULL, NULL},
    {"refuse: verification hash mismatch", MCF,
     MC_HEAD("x") FILE_AT("/etc/a")
     "        contents:\n          source: data:,hello\n          verification:\n"
     "            hash: sha256-0000000000000000000000000000000000000000000000000000000000000000\n",
     MCF ":17:", "field 'storage.files[0].contents.verification.hash' does not match the contents",
     0, NULL, NULL, NULL},
    {"refuse: verification hash of the compressed bytes", MCF,
     MC_HEAD("x") FILE_AT("/etc/gz")
     "        contents:\n          compression: gzip\n"
     "          source: data:;base64," GZ_HELLO "\n"
     "          verification:\n            hash: sha256-" SHA256_GZ_HELLO "\n",
     MCF ":18:", "does not match the contents", 0, NULL, NULL, NULL},
    {"refuse: verification hash of unknown type", MCF,
     MC_HEAD("x") FILE_AT("/etc/a")
     "        contents:\n          source: data:,hello\n          verification:\n"
     "            hash: md5-5d41402abc4b2a76b9719d911017c592\n",
     MCF ":17:", "must be sha256-<hex> or sha512-<hex>", 0, NULL, NULL, NULL},
    {"refuse: verification hash too short", MCF,
     MC_HEAD("x") FILE_AT("/etc/a")
     "        contents:\n          source: data:,hello\n          verification:\n"
     "            hash: sha256-abc\n",
     MCF ":17:", "is malformed", 0, NULL, NULL, NULL},
    {"refuse: httpHeaders", MCF,
     MC_HEAD("x") FILE_AT("/etc/a")
     "        contents:\n          source: data:,x\n          httpHeaders:\n"
     "          - name: a\n            value: b\n",
     MCF ":17:", "field 'contents.httpHeaders' is not supported", 0, NULL, NULL, NULL},
    {"refuse: append", MCF,
     MC_HEAD("x") FILE_AT("/etc/a") "        append:\n        - source: data:,more\n", MCF ":15:",
     "field 'append' is not supported: files are written whole", 0, NULL, NULL, NULL},

    /* ---------------------------------------------------- one key space */
    {"refuse: same path as file and directory", MCF,
     MC_HEAD("x") FILE_AT("/etc/a") "      directories:\n      - path: /etc/a\n", MCF ":15:",
     "path '/etc/a' is given twice in this config (first on line 13)", 0, NULL, NULL, NULL},
    {"refuse: same path as file and link", MCF,
     MC_HEAD("x") FILE_AT("/etc/a") "      links:\n      - path: /etc/a\n        target: /b\n",
     MCF ":15:", "path '/etc/a' is given twice in this config (first on line 13)",
     0, NULL, NULL, NULL},
    {"refuse: same file twice", MCF,
     MC_HEAD("x") FILE_AT("/etc/a") "        mode: 420\n      - path: /etc/a\n", MCF ":15:",
     "path '/etc/a' is given twice", 0, NULL, NULL, NULL},

    /* ---------------------------------------------------- users */
    {"refuse: user without a name", MCF,
     MC_HEAD("x") "    passwd:\n      users:\n      - sshAuthorizedKeys: [k]\n", MCF ":13:",
     "field 'passwd.users[0].name' is required", 0, NULL, NULL, NULL},
    {"refuse: core with groups", MCF,
     MC_HEAD("x") "    passwd:\n      users:\n      - name: core\n        groups: [wheel]\n",
     MCF ":14:", "field 'passwd.users[0].groups' is not supported", 0, NULL, NULL, NULL},
    {"refuse: multi-line SSH key", MCF,
     MC_HEAD("x") "    passwd:\n      users:\n      - name: core\n        sshAuthorizedKeys:\n"
     "        - \"ssh-ed25519 AAAA\\nssh-rsa BBBB\"\n",
     MCF ":15:", "sshAuthorizedKeys[0] must be a one-line string", 0, NULL, NULL, NULL},
    {"refuse: SSH key that is not a string", MCF,
     MC_HEAD("x") "    passwd:\n      users:\n      - name: core\n        sshAuthorizedKeys:\n"
     "        - {a: b}\n",
     MCF ":15:", "sshAuthorizedKeys[0] must be a one-line string", 0, NULL, NULL, NULL},

    /* ---------------------------------------------------- storage kinds */
    {"refuse: storage as a list", MCF, MC_HEAD("x") "    storage: []\n", MCF ":11:",
     "field 'storage' must be a mapping", 0, NULL, NULL, NULL},

    /* ---------------------------------------------------- MachineConfig spec */
    {"refuse: ignition.config (remote merge)", MCF,
     MC_HEAD("x") "      config:\n        merge:\n        - source: https://x/c.ign\n",
     MCF ":12:", "field 'ignition.config' is not supported", 0, NULL, NULL, NULL},
    {"refuse: spec not a mapping", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: x\nspec: [config]\n", MCF ":5:",
     "field 'spec' must be a mapping", 0, NULL, NULL, NULL},
    {"refuse: spec.config empty string", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: x\nspec:\n  config: \"\"\n", MCF ":6:",
     "spec.config is empty", 0, NULL, NULL, NULL},

    /* ---------------------------------------------------- Ignition version */
    {"refuse: unknown Ignition version", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: x\nspec:\n  config:\n    ignition:\n"
     "      version: 3.6.0\n",
     MCF ":8:", "Ignition version '3.6.0' is not supported (2.0.0 to 2.2.0, 3.0.0 to 3.5.0)",
     0, NULL, NULL, NULL},
    {"refuse: experimental Ignition version", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: x\nspec:\n  config:\n    ignition:\n"
     "      version: 3.5.0-experimental\n",
     MCF ":8:", "is not supported", 0, NULL, NULL, NULL},
    {"refuse: missing Ignition version", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: x\nspec:\n  config:\n    ignition: {}\n",
     MCF ":7:", "field 'spec.config.ignition.version' is required", 0, NULL, NULL, NULL},
    {"refuse: missing ignition section", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: x\nspec:\n  config:\n"
     "    storage: {}\n",
     MCF ":7:", "field 'spec.config.ignition.version' is required", 0, NULL, NULL, NULL},
    {"refuse: Ignition version as a number", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: x\nspec:\n  config:\n    ignition:\n"
     "      version: 3\n",
     MCF ":8:", "field 'spec.config.ignition.version' is required", 0, NULL, NULL, NULL},

    /* ---------------------------------------------------- unknown fields */
    {"refuse: unknown field in spec", MCF, MC_HEAD("x") "  replicas: 3\n", MCF ":11:",
     "unknown field 'spec.replicas'", 0, NULL, NULL, NULL},
    {"refuse: unknown top-level field", MCF, MC_HEAD("x") "extra: 1\n", MCF ":11:",
     "unknown field 'extra'", -1, NULL, NULL, NULL},

    /* ---------------------------------------------------- units */
    {"refuse: bad unit name", MCF,
     MC_HEAD("x") "    systemd:\n      units:\n      - name: chronyd\n", MCF ":13:",
     "'chronyd' is not a valid systemd unit name", 0, NULL, NULL, NULL},
    {"refuse: unit name with a slash", MCF,
     MC_HEAD("x") "    systemd:\n      units:\n      - name: ../x.service\n", MCF ":13:",
     "is not a valid systemd unit name", 0, NULL, NULL, NULL},
    {"refuse: unit without a name", MCF,
     MC_HEAD("x") "    systemd:\n      units:\n      - enabled: true\n", MCF ":13:",
     "field 'systemd.units[0].name' is required", 0, NULL, NULL, NULL},
    {"refuse: bad drop-in name", MCF,
     MC_HEAD("x") "    systemd:\n      units:\n      - name: a.service\n        dropins:\n"
     "        - name: override.txt\n",
     MCF ":15:", "'override.txt' is not a valid drop-in name (NAME.conf)", 0, NULL, NULL, NULL},
    {"refuse: drop-in name with a slash", MCF,
     MC_HEAD("x") "    systemd:\n      units:\n      - name: a.service\n        dropins:\n"
     "        - name: ../../x.conf\n",
     MCF ":15:", "is not a valid drop-in name", 0, NULL, NULL, NULL},
    {"refuse: duplicate unit", MCF,
     MC_HEAD("x") "    systemd:\n      units:\n      - name: a.service\n"
     "        enabled: true\n      - name: a.service\n        mask: true\n",
     MCF ":15:", "unit 'a.service' is given twice in this config", 0, NULL, NULL, NULL},
    {"refuse: duplicate drop-in", MCF,
     MC_HEAD("x") "    systemd:\n      units:\n      - name: a.service\n        dropins:\n"
     "        - name: a.conf\n        - name: a.conf\n",
     MCF ":16:", "drop-in 'a.conf' is given twice for unit 'a.service'", 0, NULL, NULL, NULL},
    {"refuse: enabled as a string", MCF,
     MC_HEAD("x") "    systemd:\n      units:\n      - name: a.service\n        enabled: \"yes\"\n",
     MCF ":14:", "field 'systemd.units[0].enabled' must be true or false", 0, NULL, NULL, NULL},

    /* ---------------------------------------------------- documents */
    {"refuse: wrong apiVersion", MCF,
     "apiVersion: v1\nkind: MachineConfig\nmetadata:\n  name: x\n", MCF ":1:",
     "apiVersion 'v1' is not supported (use machineconfiguration.openshift.io/v1 or "
     "machineconfiguration.mcgit.io/v1)", 0, NULL, NULL, NULL},
    {"refuse: wrong apiVersion on the second document", MCF,
     MC_HEAD("a") "---\napiVersion: machineconfiguration.openshift.io/v2\nkind: MachineConfig\n",
     MCF ":12:", "apiVersion 'machineconfiguration.openshift.io/v2' is not supported",
     1, NULL, NULL, NULL},
    {"refuse: MachineConfigPool in machineconfigs/", MCF, WORKER_POOL, MCF ":2:",
     "kind 'MachineConfigPool' does not belong in machineconfigs/", 0, NULL, NULL, NULL},
    {"refuse: MachineConfig in pools/", POOLF, MC_HEAD("x"), POOLF ":2:",
     "kind 'MachineConfig' does not belong in pools/ (MachineConfigPool only)",
     0, NULL, NULL, NULL},
    {"refuse: ConfigMap in machineconfigs/", MCF,
     "apiVersion: machineconfiguration.openshift.io/v1\nkind: ConfigMap\n", MCF ":2:",
     "kind 'ConfigMap' does not belong in machineconfigs/", 0, NULL, NULL, NULL},
    {"refuse: no kind", MCF, API "metadata:\n  name: x\n", MCF ":1:", "document has no kind",
     0, NULL, NULL, NULL},
    {"refuse: no apiVersion", MCF, "kind: MachineConfig\nmetadata:\n  name: x\n", MCF ":1:",
     "document has no apiVersion", 0, NULL, NULL, NULL},
    {"refuse: document is a list", MCF, "- a\n- b\n", MCF ":1:", "document must be a mapping",
     0, NULL, NULL, NULL},
    {"refuse: missing metadata.name", MCF,
     API "kind: MachineConfig\nmetadata:\n  labels:\n    a: b\nspec:\n  config:\n"
     "    ignition:\n      version: 3.4.0\n",
     MCF ":4:", "MachineConfig has no metadata.name", 0, NULL, NULL, NULL},
    {"refuse: missing metadata", MCF,
     API "kind: MachineConfig\nspec:\n  config:\n    ignition:\n      version: 3.4.0\n",
     MCF ":1:", "MachineConfig has no metadata.name", 0, NULL, NULL, NULL},
    {"refuse: invalid MachineConfig name", MCF, MC_HEAD("Bad_Name"), MCF ":4:",
     "MachineConfig name 'Bad_Name' is not a valid DNS-1123 subdomain", 0, NULL, NULL, NULL},
    {"refuse: invalid pool name", POOLF, POOL_HEAD("work.er") "  paused: false\n", POOLF ":4:",
     "MachineConfigPool name 'work.er' is not a valid DNS-1123 label", 0, NULL, NULL, NULL},
    {"refuse: label value not a string", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: x\n  labels:\n    tier: 1\n", MCF ":6:",
     "label 'tier' must be a string (quote it)", 0, NULL, NULL, NULL},
    {"refuse: pool with an empty spec", POOLF, POOL_HEAD("worker"), POOLF ":1:",
     "MachineConfigPool has no spec", 0, NULL, NULL, NULL},
    {"refuse: owner name not a string", MCF,
     MC_HEAD("x") FILE_AT("/etc/a") "        user:\n          name: [root]\n", MCF ":15:",
     "field 'storage.files[0].user.name' must be a string", 0, NULL, NULL, NULL},
    {"refuse: contents source not a string", MCF,
     MC_HEAD("x") FILE_AT("/etc/a") "        contents:\n          source: 3\n", MCF ":15:",
     "field 'storage.files[0].contents.source' must be a string", 0, NULL, NULL, NULL},
    {"refuse: drop-ins not a list", MCF,
     MC_HEAD("x") "    systemd:\n      units:\n      - name: a.service\n        dropins: {}\n",
     MCF ":14:", "field 'systemd.units[0].dropins' must be a list", 0, NULL, NULL, NULL},
    {"refuse: selector values not a list", POOLF,
     POOL_HEAD("worker") "  nodeSelector:\n    matchExpressions:\n    - key: a\n"
     "      operator: In\n      values: b\n",
     POOLF ":10:", "field 'spec.nodeSelector.matchExpressions[0].values' must be a list",
     0, NULL, NULL, NULL},
    {"refuse: pool without spec", POOLF,
     API "kind: MachineConfigPool\nmetadata:\n  name: worker\n", POOLF ":1:",
     "MachineConfigPool has no spec", 0, NULL, NULL, NULL},

    /* ---------------------------------------------------- pools */
    {"refuse: bad selector operator", POOLF,
     POOL_HEAD("worker")
     "  machineConfigSelector:\n"
     "    matchExpressions:\n"
     "    - key: role\n"
     "      operator: Equals\n"
     "      values: [worker]\n",
     POOLF ":9:", "operator 'Equals' is not one of In, NotIn, Exists, DoesNotExist",
     0, NULL, NULL, NULL},
    {"refuse: In without values", POOLF,
     POOL_HEAD("worker")
     "  nodeSelector:\n"
     "    matchExpressions:\n"
     "    - key: role\n"
     "      operator: In\n",
     POOLF ":8:", "spec.nodeSelector.matchExpressions[0]: operator In needs values",
     0, NULL, NULL, NULL},
    {"refuse: NotIn with empty values", POOLF,
     POOL_HEAD("worker")
     "  nodeSelector:\n"
     "    matchExpressions:\n"
     "    - {key: role, operator: NotIn, values: []}\n",
     POOLF ":8:", "operator NotIn needs values", 0, NULL, NULL, NULL},
    {"refuse: Exists with values", POOLF,
     POOL_HEAD("worker")
     "  machineConfigSelector:\n"
     "    matchExpressions:\n"
     "    - key: role\n"
     "      operator: Exists\n"
     "      values: [x]\n",
     POOLF ":8:", "operator Exists takes no values", 0, NULL, NULL, NULL},
    {"refuse: expression without key", POOLF,
     POOL_HEAD("worker")
     "  machineConfigSelector:\n"
     "    matchExpressions:\n"
     "    - operator: Exists\n",
     POOLF ":8:", "field 'spec.machineConfigSelector.matchExpressions[0].key' is required",
     0, NULL, NULL, NULL},
    {"refuse: matchLabels value not a string", POOLF,
     POOL_HEAD("worker") "  nodeSelector:\n    matchLabels:\n      gpu: true\n", POOLF ":8:",
     "spec.nodeSelector.matchLabels['gpu'] must be a string (quote it)", 0, NULL, NULL, NULL},
    {"refuse: unknown selector field", POOLF,
     POOL_HEAD("worker") "  nodeSelector:\n    matchFields: {}\n", POOLF ":7:",
     "unknown field 'spec.nodeSelector.matchFields'", 0, NULL, NULL, NULL},
    {"refuse: an empty nodeSelector (MCO: SelectingAll, no update)", POOLF,
     WORKER_POOL "  nodeSelector: {}\n", POOLF ":9:",
     "spec.nodeSelector is empty: it would select every node", 0, NULL, NULL, NULL},
    {"refuse: a nodeSelector of empty matchLabels", POOLF,
     WORKER_POOL "  nodeSelector:\n    matchLabels: {}\n", POOLF ":10:",
     "spec.nodeSelector is empty: it would select every node", 0, NULL, NULL, NULL},
    {"refuse: maxUnavailable not a number", POOLF, WORKER_POOL "  maxUnavailable: lots\n",
     POOLF ":9:", "maxUnavailable 'lots' must be an integer or a percentage like \"10%\"",
     0, NULL, NULL, NULL},
    {"refuse: maxUnavailable over 100%", POOLF, WORKER_POOL "  maxUnavailable: 150%\n",
     POOLF ":9:", "maxUnavailable '150%' is over 100% (a percentage of the pool's nodes",
     0, NULL, NULL, NULL},
    {"refuse: maxUnavailable a bare %", POOLF, WORKER_POOL "  maxUnavailable: \"%\"\n",
     POOLF ":9:", "maxUnavailable '%' must be", 0, NULL, NULL, NULL},
    {"refuse: maxUnavailable a number in a string", POOLF, WORKER_POOL "  maxUnavailable: \"5\"\n",
     POOLF ":9:", "maxUnavailable '5' must be", 0, NULL, NULL, NULL},
    {"refuse: maxUnavailable negative", POOLF, WORKER_POOL "  maxUnavailable: -1\n", POOLF ":9:",
     "maxUnavailable must not be negative", 0, NULL, NULL, NULL},
    {"refuse: maxUnavailable fractional", POOLF, WORKER_POOL "  maxUnavailable: 1.5\n",
     POOLF ":9:", "maxUnavailable must be an integer or a percentage", 0, NULL, NULL, NULL},
    {"refuse: paused as a string", POOLF, WORKER_POOL "  paused: \"true\"\n", POOLF ":9:",
     "field 'spec.paused' must be true or false", 0, NULL, NULL, NULL},
    {"refuse: no worker pool", "pools/master.yaml",
     POOL_HEAD("master") "  machineConfigSelector: {}\n", "pools/:",
     "there is no pool 'worker' (custom pools inherit from it)", 1, NULL, NULL, NULL},

    /* ---------------------------------------------------- YAML */
    {"refuse: YAML tab indenting a key", MCF,
     API "kind: MachineConfig\nmetadata:\n\tname: x\n", MCF ":4:",
     "tab character used for indentation", 0, NULL, NULL, NULL},
    {"refuse: YAML tab after spaces", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: x\n  labels:\n  \tfoo: bar\n", MCF ":6:",
     "tab character used for indentation", 0, NULL, NULL, NULL},
    {"refuse: YAML tab inside a value is no indentation", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: [x\tspec: {}\n", MCF ":", "invalid YAML",
     0, NULL, NULL, NULL},
    {"refuse: YAML syntax error", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: [x\nspec: {}\n", MCF ":5:", "invalid YAML",
     0, NULL, NULL, NULL},
    {"refuse: YAML bad indentation", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: x\n   labels: {}\n", MCF ":5:",
     "invalid YAML", 0, NULL, NULL, NULL},
    {"refuse: YAML alias", MCF,
     API "kind: MachineConfig\n"       /* 2 */
     "metadata:\n"                     /* 3 */
     "  name: x\n"                     /* 4 */
     "  labels: &l\n"                  /* 5 */
     "    a: b\n"                      /* 6 */
     "  annotations: *l\n",            /* 7 */
     MCF ":7:", "YAML aliases are not supported", 0, NULL, NULL, NULL},
    {"refuse: duplicate key", MCF,
     MC_HEAD("x") FILE_AT("/etc/a") "        mode: 420\n        mode: 384\n", MCF ":15:",
     "duplicate key 'mode'", 0, NULL, NULL, NULL},
    {"refuse: duplicate top-level key", MCF, MC_HEAD("x") "kind: MachineConfig\n", MCF ":11:",
     "duplicate key 'kind'", 0, NULL, NULL, NULL},
    {"refuse: non-scalar key", MCF, API "? [a, b]\n: c\n", MCF ":2:",
     "mapping keys must be scalars", 0, NULL, NULL, NULL},
    {"refuse: deep nesting", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: x\n  labels: "
     "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
     "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
     MCF ":5:", "nesting deeper than 64 levels", 0, NULL, NULL, NULL},

    /* ---------------------------------------------------- embedded config lines */
    {"refuse: bad path inside an embedded JSON config", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: x\nspec:\n"
     "  config: |\n"                                                   /* 6 */
     "    {\"ignition\": {\"version\": \"3.4.0\"},\n"                  /* 7 */
     "     \"storage\": {\"files\": [\n"                               /* 8 */
     "       {\"path\": \"/etc/ok\"},\n"                               /* 9 */
     "       {\"path\": \"/etc/../bad\"}]}}\n",                        /* 10 */
     MCF ":10:", "field 'storage.files[1].path' must be an absolute clean path",
     0, NULL, NULL, NULL},
    {"refuse: syntax error inside an embedded JSON config", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: x\nspec:\n"
     "  config: |\n"                                                   /* 6 */
     "    {\"ignition\": {\"version\": \"3.4.0\"},\n"                  /* 7 */
     "     \"storage\": {\"files\": [}\n",                             /* 8 */
     MCF ":8:", "invalid YAML", 0, NULL, NULL, NULL},
    {"refuse: two documents in an embedded config", MCF,
     API "kind: MachineConfig\nmetadata:\n  name: x\nspec:\n"
     "  config: |\n"                                                   /* 6 */
     "    ignition: {version: 3.4.0}\n"                                /* 7 */
     "    ---\n"                                                       /* 8 */
     "    ignition: {version: 3.4.0}\n",                               /* 9 */
     MCF ":6:", "spec.config holds more than one document", 0, NULL, NULL, NULL},

    /* ---------------------------------------------------- mcgit.yaml */
    {"refuse: a health check unit that is not a unit name", POOLF,
     WORKER_POOL "  rollout:\n    healthChecks:\n    - name: k\n      unit: kubelet\n", POOLF ":12:",
     "spec.rollout.healthChecks[0].unit 'kubelet' is not a systemd unit name", 0, NULL, NULL, NULL},
    {"refuse: a relative health check command", POOLF,
     WORKER_POOL "  rollout:\n    healthChecks:\n    - name: k\n      command: [check-api]\n",
     POOLF ":12:", "spec.rollout.healthChecks[0].command must start with an absolute path",
     0, NULL, NULL, NULL},
    {"refuse: a NUL inside a health check command (never truncated)", POOLF,
     WORKER_POOL "  rollout:\n    healthChecks:\n    - name: k\n"
                 "      command: [/bin/true, \"x\\0; rm -rf /\"]\n",
     POOLF ":12:", "spec.rollout.healthChecks[0].command[1] contains a NUL byte",
     0, NULL, NULL, NULL},
    {"refuse: a health check with both unit and command", POOLF,
     WORKER_POOL "  rollout:\n    healthChecks:\n    - name: k\n      unit: a.service\n"
                 "      command: [/bin/true]\n",
     POOLF ":11:", "spec.rollout.healthChecks[0] needs exactly one of unit and command",
     0, NULL, NULL, NULL},
    {"refuse: onFailure neither Revert nor Halt", POOLF,
     WORKER_POOL "  rollout:\n    onFailure: Retry\n", POOLF ":10:",
     "spec.rollout.onFailure must be Revert or Halt, not 'Retry'", 0, NULL, NULL, NULL},
    {"refuse: a misspelt rollout key", POOLF, WORKER_POOL "  rollout:\n    canaryPuase: 10m\n",
     POOLF ":10:", "did you mean \"canaryPause\"", 0, NULL, NULL, NULL},
    {"refuse: a window with no days", POOLF,
     WORKER_POOL "  maintenanceWindows:\n  - start: \"02:00\"\n    duration: 4h\n", POOLF ":10:",
     "spec.maintenanceWindows[0] has no days", 0, NULL, NULL, NULL},
    {"refuse: a window over 24 h", POOLF,
     WORKER_POOL "  maintenanceWindows:\n  - days: [Sat]\n    start: \"02:00\"\n    duration: 25h\n",
     POOLF ":12:", "spec.maintenanceWindows[0].duration '25h' is over 24 h", 0, NULL, NULL, NULL},
    {"refuse: a window start that is no time", POOLF,
     WORKER_POOL "  maintenanceWindows:\n  - days: [Sat]\n    start: \"2am\"\n    duration: 1h\n",
     POOLF ":10:", "spec.maintenanceWindows[0].start must be a time like \"02:00\"",
     0, NULL, NULL, NULL},
    {"refuse: an unknown day", POOLF,
     WORKER_POOL "  maintenanceWindows:\n  - days: [Caturday]\n    start: \"02:00\"\n    duration: 1h\n",
     POOLF ":10:", "spec.maintenanceWindows[0].days[0] must be one of Mon", 0, NULL, NULL, NULL},
    {"refuse: maxConcurrentDisruptions 0", "mcgit.yaml", "maxConcurrentDisruptions: 0\n",
     "mcgit.yaml:1:", "maxConcurrentDisruptions must be at least 1", 0, NULL, NULL, NULL},
    {"refuse: mcgit.yaml bad branch", "mcgit.yaml",
     "# settings\nsourceBranch: \"main..x\"\n", "mcgit.yaml:2:",
     "'main..x' is not a valid branch name", 0, NULL, NULL, NULL},
    {"refuse: mcgit.yaml branch with a space", "mcgit.yaml",
     "renderedBranch: \"my branch\"\n", "mcgit.yaml:1:", "'my branch' is not a valid branch name",
     0, NULL, NULL, NULL},
    {"refuse: mcgit.yaml same branches", "mcgit.yaml",
     "sourceBranch: main\nrenderedBranch: main\n", "mcgit.yaml:1:",
     "sourceBranch and renderedBranch must differ", 0, NULL, NULL, NULL},
    {"refuse: mcgit.yaml unsigned", "mcgit.yaml", "signatures: optional\n", "mcgit.yaml:1:",
     "signatures must be 'required'", 0, NULL, NULL, NULL},
    {"refuse: mcgit.yaml unknown key", "mcgit.yaml", "sourceBranch: main\nbranch: x\n",
     "mcgit.yaml:2:", "unknown field 'branch'", 0, NULL, NULL, NULL},
    {"refuse: mcgit.yaml unknown apiGroup", "mcgit.yaml", "apiGroup: example.com\n",
     "mcgit.yaml:1:", "unknown apiGroup 'example.com'", 0, NULL, NULL, NULL},

    /* ---------------------------------------------------- across files */
    {"refuse: MachineConfig defined in two files", MCF, MC_HEAD("dup"), "machineconfigs/y.yaml:2:",
     "MachineConfig 'dup' is already defined at machineconfigs/x.yaml:1", 2, NULL,
     "machineconfigs/y.yaml", "# again\n" MC_HEAD("dup")},
    {"refuse: pool defined in two files", POOLF, WORKER_POOL, "pools/worker2.yaml:1:",
     "pool 'worker' is already defined at pools/worker.yaml:1", 2, NULL, "pools/worker2.yaml",
     WORKER_POOL},
};

/* clang-format on */

static void run_case(void **state)
{
    const parse_case *pc = *state;
    mcg_model *m = mcg_model_new();
    mcg_diags d = {0};
    mcg_model_add_file(m, pc->path, pc->yaml, strlen(pc->yaml), &d);
    if (pc->path2)
        mcg_model_add_file(m, pc->path2, pc->yaml2, strlen(pc->yaml2), &d);
    mcg_model_finish(m, &d);
    if (!pc->where) {
        if (d.count)
            fail_msg("%s: unexpected problem: %s", pc->name, d.msgs[0]);
        if (pc->check)
            pc->check(m);
    } else {
        if (!d.count)
            fail_msg("%s: accepted; want \"%s %s\"", pc->name, pc->where, pc->what);
        if (strncmp(d.msgs[0], pc->where, strlen(pc->where)) != 0)
            fail_msg("%s: first problem \"%s\" is not at \"%s\"", pc->name, d.msgs[0], pc->where);
        assert_contains(d.msgs[0], pc->what);
    }
    if (pc->nobj >= 0 && (int)(m->npools + m->nmcs) != pc->nobj)
        fail_msg("%s: %zu pools + %zu MCs, want %d objects", pc->name, m->npools, m->nmcs,
                 pc->nobj);
    mcg_diags_free(&d);
    mcg_model_free(m);
}

/* ------------------------------------------------------------ other tests */

/*
 * One problem per mistake: a pools/ file with an error does not also report
 * its pool as missing, nor the MCs it would select as selected by no pool;
 * an MC that no pool selects is a warning, one per MC, naming file and line.
 */
static void test_one_problem_per_mistake(void **state)
{
    (void)state;
    static const struct {
        const char *pool;
        size_t problems, warnings;
        const char *first;
    } tcases[] = {
        {WORKER_POOL "  maxUnavailable: 150%\n", 1, 0, "is over 100%"},
        {"apiVersion: x\n\tkind: y\n", 1, 0, "tab character used for indentation"},
        {WORKER_POOL, 0, 1, NULL},
    };
    for (size_t i = 0; i < sizeof(tcases) / sizeof(tcases[0]); i++) {
        mcg_model *m = mcg_model_new();
        mcg_diags d = {0};
        mcg_model_add_file(m, POOLF, tcases[i].pool, strlen(tcases[i].pool), &d);
        const char *mc = MC_HEAD("10-sel") "---\n" API "kind: MachineConfig\n"
                                           "metadata:\n  name: 20-nobody\n"
                                           "  labels:\n    role: none\nspec: {}\n";
        mcg_model_add_file(m, MCF, mc, strlen(mc), &d);
        mcg_model_finish(m, &d);
        if (d.count != tcases[i].problems)
            fail_msg("case %zu: %zu problems (first: %s), want %zu", i, d.count,
                     d.count ? d.msgs[0] : "-", tcases[i].problems);
        if (tcases[i].first)
            assert_contains(d.msgs[0], tcases[i].first);
        if (m->warnings.count != tcases[i].warnings)
            fail_msg("case %zu: %zu warnings, want %zu", i, m->warnings.count, tcases[i].warnings);
        if (tcases[i].warnings)
            assert_string_equal(m->warnings.msgs[0],
                                MCF ":12: MachineConfig '20-nobody' is selected by no pool's "
                                    "machineConfigSelector (no node gets it)");
        mcg_diags_free(&d);
        mcg_model_free(m);
    }
}

/* The node disruption policy's rules (model/disruption.c), as the agent and plan apply them. */
static void test_disruption_rules(void **state)
{
    (void)state;
    mcg_action restart = {MCG_ACT_RESTART, "crio.service"}, none = {MCG_ACT_NONE, NULL};
    mcg_action reload = {MCG_ACT_RELOAD, "sshd.service"}, drain = {MCG_ACT_DRAIN, NULL};
    mcg_policy_rule files[] = {{"/etc/containers/", &restart, 1},
                               {"/etc/containers/x", &none, 1},
                               {"/etc/containers/policy.json", &drain, 1}};
    mcg_policy_rule units[] = {{"chronyd.service", &drain, 1}};
    mcg_disruption_policy pol = {true, files, 3, units, 1, true, &reload, 1};
    static const struct {
        mcg_disrupt_kind kind;
        const char *key;
        bool with_policy;
        const char *want;
    } tcases[] = {
        {MCG_DISRUPT_FILE, "/etc/containers/storage.conf", true, "Restart crio.service"},
        {MCG_DISRUPT_FILE, "/etc/containers/x", true, "None"},  /* exact beats prefix */
        {MCG_DISRUPT_FILE, "/etc/containersx", true, "Reboot"}, /* not below the directory */
        {MCG_DISRUPT_FILE, "/etc/containers/storage.conf", false, "Reboot"},
        /* MCO's built-in rules: the longest match of policy and built-in wins,
         * a policy rule for the same path replaces the built-in one */
        {MCG_DISRUPT_FILE, "/etc/containers/registries.conf", true, "Drain, Reload crio.service"},
        {MCG_DISRUPT_FILE, "/etc/containers/registries.conf", false, "Drain, Reload crio.service"},
        {MCG_DISRUPT_FILE, "/etc/containers/policy.json", false, "Reload crio.service"},
        {MCG_DISRUPT_FILE, "/etc/containers/policy.json", true, "Drain"},
        {MCG_DISRUPT_FILE, "/etc/containers/registries.d/a.yaml", false, "Reload crio.service"},
        {MCG_DISRUPT_FILE, "/var/lib/kubelet/config.json", false, "None"},
        {MCG_DISRUPT_FILE, "/etc/mco/internal-registry-pull-secret.json", false, "None"},
        {MCG_DISRUPT_FILE, "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
         false, "Restart coreos-update-ca-trust.service, Restart crio.service"},
        /* the rest of MCO's defaults (apihelpers.go's defaultClusterPolicies) */
        {MCG_DISRUPT_FILE, "/etc/machine-config-daemon/no-reboot/containers-gpg.pub", false,
         "Reload crio.service"},
        {MCG_DISRUPT_FILE, "/etc/crio/policies/ns.json", false, "Reload crio.service"},
        {MCG_DISRUPT_FILE, "/etc/crio/policiesx", false, "Reboot"},
        {MCG_DISRUPT_FILE, "/etc/nmstate/openshift/eth0.yml", false, "None"},
        {MCG_DISRUPT_FILE, "/etc/nmstate/other.yml", false, "Reboot"},
        {MCG_DISRUPT_FILE, "/etc/kubernetes/credential-providers/ecr.yaml", false,
         "Restart kubelet.service"},
        {MCG_DISRUPT_FILE,
         "/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf",
         false, "DaemonReload, Restart kubelet.service"},
        {MCG_DISRUPT_FILE, "/etc/systemd/system/kubelet.service.d/10-other.conf", false, "Reboot"},
        {MCG_DISRUPT_FILE, "/etc/iri-registry/config.yml", false, "Restart iri-registry.service"},
        {MCG_DISRUPT_FILE, "/usr/local/bin/load-registry-image.sh", false,
         "Restart iri-registry.service"},
        {MCG_DISRUPT_FILE, "/etc/pki/ca-trust/source/anchors/iri-root-ca.crt", false,
         "Restart coreos-update-ca-trust.service"},
        {MCG_DISRUPT_UNIT, "iri-registry.service", false,
         "DaemonReload, Restart iri-registry.service"},
        {MCG_DISRUPT_UNIT, "chronyd.service", true, "Drain"},
        {MCG_DISRUPT_UNIT, "other.service", true, "Reboot"},
        {MCG_DISRUPT_UNIT, "other.service", false, "Reboot"},
        {MCG_DISRUPT_SSHKEY, "sshkey", true, "Reload sshd.service"},
        {MCG_DISRUPT_SSHKEY, "sshkey", false, "None"},
        {MCG_DISRUPT_REBOOT, "kernelArguments", true, "Reboot"},
    };
    for (size_t i = 0; i < sizeof(tcases) / sizeof(tcases[0]); i++) {
        mcg_disruption a = {0};
        mcg_disruption_add(&a, tcases[i].with_policy ? &pol : NULL, tcases[i].kind, tcases[i].key);
        mcg_disruption_finish(&a);
        char *got = mcg_disruption_str(&a);
        if (strcmp(got, tcases[i].want))
            fail_msg("case %zu (%s): %s, want %s", i, tcases[i].key, got, tcases[i].want);
        free(got);
        mcg_disruption_free(&a);
    }
    /* merged and finished: a Reboot swallows everything else */
    mcg_disruption a = {0}, b = {0};
    mcg_disruption_add(&a, &pol, MCG_DISRUPT_UNIT, "chronyd.service");
    mcg_disruption_add(&a, &pol, MCG_DISRUPT_SSHKEY, "sshkey");
    char *got = mcg_disruption_str(&a);
    assert_string_equal(got, "Drain, Reload sshd.service");
    free(got);
    json_t *j = mcg_disruption_json(&a);
    assert_int_equal(json_array_size(j), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(j, 1), "service")),
                        "sshd.service");
    json_decref(j);
    mcg_disruption_add(&b, &pol, MCG_DISRUPT_FILE, "/etc/other");
    mcg_disruption_merge(&b, &a);
    mcg_disruption_finish(&b);
    got = mcg_disruption_str(&b);
    assert_string_equal(got, "Reboot");
    free(got);
    mcg_disruption_free(&a);
    mcg_disruption_free(&b);
}

/* Every supported Ignition version parses, each unsupported one is named. */
static void test_ignition_versions(void **state)
{
    (void)state;
    static const char *const ok[] = {"3.0.0", "3.1.0", "3.2.0", "3.3.0",
                                     "3.4.0", "3.5.0", "2.2.0", "2.1.0"};
    static const char *const bad[] = {"1.0.0", "2.3.0", "3.4.1",  "3.6.0",
                                      "4.0.0", "3.4",   "v3.4.0", ""};
    for (size_t i = 0; i < 8 + 8; i++) {
        const char *v = i < 8 ? ok[i] : bad[i - 8];
        char *y = mcg_sprintf(API "kind: MachineConfig\nmetadata:\n  name: x\nspec:\n"
                                  "  config:\n    ignition:\n      version: \"%s\"\n",
                              v);
        mcg_model *m = mcg_model_new();
        mcg_diags d = {0};
        mcg_model_add_file(m, MCF, y, strlen(y), &d);
        if (i < 8) {
            if (d.count)
                fail_msg("version %s refused: %s", v, d.msgs[0]);
            /* 2.x is translated to 3.2.0, as MCO does */
            assert_string_equal(m->mcs[0].config.version, v[0] == '2' ? "3.2.0" : v);
        } else {
            if (!d.count)
                fail_msg("version '%s' accepted", v);
            assert_contains(d.msgs[0], MCF ":8:");
            assert_contains(d.msgs[0], "not supported");
        }
        mcg_diags_free(&d);
        mcg_model_free(m);
        free(y);
    }
}

/* A gzip bomb inside a data URL is stopped at 1.5 MiB with the file's line. */
static void test_gzip_bomb(void **state)
{
    (void)state;
    size_t n = 2u * 1024u * 1024u;
    unsigned char *zeros = mcg_calloc(n, 1);
    unsigned char gz[8192];
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    zs.next_in = zeros;
    zs.avail_in = (uInt)n;
    zs.next_out = gz;
    zs.avail_out = sizeof(gz);
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    size_t gzlen = sizeof(gz) - zs.avail_out;
    deflateEnd(&zs);
    mcg_buf b64 = MCG_BUF_INIT;
    mcg_base64_encode(gz, gzlen, &b64);
    char *y = mcg_sprintf(MC_HEAD("x") FILE_AT("/etc/big") "        contents:\n"
                                                           "          compression: gzip\n"
                                                           "          source: data:;base64,%s\n",
                          b64.ptr);
    mcg_model *m = mcg_model_new();
    mcg_diags d = {0};
    mcg_model_add_file(m, MCF, y, strlen(y), &d);
    assert_int_equal(d.count, 1);
    assert_contains(d.msgs[0], MCF ":16:");
    assert_contains(d.msgs[0], "expands beyond 1572864 bytes");
    assert_int_equal(m->nmcs, 0);
    mcg_diags_free(&d);
    mcg_model_free(m);
    mcg_buf_free(&b64);
    free(y);
    free(zeros);
}

/* A plain file over 1.5 MiB is refused too. */
static void test_file_too_large(void **state)
{
    (void)state;
    size_t n = 1536u * 1024u + 3u; /* decodes to one byte over the limit */
    mcg_buf y = MCG_BUF_INIT;
    mcg_buf_puts(&y, MC_HEAD("x") FILE_AT("/etc/big") "        contents:\n"
                                                      "          source: data:;base64,");
    for (size_t i = 0; i < n / 3; i++)
        mcg_buf_puts(&y, "AAAA");
    mcg_buf_puts(&y, "\n");
    mcg_model *m = mcg_model_new();
    mcg_diags d = {0};
    mcg_model_add_file(m, MCF, y.ptr, y.len, &d);
    assert_int_equal(d.count, 1);
    assert_contains(d.msgs[0], MCF ":15:");
    assert_contains(d.msgs[0], "larger than 1.5 MiB");
    mcg_diags_free(&d);
    mcg_model_free(m);
    mcg_buf_free(&y);
}

/* Every problem in a file is reported, not just the first. */
static void test_every_problem(void **state)
{
    (void)state;
    const char *y = MC_HEAD("x") "    storage:\n"                         /* 11 */
                                 "      files:\n"                         /* 12 */
                                 "      - path: /etc/../a\n"              /* 13 */
                                 "      - path: /etc/b\n"                 /* 14 */
                                 "        mode: 07777\n"                  /* 15 */
                                 "      disks: [{wipeTable: true}]\n"     /* 16 */
                                 "    passwd:\n"                          /* 17 */
                                 "      users:\n"                         /* 18 */
                                 "      - {name: core, shell: /bin/sh}\n" /* 19 */
                                 "  fips: maybe\n";                       /* 20 */
    mcg_model *m = mcg_model_new();
    mcg_diags d = {0};
    mcg_model_add_file(m, MCF, y, strlen(y), &d);
    static const char *const want[] = {MCF ":20:", MCF ":19:", MCF ":16:", MCF ":13:", MCF ":15:"};
    assert_int_equal(d.count, 5);
    for (size_t i = 0; i < 5; i++) {
        bool found = false;
        for (size_t j = 0; j < d.count; j++)
            found = found || strncmp(d.msgs[j], want[i], strlen(want[i])) == 0;
        if (!found)
            fail_msg("no problem reported at %s", want[i]);
    }
    assert_int_equal(m->nmcs, 0);
    mcg_diags_free(&d);
    mcg_model_free(m);
}

/* Rendered specs come back through mcg_ignition_parse_json. */
static void test_parse_json_spec(void **state)
{
    (void)state;
    const char *spec = "{\"config\": {\"ignition\": {\"version\": \"3.4.0\"},"
                       " \"storage\": {\"files\": [{\"path\": \"/etc/a\", \"mode\": 420,"
                       " \"overwrite\": true, \"contents\": {\"source\": \"data:,hi\"}}]}}}";
    mcg_ignition ign;
    mcg_err err = {0};
    assert_int_equal(mcg_ignition_parse_json(&ign, "worker/spec.json", spec, strlen(spec), &err),
                     0);
    assert_int_equal(ign.nstorage, 1);
    assert_int_equal(ign.storage[0].data_len, 2);
    mcg_ignition_free(&ign);

    const char *bad = "{\"config\": {\"ignition\": {\"version\": \"3.4.0\"},"
                      " \"storage\": {\"files\": [{\"path\": \"/etc/../a\"}]}}}";
    assert_int_equal(mcg_ignition_parse_json(&ign, "w/spec.json", bad, strlen(bad), &err),
                     MCG_EINVAL);
    assert_contains(err.msg, "w/spec.json");
    assert_contains(err.msg, "absolute clean path");
    mcg_ignition_free(&ign);

    assert_int_equal(mcg_ignition_parse_json(&ign, "w/spec.json", "{", 1, &err), MCG_EINVAL);
    assert_contains(err.msg, "w/spec.json:1: invalid JSON");
    assert_int_equal(mcg_ignition_parse_json(&ign, "w/spec.json", "{}", 2, &err), MCG_EINVAL);
    assert_contains(err.msg, "no 'config'");
    const char *dup = "{\"config\": {}, \"config\": {}}";
    assert_int_equal(mcg_ignition_parse_json(&ign, "w/spec.json", dup, strlen(dup), &err),
                     MCG_EINVAL);
}

static void test_names(void **state)
{
    (void)state;
    assert_true(mcg_name_is_dns_label("worker"));
    assert_true(mcg_name_is_dns_label("a-1"));
    assert_false(mcg_name_is_dns_label("-a"));
    assert_false(mcg_name_is_dns_label("a-"));
    assert_false(mcg_name_is_dns_label("A"));
    assert_false(mcg_name_is_dns_label("a.b"));
    assert_false(mcg_name_is_dns_label(""));
    assert_true(mcg_name_is_dns_subdomain("99-worker-ssh"));
    assert_true(mcg_name_is_dns_subdomain("a.b.c"));
    assert_false(mcg_name_is_dns_subdomain("a..b"));
    assert_false(mcg_name_is_dns_subdomain(".a"));
    assert_true(mcg_name_is_unit("chronyd.service"));
    assert_true(mcg_name_is_unit("getty@tty1.service"));
    assert_true(mcg_name_is_unit("var-lib.mount"));
    assert_false(mcg_name_is_unit("chronyd"));
    assert_false(mcg_name_is_unit(".service"));
    assert_false(mcg_name_is_unit("a/b.service"));
    assert_false(mcg_name_is_unit("a b.service"));
}

static void test_labels_arg(void **state)
{
    (void)state;
    mcg_labels l = {0};
    mcg_err err = {0};
    assert_int_equal(mcg_labels_parse_arg(&l, "b=2,a=1,node-role.kubernetes.io/infra=", &err), 0);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.items[0].key, "a");
    assert_string_equal(mcg_labels_get(&l, "node-role.kubernetes.io/infra"), "");
    assert_int_equal(mcg_labels_parse_arg(&l, "a-", &err), 0);
    assert_null(mcg_labels_get(&l, "a"));
    assert_int_equal(mcg_labels_parse_arg(&l, "novalue", &err), MCG_EUSAGE);
    assert_int_equal(mcg_labels_parse_arg(&l, "bad key=x", &err), MCG_EUSAGE);
    mcg_labels_free(&l);
}

/* ------------------------------------------------------------ MCO compatibility */

/* Parse one file (and optionally mcgit.yaml) and finish the model. */
static mcg_model *parse_one(const char *yaml, const char *settings, mcg_diags *d)
{
    mcg_model *m = mcg_model_new();
    mcg_model_add_file(m, MCF, yaml, strlen(yaml), d);
    if (settings)
        mcg_model_add_file(m, "mcgit.yaml", settings, strlen(settings), d);
    mcg_model_finish(m, d);
    return m;
}

/*
 * What Ignition only warns about is accepted with a warning at its line;
 * the config keeps what it means. want: the first warning (or NULL: none).
 */
static void test_warnings(void **state)
{
    (void)state;
    static const struct {
        const char *name, *yaml, *want;
    } t[] = {
        {"networkd: {}", MC_HEAD("x") "    networkd: {}\n",
         MCF ":11: unknown field 'spec.config.networkd' (Ignition ignores it)"},
        {"a file's filesystem: root", MC_HEAD("x") FILE_AT("/etc/a") "        filesystem: root\n",
         MCF ":14: unknown field 'storage.files[0].filesystem'"},
        {"a file's unknown key far from every known one",
         MC_HEAD("x") FILE_AT("/etc/a") "        owner: root\n",
         MCF ":14: unknown field 'storage.files[0].owner'"},
        {"a two-letter key (near every two-letter key, so never a near miss)",
         MC_HEAD("x") FILE_AT("/etc/a") "        user: {ix: 0}\n",
         MCF ":14: unknown field 'storage.files[0].user.ix'"},
        {"directory with contents",
         MC_HEAD("x") "    storage:\n      directories:\n"
                      "      - path: /d\n        contents: {}\n",
         MCF ":14: unknown field 'storage.directories[0].contents'"},
        {"link with a mode",
         MC_HEAD("x") "    storage:\n      links:\n      - path: /a\n"
                      "        target: /b\n        mode: 420\n",
         MCF ":15: unknown field 'storage.links[0].mode'"},
        {"unknown key in contents",
         MC_HEAD("x") FILE_AT("/etc/a") "        contents:\n"
                                        "          origin: x\n",
         MCF ":15: unknown field 'storage.files[0].contents.origin'"},
        {"enabled unit without [Install]",
         MC_HEAD("x") "    systemd:\n      units:\n      - name: a.service\n        enabled: true\n"
                      "        contents: \"[Service]\\nExecStart=/bin/true\\n\"\n",
         MCF ":15: unit 'a.service' is enabled but has no [Install] section"},
        {"empty tls (MCO's 99-worker-ssh)",
         API "kind: MachineConfig\nmetadata:\n  name: x\nspec:\n  config:\n    ignition:\n"
             "      version: 3.2.0\n      config: {replace: {verification: {}}}\n"
             "      proxy: {}\n      security: {tls: {}}\n      timeouts: {}\n",
         NULL},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        mcg_diags d = {0};
        mcg_model *m = parse_one(t[i].yaml, NULL, &d);
        if (d.count)
            fail_msg("%s: refused: %s", t[i].name, d.msgs[0]);
        assert_int_equal(m->nmcs, 1);
        if (!t[i].want && m->warnings.count)
            fail_msg("%s: unexpected warning %s", t[i].name, m->warnings.msgs[0]);
        if (t[i].want) {
            if (m->warnings.count != 1)
                fail_msg("%s: %zu warnings, want 1", t[i].name, m->warnings.count);
            assert_contains(m->warnings.msgs[0], t[i].want);
        }
        mcg_diags_free(&d);
        mcg_model_free(m);
        /* a repo may make every warning an error */
        if (t[i].want) {
            m = parse_one(t[i].yaml, "warnings: error\n", &d);
            if (d.count != 1)
                fail_msg("%s: %zu problems with warnings: error", t[i].name, d.count);
            assert_contains(d.msgs[0], t[i].want);
            assert_contains(d.msgs[0], "(mcgit.yaml: warnings: error)");
            mcg_diags_free(&d);
            mcg_model_free(m);
        }
    }
    mcg_diags d = {0};
    mcg_model *m = parse_one(MC_HEAD("x"), "warnings: loud\n", &d);
    assert_int_equal(d.count, 1);
    assert_contains(d.msgs[0], "mcgit.yaml:1: warnings must be 'warn' (the default) or 'error'");
    mcg_diags_free(&d);
    mcg_model_free(m);
}

/*
 * A key within two edits of a key known at that place (and longer than
 * twice the distance) is a misspelling: refused with a did-you-mean, where
 * Ignition would ignore it and leave, say, an empty file on every node.
 */
static void test_near_miss(void **state)
{
    (void)state;
    static const struct {
        const char *name, *yaml, *want; /* want: the one problem */
    } t[] = {
        {"contents", MC_HEAD("x") FILE_AT("/etc/a") "        contnets: {source: 'data:,x'}\n",
         MCF ":14: unknown field \"contnets\" (did you mean \"contents\"?)"},
        {"the key's line, not its block's", /* contnets on 14, its mapping from 15 */
         MC_HEAD("x") FILE_AT("/etc/a") "        contnets:\n          source: 'data:,x'\n",
         MCF ":14: unknown field \"contnets\" (did you mean \"contents\"?)"},
        {"mode", MC_HEAD("x") FILE_AT("/etc/a") "        mdoe: 420\n",
         MCF ":14: unknown field \"mdoe\" (did you mean \"mode\"?)"},
        {"3.x unit with 2.x's enable",
         MC_HEAD("x") "    systemd:\n      units:\n      - name: a.service\n"
                      "        enable: true\n",
         MCF ":14: unknown field \"enable\" (did you mean \"enabled\"?)"},
        {"contents.source",
         MC_HEAD("x") FILE_AT("/etc/a") "        contents:\n"
                                        "          sauce: x\n",
         MCF ":15: unknown field \"sauce\" (did you mean \"source\"?)"},
        {"an owner's name", MC_HEAD("x") FILE_AT("/etc/a") "        user: {nmae: root}\n",
         MCF ":14: unknown field \"nmae\" (did you mean \"name\"?)"},
        {"a section", MC_HEAD("x") "    sytemd: {}\n",
         MCF ":11: unknown field \"sytemd\" (did you mean \"systemd\"?)"},
        {"a drop-in list",
         MC_HEAD("x") "    systemd:\n      units:\n      - name: a.service\n"
                      "        dropin: []\n",
         MCF ":14: unknown field \"dropin\" (did you mean \"dropins\"?)"},
        {"MachineConfig spec (an error anyway)", MC_HEAD("x") "  kernelArgument: [a]\n",
         MCF ":11: unknown field \"kernelArgument\" (did you mean \"kernelArguments\"?)"},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        for (int strict = 0; strict < 2; strict++) {
            mcg_diags d = {0};
            mcg_model *m = parse_one(t[i].yaml, strict ? "warnings: error\n" : NULL, &d);
            if (d.count != 1)
                fail_msg("%s: %zu problems, want 1%s%s", t[i].name, d.count, d.count ? ": " : "",
                         d.count ? d.msgs[0] : "");
            if (strcmp(d.msgs[0], t[i].want))
                fail_msg("%s: got \"%s\", want \"%s\"", t[i].name, d.msgs[0], t[i].want);
            assert_int_equal(m->warnings.count, 0);
            mcg_diags_free(&d);
            mcg_model_free(m);
        }
    }
    /* a rendered spec is read back as it was accepted: a near miss kept in an
     * unreconcilable section (rendered before this rule) is no error there */
    const char *spec = "{\"config\": {\"ignition\": {\"version\": \"3.4.0\"},"
                       " \"kernelArguments\": {\"shouldExsit\": [\"a=1\"]}}}\n";
    mcg_ignition ign;
    mcg_err err = {0};
    if (mcg_ignition_parse_json(&ign, "w/spec.json", spec, strlen(spec), &err) != 0)
        fail_msg("rendered spec refused: %s", err.msg);
    mcg_ignition_free(&ign);
}

static void check_kargs(const mcg_model *m)
{
    const mcg_osspec *o = &m->mcs[0].config.os;
    assert_int_equal(o->kargs.n, 4);
    assert_string_equal(o->kargs.v[0], "nosmt");
    assert_string_equal(o->kargs.v[1], "mitigations=auto,nosmt");
    assert_string_equal(o->kargs.v[2], "systemd.unified_cgroup_hierarchy=1");
    assert_string_equal(o->kargs.v[3], "dyndbg=\"file drivers/a.c +p\"");
}

static void check_fields(const mcg_model *m)
{
    const mcg_osspec *o = &m->mcs[0].config.os;
    assert_false(m->mcs[0].has_config);
    assert_int_equal(o->extensions.n, 2);
    assert_string_equal(o->extensions.v[0], "usbguard");
    assert_string_equal(o->extensions.v[1], "kerberos");
    assert_string_equal(o->kernel_type, "realtime");
    assert_true(o->fips);
    assert_string_equal(o->os_image_url, "quay.io/example/os@sha256:0a1b");
    assert_string_equal(o->ext_image, "quay.io/example/ext:4.16");
}

static void check_default_kernel(const mcg_model *m)
{
    assert_null(m->mcs[0].config.os.kernel_type);
    assert_null(m->mcs[0].config.os.os_image_url); /* "" is unset */
    assert_false(m->mcs[0].config.os.fips);
}

static void check_no_config(const mcg_model *m)
{
    assert_int_equal(m->nmcs, 1);
    assert_false(m->mcs[0].has_config);
}

/* The fields beside spec.config, as MCO's ValidateMachineConfig checks them. */
static void test_mc_fields(void **state)
{
    (void)state;
#define NOCFG API "kind: MachineConfig\nmetadata:\n  name: x\nspec:\n"
    static const struct {
        const char *name, *yaml, *err; /* err NULL: accepted */
        void (*check)(const mcg_model *m);
    } t[] = {
        {"kernelArguments split as the kernel does",
         MC_HEAD("x") "  kernelArguments:\n  - nosmt\n  - mitigations=auto,nosmt\n"
                      "  - ' systemd.unified_cgroup_hierarchy=1 dyndbg=\"file drivers/a.c +p\"'\n",
         NULL, check_kargs},
        {"every field, no spec.config",
         NOCFG "  extensions: [usbguard, kerberos]\n  kernelType: realtime\n  fips: true\n"
               "  osImageURL: quay.io/example/os@sha256:0a1b\n"
               "  baseOSExtensionsContainerImage: quay.io/example/ext:4.16\n",
         NULL, check_fields},
        {"kernelType default, empty osImageURL",
         MC_HEAD("x") "  kernelType: default\n  osImageURL: \"\"\n  fips: false\n", NULL,
         check_default_kernel},
        {"no spec.config (only kernelType)", NOCFG "  kernelType: 64k-pages\n", NULL,
         check_no_config},
        {"no spec", API "kind: MachineConfig\nmetadata:\n  name: x\n", NULL, check_no_config},
        {"empty spec", NOCFG, NULL, check_no_config},
        {"kernelType invalid", NOCFG "  kernelType: lowlatency\n",
         MCF ":6: kernelType 'lowlatency' is invalid (default, realtime or 64k-pages)", NULL},
        {"extension not on MCO's list", NOCFG "  extensions: [usbguard, vim]\n",
         MCF ":6: extension 'vim' is not supported", NULL},
        {"kernel argument with an open quote", NOCFG "  kernelArguments: ['a=\"b c']\n",
         MCF ":6: kernel argument 'a=\"b c' has an unterminated quote", NULL},
        {"kernelArguments not a list", NOCFG "  kernelArguments: nosmt\n",
         MCF ":6: field 'spec.kernelArguments' must be a list", NULL},
        {"fips not a boolean", NOCFG "  fips: yes please\n",
         MCF ":6: field 'spec.fips' must be true or false", NULL},
        {"osImageURL with a blank", NOCFG "  osImageURL: \"quay.io/a b\"\n",
         MCF ":6: field 'spec.osImageURL' is not an image reference", NULL},
        {"kernel argument on two lines", NOCFG "  kernelArguments: [\"a\\nb\"]\n",
         MCF ":6: spec.kernelArguments[0] must be a one-line string", NULL},
        /* what GRUB's script parser would interpret in grub.cfg */
        {"kernel argument with ;", NOCFG "  kernelArguments: [\"quiet;reboot\"]\n",
         MCF ":6: kernel argument 'quiet;reboot' holds ';', which GRUB", NULL},
        {"kernel argument with a single quote", NOCFG "  kernelArguments: [\"x='\"]\n",
         MCF ":6: kernel argument 'x='' holds ''', which GRUB", NULL},
        {"kernel argument with $", NOCFG "  kernelArguments: [\"a=$b\"]\n",
         MCF ":6: kernel argument 'a=$b' holds '$', which GRUB", NULL},
        {"kernel argument with |", NOCFG "  kernelArguments: [\"a|b\"]\n",
         MCF ":6: kernel argument 'a|b' holds '|', which GRUB", NULL},
        {"kernel argument with &", NOCFG "  kernelArguments: [\"a&b\"]\n",
         MCF ":6: kernel argument 'a&b' holds '&', which GRUB", NULL},
        {"kernel argument with {", NOCFG "  kernelArguments: [\"a{b}\"]\n",
         MCF ":6: kernel argument 'a{b}' holds '{', which GRUB", NULL},
        {"kernel argument with <", NOCFG "  kernelArguments: [\"a<b\"]\n",
         MCF ":6: kernel argument 'a<b' holds '<', which GRUB", NULL},
        {"kernel argument starting with #", NOCFG "  kernelArguments: [\"quiet #x\"]\n",
         MCF ":6: kernel argument '#x' holds '#', which GRUB", NULL},
        {"osImageURL starting with -", NOCFG "  osImageURL: \"--help\"\n",
         MCF ":6: field 'spec.osImageURL' is not an image reference: '--help' starts with '-'",
         NULL},
        {"extensions image starting with -", NOCFG "  baseOSExtensionsContainerImage: \"-x\"\n",
         MCF ":6: field 'spec.baseOSExtensionsContainerImage' is not an image reference", NULL},
    };
#undef NOCFG
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        mcg_diags d = {0};
        mcg_model *m = parse_one(t[i].yaml, NULL, &d);
        if (!t[i].err && d.count)
            fail_msg("%s: refused: %s", t[i].name, d.msgs[0]);
        if (t[i].err) {
            if (!d.count)
                fail_msg("%s: accepted", t[i].name);
            if (strncmp(d.msgs[0], t[i].err, strlen(t[i].err)) != 0)
                fail_msg("%s: got \"%s\", want \"%s\"", t[i].name, d.msgs[0], t[i].err);
            assert_int_equal(m->nmcs, 0);
        }
        if (t[i].check)
            t[i].check(m);
        mcg_diags_free(&d);
        mcg_model_free(m);
    }
}

/*
 * What MCO calls unreconcilable is accepted and kept verbatim (the agent
 * reports a change to it); core's password hash is managed.
 */
static void test_unreconcilable_kept(void **state)
{
    (void)state;
    static const struct {
        const char *name, *body, *key, *err;
    } t[] = {
        {"disks", "    storage:\n      disks:\n      - device: /dev/sdb\n        wipeTable: true\n",
         "disks", NULL},
        {"raid", "    storage:\n      raid:\n      - name: md0\n        level: raid1\n", "raid",
         NULL},
        {"filesystems",
         "    storage:\n      filesystems:\n      - device: /dev/sdb1\n"
         "        format: xfs\n        path: /var\n",
         "filesystems", NULL},
        {"luks", "    storage:\n      luks:\n      - name: data\n        device: /dev/sdc\n",
         "luks", NULL},
        {"groups", "    passwd:\n      groups:\n      - name: wheel\n", "groups", NULL},
        {"a user other than core",
         "    passwd:\n      users:\n      - name: admin\n"
         "        shell: /bin/bash\n",
         "users", NULL},
        {"Ignition kernelArguments", "    kernelArguments:\n      shouldExist: [nosmt]\n",
         "kernelArguments", NULL},
        {"a disk without a device", "    storage:\n      disks:\n      - wipeTable: true\n", NULL,
         MCF ":13: field 'storage.disks[0].device' is required"},
        {"the same disk twice",
         "    storage:\n      disks:\n      - device: /dev/sdb\n"
         "      - device: /dev/sdb\n",
         NULL, MCF ":14: storage.disks '/dev/sdb' is given twice in this config"},
        {"core with a shell",
         "    passwd:\n      users:\n      - name: core\n        shell: /bin/sh\n", NULL,
         MCF ":14: field 'passwd.users[0].shell' is not supported"},
        {"a password hash with a colon",
         "    passwd:\n      users:\n      - name: core\n        passwordHash: \"a:b\"\n", NULL,
         MCF ":14: field 'passwd.users[0].passwordHash' must not contain ':'"},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        char *y = mcg_sprintf(MC_HEAD("x") "%s", t[i].body);
        mcg_diags d = {0};
        mcg_model *m = parse_one(y, NULL, &d);
        if (t[i].err) {
            if (!d.count)
                fail_msg("%s: accepted", t[i].name);
            if (strncmp(d.msgs[0], t[i].err, strlen(t[i].err)) != 0)
                fail_msg("%s: got \"%s\", want \"%s\"", t[i].name, d.msgs[0], t[i].err);
        } else {
            if (d.count)
                fail_msg("%s: refused: %s", t[i].name, d.msgs[0]);
            json_t *extra = m->mcs[0].config.extra;
            if (!extra || !json_object_get(extra, t[i].key))
                fail_msg("%s: not kept", t[i].name);
        }
        mcg_diags_free(&d);
        mcg_model_free(m);
        free(y);
    }
    const char *y = MC_HEAD("x") "    passwd:\n      users:\n      - name: core\n"
                                 "        passwordHash: $6$salt$hash\n"
                                 "        sshAuthorizedKeys: [ssh-ed25519 AAAA k]\n";
    mcg_diags d = {0};
    mcg_model *m = parse_one(y, NULL, &d);
    assert_int_equal(d.count, 0);
    assert_string_equal(m->mcs[0].config.password_hash, "$6$salt$hash");
    assert_int_equal(m->mcs[0].config.ssh_keys.n, 1);
    assert_null(m->mcs[0].config.extra);
    mcg_diags_free(&d);
    mcg_model_free(m);
}

/* Unit and drop-in contents as systemd reads them. */
static void test_unit_contents(void **state)
{
    (void)state;
    static const struct {
        const char *name, *contents, *err; /* err: at line 15, contains this */
    } t[] = {
        {"a plain unit", "[Unit]\\nDescription=a\\n\\n[Service]\\nExecStart=/bin/true\\n", NULL},
        {"comments and blanks", "# c\\n; d\\n\\n  [Unit]  \\n  Description = a  \\n", NULL},
        {"a continued line", "[Service]\\nExecStart=/bin/echo \\\\\\n  two\\n", NULL},
        {"empty contents", "", NULL},
        {"CRLF line ends", "[Unit]\\r\\nDescription=a\\r\\n", NULL},
        {"unclosed section header", "[Service\\nExecStart=/bin/true\\n",
         "systemd.units[0].contents line 1: invalid section header '[Service'"},
        {"garbage", "garbage",
         "systemd.units[0].contents line 1: 'garbage' is not a Key=Value assignment"},
        {"assignment before any section", "ExecStart=/bin/true\\n",
         "systemd.units[0].contents line 1: assignment outside of any [Section]"},
        {"assignment without a key", "[Unit]\\n=a\\n",
         "systemd.units[0].contents line 2: assignment without a key"},
        {"text after the header", "[Unit] x\\nDescription=a\\n",
         "systemd.units[0].contents line 1: invalid section header"},
        {"a continuation counted once", "[Unit]\\nA=b \\\\\\nc\\nbad\\n",
         "systemd.units[0].contents line 4: 'bad' is not a Key=Value"},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        for (int dropin = 0; dropin < 2; dropin++) {
            char *y = dropin ? mcg_sprintf(MC_HEAD("x") "    systemd:\n      units:\n"
                                                        "      - name: a.service\n"
                                                        "        dropins:\n"
                                                        "        - name: 10-a.conf\n"
                                                        "          contents: \"%s\"\n",
                                           t[i].contents)
                             : mcg_sprintf(MC_HEAD("x") "    systemd:\n      units:\n"
                                                        "      - name: a.service\n"
                                                        "        mask: false\n"
                                                        "        contents: \"%s\"\n",
                                           t[i].contents);
            mcg_diags d = {0};
            mcg_model *m = parse_one(y, NULL, &d);
            if (!t[i].err && d.count)
                fail_msg("%s: refused: %s", t[i].name, d.msgs[0]);
            if (t[i].err) {
                if (!d.count)
                    fail_msg("%s (%s): accepted", t[i].name, dropin ? "drop-in" : "unit");
                assert_contains(d.msgs[0], dropin ? MCF ":16:" : MCF ":15:");
                const char *w = strstr(t[i].err, " line ");
                assert_contains(d.msgs[0], dropin ? w : t[i].err);
                if (dropin)
                    assert_contains(d.msgs[0], "systemd.units[0].dropins[0].contents");
            }
            mcg_diags_free(&d);
            mcg_model_free(m);
            free(y);
        }
    }
}

/* ---- Ignition 2.2 -> 3.x, one case per translated field */

#define V22                                                                                        \
    API "kind: MachineConfig\nmetadata:\n  name: x\nspec:\n  config:\n    ignition:\n"             \
        "      version: 2.2.0\n" /* lines 1-8; the body starts on line 9 */

static void v22_file(const mcg_model *m)
{
    const mcg_ignition *g = &m->mcs[0].config;
    assert_string_equal(g->version, "3.2.0");
    assert_int_equal(g->nstorage, 1);
    const mcg_storage *s = &g->storage[0];
    assert_string_equal(s->path, "/etc/chrony.conf");
    assert_int_equal(s->kind, MCG_NODE_FILE);
    assert_int_equal(s->mode, 0644);
    assert_int_equal(s->overwrite, MCG_TRUE); /* unset in 2.x: true */
    assert_int_equal(s->data_len, 6);
    assert_memory_equal(s->data, "server", 6);
    assert_null(s->compression); /* "" is none */
    assert_int_equal(s->user.has_id, true);
    assert_string_equal(s->group.name, "chrony");
    assert_null(g->extra);
}

static void v22_overwrite_false(const mcg_model *m)
{
    assert_int_equal(m->mcs[0].config.storage[0].overwrite, MCG_FALSE);
    assert_null(m->mcs[0].config.storage[0].source); /* an empty source: no contents */
}

static void v22_dir_link(const mcg_model *m)
{
    const mcg_ignition *g = &m->mcs[0].config;
    assert_int_equal(g->nstorage, 2);
    assert_int_equal(g->storage[0].kind, MCG_NODE_DIR);
    assert_int_equal(g->storage[0].mode, 0750);
    assert_int_equal(g->storage[1].kind, MCG_NODE_LINK);
    assert_string_equal(g->storage[1].target, "/etc/b");
    assert_int_equal(g->storage[1].hard, MCG_UNSET); /* hard: false -> unset (BoolP) */
}

static void v22_units(const mcg_model *m)
{
    const mcg_ignition *g = &m->mcs[0].config;
    assert_int_equal(g->nunits, 3);
    assert_string_equal(g->units[0].name, "a.service");
    assert_int_equal(g->units[0].enabled, MCG_TRUE); /* enable: true (deprecated) */
    assert_int_equal(g->units[1].enabled, MCG_FALSE);
    assert_int_equal(g->units[1].mask, MCG_UNSET); /* mask: false -> unset */
    assert_int_equal(g->units[2].mask, MCG_TRUE);
    assert_int_equal(g->units[1].ndropins, 1);
    assert_string_equal(g->units[1].dropins[0].name, "10-x.conf");
}

static void v22_dup_files(const mcg_model *m)
{
    const mcg_ignition *g = &m->mcs[0].config;
    assert_int_equal(g->nstorage, 2);
    assert_string_equal(g->storage[0].path, "/etc/b");
    assert_string_equal(g->storage[1].path, "/etc/a");
    assert_memory_equal(g->storage[1].data, "second", 6); /* the last one wins */
}

static void v22_dup_units(const mcg_model *m)
{
    const mcg_ignition *g = &m->mcs[0].config;
    assert_int_equal(g->nunits, 1);
    assert_int_equal(g->units[0].mask, MCG_TRUE);
    assert_int_equal(g->units[0].ndropins, 2); /* its own, then the earlier one's */
    assert_string_equal(g->units[0].dropins[0].name, "20-b.conf");
    assert_string_equal(g->units[0].dropins[1].name, "10-a.conf");
}

static void v22_users(const mcg_model *m)
{
    const mcg_ignition *g = &m->mcs[0].config;
    assert_int_equal(g->ssh_keys.n, 2);
    assert_string_equal(g->ssh_keys.v[0], "ssh-ed25519 B");
    assert_string_equal(g->ssh_keys.v[1], "ssh-ed25519 A");
    assert_string_equal(g->password_hash, "$6$x$y");
}

static void v22_disks(const mcg_model *m)
{
    assert_non_null(json_object_get(m->mcs[0].config.extra, "disks"));
    assert_null(json_object_get(m->mcs[0].config.extra, "filesystems")); /* root: dropped */
}

static void v22_empty(const mcg_model *m)
{
    assert_int_equal(m->mcs[0].config.nstorage, 0);
    assert_int_equal(m->warnings.count, 0);
}

static void test_ignition_v2(void **state)
{
    (void)state;
    static const struct {
        const char *name, *body, *err; /* err NULL: check */
        void (*check)(const mcg_model *m);
    } t[] = {
        {"file: filesystem, mode, contents, owner",
         "    storage:\n      files:\n      - filesystem: root\n        path: /etc/chrony.conf\n"
         "        mode: 420\n        user: {id: 0}\n        group: {name: chrony}\n"
         "        contents: {source: 'data:,server', compression: ''}\n",
         NULL, v22_file},
        {"file: overwrite false kept, empty source",
         "    storage:\n      files:\n      - {filesystem: root, path: /etc/a, overwrite: false,"
         " contents: {source: ''}}\n",
         NULL, v22_overwrite_false},
        {"directory and link",
         "    storage:\n      directories:\n      - {filesystem: root, path: /etc/d, mode: 488}\n"
         "      links:\n      - {filesystem: root, path: /etc/l, target: /etc/b}\n",
         NULL, v22_dir_link},
        {"units: enable, enabled false, mask, drop-ins",
         "    systemd:\n      units:\n      - {name: a.service, enable: true}\n"
         "      - name: b.service\n        enabled: false\n        mask: false\n"
         "        dropins: [{name: 10-x.conf, contents: \"[Service]\\nNice=1\\n\"}]\n"
         "      - {name: c.service, mask: true}\n",
         NULL, v22_units},
        {"duplicate files: the last wins",
         "    storage:\n      files:\n      - {filesystem: root, path: /etc/a, contents: {source: "
         "'data:,first'}}\n      - {filesystem: root, path: /etc/b}\n"
         "      - {filesystem: root, path: /etc/a, contents: {source: 'data:,second'}}\n",
         NULL, v22_dup_files},
        {"duplicate units: the last wins, drop-ins joined",
         "    systemd:\n      units:\n      - name: a.service\n        dropins: [{name: "
         "10-a.conf}]\n"
         "      - name: a.service\n        mask: true\n        dropins: [{name: 20-b.conf}]\n",
         NULL, v22_dup_units},
        {"users: core's keys united, password hash",
         "    passwd:\n      users:\n      - {name: core, sshAuthorizedKeys: [ssh-ed25519 A]}\n"
         "      - {name: core, passwordHash: $6$x$y, sshAuthorizedKeys: [ssh-ed25519 B]}\n",
         NULL, v22_users},
        {"disks carried over, the root filesystem dropped",
         "    storage:\n      disks:\n      - device: /dev/sdb\n"
         "      filesystems:\n      - name: root\n        path: /sysroot\n",
         NULL, v22_disks},
        {"networkd: {} is fine", "    networkd: {}\n", NULL, v22_empty},
        {"networkd units", "    networkd:\n      units:\n      - {name: a.network}\n",
         MCF ":10: networkd units cannot be translated to Ignition 3", NULL},
        {"a filesystem other than root",
         "    storage:\n      files:\n      - {filesystem: var, path: /lib/a}\n",
         MCF ":11: field 'storage.files[0].filesystem': filesystem 'var' cannot be translated",
         NULL},
        {"a file without filesystem", "    storage:\n      files:\n      - {path: /etc/a}\n",
         MCF ":11: field 'storage.files[0].filesystem' is required in Ignition 2.x", NULL},
        {"a named filesystem", "    storage:\n      filesystems:\n      - name: data\n",
         MCF ":11: storage.filesystems[0]: filesystem 'data' cannot be translated", NULL},
        {"append",
         "    storage:\n      files:\n      - {filesystem: root, path: /etc/a, append: true,"
         " contents: {source: 'data:,x'}}\n",
         MCF ":11: field 'append' is not supported: files are written whole", NULL},
        {"a user other than core", "    passwd:\n      users:\n      - name: admin\n",
         MCF ":11: user 'admin' in an Ignition 2.x config: only user 'core' is supported", NULL},
        {"a bad path after translation",
         "    storage:\n      files:\n      - {filesystem: root, path: etc/a}\n",
         MCF ":11: field 'storage.files[0].path' must be an absolute clean path", NULL},
        {"a misspelt key is refused", "    storge: {}\n",
         MCF ":9: unknown field \"storge\" (did you mean \"storage\"?)", NULL},
        {"an unknown key is still reported", "    bogus: {}\n", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        char *y = mcg_sprintf(V22 "%s", t[i].body);
        mcg_diags d = {0};
        mcg_model *m = parse_one(y, NULL, &d);
        if (t[i].err) {
            if (!d.count)
                fail_msg("%s: accepted", t[i].name);
            if (strncmp(d.msgs[0], t[i].err, strlen(t[i].err)) != 0)
                fail_msg("%s: got \"%s\", want \"%s\"", t[i].name, d.msgs[0], t[i].err);
        } else {
            if (d.count)
                fail_msg("%s: refused: %s", t[i].name, d.msgs[0]);
            if (t[i].check)
                t[i].check(m);
            else {
                assert_int_equal(m->warnings.count, 1);
                assert_contains(m->warnings.msgs[0], MCF ":9: unknown field 'spec.config.bogus'");
            }
        }
        mcg_diags_free(&d);
        mcg_model_free(m);
        free(y);
    }
    /* the same config as embedded JSON */
    const char *j =
        API "kind: MachineConfig\nmetadata:\n  name: x\nspec:\n"
            "  config: '{\"ignition\": {\"version\": \"2.2.0\"}, \"storage\": {\"files\":"
            " [{\"filesystem\": \"root\", \"path\": \"/etc/a\", \"mode\": 420}]}}'\n";
    mcg_diags d = {0};
    mcg_model *m = parse_one(j, NULL, &d);
    assert_int_equal(d.count, 0);
    assert_int_equal(m->mcs[0].config.nstorage, 1);
    assert_int_equal(m->mcs[0].config.storage[0].overwrite, MCG_TRUE);
    mcg_diags_free(&d);
    mcg_model_free(m);
}

/* One MC whose unit has n drop-ins (plus a repeat of drop-in 17 when dup). */
static void dropins_yaml(mcg_buf *y, size_t n, bool dup)
{
    mcg_buf_free(y);
    mcg_buf_puts(y, MC_HEAD("x") "    systemd:\n      units:\n      - name: a.service\n"
                                 "        dropins:\n");
    for (size_t i = 0; i < n; i++)
        mcg_buf_printf(y, "        - {name: %zu.conf}\n", i);
    if (dup)
        mcg_buf_puts(y, "        - {name: 17.conf}\n");
}

/* Seconds to parse n drop-ins (all distinct, all kept). */
static double parse_dropins(size_t n)
{
    mcg_buf y = MCG_BUF_INIT;
    dropins_yaml(&y, n, false);
    mcg_diags d = {0};
    mcg_model *m = mcg_model_new();
    clock_t t0 = clock();
    mcg_model_add_file(m, MCF, y.ptr, y.len, &d);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    assert_int_equal(d.count, 0);
    assert_int_equal(m->mcs[0].config.units[0].ndropins, n);
    mcg_model_free(m);
    mcg_diags_free(&d);
    mcg_buf_free(&y);
    return secs;
}

/*
 * Issue 17: 80,000 drop-ins of one unit took 9.6 s (a duplicate check that
 * compared each with all before it). Four times the input must cost about
 * four times the time, not sixteen: a quadratic check fails here on any
 * machine, a linear one passes under valgrind too (and anything under half
 * a second passes outright).
 */
static void test_many_dropins(void **state)
{
    (void)state;
    double small = parse_dropins(20000), big = parse_dropins(80000);
    if (big > 0.5 && big > 10 * (small > 0.001 ? small : 0.001))
        fail_msg("drop-in checks are not linear: 20,000 in %.3f s, 80,000 in %.3f s", small, big);
    /* a duplicate among them is still found, at its line */
    mcg_buf y = MCG_BUF_INIT;
    dropins_yaml(&y, 80000, true);
    mcg_diags d = {0};
    mcg_model *m = mcg_model_new();
    mcg_model_add_file(m, MCF, y.ptr, y.len, &d);
    assert_int_equal(d.count, 1);
    assert_contains(d.msgs[0], MCF ":80015: drop-in '17.conf' is given twice for unit 'a.service'");
    mcg_model_free(m);
    mcg_diags_free(&d);
    mcg_buf_free(&y);
}

/*
 * Label sets: built with mcg_labels_set one pair at a time or with
 * mcg_labels_add + mcg_labels_finish, a set is sorted by key with unique
 * keys and the later value of a repeated key wins. Table cases, then the
 * two ways checked against each other on a large random sequence.
 */
static void test_labels_build(void **state)
{
    (void)state;
    static const struct {
        const char *pairs[12]; /* key, value, key, value, ..., NULL */
        const char *want;      /* "k=v,k=v" in order */
    } lcases[] = {
        {{NULL}, ""},
        {{"a", "1", NULL}, "a=1"},
        {{"b", "2", "a", "1", NULL}, "a=1,b=2"},
        {{"a", "1", "a", "2", NULL}, "a=2"},
        {{"a", "1", "b", "x", "a", "3", "b", "", NULL}, "a=3,b="},
        {{"c", "3", "b", "2", "a", "1", "b", "9", "c", "8", NULL}, "a=1,b=9,c=8"},
        {{"x/y", "1", "x", "2", "x-y", "3", NULL}, "x=2,x-y=3,x/y=1"},
    };
    for (size_t c = 0; c < sizeof(lcases) / sizeof(lcases[0]); c++) {
        for (int way = 0; way < 2; way++) {
            mcg_labels l = {0};
            for (size_t i = 0; lcases[c].pairs[i]; i += 2) {
                if (way == 0)
                    mcg_labels_set(&l, lcases[c].pairs[i], lcases[c].pairs[i + 1]);
                else
                    mcg_labels_add(&l, lcases[c].pairs[i], lcases[c].pairs[i + 1]);
            }
            if (way == 1)
                mcg_labels_finish(&l);
            mcg_buf b = MCG_BUF_INIT;
            for (size_t i = 0; i < l.n; i++)
                mcg_buf_printf(&b, "%s%s=%s", i ? "," : "", l.items[i].key, l.items[i].value);
            if (strcmp(b.ptr ? b.ptr : "", lcases[c].want) != 0)
                fail_msg("case %zu way %d: got '%s', want '%s'", c, way, b.ptr ? b.ptr : "",
                         lcases[c].want);
            mcg_buf_free(&b);
            mcg_labels_free(&l);
        }
    }

    /* 5000 pairs over 700 keys in a scrambled order: set, add+finish agree,
     * every key holds the last value given, and removal finds each key */
    enum { PAIRS = 5000, KEYS = 700 };
    mcg_labels a = {0}, b = {0};
    char last[KEYS][16];
    memset(last, 0, sizeof(last));
    uint32_t x = 12345;
    for (int i = 0; i < PAIRS; i++) {
        x = x * 1103515245u + 12345u;
        int k = (int)((x >> 8) % KEYS);
        char key[32], val[16];
        snprintf(key, sizeof(key), "example.com/k%04d", k);
        snprintf(val, sizeof(val), "v%d", i);
        mcg_labels_set(&a, key, val);
        mcg_labels_add(&b, key, val);
        memcpy(last[k], val, sizeof(val));
    }
    mcg_labels_finish(&b);
    assert_int_equal(a.n, b.n);
    for (size_t i = 0; i < a.n; i++) {
        assert_string_equal(a.items[i].key, b.items[i].key);
        assert_string_equal(a.items[i].value, b.items[i].value);
        if (i)
            assert_true(strcmp(a.items[i - 1].key, a.items[i].key) < 0);
        int k = atoi(a.items[i].key + strlen("example.com/k"));
        assert_string_equal(a.items[i].value, last[k]);
    }
    size_t n = a.n;
    for (int k = 0; k < KEYS; k++) {
        char key[32];
        snprintf(key, sizeof(key), "example.com/k%04d", k);
        assert_int_equal(mcg_labels_remove(&a, key), last[k][0] != '\0');
        assert_null(mcg_labels_get(&a, key));
        if (last[k][0])
            n--;
        assert_int_equal(a.n, n);
    }
    assert_int_equal(a.n, 0);
    mcg_labels_free(&a);
    mcg_labels_free(&b);
}

/* mcg_yaml_emit: what it writes reads back (mcg_yaml_to_json) as the same value. */
static void emit_roundtrip(const json_t *v)
{
    mcg_buf b = MCG_BUF_INIT;
    mcg_yaml_emit(&b, v);
    mcg_diags d = {0};
    json_t *back = NULL;
    int rc = mcg_yaml_to_json(&back, "emit.yaml", b.ptr, b.len, 0, &d);
    if (rc || !json_equal(back, v)) {
        char *want = json_dumps(v, JSON_ENCODE_ANY);
        fail_msg("emitted:\n%s\nread back %s (%s), want %s", b.ptr,
                 back ? json_dumps(back, JSON_ENCODE_ANY) : "nothing", d.count ? d.msgs[0] : "",
                 want);
    }
    json_decref(back);
    mcg_diags_free(&d);
    mcg_buf_free(&b);
}

static void test_yaml_emit(void **state)
{
    (void)state;
    static const char *const strs[] = {"",
                                       "true",
                                       "yes",
                                       "No",
                                       "null",
                                       "~",
                                       "1",
                                       "0644",
                                       "0x1f",
                                       "1e5",
                                       "1e-5",
                                       "3.2.0",
                                       "98-worker-generated-kubelet",
                                       "0x1p3",
                                       "1.5g",
                                       "1_000",
                                       "12:30",
                                       "-1",
                                       "+1",
                                       ".5",
                                       ".inf",
                                       ".nan",
                                       "on",
                                       "Off",
                                       "y",
                                       "N",
                                       "a: b",
                                       "a #b",
                                       "a#b",
                                       "- x",
                                       "key:",
                                       "/etc/x",
                                       "ssh-ed25519 AAAA x@y",
                                       "line1\nline2\n",
                                       "line1\n\nline3",
                                       "x\n",
                                       "x\n\n",
                                       "  lead",
                                       "trail ",
                                       "tab\there",
                                       "\tx\ny",
                                       "a\n\tb\n",
                                       "a \nb",
                                       "\xc3\xbcmlaut\nzwei",
                                       ("a\xe2\x80\xa8"
                                        "b\nc"),
                                       "'quote",
                                       "\"dq",
                                       "@at",
                                       "`tick",
                                       "%pct",
                                       "!tag",
                                       "&anchor",
                                       "*alias",
                                       "|pipe",
                                       ">gt",
                                       "[x",
                                       "{x",
                                       "?q",
                                       ",c",
                                       "#c",
                                       "a  b",
                                       "e5",
                                       "0o17",
                                       "08",
                                       "data:,a%20b",
                                       "a\r\nb\n",
                                       "\n",
                                       "\nx",
                                       "0x1.8p3",
                                       "1p5",
                                       "0o7x",
                                       "1.0e+5"};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
        json_t *v =
            json_pack("{s:s, s:[s], s:[{s:s}]}", "k", strs[i], "l", strs[i], "m", "n", strs[i]);
        json_object_set_new(v, strs[i], json_string("as a key"));
        emit_roundtrip(v);
        json_decref(v);
    }
    json_t *v = json_loads("{\"a\": [{\"b\": []}, [1, [2, {}]], {}, \"x\\ny\", null, true, 1.5,"
                           " -7], \"e\": {}, \"n\": null, \"deep\": {\"x\": {\"y\": [[[]]]}}}",
                           0, NULL);
    assert_non_null(v);
    emit_roundtrip(v);
    json_decref(v);
    /* Random printable text with newlines and tabs: every one reads back. */
    uint32_t seed = 12345;
    for (int n = 0; n < 3000; n++) {
        char buf[24];
        size_t len = (size_t)(n % 23);
        for (size_t i = 0; i < len; i++) {
            seed = seed * 1103515245u + 12345u;
            unsigned r = (seed >> 16) % 100;
            buf[i] = r < 8 ? '\n' : r < 12 ? '\t' : r < 24 ? ' ' : (char)(33 + (seed >> 8) % 94);
        }
        buf[len] = '\0';
        json_t *o = json_pack("{s:s, s:[s]}", "k", buf, "l", buf);
        emit_roundtrip(o);
        json_decref(o);
    }
}

int main(void)
{
    size_t ncases = sizeof(cases) / sizeof(cases[0]);
    static const struct CMUnitTest extra[] = {
        cmocka_unit_test(test_ignition_versions),
        cmocka_unit_test(test_gzip_bomb),
        cmocka_unit_test(test_file_too_large),
        cmocka_unit_test(test_every_problem),
        cmocka_unit_test(test_parse_json_spec),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_labels_arg),
        cmocka_unit_test(test_warnings),
        cmocka_unit_test(test_mc_fields),
        cmocka_unit_test(test_unreconcilable_kept),
        cmocka_unit_test(test_unit_contents),
        cmocka_unit_test(test_ignition_v2),
        cmocka_unit_test(test_many_dropins),
        cmocka_unit_test(test_labels_build),
        cmocka_unit_test(test_one_problem_per_mistake),
        cmocka_unit_test(test_disruption_rules),
        cmocka_unit_test(test_near_miss),
        cmocka_unit_test(test_yaml_emit),
    };
    size_t nextra = sizeof(extra) / sizeof(extra[0]);
    struct CMUnitTest *tests = mcg_calloc(ncases + nextra, sizeof(*tests));
    for (size_t i = 0; i < ncases; i++) {
        tests[i].name = cases[i].name;
        tests[i].test_func = run_case;
        tests[i].initial_state = (void *)&cases[i];
    }
    memcpy(tests + ncases, extra, sizeof(extra));
    int rc = _cmocka_run_group_tests("model", tests, ncases + nextra, NULL, NULL);
    free(tests);
    return rc;
}
