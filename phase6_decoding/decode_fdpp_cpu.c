/* decode_fdpp_cpu.c - FlashDecoding++'s asynchronised softmax in the CPU model (decode.h):
 * a split's step against the unified phi and its window flags, the FD++ combine of a row,
 * the fallback that recomputes a row with the online softmax, and phi's calibration. The
 * splits themselves are decode_cpu.c's dec_cpu_run, with phi.
 */
#include "decode.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "decode_model.h"
#include "fp16.h"
#include "online_softmax.h"
#include "ref.h"

/* FD++'s step for one key (Sec. 3.1): the weight against the unified phi (held in s->m, which
 * never moves), no running max and no rescale; flags records the safe window's two tests
 * (decode.h). A masked key (x = -inf) adds nothing. */
void dec_fdpp_push(online_state_t *s, int *flags, float x, const float *v, int d)
{
    if (x == -INFINITY) return;
    const float z = x - s->m;                        /* x - phi */
    if (z > DEC_PHI_ABOVE) *flags |= FDPP_PASSED;    /* e^z would not fit P's fp16 */
    if (z >= -DEC_PHI_BELOW) *flags |= FDPP_REACHED; /* the row's weights are not all tiny */
    const float w = expf(z);
    s->l += w;
    for (int k = 0; k < d; k++) s->o[k] += w * v[k];
}

/* A split's l_s as written, carrying its window flags in its value (decode.h). */
float dec_fdpp_signed_l(float l, int flags)
{
    if (flags & FDPP_PASSED) return INFINITY;
    return (flags & FDPP_REACHED) ? l : -l;          /* -0.0f for a split with no key */
}

int dec_fdpp_combine_row(int S, int d, float phi, bool has_keys, const float *ls, const float *us,
                         float *o, float *L)
{
    float l = 0;
    bool reached = false;
    for (int s = 0; s < S; s++) {
        if (ls[s] == INFINITY) { memset(o, 0, sizeof(float) * (size_t)d); *L = INFINITY; return 0; }   /* passed the top */
        reached |= ls[s] > 0;
        l += fabsf(ls[s]);
    }
    if (!has_keys) { memset(o, 0, sizeof(float) * (size_t)d); *L = INFINITY; return 1; }   /* no key: O = 0, L = +inf */
    if (!reached) { memset(o, 0, sizeof(float) * (size_t)d); *L = INFINITY; return 0; }  /* every weight tiny */
    for (int k = 0; k < d; k++) {   /* per column, so that o may be us itself when S = 1 */
        float u = 0;
        for (int s = 0; s < S; s++) u += us[(size_t)s * d + k];
        o[k] = u / l;
    }
    *L = phi + logf(l);
    return 1;
}

/* Does row `row` of a sequence of n keys see any key (causal: bottom-right aligned)? */
bool dec_row_has_keys(const attn_problem_t *p, int n, int row)
{
    return n > 0 && (!p->causal || (long)row + (n - p->N_q) >= 0);
}

/* FD++'s fallback for one row: Flash-Decoding's synchronised path, one split over all its
 * keys with the online softmax (chapter 2's running max), written over the combine's O, L.
 * Qi, Kj, Vj, st: SRAM tiles of the caller (Qi one row; it takes O's row at the end). */
void dec_recompute_row(const attn_inputs_t *in, const dec_cache_t *c, attn_blocks_t bl, int b, int h, int row,
                       const uint16_t *Kh, const uint16_t *Vh, size_t pool, float *Qi, float *Kj, float *Vj,
                       online_state_t *st, float *O, float *L, hbm_meter_t *meter)
{
    const attn_problem_t *p = &in->p;
    const int d = p->d, Bc = bl.Bc, n = dec_seqlen(p, c, b), g = attn_kv_head(p, h);
    attn_problem_t pb = *p;
    pb.N_kv = n;
    if (c && c->seqlens_k) hbm_read(meter, sizeof(int));   /* seqlens_k[b] */
    const int kv = dec_visible_keys(p, n, row, 1, Bc);
    REF(online_state_init)(st, d);
    if (kv > 0) hbm_load_f16(meter, Qi, in->q_h + attn_q_offset(p, b, h) + (size_t)row * d, (size_t)d);
    for (int j0 = 0; j0 < kv; j0 += Bc) {
        const int kr = kv - j0 < Bc ? kv - j0 : Bc;
        dec_load_kv_block(p, c, b, g, j0, kr, Kh, Vh, pool, Kj, Vj, meter);
        for (int cc = 0; cc < kr; cc++) {
            float x = -INFINITY;
            if (attn_visible(&pb, row, j0 + cc)) {
                float acc = 0;
                for (int k = 0; k < d; k++) acc += Qi[k] * Kj[(size_t)cc * d + k];
                x = acc * p->scale;
            }
            REF(online_state_push)(st, x, Vj + (size_t)cc * d, d);
        }
    }
    float Lr;
    REF(online_state_finish)(st, d, Qi, &Lr);   /* Q_i's tile takes the O row */
    hbm_store_f32(meter, O + attn_q_offset(p, b, h) + (size_t)row * d, Qi, (size_t)d);
    hbm_store_f32(meter, L + attn_l_offset(p, b, h) + row, &Lr, 1);
}


static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

float dec_phi_calibrate(const attn_inputs_t *in, const dec_cache_t *c)
{
    enum { ROWS = 64, KEYS = 1024 };
    const attn_problem_t *p = &in->p;
    const int d = p->d;
    const bool paged = c && c->page > 0;
    const uint16_t *Kh = paged ? c->k_pool : in->k_h;
    const size_t pool = paged ? (size_t)c->n_pages * p->H_kv * c->page * d : 0;
    const long R = (long)p->B * p->H * p->N_q;
    const int rows = R < ROWS ? (int)R : ROWS;
    float best[ROWS], q[P2_MAX_D];
    int n_best = 0;
    for (int t = 0; t < rows; t++) {
        const long idx = (long)t * R / rows;              /* rows spread through (b, h, row) */
        const int b = (int)(idx / ((long)p->H * p->N_q)), h = (int)(idx / p->N_q % p->H), row = (int)(idx % p->N_q);
        const int n = dec_seqlen(p, c, b);
        if (!dec_row_has_keys(p, n, row)) continue;
        const long last = p->causal ? (long)row + (n - p->N_q) : n - 1;   /* its last visible key */
        const int keys = last + 1 < KEYS ? (int)(last + 1) : KEYS;
        for (int k = 0; k < d; k++) q[k] = f16_to_f32(in->q_h[attn_q_offset(p, b, h) + (size_t)row * d + k]);
        float m = -INFINITY;
        for (int u = 0; u < keys; u++) {
            const int j = (int)((long)u * (last + 1) / keys);   /* keys spread through the cache */
            const size_t kr = dec_kv_row(p, c, b, attn_kv_head(p, h), j);
            if (paged && kr + d > pool) continue;   /* a wrong page lookup: the splits count it */
            float acc = 0;
            for (int k = 0; k < d; k++) acc += q[k] * f16_to_f32(Kh[kr + k]);
            m = fmaxf(m, acc * p->scale);
        }
        best[n_best++] = m;
    }
    if (n_best == 0) return 0.0f;
    qsort(best, (size_t)n_best, sizeof best[0], cmp_float);
    return best[n_best / 2];
}
