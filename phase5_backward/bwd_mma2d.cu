/* bwd_mma2d.cu - FlashAttention-2's backward (Alg. 2) on the tensor cores, with the warps
 * laid out in 2-D grids as the official FA2 backward lays them out (its kernel traits:
 * AtomLayoutMSdP, AtomLayoutNdKV, AtomLayoutMdQ).
 *
 *   mma2d   grid (Tc, B x H_kv), 8 warps: a thread block per K/V block j of Bc keys and KV
 *           head, the G query heads of that KV head in its loop (GQA's dK, dV sum stays on
 *           chip). Per step (query head h, Q block i), streamed in by cp.async, double-
 *           buffered: S and dP (Br x Bc) over one warp grid; P and dS to shared memory in
 *           fp16; dV_j += P^T dO_i and dK_j += dS^T Q_i over a second grid (Bc x d, in
 *           registers for the whole loop); dQ_i += dS K_j over a third (Br x d, added to
 *           HBM with fp32 atomics).                build/phase5 --kernel mma2d [--causal]
 *
 * What it changes from mma (bwd_mma.cu). There each of Bc/16 warps owns 16 keys and
 * computes S^T for them against ALL Br queries, so every warp reads all of Q_i and dO_i
 * from shared memory four times a step (S^T, dP^T, and as B of dV and dK). Here a warp
 * computes only its part of each product: a (Br/SM) x (Bc/SN) tile of S reads Br/SM rows
 * of Q_i and Bc/SN rows of K_j, so each operand is read by fewer warps. The price is that
 * P and dS leave the registers: the warp that computed an element is not the warp that
 * needs it for dV, dK or dQ, so both go through shared memory (fp16, as the mma takes
 * them), with one barrier between the two halves of the step.
 *
 * The three warp grids, d = 128 (Br = 64, Bc = 128, SM = 2, KN = 4, QM = 2; the other rows
 * of BWD_MMA2D_TABLE in bwd_blocks.h the same with their numbers). Warp w sits at
 * (w % SM, w / SM) in the S/dP grid, (w % KN, w / KN) in dK/dV's, (w % QM, w / QM) in dQ's:
 *
 *   S, dP: Br x Bc                dK, dV: Bc x d (registers)    dQ: Br x d (atomics)
 *          keys 0  32  64  96            d 0    64                    d 0  32  64  96
 *   q  0       w0  w2  w4  w6     k  0     w0   w4              q  0    w0  w2  w4  w6
 *   q 32       w1  w3  w5  w7     k 32     w1   w5              q 32    w1  w3  w5  w7
 *   (32 x 32 a warp)              k 64     w2   w6              (32 x 32 a warp)
 *                                 k 96     w3   w7
 *                                 (32 x 64 a warp)
 *
 * Shared memory (fp16 tiles padded by 8 halves a row: +16 bytes, so the 8 rows an
 * ldmatrix reads start in 8 different 16-byte bank groups):
 *
 *   | K_j  Bc x (d+8) | V_j  Bc x (d+8) | Q_i  2 x Br x (d+8) | dO_i  2 x Br x (d+8) |
 *   | L_i 2 x Br, D_i 2 x Br (fp32) | P_ij  Br x (Bc+8) | dS_ij  Br x (Bc+8) |
 *     (2 x: the two cp.async stages)   (rows = queries, columns = keys: as S is computed)
 *
 * The five products of a step and how each operand is read (common/mma.cuh's loaders;
 * "M x K row-major" is what the A fragment wants as it is, "K x M" needs .trans):
 *
 *   S   = Q_i K_j^T   A = Q_i  [query][d]   M x K  load_a_16x16
 *                     B = K_j  [key][d]     N x K  load_b_nk (the "col" B is K's rows)
 *   dP  = dO_i V_j^T  A = dO_i, B = V_j: the same as S
 *   dV += P^T dO_i    A = P^T (keys x queries): P is stored [query][key], i.e. P^T stored
 *                     K x M (k = query, m = key)                   load_a_trans
 *                     B = dO_i [query][d]   K x N  load_b_kn_trans
 *   dK += dS^T Q_i    A = dS^T from dS [query][key], K x M          load_a_trans
 *                     B = Q_i  [query][d]   K x N  load_b_kn_trans
 *   dQ += dS K_j      A = dS [query][key]   M x K  load_a_16x16 (no transpose)
 *                     B = K_j  [key][d]     K x N  load_b_kn_trans
 *
 * So one [query][key] layout of P and dS serves all three products: the two that want the
 * transpose get it from ldmatrix.trans for free.
 *
 * The rows built (BWD_MMA2D_TABLE), shared memory and ptxas's registers (CUDA 13, sm_90,
 * 255 at most with __launch_bounds__(256, 1); no spills: make phase5-spills):
 *   d = 32   Br x Bc = 128 x 128  SM KN QM = 4 4 4   133120 bytes  164 registers
 *   d = 64   128 x 128            4 4 4             182272 bytes  238 registers
 *   d = 128  64 x 128             2 4 2             175104 bytes  255 registers
 *   d = 256  64 x 64              4 2 2             222208 bytes  255 registers
 * tools/mma_emu runs this kernel on the CPU (emulated ldmatrix and mma.sync) against an
 * fp64 backward: a check of the indexing without a GPU.
 */
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include "cuda_check.cuh"
#include "bwd.h"
#include "bwd_gpu.cuh"   /* here first: an exercise build's copy beside this file is the one the kernel sees */
#include "bwd_mma2d.cuh"   /* the kernel */

/* What must hold for every row of BWD_MMA2D_TABLE (bwd_blocks.h). The rows need more than
 * sm_86/89's 99 KiB and, but d = 32, more than sm_80's 163 KiB: bwd_mma2d_config() asks the
 * device and says "skipped" there. */
#define BWD2D_ASSERT_ROW(D_, BR_, BC_, SM_, KN_, QM_)                                                  \
    static_assert((D_) % 16 == 0 && (BR_) % 16 == 0 && (BC_) % 16 == 0, "mma2d: whole k16 slices");   \
    static_assert(8 % (SM_) == 0 && 8 % (KN_) == 0 && 8 % (QM_) == 0, "mma2d: the grids tile 8 warps"); \
    static_assert((BR_) % (16 * (SM_)) == 0 && (BC_) % (16 * (8 / (SM_))) == 0,                       \
                  "mma2d: S/dP tiles of whole m16 rows and n16 column pairs");                       \
    static_assert((BC_) % (16 * (KN_)) == 0 && (D_) % (16 * (8 / (KN_))) == 0,                        \
                  "mma2d: dK/dV tiles of whole m16 rows and n16 column pairs");                      \
    static_assert((BR_) % (16 * (QM_)) == 0 && (D_) % (16 * (8 / (QM_))) == 0,                        \
                  "mma2d: dQ tiles of whole m16 rows and n16 column pairs");                         \
    static_assert(Cfg2d<D_, BR_, BC_, SM_, KN_, QM_>::SMEM <= SMEM_OPTIN_SM90, "mma2d: shared memory above 227 KiB");
BWD_MMA2D_TABLE(BWD2D_ASSERT_ROW)
#undef BWD2D_ASSERT_ROW

template <int D, int BR, int BC, int SM, int KN, int QM>
static void launch2d(const attn_problem_t *p, const bwd_gpu_args_t *a)
{
    using C = Cfg2d<D, BR, BC, SM, KN, QM>;
    const dim3 grid((p->N_kv + BC - 1) / BC, p->B * p->H_kv);
    const gpu_visits_t vis = gpu_visits(grid.x);
    bwd_preprocess_launch(p, a, 1);   /* D = rowsum(dO * O), dQ = 0 */
    static bool attr = false;
    if (!attr) {
        CUDA_CHECK(cudaFuncSetAttribute(bwd_mma2d_kernel<D, BR, BC, SM, KN, QM>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)C::SMEM));
        attr = true;
    }
    bwd_mma2d_kernel<D, BR, BC, SM, KN, QM><<<grid, C::THREADS, C::SMEM>>>(
        *p, (const __half *)a->Q, (const __half *)a->K, (const __half *)a->V, (const __half *)a->dO,
        a->L, a->D, a->dQ, a->dK, a->dV, vis);
    CUDA_CHECK_LAUNCH();
}

extern "C" int bwd_mma2d_config(int d, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = "mma2d";
    switch (d) {
#define BWD2D_CONFIG_ROW(D_, BR_, BC_, SM_, KN_, QM_)                      \
    case D_:                                                               \
        c->blocks.Br = BR_; c->blocks.Bc = BC_;                            \
        c->threads = Cfg2d<D_, BR_, BC_, SM_, KN_, QM_>::THREADS;          \
        c->smem_bytes = Cfg2d<D_, BR_, BC_, SM_, KN_, QM_>::SMEM;          \
        break;
    BWD_MMA2D_TABLE(BWD2D_CONFIG_ROW)
#undef BWD2D_CONFIG_ROW
    default:
        snprintf(why, len, "kernel mma2d is built for d = 32, 64, 128 and 256 (bwd_blocks.h), not d = %d", d);
        return -1;
    }
    return gpu_config_fits(c, 0, why, len);
}

extern "C" void bwd_mma2d_launch(const attn_problem_t *p, const bwd_gpu_args_t *a)
{
    switch (p->d) {
#define BWD2D_LAUNCH_ROW(D_, BR_, BC_, SM_, KN_, QM_) case D_: launch2d<D_, BR_, BC_, SM_, KN_, QM_>(p, a); break;
    BWD_MMA2D_TABLE(BWD2D_LAUNCH_ROW)
#undef BWD2D_LAUNCH_ROW
    default: break;   /* bwd_mma2d_config() said -1 */
    }
}
