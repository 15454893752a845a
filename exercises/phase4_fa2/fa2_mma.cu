/* fa2_mma.cu - FlashAttention-2's forward on the tensor cores (common/mma.cuh).
 *
 *   mma   grid (num_m_blocks, B x H): a thread block per Q block, 4 warps, each warp owns
 *         its query rows for the whole K/V loop (split-Q). Blocks: FA2_MMA_TABLE in
 *         fa2_blocks.h; by default d = 32: 16 rows a warp (Br = 64), Bc = 128 keys, Q_i in
 *         registers, K/V double-buffered; d = 64 and 128: 32 rows a warp (Br = 128), Bc =
 *         128 and 64, Q_i read from shared memory, one K and one V buffer (V_j loaded
 *         under S = Q_i K_j^T, K_j+1 under P~ V_j); d = 256: 16 rows a warp, Bc = 64, the
 *         same. Loads with cp.async; S and P in registers, O~ unnormalised in registers and
 *         divided by l once; causal blocks past the diagonal skipped.
 *                                                   build/phase4 --kernel mma [--causal]
 *   The ablation ladder (build/phase4 prints it) runs the same source with compile-time
 *   switches (template parameters, fa2_variant_t in fa2.h), at the ladder's blocks
 *   (FA2_LADDER_BLOCKS: d = 64 Bc = 64, d = 128 Bc = 32, two K/V stages):
 *   perstep    O normalised at every step as in FA1 (2 multiplies per O element, a divide)
 *   deferred   + O~ unnormalised, one multiply per element per step, one divide at the end;
 *              causal: K/V blocks past the diagonal skipped, the mask on diagonal ones only
 *   grid-bh    deferred with the grid (B x H, num_m_blocks): the Q blocks of one head are
 *              no longer neighbours in launch order
 *   noskip     deferred without the skip
 *   mma        deferred at the table's blocks: the official FlashAttention-2's
 *
 * What FA1's kernel (phase3_fa1/fa1_mma.cu) did differently, and this one does not do:
 * its warps split the K/V block (split-K), so every step it wrote partial O, m, l to
 * shared memory and combined them behind two barriers; and O, l, m went to HBM and back
 * once per K/V block. Here a warp's rows are entirely its own: the row max and sum
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
#include "visits.cuh"
#include "mask_gpu.h"
#include "fa2.h"

/* threads per thread block at head dimension D (FA2_WARPS_OF, fa2_blocks.h: 4 warps by default) */
#define THREADS_OF(D) (32 * FA2_WARPS_OF(D))

/* D, BC, MT: a row of FA2_MMA_TABLE (fa2_blocks.h). MT: 16-row m-tiles per warp. MT = 1
 * keeps Q_i in registers; MT = 2 (d = 64 and 128) gives a warp 32 rows, so every K or V fragment
 * read from shared memory feeds two mma's (the shared-memory reads per FLOP halve), and
 * Q_i is read from shared memory per block instead (32 rows of Q in registers would not fit beside the 32 x 128 accumulators). */
template <int D, int BC, int MT, int STAGES>
struct Cfg {
    static constexpr int BR = 16 * FA2_WARPS_OF(D) * MT;
    static constexpr int LDH = D + 8;   /* halves per smem row: +16 bytes, so the 8 rows of an
                                           ldmatrix tile start in different banks */
    static constexpr size_t Q_OFF = 0;
    static constexpr size_t K_OFF = Q_OFF + sizeof(__half) * BR * LDH;
    static constexpr size_t V_OFF = K_OFF + STAGES * sizeof(__half) * BC * LDH;
    static constexpr size_t SMEM = V_OFF + STAGES * sizeof(__half) * BC * LDH;
};


/* DEFER: O~ unnormalised, divided at the end (else normalised every step, as in FA1).
 * SKIP: causal blocks past the diagonal skipped and only diagonal/tail blocks masked
 * (else every block visited and, with a mask, every element masked).
 * MFIRST: blockIdx.x is the Q block (grid (num_m_blocks, B x H)); else the head.
 * MASKED: a FlashMask mask (common/mask.h, chapter 4c) instead of the causal rule: mcols its
 * four vectors a column at a time (int4), mblk the 8 per-block values of the preprocessing
 * pass (mask_gpu.cu). Each
 * tile (Q block i, K/V block j) is classified from mblk: fully masked tiles are skipped (K_j,
 * V_j not loaded), partial ones test each element, unmasked ones run the plain loop. */
/* FlashMask's element test on a partial tile (FlashMask Sec. 4; mask.h's mask_row_visible),
 * one bit an S element: bit 4 (n % 8) + e of keep[mtile][n / 8] says whether element e of
 * n-tile n (row row0 + 16 mtile + 8 (e / 2), key j Bc + 8 n + 2 t + e % 2) is visible; a key
 * past N_kv is not. One 16-byte load of a column's {LTS, LTE, UTS, UTE} serves the thread's
 * 2 MT rows of it. */
template <int BC, int MT>
__device__ __forceinline__ void mask_keep_bits(uint32_t (&keep)[MT][(BC + 31) / 32], int j, int row0, int N_kv, int t,
                                               const int4 *mcols)
{
#pragma unroll
    for (int mtile = 0; mtile < MT; mtile++)
#pragma unroll
        for (int w = 0; w < (BC + 31) / 32; w++) keep[mtile][w] = 0;
#pragma unroll
    for (int n = 0; n < BC / 8; n++)
#pragma unroll
        for (int c2 = 0; c2 < 2; c2++) {   /* its two columns of n-tile n */
            const int col = j * BC + n * 8 + 2 * t + c2;
            if (col < N_kv) {
                const int4 r = __ldg(mcols + col);
#pragma unroll
                for (int mtile = 0; mtile < MT; mtile++)
#pragma unroll
                    for (int x = 0; x < 2; x++)
                        keep[mtile][n / 8] |= (uint32_t)mask_row_visible(r.x, r.y, r.z, r.w, row0 + 16 * mtile + 8 * x)
                                              << (4 * (n % 8) + 2 * x + c2);
                }
        }
}

template <int D, int BC, int MT, int STAGES, bool DEFER, bool SKIP, bool MFIRST, bool MASKED>
__global__ void __launch_bounds__(THREADS_OF(D), 8 / FA2_WARPS_OF(D))   /* 8 warps an SM */
fa2_mma_kernel(attn_problem_t p, const __half *Qg, const __half *Kg, const __half *Vg,
               float *Og, float *Lg, gpu_visits_t vis, const int32_t *mcols, const int32_t *mblk,
               const int32_t *morder)
{
    using C = Cfg<D, BC, MT, STAGES>;
    constexpr int LDH = C::LDH, BR = C::BR, THREADS = THREADS_OF(D);
    constexpr bool QREG = MT == 1 && D <= 128;   /* d = 256: 64 more registers would spill */
    constexpr bool PIPE_S = !QREG && MT == 1 && BC >= 64;   /* d = 256 (below, at S = Q_i K_j^T) */
    extern __shared__ __align__(16) unsigned char smem[];
    __half *Qs = (__half *)(smem + C::Q_OFF);
    __half *Ks = (__half *)(smem + C::K_OFF), *Vs = (__half *)(smem + C::V_OFF);

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const int Tr = (p.N_q + BR - 1) / BR, Tc = (p.N_kv + BC - 1) / BC;
    /* causal: the longest Q blocks (the last ones) first, so the short ones fill the tail.
     * With a mask the lengths follow the mask, not the row: morder (mask_gpu_order) lists the
     * Q blocks longest first, taken rank by rank across every head (mask_block_of). */
    int i, bh;
    if (MASKED) {
        mask_block_of(blockIdx.x + blockIdx.y * gridDim.x, p.B * p.H, Tr, morder, &i, &bh);
    } else {
        const int mb = MFIRST ? blockIdx.x : blockIdx.y;
        bh = MFIRST ? blockIdx.y : blockIdx.x;
        i = p.causal ? Tr - 1 - mb : mb;
    }
    const int b = bh / p.H, h = bh % p.H;
    const __half *Q = Qg + attn_q_offset(&p, b, h) + (size_t)i * BR * D;
    const __half *K = Kg + attn_kv_offset(&p, b, h), *V = Vg + attn_kv_offset(&p, b, h);
    float *O = Og + attn_q_offset(&p, b, h), *L = Lg + attn_l_offset(&p, b, h);
    const int i0 = i * BR, shift = p.N_kv - p.N_q;   /* row r sees keys <= r + shift */
    const float sl2 = p.scale * 1.4426950408889634f; /* exp(scale x) = 2^(sl2 x)      */

    /* the K/V blocks this Q block visits (fa2_kv_blocks() in fa2_cpu.c) */
    int n_blocks = Tc;
    if (SKIP && p.causal) {
        /* TODO EXERCISE fa2.causal_range_mma: the K/V blocks a causal Q block must visit, in the mma kernel
         * HINT: fa2.causal_range for BR-row Q blocks (the first row is i0; the last may be a
         * HINT: tail at N_q) and BC-key blocks: set n_blocks, at most Tc, 0 when the block's
         * HINT: last row sees no key (the kernel then writes O = 0, L = +inf just below). */
        n_blocks = 0;
    }
    /* FlashMask: the class of each tile (i, j) of this Q block, one byte a K/V block in shared
     * memory past the tiles (mask_tile_class_at on the preprocessing pass's min/max), so that
     * the loop reads a byte, not the 8 values (visit_all, the driver's test of the counters:
     * every tile visited, every element tested) */
    uint8_t *tile_class = smem + C::SMEM;
    /* With a mask only the K/V blocks [q_first, q_end) can hold a visited tile (mask_q_range,
     * from the order pass): the classes are made and scanned there alone, so a Q block's work
     * follows its tiles, not Tc (a sliding window's band, not the whole row) */
    int q_first = 0, q_end = Tc;
    if (MASKED && !visit_all(vis)) mask_q_range(morder, i, Tc, &q_first, &q_end);
    /* the next K/V block to visit after j: j + 1, or with a mask the next not fully masked
     * (Tc after the last) */
    auto next_block = [&](int j) {
        if (MASKED) {
            for (j = max(j + 1, q_first); j < q_end && tile_class[j] == MASK_TILE_FULLY_MASKED; j++) {}
            if (j >= q_end) j = Tc;
        } else j++;
        return j;
    };
    int j_first = 0;   /* the first K/V block visited: 0 but with a mask */
    if (MASKED) {
        for (int jj = q_first + threadIdx.x; jj < q_end; jj += THREADS)
            tile_class[jj] = visit_all(vis) ? MASK_TILE_PARTIAL
                                            : mask_tile_class_at(mblk, Tc, i0, i0 + min(BR, p.N_q - i0), jj);
        __syncthreads();   /* every tile's class is in shared memory */
        j_first = next_block(-1);
        n_blocks = j_first < Tc;   /* 0: no tile to visit; the visits are counted in the loop below */
    }
    if (visit_all(vis)) n_blocks = Tc;
    /* this thread's rows: m-tile mtile (of MT), x = 0 / 1 -> row0 + 16 mtile + 8 x */
    const int row0 = i0 + warp * 16 * MT + g;
    if (n_blocks == 0) {   /* every row fully masked: O = 0, L = +inf (common/problem.h); 0 visits */
        for (int e = threadIdx.x; e < BR * D; e += THREADS)
            if (i0 + e / D < p.N_q) O[(size_t)i0 * D + e] = 0.0f;
        for (int r = threadIdx.x; r < BR; r += THREADS)
            if (i0 + r < p.N_q) L[i0 + r] = INFINITY;
        return;
    }

    /* Alg. 1 l.4: Q_i, and the first K (and V) block, into shared memory */
    int j = j_first;
    cp_async_tile<D, LDH, THREADS>(Qs, Q, BR, p.N_q - i0);
    cp_async_tile<D, LDH, THREADS>(Ks, K + (size_t)j * BC * D, BC, p.N_kv - j * BC);
    if (STAGES == 2) cp_async_tile<D, LDH, THREADS>(Vs, V + (size_t)j * BC * D, BC, p.N_kv - j * BC);
    cp_async_commit();

    uint32_t qf[QREG ? D / 16 : 1][4];    /* MT = 1: Q_i's 16 rows as A fragments     */
    float o[MT][D / 8][4];                /* O~_i: 16 MT rows x D, fp32 accumulators  */
    float m_i[MT][2], l_i[MT][2];         /* m_i (raw-score row max), l_i (this thread's
                                             part of the row sum), rows g and g + 8  */
#pragma unroll
    for (int mtile = 0; mtile < MT; mtile++) {
        m_i[mtile][0] = m_i[mtile][1] = -INFINITY;
        l_i[mtile][0] = l_i[mtile][1] = 0.0f;
#pragma unroll
        for (int n = 0; n < D / 8; n++) o[mtile][n][0] = o[mtile][n][1] = o[mtile][n][2] = o[mtile][n][3] = 0.0f;
    }

    /* The two pipelines (STAGES, fa2_blocks.h), per K/V block j:
     *   2:  wait K_j V_j | sync | load K_j+1 V_j+1 (other pair) | S, softmax, P~ V_j
     *   1:  wait K_j | sync | load V_j | S, softmax | wait V_j | sync | load K_j+1 | P~ V_j */
    const int j_end = MASKED ? Tc : n_blocks;   /* with a mask, next_block() returns Tc after the last */
    int v = 0;
    for (; j < j_end; v++) {                    /* l.6: K/V block j, the v-th visited */
        const int jn = MASKED ? next_block(j) : j + 1;   /* the next one */
        const int st = STAGES == 2 ? (MASKED ? v : j) % 2 : 0;
        cp_async_wait<0>();
        __syncthreads();   /* K_j (STAGES = 2: and V_j; and Q_i) landed and are visible to
                              every warp; every warp is done with block j - 1's buffers */
        if (QREG && (MASKED ? v : j) == 0) {   /* the first block visited: Q_i into registers */
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++)
                load_a_16x16(qf[kk], Qs + warp * 16 * LDH + kk * 16, LDH);
        }
        if (STAGES == 1) {        /* l.7: V_j streams in while S_ij is computed */
            cp_async_tile<D, LDH, THREADS>(Vs, V + (size_t)j * BC * D, BC, p.N_kv - j * BC);
            cp_async_commit();
        } else if (jn < j_end) {   /* l.7: the next block streams in while this one is computed */
            cp_async_tile<D, LDH, THREADS>(Ks + (1 - st) * BC * LDH, K + (size_t)jn * BC * D, BC, p.N_kv - jn * BC);
            cp_async_tile<D, LDH, THREADS>(Vs + (1 - st) * BC * LDH, V + (size_t)jn * BC * D, BC, p.N_kv - jn * BC);
            cp_async_commit();
        }
        const __half *Kj = Ks + st * BC * LDH, *Vj = Vs + st * BC * LDH;
        if (MASKED && warp == 0 && jn < j_end && tile_class[jn] == MASK_TILE_PARTIAL)   /* the next element test's runs */
            mask_prefetch_columns<BC>(mcols, jn, p.N_kv, lane);

        /* FlashMask: a partial tile's (or the tail block's) element test needs no S, so its
         * bits are computed first, their loads in flight while the S mma's run; but for
         * an S tile of more than 128 keys a thread (d = 64: 2 x 128) they would stay live
         * across the S mma's beside its 128 accumulators, and ptxas spills: there, after S */
        constexpr bool BITS_BEFORE_S = MT * BC <= 128;
        const bool partial_tile = MASKED && ((long)(j + 1) * BC > p.N_kv || tile_class[j] == MASK_TILE_PARTIAL);
        uint32_t keep[MT][(BC + 31) / 32];
        if (BITS_BEFORE_S && partial_tile) mask_keep_bits<BC, MT>(keep, j, row0, p.N_kv, t, reinterpret_cast<const int4 *>(mcols));

        /* l.8: S_ij = Q_i K_j^T, 16 MT rows x BC keys, in registers (BC/8 n-tiles) */
        float s[MT][BC / 8][4];
#pragma unroll
        for (int mtile = 0; mtile < MT; mtile++)
#pragma unroll
            for (int n = 0; n < BC / 8; n++) s[mtile][n][0] = s[mtile][n][1] = s[mtile][n][2] = s[mtile][n][3] = 0.0f;
        /* The k-loop stays a loop when Q_i comes from shared memory and Bc >= 64: unrolled,
         * ptxas hoists all its ldmatrix (48 at d = 128) ahead of the mma's, and the
         * fragments they fill no longer fit beside the 192 accumulators (spills). With
         * Q_i in registers qf[kk] needs kk known at compile time: unrolled. */
        if constexpr (PIPE_S) {
            /* d = 256: fragments of slice kk + 1 are read from shared memory while slice
             * kk's mma's run, two sets in turn (the loop stays rolled, two slices an
             * iteration). Without it each slice's mma's waited for their own ldmatrix
             * (ncu: short-scoreboard stalls, tensor pipe 40% busy against FA2's 52%). */
            uint32_t qa[2][4], kb[2][BC / 16][4];
            auto load_slice = [&](int kk, uint32_t (&a)[4], uint32_t (&b)[BC / 16][4]) {
                load_a_16x16(a, Qs + warp * 16 * LDH + kk * 16, LDH);
#pragma unroll
                for (int n2 = 0; n2 < BC / 16; n2++) load_b_nk(b[n2], Kj + n2 * 16 * LDH + kk * 16, LDH);
            };
            auto mma_slice = [&](const uint32_t (&a)[4], const uint32_t (&b)[BC / 16][4]) {
#pragma unroll
                for (int n2 = 0; n2 < BC / 16; n2++) {
                    mma_16816(s[0][2 * n2], a, b[n2]);
                    mma_16816(s[0][2 * n2 + 1], a, b[n2] + 2);
                }
            };
            load_slice(0, qa[0], kb[0]);
#pragma unroll 1
            for (int kk = 0; kk < D / 16; kk += 2) {
                load_slice(kk + 1, qa[1], kb[1]);
                mma_slice(qa[0], kb[0]);
                if (kk + 2 < D / 16) load_slice(kk + 2, qa[0], kb[0]);
                mma_slice(qa[1], kb[1]);
            }
        } else
#pragma unroll (QREG || BC < 64 ? D / 16 : 1)
        for (int kk = 0; kk < D / 16; kk++) {
            uint32_t qa[MT][4];
            if constexpr (!QREG) {
#pragma unroll
                for (int mtile = 0; mtile < MT; mtile++)
                    load_a_16x16(qa[mtile], Qs + (warp * MT + mtile) * 16 * LDH + kk * 16, LDH);
            }
#pragma unroll
            for (int n2 = 0; n2 < BC / 16; n2++) {   /* two n-tiles (16 keys) per ldmatrix */
                uint32_t bf[4];
                load_b_nk(bf, Kj + n2 * 16 * LDH + kk * 16, LDH);
#pragma unroll
                for (int mtile = 0; mtile < MT; mtile++) {   /* one K fragment, MT m-tiles */
                    const uint32_t *a = QREG ? qf[kk] : qa[mtile];
                    mma_16816(s[mtile][2 * n2], a, bf);
                    mma_16816(s[mtile][2 * n2 + 1], a, bf + 2);
                }
            }
        }
        /* the mask: with SKIP only on blocks that cross the diagonal or N_kv; with MASKED on
         * the partial tiles (and the tail block) */
        const long last_key = (long)(j + 1) * BC - 1;
        const bool mask = last_key >= p.N_kv || (MASKED ? tile_class[j] == MASK_TILE_PARTIAL
                                                         : p.causal && (!SKIP || last_key > (long)i0 + shift));
        if (mask && MASKED) {   /* FlashMask: the element test's bits (mask_keep_bits) */
            if (!BITS_BEFORE_S) mask_keep_bits<BC, MT>(keep, j, row0, p.N_kv, t, reinterpret_cast<const int4 *>(mcols));
#pragma unroll
            for (int mtile = 0; mtile < MT; mtile++)
#pragma unroll
                for (int n = 0; n < BC / 8; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        if (!((keep[mtile][n / 8] >> (4 * (n % 8) + e)) & 1u)) s[mtile][n][e] = -INFINITY;
        } else if (mask) {
#pragma unroll
            for (int mtile = 0; mtile < MT; mtile++)
#pragma unroll
                for (int n = 0; n < BC / 8; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int row = row0 + 16 * mtile + 8 * (e / 2), col = j * BC + n * 8 + 2 * t + e % 2;
                        if (col >= p.N_kv || (p.causal && col > row + shift)) s[mtile][n][e] = -INFINITY;
                    }
        }
        /* l.9: m_new = max(m_i, rowmax S) over the quad; P~ = 2^(sl2 S - sl2 m_new) */
        float alpha[MT][2];
#pragma unroll
        for (int mtile = 0; mtile < MT; mtile++)
#pragma unroll
        for (int x = 0; x < 2; x++) {
            float mx = m_i[mtile][x];
#pragma unroll
            for (int n = 0; n < BC / 8; n++) mx = fmaxf(mx, fmaxf(s[mtile][n][2 * x], s[mtile][n][2 * x + 1]));
            /* TODO EXERCISE fa2.rowmax_mma: the row max over the quad (the 4 lanes that hold one row of S)
             * HINT: mx is the max over this thread's 2 BC/8 columns of the row (and the old m_i). The
             * HINT: row's other columns sit in the 3 other lanes of the quad (lanes 4g .. 4g + 3, the
             * HINT: mma accumulator layout, common/mma.cuh): two __shfl_xor_sync butterfly steps
             * HINT: give each of them the max of all four. */
            /* alpha = e^(scale (m_old - m_new)), with fa1_rescale()'s rule (fa1.h), as in the
             * CPU model: 0 while the row has seen no key (m_old = -inf; its O~ and l are 0
             * anyway). Testing m_new gives the same values (m_new = -inf forces m_old =
             * -inf, and a finite m_new makes sfu_ex2(-inf) = 0) without keeping m_old live:
             * testing m_old made the d = 128 perstep variant spill on sm_90. */
            /* TODO EXERCISE fa2.online_mma: alpha, P~ and l of the thread's row (Alg. 1 l.9), with exp2
             * HINT: mx is the new max m_new (raw scores: exp(scale x) = 2^(sl2 x), sfu_ex2()); m_i the
             * HINT: old one. alpha = e^(scale (m_old - m_new)), 0 when m_new = -inf; P~ = e^(scale
             * HINT: (S - m_new)) into this thread's S registers s[mtile][n][2x], [2x + 1] (0 when
             * HINT: m_new = -inf); rs their sum. DEFER: l_i = alpha l_i + rs (this thread's part;
             * HINT: the quad's parts are added at the end). Otherwise (FA1's way) the quad's
             * HINT: rs first, l_i = l_new, and alpha times the old l un-normalises O. m_i = m_new. */
            alpha[mtile][x] = 1.0f; m_i[mtile][x] = mx; (void)sl2;
        }
#pragma unroll
        for (int mtile = 0; mtile < MT; mtile++)
#pragma unroll
            for (int n = 0; n < D / 8; n++) {
                o[mtile][n][0] *= alpha[mtile][0]; o[mtile][n][1] *= alpha[mtile][0];
                o[mtile][n][2] *= alpha[mtile][1]; o[mtile][n][3] *= alpha[mtile][1];
            }
        /* l.10: O~ += P~ V_j. P~ goes from the S accumulators into A fragments (mma.cuh),
         * all of it before the first mma: in fp16 it takes half the registers, and the fp32
         * S is dead before P~ V_j's accumulators are touched (at d = 128, Bc = 64 that is
         * 32 registers, the difference between spilling and not). V_j comes through
         * ldmatrix.trans, one V fragment for MT m-tiles. */
        uint32_t pf[MT][BC / 16][4];
#pragma unroll
        for (int mtile = 0; mtile < MT; mtile++)
#pragma unroll
            for (int kk = 0; kk < BC / 16; kk++) c_pair_to_a(pf[mtile][kk], s[mtile][2 * kk], s[mtile][2 * kk + 1]);
        if (STAGES == 1) {
            cp_async_wait<0>();
            __syncthreads();   /* V_j landed; every warp is done with K_j */
            if (jn < j_end) {   /* the next K streams in while P~ V_j is computed */
                cp_async_tile<D, LDH, THREADS>(Ks, K + (size_t)jn * BC * D, BC, p.N_kv - jn * BC);
                cp_async_commit();
            }
        }
#pragma unroll
        for (int kk = 0; kk < BC / 16; kk++) {
#pragma unroll
            for (int n2 = 0; n2 < D / 16; n2++) {
                uint32_t bf[4];
                load_b_kn_trans(bf, Vj + kk * 16 * LDH + n2 * 16, LDH);
#pragma unroll
                for (int mtile = 0; mtile < MT; mtile++) {
                    mma_16816(o[mtile][2 * n2], pf[mtile][kk], bf);
                    mma_16816(o[mtile][2 * n2 + 1], pf[mtile][kk], bf + 2);
                }
            }
        }
        if (!DEFER) {   /* ... divided by the new l at every step */
#pragma unroll
            for (int mtile = 0; mtile < MT; mtile++) {
                const float inv0 = l_i[mtile][0] > 0.0f ? 1.0f / l_i[mtile][0] : 0.0f;
                const float inv1 = l_i[mtile][1] > 0.0f ? 1.0f / l_i[mtile][1] : 0.0f;
#pragma unroll
                for (int n = 0; n < D / 8; n++) {
                    o[mtile][n][0] *= inv0; o[mtile][n][1] *= inv0;
                    o[mtile][n][2] *= inv1; o[mtile][n][3] *= inv1;
                }
            }
        }
        j = jn;
    }

    /* l.12-13: O_i = O~_i / l_i once; L_i = m_i + log(l_i) (+inf for a row that saw nothing) */
#pragma unroll
    for (int mtile = 0; mtile < MT; mtile++)
#pragma unroll
    for (int x = 0; x < 2; x++) {
        if (DEFER) {   /* the quad's partial sums, added once */
            l_i[mtile][x] += __shfl_xor_sync(0xffffffffu, l_i[mtile][x], 1);
            l_i[mtile][x] += __shfl_xor_sync(0xffffffffu, l_i[mtile][x], 2);
        }
        /* TODO EXERCISE fa2.finish_mma: divide O~ by l once and write the thread's row of O_i and L_i (Alg. 1 l.12-13)
         * HINT: fa2.normalise and fa2.lse for row row0 + 16 mtile + 8 x (skip it past N_q): this
         * HINT: thread holds columns n * 8 + 2 t and + 1 of it (n < D/8) in o[mtile][n][2x], [2x + 1]
         * HINT: (one float2 store each). DEFER: divide by the row's l (0 -> O = 0); otherwise O is
         * HINT: already normalised. m_i holds raw scores (times p.scale); a row with l = 0 gets
         * HINT: L = +inf. One lane of the quad (t == 0) writes L. */
    }
    /* counted last, off the path to the first K/V block; the driver holds it to fa2_kv_blocks() */
    if (threadIdx.x == 0) visit_count(vis, i, MASKED ? v : n_blocks);
}

/* What must hold for every row of FA2_MMA_TABLE (fa2_blocks.h). Shared memory: fa2-mma
 * promises every GPU of the build (sm_80 and up), so its layout must fit the smallest
 * opt-in limit, sm_86/89's 99 KiB; fa2_mma_config() still asks the device (FA_SMEM_LIMIT). */
#define FA2_ASSERT_ROW(D_, MT_, BC_, ST_, LADDER_)                                                  \
    static_assert((D_) % 16 == 0, "fa2-mma: d must be whole k16 slices (S = Q K^T)");           \
    static_assert((BC_) % 16 == 0 && (BC_) > 0,                                                \
                  "fa2-mma: Bc must be whole k16 slices of P V and pairs of n-tiles of S");     \
    static_assert((MT_) >= 1, "fa2-mma: MT >= 1 m-tile of 16 rows per warp");                   \
    static_assert((ST_) == 1 || (ST_) == 2, "fa2-mma: STAGES is 1 or 2 K/V buffers");                   \
    static_assert(Cfg<D_, BC_, MT_, ST_>::BR == 16 * FA2_WARPS_OF(D_) * (MT_), "fa2-mma: Br = 16 WARPS MT");    \
    static_assert(Cfg<D_, BC_, MT_, ST_>::SMEM + ((D_) <= FA2_MASK_MAX_D ? FA2_MASK_MAX_TC : 0) <= FA2_SMEM_CAP, \
                  "fa2-mma: shared memory (and a mask's class bytes) above sm_86/89's 99 KiB opt-in limit (fa2_blocks.h)");
FA2_MMA_TABLE(FA2_ASSERT_ROW)
#undef FA2_ASSERT_ROW

template <int D, int BC, int MT, int STAGES, bool DEFER, bool SKIP, bool MFIRST, bool MASKED = false>
static void launch(const attn_problem_t *p, const void *q, const void *k, const void *v, float *o, float *L)
{
    using C = Cfg<D, BC, MT, STAGES>;
    /* MASKED: one class byte a K/V block past the tiles (FA2_MASK_MAX_TC of them at most) */
    const size_t smem = C::SMEM + (MASKED ? FA2_MASK_MAX_TC : 0);
    static bool attr_set = false;   /* more than 48 KiB of shared memory needs an opt-in */
    if (!attr_set) {
        CUDA_CHECK(cudaFuncSetAttribute(fa2_mma_kernel<D, BC, MT, STAGES, DEFER, SKIP, MFIRST, MASKED>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        attr_set = true;
    }
    const int Tr = (p->N_q + C::BR - 1) / C::BR, BH = p->B * p->H;
    const dim3 grid = MFIRST ? dim3(Tr, BH) : dim3(BH, Tr);
    /* FlashMask: the vectors (an input, uploaded once) and this launch's preprocessing pass */
    const int32_t *blk = MASKED ? mask_gpu_blocks(mask_gpu_runs(attn_mask(p)), p->N_kv, BC) : NULL;
    const int32_t *cols = MASKED ? mask_gpu_columns(attn_mask(p)) : NULL;
    const int32_t *order = MASKED ? mask_gpu_order(blk, p->N_q, p->N_kv, C::BR, BC) : NULL;
    fa2_mma_kernel<D, BC, MT, STAGES, DEFER, SKIP, MFIRST, MASKED><<<grid, THREADS_OF(D), smem>>>(
        *p, (const __half *)q, (const __half *)k, (const __half *)v, o, L, gpu_visits(Tr), cols, blk, order);
    CUDA_CHECK_LAUNCH();
}

/* The ladder's blocks per d (FA2_LADDER_BLOCKS, fa2_blocks.h), for launch_variant(). */
template <int D> struct LadderBlocks { static constexpr int MT = 1, BC = 16, ST = 2; };   /* unused */
#define FA2_LADDER_SPEC(D_, MT_, BC_, ST_)                                         \
    template <> struct LadderBlocks<D_> { static constexpr int MT = MT_, BC = BC_, ST = ST_; }; \
    static_assert(Cfg<D_, BC_, MT_, ST_>::SMEM <= SMEM_OPTIN_SM86, "fa2-mma: ladder blocks above 99 KiB");
FA2_LADDER_BLOCKS(FA2_LADDER_SPEC)
#undef FA2_LADDER_SPEC

/* LADDER = 0 (fa2_blocks.h): only the full kernel is built; every variant runs it. With
 * LADDER = 1 every variant but FULL runs at the ladder's blocks (fa2_mma_variant_blocks). */
template <int D, int BC, int MT, int STAGES, int LADDER>
static void launch_variant(const attn_problem_t *p, fa2_variant_t var, const void *q, const void *k,
                           const void *v, float *o, float *L)
{
    using LB = LadderBlocks<D>;
    if (!LADDER) var = FA2_FULL;
    switch (var) {
    case FA2_PERSTEP:  if constexpr (LADDER != 0) launch<D, LB::BC, LB::MT, LB::ST, false, true, true>(p, q, k, v, o, L); break;
    case FA2_DEFERRED: if constexpr (LADDER != 0) launch<D, LB::BC, LB::MT, LB::ST, true, true, true>(p, q, k, v, o, L); break;
    case FA2_NOSKIP:   if constexpr (LADDER != 0) launch<D, LB::BC, LB::MT, LB::ST, true, false, true>(p, q, k, v, o, L); break;
    case FA2_GRID_BH:  if constexpr (LADDER != 0) launch<D, LB::BC, LB::MT, LB::ST, true, true, false>(p, q, k, v, o, L); break;
    case FA2_FULL:   /* the one variant with a mask path */
        if constexpr (D <= FA2_MASK_MAX_D)
            if (attn_mask(p)) { launch<D, BC, MT, STAGES, true, true, true, true>(p, q, k, v, o, L); break; }
        launch<D, BC, MT, STAGES, true, true, true>(p, q, k, v, o, L);   /* (d = 256 with a mask: the driver says n/a) */
        break;
    }
}

extern "C" int fa2_mma_config(int d, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = "mma";
    c->threads = THREADS_OF(d);
    switch (d) {   /* the rows of FA2_MMA_TABLE; fa2_mma_blocks() reads the same */
#define FA2_CONFIG_ROW(D_, MT_, BC_, ST_, LADDER_) \
    case D_: c->blocks = fa2_mma_blocks(D_); c->smem_bytes = Cfg<D_, BC_, MT_, ST_>::SMEM; break;
    FA2_MMA_TABLE(FA2_CONFIG_ROW)
#undef FA2_CONFIG_ROW
    default:
        snprintf(why, len, "kernel mma is built for d = 32, 64, 128 and 256 (fa2_blocks.h), not d = %d (use --kernel simple)", d);
        return -1;
    }
    return fa1_config_fits(c, why, len);
}

extern "C" void fa2_mma_launch(const attn_problem_t *p, fa2_variant_t var, const void *q,
                               const void *k, const void *v, float *o, float *L)
{
    switch (p->d) {   /* the blocks of fa2_mma_blocks() */
#define FA2_LAUNCH_ROW(D_, MT_, BC_, ST_, LADDER_) \
    case D_: launch_variant<D_, BC_, MT_, ST_, LADDER_>(p, var, q, k, v, o, L); break;
    FA2_MMA_TABLE(FA2_LAUNCH_ROW)
#undef FA2_LAUNCH_ROW
    default: break;   /* fa2_mma_config() said -1; the driver never gets here */
    }
}
