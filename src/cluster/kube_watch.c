/*
 * kube_watch.c — watching Nodes: the line framer of a watch stream (pure,
 * fed bytes as they come) and the node cache kept current by a watch.
 *
 * The cache is rebuilt from a fresh list when the watch reports 410 Gone or
 * breaks; a stream the server ends cleanly resumes from the last
 * resourceVersion seen. wait_change blocks on the watch (kube_http.c holds
 * its connection) and says whether anything mcgit reads changed.
 */
#include "cluster/kube_int.h"
#include "fsio/fsio.h"
#include "osenv/osenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int stream_line(mcg_kube_stream *s, const char *line, size_t len, mcg_kube_event_fn fn,
                       void *arg)
{
    while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
        len--;
    if (!len)
        return 0;
    json_error_t je;
    json_t *ev = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    json_t *t = json_object_get(ev, "type"), *o = json_object_get(ev, "object");
    int rc = 0;
    if (!json_is_object(ev) || !json_is_string(t) || !json_is_object(o)) {
        snprintf(s->err, sizeof(s->err), "watch: malformed event%s%s", ev ? "" : ": ",
                 ev ? "" : je.text);
        rc = MCG_EINVAL;
    } else if (!strcmp(json_string_value(t), "ERROR")) {
        json_t *code = json_object_get(o, "code");
        char msg[400];
        json_t *m = json_object_get(o, "message");
        mcg_kube_clean_line(msg, sizeof(msg), json_is_string(m) ? json_string_value(m) : "",
                            json_is_string(m) ? json_string_length(m) : 0);
        if (json_is_integer(code) && json_integer_value(code) == 410) {
            s->gone = true;
            snprintf(s->err, sizeof(s->err), "watch: 410 Gone: %s", msg);
            rc = MCG_ENOTFOUND;
        } else {
            snprintf(s->err, sizeof(s->err), "watch: error %lld: %s",
                     json_is_integer(code) ? (long long)json_integer_value(code) : 0LL, msg);
            rc = MCG_EIO;
        }
    } else {
        const char *ty = json_string_value(t);
        if (strcmp(ty, "ADDED") && strcmp(ty, "MODIFIED") && strcmp(ty, "DELETED") &&
            strcmp(ty, "BOOKMARK")) {
            snprintf(s->err, sizeof(s->err), "watch: unknown event type");
            rc = MCG_EINVAL;
        } else {
            fn(ty, o, arg);
        }
    }
    json_decref(ev);
    return rc;
}

int mcg_kube_stream_feed(mcg_kube_stream *s, const char *data, size_t len, mcg_kube_event_fn fn,
                         void *arg)
{
    if (s->err[0])
        return s->gone ? MCG_ENOTFOUND : MCG_EINVAL;
    while (len) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        if (s->line.len + take > s->max_line) {
            snprintf(s->err, sizeof(s->err), "watch: event larger than %zu bytes", s->max_line);
            return MCG_EINVAL;
        }
        mcg_buf_put(&s->line, data, take);
        data += take;
        len -= take;
        if (!nl)
            break;
        data++;
        len--;
        int rc = stream_line(s, s->line.ptr, s->line.len, fn, arg);
        s->line.len = 0;
        if (rc)
            return rc;
    }
    return 0;
}

void mcg_kube_stream_free(mcg_kube_stream *s)
{
    mcg_buf_free(&s->line);
}

void mcg_kube_drop_watch(mcg_kube *k)
{
    mcg_kube_watch_free(k->w);
    k->w = NULL;
}

/* Forget the watch and mark the cache incomplete. */
static void mcg_kube_unsync(mcg_kube *k)
{
    mcg_kube_drop_watch(k);
    k->synced = false;
}

static void on_node_event(const char *type, json_t *obj, void *arg)
{
    mcg_kube *k = arg;
    const char *rv = mcg_kube_obj_rv(obj);
    if (!strcmp(type, "BOOKMARK")) {
        /* nothing changed; the watch may resume from here */
    } else if (!strcmp(type, "DELETED")) {
        const char *name = mcg_kube_str_at(obj, "metadata", "name");
        if (name && mcg_kube_cache_del(k, name))
            k->changed = true;
    } else if (mcg_kube_cache_obj(k, obj)) {
        k->changed = true;
    }
    if (rv) {
        free(k->nodes_rv);
        k->nodes_rv = mcg_strdup(rv);
    }
}

/* The watch/list path of the node scope: every node, or one by name. */
static char *mcg_kube_scope_path(const mcg_kube *k)
{
    if (!k->scope)
        return mcg_strdup(MCG_KUBE_NODES_PATH);
    char *sel = mcg_sprintf("metadata.name=%s", k->scope);
    char *esc = mcg_kube_escape(sel);
    char *p = mcg_sprintf(MCG_KUBE_NODES_PATH "?fieldSelector=%s", esc);
    free(esc);
    free(sel);
    return p;
}

/*
 * Let the watch deliver whatever has arrived, without waiting. Returns
 * whether the cache is still complete and current (else the caller reads
 * from the API).
 */
bool mcg_kube_pump(mcg_kube *k)
{
    if (!k->synced || !k->w)
        return false;
    mcg_err e = {0};
    int r = mcg_kube_watch_poll(k->w, 0, &e);
    if (r == 0)
        return true;
    if (r == 1) {
        /* the stream ended: resume from the last event seen, the cache stays as good */
        mcg_kube_drop_watch(k);
        char *path = mcg_kube_scope_path(k);
        int r2 = mcg_kube_watch_start(&k->w, k->kc, path, k->nodes_rv, on_node_event, k, &e);
        free(path);
        if (r2 == 0) {
            k->watch_started = mcg_mono_ms();
            return true;
        }
    }
    mcg_kube_unsync(k);
    return false;
}

/*
 * List the nodes of the current scope and make the cache exactly that
 * (synced at the list's resourceVersion, no watch yet). Sets k->changed
 * when the list differs from what the cache held.
 */
int mcg_kube_sync_nodes(mcg_kube *k, mcg_err *err)
{
    mcg_kube_unsync(k);
    mcg_kube_node_ent *v = NULL;
    size_t n = 0, cap = 0;
    char *rv = NULL;
    char *path = mcg_kube_scope_path(k);
    int rc = mcg_kube_list_node_ents(k, path, &v, &n, &cap, &rv, err);
    free(path);
    if (rc)
        return rc;
    bool changed = n != k->nnodes;
    for (size_t i = 0; i < n && !changed; i++)
        changed = strcmp(v[i].n.name, k->nodes[i].n.name) != 0 ||
                  mcg_kube_node_differs(&v[i].n, &k->nodes[i].n);
    mcg_kube_cache_clear(k);
    free(k->nodes);
    k->nodes = v;
    k->nnodes = n;
    k->capnodes = cap;
    free(k->nodes_rv);
    k->nodes_rv = rv;
    k->synced = true;
    if (changed)
        k->changed = true;
    return 0;
}

int mcg_kube_op_wait_change(mcg_cluster *c, const char *node, long timeout_ms, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    if (!mcg_kube_str_eq(node, k->scope)) {
        mcg_kube_unsync(k);
        free(k->scope);
        k->scope = node ? mcg_strdup(node) : NULL;
    }
    int64_t deadline = mcg_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    int rc = 0;
    for (;;) {
        if (mcg_kube_client_stopped(k->kc))
            return 0;
        mcg_err e = {0};
        int r = 0;
        if (!k->synced)
            r = mcg_kube_sync_nodes(k, &e);
        if (!r && !k->w) {
            /* a stream that keeps ending at once is not restarted in a tight loop */
            int64_t since = mcg_mono_ms() - k->watch_started;
            if (since < 1000)
                mcg_kube_sleep_ms(k->kc, 1000 - since);
            char *path = mcg_kube_scope_path(k);
            r = mcg_kube_watch_start(&k->w, k->kc, path, k->nodes_rv, on_node_event, k, &e);
            free(path);
            k->watch_started = mcg_mono_ms();
        }
        if (!r && !k->changed) {
            int64_t left = deadline - mcg_mono_ms();
            r = mcg_kube_watch_poll(k->w, left > 0 ? left : 0, &e);
            if (r == 1) {
                mcg_kube_drop_watch(k); /* server timeout: resume from nodes_rv */
                r = 0;
            } else if (r == MCG_ENOTFOUND) {
                mcg_kube_unsync(k); /* 410 Gone: re-list (a difference counts as a change) */
                r = 0;
            }
        }
        if (k->changed) {
            k->changed = false;
            return 1;
        }
        int64_t left = deadline - mcg_mono_ms();
        if (r) {
            /* cannot watch now: say so, but only after waiting, so callers never spin */
            mcg_kube_unsync(k);
            rc = mcg_err_set(err, r, "%s", e.msg);
            mcg_kube_sleep_ms(k->kc, left > 1000 ? 1000 : left > 0 ? left : 0);
            if (mcg_mono_ms() >= deadline)
                return rc;
            continue;
        }
        if (left <= 0)
            return 0;
    }
}
