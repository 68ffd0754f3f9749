/*
 * health.c — a pool's health checks (the rendered spec's mcgitHealth): the
 * command line of each check, and the bounded run of one.
 *
 * A unit is active when `systemctl is-active UNIT` exits 0, and has failed
 * for good when `systemctl is-failed UNIT` does; a command passes when it
 * exits 0. Units go through the agent's --systemctl, commands through its
 * --host-exec prefix (how a simulated node runs them). A check this node
 * has no means to run (neither live nor given those) is never skipped: the
 * health phase counts it as failed, saying why.
 *
 * Each run is bounded: it gets its own process group, its output goes to a
 * pipe of which the first MCG_HEALTH_OUTPUT_MAX bytes are kept and the rest
 * counted and dropped, and at its deadline (or when the agent is stopping)
 * the whole group gets SIGTERM, then SIGKILL after a grace period. Whatever
 * a check left running in its group when it exited is killed too.
 */
#include "agent/agent_int.h"
#include "fsio/fsio.h"
#include "osenv/osenv.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define HEALTH_GRACE_MS 2000 /* from SIGTERM to SIGKILL */
#define HEALTH_TICK_MS 50    /* how often a running check is looked at */

static void mcg_health_spec_read(mcg_health_spec *out, const json_t *health)
{
    memset(out, 0, sizeof(*out));
    const json_t *checks = json_object_get(health, "checks");
    const char *on = json_string_value(json_object_get(health, "onFailure"));
    out->timeout = (int64_t)json_integer_value(json_object_get(health, "timeout"));
    out->halt = on && !strcmp(on, "Halt");
    out->checks = mcg_calloc(json_array_size(checks) + 1, sizeof(*out->checks));
    size_t i;
    json_t *hc;
    json_array_foreach(checks, i, hc) {
        mcg_health_check *c = &out->checks[out->n++];
        const char *name = json_string_value(json_object_get(hc, "name"));
        const char *unit = json_string_value(json_object_get(hc, "unit"));
        c->name = mcg_strdup(name ? name : "?");
        c->unit = unit && mcg_name_is_unit(unit) ? mcg_strdup(unit) : NULL;
        size_t k;
        json_t *w;
        json_array_foreach(json_object_get(hc, "command"), k, w) {
            mcg_strv_push(&c->command, json_string_value(w) ? json_string_value(w) : "");
        }
    }
}

static void mcg_health_spec_free(mcg_health_spec *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->checks[i].name);
        free(s->checks[i].unit);
        mcg_strv_free(&s->checks[i].command);
    }
    free(s->checks);
    memset(s, 0, sizeof(*s));
}

/*
 * The command line of one check: for a unit `systemctl is-active --quiet
 * UNIT` (failed_probe: `is-failed --quiet`, whose exit 0 means the unit
 * failed for good), for a command the command (NULL for failed_probe); NULL
 * when this node cannot run it. Caller frees.
 */
static char *mcg_health_cmd(const mcg_health_check *check, const mcg_health_env *env,
                            bool failed_probe)
{
    mcg_buf b = MCG_BUF_INIT;
    if (check->unit) {
        if (!env->live && !env->systemctl)
            return NULL;
        mcg_buf_printf(&b, "%s %s ", env->systemctl ? env->systemctl : "systemctl",
                       failed_probe ? "is-failed --quiet" : "is-active --quiet");
        mcg_sh_quote(&b, check->unit);
    } else if (check->command.n && !failed_probe) {
        if (!env->live && !env->host_exec)
            return NULL;
        if (env->host_exec)
            mcg_buf_printf(&b, "%s ", env->host_exec);
        for (size_t i = 0; i < check->command.n; i++) {
            if (i)
                mcg_buf_putc(&b, ' ');
            mcg_sh_quote(&b, check->command.v[i]);
        }
    } else {
        return NULL;
    }
    size_t n;
    return mcg_buf_detach(&b, &n);
}

/* Why this node cannot run check (mcg_health_cmd gave NULL): one phrase. */
static const char *mcg_health_cannot_run(const mcg_health_check *check)
{
    if (check->unit)
        return "a unit check needs a live agent or --systemctl, and this agent has neither";
    if (check->command.n)
        return "a command check needs a live agent or --host-exec, and this agent has neither";
    return "the check is neither a unit nor a command";
}

/* Start `sh -c cmd` in a process group of its own, stdin /dev/null, stdout
 * and stderr into *outfd (non-blocking). 0, or -1 with errno. */
static int spawn_check(const char *cmd, pid_t *pid, int *outfd)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, def;
    sigemptyset(&none);
    sigemptyset(&def);
    sigaddset(&def, SIGTERM);
    sigaddset(&def, SIGINT);
    sigaddset(&def, SIGPIPE);
    sigaddset(&def, SIGCHLD);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_adddup2(&fa, p[1], 2);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &def);
    char *argv[] = {(char *)"sh", (char *)"-c", (char *)cmd, NULL};
    int rc = posix_spawn(pid, "/bin/sh", &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        errno = rc;
        return -1;
    }
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    *outfd = p[0];
    return 0;
}

/* Read what the pipe holds now: the first bytes kept, the rest counted. False at EOF. */
static bool take_output(int fd, mcg_health_run *r)
{
    char buf[4096];
    for (int round = 0; round < 64; round++) { /* a flood cannot keep the watch from its clock */
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK;
        if (n == 0)
            return false;
        size_t room = MCG_HEALTH_OUTPUT_MAX - r->kept, k = (size_t)n < room ? (size_t)n : room;
        memcpy(r->out + r->kept, buf, k);
        r->kept += k;
        r->out[r->kept] = '\0';
        r->dropped += (size_t)n - k;
    }
    return true;
}

/* Whether the check's leader has exited (not reaped, so its group id stays its own). */
static bool leader_exited(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

/* SIGTERM to the group, SIGKILL once the leader is gone or the grace period ends. */
static void kill_group(pid_t pid, bool grace)
{
    kill(-pid, SIGTERM);
    int64_t until = mcg_mono_ms() + (grace ? HEALTH_GRACE_MS : 0);
    while (grace && !leader_exited(pid) && mcg_mono_ms() < until) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    kill(-pid, SIGKILL);
}

/* Wait for the check, reading its output, until it exits, the deadline, or a stop. */
static void watch_check(pid_t pid, int fd, int64_t deadline_ms, volatile sig_atomic_t *stop,
                        mcg_health_run *r)
{
    bool open = true;
    for (;;) {
        if (leader_exited(pid))
            break;
        int64_t left = deadline_ms - mcg_mono_ms();
        if (left <= 0) {
            r->timed_out = true;
            break;
        }
        if (stop && *stop) {
            r->interrupted = true;
            break;
        }
        int wait_ms = left < HEALTH_TICK_MS ? (int)left : HEALTH_TICK_MS;
        struct pollfd pf = {fd, POLLIN, 0};
        if (open && poll(&pf, 1, wait_ms) > 0)
            open = take_output(fd, r);
        else if (!open) {
            struct timespec ts = {0, (long)wait_ms * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    /* at the deadline the group gets its grace period; leftovers of a finished check do not */
    kill_group(pid, r->timed_out || r->interrupted);
    if (open)
        take_output(fd, r);
}

/*
 * Run `sh -c cmd` in a process group of its own until it exits, the
 * monotonic deadline_ms (mcg_mono_ms) or *stop (may be NULL); at either of
 * the last two the group gets SIGTERM, then SIGKILL after a grace period.
 * What the check leaves running in its group is killed when it exits. Its
 * output is bounded (r->out). 0, or -1 (errno) when it could not be started.
 */
static int mcg_health_exec(const char *cmd, int64_t deadline_ms, volatile sig_atomic_t *stop,
                           mcg_health_run *r)
{
    memset(r, 0, sizeof(*r));
    r->status = -1;
    pid_t pid;
    int fd;
    if (spawn_check(cmd, &pid, &fd) != 0)
        return -1;
    watch_check(pid, fd, deadline_ms, stop, r);
    close(fd);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    r->status = WIFEXITED(status) ? WEXITSTATUS(status)
                                  : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return 0;
}

/* ------------------------------------------------------------ the health phase */

#define HEALTH_POLL_MS 1000
#define HEALTH_MIN_MS 1000 /* a check run gets at least this, even past the deadline */

/* What one round of the checks found. */
enum { HEALTH_PASSED, HEALTH_PENDING, HEALTH_FAILED, HEALTH_STOPPED };

/* The output of a check that did not pass, in the log (bounded by the run). */
static void health_output(mcg_agent *a, const char *name, const mcg_health_run *r)
{
    if (!r->kept)
        return;
    const char *p = r->out;
    while (*p) {
        size_t k = strcspn(p, "\n");
        mcg_agent_log(a, 1, "health check %s output: %.*s", name, (int)k, p);
        p += k + (p[k] == '\n');
    }
    if (r->dropped)
        mcg_agent_log(a, 1, "health check %s output: (%zu more bytes dropped)", name, r->dropped);
}

/* Why check hc did not pass (run r, or rc: it could not start); HEALTH_PENDING or _FAILED. */
static int health_verdict(mcg_agent *a, const mcg_health_check *hc, int rc, const mcg_health_run *r,
                          char *why, size_t whyn)
{
    mcg_health_env env = {a->live, a->o.systemctl, a->o.host_exec};
    const char *argv0 = hc->command.n ? hc->command.v[0] : "";
    if (rc != 0) {
        snprintf(why, whyn, "cannot start '/bin/sh': %s", strerror(errno));
        return HEALTH_PENDING;
    }
    if (r->timed_out) {
        snprintf(why, whyn, "%s%s%s still running at the deadline: its process group was killed",
                 hc->unit ? "unit " : "'", hc->unit ? hc->unit : argv0, hc->unit ? "" : "'");
        return HEALTH_PENDING;
    }
    if (!hc->unit) {
        snprintf(why, whyn, "'%s' exited %d", argv0, r->status);
        return HEALTH_PENDING;
    }
    char *probe = mcg_health_cmd(hc, &env, true);
    mcg_health_run *pr = mcg_calloc(1, sizeof(*pr));
    bool failed = probe &&
                  mcg_health_exec(probe, mcg_mono_ms() + HEALTH_MIN_MS * 10, a->stop, pr) == 0 &&
                  !pr->timed_out && pr->status == 0;
    free(probe);
    free(pr);
    snprintf(why, whyn, "unit %s %s", hc->unit, failed ? "failed" : "is not active");
    return failed ? HEALTH_FAILED : HEALTH_PENDING;
}

/*
 * One round of the pool's checks, each run bounded by the phase's deadline
 * (unix seconds): HEALTH_PASSED when all pass; otherwise the first that did
 * not (*name, why; its run in *last): HEALTH_PENDING while it may still
 * pass, HEALTH_FAILED when it never will (a unit failed for good, a check
 * this node cannot run), HEALTH_STOPPED when the agent is stopping.
 */
static int health_round(mcg_agent *a, const mcg_health_spec *hs, int64_t deadline,
                        const char **name, char *why, size_t whyn, mcg_health_run *last)
{
    mcg_health_env env = {a->live, a->o.systemctl, a->o.host_exec};
    for (size_t i = 0; i < hs->n; i++) {
        const mcg_health_check *hc = &hs->checks[i];
        *name = hc->name;
        char *cmd = mcg_health_cmd(hc, &env, false);
        if (!cmd) { /* never skipped: a check that cannot run has not passed */
            snprintf(why, whyn, "not run: %s", mcg_health_cannot_run(hc));
            return HEALTH_FAILED;
        }
        int64_t left = (deadline - (int64_t)time(NULL)) * 1000;
        int rc = mcg_health_exec(cmd, mcg_mono_ms() + (left > HEALTH_MIN_MS ? left : HEALTH_MIN_MS),
                                 a->stop, last);
        free(cmd);
        if (rc == 0 && last->interrupted)
            return HEALTH_STOPPED;
        if (rc == 0 && !last->timed_out && last->status == 0)
            continue;
        return health_verdict(a, hc, rc, last, why, whyn);
    }
    return HEALTH_PASSED;
}

/* The update's target is what the disk holds: recorded as current, and as failed. */
static int record_failed(mcg_agent *a, const char *target, const char *reason, mcg_err *err)
{
    char *cur = mcg_sprintf("%s\n", target), *failed = mcg_sprintf("%s\n%s\n", target, reason);
    int rc = mcg_agent_state_write(a, MCG_AGENT_FAILED_TARGET, failed, strlen(failed), err);
    if (!rc)
        rc = mcg_agent_state_write(a, "current", cur, strlen(cur), err);
    free(cur);
    free(failed);
    return rc;
}

/*
 * A check failed: the target is remembered as failed (never applied again
 * while it is the desired config) and the update ends here. With onFailure
 * Revert the pass is handed the previous config to go back to, as an
 * update of its own (u->revert_to: files, units, keys, OS fields, a reboot
 * if it needs one), which ends Degraded with the reason. With Halt (or
 * nothing to go back to) the node stays as it is, Degraded.
 */
static int health_failed(mcg_agent *a, mcg_cluster *c, mcg_update *u, bool halt, const char *check,
                         const char *reason, mcg_agent_result *res, mcg_err *err)
{
    bool revert = u->j.from && !halt;
    int rc = record_failed(a, u->j.target, reason, err);
    if (rc)
        return rc;
    mcg_agent_journal_drop(a);
    u->stop = true;
    mcg_agent_log(a, 1, "%s%s", reason, revert ? ": reverting" : "");
    mcg_agent_event(a, c, true, "HealthCheckFailed", "%s", reason);
    mcg_err e = {0};
    if (revert && mcg_agent_config_read(a, u->j.from, &u->revert_spec, &u->revert_len, &e) != 0) {
        mcg_agent_log(a, 1, "cannot revert: %s", e.msg);
        revert = false;
    }
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.failed_check = check; /* beside the human reason, for the controller */
    p.failed_config = u->j.target;
    if (revert) { /* the pass starts it */
        mcg_agent_patch(a, c, &p);
        u->revert_to = mcg_strdup(u->j.from);
        u->revert_reason = mcg_strdup(reason);
        return 0;
    }
    mcg_agent_reason(res, MCG_AGENT_DEGRADED, "%s", reason);
    snprintf(res->config, sizeof(res->config), "%s", u->j.target);
    p.current = u->j.target;
    p.state = "Degraded";
    p.reason = res->reason;
    if (u->j.cordoned) /* as after a failed write: Degraded nodes are not left cordoned */
        p.unschedulable = 0;
    mcg_agent_patch(a, c, &p);
    return 0;
}

/* Working, naming the check waited for (once per check). */
static void health_waiting(mcg_agent *a, mcg_cluster *c, const char *name, const char *why,
                           const mcg_health_run *run, mcg_agent_result *res)
{
    mcg_agent_reason(res, MCG_AGENT_WORKING, "waiting for health check %s (%s)", name, why);
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.state = "Working";
    p.reason = res->reason;
    mcg_agent_patch(a, c, &p);
    mcg_agent_log(a, 1, "%s", res->reason);
    health_output(a, name, run);
}

/*
 * Health: the pool's checks, run until all pass or the timeout (from the
 * first time this phase was entered, kept in the journal across a restart
 * or the reboot) ends. Meanwhile the node is Working, its reason naming the
 * check it waits for.
 */
int mcg_agent_phase_health(mcg_agent *a, mcg_cluster *c, mcg_update *u, mcg_agent_result *res,
                           mcg_err *err)
{
    mcg_health_spec hs;
    mcg_health_spec_read(&hs, u->new_cfg->ign.health);
    int rc = 0;
    if (!u->j.has_deadline) {
        u->j.has_deadline = true;
        u->j.health_deadline = (int64_t)time(NULL) + hs.timeout;
        if ((rc = mcg_agent_journal_write(a, &u->j, err)) != 0)
            goto out;
    }
    int64_t deadline = u->j.health_deadline;
    const char *name = NULL, *shown = NULL;
    char why[512] = "";
    mcg_health_run *run = mcg_calloc(1, sizeof(*run));
    int st;
    while ((st = health_round(a, &hs, deadline, &name, why, sizeof(why), run)) == HEALTH_PENDING &&
           (int64_t)time(NULL) < deadline && !(a->stop && *a->stop)) {
        if (name != shown)
            health_waiting(a, c, name, why, run, res);
        shown = name;
        struct timespec ts = {HEALTH_POLL_MS / 1000, (HEALTH_POLL_MS % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (st != HEALTH_PASSED && st != HEALTH_FAILED && a->stop && *a->stop) {
        /* stopping: the journal resumes the checks, same deadline */
        mcg_agent_reason(res, MCG_AGENT_WORKING,
                         "health checks interrupted: the agent is stopping");
        u->stop = true;
    } else if (st == HEALTH_PASSED) {
        mcg_agent_log(a, 1, "health checks passed");
        rc = mcg_agent_phase_enter(a, u, MCG_PHASE_COMMIT, err);
    } else {
        health_output(a, name, run);
        char human[32];
        mcg_human_duration((int64_t)time(NULL) - (deadline - hs.timeout), human);
        char *reason = mcg_sprintf("health check %s failed %s after update to %s: %s", name, human,
                                   u->j.target, why);
        rc = health_failed(a, c, u, hs.halt, name, reason, res, err);
        free(reason);
    }
    free(run);
out:
    mcg_health_spec_free(&hs);
    return rc;
}
