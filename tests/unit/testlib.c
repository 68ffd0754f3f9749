/*
 * testlib.c — shared helpers of the unit tests (see testlib.h).
 */
#define _XOPEN_SOURCE 700
#include "testlib.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void mcg_test_tmpdir(char out[256], const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    int n = snprintf(out, 256, "%s/mcgit-test-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    if (n < 0 || n >= 256)
        fail_msg("temporary directory name too long");
    if (!mkdtemp(out))
        fail_msg("mkdtemp %s failed", out);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void mcg_test_rm_rf(const char *path)
{
    if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fail_msg("cannot remove %s", path);
}
