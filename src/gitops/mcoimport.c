/*
 * mcoimport.c — `mcgit import-mco`: a config repo written from what
 * `oc get machineconfigs,machineconfigpools -o yaml` prints. User
 * MachineConfigs as they are, the ones OpenShift's controllers and installer
 * generated marked as such, MCO's rendered-* skipped, pools without status;
 * whatever mcgit refuses kept aside and reported. Everything is written into
 * a temporary directory beside DIR and renamed to DIR at the end, so a
 * refused export leaves nothing behind. When the export holds a pool's
 * current rendered config, mcgit's render of the new repo is compared with it.
 */
#include "gitops/gitops_int.h"
#include "fsio/fsio.h"
#include "render/render.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ANN_VERSION "machineconfiguration.openshift.io/generated-by-controller-version"
#define ANN_IMPORTED "machineconfiguration.mcgit.io/imported-generated-by"
#define REPORT_FILE "import-mco-report.txt"

typedef struct imp {
    const char *from;
    const char *tmp;
    mcg_export ex;
    mcg_strv *report;
    mcg_strv objs;    /* one line per object carried over or skipped */
    mcg_strv refused; /* what could not be carried over */
    mcg_strv notes;   /* warnings about what was carried over */
    size_t n_pools, n_mcs, n_generated, n_rendered;
} imp;

static void pushf(mcg_strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pushf(mcg_strv *s, const char *fmt, ...)
{
    mcg_buf b = MCG_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    mcg_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    mcg_strv_push(s, b.ptr ? b.ptr : "");
    mcg_buf_free(&b);
}

/* "99-<pool>-ssh": the installer's, without a controller's marks. */
static bool installer_ssh(const char *name)
{
    size_t n = strlen(name);
    return n > 7 && !strncmp(name, "99-", 3) && !strcmp(name + n - 4, "-ssh");
}

/*
 * Who generated an MC on the cluster (NULL: a user's); *render is set for
 * MCO's own renders (owned by a MachineConfigPool, or rendered-* with the
 * controller's mark).
 */
static char *generated_by(const json_t *obj, const char *name, bool *render)
{
    json_t *md = json_object_get(obj, "metadata");
    const char *ver =
        json_string_value(json_object_get(json_object_get(md, "annotations"), ANN_VERSION));
    const char *okind = NULL, *oname = NULL;
    size_t i;
    json_t *ref;
    json_array_foreach(json_object_get(md, "ownerReferences"), i, ref) {
        const char *k = json_string_value(json_object_get(ref, "kind"));
        if (k && !okind) {
            okind = k;
            oname = json_string_value(json_object_get(ref, "name"));
        }
        if (k && !strcmp(k, "MachineConfigPool"))
            *render = true;
    }
    if ((ver || okind) && !strncmp(name, "rendered-", 9))
        *render = true;
    if (okind && ver)
        return mcg_sprintf("%s/%s (controller version %s)", okind, oname ? oname : "?", ver);
    if (okind)
        return mcg_sprintf("%s/%s", okind, oname ? oname : "?");
    if (ver)
        return mcg_sprintf("machine-config-controller (controller version %s)", ver);
    if (installer_ssh(name))
        return mcg_strdup("openshift-install (the install-config's sshKey)");
    return NULL;
}

/* metadata: name, labels, annotations (kubectl's last-applied left out). */
static json_t *clean_meta(const json_t *md, const char *by)
{
    json_t *out = json_pack("{s:O}", "name", json_object_get(md, "name"));
    json_t *labels = json_object_get(md, "labels");
    if (json_is_object(labels) && json_object_size(labels))
        json_object_set_new(out, "labels", json_deep_copy(labels));
    json_t *ann = json_deep_copy(json_object_get(md, "annotations"));
    if (!json_is_object(ann)) {
        json_decref(ann);
        ann = json_object();
    }
    json_object_del(ann, "kubectl.kubernetes.io/last-applied-configuration");
    if (by)
        json_object_set_new(ann, ANN_IMPORTED, json_string(by));
    if (json_object_size(ann))
        json_object_set(out, "annotations", ann);
    json_decref(ann);
    return out;
}

/* A pool's spec: the fields mcgit reads; every other one reported. */
static json_t *clean_pool_spec(imp *im, const mcg_export_obj *o)
{
    static const char *const keep[] = {"machineConfigSelector", "nodeSelector", "maxUnavailable",
                                       "paused", NULL};
    json_t *spec = json_object_get(o->obj, "spec");
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(spec, k, v) {
        bool kept = false;
        for (size_t i = 0; keep[i] && !kept; i++)
            kept = !strcmp(k, keep[i]);
        if (kept)
            json_object_set_new(out, k, json_deep_copy(v));
        else if (strcmp(k, "configuration") != 0) /* MCO's target: mcgit renders its own */
            pushf(&im->refused,
                  "MachineConfigPool %s (%s:%d): spec.%s dropped: mcgit has no such field", o->name,
                  im->from, o->line, k);
    }
    if (json_is_true(json_object_get(spec, "paused")))
        pushf(&im->notes,
              "pools/%s.yaml: the pool is paused on the cluster; kept as paused: true, a "
              "pause in git that only a signed commit lifts",
              o->name);
    return out;
}

/* The object as the repo keeps it, with its file's leading comment. */
static char *object_text(imp *im, const mcg_export_obj *o, const char *by, size_t *len)
{
    json_t *md = clean_meta(json_object_get(o->obj, "metadata"), by);
    json_t *spec =
        o->is_pool ? clean_pool_spec(im, o) : json_deep_copy(json_object_get(o->obj, "spec"));
    json_t *out = json_pack("{s:s, s:s, s:o}", "apiVersion", MCG_API_OPENSHIFT, "kind",
                            o->is_pool ? "MachineConfigPool" : "MachineConfig", "metadata", md);
    if (spec)
        json_object_set_new(out, "spec", spec);
    mcg_buf b = MCG_BUF_INIT;
    if (by)
        mcg_buf_printf(&b,
                       "# Generated on the OpenShift cluster by\n#   %s,\n"
                       "# carried over by `mcgit import-mco` from\n#   %s.\n"
                       "# MCO would generate it again from its source object; mcgit does not:\n"
                       "# edit it here, or delete it.\n",
                       by, im->from);
    else if (o->is_pool)
        mcg_buf_printf(&b, "# Imported by `mcgit import-mco` from %s (status left out).\n",
                       im->from);
    mcg_yaml_emit(&b, out);
    json_decref(out);
    return mcg_buf_detach(&b, len);
}

/* Check one file alone as the model reads it: true when it is accepted. */
/* What a carried-over MC does differently under mcgit, as notes. */
static void note_mc(imp *im, const char *rel, const mcg_machineconfig *mc)
{
    const char *k;
    json_t *v;
    json_object_foreach(mc->config.extra, k, v) {
        pushf(&im->notes,
              "%s: %s is install-time: taken as installed on a node's first config, as MCO "
              "does; a later change is refused at push and render (Unreconcilable)",
              rel, k);
    }
    if (mc->config.os.os_image_url)
        pushf(&im->notes,
              "%s: osImageURL %s: the agent rebases nodes to it (rpm-ostree or bootc); MCO's "
              "on-cluster layering (MachineOSConfig) is not in this export",
              rel, mc->config.os.os_image_url);
    if (mc->config.os.ext_image)
        pushf(&im->notes,
              "%s: baseOSExtensionsContainerImage: nodes report Degraded with it (mcgit "
              "installs extensions from the host's repositories): remove it",
              rel);
}

static bool check_alone(imp *im, const char *rel, const char *text, size_t len, mcg_diags *problems)
{
    mcg_model *m = mcg_model_new();
    mcg_model_add_file(m, rel, text, len, problems);
    for (size_t i = 0; i < m->warnings.count; i++)
        pushf(&im->notes, "warning: %s", m->warnings.msgs[i]);
    for (size_t i = 0; !problems->count && i < m->nmcs; i++)
        note_mc(im, rel, &m->mcs[i]);
    mcg_model_free(m);
    return problems->count == 0;
}

static int write_rel(imp *im, const char *rel, const char *text, size_t len, mcg_err *err)
{
    char *path = mcg_sprintf("%s/%s", im->tmp, rel);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    int rc = mcg_mkdirs(path, 0755, err);
    *slash = '/';
    /* A new file in the new directory: made durable by one syncfs before
     * the directory is renamed into place (write_all), not one by one. */
    int fd = rc ? -1 : open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (!rc && (fd < 0 || mcg_write_all(fd, text, len) != 0))
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", path);
    if (fd >= 0 && close(fd) != 0 && !rc)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", path);
    free(path);
    return rc;
}

/* One object into the repo (or, refused, into not-imported/). */
static int carry_one(imp *im, const mcg_export_obj *o, mcg_err *err)
{
    bool render = false;
    char *by = o->is_pool ? NULL : generated_by(o->obj, o->name, &render);
    const char *kind = o->is_pool ? "MachineConfigPool" : "MachineConfig";
    if (render) {
        im->n_rendered++;
        pushf(&im->objs, "skipped %s (%s:%d): MCO's rendered config; mcgit renders its own",
              o->name, im->from, o->line);
        free(by);
        return 0;
    }
    size_t len = 0;
    char *text = object_text(im, o, by, &len);
    char *rel = mcg_sprintf("%s/%s.yaml", o->is_pool ? "pools" : "machineconfigs", o->name);
    mcg_diags problems = {0};
    if (check_alone(im, rel, text, len, &problems)) {
        pushf(&im->objs, "%s %s: %s%s%s", kind, o->name, rel, by ? ", generated by " : "",
              by ? by : "");
        im->n_pools += o->is_pool;
        im->n_mcs += !o->is_pool;
        im->n_generated += by != NULL;
    } else {
        free(rel);
        rel =
            mcg_sprintf("not-imported/%s-%s.yaml", o->is_pool ? "pool" : "machineconfig", o->name);
        for (size_t i = 0; i < problems.count; i++)
            pushf(&im->refused, "%s %s (%s:%d): %s; kept as %s", kind, o->name, im->from, o->line,
                  problems.msgs[i], rel);
    }
    int rc = write_rel(im, rel, text, len, err);
    mcg_diags_free(&problems);
    free(rel);
    free(text);
    free(by);
    return rc;
}

/* ------------------------------------------------------------ comparison */

static const mcg_export_obj *find_mc(const imp *im, const char *name)
{
    for (size_t i = 0; i < im->ex.n; i++)
        if (!im->ex.v[i].is_pool && !strcmp(im->ex.v[i].name, name))
            return &im->ex.v[i];
    return NULL;
}

/* The cluster's rendered config as the agent would read it. */
static int parse_theirs(mcg_ignition *out, const mcg_export_obj *o, mcg_err *err)
{
    const char *const *keys = mcg_model_mc_spec_keys;
    json_t *spec = json_object_get(o->obj, "spec");
    json_t *s = json_object();
    for (size_t i = 0; keys[i]; i++)
        if (json_object_get(spec, keys[i]))
            json_object_set(s, keys[i], json_object_get(spec, keys[i]));
    char *txt = json_dumps(s, JSON_COMPACT);
    json_decref(s);
    int rc = mcg_ignition_parse_json(out, o->name, txt, strlen(txt), err);
    free(txt);
    return rc;
}

static void diff_line(imp *im, const char *pool, const mcg_diff_item *it,
                      const mcg_ignition *theirs)
{
    mcg_buf b = MCG_BUF_INIT;
    mcg_buf_printf(&b, "compare %s: %s %s %s", pool, mcg_diff_kind_name(it->kind), it->key,
                   it->op == MCG_DIFF_ADDED     ? "only in mcgit's render"
                   : it->op == MCG_DIFF_REMOVED ? "only in the cluster's render"
                                                : "differs");
    bool os = it->kind == MCG_DIFF_OS && it->op == MCG_DIFF_REMOVED;
    if (os && !strcmp(it->key, "osImageURL") && theirs->os.os_image_url)
        mcg_buf_printf(&b,
                       ": the cluster's is %s, from the release payload (MCO's controller sets "
                       "it on every render; no MachineConfig carries it); mcgit leaves a node's OS "
                       "image as it is while no MachineConfig sets one",
                       theirs->os.os_image_url);
    else if (os && !strcmp(it->key, "baseOSExtensionsContainerImage") && theirs->os.ext_image)
        mcg_buf_printf(&b,
                       ": the cluster's is %s, from the release payload; mcgit installs "
                       "extensions from the host's repositories instead",
                       theirs->os.ext_image);
    else
        for (size_t i = 0; i < it->what.n; i++)
            mcg_buf_printf(&b, "%s%s%s", i ? ", " : " (", it->what.v[i],
                           i + 1 == it->what.n ? ")" : "");
    mcg_strv_push(&im->notes, b.ptr ? b.ptr : "");
    mcg_buf_free(&b);
}

static size_t count_kind(const mcg_ignition *ign, mcg_node_kind k)
{
    size_t n = 0;
    for (size_t i = 0; i < ign->nstorage; i++)
        n += ign->storage[i].kind == k;
    return n;
}

static void compare_pool(imp *im, const mcg_rendered_pool *rp, const char *cur)
{
    const mcg_export_obj *o = cur ? find_mc(im, cur) : NULL;
    if (!o) {
        pushf(&im->notes, "compare %s: not compared: the export has %s", rp->pool,
              cur ? "no rendered MachineConfig of that name" : "no current config");
        return;
    }
    mcg_ignition theirs = {0}, mine = {0};
    mcg_err err = {0};
    if (parse_theirs(&theirs, o, &err) ||
        mcg_ignition_parse_json(&mine, rp->name, rp->spec, rp->spec_len, &err)) {
        pushf(&im->notes, "compare %s: not compared with %s: %s", rp->pool, cur, err.msg);
    } else {
        mcg_diff d;
        mcg_render_diff(&d, &theirs, &mine, NULL);
        pushf(&im->notes,
              "compare %s: mcgit's %s against the cluster's %s: %s (mcgit's has %zu files, %zu "
              "directories, %zu links, %zu units, %zu SSH keys, %zu kernel arguments)",
              rp->pool, rp->name, cur, d.n ? "differences below" : "no change",
              count_kind(&mine, MCG_NODE_FILE), count_kind(&mine, MCG_NODE_DIR),
              count_kind(&mine, MCG_NODE_LINK), mine.nunits, mine.ssh_keys.n, mine.os.kargs.n);
        for (size_t i = 0; i < d.n; i++)
            diff_line(im, rp->pool, &d.items[i], &theirs);
        mcg_diff_free(&d);
    }
    mcg_ignition_free(&theirs);
    mcg_ignition_free(&mine);
}

static const char *pool_current(const imp *im, const char *pool)
{
    for (size_t i = 0; i < im->ex.n; i++) {
        const mcg_export_obj *o = &im->ex.v[i];
        if (!o->is_pool || strcmp(o->name, pool) != 0)
            continue;
        const char *s = json_string_value(json_object_get(
            json_object_get(json_object_get(o->obj, "status"), "configuration"), "name"));
        return s ? s
                 : json_string_value(json_object_get(
                       json_object_get(json_object_get(o->obj, "spec"), "configuration"), "name"));
    }
    return NULL;
}

/* Load and render what was written; compare each pool with the cluster's. */
static void check_repo(imp *im)
{
    mcg_diags diags = {0};
    mcg_err err = {0};
    mcg_model *m = NULL;
    mcg_render *r = NULL;
    if (mcg_source_load_dir(&m, im->tmp, &diags, &err) == MCG_EIO)
        mcg_diags_add(&diags, "%s", err.msg);
    else if (!diags.count)
        mcg_render_model(&r, m, &diags);
    for (size_t i = 0; i < diags.count; i++)
        pushf(&im->refused, "the new repo does not validate: %s", diags.msgs[i]);
    for (size_t i = 0; m && i < m->warnings.count; i++) {
        char *w = mcg_sprintf("warning: %s", m->warnings.msgs[i]);
        if (!mcg_strv_contains(&im->notes, w))
            mcg_strv_push(&im->notes, w); /* across files: a MachineConfig no pool selects */
        free(w);
    }
    for (size_t i = 0; r && i < r->n; i++) {
        if (!r->pools[i].error)
            compare_pool(im, &r->pools[i], pool_current(im, r->pools[i].pool));
    }
    mcg_render_free(r);
    mcg_model_free(m);
    mcg_diags_free(&diags);
}

/* ------------------------------------------------------------ the repo */

static int remove_template_objects(const char *tmp, mcg_err *err)
{
    for (const mcg_template_file *f = mcg_template_files; f->path; f++) {
        if (strncmp(f->path, "pools/", 6) && strncmp(f->path, "machineconfigs/", 15))
            continue;
        char *p = mcg_sprintf("%s/%s", tmp, f->path);
        int rc = unlink(p) ? mcg_err_set_os(err, MCG_EIO, errno, "%s", p) : 0;
        free(p);
        if (rc)
            return rc;
    }
    return 0;
}

static void build_report(imp *im, const char *dir)
{
    mcg_strv *r = im->report;
    pushf(r,
          "imported %s into %s: %zu pools, %zu MachineConfigs (%zu generated on the "
          "cluster, marked), %zu rendered skipped, %zu not carried over (below)",
          im->from, dir, im->n_pools, im->n_mcs, im->n_generated, im->n_rendered, im->refused.n);
    for (size_t i = 0; i < im->objs.n; i++)
        mcg_strv_push(r, im->objs.v[i]);
    for (size_t i = 0; i < im->refused.n; i++)
        pushf(r, "not carried over: %s", im->refused.v[i]);
    for (size_t i = 0; i < im->notes.n; i++)
        mcg_strv_push(r, im->notes.v[i]);
}

static int write_all(imp *im, const char *dir, mcg_err *err)
{
    int rc = mcg_gitops_init(im->tmp, err);
    if (!rc)
        rc = remove_template_objects(im->tmp, err);
    for (size_t i = 0; !rc && i < im->ex.n; i++)
        rc = carry_one(im, &im->ex.v[i], err);
    if (rc)
        return rc;
    check_repo(im);
    build_report(im, dir);
    mcg_buf b = MCG_BUF_INIT;
    for (size_t i = 0; i < im->report->n; i++)
        mcg_buf_printf(&b, "%s\n", im->report->v[i]);
    rc = write_rel(im, REPORT_FILE, b.ptr ? b.ptr : "", b.len, err);
    mcg_buf_free(&b);
    int fd = rc ? -1 : open(im->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!rc && (fd < 0 || syncfs(fd) != 0))
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", im->tmp);
    if (fd >= 0)
        close(fd);
    return rc;
}

/* dir must not exist, or be an empty directory (rename(2) replaces it). */
static int check_target(const char *dir, mcg_err *err)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        return errno == ENOENT ? 0 : mcg_err_set_os(err, MCG_EIO, errno, "%s", dir);
    if (!S_ISDIR(st.st_mode))
        return mcg_err_set(err, MCG_EINVAL, "%s exists and is not a directory", dir);
    DIR *d = opendir(dir);
    struct dirent *de;
    bool empty = d != NULL;
    while (d && (de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            empty = false;
    if (d)
        closedir(d);
    return empty ? 0 : mcg_err_set(err, MCG_EINVAL, "%s exists and is not empty", dir);
}

int mcg_source_import_mco(const char *dir, const char *from, const char *data, size_t len,
                          mcg_strv *report, mcg_err *err)
{
    imp im = {.from = from, .report = report};
    mcg_diags diags = {0};
    char *target = mcg_strdup(dir);
    for (size_t n = strlen(target); n > 1 && target[n - 1] == '/'; n--)
        target[n - 1] = '\0';
    dir = target;
    int rc = check_target(dir, err);
    if (!rc && mcg_model_read_export(&im.ex, from, data, len, &diags))
        rc = mcg_err_set(err, MCG_EINVAL, "%s", diags.msgs[0]);
    char *tmp = NULL;
    if (!rc) {
        tmp = mcg_sprintf("%s.import-XXXXXX", dir);
        if (!mkdtemp(tmp) || chmod(tmp, 0755) != 0)
            rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", tmp);
        im.tmp = tmp;
    }
    if (!rc)
        rc = write_all(&im, dir, err);
    if (!rc && rename(tmp, dir) != 0)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "rename %s to %s", tmp, dir);
    if (!rc) {
        char *parent = mcg_strdup(dir);
        char *slash = strrchr(parent, '/');
        if (slash)
            slash[slash == parent ? 1 : 0] = '\0'; /* "/x": "/" */
        mcg_fsync_dir(slash ? parent : ".");
        free(parent);
    }
    if (rc && im.tmp)
        mcg_remove_tree(tmp);
    free(tmp);
    free(target);
    mcg_model_export_free(&im.ex);
    mcg_diags_free(&diags);
    mcg_strv_free(&im.objs);
    mcg_strv_free(&im.refused);
    mcg_strv_free(&im.notes);
    return rc;
}
