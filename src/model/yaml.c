/*
 * yaml.c — libyaml documents to jansson values, with source lines.
 *
 * Scalars follow YAML 1.1 core typing as Kubernetes' YAML reader does for the
 * types mcgit needs: a plain scalar that spells null, a boolean or an integer
 * (decimal, 0o/leading-0 octal, 0x hex) becomes that type; a quoted scalar
 * is always a string. Aliases are refused (they make documents whose size
 * is not bounded by their text), as are duplicate keys and non-scalar keys.
 */
#include "model/model_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* ------------------------------------------------------------ line map */

static size_t ptr_hash(const void *p)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static void linemap_grow(mcg_linemap *lm)
{
    size_t ncap = lm->cap ? lm->cap * 2 : 256;
    const void **keys = mcg_calloc(ncap, sizeof(*keys));
    int *lines = mcg_calloc(ncap, sizeof(*lines));
    for (size_t i = 0; i < lm->cap; i++) {
        if (!lm->keys[i])
            continue;
        size_t j = ptr_hash(lm->keys[i]) & (ncap - 1);
        while (keys[j])
            j = (j + 1) & (ncap - 1);
        keys[j] = lm->keys[i];
        lines[j] = lm->lines[i];
    }
    free(lm->keys);
    free(lm->lines);
    lm->keys = keys;
    lm->lines = lines;
    lm->cap = ncap;
}

void mcg_linemap_put(mcg_linemap *lm, const void *key, int line)
{
    if ((lm->n + 1) * 2 > lm->cap)
        linemap_grow(lm);
    size_t j = ptr_hash(key) & (lm->cap - 1);
    while (lm->keys[j] && lm->keys[j] != key)
        j = (j + 1) & (lm->cap - 1);
    if (!lm->keys[j])
        lm->n++;
    lm->keys[j] = key;
    lm->lines[j] = line;
}

int mcg_linemap_get(const mcg_linemap *lm, const void *key)
{
    if (!lm || !lm->cap || !key)
        return 0;
    size_t j = ptr_hash(key) & (lm->cap - 1);
    while (lm->keys[j]) {
        if (lm->keys[j] == key)
            return lm->lines[j];
        j = (j + 1) & (lm->cap - 1);
    }
    return 0;
}

static void mcg_linemap_free(mcg_linemap *lm)
{
    if (!lm)
        return;
    free(lm->keys);
    free(lm->lines);
    memset(lm, 0, sizeof(*lm));
}

/* ------------------------------------------------------------ scalars */

static bool is_null_word(const char *s)
{
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

static int parse_int_scalar(const char *s, json_int_t *out)
{
    const char *p = s;
    bool neg = false;
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    if (!*p)
        return -1;
    int base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    } else if (p[0] == '0' && p[1] == 'o') {
        base = 8;
        p += 2;
    } else if (p[0] == '0' && p[1]) {
        base = 8; /* YAML 1.1: 0644 is octal, as file modes are written */
        p += 1;
    }
    if (!*p)
        return -1;
    for (const char *q = p; *q; q++) {
        int d = (*q >= '0' && *q <= '9')   ? *q - '0'
                : (*q >= 'a' && *q <= 'f') ? *q - 'a' + 10
                : (*q >= 'A' && *q <= 'F') ? *q - 'A' + 10
                                           : 99;
        if (d >= base)
            return *q == '.' || *q == 'e' || *q == 'E' ? -2 : -1;
    }
    errno = 0;
    char *end;
    long long v = strtoll(p, &end, base);
    if (errno || *end)
        return -3;
    *out = neg ? -v : v;
    return 0;
}

/* ------------------------------------------------------------ documents */

/*
 * Documents are converted straight from libyaml's event stream rather than
 * through its document loader: one pass, no intermediate node tree, and an
 * alias can be reported on its own line (the loader resolves it to the
 * anchored node and forgets where the alias was).
 */
typedef struct conv {
    yaml_parser_t *parser;
    const char *file;
    int line_offset;
    mcg_diags *diags;
    mcg_linemap *lines;
    int errors;
    int depth;
    bool syntax;      /* the parser failed: the stream ends here */
    bool strings;     /* plain scalars stay text, but for null/true/false (kubeconfig) */
    const char *data; /* the input, to name a tab as the cause of an error */
    size_t len;
} conv;

static int mark_line(const conv *cv, const yaml_mark_t *m)
{
    return (int)m->line + 1 + cv->line_offset;
}

static void conv_err(conv *cv, const yaml_mark_t *m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void conv_err(conv *cv, const yaml_mark_t *m, const char *fmt, ...)
{
    mcg_buf b = MCG_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    mcg_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    mcg_diags_add(cv->diags, "%s:%d: %s", cv->file, mark_line(cv, m), b.ptr);
    mcg_buf_free(&b);
    cv->errors++;
}

/*
 * The 1-based line (of the input) of a tab in the indentation that explains
 * a syntax error at m: on m's line or, as libyaml often reports the line
 * after, the one before. 0 when neither starts with blanks holding a tab,
 * and m itself is not at a tab.
 */
static int tab_indent_line(const conv *cv, const yaml_mark_t *m)
{
    if (!cv->data || m->index > cv->len)
        return 0;
    size_t at = m->index;
    if (at < cv->len && cv->data[at] == '\t')
        return (int)m->line + 1;
    size_t start = at;
    while (start > 0 && cv->data[start - 1] != '\n')
        start--;
    for (int back = 0; back < 2; back++) {
        bool tab = false;
        for (size_t i = start; i < cv->len && (cv->data[i] == ' ' || cv->data[i] == '\t'); i++)
            tab |= cv->data[i] == '\t';
        if (tab)
            return (int)m->line + 1 - back;
        if (start == 0 || m->line == 0)
            break;
        start--; /* the previous line */
        while (start > 0 && cv->data[start - 1] != '\n')
            start--;
    }
    return 0;
}

/* Next event; a syntax error is reported once and ends the stream. */
static bool next_event(conv *cv, yaml_event_t *ev)
{
    if (yaml_parser_parse(cv->parser, ev))
        return true;
    yaml_parser_t *p = cv->parser;
    cv->errors++;
    cv->syntax = true;
    int tab_line = tab_indent_line(cv, &p->problem_mark);
    if (tab_line) {
        mcg_diags_add(cv->diags,
                      "%s:%d: tab character used for indentation (YAML indents with "
                      "spaces only)",
                      cv->file, tab_line + cv->line_offset);
        return false;
    }
    mcg_diags_add(cv->diags, "%s:%d: invalid YAML: %s%s%s", cv->file,
                  mark_line(cv, &p->problem_mark), p->problem ? p->problem : "syntax error",
                  p->context ? " " : "", p->context ? p->context : "");
    return false;
}

static json_t *conv_scalar(conv *cv, const yaml_event_t *ev)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return json_stringn(s, len);
    if (strlen(s) != len) {
        conv_err(cv, &ev->start_mark, "NUL byte in value");
        return NULL;
    }
    if (is_null_word(s))
        return json_null();
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
        return json_true();
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
        return json_false();
    if (cv->strings)
        ; /* numbers stay text */
    else if ((s[0] >= '0' && s[0] <= '9') ||
             ((s[0] == '-' || s[0] == '+') && s[1] >= '0' && s[1] <= '9')) {
        json_int_t v;
        int r = parse_int_scalar(s, &v);
        if (r == 0)
            return json_integer(v);
        if (r == -3) {
            conv_err(cv, &ev->start_mark, "integer '%s' is out of range", s);
            return NULL;
        }
        if (r == -2) {
            char *end;
            double d = strtod(s, &end);
            if (!*end)
                return json_real(d);
        }
    }
    json_t *v = json_stringn(s, len);
    if (!v)
        conv_err(cv, &ev->start_mark, "value is not valid UTF-8");
    return v;
}

static json_t *conv_node(conv *cv, yaml_event_t *ev);

/* The rest of a mapping whose start event was read: its pairs through its
 * end, or NULL after reporting a problem. */
static json_t *conv_mapping(conv *cv)
{
    json_t *out = json_object();
    yaml_event_t e;
    for (;;) {
        if (!next_event(cv, &e))
            goto fail;
        if (e.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&e);
            break;
        }
        if (e.type != YAML_SCALAR_EVENT) {
            conv_err(cv, &e.start_mark, "mapping keys must be scalars");
            yaml_event_delete(&e);
            goto fail;
        }
        const char *key = (const char *)e.data.scalar.value;
        if (strlen(key) != e.data.scalar.length) {
            conv_err(cv, &e.start_mark, "NUL byte in key");
            yaml_event_delete(&e);
            goto fail;
        }
        if (json_object_get(out, key)) {
            conv_err(cv, &e.start_mark, "duplicate key '%s'", key);
            yaml_event_delete(&e);
            goto fail;
        }
        yaml_event_t ve;
        if (!next_event(cv, &ve)) {
            yaml_event_delete(&e);
            goto fail;
        }
        json_t *jv = conv_node(cv, &ve);
        if (!jv) {
            yaml_event_delete(&e);
            goto fail;
        }
        /* Keys that are not valid UTF-8 are refused by jansson. */
        if (json_object_set_new(out, key, jv) != 0) {
            conv_err(cv, &e.start_mark, "key is not valid UTF-8");
            yaml_event_delete(&e);
            goto fail;
        }
        /* the key's own line (mcg_pctx_key_line): jansson keeps its copy
         * of the key where it is until the key is deleted */
        mcg_linemap_put(cv->lines, json_object_iter_key(json_object_iter_at(out, key)),
                        mark_line(cv, &e.start_mark));
        yaml_event_delete(&e);
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

/*
 * Convert the node that starts with *ev (which this function deletes),
 * consuming its events through the node's end. Returns NULL after reporting
 * a problem; the caller then gives up on the document.
 */
static json_t *conv_node(conv *cv, yaml_event_t *ev)
{
    json_t *out = NULL;
    int line = mark_line(cv, &ev->start_mark);
    if (ev->type == YAML_ALIAS_EVENT) {
        conv_err(cv, &ev->start_mark, "YAML aliases are not supported");
        yaml_event_delete(ev);
        return NULL;
    }
    if (++cv->depth > MCG_YAML_MAX_DEPTH) {
        /* Stop reading here: skipping the rest of a deep document costs
         * libyaml time quadratic in its depth (its scanner walks the open
         * flow levels on every token), so the file ends at this error. */
        conv_err(cv, &ev->start_mark, "nesting deeper than %d levels", MCG_YAML_MAX_DEPTH);
        cv->syntax = true;
        yaml_event_delete(ev);
        return NULL;
    }
    yaml_event_t e;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        out = conv_scalar(cv, ev);
        yaml_event_delete(ev);
        break;
    case YAML_SEQUENCE_START_EVENT:
        yaml_event_delete(ev);
        out = json_array();
        for (;;) {
            if (!next_event(cv, &e))
                goto fail;
            if (e.type == YAML_SEQUENCE_END_EVENT) {
                yaml_event_delete(&e);
                break;
            }
            json_t *v = conv_node(cv, &e);
            if (!v)
                goto fail;
            json_array_append_new(out, v);
        }
        break;
    case YAML_MAPPING_START_EVENT:
        yaml_event_delete(ev);
        if (!(out = conv_mapping(cv)))
            return NULL;
        break;
    default:
        /* Not a node (the parser only puts nodes here). */
        yaml_event_delete(ev);
        break;
    }
    cv->depth--;
    if (out)
        mcg_linemap_put(cv->lines, out, line);
    return out;
fail:
    json_decref(out);
    return NULL;
}

int mcg_yaml_each_doc(const char *file, const char *data, size_t len, int line_offset,
                      mcg_diags *diags, mcg_yaml_doc_fn fn, void *arg)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        mcg_diags_add(diags, "%s: cannot start the YAML parser", file);
        return 1;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    conv cv = {&parser, file, line_offset, diags, NULL, 0, 0, false, false, data, len};
    yaml_event_t ev;
    while (next_event(&cv, &ev)) {
        yaml_event_type_t t = ev.type;
        yaml_event_delete(&ev);
        if (t == YAML_STREAM_END_EVENT)
            break;
        if (t != YAML_DOCUMENT_START_EVENT)
            continue; /* STREAM_START */
        /* One document: its root node, then DOCUMENT_END. */
        if (!next_event(&cv, &ev))
            break;
        mcg_linemap lines = {0};
        cv.lines = &lines;
        cv.depth = 0;
        json_t *j = conv_node(&cv, &ev);
        if (cv.syntax) {
            json_decref(j);
            mcg_linemap_free(&lines);
            break;
        }
        /* After a problem inside the document, skip to its end. */
        bool ended = false;
        while (!ended && next_event(&cv, &ev)) {
            ended = ev.type == YAML_DOCUMENT_END_EVENT;
            yaml_event_delete(&ev);
        }
        if (ended && j)
            fn(j, &lines, arg);
        json_decref(j);
        mcg_linemap_free(&lines);
        if (!ended)
            break;
    }
    yaml_parser_delete(&parser);
    return cv.errors;
}

/* ------------------------------------------------------------ readers */

int mcg_pctx_line(const mcg_pctx *c, const json_t *v)
{
    int l = mcg_linemap_get(c->lines, v);
    return l ? l : c->base_line;
}

int mcg_pctx_key_line(const mcg_pctx *c, const char *key, const json_t *v)
{
    int l = mcg_linemap_get(c->lines, key);
    return l ? l : mcg_pctx_line(c, v);
}

static void pctx_verr(mcg_pctx *c, int line, const char *fmt, va_list ap)
{
    mcg_buf b = MCG_BUF_INIT;
    mcg_buf_vprintf(&b, fmt, ap);
    if (line > 0)
        mcg_diags_add(c->diags, "%s:%d: %s", c->file, line, b.ptr);
    else
        mcg_diags_add(c->diags, "%s: %s", c->file, b.ptr);
    mcg_buf_free(&b);
    c->errors++;
}

void mcg_pctx_err(mcg_pctx *c, const json_t *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pctx_verr(c, mcg_pctx_line(c, at), fmt, ap);
    va_end(ap);
}

void mcg_pctx_err_line(mcg_pctx *c, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pctx_verr(c, line, fmt, ap);
    va_end(ap);
}

/*
 * The dotted path of field key for messages: name when it already ends in
 * key (callers pass "spec.paused" for "paused"), else name + "." + key
 * (callers pass the path of the object holding the field).
 */
static const char *field_name(char *buf, size_t size, const char *name, const char *key)
{
    size_t n = strlen(name), k = strlen(key);
    if ((n == k && !strcmp(name, key)) ||
        (n > k && name[n - k - 1] == '.' && !strcmp(name + n - k, key)))
        return name;
    snprintf(buf, size, "%s.%s", name, key);
    return buf;
}

/*
 * obj[key] into *v: 1 when it is there, not null, and of one of types (a
 * bit each, 1u << json_type); 0 when absent or null; -1 after the error
 * "field 'NAME' must be WHAT".
 */
static int get_field(mcg_pctx *c, const json_t *obj, const char *key, const char *name,
                     unsigned types, const char *what, json_t **v)
{
    *v = json_object_get(obj, key);
    if (!*v || json_is_null(*v))
        return 0;
    if (!(types & 1u << json_typeof(*v))) {
        char fb[400];
        mcg_pctx_err(c, *v, "field '%s' must be %s", field_name(fb, sizeof(fb), name, key), what);
        return -1;
    }
    return 1;
}

bool mcg_get_str(mcg_pctx *c, const json_t *obj, const char *key, const char *name, char **out)
{
    json_t *v;
    int k = get_field(c, obj, key, name, 1u << JSON_STRING, "a string", &v);
    if (k <= 0)
        return k == 0;
    if (strlen(json_string_value(v)) != json_string_length(v)) {
        char fb[400];
        mcg_pctx_err(c, v, "field '%s' contains a NUL byte", field_name(fb, sizeof(fb), name, key));
        return false;
    }
    free(*out);
    *out = mcg_strdup(json_string_value(v));
    return true;
}

bool mcg_get_bool(mcg_pctx *c, const json_t *obj, const char *key, const char *name, mcg_tri *out)
{
    json_t *v;
    int k = get_field(c, obj, key, name, 1u << JSON_TRUE | 1u << JSON_FALSE, "true or false", &v);
    if (k > 0)
        *out = json_is_true(v) ? MCG_TRUE : MCG_FALSE;
    return k >= 0;
}

bool mcg_get_int(mcg_pctx *c, const json_t *obj, const char *key, const char *name, bool *has,
                 int64_t *out)
{
    json_t *v;
    int k = get_field(c, obj, key, name, 1u << JSON_INTEGER, "an integer", &v);
    if (k > 0) {
        *has = true;
        *out = (int64_t)json_integer_value(v);
    }
    return k >= 0;
}

json_t *mcg_get_obj(mcg_pctx *c, const json_t *obj, const char *key, const char *name)
{
    json_t *v;
    return get_field(c, obj, key, name, 1u << JSON_OBJECT, "a mapping", &v) > 0 ? v : NULL;
}

json_t *mcg_get_arr(mcg_pctx *c, const json_t *obj, const char *key, const char *name)
{
    json_t *v;
    return get_field(c, obj, key, name, 1u << JSON_ARRAY, "a list", &v) > 0 ? v : NULL;
}

void mcg_check_keys(mcg_pctx *c, const json_t *obj, const char *prefix, const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        bool ok = false;
        for (const char *const *a = allowed; *a; a++)
            if (!strcmp(*a, key)) {
                ok = true;
                break;
            }
        const char *near = ok ? NULL : mcg_did_you_mean(key, allowed);
        int line = mcg_pctx_key_line(c, key, v);
        if (near)
            mcg_pctx_err_line(c, line, "unknown field \"%s\" (did you mean \"%s\"?)", key, near);
        else if (!ok)
            mcg_pctx_err_line(c, line, "unknown field '%s%s%s'", prefix, *prefix ? "." : "", key);
    }
}

bool mcg_json_is_empty(const json_t *v)
{
    if (!v || json_is_null(v) || json_is_false(v))
        return true;
    if (json_is_string(v))
        return json_string_length(v) == 0;
    if (json_is_integer(v))
        return json_integer_value(v) == 0;
    if (json_is_array(v))
        return json_array_size(v) == 0;
    if (json_is_object(v))
        return json_object_size(v) == 0;
    return false;
}

typedef struct first_doc {
    json_t *root;
    int docs;
} first_doc;

static void keep_first(json_t *root, mcg_linemap *lines, void *arg)
{
    first_doc *f = arg;
    (void)lines;
    if (!f->docs++)
        f->root = json_incref(root);
}

int mcg_yaml_to_json(json_t **out, const char *file, const char *data, size_t len, unsigned flags,
                     mcg_diags *diags)
{
    yaml_parser_t parser;
    first_doc f = {NULL, 0};
    size_t before = diags->count;
    *out = NULL;
    if (!yaml_parser_initialize(&parser)) {
        mcg_diags_add(diags, "%s: cannot start the YAML parser", file);
        return MCG_ENOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    conv cv = {.parser = &parser,
               .file = file,
               .diags = diags,
               .strings = (flags & MCG_YAML_STRINGS) != 0};
    yaml_event_t ev;
    while (!cv.syntax && next_event(&cv, &ev)) {
        yaml_event_type_t t = ev.type;
        yaml_event_delete(&ev);
        if (t == YAML_STREAM_END_EVENT)
            break;
        if (t != YAML_DOCUMENT_START_EVENT)
            continue;
        if (!next_event(&cv, &ev))
            break;
        mcg_linemap lines = {0};
        cv.lines = &lines;
        cv.depth = 0;
        json_t *j = conv_node(&cv, &ev);
        if (j)
            keep_first(j, &lines, &f);
        json_decref(j);
        mcg_linemap_free(&lines);
        break; /* the first document only */
    }
    yaml_parser_delete(&parser);
    if (diags->count != before || !f.root) {
        if (diags->count == before)
            mcg_diags_add(diags, "%s: empty file", file);
        json_decref(f.root);
        return MCG_EINVAL;
    }
    *out = f.root;
    return 0;
}
