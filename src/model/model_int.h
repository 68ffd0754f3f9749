/*
 * model_int.h — shared inside model/: YAML → jansson conversion with a line
 * table, and the field readers every object parser uses.
 *
 * Objects are first converted to json_t (JSON is the YAML subset Kubernetes
 * tools speak) while a side table records the source line of every value;
 * validation then walks json_t and asks the table for lines.
 */
#ifndef MCG_MODEL_INT_H
#define MCG_MODEL_INT_H

#include "model/model.h"

/* Pointer → line table (open addressing). */
typedef struct mcg_linemap {
    const void **keys;
    int *lines;
    size_t cap;
    size_t n;
} mcg_linemap;

void mcg_linemap_put(mcg_linemap *lm, const void *key, int line);
/* The line recorded for key (a JSON value read from YAML), 0 when none. */
int mcg_linemap_get(const mcg_linemap *lm, const void *key);

/* Context for reporting: file name, line table, fallback line, sink. */
typedef struct mcg_pctx {
    const char *file;
    mcg_linemap *lines; /* may be NULL: every value reports base_line */
    int base_line;
    mcg_diags *diags;
    int errors;       /* problems added through this context */
    mcg_diags *warns; /* where warnings go; NULL: they are errors (a rendered spec) */
    /* An unknown key near a known one stays a warning (a rendered spec:
     * such a key was refused, or not, when the spec was rendered). */
    bool near_miss_warns;
} mcg_pctx;

int mcg_pctx_line(const mcg_pctx *c, const json_t *v);
void mcg_pctx_err(mcg_pctx *c, const json_t *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A warning at v's line; an error when the context has no warning sink. */
void mcg_pctx_warn(mcg_pctx *c, const json_t *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same two at a line (0: the file only). */
void mcg_pctx_err_line(mcg_pctx *c, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The line of a key of a mapping read from YAML (key as json_object_foreach
 * gives it), or else the line of its value v. */
int mcg_pctx_key_line(const mcg_pctx *c, const char *key, const json_t *v);

/*
 * Parse every YAML document in data. For each document calls fn with the
 * root converted to JSON. line_offset is added to every line (for YAML
 * embedded in another file). Problems go to diags. Returns the number of
 * YAML syntax errors.
 */
typedef void (*mcg_yaml_doc_fn)(json_t *root, mcg_linemap *lines, void *arg);
/* Deepest nesting of YAML collections accepted; deeper input ends the file. */
#define MCG_YAML_MAX_DEPTH 64

int mcg_yaml_each_doc(const char *file, const char *data, size_t len, int line_offset,
                      mcg_diags *diags, mcg_yaml_doc_fn fn, void *arg);

/*
 * Field readers. Each checks the type, reports "field 'x' must be ..." and
 * returns false when the field is present but wrong; *out is untouched when
 * the field is absent or null. name is the dotted path of the field, or of
 * the object holding it (".key" is then appended), for messages.
 */
bool mcg_get_str(mcg_pctx *c, const json_t *obj, const char *key, const char *name, char **out);
bool mcg_get_bool(mcg_pctx *c, const json_t *obj, const char *key, const char *name, mcg_tri *out);
bool mcg_get_int(mcg_pctx *c, const json_t *obj, const char *key, const char *name, bool *has,
                 int64_t *out);
/* Object/array or absent/null (returns NULL); reports a wrong type. */
json_t *mcg_get_obj(mcg_pctx *c, const json_t *obj, const char *key, const char *name);
json_t *mcg_get_arr(mcg_pctx *c, const json_t *obj, const char *key, const char *name);
/*
 * Report every key of obj not in allowed (NULL-terminated) as
 * "unknown field 'prefix.key'", or, when it is a near miss of an allowed key
 * (mcg_did_you_mean: within two edits, for keys longer than twice the
 * distance), as 'unknown field "key" (did you mean "allowed"?)'.
 */
void mcg_check_keys(mcg_pctx *c, const json_t *obj, const char *prefix, const char *const *allowed);
/* A document of sites/NAME.yaml (site.c), and the checks across sites once all are read. */
void mcg_parse_site(mcg_model *m, mcg_pctx *c, const json_t *root);
void mcg_model_finish_sites(mcg_model *m, mcg_diags *diags);
/* A pool's spec.rollout and spec.maintenanceWindows (rollout_spec.c), and their freeing. */
void mcg_parse_pool_rollout(mcg_pctx *c, const json_t *spec, mcg_pool *p);
void mcg_pool_rollout_free(mcg_pool *p);
/* Everything a pool owns (objects.c), for the model and a site's view of it. */
void mcg_pool_clear(mcg_pool *p);
/* spec.maintenanceWindows of a pool or a site: how many, into *out (NULL for none). */
size_t mcg_parse_windows(mcg_pctx *c, const json_t *spec, mcg_window **out);
void mcg_model_windows_free(mcg_window *w, size_t n);
/* spec.maxUnavailable of a pool or a site (objects.c): an integer, or "N%". */
void mcg_parse_max_unavailable(mcg_pctx *c, const json_t *spec, bool *set, bool *is_percent,
                               int64_t *value);
/* The same for Ignition's part, where an unknown key is a warning, as in
 * Ignition — except a near miss, which is an error all the same (a misspelt
 * `contents` would otherwise write an empty file) unless c->near_miss_warns. */
void mcg_check_keys_warn(mcg_pctx *c, const json_t *obj, const char *prefix,
                         const char *const *allowed);
/* True when v is absent, null, false, "", 0, [] or {}. */
bool mcg_json_is_empty(const json_t *v);
/* The same, where an object or list holding only empty values is empty too
 * (`security: {tls: {}}`). */
bool mcg_json_is_deep_empty(const json_t *v);

/*
 * Validate an Ignition config (3.0-3.5, or 2.0-2.2 translated to 3.x as MCO
 * translates it) into out. Returns 0 or MCG_EINVAL (problems in c).
 */
int mcg_ignition_from_json(mcg_pctx *c, const json_t *cfg, const char *prefix, mcg_ignition *out);
/*
 * The MachineConfig fields beside config (kernelArguments, extensions, fips,
 * kernelType, osImageURL, baseOSExtensionsContainerImage) of spec into out.
 */
void mcg_osspec_from_json(mcg_pctx *c, const json_t *spec, mcg_osspec *out);
/*
 * What a MachineConfig may not hold because the host tools would misread it
 * (checked where MachineConfigs are read, not in rendered specs): kernel
 * arguments with a character GRUB's script parser interprets (;|&{}<>'$) or
 * a leading '#'; image references starting with '-'; an osImageURL without
 * a digest is a warning.
 */
void mcg_osspec_check_host(mcg_pctx *c, const json_t *spec, const mcg_osspec *o);
void mcg_osspec_free(mcg_osspec *o);
/*
 * Translate an Ignition 2.x config into a 3.x one (a new tree sharing
 * cfg's values, so their lines stay known). NULL, with problems in c, when
 * it cannot be translated.
 */
json_t *mcg_ignition_translate_v2(mcg_pctx *c, const json_t *cfg);

#endif
