#include "table.h"
#include <stdarg.h>
#include <string.h>

void table_init(table_t *t, int ncols, const char *const *headers)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols < TABLE_MAX_COLS ? ncols : TABLE_MAX_COLS;
    for (int c = 0; c < t->ncols; c++) {
        const char *h = headers[c];
        t->right[c] = (h[0] == '>');
        snprintf(t->head[c], TABLE_CELL, "%s", h + t->right[c]);
    }
}

void table_add(table_t *t, const char *const *cells)
{
    if (t->nrows >= TABLE_MAX_ROWS) return;
    for (int c = 0; c < t->ncols; c++)
        snprintf(t->cell[t->nrows][c], TABLE_CELL, "%s", cells[c] ? cells[c] : "");
    t->nrows++;
}

const char *fmt_cell(char *buf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, TABLE_CELL, fmt, ap);
    va_end(ap);
    return buf;
}

void table_print(const table_t *t, FILE *f)
{
    int w[TABLE_MAX_COLS];
    for (int c = 0; c < t->ncols; c++) {
        w[c] = (int)strlen(t->head[c]);
        for (int r = 0; r < t->nrows; r++) {
            int l = (int)strlen(t->cell[r][c]);
            if (l > w[c]) w[c] = l;
        }
    }
    int total = 0;
    for (int c = 0; c < t->ncols; c++) {
        fprintf(f, t->right[c] ? "%*s" : "%-*s", w[c], t->head[c]);
        fputs(c + 1 < t->ncols ? "  " : "\n", f);
        total += w[c] + 2;
    }
    for (int i = 0; i < total - 2; i++) fputc('-', f);
    fputc('\n', f);
    for (int r = 0; r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            fprintf(f, t->right[c] ? "%*s" : "%-*s", w[c], t->cell[r][c]);
            fputs(c + 1 < t->ncols ? "  " : "\n", f);
        }
}

const char *fmt_bytes(double b, char *buf)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (b >= 1024.0 && u < 5) { b /= 1024.0; u++; }
    if (u == 0) snprintf(buf, 32, "%.0f B", b);
    else snprintf(buf, 32, b >= 100 ? "%.0f %s" : b >= 10 ? "%.1f %s" : "%.2f %s", b, unit[u]);
    return buf;
}
