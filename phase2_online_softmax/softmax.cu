/* softmax.cu - phase 2 on the GPU: row softmax of a rows x n fp32 matrix, two kernels.
 *
 *   safe   : 3 passes over the row in global memory: max; sum of e^{x-m}; normalise.
 *            build/phase2 --kernel safe      (4 accesses per element: 3 loads, 1 store)
 *   online : 2 passes: running (m, l) together (Milakov & Gimelshein, Alg. 3); normalise.
 *            build/phase2 --kernel online    (3 accesses per element: 2 loads, 1 store)
 *   build/phase2 --sweep runs both over row lengths 1k..128k (4096 rows) for the plot.
 *
 * One thread block of P2_THREADS threads per row; each thread walks the row with 16-byte
 * float4 loads (scalar loads when n % 4 != 0, where rows are not 16-byte aligned), P2_UNROLL
 * loads issued before the first use so enough bytes are in flight to cover DRAM latency.
 *
 * What each kernel reads: the whole row from global memory in EVERY pass. Nothing is
 * cached on purpose in shared memory or registers - that re-read is the algorithm being
 * measured. Whether a re-read costs DRAM traffic is up to the 50 MB L2: a 4k-element row
 * (16 KB) times ~1000 rows in flight fits and the re-reads hit L2; a 64k-element row
 * (256 KB) times ~1000 rows in flight does not, and every pass goes to DRAM.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "cuda_check.cuh"
#include "online_softmax.h"
#include "warp_reduce.cuh"

#define P2_THREADS 256
#define P2_UNROLL 4
#define P2_WARPS (P2_THREADS / 32)

/* ---- block reductions --------------------------------------------------------------- */

/* The (m, l) merge of online_state_merge without o: the reduction operator of the online
 * normaliser (Milakov & Gimelshein, eq. 4). A side with m = -inf (saw only -inf) adds 0. */
__device__ __forceinline__ void ml_merge(float &m, float &l, float m2, float l2)
{
    float mn = fmaxf(m, m2);
    if (mn == -INFINITY) return;                   /* both empty: -inf - -inf is NaN */
    l = l * __expf(m - mn) + l2 * __expf(m2 - mn);
    m = mn;
}

/* Reduce over the block; every thread gets the result. red holds P2_WARPS floats. */
__device__ float block_max(float v, float *red)
{
    v = warp_max(v);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();                               /* red[] holds every warp's max */
    v = red[0];
    for (int w = 1; w < P2_WARPS; w++) v = fmaxf(v, red[w]);
    __syncthreads();                               /* all read red[] before its next use */
    return v;
}
__device__ float block_sum(float v, float *red)
{
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();                               /* red[] holds every warp's sum */
    v = 0.0f;
    for (int w = 0; w < P2_WARPS; w++) v += red[w];
    __syncthreads();                               /* all read red[] before its next use */
    return v;
}
__device__ void block_ml(float &m, float &l, float *redm, float *redl)
{
    for (int o = 16; o > 0; o >>= 1)
        ml_merge(m, l, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, l, o));
    if ((threadIdx.x & 31) == 0) { redm[threadIdx.x >> 5] = m; redl[threadIdx.x >> 5] = l; }
    __syncthreads();                               /* redm/redl hold every warp's (m, l) */
    m = redm[0]; l = redl[0];
    for (int w = 1; w < P2_WARPS; w++) ml_merge(m, l, redm[w], redl[w]);
}

__device__ __forceinline__ float max4(float4 v) { return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); }

/* The last pass of both kernels: y_j = e^{x_j - m} / l (reads the row once more, writes
 * y). A fully masked row (m = -inf) gets y = 0, the project's convention. */
__device__ void write_normalised(const float *__restrict__ xr, float *__restrict__ yr, int n,
                                 float m, float l)
{
    const bool vec = (n & 3) == 0;
    const int n4 = n >> 2, T = P2_THREADS, t = threadIdx.x;
    const float4 *x4 = reinterpret_cast<const float4 *>(xr);
    const float inv = m == -INFINITY ? 0.0f : 1.0f / l;
    const float mm = m == -INFINITY ? 0.0f : m;
    if (vec) {
        float4 *y4 = reinterpret_cast<float4 *>(yr);
        for (int i0 = t; i0 < n4; i0 += P2_UNROLL * T) {
            float4 v[P2_UNROLL];
#pragma unroll
            for (int u = 0; u < P2_UNROLL; u++) {
                int i = i0 + u * T;
                if (i < n4) v[u] = x4[i];
            }
#pragma unroll
            for (int u = 0; u < P2_UNROLL; u++) {
                int i = i0 + u * T;
                if (i < n4)
                    y4[i] = make_float4(__expf(v[u].x - mm) * inv, __expf(v[u].y - mm) * inv,
                                        __expf(v[u].z - mm) * inv, __expf(v[u].w - mm) * inv);
            }
        }
    } else {
        for (int j = t; j < n; j += T) yr[j] = __expf(xr[j] - mm) * inv;
    }
}

/* ---- 3-pass safe softmax -------------------------------------------------------------- */
__global__ void __launch_bounds__(P2_THREADS)
softmax_safe_kernel(const float *__restrict__ x, float *__restrict__ y, int n)
{
    __shared__ float red[P2_WARPS];
    const float *xr = x + (size_t)blockIdx.x * n;
    float *yr = y + (size_t)blockIdx.x * n;
    const bool vec = (n & 3) == 0;
    const int n4 = n >> 2, T = P2_THREADS, t = threadIdx.x;
    const float4 *x4 = reinterpret_cast<const float4 *>(xr);

    /* pass 1: m = max_j x_j (reads the row) */
    float m = -INFINITY, l = 0;
    if (vec) {
        for (int i0 = t; i0 < n4; i0 += P2_UNROLL * T) {
            float4 v[P2_UNROLL];
#pragma unroll
            for (int u = 0; u < P2_UNROLL; u++) {
                int i = i0 + u * T;
                v[u] = i < n4 ? x4[i] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
            }
#pragma unroll
            for (int u = 0; u < P2_UNROLL; u++) m = fmaxf(m, max4(v[u]));
        }
    } else {
        for (int j = t; j < n; j += T) m = fmaxf(m, xr[j]);
    }
    m = block_max(m, red);

    /* pass 2: l = sum_j e^{x_j - m} (reads the row again) */
    if (m != -INFINITY) {                          /* uniform: m is the block's */
        if (vec) {
            for (int i0 = t; i0 < n4; i0 += P2_UNROLL * T) {
                float4 v[P2_UNROLL];
#pragma unroll
                for (int u = 0; u < P2_UNROLL; u++) {
                    int i = i0 + u * T;
                    v[u] = i < n4 ? x4[i] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
                }
#pragma unroll
                for (int u = 0; u < P2_UNROLL; u++)
                    l += __expf(v[u].x - m) + __expf(v[u].y - m) + __expf(v[u].z - m) + __expf(v[u].w - m);
            }
        } else {
            for (int j = t; j < n; j += T) l += __expf(xr[j] - m);
        }
    }
    l = block_sum(l, red);

    /* pass 3: y_j = e^{x_j - m} / l (reads the row a third time, writes y) */
    write_normalised(xr, yr, n, m, l);
}

/* ---- 2-pass online softmax ------------------------------------------------------------ */
__global__ void __launch_bounds__(P2_THREADS)
softmax_online_kernel(const float *__restrict__ x, float *__restrict__ y, int n)
{
    __shared__ float redm[P2_WARPS], redl[P2_WARPS];
    const float *xr = x + (size_t)blockIdx.x * n;
    float *yr = y + (size_t)blockIdx.x * n;
    const bool vec = (n & 3) == 0;
    const int n4 = n >> 2, T = P2_THREADS, t = threadIdx.x;
    const float4 *x4 = reinterpret_cast<const float4 *>(xr);

    /* pass 1: each thread's running (m, l) over its elements, one rescale per float4:
     *   m' = max(m, max of the 4)   l' = l e^{m - m'} + sum_k e^{x_k - m'}   (Alg. 3 l.4-5)
     * then the block's (m, l) by the merge operator. */
    float m = -INFINITY, l = 0;
    if (vec) {
        for (int i0 = t; i0 < n4; i0 += P2_UNROLL * T) {
            float4 v[P2_UNROLL];
#pragma unroll
            for (int u = 0; u < P2_UNROLL; u++) {
                int i = i0 + u * T;
                v[u] = i < n4 ? x4[i] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
            }
#pragma unroll
            for (int u = 0; u < P2_UNROLL; u++) {
                float mn = fmaxf(m, max4(v[u]));
                if (mn == -INFINITY) continue;     /* only -inf so far: nothing to add */
                if (mn > m) { l *= __expf(m - mn); m = mn; }   /* rescale when the max moves */
                l += __expf(v[u].x - m) + __expf(v[u].y - m) + __expf(v[u].z - m) + __expf(v[u].w - m);
            }
        }
    } else {
        for (int j = t; j < n; j += T) ml_merge(m, l, xr[j], 1.0f);  /* x alone is (x, 1) */
    }
    block_ml(m, l, redm, redl);

    /* pass 2: y_j = e^{x_j - m} / l (reads the row again, writes y) */
    write_normalised(xr, yr, n, m, l);
}

__global__ void softmax_fill_kernel(float *x, size_t total, uint64_t seed)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = softmax_input(seed, i);
}

/* ---- launchers ---------------------------------------------------------------------- */
extern "C" void softmax_safe_gpu(const float *x, float *y, int rows, int n)
{
    if (rows <= 0 || n <= 0) return;
    softmax_safe_kernel<<<rows, P2_THREADS>>>(x, y, n);
    CUDA_CHECK_LAUNCH();
}

extern "C" void softmax_online_gpu(const float *x, float *y, int rows, int n)
{
    if (rows <= 0 || n <= 0) return;
    softmax_online_kernel<<<rows, P2_THREADS>>>(x, y, n);
    CUDA_CHECK_LAUNCH();
}

extern "C" void softmax_fill_gpu(float *x, int rows, int n, uint64_t seed)
{
    size_t total = (size_t)rows * n;
    if (total == 0) return;
    softmax_fill_kernel<<<1024, 256>>>(x, total, seed);
    CUDA_CHECK_LAUNCH();
}
