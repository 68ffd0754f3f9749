/*
 * site.c — sites/NAME.yaml: a site of the fleet, declared in the config
 * repo and so signed, reviewed and rotated like every other change.
 *
 *   apiVersion: mcgit.io/v1
 *   kind: Site
 *   metadata: {name: NAME}              the file's name without .yaml
 *   spec:
 *     statusKey: ssh-ed25519 AAAA... c  the key the site signs its status with
 *     pools: [worker]                   optional: the pools it runs (default all)
 *     maxReportAge: 24h                 optional: stale after this long without a report
 *     maxUnavailable: 1                 optional: in place of each pool's, at the site
 *     maintenanceWindows: [...]         optional: in place of each pool's, at the site
 *     maxConcurrentDisruptions: 2       optional: in place of mcgit.yaml's, at the site
 *
 * The key is checked here for its shape (a type and base64 that decodes to
 * a blob naming the same type); trust/ decides whether it verifies anything.
 */
#include "model/model_int.h"

#include <stdlib.h>
#include <string.h>

#define SITE_MAX_REPORT_AGE (366 * 24 * 3600)
#define SITE_DEFAULT_REPORT_AGE (24 * 3600)

/* "type base64 [comment]" whose blob starts with the string type. */
static bool key_line_ok(const char *s)
{
    const char *sp = strchr(s, ' ');
    if (!sp || sp == s)
        return false;
    size_t tl = (size_t)(sp - s);
    const char *b64 = sp + 1;
    size_t bl = strcspn(b64, " ");
    mcg_buf b = MCG_BUF_INIT;
    bool ok = false;
    if (bl && mcg_base64_decode(b64, bl, &b, NULL) == 0 && b.len >= 4 + tl) {
        const unsigned char *blob = (const unsigned char *)b.ptr;
        size_t l =
            ((size_t)blob[0] << 24) | ((size_t)blob[1] << 16) | ((size_t)blob[2] << 8) | blob[3];
        ok = l == tl && !memcmp(blob + 4, s, tl);
    }
    mcg_buf_free(&b);
    return ok;
}

/* The site's name from its file: sites/NAME.yaml -> NAME (caller frees). */
static char *name_of_file(const char *file)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t n = strcspn(base, ".");
    return mcg_strndup(base, n);
}

static void parse_site_spec(mcg_pctx *c, const json_t *spec, mcg_site *s)
{
    static const char *const keys[] = {"statusKey",
                                       "pools",
                                       "maxReportAge",
                                       "maxUnavailable",
                                       "maintenanceWindows",
                                       "maxConcurrentDisruptions",
                                       NULL};
    mcg_check_keys(c, spec, "spec", keys);
    if (mcg_get_str(c, spec, "statusKey", "spec.statusKey", &s->status_key) && !s->status_key)
        mcg_pctx_err(c, spec, "spec.statusKey is required (the site's OpenSSH public key line)");
    else if (s->status_key && !key_line_ok(s->status_key))
        mcg_pctx_err(c, json_object_get(spec, "statusKey"),
                     "spec.statusKey is not an OpenSSH public key line ('TYPE BASE64 [comment]')");
    json_t *pools = mcg_get_arr(c, spec, "pools", "spec.pools");
    size_t i;
    json_t *p;
    json_array_foreach(pools, i, p) {
        if (!json_is_string(p) || !*json_string_value(p))
            mcg_pctx_err(c, p, "spec.pools[%zu] must be a pool name", i);
        else
            mcg_strv_push(&s->pools, json_string_value(p));
    }
    char *age = NULL;
    s->max_report_age = SITE_DEFAULT_REPORT_AGE;
    if (mcg_get_str(c, spec, "maxReportAge", "spec.maxReportAge", &age) && age) {
        int64_t v = mcg_parse_duration(age);
        if (v <= 0 || v > SITE_MAX_REPORT_AGE)
            mcg_pctx_err(c, json_object_get(spec, "maxReportAge"),
                         "spec.maxReportAge '%s' is not a duration from 1s to 8784h", age);
        else
            s->max_report_age = v;
    }
    free(age);
    mcg_parse_max_unavailable(c, spec, &s->max_unavailable_set, &s->max_unavailable_is_percent,
                              &s->max_unavailable);
    bool has = false;
    if (mcg_get_int(c, spec, "maxConcurrentDisruptions", "spec.maxConcurrentDisruptions", &has,
                    &s->max_disruptions) &&
        has && s->max_disruptions < 1)
        mcg_pctx_err(c, json_object_get(spec, "maxConcurrentDisruptions"),
                     "spec.maxConcurrentDisruptions must be at least 1 (leave it out for "
                     "mcgit.yaml's)");
    s->windows_set = json_is_array(json_object_get(spec, "maintenanceWindows"));
    s->nwindows = mcg_parse_windows(c, spec, &s->windows);
}

void mcg_parse_site(mcg_model *m, mcg_pctx *c, const json_t *root)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", NULL};
    mcg_site s = {.loc = {c->file, mcg_pctx_line(c, root)}};
    char *api = NULL, *kind = NULL, *want = name_of_file(c->file);
    mcg_check_keys(c, root, "", top);
    mcg_get_str(c, root, "apiVersion", "apiVersion", &api);
    mcg_get_str(c, root, "kind", "kind", &kind);
    json_t *meta = mcg_get_obj(c, root, "metadata", "metadata");
    json_t *spec = mcg_get_obj(c, root, "spec", "spec");
    if (!api || strcmp(api, MCG_API_SITE))
        mcg_pctx_err(c, root, "apiVersion must be %s", MCG_API_SITE);
    else if (!kind || strcmp(kind, "Site"))
        mcg_pctx_err(c, root, "kind must be Site (sites/ holds sites only)");
    else if (!meta || !mcg_get_str(c, meta, "name", "metadata.name", &s.name) || !s.name)
        mcg_pctx_err(c, root, "metadata.name is required");
    else if (strcmp(s.name, want))
        mcg_pctx_err(c, json_object_get(meta, "name"),
                     "metadata.name '%s' must be the file's name '%s'", s.name, want);
    else if (!spec)
        mcg_pctx_err(c, root, "spec is required (spec.statusKey)");
    else {
        size_t before = c->diags->count;
        parse_site_spec(c, spec, &s);
        if (c->diags->count == before) {
            m->sites = mcg_realloc(m->sites, (m->nsites + 1) * sizeof(*m->sites));
            m->sites[m->nsites++] = s; /* transferred */
            memset(&s, 0, sizeof(s));
        }
    }
    mcg_model_site_clear(&s);
    free(api);
    free(kind);
    free(want);
}

void mcg_model_site_clear(mcg_site *s)
{
    free(s->name);
    free(s->status_key);
    mcg_strv_free(&s->pools);
    mcg_model_windows_free(s->windows, s->nwindows);
    memset(s, 0, sizeof(*s));
}

static int site_cmp(const void *a, const void *b)
{
    return strcmp(((const mcg_site *)a)->name, ((const mcg_site *)b)->name);
}

void mcg_model_finish_sites(mcg_model *m, mcg_diags *diags)
{
    if (m->nsites > 1)
        qsort(m->sites, m->nsites, sizeof(*m->sites), site_cmp);
    for (size_t i = 0; i < m->nsites; i++) {
        const mcg_site *s = &m->sites[i];
        if (i && !strcmp(s->name, m->sites[i - 1].name))
            mcg_diags_add(diags, "%s:%d: site '%s' is already defined at %s:%d", s->loc.file,
                          s->loc.line, s->name, m->sites[i - 1].loc.file, m->sites[i - 1].loc.line);
        for (size_t k = 0; k < s->pools.n && m->npools && !m->pools_refused; k++)
            if (!mcg_model_pool(m, s->pools.v[k]))
                mcg_diags_add(diags, "%s:%d: site '%s': spec.pools names '%s', which is no pool",
                              s->loc.file, s->loc.line, s->name, s->pools.v[k]);
    }
}

const mcg_site *mcg_model_find_site(const mcg_model *m, const char *name)
{
    for (size_t i = 0; m && i < m->nsites; i++)
        if (!strcmp(m->sites[i].name, name))
            return &m->sites[i];
    return NULL;
}

/* A copy of n windows (the zone names copied). */
static mcg_window *windows_dup(const mcg_window *w, size_t n)
{
    mcg_window *out = n ? mcg_calloc(n, sizeof(*out)) : NULL;
    for (size_t i = 0; i < n; i++) {
        out[i] = w[i];
        out[i].tz = w[i].tz ? mcg_strdup(w[i].tz) : NULL;
    }
    return out;
}

/* The site's maxUnavailable and windows in place of pool p's, where it gives them. */
static void site_policy(mcg_pool *p, const mcg_site *s)
{
    if (s->max_unavailable_set) {
        p->max_unavailable_set = true;
        p->max_unavailable_is_percent = s->max_unavailable_is_percent;
        p->max_unavailable = s->max_unavailable;
    }
    if (s->windows_set) {
        mcg_model_windows_free(p->windows, p->nwindows);
        p->windows = windows_dup(s->windows, s->nwindows);
        p->nwindows = s->nwindows;
    }
}

const mcg_site *mcg_model_apply_site(mcg_model *m, const char *name)
{
    const mcg_site *s = mcg_model_find_site(m, name);
    if (!s)
        return NULL;
    size_t kept = 0;
    for (size_t i = 0; i < m->npools; i++) {
        bool runs = !s->pools.n;
        for (size_t k = 0; k < s->pools.n && !runs; k++)
            runs = !strcmp(s->pools.v[k], m->pools[i].name);
        if (!runs) {
            mcg_pool_clear(&m->pools[i]);
            continue;
        }
        site_policy(&m->pools[i], s);
        m->pools[kept++] = m->pools[i];
    }
    m->npools = kept;
    if (s->max_disruptions > 0)
        m->settings.max_disruptions = s->max_disruptions;
    return s;
}
