/*
 * fuzz_kubeapi.c — Kubernetes API responses on untrusted bytes, as the kube
 * backend reads them from the API server (or anything posing as one):
 * a response body as one JSON object (mcg_kube_parse_object) read as a
 * Node (mcg_node_from_json) and turned back into JSON; an error body
 * turned into one printable line (mcg_kube_error_text); and a watch stream
 * (mcg_kube_stream_feed), fed in the chunks the first byte decides.
 *
 * The error line must be one line of printable text within its buffer; a
 * node that parses has a name; a JSON merge patch from an object to itself
 * is empty.
 *
 * fuzz-sources: src/cluster/[a-z]*.c src/model/[a-z]*.c src/util/[a-z]*.c
 * fuzz-sources: src/fsio/[a-z]*.c src/osenv/[a-z]*.c
 * fuzz-pkgs: libcurl yaml-0.1 jansson zlib libcrypto libsodium
 * fuzz-options: -max_len=262144
 */
#include "cluster/kube_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void on_event(const char *type, json_t *obj, void *arg)
{
    size_t *n = arg;
    if (!type || !obj)
        abort();
    mcg_node node;
    if (mcg_node_from_json(&node, obj, NULL) == 0) {
        if (!node.name)
            abort();
        mcg_node_clear(&node);
    }
    (*n)++;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t chunk = (size_t)data[0] + 1;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;

    json_t *o = NULL;
    mcg_err err = {0};
    if (mcg_kube_parse_object(&o, "GET /api/v1/nodes/x", body, len, 1u << 20, &err) == 0) {
        mcg_node n;
        if (mcg_node_from_json(&n, o, &err) == 0) {
            if (!n.name)
                abort();
            json_t *back = mcg_node_to_json(&n);
            json_decref(back);
            mcg_node_clear(&n);
        }
        json_t *same = mcg_kube_merge_diff(o, o);
        if (same)
            abort();
        json_t *clean = mcg_kube_strip_nulls(o);
        json_decref(clean);
        json_decref(o);
    } else if (o || !err.msg[0]) {
        abort();
    }

    char line[256];
    memset(line, 'Z', sizeof(line));
    mcg_kube_error_text(line, sizeof(line), 409, body, len);
    size_t l = strnlen(line, sizeof(line));
    if (l >= sizeof(line))
        abort();
    for (size_t i = 0; i < l; i++)
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
            abort();

    mcg_kube_stream s;
    memset(&s, 0, sizeof(s));
    s.max_line = 1u << 16;
    size_t events = 0;
    for (size_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        if (mcg_kube_stream_feed(&s, body + off, n, on_event, &events) != 0)
            break;
    }
    mcg_kube_stream_free(&s);
    return 0;
}
