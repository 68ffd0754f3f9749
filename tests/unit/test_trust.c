/*
 * test_trust.c — allowed_signers parsing and SSHSIG verification.
 *
 * Keys and signatures are real: tests/fixtures/trust/gen.sh made them with
 * ssh-keygen (and one with git). Parser cases are tables of lines that must
 * pass and lines that must fail with "<name>:<line>: <reason>"; in them
 * @ED25519@ etc. stand for a fixture key ("type base64"). Malformed
 * signatures are derived from the fixtures by re-encoding their fields.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testlib.h"

#include "trust/trust_int.h"

#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/sha.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ fixtures */

static char *slurp(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/trust/%s", MCG_FIXTURES, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open fixture %s", path);
    mcg_buf b = MCG_BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        mcg_buf_put(&b, chunk, n);
    fclose(f);
    return mcg_buf_detach(&b, len);
}

/* Placeholders usable in parser tables, filled in by setup(). */
enum { K_ED25519, K_ECDSA, K_RSA, K_RSA1024, K_ED25519_B64, K_ED25519_TRUNC, K_ED25519_LONG, NK };
static const char *const knames[NK] = {"@ED25519@",     "@ECDSA@",       "@RSA@",
                                       "@RSA1024@",     "@ED25519_B64@", "@ED25519_TRUNC@",
                                       "@ED25519_LONG@"};
static char *kval[NK];

static char *msg;
static size_t msg_len;
static mcg_signers *all_signers; /* ALL below, parsed once by verify_blob() */

/* "type base64" of a .pub file (the comment dropped). */
static char *pub_key(const char *file)
{
    char *t = slurp(file, NULL);
    char *sp = strchr(t, ' ');
    assert_non_null(sp);
    sp = strpbrk(sp + 1, " \n");
    *sp = '\0';
    return t;
}

/* The decoded key blob of a .pub file. */
static void pub_blob(const char *file, mcg_buf *out)
{
    char *k = pub_key(file);
    char *b64 = strchr(k, ' ') + 1;
    assert_int_equal(mcg_base64_decode(b64, strlen(b64), out, NULL), 0);
    free(k);
}

static char *b64(const void *p, size_t n)
{
    mcg_buf b = MCG_BUF_INIT;
    mcg_base64_encode(p, n, &b);
    return mcg_buf_detach(&b, NULL);
}

static int setup(void **state)
{
    (void)state;
    kval[K_ED25519] = pub_key("ed25519.pub");
    kval[K_ECDSA] = pub_key("ecdsa.pub");
    kval[K_RSA] = pub_key("rsa.pub");
    kval[K_RSA1024] = pub_key("rsa1024.pub");
    kval[K_ED25519_B64] = mcg_strdup(strchr(kval[K_ED25519], ' ') + 1);

    mcg_buf blob = MCG_BUF_INIT;
    pub_blob("ed25519.pub", &blob);
    char *t = b64(blob.ptr, blob.len - 4);
    kval[K_ED25519_TRUNC] = mcg_sprintf("ssh-ed25519 %s", t);
    free(t);
    mcg_buf_putc(&blob, 0);
    t = b64(blob.ptr, blob.len);
    kval[K_ED25519_LONG] = mcg_sprintf("ssh-ed25519 %s", t);
    free(t);
    mcg_buf_free(&blob);

    msg = slurp("message.txt", &msg_len);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < NK; i++)
        free(kval[i]);
    mcg_signers_free(all_signers);
    free(msg);
    return 0;
}

/* Replace every @NAME@ placeholder in tmpl. */
static char *expand(const char *tmpl)
{
    mcg_buf b = MCG_BUF_INIT;
    for (const char *p = tmpl; *p;) {
        int hit = -1;
        for (int i = 0; i < NK && hit < 0; i++)
            if (strncmp(p, knames[i], strlen(knames[i])) == 0)
                hit = i;
        if (hit >= 0) {
            mcg_buf_puts(&b, kval[hit]);
            p += strlen(knames[hit]);
        } else {
            mcg_buf_putc(&b, *p++);
        }
    }
    return mcg_buf_detach(&b, NULL);
}

static mcg_signers *signers_of(const char *tmpl)
{
    char *text = expand(tmpl);
    mcg_signers *s = NULL;
    mcg_err err = {0, ""};
    if (mcg_signers_parse(&s, "t", text, strlen(text), &err) != 0)
        fail_msg("parse of '%s' failed: %s", text, err.msg);
    free(text);
    return s;
}

/* -------------------------------------------------- allowed_signers: good */

typedef struct good_case {
    const char *text;
    size_t count;
    const char *principals; /* of the first entry */
    const char *namespaces; /* of the first entry, NULL: none */
    int64_t valid_after, valid_before;
} good_case;

static const good_case good[] = {
    {"alice@example.com @ED25519@", 1, "alice@example.com", NULL, 0, 0},
    {"alice@example.com @ED25519@ alice's laptop key\n", 1, "alice@example.com", NULL, 0, 0},
    {"# trust root\n\n   \n\t# indented comment\n\talice @ED25519@\n", 1, "alice", NULL, 0, 0},
    {"a@x,*@example.com,!bad@example.com @ECDSA@", 1, "a@x,*@example.com,!bad@example.com", NULL, 0,
     0},
    {"\"Alice Example\" @ED25519@", 1, "Alice Example", NULL, 0, 0},
    {"alice namespaces=\"git,file\" @ED25519@", 1, "alice", "git,file", 0, 0},
    {"alice namespaces=\"g\\\"it\" @ED25519@", 1, "alice", "g\"it", 0, 0},
    {"alice  \t NameSpaces=\"git\",VALID-AFTER=\"20240101\",valid-before=\"20250101Z\"  @RSA@", 1,
     "alice", "git", 1704067200, 1735689600},
    {"alice valid-after=\"202401021530\" @ED25519@", 1, "alice", NULL, 1704209400, 0},
    {"alice valid-before=\"20240229235959UTC\" @ED25519@", 1, "alice", NULL, 0, 1709251199},
    {"alice valid-before=\"20240229235959z\" @ED25519@", 1, "alice", NULL, 0, 1709251199},
    {"alice @ED25519@\r\nbob @ECDSA@\r\ncarol @RSA@ carol\r\n", 3, "alice", NULL, 0, 0},
    {"alice @ED25519@\nalice namespaces=\"file\" @ED25519@", 2, "alice", NULL, 0, 0},
    {"", 0, NULL, NULL, 0, 0},
    {"# nothing but comments\n\n", 0, NULL, NULL, 0, 0},
    /* options ssh-keygen reads, and the FIDO ones mcgit adds */
    {"# ca\nalice cert-authority @ED25519@", 1, "alice", NULL, 0, 0},
    {"*@x Cert-Authority,namespaces=\"git\" @ECDSA@", 1, "*@x", "git", 0, 0},
    {"alice no-touch-required,verify-required @ED25519@", 1, "alice", NULL, 0, 0},
    /* keys OpenSSH reads that mcgit never trusts are kept, not refused */
    {"ok @ECDSA@\nalice @RSA1024@", 2, "ok", NULL, 0, 0},
    /* out-of-range days and seconds carry over, as mktime(3) carries them */
    {"alice valid-after=\"20230230\" @ED25519@", 1, "alice", NULL, 1677715200, 0},
    {"alice valid-after=\"20231231235960Z\" @ED25519@", 1, "alice", NULL, 1704067200, 0},
};

static void test_signers_good(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        const good_case *c = &good[i];
        char *text = expand(c->text);
        mcg_signers *s = (mcg_signers *)1;
        mcg_err err = {0, ""};
        int rc = mcg_signers_parse(&s, "t", text, strlen(text), &err);
        if (rc != 0)
            fail_msg("case %zu '%s': %s", i, c->text, err.msg);
        assert_non_null(s);
        assert_int_equal(mcg_signers_count(s), c->count);
        if (c->count) {
            assert_string_equal(s->v[0].principals, c->principals);
            if (c->namespaces)
                assert_string_equal(s->v[0].namespaces, c->namespaces);
            else
                assert_null(s->v[0].namespaces);
            assert_int_equal(s->v[0].valid_after, c->valid_after);
            assert_int_equal(s->v[0].valid_before, c->valid_before);
        }
        mcg_signers_free(s);
        free(text);
    }
}

/* --------------------------------------------------- allowed_signers: bad */

typedef struct bad_case {
    const char *text;
    const char *want; /* substring of the message, with "t:<line>:" */
} bad_case;

static const bad_case bad[] = {
    {"alice cert-authority=\"1\" @ED25519@", "t:1: option cert-authority takes no value"},
    {"alice no-touch-required,bogus @ED25519@", "t:1: unknown option 'bogus'"},
    {"alice namespaces=git @ED25519@", "t:1: value of option namespaces must be in double quotes"},
    {"alice valid-after=20240101 @ED25519@", "t:1: value of option valid-after must be in double"},
    {"alice namespaces @ED25519@", "t:1: option namespaces needs a value"},
    {"alice namespaces=\"git @ED25519@", "t:1: unterminated quote in option namespaces"},
    {"alice namespaces=\"\" @ED25519@", "t:1: option namespaces is empty"},
    {"alice namespaces=\"git\",namespaces=\"file\" @ED25519@",
     "t:1: option namespaces given twice"},
    {"alice valid-after=\"20240101\",valid-after=\"20240102\" @ED25519@",
     "t:1: option valid-after given twice"},
    {"alice namespaces=\"git\"x @ED25519@", "t:1: unexpected 'x' after option namespaces"},
    {"alice namespaces=\"git\", @ED25519@", "t:1: empty option after ','"},
    {"alice valid-after=\"2024\" @ED25519@", "t:1: invalid valid-after time '2024'"},
    {"alice valid-after=\"20230232\" @ED25519@", "t:1: invalid valid-after time"},
    {"alice valid-after=\"20230101000062\" @ED25519@", "t:1: invalid valid-after time"},
    {"alice valid-after=\"20241301\" @ED25519@", "t:1: invalid valid-after time"},
    {"alice valid-before=\"202401012460\" @ED25519@", "t:1: invalid valid-before time"},
    {"alice valid-before=\"2024010100000a\" @ED25519@", "t:1: invalid valid-before time"},
    {"alice valid-before=\"19700101Z\" @ED25519@", "t:1: invalid valid-before time"},
    {"alice valid-after=\"20250101\",valid-before=\"20240101\" @ED25519@",
     "t:1: valid-before is not later than valid-after"},
    {"alice ssh-ed25519 AAAA!!!!", "t:1: bad base64 in key: invalid base64"},
    {"alice ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI", "t:1: bad base64 in key"},
    {"alice @ED25519_TRUNC@", "t:1: ssh-ed25519 key blob is truncated"},
    {"alice @ED25519_LONG@", "t:1: ssh-ed25519 key blob has trailing data (1 bytes)"},
    {"alice ssh-rsa @ED25519_B64@", "t:1: key type mismatch: line says ssh-rsa, key blob is "
                                    "'ssh-ed25519'"},
    {"alice", "t:1: missing key"},
    {"alice   \t", "t:1: missing key"},
    {"alice namespaces=\"git\"", "t:1: missing key"},
    {"alice ssh-ed25519", "t:1: missing key after ssh-ed25519"},
    {"alice ssh-ed25519 # comment", "t:1: bad base64 in key"},
    {"alice ssh-foo AAAAB3NzaC1yc2E=", "t:1: unknown key type 'ssh-foo'"},
    {"alice namespaces=\"git\" ssh-foo AAAAB3NzaC1yc2E=", "t:1: unknown key type 'ssh-foo'"},
    {"alice ecdsa-sha2-nistp384 AAAAE2VjZHNh", "t:1: key blob is truncated"},
    {"alice ssh-ed25519-cert-v01@openssh.com AAAA", "t:1: key blob is truncated"},
    {"alice ssh-ed25519-cert-v01@openssh.com @ED25519_B64@",
     "t:1: key type mismatch: line says ssh-ed25519-cert-v01@openssh.com"},
    {"alice ssh-dss AAAAB3NzaC1kc3M=", "t:1: ssh-dss key blob is truncated"},
    {"alice ssh-xmss@openssh.com AAAAB3NzaC1kc3M=", "t:1: unknown key type 'ssh-xmss@openssh.com'"},
    {"\"alice @ED25519@", "t:1: unterminated quote in principals"},
    {"\"alice\"x @ED25519@", "t:1: unexpected text after quoted principals"},
    {"\"\" @ED25519@", "t:1: empty principals"},
    {"@ED25519@ alice@example.com", "t:1: missing principals before the key"},
    {"# 1\n# 2\n\nbob @ECDSA@\nalice bogus=\"1\" @ED25519@", "t:5: unknown option 'bogus'"},
};

static void test_signers_bad(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const bad_case *c = &bad[i];
        char *text = expand(c->text);
        mcg_signers *s = (mcg_signers *)1;
        mcg_err err = {0, ""};
        int rc = mcg_signers_parse(&s, "t", text, strlen(text), &err);
        if (rc != MCG_EINVAL || s != NULL || !strstr(err.msg, c->want))
            fail_msg("case %zu '%s': rc %d, message '%s', want '%s'", i, c->text, rc, err.msg,
                     c->want);
        free(text);
    }
}

static void test_signers_limits(void **state)
{
    (void)state;
    mcg_signers *s = NULL;
    mcg_err err = {0, ""};

    /* a NUL byte inside the text */
    static const char nul[] = "# ok\nalice\0 ssh-ed25519 AAAA\n";
    assert_int_equal(mcg_signers_parse(&s, "t", nul, sizeof(nul) - 1, &err), MCG_EINVAL);
    assert_string_equal(err.msg, "t:2: line contains a NUL byte");
    assert_null(s);

    /* principals longer than 255 bytes */
    char *long_p = mcg_calloc(1, 300);
    memset(long_p, 'a', 256);
    char *tmpl = mcg_sprintf("%s @ED25519@", long_p);
    char *text = expand(tmpl);
    assert_int_equal(mcg_signers_parse(&s, "t", text, strlen(text), &err), MCG_EINVAL);
    assert_string_equal(err.msg, "t:1: principals are longer than 255 bytes");
    free(text);
    free(tmpl);
    long_p[255] = '\0';
    tmpl = mcg_sprintf("%s @ED25519@", long_p);
    text = expand(tmpl);
    assert_int_equal(mcg_signers_parse(&s, "t", text, strlen(text), &err), 0);
    mcg_signers_free(s);
    free(text);
    free(tmpl);
    free(long_p);

    /* an over-long line */
    char *big = mcg_calloc(1, MCG_SIGNERS_MAX_LINE + 2);
    memset(big, '#', MCG_SIGNERS_MAX_LINE + 1);
    assert_int_equal(mcg_signers_parse(&s, "t", big, strlen(big), &err), MCG_EINVAL);
    assert_contains(err.msg, "t:1: line is longer than");
    free(big);

    /* the text need not be NUL-terminated: parse a prefix only */
    text = expand("alice @ED25519@\nbob @ECDSA@\n");
    size_t first = (size_t)(strchr(text, '\n') - text) + 1;
    assert_int_equal(mcg_signers_parse(&s, "t", text, first, &err), 0);
    assert_int_equal(mcg_signers_count(s), 1);
    mcg_signers_free(s);
    free(text);

    mcg_signers_free(NULL);
    assert_int_equal(mcg_signers_count(NULL), 0);
}

static void test_signers_union(void **state)
{
    (void)state;
    mcg_signers *a = signers_of("root @ECDSA@\n");
    mcg_signers *b = signers_of("alice namespaces=\"git\" @ED25519@\nbob @RSA@\n");
    mcg_signers *u = mcg_signers_union(a, b);
    assert_int_equal(mcg_signers_count(u), 3);
    assert_string_equal(u->v[0].principals, "root");
    assert_string_equal(u->v[1].principals, "alice");
    assert_string_equal(u->v[1].namespaces, "git");
    assert_string_equal(u->v[2].where, "t:2");
    mcg_signers_free(a);
    mcg_signers_free(b);

    mcg_sig_result res;
    mcg_err err = {0, ""};
    size_t sl;
    char *sig = slurp("ed25519.git.sig", &sl);
    assert_int_equal(mcg_sshsig_verify(&res, u, sig, sl, msg, msg_len, 1700000000, &err), 0);
    assert_string_equal(res.principal, "alice");
    free(sig);
    mcg_signers_free(u);

    u = mcg_signers_union(NULL, NULL);
    assert_int_equal(mcg_signers_count(u), 0);
    mcg_signers_free(u);
}

/* ------------------------------------------------------ patterns, times */

static void test_patterns(void **state)
{
    (void)state;
    static const struct {
        const char *s, *list;
        int want;
    } cases[] = {
        {"git", "git", 1},      {"git", "file", 0},
        {"git", "file,git", 1}, {"git", "g?t", 1},
        {"git", "g*", 1},       {"git", "*", 1},
        {"git", "*,!git", -1},  {"git", "!git,*", -1},
        {"git", "!file", 0},    {"git", "!file,*", 1},
        {"git", "gi", 0},       {"git", "gitx", 0},
        {"git", "*t*", 1},      {"git", "**g**i**t**", 1},
        {"git", "?", 0},        {"git", "???", 1},
        {"", "*", 1},           {"git", ",git", 1},
        {"a@b.c", "*@b.c", 1},  {"a@b.c", "*@*.d", 0},
        {"aaab", "*a*ab", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (mcg_trust_match_list(cases[i].s, cases[i].list) != cases[i].want)
            fail_msg("match '%s' in '%s': want %d", cases[i].s, cases[i].list, cases[i].want);
}

static void test_fmt_time(void **state)
{
    (void)state;
    char b[32];
    mcg_time_iso(b, 0);
    assert_string_equal(b, "1970-01-01T00:00:00Z");
    mcg_time_iso(b, 951782400);
    assert_string_equal(b, "2000-02-29T00:00:00Z");
    mcg_time_iso(b, 1709251199);
    assert_string_equal(b, "2024-02-29T23:59:59Z");
    mcg_time_iso(b, -1);
    assert_string_equal(b, "1969-12-31T23:59:59Z");
    mcg_time_iso(b, 253402300799);
    assert_string_equal(b, "9999-12-31T23:59:59Z");
}

/* ------------------------------------------------------- fingerprints */

static void test_fingerprints(void **state)
{
    (void)state;
    static const char *const keys[] = {"ed25519", "ecdsa", "rsa"};
    for (size_t i = 0; i < 3; i++) {
        char f[64], fp[64], want[64];
        snprintf(f, sizeof(f), "%s.fp", keys[i]);
        char *line = slurp(f, NULL);
        assert_int_equal(sscanf(line, "%*s %63s", want), 1); /* "256 SHA256:... comment (T)" */
        free(line);
        mcg_buf blob = MCG_BUF_INIT;
        snprintf(f, sizeof(f), "%s.pub", keys[i]);
        pub_blob(f, &blob);
        mcg_ssh_fingerprint((const unsigned char *)blob.ptr, blob.len, fp);
        assert_string_equal(fp, want);
        assert_int_equal(strlen(fp), 50);
        mcg_buf_free(&blob);
    }
    char fp[64];
    mcg_ssh_fingerprint(NULL, 0, fp); /* SHA-256 of nothing */
    assert_string_equal(fp, "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU");
}

/* -------------------------------------------------------- verification */

static const char *const ALL = "alice@example.com @ED25519@\n"
                               "bob@example.com @ECDSA@\n"
                               "carol@example.com,c@example.org @RSA@\n";

static const char *fp_of(const char *key, char out[64])
{
    char f[64];
    snprintf(f, sizeof(f), "%s.fp", key);
    char *line = slurp(f, NULL);
    assert_int_equal(sscanf(line, "%*s %63s", out), 1);
    free(line);
    return out;
}

/* Verify fixture sig with signers text at time when; returns rc, message in err. */
static int verify_fixture(const char *sigfile, const char *signers, int64_t when,
                          mcg_sig_result *res, mcg_err *err)
{
    mcg_signers *s = signers ? signers_of(signers) : NULL;
    size_t sl;
    char *sig = slurp(sigfile, &sl);
    int rc = mcg_sshsig_verify(res, s, sig, sl, msg, msg_len, when, err);
    free(sig);
    mcg_signers_free(s);
    return rc;
}

static void test_verify_each_key_type(void **state)
{
    (void)state;
    static const struct {
        const char *sig, *key, *type, *principal;
    } cases[] = {
        {"ed25519.git.sig", "ed25519", "ssh-ed25519", "alice@example.com"},
        {"ed25519.git-sha256.sig", "ed25519", "ssh-ed25519", "alice@example.com"},
        {"ecdsa.git.sig", "ecdsa", "ecdsa-sha2-nistp256", "bob@example.com"},
        {"ecdsa.git-sha256.sig", "ecdsa", "ecdsa-sha2-nistp256", "bob@example.com"},
        {"rsa.git.sig", "rsa", "ssh-rsa", "carol@example.com,c@example.org"},
        {"rsa.git-sha256.sig", "rsa", "ssh-rsa", "carol@example.com,c@example.org"},
        {"rsa.rsa-sha2-256.sig", "rsa", "ssh-rsa", "carol@example.com,c@example.org"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        mcg_sig_result res;
        mcg_err err = {0, ""};
        char fp[64];
        if (verify_fixture(cases[i].sig, ALL, 1700000000, &res, &err) != 0)
            fail_msg("%s: %s", cases[i].sig, err.msg);
        assert_string_equal(res.principal, cases[i].principal);
        assert_string_equal(res.keytype, cases[i].type);
        assert_string_equal(res.fingerprint, fp_of(cases[i].key, fp));
    }
}

static void test_verify_git_commit(void **state)
{
    (void)state;
    size_t pl, sl;
    char *payload = slurp("commit.payload", &pl);
    char *sig = slurp("commit.sig", &sl);
    char *when = slurp("commit.time", NULL);
    mcg_signers *s = signers_of("alice@example.com @ED25519@");
    mcg_sig_result res;
    mcg_err err = {0, ""};

    int rc = mcg_sshsig_verify(&res, s, sig, sl, payload, pl, atoll(when), &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    assert_string_equal(res.principal, "alice@example.com");

    /* with the final newline git itself keeps */
    char *sig_nl = mcg_sprintf("%s\n", sig);
    assert_int_equal(mcg_sshsig_verify(&res, s, sig_nl, sl + 1, payload, pl, 0, &err), 0);
    free(sig_nl);

    /* the commit with one byte of its message changed */
    payload[pl - 2] ^= 1;
    assert_int_equal(mcg_sshsig_verify(&res, s, sig, sl, payload, pl, 0, &err), MCG_ETRUST);
    assert_contains(err.msg, "signature does not verify (key SHA256:");

    mcg_signers_free(s);
    free(payload);
    free(sig);
    free(when);
}

static void test_verify_refusals(void **state)
{
    (void)state;
    mcg_sig_result res;
    mcg_err err = {0, ""};
    char fp[64], want[256];

    /* SHA-1 RSA signatures */
    assert_int_equal(verify_fixture("rsa.ssh-rsa.sig", ALL, 0, &res, &err), MCG_ETRUST);
    assert_string_equal(err.msg, "signature uses unsupported algorithm ssh-rsa (SHA-1)");

    /* another namespace; the key is still named */
    assert_int_equal(verify_fixture("ed25519.file.sig", ALL, 0, &res, &err), MCG_ETRUST);
    assert_string_equal(err.msg, "signature namespace is 'file', not 'git'");
    assert_string_equal(res.fingerprint, fp_of("ed25519", fp));
    assert_string_equal(res.keytype, "ssh-ed25519");
    assert_string_equal(res.principal, "");

    /* key not in the set, or an empty / NULL set */
    assert_int_equal(verify_fixture("ed25519.git.sig", "bob @ECDSA@", 0, &res, &err), MCG_ETRUST);
    snprintf(want, sizeof(want), "key %s is not in allowed signers", fp_of("ed25519", fp));
    assert_string_equal(err.msg, want);
    assert_string_equal(res.fingerprint, fp);
    assert_int_equal(verify_fixture("ed25519.git.sig", "", 0, &res, &err), MCG_ETRUST);
    assert_string_equal(err.msg, want);
    assert_int_equal(verify_fixture("ed25519.git.sig", NULL, 0, &res, &err), MCG_ETRUST);
    assert_string_equal(err.msg, want);

    /* the message altered, for each key type */
    static const char *const sigs[] = {"ed25519.git.sig", "ecdsa.git.sig", "rsa.git.sig",
                                       "rsa.rsa-sha2-256.sig", "ecdsa.git-sha256.sig"};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        msg[10] ^= 0x20;
        int rc = verify_fixture(sigs[i], ALL, 0, &res, &err);
        msg[10] ^= 0x20;
        assert_int_equal(rc, MCG_ETRUST);
        assert_contains(err.msg, "signature does not verify (key SHA256:");
        assert_string_equal(res.principal, "");
    }
    /* a truncated and an empty message */
    size_t keep = msg_len;
    msg_len--;
    assert_int_equal(verify_fixture("ed25519.git.sig", ALL, 0, &res, &err), MCG_ETRUST);
    msg_len = keep;
    size_t sl;
    char *sig = slurp("ecdsa.git.sig", &sl);
    mcg_signers *s = signers_of(ALL);
    assert_int_equal(mcg_sshsig_verify(&res, s, sig, sl, NULL, 0, 0, &err), MCG_ETRUST);
    assert_contains(err.msg, "signature does not verify");
    mcg_signers_free(s);
    free(sig);
}

static void test_verify_policy(void **state)
{
    (void)state;
    static const struct {
        const char *signers;
        int64_t when;
        const char *want; /* NULL: accepted; else a substring of the message */
    } cases[] = {
        {"a valid-after=\"20240101Z\" @ED25519@", 1704067200, NULL},
        {"a valid-after=\"20240101Z\" @ED25519@", 1704067199,
         "is not valid at 2023-12-31T23:59:59Z (valid-after 2024-01-01T00:00:00Z, t:1)"},
        {"a valid-before=\"20240101\" @ED25519@", 1704067200, NULL},
        {"a valid-before=\"20240101\" @ED25519@", 1704067201,
         "is not valid at 2024-01-01T00:00:01Z (valid-before 2024-01-01T00:00:00Z, t:1)"},
        {"a valid-after=\"20230101\",valid-before=\"20240101\" @ED25519@", 1700000000, NULL},
        {"a valid-after=\"20230101\",valid-before=\"20240101\" @ED25519@", 1600000000,
         "(valid-after 2023-01-01T00:00:00Z, t:1)"},
        {"a namespaces=\"file\" @ED25519@", 0, "is not allowed for namespace git (t:1)"},
        {"a namespaces=\"*,!git\" @ED25519@", 0, "is not allowed for namespace git (t:1)"},
        {"a namespaces=\"file,git\" @ED25519@", 0, NULL},
        {"a namespaces=\"g?t\" @ED25519@", 0, NULL},
        {"a namespaces=\"*\" @ED25519@", 0, NULL},
        /* the first line holding the key that permits it wins; else the first refusal */
        {"x @ECDSA@\na namespaces=\"file\" @ED25519@\nb valid-before=\"20000101\" @ED25519@\n"
         "c @ED25519@",
         1700000000, NULL},
        {"a namespaces=\"file\" @ED25519@\nb valid-before=\"20000101\" @ED25519@", 1700000000,
         "is not allowed for namespace git (t:1)"},
        {"b valid-before=\"20000101\" @ED25519@\na namespaces=\"file\" @ED25519@", 1700000000,
         "(valid-before 2000-01-01T00:00:00Z, t:1)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        mcg_sig_result res;
        mcg_err err = {0, ""};
        int rc = verify_fixture("ed25519.git.sig", cases[i].signers, cases[i].when, &res, &err);
        if (!cases[i].want) {
            if (rc != 0)
                fail_msg("case %zu: %s", i, err.msg);
            if (i == 11)
                assert_string_equal(res.principal, "c");
        } else if (rc != MCG_ETRUST || !strstr(err.msg, cases[i].want)) {
            fail_msg("case %zu: rc %d '%s', want '%s'", i, rc, err.msg, cases[i].want);
        }
    }
}

/*
 * A memo of signatures checked ahead of time: it spares only the
 * cryptography. Policy still applies, a different message misses it, and
 * only signatures that verified get a digest.
 */
static void test_memo(void **state)
{
    (void)state;
    static const char *const sigs[] = {"ed25519.git.sig", "ecdsa.git.sig", "rsa.git.sig",
                                       "rsa.rsa-sha2-256.sig"};
    unsigned char d[4][MCG_SIGMEMO_DIGEST], twice[2][MCG_SIGMEMO_DIGEST];
    mcg_signers *all = signers_of(ALL);
    for (size_t i = 0; i < 4; i++) {
        size_t sl;
        char *sig = slurp(sigs[i], &sl);
        if (mcg_sshsig_check(d[i], sig, sl, msg, msg_len) != 0)
            fail_msg("%s: check refused a good signature", sigs[i]);
        /* the digest is a function of the signature and message alone */
        assert_int_equal(mcg_sshsig_check(twice[0], sig, sl, msg, msg_len), 0);
        assert_memory_equal(twice[0], d[i], MCG_SIGMEMO_DIGEST);
        /* another message: no digest */
        char *other = mcg_malloc(msg_len);
        memcpy(other, msg, msg_len);
        other[0] ^= 1;
        assert_int_equal(mcg_sshsig_check(twice[1], sig, sl, other, msg_len), MCG_ETRUST);
        free(other);
        free(sig);
    }
    assert_int_equal(mcg_sshsig_check(twice[0], "garbage", 7, msg, msg_len), MCG_ETRUST);

    memcpy(twice[0], d[0], MCG_SIGMEMO_DIGEST);
    memcpy(twice[1], d[0], MCG_SIGMEMO_DIGEST);
    mcg_sigmemo *dup = mcg_sigmemo_new((const unsigned char(*)[MCG_SIGMEMO_DIGEST])twice, 2);
    assert_int_equal(mcg_sigmemo_count(dup), 1);
    mcg_sigmemo_free(dup);
    assert_int_equal(mcg_sigmemo_count(NULL), 0);

    mcg_sigmemo *memo = mcg_sigmemo_new((const unsigned char(*)[MCG_SIGMEMO_DIGEST])d, 4);
    assert_int_equal(mcg_sigmemo_count(memo), 4);
    size_t sl;
    char *sig = slurp("ed25519.git.sig", &sl);
    mcg_sig_result res, plain;
    mcg_err err = {0, ""}, perr = {0, ""};
    /* a hit: the same verdict and signer as without the memo */
    assert_int_equal(mcg_sshsig_verify_memo(&res, all, memo, sig, sl, msg, msg_len, 0, &err), 0);
    assert_int_equal(mcg_sshsig_verify(&plain, all, sig, sl, msg, msg_len, 0, &perr), 0);
    assert_string_equal(res.principal, plain.principal);
    assert_string_equal(res.fingerprint, plain.fingerprint);
    /* policy is never skipped */
    static const struct {
        const char *signers;
        int64_t when;
        const char *want;
    } refused[] = {
        {"bob @ECDSA@", 0, "is not in allowed signers"},
        {"a namespaces=\"file\" @ED25519@", 0, "is not allowed for namespace git (t:1)"},
        {"a valid-before=\"20000101\" @ED25519@", 1700000000, "is not valid at"},
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        mcg_signers *s = signers_of(refused[i].signers);
        int rc =
            mcg_sshsig_verify_memo(&res, s, memo, sig, sl, msg, msg_len, refused[i].when, &err);
        if (rc != MCG_ETRUST || !strstr(err.msg, refused[i].want))
            fail_msg("case %zu: rc %d '%s', want '%s'", i, rc, err.msg, refused[i].want);
        mcg_signers_free(s);
    }
    /* a tampered message misses the memo and fails the cryptography, as without it */
    char *other = mcg_malloc(msg_len);
    memcpy(other, msg, msg_len);
    other[msg_len - 1] ^= 1;
    assert_int_equal(mcg_sshsig_verify_memo(&res, all, memo, sig, sl, other, msg_len, 0, &err),
                     MCG_ETRUST);
    assert_contains(err.msg, "signature does not verify");
    free(other);
    free(sig);
    mcg_sigmemo_free(memo);
    mcg_signers_free(all);
}

/* ---------------------------------------------------- malformed input */

/* Decoded blob of an armored fixture signature. */
static void fixture_blob(const char *file, mcg_buf *out)
{
    size_t sl;
    char *sig = slurp(file, &sl);
    mcg_buf b = MCG_BUF_INIT;
    for (char *p = strchr(sig, '\n') + 1; *p != '-'; p = strchr(p, '\n') + 1)
        mcg_buf_put(&b, p, (size_t)(strchr(p, '\n') - p));
    assert_int_equal(mcg_base64_decode(b.ptr, b.len, out, NULL), 0);
    mcg_buf_free(&b);
    free(sig);
}

/* Armor a blob as ssh-keygen does (70-column lines). */
static char *armor(const void *blob, size_t len)
{
    mcg_buf b = MCG_BUF_INIT, out = MCG_BUF_INIT;
    mcg_base64_encode(blob, len, &b);
    mcg_buf_puts(&out, "-----BEGIN SSH SIGNATURE-----\n");
    for (size_t i = 0; i < b.len; i += 70) {
        mcg_buf_put(&out, b.ptr + i, b.len - i < 70 ? b.len - i : 70);
        mcg_buf_putc(&out, '\n');
    }
    mcg_buf_puts(&out, "-----END SSH SIGNATURE-----\n");
    mcg_buf_free(&b);
    return mcg_buf_detach(&out, NULL);
}

static int verify_blob(const void *blob, size_t len, mcg_sig_result *res, mcg_err *err)
{
    char *a = armor(blob, len);
    if (!all_signers)
        all_signers = signers_of(ALL);
    int rc = mcg_sshsig_verify(res, all_signers, a, strlen(a), msg, msg_len, 0, err);
    free(a);
    return rc;
}

static int verify_armor(const char *a, mcg_err *err)
{
    mcg_sig_result res;
    mcg_signers *s = signers_of(ALL);
    int rc = mcg_sshsig_verify(&res, s, a, strlen(a), msg, msg_len, 0, err);
    mcg_signers_free(s);
    return rc;
}

static void put_str(mcg_buf *b, const void *s, size_t n)
{
    unsigned char l[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                          (unsigned char)(n >> 8), (unsigned char)n};
    mcg_buf_put(b, l, 4);
    mcg_buf_put(b, s, n);
}

/* The fields of a fixture signature, to re-encode with changes. */
typedef struct fields {
    mcg_buf blob;
    const unsigned char *pub, *ns, *res, *halg, *sigtype, *sig;
    size_t pub_n, ns_n, res_n, halg_n, sigtype_n, sig_n;
} fields;

static void split(const char *file, fields *f)
{
    memset(f, 0, sizeof(*f));
    fixture_blob(file, &f->blob);
    mcg_wire w = {(const unsigned char *)f->blob.ptr + 10, f->blob.len - 10};
    const unsigned char *inner;
    size_t inner_n;
    assert_true(mcg_wire_string(&w, &f->pub, &f->pub_n));
    assert_true(mcg_wire_string(&w, &f->ns, &f->ns_n));
    assert_true(mcg_wire_string(&w, &f->res, &f->res_n));
    assert_true(mcg_wire_string(&w, &f->halg, &f->halg_n));
    assert_true(mcg_wire_string(&w, &inner, &inner_n));
    mcg_wire iw = {inner, inner_n};
    assert_true(mcg_wire_string(&iw, &f->sigtype, &f->sigtype_n));
    assert_true(mcg_wire_string(&iw, &f->sig, &f->sig_n));
}

/* Re-encode f; NULL arguments keep the fixture's field. */
static void join(const fields *f, mcg_buf *out, const char *ns, const char *halg,
                 const char *sigtype, const void *sig, size_t sig_n, const void *pub, size_t pub_n)
{
    mcg_buf inner = MCG_BUF_INIT;
    put_str(&inner, sigtype ? (const void *)sigtype : f->sigtype,
            sigtype ? strlen(sigtype) : f->sigtype_n);
    put_str(&inner, sig ? sig : f->sig, sig ? sig_n : f->sig_n);
    mcg_buf_put(out, "SSHSIG\0\0\0\1", 10);
    put_str(out, pub ? pub : f->pub, pub ? pub_n : f->pub_n);
    put_str(out, ns ? (const void *)ns : f->ns, ns ? strlen(ns) : f->ns_n);
    put_str(out, f->res, f->res_n);
    put_str(out, halg ? (const void *)halg : f->halg, halg ? strlen(halg) : f->halg_n);
    put_str(out, inner.ptr, inner.len);
    mcg_buf_free(&inner);
}

static void test_malformed_armor(void **state)
{
    (void)state;
    static const struct {
        const char *from, *to, *want;
    } edits[] = {
        {"-----BEGIN SSH SIGNATURE-----", "-----BEGIN PGP SIGNATURE-----",
         "signature is malformed: missing BEGIN SSH SIGNATURE line"},
        {"-----END SSH SIGNATURE-----", "-----END SSH SIGNATUR------",
         "signature is malformed: missing END SSH SIGNATURE line"},
        {"-----END SSH SIGNATURE-----\n", "-----END SSH SIGNATURE-----\n\n",
         "signature is malformed: missing END SSH SIGNATURE line"},
        {"-----END SSH SIGNATURE-----\n", "-----END SSH SIGNATURE-----\ntrailer\n",
         "signature is malformed: missing END SSH SIGNATURE line"},
        {"U1NIU0lH", "U1NI!0lH", "signature is malformed: invalid base64"},
        {"U1NIU0lH", "U1NIU0l", "signature is malformed: invalid base64"},
        {"\n-----END SSH", "\n\n-----END SSH",
         "signature is malformed: empty line inside the armor"},
        {"-----\nU1NIU0lH", "-----\n\nU1NIU0lH",
         "signature is malformed: empty line inside the armor"},
        {"U1NIU0lH", " U1NIU0lH", "signature is malformed: invalid base64"},
        {"U1NIU0lH", "U1NIU0lH\r", "signature is malformed: invalid base64"},
        {"-----BEGIN SSH SIGNATURE-----\n", "-----BEGIN SSH SIGNATURE-----\r\n",
         "signature is malformed: missing BEGIN SSH SIGNATURE line"},
    };
    size_t sl;
    char *sig = slurp("ed25519.git.sig", &sl);
    mcg_err err = {0, ""};
    assert_int_equal(verify_armor(sig, &err), 0);
    for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
        char *at = strstr(sig, edits[i].from);
        assert_non_null(at);
        char *edited =
            mcg_sprintf("%.*s%s%s", (int)(at - sig), sig, edits[i].to, at + strlen(edits[i].from));
        int rc = verify_armor(edited, &err);
        if (rc != MCG_ETRUST || !strstr(err.msg, edits[i].want))
            fail_msg("edit %zu: rc %d '%s', want '%s'", i, rc, err.msg, edits[i].want);
        free(edited);
    }
    /* every truncation of the armored text is refused without a crash */
    for (size_t n = 0; n < sl - 1; n++) {
        mcg_sig_result res;
        mcg_signers *s = signers_of(ALL);
        char *cut = mcg_strndup(sig, n);
        assert_int_equal(mcg_sshsig_verify(&res, s, cut, n, msg, msg_len, 0, &err), MCG_ETRUST);
        assert_contains(err.msg, "signature is malformed: ");
        free(cut);
        mcg_signers_free(s);
    }
    mcg_sig_result res;
    assert_int_equal(mcg_sshsig_verify(&res, NULL, NULL, 0, msg, msg_len, 0, &err), MCG_ETRUST);
    /* an empty armor, and an over-large one */
    assert_int_equal(
        verify_armor("-----BEGIN SSH SIGNATURE-----\n-----END SSH SIGNATURE-----\n", &err),
        MCG_ETRUST);
    assert_string_equal(err.msg, "signature is malformed: no data inside the armor");
    char *huge = mcg_calloc(1, MCG_SSHSIG_MAX_ARMOR + 2);
    memset(huge, 'A', MCG_SSHSIG_MAX_ARMOR + 1);
    assert_int_equal(verify_armor(huge, &err), MCG_ETRUST);
    assert_string_equal(err.msg, "signature is malformed: armored signature is too large");
    free(huge);
    free(sig);
}

static void test_malformed_blob(void **state)
{
    (void)state;
    mcg_sig_result res;
    mcg_err err = {0, ""};
    mcg_buf b = MCG_BUF_INIT;

    fixture_blob("ed25519.git.sig", &b);
    assert_int_equal(verify_blob(b.ptr, b.len, &res, &err), 0);

    /* wrong magic */
    b.ptr[0] = 'X';
    assert_int_equal(verify_blob(b.ptr, b.len, &res, &err), MCG_ETRUST);
    assert_string_equal(err.msg, "signature is malformed: bad magic (not an SSHSIG blob)");
    b.ptr[0] = 'S';
    /* version 2 */
    b.ptr[9] = 2;
    assert_int_equal(verify_blob(b.ptr, b.len, &res, &err), MCG_ETRUST);
    assert_string_equal(err.msg, "signature is malformed: version 2 is not supported");
    b.ptr[9] = 1;
    /* trailing data */
    mcg_buf_putc(&b, 0);
    assert_int_equal(verify_blob(b.ptr, b.len, &res, &err), MCG_ETRUST);
    assert_string_equal(err.msg,
                        "signature is malformed: trailing data after the signature (1 bytes)");
    b.len--;
    /* every truncation of the blob */
    for (size_t n = 0; n < b.len; n++) {
        assert_int_equal(verify_blob(b.ptr, n, &res, &err), MCG_ETRUST);
        if (!strstr(err.msg, "signature is malformed: "))
            fail_msg("truncated to %zu: '%s'", n, err.msg);
    }
    mcg_buf_free(&b);

    /* every single-bit change of each key type's blob is refused */
    static const char *const sigs[] = {"ed25519.git.sig", "ecdsa.git.sig", "rsa.git.sig"};
    for (size_t i = 0; i < 3; i++) {
        fixture_blob(sigs[i], &b);
        for (size_t pos = 0; pos < b.len; pos++) {
            for (int bit = 0; bit < 8; bit += (i == 2 ? 7 : 1)) {
                b.ptr[pos] ^= (char)(1 << bit);
                if (verify_blob(b.ptr, b.len, &res, &err) != MCG_ETRUST)
                    fail_msg("%s: flipping bit %d of byte %zu was accepted", sigs[i], bit, pos);
                b.ptr[pos] ^= (char)(1 << bit);
            }
        }
        mcg_buf_free(&b);
    }
}

static void test_malformed_fields(void **state)
{
    (void)state;
    fields ed, ec, rsa;
    mcg_sig_result res;
    mcg_err err = {0, ""};
    mcg_buf b = MCG_BUF_INIT, small = MCG_BUF_INIT;
    unsigned char sig[600];

    split("ed25519.git.sig", &ed);
    split("ecdsa.git.sig", &ec);
    split("rsa.git.sig", &rsa);

#define CHECK(want)                                                                                \
    do {                                                                                           \
        int rc_ = verify_blob(b.ptr, b.len, &res, &err);                                           \
        if (rc_ != MCG_ETRUST || strcmp(err.msg, want) != 0)                                       \
            fail_msg("line %d: rc %d '%s', want '%s'", __LINE__, rc_, err.msg, want);              \
        mcg_buf_free(&b);                                                                          \
    } while (0)

    /* re-encoding unchanged still verifies */
    join(&ed, &b, NULL, NULL, NULL, NULL, 0, NULL, 0);
    assert_int_equal(verify_blob(b.ptr, b.len, &res, &err), 0);
    mcg_buf_free(&b);

    join(&ed, &b, "gitx", NULL, NULL, NULL, 0, NULL, 0);
    CHECK("signature namespace is 'gitx', not 'git'");
    join(&ed, &b, "", NULL, NULL, NULL, 0, NULL, 0);
    CHECK("signature namespace is '', not 'git'");
    join(&ed, &b, "git\n\x01", NULL, NULL, NULL, 0, NULL, 0);
    CHECK("signature namespace is 'git?\?', not 'git'");
    join(&ed, &b, NULL, "sha1", NULL, NULL, 0, NULL, 0);
    CHECK("signature uses unsupported hash algorithm 'sha1'");
    join(&ed, &b, NULL, "SHA512", NULL, NULL, 0, NULL, 0);
    CHECK("signature uses unsupported hash algorithm 'SHA512'");

    /* wrong lengths and types in the inner signature */
    join(&ed, &b, NULL, NULL, NULL, ed.sig, 63, NULL, 0);
    CHECK("signature is malformed: ssh-ed25519 signature is 63 bytes, not 64");
    memcpy(sig, ed.sig, 64);
    sig[64] = 0;
    join(&ed, &b, NULL, NULL, NULL, sig, 65, NULL, 0);
    CHECK("signature is malformed: ssh-ed25519 signature is 65 bytes, not 64");
    join(&ed, &b, NULL, NULL, "ssh-rsa", NULL, 0, NULL, 0);
    CHECK("signature is malformed: signature type 'ssh-rsa' for a ssh-ed25519 key");
    join(&ec, &b, NULL, NULL, "ecdsa-sha2-nistp384", NULL, 0, NULL, 0);
    CHECK("signature is malformed: signature type 'ecdsa-sha2-nistp384' for a "
          "ecdsa-sha2-nistp256 key");
    join(&rsa, &b, NULL, NULL, "rsa-sha2-384", NULL, 0, NULL, 0);
    CHECK("signature is malformed: signature type 'rsa-sha2-384' for an ssh-rsa key");
    join(&rsa, &b, NULL, NULL, NULL, rsa.sig, 0, NULL, 0);
    CHECK("signature is malformed: RSA signature is 0 bytes for a 384-byte modulus");
    assert_true(rsa.sig_n == 384);
    memcpy(sig + 1, rsa.sig, 384);
    sig[0] = 0;
    join(&rsa, &b, NULL, NULL, NULL, sig, 385, NULL, 0);
    CHECK("signature is malformed: RSA signature is 385 bytes for a 384-byte modulus");
    /* an RSA signature with a leading zero byte stripped is padded back, as OpenSSH does */
    if (rsa.sig[0] == 0) {
        join(&rsa, &b, NULL, NULL, NULL, rsa.sig + 1, 383, NULL, 0);
        assert_int_equal(verify_blob(b.ptr, b.len, &res, &err), 0);
        mcg_buf_free(&b);
    }

    /* ECDSA r, s: trailing data, non-canonical mpints, oversized */
    memcpy(sig, ec.sig, ec.sig_n);
    sig[ec.sig_n] = 0;
    join(&ec, &b, NULL, NULL, NULL, sig, ec.sig_n + 1, NULL, 0);
    CHECK("signature is malformed: bad ecdsa-sha2-nistp256 signature encoding");
    {
        mcg_wire w = {ec.sig, ec.sig_n};
        const unsigned char *r, *s;
        size_t rn = 0, sn = 0;
        assert_true(mcg_wire_string(&w, &r, &rn) && mcg_wire_string(&w, &s, &sn));
        mcg_buf rs = MCG_BUF_INIT;
        unsigned char z[40] = {0};
        memcpy(z + 1, r, rn); /* r with a needless leading zero */
        put_str(&rs, z, rn + 1);
        put_str(&rs, s, sn);
        join(&ec, &b, NULL, NULL, NULL, rs.ptr, rs.len, NULL, 0);
        CHECK("signature is malformed: bad ecdsa-sha2-nistp256 signature encoding");
        rs.len = 0;
        memset(z, 0x01, sizeof(z)); /* r of 34 bytes */
        put_str(&rs, z, 34);
        put_str(&rs, s, sn);
        join(&ec, &b, NULL, NULL, NULL, rs.ptr, rs.len, NULL, 0);
        CHECK("signature is malformed: bad ecdsa-sha2-nistp256 signature encoding");
        rs.len = 0;
        put_str(&rs, r, rn);
        join(&ec, &b, NULL, NULL, NULL, rs.ptr, rs.len, NULL, 0);
        CHECK("signature is malformed: bad ecdsa-sha2-nistp256 signature encoding");
        mcg_buf_free(&rs);
    }

    /* the inner signature itself truncated or padded */
    {
        mcg_buf inner = MCG_BUF_INIT;
        put_str(&inner, ed.sigtype, ed.sigtype_n);
        put_str(&inner, ed.sig, ed.sig_n);
        mcg_buf_putc(&inner, 0);
        mcg_buf_put(&b, "SSHSIG\0\0\0\1", 10);
        put_str(&b, ed.pub, ed.pub_n);
        put_str(&b, "git", 3);
        put_str(&b, "", 0);
        put_str(&b, ed.halg, ed.halg_n);
        put_str(&b, inner.ptr, inner.len);
        mcg_buf_free(&inner);
        CHECK("signature is malformed: bad encoding of the signature field");
    }

    /* public keys mcgit does not accept inside the signature */
    pub_blob("rsa1024.pub", &small);
    join(&rsa, &b, NULL, NULL, NULL, NULL, 0, small.ptr, small.len);
    CHECK("signature key is refused: ssh-rsa keys under 2048 bits are not trusted");
    mcg_buf_free(&small);
    {
        mcg_buf k = MCG_BUF_INIT;
        put_str(&k, "sk-ssh-ed25519@openssh.com", 26);
        put_str(&k, ed.pub + 15, 32);
        put_str(&k, "ssh:", 4);
        join(&ed, &b, NULL, NULL, NULL, NULL, 0, k.ptr, k.len);
        /* an sk key with a plain ed25519 signature value: no flags and counter */
        CHECK("signature is malformed: bad encoding of the signature field");
        mcg_buf_free(&k);
        /* DSA: read, never trusted */
        put_str(&k, "ssh-dss", 7);
        for (int i = 0; i < 4; i++)
            put_str(&k, "\x05", 1);
        join(&ed, &b, NULL, NULL, NULL, NULL, 0, k.ptr, k.len);
        CHECK("signature key is refused: ssh-dss (DSA) keys are not supported");
        mcg_buf_free(&k);
        /* a type OpenSSH does not know */
        put_str(&k, "ssh-foo", 7);
        join(&ed, &b, NULL, NULL, NULL, NULL, 0, k.ptr, k.len);
        CHECK("signature key is refused: key type 'ssh-foo' is not supported");
        mcg_buf_free(&k);
        /* an even RSA modulus */
        mcg_buf_put(&k, rsa.pub, rsa.pub_n);
        k.ptr[k.len - 1] ^= 1;
        join(&rsa, &b, NULL, NULL, NULL, NULL, 0, k.ptr, k.len);
        CHECK("signature key is refused: ssh-rsa modulus is even");
        mcg_buf_free(&k);
        /* an ecdsa point that is not on the curve */
        mcg_buf_put(&k, ec.pub, ec.pub_n);
        k.ptr[k.len - 1] ^= 1;
        join(&ec, &b, NULL, NULL, NULL, NULL, 0, k.ptr, k.len);
        CHECK("signature key is refused: ecdsa-sha2-nistp256 public key is invalid");
        mcg_buf_free(&k);
    }
    /* a genuine signature by the same key, but over the sha256 digest */
    fields ec256;
    split("ecdsa.git-sha256.sig", &ec256);
    join(&ec, &b, NULL, NULL, NULL, ec256.sig, ec256.sig_n, NULL, 0);
    assert_int_equal(verify_blob(b.ptr, b.len, &res, &err), MCG_ETRUST);
    assert_contains(err.msg, "signature does not verify (key SHA256:");
    mcg_buf_free(&b);
    mcg_buf_free(&ec256.blob);
#undef CHECK

    mcg_buf_free(&ed.blob);
    mcg_buf_free(&ec.blob);
    mcg_buf_free(&rsa.blob);
}

/* ------------------------------------- key types, certificates, revocation */

/*
 * Keys made in the test itself (libsodium and OpenSSL), for what ssh-keygen
 * cannot make here: sk- keys need a FIDO token, so their signatures are
 * built as PROTOCOL.u2f lays them out (SHA-256 of the application, flags,
 * counter, SHA-256 of the data) and signed as the token would. The same
 * helpers build OpenSSH certificates (PROTOCOL.certkeys) and KRLs
 * (PROTOCOL.krl). Real ssh-keygen keys, certificates and KRLs are covered by
 * tests/integration/test_trust_parity.sh and test_revoked.sh.
 */
typedef struct tkey {
    const char *type; /* ssh name */
    int bits;         /* ecdsa */
    bool sk, ed;
    unsigned char pk[32], sk_[64];
    EVP_PKEY *ec;
    mcg_buf blob; /* public key blob */
} tkey;

static void put_u32b(mcg_buf *b, uint32_t v)
{
    unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    mcg_buf_put(b, x, 4);
}

static void put_u64b(mcg_buf *b, uint64_t v)
{
    put_u32b(b, (uint32_t)(v >> 32));
    put_u32b(b, (uint32_t)v);
}

static void put_cstr(mcg_buf *b, const char *s)
{
    put_str(b, s, strlen(s));
}

static void put_mpint(mcg_buf *b, const BIGNUM *n)
{
    unsigned char m[80];
    int len = BN_bn2bin(n, m + 1);
    m[0] = 0;
    bool pad = len > 0 && (m[1] & 0x80);
    put_str(b, pad ? m : m + 1, (size_t)len + pad);
}

static void tkey_new(tkey *k, const char *type)
{
    memset(k, 0, sizeof(*k));
    k->type = type;
    k->sk = strncmp(type, "sk-", 3) == 0;
    k->ed = strstr(type, "ed25519") != NULL;
    put_cstr(&k->blob, type);
    if (k->ed) {
        crypto_sign_keypair(k->pk, k->sk_);
        put_str(&k->blob, k->pk, 32);
    } else {
        k->bits = strstr(type, "384") ? 384 : strstr(type, "521") ? 521 : 256;
        const char *curve = k->bits == 256 ? "P-256" : k->bits == 384 ? "P-384" : "P-521";
        k->ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", curve);
        assert_non_null(k->ec);
        unsigned char pt[200];
        size_t n = 0;
        assert_int_equal(
            EVP_PKEY_get_octet_string_param(k->ec, OSSL_PKEY_PARAM_PUB_KEY, pt, sizeof(pt), &n), 1);
        put_cstr(&k->blob, k->bits == 256 ? "nistp256" : k->bits == 384 ? "nistp384" : "nistp521");
        put_str(&k->blob, pt, n);
    }
    if (k->sk)
        put_cstr(&k->blob, "ssh:");
}

static void tkey_free(tkey *k)
{
    EVP_PKEY_free(k->ec);
    mcg_buf_free(&k->blob);
}

/* k's signature value over data (for sk keys: with flags and counter). */
static void tkey_sign(const tkey *k, const void *data, size_t len, uint8_t flags, uint32_t counter,
                      mcg_buf *out)
{
    unsigned char wrapped[69];
    if (k->sk) {
        mcg_sha256("ssh:", 4, wrapped);
        wrapped[32] = flags;
        wrapped[33] = (unsigned char)(counter >> 24);
        wrapped[34] = (unsigned char)(counter >> 16);
        wrapped[35] = (unsigned char)(counter >> 8);
        wrapped[36] = (unsigned char)counter;
        mcg_sha256(data, len, wrapped + 37);
        data = wrapped;
        len = sizeof(wrapped);
    }
    put_cstr(out, k->type);
    if (k->ed) {
        unsigned char sig[64];
        crypto_sign_detached(sig, NULL, data, len, k->sk_);
        put_str(out, sig, 64);
    } else {
        const EVP_MD *md = k->bits == 256   ? EVP_sha256()
                           : k->bits == 384 ? EVP_sha384()
                                            : EVP_sha512();
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        unsigned char der[256];
        size_t dl = sizeof(der);
        assert_int_equal(EVP_DigestSignInit(ctx, NULL, md, NULL, k->ec), 1);
        assert_int_equal(EVP_DigestSign(ctx, der, &dl, data, len), 1);
        EVP_MD_CTX_free(ctx);
        const unsigned char *p = der;
        ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)dl);
        assert_non_null(es);
        mcg_buf rs = MCG_BUF_INIT;
        put_mpint(&rs, ECDSA_SIG_get0_r(es));
        put_mpint(&rs, ECDSA_SIG_get0_s(es));
        put_str(out, rs.ptr, rs.len);
        mcg_buf_free(&rs);
        ECDSA_SIG_free(es);
    }
    if (k->sk) {
        mcg_buf_putc(out, (char)flags);
        put_u32b(out, counter);
    }
}

/* An armored SSHSIG (namespace git, sha512) of msg by k, naming public key pub. */
static char *tkey_sshsig(const tkey *k, const mcg_buf *pub, uint8_t flags, uint32_t counter)
{
    unsigned char h[64];
    mcg_buf data = MCG_BUF_INIT, sig = MCG_BUF_INIT, blob = MCG_BUF_INIT;
    crypto_hash_sha512(h, (const unsigned char *)msg, msg_len);
    mcg_buf_put(&data, "SSHSIG", 6);
    put_cstr(&data, "git");
    put_str(&data, "", 0);
    put_cstr(&data, "sha512");
    put_str(&data, h, sizeof(h));
    tkey_sign(k, data.ptr, data.len, flags, counter, &sig);
    mcg_buf_put(&blob, "SSHSIG\0\0\0\1", 10);
    put_str(&blob, pub->ptr, pub->len);
    put_cstr(&blob, "git");
    put_str(&blob, "", 0);
    put_cstr(&blob, "sha512");
    put_str(&blob, sig.ptr, sig.len);
    char *a = armor(blob.ptr, blob.len);
    mcg_buf_free(&data);
    mcg_buf_free(&sig);
    mcg_buf_free(&blob);
    return a;
}

/* An OpenSSH certificate of k, signed by ca; principals NULL-terminated. */
static void tkey_cert(mcg_buf *out, const tkey *k, const tkey *ca, uint64_t serial, uint32_t type,
                      const char *key_id, const char *const *principals, uint64_t va, uint64_t vb)
{
    char name[96];
    snprintf(name, sizeof(name), "%.*s-cert-v01@openssh.com",
             (int)(strchr(k->type, '@') ? strchr(k->type, '@') - k->type : (long)strlen(k->type)),
             k->type);
    mcg_buf pr = MCG_BUF_INIT, sig = MCG_BUF_INIT;
    put_cstr(out, name);
    put_str(out, "0123456789abcdef0123456789abcdef", 32); /* nonce */
    mcg_buf_put(out, k->blob.ptr + 4 + strlen(k->type), k->blob.len - 4 - strlen(k->type));
    put_u64b(out, serial);
    put_u32b(out, type);
    put_cstr(out, key_id);
    for (size_t i = 0; principals && principals[i]; i++)
        put_cstr(&pr, principals[i]);
    put_str(out, pr.ptr, pr.len);
    put_u64b(out, va);
    put_u64b(out, vb);
    put_str(out, "", 0); /* critical options */
    put_str(out, "", 0); /* extensions */
    put_str(out, "", 0); /* reserved */
    put_str(out, ca->blob.ptr, ca->blob.len);
    tkey_sign(ca, out->ptr, out->len, 1, 0, &sig);
    put_str(out, sig.ptr, sig.len);
    mcg_buf_free(&pr);
    mcg_buf_free(&sig);
}

/* "principals [options] type base64" for blob. */
static char *line_for(const char *who, const mcg_buf *blob)
{
    mcg_wire w = {(const unsigned char *)blob->ptr, blob->len};
    const unsigned char *t;
    size_t tn;
    assert_true(mcg_wire_string(&w, &t, &tn));
    char *b = b64(blob->ptr, blob->len);
    char *l = mcg_sprintf("%s %.*s %s\n", who, (int)tn, t, b);
    free(b);
    return l;
}

/* Verify armored a against signers text at time `when`; 0 or MCG_ETRUST with err. */
static int verify_with(const char *text, const char *a, int64_t when, mcg_sig_result *res,
                       mcg_err *err)
{
    mcg_signers *s = NULL;
    if (mcg_signers_parse(&s, "as", text, strlen(text), err) != 0)
        fail_msg("signers do not parse: %s\n%s", err->msg, text);
    int rc = mcg_sshsig_verify(res, s, a, strlen(a), msg, msg_len, when, err);
    mcg_signers_free(s);
    return rc;
}

#define EXPECT(rc_, want)                                                                          \
    do {                                                                                           \
        int r_ = (rc_);                                                                            \
        if ((want) == NULL ? r_ != 0                                                               \
                           : (r_ != MCG_ETRUST || !strstr(err.msg, (want) ? (want) : "")))         \
            fail_msg("line %d: rc %d '%s', want %s", __LINE__, r_, err.msg,                        \
                     (want) ? (want) : "success");                                                 \
    } while (0)

static void test_verify_all_types(void **state)
{
    (void)state;
    static const char *const types[] = {
        "ssh-ed25519",         "ecdsa-sha2-nistp256",        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521", "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com",
    };
    mcg_sig_result res;
    mcg_err err = {0, ""};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        tkey k, other;
        tkey_new(&k, types[i]);
        tkey_new(&other, types[i]);
        char *line = line_for("alice", &k.blob);
        char *a = tkey_sshsig(&k, &k.blob, MCG_SK_USER_PRESENT, 7);
        EXPECT(verify_with(line, a, 1700000000, &res, &err), NULL);
        assert_string_equal(res.principal, "alice");
        assert_string_equal(res.keytype, types[i]);
        /* another key of the type is not it */
        char *oline = line_for("bob", &other.blob);
        EXPECT(verify_with(oline, a, 1700000000, &res, &err), "is not in allowed signers");
        free(a);
        /* a signature by another key naming k's public key */
        a = tkey_sshsig(&other, &k.blob, MCG_SK_USER_PRESENT, 7);
        EXPECT(verify_with(line, a, 1700000000, &res, &err), "signature does not verify");
        free(a);
        if (k.sk) {
            char *nt = line_for("alice no-touch-required", &k.blob);
            char *vr = line_for("alice verify-required", &k.blob);
            /* no user presence: refused unless the line says no-touch-required */
            a = tkey_sshsig(&k, &k.blob, 0, 8);
            EXPECT(verify_with(line, a, 1, &res, &err), "signed without user presence (flags 0x00");
            EXPECT(verify_with(nt, a, 1, &res, &err), NULL);
            EXPECT(verify_with(vr, a, 1, &res, &err), "signed without user presence");
            free(a);
            /* verify-required wants the user-verified flag as well */
            a = tkey_sshsig(&k, &k.blob, MCG_SK_USER_PRESENT, 9);
            EXPECT(verify_with(vr, a, 1, &res, &err), "signed without user verification");
            free(a);
            a = tkey_sshsig(&k, &k.blob, MCG_SK_USER_PRESENT | MCG_SK_USER_VERIFIED, 10);
            EXPECT(verify_with(vr, a, 1, &res, &err), NULL);
            /* the flags and counter are signed: changing either breaks the signature */
            mcg_buf blob = MCG_BUF_INIT;
            mcg_err derr = {0, ""};
            const char *body = a + strlen("-----BEGIN SSH SIGNATURE-----\n");
            mcg_buf b64s = MCG_BUF_INIT;
            for (const char *p = body; *p && *p != '-'; p++)
                if (*p != '\n')
                    mcg_buf_putc(&b64s, *p);
            assert_int_equal(mcg_base64_decode(b64s.ptr, b64s.len, &blob, &derr), 0);
            for (int which = 0; which < 2; which++) {
                /* the counter is the last 4 bytes, the flags the byte before */
                blob.ptr[blob.len - (which ? 1 : 5)] ^= which ? 0x01 : 0x02;
                char *broken = armor(blob.ptr, blob.len);
                EXPECT(verify_with(vr, broken, 1, &res, &err), "does not verify");
                blob.ptr[blob.len - (which ? 1 : 5)] ^= which ? 0x01 : 0x02;
                free(broken);
            }
            mcg_buf_free(&blob);
            mcg_buf_free(&b64s);
            free(a);
            free(nt);
            free(vr);
        }
        free(line);
        free(oline);
        tkey_free(&k);
        tkey_free(&other);
    }
}

static void test_certificates(void **state)
{
    (void)state;
    static const char *const users[] = {"ssh-ed25519", "ecdsa-sha2-nistp384",
                                        "sk-ecdsa-sha2-nistp256@openssh.com"};
    mcg_sig_result res;
    mcg_err err = {0, ""};
    const int64_t t = 1700000000;
    tkey ca, ca2;
    tkey_new(&ca, "ecdsa-sha2-nistp521");
    tkey_new(&ca2, "ssh-ed25519");
    char *caline = line_for("*@example.com,!mallory@example.com cert-authority", &ca.blob);
    for (size_t i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
        tkey u;
        tkey_new(&u, users[i]);
        const char *alice[] = {"ops", "alice@example.com", NULL};
        const char *mallory[] = {"mallory@example.com", NULL};
        mcg_buf c = MCG_BUF_INIT;
        tkey_cert(&c, &u, &ca, 42, 1, "alice-2023", alice, t - 10, t + 10);
        char *a = tkey_sshsig(&u, &c, MCG_SK_USER_PRESENT, 1);
        EXPECT(verify_with(caline, a, t, &res, &err), NULL);
        assert_string_equal(res.principal, "alice@example.com");
        assert_contains(res.keytype, "-cert-v01@openssh.com");
        /* the fingerprint is the key's, without the certificate */
        char fp[64];
        mcg_ssh_fingerprint((const unsigned char *)u.blob.ptr, u.blob.len, fp);
        assert_string_equal(res.fingerprint, fp);
        /* the window: valid_after inclusive, valid_before exclusive */
        EXPECT(verify_with(caline, a, t - 10, &res, &err), NULL);
        EXPECT(verify_with(caline, a, t + 9, &res, &err), NULL);
        EXPECT(verify_with(caline, a, t + 10, &res, &err),
               "certificate 'alice-2023' is not valid at");
        EXPECT(verify_with(caline, a, t - 11, &res, &err), "is not valid at");
        /* the CA key on a plain line, or the user key without its CA: not trusted */
        char *plain_ca = line_for("alice@example.com", &ca.blob);
        EXPECT(verify_with(plain_ca, a, t, &res, &err), "is not in allowed signers");
        free(plain_ca);
        char *plain_user = line_for("alice@example.com", &u.blob);
        EXPECT(verify_with(plain_user, a, t, &res, &err), "is not in allowed signers");
        free(plain_user);
        /* another CA */
        char *other = line_for("*@example.com cert-authority", &ca2.blob);
        EXPECT(verify_with(other, a, t, &res, &err), "is not in allowed signers");
        free(other);
        /* a principal the line does not allow */
        char *narrow = line_for("bob@example.com cert-authority", &ca.blob);
        EXPECT(verify_with(narrow, a, t, &res, &err), "names no principal allowed by as:1");
        free(narrow);
        /* the line's own options still hold */
        char *ns = line_for("*@example.com cert-authority,namespaces=\"file\"", &ca.blob);
        EXPECT(verify_with(ns, a, t, &res, &err), "is not allowed for namespace git");
        free(ns);
        free(a);
        mcg_buf_free(&c);

        /* a negated principal is refused */
        tkey_cert(&c, &u, &ca, 43, 1, "m", mallory, 0, UINT64_MAX);
        a = tkey_sshsig(&u, &c, MCG_SK_USER_PRESENT, 1);
        EXPECT(verify_with(caline, a, t, &res, &err), "names no principal allowed");
        free(a);
        mcg_buf_free(&c);
        /* a host certificate, and one without principals */
        tkey_cert(&c, &u, &ca, 44, 2, "host", alice, 0, UINT64_MAX);
        a = tkey_sshsig(&u, &c, MCG_SK_USER_PRESENT, 1);
        EXPECT(verify_with(caline, a, t, &res, &err), "is not a user certificate");
        free(a);
        mcg_buf_free(&c);
        tkey_cert(&c, &u, &ca, 45, 1, "nobody", NULL, 0, UINT64_MAX);
        a = tkey_sshsig(&u, &c, MCG_SK_USER_PRESENT, 1);
        EXPECT(verify_with(caline, a, t, &res, &err), "names no principal allowed");
        free(a);
        mcg_buf_free(&c);
        /* a certificate whose CA signature is broken is no key at all */
        tkey_cert(&c, &u, &ca, 46, 1, "forged", alice, 0, UINT64_MAX);
        size_t nl = (size_t)(unsigned char)c.ptr[2] << 8 | (unsigned char)c.ptr[3];
        c.ptr[4 + nl + 4 + 1] ^= 1; /* in the nonce, which the CA signed */
        a = tkey_sshsig(&u, &c, MCG_SK_USER_PRESENT, 1);
        EXPECT(verify_with(caline, a, t, &res, &err),
               "signature key is refused: certificate CA signature does not verify");
        free(a);
        mcg_buf_free(&c);
        /* malformed certificates: an unknown type, trailing or missing bytes */
        tkey_cert(&c, &u, &ca, 48, 3, "odd", alice, 0, UINT64_MAX);
        a = tkey_sshsig(&u, &c, MCG_SK_USER_PRESENT, 1);
        EXPECT(verify_with(caline, a, t, &res, &err),
               "signature key is refused: certificate type 3 is unknown");
        free(a);
        mcg_buf_free(&c);
        tkey_cert(&c, &u, &ca, 49, 1, "ok", alice, 0, UINT64_MAX);
        mcg_buf_putc(&c, 0);
        a = tkey_sshsig(&u, &c, MCG_SK_USER_PRESENT, 1);
        EXPECT(verify_with(caline, a, t, &res, &err), "key blob has trailing data (1 bytes)");
        free(a);
        c.len -= 10;
        a = tkey_sshsig(&u, &c, MCG_SK_USER_PRESENT, 1);
        EXPECT(verify_with(caline, a, t, &res, &err), "certificate is truncated");
        free(a);
        mcg_buf_free(&c);
        /* the exact certificate on a plain line matches that certificate (as OpenSSH) */
        tkey_cert(&c, &u, &ca, 47, 1, "exact", alice, 0, UINT64_MAX);
        a = tkey_sshsig(&u, &c, MCG_SK_USER_PRESENT, 1);
        char *exact = line_for("someone", &c);
        EXPECT(verify_with(exact, a, t, &res, &err), NULL);
        assert_string_equal(res.principal, "someone");
        free(exact);
        free(a);
        mcg_buf_free(&c);
        tkey_free(&u);
    }
    /* a certificate as a CA key, or a CA key OpenSSH reads but mcgit refuses */
    {
        tkey u;
        tkey_new(&u, "ssh-ed25519");
        mcg_buf inner = MCG_BUF_INIT, c = MCG_BUF_INIT;
        const char *p[] = {"alice@example.com", NULL};
        tkey_cert(&inner, &ca2, &ca, 1, 1, "ca-cert", p, 0, UINT64_MAX);
        tkey cert_ca = ca2;
        cert_ca.blob = inner; /* a "CA" whose key blob is a certificate */
        tkey_cert(&c, &u, &cert_ca, 2, 1, "x", p, 0, UINT64_MAX);
        char *a = tkey_sshsig(&u, &c, 1, 0);
        EXPECT(verify_with(caline, a, t, &res, &err), "certificate CA key is itself a certificate");
        free(a);
        mcg_buf_free(&c);
        mcg_buf_free(&inner);
        tkey_free(&u);
    }
    free(caline);
    tkey_free(&ca);
    tkey_free(&ca2);
}

/* A KRL: header, then the sections given (type byte, contents). */
static void krl(mcg_buf *out, int n, const int *types, const mcg_buf *sections)
{
    mcg_buf_put(out, "SSHKRL\n\0", 8);
    put_u32b(out, 1);
    put_u64b(out, 7);          /* krl version */
    put_u64b(out, 1700000000); /* generated */
    put_u64b(out, 0);          /* flags */
    put_str(out, "", 0);
    put_cstr(out, "test krl");
    for (int i = 0; i < n; i++) {
        mcg_buf_putc(out, (char)types[i]);
        put_str(out, sections[i].ptr, sections[i].len);
    }
}

/* Verify a against signers text with revocation data rev attached. */
static int verify_revoked(const char *text, const void *rev, size_t rev_len, const char *a,
                          mcg_err *err)
{
    mcg_signers *s = NULL, *repo = NULL, *u = NULL;
    mcg_sig_result res;
    assert_int_equal(mcg_signers_parse(&s, "as", text, strlen(text), err), 0);
    if (mcg_signers_revoke(s, "rev", rev, rev_len, err) != 0)
        fail_msg("revocation does not parse: %s", err->msg);
    int rc = mcg_sshsig_verify(&res, s, a, strlen(a), msg, msg_len, 1700000000, err);
    /* a repository's own allowed_signers cannot lift the revocation */
    assert_int_equal(mcg_signers_parse(&repo, "repo", text, strlen(text), err), 0);
    u = mcg_signers_union(s, repo);
    mcg_err err2 = {0, ""};
    int rc2 = mcg_sshsig_verify(&res, u, a, strlen(a), msg, msg_len, 1700000000, &err2);
    assert_int_equal(rc, rc2);
    if (rc)
        assert_string_equal(err->msg, err2.msg);
    mcg_signers_free(u);
    u = mcg_signers_union(repo, s);
    rc2 = mcg_sshsig_verify(&res, u, a, strlen(a), msg, msg_len, 1700000000, &err2);
    assert_int_equal(rc, rc2);
    mcg_signers_free(u);
    mcg_signers_free(repo);
    mcg_signers_free(s);
    return rc;
}

static void test_revocation(void **state)
{
    (void)state;
    mcg_err err = {0, ""};
    tkey u, v, ca;
    tkey_new(&u, "ssh-ed25519");
    tkey_new(&v, "sk-ssh-ed25519@openssh.com");
    tkey_new(&ca, "ecdsa-sha2-nistp256");
    const char *p[] = {"alice@example.com", NULL};
    mcg_buf cert = MCG_BUF_INIT, cert0 = MCG_BUF_INIT;
    tkey_cert(&cert, &u, &ca, 1000, 1, "alice-laptop", p, 0, UINT64_MAX);
    tkey_cert(&cert0, &v, &ca, 0, 1, "serial-zero", p, 0, UINT64_MAX);
    char *ul = line_for("alice@example.com", &u.blob),
         *cl = line_for("*@example.com cert-authority", &ca.blob);
    char *both = mcg_sprintf("%s%s", ul, cl);
    char *by_key = tkey_sshsig(&u, &u.blob, 1, 0), *by_cert = tkey_sshsig(&u, &cert, 1, 0);
    char *by_cert0 = tkey_sshsig(&v, &cert0, 1, 0);
    mcg_buf plain = MCG_BUF_INIT, sec = MCG_BUF_INIT, k = MCG_BUF_INIT;
    char fp[64];
    mcg_ssh_fingerprint((const unsigned char *)u.blob.ptr, u.blob.len, fp);

    /* nothing revoked: both verify */
    EXPECT(verify_revoked(both, "", 0, by_key, &err), NULL);
    EXPECT(verify_revoked(both, "# nothing\n\n", 11, by_cert, &err), NULL);

    /* a plain list naming the key revokes it and its certificates */
    char *ub64 = b64(u.blob.ptr, u.blob.len);
    char *l2 = mcg_sprintf("# revoked keys\n\n  ssh-ed25519 %s laptop\r\n", ub64);
    free(ub64);
    EXPECT(verify_revoked(both, l2, strlen(l2), by_key, &err), "is revoked (rev)");
    assert_contains(err.msg, fp);
    EXPECT(verify_revoked(both, l2, strlen(l2), by_cert, &err), "is revoked (rev)");
    free(l2);
    /* a plain list naming the CA revokes its certificates only */
    char *cal = strchr(cl, ' ') + 1;
    cal = strchr(cal, ' ') + 1; /* "type b64" */
    EXPECT(verify_revoked(both, cal, strlen(cal), by_cert, &err), "is signed by revoked CA key");
    EXPECT(verify_revoked(both, cal, strlen(cal), by_key, &err), NULL);

    /* KRL: an explicit key, its SHA-1 and its SHA-256 fingerprint */
    unsigned char d1[20], d256[32];
    SHA1((const unsigned char *)u.blob.ptr, u.blob.len, d1);
    mcg_sha256(u.blob.ptr, u.blob.len, d256);
    struct {
        int type;
        const void *p;
        size_t n;
    } keyed[] = {{2, u.blob.ptr, u.blob.len}, {3, d1, 20}, {5, d256, 32}};
    for (size_t i = 0; i < 3; i++) {
        put_str(&sec, keyed[i].p, keyed[i].n);
        krl(&k, 1, &keyed[i].type, &sec);
        EXPECT(verify_revoked(both, k.ptr, k.len, by_key, &err), "is revoked (rev)");
        EXPECT(verify_revoked(both, k.ptr, k.len, by_cert, &err), "is revoked (rev)");
        k.len = sec.len = 0;
    }
    /* KRL: certificates by serial list, range, bitmap and key id, under the CA or any CA */
    static const int certs = 1;
    for (int scope = 0; scope < 2; scope++) {
        for (int how = 0; how < 5; how++) {
            mcg_buf sub = MCG_BUF_INIT;
            if (scope == 0)
                put_str(&sec, ca.blob.ptr, ca.blob.len);
            else
                put_str(&sec, "", 0);
            put_str(&sec, "", 0); /* reserved */
            const char *want = "is revoked (rev)";
            switch (how) {
            case 0: /* serial list */
                put_u64b(&sub, 7);
                put_u64b(&sub, 1000);
                mcg_buf_putc(&sec, 0x20);
                break;
            case 1: /* range */
                put_u64b(&sub, 999);
                put_u64b(&sub, 1001);
                mcg_buf_putc(&sec, 0x21);
                break;
            case 2: { /* bitmap from 996: bit 4 is serial 1000 */
                put_u64b(&sub, 996);
                unsigned char bm[] = {0x01, 0x10};
                put_str(&sub, bm, 2);
                mcg_buf_putc(&sec, 0x22);
                break;
            }
            case 3: /* key id */
                put_cstr(&sub, "bob");
                put_cstr(&sub, "alice-laptop");
                mcg_buf_putc(&sec, 0x23);
                break;
            case 4: /* a range that misses */
                put_u64b(&sub, 1001);
                put_u64b(&sub, 2000);
                mcg_buf_putc(&sec, 0x21);
                want = NULL;
                break;
            }
            put_str(&sec, sub.ptr, sub.len);
            krl(&k, 1, &certs, &sec);
            EXPECT(verify_revoked(both, k.ptr, k.len, by_cert, &err), want);
            /* the plain key stays good, and a serial-0 certificate is never revoked by serial */
            EXPECT(verify_revoked(both, k.ptr, k.len, by_key, &err), NULL);
            if (how != 3)
                EXPECT(verify_revoked(both, k.ptr, k.len, by_cert0, &err), NULL);
            k.len = sec.len = 0;
            mcg_buf_free(&sub);
        }
    }
    /* a serial-0 certificate is revoked by its key id */
    put_str(&sec, "", 0);
    put_str(&sec, "", 0);
    {
        mcg_buf sub = MCG_BUF_INIT;
        put_cstr(&sub, "serial-zero");
        mcg_buf_putc(&sec, 0x23);
        put_str(&sec, sub.ptr, sub.len);
        mcg_buf_free(&sub);
    }
    krl(&k, 1, &certs, &sec);
    EXPECT(verify_revoked(both, k.ptr, k.len, by_cert0, &err), "certificate 'serial-zero'");
    k.len = sec.len = 0;

    /* malformed revocation files are refused whole */
    struct {
        const char *what;
        int type;
        const char *body;
        size_t n;
        const char *want;
    } badk[] = {
        {"unknown section", 9, "", 0, "rev: KRL section type 9 is unknown"},
        {"signed", 4, "", 0, "rev: signed KRLs are not supported"},
        {"short sha1", 3, "\0\0\0\2ab", 6, "rev: KRL SHA-1 fingerprint is not 20 bytes"},
        {"truncated", 2, "\0\0\0\7ab", 6, "rev: KRL key section is truncated"},
        {"serial 0", 1, "\0\0\0\0\0\0\0\0\x20\0\0\0\x08\0\0\0\0\0\0\0\0", 21, "revokes serial 0"},
        {"bad range", 1, "\0\0\0\0\0\0\0\0\x21\0\0\0\x10\0\0\0\0\0\0\0\5\0\0\0\0\0\0\0\4", 29,
         "invalid serial range"},
        {"unknown subsection", 1, "\0\0\0\0\0\0\0\0\x30\0\0\0\0", 13,
         "certificate subsection type 48 is unknown"},
        {"trailing in subsection", 1,
         "\0\0\0\0\0\0\0\0\x21\0\0\0\x11\0\0\0\0\0\0\0\1\0\0\0\0\0\0\0\4X", 30,
         "subsection has trailing data"},
    };
    for (size_t i = 0; i < sizeof(badk) / sizeof(badk[0]); i++) {
        mcg_signers *s = NULL;
        mcg_buf_put(&sec, badk[i].body, badk[i].n);
        krl(&k, 1, &badk[i].type, &sec);
        assert_int_equal(mcg_signers_parse(&s, "as", both, strlen(both), &err), 0);
        int rc = mcg_signers_revoke(s, "rev", k.ptr, k.len, &err);
        if (rc != MCG_EINVAL || !strstr(err.msg, badk[i].want))
            fail_msg("%s: rc %d '%s', want '%s'", badk[i].what, rc, err.msg, badk[i].want);
        assert_int_equal(mcg_signers_revoked_count(s), 0);
        mcg_signers_free(s);
        k.len = sec.len = 0;
    }
    {
        mcg_signers *s = NULL;
        assert_int_equal(mcg_signers_parse(&s, "as", both, strlen(both), &err), 0);
        static const char v2[] = "SSHKRL\n\0\0\0\0\2";
        assert_int_equal(mcg_signers_revoke(s, "rev", v2, sizeof(v2) - 1, &err), MCG_EINVAL);
        assert_string_equal(err.msg, "rev: KRL format version 2 is not supported");
        static const char junk[] = "# ok\nssh-ed25519 AAAA!!\n";
        assert_int_equal(mcg_signers_revoke(s, "rev", junk, sizeof(junk) - 1, &err), MCG_EINVAL);
        assert_contains(err.msg, "rev:2: bad base64 in key");
        static const char opt[] = "cert-authority ssh-ed25519 AAAA\n";
        assert_int_equal(mcg_signers_revoke(s, "rev", opt, sizeof(opt) - 1, &err), MCG_EINVAL);
        assert_string_equal(err.msg, "rev:1: not a public key (want \"type base64\")");
        mcg_signers_free(s);
    }
    mcg_buf_free(&plain);
    mcg_buf_free(&sec);
    mcg_buf_free(&k);
    mcg_buf_free(&cert);
    mcg_buf_free(&cert0);
    free(by_key);
    free(by_cert);
    free(by_cert0);
    free(ul);
    free(cl);
    free(both);
    tkey_free(&u);
    tkey_free(&v);
    tkey_free(&ca);
}

static void test_sign(void **state)
{
    (void)state;
    mcg_sshkey key;
    mcg_sig_result res;
    mcg_err err = {0, ""};
    mcg_sshkey_generate(&key);
    char *pub = mcg_sshkey_public_line(&key, "demo");
    char *line = mcg_sprintf("op@example.com %s\n", pub);
    char *a = mcg_sshsig_sign(&key, msg, msg_len);
    assert_int_equal(strncmp(a, "-----BEGIN SSH SIGNATURE-----\n", 30), 0);
    EXPECT(verify_with(line, a, 1, &res, &err), NULL);
    assert_string_equal(res.keytype, "ssh-ed25519");
    /* another message does not verify */
    mcg_signers *s = NULL;
    assert_int_equal(mcg_signers_parse(&s, "as", line, strlen(line), &err), 0);
    assert_int_equal(mcg_sshsig_verify(&res, s, a, strlen(a), "x", 1, 1, &err), MCG_ETRUST);
    mcg_signers_free(s);
    mcg_sshkey_wipe(&key);
    for (size_t i = 0; i < sizeof(key.sk); i++)
        assert_int_equal(key.sk[i], 0);
    free(a);
    free(line);
    free(pub);
}
#undef EXPECT

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signers_good),
        cmocka_unit_test(test_signers_bad),
        cmocka_unit_test(test_signers_limits),
        cmocka_unit_test(test_signers_union),
        cmocka_unit_test(test_patterns),
        cmocka_unit_test(test_fmt_time),
        cmocka_unit_test(test_fingerprints),
        cmocka_unit_test(test_verify_each_key_type),
        cmocka_unit_test(test_verify_git_commit),
        cmocka_unit_test(test_verify_refusals),
        cmocka_unit_test(test_verify_policy),
        cmocka_unit_test(test_memo),
        cmocka_unit_test(test_malformed_armor),
        cmocka_unit_test(test_verify_all_types),
        cmocka_unit_test(test_certificates),
        cmocka_unit_test(test_revocation),
        cmocka_unit_test(test_sign),
        cmocka_unit_test(test_malformed_blob),
        cmocka_unit_test(test_malformed_fields),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
