/* fa2_rows.h - phase 4's rows and sweep, called by main.c (its header lists the rows and
 * their checks): fa2_rows.c runs the rows of one problem, fa2_sweep.c the --sweep. */
#ifndef PHASE4_FA2_ROWS_H
#define PHASE4_FA2_ROWS_H
#include "driver.h"
#include "fa2.h"

#define FA2_PHASE      "phase4"
#define FA2_FA1_M      (128 * 1024)  /* phase 3's default SRAM for its CPU model            */
#define FA2_SWEEP_ROWS 96            /* oracle rows checked per sweep (and ladder) point     */
#define FA2_GPU_ROWS_MAX 16          /* cublas, fa1-simple, fa1-mma, simple, mma, 9 wgmma steps, 2 FP8 rows */
#define FA2_LADDER_STEPS 7           /* fa1-plain ... fa2-mma (fa2_ladder)                   */

/* The CPU tile model on pc: its bytes, non-matmul count and causal range against the
 * formulas; with full_checks also O and L against the oracle and the previous phases
 * (and the --dump). */
drv_row_t fa2_cpu_row(const attn_problem_t *pc, const cli_opts_t *o, const char *sweep, bool full_checks);

#if HAVE_CUDA
/* All selected GPU rows of one problem (at most FA2_GPU_ROWS_MAX), check_rows oracle rows
 * each. simple_ok: time the simple kernels too. */
int fa2_gpu_rows(const attn_inputs_t *in, const cli_opts_t *o, const char *sweep, int check_rows,
                 bool simple_ok, drv_row_t *rows);
/* The ablation ladder at the FA2 paper's N = 4096 point (B = 4, H = 2048 / d), causal:
 * FA2_LADDER_STEPS rows. */
int fa2_ladder(const cli_opts_t *o, int d, drv_row_t *rows);
#endif

/* wgmma-fp8's check (drv_check_fn, fa2_check.c): FP8's own tolerance (fa2.h) against the
 * oracle on check_rows rows. */
void fa2_check_fp8(drv_row_t *r, const attn_inputs_t *in, const float *O, const float *L, int check_rows);

/* --sweep (fa2_sweep.c): the model vs N, then with a GPU the FA2 paper's setting. */
int fa2_sweep(drv_t *D, const cli_opts_t *o);
#endif
