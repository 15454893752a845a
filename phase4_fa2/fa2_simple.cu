/* fa2_simple.cu - FlashAttention-2's forward on the GPU, written to be read next to
 * fa2_cpu.c: Q blocks outer (one thread block each), K/V blocks inner, the output kept
 * unnormalised and divided once, fp32 math, no tensor cores.
 *
 *   simple   grid (num_m_blocks, B x H), Br = 32 query rows, Bc = 32 keys, 8 warps of 4
 *            rows; a lane owns one key of the block for S and P, and d/32 output columns
 *            of each of its warp's rows for O~ (in registers).
 *                                                    build/phase4 --kernel simple
 *
 * Next to phase 3's simple kernel: no O, l, m in HBM (they live in registers for the
 * whole K/V loop), no division per step, and a causal Q block stops at the diagonal.
 */
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include "cuda_check.cuh"
#include "fa2.h"
#include "visits.cuh"
#include "warp_reduce.cuh"

#define S_BR 32
#define S_BC 32            /* = warpSize: lane c holds key c of the block */
#define S_THREADS 256
#define S_R (S_BR / (S_THREADS / 32))   /* 4 rows per warp */
#define S_MAXD 256

static size_t simple_smem(int d) { return sizeof(float) * 3 * S_BR * (size_t)d; }  /* Q_i, K_j^T, V_j */

__global__ void __launch_bounds__(S_THREADS)
fa2_simple_kernel(attn_problem_t p, const __half *Qg, const __half *Kg, const __half *Vg,
                  float *Og, float *Lg, gpu_visits_t vis)
{
    extern __shared__ float sram[];
    const int d = p.d, tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    float *Qi = sram, *Kt = Qi + S_BR * d, *Vj = Kt + S_BC * d;   /* K_j stored d x Bc */
    const int i = blockIdx.x, b = blockIdx.y / p.H, h = blockIdx.y % p.H;
    const __half *Q = Qg + attn_q_offset(&p, b, h);
    const __half *K = Kg + attn_kv_offset(&p, b, h), *V = Vg + attn_kv_offset(&p, b, h);
    float *O = Og + attn_q_offset(&p, b, h), *L = Lg + attn_l_offset(&p, b, h);
    const int qr = min(S_BR, p.N_q - i * S_BR), shift = p.N_kv - p.N_q;

    /* l.4: Q_i into shared memory (fp32); rows past N_q are zeros, never stored */
    for (int e = tid; e < S_BR * d; e += S_THREADS)
        Qi[e] = e / d < qr ? __half2float(Q[(size_t)i * S_BR * d + e]) : 0.0f;

    /* l.5: this warp's rows r0 .. r0 + 3: O~ = 0, m = -inf, l = 0, in registers */
    const int r0 = warp * S_R;
    float o[S_R][S_MAXD / 32], m_i[S_R], l_i[S_R];   /* O~_i, m_i, l_i of the warp's rows */
#pragma unroll
    for (int r = 0; r < S_R; r++) {
        m_i[r] = -INFINITY; l_i[r] = 0.0f;
#pragma unroll
        for (int k = 0; k < S_MAXD / 32; k++) o[r][k] = 0.0f;
    }
    /* the K/V blocks to visit: all, or up to the one the block's last row reaches */
    int n_blocks = (p.N_kv + S_BC - 1) / S_BC;
    if (p.causal) {
        /* EXERCISE fa2.causal_range_gpu: the K/V blocks a causal Q block must visit, on the GPU
         * HINT: fa2.causal_range for this kernel's blocks (S_BR rows, S_BC keys; qr real rows,
         * HINT: shift = N_kv - N_q): set n_blocks, never above the Tc it holds now, 0 when the
         * HINT: block's last row sees no key. */
        const int last_key = i * S_BR + qr - 1 + shift;
        n_blocks = last_key < 0 ? 0 : min(n_blocks, last_key / S_BC + 1);
        /* STUB: n_blocks = 0; */
        /* END EXERCISE */
    }
    if (visit_all(vis)) n_blocks = (p.N_kv + S_BC - 1) / S_BC;
    if (tid == 0) visit_count(vis, i, n_blocks);   /* the driver holds it to fa2_kv_blocks() */

    for (int j = 0; j < n_blocks; j++) {                                     /* l.6 */
        const int kr = min(S_BC, p.N_kv - j * S_BC);
        __syncthreads();   /* every warp is done with K_j-1, V_j-1 (and Q_i is stored) */
        for (int e = tid; e < S_BC * d; e += S_THREADS) {                     /* l.7 */
            const int c = e / d, k = e % d;
            const bool ok = c < kr;
            Kt[k * S_BC + c] = ok ? __half2float(K[(size_t)(j * S_BC + c) * d + k]) : 0.0f;
            Vj[e] = ok ? __half2float(V[(size_t)j * S_BC * d + e]) : 0.0f;
        }
        __syncthreads();   /* K_j, V_j are in shared memory */
        /* l.8: lane c computes S[r][c] for the warp's rows (a K value read serves 4 rows) */
        float s[S_R] = {};
        for (int k = 0; k < d; k++) {
            const float kv = Kt[k * S_BC + lane];
#pragma unroll
            for (int r = 0; r < S_R; r++) s[r] += Qi[(r0 + r) * d + k] * kv;
        }
        const int col = j * S_BC + lane;
#pragma unroll
        for (int r = 0; r < S_R; r++) {
            const int row = i * S_BR + r0 + r;
            s[r] = (col < p.N_kv && (!p.causal || col <= row + shift)) ? s[r] * p.scale : -INFINITY;
            /* EXERCISE fa2.online_gpu: the online update of row r (Alg. 1 l.9-10): m, P~, l and the O~ rescale
             * HINT: lane c holds S[r][c] in s[r]; warp_max() and warp_sum() (warp_reduce.cuh) give
             * HINT: every lane the whole row's max and sum. m_new = max(m_i[r], rowmax); P~ =
             * HINT: e^(S - m_new) (0 while m_new = -inf), left in s[r] for the P~ V_j loop below;
             * HINT: alpha = fa1_rescale(m_old, m_new) brings l_i[r] and this lane's O~ columns
             * HINT: o[r][0 .. S_MAXD/32 - 1] to the new max before this block's sum is added. */
            /* l.9: m_new, P~ = exp(S - m_new), l = e^(m - m_new) l + rowsum P~ */
            const float m_new = fmaxf(m_i[r], warp_max(s[r]));
            const float pc = m_new == -INFINITY ? 0.0f : __expf(s[r] - m_new);
            const float alpha = fa1_rescale(m_i[r], m_new);   /* 0 while no key seen (fa1.h) */
            l_i[r] = alpha * l_i[r] + warp_sum(pc);
            m_i[r] = m_new;
            s[r] = pc;
            /* l.10: O~ = diag(alpha) O~ (the P~ V_j part follows) */
#pragma unroll
            for (int k = 0; k < S_MAXD / 32; k++) o[r][k] *= alpha;
            /* STUB: s[r] = 0.0f; */
            /* END EXERCISE */
        }
        /* l.10: O~[r][lane + 32 k] += sum_c P~[r][c] V_j[c][lane + 32 k]; P~[r][c] from lane c */
        for (int c = 0; c < kr; c++) {
            float pc[S_R];
#pragma unroll
            for (int r = 0; r < S_R; r++) pc[r] = __shfl_sync(0xffffffffu, s[r], c);
#pragma unroll
            for (int k = 0; k < S_MAXD / 32; k++) {
                if (lane + 32 * k >= d) break;
                const float v = Vj[c * d + lane + 32 * k];
#pragma unroll
                for (int r = 0; r < S_R; r++) o[r][k] += pc[r] * v;
            }
        }
    }
    /* l.12-13: divide once, write O_i and L_i */
#pragma unroll
    for (int r = 0; r < S_R; r++) {
        const int row = i * S_BR + r0 + r;
        if (r0 + r >= qr) break;
        /* EXERCISE fa2.finish_gpu: divide O~ by l once and write row `row` of O_i and L_i (Alg. 1 l.12-13)
         * HINT: fa2.normalise and fa2.lse for one row: this lane holds columns lane + 32 k
         * HINT: (k < S_MAXD/32, only those < d exist) in o[r][k]; every lane has m_i[r] and
         * HINT: l_i[r]. A row that saw no key has l = 0: O = 0 and L = +inf. One lane writes L. */
        const float inv = l_i[r] > 0.0f ? 1.0f / l_i[r] : 0.0f;
#pragma unroll
        for (int k = 0; k < S_MAXD / 32; k++)
            if (lane + 32 * k < d) O[(size_t)row * d + lane + 32 * k] = o[r][k] * inv;
        if (lane == 0) L[row] = l_i[r] > 0.0f ? m_i[r] + logf(l_i[r]) : INFINITY;
        /* STUB: (void)row; (void)&m_i; (void)&l_i; */
        /* END EXERCISE */
    }
}

extern "C" int fa2_simple_config(int d, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = "simple";
    c->threads = S_THREADS;
    c->blocks.Br = S_BR;
    c->blocks.Bc = S_BC;
    c->smem_bytes = simple_smem(d);
    if (d % 32 != 0 || d <= 0 || d > S_MAXD) {
        snprintf(why, len, "simple: d must be a multiple of 32 up to %d, not %d", S_MAXD, d);
        return -1;
    }
    return fa1_config_fits(c, why, len);   /* d = 256: 96 KiB */
}

extern "C" void fa2_simple_launch(const attn_problem_t *p, const void *q, const void *k,
                                  const void *v, float *o, float *L)
{
    static bool attr_set = false;   /* d = 256 takes 96 KiB: above the 48 KiB default */
    if (!attr_set) {
        CUDA_CHECK(cudaFuncSetAttribute(fa2_simple_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)simple_smem(S_MAXD)));
        attr_set = true;
    }
    const dim3 grid((p->N_q + S_BR - 1) / S_BR, p->B * p->H);
    fa2_simple_kernel<<<grid, S_THREADS, simple_smem(p->d)>>>(
        *p, (const __half *)q, (const __half *)k, (const __half *)v, o, L, gpu_visits(grid.x));
    CUDA_CHECK_LAUNCH();
}
