/*
 * test_osenv.c — the process's environment, one way each: time zones read
 * from TZif files (checked against the C library's own conversion, which
 * this test may drive through TZ: it is one thread), the environment
 * reader, the logger's lines and the clocks.
 */
#include "testlib.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "osenv/osenv.h"

/* The C library's local time of t in zone tz (TZ set for the call, then put back). */
static void libc_local(const char *tz, int64_t t, struct tm *out)
{
    char *want = mcg_sprintf(":%s", tz);
    setenv("TZ", want, 1);
    tzset();
    time_t tt = (time_t)t;
    assert_non_null(localtime_r(&tt, out));
    unsetenv("TZ");
    tzset();
    free(want);
}

static void same_tm(const char *tz, int64_t t, const struct tm *a, const struct tm *b)
{
    if (a->tm_year != b->tm_year || a->tm_mon != b->tm_mon || a->tm_mday != b->tm_mday ||
        a->tm_hour != b->tm_hour || a->tm_min != b->tm_min || a->tm_sec != b->tm_sec ||
        a->tm_wday != b->tm_wday || a->tm_yday != b->tm_yday || a->tm_gmtoff != b->tm_gmtoff ||
        (a->tm_isdst > 0) != (b->tm_isdst > 0))
        fail_msg("%s at %lld: mcgit %04d-%02d-%02d %02d:%02d:%02d off %ld dst %d, libc "
                 "%04d-%02d-%02d %02d:%02d:%02d off %ld dst %d",
                 tz, (long long)t, a->tm_year + 1900, a->tm_mon + 1, a->tm_mday, a->tm_hour,
                 a->tm_min, a->tm_sec, a->tm_gmtoff, a->tm_isdst, b->tm_year + 1900, b->tm_mon + 1,
                 b->tm_mday, b->tm_hour, b->tm_min, b->tm_sec, b->tm_gmtoff, b->tm_isdst);
}

/* Zones with DST north and south, none, half and quarter hours, negative DST,
 * DST given up, and rules past the last transition (the TZif footer). */
static const char *const zones[] = {
    "Europe/Berlin",    "America/New_York",  "Australia/Sydney",
    "Asia/Kolkata",     "America/Sao_Paulo", "Pacific/Chatham",
    "America/St_Johns", "Europe/Dublin",     "Africa/Casablanca",
    "Asia/Tehran",      "Antarctica/Troll",  "Australia/Lord_Howe",
    "Pacific/Apia",     "Etc/GMT+5",         "UTC",
};

static void test_tz_matches_libc(void **state)
{
    (void)state;
    size_t checked = 0;
    /* 1901 to 2100, an odd step so every hour of every weekday comes up;
     * under Valgrind (tests/run-all.sh sets MCGIT_VALGRIND) every 41st of
     * those instants: all of them take it over a quarter of an hour */
    int64_t step = 86400 * 3 + 3600 * 7 + 60 * 11 + 13;
    size_t want = 100000;
    if (getenv("MCGIT_VALGRIND")) {
        print_message("under Valgrind: every 41st instant of test_tz_matches_libc\n");
        step *= 41;
        want /= 41;
    }
    for (size_t z = 0; z < sizeof(zones) / sizeof(zones[0]); z++) {
        if (!mcg_tz_known(zones[z]))
            fail_msg("zone %s is not in this host's time zone database", zones[z]);
        for (int64_t t = -2145916800LL; t < 4102444800LL; t += step) {
            struct tm a, b;
            assert_int_equal(mcg_tz_local(zones[z], t, &a), 0);
            libc_local(zones[z], t, &b);
            same_tm(zones[z], t, &a, &b);
            checked++;
        }
    }
    assert_true(checked > want);
}

/* Each second around this year's changes in Berlin and Sydney. */
static void test_tz_around_changes(void **state)
{
    (void)state;
    /* 2026-03-29 01:00 UTC (Berlin springs forward), 2026-10-25 01:00 UTC (back);
     * 2026-04-04 16:00 UTC (Sydney back), 2026-10-03 16:00 UTC (forward); 2061: the footer */
    static const int64_t at[] = {1774746000, 1792890000, 1775318400, 1791043200, 2879715600};
    static const char *const z[] = {"Europe/Berlin", "Australia/Sydney"};
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
        for (size_t k = 0; k < 2; k++)
            for (int64_t t = at[i] - 7200; t < at[i] + 7200; t += 599) {
                struct tm a, b;
                assert_int_equal(mcg_tz_local(z[k], t, &a), 0);
                libc_local(z[k], t, &b);
                same_tm(z[k], t, &a, &b);
            }
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* Unknown zones, files that are not TZif, and the environment left alone. */
static void test_tz_refusals(void **state)
{
    (void)state;
    struct tm tm;
    assert_int_equal(mcg_tz_local("Nowhere/Atlantis", 0, &tm), MCG_ENOTFOUND);
    assert_int_equal(mcg_tz_local("../etc/passwd", 0, &tm), MCG_ENOTFOUND);
    assert_int_equal(mcg_tz_local("/etc/passwd", 0, &tm), MCG_ENOTFOUND);
    assert_false(mcg_tz_known(""));
    assert_true(mcg_tz_known("UTC"));
    assert_int_equal(mcg_tz_local("UTC", 86400 * 365, &tm), 0);
    assert_int_equal(tm.tm_year, 71);
    assert_int_equal(tm.tm_gmtoff, 0);

    char dir[256];
    mcg_test_tmpdir(dir, "tz");
    char *junk = mcg_sprintf("%s/Junk", dir), *cut = mcg_sprintf("%s/Cut", dir);
    write_file(junk, "not a zone file at all, but long enough to have a header...........", 68);
    /* a real header whose counts promise more data than the file holds */
    unsigned char hdr[44] = {'T', 'Z', 'i', 'f', '2'};
    hdr[35] = 200; /* timecnt */
    hdr[39] = 1;   /* typecnt */
    write_file(cut, hdr, sizeof(hdr));
    setenv("TZDIR", dir, 1);
    setenv("TZ", "Europe/Berlin", 1);
    assert_int_equal(mcg_tz_local("Junk", 0, &tm), MCG_EINVAL);
    assert_int_equal(mcg_tz_local("Cut", 0, &tm), MCG_EINVAL);
    assert_string_equal(getenv("TZ"), "Europe/Berlin"); /* never touched */
    unsetenv("TZDIR");
    unsetenv("TZ");
    mcg_test_rm_rf(dir);
    free(junk);
    free(cut);
}

static void test_env(void **state)
{
    (void)state;
    setenv("MCGIT_TEST_OSENV", "42", 1);
    assert_string_equal(mcg_env_get("MCGIT_TEST_OSENV"), "42");
    uint64_t v = 0;
    assert_int_equal(mcg_env_u64("MCGIT_TEST_OSENV", 7, 1, 100, &v, NULL), 0);
    assert_int_equal(v, 42);
    setenv("MCGIT_TEST_OSENV", "4x", 1);
    mcg_err err = {0};
    assert_int_equal(mcg_env_u64("MCGIT_TEST_OSENV", 7, 1, 100, &v, &err), MCG_EINVAL);
    assert_contains(err.msg, "MCGIT_TEST_OSENV='4x'");
    unsetenv("MCGIT_TEST_OSENV");
    assert_null(mcg_env_get("MCGIT_TEST_OSENV"));
    assert_int_equal(mcg_env_u64("MCGIT_TEST_OSENV", 7, 1, 100, &v, NULL), 0);
    assert_int_equal(v, 7);
}

/* What the logger writes on stderr (fd 2 pointed at a file for the call). */
static char *logged(void (*fn)(void))
{
    char dir[256];
    mcg_test_tmpdir(dir, "log");
    char *path = mcg_sprintf("%s/err", dir);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600), saved = dup(2);
    assert_true(fd >= 0 && saved >= 0);
    dup2(fd, 2);
    fn();
    dup2(saved, 2);
    close(saved);
    close(fd);
    char buf[8192] = {0};
    FILE *f = fopen(path, "rb");
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    mcg_test_rm_rf(dir);
    free(path);
    return mcg_strdup(buf);
}

static void log_some(void)
{
    mcg_log_line("agent", "node=%s: %s", "w1", "Done");
    mcg_log_line(NULL, "mcgit: alone");
    mcg_log_partial("\r[%s]", "##..");
    mcg_log_partial("\n");
    char big[6000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    mcg_log_line("controller", "%s", big);
}

static void test_log(void **state)
{
    (void)state;
    char *out = logged(log_some);
    assert_true(!strncmp(
        out, "mcgit agent: node=w1: Done\nmcgit: alone\n\r[##..]\nmcgit controller: xxx", 68));
    /* a line too long is cut, and still one line */
    size_t n = strlen(out);
    assert_int_equal(out[n - 1], '\n');
    assert_true(strchr(out + 68, '\n') == out + n - 1); /* one line */
    assert_true(n < 68 + 4200);
    free(out);
}

static void test_clock(void **state)
{
    (void)state;
    struct timespec m, w;
    mcg_mono_now(&m);
    mcg_wall_now(&w);
    int64_t ms = mcg_mono_ms();
    assert_true(ms >= (int64_t)m.tv_sec * 1000);
    assert_true(mcg_mono_seconds() >= (double)m.tv_sec);
    assert_true(w.tv_sec >= time(NULL) - 1 && w.tv_sec <= time(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tz_matches_libc),
        cmocka_unit_test(test_tz_around_changes),
        cmocka_unit_test(test_tz_refusals),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_log),
        cmocka_unit_test(test_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
