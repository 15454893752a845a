/* bwd_simple.cu - the backward's preprocess, and the CPU model's loop on the GPU.
 *
 *   preprocess  D = rowsum(dO * O) (Alg. 2 l.4), and dQ = 0 for the atomic kernels:
 *               one warp per row.
 *   simple      grid (Tc, B x H_kv): a thread block per K/V block j and KV head, the loop
 *               order, blocks and tiles of bwd_fa2_cpu (bwd_cpu.c), fp32 in shared
 *               memory, CUDA cores; each thread computes whole dot products. dQ_i's
 *               share is added with fp32 atomics.   build/phase5 --kernel simple
 *
 *   shared memory (fp32; the model's SRAM, bwd_sram_bytes):
 *     K_j V_j dK_j dV_j  Bc x d each     stay for the whole loop over (h, i)
 *     Q_i dO_i dQ_i      Br x d each     per step
 *     P_ij dS_ij         Br x Bc each    per step
 *     L_i D_i            Br each         per step
 */
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include "cuda_check.cuh"
#include "bwd.h"
#include "bwd_gpu.cuh"
#include "visits.cuh"

#define PRE_THREADS 256
#define SIMPLE_THREADS 256

/* D = rowsum(dO * O), a warp per row; the row's dQ zeroed when zero_dq. */
__global__ void bwd_preprocess_kernel(size_t rows, int d, const __half *dO, const float *O, float *D,
                                      float *dQ, int zero_dq)
{
    const size_t row = (size_t)blockIdx.x * (PRE_THREADS / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const __half *g = dO + row * d;
    const float *o = O + row * d;
    float acc = 0.0f;
    for (int k = lane; k < d; k += 32) {
        acc += __half2float(g[k]) * o[k];
        if (zero_dq) dQ[row * d + k] = 0.0f;
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) D[row] = acc;
}

extern "C" void bwd_preprocess_launch(const attn_problem_t *p, const bwd_gpu_args_t *a, int zero_dq)
{
    const size_t rows = (size_t)p->B * p->H * p->N_q;
    const size_t blocks = (rows + PRE_THREADS / 32 - 1) / (PRE_THREADS / 32);
    bwd_preprocess_kernel<<<(unsigned)blocks, PRE_THREADS>>>(rows, p->d, (const __half *)a->dO, a->O, a->D,
                                                             a->dQ, zero_dq);
    CUDA_CHECK_LAUNCH();
}

/* The simple kernel's shared memory for (d, Br, Bc): exactly the model's SRAM. */
static size_t simple_smem(int d, attn_blocks_t b) { return bwd_sram_bytes(d, b); }

__global__ void __launch_bounds__(SIMPLE_THREADS)
bwd_simple_kernel(attn_problem_t p, int Br, int Bc, const __half *Qg, const __half *Kg, const __half *Vg,
                  const __half *dOg, const float *Lg, const float *Dg, float *dQg, float *dKg, float *dVg,
                  gpu_visits_t vis)
{
    extern __shared__ float sm[];
    const int d = p.d;
    float *Kj = sm, *Vj = Kj + Bc * d, *dKj = Vj + Bc * d, *dVj = dKj + Bc * d;
    float *Qi = dVj + Bc * d, *dOi = Qi + Br * d, *dQi = dOi + Br * d;
    float *P = dQi + Br * d, *dS = P + Br * Bc, *Li = dS + Br * Bc, *Di = Li + Br;

    const int j = blockIdx.x, b = blockIdx.y / p.H_kv, kvh = blockIdx.y % p.H_kv;
    const int G = p.H / p.H_kv, Tr = (p.N_q + Br - 1) / Br, j0 = j * Bc;
    const size_t kv_off = ((size_t)b * p.H_kv + kvh) * p.N_kv * d;
    const int kr = min(Bc, p.N_kv - j0);   /* keys of this block */
    /* Alg. 2 l.8: the Q blocks [first, Tr) it visits, for each of the G query heads; the
     * driver holds the count to bwd_q_block_first() (here, before the loads: after them the
     * count's address made ptxas spill 8 bytes at its 32 registers) */
    const int first = visit_all(vis) ? 0 : bwd_first_q_block(p, j, Br, Bc);
    if (threadIdx.x == 0) visit_count(vis, j, G * (Tr - first));

    /* Alg. 2 l.6-7: K_j, V_j in; dK_j, dV_j = 0 */
    for (int e = threadIdx.x; e < Bc * d; e += blockDim.x) {
        const bool ok = e / d < kr;
        Kj[e] = ok ? __half2float(Kg[kv_off + (size_t)j0 * d + e]) : 0.0f;
        Vj[e] = ok ? __half2float(Vg[kv_off + (size_t)j0 * d + e]) : 0.0f;
        dKj[e] = dVj[e] = 0.0f;
    }
    for (int h = kvh * G; h < (kvh + 1) * G; h++)       /* the KV head's query heads (GQA) */
        for (int i = first; i < Tr; i++) {               /* l.8 */
            const int i0 = i * Br, qr = min(Br, p.N_q - i0);
            const size_t l_off = ((size_t)b * p.H + h) * p.N_q + i0, q_off = l_off * d;
            __syncthreads();   /* the last step is done with Q_i, dO_i, P, dS */
            for (int e = threadIdx.x; e < Br * d; e += blockDim.x) {   /* l.9 */
                const bool ok = e / d < qr;
                Qi[e] = ok ? __half2float(Qg[q_off + e]) : 0.0f;
                dOi[e] = ok ? __half2float(dOg[q_off + e]) : 0.0f;
            }
            for (int r = threadIdx.x; r < Br; r += blockDim.x) {
                Li[r] = r < qr ? Lg[l_off + r] : INFINITY;   /* a row past N_q: P = 0 */
                Di[r] = r < qr ? Dg[l_off + r] : 0.0f;
            }
            __syncthreads();
            for (int e = threadIdx.x; e < Br * Bc; e += blockDim.x) {   /* l.10-14, one entry */
                const int r = e / Bc, c = e % Bc;
                float s = 0.0f, dp = 0.0f;
                for (int k = 0; k < d; k++) {
                    s += Qi[r * d + k] * Kj[c * d + k];
                    dp += dOi[r * d + k] * Vj[c * d + k];
                }
                const bool seen = c < kr && r < qr && attn_visible(&p, i0 + r, j0 + c);
                float pe;
                /* TODO EXERCISE bwd.recompute_P_gpu: P_ij recomputed from the forward's L (Alg. 2 l.11)
                 * HINT: s = Q_i[r] . K_j[c] (raw); Li[r] is the row's log-sum-exp (natural log, the
                 * HINT: scale already inside). An entry the mask hides (seen false) is 0. */
                pe = 0.0f; (void)seen;
                /* END EXERCISE bwd.recompute_P_gpu */
                P[e] = pe;
                dS[e] = pe * (dp - Di[r]);   /* l.14 */
            }
            __syncthreads();
            for (int e = threadIdx.x; e < Bc * d; e += blockDim.x) {   /* l.13, l.16 */
                const int c = e / d, k = e % d;
                float v = 0.0f, kk = 0.0f;
                for (int r = 0; r < Br; r++) {
                    v += P[r * Bc + c] * dOi[r * d + k];
                    kk += dS[r * Bc + c] * Qi[r * d + k];
                }
                dVj[e] += v;
                dKj[e] += p.scale * kk;
            }
            for (int e = threadIdx.x; e < Br * d; e += blockDim.x) {   /* l.15: dQ_i += scale dS K_j */
                const int r = e / d, k = e % d;
                float q = 0.0f;
                for (int c = 0; c < Bc; c++) q += dS[r * Bc + c] * Kj[c * d + k];
                dQi[e] = p.scale * q;
                if (r < qr) atomicAdd(&dQg[q_off + e], dQi[e]);   /* the other K/V blocks add too */
            }
        }
    __syncthreads();
    for (int e = threadIdx.x; e < kr * d; e += blockDim.x) {   /* l.18: written once */
        dKg[kv_off + (size_t)j0 * d + e] = dKj[e];
        dVg[kv_off + (size_t)j0 * d + e] = dVj[e];
    }
}

extern "C" int bwd_simple_config(int d, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = "simple";
    c->threads = SIMPLE_THREADS;
    c->blocks = bwd_blocks(d);
    c->smem_bytes = simple_smem(d, c->blocks);
    if (d % 8 != 0 || d > 256) {
        snprintf(why, len, "kernel simple is built for d a multiple of 8 up to 256, not d = %d", d);
        return -1;
    }
    return gpu_config_fits(c, 0, why, len);
}

extern "C" void bwd_simple_launch(const attn_problem_t *p, const bwd_gpu_args_t *a)
{
    static size_t attr = 0;
    const attn_blocks_t bl = bwd_blocks(p->d);
    const size_t smem = simple_smem(p->d, bl);
    if (smem > attr) {
        CUDA_CHECK(cudaFuncSetAttribute(bwd_simple_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        attr = smem;
    }
    bwd_preprocess_launch(p, a, 1);
    const dim3 grid((p->N_kv + bl.Bc - 1) / bl.Bc, p->B * p->H_kv);
    bwd_simple_kernel<<<grid, SIMPLE_THREADS, smem>>>(*p, bl.Br, bl.Bc, (const __half *)a->Q, (const __half *)a->K,
        (const __half *)a->V, (const __half *)a->dO, a->L, a->D, a->dQ, a->dK, a->dV, gpu_visits(grid.x));
    CUDA_CHECK_LAUNCH();
}
