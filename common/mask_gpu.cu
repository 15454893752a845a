/* mask_gpu.cu - a FlashMask mask (common/mask.h) on the GPU: the device copy of its four
 * vectors, and the preprocessing pass that reduces them to the 8 per-block values the
 * kernels classify their tiles by (FlashMask Sec. 4). The rules a kernel applies with them
 * are mask.h's mask_tile_class_at() and mask_visible_at(), the same code as the host's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include "cuda_check.cuh"
#include "mask_gpu.h"
#include "warp_reduce.cuh"

/* The vectors are an input of the problem, like Q, K and V: uploaded when a launch first
 * sees this mask (the checked run, before any timed one), then reused. */
static int32_t *dev_runs = NULL, *dev_cols = NULL;   /* the two layouts of the mask below */

static void upload(const attn_mask_t *m)
{
    static const attn_mask_t *host = NULL;
    static char spec[MASK_SPEC_MAX];
    static int n_kv = 0;
    if (m == host && m->N_kv == n_kv && strcmp(spec, m->spec) == 0) return;
    if (dev_runs) CUDA_CHECK(cudaFree(dev_runs));
    if (dev_cols) CUDA_CHECK(cudaFree(dev_cols));
    const size_t n = (size_t)m->N_kv;
    int32_t *cols = (int32_t *)malloc(mask_bytes(m));
    if (!cols) { fprintf(stderr, "mask_gpu: out of host memory\n"); exit(1); }
    for (size_t j = 0; j < n; j++) {   /* column j's four values side by side */
        cols[4 * j] = m->lts[j]; cols[4 * j + 1] = m->lte[j]; cols[4 * j + 2] = m->uts[j]; cols[4 * j + 3] = m->ute[j];
    }
    CUDA_CHECK(cudaMalloc(&dev_runs, mask_bytes(m)));
    CUDA_CHECK(cudaMalloc(&dev_cols, mask_bytes(m)));
    CUDA_CHECK(cudaMemcpy(dev_runs, m->lts, mask_bytes(m), cudaMemcpyHostToDevice));   /* lts | lte | uts | ute */
    CUDA_CHECK(cudaMemcpy(dev_cols, cols, mask_bytes(m), cudaMemcpyHostToDevice));
    free(cols);
    host = m;
    n_kv = m->N_kv;
    snprintf(spec, sizeof spec, "%s", m->spec);
}

extern "C" const int32_t *mask_gpu_runs(const attn_mask_t *m) { upload(m); return dev_runs; }
extern "C" const int32_t *mask_gpu_columns(const attn_mask_t *m) { upload(m); return dev_cols; }

/* One warp a column block: its lanes stride over the block's columns (coalesced loads), then
 * the min and the max of each vector are reduced across the warp, in mask_blocks()'s order
 * (lts_min, lts_max, lte_min, lte_max, uts_min, ..., ute_max). (A thread a block walked its
 * Bc columns alone: 4 Bc dependent loads, 28 us at N = 8192, several percent of a sparse
 * mask's whole forward.) */
__global__ void mask_blocks_kernel(const int32_t *runs, int N_kv, int Bc, int n_blocks, int32_t *blk)
{
    const int c = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (c >= n_blocks) return;   /* a whole warp: c is the same on its 32 lanes */
    const int j0 = c * Bc, j1 = min(N_kv, j0 + Bc);
    for (int k = 0; k < 4; k++) {
        const int32_t *v = runs + (size_t)k * N_kv;
        int32_t lo = INT_MAX, hi = INT_MIN;
        for (int j = j0 + lane; j < j1; j += 32) { lo = min(lo, v[j]); hi = max(hi, v[j]); }
        lo = warp_min(lo);
        hi = warp_max(hi);
        if (lane == 0) { blk[(2 * k) * n_blocks + c] = lo; blk[(2 * k + 1) * n_blocks + c] = hi; }
    }
}

extern "C" const int32_t *mask_gpu_blocks(const int32_t *runs, int N_kv, int Bc)
{
    static int32_t *blk = NULL;
    static int cap = 0;
    const int n_blocks = (N_kv + Bc - 1) / Bc;
    if (n_blocks > cap) {
        if (blk) CUDA_CHECK(cudaFree(blk));
        CUDA_CHECK(cudaMalloc(&blk, 8 * sizeof(int32_t) * (size_t)n_blocks));
        cap = n_blocks;
    }
    mask_blocks_kernel<<<(n_blocks + 3) / 4, 128>>>(runs, N_kv, Bc, n_blocks, blk);   /* 4 warps a block */
    CUDA_CHECK_LAUNCH();
    return blk;
}

/* Longest first (LPT, the classic rule for jobs of known lengths on identical machines): a
 * Q block whose row sees 128 tiles and is started last keeps one SM busy while the others
 * idle (global_sliding's global rows, a prefix-LM's last document). One thread block: warp w
 * counts the tiles of Q blocks w, w + 32, ... (its lanes over the K/V blocks, the class
 * rule of mask.h), then each thread ranks its Q blocks among all by a count in shared memory.
 * O(Tr Tc / 1024 + Tr^2 / 1024) steps a thread: microseconds at the sizes timed here.
 * The same warp writes each Q block's range of K/V blocks [first, end) outside which every
 * tile is fully masked (mask_q_range), so that a kernel's per-Q-block work follows the
 * tiles it visits, not Tc: a sliding window's Q block classifies and scans its band alone. */
__global__ void __launch_bounds__(1024) mask_order_kernel(const int32_t *blk, int N_q, int Tc, int Br, int Tr, int32_t *order)
{
    extern __shared__ __align__(16) int32_t tiles[];   /* [Tr]: tiles not fully masked, per Q block */
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int i = warp; i < Tr; i += warps) {
        const int r0 = i * Br, r1 = min(N_q, r0 + Br);
        int n = 0, first = Tc, last = -1;
        for (int c = lane; c < Tc; c += 32)
            if (mask_tile_class_at(blk, Tc, r0, r1, c) != MASK_TILE_FULLY_MASKED) {
                n++;
                first = min(first, c);
                last = max(last, c);
            }
        n = warp_sum(n);
        first = warp_min(first);
        last = warp_max(last);
        if (lane == 0) {
            tiles[i] = n;
            order[MASK_GPU_MAX_TR + 2 * i] = first;                        /* Tc when none */
            order[MASK_GPU_MAX_TR + 2 * i + 1] = last < 0 ? Tc : last + 1;
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < Tr; i += blockDim.x) {
        int rank = 0;   /* the blocks before i: more tiles, or as many and later */
        for (int k = 0; k < Tr; k++) rank += tiles[k] > tiles[i] || (tiles[k] == tiles[i] && k > i);
        order[rank] = i;
    }
}

extern "C" const int32_t *mask_gpu_order(const int32_t *blk, int N_q, int N_kv, int Br, int Bc)
{
    static int32_t *order = NULL;
    const int Tr = (N_q + Br - 1) / Br, Tc = (N_kv + Bc - 1) / Bc;
    if (Tr > MASK_GPU_MAX_TR) return NULL;   /* the kernel then takes the last Q block first */
    if (!order) CUDA_CHECK(cudaMalloc(&order, sizeof(int32_t) * 3 * MASK_GPU_MAX_TR));   /* the order, the ranges */
    /* whole 16-byte words: the rank loop's tail reads its last 1-3 counts with one 16-byte
     * load (LDS.128), which must stay inside the allocation (compute-sanitizer memcheck) */
    mask_order_kernel<<<1, 1024, sizeof(int32_t) * ((Tr + 3) & ~3)>>>(blk, N_q, Tc, Br, Tr, order);
    CUDA_CHECK_LAUNCH();
    return order;
}
