/*
 * rollout.c — the rollout planner: membership, desiredConfig writes, pool
 * status, as one pure function of observed state.
 *
 * The idea is MCO's node controller (pkg/controller/node/) reduced to its
 * decisions. Each pool compares its nodes with the rendered config it should
 * run (the target) and moves at most maxUnavailable nodes at a time: a node
 * is handed the target by writing its desiredConfig, its agent applies it and
 * reports currentConfig = desiredConfig with state Done, and the next call
 * sees one more settled node and one more unit of capacity. The planner keeps
 * no memory between calls; everything it needs is in the node views.
 *
 * Node predicates (all strings: NULL and "" mean "none"):
 *
 *   joining(n)  no currentConfig: the node has never been configured. A
 *               joining node applying its first config is unavailable and
 *               uses capacity like any other (as in MCO, where it is not
 *               Ready yet), so the first rollout of a pool of three masters
 *               goes one at a time and keeps etcd's quorum.
 *   new(n)      joining and no desiredConfig either.
 *   settled(n)  currentConfig set, desiredConfig equal to it (or unset), and
 *               state Done — MCO's isNodeDone, relative to the node's own
 *               desiredConfig.
 *   done(n)     settled at the pool's target: the updatedMachineCount rule.
 *   failing(n)  state Degraded or Unreconcilable. MCO's isNodeMCDFailing also
 *               asks current != desired; mcgit includes a Degraded node with
 *               current == desired (drift found on a settled node), since it
 *               too is stuck and waiting for a person or a new config.
 *   ready(n)    Ready condition True and not cordoned (spec.unschedulable).
 *   unavailable(n)  not (ready and settled). This is the status's
 *               unavailableMachineCount and, for nodes that are not joining,
 *               what uses up capacity. mcgit is stricter than MCO here: MCO
 *               does not count a node failing at an older config (it may be
 *               retargeted), mcgit does, so the number of disrupted nodes
 *               never exceeds maxUnavailable because of the planner.
 *
 * Per pool, in this order:
 *   3. (first) capacity = maxUnavailable - #(members unavailable, except new
 *      ones), at least 0.
 *   1. new nodes get a config while capacity lasts, each using one unit:
 *      the target, or, when the pool is paused or has no target, the pool's
 *      status.configuration (what its other nodes run; MCO's config server
 *      serves status.configuration to booting nodes the same way); nothing if
 *      neither is known.
 *   2. no further writes when the pool is paused or has no target. A render
 *      error with a target (the last good render) does not stop the rollout
 *      of that target, as in MCO, where spec.configuration stays put.
 *   4. candidates: not new, desiredConfig != target, ready, and settled,
 *      failing, or without a desiredConfig (nothing in flight). Nodes still
 *      Working on a desiredConfig (or that have not reported) are left to
 *      finish first.
 *   5. candidates that are not settled (failing, or no desiredConfig) are
 *      retargeted, all of them: they are already counted unavailable, so
 *      this moves no count (it is how a rollback rescues a node that failed
 *      to apply a bad config).
 *   6. settled candidates, ordered by zone label (nodes without one last),
 *      then oldest creation time, then name, get the target while capacity
 *      lasts.
 *
 * The status is computed on the nodes as they will be once the plan's writes
 * are made, so the published counts do not lag the writes by one reconcile.
 */
#include "rollout/rollout.h"

#include <stdlib.h>
#include <string.h>

/* How many degraded nodes the NodeDegraded message names, and how much of each reason. */
#define DEGRADED_NAMED 3
#define REASON_MAX 200

static const char *const cond_names[MCG_COND_COUNT] = {
    [MCG_COND_UPDATED] = "Updated",
    [MCG_COND_UPDATING] = "Updating",
    [MCG_COND_DEGRADED] = "Degraded",
    [MCG_COND_NODE_DEGRADED] = "NodeDegraded",
    [MCG_COND_RENDER_DEGRADED] = "RenderDegraded",
    [MCG_COND_SOURCE_STALE] = "SourceStale",
    [MCG_COND_UNTRUSTED_CHANGES] = "UntrustedChanges",
    [MCG_COND_ROLLOUT_HALTED] = "RolloutHalted",
};

/* ----------------------------------------------------------- predicates */

static bool nz(const char *s)
{
    return s && *s;
}

/* Equal as configs: both set and the same (two "none"s are not equal). */
static bool cfg_eq(const char *a, const char *b)
{
    return nz(a) && nz(b) && strcmp(a, b) == 0;
}

static bool st_is(const char *state, const char *what)
{
    return state && strcmp(state, what) == 0;
}

static bool is_new(const mcg_node_view *n, const char *desired)
{
    return !nz(n->current) && !nz(desired);
}

static bool settled(const mcg_node_view *n, const char *desired)
{
    return nz(n->current) && (!nz(desired) || cfg_eq(n->current, desired)) &&
           st_is(n->state, MCG_STATE_DONE);
}

static bool failing(const mcg_node_view *n)
{
    return st_is(n->state, MCG_STATE_DEGRADED) || st_is(n->state, MCG_STATE_UNRECONCILABLE);
}

static bool node_ready(const mcg_node_view *n)
{
    return n->ready && !n->unschedulable;
}

static bool unavailable(const mcg_node_view *n, const char *desired)
{
    return !(node_ready(n) && settled(n, desired));
}

/* ----------------------------------------------------------- membership */

bool mcg_rollout_pool_is_builtin(const char *name)
{
    return name && (strcmp(name, "master") == 0 || strcmp(name, "worker") == 0);
}

/* Pools are reached through an accessor so plans (views) and callers (arrays) share one rule. */
typedef const mcg_pool *(*pool_at_fn)(const void *ctx, size_t i);

static const mcg_pool *pool_at_array(const void *ctx, size_t i)
{
    return &((const mcg_pool *)ctx)[i];
}

static const mcg_pool *pool_at_view(const void *ctx, size_t i)
{
    return ((const mcg_pool_view *)ctx)[i].pool;
}

/* "belongs to N custom pools: a, b" over the matching custom pools, names sorted. */
static char *conflict_reason(const mcg_labels *labels, pool_at_fn at, const void *ctx,
                             size_t npools)
{
    mcg_strv names = {0};
    mcg_buf b = MCG_BUF_INIT;
    for (size_t i = 0; i < npools; i++) {
        const mcg_pool *p = at(ctx, i);
        if (!mcg_rollout_pool_is_builtin(p->name) &&
            mcg_selector_matches(&p->node_selector, labels))
            mcg_strv_push(&names, p->name);
    }
    mcg_strv_sort(&names);
    mcg_buf_printf(&b, "belongs to %zu custom pools: ", names.n);
    for (size_t i = 0; i < names.n; i++)
        mcg_buf_printf(&b, "%s%s", i ? ", " : "", names.v[i]);
    mcg_strv_free(&names);
    return mcg_buf_detach(&b, NULL);
}

/*
 * Which pool index a node with labels belongs to. Returns the kind; *idx is
 * set for MCG_MEMBER_POOL; *reason gets a new string for a conflict when
 * reason is non-NULL. Master wins over everything, then a single custom pool,
 * then worker.
 */
static mcg_member_kind classify(const mcg_labels *labels, pool_at_fn at, const void *ctx,
                                size_t npools, size_t *idx, char **reason)
{
    size_t master = SIZE_MAX, worker = SIZE_MAX, custom = SIZE_MAX, ncustom = 0;

    for (size_t i = 0; i < npools; i++) {
        const mcg_pool *p = at(ctx, i);
        if (!mcg_selector_matches(&p->node_selector, labels))
            continue;
        if (strcmp(p->name, "master") == 0)
            master = i;
        else if (strcmp(p->name, "worker") == 0)
            worker = i;
        else if (ncustom++ == 0)
            custom = i;
    }
    if (master != SIZE_MAX) {
        *idx = master;
        return MCG_MEMBER_POOL;
    }
    if (ncustom > 1) {
        if (reason)
            *reason = conflict_reason(labels, at, ctx, npools);
        return MCG_MEMBER_CONFLICT;
    }
    if (ncustom == 1) {
        *idx = custom;
        return MCG_MEMBER_POOL;
    }
    if (worker != SIZE_MAX) {
        *idx = worker;
        return MCG_MEMBER_POOL;
    }
    return MCG_MEMBER_NONE;
}

const mcg_pool *mcg_rollout_pool_of(const mcg_labels *labels, const mcg_pool *pools, size_t npools,
                                    char **conflict)
{
    size_t idx = 0;
    if (conflict)
        *conflict = NULL;
    if (classify(labels, pool_at_array, pools, npools, &idx, conflict) != MCG_MEMBER_POOL)
        return NULL;
    return &pools[idx];
}

/* -------------------------------------------------------- maxUnavailable */

int64_t mcg_rollout_max_unavailable(const mcg_pool *p, size_t count)
{
    int64_t v = 1;

    if (p && p->max_unavailable_set) {
        if (p->max_unavailable_is_percent) {
            int64_t pct = p->max_unavailable < 0 ? 0 : p->max_unavailable;
            if (pct > 100)
                pct = 100;
            /* count * pct / 100 without overflow for any size_t count */
            uint64_t c = count;
            uint64_t r = (c / 100) * (uint64_t)pct + (c % 100) * (uint64_t)pct / 100;
            v = r > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)r;
        } else {
            v = p->max_unavailable;
        }
    }
    return v < 1 ? 1 : v;
}

int64_t mcg_rollout_waves(const mcg_pool *p, size_t count, size_t todo)
{
    int64_t mu = mcg_rollout_max_unavailable(p, count);
    uint64_t t = todo;
    return (int64_t)(t / (uint64_t)mu + (t % (uint64_t)mu != 0));
}

/* ------------------------------------------------------------ ordering */

/* A node to order: its view, its zone (NULL when none) and its index. */
typedef struct cand {
    const mcg_node_view *n;
    const char *zone;
    size_t idx;
} cand;

/* Rollout order: nodes with a zone first, by zone; then oldest first; then by name. */
static int cand_cmp(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    bool za = nz(a->zone), zb = nz(b->zone);

    if (za != zb)
        return za ? -1 : 1;
    if (za) {
        int c = strcmp(a->zone, b->zone);
        if (c)
            return c;
    }
    if (a->n->created != b->n->created)
        return a->n->created < b->n->created ? -1 : 1;
    return strcmp(a->n->name, b->n->name);
}

static cand make_cand(const mcg_node_view *nodes, size_t i)
{
    cand c = {&nodes[i], mcg_labels_get(nodes[i].labels, MCG_ZONE_LABEL), i};
    return c;
}

static int member_name_cmp(const void *pa, const void *pb)
{
    const mcg_membership *a = *(const mcg_membership *const *)pa;
    const mcg_membership *b = *(const mcg_membership *const *)pb;
    return strcmp(a->node, b->node);
}

static int node_name_cmp(const void *pa, const void *pb)
{
    const mcg_node_view *a = *(const mcg_node_view *const *)pa;
    const mcg_node_view *b = *(const mcg_node_view *const *)pb;
    return strcmp(a->name, b->name);
}

static int pool_name_cmp(const void *pa, const void *pb)
{
    const mcg_pool *a = *(const mcg_pool *const *)pa;
    const mcg_pool *b = *(const mcg_pool *const *)pb;
    return strcmp(a->name, b->name);
}

/* ------------------------------------------------------------- updates */

typedef struct updates {
    mcg_desired_update *v;
    size_t n, cap;
} updates;

static void push_update(updates *u, const mcg_node_view *n, const mcg_pool *p, const char *desired,
                        mcg_update_kind kind)
{
    if (u->n == u->cap) {
        u->cap = u->cap ? 2 * u->cap : 16;
        u->v = mcg_realloc(u->v, u->cap * sizeof(*u->v));
    }
    mcg_desired_update *d = &u->v[u->n++];
    d->node = mcg_strdup(n->name);
    d->pool = mcg_strdup(p->name);
    d->desired = mcg_strdup(desired);
    d->kind = kind;
}

/* 1. New nodes, in rollout order, get newcfg while *capacity lasts, each
 * using one unit of it. */
static void plan_new_nodes(const mcg_pool_view *pv, const char *newcfg, const mcg_node_view *nodes,
                           const size_t *members, size_t nm, const char **eff, cand *scratch,
                           updates *u, int64_t *capacity, int64_t *budget)
{
    const mcg_pool *p = pv->pool;
    size_t k = 0;
    for (size_t i = 0; i < nm; i++)
        if (is_new(&nodes[members[i]], eff[members[i]]))
            scratch[k++] = make_cand(nodes, members[i]);
    qsort(scratch, k, sizeof(*scratch), cand_cmp);
    for (size_t i = 0; i<k && * capacity> 0 && (!pv->disrupts || *budget > 0); i++, (*capacity)--) {
        push_update(u, scratch[i].n, p, newcfg, MCG_UPDATE_NEW_NODE);
        eff[scratch[i].idx] = newcfg;
        if (pv->disrupts)
            (*budget)--;
    }
}

/* 3. Capacity, from the nodes as they were: a node waiting for its first
 * config uses none yet; one applying it does. */
static int64_t pool_capacity(const mcg_pool *p, const mcg_node_view *nodes, const size_t *members,
                             size_t nm, const char *const *eff)
{
    int64_t maxu = mcg_rollout_max_unavailable(p, nm);
    int64_t unavail = 0;
    for (size_t i = 0; i < nm; i++) {
        const mcg_node_view *n = &nodes[members[i]];
        if (!is_new(n, eff[members[i]]) && unavailable(n, eff[members[i]]))
            unavail++;
    }
    return maxu > unavail ? maxu - unavail : 0;
}

/*
 * How many settled nodes may start an update now, from the capacity: none
 * while held; for a canary (spec.rollout.canary), the first wave is that
 * many nodes and the next starts only once they are done at the target and
 * the controller says their pause passed; a pool whose updates disrupt
 * takes from the cluster-wide budget.
 */
static int64_t start_limit(const mcg_pool_view *pv, const mcg_node_view *nodes,
                           const size_t *members, size_t nm, const char *const *eff,
                           const char *target, int64_t capacity, const int64_t *budget)
{
    int64_t canary = pv->pool->rollout.present ? pv->pool->rollout.canary : 0;
    if (pv->held)
        return 0;
    if (canary > 0) {
        int64_t at = 0, done = 0;
        for (size_t i = 0; i < nm; i++) {
            const mcg_node_view *n = &nodes[members[i]];
            at += cfg_eq(eff[members[i]], target);
            done += cfg_eq(eff[members[i]], target) && settled(n, eff[members[i]]) &&
                    cfg_eq(n->current, target);
        }
        if (at < canary)
            capacity = capacity < canary - at ? capacity : canary - at;
        else if (at == canary && (done < canary || !pv->canary_passed))
            return 0;
    }
    if (pv->disrupts && *budget < capacity)
        capacity = *budget;
    return capacity;
}

/*
 * Plan one pool's writes (steps 1–6 above). members[0..nm) are indices into
 * nodes; eff[] holds each node's desiredConfig as it will be, and is updated
 * for every write. scratch has room for nm cands.
 */
static void plan_pool(const mcg_pool_view *pv, const mcg_node_view *nodes, const size_t *members,
                      size_t nm, const char **eff, cand *scratch, updates *u, int64_t *budget)
{
    const mcg_pool *p = pv->pool;
    const char *target = nz(pv->target) ? pv->target : NULL;
    bool rolling = target && !p->paused && !pv->operator_paused && !pv->halted;
    const char *newcfg = rolling ? target : (nz(pv->configuration) ? pv->configuration : NULL);

    /* 3. (first: new nodes use it too) */
    int64_t capacity = pool_capacity(p, nodes, members, nm, eff);
    /* 1. */
    if (newcfg)
        plan_new_nodes(pv, newcfg, nodes, members, nm, eff, scratch, u, &capacity, budget);
    /* 2. */
    if (!rolling)
        return;

    /* 4. candidates: unsettled ones first (5), then settled ones (6), each in rollout order */
    size_t nfail = 0, nset = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < nm; i++) {
            size_t j = members[i];
            const mcg_node_view *n = &nodes[j];
            if (is_new(n, eff[j]) || cfg_eq(eff[j], target) || !node_ready(n))
                continue;
            bool s = settled(n, eff[j]);
            if (pass == 0 && !s && (failing(n) || !nz(eff[j])))
                scratch[nfail++] = make_cand(nodes, j);
            else if (pass == 1 && s)
                scratch[nfail + nset++] = make_cand(nodes, j);
        }
    qsort(scratch, nfail, sizeof(*scratch), cand_cmp);
    qsort(scratch + nfail, nset, sizeof(*scratch), cand_cmp);

    /* 5. */
    for (size_t i = 0; i < nfail; i++) {
        push_update(u, scratch[i].n, p, target, MCG_UPDATE_RETARGET);
        eff[scratch[i].idx] = target;
    }
    /* 6. */
    int64_t limit = start_limit(pv, nodes, members, nm, eff, target, capacity, budget);
    for (size_t i = 0; i < nset && (int64_t)i < limit; i++) {
        const cand *c = &scratch[nfail + i];
        push_update(u, c->n, p, target, MCG_UPDATE_ROLLOUT);
        eff[c->idx] = target;
        if (pv->disrupts)
            (*budget)--;
    }
}

/* The order pools are planned in: input order, or with a disruption budget
 * the pool waiting longest first (unknown last; ties keep input order). */
typedef struct {
    size_t idx;
    int64_t since;
} waiting;

static int waiting_cmp(const void *a, const void *b)
{
    const waiting *x = a, *y = b;
    if ((x->since > 0) != (y->since > 0))
        return x->since > 0 ? -1 : 1;
    if (x->since != y->since)
        return x->since < y->since ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static size_t *budget_order(const mcg_pool_view *pools, size_t npools, bool budgeted)
{
    waiting *w = mcg_calloc(npools ? npools : 1, sizeof(*w));
    size_t *order = mcg_calloc(npools ? npools : 1, sizeof(*order));
    for (size_t i = 0; i < npools; i++)
        w[i] = (waiting){i, pools[i].waiting_since};
    if (budgeted && npools > 1)
        qsort(w, npools, sizeof(*w), waiting_cmp);
    for (size_t i = 0; i < npools; i++)
        order[i] = w[i].idx;
    free(w);
    return order;
}

/*
 * What is left of maxConcurrentDisruptions (0: no limit): the nodes of
 * pools whose updates disrupt that are updating now (desiredConfig not
 * applied yet, and not failing) use it.
 */
static int64_t disruption_budget(int64_t max, const mcg_pool_view *pools, size_t npools,
                                 const size_t *start, const size_t *bucket,
                                 const mcg_node_view *nodes)
{
    if (max <= 0)
        return INT64_MAX;
    int64_t busy = 0;
    for (size_t p = 0; p < npools; p++)
        for (size_t k = start[p]; pools[p].disrupts && k < start[p + 1]; k++) {
            const mcg_node_view *n = &nodes[bucket[k]];
            busy += nz(n->desired) && !cfg_eq(n->desired, n->current) && !failing(n);
        }
    return busy < max ? max - busy : 0;
}

/* -------------------------------------------------------------- status */

static void cond_set(mcg_condition *c, mcg_cond_type t, bool status, const char *reason,
                     char *message /* transferred; NULL = "" */)
{
    c->type = cond_names[t];
    c->status = status;
    c->reason = mcg_strdup(reason);
    c->message = message ? message : mcg_strdup("");
}

/*
 * Append untrusted agent text as one line, for inside double quotes:
 * control bytes become spaces, '"' and '\\' are escaped (as Go's %q, which
 * MCO's message uses), and it is cut at REASON_MAX bytes on a UTF-8 boundary.
 */
static void put_reason(mcg_buf *b, const char *s)
{
    size_t n = strlen(s);
    bool cut = n > REASON_MAX;
    if (cut) {
        n = REASON_MAX;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            mcg_buf_putc(b, '\\');
        mcg_buf_putc(b, (ch < 0x20 || ch == 0x7f) ? ' ' : (char)ch);
    }
    if (cut)
        mcg_buf_puts(b, "...");
}

/*
 * MCO's NodeDegraded message: `Node a is reporting: "why", Node b is
 * reporting: "Unreconcilable"` (the state stands in for a missing reason),
 * names sorted, at most DEGRADED_NAMED of them, then ", and N more".
 */
static char *degraded_message(const mcg_node_view *nodes, const size_t *members, size_t nm,
                              size_t ndegraded)
{
    const mcg_node_view **d = mcg_calloc(ndegraded, sizeof(*d));
    mcg_buf b = MCG_BUF_INIT;
    size_t k = 0;

    for (size_t i = 0; i < nm; i++)
        if (failing(&nodes[members[i]]))
            d[k++] = &nodes[members[i]];
    qsort(d, k, sizeof(*d), node_name_cmp);
    for (size_t i = 0; i < k && i < DEGRADED_NAMED; i++) {
        mcg_buf_printf(&b, "%sNode %s is reporting: \"", i ? ", " : "", d[i]->name);
        put_reason(&b, nz(d[i]->reason) ? d[i]->reason : d[i]->state);
        mcg_buf_putc(&b, '"');
    }
    if (k > DEGRADED_NAMED)
        mcg_buf_printf(&b, ", and %zu more", k - DEGRADED_NAMED);
    free(d);
    return mcg_buf_detach(&b, NULL);
}

/* The machine counts of a pool whose target is target (NULL: none). */
static void status_counts(mcg_pool_status *st, const char *target, const mcg_node_view *nodes,
                          const size_t *members, size_t nm, const char *const *eff)
{
    st->machine_count = nm;
    for (size_t i = 0; i < nm; i++) {
        const mcg_node_view *n = &nodes[members[i]];
        const char *des = eff[members[i]];
        bool done = target && cfg_eq(des, target) && settled(n, des);
        st->updated_count += done;
        st->ready_count += done && node_ready(n);
        st->unavailable_count += unavailable(n, des);
        st->degraded_count += failing(n);
        st->updating_count += target && cfg_eq(des, target) && !done;
    }
}

/*
 * Updated / Updating, with MCO's messages (calculateStatus) and mcgit's
 * counts beside them; all: every node is updated to target.
 */
static void status_updated(mcg_pool_status *st, const mcg_pool_view *pv, const char *target,
                           size_t nm, bool all)
{
    const mcg_pool *p = pv->pool;
    if (all) {
        cond_set(&st->conds[MCG_COND_UPDATED], MCG_COND_UPDATED, true, "AllNodesUpdated",
                 mcg_sprintf("All nodes are updated with MachineConfig %s", target));
        cond_set(&st->conds[MCG_COND_UPDATING], MCG_COND_UPDATING, false, "", NULL);
    } else if (!target) {
        cond_set(&st->conds[MCG_COND_UPDATED], MCG_COND_UPDATED, false, "NoTarget",
                 mcg_strdup("No rendered configuration to update to"));
        cond_set(&st->conds[MCG_COND_UPDATING], MCG_COND_UPDATING, false, "NoTarget", NULL);
    } else {
        cond_set(&st->conds[MCG_COND_UPDATED], MCG_COND_UPDATED, false, "NotAllNodesUpdated",
                 mcg_sprintf("%zu of %zu nodes updated to %s", st->updated_count, nm, target));
        if (pv->halted)
            cond_set(&st->conds[MCG_COND_UPDATING], MCG_COND_UPDATING, false, "RolloutHalted",
                     mcg_strdup(pv->halted));
        else if (pv->held)
            cond_set(&st->conds[MCG_COND_UPDATING], MCG_COND_UPDATING, false,
                     nz(pv->held_reason) ? pv->held_reason : "Held", mcg_strdup(pv->held));
        else if (p->paused || pv->operator_paused)
            cond_set(&st->conds[MCG_COND_UPDATING], MCG_COND_UPDATING, false, "Paused",
                     mcg_sprintf("Pool is paused; will not update to MachineConfig %s (paused %s)",
                                 target,
                                 p->paused && pv->operator_paused ? "in git and by an operator"
                                 : p->paused                      ? "in git"
                                                                  : "by an operator"));
        else
            cond_set(&st->conds[MCG_COND_UPDATING], MCG_COND_UPDATING, true, "Updating",
                     mcg_sprintf("All nodes are updating to MachineConfig %s (%zu of %zu nodes "
                                 "updating)%s",
                                 target, st->updating_count, nm,
                                 pv->window_override ? "; outside its maintenance windows, on an "
                                                       "operator's `mcgit sync --now`"
                                                     : ""));
    }
}

/*
 * NodeDegraded, RenderDegraded, and Degraded = either. A render that failed
 * says so as MCO does ("Failed to render configuration for pool P: why"); a
 * fetch that failed (reason FetchFailed) rendered nothing and says only why.
 */
static void status_degraded(mcg_pool_status *st, const mcg_pool_view *pv,
                            const mcg_node_view *nodes, const size_t *members, size_t nm)
{
    bool nodedeg = st->degraded_count > 0, renderdeg = pv->render_error != NULL;
    const char *rreason = nz(pv->render_reason) ? pv->render_reason : "RenderFailed";
    char *nodemsg = nodedeg ? degraded_message(nodes, members, nm, st->degraded_count) : NULL;
    const char *why = pv->render_error;
    size_t pl = strlen(pv->pool->name);
    if (why && !strncmp(why, "pool ", 5) && !strncmp(why + 5, pv->pool->name, pl) &&
        !strncmp(why + 5 + pl, ": ", 2))
        why += 5 + pl + 2; /* "pool P: ..." about this pool: named once */
    char *rendermsg =
        !renderdeg ? NULL
        : strcmp(rreason, "FetchFailed")
            ? mcg_sprintf("Failed to render configuration for pool %s: %s", pv->pool->name, why)
            : mcg_strdup(why);
    /* MCO's reason for NodeDegraded (not CamelCase, but what scripts match on) */
    char *nreason =
        nodedeg ? mcg_sprintf("%zu nodes are reporting degraded status on sync", st->degraded_count)
                : NULL;
    cond_set(&st->conds[MCG_COND_NODE_DEGRADED], MCG_COND_NODE_DEGRADED, nodedeg,
             nreason ? nreason : "", nodemsg ? mcg_strdup(nodemsg) : NULL);
    free(nreason);
    cond_set(&st->conds[MCG_COND_RENDER_DEGRADED], MCG_COND_RENDER_DEGRADED, renderdeg,
             renderdeg ? rreason : "", rendermsg ? mcg_strdup(rendermsg) : NULL);
    if (nodedeg || renderdeg) {
        char *msg = nodedeg && renderdeg ? mcg_sprintf("%s; %s", rendermsg, nodemsg)
                                         : mcg_strdup(nodedeg ? nodemsg : rendermsg);
        cond_set(&st->conds[MCG_COND_DEGRADED], MCG_COND_DEGRADED, true,
                 nodedeg && renderdeg ? "RenderAndNodesDegraded"
                 : nodedeg            ? "NodesDegraded"
                                      : rreason,
                 msg);
    } else {
        cond_set(&st->conds[MCG_COND_DEGRADED], MCG_COND_DEGRADED, false, "", NULL);
    }
    free(nodemsg);
    free(rendermsg);
}

/* Exactly spec.rollout.canary nodes have the target, and all are done at it. */
static bool canary_done(const mcg_pool *p, const char *target, const mcg_node_view *nodes,
                        const size_t *members, size_t nm, const char *const *eff)
{
    int64_t canary = p->rollout.present ? p->rollout.canary : 0, at = 0;
    if (canary <= 0 || !target)
        return false;
    for (size_t i = 0; i < nm; i++) {
        const mcg_node_view *n = &nodes[members[i]];
        if (!cfg_eq(eff[members[i]], target))
            continue;
        if (!settled(n, eff[members[i]]) || !cfg_eq(n->current, target))
            return false;
        at++;
    }
    return at == canary;
}

static void pool_status(mcg_pool_status *st, const mcg_pool_view *pv, const mcg_node_view *nodes,
                        const size_t *members, size_t nm, const char *const *eff)
{
    const mcg_pool *p = pv->pool;
    const char *target = nz(pv->target) ? pv->target : NULL;

    st->pool = mcg_strdup(p->name);
    st->target = target ? mcg_strdup(target) : NULL;
    st->max_unavailable = mcg_rollout_max_unavailable(p, nm);
    status_counts(st, target, nodes, members, nm, eff);
    bool all =
        target && st->updated_count == nm && st->ready_count == nm && st->unavailable_count == 0;
    status_updated(st, pv, target, nm, all);
    st->configuration =
        all ? mcg_strdup(target) : (nz(pv->configuration) ? mcg_strdup(pv->configuration) : NULL);

    /* SourceStale: an attacker may be withholding updates (freeze) */
    cond_set(&st->conds[MCG_COND_SOURCE_STALE], MCG_COND_SOURCE_STALE, pv->stale != NULL,
             pv->stale ? "SourceStale" : "", pv->stale ? mcg_strdup(pv->stale) : NULL);

    /* UntrustedChanges: a revoked or removed key's changes still in force */
    cond_set(&st->conds[MCG_COND_UNTRUSTED_CHANGES], MCG_COND_UNTRUSTED_CHANGES,
             pv->untrusted != NULL, pv->untrusted ? "UntrustedSigner" : "",
             pv->untrusted ? mcg_strdup(pv->untrusted) : NULL);

    status_degraded(st, pv, nodes, members, nm);

    /* RolloutHalted: pools with spec.rollout only (MCO's pools have no such condition) */
    if (p->rollout.present || pv->halted)
        cond_set(&st->conds[MCG_COND_ROLLOUT_HALTED], MCG_COND_ROLLOUT_HALTED, pv->halted != NULL,
                 pv->halted ? "HealthCheckFailed" : "", pv->halted ? mcg_strdup(pv->halted) : NULL);
    st->canary_done = canary_done(p, target, nodes, members, nm, eff);
}

/* ---------------------------------------------------------------- plan */

/* Names must be present and unique: nodes, then pools. */
static int check_inputs(const mcg_node_view *nodes, size_t nnodes, const mcg_pool_view *pools,
                        size_t npools, mcg_err *err)
{
    int rc = MCG_OK;
    const mcg_node_view **ns = NULL;
    const mcg_pool **ps = NULL;

    for (size_t i = 0; i < npools; i++)
        if (!pools[i].pool || !nz(pools[i].pool->name)) {
            rc = mcg_err_set(err, MCG_EINVAL, "rollout: pool %zu has no name", i);
            goto out;
        }
    for (size_t i = 0; i < nnodes; i++)
        if (!nz(nodes[i].name)) {
            rc = mcg_err_set(err, MCG_EINVAL, "rollout: node %zu has no name", i);
            goto out;
        }
    ps = mcg_calloc(npools, sizeof(*ps));
    for (size_t i = 0; i < npools; i++)
        ps[i] = pools[i].pool;
    qsort(ps, npools, sizeof(*ps), pool_name_cmp);
    for (size_t i = 1; i < npools; i++)
        if (strcmp(ps[i - 1]->name, ps[i]->name) == 0) {
            rc = mcg_err_set(err, MCG_EINVAL, "rollout: duplicate pool '%s'", ps[i]->name);
            goto out;
        }
    ns = mcg_calloc(nnodes, sizeof(*ns));
    for (size_t i = 0; i < nnodes; i++)
        ns[i] = &nodes[i];
    qsort(ns, nnodes, sizeof(*ns), node_name_cmp);
    for (size_t i = 1; i < nnodes; i++)
        if (strcmp(ns[i - 1]->name, ns[i]->name) == 0) {
            rc = mcg_err_set(err, MCG_EINVAL, "rollout: duplicate node '%s'", ns[i]->name);
            goto out;
        }
out:
    free(ns);
    free(ps);
    return rc;
}

int mcg_rollout_plan_make(mcg_rollout_plan **out, const mcg_node_view *nodes, size_t nnodes,
                          const mcg_pool_view *pools, size_t npools, int64_t max_disruptions,
                          mcg_err *err)
{
    int rc = MCG_EINVAL;
    mcg_rollout_plan *plan = NULL;
    size_t *pool_of = NULL;  /* node -> pool index, SIZE_MAX when none */
    size_t *start = NULL;    /* pool -> first slot in bucket (CSR), npools + 1 entries */
    size_t *bucket = NULL;   /* node indices grouped by pool, input order within a pool */
    const char **eff = NULL; /* node -> desiredConfig after this plan */
    cand *scratch = NULL;
    updates u = {0};

    *out = NULL;
    if ((rc = check_inputs(nodes, nnodes, pools, npools, err)) != 0)
        goto out;

    plan = mcg_calloc(1, sizeof(*plan));
    plan->members = mcg_calloc(nnodes, sizeof(*plan->members));
    plan->nmembers = nnodes;
    plan->pools = mcg_calloc(npools, sizeof(*plan->pools));
    plan->npools = npools;

    /* membership, and nodes bucketed by pool in O(nodes * pools) */
    pool_of = mcg_calloc(nnodes, sizeof(*pool_of));
    start = mcg_calloc(npools + 1, sizeof(*start));
    for (size_t i = 0; i < nnodes; i++) {
        mcg_membership *m = &plan->members[i];
        size_t idx = SIZE_MAX;
        m->node = mcg_strdup(nodes[i].name);
        m->kind = classify(nodes[i].labels, pool_at_view, pools, npools, &idx, &m->reason);
        pool_of[i] = m->kind == MCG_MEMBER_POOL ? idx : SIZE_MAX;
        if (m->kind == MCG_MEMBER_POOL) {
            m->pool = mcg_strdup(pools[idx].pool->name);
            start[idx + 1]++;
        }
    }
    for (size_t p = 0; p < npools; p++)
        start[p + 1] += start[p];
    bucket = mcg_calloc(start[npools], sizeof(*bucket));
    {
        size_t *fill = mcg_calloc(npools, sizeof(*fill));
        for (size_t i = 0; i < nnodes; i++)
            if (pool_of[i] != SIZE_MAX)
                bucket[start[pool_of[i]] + fill[pool_of[i]]++] = i;
        free(fill);
    }

    plan->by_name = mcg_calloc(nnodes, sizeof(*plan->by_name));
    for (size_t i = 0; i < nnodes; i++)
        plan->by_name[i] = &plan->members[i];
    qsort(plan->by_name, nnodes, sizeof(*plan->by_name), member_name_cmp);

    /* writes, then status on the nodes as they will be */
    eff = mcg_calloc(nnodes, sizeof(*eff));
    for (size_t i = 0; i < nnodes; i++)
        eff[i] = nz(nodes[i].desired) ? nodes[i].desired : NULL;
    scratch = mcg_calloc(start[npools], sizeof(*scratch));
    int64_t budget = disruption_budget(max_disruptions, pools, npools, start, bucket, nodes);
    size_t *order = budget_order(pools, npools, max_disruptions > 0);
    for (size_t k = 0; k < npools; k++) {
        size_t p = order[k];
        plan_pool(&pools[p], nodes, bucket + start[p], start[p + 1] - start[p], eff, scratch, &u,
                  &budget);
    }
    free(order);
    for (size_t p = 0; p < npools; p++)
        pool_status(&plan->pools[p], &pools[p], nodes, bucket + start[p], start[p + 1] - start[p],
                    eff);

    plan->updates = u.v; /* transferred */
    plan->nupdates = u.n;
    u.v = NULL;
    *out = plan; /* transferred */
    plan = NULL;
    rc = MCG_OK;
out:
    free(scratch);
    free(eff);
    free(bucket);
    free(start);
    free(pool_of);
    mcg_rollout_plan_free(plan);
    return rc;
}

void mcg_rollout_plan_free(mcg_rollout_plan *plan)
{
    if (!plan)
        return;
    for (size_t i = 0; i < plan->nmembers; i++) {
        free(plan->members[i].node);
        free(plan->members[i].pool);
        free(plan->members[i].reason);
    }
    for (size_t i = 0; i < plan->nupdates; i++) {
        free(plan->updates[i].node);
        free(plan->updates[i].pool);
        free(plan->updates[i].desired);
    }
    for (size_t i = 0; i < plan->npools; i++) {
        mcg_pool_status *st = &plan->pools[i];
        free(st->pool);
        free(st->target);
        free(st->configuration);
        for (size_t c = 0; c < MCG_COND_COUNT; c++) {
            free(st->conds[c].reason);
            free(st->conds[c].message);
        }
    }
    free(plan->members);
    free(plan->updates);
    free(plan->pools);
    free(plan->by_name);
    free(plan);
}

const mcg_membership *mcg_rollout_plan_member(const mcg_rollout_plan *plan, const char *name)
{
    if (!plan || !name || !plan->nmembers)
        return NULL;
    mcg_membership key = {.node = (char *)name};
    const mcg_membership *kp = &key;
    const mcg_membership **f =
        bsearch(&kp, plan->by_name, plan->nmembers, sizeof(*plan->by_name), member_name_cmp);
    return f ? *f : NULL;
}

const mcg_pool_status *mcg_rollout_plan_pool(const mcg_rollout_plan *plan, const char *name)
{
    if (!plan || !name)
        return NULL;
    for (size_t i = 0; i < plan->npools; i++)
        if (strcmp(plan->pools[i].pool, name) == 0)
            return &plan->pools[i];
    return NULL;
}

bool mcg_rollout_condition_changed(const char *prev_status, const mcg_condition *next)
{
    return !prev_status || strcmp(prev_status, mcg_rollout_condition_status(next->status)) != 0;
}

const char *mcg_rollout_condition_status(bool status)
{
    return status ? "True" : "False";
}
