/*
 * demo.c — `mcgit demo`: the whole loop on one machine, narrated.
 *
 * Creates a config repo (template + a custom pool `infra`), an ed25519
 * signing key, a local cluster of 3 master, 3 worker and 1 infra node; starts
 * the controller and one agent process per node (the mcgit binary), and
 * walks through: first rollout, a config change rolling across the workers
 * at most maxUnavailable at a time, drift reported (and re-applied with the
 * force file, and the reboot it brings, as MCO's daemon does), an
 * unsigned commit refused, and a rollback to the first render (a signed
 * source commit). The story is printed on standard output as it happens;
 * what ends it early is one error, returned.
 */
#include "demo/demo.h"
#include "fsio/fsio.h"
#include "osenv/osenv.h"
#include "gitops/gitops.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct demo {
    const mcg_demo_opts *o;
    mcg_err *err; /* the one error that ends the demo */
    char dir[PATH_MAX];
    char repo[PATH_MAX + 16];
    char trust[PATH_MAX + 16];
    char cluster[PATH_MAX + 16];
    char self[PATH_MAX];
    mcg_sshkey key;
    pid_t pids[16];
    size_t npids;
    mcg_cluster *cl;
    int64_t clock; /* commit times: fixed start, one minute per commit */
    bool keep;     /* --keep: the processes outlive the demo */
} demo;

static const char *const nodes[][2] = {
    {"master-0", "node-role.kubernetes.io/master="},
    {"master-1", "node-role.kubernetes.io/master="},
    {"master-2", "node-role.kubernetes.io/master="},
    {"worker-0", "node-role.kubernetes.io/worker="},
    {"worker-1", "node-role.kubernetes.io/worker="},
    {"worker-2", "node-role.kubernetes.io/worker="},
    {"infra-0", "node-role.kubernetes.io/worker=,node-role.kubernetes.io/infra="},
};
#define NNODES (sizeof(nodes) / sizeof(nodes[0]))

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("\n==> ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

/* The first time a word appears: what it means, in one line. */
static void term(const char *word, const char *meaning)
{
    printf("    (%s: %s)\n", word, meaning);
}

static int write_text(demo *d, const char *path, const char *text)
{
    return mcg_write_file_atomic(path, text, strlen(text), 0644, d->err);
}

static pid_t spawn(demo *d, const char *log, char *const argv[])
{
    char *path = mcg_sprintf("%s/logs/%s.log", d->dir, log);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* Unless kept, a demo that dies (Ctrl-C, its output closed, a kill)
         * takes its controller and agents with it. */
        if (!d->keep && (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent))
            _exit(1);
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(d->self, argv);
        _exit(127);
    }
    free(path);
    if (pid > 0)
        d->pids[d->npids++] = pid;
    return pid;
}

static void stop_all(demo *d)
{
    for (size_t i = 0; i < d->npids; i++)
        kill(d->pids[i], SIGTERM);
    for (size_t i = 0; i < d->npids; i++)
        waitpid(d->pids[i], NULL, 0);
    d->npids = 0;
}

static int commit(demo *d, const char *msg, bool sign, char sha[MCG_SHA_HEX + 1])
{
    mcg_err err = {0};
    d->clock += 60;
    if (mcg_gitops_commit_worktree(sha, d->repo, msg, sign ? &d->key : NULL, d->clock, &err))
        return mcg_err_set(d->err, err.code, "commit: %s", err.msg);
    printf("    committed %.12s %s \"%s\"\n", sha, sign ? "(signed)" : "(NOT signed)", msg);
    return 0;
}

/* One of `mcgit status`'s tables (the pools' or the nodes'), on stdout now. */
static void print_table(demo *d, int (*table)(mcg_cluster *, const char *, mcg_buf *, mcg_err *),
                        const char *format)
{
    mcg_buf b = MCG_BUF_INIT;
    mcg_err err = {0};
    if (table(d->cl, format, &b, &err) == 0 && b.ptr)
        fputs(b.ptr, stdout);
    mcg_buf_free(&b);
    fflush(stdout);
}

static void print_pools(demo *d)
{
    print_table(d, d->o->pools_table, "text");
}

static void print_nodes(demo *d)
{
    print_table(d, d->o->nodes_table, "wide");
}

/* Every pool Updated at its target (and has nodes at it). */
static bool all_updated(demo *d, const char *want_worker)
{
    json_t *items = NULL;
    mcg_err err = {0};
    if (mcg_cluster_list_pools(d->cl, &items, &err) != 0)
        return false;
    bool ok = json_array_size(items) == 3;
    size_t i;
    json_t *p;
    json_array_foreach(items, i, p) {
        json_t *st = json_object_get(p, "status");
        const char *cfg =
            json_string_value(json_object_get(json_object_get(st, "configuration"), "name"));
        const char *tgt = json_string_value(
            json_object_get(json_object_get(json_object_get(p, "spec"), "configuration"), "name"));
        const char *name =
            json_string_value(json_object_get(json_object_get(p, "metadata"), "name"));
        if (!cfg || !tgt || strcmp(cfg, tgt) != 0)
            ok = false;
        if (want_worker && name && !strcmp(name, "worker") && (!tgt || strcmp(tgt, want_worker)))
            ok = false;
        json_t *um = json_object_get(st, "updatedMachineCount"),
               *mc = json_object_get(st, "machineCount");
        if (!json_is_integer(um) || !json_is_integer(mc) ||
            json_integer_value(um) != json_integer_value(mc))
            ok = false;
    }
    json_decref(items);
    return ok;
}

static const char *worker_target(demo *d, char *buf, size_t n)
{
    json_t *items = NULL;
    mcg_err err = {0};
    buf[0] = '\0';
    if (mcg_cluster_list_pools(d->cl, &items, &err) != 0)
        return buf;
    size_t i;
    json_t *p;
    json_array_foreach(items, i, p) {
        const char *name =
            json_string_value(json_object_get(json_object_get(p, "metadata"), "name"));
        const char *tgt = json_string_value(
            json_object_get(json_object_get(json_object_get(p, "spec"), "configuration"), "name"));
        if (name && tgt && !strcmp(name, "worker"))
            snprintf(buf, n, "%s", tgt);
    }
    json_decref(items);
    return buf;
}

static void nap(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The rollout's waves as the cluster shows them: when each worker was first
 * seen Working towards the target, and when Done at it (sampled through the
 * cluster interface while the demo waits, every 100 ms). */
typedef struct timeline {
    double t0; /* the first sample */
    struct {
        char node[64];
        double working, done; /* seconds since t0; < 0: not seen */
    } n[16];
    size_t count;
} timeline;

/* One sample: a worker is Working once its desiredConfig leaves `old`, Done once it runs it. */
static void timeline_sample(timeline *tl, const mcg_node *ns, size_t n, const char *old)
{
    double now = mcg_mono_seconds();
    if (tl->t0 == 0)
        tl->t0 = now;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(ns[i].name, "worker-", 7))
            continue;
        size_t k = 0;
        while (k < tl->count && strcmp(tl->n[k].node, ns[i].name))
            k++;
        if (k == tl->count && tl->count < sizeof(tl->n) / sizeof(tl->n[0])) {
            snprintf(tl->n[k].node, sizeof(tl->n[k].node), "%s", ns[i].name);
            tl->n[k].working = tl->n[k].done = -1;
            tl->count++;
        }
        if (k == tl->count)
            continue;
        bool desired = ns[i].desired && strcmp(ns[i].desired, old);
        bool done = desired && ns[i].current && !strcmp(ns[i].current, ns[i].desired) &&
                    ns[i].state && !strcmp(ns[i].state, "Done");
        if (desired && tl->n[k].working < 0) /* done between two samples: both now */
            tl->n[k].working = now - tl->t0;
        if (done && tl->n[k].done < 0)
            tl->n[k].done = now - tl->t0;
    }
}

/* A sample of the nodes now, through the cluster interface. */
static void sample_nodes(demo *d, timeline *tl, const char *old)
{
    mcg_node *ns = NULL;
    size_t n = 0;
    if (mcg_cluster_list_nodes(d->cl, &ns, &n, NULL) == 0)
        timeline_sample(tl, ns, n, old);
    mcg_nodes_free(ns, n);
}

static void timeline_print(const timeline *tl, const char *target)
{
    printf("    the rollout, as the cluster showed it (sampled every 100 ms):\n");
    /* every Working and Done in the order they were seen */
    double last = -1;
    for (;;) {
        double best = -1;
        for (size_t k = 0; k < tl->count; k++)
            for (int w = 0; w < 2; w++) {
                double t = w ? tl->n[k].done : tl->n[k].working;
                if (t > last && (best < 0 || t < best))
                    best = t;
            }
        if (best < 0)
            break;
        /* in one sample: those done that were working before, then each new one */
        for (size_t k = 0; k < tl->count; k++)
            if (tl->n[k].done == best && tl->n[k].working < best)
                printf("      +%.2f s  %-9s Done\n", best, tl->n[k].node);
        for (size_t k = 0; k < tl->count; k++) {
            if (tl->n[k].working == best)
                printf("      +%.2f s  %-9s Working  (targeted %s)\n", best, tl->n[k].node, target);
            if (tl->n[k].working == best && tl->n[k].done == best)
                printf("      +%.2f s  %-9s Done\n", best, tl->n[k].node);
        }
        last = best;
    }
}

/* While waiting: the most worker nodes updating at once, and the timeline. */
static void sample_rollout(demo *d, size_t *max_updating, timeline *tl, const char *old)
{
    mcg_node *ns = NULL;
    size_t n = 0;
    if ((!max_updating && !tl) || mcg_cluster_list_nodes(d->cl, &ns, &n, NULL) != 0)
        return;
    if (tl)
        timeline_sample(tl, ns, n, old);
    size_t updating = 0;
    for (size_t i = 0; max_updating && i < n; i++)
        if (!strncmp(ns[i].name, "worker-", 7) &&
            (!ns[i].current || !ns[i].desired || strcmp(ns[i].current, ns[i].desired) ||
             !ns[i].state || strcmp(ns[i].state, "Done")))
            updating++;
    if (max_updating && updating > *max_updating)
        *max_updating = updating;
    mcg_nodes_free(ns, n);
}

/* Wait (printing the pool table whenever it changes) until pools are Updated. */
static int wait_updated(demo *d, const char *want_worker, int timeout_s, size_t *max_updating,
                        timeline *tl, const char *old)
{
    mcg_buf last = MCG_BUF_INIT;
    time_t end = time(NULL) + timeout_s;
    while (time(NULL) < end) {
        mcg_buf b = MCG_BUF_INIT;
        mcg_err err = {0};
        d->o->pools_table(d->cl, "text", &b, &err);
        /* AGE changes every second: compare without the last column */
        if (b.ptr && (!last.ptr || strcmp(b.ptr, last.ptr) != 0)) {
            char *prev = last.ptr ? last.ptr : "";
            bool changed = true;
            if (last.ptr) {
                /* compare rows minus their AGE column */
                char *x = mcg_strdup(b.ptr), *y = mcg_strdup(prev);
                for (char *s = x; (s = strchr(s, '\n')); s++) {
                    char *e = s;
                    while (e > x && e[-1] != ' ')
                        e--;
                    memset(e, ' ', (size_t)(s - e));
                }
                for (char *s = y; (s = strchr(s, '\n')); s++) {
                    char *e = s;
                    while (e > y && e[-1] != ' ')
                        e--;
                    memset(e, ' ', (size_t)(s - e));
                }
                changed = strcmp(x, y) != 0;
                free(x);
                free(y);
            }
            if (changed) {
                fputs(b.ptr, stdout);
                putchar('\n');
                fflush(stdout);
            }
        }
        mcg_buf_free(&last);
        last = b;
        sample_rollout(d, max_updating, tl, old);
        if (all_updated(d, want_worker)) {
            mcg_buf_free(&last);
            return 0;
        }
        nap(100);
    }
    mcg_buf_free(&last);
    return mcg_err_set(d->err, MCG_EIO, "pools did not converge within %d s (logs in %s/logs)",
                       timeout_s, d->dir);
}

static int wait_node_state(demo *d, const char *node, const char *state, int timeout_s,
                           char *reason, size_t rlen)
{
    time_t end = time(NULL) + timeout_s;
    while (time(NULL) < end) {
        mcg_node n = {0};
        mcg_err err = {0};
        if (mcg_cluster_get_node(d->cl, node, &n, &err) == 0 && n.state &&
            !strcmp(n.state, state)) {
            if (reason)
                snprintf(reason, rlen, "%s", n.reason ? n.reason : "");
            mcg_node_clear(&n);
            return 0;
        }
        mcg_node_clear(&n);
        nap(100);
    }
    return mcg_err_set(d->err, MCG_EIO, "node %s did not reach %s within %d s", node, state,
                       timeout_s);
}

static const char chrony_mc[] =
    "apiVersion: machineconfiguration.openshift.io/v1\n"
    "kind: MachineConfig\n"
    "metadata:\n"
    "  name: 50-worker-chrony\n"
    "  labels:\n"
    "    machineconfiguration.openshift.io/role: worker\n"
    "spec:\n"
    "  config:\n"
    "    ignition:\n"
    "      version: 3.4.0\n"
    "    storage:\n"
    "      files:\n"
    "      - path: /etc/chrony.conf\n"
    "        mode: 0644\n"
    "        contents:\n"
    "          source: "
    "data:,pool%200.rhel.pool.ntp.org%20iburst%0Adriftfile%20%2Fvar%2Flib%2Fchrony%2Fdrift%0A\n"
    "    systemd:\n"
    "      units:\n"
    "      - name: chronyd.service\n"
    "        enabled: true\n"
    "        contents: |\n"
    "          [Unit]\n"
    "          Description=NTP client/server\n"
    "          [Service]\n"
    "          ExecStart=/usr/sbin/chronyd -n\n"
    "          [Install]\n"
    "          WantedBy=multi-user.target\n";

static const char infra_pool[] = "apiVersion: machineconfiguration.openshift.io/v1\n"
                                 "kind: MachineConfigPool\n"
                                 "metadata:\n"
                                 "  name: infra\n"
                                 "spec:\n"
                                 "  machineConfigSelector:\n"
                                 "    matchLabels:\n"
                                 "      machineconfiguration.openshift.io/role: infra\n"
                                 "  nodeSelector:\n"
                                 "    matchLabels:\n"
                                 "      node-role.kubernetes.io/infra: \"\"\n"
                                 "  maxUnavailable: 1\n";

static const char infra_mc[] =
    "apiVersion: machineconfiguration.openshift.io/v1\n"
    "kind: MachineConfig\n"
    "metadata:\n"
    "  name: 50-infra-motd\n"
    "  labels:\n"
    "    machineconfiguration.openshift.io/role: infra\n"
    "spec:\n"
    "  config:\n"
    "    ignition:\n"
    "      version: 3.4.0\n"
    "    storage:\n"
    "      files:\n"
    "      - path: /etc/motd\n"
    "        contents:\n"
    "          source: data:,infra%20node%2C%20managed%20by%20mcgit%0A\n";

static int setup(demo *d)
{
    mcg_err err = {0};
    char *p;
    int a = snprintf(d->repo, sizeof(d->repo), "%s/repo", d->dir);
    int b = snprintf(d->trust, sizeof(d->trust), "%s/trust/allowed_signers", d->dir);
    int c = snprintf(d->cluster, sizeof(d->cluster), "local:%s/cluster", d->dir);
    if (a < 0 || (size_t)a >= sizeof(d->repo) || b < 0 || (size_t)b >= sizeof(d->trust) || c < 0 ||
        (size_t)c >= sizeof(d->cluster))
        return mcg_err_set(d->err, MCG_EINVAL, "%s: path too long", d->dir);
    p = mcg_sprintf("%s/logs", d->dir);
    mcg_mkdirs(p, 0755, &err);
    free(p);
    p = mcg_sprintf("%s/trust", d->dir);
    mcg_mkdirs(p, 0755, &err);
    free(p);
    if (mcg_gitops_init(d->repo, d->err) != 0)
        return -1;
    mcg_sshkey_generate(&d->key);
    char *pub = mcg_sshkey_public_line(&d->key, "demo-operator");
    char *line = mcg_sprintf("operator@demo.mcgit %s\n", pub);
    int rc = write_text(d, d->trust, line);
    free(line);
    free(pub);
    if (rc)
        return -1;
    p = mcg_sprintf("%s/pools/infra.yaml", d->repo);
    rc = write_text(d, p, infra_pool);
    free(p);
    p = mcg_sprintf("%s/machineconfigs/50-infra-motd.yaml", d->repo);
    rc = rc ? rc : write_text(d, p, infra_mc);
    free(p);
    if (rc)
        return -1;
    if (mcg_cluster_open(&d->cl, d->cluster, d->err) != 0)
        return -1;
    int64_t now = (int64_t)time(NULL);
    for (size_t i = 0; i < NNODES; i++) {
        mcg_labels l = {0};
        /* oldest first: master-0 is the oldest node */
        if (mcg_labels_parse_arg(&l, nodes[i][1], d->err) != 0 ||
            mcg_cluster_add_node(d->cl, nodes[i][0], &l, now - 3600 + (int64_t)i * 60, d->err) !=
                0) {
            mcg_labels_free(&l);
            return -1;
        }
        mcg_labels_free(&l);
    }
    return 0;
}

static void start_processes(demo *d)
{
    char *ctl[] = {"mcgit",     "controller", "--repo",     d->repo, "--trust", d->trust,
                   "--cluster", d->cluster,   "--interval", "0.3",   NULL};
    spawn(d, "controller", ctl);
    for (size_t i = 0; i < NNODES; i++) {
        char *ag[] = {"mcgit",      "agent", "--node", (char *)nodes[i][0], "--cluster", d->cluster,
                      "--interval", "1",     NULL};
        spawn(d, nodes[i][0], ag);
    }
}

/* Sign a rollback with the demo's throwaway key (mcg_commit_sign_fn). */
static int demo_sign(char **armored, const char *buf, size_t len, void *ctx, mcg_err *err)
{
    const demo *d = ctx;
    *armored = mcg_sshsig_sign(&d->key, buf, len);
    return *armored ? 0 : mcg_err_set(err, MCG_EIO, "signing failed");
}

/* Chapter 1: the first commit rendered and rolled out everywhere. */
static int story_first(demo *d, char first_render[MCG_SHA_HEX + 1], char *first_worker,
                       size_t nworker)
{
    char sha[MCG_SHA_HEX + 1];
    say("A config repo with pools master, worker and infra (a custom pool that inherits "
        "worker's MachineConfigs), signed with a throwaway ed25519 key");
    term("MachineConfig", "a YAML file in machineconfigs/: files, systemd units and SSH keys "
                          "for nodes, as Ignition config");
    term("pool", "a YAML file in pools/: which nodes (by label) get which MachineConfigs");
    if (commit(d, "Initial configuration", true, sha))
        return -1;
    say("3 master, 3 worker and 1 infra node join the local cluster; the controller and 7 "
        "agents start");
    term("rendered config", "a pool's MachineConfigs merged into one, named "
                            "rendered-<pool>-<hash of its content>; the CONFIG column");
    start_processes(d);
    if (wait_updated(d, NULL, 30, NULL, NULL, NULL))
        return -1;
    mcg_repo *r = NULL;
    mcg_err err = {0};
    mcg_rendered_log log = {0};
    if (mcg_repo_open(&r, d->repo, &err) == 0 && mcg_gitops_log(&log, r, &err) == 0 && log.n)
        memcpy(first_render, log.e[0].rendered, MCG_SHA_HEX + 1);
    mcg_rendered_log_free(&log);
    mcg_repo_free(r);
    worker_target(d, first_worker, nworker);
    printf("    first render: rendered commit %.12s\n", first_render);
    return 0;
}

/* Chapter 2: a signed change rolled out to the workers one at a time. */
static int story_chrony(demo *d, const char *first_worker)
{
    char sha[MCG_SHA_HEX + 1];
    say("A signed change for the workers: /etc/chrony.conf and chronyd.service enabled. "
        "Workers update one at a time (maxUnavailable: 1), oldest first; infra inherits it");
    term("maxUnavailable", "how many of a pool's nodes may be updating (not Done) at once");
    char *p = mcg_sprintf("%s/machineconfigs/50-worker-chrony.yaml", d->repo);
    int rc = write_text(d, p, chrony_mc);
    free(p);
    if (rc || commit(d, "Configure chrony on workers", true, sha))
        return -1;
    size_t max_updating = 0;
    char target[128];
    time_t end = time(NULL) + 20;
    timeline tl = {0};
    while (!strcmp(worker_target(d, target, sizeof(target)), first_worker) && time(NULL) < end) {
        sample_nodes(d, &tl, first_worker);
        nap(100);
    }
    if (wait_updated(d, target, 60, &max_updating, &tl, first_worker))
        return -1;
    timeline_print(&tl, target);
    if (max_updating)
        printf("    at most %zu worker node%s updating at any sample (maxUnavailable: 1)\n",
               max_updating, max_updating == 1 ? " was" : "s were");
    return 0;
}

/* Chapter 3: a file edited by hand is drift; re-applied on request, the node is Done again. */
static int story_drift(demo *d)
{
    say("Someone edits /etc/chrony.conf on worker-1 by hand: drift");
    char *path = mcg_sprintf("%s/cluster/roots/worker-1/etc/chrony.conf", d->dir);
    char *orig = NULL;
    size_t olen = 0;
    if (mcg_read_file(path, 1 << 20, &orig, &olen, d->err) != 0) {
        free(path);
        return -1;
    }
    FILE *f = fopen(path, "a");
    if (f) {
        fputs("server rogue.example.com\n", f);
        fclose(f);
    }
    char reason[512];
    if (wait_node_state(d, "worker-1", "Degraded", 20, reason, sizeof(reason))) {
        free(orig);
        free(path);
        return -1;
    }
    print_nodes(d);
    say("The agent never overwrites drift (it may be someone's fix in progress): the operator "
        "asks worker-1's agent to re-apply its config, as `mcgit agent --force` does");
    printf("    touch %s/cluster/roots/worker-1/run/machine-config-daemon-force   "
           "(MCO's force file: a running agent takes it at its next pass)\n",
           d->dir);
    char *force = mcg_sprintf("%s/cluster/roots/worker-1/run", d->dir);
    int rc = mcg_mkdirs(force, 0755, d->err) == 0 ? 0 : -1;
    char *ff = mcg_sprintf("%s/machine-config-daemon-force", force);
    rc = rc ? rc : write_text(d, ff, "");
    free(ff);
    free(force);
    if (!rc)
        rc = wait_node_state(d, "worker-1", "Done", 20, NULL, 0);
    char *now = NULL;
    size_t nlen = 0;
    if (!rc && mcg_read_file(path, 1 << 20, &now, &nlen, d->err) == 0) {
        if (nlen == olen && !memcmp(now, orig, olen))
            printf("    the agent put /etc/chrony.conf back; worker-1 is Done again\n");
        else
            rc = mcg_err_set(d->err, MCG_EIO, "worker-1's /etc/chrony.conf was not put back");
    }
    free(now);
    free(orig);
    free(path);
    if (rc)
        return -1;
    print_nodes(d);
    return 0;
}

/* The message of pool pl's RenderDegraded condition when it is True, else NULL. */
static const char *render_degraded_msg(json_t *pl)
{
    size_t j;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pl, "status"), "conditions"), j, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *st = json_string_value(json_object_get(c, "status"));
        if (t && st && !strcmp(t, "RenderDegraded") && !strcmp(st, "True"))
            return json_string_value(json_object_get(c, "message"));
    }
    return NULL;
}

/* Whether every pool says RenderDegraded (then each pool's message is printed). */
static bool render_degraded(demo *d)
{
    mcg_err err = {0};
    json_t *items = NULL, *pl;
    size_t i, n = 0;
    if (mcg_cluster_list_pools(d->cl, &items, &err) != 0)
        return false;
    json_array_foreach(items, i, pl)
        n += render_degraded_msg(pl) != NULL;
    bool all = n && n == json_array_size(items);
    json_array_foreach(items, i, pl) {
        const char *m = render_degraded_msg(pl);
        if (all)
            printf("    %s: RenderDegraded: %s\n",
                   json_string_value(json_object_get(json_object_get(pl, "metadata"), "name")),
                   m ? m : "");
    }
    if (all)
        printf("    every pool (%zu) is RenderDegraded: each keeps its last good config\n", n);
    json_decref(items);
    return all;
}

/* Chapter 4: an unsigned commit is refused, then dropped by the operator. */
static int story_unsigned(demo *d)
{
    say("An UNSIGNED commit lands on main: the controller refuses it and rolls it out nowhere");
    char *p = mcg_sprintf("%s/machineconfigs/60-evil.yaml", d->repo);
    int rc = write_text(d, p,
                        "apiVersion: machineconfiguration.openshift.io/v1\n"
                        "kind: MachineConfig\n"
                        "metadata:\n"
                        "  name: 60-evil\n"
                        "  labels:\n"
                        "    machineconfiguration.openshift.io/role: worker\n"
                        "spec:\n"
                        "  config:\n"
                        "    ignition: {version: 3.4.0}\n"
                        "    passwd:\n"
                        "      users:\n"
                        "      - name: core\n"
                        "        sshAuthorizedKeys: [\"ssh-ed25519 "
                        "AAAAC3NzaC1lZDI1NTE5AAAAIEvil intruder\"]\n");
    char evil[MCG_SHA_HEX + 1];
    if (rc || commit(d, "Add my key", false, evil)) {
        free(p);
        return -1;
    }
    time_t end = time(NULL) + 20;
    bool refused = false;
    while (!refused && time(NULL) < end) {
        refused = render_degraded(d);
        nap(100);
    }
    if (!refused) {
        free(p);
        return mcg_err_set(d->err, MCG_EIO, "the unsigned commit was not refused");
    }
    print_pools(d);
    printf("    the operator drops the unsigned commit (git reset --hard HEAD~1)\n");
    unlink(p);
    free(p);
    return mcg_gitops_reset_hard(d->repo, "HEAD~1", d->err) != 0 ? -1 : 0;
}

/* Chapter 5: mcgit rollback to the first render; the workers return to it. */
static int story_rollback(demo *d, const char *first_render, const char *first_worker)
{
    mcg_err err = {0};
    say("mcgit rollback %.12s: a signed commit on main restoring the first render's "
        "configs; the workers return to %s",
        first_render, first_worker);
    mcg_repo *r = NULL;
    mcg_rollback_result rb = {0};
    mcg_rollback_opts ro = {0};
    ro.sign = demo_sign;
    ro.sign_ctx = d;
    ro.name = "mcgit demo";
    ro.email = "demo@mcgit.invalid";
    d->clock += 60;
    ro.when = d->clock;
    if (mcg_repo_open(&r, d->repo, &err) != 0 ||
        mcg_gitops_rollback(&rb, r, first_render, &ro, &err) != 0) {
        mcg_repo_free(r);
        return mcg_err_set(d->err, err.code ? err.code : MCG_EIO, "rollback: %s", err.msg);
    }
    mcg_repo_free(r);
    printf("    %.12s is the first render's commit on the rendered branch; it was rendered from "
           "source commit %.12s on main, which the rollback names: two ids, one point\n",
           first_render, rb.target);
    printf("    committed %.12s (signed) \"Rollback to %.12s\" (Rollback-To: %.12s)\n", rb.commit,
           rb.target, rb.target);
    for (size_t i = 0; i < rb.npools; i++) {
        const mcg_rollback_pool *p = &rb.pools[i];
        printf("    %s: %s -> %s\n", p->pool, p->from ? p->from : "-", p->to ? p->to : "-");
    }
    mcg_rollback_result_free(&rb);
    printf("    the pools while the rollback rolls out (a table each time they change):\n");
    if (wait_updated(d, first_worker, 60, NULL, NULL, NULL))
        return -1;
    printf("    the nodes after the rollback: every worker back on %s\n", first_worker);
    print_nodes(d);
    return 0;
}

/* Whether prog is an executable file in a directory of $PATH. */
static bool on_path(const char *prog)
{
    const char *path = mcg_env_get("PATH");
    bool found = false;
    char *copy = mcg_strdup(path ? path : "");
    for (char *save = NULL, *dir = strtok_r(copy, ":", &save); dir && !found;
         dir = strtok_r(NULL, ":", &save)) {
        char *f = mcg_sprintf("%s/%s", *dir ? dir : ".", prog);
        found = access(f, X_OK) == 0;
        free(f);
    }
    free(copy);
    return found;
}

static int story(demo *d)
{
    char first_render[MCG_SHA_HEX + 1] = "", first_worker[128];
    if (story_first(d, first_render, first_worker, sizeof(first_worker)) ||
        story_chrony(d, first_worker) || story_drift(d) || story_unsigned(d) ||
        story_rollback(d, first_render, first_worker))
        return -1;
    return 0;
}

int mcg_demo_run(const mcg_demo_opts *o, mcg_err *err)
{
    demo d;
    memset(&d, 0, sizeof(d));
    d.o = o;
    d.err = err;
    d.clock = 1767225600; /* 2026-01-01T00:00:00Z */
    d.keep = o->keep;
    if (snprintf(d.dir, sizeof(d.dir), "%s", o->dir) >= (int)sizeof(d.dir) ||
        snprintf(d.self, sizeof(d.self), "%s", o->self) >= (int)sizeof(d.self))
        return mcg_err_set(err, MCG_EINVAL, "%s: path too long", o->dir);
    time_t t0 = time(NULL);
    int rc = setup(&d) == 0 ? story(&d) : -1;
    if (!d.keep || rc)
        stop_all(&d);
    mcg_sshkey_wipe(&d.key);
    mcg_cluster_free(d.cl);
    if (rc)
        return err && err->code ? err->code : MCG_EIO;
    say("Done in %ld s. Explore:", (long)(time(NULL) - t0));
    if (!on_path("git"))
        printf("    (the git lines need git, which is not installed: apt-get install git)\n");
    printf("    git -C %s log --oneline --graph --all\n", d.repo);
    printf("    git -C %s log -p rendered -- worker/files/etc/chrony.conf\n", d.repo);
    printf("    git -C %s -c gpg.ssh.allowedSignersFile=%s verify-commit main\n", d.repo, d.trust);
    printf("    %s log --repo %s\n", d.self, d.repo);
    printf("    %s status --cluster %s\n", d.self, d.cluster);
    printf("    %s status --cluster %s nodes -o wide\n", d.self, d.cluster);
    if (d.keep) {
        printf("    controller and agents still run:");
        for (size_t i = 0; i < d.npids; i++)
            printf(" %ld", (long)d.pids[i]);
        printf("  (stop them with kill)\n");
    }
    return 0;
}
