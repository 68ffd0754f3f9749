/*
 * cmd_node.c — `mcgit node add|label|remove|list` on a local cluster.
 */
#include "cli/cli.h"
#include "cluster/cluster.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int run(int argc, char **argv);

const mcg_cmd mcg_cmd_node = {
    "node",
    "add, label, remove or list nodes of a local cluster",
    "usage: mcgit node add --cluster local:DIR NAME [--labels k=v,...]\n"
    "       mcgit node label --cluster local:DIR NAME k=v,... | k-\n"
    "       mcgit node remove --cluster local:DIR NAME\n"
    "       mcgit node list --cluster local:DIR\n"
    "\n"
    "A node is a Kubernetes-style Node object (name, labels, creation time, Ready,\n"
    "unschedulable, mcgit's annotations). Its root filesystem defaults to\n"
    "DIR/roots/NAME. Labels decide its pool: node-role.kubernetes.io/worker=\"\"\n"
    "puts it in pool worker (see the pools' nodeSelector). `k-` removes label k.\n"
    "Without --cluster, C is $MCGIT_CLUSTER.\n",
    run,
};

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"cluster", required_argument, 0, 'c'},
                                         {"labels", required_argument, 0, 'l'},
                                         {0, 0, 0, 0}};
    const char *cluster = NULL, *labels = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'h': return mcg_cli_help(&mcg_cmd_node);
        case 'c': cluster = optarg; break;
        case 'l': labels = optarg; break;
        default: return mcg_cli_usage_error(&mcg_cmd_node, NULL);
        }
    }
    cluster = mcg_cli_cluster(cluster);
    if (!cluster || optind >= argc)
        return mcg_cli_usage_error(&mcg_cmd_node, "expected a subcommand and --cluster");
    const char *sub = argv[optind];
    int nargs = argc - optind - 1;
    char **args = argv + optind + 1;
    bool ok = (!strcmp(sub, "add") && nargs == 1) || (!strcmp(sub, "label") && nargs == 2) ||
              (!strcmp(sub, "remove") && nargs == 1) || (!strcmp(sub, "list") && nargs == 0);
    if (!ok)
        return mcg_cli_usage_error(&mcg_cmd_node, "bad arguments for '%s'", sub);
    if (labels && strcmp(sub, "add"))
        return mcg_cli_usage_error(&mcg_cmd_node, "--labels goes with add");
    mcg_err err = {0};
    mcg_cluster *cl = NULL;
    mcg_labels lab = {0};
    int rc = mcg_cluster_open(&cl, cluster, &err);
    if (rc)
        goto out;
    if (!strcmp(sub, "add")) {
        if (labels && (rc = mcg_labels_parse_arg(&lab, labels, &err)) != 0)
            goto out;
        rc = mcg_cluster_add_node(cl, args[0], &lab, (int64_t)time(NULL), &err);
    } else if (!strcmp(sub, "label")) {
        rc = mcg_cluster_label_node(cl, args[0], args[1], &err);
    } else if (!strcmp(sub, "remove")) {
        rc = mcg_cluster_remove_node(cl, args[0], &err);
    } else {
        mcg_node *nodes = NULL;
        size_t n = 0;
        if ((rc = mcg_cluster_list_nodes(cl, &nodes, &n, &err)) == 0)
            for (size_t i = 0; i < n; i++) {
                printf("%s", nodes[i].name);
                for (size_t j = 0; j < nodes[i].labels.n; j++)
                    printf("%s%s=%s", j ? "," : " ", nodes[i].labels.items[j].key,
                           nodes[i].labels.items[j].value);
                printf("\n");
            }
        mcg_nodes_free(nodes, n);
    }
out:
    if (rc)
        mcg_cli_error("node", "%s", err.msg);
    mcg_labels_free(&lab);
    mcg_cluster_free(cl);
    return rc == MCG_EUSAGE ? MCG_EXIT_USAGE : rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
