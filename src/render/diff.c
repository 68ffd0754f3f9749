/*
 * diff.c — what changes on a node when its rendered config goes from old
 * to new, and which disruption actions that needs.
 *
 * The change is computed on the two merged Ignition configs, the way an
 * agent sees them: storage entries (files, directories, links) keyed by
 * path, units by name (their contents, enabled, mask and drop-ins), core's
 * SSH keys and password hash, the MachineConfig fields (kernel arguments,
 * extensions, kernel type, OS image, FIPS) and the sections MCO will not
 * change on an installed node. Every item carries the actions the node
 * disruption policy gives it (model/disruption.c, the agent's own rules);
 * kernel arguments and the OS fields need a Reboot, as the agent does when
 * it has steps to run for them. Pure: no I/O. Items come in a fixed order
 * (files, units, SSH keys, password, kernel arguments, OS fields,
 * unreconcilable sections), each group sorted by key, so the same two
 * configs always give the same list.
 */
#include "render/render.h"

#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {
    [MCG_DIFF_FILE] = "file",
    [MCG_DIFF_DIR] = "directory",
    [MCG_DIFF_LINK] = "link",
    [MCG_DIFF_UNIT] = "unit",
    [MCG_DIFF_SSHKEYS] = "sshAuthorizedKeys",
    [MCG_DIFF_PASSWORD] = "passwordHash",
    [MCG_DIFF_KARGS] = "kernelArguments",
    [MCG_DIFF_OS] = "os",
    [MCG_DIFF_UNRECONCILABLE] = "unreconcilable",
};

/* Contracts of the public functions: render.h. */
const char *mcg_diff_kind_name(mcg_diff_kind k)
{
    return k <= MCG_DIFF_UNRECONCILABLE ? kind_names[k] : "?";
}

const char *mcg_diff_op_name(mcg_diff_op op)
{
    switch (op) {
    case MCG_DIFF_ADDED:
        return "added";
    case MCG_DIFF_CHANGED:
        return "changed";
    case MCG_DIFF_REMOVED:
        return "removed";
    }
    return "?";
}

void mcg_diff_free(mcg_diff *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++) {
        free(d->items[i].key);
        mcg_strv_free(&d->items[i].what);
        mcg_disruption_free(&d->items[i].actions);
    }
    free(d->items);
    mcg_disruption_free(&d->actions);
    memset(d, 0, sizeof(*d));
}

/* A new item (zeroed but for kind, op and a copy of key). */
static mcg_diff_item *add_item(mcg_diff *d, mcg_diff_kind kind, mcg_diff_op op, const char *key)
{
    d->items = mcg_realloc(d->items, (d->n + 1) * sizeof(*d->items));
    mcg_diff_item *it = &d->items[d->n++];
    memset(it, 0, sizeof(*it));
    it->kind = kind;
    it->op = op;
    it->key = mcg_strdup(key);
    return it;
}

/* Equal strings, NULL equal only to NULL. */
static bool str_eq(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* Same owner: the same name (or none) and the same id (or none). */
static bool owner_eq(const mcg_owner *a, const mcg_owner *b)
{
    return str_eq(a->name, b->name) && a->has_id == b->has_id && (!a->has_id || a->id == b->id);
}

/* qsort comparators for pointers to entries: by path, by unit name. */
static int storage_ptr_cmp(const void *a, const void *b)
{
    return strcmp((*(const mcg_storage *const *)a)->path, (*(const mcg_storage *const *)b)->path);
}

static int unit_ptr_cmp(const void *a, const void *b)
{
    return strcmp((*(const mcg_unit *const *)a)->name, (*(const mcg_unit *const *)b)->name);
}

/* Pointers to the n elements of arr (size sz each), sorted with cmp. */
static const void **sorted_ptrs(const void *arr, size_t n, size_t sz,
                                int (*cmp)(const void *, const void *))
{
    const void **v = mcg_calloc(n ? n : 1, sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = (const char *)arr + i * sz;
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp);
    return v;
}

/* The diff kind of a storage entry. */
static mcg_diff_kind storage_kind(const mcg_storage *s)
{
    return s->kind == MCG_NODE_DIR    ? MCG_DIFF_DIR
           : s->kind == MCG_NODE_LINK ? MCG_DIFF_LINK
                                      : MCG_DIFF_FILE;
}

/* The aspects in which two entries at one path differ, into what. */
static void storage_what(mcg_strv *what, const mcg_storage *a, const mcg_storage *b)
{
    if (a->kind != b->kind) {
        mcg_strv_push(what, "type");
        return;
    }
    if (a->has_contents != b->has_contents || a->data_len != b->data_len ||
        (a->data_len && memcmp(a->data, b->data, a->data_len)))
        mcg_strv_push(what, "contents");
    if (a->has_mode != b->has_mode || (a->has_mode && a->mode != b->mode))
        mcg_strv_push(what, "mode");
    if (!owner_eq(&a->user, &b->user) || !owner_eq(&a->group, &b->group))
        mcg_strv_push(what, "owner");
    if (!str_eq(a->target, b->target) || a->hard != b->hard)
        mcg_strv_push(what, "target");
    if (a->overwrite != b->overwrite)
        mcg_strv_push(what, "overwrite");
}

/* Storage entries added, changed and removed, by path (a merge of two sorted lists). */
static void diff_storage(mcg_diff *d, const mcg_ignition *o, const mcg_ignition *n,
                         const mcg_disruption_policy *policy)
{
    const mcg_storage **a = (const mcg_storage **)sorted_ptrs(o->storage, o->nstorage,
                                                              sizeof(*o->storage), storage_ptr_cmp);
    const mcg_storage **b = (const mcg_storage **)sorted_ptrs(n->storage, n->nstorage,
                                                              sizeof(*n->storage), storage_ptr_cmp);
    size_t i = 0, j = 0;
    while (i < o->nstorage || j < n->nstorage) {
        int c = i == o->nstorage ? 1 : j == n->nstorage ? -1 : strcmp(a[i]->path, b[j]->path);
        mcg_diff_item *it = NULL;
        if (c < 0) {
            it = add_item(d, storage_kind(a[i]), MCG_DIFF_REMOVED, a[i]->path);
            i++;
        } else if (c > 0) {
            it = add_item(d, storage_kind(b[j]), MCG_DIFF_ADDED, b[j]->path);
            j++;
        } else {
            mcg_strv what = {0};
            storage_what(&what, a[i], b[j]);
            if (what.n) {
                it = add_item(d, storage_kind(b[j]), MCG_DIFF_CHANGED, b[j]->path);
                it->what = what; /* transferred */
            }
            i++, j++;
        }
        if (it)
            mcg_disruption_add(&it->actions, policy, MCG_DISRUPT_FILE, it->key);
    }
    free(a);
    free(b);
}

/* u's drop-in called name, NULL when none. */
static const mcg_dropin *dropin_find(const mcg_unit *u, const char *name)
{
    for (size_t i = 0; i < u->ndropins; i++)
        if (!strcmp(u->dropins[i].name, name))
            return &u->dropins[i];
    return NULL;
}

/* The aspects in which two units of one name differ, into what. */
static void unit_what(mcg_strv *what, const mcg_unit *a, const mcg_unit *b)
{
    if (!str_eq(a->contents, b->contents))
        mcg_strv_push(what, "contents");
    if (a->enabled != b->enabled)
        mcg_strv_push(what, "enabled");
    if (a->mask != b->mask)
        mcg_strv_push(what, "mask");
    mcg_strv names = {0};
    for (size_t i = 0; i < a->ndropins; i++)
        mcg_strv_push(&names, a->dropins[i].name);
    for (size_t i = 0; i < b->ndropins; i++)
        if (!mcg_strv_contains(&names, b->dropins[i].name))
            mcg_strv_push(&names, b->dropins[i].name);
    mcg_strv_sort(&names);
    for (size_t i = 0; i < names.n; i++) {
        const mcg_dropin *x = dropin_find(a, names.v[i]), *y = dropin_find(b, names.v[i]);
        if (!x || !y || !str_eq(x->contents, y->contents)) {
            char *s = mcg_sprintf("dropin %s", names.v[i]);
            mcg_strv_push(what, s);
            free(s);
        }
    }
    mcg_strv_free(&names);
}

/* Units added, changed and removed, by name; a drop-in change is its unit's. */
static void diff_units(mcg_diff *d, const mcg_ignition *o, const mcg_ignition *n,
                       const mcg_disruption_policy *policy)
{
    const mcg_unit **a =
        (const mcg_unit **)sorted_ptrs(o->units, o->nunits, sizeof(*o->units), unit_ptr_cmp);
    const mcg_unit **b =
        (const mcg_unit **)sorted_ptrs(n->units, n->nunits, sizeof(*n->units), unit_ptr_cmp);
    size_t i = 0, j = 0;
    while (i < o->nunits || j < n->nunits) {
        int c = i == o->nunits ? 1 : j == n->nunits ? -1 : strcmp(a[i]->name, b[j]->name);
        mcg_diff_item *it = NULL;
        bool links = false; /* its enablement or mask changes: systemd must reload */
        if (c < 0) {
            it = add_item(d, MCG_DIFF_UNIT, MCG_DIFF_REMOVED, a[i]->name);
            links = a[i]->enabled != MCG_UNSET || a[i]->mask == MCG_TRUE;
            i++;
        } else if (c > 0) {
            it = add_item(d, MCG_DIFF_UNIT, MCG_DIFF_ADDED, b[j]->name);
            links = b[j]->enabled != MCG_UNSET || b[j]->mask != MCG_UNSET;
            j++;
        } else {
            mcg_strv what = {0};
            unit_what(&what, a[i], b[j]);
            if (what.n) {
                it = add_item(d, MCG_DIFF_UNIT, MCG_DIFF_CHANGED, b[j]->name);
                it->what = what; /* transferred */
                links = mcg_strv_contains(&what, "enabled") || mcg_strv_contains(&what, "mask");
            }
            i++, j++;
        }
        if (it)
            mcg_disruption_add(&it->actions, policy, MCG_DISRUPT_UNIT, it->key);
        if (it && links) /* as MCO's daemon: a daemon-reload, unless it reboots anyway */
            it->actions.daemon_reload = true;
    }
    free(a);
    free(b);
}

/* "+x" for each entry of b not in a, then "-x" for each of a not in b, into what. */
static void strv_delta(mcg_strv *what, const mcg_strv *a, const mcg_strv *b)
{
    for (size_t i = 0; i < b->n; i++)
        if (!mcg_strv_contains(a, b->v[i])) {
            char *s = mcg_sprintf("+%s", b->v[i]);
            mcg_strv_push(what, s);
            free(s);
        }
    for (size_t i = 0; i < a->n; i++)
        if (!mcg_strv_contains(b, a->v[i])) {
            char *s = mcg_sprintf("-%s", a->v[i]);
            mcg_strv_push(what, s);
            free(s);
        }
}

/* added when old had none, removed when new has none, else changed. */
static mcg_diff_op op_of(bool had, bool has)
{
    return !had ? MCG_DIFF_ADDED : !has ? MCG_DIFF_REMOVED : MCG_DIFF_CHANGED;
}

/* core's SSH keys (as one item, counted) and password hash. */
static void diff_ssh(mcg_diff *d, const mcg_ignition *o, const mcg_ignition *n,
                     const mcg_disruption_policy *policy)
{
    mcg_strv what = {0};
    strv_delta(&what, &o->ssh_keys, &n->ssh_keys);
    if (what.n) {
        size_t plus = 0;
        for (size_t i = 0; i < what.n; i++)
            plus += what.v[i][0] == '+';
        /* keys are long: the item says how many came and went */
        mcg_diff_item *it =
            add_item(d, MCG_DIFF_SSHKEYS, op_of(o->ssh_keys.n, n->ssh_keys.n), "core");
        char *s = mcg_sprintf("%zu added, %zu removed", plus, what.n - plus);
        mcg_strv_push(&it->what, s);
        free(s);
        mcg_disruption_add(&it->actions, policy, MCG_DISRUPT_SSHKEY, "sshkey");
    }
    mcg_strv_free(&what);
    /* a password hash changes in place, under the sshkey rule as MCO's daemon
     * applies it (its default: None) */
    if (!str_eq(o->password_hash, n->password_hash)) {
        mcg_diff_item *it =
            add_item(d, MCG_DIFF_PASSWORD, op_of(o->password_hash, n->password_hash), "core");
        mcg_disruption_add(&it->actions, policy, MCG_DISRUPT_SSHKEY, "sshkey");
    }
}

/* One OS string field (NULL: unset); a change needs a Reboot. */
static void os_field(mcg_diff *d, const char *key, const char *a, const char *b)
{
    if (str_eq(a, b))
        return;
    mcg_diff_item *it = add_item(d, MCG_DIFF_OS, op_of(a, b), key);
    if (b)
        mcg_strv_push(&it->what, b);
    else if (!strcmp(key, "osImageURL")) /* the agent rebases back (agent/baseimage.c) */
        mcg_strv_push(&it->what, "back to the image booted before the first rebase");
    mcg_disruption_add(&it->actions, NULL, MCG_DISRUPT_REBOOT, key);
}

/* An unreconcilable section that is absent or empty. */
static bool section_empty(const json_t *v)
{
    return !v || (json_is_array(v) ? !json_array_size(v) : !json_object_size(v));
}

/* Kernel arguments, extensions, OS fields (Reboot) and unreconcilable sections. */
static void diff_os(mcg_diff *d, const mcg_ignition *o, const mcg_ignition *n)
{
    const mcg_osspec *a = &o->os, *b = &n->os;
    mcg_strv what = {0};
    strv_delta(&what, &a->kargs, &b->kargs);
    if (what.n) {
        mcg_diff_item *it =
            add_item(d, MCG_DIFF_KARGS, op_of(a->kargs.n, b->kargs.n), "kernelArguments");
        it->what = what; /* transferred */
        mcg_disruption_add(&it->actions, NULL, MCG_DISRUPT_REBOOT, it->key);
    } else {
        mcg_strv_free(&what);
    }
    memset(&what, 0, sizeof(what));
    strv_delta(&what, &a->extensions, &b->extensions);
    if (what.n) {
        mcg_diff_item *it =
            add_item(d, MCG_DIFF_OS, op_of(a->extensions.n, b->extensions.n), "extensions");
        it->what = what; /* transferred */
        mcg_disruption_add(&it->actions, NULL, MCG_DISRUPT_REBOOT, it->key);
    } else {
        mcg_strv_free(&what);
    }
    os_field(d, "kernelType", a->kernel_type, b->kernel_type);
    os_field(d, "osImageURL", a->os_image_url, b->os_image_url);
    os_field(d, "baseOSExtensionsContainerImage", a->ext_image, b->ext_image);
    if (a->fips != b->fips) {
        mcg_diff_item *it = add_item(d, MCG_DIFF_UNRECONCILABLE, MCG_DIFF_CHANGED, "fips");
        mcg_strv_push(&it->what, b->fips ? "true" : "false");
    }
    static const char *const secs[] = {"disks", "filesystems", "groups", "kernelArguments",
                                       "luks",  "raid",        "users"};
    for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
        json_t *x = o->extra ? json_object_get(o->extra, secs[i]) : NULL;
        json_t *y = n->extra ? json_object_get(n->extra, secs[i]) : NULL;
        bool xe = section_empty(x), ye = section_empty(y);
        if ((xe && ye) || (!xe && !ye && json_equal(x, y)))
            continue;
        add_item(d, MCG_DIFF_UNRECONCILABLE, op_of(!xe, !ye), secs[i]);
    }
}

void mcg_render_diff(mcg_diff *out, const mcg_ignition *old, const mcg_ignition *new_cfg,
                     const mcg_disruption_policy *policy)
{
    static const mcg_ignition none = {0};
    const mcg_ignition *o = old ? old : &none;
    memset(out, 0, sizeof(*out));
    diff_storage(out, o, new_cfg, policy);
    diff_units(out, o, new_cfg, policy);
    diff_ssh(out, o, new_cfg, policy);
    diff_os(out, o, new_cfg);
    for (size_t i = 0; i < out->n; i++) {
        mcg_disruption_finish(&out->items[i].actions);
        mcg_disruption_merge(&out->actions, &out->items[i].actions);
        if (out->items[i].kind == MCG_DIFF_UNRECONCILABLE)
            out->unreconcilable = true;
    }
    mcg_disruption_finish(&out->actions);
}
