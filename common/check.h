/* check.h - error metrics against a reference, and the PASS/FAIL verdict.
 *
 * Tolerances (docs/design.md, "Checks and tolerances"):
 *   fp32 CPU model vs the fp64 oracle ............ rel L2 < 1e-5, max abs <= 1e-4
 *   fp16-in / fp32-accumulate GPU kernel ......... rel L2 < 3e-3, and
 *       max abs <= 2 x (max abs error of phase 1's fp16 pipeline on the same inputs) + 1e-4
 *
 * The rule for one element (out, ref):
 *   - equal when both are the same infinity (a fully masked row's L = +inf on both sides);
 *   - a NaN on either side never equals anything (nan_count; unwritten, poisoned elements);
 *   - an infinity on one side only, or +inf against -inf, is an infinity mismatch
 *     (inf_mismatch);
 *   - else both are finite and |out - ref| counts into max abs and rel L2.
 * A NaN or an infinity mismatch makes max_abs = INFINITY and err_pass false. Every
 * tolerance's max abs is finite: a tol_t whose max_abs is not finite never passes.
 */
#ifndef COMMON_CHECK_H
#define COMMON_CHECK_H
#include <stdbool.h>
#include <stddef.h>

#define TOL_CPU_REL_L2   1e-5
/* The fp32 CPU models' max abs bound. What they compare is of unit scale: O is a convex
 * combination of V's rows (fp16-rounded N(0,1) values, |V| < 6), softmax weights are in
 * [0, 1] and L = max score + log(sum) is at most a few tens. fp32 rounding (eps 6e-8) over
 * rows of up to 10^5 terms stays below ~1e-5 on such values; measured, the models of
 * phases 2-4 are within 2e-6 (e.g. 8.7e-7 on O and 5.7e-7 on L at N_q=200, N_kv=77;
 * see the report of this change). 1e-4 = 10 x the rel L2 bound on unit-scale values: a
 * single element that far off is a bug, even where the rel L2 of a big tensor hides it. */
#define TOL_CPU_MAX_ABS  1e-4
#define TOL_FP16_REL_L2  3e-3
#define TOL_ABS_SLACK    1e-4

typedef struct {
    size_t n;            /* elements compared                                        */
    double max_abs;      /* max |out - ref|; INFINITY with a NaN or an inf mismatch  */
    double rel_l2;       /* ||out - ref||_2 / ||ref||_2 over the finite-finite pairs
                            (abs L2 if that ref is 0); NaN when nan_count > 0         */
    size_t nan_count;    /* pairs with a NaN in out or ref (poisoned, unwritten)     */
    size_t inf_mismatch; /* pairs with an infinity on one side only, or +inf vs -inf */
    size_t worst;        /* index of the max abs error (the first NaN / mismatch)    */
    double worst_out, worst_ref;  /* the values there                                */
    size_t first_bad;    /* first index that breaks the tolerance, or n              */
    double first_out, first_ref;  /* the values there                                */
    double sum_diff2, sum_ref2;   /* running sums behind rel_l2                      */
} err_stats_t;

typedef struct {
    double rel_l2;     /* rel L2 must be below this (INFINITY: held by max_abs alone) */
    double max_abs;    /* max abs must be <= this; finite, or nothing passes          */
} tol_t;

/* Compare out (float) with ref (double) over n elements. tol decides first_bad: an
 * element is bad when it is a NaN, an infinity mismatch, or |out - ref| > tol.max_abs. */
err_stats_t err_compare(const float *out, const double *ref, size_t n, tol_t tol);
/* The same, accumulating into an existing stats record (for sampled heads). */
void err_accumulate(err_stats_t *acc, const float *out, const double *ref, size_t n,
                    size_t index_base, tol_t tol);
void err_finish(err_stats_t *acc);  /* turns accumulated sums into rel_l2 */
void err_init(err_stats_t *acc);

/* No NaN, no infinity mismatch, rel_l2 < tol.rel_l2 and max_abs <= tol.max_abs (finite). */
bool err_pass(const err_stats_t *e, tol_t tol);

/* rel L2 of a against b, two float arrays of n elements (a kernel against the previous
 * phase's output); NaN when either holds a NaN. */
double rel_l2_f32(const float *a, const float *b, size_t n);

/* The tolerances of docs/design.md as values. */
tol_t tol_cpu(void);                            /* rel 1e-5, abs 1e-4                */
tol_t tol_fp16(double pipeline_max_abs);        /* rel 3e-3, abs 2x pipeline + 1e-4 */

/* A one-line report of the first bad element, with row/col from the row length:
 *   "O[1234] = 0.51 vs ref 0.49 (row 19, col 18)"
 *   "L[5] = -inf vs ref inf (row 0, col 5): not the same infinity"
 *   "O[7] = nan vs ref 0.2 (row 0, col 7): NaN"
 * and where no element breaks the max abs bound (a failure by rel L2 alone), the
 * largest error: "O: no element beyond the max abs bound; largest error O[12] = ...". */
void err_first_bad_str(const err_stats_t *e, int row_len, const char *tensor, char *buf, size_t len);

/* Under `make phaseN run EX=1` (built with -DEX_BUILD) a failing check calls this to
 * name the exercises whose code it exercises: "  -> exercises behind this check: ...".
 * In the reference build it prints nothing. */
void check_hint_exercises(bool pass, const char *names);

/* Fill with NaN so that an element a kernel forgets to write fails the check. */
void poison_f32(float *x, size_t n);
#endif
