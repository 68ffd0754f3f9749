/*
 * model — the config repo's objects as C structs.
 *
 * Parses MachineConfigPool, MachineConfig and MachineConfiguration YAML
 * (several documents per file; JSON is accepted as the YAML subset it is)
 * and the Ignition config (3.0–3.5, or 2.0–2.2 translated to 3.x) inside each
 * MachineConfig with the MachineConfig fields beside it, validating as it
 * goes. Every object and field keeps the file and line it came from, so
 * problems are reported as "file:line: message". Pure: callers hand in bytes.
 *
 * Ownership: an mcg_model owns everything reachable from it; free it with
 * mcg_model_free(). Strings are NUL-terminated UTF-8.
 */
#ifndef MCG_MODEL_H
#define MCG_MODEL_H

#include "util/util.h"

#define MCG_API_OPENSHIFT "machineconfiguration.openshift.io/v1"
#define MCG_API_MCGIT "machineconfiguration.mcgit.io/v1"
/* MCO's force file: present, the node agent re-applies its config and reboots; no
 * MachineConfig may write it (refused at parse, as MCO's isConfigReconcilable does). */
#define MCG_FORCE_FILE "/run/machine-config-daemon-force"

/* Where something came from. file points into the model's file table. */
typedef struct mcg_loc {
    const char *file;
    int line;
} mcg_loc;

/* ----------------------------------------------------------- selectors */

typedef enum { MCG_SEL_IN, MCG_SEL_NOTIN, MCG_SEL_EXISTS, MCG_SEL_DOESNOTEXIST } mcg_sel_op;

typedef struct mcg_sel_expr {
    char *key;
    mcg_sel_op op;
    mcg_strv values;
} mcg_sel_expr;

typedef struct mcg_kv {
    char *key;
    char *value;
} mcg_kv;

typedef struct mcg_labels {
    mcg_kv *items; /* sorted by key, unique keys (see mcg_labels_add) */
    size_t n;
    size_t cap; /* items allocated */
} mcg_labels;

typedef struct mcg_selector {
    bool present;     /* the field was given at all */
    mcg_labels match; /* matchLabels */
    mcg_sel_expr *exprs;
    size_t nexprs;
} mcg_selector;

/*
 * Label-selector matching with Kubernetes semantics for a present selector
 * (all matchLabels equal and every expression true; {} matches everything).
 * An absent selector matches nothing. For machineConfigSelector, callers use
 * mcg_selector_selects_any() first: an empty one selects nothing (MCO).
 */
bool mcg_selector_matches(const mcg_selector *s, const mcg_labels *labels);
bool mcg_selector_is_empty(const mcg_selector *s);
const char *mcg_labels_get(const mcg_labels *l, const char *key);
/*
 * Set key=value (replacing the value of an existing key), keeping items
 * sorted: O(log n) to find the place, O(1) amortised to append a key that
 * sorts last, a move of the items after it otherwise. To build a set from
 * many pairs in any order use mcg_labels_add + mcg_labels_finish.
 */
void mcg_labels_set(mcg_labels *l, const char *key, const char *value);
/*
 * Append key=value without sorting (O(1) amortised); the set is unusable
 * until mcg_labels_finish() sorts it. For a key added more than once the
 * last value wins, as with mcg_labels_set.
 */
void mcg_labels_add(mcg_labels *l, const char *key, const char *value);
/* Sort by key and keep the last value of each repeated key: O(n log n). */
void mcg_labels_finish(mcg_labels *l);
bool mcg_labels_remove(mcg_labels *l, const char *key);
void mcg_labels_free(mcg_labels *l);
/* Parse "k=v,k2=v2" (validated label syntax); "k-" entries remove keys. */
int mcg_labels_parse_arg(mcg_labels *l, const char *arg, mcg_err *err);

/* --------------------------------------------------------- Ignition */

/* An optional owner: by name, by id, or unset. */
typedef struct mcg_owner {
    char *name; /* NULL when unset or given by id */
    bool has_id;
    int64_t id;
} mcg_owner;

/* A tri-state boolean: unset, false, true. */
typedef enum { MCG_UNSET = 0, MCG_FALSE = 1, MCG_TRUE = 2 } mcg_tri;

typedef enum { MCG_NODE_FILE, MCG_NODE_DIR, MCG_NODE_LINK } mcg_node_kind;

/*
 * A storage entry: file, directory or link. They share one key space (path).
 * Optional numeric fields carry has_* flags so merges can tell "unset" from a
 * value, field by field.
 */
typedef struct mcg_storage {
    mcg_node_kind kind;
    char *path;
    mcg_loc loc;
    bool has_mode;
    int mode;          /* permission bits, <= 0777 */
    mcg_tri overwrite; /* unset after merge means true */
    mcg_owner user, group;
    /* files: contents (source + compression) travel as one field */
    bool has_contents;
    char *source;        /* data: URL as given */
    char *compression;   /* NULL or "gzip" */
    unsigned char *data; /* decoded bytes (owned), len in data_len */
    size_t data_len;
    /* links */
    char *target;
    mcg_tri hard;
} mcg_storage;

typedef struct mcg_dropin {
    char *name;
    char *contents; /* NULL when unset */
    mcg_loc loc;
} mcg_dropin;

typedef struct mcg_unit {
    char *name;
    mcg_loc loc;
    mcg_tri enabled;
    mcg_tri mask;
    char *contents; /* NULL when unset */
    mcg_dropin *dropins;
    size_t ndropins;
} mcg_unit;

/*
 * The MachineConfig fields beside the Ignition config (MCO's
 * MachineConfigSpec). In one MC they are as given; after a merge they follow
 * MergeMachineConfigs: kernel arguments concatenated in merge order without
 * repeats, extensions appended, fips true if any MC sets it, kernelType
 * realtime over 64k-pages over default, osImageURL and
 * baseOSExtensionsContainerImage the last non-empty value.
 */
typedef struct mcg_osspec {
    mcg_strv kargs;      /* one kernel argument per entry (entries split as the kernel does) */
    mcg_strv extensions; /* RHCOS extension names (MCO's allow-list) */
    bool fips;
    char *kernel_type;  /* NULL (default), "realtime" or "64k-pages" */
    char *os_image_url; /* NULL when unset */
    char *ext_image;    /* baseOSExtensionsContainerImage, NULL when unset */
} mcg_osspec;

/*
 * An Ignition 3.x config as mcgit keeps it: the parts the agent applies
 * (files, directories, links, units, core's SSH keys and password hash),
 * the sections MCO calls unreconcilable once a node is installed, kept
 * verbatim so that a change to them can be reported, and the MachineConfig
 * fields beside the config. Ignition 2.x configs arrive here translated.
 */
typedef struct mcg_ignition {
    char *version; /* "3.x.0" as given ("3.2.0" for a translated 2.x config) */
    mcg_storage *storage;
    size_t nstorage;
    mcg_unit *units;
    size_t nunits;
    mcg_strv ssh_keys;   /* user core's sshAuthorizedKeys */
    char *password_hash; /* user core's passwordHash, NULL when unset */
    /*
     * Unreconcilable sections, NULL when there are none: an object whose
     * keys are "disks", "raid", "filesystems", "luks" (storage), "groups",
     * "users" (passwd; users other than core) — each a list of mappings —
     * and "kernelArguments" (Ignition's own: shouldExist / shouldNotExist).
     * Owned (one reference).
     */
    json_t *extra;
    mcg_osspec os;
    /*
     * Rendered specs only: the pool's health checks, as the render writes
     * them under "mcgitHealth" ({"checks": [{"name", "unit"} | {"name",
     * "command"}], "onFailure": "Revert"|"Halt", "timeout": seconds}), so a
     * node runs only checks signed with its config. NULL: none. Owned.
     */
    json_t *health;
} mcg_ignition;

void mcg_ignition_free(mcg_ignition *ign);

/* ------------------------------------------------------------ objects */

typedef struct mcg_machineconfig {
    char *name;
    mcg_loc loc;
    mcg_labels labels;
    mcg_ignition config; /* spec.config and the fields beside it (config.os) */
    bool has_config;     /* spec.config was given (MCO skips the Ignition part otherwise) */
} mcg_machineconfig;

/* ------------------------------------------------------------ safe rollouts */

/* A health check a node runs after each update: a unit that must be active, or a command. */
typedef struct mcg_health_check {
    char *name;
    char *unit;       /* "kubelet.service", or NULL */
    mcg_strv command; /* an absolute path and its arguments, or empty */
} mcg_health_check;

/* A pool's spec.rollout (present false: MCO's rollout, as without one). */
typedef struct mcg_rollout_spec {
    bool present;
    int64_t canary;       /* nodes in the first wave; 0: no canary */
    int64_t canary_pause; /* seconds the next wave waits after the canary is healthy */
    mcg_health_check *checks;
    size_t nchecks;
    int64_t health_timeout; /* seconds (default 300) */
    bool halt_only;         /* onFailure: Halt (default Revert) */
} mcg_rollout_spec;

/* A maintenance window: days (bit 0 Sunday .. bit 6 Saturday), a local start and length. */
typedef struct mcg_window {
    unsigned days;
    int start;    /* minutes after local midnight */
    int duration; /* minutes, 1 .. 1440 */
    char *tz;     /* an IANA time zone name ("UTC" when not given) */
    int line;     /* in the pool's file */
} mcg_window;

typedef struct mcg_pool {
    char *name;
    mcg_loc loc;
    mcg_selector mc_selector;
    mcg_selector node_selector;
    /* maxUnavailable: absolute count, or a percentage when is_percent */
    bool max_unavailable_set;
    bool max_unavailable_is_percent;
    int64_t max_unavailable;
    bool paused;
    mcg_rollout_spec rollout;
    mcg_window *windows; /* spec.maintenanceWindows; none: any time */
    size_t nwindows;
} mcg_pool;

/* Node disruption policy (MachineConfiguration "cluster"). */
typedef enum {
    MCG_ACT_NONE,
    MCG_ACT_REBOOT,
    MCG_ACT_DRAIN,
    MCG_ACT_RELOAD,
    MCG_ACT_RESTART,
    MCG_ACT_DAEMON_RELOAD,
    MCG_ACT_SPECIAL, /* MCO's for registries.conf: mcgit drains and reloads crio.service */
} mcg_action_type;

typedef struct mcg_action {
    mcg_action_type type;
    char *service; /* for Reload / Restart */
} mcg_action;

typedef struct mcg_policy_rule {
    char *key; /* file path or unit name */
    mcg_action *actions;
    size_t nactions;
} mcg_policy_rule;

typedef struct mcg_disruption_policy {
    bool present;
    mcg_policy_rule *files;
    size_t nfiles;
    mcg_policy_rule *units;
    size_t nunits;
    bool has_sshkey;
    mcg_action *sshkey;
    size_t nsshkey;
} mcg_disruption_policy;

/* Disruption actions decided for one change (model/disruption.c). */
typedef struct mcg_disruption {
    bool reboot, drain, daemon_reload;
    mcg_strv reload, restart; /* unit names, in first-seen order */
} mcg_disruption;

/* What changed, for the policy: a storage path, a unit, core's SSH keys, or
 * a change that always needs a Reboot (kernel arguments, OS image, ...). */
typedef enum {
    MCG_DISRUPT_FILE,
    MCG_DISRUPT_UNIT,
    MCG_DISRUPT_SSHKEY,
    MCG_DISRUPT_REBOOT,
} mcg_disrupt_kind;

/*
 * Add the actions a change to key (a file path "/etc/x", a unit name) needs
 * under policy (NULL: the defaults) to out: the policy's rule for a file
 * (exact path, else the longest directory prefix) or unit, else Reboot;
 * core's SSH keys: the sshkey rule, else nothing. The rules the agent
 * applies (agent/apply.c) and `mcgit plan` previews.
 */
void mcg_disruption_add(mcg_disruption *out, const mcg_disruption_policy *policy,
                        mcg_disrupt_kind kind, const char *key);
/* Add src's actions to dst (services kept unique, in first-seen order). */
void mcg_disruption_merge(mcg_disruption *dst, const mcg_disruption *src);
/* Any Reboot makes the whole result one Reboot (MCO): call once, at the end. */
void mcg_disruption_finish(mcg_disruption *a);
/* "Reboot", "Drain, Restart crio.service", "None", ... (caller frees). */
char *mcg_disruption_str(const mcg_disruption *a);
/* [{"type": "Restart", "service": "crio.service"}, ...] ([{"type": "None"}]
 * when empty), MCO's action names; a new reference. */
json_t *mcg_disruption_json(const mcg_disruption *a);
void mcg_disruption_free(mcg_disruption *a);

/*
 * Whether s is a branch name mcgit accepts (a subset of git's
 * check-ref-format: no "..", no control characters or ~^:?*[\\, no leading
 * '-' or '/', at most 200 bytes).
 */
bool mcg_model_branch_name_ok(const char *s);

/* mcgit.yaml: repo settings. */
typedef struct mcg_settings {
    char *source_branch;           /* default "main" */
    char *rendered_branch;         /* default "rendered" */
    bool source_set, rendered_set; /* mcgit.yaml names them */
    bool warnings_as_errors;       /* `warnings: error`: every warning refuses the commit */
    int64_t max_disruptions;       /* maxConcurrentDisruptions across all pools; 0: no limit */
} mcg_settings;

/* sites/NAME.yaml (site.c): a site of the fleet and the key it reports with. */
#define MCG_API_SITE "mcgit.io/v1"
typedef struct mcg_site {
    char *name;
    char *status_key;       /* an OpenSSH public key line: the site signs its status with it */
    mcg_strv pools;         /* the pools it runs; empty: every pool */
    int64_t max_report_age; /* seconds; stale after this long without a report (default 24h) */
    /* spec.maxUnavailable and spec.maintenanceWindows: at the site, in place
     * of each pool's own (windows_set with none: any time) */
    bool max_unavailable_set;
    bool max_unavailable_is_percent;
    int64_t max_unavailable;
    bool windows_set;
    mcg_window *windows;
    size_t nwindows;
    int64_t max_disruptions; /* spec.maxConcurrentDisruptions at the site; 0: mcgit.yaml's */
    mcg_loc loc;
} mcg_site;
void mcg_model_site_clear(mcg_site *s);

typedef struct mcg_model {
    mcg_strv files; /* file names, owned; mcg_loc.file points here */
    mcg_pool *pools;
    size_t npools;
    mcg_machineconfig *mcs;
    size_t nmcs;
    mcg_site *sites; /* sorted by name */
    size_t nsites;
    mcg_disruption_policy policy;
    mcg_settings settings;
    /*
     * Warnings ("file:line: message"): what Ignition only warns about, such
     * as a key it does not know (`networkd: {}`, a file's `filesystem:
     * root`, a misspelt `mdoe`). mcg_model_finish() moves them into the
     * problems when mcgit.yaml says `warnings: error`.
     */
    mcg_diags warnings;
    /* a pools/ file had problems (so a missing pool is not reported as such) */
    bool pools_refused;
} mcg_model;

mcg_model *mcg_model_new(void);
void mcg_model_free(mcg_model *m);

/*
 * Parse one file's bytes. relpath is the file's path in the config repo and
 * decides what may be in it: "pools/NAME.yaml" holds MachineConfigPools,
 * "machineconfigs/NAME.yaml" MachineConfigs (and the MachineConfiguration
 * "cluster"), "mcgit.yaml" the repo settings. Every problem is appended to
 * diags as "relpath:line: message"; valid objects are added to m.
 */
void mcg_model_add_file(mcg_model *m, const char *relpath, const char *data, size_t len,
                        mcg_diags *diags);

/* True if relpath is a file mcg_model_add_file reads. */
bool mcg_model_wants_file(const char *relpath);

/*
 * Cross-object checks once every file is in: duplicate names, required
 * pools. Sorts pools and MCs by name. Problems go to diags.
 */
void mcg_model_finish(mcg_model *m, mcg_diags *diags);
/*
 * Every maintenance window's time zone, asked of known() (the caller's time
 * zone database: the model does no I/O); "file:line: ... unknown time zone"
 * into diags for each it does not know.
 */
void mcg_model_check_zones(const mcg_model *m, bool (*known)(const char *tz), mcg_diags *diags);

const mcg_pool *mcg_model_pool(const mcg_model *m, const char *name);
/* The keys of a MachineConfig's spec mcgit reads (NULL-terminated). */
extern const char *const mcg_model_mc_spec_keys[];
/* The site called name, or NULL. */
const mcg_site *mcg_model_find_site(const mcg_model *m, const char *name);
/*
 * m as site NAME runs it: only the pools its spec.pools names (every pool
 * when it names none), each with the site's maxUnavailable and maintenance
 * windows in place of its own, and its maxConcurrentDisruptions in place of
 * mcgit.yaml's, where the site gives them. NULL, m unchanged, when no site
 * has that name.
 */
const mcg_site *mcg_model_apply_site(mcg_model *m, const char *name);

/*
 * Parse a rendered spec ({"config": <Ignition>, "kernelArguments": [...],
 * ...}) as an agent receives it. Same validation as a MachineConfig's config
 * and fields; a spec without the fields beside config is valid (they are
 * empty). Errors name `what`.
 */
int mcg_ignition_parse_json(mcg_ignition *out, const char *what, const char *data, size_t len,
                            mcg_err *err);
/* Parse a MachineConfiguration's disruption policy from JSON (cluster store). */
int mcg_policy_parse_json(mcg_disruption_policy *out, const char *what, const char *data,
                          size_t len, mcg_err *err);
json_t *mcg_policy_to_json(const mcg_disruption_policy *p);
void mcg_policy_free(mcg_disruption_policy *p);

/*
 * The packages of a MachineConfig extension (MCO's allow-list), as a
 * NULL-terminated list; NULL for a name that is not an extension.
 */
const char *const *mcg_extension_packages(const char *name);

/*
 * Split a kernelArguments entry into arguments as the kernel's next_arg()
 * does: at blanks outside double quotes. Appends to out.
 */
void mcg_kargs_split(mcg_strv *out, const char *s);

/* Name checks (DNS-1123 label / subdomain; systemd unit names). */
bool mcg_name_is_dns_label(const char *s);
bool mcg_name_is_dns_subdomain(const char *s);
bool mcg_name_is_unit(const char *s);

/* ------------------------------------------------------------ signing policy */

/* One `approvals` rule of .mcgit/policy.yaml. */
typedef struct mcg_signpolicy_rule {
    mcg_strv paths; /* git pathspec globs, normalised as git does */
    int required;   /* distinct trusted signers (keys), 1..16 */
    size_t index;   /* 1-based position in the file, for messages */
} mcg_signpolicy_rule;

/* .mcgit/policy.yaml (see docs/trust.md). */
typedef struct mcg_signpolicy {
    mcg_signpolicy_rule *rules;
    size_t nrules;
    int64_t max_source_age; /* seconds; 0: no limit */
} mcg_signpolicy;

/*
 * Parse policy text (file names it in messages, "<file>:<line>: ..."):
 * `approvals` (a list of {paths, required}) and `maxSourceAge` (a duration
 * such as 720h or 1h30m); unknown keys are refused. Paths are normalised as
 * git normalises a pathspec ("./x", "a//b", "a/./b", "a/../b"); pathspec
 * magic (":(glob)x") and paths leaving the tree are refused. 0 with *out (free with
 * mcg_signpolicy_free), or MCG_EINVAL with every problem in diags and *out
 * NULL.
 */
int mcg_signpolicy_parse(mcg_signpolicy **out, const char *file, const char *data, size_t len,
                         mcg_diags *diags);
void mcg_signpolicy_free(mcg_signpolicy *p);
/*
 * The rule demanding the most principals among those whose paths match path
 * (as git's pathspec: exact, a leading directory, or an fnmatch glob where
 * '*' also crosses '/'); NULL when none does.
 */
const mcg_signpolicy_rule *mcg_signpolicy_rule_for(const mcg_signpolicy *p, const char *path);
/*
 * One line per pattern of p that matches none of files (paths relative to
 * the repo root), "approvals[I].paths: 'P' matches no file", pushed to out:
 * the warning `validate` and the pre-receive hook give.
 */
void mcg_signpolicy_unmatched(const mcg_signpolicy *p, const mcg_strv *files, mcg_strv *out);

/* ------------------------------------------------------------ YAML */

#define MCG_YAML_STRINGS 1u /* plain scalars stay text, but for null/true/false */

/*
 * The first YAML document of data as JSON, with the converter every YAML
 * input of mcgit goes through (no aliases, at most MCG_YAML_MAX_DEPTH levels,
 * duplicate keys refused, UTF-8 only). 0 with *out (the caller decrefs it),
 * or MCG_EINVAL with "file:line: ..." (or "file: empty file") in diags.
 */
int mcg_yaml_to_json(json_t **out, const char *file, const char *data, size_t len, unsigned flags,
                     mcg_diags *diags);

/* ------------------------------------------------------------ MCO export (export.c) */

/* One MachineConfig or MachineConfigPool of an export. */
typedef struct mcg_export_obj {
    bool is_pool;
    char *name;  /* metadata.name: a DNS-1123 subdomain (pools: label) */
    int line;    /* where the object starts in the export */
    json_t *obj; /* the object as exported (one reference) */
} mcg_export_obj;

typedef struct mcg_export {
    mcg_export_obj *v;
    size_t n;
} mcg_export;

/*
 * What `oc get machineconfigs,machineconfigpools -o yaml` prints: a List (any
 * kind ending in "List" with items), or a YAML stream of objects and lists.
 * Every object must be a MachineConfig or MachineConfigPool of
 * machineconfiguration.openshift.io/v1 with a valid name, each name once per
 * kind. 0, or MCG_EINVAL with every problem as "file:line: ..." in diags.
 * *out is set either way (free with mcg_model_export_free).
 */
int mcg_model_read_export(mcg_export *out, const char *file, const char *data, size_t len,
                          mcg_diags *diags);
void mcg_model_export_free(mcg_export *e);

/*
 * v as block YAML ending in a newline, appended to out: strings plain only
 * where mcgit's YAML reader takes them back as the same string, multi-line
 * text as literal blocks; reading the bytes back gives a value equal to v.
 */
void mcg_yaml_emit(mcg_buf *out, const json_t *v);

#endif
