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
    mcg_strv mcs;        /* MachineConfig names in merge order */
    mcg_ignition merged; /* the merged config; defaults filled in */
    char *spec;          /* canonical spec.json bytes ({"config": ...}) */
    size_t spec_len;
    char hash[MCG_HASH_HEX + 1];
    char *name;  /* rendered-<pool>-<hash> */
    char *error; /* non-NULL: this pool could not render (and the rest is unset) */
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

/* ------------------------------------------------------------ first boot (firstboot.c) */

/* The Ignition config of a rendered spec (its "config"), as canonical JSON. */
int mcg_render_ignition_doc(const char *spec, size_t len, mcg_buf *out, mcg_err *err);
/*
 * A rendered spec as cloud-init user-data (#cloud-config): write_files for
 * every file (mode kept), unit and drop-in (/etc/systemd/system) and core's
 * keys (/home/core/.ssh/authorized_keys.d/ignition, deferred), then runcmd:
 * directories and links made, owners set, units enabled, disabled or masked,
 * and mcgit-agent.service enabled and started. provenance goes in a comment.
 */
int mcg_render_cloud_config(const char *spec, size_t len, const char *name, const char *provenance,
                            mcg_buf *out, mcg_err *err);

/* ------------------------------------------------------------ diff */

typedef enum { MCG_DIFF_ADDED, MCG_DIFF_CHANGED, MCG_DIFF_REMOVED } mcg_diff_op;

typedef enum {
    MCG_DIFF_FILE,
    MCG_DIFF_DIR,
    MCG_DIFF_LINK,
    MCG_DIFF_UNIT,
    MCG_DIFF_SSHKEYS,  /* core's SSH keys (key "core") */
    MCG_DIFF_PASSWORD, /* core's password hash (key "core"): no disruption */
    MCG_DIFF_KARGS,    /* the MachineConfig kernelArguments */
    MCG_DIFF_OS,       /* extensions, kernelType, osImageURL, baseOSExtensionsContainerImage */
    MCG_DIFF_UNRECONCILABLE, /* fips, disks, raid, filesystems, luks, users, groups, Ignition
                                kernelArguments: nodes refuse the config (Unreconcilable) */
} mcg_diff_kind;

/* One change. */
typedef struct mcg_diff_item {
    mcg_diff_kind kind;
    mcg_diff_op op;
    char *key;              /* path, unit name, field name, or "core" */
    mcg_strv what;          /* CHANGED storage: "contents", "mode", "owner", "target", "type",
                               "overwrite"; units: "contents", "enabled", "mask", "dropin NAME";
                               kernel arguments and extensions: "+arg" / "-arg"; SSH keys: "N added,
                               M removed"; OS fields: the new value. Empty otherwise. */
    mcg_disruption actions; /* this change alone, under the policy (finished) */
} mcg_diff_item;

typedef struct mcg_diff {
    mcg_diff_item *items; /* files/dirs/links by path, units, SSH keys, password, kernel
                             arguments, OS fields, unreconcilable sections */
    size_t n;
    mcg_disruption actions; /* every item's, finished: what a node does for the whole change */
    bool unreconcilable;    /* an item nodes refuse */
} mcg_diff;

/*
 * The change from old (NULL: a node with no config) to new, with the
 * disruption actions of the node disruption policy (NULL: the defaults),
 * decided by the agent's rules (mcg_disruption_add). Compare configs parsed
 * the same way (mcg_ignition_parse_json of each spec.json) so defaults
 * agree. *out is overwritten; free with mcg_diff_free. n == 0: no change.
 */
void mcg_render_diff(mcg_diff *out, const mcg_ignition *old, const mcg_ignition *new_cfg,
                     const mcg_disruption_policy *policy);
void mcg_diff_free(mcg_diff *d);
/* "file", "directory", "link", "unit", "sshAuthorizedKeys", "passwordHash",
 * "kernelArguments", "os", "unreconcilable" (the -o json "kind" values). */
const char *mcg_diff_kind_name(mcg_diff_kind k);
/* "added", "changed", "removed". */
const char *mcg_diff_op_name(mcg_diff_op op);

#endif
