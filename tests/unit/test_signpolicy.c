/*
 * test_signpolicy.c — model/signpolicy.c: .mcgit/policy.yaml, as tables of
 * texts that must parse (with what they mean) and texts that must be
 * refused (with the file:line the message must carry), and pathspec
 * matching.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testlib.h"

#include "model/model.h"

typedef struct {
    const char *name, *text;
    size_t nrules;
    int64_t age;
} good_case;

static const good_case good[] = {
    {"empty file", "", 0, 0},
    {"null document", "---\n", 0, 0},
    {"one rule", "approvals:\n- paths: [\"pools/master.yaml\", \".mcgit/*\"]\n  required: 2\n", 1,
     0},
    {"age only", "maxSourceAge: 720h\n", 0, 720 * 3600},
    {"mixed units", "maxSourceAge: 1h30m15s\n", 0, 5415},
    {"two rules and an age",
     "approvals:\n- paths: [pools]\n  required: 1\n- paths: ['*']\n  required: 3\nmaxSourceAge: "
     "90m\n",
     2, 5400},
};

typedef struct {
    const char *name, *text, *want; /* want: a substring of the first message */
} bad_case;

static const bad_case bad[] = {
    {"unknown key", "signers:\n- paths: [x]\n", "unknown field 'signers'"},
    {"misspelt key", "approval:\n- paths: [x]\n",
     "policy.yaml:1: unknown field \"approval\" (did you mean \"approvals\"?)"},
    {"misspelled rule key", "approvals:\n- paths: [x]\n  requird: 2\n", "unknown field"},
    {"no required", "approvals:\n- paths: [x]\n", "approvals[0].required is missing"},
    {"required 0", "approvals:\n- paths: [x]\n  required: 0\n", "must be 1 to 16"},
    {"required too many", "approvals:\n- paths: [x]\n  required: 17\n", "must be 1 to 16"},
    {"no paths", "approvals:\n- required: 2\n", "paths must list at least one path"},
    {"empty path", "approvals:\n- paths: ['']\n  required: 2\n", "non-empty relative path"},
    {"absolute path", "approvals:\n- paths: [/etc]\n  required: 2\n", "non-empty relative path"},
    {"pathspec magic", "approvals:\n- paths: [':(glob)pools/*']\n  required: 2\n",
     "uses pathspec magic"},
    {"short magic", "approvals:\n- paths: [':!x']\n  required: 2\n", "uses pathspec magic"},
    {"leaving the tree", "approvals:\n- paths: [../x]\n  required: 2\n", "leaves the repository"},
    {"leaving it later", "approvals:\n- paths: [a/../../x]\n  required: 2\n",
     "leaves the repository"},
    {"rule not a mapping", "approvals:\n- x\n", "must be a mapping"},
    {"approvals not a list", "approvals: 3\n", "approvals"},
    {"bad age", "maxSourceAge: 30d\n", "policy.yaml:1: maxSourceAge '30d' is not a duration"},
    {"zero age", "maxSourceAge: 0h\n", "is not a duration"},
    {"age without unit", "maxSourceAge: '720'\n", "is not a duration"},
    {"two documents", "maxSourceAge: 1h\n---\nmaxSourceAge: 2h\n", "more than one YAML document"},
    {"YAML syntax", "approvals: [\n", "invalid YAML"},
    {"too deep",
     "a: "
     "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]"
     "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
     "nesting deeper than 64"},
};

static void test_good(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        mcg_signpolicy *p = NULL;
        mcg_diags d = {0};
        int rc =
            mcg_signpolicy_parse(&p, ".mcgit/policy.yaml", good[i].text, strlen(good[i].text), &d);
        if (rc != 0)
            fail_msg("%s: %s", good[i].name, d.count ? d.msgs[0] : "?");
        assert_int_equal(p->nrules, good[i].nrules);
        assert_int_equal(p->max_source_age, good[i].age);
        mcg_signpolicy_free(p);
        mcg_diags_free(&d);
    }
}

static void test_bad(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        mcg_signpolicy *p = (mcg_signpolicy *)1;
        mcg_diags d = {0};
        int rc =
            mcg_signpolicy_parse(&p, ".mcgit/policy.yaml", bad[i].text, strlen(bad[i].text), &d);
        if (rc == 0)
            fail_msg("%s: accepted", bad[i].name);
        assert_null(p);
        assert_true(d.count > 0);
        if (!strstr(d.msgs[0], bad[i].want))
            fail_msg("%s: '%s' lacks '%s'", bad[i].name, d.msgs[0], bad[i].want);
        if (strncmp(d.msgs[0], ".mcgit/policy.yaml:", 19) != 0)
            fail_msg("%s: '%s' does not name the file", bad[i].name, d.msgs[0]);
        mcg_diags_free(&d);
    }
}

static void test_match(void **state)
{
    (void)state;
    const char *text = "approvals:\n"
                       "- paths: [\"pools/master.yaml\", \".mcgit/*\"]\n  required: 2\n"
                       "- paths: [machineconfigs]\n  required: 3\n"
                       "- paths: [\"*.conf\"]\n  required: 1\n";
    mcg_signpolicy *p = NULL;
    mcg_diags d = {0};
    assert_int_equal(mcg_signpolicy_parse(&p, "p", text, strlen(text), &d), 0);
    static const struct {
        const char *path;
        int required; /* 0: no rule */
    } cases[] = {
        {"pools/master.yaml", 2},        {"pools/worker.yaml", 0}, {".mcgit/allowed_signers", 2},
        {".mcgit/policy.yaml", 2},       {".mcgit/sub/deeper", 2}, /* '*' crosses '/', as in git
                                                                      pathspecs */
        {"machineconfigs/10-x.yaml", 3}, {"machineconfigs", 3},    {"machineconfigsX/a", 0},
        {"etc/chrony.conf", 1},          {"README.md", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const mcg_signpolicy_rule *r = mcg_signpolicy_rule_for(p, cases[i].path);
        int got = r ? r->required : 0;
        if (got != cases[i].required)
            fail_msg("%s: required %d, want %d", cases[i].path, got, cases[i].required);
    }
    assert_null(mcg_signpolicy_rule_for(NULL, "x"));
    mcg_signpolicy_free(p);
    mcg_signpolicy_free(NULL);
}

/*
 * Paths are normalised as git normalises a pathspec: each spelling guards
 * pools/master.yaml (and nothing else), "." the whole tree; a pattern that
 * matches no file is reported.
 */
static void test_normalise(void **state)
{
    (void)state;
    static const char *const spellings[] = {"./pools/master.yaml",    "pools//master.yaml",
                                            "pools/./master.yaml",    "pools/../pools/master.yaml",
                                            "pools/x/../master.yaml", "./pools/./master.yaml"};
    for (size_t i = 0; i < sizeof(spellings) / sizeof(*spellings); i++) {
        char *text = mcg_sprintf("approvals:\n- paths: ['%s']\n  required: 2\n", spellings[i]);
        mcg_signpolicy *p = NULL;
        mcg_diags d = {0};
        if (mcg_signpolicy_parse(&p, "p", text, strlen(text), &d) != 0)
            fail_msg("%s: refused: %s", spellings[i], d.msgs[0]);
        if (!mcg_signpolicy_rule_for(p, "pools/master.yaml"))
            fail_msg("%s does not guard pools/master.yaml", spellings[i]);
        assert_null(mcg_signpolicy_rule_for(p, "pools/worker.yaml"));
        mcg_signpolicy_free(p);
        mcg_diags_free(&d);
        free(text);
    }
    const char *text = "approvals:\n- paths: ['.', 'pools/mastr.yaml']\n  required: 2\n";
    mcg_signpolicy *p = NULL;
    mcg_diags d = {0};
    assert_int_equal(mcg_signpolicy_parse(&p, "p", text, strlen(text), &d), 0);
    assert_non_null(mcg_signpolicy_rule_for(p, "any/file"));
    mcg_strv files = {0}, out = {0};
    mcg_strv_push(&files, "pools/master.yaml");
    mcg_signpolicy_unmatched(p, &files, &out);
    assert_int_equal(out.n, 1);
    assert_string_equal(out.v[0], "approvals[0].paths: 'pools/mastr.yaml' matches no file");
    mcg_strv_free(&files);
    mcg_strv_free(&out);
    mcg_signpolicy_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_normalise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
