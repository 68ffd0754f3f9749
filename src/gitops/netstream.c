/*
 * netstream.c — libgit2's plain socket stream, with a deadline.
 *
 * libgit2 1.5 has no network timeouts: a server that accepts a connection
 * and then says nothing holds a fetch, and with it a controller's loop,
 * forever. mcgit registers its own GIT_STREAM_STANDARD stream (the socket
 * under http://, under https:// below the TLS layer, and under ssh://) that
 * connects, reads and writes only until the deadline of the fetch running
 * on this thread. libssh2 does not read through the stream: libgit2's ssh
 * transport takes the descriptor out of its own socket stream structure and
 * libssh2 waits on it with no limit. So the stream has that structure's
 * layout (parent, host, port, descriptor), and a watchdog thread shuts
 * every socket of the fetch down when the deadline passes: a waiting read
 * then sees the end of the stream and the fetch fails at once. A stream
 * libgit2 keeps after the fetch (until git_remote_free) keeps the deadline
 * alive, and past it.
 */
#include "gitops/gitops_int.h"
#include "osenv/osenv.h"

#include <errno.h>
#include <fcntl.h>
#include <git2/sys/stream.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SOCKETS 16 /* one fetch opens one or two */
#define MAX_HOSTS 8    /* the remote's host and the proxies' */

struct mcg_deadline {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t watchdog;
    struct timespec at; /* CLOCK_MONOTONIC */
    int fds[MAX_SOCKETS];
    bool done, expired;
    /* hosts a stream may connect to (none listed: any): a redirect elsewhere is refused */
    char *hosts[MAX_HOSTS];
    int nhosts;
    /* The fetch and each stream made under it hold a reference: libgit2
     * may close and free a stream after the fetch (git_remote_free). */
    atomic_int refs;
};

/* The fetch running on this thread; its streams are made here too. */
static _Thread_local mcg_deadline *current;

/* libgit2's git_socket_stream (src/libgit2/streams/socket.h), then ours. */
typedef struct net_stream {
    git_stream parent;
    char *host;
    char *port;
    int s; /* read by libgit2's ssh transport */
    mcg_deadline *dl;
} net_stream;

/* Milliseconds left before d's deadline (0 once passed); -1 without one. */
static void unref(mcg_deadline *d)
{
    if (d && atomic_fetch_sub(&d->refs, 1) == 1) {
        for (int i = 0; i < d->nhosts; i++)
            free(d->hosts[i]);
        pthread_cond_destroy(&d->cv);
        pthread_mutex_destroy(&d->mu);
        free(d);
    }
}

static int remaining_ms(mcg_deadline *d)
{
    if (!d)
        return -1;
    struct timespec now;
    mcg_mono_now(&now);
    long long ms =
        (long long)(d->at.tv_sec - now.tv_sec) * 1000 + (d->at.tv_nsec - now.tv_nsec) / 1000000;
    return ms <= 0 ? 0 : ms > 3600000 ? 3600000 : (int)ms;
}

/* Watch fd (add) or stop watching it (remove), under d's lock. */
static void track(mcg_deadline *d, int fd, bool add)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    for (int i = 0; i < MAX_SOCKETS; i++) {
        if (add && d->fds[i] < 0) {
            d->fds[i] = fd;
            if (d->expired)
                shutdown(fd, SHUT_RDWR);
            break;
        }
        if (!add && d->fds[i] == fd) {
            d->fds[i] = -1;
            break;
        }
    }
    pthread_mutex_unlock(&d->mu);
}

static void expire(mcg_deadline *d)
{
    pthread_mutex_lock(&d->mu);
    d->expired = true;
    pthread_mutex_unlock(&d->mu);
}

/* Wait until fd is ready for ev, at most until the deadline: 0, or -1 with libgit2's error. */
static int wait_fd(net_stream *st, int fd, short ev)
{
    struct pollfd p = {.fd = fd, .events = ev};
    for (;;) {
        int n = poll(&p, 1, remaining_ms(st->dl));
        if (n > 0)
            return 0;
        if (n == 0) {
            expire(st->dl);
            git_error_set_str(GIT_ERROR_NET, "timed out");
            return -1;
        }
        if (errno != EINTR) {
            git_error_set_str(GIT_ERROR_OS, strerror(errno));
            return -1;
        }
    }
}

/* One address: a connected blocking socket, or -1 with errno set. */
static int connect_one(net_stream *st, const struct addrinfo *a)
{
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0)
        return -1;
    track(st->dl, fd, true);
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        if (errno != EINPROGRESS)
            soerr = errno;
        else if (wait_fd(st, fd, POLLOUT) != 0)
            soerr = ETIMEDOUT;
        else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
            soerr = errno;
    }
    if (!soerr && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
        soerr = errno;
    if (soerr) {
        track(st->dl, fd, false);
        close(fd);
        errno = soerr;
        return -1;
    }
    return fd;
}

/* Whether d lets a stream connect to host: listed, or nothing listed. */
static bool host_allowed(const mcg_deadline *d, const char *host)
{
    if (!d || d->nhosts == 0)
        return true;
    for (int i = 0; i < d->nhosts; i++)
        if (strcasecmp(d->hosts[i], host) == 0)
            return true;
    return false;
}

static int ns_connect(git_stream *stream)
{
    net_stream *st = (net_stream *)stream;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC}, *info = NULL;
    char msg[512];
    if (!host_allowed(st->dl, st->host)) {
        /* libgit2 followed a redirect: nothing, not even a request, goes there */
        mcg_bfmt(msg, sizeof(msg), "the remote redirects to another host, %s", st->host);
        git_error_set_str(GIT_ERROR_NET, msg);
        return -1;
    }
    int rc = getaddrinfo(st->host, st->port, &hints, &info);
    if (rc != 0) {
        mcg_bfmt(msg, sizeof(msg), "failed to resolve address for %s: %s", st->host,
                 gai_strerror(rc));
        git_error_set_str(GIT_ERROR_NET, msg);
        return -1;
    }
    int fd = -1, why = ECONNREFUSED;
    for (struct addrinfo *a = info; a && fd < 0 && remaining_ms(st->dl) != 0; a = a->ai_next)
        if ((fd = connect_one(st, a)) < 0)
            why = errno;
    freeaddrinfo(info);
    if (fd < 0) {
        if (remaining_ms(st->dl) == 0 || why == ETIMEDOUT) {
            expire(st->dl);
            mcg_bfmt(msg, sizeof(msg), "failed to connect to %s: timed out", st->host);
        } else {
            mcg_bfmt(msg, sizeof(msg), "failed to connect to %s: %s", st->host, strerror(why));
        }
        git_error_set_str(GIT_ERROR_NET, msg);
        return -1;
    }
    st->s = fd;
    return 0;
}

static ssize_t ns_read(git_stream *stream, void *data, size_t len)
{
    net_stream *st = (net_stream *)stream;
    if (wait_fd(st, st->s, POLLIN) != 0)
        return -1;
    ssize_t n;
    while ((n = recv(st->s, data, len, 0)) < 0 && errno == EINTR)
        ;
    if (n < 0)
        git_error_set_str(GIT_ERROR_NET, "error receiving data from the server");
    return n;
}

static ssize_t ns_write(git_stream *stream, const char *data, size_t len, int flags)
{
    net_stream *st = (net_stream *)stream;
    if (wait_fd(st, st->s, POLLOUT) != 0)
        return -1;
    ssize_t n;
    while ((n = send(st->s, data, len, flags | MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    if (n < 0)
        git_error_set_str(GIT_ERROR_NET, "error sending data to the server");
    return n;
}

static int ns_close(git_stream *stream)
{
    net_stream *st = (net_stream *)stream;
    if (st->s >= 0) {
        track(st->dl, st->s, false);
        close(st->s);
        st->s = -1;
    }
    return 0;
}

static void ns_free(git_stream *stream)
{
    net_stream *st = (net_stream *)stream;
    ns_close(stream);
    unref(st->dl);
    free(st->host);
    free(st->port);
    free(st);
}

static int ns_new(git_stream **out, const char *host, const char *port)
{
    net_stream *st = calloc(1, sizeof(*st));
    if (!st) {
        git_error_set_oom();
        return -1;
    }
    st->parent.version = GIT_STREAM_VERSION;
    st->parent.connect = ns_connect;
    st->parent.read = ns_read;
    st->parent.write = ns_write;
    st->parent.close = ns_close;
    st->parent.free = ns_free;
    st->host = mcg_strdup(host);
    st->port = mcg_strdup(port);
    st->s = -1;
    st->dl = current;
    if (st->dl)
        atomic_fetch_add(&st->dl->refs, 1);
    *out = &st->parent;
    return 0;
}

static int registered = -1;
static void register_stream(void)
{
    git_stream_registration reg = {.version = GIT_STREAM_VERSION, .init = ns_new};
    registered = git_stream_register(GIT_STREAM_STANDARD, &reg);
}

static void *watch(void *arg)
{
    mcg_deadline *d = arg;
    pthread_mutex_lock(&d->mu);
    while (!d->done && !d->expired) {
        if (pthread_cond_timedwait(&d->cv, &d->mu, &d->at) == ETIMEDOUT) {
            d->expired = true;
            for (int i = 0; i < MAX_SOCKETS; i++)
                if (d->fds[i] >= 0)
                    shutdown(d->fds[i], SHUT_RDWR);
        }
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

int mcg_deadline_start(mcg_deadline **out, unsigned seconds, mcg_err *err)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    *out = NULL;
    pthread_once(&once, register_stream);
    if (registered != 0)
        return mcg_git_err(err, "network stream");
    if (seconds == 0)
        return 0;
    mcg_deadline *d = calloc(1, sizeof(*d));
    pthread_condattr_t ca;
    if (!d)
        return mcg_err_set(err, MCG_ENOMEM, "out of memory");
    for (int i = 0; i < MAX_SOCKETS; i++)
        d->fds[i] = -1;
    mcg_mono_now(&d->at);
    d->at.tv_sec += seconds;
    atomic_init(&d->refs, 1);
    pthread_mutex_init(&d->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&d->watchdog, NULL, watch, d) != 0) {
        pthread_cond_destroy(&d->cv);
        pthread_mutex_destroy(&d->mu);
        free(d);
        return mcg_err_set(err, MCG_EIO, "cannot start the fetch's watchdog thread");
    }
    current = d;
    *out = d;
    return 0;
}

void mcg_deadline_allow_host(mcg_deadline *d, const char *host)
{
    if (!d || !host || !*host || d->nhosts == MAX_HOSTS)
        return;
    for (int i = 0; i < d->nhosts; i++)
        if (strcasecmp(d->hosts[i], host) == 0)
            return;
    d->hosts[d->nhosts++] = mcg_strdup(host);
}

bool mcg_deadline_passed(mcg_deadline *d)
{
    if (!d || remaining_ms(d) != 0)
        return false;
    expire(d);
    return true;
}

bool mcg_deadline_finish(mcg_deadline *d)
{
    if (!d)
        return false;
    pthread_mutex_lock(&d->mu);
    d->done = true;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->watchdog, NULL);
    pthread_mutex_lock(&d->mu);
    bool expired = d->expired;
    pthread_mutex_unlock(&d->mu);
    if (current == d)
        current = NULL;
    unref(d);
    return expired;
}
