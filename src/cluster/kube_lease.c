/*
 * kube_lease.c — leader election on the coordination.k8s.io/v1 Lease
 * "mcgit-controller", as client-go does it, and the write fence built on it.
 *
 * Expiry is judged by our own clock from when we last saw the record change,
 * never by the holder's renewTime, so clock skew between replicas cannot
 * make two leaders. The pure decision and the Lease time format are
 * functions of their arguments, unit-tested in tests/unit/test_kube.c.
 */
#include "cluster/kube_int.h"
#include "fsio/fsio.h"
#include "osenv/osenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

mcg_lease_action mcg_kube_lease_decide(const mcg_kube_lease *l, const char *identity,
                                       int64_t observed_ms, int64_t now_ms)
{
    if (l->holder && !strcmp(l->holder, identity))
        return MCG_LEASE_RENEW;
    if (!l->holder || !*l->holder)
        return MCG_LEASE_TAKE;
    long dur = l->duration_s > 0 ? l->duration_s : 15;
    if (observed_ms + (int64_t)dur * 1000 < now_ms)
        return MCG_LEASE_TAKE;
    return MCG_LEASE_FOLLOW;
}

void mcg_kube_time_micro(int64_t unix_ms, char out[40])
{
    time_t t = (time_t)(unix_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char base[32];
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    mcg_bfmt(out, 40, "%s.%06dZ", base, (int)(unix_ms % 1000) * 1000);
}

bool mcg_kube_time_parse_ms(const char *s, int64_t *unix_ms)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end)
        return false;
    int64_t ms = 0;
    if (*end == '.') {
        end++;
        int digits = 0;
        int64_t frac = 0;
        while (*end >= '0' && *end <= '9') {
            if (digits < 3)
                frac = frac * 10 + (*end - '0');
            digits++;
            end++;
        }
        if (!digits)
            return false;
        for (int d = digits; d < 3; d++)
            frac *= 10;
        ms = frac;
    }
    if (strcmp(end, "Z") != 0)
        return false;
    *unix_ms = (int64_t)timegm(&tm) * 1000 + ms;
    return true;
}

int mcg_kube_op_fence(mcg_cluster *c, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    if (!k->identity)
        return 0; /* not a leader-elected controller (agents, status, tools) */
    if (k->leader && mcg_mono_ms() - k->lead_ok_ms >= k->lease_duration_s * 1000 / 3) {
        /* a long pass: renew the lease on the way instead of running out of it
         * (if it cannot be renewed, the check below refuses the write) */
        bool still = false;
        mcg_err e = {0};
        char *id = mcg_strdup(k->identity);
        (void)mcg_kube_op_lead(&k->base, id, &still, &e);
        free(id);
    }
    long valid = k->lease_duration_s * 1000;
    valid -= valid / 3 < 2000 ? valid / 3 : 2000;
    if (k->leader && mcg_mono_ms() - k->lead_ok_ms < valid)
        return 0;
    return mcg_err_set(err, MCG_ECONFLICT,
                       "not the leader: Lease %s/" MCG_KUBE_LEASE_NAME
                       " is not held by '%s' (or was "
                       "not renewed in the last %lds); refusing to write",
                       k->ns, k->identity, valid / 1000);
}

static char *lease_path(const mcg_kube *k)
{
    return mcg_sprintf("/apis/coordination.k8s.io/v1/namespaces/%s/leases/" MCG_KUBE_LEASE_NAME,
                       k->ns);
}

static void lease_read(const json_t *o, mcg_kube_lease *l)
{
    json_t *spec = json_object_get(o, "spec");
    memset(l, 0, sizeof(*l));
    l->holder = mcg_kube_str_at(spec, "holderIdentity", NULL);
    json_t *d = json_object_get(spec, "leaseDurationSeconds");
    l->duration_s = json_is_integer(d) ? (long)json_integer_value(d) : 0;
    const char *rt = mcg_kube_str_at(spec, "renewTime", NULL);
    int64_t ms;
    if (rt && mcg_kube_time_parse_ms(rt, &ms))
        l->renew_ms = ms;
}

int mcg_kube_op_lead(mcg_cluster *c, const char *identity, bool *leader, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    *leader = false;
    if (!identity || !*identity || strlen(identity) > 253)
        return mcg_err_set(err, MCG_EINVAL, "leader election: bad identity");
    if (!k->identity || strcmp(k->identity, identity) != 0) {
        free(k->identity);
        k->identity = mcg_strdup(identity);
        k->leader = false;
    }
    /* renewed less than a third of the duration ago: still ours, no request needed */
    if (k->leader && mcg_mono_ms() - k->lead_ok_ms < k->lease_duration_s * 1000 / 3) {
        *leader = true;
        return 0;
    }
    char *path = lease_path(k);
    json_t *o = NULL;
    long st = 0;
    char now[40];
    mcg_kube_time_micro(mcg_kube_wall_ms(), now);
    int64_t started = mcg_mono_ms(); /* the lease we win is good from no earlier than this */
    int rc = mcg_kube_simple(k->kc, "GET", path, &st, &o, err);
    if (rc == MCG_ENOTFOUND) {
        char *coll = mcg_sprintf("/apis/coordination.k8s.io/v1/namespaces/%s/leases", k->ns);
        json_t *body = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:I,s:s,s:s,s:i}}", "apiVersion",
                                 "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name",
                                 MCG_KUBE_LEASE_NAME, "namespace", k->ns, "spec", "holderIdentity",
                                 identity, "leaseDurationSeconds", (json_int_t)k->lease_duration_s,
                                 "acquireTime", now, "renewTime", now, "leaseTransitions", 0);
        mcg_kube_req rq = {"POST", coll, NULL, body, NULL, 0, 0};
        rc = mcg_kube_call(k->kc, &rq, &st, NULL, err);
        json_decref(body);
        free(coll);
        if (rc == MCG_ECONFLICT)
            rc = 0; /* someone else created it first: follow */
        else if (!rc) {
            *leader = true;
            k->lead_ok_ms = started;
        }
        goto out;
    }
    if (rc)
        goto out;
    const char *rv = mcg_kube_obj_rv(o);
    if (!k->obs_rv || !rv || strcmp(k->obs_rv, rv) != 0) {
        free(k->obs_rv);
        k->obs_rv = rv ? mcg_strdup(rv) : NULL;
        k->obs_ms = mcg_mono_ms();
    }
    mcg_kube_lease l;
    lease_read(o, &l);
    mcg_lease_action act = mcg_kube_lease_decide(&l, identity, k->obs_ms, mcg_mono_ms());
    if (act == MCG_LEASE_FOLLOW)
        goto out;
    json_t *spec = json_object_get(o, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(o, "spec", spec);
    }
    if (act == MCG_LEASE_TAKE) {
        json_t *tr = json_object_get(spec, "leaseTransitions");
        json_object_set_new(spec, "holderIdentity", json_string(identity));
        json_object_set_new(spec, "acquireTime", json_string(now));
        json_object_set_new(spec, "leaseTransitions",
                            json_integer(json_is_integer(tr) ? json_integer_value(tr) + 1 : 1));
    }
    json_object_set_new(spec, "leaseDurationSeconds", json_integer(k->lease_duration_s));
    json_object_set_new(spec, "renewTime", json_string(now));
    /* PUT carries the resourceVersion we read: a replica that moved first wins, we get 409 */
    mcg_kube_req rq = {"PUT", path, NULL, o, NULL, 0, 0};
    json_t *res = NULL;
    rc = mcg_kube_call(k->kc, &rq, &st, &res, err);
    if (rc == MCG_ECONFLICT) {
        rc = 0; /* lost the race */
    } else if (!rc) {
        *leader = true;
        k->lead_ok_ms = started;
        const char *nrv = mcg_kube_obj_rv(res);
        free(k->obs_rv);
        k->obs_rv = nrv ? mcg_strdup(nrv) : NULL;
        k->obs_ms = mcg_mono_ms();
    }
    json_decref(res);
out:
    if (rc)
        mcg_err_prefix(err, "leader election (Lease %s/%s)", k->ns, MCG_KUBE_LEASE_NAME);
    k->leader = *leader;
    json_decref(o);
    free(path);
    return rc;
}

/* On a clean shutdown the leader gives the Lease up, so a standby takes over at once. */
void mcg_kube_lease_release(mcg_kube *k)
{
    if (!k->leader || !k->identity)
        return;
    char *path = lease_path(k);
    json_t *o = NULL;
    long st;
    if (mcg_kube_simple(k->kc, "GET", path, &st, &o, NULL) == 0) {
        json_t *spec = json_object_get(o, "spec");
        const char *h = mcg_kube_str_at(spec, "holderIdentity", NULL);
        if (h && !strcmp(h, k->identity)) {
            char now[40];
            mcg_kube_time_micro(mcg_kube_wall_ms(), now);
            json_object_set_new(spec, "holderIdentity", json_string(""));
            json_object_set_new(spec, "leaseDurationSeconds", json_integer(1));
            json_object_set_new(spec, "renewTime", json_string(now));
            mcg_kube_req rq = {"PUT", path, NULL, o, NULL, 0, MCG_KUBE_NO_RETRY};
            mcg_kube_call(k->kc, &rq, &st, NULL, NULL);
        }
    }
    json_decref(o);
    free(path);
    k->leader = false;
}
