/* oracle.h - the fp64 reference attention: the oracle every later phase is checked
 * against. Plain loops, double precision, no tiling, nothing clever.
 *
 * Inputs are float arrays holding fp16-rounded values (attn_inputs_t's q, k, v, dO), in
 * the layout of common/problem.h; GQA by index; causal bottom-right aligned; a fully
 * masked row gives O = 0 and L = +inf.
 *
 *   S = scale * Q K^T (+ mask)      L = m + log(sum_j exp(S_j - m)),  m = max_j S_j
 *   P = exp(S - L)                  O = P V
 * Backward (recompute P from L):
 *   dV = P^T dO     dP = dO V^T     D = rowsum(dO * O)     dS = P * (dP - D)
 *   dQ = scale * dS K                dK = scale * dS^T Q
 * With GQA, dK and dV of a KV head are the sums over the query heads that share it.
 */
#ifndef PHASE0_ORACLE_H
#define PHASE0_ORACLE_H
#include "driver.h"
#include "problem.h"
#include "ref.h"

/* One query row i of head (b, h): o_row[d] and *L. */
REF_PROTO(void, oracle_fwd_row, (const attn_problem_t *p, const float *Q, const float *K, const float *V,
                    int b, int h, int i, double *o_row, double *L));

/* The whole forward: O [B][H][N_q][d], L [B][H][N_q] (L may be NULL). */
REF_PROTO(void, oracle_fwd, (const attn_problem_t *p, const float *Q, const float *K, const float *V,
                double *O, double *L));

/* A CPU model's row checked against the whole forward on its own inputs: O and L within
 * the fp32 tolerance (tol_cpu), the errors recorded in r (max_abs, rel_l2 of O; L_abs),
 * and in an exercise build the exercises behind a failing O or L named (oracle_check.c). */
void oracle_check_cpu_row(drv_row_t *r, const attn_inputs_t *in, const float *O, const float *L,
                          const char *exercises_O, const char *exercises_L);

/* The whole backward: dQ like Q, dK and dV like K. */
REF_PROTO(void, oracle_bwd, (const attn_problem_t *p, const float *Q, const float *K, const float *V,
                const float *dO, double *dQ, double *dK, double *dV));

/* The safe softmax of one row of n scores (max subtracted first): w[j] = e^(x_j - m) / l.
 * Masked entries are -inf and get weight 0. Returns L = m + log(l) (+inf if all masked). */
REF_PROTO(double, oracle_softmax_row, (const double *x, int n, double *w));
#endif
