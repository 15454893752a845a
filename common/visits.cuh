/* visits.cuh - the device side of the visit counters (common/gpu.h): a kernel that skips
 * blocks proves which it visited.
 *
 *   n_blocks = <the range>;                           e.g. the causal range of Q block i
 *   if (visit_all(vis)) n_blocks = Tc;                a test's deleted range (FA_TEST_VISIT_ALL)
 *   if (threadIdx.x == 0) visit_count(vis, i, n_blocks);   once per thread block
 *   for (int j = 0; j < n_blocks; j++) ...            the loop the count describes
 *
 * One atomic add per thread block (a fire-and-forget reduction: nothing waits for it),
 * against a loop over blocks of thousands of instructions each. Built with FA_NO_VISITS=1
 * both are compiled out (to measure what they cost), and gpu_visits() hands out no buffer.
 */
#ifndef COMMON_VISITS_CUH
#define COMMON_VISITS_CUH
#include "gpu.h"

#ifndef FA_NO_VISITS
#define FA_NO_VISITS 0
#endif

/* Visit every block whatever the range (FA_TEST_VISIT_ALL=1: the tests' deleted range). */
__device__ __forceinline__ bool visit_all(const gpu_visits_t &v)
{
#if FA_NO_VISITS
    (void)v;
    return false;
#else
    return v.visit_all != 0;
#endif
}

/* counts[tile] += n; called by one thread of the block. */
__device__ __forceinline__ void visit_count(const gpu_visits_t &v, int tile, int n)
{
#if FA_NO_VISITS
    (void)v; (void)tile; (void)n;
#else
    atomicAdd(v.counts + tile, (unsigned long long)n);
#endif
}

#endif
