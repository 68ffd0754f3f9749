/*
 * bench_crypto.c — the floor for verifying a signed history: per commit, one
 * SHA-512 of a commit-sized message and one libsodium
 * crypto_sign_verify_detached over the SSHSIG signed data built from it,
 * and nothing else (no git, no parsing, no policy).
 *
 *     bench_crypto N [ROUNDS]
 *
 * Makes N distinct messages shaped like the commits bench_history writes
 * (about 220 bytes) and signs them (not timed), then times ROUNDS (default 5)
 * passes over all N and prints the fastest pass:
 *
 *     raw_seconds=<s> per_commit_us=<us>
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MSG_MAX 256
/* "SSHSIG" string("git") string("") string("sha512") string(H) */
#define SIGNED_LEN (6 + 4 + 3 + 4 + 0 + 4 + 6 + 4 + crypto_hash_sha512_BYTES)

static size_t signed_data(unsigned char out[SIGNED_LEN], const unsigned char *msg, size_t len)
{
    static const unsigned char pre[] = "SSHSIG\0\0\0\3git\0\0\0\0\0\0\0\6sha512\0\0\0\100";
    size_t pl = sizeof(pre) - 1;
    memcpy(out, pre, pl);
    crypto_hash_sha512(out + pl, msg, len);
    return pl + crypto_hash_sha512_BYTES;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 10000;
    long rounds = argc > 2 ? strtol(argv[2], NULL, 10) : 5;
    if (n < 1 || rounds < 1 || sodium_init() < 0) {
        fprintf(stderr, "usage: bench_crypto N [ROUNDS]\n");
        return 2;
    }
    unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
    crypto_sign_keypair(pk, sk);
    unsigned char(*msgs)[MSG_MAX] = malloc((size_t)n * MSG_MAX);
    size_t *lens = malloc((size_t)n * sizeof(*lens));
    unsigned char(*sigs)[crypto_sign_BYTES] = malloc((size_t)n * crypto_sign_BYTES);
    if (!msgs || !lens || !sigs) {
        fprintf(stderr, "bench_crypto: out of memory\n");
        return 1;
    }
    for (long i = 0; i < n; i++) {
        unsigned char sd[SIGNED_LEN];
        int len = snprintf((char *)msgs[i], MSG_MAX,
                           "tree %040lx\nparent %040lx\n"
                           "author Bench <bench@example.com> %ld +0000\n"
                           "committer Bench <bench@example.com> %ld +0000\n\nBench commit %ld\n",
                           (unsigned long)i * 7919u, (unsigned long)i, 1767225600 + i * 60,
                           1767225600 + i * 60, i);
        lens[i] = (size_t)len < MSG_MAX ? (size_t)len : MSG_MAX - 1;
        crypto_sign_detached(sigs[i], NULL, sd, signed_data(sd, msgs[i], lens[i]), sk);
    }
    double best = 1e30;
    for (long r = 0; r < rounds; r++) {
        long good = 0;
        double t = now();
        for (long i = 0; i < n; i++) {
            unsigned char sd[SIGNED_LEN];
            size_t sl = signed_data(sd, msgs[i], lens[i]);
            good += crypto_sign_verify_detached(sigs[i], sd, sl, pk) == 0;
        }
        t = now() - t;
        if (good != n) {
            fprintf(stderr, "bench_crypto: %ld of %ld signatures failed\n", n - good, n);
            return 1;
        }
        if (t < best)
            best = t;
    }
    printf("raw_seconds=%.4f per_commit_us=%.2f\n", best, best * 1e6 / (double)n);
    sodium_memzero(sk, sizeof(sk));
    free(msgs);
    free(lens);
    free(sigs);
    return 0;
}
