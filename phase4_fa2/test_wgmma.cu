/* test_wgmma.cu - the Hopper building block (common/wgmma.cuh) checked against the CPU
 * before any attention kernel relies on it: the two products FlashAttention needs, on
 * one warpgroup (128 threads), fp16 in, fp32 out.
 *
 *   ss: S = Q K^T     Q [64 x 64] and K [64 x 64], both K-major (d contiguous), both read
 *                     by the tensor cores from 128-byte-swizzled shared memory
 *   rs: O = P V       P [64 x 64] from registers (mma.sync's A fragments), V [64 keys x
 *                     64] MN-major (d contiguous) from swizzled shared memory, transposed
 *   ss, A MN-major: dQ = dS K   (phase 5's wgmma backward) dS^T stored [key][query], i.e.
 *                     A stored K x M, read with A's transpose flag; K [keys x d] MN-major
 *
 * Each output poisoned (NaN) first; every element compared with a float64 CPU product of
 * the same fp16 inputs: max abs error <= 1e-3 x max |reference| (fp32 accumulation of 64
 * exact fp16 products). Built for sm_90a only; on another GPU it says so and exits 0.
 *
 *   build/test_wgmma        (make phase4-build builds it; phase4_fa2/tests.sh runs it)
 */
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "cuda_check.cuh"
#include "mma.cuh"
#include "wgmma.cuh"

#define T 64   /* the tile: 64 x 64 fp16, one 128-byte swizzled row per row */

/* a 64 x 64 row-major fp16 matrix from global into swizzled shared memory */
__device__ void tile_to_smem(unsigned char *s, const __half *g)
{
    for (int e = threadIdx.x; e < T * T; e += blockDim.x) *(__half *)(s + sw128_offset(e / T, e % T)) = g[e];
}

/* the accumulators of a 64 x 64 result to global, by the layout of wgmma.cuh's picture */
__device__ void acc_to_global(const float (&d)[32], float *C)
{
    const int w = threadIdx.x / 32, g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
    for (int n8 = 0; n8 < T / 8; n8++)
        for (int e = 0; e < 4; e++) C[(16 * w + g + 8 * (e / 2)) * T + n8 * 8 + 2 * t + e % 2] = d[4 * n8 + e];
}

__global__ void __launch_bounds__(128) ss_kernel(const __half *Q, const __half *K, float *S)
{
#if FA_HAVE_WGMMA
    __shared__ __align__(1024) unsigned char sq[T * 128], sk[T * 128];
    tile_to_smem(sq, Q);
    tile_to_smem(sk, K);
    fence_proxy_async();   /* ordinary stores, read next by the tensor cores */
    __syncthreads();
    float d[32];
    for (int i = 0; i < 32; i++) d[i] = 0.0f;
    const uint64_t dq = wgmma_desc_sw128(sq, 16, 1024), dk = wgmma_desc_sw128(sk, 16, 1024);
    wgmma_fence();
    for (int k = 0; k < T / 16; k++)   /* k16 slice k starts 32 bytes further: +2 in the descriptor */
        wgmma_m64n64k16_ss<0>(d, dq + 2 * k, dk + 2 * k, k > 0);
    wgmma_commit();
    wgmma_wait<0>();
    acc_to_global(d, S);
#else
    (void)Q; (void)K; (void)S;
#endif
}

__global__ void __launch_bounds__(128) rs_kernel(const __half *P, const __half *V, float *O)
{
#if FA_HAVE_WGMMA
    __shared__ __align__(1024) unsigned char sv[T * 128];
    tile_to_smem(sv, V);
    fence_proxy_async();
    __syncthreads();
    const int w = threadIdx.x / 32, g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
    float d[32];
    for (int i = 0; i < 32; i++) d[i] = 0.0f;
    const uint64_t dv = wgmma_desc_sw128(sv, T * 128, 1024);
    uint32_t a[T / 16][4];   /* mma.sync's A fragments of the warp's 16 rows of P (mma.cuh) */
    for (int k = 0; k < T / 16; k++) {
        const __half *r0 = P + (16 * w + g) * T + 16 * k + 2 * t, *r8 = r0 + 8 * T;
        a[k][0] = *(const uint32_t *)r0;
        a[k][1] = *(const uint32_t *)r8;
        a[k][2] = *(const uint32_t *)(r0 + 8);
        a[k][3] = *(const uint32_t *)(r8 + 8);
    }
    wgmma_fence();
    for (int k = 0; k < T / 16; k++)   /* 16 keys further: 16 rows of 128 bytes, +128 */
        wgmma_m64n64k16_rs<1>(d, a[k], dv + 128 * k, k > 0);
    wgmma_commit();
    wgmma_wait<0>();
    acc_to_global(d, O);
#else
    (void)P; (void)V; (void)O;
#endif
}

/* dQ = dS K: A (dS) from dS^T stored [k][m] (MN-major, the transpose flag), B = K stored
 * [k][n] (MN-major): both descriptors step 16 rows (2048 bytes, +128) a k16 slice */
__global__ void __launch_bounds__(128) ss_mn_kernel(const __half *At, const __half *B, float *C)
{
#if FA_HAVE_WGMMA
    __shared__ __align__(1024) unsigned char sa[T * 128], sb[T * 128];
    tile_to_smem(sa, At);
    tile_to_smem(sb, B);
    fence_proxy_async();
    __syncthreads();
    float d[32];
    for (int i = 0; i < 32; i++) d[i] = 0.0f;
    const uint64_t da = wgmma_desc_sw128(sa, T * 128, 1024), db = wgmma_desc_sw128(sb, T * 128, 1024);
    wgmma_fence();
    for (int k = 0; k < T / 16; k++)
        wgmma_m64n64k16_ss<1, 1>(d, da + 128 * k, db + 128 * k, k > 0);
    wgmma_commit();
    wgmma_wait<0>();
    acc_to_global(d, C);
#else
    (void)At; (void)B; (void)C;
#endif
}

/* C = A B on the CPU, float64, from the fp16 values; A is [M][K] (a_transposed: [K][M]), B
 * is [K][N] (b_transposed: [N][K], C = A B^T) */
static void cpu_product(const __half *A, int a_transposed, const __half *B, int b_transposed, double *C)
{
    for (int m = 0; m < T; m++)
        for (int n = 0; n < T; n++) {
            double s = 0;
            for (int k = 0; k < T; k++)
                s += (double)__half2float(a_transposed ? A[k * T + m] : A[m * T + k]) *
                     __half2float(b_transposed ? B[n * T + k] : B[k * T + n]);
            C[m * T + n] = s;
        }
}

static int check(const char *name, const float *got, const double *ref)
{
    double maxref = 0, maxerr = 0;
    int bad = -1;
    for (int e = 0; e < T * T; e++) maxref = fmax(maxref, fabs(ref[e]));
    for (int e = 0; e < T * T; e++) {
        const double err = fabs((double)got[e] - ref[e]);
        if (!(err <= 1e-3 * maxref)) { if (bad < 0) bad = e; }
        if (err > maxerr || isnan(got[e])) maxerr = isnan(got[e]) ? INFINITY : err;
    }
    if (bad >= 0) {
        printf("  FAIL  wgmma %s: element (%d, %d) is %.6g, the CPU says %.6g (max abs error %.3g, bound %.3g)\n",
               name, bad / T, bad % T, got[bad], ref[bad], maxerr, 1e-3 * maxref);
        return 1;
    }
    printf("  PASS  wgmma %s: 64 x 64, max abs error %.3g (bound %.3g)\n", name, maxerr, 1e-3 * maxref);
    return 0;
}

int main(void)
{
    int dev = 0, major = 0, minor = 0, n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) { printf("test_wgmma: skipped: no CUDA device\n"); return 0; }
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    if (major != 9 || minor != 0) {
        printf("test_wgmma: skipped: wgmma needs sm_90 (Hopper); this GPU is sm_%d%d\n", major, minor);
        return 0;
    }
    __half *h[3];
    for (int m = 0; m < 3; m++) {   /* A, B and a second B, values in [-1, 1) */
        h[m] = (__half *)malloc(T * T * sizeof(__half));
        for (int e = 0; e < T * T; e++) h[m][e] = __float2half((float)((e * 7919 + m * 104729) % 2003) / 1001.5f - 1.0f);
    }
    __half *dA, *dB, *dV;
    float *dC;
    CUDA_CHECK(cudaMalloc(&dA, T * T * 2));
    CUDA_CHECK(cudaMalloc(&dB, T * T * 2));
    CUDA_CHECK(cudaMalloc(&dV, T * T * 2));
    CUDA_CHECK(cudaMalloc(&dC, T * T * 4));
    CUDA_CHECK(cudaMemcpy(dA, h[0], T * T * 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB, h[1], T * T * 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dV, h[2], T * T * 2, cudaMemcpyHostToDevice));
    float *got = (float *)malloc(T * T * 4);
    double *ref = (double *)malloc(T * T * 8);
    int fails = 0;

    CUDA_CHECK(cudaMemset(dC, 0xFF, T * T * 4));   /* poison: all-ones bytes are a NaN */
    ss_kernel<<<1, 128>>>(dA, dB, dC);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(got, dC, T * T * 4, cudaMemcpyDeviceToHost));
    cpu_product(h[0], 0, h[1], 1, ref);
    fails += check("ss (S = Q K^T, both K-major)", got, ref);

    CUDA_CHECK(cudaMemset(dC, 0xFF, T * T * 4));
    rs_kernel<<<1, 128>>>(dA, dV, dC);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(got, dC, T * T * 4, cudaMemcpyDeviceToHost));
    cpu_product(h[0], 0, h[2], 0, ref);
    fails += check("rs (O = P V, P in registers, V MN-major)", got, ref);

    CUDA_CHECK(cudaMemset(dC, 0xFF, T * T * 4));
    ss_mn_kernel<<<1, 128>>>(dA, dV, dC);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(got, dC, T * T * 4, cudaMemcpyDeviceToHost));
    cpu_product(h[0], 1, h[2], 0, ref);
    fails += check("ss, A MN-major (dQ = dS K, dS^T stored, K MN-major)", got, ref);

    printf("test_wgmma: %s\n", fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
