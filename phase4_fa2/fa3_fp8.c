/* fa3_fp8.c - FlashAttention-3's FP8 forward as a CPU model (fa3_fp8.h says what and why). */
#include "fa3_fp8.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fp16.h"
#include "fp8.h"
#include "rng.h"

const char *const FA3_MODE_NAME[FA3_MODES] = {"fp16", "fp8, one scale a tensor", "fp8, block scales",
                                              "fp8, block scales + Hadamard"};

void fa3_add_outliers(attn_inputs_t *in, uint64_t seed)
{
    rng_t r;
    rng_seed(&r, seed);
    uint16_t *h[3] = { in->q_h, in->k_h, in->v_h };
    float *f[3] = { in->q, in->k, in->v };
    const size_t n[3] = { attn_q_elems(&in->p), attn_kv_elems(&in->p), attn_kv_elems(&in->p) };
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < n[t]; i++)
            if (rng_uniform(&r) < 0.001) {
                h[t][i] = f32_to_f16(f[t][i] + 10.0f * (float)rng_normal(&r));
                f[t][i] = f16_to_f32(h[t][i]);
            }
}

/* One k32 step of an FP8 tensor core with acc_bits of fraction (the H100's: 13, not fp32's
 * 23): the n products and the accumulator aligned to the largest's exponent, each cut
 * (toward zero) to acc_bits below it, summed, and the sum cut to acc_bits again. */
static double tc_step(double acc, const double *prod, int n, int acc_bits)
{
    double big = fabs(acc);
    for (int e = 0; e < n; e++) big = fmax(big, fabs(prod[e]));
    if (big == 0.0) return 0.0;
    int ex;
    frexp(big, &ex);                                  /* big in [2^(ex-1), 2^ex) */
    const double ulp = ldexp(1.0, ex - 1 - acc_bits);   /* acc_bits below the leading bit */
    double sum = trunc(acc / ulp) * ulp;
    for (int e = 0; e < n; e++) sum += trunc(prod[e] / ulp) * ulp;   /* exact: multiples of ulp */
    int es;
    const double m = frexp(sum, &es);                 /* |m| in [0.5, 1): 1 + acc_bits bits kept */
    return ldexp(trunc(ldexp(m, acc_bits + 1)), es - acc_bits - 1);
}

/* The threshold FA4's conditional rescaling keeps, in natural-log units: tau (log2 units), or
 * with the FP8 bound, at most log2(448) - p_shift, so that P = 2^(p_shift + the rise) stays
 * inside e4m3's range (0 at p_shift >= log2(448): rescale at every rise) */
float fa3_cond_threshold(const fa3_cond_t *c)
{
    float tau = c->tau_log2;
    if (c->fp8_bound && tau > log2f(E4M3_MAX) - c->p_shift_log2) tau = log2f(E4M3_MAX) - c->p_shift_log2;
    return (tau > 0 ? tau : 0) * 0.69314718f;
}

static int fa3_fp8_run(const attn_inputs_t *in, fa3_mode_t mode, int Br, int Bc, uint64_t seed, int acc_bits,
                       const fa3_cond_t *cond, fa3_cond_stats_t *st, float *O)
{
    if (cond && acc_bits != 0) return -1;   /* the conditional softmax: fp32 sums only */
    const float tau = cond ? fa3_cond_threshold(cond) : 0.0f, p_gain = cond ? exp2f(cond->p_shift_log2) : 1.0f;
    if (st) memset(st, 0, sizeof *st);
    const attn_problem_t *p = &in->p;
    const int d = p->d, fp8 = mode != FA3_FP16;
    if (mode == FA3_FP8_BLOCK_HADAMARD && (d & (d - 1)) != 0) return -1;
    const size_t nq = (size_t)p->N_q * d, nk = (size_t)p->N_kv * d;
    const int Tr = (p->N_q + Br - 1) / Br, Tc = (p->N_kv + Bc - 1) / Bc;
    /* the quantised copies of one head (Q) and one KV head (K, V), their scales, the tiles */
    float *Q = malloc(sizeof(float) * nq), *K = malloc(sizeof(float) * nk), *V = malloc(sizeof(float) * nk);
    float *sq = malloc(sizeof(float) * Tr), *sk = malloc(sizeof(float) * Tc), *sv = malloc(sizeof(float) * Tc);
    float *S = malloc(sizeof(float) * Bc), *Ot = malloc(sizeof(float) * d), sign[4096];
    if (!Q || !K || !V || !sq || !sk || !sv || !S || !Ot || d > 4096) {
        free(Q); free(K); free(V); free(sq); free(sk); free(sv); free(S); free(Ot);
        return -1;
    }
    fp8_signs(seed, d, sign);
    /* per tensor: one amax over the whole tensor, every head */
    float tensor_amax[3] = { 0, 0, 0 };
    if (mode == FA3_FP8_TENSOR) {
        const float *src[3] = { in->q, in->k, in->v };
        const size_t n[3] = { attn_q_elems(p), attn_kv_elems(p), attn_kv_elems(p) };
        for (int t = 0; t < 3; t++)
            for (size_t i = 0; i < n[t]; i++) tensor_amax[t] = fmaxf(tensor_amax[t], fabsf(src[t][i]));
    }
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->H; h++) {
            memcpy(Q, in->q + attn_q_offset(p, b, h), sizeof(float) * nq);
            memcpy(K, in->k + attn_kv_offset(p, b, h), sizeof(float) * nk);
            memcpy(V, in->v + attn_kv_offset(p, b, h), sizeof(float) * nk);
            if (mode == FA3_FP8_BLOCK_HADAMARD) {   /* incoherent processing: Q M, K M */
                fp8_hadamard_rows(Q, (size_t)p->N_q, d, sign);
                fp8_hadamard_rows(K, (size_t)p->N_kv, d, sign);
            }
            if (fp8) {
                if (mode == FA3_FP8_TENSOR) {   /* the tensor's amax as every tile's */
                    float *x[3] = { Q, K, V };
                    const size_t n[3] = { nq, nk, nk };
                    float *sc[3] = { sq, sk, sv };
                    const int tiles[3] = { Tr, Tc, Tc };
                    for (int t = 0; t < 3; t++) {
                        const float s = tensor_amax[t] > 0 ? tensor_amax[t] / E4M3_MAX : 1.0f;
                        for (size_t i = 0; i < n[t]; i++) x[t][i] = e4m3_round(x[t][i] / s);
                        for (int u = 0; u < tiles[t]; u++) sc[t][u] = s;
                    }
                } else {
                    fp8_quantise(Q, (size_t)p->N_q, d, Br, 0, sq);
                    fp8_quantise(K, (size_t)p->N_kv, d, Bc, 0, sk);
                    fp8_quantise(V, (size_t)p->N_kv, d, Bc, 0, sv);
                }
            } else {
                for (int u = 0; u < Tr; u++) sq[u] = 1;
                for (int u = 0; u < Tc; u++) sk[u] = sv[u] = 1;
            }
            attn_problem_t ph = *p;
            for (int i = 0; i < p->N_q; i++) {   /* row by row: FA2's loop over K/V blocks */
                float m = -INFINITY, l = 0, sv_units = sv[0];   /* sv_units: O~'s (acc_bits only) */
                memset(Ot, 0, sizeof(float) * d);
                const float *q = Q + (size_t)i * d;
                for (int j = 0; j < Tc; j++) {
                    const int j0 = j * Bc, kr = p->N_kv - j0 < Bc ? p->N_kv - j0 : Bc;
                    float mj = m;
                    for (int c = 0; c < kr; c++) {
                        float x = -INFINITY;
                        if (attn_visible(&ph, i, j0 + c)) {
                            const float *kc = K + (size_t)(j0 + c) * d;
                            float acc = 0;
                            if (acc_bits == 0)
                                for (int k = 0; k < d; k++) acc += q[k] * kc[k];
                            else {   /* k32 steps along d, as the tensor core runs them */
                                double a = 0, prod[32];
                                for (int k0 = 0; k0 < d; k0 += 32) {
                                    for (int e = 0; e < 32; e++) prod[e] = (double)q[k0 + e] * kc[k0 + e];
                                    a = tc_step(a, prod, 32, acc_bits);
                                }
                                acc = (float)a;
                            }
                            x = acc * sq[i / Br] * sk[j] * p->scale;
                        }
                        S[c] = x;
                        mj = fmaxf(mj, x);
                    }
                    if (mj == -INFINITY) continue;   /* nothing visible yet */
                    /* conditional rescaling (FA4): m moves, and O~ and l with it, only when
                     * the block's max rises past it by more than tau; else P is taken
                     * against the old m and may exceed 1, up to e^tau (tau = 0: FA2's rule) */
                    const int rescale = m == -INFINITY || mj > m + tau;
                    const float alpha = rescale ? expf(m - mj) : 1.0f;
                    if (st) { st->blocks++; st->rescaled += rescale; }
                    if (rescale) { l *= alpha; m = mj; }
                    if (acc_bits == 0) {
                        if (rescale) for (int k = 0; k < d; k++) Ot[k] *= alpha;
                        for (int c = 0; c < kr; c++) {
                            const float pe = expf(S[c] - m) * p_gain;   /* 0 where masked; p_gain = 2^p_shift */
                            l += pe;
                            const float pq = fp8 ? e4m3_round(pe) : f16_round(pe);
                            if (st && fp8 && pe >= E4M3_MAX) st->p_saturated++;
                            if (pq == 0) continue;
                            const float w = pq * sv[j];
                            for (int k = 0; k < d; k++) Ot[k] += w * V[(size_t)(j0 + c) * d + k];
                        }
                    } else {   /* the kernel's: O~ in units of block j's V scale, k32 steps over keys */
                        const float o_scale = alpha * (sv_units / sv[j]);
                        sv_units = sv[j];
                        float pq[256];
                        for (int c = 0; c < Bc; c++) {
                            const float pe = c < kr ? expf(S[c] - m) : 0.0f;
                            if (c < kr) l += pe;
                            pq[c] = fp8 ? e4m3_round(pe) : f16_round(pe);
                        }
                        for (int k = 0; k < d; k++) {
                            double a = (double)(Ot[k] * o_scale), prod[32];
                            for (int c0 = 0; c0 < Bc; c0 += 32) {
                                for (int e = 0; e < 32; e++)
                                    prod[e] = c0 + e < kr ? (double)pq[c0 + e] * V[(size_t)(j0 + c0 + e) * d + k] : 0.0;
                                a = tc_step(a, prod, 32, acc_bits);
                            }
                            Ot[k] = (float)a;
                        }
                    }
                }
                float *o = O + attn_q_offset(p, b, h) + (size_t)i * d;
                const float o_factor = acc_bits == 0 ? 1.0f : sv_units;
                for (int k = 0; k < d; k++) o[k] = l > 0 ? Ot[k] * o_factor / l : 0.0f;
            }
        }
    free(Q); free(K); free(V); free(sq); free(sk); free(sv); free(S); free(Ot);
    return 0;
}

int fa3_fp8_cpu(const attn_inputs_t *in, fa3_mode_t mode, int Br, int Bc, uint64_t seed, float *O)
{
    return fa3_fp8_run(in, mode, Br, Bc, seed, 0, NULL, NULL, O);
}

int fa3_fp8_cpu_tc(const attn_inputs_t *in, fa3_mode_t mode, int Br, int Bc, uint64_t seed, int acc_bits, float *O)
{
    return fa3_fp8_run(in, mode, Br, Bc, seed, acc_bits, NULL, NULL, O);
}

int fa3_fp8_cpu_cond(const attn_inputs_t *in, fa3_mode_t mode, int Br, int Bc, uint64_t seed, const fa3_cond_t *cond,
                     fa3_cond_stats_t *stats, float *O)
{
    return fa3_fp8_run(in, mode, Br, Bc, seed, 0, cond, stats, O);
}
