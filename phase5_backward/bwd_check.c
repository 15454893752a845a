/* bwd_check.c - the causal range of bwd_q_block_first() against a brute-force scan of the
 * mask: whatever a shape's N_q, N_kv and blocks, K/V block j must visit exactly the Q
 * blocks that hold an entry of its columns some row may see, and no more. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "bwd.h"
#include "fp16.h"

int bwd_check_causal_range(const attn_problem_t *p, attn_blocks_t bl, char *why, size_t len)
{
    attn_problem_t pm = *p;
    pm.causal = true;
    const int Tr = (p->N_q + bl.Br - 1) / bl.Br, Tc = (p->N_kv + bl.Bc - 1) / bl.Bc;
    for (int j = 0; j < Tc; j++) {
        int want = Tr;   /* the first Q block with a visible entry in column block j */
        for (int i = 0; i < Tr && want == Tr; i++)
            for (int row = i * bl.Br; row < p->N_q && row < (i + 1) * bl.Br; row++)
                if (attn_visible(&pm, row, j * bl.Bc)) { want = i; break; }   /* its first key */
        int got = bwd_q_block_first(&pm, j, bl.Br, bl.Bc);
        if (got != want) {
            snprintf(why, len, "causal range: K/V block %d starts at Q block %d, not %d", j, got, want);
            return -1;
        }
    }
    return 0;
}

/* The two-pass variant's bytes (bwd.h): pass 1 is Alg. 2 without dQ (no zeroing, no
 * read-modify-write), pass 2 the Q-outer dQ kernel. */
double bwd_hbm_bytes_two_pass(const attn_problem_t *p, attn_blocks_t b, attn_blocks_t dq)
{
    const bwd_traffic_t t = bwd_hbm_traffic(p, b);
    const double d = p->d, qheads = (double)p->B * p->H;
    const double pass1 = t.total - t.rmw_dq - qheads * 4.0 * p->N_q * d;   /* no dQ = 0 either */
    const int Tr = (p->N_q + dq.Br - 1) / dq.Br, shift = p->N_kv - p->N_q;
    double keys = 0;   /* per query head: the keys of the K/V blocks each Q block reads */
    for (int i = 0; i < Tr; i++) {
        long seen = p->causal ? (long)(i + 1) * dq.Br - 1 + shift + 1 : p->N_kv;
        if (seen > p->N_kv) seen = p->N_kv;
        if (seen <= 0) continue;
        long kr = (seen + dq.Bc - 1) / dq.Bc * dq.Bc;
        keys += (double)(kr < p->N_kv ? kr : p->N_kv);
    }
    const double pass2 = qheads * ((2.0 * 2.0 * d + 2.0 * 4.0 + 4.0 * d) * p->N_q + 2.0 * 2.0 * d * keys);
    return pass1 + pass2;
}

void bwd_oracle_dq_row(const attn_inputs_t *in, int b, int h, int i, double *dq)
{
    const attn_problem_t *p = &in->p;
    const int d = p->d, n = attn_visible_count(p, i);   /* keys 0 .. n-1 (the mask's prefix) */
    const float *q = in->q + attn_q_offset(p, b, h) + (size_t)i * d, *g = in->dO + attn_q_offset(p, b, h) + (size_t)i * d;
    const float *K = in->k + attn_kv_offset(p, b, h), *V = in->v + attn_kv_offset(p, b, h);
    for (int k = 0; k < d; k++) dq[k] = 0.0;
    if (n == 0) return;   /* a fully masked row: no gradient */
    double *s = xmalloc(2 * (size_t)n * sizeof(double), "bwd_oracle_dq_row"), *dp = s + n;
    double m = -INFINITY, l = 0.0, D = 0.0;
    for (int j = 0; j < n; j++) {
        double x = 0.0, y = 0.0;
        for (int k = 0; k < d; k++) {
            x += (double)q[k] * K[(size_t)j * d + k];
            y += (double)g[k] * V[(size_t)j * d + k];
        }
        s[j] = (double)p->scale * x;
        dp[j] = y;
        if (s[j] > m) m = s[j];
    }
    for (int j = 0; j < n; j++) l += exp(s[j] - m);
    for (int j = 0; j < n; j++) {   /* s becomes P; D = rowsum(P * dP) (= rowsum(dO * O)) */
        s[j] = exp(s[j] - m) / l;
        D += s[j] * dp[j];
    }
    for (int j = 0; j < n; j++) {
        const double ds = s[j] * (dp[j] - D);
        for (int k = 0; k < d; k++) dq[k] += (double)p->scale * ds * K[(size_t)j * d + k];
    }
    free(s);
}

void bwd_std16_dq_row(const attn_inputs_t *in, int b, int h, int i, float *dq)
{
    const attn_problem_t *p = &in->p;
    const int d = p->d, n = attn_visible_count(p, i);
    const float *q = in->q + attn_q_offset(p, b, h) + (size_t)i * d, *g = in->dO + attn_q_offset(p, b, h) + (size_t)i * d;
    const float *K = in->k + attn_kv_offset(p, b, h), *V = in->v + attn_kv_offset(p, b, h);
    for (int k = 0; k < d; k++) dq[k] = 0.0f;
    if (n == 0) return;
    float *s = xmalloc(2 * (size_t)n * sizeof(float), "bwd_std16_dq_row"), *dp = s + n;
    double m = -INFINITY, l = 0.0;
    for (int j = 0; j < n; j++) {   /* 1, 3: S and dP as cuBLAS leaves them (fp32 sums, fp16 stores) */
        float x = 0.0f, y = 0.0f;
        for (int k = 0; k < d; k++) {
            x += q[k] * K[(size_t)j * d + k];
            y += g[k] * V[(size_t)j * d + k];
        }
        s[j] = p->scale * x;
        dp[j] = f16_round(y);
        if (s[j] > m) m = s[j];
    }
    for (int j = 0; j < n; j++) l += exp(s[j] - m);
    const float L = (float)(m + log(l));   /* the forward's L (fp32) */
    float D = 0.0f;
    for (int j = 0; j < n; j++) {           /* 2, 4: P = exp(S - L), D = rowsum(P dP), all fp16 stores */
        s[j] = f16_round(expf(f16_round(s[j]) - L));
        D += s[j] * dp[j];
    }
    for (int j = 0; j < n; j++) {           /* 4, 5: dS (fp16), dQ = scale dS K (fp32) */
        const float ds = f16_round(s[j] * (dp[j] - D));
        for (int k = 0; k < d; k++) dq[k] += p->scale * ds * K[(size_t)j * d + k];
    }
    free(s);
}
