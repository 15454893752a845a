/* driver.h - the calls every phase's main() is made of.
 *
 * A library, not a framework: main() keeps the fixed order and calls these in turn,
 *
 *   cli_parse          parse (one stderr line and exit 2 on anything wrong)
 *   drv_start          is there a GPU, and if not why; the machine facts for the CSV
 *   drv_csv_open       the CSV with its metadata header
 *   ... the phase's own work, row by row:
 *   drv_row            a row with every "not measured" field NaN and verdict PASS
 *   drv_fail           FAIL, keeping the first reason (and the exercises behind it)
 *   drv_compare        a CPU row's output against the fp64 oracle
 *   drv_compare_prev   any output against a previous phase's output
 *   drv_gpu_*          GPU buffers of one problem; one checked-then-timed kernel run
 *   drv_table_*, drv_csv_row   the table and the CSV, both by named columns
 *   drv_finish         the FAIL/skip lines, the verdict line, the exit code
 *
 * A row's verdict is PASS, FAIL, or a reason it was not run: "n/a" (the kernel is not
 * built for this shape), "skipped" (this device cannot run it, e.g. too little shared
 * memory), "OOM" (its buffers do not fit). Only FAIL makes the run exit non-zero.
 */
#ifndef COMMON_DRIVER_H
#define COMMON_DRIVER_H
#include <stdbool.h>
#include <stdio.h>
#include "check.h"
#include "cli.h"
#include "csv.h"
#include "gpu.h"
#include "problem.h"
#include "table.h"

/* ---- one row of results ------------------------------------------------------------ */
typedef struct {
    const char *kernel, *device, *sweep;   /* --kernel name, "cpu"/"gpu", sweep or "-" */
    const char *what;                      /* a ladder step's change ("" otherwise)    */
    attn_problem_t p;
    attn_blocks_t blocks;                  /* 0 x 0: not a tiled kernel                */
    double sram;                           /* bytes of SRAM it works in (M)            */
    double time_ms;                        /* median (GPU) or one run (CPU)            */
    double flops;                          /* of one run; NaN: the forward's            */
    double hbm_model, hbm_formula;         /* counted by the model; the closed form    */
    double hbm_std;                        /* standard attention's bytes, to compare   */
    double nonmatmul;                      /* non-matmul FLOPs                          */
    double max_abs, rel_l2, L_abs;         /* vs the fp64 oracle                       */
    double rel_prev;                       /* rel L2 vs the nearest previous phase     */
    double pipe;                           /* phase 1's fp16 pipeline max abs error    */
    double sp_bytes, free_bytes;           /* phase 1: S + P bytes; free device memory */
    double speedup;
    int rows_checked;
    const char *verdict;                   /* PASS FAIL n/a skipped OOM                */
    const char *exercises;                 /* the exercises behind a FAIL, or NULL     */
    char why[240];                         /* the first failure, or why not run        */
} drv_row_t;

/* Every double NaN ("not measured"), verdict PASS, what "". */
drv_row_t drv_row(const char *kernel, const char *device, const char *sweep, const attn_problem_t *p);
/* FAIL with the reason (printf-style); a row that failed already keeps its first reason. */
void drv_fail(drv_row_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* After a check: if r has FAILed and names no exercise yet, the exercises whose code the
 * failing check ran (a student's FAIL line then says where to look). */
void drv_blame(drv_row_t *r, const char *exercises);
/* Not run: verdict ("n/a", "skipped", "OOM") and the reason. */
void drv_not_run(drv_row_t *r, const char *verdict, const char *why);
bool drv_passed(const drv_row_t *r);
bool drv_failed(const drv_row_t *r);
/* TFLOP/s of a timed row (NaN when not timed): r->flops, or the forward's when NaN (a
 * backward row sets r->flops = attn_flops_bwd). */
double drv_tflops(const drv_row_t *r);

/* ---- checks -------------------------------------------------------------------------- */
/* out (float) against ref (double) under tol; records max_abs and rel_l2 into r when
 * record is true; on failure r fails with "<vs>: <first bad element>", and in an
 * exercise build the exercises behind the check are named. Returns whether it passed. */
bool drv_compare(drv_row_t *r, const char *vs, const char *tensor, const float *out,
                 const double *ref, size_t n, int row_len, tol_t tol, bool record,
                 const char *exercises);
/* rel L2 of out against a previous phase's output prev (both float, n elements); fails
 * r with "differs from <name> (rel L2 ...)" unless below tol. Records it as rel_prev when
 * rel_prev is still NaN (so the first previous phase checked is the one the table shows). */
bool drv_compare_prev(drv_row_t *r, const char *name, const float *out, const float *prev,
                      size_t n, double tol);

/* ---- the start and the end of a run ------------------------------------------------- */
typedef struct {
    const char *phase;
    int gpu;                 /* a usable CUDA device, and --cpu not given */
    char why[256];           /* why not                                   */
    machine_info_t mi;
    FILE *csv;
    const char *csv_path;
    const char *const *csv_columns;
} drv_t;

/* Probe the GPU (unless o->cpu_only) and fill the machine facts. */
void drv_start(drv_t *D, const char *phase, const cli_opts_t *o);
/* Open o->csv_path (cli_parse has resolved and probed it) with the metadata header and the
 * named columns (NULL-terminated, every name one of drv_csv_row's). Exits 2 with one line
 * if it cannot be written after all. The rows go to a temporary that drv_csv_close renames
 * over the path (csv_open): a run that does not get there leaves a previous CSV intact. */
void drv_csv_open(drv_t *D, const cli_opts_t *o, int argc, char **argv, const char *const *columns);
/* One CSV row of r under the columns given to drv_csv_open. */
void drv_csv_row(const drv_t *D, const drv_row_t *r);
/* Unless o->quiet, the run's first line: "<phase>: <what> (<the problem>)". */
void drv_banner(const drv_t *D, const cli_opts_t *o, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The end of a --sweep: "<phase>: sweep PASS|FAIL (k failed points)", the CSV closed;
 * returns the exit code. */
int drv_sweep_end(drv_t *D, int fails);
/* Close the CSV: "csv: PATH" unless quiet; 0, or -1 (and one stderr line) when it could not
 * be written. drv_finish calls it; a sweep that prints no table calls it alone. */
int drv_csv_close(drv_t *D, bool quiet);
/* The closing lines: one per FAIL (in an exercise build with the exercises behind it) and
 * one per row not run (with its reason), then
 * "<phase>: PASS|FAIL (n rows, k failed)"; closes the CSV ("csv: PATH" unless quiet).
 * Returns the exit code: 1 on any FAIL, a dump or a CSV that could not be written, else 0. */
int drv_finish(drv_t *D, const drv_row_t *rows, int n, bool quiet);

/* ---- the table ------------------------------------------------------------------------
 * Columns by name: kernel device problem blocks sram time tflops gbps hbm_model
 * hbm_meas max_abs rel_l2 L_abs vs_prev verdict (and the ladder's what speedup
 * vs_first), extra (sp_bytes: the memory a backward needs beyond its inputs and outputs). */
void drv_table_init(table_t *t, const char *const *columns);
void drv_table_add(table_t *t, const char *const *columns, const drv_row_t *r, const drv_row_t *first);
/* The whole table of rows[0..n) under the columns, on stdout ("vs_first" compares with
 * rows[0]); each row also goes to the CSV. */
void drv_print_rows(const drv_t *D, const char *const *columns, const drv_row_t *rows, int n);

/* ---- the FlashAttention-2 paper's benchmark setting ---------------------------------
 * fp16, hidden size 2048 (H = 2048 / d), B x N = 16k tokens, N = 512 .. 16384. */
#define DRV_T16K_NMIN 512
#define DRV_T16K_NMAX 16384
attn_problem_t drv_tokens16k(int N, int d, bool causal);
/* The progress line of one sweep point: "  sweep tokens16k d= 64 full   N= 512 B=32 H=32:"
 * then each row's TFLOP/s (or its verdict and reason). */
void drv_sweep_line(const drv_row_t *rows, int n);

/* --dump DIR: the inputs and O, L as .npy for tools/check_numpy.py (a failure is said on
 * stderr, and drv_finish then FAILs the run). Nothing when o->dump_dir is NULL. */
void drv_dump(const cli_opts_t *o, const attn_inputs_t *in, const float *O, const float *L, const char *phase);

/* A sweep's row beyond what the CPU runs: the closed forms alone (NaN: not given). */
drv_row_t drv_formula_row(const char *kernel, const char *sweep, const attn_problem_t *p, attn_blocks_t blocks,
                          double hbm_formula, double nonmatmul, double hbm_std);

/* Host inputs of p from the seed, or exit 1 ("<phase>: out of host memory"). */
void drv_inputs(attn_inputs_t *in, const attn_problem_t *p, uint64_t seed, bool with_grad, const char *phase);

/* ---- visit counters: what a kernel's counters must read (common/gpu.h, gpu_visits) ----
 * want[k]: the blocks tile k may visit, summed over batch and heads, from the reference
 * model (REF(...) in an exercise build, common/ref.h, so a mismatch blames the kernel's
 * exercise alone) or a closed form. The phase's library fills it (fa2_visits_want(), ...).
 * One launch of two kernels (phase 5's two-pass) lists the first kernel's tiles, then the
 * second's: tiles [split, ntiles) are part[1]'s, numbered from 0. */
typedef struct drv_visits {
    int ntiles;                     /* 0: nothing to compare                               */
    unsigned long long *want;       /* [ntiles]                                            */
    int split;                      /* tiles [0, split) are part[0]'s                      */
    struct {
        const char *tile, *unit;    /* e.g. "Q block", "K/V blocks"                        */
        const char *exercise;       /* the exercise a mismatch blames, or NULL             */
    } part[2];
    const char *range;              /* what allows them: "the causal range"                */
} drv_visits_t;
/* ntiles zeroed counts of one part (exit 1 out of host memory). */
void drv_visits_init(drv_visits_t *v, int ntiles, const char *tile, const char *unit, const char *range,
                     const char *exercise);
void drv_visits_free(drv_visits_t *v);
/* After a run that started from zeroed counters (gpu_visits_zero): the device's counts
 * against v. The first tile that differs FAILs r ("visited 64 K/V blocks of Q block 3 (over
 * batch and heads), the causal range allows 32; 5 tiles differ") and blames its part's
 * exercise. Nothing when v is NULL or empty, or when the kernels do not count
 * (gpu_visits_on). Returns whether it passed. */
bool drv_check_visits(drv_row_t *r, const drv_visits_t *v);

/* ---- GPU: the buffers of one problem and one checked-then-timed run ----------------- */
typedef struct {
    void *Q, *K, *V;          /* fp16 inputs                                       */
    float *O, *L, *l, *m;     /* fp32 outputs (O~ / L, or FA1's O, l, m)            */
    void *S, *P, *Oh;         /* phase 1's fp16 S, P and O; NULL when not asked or too big */
} drv_gpu_bufs_t;

/* Upload Q, K, V and allocate the outputs. Phase 1's S, P and fp16 O: */
typedef enum {
    DRV_SP_NONE,        /* not wanted                                                 */
    DRV_SP_IF_ROOM,     /* when they fit in free memory with 1 GiB to spare, else NULL */
    DRV_SP_ALWAYS,      /* phase 1, which has checked its memory wall before          */
} drv_sp_t;
drv_gpu_bufs_t drv_gpu_alloc(const attn_inputs_t *in, drv_sp_t sp);
void drv_gpu_free(drv_gpu_bufs_t *b);

/* Where a kernel leaves its output: */
typedef enum {
    DRV_OUT_F16_O,      /* O in fp16 (Oh): phase 1's pipeline                   */
    DRV_OUT_O_L,        /* O and L in fp32: FA2                                  */
    DRV_OUT_O_LM,       /* O, l, m in fp32 (L = m + log l): FA1                  */
} drv_out_t;

/* The phase's check of one kernel output (phases 1-4: attn_check_fp16 of phase 1). */
typedef void (*drv_check_fn)(drv_row_t *r, const attn_inputs_t *in, const float *O,
                             const float *L, int check_rows);

/* Previous phases' outputs on the same inputs, nearest first. */
typedef struct { const float *O; const char *name; } drv_prev_t;

typedef struct {
    gpu_timed_fn launch; void *ctx;    /* runs the kernel once, asynchronously      */
    drv_out_t out;
    void (*lse)(const float *l, const float *m, float *L, size_t n);  /* DRV_OUT_O_LM */
    drv_check_fn check;
    int check_rows;                    /* oracle rows checked (all when fewer)      */
    const drv_prev_t *prev; int nprev; /* checked on every element, rel L2 < 3e-3   */
    int warmup, iters;                 /* timing: median of iters after warmup      */
    bool profile;                      /* bracket the checked run for ncu           */
    float **keep;                      /* receives O (host) when it passed, or NULL */
    const drv_visits_t *visits;        /* the counts the checked run must leave, or NULL */
} drv_gpu_run_t;

/* Poison every output, zero the visit counters, run once (bracketed for the profiler when
 * asked), compare the counters (how->visits: a kernel that visits blocks outside its range
 * may still be right, so first), fetch O (and L), check it (the phase's check, then the
 * previous phases), and time it only if it passed. Fills r. */
void drv_gpu_run(drv_row_t *r, const attn_inputs_t *in, const drv_gpu_bufs_t *b, const drv_gpu_run_t *how);

#endif
