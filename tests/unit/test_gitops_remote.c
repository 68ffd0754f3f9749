/*
 * test_gitops_remote.c — gitops/knownhosts.c: the verdict on an ssh host key
 * against known_hosts text, as a table of lines that must match, must not,
 * or must refuse; hashed names made here with HMAC-SHA1 as ssh-keygen -H does.
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

#include "gitops/gitops_int.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

/* Two key blobs (the verdict only hashes them) and their base64. */
static const char KEY_A[] = "\0\0\0\x0bssh-ed25519\0\0\0\x20key-a-AAAAAAAAAAAAAAAAAAAAAAAAAA";
static const char KEY_B[] = "\0\0\0\x0bssh-ed25519\0\0\0\x20key-b-BBBBBBBBBBBBBBBBBBBBBBBBBB";
static char a64[128], b64[128];

static void b64_of(char *out, size_t n, const void *data, size_t len)
{
    mcg_buf b = MCG_BUF_INIT;
    mcg_base64_encode(data, len, &b);
    snprintf(out, n, "%s", b.ptr);
    mcg_buf_free(&b);
}

/* "|1|salt|hash" for name, as ssh-keygen -H writes it. */
static void hashed(char *out, size_t n, const char *name)
{
    unsigned char salt[20], mac[20];
    unsigned int len = 0;
    char s64[64], h64[64];
    for (int i = 0; i < 20; i++)
        salt[i] = (unsigned char)(i * 7 + 3);
    HMAC(EVP_sha1(), salt, 20, (const unsigned char *)name, strlen(name), mac, &len);
    b64_of(s64, sizeof(s64), salt, 20);
    b64_of(h64, sizeof(h64), mac, 20);
    int w = snprintf(out, n, "|1|%s|%s", s64, h64);
    assert_true(w > 0 && (size_t)w < n); /* 2 x 28 base64 digits: fits */
}

typedef struct kh_case {
    const char *text; /* %A and %B stand for the two keys' base64, %H for a hashed name */
    const char *host;
    int port;
    mcg_knownhosts_verdict want;
} kh_case;

static const kh_case cases[] = {
    {"h.example ssh-ed25519 %A\n", "h.example", 22, MCG_KH_MATCH},
    {"h.example ssh-ed25519 %A\n", "h.example", -1, MCG_KH_MATCH},
    {"h.example ssh-ed25519 %A", "h.example", 22, MCG_KH_MATCH}, /* no final newline */
    {"H.Example ssh-ed25519 %A\n", "h.example", 22, MCG_KH_MATCH},
    {"[h.example]:2222 ssh-ed25519 %A\n", "h.example", 2222, MCG_KH_MATCH},
    {"[h.example]:2222 ssh-ed25519 %A\n", "h.example", 22, MCG_KH_UNKNOWN},
    {"h.example ssh-ed25519 %A\n", "h.example", 2222, MCG_KH_UNKNOWN},
    {"other ssh-ed25519 %A\n", "h.example", 22, MCG_KH_UNKNOWN},
    {"h.example ssh-ed25519 %B\n", "h.example", 22, MCG_KH_MISMATCH},
    {"h.example ssh-ed25519 %B\nh.example ssh-ed25519 %A\n", "h.example", 22, MCG_KH_MATCH},
    {"other,h.example ssh-ed25519 %A\n", "h.example", 22, MCG_KH_MATCH},
    {"*.example ssh-ed25519 %A\n", "h.example", 22, MCG_KH_MATCH},
    {"h.exampl? ssh-ed25519 %A\n", "h.example", 22, MCG_KH_MATCH},
    {"* ssh-ed25519 %A\n", "h.example", 2222, MCG_KH_MATCH}, /* * matches [h]:port too */
    {"!h.example,*.example ssh-ed25519 %A\n", "h.example", 22, MCG_KH_UNKNOWN},
    {"h.example ssh-ed25519 %A\n@revoked h.example ssh-ed25519 %A\n", "h.example", 22,
     MCG_KH_REVOKED},
    {"@revoked * ssh-ed25519 %A\nh.example ssh-ed25519 %A\n", "h.example", 22, MCG_KH_REVOKED},
    {"@revoked * ssh-ed25519 %B\nh.example ssh-ed25519 %A\n", "h.example", 22, MCG_KH_MATCH},
    {"@cert-authority *.example ssh-ed25519 %A\n", "h.example", 22, MCG_KH_UNKNOWN},
    {"@unknown h.example ssh-ed25519 %A\n", "h.example", 22, MCG_KH_UNKNOWN},
    {"# h.example ssh-ed25519 %A\n\n   \n", "h.example", 22, MCG_KH_UNKNOWN},
    {"\th.example  ssh-ed25519\t%A  a comment\r\n", "h.example", 22, MCG_KH_MATCH},
    {"h.example ssh-ed25519 !!!not-base64\n", "h.example", 22, MCG_KH_UNKNOWN},
    {"h.example ssh-ed25519\n", "h.example", 22, MCG_KH_UNKNOWN},
    {"h.example\n", "h.example", 22, MCG_KH_UNKNOWN},
    {"%H ssh-ed25519 %A\n", "h.example", 2222, MCG_KH_MATCH}, /* %H: [h.example]:2222 */
    {"%H ssh-ed25519 %A\n", "h.example", 22, MCG_KH_UNKNOWN},
    {"%H ssh-ed25519 %B\n", "h.example", 2222, MCG_KH_MISMATCH},
    {"|1|junk ssh-ed25519 %A\n", "h.example", 22, MCG_KH_UNKNOWN},
    {"", "h.example", 22, MCG_KH_UNKNOWN},
};

/* The case's text with %A, %B and %H filled in. */
static char *expand(const char *tmpl)
{
    char h[128];
    mcg_buf b = MCG_BUF_INIT;
    hashed(h, sizeof(h), "[h.example]:2222");
    for (const char *p = tmpl; *p; p++) {
        if (p[0] == '%' && (p[1] == 'A' || p[1] == 'B' || p[1] == 'H')) {
            mcg_buf_puts(&b, p[1] == 'A' ? a64 : p[1] == 'B' ? b64 : h);
            p++;
        } else {
            mcg_buf_putc(&b, *p);
        }
    }
    mcg_buf_putc(&b, '\0');
    return mcg_buf_detach(&b, NULL);
}

static void test_verdicts(void **state)
{
    (void)state;
    unsigned char offered[MCG_SHA256_LEN];
    b64_of(a64, sizeof(a64), KEY_A, sizeof(KEY_A) - 1);
    b64_of(b64, sizeof(b64), KEY_B, sizeof(KEY_B) - 1);
    mcg_sha256(KEY_A, sizeof(KEY_A) - 1, offered);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *text = expand(cases[i].text);
        mcg_knownhosts_result res;
        mcg_knownhosts_verdict v =
            mcg_knownhosts_check(&res, text, strlen(text), cases[i].host, cases[i].port, offered);
        if (v != cases[i].want)
            fail_msg("case %zu (%s, port %d): verdict %d, want %d", i, cases[i].text, cases[i].port,
                     v, cases[i].want);
        free(text);
    }
}

static void test_result_names(void **state)
{
    (void)state;
    unsigned char offered[MCG_SHA256_LEN], other[MCG_SHA256_LEN];
    char fp[MCG_SSH_FP_LEN], text[512];
    b64_of(b64, sizeof(b64), KEY_B, sizeof(KEY_B) - 1);
    mcg_sha256(KEY_A, sizeof(KEY_A) - 1, offered);
    mcg_sha256(KEY_B, sizeof(KEY_B) - 1, other);
    snprintf(text, sizeof(text), "[h.example]:2222 ssh-ed25519 %s\n", b64);
    mcg_knownhosts_result res;
    assert_int_equal(mcg_knownhosts_check(&res, text, strlen(text), "h.example", 2222, offered),
                     MCG_KH_MISMATCH);
    assert_string_equal(res.name, "[h.example]:2222");
    mcg_kh_fingerprint(fp, other);
    assert_int_equal(strlen(fp), 7 + 43); /* SHA256: and unpadded base64, as ssh-keygen -l */
    assert_true(strncmp(fp, "SHA256:", 7) == 0);
    char want[128];
    snprintf(want, sizeof(want), "ssh-ed25519 %s", fp);
    assert_string_equal(res.known, want);
    mcg_knownhosts_check(&res, text, strlen(text), "h.example", 22, offered);
    assert_string_equal(res.name, "h.example");
    assert_int_equal(res.nknown, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdicts),
        cmocka_unit_test(test_result_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
