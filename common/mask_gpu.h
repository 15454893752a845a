/* mask_gpu.h - a FlashMask mask on the GPU (common/mask_gpu.cu): the device copy of its
 * vectors and the per-block preprocessing pass. CUDA builds only. */
#ifndef COMMON_MASK_GPU_H
#define COMMON_MASK_GPU_H
#include <string.h>
#include "mask.h"

#ifdef __cplusplus
extern "C" {
#endif
/* The device copy of m's four vectors, [lts | lte | uts | ute] (4 N_kv int32), and the same
 * values a column at a time, int4 {lts, lte, uts, ute} of column j at [4 j] (a kernel's
 * element test reads one 16-byte load a column): uploaded the first time m is seen, then the
 * same buffers (one mask at a time). */
const int32_t *mask_gpu_runs(const attn_mask_t *m);
const int32_t *mask_gpu_columns(const attn_mask_t *m);
/* The preprocessing pass (a kernel on the current stream): per Bc-wide column block the 8
 * min/max values in mask_blocks()'s order, into a buffer mask_gpu.cu keeps; returns it. */
const int32_t *mask_gpu_blocks(const int32_t *runs, int N_kv, int Bc);
/* The Q blocks of Br rows in the order a kernel takes them, longest first: from blk (the pass
 * above, at Bc), each Q block's number of tiles not fully masked, then the blocks sorted by it
 * (ties: the later block first, so that the causal mask gives the causal path's order,
 * Tr - 1 first). A kernel on the current stream; returns Tr int32 in a buffer mask_gpu.cu
 * keeps (one order at a time), and past MASK_GPU_MAX_TR of them each Q block's range of
 * visited K/V blocks (mask_q_range); NULL when Tr = ceil(N_q / Br) > MASK_GPU_MAX_TR (the
 * kernel then takes its Q blocks last first, over all Tc K/V blocks). */
#define MASK_GPU_MAX_TR 4096
const int32_t *mask_gpu_order(const int32_t *blk, int N_q, int N_kv, int Br, int Bc);
#ifdef __cplusplus
}
#endif

/* With a mask, the Q block and the (batch, head) a thread block takes, from its linear index
 * in a grid of Tr x BH blocks: rank linear / BH of mask_gpu_order's list (the last Q block
 * first when there is none), head linear % BH. Rank major, head minor: the long Q blocks of
 * every head start before any short one, and the last to start are the shortest. */
static inline MASK_HD void mask_block_of(int linear, int BH, int Tr, const int32_t *order, int *q_block, int *bh)
{
    const int rank = linear / BH;
    *q_block = order ? order[rank] : Tr - 1 - rank;
    *bh = linear % BH;
}

/* The K/V blocks [*first, *end) of Q block i outside which every tile is fully masked, from
 * mask_gpu_order's second output (after its MASK_GPU_MAX_TR ranks, two values a Q block;
 * *first = *end = Tc when every tile is fully masked); [0, Tc) without an order. */
static inline MASK_HD void mask_q_range(const int32_t *order, int i, int Tc, int *first, int *end)
{
    *first = order ? order[MASK_GPU_MAX_TR + 2 * i] : 0;
    *end = order ? order[MASK_GPU_MAX_TR + 2 * i + 1] : Tc;
}

#ifdef __CUDACC__
/* Asks L1 for the column runs of K/V block j (Bc columns of 16 bytes, {LTS, LTE, UTS, UTE}:
 * Bc / 8 lines of 128 bytes), a line a lane of the calling warp, one block ahead of the
 * element test that reads them. Without it that test waits on L2 (ncu: long-scoreboard
 * stalls): the kernels' shared memory leaves L1 too small to keep a head's runs. */
template <int BC>
__device__ __forceinline__ void mask_prefetch_columns(const int32_t *mcols, int j, int N_kv, int lane)
{
    static_assert(BC / 8 <= 32, "a line a lane");
    const int col = j * BC + lane * 8;
    if (lane < BC / 8 && col < N_kv) asm volatile("prefetch.global.L1 [%0];" ::"l"(mcols + 4 * (size_t)col));
}
#endif
#endif
