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
/* The fp32 CPU models' max abs bound, PER UNIT OF THE OUTPUT'S SCALE: an element is bad
 * when |out - ref| > 1e-4 * max(1, max |ref|) (tol_t.rel_scale; the max over the finite
 * reference values compared). fp32 rounding is relative: what O, L and the softmax
 * weights hold is of unit scale (O is a convex combination of V's rows, fp16-rounded
 * N(0,1) values with |V| < 6; weights are in [0, 1]; L = max score + log(sum) is at most
 * a few tens), and there fp32 rounding (eps 6e-8) over rows of up to 10^5 terms stays
 * below ~1e-5; measured, the models of phases 2-4 are within 2e-6 (e.g. 8.7e-7 on O and
 * 5.7e-7 on L at N_q=200, N_kv=77). 1e-4 = 10 x the rel L2 bound on unit-scale values: a
 * single element that far off is a bug, even where the rel L2 of a big tensor hides it.
 * A gradient is a sum over up to 10^4 - 10^5 rows and reaches hundreds (dV = P^T dO with
 * one key is the sum of dO over every query row, ~ sqrt(N_q)): the same relative bound,
 * on its own scale. The floor max(1, .) keeps an absolute bound of 1e-4 where the
 * reference is small or exactly zero. */
#define TOL_CPU_MAX_ABS  1e-4
#define TOL_FP16_REL_L2  3e-3
#define TOL_ABS_SLACK    1e-4
/* fp32's unit roundoff, 2^-24 */
#define TOL_U32          5.9604644775390625e-08

typedef struct {
    size_t n;            /* elements compared                                        */
    double max_abs;      /* max |out - ref|; INFINITY with a NaN or an inf mismatch  */
    double rel_l2;       /* ||out - ref||_2 / ||ref||_2 over the finite-finite pairs;
                            NaN when nan_count > 0. Where that reference is exactly
                            zero (ref_zero) a relative error does not exist: NaN too
                            (a table prints "-"), and max abs alone judges it         */
    bool ref_zero;       /* every finite reference value compared is 0 (e.g. dQ with
                            one key: P = 1, dS = P (dP - D) = 0)                      */
    double max_scaled;   /* max |out - ref| / (the scale of tol_t.rel_scale; 1 when not
                            rel_scale): what err_pass holds to tol.max_abs            */
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
    bool rel_scale;    /* max_abs is per unit of the reference's scale: the bound of one
                          element is max_abs * max(1, max |ref|) over the values compared
                          in one call (tol_cpu; false: an absolute bound)               */
} tol_t;

/* Compare out (float) with ref (double) over n elements. tol decides first_bad: an
 * element is bad when it is a NaN, an infinity mismatch, or |out - ref| > tol.max_abs. */
err_stats_t err_compare(const float *out, const double *ref, size_t n, tol_t tol);
/* The same, accumulating into an existing stats record (for sampled heads). */
void err_accumulate(err_stats_t *acc, const float *out, const double *ref, size_t n,
                    size_t index_base, tol_t tol);
void err_finish(err_stats_t *acc);  /* turns accumulated sums into rel_l2 */
void err_init(err_stats_t *acc);

/* No NaN, no infinity mismatch, rel_l2 < tol.rel_l2 (unless ref_zero) and max_scaled <=
 * tol.max_abs (finite). tol is the one the stats were accumulated with. */
bool err_pass(const err_stats_t *e, tol_t tol);

/* rel L2 of a against b, two float arrays of n elements (a kernel against the previous
 * phase's output); NaN when either holds a NaN. */
double rel_l2_f32(const float *a, const float *b, size_t n);

/* The tolerances of docs/design.md as values. */
tol_t tol_cpu(void);                            /* rel 1e-5, abs 1e-4 (x scale)      */
tol_t tol_fp16(double pipeline_max_abs);        /* rel 3e-3, abs 2x pipeline + 1e-4 */

/* ---- long sums: the rel L2 bounds as functions of the number of terms summed ----------
 * An output that is a sum over n keys (O over N_kv; dK, dV over N_q) accumulates one fp32
 * rounding per term, and the rel L2 of 1e-5 above holds only while n is short.
 *
 * fp32 models (tol_cpu_rel_l2). Model the running sums of a row (the online softmax's
 * o and l, a tile model's accumulator across tiles, a gradient's sum over rows) as
 * recursive summation with independent rounding errors, each uniform in [-u, u]
 * (variance u^2 / 3), u = 2^-24, on the partial sum:
 *   o = sum_j w_j v_j: zero-mean terms, partial sums |o_k|^2 ~ k s^2, so the error has
 *     variance sum_k (u^2 / 3) k s^2 = u^2 s^2 n^2 / 6 against |o_n|^2 ~ n s^2:
 *     relative variance u^2 n / 6;
 *   l = sum_j w_j: positive terms, partial sums ~ k m, error variance u^2 m^2 n^3 / 9
 *     against (n m)^2: u^2 n / 9, an error of l common to the whole row of O.
 * Together rel L2 ~ u sqrt(n (1/6 + 1/9)) = 0.53 u sqrt(n) for one model against the
 * exact result; two fp32 models against each other: sqrt(2) x that, 0.75 u sqrt(n). The
 * bound takes 4 x the latter, 3 u sqrt(n), to hold for a single row of 16 elements (the
 * rel L2 of so few values fluctuates around its mean), and never goes below 1e-5: it
 * grows beyond 1e-5 from n ~ 3100 keys on, reaching 9e-5 at 2^18 keys, the longest sum
 * a CPU row runs (ATTN_CPU_MAX_ELEMS / d at d = 16). Measured at n = 2^18, d = 16: 8.8e-6
 * (phase 6's split-S1, phase 2's 1-pass), 1.3e-6 (phase 4's tiles). A real mistake moves
 * a long sum far more: one key lost in n moves a row by ~ 1/sqrt(n) relative (2e-3 at
 * 2^18), a missing rescale by O(1).
 *
 * fp16 P (tol_fp16_rel_l2): phase 1's pipeline stores P = softmax(S) in fp16. Below
 * 2^-14 (6.1e-5) fp16 is subnormal with a fixed spacing 2^-24, so once n > 2^14 the
 * weights ~ 1/n lose relative precision: each p_j is off by up to 2^-25 (uniform:
 * variance 2^-50 / 3), O = sum_j p_j v_j by sqrt(n / 3) 2^-25 |v| against |O| ~ |v| /
 * sqrt(n): rel L2 ~ 2^-25 n / sqrt(3). The bound takes 3 x that, sqrt(3) 2^-25 n, never
 * below 3e-3 (from n ~ 58000 on). Measured at n = 2^18: 6.0e-3 (bound 1.35e-2). */
double tol_cpu_rel_l2(double n_terms);           /* max(1e-5, 3 u sqrt(n))            */
tol_t  tol_cpu_keys(double n_terms);             /* tol_cpu with that rel L2           */
double tol_fp16_rel_l2(double n_terms);          /* max(3e-3, sqrt(3) 2^-25 n)         */

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
/* The exercises check_hint_exercises has named in this run, ", "-separated ("" if none):
 * for a driver's closing FAIL line, which a test log's tail keeps when the hints scroll by. */
const char *check_hint_named(void);

/* Precise blame. A unit check tests one exercise's code alone (against the reference
 * library's copy, common/ref.h, or a rule written out in common/) and records its verdict
 * with ex_unit(name, pass): a pass clears that exercise, a failure convicts it. A
 * composite check (an output that several exercises' code made) then names
 * ex_blame(involved) rather than the whole list ("a, b, c", ", "-separated):
 *   - those of involved whose unit check failed, if any did;
 *   - else those no unit check cleared;
 *   - else (every one cleared, yet the composite fails: the unit checks missed it) all.
 * So a one-line mistake in one exercise, which its unit check catches, is named alone
 * however many composite checks it breaks. The strings returned live as long as the run. */
void ex_unit(const char *name, bool pass);
const char *ex_blame(const char *involved);
/* ex_unit_failed(name): has a unit check of that exercise failed in this run? */
bool ex_unit_failed(const char *name);

/* Fill with NaN so that an element a kernel forgets to write fails the check. */
void poison_f32(float *x, size_t n);
#endif
