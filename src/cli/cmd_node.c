/*
 * cmd_node.c — `mcgit node add|label|remove|list` on a local cluster, and
 * `mcgit node bind|unbind`: record which host (machine-id) a node is, for
 * hosts without a kubelet to report it (see docs/agent.md, "Node identity").
 */
#include "agent/agent.h"
#include "cli/cli.h"
#include "cluster/cluster.h"
#include "fsio/fsio.h"
#include "trust/trust.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int run(int argc, char **argv);

static const mcg_opt node_options[] = {
    MCG_OPT_HELP,
    MCG_OPT_CLUSTER,
    MCG_OPT_VALUE('l', "labels", "k=v,...", "add: the new node's labels"),
    MCG_OPT_VALUE('m', "machine-id", "ID", "add, bind: bind the node to machine-id ID"),
    MCG_OPT_VALUE('k', "node-key", "PUB",
                  "bind: pin the node's key (the line `mcgit agent\n"
                  "--print-node-key` prints, or a file holding it):\n"
                  "its attestations are verified with it"),
    MCG_OPT_VALUE('r', "root", "DIR",
                  "bind: read the machine-id from\nDIR/etc/machine-id (default: /etc/machine-id)"),
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_node = {
    .name = "node",
    .summary = "add, label, remove, list or bind nodes to their hosts",
    .usage =
        "usage: mcgit node add --cluster local:DIR NAME [--labels k=v,...] [--machine-id ID]\n"
        "       mcgit node label --cluster local:DIR NAME k=v,... | k-\n"
        "       mcgit node remove --cluster local:DIR NAME\n"
        "       mcgit node list --cluster local:DIR\n"
        "       mcgit node bind --cluster C NAME [--root DIR | --machine-id ID] [--node-key PUB]\n"
        "       mcgit node unbind --cluster C NAME\n"
        "\n"
        "A node is a Kubernetes-style Node object (name, labels, creation time, Ready,\n"
        "unschedulable, mcgit's annotations). Its root filesystem defaults to\n"
        "DIR/roots/NAME; add gives it etc/passwd and etc/group naming root and core\n"
        "(as a fresh RHCOS node has them; files already there are kept), where the\n"
        "agent looks up the owners files are given by name.\n"
        "Labels decide its pool: node-role.kubernetes.io/worker=\"\"\n"
        "puts it in pool worker (see the pools' nodeSelector). `k-` removes label k.\n"
        "Without --cluster, C is $MCGIT_CLUSTER.\n"
        "\n"
        "bind records which host the node is: this host's machine-id (read from\n"
        "ROOT/etc/machine-id, default /etc/machine-id) or ID, in the annotation\n"
        "machineconfiguration.mcgit.io/machineID. An agent managing a live host\n"
        "refuses unless the host's machine-id matches the node's (the kubelet's\n"
        "status.nodeInfo, or this binding). bind refuses a node bound to, or reported\n"
        "by its kubelet as, another machine; unbind removes the binding.\n"
        "add --machine-id ID binds the new node at once.\n"
        "\n"
        "A label edit that leaves the labels as they are, bind to the machine-id\n"
        "already bound and unbind of an unbound node change nothing and say so.\n"
        "\n"
        "bind --node-key PUB pins the node's own key (an ssh-ed25519 public key\n"
        "line) in the annotation machineconfiguration.mcgit.io/nodeKey: on Done the\n"
        "agent signs what it applied with that key, and the controller counts the\n"
        "node as attested only when that verifies against the pinned key and the\n"
        "config it expects (docs/sites.md). Only this command writes the pin; a\n"
        "node with another key pinned is refused (unbind first, which removes both).\n",
    .run = run,
    .opts = node_options,
};

/* Whether s is a machine-id: 32 lowercase hex digits. */
static bool machine_id_ok(const char *s)
{
    size_t i = 0;
    for (; s[i]; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return i == 32;
}

/*
 * Bind node `name` to machine-id id, refusing (MCG_ECONFLICT) when its
 * kubelet reports another machine-id or another one is already bound (the
 * local backend checks again under its lock).
 */
static int bind_node(mcg_cluster *cl, const char *name, const char *id, bool *already, mcg_err *err)
{
    mcg_node n;
    *already = false;
    int rc = mcg_cluster_get_node(cl, name, &n, err);
    if (rc)
        return rc;
    if (n.machine_id && strcmp(n.machine_id, id) != 0)
        rc = mcg_err_set(err, MCG_ECONFLICT,
                         "node '%s' is machine-id %s (reported by its kubelet), not %s", name,
                         n.machine_id, id);
    else if (n.bound_machine_id && *n.bound_machine_id && strcmp(n.bound_machine_id, id) != 0)
        rc = mcg_err_set(err, MCG_ECONFLICT,
                         "node '%s' is bound to machine-id %s, not %s (`mcgit node unbind` first)",
                         name, n.bound_machine_id, id);
    else if (n.bound_machine_id && !strcmp(n.bound_machine_id, id))
        *already = true; /* nothing to write */
    mcg_node_clear(&n);
    if (rc || *already)
        return rc;
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.bound_machine_id = id;
    return mcg_cluster_patch_node(cl, name, &p, err);
}

/* Whether the label edits would leave node name's labels as they are
 * (then nothing is written); a bad edit is left for the write to refuse. */
static bool labels_unchanged(mcg_cluster *cl, const char *name, const char *edits)
{
    mcg_node n;
    mcg_labels after = {0};
    bool same = false;
    if (mcg_cluster_get_node(cl, name, &n, NULL) != 0)
        return false;
    for (size_t i = 0; i < n.labels.n; i++)
        mcg_labels_add(&after, n.labels.items[i].key, n.labels.items[i].value);
    mcg_labels_finish(&after);
    if (mcg_labels_parse_arg(&after, edits, NULL) == 0 && after.n == n.labels.n) {
        same = true;
        for (size_t i = 0; same && i < after.n; i++)
            same = !strcmp(after.items[i].key, n.labels.items[i].key) &&
                   !strcmp(after.items[i].value, n.labels.items[i].value);
    }
    mcg_labels_free(&after);
    mcg_node_clear(&n);
    return same;
}

/* The options beside the subcommand. */
typedef struct {
    const char *labels, *machine_id, *root, *node_key;
} node_opts;

/* Which options and how many arguments go with sub: -1 when they fit, else the exit status. */
static int check_usage(const char *sub, int nargs, const node_opts *o)
{
    bool ok = (!strcmp(sub, "add") && nargs == 1) || (!strcmp(sub, "label") && nargs == 2) ||
              (!strcmp(sub, "remove") && nargs == 1) || (!strcmp(sub, "list") && nargs == 0) ||
              (!strcmp(sub, "bind") && nargs == 1) || (!strcmp(sub, "unbind") && nargs == 1);
    if (!ok)
        return mcg_cli_usage_error(&mcg_cmd_node, "bad arguments for '%s'", sub);
    if (o->labels && strcmp(sub, "add"))
        return mcg_cli_usage_error(&mcg_cmd_node, "--labels goes with add");
    if (o->machine_id && strcmp(sub, "add") && strcmp(sub, "bind"))
        return mcg_cli_usage_error(&mcg_cmd_node, "--machine-id goes with add or bind");
    if (o->node_key && strcmp(sub, "bind"))
        return mcg_cli_usage_error(&mcg_cmd_node, "--node-key goes with bind");
    if (o->root && strcmp(sub, "bind"))
        return mcg_cli_usage_error(&mcg_cmd_node, "--root goes with bind");
    if (o->root && o->machine_id)
        return mcg_cli_usage_error(&mcg_cmd_node, "--root and --machine-id exclude each other");
    if (o->machine_id && !machine_id_ok(o->machine_id))
        return mcg_cli_usage_error(&mcg_cmd_node, "--machine-id: expected 32 lowercase hex digits");
    return -1;
}

/* node add NAME [--labels] [--machine-id] */
static int node_add(mcg_cluster *cl, const char *name, const node_opts *o, mcg_err *err)
{
    mcg_labels lab = {0};
    int rc = 0;
    if (o->labels && (rc = mcg_labels_parse_arg(&lab, o->labels, err)) != 0)
        goto out;
    rc = mcg_cluster_add_node(cl, name, &lab, (int64_t)time(NULL), err);
    bool already;
    if (!rc && o->machine_id)
        rc = bind_node(cl, name, o->machine_id, &already, err);
out:
    mcg_labels_free(&lab);
    return rc;
}

/* The key line PUB names: the line itself, or a file holding it; NULL with err. */
static char *node_key_line(const char *pub, mcg_err *err)
{
    char *line = NULL;
    size_t len = 0;
    if (!strncmp(pub, "ssh-ed25519 ", 12))
        line = mcg_strdup(pub);
    else if (mcg_read_file(pub, 64 * 1024, &line, &len, err) != 0)
        return NULL;
    line[strcspn(line, "\r\n")] = '\0';
    char *entry = mcg_sprintf("node %s\n", line);
    mcg_signers *s = NULL;
    mcg_err e = {0};
    if (strncmp(line, "ssh-ed25519 ", 12) ||
        mcg_signers_parse(&s, "--node-key", entry, strlen(entry), &e) != 0) {
        mcg_err_set(err, MCG_EINVAL, "--node-key: not an ssh-ed25519 public key line%s%s",
                    e.msg[0] ? ": " : "", e.msg);
        free(line);
        line = NULL;
    }
    mcg_signers_free(s);
    free(entry);
    return line;
}

/* Pin the node key: refused when another one is pinned. */
static int pin_key(mcg_cluster *cl, const char *name, const char *pub, mcg_err *err)
{
    mcg_node n;
    char *line = node_key_line(pub, err);
    int rc = line ? mcg_cluster_get_node(cl, name, &n, err) : MCG_EINVAL;
    if (rc)
        goto out;
    size_t kl = strcspn(line + 12, " ") + 12; /* type and key, not the comment */
    if (n.node_key && *n.node_key && (strncmp(n.node_key, line, kl) || n.node_key[kl] > ' '))
        rc = mcg_err_set(err, MCG_ECONFLICT,
                         "node '%s' has another node key pinned (`mcgit node unbind` first)", name);
    else {
        mcg_node_patch p = MCG_NODE_PATCH_INIT;
        p.node_key = line;
        if ((rc = mcg_cluster_patch_node(cl, name, &p, err)) == 0)
            printf("node %s: node key pinned (%.*s...)\n", name, (int)(kl < 40 ? kl : 40), line);
    }
    mcg_node_clear(&n);
out:
    free(line);
    return rc;
}

/* node bind NAME [--machine-id | --root] [--node-key] */
static int node_bind(mcg_cluster *cl, const char *name, const node_opts *o, mcg_err *err)
{
    if (o->node_key && !o->machine_id && !o->root)
        return pin_key(cl, name, o->node_key, err);
    const char *machine_id = o->machine_id;
    char id[MCG_MACHINE_ID_SIZE];
    int rc = 0;
    if (!machine_id && (rc = mcg_agent_machine_id(o->root ? o->root : "/", id, err)) == 0)
        machine_id = id;
    bool already = false;
    if (!rc && (rc = bind_node(cl, name, machine_id, &already, err)) == 0)
        printf(already ? "node %s is already bound to machine-id %s; nothing changed\n"
                       : "node %s bound to machine-id %s\n",
               name, machine_id);
    if (!rc && o->node_key)
        rc = pin_key(cl, name, o->node_key, err);
    return rc;
}

/* node unbind NAME */
static int node_unbind(mcg_cluster *cl, const char *name, mcg_err *err)
{
    mcg_node n;
    int rc;
    if ((rc = mcg_cluster_get_node(cl, name, &n, err)) == 0 &&
        !(n.bound_machine_id && *n.bound_machine_id) && !(n.node_key && *n.node_key)) {
        printf("node %s is not bound to a machine-id; nothing changed\n", name);
    } else if (!rc) {
        mcg_node_patch p = MCG_NODE_PATCH_INIT;
        p.bound_machine_id = "";
        p.node_key = "";
        p.attestation = "";
        rc = mcg_cluster_patch_node(cl, name, &p, err);
    }
    mcg_node_clear(&n);
    return rc;
}

/* node list */
static int node_list(mcg_cluster *cl, mcg_err *err)
{
    mcg_node *nodes = NULL;
    size_t n = 0;
    int rc;
    if ((rc = mcg_cluster_list_nodes(cl, &nodes, &n, err)) == 0)
        for (size_t i = 0; i < n; i++) {
            printf("%s", nodes[i].name);
            for (size_t j = 0; j < nodes[i].labels.n; j++)
                printf("%s%s=%s", j ? "," : " ", nodes[i].labels.items[j].key,
                       nodes[i].labels.items[j].value);
            printf("\n");
        }
    mcg_nodes_free(nodes, n);
    return rc;
}

static int run(int argc, char **argv)
{
    const char *cluster = NULL;
    node_opts o = {0};
    const mcg_optbind binds[] = {{'c', &cluster, NULL},      {'l', &o.labels, NULL},
                                 {'m', &o.machine_id, NULL}, {'r', &o.root, NULL},
                                 {'k', &o.node_key, NULL},   MCG_BIND_END};
    int ex = mcg_cli_parse(&mcg_cmd_node, argc, argv, binds);
    if (ex >= 0)
        return ex;
    cluster = mcg_cli_cluster(cluster);
    if (!cluster)
        return mcg_cli_usage_error(&mcg_cmd_node, "--cluster C is required (or $MCGIT_CLUSTER)");
    if (optind >= argc)
        return mcg_cli_usage_error(&mcg_cmd_node, "expected a subcommand");
    const char *sub = argv[optind];
    int nargs = argc - optind - 1;
    char **args = argv + optind + 1;
    int status = check_usage(sub, nargs, &o);
    if (status >= 0)
        return status;
    mcg_err err = {0};
    mcg_cluster *cl = NULL;
    int rc = mcg_cluster_open(&cl, cluster, &err);
    if (rc)
        goto out;
    if (!strcmp(sub, "add"))
        rc = node_add(cl, args[0], &o, &err);
    else if (!strcmp(sub, "bind"))
        rc = node_bind(cl, args[0], &o, &err);
    else if (!strcmp(sub, "unbind"))
        rc = node_unbind(cl, args[0], &err);
    else if (!strcmp(sub, "label")) {
        if (labels_unchanged(cl, args[0], args[1]))
            printf("node %s already has these labels; nothing changed\n", args[0]);
        else
            rc = mcg_cluster_label_node(cl, args[0], args[1], &err);
    } else if (!strcmp(sub, "remove"))
        rc = mcg_cluster_remove_node(cl, args[0], &err);
    else
        rc = node_list(cl, &err);
out:
    if (rc)
        mcg_cli_error("node", "%s", err.msg);
    mcg_cluster_free(cl);
    return rc == MCG_EUSAGE ? MCG_EXIT_USAGE : rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
