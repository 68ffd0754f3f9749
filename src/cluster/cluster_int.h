/*
 * cluster_int.h — shared inside cluster/: backend constructors and the
 * node JSON reader.
 */
#ifndef MCG_CLUSTER_INT_H
#define MCG_CLUSTER_INT_H

#include "cluster/cluster.h"

int mcg_cluster_local_open(mcg_cluster **out, const char *spec, const char *dir, mcg_err *err);
/* kubeconfig: a file, or NULL for the in-cluster service account. */
int mcg_cluster_kube_open(mcg_cluster **out, const char *spec, const char *kubeconfig,
                          mcg_err *err);
int mcg_node_from_json(mcg_node *n, const json_t *o, mcg_err *err);

#endif
