/*
 * firstboot.c — a rendered config as a new machine takes it at first boot
 * (`mcgit serve-config`): the Ignition config of the spec as it is, or
 * cloud-init user-data that writes the same files, directories, links,
 * units and core's keys, then starts mcgit's agent. Pure: bytes in, bytes out.
 */
#include "render/render.h"

#include <stdio.h>
#include <string.h>

int mcg_render_ignition_doc(const char *spec, size_t len, mcg_buf *out, mcg_err *err)
{
    json_error_t je;
    json_t *root = json_loadb(spec, len, JSON_REJECT_DUPLICATES, &je);
    json_t *cfg = json_object_get(root, "config");
    int rc = 0;
    if (!json_is_object(cfg))
        rc = mcg_err_set(err, MCG_EINVAL, "rendered spec has no config object");
    else
        rc = mcg_json_canonical(cfg, out, err);
    json_decref(root);
    return rc;
}

/* A YAML double-quoted scalar: JSON's escapes, every non-ASCII one escaped. */
static void yq(mcg_buf *b, const char *s)
{
    json_t *v = json_string(s);
    char *q = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
    mcg_buf_puts(b, q ? q : "\"\"");
    free(q);
    json_decref(v);
}

/* One runcmd entry, as an argv list (no shell). */
static void cmd(mcg_buf *b, const char *const *argv)
{
    mcg_buf_puts(b, "- [");
    for (size_t i = 0; argv[i]; i++) {
        if (i)
            mcg_buf_puts(b, ", ");
        yq(b, argv[i]);
    }
    mcg_buf_puts(b, "]\n");
}

static void write_file(mcg_buf *b, const char *path, const void *data, size_t len, int mode)
{
    mcg_buf_puts(b, "- path: ");
    yq(b, path);
    mcg_buf_printf(b, "\n  permissions: \"0%o\"\n  encoding: b64\n  content: \"", (unsigned)mode);
    mcg_base64_encode(data, len, b);
    mcg_buf_puts(b, "\"\n");
}

static char *owner_str(const mcg_owner *u, const mcg_owner *g)
{
    char us[32], gs[32];
    snprintf(us, sizeof(us), "%lld", (long long)u->id);
    snprintf(gs, sizeof(gs), "%lld", (long long)g->id);
    const char *un = u->name ? u->name : u->has_id ? us : "0";
    const char *gn = g->name ? g->name : g->has_id ? gs : "0";
    return mcg_sprintf("%s:%s", un, gn);
}

static bool owned(const mcg_storage *s)
{
    return s->user.name || s->group.name || (s->user.has_id && s->user.id) ||
           (s->group.has_id && s->group.id);
}

static void cc_files(mcg_buf *b, const mcg_ignition *ign)
{
    size_t n = ign->ssh_keys.n ? 1 : 0;
    for (size_t i = 0; i < ign->nstorage; i++)
        n += ign->storage[i].kind == MCG_NODE_FILE;
    for (size_t i = 0; i < ign->nunits; i++)
        n += ign->units[i].contents || ign->units[i].ndropins;
    mcg_buf_puts(b, n ? "write_files:\n" : "write_files: []\n");
    for (size_t i = 0; i < ign->nstorage; i++) {
        const mcg_storage *s = &ign->storage[i];
        if (s->kind == MCG_NODE_FILE)
            write_file(b, s->path, s->data ? (const void *)s->data : "", s->data_len,
                       s->has_mode ? s->mode : 0644);
    }
    for (size_t i = 0; i < ign->nunits; i++) {
        const mcg_unit *u = &ign->units[i];
        if (u->contents) {
            char *p = mcg_sprintf("/etc/systemd/system/%s", u->name);
            write_file(b, p, u->contents, strlen(u->contents), 0644);
            free(p);
        }
        for (size_t j = 0; j < u->ndropins; j++) {
            if (!u->dropins[j].contents)
                continue;
            char *p = mcg_sprintf("/etc/systemd/system/%s.d/%s", u->name, u->dropins[j].name);
            write_file(b, p, u->dropins[j].contents, strlen(u->dropins[j].contents), 0644);
            free(p);
        }
    }
    if (ign->ssh_keys.n) {
        mcg_buf keys = MCG_BUF_INIT;
        for (size_t i = 0; i < ign->ssh_keys.n; i++)
            mcg_buf_printf(&keys, "%s\n", ign->ssh_keys.v[i]);
        write_file(b, "/home/core/.ssh/authorized_keys.d/ignition", keys.ptr, keys.len, 0600);
        mcg_buf_puts(b, "  owner: \"core:core\"\n  defer: true\n");
        mcg_buf_free(&keys);
    }
}

static void cc_storage_cmds(mcg_buf *b, const mcg_ignition *ign)
{
    for (size_t i = 0; i < ign->nstorage; i++) {
        const mcg_storage *s = &ign->storage[i];
        char mode[16];
        snprintf(mode, sizeof(mode), "0%o", (unsigned)(s->has_mode ? s->mode : 0755));
        if (s->kind == MCG_NODE_DIR)
            cmd(b, (const char *const[]){"install", "-d", "-m", mode, "--", s->path, NULL});
        else if (s->kind == MCG_NODE_LINK)
            cmd(b, (const char *const[]){"ln", s->hard == MCG_TRUE ? "-f" : "-sfn", "--", s->target,
                                         s->path, NULL});
        if (owned(s)) {
            char *o = owner_str(&s->user, &s->group);
            cmd(b, (const char *const[]){"chown", "-h", "--", o, s->path, NULL});
            free(o);
        }
    }
}

static void cc_unit_cmds(mcg_buf *b, const mcg_ignition *ign)
{
    if (ign->ssh_keys.n) /* as the agent keeps them: core's, 0700 */
        cmd(b,
            (const char *const[]){"install", "-d", "-m", "0700", "-o", "core", "-g", "core", "--",
                                  "/home/core/.ssh", "/home/core/.ssh/authorized_keys.d", NULL});
    cmd(b, (const char *const[]){"systemctl", "daemon-reload", NULL});
    for (size_t i = 0; i < ign->nunits; i++) {
        const mcg_unit *u = &ign->units[i];
        if (u->mask == MCG_TRUE)
            cmd(b, (const char *const[]){"systemctl", "mask", "--", u->name, NULL});
        else if (u->enabled == MCG_TRUE)
            cmd(b, (const char *const[]){"systemctl", "enable", "--", u->name, NULL});
        else if (u->enabled == MCG_FALSE)
            cmd(b, (const char *const[]){"systemctl", "disable", "--", u->name, NULL});
    }
}

int mcg_render_cloud_config(const char *spec, size_t len, const char *name, const char *provenance,
                            mcg_buf *out, mcg_err *err)
{
    mcg_ignition ign = {0};
    int rc = mcg_ignition_parse_json(&ign, name, spec, len, err);
    if (rc)
        return rc;
    mcg_buf_printf(out, "#cloud-config\n# mcgit: %s (%s)\n", name, provenance);
    cc_files(out, &ign);
    mcg_buf_puts(out, "runcmd:\n");
    cc_storage_cmds(out, &ign);
    cc_unit_cmds(out, &ign);
    cmd(out, (const char *const[]){"systemctl", "enable", "--now", "mcgit-agent.service", NULL});
    mcg_ignition_free(&ign);
    return 0;
}
