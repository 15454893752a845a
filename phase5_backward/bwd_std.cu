/* bwd_std.cu - the standard backward on the GPU: S, P, dP, dS materialised in HBM (fp16),
 * the baseline of this chapter as phase 1's pipeline is of the forward.
 *
 *   1. S  = scale Q K^T         cuBLAS          5. dQ = scale dS K      cuBLAS
 *   2. P  = exp(S - L)          p_kernel        6. dV = P^T dO          cuBLAS
 *   3. dP = dO V^T              cuBLAS          7. dK = scale dS^T Q    cuBLAS
 *   4. dS = P (dP - D), D = rowsum(P dP)        ds_kernel (a block per row)
 *                                                   build/phase5 --kernel std
 * The passes and their bytes are bwd_std_cpu's and bwd_std_bytes()'s (bwd_cpu.c).
 *
 * GQA without copies: the G query heads of a KV head are contiguous in Q, dO, dQ (and in
 * S, P, dP, dS), so each pass is ONE strided-batched GEMM over the B x H_kv KV heads with
 * G N_q rows: S of the group is (G N_q) x N_kv = Q_group K^T, and dV = P_group^T dO_group
 * sums over the G heads by itself (it is a sum over all G N_q rows).
 *
 * cuBLAS is column-major: a row-major R x C array is the column-major C x R array (its
 * transpose), so every call below is written for the transposes:
 *   S^T  (N_kv x GN)  = K (op T of the stored d x N_kv)  . Q^T (stored, op N)
 *   dQ^T (d x GN)     = K^T (stored, op N)                . dS^T (stored, op N)
 *   dV^T (d x N_kv)   = dO^T (stored, op N)               . P (op T of the stored N_kv x GN)
 */
#include <cublas_v2.h>            /* before cuda_check.cuh: it then defines CUBLAS_CHECK */
#include <cuda_fp16.h>
#include <math.h>
#include <stdlib.h>
#include "cuda_check.cuh"
#include "bwd.h"

#define ROW_THREADS 256

static cublasHandle_t handle = NULL;

/* 2. P = exp(S - L) in place of a copy of S (fp16), masked entries 0; one block per row. */
__global__ void p_kernel(attn_problem_t p, const __half *S, const float *L, __half *P)
{
    const size_t row = blockIdx.x;   /* (b, h, i) flat */
    const int i = (int)(row % p.N_q);
    const float Li = L[row];
    for (int c = threadIdx.x; c < p.N_kv; c += blockDim.x) {
        const float s = __half2float(S[row * p.N_kv + c]);
        P[row * p.N_kv + c] = __float2half(attn_visible(&p, i, c) ? expf(s - Li) : 0.0f);
    }
}

/* 4. D = rowsum(P * dP), then dS = P * (dP - D); one block per row. */
__global__ void ds_kernel(attn_problem_t p, const __half *P, const __half *dP, __half *dS)
{
    __shared__ float part[ROW_THREADS / 32];
    const size_t row = blockIdx.x, off = row * p.N_kv;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < p.N_kv; c += blockDim.x) acc += __half2float(P[off + c]) * __half2float(dP[off + c]);
#pragma unroll
    for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = acc;
    __syncthreads();
    float D = 0.0f;
#pragma unroll
    for (int w = 0; w < ROW_THREADS / 32; w++) D += part[w];
    for (int c = threadIdx.x; c < p.N_kv; c += blockDim.x) {
        const float pe = __half2float(P[off + c]);
        dS[off + c] = __float2half(pe * (__half2float(dP[off + c]) - D));
    }
}

/* One strided-batched GEMM over the B x H_kv groups: C (fp32 or fp16) = alpha op(A) op(B). */
static void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                 const void *A, int lda, long long sa, const void *B, int ldb, long long sb,
                 void *C, cudaDataType tc, int ldc, long long sc, int batch)
{
    const float zero = 0.0f;
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle, ta, tb, m, n, k, &alpha, A, CUDA_R_16F, lda, sa,
                                            B, CUDA_R_16F, ldb, sb, &zero, C, tc, ldc, sc, batch,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

extern "C" void bwd_std_gpu_teardown(void)
{
    if (handle) { CUBLAS_CHECK(cublasDestroy(handle)); handle = NULL; }
}

extern "C" void bwd_std_gpu(const attn_problem_t *p, const bwd_gpu_args_t *a, void *sp)
{
    if (!handle) {
        CUBLAS_CHECK(cublasCreate(&handle));
        atexit(bwd_std_gpu_teardown);   /* released before the CUDA runtime's own exit handler */
    }
    const int G = p->H / p->H_kv, GN = G * p->N_q, batch = p->B * p->H_kv, d = p->d;
    const long long nn = (long long)p->N_q * p->N_kv, sq = (long long)GN * d, skv = (long long)p->N_kv * d,
                    ss = (long long)G * nn;
    const size_t all = (size_t)p->B * p->H * nn;
    __half *S = (__half *)sp, *P = S + all, *dP = P + all, *dS = dP + all;
    const unsigned rows = (unsigned)((size_t)p->B * p->H * p->N_q);

    gemm(CUBLAS_OP_T, CUBLAS_OP_N, p->N_kv, GN, d, p->scale, a->K, d, skv, a->Q, d, sq, S, CUDA_R_16F, p->N_kv, ss, batch);
    p_kernel<<<rows, ROW_THREADS>>>(*p, S, a->L, P);
    CUDA_CHECK_LAUNCH();
    gemm(CUBLAS_OP_T, CUBLAS_OP_N, p->N_kv, GN, d, 1.0f, a->V, d, skv, a->dO, d, sq, dP, CUDA_R_16F, p->N_kv, ss, batch);
    ds_kernel<<<rows, ROW_THREADS>>>(*p, P, dP, dS);
    CUDA_CHECK_LAUNCH();
    gemm(CUBLAS_OP_N, CUBLAS_OP_N, d, GN, p->N_kv, p->scale, a->K, d, skv, dS, p->N_kv, ss, a->dQ, CUDA_R_32F, d, sq, batch);
    gemm(CUBLAS_OP_N, CUBLAS_OP_T, d, p->N_kv, GN, 1.0f, a->dO, d, sq, P, p->N_kv, ss, a->dV, CUDA_R_32F, d, skv, batch);
    gemm(CUBLAS_OP_N, CUBLAS_OP_T, d, p->N_kv, GN, p->scale, a->Q, d, sq, dS, p->N_kv, ss, a->dK, CUDA_R_32F, d, skv, batch);
}
