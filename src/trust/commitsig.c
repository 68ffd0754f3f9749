/*
 * commitsig.c — the signature of a commit object, taken as git takes it.
 *
 * git (commit.c, parse_buffer_signed_by_header) reads a commit's signature
 * from its header only: every header line "gpgsig <value>" and the
 * continuation lines after it (a leading space, removed) are the
 * signature, each line kept with its newline; every other line, and the
 * whole message after the first empty line, is what was signed. A header of
 * another hash's signature ("gpgsig-sha256 ...") and its continuations are
 * left out of both. A "gpgsig" line in the message is message text: a
 * commit whose only signature stands there is unsigned, and `git
 * verify-commit` says so. This is the one splitter mcgit uses, wherever it
 * reads a commit's signature.
 */
#include "trust/trust.h"

#include <string.h>

static bool starts(const char *line, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(line, prefix, k) == 0;
}

int mcg_commit_split_signature(mcg_buf *sig, mcg_buf *payload, const void *raw, size_t len)
{
    static const char header[] = "gpgsig ";
    const char *line = raw, *tail = (const char *)raw + len;
    bool in_signature = false, saw = false, other = false;
    while (line < tail) {
        const char *nl = memchr(line, '\n', (size_t)(tail - line));
        const char *next = nl ? nl + 1 : tail;
        size_t n = (size_t)(next - line);
        const char *value = NULL;
        if (in_signature && line[0] == ' ') {
            value = line + 1;
        } else if (starts(line, n, header)) {
            value = line + sizeof(header) - 1;
            other = false;
        } else if (starts(line, n, "gpgsig")) {
            other = true;
        } else if (other && line[0] != ' ') {
            other = false;
        }
        if (value) {
            mcg_buf_put(sig, value, (size_t)(next - value));
            saw = in_signature = true;
        } else {
            if (line[0] == '\n')
                next = tail; /* the message: all of it is signed data */
            if (!other)
                mcg_buf_put(payload, line, (size_t)(next - line));
            in_signature = false;
        }
        line = next;
    }
    return saw ? 0 : -1;
}
