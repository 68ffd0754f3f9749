/*
 * kubetool.c — drive the cluster interface one operation at a time, for the
 * integration tests of the kube backend (tests/integration/test_kube_*.sh).
 *
 *   mcgit-kubetool CLUSTER get NODE                 print NODE DESIRED CURRENT STATE READY UNSCHED
 *   mcgit-kubetool CLUSTER patch NODE KEY=VAL...    desired= current= state= reason= if= unsched=
 * ready= mcgit-kubetool CLUSTER incr NODE N              N compare-and-swap increments of
 * desiredConfig mcgit-kubetool CLUSTER add NODE [k=v,...]       add a node (Ready) mcgit-kubetool
 * CLUSTER remove NODE mcgit-kubetool CLUSTER label NODE k=v,... mcgit-kubetool CLUSTER put-config
 * NAME FILE     publish FILE's bytes as rendered config NAME mcgit-kubetool CLUSTER get-config NAME
 * print its bytes mcgit-kubetool CLUSTER list-configs mcgit-kubetool CLUSTER delete-config NAME
 *   mcgit-kubetool CLUSTER put-pool NAME FILE       FILE: a MachineConfigPool object (JSON)
 *   mcgit-kubetool CLUSTER list-pools               the pools as a JSON array
 *   mcgit-kubetool CLUSTER delete-pool NAME
 *   mcgit-kubetool CLUSTER put-policy FILE | get-policy
 *   mcgit-kubetool CLUSTER drain NODE
 *   mcgit-kubetool CLUSTER lead ID SECONDS          try to lead every 0.5 s, print each change
 *                                                   as "UNIX-MS ID leader|follower"
 *   mcgit-kubetool CLUSTER fenced ID NODE SECS     lead once, sleep SECS, then patch NODE's reason
 *   mcgit-kubetool CLUSTER wait NODE|- MS           read NODE (or list all), then wait_change:
 *                                                   print 1 (changed) or 0 (timeout)
 *   mcgit-kubetool CLUSTER patch-many DESIRED NODE...
 *                                                   one wave, as the controller writes it: list
 *                                                   (the watch fills the cache), then every NODE's
 *                                                   desiredConfig := DESIRED, compare-and-swap on
 *                                                   the listed value, in one
 * mcg_cluster_patch_nodes; print "NODE ok|conflict|notfound|error" each, and the wave's wall time
 * in ms on stderr mcgit-kubetool CLUSTER steady N MS              N rounds of list_nodes +
 * wait_change(MS), print the requests of the last round
 *
 * Errors go to stderr as one line; exit 1 (2 for ECONFLICT, 3 ENOTFOUND).
 */
#include "cluster/cluster.h"
#include "cluster/kube_int.h"
#include "fsio/fsio.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static int fail(int rc, const mcg_err *e)
{
    fprintf(stderr, "kubetool: %s\n", e->msg);
    return rc == MCG_ECONFLICT ? 2 : rc == MCG_ENOTFOUND ? 3 : 1;
}

static void print_node(const mcg_node *n)
{
    printf("%s %s %s %s %s %s\n", n->name, n->desired ? n->desired : "-",
           n->current ? n->current : "-", n->state ? n->state : "-",
           n->ready ? "ready" : "notready", n->unschedulable ? "unschedulable" : "schedulable");
}

static int cmd_incr(mcg_cluster *c, const char *node, long n)
{
    long conflicts = 0;
    for (long i = 0; i < n; i++) {
        for (;;) {
            mcg_node nd;
            mcg_err e = {0};
            int rc = mcg_cluster_get_node(c, node, &nd, &e);
            if (rc)
                return fail(rc, &e);
            long v = nd.desired ? strtol(nd.desired, NULL, 10) : 0;
            char old[32], new_[32];
            snprintf(old, sizeof(old), "%s", nd.desired ? nd.desired : "");
            snprintf(new_, sizeof(new_), "%ld", v + 1);
            mcg_node_clear(&nd);
            mcg_node_patch p = MCG_NODE_PATCH_INIT;
            p.desired = new_;
            p.if_desired = old;
            rc = mcg_cluster_patch_node(c, node, &p, &e);
            if (rc == MCG_ECONFLICT) {
                conflicts++;
                continue;
            }
            if (rc)
                return fail(rc, &e);
            break;
        }
    }
    printf("conflicts %ld\n", conflicts);
    return 0;
}

static int node_cmp(const void *a, const void *b)
{
    return strcmp(((const mcg_node *)a)->name, ((const mcg_node *)b)->name);
}

static int cmd_patch_many(mcg_cluster *c, const char *desired, char **names, int n)
{
    mcg_err e = {0};
    mcg_node *v = NULL;
    size_t k = 0;
    int rc = mcg_cluster_list_nodes(c, &v, &k, &e);
    if (!rc && mcg_cluster_wait_change(c, NULL, 0, &e) >= 0) {
        mcg_nodes_free(v, k); /* again, from the cache the watch now keeps */
        rc = mcg_cluster_list_nodes(c, &v, &k, &e);
    }
    if (rc)
        return fail(rc, &e);
    mcg_node_patch *ps = calloc((size_t)n, sizeof(*ps));
    int *rcs = calloc((size_t)n, sizeof(*rcs));
    for (int i = 0; i < n; i++) {
        mcg_node key = {0};
        key.name = names[i];
        const mcg_node *cur = bsearch(&key, v, k, sizeof(*v), node_cmp);
        mcg_node_patch p = MCG_NODE_PATCH_INIT;
        p.desired = desired;
        p.if_desired = cur && cur->desired ? cur->desired : "";
        ps[i] = p;
    }
    struct timespec t0, t1;
    uint64_t r0 = 0, r1 = 0, b0 = 0, b1 = 0;
    mcg_cluster_kube_stats(c, &r0, &b0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = mcg_cluster_patch_nodes(c, (const char *const *)names, ps, (size_t)n, rcs, &e);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    mcg_cluster_kube_stats(c, &r1, &b1);
    for (int i = 0; i < n; i++)
        printf("%s %s\n", names[i],
               !rcs[i]                   ? "ok"
               : rcs[i] == MCG_ECONFLICT ? "conflict"
               : rcs[i] == MCG_ENOTFOUND ? "notfound"
                                         : "error");
    fprintf(stderr, "wave of %d: %.1f ms, %llu requests\n", n,
            (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
            (unsigned long long)(r1 - r0));
    free(ps);
    free(rcs);
    mcg_nodes_free(v, k);
    return rc ? fail(rc, &e) : 0;
}

static int cmd_lead(mcg_cluster *c, const char *id, long seconds)
{
    time_t end = time(NULL) + seconds;
    int last = -1;
    while (!stop && time(NULL) < end) {
        bool leader = false;
        mcg_err e = {0};
        int rc = mcg_cluster_lead(c, id, &leader, &e);
        if (rc)
            fprintf(stderr, "kubetool: %s\n", e.msg);
        if ((int)leader != last) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            printf("%lld %s %s\n", (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000, id,
                   leader ? "leader" : "follower");
            fflush(stdout);
            last = leader;
        }
        struct timespec ts = {0, 500000000L};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static json_t *load_json(const char *path, mcg_err *e)
{
    char *data = NULL;
    size_t len = 0;
    if (mcg_read_file(path, 8u << 20, &data, &len, e) != 0)
        return NULL;
    json_error_t je;
    json_t *v = json_loadb(data, len, 0, &je);
    free(data);
    if (!v)
        mcg_err_set(e, MCG_EINVAL, "%s: %s", path, je.text);
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: mcgit-kubetool CLUSTER COMMAND ARGS...\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    mcg_cluster *c = NULL;
    mcg_err e = {0};
    int rc = mcg_cluster_open(&c, argv[1], &e);
    if (rc)
        return fail(rc, &e);
    mcg_cluster_set_stop(c, &stop);
    const char *cmd = argv[2];
    int n = argc - 3;
    char **a = argv + 3;
    int status = 0;
    if (!strcmp(cmd, "get") && n == 1) {
        mcg_node nd;
        if ((rc = mcg_cluster_get_node(c, a[0], &nd, &e)) != 0)
            status = fail(rc, &e);
        else
            print_node(&nd);
        mcg_node_clear(&nd);
    } else if (!strcmp(cmd, "list") && n == 0) {
        mcg_node *v = NULL;
        size_t k = 0;
        if ((rc = mcg_cluster_list_nodes(c, &v, &k, &e)) != 0)
            status = fail(rc, &e);
        for (size_t i = 0; i < k; i++)
            print_node(&v[i]);
        mcg_nodes_free(v, k);
    } else if (!strcmp(cmd, "patch") && n >= 1) {
        mcg_node_patch p = MCG_NODE_PATCH_INIT;
        for (int i = 1; i < n; i++) {
            char *eq = strchr(a[i], '=');
            if (!eq)
                return 2;
            *eq = '\0';
            const char *v = eq + 1;
            if (!strcmp(a[i], "desired"))
                p.desired = v;
            else if (!strcmp(a[i], "current"))
                p.current = v;
            else if (!strcmp(a[i], "state"))
                p.state = v;
            else if (!strcmp(a[i], "reason"))
                p.reason = v;
            else if (!strcmp(a[i], "if"))
                p.if_desired = v;
            else if (!strcmp(a[i], "unsched"))
                p.unschedulable = atoi(v);
            else if (!strcmp(a[i], "ready"))
                p.ready = atoi(v);
            else
                return 2;
        }
        if ((rc = mcg_cluster_patch_node(c, a[0], &p, &e)) != 0)
            status = fail(rc, &e);
    } else if (!strcmp(cmd, "incr") && n == 2) {
        status = cmd_incr(c, a[0], atol(a[1]));
    } else if (!strcmp(cmd, "add") && n >= 1) {
        mcg_labels l = {0};
        if (n == 2 && (rc = mcg_labels_parse_arg(&l, a[1], &e)) != 0)
            return fail(rc, &e);
        if ((rc = mcg_cluster_add_node(c, a[0], &l, (int64_t)time(NULL), &e)) != 0)
            status = fail(rc, &e);
        mcg_labels_free(&l);
    } else if (!strcmp(cmd, "remove") && n == 1) {
        if ((rc = mcg_cluster_remove_node(c, a[0], &e)) != 0)
            status = fail(rc, &e);
    } else if (!strcmp(cmd, "label") && n == 2) {
        if ((rc = mcg_cluster_label_node(c, a[0], a[1], &e)) != 0)
            status = fail(rc, &e);
    } else if (!strcmp(cmd, "put-config") && n == 2) {
        char *data = NULL;
        size_t len = 0;
        if ((rc = mcg_read_file(a[1], 8u << 20, &data, &len, &e)) != 0 ||
            (rc = mcg_cluster_put_config(c, a[0], data, len, &e)) != 0)
            status = fail(rc, &e);
        free(data);
    } else if (!strcmp(cmd, "get-config") && n == 1) {
        char *data = NULL;
        size_t len = 0;
        if ((rc = mcg_cluster_get_config(c, a[0], &data, &len, &e)) != 0)
            status = fail(rc, &e);
        else
            fwrite(data, 1, len, stdout);
        free(data);
    } else if (!strcmp(cmd, "list-configs") && n == 0) {
        mcg_strv names = {0};
        if ((rc = mcg_cluster_list_configs(c, &names, &e)) != 0)
            status = fail(rc, &e);
        for (size_t i = 0; i < names.n; i++)
            printf("%s\n", names.v[i]);
        mcg_strv_free(&names);
    } else if (!strcmp(cmd, "delete-config") && n == 1) {
        if ((rc = mcg_cluster_delete_config(c, a[0], &e)) != 0)
            status = fail(rc, &e);
    } else if (!strcmp(cmd, "put-pool") && n == 2) {
        json_t *o = load_json(a[1], &e);
        if (!o || (rc = mcg_cluster_put_pool(c, a[0], o, &e)) != 0)
            status = fail(o ? rc : MCG_EINVAL, &e);
        json_decref(o);
    } else if (!strcmp(cmd, "list-pools") && n == 0) {
        json_t *items = NULL;
        if ((rc = mcg_cluster_list_pools(c, &items, &e)) != 0)
            status = fail(rc, &e);
        else {
            char *s = json_dumps(items, JSON_COMPACT | JSON_SORT_KEYS);
            printf("%s\n", s);
            free(s);
        }
        json_decref(items);
    } else if (!strcmp(cmd, "delete-pool") && n == 1) {
        if ((rc = mcg_cluster_delete_pool(c, a[0], &e)) != 0)
            status = fail(rc, &e);
    } else if (!strcmp(cmd, "put-policy") && n == 1) {
        json_t *o = load_json(a[0], &e);
        if (!o || (rc = mcg_cluster_put_policy(c, o, &e)) != 0)
            status = fail(o ? rc : MCG_EINVAL, &e);
        json_decref(o);
    } else if (!strcmp(cmd, "get-policy") && n == 0) {
        json_t *s = NULL;
        if ((rc = mcg_cluster_get_policy_json(c, &s, &e)) != 0)
            status = fail(rc, &e);
        else {
            char *t = json_dumps(s, JSON_COMPACT | JSON_SORT_KEYS);
            printf("%s\n", t);
            free(t);
        }
        json_decref(s);
    } else if (!strcmp(cmd, "drain") && n == 1) {
        if ((rc = mcg_cluster_drain(c, a[0], &e)) != 0)
            status = fail(rc, &e);
    } else if (!strcmp(cmd, "lead") && n == 2) {
        status = cmd_lead(c, a[0], atol(a[1]));
        /* "releasing" before the Lease is given up, "stopped" after: another
         * replica may lead between the two, never before the first */
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        printf("%lld %s releasing\n", (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000, a[0]);
        fflush(stdout);
        mcg_cluster_free(c); /* gives the Lease up */
        clock_gettime(CLOCK_REALTIME, &now);
        printf("%lld %s stopped\n", (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000, a[0]);
        return status;
    } else if (!strcmp(cmd, "fenced") && n == 3) {
        /* take part in leader election once, then write (as a controller pass would) */
        bool leader = false;
        if ((rc = mcg_cluster_lead(c, a[0], &leader, &e)) != 0)
            fprintf(stderr, "kubetool: %s\n", e.msg);
        printf("%s\n", leader ? "leader" : "follower");
        fflush(stdout);
        sleep((unsigned)atoi(a[2]));
        mcg_node_patch p = MCG_NODE_PATCH_INIT;
        p.reason = "fenced";
        if ((rc = mcg_cluster_patch_node(c, a[1], &p, &e)) != 0)
            status = fail(rc, &e);
    } else if (!strcmp(cmd, "wait") && n == 2) {
        /* look first, as the agent (get_node) and the controller (list_nodes) do */
        if (strcmp(a[0], "-") != 0) {
            mcg_node nd;
            if ((rc = mcg_cluster_get_node(c, a[0], &nd, &e)) != 0)
                return fail(rc, &e);
            mcg_node_clear(&nd);
        } else {
            mcg_node *v = NULL;
            size_t k = 0;
            if ((rc = mcg_cluster_list_nodes(c, &v, &k, &e)) != 0)
                return fail(rc, &e);
            mcg_nodes_free(v, k);
        }
        int r = mcg_cluster_wait_change(c, strcmp(a[0], "-") ? a[0] : NULL, atol(a[1]), &e);
        if (r < 0)
            status = fail(r, &e);
        else
            printf("%d\n", r);
    } else if (!strcmp(cmd, "patch-many") && n >= 2) {
        status = cmd_patch_many(c, a[0], a + 1, n - 1);
    } else if (!strcmp(cmd, "steady") && n == 2) {
        long rounds = atol(a[0]), ms = atol(a[1]);
        uint64_t r0 = 0, b0 = 0, r1 = 0, b1 = 0;
        for (long i = 0; i < rounds && !status; i++) {
            mcg_cluster_kube_stats(c, &r0, &b0);
            mcg_node *v = NULL;
            size_t k = 0;
            if ((rc = mcg_cluster_list_nodes(c, &v, &k, &e)) != 0)
                status = fail(rc, &e);
            mcg_nodes_free(v, k);
            int r = mcg_cluster_wait_change(c, NULL, ms, &e);
            if (r < 0)
                status = fail(r, &e);
            mcg_cluster_kube_stats(c, &r1, &b1);
            printf("round %ld: %llu requests, %llu bytes, changed %d\n", i,
                   (unsigned long long)(r1 - r0), (unsigned long long)(b1 - b0), r);
            fflush(stdout);
        }
    } else {
        fprintf(stderr, "kubetool: unknown command or arguments: %s\n", cmd);
        status = 2;
    }
    mcg_cluster_free(c);
    return status;
}
