/* fa2_cpu.c - the CPU tile model of FlashAttention-2's forward (Dao 2023, Algorithm 1).
 *
 * Plain C, fp32 math, the loop order and blocks of the GPU kernels: Q blocks outer (one
 * GPU thread block each), K/V blocks inner. Every touch of the "HBM" arrays goes through
 * the meter and the tiles come from an sram_t, as in phase 3's fa1_cpu.c. Next to it,
 * line by line, the differences from FA1:
 *   FA1: for j { load K_j, V_j; for i { load Q_i, O_i, l_i, m_i; step; store O_i, l_i, m_i } }
 *   FA2: for i { load Q_i; for j { load K_j, V_j; step } ; O_i /= l_i; store O_i, L_i }
 * so O, l and m never go back to HBM, the output stays unnormalised until the end, and
 * a causal Q block stops at the last K/V block it can see.
 */
#include "fa2.h"
#include "driver.h"
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t fa2_sram_bytes(int d, attn_blocks_t b)
{
    size_t Br = (size_t)b.Br, Bc = (size_t)b.Bc, D = (size_t)d;
    return sizeof(float) * (2 * Br * D + 2 * Bc * D + Br * Bc + 2 * Br);
}

int fa2_kv_blocks(const attn_problem_t *p, int i, int Br, int Bc)
{
    const int Tc = (p->N_kv + Bc - 1) / Bc;                        /* Alg. 1 l.1 */
    if (!p->causal) return Tc;
    /* TODO EXERCISE fa2.causal_range: the K/V blocks a causal Q block must visit
     * HINT: row r sees keys 0 .. r + (N_kv - N_q) (common/problem.h); the block's last row
     * HINT: (min(N_q, (i+1) Br) - 1) sees the most. Return how many Bc-blocks cover its keys,
     * HINT: at most Tc, and 0 when even that row sees no key. */
    (void)i; (void)Br; return Tc;
    /* END EXERCISE fa2.causal_range */
}

/* The class of tile (Q block i of qr rows, K/V block j) under p's mask (chapter 4c):
 * FULLY_MASKED tiles are skipped, K_j and V_j not even read; UNMASKED ones need no element
 * test; PARTIAL ones test each element. Only for a masked problem. Written out here as the
 * exercise; the kernel applies the same rule through mask.h's mask_tile_class_at(). */
mask_tile_t fa2_mask_tile(const mask_blocks_t *mb, int i, int qr, int j, int Br)
{
    const int r0 = i * Br, r1 = i * Br + qr;   /* the tile's rows [r0, r1); column block j */
    /* TODO EXERCISE fa2.mask_tile: classify the tile from its column block's min and max (FlashMask Sec. 4)
     * HINT: column block j's lower runs [LTS, LTE) have min/max mb->lts_min[j], mb->lts_max[j],
     * HINT: mb->lte_min[j], mb->lte_max[j]; the upper runs the same with uts, ute. Fully masked
     * HINT: when one run covers [r0, r1) in every column: r0 >= max start and r1 <= min end.
     * HINT: Unmasked when both runs miss it in every column: r1 <= min start or r0 >= max end.
     * HINT: Partial otherwise: set fully and unmasked. */
    const bool fully = false, unmasked = false; (void)mb; (void)j; (void)r0; (void)r1;
    /* END EXERCISE fa2.mask_tile */
    return fully ? MASK_TILE_FULLY_MASKED : unmasked ? MASK_TILE_UNMASKED : MASK_TILE_PARTIAL;
}

/* Q block i's row of tiles under a mask (fa2_mask_tile): how many are not fully masked,
 * the keys they hold, and the keys of the partial ones (the formulas below count these). */
typedef struct { int tiles; double keys, partial_keys; } fa2_mask_row_t;
static fa2_mask_row_t fa2_mask_row(const attn_problem_t *p, const mask_blocks_t *mb, attn_blocks_t b, int i)
{
    const int Tc = (p->N_kv + b.Bc - 1) / b.Bc, qr = p->N_q - i * b.Br < b.Br ? p->N_q - i * b.Br : b.Br;
    fa2_mask_row_t r = { 0, 0, 0 };
    for (int j = 0; j < Tc; j++) {
        const int kr = p->N_kv - j * b.Bc < b.Bc ? p->N_kv - j * b.Bc : b.Bc;
        const mask_tile_t c = fa2_mask_tile(mb, i, qr, j, b.Br);
        if (c == MASK_TILE_FULLY_MASKED) continue;
        r.tiles++;
        r.keys += kr;
        if (c == MASK_TILE_PARTIAL) r.partial_keys += kr;
    }
    return r;
}

void fa2_visits_want(struct drv_visits *v, const attn_problem_t *p, attn_blocks_t b, bool skip,
                     const char *exercise)
{
    const int Tr = (p->N_q + b.Br - 1) / b.Br, Tc = (p->N_kv + b.Bc - 1) / b.Bc;
    drv_visits_init(v, Tr, "Q block", "K/V blocks", attn_mask(p) ? "the mask's tile classes" : "the causal range", exercise);
    mask_blocks_t mb = attn_mask_blocks(p, b.Bc);
    for (int i = 0; i < Tr; i++) {   /* the reference's range: never the student's (common/ref.h) */
        int n = skip ? REF(fa2_kv_blocks)(p, i, b.Br, b.Bc) : Tc;
        if (attn_mask(p) && skip) {   /* FlashMask: the tiles not fully masked, by mask.h's rule */
            const int r0 = i * b.Br, r1 = p->N_q < r0 + b.Br ? p->N_q : r0 + b.Br;
            n = 0;
            for (int j = 0; j < Tc; j++) n += mask_tile_class(&mb, r0, r1, j) != MASK_TILE_FULLY_MASKED;
        }
        v->want[i] = (unsigned long long)p->B * p->H * n;
    }
    mask_blocks_free(&mb);
}

bool fa2_block_needs_mask(const attn_problem_t *p, int i, int j, int Br, int Bc)
{
    const long last_key = (long)(j + 1) * Bc - 1;
    if (last_key >= p->N_kv) return true;                            /* a tail block */
    /* the block's first row sees the fewest keys: if it sees them all, every row does */
    return p->causal && last_key > (long)i * Br + (p->N_kv - p->N_q);
}

/* The chapter's formula: Q block i reads the first min(N_kv, n_i Bc) keys, n_i =
 * fa2_kv_blocks() (all Tc blocks when not causal). The causal range it depends on is
 * checked on its own, against a brute-force scan of the mask (fa2_check.c). With a
 * FlashMask mask, Q block i reads the keys of the tiles not fully masked, and the mask's
 * bytes (read_mask): the preprocessing pass reads the four vectors (16 N_kv) and writes the
 * 8 per-block values (32 Tc); each (head, Q block) reads the 32 Tc bytes of those values,
 * and the four vectors' 16 kr bytes of each partial tile's kr columns. */
fa2_traffic_t fa2_hbm_traffic(const attn_problem_t *p, attn_blocks_t b)
{
    const double heads = (double)p->B * p->H, d = p->d;
    const int Tr = (p->N_q + b.Br - 1) / b.Br, Tc = (p->N_kv + b.Bc - 1) / b.Bc;
    double keys = 0, mask_bytes_read = 0;   /* sum over Q blocks of the K/V rows read */
    mask_blocks_t mb = attn_mask_blocks(p, b.Bc);
    for (int i = 0; i < Tr; i++) {
        if (attn_mask(p)) {
            const fa2_mask_row_t r = fa2_mask_row(p, &mb, b, i);
            keys += r.keys;
            mask_bytes_read += 32.0 * Tc + 16.0 * r.partial_keys;
            continue;
        }
        const long seen = (long)fa2_kv_blocks(p, i, b.Br, b.Bc) * b.Bc;
        keys += (double)(seen < p->N_kv ? seen : p->N_kv);
    }
    mask_blocks_free(&mb);
    fa2_traffic_t t;
    t.read_q  = heads * 2.0 * p->N_q * d;         /* l.4: Q_i once (fp16)          */
    t.read_kv = heads * 2.0 * 2.0 * keys * d;     /* l.6: K_j, V_j once per Q block */
    t.write_o = heads * 4.0 * p->N_q * d;         /* l.12: O_i once (fp32)          */
    t.write_l = heads * 4.0 * p->N_q;             /* l.13: L_i once (fp32)          */
    t.read_mask = attn_mask(p) ? 16.0 * p->N_kv + 32.0 * Tc + heads * mask_bytes_read : 0;   /* FlashMask */
    t.total = t.read_q + t.read_kv + t.write_o + t.write_l + t.read_mask;
    return t;
}

double fa2_hbm_bytes(const attn_problem_t *p, attn_blocks_t b) { return fa2_hbm_traffic(p, b).total; }

double fa1_nonmatmul_flops(const attn_problem_t *p, int Bc)
{
    /* phase 3's fa1_step, per row and K/V block of kr keys: scale, max, subtract + exp,
     * sum (5 kr); m_new (1); l_new = e^(m_i-m_new) l_i + e^(m~-m_new) l~ (2 exps of a
     * difference, 2 multiplies, 1 add: 7); a = e^(..) l_i (1); 1 / l_new (1); and for each
     * of the d outputs (a o + b pv) inv (4). Every row sees every block (no skipping).
     * At the end L = m + log l (2). */
    const double Tc = ceil((double)p->N_kv / Bc), rows = (double)p->B * p->H * p->N_q;
    return rows * (5.0 * p->N_kv + Tc * (4.0 * p->d + 10.0) + 2.0);
}

double fa2_nonmatmul_flops(const attn_problem_t *p, attn_blocks_t b)
{
    const int Tr = (p->N_q + b.Br - 1) / b.Br;
    double f = 0;
    mask_blocks_t mb = attn_mask_blocks(p, b.Bc);
    for (int i = 0; i < Tr; i++) {
        const int qr = p->N_q - i * b.Br < b.Br ? p->N_q - i * b.Br : b.Br;
        int n = fa2_kv_blocks(p, i, b.Br, b.Bc);
        long keys = (long)n * b.Bc < p->N_kv ? (long)n * b.Bc : p->N_kv;
        if (attn_mask(p)) {   /* the tiles not fully masked */
            const fa2_mask_row_t r = fa2_mask_row(p, &mb, b, i);
            n = r.tiles;
            keys = (long)r.keys;
        }
        f += (double)qr * (5.0 * keys + n * (p->d + 5.0) + p->d + 3.0);
    }
    mask_blocks_free(&mb);
    return f * p->B * p->H;
}

/* Is element (row, key) hidden? The causal rule (problem.h's attn_visible) or, with a
 * FlashMask mask, the key column's two masked runs (chapter 4c): fa2_mask_hidden, written
 * out as the exercise (the kernel: mask.h's mask_row_visible). */
bool fa2_mask_hidden(const attn_mask_t *m, int row, int key)
{
    /* TODO EXERCISE fa2.mask_element: is row `row` inside one of key column `key`'s masked runs?
     * HINT: the lower run is [m->lts[key], m->lte[key]), the upper [m->uts[key], m->ute[key]). */
    (void)m; (void)row; (void)key; return false;
    /* END EXERCISE fa2.mask_element */
}
static bool fa2_hidden(const attn_problem_t *p, int row, int key)
{
    const attn_mask_t *m = attn_mask(p);
    return m ? fa2_mask_hidden(m, row, key) : !attn_visible(p, row, key);
}

/* Alg. 1 l.10 for one element of O~: brought to the new max, plus this block's P~ V. */
float fa2_rescale_o(float o, float alpha, float pv)
{
    /* TODO EXERCISE fa2.rescale: update the unnormalised output O~ (Alg. 1 l.10)
     * HINT: o is the sum of e^(S - m_old) v over the keys so far; bring it to the new max
     * HINT: with alpha = e^(m_old - m_new) and add this block's pv. No division. */
    (void)o; (void)alpha; return pv;
    /* END EXERCISE fa2.rescale */
}

/* Alg. 1 l.12 for one row of d outputs: O = O~ / l, once. */
void fa2_normalise_row(float *o, float l, int d)
{
    /* TODO EXERCISE fa2.normalise: divide the unnormalised output by l once (Alg. 1 l.12)
     * HINT: a row that saw no key has l = 0 and must give O = 0 (common/problem.h). */
    (void)o; (void)l; (void)d;
    /* END EXERCISE fa2.normalise */
}

/* Alg. 1 l.13 for one row: L from its running max m and sum l. */
float fa2_lse(float m, float l)
{
    /* TODO EXERCISE fa2.lse: the log-sum-exp L_i the backward pass needs (Alg. 1 l.13)
     * HINT: L = m + log(l); a fully masked row (l = 0) gets L = +inf. Return it. */
    (void)m; (void)l; return 0.0f;
    /* END EXERCISE fa2.lse */
}

/* One step (i, j) of Alg. 1 l.8-10 on tiles in SRAM: qr rows of Q_i (global row i0 + r:
 * i0 = i Br, Q_i's first row), kr rows of K_j, V_j (global key j0 + c: j0 = j Bc).
 * O~_i, m_i, l_i (the tiles Oi, mi, li) are updated in place; m_t is this block's row
 * max (the paper's m~_ij), as in phase 3's fa1_step. */
static void fa2_step(const attn_problem_t *p, int qr, int kr, int i0, int j0, bool mask,
                     const float *Qi, const float *Kj, const float *Vj,
                     float *Oi, float *mi, float *li, float *S, double *flops)
{
    const int d = p->d;
    for (int r = 0; r < qr; r++) {
        float *s = S + (size_t)r * kr, *o = Oi + (size_t)r * d;
        /* l.8: S_ij = Q_i K_j^T (scaled); the mask only on blocks that cross the diagonal */
        for (int c = 0; c < kr; c++) {
            float acc = 0;
            for (int k = 0; k < d; k++) acc += Qi[(size_t)r * d + k] * Kj[(size_t)c * d + k];
            s[c] = mask && fa2_hidden(p, i0 + r, j0 + c) ? -INFINITY : acc * p->scale;
        }
        /* l.9: m_new = max(m_i, rowmax S), P~ = exp(S - m_new), l_i = e^(m_i - m_new) l_i + rowsum P~ */
        float m_t = -INFINITY;
        for (int c = 0; c < kr; c++) m_t = fmaxf(m_t, s[c]);
        const float m_new = fmaxf(m_t, mi[r]);   /* the larger of the two maxima */
        float rowsum = 0;
        for (int c = 0; c < kr; c++) {
            s[c] = m_new == -INFINITY ? 0.0f : expf(s[c] - m_new);   /* nothing seen yet: 0 */
            rowsum += s[c];
        }
        /* alpha = e^(m_i - m_new) by phase 3's rule (fa1_rescale(), fa1.h): 0 while the row
         * has seen no key (its O~ and l are 0; -inf - -inf would be NaN), as in the kernels */
        const float alpha = fa1_rescale(mi[r], m_new);
        li[r] = alpha * li[r] + rowsum;
        mi[r] = m_new;
        /* l.10: O~_i = diag(e^(m_i - m_new)) O~_i + P~ V_j, NOT divided by l */
        for (int k = 0; k < d; k++) {
            float pv = 0;
            for (int c = 0; c < kr; c++) pv += s[c] * Vj[(size_t)c * d + k];
            o[k] = fa2_rescale_o(o[k], alpha, pv);
        }
        if (flops) *flops += 5.0 * kr + d + 5.0;   /* fa2_nonmatmul_flops() says which */
    }
}

size_t fa2_cpu(const attn_inputs_t *in, attn_blocks_t bs, float *O, float *L,
               hbm_meter_t *meter, double *flops)
{
    const attn_problem_t *p = &in->p;
    const int d = p->d, Br = bs.Br, Bc = bs.Bc;
    const int Tr = (p->N_q + Br - 1) / Br, Tc = (p->N_kv + Bc - 1) / Bc;   /* l.1 */
    hbm_meter_t scratch;
    if (!meter) meter = &scratch;
    if (flops) *flops = 0;
    /* FlashMask's preprocessing: the per-block min/max of the four vectors (read 16 N_kv
     * bytes, write 8 int32 a block); a problem without a mask has none */
    mask_blocks_t mb = attn_mask_blocks(p, Bc);
    if (attn_mask(p)) { hbm_read(meter, mask_bytes(attn_mask(p))); hbm_write(meter, 32ull * Tc); }

    sram_t sram;
    sram_init(&sram, fa2_sram_bytes(d, bs));
    float *Qi = sram_take_f32(&sram, (size_t)Br * d, "Q_i");
    float *Oi = sram_take_f32(&sram, (size_t)Br * d, "O~_i");
    float *Kj = sram_take_f32(&sram, (size_t)Bc * d, "K_j");
    float *Vj = sram_take_f32(&sram, (size_t)Bc * d, "V_j");
    float *S  = sram_take_f32(&sram, (size_t)Br * Bc, "S_ij");
    float *mi = sram_take_f32(&sram, (size_t)Br, "m_i");
    float *li = sram_take_f32(&sram, (size_t)Br, "l_i");

    /* FA2's parallelism: one thread block per (Q block, batch, head); here in turn. */
    for (int b = 0; b < p->B; b++)
    for (int h = 0; h < p->H; h++)
    for (int i = 0; i < Tr; i++) {                                          /* l.3 */
        const uint16_t *K = in->k_h + attn_kv_offset(p, b, h);   /* GQA by index */
        const uint16_t *V = in->v_h + attn_kv_offset(p, b, h);
        const int qr = p->N_q - i * Br < Br ? p->N_q - i * Br : Br;
        hbm_load_f16(meter, Qi, in->q_h + attn_q_offset(p, b, h) + (size_t)i * Br * d, (size_t)qr * d); /* l.4 */
        memset(Oi, 0, sizeof(float) * (size_t)qr * d);                      /* l.5: on chip */
        for (int r = 0; r < qr; r++) { mi[r] = -INFINITY; li[r] = 0; }
        const int n = fa2_kv_blocks(p, i, Br, Bc);                          /* causal: fewer */
        if (attn_mask(p)) hbm_read(meter, 32ull * Tc);   /* the block min/max this Q block classifies by */
        for (int j = 0; j < n; j++) {                                       /* l.6 */
            const int kr = p->N_kv - j * Bc < Bc ? p->N_kv - j * Bc : Bc;
            bool elementwise = fa2_block_needs_mask(p, i, j, Br, Bc);
            if (attn_mask(p)) {   /* FlashMask: skip a fully masked tile, test elements in a partial one */
                const mask_tile_t c = fa2_mask_tile(&mb, i, qr, j, Br);
                if (c == MASK_TILE_FULLY_MASKED) continue;
                elementwise = c == MASK_TILE_PARTIAL;
                if (elementwise) hbm_read(meter, 16ull * kr);   /* the four vectors of its kr columns */
            }
            hbm_load_f16(meter, Kj, K + (size_t)j * Bc * d, (size_t)kr * d);
            hbm_load_f16(meter, Vj, V + (size_t)j * Bc * d, (size_t)kr * d);
            fa2_step(p, qr, kr, i * Br, j * Bc, elementwise, Qi, Kj, Vj, Oi, mi, li, S, flops);   /* l.8-10 */
        }
        /* l.12-13: O_i = diag(l_i)^-1 O~_i once, L_i = m_i + log(l_i) */
        for (int r = 0; r < qr; r++) {
            float *o = Oi + (size_t)r * d;
            fa2_normalise_row(o, li[r], d);
            li[r] = fa2_lse(mi[r], li[r]);
        }
        if (flops) *flops += (double)qr * (d + 3.0);
        hbm_store_f32(meter, O + attn_q_offset(p, b, h) + (size_t)i * Br * d, Oi, (size_t)qr * d);
        hbm_store_f32(meter, L + attn_l_offset(p, b, h) + (size_t)i * Br, li, (size_t)qr);
    }
    mask_blocks_free(&mb);
    size_t peak = sram.peak;
    sram_give_f32(&sram, li, (size_t)Br);
    sram_give_f32(&sram, mi, (size_t)Br);
    sram_give_f32(&sram, S, (size_t)Br * Bc);
    sram_give_f32(&sram, Vj, (size_t)Bc * d);
    sram_give_f32(&sram, Kj, (size_t)Bc * d);
    sram_give_f32(&sram, Oi, (size_t)Br * d);
    sram_give_f32(&sram, Qi, (size_t)Br * d);
    return peak;
}
