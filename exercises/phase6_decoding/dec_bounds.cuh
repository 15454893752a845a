/* dec_bounds.cuh - a split's keys: the range [k0, k1) of split s, whole blocks of the CPU
 * model's Bc (dec_split_range, fa2_mma_blocks(d).Bc), so that the model's bytes
 * (decode_hbm_bytes) are the kernel's; the kernel walks it in tiles of BK keys, masking past
 * k1. The visit counters (common/visits.cuh) hold each split to its range. */
#ifndef PHASE6_DEC_BOUNDS_CUH
#define PHASE6_DEC_BOUNDS_CUH
#include "dec_cfg.cuh"

/* The keys [k0, k1) of split s of a sequence of n keys (empty: k0 == k1). */
__device__ __forceinline__ void split_keys(const DecArgs &a, int s, int n, int &k0, int &k1)
{
    const int Tc = (n + a.Bc - 1) / a.Bc;
    /* TODO EXERCISE dec.split_range_gpu: the keys [k0, k1) of split s, whole blocks of a.Bc keys, as dec.split_range
     * HINT: Tc blocks of a.Bc keys cut into a.S splits of ceil(Tc / a.S) blocks each, in
     * HINT: order; both ends clamped to Tc blocks and then to the n keys (the last splits
     * HINT: may be empty: k0 == k1). */
    k0 = 0; k1 = n; (void)Tc;
    /* END EXERCISE dec.split_range_gpu */
}

/* split_keys, or every key under FA_TEST_VISIT_ALL (the tests' deleted range), counted:
 * thread 0 adds the range's BK-key tiles to split s's visits. */
__device__ __forceinline__ void split_range(const DecArgs &a, int s, int n, int &k0, int &k1)
{
    split_keys(a, s, n, k0, k1);
    if (visit_all(a.vis)) { k0 = 0; k1 = n; }
    if (threadIdx.x == 0 && k1 > k0) visit_count(a.vis, s, (k1 - k0 + BK - 1) / BK);   /* the driver holds it to dec_split_range() */
}

#endif
