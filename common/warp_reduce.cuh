/* warp_reduce.cuh - the warp-wide reductions the kernels share.
 *
 * Butterfly (xor) shuffles: after log2(32) = 5 steps every lane holds the result, so no
 * lane has to broadcast it afterwards.
 *
 *   step o=16: lane i combines with lane i^16      o=8: with i^8   ...   o=1: with i^1
 */
#ifndef COMMON_WARP_REDUCE_CUH
#define COMMON_WARP_REDUCE_CUH

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* The same on integers (FlashMask's preprocessing and tile counts, common/mask_gpu.cu). */
__device__ __forceinline__ int warp_min(int v)
{
    for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ int warp_max(int v)
{
    for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ int warp_sum(int v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
#endif
