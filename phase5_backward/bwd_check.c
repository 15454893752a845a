/* bwd_check.c - the checks of phase 5's models beyond the oracle's comparison:
 *   - the causal range of bwd_q_block_first() against a brute-force scan of the mask:
 *     whatever a shape's N_q, N_kv and blocks, K/V block j must visit exactly the Q blocks
 *     that hold an entry of its columns some row may see, and no more;
 *   - which exercise a wrong gradient comes from (bwd_blame): each part checked alone,
 *     every other part the reference's, so that a one-line mistake names one exercise;
 *   - the FA2 model at scores past exp's fp32 range (bwd_check_hot). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bwd.h"
#include "fa2.h"
#include "fp16.h"

int bwd_check_causal_range(const attn_problem_t *p, attn_blocks_t bl, char *why, size_t len)
{
    attn_problem_t pm = *p;
    pm.causal = true;
    pm.mask_id = 0;   /* the causal rule alone, whatever mask the problem has */
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

int bwd_unit_causal_range(char *why, size_t len)
{
    static const attn_blocks_t BL[] = {{64, 64}, {64, 128}, {128, 64}, {32, 16}, {16, 16}, {3, 5}, {1, 1}};
    return attn_range_units(bwd_check_causal_range, BL, (int)(sizeof BL / sizeof BL[0]), why, len);
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

/* ---- naming the exercise behind a wrong gradient ------------------------------------- */
enum { EX_CAUSAL, EX_D, EX_P, EX_DS, EX_DQ, EX_N };
static const char *const EX_NAME[EX_N] = {"bwd.causal_range", "bwd.D", "bwd.recompute_P", "bwd.dS", "bwd.dQ"};

/* The list of the exercises in mask, ", "-separated; one string per mask, kept for the run
 * (a row holds the pointer). */
static const char *ex_list(unsigned mask)
{
    static char lists[1u << EX_N][96];
    char *s = lists[mask];
    if (!s[0])
        for (int e = 0; e < EX_N; e++)
            if (mask >> e & 1u) {
                size_t at = strlen(s);
                snprintf(s + at, sizeof lists[0] - at, "%s%s", at ? ", " : "", EX_NAME[e]);
            }
    return s;
}

const char *bwd_blame(const attn_inputs_t *in, attn_blocks_t bl, const float *O, const float *L,
                      double *const ref[3], const tol_t *tol)
{
    const tol_t cpu[3] = { tol_cpu(), tol_cpu(), tol_cpu() };
    if (!tol) tol = cpu;
    const attn_problem_t *p = &in->p;
    const size_t nq = attn_q_elems(p), nk = attn_kv_elems(p), nl = attn_l_elems(p), n[3] = { nq, nk, nk };
    unsigned bad = 0;
    char why[160];
    if (bwd_check_causal_range(p, bl, why, sizeof why) != 0) bad |= 1u << EX_CAUSAL;
    /* D: the student's preprocess against rowsum(dO * O) in fp64 (dO's fp16 values) */
    float *D = xmalloc(nl * sizeof(float), "bwd_blame"), *g[3];
    double *Dref = xmalloc(nl * sizeof(double), "bwd_blame");
    for (int t = 0; t < 3; t++) g[t] = xmalloc(n[t] * sizeof(float), "bwd_blame");
    bwd_preprocess(in, O, D, g[0], NULL);
    for (size_t row = 0; row < nl; row++) {
        double s = 0;
        for (int c = 0; c < p->d; c++) s += (double)in->dO[row * p->d + c] * O[row * p->d + c];
        Dref[row] = s;
    }
    err_stats_t e = err_compare(D, Dref, nl, tol_cpu());
    if (!err_pass(&e, tol_cpu())) bad |= 1u << EX_D;
    /* recompute_P, dS, dQ: the reference model (and its D) with that one part the student's */
    REF(bwd_preprocess)(in, O, D, g[0], NULL);
    for (int part = EX_P; part <= EX_DQ; part++) {
        bwd_parts_t x = { REF(bwd_q_block_first), REF(bwd_recompute_P), REF(bwd_dS), REF(bwd_dQ) };
        if (part == EX_P) x.recompute_P = bwd_recompute_P;
        if (part == EX_DS) x.dS = bwd_dS;
        if (part == EX_DQ) x.dQ = bwd_dQ;
        memset(g[0], 0, nq * sizeof(float));   /* dQ = 0 (Alg. 2 l.5) */
        REF(bwd_fa2_cpu_parts)(in, bl, L, D, g[0], g[1], g[2], NULL, &x);
        for (int t = 0; t < 3; t++) {
            e = err_compare(g[t], ref[t], n[t], tol[t]);
            if (!err_pass(&e, tol[t])) bad |= 1u << part;
        }
    }
    for (int t = 0; t < 3; t++) free(g[t]);
    free(D); free(Dref);
    return ex_list(bad ? bad : (1u << EX_N) - 1);   /* none alone: all of them */
}

void bwd_blame_row(drv_row_t *r, const attn_inputs_t *in, attn_blocks_t bl, const float *O, const float *L,
                   double *const ref[3], const tol_t *tol)
{
    if (drv_failed(r) && !r->exercises) r->exercises = bwd_blame(in, bl, O, L, ref, tol);
}

double bwd_hot_inputs(attn_inputs_t *in, int d, int N, uint64_t seed)
{
    attn_problem_t p = attn_problem(1, 2, 1, N, N, d, true);
    if (attn_inputs_make(in, &p, seed, true) != 0) { fprintf(stderr, "phase5: out of host memory\n"); exit(1); }
    /* every row of Q and K becomes c + (its values - their mean): S = scale (c^2 d + the
     * noise's dot product), so every score is near c^2 sqrt(d) = 128 (the mean-free noise
     * adds nothing through c) and S - L stays of the order of the noise */
    const float c = f16_round(sqrtf(128.0f / sqrtf((float)d)));
    for (int t = 0; t < 2; t++) {
        float *x = t == 0 ? in->q : in->k;
        uint16_t *xh = t == 0 ? in->q_h : in->k_h;
        const size_t rows = t == 0 ? attn_l_elems(&p) : (size_t)p.B * p.H_kv * p.N_kv;
        for (size_t row = 0; row < rows; row++) {
            float *v = x + row * d, mean = 0;
            for (int k = 0; k < d; k++) mean += v[k] / d;
            for (int k = 0; k < d; k++) v[k] = f16_round(c + (v[k] - mean));
        }
        f32_to_f16_array(xh, x, rows * d);
    }
    double smin = INFINITY;   /* the premise, measured: the smallest score a row sees */
    for (int h = 0; h < p.H; h++)
        for (int i = 0; i < N; i++)
            for (int j = 0; j < attn_visible_count(&p, i); j++) {
                const float *q = in->q + attn_q_offset(&p, 0, h) + (size_t)i * d, *k = in->k + attn_kv_offset(&p, 0, h) + (size_t)j * d;
                double x = 0;
                for (int e = 0; e < d; e++) x += (double)q[e] * k[e];
                smin = fmin(smin, x * p.scale);
            }
    return smin;
}

void bwd_check_hot(drv_row_t *r, int d, attn_blocks_t bl, uint64_t seed)
{
    attn_inputs_t in;
    const double smin = bwd_hot_inputs(&in, d, 2 * bl.Bc + 7, seed);   /* three K/V blocks (a tail), several Q blocks */
    const attn_problem_t p = in.p;
    if (!(smin > BWD_EXP_MAX)) drv_fail(r, "the check's own problem: a score of %.1f, not past exp's fp32 range", smin);
    const size_t nq = attn_q_elems(&p), nk = attn_kv_elems(&p), n[3] = { nq, nk, nk };
    float *O = xmalloc(nq * sizeof(float), "phase5"), *L = xmalloc(attn_l_elems(&p) * sizeof(float), "phase5");
    REF(fa2_cpu)(&in, (attn_blocks_t){ 64, 64 }, O, L, NULL, NULL);
    double *ref[3];
    float *g[3], *y[3];
    for (int t = 0; t < 3; t++) {
        ref[t] = xmalloc(n[t] * sizeof(double), "phase5");
        g[t] = xmalloc(n[t] * sizeof(float), "phase5");
        y[t] = xmalloc(n[t] * sizeof(float), "phase5");
    }
    REF(oracle_bwd)(&p, in.q, in.k, in.v, in.dO, ref[0], ref[1], ref[2]);
    REF(bwd_fa2)(&in, bl, O, L, y[0], y[1], y[2], NULL);   /* the reference model: the yardstick */
    bwd_fa2(&in, bl, O, L, g[0], g[1], g[2], NULL);
    static const char *const NAME[3] = {"dQ", "dK", "dV"};
    tol_t tol[3];
    for (int t = 0; t < 3; t++) {
        /* the 2x rule against the reference model's own fp32 error on these scores */
        const err_stats_t ey = err_compare(y[t], ref[t], n[t], tol_cpu());
        tol[t] = (tol_t){ fmax(2.0 * ey.rel_l2, TOL_CPU_REL_L2), 2.0 * ey.max_abs + TOL_ABS_SLACK, false };
        drv_compare(r, "scores near 128 (exp(S) overflows past 88): vs the fp64 oracle_bwd", NAME[t], g[t], ref[t],
                    n[t], d, tol[t], false, NULL);
    }
    bwd_blame_row(r, &in, bl, O, L, ref, tol);
    for (int t = 0; t < 3; t++) { free(ref[t]); free(g[t]); free(y[t]); }
    free(O); free(L);
    attn_inputs_free(&in);
}
