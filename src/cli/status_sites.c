/*
 * status_sites.c — `mcgit status --sites --repo R`: the fleet from HQ, one
 * row per site and pool, as a table, a JSON List, or Prometheus metrics
 * for a hub's Prometheus (a textfile collector's file).
 */
#include "cli/cli.h"
#include "site/site.h"

#include <stdio.h>
#include <string.h>

/* A table as `mcgit status` prints its own: columns three spaces apart. */
static void sites_table(const mcg_site_view *v, int64_t now, mcg_buf *out)
{
    static const char *const head[] = {"SITE",    "POOL",     "CONFIG",   "SOURCE",   "MACHINES",
                                       "UPDATED", "ATTESTED", "DEGRADED", "REPORTED", "STALE"};
    enum { COLS = 10 };
    mcg_strv cells = {0};
    for (size_t c = 0; c < COLS; c++)
        mcg_strv_push(&cells, head[c]);
    for (size_t i = 0; i < v->n; i++) {
        const mcg_site_row *r = &v->rows[i];
        char num[4][24], age[40], src[16];
        snprintf(src, sizeof(src), "%.12s", *r->source ? r->source : "-");
        snprintf(num[0], sizeof(num[0]), "%lld", r->machines);
        snprintf(num[1], sizeof(num[1]), "%lld", r->updated);
        snprintf(num[2], sizeof(num[2]), "%lld", r->attested);
        snprintf(num[3], sizeof(num[3]), "%lld", r->degraded);
        if (!r->reported)
            snprintf(age, sizeof(age), "never");
        else {
            char d[32];
            mcg_human_duration(now - r->reported > 0 ? now - r->reported : 0, d);
            snprintf(age, sizeof(age), "%s ago", d);
        }
        const char *row[COLS] = {r->site,
                                 *r->pool ? r->pool : "-",
                                 *r->config ? r->config : "-",
                                 src,
                                 num[0],
                                 num[1],
                                 num[2],
                                 num[3],
                                 age,
                                 r->stale ? "yes" : "no"};
        for (size_t c = 0; c < COLS; c++)
            mcg_strv_push(&cells, row[c]);
    }
    size_t width[COLS] = {0};
    for (size_t k = 0; k < cells.n; k++)
        if (strlen(cells.v[k]) > width[k % COLS])
            width[k % COLS] = strlen(cells.v[k]);
    for (size_t k = 0; k < cells.n; k++) {
        if (k % COLS + 1 == COLS)
            mcg_buf_printf(out, "%s\n", cells.v[k]);
        else
            mcg_buf_printf(out, "%-*s   ", (int)width[k % COLS], cells.v[k]);
    }
    mcg_strv_free(&cells);
}

static json_t *row_json(const mcg_site_row *r)
{
    char when[32];
    return json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:o,s:b}", "site", r->site, "pool", r->pool,
                     "config", r->config, "source", r->source, "machineCount",
                     (json_int_t)r->machines, "updatedMachineCount", (json_int_t)r->updated,
                     "attestedMachineCount", (json_int_t)r->attested, "degradedMachineCount",
                     (json_int_t)r->degraded, "reportedAt",
                     r->reported ? json_string(mcg_time_iso(when, r->reported)) : json_null(),
                     "stale", r->stale);
}

/* Prometheus text format: per site its last report and staleness, per pool its counts. */
static void sites_metrics(const mcg_site_view *v, mcg_buf *out)
{
    static const struct {
        const char *name, *help;
        size_t off;
    } counts[] = {
        {"mcgit_site_pool_machines", "Machines of the pool at the site, as last reported.",
         offsetof(mcg_site_row, machines)},
        {"mcgit_site_pool_updated_machines", "Machines on the pool's config at the site.",
         offsetof(mcg_site_row, updated)},
        {"mcgit_site_pool_attested_machines", "Machines whose attestation verified at the site.",
         offsetof(mcg_site_row, attested)},
        {"mcgit_site_pool_degraded_machines", "Degraded machines of the pool at the site.",
         offsetof(mcg_site_row, degraded)},
    };
    mcg_buf_puts(out, "# HELP mcgit_site_last_report_timestamp_seconds When the site's newest "
                      "imported record was made (0: never).\n"
                      "# TYPE mcgit_site_last_report_timestamp_seconds gauge\n");
    for (size_t i = 0; i < v->n; i++)
        if (i == 0 || strcmp(v->rows[i].site, v->rows[i - 1].site))
            mcg_buf_printf(out, "mcgit_site_last_report_timestamp_seconds{site=\"%s\"} %lld\n",
                           v->rows[i].site, (long long)v->rows[i].reported);
    mcg_buf_puts(out, "# HELP mcgit_site_stale 1 when the site has not reported within its "
                      "maxReportAge.\n# TYPE mcgit_site_stale gauge\n");
    for (size_t i = 0; i < v->n; i++)
        if (i == 0 || strcmp(v->rows[i].site, v->rows[i - 1].site))
            mcg_buf_printf(out, "mcgit_site_stale{site=\"%s\"} %d\n", v->rows[i].site,
                           v->rows[i].stale);
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        mcg_buf_printf(out, "# HELP %s %s\n# TYPE %s gauge\n", counts[k].name, counts[k].help,
                       counts[k].name);
        for (size_t i = 0; i < v->n; i++)
            if (*v->rows[i].pool)
                mcg_buf_printf(out, "%s{site=\"%s\",pool=\"%s\"} %lld\n", counts[k].name,
                               v->rows[i].site, v->rows[i].pool,
                               *(const long long *)((const char *)&v->rows[i] + counts[k].off));
    }
}

int mcg_cli_status_sites(const char *repo, const char *format, int64_t now, mcg_buf *out,
                         mcg_err *err)
{
    mcg_repo *r = NULL;
    mcg_site_view v = {0};
    int rc = mcg_repo_open(&r, repo, err);
    if (!rc)
        rc = mcg_site_view_load(&v, r, now, err);
    if (!rc && !strcmp(format, "json")) {
        json_t *items = json_array();
        for (size_t i = 0; i < v.n; i++)
            json_array_append_new(items, row_json(&v.rows[i]));
        json_t *doc =
            json_pack("{s:s,s:s,s:o}", "apiVersion", "v1", "kind", "List", "items", items);
        rc = mcg_json_canonical(doc, out, err);
        mcg_buf_putc(out, '\n');
        json_decref(doc);
    } else if (!rc && !strcmp(format, "metrics")) {
        sites_metrics(&v, out);
    } else if (!rc) {
        if (v.n)
            sites_table(&v, now, out);
        else
            mcg_buf_printf(out, "no site is declared at %.12s (sites/NAME.yaml)\n", v.source);
    }
    mcg_site_view_free(&v);
    mcg_repo_free(r);
    return rc;
}
