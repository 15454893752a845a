/* bwd_wgmma_ws_layout.cuh - what steps 3-4 of the Hopper backward (bwd_wgmma_step3.cuh,
 * _step4.cuh) are built on: their configuration (ring slots, dQ tile stages), the launch's
 * arguments, and the shared memory's layout with the view every role reads it through.
 * Pictures and sizes: bwd_wgmma_ws.cu's head comment.
 */
#ifndef PHASE5_BWD_WGMMA_WS_LAYOUT_CUH
#define PHASE5_BWD_WGMMA_WS_LAYOUT_CUH
#include <cuda.h>   /* CUtensorMap */
#include "bwd_gpu.cuh"
#include "bwd_wgmma.cuh"
#include "bwd_wgmma_pipe.cuh"

/* The regions in order (swizzled tiles 1024-aligned, L_i and D_i as floats, mbarriers 8):
 *   | K_j | V_j | Q_i x STAGES | dO_i x STAGES | dS^T x 2 | dQ tile x DQ_STAGES | L_i, D_i x STAGES | barriers | */
template <int D_, int BR_, int BC_>
struct WsBwdCfg {
    static constexpr int D = D_, BR = BR_, BC = BC_;
    static constexpr int MMA_WGS = BC / 64, MMA_THREADS = MMA_WGS * WGB_THREADS;
    static constexpr int THREADS = WGB_THREADS + MMA_THREADS;
    /* ring slots for Q_i, dO_i, L_i, D_i, and dQ tile stages: as many as 227 KiB allow (a
     * d = 64 step is half as long, so its copies need more of a head start) */
    using DQ = WgDqSplit<D, BC, BR>;
    static constexpr int QH = BR / 64;   /* 64-query slices of a step: S^T, dP^T as QH n64 products */
    static constexpr int STAGES = (D <= 64 && BR == 64) ? 3 : 2, DQ_STAGES = DQ::BY_KEYS ? 2 : 1;
    static constexpr size_t KV_TILE = (size_t)BC * D * 2, Q_TILE = (size_t)BR * D * 2, DS_TILE = (size_t)BC * BR * 2;
    static constexpr size_t K_OFF = 0, V_OFF = KV_TILE, Q_OFF = 2 * KV_TILE;
    static constexpr size_t DO_OFF = Q_OFF + STAGES * Q_TILE;
    static constexpr size_t DS_OFF = DO_OFF + STAGES * Q_TILE;          /* 2 buffers         */
    static constexpr size_t DQ_OFF = DS_OFF + 2 * DS_TILE;              /* one tile a stage  */
    static constexpr size_t LD_OFF = DQ_OFF + DQ_STAGES * DQ::TILE;     /* L, D: STAGES each */
    static constexpr size_t BAR_OFF = LD_OFF + 2 * STAGES * BR * sizeof(float);
    static constexpr int BARS = 1 + 2 * STAGES + 2 * DQ_STAGES;   /* kv_full, full[], empty[], dq_full[], dq_empty[] */
    static constexpr size_t SMEM = BAR_OFF + 8 * BARS + SW_ALIGN;   /* + room to align */
    /* MASKED: past the barriers, the Q-block list's length and the list (mask_list_bytes more) */
    static constexpr size_t MASK_OFF = (BAR_OFF + 8 * BARS + 15) / 16 * 16;
    static_assert((BR == 64 || (BR == 128 && D == 64)) && BC == 128 && D % 64 == 0,
                  "wgmma-ws bwd: Br = 64 (bwd_wgmma.cu's blocks), or 128 at d = 64 (FA3's)");
    static_assert(V_OFF % SW_ALIGN == 0 && Q_TILE % SW_ALIGN == 0 && DS_TILE % SW_ALIGN == 0 && DQ_OFF % SW_ALIGN == 0,
                  "wgmma-ws bwd: swizzled tiles 1024-aligned");
    static_assert(DQ::TILE % 16 == 0 && LD_OFF % 16 == 0 && BAR_OFF % 8 == 0,
                  "wgmma-ws bwd: dQ rows 16-aligned for the bulk reduce, mbarriers 8-aligned");
};

/* What a launch needs, by value (the tensor maps must live in parameter space): Q, dO as
 * [B H][N_q][d], K, V as [B H_kv][N_kv][d], boxes of 64 rows x 64 columns. */
struct WsBwdArgs {
    attn_problem_t p;
    CUtensorMap tq, tdo, tk, tv;
    const float *L, *D;
    float *dQ, *dK, *dV;
    gpu_visits_t vis;
    int *dq_turn;   /* DET: per query head and Q block, how many K/V blocks have added their dQ_i */
    const int32_t *mcols, *mblk;   /* MASKED: the mask's columns (int4 each) and the 8 per-block min/max */
};

#if FA_HAVE_WGMMA
/* The regions of WsBwdCfg's layout, at the block's 1024-aligned shared memory; the barriers'
 * counts (one thread initialises them, before the block's barrier) */
template <class C>
struct WsSmem {
    unsigned char *Ks, *Vs, *Qs, *dOs, *dSs, *dQs;
    float *Ls, *Ds;
    uint64_t *kv_full, *full, *empty, *dq_full, *dq_empty;
    int *n_vis;       /* MASKED: how many Q blocks the list holds */
    uint16_t *list;   /* MASKED: the visited Q blocks (bwd_mask_q_blocks) */
    __device__ __forceinline__ explicit WsSmem(unsigned char *base)
        : Ks(base + C::K_OFF), Vs(base + C::V_OFF), Qs(base + C::Q_OFF), dOs(base + C::DO_OFF), dSs(base + C::DS_OFF),
          dQs(base + C::DQ_OFF), Ls((float *)(base + C::LD_OFF)), Ds((float *)(base + C::LD_OFF) + C::STAGES * C::BR),
          kv_full((uint64_t *)(base + C::BAR_OFF)), full(kv_full + 1), empty(full + C::STAGES),
          dq_full(empty + C::STAGES), dq_empty(dq_full + C::DQ_STAGES), n_vis((int *)(base + C::MASK_OFF)),
          list((uint16_t *)(base + C::MASK_OFF + 16)) {}
    __device__ __forceinline__ void init_barriers() const
    {
        mbar_init(kv_full, 1);
        for (int s = 0; s < C::STAGES; s++) {
            mbar_init(full + s, 32);                 /* the producer warp's lanes' L_i, D_i copies (+ bytes) */
            mbar_init(empty + s, C::MMA_THREADS);    /* every MMA thread is done with the slot */
        }
        for (int s = 0; s < C::DQ_STAGES; s++) {
            mbar_init(dq_full + s, C::MMA_THREADS);  /* every MMA thread stored its part of dQ_i */
            mbar_init(dq_empty + s, 1);              /* the writer: the copy engine has read it  */
        }
        mbar_init_fence();
    }
};
#endif
#endif
