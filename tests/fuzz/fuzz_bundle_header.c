/*
 * fuzz_bundle_header.c — the bundle header parser (bundle/format.c) on
 * untrusted bytes, as mcgit bundle verify/import reads a file before any
 * trust check.
 *
 * A header that parses must hold what the parser promises — a version of 2
 * or 3, at least one ref, no ref named twice, no more lines than the limit,
 * the reader left just after the blank line — and, written again with the
 * header writer, must parse to the same prerequisites and refs.
 *
 * fuzz-sources: src/bundle/format.c src/pack/oids.c src/pack/rawobj.c src/util/util.c
 * fuzz-pkgs: libgit2 jansson libsodium
 * fuzz-options: -max_len=1048576
 */
#include "bundle/bundle_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* By name, for the duplicate check. */
static int by_name(const void *a, const void *b)
{
    return strcmp(((const mcg_bundle_hdr_ref *)a)->name, ((const mcg_bundle_hdr_ref *)b)->name);
}

/* Write h out and parse it back: the same prerequisites and refs. */
static void roundtrip(const mcg_bundle_hdr *h)
{
    mcg_buf b = MCG_BUF_INIT;
    mcg_bundle_hdr again = {0};
    mcg_bundle_reader rd;
    mcg_err err = {0};
    mcg_bundle_hdr_put_start(&b);
    for (size_t i = 0; i < h->prereqs.n; i++)
        mcg_bundle_hdr_put_prereq(&b, &h->prereqs.v[i], "x");
    for (size_t i = 0; i < h->nrefs; i++)
        mcg_bundle_hdr_put_ref(&b, &h->refs[i].oid, h->refs[i].name);
    mcg_bundle_hdr_put_end(&b);
    mcg_bundle_reader_mem(&rd, "again", b.ptr, b.len);
    if (mcg_bundle_hdr_parse(&again, &rd, &err) != 0 || again.nrefs != h->nrefs ||
        again.prereqs.n != h->prereqs.n || rd.pos != rd.len)
        abort();
    for (size_t i = 0; i < h->nrefs; i++)
        if (strcmp(again.refs[i].name, h->refs[i].name) ||
            !git_oid_equal(&again.refs[i].oid, &h->refs[i].oid))
            abort();
    mcg_bundle_hdr_free(&again);
    mcg_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static bool init;
    if (!init) {
        git_libgit2_init();
        init = true;
    }
    mcg_bundle_hdr h = {0};
    mcg_bundle_reader rd;
    mcg_err err = {0};
    mcg_bundle_reader_mem(&rd, "fuzz", data, size);
    if (mcg_bundle_hdr_parse(&h, &rd, &err) == 0) {
        if ((h.version != 2 && h.version != 3) || !h.nrefs ||
            h.nrefs + h.prereqs.n > MCG_BUNDLE_MAX_REFS || rd.pos > rd.len)
            abort();
        mcg_bundle_hdr_ref *sorted = malloc(h.nrefs * sizeof(*sorted));
        if (!sorted)
            abort();
        memcpy(sorted, h.refs, h.nrefs * sizeof(*sorted));
        qsort(sorted, h.nrefs, sizeof(*sorted), by_name);
        for (size_t i = 1; i < h.nrefs; i++)
            if (!strcmp(sorted[i - 1].name, sorted[i].name))
                abort(); /* a duplicate got through */
        free(sorted);
        roundtrip(&h);
    } else if (!err.msg[0] || strchr(err.msg, '\n')) {
        abort(); /* a refusal is one line */
    }
    mcg_bundle_hdr_free(&h);
    return 0;
}
