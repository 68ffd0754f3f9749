/*
 * scan_result.c — what a pack scan learnt, and the questions the import's
 * checks ask of it: the signature memo, whether the scan is complete once
 * confirmed against the indexer's ids, connectivity from the links it
 * collected, and the signer-file hints of root trees.
 */
#include "pack/pack_int.h"

#include <stdlib.h>

void mcg_packscan_free(mcg_packscan *s)
{
    if (!s)
        return;
    mcg_sigmemo_free(s->memo);
    mcg_scan_objs_free(s->objs, s->nobjs);
    free(s->commits);
    free(s->hints);
    free(s->refs);
    mcg_oidmap_free(&s->links);
    mcg_oidmap_free(&s->ids);
    free(s);
}

const mcg_sigmemo *mcg_packscan_memo(const mcg_packscan *s)
{
    return s ? s->memo : NULL;
}

size_t mcg_packscan_checked(const mcg_packscan *s)
{
    return s ? s->checked : 0;
}

/*
 * Confirm the scan against the indexer: every id the scan computed is one
 * the indexer wrote (in_pack), and every REF_DELTA the scan could not follow
 * has a blob for its base (so its chain holds only blobs). Otherwise the
 * scan is not used.
 */
void mcg_packscan_confirm(mcg_packscan *s, bool (*in_pack)(const git_oid *, void *), void *ctx,
                          git_odb *odb)
{
    if (!s || !s->complete)
        return;
    for (size_t i = 0; i < s->ids.cap && s->complete; i++)
        if (s->ids.used[i] && !in_pack(&s->ids.keys[i], ctx))
            s->complete = false;
    for (size_t i = 0; i < s->nobjs && s->complete; i++)
        if (s->objs[i].type == MCG_PACK_NONE) {
            size_t len;
            git_object_t t;
            uint32_t r = s->objs[i].ref;
            if (!r || git_odb_read_header(&len, &t, odb, &s->refs[r - 1]) != 0 ||
                t != GIT_OBJECT_BLOB)
                s->complete = false;
        }
    if (!s->complete)
        s->hints_ok = false;
}

bool mcg_packscan_missing_base(const mcg_packscan *s, git_odb *odb, git_oid *out)
{
    for (size_t i = 0; s && i < s->nrefs; i++)
        if (!mcg_oidmap_get(&s->ids, &s->refs[i], NULL) && !git_odb_exists(odb, &s->refs[i])) {
            *out = s->refs[i];
            return true;
        }
    return false;
}

bool mcg_packscan_complete(const mcg_packscan *s)
{
    return s && s->complete;
}

int mcg_packscan_connected(const mcg_packscan *s, bool (*in_pack)(const git_oid *, void *),
                           void *ctx, git_odb *odb, const git_oid **by, const git_oid **missing)
{
    for (size_t i = 0; i < s->links.cap; i++) {
        if (!s->links.used[i])
            continue;
        const git_oid *id = &s->links.keys[i];
        if (in_pack(id, ctx) || git_odb_exists(odb, id))
            continue;
        /* name the object that needs it by its id */
        uint64_t by_obj = s->links.vals[i];
        *missing = id;
        *by = NULL;
        for (size_t j = 0; j < s->ids.cap && !*by; j++)
            if (s->ids.used[j] && s->ids.vals[j] == by_obj)
                *by = &s->ids.keys[j];
        return 1;
    }
    return 0;
}

bool mcg_packscan_signers(const mcg_packscan *s, const git_oid *root, bool *present, git_oid *blob)
{
    if (!s || !s->hints_ok)
        return false;
    mcg_scan_hint key = {.tree = *root};
    const mcg_scan_hint *h =
        !s->nhints ? NULL
                   : bsearch(&key, s->hints, s->nhints, sizeof(*s->hints), mcg_scan_hint_cmp);
    uint64_t dummy;
    if (!h) {
        /* no hint: the tree has neither entry, if the scan read it */
        if (!mcg_oidmap_get(&s->ids, root, &dummy))
            return false;
        *present = false;
        return true;
    }
    if (!h->has_dir) {
        *present = false;
        return true;
    }
    key.tree = h->dir;
    const mcg_scan_hint *d =
        bsearch(&key, s->hints, s->nhints, sizeof(*s->hints), mcg_scan_hint_cmp);
    if (!d) {
        if (!mcg_oidmap_get(&s->ids, &h->dir, &dummy))
            return false; /* .mcgit is not in the pack: ask the repo */
        *present = false;
        return true;
    }
    *present = d->has_file;
    if (d->has_file)
        *blob = d->file;
    return true;
}
