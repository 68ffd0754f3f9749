/*
 * kube_int.h — shared inside cluster/ by the `kube` backend's files, one
 * concern each:
 *
 *   kube_config.c   where the API server is and who we are: a kubeconfig file
 *                   or the in-cluster service account (parsing + file loading)
 *   kube_http.c     the HTTP client: one reused curl handle, timeouts, bounded
 *                   retries with backoff and jitter, response validation,
 *                   paged lists, the watch connection, and batches of
 *                   concurrent requests (bounded in flight, one pool)
 *   kube_backend.c  the handle, the private ops table, open and free
 *   kube_nodes.c    Node objects and the node cache
 *   kube_watch.c    the watch line framer; the node cache kept current by a
 *                   watch; waiting for node changes
 *   kube_objects.c  MachineConfig, MachineConfigPool, MachineConfiguration
 *                   (compare-and-swap merge patches)
 *   kube_lease.c    leader election on a Lease and the write fence
 *   kube_drain.c    evicting a node's pods
 *   kube_events.c   core/v1 Events about nodes and pools
 *   kube_requests.c an operator's pool pause and sync requests (annotations)
 *
 * Everything the API server sends is untrusted: sizes are bounded, bodies
 * must be JSON objects, and text shown to the user is cut to one printable
 * line. Secrets (client key, bearer token) live only in memory, are handed
 * to libcurl without copies and are wiped when freed.
 */
#ifndef MCG_KUBE_INT_H
#define MCG_KUBE_INT_H

#include "cluster/cluster_int.h"

#include <signal.h>

/* API group and version of mcgit's custom resources (deploy/crds). */
#define MCG_KUBE_GROUP "machineconfiguration.mcgit.io"
#define MCG_KUBE_GV MCG_KUBE_GROUP "/v1"
#define MCG_KUBE_CRD_PATH "/apis/" MCG_KUBE_GV
/* Annotation on a published MachineConfig: SHA-256 (hex) of its canonical spec. */
#define MCG_KUBE_ANN_SPEC_HASH MCG_ANN_PREFIX "spec-sha256"
/* Label on published rendered MachineConfigs (list and garbage-collect only those). */
#define MCG_KUBE_LABEL_RENDERED MCG_ANN_PREFIX "rendered"

/* Where the in-cluster service account's files are. */
#define MCG_KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* Size limits for what is read: config files, one object, one list page. */
#define MCG_KUBE_MAX_FILE (1u << 20)
#define MCG_KUBE_MAX_OBJECT (8u << 20)
#define MCG_KUBE_MAX_LIST (64u << 20)

/* ------------------------------------------------------------ config */

/*
 * Where the API server is and how to authenticate. PEM bytes are held in
 * memory (never written to files). *_file fields name files still to be
 * read by mcg_kube_config_load(); a *_file and the matching bytes are never
 * both set. Wiped and freed by mcg_kube_config_free().
 */
typedef struct mcg_kube_config {
    char *source;          /* "kubeconfig PATH" or "in-cluster service account", for messages */
    char *server;          /* "https://host:port" (no trailing slash) */
    char *tls_server_name; /* optional SNI / certificate name override */
    bool insecure;         /* insecure-skip-tls-verify */
    mcg_buf ca;            /* CA bundle PEM; empty: the system's CAs */
    char *ca_file;
    mcg_buf cert; /* client certificate PEM */
    char *cert_file;
    mcg_buf key; /* client key PEM (secret) */
    char *key_file;
    char *token;      /* bearer token (secret), or NULL */
    char *token_file; /* token re-read whenever this file changes */
    char *ns;         /* namespace of the context or service account, or NULL */
} mcg_kube_config;

void mcg_kube_config_free(mcg_kube_config *c);

/*
 * Parse a kubeconfig's bytes (YAML or JSON): the current-context's cluster
 * and user. Relative file names are resolved against dirname(path), as
 * kubectl does. Pure: referenced files are only named, not read. Errors
 * name the file: "kubeconfig PATH: context 'x' not found".
 */
int mcg_kube_config_parse(mcg_kube_config *out, const char *path, const char *data, size_t len,
                          mcg_err *err);

/* Read the files a parsed config names (CA, client cert/key, token). */
int mcg_kube_config_load(mcg_kube_config *c, mcg_err *err);

/* Read, parse and load a kubeconfig file. */
int mcg_kube_config_from_file(mcg_kube_config *out, const char *path, mcg_err *err);

/*
 * The in-cluster configuration: server from KUBERNETES_SERVICE_HOST/PORT
 * (as given in host/port; an IPv6 host is bracketed), token file, CA and
 * namespace from sa_dir. Fails with a message saying what is missing.
 */
int mcg_kube_config_in_cluster(mcg_kube_config *out, const char *sa_dir, const char *host,
                               const char *port, mcg_err *err);

/*
 * Read a whole file (following symlinks: service account files are
 * symlinks that the kubelet swaps on rotation) of at most limit bytes.
 */
int mcg_kube_read_file(const char *path, size_t limit, mcg_buf *out, mcg_err *err);

/* Wipe and free a buffer that held a secret. */
void mcg_kube_buf_wipe(mcg_buf *b);

/* ------------------------------------------------------ pure helpers */

/* How requests are retried. */
typedef struct mcg_kube_backoff {
    unsigned attempts;       /* total tries per request, at least 1 */
    long base_ms;            /* first delay */
    long cap_ms;             /* largest computed delay */
    long retry_after_cap_ms; /* largest delay a Retry-After may ask for */
} mcg_kube_backoff;

#define MCG_KUBE_BACKOFF_DEFAULT                                                                   \
    {                                                                                              \
        5, 200, 5000, 30000                                                                        \
    }

/* Flags of one request. */
enum {
    MCG_KUBE_NO_RETRY_429 = 1, /* a 429 is the answer (Eviction under a PDB), not a rate limit */
    MCG_KUBE_NO_RETRY = 2,     /* one try only */
};

/*
 * Whether a try that ended with HTTP status (0: no response) and libcurl
 * result curl_code is worth repeating: 429 (unless flagged), 500, 502, 503,
 * 504, and transport failures that say nothing about the request (connect,
 * timeout, reset, empty reply).
 */
bool mcg_kube_retryable(long status, int curl_code, unsigned flags);

/*
 * Delay before retry number `retry` (1 = the first retry): exponential from
 * base_ms, capped at cap_ms, with "equal jitter" (half fixed, half random
 * from rnd). A Retry-After of retry_after_s seconds (-1: none) is honoured
 * as a lower bound, capped at retry_after_cap_ms. -1 when the attempts are
 * used up.
 */
long mcg_kube_retry_delay(const mcg_kube_backoff *b, unsigned retry, long retry_after_s,
                          uint32_t rnd);

/* A Retry-After header value (delta-seconds) → seconds, -1 when absent or junk. */
long mcg_kube_parse_retry_after(const char *value);

/*
 * Parse a response body that must be one JSON object (no duplicate keys,
 * at most max bytes). what names the request in messages.
 */
int mcg_kube_parse_object(json_t **out, const char *what, const char *data, size_t len, size_t max,
                          mcg_err *err);

/*
 * One printable line describing a failed response: the Kubernetes Status
 * object's message when the body is one, else a cleaned excerpt of the
 * body, else the HTTP reason phrase. Control characters become spaces and
 * the text is cut at outsz (with "...").
 */
void mcg_kube_error_text(char *out, size_t outsz, long status, const char *body, size_t len);

/* Copy untrusted text into out as one printable line (see above). */
void mcg_kube_clean_line(char *out, size_t outsz, const char *in, size_t len);

/*
 * JSON merge patch (RFC 7386) turning from into to: NULL when equal.
 * Keys of from missing in to become null; arrays and scalars are replaced.
 */
json_t *mcg_kube_merge_diff(const json_t *from, const json_t *to);

/* A copy of v without null-valued object members (recursively). */
json_t *mcg_kube_strip_nulls(const json_t *v);

/*
 * Compare two resourceVersions: <0, 0, >0 when both are decimal (etcd
 * revisions, as every kube-apiserver uses), else 0 when equal and 1
 * otherwise ("treat as newer").
 */
int mcg_kube_rv_cmp(const char *a, const char *b);

/* A line-framed watch stream (one JSON event per line), fed bytes as they come. */
typedef struct mcg_kube_stream {
    mcg_buf line;
    size_t max_line;
    bool gone;     /* an ERROR event with code 410: re-list */
    char err[512]; /* set when the stream carried an ERROR or junk */
} mcg_kube_stream;

/* Called for each event: type ADDED/MODIFIED/DELETED/BOOKMARK and its object. */
typedef void (*mcg_kube_event_fn)(const char *type, json_t *obj, void *arg);

/*
 * Split data into lines and deliver each event. Returns 0, or MCG_EINVAL
 * when a line is not a valid event or is over max_line (s->err says why;
 * the stream is then unusable), or MCG_ENOTFOUND for 410 Gone (s->gone).
 * ERROR events with other codes end the stream with s->err set (MCG_EIO).
 */
int mcg_kube_stream_feed(mcg_kube_stream *s, const char *data, size_t len, mcg_kube_event_fn fn,
                         void *arg);
void mcg_kube_stream_free(mcg_kube_stream *s);

/* Lease record as read from / written to a coordination.k8s.io/v1 Lease spec. */
typedef struct mcg_kube_lease {
    const char *holder; /* "" when released */
    long duration_s;
    int64_t renew_ms; /* renewTime as unix ms, 0 when absent */
} mcg_kube_lease;

typedef enum {
    MCG_LEASE_RENEW,  /* we hold it: renew */
    MCG_LEASE_TAKE,   /* free or expired: acquire */
    MCG_LEASE_FOLLOW, /* someone else holds it and it is live */
} mcg_lease_action;

/*
 * Decide what to do with a lease, as client-go's leader election does:
 * expiry is judged by our own clock from when we last saw the record change
 * (observed_ms), never by the holder's renewTime, so clock skew between
 * replicas cannot make two leaders.
 */
mcg_lease_action mcg_kube_lease_decide(const mcg_kube_lease *l, const char *identity,
                                       int64_t observed_ms, int64_t now_ms);

/* RFC 3339 with microseconds (Lease times: "2026-01-01T00:00:00.000000Z"). */
void mcg_kube_time_micro(int64_t unix_ms, char out[40]);
bool mcg_kube_time_parse_ms(const char *s, int64_t *unix_ms);

/* ------------------------------------------------------------ client */

typedef struct mcg_kube_client mcg_kube_client;

/* A client over cfg (transferred: freed with the client, also on failure). */
int mcg_kube_client_new(mcg_kube_client **out, mcg_kube_config *cfg, mcg_err *err);
void mcg_kube_client_free(mcg_kube_client *kc);
/* Number of HTTP requests and response bytes so far (for benchmarks). */
void mcg_kube_client_stats(const mcg_kube_client *kc, uint64_t *requests, uint64_t *bytes);
/* Where long waits (backoff, drain) look for a stop request; may be NULL. */
void mcg_kube_client_set_stop(mcg_kube_client *kc, volatile sig_atomic_t *stop);
bool mcg_kube_client_stopped(const mcg_kube_client *kc);
/* Sleep ms (in slices, returning early when stopped). */
void mcg_kube_sleep_ms(mcg_kube_client *kc, long ms);
/* Random 32 bits for jitter. */
uint32_t mcg_kube_random(mcg_kube_client *kc);

/* One request. path includes the query, every part already escaped. */
typedef struct mcg_kube_req {
    const char *method; /* GET POST PUT PATCH DELETE */
    const char *path;
    const char *content_type; /* for a body; NULL: application/json */
    const json_t *body;       /* NULL: none */
    const char *accept;       /* NULL: application/json */
    size_t max_bytes;         /* 0: MCG_KUBE_MAX_OBJECT */
    unsigned flags;
} mcg_kube_req;

/*
 * Send a request, retrying as the backoff says. On a 2xx answer returns 0
 * with the parsed object in *out (NULL when the body is empty; out may be
 * NULL). Otherwise returns an error whose message is "METHOD PATH: CODE
 * Reason: <the API's Status.message>" and *status holds the HTTP status
 * (0 when there was no answer): 404 gives MCG_ENOTFOUND, 409 MCG_ECONFLICT,
 * 400/422 MCG_EINVAL, anything else MCG_EIO.
 */
int mcg_kube_call(mcg_kube_client *kc, const mcg_kube_req *rq, long *status, json_t **out,
                  mcg_err *err);

/* Shorthand for a body-less request of method on path. */
int mcg_kube_simple(mcg_kube_client *kc, const char *method, const char *path, long *status,
                    json_t **out, mcg_err *err);

/* Requests of one batch in flight at once: MCGIT_KUBE_INFLIGHT, 1..MAX. */
#define MCG_KUBE_INFLIGHT_DEFAULT 48
#define MCG_KUBE_INFLIGHT_MAX 64

/* What became of one request of a batch. */
typedef struct mcg_kube_result {
    int rc;      /* 0 (a 2xx answer), or the code mcg_kube_call would return */
    long status; /* HTTP status, 0 when there was no answer (or it was never sent) */
    json_t *obj; /* the parsed 2xx body, NULL when empty (the caller decrefs) */
    mcg_err err; /* why, when rc != 0 */
} mcg_kube_result;

/*
 * Asked just before request i of a batch is sent (and before each retry of
 * it): 0 lets it go; anything else keeps it from being sent and becomes its
 * result (with err set). The kube backend's write fence.
 */
typedef int (*mcg_kube_gate_fn)(size_t i, void *arg, mcg_err *err);

/*
 * Send n requests concurrently, at most the client's in-flight bound
 * (MCGIT_KUBE_INFLIGHT, default 16) at a time, over one connection pool kept
 * between batches (HTTP/2 streams on one connection where the server
 * offers it, else keep-alive HTTP/1.1 connections). Requests are started in
 * index order; each one's outcome goes to res[i] (initialised here), and
 * one failure never stops or hides the others. A try that mcg_kube_call
 * would repeat (429 unless flagged, 5xx, transport failures, a 401 after a
 * token rotation) is repeated after the batch, one at a time through
 * mcg_kube_call with its backoff, the gate asked again first. Answers are
 * judged and messages written exactly as mcg_kube_call does.
 */
void mcg_kube_call_many(mcg_kube_client *kc, const mcg_kube_req *rqs, size_t n,
                        mcg_kube_gate_fn gate, void *arg, mcg_kube_result *res);
/* Free what res[0..n) holds. */
void mcg_kube_results_clear(mcg_kube_result *res, size_t n);

/*
 * List a collection page by page (limit/continue), calling fn for every
 * item. path may hold a query already. A continue token that expired (410)
 * restarts the list once from the beginning (fn must tolerate that: reset
 * is called first). *rv receives the list's resourceVersion (caller frees).
 */
typedef int (*mcg_kube_item_fn)(json_t *item, void *arg, mcg_err *err);
typedef void (*mcg_kube_reset_fn)(void *arg);
int mcg_kube_list(mcg_kube_client *kc, const char *path, const char *accept, mcg_kube_item_fn fn,
                  mcg_kube_reset_fn reset, void *arg, char **rv, mcg_err *err);

/* URL-escape one path segment or query value (caller frees). */
char *mcg_kube_escape(const char *s);

/* A watch: a long-lived GET ...?watch=1 on its own connection. */
typedef struct mcg_kube_watch mcg_kube_watch;

/*
 * Start watching path (a collection, possibly with a selector in its query)
 * from resourceVersion rv, with bookmarks. Events go to fn.
 */
int mcg_kube_watch_start(mcg_kube_watch **out, mcg_kube_client *kc, const char *path,
                         const char *rv, mcg_kube_event_fn fn, void *arg, mcg_err *err);

/*
 * Wait up to timeout_ms for the stream and deliver what arrived. Returns 0
 * while the stream is open; 1 when it ended cleanly (the server's timeout:
 * restart from the last resourceVersion); MCG_ENOTFOUND on 410 Gone
 * (re-list); another error when it broke.
 */
int mcg_kube_watch_poll(mcg_kube_watch *w, long timeout_ms, mcg_err *err);
void mcg_kube_watch_free(mcg_kube_watch *w);

/* ----------------------------------------------------------- backend */

/*
 * Requests sent and response bytes received by a kube cluster's client so
 * far (watch bytes included); false when c is not a kube cluster. For the
 * tests and the benchmark: requests per controller pass.
 */
bool mcg_cluster_kube_stats(mcg_cluster *c, uint64_t *requests, uint64_t *bytes);

/* Where the backend's objects live, and how it writes them. */
#define MCG_KUBE_NODES_PATH "/api/v1/nodes"
#define MCG_KUBE_MC_PATH MCG_KUBE_CRD_PATH "/machineconfigs"
#define MCG_KUBE_MCP_PATH MCG_KUBE_CRD_PATH "/machineconfigpools"
#define MCG_KUBE_MCFG_PATH MCG_KUBE_CRD_PATH "/machineconfigurations/cluster"
#define MCG_KUBE_LEASE_NAME "mcgit-controller"
#define MCG_KUBE_MERGE_PATCH "application/merge-patch+json"
#define MCG_KUBE_STRATEGIC_PATCH "application/strategic-merge-patch+json"
/* Compare-and-swap tries before a write that keeps losing races gives up. */
#define MCG_KUBE_CAS_TRIES 8

/* A cached node and the resourceVersion it was seen at. */
typedef struct mcg_kube_node_ent {
    mcg_node n;
    char *rv;
} mcg_kube_node_ent;

/* The kube backend's handle (base first: a mcg_cluster * points at it). */
typedef struct mcg_kube {
    mcg_cluster base;
    mcg_kube_client *kc;
    char *ns; /* namespace of the Lease */
    long lease_duration_s;
    long drain_timeout_ms;

    /* node cache, sorted by name (kube_nodes.c, kept current by kube_watch.c) */
    mcg_kube_node_ent *nodes;
    size_t nnodes, capnodes;
    char *nodes_rv;        /* resourceVersion the cache is complete at (when synced) */
    char *scope;           /* NULL: every node is cached/watched; else that node only */
    bool synced;           /* the cache holds every node in scope, as of nodes_rv */
    mcg_kube_watch *w;     /* watch from nodes_rv, NULL when none */
    int64_t watch_started; /* when w was started (monotonic ms) */
    bool changed;          /* a change that matters arrived since the last wait */

    mcg_strv published; /* rendered configs known to exist */
    mcg_strv owned;     /* rendered configs known to be whole: spec, owner, version */
    json_t *pools;      /* last seen MachineConfigPool objects by name */

    /* leader election (kube_lease.c) */
    char *identity; /* lease holder identity while we may hold it */
    char *obs_rv;   /* last observed Lease resourceVersion */
    int64_t obs_ms; /* when (monotonic) it was observed to change */
    bool leader;
    int64_t lead_ok_ms; /* when (monotonic) the last successful take/renew was sent */

    char *eviction_gv; /* "policy/v1" or "policy/v1beta1", once discovered (kube_drain.c) */
} mcg_kube;

/* kube_backend.c: the handle of c, its client told where to look for a stop. */
mcg_kube *mcg_kube_of(mcg_cluster *c);
int64_t mcg_kube_wall_ms(void);
/* o.a (b NULL) or o.a.b when a string, else NULL. */
const char *mcg_kube_str_at(const json_t *o, const char *a, const char *b);
/* metadata.resourceVersion, or NULL. */
const char *mcg_kube_obj_rv(const json_t *o);
/* Both NULL or equal strings. */
bool mcg_kube_str_eq(const char *a, const char *b);

/* kube_nodes.c: the node cache. */
bool mcg_kube_node_differs(const mcg_node *a, const mcg_node *b);
void mcg_kube_cache_clear(mcg_kube *k);
bool mcg_kube_cache_del(mcg_kube *k, const char *name);
/* Cache a Node object as the API returned it; returns whether it changed. */
bool mcg_kube_cache_obj(mcg_kube *k, const json_t *o);
/* List path's nodes sorted by name (free with mcg_kube_node_ents_free);
 * *rv (if rv) gets the list's resourceVersion. */
int mcg_kube_list_node_ents(mcg_kube *k, const char *path, mcg_kube_node_ent **v, size_t *n,
                            size_t *cap, char **rv, mcg_err *err);

/* kube_watch.c: keeping the cache current. */
void mcg_kube_drop_watch(mcg_kube *k);
/* Deliver what the watch has, without waiting; whether the cache is
 * complete and current (else read from the API). */
bool mcg_kube_pump(mcg_kube *k);
/* Re-list the scope into the cache (synced, no watch yet). */
int mcg_kube_sync_nodes(mcg_kube *k, mcg_err *err);

/* kube_lease.c: give the Lease up on a clean shutdown. */
void mcg_kube_lease_release(mcg_kube *k);

/* The ops (see cluster_int.h for what the wrappers guarantee them). */
int mcg_kube_op_list_nodes(mcg_cluster *c, mcg_node **out, size_t *n, mcg_err *err);
int mcg_kube_op_get_node(mcg_cluster *c, const char *name, mcg_node *out, mcg_err *err);
int mcg_kube_op_patch_node(mcg_cluster *c, const char *name, const mcg_node_patch *p, mcg_err *err);
/* A wave of node patches, concurrent and each write fenced (kube_nodes.c). */
int mcg_kube_op_patch_nodes(mcg_cluster *c, const char *const *names, const mcg_node_patch *patches,
                            size_t n, int *rcs, mcg_err *err);
int mcg_kube_op_add_node(mcg_cluster *c, const char *name, const mcg_labels *labels, int64_t now,
                         mcg_err *err);
int mcg_kube_op_remove_node(mcg_cluster *c, const char *name, mcg_err *err);
int mcg_kube_op_label_node(mcg_cluster *c, const char *name, const char *edits, mcg_err *err);
int mcg_kube_op_put_config(mcg_cluster *c, const char *name, const char *spec, size_t len,
                           mcg_err *err);
int mcg_kube_op_get_config(mcg_cluster *c, const char *name, char **spec, size_t *len,
                           mcg_err *err);
int mcg_kube_op_list_configs(mcg_cluster *c, mcg_strv *names, mcg_err *err);
int mcg_kube_op_delete_config(mcg_cluster *c, const char *name, mcg_err *err);
int mcg_kube_op_put_pool(mcg_cluster *c, const char *name, const json_t *obj, mcg_err *err);
int mcg_kube_op_list_pools(mcg_cluster *c, json_t **items, mcg_err *err);
int mcg_kube_op_delete_pool(mcg_cluster *c, const char *name, mcg_err *err);
int mcg_kube_op_put_policy(mcg_cluster *c, const json_t *spec, mcg_err *err);
int mcg_kube_op_get_policy(mcg_cluster *c, json_t **spec, mcg_err *err);
int mcg_kube_op_drain(mcg_cluster *c, const char *name, mcg_err *err);
/*
 * Once a caller takes part in leader election (has called lead), it may
 * write only while its Lease is surely still its own: renewed, by our own
 * clock, less than a lease duration ago (minus a margin for requests in
 * flight). Another replica waits a whole duration after it last saw the
 * Lease change before taking it, so the two never write at the same time.
 */
int mcg_kube_op_fence(mcg_cluster *c, mcg_err *err);
int mcg_kube_op_lead(mcg_cluster *c, const char *identity, bool *leader, mcg_err *err);
int mcg_kube_op_wait_change(mcg_cluster *c, const char *node, long timeout_ms, mcg_err *err);
int mcg_kube_op_event(mcg_cluster *c, const mcg_event *ev, mcg_err *err);

/* kube_events.c, pure: the core/v1 Event object for ev about the object
 * whose uid is uid (NULL: unknown), in namespace ns, named name, at
 * unix time now, reported from host. */
json_t *mcg_kube_event_object(const mcg_event *ev, const char *uid, const char *ns,
                              const char *name, const char *host, int64_t now);

/* kube_requests.c: an operator's pause of a pool and sync requests. */
int mcg_kube_op_annotate_pool(mcg_cluster *c, const char *pool, const char *key, const char *value,
                              mcg_err *err);
int mcg_kube_op_pause_pool(mcg_cluster *c, const char *pool, bool pause, bool *changed,
                           bool *git_paused, mcg_err *err);
int mcg_kube_op_get_sync(mcg_cluster *c, mcg_sync_state *out, mcg_err *err);
int mcg_kube_op_request_sync(mcg_cluster *c, uint64_t *gen, mcg_err *err);
int mcg_kube_op_answer_sync(mcg_cluster *c, uint64_t gen, bool failed, const char *result,
                            mcg_err *err);

#endif
