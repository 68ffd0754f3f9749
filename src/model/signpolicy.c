/*
 * signpolicy.c — .mcgit/policy.yaml: who must sign what, and how old the
 * newest signed source may grow.
 *
 *     approvals:
 *     - paths: ["pools/master.yaml", ".mcgit/"]   # git pathspec globs
 *       required: 2                                # distinct trusted signers (keys)
 *     maxSourceAge: 720h
 *
 * The file is trusted the way .mcgit/allowed_signers is: as it stands in a
 * commit's (verified) parents, so a change to it obeys the policy in force
 * before it. This file only parses and matches; gitops/ applies it.
 */
#include "model/model_int.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RULES 64
#define MAX_PATHS 64
#define MAX_REQUIRED 16

void mcg_signpolicy_free(mcg_signpolicy *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nrules; i++)
        mcg_strv_free(&p->rules[i].paths);
    free(p->rules);
    free(p);
}

/*
 * A pattern as git normalises a pathspec before matching (prefix_path,
 * normalize_path_copy): "./x", "a//b", "a/./b" and "a/../b" name x, a/b,
 * a/b and b; "." (or "./") the whole tree, kept as "*". NULL with *why when
 * git would not take it as a plain pattern inside the tree: pathspec magic
 * (a leading ':', as in ":(glob)x" or ":!x"), an absolute path, or one
 * whose ".." leaves the tree.
 */
static char *normalize_pattern(const char *s, const char **why)
{
    if (s[0] == ':') {
        *why = "uses pathspec magic (':'), which mcgit does not read";
        return NULL;
    }
    if (s[0] == '/') {
        *why = "must be a non-empty relative path";
        return NULL;
    }
    size_t n = strlen(s);
    char *out = mcg_calloc(1, n + 2);
    size_t len = 0;
    for (const char *p = s; *p;) {
        const char *e = strchr(p, '/');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == 2 && p[0] == '.' && p[1] == '.') {
            if (!len) {
                *why = "leaves the repository ('..')";
                free(out);
                return NULL;
            }
            while (len && out[len - 1] != '/') /* drop the last component */
                len--;
            if (len)
                len--;
        } else if (k && !(k == 1 && p[0] == '.')) {
            if (len)
                out[len++] = '/';
            memcpy(out + len, p, k);
            len += k;
        }
        p += k;
        if (*p == '/')
            p++;
    }
    out[len] = '\0';
    if (!len) { /* "." : everything */
        free(out);
        return mcg_strdup("*");
    }
    if (n && s[n - 1] == '/') /* a directory pattern keeps its slash */
        out[len++] = '/', out[len] = '\0';
    return out;
}

static void parse_rule(mcg_pctx *c, const json_t *r, size_t i, mcg_signpolicy *p)
{
    static const char *const keys[] = {"paths", "required", NULL};
    char name[64];
    snprintf(name, sizeof(name), "approvals[%zu]", i);
    if (!json_is_object(r)) {
        mcg_pctx_err(c, r, "%s must be a mapping", name);
        return;
    }
    mcg_check_keys(c, r, name, keys);
    mcg_signpolicy_rule rule = {0};
    const json_t *paths = mcg_get_arr(c, r, "paths", name);
    size_t k;
    const json_t *v;
    if (!paths || json_array_size(paths) == 0)
        mcg_pctx_err(c, r, "%s.paths must list at least one path", name);
    else if (json_array_size(paths) > MAX_PATHS)
        mcg_pctx_err(c, paths, "%s.paths: more than %d paths", name, MAX_PATHS);
    else
        json_array_foreach(paths, k, v) {
            const char *s = json_string_value(v), *why = NULL;
            char *norm = NULL;
            if (!s || !*s || strlen(s) > 1024)
                mcg_pctx_err(c, v, "%s.paths[%zu] must be a non-empty relative path", name, k);
            else if (!(norm = normalize_pattern(s, &why)))
                mcg_pctx_err(c, v, "%s.paths[%zu] '%s' %s", name, k, s, why);
            else
                mcg_strv_push(&rule.paths, norm);
            free(norm);
        }
    bool has = false;
    int64_t req = 0;
    mcg_get_int(c, r, "required", "required", &has, &req);
    if (!has)
        mcg_pctx_err(c, r, "%s.required is missing", name);
    else if (req < 1 || req > MAX_REQUIRED)
        mcg_pctx_err(c, json_object_get(r, "required"), "%s.required must be 1 to %d", name,
                     MAX_REQUIRED);
    rule.required = (int)req;
    rule.index = i + 1;
    if (c->errors) {
        mcg_strv_free(&rule.paths);
        return;
    }
    p->rules = mcg_realloc(p->rules, (p->nrules + 1) * sizeof(*p->rules));
    p->rules[p->nrules++] = rule;
}

typedef struct doc_ctx {
    const char *file;
    mcg_diags *diags;
    mcg_signpolicy *p;
    int docs;
} doc_ctx;

static void on_doc(json_t *root, mcg_linemap *lines, void *arg)
{
    doc_ctx *d = arg;
    mcg_pctx c = {.file = d->file, .lines = lines, .base_line = 1, .diags = d->diags};
    static const char *const keys[] = {"approvals", "maxSourceAge", NULL};
    if (d->docs++) {
        mcg_pctx_err(&c, root, "more than one YAML document");
        return;
    }
    if (json_is_null(root))
        return;
    if (!json_is_object(root)) {
        mcg_pctx_err(&c, root, "must be a mapping");
        return;
    }
    mcg_check_keys(&c, root, "", keys);
    const json_t *rules = mcg_get_arr(&c, root, "approvals", "approvals");
    if (rules && json_array_size(rules) > MAX_RULES)
        mcg_pctx_err(&c, rules, "approvals: more than %d rules", MAX_RULES);
    else if (rules) {
        size_t i;
        const json_t *r;
        json_array_foreach(rules, i, r) {
            mcg_pctx rc = {.file = d->file, .lines = lines, .base_line = 1, .diags = d->diags};
            parse_rule(&rc, r, i, d->p);
        }
    }
    char *age = NULL;
    if (mcg_get_str(&c, root, "maxSourceAge", "maxSourceAge", &age) && age) {
        int64_t s = mcg_parse_duration(age);
        if (s <= 0)
            mcg_pctx_err(&c, json_object_get(root, "maxSourceAge"),
                         "maxSourceAge '%s' is not a duration like 720h, 90m or 1h30m", age);
        else
            d->p->max_source_age = s;
    }
    free(age);
}

int mcg_signpolicy_parse(mcg_signpolicy **out, const char *file, const char *data, size_t len,
                         mcg_diags *diags)
{
    mcg_signpolicy *p = mcg_calloc(1, sizeof(*p));
    size_t before = diags->count;
    doc_ctx d = {file, diags, p, 0};
    mcg_yaml_each_doc(file, data, len, 0, diags, on_doc, &d);
    *out = NULL;
    if (diags->count != before) {
        mcg_signpolicy_free(p);
        return MCG_EINVAL;
    }
    *out = p;
    return 0;
}

/* Whether pathspec pattern matches path the way git's default pathspec does. */
static bool pathspec_match(const char *pattern, const char *path)
{
    size_t n = strlen(pattern);
    if (!strcmp(pattern, path))
        return true;
    /* a leading directory: "pools" or "pools/" covers pools/master.yaml */
    if (!strpbrk(pattern, "*?[") && !strncmp(pattern, path, n) &&
        (path[n] == '/' || (n && pattern[n - 1] == '/')))
        return true;
    return fnmatch(pattern, path, 0) == 0;
}

void mcg_signpolicy_unmatched(const mcg_signpolicy *p, const mcg_strv *files, mcg_strv *out)
{
    for (size_t i = 0; p && i < p->nrules; i++)
        for (size_t k = 0; k < p->rules[i].paths.n; k++) {
            const char *pat = p->rules[i].paths.v[k];
            bool hit = false;
            for (size_t f = 0; f < files->n && !hit; f++)
                hit = pathspec_match(pat, files->v[f]);
            if (!hit) {
                char *line = mcg_sprintf("approvals[%zu].paths: '%s' matches no file", i, pat);
                mcg_strv_push(out, line);
                free(line);
            }
        }
}

const mcg_signpolicy_rule *mcg_signpolicy_rule_for(const mcg_signpolicy *p, const char *path)
{
    const mcg_signpolicy_rule *best = NULL;
    for (size_t i = 0; p && i < p->nrules; i++) {
        const mcg_signpolicy_rule *r = &p->rules[i];
        if (best && r->required <= best->required)
            continue;
        for (size_t k = 0; k < r->paths.n; k++)
            if (pathspec_match(r->paths.v[k], path)) {
                best = r;
                break;
            }
    }
    return best;
}
