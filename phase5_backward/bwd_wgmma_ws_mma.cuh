/* bwd_wgmma_ws_mma.cuh - the MMA warpgroups of steps 3-4 (bwd_wgmma_step3.cuh): warpgroup c =
 * 0, 1 owns keys 64 c .. 64 c + 63 of the K/V block, holds their dK_j, dV_j for the whole loop
 * and runs a step's five products in an order that keeps the tensor cores busy while the
 * registers work (bwd_wgmma_ws.cu's timeline). Included by bwd_wgmma_step3.cuh.
 */
#ifndef PHASE5_BWD_WGMMA_WS_MMA_CUH
#define PHASE5_BWD_WGMMA_WS_MMA_CUH
#include "bwd_wgmma_ws_layout.cuh"
#include "bwd_wgmma_epilogue.cuh"

#if FA_HAVE_WGMMA
using Frag64 = uint32_t[4][4];   /* the A fragments of one 64-query slice (4 k16 slices) */

/* Alg. 2 l.10-12: S^T and dP^T, two groups, so that P^T is computed while dP^T still runs;
 * each QH products of 64 keys x 64 queries (query slice qh: rows 64 qh .. of Q_i) */
template <class C>
__device__ __forceinline__ void ws_issue_s_dp(float (&sc)[C::QH][32], float (&dp)[C::QH][32], const unsigned char *Kw,
                                              const unsigned char *Vw, const unsigned char *Qi, const unsigned char *dOi)
{
    wgmma_fence();
#pragma unroll
    for (int qh = 0; qh < C::QH; qh++) issue_nt<C::D, C::BR, C::BC>(sc[qh], Kw, Qi + qh * 64 * SW_ROW);
    wgmma_commit();
#pragma unroll
    for (int qh = 0; qh < C::QH; qh++) issue_nt<C::D, C::BR, C::BC>(dp[qh], Vw, dOi + qh * 64 * SW_ROW);
    wgmma_commit();
}

/* Alg. 2 l.11 once S^T's group is in: P^T, query slice by slice, as fp16 A fragments pa (k16
 * slices 4 qh .. 4 qh + 3: query slice qh). MASKED: FlashMask's element test on partial
 * tiles (a row that sees no key: L = +inf, P = 2^-inf = 0 already). */
template <class C, bool MASKED>
__device__ __forceinline__ void ws_recompute_p(float (&sc)[C::QH][32], uint32_t (&pa)[C::BR / 16][4], const float *Li,
                                               const attn_problem_t &p, int q0, int key0, int j0, bool mask,
                                               bool partial, const int4 (&mrun)[2], float sl2, int t)
{
    wgmma_wait<1>();   /* S^T */
#pragma unroll
    for (int qh = 0; qh < C::QH; qh++) {
        wgmma_fence_regs(sc[qh]);
        Frag64 &pq = *reinterpret_cast<Frag64 *>(pa[4 * qh]);
        if constexpr (MASKED)
            bwd_p_fm<64>(sc[qh], pq, Li + 64 * qh, p, q0 + 64 * qh, key0, j0, mask, partial, mrun, sl2, t);
        else
            bwd_p<64>(sc[qh], pq, Li + 64 * qh, p, q0 + 64 * qh, key0, j0, mask, sl2, t);
    }
}

/* Alg. 2 l.13-14 once dP^T's group is in: dS^T into dSt and as A fragments dsa. Br = 64: P^T
 * from S^T (fp32); Br = 128: from its fp16 fragments, so that S^T's 64 registers are free. */
template <class C>
__device__ __forceinline__ void ws_ds(const float (&sc)[C::QH][32], float (&dp)[C::QH][32],
                                      uint32_t (&pa)[C::BR / 16][4], uint32_t (&dsa)[C::BR / 16][4], unsigned char *dSt,
                                      const float *Di, int key0, int t)
{
#pragma unroll
    for (int qh = 0; qh < C::QH; qh++) {
        wgmma_fence_regs(dp[qh]);
        Frag64 &dq = *reinterpret_cast<Frag64 *>(dsa[4 * qh]);
        if (C::QH == 1) bwd_ds<64>(sc[qh], dp[qh], dq, dSt, Di, key0, t);
        else bwd_ds_p16<64>(*reinterpret_cast<Frag64 *>(pa[4 * qh]), dp[qh], dq, dSt + (size_t)qh * C::BC * SW_ROW,
                            Di + 64 * qh, key0, t);
    }
    fence_proxy_async();   /* dS^T was written by ordinary stores; the tensor cores read it */
}

/* Alg. 2 l.15: warpgroup c's part of dQ_i (WgDqSplit) into the dQ ring's tile: its 64 rows (Br
 * = 128), its 64 columns (d = 128), or at d = 64, Br = 64 two partial sums of every column,
 * warpgroup 1's stored and warpgroup 0's added to it after a named barrier */
template <class C>
__device__ __forceinline__ void ws_store_dq_tile(unsigned char *tile, const float (&dq)[C::DQ::NH][32], int slot, int c,
                                                 int warp, int g, int t, float scale)
{
    using DQ = typename C::DQ;
    if (DQ::BY_ROWS) {
        store_dq<C::D, DQ::NH, DQ::PITCH>(tile + (size_t)64 * c * DQ::PITCH, dq, 0, warp, g, t, scale);
    } else if (!DQ::BY_KEYS) {
        store_dq<C::D, DQ::NH, DQ::PITCH>(tile, dq, c * DQ::NH, warp, g, t, scale);
    } else if (c == 1) {
        store_dq<C::D, DQ::NH, DQ::PITCH>(tile, dq, 0, warp, g, t, scale);
        named_bar_arrive(BWD_BAR_DQ_PARTIAL + slot, C::MMA_THREADS);
    } else {   /* one tile, half the bytes to reduce */
        named_bar_sync(BWD_BAR_DQ_PARTIAL + slot, C::MMA_THREADS);
        store_dq<C::D, DQ::NH, DQ::PITCH, true>(tile, dq, 0, warp, g, t, scale);
    }
    fence_proxy_async();   /* ordinary stores; the copy engine reads the tile next */
}

/* The MMA warpgroups' loop over the steps (Alg. 2 l.8-16), then dK_j, dV_j (l.18). c: the
 * warpgroup's index among the two. */
template <class C, bool MASKED>
__device__ __forceinline__ void ws_mma_warpgroups(const WsBwdArgs &args, const WsSmem<C> &sm, const bwd_steps_t &sched,
                                                  int c, int j, int j0, size_t kv_off, int lane)
{
    constexpr int D = C::D, BR = C::BR, BC = C::BC, HALVES = D / 64, QH = C::QH;
    using DQ = typename C::DQ;
    const attn_problem_t &p = args.p;
    const int warp = (threadIdx.x / 32) % 4, g = lane / 4, t = lane % 4;
    const int key0 = 64 * c + 16 * warp + g;   /* this thread's keys of the block: key0, key0 + 8 */
    const float sl2 = p.scale * BWD_LOG2E;
    int4 mrun[2];   /* MASKED: the two runs of those keys' columns, the same at every step */
#pragma unroll
    for (int x = 0; x < 2; x++) mrun[x] = MASKED ? bwd_mask_column(args.mcols, j0 + key0 + 8 * x, p.N_kv) : make_int4(0, 0, 0, 0);
    float dk[HALVES][32], dv[HALVES][32];   /* l.7: this warpgroup's 64 rows of dK_j, dV_j */
#pragma unroll
    for (int a = 0; a < HALVES; a++)
#pragma unroll
        for (int e = 0; e < 32; e++) dk[a][e] = dv[a][e] = 0.0f;

    BwdRing<C::STAGES> ring(sm.full, sm.empty);
    BwdRing<C::DQ_STAGES> dqr(sm.dq_full, sm.dq_empty);
    if (sched.count > 0) mbar_wait(sm.kv_full, 0);
    for (int st = 0; st < sched.count; st++, ring.advance(), dqr.advance()) {   /* l.8 */
        ring.wait_full();   /* Q_i, dO_i, L_i, D_i are in the slot */
        const unsigned char *Qi = sm.Qs + ring.slot() * C::Q_TILE, *dOi = sm.dOs + ring.slot() * C::Q_TILE;
        unsigned char *dSt = sm.dSs + (st % 2) * C::DS_TILE;
        int i; size_t l_off;
        sched.at(st, BR, i, l_off);
        const bool mask = bwd_block_needs_mask(p, i, j, BR, BC);   /* tails (and causal: the diagonal) */
        const bool partial = MASKED && sched.partial(st);         /* FlashMask: the element test */
        float sc[QH][32], dp[QH][32];
        uint32_t pa[BR / 16][4], dsa[BR / 16][4];
        ws_issue_s_dp<C>(sc, dp, sm.Ks + c * 64 * SW_ROW, sm.Vs + c * 64 * SW_ROW, Qi, dOi);     /* l.10, l.12 */
        ws_recompute_p<C, MASKED>(sc, pa, sm.Ls + ring.slot() * BR, p, i * BR, key0, j0, mask, partial, mrun, sl2,
                                  t);                                                           /* l.11 */
        /* l.13: dV_j += P^T dO_i. At Br = 128 it is issued at once (FA3's order) and runs while
         * dP^T finishes and dS^T is computed; at Br = 64 (d = 128) after dS^T, the order that
         * measured 2-3% faster there (the dV group would otherwise queue behind dP^T's). */
        constexpr bool EARLY_DV = QH > 1;
        if constexpr (EARLY_DV) { wgmma_fence(); issue_rs<D, BR>(dv, pa, dOi); wgmma_commit(); }
        wgmma_wait<EARLY_DV ? 1 : 0>();   /* dP^T (an early dV runs on) */
        ws_ds<C>(sc, dp, pa, dsa, dSt, sm.Ds + ring.slot() * BR, key0, t);                           /* l.13-14 */
        if constexpr (!EARLY_DV) { wgmma_fence(); issue_rs<D, BR>(dv, pa, dOi); wgmma_commit(); }
        /* d = 128 and Br = 128: a warpgroup's dQ sums over all 128 keys, so both warpgroups'
         * dS^T rows must be in dSt; BY_KEYS (d = 64, Br = 64) reads only its own */
        if (!DQ::BY_KEYS) named_bar_sync(BWD_BAR_DS_READY, C::MMA_THREADS);
        float dq[DQ::NH][32];   /* l.15-16: dQ_i = dS K_j (its own group), then dK_j += dS^T Q_i */
        issue_dq<D, BR, BC>(dq, dSt, sm.Ks, c);
        issue_rs<D, BR>(dk, dsa, Qi);
        wgmma_commit();
        wgmma_wait<1>();   /* dV and dQ (groups complete in order); dK runs on */
#pragma unroll
        for (int h = 0; h < DQ::NH; h++) wgmma_fence_regs(dq[h]);
#pragma unroll
        for (int a = 0; a < HALVES; a++) wgmma_fence_regs(dv[a]);
#pragma unroll
        for (int kk = 0; kk < BR / 16; kk++) wgmma_hold_a(pa[kk]);
        dqr.wait_empty();   /* the writer is done with step st - DQ_STAGES's tile */
        ws_store_dq_tile<C>(sm.dQs + dqr.slot() * DQ::TILE, dq, dqr.slot(), c, warp, g, t, p.scale);
        dqr.arrive_full();
        wgmma_wait<0>();   /* dK */
#pragma unroll
        for (int a = 0; a < HALVES; a++) wgmma_fence_regs(dk[a]);
#pragma unroll
        for (int kk = 0; kk < BR / 16; kk++) wgmma_hold_a(dsa[kk]);
        ring.release();   /* the slot is free for step st + STAGES */
    }
    store_dkdv<D>(args.dK, args.dV, dk, dv, p, kv_off, j0, key0, t);   /* l.18 */
}
#endif
#endif
