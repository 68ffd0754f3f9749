/*
 * testlib.h — what the unit tests share: assertions cmocka lacks and
 * throwaway directories. Linked into every tests/unit/test_*.c program.
 */
#ifndef MCG_TESTLIB_H
#define MCG_TESTLIB_H

/* cmocka's headers need these first */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "util/util.h"

/* Fail unless the string hay contains needle (NULL hay fails). */
#define assert_contains(hay, needle)                                                               \
    do {                                                                                           \
        const char *h_ = (hay), *n_ = (needle);                                                    \
        if (!h_ || !strstr(h_, n_))                                                                \
            fail_msg("expected \"%s\" to contain \"%s\"", h_ ? h_ : "(null)", n_);                 \
    } while (0)

/*
 * A new empty directory under $TMPDIR (default /tmp) named
 * mcgit-test-<tag>-XXXXXX, its path in out (256 bytes); fails the test when
 * it cannot be made.
 */
void mcg_test_tmpdir(char out[256], const char *tag);

/* Remove path and everything below it (symbolic links are not followed). */
void mcg_test_rm_rf(const char *path);

/* gzip (with its header, zlib level 9) of n bytes; NUL-terminated. */
mcg_buf mcg_test_gzip(const void *in, size_t n);

/*
 * Skipping a case, said so. mcg_test_skip(why) ends the case as cmocka's
 * skip() does and prints "skipped: <case>: why"; the program then exits 77
 * when nothing failed, which ctest reports as skipped, never as passed
 * (and a reason goes to $MCGIT_SKIP_DIR/<program> for tests/run-all.sh).
 * With MCGIT_REQUIRE_ALL=1 (CI) the case fails instead. cmocka's own skip()
 * is not available: a skip names its reason.
 */
#define mcg_test_skip(why) mcg_test_skipped(__FILE__, __LINE__, (why))
void mcg_test_skipped(const char *file, int line, const char *why);
#undef skip
#define skip() use_mcg_test_skip_with_a_reason

/* Every group runs through mcg_test_run_group: 77 when a case was skipped. */
int mcg_test_run_group(const char *name, const struct CMUnitTest *tests, size_t n,
                       CMFixtureFunction setup, CMFixtureFunction teardown);
#undef _cmocka_run_group_tests
#define _cmocka_run_group_tests mcg_test_run_group

#endif
