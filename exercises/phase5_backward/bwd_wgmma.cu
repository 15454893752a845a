/* bwd_wgmma.cu - FlashAttention-2's backward (Alg. 2) on Hopper's warpgroup MMA
 * (common/wgmma.cuh): the first step toward FlashAttention-3's backward (chapter 5b).
 *
 *   wgmma   grid (Tc, B x H_kv), 2 warpgroups (256 threads): a thread block per K/V block j
 *           of Bc = 128 keys and KV head, the G query heads of that KV head in its loop
 *           (GQA's dK, dV sum stays on chip); per step (query head h, Q block i of Br = 64
 *           rows) the five products of Alg. 2 as wgmma.mma_async, Q_i, dO_i, L_i, D_i
 *           double-buffered with cp.async, dQ_i added to HBM with fp32 atomics.
 *                                          build/phase5 --kernel wgmma [--causal]   (sm_90a)
 *
 * The ladder (chapter 5b), one header a step, each a --kernel row, each holding what it adds:
 *   step 1  bwd_wgmma_step1.cuh  wgmma      this kernel        build/phase5 --kernel wgmma
 *   step 2  bwd_wgmma_step2.cuh  wgmma-dq   dQ through shared memory and one bulk reduce a
 *                                           row (FA3's dQ path) instead of element atomics
 *                                                              build/phase5 --kernel wgmma-dq
 *   step 3  bwd_wgmma_step3.cuh  wgmma-ws   the copy engine (TMA), a producer warp, a dQ
 *                                           writer warp, two MMA warpgroups (bwd_wgmma_ws.cu)
 *                                                              build/phase5 --kernel wgmma-ws
 *   step 4  bwd_wgmma_step4.cuh  wgmma-det  dQ added in a fixed order
 *                                                              build/phase5 --kernel wgmma-det
 * and the parts they share: bwd_wgmma.cuh (the products, P^T, dS^T), bwd_wgmma_pipe.cuh (the
 * alignment, the ring, the named barriers), bwd_wgmma_load.cuh (the loads),
 * bwd_wgmma_epilogue.cuh (dQ's adds, dK_j and dV_j), bwd_wgmma_ws_layout.cuh and
 * bwd_wgmma_ws_mma.cuh (steps 3-4's layout and MMA warpgroups). This file launches steps 1
 * and 2 (BWD_WGMMA_TABLE), bwd_wgmma_ws.cu steps 3 and 4 (BWD_WGMMA_WS_TABLE).
 *
 * Keys are the M dimension (as FA3 lays it out): warpgroup w owns keys 64 w .. 64 w + 63 of
 * the block, and computes the TRANSPOSED scores, S^T = K_j Q_i^T and dP^T = V_j dO_i^T. Its
 * accumulators then hold P^T and dS^T in wgmma's accumulator layout, which warp by warp is
 * mma.sync's C layout, which is exactly the register-A layout of the next wgmma (wgmma.cuh):
 * dV_j += P^T dO_i and dK_j += dS^T Q_i take P^T, dS^T straight from the registers.
 *
 *   S^T, dP^T: Bc x Br (keys x queries)       dK_j, dV_j: Bc x d (registers, whole loop)
 *                 queries 0 .. 63                          d 0 .. 63   d 64 .. 127
 *   keys   0      WG0 (warp 0: keys 0-15,       keys   0   WG0         WG0
 *   keys  64      WG1  warp 1: 16-31, ...)      keys  64   WG1         WG1
 *
 *   dQ_i: Br x d (one product for the block, K = its 128 keys; atomics into HBM)
 *     d = 128:      d 0 .. 63 by WG0, d 64 .. 127 by WG1, each over all 128 keys
 *     d = 64:       all 64 columns by both: WG0 over keys 0-63, WG1 over keys 64-127
 *                   (each adds its half of the sum: twice the atomics, as many wgmma's)
 *
 * Where each operand comes from, and why:
 *
 *   S^T  = K_j Q_i^T   A = K_j   shared (descriptor, K-major: d contiguous), this WG's rows
 *                      B = Q_i   shared (K-major: Q_i^T's k = d runs along Q's rows)
 *   dP^T = V_j dO_i^T  A = V_j, B = dO_i: the same
 *   dV  += P^T dO_i    A = P^T   REGISTERS: the S^T accumulators, rounded to fp16
 *                      B = dO_i  shared, MN-major (d contiguous: read "transposed", as V
 *                                is for the forward's O = P V)
 *   dK  += dS^T Q_i    A = dS^T  REGISTERS (the dP^T accumulators, made dS^T)
 *                      B = Q_i   shared, MN-major
 *   dQ   = dS K_j      A = dS    shared: dQ's rows are queries, but a thread holds dS^T for
 *                                its KEYS, so dS^T goes through shared memory (fp16), stored
 *                                as it sits in the registers, [key][query], and read as A
 *                                with the transpose flag (MN-major A: M = query contiguous)
 *                      B = K_j   shared, MN-major (d contiguous)
 *
 * Shared memory (1024-aligned; every tile 128-byte swizzled as wgmma.cuh draws it, in
 * "halves" of 64 fp16 columns: half a of a tile of R rows starts at a R 128 bytes, row r of
 * it at r 128, its 16-byte chunk c at position c ^ (r % 8)):
 *
 *   | K_j  Bc x d | V_j  Bc x d | Q_i  2 x Br x d | dO_i  2 x Br x d | dS^T  Bc x Br | L_i, D_i |
 *     [half 0: 128 rows][half 1]    (2 x: the two cp.async stages)     (keys x queries:
 *                                                                       Br = 64: one half)
 *   d = 128: 32 + 32 + 32 + 32 + 16 KiB + 1 KiB + 1 KiB to align = 146 KiB (149504 bytes)
 *   d =  64: 16 + 16 + 16 + 16 + 16 KiB + 1 KiB + 1 KiB             =  82 KiB ( 83968 bytes)
 *
 *   one half of a tile (here dS^T: keys x 64 queries), 16-byte chunks c0..c7 of 8 fp16:
 *
 *     key 0   c0 c1 c2 c3 c4 c5 c6 c7     a warp's dS^T store (bwd_ds): lane (g, t) writes
 *     key 1   c1 c0 c3 c2 c5 c4 c7 c6     word t of chunk c of key row g, which lands at
 *     key 2   c2 c3 c0 c1 c6 c7 c4 c5     position c ^ g: the 8 rows' chunks in 8 different
 *     ...                                 positions, 4 words each: 32 banks, no conflict
 *     key 7   c7 c6 c5 c4 c3 c2 c1 c0     (the descriptors name this 128-byte swizzle; the
 *     key 8   c0 c1 ...  (the pattern     tensor cores undo it on their reads)
 *             repeats every 8 rows: 1 KiB, the descriptors' stride offset)
 *
 *   K-major descriptor (S^T's A = K_j, B = Q_i): start = the half + 32 bytes a k16 slice
 *   (kk % 4), stride offset 1024 (8 rows on); MN-major (dV's and dK's B, dQ's A and B):
 *   start = the half + 16 rows (2048 bytes) a k16 slice, stride offset 1024; the leading
 *   offset (the next 64 columns) is never used: every wgmma here is 64 wide in M and N.
 *
 * Why Br = 64, Bc = 128 at both d (BWD_WGMMA_TABLE, bwd_blocks.h): a warpgroup's wgmma is 64
 * rows of M, so a warpgroup owns 64 keys; two warpgroups hold Bc = 128 keys. Per thread
 * (d = 128): dK_j, dV_j 2 x 64 floats for the whole loop, S^T and dP^T 2 x 32 (Br = 64 as
 * N), the P^T and dS^T fragments 2 x 16, dQ 32: 251 registers (ptxas, below) of the 255 that
 * __launch_bounds__(256, 1) allows; Br = 128 would double S^T and dP^T to 2 x 64 and spill.
 * FA3 picks the same blocks at d = 128 (64 x 128, two MMA warpgroups). d = 64 keeps them:
 * its accumulators are half as big, and Br = 64 keeps one code path (dS^T rows of exactly
 * one 128-byte swizzle row). ptxas (CUDA 13, sm_90a, make phase5-spills): see the table at
 * the end of this comment.
 *
 * Each product is waited for (wgmma_wait<0>) before its result is used: no overlap yet
 * (only dV, dK's group runs on across the barrier and dQ's issue). At d = 64 the 214
 * registers leave room for one block of 256 threads an SM although its 82 KiB would let
 * two in: a tuning step for later.
 * tools/mma_emu/run.sh wgmma runs this kernel on the CPU (emulated wgmma, descriptors and
 * swizzle decoded from the PTX ISA's layouts; the same emulation first reproduces phase 4's
 * fa2-wgmma, which PASSed on an H100) against an fp64 backward.
 *
 * ptxas, CUDA 13.0, sm_90a, no spills:   d = 64: 214 registers   d = 128: 251 registers
 * (wgmma-dq: 213 and 250)
 */
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include "cuda_check.cuh"
#include "bwd.h"
#include "bwd_gpu.cuh"   /* here first: an exercise build's copy beside this file is the one the kernel sees */
#include "bwd_wgmma_step1.cuh"   /* step 1: the kernel, dQ by atomics */
#include "bwd_wgmma_step2.cuh"   /* step 2: dQ through a shared tile and bulk reduces */

/* What must hold for every row of BWD_WGMMA_TABLE (bwd_blocks.h), both dQ paths */
#define BWDWG_ASSERT_ROW(D_, BR_, BC_)                                                                         \
    static_assert(WgBwdCfg<D_, BR_, BC_, false>::SMEM <= SMEM_OPTIN_SM90, "wgmma bwd: shared memory above 227 KiB"); \
    static_assert(WgBwdCfg<D_, BR_, BC_, true>::SMEM <= SMEM_OPTIN_SM90, "wgmma-dq bwd: shared memory above 227 KiB");
BWD_WGMMA_TABLE(BWDWG_ASSERT_ROW)
#undef BWDWG_ASSERT_ROW

template <int D, int BR, int BC, bool BULK>
static void launch_wg(const attn_problem_t *p, const bwd_gpu_args_t *a)
{
    using C = WgBwdCfg<D, BR, BC, BULK>;
    const dim3 grid((p->N_kv + BC - 1) / BC, p->B * p->H_kv);
    const gpu_visits_t vis = gpu_visits(grid.x);
    bwd_preprocess_launch(p, a, 1);   /* D = rowsum(dO * O), dQ = 0 */
    static bool attr = false;
    if (!attr) {
        CUDA_CHECK(cudaFuncSetAttribute(bwd_wgmma_kernel<D, BR, BC, BULK>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)C::SMEM));
        attr = true;
    }
    bwd_wgmma_kernel<D, BR, BC, BULK><<<grid, C::THREADS, C::SMEM>>>(
        *p, (const __half *)a->Q, (const __half *)a->K, (const __half *)a->V, (const __half *)a->dO,
        a->L, a->D, a->dQ, a->dK, a->dV, vis);
    CUDA_CHECK_LAUNCH();
}

extern "C" int bwd_wgmma_config(int d, bool dq_bulk, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = dq_bulk ? "wgmma-dq" : "wgmma";
    switch (d) {
#define BWDWG_CONFIG_ROW(D_, BR_, BC_)                                                                     \
    case D_:                                                                                               \
        c->blocks.Br = BR_; c->blocks.Bc = BC_;                                                            \
        c->threads = WgBwdCfg<D_, BR_, BC_>::THREADS;                                                      \
        c->smem_bytes = dq_bulk ? WgBwdCfg<D_, BR_, BC_, true>::SMEM : WgBwdCfg<D_, BR_, BC_, false>::SMEM; \
        break;
    BWD_WGMMA_TABLE(BWDWG_CONFIG_ROW)
#undef BWDWG_CONFIG_ROW
    default:
        snprintf(why, len, "kernel %s is built for d = 64 and 128 (bwd_blocks.h), not d = %d", c->name, d);
        return -1;
    }
    return gpu_config_fits(c, 1, why, len);   /* built for sm_90a alone */
}

extern "C" void bwd_wgmma_launch(const attn_problem_t *p, bool dq_bulk, const bwd_gpu_args_t *a)
{
    switch (p->d) {
#define BWDWG_LAUNCH_ROW(D_, BR_, BC_)                               \
    case D_:                                                         \
        if (dq_bulk) launch_wg<D_, BR_, BC_, true>(p, a);            \
        else launch_wg<D_, BR_, BC_, false>(p, a);                   \
        break;
    BWD_WGMMA_TABLE(BWDWG_LAUNCH_ROW)
#undef BWDWG_LAUNCH_ROW
    default: break;   /* bwd_wgmma_config() said -1 */
    }
}
