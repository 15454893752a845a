/* sweep.h - a --sweep: tables of points and one function per point, run by sweep_run.
 *
 * A phase's sweep is a list of parts; a part is a table of points (a problem each, with the
 * part's own parameter) and the function that runs one point into rows. sweep_run runs
 * every point of every part in turn and does what is the same in every phase:
 *
 *   - every row a point returns goes to the CSV (the phase's columns, drv_csv_row), and
 *     each FAIL row counts (sweep_count counts a row that is not written);
 *   - after each point its progress line: the part's own, or drv_sweep_line;
 *   - a GPU part without a GPU is skipped, with one line "<phase>: GPU sweep skipped: why";
 *   - the bound on CPU work: a CPU point runs sweep_cpu_problem(p), p itself when its work
 *     is within the part's bound (SWEEP_CPU_MAX_FLOPS, SWEEP_CPU_MAX_ELEMS), else a smaller problem like
 *     it; the first time in a part one line says which (every CPU sweep then ends in
 *     seconds and a few hundred MB, whatever the options: the tests measure it);
 *   - the peers' points: the problems of the GPU parts marked .peers go to
 *     <csv>.points ("B,H,H_kv,N_q,N_kv,d,causal" a line, deduplicated), the shape list
 *     tools/peers.py, bwd_peers.py and decode_peers.py time PyTorch's SDPA on, so that
 *     the peers' lines of a plot (<phase>_peers.csv) stand on the sweep's own points;
 *   - the closing line "<phase>: sweep PASS|FAIL (k failed points)", the CSV closed, and
 *     the exit code.
 */
#ifndef COMMON_SWEEP_H
#define COMMON_SWEEP_H
#include <stdbool.h>
#include "driver.h"

#define SWEEP_ROWS_MAX 18          /* rows one point may return */

/* The bound on one CPU point: its forward FLOPs (a part may set a smaller bound, e.g. when
 * a point runs its problem several times), and the elements of Q, K, V, O and four score
 * matrices (the standard backward stores S, P, dP, dS). Phase 3's largest counted point
 * (N = 2048, d = 64, one head) is within both. */
#define SWEEP_CPU_MAX_FLOPS 1.1e9
#define SWEEP_CPU_MAX_ELEMS 24e6

typedef struct {
    attn_problem_t p;
    int arg;                       /* the part's own parameter (phase 3: M; phase 6: L), or 0 */
    int group;                     /* sweep_stop_group skips the rest of the point's group   */
} sweep_point_t;

typedef enum {
    SWEEP_CPU,                     /* always runs                                     */
    SWEEP_GPU,                     /* with a GPU only                                 */
    SWEEP_NO_GPU,                  /* without a GPU only (e.g. model columns instead) */
} sweep_where_t;

typedef struct sweep sweep_t;
/* Runs one point: fills rows[0..n) (n <= SWEEP_ROWS_MAX) and returns n. */
typedef int (*sweep_point_fn)(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows);
/* A point's progress line. */
typedef void (*sweep_line_fn)(sweep_t *s, const sweep_point_t *pt, const drv_row_t *rows, int n);

typedef struct {
    const char *name;              /* the rows' sweep column ("vsN", "tokens16k")           */
    sweep_where_t where;
    const sweep_point_t *points;
    int npoints;
    sweep_point_fn run;
    sweep_line_fn line;            /* NULL: drv_sweep_line                                   */
    bool peers;                    /* its problems are the peers' points (GPU parts)         */
    double cpu_flops;              /* the bound on a CPU point's FLOPs; 0: SWEEP_CPU_MAX_FLOPS */
} sweep_part_t;

typedef struct {
    const sweep_part_t *parts;
    int nparts;
    void (*gpu_begin)(sweep_t *s); /* before the first GPU part that runs (buffers), or NULL */
    void (*gpu_end)(sweep_t *s);   /* after the last one, or NULL                            */
    void *ctx;                     /* the phase's own state, as s->ctx                       */
} sweep_def_t;

struct sweep {
    drv_t *D;
    const cli_opts_t *o;
    void *ctx;
    const sweep_part_t *part;      /* the part that runs                                     */
    int fails;
    int stop_group;                /* the group sweep_stop_group skips, or -1                */
    bool shrunk_said;              /* the part's smaller-problem line is printed             */
};

/* Run the parts in turn; returns the exit code (drv_sweep_end's). A part whose run is NULL
 * (a GPU part in a build without CUDA, where there is never a GPU) only says it is skipped. */
int sweep_run(drv_t *D, const cli_opts_t *o, const sweep_def_t *def);
/* sweep_run of parts[0..n) alone (no GPU hooks, no context). */
int sweep_run_parts(drv_t *D, const cli_opts_t *o, const sweep_part_t *parts, int n);
/* The GPU part of the FA2 paper's setting: "tokens16k", pts[0..n) (sweep_tokens16k), run
 * (NULL without CUDA), the progress line drv_sweep_line, the peers' points. */
sweep_part_t sweep_tokens16k_part(const sweep_point_t *pts, int n, sweep_point_fn run);
/* The problem a CPU point runs: p, or a smaller one like it within the bound (batch 1,
 * then at most 2 KV heads of at most 2 query heads, then fewer query rows, then fewer
 * keys), said once per part. */
attn_problem_t sweep_cpu_problem(sweep_t *s, const attn_problem_t *p);
/* The same bound on p before a sweep builds its table (a CPU sweep of problems taken from
 * the options): p or a smaller problem like it, said in one line "<phase>: <what>: ...". */
attn_problem_t sweep_bound(const char *phase, const char *what, const attn_problem_t *p, double max_flops);
/* Skip the remaining points of the running point's group (e.g. past the memory wall). */
void sweep_stop_group(sweep_t *s, const sweep_point_t *pt);
/* Count r's FAIL when r is not one of the rows returned (not a CSV row). */
void sweep_count(sweep_t *s, const drv_row_t *r);
/* The kernels of a GPU point on its inputs in (the phase's rows function). */
typedef int (*sweep_rows_fn)(sweep_t *s, const sweep_point_t *pt, const attn_inputs_t *in, drv_row_t *rows);
/* A point's inputs from the seed (and dO when with_grad), rows_fn on them; then, unless
 * base is NULL, the speedup of the row named faster against the row named base. */
int sweep_inputs_point(sweep_t *s, const sweep_point_t *pt, bool with_grad, sweep_rows_fn rows_fn,
                       const char *base, const char *faster, drv_row_t *rows);
/* A point of problem p (arg, group: 0). */
sweep_point_t sweep_point(attn_problem_t p);
/* Appends a point of problem p in group to pts[*n], which holds cap points: a table too
 * small for its loops is a bug in the phase, so it stops the run (one line, abort) rather
 * than write past the array. SWEEP_ADD(table, n, p, group) passes the table's size. */
void sweep_add(sweep_point_t *pts, int *n, int cap, attn_problem_t p, int group);
#define SWEEP_ADD(table, n, p, group) sweep_add((table), &(n), (int)(sizeof(table) / sizeof((table)[0])), (p), (group))
/* The FA2 paper's setting (drv_tokens16k): for causal c in [c0, c1], d in [d0, d1]
 * (doubling), N = 512..16384 (doubling), in that nesting; returns the number of points
 * (group: the index of (c, d)). pts holds at most max points. */
int sweep_tokens16k(sweep_point_t *pts, int max, int c0, int c1, int d0, int d1);

#endif
