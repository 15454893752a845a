/* decode_cpu.c - the CPU tile model of Flash-Decoding: S splits of the KV cache, each
 * running phase 4's inner loop over its own keys and writing a partial (O_s, L_s) to
 * "HBM", then the combine reading them back (decode.h says what and why).
 *
 * Plain C, fp32, every touch of an "HBM" array through the meter, every tile from an
 * sram_t. One work item per (batch b, head h, Q block i, split s), in turn here, one GPU
 * thread block each in the kernel; then one combine item per (b, h, i). FlashDecoding++'s
 * pieces are decode_fdpp_cpu.c's, the closed forms (bytes, splits) decode_bytes.c's.
 */
#include "decode.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "decode_model.h"
#include "fa2.h"
#include "fp16.h"
#include "online_softmax.h"
#include "ref.h"
#include "rng.h"

/* The running state of a row is chapter 2's (online_state_*, phase 2). In an exercise
 * build they come from the reference library, so that phase 6 can be done before phase 2
 * (common/ref.h). */

int dec_seqlen(const attn_problem_t *p, const dec_cache_t *c, int b)
{
    return c && c->seqlens_k ? c->seqlens_k[b] : p->N_kv;
}

void dec_split_range(int n, int Bc, int S, int s, int *k0, int *k1)
{
    const int Tc = (n + Bc - 1) / Bc;          /* K/V blocks of the cache */
    /* TODO EXERCISE dec.split_range: the whole Bc blocks [b0, b1) of split s
     * HINT: each split takes per = ceil(Tc / S) blocks in order: split s starts at block
     * HINT: s * per; clamp both ends to Tc (the last splits may be empty: b0 == b1). */
    const int b0 = 0, b1 = Tc; (void)s; (void)S;
    /* END EXERCISE dec.split_range */
    *k0 = (long)b0 * Bc < n ? b0 * Bc : n;
    *k1 = (long)b1 * Bc < n ? b1 * Bc : n;
}

size_t dec_kv_row(const attn_problem_t *p, const dec_cache_t *c, int b, int g, int j)
{
    if (!c || c->page == 0)
        return (((size_t)b * p->H_kv + g) * (size_t)p->N_kv + (size_t)j) * p->d;
    /* TODO EXERCISE dec.page_lookup: key j of sequence b, KV head g, in the paged pool
     * HINT: the block table row of b (pages_per_seq entries) gives the pool page of keys
     * HINT: j - j % page ..; the pool is [n_pages][H_kv][page][d]: the row is j % page. */
    return (((size_t)b * p->H_kv + g) * (size_t)c->page + (size_t)(j % c->page)) * p->d;
    /* END EXERCISE dec.page_lookup */
}

void dec_combine_row(int S, int d, const float *Ls, const float *Os, float *o, float *L)
{
    /* TODO EXERCISE dec.combine: merge the S partials by log-sum-exp (chapter 2's merge)
     * HINT: m = max L_s; if m = -inf no split saw a key: O = 0, L = +inf. Else
     * HINT: L = m + log sum_s e^{L_s - m} and O = sum_s e^{L_s - L} O_s (an empty split
     * HINT: has L_s = -inf: weight 0). */
    memcpy(o, Os, sizeof(float) * (size_t)d); *L = Ls[0]; (void)S;
    /* END EXERCISE dec.combine */
}

size_t dec_sram_bytes(int d, attn_blocks_t b, int S)
{
    const size_t D = (size_t)d, Br = (size_t)b.Br, Bc = (size_t)b.Bc;
    /* a split: Q_i, K_j, V_j, the rows' running states, the partial tile (O_s, L_s) */
    const size_t split = sizeof(float) * (Br * D + 2 * Bc * D + Br * (D + 1)) + Br * sizeof(online_state_t);
    /* the combine of one row: S partial rows and L_s, its output row and L */
    const size_t comb = S > 1 ? sizeof(float) * ((size_t)S * (D + 1) + D + 1) : 0;
    return split > comb ? split : comb;
}

/* Key rows [j0, j0 + kr) of sequence b, KV head g, into Kj, Vj (fp16 -> fp32, metered): a
 * paged cache's table entry is read at the block's first key and at each page boundary
 * inside it; a row outside the pool (a wrong lookup) reads as zeros, counted in faults and
 * in the bytes it would have read. */
void dec_load_kv_block(const attn_problem_t *p, const dec_cache_t *c, int b, int g, int j0, int kr,
                       const uint16_t *Kh, const uint16_t *Vh, size_t pool, float *Kj, float *Vj,
                       hbm_meter_t *meter)
{
    const int d = p->d;
    const bool paged = c && c->page > 0;
    for (int cc = 0; cc < kr; cc++) {
        const int j = j0 + cc;
        if (paged && (cc == 0 || j % c->page == 0)) hbm_read(meter, sizeof(int));  /* table entry */
        const size_t row = dec_kv_row(p, c, b, g, j);
        if (paged && row + d > pool) {   /* a wrong lookup: zeros, counted */
            if (c->faults) ++*c->faults;
            memset(Kj + (size_t)cc * d, 0, sizeof(float) * (size_t)d);
            memset(Vj + (size_t)cc * d, 0, sizeof(float) * (size_t)d);
            hbm_read(meter, 2 * 2 * (uint64_t)d);   /* the bytes it would have read */
            continue;
        }
        hbm_load_f16(meter, Kj + (size_t)cc * d, Kh + row, (size_t)d);
        hbm_load_f16(meter, Vj + (size_t)cc * d, Vh + row, (size_t)d);
    }
}

static size_t dec_cpu_run(const attn_inputs_t *in, const dec_cache_t *c, attn_blocks_t bl, int S,
                          const float *phi, float *O, float *L, hbm_meter_t *meter, uint8_t *redo);

size_t dec_cpu(const attn_inputs_t *in, const dec_cache_t *c, attn_blocks_t bl, int S,
               float *O, float *L, hbm_meter_t *meter)
{
    return dec_cpu_run(in, c, bl, S, NULL, O, L, meter, NULL);
}

size_t dec_cpu_fdpp(const attn_inputs_t *in, const dec_cache_t *c, attn_blocks_t bl, int S, float phi,
                    float *O, float *L, hbm_meter_t *meter, uint8_t *recomputed)
{
    uint8_t *redo = recomputed ? recomputed : xmalloc(attn_l_elems(&in->p), "phase6");
    const size_t peak = dec_cpu_run(in, c, bl, S, &phi, O, L, meter, redo);
    if (!recomputed) free(redo);
    return peak;
}

static size_t dec_cpu_run(const attn_inputs_t *in, const dec_cache_t *c, attn_blocks_t bl, int S,
                          const float *phi, float *O, float *L, hbm_meter_t *meter, uint8_t *redo)
{
    const attn_problem_t *p = &in->p;
    const int d = p->d, Br = bl.Br, Bc = bl.Bc;
    const int Tr = (p->N_q + Br - 1) / Br;
    const bool paged = c && c->page > 0, ragged = c && c->seqlens_k;
    const uint16_t *Kh = paged ? c->k_pool : in->k_h, *Vh = paged ? c->v_pool : in->v_h;
    const size_t pool = paged ? (size_t)c->n_pages * p->H_kv * c->page * d : 0;   /* pool elements */
    hbm_meter_t scratch;
    if (!meter) meter = &scratch;
    /* the partials in "HBM": O_s [S][B][H][N_q][d], L_s [S][B][H][N_q] (fp32) */
    const size_t nq = attn_q_elems(p), nl = attn_l_elems(p);
    float *Opart = S > 1 ? xmalloc(sizeof(float) * nq * (size_t)S, "phase6") : NULL;
    float *Lpart = S > 1 ? xmalloc(sizeof(float) * nl * (size_t)S, "phase6") : NULL;

    sram_t sram;
    sram_init(&sram, dec_sram_bytes(d, bl, S));
    float *Qi = sram_take_f32(&sram, (size_t)Br * d, "Q_i");
    float *Kj = sram_take_f32(&sram, (size_t)Bc * d, "K_j");
    float *Vj = sram_take_f32(&sram, (size_t)Bc * d, "V_j");
    float *Ot = sram_take_f32(&sram, (size_t)Br * d, "O_s");
    float *Lt = sram_take_f32(&sram, (size_t)Br, "L_s");
    const size_t st_floats = (size_t)Br * (sizeof(online_state_t) / sizeof(float));
    online_state_t *st = (online_state_t *)(void *)sram_take_f32(&sram, st_floats, "m_i, l_i, O~_i");

    /* ---- the splits: one work item per (b, h, i, s) ---- */
    for (int b = 0; b < p->B; b++) {
        const int n = dec_seqlen(p, c, b);
        attn_problem_t pb = *p;          /* this sequence's own mask: N_kv = its length */
        pb.N_kv = n;
        for (int h = 0; h < p->H; h++) {
            const int g = attn_kv_head(p, h);
            for (int i = 0; i < Tr; i++) {
                const int i0 = i * Br, qr = p->N_q - i0 < Br ? p->N_q - i0 : Br;
                for (int s = 0; s < S; s++) {
                    int k0, k1;
                    dec_split_keys(p, n, i0, qr, bl, S, s, &k0, &k1);
                    if (ragged) hbm_read(meter, sizeof(int));            /* seqlens_k[b] */
                    for (int r = 0; r < qr; r++) {
                        REF(online_state_init)(&st[r], d);
                        if (phi) { st[r].m = *phi; Lt[r] = 0; }   /* FD++: m is phi for good; Lt holds the
                                                                      row's window flags until it takes l_s */
                    }
                    if (k1 > k0)
                        hbm_load_f16(meter, Qi, in->q_h + attn_q_offset(p, b, h) + (size_t)i0 * d, (size_t)qr * d);
                    for (int j0 = k0; j0 < k1; j0 += Bc) {            /* phase 4's inner loop */
                        const int kr = k1 - j0 < Bc ? k1 - j0 : Bc;
                        dec_load_kv_block(p, c, b, g, j0, kr, Kh, Vh, pool, Kj, Vj, meter);
                        for (int r = 0; r < qr; r++)
                            for (int cc = 0; cc < kr; cc++) {
                                float x = -INFINITY;
                                if (attn_visible(&pb, i0 + r, j0 + cc)) {
                                    float acc = 0;
                                    for (int k = 0; k < d; k++) acc += Qi[(size_t)r * d + k] * Kj[(size_t)cc * d + k];
                                    x = acc * p->scale;
                                }
                                if (phi) {
                                    int flags = (int)Lt[r];
                                    dec_fdpp_push(&st[r], &flags, x, Vj + (size_t)cc * d, d);
                                    Lt[r] = (float)flags;
                                } else {
                                    REF(online_state_push)(&st[r], x, Vj + (size_t)cc * d, d);
                                }
                            }
                    }
                    /* O_s = O~ / l, L_s = m + log l; a row with no key: O_s = 0 and, as a
                     * partial, L_s = -inf (an empty sum), as the output L = +inf (S = 1).
                     * FD++: the unnormalised u_s and the signed l_s; with S = 1 the combine of
                     * its one partial, in place. */
                    for (int r = 0; r < qr; r++) {
                        if (phi) {
                            memcpy(Ot + (size_t)r * d, st[r].o, sizeof(float) * (size_t)d);
                            Lt[r] = dec_fdpp_signed_l(st[r].l, (int)Lt[r]);
                            if (S == 1) {
                                const float ls = Lt[r];
                                const size_t lo = attn_l_offset(p, b, h) + (size_t)(i0 + r);
                                redo[lo] = !dec_fdpp_combine_row(1, d, *phi, dec_row_has_keys(p, n, i0 + r), &ls,
                                                                 Ot + (size_t)r * d, Ot + (size_t)r * d, &Lt[r]);
                            }
                            continue;
                        }
                        REF(online_state_finish)(&st[r], d, Ot + (size_t)r * d, &Lt[r]);
                        if (S > 1 && Lt[r] == INFINITY) Lt[r] = -INFINITY;
                    }
                    if (S == 1) {
                        hbm_store_f32(meter, O + attn_q_offset(p, b, h) + (size_t)i0 * d, Ot, (size_t)qr * d);
                        hbm_store_f32(meter, L + attn_l_offset(p, b, h) + i0, Lt, (size_t)qr);
                    } else {
                        hbm_store_f32(meter, Opart + (size_t)s * nq + attn_q_offset(p, b, h) + (size_t)i0 * d, Ot, (size_t)qr * d);
                        hbm_store_f32(meter, Lpart + (size_t)s * nl + attn_l_offset(p, b, h) + i0, Lt, (size_t)qr);
                    }
                }
            }
        }
    }
    size_t peak = sram.peak;
    sram_give_f32(&sram, (float *)(void *)st, st_floats);
    sram_give_f32(&sram, Lt, (size_t)Br);
    sram_give_f32(&sram, Ot, (size_t)Br * d);
    sram_give_f32(&sram, Vj, (size_t)Bc * d);
    sram_give_f32(&sram, Kj, (size_t)Bc * d);
    sram_give_f32(&sram, Qi, (size_t)Br * d);

    /* ---- the combine: one work item per (b, h, i), row by row ---- */
    if (S > 1) {
        float *Ls = sram_take_f32(&sram, (size_t)S, "L_s (all splits)");
        float *Os = sram_take_f32(&sram, (size_t)S * d, "O_s (all splits)");
        float *o = sram_take_f32(&sram, (size_t)d, "O row");
        float *Lr = sram_take_f32(&sram, 1, "L");
        for (int b = 0; b < p->B; b++)
            for (int h = 0; h < p->H; h++)
                for (int i = 0; i < Tr; i++) {
                    const int i0 = i * Br, qr = p->N_q - i0 < Br ? p->N_q - i0 : Br;
                    if (ragged) hbm_read(meter, sizeof(int));
                    for (int r = 0; r < qr; r++) {
                        const size_t lo = attn_l_offset(p, b, h) + (size_t)(i0 + r);
                        const size_t oo = attn_q_offset(p, b, h) + (size_t)(i0 + r) * d;
                        for (int s = 0; s < S; s++) {
                            hbm_load_f32(meter, Ls + s, Lpart + (size_t)s * nl + lo, 1);
                            hbm_load_f32(meter, Os + (size_t)s * d, Opart + (size_t)s * nq + oo, (size_t)d);
                        }
                        if (phi) {
                            const int bnk = dec_seqlen(p, c, b);
                            redo[lo] = !dec_fdpp_combine_row(S, d, *phi, dec_row_has_keys(p, bnk, i0 + r), Ls, Os, o, Lr);
                        } else {
                            dec_combine_row(S, d, Ls, Os, o, Lr);
                        }
                        hbm_store_f32(meter, O + oo, o, (size_t)d);
                        hbm_store_f32(meter, L + lo, Lr, 1);
                    }
                }
        if (sram.peak > peak) peak = sram.peak;
        sram_give_f32(&sram, Lr, 1);
        sram_give_f32(&sram, o, (size_t)d);
        sram_give_f32(&sram, Os, (size_t)S * d);
        sram_give_f32(&sram, Ls, (size_t)S);
    }
    /* ---- FD++'s fallback: each row that left the window, recomputed synchronised ---- */
    if (phi) {
        float *Q1 = sram_take_f32(&sram, (size_t)d, "Q row");
        float *K1 = sram_take_f32(&sram, (size_t)Bc * d, "K_j");
        float *V1 = sram_take_f32(&sram, (size_t)Bc * d, "V_j");
        online_state_t *s1 = (online_state_t *)(void *)sram_take_f32(&sram, sizeof(online_state_t) / sizeof(float), "m, l, O~");
        for (int b = 0; b < p->B; b++)
            for (int h = 0; h < p->H; h++)
                for (int row = 0; row < p->N_q; row++)
                    if (redo[attn_l_offset(p, b, h) + row])
                        dec_recompute_row(in, c, bl, b, h, row, Kh, Vh, pool, Q1, K1, V1, s1, O, L, meter);
        if (sram.peak > peak) peak = sram.peak;
        sram_give_f32(&sram, (float *)(void *)s1, sizeof(online_state_t) / sizeof(float));
        sram_give_f32(&sram, V1, (size_t)Bc * d);
        sram_give_f32(&sram, K1, (size_t)Bc * d);
        sram_give_f32(&sram, Q1, (size_t)d);
    }
    free(Opart);
    free(Lpart);
    return peak;
}

void dec_table_shuffle(int *table, int np, uint64_t seed)
{
    /* a shuffled pool: sequence b's page q lives at pool page table[b pps + q] */
    rng_t rng;
    rng_seed(&rng, seed);
    for (int e = 0; e < np; e++) table[e] = e;
    for (int e = np - 1; e > 0; e--) {
        const int f = (int)(rng_u64(&rng) % (uint64_t)(e + 1)), t = table[e];
        table[e] = table[f];
        table[f] = t;
    }
}

int dec_paged_make(dec_paged_t *pg, const attn_inputs_t *in, int page, const int *seqlens, uint64_t seed)
{
    const attn_problem_t *p = &in->p;
    memset(pg, 0, sizeof *pg);
    const int pps = (p->N_kv + page - 1) / page, np = p->B * pps;
    const size_t page_elems = (size_t)p->H_kv * page * p->d;
    pg->table = malloc(sizeof(int) * (size_t)np);
    pg->k = calloc((size_t)np * page_elems, sizeof(uint16_t));
    pg->v = calloc((size_t)np * page_elems, sizeof(uint16_t));
    if (!pg->table || !pg->k || !pg->v) { dec_paged_free(pg); return -1; }
    dec_table_shuffle(pg->table, np, seed);
    for (int b = 0; b < p->B; b++)
        for (int g = 0; g < p->H_kv; g++)
            for (int j = 0; j < p->N_kv; j++) {
                const int pid = pg->table[b * pps + j / page];
                const size_t to = (((size_t)pid * p->H_kv + g) * page + (size_t)(j % page)) * p->d;
                const size_t from = (((size_t)b * p->H_kv + g) * (size_t)p->N_kv + j) * p->d;
                memcpy(pg->k + to, in->k_h + from, sizeof(uint16_t) * (size_t)p->d);
                memcpy(pg->v + to, in->v_h + from, sizeof(uint16_t) * (size_t)p->d);
            }
    pg->c.seqlens_k = seqlens;
    pg->c.page = page;
    pg->c.pages_per_seq = pps;
    pg->c.block_table = pg->table;
    pg->c.k_pool = pg->k;
    pg->c.v_pool = pg->v;
    pg->c.n_pages = np;
    pg->c.faults = &pg->faults;
    return 0;
}

void dec_paged_free(dec_paged_t *pg)
{
    free(pg->table);
    free(pg->k);
    free(pg->v);
    memset(pg, 0, sizeof *pg);
}

