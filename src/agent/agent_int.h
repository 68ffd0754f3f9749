/*
 * agent_int.h — shared inside agent/: safe path resolution under the root
 * (safepath.c), the flat list of managed entries a config expands to
 * (entries.c), and the plan / apply / drift machinery (apply.c).
 */
#ifndef MCG_AGENT_INT_H
#define MCG_AGENT_INT_H

#include "agent/agent.h"
#include "fsio/fsio.h"

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
                        what was there first is backed up, and restored when it leaves */
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

/*
 * The OS steps of the update old -> new_cfg on host h (old NULL: nothing
 * applied yet), as a JSON list for the journal: {"field", "run": CMD} (a
 * shell command line, arguments quoted), {"field", "write": REL, "data"},
 * {"field", "remove": REL}, {"field": "passwordHash", "shadow": HASH}.
 * *reboot: a step needs a reboot (every field but the password hash).
 * Fails, naming the field and node, when the node cannot apply a field or
 * the change is unreconcilable; nothing is written either way.
 */
int mcg_osplan_make(json_t **steps, bool *reboot, mcg_sroot *root, const mcg_host *h,
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
/*
 * The command line of one check of a rendered spec's mcgitHealth: for a
 * unit `systemctl is-active --quiet UNIT` (failed_probe: `is-failed
 * --quiet`, whose exit 0 means the unit failed for good), for a command the
 * command (NULL for failed_probe); NULL when this node cannot run it.
 * Caller frees.
 */
char *mcg_health_cmd(const json_t *check, const mcg_health_env *env, bool failed_probe);
const char *mcg_health_name(const json_t *check);
/* Why this node cannot run check (mcg_health_cmd gave NULL): one phrase. */
const char *mcg_health_cannot_run(const json_t *check);

#define MCG_HEALTH_OUTPUT_MAX 4096

/* One run of a check. */
typedef struct mcg_health_run {
    int status;                          /* exit status, 128 + signal */
    bool timed_out;                      /* still running at the deadline: its group was killed */
    bool interrupted;                    /* the agent is stopping: its group was killed */
    char out[MCG_HEALTH_OUTPUT_MAX + 1]; /* the first bytes of stdout and stderr */
    size_t kept, dropped;                /* bytes kept in out, and counted past it */
} mcg_health_run;

/*
 * Run `sh -c cmd` in a process group of its own until it exits, the
 * monotonic deadline_ms (mcg_mono_ms) or *stop (may be NULL); at either of
 * the last two the group gets SIGTERM, then SIGKILL after a grace period.
 * What the check leaves running in its group is killed when it exits. Its
 * output is bounded (r->out). 0, or -1 (errno) when it could not be started.
 */
int mcg_health_exec(const char *cmd, int64_t deadline_ms, volatile sig_atomic_t *stop,
                    mcg_health_run *r);

/* Carry out one file step (write, remove, shadow) under the root. */
int mcg_osstep_file(mcg_sroot *root, const json_t *step, mcg_err *err);

/* True when the sorted list v holds s (binary search). */
bool mcg_sorted_has(const mcg_strv *v, const char *s);

/* With MCGIT_TEST_PAUSE_AT=name set: say "mcgit: paused at name" on stderr
 * and sleep for ever (the power-cut tests, tests/vm). Otherwise nothing. */
void mcg_agent_testpoint(const char *name);

#endif
