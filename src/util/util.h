/*
 * util — the bottom of mcgit: error records, growable buffers, diagnostics
 * lists, canonical JSON, SHA-256 helpers, strict decoders (base64, percent,
 * data: URLs, gzip) and clean-path checks.
 *
 * Everything here is pure: it takes bytes and returns bytes. Nothing reads
 * files, clocks or the environment.
 */
#ifndef MCG_UTIL_H
#define MCG_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* ---------------------------------------------------------------- errors */

enum {
    MCG_OK = 0,
    MCG_EINVAL = -1,    /* invalid input (parse or validation) */
    MCG_EIO = -2,       /* a system call or library failed */
    MCG_ENOMEM = -3,    /* allocation failed or a size limit was hit */
    MCG_ETRUST = -4,    /* signature or trust policy refused */
    MCG_ENOTFOUND = -5, /* named object does not exist */
    MCG_ECONFLICT = -6, /* concurrent update or non-fast-forward */
    MCG_EUSAGE = -7,    /* bad command-line usage */
};

#define MCG_ERR_MSG 1024

/* One error record passed down as the last parameter. */
typedef struct mcg_err {
    int code;
    char msg[MCG_ERR_MSG];
} mcg_err;

/*
 * Record an error and return its code, so that
 *     return mcg_err_set(err, MCG_EINVAL, "%s:%d: bad", file, line);
 * reads naturally. err may be NULL (the message is dropped).
 */
int mcg_err_set(mcg_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/*
 * mcg_err_set with the operating system's reason appended once, as
 * "message: strerror(errnum)" (libgit2's GIT_ERROR_OS): the one way a
 * message carries an errno. Pass errno as errnum right at the failing call
 * (the argument is read before anything else can change errno).
 */
int mcg_err_set_os(mcg_err *err, int code, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Prefix the current message with "fmt: ", keep the code, return it.
 * err may be NULL: nothing is recorded and MCG_EIO is returned (the code is
 * not known), so where the code matters write
 *     mcg_err_prefix(err, "..."); return rc; */
int mcg_err_prefix(mcg_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mcg_err_clear(mcg_err *err);

/*
 * snprintf into a fixed buffer that never hides a cut: when the output does
 * not fit (or formatting fails) the buffer ends in "..." and false is
 * returned; true when all of it fits. cap must be at least 4. Error
 * messages (mcg_err_set, mcg_err_prefix) are formatted this way.
 */
bool mcg_bfmt(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool mcg_vbfmt(char *buf, size_t cap, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* --------------------------------------------------------------- memory */

/* Allocation that aborts on failure: out of memory is not recoverable here. */
void *mcg_malloc(size_t n);
void *mcg_calloc(size_t n, size_t size);
void *mcg_realloc(void *p, size_t n);
char *mcg_strdup(const char *s);
char *mcg_strndup(const char *s, size_t n);
char *mcg_sprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --------------------------------------------------------------- buffer */

/* A growable byte buffer, always NUL-terminated after len bytes. */
typedef struct mcg_buf {
    char *ptr;
    size_t len;
    size_t cap;
} mcg_buf;

#define MCG_BUF_INIT                                                                               \
    {                                                                                              \
        .ptr = NULL, .len = 0, .cap = 0                                                            \
    }

void mcg_buf_put(mcg_buf *b, const void *data, size_t n);
void mcg_buf_puts(mcg_buf *b, const char *s);
void mcg_buf_putc(mcg_buf *b, char c);
void mcg_buf_printf(mcg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mcg_buf_vprintf(mcg_buf *b, const char *fmt, va_list ap);
/* Give the buffer's memory to the caller (never NULL) and reset b. */
char *mcg_buf_detach(mcg_buf *b, size_t *len);
void mcg_buf_free(mcg_buf *b);

/* --------------------------------------------------------- diagnostics */

/* A list of one-line problem reports ("path:line: message"). */
typedef struct mcg_diags {
    char **msgs;
    size_t count;
    size_t cap;
} mcg_diags;

void mcg_diags_add(mcg_diags *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mcg_diags_free(mcg_diags *d);
/*
 * Sort the reports by file, then line (then column), then message, so every
 * multi-problem report reads in one deterministic order whatever order the
 * checks ran in. A report's location is its "FILE:LINE[:COL]:" or "FILE:"
 * prefix (FILE without blanks; numbers compared as numbers); reports without
 * one come first, by message. Identical reports stay (nothing is dropped).
 */
void mcg_diags_sort(mcg_diags *d);

/* ------------------------------------------------------------- strings */

typedef struct mcg_strv {
    char **v;
    size_t n;
    size_t cap;
} mcg_strv;

void mcg_strv_push(mcg_strv *s, const char *str);
bool mcg_strv_contains(const mcg_strv *s, const char *str);
void mcg_strv_sort(mcg_strv *s);
void mcg_strv_free(mcg_strv *s);
int mcg_strcmp_ptr(const void *a, const void *b); /* qsort over char* */

/* ------------------------------------------------------------- time */

/* t (unix seconds) as "YYYY-MM-DDTHH:MM:SSZ" in out; returns out. */
char *mcg_time_iso(char out[32], int64_t t);
/*
 * Kubernetes-style duration as kubectl prints AGE (apimachinery's
 * duration.HumanDuration): 42s, 5m3s, 4h42m, 3d4h, 2y10d; "0s" for -1 s
 * (clock skew), "<invalid>" below that.
 */
void mcg_human_duration(int64_t seconds, char out[32]);

/* ------------------------------------------------------------- hashing */

#define MCG_SHA256_LEN 32
void mcg_sha256(const void *data, size_t len, unsigned char out[MCG_SHA256_LEN]);
/* Lower-case hex of n bytes into out (2n+1 bytes). */
void mcg_hex(const unsigned char *in, size_t n, char *out);
/* Constant-time comparison of two byte strings of length n. */
bool mcg_memeq_ct(const void *a, const void *b, size_t n);

/* ---------------------------------------------------- canonical JSON */

/*
 * Serialise v canonically: object keys sorted bytewise, 2-space indent,
 * UTF-8 (no \u escapes for non-ASCII), one trailing newline. Same value,
 * same bytes, on any machine.
 */
int mcg_json_canonical(const json_t *v, mcg_buf *out, mcg_err *err);

/*
 * Parse one JSON text (RFC 8259) into jansson values, as strictly as
 * json_loadb(data, len, JSON_REJECT_DUPLICATES) and accepting exactly the
 * same texts: an object or array at the top and only whitespace after it;
 * strings valid UTF-8 with no NUL (\u0000 included) and no raw control
 * characters; no duplicate keys; integers within json_int_t; nesting at
 * most 2048 values deep. Several times faster than jansson's reader on
 * large strings (rendered specs are mostly base64). On success *out is a
 * new reference; on failure *out is NULL and err says
 * "what:line: invalid JSON: ...".
 */
int mcg_json_parse(json_t **out, const char *what, const char *data, size_t len, mcg_err *err);

/* ------------------------------------------------------------ decoders */

/* Strict standard base64 (padding required, no whitespace). */
int mcg_base64_decode(const char *in, size_t len, mcg_buf *out, mcg_err *err);
void mcg_base64_encode(const unsigned char *in, size_t len, mcg_buf *out);

/*
 * Decode an RFC 2397 data: URL: "data:[<mediatype>][;base64],<data>".
 * Without ;base64 the data is percent-decoded strictly (every % followed by
 * two hex digits). Fails with a message saying what is wrong.
 */
int mcg_dataurl_decode(const char *url, mcg_buf *out, mcg_err *err);
/* Encode bytes as "data:,<percent-encoded>" (used by tests and tools). */
void mcg_dataurl_encode(const unsigned char *in, size_t len, mcg_buf *out);

/* Gunzip in into out, refusing outputs larger than limit bytes. */
int mcg_gunzip(const unsigned char *in, size_t len, size_t limit, mcg_buf *out, mcg_err *err);

/* ------------------------------------------------------------- paths */

/*
 * True when p is absolute and clean: starts with '/', is not "/" alone,
 * has no empty, "." or ".." component, no trailing '/', no NUL.
 */
bool mcg_path_is_clean_abs(const char *p);

/* ------------------------------------------------------------- misc */

/*
 * The one keyed hash, for hash tables whose keys may come from outside (ref
 * names, YAML keys, object ids): SipHash-2-4 (libsodium's crypto_shorthash)
 * under a key drawn once per process, so that keys chosen to collide cannot
 * make a table slow.
 */
uint64_t mcg_keyed_hash(const void *p, size_t n);

/* Overwrite n bytes at p with zeros in a way the compiler cannot drop
 * (secrets: keys, tokens, passwords): the one wipe mcgit uses. */
void mcg_wipe(void *p, size_t n);

/*
 * A Go-style duration of whole units: "720h", "90m", "1h30m", "45s".
 * Returns seconds, or -1 when malformed or above ten years.
 */
int64_t mcg_parse_duration(const char *s);
/* Parse a decimal non-negative integer fully; false on junk or overflow. */
bool mcg_parse_u64(const char *s, uint64_t *out);

/*
 * The optimal string alignment distance between a and b: the fewest
 * insertions, deletions, substitutions and swaps of two adjacent bytes
 * (Damerau-Levenshtein, no substring edited twice) that turn a into b.
 * Bytes compare exactly (case counts). Any distance above limit is
 * returned as limit + 1, without the full table being filled.
 */
size_t mcg_edit_distance(const char *a, const char *b, size_t limit);

/*
 * What a misspelt word most likely meant: the candidate (a NULL-terminated
 * list) nearest to word, when it is at most two edits away and twice that
 * distance is less than word's length — a word of 3 letters matches at one
 * edit, of 5 or more at two, of 2 or fewer never. The first of equally near
 * candidates wins. NULL when none is that near or word is a candidate.
 */
const char *mcg_did_you_mean(const char *word, const char *const *candidates);

/*
 * Binary search of the n elements of size bytes at base, sorted (strcmp) by
 * the string that the char * member at offset key_off of each points to
 * (offsetof): the index of key with *found true, or where key would go with
 * *found false.
 */
size_t mcg_bsearch_str(const void *base, size_t n, size_t size, size_t key_off, const char *key,
                       bool *found);

#endif
