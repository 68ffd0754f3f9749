/*
 * fuzz_packgraph.c — the delta graph check (pack/graph.c) on untrusted pack
 * bytes, as a fetch or a bundle import runs it before libgit2's indexer:
 * the input is the pack, fed in chunks whose sizes come from its own
 * bytes, checked against an empty object database (every REF_DELTA base
 * outside the pack is missing) under small limits. Whatever the input, the
 * check must end (libFuzzer's -timeout catches a loop) and either refuse
 * in one line or accept a pack whose every object resolved once.
 *
 * fuzz-sources: src/pack/graph.c src/pack/oids.c src/pack/delta.c
 * fuzz-sources: src/util/util.c src/util/codec.c src/trust/[a-z]*.c
 * fuzz-pkgs: libgit2 jansson libsodium libcrypto zlib
 * fuzz-options: -max_len=262144
 */
#include "pack/pack_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static git_odb *empty;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static const mcg_pack_limits lim = {
        .max_object = 1024 * 1024, .ratio = 64, .floor = 4 * 1024 * 1024, .max_depth = 64};
    mcg_pack_graph *g = NULL;
    mcg_err err = {0};
    if (!empty) {
        git_libgit2_init();
        if (git_odb_new(&empty) != 0)
            abort();
    }
    const char *dir = getenv("TMPDIR");
    if (mcg_pack_graph_new(&g, dir && *dir ? dir : "/tmp", &err) != 0)
        abort();
    size_t off = 0, k = 0;
    while (off < size) {
        size_t step = 1 + (size_t)data[k++ % size] * 37;
        if (step > size - off)
            step = size - off;
        mcg_pack_graph_feed(g, data + off, step);
        off += step;
    }
    int rc = mcg_pack_graph_check(g, empty, &lim, "the pack", NULL, &err);
    if (rc != 0 && (!err.msg[0] || strchr(err.msg, '\n')))
        abort(); /* a refusal is one line */
    mcg_pack_graph_free(g);
    return 0;
}
