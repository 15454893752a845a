/* bwd_wgmma_step1.cuh - step 1 of the Hopper backward (chapter 5b): FA2's Alg. 2 with the five
 * products as warpgroup MMAs, keys as the M dimension, P^T and dS^T fed to dV and dK from the
 * registers, dS^T through shared memory for dQ, dQ_i added to HBM by float2 atomics.
 *                                          build/phase5 --kernel wgmma [--causal]   (sm_90a)
 * The layouts and the reasons for them: bwd_wgmma.cu's head comment. Step 2 (wgmma-dq,
 * bwd_wgmma_step2.cuh) is this kernel with another dQ path (WgDqPath<C, true>).
 */
#ifndef PHASE5_BWD_WGMMA_STEP1_CUH
#define PHASE5_BWD_WGMMA_STEP1_CUH
#include "bwd_gpu.cuh"
#include "bwd_wgmma.cuh"   /* the products, P^T and dS^T */
#include "bwd_wgmma_pipe.cuh"
#include "bwd_wgmma_load.cuh"
#include "bwd_wgmma_epilogue.cuh"
#include "visits.cuh"

/* D: head dimension; BR x BC the block (BC / 64 warpgroups, one per 64 keys); BULK: dQ_i
 * through shared memory and bulk reductions (step 2) instead of float2 atomics. The shared
 * memory's regions, in order (each swizzled tile 1024-aligned, checked below):
 *   | K_j | V_j | Q_i x 2 stages | dO_i x 2 stages | dS^T (BC x BR) | L_i, D_i x 2 | BULK: dQ tiles x 2 | */
template <int D_, int BR_, int BC_, bool BULK_ = false>
struct WgBwdCfg {
    static constexpr int D = D_, BR = BR_, BC = BC_;
    static constexpr bool BULK = BULK_;
    static constexpr int WGS = BC / 64, THREADS = WGS * WGB_THREADS;
    static constexpr int HALVES = D / 64;                  /* 64-column halves of a row   */
    static constexpr size_t KV_TILE = (size_t)BC * D * 2, Q_TILE = (size_t)BR * D * 2;
    static constexpr size_t K_OFF = 0, V_OFF = KV_TILE;
    static constexpr size_t Q_OFF = 2 * KV_TILE;           /* 2 stages                     */
    static constexpr size_t DO_OFF = Q_OFF + 2 * Q_TILE;   /* 2 stages                     */
    static constexpr size_t DS_OFF = DO_OFF + 2 * Q_TILE;  /* dS^T: BC x BR fp16           */
    static constexpr size_t L_OFF = DS_OFF + (size_t)BC * BR * 2;   /* L, D: 2 stages each */
    static constexpr size_t DQ_OFF = L_OFF + 4 * sizeof(float) * BR;   /* BULK: dQ tiles      */
    /* dQ = dS K_j split over the warpgroups (WgDqSplit: by halves of d at d = 128, by keys
     * at d = 64). BULK: a stage holds its DQ_TILES fp32 tiles of padded rows; two stages, so
     * that step st writes one while step st - 1's bulk reduce still reads the other */
    using DQ = WgDqSplit<D, BC>;
    static constexpr bool DQ_BY_KEYS = DQ::BY_KEYS;
    static constexpr int DQ_HALVES = DQ::NH;
    static constexpr int DQ_TILES = BULK ? DQ::TILES : 0;
    static constexpr int DQ_PITCH = DQ::PITCH;
    static constexpr size_t DQ_TILE = DQ::TILE;
    static constexpr size_t SMEM = DQ_OFF + 2 * DQ_TILES * DQ_TILE + SW_ALIGN;  /* + room to align */
    static_assert(K_OFF % SW_ALIGN == 0 && V_OFF % SW_ALIGN == 0 && Q_OFF % SW_ALIGN == 0 && DO_OFF % SW_ALIGN == 0 &&
                  DS_OFF % SW_ALIGN == 0 && Q_TILE % SW_ALIGN == 0, "wgmma bwd: swizzled tiles 1024-aligned");
    static_assert(DQ_OFF % 16 == 0, "wgmma bwd: bulk reduce rows 16-byte aligned");
    static_assert(BR == 64, "wgmma bwd: S^T's N and a dS^T row are 64 queries (one swizzled row)");
    static_assert(BC % 64 == 0 && D % 64 == 0, "wgmma bwd: whole 64-row warpgroups, 64-column halves");
};

/* The dQ path of steps 1 (BULK false, below) and 2 (bwd_wgmma_step2.cuh): before_step(), at
 * the top of each step; add(), a step's dQ_i share (Alg. 2 l.15); finish(), after the loop. */
template <class C, bool BULK = C::BULK>
struct WgDqPath;

#if FA_HAVE_WGMMA
/* The regions of WgBwdCfg's layout, at the block's 1024-aligned shared memory */
template <class C>
struct WgSmem {
    unsigned char *Ks, *Vs, *Qs, *dOs, *dSs, *dQs;
    float *Ls, *Ds;
    __device__ __forceinline__ explicit WgSmem(unsigned char *base)
        : Ks(base + C::K_OFF), Vs(base + C::V_OFF), Qs(base + C::Q_OFF), dOs(base + C::DO_OFF), dSs(base + C::DS_OFF),
          dQs(base + C::DQ_OFF), Ls((float *)(base + C::L_OFF)), Ds((float *)(base + C::L_OFF) + 2 * C::BR) {}
};

template <class C>
struct WgDqPath<C, false> {
    static __device__ __forceinline__ void before_step() {}
    static __device__ __forceinline__ void add(const WgSmem<C> &, const float (&dq)[C::DQ_HALVES][32], int, float *dQi,
                                               int valid, float scale, int wg, int warp, int g, int t)
    {
        add_dq<C::D, C::DQ_HALVES>(dQi, dq, C::DQ_BY_KEYS ? 0 : wg * C::DQ_HALVES, warp, g, t, valid, scale);
    }
    static __device__ __forceinline__ void finish() {}
};

/* Alg. 2 l.10, l.12: S^T = K_j Q_i^T and dP^T = V_j dO_i^T, this warpgroup's 64 keys (Kw, Vw)
 * x BR queries, one group, waited for */
template <int D, int BR, int BC>
__device__ __forceinline__ void s_and_dp(float (&s)[32], float (&dp)[32], const unsigned char *Kw,
                                         const unsigned char *Vw, const unsigned char *Qi, const unsigned char *dOi)
{
    wgmma_fence();
    issue_nt<D, BR, BC>(s, Kw, Qi);
    issue_nt<D, BR, BC>(dp, Vw, dOi);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_regs(s);
    wgmma_fence_regs(dp);
}

/* Alg. 2 l.13, l.16 issued: dV_j += P^T dO_i, dK_j += dS^T Q_i (A from the registers), one group */
template <int D, int BR>
__device__ __forceinline__ void issue_dv_dk(float (&dv)[D / 64][32], float (&dk)[D / 64][32],
                                            const uint32_t (&pa)[BR / 16][4], const uint32_t (&dsa)[BR / 16][4],
                                            const unsigned char *dOi, const unsigned char *Qi)
{
    wgmma_fence();
    issue_rs<D, BR>(dv, pa, dOi);
    issue_rs<D, BR>(dk, dsa, Qi);
    wgmma_commit();
}

/* dV, dK and dQ's groups complete; their accumulators and the A fragments they read are the
 * registers' again */
template <int D, int BR, int NH>
__device__ __forceinline__ void wait_products(float (&dv)[D / 64][32], float (&dk)[D / 64][32], float (&dq)[NH][32],
                                              uint32_t (&pa)[BR / 16][4], uint32_t (&dsa)[BR / 16][4])
{
    wgmma_wait<0>();
#pragma unroll
    for (int a = 0; a < D / 64; a++) { wgmma_fence_regs(dv[a]); wgmma_fence_regs(dk[a]); }
#pragma unroll
    for (int h = 0; h < NH; h++) wgmma_fence_regs(dq[h]);
#pragma unroll
    for (int kk = 0; kk < BR / 16; kk++) { wgmma_hold_a(pa[kk]); wgmma_hold_a(dsa[kk]); }
}
#endif

template <int D, int BR, int BC, bool BULK>
__global__ void __launch_bounds__(WgBwdCfg<D, BR, BC, BULK>::THREADS, 1)   /* up to 255 registers: dK_j, dV_j */
bwd_wgmma_kernel(attn_problem_t p, const __half *Qg, const __half *Kg, const __half *Vg, const __half *dOg,
                 const float *Lg, const float *Dg, float *dQg, float *dKg, float *dVg, gpu_visits_t vis)
{
#if FA_HAVE_WGMMA
    using C = WgBwdCfg<D, BR, BC, BULK>;
    using DqPath = WgDqPath<C>;
    constexpr int THREADS = C::THREADS, HALVES = C::HALVES;
    BWD_DYNAMIC_SMEM(smem_raw);
    const WgSmem<C> sm(smem_raw + swizzle_pad(smem_raw));   /* still a shared pointer */
    const int wg = threadIdx.x / WGB_THREADS, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int key0 = 64 * wg + 16 * warp + g;   /* this thread's keys of the block: key0, key0 + 8 */
    const int j = blockIdx.x, b = blockIdx.y / p.H_kv, kvh = blockIdx.y % p.H_kv;
    const int j0 = j * BC;
    const float sl2 = p.scale * BWD_LOG2E;
    const size_t kv_off = ((size_t)b * p.H_kv + kvh) * p.N_kv * D;

    /* Alg. 2 l.5-6: the Q blocks this K/V block visits, for each of the G query heads */
    const bwd_steps_t sched = bwd_steps(p, j, b, kvh, BR, BC, !visit_all(vis));
    const int steps = sched.count;
    if (threadIdx.x == 0) visit_count(vis, j, steps);   /* the driver holds it to bwd_q_block_first() */
    auto load_step = [&](int st, int stage) {   /* l.9: Q_i, dO_i, L_i, D_i into a stage */
        load_step_sw<D, BR, THREADS>(sched, st, sm.Qs + stage * C::Q_TILE, sm.dOs + stage * C::Q_TILE, sm.Ls + stage * BR,
                                     sm.Ds + stage * BR, Qg, dOg, Lg, Dg, p.N_q);
    };

    /* l.6: K_j, V_j into shared memory (rows past N_kv zero), and the first step */
    load_tile_sw<BC, D, THREADS>(sm.Ks, Kg + kv_off + (size_t)j0 * D, p.N_kv - j0);
    load_tile_sw<BC, D, THREADS>(sm.Vs, Vg + kv_off + (size_t)j0 * D, p.N_kv - j0);
    if (steps > 0) load_step(0, 0);
    cp_async_commit();

    float dk[HALVES][32], dv[HALVES][32];   /* l.7: this warpgroup's 64 rows of dK_j, dV_j */
#pragma unroll
    for (int a = 0; a < HALVES; a++)
#pragma unroll
        for (int e = 0; e < 32; e++) dk[a][e] = dv[a][e] = 0.0f;

    for (int st = 0; st < steps; st++) {                                      /* l.8 */
        const int stage = st % 2;
        DqPath::before_step();
        cp_async_wait<0>();
        fence_proxy_async();   /* the tiles were written by ordinary (cp.async) copies; the
                                  tensor cores read them next */
        __syncthreads();   /* this step's tiles landed and are visible to all; every warpgroup's
                              products of the last step (the other stage, dS^T) are complete */
        if (st + 1 < steps) { load_step(st + 1, 1 - stage); cp_async_commit(); }   /* l.9 */
        const unsigned char *Qi = sm.Qs + stage * C::Q_TILE, *dOi = sm.dOs + stage * C::Q_TILE;
        int i; size_t l_off;
        sched.at(st, BR, i, l_off);
        const bool mask = bwd_block_needs_mask(p, i, j, BR, BC);

        float s[32], dp[32];
        uint32_t pa[BR / 16][4], dsa[BR / 16][4];
        s_and_dp<D, BR, BC>(s, dp, sm.Ks + wg * 64 * SW_ROW, sm.Vs + wg * 64 * SW_ROW, Qi, dOi);   /* l.10, l.12 */
        bwd_p<BR>(s, pa, sm.Ls + stage * BR, p, i * BR, key0, j0, mask, sl2, t);                    /* l.11 */
        bwd_ds<BR>(s, dp, dsa, sm.dSs, sm.Ds + stage * BR, key0, t);                                /* l.13-14 */
        fence_proxy_async();   /* dS^T was written by ordinary stores; the tensor cores read it */
        issue_dv_dk<D, BR>(dv, dk, pa, dsa, dOi, Qi);                                              /* l.13, l.16 */
        __syncthreads();   /* both warpgroups' dS^T rows are in shared memory */
        float dq[C::DQ_HALVES][32];
        issue_dq<D, BR, BC>(dq, sm.dSs, sm.Ks, wg);                                                 /* l.15 */
        wait_products<D, BR, C::DQ_HALVES>(dv, dk, dq, pa, dsa);
        DqPath::add(sm, dq, stage, dQg + l_off * D, p.N_q - i * BR, p.scale, wg, warp, g, t);
    }
    DqPath::finish();
    cp_async_wait<0>();   /* steps = 0: K_j, V_j's copies land before the block exits */
    store_dkdv<D>(dKg, dVg, dk, dv, p, kv_off, j0, key0, t);   /* l.18 */
#else
    (void)p; (void)Qg; (void)Kg; (void)Vg; (void)dOg; (void)Lg; (void)Dg; (void)dQg; (void)dKg; (void)dVg; (void)vis;
#endif
}
#endif
