/*
 * phases.c — carrying out an update from its journal, one phase after
 * another, each recorded in the journal before it starts:
 *   apply   -> execute the plan (idempotent, so it is simply re-run); a
 *              failure rolls the disk back to the old config (the same
 *              executor run backwards) and leaves the node Degraded
 *   os      -> the OS steps (osconf.c): kernel arguments, OS image,
 *              extensions, kernel type, core's password hash, one at a
 *              time; the journal records each one done ("osStep")
 *   actions -> daemon-reload / reload / restart (live only), or
 *   reboot  -> run the reboot command; done when the boot id changed
 *              (live) or when the command exited 0 (not live)
 *   health  -> the pool's checks (health.c), after the actions or reboot
 *   finish  -> record current, report Done, uncordon, drop the journal
 * The phases work on the typed journal (journal.c) and write it back.
 */
#include "agent/agent_int.h"
#include "fsio/fsio.h"
#include "osenv/osenv.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const mcg_acfg empty_cfg = {0};

/* The state file of the image booted before the first rebase (baseimage.c). */
#define BASE_IMAGE "base-image"

void mcg_agent_update_free(mcg_update *u)
{
    mcg_agent_journal_clear(&u->j);
    mcg_acfg_free(u->old);
    mcg_acfg_free(u->new_cfg);
    free(u->revert_to);
    free(u->revert_spec);
    free(u->revert_reason);
    memset(u, 0, sizeof(*u));
}

int mcg_agent_phase_enter(mcg_agent *a, mcg_update *u, mcg_phase phase, mcg_err *err)
{
    u->j.phase = phase;
    return mcg_agent_journal_write(a, &u->j, err);
}

/* ---------------------------------------------------------- commands */

/* sh -c cmd; its exit status (128 + signal; -1 when it could not run). */
static int run_cmd(mcg_agent *a, const char *cmd)
{
    mcg_agent_log(a, 1, "running: %s", cmd);
    char *argv[] = {(char *)"sh", (char *)"-c", (char *)cmd, NULL};
    pid_t pid;
    if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) != 0)
        return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status)
                             : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void read_boot_id(char out[64])
{
    const char *p = mcg_env_get("MCGIT_BOOT_ID_FILE"); /* tests: a fake host's boot id */
    FILE *f = fopen(p && *p ? p : "/proc/sys/kernel/random/boot_id", "re");
    out[0] = '\0';
    if (f) {
        if (!fgets(out, 64, f))
            out[0] = '\0';
        fclose(f);
    }
    out[strcspn(out, "\n")] = '\0';
}

/* ---------------------------------------------------------- apply */

/*
 * Roll the disk back from new_cfg to old (NULL: nothing managed): the
 * executor run backwards. created (the directories mcgit made, including
 * the forward run's) is updated: those old does not need are removed.
 */
static void rollback(mcg_agent *a, const mcg_acfg *old, const mcg_acfg *new_cfg,
                     const mcg_plan_disk *fwd, mcg_strv *created)
{
    mcg_plan_disk rb = {0};
    for (size_t i = 0; i < fwd->restores.n; i++)
        mcg_strv_push(&rb.backups, fwd->restores.v[i]);
    for (size_t i = 0; i < new_cfg->n; i++) {
        const char *p = new_cfg->ents[i].path;
        char *b = mcg_backup_name(p);
        struct stat st;
        if (!mcg_acfg_find(old, p) && fstatat(a->statefd, b, &st, AT_SYMLINK_NOFOLLOW) == 0)
            mcg_strv_push(&rb.restores, p);
        free(b);
    }
    mcg_exec_stats st = {0, 0};
    mcg_err e = {0};
    if (mcg_plan_execute(&a->root, a->statefd, new_cfg, old ? old : &empty_cfg, &rb, false, created,
                         &st, &e) != 0)
        mcg_agent_log(a, 1, "rollback incomplete: %s", e.msg);
    mcg_plan_clean_temps(&a->root, new_cfg);
    mcg_plan_disk_free(&rb);
}

/*
 * Revert: the disk rolled back to the old config after a failed write
 * (why), the journal dropped, the node uncordoned and left Degraded.
 */
static void phase_revert(mcg_agent *a, mcg_cluster *c, mcg_update *u, mcg_strv *created,
                         mcg_agent_result *res, const mcg_err *why)
{
    rollback(a, u->old, u->new_cfg, &u->j.disk, created);
    mcg_err e2 = {0};
    if (mcg_agent_created_save(a, created, &e2) != 0)
        mcg_agent_log(a, 1, "%s", e2.msg);
    mcg_agent_journal_drop(a);
    if (u->j.cordoned)
        mcg_agent_uncordon(a, c);
    mcg_agent_reason(res, MCG_AGENT_DEGRADED, "applying %s: %s", u->j.target, why->msg);
    mcg_agent_report_degraded(a, c, res);
    u->stop = true;
}

/*
 * Back up and write: mcg_plan_execute takes the backups of what mcgit
 * overwrites first (synced), then makes the disk match the target. A
 * failure reverts (phase_revert).
 */
static int phase_write(mcg_agent *a, mcg_cluster *c, mcg_update *u, mcg_agent_result *res,
                       mcg_err *err)
{
    mcg_exec_stats st = {0, 0};
    mcg_strv created = {0};
    mcg_err e = {0};
    int rc = 0;
    mcg_agent_created_load(a, &created);
    mcg_agent_testpoint("journal-written");
    mcg_agent_log(a, 1, "%s %s (from %s)", u->resumed ? "resuming update to" : "updating to",
                  u->j.target, u->j.from ? u->j.from : "nothing");
    if (mcg_plan_execute(&a->root, a->statefd, u->old, u->new_cfg, &u->j.disk, u->j.force, &created,
                         &st, &e) != 0) {
        phase_revert(a, c, u, &created, res, &e);
        goto out;
    }
    if ((rc = mcg_agent_created_save(a, &created, err)) != 0)
        goto out;
    if (u->resumed) {
        mcg_plan_clean_temps(&a->root, u->new_cfg);
        mcg_plan_clean_temps(&a->root, u->old);
    }
    res->applied = true;
    res->written += st.written;
    res->removed += st.removed;
    rc = mcg_agent_phase_enter(a, u, u->j.os.n ? MCG_PHASE_OS : MCG_PHASE_ACTIONS, err);
    mcg_agent_testpoint("written");
out:
    mcg_strv_free(&created);
    return rc;
}

/* ---------------------------------------------------------- os */

/*
 * The image step of osImageURL (baseimage.c): "record" keeps what the node
 * boots now, once, before its first rebase; "restore" rebases back to it
 * when the field goes (without a record the node stays on its image).
 * *run: the command to run, if any (caller frees). False: failed (reason set).
 */
static bool base_image_step(mcg_agent *a, const mcg_osstep *step, char **run, mcg_agent_result *res)
{
    char *rec = NULL;
    size_t len = 0;
    mcg_err e = {0};
    bool have = mcg_agent_state_read(a, BASE_IMAGE, &rec, &len, &e) == 0;
    *run = NULL;
    if (step->kind == MCG_OSSTEP_RECORD) {
        free(rec);
        if (have || (!a->live && !a->o.host_exec))
            return true;
        rec = mcg_booted_image_query(a->o.host_exec, step->bootc, &e);
        bool ok = rec && mcg_agent_state_write(a, BASE_IMAGE, rec, strlen(rec), &e) == 0;
        if (ok)
            mcg_agent_log(a, 1, "booted image before the first rebase: %s", rec);
        else
            mcg_agent_reason(res, MCG_AGENT_DEGRADED,
                             "osImageURL: cannot record the booted image: %s", e.msg);
        free(rec);
        return ok;
    }
    if (!have) {
        mcg_agent_log(a, 1,
                      "osImageURL unset: no image was recorded before a rebase, the node stays on "
                      "its image");
        return true;
    }
    rec[strcspn(rec, "\n")] = '\0';
    *run = mcg_booted_image_command(rec);
    if (!*run)
        mcg_agent_reason(res, MCG_AGENT_DEGRADED,
                         "osImageURL: the recorded booted image '%s' is not understood", rec);
    free(rec);
    return *run != NULL;
}

/* One OS step (a command, or a file step); false when it failed (reported Degraded). */
static bool os_step(mcg_agent *a, mcg_cluster *c, const mcg_osstep *step, mcg_agent_result *res)
{
    const char *field = step->field, *run = step->kind == MCG_OSSTEP_RUN ? step->arg : NULL;
    mcg_err e = {0};
    if (step->kind == MCG_OSSTEP_RECORD || step->kind == MCG_OSSTEP_RESTORE) {
        char *back = NULL;
        if (!base_image_step(a, step, &back, res)) {
            mcg_agent_report_degraded(a, c, res);
            return false;
        }
        if (!back)
            return true;
        mcg_osstep s2 = {MCG_OSSTEP_RUN, step->field, back, NULL, false};
        bool ok = os_step(a, c, &s2, res);
        if (ok)
            mcg_agent_state_remove(a, BASE_IMAGE);
        free(back);
        return ok;
    }
    if (run && !a->live && !a->o.host_exec) {
        mcg_agent_log(a, 1, "skipped (not live): %s", run);
        return true;
    }
    if (run) {
        char *cmd = a->o.host_exec ? mcg_sprintf("%s %s", a->o.host_exec, run) : mcg_strdup(run);
        int st = run_cmd(a, cmd);
        if (st != 0)
            mcg_agent_reason(res, MCG_AGENT_DEGRADED, "%s: '%s' failed (exit %d) on node %s", field,
                             cmd, st, a->o.node ? a->o.node : "?");
        free(cmd);
        if (st != 0) {
            mcg_agent_report_degraded(a, c, res);
            return false;
        }
        return true;
    }
    if (mcg_osstep_file(&a->root, step, &e) != 0) {
        mcg_agent_reason(res, MCG_AGENT_DEGRADED, "%s: %s on node %s", field, e.msg,
                         a->o.node ? a->o.node : "?");
        mcg_agent_report_degraded(a, c, res);
        return false;
    }
    return true;
}

/* The OS steps from the one the journal reached ("osStep"), each recorded when done. */
static int phase_os(mcg_agent *a, mcg_cluster *c, mcg_update *u, mcg_agent_result *res,
                    mcg_err *err)
{
    int rc;
    for (size_t k = u->j.os_step; k < u->j.os.n; k++) {
        if (!os_step(a, c, &u->j.os.v[k], res)) {
            u->stop = true; /* the journal retries this step on the next pass */
            return 0;
        }
        u->j.os_step = k + 1;
        if ((rc = mcg_agent_journal_write(a, &u->j, err)) != 0)
            return rc;
    }
    return mcg_agent_phase_enter(a, u, MCG_PHASE_ACTIONS, err);
}

/* ---------------------------------------------------------- actions, reboot */

/* The systemctl verbs of the journal's actions: daemon-reload, reload 'u', restart 'u'. */
static void action_cmds(const mcg_journal *j, mcg_strv *cmds)
{
    if (j->daemon_reload)
        mcg_strv_push(cmds, "daemon-reload");
    for (size_t i = 0; i < j->reload.n; i++) {
        char *s = mcg_sprintf("reload '%s'", j->reload.v[i]);
        mcg_strv_push(cmds, s);
        free(s);
    }
    for (size_t i = 0; i < j->restart.n; i++) {
        char *s = mcg_sprintf("restart '%s'", j->restart.v[i]);
        mcg_strv_push(cmds, s);
        free(s);
    }
}

/* Run the journal's systemctl actions (live only); false when one failed (reason set). */
static bool run_actions(mcg_agent *a, const mcg_journal *j, mcg_agent_result *res)
{
    const char *sc = a->o.systemctl ? a->o.systemctl : "systemctl";
    mcg_strv cmds = {0};
    action_cmds(j, &cmds);
    bool failed = false;
    for (size_t i = 0; i < cmds.n && !failed; i++) {
        if (!a->live) {
            mcg_agent_log(a, 1, "skipped (not live): systemctl %s", cmds.v[i]);
            continue;
        }
        char *cmd = mcg_sprintf("%s %s", sc, cmds.v[i]);
        int st = run_cmd(a, cmd);
        if (st != 0) {
            mcg_agent_reason(res, MCG_AGENT_DEGRADED, "%s failed (exit %d)", cmd, st);
            failed = true;
        }
        free(cmd);
    }
    mcg_strv_free(&cmds);
    return !failed;
}

/*
 * MCO's writeUnits: a unit of the config whose `enabled` is unset, and not
 * masked, gets `systemctl preset` on every update (live only). A failure is
 * logged, not fatal, as MCO's daemon logs it: a drop-in may name a unit the
 * OS does not have.
 */
static void run_presets(mcg_agent *a, const mcg_acfg *cfg)
{
    const char *sc = a->o.systemctl ? a->o.systemctl : "systemctl";
    for (size_t i = 0; cfg && i < cfg->ign.nunits; i++) {
        const mcg_unit *un = &cfg->ign.units[i];
        if (un->enabled != MCG_UNSET || un->mask == MCG_TRUE)
            continue;
        if (!a->live) {
            mcg_agent_log(a, 1, "skipped (not live): systemctl preset '%s'", un->name);
            continue;
        }
        char *cmd = mcg_sprintf("%s preset '%s'", sc, un->name);
        int st = run_cmd(a, cmd);
        if (st != 0)
            mcg_agent_log(a, 1, "%s failed (exit %d): the unit's preset not applied", cmd, st);
        free(cmd);
    }
}

/* After the actions or the reboot: the pool's health checks, if it has any
 * (a revert runs none: it goes back to the config that was healthy). */
static mcg_phase after_disruption(const mcg_update *u)
{
    return u->new_cfg->ign.health && !u->j.revert ? MCG_PHASE_HEALTH : MCG_PHASE_COMMIT;
}

/*
 * Disruption: presets run (run_presets); a reboot is recorded with the boot
 * id it must change, for phase_reboot; otherwise daemon-reload, reload and
 * restart run.
 */
static int phase_disruption(mcg_agent *a, mcg_cluster *c, mcg_update *u, mcg_agent_result *res,
                            mcg_err *err)
{
    run_presets(a, u->new_cfg); /* before the reboot or the actions, as MCO writes units */
    if (u->j.reboot) {
        char bid[64];
        read_boot_id(bid);
        free(u->j.boot_id);
        u->j.boot_id = mcg_strdup(bid);
        return mcg_agent_phase_enter(a, u, MCG_PHASE_REBOOT, err);
    }
    mcg_agent_testpoint("before-actions");
    if (!run_actions(a, &u->j, res)) { /* files are in place; the journal retries the actions */
        mcg_agent_report_degraded(a, c, res);
        u->stop = true;
        return 0;
    }
    return mcg_agent_phase_enter(a, u, after_disruption(u), err);
}

/*
 * The reboot of a live node: run the reboot command once, then wait (the
 * pass ends Working) until the boot id differs from the journal's. True
 * when the pass ends here (waiting, or the command failed).
 */
static bool reboot_live(mcg_agent *a, mcg_cluster *c, mcg_update *u, mcg_agent_result *res)
{
    char bid[64];
    read_boot_id(bid);
    const char *was = u->j.boot_id;
    if (was && strcmp(was, bid) != 0) {
        mcg_agent_log(a, 1, "reboot done (boot id %s)", bid);
        return false;
    }
    if (!a->reboot_issued) {
        a->reboot_issued = true;
        mcg_agent_event(a, c, false, "Reboot", "Node will reboot into config %s", u->j.target);
        const char *cmd = a->o.reboot_command ? a->o.reboot_command : "systemctl reboot";
        mcg_agent_testpoint("before-reboot");
        int st = run_cmd(a, cmd);
        if (st != 0) {
            a->reboot_issued = false;
            mcg_agent_reason(res, MCG_AGENT_DEGRADED, "reboot command '%s' failed (exit %d)", cmd,
                             st);
            mcg_agent_report_degraded(a, c, res);
            return true;
        }
    }
    mcg_agent_reason(res, MCG_AGENT_WORKING, "waiting for the reboot into %s", u->j.target);
    snprintf(res->config, sizeof(res->config), "%s", u->j.from ? u->j.from : "");
    return true;
}

/* The reboot: on a live node run and awaited; otherwise its command run, or only recorded. */
static int phase_reboot(mcg_agent *a, mcg_cluster *c, mcg_update *u, mcg_agent_result *res,
                        mcg_err *err)
{
    res->rebooted = true;
    if (a->live) {
        if (reboot_live(a, c, u, res)) {
            u->stop = true;
            return 0;
        }
    } else if (a->o.reboot_command) {
        mcg_agent_event(a, c, false, "Reboot", "Node will reboot into config %s", u->j.target);
        int st = run_cmd(a, a->o.reboot_command);
        if (st != 0) {
            mcg_agent_reason(res, MCG_AGENT_DEGRADED, "reboot command '%s' failed (exit %d)",
                             a->o.reboot_command, st);
            mcg_agent_report_degraded(a, c, res);
            u->stop = true;
            return 0;
        }
    } else {
        mcg_agent_event(a, c, false, "Reboot",
                        "Node will reboot into config %s (recorded: not live)", u->j.target);
        mcg_agent_log(a, 1, "reboot recorded (not live: nothing run)");
    }
    return mcg_agent_phase_enter(a, u, after_disruption(u), err);
}

/* ---------------------------------------------------------- commit */

/* After the commit's report: the events, the journal dropped, the target cached as current. */
static void commit_done(mcg_agent *a, mcg_cluster *c, mcg_update *u)
{
    const char *target = u->j.target;
    if (u->j.cordoned)
        mcg_agent_event(a, c, false, "Uncordon",
                        "Update completed for config %s and node has been uncordoned", target);
    if (!u->j.revert)
        mcg_agent_event(a, c, false, "NodeDone", "Setting node %s, currentConfig %s to Done",
                        a->o.node, target);
    a->degraded_evented[0] = '\0';
    mcg_agent_journal_drop(a);
    mcg_agent_testpoint("committed");
    mcg_acfg_free(a->cur);
    a->cur = u->new_cfg; /* transferred */
    u->new_cfg = NULL;
}

/*
 * Commit: record current, report Done (and uncordon), drop the journal and
 * keep the target as the current config. With the cluster unreachable the
 * journal stays, so that Done is reported on a later pass.
 */
static int phase_commit(mcg_agent *a, mcg_cluster *c, mcg_update *u, mcg_agent_result *res,
                        mcg_err *err)
{
    const char *target = u->j.target;
    char *line = mcg_sprintf("%s\n", target);
    mcg_agent_testpoint("before-commit");
    int rc = mcg_agent_state_write(a, "current", line, strlen(line), err);
    free(line);
    if (rc)
        return rc;
    mcg_agent_testpoint("current-written");
    mcg_agent_configs_prune(a, target);
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.current = target;
    p.state = "Done";
    /* MCO clears the reason on Done; a first config says what it took as installed */
    const char *installed = u->j.installed;
    p.reason = installed ? installed : "";
    if (installed)
        mcg_agent_log(a, 1, "%s", installed);
    if (u->j.cordoned)
        p.unschedulable = 0;
    if (!u->j.revert)
        p.failed_check = ""; /* healthy: no failed check on the node any more */
    snprintf(res->config, sizeof(res->config), "%s", target);
    res->state = MCG_AGENT_DONE;
    res->reason[0] = '\0';
    const char *revert = u->j.revert;
    if (revert) { /* back on the healthy config, Degraded with why */
        mcg_agent_reason(res, MCG_AGENT_DEGRADED, "%s; reverted to %s", revert, target);
        p.state = "Degraded";
        p.reason = res->reason;
    }
    mcg_agent_log(a, 1, "%s: %s", revert ? "Reverted" : "Done", target);
    if (mcg_agent_patch(a, c, &p) != 0) {
        res->offline = true; /* keep the journal: report once the cluster is back */
        return 0;
    }
    commit_done(a, c, u);
    return 0;
}

/* ---------------------------------------------------------- the run */

/*
 * Load the configs not given. A target that cannot be loaded ends the
 * update: journal dropped, node uncordoned and Degraded (u->stop).
 */
static void update_open(mcg_agent *a, mcg_cluster *c, mcg_update *u, mcg_agent_result *res)
{
    mcg_err e = {0};
    if (!u->new_cfg && mcg_agent_config_load(a, u->j.target, true, &u->new_cfg, &e) != 0) {
        mcg_agent_reason(res, MCG_AGENT_DEGRADED, "resuming update to %s: %s", u->j.target, e.msg);
        mcg_agent_journal_drop(a);
        if (u->j.cordoned)
            mcg_agent_uncordon(a, c);
        mcg_agent_report_degraded(a, c, res);
        u->stop = true;
        return;
    }
    if (!u->old && u->j.from && mcg_agent_config_load(a, u->j.from, false, &u->old, &e) != 0)
        mcg_agent_log(a, 1, "previous config %s: %s (treating as none)", u->j.from, e.msg);
    mcg_acfg_keep_ssh(u->new_cfg, u->old); /* as planned */
    snprintf(res->config, sizeof(res->config), "%s", u->j.from ? u->j.from : "");
}

int mcg_agent_update_run(mcg_agent *a, mcg_cluster *c, mcg_update *u, mcg_agent_result *res,
                         mcg_err *err)
{
    int rc = 0;
    update_open(a, c, u, res);
    if (!rc && !u->stop && u->j.phase == MCG_PHASE_WRITE)
        rc = phase_write(a, c, u, res, err);
    if (!rc && !u->stop && u->j.phase == MCG_PHASE_OS)
        rc = phase_os(a, c, u, res, err);
    if (!rc && !u->stop && u->j.phase == MCG_PHASE_ACTIONS)
        rc = phase_disruption(a, c, u, res, err);
    if (!rc && !u->stop && u->j.phase == MCG_PHASE_REBOOT)
        rc = phase_reboot(a, c, u, res, err);
    if (!rc && !u->stop && u->j.phase == MCG_PHASE_HEALTH)
        rc = mcg_agent_phase_health(a, c, u, res, err);
    if (!rc && !u->stop && u->j.phase == MCG_PHASE_COMMIT)
        rc = phase_commit(a, c, u, res, err);
    return rc;
}
