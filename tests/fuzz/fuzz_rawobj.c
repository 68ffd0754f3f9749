/*
 * fuzz_rawobj.c — the raw git object parsers of pack/ on untrusted bytes:
 * commit links, tag target, tree entries, and delta application.
 *
 * The first input byte picks the parser (mod 4), the rest is the object.
 * For a delta, the two bytes after the selector give the base's length
 * (taken from the input after them), the remainder is the delta. Each
 * result is checked against the parser's contract: entries lie inside the
 * tree and advance, a delta's output has the size it announced and at most
 * the limit.
 *
 * fuzz-sources: src/pack/rawobj.c src/pack/delta.c src/util/util.c
 * fuzz-pkgs: libgit2 jansson libsodium
 * fuzz-options: -max_len=65536
 */
#include "pack/pack.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* Count parents, checking each is a whole id. */
static void on_parent(const git_oid *id, void *ctx)
{
    (void)id;
    (*(size_t *)ctx)++;
}

static void commit(const unsigned char *p, size_t n)
{
    git_oid tree;
    size_t parents = 0;
    if (mcg_pack_commit_links(&tree, on_parent, &parents, (const char *)p, n) &&
        (n < 46 || parents > (n - 46) / 48))
        abort(); /* more parents than there is room for */
}

static void tag(const unsigned char *p, size_t n)
{
    git_oid id;
    if (mcg_pack_tag_target(&id, (const char *)p, n) && n < 48)
        abort();
}

static void tree(const unsigned char *p, size_t n)
{
    const unsigned char *end = p + n;
    mcg_pack_tree_entry e;
    while (p < end) {
        const unsigned char *before = p;
        if (!mcg_pack_tree_entry_next(&e, &p, end))
            break;
        if (p <= before || p > end || !e.namelen || e.name <= before || e.name + e.namelen >= p ||
            memchr(e.name, '\0', e.namelen))
            abort();
    }
}

static void delta(const unsigned char *p, size_t n)
{
    if (n < 2)
        return;
    size_t blen = ((size_t)p[0] << 8 | p[1]) % (n - 1);
    const unsigned char *base = p + 2, *d = base + blen;
    size_t dlen = n - 2 - blen, out_len = 0;
    /* the base in its own exact-size allocation, so that ASan sees a read past it */
    unsigned char *b = malloc(blen ? blen : 1);
    if (!b)
        return;
    memcpy(b, base, blen);
    unsigned char *out = mcg_pack_delta_apply(&out_len, b, blen, d, dlen, 1u << 20);
    if (out && out_len > (1u << 20))
        abort();
    free(out);
    free(b);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (!size)
        return 0;
    /* the object in its own exact-size allocation */
    size_t n = size - 1;
    unsigned char *p = malloc(n ? n : 1);
    if (!p)
        return 0;
    memcpy(p, data + 1, n);
    switch (data[0] % 4) {
    case 0:
        commit(p, n);
        break;
    case 1:
        tag(p, n);
        break;
    case 2:
        tree(p, n);
        break;
    default:
        delta(p, n);
        break;
    }
    free(p);
    return 0;
}
