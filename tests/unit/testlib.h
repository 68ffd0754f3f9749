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

#endif
