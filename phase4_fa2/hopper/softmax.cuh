/* hopper/softmax.cuh - a warpgroup's rows through the K/V loop (Alg. 1's O~_i, m_i, l_i),
 * FlashMask's element test, and one block's online softmax (Alg. 1, lines 9-10), shared by
 * every step of the ladder, fp16 and FP8. */
#pragma once
#include "fwd_base.cuh"

#if FA_HAVE_WGMMA
/* What one warpgroup carries through the K/V loop for its 64 rows (Alg. 1's O~_i, m_i,
 * l_i): O~ as D / 64 wgmma accumulators of 64 x 64, and this thread's two rows' m and l.
 * m is kept in the exponent's units, m = max_j S_ij scale log2(e), so that a block whose S
 * carries its own factor (the FP8 step's scales) compares with the others. */
template <int D>
struct RowTile {
    float o[D / 64][32];
    float m[2], l[2];
    __device__ RowTile()
    {
        for (int a = 0; a < D / 64; a++)
            for (int e = 0; e < 32; e++) o[a][e] = 0.0f;
        m[0] = m[1] = -INFINITY;
        l[0] = l[1] = 0.0f;
    }
};

/* FlashMask's element test on a partial tile (FlashMask Sec. 4; mask.h's mask_row_visible),
 * as one bit an S element: bit 4 n8 + 2 x + c of keep[sub] says whether row row0 + 8 x may
 * see key j Bc + 64 sub + 8 n8 + 2 t + c (a key past N_kv may not). A thread's 2 rows share
 * each of its columns, so one 16-byte load of the column's {LTS, LTE, UTS, UTE} serves both:
 *
 *            64 keys of s[sub]: thread t holds columns 8 n8 + 2t, + 1 (n8 = 0..7)
 *   row0     . . x x . . x x ...     s[sub][4 n8 + c]       (x: in a masked run)
 *   row0 + 8 . . . x . . x x ...     s[sub][4 n8 + 2 + c]
 *                  ^ one int4 a column: 16 loads a thread per 64 keys
 *
 * The bits need no S: attend_block computes them while the tensor cores compute S = Q K^T,
 * so the loads and the 4 comparisons an element (as many integer instructions as the
 * softmax's exp2 and max together) run under the product, and after the wait each element
 * costs one select (mask_apply). */
template <int BC>
__device__ __forceinline__ void mask_keep_bits(uint32_t (&keep)[BC / 64], int j, int row0, const attn_problem_t &p,
                                               int t, const int4 *mcols)
{
#pragma unroll
    for (int sub = 0; sub < BC / 64; sub++) {
        uint32_t bits = 0;
#pragma unroll
        for (int n8 = 0; n8 < 8; n8++)
#pragma unroll
            for (int c = 0; c < 2; c++) {
                const int col = j * BC + 64 * sub + 8 * n8 + 2 * t + c;
                if (col < p.N_kv) {
                    const int4 r = __ldg(mcols + col);
#pragma unroll
                    for (int x = 0; x < 2; x++)
                        bits |= (uint32_t)mask_row_visible(r.x, r.y, r.z, r.w, row0 + 8 * x) << (4 * n8 + 2 * x + c);
                }
            }
        keep[sub] = bits;
    }
}

/* S = -inf where mask_keep_bits said the row may not see the key */
template <int BC>
__device__ __forceinline__ void mask_apply(float (&s)[BC / 64][32], const uint32_t *keep)
{
#pragma unroll
    for (int sub = 0; sub < BC / 64; sub++)
#pragma unroll
        for (int e = 0; e < 32; e++)
            if (!((keep[sub] >> e) & 1u)) s[sub][e] = -INFINITY;
}

/* O~ *= the row's factor (alpha, and the FP8 step's change of V scale): this thread's rows
 * row0 (elements e % 4 < 2) and row0 + 8 */
template <int D>
__device__ __forceinline__ void rescale_o(RowTile<D> &st, const float (&o_scale)[2])
{
#if SOFTMAX_PROBE_NO_RESCALE   /* a probe of its cost (Makefile's SOFTMAX_PROBE): O~ wrong */
    (void)st; (void)o_scale;
    return;
#endif
#pragma unroll
    for (int a = 0; a < D / 64; a++)
#pragma unroll
        for (int e = 0; e < 32; e++) st.o[a][e] *= o_scale[(e % 4) / 2];
}

/* the mask, the online softmax and the rescale of O~ for block j; s becomes P~ (fp32).
 * row0: this thread's first row (the other is row0 + 8); first_row: the tile's first row
 * (the mask test). sl2: what turns this block's S into the exponent's units (scale log2 e;
 * the FP8 step's also carries its tiles' scales). o_ratio: a factor on O~ beside alpha (the
 * FP8 step's change of V's scale). MASKED: FlashMask's mask instead of the causal rule,
 * applied from the keep bits (mask_keep_bits) on partial tiles (and a tail block) only,
 * test set; an unmasked tile does no mask work. FMA_EX2: of each 16 exponentials of a row's
 * 64-key share, this many by fma_ex2 (the FMA pipe) instead of the SFU (the FP8 step's). */
template <int D, bool SKIP, int BC, bool MASKED = false, int FMA_EX2 = 0>
__device__ __forceinline__ void softmax_block(RowTile<D> &st, float (&s)[BC / 64][32], int j, int row0, int first_row,
                                              const attn_problem_t &p, float sl2, int t, bool test = false,
                                              const uint32_t *keep = nullptr, float o_ratio = 1.0f,
                                              float *o_scale_later = nullptr)
{
    const int shift = p.N_kv - p.N_q;
    /* the mask, on the blocks that cross the diagonal or N_kv; s[sub][4 n8 + e] is row
     * row0 + 8 (e / 2), key j Bc + 64 sub + 8 n8 + 2 t + e % 2 (wgmma.cuh's picture) */
    const long last_key = (long)(j + 1) * BC - 1;
    if constexpr (MASKED) {
        if (test) mask_apply<BC>(s, keep);
    } else if (last_key >= p.N_kv || (p.causal && (!SKIP || last_key > (long)first_row + shift))) {
#pragma unroll
        for (int sub = 0; sub < BC / 64; sub++)
#pragma unroll
            for (int e = 0; e < 32; e++) {
                const int row = row0 + 8 * ((e % 4) / 2), col = j * BC + 64 * sub + (e / 4) * 8 + 2 * t + e % 2;
                if (col >= p.N_kv || (p.causal && col > row + shift)) s[sub][e] = -INFINITY;
            }
    }
    /* the online softmax (chapter 4's), for rows g and g + 8 of the warp: a row's BC keys
     * sit in the 4 lanes of a quad, BC / 4 each */
    float alpha[2];
#pragma unroll
    for (int x = 0; x < 2; x++) {
        float block_max = -INFINITY;
#pragma unroll
        for (int sub = 0; sub < BC / 64; sub++)
#pragma unroll
            for (int n8 = 0; n8 < 8; n8++) block_max = fmaxf(block_max, fmaxf(s[sub][4 * n8 + 2 * x], s[sub][4 * n8 + 2 * x + 1]));
#pragma unroll
        for (int quad_lane = 1; quad_lane < 4; quad_lane <<= 1)
            block_max = fmaxf(block_max, __shfl_xor_sync(0xffffffffu, block_max, quad_lane));
        const float row_max = fmaxf(st.m[x], sl2 * block_max);   /* sl2 > 0: the max of the scaled S */
        const bool no_key = row_max == -INFINITY;   /* the row has seen no key yet */
        alpha[x] = no_key ? 0.0f : sfu_ex2(st.m[x] - row_max);
        const float max_scaled = no_key ? 0.0f : row_max;
        st.m[x] = row_max;
        float part = 0.0f;   /* this thread's share of the row sum */
#pragma unroll
        for (int sub = 0; sub < BC / 64; sub++)
#pragma unroll
            for (int n8 = 0; n8 < 8; n8++)
#pragma unroll
                for (int c = 0; c < 2; c++) {
                    float &v = s[sub][4 * n8 + 2 * x + c];
                    const float e2 = fmaf(v, sl2, -max_scaled);
#if SOFTMAX_PROBE_NO_EXP   /* a probe of exp2's cost (Makefile's SOFTMAX_PROBE): P~ wrong */
                    v = e2;
#else
                    v = 2 * n8 + c < FMA_EX2 ? fma_ex2(e2) : sfu_ex2(e2);
#endif
                    part += v;
                }
        st.l[x] = fmaf(alpha[x], st.l[x], part);
    }
    const float o_scale[2] = { alpha[0] * o_ratio, alpha[1] * o_ratio };
    if (o_scale_later) {   /* O~ is still being written by a product in flight: the caller rescales it */
        o_scale_later[0] = o_scale[0];
        o_scale_later[1] = o_scale[1];
        return;
    }
    rescale_o<D>(st, o_scale);
}

#endif
