/* bwd_wgmma_ws.cu - FlashAttention-3's backward structure on Hopper (chapter 5b, steps 3-4):
 * step 1's products and layouts (bwd_wgmma.cuh), fed by the copy engine and
 * specialised by warp, so that no thread of the two MMA warpgroups issues a copy, waits for
 * one or adds dQ to HBM.
 *
 *   wgmma-ws  grid (Tc, B x H_kv), 3 warpgroups (384 threads): a thread block per K/V block
 *             j of Bc = 128 keys and KV head, as wgmma. Warpgroup 0 gives its registers
 *             away (setmaxnreg 24) and holds two specialists: warp 0, the producer, loads
 *             K_j, V_j once and Q_i, dO_i (TMA boxes) with L_i, D_i (cp.async) into a ring
 *             of STAGES slots; warp 1, the dQ writer, adds each step's dQ_i tile from shared
 *             memory to HBM with one bulk reduce a row (cp.reduce.async.bulk .add.f32).
 *             Warpgroups 1, 2 (setmaxnreg 240) own keys 0-63 and 64-127 and run the five
 *             products.                    build/phase5 --kernel wgmma-ws [--causal]   (sm_90a)
 *   wgmma-det the same, with dQ_i added in a fixed order (DET: turn counters, last K/V block
 *             first; bwd_wgmma_step4.cuh): the gradients are the same bit for bit on every run.
 *                                          build/phase5 --kernel wgmma-det [--causal]  (sm_90a)
 *   wgmma-ws + a FlashMask mask (MASKED, chapter 4c): the Q blocks a K/V block visits are
 *             listed once in shared memory (the tiles not fully masked, FlashMask Sec. 4 from
 *             the K/V block's side), and the producer, the dQ writer and the MMA warpgroups
 *             all walk that one list; partial tiles test each element.
 *                                          build/phase5 --kernel wgmma-ws --mask sliding:1024
 *             wgmma-det has no mask path (its turn order; bwd_wgmma_step4.cuh says why).
 *
 * The kernels: step 3 in bwd_wgmma_step3.cuh (the roles; the MMA warpgroups' step in
 * bwd_wgmma_ws_mma.cuh, the layout in bwd_wgmma_ws_layout.cuh), step 4 in bwd_wgmma_step4.cuh;
 * this file builds the tensor maps and launches them (BWD_WGMMA_WS_TABLE).
 *
 * Who waits for whom (mbarriers: a phase completes when its arrivals are in; the u-th use
 * of a barrier waits for parity u & 1):
 *
 *   producer:  wait empty[s] -> Q_i, dO_i (TMA: bytes), L_i, D_i (cp.async: arrivals) -> full[s]
 *   MMA WGs:   wait full[s]  -> S^T, dP^T, P^T, dS^T, dV, dQ, dK       -> empty[s]
 *                 ... wait dq_empty[q] -> dQ_i tile to shared memory -> dq_full[q]
 *   dQ writer: wait dq_full[q] -> bulk reduces, read back             -> dq_empty[q]
 *
 * The producer never waits for a copy: lane 0 announces the TMA bytes (expect_tx) and every
 * lane's arrival on full[s] is made by the hardware when its cp.async copies have landed
 * (cp.async.mbarrier.arrive), so it runs up to STAGES steps ahead.
 *
 * The blocks (BWD_WGMMA_WS_TABLE, bwd_blocks.h): Bc = 128 keys, 64 a warpgroup, and
 *   d = 128: Br = 64 queries a step (bwd_wgmma.cu's block);
 *   d =  64: Br = 128 (FlashAttention-3's block at d = 64): a 64-query step at d = 64 does
 *            half a d = 128 step's work at the same fixed cost (the waits, the barrier, the
 *            dQ tile). A warpgroup's S^T, dP^T are then two 64 x 64 products each (query
 *            slices qh = 0, 1: 2 x 64 registers a thread beside dK_j, dV_j's 2 x 32), and
 *            dS^T is computed from P^T's fp16 fragments so that S^T's registers are free.
 *
 * One step of an MMA warpgroup, the tensor cores kept busy while the registers work
 * (d = 128; at d = 64, Br = 128, dV is issued as soon as P^T is in the registers, so it
 * runs under the dS^T work):
 *
 *   tensor cores: [S^T][dP^T]        [dV]  |bar|  [dQ][dK]
 *   registers:         P^T = exp(..)  dS^T  |   |       dQ tile -> shared, then wait dK
 *                      (S^T waited,   (dP^T waited)
 *                       dP^T running)
 *
 * Who computes which part of dQ_i = dS K_j (WgDqSplit, bwd_wgmma.cuh), so that the two
 * warpgroups' products need all 128 keys of dS^T, and so meet at a named barrier a step:
 *
 *   d = 128, Br = 64:   dQ_i  64 x 128          d = 64, Br = 128:   dQ_i  128 x 64
 *                       cols 0-63 | 64-127                          rows   0-63: WG 1
 *                       WG 1      | WG 2                            rows 64-127: WG 2
 *
 * dS^T is double-buffered in shared memory (a warpgroup's dQ reads both warpgroups' rows of
 * it): a warpgroup writes step st's buffer only after the named barrier of step st - 1,
 * which the other warpgroup reaches after its dQ of step st - 2 read the same buffer.
 * The dQ tile has one stage (shared memory is full): the writer hands it back (dq_empty) as
 * soon as the copy engine has read it. Each warpgroup stores its part (above) of the tile.
 * (Built with Br = 64 at d = 64, -DBWD_WGMMA_WS_D64_BR=64, each warpgroup's dQ is a partial
 * sum of all 64 columns over its own 64 keys: warpgroup 1 stores its partial, warpgroup 0
 * adds its own after a named barrier a dQ stage, 2 stages, 3 ring slots.)
 *
 * Shared memory (1024-aligned; tiles 128-byte swizzled in 64-column halves, as bwd_wgmma.cu;
 * dS^T at Br = 128 in two 64-query slices of 128 key rows):
 *   | K_j | V_j | Q_i x STAGES | dO_i x STAGES | dS^T x 2 | dQ tile x DQ_STAGES | L_i, D_i x STAGES | barriers |
 *   d = 128, Br =  64 (2 slots, 1 dQ stage):  32 + 32 + 32 + 32 + 32 + 34 + 1 KiB + 1 KiB to align = 196 KiB
 *   d =  64, Br = 128 (2 slots, 1 dQ stage):  16 + 16 + 32 + 32 + 64 + 36 + 2 KiB + 1 KiB          = 199 KiB
 */
#include <cuda.h>        /* CUtensorMap */
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include "cuda_check.cuh"
#include "bwd.h"
#include "tma_map.cuh"
#include "bwd_gpu.cuh"   /* here first: an exercise build's copy beside this file is the one the kernel sees */
#include "bwd_wgmma_step3.cuh"   /* step 3: the copy engine, warp specialisation (and a mask) */
#include "bwd_wgmma_step4.cuh"   /* step 4: dQ_i added in a fixed order */

/* MASKED: the shared memory past the barriers: the list's length (16 bytes), a uint16_t per Q
 * block, and 16 bytes for the barriers' end rounded up to 16 (MASK_OFF) */
static size_t mask_list_bytes(int Tr) { return 32 + ((2 * (size_t)Tr + 15) & ~(size_t)15); }

/* What must hold for every row of BWD_WGMMA_WS_TABLE (bwd_blocks.h) */
#define BWDWS_ASSERT_ROW(D_, BR_, BC_)                                                                    \
    static_assert(WsBwdCfg<D_, BR_, BC_>::SMEM + 32 + 2 * BWD_MASK_MAX_TR <= SMEM_OPTIN_SM90,             \
                  "wgmma-ws bwd: shared memory (and a mask's Q-block list) above 227 KiB");
BWD_WGMMA_WS_TABLE(BWDWS_ASSERT_ROW)
#undef BWDWS_ASSERT_ROW

/* DET's turn counters: one int per query head and Q block, zeroed before each launch; kept
 * between launches (grown when a larger problem comes) */
static int *dq_turn_buffer(const attn_problem_t *p, int br)
{
    static int *buf = NULL;
    static size_t cap = 0;
    const size_t n = (size_t)p->B * p->H * ((p->N_q + br - 1) / br);
    if (n > cap) {
        if (buf) CUDA_CHECK(cudaFree(buf));
        CUDA_CHECK(cudaMalloc(&buf, n * sizeof(int)));
        cap = n;
    }
    CUDA_CHECK(cudaMemsetAsync(buf, 0, n * sizeof(int)));
    return buf;
}

template <int D, int BR, int BC, bool DET, bool MASKED = false>
static void launch_ws(const attn_problem_t *p, const bwd_gpu_args_t *a)
{
    using C = WsBwdCfg<D, BR, BC>;
    const dim3 grid((p->N_kv + BC - 1) / BC, p->B * p->H_kv);
    WsBwdArgs x;
    x.p = *p;
    x.tq = tma_map_3d_f16(a->Q, D, p->N_q, p->B * p->H, 64, "wgmma-ws");
    x.tdo = tma_map_3d_f16(a->dO, D, p->N_q, p->B * p->H, 64, "wgmma-ws");
    x.tk = tma_map_3d_f16(a->K, D, p->N_kv, p->B * p->H_kv, 64, "wgmma-ws");
    x.tv = tma_map_3d_f16(a->V, D, p->N_kv, p->B * p->H_kv, 64, "wgmma-ws");
    x.L = a->L; x.D = a->D; x.dQ = a->dQ; x.dK = a->dK; x.dV = a->dV;
    x.vis = gpu_visits(grid.x);
    x.dq_turn = DET ? dq_turn_buffer(p, BR) : NULL;
    /* FlashMask: the vectors (an input, uploaded once) and this launch's preprocessing pass at Bc */
    x.mblk = MASKED ? mask_gpu_blocks(mask_gpu_runs(attn_mask(p)), p->N_kv, BC) : NULL;
    x.mcols = MASKED ? mask_gpu_columns(attn_mask(p)) : NULL;
    bwd_preprocess_launch(p, a, 1);   /* D = rowsum(dO * O), dQ = 0 */
    static bool attr = false;
    if (!attr) {
        CUDA_CHECK(cudaFuncSetAttribute(bwd_wgmma_ws_kernel<D, BR, BC, DET, MASKED>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)(C::SMEM + (MASKED ? mask_list_bytes(BWD_MASK_MAX_TR) : 0))));
        attr = true;
    }
    const size_t smem = C::SMEM + (MASKED ? mask_list_bytes((p->N_q + BR - 1) / BR) : 0);
    bwd_wgmma_ws_kernel<D, BR, BC, DET, MASKED><<<grid, C::THREADS, smem>>>(x);
    CUDA_CHECK_LAUNCH();
}

extern "C" int bwd_wgmma_ws_config(int d, bool det, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = det ? "wgmma-det" : "wgmma-ws";
    switch (d) {
#define BWDWS_CONFIG_ROW(D_, BR_, BC_)                      \
    case D_:                                                \
        c->blocks.Br = BR_; c->blocks.Bc = BC_;             \
        c->threads = WsBwdCfg<D_, BR_, BC_>::THREADS;       \
        c->smem_bytes = WsBwdCfg<D_, BR_, BC_>::SMEM;       \
        break;
    BWD_WGMMA_WS_TABLE(BWDWS_CONFIG_ROW)
#undef BWDWS_CONFIG_ROW
    default:
        snprintf(why, len, "kernel %s is built for d = 64 and 128 (bwd_blocks.h), not d = %d", c->name, d);
        return -1;
    }
    return gpu_config_fits(c, 1, why, len);   /* built for sm_90a alone */
}

extern "C" void bwd_wgmma_ws_launch(const attn_problem_t *p, bool det, const bwd_gpu_args_t *a)
{
    switch (p->d) {
#define BWDWS_LAUNCH_ROW(D_, BR_, BC_)                       \
    case D_:                                                 \
        if (det) launch_ws<D_, BR_, BC_, true>(p, a);        \
        else if (attn_mask(p)) launch_ws<D_, BR_, BC_, false, true>(p, a);   /* FlashMask */ \
        else launch_ws<D_, BR_, BC_, false>(p, a);           \
        break;
    BWD_WGMMA_WS_TABLE(BWDWS_LAUNCH_ROW)
#undef BWDWS_LAUNCH_ROW
    default: break;   /* bwd_wgmma_ws_config() said -1 */
    }
}
