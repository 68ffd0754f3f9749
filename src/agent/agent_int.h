/*
 * agent_int.h — shared inside agent/: safe path resolution under the root
 * (safepath.c), the flat list of managed entries a config expands to
 * (entries.c), and the plan / apply / drift machinery (apply.c).
 */
#ifndef MCG_AGENT_INT_H
#define MCG_AGENT_INT_H

#include "agent/agent.h"
#include "fsio/fsio.h"
#include "trust/trust.h"

#include <sys/types.h>

/* ------------------------------------------------------------ safepath */

/*
 * A directory handle cache over a root directory fd. Paths are relative to
 * the root ("etc/foo", no leading '/'); every component is resolved without
 * following symlinks, and never above the root.
 */
typedef struct mcg_sroot {
    int fd;           /* the root directory */
    bool no_openat2;  /* the kernel lacks openat2 (ENOSYS seen) */
    char *cache_path; /* last parent directory resolved */
    int cache_fd;
    char *missing_path; /* last parent found missing (lookups without create) */
    mcg_strv *made;     /* when set: every directory created is appended (borrowed) */
    /* every filesystem a directory was opened on since the last mcg_sroot_sync():
     * its device and a descriptor on it */
    struct mcg_sroot_dev {
        dev_t dev;
        int fd;
    } * devs;
    size_t ndevs;
} mcg_sroot;

int mcg_sroot_open(mcg_sroot *r, const char *root, mcg_err *err);
void mcg_sroot_close(mcg_sroot *r);
/* Drop the cached directory (after directories may have changed). */
void mcg_sroot_forget(mcg_sroot *r);

/*
 * Open the parent directory of rel and point *base at rel's last component.
 * create: make missing directories (0755, root-owned as created; each one
 * appended to r->made when that is set). The
 * returned fd belongs to the cache: do not close it; it stays valid until
 * the next call. Returns MCG_ENOTFOUND when a directory is missing and
 * create is false, MCG_ETRUST when a symlink or non-directory is in the
 * way (the message names the path), MCG_EIO otherwise.
 */
int mcg_sroot_parent(mcg_sroot *r, const char *rel, bool create, int *dirfd, const char **base,
                     mcg_err *err);

/* Open directory rel itself (creating it with mode when create). Caller closes. */
int mcg_sroot_opendir(mcg_sroot *r, const char *rel, bool create, int mode, int *fd, mcg_err *err);

/*
 * syncfs() the root's filesystem and every other one a directory was
 * opened on (through mcg_sroot_parent / mcg_sroot_opendir) since the last
 * call: whatever was changed through those directories is durable after.
 */
int mcg_sroot_sync(mcg_sroot *r, mcg_err *err);

/* Deterministic temp name for base in the same directory (size >= 64). */
void mcg_agent_tmpname(const char *base, char out[64]);

/* --------------------------------------------------------- entries */

typedef enum {
    MCG_ENT_FILE,
    MCG_ENT_DIR,
    MCG_ENT_SYMLINK,
    MCG_ENT_HARDLINK,
    MCG_ENT_ABSENT,  /* a symlink that must not exist (a disabled unit's link) */
    MCG_ENT_REMOVED, /* a file or link that must not exist (keys sshd would read for core);
                        what was there first is backed up, never restored for core's keys */
} mcg_ent_kind;

typedef enum { MCG_ORIG_STORAGE, MCG_ORIG_UNIT, MCG_ORIG_SSH } mcg_ent_origin;

/* One managed path, with everything needed to write or check it. */
typedef struct mcg_ent {
    mcg_ent_kind kind;
    mcg_ent_origin origin;
    char *path;      /* relative to the root (owned) */
    const char *key; /* disruption key: "/path" or unit name (borrowed or = path) */
    char *key_owned;
    int mode; /* FILE / DIR permission bits */
    uid_t uid;
    gid_t gid;
    const unsigned char *data; /* FILE contents (borrowed from the config, or data_owned) */
    size_t len;                /* FILE: the size of the contents */
    unsigned char *data_owned;
    char *target; /* SYMLINK target; HARDLINK target path relative to the root */
} mcg_ent;

/*
 * A parsed rendered config and its entries, sorted by path. File contents
 * live in ign, decoded; the entries borrow them.
 */
typedef struct mcg_acfg {
    char *name;
    mcg_ignition ign;
    mcg_ent *ents;
    size_t n;
    mcg_strv notes; /* what the node skips, as MCO's daemon does (a unit to enable that is
                       not on disk, core's keys on a host without core): for the log */
} mcg_acfg;

/*
 * Parse spec (len bytes) and expand it into entries. strict: a named user
 * or group that is not in the root's /etc/passwd or /etc/group, or a unit
 * to enable whose file cannot be found, is an error; otherwise such owners
 * map to root. spec is borrowed for the call only; every data: URL is
 * decoded and checked. *out is NULL on failure.
 */
int mcg_acfg_load(mcg_acfg **out, mcg_sroot *root, const char *name, const char *spec, size_t len,
                  bool strict, mcg_err *err);
void mcg_acfg_free(mcg_acfg *c);
/* core's keys leaving the config (in old, not in new_cfg): new_cfg keeps its keys file,
 * empty, and the other keys files absent, as MCO's daemon leaves them. Idempotent. */
void mcg_acfg_keep_ssh(mcg_acfg *new_cfg, const mcg_acfg *old);
/* Binary search by path; NULL when absent. */
const mcg_ent *mcg_acfg_find(const mcg_acfg *c, const char *path);
/* True when two entries would put the same thing on disk. */
bool mcg_ent_equal(const mcg_ent *a, const mcg_ent *b);

/* ------------------------------------------------------------ apply */

/*
 * Decide the disruption actions for the change old -> new under policy
 * (may be NULL: defaults), entry by entry with mcg_disruption_add; *out is
 * overwritten (free with mcg_disruption_free).
 */
void mcg_plan_decide(mcg_disruption *out, const mcg_acfg *old, const mcg_acfg *new_cfg,
                     const mcg_disruption_policy *policy);

/*
 * The same for a first apply (no current config): an entry the disk under r
 * already holds as new_cfg says (mcg_drift_check's comparison) needs no
 * action, so a node whose entries all match takes no disruption.
 */
void mcg_plan_decide_first(mcg_disruption *out, mcg_sroot *r, const mcg_acfg *new_cfg,
                           const mcg_disruption_policy *policy);

/*
 * The disk-dependent part of a plan, fixed in the journal before any
 * change. Each list is sorted.
 */
typedef struct mcg_plan_disk {
    mcg_strv backups;  /* paths to back up before the first overwrite */
    mcg_strv restores; /* paths whose backup is restored when they leave */
    mcg_strv mkdirs;   /* directories that do not exist yet and the update makes */
} mcg_plan_disk;

void mcg_plan_disk_free(mcg_plan_disk *d);

/*
 * Everything that must hold before anything is written: no symlink on the
 * way to any path of new_cfg, no symlink at a path that will be replaced
 * by a file unless the old config put it there. Also fills the backup /
 * restore lists and the directories the update will create.
 */
int mcg_plan_prepare(mcg_plan_disk *out, mcg_sroot *root, int statefd, const mcg_acfg *old,
                     const mcg_acfg *new_cfg, mcg_err *err);

/* Counters of one execution. */
typedef struct mcg_exec_stats {
    size_t written, removed; /* paths (directories included) */
} mcg_exec_stats;

/*
 * Make the disk match new_cfg where it differs from old (or everywhere when
 * force), idempotently: backups first (synced), then directories, removals
 * and restores, files in synced batches, links, and last the directories
 * mcgit created that new_cfg no longer needs, removed when empty.
 *
 * created holds the directories mcgit created (as kept in the state
 * directory); on return it also holds disk->mkdirs and any directory made
 * on the way, less the ones removed and the ones left because something
 * else is in them (no longer mcgit's) — also on failure, so the rollback
 * mcg_plan_execute(new -> old) can take them away again.
 */
int mcg_plan_execute(mcg_sroot *root, int statefd, const mcg_acfg *old, const mcg_acfg *new_cfg,
                     const mcg_plan_disk *disk, bool force, mcg_strv *created, mcg_exec_stats *st,
                     mcg_err *err);

/*
 * Compare the disk with cfg. Each difference is appended to out as
 * "/path: what". Returns 0 (differences or not) or an error.
 */
int mcg_drift_check(mcg_sroot *root, const mcg_acfg *cfg, mcg_strv *out, mcg_err *err);

/* Remove leftover temp files of every entry of cfg (after a crash). */
void mcg_plan_clean_temps(mcg_sroot *root, const mcg_acfg *cfg);

/* Name of a path's backup file inside the state directory's backups/. */
char *mcg_backup_name(const char *path);

/* ------------------------------------------------------------ osconf */

/* How a node's kernel command line is changed (osconf.c). */
typedef enum {
    MCG_BOOT_NONE,
    MCG_BOOT_RPM_OSTREE,     /* rpm-ostree kargs */
    MCG_BOOT_KERNEL_INSTALL, /* etc/kernel/cmdline + kernel-install add-all */
    MCG_BOOT_GRUBBY,         /* grubby --update-kernel=ALL */
    MCG_BOOT_GRUB,           /* etc/default/grub.d/50-mcgit.cfg + grub_update */
} mcg_boot_kind;

/* What a node offers for the fields beside the files, detected under its root. */
typedef struct mcg_host {
    bool rpm_ostree; /* run/ostree-booted and usr/bin/rpm-ostree */
    bool bootc;      /* usr/bin/bootc */
    mcg_boot_kind boot;
    const char *grub_update; /* MCG_BOOT_GRUB: the command that regenerates grub.cfg */
    int fips;                /* the node's FIPS mode: 0, 1, or -1 when unknown */
} mcg_host;

/* Detect h under the root; live: FIPS from this host's /proc (the host kernel's). */
void mcg_host_detect(mcg_host *h, mcg_sroot *root, bool live);
const char *mcg_boot_name(mcg_boot_kind k);

/* What one OS step does; its name in the journal's "os" list is the key beside "field". */
typedef enum {
    MCG_OSSTEP_RUN,     /* "run": a shell command line (arguments quoted) */
    MCG_OSSTEP_WRITE,   /* "write": a file under the root, with "data" */
    MCG_OSSTEP_REMOVE,  /* "remove": a file under the root */
    MCG_OSSTEP_SHADOW,  /* "shadow": core's password hash into etc/shadow */
    MCG_OSSTEP_RECORD,  /* "record": keep the booted image (state file arg), "bootc" */
    MCG_OSSTEP_RESTORE, /* "restore": rebase back to the recorded image (state file arg) */
} mcg_osstep_kind;

/* One OS step of an update, as the journal keeps it. Strings owned. */
typedef struct mcg_osstep {
    mcg_osstep_kind kind;
    char *field; /* the config field it carries out: "kernelArguments", ... */
    char *arg;   /* the command, the path under the root, the hash, or the state file */
    char *data;  /* MCG_OSSTEP_WRITE: the contents; NULL otherwise */
    bool bootc;  /* MCG_OSSTEP_RECORD: ask bootc, not rpm-ostree */
} mcg_osstep;

/* A list of OS steps, in order. */
typedef struct mcg_ossteps {
    mcg_osstep *v;
    size_t n;
} mcg_ossteps;

/* Append a step (strings copied; data may be NULL). */
void mcg_osstep_add(mcg_ossteps *s, mcg_osstep_kind kind, const char *field, const char *arg,
                    const char *data, bool bootc);
void mcg_osstep_free(mcg_ossteps *s);

/*
 * The OS steps of the update old -> new_cfg on host h (old NULL: nothing
 * applied yet), appended to *steps for the journal: commands to run (a
 * shell command line, arguments quoted), files to write or remove under the
 * root, core's password hash, the booted image to record or restore.
 * *reboot: a step needs a reboot (every field but the password hash).
 * Fails, naming the field and node, when the node cannot apply a field or
 * the change is unreconcilable; nothing is written either way.
 */
int mcg_osplan_make(mcg_ossteps *steps, bool *reboot, mcg_sroot *root, const mcg_host *h,
                    const mcg_acfg *old, const mcg_acfg *new_cfg, const char *node, mcg_err *err);

/*
 * A node's first config holds the sections MCO makes at install only
 * (disks, RAID, filesystems, LUKS, users, groups, Ignition kernel
 * arguments): "taken as installed: storage.disks (not checked),
 * passwd.users (checked), ..." for the node's status, NULL when it holds
 * none. The check itself is mcg_osplan_make's (a mismatch refuses).
 */
char *mcg_osconf_installed_note(mcg_sroot *root, const mcg_acfg *new_cfg);

/* Append s to b quoted for sh ('...', with ' as '\''). */
void mcg_sh_quote(mcg_buf *b, const char *s);

/*
 * The image this node boots now (baseimage.c), asked of rpm-ostree (or
 * bootc) through the host_exec prefix (NULL: none): "rpm-ostree container
 * REF", "rpm-ostree ostree REFSPEC" or "bootc image REF"; NULL with err set
 * when the command fails or its answer names none. Caller frees.
 */
char *mcg_booted_image_query(const char *host_exec, bool bootc, mcg_err *err);
/* The command that rebases the node back to a record of the above; NULL when malformed. */
char *mcg_booted_image_command(const char *rec);

/* How a node runs its health checks (health.c). */
typedef struct mcg_health_env {
    bool live;
    const char *systemctl; /* --systemctl, NULL: systemctl */
    const char *host_exec; /* --host-exec prefix, NULL: none */
} mcg_health_env;

/* A pool's health checks as its rendered spec carries them (mcgitHealth), typed. */
typedef struct mcg_health_spec {
    mcg_health_check *checks; /* a unit (a valid unit name) or a command each */
    size_t n;
    int64_t timeout; /* seconds */
    bool halt;       /* onFailure: Halt (default Revert) */
} mcg_health_spec;

#define MCG_HEALTH_OUTPUT_MAX 4096

/* One run of a check. */
typedef struct mcg_health_run {
    int status;                          /* exit status, 128 + signal */
    bool timed_out;                      /* still running at the deadline: its group was killed */
    bool interrupted;                    /* the agent is stopping: its group was killed */
    char out[MCG_HEALTH_OUTPUT_MAX + 1]; /* the first bytes of stdout and stderr */
    size_t kept, dropped;                /* bytes kept in out, and counted past it */
} mcg_health_run;

/* Carry out one file step (write, remove, shadow) under the root. */
int mcg_osstep_file(mcg_sroot *root, const mcg_osstep *step, mcg_err *err);

/* With MCGIT_TEST_PAUSE_AT=name set: say "mcgit: paused at name" on stderr
 * and sleep for ever (the power-cut tests, tests/vm). Otherwise nothing. */
void mcg_agent_testpoint(const char *name);

/* ============================================================ the update
 *
 * The agent's update, bottom up: the state directory (state.c), the
 * journal (journal.c), reporting (report.c), planning (plan.c), the phases
 * (phases.c) and health (health.c); agent.c keeps the pass.
 */

/* An agent (agent.h's mcg_agent), shared by the files of the update. */
struct mcg_agent {
    mcg_agent_opts o;
    mcg_sroot root;
    int statefd;
    int lockfd;            /* flock on <state>/lock: one agent per state directory */
    const char *state_rel; /* the default state dir's path inside the root, NULL: elsewhere */
    bool live;
    bool force;
    bool force_reboot;           /* the force file was found: MCO re-applies and reboots */
    bool reboot_issued;          /* this process already ran the reboot command */
    volatile sig_atomic_t *stop; /* mcg_agent_loop's: set, a health phase ends the pass */
    mcg_acfg *cur;               /* parsed current config, cached for drift checks */
    char drain_evented[256];     /* the target whose Cordon/Drain events were recorded */
    char degraded_evented[MCG_AGENT_REASON]; /* the reason last recorded as an event */
};

/* ------------------------------------------------------------ attest.c */

/* When the node is Done on config: make sure n carries this node's signed
 * statement of it (MCG_ANN_ATTESTATION). Best effort: a failure is logged. */
void mcg_agent_attest(mcg_agent *a, mcg_cluster *c, const mcg_node *n, const char *config);

/* ------------------------------------------------------------ state.c */

/*
 * A state file written in two steps, so that its writeback can run while
 * the agent does something else: mcg_agent_state_start() writes the data
 * to a temp file and starts writeback; mcg_agent_state_finish() waits for it
 * (fsync), renames the file into place and syncs the directory.
 */
typedef struct mcg_agent_pending {
    int fd;
    char *tmp, *name;
} mcg_agent_pending;

int mcg_agent_state_start(mcg_agent *a, const char *name, const void *data, size_t len,
                          mcg_agent_pending *p, mcg_err *err);
int mcg_agent_state_finish(mcg_agent *a, mcg_agent_pending *p, mcg_err *err);
/* Drop a pending write (its temp file removed); a no-op once finished. */
void mcg_agent_state_abort(mcg_agent *a, mcg_agent_pending *p);
/* Write state file name (relative to the state directory) atomically, synced. */
int mcg_agent_state_write(mcg_agent *a, const char *name, const void *data, size_t len,
                          mcg_err *err);
/* Read state file name (NUL-terminated); MCG_ENOTFOUND when it does not exist. */
int mcg_agent_state_read(mcg_agent *a, const char *name, char **data, size_t *len, mcg_err *err);
/* The state directory's lock (state.c), held until the agent is freed: one
 * line naming the agent that holds it otherwise. */
int mcg_agent_take_lock(mcg_agent *a, mcg_err *err);
/* Remove state file name and sync the directory. */
void mcg_agent_state_remove(mcg_agent *a, const char *name);
/* The name in `current`, or NULL. Caller frees. */
char *mcg_agent_current_name(mcg_agent *a);
/* The kept copy of config name (configs/NAME.json), parsed. */
int mcg_agent_config_load(mcg_agent *a, const char *name, bool strict, mcg_acfg **out,
                          mcg_err *err);
/* The kept copy of config name, as bytes. */
int mcg_agent_config_read(mcg_agent *a, const char *name, char **spec, size_t *len, mcg_err *err);
/* The current config, parsed once and kept in a->cur (NULL: none). */
mcg_acfg *mcg_agent_current(mcg_agent *a);
/* The directories mcgit created, sorted (none when the file is missing or unreadable). */
void mcg_agent_created_load(mcg_agent *a, mcg_strv *out);
int mcg_agent_created_save(mcg_agent *a, const mcg_strv *dirs, mcg_err *err);
/* Drop every kept config but keep's. */
void mcg_agent_configs_prune(mcg_agent *a, const char *keep);

/* ------------------------------------------------------------ journal.c */

/* The phases of an update, in order, under the names journal.json gives them. */
typedef enum {
    MCG_PHASE_WRITE,   /* "apply": back up, then write the files; a failure reverts */
    MCG_PHASE_OS,      /* "os": the OS steps, one at a time ("osStep") */
    MCG_PHASE_ACTIONS, /* "actions": daemon-reload / reload / restart, or the reboot decided */
    MCG_PHASE_REBOOT,  /* "reboot": the reboot command run, done when the boot id changed */
    MCG_PHASE_HEALTH,  /* "health": the pool's checks, after the actions or the reboot */
    MCG_PHASE_COMMIT,  /* "finish": record current, report Done, uncordon, drop the journal */
    MCG_PHASE_COUNT,
} mcg_phase;

/* The journal's format; a journal of another version is refused, never resumed. */
#define MCG_JOURNAL_VERSION 1

/*
 * journal.json, typed: read once (mcg_agent_journal_parse checks every
 * key), written from this struct at every change. Strings owned.
 */
typedef struct mcg_journal {
    char *target; /* the config applied */
    char *from;   /* the config it replaces, NULL: none */
    mcg_phase phase;
    bool force;         /* rewrite every path, not only the changed ones */
    bool cordoned;      /* the update cordoned the node */
    bool reboot, drain; /* the disruption decided */
    bool daemon_reload;
    mcg_strv reload, restart; /* units to reload / restart */
    mcg_plan_disk disk;       /* backups, restores, directories the update makes */
    mcg_ossteps os;           /* the OS steps */
    size_t os_step;           /* the first OS step not done yet */
    char *boot_id;            /* the boot id the reboot must change, NULL: not decided */
    bool has_deadline;        /* the health phase began: */
    int64_t health_deadline;  /* its deadline, unix seconds */
    char *revert;    /* going back after a failed health check: why (ends Degraded); NULL */
    char *installed; /* a first config: the install-time sections it holds; NULL */
} mcg_journal;

void mcg_agent_journal_clear(mcg_journal *j);
/*
 * Parse journal.json (len bytes) into *out, checking it whole: the version
 * first (only MCG_JOURNAL_VERSION is known), then every key (none missing,
 * none unknown, each of its type), the phase and each OS step's kind.
 * MCG_EINVAL with one line naming what is wrong; *out is cleared then.
 */
int mcg_agent_journal_parse(mcg_journal *out, const char *data, size_t len, mcg_err *err);
/* journal.json's bytes for j (sorted keys, indented). Caller frees. */
char *mcg_agent_journal_dump(const mcg_journal *j);
/* Read the state directory's journal: MCG_ENOTFOUND when there is none. */
int mcg_agent_journal_read(mcg_agent *a, mcg_journal *out, mcg_err *err);
int mcg_agent_journal_write(mcg_agent *a, const mcg_journal *j, mcg_err *err);
/* Drop the journal (the update is over). */
void mcg_agent_journal_drop(mcg_agent *a);

/* ------------------------------------------------------------ report.c */

void mcg_agent_log(mcg_agent *a, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Set res's state and its one-line reason. */
void mcg_agent_reason(mcg_agent_result *res, mcg_agent_state st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Patch the node; failures (cluster unreachable) are logged, not fatal. c may be NULL. */
int mcg_agent_patch(mcg_agent *a, mcg_cluster *c, const mcg_node_patch *p);
/* A Kubernetes Event about this node (best effort; nothing without a cluster). */
void mcg_agent_event(mcg_agent *a, mcg_cluster *c, bool warning, const char *reason,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Report res (Degraded or Unreconcilable) on the node, with an event once per reason. */
void mcg_agent_report_degraded(mcg_agent *a, mcg_cluster *c, mcg_agent_result *res);
void mcg_agent_uncordon(mcg_agent *a, mcg_cluster *c);
/* Record one pass of the loop in the metrics; last_drift: the drift reason last counted. */
void mcg_agent_record_pass(mcg_agent *a, int rc, const mcg_agent_result *res, double seconds,
                           char *last_drift, size_t n);

/* ------------------------------------------------------------ the update in progress */

/*
 * An update being carried out (phases.c): its journal and both configs.
 * A phase that ends the pass sets stop. A failed health check that reverts
 * hands the pass the update to start next (revert_to, its kept spec, why).
 */
typedef struct mcg_update {
    mcg_journal j;
    bool resumed;            /* left by an earlier run */
    mcg_acfg *old, *new_cfg; /* owned; new_cfg moves to a->cur at the commit */
    bool stop;               /* the pass ends here: Degraded, or waiting for the reboot */
    char *revert_to;         /* NULL, or the config to go back to (a new update) */
    char *revert_spec;       /* its kept spec */
    size_t revert_len;
    char *revert_reason; /* why: the failed check */
} mcg_update;

void mcg_agent_update_free(mcg_update *u);

/* ------------------------------------------------------------ plan.c */

/*
 * Plan the update to config name/spec (its hash checked here): the target
 * parsed and kept, the OS steps, the disk plan, the disruption; the node
 * reported Working, cordoned and drained when the update needs it. revert:
 * NULL, or why this update goes back to a healthy config (it ends Degraded,
 * with no health checks). Fills *u (u->j at its first phase; nothing is
 * written to the root). False when the update is refused: the reason in
 * res, the node uncordoned, u freed.
 */
bool mcg_agent_plan(mcg_agent *a, mcg_cluster *c, const char *name, const char *spec, size_t len,
                    const char *revert, mcg_update *u, mcg_agent_result *res);

/* ------------------------------------------------------------ phases.c, health.c */

/*
 * Carry out u from its journal's phase, one phase after another, until the
 * update is committed or a phase stops the pass; the configs not given
 * (u->old, u->new_cfg NULL) are loaded from the state directory. Always
 * leaves the outcome in res (and u->revert_to when a failed check asks to
 * go back); returns 0 unless the state directory itself fails.
 */
int mcg_agent_update_run(mcg_agent *a, mcg_cluster *c, mcg_update *u, mcg_agent_result *res,
                         mcg_err *err);
/* Enter phase: recorded in the journal first. */
int mcg_agent_phase_enter(mcg_agent *a, mcg_update *u, mcg_phase phase, mcg_err *err);
/* The health phase (health.c): the pool's checks until all pass or the deadline. */
int mcg_agent_phase_health(mcg_agent *a, mcg_cluster *c, mcg_update *u, mcg_agent_result *res,
                           mcg_err *err);
/* The state file naming a target whose health check failed, and why (health.c). */
#define MCG_AGENT_FAILED_TARGET "failed-target"

#endif
