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
 *
 * One client address holds at most per_address connections, but a new one
 * is never refused for it: the address's oldest connection that is not
 * being answered (its request headers still arriving, or idle between
 * requests) is cut instead; and past three quarters of all slots, the
 * oldest such connection of any address. Honest clients send their headers
 * at once and are answered in milliseconds, slow ones dribble for seconds,
 * so the one cut is a slow one, and clients behind one proxy, NAT or
 * sidecar (one address for all) are still served while some of them are
 * slow. For its address's sake, a connection younger than YOUNG_MS is not
 * cut (an honest request whose headers the server has not read yet, in a
 * burst of new connections); the slot limit still bounds them.
 */
#include "metrics/metrics_int.h"
#include "osenv/osenv.h"

#include <errno.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define REAP_EVERY_MS 100
#define YOUNG_MS 100 /* a connection this young is not cut for its address's sake */

typedef struct slot {
    bool used, cut;
    bool answering; /* its request's headers are in: being answered */
    int fd;
    struct timespec t0;     /* the current request's start */
    unsigned char addr[20]; /* the client's address: family, then its bytes */
} slot;

struct mcg_conn_guard {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t reaper;
    bool stop;
    unsigned deadline_ms;
    unsigned per_address;
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
        mcg_mono_now(&now);
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

mcg_conn_guard *mcg_conn_guard_new(unsigned slots, unsigned deadline_ms, unsigned per_address)
{
    mcg_conn_guard *g = mcg_calloc(1, sizeof(*g));
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&g->mu, NULL);
    g->deadline_ms = deadline_ms;
    g->per_address = per_address;
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

/* The client address of conn as a slot key (zeros when unknown). */
static void client_key(struct MHD_Connection *conn, unsigned char key[20])
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    memset(key, 0, 20);
    if (!ci || !ci->client_addr)
        return;
    const struct sockaddr *sa = ci->client_addr;
    key[0] = (unsigned char)sa->sa_family;
    if (sa->sa_family == AF_INET)
        memcpy(key + 4, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    else if (sa->sa_family == AF_INET6)
        memcpy(key + 4, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

static bool older(const slot *a, const slot *b)
{
    return a->t0.tv_sec < b->t0.tv_sec ||
           (a->t0.tv_sec == b->t0.tv_sec && a->t0.tv_nsec < b->t0.tv_nsec);
}

/*
 * Under g->mu, for the slot `fresh` just taken: when its address holds more
 * than per_address connections, or more than three quarters of the slots
 * are used, cut the oldest connection not being answered (of that address,
 * resp. of any), never fresh itself.
 */
static void make_room(mcg_conn_guard *g, const slot *fresh)
{
    slot *mine = NULL, *any = NULL;
    unsigned same = 0, used = 0;
    for (unsigned i = 0; i < g->n; i++) {
        slot *s = &g->s[i];
        if (!s->used || s->cut)
            continue;
        used++;
        bool at = memcmp(s->addr, fresh->addr, sizeof(s->addr)) == 0;
        same += at;
        if (s == fresh || s->answering)
            continue;
        if (at && (!mine || older(s, mine)))
            mine = s;
        if (!any || older(s, any))
            any = s;
    }
    struct timespec now;
    mcg_mono_now(&now);
    slot *cut =
        g->per_address && same > g->per_address && mine && ms_since(&mine->t0, &now) >= YOUNG_MS
            ? mine
            : NULL;
    if (!cut && used > g->n / 4 * 3)
        cut = any;
    if (cut) {
        shutdown(cut->fd, SHUT_RDWR);
        cut->cut = true;
        g->cuts++;
    }
}

void mcg_conn_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                           enum MHD_ConnectionNotificationCode toe)
{
    mcg_conn_guard *g = cls;
    unsigned char key[20];
    if (toe == MHD_CONNECTION_NOTIFY_STARTED)
        client_key(conn, key);
    pthread_mutex_lock(&g->mu);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        for (unsigned i = 0; ci && i < g->n; i++)
            if (!g->s[i].used) {
                g->s[i] = (slot){.used = true, .fd = ci->connect_fd};
                memcpy(g->s[i].addr, key, sizeof(key));
                mcg_mono_now(&g->s[i].t0);
                *socket_context = &g->s[i];
                make_room(g, &g->s[i]);
                break;
            }
    } else if (*socket_context) { /* closed: its socket is closed right after */
        ((slot *)*socket_context)->used = false;
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&g->mu);
}

/* The slot of conn, or NULL. */
static slot *slot_of(mcg_conn_guard *g, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return g && ci ? ci->socket_context : NULL;
}

void mcg_conn_guard_request_started(mcg_conn_guard *g, struct MHD_Connection *conn)
{
    slot *s = slot_of(g, conn);
    if (!s)
        return;
    pthread_mutex_lock(&g->mu);
    if (s->used)
        s->answering = true;
    pthread_mutex_unlock(&g->mu);
}

void mcg_conn_guard_request_done(mcg_conn_guard *g, struct MHD_Connection *conn)
{
    slot *s = slot_of(g, conn);
    if (!s)
        return;
    pthread_mutex_lock(&g->mu);
    if (s->used) {
        mcg_mono_now(&s->t0); /* the next request's deadline starts now */
        s->answering = false;
    }
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
