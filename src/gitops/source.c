/*
 * source.c — config directories: loading a working tree into the model and
 * creating a new config repo from the compiled-in template.
 */
#include "fsio/fsio.h"
#include "osenv/osenv.h"
#include "gitops/gitops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int read_at(int dirfd, const char *name, const char *rel, char **data, size_t *len,
                   mcg_diags *diags)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        mcg_diags_add(diags, "%s: %s", rel,
                      errno == ELOOP ? "symbolic links are not allowed in a config repo"
                                     : strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        mcg_diags_add(diags, "%s: not a regular file", rel);
        close(fd);
        return -1;
    }
    if ((size_t)st.st_size > MCG_MAX_SOURCE_FILE) {
        mcg_diags_add(diags, "%s: larger than %u bytes", rel, MCG_MAX_SOURCE_FILE);
        close(fd);
        return -1;
    }
    mcg_buf b = MCG_BUF_INIT;
    char chunk[65536];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof(chunk))) > 0 && b.len + (size_t)n <= MCG_MAX_SOURCE_FILE)
        mcg_buf_put(&b, chunk, (size_t)n);
    close(fd);
    if (n != 0) {
        mcg_diags_add(diags, "%s: %s", rel, n < 0 ? strerror(errno) : "file grew while reading");
        mcg_buf_free(&b);
        return -1;
    }
    *data = mcg_buf_detach(&b, len);
    return 0;
}

static void load_subdir(mcg_model *m, int rootfd, const char *sub, mcg_diags *diags)
{
    int fd = openat(rootfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT)
            mcg_diags_add(diags, "%s/: %s", sub,
                          errno == ELOOP || errno == ENOTDIR ? "not a directory" : strerror(errno));
        return;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    mcg_strv names = {0};
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.')
            mcg_strv_push(&names, de->d_name);
    mcg_strv_sort(&names);
    for (size_t i = 0; i < names.n; i++) {
        char *rel = mcg_sprintf("%s/%s", sub, names.v[i]);
        if (mcg_model_wants_file(rel)) {
            char *data = NULL;
            size_t len = 0;
            if (read_at(dirfd(d), names.v[i], rel, &data, &len, diags) == 0)
                mcg_model_add_file(m, rel, data, len, diags);
            free(data);
        }
        free(rel);
    }
    mcg_strv_free(&names);
    closedir(d);
}

int mcg_source_load_dir(mcg_model **out, const char *dir, mcg_diags *diags, mcg_err *err)
{
    *out = mcg_model_new();
    int rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return mcg_err_set_os(err, MCG_EIO, errno, "%s", dir);
    size_t before = diags->count;
    char *data = NULL;
    size_t len = 0;
    if (faccessat(rootfd, "mcgit.yaml", F_OK, AT_SYMLINK_NOFOLLOW) == 0 &&
        read_at(rootfd, "mcgit.yaml", "mcgit.yaml", &data, &len, diags) == 0)
        mcg_model_add_file(*out, "mcgit.yaml", data, len, diags);
    free(data);
    load_subdir(*out, rootfd, "pools", diags);
    load_subdir(*out, rootfd, "machineconfigs", diags);
    load_subdir(*out, rootfd, "sites", diags);
    close(rootfd);
    if ((*out)->npools == 0 && diags->count == before)
        mcg_diags_add(diags, "%s: no pools found (expected pools/*.yaml)", dir);
    mcg_model_finish(*out, diags);
    mcg_model_check_zones(*out, mcg_tz_known, diags);
    if (diags->count != before)
        return mcg_err_set(err, MCG_EINVAL, "%zu problem%s in %s", diags->count - before,
                           diags->count - before == 1 ? "" : "s", dir);
    return 0;
}

/* mkdir -p of the parents of rel under root. */
static int make_parents(const char *root, const char *rel, mcg_err *err)
{
    char *p = mcg_sprintf("%s/%s", root, rel);
    int rc = 0;
    for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", p);
        *s = '/';
        if (rc)
            break;
    }
    free(p);
    return rc;
}

/* Remove what init wrote below dir (and dir itself when init made it). */
static void init_undo(const char *dir, bool made)
{
    (void)mcg_remove_tree(dir);
    if (!made)
        mkdir(dir, 0755);
}

int mcg_gitops_init(const char *dir, mcg_err *err)
{
    bool made = false;
    struct stat st;
    if (lstat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return mcg_err_set(err, MCG_EINVAL, "%s exists and is not a directory", dir);
        DIR *d = opendir(dir);
        struct dirent *de;
        bool empty = true;
        while (d && (de = readdir(d)))
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                empty = false;
        if (d)
            closedir(d);
        if (!empty)
            return mcg_err_set(err, MCG_EINVAL, "%s exists and is not empty", dir);
    } else if (mkdir(dir, 0755) != 0) {
        return mcg_err_set_os(err, MCG_EIO, errno, "%s", dir);
    } else {
        made = true;
    }
    for (const mcg_template_file *f = mcg_template_files; f->path; f++) {
        if (make_parents(dir, f->path, err)) {
            init_undo(dir, made);
            return err->code;
        }
        char *path = mcg_sprintf("%s/%s", dir, f->path);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        int rc = 0;
        if (fd < 0 || write(fd, f->data, f->len) != (ssize_t)f->len || fsync(fd) != 0)
            rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", path);
        if (fd >= 0)
            close(fd);
        free(path);
        if (rc) {
            init_undo(dir, made);
            return rc;
        }
    }
    mcg_gitops_lib_init();
    git_repository *repo = NULL;
    git_repository_init_options opts;
    git_repository_init_options_init(&opts, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
    opts.flags = GIT_REPOSITORY_INIT_MKPATH;
    opts.initial_head = "main";
    int rc = 0;
    if (git_repository_init_ext(&repo, dir, &opts) != 0) {
        const git_error *e = git_error_last();
        rc = mcg_err_set(err, MCG_EIO, "git init %s: %s", dir, e ? e->message : "failed");
    }
    git_repository_free(repo);
    git_libgit2_shutdown();
    if (rc)
        init_undo(dir, made);
    return rc;
}

/* Every regular file below dirfd (prefix: its path), .git skipped, pushed to out. */
static void list_files(int fd, const char *prefix, int depth, mcg_strv *out)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
            (!*prefix && !strcmp(de->d_name, ".git")))
            continue;
        char *rel = *prefix ? mcg_sprintf("%s/%s", prefix, de->d_name) : mcg_strdup(de->d_name);
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            if (S_ISDIR(st.st_mode) && depth < 32) {
                int sub =
                    openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub >= 0)
                    list_files(sub, rel, depth + 1, out);
            } else if (!S_ISDIR(st.st_mode)) {
                mcg_strv_push(out, rel);
            }
        }
        free(rel);
    }
    closedir(d);
}

int mcg_source_check_policy_dir(const char *dir, mcg_diags *diags, mcg_strv *warnings)
{
    int rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return 0; /* mcg_source_load_dir reports it */
    char *data = NULL;
    size_t len = 0;
    int rc = 0;
    if (faccessat(rootfd, ".mcgit/policy.yaml", F_OK, AT_SYMLINK_NOFOLLOW) != 0 ||
        read_at(rootfd, ".mcgit/policy.yaml", ".mcgit/policy.yaml", &data, &len, diags) != 0) {
        close(rootfd);
        return 0;
    }
    mcg_signpolicy *p = NULL;
    if (mcg_signpolicy_parse(&p, ".mcgit/policy.yaml", data, len, diags) != 0) {
        rc = MCG_EINVAL;
    } else {
        mcg_strv files = {0}, lines = {0};
        int fd = dup(rootfd);
        if (fd >= 0)
            list_files(fd, "", 0, &files);
        mcg_signpolicy_unmatched(p, &files, &lines);
        for (size_t i = 0; i < lines.n; i++) {
            char *w = mcg_sprintf(".mcgit/policy.yaml: %s", lines.v[i]);
            mcg_strv_push(warnings, w);
            free(w);
        }
        mcg_strv_free(&lines);
        mcg_strv_free(&files);
    }
    mcg_signpolicy_free(p);
    free(data);
    close(rootfd);
    return rc;
}
