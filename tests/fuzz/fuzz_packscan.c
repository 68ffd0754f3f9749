/*
 * fuzz_packscan.c — the pack scan (pack/scan*.c) on untrusted pack bytes,
 * as bundle import feeds it while libgit2 indexes the same bytes.
 *
 * The input is the pack, handed over in chunks whose sizes come from the
 * input's own bytes (so chunk boundaries fall anywhere). Then every
 * question the import asks of the result is asked: the memo, confirmation
 * against an indexer that "wrote" every id the scan found (an empty object
 * database for REF_DELTA bases), connectivity, the signer-file hints of
 * every tree it read, and the commits served by its object database
 * backend, which must come back byte for byte with the id they hash to.
 *
 * fuzz-sources: src/pack/scan.c src/pack/scan_thread.c src/pack/scan_result.c
 * fuzz-sources: src/pack/scan_odb.c src/pack/oids.c src/pack/rawobj.c src/pack/delta.c
 * fuzz-sources: src/util/util.c src/util/codec.c src/trust/[a-z]*.c
 * fuzz-pkgs: libgit2 jansson libsodium libcrypto zlib
 * fuzz-options: -max_len=262144
 */
#include "pack/pack_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static git_odb *empty;

/* The "indexer" wrote every id: the scan's ids are all confirmed. */
static bool all_in_pack(const git_oid *id, void *ctx)
{
    (void)id;
    (void)ctx;
    return true;
}

/* Nothing is in the pack: every link is missing. */
static bool none_in_pack(const git_oid *id, void *ctx)
{
    (void)id;
    (void)ctx;
    return false;
}

/* Ask what the import asks. */
static void ask(mcg_packscan *s)
{
    (void)mcg_packscan_memo(s);
    (void)mcg_packscan_checked(s);
    mcg_packscan_confirm(s, all_in_pack, NULL, empty);
    const git_oid *by = NULL, *missing = NULL;
    if (mcg_packscan_complete(s)) {
        if (mcg_packscan_connected(s, all_in_pack, NULL, empty, &by, &missing) != 0)
            abort(); /* everything is "in the pack" */
        if (mcg_packscan_connected(s, none_in_pack, NULL, empty, &by, &missing) && !missing)
            abort();
    }
    for (size_t i = 0; i < s->ids.cap; i++) {
        bool present;
        git_oid blob;
        if (s->ids.used[i])
            (void)mcg_packscan_signers(s, &s->ids.keys[i], &present, &blob);
    }
    git_odb_backend *be = NULL;
    if (mcg_packscan_backend(&be, s) != 0 || !be)
        return;
    for (size_t i = 0; i < s->ncommits; i++) {
        void *buf = NULL;
        size_t len = 0;
        git_object_t type;
        git_oid id;
        if (be->read(&buf, &len, &type, be, &s->commits[i].id) != 0 || type != GIT_OBJECT_COMMIT ||
            git_odb_hash(&id, buf, len, GIT_OBJECT_COMMIT) != 0 ||
            !git_oid_equal(&id, &s->commits[i].id))
            abort(); /* a commit served is not the one asked for */
        git_odb_backend_data_free(be, buf);
        if (!be->exists(be, &s->commits[i].id))
            abort();
    }
    be->free(be);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (!empty) {
        git_libgit2_init();
        if (git_odb_new(&empty) != 0)
            abort();
    }
    mcg_pack_scanner *p = mcg_pack_scan_start();
    size_t off = 0, k = 0;
    while (off < size) {
        size_t step = 1 + (size_t)data[k++ % size] * 37;
        if (step > size - off)
            step = size - off;
        mcg_pack_scan_feed(p, data + off, step);
        off += step;
    }
    mcg_packscan *s = mcg_pack_scan_finish(p);
    ask(s);
    mcg_packscan_free(s);
    return 0;
}
