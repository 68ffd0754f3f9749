/*
 * notify.c — calling a controller's webhook (POST /hooks/git) from the
 * post-receive hook, with libcurl.
 *
 * The caller is a git hook: it must be quick and must never fail the push,
 * so everything is bounded (connect and total timeouts, no redirects,
 * http and https only, the answer's body discarded) and failures are only
 * returned, for the hook to print as a warning. The token travels in an
 * Authorization header, never in the URL, and no message repeats it.
 */
#include "fsio/fsio.h"
#include "metrics/metrics.h"

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

/* The URL with any user-information part ("user:pass@") replaced by "***@". */
static void redact(char *out, size_t n, const char *url)
{
    const char *scheme = strstr(url, "://");
    const char *host = scheme ? scheme + 3 : url;
    const char *at = strchr(host, '@');
    const char *slash = strchr(host, '/');
    if (at && (!slash || at < slash))
        snprintf(out, n, "%.*s***%s", (int)(host - url), url, at);
    else
        snprintf(out, n, "%s", url);
}

/* libcurl's write callback: the answer's body is not needed. */
static size_t discard(char *ptr, size_t size, size_t nmemb, void *ud)
{
    (void)ptr;
    (void)ud;
    return size * nmemb;
}

int mcg_metrics_notify(const char *url, const char *token_file, const char *body, long timeout_ms,
                       mcg_err *err)
{
    char shown[512];
    redact(shown, sizeof(shown), url);
    char *tok = NULL, *auth = NULL;
    size_t len = 0;
    CURL *h = NULL;
    struct curl_slist *hdrs = NULL;
    int rc = 0;
    if (token_file) {
        if ((rc = mcg_read_file(token_file, MCG_WEBHOOK_MAX_TOKEN, &tok, &len, err)) != 0)
            goto out;
        while (len && (tok[len - 1] == '\n' || tok[len - 1] == '\r'))
            tok[--len] = '\0';
        if (!len || strchr(tok, '\n') || strchr(tok, '\r')) {
            rc =
                mcg_err_set(err, MCG_EINVAL, "%s: expected one line holding the token", token_file);
            goto out;
        }
        auth = mcg_sprintf("Authorization: Bearer %s", tok);
        hdrs = curl_slist_append(hdrs, auth);
    }
    hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
    if (!(h = curl_easy_init())) {
        rc = mcg_err_set(err, MCG_EIO, "POST %s: curl could not start", shown);
        goto out;
    }
    char ebuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "{}");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
    CURLcode cc = curl_easy_perform(h);
    if (cc != CURLE_OK) {
        rc = mcg_err_set(err, MCG_EIO, "POST %s: %s", shown,
                         ebuf[0] ? ebuf : curl_easy_strerror(cc));
        goto out;
    }
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status > 299)
        rc = mcg_err_set(err, status == 401 ? MCG_ETRUST : MCG_EIO, "POST %s: HTTP %ld%s", shown,
                         status, status == 401 ? " (the token was refused)" : "");
out:
    curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
    if (auth)
        mcg_wipe(auth, strlen(auth));
    if (tok)
        mcg_wipe(tok, len);
    free(auth);
    free(tok);
    return rc;
}
