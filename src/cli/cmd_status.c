/*
 * cmd_status.c — `mcgit status`: pools and nodes, as kubectl shows them.
 */
#include "cli/cli.h"
#include "cluster/cluster.h"
#include "controller/controller.h"
#include "rollout/rollout.h"
#include "osenv/osenv.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int run(int argc, char **argv);

static const mcg_opt status_opts[] = {
    MCG_OPT_HELP,
    MCG_OPT_CLUSTER,
    MCG_OPT_SHORT_VALUE('o', "output", "text|json|wide",
                        "text (default); wide: more columns; json: a\n"
                        "Kubernetes List ({\"apiVersion\": \"v1\", \"kind\":\n"
                        "\"List\", \"items\": [...]}) of MachineConfigPool\n"
                        "or Node objects, the shapes `kubectl get -o json`\n"
                        "prints"),
    MCG_OPT_FLAG(
        'S', "sites",
        "the fleet: every site of --repo R and what it\nlast reported (-o json, or -o metrics)"),
    MCG_OPT_VALUE('r', "repo", "R", "with --sites: HQ's config repo"),
    MCG_OPT_SHORT_FLAG('w', "watch",
                       "after the table, print each row again when it\n"
                       "changes (the header once, as `kubectl get\n"
                       "--watch`); -o json: the whole document again\n"
                       "(until interrupted)"),
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_status = {
    .name = "status",
    .summary = "show pools or nodes (the kubectl get machineconfigpool view)",
    .usage = "usage: mcgit status --cluster C [pools|nodes] [-o json|wide] [--watch]\n"
             "       mcgit status --sites --repo R [-o json|metrics]\n"
             "\n"
             "pools (default) prints the columns of `kubectl get machineconfigpool`:\n"
             "  NAME CONFIG UPDATED UPDATING DEGRADED MACHINECOUNT READYMACHINECOUNT\n"
             "  UPDATEDMACHINECOUNT DEGRADEDMACHINECOUNT AGE\n"
             "-o wide adds MACHINECONFIGS, the MachineConfigs CONFIG was rendered from\n"
             "(status.configuration.source, in merge order).\n"
             "nodes prints NODE DESIRED CURRENT STATE (-o wide adds POOL and REASON).\n"
             "\n"
             "C is local:DIR (the embedded store), kube (in-cluster service account) or\n"
             "kube:KUBECONFIG; on kube the pools are MachineConfigPool objects, so\n"
             "`kubectl get mcp` prints the same table. Under the table: each paused pool\n"
             "and why (in git, or by an operator: `mcgit pool pause` or `kubectl patch mcp\n"
             "POOL --type merge -p '{\"spec\":{\"paused\":true}}'`), and SourceStale.\n"
             "Without --cluster, C is $MCGIT_CLUSTER (`export MCGIT_CLUSTER=local:DIR`\n"
             "once per shell).\n"
             "\n"
             "--sites prints the fleet from HQ's repo R: one row per site declared at R's\n"
             "verified source commit and pool, with what its newest imported status\n"
             "record says (`mcgit site import`): SITE POOL CONFIG SOURCE MACHINES UPDATED\n"
             "ATTESTED DEGRADED REPORTED STALE. A site never heard from is listed; a site\n"
             "whose last record is older than its maxReportAge (default 24h) is stale.\n"
             "-o metrics prints the same as Prometheus metrics (mcgit_site_*), for a\n"
             "hub's node-exporter textfile collector. See docs/sites.md.\n",
    .run = run,
    .opts = status_opts,
};

/* A table printed like kubectl's: columns padded, three spaces apart. */
typedef struct table {
    mcg_strv cells;
    size_t cols;
} table;

static void print_table(const table *t, mcg_buf *out)
{
    size_t rows = t->cells.n / t->cols;
    size_t width[16] = {0};
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < t->cols; c++) {
            size_t w = strlen(t->cells.v[r * t->cols + c]);
            if (w > width[c])
                width[c] = w;
        }
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < t->cols; c++) {
            const char *s = t->cells.v[r * t->cols + c];
            if (c + 1 == t->cols)
                mcg_buf_puts(out, s);
            else
                mcg_buf_printf(out, "%-*s   ", (int)width[c], s);
        }
        mcg_buf_putc(out, '\n');
    }
}

static const char *cond_status(const json_t *pool, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pool, "status"), "conditions"), i, c) {
        json_t *t = json_object_get(c, "type");
        if (json_is_string(t) && !strcmp(json_string_value(t), type)) {
            json_t *s = json_object_get(c, "status");
            return json_is_string(s) ? json_string_value(s) : "";
        }
    }
    return "";
}

/* The names in status.configuration.source, comma-separated ("<none>" without). */
static char *source_cell(const json_t *pool)
{
    json_t *src = json_object_get(json_object_get(json_object_get(pool, "status"), "configuration"),
                                  "source");
    mcg_buf b = MCG_BUF_INIT;
    size_t i;
    json_t *r;
    json_array_foreach(src, i, r) {
        const char *n = json_string_value(json_object_get(r, "name"));
        if (n)
            mcg_buf_printf(&b, "%s%s", b.len ? "," : "", n);
    }
    if (!b.len)
        mcg_buf_puts(&b, "<none>");
    return mcg_buf_detach(&b, NULL);
}

static void count_cell(table *t, const json_t *pool, const char *key)
{
    char buf[32];
    json_t *v = json_object_get(json_object_get(pool, "status"), key);
    snprintf(buf, sizeof(buf), "%lld", json_is_integer(v) ? (long long)json_integer_value(v) : 0LL);
    mcg_strv_push(&t->cells, buf);
}

/*
 * Under the pools table (its columns stay kubectl's): source freshness, a
 * halted rollout, a rollout waiting for its maintenance window, and paused
 * pools with who paused them.
 */
static void pool_notes(const json_t *items, mcg_buf *out)
{
    size_t i;
    json_t *p;
    json_array_foreach(items, i, p) {
        size_t k;
        json_t *c;
        json_array_foreach(json_object_get(json_object_get(p, "status"), "conditions"), k, c) {
            const char *type = json_string_value(json_object_get(c, "type"));
            const char *st = json_string_value(json_object_get(c, "status"));
            const char *msg = json_string_value(json_object_get(c, "message"));
            const char *pool =
                json_string_value(json_object_get(json_object_get(p, "metadata"), "name"));
            const char *why = json_string_value(json_object_get(c, "reason"));
            if (type && st && !strcmp(type, "SourceStale") && !strcmp(st, "True"))
                mcg_buf_printf(out, "%s: SourceStale: %s\n", pool ? pool : "?", msg ? msg : "");
            /* safe rollouts: a halt, or a rollout waiting for its maintenance window */
            if (type && st && !strcmp(type, "RolloutHalted") && !strcmp(st, "True"))
                mcg_buf_printf(out, "%s: RolloutHalted: %s\n", pool ? pool : "?", msg ? msg : "");
            if (type && why && !strcmp(type, "Updating") && !strcmp(why, "MaintenanceWindow"))
                mcg_buf_printf(out, "%s: %s\n", pool ? pool : "?", msg ? msg : "");
        }
    }
    /* paused pools, and why: git's spec.paused (status.pausedInGit), an
     * operator's (the object's spec.paused), or both */
    json_array_foreach(items, i, p) {
        const char *pool =
            json_string_value(json_object_get(json_object_get(p, "metadata"), "name"));
        bool git = mcg_pool_object_git_paused(p);
        bool op = mcg_pool_object_operator_paused(p);
        if (git || op)
            mcg_buf_printf(out, "%s: paused %s\n", pool ? pool : "?",
                           git && op
                               ? "in git (spec.paused) and by an operator (`mcgit pool resume`)"
                           : git ? "in git (spec.paused; resumed by a signed commit)"
                                 : "by an operator (`mcgit pool resume` resumes it)");
    }
}

int mcg_cli_status_pools(mcg_cluster *cl, const char *format, mcg_buf *out, mcg_err *err)
{
    json_t *items = NULL;
    int rc = mcg_cluster_list_pools(cl, &items, err);
    if (rc)
        return rc;
    if (!strcmp(format, "json")) {
        json_t *list = json_pack("{s:s,s:s,s:O,s:{}}", "apiVersion", "v1", "kind", "List", "items",
                                 items, "metadata");
        rc = mcg_json_canonical(list, out, err);
        json_decref(list);
        json_decref(items);
        return rc;
    }
    if (json_array_size(items) == 0) {
        json_decref(items);
        return 0; /* no table at all, as kubectl: "No resources found" */
    }
    static const char *const hdr[] = {"NAME",
                                      "CONFIG",
                                      "UPDATED",
                                      "UPDATING",
                                      "DEGRADED",
                                      "MACHINECOUNT",
                                      "READYMACHINECOUNT",
                                      "UPDATEDMACHINECOUNT",
                                      "DEGRADEDMACHINECOUNT",
                                      "AGE",
                                      "MACHINECONFIGS"};
    bool wide = !strcmp(format, "wide");
    table t = {{0}, wide ? 11 : 10};
    for (size_t i = 0; i < t.cols; i++)
        mcg_strv_push(&t.cells, hdr[i]);
    size_t i;
    json_t *p;
    int64_t now = (int64_t)time(NULL);
    json_array_foreach(items, i, p) {
        json_t *md = json_object_get(p, "metadata");
        const char *name = json_string_value(json_object_get(md, "name"));
        const char *cfg = json_string_value(json_object_get(
            json_object_get(json_object_get(p, "status"), "configuration"), "name"));
        mcg_strv_push(&t.cells, name ? name : "");
        mcg_strv_push(&t.cells, cfg ? cfg : "");
        mcg_strv_push(&t.cells, cond_status(p, "Updated"));
        mcg_strv_push(&t.cells, cond_status(p, "Updating"));
        mcg_strv_push(&t.cells, cond_status(p, "Degraded"));
        count_cell(&t, p, "machineCount");
        count_cell(&t, p, "readyMachineCount");
        count_cell(&t, p, "updatedMachineCount");
        count_cell(&t, p, "degradedMachineCount");
        int64_t created = 0;
        const char *ts = json_string_value(json_object_get(md, "creationTimestamp"));
        char age[32] = "<unknown>";
        if (ts && mcg_time_parse(ts, &created))
            mcg_human_duration(now - created, age);
        mcg_strv_push(&t.cells, age);
        if (wide) { /* the MachineConfigs of CONFIG, in merge order */
            char *srcs = source_cell(p);
            mcg_strv_push(&t.cells, srcs);
            free(srcs);
        }
    }
    print_table(&t, out);
    pool_notes(items, out);
    mcg_strv_free(&t.cells);
    json_decref(items);
    return 0;
}

/*
 * The pools of the cluster's MachineConfigPool objects, as a model, for
 * membership: each object's spec is read back with the repo's own parser.
 * An object that does not parse is left out.
 */
static mcg_model *pools_of(const json_t *items)
{
    mcg_model *m = mcg_model_new();
    size_t i;
    json_t *p;
    json_array_foreach(items, i, p) {
        json_t *name = json_object_get(json_object_get(p, "metadata"), "name");
        json_t *spec = json_object_get(p, "spec");
        if (!json_is_string(name) || !mcg_name_is_dns_label(json_string_value(name)) ||
            !json_is_object(spec))
            continue;
        json_t *o = json_pack("{s:s,s:s,s:{s:O},s:O}", "apiVersion", MCG_API_OPENSHIFT, "kind",
                              "MachineConfigPool", "metadata", "name", name, "spec", spec);
        char *text = json_dumps(o, JSON_COMPACT);
        char *rel = mcg_sprintf("pools/%s.yaml", json_string_value(name));
        mcg_diags d = {0};
        mcg_model_add_file(m, rel, text, strlen(text), &d);
        mcg_diags_free(&d);
        free(rel);
        free(text);
        json_decref(o);
    }
    return m;
}

int mcg_cli_status_nodes(mcg_cluster *cl, const char *format, mcg_buf *out, mcg_err *err)
{
    mcg_node *nodes = NULL;
    size_t n = 0;
    int rc = mcg_cluster_list_nodes(cl, &nodes, &n, err);
    if (rc)
        return rc;
    if (n == 0 && strcmp(format, "json") != 0) {
        free(nodes);
        return 0; /* no table at all, as kubectl: "No resources found" */
    }
    if (!strcmp(format, "json")) {
        json_t *items = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(items, mcg_node_to_json(&nodes[i]));
        json_t *list = json_pack("{s:s,s:s,s:o,s:{}}", "apiVersion", "v1", "kind", "List", "items",
                                 items, "metadata");
        rc = mcg_json_canonical(list, out, err);
        json_decref(list);
        mcg_nodes_free(nodes, n);
        return rc;
    }
    bool wide = !strcmp(format, "wide");
    mcg_model *pm = NULL;
    if (wide) {
        json_t *items = NULL;
        if ((rc = mcg_cluster_list_pools(cl, &items, err)) != 0) {
            mcg_nodes_free(nodes, n);
            return rc;
        }
        pm = pools_of(items);
        json_decref(items);
    }
    table t = {{0}, wide ? 6 : 4};
    mcg_strv_push(&t.cells, "NODE");
    mcg_strv_push(&t.cells, "DESIRED");
    mcg_strv_push(&t.cells, "CURRENT");
    mcg_strv_push(&t.cells, "STATE");
    if (wide) {
        mcg_strv_push(&t.cells, "POOL");
        mcg_strv_push(&t.cells, "REASON");
    }
    for (size_t i = 0; i < n; i++) {
        mcg_strv_push(&t.cells, nodes[i].name);
        mcg_strv_push(&t.cells, nodes[i].desired ? nodes[i].desired : "<none>");
        mcg_strv_push(&t.cells, nodes[i].current ? nodes[i].current : "<none>");
        mcg_strv_push(&t.cells, nodes[i].state ? nodes[i].state : "<none>");
        if (wide) {
            /* the pool the controller would put it in; a conflict is shown as the reason */
            char *conflict = NULL;
            const mcg_pool *p =
                mcg_rollout_pool_of(&nodes[i].labels, pm->pools, pm->npools, &conflict);
            mcg_strv_push(&t.cells, p ? p->name : conflict ? "<unmanaged>" : "<none>");
            char *reason = conflict ? mcg_sprintf("unmanaged: %s", conflict)
                                    : mcg_strdup(nodes[i].reason ? nodes[i].reason : "");
            for (char *c = reason; *c; c++) /* one line per node: agents' text is untrusted */
                if ((unsigned char)*c < 0x20 || *c == 0x7f)
                    *c = ' ';
            mcg_strv_push(&t.cells, reason);
            free(reason);
            free(conflict);
        }
    }
    print_table(&t, out);
    mcg_strv_free(&t.cells);
    mcg_nodes_free(nodes, n);
    mcg_model_free(pm);
    return 0;
}

/* line with runs of blanks made one space: a row whose padding changed is the same row */
static char *squeeze(const char *line, size_t len)
{
    char *o = mcg_malloc(len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (line[i] != ' ' || (n && o[n - 1] != ' '))
            o[n++] = line[i];
    while (n && o[n - 1] == ' ')
        n--;
    o[n] = '\0';
    return o;
}

/* Split text into its lines, squeezed (squeeze()). */
static void squeezed_lines(mcg_strv *out, const char *text)
{
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char *l = squeeze(p, len);
        mcg_strv_push(out, l);
        free(l);
        p += len + (nl != NULL);
    }
}

/*
 * --watch, after the first table: print only the rows of now that were not
 * in before (as `kubectl get --watch`), without the header.
 */
static void print_changed_rows(const char *now, const char *before)
{
    mcg_strv old = {0};
    squeezed_lines(&old, before);
    bool header = true;
    for (const char *p = now; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char *l = squeeze(p, len);
        if (!header && !mcg_strv_contains(&old, l))
            printf("%.*s\n", (int)len, p);
        header = false;
        free(l);
        p += len + (nl != NULL);
    }
    mcg_strv_free(&old);
}

/* A status that differs from the last one shown: whole, or with --watch its changed rows. */
static void show(const mcg_buf *out, const mcg_buf *last, const char *format, bool watch)
{
    if (watch && last->len && strcmp(format, "json"))
        print_changed_rows(out->ptr ? out->ptr : "", last->ptr);
    else if (out->len)
        fwrite(out->ptr, 1, out->len, stdout);
    else
        mcg_log_line(NULL, "No resources found");
    if (watch && !strcmp(format, "json"))
        putchar('\n');
    fflush(stdout);
}

/* --sites: the fleet from HQ's repo. */
static int status_sites(const char *repo, const char *format, bool no_operands, bool watch)
{
    if (!repo || !no_operands || watch)
        return mcg_cli_usage_error(&mcg_cmd_status, "--sites takes --repo R and -o only");
    if (strcmp(format, "text") && strcmp(format, "json") && strcmp(format, "metrics"))
        return mcg_cli_usage_error(&mcg_cmd_status, "unknown output format '%s'", format);
    mcg_err err = {0};
    mcg_buf out = MCG_BUF_INIT;
    int rc = mcg_cli_status_sites(repo, format, (int64_t)time(NULL), &out, &err);
    if (rc)
        mcg_cli_error("status", "%s", err.msg);
    else if (out.ptr)
        fwrite(out.ptr, 1, out.len, stdout);
    mcg_buf_free(&out);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}

static int run(int argc, char **argv)
{
    const char *cluster = NULL, *format = "text", *what = "pools", *repo = NULL;
    bool watch = false, sites = false;
    const mcg_optbind binds[] = {{'c', &cluster, NULL}, {'o', &format, NULL}, {'w', NULL, &watch},
                                 {'S', NULL, &sites},   {'r', &repo, NULL},   MCG_BIND_END};
    int ex = mcg_cli_parse(&mcg_cmd_status, argc, argv, binds);
    if (ex >= 0)
        return ex;
    if (sites)
        return status_sites(repo, format, optind == argc, watch);
    if (optind < argc)
        what = argv[optind++];
    cluster = mcg_cli_cluster(cluster);
    if (!cluster)
        return mcg_cli_usage_error(&mcg_cmd_status,
                                   "--cluster C is required (or $MCGIT_CLUSTER: `export "
                                   "MCGIT_CLUSTER=local:DIR` once for every command)");
    if (optind != argc || (strcmp(what, "pools") && strcmp(what, "nodes")))
        return mcg_cli_usage_error(&mcg_cmd_status, "expected [pools|nodes]");
    if (strcmp(format, "text") && strcmp(format, "json") && strcmp(format, "wide"))
        return mcg_cli_usage_error(&mcg_cmd_status, "unknown output format '%s'", format);
    mcg_err err = {0};
    mcg_cluster *cl = NULL;
    int rc = mcg_cluster_open(&cl, cluster, &err);
    mcg_buf last = MCG_BUF_INIT;
    while (!rc) {
        mcg_buf out = MCG_BUF_INIT;
        rc = !strcmp(what, "pools") ? mcg_cli_status_pools(cl, format, &out, &err)
                                    : mcg_cli_status_nodes(cl, format, &out, &err);
        if (!rc && (!last.ptr || strcmp(out.ptr ? out.ptr : "", last.ptr) != 0))
            show(&out, &last, format, watch);
        mcg_buf_free(&last);
        last = out;
        if (!last.ptr)
            mcg_buf_puts(&last, "");
        if (!watch)
            break;
        usleep(500000);
    }
    mcg_buf_free(&last);
    if (rc)
        mcg_cli_error("status", "%s", err.msg);
    mcg_cluster_free(cl);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
