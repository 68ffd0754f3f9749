/*
 * export.c — what `oc get machineconfigs,machineconfigpools -o yaml` prints,
 * read into a flat list of objects (a v1 List, or a YAML stream of objects
 * and lists), and JSON values written back as block YAML that mcgit's YAML
 * reader reads to the same values.
 */
#include "model/model_int.h"

#include <ctype.h>
#include <string.h>

typedef struct exctx {
    mcg_export *out;
    const char *file;
    mcg_diags *diags;
    int bad; /* problems found */
} exctx;

static bool kind_is_list(const char *kind)
{
    size_t n = strlen(kind);
    return n >= 4 && !strcmp(kind + n - 4, "List");
}

static void export_add(exctx *x, json_t *obj, int line)
{
    mcg_pctx c = {.file = x->file, .base_line = line, .diags = x->diags};
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const char *api = json_string_value(json_object_get(obj, "apiVersion"));
    json_t *md = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    bool is_pool = kind && !strcmp(kind, "MachineConfigPool");
    if (!kind || (!is_pool && strcmp(kind, "MachineConfig") != 0))
        mcg_pctx_err_line(&c, line, "kind '%s' is not a MachineConfig or MachineConfigPool",
                          kind ? kind : "(none)");
    else if (!api || strcmp(api, MCG_API_OPENSHIFT) != 0)
        mcg_pctx_err_line(&c, line, "%s '%s': apiVersion '%s' is not %s", kind,
                          name ? name : "(no name)", api ? api : "(none)", MCG_API_OPENSHIFT);
    else if (!name)
        mcg_pctx_err_line(&c, line, "%s without metadata.name", kind);
    else if (is_pool ? !mcg_name_is_dns_label(name) : !mcg_name_is_dns_subdomain(name))
        mcg_pctx_err_line(&c, line, "%s '%s': the name is not a DNS-1123 %s", kind, name,
                          is_pool ? "label" : "subdomain");
    else if (json_object_get(obj, "spec") && !json_is_object(json_object_get(obj, "spec")))
        mcg_pctx_err_line(&c, line, "%s '%s': spec is not a mapping", kind, name);
    for (size_t i = 0; !c.errors && i < x->out->n; i++)
        if (x->out->v[i].is_pool == is_pool && !strcmp(x->out->v[i].name, name))
            mcg_pctx_err_line(&c, line, "%s '%s' appears twice (first at line %d)", kind, name,
                              x->out->v[i].line);
    if (c.errors) {
        x->bad += c.errors;
        return;
    }
    x->out->v = mcg_realloc(x->out->v, (x->out->n + 1) * sizeof(*x->out->v));
    mcg_export_obj *o = &x->out->v[x->out->n++];
    o->is_pool = is_pool;
    o->name = mcg_strdup(name);
    o->line = line;
    o->obj = json_incref(obj);
}

static void export_doc(json_t *root, mcg_linemap *lines, void *arg)
{
    exctx *x = arg;
    if (json_is_null(root))
        return;
    int line = mcg_linemap_get(lines, root);
    if (!json_is_object(root)) {
        mcg_diags_add(x->diags, "%s:%d: document is not a mapping", x->file, line);
        x->bad++;
        return;
    }
    const char *kind = json_string_value(json_object_get(root, "kind"));
    if (!kind || !kind_is_list(kind)) {
        export_add(x, root, line);
        return;
    }
    json_t *items = json_object_get(root, "items");
    if (!json_is_array(items) && !json_is_null(items) && items) {
        mcg_diags_add(x->diags, "%s:%d: %s: items is not a list", x->file, line, kind);
        x->bad++;
        return;
    }
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) {
        int l = mcg_linemap_get(lines, it);
        if (!json_is_object(it)) {
            mcg_diags_add(x->diags, "%s:%d: %s item %zu is not a mapping", x->file, l, kind, i);
            x->bad++;
        } else {
            export_add(x, it, l);
        }
    }
}

int mcg_model_read_export(mcg_export *out, const char *file, const char *data, size_t len,
                          mcg_diags *diags)
{
    memset(out, 0, sizeof(*out));
    if (memchr(data, '\0', len)) {
        mcg_diags_add(diags, "%s: the export contains a NUL byte", file);
        return MCG_EINVAL;
    }
    exctx x = {out, file, diags, 0};
    int synt = mcg_yaml_each_doc(file, data, len, 0, diags, export_doc, &x);
    return synt || x.bad ? MCG_EINVAL : 0;
}

void mcg_model_export_free(mcg_export *e)
{
    for (size_t i = 0; i < e->n; i++) {
        free(e->v[i].name);
        json_decref(e->v[i].obj);
    }
    free(e->v);
    memset(e, 0, sizeof(*e));
}

/* ------------------------------------------------------------ YAML out */

/* A string the reader takes back as the same string when written plain. */
static bool plain_ok(const char *s, size_t n)
{
    static const char *const words[] = {"y",   "n",    "yes",   "no",   "on",
                                        "off", "true", "false", "null", NULL};
    if (!n || n > 200 || s[n - 1] == ' ' || s[n - 1] == ':')
        return false;
    if (isdigit((unsigned char)s[0])) {
        /* Read as a number unless a letter no number has comes first or
         * follows: the reader's integers and strtod's floats have none. */
        bool word = false;
        for (size_t i = 0; i < n && !word; i++)
            word = strchr("ghijklmnqrstuvwyzGHIJKLMNQRSTUVWYZ", s[i]) != NULL;
        if (!word)
            return false;
    } else if (!isalpha((unsigned char)s[0]) && s[0] != '/') {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!isalnum(ch) && !strchr("_./:=@+,- ", ch))
            return false;
        if (ch == ' ' && (s[i + 1] == '#' || s[i + 1] == ' '))
            return false;
        if (ch == ':' && s[i + 1] == ' ')
            return false;
    }
    char low[8];
    if (n < sizeof(low)) {
        for (size_t i = 0; i <= n; i++)
            low[i] = (char)tolower((unsigned char)s[i]);
        for (size_t i = 0; words[i]; i++)
            if (!strcmp(low, words[i]))
                return false;
    }
    return true;
}

/* Lines of text a literal block keeps as they are: "|" or "|-", else NULL. */
static const char *literal_style(const char *s, size_t n)
{
    if (!n || !memchr(s, '\n', n) || s[0] == ' ' || s[0] == '\t' || s[0] == '\n')
        return NULL;
    if (n >= 2 && s[n - 1] == '\n' && s[n - 2] == '\n')
        return NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f)
            return NULL;
        if (ch == '\t' && (i == 0 || s[i - 1] == '\n'))
            return NULL; /* a tab where the indentation is */
        if ((ch == ' ' || ch == '\t') && (i + 1 == n || s[i + 1] == '\n'))
            return NULL; /* trailing blanks on a line: quoted keeps them visible */
        if (ch == 0xef || ch == 0xc2 || ch == 0xe2)
            return NULL; /* BOM, NEL, line separators: quoted */
    }
    return s[n - 1] == '\n' ? "|" : "|-";
}

/* Double-quoted, JSON's escapes (YAML's are a superset); the characters
 * YAML takes for line breaks (NEL, U+2028, U+2029) and the BOM escaped. */
static void emit_quoted(mcg_buf *b, const json_t *v)
{
    const char *s = json_string_value(v);
    size_t flags = JSON_ENCODE_ANY;
    if (strstr(s, "\xc2\x85") || strstr(s, "\xe2\x80\xa8") || strstr(s, "\xe2\x80\xa9") ||
        strstr(s, "\xef\xbb\xbf"))
        flags |= JSON_ENSURE_ASCII;
    char *q = json_dumps(v, flags);
    mcg_buf_puts(b, q);
    free(q);
}

static void emit_string(mcg_buf *b, const json_t *v, int indent)
{
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    const char *lit = literal_style(s, n);
    if (lit) {
        mcg_buf_puts(b, lit);
        const char *p = s, *end = s + n;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t ln = nl ? (size_t)(nl - p) : (size_t)(end - p);
            mcg_buf_putc(b, '\n');
            if (ln)
                mcg_buf_printf(b, "%*s%.*s", indent, "", (int)ln, p);
            p += ln + (nl ? 1 : 0);
        }
        return;
    }
    if (plain_ok(s, n)) {
        mcg_buf_put(b, s, n);
        return;
    }
    emit_quoted(b, v);
}

static void emit_value(mcg_buf *b, const json_t *v, int indent, bool in_seq);

static void emit_scalar(mcg_buf *b, const json_t *v, int indent)
{
    if (json_is_string(v)) {
        emit_string(b, v, indent);
        return;
    }
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
    mcg_buf_puts(b, s ? s : "null");
    free(s);
}

static bool is_block(const json_t *v)
{
    return (json_is_object(v) && json_object_size(v)) || (json_is_array(v) && json_array_size(v));
}

static void emit_object(mcg_buf *b, const json_t *v, int indent, bool in_seq)
{
    const char *k;
    json_t *e;
    bool first = true;
    json_object_foreach((json_t *)v, k, e) {
        if (!(first && in_seq))
            mcg_buf_printf(b, "\n%*s", indent, "");
        first = false;
        if (plain_ok(k, strlen(k))) {
            mcg_buf_puts(b, k);
        } else {
            json_t *key = json_string(k);
            emit_quoted(b, key);
            json_decref(key);
        }
        mcg_buf_putc(b, ':');
        if (is_block(e)) {
            emit_value(b, e, json_is_array(e) ? indent : indent + 2, false);
        } else {
            mcg_buf_putc(b, ' ');
            emit_value(b, e, indent + 2, false);
        }
    }
}

static void emit_value(mcg_buf *b, const json_t *v, int indent, bool in_seq)
{
    if (json_is_object(v) && json_object_size(v)) {
        emit_object(b, v, indent, in_seq);
    } else if (json_is_array(v) && json_array_size(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            if (!(in_seq && i == 0))
                mcg_buf_printf(b, "\n%*s", indent, "");
            mcg_buf_puts(b, "- ");
            if (is_block(e))
                emit_value(b, e, indent + 2, true);
            else
                emit_scalar(b, e, indent + 2);
        }
    } else if (json_is_object(v)) {
        mcg_buf_puts(b, "{}");
    } else if (json_is_array(v)) {
        mcg_buf_puts(b, "[]");
    } else {
        emit_scalar(b, v, indent);
    }
}

void mcg_yaml_emit(mcg_buf *out, const json_t *v)
{
    size_t start = out->len;
    emit_value(out, v, 0, true);
    if (out->len > start && out->ptr[start] == '\n') {
        memmove(out->ptr + start, out->ptr + start + 1, out->len - start - 1);
        out->ptr[--out->len] = '\0';
    }
    mcg_buf_putc(out, '\n');
}
