/*
 * rollout_spec.c — a pool's safe-rollout settings: spec.rollout (canary,
 * canaryPause, healthChecks, healthTimeout, onFailure) and
 * spec.maintenanceWindows (days, start, duration, timeZone). Pools written
 * for MCO have neither, and roll out exactly as MCO's do.
 *
 * Every value is checked here, with its file and line: a unit that is not a
 * unit name, a relative command, a window with no days, a duration over
 * 24 h. Whether a time zone exists needs the host's time zone database, so
 * its caller asks (mcg_model_check_zones), keeping this module free of I/O.
 */
#include "model/model_int.h"

#include <stdlib.h>
#include <string.h>

#define DAY_MINUTES 1440
#define MAX_TIMEOUT (24 * 3600)

void mcg_pool_rollout_free(mcg_pool *p)
{
    for (size_t i = 0; i < p->rollout.nchecks; i++) {
        free(p->rollout.checks[i].name);
        free(p->rollout.checks[i].unit);
        mcg_strv_free(&p->rollout.checks[i].command);
    }
    free(p->rollout.checks);
    mcg_model_windows_free(p->windows, p->nwindows);
    memset(&p->rollout, 0, sizeof(p->rollout));
    p->windows = NULL;
    p->nwindows = 0;
}

/* A duration field (`10m`, `1h30m`) into *out (seconds), at most max; false when wrong. */
static bool get_duration(mcg_pctx *c, const json_t *obj, const char *key, const char *name,
                         int64_t max, int64_t *out)
{
    char *s = NULL;
    if (!mcg_get_str(c, obj, key, name, &s) || !s)
        return s == NULL;
    int64_t v = mcg_parse_duration(s);
    bool ok = v >= 0 && v <= max;
    if (v < 0)
        mcg_pctx_err(c, json_object_get(obj, key),
                     "%s '%s' is not a duration like 5m, 90s or 1h30m", name, s);
    else if (v > max)
        mcg_pctx_err(c, json_object_get(obj, key), "%s '%s' is over %lld h", name, s,
                     (long long)(max / 3600));
    else
        *out = v;
    free(s);
    return ok;
}

/* One of spec.rollout.healthChecks: a name, and a unit or an absolute command. */
static void parse_check(mcg_pctx *c, const json_t *v, size_t i, mcg_health_check *hc)
{
    char name[64];
    snprintf(name, sizeof(name), "spec.rollout.healthChecks[%zu]", i);
    if (!json_is_object(v)) {
        mcg_pctx_err(c, v, "%s must be a mapping with name and unit or command", name);
        return;
    }
    static const char *const keys[] = {"name", "unit", "command", NULL};
    mcg_check_keys(c, v, name, keys);
    mcg_get_str(c, v, "name", name, &hc->name);
    if (!hc->name || !mcg_name_is_dns_label(hc->name))
        mcg_pctx_err(c, v, "%s.name must be a DNS label (lower case letters, digits, '-')", name);
    mcg_get_str(c, v, "unit", name, &hc->unit);
    if (hc->unit && !mcg_name_is_unit(hc->unit))
        mcg_pctx_err(c, json_object_get(v, "unit"), "%s.unit '%s' is not a systemd unit name", name,
                     hc->unit);
    json_t *cmd = mcg_get_arr(c, v, "command", name);
    size_t k;
    json_t *w;
    json_array_foreach(cmd, k, w) {
        if (!json_is_string(w) || !*json_string_value(w) || strchr(json_string_value(w), '\n')) {
            mcg_pctx_err(c, w, "%s.command[%zu] must be a non-empty string on one line", name, k);
            continue;
        }
        if (strlen(json_string_value(w)) != json_string_length(w)) { /* never truncated */
            mcg_pctx_err(c, w, "%s.command[%zu] contains a NUL byte", name, k);
            continue;
        }
        mcg_strv_push(&hc->command, json_string_value(w));
    }
    if (hc->command.n && hc->command.v[0][0] != '/')
        mcg_pctx_err(c, cmd, "%s.command must start with an absolute path, not '%s'", name,
                     hc->command.v[0]);
    if (!hc->unit == !hc->command.n)
        mcg_pctx_err(c, v, "%s needs exactly one of unit and command", name);
}

static void parse_checks(mcg_pctx *c, const json_t *ro, mcg_rollout_spec *r)
{
    json_t *arr = mcg_get_arr(c, ro, "healthChecks", "spec.rollout");
    if (!arr || !json_array_size(arr))
        return;
    r->checks = mcg_calloc(json_array_size(arr), sizeof(*r->checks));
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        parse_check(c, v, i, &r->checks[r->nchecks]);
        for (size_t k = 0; k < r->nchecks; k++)
            if (r->checks[r->nchecks].name && r->checks[k].name &&
                !strcmp(r->checks[k].name, r->checks[r->nchecks].name))
                mcg_pctx_err(c, v, "spec.rollout.healthChecks: '%s' is named twice",
                             r->checks[k].name);
        r->nchecks++;
    }
}

static void parse_rollout(mcg_pctx *c, const json_t *spec, mcg_rollout_spec *r)
{
    json_t *ro = mcg_get_obj(c, spec, "rollout", "spec");
    if (!ro)
        return;
    static const char *const keys[] = {"canary",        "canaryPause", "healthChecks",
                                       "healthTimeout", "onFailure",   NULL};
    mcg_check_keys(c, ro, "spec.rollout", keys);
    r->present = true;
    r->health_timeout = 300;
    bool has = false;
    if (mcg_get_int(c, ro, "canary", "spec.rollout", &has, &r->canary) && has && r->canary < 0)
        mcg_pctx_err(c, json_object_get(ro, "canary"), "spec.rollout.canary must not be negative");
    get_duration(c, ro, "canaryPause", "spec.rollout.canaryPause", 7 * 24 * 3600, &r->canary_pause);
    get_duration(c, ro, "healthTimeout", "spec.rollout.healthTimeout", MAX_TIMEOUT,
                 &r->health_timeout);
    if (r->health_timeout == 0)
        mcg_pctx_err(c, json_object_get(ro, "healthTimeout"),
                     "spec.rollout.healthTimeout must be more than 0s");
    char *of = NULL;
    mcg_get_str(c, ro, "onFailure", "spec.rollout.onFailure", &of);
    if (of && strcmp(of, "Revert") && strcmp(of, "Halt"))
        mcg_pctx_err(c, json_object_get(ro, "onFailure"),
                     "spec.rollout.onFailure must be Revert or Halt, not '%s'", of);
    r->halt_only = of && !strcmp(of, "Halt");
    free(of);
    parse_checks(c, ro, r);
}

/* "Mon".."Sun" (any case) into a bit (0 Sunday); -1 when unknown. */
static int day_bit(const char *s)
{
    static const char *const names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};
    for (int i = 0; i < 7; i++)
        if (strlen(s) == 3 && !strncasecmp(s, names[i], 3))
            return i;
    return -1;
}

/* "HH:MM" (24-hour) into minutes; -1 when malformed. */
static int parse_hhmm(const char *s)
{
    if (strlen(s) != 5 || s[2] != ':')
        return -1;
    for (int i = 0; i < 5; i++)
        if (i != 2 && (s[i] < '0' || s[i] > '9'))
            return -1;
    int h = (s[0] - '0') * 10 + (s[1] - '0'), m = (s[3] - '0') * 10 + (s[4] - '0');
    return h < 24 && m < 60 ? h * 60 + m : -1;
}

static void parse_window(mcg_pctx *c, const json_t *v, size_t i, mcg_window *w)
{
    char name[64];
    snprintf(name, sizeof(name), "spec.maintenanceWindows[%zu]", i);
    if (!json_is_object(v)) {
        mcg_pctx_err(c, v, "%s must be a mapping with days, start and duration", name);
        return;
    }
    static const char *const keys[] = {"days", "start", "duration", "timeZone", NULL};
    mcg_check_keys(c, v, name, keys);
    w->line = mcg_pctx_line(c, v);
    json_t *days = mcg_get_arr(c, v, "days", name);
    size_t k;
    json_t *d;
    json_array_foreach(days, k, d) {
        int b = json_is_string(d) ? day_bit(json_string_value(d)) : -1;
        if (b < 0)
            mcg_pctx_err(c, d, "%s.days[%zu] must be one of Mon, Tue, Wed, Thu, Fri, Sat, Sun",
                         name, k);
        else
            w->days |= 1u << b;
    }
    if (!days || !json_array_size(days))
        mcg_pctx_err(c, v, "%s has no days", name);
    char *start = NULL;
    mcg_get_str(c, v, "start", name, &start);
    w->start = start ? parse_hhmm(start) : -1;
    if (w->start < 0)
        mcg_pctx_err(c, v, "%s.start must be a time like \"02:00\" (24-hour)", name);
    free(start);
    int64_t dur = -1;
    char dn[80];
    snprintf(dn, sizeof(dn), "%s.duration", name);
    get_duration(c, v, "duration", dn, DAY_MINUTES * 60, &dur);
    if (dur == 0 || !json_object_get(v, "duration"))
        mcg_pctx_err(c, v, "%s.duration must be given, more than 0 and at most 24h", name);
    w->duration = dur > 0 ? (int)((dur + 59) / 60) : 0;
    mcg_get_str(c, v, "timeZone", name, &w->tz);
    if (!w->tz)
        w->tz = mcg_strdup("UTC");
    else if (!*w->tz || w->tz[0] == '/' || strstr(w->tz, ".."))
        mcg_pctx_err(c, json_object_get(v, "timeZone"), "%s.timeZone '%s' is not a time zone name",
                     name, w->tz);
}

void mcg_model_windows_free(mcg_window *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(w[i].tz);
    free(w);
}

size_t mcg_parse_windows(mcg_pctx *c, const json_t *spec, mcg_window **out)
{
    json_t *arr = mcg_get_arr(c, spec, "maintenanceWindows", "spec");
    *out = NULL;
    if (!arr || !json_array_size(arr))
        return 0;
    *out = mcg_calloc(json_array_size(arr), sizeof(**out));
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
        parse_window(c, v, i, &(*out)[i]);
    return json_array_size(arr);
}

void mcg_parse_pool_rollout(mcg_pctx *c, const json_t *spec, mcg_pool *p)
{
    parse_rollout(c, spec, &p->rollout);
    p->nwindows = mcg_parse_windows(c, spec, &p->windows);
}

/* Each window's zone of file, known to the host's database. */
static void check_zones(const mcg_window *w, size_t n, const char *file,
                        bool (*known)(const char *tz), mcg_diags *diags)
{
    for (size_t k = 0; k < n; k++)
        if (w[k].tz && !known(w[k].tz))
            mcg_diags_add(diags,
                          "%s:%d: spec.maintenanceWindows[%zu].timeZone: unknown time zone '%s'",
                          file, w[k].line, k, w[k].tz);
}

void mcg_model_check_zones(const mcg_model *m, bool (*known)(const char *tz), mcg_diags *diags)
{
    for (size_t i = 0; i < m->npools; i++)
        check_zones(m->pools[i].windows, m->pools[i].nwindows, m->pools[i].loc.file, known, diags);
    for (size_t i = 0; i < m->nsites; i++)
        check_zones(m->sites[i].windows, m->sites[i].nwindows, m->sites[i].loc.file, known, diags);
}
