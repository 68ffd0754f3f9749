/*
 * journal.c — journal.json, the update in progress, typed.
 *
 * Written (atomically, synced) before the first change and again at every
 * phase change, so a restarted agent carries on where the update was. It
 * is read once into an mcg_journal and checked whole before anything is
 * done with it: its "version" first (a journal of a version this agent does
 * not know is refused, never resumed), then every key — none missing, none
 * unknown, each of its type — the phase, and each OS step's kind. Nothing
 * else reads or writes its JSON: the phases work on the struct, and it is
 * written back from the struct (mcg_agent_journal_dump).
 *
 * The format (version 1), keys sorted:
 *   version 1, target NAME, from NAME|null, phase apply|os|actions|reboot|
 *   health|finish, force, cordoned, reboot, drain, daemonReload (booleans),
 *   backups, restores, mkdirs, reload, restart (lists of strings),
 *   os [{field, run|write+data|remove|shadow|record+bootc?|restore}],
 *   osStep N; once set: bootId, healthDeadline (unix seconds), revert
 *   (why the update goes back), installed (a first config's note).
 */
#include "agent/agent_int.h"

#include <stdlib.h>
#include <string.h>

#define JOURNAL_FILE "journal.json"

static const char *const phase_names[MCG_PHASE_COUNT] = {"apply",  "os",     "actions",
                                                         "reboot", "health", "finish"};

static const char *mcg_agent_phase_name(mcg_phase p)
{
    return p < MCG_PHASE_COUNT ? phase_names[p] : "?";
}

void mcg_agent_journal_clear(mcg_journal *j)
{
    free(j->target);
    free(j->from);
    mcg_strv_free(&j->reload);
    mcg_strv_free(&j->restart);
    mcg_plan_disk_free(&j->disk);
    mcg_osstep_free(&j->os);
    free(j->boot_id);
    free(j->revert);
    free(j->installed);
    memset(j, 0, sizeof(*j));
}

/* ------------------------------------------------------------ reading */

typedef enum { K_STR, K_STR_NULL, K_BOOL, K_INT, K_STRV, K_LIST } key_type;

static const struct journal_key {
    const char *name;
    key_type type;
    bool required;
} journal_keys[] = {
    {"version", K_INT, true},  {"target", K_STR, true},     {"from", K_STR_NULL, true},
    {"phase", K_STR, true},    {"force", K_BOOL, true},     {"cordoned", K_BOOL, true},
    {"reboot", K_BOOL, true},  {"drain", K_BOOL, true},     {"daemonReload", K_BOOL, true},
    {"backups", K_STRV, true}, {"restores", K_STRV, true},  {"mkdirs", K_STRV, true},
    {"reload", K_STRV, true},  {"restart", K_STRV, true},   {"os", K_LIST, true},
    {"osStep", K_INT, true},   {"bootId", K_STR, false},    {"healthDeadline", K_INT, false},
    {"revert", K_STR, false},  {"installed", K_STR, false},
};
#define NKEYS (sizeof(journal_keys) / sizeof(journal_keys[0]))

static const char *const type_names[] = {"a string",   "a string or null",  "true or false",
                                         "an integer", "a list of strings", "a list"};

static bool type_ok(const json_t *v, key_type t)
{
    size_t i;
    json_t *w;
    switch (t) {
    case K_STR:
        return json_is_string(v);
    case K_STR_NULL:
        return json_is_string(v) || json_is_null(v);
    case K_BOOL:
        return json_is_boolean(v);
    case K_INT:
        return json_is_integer(v);
    case K_STRV:
        if (!json_is_array(v))
            return false;
        json_array_foreach(v, i, w) {
            if (!json_is_string(w))
                return false;
        }
        return true;
    case K_LIST:
        return json_is_array(v);
    }
    return false;
}

/* Every key known and of its type, every required key there. */
static int check_keys(const json_t *o, mcg_err *err)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        size_t i = 0;
        while (i < NKEYS && strcmp(journal_keys[i].name, k) != 0)
            i++;
        if (i == NKEYS)
            return mcg_err_set(err, MCG_EINVAL, "state journal.json: unknown key '%s'", k);
        if (!type_ok(v, journal_keys[i].type))
            return mcg_err_set(err, MCG_EINVAL, "state journal.json: '%s' must be %s", k,
                               type_names[journal_keys[i].type]);
    }
    for (size_t i = 0; i < NKEYS; i++)
        if (journal_keys[i].required && !json_object_get(o, journal_keys[i].name))
            return mcg_err_set(err, MCG_EINVAL, "state journal.json: no '%s'",
                               journal_keys[i].name);
    return 0;
}

/* The version, first: only MCG_JOURNAL_VERSION is known. */
static int check_version(const json_t *o, mcg_err *err)
{
    const json_t *v = json_object_get(o, "version");
    if (!v)
        return mcg_err_set(err, MCG_EINVAL, "state journal.json: no 'version'");
    if (!json_is_integer(v))
        return mcg_err_set(err, MCG_EINVAL, "state journal.json: 'version' must be an integer");
    if (json_integer_value(v) != MCG_JOURNAL_VERSION)
        return mcg_err_set(err, MCG_EINVAL,
                           "state journal.json: version %lld is not one this agent knows (it "
                           "knows %d)",
                           (long long)json_integer_value(v), MCG_JOURNAL_VERSION);
    return 0;
}

static const char *const step_kinds[] = {"run", "write", "remove", "shadow", "record", "restore"};

/* OS step k of the journal, checked: a field, exactly one known kind, and its companions. */
static int read_step(mcg_ossteps *out, const json_t *s, size_t k, mcg_err *err)
{
    const char *field = json_string_value(json_object_get(s, "field")), *key;
    int kind = -1;
    json_t *v;
    if (!json_is_object(s) || !field)
        return mcg_err_set(err, MCG_EINVAL, "state journal.json: os[%zu] has no field", k);
    json_object_foreach((json_t *)s, key, v) {
        int i = 0;
        while (i < 6 && strcmp(step_kinds[i], key) != 0)
            i++;
        if (i < 6 && json_is_string(v) && kind < 0)
            kind = i;
        else if (strcmp(key, "field") && !(!strcmp(key, "data") && json_is_string(v)) &&
                 !(!strcmp(key, "bootc") && json_is_boolean(v)))
            return mcg_err_set(err, MCG_EINVAL, "state journal.json: os[%zu] (%s): '%s' is %s", k,
                               field, key,
                               i < 6 ? "a second kind or not a string"
                                     : "not a kind of step this agent knows, or mistyped");
    }
    const char *data = json_string_value(json_object_get(s, "data"));
    if (kind < 0)
        return mcg_err_set(err, MCG_EINVAL, "state journal.json: os[%zu] (%s): no kind of step", k,
                           field);
    if ((kind == MCG_OSSTEP_WRITE) != (data != NULL) ||
        (json_object_get(s, "bootc") && kind != MCG_OSSTEP_RECORD))
        return mcg_err_set(err, MCG_EINVAL, "state journal.json: os[%zu] (%s): malformed %s step",
                           k, field, step_kinds[kind]);
    mcg_osstep_add(out, (mcg_osstep_kind)kind, field,
                   json_string_value(json_object_get(s, step_kinds[kind])), data,
                   json_is_true(json_object_get(s, "bootc")));
    return 0;
}

static void read_strv(mcg_strv *out, const json_t *arr)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        mcg_strv_push(out, json_string_value(v));
    }
}

static char *dup_or_null(const json_t *v)
{
    return json_is_string(v) ? mcg_strdup(json_string_value(v)) : NULL;
}

/* The checked object into *out: names, the phase, the lists, the OS steps. */
static int read_fields(mcg_journal *out, const json_t *o, mcg_err *err)
{
    out->target = dup_or_null(json_object_get(o, "target"));
    out->from = dup_or_null(json_object_get(o, "from"));
    if (!mcg_name_is_dns_subdomain(out->target) ||
        (out->from && !mcg_name_is_dns_subdomain(out->from)))
        return mcg_err_set(err, MCG_EINVAL, "state journal.json: target or from is not a name");
    const char *phase = json_string_value(json_object_get(o, "phase"));
    out->phase = MCG_PHASE_COUNT;
    for (int k = 0; k < MCG_PHASE_COUNT; k++)
        if (!strcmp(phase, phase_names[k]))
            out->phase = (mcg_phase)k;
    if (out->phase == MCG_PHASE_COUNT)
        return mcg_err_set(err, MCG_EINVAL, "state journal.json: unknown phase '%s'", phase);
    out->force = json_is_true(json_object_get(o, "force"));
    out->cordoned = json_is_true(json_object_get(o, "cordoned"));
    out->reboot = json_is_true(json_object_get(o, "reboot"));
    out->drain = json_is_true(json_object_get(o, "drain"));
    out->daemon_reload = json_is_true(json_object_get(o, "daemonReload"));
    read_strv(&out->disk.backups, json_object_get(o, "backups"));
    read_strv(&out->disk.restores, json_object_get(o, "restores"));
    read_strv(&out->disk.mkdirs, json_object_get(o, "mkdirs"));
    mcg_strv_sort(&out->disk.backups);
    mcg_strv_sort(&out->disk.restores);
    mcg_strv_sort(&out->disk.mkdirs);
    read_strv(&out->reload, json_object_get(o, "reload"));
    read_strv(&out->restart, json_object_get(o, "restart"));
    size_t i;
    json_t *s;
    int rc;
    json_array_foreach(json_object_get(o, "os"), i, s) {
        if ((rc = read_step(&out->os, s, i, err)) != 0)
            return rc;
    }
    json_int_t step = json_integer_value(json_object_get(o, "osStep"));
    if (step < 0 || (size_t)step > out->os.n)
        return mcg_err_set(err, MCG_EINVAL, "state journal.json: osStep %lld of %zu steps",
                           (long long)step, out->os.n);
    out->os_step = (size_t)step;
    out->boot_id = dup_or_null(json_object_get(o, "bootId"));
    out->has_deadline = json_object_get(o, "healthDeadline") != NULL;
    out->health_deadline = (int64_t)json_integer_value(json_object_get(o, "healthDeadline"));
    out->revert = dup_or_null(json_object_get(o, "revert"));
    out->installed = dup_or_null(json_object_get(o, "installed"));
    return 0;
}

int mcg_agent_journal_parse(mcg_journal *out, const char *data, size_t len, mcg_err *err)
{
    memset(out, 0, sizeof(*out));
    json_t *o = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
    int rc = 0;
    if (!json_is_object(o))
        rc = mcg_err_set(err, MCG_EINVAL, "state journal.json: not a JSON object");
    else if ((rc = check_version(o, err)) == 0 && (rc = check_keys(o, err)) == 0)
        rc = read_fields(out, o, err);
    json_decref(o);
    if (rc)
        mcg_agent_journal_clear(out);
    return rc;
}

/* ------------------------------------------------------------ writing */

static json_t *strv_json(const mcg_strv *v)
{
    json_t *a = json_array();
    for (size_t i = 0; i < v->n; i++)
        json_array_append_new(a, json_string(v->v[i]));
    return a;
}

static json_t *steps_json(const mcg_ossteps *os)
{
    json_t *a = json_array();
    for (size_t i = 0; i < os->n; i++) {
        const mcg_osstep *s = &os->v[i];
        json_t *o = json_pack("{s:s,s:s}", "field", s->field, step_kinds[s->kind], s->arg);
        if (s->kind == MCG_OSSTEP_WRITE)
            json_object_set_new(o, "data", json_string(s->data ? s->data : ""));
        if (s->kind == MCG_OSSTEP_RECORD)
            json_object_set_new(o, "bootc", json_boolean(s->bootc));
        json_array_append_new(a, o);
    }
    return a;
}

char *mcg_agent_journal_dump(const mcg_journal *j)
{
    json_t *o = json_object();
    json_object_set_new(o, "version", json_integer(MCG_JOURNAL_VERSION));
    json_object_set_new(o, "target", json_string(j->target));
    json_object_set_new(o, "from", j->from ? json_string(j->from) : json_null());
    json_object_set_new(o, "phase", json_string(mcg_agent_phase_name(j->phase)));
    json_object_set_new(o, "force", json_boolean(j->force));
    json_object_set_new(o, "cordoned", json_boolean(j->cordoned));
    json_object_set_new(o, "reboot", json_boolean(j->reboot));
    json_object_set_new(o, "drain", json_boolean(j->drain));
    json_object_set_new(o, "daemonReload", json_boolean(j->daemon_reload));
    json_object_set_new(o, "backups", strv_json(&j->disk.backups));
    json_object_set_new(o, "restores", strv_json(&j->disk.restores));
    json_object_set_new(o, "mkdirs", strv_json(&j->disk.mkdirs));
    json_object_set_new(o, "reload", strv_json(&j->reload));
    json_object_set_new(o, "restart", strv_json(&j->restart));
    json_object_set_new(o, "os", steps_json(&j->os));
    json_object_set_new(o, "osStep", json_integer((json_int_t)j->os_step));
    if (j->boot_id)
        json_object_set_new(o, "bootId", json_string(j->boot_id));
    if (j->has_deadline)
        json_object_set_new(o, "healthDeadline", json_integer((json_int_t)j->health_deadline));
    if (j->revert)
        json_object_set_new(o, "revert", json_string(j->revert));
    if (j->installed)
        json_object_set_new(o, "installed", json_string(j->installed));
    char *s = json_dumps(o, JSON_SORT_KEYS | JSON_INDENT(1));
    json_decref(o);
    return s;
}

int mcg_agent_journal_read(mcg_agent *a, mcg_journal *out, mcg_err *err)
{
    char *data;
    size_t len;
    memset(out, 0, sizeof(*out));
    int rc = mcg_agent_state_read(a, JOURNAL_FILE, &data, &len, err);
    if (rc)
        return rc;
    rc = mcg_agent_journal_parse(out, data, len, err);
    free(data);
    return rc;
}

int mcg_agent_journal_write(mcg_agent *a, const mcg_journal *j, mcg_err *err)
{
    char *s = mcg_agent_journal_dump(j);
    int rc = mcg_agent_state_write(a, JOURNAL_FILE, s, strlen(s), err);
    free(s);
    return rc;
}

void mcg_agent_journal_drop(mcg_agent *a)
{
    mcg_agent_state_remove(a, JOURNAL_FILE);
}
