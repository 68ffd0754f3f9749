/*
 * metrics — what the controller and the agent tell Prometheus, and the
 * webhook that wakes the controller on a push.
 *
 * Three parts behind one header:
 *   - a registry (registry.c, pure: no I/O, no clock): metric families
 *     declared once (name, type, help, label names, histogram buckets),
 *     series updated from any thread under one lock, and the whole registry
 *     written in the Prometheus text exposition format 0.0.4, families and
 *     series sorted so the same state always gives the same bytes;
 *   - the listener (server.c, libmicrohttpd on its own thread):
 *     GET /metrics serves the registry; POST /hooks/git, when a token file
 *     is given, checks the caller's token in constant time and calls a
 *     wake function (the controller's loop starts a pass at once);
 *   - the caller of that webhook (notify.c, libcurl), used by the
 *     post-receive hook: short timeout, never fails the push;
 *   - the standard process metrics (process.c, from /proc/self), served
 *     by the listener.
 *
 * Ownership: mcg_metrics and mcg_metrics_server objects are the caller's,
 * released with their _free (NULL is a no-op). Strings passed in are copied.
 */
#ifndef MCG_METRICS_H
#define MCG_METRICS_H

#include "util/util.h"

typedef enum {
    MCG_METRIC_COUNTER = 0,
    MCG_METRIC_GAUGE = 1,
    MCG_METRIC_HISTOGRAM = 2,
} mcg_metric_type;

/* Label values of one series, in the order of the family's label names. */
#define MCG_LV(...) ((const char *const[]){__VA_ARGS__})

/* Limits: a family has at most this many labels and histogram buckets. */
#define MCG_METRICS_MAX_LABELS 4
#define MCG_METRICS_MAX_BUCKETS 24

typedef struct mcg_metrics mcg_metrics;

/* A new, empty registry. Never NULL (aborts when out of memory, as mcg_malloc). */
mcg_metrics *mcg_metrics_new(void);
void mcg_metrics_free(mcg_metrics *m);

/*
 * Declare a family. name: [a-zA-Z_:][a-zA-Z0-9_:]*, not declared before;
 * labels: NULL or a comma-separated list of label names (no "le", none
 * starting with "__"); for a histogram, buckets[0..nbuckets) strictly
 * increasing upper bounds (+Inf is added), else NULL/0. MCG_EINVAL with a
 * message naming the family otherwise.
 */
int mcg_metrics_declare(mcg_metrics *m, const char *name, mcg_metric_type type, const char *help,
                        const char *labels, const double *buckets, size_t nbuckets, mcg_err *err);

/*
 * Update one series, created at 0 on first use. lv: one value per label of
 * the family (NULL for a family without labels). An undeclared name, a use
 * that does not fit the type (add to a histogram, a negative counter
 * increment, observe on a counter) or a missing label value is a
 * programming error: it is ignored, and counted in the family
 * mcgit_metrics_errors_total that every registry serves.
 *   add:     counter or gauge += v
 *   set:     gauge = v
 *   observe: histogram, one observation of v
 */
void mcg_metrics_add(mcg_metrics *m, const char *name, const char *const *lv, double v);
void mcg_metrics_set(mcg_metrics *m, const char *name, const char *const *lv, double v);
void mcg_metrics_observe(mcg_metrics *m, const char *name, const char *const *lv, double v);

/* Drop every series of a family (e.g. before setting per-node gauges again,
 * so a node that left stops being reported). */
void mcg_metrics_reset(mcg_metrics *m, const char *name);

/* The value of a counter or gauge series; false when it does not exist. */
bool mcg_metrics_get(mcg_metrics *m, const char *name, const char *const *lv, double *out);

/*
 * The registry in the text exposition format (version 0.0.4): per family
 * "# HELP" and "# TYPE" lines, then its series sorted by label values;
 * families sorted by name. Label values and help text are escaped as the
 * format says. Appended to out.
 */
void mcg_metrics_format(mcg_metrics *m, mcg_buf *out);

/* The content type of mcg_metrics_format's output. */
#define MCG_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* ------------------------------------------------------ process metrics */

/*
 * The standard process metrics (process.c): process_cpu_seconds_total,
 * process_open_fds, process_max_fds, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_start_time_seconds. _declare adds
 * the families (those already declared are left alone; MCG_EINVAL only if
 * a name is taken by something else); _update reads /proc/self and sets
 * them (a value that cannot be read keeps its last one). The listener
 * declares them and updates them before each scrape.
 */
int mcg_metrics_process_declare(mcg_metrics *m, mcg_err *err);
void mcg_metrics_process_update(mcg_metrics *m);

/* --------------------------------------------------------------- listener */

/* The largest webhook body read (larger: 413). */
#define MCG_WEBHOOK_MAX_BODY (1024 * 1024)
/* The largest token file. */
#define MCG_WEBHOOK_MAX_TOKEN 4096

typedef struct mcg_metrics_server mcg_metrics_server;

/* What a route (below) answers: status, Content-Type, body, extra headers. */
typedef struct mcg_route_answer {
    unsigned status;
    char type[96];
    mcg_buf body;
    mcg_strv headers; /* "Name: value" */
} mcg_route_answer;

typedef struct mcg_metrics_server_opts {
    const char *bind;        /* "HOST:PORT", "[V6]:PORT" or ":PORT" (all addresses); port 0: any */
    mcg_metrics *metrics;    /* served at GET /metrics (borrowed, outlives the server) */
    const char *token_file;  /* NULL: no webhook; else POST /hooks/git checks its token */
    void (*wake)(void *ctx); /* called on an authenticated webhook call, from the server's thread */
    void *wake_ctx;
    const char *who; /* "controller" or "agent": the log prefix */
    /*
     * A route (NULL: none): GET or HEAD of a path starting with route_prefix,
     * authenticated by "Authorization: Bearer TOKEN" against route_token_file
     * (read on every request, compared in constant time; 401 otherwise), is
     * answered by route(route_ctx, the rest of the path, the Accept header or
     * "", ans) on the listener's thread, one request at a time.
     */
    const char *route_prefix;
    const char *route_token_file;
    void (*route)(void *ctx, const char *rest, const char *accept, mcg_route_answer *ans);
    void *route_ctx;
} mcg_metrics_server_opts;

/*
 * Start listening. Bind errors, a bad address, and a token file that cannot
 * be read or is empty fail here (nothing listens). The server's threads
 * start with every signal blocked, so the caller's signal handling is
 * unchanged. The token file is read again on every webhook call (a rotated
 * secret takes effect at once); its content, trailing newline removed, is
 * the token. o->metrics is required; err may be NULL.
 *
 * A webhook call is authenticated when one of these matches the token:
 *   Authorization: Bearer TOKEN       (curl, the post-receive hook, Gitea)
 *   X-Gitlab-Token: TOKEN             (GitLab)
 *   X-Hub-Signature-256: sha256=HEX   (GitHub, Gitea, Forgejo: HMAC-SHA256
 *                                      of the body keyed with TOKEN)
 * compared in constant time. Answers: 202 and a wake when it is; 401 when
 * no token or a wrong one was given; 405 for another method; 413 for a body
 * over MCG_WEBHOOK_MAX_BODY; 404 for other paths. The token never appears
 * in a log line or an answer.
 */
int mcg_metrics_serve(mcg_metrics_server **out, const mcg_metrics_server_opts *o, mcg_err *err);

/* The port the server listens on (the chosen one when asked for port 0). */
unsigned mcg_metrics_server_port(const mcg_metrics_server *s);

/* Stop listening (waits for the server's threads). NULL is a no-op. */
void mcg_metrics_server_free(mcg_metrics_server *s);

/*
 * Call a webhook: POST url with "Authorization: Bearer TOKEN" (TOKEN read
 * from token_file, trailing newline removed; token_file NULL: no header),
 * body body (may be NULL), waiting at most timeout_ms. 0 on a 2xx answer,
 * else an error naming the URL (credentials in it removed) and the status
 * or transport error.
 */
int mcg_metrics_notify(const char *url, const char *token_file, const char *body, long timeout_ms,
                       mcg_err *err);

#endif
