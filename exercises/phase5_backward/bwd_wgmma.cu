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
 * The ladder (chapter 5b; each step a --kernel row beside this one): 2 dQ through shared
 * memory and one bulk reduce a row (FA3's dQ path, wgmma-dq, this file's BULK) instead of
 * element atomics; 3 the copy engine (TMA), a producer warp, a dQ writer warp and two MMA
 * warpgroups (wgmma-ws, bwd_wgmma_ws.cu); 4 dQ added in a fixed order (wgmma-det).
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
 * N), the P^T and dS^T fragments 2 x 16, dQ 32: 253 registers (ptxas, below) of the 255 that
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
 * ptxas, CUDA 13.0, sm_90a, no spills:   d = 64: 214 registers   d = 128: 253 registers
 * (wgmma-dq: 213 and 250)
 */
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include "cuda_check.cuh"
#include "mma.cuh"
#include "wgmma.cuh"
#include "bwd.h"
#include "bwd_gpu.cuh"
#include "bwd_wgmma.cuh"   /* the products, P^T and dS^T, the dQ tile: shared with bwd_wgmma_ws.cu */
#include "visits.cuh"

/* D: head dimension; BR x BC the block (BC / 64 warpgroups, one per 64 keys); BULK: dQ_i
 * through shared memory and bulk reductions (wgmma-dq) instead of float2 atomics. */
template <int D, int BR, int BC, bool BULK = false>
struct WgBwdCfg {
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
    static constexpr size_t SMEM = DQ_OFF + 2 * DQ_TILES * DQ_TILE + 1024;  /* + room to align */
    static_assert(DQ_OFF % 16 == 0, "wgmma bwd: bulk reduce rows 16-byte aligned");
    static_assert(BR == 64, "wgmma bwd: S^T's N and a dS^T row are 64 queries (one swizzled row)");
    static_assert(BC % 64 == 0 && D % 64 == 0, "wgmma bwd: whole 64-row warpgroups, 64-column halves");
};

#if FA_HAVE_WGMMA
/* byte offset of element (r, c) of a swizzled tile of ROWS rows (halves of 64 columns) */
template <int ROWS>
__device__ __forceinline__ uint32_t tile_off(int r, int c)
{
    return (uint32_t)((c / 64) * ROWS * SW_ROW) + sw128_offset(r, c % 64);
}

/* ROWS rows of D fp16 columns, global -> swizzled shared with cp.async (rows at or past
 * valid zero-filled, not read) */
template <int ROWS, int D, int THREADS>
__device__ __forceinline__ void load_tile_sw(unsigned char *dst, const __half *src, int valid)
{
    constexpr int CH = D / 8;   /* 16-byte chunks a row */
#pragma unroll
    for (int c = threadIdx.x; c < ROWS * CH; c += THREADS) {
        const int r = c / CH, ch = c % CH;
        const bool ok = r < valid;
        cp_async16(dst + tile_off<ROWS>(r, ch * 8), ok ? src + (size_t)r * D + ch * 8 : src, ok);
    }
}

/* dQ_i += scale dS K_j in HBM (fp32 atomics: the other K/V blocks of the head add to the
 * same rows): accumulator rows are queries 16 warp + g (+ 8), columns 64 a + 8 n8 + 2 t. */
template <int D, int NH>
__device__ __forceinline__ void add_dq(float *dQi, const float (&dq)[NH][32], int a0, int warp, int g, int t,
                                       int valid, float scale)
{
#pragma unroll
    for (int x = 0; x < 2; x++) {
        const int row = 16 * warp + g + 8 * x;
        if (row >= valid) continue;   /* rows past N_q */
#pragma unroll
        for (int h = 0; h < NH; h++)
#pragma unroll
            for (int n8 = 0; n8 < 8; n8++) {
                float *out = dQi + (size_t)row * D + 64 * (a0 + h) + 8 * n8 + 2 * t;
                const float v0 = dq[h][4 * n8 + 2 * x] * scale, v1 = dq[h][4 * n8 + 2 * x + 1] * scale;
                atomicAdd(reinterpret_cast<float2 *>(out), make_float2(v0, v1));
            }
    }
}

#endif

template <int D, int BR, int BC, bool BULK>
__global__ void __launch_bounds__(WgBwdCfg<D, BR, BC, BULK>::THREADS, 1)   /* up to 255 registers: dK_j, dV_j */
bwd_wgmma_kernel(attn_problem_t p, const __half *Qg, const __half *Kg, const __half *Vg, const __half *dOg,
                 const float *Lg, const float *Dg, float *dQg, float *dKg, float *dVg, gpu_visits_t vis)
{
#if FA_HAVE_WGMMA
    using C = WgBwdCfg<D, BR, BC, BULK>;
    constexpr int THREADS = C::THREADS, HALVES = C::HALVES;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    /* the 128-byte swizzle acts on address bits 4-9: tiles must be 1024-aligned */
    unsigned char *smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);   /* still a shared pointer */
    unsigned char *Ks = smem + C::K_OFF, *Vs = smem + C::V_OFF, *Qs = smem + C::Q_OFF, *dOs = smem + C::DO_OFF;
    unsigned char *dSs = smem + C::DS_OFF;
    float *Ls = (float *)(smem + C::L_OFF), *Ds = Ls + 2 * BR;
    unsigned char *dQs = smem + C::DQ_OFF;   /* BULK: 2 stages x DQ_TILES tiles */
    /* BULK: thread bulk_row < DQ_TILES x Br adds row bulk_row % Br of tile bulk_row / Br */
    const bool bulk_issuer = BULK && (int)threadIdx.x < C::DQ_TILES * BR;

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

    /* step st -> (query head h, Q block i); its rows' offset in Q, dO, dQ and in L, D */
    auto step_at = [&](int st, int &i, size_t &q_off, size_t &l_off) {
        sched.at(st, BR, i, l_off);
        q_off = l_off * D;
    };
    auto load_step = [&](int st, int stage) {   /* Q_i, dO_i, L_i, D_i into a stage */
        int i; size_t q_off, l_off;
        step_at(st, i, q_off, l_off);
        const int valid = p.N_q - i * BR;
        load_tile_sw<BR, D, THREADS>(Qs + stage * C::Q_TILE, Qg + q_off, valid);
        load_tile_sw<BR, D, THREADS>(dOs + stage * C::Q_TILE, dOg + q_off, valid);
        bwd_load_ld<BR, THREADS>(Ls + stage * BR, Ds + stage * BR, Lg, Dg, l_off, valid);   /* rows past N_q: 0 */
    };

    /* Alg. 2 l.6: K_j, V_j into shared memory (rows past N_kv zero), and the first step */
    load_tile_sw<BC, D, THREADS>(Ks, Kg + kv_off + (size_t)j0 * D, p.N_kv - j0);
    load_tile_sw<BC, D, THREADS>(Vs, Vg + kv_off + (size_t)j0 * D, p.N_kv - j0);
    if (steps > 0) load_step(0, 0);
    cp_async_commit();

    float dk[HALVES][32], dv[HALVES][32];   /* l.7: this warpgroup's 64 rows of dK_j, dV_j */
#pragma unroll
    for (int a = 0; a < HALVES; a++)
#pragma unroll
        for (int e = 0; e < 32; e++) dk[a][e] = dv[a][e] = 0.0f;

    for (int st = 0; st < steps; st++) {                                      /* l.8 */
        const int stage = st % 2;
        if (bulk_issuer) bulk_wait_read<1>();   /* step st - 2's reduce has read this stage's dQ tile */
        cp_async_wait<0>();
        fence_proxy_async();   /* the tiles were written by ordinary (cp.async) copies; the
                                  tensor cores read them next */
        __syncthreads();   /* this step's tiles landed and are visible to all; every warpgroup's
                              products of the last step (the other stage, dS^T) are complete */
        if (st + 1 < steps) { load_step(st + 1, 1 - stage); cp_async_commit(); }   /* l.9 */
        const unsigned char *Qi = Qs + stage * C::Q_TILE, *dOi = dOs + stage * C::Q_TILE;
        const float *Li = Ls + stage * BR, *Di = Ds + stage * BR;
        int i; size_t q_off, l_off;
        step_at(st, i, q_off, l_off);
        const bool mask = bwd_block_needs_mask(p, i, j, BR, BC);

        /* l.10-14: S^T, dP^T (tensor cores), then P^T, dS^T (registers), dS^T to shared */
        float s[32], dp[32];
        wgmma_fence();
        issue_nt<D, BR, BC>(s, Ks + wg * 64 * SW_ROW, Qi);
        issue_nt<D, BR, BC>(dp, Vs + wg * 64 * SW_ROW, dOi);
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_fence_regs(s);
        wgmma_fence_regs(dp);
        uint32_t pa[BR / 16][4], dsa[BR / 16][4];
        bwd_p<BR>(s, pa, Li, p, i * BR, key0, j0, mask, sl2, t);
        bwd_ds<BR>(s, dp, dsa, dSs, Di, key0, t);
        fence_proxy_async();   /* dS^T was written by ordinary stores; the tensor cores read it */

        /* l.13, l.16: dV_j += P^T dO_i, dK_j += dS^T Q_i (A from the registers) */
        wgmma_fence();
        issue_rs<D, BR>(dv, pa, dOi);
        issue_rs<D, BR>(dk, dsa, Qi);
        wgmma_commit();
        __syncthreads();   /* both warpgroups' dS^T rows are in shared memory */

        /* l.15: dQ_i += scale dS K_j */
        float dq[C::DQ_HALVES][32];
        issue_dq<D, BR, BC>(dq, dSs, Ks, wg);
        wgmma_wait<0>();   /* dV, dK and dQ's groups */
#pragma unroll
        for (int a = 0; a < HALVES; a++) { wgmma_fence_regs(dv[a]); wgmma_fence_regs(dk[a]); }
#pragma unroll
        for (int h = 0; h < C::DQ_HALVES; h++) wgmma_fence_regs(dq[h]);
#pragma unroll
        for (int kk = 0; kk < BR / 16; kk++) { wgmma_hold_a(pa[kk]); wgmma_hold_a(dsa[kk]); }
        if constexpr (BULK) {   /* FA3's dQ path: the tile to shared memory, one bulk add a row */
            unsigned char *tiles = dQs + stage * C::DQ_TILES * C::DQ_TILE;
            store_dq<D, C::DQ_HALVES, C::DQ_PITCH>(tiles + (C::DQ_BY_KEYS ? wg * C::DQ_TILE : 0), dq,
                                                   C::DQ_BY_KEYS ? 0 : wg * C::DQ_HALVES, warp, g, t, p.scale);
            fence_proxy_async();   /* ordinary stores; the copy engine reads the tile next */
            __syncthreads();       /* every warpgroup's share of the tile is in */
            if (bulk_issuer) {
                const int row = threadIdx.x % BR, tile = threadIdx.x / BR;
                if (row < p.N_q - i * BR)   /* rows past N_q: not added */
                    bulk_reduce_add_f32(dQg + q_off + (size_t)row * D, tiles + tile * C::DQ_TILE + row * C::DQ_PITCH,
                                        D * sizeof(float));
                bulk_commit();
            }
        } else {
            add_dq<D, C::DQ_HALVES>(dQg + q_off, dq, C::DQ_BY_KEYS ? 0 : wg * C::DQ_HALVES, warp, g, t,
                                    p.N_q - i * BR, p.scale);
        }
    }
    if (bulk_issuer) bulk_wait<0>();   /* the last reduces done before the block's shared memory goes */
    cp_async_wait<0>();   /* steps = 0: K_j, V_j's copies land before the block exits */
    store_dkdv<D>(dKg, dVg, dk, dv, p, kv_off, j0, key0, t);   /* l.18 */
#else
    (void)p; (void)Qg; (void)Kg; (void)Vg; (void)dOg; (void)Lg; (void)Dg; (void)dQg; (void)dKg; (void)dVg; (void)vis;
#endif
}

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
