/*
 * kube_http.c — a small, careful Kubernetes API client over libcurl + jansson.
 *
 * One curl easy handle is kept for every request/response call, so the TLS
 * connection to the API server is reused; a watch, which holds its
 * connection open, gets a handle of its own driven through a multi handle.
 * A batch (mcg_kube_call_many: a rollout wave's node writes, a drain's
 * evictions) runs its requests concurrently through one more multi handle,
 * kept with its easy handles for the client's life so its connection pool
 * (one HTTP/2 connection, or keep-alive HTTP/1.1 ones) serves every wave;
 * never more than MCGIT_KUBE_INFLIGHT of them are in flight.
 * Every call has a timeout. Calls that fail in a way that says nothing
 * about the request (429, 500, 502, 503, 504, connect/timeout/reset) are
 * retried a bounded number of times with exponential backoff and jitter,
 * honouring Retry-After. A service account token is re-read whenever its
 * file changes (the kubelet rotates it) and once more after a 401.
 *
 * Nothing the server sends is trusted: bodies are capped while they are
 * received, must parse as one JSON object, and text shown to the user is
 * cut to one printable line. The pure pieces (retry decisions, body and
 * error parsing) are functions of their arguments and unit-tested in
 * tests/unit/test_kube.c.
 */
#include "cluster/kube_int.h"
#include "fsio/fsio.h"
#include "osenv/osenv.h"

#include <curl/curl.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

bool mcg_kube_retryable(long status, int curl_code, unsigned flags)
{
    if (flags & MCG_KUBE_NO_RETRY)
        return false;
    if (status == 429)
        return !(flags & MCG_KUBE_NO_RETRY_429);
    if (status == 500 || status == 502 || status == 503 || status == 504)
        return true;
    if (status)
        return false;
    switch ((CURLcode)curl_code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return true;
    default:
        return false;
    }
}

long mcg_kube_retry_delay(const mcg_kube_backoff *b, unsigned retry, long retry_after_s,
                          uint32_t rnd)
{
    if (retry == 0 || retry >= b->attempts)
        return -1;
    long d = b->base_ms;
    for (unsigned i = 1; i < retry && d < b->cap_ms; i++)
        d *= 2;
    if (d > b->cap_ms)
        d = b->cap_ms;
    /* equal jitter: half fixed, half random, so retries of many clients spread out */
    long half = d / 2;
    d = half + (half > 0 ? (long)(rnd % (uint32_t)(half + 1)) : 0);
    if (retry_after_s >= 0) {
        long ra = retry_after_s > b->retry_after_cap_ms / 1000 ? b->retry_after_cap_ms
                                                               : retry_after_s * 1000;
        if (ra > d)
            d = ra;
    }
    return d;
}

long mcg_kube_parse_retry_after(const char *value)
{
    if (!value)
        return -1;
    while (*value == ' ' || *value == '\t')
        value++;
    size_t n = strlen(value);
    while (n && (value[n - 1] == ' ' || value[n - 1] == '\t' || value[n - 1] == '\r' ||
                 value[n - 1] == '\n'))
        n--;
    if (!n || n > 9)
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (value[i] < '0' || value[i] > '9')
            return -1; /* an HTTP-date: the API server never sends one */
        v = v * 10 + (value[i] - '0');
    }
    return v;
}

int mcg_kube_parse_object(json_t **out, const char *what, const char *data, size_t len, size_t max,
                          mcg_err *err)
{
    *out = NULL;
    if (len > max)
        return mcg_err_set(err, MCG_ENOMEM, "%s: response larger than %zu bytes", what, max);
    if (!len)
        return mcg_err_set(err, MCG_EINVAL, "%s: empty response", what);
    json_error_t je;
    json_t *v = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
    if (!v)
        return mcg_err_set(err, MCG_EINVAL, "%s: invalid JSON in response at byte %d: %s", what,
                           je.position, je.text);
    if (!json_is_object(v)) {
        json_decref(v);
        return mcg_err_set(err, MCG_EINVAL, "%s: response is not a JSON object", what);
    }
    *out = v;
    return 0;
}

void mcg_kube_clean_line(char *out, size_t outsz, const char *in, size_t len)
{
    if (!outsz)
        return;
    size_t o = 0, i = 0;
    bool space = false, cut = false;
    const unsigned char *p = (const unsigned char *)in;
    for (; i < len; i++) {
        unsigned char ch = p[i];
        size_t w = 1;
        bool ctl = ch < 0x20 || ch == 0x7f;
        /* C1 controls, UTF-8 encoded (U+0080..U+009F) */
        if (ch == 0xc2 && i + 1 < len && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f) {
            ctl = true;
            w = 2;
        }
        if (ctl || ch == ' ') {
            if (!space && o)
                space = true;
            i += w - 1;
            continue;
        }
        if (o + (space ? 1 : 0) + 1 >= outsz) {
            cut = true;
            break;
        }
        if (space)
            out[o++] = ' ';
        space = false;
        out[o++] = (char)ch;
    }
    out[o] = '\0';
    if (cut && outsz > 4) {
        size_t k = o < outsz - 4 ? o : outsz - 4;
        /* do not split a UTF-8 sequence */
        while (k && ((unsigned char)out[k] & 0xc0) == 0x80)
            k--;
        memcpy(out + k, "...", 4);
    }
}

/* clang-format off */
static const char *reason_phrase(long status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Request Entity Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
    }
}
/* clang-format on */

void mcg_kube_error_text(char *out, size_t outsz, long status, const char *body, size_t len)
{
    if (!outsz)
        return;
    out[0] = '\0';
    json_error_t je;
    json_t *v = len && len < (1u << 20) ? json_loadb(body, len, 0, &je) : NULL;
    json_t *msg = json_object_get(v, "message");
    if (json_is_object(v) && json_is_string(msg) && json_string_length(msg)) {
        mcg_kube_clean_line(out, outsz, json_string_value(msg), json_string_length(msg));
    } else if (len && !v) {
        mcg_kube_clean_line(out, outsz > 201 ? 201 : outsz, body, len);
    }
    json_decref(v);
    if (!out[0])
        snprintf(out, outsz, "%s", *reason_phrase(status) ? reason_phrase(status) : "no message");
}

/* One request of a batch being sent (mcg_kube_call_many). */
typedef struct batch_slot batch_slot;
static void batch_free(mcg_kube_client *kc);

struct mcg_kube_client {
    mcg_kube_config cfg;
    CURL *h;
    char errbuf[CURL_ERROR_SIZE];
    /* Batches: one multi handle whose connection cache outlives a batch (so
     * the next wave reuses the connections: keep-alive, or one multiplexed
     * HTTP/2 connection), and up to `inflight` easy handles. */
    CURLM *multi;
    batch_slot *slots;
    unsigned inflight;
    mcg_kube_backoff backoff;
    long timeout_ms;
    long connect_timeout_ms;
    struct stat token_st; /* of token_file when the token was read */
    char *connect_to;     /* CURLOPT_CONNECT_TO entry for tls-server-name */
    char *base;           /* URL prefix requests are made against */
    uint64_t requests, bytes;
    volatile sig_atomic_t *stop;
};

void mcg_kube_client_stats(const mcg_kube_client *kc, uint64_t *requests, uint64_t *bytes)
{
    *requests = kc->requests;
    *bytes = kc->bytes;
}

void mcg_kube_client_set_stop(mcg_kube_client *kc, volatile sig_atomic_t *stop)
{
    kc->stop = stop;
}

bool mcg_kube_client_stopped(const mcg_kube_client *kc)
{
    return kc->stop && *kc->stop;
}

uint32_t mcg_kube_random(mcg_kube_client *kc)
{
    (void)kc;
    return randombytes_random();
}

void mcg_kube_sleep_ms(mcg_kube_client *kc, long ms)
{
    int64_t end = mcg_mono_ms() + ms;
    for (;;) {
        if (mcg_kube_client_stopped(kc))
            return;
        int64_t left = end - mcg_mono_ms();
        if (left <= 0)
            return;
        if (left > 200)
            left = 200;
        struct timespec ts = {(time_t)(left / 1000), (long)(left % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* Re-read the token file when it changed (rotation) or when forced (after a 401). */
static int refresh_token(mcg_kube_client *kc, bool force, mcg_err *err)
{
    if (!kc->cfg.token_file)
        return 0;
    struct stat st;
    if (stat(kc->cfg.token_file, &st) != 0)
        return kc->cfg.token ? 0 /* keep the last good one */
                             : mcg_err_set_os(err, MCG_EIO, errno, "%s", kc->cfg.token_file);
    if (!force && kc->cfg.token && st.st_ino == kc->token_st.st_ino &&
        st.st_dev == kc->token_st.st_dev && st.st_size == kc->token_st.st_size &&
        st.st_mtim.tv_sec == kc->token_st.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == kc->token_st.st_mtim.tv_nsec)
        return 0;
    mcg_buf b = MCG_BUF_INIT;
    mcg_err e = {0};
    int rc = mcg_kube_read_file(kc->cfg.token_file, 64u << 10, &b, &e);
    if (rc == 0) {
        size_t n = b.len;
        while (n && (b.ptr[n - 1] == '\n' || b.ptr[n - 1] == '\r' || b.ptr[n - 1] == ' '))
            n--;
        if (n && !memchr(b.ptr, '\n', n) && !memchr(b.ptr, '\r', n) && !memchr(b.ptr, '\0', n)) {
            if (kc->cfg.token) {
                mcg_wipe(kc->cfg.token, strlen(kc->cfg.token));
                free(kc->cfg.token);
            }
            kc->cfg.token = mcg_strndup(b.ptr, n);
            kc->token_st = st;
        } else if (!kc->cfg.token) {
            rc = mcg_err_set(err, MCG_EINVAL, "%s: not a token", kc->cfg.token_file);
        }
    } else if (!kc->cfg.token) {
        rc = mcg_err_set(err, rc, "%s", e.msg);
    } else {
        rc = 0; /* mid-rotation: keep the last good token */
    }
    mcg_kube_buf_wipe(&b);
    return rc;
}

/* Split "https://host[:port][/prefix]" to build CONNECT_TO for tls-server-name. */
static int setup_server_name(mcg_kube_client *kc, mcg_err *err)
{
    const char *url = kc->cfg.server;
    bool https = !strncmp(url, "https://", 8);
    const char *host = url + (https ? 8 : 7);
    const char *path = strchr(host, '/');
    size_t hostport_len = path ? (size_t)(path - host) : strlen(host);
    char *hostport = mcg_strndup(host, hostport_len);
    const char *port = https ? "443" : "80";
    char *h = hostport, *colon;
    if (*h == '[') {
        char *rb = strchr(h, ']');
        if (!rb) {
            free(hostport);
            return mcg_err_set(err, MCG_EINVAL, "%s: bad server URL", kc->cfg.source);
        }
        colon = rb[1] == ':' ? rb + 1 : NULL;
    } else {
        colon = strrchr(h, ':');
    }
    if (colon) {
        *colon = '\0';
        port = colon + 1;
    }
    kc->connect_to = mcg_sprintf("%s:%s:%s:%s", kc->cfg.tls_server_name, port, h, port);
    kc->base = mcg_sprintf("%s://%s:%s%s", https ? "https" : "http", kc->cfg.tls_server_name, port,
                           path ? path : "");
    free(hostport);
    return 0;
}

/* Options every handle (request or watch) gets. */
static int setup_handle(mcg_kube_client *kc, CURL *h, mcg_err *err)
{
    CURLcode c = CURLE_OK;
#define SET(opt, val)                                                                              \
    do {                                                                                           \
        if (c == CURLE_OK)                                                                         \
            c = curl_easy_setopt(h, opt, val);                                                     \
    } while (0)
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_PROTOCOLS_STR, "https,http");
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    SET(CURLOPT_ACCEPT_ENCODING, "");
    SET(CURLOPT_CONNECTTIMEOUT_MS, kc->connect_timeout_ms);
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
    SET(CURLOPT_USERAGENT, "mcgit/" MCGIT_VERSION);
    SET(CURLOPT_ERRORBUFFER, kc->errbuf);
    if (kc->cfg.insecure) {
        SET(CURLOPT_SSL_VERIFYPEER, 0L);
        SET(CURLOPT_SSL_VERIFYHOST, 0L);
    } else {
        SET(CURLOPT_SSL_VERIFYPEER, 1L);
        SET(CURLOPT_SSL_VERIFYHOST, 2L);
    }
    if (kc->cfg.ca.len) {
        /* Trust the cluster's CA only, not the system's bundle too. */
        struct curl_blob blob = {kc->cfg.ca.ptr, kc->cfg.ca.len, CURL_BLOB_NOCOPY};
        SET(CURLOPT_CAINFO, NULL);
        SET(CURLOPT_CAPATH, NULL);
        SET(CURLOPT_CAINFO_BLOB, &blob);
    }
    if (kc->cfg.cert.len) {
        struct curl_blob cb = {kc->cfg.cert.ptr, kc->cfg.cert.len, CURL_BLOB_NOCOPY};
        struct curl_blob kb = {kc->cfg.key.ptr, kc->cfg.key.len, CURL_BLOB_NOCOPY};
        SET(CURLOPT_SSLCERTTYPE, "PEM");
        SET(CURLOPT_SSLCERT_BLOB, &cb);
        SET(CURLOPT_SSLKEYTYPE, "PEM");
        SET(CURLOPT_SSLKEY_BLOB, &kb);
    }
#undef SET
    if (c != CURLE_OK)
        return mcg_err_set(err, MCG_EIO, "%s: libcurl: %s", kc->cfg.source, curl_easy_strerror(c));
    return 0;
}

int mcg_cluster_lib_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : MCG_EIO;
}

int mcg_kube_client_new(mcg_kube_client **out, mcg_kube_config *cfg, mcg_err *err)
{
    *out = NULL;
    mcg_kube_client *kc = mcg_calloc(1, sizeof(*kc));
    kc->cfg = *cfg; /* transferred */
    memset(cfg, 0, sizeof(*cfg));
    int rc = 0;
    if (sodium_init() < 0) {
        rc = mcg_err_set(err, MCG_EIO, "libsodium failed to initialise");
        goto fail;
    }
    kc->backoff = (mcg_kube_backoff)MCG_KUBE_BACKOFF_DEFAULT;
    uint64_t retries, timeout, inflight;
    if ((rc = mcg_env_u64("MCGIT_KUBE_RETRIES", 5, 1, 20, &retries, err)) != 0 ||
        (rc = mcg_env_u64("MCGIT_KUBE_TIMEOUT", 30, 1, 3600, &timeout, err)) != 0 ||
        (rc = mcg_env_u64("MCGIT_KUBE_INFLIGHT", MCG_KUBE_INFLIGHT_DEFAULT, 1,
                          MCG_KUBE_INFLIGHT_MAX, &inflight, err)) != 0)
        goto fail;
    kc->backoff.attempts = (unsigned)retries;
    kc->timeout_ms = (long)timeout * 1000;
    kc->connect_timeout_ms = kc->timeout_ms < 10000 ? kc->timeout_ms : 10000;
    kc->inflight = (unsigned)inflight;
    if (kc->cfg.tls_server_name && (rc = setup_server_name(kc, err)) != 0)
        goto fail;
    if (!kc->base)
        kc->base = mcg_strdup(kc->cfg.server);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        rc = mcg_err_set(err, MCG_EIO, "libcurl failed to initialise");
        goto fail;
    }
    kc->h = curl_easy_init();
    if (!kc->h) {
        curl_global_cleanup();
        rc = mcg_err_set(err, MCG_EIO, "libcurl failed to initialise");
        goto fail;
    }
    if ((rc = setup_handle(kc, kc->h, err)) != 0)
        goto fail;
    if ((rc = refresh_token(kc, false, err)) != 0)
        goto fail;
    *out = kc;
    return 0;
fail:
    mcg_kube_client_free(kc);
    return rc;
}

void mcg_kube_client_free(mcg_kube_client *kc)
{
    if (!kc)
        return;
    batch_free(kc);
    if (kc->h) {
        curl_easy_cleanup(kc->h);
        curl_global_cleanup();
    }
    mcg_kube_config_free(&kc->cfg);
    free(kc->connect_to);
    free(kc->base);
    free(kc);
}

/* Response being received: capped while it arrives. */
typedef struct resp_buf {
    mcg_buf body;
    size_t max;
    bool too_big;
    long retry_after;
} resp_buf;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *arg)
{
    resp_buf *r = arg;
    size_t n = size * nmemb;
    if (r->body.len + n > r->max) {
        r->too_big = true;
        return 0; /* abort the transfer */
    }
    mcg_buf_put(&r->body, ptr, n);
    return n;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *arg)
{
    resp_buf *r = arg;
    size_t n = size * nmemb;
    if (n > 12 && !strncasecmp(ptr, "retry-after:", 12)) {
        char v[32];
        size_t k = n - 12 < sizeof(v) - 1 ? n - 12 : sizeof(v) - 1;
        memcpy(v, ptr + 12, k);
        v[k] = '\0';
        r->retry_after = mcg_kube_parse_retry_after(v);
    }
    return n;
}

/* Headers of one request; the Authorization line is wiped afterwards. */
typedef struct req_headers {
    struct curl_slist *list;
    char *auth;
} req_headers;

static void headers_free(req_headers *h)
{
    curl_slist_free_all(h->list);
    h->list = NULL;
    if (h->auth) {
        mcg_wipe(h->auth, strlen(h->auth));
        free(h->auth);
        h->auth = NULL;
    }
}

static int headers_make(mcg_kube_client *kc, req_headers *h, const char *accept,
                        const char *content_type, mcg_err *err)
{
    memset(h, 0, sizeof(*h));
    char *a = mcg_sprintf("Accept: %s", accept ? accept : "application/json");
    h->list = curl_slist_append(h->list, a);
    free(a);
    if (content_type) {
        char *ct = mcg_sprintf("Content-Type: %s", content_type);
        h->list = curl_slist_append(h->list, ct);
        free(ct);
    }
    h->list = curl_slist_append(h->list, "Expect:");
    if (kc->cfg.token) {
        /* curl_slist_append copies the line: both copies are wiped after the request */
        h->auth = mcg_sprintf("Authorization: Bearer %s", kc->cfg.token);
        h->list = curl_slist_append(h->list, h->auth);
    }
    if (!h->list)
        return mcg_err_set(err, MCG_ENOMEM, "out of memory building request headers");
    return 0;
}

/* The path without its query, for messages (queries hold continue tokens). */
static void path_for_msg(char *out, size_t n, const char *path)
{
    size_t k = strcspn(path, "?");
    snprintf(out, n, "%.*s", (int)k, path);
}

/* clang-format off */
static int code_for_status(long status)
{
    switch (status) {
    case 404: return MCG_ENOTFOUND;
    case 409: return MCG_ECONFLICT;
    case 400:
    case 422: return MCG_EINVAL;
    default: return MCG_EIO;
    }
}
/* clang-format on */

/* Wipe a header list's copy of the Authorization line (curl_slist_append copies it). */
static void slist_wipe(struct curl_slist *l)
{
    for (; l; l = l->next)
        if (l->data && !strncmp(l->data, "Authorization:", 14))
            mcg_wipe(l->data, strlen(l->data));
}

/* A request that got no answer: "METHOD PATH: what curl said". */
static int fail_transport(mcg_err *err, const char *what, const char *errbuf, CURLcode cc,
                          unsigned attempt)
{
    char msg[CURL_ERROR_SIZE];
    const char *why = errbuf[0] ? errbuf : curl_easy_strerror(cc);
    mcg_kube_clean_line(msg, sizeof(msg), why, strlen(why));
    if (attempt > 1)
        return mcg_err_set(err, MCG_EIO, "%s: %s (after %u attempts)", what, msg, attempt);
    return mcg_err_set(err, MCG_EIO, "%s: %s", what, msg);
}

/* A request answered with a failure: "METHOD PATH: CODE Reason: message". */
static int fail_status(mcg_err *err, const char *what, long st, const resp_buf *r, unsigned attempt)
{
    char msg[600];
    mcg_kube_error_text(msg, sizeof(msg), st, r->body.ptr, r->body.len);
    if (attempt > 1)
        return mcg_err_set(err, code_for_status(st), "%s: %ld %s: %s (after %u attempts)", what, st,
                           reason_phrase(st), msg, attempt);
    return mcg_err_set(err, code_for_status(st), "%s: %ld %s: %s", what, st, reason_phrase(st),
                       msg);
}

/* Wait before another attempt when the backoff allows one (false: give up). */
static bool retry_wait(mcg_kube_client *kc, unsigned attempt, long retry_after)
{
    long d = mcg_kube_retry_delay(&kc->backoff, attempt, retry_after, mcg_kube_random(kc));
    if (d < 0)
        return false;
    mcg_kube_sleep_ms(kc, d);
    return true;
}

/*
 * One attempt of request rq at url (body: its body_len bytes, or NULL):
 * headers made, the handle set up, the request performed and the handle
 * reset. The response goes to r (at most max bytes), its status to *st
 * (0 without one), curl's code to *cc. Fails only when the headers cannot
 * be made.
 */
static int call_once(mcg_kube_client *kc, const mcg_kube_req *rq, const char *url, const char *body,
                     size_t body_len, size_t max, resp_buf *r, long *st, CURLcode *cc, mcg_err *err)
{
    req_headers hd;
    int rc;
    if ((rc = headers_make(kc, &hd, rq->accept,
                           body ? (rq->content_type ? rq->content_type : "application/json") : NULL,
                           err)) != 0) {
        slist_wipe(hd.list);
        headers_free(&hd);
        return rc;
    }
    CURL *h = kc->h;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    }
    if (strcmp(rq->method, "GET") != 0 && !(body && !strcmp(rq->method, "POST")))
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd.list);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, kc->timeout_ms);
    /* A Content-Length over the limit is refused before any body arrives. */
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max);
    curl_easy_setopt(h, CURLOPT_CONNECT_TO, NULL);
    struct curl_slist *ct = NULL;
    if (kc->connect_to) {
        ct = curl_slist_append(NULL, kc->connect_to);
        curl_easy_setopt(h, CURLOPT_CONNECT_TO, ct);
    }
    *cc = curl_easy_perform(h);
    kc->requests++;
    kc->bytes += r->body.len;
    *st = 0;
    if (*cc == CURLE_OK || *cc == CURLE_WRITE_ERROR)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, st);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_CONNECT_TO, NULL);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)0);
    curl_slist_free_all(ct);
    slist_wipe(hd.list);
    headers_free(&hd);
    return 0;
}

/* A response over its limit (max bytes), or a header line over curl's, is refused. */
static int check_size(const resp_buf *r, CURLcode cc, const char *what, size_t max, mcg_err *err)
{
    if (r->too_big || cc == CURLE_FILESIZE_EXCEEDED)
        return mcg_err_set(err, MCG_ENOMEM, "%s: response larger than %zu bytes", what, max);
    if (cc == CURLE_OUT_OF_MEMORY) {
        /* What curl says of a header line over its 100 KiB limit. */
        return mcg_err_set(err, MCG_ENOMEM,
                           "%s: response refused (curl: out of memory; a header over 100 KiB "
                           "does this)",
                           what);
    }
    return 0;
}

int mcg_kube_call(mcg_kube_client *kc, const mcg_kube_req *rq, long *status, json_t **out,
                  mcg_err *err)
{
    long st = 0;
    if (out)
        *out = NULL;
    char what[300];
    char shown[256];
    path_for_msg(shown, sizeof(shown), rq->path);
    snprintf(what, sizeof(what), "%s %s", rq->method, shown);
    char *body = NULL;
    size_t body_len = 0;
    if (rq->body) {
        body = json_dumps(rq->body, JSON_COMPACT);
        if (!body) {
            if (status)
                *status = 0;
            return mcg_err_set(err, MCG_EINVAL, "%s: request body is not serialisable", what);
        }
        body_len = strlen(body);
    }
    char *url = mcg_sprintf("%s%s", kc->base, rq->path);
    size_t max = rq->max_bytes ? rq->max_bytes : MCG_KUBE_MAX_OBJECT;
    resp_buf r = {MCG_BUF_INIT, max, false, -1};
    int rc = 0;
    bool reauth = false;
    unsigned attempt = 0;
    for (;;) {
        attempt++;
        mcg_buf_free(&r.body);
        r.too_big = false;
        r.retry_after = -1;
        kc->errbuf[0] = '\0';
        if ((rc = refresh_token(kc, false, err)) != 0)
            break;
        CURLcode cc;
        if ((rc = call_once(kc, rq, url, body, body_len, max, &r, &st, &cc, err)) != 0)
            break;
        if ((rc = check_size(&r, cc, what, max, err)) != 0)
            break;
        if (cc != CURLE_OK) {
            if (mcg_kube_retryable(0, (int)cc, rq->flags) && !mcg_kube_client_stopped(kc) &&
                retry_wait(kc, attempt, -1))
                continue;
            rc = fail_transport(err, what, kc->errbuf, cc, attempt);
            break;
        }
        if (st >= 200 && st < 300) {
            if (out && r.body.len) {
                rc = mcg_kube_parse_object(out, what, r.body.ptr, r.body.len, max, err);
            } else
                rc = 0;
            break;
        }
        if (st == 401 && kc->cfg.token_file && !reauth) {
            reauth = true; /* the token may just have rotated */
            if (refresh_token(kc, true, NULL) == 0) {
                attempt--;
                continue;
            }
        }
        if (mcg_kube_retryable(st, 0, rq->flags) && !mcg_kube_client_stopped(kc) &&
            retry_wait(kc, attempt, r.retry_after))
            continue;
        rc = fail_status(err, what, st, &r, attempt);
        break;
    }
    if (status)
        *status = st;
    mcg_buf_free(&r.body);
    free(url);
    free(body);
    return rc;
}

int mcg_kube_simple(mcg_kube_client *kc, const char *method, const char *path, long *status,
                    json_t **out, mcg_err *err)
{
    mcg_kube_req rq = {method, path, NULL, NULL, NULL, 0, 0};
    return mcg_kube_call(kc, &rq, status, out, err);
}

char *mcg_kube_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    mcg_buf b = MCG_BUF_INIT;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~')
            mcg_buf_putc(&b, (char)*p);
        else {
            mcg_buf_putc(&b, '%');
            mcg_buf_putc(&b, hex[*p >> 4]);
            mcg_buf_putc(&b, hex[*p & 15]);
        }
    }
    size_t n;
    return mcg_buf_detach(&b, &n);
}

/*
 * A list is a kind "...List" with items (the API server writes [] when
 * empty, or null): anything else, a Status that says 200 among them, must
 * not read as "there are none".
 */
static int check_list(const json_t *o, const json_t *items, const char *path, mcg_err *err)
{
    const char *kind = json_string_value(json_object_get(o, "kind"));
    size_t klen = kind ? strlen(kind) : 0;
    if (!o || !items || (!json_is_array(items) && !json_is_null(items)) || klen < 4 ||
        strcmp(kind + klen - 4, "List") != 0)
        return mcg_err_set(err, MCG_EINVAL, "GET %.*s: response is not a list (kind %.40s)",
                           (int)strcspn(path, "?"), path, kind ? kind : "missing");
    return 0;
}

/* fn on each item of a page of the list at path, each an object. */
static int each_item(json_t *items, const char *path, mcg_kube_item_fn fn, void *arg, mcg_err *err)
{
    size_t i;
    json_t *it;
    int rc = 0;
    json_array_foreach(items, i, it) {
        if (!json_is_object(it)) {
            rc = mcg_err_set(err, MCG_EINVAL, "GET %.*s: list item is not an object",
                             (int)strcspn(path, "?"), path);
            break;
        }
        if ((rc = fn(it, arg, err)) != 0)
            break;
    }
    return rc;
}

int mcg_kube_list(mcg_kube_client *kc, const char *path, const char *accept, mcg_kube_item_fn fn,
                  mcg_kube_reset_fn reset, void *arg, char **rv, mcg_err *err)
{
    if (rv)
        *rv = NULL;
    char *cont = NULL;
    bool restarted = false;
    int rc = 0;
    for (unsigned page = 0;; page++) {
        if (page > 100000) {
            rc = mcg_err_set(err, MCG_EIO, "GET %s: the list never ends", path);
            break;
        }
        char *esc = cont ? mcg_kube_escape(cont) : NULL;
        char *url = mcg_sprintf("%s%slimit=500%s%s", path, strchr(path, '?') ? "&" : "?",
                                esc ? "&continue=" : "", esc ? esc : "");
        free(esc);
        mcg_kube_req rq = {"GET", url, NULL, NULL, accept, MCG_KUBE_MAX_LIST, 0};
        json_t *o = NULL;
        long st = 0;
        rc = mcg_kube_call(kc, &rq, &st, &o, err);
        free(url);
        if (rc && st == 410 && cont && !restarted) {
            /* the continue token expired: start over from a fresh snapshot */
            restarted = true;
            free(cont);
            cont = NULL;
            if (reset)
                reset(arg);
            if (rv) {
                free(*rv);
                *rv = NULL;
            }
            page = 0;
            continue;
        }
        if (rc)
            break;
        json_t *md = json_object_get(o, "metadata");
        json_t *items = json_object_get(o, "items");
        if ((rc = check_list(o, items, path, err)) != 0) {
            json_decref(o);
            break;
        }
        if (rv && !*rv && json_is_string(json_object_get(md, "resourceVersion")))
            *rv = mcg_strdup(json_string_value(json_object_get(md, "resourceVersion")));
        rc = each_item(items, path, fn, arg, err);
        json_t *c = json_object_get(md, "continue");
        free(cont);
        cont = json_is_string(c) && json_string_length(c) ? mcg_strdup(json_string_value(c)) : NULL;
        json_decref(o);
        if (rc || !cont)
            break;
    }
    free(cont);
    if (rc && rv) {
        free(*rv);
        *rv = NULL;
    }
    return rc;
}

struct mcg_kube_watch {
    mcg_kube_client *kc;
    CURLM *m;
    CURL *h;
    char *url;
    req_headers hd;
    struct curl_slist *ct;
    mcg_kube_stream s;
    mcg_kube_event_fn fn;
    void *arg;
    long status;     /* HTTP status, once known */
    mcg_buf errbody; /* body of a non-200 answer */
    bool delivered;  /* data arrived during this poll */
    bool done;
    CURLcode result;
    int feed_rc;
};

static size_t on_watch_body(char *ptr, size_t size, size_t nmemb, void *arg)
{
    mcg_kube_watch *w = arg;
    size_t n = size * nmemb;
    w->kc->bytes += n;
    if (!w->status)
        curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &w->status);
    if (w->status != 200) {
        if (w->errbody.len < 65536)
            mcg_buf_put(&w->errbody, ptr, n < 65536 ? n : 65536);
        return n;
    }
    w->delivered = true;
    if (w->feed_rc)
        return 0;
    w->feed_rc = mcg_kube_stream_feed(&w->s, ptr, n, w->fn, w->arg);
    return w->feed_rc ? 0 : n;
}

void mcg_kube_watch_free(mcg_kube_watch *w)
{
    if (!w)
        return;
    if (w->m) {
        if (w->h)
            curl_multi_remove_handle(w->m, w->h);
        curl_multi_cleanup(w->m);
    }
    if (w->h)
        curl_easy_cleanup(w->h);
    slist_wipe(w->hd.list);
    headers_free(&w->hd);
    curl_slist_free_all(w->ct);
    mcg_kube_stream_free(&w->s);
    mcg_buf_free(&w->errbody);
    free(w->url);
    free(w);
}

int mcg_kube_watch_start(mcg_kube_watch **out, mcg_kube_client *kc, const char *path,
                         const char *rv, mcg_kube_event_fn fn, void *arg, mcg_err *err)
{
    *out = NULL;
    mcg_kube_watch *w = mcg_calloc(1, sizeof(*w));
    w->kc = kc;
    w->fn = fn;
    w->arg = arg;
    w->s.max_line = MCG_KUBE_MAX_OBJECT;
    /* The server ends the watch after timeoutSeconds; spread reconnects out. */
    long tmo = 240 + (long)(mcg_kube_random(kc) % 120);
    char *erv = rv ? mcg_kube_escape(rv) : NULL;
    w->url = mcg_sprintf("%s%s%swatch=1&allowWatchBookmarks=true&timeoutSeconds=%ld%s%s", kc->base,
                         path, strchr(path, '?') ? "&" : "?", tmo, erv ? "&resourceVersion=" : "",
                         erv ? erv : "");
    free(erv);
    int rc = refresh_token(kc, false, err);
    if (rc)
        goto fail;
    w->h = curl_easy_init();
    w->m = curl_multi_init();
    if (!w->h || !w->m) {
        rc = mcg_err_set(err, MCG_EIO, "libcurl failed to initialise");
        goto fail;
    }
    if ((rc = setup_handle(kc, w->h, err)) != 0 ||
        (rc = headers_make(kc, &w->hd, NULL, NULL, err)) != 0)
        goto fail;
    curl_easy_setopt(w->h, CURLOPT_URL, w->url);
    curl_easy_setopt(w->h, CURLOPT_HTTPHEADER, w->hd.list);
    curl_easy_setopt(w->h, CURLOPT_WRITEFUNCTION, on_watch_body);
    curl_easy_setopt(w->h, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(w->h, CURLOPT_TIMEOUT_MS, (tmo + 30) * 1000L);
    curl_easy_setopt(w->h, CURLOPT_ERRORBUFFER, NULL);
    if (kc->connect_to) {
        w->ct = curl_slist_append(NULL, kc->connect_to);
        curl_easy_setopt(w->h, CURLOPT_CONNECT_TO, w->ct);
    }
    if (curl_multi_add_handle(w->m, w->h) != CURLM_OK) {
        rc = mcg_err_set(err, MCG_EIO, "libcurl: cannot start the watch");
        goto fail;
    }
    kc->requests++;
    *out = w;
    return 0;
fail:
    mcg_kube_watch_free(w);
    return rc;
}

int mcg_kube_watch_poll(mcg_kube_watch *w, long timeout_ms, mcg_err *err)
{
    int64_t end = mcg_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    char shown[256];
    path_for_msg(shown, sizeof(shown), w->url + strlen(w->kc->base));
    w->delivered = false;
    for (;;) {
        int running = 0;
        if (!w->done) {
            curl_multi_perform(w->m, &running);
            int left;
            CURLMsg *msg;
            while ((msg = curl_multi_info_read(w->m, &left)))
                if (msg->msg == CURLMSG_DONE) {
                    w->done = true;
                    w->result = msg->data.result;
                }
        }
        if (w->feed_rc == MCG_ENOTFOUND || w->s.gone)
            return mcg_err_set(err, MCG_ENOTFOUND, "WATCH %s: %s", shown, w->s.err);
        if (w->feed_rc)
            return mcg_err_set(err, w->feed_rc, "WATCH %s: %s", shown, w->s.err);
        if (w->done) {
            if (!w->status)
                curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &w->status);
            if (w->status == 410)
                return mcg_err_set(err, MCG_ENOTFOUND, "WATCH %s: 410 Gone", shown);
            if (w->status && w->status != 200) {
                char m[600];
                mcg_kube_error_text(m, sizeof(m), w->status, w->errbody.ptr, w->errbody.len);
                return mcg_err_set(err, code_for_status(w->status), "WATCH %s: %ld %s: %s", shown,
                                   w->status, reason_phrase(w->status), m);
            }
            /* Once the server said 200 the stream is resumable from the last complete
             * event, however it ended (its timeout, a proxy or load balancer cutting it). */
            if (w->status == 200 || w->result == CURLE_OK)
                return 1;
            return mcg_err_set(err, MCG_EIO, "WATCH %s: %s", shown, curl_easy_strerror(w->result));
        }
        if (w->delivered)
            return 0;
        int64_t left = end - mcg_mono_ms();
        if (left <= 0 || mcg_kube_client_stopped(w->kc))
            return 0;
        curl_multi_poll(w->m, NULL, 0, left > 200 ? 200 : (int)left, NULL);
    }
}

/* ------------------------------------------------------------- batches */

struct batch_slot {
    CURL *h;
    bool busy;
    size_t i; /* the request it carries */
    char *url, *body;
    req_headers hd;
    struct curl_slist *ct;
    resp_buf r;
    char errbuf[CURL_ERROR_SIZE];
};

/* Give up what one slot holds for its request (the handle stays, reusable). */
static void slot_release(mcg_kube_client *kc, batch_slot *sl)
{
    if (sl->busy)
        curl_multi_remove_handle(kc->multi, sl->h);
    sl->busy = false;
    curl_easy_setopt(sl->h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(sl->h, CURLOPT_CONNECT_TO, NULL);
    curl_easy_setopt(sl->h, CURLOPT_POSTFIELDS, NULL);
    slist_wipe(sl->hd.list);
    headers_free(&sl->hd);
    curl_slist_free_all(sl->ct);
    sl->ct = NULL;
    free(sl->url);
    free(sl->body);
    sl->url = sl->body = NULL;
    mcg_buf_free(&sl->r.body);
}

static void batch_free(mcg_kube_client *kc)
{
    for (unsigned j = 0; kc->slots && j < kc->inflight; j++) {
        batch_slot *sl = &kc->slots[j];
        if (!sl->h)
            continue;
        slot_release(kc, sl);
        curl_easy_cleanup(sl->h);
    }
    free(kc->slots);
    kc->slots = NULL;
    if (kc->multi)
        curl_multi_cleanup(kc->multi);
    kc->multi = NULL;
}

/* The multi handle and its easy handles, made once per client. */
static int batch_setup(mcg_kube_client *kc, mcg_err *err)
{
    if (kc->multi)
        return 0;
    kc->multi = curl_multi_init();
    if (!kc->multi)
        return mcg_err_set(err, MCG_EIO, "libcurl failed to initialise");
    curl_multi_setopt(kc->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    curl_multi_setopt(kc->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)kc->inflight);
    curl_multi_setopt(kc->multi, CURLMOPT_MAXCONNECTS, (long)kc->inflight);
    kc->slots = mcg_calloc(kc->inflight, sizeof(*kc->slots));
    int rc = 0;
    for (unsigned j = 0; j < kc->inflight && !rc; j++) {
        batch_slot *sl = &kc->slots[j];
        if (!(sl->h = curl_easy_init())) {
            rc = mcg_err_set(err, MCG_EIO, "libcurl failed to initialise");
            break;
        }
        if ((rc = setup_handle(kc, sl->h, err)) != 0)
            break;
        /* HTTP/2 where TLS negotiates it: the batch shares one connection,
         * its requests multiplexed (waiting for it rather than opening more) */
        curl_easy_setopt(sl->h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
        curl_easy_setopt(sl->h, CURLOPT_PIPEWAIT, 1L);
        curl_easy_setopt(sl->h, CURLOPT_ERRORBUFFER, sl->errbuf);
        curl_easy_setopt(sl->h, CURLOPT_PRIVATE, sl);
    }
    if (rc)
        batch_free(kc);
    return rc;
}

/* "METHOD PATH" of a request, for messages. */
static void req_what(char *out, size_t n, const mcg_kube_req *rq)
{
    char shown[256];
    path_for_msg(shown, sizeof(shown), rq->path);
    snprintf(out, n, "%s %.*s", rq->method, (int)(n > 16 ? n - 16 : 0), shown);
}

/* Put request rq on slot sl and add it to the multi handle. */
static int slot_start(mcg_kube_client *kc, batch_slot *sl, const mcg_kube_req *rq, size_t i,
                      mcg_err *err)
{
    char what[300];
    req_what(what, sizeof(what), rq);
    size_t body_len = 0;
    if (rq->body) {
        if (!(sl->body = json_dumps(rq->body, JSON_COMPACT)))
            return mcg_err_set(err, MCG_EINVAL, "%s: request body is not serialisable", what);
        body_len = strlen(sl->body);
    }
    int rc = headers_make(
        kc, &sl->hd, rq->accept,
        sl->body ? (rq->content_type ? rq->content_type : "application/json") : NULL, err);
    if (rc) {
        slot_release(kc, sl);
        return rc;
    }
    sl->i = i;
    sl->url = mcg_sprintf("%s%s", kc->base, rq->path);
    sl->r =
        (resp_buf){MCG_BUF_INIT, rq->max_bytes ? rq->max_bytes : MCG_KUBE_MAX_OBJECT, false, -1};
    sl->errbuf[0] = '\0';
    CURL *h = sl->h;
    curl_easy_setopt(h, CURLOPT_URL, sl->url);
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
    if (sl->body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, sl->body);
    }
    if (strcmp(rq->method, "GET") != 0 && !(sl->body && !strcmp(rq->method, "POST")))
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, sl->hd.list);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sl->r);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &sl->r);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, kc->timeout_ms);
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)sl->r.max);
    if (kc->connect_to) {
        sl->ct = curl_slist_append(NULL, kc->connect_to);
        curl_easy_setopt(h, CURLOPT_CONNECT_TO, sl->ct);
    }
    if (curl_multi_add_handle(kc->multi, h) != CURLM_OK) {
        slot_release(kc, sl);
        return mcg_err_set(err, MCG_EIO, "%s: libcurl: cannot start the request", what);
    }
    sl->busy = true;
    return 0;
}

/*
 * Judge a finished request as mcg_kube_call judges one try; *again when it
 * is worth repeating (then res stays clear), the largest Retry-After in
 * *retry_after. The slot is released.
 */
static void slot_done(mcg_kube_client *kc, batch_slot *sl, const mcg_kube_req *rq, CURLcode cc,
                      mcg_kube_result *res, bool *again, long *retry_after)
{
    char what[300];
    req_what(what, sizeof(what), rq);
    long st = 0;
    if (cc == CURLE_OK || cc == CURLE_WRITE_ERROR)
        curl_easy_getinfo(sl->h, CURLINFO_RESPONSE_CODE, &st);
    kc->requests++;
    kc->bytes += sl->r.body.len;
    res->status = st;
    bool may_retry = kc->backoff.attempts > 1 && !mcg_kube_client_stopped(kc);
    size_t max = sl->r.max;
    if (sl->r.too_big || cc == CURLE_FILESIZE_EXCEEDED) {
        res->rc =
            mcg_err_set(&res->err, MCG_ENOMEM, "%s: response larger than %zu bytes", what, max);
    } else if (cc == CURLE_OUT_OF_MEMORY) {
        res->rc = mcg_err_set(&res->err, MCG_ENOMEM,
                              "%s: response refused (curl: out of memory; a header over 100 KiB "
                              "does this)",
                              what);
    } else if (cc != CURLE_OK) {
        if (may_retry && mcg_kube_retryable(0, (int)cc, rq->flags))
            *again = true;
        else
            res->rc = fail_transport(&res->err, what, sl->errbuf, cc, 1);
    } else if (st >= 200 && st < 300) {
        if (sl->r.body.len)
            res->rc = mcg_kube_parse_object(&res->obj, what, sl->r.body.ptr, sl->r.body.len, max,
                                            &res->err);
    } else if ((st == 401 && kc->cfg.token_file) ||
               (may_retry && mcg_kube_retryable(st, 0, rq->flags))) {
        *again = true; /* mcg_kube_call re-reads a rotated token, backs off */
        if (sl->r.retry_after > *retry_after)
            *retry_after = sl->r.retry_after;
    } else {
        res->rc = fail_status(&res->err, what, st, &sl->r, 1);
    }
    if (*again)
        res->status = 0;
    slot_release(kc, sl);
}

void mcg_kube_call_many(mcg_kube_client *kc, const mcg_kube_req *rqs, size_t n,
                        mcg_kube_gate_fn gate, void *arg, mcg_kube_result *res)
{
    memset(res, 0, n * sizeof(*res));
    if (!n)
        return;
    mcg_err e = {0};
    int rc = refresh_token(kc, false, &e);
    if (!rc)
        rc = batch_setup(kc, &e);
    if (rc) {
        for (size_t i = 0; i < n; i++) {
            res[i].rc = rc;
            res[i].err = e;
        }
        return;
    }
    bool *again = mcg_calloc(n, sizeof(*again));
    long retry_after = -1;
    size_t next = 0;
    unsigned active = 0;
    for (;;) {
        while (active < kc->inflight && next < n) {
            size_t i = next++;
            if (gate && (res[i].rc = gate(i, arg, &res[i].err)) != 0)
                continue;
            batch_slot *sl = NULL;
            for (unsigned j = 0; j < kc->inflight && !sl; j++)
                if (!kc->slots[j].busy)
                    sl = &kc->slots[j];
            if ((res[i].rc = slot_start(kc, sl, &rqs[i], i, &res[i].err)) == 0)
                active++;
        }
        if (!active)
            break;
        int running = 0;
        curl_multi_perform(kc->multi, &running);
        bool freed = false;
        int left;
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(kc->multi, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            batch_slot *sl = NULL;
            CURLcode cc = msg->data.result;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&sl);
            slot_done(kc, sl, &rqs[sl->i], cc, &res[sl->i], &again[sl->i], &retry_after);
            active--;
            freed = true;
        }
        if (active && !(freed && next < n))
            curl_multi_poll(kc->multi, NULL, 0, 200, NULL);
    }
    /* Tries worth repeating: one by one, after the backoff's first delay. */
    bool waited = false;
    for (size_t i = 0; i < n; i++) {
        if (!again[i])
            continue;
        if (!waited) {
            long d = mcg_kube_retry_delay(&kc->backoff, 1, retry_after, mcg_kube_random(kc));
            if (d > 0)
                mcg_kube_sleep_ms(kc, d);
            waited = true;
        }
        if (gate && (res[i].rc = gate(i, arg, &res[i].err)) != 0)
            continue;
        res[i].rc = mcg_kube_call(kc, &rqs[i], &res[i].status, &res[i].obj, &res[i].err);
    }
    free(again);
}

void mcg_kube_results_clear(mcg_kube_result *res, size_t n)
{
    for (size_t i = 0; res && i < n; i++) {
        json_decref(res[i].obj);
        res[i].obj = NULL;
    }
}
