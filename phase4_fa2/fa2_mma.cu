/* fa2_mma.cu - FlashAttention-2's forward on the tensor cores (common/mma.cuh).
 *
 *   mma   grid (num_m_blocks, B x H): a thread block per Q block of Br = 64 rows, 4 warps,
 *         each warp owns 16 query rows for the whole K/V loop (split-Q); Bc = 128 keys
 *         (d <= 64) or 64 (d = 128). Q_i in registers, K_j and V_j double-buffered in
 *         shared memory with cp.async, S and P in registers, O~ unnormalised in registers
 *         and divided by l once; causal blocks past the diagonal skipped.
 *                                                   build/phase4 --kernel mma [--causal]
 *   The ablation ladder (build/phase4 prints it) runs the same source with compile-time
 *   switches (template parameters), fa2_variant_t in fa2.h:
 *   perstep    O normalised at every step as in FA1 (2 multiplies per O element, a divide)
 *   deferred   + O~ unnormalised, one multiply per element per step, one divide at the end
 *   mma        + causal: K/V blocks past the diagonal skipped, the mask on diagonal ones only
 *   grid-bh    mma with the grid (B x H, num_m_blocks): the Q blocks of one head are no
 *              longer neighbours in launch order
 *
 * What FA1's kernel (phase3_fa1/fa1_mma.cu) did differently, and this one does not do:
 * its warps split the K/V block (split-K), so every step it wrote partial O, m, l to
 * shared memory and combined them behind two barriers; and O, l, m went to HBM and back
 * once per K/V block. Here a warp's 16 rows are entirely its own: the row max and sum
 * need only the 4 lanes of a quad (two shuffles), and the only barrier per K/V block is
 * the one that hands the next K/V buffer over.
 *
 * Register fragments (mma.cuh): a thread holds rows g and g + 8 of its warp's 16 (g =
 * lane / 4), two adjacent columns 2t, 2t + 1 (t = lane % 4) of every 8-wide tile. Its
 * l is a partial sum over its own columns; the quad's 4 partials are added once at the end
 * (they were all rescaled by the same factors).
 */
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include "cuda_check.cuh"
#include "mma.cuh"
#include "fa2.h"

#define WARPS 4
#define THREADS (32 * WARPS)
#define BR (16 * WARPS)

template <int D, int BC>
struct Cfg {
    static constexpr int LDH = D + 8;   /* halves per smem row: +16 bytes, so the 8 rows of an
                                           ldmatrix tile start in different banks */
    static constexpr size_t Q_OFF = 0;
    static constexpr size_t K_OFF = Q_OFF + sizeof(__half) * BR * LDH;
    static constexpr size_t V_OFF = K_OFF + 2 * sizeof(__half) * BC * LDH;   /* 2 stages */
    static constexpr size_t SMEM = V_OFF + 2 * sizeof(__half) * BC * LDH;
};

/* 2^x on the SFU (ex2.approx: 2 ulp; 2^-inf = 0). */
__device__ __forceinline__ float ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* rows x D halves from src (row stride D) into dst (row stride LDH), 16 bytes per copy;
 * rows at or past `valid` are zero-filled (tails). */
template <int D, int LDH>
__device__ __forceinline__ void load_tile(__half *dst, const __half *src, int rows, int valid)
{
    for (int c = threadIdx.x; c < rows * (D / 8); c += THREADS) {
        const int r = c / (D / 8), k = (c % (D / 8)) * 8;
        const bool ok = r < valid;
        cp_async16(dst + r * LDH + k, ok ? src + (size_t)r * D + k : src, ok);
    }
}

/* DEFER: O~ unnormalised, divided at the end (else normalised every step, as in FA1).
 * SKIP: causal blocks past the diagonal skipped and only diagonal/tail blocks masked
 * (else every block visited and, with a mask, every element masked).
 * MFIRST: blockIdx.x is the Q block (grid (num_m_blocks, B x H)); else the head. */
template <int D, int BC, bool DEFER, bool SKIP, bool MFIRST>
__global__ void __launch_bounds__(THREADS, 2)
fa2_mma_kernel(attn_problem_t p, const __half *Qg, const __half *Kg, const __half *Vg,
               float *Og, float *Lg)
{
    using C = Cfg<D, BC>;
    constexpr int LDH = C::LDH;
    extern __shared__ __align__(16) unsigned char smem[];
    __half *Qs = (__half *)(smem + C::Q_OFF);
    __half *Ks = (__half *)(smem + C::K_OFF), *Vs = (__half *)(smem + C::V_OFF);

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const int Tr = (p.N_q + BR - 1) / BR, Tc = (p.N_kv + BC - 1) / BC;
    const int mb = MFIRST ? blockIdx.x : blockIdx.y, bh = MFIRST ? blockIdx.y : blockIdx.x;
    /* causal: the longest Q blocks (the last ones) first, so the short ones fill the tail */
    const int i = p.causal ? Tr - 1 - mb : mb;
    const int b = bh / p.H, h = bh % p.H;
    const __half *Q = Qg + attn_q_offset(&p, b, h) + (size_t)i * BR * D;
    const __half *K = Kg + attn_kv_offset(&p, b, h), *V = Vg + attn_kv_offset(&p, b, h);
    float *O = Og + attn_q_offset(&p, b, h), *L = Lg + attn_l_offset(&p, b, h);
    const int q0 = i * BR, shift = p.N_kv - p.N_q;   /* row r sees keys <= r + shift */
    const float sl2 = p.scale * 1.4426950408889634f; /* exp(scale x) = 2^(sl2 x)      */

    /* the K/V blocks this Q block visits (fa2_kv_blocks() in fa2_cpu.c) */
    int n_blocks = Tc;
    if (SKIP && p.causal) {
        const long last_key = (long)min(p.N_q, q0 + BR) - 1 + shift;
        n_blocks = last_key < 0 ? 0 : (int)min((long)Tc, last_key / BC + 1);
    }
    const int row_a = q0 + warp * 16 + g, row_b = row_a + 8;   /* this thread's two rows */
    if (n_blocks == 0) {   /* every row fully masked: O = 0, L = +inf (common/problem.h) */
        for (int e = threadIdx.x; e < BR * D; e += THREADS)
            if (q0 + e / D < p.N_q) O[(size_t)q0 * D + e] = 0.0f;
        for (int r = threadIdx.x; r < BR; r += THREADS)
            if (q0 + r < p.N_q) L[q0 + r] = INFINITY;
        return;
    }

    /* Alg. 1 l.4: Q_i, and the first K/V block, into shared memory */
    load_tile<D, LDH>(Qs, Q, BR, p.N_q - q0);
    load_tile<D, LDH>(Ks, K, BC, p.N_kv);
    load_tile<D, LDH>(Vs, V, BC, p.N_kv);
    cp_async_commit();

    uint32_t qf[D / 16][4];               /* Q_i: this warp's 16 rows as A fragments */
    float o[D / 8][4];                    /* O~_i: 16 rows x D, fp32 accumulators    */
    float m[2] = { -INFINITY, -INFINITY }, l[2] = { 0.0f, 0.0f };   /* raw-score max, sum */
#pragma unroll
    for (int n = 0; n < D / 8; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;

    for (int j = 0; j < n_blocks; j++) {                                     /* l.6 */
        const int st = j % 2;
        cp_async_wait<0>();
        __syncthreads();   /* K_j, V_j (and Q_i) landed and are visible to every warp; every
                              warp is done with the other stage (block j - 1) */
        if (j == 0) {
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++)
                ldmatrix_x4(qf[kk], Qs + (warp * 16 + lane % 16) * LDH + kk * 16 + (lane / 16) * 8);
        }
        if (j + 1 < n_blocks) {   /* l.7: block j + 1 streams in while this one is computed */
            load_tile<D, LDH>(Ks + (1 - st) * BC * LDH, K + (size_t)(j + 1) * BC * D, BC, p.N_kv - (j + 1) * BC);
            load_tile<D, LDH>(Vs + (1 - st) * BC * LDH, V + (size_t)(j + 1) * BC * D, BC, p.N_kv - (j + 1) * BC);
            cp_async_commit();
        }
        const __half *Kj = Ks + st * BC * LDH, *Vj = Vs + st * BC * LDH;

        /* l.8: S_ij = Q_i K_j^T, 16 rows x BC keys, in registers (BC/8 n-tiles) */
        float s[BC / 8][4];
#pragma unroll
        for (int n = 0; n < BC / 8; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
            for (int n2 = 0; n2 < BC / 16; n2++) {   /* two n-tiles (16 keys) per ldmatrix */
                uint32_t bf[4];
                ldmatrix_x4(bf, Kj + (n2 * 16 + (lane / 16) * 8 + lane % 8) * LDH + kk * 16 + (lane / 8 % 2) * 8);
                mma_16816(s[2 * n2], qf[kk], bf);
                mma_16816(s[2 * n2 + 1], qf[kk], bf + 2);
            }
        /* the mask: with SKIP only on blocks that cross the diagonal or N_kv */
        const long last_key = (long)(j + 1) * BC - 1;
        const bool mask = last_key >= p.N_kv || (p.causal && (!SKIP || last_key > (long)q0 + shift));
        if (mask) {
#pragma unroll
            for (int n = 0; n < BC / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int row = e < 2 ? row_a : row_b, col = j * BC + n * 8 + 2 * t + e % 2;
                    if (col >= p.N_kv || (p.causal && col > row + shift)) s[n][e] = -INFINITY;
                }
        }
        /* l.9: m_new = max(m, rowmax S) over the quad; P~ = 2^(sl2 S - sl2 m_new) */
        float alpha[2], msc[2], rs[2] = { 0.0f, 0.0f };
#pragma unroll
        for (int x = 0; x < 2; x++) {
            float mx = m[x];
#pragma unroll
            for (int n = 0; n < BC / 8; n++) mx = fmaxf(mx, fmaxf(s[n][2 * x], s[n][2 * x + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            /* e^(scale (m_old - m_new)); a row that has seen nothing keeps O~ = 0, l = 0 */
            alpha[x] = mx == -INFINITY ? 1.0f : ex2((m[x] - mx) * sl2);
            msc[x] = mx == -INFINITY ? 0.0f : mx * sl2;
            m[x] = mx;
        }
#pragma unroll
        for (int n = 0; n < BC / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                s[n][e] = ex2(fmaf(s[n][e], sl2, -msc[e / 2]));
                rs[e / 2] += s[n][e];
            }
        float post[2] = { 1.0f, 1.0f };   /* PERSTEP: the divide by the new l after P~ V */
#pragma unroll
        for (int x = 0; x < 2; x++) {
            if (DEFER) {
                /* l.9-10: l and O~ brought to the new max; no division (it comes at l.12) */
                l[x] = alpha[x] * l[x] + rs[x];   /* this thread's columns only */
            } else {
                /* FA1's way: O kept normalised. O = (l_old alpha O + P~ V) / l_new needs
                 * the whole row's sum every step (two more shuffles) and a divide */
                rs[x] += __shfl_xor_sync(0xffffffffu, rs[x], 1);
                rs[x] += __shfl_xor_sync(0xffffffffu, rs[x], 2);
                const float l_new = alpha[x] * l[x] + rs[x];
                alpha[x] *= l[x];                                  /* un-normalise O ... */
                post[x] = l_new > 0.0f ? 1.0f / l_new : 0.0f;      /* ... and re-normalise */
                l[x] = l_new;
            }
        }
#pragma unroll
        for (int n = 0; n < D / 8; n++) {
            o[n][0] *= alpha[0]; o[n][1] *= alpha[0];
            o[n][2] *= alpha[1]; o[n][3] *= alpha[1];
        }
        /* l.10: O~ += P~ V_j; P~ goes from the S accumulators straight into A fragments
         * (mma.cuh), V_j through ldmatrix.trans */
#pragma unroll
        for (int kk = 0; kk < BC / 16; kk++) {
            const uint32_t a[4] = { pack_half2(s[2 * kk][0], s[2 * kk][1]), pack_half2(s[2 * kk][2], s[2 * kk][3]),
                                    pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3]) };
#pragma unroll
            for (int n2 = 0; n2 < D / 16; n2++) {
                uint32_t bf[4];
                ldmatrix_x4_trans(bf, Vj + (kk * 16 + (lane / 8 % 2) * 8 + lane % 8) * LDH + n2 * 16 + (lane / 16) * 8);
                mma_16816(o[2 * n2], a, bf);
                mma_16816(o[2 * n2 + 1], a, bf + 2);
            }
        }
        if (!DEFER) {
#pragma unroll
            for (int n = 0; n < D / 8; n++) {
                o[n][0] *= post[0]; o[n][1] *= post[0];
                o[n][2] *= post[1]; o[n][3] *= post[1];
            }
        }
    }

    /* l.12-13: O_i = O~_i / l_i once; L_i = m_i + log(l_i) (+inf for a row that saw nothing) */
    float inv[2];
#pragma unroll
    for (int x = 0; x < 2; x++) {
        if (DEFER) {   /* the quad's partial sums, added once */
            l[x] += __shfl_xor_sync(0xffffffffu, l[x], 1);
            l[x] += __shfl_xor_sync(0xffffffffu, l[x], 2);
        }
        inv[x] = DEFER ? (l[x] > 0.0f ? 1.0f / l[x] : 0.0f) : 1.0f;
    }
#pragma unroll
    for (int n = 0; n < D / 8; n++) {
        if (row_a < p.N_q)
            *reinterpret_cast<float2 *>(O + (size_t)row_a * D + n * 8 + 2 * t) = make_float2(o[n][0] * inv[0], o[n][1] * inv[0]);
        if (row_b < p.N_q)
            *reinterpret_cast<float2 *>(O + (size_t)row_b * D + n * 8 + 2 * t) = make_float2(o[n][2] * inv[1], o[n][3] * inv[1]);
    }
    if (t == 0) {
        if (row_a < p.N_q) L[row_a] = l[0] > 0.0f ? m[0] * p.scale + logf(l[0]) : INFINITY;
        if (row_b < p.N_q) L[row_b] = l[1] > 0.0f ? m[1] * p.scale + logf(l[1]) : INFINITY;
    }
}

template <int D, int BC, bool DEFER, bool SKIP, bool MFIRST>
static void launch(const attn_problem_t *p, const void *q, const void *k, const void *v, float *o, float *L)
{
    using C = Cfg<D, BC>;
    static bool attr_set = false;   /* more than 48 KiB of shared memory needs an opt-in */
    if (!attr_set) {
        CUDA_CHECK(cudaFuncSetAttribute(fa2_mma_kernel<D, BC, DEFER, SKIP, MFIRST>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)C::SMEM));
        attr_set = true;
    }
    const int Tr = (p->N_q + BR - 1) / BR, BH = p->B * p->H;
    const dim3 grid = MFIRST ? dim3(Tr, BH) : dim3(BH, Tr);
    fa2_mma_kernel<D, BC, DEFER, SKIP, MFIRST><<<grid, THREADS, C::SMEM>>>(
        *p, (const __half *)q, (const __half *)k, (const __half *)v, o, L);
    CUDA_CHECK_LAUNCH();
}

template <int D, int BC>
static void launch_variant(const attn_problem_t *p, fa2_variant_t var, const void *q, const void *k,
                           const void *v, float *o, float *L)
{
    switch (var) {
    case FA2_PERSTEP:  launch<D, BC, false, false, true>(p, q, k, v, o, L); break;
    case FA2_DEFERRED: launch<D, BC, true, false, true>(p, q, k, v, o, L); break;
    case FA2_FULL:     launch<D, BC, true, true, true>(p, q, k, v, o, L); break;
    case FA2_GRID_BH:  launch<D, BC, true, true, false>(p, q, k, v, o, L); break;
    }
}

extern "C" int fa2_mma_config(int d, fa2_gpu_config_t *c, char *why, size_t len)
{
    c->name = "mma";
    if (!fa2_mma_supports(d)) {
        snprintf(why, len, "kernel mma is built for d = 32, 64 and 128, not d = %d (use --kernel simple)", d);
        return -1;
    }
    c->blocks = fa2_mma_blocks(d);
    c->threads = THREADS;
    c->smem_bytes = d == 32 ? Cfg<32, 128>::SMEM : d == 64 ? Cfg<64, 128>::SMEM : Cfg<128, 64>::SMEM;
    return 0;
}

extern "C" void fa2_mma_launch(const attn_problem_t *p, fa2_variant_t var, const void *q,
                               const void *k, const void *v, float *o, float *L)
{
    switch (p->d) {   /* the blocks of fa2_mma_blocks() */
    case 32:  launch<32, 128, true, true, true>(p, q, k, v, o, L); break;   /* no ladder at d = 32 */
    case 64:  launch_variant<64, 128>(p, var, q, k, v, o, L); break;
    case 128: launch_variant<128, 64>(p, var, q, k, v, o, L); break;
    default:  break;   /* fa2_mma_config() said no; the driver never gets here */
    }
}
