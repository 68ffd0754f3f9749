/*
 * baseimage.c — the image a node booted before mcgit first rebased it.
 *
 * MCO's rendered configs always carry an osImageURL (the release's default
 * when no MachineConfig sets one), so its nodes always have an image to go
 * back to. In mcgit an unset osImageURL means "the image the node was
 * installed with": before the first rebase the agent asks the node what it
 * booted (`rpm-ostree status --json --booted`, `bootc status --json`,
 * through the --host-exec prefix) and keeps the answer in its state
 * directory as "<tool> <kind> <reference>"; when the field goes, the node is
 * rebased back there. Parsing and the commands are here; the agent does the
 * state writes.
 */
#include "agent/agent_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define STATUS_MAX (4u << 20)

/* Run cmd through sh, its stdout into out (at most STATUS_MAX bytes); its exit status. */
static int capture(const char *cmd, mcg_buf *out)
{
    FILE *p = popen(cmd, "re");
    if (!p)
        return -1;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
        if (out->len < STATUS_MAX)
            mcg_buf_put(out, chunk, n);
    int st = pclose(p);
    return st < 0 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The booted deployment's reference in rpm-ostree's status: "container REF" or "ostree REFSPEC". */
static char *from_rpm_ostree(const json_t *j)
{
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(j, "deployments"), i, d) {
        if (!json_is_true(json_object_get(d, "booted")))
            continue;
        const char *img = json_string_value(json_object_get(d, "container-image-reference"));
        const char *origin = json_string_value(json_object_get(d, "origin"));
        if (img && *img)
            return mcg_sprintf("rpm-ostree container %s", img);
        if (origin && *origin)
            return mcg_sprintf("rpm-ostree ostree %s", origin);
    }
    return NULL;
}

/* The booted image in bootc's status: "bootc image REF". */
static char *from_bootc(const json_t *j)
{
    const json_t *img = json_object_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(j, "status"), "booted"), "image"),
            "image"),
        "image");
    const char *s = json_string_value(img);
    return s && *s ? mcg_sprintf("bootc image %s", s) : NULL;
}

char *mcg_booted_image_query(const char *host_exec, bool bootc, mcg_err *err)
{
    const char *q = bootc ? "bootc status --json" : "rpm-ostree status --json --booted";
    char *cmd = host_exec ? mcg_sprintf("%s %s", host_exec, q) : mcg_strdup(q);
    mcg_buf out = MCG_BUF_INIT;
    int st = capture(cmd, &out);
    char *rec = NULL;
    if (st != 0) {
        mcg_err_set(err, MCG_EIO, "'%s' failed (exit %d)", cmd, st);
        goto done;
    }
    json_error_t je;
    json_t *j = json_loadb(out.ptr ? out.ptr : "", out.len, 0, &je);
    rec = j ? (bootc ? from_bootc(j) : from_rpm_ostree(j)) : NULL;
    json_decref(j);
    if (!rec || strchr(rec, '\n'))
        mcg_err_set(err, MCG_EINVAL, "'%s': no booted image in its answer", cmd);
    if (rec && strchr(rec, '\n')) {
        free(rec);
        rec = NULL;
    }
done:
    free(cmd);
    mcg_buf_free(&out);
    return rec;
}

char *mcg_booted_image_command(const char *rec)
{
    const char *sp = strchr(rec, ' ');
    const char *ref = sp ? strchr(sp + 1, ' ') : NULL;
    if (!ref || !ref[1])
        return NULL;
    ref++;
    mcg_buf c = MCG_BUF_INIT;
    if (!strncmp(rec, "rpm-ostree container ", 21))
        mcg_buf_puts(&c, "rpm-ostree rebase --experimental ");
    else if (!strncmp(rec, "rpm-ostree ostree ", 18))
        mcg_buf_puts(&c, "rpm-ostree rebase ");
    else if (!strncmp(rec, "bootc image ", 12))
        mcg_buf_puts(&c, "bootc switch ");
    else
        return NULL;
    mcg_sh_quote(&c, ref);
    size_t n;
    return mcg_buf_detach(&c, &n);
}
