/* fa1_cpu.c - the CPU tile model of FlashAttention-1 (Dao et al. 2022, Algorithm 1).
 *
 * Plain C, fp32 math, the loop order and block sizes of the paper. The "HBM" arrays are
 * the caller's (Q, K, V as fp16 bits; O, l, m as fp32) and every touch of them goes
 * through the meter; the "SRAM" tiles come from an sram_t of M bytes, so the model can
 * only hold what Alg. 1 says it holds. The GPU kernels (fa1_simple.cu, fa1_mma.cu) do
 * the same steps with the same HBM round trips.
 */
#include "fa1.h"
#include "driver.h"
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t fa1_sram_bytes(int d, attn_blocks_t b)
{
    size_t Br = (size_t)b.Br, Bc = (size_t)b.Bc, D = (size_t)d;
    return sizeof(float) * (2 * Br * D      /* Q_i, O_i  */
                          + 2 * Bc * D      /* K_j, V_j  */
                          + Br * Bc         /* S_ij = P~_ij, overwritten in place */
                          + 2 * Br);        /* l_i, m_i  */
}

size_t fa1_min_sram(int d) { attn_blocks_t one = { 1, 1 }; return fa1_sram_bytes(d, one); }

int fa1_block_sizes(size_t M_bytes, int d, attn_blocks_t *b)
{
    size_t M = M_bytes / sizeof(float);      /* the paper counts M in elements */
    /* TODO EXERCISE fa1.blocks: block sizes from the SRAM size M (Alg. 1 l.1)
     * HINT: Bc is M/(4d) rounded up (K_j, V_j, Q_i, O_i take about a quarter of M each);
     * HINT: Br is the same but never more than d. */
    size_t Bc = 1, Br = 1; (void)M;
    /* END EXERCISE fa1.blocks */
    /* The paper's rule is an O(M) statement: four d-wide tiles of M/4 each already fill M,
     * and S_ij (Br x Bc) and the row statistics need room too. Keep the paper's Bc as the
     * upper end and lower it until every tile fits; Br follows min(Bc, d). */
    attn_blocks_t t = { (int)Br, (int)Bc };
    while (t.Bc > 1 && fa1_sram_bytes(d, t) > M_bytes) {
        t.Bc--;
        if (t.Br > t.Bc) t.Br = t.Bc;
    }
    if (t.Bc < 1 || fa1_sram_bytes(d, t) > M_bytes) return -1;
    *b = t;
    return 0;
}

fa1_traffic_t fa1_hbm_traffic(const attn_problem_t *p, int Bc)
{
    double heads = (double)p->B * p->H, nq = p->N_q, nkv = p->N_kv, d = p->d;
    double Tc = ceil(nkv / Bc);
    fa1_traffic_t t;
    t.init_olm  = heads * 4.0 * nq * (d + 2);          /* l.2: O = 0, l = 0, m = -inf     */
    t.read_kv   = heads * 2.0 * 2.0 * nkv * d;         /* l.6: K_j, V_j once each (fp16)  */
    t.read_q    = heads * Tc * 2.0 * nq * d;           /* l.8: Q_i once per j (fp16)      */
    t.read_olm  = heads * Tc * 4.0 * nq * (d + 2);     /* l.8: O_i, l_i, m_i once per j   */
    t.write_olm = heads * Tc * 4.0 * nq * (d + 2);     /* l.12-13: written back per j     */
    t.total = t.init_olm + t.read_kv + t.read_q + t.read_olm + t.write_olm;
    return t;
}

double fa1_hbm_bytes(const attn_problem_t *p, int Bc) { return fa1_hbm_traffic(p, Bc).total; }

/* fa1-mma's FA1_BLOCK_SKIP (fa1.h): the same terms, with pass j's Q-block terms taken
 * over the R_j rows it visits instead of all N_q (the kernel reads and writes only the
 * real rows of a tail block, as the model does). */
fa1_traffic_t fa1_hbm_traffic_skip(const attn_problem_t *p, attn_blocks_t b)
{
    double heads = (double)p->B * p->H, nq = p->N_q, nkv = p->N_kv, d = p->d;
    const int Tc = (p->N_kv + b.Bc - 1) / b.Bc;
    double rows = 0;                                     /* sum over j of R_j */
    for (int j = 0; j < Tc; j++) rows += p->N_q - (double)b.Br * fa1_first_q_block(p, j, b.Bc, b.Br);
    fa1_traffic_t t;
    t.init_olm  = heads * 4.0 * nq * (d + 2);          /* l.2: every row, visited or not  */
    t.read_kv   = heads * 2.0 * 2.0 * nkv * d;         /* l.6: every pass keeps a Q block */
    t.read_q    = heads * 2.0 * rows * d;              /* l.8: visited Q rows (fp16)      */
    t.read_olm  = heads * 4.0 * rows * (d + 2);        /* l.8: their O_i, l_i, m_i        */
    t.write_olm = heads * 4.0 * rows * (d + 2);        /* l.12-13                         */
    t.total = t.init_olm + t.read_kv + t.read_q + t.read_olm + t.write_olm;
    return t;
}

double fa1_hbm_bytes_skip(const attn_problem_t *p, attn_blocks_t b) { return fa1_hbm_traffic_skip(p, b).total; }

/* fa1_first_q_block() is fa1.h's closed form, not an exercise: no REF needed */
void fa1_visits_want(struct drv_visits *v, const attn_problem_t *p, attn_blocks_t b, fa1_variant_t variant)
{
    const int Tr = (p->N_q + b.Br - 1) / b.Br, Tc = (p->N_kv + b.Bc - 1) / b.Bc;
    drv_visits_init(v, Tc, "K/V block", "Q blocks", "the causal range", NULL);
    for (int j = 0; j < Tc; j++)
        v->want[j] = (unsigned long long)p->B * p->H *
                     (Tr - (variant == FA1_BLOCK_SKIP ? fa1_first_q_block(p, j, b.Bc, b.Br) : 0));
}

void fa1_lse(const float *l, const float *m, float *L, size_t n)
{
    for (size_t r = 0; r < n; r++) L[r] = l[r] > 0 ? m[r] + logf(l[r]) : INFINITY;
}

/* One step (i, j) of Alg. 1 l.9-13 on tiles already in SRAM: qr valid rows of Q_i
 * (global row i0 + r: i0 = i Br, Q_i's first row), kr valid rows of K_j, V_j (global
 * key j0 + c: j0 = j Bc). m_t, l_t are the paper's m~_ij, l~_ij (this block's row max
 * and sum); mi, li the running m_i, l_i. The factors e^(m_old - m_new) are fa1_rescale()
 * (fa1.h): 0 for a row that has seen no key yet. */
static void fa1_step(const attn_problem_t *p, int qr, int kr, int i0, int j0,
                     const float *Qi, const float *Kj, const float *Vj,
                     float *Oi, float *li, float *mi, float *S)
{
    const int d = p->d, Bc = kr;   /* the row stride of S is the tile's Bc; kr <= Bc */
    for (int r = 0; r < qr; r++) {
        float *s = S + (size_t)r * Bc, *o = Oi + (size_t)r * d;
        /* Alg. 1 l.9: S_ij = Q_i K_j^T (scaled; masked entries -inf, l.9 with a mask) */
        for (int c = 0; c < kr; c++) {
            float acc = 0;
            for (int k = 0; k < d; k++) acc += Qi[(size_t)r * d + k] * Kj[(size_t)c * d + k];
            s[c] = attn_visible(p, i0 + r, j0 + c) ? acc * p->scale : -INFINITY;
        }
        /* l.10: m~ = rowmax(S), P~ = exp(S - m~) (in place of S), l~ = rowsum(P~) */
        float m_t = -INFINITY, l_t = 0;
        for (int c = 0; c < kr; c++) m_t = fmaxf(m_t, s[c]);
        for (int c = 0; c < kr; c++) {
            s[c] = m_t == -INFINITY ? 0.0f : expf(s[c] - m_t);
            l_t += s[c];
        }
        /* TODO EXERCISE fa1.ml: the new running max and sum (Alg. 1 l.11)
         * HINT: m_new is the larger of the old max m_i[r] and this block's m_t;
         * HINT: both sums are rescaled to m_new before adding: use fa1_rescale(m_old, m_new). */
        float m_new = mi[r], l_new = li[r];
        /* END EXERCISE fa1.ml */
        /* l.12: O_i <- diag(l_new)^-1 (diag(l_i) e^(m_i - m_new) O_i + e^(m~ - m_new) P~ V_j) */
        float a = fa1_rescale(mi[r], m_new) * li[r], b = fa1_rescale(m_t, m_new);
        float inv = l_new > 0 ? 1.0f / l_new : 0.0f;    /* no key seen yet: O stays 0 */
        for (int k = 0; k < d; k++) {
            float pv = 0;
            for (int c = 0; c < kr; c++) pv += s[c] * Vj[(size_t)c * d + k];
            /* TODO EXERCISE fa1.rescale: rescale the old O_i and add this block's P~ V_j (Alg. 1 l.12)
             * HINT: o[k] holds the normalised output so far; a = l_i e^(m_i - m_new) undoes
             * HINT: that normalisation, b = e^(m~ - m_new) weighs pv; divide by l_new (times inv). */
            (void)a; (void)b; (void)pv; (void)inv; (void)o;
            /* END EXERCISE fa1.rescale */
        }
        /* l.13: l_i <- l_new, m_i <- m_new (written to HBM by the caller with O_i) */
        li[r] = l_new;
        mi[r] = m_new;
    }
}

size_t fa1_cpu(const attn_inputs_t *in, attn_blocks_t bs, size_t M_bytes,
               float *O, float *l, float *m, hbm_meter_t *meter)
{
    const attn_problem_t *p = &in->p;
    const int d = p->d, Br = bs.Br, Bc = bs.Bc;
    const int Tr = (p->N_q + Br - 1) / Br, Tc = (p->N_kv + Bc - 1) / Bc;   /* l.3-4 */
    hbm_meter_t scratch;
    if (!meter) meter = &scratch;

    /* The SRAM of Alg. 1: everything the inner loop touches, inside M bytes. */
    sram_t sram;
    sram_init(&sram, M_bytes);
    float *Qi = sram_take_f32(&sram, (size_t)Br * d, "Q_i");
    float *Oi = sram_take_f32(&sram, (size_t)Br * d, "O_i");
    float *Kj = sram_take_f32(&sram, (size_t)Bc * d, "K_j");
    float *Vj = sram_take_f32(&sram, (size_t)Bc * d, "V_j");
    float *S  = sram_take_f32(&sram, (size_t)Br * Bc, "S_ij");
    float *li = sram_take_f32(&sram, (size_t)Br, "l_i");
    float *mi = sram_take_f32(&sram, (size_t)Br, "m_i");
    assert(sram.used == fa1_sram_bytes(d, bs));

    /* FA1's parallelism: one thread block per (batch, head); here, one after the other. */
    for (int b = 0; b < p->B; b++)
    for (int h = 0; h < p->H; h++) {
        const uint16_t *Q = in->q_h + attn_q_offset(p, b, h);
        const uint16_t *K = in->k_h + attn_kv_offset(p, b, h);   /* GQA by index */
        const uint16_t *V = in->v_h + attn_kv_offset(p, b, h);
        float *Oh = O + attn_q_offset(p, b, h);
        float *lh = l + attn_l_offset(p, b, h), *mh = m + attn_l_offset(p, b, h);

        /* l.2: O = 0, l = 0, m = -inf in HBM, written from zeroed tiles */
        for (int i = 0; i < Tr; i++) {
            int qr = p->N_q - i * Br < Br ? p->N_q - i * Br : Br;
            memset(Oi, 0, sizeof(float) * (size_t)qr * d);
            for (int r = 0; r < qr; r++) { li[r] = 0; mi[r] = -INFINITY; }
            hbm_store_f32(meter, Oh + (size_t)i * Br * d, Oi, (size_t)qr * d);
            hbm_store_f32(meter, lh + (size_t)i * Br, li, (size_t)qr);
            hbm_store_f32(meter, mh + (size_t)i * Br, mi, (size_t)qr);
        }
        for (int j = 0; j < Tc; j++) {                                       /* l.5 */
            int kr = p->N_kv - j * Bc < Bc ? p->N_kv - j * Bc : Bc;          /* tail */
            hbm_load_f16(meter, Kj, K + (size_t)j * Bc * d, (size_t)kr * d); /* l.6 */
            hbm_load_f16(meter, Vj, V + (size_t)j * Bc * d, (size_t)kr * d);
            for (int i = 0; i < Tr; i++) {                                   /* l.7 */
                int qr = p->N_q - i * Br < Br ? p->N_q - i * Br : Br;
                float *Og = Oh + (size_t)i * Br * d, *lg = lh + (size_t)i * Br, *mg = mh + (size_t)i * Br;
                hbm_load_f16(meter, Qi, Q + (size_t)i * Br * d, (size_t)qr * d); /* l.8 */
                hbm_load_f32(meter, Oi, Og, (size_t)qr * d);
                hbm_load_f32(meter, li, lg, (size_t)qr);
                hbm_load_f32(meter, mi, mg, (size_t)qr);
                fa1_step(p, qr, kr, i * Br, j * Bc, Qi, Kj, Vj, Oi, li, mi, S); /* l.9-11 */
                hbm_store_f32(meter, Og, Oi, (size_t)qr * d);                /* l.12 */
                hbm_store_f32(meter, lg, li, (size_t)qr);                    /* l.13 */
                hbm_store_f32(meter, mg, mi, (size_t)qr);
            }
        }
    }
    size_t peak = sram.peak;
    sram_give_f32(&sram, mi, (size_t)Br);
    sram_give_f32(&sram, li, (size_t)Br);
    sram_give_f32(&sram, S, (size_t)Br * Bc);
    sram_give_f32(&sram, Vj, (size_t)Bc * d);
    sram_give_f32(&sram, Kj, (size_t)Bc * d);
    sram_give_f32(&sram, Oi, (size_t)Br * d);
    sram_give_f32(&sram, Qi, (size_t)Br * d);
    return peak;
}
