/* naive_cpu.c - the CPU model of standard attention (FlashAttention paper, Algorithm 0),
 * the same three steps as the GPU kernels of naive.cu, with the same roundings:
 *
 *   1. S = scale * Q K^T   fp32 dot products, S stored to "HBM" as fp16
 *   2. P = softmax(S)      the 3-pass safe softmax in fp32 on the fp16 S, P stored as fp16
 *   3. O = P V             fp32 dot products of the fp16 P with V, O stored as fp16
 *
 * Every HBM access goes through the meter, so the counted bytes are the traffic of the
 * pipeline: per query head, read Q and K, write S; read S, write P; read P and V,
 * write O, which is exactly std_attn_traffic(p, 2) of phase0_model/cost.h (the test
 * checks equality). Causal masking is applied by the softmax (step 2), as the GPU
 * pipeline does: steps 1 and 3 compute the whole N_q x N_kv matrix, masked or not.
 */
#include "naive.h"
#include "fp16.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Step 1 for one row: s[j] = fp16(scale * q . k_j), for every column j. */
static void scores_row(const attn_problem_t *p, const float *q, const float *K, float *s)
{
    for (int j = 0; j < p->N_kv; j++) {
        float acc = 0.0f;
        for (int x = 0; x < p->d; x++) acc += q[x] * K[(size_t)j * p->d + x];
        s[j] = f16_round(p->scale * acc);
    }
}

/* Step 2 for one row: the 3-pass safe softmax over the n_vis visible columns
 * (the first n_vis: causal masking hides a suffix of each row). Writes the fp16
 * P row (0 on masked columns) and returns L = m + log(l), +inf when n_vis = 0. */
static float softmax_row(const float *s, int n_kv, int n_vis, float *prow)
{
    /* EXERCISE naive.cpu_softmax: the 3-pass safe softmax of one row of S
     * HINT: pass 1: m = max of s[0..n_vis-1]; pass 2: l = sum of expf(s[j] - m);
     * HINT: pass 3: prow[j] = f16_round(expf(s[j] - m) / l) for j < n_vis, 0 after */
    float m = -INFINITY, l = 0.0f;                                     /* row max, row sum */
    for (int j = 0; j < n_vis; j++) m = fmaxf(m, s[j]);                 /* pass 1: max  */
    for (int j = 0; j < n_vis; j++) l += expf(s[j] - m);                /* pass 2: sum  */
    for (int j = 0; j < n_kv; j++)                                      /* pass 3: norm */
        prow[j] = j < n_vis ? f16_round(expf(s[j] - m) / l) : 0.0f;
    /* STUB: float m = 0.0f, l = 1.0f; */
    /* STUB: for (int j = 0; j < n_kv; j++) prow[j] = 0.0f; */
    /* STUB: (void)s; */
    /* END EXERCISE */
    return n_vis > 0 ? m + logf(l) : INFINITY;
}

/* softmax_row for row i of any mask: with a FlashMask mask (common/mask.h) the visible
 * columns are not a prefix, so they are moved to the front of s (in place: the k-th visible
 * column goes to k <= j), softmaxed there, and P scattered back, 0 on the masked columns. */
static float softmax_row_visible(const attn_problem_t *p, int i, float *s, float *prow)
{
    if (!attn_mask(p)) return softmax_row(s, p->N_kv, attn_visible_count(p, i), prow);
    int n = 0;
    for (int j = 0; j < p->N_kv; j++)
        if (attn_visible(p, i, j)) s[n++] = s[j];
    const float L = softmax_row(s, n, n, prow);
    for (int j = p->N_kv - 1, k = n - 1; j >= 0; j--) prow[j] = attn_visible(p, i, j) ? prow[k--] : 0.0f;
    return L;
}

/* Step 3 for one row: o[x] = fp16(sum_j P_j V_jx). */
static void pv_row(const attn_problem_t *p, const float *prow, const float *V, float *o)
{
    for (int x = 0; x < p->d; x++) {
        float acc = 0.0f;
        for (int j = 0; j < p->N_kv; j++) acc += prow[j] * V[(size_t)j * p->d + x];
        o[x] = f16_round(acc);
    }
}

void naive_cpu(const attn_inputs_t *in, float *O, float *L, hbm_meter_t *meter)
{
    const attn_problem_t *p = &in->p;
    const int Nq = p->N_q, Nkv = p->N_kv, d = p->d;
    /* "HBM": S and P of one head at a time (the GPU holds all heads; the traffic is
     * the same), and the fp16 output. "SRAM"/registers: the fp32 copies below. */
    uint16_t *S_h = xmalloc((size_t)Nq * Nkv * 2, "naive_cpu");
    uint16_t *P_h = xmalloc((size_t)Nq * Nkv * 2, "naive_cpu");
    uint16_t *O_h = xmalloc((size_t)Nq * d * 2, "naive_cpu");
    float *Qh = xmalloc((size_t)Nq * d * 4, "naive_cpu");
    float *Kh = xmalloc((size_t)Nkv * d * 4, "naive_cpu");
    float *Vh = xmalloc((size_t)Nkv * d * 4, "naive_cpu");
    float *row = xmalloc((size_t)Nkv * 4, "naive_cpu");
    float *prow = xmalloc((size_t)Nkv * 4, "naive_cpu");
    float *Oh = xmalloc((size_t)Nq * d * 4, "naive_cpu");

    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->H; h++) {
            size_t qo = attn_q_offset(p, b, h), ko = attn_kv_offset(p, b, h);
            /* 1. read Q (N_q d) and K (N_kv d), write S (N_q N_kv) */
            hbm_load_f16(meter, Qh, in->q_h + qo, (size_t)Nq * d);
            hbm_load_f16(meter, Kh, in->k_h + ko, (size_t)Nkv * d);
            for (int i = 0; i < Nq; i++) {
                scores_row(p, Qh + (size_t)i * d, Kh, row);
                hbm_store_f16(meter, S_h + (size_t)i * Nkv, row, Nkv);
            }
            /* 2. read S, write P (and L, which later phases keep; not HBM traffic of
             *    the standard pipeline, so not metered) */
            for (int i = 0; i < Nq; i++) {
                hbm_load_f16(meter, row, S_h + (size_t)i * Nkv, Nkv);
                float Li = softmax_row_visible(p, i, row, prow);
                if (L) L[attn_l_offset(p, b, h) + i] = Li;
                hbm_store_f16(meter, P_h + (size_t)i * Nkv, prow, Nkv);
            }
            /* 3. read P (N_q N_kv) and V (N_kv d), write O (N_q d) */
            hbm_load_f16(meter, Vh, in->v_h + ko, (size_t)Nkv * d);
            for (int i = 0; i < Nq; i++) {
                hbm_load_f16(meter, prow, P_h + (size_t)i * Nkv, Nkv);
                pv_row(p, prow, Vh, Oh + (size_t)i * d);
            }
            hbm_store_f16(meter, O_h, Oh, (size_t)Nq * d);
            f16_to_f32_array(O + qo, O_h, (size_t)Nq * d);
        }
    free(S_h); free(P_h); free(O_h); free(Qh); free(Kh); free(Vh); free(row); free(prow); free(Oh);
}

void naive_cpu_row(const attn_problem_t *p, const float *Q, const float *K, const float *V,
                   int b, int h, int i, float *o_row)
{
    const float *q = Q + attn_q_offset(p, b, h) + (size_t)i * p->d;
    const float *Kh = K + attn_kv_offset(p, b, h), *Vh = V + attn_kv_offset(p, b, h);
    float *s = xmalloc((size_t)p->N_kv * 4, "naive_cpu");
    float *prow = xmalloc((size_t)p->N_kv * 4, "naive_cpu");
    scores_row(p, q, Kh, s);
    softmax_row_visible(p, i, s, prow);
    pv_row(p, prow, Vh, o_row);
    free(s); free(prow);
}

double naive_sp_bytes(const attn_problem_t *p)
{
    return 2.0 * 2.0 * (double)p->B * p->H * (double)p->N_q * p->N_kv;   /* S and P, fp16 */
}

double naive_device_bytes(const attn_problem_t *p)
{
    return naive_sp_bytes(p) + 2.0 * (2.0 * attn_q_elems(p) + 2.0 * attn_kv_elems(p));
}
