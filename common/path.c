/* path.c - output paths (path.h). */
#define _GNU_SOURCE
#include "path.h"
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TEMP_LEN (sizeof OUT_TEMP_SUFFIX - 1)
/* The longest folder that still holds any NAME: folder "/" NAME '\0'. */
#define FOLDER_MAX ((size_t)OUT_PATH_MAX - 2 - OUT_NAME_MAX)

int path_check_file(const char *path, char *why, size_t len)
{
    size_t n = strlen(path);
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) : 0;
    size_t most = OUT_PATH_MAX - 1 - TEMP_LEN;                 /* its own temporary */
    if (FOLDER_MAX + (n - dir) < most) most = FOLDER_MAX + (n - dir);   /* a NAME beside it */
    if (n <= most) return 0;
    snprintf(why, len, "too long: at most %zu characters fit here (with its temporary name and "
             "the files written beside it, an output path must fit in %d bytes)", most, OUT_PATH_MAX);
    return -1;
}

int path_check_folder(const char *dir, char *why, size_t len)
{
    size_t n = strlen(dir);
    if (n <= FOLDER_MAX) return 0;
    snprintf(why, len, "too long: at most %zu characters fit (with the names of the files "
             "written into it, an output path must fit in %d bytes)", FOLDER_MAX, OUT_PATH_MAX);
    return -1;
}

int path_join(char out[OUT_PATH_MAX], const char *dir, const char *name)
{
    int n = snprintf(out, OUT_PATH_MAX, "%s/%s", dir, name);
    if (n >= 0 && n < OUT_PATH_MAX) return 0;
    out[0] = '\0';
    return -1;
}

int path_mkdirs(path_mkdirs_t *m, const char *dir, char *why, size_t len)
{
    char *buf = m->path;
    size_t n = strlen(dir);
    m->n = 0;
    if (n >= OUT_PATH_MAX) { snprintf(why, len, "path too long"); return -1; }
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        if (buf[i - 1] == '/') continue;               /* "a//b", or a trailing "/" */
        char c = buf[i];
        buf[i] = '\0';
        struct stat st;
        if (stat(buf, &st) == 0) {
            if (!S_ISDIR(st.st_mode)) { snprintf(why, len, "%s is not a folder", buf); return -1; }
        } else if (errno != ENOENT) {
            snprintf(why, len, "cannot reach %s: %s", buf, strerror(errno)); return -1;
        } else if (mkdir(buf, 0755) != 0) {
            snprintf(why, len, "cannot create folder %s: %s", buf, strerror(errno)); return -1;
        } else {
            m->made[m->n++] = i;   /* at most one per '/' of a path shorter than OUT_PATH_MAX */
        }
        buf[i] = c;
    }
    return 0;
}

void path_mkdirs_undo(path_mkdirs_t *m)
{
    while (m->n > 0) {
        m->path[m->made[--m->n]] = '\0';
        rmdir(m->path);
    }
}

int path_first_missing(const char *dir, char out[OUT_PATH_MAX])
{
    size_t n = strlen(dir);
    out[0] = '\0';
    if (n >= OUT_PATH_MAX) return 0;
    memcpy(out, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (out[i] != '/' && out[i] != '\0') continue;
        if (out[i - 1] == '/') continue;
        char c = out[i];
        out[i] = '\0';
        struct stat st;
        if (stat(out, &st) != 0 && errno == ENOENT) {
            while (i > 1 && out[i - 1] == '/') out[--i] = '\0';
            return 1 + (dir[i + strspn(dir + i, "/")] == '\0');   /* 2: the last component */
        }
        out[i] = c;
    }
    out[0] = '\0';
    return 0;
}

int mkdir_p(const char *path)
{
    path_mkdirs_t m;
    char why[OUT_PATH_MAX + 64];
    return path_mkdirs(&m, path, why, sizeof why);
}

/* Append the components of rel to abs (malloc'd, grown as needed), mkdir -p's way: "."
 * and empty components vanish, ".." drops the last component. */
static char *append_lexically(char *abs, const char *rel)
{
    size_t n = strlen(abs);
    char *out = realloc(abs, n + strlen(rel) + 2);
    if (!out) { free(abs); return NULL; }
    while (*rel) {
        size_t k = strcspn(rel, "/");
        if (k == 2 && rel[0] == '.' && rel[1] == '.') {
            char *slash = strrchr(out, '/');
            n = slash && slash != out ? (size_t)(slash - out) : 1;   /* "/.." is "/" */
            out[n] = '\0';
        } else if (k > 0 && !(k == 1 && rel[0] == '.')) {
            if (n > 1) out[n++] = '/';
            memcpy(out + n, rel, k);
            n += k;
            out[n] = '\0';
        }
        rel += k;
        while (*rel == '/') rel++;
    }
    return out;
}

char *path_normalise(const char *path)
{
    /* The longest existing prefix, resolved by realpath; the rest appended lexically. */
    char *copy;
    if (path[0] == '/') copy = strdup(path);
    else {
        char *cwd = getcwd(NULL, 0);
        if (!cwd) return NULL;
        copy = malloc(strlen(cwd) + strlen(path) + 2);
        if (copy) sprintf(copy, "%s/%s", cwd, path);
        free(cwd);
    }
    if (!copy) return NULL;
    size_t cut = strlen(copy);
    char *abs = NULL;
    for (;;) {
        char c = copy[cut];
        copy[cut] = '\0';
        abs = realpath(cut ? copy : "/", NULL);
        copy[cut] = c;
        if (abs || cut == 0) break;
        while (cut > 0 && copy[cut - 1] == '/') cut--;   /* back over this component */
        while (cut > 0 && copy[cut - 1] != '/') cut--;
    }
    char *out = abs ? append_lexically(abs, copy + cut) : NULL;
    free(copy);
    return out;
}

int path_within(const char *path, const char *dir)
{
    char *p = path_normalise(path), *d = path_normalise(dir);
    int in = 0;
    if (p && d) {
        size_t n = strlen(d);
        in = strncmp(p, d, n) == 0 && (p[n] == '\0' || p[n] == '/' || (n == 1 && d[0] == '/'));
    }
    free(p); free(d);
    return in;
}
