/* naive.cu - standard attention on the GPU: three kernels, S and P in HBM.
 *
 *   1. S = scale * Q K^T   -> HBM, fp16        (a GEMM)
 *   2. P = softmax(S)      -> HBM, fp16        (3-pass safe softmax, one block per row;
 *                                               the causal mask is applied here)
 *   3. O = P V             -> HBM, fp16        (a GEMM)
 * fp16 in, fp32 arithmetic. GQA: query head h reads KV head h / (H / H_kv), no copies.
 *
 * Variants (--kernel):
 *   simple  shared-memory tiled GEMMs (fp32 FMAs, no tensor cores) + the softmax kernel
 *           build/phase1 --kernel simple
 *   cublas  cublasGemmStridedBatchedEx (fp16 in, fp32 compute, tensor cores) for steps
 *           1 and 3 + the same softmax kernel: what a framework's unfused "math"
 *           attention does
 *           build/phase1 --kernel cublas
 *   both, with the sweep:  build/phase1 --sweep
 */
extern "C" {
#include "naive.h"
}
#include <cublas_v2.h>            /* before cuda_check.cuh: it then defines CUBLAS_CHECK */
#include "cuda_check.cuh"
#include <cuda_fp16.h>
#include <math.h>

/* ---- the simple GEMM: C = alpha * A B, one (b, h) head per blockIdx.z ------------------
 *
 * A is M x K row-major (Q for step 1, P for step 3). B is K x N, read either as the
 * transpose of a row-major N x K matrix (step 1: B = K^T, so B(k, j) = Kmat[j][k]) or
 * as a row-major K x N matrix (step 3: B = V). C is M x N row-major, fp16.
 *
 * Each block computes a BM x BN tile of C with 16 x 16 threads; each thread owns a 4 x 4
 * set of outputs spaced 16 apart (rows ty + 16r, columns tx + 16c), so a warp reads
 * shared memory without bank conflicts. The K dimension is walked BK at a time: the
 * block stages a BM x BK slice of A and a BK x BN slice of B in shared memory (fp32),
 * then every thread runs BK rank-1 updates of its 4 x 4 accumulators. */
#define BM 64
#define BN 64
#define BK 16
#define GEMM_THREADS 256

template <bool B_IS_TRANSPOSED>
__global__ void __launch_bounds__(GEMM_THREADS)
gemm_simple_kernel(const __half *A, const __half *Bmat, __half *C, int M, int N, int K,
                   float alpha, long long a_head, long long b_head, long long c_head,
                   int H, int group, int z0)
{
    /* which head: z = b * H + h; B (K or V) is shared by the `group` heads of a KV head */
    const int z = z0 + blockIdx.z, b = z / H, h = z % H;
    A    += (long long)z * a_head;
    Bmat += ((long long)b * (H / group) + h / group) * b_head;
    C    += (long long)z * c_head;

    __shared__ float As[BK][BM + 1];   /* As[kk][r] = A[i0 + r][k0 + kk] (transposed; +1 pad) */
    __shared__ float Bs[BK][BN + 1];   /* Bs[kk][c] = B(k0 + kk, j0 + c)                      */
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int i0 = blockIdx.y * BM, j0 = blockIdx.x * BN;
    float acc[4][4] = {};

    for (int k0 = 0; k0 < K; k0 += BK) {
        /* stage the A and B slices; out-of-range elements (tails) are zeros */
        for (int e = threadIdx.x; e < BM * BK; e += GEMM_THREADS) {
            int r = e / BK, kk = e % BK, i = i0 + r, k = k0 + kk;
            As[kk][r] = (i < M && k < K) ? __half2float(A[(long long)i * K + k]) : 0.0f;
        }
        for (int e = threadIdx.x; e < BK * BN; e += GEMM_THREADS) {
            int kk, c;
            if (B_IS_TRANSPOSED) { c = e / BK; kk = e % BK; }   /* contiguous along k */
            else                 { kk = e / BN; c = e % BN; }   /* contiguous along j */
            int k = k0 + kk, j = j0 + c;
            float v = 0.0f;
            if (k < K && j < N)
                v = __half2float(B_IS_TRANSPOSED ? Bmat[(long long)j * K + k] : Bmat[(long long)k * N + j]);
            Bs[kk][c] = v;
        }
        __syncthreads();   /* the slices are complete before any thread reads them */

        /* TODO EXERCISE naive.gemm_tile: the inner loop of the tiled GEMM over one BK slice
         * HINT: for each kk < BK, read a[r] = As[kk][ty + 16 r] and b[c] = Bs[kk][tx + 16 c]
         * HINT: (r, c < 4) and add a[r] * b[c] to acc[r][c]: BK rank-1 updates */
        /* END EXERCISE naive.gemm_tile */
        __syncthreads();   /* every thread is done with the slices before they are overwritten */
    }

#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
        for (int c = 0; c < 4; c++) {
            int i = i0 + ty + 16 * r, j = j0 + tx + 16 * c;
            if (i < M && j < N) C[(long long)i * N + j] = __float2half_rn(alpha * acc[r][c]);
        }
}

/* ---- the softmax: one block per row of S ------------------------------------------------
 *
 * The 3-pass safe softmax over the n_vis visible columns of row i (bottom-right causal:
 * columns j <= i + N_kv - N_q; all N_kv without --causal):
 *   pass 1  m = max_j S_ij                 (reads the row)
 *   pass 2  l = sum_j exp(S_ij - m)        (reads it again)
 *   pass 3  P_ij = exp(S_ij - m) / l       (reads it a third time, writes P; 0 if masked)
 * A fully masked row (n_vis = 0) gets P = 0, so O = 0 (common/problem.h).
 * Each pass does a couple of flops per 2-byte element: this kernel is memory-bound
 * (docs/01_naive.md); the second and third reads of a row mostly hit L1/L2. */
#define SOFTMAX_THREADS 256

/* Reduce v over the block with op (max or sum; identity: -inf or 0): warp shuffles, then
 * one value per warp through shared memory. Every thread returns the block's result. */
template <typename Op>
__device__ float block_reduce(float v, Op op, float identity, float *red /* [32] in shared memory */)
{
    /* TODO EXERCISE naive.block_reduce: combine the threads' partial values into the block's
     * HINT: in each warp: v = op(v, __shfl_xor_sync(0xffffffffu, v, off)) for off = 16, 8, 4, 2, 1;
     * HINT: lane 0 of each warp stores v in red[warp]; after a barrier warp 0 combines red[]
     * HINT: the same way (lanes >= the number of warps hold identity) and puts the result in red[0]; after a barrier everyone reads red[0] */
    (void)op; (void)identity; (void)&red;
    /* END EXERCISE naive.block_reduce */
    return v;
}

struct MaxOp { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };
struct SumOp { __device__ float operator()(float a, float b) const { return a + b; } };

__global__ void __launch_bounds__(SOFTMAX_THREADS)
softmax_rows_kernel(const __half *S, __half *P, long long rows, int N_q, int N_kv, int causal)
{
    __shared__ float red[32];
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const int i = (int)(row % N_q);
        long long last = causal ? (long long)i + (N_kv - N_q) : (long long)N_kv - 1;
        const int n_vis = last < 0 ? 0 : (last + 1 < N_kv ? (int)(last + 1) : N_kv);
        const __half *s = S + row * N_kv;
        __half *prow = P + row * N_kv;

        /* TODO EXERCISE naive.softmax_stats: passes 1 and 2, the row's max m and sum l
         * HINT: pass 1: each thread takes the max of S_ij over its columns j = threadIdx.x,
         * HINT: + blockDim.x, ... below n_vis; block_reduce(m, MaxOp(), -INFINITY, red) gives the row max.
         * HINT: pass 2: the same loop summing expf(S_ij - m), then a SumOp block_reduce. */
        float m = 0.0f, l = 1.0f; (void)&red;
        /* END EXERCISE naive.softmax_stats */

        const float inv_l = 1.0f / l;   /* inf when n_vis = 0; never used then */
        for (int j = threadIdx.x; j < N_kv; j += blockDim.x)
            prow[j] = __float2half_rn(j < n_vis ? expf(__half2float(s[j]) - m) * inv_l : 0.0f);
    }
}

/* ---- launchers ---------------------------------------------------------------------- */

static void launch_gemm_simple(bool b_transposed, const __half *A, const __half *Bm, __half *C,
                               int M, int N, int K, float alpha, long long a_head,
                               long long b_head, long long c_head, const attn_problem_t *p)
{
    const int heads = p->B * p->H, group = p->H / p->H_kv;
    dim3 block(GEMM_THREADS);
    for (int z0 = 0; z0 < heads; z0 += 65535) {       /* gridDim.z is at most 65535 */
        dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM, heads - z0 < 65535 ? heads - z0 : 65535);
        if (b_transposed)
            gemm_simple_kernel<true><<<grid, block>>>(A, Bm, C, M, N, K, alpha, a_head, b_head, c_head, p->H, group, z0);
        else
            gemm_simple_kernel<false><<<grid, block>>>(A, Bm, C, M, N, K, alpha, a_head, b_head, c_head, p->H, group, z0);
        CUDA_CHECK_LAUNCH();
    }
}

static cublasHandle_t handle = NULL;

/* cuBLAS is column-major; a row-major R x C matrix is a column-major C x R one (its
 * transpose), so with everything transposed:
 *   step 1: S^T (N_kv x N_q) = K (N_kv x d, stored as K^T: op T) . Q^T (stored as is: op N)
 *   step 3: O^T (d x N_q)    = V^T (stored as is: op N) . P^T (stored as is: op N)
 * GQA: the G = H / H_kv query heads of a KV head cannot share one batch stride with K/V,
 * so one batched call per g < G covers heads h = kvh * G + g over every (b, kvh): the Q,
 * S, P and O strides are G heads, the K and V strides one head. No copies. */
static void cublas_steps(const naive_gpu_t *g, int step)
{
    const attn_problem_t *p = &g->p;
    const int G = p->H / p->H_kv, batch = p->B * p->H_kv;
    const long long qd = (long long)p->N_q * p->d, kvd = (long long)p->N_kv * p->d;
    const long long ss = (long long)p->N_q * p->N_kv;
    const float one = 1.0f, zero = 0.0f;
    const __half *Q = (const __half *)g->Q, *K = (const __half *)g->K, *V = (const __half *)g->V;
    __half *S = (__half *)g->S, *P = (__half *)g->P, *O = (__half *)g->O;
    for (int gi = 0; gi < G; gi++) {
        if (step == 1)
            CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N,
                p->N_kv, p->N_q, p->d, &p->scale,
                K, CUDA_R_16F, p->d, kvd,
                Q + gi * qd, CUDA_R_16F, p->d, G * qd,
                &zero, S + gi * ss, CUDA_R_16F, p->N_kv, G * ss,
                batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        else
            CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N,
                p->d, p->N_q, p->N_kv, &one,
                V, CUDA_R_16F, p->d, kvd,
                P + gi * ss, CUDA_R_16F, p->N_kv, G * ss,
                &zero, O + gi * qd, CUDA_R_16F, p->d, G * qd,
                batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
}

extern "C" void naive_gpu_forward(const naive_gpu_t *g)
{
    const attn_problem_t *p = &g->p;
    const long long heads = (long long)p->B * p->H;
    const long long qd = (long long)p->N_q * p->d, kvd = (long long)p->N_kv * p->d;
    const long long ss = (long long)p->N_q * p->N_kv;

    /* 1. S = scale * Q K^T */
    if (g->kernel == NAIVE_CUBLAS) {
        if (!handle) {
            CUBLAS_CHECK(cublasCreate(&handle));
            atexit(naive_gpu_teardown);   /* released before the CUDA runtime's own exit handler */
        }
        cublas_steps(g, 1);
    } else {
        launch_gemm_simple(true, (const __half *)g->Q, (const __half *)g->K, (__half *)g->S,
                           p->N_q, p->N_kv, p->d, p->scale, qd, kvd, ss, p);
    }
    /* 2. P = softmax(S), one block per row */
    const long long rows = heads * p->N_q;
    softmax_rows_kernel<<<(unsigned)(rows < 0x7fffffffLL ? rows : 0x7fffffffLL), SOFTMAX_THREADS>>>(
        (const __half *)g->S, (__half *)g->P, rows, p->N_q, p->N_kv, p->causal ? 1 : 0);
    CUDA_CHECK_LAUNCH();
    /* 3. O = P V */
    if (g->kernel == NAIVE_CUBLAS)
        cublas_steps(g, 3);
    else
        launch_gemm_simple(false, (const __half *)g->P, (const __half *)g->V, (__half *)g->O,
                           p->N_q, p->d, p->N_kv, 1.0f, ss, kvd, qd, p);
}

extern "C" void naive_gpu_forward_fn(void *ctx) { naive_gpu_forward((const naive_gpu_t *)ctx); }

extern "C" void naive_gpu_teardown(void)
{
    if (handle) { CUBLAS_CHECK(cublasDestroy(handle)); handle = NULL; }
}
