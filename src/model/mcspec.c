/*
 * mcspec.c — the MachineConfig fields beside the Ignition config, and the
 * warnings Ignition gives where it does not refuse.
 *
 * MCO's MachineConfigSpec carries, next to `config`, the node's kernel
 * arguments, RHCOS extensions, the kernel type, FIPS mode and the OS (and
 * extensions) container images. They are validated here as MCO's
 * ValidateMachineConfig does: kernelType is one of default, realtime,
 * 64k-pages; an extension must be on MCO's allow-list. kernelArguments
 * entries may hold several arguments ("a=1 b"); they are split as the
 * kernel's next_arg() splits its command line, so that merging and the
 * agent's boot-loader edits work on single arguments.
 *
 * Ignition itself refuses little: a key it does not know is a warning
 * ("unused key"). mcgit does the same inside the Ignition part, so configs
 * MCO accepts are accepted, and reports each such key with its file and line
 * so that nothing is dropped in silence; a repo may turn warnings into
 * errors (mcgit.yaml `warnings: error`).
 */
#include "model/model_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ warnings */

static void pctx_vwarn(mcg_pctx *c, int line, const char *fmt, va_list ap)
{
    mcg_buf b = MCG_BUF_INIT;
    mcg_buf_vprintf(&b, fmt, ap);
    if (!c->warns)
        mcg_pctx_err_line(c, line, "%s", b.ptr);
    else if (line > 0)
        mcg_diags_add(c->warns, "%s:%d: %s", c->file, line, b.ptr);
    else
        mcg_diags_add(c->warns, "%s: %s", c->file, b.ptr);
    mcg_buf_free(&b);
}

void mcg_pctx_warn(mcg_pctx *c, const json_t *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pctx_vwarn(c, mcg_pctx_line(c, at), fmt, ap);
    va_end(ap);
}

static void mcg_pctx_warn_line(mcg_pctx *c, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pctx_vwarn(c, line, fmt, ap);
    va_end(ap);
}

/* Every key of obj not in allowed is a warning at its line, a near miss an
 * error (model_int.h). */
void mcg_check_keys_warn(mcg_pctx *c, const json_t *obj, const char *prefix,
                         const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = !strcmp(*a, key);
        const char *near = ok ? NULL : mcg_did_you_mean(key, allowed);
        int line = mcg_pctx_key_line(c, key, v);
        if (near && !c->near_miss_warns)
            mcg_pctx_err_line(c, line, "unknown field \"%s\" (did you mean \"%s\"?)", key, near);
        else if (!ok)
            mcg_pctx_warn_line(c, line, "unknown field '%s%s%s' (Ignition ignores it)", prefix,
                               *prefix ? "." : "", key);
    }
}

/* Empty, or an object / list of nothing but deep-empty values (model_int.h). */
bool mcg_json_is_deep_empty(const json_t *v)
{
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            if (!mcg_json_is_deep_empty(x))
                return false;
        }
        return true;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            if (!mcg_json_is_deep_empty(x))
                return false;
        }
        return true;
    }
    return mcg_json_is_empty(v);
}

/* ---------------------------------------------------------- extensions */

/* MCO's SupportedExtensions() (pkg/controller/common/helpers.go). */
static const struct {
    const char *name;
    const char *const pkgs[4];
} extensions[] = {
    {"ipsec", {"NetworkManager-libreswan", "libreswan", "openvswitch3.5-ipsec", NULL}},
    {"kerberos", {"krb5-workstation", "libkadm5", NULL}},
    {"kernel-devel", {"kernel-devel", "kernel-headers", NULL}},
    {"sandboxed-containers", {"kata-containers", NULL}},
    {"sysstat", {"sysstat", NULL}},
    {"two-node-ha", {"pacemaker", "pcs", "fence-agents-all", NULL}},
    {"usbguard", {"usbguard", NULL}},
};

/* The packages of extension name, NULL-terminated; NULL when not on the list. */
const char *const *mcg_extension_packages(const char *name)
{
    for (size_t i = 0; i < sizeof(extensions) / sizeof(extensions[0]); i++)
        if (!strcmp(extensions[i].name, name))
            return extensions[i].pkgs;
    return NULL;
}

/* ------------------------------------------------------------- kargs */

static bool karg_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Append the arguments of s, split at blanks outside double quotes (model.h). */
void mcg_kargs_split(mcg_strv *out, const char *s)
{
    size_t i = 0, n = strlen(s);
    while (i < n) {
        while (i < n && karg_space(s[i]))
            i++;
        size_t j = i;
        bool quoted = false;
        for (; j < n && (quoted || !karg_space(s[j])); j++)
            if (s[j] == '"')
                quoted = !quoted;
        if (j > i) {
            char *a = mcg_strndup(s + i, j - i);
            mcg_strv_push(out, a);
            free(a);
        }
        i = j;
    }
}

/* ------------------------------------------------------------- fields */

void mcg_osspec_free(mcg_osspec *o)
{
    if (!o)
        return;
    mcg_strv_free(&o->kargs);
    mcg_strv_free(&o->extensions);
    free(o->kernel_type);
    free(o->os_image_url);
    free(o->ext_image);
    memset(o, 0, sizeof(*o));
}

/* A list of one-line strings; each is handed to fn. */
static void str_list(mcg_pctx *c, const json_t *spec, const char *key,
                     void (*fn)(mcg_pctx *, const json_t *, const char *, mcg_osspec *),
                     mcg_osspec *out)
{
    char name[64];
    snprintf(name, sizeof(name), "spec.%s", key);
    json_t *arr = mcg_get_arr(c, spec, key, name);
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v) ||
            strchr(json_string_value(v), '\n')) {
            mcg_pctx_err(c, v, "%s[%zu] must be a one-line string", name, i);
            continue;
        }
        fn(c, v, json_string_value(v), out);
    }
}

/*
 * Characters GRUB's script parser gives a meaning in grub.cfg, where the
 * boot loader's drop-in puts kernel arguments unquoted (Debian's 10_linux):
 * "quiet;reboot" would run reboot at every boot, "x='" breaks the file.
 * Refused, as is a leading '#' (a comment).
 */
#define GRUB_META ";|&{}<>'$"

/* One kernelArguments entry: its arguments appended; an open quote is an error. */
static void add_karg(mcg_pctx *c, const json_t *at, const char *s, mcg_osspec *out)
{
    mcg_strv parts = {0};
    mcg_kargs_split(&parts, s);
    for (size_t i = 0; i < parts.n; i++) {
        size_t q = 0;
        for (const char *p = parts.v[i]; *p; p++)
            q += *p == '"';
        if (q % 2)
            mcg_pctx_err(c, at, "kernel argument '%s' has an unterminated quote", parts.v[i]);
        else
            mcg_strv_push(&out->kargs, parts.v[i]);
    }
    mcg_strv_free(&parts);
}

/* One extension: appended when on MCO's list, else an error naming the list. */
static void add_extension(mcg_pctx *c, const json_t *at, const char *s, mcg_osspec *out)
{
    if (!mcg_extension_packages(s)) {
        mcg_pctx_err(c, at,
                     "extension '%s' is not supported (ipsec, kerberos, kernel-devel, "
                     "sandboxed-containers, sysstat, two-node-ha, usbguard)",
                     s);
        return;
    }
    mcg_strv_push(&out->extensions, s);
}

/* Whether an image reference pins a digest: ...@sha256:<64 hex>. */
static bool has_digest(const char *ref)
{
    const char *at = strrchr(ref, '@');
    if (!at || strncmp(at + 1, "sha256:", 7) != 0 || strlen(at + 8) != 64)
        return false;
    return strspn(at + 8, "0123456789abcdef") == 64;
}

/* An image reference: one line, no blanks, not an option (MCO passes it to
 * rpm-ostree, the agent to bootc); osImageURL without a digest is a warning. */
static void image_ref(mcg_pctx *c, const json_t *spec, const char *key, char **out)
{
    char name[64];
    snprintf(name, sizeof(name), "spec.%s", key);
    if (!mcg_get_str(c, spec, key, name, out) || !*out)
        return;
    if (!**out) {
        free(*out);
        *out = NULL;
        return;
    }
    for (const char *p = *out; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == '\'' || *p == '"' || *p == '\\') {
            mcg_pctx_err(c, json_object_get(spec, key), "field '%s' is not an image reference",
                         name);
            return;
        }
}

/* An image reference the host tools would misread (mcg_osspec_check_host). */
static void image_host(mcg_pctx *c, const json_t *spec, const char *key, const char *ref)
{
    if (!ref)
        return;
    if (ref[0] == '-') { /* `bootc switch --help` exits 0: an option, not an image */
        mcg_pctx_err(c, json_object_get(spec, key),
                     "field 'spec.%s' is not an image reference: '%s' starts with '-'", key, ref);
        return;
    }
    if (!strcmp(key, "osImageURL") && !has_digest(ref))
        mcg_pctx_warn(c, json_object_get(spec, key),
                      "field 'spec.%s' names no digest (@sha256:...): the image it pulls may "
                      "change under the same name",
                      key);
}

void mcg_osspec_check_host(mcg_pctx *c, const json_t *spec, const mcg_osspec *o)
{
    for (size_t i = 0; i < o->kargs.n; i++) {
        const char *a = o->kargs.v[i], *bad = strpbrk(a, GRUB_META);
        if (bad || a[0] == '#')
            mcg_pctx_err(c, json_object_get(spec, "kernelArguments"),
                         "kernel argument '%s' holds '%c', which GRUB's script parser "
                         "interprets (in grub.cfg it would not reach the kernel as written)",
                         a, bad ? *bad : '#');
    }
    image_host(c, spec, "osImageURL", o->os_image_url);
    image_host(c, spec, "baseOSExtensionsContainerImage", o->ext_image);
}

/* The fields beside spec.config into out; problems through c (model_int.h). */
void mcg_osspec_from_json(mcg_pctx *c, const json_t *spec, mcg_osspec *out)
{
    str_list(c, spec, "kernelArguments", add_karg, out);
    str_list(c, spec, "extensions", add_extension, out);
    mcg_tri fips = MCG_UNSET;
    mcg_get_bool(c, spec, "fips", "spec.fips", &fips);
    out->fips = fips == MCG_TRUE;
    char *kt = NULL;
    if (mcg_get_str(c, spec, "kernelType", "spec.kernelType", &kt) && kt) {
        if (!*kt || !strcmp(kt, "default")) {
            free(kt);
            kt = NULL;
        } else if (strcmp(kt, "realtime") && strcmp(kt, "64k-pages")) {
            mcg_pctx_err(c, json_object_get(spec, "kernelType"),
                         "kernelType '%s' is invalid (default, realtime or 64k-pages)", kt);
            free(kt);
            kt = NULL;
        }
    }
    out->kernel_type = kt;
    image_ref(c, spec, "osImageURL", &out->os_image_url);
    image_ref(c, spec, "baseOSExtensionsContainerImage", &out->ext_image);
}
