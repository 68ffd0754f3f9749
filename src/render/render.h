/*
 * render — from the config repo's model to one rendered config per pool.
 *
 * Pure functions: select each pool's MachineConfigs (custom pools inherit
 * worker's), merge them Ignition-style in order, serialise the result as
 * canonical JSON and name it by the SHA-256 of those bytes:
 * rendered-<pool>-<first 32 hex digits>. The pool name is not hashed, so
 * pools with equal content share a hash.
 */
#ifndef MCG_RENDER_H
#define MCG_RENDER_H

#include "model/model.h"

#define MCG_RENDER_MAX_BYTES (1536u * 1024u) /* 1.5 MiB, as MCO */
#define MCG_HASH_HEX 32

typedef struct mcg_rendered_pool {
    char *pool;
    mcg_strv mcs;           /* MachineConfig names in merge order */
    mcg_ignition merged;    /* the merged config; defaults filled in */
    char *spec;             /* canonical spec.json bytes ({"config": ...}) */
    size_t spec_len;
    char hash[MCG_HASH_HEX + 1];
    char *name;             /* rendered-<pool>-<hash> */
    char *error;            /* non-NULL: this pool could not render (and the rest is unset) */
} mcg_rendered_pool;

typedef struct mcg_render {
    mcg_rendered_pool *pools; /* sorted by pool name */
    size_t n;
} mcg_render;

/*
 * Render every pool of a finished, valid model. Each pool that cannot render
 * (selects nothing, path conflicts, too large) gets .error set and a line in
 * diags; the others render normally. Returns 0 when every pool rendered,
 * MCG_EINVAL otherwise; *out is always set and owned by the caller.
 */
int mcg_render_model(mcg_render **out, const mcg_model *m, mcg_diags *diags);
void mcg_render_free(mcg_render *r);
const mcg_rendered_pool *mcg_render_pool(const mcg_render *r, const char *pool);

/* The MCs a pool merges, in merge order (worker's for custom pools first). */
void mcg_render_select(mcg_strv *out, const mcg_model *m, const mcg_pool *pool);

/* Merge src on top of dst, Ignition-style (field by field per key). */
void mcg_ignition_merge(mcg_ignition *dst, const mcg_ignition *src);

/* The rendered spec {"config": <Ignition 3.4.0>} as JSON (caller decrefs). */
json_t *mcg_render_spec_json(const mcg_ignition *ign);

/*
 * Canonical bytes and content name of a merged config. Fails with
 * MCG_EINVAL when the spec is over MCG_RENDER_MAX_BYTES.
 */
int mcg_render_name(const mcg_ignition *ign, const char *pool, char **spec, size_t *spec_len,
                    char hash[MCG_HASH_HEX + 1], char **name, mcg_err *err);

/*
 * Check a rendered config's bytes against its name: the name must be
 * rendered-<pool>-<hash> and hash the first 32 hex of SHA-256(spec).
 */
bool mcg_render_name_matches(const char *name, const char *spec, size_t spec_len);

#endif
