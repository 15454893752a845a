/* path.h - the paths a run writes to: one length limit, mkdir -p that can be undone, and
 * a normalised form to tell whether two outputs overlap.
 *
 * Every buffer that holds an output path is OUT_PATH_MAX bytes, and cli_parse refuses,
 * before anything is created, a --csv or --dump whose longest file would not fit:
 *
 *   the CSV's temporary     <csv>.tmp-XXXXXX       (csv.c writes there, then renames)
 *   a file beside the CSV   <folder of csv>/NAME   (phase 0's roofline_lines.csv ...)
 *   a file of the dump      <dump dir>/NAME        (params.txt, dO.npy ...)
 *
 * with NAME at most OUT_NAME_MAX characters, its own temporary suffix included. So no
 * snprintf of an output path is ever cut short: a path either fits whole or is refused. */
#ifndef COMMON_PATH_H
#define COMMON_PATH_H
#include <stddef.h>

/* Bytes of any path a run writes, its '\0' included. */
#define OUT_PATH_MAX 1024
/* The temporary a CSV is written to (mkstemp fills the X's) before it is renamed. */
#define OUT_TEMP_SUFFIX ".tmp-XXXXXX"
/* The longest file name (temporary suffix included) a run writes into an output folder:
 * beside its CSV, or into its dump folder. */
#define OUT_NAME_MAX 40

/* Is there room for path's own temporary, and for any NAME written beside it? 0, or -1
 * with why ("N characters, at most M fit ..."). */
int path_check_file(const char *path, char *why, size_t len);
/* Is there room for any NAME written into folder dir? 0, or -1 with why. */
int path_check_folder(const char *dir, char *why, size_t len);

/* out = dir "/" name; -1 (out empty) when it would not fit in OUT_PATH_MAX. */
int path_join(char out[OUT_PATH_MAX], const char *dir, const char *name);

/* mkdir -p that remembers the folders it made, so that a probe (or a run that fails
 * before it writes anything) can remove exactly those again, deepest first. */
typedef struct {
    char path[OUT_PATH_MAX];
    size_t made[OUT_PATH_MAX / 2];   /* prefix lengths of the folders made, outermost first */
    int n;
} path_mkdirs_t;
/* 0, or -1 with why (a file on the way, no permission, too long). Folders made before a
 * failure stay recorded: call path_mkdirs_undo. */
int path_mkdirs(path_mkdirs_t *m, const char *dir, char *why, size_t len);
void path_mkdirs_undo(path_mkdirs_t *m);
/* The first folder of dir (its shortest prefix) that does not exist, into out: 0 when
 * every one exists (out empty), 1 when a folder above dir's last one is missing, 2 when
 * only dir's last folder is. */
int path_first_missing(const char *dir, char out[OUT_PATH_MAX]);
/* mkdir -p; 0 on success (keeps what it made). */
int mkdir_p(const char *path);

/* The absolute form of path with the symbolic links of its existing part resolved and
 * ".", ".." and repeated '/' of the rest removed (mkdir -p's reading): two paths name the
 * same file when their normalised forms are equal. malloc'd; NULL when out of memory or
 * the current folder is unreadable. */
char *path_normalise(const char *path);
/* Is path inside folder dir, or dir itself? (both normalised first) */
int path_within(const char *path, const char *dir);
#endif
