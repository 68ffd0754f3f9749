/*
 * deadline.c — an absolute deadline for each request on the listener, so
 * that slow clients cannot hold its connections (see metrics_int.h).
 *
 * Each connection libmicrohttpd starts takes a slot (its socket and the
 * time its current request began), found again through the connection's
 * socket context. libmicrohttpd reports a connection closed before it
 * closes the socket, and the slot is released under the same lock the
 * reaper holds while it cuts: a socket is only ever shut down while
 * libmicrohttpd still owns it, never after its number was reused.
 */
#include "metrics/metrics_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#define REAP_EVERY_MS 100

typedef struct slot {
    bool used, cut;
    int fd;
    struct timespec t0; /* the current request's start */
} slot;

struct mcg_conn_guard {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t reaper;
    bool stop;
    unsigned deadline_ms;
    unsigned n;
    unsigned long cuts;
    slot *s;
};

static long ms_since(const struct timespec *t0, const struct timespec *now)
{
    return (long)(now->tv_sec - t0->tv_sec) * 1000 + (now->tv_nsec - t0->tv_nsec) / 1000000;
}

/* The reaper: cut every connection past its deadline, until stopped. */
static void *reap(void *arg)
{
    mcg_conn_guard *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        struct timespec now, until;
        clock_gettime(CLOCK_MONOTONIC, &now);
        for (unsigned i = 0; i < g->n; i++) {
            slot *s = &g->s[i];
            if (s->used && !s->cut && ms_since(&s->t0, &now) > (long)g->deadline_ms) {
                shutdown(s->fd, SHUT_RDWR); /* libmicrohttpd sees it end and closes it */
                s->cut = true;
                g->cuts++;
            }
        }
        until = now;
        until.tv_nsec += REAP_EVERY_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!g->stop && pthread_cond_timedwait(&g->cv, &g->mu, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

mcg_conn_guard *mcg_conn_guard_new(unsigned slots, unsigned deadline_ms)
{
    mcg_conn_guard *g = mcg_calloc(1, sizeof(*g));
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&g->mu, NULL);
    g->deadline_ms = deadline_ms;
    g->n = slots;
    g->s = mcg_calloc(slots ? slots : 1, sizeof(*g->s));
    if (pthread_create(&g->reaper, NULL, reap, g) != 0) {
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g->s);
        free(g);
        return NULL;
    }
    return g;
}

void mcg_conn_guard_free(mcg_conn_guard *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->reaper, NULL);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g->s);
    free(g);
}

void mcg_conn_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                           enum MHD_ConnectionNotificationCode toe)
{
    mcg_conn_guard *g = cls;
    pthread_mutex_lock(&g->mu);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        for (unsigned i = 0; ci && i < g->n; i++)
            if (!g->s[i].used) {
                g->s[i] = (slot){.used = true, .fd = ci->connect_fd};
                clock_gettime(CLOCK_MONOTONIC, &g->s[i].t0);
                *socket_context = &g->s[i];
                break;
            }
    } else if (*socket_context) { /* closed: its socket is closed right after */
        ((slot *)*socket_context)->used = false;
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&g->mu);
}

void mcg_conn_guard_request_done(mcg_conn_guard *g, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (!g || !ci || !ci->socket_context)
        return;
    pthread_mutex_lock(&g->mu);
    slot *s = ci->socket_context;
    if (s->used)
        clock_gettime(CLOCK_MONOTONIC, &s->t0); /* the next request's deadline starts now */
    pthread_mutex_unlock(&g->mu);
}

unsigned long mcg_conn_guard_cuts(mcg_conn_guard *g)
{
    if (!g)
        return 0;
    pthread_mutex_lock(&g->mu);
    unsigned long n = g->cuts;
    pthread_mutex_unlock(&g->mu);
    return n;
}
