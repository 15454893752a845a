/* table.h - the results table every driver prints: aligned columns, a rule under the
 * header, and one verdict line at the end. Rows are kept until table_print so each
 * column is as wide as its widest cell. */
#ifndef COMMON_TABLE_H
#define COMMON_TABLE_H
#include <stdio.h>

#define TABLE_MAX_COLS 16
#define TABLE_MAX_ROWS 256
#define TABLE_CELL     48

typedef struct {
    int ncols, nrows;
    char head[TABLE_MAX_COLS][TABLE_CELL];
    char cell[TABLE_MAX_ROWS][TABLE_MAX_COLS][TABLE_CELL];
    int  right[TABLE_MAX_COLS];  /* right-align (numbers) */
} table_t;

/* headers: ncols names; a name starting with '>' is right-aligned (the '>' is dropped). */
void table_init(table_t *t, int ncols, const char *const *headers);
/* Add a row: ncols printf-style cells given as one format per cell is awkward, so
 * cells are passed already formatted. */
void table_add(table_t *t, const char *const *cells);
/* Convenience: format one cell. */
const char *fmt_cell(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void table_print(const table_t *t, FILE *f);

/* Human-readable bytes: "512.0 MiB", "2.00 GiB". buf needs 32 chars. */
const char *fmt_bytes(double bytes, char *buf);
#endif
