/* check.h - error metrics against a reference, and the PASS/FAIL verdict.
 *
 * Tolerances (docs/design.md, "Checks and tolerances"):
 *   fp32 CPU model vs the fp64 oracle ............ rel L2 < 1e-5
 *   fp16-in / fp32-accumulate GPU kernel ......... rel L2 < 3e-3, no NaN, and
 *       max abs <= 2 x (max abs error of phase 1's fp16 pipeline on the same inputs) + 1e-4
 *   gradients .................................... rel L2 < 1e-2, same 2x rule
 * Values where both output and reference are the same infinity count as equal (a fully
 * masked row's L = +inf); a NaN anywhere is a failure.
 */
#ifndef COMMON_CHECK_H
#define COMMON_CHECK_H
#include <stdbool.h>
#include <stddef.h>

#define TOL_CPU_REL_L2   1e-5
#define TOL_FP16_REL_L2  3e-3
#define TOL_GRAD_REL_L2  1e-2
#define TOL_ABS_SLACK    1e-4

typedef struct {
    size_t n;          /* elements compared                               */
    double max_abs;    /* max |out - ref|                                 */
    double rel_l2;     /* ||out - ref||_2 / ||ref||_2 (abs L2 if ref = 0) */
    size_t nan_count;  /* NaNs in out (poisoned, unwritten elements too)  */
    size_t worst;      /* index of the max abs error                      */
    size_t first_bad;  /* first index that breaks the tolerance, or n     */
    double first_out, first_ref;  /* the values there                     */
    double sum_diff2, sum_ref2;   /* running sums behind rel_l2            */
} err_stats_t;

typedef struct {
    double rel_l2;     /* rel L2 must be below this                       */
    double max_abs;    /* max abs must be <= this (INFINITY: no bound)    */
} tol_t;

/* Compare out (float) with ref (double) over n elements. tol decides first_bad:
 * an element is bad when it is NaN or |out - ref| > tol.max_abs (or, when max_abs is
 * unbounded, > 10 x tol.rel_l2 x max|ref|: a pointer to where to look). */
err_stats_t err_compare(const float *out, const double *ref, size_t n, tol_t tol);
/* The same, accumulating into an existing stats record (for sampled heads). */
void err_accumulate(err_stats_t *acc, const float *out, const double *ref, size_t n,
                    size_t index_base, tol_t tol);
void err_finish(err_stats_t *acc);  /* turns accumulated sums into rel_l2 */
void err_init(err_stats_t *acc);

bool err_pass(const err_stats_t *e, tol_t tol);

/* rel L2 of a against b, two float arrays of n elements (a kernel against the previous
 * phase's output); NaN when either holds a NaN. */
double rel_l2_f32(const float *a, const float *b, size_t n);

/* The tolerances of docs/design.md as values. */
tol_t tol_cpu(void);                            /* rel 1e-5, no abs bound            */
tol_t tol_fp16(double pipeline_max_abs);        /* rel 3e-3, abs 2x pipeline + 1e-4 */
tol_t tol_grad(double pipeline_max_abs);        /* rel 1e-2, abs 2x pipeline + 1e-4 */

/* "PASS" or "FAIL"; and a one-line report of the first bad element:
 * "O[1234] = 0.51 vs ref 0.49 (row 19, col 18)" with row/col from the row length. */
const char *err_verdict(const err_stats_t *e, tol_t tol);
void err_first_bad_str(const err_stats_t *e, int row_len, const char *tensor, char *buf, size_t len);

/* Under `make phaseN run EX=1` (built with -DEX_BUILD) a failing check calls this to
 * name the exercises whose code it exercises: "  -> exercises behind this check: ...".
 * In the reference build it prints nothing. */
void check_hint_exercises(bool pass, const char *names);

/* Fill with NaN so that an element a kernel forgets to write fails the check. */
void poison_f32(float *x, size_t n);
#endif
