/*
 * identity.c — the agent proves that the host it runs on is the node it was
 * told to manage, before it touches a live host.
 *
 * This host is its machine-id (ROOT/etc/machine-id: the managed root's own,
 * so an agent in a pod with the host mounted at /rootfs reads the host's),
 * its boot id (/proc/sys/kernel/random/boot_id: the running kernel's, the
 * same inside a container) and, when readable, its DMI system UUID. The
 * node is what the kubelet reports in status.nodeInfo (machineID, bootID,
 * systemUUID) and the machine-id bound to it with `mcgit node bind`
 * (annotation machineconfiguration.mcgit.io/machineID). Every identity the
 * node carries must match; a node with neither a reported nor a bound
 * machine-id is refused too (never a silent fallback).
 *
 * The kernel paths are fixed: nothing (no option, no environment variable)
 * lets a caller substitute another boot id. Tests give a fake root its own
 * etc/machine-id and set the node's bootID to the real one.
 */
#include "agent/agent.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"
#define PRODUCT_UUID_PATH "/sys/class/dmi/id/product_uuid"

/* Read up to cap-1 bytes of a small file opened as fd (closed here), cut at
 * the first newline. Returns false when it cannot be read. */
static bool read_line_fd(int fd, char *out, size_t cap)
{
    if (fd < 0)
        return false;
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, out + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    out[n] = '\0';
    out[strcspn(out, "\n")] = '\0';
    return true;
}

/* Whether s is 32 lowercase hex digits (machine-id(5)). */
static bool machine_id_ok(const char *s)
{
    size_t i = 0;
    for (; s[i]; i++)
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
            return false;
    return i == 32;
}

int mcg_agent_machine_id(const char *root, char out[MCG_MACHINE_ID_SIZE], mcg_err *err)
{
    out[0] = '\0';
    if (!root || !*root)
        root = "/";
    int rc = 0;
    int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int efd = rfd < 0 ? -1 : openat(rfd, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int fd = efd < 0 ? -1 : openat(efd, "machine-id", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    const char *slash = root[strlen(root) - 1] == '/' ? "" : "/";
    char buf[128];
    if (fd < 0) {
        rc = mcg_err_set_os(err, MCG_EIO, errno,
                            "cannot read this host's machine-id %s%setc/machine-id", root, slash);
        goto out;
    }
    if (!read_line_fd(fd, buf, sizeof(buf)) || !machine_id_ok(buf)) {
        rc = mcg_err_set(err, MCG_EINVAL,
                         "this host's machine-id %s%setc/machine-id is not 32 hex digits", root,
                         slash);
        goto out;
    }
    memcpy(out, buf, MCG_MACHINE_ID_SIZE);
out:
    if (efd >= 0)
        close(efd);
    if (rfd >= 0)
        close(rfd);
    return rc;
}

int mcg_agent_host_identity(mcg_host_identity *out, const char *root, mcg_err *err)
{
    memset(out, 0, sizeof(*out));
    int rc = mcg_agent_machine_id(root, out->machine_id, err);
    if (rc)
        return rc;
    if (!read_line_fd(open(BOOT_ID_PATH, O_RDONLY | O_CLOEXEC), out->boot_id,
                      sizeof(out->boot_id)) ||
        !out->boot_id[0])
        return mcg_err_set(err, MCG_EIO, "cannot read this host's boot id %s", BOOT_ID_PATH);
    /* optional: readable by root only, absent on hosts without DMI */
    if (!read_line_fd(open(PRODUCT_UUID_PATH, O_RDONLY | O_CLOEXEC), out->system_uuid,
                      sizeof(out->system_uuid)))
        out->system_uuid[0] = '\0';
    if (gethostname(out->hostname, sizeof(out->hostname) - 1) != 0)
        snprintf(out->hostname, sizeof(out->hostname), "?");
    out->hostname[sizeof(out->hostname) - 1] = '\0';
    return 0;
}

int mcg_agent_identity_match(const mcg_host_identity *h, const mcg_node *n, mcg_err *err)
{
    const char *what = NULL, *want = NULL, *have = NULL;
    if (n->machine_id && strcasecmp(n->machine_id, h->machine_id) != 0) {
        what = "machine-id";
        want = n->machine_id;
        have = h->machine_id;
    } else if (n->bound_machine_id && *n->bound_machine_id &&
               strcasecmp(n->bound_machine_id, h->machine_id) != 0) {
        what = "bound machine-id";
        want = n->bound_machine_id;
        have = h->machine_id;
    } else if (n->boot_id && strcasecmp(n->boot_id, h->boot_id) != 0) {
        what = "boot id";
        want = n->boot_id;
        have = h->boot_id;
    } else if (n->system_uuid && h->system_uuid[0] &&
               strcasecmp(n->system_uuid, h->system_uuid) != 0) {
        what = "system UUID";
        want = n->system_uuid;
        have = h->system_uuid;
    }
    if (what)
        return mcg_err_set(err, MCG_ETRUST,
                           "refusing to manage this host: node %s has %s %s, this host (%s) has %s",
                           n->name, what, want, h->hostname, have);
    if (!n->machine_id && !(n->bound_machine_id && *n->bound_machine_id))
        return mcg_err_set(err, MCG_ETRUST,
                           "refusing to manage this host: node %s has no machine-id (no kubelet "
                           "nodeInfo, not bound); on the node run `mcgit node bind --cluster C %s` "
                           "(this host (%s) has machine-id %s)",
                           n->name, n->name, h->hostname, h->machine_id);
    return 0;
}

bool mcg_agent_root_is_live(const char *root, bool live)
{
    if (live)
        return true;
    struct stat a, b;
    /* "/" by name, or the same directory reached another way (a bind mount
     * of / is a different inode only when it is a different filesystem view) */
    if (stat(root, &a) != 0 || stat("/", &b) != 0)
        return false;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int mcg_agent_verify_host(const char *root, const char *node, mcg_cluster *c, mcg_err *err)
{
    if (!c)
        return mcg_err_set(err, MCG_EUSAGE,
                           "refusing to manage this host: a live root needs a cluster with node "
                           "%s to prove this host is that node",
                           node ? node : "(none)");
    mcg_host_identity h;
    mcg_node n;
    memset(&n, 0, sizeof(n));
    int rc = mcg_agent_host_identity(&h, root, err);
    if (rc) {
        mcg_err_prefix(err, "refusing to manage this host as node %s", node);
        return rc;
    }
    if ((rc = mcg_cluster_get_node(c, node, &n, err)) != 0) {
        mcg_err_prefix(err, "refusing to manage this host (%s): cannot read node %s", h.hostname,
                       node);
        return rc;
    }
    rc = mcg_agent_identity_match(&h, &n, err);
    mcg_node_clear(&n);
    return rc;
}
