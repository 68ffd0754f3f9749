/*
 * loop.c — the controller daemon: passes until SIGTERM or SIGINT.
 *
 * Each turn: take or renew the leader lease (a backend without leader
 * election always leads), run one pass (controller.c) when leading, log what
 * changed, then wait for the next turn. On a backend that watches (kube) the
 * wait ends as soon as a node changes, at the latest after the interval,
 * and the lease is renewed between slices of it; elsewhere it is a plain
 * sleep of the interval.
 *
 * SIGTERM and SIGINT are blocked while a pass runs and only let in while the
 * loop waits (ppoll with the old mask, or the cluster's wait with the stop
 * flag lent to it), so a pass is never interrupted half-way (no EINTR inside
 * libgit2 or the cluster store) and a signal that arrives during a pass ends
 * the loop as soon as the pass is done.
 *
 * An operator's `mcgit sync` (sync.c) is read before each pass and answered
 * after it; while waiting, a new request ends the wait (local: at once, as
 * the cluster's wait sees it; kube: at the end of a slice of the wait).
 *
 * Logging goes to stderr as "mcgit controller: ...": each problem once when
 * it appears and "recovered" when it is over, newly unmanaged nodes, and
 * (verbosity >= 1) how many nodes got a new target.
 *
 * Waking (mcg_controller_wake, called by the webhook on the metrics
 * listener's thread): a request flag, then SIGUSR2 sent to the loop's
 * thread. SIGUSR2 is blocked with SIGTERM and SIGINT during a pass and let
 * in only while waiting, like them: its handler sets the flag the cluster's
 * wait looks at, and the ppoll or poll under it returns with EINTR, so the
 * wait ends at once; a wake during a pass leaves the flag set and the next
 * wait returns before it starts.
 */
#include "controller/controller_int.h"
#include "fsio/fsio.h"
#include "osenv/osenv.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The longest wait on the cluster between two lease renewals. */
#define LEASE_SLICE_MS 4000
#define REPO_SLICE_MS 250 /* how often a local repo's source branch is looked at */
#define SYNC_POLL_MS 2000 /* how often, at most, a wait reads the sync requests (kube: a GET) */

#define WAKE_SIGNAL SIGUSR2

static volatile sig_atomic_t stop;
/* What the cluster's wait looks at: set by a stop or a wake (only ever by
 * the handlers, on the loop's thread). */
static volatile sig_atomic_t interrupted;
/* A pass was asked for (mcg_controller_wake); cleared as a pass starts. */
static atomic_int wake_requested;
/* The running loop's thread, for mcg_controller_wake. */
static atomic_bool loop_running;
static pthread_t loop_thread;

/* SIGTERM, SIGINT: stop; WAKE_SIGNAL: only end the wait. */
static void on_signal(int sig)
{
    if (sig != WAKE_SIGNAL)
        stop = 1;
    interrupted = 1;
}

/*
 * Start a pass now: the running loop's wait ends at once (a pass in
 * progress is followed by another). Safe from any thread and from a signal
 * handler; a no-op when no loop runs. The webhook calls it.
 */
static void mcg_controller_wake(void)
{
    atomic_store(&wake_requested, 1);
    if (atomic_load(&loop_running))
        pthread_kill(loop_thread, WAKE_SIGNAL);
}

/* Was a pass asked for since the last one started? */
static bool woken(void)
{
    return atomic_load(&wake_requested) != 0;
}

/* The signal set-up of a run: handlers installed, SIGTERM and SIGINT blocked
 * except while waiting (wait_mask). */
typedef struct loop_signals {
    sigset_t block, old, wait_mask;
} loop_signals;

static void signals_start(loop_signals *s)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(WAKE_SIGNAL, &sa, NULL);
    sigemptyset(&s->block);
    sigaddset(&s->block, SIGTERM);
    sigaddset(&s->block, SIGINT);
    sigaddset(&s->block, WAKE_SIGNAL);
    sigprocmask(SIG_BLOCK, &s->block, &s->old);
    s->wait_mask = s->old; /* while waiting: the caller's mask without our three */
    sigdelset(&s->wait_mask, SIGTERM);
    sigdelset(&s->wait_mask, SIGINT);
    sigdelset(&s->wait_mask, WAKE_SIGNAL);
    loop_thread = pthread_self();
    atomic_store(&loop_running, true);
}

static void signals_end(const loop_signals *s)
{
    atomic_store(&loop_running, false);
    sigprocmask(SIG_SETMASK, &s->old, NULL);
}

/* One log line on stderr: "mcgit controller: ...". */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcg_log_vline("controller", fmt, ap); /* one write per line: the listener logs too */
    va_end(ap);
}

void mcg_controller_default_identity(char *out, size_t n)
{
    const char *id = mcg_env_get("MCGIT_IDENTITY");
    if (id && *id) {
        snprintf(out, n, "%s", id);
        return;
    }
    /* host and pid: two replicas on one host never share an identity */
    char host[200] = "";
    if (gethostname(host, sizeof(host) - 1) != 0 || !host[0])
        snprintf(host, sizeof(host), "mcgit-controller");
    snprintf(out, n, "%s_%ld", host, (long)getpid());
}

/* What the loop remembers between turns, to log each thing once. */
typedef struct loop_state {
    char last[2200];         /* the problem last reported ("" none) */
    char last_event[512];    /* the first event refusal, reported once ("" none yet) */
    mcg_strv last_unmanaged; /* nodes last reported as unmanaged */
    mcg_strv last_overrides; /* "pool target" overrides already logged */
    bool stale;              /* SourceStale was reported (logged once, and once when over) */
} loop_state;

/*
 * The wall clock a pass decides by (maintenance windows, canary pauses):
 * time(), or MCGIT_TEST_NOW (unix seconds) for tests that must stand at a
 * given hour. Only the decisions read it; timestamps written are its too.
 */
static int64_t pass_clock(void)
{
    uint64_t v = 0;
    if (mcg_env_u64("MCGIT_TEST_NOW", 0, 1, INT64_MAX, &v, NULL) != 0 || !v)
        return (int64_t)time(NULL); /* junk: the real clock (a test sees its decisions fail) */
    return (int64_t)v;
}

/*
 * One turn's work: lead, and pass when leading. Returns the pass's rc, the
 * lease's, or MCG_ECONFLICT when another replica leads; *leader says whether
 * this replica leads.
 */
static int lead_and_pass(mcg_pass_result *res, const mcg_controller_opts *po, mcg_cluster *cl,
                         const char *identity, bool *leader, mcg_err *err)
{
    *leader = false;
    int rc = mcg_cluster_lead(cl, identity, leader, err);
    if (!rc && !*leader)
        return mcg_err_set(err, MCG_ECONFLICT, "not the leader (identity %s): waiting", identity);
    if (rc) {
        mcg_err_prefix(err, "leader election");
        return rc;
    }
    return mcg_controller_pass(res, po, cl, pass_clock(), err);
}

/* A pass's news: SourceStale and its end, events not recorded, newly unmanaged nodes. */
static void report_news(loop_state *st, const mcg_pass_result *res)
{
    if (res->stale[0] && !st->stale)
        say("SourceStale: %s", res->stale);
    else if (!res->stale[0] && st->stale)
        say("SourceStale over: the verified source is within maxSourceAge again");
    st->stale = res->stale[0] != '\0';
    if (res->site_record[0])
        say("site status recorded: %s", res->site_record);
    if (res->site_error[0])
        say("site status not recorded: %s", res->site_error);
    if (res->event_error[0] && !st->last_event[0]) { /* once: events are best effort */
        say("events not recorded: %s", res->event_error);
        snprintf(st->last_event, sizeof(st->last_event), "%s", res->event_error);
    }
    for (size_t i = 0; i < res->unmanaged.n; i++)
        if (!mcg_strv_contains(&st->last_unmanaged, res->unmanaged.v[i])) {
            const char *line = res->unmanaged.v[i], *colon = strstr(line, ": ");
            if (colon)
                say("node=%.*s: unmanaged: %s", (int)(colon - line), line, colon + 2);
            else
                say("node=%s: unmanaged", line);
        }
    mcg_strv_free(&st->last_unmanaged);
    for (size_t i = 0; i < res->unmanaged.n; i++)
        mcg_strv_push(&st->last_unmanaged, res->unmanaged.v[i]);
    for (size_t i = 0; i < res->overrides.n; i++) /* once per pool and target */
        if (!mcg_strv_contains(&st->last_overrides, res->overrides.v[i])) {
            say("pool %s: outside its maintenance windows, on an operator's `mcgit sync --now`",
                res->overrides.v[i]);
            mcg_strv_push(&st->last_overrides, res->overrides.v[i]);
        }
}

/* Log a turn: its problem once (and once more when over), then news. */
static void report(loop_state *st, const mcg_controller_run_opts *o, int rc, bool leader,
                   const mcg_pass_result *res, const mcg_err *perr)
{
    char msg[sizeof(st->last)] = "";
    if (rc == MCG_ECONFLICT && !leader)
        snprintf(msg, sizeof(msg), "%s", perr->msg);
    else if (rc)
        snprintf(msg, sizeof(msg), "pass failed: %s", perr->msg);
    else if (res->refused || res->fetch_failed)
        snprintf(msg, sizeof(msg), "%s%s%s", res->fetch_error,
                 res->fetch_failed && res->refused ? "; " : "", res->refusal);
    if (msg[0] && strcmp(msg, st->last) != 0)
        say("%s", msg);
    else if (!msg[0] && st->last[0] && o->verbosity > 0)
        say("recovered: the last pass went through");
    snprintf(st->last, sizeof(st->last), "%s", msg);
    if (rc)
        return;
    report_news(st, res);
    if (res->updates && o->verbosity > 0) {
        say("%zu node%s given a new desiredConfig", res->updates, res->updates == 1 ? "" : "s");
        for (size_t i = 0; i < res->targeted.n; i++) {
            const char *line = res->targeted.v[i], *sp = strchr(line, ' ');
            if (sp)
                say("node=%.*s: desiredConfig %s", (int)(sp - line), line, sp + 1);
        }
    }
    if (o->verbosity > 1)
        say("pass over %zu nodes: %zu desiredConfig and %zu other writes", res->nodes, res->updates,
            res->writes);
}

/*
 * Watch-driven wait: wake as soon as a node changes (an agent finished, a
 * node joined), at the latest after the interval for new commits. In
 * slices, renewing the lease between them (mcg_cluster_lead sends nothing
 * while it is fresh), so an idle leader stays the leader instead of letting
 * a standby take over every interval. Signals are let in only while
 * waiting, and the stop flag is lent to the backend only here.
 */
static void wait_watching(const mcg_controller_run_opts *o, mcg_cluster *cl, const char *identity,
                          const loop_signals *sg, uint64_t answered, mcg_tip_watch *tw)
{
    long left = (long)(o->interval * 1000);
    /* a push to the repo itself (no remote to fetch) is seen within a
     * slice: its source branch is looked at between slices of a quarter second */
    char tip0[MCG_SHA_HEX + 1] = "", tip[MCG_SHA_HEX + 1];
    bool watch_repo = mcg_gitops_tip_watch_read(tw, tip0);
    long since_sync = 0;
    while (left > 0 && !stop && !woken()) {
        long cap = watch_repo ? REPO_SLICE_MS : LEASE_SLICE_MS;
        long slice = left < cap ? left : cap;
        mcg_err werr = {0};
        interrupted = stop; /* signals blocked here: no handler runs */
        mcg_cluster_set_stop(cl, &interrupted);
        sigprocmask(SIG_SETMASK, &sg->wait_mask, NULL);
        int wrc = mcg_cluster_wait_change(cl, NULL, slice, &werr);
        sigprocmask(SIG_BLOCK, &sg->block, NULL);
        mcg_cluster_set_stop(cl, NULL);
        if (wrc < 0 && o->verbosity > 1)
            say("watch: %s", werr.msg);
        if (wrc == 1 || woken())
            return; /* a node changed, or a wake: pass now */
        if (watch_repo && mcg_gitops_tip_watch_read(tw, tip) && strcmp(tip, tip0) != 0)
            return; /* a push: pass now */
        left -= slice;
        since_sync += slice;
        if (left > 0 && since_sync >= SYNC_POLL_MS) {
            since_sync = 0;
            if (mcg_controller_sync_wanted(cl, answered))
                return; /* `mcgit sync`: pass now */
        }
        bool still = false;
        if (left > 0 && (mcg_cluster_lead(cl, identity, &still, NULL) != 0 || !still))
            return; /* lost it: the next turn says so */
    }
}

/* Sleep the interval; a pending SIGTERM is delivered as soon as ppoll
 * unblocks it. */
static void wait_sleeping(double interval, const loop_signals *sg)
{
    struct timespec end;
    mcg_mono_now(&end);
    end.tv_sec += (time_t)interval;
    end.tv_nsec += (long)((interval - (double)(time_t)interval) * 1e9);
    if (end.tv_nsec >= 1000000000L) {
        end.tv_sec++;
        end.tv_nsec -= 1000000000L;
    }
    while (!stop && !woken()) {
        struct timespec now, left;
        mcg_mono_now(&now);
        left.tv_sec = end.tv_sec - now.tv_sec;
        left.tv_nsec = end.tv_nsec - now.tv_nsec;
        if (left.tv_nsec < 0) {
            left.tv_sec--;
            left.tv_nsec += 1000000000L;
        }
        if (left.tv_sec < 0)
            return;
        if (ppoll(NULL, 0, &left, &sg->wait_mask) == 0 || errno != EINTR)
            return;
    }
}

/* The webhook's wake function. */
static void wake_cb(void *ctx)
{
    (void)ctx;
    mcg_controller_wake();
}

/* The metrics listener of a run, when asked for: the registry and the server. */
static int serve_start(const mcg_controller_run_opts *o, mcg_metrics **mx, mcg_metrics_server **srv,
                       mcg_err *err)
{
    *mx = NULL;
    *srv = NULL;
    if (!o->metrics_bind)
        return 0;
    *mx = mcg_metrics_new();
    int rc = mcg_controller_metrics_declare(*mx, err);
    if (rc)
        return rc;
    mcg_metrics_server_opts so = {.bind = o->metrics_bind,
                                  .metrics = *mx,
                                  .token_file = o->webhook_token,
                                  .who = "controller"};
    so.wake = wake_cb;
    if ((rc = mcg_metrics_serve(srv, &so, err)) != 0)
        return rc;
    say("serving metrics on %s (port %u)%s", o->metrics_bind, mcg_metrics_server_port(*srv),
        o->webhook_token ? "; webhook at POST /hooks/git" : "");
    return 0;
}

int mcg_controller_run(const mcg_controller_run_opts *o, bool *pass_failed, mcg_err *err)
{
    *pass_failed = false;
    char identity[256];
    if (o->identity)
        snprintf(identity, sizeof(identity), "%s", o->identity);
    else
        mcg_controller_default_identity(identity, sizeof(identity));
    mcg_cluster *cl = NULL;
    mcg_metrics *mx = NULL;
    mcg_metrics_server *srv = NULL;
    int rc = mcg_cluster_open(&cl, o->cluster, err);
    if (!rc && (rc = serve_start(o, &mx, &srv, err)) != 0)
        mcg_err_prefix(err, "--metrics-bind-address");
    if (rc) {
        mcg_metrics_server_free(srv);
        mcg_metrics_free(mx);
        mcg_cluster_free(cl);
        return rc;
    }
    mcg_controller_opts po = o->pass;
    po.metrics = mx;
    /* opened once for the run: the wait looks at the source branch through
     * it, and it keeps libgit2 initialised between passes */
    mcg_tip_watch *tw = NULL;
    (void)mcg_gitops_tip_watch_open(&tw, po.repo); /* NULL: no watch, passes still run */
    loop_signals sg;
    stop = 0;
    atomic_store(&wake_requested, 0);
    signals_start(&sg);
    loop_state st = {0};
    uint64_t answered = 0; /* the newest `mcgit sync` this loop answered */
    while (!stop) {
        mcg_pass_result res;
        memset(&res, 0, sizeof(res));
        mcg_err perr = {0};
        bool leader = false;
        atomic_store(&wake_requested, 0); /* a wake from now on asks for another pass */
        uint64_t sync = mcg_controller_sync_begin(cl, answered);
        double t0 = mcg_mono_seconds();
        int prc = lead_and_pass(&res, &po, cl, identity, &leader, &perr);
        double took = mcg_mono_seconds() - t0;
        report(&st, o, prc, leader, &res, &perr);
        if (sync && leader && mcg_controller_sync_answer(cl, sync, prc, &res, &perr))
            answered = sync;
        bool failed = prc || res.refused || res.fetch_failed;
        if (mx) {
            mcg_ctl_record_imports(mx, po.repo);
            const char *result = !leader ? "not_leader" : failed ? "failed" : "ok";
            mcg_metrics_add(mx, "mcgit_passes_total", MCG_LV(result), 1);
            if (leader)
                mcg_metrics_observe(mx, "mcgit_pass_duration_seconds", NULL, took);
        }
        mcg_pass_result_clear(&res);
        if (o->once) {
            *pass_failed = failed;
            break;
        }
        sigset_t pending;
        if (sync && answered == sync && sigpending(&pending) == 0 &&
            !sigismember(&pending, SIGTERM) && !sigismember(&pending, SIGINT) &&
            mcg_controller_sync_wanted(cl, answered))
            continue; /* asked again during the pass (and no stop waiting): pass again now */
        if (leader && !prc && mcg_cluster_watches(cl))
            wait_watching(o, cl, identity, &sg, answered, tw);
        else
            wait_sleeping(o->interval, &sg);
    }
    mcg_strv_free(&st.last_unmanaged);
    mcg_strv_free(&st.last_overrides);
    mcg_gitops_tip_watch_free(tw);
    signals_end(&sg);
    mcg_metrics_server_free(srv); /* its thread may call mcg_controller_wake: a no-op now */
    mcg_metrics_free(mx);
    mcg_cluster_free(cl);
    return 0;
}
