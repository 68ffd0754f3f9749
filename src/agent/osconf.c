/*
 * osconf.c — the part of a rendered config that is not files: kernel
 * arguments, the OS image, extensions, the kernel type, FIPS, core's
 * password hash and the sections MCO calls unreconcilable.
 *
 * What a node can do is detected under its root, per node, every update:
 *   run/ostree-booted + usr/bin/rpm-ostree   an ostree (image-based) host:
 *       kernel arguments, OS image, extensions and kernel type all go
 *       through rpm-ostree, as MCO's daemon does (`rpm-ostree kargs`,
 *       `rpm-ostree rebase`, `rpm-ostree update --install/--uninstall`,
 *       `rpm-ostree override remove/reset`);
 *   usr/bin/bootc (without rpm-ostree)       a bootc host: the OS image
 *       through `bootc switch`; no extensions or kernel type;
 *   otherwise kernel arguments only, through the first boot-loader
 *   configuration found: etc/kernel/cmdline (kernel-install: the file is
 *   edited, then `kernel-install add-all`), grubby (`grubby
 *   --update-kernel=ALL --remove-args/--args`), etc/default/grub (a drop-in
 *   etc/default/grub.d/50-mcgit.cfg, then update-grub, grub2-mkconfig or
 *   grub-mkconfig, whichever the root has).
 * A field the node cannot apply makes the update Degraded, naming the field
 * and the node, before anything is written. So does a change MCO refuses on
 * an installed node: a different `fips` (or one that does not match the
 * node's /proc/sys/crypto/fips_enabled), or any change to disks, RAID,
 * filesystems, LUKS, groups or users other than core.
 *
 * The plan is a list of steps fixed in the journal before the first one
 * runs — a command line, a file written or removed under the root, core's
 * password hash set in etc/shadow — so a restarted agent carries on from
 * the step it had reached. Every kernel-argument command deletes the old and
 * the new arguments before appending the new ones, so running it twice
 * leaves the same command line. Every change but the password hash needs a
 * reboot (MCO: osUpdate, kargs, kernelType, extensions).
 */
#include "agent/agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GRUB_DROPIN "etc/default/grub.d/50-mcgit.cfg"
#define KERNEL_CMDLINE "etc/kernel/cmdline"
#define SHADOW "etc/shadow"

/* ------------------------------------------------------------ detection */

/* Something (of any type) at rel under the root, without following links. */
static bool exists(mcg_sroot *r, const char *rel)
{
    int dfd;
    const char *base;
    mcg_err e = {0};
    struct stat st;
    if (mcg_sroot_parent(r, rel, false, &dfd, &base, &e) != 0)
        return false;
    return fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* The first of rels that exists under the root (in *which); false when none. */
static bool exists_any(mcg_sroot *r, const char *const *rels, const char **which)
{
    for (; *rels; rels++)
        if (exists(r, *rels)) {
            if (which)
                *which = *rels;
            return true;
        }
    return false;
}

/* What the node offers, from files under its root (agent_int.h). */
void mcg_host_detect(mcg_host *h, mcg_sroot *r, bool live)
{
    static const char *const rpm_ostree[] = {"usr/bin/rpm-ostree", NULL};
    static const char *const bootc[] = {"usr/bin/bootc", NULL};
    static const char *const grubby[] = {"usr/sbin/grubby", "usr/bin/grubby", "sbin/grubby", NULL};
    static const char *const update_grub[] = {"usr/sbin/update-grub", NULL};
    static const char *const grub2[] = {"usr/sbin/grub2-mkconfig", "usr/bin/grub2-mkconfig", NULL};
    memset(h, 0, sizeof(*h));
    h->rpm_ostree = exists(r, "run/ostree-booted") && exists_any(r, rpm_ostree, NULL);
    h->bootc = exists_any(r, bootc, NULL);
    if (h->rpm_ostree)
        h->boot = MCG_BOOT_RPM_OSTREE;
    else if (exists(r, KERNEL_CMDLINE))
        h->boot = MCG_BOOT_KERNEL_INSTALL;
    else if (exists_any(r, grubby, NULL))
        h->boot = MCG_BOOT_GRUBBY;
    else if (exists(r, "etc/default/grub")) {
        h->boot = MCG_BOOT_GRUB;
        h->grub_update = exists_any(r, update_grub, NULL) ? "update-grub"
                         : exists_any(r, grub2, NULL)     ? "grub2-mkconfig -o /boot/grub2/grub.cfg"
                                                          : "grub-mkconfig -o /boot/grub/grub.cfg";
    }
    /* FIPS: the running kernel's (not namespaced, as the boot id) when live;
     * a simulated node's root may carry proc/sys/crypto/fips_enabled */
    h->fips = -1;
    char buf[8] = {0};
    int fd = -1;
    if (live) {
        fd = open("/proc/sys/crypto/fips_enabled", O_RDONLY | O_CLOEXEC);
    } else {
        int dfd;
        const char *base;
        mcg_err e = {0};
        if (mcg_sroot_parent(r, "proc/sys/crypto/fips_enabled", false, &dfd, &base, &e) == 0)
            fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd >= 0) {
        if (read(fd, buf, sizeof(buf) - 1) > 0 && (buf[0] == '0' || buf[0] == '1'))
            h->fips = buf[0] - '0';
        close(fd);
    }
}

/* The name of a boot-loader kind, for logs. */
const char *mcg_boot_name(mcg_boot_kind k)
{
    switch (k) {
    case MCG_BOOT_RPM_OSTREE:
        return "rpm-ostree";
    case MCG_BOOT_KERNEL_INSTALL:
        return "kernel-install";
    case MCG_BOOT_GRUBBY:
        return "grubby";
    case MCG_BOOT_GRUB:
        return "grub";
    case MCG_BOOT_NONE:
        break;
    }
    return "none";
}

/* ------------------------------------------------------------ helpers */

/* s quoted for sh: 'a'\''b' */
void mcg_sh_quote(mcg_buf *b, const char *s)
{
    mcg_buf_putc(b, '\'');
    for (; *s; s++) {
        if (*s == '\'')
            mcg_buf_puts(b, "'\\''");
        else
            mcg_buf_putc(b, *s);
    }
    mcg_buf_putc(b, '\'');
}

/* Same strings in the same order. */
static bool strv_equal(const mcg_strv *a, const mcg_strv *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i], b->v[i]))
            return false;
    return true;
}

/* Equal strings, NULL equal only to NULL. */
static bool str_equal(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* Append a command step for field; cmd is consumed (freed). */
static void step_run(mcg_ossteps *steps, const char *field, mcg_buf *cmd)
{
    mcg_osstep_add(steps, MCG_OSSTEP_RUN, field, cmd->ptr, NULL, false);
    mcg_buf_free(cmd);
}

/* Old and new arguments united (old first, no repeats): what is deleted
 * before the new ones are appended, so a re-run changes nothing. */
static void kargs_union(mcg_strv *out, const mcg_strv *old, const mcg_strv *new_args)
{
    for (size_t i = 0; i < old->n; i++)
        if (!mcg_strv_contains(out, old->v[i]))
            mcg_strv_push(out, old->v[i]);
    for (size_t i = 0; i < new_args->n; i++)
        if (!mcg_strv_contains(out, new_args->v[i]))
            mcg_strv_push(out, new_args->v[i]);
}

/* The words of a command line without every argument in drop, then add. */
static char *cmdline_edit(const char *text, const mcg_strv *drop, const mcg_strv *add)
{
    mcg_strv words = {0};
    mcg_kargs_split(&words, text);
    mcg_buf b = MCG_BUF_INIT;
    for (size_t i = 0; i < words.n; i++)
        if (!mcg_strv_contains(drop, words.v[i]))
            mcg_buf_printf(&b, "%s%s", b.len ? " " : "", words.v[i]);
    for (size_t i = 0; i < add->n; i++)
        mcg_buf_printf(&b, "%s%s", b.len ? " " : "", add->v[i]);
    mcg_buf_putc(&b, '\n');
    mcg_strv_free(&words);
    size_t len;
    return mcg_buf_detach(&b, &len);
}

/* Read a small file under the root (NULL when missing). */
static char *read_rel(mcg_sroot *r, const char *rel)
{
    int dfd;
    const char *base;
    mcg_err e = {0};
    if (mcg_sroot_parent(r, rel, false, &dfd, &base, &e) != 0)
        return NULL;
    int fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    mcg_buf b = MCG_BUF_INIT;
    char chunk[4096];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof(chunk))) > 0 && b.len < (1u << 20))
        mcg_buf_put(&b, chunk, (size_t)n);
    close(fd);
    size_t len;
    return mcg_buf_detach(&b, &len);
}

static const char *const default_kernel[] = {
    "kernel", "kernel-core", "kernel-modules", "kernel-modules-core", "kernel-modules-extra", NULL};
static const char *const rt_kernel[] = {"kernel-rt-core", "kernel-rt-modules",
                                        "kernel-rt-modules-extra", "kernel-rt-kvm", NULL};
static const char *const k64_kernel[] = {"kernel-64k-core", "kernel-64k-modules",
                                         "kernel-64k-modules-core", "kernel-64k-modules-extra",
                                         NULL};

/* The packages of a non-default kernel type. */
static const char *const *kernel_pkgs(const char *type)
{
    return !strcmp(type, "realtime") ? rt_kernel : k64_kernel;
}

/* The packages of a list of extensions, without repeats, in order. */
static void ext_pkgs(mcg_strv *out, const mcg_strv *exts)
{
    for (size_t i = 0; i < exts->n; i++) {
        const char *const *p = mcg_extension_packages(exts->v[i]);
        for (; p && *p; p++)
            if (!mcg_strv_contains(out, *p))
                mcg_strv_push(out, *p);
    }
}

/* Whether the section key holds the same in a and b (absent and empty are equal). */
static bool section_equal(const json_t *a, const json_t *b, const char *key)
{
    json_t *x = a ? json_object_get(a, key) : NULL, *y = b ? json_object_get(b, key) : NULL;
    bool xe = !x || (json_is_array(x) ? !json_array_size(x) : !json_object_size(x));
    bool ye = !y || (json_is_array(y) ? !json_array_size(y) : !json_object_size(y));
    if (xe || ye)
        return xe && ye;
    return json_equal(x, y);
}

/* ------------------------------------------------------------ installed */

/* Whether the passwd/group-style text db has an entry "name:". */
static bool db_has(const char *db, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = db; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, name, n) && p[n] == ':')
            return true;
    return false;
}

/* Whether mountinfo (proc's format: field 5 is the mount point) has one at path. */
static bool mounted_at(const char *mountinfo, const char *path)
{
    for (const char *p = mountinfo; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        const char *f = p;
        for (int i = 0; i < 4 && f; i++)
            f = strchr(f, ' '), f = f ? f + 1 : NULL;
        size_t n = strlen(path);
        if (f && !strncmp(f, path, n) && f[n] == ' ')
            return true;
    }
    return false;
}

/* The names (or, for filesystems, paths) of the section key's entries. */
static void entry_names(mcg_strv *out, const json_t *extra, const char *key, const char *field)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(extra, key), i, v) {
        const char *s = json_string_value(json_object_get(v, field));
        if (s && *s)
            mcg_strv_push(out, s);
    }
}

/*
 * One install-time section checked against the node: what db (a file under
 * the root) must list. *checked: the node let us look (the file exists).
 * Fails, naming the entry, when an entry is not there.
 */
static int check_db(bool *checked, mcg_sroot *r, const json_t *extra, const char *key,
                    const char *field, const char *rel, const char *nn, mcg_err *err)
{
    mcg_strv names = {0};
    entry_names(&names, extra, key, field);
    char *db = names.n ? read_rel(r, rel) : NULL;
    int rc = 0;
    *checked = db != NULL;
    for (size_t i = 0; db && i < names.n && !rc; i++) {
        bool has =
            !strcmp(key, "filesystems") ? mounted_at(db, names.v[i]) : db_has(db, names.v[i]);
        if (!has)
            rc = mcg_err_set(err, MCG_EINVAL,
                             "%s: %s %s is not on node %s (this node's first config takes the "
                             "sections made at install as installed, and this one is not)",
                             !strcmp(key, "filesystems") ? "storage.filesystems"
                             : !strcmp(key, "users")     ? "passwd.users"
                                                         : "passwd.groups",
                             !strcmp(key, "filesystems") ? "no filesystem mounted at" : "entry",
                             names.v[i], nn);
    }
    free(db);
    mcg_strv_free(&names);
    return rc;
}

/* The install-time sections of a first config, and how each was taken. */
static const struct {
    const char *key, *name, *field, *rel; /* rel NULL: the node does not let us check */
} installed[] = {
    {"disks", "storage.disks", NULL, NULL},
    {"raid", "storage.raid", NULL, NULL},
    {"filesystems", "storage.filesystems", "path", "proc/%d/mountinfo"},
    {"luks", "storage.luks", NULL, NULL},
    {"users", "passwd.users", "name", "etc/passwd"},
    {"groups", "passwd.groups", "name", "etc/group"},
    {"kernelArguments", "Ignition kernelArguments", NULL, NULL},
};

/*
 * A first config's install-time sections against the node (users and
 * groups in the root's passwd and group, filesystems mounted at their path
 * when the root is this host's): a mismatch fails; into note (when given)
 * "taken as installed: storage.disks (not checked), passwd.users (checked)".
 */
static int check_installed(mcg_buf *note, mcg_sroot *r, const mcg_ignition *ni, const char *nn,
                           mcg_err *err)
{
    for (size_t i = 0; i < sizeof(installed) / sizeof(installed[0]); i++) {
        json_t *v = ni->extra ? json_object_get(ni->extra, installed[i].key) : NULL;
        if (!v || (json_is_array(v) ? !json_array_size(v) : !json_object_size(v)))
            continue;
        bool checked = false;
        if (installed[i].rel) {
            char *rel = mcg_sprintf(installed[i].rel, (int)getpid());
            int rc = check_db(&checked, r, ni->extra, installed[i].key, installed[i].field, rel, nn,
                              err);
            free(rel);
            if (rc)
                return rc;
        }
        if (note)
            mcg_buf_printf(note, "%s%s (%s)",
                           note->len ? ", " : "taken as installed: ", installed[i].name,
                           checked ? "checked" : "not checked");
    }
    return 0;
}

char *mcg_osconf_installed_note(mcg_sroot *r, const mcg_acfg *new_cfg)
{
    mcg_buf b = MCG_BUF_INIT;
    mcg_err e = {0};
    check_installed(&b, r, &new_cfg->ign, "", &e);
    if (!b.len) {
        mcg_buf_free(&b);
        return NULL;
    }
    size_t len;
    return mcg_buf_detach(&b, &len);
}

/* ------------------------------------------------------------ plan */

/*
 * What MCO refuses on an installed node, checked before anything is
 * planned: a changed section of disks, RAID, filesystems, LUKS, groups,
 * users or Ignition kernel arguments, a changed or mismatched fips, an
 * extensions container image.
 */
static int os_check_reconcilable(mcg_sroot *r, const mcg_host *h, const mcg_acfg *old,
                                 const mcg_ignition *oi, const mcg_ignition *ni, const char *nn,
                                 mcg_err *err)
{
    const mcg_osspec *o = &oi->os, *n = &ni->os;
    int rc;
    if (!old && (rc = check_installed(NULL, r, ni, nn, err)) != 0)
        return rc;
    static const struct {
        const char *key, *name, *why;
    } secs[] = {
        {"disks", "storage.disks", "mcgit does not repartition an installed node"},
        {"raid", "storage.raid", "mcgit does not rebuild RAID on an installed node"},
        {"filesystems", "storage.filesystems", "mcgit does not reformat an installed node"},
        {"luks", "storage.luks", "mcgit does not re-encrypt an installed node"},
        {"groups", "passwd.groups", "only core's SSH keys and password hash change in place"},
        {"users", "passwd.users", "users other than core are made at install only"},
        {"kernelArguments", "Ignition kernelArguments",
         "use the MachineConfig's kernelArguments, which change in place"},
    };
    for (size_t i = 0; old && i < sizeof(secs) / sizeof(secs[0]); i++)
        if (!section_equal(oi->extra, ni->extra, secs[i].key))
            return mcg_err_set(err, MCG_EINVAL, "unreconcilable: %s changed on node %s (%s)",
                               secs[i].name, nn, secs[i].why);
    if (old && o->fips != n->fips)
        return mcg_err_set(err, MCG_EINVAL,
                           "unreconcilable: fips changed from %s to %s on node %s (FIPS mode is "
                           "set at install and cannot change)",
                           o->fips ? "true" : "false", n->fips ? "true" : "false", nn);
    if (h->fips >= 0 && h->fips != (int)n->fips)
        return mcg_err_set(err, MCG_EINVAL,
                           "unreconcilable: fips is %s but node %s runs with FIPS mode %s (it is "
                           "set at install and cannot change)",
                           n->fips ? "true" : "false", nn, h->fips ? "on" : "off");
    if (!str_equal(o->ext_image, n->ext_image) && n->ext_image)
        return mcg_err_set(err, MCG_EINVAL,
                           "baseOSExtensionsContainerImage: node %s cannot use it (mcgit installs "
                           "extensions from the host's rpm-ostree repositories; remove the field)",
                           nn);
    return 0;
}

/* The OS image: rpm-ostree rebase or bootc switch. */
static int os_plan_image(mcg_ossteps *steps, const mcg_host *h, const mcg_osspec *o,
                         const mcg_osspec *n, const char *nn, mcg_err *err)
{
    if (str_equal(o->os_image_url, n->os_image_url))
        return 0;
    if (!n->os_image_url) { /* back to the image booted before the first rebase */
        mcg_osstep_add(steps, MCG_OSSTEP_RESTORE, "osImageURL", "base-image", NULL, false);
        return 0;
    }
    if (!o->os_image_url && (h->rpm_ostree || h->bootc)) /* what it boots now, kept first */
        mcg_osstep_add(steps, MCG_OSSTEP_RECORD, "osImageURL", "base-image", NULL, !h->rpm_ostree);
    mcg_buf c = MCG_BUF_INIT;
    if (h->rpm_ostree) {
        mcg_buf_puts(&c, "rpm-ostree rebase --experimental ");
        char *ref = mcg_sprintf("ostree-unverified-registry:%s", n->os_image_url);
        mcg_sh_quote(&c, ref);
        free(ref);
    } else if (h->bootc) {
        mcg_buf_puts(&c, "bootc switch ");
        mcg_sh_quote(&c, n->os_image_url);
    } else {
        return mcg_err_set(err, MCG_EINVAL,
                           "osImageURL: node %s is not image-based (no rpm-ostree or bootc)", nn);
    }
    step_run(steps, "osImageURL", &c);
    return 0;
}

/* The kernel type: back to the default kernel, then to the new type (rpm-ostree). */
static int os_plan_kernel_type(mcg_ossteps *steps, const mcg_host *h, const mcg_osspec *o,
                               const mcg_osspec *n, const char *nn, mcg_err *err)
{
    const char *ok = o->kernel_type, *nk = n->kernel_type;
    if (str_equal(ok, nk))
        return 0;
    if (!h->rpm_ostree)
        return mcg_err_set(err, MCG_EINVAL,
                           "kernelType: node %s cannot switch to the %s kernel (no rpm-ostree)", nn,
                           nk ? nk : "default");
    if (ok) { /* back to the default kernel first */
        mcg_buf c = MCG_BUF_INIT;
        mcg_buf_puts(&c, "rpm-ostree override reset");
        for (const char *const *p = default_kernel; *p; p++)
            mcg_buf_printf(&c, " %s", *p);
        for (const char *const *p = kernel_pkgs(ok); *p; p++)
            mcg_buf_printf(&c, " --uninstall %s", *p);
        step_run(steps, "kernelType", &c);
    }
    if (nk) {
        mcg_buf c = MCG_BUF_INIT;
        mcg_buf_puts(&c, "rpm-ostree override remove");
        for (const char *const *p = default_kernel; *p; p++)
            mcg_buf_printf(&c, " %s", *p);
        for (const char *const *p = kernel_pkgs(nk); *p; p++)
            mcg_buf_printf(&c, " --install %s", *p);
        step_run(steps, "kernelType", &c);
    }
    return 0;
}

/* Extensions: one rpm-ostree update installing and uninstalling their packages. */
static int os_plan_extensions(mcg_ossteps *steps, const mcg_host *h, const mcg_osspec *o,
                              const mcg_osspec *n, const char *nn, mcg_err *err)
{
    if (strv_equal(&o->extensions, &n->extensions))
        return 0;
    mcg_strv op = {0}, np = {0};
    ext_pkgs(&op, &o->extensions);
    ext_pkgs(&np, &n->extensions);
    mcg_buf c = MCG_BUF_INIT;
    mcg_buf_puts(&c, "rpm-ostree update");
    size_t before = c.len;
    for (size_t i = 0; i < np.n; i++)
        if (!mcg_strv_contains(&op, np.v[i]))
            mcg_buf_printf(&c, " --install %s", np.v[i]);
    for (size_t i = 0; i < op.n; i++)
        if (!mcg_strv_contains(&np, op.v[i]))
            mcg_buf_printf(&c, " --uninstall %s", op.v[i]);
    mcg_strv_free(&op);
    mcg_strv_free(&np);
    if (c.len != before && !h->rpm_ostree) {
        mcg_buf_free(&c);
        return mcg_err_set(err, MCG_EINVAL,
                           "extensions: node %s cannot install extensions (no rpm-ostree)", nn);
    }
    if (c.len != before)
        step_run(steps, "extensions", &c);
    else
        mcg_buf_free(&c);
    return 0;
}

/* Kernel arguments through rpm-ostree kargs: all deleted if present, the new appended. */
static void kargs_rpm_ostree(mcg_ossteps *steps, const mcg_strv *all, const mcg_strv *nargs)
{
    mcg_buf c = MCG_BUF_INIT;
    mcg_buf_puts(&c, "rpm-ostree kargs");
    for (size_t i = 0; i < all->n; i++) {
        char *a = mcg_sprintf("--delete-if-present=%s", all->v[i]);
        mcg_buf_putc(&c, ' ');
        mcg_sh_quote(&c, a);
        free(a);
    }
    for (size_t i = 0; i < nargs->n; i++) {
        char *a = mcg_sprintf("--append=%s", nargs->v[i]);
        mcg_buf_putc(&c, ' ');
        mcg_sh_quote(&c, a);
        free(a);
    }
    step_run(steps, "kernelArguments", &c);
}

/* Kernel arguments through etc/kernel/cmdline, then kernel-install add-all. */
static void kargs_kernel_install(mcg_ossteps *steps, mcg_sroot *r, const mcg_strv *all,
                                 const mcg_strv *nargs)
{
    mcg_buf c = MCG_BUF_INIT;
    char *cur = read_rel(r, KERNEL_CMDLINE);
    char *text = cmdline_edit(cur ? cur : "", all, nargs);
    free(cur);
    mcg_osstep_add(steps, MCG_OSSTEP_WRITE, "kernelArguments", KERNEL_CMDLINE, text, false);
    free(text);
    mcg_buf_puts(&c, "kernel-install add-all");
    step_run(steps, "kernelArguments", &c);
}

/* Kernel arguments through grubby: all removed, then the new added. */
static void kargs_grubby(mcg_ossteps *steps, const mcg_strv *all, const mcg_strv *nargs)
{
    mcg_buf c = MCG_BUF_INIT;
    mcg_buf_puts(&c, "grubby --update-kernel=ALL --remove-args=");
    mcg_buf words = MCG_BUF_INIT;
    for (size_t i = 0; i < all->n; i++)
        mcg_buf_printf(&words, "%s%s", i ? " " : "", all->v[i]);
    mcg_sh_quote(&c, words.ptr ? words.ptr : "");
    mcg_buf_free(&words);
    step_run(steps, "kernelArguments", &c);
    if (nargs->n) {
        mcg_buf_puts(&c, "grubby --update-kernel=ALL --args=");
        for (size_t i = 0; i < nargs->n; i++)
            mcg_buf_printf(&words, "%s%s", i ? " " : "", nargs->v[i]);
        mcg_sh_quote(&c, words.ptr);
        mcg_buf_free(&words);
        step_run(steps, "kernelArguments", &c);
    }
}

/* Kernel arguments through a drop-in of etc/default/grub.d (removed when none), then grub's update.
 */
static void kargs_grub(mcg_ossteps *steps, const mcg_host *h, const mcg_strv *nargs)
{
    mcg_buf c = MCG_BUF_INIT;
    if (nargs->n) {
        /* GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX a b", for sh's "..." */
        mcg_buf d = MCG_BUF_INIT;
        mcg_buf_puts(&d, "# written by mcgit: the MachineConfig kernelArguments\n"
                         "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX");
        for (size_t i = 0; i < nargs->n; i++) {
            mcg_buf_putc(&d, ' ');
            for (const char *p = nargs->v[i]; *p; p++) {
                if (strchr("\"\\$`", *p))
                    mcg_buf_putc(&d, '\\');
                mcg_buf_putc(&d, *p);
            }
        }
        mcg_buf_puts(&d, "\"\n");
        mcg_osstep_add(steps, MCG_OSSTEP_WRITE, "kernelArguments", GRUB_DROPIN, d.ptr, false);
        mcg_buf_free(&d);
    } else {
        mcg_osstep_add(steps, MCG_OSSTEP_REMOVE, "kernelArguments", GRUB_DROPIN, NULL, false);
    }
    mcg_buf_puts(&c, h->grub_update);
    step_run(steps, "kernelArguments", &c);
}

/* Kernel arguments, through the node's boot-loader configuration. */
static int os_plan_kargs(mcg_ossteps *steps, mcg_sroot *r, const mcg_host *h, const mcg_osspec *o,
                         const mcg_osspec *n, const char *nn, mcg_err *err)
{
    if (strv_equal(&o->kargs, &n->kargs))
        return 0;
    mcg_strv all = {0};
    kargs_union(&all, &o->kargs, &n->kargs);
    int rc = 0;
    switch (h->boot) {
    case MCG_BOOT_RPM_OSTREE:
        kargs_rpm_ostree(steps, &all, &n->kargs);
        break;
    case MCG_BOOT_KERNEL_INSTALL:
        kargs_kernel_install(steps, r, &all, &n->kargs);
        break;
    case MCG_BOOT_GRUBBY:
        kargs_grubby(steps, &all, &n->kargs);
        break;
    case MCG_BOOT_GRUB:
        kargs_grub(steps, h, &n->kargs);
        break;
    case MCG_BOOT_NONE:
        rc = mcg_err_set(err, MCG_EINVAL,
                         "kernelArguments: node %s has no boot loader configuration mcgit can "
                         "change (rpm-ostree, /etc/kernel/cmdline, grubby or /etc/default/grub)",
                         nn);
        break;
    }
    mcg_strv_free(&all);
    return rc;
}

/* Core's password hash, set in etc/shadow: no reboot (MCO: a passwd change needs none). */
static int os_plan_password(mcg_ossteps *steps, mcg_sroot *r, const mcg_ignition *oi,
                            const mcg_ignition *ni, const char *nn, mcg_err *err)
{
    if (str_equal(oi->password_hash, ni->password_hash))
        return 0;
    char *shadow = read_rel(r, SHADOW);
    bool has_core = shadow && (!strncmp(shadow, "core:", 5) || strstr(shadow, "\ncore:"));
    free(shadow);
    if (!has_core)
        return mcg_err_set(err, MCG_EINVAL,
                           "passwordHash: user core is not in /etc/shadow on node %s", nn);
    /* unset after being set: locked, as MCO leaves it ("*") */
    mcg_osstep_add(steps, MCG_OSSTEP_SHADOW, "passwordHash",
                   ni->password_hash ? ni->password_hash : "*", NULL, false);
    return 0;
}

int mcg_osplan_make(mcg_ossteps *out, bool *reboot, mcg_sroot *r, const mcg_host *h,
                    const mcg_acfg *old, const mcg_acfg *new_cfg, const char *node, mcg_err *err)
{
    static const mcg_ignition none = {0};
    const mcg_ignition *oi = old ? &old->ign : &none, *ni = &new_cfg->ign;
    const mcg_osspec *o = &oi->os, *n = &ni->os;
    const char *nn = node && *node ? node : "this node";
    mcg_ossteps steps = {NULL, 0};
    int rc = 0;
    *reboot = false;
    if ((rc = os_check_reconcilable(r, h, old, oi, ni, nn, err)) != 0 ||
        (rc = os_plan_image(&steps, h, o, n, nn, err)) != 0 ||
        (rc = os_plan_kernel_type(&steps, h, o, n, nn, err)) != 0 ||
        (rc = os_plan_extensions(&steps, h, o, n, nn, err)) != 0 ||
        (rc = os_plan_kargs(&steps, r, h, o, n, nn, err)) != 0)
        goto out;
    *reboot = steps.n > 0;
    if ((rc = os_plan_password(&steps, r, oi, ni, nn, err)) != 0)
        goto out;
    mcg_osstep_free(out);
    *out = steps; /* transferred */
    steps.v = NULL;
    steps.n = 0;
out:
    mcg_osstep_free(&steps);
    return rc;
}

void mcg_osstep_add(mcg_ossteps *s, mcg_osstep_kind kind, const char *field, const char *arg,
                    const char *data, bool bootc)
{
    s->v = mcg_realloc(s->v, (s->n + 1) * sizeof(*s->v));
    mcg_osstep *st = &s->v[s->n++];
    st->kind = kind;
    st->field = mcg_strdup(field);
    st->arg = mcg_strdup(arg);
    st->data = data ? mcg_strdup(data) : NULL;
    st->bootc = bootc;
}

void mcg_osstep_free(mcg_ossteps *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].field);
        free(s->v[i].arg);
        free(s->v[i].data);
    }
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

/* ------------------------------------------------------------ steps */

/*
 * Replace rel under the root with data atomically: a temp file in the same
 * directory with the old file's mode and owner (mode for a new one), fsync,
 * rename, directory fsync.
 */
static int write_rel(mcg_sroot *r, const char *rel, const char *data, size_t len, int mode,
                     mcg_err *err)
{
    int dfd;
    const char *base;
    int rc = mcg_sroot_parent(r, rel, true, &dfd, &base, err);
    if (rc)
        return rc;
    struct stat st;
    bool had = fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (had && !S_ISREG(st.st_mode))
        return mcg_err_set(err, MCG_ETRUST, "/%s is not a regular file", rel);
    char tmp[64];
    mcg_agent_tmpname(base, tmp);
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return mcg_err_set_os(err, MCG_EIO, errno, "/%s", rel);
    if (mcg_write_all(fd, data, len) != 0 ||
        fchmod(fd, had ? (st.st_mode & 07777) : (mode_t)mode) ||
        (had && geteuid() == 0 && fchown(fd, st.st_uid, st.st_gid) != 0) || fsync(fd) != 0) {
        rc = mcg_err_set_os(err, MCG_EIO, errno, "/%s", rel);
        close(fd);
        unlinkat(dfd, tmp, 0);
        return rc;
    }
    close(fd);
    if (renameat(dfd, tmp, dfd, base) != 0) {
        rc = mcg_err_set_os(err, MCG_EIO, errno, "/%s", rel);
        unlinkat(dfd, tmp, 0);
        return rc;
    }
    fsync(dfd);
    return 0;
}

/* Set core's password field in the root's etc/shadow. */
static int set_shadow(mcg_sroot *r, const char *hash, mcg_err *err)
{
    char *text = read_rel(r, SHADOW);
    if (!text)
        return mcg_err_set(err, MCG_ENOTFOUND, "/etc/shadow: cannot be read");
    mcg_buf b = MCG_BUF_INIT;
    bool found = false;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) + 1 : strlen(line);
        const char *c2 = n > 5 && !strncmp(line, "core:", 5) ? memchr(line + 5, ':', n - 5) : NULL;
        if (c2 && !found) {
            mcg_buf_printf(&b, "core:%s", hash);
            mcg_buf_put(&b, c2, n - (size_t)(c2 - line));
            found = true;
        } else {
            mcg_buf_put(&b, line, n);
        }
        line += n;
    }
    free(text);
    int rc = found ? write_rel(r, SHADOW, b.ptr, b.len, 0600, err)
                   : mcg_err_set(err, MCG_ENOTFOUND, "user core is not in /etc/shadow");
    mcg_buf_free(&b);
    return rc;
}

/* A write, remove or shadow step under the root (agent_int.h). */
int mcg_osstep_file(mcg_sroot *r, const mcg_osstep *step, mcg_err *err)
{
    int rc = 0;
    if (step->kind == MCG_OSSTEP_WRITE) {
        if (!step->data)
            return mcg_err_set(err, MCG_EINVAL, "journal: a write step without data");
        rc = write_rel(r, step->arg, step->data, strlen(step->data), 0644, err);
    } else if (step->kind == MCG_OSSTEP_REMOVE) {
        int dfd;
        const char *base;
        rc = mcg_sroot_parent(r, step->arg, false, &dfd, &base, err);
        if (rc == MCG_ENOTFOUND)
            return 0;
        if (!rc && unlinkat(dfd, base, 0) != 0 && errno != ENOENT)
            rc = mcg_err_set_os(err, MCG_EIO, errno, "/%s", step->arg);
    } else if (step->kind == MCG_OSSTEP_SHADOW) {
        rc = set_shadow(r, step->arg, err);
    } else {
        rc = mcg_err_set(err, MCG_EINVAL, "journal: not a file step");
    }
    mcg_sroot_forget(r);
    return rc;
}
