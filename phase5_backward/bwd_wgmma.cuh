/* bwd_wgmma.cuh - the products of FA2's backward on Hopper's warpgroup MMA and the register
 * work between them (P^T, dS^T), which every Hopper step (bwd_wgmma_step1.cuh to _step4.cuh)
 * shares. Layouts and the reasons for them: the head comment of bwd_wgmma.cu (keys as M, P^T
 * and dS^T as register A, dS^T through shared memory for dQ, 128-byte swizzled tiles in
 * 64-column halves). The family's other shared parts: bwd_wgmma_pipe.cuh (shared memory's
 * alignment, the ring, the named barriers), bwd_wgmma_load.cuh (the producer loads),
 * bwd_wgmma_epilogue.cuh (dQ_i's adds, dK_j and dV_j).
 */
#ifndef PHASE5_BWD_WGMMA_CUH
#define PHASE5_BWD_WGMMA_CUH
#include "wgmma.cuh"
#include "bwd_gpu.cuh"
#include "bwd_wgmma_pipe.cuh"   /* WGB_THREADS, the swizzled tile's SW_ROW, SW_GROUP */

/* dQ_i = dS K_j (BR query rows x D) split over the BC / 64 warpgroups, three ways:
 *   BY_ROWS (BR = 128, d = 64: wgmma-ws): each warpgroup its 64 query rows, every column,
 *           over all the block's keys (FA3's split at d = 64);
 *   by 64-column halves of d where there are as many halves as warpgroups (BR = 64, d =
 *           128: each warpgroup its columns over all the block's keys);
 *   BY_KEYS (BR = 64, d = 64): each warpgroup its own 64 keys, a partial sum of all D
 *           columns.
 * Through shared memory (wgmma-dq, wgmma-ws) a step's dQ_i is TILES fp32 tiles of BR rows,
 * rows padded by 32 bytes so that a warp's float2 stores (8 rows x 4 column pairs) fill 2
 * wavefronts, not 8. */
template <int D, int BC, int BR = 64>
struct WgDqSplit {
    static constexpr int WGS = BC / 64, HALVES = D / 64;
    static constexpr bool BY_ROWS = BR == 64 * WGS && BR > 64;
    static constexpr bool BY_KEYS = !BY_ROWS && HALVES < WGS;
    static constexpr int NH = (BY_ROWS || BY_KEYS) ? HALVES : HALVES / WGS;   /* a warpgroup's halves of d */
    static constexpr int K16 = BY_KEYS ? 4 : BC / 16;                        /* its k16 slices of keys     */
    static constexpr int TILES = BY_KEYS ? WGS : 1;                          /* partial tiles a step       */
    static constexpr int PITCH = D * 4 + 32;                                 /* bytes a tile row           */
    static constexpr size_t TILE = (size_t)BR * PITCH;
    static_assert(BY_ROWS || BR == 64, "wgmma bwd: BR = 64, or one 64-row slice a warpgroup");
    static_assert(BY_ROWS || (BY_KEYS ? HALVES == 1 && WGS == 2 : HALVES % WGS == 0),
                  "wgmma bwd: dQ's split over the warpgroups");
    static_assert(PITCH % 16 == 0, "wgmma bwd: bulk reduce rows 16-byte aligned");
};

#if FA_HAVE_WGMMA
/* acc (64 x 64) = A B^T, k over d: A this warpgroup's 64 rows of a BC-row tile (K_j or
 * V_j: Alg. 2 l.10's S^T = K_j Q_i^T, l.12's dP^T = V_j dO_i^T), B a BR-row tile (Q_i or
 * dO_i), both K-major (d contiguous): the next k16 slice is 32 bytes further in the row
 * (the descriptor's start address + 2), the next 64-column half a tile's rows x 128 bytes
 * on. Issued, not fenced, committed or waited for: the caller groups them. */
template <int D, int BR, int BC>
__device__ __forceinline__ void issue_nt(float (&acc)[32], const unsigned char *Aw, const unsigned char *B)
{
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        const uint64_t da = wgmma_desc_sw128(Aw + (kk / 4) * BC * SW_ROW, 16, SW_GROUP) + 2 * (kk % 4);
        const uint64_t db = wgmma_desc_sw128(B + (kk / 4) * BR * SW_ROW, 16, SW_GROUP) + 2 * (kk % 4);
        wgmma_m64n64k16_ss<0>(acc, da, db, kk > 0);
    }
}

/* acc[a] (64 keys x 64 columns of half a of d) += A B, k over the BR queries: A from the
 * registers (P^T or dS^T, fp16 fragments a k16 slice), B = dO_i or Q_i MN-major (the next
 * k16 slice 16 rows, 2048 bytes, on; half a at a BR 128 bytes): Alg. 2 l.13's dV_j +=
 * P^T dO_i and l.16's dK_j += dS^T Q_i. Not fenced or committed; the A fragments must stay
 * untouched until the wait (wgmma reads registers asynchronously: wgmma_hold_a after it). */
template <int D, int BR>
__device__ __forceinline__ void issue_rs(float (&acc)[D / 64][32], const uint32_t (&frag)[BR / 16][4],
                                         const unsigned char *B)
{
#pragma unroll
    for (int a = 0; a < D / 64; a++)
#pragma unroll
        for (int kk = 0; kk < BR / 16; kk++)
            wgmma_m64n64k16_rs<1>(acc[a], frag[kk],
                                  wgmma_desc_sw128(B + a * BR * SW_ROW + kk * K16_ROWS_MN, BR * SW_ROW, SW_GROUP), 1);
}

/* Alg. 2 l.15: this warpgroup's share of dQ_i = dS K_j (unscaled): A = dS from dSs, stored
 * [key][query] in 64-query slices of BC rows each, i.e. K x M: MN-major A (transpose flag);
 * B = K_j [key][d], MN-major. Its query slice, halves of d and k16 slices of keys:
 * WgDqSplit. Fenced and committed: one group. */
template <int D, int BR, int BC>
__device__ __forceinline__ void issue_dq(float (&dq)[WgDqSplit<D, BC, BR>::NH][32], const unsigned char *dSs,
                                         const unsigned char *Ks, int wg)
{
    using S = WgDqSplit<D, BC, BR>;
    const unsigned char *dSw = S::BY_ROWS ? dSs + (size_t)wg * BC * SW_ROW : dSs;   /* its 64 queries */
    wgmma_fence();
#pragma unroll
    for (int h = 0; h < S::NH; h++) {
        const int a = (S::BY_KEYS || S::BY_ROWS) ? h : wg * S::NH + h;   /* the half of d */
#pragma unroll
        for (int k = 0; k < S::K16; k++) {
            const int kk = S::BY_KEYS ? wg * S::K16 + k : k;   /* keys 16 kk .. */
            const uint64_t da = wgmma_desc_sw128(dSw + kk * K16_ROWS_MN, 16, SW_GROUP);
            const uint64_t db = wgmma_desc_sw128(Ks + a * BC * SW_ROW + kk * K16_ROWS_MN, BC * SW_ROW, SW_GROUP);
            wgmma_m64n64k16_ss<1, 1>(dq[h], da, db, k > 0);
        }
    }
    wgmma_commit();
}

/* Alg. 2 l.11 in the registers: P^T = 2^(S^T scale log2 e - L log2 e), masked to 0 where
 * the key is past N_kv, the query past N_q or causal hides it (MASK: only blocks that need
 * it pay for the test). Element e = 4 n8 + 2 x + y of the accumulators is key key0 + 8 x of
 * the block (key0 = 64 wg + 16 warp + g), query 8 n8 + 2 t + y of Q_i (wgmma.cuh's
 * picture): a thread's queries come in pairs, so L_i is read a float2 at a time. Out: P^T
 * in s (fp32, for dS^T) and as fp16 A fragments pa (k16 slice kk = queries 16 kk ..).
 * FM (FlashMask, wgmma-ws's mask path): also 0 where the query lies in one of its key's two
 * runs, mr[x] = {lts, lte, uts, ute} of key key0 + 8 x (the thread's keys: loaded once). */
template <int BR, bool MASK, bool FM = false>
__device__ __forceinline__ void bwd_p_masked(float (&s)[32], uint32_t (&pa)[BR / 16][4], const float *Li,
                                             const attn_problem_t &p, int q0, int key0, int j0, float sl2, int t,
                                             const int4 *mr = nullptr)
{
#pragma unroll
    for (int n8 = 0; n8 < 8; n8++) {
        const float2 l = *(const float2 *)(Li + 8 * n8 + 2 * t);
        const float nl[2] = {-l.x * BWD_LOG2E, -l.y * BWD_LOG2E};
#pragma unroll
        for (int x = 0; x < 2; x++)
#pragma unroll
            for (int y = 0; y < 2; y++) {
                const int e = 4 * n8 + 2 * x + y;
#if BWD_PROBE_NO_EXP   /* a probe of exp2's cost (Makefile's BWD_PROBE): P^T wrong */
                float pv = fmaf(s[e], sl2, nl[y]);
#else
                float pv = sfu_ex2(fmaf(s[e], sl2, nl[y]));   /* L = +inf: a fully masked row, P = 0 */
#endif
                if (MASK) {
                    const int key = j0 + key0 + 8 * x, qrow = q0 + 8 * n8 + 2 * t + y;
                    if (key >= p.N_kv || qrow >= p.N_q || !attn_visible(&p, qrow, key)) pv = 0.0f;
                    if (FM && !mask_row_visible(mr[x].x, mr[x].y, mr[x].z, mr[x].w, qrow)) pv = 0.0f;
                }
                s[e] = pv;
            }
    }
#pragma unroll
    for (int kk = 0; kk < BR / 16; kk++) c_pair_to_a(pa[kk], s + 8 * kk, s + 8 * kk + 4);
}
template <int BR>
__device__ __forceinline__ void bwd_p(float (&s)[32], uint32_t (&pa)[BR / 16][4], const float *Li,
                                      const attn_problem_t &p, int q0, int key0, int j0, bool mask, float sl2, int t)
{
    if (mask) bwd_p_masked<BR, true>(s, pa, Li, p, q0, key0, j0, sl2, t);
    else bwd_p_masked<BR, false>(s, pa, Li, p, q0, key0, j0, sl2, t);
}
/* With a FlashMask mask: the tail test and the element test on partial tiles (one
 * instantiation for both: a tail tile's run test is cheap), nothing on unmasked ones. */
template <int BR>
__device__ __forceinline__ void bwd_p_fm(float (&s)[32], uint32_t (&pa)[BR / 16][4], const float *Li,
                                         const attn_problem_t &p, int q0, int key0, int j0, bool mask, bool partial,
                                         const int4 (&mr)[2], float sl2, int t)
{
    if (mask || partial) bwd_p_masked<BR, true, true>(s, pa, Li, p, q0, key0, j0, sl2, t, mr);
    else bwd_p_masked<BR, false>(s, pa, Li, p, q0, key0, j0, sl2, t);
}

/* Alg. 2 l.13-14: dS^T = P^T (dP^T - D) from bwd_p's P^T and dP^T (dp, overwritten), as
 * fp16 A fragments dsa and stored to dSs [key][query], a fragment word per 4 bytes: lanes
 * g, t of a warp write rows g (8 rows, so 8 different swizzle positions of chunk n8) and
 * words t: 32 different banks. P^T is read from s (fp32: bwd_ds) or from its fp16 A
 * fragments pa (bwd_ds_p16: s is then dead after bwd_p, 32 registers fewer; dS^T is
 * rounded to fp16 next anyway, as the standard backward rounds P, dP and dS). Element e of
 * the accumulators is word e / 2, half e % 2, of pa (c_pair_to_a). */
template <int BR, bool P16>
__device__ __forceinline__ void bwd_ds_impl(const float *s, const uint32_t *pa, float (&dp)[32],
                                            uint32_t (&dsa)[BR / 16][4], unsigned char *dSs, const float *Di,
                                            int key0, int t)
{
#pragma unroll
    for (int n8 = 0; n8 < 8; n8++) {
        const float2 dd = *(const float2 *)(Di + 8 * n8 + 2 * t);
#pragma unroll
        for (int x = 0; x < 2; x++) {
            const int e = 4 * n8 + 2 * x;
            float2 pv;
            if (P16) { uint32_t w = pa[e / 2]; pv = __half22float2(*reinterpret_cast<__half2 *>(&w)); }
            else pv = make_float2(s[e], s[e + 1]);
            dp[e] = pv.x * (dp[e] - dd.x);
            dp[e + 1] = pv.y * (dp[e + 1] - dd.y);
        }
    }
#pragma unroll
    for (int kk = 0; kk < BR / 16; kk++) {
        c_pair_to_a(dsa[kk], dp + 8 * kk, dp + 8 * kk + 4);
        /* word r of the fragment: key key0 + 8 (r % 2), queries 16 kk + 8 (r / 2) + 2 t, +1 */
#pragma unroll
        for (int r = 0; r < 4; r++)
            *(uint32_t *)(dSs + sw128_offset(key0 + 8 * (r % 2), 16 * kk + 8 * (r / 2) + 2 * t)) = dsa[kk][r];
    }
}
template <int BR>
__device__ __forceinline__ void bwd_ds(const float (&s)[32], float (&dp)[32], uint32_t (&dsa)[BR / 16][4],
                                       unsigned char *dSs, const float *Di, int key0, int t)
{
    bwd_ds_impl<BR, false>(s, nullptr, dp, dsa, dSs, Di, key0, t);
}
template <int BR>
__device__ __forceinline__ void bwd_ds_p16(const uint32_t (&pa)[BR / 16][4], float (&dp)[32],
                                           uint32_t (&dsa)[BR / 16][4], unsigned char *dSs, const float *Di,
                                           int key0, int t)
{
    bwd_ds_impl<BR, true>(nullptr, &pa[0][0], dp, dsa, dSs, Di, key0, t);
}

#endif
#endif
