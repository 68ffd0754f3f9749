/*
 * test_metrics.c — the metrics registry and its text format: declarations
 * that must pass and must fail (a table), the exact bytes of a small
 * registry (sorting, escaping, histogram buckets, values), misuse counted
 * instead of crashing, reset and get; the listener's bind address
 * errors (nothing listens); the process metrics from /proc/self.
 */
#include "testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics/metrics.h"

static void test_declare_table(void **state)
{
    (void)state;
    static const double good_b[] = {0.1, 1, 10};
    static const double bad_b[] = {1, 1};
    static const struct {
        const char *name;
        mcg_metric_type type;
        const char *labels;
        const double *buckets;
        size_t nb;
        bool ok;
        const char *msg;
    } cases[] = {
        {"a_total", MCG_METRIC_COUNTER, NULL, NULL, 0, true, NULL},
        {"b:c", MCG_METRIC_GAUGE, "pool,node", NULL, 0, true, NULL},
        {"h_seconds", MCG_METRIC_HISTOGRAM, "pool", good_b, 3, true, NULL},
        {"a_total", MCG_METRIC_COUNTER, NULL, NULL, 0, false, "declared twice"},
        {"9bad", MCG_METRIC_GAUGE, NULL, NULL, 0, false, "invalid name"},
        {"", MCG_METRIC_GAUGE, NULL, NULL, 0, false, "invalid name"},
        {"has-dash", MCG_METRIC_GAUGE, NULL, NULL, 0, false, "invalid name"},
        {"x1", MCG_METRIC_GAUGE, "le", NULL, 0, false, "bad label name 'le'"},
        {"x2", MCG_METRIC_GAUGE, "__x", NULL, 0, false, "bad label name '__x'"},
        {"x3", MCG_METRIC_GAUGE, "a:b", NULL, 0, false, "bad label name 'a:b'"},
        {"x4", MCG_METRIC_GAUGE, "a,a", NULL, 0, false, "bad label name 'a'"},
        {"x5", MCG_METRIC_GAUGE, "a,b,c,d,e", NULL, 0, false, "bad label name 'e'"},
        {"x6", MCG_METRIC_GAUGE, "a,", NULL, 0, false, "bad label name ''"},
        {"x7", MCG_METRIC_HISTOGRAM, NULL, NULL, 0, false, "buckets go with histograms"},
        {"x8", MCG_METRIC_GAUGE, NULL, good_b, 3, false, "buckets go with histograms"},
        {"x9", MCG_METRIC_HISTOGRAM, NULL, bad_b, 2, false, "buckets must increase"},
    };
    mcg_metrics *m = mcg_metrics_new();
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        mcg_err err = {0};
        int rc = mcg_metrics_declare(m, cases[i].name, cases[i].type, "help", cases[i].labels,
                                     cases[i].buckets, cases[i].nb, &err);
        if (cases[i].ok && rc)
            fail_msg("case %zu (%s): %s", i, cases[i].name, err.msg);
        if (!cases[i].ok) {
            if (!rc)
                fail_msg("case %zu (%s) was accepted", i, cases[i].name);
            assert_int_equal(rc, MCG_EINVAL);
            assert_contains(err.msg, cases[i].msg);
        }
    }
    /* a NULL err is allowed */
    assert_int_equal(mcg_metrics_declare(m, "9", MCG_METRIC_GAUGE, "", NULL, NULL, 0, NULL),
                     MCG_EINVAL);
    mcg_metrics_free(m);
    mcg_metrics_free(NULL);
}

static void test_format_exact(void **state)
{
    (void)state;
    static const double b[] = {0.5, 1, 10};
    mcg_metrics *m = mcg_metrics_new();
    assert_int_equal(mcg_metrics_declare(m, "z_seconds", MCG_METRIC_HISTOGRAM, "Time.\nline 2 \\",
                                         "pool", b, 3, NULL),
                     0);
    assert_int_equal(mcg_metrics_declare(m, "a_gauge", MCG_METRIC_GAUGE, "A \"gauge\".",
                                         "node,state", NULL, 0, NULL),
                     0);
    assert_int_equal(
        mcg_metrics_declare(m, "m_total", MCG_METRIC_COUNTER, "Count.", NULL, NULL, 0, NULL), 0);
    mcg_metrics_set(m, "a_gauge", MCG_LV("w1", "Done"), 1);
    mcg_metrics_set(m, "a_gauge", MCG_LV("w0", "Done"), 0.25);
    mcg_metrics_set(m, "a_gauge", MCG_LV("q\"\\\nx", "Done"), -3);
    mcg_metrics_add(m, "m_total", NULL, 2);
    mcg_metrics_add(m, "m_total", NULL, 1);
    mcg_metrics_observe(m, "z_seconds", MCG_LV("worker"), 0.5);
    mcg_metrics_observe(m, "z_seconds", MCG_LV("worker"), 3);
    mcg_metrics_observe(m, "z_seconds", MCG_LV("worker"), 100);
    mcg_buf out = MCG_BUF_INIT;
    mcg_metrics_format(m, &out);
    static const char want[] =
        "# HELP a_gauge A \"gauge\".\n"
        "# TYPE a_gauge gauge\n"
        "a_gauge{node=\"q\\\"\\\\\\nx\",state=\"Done\"} -3\n"
        "a_gauge{node=\"w0\",state=\"Done\"} 0.25\n"
        "a_gauge{node=\"w1\",state=\"Done\"} 1\n"
        "# HELP m_total Count.\n"
        "# TYPE m_total counter\n"
        "m_total 3\n"
        "# HELP mcgit_metrics_errors_total Metric updates that did not fit their family (a bug in "
        "mcgit).\n"
        "# TYPE mcgit_metrics_errors_total counter\n"
        "# HELP z_seconds Time.\\nline 2 \\\\\n"
        "# TYPE z_seconds histogram\n"
        "z_seconds_bucket{pool=\"worker\",le=\"0.5\"} 1\n"
        "z_seconds_bucket{pool=\"worker\",le=\"1\"} 1\n"
        "z_seconds_bucket{pool=\"worker\",le=\"10\"} 2\n"
        "z_seconds_bucket{pool=\"worker\",le=\"+Inf\"} 3\n"
        "z_seconds_sum{pool=\"worker\"} 103.5\n"
        "z_seconds_count{pool=\"worker\"} 3\n";
    assert_string_equal(out.ptr, want);
    mcg_buf_free(&out);
    mcg_metrics_free(m);
}

static void test_misuse_counted(void **state)
{
    (void)state;
    static const double b[] = {1};
    mcg_metrics *m = mcg_metrics_new();
    mcg_metrics_declare(m, "c_total", MCG_METRIC_COUNTER, "", "x", NULL, 0, NULL);
    mcg_metrics_declare(m, "g", MCG_METRIC_GAUGE, "", NULL, NULL, 0, NULL);
    mcg_metrics_declare(m, "h", MCG_METRIC_HISTOGRAM, "", NULL, b, 1, NULL);
    mcg_metrics_add(m, "c_total", MCG_LV("a"), -1); /* counters only go up */
    mcg_metrics_set(m, "c_total", MCG_LV("a"), 5);  /* set is for gauges */
    mcg_metrics_add(m, "c_total", NULL, 1);         /* missing label value */
    mcg_metrics_add(m, "nope", NULL, 1);            /* undeclared */
    mcg_metrics_observe(m, "g", NULL, 1);           /* observe is for histograms */
    mcg_metrics_add(m, "h", NULL, 1);               /* add is not */
    mcg_metrics_set(m, "g", NULL, NAN);             /* not a number */
    mcg_metrics_add(NULL, "g", NULL, 1);            /* no registry: nothing */
    double v;
    assert_true(mcg_metrics_get(m, "mcgit_metrics_errors_total", NULL, &v));
    assert_true(v == 7);
    assert_false(mcg_metrics_get(m, "c_total", MCG_LV("a"), &v));
    mcg_metrics_set(m, "g", NULL, INFINITY);
    mcg_buf out = MCG_BUF_INIT;
    mcg_metrics_format(m, &out);
    assert_contains(out.ptr, "\ng +Inf\n");
    mcg_buf_free(&out);
    mcg_metrics_free(m);
}

static void test_reset_and_get(void **state)
{
    (void)state;
    mcg_metrics *m = mcg_metrics_new();
    mcg_metrics_declare(m, "g", MCG_METRIC_GAUGE, "", "pool", NULL, 0, NULL);
    for (int i = 0; i < 100; i++) {
        char name[16];
        snprintf(name, sizeof(name), "p%03d", 99 - i);
        mcg_metrics_set(m, "g", MCG_LV(name), i);
    }
    double v;
    assert_true(mcg_metrics_get(m, "g", MCG_LV("p000"), &v));
    assert_true(v == 99);
    mcg_buf out = MCG_BUF_INIT;
    mcg_metrics_format(m, &out);
    /* sorted by label value, whatever the order of updates */
    const char *a = strstr(out.ptr, "p000"), *z = strstr(out.ptr, "p099");
    assert_non_null(a);
    assert_non_null(z);
    assert_true(a < z);
    mcg_buf_free(&out);
    mcg_metrics_reset(m, "g");
    assert_false(mcg_metrics_get(m, "g", MCG_LV("p000"), &v));
    mcg_metrics_format(m, &out);
    assert_null(strstr(out.ptr, "p000"));
    mcg_buf_free(&out);
    mcg_metrics_free(m);
}

static void test_serve_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *bind;
        const char *msg;
    } cases[] = {
        {"127.0.0.1", "expected HOST:PORT"},
        {"127.0.0.1:99999", "bad port"},
        {"127.0.0.1:x", "bad port"},
        {"[::1:80", "expected [V6]:PORT"},
        {"no-such-host.invalid:80", "no-such-host.invalid:80"},
    };
    mcg_metrics *m = mcg_metrics_new();
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        mcg_metrics_server *s = (mcg_metrics_server *)1;
        mcg_err err = {0};
        mcg_metrics_server_opts o = {.bind = cases[i].bind, .metrics = m, .who = "test"};
        assert_int_not_equal(mcg_metrics_serve(&s, &o, &err), 0);
        assert_null(s);
        assert_contains(err.msg, cases[i].msg);
    }
    /* a NULL err is allowed */
    mcg_metrics_server *sn = NULL;
    mcg_metrics_server_opts on = {.bind = "127.0.0.1", .metrics = m, .who = "test"};
    assert_int_equal(mcg_metrics_serve(&sn, &on, NULL), MCG_EINVAL);
    assert_null(sn);
    /* an unreadable token file: nothing listens */
    mcg_metrics_server *s = NULL;
    mcg_err err = {0};
    mcg_metrics_server_opts o = {
        .bind = "127.0.0.1:0", .metrics = m, .token_file = "/nonexistent/token", .who = "test"};
    assert_int_not_equal(mcg_metrics_serve(&s, &o, &err), 0);
    assert_null(s);
    assert_contains(err.msg, "webhook token");
    /* port 0 picks one */
    o.token_file = NULL;
    assert_int_equal(mcg_metrics_serve(&s, &o, &err), 0);
    assert_true(mcg_metrics_server_port(s) > 0);
    mcg_metrics_server_free(s);
    mcg_metrics_server_free(NULL);
    mcg_metrics_free(m);
}

/* The process metrics: declared once (a second declare is fine), read
 * from /proc/self, plausible against what this process can see itself. */
static void test_process_metrics(void **state)
{
    (void)state;
    mcg_metrics *m = mcg_metrics_new();
    mcg_err err = {0};
    assert_int_equal(mcg_metrics_process_declare(m, &err), 0);
    assert_int_equal(mcg_metrics_process_declare(m, &err), 0);
    double rss = 0, vsz = 0, fds = 0, maxfds = 0, start = 0, cpu = -1;
    assert_true(mcg_metrics_get(m, "process_resident_memory_bytes", NULL, &rss));
    assert_true(rss == 0); /* nothing read yet */
    mcg_metrics_process_update(m);
    assert_true(mcg_metrics_get(m, "process_resident_memory_bytes", NULL, &rss));
    assert_true(mcg_metrics_get(m, "process_virtual_memory_bytes", NULL, &vsz));
    assert_true(mcg_metrics_get(m, "process_open_fds", NULL, &fds));
    assert_true(mcg_metrics_get(m, "process_max_fds", NULL, &maxfds));
    assert_true(mcg_metrics_get(m, "process_start_time_seconds", NULL, &start));
    assert_true(mcg_metrics_get(m, "process_cpu_seconds_total", NULL, &cpu));
    assert_true(rss > 512 * 1024 && vsz >= rss);
    assert_true(fds >= 3 && (maxfds < 0 || maxfds >= fds));
    double now = (double)time(NULL);
    assert_true(start > now - 3600 && start <= now + 1);
    assert_true(cpu >= 0);
    /* one more descriptor open: counted */
    FILE *f = fopen("/proc/self/status", "r");
    assert_non_null(f);
    double fds2 = 0;
    mcg_metrics_process_update(m);
    assert_true(mcg_metrics_get(m, "process_open_fds", NULL, &fds2));
    assert_true(fds2 == fds + 1);
    fclose(f);
    /* the counter only grows, and the text format has every family */
    volatile double spin = 0;
    for (long i = 0; i < 30000000; i++)
        spin += (double)i;
    assert_true(spin > 0);
    double cpu2 = 0;
    mcg_metrics_process_update(m);
    assert_true(mcg_metrics_get(m, "process_cpu_seconds_total", NULL, &cpu2));
    assert_true(cpu2 >= cpu);
    mcg_buf b = MCG_BUF_INIT;
    mcg_metrics_format(m, &b);
    mcg_buf_put(&b, "", 1);
    assert_contains(b.ptr, "# TYPE process_cpu_seconds_total counter\n");
    assert_contains(b.ptr, "# TYPE process_resident_memory_bytes gauge\n");
    assert_contains(b.ptr, "\nprocess_open_fds ");
    assert_contains(b.ptr, "\nprocess_start_time_seconds ");
    assert_null(strstr(b.ptr, "\nmcgit_metrics_errors_total ")); /* no misuse counted */
    mcg_buf_free(&b);
    mcg_metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_declare_table),  cmocka_unit_test(test_format_exact),
        cmocka_unit_test(test_misuse_counted), cmocka_unit_test(test_reset_and_get),
        cmocka_unit_test(test_serve_refusals), cmocka_unit_test(test_process_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
