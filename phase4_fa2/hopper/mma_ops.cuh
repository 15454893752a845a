/* hopper/mma_ops.cuh - the products of a K/V block for a warpgroup's 64 rows (Alg. 1, lines
 * 8 and 10) as wgmma groups, issued and committed, not waited for: fp16 (steps 1-6, 8-10)
 * and e4m3 (step 7); and attend_block, one whole block in order (steps 1-4, 6). */
#pragma once
#include "softmax.cuh"
#include "turns.cuh"

#if FA_HAVE_WGMMA
/* S = Q_i K_j^T, issued and committed as one group, not waited for. A k-slice is 32 bytes of
 * a row (16 fp16 or 32 e4m3 values, ELEM_BYTES = 2 or 1), 32 bytes further in its 128-byte
 * swizzle atom each, so D * ELEM_BYTES / 32 wgmma's per 64 keys. */
template <int D, int BC, int ELEM_BYTES = 2>
__device__ __forceinline__ void issue_s(float (&s)[BC / 64][32], const unsigned char *Qt, const unsigned char *Kj)
{
    static_assert(D * ELEM_BYTES % 128 == 0, "a K row is whole 128-byte swizzle atoms");
    constexpr size_t ROWS64 = (size_t)(D * ELEM_BYTES / 128) * ATOM_BYTES;   /* 64 keys of D values */
    wgmma_fence();
#pragma unroll
    for (int sub = 0; sub < BC / 64; sub++)
#pragma unroll
        for (int kk = 0; kk < D * ELEM_BYTES / 32; kk++) {
            const uint64_t dq = wgmma_desc_sw128(Qt + (kk / 4) * ATOM_BYTES, 16, 1024) + 2 * (kk % 4);
            const uint64_t dk = wgmma_desc_sw128(Kj + sub * ROWS64 + (kk / 4) * ATOM_BYTES, 16, 1024) + 2 * (kk % 4);
            if constexpr (ELEM_BYTES == 2) wgmma_m64n64k16_ss<0>(s[sub], dq, dk, kk > 0);
            else wgmma_m64n64k32_e4m3_ss(s[sub], dq, dk, kk > 0);
        }
    wgmma_commit();
}

/* P~ (fp32, block of BC keys) as fp16 A registers: k16 slice kk = keys 16 kk .. 16 kk + 15 */
template <int BC>
__device__ __forceinline__ void p_to_a_f16(uint32_t (&pa)[BC / 16][4], const float (&s)[BC / 64][32])
{
#pragma unroll
    for (int kk = 0; kk < BC / 16; kk++) c_pair_to_a(pa[kk], s[kk / 4] + 8 * (kk % 4), s[kk / 4] + 8 * (kk % 4) + 4);
}

/* O~ += P~ V_j: V_j transposed from shared memory, one wgmma per 64-column half of d and
 * k16 slice; issued and committed as one group, not waited for */
template <int D, int BC>
__device__ __forceinline__ void issue_pv(RowTile<D> &st, const uint32_t (&pa)[BC / 16][4], const unsigned char *Vj)
{
    wgmma_fence();
#pragma unroll
    for (int a = 0; a < D / 64; a++)
#pragma unroll
        for (int kk = 0; kk < BC / 16; kk++) {   /* 16 keys further: 2048 bytes, +128 */
            const unsigned char *v64 = Vj + (kk / 4) * tile64_bytes<D>() + a * ATOM_BYTES;   /* its 64-key tile */
            wgmma_m64n64k16_rs<1>(st.o[a], pa[kk], wgmma_desc_sw128(v64, ATOM_BYTES, 1024) + 128 * (kk % 4), 1);
        }
    wgmma_commit();
}

/* One K/V block, in order: S, softmax, P V, each product waited for (steps 1-3, 6; step 4
 * takes a Pingpong turn around each product). MASKED, partial, mcols: softmax_block's. */
template <int D, bool SKIP, int BC, bool MASKED = false, class Turn = NoTurns>
__device__ __forceinline__ void attend_block(RowTile<D> &st, const unsigned char *Qt, const unsigned char *Kj,
                                             const unsigned char *Vj, int j, int row0, int first_row,
                                             const attn_problem_t &p, float sl2, int t, Turn &&turn = Turn(),
                                             bool partial = false, const int4 *mcols = nullptr)
{
    float s[BC / 64][32];
    uint32_t pa[BC / 16][4];
    uint32_t keep[BC / 64];   /* MASKED: the element test's bits */
    const bool test = MASKED && (partial || (long)(j + 1) * BC > p.N_kv);   /* a partial or tail tile */
    turn.take();
    issue_s<D, BC>(s, Qt, Kj);
    turn.hand_over();
    if constexpr (MASKED)
        if (test) mask_keep_bits<BC>(keep, j, row0, p, t, mcols);   /* under the product S = Q K^T */
    wgmma_wait<0>();
    softmax_block<D, SKIP, BC, MASKED>(st, s, j, row0, first_row, p, sl2, t, test, keep);
    p_to_a_f16<BC>(pa, s);
    turn.take();
    issue_pv<D, BC>(st, pa, Vj);
    turn.hand_over();
    wgmma_wait<0>();
}

/* FP8 (step 7): P~ as e4m3 A registers, the products on e4m3 tiles (the layouts: step07_fp8.cuh) */
template <int BC>
__device__ __forceinline__ void p_to_a_e4m3(uint32_t (&pa)[BC / 32][4], const float (&s)[BC / 64][32])
{
#pragma unroll
    for (int kk = 0; kk < BC / 32; kk++) {   /* keys 32 kk .. 32 kk + 31: n8 tiles 4 (kk % 2) .. + 3 of s[kk / 2] */
        const float *c = s[kk / 2] + 16 * (kk % 2);   /* c[4 n8 + e], n8 = 0..3 */
        pa[kk][0] = e4m3x4_pack(c[0], c[1], c[4], c[5]);       /* row g:     keys 2t, 2t+1, 8+2t, 9+2t */
        pa[kk][1] = e4m3x4_pack(c[2], c[3], c[6], c[7]);       /* row g + 8 */
        pa[kk][2] = e4m3x4_pack(c[8], c[9], c[12], c[13]);     /* row g:     keys 16+2t, .., 24+2t, 25+2t */
        pa[kk][3] = e4m3x4_pack(c[10], c[11], c[14], c[15]);   /* row g + 8 */
    }
}

/* O~ += P~ V_j in e4m3: V^T_j's 64-row atom a gives O's columns 64 a .. 64 a + 63; k32 slice
 * kk is 32 keys, 32 bytes further in the atom's 128-byte rows */
template <int D, int BC>
__device__ __forceinline__ void issue_pv_e4m3(RowTile<D> &st, const uint32_t (&pa)[BC / 32][4], const unsigned char *Vt)
{
    static_assert(BC == 128, "a V^T row of the block is one 128-byte swizzle atom wide");
    wgmma_fence();
#pragma unroll
    for (int a = 0; a < D / 64; a++)
#pragma unroll
        for (int kk = 0; kk < BC / 32; kk++)
            wgmma_m64n64k32_e4m3_rs(st.o[a], pa[kk], wgmma_desc_sw128(Vt + a * ATOM_BYTES, 16, 1024) + 2 * kk, 1);
    wgmma_commit();
}

#endif
