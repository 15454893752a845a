/* naive.h - phase 1: standard attention, S and P materialised in HBM.
 *
 *   1. S = scale * Q K^T  -> HBM (fp16)
 *   2. P = softmax(S)     -> HBM (fp16)   (3-pass safe softmax: max, sum, normalise)
 *   3. O = P V            -> HBM (fp16)
 *
 * Its fp16 pipeline is also the yardstick of the 2x rule (docs/design.md, "Checks and
 * tolerances"): every later kernel's max abs error must stay within 2x the error this
 * pipeline makes (+1e-4).
 */
#ifndef PHASE1_NAIVE_H
#define PHASE1_NAIVE_H
#include "check.h"
#include "driver.h"
#include "hbm.h"
#include "problem.h"
#include "ref.h"

/* CPU model of the pipeline, with S, P and O stored as fp16 in "HBM" through the meter:
 * counted bytes equal std_attn_traffic(p, 2).total (phase0_model/cost.h). O is returned
 * as float holding fp16 values; L (may be NULL) is the log-sum-exp of each row. */
REF_PROTO(void, naive_cpu, (const attn_inputs_t *in, float *O, float *L, hbm_meter_t *meter));

/* One row of that pipeline (the same roundings), for sampled checks of big problems. */
REF_PROTO(void, naive_cpu_row, (const attn_problem_t *p, const float *Q, const float *K, const float *V,
                   int b, int h, int i, float *o_row));

/* The result of checking a kernel's output against the oracle with the 2x rule. */
typedef struct {
    err_stats_t O;               /* O vs the fp64 oracle on the checked rows           */
    err_stats_t L;               /* L vs the oracle's L (n = 0 when L was not given)   */
    double pipeline_max_abs;     /* the fp16 pipeline's max abs error on the same rows */
    tol_t tol;                   /* tol_fp16(pipeline_max_abs)                          */
    int rows_checked;
    bool pass;                   /* O passes tol, and L within 1e-3 abs when given     */
    double rmse;                 /* O's root mean square error on the checked rows     */
    double rmse_max;             /* attn_validate_rmse's bound on it (0 from _fp16)     */
} attn_verdict_t;

/* Check O (float holding the kernel's output values) and L (may be NULL) of a
 * fp16-in / fp32-accumulate kernel against the oracle on the rows attn_check_rows(max_rows)
 * picks; the tolerance is the 2x rule (docs/design.md, "Checks and tolerances") against
 * this phase's fp16 pipeline. */
attn_verdict_t attn_validate_fp16(const attn_inputs_t *in, const float *O, const float *L,
                                  int max_rows);

/* The check of a kernel with its own accuracy (FP8, phase 4's wgmma-fp8): O passes when its
 * RMSE against the oracle on the same rows is at most rmse_max (v.rmse_max) and nothing is
 * NaN or a wrong infinity; L (may be NULL) when |L - L_oracle| <= L_rel (1 + |L_oracle|) on
 * every row (+inf where the oracle's is). The tolerances are the caller's, stated where it
 * derives them. */
attn_verdict_t attn_validate_rmse(const attn_inputs_t *in, const float *O, const float *L, int max_rows,
                                  double rmse_max, double L_rel);

/* mean_r sum_j p_rj^2 over the same checked rows, p the oracle's P: 1 when every row sees
 * one key, about 1 / n when a row's weight spreads over n. An error each key brings on its
 * own (its input rounded to a few bits, e_j) reaches O_r = sum_j p_rj v_j as sum_j p_rj
 * e_j, whose RMS is rms(e) sqrt(sum_j p_rj^2): averaged away over many keys, whole over one. */
double attn_mean_sum_p2(const attn_inputs_t *in, int max_rows);

/* The same check as a driver row (drv_check_fn): fills max_abs, rel_l2, pipe, L_abs and
 * rows_checked, and FAILs the row with the first bad element (check_fp16.c). */
void attn_check_fp16(drv_row_t *r, const attn_inputs_t *in, const float *O, const float *L, int check_rows);

/* Test support (fault_tests.c): inject each fault at infinity (O = +inf, O = NaN, a fully
 * masked row's L = -inf, 0 or finite, L = +inf where a finite L is due) into a correct
 * O, L of `in` (a problem with fully masked rows) and report(ok, name, why) that both the
 * CPU-model check and attn_validate_fp16 FAIL each one and PASS the unfaulted output. */
void attn_fault_tests(const char *tag, const attn_inputs_t *in, const float *O0, const float *L0,
                      void (*report)(int ok, const char *name, const char *why));

/* Just the yardstick: the fp16 pipeline's max abs error vs the oracle on those rows. */
double naive_fp16_pipeline_max_abs(const attn_inputs_t *in, int max_rows);

/* ---- the GPU pipeline (naive.cu; built only when nvcc exists: guard with HAVE_CUDA) ---- */

/* The two variants behind --kernel (naive.cu's head comment says what each one is). */
typedef enum { NAIVE_SIMPLE = 0, NAIVE_CUBLAS = 1 } naive_kernel_t;

/* Device buffers of one run; fp16 bits in the layout of common/problem.h, and
 * S, P: [B][H][N_q][N_kv]. */
typedef struct {
    attn_problem_t p;
    naive_kernel_t kernel;
    const void *Q, *K, *V;
    void *S, *P, *O;
} naive_gpu_t;

/* Bytes of S plus P in fp16 (what the memory wall is about), and every device buffer
 * of a run (S, P, Q, K, V, O). */
double naive_sp_bytes(const attn_problem_t *p);
double naive_device_bytes(const attn_problem_t *p);

#if HAVE_CUDA
/* The three steps, asynchronous on the default stream: S = scale Q K^T, P = softmax(S)
 * (causal mask applied here), O = P V. */
REF_PROTO(void, naive_gpu_forward, (const naive_gpu_t *g));   /* REF_GPU in phases 3 and 4 */
/* naive_gpu_forward with the gpu_timed_fn signature (ctx is a naive_gpu_t *). */
void naive_gpu_forward_fn(void *ctx);
/* Release the cuBLAS handle; registered with atexit() when the handle is made, so the
 * drivers need not call it and sanitizers see no leak. */
void naive_gpu_teardown(void);
#endif
#endif
