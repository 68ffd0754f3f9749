/*
 * testlib.c — shared helpers of the unit tests (see testlib.h).
 */
#define _XOPEN_SOURCE 700
#include "testlib.h"

#include <zlib.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#undef _cmocka_run_group_tests
int _cmocka_run_group_tests(const char *group_name, const struct CMUnitTest *const tests,
                            const size_t num_tests, CMFixtureFunction group_setup,
                            CMFixtureFunction group_teardown);

static int skipped;

void mcg_test_skipped(const char *file, int line, const char *why)
{
    const char *req = getenv("MCGIT_REQUIRE_ALL");
    if (req && strcmp(req, "1") == 0) {
        print_error("MCGIT_REQUIRE_ALL=1: a required case cannot run: %s\n", why);
        _fail(file, line);
    }
    extern char *program_invocation_short_name;
    print_message("skipped: %s: %s\n", program_invocation_short_name, why);
    const char *dir = getenv("MCGIT_SKIP_DIR");
    char path[512];
    if (dir && *dir &&
        snprintf(path, sizeof(path), "%s/%s", dir, program_invocation_short_name) <
            (int)sizeof(path)) {
        FILE *f = fopen(path, "a");
        if (f) {
            fprintf(f, "%s\n", why);
            fclose(f);
        }
    }
    skipped++;
    _skip(file, line);
}

int mcg_test_run_group(const char *name, const struct CMUnitTest *tests, size_t n,
                       CMFixtureFunction setup, CMFixtureFunction teardown)
{
    int rc = _cmocka_run_group_tests(name, tests, n, setup, teardown);
    return rc == 0 && skipped ? 77 : rc;
}

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

mcg_buf mcg_test_gzip(const void *in, size_t n)
{
    mcg_buf out = MCG_BUF_INIT;
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&zs, (uLong)n) + 32;
    out.ptr = mcg_malloc(cap + 1);
    out.cap = cap + 1;
    zs.next_in = (unsigned char *)in;
    zs.avail_in = (uInt)n;
    zs.next_out = (unsigned char *)out.ptr;
    zs.avail_out = (uInt)cap;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    out.len = cap - zs.avail_out;
    out.ptr[out.len] = '\0';
    deflateEnd(&zs);
    return out;
}
