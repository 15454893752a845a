/* online_cpu.c - phase 2 on the CPU: naive, safe (3-pass) and online (2-pass) softmax,
 * the (m, l, o) state of 1-pass attention and its merge. See online_softmax.h for the
 * equations; docs/02_online_softmax.md derives them.
 *
 * Each softmax reads its "HBM" row x and writes y only through the meter, one tile of
 * P2_TILE elements at a time, so the accesses per element are counted: a pass that needs
 * x again must load it again, exactly as a GPU kernel whose row does not fit on chip.
 */
#include "online_softmax.h"
#include <math.h>
#include <string.h>

/* ---- softmax, three ways ------------------------------------------------------------ */

/* Naive: l = sum_j e^{x_j} (1 load), y_j = e^{x_j} / l (1 load + 1 store) = 3 accesses.
 * No max is subtracted: e^{x} overflows fp32 for x > 88.7, and then l = inf. */
void softmax_naive_cpu(const float *x, float *y, int n, hbm_meter_t *meter)
{
    float t[P2_TILE], l = 0.0f;
    for (int j0 = 0; j0 < n; j0 += P2_TILE) {                    /* pass 1: l */
        int len = n - j0 < P2_TILE ? n - j0 : P2_TILE;
        hbm_load_f32(meter, t, x + j0, (size_t)len);
        float lt = 0.0f;                          /* per-tile partial sum (see below) */
        for (int k = 0; k < len; k++) lt += expf(t[k]);
        l += lt;
    }
    for (int j0 = 0; j0 < n; j0 += P2_TILE) {                    /* pass 2: y */
        int len = n - j0 < P2_TILE ? n - j0 : P2_TILE;
        hbm_load_f32(meter, t, x + j0, (size_t)len);
        for (int k = 0; k < len; k++) t[k] = expf(t[k]) / l;
        hbm_store_f32(meter, y + j0, t, (size_t)len);
    }
}

/* Safe: m (1 load), l = sum e^{x_j - m} (1 load), y (1 load + 1 store) = 4 accesses.
 * Every exponent is <= 0, so nothing overflows. */
void softmax_safe_cpu(const float *x, float *y, int n, hbm_meter_t *meter)
{
    float t[P2_TILE], m = -INFINITY, l = 0.0f;
    for (int j0 = 0; j0 < n; j0 += P2_TILE) {                    /* pass 1: m */
        int len = n - j0 < P2_TILE ? n - j0 : P2_TILE;
        hbm_load_f32(meter, t, x + j0, (size_t)len);
        for (int k = 0; k < len; k++) m = fmaxf(m, t[k]);
    }
    for (int j0 = 0; j0 < n; j0 += P2_TILE) {                    /* pass 2: l */
        int len = n - j0 < P2_TILE ? n - j0 : P2_TILE;
        hbm_load_f32(meter, t, x + j0, (size_t)len);
        float lt = 0.0f;   /* a partial sum per tile, then the tiles' sums: one long fp32
                              running sum over 64k terms would drift by ~5e-5 (rel) */
        if (m != -INFINITY)                      /* all -inf: l stays 0 (not e^{NaN}) */
            for (int k = 0; k < len; k++) lt += expf(t[k] - m);
        l += lt;
    }
    for (int j0 = 0; j0 < n; j0 += P2_TILE) {                    /* pass 3: y */
        int len = n - j0 < P2_TILE ? n - j0 : P2_TILE;
        hbm_load_f32(meter, t, x + j0, (size_t)len);
        for (int k = 0; k < len; k++) t[k] = m == -INFINITY ? 0.0f : expf(t[k] - m) / l;
        hbm_store_f32(meter, y + j0, t, (size_t)len);
    }
}

/* The online normaliser (Milakov & Gimelshein, Alg. 3 lines 3-6):
 *   m_i = max(m_{i-1}, x_i)       d_i = d_{i-1} e^{m_{i-1} - m_i} + e^{x_i - m_i}
 * (d is our l). When the max does not move, the factor is e^0 = 1; when it grows, the
 * sum so far is re-expressed against the new max. */
void online_ml_update(float *m, float *l, float x)
{
    if (x == -INFINITY) return;    /* masked: adds e^{-inf} = 0; and -inf - -inf is NaN */
    /* TODO EXERCISE p2.ml_update: fold score x into the running max *m and running sum *l
     * HINT: new max first; then *l = *l * e^{old max - new max} + e^{x - new max}.
     * HINT: with *m = -inf (nothing seen yet) expf(-inf) = 0, so no special case is needed. */
    (void)m; (void)l;
    /* END EXERCISE p2.ml_update */
}

/* Online: pass 1 keeps (m, l) together (1 load), pass 2 writes y (1 load + 1 store)
 * = 3 accesses. More exponentials than the safe version (one rescale per element), one
 * pass fewer over memory. */
void softmax_online_cpu(const float *x, float *y, int n, hbm_meter_t *meter)
{
    float t[P2_TILE], m = -INFINITY, l = 0.0f;
    for (int j0 = 0; j0 < n; j0 += P2_TILE) {                    /* pass 1: m and l */
        int len = n - j0 < P2_TILE ? n - j0 : P2_TILE;
        hbm_load_f32(meter, t, x + j0, (size_t)len);
        /* the tile's own (m, l) element by element, then merged into the row's by
         * online_state_merge() below (the o part of a state has d = 0 elements here): the
         * same result as one running pair, with the fp32 sum kept short (as above) */
        online_state_t row, tile;   /* only m and l: merged with d = 0 (no o) */
        row.m = m; row.l = l;
        tile.m = -INFINITY; tile.l = 0.0f;
        for (int k = 0; k < len; k++) online_ml_update(&tile.m, &tile.l, t[k]);
        online_state_merge(&row, &tile, 0);
        m = row.m; l = row.l;
    }
    for (int j0 = 0; j0 < n; j0 += P2_TILE) {                    /* pass 2: y */
        int len = n - j0 < P2_TILE ? n - j0 : P2_TILE;
        hbm_load_f32(meter, t, x + j0, (size_t)len);
        for (int k = 0; k < len; k++) t[k] = m == -INFINITY ? 0.0f : expf(t[k] - m) / l;
        hbm_store_f32(meter, y + j0, t, (size_t)len);
    }
}

/* ---- the state of 1-pass attention ------------------------------------------------- */

void online_state_init(online_state_t *s, int d)
{
    s->m = -INFINITY;
    s->l = 0.0f;
    memset(s->o, 0, (size_t)d * sizeof(float));
}

/* o_i = o_{i-1} e^{m_{i-1} - m_i} + e^{x_i - m_i} v_i: the weighted sum is kept against
 * the current max, exactly like l, and divided by l only once, at the end. */
void online_state_push(online_state_t *s, float x, const float *v, int d)
{
    if (x == -INFINITY) return;                /* a masked key adds nothing */
    float m_old = s->m;
    online_ml_update(&s->m, &s->l, x);         /* m_i and l_i */
    float alpha = expf(m_old - s->m);          /* e^{m_{i-1} - m_i}; 0 when m_old = -inf */
    float p = expf(x - s->m);                  /* e^{x_i - m_i}: this key's weight now */
    /* TODO EXERCISE p2.o_update: update the unnormalised output o with key value v
     * HINT: the old sum is rescaled by alpha (its max moved), the new key adds p * v;
     * HINT: for every c < d: o[c] = o[c] * alpha + p * v[c] */
    (void)alpha; (void)p; (void)v; (void)d;
    /* END EXERCISE p2.o_update */
}

/* (m1, l1, o1) (+) (m2, l2, o2): both sums re-expressed against the larger max.
 * Commutative and associative (up to fp32 rounding), so blocks of keys may be processed
 * in any order and combined in any order. */
void online_state_merge(online_state_t *a, const online_state_t *b, int d)
{
    if (b->m == -INFINITY) return;             /* b saw no visible key: identity */
    if (a->m == -INFINITY) {                   /* a saw none: the result is b */
        a->m = b->m;
        a->l = b->l;
        memcpy(a->o, b->o, (size_t)d * sizeof(float));
        return;
    }
    /* TODO EXERCISE p2.merge: combine state b into state a
     * HINT: m = max(a->m, b->m); scale a's l and o by e^{a->m - m} and b's by e^{b->m - m},
     * HINT: then add them: a->l = a->l * ca + b->l * cb, and the same for every o[c]. */
    (void)d;
    /* END EXERCISE p2.merge */
}

void online_state_finish(const online_state_t *s, int d, float *o, float *L)
{
    if (s->m == -INFINITY) {                   /* fully masked row: O = 0, L = +inf */
        memset(o, 0, (size_t)d * sizeof(float));
        *L = INFINITY;
        return;
    }
    float inv = 1.0f / s->l;
    for (int c = 0; c < d; c++) o[c] = s->o[c] * inv;
    *L = s->m + logf(s->l);
}

/* ---- 1-pass attention over the problem ---------------------------------------------- */

/* One query row: stream keys [j0, j1) into s. x_j = scale * q . k_j (fp32 accumulate).
 * Invisible keys (causal) are skipped, not read: they would only add -inf. */
static void stream_keys(const attn_inputs_t *in, int b, int h, int i, const float *q,
                        int j0, int j1, online_state_t *s, hbm_meter_t *meter)
{
    const attn_problem_t *p = &in->p;
    int d = p->d;
    const uint16_t *K = in->k_h + attn_kv_offset(p, b, h), *V = in->v_h + attn_kv_offset(p, b, h);
    float k[P2_MAX_D], v[P2_MAX_D];
    for (int j = j0; j < j1; j++) {
        if (!attn_visible(p, i, j)) continue;
        hbm_load_f16(meter, k, K + (size_t)j * d, (size_t)d);
        float x = 0.0f;
        for (int c = 0; c < d; c++) x += q[c] * k[c];
        hbm_load_f16(meter, v, V + (size_t)j * d, (size_t)d);
        online_state_push(s, x * p->scale, v, d);
    }
}

/* Shared by both entry points: Bc = 0 streams all keys into one state. */
static void attn_rows(const attn_inputs_t *in, int Bc, int reverse, float *O, float *L,
                      hbm_meter_t *meter)
{
    const attn_problem_t *p = &in->p;
    int d = p->d;
    online_state_t s, blk;
    float q[P2_MAX_D], o[P2_MAX_D], Li;
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->H; h++)
            for (int i = 0; i < p->N_q; i++) {
                size_t qo = attn_q_offset(p, b, h) + (size_t)i * d;
                hbm_load_f16(meter, q, in->q_h + qo, (size_t)d);
                online_state_init(&s, d);
                if (Bc <= 0) {
                    stream_keys(in, b, h, i, q, 0, p->N_kv, &s, meter);
                } else {
                    int Tc = (p->N_kv + Bc - 1) / Bc;
                    for (int t = 0; t < Tc; t++) {
                        int jb = reverse ? Tc - 1 - t : t;
                        int j1 = (jb + 1) * Bc < p->N_kv ? (jb + 1) * Bc : p->N_kv;
                        online_state_init(&blk, d);
                        stream_keys(in, b, h, i, q, jb * Bc, j1, &blk, meter);
                        online_state_merge(&s, &blk, d);
                    }
                }
                online_state_finish(&s, d, o, &Li);
                hbm_store_f32(meter, O + qo, o, (size_t)d);
                hbm_store_f32(meter, L + attn_l_offset(p, b, h) + i, &Li, 1);
            }
}

void online_attn_cpu(const attn_inputs_t *in, float *O, float *L, hbm_meter_t *meter)
{ attn_rows(in, 0, 0, O, L, meter); }

void online_attn_split_cpu(const attn_inputs_t *in, int Bc, int reverse,
                           float *O, float *L, hbm_meter_t *meter)
{ attn_rows(in, Bc > 0 ? Bc : 1, reverse, O, L, meter); }

double online_attn_traffic(const attn_problem_t *p)
{
    double bytes = 0, d = p->d;
    for (int i = 0; i < p->N_q; i++)
        bytes += 2 * d + 4 * d * attn_visible_count(p, i) + 4 * d + 4;
    return bytes * p->B * p->H;
}
