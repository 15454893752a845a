/* oracle.c - the fp64 reference attention (see oracle.h for the equations).
 *
 * Deliberately the plainest code that computes the right answer: one query row at a
 * time, every score materialised, everything in double. Later phases are only as
 * trustworthy as this file, so it is tested against hand-computed values and against
 * finite differences (phase0_model/test_phase0.c, and the driver's self-checks).
 *
 * Two exercises live here (`make phase0 run EX=1`):
 *   p0.softmax_row  the safe softmax of one row of scores
 *   p0.dS           the softmax backward dS = P * (dP - D) with D = rowsum(dO * O)
 */
#include "oracle.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

double oracle_softmax_row(const double *x, int n, double *w)
{
    /* TODO EXERCISE p0.softmax_row: the safe softmax of one row, and its log-sum-exp L
     * HINT: first m = max_j x[j] (masked entries are -INFINITY); a row where every entry
     * HINT: is masked gets w = 0 and returns +INFINITY. Then w[j] = exp(x[j] - m), which
     * HINT: never overflows because x[j] - m <= 0; l = sum_j w[j]; divide w by l; and
     * HINT: return L = m + log(l), the log of sum_j exp(x[j]) computed without overflow.
     */
    (void)x;
    for (int j = 0; j < n; j++) w[j] = 0.0;
    return INFINITY;
    /* END EXERCISE p0.softmax_row */
}

/* The scaled, masked scores of row i of head (b, h): s[j] = scale * Q_i . K_j, or -inf
 * where the bottom-right causal mask hides column j. */
static void score_row(const attn_problem_t *p, const float *Q, const float *K,
                      int b, int h, int i, double *s)
{
    const float *q = Q + attn_q_offset(p, b, h) + (size_t)i * p->d;
    const float *k = K + attn_kv_offset(p, b, h);   /* the shared KV head under GQA */
    for (int j = 0; j < p->N_kv; j++) {
        if (!attn_visible(p, i, j)) { s[j] = -INFINITY; continue; }
        double acc = 0.0;
        for (int c = 0; c < p->d; c++) acc += (double)q[c] * (double)k[(size_t)j * p->d + c];
        s[j] = (double)p->scale * acc;
    }
}

/* o = sum_j w[j] V_j over the KV head that (b, h) reads. */
static void weighted_sum(const attn_problem_t *p, const float *V, int b, int h,
                         const double *w, double *o)
{
    const float *v = V + attn_kv_offset(p, b, h);
    for (int c = 0; c < p->d; c++) o[c] = 0.0;
    for (int j = 0; j < p->N_kv; j++) {
        if (w[j] == 0.0) continue;
        for (int c = 0; c < p->d; c++) o[c] += w[j] * (double)v[(size_t)j * p->d + c];
    }
}

void oracle_fwd_row(const attn_problem_t *p, const float *Q, const float *K, const float *V,
                    int b, int h, int i, double *o_row, double *L)
{
    double *s = malloc((size_t)p->N_kv * sizeof *s);
    double *w = malloc((size_t)p->N_kv * sizeof *w);
    if (!s || !w) abort();                     /* tiny next to the tensors themselves */
    score_row(p, Q, K, b, h, i, s);
    double lse = oracle_softmax_row(s, p->N_kv, w);   /* P_i = softmax(S_i) */
    weighted_sum(p, V, b, h, w, o_row);               /* O_i = P_i V        */
    if (L) *L = lse;
    free(s);
    free(w);
}

void oracle_fwd(const attn_problem_t *p, const float *Q, const float *K, const float *V,
                double *O, double *L)
{
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->H; h++)
            for (int i = 0; i < p->N_q; i++)
                oracle_fwd_row(p, Q, K, V, b, h, i,
                               O + attn_q_offset(p, b, h) + (size_t)i * p->d,
                               L ? L + attn_l_offset(p, b, h) + i : NULL);
}

void oracle_bwd(const attn_problem_t *p, const float *Q, const float *K, const float *V,
                const float *dO, double *dQ, double *dK, double *dV)
{
    const int n = p->N_kv, d = p->d;
    const double scale = (double)p->scale;
    memset(dQ, 0, attn_q_elems(p) * sizeof *dQ);
    memset(dK, 0, attn_kv_elems(p) * sizeof *dK);   /* summed over the query heads */
    memset(dV, 0, attn_kv_elems(p) * sizeof *dV);   /* that share a KV head (GQA)  */
    double *s = malloc((size_t)n * sizeof *s), *P = malloc((size_t)n * sizeof *P);
    double *dP = malloc((size_t)n * sizeof *dP), *dS = malloc((size_t)n * sizeof *dS);
    double *o = malloc((size_t)d * sizeof *o);
    if (!s || !P || !dP || !dS || !o) abort();

    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->H; h++) {
            const size_t qo = attn_q_offset(p, b, h), ko = attn_kv_offset(p, b, h);
            const float *k = K + ko, *v = V + ko;
            for (int i = 0; i < p->N_q; i++) {
                const float *q = Q + qo + (size_t)i * d, *g = dO + qo + (size_t)i * d;
                /* The forward row again: P_i = softmax(S_i) and O_i = P_i V. (The GPU
                 * backward kernels recompute P_ij = exp(S_ij - L_i) from the stored L,
                 * FlashAttention-2 Alg. 2 l.11; in fp64 that is the same P.) A fully
                 * masked row has P = 0, so it adds no gradient anywhere. */
                score_row(p, Q, K, b, h, i, s);
                oracle_softmax_row(s, n, P);
                weighted_sum(p, V, b, h, P, o);
                /* dP_ij = dO_i . V_j, and dV_j += P_ij dO_i */
                for (int j = 0; j < n; j++) {
                    double acc = 0.0;
                    for (int c = 0; c < d; c++) acc += (double)g[c] * (double)v[(size_t)j * d + c];
                    dP[j] = acc;
                    if (P[j] != 0.0)
                        for (int c = 0; c < d; c++) dV[ko + (size_t)j * d + c] += P[j] * (double)g[c];
                }
                /* TODO EXERCISE p0.dS: the softmax backward, dS_ij = P_ij (dP_ij - D_i)
                 * HINT: D_i = rowsum(dO_i * O_i) = sum_c dO[i][c] * O[i][c] (here g[c] and o[c]);
                 * HINT: it equals sum_j P_ij dP_ij, but needs only d products instead of N_kv
                 * HINT: (FlashAttention-2, Alg. 2 l.4). Then dS[j] = P[j] * (dP[j] - D).
                 */
                for (int j = 0; j < n; j++) dS[j] = 0.0;
                /* END EXERCISE p0.dS */
                /* dQ_i += scale dS_ij K_j ;  dK_j += scale dS_ij Q_i */
                for (int j = 0; j < n; j++) {
                    if (dS[j] == 0.0) continue;
                    for (int c = 0; c < d; c++) {
                        dQ[qo + (size_t)i * d + c] += scale * dS[j] * (double)k[(size_t)j * d + c];
                        dK[ko + (size_t)j * d + c] += scale * dS[j] * (double)q[c];
                    }
                }
            }
        }
    free(s); free(P); free(dP); free(dS); free(o);
}
