/*
 * rawobj.c — the links of raw git objects: what a commit, a tag or a tree
 * names, read straight from the bytes of an untrusted pack without
 * libgit2's object parser (which would allocate a parsed object for each).
 * Only the parts git writes first and in a fixed form are read: a commit's
 * "tree" and "parent" lines, a tag's "object" line, a tree's entries. Every
 * read is bounded by the object's length.
 */
#include "pack/pack.h"

#include <string.h>

bool mcg_pack_parse_oid(git_oid *out, const char *s)
{
    for (int i = 0; i < GIT_OID_HEXSZ; i++)
        if (!s[i] || !strchr("0123456789abcdefABCDEF", s[i]))
            return false;
    return git_oid_fromstrn(out, s, GIT_OID_HEXSZ) == 0;
}

bool mcg_pack_commit_links(git_oid *tree, void (*parent)(const git_oid *, void *), void *ctx,
                           const char *p, size_t len)
{
    const char *end = p + len;
    if (len < 6 + GIT_OID_HEXSZ || memcmp(p, "tree ", 5) != 0 || p[5 + GIT_OID_HEXSZ] != '\n' ||
        !mcg_pack_parse_oid(tree, p + 5))
        return false;
    p += 6 + GIT_OID_HEXSZ;
    while (end - p >= 8 + GIT_OID_HEXSZ && !memcmp(p, "parent ", 7)) {
        git_oid id;
        if (p[7 + GIT_OID_HEXSZ] != '\n' || !mcg_pack_parse_oid(&id, p + 7))
            return false;
        if (parent)
            parent(&id, ctx);
        p += 8 + GIT_OID_HEXSZ;
    }
    return true;
}

bool mcg_pack_tag_target(git_oid *out, const char *p, size_t len)
{
    return len >= 8 + GIT_OID_HEXSZ && memcmp(p, "object ", 7) == 0 &&
           p[7 + GIT_OID_HEXSZ] == '\n' && mcg_pack_parse_oid(out, p + 7);
}

bool mcg_pack_tree_entry_next(mcg_pack_tree_entry *e, const unsigned char **pp,
                              const unsigned char *end)
{
    const unsigned char *p = *pp, *q = p;
    e->mode = 0;
    while (q < end && *q >= '0' && *q <= '7' && q - p < 7)
        e->mode = e->mode * 8 + (unsigned)(*q++ - '0');
    if (q == p || q >= end || *q != ' ')
        return false;
    const unsigned char *nul = memchr(q + 1, '\0', (size_t)(end - q - 1));
    if (!nul || nul == q + 1 || end - nul - 1 < GIT_OID_RAWSZ)
        return false;
    e->name = q + 1;
    e->namelen = (size_t)(nul - e->name);
    git_oid_fromraw(&e->id, nul + 1);
    *pp = nul + 1 + GIT_OID_RAWSZ;
    return true;
}
