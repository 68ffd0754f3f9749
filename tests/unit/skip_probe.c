/*
 * skip_probe.c — not a test of mcgit: one case that passes and one that
 * skips with mcg_test_skip, so that test_unit_skip.sh can check a unit test
 * program with a skipped case exits 77 (ctest: skipped), not 0 (passed).
 * With SKIP_PROBE_NONE set, nothing skips and it exits 0.
 */
#include "testlib.h"

#include <stdlib.h>

static void test_passes(void **state)
{
    (void)state;
    assert_int_equal(1 + 1, 2);
}

static void test_skips(void **state)
{
    (void)state;
    if (!getenv("SKIP_PROBE_NONE"))
        mcg_test_skip("the probe's reason");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_passes),
        cmocka_unit_test(test_skips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
