/* bwd_cpu.c - the CPU models of attention's backward pass (bwd.h).
 *
 * Plain C, fp32 math, every touch of an "HBM" array through the meter.
 *   bwd_std_cpu: the standard backward, pass by pass, S, P, dP and dS materialised
 *     (the baseline, as phase 1 is for the forward).
 *   bwd_preprocess + bwd_fa2_cpu: FlashAttention-2's Alg. 2, K/V blocks outer, Q blocks
 *     inner, tiles from an sram_t budget. Beside the forward's loop (phase 4):
 *       forward : for i { load Q_i; for j { load K_j, V_j; step } ; store O_i, L_i }
 *       backward: for j { load K_j, V_j; for i { load Q_i, dO_i, L_i, D_i, dQ_i; step;
 *                                                  store dQ_i } ; store dK_j, dV_j }
 *     dK_j and dV_j are sums over the query rows (over i), so the loop over i is the
 *     inner one and they stay on chip; dQ_i is a sum over the keys (over j) and goes
 *     back to HBM after every step.
 */
#include "bwd.h"
#include "driver.h"
#include "fa2.h"
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fp16.h"

/* ---- the causal range and the formulas -------------------------------------------- */
int bwd_q_block_first(const attn_problem_t *p, int j, int Br, int Bc)
{
    const int Tr = (p->N_q + Br - 1) / Br;
    if (!p->causal) return 0;
    /* EXERCISE bwd.causal_range: the first Q block K/V block j must visit (Alg. 2, causal)
     * HINT: row r sees key c iff c <= r + (N_kv - N_q) (common/problem.h). The block's first
     * HINT: key (j Bc) is the one seen last: the first row that sees it is j Bc - (N_kv - N_q)
     * HINT: (at least 0). Return the Q block holding that row; Tr when that row is past N_q. */
    long row = (long)j * Bc - (p->N_kv - p->N_q);
    if (row < 0) row = 0;
    if (row >= p->N_q) return Tr;
    return (int)(row / Br);
    /* STUB: (void)j; (void)Bc; (void)Tr; return 0; */
    /* END EXERCISE */
}

void bwd_visits_want(struct drv_visits *v, const attn_problem_t *p, attn_blocks_t b, bool skip,
                     const attn_blocks_t *dq)
{
    const int Tr = (p->N_q + b.Br - 1) / b.Br, Tc = (p->N_kv + b.Bc - 1) / b.Bc;
    const int Tq = dq ? (p->N_q + dq->Br - 1) / dq->Br : 0;   /* the dQ kernel's Q blocks */
    const unsigned long long heads = (unsigned long long)p->B * p->H;
    const bool masked = attn_mask(p) && skip;
    drv_visits_init(v, Tc + Tq, "K/V block", "Q blocks", masked ? "the mask's tile classes" : "the causal range",
                    masked ? NULL : "bwd.causal_range_gpu");   /* the mask's classes are no exercise */
    v->split = Tc;   /* then the dQ kernel's tiles: Q blocks that visit K/V blocks */
    v->part[1].tile = "the dQ kernel's Q block";
    v->part[1].unit = "K/V blocks";
    v->part[1].exercise = NULL;   /* its range is no exercise */
    /* the reference's ranges, never the student's (common/ref.h) */
    for (int j = 0; j < Tc; j++) v->want[j] = heads * (Tr - (skip ? REF(bwd_q_block_first)(p, j, b.Br, b.Bc) : 0));
    if (masked) {   /* FlashMask: the tiles of column block j not fully masked, by mask.h's rule (Sec. 4) */
        mask_blocks_t mb = attn_mask_blocks(p, b.Bc);
        for (int j = 0; j < Tc; j++) {
            unsigned long long n = 0;
            for (int i = 0; i < Tr; i++) {
                const int r1 = p->N_q < (i + 1) * b.Br ? p->N_q : (i + 1) * b.Br;
                n += mask_tile_class(&mb, i * b.Br, r1, j) != MASK_TILE_FULLY_MASKED;
            }
            v->want[j] = heads * n;
        }
        mask_blocks_free(&mb);
    }
    for (int i = 0; i < Tq; i++) v->want[Tc + i] = heads * REF(fa2_kv_blocks)(p, i, dq->Br, dq->Bc);
}

bool bwd_kernel_has_mask_path(const char *name)
{
    return strcmp(name, "mma") == 0 || strcmp(name, "wgmma-ws") == 0;   /* BWD_MASK_KERNELS */
}

size_t bwd_sram_bytes(int d, attn_blocks_t b)
{
    size_t Br = (size_t)b.Br, Bc = (size_t)b.Bc, D = (size_t)d;
    return sizeof(float) * (4 * Bc * D + 3 * Br * D + 2 * Br * Bc + 2 * Br);
}

bwd_traffic_t bwd_hbm_traffic(const attn_problem_t *p, attn_blocks_t b)
{
    const double d = p->d, G = (double)(p->H / p->H_kv);
    const double kvheads = (double)p->B * p->H_kv, qheads = (double)p->B * p->H;
    const int Tc = (p->N_kv + b.Bc - 1) / b.Bc, Tr = (p->N_q + b.Br - 1) / b.Br;
    double rows = 0;   /* sum over K/V blocks of the query rows visited (one query head) */
    mask_blocks_t mb = attn_mask_blocks(p, b.Bc);
    for (int j = 0; j < Tc; j++) {
        if (attn_mask(p)) {   /* FlashMask: the Q blocks whose tile with block j is not fully masked */
            for (int i = 0; i < Tr; i++) {
                const int qr = p->N_q - i * b.Br < b.Br ? p->N_q - i * b.Br : b.Br;
                if (mask_tile_class(&mb, i * b.Br, i * b.Br + qr, j) != MASK_TILE_FULLY_MASKED) rows += qr;
            }
            continue;
        }
        const long r = p->N_q - (long)bwd_q_block_first(p, j, b.Br, b.Bc) * b.Br;
        rows += (double)(r > 0 ? r : 0);
    }
    mask_blocks_free(&mb);
    bwd_traffic_t t;
    t.pre       = qheads * (2.0 * p->N_q * d + 4.0 * p->N_q * d + 4.0 * p->N_q + 4.0 * p->N_q * d);
    t.read_kv   = kvheads * 2.0 * 2.0 * p->N_kv * d;          /* K_j, V_j fp16, once   */
    t.write_dkv = kvheads * 2.0 * 4.0 * p->N_kv * d;          /* dK_j, dV_j fp32, once */
    t.read_q_do = kvheads * G * rows * 2.0 * 2.0 * d;         /* Q_i, dO_i fp16         */
    t.read_l_d  = kvheads * G * rows * 2.0 * 4.0;             /* L_i, D_i fp32          */
    t.rmw_dq    = kvheads * G * rows * 2.0 * 4.0 * d;         /* dQ_i read + write fp32 */
    t.read_mask = attn_mask(p) ? 16.0 * p->N_kv + 32.0 * Tc + kvheads * (32.0 * Tc + 16.0 * p->N_kv) : 0;
    t.total = t.pre + t.read_kv + t.write_dkv + t.read_q_do + t.read_l_d + t.rmw_dq + t.read_mask;
    return t;
}

double bwd_hbm_bytes(const attn_problem_t *p, attn_blocks_t b) { return bwd_hbm_traffic(p, b).total; }

double bwd_std_sp_bytes(const attn_problem_t *p, int e)
{
    return 4.0 * e * (double)p->B * p->H * p->N_q * (double)p->N_kv;
}

double bwd_std_bytes(const attn_problem_t *p, int e)
{
    const double nn = (double)p->N_q * p->N_kv, qd = (double)p->N_q * p->d, kd = (double)p->N_kv * p->d;
    const double per_q = (2 * qd + 2 * kd + e * nn)          /* 1. S = scale Q K^T       */
                       + (e * nn + 4.0 * p->N_q + e * nn)    /* 2. P = exp(S - L)        */
                       + (2 * qd + 2 * kd + e * nn)          /* 3. dP = dO V^T           */
                       + (3.0 * e * nn)                      /* 4. dS = P * (dP - D)     */
                       + (e * nn + 2 * kd + 4 * qd);         /* 5. dQ = scale dS K       */
    const double G = (double)(p->H / p->H_kv);
    const double per_kv = 2 * (G * (e * nn + 2 * qd) + 4 * kd);   /* 6. dV, 7. dK      */
    return (double)p->B * (p->H * per_q + p->H_kv * per_kv);
}

/* ---- the standard backward ---------------------------------------------------------- */
/* A store of n elements into an S/P/dP/dS array of e bytes each: fp16 rounds on the way. */
static void store_e(hbm_meter_t *m, int e, float *hbm, const float *x, size_t n)
{
    if (e == 2) for (size_t k = 0; k < n; k++) hbm[k] = f16_round(x[k]);
    else memcpy(hbm, x, n * sizeof *x);
    hbm_write(m, (uint64_t)e * n);
}
static void load_e(hbm_meter_t *m, int e, float *x, const float *hbm, size_t n)
{
    memcpy(x, hbm, n * sizeof *x);
    hbm_read(m, (uint64_t)e * n);
}

int bwd_std_cpu(const attn_inputs_t *in, const float *L, int e, float *dQ, float *dK, float *dV,
                hbm_meter_t *meter)
{
    const attn_problem_t *p = &in->p;
    const int d = p->d, nq = p->N_q, nk = p->N_kv, G = p->H / p->H_kv;
    const size_t nn = (size_t)nq * nk;
    hbm_meter_t scratch;
    if (!meter) meter = &scratch;
    /* "HBM": S, P, dP, dS of the G query heads of one KV head; "on chip": whole operands
     * of one pass (each read once per pass) and one row */
    float *S = malloc(4 * G * nn * sizeof(float)), *Q = malloc((size_t)G * nq * d * sizeof(float));
    float *dO = malloc((size_t)G * nq * d * sizeof(float)), *K = malloc((size_t)nk * d * sizeof(float));
    float *V = malloc((size_t)nk * d * sizeof(float)), *row = malloc(2 * (size_t)nk * sizeof(float));
    float *Lh = malloc((size_t)nq * sizeof(float)), *acc = malloc((size_t)(nq > nk ? nq : nk) * d * sizeof(float));
    if (!S || !Q || !dO || !K || !V || !row || !Lh || !acc) {
        free(S); free(Q); free(dO); free(K); free(V); free(row); free(Lh); free(acc);
        return -1;
    }
    float *P = S + G * nn, *dP = P + G * nn, *dS = dP + G * nn, *row2 = row + nk;
    for (int b = 0; b < p->B; b++)
    for (int hk = 0; hk < p->H_kv; hk++) {
        for (int g = 0; g < G; g++) {
            const int h = hk * G + g;
            const size_t qo = attn_q_offset(p, b, h), ko = attn_kv_offset(p, b, h), o = (size_t)g * nn;
            float *q = Q + (size_t)g * nq * d, *go = dO + (size_t)g * nq * d;
            /* 1. S = scale Q K^T (masked entries -inf) */
            hbm_load_f16(meter, q, in->q_h + qo, (size_t)nq * d);
            hbm_load_f16(meter, K, in->k_h + ko, (size_t)nk * d);
            for (int i = 0; i < nq; i++) {
                for (int j = 0; j < nk; j++) {
                    float s = 0;
                    for (int c = 0; c < d; c++) s += q[(size_t)i * d + c] * K[(size_t)j * d + c];
                    row[j] = attn_visible(p, i, j) ? s * p->scale : -INFINITY;
                }
                store_e(meter, e, S + o + (size_t)i * nk, row, nk);
            }
            /* 2. P = exp(S - L): a fully masked row (L = +inf) gets P = 0 */
            hbm_load_f32(meter, Lh, L + attn_l_offset(p, b, h), nq);
            for (int i = 0; i < nq; i++) {
                load_e(meter, e, row, S + o + (size_t)i * nk, nk);
                for (int j = 0; j < nk; j++) row[j] = expf(row[j] - Lh[i]);
                store_e(meter, e, P + o + (size_t)i * nk, row, nk);
            }
            /* 3. dP = dO V^T */
            hbm_load_f16(meter, go, in->do_h + qo, (size_t)nq * d);
            hbm_load_f16(meter, V, in->v_h + ko, (size_t)nk * d);
            for (int i = 0; i < nq; i++) {
                for (int j = 0; j < nk; j++) {
                    float s = 0;
                    for (int c = 0; c < d; c++) s += go[(size_t)i * d + c] * V[(size_t)j * d + c];
                    row[j] = s;
                }
                store_e(meter, e, dP + o + (size_t)i * nk, row, nk);
            }
            /* 4. dS = P * (dP - D), D_i = rowsum(P_i * dP_i): one row of P and dP at a time */
            for (int i = 0; i < nq; i++) {
                load_e(meter, e, row, P + o + (size_t)i * nk, nk);
                load_e(meter, e, row2, dP + o + (size_t)i * nk, nk);
                float D = 0;
                for (int j = 0; j < nk; j++) D += row[j] * row2[j];
                for (int j = 0; j < nk; j++) row[j] *= row2[j] - D;
                store_e(meter, e, dS + o + (size_t)i * nk, row, nk);
            }
            /* 5. dQ = scale dS K (K read again: another pass) */
            hbm_load_f16(meter, K, in->k_h + ko, (size_t)nk * d);
            for (int i = 0; i < nq; i++) {
                load_e(meter, e, row, dS + o + (size_t)i * nk, nk);
                for (int c = 0; c < d; c++) {
                    float s = 0;
                    for (int j = 0; j < nk; j++) s += row[j] * K[(size_t)j * d + c];
                    acc[(size_t)i * d + c] = p->scale * s;
                }
            }
            hbm_store_f32(meter, dQ + qo, acc, (size_t)nq * d);
        }
        /* 6. dV = sum over the group of P^T dO;  7. dK = scale sum of dS^T Q */
        const size_t ko = ((size_t)b * p->H_kv + hk) * (size_t)nk * d;
        for (int pass = 0; pass < 2; pass++) {
            const float *M = pass == 0 ? P : dS;
            float *X = pass == 0 ? dO : Q;
            const uint16_t *Xh = pass == 0 ? in->do_h : in->q_h;
            memset(acc, 0, (size_t)nk * d * sizeof(float));
            for (int g = 0; g < G; g++) {
                float *x = X + (size_t)g * nq * d;
                hbm_load_f16(meter, x, Xh + attn_q_offset(p, b, hk * G + g), (size_t)nq * d);
                for (int i = 0; i < nq; i++) {
                    load_e(meter, e, row, M + (size_t)g * nn + (size_t)i * nk, nk);
                    for (int j = 0; j < nk; j++) {
                        if (row[j] == 0.0f) continue;
                        for (int c = 0; c < d; c++) acc[(size_t)j * d + c] += row[j] * x[(size_t)i * d + c];
                    }
                }
            }
            if (pass == 1) for (size_t k = 0; k < (size_t)nk * d; k++) acc[k] *= p->scale;
            hbm_store_f32(meter, (pass == 0 ? dV : dK) + ko, acc, (size_t)nk * d);
        }
    }
    free(S); free(Q); free(dO); free(K); free(V); free(row); free(Lh); free(acc);
    return 0;
}

/* ---- FlashAttention-2's backward: the preprocess, then Alg. 2 ------------------------ */
void bwd_preprocess(const attn_inputs_t *in, const float *O, float *D, float *dQ, hbm_meter_t *meter)
{
    const attn_problem_t *p = &in->p;
    const int d = p->d;
    hbm_meter_t scratch;
    if (!meter) meter = &scratch;
    float *o = malloc((size_t)d * sizeof(float)), *g = malloc((size_t)d * sizeof(float));
    float *zero = calloc((size_t)d, sizeof(float));
    if (!o || !g || !zero) abort();
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->H; h++)
            for (int i = 0; i < p->N_q; i++) {   /* one row at a time (a warp a row on the GPU) */
                const size_t at = attn_q_offset(p, b, h) + (size_t)i * d;
                hbm_load_f16(meter, g, in->do_h + at, (size_t)d);
                hbm_load_f32(meter, o, O + at, (size_t)d);
                float Di = 0;
                /* EXERCISE bwd.D: D_i = rowsum(dO_i * O_i) (Alg. 2 l.4)
                 * HINT: d products of this row's dO (g) and O (o). It equals rowsum(P_i * dP_i)
                 * HINT: (docs/05_backward.md), which would need the whole row of P. */
                for (int c = 0; c < d; c++) Di += g[c] * o[c];
                /* STUB: (void)g; (void)o; */
                /* END EXERCISE */
                hbm_store_f32(meter, D + attn_l_offset(p, b, h) + i, &Di, 1);
                hbm_store_f32(meter, dQ + at, zero, (size_t)d);   /* Alg. 2 l.5: dQ = 0 */
            }
    free(o); free(g); free(zero);
}

/* ---- the three exercises of a step, one element each -------------------------------
 * Functions of their own (bwd.h) so that a check can run the model with one of them the
 * student's and the other two the reference: a wrong one is then named alone (bwd_blame,
 * bwd_check.c). Row r of the tile is the global row i0 + r, column c the key j0 + c. */
void bwd_recompute_P(const attn_problem_t *p, int i0, int j0, int r, int c, float s, const float *Li, float *P)
{
    /* EXERCISE bwd.recompute_P: P_ij from the forward's L_i (Alg. 2 l.11)
     * HINT: P = exp(S - L) where row i0 + r may see key j0 + c (attn_visible), else 0.
     * HINT: A fully masked row has L = +inf: exp(S - inf) = 0, no special case. */
    P[c] = attn_visible(p, i0 + r, j0 + c) ? expf(s - Li[r]) : 0.0f;
    /* STUB: P[c] = 0.0f; (void)p; (void)r; (void)s; (void)i0; (void)j0; (void)Li; */
    /* END EXERCISE */
}

void bwd_dS(int r, int c, const float *P, float dp, const float *Di, float *dS)
{
    /* EXERCISE bwd.dS: the softmax's backward, dS_ij = P_ij (dP_ij - D_i) (Alg. 2 l.14)
     * HINT: elementwise; D_i (Di[r]) comes from the preprocess pass. */
    dS[c] = P[c] * (dp - Di[r]);
    /* STUB: dS[c] = dp; (void)P; (void)Di; (void)r; */
    /* END EXERCISE */
}

void bwd_dQ(int r, int k, int d, float scale, float s, float *dQi)
{
    /* EXERCISE bwd.dQ: accumulate this K/V block's share of dQ_i (Alg. 2 l.15)
     * HINT: dQ_i = scale dS K summed over every K/V block j: add, do not overwrite,
     * HINT: and remember the scale (dS is the gradient of the scaled scores). */
    dQi[(size_t)r * d + k] += scale * s;
    /* STUB: (void)r; (void)k; (void)d; (void)scale; (void)s; (void)dQi; */
    /* END EXERCISE */
}

/* One step (i, j) of Alg. 2 l.10-20 on tiles in SRAM: qr rows of Q_i (global row i0 + r),
 * kr rows of K_j (global key j0 + c). Pt and dSt are Br x Bc tiles. */
static void bwd_step(const attn_problem_t *p, const bwd_parts_t *x, int qr, int kr, int i0, int j0,
                     const float *Qi, const float *dOi, const float *Li, const float *Di,
                     const float *Kj, const float *Vj, float *dQi, float *dKj, float *dVj,
                     float *Pt, float *dSt)
{
    const int d = p->d;
    const float scale = p->scale;
    for (int r = 0; r < qr; r++) {
        float *P = Pt + (size_t)r * kr, *dS = dSt + (size_t)r * kr;
        for (int c = 0; c < kr; c++) {
            float s = 0;   /* l.10: S_ij = scale Q_i K_j^T */
            for (int k = 0; k < d; k++) s += Qi[(size_t)r * d + k] * Kj[(size_t)c * d + k];
            s *= scale;
            x->recompute_P(p, i0, j0, r, c, s, Li, P);                     /* l.11 */
            float dp = 0;  /* l.13: dP_ij = dO_i V_j^T */
            for (int k = 0; k < d; k++) dp += dOi[(size_t)r * d + k] * Vj[(size_t)c * d + k];
            x->dS(r, c, P, dp, Di, dS);                                    /* l.14 */
        }
    }
    /* l.12: dV_j += P_ij^T dO_i;  l.17: dK_j += scale dS_ij^T Q_i (on chip) */
    for (int c = 0; c < kr; c++)
        for (int k = 0; k < d; k++) {
            float v = 0, kk = 0;
            for (int r = 0; r < qr; r++) {
                v  += Pt[(size_t)r * kr + c] * dOi[(size_t)r * d + k];
                kk += dSt[(size_t)r * kr + c] * Qi[(size_t)r * d + k];
            }
            dVj[(size_t)c * d + k] += v;
            dKj[(size_t)c * d + k] += scale * kk;
        }
    /* l.15-16: dQ_i += scale dS_ij K_j (the tile was read from HBM; it goes back after) */
    for (int r = 0; r < qr; r++)
        for (int k = 0; k < d; k++) {
            float s = 0;
            for (int c = 0; c < kr; c++) s += dSt[(size_t)r * kr + c] * Kj[(size_t)c * d + k];
            x->dQ(r, k, d, scale, s, dQi);
        }
}

/* Q block ranges outside [0, Tr] that bwd_fa2_cpu_parts met (and clamped) in this run */
static long range_faults;
long bwd_range_faults(void) { return range_faults; }

/* This file's own parts (in the reference library: the reference's). */
static const bwd_parts_t OWN = { bwd_q_block_first, bwd_recompute_P, bwd_dS, bwd_dQ };

size_t bwd_fa2_cpu(const attn_inputs_t *in, attn_blocks_t bs, const float *L, const float *D,
                   float *dQ, float *dK, float *dV, hbm_meter_t *meter)
{
    return bwd_fa2_cpu_parts(in, bs, L, D, dQ, dK, dV, meter, &OWN);
}

size_t bwd_fa2_cpu_parts(const attn_inputs_t *in, attn_blocks_t bs, const float *L, const float *D,
                         float *dQ, float *dK, float *dV, hbm_meter_t *meter, const bwd_parts_t *x)
{
    const attn_problem_t *p = &in->p;
    const int d = p->d, Br = bs.Br, Bc = bs.Bc, G = p->H / p->H_kv;
    const int Tr = (p->N_q + Br - 1) / Br, Tc = (p->N_kv + Bc - 1) / Bc;   /* l.1 */
    hbm_meter_t scratch;
    if (!meter) meter = &scratch;
    assert(bwd_sram_bytes(d, bs) <= BWD_SRAM_MAX);

    /* FlashMask (chapter 4c): the preprocessing pass (read the four vectors, write the 8
     * values a column block); a problem without a mask has none */
    mask_blocks_t mb = attn_mask_blocks(p, Bc);
    if (attn_mask(p)) { hbm_read(meter, mask_bytes(attn_mask(p))); hbm_write(meter, 32ull * Tc); }

    sram_t sram;
    sram_init(&sram, bwd_sram_bytes(d, bs));
    float *Kj  = sram_take_f32(&sram, (size_t)Bc * d, "K_j");
    float *Vj  = sram_take_f32(&sram, (size_t)Bc * d, "V_j");
    float *dKj = sram_take_f32(&sram, (size_t)Bc * d, "dK_j");
    float *dVj = sram_take_f32(&sram, (size_t)Bc * d, "dV_j");
    float *Qi  = sram_take_f32(&sram, (size_t)Br * d, "Q_i");
    float *dOi = sram_take_f32(&sram, (size_t)Br * d, "dO_i");
    float *dQi = sram_take_f32(&sram, (size_t)Br * d, "dQ_i");
    float *Pt  = sram_take_f32(&sram, (size_t)Br * Bc, "P_ij");
    float *dSt = sram_take_f32(&sram, (size_t)Br * Bc, "dP_ij, dS_ij");
    float *Li  = sram_take_f32(&sram, (size_t)Br, "L_i");
    float *Di  = sram_take_f32(&sram, (size_t)Br, "D_i");

    /* One thread block per (K/V block, batch, KV head) on the GPU; here in turn. Under GQA
     * it runs the G query heads that share the KV head, so dK_j, dV_j are summed on chip. */
    for (int b = 0; b < p->B; b++)
    for (int hk = 0; hk < p->H_kv; hk++)
    for (int j = 0; j < Tc; j++) {                                          /* l.6 */
        const int kr = p->N_kv - j * Bc < Bc ? p->N_kv - j * Bc : Bc;
        const size_t ko = ((size_t)b * p->H_kv + hk) * (size_t)p->N_kv * d + (size_t)j * Bc * d;
        hbm_load_f16(meter, Kj, in->k_h + ko, (size_t)kr * d);              /* l.7 */
        hbm_load_f16(meter, Vj, in->v_h + ko, (size_t)kr * d);
        memset(dKj, 0, sizeof(float) * (size_t)kr * d);                     /* l.8: on chip */
        memset(dVj, 0, sizeof(float) * (size_t)kr * d);
        int first = x->q_block_first(p, j, Br, Bc);                        /* causal: fewer */
        if (first < 0 || first > Tr) {   /* a wrong causal range: never an index outside [0, Tr] */
            range_faults++;
            first = first < 0 ? 0 : Tr;
        }
        if (attn_mask(p)) hbm_read(meter, 32ull + 16ull * kr);   /* block j's 8 values, its columns' vectors */
        for (int g = 0; g < G; g++) {
            const int h = hk * G + g;
            for (int i = first; i < Tr; i++) {                              /* l.9 */
                const int qr = p->N_q - i * Br < Br ? p->N_q - i * Br : Br;
                /* FlashMask: a fully masked tile is skipped, Q_i and dO_i not read (the element
                 * test of the others is attn_visible()'s, through the mask) */
                if (attn_mask(p) && mask_tile_class(&mb, i * Br, i * Br + qr, j) == MASK_TILE_FULLY_MASKED) continue;
                const size_t qo = attn_q_offset(p, b, h) + (size_t)i * Br * d;
                const size_t lo = attn_l_offset(p, b, h) + (size_t)i * Br;
                hbm_load_f16(meter, Qi, in->q_h + qo, (size_t)qr * d);      /* l.10 */
                hbm_load_f16(meter, dOi, in->do_h + qo, (size_t)qr * d);
                hbm_load_f32(meter, Li, L + lo, (size_t)qr);
                hbm_load_f32(meter, Di, D + lo, (size_t)qr);
                hbm_load_f32(meter, dQi, dQ + qo, (size_t)qr * d);
                bwd_step(p, x, qr, kr, i * Br, j * Bc, Qi, dOi, Li, Di, Kj, Vj, dQi, dKj, dVj, Pt, dSt);
                hbm_store_f32(meter, dQ + qo, dQi, (size_t)qr * d);         /* l.16 (atomic on the GPU) */
            }
        }
        hbm_store_f32(meter, dK + ko, dKj, (size_t)kr * d);                 /* l.19 */
        hbm_store_f32(meter, dV + ko, dVj, (size_t)kr * d);
    }
    mask_blocks_free(&mb);
    size_t peak = sram.peak;
    sram_give_f32(&sram, Di, (size_t)Br);
    sram_give_f32(&sram, Li, (size_t)Br);
    sram_give_f32(&sram, dSt, (size_t)Br * Bc);
    sram_give_f32(&sram, Pt, (size_t)Br * Bc);
    sram_give_f32(&sram, dQi, (size_t)Br * d);
    sram_give_f32(&sram, dOi, (size_t)Br * d);
    sram_give_f32(&sram, Qi, (size_t)Br * d);
    sram_give_f32(&sram, dVj, (size_t)Bc * d);
    sram_give_f32(&sram, dKj, (size_t)Bc * d);
    sram_give_f32(&sram, Vj, (size_t)Bc * d);
    sram_give_f32(&sram, Kj, (size_t)Bc * d);
    return peak;
}

size_t bwd_fa2(const attn_inputs_t *in, attn_blocks_t b, const float *O, const float *L,
               float *dQ, float *dK, float *dV, hbm_meter_t *meter)
{
    float *D = malloc(attn_l_elems(&in->p) * sizeof(float) + 1);
    if (!D) abort();
    bwd_preprocess(in, O, D, dQ, meter);
    size_t peak = bwd_fa2_cpu(in, b, L, D, dQ, dK, dV, meter);
    free(D);
    return peak;
}
