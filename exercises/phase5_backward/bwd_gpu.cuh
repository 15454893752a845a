/* bwd_gpu.cuh - what the backward kernels (bwd_simple.cu, bwd_mma.cu) share on the device.
 *
 * The causal range of a K/V block, the mirror of phase 4's fa2_kv_blocks: with the
 * bottom-right mask (common/problem.h) row r sees key c iff c <= r + (N_kv - N_q), so
 * the rows that see ANY key of block j are those that see its FIRST key, j Bc:
 *
 *            keys ->   block j
 *          +-----------+-----+-------+
 *   rows   |  \ seen   |     |       |   Q blocks above `first` see none of block j:
 *     |    |    \      |     |       |   skipped, never loaded.
 *     v    |      \    |     |       |
 *  first ->|--------\--|-----|       |   the Q block holding row j Bc - (N_kv - N_q):
 *          |          \|xxxxx|       |   the first that must be visited (masked).
 *          |           |\xxxx|       |
 *          |           |  \xx|       |   below it every Q block is visited: the rows
 *          |           |    \|       |   only grow, so they see every key of block j
 *          +-----------+-----+-------+   (masked only on the diagonal and the tails).
 */
#ifndef PHASE5_BWD_GPU_CUH
#define PHASE5_BWD_GPU_CUH
#include "problem.h"

/* The first of the Q blocks [first, Tr) that K/V block j (keys j Bc ..) must visit, Tr =
 * ceil(N_q / Br): 0 without a mask; Tr when no row sees the block (its dK_j, dV_j are 0). */
__device__ __forceinline__ int bwd_first_q_block(const attn_problem_t &p, int j, int Br, int Bc)
{
    const int Tr = (p.N_q + Br - 1) / Br;
    if (!p.causal) return 0;
    /* TODO EXERCISE bwd.causal_range_gpu: the first Q block K/V block j must visit, on the GPU
     * HINT: as bwd.causal_range (bwd_cpu.c): the first row that sees key j Bc is
     * HINT: j Bc - (N_kv - N_q), at least 0; its Q block, or Tr when that row is past N_q.
     * HINT: Work in long: j Bc - (N_kv - N_q) may be negative. */
    (void)j; (void)Bc; (void)Tr; return 0;
}

/* Does Q block i x K/V block j hold an entry the mask hides: a key past N_kv, a row past
 * N_q (tail blocks), or, causal, a key right of the diagonal (its last key past its first
 * row's last visible key)? Only those blocks pay for the elementwise mask. */
__device__ __forceinline__ bool bwd_block_needs_mask(const attn_problem_t &p, int i, int j, int Br, int Bc)
{
    const long last_key = (long)(j + 1) * Bc - 1;
    return last_key >= p.N_kv || (long)(i + 1) * Br > p.N_q ||
           (p.causal && last_key > (long)i * Br + (p.N_kv - p.N_q));
}

/* 2^x on the SFU (ex2.approx: 2 ulp; 2^-inf = 0). P = e^(scale s - L) is computed as
 * 2^(s scale log2 e - L log2 e). */
__device__ __forceinline__ float bwd_ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
#define BWD_LOG2E 1.4426950408889634f

#endif
