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

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define HEALTH_GRACE_MS 2000 /* from SIGTERM to SIGKILL */
#define HEALTH_TICK_MS 50    /* how often a running check is looked at */

char *mcg_health_cmd(const json_t *check, const mcg_health_env *env, bool failed_probe)
{
    const char *unit = json_string_value(json_object_get(check, "unit"));
    const json_t *cmd = json_object_get(check, "command");
    mcg_buf b = MCG_BUF_INIT;
    if (unit && mcg_name_is_unit(unit)) {
        if (!env->live && !env->systemctl)
            return NULL;
        mcg_buf_printf(&b, "%s %s ", env->systemctl ? env->systemctl : "systemctl",
                       failed_probe ? "is-failed --quiet" : "is-active --quiet");
        mcg_sh_quote(&b, unit);
    } else if (json_is_array(cmd) && json_array_size(cmd) && !failed_probe) {
        if (!env->live && !env->host_exec)
            return NULL;
        if (env->host_exec)
            mcg_buf_printf(&b, "%s ", env->host_exec);
        size_t i;
        json_t *w;
        json_array_foreach(cmd, i, w) {
            if (i)
                mcg_buf_putc(&b, ' ');
            mcg_sh_quote(&b, json_string_value(w) ? json_string_value(w) : "");
        }
    } else {
        return NULL;
    }
    size_t n;
    return mcg_buf_detach(&b, &n);
}

const char *mcg_health_name(const json_t *check)
{
    const char *n = json_string_value(json_object_get(check, "name"));
    return n ? n : "?";
}

const char *mcg_health_cannot_run(const json_t *check)
{
    const char *unit = json_string_value(json_object_get(check, "unit"));
    if (unit && mcg_name_is_unit(unit))
        return "a unit check needs a live agent or --systemctl, and this agent has neither";
    if (json_is_array(json_object_get(check, "command")))
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

int mcg_health_exec(const char *cmd, int64_t deadline_ms, volatile sig_atomic_t *stop,
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
