/* fa1_simple.cu - FlashAttention-1 (Alg. 1) on the GPU, written to be read next to
 * fa1_cpu.c: same loops, same tiles, same HBM round trips, fp32 math, no tensor cores.
 *
 *   simple   one thread block per (batch, head), KV-outer loop j, inner loop i;
 *            tiles in shared memory with Br, Bc from fa1_block_sizes(48 KiB, d);
 *            a warp per 4 query rows for l.9-13.   build/phase3 --kernel simple
 *
 * The shared memory holds exactly the CPU model's tiles (fa1_sram_bytes), so the kernel's
 * M is the 48 KiB it asks for and its HBM traffic is fa1_hbm_bytes(p, Bc) to the byte.
 * One difference in layout, not in size: K_j is stored transposed (d x Bc) so that the 32
 * lanes of a warp, each computing one score S_ij[r][c], read 32 consecutive floats.
 */
#include <cuda_fp16.h>
#include <math.h>
#include "cuda_check.cuh"
#include "fa1.h"
#include "warp_reduce.cuh"

#define SIMPLE_THREADS 512
#define R 4             /* query rows a warp works on at once */

__global__ void __launch_bounds__(SIMPLE_THREADS)
fa1_simple_kernel(attn_problem_t p, const __half *Qg, const __half *Kg, const __half *Vg,
                  float *Og, float *lg, float *mg, int Br, int Bc)
{
    extern __shared__ float sram[];
    const int d = p.d, tid = threadIdx.x, nt = blockDim.x;
    const int lane = tid % 32, warp = tid / 32, nwarps = nt / 32;
    /* the tiles of fa1_cpu(), in its order: Q_i, O_i, K_j^T, V_j, S_ij, l_i, m_i */
    float *Qi = sram, *Oi = Qi + Br * d, *Kt = Oi + Br * d, *Vj = Kt + Bc * d;
    float *S = Vj + Bc * d, *li = S + Br * Bc, *mi = li + Br;

    /* FA1's parallelism: this block owns head (b, h) from start to end */
    const int b = blockIdx.x / p.H, h = blockIdx.x % p.H;
    const __half *Q = Qg + attn_q_offset(&p, b, h);
    const __half *K = Kg + attn_kv_offset(&p, b, h), *V = Vg + attn_kv_offset(&p, b, h);
    float *O = Og + attn_q_offset(&p, b, h), *l = lg + attn_l_offset(&p, b, h), *m = mg + attn_l_offset(&p, b, h);
    const int Tr = (p.N_q + Br - 1) / Br, Tc = (p.N_kv + Bc - 1) / Bc;   /* l.3-4 */

    /* l.2: O = 0, l = 0, m = -inf in HBM */
    for (size_t e = tid; e < (size_t)p.N_q * d; e += nt) O[e] = 0.0f;
    for (int r = tid; r < p.N_q; r += nt) { l[r] = 0.0f; m[r] = -INFINITY; }
    __syncthreads();   /* the block reads back what it wrote (l.8): init before first load */

    for (int j = 0; j < Tc; j++) {                                       /* l.5 */
        const int kr = min(Bc, p.N_kv - j * Bc);                          /* tail */
        /* l.6: load K_j (transposed) and V_j; fp16 in HBM, fp32 in SRAM */
        for (int e = tid; e < kr * d; e += nt) {
            int c = e / d, k = e % d;
            Kt[k * Bc + c] = __half2float(K[(size_t)(j * Bc + c) * d + k]);
            Vj[e] = __half2float(V[(size_t)j * Bc * d + e]);
        }
        for (int i = 0; i < Tr; i++) {                                   /* l.7 */
            const int qr = min(Br, p.N_q - i * Br);
            /* l.8: load Q_i, O_i, l_i, m_i */
            for (int e = tid; e < qr * d; e += nt) {
                Qi[e] = __half2float(Q[(size_t)i * Br * d + e]);
                Oi[e] = O[(size_t)i * Br * d + e];
            }
            for (int r = tid; r < qr; r += nt) { li[r] = l[i * Br + r]; mi[r] = m[i * Br + r]; }
            __syncthreads();   /* Q_i, O_i, l_i, m_i (and K_j, V_j at i = 0) are in SRAM */

            /* l.9-13. A warp takes R query rows at a time (rows are independent): every K_j
             * or V_j value it reads from shared memory then serves R rows, and each lane
             * has R sums in flight instead of one long chain. */
            for (int r0 = warp * R; r0 < qr; r0 += nwarps * R) {
                int rows[R];   /* rows past qr repeat the last one: computed, never stored */
#pragma unroll
                for (int rr = 0; rr < R; rr++) rows[rr] = min(r0 + rr, qr - 1);
                /* l.9: S_ij[r][c] = scale q_r . k_c, lane owns columns lane, lane + 32, ... */
                for (int c = lane; c < kr; c += 32) {
                    float acc[R] = {};
                    for (int k = 0; k < d; k += 4) {
                        const float k0 = Kt[k * Bc + c], k1 = Kt[(k + 1) * Bc + c];
                        const float k2 = Kt[(k + 2) * Bc + c], k3 = Kt[(k + 3) * Bc + c];
#pragma unroll
                        for (int rr = 0; rr < R; rr++) {
                            const float4 q = *reinterpret_cast<const float4 *>(Qi + rows[rr] * d + k);
                            acc[rr] += q.x * k0 + q.y * k1 + q.z * k2 + q.w * k3;
                        }
                    }
#pragma unroll
                    for (int rr = 0; rr < R; rr++)
                        if (r0 + rr < qr)
                            S[(r0 + rr) * Bc + c] = attn_visible(&p, i * Br + r0 + rr, j * Bc + c) ? acc[rr] * p.scale : -INFINITY;
                }
                float m_new[R], l_new[R], a[R], bb[R], inv[R];
#pragma unroll
                for (int rr = 0; rr < R; rr++) {
                    a[rr] = bb[rr] = inv[rr] = m_new[rr] = l_new[rr] = 0.0f;
                    if (r0 + rr >= qr) continue;   /* the same for the whole warp */
                    float *s = S + (r0 + rr) * Bc;
                    /* l.10: m~ = rowmax(S), P~ = exp(S - m~), l~ = rowsum(P~); each lane
                     * touches only its own columns here, so no sync before */
                    float m_t = -INFINITY;
                    for (int c = lane; c < kr; c += 32) m_t = fmaxf(m_t, s[c]);
                    m_t = warp_max(m_t);
                    float l_t = 0.0f;
                    for (int c = lane; c < kr; c += 32) {
                        s[c] = m_t == -INFINITY ? 0.0f : __expf(s[c] - m_t);
                        l_t += s[c];
                    }
                    l_t = warp_sum(l_t);
                    const float m_i = mi[r0 + rr], l_i = li[r0 + rr];
                    /* TODO EXERCISE fa1.ml_gpu: the new running max and sum (Alg. 1 l.11), on the GPU
                     * HINT: as in fa1_cpu.c; every lane holds the row's m_t and l_t after the shuffles. */
                    m_new[rr] = m_i; l_new[rr] = l_i;
                    /* END EXERCISE fa1.ml_gpu */
                    /* the factors of l.12 */
                    a[rr] = fa1_rescale(m_i, m_new[rr]) * l_i;
                    bb[rr] = fa1_rescale(m_t, m_new[rr]);
                    inv[rr] = l_new[rr] > 0.0f ? 1.0f / l_new[rr] : 0.0f;
                }
                __syncwarp();  /* the P~ rows are complete before each lane reads all of them */
                /* l.12: O_i <- diag(l_new)^-1 (diag(l_i) e^(m_i - m_new) O_i + e^(m~ - m_new) P~ V_j),
                 * lane owns output columns lane, lane + 32, ... */
                for (int k = lane; k < d; k += 32) {
                    float pv[R] = {};
                    for (int c = 0; c < kr; c++) {
                        const float v = Vj[c * d + k];
#pragma unroll
                        for (int rr = 0; rr < R; rr++) pv[rr] += S[rows[rr] * Bc + c] * v;
                    }
#pragma unroll
                    for (int rr = 0; rr < R; rr++) {
                        if (r0 + rr >= qr) continue;
                        /* TODO EXERCISE fa1.rescale_gpu: the O_i update of Alg. 1 l.12, on the GPU
                         * HINT: the same line as in fa1_cpu.c for row r0 + rr of the tile Oi:
                         * HINT: undo the old normalisation (a), weigh pv (bb), divide by l_new (inv). */
                        (void)a[rr]; (void)bb[rr]; (void)pv[rr]; (void)inv[rr];
                        /* END EXERCISE fa1.rescale_gpu */
                    }
                }
                __syncwarp();  /* every lane is done with m_i, l_i of these rows before lane 0 overwrites them */
                if (lane == 0)                                                   /* l.13 */
                    for (int rr = 0; rr < R && r0 + rr < qr; rr++) { li[r0 + rr] = l_new[rr]; mi[r0 + rr] = m_new[rr]; }
            }
            __syncthreads();   /* all rows of O_i, l_i, m_i updated before they are written */
            /* l.12-13: write O_i, l_i, m_i back to HBM */
            for (int e = tid; e < qr * d; e += nt) O[(size_t)i * Br * d + e] = Oi[e];
            for (int r = tid; r < qr; r += nt) { l[i * Br + r] = li[r]; m[i * Br + r] = mi[r]; }
            __syncthreads();   /* the tiles are written out before the next step reloads them */
        }
    }
}

/* Blocks from the 48 KiB the kernel asks for (fa1_block_sizes()); -1 when d's tiles do
 * not fit in it. No device query: the launcher calls this too. */
static int simple_blocks(int d, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = "simple";
    c->threads = SIMPLE_THREADS;
    if (fa1_block_sizes(FA1_SIMPLE_SRAM, d, &c->blocks) != 0) {
        snprintf(why, len, "simple: M = %u bytes cannot hold the tiles of d = %d", FA1_SIMPLE_SRAM, d);
        return -1;
    }
    c->smem_bytes = fa1_sram_bytes(d, c->blocks);
    return 0;
}

extern "C" int fa1_simple_config(int d, gpu_kernel_config_t *c, char *why, size_t len)
{
    if (simple_blocks(d, c, why, len) != 0) return -1;
    return fa1_config_fits(c, why, len);   /* 48 KiB: every device, but asked all the same */
}

extern "C" void fa1_simple_launch(const attn_problem_t *p, const void *q, const void *k,
                                  const void *v, float *o, float *l, float *m)
{
    gpu_kernel_config_t c;
    char why[128];
    if (simple_blocks(p->d, &c, why, sizeof why) != 0) return;   /* fa1_simple_config() said -1 */
    fa1_simple_kernel<<<p->B * p->H, c.threads, c.smem_bytes>>>(
        *p, (const __half *)q, (const __half *)k, (const __half *)v, o, l, m, c.blocks.Br, c.blocks.Bc);
    CUDA_CHECK_LAUNCH();
}
