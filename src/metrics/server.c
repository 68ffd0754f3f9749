/*
 * server.c — the metrics and webhook listener, on libmicrohttpd.
 *
 * One listener, two endpoints: GET /metrics formats the registry on every
 * scrape; POST /hooks/git authenticates the caller against the token file
 * and calls the wake function. We open and bind the listening socket
 * ourselves (so a bind error names its errno and port 0 is supported) and
 * hand it to libmicrohttpd, which runs the protocol on its internal
 * thread, started with every signal blocked so the caller's signal
 * handling (SIGTERM ends the loop between passes) stays on the caller's
 * thread.
 *
 * Security: the token is read from its file on every call and compared in
 * constant time (SHA-256 of each side, then a constant-time compare, so the
 * length does not leak either); a GitHub-style HMAC signature of the body
 * is checked the same way. A refused call is logged with the peer address
 * and what was wrong, never with what it sent. Bodies are bounded
 * (MCG_WEBHOOK_MAX_BODY), connections and their time too: at most
 * MAX_CONNECTIONS in all and MAX_PER_ADDRESS from one client address (a
 * new one past it cuts that address's oldest request rather than being
 * refused, so slow clients behind one proxy or NAT do not lock out the
 * honest ones sharing their address), and each request has
 * REQUEST_DEADLINE_MS from its start to its answer, however slowly its
 * client trickles bytes (deadline.c), so a slow client holds a connection
 * for seconds at most.
 */
#include "fsio/fsio.h"
#include "osenv/osenv.h"
#include "metrics/metrics_int.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HOOK_PATH "/hooks/git"
#define MAX_CONNECTIONS 128      /* in all */
#define MAX_PER_ADDRESS 8        /* from one client address */
#define REQUEST_DEADLINE_MS 5000 /* request line, headers, body and answer (deadline.c) */
#define CONNECTION_TIMEOUT_S 5   /* libmicrohttpd's idle timeout */
#define CUTS_METRIC "mcgit_listener_deadline_cuts_total"
/* Connections the kernel queues before libmicrohttpd accepts them: clients
 * that reconnect as fast as they are refused must not fill the queue, or
 * everyone else's SYN is dropped and retried a second later. */
#define LISTEN_BACKLOG 1024

struct mcg_metrics_server {
    struct MHD_Daemon *d;
    mcg_conn_guard *guard;
    int fd;
    unsigned port;
    mcg_metrics *metrics;
    char *token_file;
    void (*wake)(void *ctx);
    void *wake_ctx;
    char who[32];
    char *route_prefix, *route_token_file;
    void (*route)(void *ctx, const char *rest, const char *accept, mcg_route_answer *ans);
    void *route_ctx;
};

/* One request's state, between libmicrohttpd's calls. */
typedef struct request {
    mcg_buf body;
    bool too_large;
} request;

/* One log line on stderr, "mcgit WHO: ...". */
static void logf_(const mcg_metrics_server *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void logf_(const mcg_metrics_server *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcg_log_vline(s->who, fmt, ap);
    va_end(ap);
}

/* Queue a response of status with body (copied) and content type. */
static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *type,
                              const char *body, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"mcgit\"");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "POST");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Queue a plain-text response. */
static enum MHD_Result answer_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
    return answer(conn, status, "text/plain; charset=utf-8", text, strlen(text));
}

/* The peer's address, for log lines. */
static void peer_of(struct MHD_Connection *conn, char *out, size_t n)
{
    snprintf(out, n, "?");
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return;
    socklen_t len = ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                           : sizeof(struct sockaddr_in);
    if (getnameinfo(ci->client_addr, len, out, (socklen_t)n, NULL, 0, NI_NUMERICHOST) != 0)
        snprintf(out, n, "?");
}

/* The token from its file, trailing newline(s) removed. */
static int read_token(const char *path, mcg_buf *tok, mcg_err *err)
{
    char *data = NULL;
    size_t len = 0;
    int rc = mcg_read_file_named(path, MCG_WEBHOOK_MAX_TOKEN, &data, &len, err);
    if (rc)
        return rc;
    while (len && (data[len - 1] == '\n' || data[len - 1] == '\r'))
        len--;
    if (!len) {
        free(data);
        return mcg_err_set(err, MCG_EINVAL, "%s: empty token file", path);
    }
    mcg_buf_put(tok, data, len);
    mcg_wipe(data, len);
    free(data);
    return 0;
}

/* a == b in time independent of their contents and lengths. */
static bool secret_eq(const void *a, size_t alen, const void *b, size_t blen)
{
    unsigned char da[MCG_SHA256_LEN], db[MCG_SHA256_LEN];
    mcg_sha256(a, alen, da);
    mcg_sha256(b, blen, db);
    return mcg_memeq_ct(da, db, sizeof(da));
}

typedef enum { AUTH_NONE, AUTH_BAD, AUTH_OK } auth_verdict;

/* Check the headers (and for a signature, the body) against the token. */
static auth_verdict authenticate(struct MHD_Connection *conn, const mcg_buf *tok,
                                 const mcg_buf *body, const char **how)
{
    const char *bearer =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    const char *gitlab = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Gitlab-Token");
    const char *sig = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Hub-Signature-256");
    if (bearer) {
        *how = "bearer token";
        if (strncasecmp(bearer, "Bearer ", 7) != 0)
            return AUTH_BAD;
        const char *t = bearer + 7;
        return secret_eq(t, strlen(t), tok->ptr, tok->len) ? AUTH_OK : AUTH_BAD;
    }
    if (gitlab) {
        *how = "X-Gitlab-Token";
        return secret_eq(gitlab, strlen(gitlab), tok->ptr, tok->len) ? AUTH_OK : AUTH_BAD;
    }
    if (sig) {
        *how = "X-Hub-Signature-256";
        unsigned char mac[EVP_MAX_MD_SIZE], given[MCG_SHA256_LEN];
        unsigned maclen = 0;
        if (strncmp(sig, "sha256=", 7) != 0 || strlen(sig + 7) != 2 * MCG_SHA256_LEN)
            return AUTH_BAD;
        for (size_t i = 0; i < MCG_SHA256_LEN; i++) {
            unsigned v;
            if (sscanf(sig + 7 + 2 * i, "%2x", &v) != 1)
                return AUTH_BAD;
            given[i] = (unsigned char)v;
        }
        static const unsigned char empty[1] = {0};
        if (!HMAC(EVP_sha256(), tok->ptr, (int)tok->len,
                  body->len ? (const unsigned char *)body->ptr : empty, body->len, mac, &maclen) ||
            maclen != MCG_SHA256_LEN)
            return AUTH_BAD;
        bool ok = mcg_memeq_ct(mac, given, MCG_SHA256_LEN);
        mcg_wipe(mac, sizeof(mac));
        return ok ? AUTH_OK : AUTH_BAD;
    }
    *how = "no credentials";
    return AUTH_NONE;
}

/* Is the request's bearer token the one in the route's token file? */
static auth_verdict route_auth(mcg_metrics_server *s, struct MHD_Connection *conn, bool *unreadable)
{
    const char *bearer =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!bearer)
        return AUTH_NONE;
    mcg_buf tok = MCG_BUF_INIT;
    mcg_err e = {0};
    if (read_token(s->route_token_file, &tok, &e) != 0) {
        logf_(s, "cannot read the token: %s", e.msg);
        *unreadable = true;
        return AUTH_BAD;
    }
    const char *t = bearer + 7;
    bool ok = !strncasecmp(bearer, "Bearer ", 7) && secret_eq(t, strlen(t), tok.ptr, tok.len);
    mcg_wipe(tok.ptr, tok.len);
    mcg_buf_free(&tok);
    return ok ? AUTH_OK : AUTH_BAD;
}

/* GET PREFIX...: authenticate, then the route answers. */
static enum MHD_Result route_request(mcg_metrics_server *s, struct MHD_Connection *conn,
                                     const char *url, const char *method)
{
    char peer[64];
    peer_of(conn, peer, sizeof(peer));
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return answer_text(conn, MHD_HTTP_BAD_REQUEST, "GET only\n");
    bool unreadable = false;
    auth_verdict v = route_auth(s, conn, &unreadable);
    if (unreadable)
        return answer_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "token unavailable\n");
    if (v != AUTH_OK) {
        logf_(s, "refused %s from %s: %s", url, peer, v == AUTH_NONE ? "no token" : "wrong token");
        return answer_text(conn, MHD_HTTP_UNAUTHORIZED, "unauthorized\n");
    }
    const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    mcg_route_answer ans = {.status = 500};
    snprintf(ans.type, sizeof(ans.type), "text/plain; charset=utf-8");
    s->route(s->route_ctx, url + strlen(s->route_prefix), accept ? accept : "", &ans);
    logf_(s, "%s from %s: %u", url, peer, ans.status);
    struct MHD_Response *r = MHD_create_response_from_buffer(
        ans.body.len, (void *)(ans.body.ptr ? ans.body.ptr : ""), MHD_RESPMEM_MUST_COPY);
    enum MHD_Result ret = MHD_NO;
    if (r) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ans.type);
        for (size_t i = 0; i < ans.headers.n; i++) {
            char *h = mcg_strdup(ans.headers.v[i]);
            char *colon = strchr(h, ':');
            if (colon) {
                *colon = '\0';
                MHD_add_response_header(r, h, colon + 1 + strspn(colon + 1, " "));
            }
            free(h);
        }
        ret = MHD_queue_response(conn, ans.status, r);
        MHD_destroy_response(r);
    }
    mcg_buf_free(&ans.body);
    mcg_strv_free(&ans.headers);
    return ret;
}

/* The end of a POST /hooks/git: authenticate, wake, answer. */
static enum MHD_Result hook_done(mcg_metrics_server *s, struct MHD_Connection *conn, request *rq)
{
    char peer[64];
    peer_of(conn, peer, sizeof(peer));
    if (rq->too_large) {
        logf_(s, "webhook: refused a call from %s: body over %d bytes", peer, MCG_WEBHOOK_MAX_BODY);
        return answer_text(conn, MHD_HTTP_CONTENT_TOO_LARGE, "body too large\n");
    }
    mcg_buf tok = MCG_BUF_INIT;
    mcg_err e = {0};
    if (read_token(s->token_file, &tok, &e) != 0) {
        logf_(s, "webhook: cannot read the token: %s", e.msg);
        return answer_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "token unavailable\n");
    }
    const char *how = "";
    auth_verdict v = authenticate(conn, &tok, &rq->body, &how);
    mcg_wipe(tok.ptr, tok.len);
    mcg_buf_free(&tok);
    if (v != AUTH_OK) {
        logf_(s, "webhook: refused a call from %s: %s", peer,
              v == AUTH_NONE ? "no token" : "wrong token");
        mcg_metrics_add(s->metrics, "mcgit_webhook_requests_total", MCG_LV("unauthorized"), 1);
        return answer_text(conn, MHD_HTTP_UNAUTHORIZED, "unauthorized\n");
    }
    mcg_metrics_add(s->metrics, "mcgit_webhook_requests_total", MCG_LV("accepted"), 1);
    logf_(s, "webhook: call from %s (%s): pass now", peer, how);
    if (s->wake)
        s->wake(s->wake_ctx);
    return answer_text(conn, MHD_HTTP_ACCEPTED, "accepted: a pass starts now\n");
}

/*
 * libmicrohttpd's handler, called once when a request's headers are in
 * (*con_cls NULL), then for each piece of its body, then once more with
 * none (*upload_size 0): GET /metrics answers at once; POST /hooks/git
 * collects the body (bounded) and is judged at the end.
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    mcg_metrics_server *s = cls;
    mcg_conn_guard_request_started(s->guard, conn);
    if (s->route && !strncmp(url, s->route_prefix, strlen(s->route_prefix)))
        return route_request(s, conn, url, method);
    if (!strcmp(url, "/metrics")) {
        if (strcmp(method, "GET") && strcmp(method, "HEAD"))
            return answer_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "GET only\n");
        mcg_buf b = MCG_BUF_INIT;
        double cut = 0;
        if (mcg_metrics_get(s->metrics, CUTS_METRIC, NULL, &cut) &&
            (double)mcg_conn_guard_cuts(s->guard) > cut)
            mcg_metrics_add(s->metrics, CUTS_METRIC, NULL,
                            (double)mcg_conn_guard_cuts(s->guard) - cut);
        mcg_metrics_process_update(s->metrics);
        mcg_metrics_format(s->metrics, &b);
        enum MHD_Result r =
            answer(conn, MHD_HTTP_OK, MCG_METRICS_CONTENT_TYPE, b.ptr ? b.ptr : "", b.len);
        mcg_buf_free(&b);
        return r;
    }
    if (!s->token_file || strcmp(url, HOOK_PATH) != 0)
        return answer_text(conn, MHD_HTTP_NOT_FOUND, "not found\n");
    if (strcmp(method, "POST") != 0)
        return answer_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "POST only\n");
    request *rq = *con_cls;
    if (!rq) {
        rq = mcg_calloc(1, sizeof(*rq));
        *con_cls = rq;
        const char *cl =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        uint64_t want;
        if (cl && mcg_parse_u64(cl, &want) && want > MCG_WEBHOOK_MAX_BODY) {
            /* answered before the body is read (no 100 Continue is sent) */
            rq->too_large = true;
            return hook_done(s, conn, rq);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (rq->body.len + *upload_size > MCG_WEBHOOK_MAX_BODY)
            rq->too_large = true;
        if (!rq->too_large)
            mcg_buf_put(&rq->body, upload_data, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    return hook_done(s, conn, rq);
}

/* A request is over (answered or cut): free its state. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    mcg_metrics_server *s = cls;
    (void)toe;
    mcg_conn_guard_request_done(s->guard, conn);
    request *rq = *con_cls;
    if (!rq)
        return;
    mcg_buf_free(&rq->body);
    free(rq);
    *con_cls = NULL;
}

/* Split "HOST:PORT", "[V6]:PORT" or ":PORT" into host (NULL: any) and port. */
static int split_bind(const char *addr, char *host, size_t hn, char *port, size_t pn, mcg_err *err)
{
    const char *colon;
    if (addr[0] == '[') {
        const char *close = strchr(addr, ']');
        if (!close || close[1] != ':')
            return mcg_err_set(err, MCG_EINVAL, "bad address '%s': expected [V6]:PORT", addr);
        if ((size_t)(close - addr - 1) >= hn)
            return mcg_err_set(err, MCG_EINVAL, "bad address '%s'", addr);
        snprintf(host, hn, "%.*s", (int)(close - addr - 1), addr + 1);
        colon = close + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon || (size_t)(colon - addr) >= hn)
            return mcg_err_set(err, MCG_EINVAL, "bad address '%s': expected HOST:PORT", addr);
        snprintf(host, hn, "%.*s", (int)(colon - addr), addr);
    }
    uint64_t p;
    if (!mcg_parse_u64(colon + 1, &p) || p > 65535 || strlen(colon + 1) >= pn)
        return mcg_err_set(err, MCG_EINVAL, "bad port in '%s'", addr);
    snprintf(port, pn, "%s", colon + 1);
    return 0;
}

/* A listening socket on addr (CLOEXEC, SO_REUSEADDR); -1 with err set. */
static int listen_on(const char *addr, bool *v6, mcg_err *err)
{
    char host[256], port[16];
    if (split_bind(addr, host, sizeof(host), port, sizeof(port), err) != 0)
        return -1;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int g = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
    if (g != 0) {
        mcg_err_set(err, MCG_EINVAL, "%s: %s", addr, gai_strerror(g));
        return -1;
    }
    int fd = -1, saved = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, LISTEN_BACKLOG) == 0) {
            *v6 = ai->ai_family == AF_INET6;
            break;
        }
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        mcg_err_set_os(err, MCG_EIO, saved, "cannot listen on %s", addr);
    return fd;
}

int mcg_metrics_serve(mcg_metrics_server **out, const mcg_metrics_server_opts *o, mcg_err *err)
{
    mcg_err scratch = {0};
    if (!err)
        err = &scratch;
    *out = NULL;
    mcg_metrics_server *s = mcg_calloc(1, sizeof(*s));
    s->fd = -1;
    int rc = MCG_EIO;
    if (o->token_file) {
        mcg_buf tok = MCG_BUF_INIT;
        rc = read_token(o->token_file, &tok, err);
        mcg_wipe(tok.ptr, tok.len);
        mcg_buf_free(&tok);
        if (rc) {
            mcg_err_prefix(err, "webhook token");
            goto out;
        }
        s->token_file = mcg_strdup(o->token_file);
    }
    s->metrics = o->metrics;
    if (s->token_file && s->metrics)
        mcg_metrics_declare(s->metrics, "mcgit_webhook_requests_total", MCG_METRIC_COUNTER,
                            "Webhook calls by outcome (accepted, unauthorized).", "outcome", NULL,
                            0, NULL); /* already declared by an earlier server: fine */
    if (s->metrics && (rc = mcg_metrics_process_declare(s->metrics, err)) != 0)
        goto out;
    double seen;
    if (s->metrics && !mcg_metrics_get(s->metrics, CUTS_METRIC, NULL, &seen)) {
        if ((rc = mcg_metrics_declare(s->metrics, CUTS_METRIC, MCG_METRIC_COUNTER,
                                      "Connections cut at the listener's request deadline "
                                      "(slow or stalled clients).",
                                      NULL, NULL, 0, err)) != 0)
            goto out;
        mcg_metrics_add(s->metrics, CUTS_METRIC, NULL, 0);
    }
    s->wake = o->wake;
    s->wake_ctx = o->wake_ctx;
    if (o->route) {
        mcg_buf tok = MCG_BUF_INIT;
        if (!o->route_prefix || !o->route_token_file) {
            rc = mcg_err_set(err, MCG_EINVAL, "a route needs a prefix and a token file");
            goto out;
        }
        rc = read_token(o->route_token_file, &tok, err);
        mcg_wipe(tok.ptr, tok.len);
        mcg_buf_free(&tok);
        if (rc)
            goto out;
        s->route = o->route;
        s->route_ctx = o->route_ctx;
        s->route_prefix = mcg_strdup(o->route_prefix);
        s->route_token_file = mcg_strdup(o->route_token_file);
    }
    snprintf(s->who, sizeof(s->who), "%s", o->who ? o->who : "mcgit");
    bool v6 = false;
    if ((s->fd = listen_on(o->bind, &v6, err)) < 0) {
        rc = err->code ? err->code : MCG_EIO;
        goto out;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(s->fd, (struct sockaddr *)&ss, &sl) == 0)
        s->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    /* libmicrohttpd's threads and the guard's inherit this mask: no signal
     * is delivered to them */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    s->guard = mcg_conn_guard_new(MAX_CONNECTIONS + 8, REQUEST_DEADLINE_MS, MAX_PER_ADDRESS);
    if (s->guard)
        s->d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | (v6 ? MHD_USE_IPv6 : 0), 0, NULL,
                                NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)s->fd,
                                MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
                                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S,
                                MHD_OPTION_NOTIFY_CONNECTION, mcg_conn_guard_notify, s->guard,
                                MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!s->d) {
        rc = mcg_err_set(err, MCG_EIO, "cannot serve on %s: libmicrohttpd did not start", o->bind);
        goto out;
    }
    s->fd = -1; /* transferred: libmicrohttpd closes it */
    *out = s;
    s = NULL;
    rc = 0;
out:
    mcg_metrics_server_free(s);
    return rc;
}

unsigned mcg_metrics_server_port(const mcg_metrics_server *s)
{
    return s ? s->port : 0;
}

void mcg_metrics_server_free(mcg_metrics_server *s)
{
    if (!s)
        return;
    if (s->d)
        MHD_stop_daemon(s->d);
    mcg_conn_guard_free(s->guard); /* after the daemon: it reports every connection closed */
    if (s->fd >= 0)
        close(s->fd);
    free(s->token_file);
    free(s->route_prefix);
    free(s->route_token_file);
    free(s);
}
