/* fa1_mma.cu - FlashAttention-1 (Alg. 1) on the tensor cores (common/mma.cuh).
 *
 *   mma   one thread block per (batch, head), KV-outer loop j, inner loop i, as in
 *         fa1_simple.cu; S_ij and P~_ij V_j on mma.sync m16n8k16 (fp16 in, fp32 out);
 *         the warps split the K/V block ("split-K"): WR x WC warps, warp (wr, wc) takes
 *         query rows 16 wr.. and keys FA1_WARP_KEYS wc.. of the step (fa1_blocks.h), so
 *         the row max, the row sum and the partial O of a row live in WC warps and are
 *         reduced through shared memory.               build/phase3 --kernel mma
 *         Two instances (fa1_variant_t, fa1.h): FA1_PLAIN, every step of Alg. 1, and
 *         FA1_BLOCK_SKIP, which under the causal mask skips the Q blocks that see none
 *         of K_j (FA1 Sec. 3.3's block-sparse skip; fa2-mma skips the same way).
 *
 * Why split-K: it is how FlashAttention-1's own kernels divide a step (4 warps across
 * the K/V block), and it is what FlashAttention-2 removes: there each warp owns whole
 * rows (split-Q) and no partial O ever leaves the registers. Keeping it here makes the
 * phase-4 ablation measure that change. The cost is visible below: every step writes
 * WARPS x 16 x d partial sums to shared memory and reads them back, with two barriers.
 *
 * Blocks: FA1_MMA_TABLE in fa1_blocks.h (the kernel's M is its shared memory, Cfg::SMEM):
 *   d = 32, 64 : Br = 32, Bc = 256 (2 x 4 warps)     d = 128 : Br = 64, Bc = 128 (4 x 2)
 * HBM traffic is Alg. 1's, the same as the CPU model with these blocks (fa1_hbm_bytes):
 * O, l, m initialised in HBM (l.2), K_j and V_j read once, Q_i, O_i, l_i, m_i read and
 * O_i, l_i, m_i written once per K/V block (FA1_BLOCK_SKIP: once per K/V block that Q_i
 * sees some key of, fa1_hbm_bytes_skip). Step i+1's Q is fetched with cp.async during
 * step i; so is step i+1's O, l, m where two O buffers fit (d <= 64; for d = 128 O_i is
 * fetched at the start of step i), so the loads arrive while the tensor cores work.
 */
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include "cuda_check.cuh"
#include "mma.cuh"
#include "visits.cuh"
#include "fa1.h"

/* FA1_K_IN_REGISTERS, FA1_SKIP_FULL_MASK: two speed-ups that change no result, each a
 * make variable (fa1_blocks.h). */

/* WN: the n-tiles (8 keys each) of a warp's FA1_WARP_KEYS keys. */
constexpr int WN = FA1_WARP_KEYS / 8;

template <int D, int WR, int WC>
struct Cfg {
    static constexpr int Br = 16 * WR, Bc = FA1_WARP_KEYS * WC, WARPS = WR * WC, THREADS = 32 * WARPS;
    static constexpr int LDH = D + 8;  /* halves per row of Q, K, V tiles: +16 bytes so the 8
                                          rows of an ldmatrix tile fall in different banks */
    static constexpr int LDO = D + 8;  /* floats per row of a warp's partial O (same reason) */
    static constexpr size_t K_OFF = 0;
    static constexpr size_t V_OFF = K_OFF + sizeof(__half) * Bc * LDH;
    static constexpr size_t Q_OFF = V_OFF + sizeof(__half) * Bc * LDH;        /* 2 buffers */
    /* O_i, l_i, m_i land here; two buffers when they fit (d <= 64), so step i + 1's
     * O block is fetched during step i's combine and arrives a whole step later */
    static constexpr int OST = D <= 64 ? 2 : 1;
    static constexpr size_t O_OFF = Q_OFF + 2 * sizeof(__half) * Br * LDH;
    static constexpr size_t OB_BYTES = sizeof(float) * (Br * D + 2 * Br);  /* O_i | l_i | m_i */
    static constexpr size_t RO_OFF = O_OFF + OST * OB_BYTES;      /* partial O per warp  */
    static constexpr size_t RM_OFF = RO_OFF + sizeof(float) * WARPS * 16 * LDO;
    static constexpr size_t RL_OFF = RM_OFF + sizeof(float) * WC * Br;  /* m~, l~ per warp */
    static constexpr size_t SMEM = RL_OFF + sizeof(float) * WC * Br;
};

/* O_i (fp32, Br x D) and l_i, m_i of query block i into one O buffer (Alg. 1 l.8);
 * rows past N_q are zero-filled and never written back. */
template <int D, int Br, int THREADS>
__device__ __forceinline__ void load_olm(float *buf, const float *O, const float *l, const float *m,
                                         int i, int N_q)
{
    float *ls = buf + Br * D, *ms = ls + Br;
    for (int c = threadIdx.x; c < Br * (D / 4); c += THREADS) {
        int r = c / (D / 4), k = (c % (D / 4)) * 4;
        bool ok = i * Br + r < N_q;
        cp_async16(buf + r * D + k, ok ? O + (size_t)(i * Br + r) * D + k : O, ok);
    }
    for (int r = threadIdx.x; r < Br; r += THREADS) {
        bool ok = i * Br + r < N_q;
        cp_async4(ls + r, ok ? l + i * Br + r : l, ok);   /* 4-byte copies: a row of l  */
        cp_async4(ms + r, ok ? m + i * Br + r : m, ok);   /* need not be 16-byte aligned */
    }
}

/* SKIP: FA1_BLOCK_SKIP (fa1.h), under the causal mask pass j starts its inner loop at
 * fa1_first_q_block(j); false: FA1_PLAIN, every pass visits every Q block. A template
 * bool, so the plain instance compiles to the code it had before the skip existed
 * (its i_first is the constant 0). */
template <int D, int WR, int WC, bool SKIP>
__global__ void __launch_bounds__(32 * WR * WC, 1)
fa1_mma_kernel(attn_problem_t p, const __half *Qg, const __half *Kg, const __half *Vg,
               float *Og, float *lg, float *mg, gpu_visits_t vis)
{
    using C = Cfg<D, WR, WC>;
    constexpr int Br = C::Br, Bc = C::Bc, LDH = C::LDH, LDO = C::LDO, NT = C::THREADS, OST = C::OST;
    constexpr bool KREG = FA1_K_IN_REGISTERS && D <= 64;
    extern __shared__ __align__(16) unsigned char smem[];
    __half *Ks = (__half *)(smem + C::K_OFF), *Vs = (__half *)(smem + C::V_OFF);
    __half *Qs = (__half *)(smem + C::Q_OFF);
    float *Obuf = (float *)(smem + C::O_OFF);    /* OST buffers of OB_BYTES */
    float *redO = (float *)(smem + C::RO_OFF), *redM = (float *)(smem + C::RM_OFF), *redL = (float *)(smem + C::RL_OFF);

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wr = warp / WC, wc = warp % WC;    /* rows 16 wr.., keys FA1_WARP_KEYS wc.. */
    const int g = lane / 4, t = lane % 4;        /* mma fragment coordinates (mma.cuh)    */

    const int b = blockIdx.x / p.H, h = blockIdx.x % p.H;          /* FA1: a block per head */
    const __half *Q = Qg + attn_q_offset(&p, b, h);
    const __half *K = Kg + attn_kv_offset(&p, b, h), *V = Vg + attn_kv_offset(&p, b, h);
    float *O = Og + attn_q_offset(&p, b, h), *l = lg + attn_l_offset(&p, b, h), *m = mg + attn_l_offset(&p, b, h);
    const int Tr = (p.N_q + Br - 1) / Br, Tc = (p.N_kv + Bc - 1) / Bc;   /* l.3-4 */
    const float sl2 = p.scale * 1.4426950408889634f;   /* raw score -> log2 units */

    /* l.2: O = 0, l = 0, m = -inf in HBM */
    for (size_t e = tid; e < (size_t)p.N_q * D / 4; e += NT)
        reinterpret_cast<float4 *>(O)[e] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int r = tid; r < p.N_q; r += NT) { l[r] = 0.0f; m[r] = -INFINITY; }
    __syncthreads();   /* the block reads back what it wrote (l.8): init before first load */

    for (int j = 0; j < Tc; j++) {                                           /* l.5 */
        /* The first step of pass j. SKIP: Q blocks above i_first see none of K_j (the
         * causal block mask is zero, FA1 Sec. 3.3), so l.7 starts there and they are
         * neither loaded nor stored; rows that never see a key keep l.2's O = 0, l = 0,
         * m = -inf. i_first < Tr always (the last row sees every key), so K_j, V_j are
         * needed by every pass. The buffers still alternate on i % 2. */
        const int i_first = SKIP && !visit_all(vis) ? fa1_first_q_block(&p, j, Bc, Br) : 0;
        if (tid == 0) visit_count(vis, j, Tr - i_first);   /* the driver holds it to fa1_first_q_block() */
        /* l.6: K_j, V_j (and the first Q block) into shared memory */
        cp_async_tile<D, LDH, NT>(Ks, K + (size_t)j * Bc * D, Bc, p.N_kv - j * Bc);
        cp_async_tile<D, LDH, NT>(Vs, V + (size_t)j * Bc * D, Bc, p.N_kv - j * Bc);
        cp_async_tile<D, LDH, NT>(Qs + (i_first % 2) * Br * LDH, Q + (size_t)i_first * Br * D, Br,
                                  p.N_q - i_first * Br);
        if (OST == 2)
            load_olm<D, Br, NT>(Obuf + (i_first % 2) * (C::OB_BYTES / sizeof(float)), O, l, m, i_first, p.N_q);
        cp_async_commit();
        cp_async_wait<0>();
        __syncthreads();   /* K_j, V_j, Q_i_first (and its O) landed, visible to every warp */
        /* For d <= 64 a warp keeps its FA1_WARP_KEYS keys of K_j in registers, as B
         * fragments, for the whole inner loop: K_j is read from shared memory once per
         * pass instead of once per step (d = 128 would need 128 registers for it). */
        const __half *Kw = Ks + wc * FA1_WARP_KEYS * LDH, *Vw = Vs + wc * FA1_WARP_KEYS * LDH;
        uint32_t kf[KREG ? D / 16 : 1][WN / 2][4];
        if constexpr (KREG) {
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
                for (int n2 = 0; n2 < WN / 2; n2++)
                    load_b_nk(kf[kk][n2], Kw + n2 * 16 * LDH + kk * 16, LDH);
        }

        for (int i = i_first; i < Tr; i++) {                                 /* l.7 */
            /* l.8: Q_{i+1} for the next step (and, with one O buffer, O_i, l_i, m_i for
             * this one) in flight while the tensor cores work on S_ij */
            float *Os = Obuf + (OST == 2 ? i % 2 : 0) * (C::OB_BYTES / sizeof(float));
            float *ls = Os + Br * D, *ms = ls + Br;
            if (OST == 1) load_olm<D, Br, NT>(Os, O, l, m, i, p.N_q);
            if (i + 1 < Tr)
                cp_async_tile<D, LDH, NT>(Qs + ((i + 1) % 2) * Br * LDH, Q + (size_t)(i + 1) * Br * D,
                                          Br, p.N_q - (i + 1) * Br);
            cp_async_commit();   /* (possibly empty: the group count stays regular) */

            /* l.9: S = Q_i K_j^T for this warp's 16 rows x FA1_WARP_KEYS keys (WN n-tiles) */
            const __half *Qw = Qs + (i % 2) * Br * LDH + wr * 16 * LDH;
            float s[WN][4] = {};
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) {
                uint32_t a[4];
                load_a_16x16(a, Qw + kk * 16, LDH);
#pragma unroll
                for (int n2 = 0; n2 < WN / 2; n2++) {   /* two n-tiles (16 keys) per ldmatrix */
                    if constexpr (KREG) {
                        mma_16816(s[2 * n2], a, kf[kk][n2]);
                        mma_16816(s[2 * n2 + 1], a, kf[kk][n2] + 2);
                    } else {
                        uint32_t bf[4];
                        load_b_nk(bf, Kw + n2 * 16 * LDH + kk * 16, LDH);
                        mma_16816(s[2 * n2], a, bf);
                        mma_16816(s[2 * n2 + 1], a, bf + 2);
                    }
                }
            }
            /* mask (tails and causal, elementwise), then l.10: m~ = rowmax over this warp's
             * keys. A thread holds rows g (e = 0, 1) and g + 8 (e = 2, 3); the 4 lanes of
             * a quad hold one row between them. */
            const int row0 = i * Br + wr * 16 + g, col0 = j * Bc + wc * FA1_WARP_KEYS + 2 * t;
            /* Only a warp tile that crosses N_kv or the causal diagonal needs the mask; the
             * test is the same for the whole warp (its first row, its last key). */
            const int last_key = j * Bc + (wc + 1) * FA1_WARP_KEYS - 1;
            const bool crosses = last_key >= p.N_kv ||
                                 (p.causal && last_key > i * Br + wr * 16 + (p.N_kv - p.N_q));
            if (!FA1_SKIP_FULL_MASK || crosses) {
#pragma unroll
                for (int n = 0; n < WN; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        int row = row0 + (e / 2) * 8, col = col0 + n * 8 + e % 2;
                        if (col >= p.N_kv || !attn_visible(&p, row, col)) s[n][e] = -INFINITY;
                    }
            }
            /* m_t, l_t: the paper's m~_ij, l~_ij of rows g (x = 0) and g + 8 (x = 1), over
             * this warp's keys; raw scores until written out */
            float m_t[2] = { -INFINITY, -INFINITY };
#pragma unroll
            for (int n = 0; n < WN; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) m_t[e / 2] = fmaxf(m_t[e / 2], s[n][e]);
            float l_t[2] = { 0.0f, 0.0f };
#pragma unroll
            for (int x = 0; x < 2; x++) {
                /* TODO EXERCISE fa1.rowmax_mma: this warp's row max m~ over the quad (the 4 lanes that hold one row of S)
                 * HINT: m_t[x] is the max over this thread's columns of row g + 8x; the row's other
                 * HINT: columns sit in the 3 other lanes of the quad (mma accumulator layout,
                 * HINT: common/mma.cuh): two __shfl_xor_sync butterfly steps give each the max of all four. */
                /* END EXERCISE fa1.rowmax_mma */
            }
            /* l.10: P~ = exp(scale (S - m~)) = 2^(S sl2 - m~ sl2), l~ = rowsum(P~) */
            const float mu[2] = { m_t[0] == -INFINITY ? 0.0f : m_t[0] * sl2,   /* m~ sl2 */
                                  m_t[1] == -INFINITY ? 0.0f : m_t[1] * sl2 };
#pragma unroll
            for (int n = 0; n < WN; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    s[n][e] = exp2f(s[n][e] * sl2 - mu[e / 2]);
                    l_t[e / 2] += s[n][e];
                }
#pragma unroll
            for (int x = 0; x < 2; x++) {
                l_t[x] += __shfl_xor_sync(0xffffffffu, l_t[x], 1);
                l_t[x] += __shfl_xor_sync(0xffffffffu, l_t[x], 2);
            }
            /* partial P~ V_j: P~ straight from the S registers as the A operand (mma.cuh),
             * V from shared memory through ldmatrix.trans */
            float o[D / 8][4] = {};
#pragma unroll
            for (int kk = 0; kk < WN / 2; kk++) {   /* k16 slices of the warp's keys */
                uint32_t a[4];
                c_pair_to_a(a, s[2 * kk], s[2 * kk + 1]);
#pragma unroll
                for (int n2 = 0; n2 < D / 16; n2++) {
                    uint32_t bf[4];
                    load_b_kn_trans(bf, Vw + kk * 16 * LDH + n2 * 16, LDH);
                    mma_16816(o[2 * n2], a, bf);
                    mma_16816(o[2 * n2 + 1], a, bf + 2);
                }
            }
            /* split-K: this warp's m~, l~ and partial O go to shared memory */
            float *ro = redO + warp * 16 * LDO;
#pragma unroll
            for (int n = 0; n < D / 8; n++) {
                *reinterpret_cast<float2 *>(ro + g * LDO + n * 8 + 2 * t) = make_float2(o[n][0], o[n][1]);
                *reinterpret_cast<float2 *>(ro + (g + 8) * LDO + n * 8 + 2 * t) = make_float2(o[n][2], o[n][3]);
            }
            if (t == 0) {
                const int r = wr * 16 + g;
                redM[wc * Br + r] = m_t[0] == -INFINITY ? -INFINITY : m_t[0] * p.scale;
                redM[wc * Br + r + 8] = m_t[1] == -INFINITY ? -INFINITY : m_t[1] * p.scale;
                redL[wc * Br + r] = l_t[0];
                redL[wc * Br + r + 8] = l_t[1];
            }
            /* O_i, l_i, m_i must have landed: with two O buffers they are the older of the
             * two groups in flight (the newer one is Q_{i+1}) */
            if (OST == 2) cp_async_wait<1>(); else cp_async_wait<0>();
            __syncthreads();   /* every warp's partials, and O_i, l_i, m_i, are in shared memory */
            if (OST == 2) {    /* the other O buffer was last read before the previous barrier */
                if (i + 1 < Tr) load_olm<D, Br, NT>(Obuf + ((i + 1) % 2) * (C::OB_BYTES / sizeof(float)), O, l, m, i + 1, p.N_q);
                cp_async_commit();
            }

            /* l.11-12 across the WC warps of a row. Each warp's P~ used its own m~_w, so its
             * l~_w and O_w get e^(m~_w - m_new) with m_new = max(m_i, max_w m~_w): the same
             * numbers as Alg. 1 with one max over the whole K/V block. Every thread works
             * out the factors of the rows it writes (a few exps, and no extra barrier).
             * O_i <- diag(l_new)^-1 (diag(l_i) e^(m_i - m_new) O_i + sum_w e^(m~_w - m_new) O_w) */
            for (int c = tid; c < Br * (D / 4); c += NT) {
                const int r = c / (D / 4), k = (c % (D / 4)) * 4;
                if (i * Br + r >= p.N_q) continue;
                const float m_old = ms[r];
                /* TODO EXERCISE fa1.ml_mma: the new running max and sum of row r over the WC warps (Alg. 1 l.11), and 1/l_new
                 * HINT: fa1.ml with WC block maxima redM[w * Br + r] and sums redL[w * Br + r] instead
                 * HINT: of one: m_new over m_old and all of them; fw[w] brings warp w's sum (and O_w)
                 * HINT: to m_new, a_old the old l (and O_i) times its factor; fa1_rescale() gives 0
                 * HINT: for a max of -inf. inv = 1 / l_new, and 0 while the row has seen no key. */
                const float m_new = m_old, l_new = ls[r], a_old = ls[r], inv = 0.0f;
                float fw[WC] = {};
                /* END EXERCISE fa1.ml_mma */
                float4 acc = *reinterpret_cast<const float4 *>(Os + r * D + k);
                /* TODO EXERCISE fa1.rescale_mma: the O_i update of Alg. 1 l.12 for 4 columns of row r, over the WC warps
                 * HINT: acc holds 4 columns of the normalised O_i so far: undo its normalisation (a_old),
                 * HINT: add each warp's partial P~ V (the float4 at redO + ((r / 16 * WC + w) * 16 + r % 16)
                 * HINT: * LDO + k) weighed by fw[w], and divide the whole by l_new (times inv). */
                (void)a_old; (void)inv; (void)fw;
                /* END EXERCISE fa1.rescale_mma */
                *reinterpret_cast<float4 *>(O + (size_t)(i * Br + r) * D + k) = acc;     /* l.12 */
                if (k == 0) { l[i * Br + r] = l_new; m[i * Br + r] = m_new; }           /* l.13 */
            }
            if (OST == 2) cp_async_wait<1>(); else cp_async_wait<0>();   /* Q_{i+1} landed */
            __syncthreads();   /* Q_{i+1} visible; the partials and this O buffer are free again */
        }
    }
}

/* What must hold for every row of FA1_MMA_TABLE (fa1_blocks.h). Shared memory: fa1-mma
 * needs 134.5 KiB at d = 64 and 203.5 KiB at d = 128, more than sm_86/89 (99 KiB) or
 * sm_80 (163 KiB) give, so it promises only sm_90's 227 KiB here; on a smaller device
 * fa1_mma_config() returns 1 and the driver skips the row. */
static_assert(FA1_WARP_KEYS % 16 == 0 && FA1_WARP_KEYS > 0,
              "FA1_WARP_KEYS: whole k16 slices (P V) and pairs of n-tiles (one ldmatrix.x4 of K)");
#define FA1_ASSERT_ROW(D_, WR_, WC_)                                                          \
    static_assert((D_) % 16 == 0, "fa1-mma: d must be whole k16 slices");                       \
    static_assert((WR_) >= 1 && (WC_) >= 1 && 32 * (WR_) * (WC_) <= 1024,                       \
                  "fa1-mma: WR x WC warps, at most 1024 threads");                              \
    static_assert(Cfg<D_, WR_, WC_>::Br == 16 * (WR_) && Cfg<D_, WR_, WC_>::Bc % 16 == 0,      \
                  "fa1-mma: Br = 16 WR, Bc = FA1_WARP_KEYS WC");                                \
    static_assert(Cfg<D_, WR_, WC_>::SMEM <= SMEM_OPTIN_SM90,                                   \
                  "fa1-mma: shared memory above sm_90's 227 KiB opt-in limit (fa1_blocks.h)");
FA1_MMA_TABLE(FA1_ASSERT_ROW)
#undef FA1_ASSERT_ROW

template <int D, int WR, int WC, bool SKIP>
static void launch(const attn_problem_t *p, const void *q, const void *k, const void *v,
                   float *o, float *l, float *m)
{
    using C = Cfg<D, WR, WC>;
    static bool attr_set = false;   /* more than 48 KiB of shared memory needs an opt-in (per instance) */
    if (!attr_set) {
        CUDA_CHECK(cudaFuncSetAttribute(fa1_mma_kernel<D, WR, WC, SKIP>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)C::SMEM));
        attr_set = true;
    }
    fa1_mma_kernel<D, WR, WC, SKIP><<<p->B * p->H, C::THREADS, C::SMEM>>>(
        *p, (const __half *)q, (const __half *)k, (const __half *)v, o, l, m, gpu_visits((p->N_kv + C::Bc - 1) / C::Bc));
    CUDA_CHECK_LAUNCH();
}

template <int D, int WR, int WC>
static void launch_variant(const attn_problem_t *p, fa1_variant_t variant, const void *q, const void *k,
                           const void *v, float *o, float *l, float *m)
{
    if (variant == FA1_BLOCK_SKIP) launch<D, WR, WC, true>(p, q, k, v, o, l, m);
    else launch<D, WR, WC, false>(p, q, k, v, o, l, m);
}

template <int D, int WR, int WC>
static void config(gpu_kernel_config_t *c)
{
    using C = Cfg<D, WR, WC>;
    c->blocks.Br = C::Br;
    c->blocks.Bc = C::Bc;
    c->smem_bytes = C::SMEM;
    c->threads = C::THREADS;
}

extern "C" int fa1_mma_config(int d, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = "mma";
    switch (d) {   /* the rows of FA1_MMA_TABLE */
#define FA1_CONFIG_ROW(D_, WR_, WC_) case D_: config<D_, WR_, WC_>(c); return fa1_config_fits(c, why, len);
    FA1_MMA_TABLE(FA1_CONFIG_ROW)
#undef FA1_CONFIG_ROW
    default:
        snprintf(why, len, "kernel mma is built for d = 32, 64 and 128 (fa1_blocks.h), not d = %d (use --kernel simple)", d);
        return -1;
    }
}

extern "C" void fa1_mma_launch(const attn_problem_t *p, fa1_variant_t variant, const void *q,
                               const void *k, const void *v, float *o, float *l, float *m)
{
    switch (p->d) {
#define FA1_LAUNCH_ROW(D_, WR_, WC_) case D_: launch_variant<D_, WR_, WC_>(p, variant, q, k, v, o, l, m); break;
    FA1_MMA_TABLE(FA1_LAUNCH_ROW)
#undef FA1_LAUNCH_ROW
    default: break;   /* fa1_mma_config() said -1; the driver never gets here */
    }
}
