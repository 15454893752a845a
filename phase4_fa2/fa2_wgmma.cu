/* fa2_wgmma.cu - FlashAttention-2's forward on Hopper's warpgroup MMA (common/wgmma.cuh):
 * the first step from mma.sync toward FlashAttention-3. The algorithm is fa2_mma.cu's (Q
 * blocks outer, K/V inner, O~ unnormalised, L written, causal blocks skipped); what
 * changes is who does the products:
 *
 *   S = Q_i K_j^T    one wgmma m64n64k16 per k16 slice of d, Q_i and K_j read by the
 *                    tensor cores from shared memory (no ldmatrix, no A/B registers)
 *   O~ += P~ V_j     P~ from the S accumulators straight into A registers (wgmma's
 *                    accumulator layout is mma.sync's, warp by warp), V_j from shared
 *                    memory, read transposed (it is stored key-major, d contiguous)
 *
 *                    build/phase4 --kernel wgmma [--causal]     (sm_90a: H100, H200)
 *
 * One warpgroup (4 warps, 128 threads) per 64-row Q block; warp w owns rows 16w .. 16w+15
 * of S and O, as in fa2-mma. K/V blocks of 64 keys, double-buffered with cp.async (the
 * loads of chapter 4; the TMA copy engine is the next step). Tiles are stored with the
 * 128-byte swizzle the descriptors name (wgmma.cuh); a d = 128 tile is two 64-column
 * halves ("atoms" of 64 rows x 128 bytes), one after the other:
 *
 *   Q_i:  [atom d 0..63: 8 KiB][atom d 64..127: 8 KiB]
 *   K_j:  stage 0 [atoms], stage 1 [atoms]      V_j: the same
 *
 * Each wgmma is waited for before its result is used (wgmma_wait<0>): no overlap of the
 * softmax with the products yet. That is what warp specialisation and pingpong add.
 */
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include "cuda_check.cuh"
#include "mma.cuh"
#include "wgmma.cuh"
#include "fa2.h"

#define WG_THREADS 128
#define WG_BR 64
#define WG_BC 64
#define ATOM_BYTES (64 * 128)   /* 64 rows x 64 fp16: one swizzled 64-column half */

template <int D>
struct WgCfg {
    static constexpr int ATOMS = D / 64;                               /* per 64-row tile */
    static constexpr size_t TILE = (size_t)ATOMS * ATOM_BYTES;
    static constexpr size_t Q_OFF = 0, K_OFF = TILE, V_OFF = 3 * TILE;  /* K, V: 2 stages */
    static constexpr size_t SMEM = 5 * TILE + 1024;                    /* + room to align */
};

#if FA_HAVE_WGMMA
/* a 64-row tile of D fp16 columns, global -> swizzled shared (rows at or past valid zero) */
template <int D>
__device__ __forceinline__ void load_tile_sw(unsigned char *dst, const __half *src, int valid)
{
    constexpr int CH = D / 8;   /* 16-byte chunks a row */
    for (int c = threadIdx.x; c < 64 * CH; c += WG_THREADS) {
        const int r = c / CH, ch = c % CH, atom = ch / 8;
        const bool ok = r < valid;
        cp_async16(dst + atom * ATOM_BYTES + sw128_offset(r, (ch % 8) * 8), ok ? src + (size_t)r * D + ch * 8 : src, ok);
    }
}
#endif

/* SKIP: causal K/V blocks past the diagonal skipped, the mask only where needed. */
template <int D, bool SKIP>
__global__ void __launch_bounds__(WG_THREADS)
fa2_wgmma_kernel(attn_problem_t p, const __half *Qg, const __half *Kg, const __half *Vg, float *Og, float *Lg)
{
#if FA_HAVE_WGMMA
    using C = WgCfg<D>;
    extern __shared__ unsigned char smem_raw[];
    /* the 128-byte swizzle is applied to address bits 4-9: atoms must be 1024-aligned */
    unsigned char *smem = (unsigned char *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    unsigned char *Qs = smem + C::Q_OFF, *Ks = smem + C::K_OFF, *Vs = smem + C::V_OFF;

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const int Tr = (p.N_q + WG_BR - 1) / WG_BR, Tc = (p.N_kv + WG_BC - 1) / WG_BC;
    const int i = p.causal ? Tr - 1 - (int)blockIdx.x : (int)blockIdx.x;   /* longest first */
    const int b = blockIdx.y / p.H, h = blockIdx.y % p.H;
    const __half *Q = Qg + attn_q_offset(&p, b, h) + (size_t)i * WG_BR * D;
    const __half *K = Kg + attn_kv_offset(&p, b, h), *V = Vg + attn_kv_offset(&p, b, h);
    float *O = Og + attn_q_offset(&p, b, h), *L = Lg + attn_l_offset(&p, b, h);
    const int i0 = i * WG_BR, shift = p.N_kv - p.N_q;
    const float sl2 = p.scale * 1.4426950408889634f;

    int n_blocks = Tc;   /* the causal range, as fa2-mma's */
    if (SKIP && p.causal) {
        const long last_key = (long)min(p.N_q, i0 + WG_BR) - 1 + shift;
        n_blocks = last_key < 0 ? 0 : (int)min((long)Tc, last_key / WG_BC + 1);
    }
    const int row0 = i0 + warp * 16 + g;   /* this thread's rows: row0, row0 + 8 */
    if (n_blocks == 0) {
        for (int e = threadIdx.x; e < WG_BR * D; e += WG_THREADS)
            if (i0 + e / D < p.N_q) O[(size_t)i0 * D + e] = 0.0f;
        for (int r = threadIdx.x; r < WG_BR; r += WG_THREADS)
            if (i0 + r < p.N_q) L[i0 + r] = INFINITY;
        return;
    }

    load_tile_sw<D>(Qs, Q, p.N_q - i0);
    load_tile_sw<D>(Ks, K, p.N_kv);
    load_tile_sw<D>(Vs, V, p.N_kv);
    cp_async_commit();

    float o[C::ATOMS][32];   /* O~: 64 rows x D, one 64-column half per wgmma accumulator */
    float m_i[2] = {-INFINITY, -INFINITY}, l_i[2] = {0.0f, 0.0f};
#pragma unroll
    for (int a = 0; a < C::ATOMS; a++)
#pragma unroll
        for (int e = 0; e < 32; e++) o[a][e] = 0.0f;

    for (int j = 0; j < n_blocks; j++) {
        const int st = j % 2;
        cp_async_wait<0>();
        fence_proxy_async();   /* the tiles were written by ordinary (cp.async) copies */
        __syncthreads();
        if (j + 1 < n_blocks) {   /* block j + 1 streams in while this one is computed */
            load_tile_sw<D>(Ks + (1 - st) * C::TILE, K + (size_t)(j + 1) * WG_BC * D, p.N_kv - (j + 1) * WG_BC);
            load_tile_sw<D>(Vs + (1 - st) * C::TILE, V + (size_t)(j + 1) * WG_BC * D, p.N_kv - (j + 1) * WG_BC);
            cp_async_commit();
        }
        unsigned char *Kj = Ks + st * C::TILE, *Vj = Vs + st * C::TILE;

        /* S = Q_i K_j^T: d / 16 wgmma's, each a k16 slice (32 bytes further in its atom) */
        float s[32];
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            const uint64_t dq = wgmma_desc_sw128(Qs + (kk / 4) * ATOM_BYTES, 16, 1024) + 2 * (kk % 4);
            const uint64_t dk = wgmma_desc_sw128(Kj + (kk / 4) * ATOM_BYTES, 16, 1024) + 2 * (kk % 4);
            wgmma_m64n64k16_ss<0>(s, dq, dk, kk > 0);
        }
        wgmma_commit();
        wgmma_wait<0>();

        /* the mask, on the blocks that cross the diagonal or N_kv; s[4 n8 + e] is row
         * row0 + 8 (e / 2), key j Bc + 8 n8 + 2 t + e % 2 (wgmma.cuh's picture) */
        const long last_key = (long)(j + 1) * WG_BC - 1;
        if (last_key >= p.N_kv || (p.causal && (!SKIP || last_key > (long)i0 + shift))) {
#pragma unroll
            for (int e = 0; e < 32; e++) {
                const int row = row0 + 8 * ((e % 4) / 2), col = j * WG_BC + (e / 4) * 8 + 2 * t + e % 2;
                if (col >= p.N_kv || (p.causal && col > row + shift)) s[e] = -INFINITY;
            }
        }
        /* the online softmax (chapter 4's), for rows g and g + 8 of the warp: a row's 64 keys
         * sit in the 4 lanes of a quad, 16 each */
        float alpha[2];
#pragma unroll
        for (int x = 0; x < 2; x++) {
            float row_max = m_i[x];
#pragma unroll
            for (int n8 = 0; n8 < WG_BC / 8; n8++) row_max = fmaxf(row_max, fmaxf(s[4 * n8 + 2 * x], s[4 * n8 + 2 * x + 1]));
#pragma unroll
            for (int quad_lane = 1; quad_lane < 4; quad_lane <<= 1)
                row_max = fmaxf(row_max, __shfl_xor_sync(0xffffffffu, row_max, quad_lane));
            const bool no_key = row_max == -INFINITY;   /* the row has seen no key yet */
            alpha[x] = no_key ? 0.0f : exp2f(sl2 * (m_i[x] - row_max));
            const float max_scaled = no_key ? 0.0f : sl2 * row_max;
            m_i[x] = row_max;
            float part = 0.0f;   /* this thread's share of the row sum */
#pragma unroll
            for (int n8 = 0; n8 < WG_BC / 8; n8++)
#pragma unroll
                for (int c = 0; c < 2; c++) {
                    float &v = s[4 * n8 + 2 * x + c];
                    v = exp2f(fmaf(v, sl2, -max_scaled));
                    part += v;
                }
            l_i[x] = fmaf(alpha[x], l_i[x], part);
        }
#pragma unroll
        for (int a = 0; a < C::ATOMS; a++)
#pragma unroll
            for (int e = 0; e < 32; e++) o[a][e] *= alpha[(e % 4) / 2];

        /* O~ += P~ V_j: P~ as A registers (k16 slice kk = keys 16 kk .. 16 kk + 15), V_j
         * transposed from shared memory, one wgmma per 64-column half of d */
        uint32_t pa[WG_BC / 16][4];
#pragma unroll
        for (int kk = 0; kk < WG_BC / 16; kk++) c_pair_to_a(pa[kk], s + 8 * kk, s + 8 * kk + 4);
        wgmma_fence();
#pragma unroll
        for (int a = 0; a < C::ATOMS; a++)
#pragma unroll
            for (int kk = 0; kk < WG_BC / 16; kk++)   /* 16 keys further: 2048 bytes, +128 */
                wgmma_m64n64k16_rs<1>(o[a], pa[kk], wgmma_desc_sw128(Vj + a * ATOM_BYTES, ATOM_BYTES, 1024) + 128 * kk, 1);
        wgmma_commit();
        wgmma_wait<0>();
    }

    /* O_i = O~ / l once, L_i = m_i scale + log l (+inf for a row that saw no key) */
#pragma unroll
    for (int x = 0; x < 2; x++) {
        float l_row = l_i[x];
        l_row += __shfl_xor_sync(0xffffffffu, l_row, 1);   /* the quad's 4 shares */
        l_row += __shfl_xor_sync(0xffffffffu, l_row, 2);
        const int row = row0 + 8 * x;
        if (row >= p.N_q) continue;   /* padding rows of the last Q block */
        const float scale_out = l_row > 0.0f ? 1.0f / l_row : 0.0f;
        float *out = O + (size_t)row * D + 2 * t;
#pragma unroll
        for (int a = 0; a < C::ATOMS; a++)
#pragma unroll
            for (int n8 = 0; n8 < 8; n8++)
                *reinterpret_cast<float2 *>(out + a * 64 + n8 * 8) =
                    make_float2(scale_out * o[a][4 * n8 + 2 * x], scale_out * o[a][4 * n8 + 2 * x + 1]);
        if (t == 0) L[row] = l_row > 0.0f ? fmaf(m_i[x], p.scale, logf(l_row)) : INFINITY;
    }
#else
    (void)p; (void)Qg; (void)Kg; (void)Vg; (void)Og; (void)Lg;
#endif
}

template <int D>
static void launch(const attn_problem_t *p, const void *q, const void *k, const void *v, float *o, float *L)
{
    static bool attr_set = false;
    if (!attr_set) {
        CUDA_CHECK(cudaFuncSetAttribute(fa2_wgmma_kernel<D, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)WgCfg<D>::SMEM));
        attr_set = true;
    }
    const dim3 grid((p->N_q + WG_BR - 1) / WG_BR, p->B * p->H);
    fa2_wgmma_kernel<D, true><<<grid, WG_THREADS, WgCfg<D>::SMEM>>>(*p, (const __half *)q, (const __half *)k,
                                                                    (const __half *)v, o, L);
    CUDA_CHECK_LAUNCH();
}

extern "C" int fa2_wgmma_config(int d, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = "wgmma";
    c->threads = WG_THREADS;
    c->blocks.Br = WG_BR;
    c->blocks.Bc = WG_BC;
    switch (d) {
    case 64: c->smem_bytes = WgCfg<64>::SMEM; break;
    case 128: c->smem_bytes = WgCfg<128>::SMEM; break;
    default:
        snprintf(why, len, "kernel wgmma is built for d = 64 and 128, not d = %d", d);
        return -1;
    }
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
        snprintf(why, len, "no CUDA device");
        return 1;
    }
    if (major != 9 || minor != 0) {   /* built for sm_90a alone: wgmma exists nowhere else */
        snprintf(why, len, "kernel wgmma needs sm_90a (Hopper: H100, H200); this GPU is sm_%d%d", major, minor);
        return 1;
    }
    return gpu_kernel_fits(c, why, len) ? 0 : 1;
}

extern "C" void fa2_wgmma_launch(const attn_problem_t *p, const void *q, const void *k, const void *v, float *o, float *L)
{
    if (p->d == 64) launch<64>(p, q, k, v, o, L);
    else if (p->d == 128) launch<128>(p, q, k, v, o, L);
}
