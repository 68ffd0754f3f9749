/*
 * view.c — the fleet from HQ: every site the verified source declares, and
 * what its newest imported record says, pool by pool. A site never heard
 * from is listed too, and a site whose newest record is older than its
 * maxReportAge is stale. Only records that passed mcg_site_import are in
 * refs/mcgit/status/, so what is shown here was checked there.
 */
#include "site/site_int.h"

#include <git2.h>
#include <stdlib.h>
#include <string.h>

/* The newest record of site in r (a new reference), or NULL when none. */
static json_t *newest_record(mcg_repo *r, const char *site)
{
    char *ref = mcg_sprintf(MCG_SITE_REF_PREFIX "%s", site);
    git_oid id;
    json_t *doc = git_reference_name_to_id(&id, mcg_repo_git(r), ref) == 0
                      ? mcg_site_record_read(mcg_repo_git(r), &id)
                      : NULL;
    free(ref);
    return doc;
}

static mcg_site_row *add_row(mcg_site_view *v, const mcg_site *s)
{
    v->rows = mcg_realloc(v->rows, (v->n + 1) * sizeof(*v->rows));
    mcg_site_row *row = &v->rows[v->n++];
    memset(row, 0, sizeof(*row));
    row->site = mcg_strdup(s->name);
    row->max_report_age = s->max_report_age;
    return row;
}

static char *str_or_empty(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return mcg_strdup(s ? s : "");
}

/* One row per pool of the record (only the site's pools when it names them). */
static void add_site(mcg_site_view *v, const mcg_site *s, const json_t *doc, int64_t now)
{
    int64_t when = doc ? (int64_t)json_integer_value(json_object_get(doc, "time")) : 0;
    bool stale = !doc || now - when > s->max_report_age;
    size_t i, before = v->n;
    json_t *p;
    json_array_foreach(doc ? json_object_get(doc, "pools") : NULL, i, p) {
        const char *pool = json_string_value(json_object_get(p, "name"));
        if (!pool || (s->pools.n && !mcg_strv_contains(&s->pools, pool)))
            continue;
        mcg_site_row *row = add_row(v, s);
        row->pool = mcg_strdup(pool);
        row->config = str_or_empty(p, "config");
        row->source = str_or_empty(p, "source");
        row->machines = json_integer_value(json_object_get(p, "machineCount"));
        row->updated = json_integer_value(json_object_get(p, "updatedMachineCount"));
        row->attested = json_integer_value(json_object_get(p, "attestedMachineCount"));
        row->degraded = json_integer_value(json_object_get(p, "degradedMachineCount"));
        row->reported = when;
        row->stale = stale;
    }
    if (v->n == before) { /* never heard from, or no pool in its report */
        mcg_site_row *row = add_row(v, s);
        row->pool = mcg_strdup("");
        row->config = mcg_strdup("");
        row->source = mcg_strdup("");
        row->reported = when;
        row->stale = stale;
    }
}

int mcg_site_view_load(mcg_site_view *v, mcg_repo *r, int64_t now, mcg_err *err)
{
    mcg_model *m = NULL;
    mcg_diags d = {0};
    memset(v, 0, sizeof(*v));
    if (!mcg_gitops_verified_mark(r, NULL, v->source))
        return mcg_err_set(err, MCG_ENOTFOUND,
                           "nothing verified in this repository yet: render or fetch the source "
                           "first (mcgit render --repo R --trust F)");
    int rc = mcg_gitops_load_commit(&m, r, v->source, &d, err);
    for (size_t i = 0; !rc && i < m->nsites; i++) {
        json_t *doc = newest_record(r, m->sites[i].name);
        add_site(v, &m->sites[i], doc, now);
        json_decref(doc);
    }
    mcg_model_free(m);
    mcg_diags_free(&d);
    return rc;
}

void mcg_site_view_free(mcg_site_view *v)
{
    for (size_t i = 0; i < v->n; i++) {
        free(v->rows[i].site);
        free(v->rows[i].pool);
        free(v->rows[i].config);
        free(v->rows[i].source);
    }
    free(v->rows);
    memset(v, 0, sizeof(*v));
}
