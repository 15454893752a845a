/* hopper/fwd_base.cuh - what every kernel of the Hopper forward ladder shares: the sizes of
 * a warpgroup and its tiles, the launch's arguments (WgArgs), the named barriers, and the
 * dynamic shared memory. The parts built on it, one role a file (as FlashAttention-3's
 * hopper/ folder is arranged):
 *
 *   fwd_base.cuh    sizes, WgArgs, named barriers, warpgroup_idx, dynamic_smem
 *   ring.cuh        the K/V ring: its shared-memory layout (WsLayout) and position (RingPos)
 *   softmax.cuh     RowTile (O~, m, l), FlashMask's element test, the online softmax block
 *   mma_ops.cuh     S = Q K^T and O~ += P~ V as wgmma groups (fp16 and e4m3), one whole block
 *   producer.cuh    the copies: Q_i, K_j and V_j (cp.async or TMA), FP8's V^T
 *   epilogue.cuh    O_i and L_i: from registers, or through shared memory and a TMA store
 *   scheduler.cuh   which tile a CTA works on: one a CTA (longest first), or persistent
 *   ws_kernel.cuh   the warp-specialised kernel's shell: producer, consumers, a step's loop
 *
 * and one file a step (step01_wgmma.cuh ... step10_store.cuh), listed in steps.h.
 * Built for sm_90a (FA_HAVE_WGMMA, common/wgmma.cuh); the CPU emulator (tools/mma_emu)
 * compiles these same headers with its stand-ins for the hardware. */
#pragma once
#include <cuda.h>        /* CUtensorMap */
#include <cuda_fp16.h>
#include <math.h>
#include "mma.cuh"
#include "wgmma.cuh"
#include "visits.cuh"
#include "mask_gpu.h"    /* FlashMask's vectors (step 3's mask path) */
#include "fa2.h"

#define WG_THREADS 128   /* a warpgroup: 4 warps */
#define WG_BR 64         /* steps 1-2: one warpgroup's Q block, and the K/V block */
#define WG_BC 64
#define ATOM_BYTES (64 * 128)   /* 64 rows x 64 fp16: one 128-byte-swizzled 64-column half */
#define WS_CONSUMERS 2          /* steps 3-10: a producer warpgroup and two consumers */
#define WS_THREADS (WG_THREADS * (1 + WS_CONSUMERS))
#define WS_BR (64 * WS_CONSUMERS)

/* exp(x) = 2^(x log2 e): the kernels keep m_i and S in the exponent's units (S scale log2 e),
 * so that every exponential is one ex2 (sfu_ex2) */
#define FA_LOG2E 1.4426950408889634f
#define FA_LN2 0.6931471805599453f

/* 64 rows of D columns: D / 64 atoms. A K/V block of BC keys is BC / 64 such tiles, one
 * after the other in shared memory (laid out as a Q tile is); S for it is BC / 64
 * accumulators of 64 x 64, s[sub] holding keys 64 sub .. 64 sub + 63 of the block. */
template <int D>
__host__ __device__ constexpr size_t tile64_bytes() { return (size_t)(D / 64) * ATOM_BYTES; }

/* The named barriers (bar.sync ids; 0 is __syncthreads). A consumer c (0 or 1) has two:
 * its turn on the tensor cores (steps 4, 9 and FP8's pingpong row), taken by one warpgroup
 * and handed over by the other, 256 threads; and its own 128 threads' barrier around the
 * TMA store of O (step 10). */
enum NamedBarrier : int {
    BAR_TURN_0 = 1,    /* consumer 0's turn; BAR_TURN_0 + 1 is consumer 1's */
    BAR_STORE_0 = 3,   /* consumer 0's stage of O written / read; BAR_STORE_0 + 1 consumer 1's */
};
__host__ __device__ constexpr int bar_turn(int c) { return BAR_TURN_0 + c; }
__host__ __device__ constexpr int bar_store(int c) { return BAR_STORE_0 + c; }

/* What a launch needs, by value. The tensor maps (steps 2-10) describe Q, K, V to the copy
 * engine as 3-D tensors [heads][rows][d]: a box of 64 x 64 stops at its head's last row
 * (the rest zero-filled), so tails need no care. Step 1 leaves them zero. */
struct WgArgs {
    attn_problem_t p;
    const __half *Q, *K, *V;
    float *O, *L;
    CUtensorMap tq, tk, tv;
    CUtensorMap to;               /* step 10: O (fp32) to the copy engine, boxes of 64 rows x 32 columns */
    gpu_visits_t vis;             /* counts[Q block] += the K/V blocks it visited */
    /* FlashMask (step 3's mask path, chapter 4c): the four vectors a column at a time and the
     * preprocessing pass's 8 min/max values a K/V block (common/mask_gpu.h); NULL without */
    const int4 *mcols;
    const int32_t *mblk;
    const int32_t *morder;        /* the Q blocks longest first (mask_gpu_order), NULL: last first */
    /* step 6 (persistent): a counter every launch takes its tiles from, never reset: this
     * launch's tile t is the grab that returned tile_base + t (launch() keeps the base) */
    unsigned long long *tile_ctr, tile_base;
    /* step 7 (FP8): Q, K, V^T in e4m3 (tq, tk, tv map them; fp8_quant.h's layouts) and their
     * tiles' scales: sq [B H][Tr] (Br = 128), sk, sv [B H_kv][Tc] (Bc = 128) */
    const float *sq, *sk, *sv;
};

#ifdef FA_EMU   /* the CPU emulator: a block's shared memory is a host buffer */
inline unsigned char *dynamic_smem() { return g_smem; }
#else
__device__ __forceinline__ unsigned char *dynamic_smem()
{
    extern __shared__ unsigned char smem_raw[];
    return smem_raw;
}
#endif

/* the dynamic block aligned to the 1024 bytes the 128-byte swizzle needs (it is applied to
 * address bits 4-9: atoms must be 1024-aligned) */
__device__ __forceinline__ unsigned char *smem_1024()
{
    return (unsigned char *)(((uintptr_t)dynamic_smem() + 1023) & ~(uintptr_t)1023);
}

/* threadIdx.x / WG_THREADS broadcast from lane 0: the same number, but one the compiler knows
 * is the same in every lane of the warp (CUTLASS's canonical_warp_group_idx). A consumer's
 * Q tile and its wgmma descriptors are computed from it, and so stay in uniform registers
 * instead of being built per lane and moved over (R2UR) before each wgmma. */
__device__ __forceinline__ int warpgroup_idx()
{
    return __shfl_sync(0xffffffffu, (int)(threadIdx.x / WG_THREADS), 0);
}
