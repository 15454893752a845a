/* fa2_mma_kernel.cuh - fa2-mma's device code (fa2_mma.cu says what it runs and launches it):
 * the blocks (Cfg), the steps of FA2's Alg. 1 as small functions, and the kernel whose main
 * loop calls them line by line. The CPU emulator (tools/mma_emu, fa2_mask_emu.cpp) includes
 * this header as it is, after its stand-ins for mma.cuh and the warp collectives; it names
 * the block's shared memory through FA2_MMA_SMEM.
 *
 *   step (Alg. 1)          function
 *   which Q block          q_block_of()           the launch order (longest first)
 *   the K/V range          causal_n_blocks()      causal; KvBlocks, classify_tiles(): a mask
 *   l.4  Q_i               cp_async_tile() (mma.cuh); load_q_regs() (MT = 1)
 *   l.5  O~, m, l          init_rows()
 *   l.7  K_j, V_j          load_kv_tile()
 *   l.8  S = Q_i K_j^T     issue_s(), issue_s_pipelined() (d = 256)
 *        the mask          mask_keep_bits(), mask_s()
 *   l.9  m, P~, l          softmax_block(): row_max(), online_update()
 *   l.10 O~                rescale_o(), s_to_p(), issue_pv(); normalise_o() (FA1's way)
 *   l.12-13 O_i, L_i       finish_rows(); write_empty_rows() when no key is visible
 */
#ifndef PHASE4_FA2_MMA_KERNEL_CUH
#define PHASE4_FA2_MMA_KERNEL_CUH
#include <cuda_fp16.h>
#include <math.h>
#include "mma.cuh"
#include "visits.cuh"
#include "mask_gpu.h"
#include "fa2.h"

/* the block's dynamic shared memory (the emulator defines it as its host buffer) */
#ifndef FA2_MMA_SMEM
#define FA2_MMA_SMEM(name) extern __shared__ __align__(16) unsigned char name[]
#endif

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
    /* FlashMask: a partial tile's (or the tail block's) element test needs no S, so its bits
     * (mask_keep_bits) are computed first, their loads in flight while the S mma's run; but
     * for an S tile of more than 128 keys a thread (d = 64: 2 x 128) they would stay live
     * across the S mma's beside its 128 accumulators, and ptxas spills: there, after S */
    static constexpr bool BITS_BEFORE_S = MT * BC <= 128;
};

/* The Q block this thread block computes (i) and its head (bh). Causal: the longest Q
 * blocks (the last ones) first, so the short ones fill the tail. With a mask the lengths
 * follow the mask, not the row: morder (mask_gpu_order) lists the Q blocks longest first,
 * taken rank by rank across every head (mask_block_of). */
template <bool MASKED, bool MFIRST>
__device__ __forceinline__ void q_block_of(const attn_problem_t &p, int Tr, const int32_t *morder, int &i, int &bh)
{
    if (MASKED) {
        mask_block_of(blockIdx.x + blockIdx.y * gridDim.x, p.B * p.H, Tr, morder, &i, &bh);
    } else {
        const int mb = MFIRST ? blockIdx.x : blockIdx.y;
        bh = MFIRST ? blockIdx.y : blockIdx.x;
        i = p.causal ? Tr - 1 - mb : mb;
    }
}

/* The K/V blocks a causal Q block (first row i0) visits: 0 .. n_blocks - 1 (fa2_kv_blocks()
 * in fa2_cpu.c); row r sees keys <= r + shift. */
template <int BR, int BC>
__device__ __forceinline__ int causal_n_blocks(const attn_problem_t &p, int i0, int shift, int Tc)
{
    int n_blocks = Tc;
    /* TODO EXERCISE fa2.causal_range_mma: the K/V blocks a causal Q block must visit, in the mma kernel
     * HINT: fa2.causal_range for BR-row Q blocks (the first row is i0; the last may be a
     * HINT: tail at N_q) and BC-key blocks: set n_blocks, at most Tc, 0 when the block's
     * HINT: last row sees no key (the kernel then writes O = 0, L = +inf just below). */
    n_blocks = 0;
    /* END EXERCISE fa2.causal_range_mma */
    return n_blocks;
}

/* The K/V blocks a Q block visits in turn. Without a mask j + 1 after j. With one (MASKED)
 * only the blocks [q_first, q_end) can hold a visited tile (mask_q_range, from the order
 * pass), and their classes sit one byte a block in shared memory (classify_tiles): next()
 * is the next block not fully masked, Tc after the last. */
template <bool MASKED>
struct KvBlocks {
    const uint8_t *tile_class;
    int q_first, q_end, Tc;
    __device__ __forceinline__ int next(int j) const
    {
        if (MASKED) {
            for (j = max(j + 1, q_first); j < q_end && tile_class[j] == MASK_TILE_FULLY_MASKED; j++) {}
            if (j >= q_end) j = Tc;
        } else j++;
        return j;
    }
};

/* FlashMask: the class of each tile (i, j) of this Q block for j in [q_first, q_end), one
 * byte a K/V block in shared memory past the tiles (mask_tile_class_at on the preprocessing
 * pass's min/max), so that the loop reads a byte, not the 8 values (visit_all, the driver's
 * test of the counters: every tile visited, every element tested). Ends at a barrier. */
template <int BR, int BC, int THREADS>
__device__ __forceinline__ void classify_tiles(uint8_t *tile_class, const attn_problem_t &p, const int32_t *mblk,
                                               const gpu_visits_t &vis, int i0, int q_first, int q_end, int Tc)
{
    for (int jj = q_first + threadIdx.x; jj < q_end; jj += THREADS)
        tile_class[jj] = visit_all(vis) ? MASK_TILE_PARTIAL
                                        : mask_tile_class_at(mblk, Tc, i0, i0 + min(BR, p.N_q - i0), jj);
    __syncthreads();   /* every tile's class is in shared memory */
}

/* A Q block none of whose rows sees a key: O = 0, L = +inf (common/problem.h); 0 visits */
template <int D, int BR, int THREADS>
__device__ __forceinline__ void write_empty_rows(const attn_problem_t &p, float *O, float *L, int i0)
{
    for (int e = threadIdx.x; e < BR * D; e += THREADS)
        if (i0 + e / D < p.N_q) O[(size_t)i0 * D + e] = 0.0f;
    for (int r = threadIdx.x; r < BR; r += THREADS)
        if (i0 + r < p.N_q) L[i0 + r] = INFINITY;
}

/* K/V block j (BC rows of src, the tail past N_kv zeroed) into the shared buffer dst, by
 * cp.async (the caller commits the group) */
template <int D, int BC, int LDH, int THREADS>
__device__ __forceinline__ void load_kv_tile(__half *dst, const __half *src, int j, int N_kv)
{
    cp_async_tile<D, LDH, THREADS>(dst, src + (size_t)j * BC * D, BC, N_kv - j * BC);
}

/* MT = 1: the warp's 16 rows of Q_i as A fragments, from shared memory into registers */
template <int D, int LDH, int KK>
__device__ __forceinline__ void load_q_regs(uint32_t (&qf)[KK][4], const __half *Qs, int warp)
{
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
        load_a_16x16(qf[kk], Qs + warp * 16 * LDH + kk * 16, LDH);
}

/* O~ = 0, m = -inf, l = 0 for the thread's rows (Alg. 1 l.5) */
template <int D, int MT>
__device__ __forceinline__ void init_rows(float (&o)[MT][D / 8][4], float (&m_i)[MT][2], float (&l_i)[MT][2])
{
#pragma unroll
    for (int mtile = 0; mtile < MT; mtile++) {
        m_i[mtile][0] = m_i[mtile][1] = -INFINITY;
        l_i[mtile][0] = l_i[mtile][1] = 0.0f;
#pragma unroll
        for (int n = 0; n < D / 8; n++) o[mtile][n][0] = o[mtile][n][1] = o[mtile][n][2] = o[mtile][n][3] = 0.0f;
    }
}

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

/* S = 0, 16 MT rows x BC keys, in registers (BC/8 n-tiles) */
template <int BC, int MT>
__device__ __forceinline__ void zero_s(float (&s)[MT][BC / 8][4])
{
#pragma unroll
    for (int mtile = 0; mtile < MT; mtile++)
#pragma unroll
        for (int n = 0; n < BC / 8; n++) s[mtile][n][0] = s[mtile][n][1] = s[mtile][n][2] = s[mtile][n][3] = 0.0f;
}

/* S += Q_i K_j^T, k16 slice by slice: Q_i from registers (QREG) or from shared memory (Qs),
 * K_j from shared memory, one K fragment for MT m-tiles. The k-loop stays a loop when Q_i
 * comes from shared memory and Bc >= 64: unrolled, ptxas hoists all its ldmatrix (48 at
 * d = 128) ahead of the mma's, and the fragments they fill no longer fit beside the 192
 * accumulators (spills). With Q_i in registers qf[kk] needs kk known at compile time: unrolled. */
template <int D, int BC, int MT, int LDH, bool QREG, int KK>
__device__ __forceinline__ void issue_s(float (&s)[MT][BC / 8][4], const uint32_t (&qf)[KK][4], const __half *Qs,
                                        const __half *Kj, int warp)
{
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
}

/* S += Q_i K_j^T at d = 256 (MT = 1, Q_i in shared memory): fragments of slice kk + 1 are
 * read from shared memory while slice kk's mma's run, two sets in turn (the loop stays
 * rolled, two slices an iteration). Without it each slice's mma's waited for their own
 * ldmatrix (ncu: short-scoreboard stalls, tensor pipe 40% busy against FA2's 52%). */
template <int D, int BC, int LDH>
__device__ __forceinline__ void issue_s_pipelined(float (&s)[1][BC / 8][4], const __half *Qs, const __half *Kj, int warp)
{
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
}

/* The mask on S: FlashMask's element test from its bits (MASKED: keep, mask_keep_bits), or
 * the causal rule and N_kv's tail (row r sees keys <= r + shift) */
template <int BC, int MT, bool MASKED>
__device__ __forceinline__ void mask_s(float (&s)[MT][BC / 8][4], const uint32_t (&keep)[MT][(BC + 31) / 32],
                                       int N_kv, bool causal, int j, int row0, int shift, int t)
{
    if (MASKED) {
#pragma unroll
        for (int mtile = 0; mtile < MT; mtile++)
#pragma unroll
            for (int n = 0; n < BC / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    if (!((keep[mtile][n / 8] >> (4 * (n % 8) + e)) & 1u)) s[mtile][n][e] = -INFINITY;
    } else {
#pragma unroll
        for (int mtile = 0; mtile < MT; mtile++)
#pragma unroll
            for (int n = 0; n < BC / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int row = row0 + 16 * mtile + 8 * (e / 2), col = j * BC + n * 8 + 2 * t + e % 2;
                    if (col >= N_kv || (causal && col > row + shift)) s[mtile][n][e] = -INFINITY;
                }
    }
}

/* m_new = max(m_old, rowmax S) of the thread's row x of m-tile mtile, over the quad */
template <int BC, int MT>
__device__ __forceinline__ float row_max(const float (&s)[MT][BC / 8][4], const float (&m_i)[MT][2], int mtile, int x)
{
    float mx = m_i[mtile][x];
#pragma unroll
    for (int n = 0; n < BC / 8; n++) mx = fmaxf(mx, fmaxf(s[mtile][n][2 * x], s[mtile][n][2 * x + 1]));
    /* TODO EXERCISE fa2.rowmax_mma: the row max over the quad (the 4 lanes that hold one row of S)
     * HINT: mx is the max over this thread's 2 BC/8 columns of the row (and the old m_i). The
     * HINT: row's other columns sit in the 3 other lanes of the quad (lanes 4g .. 4g + 3, the
     * HINT: mma accumulator layout, common/mma.cuh): two __shfl_xor_sync butterfly steps
     * HINT: give each of them the max of all four. */
    /* END EXERCISE fa2.rowmax_mma */
    return mx;
}

/* The online softmax of row x of m-tile mtile at its new max mx: alpha, P~ (over S) and l.
 * alpha = e^(scale (m_old - m_new)), with fa1_rescale()'s rule (fa1.h), as in the CPU
 * model: 0 while the row has seen no key (m_old = -inf; its O~ and l are 0 anyway).
 * Testing m_new gives the same values (m_new = -inf forces m_old = -inf, and a finite
 * m_new makes sfu_ex2(-inf) = 0) without keeping m_old live: testing m_old made the
 * d = 128 perstep variant spill on sm_90. */
template <int BC, int MT, bool DEFER>
__device__ __forceinline__ void online_update(float (&s)[MT][BC / 8][4], float (&m_i)[MT][2], float (&l_i)[MT][2],
                                              float (&alpha)[MT][2], int mtile, int x, float mx, float sl2)
{
    /* TODO EXERCISE fa2.online_mma: alpha, P~ and l of the thread's row (Alg. 1 l.9), with exp2
     * HINT: mx is the new max m_new (raw scores: exp(scale x) = 2^(sl2 x), sfu_ex2()); m_i the
     * HINT: old one. alpha = e^(scale (m_old - m_new)), 0 when m_new = -inf; P~ = e^(scale
     * HINT: (S - m_new)) into this thread's S registers s[mtile][n][2x], [2x + 1] (0 when
     * HINT: m_new = -inf); rs their sum. DEFER: l_i = alpha l_i + rs (this thread's part;
     * HINT: the quad's parts are added at the end). Otherwise (FA1's way) the quad's
     * HINT: rs first, l_i = l_new, and alpha times the old l un-normalises O. m_i = m_new. */
    alpha[mtile][x] = 1.0f; m_i[mtile][x] = mx; (void)sl2;
    /* END EXERCISE fa2.online_mma */
}

/* Alg. 1 l.9 for the thread's 2 MT rows: m_new over the quad, P~ = 2^(sl2 S - sl2 m_new)
 * in place of S, l and the factor alpha that brings O~ to the new max */
template <int BC, int MT, bool DEFER>
__device__ __forceinline__ void softmax_block(float (&s)[MT][BC / 8][4], float (&m_i)[MT][2], float (&l_i)[MT][2],
                                              float (&alpha)[MT][2], float sl2)
{
#pragma unroll
    for (int mtile = 0; mtile < MT; mtile++)
#pragma unroll
        for (int x = 0; x < 2; x++)
            online_update<BC, MT, DEFER>(s, m_i, l_i, alpha, mtile, x, row_max<BC, MT>(s, m_i, mtile, x), sl2);
}

/* O~ *= alpha, row by row (Alg. 1 l.10's diag(e^(m_old - m_new)) O~) */
template <int D, int MT>
__device__ __forceinline__ void rescale_o(float (&o)[MT][D / 8][4], const float (&alpha)[MT][2])
{
#pragma unroll
    for (int mtile = 0; mtile < MT; mtile++)
#pragma unroll
        for (int n = 0; n < D / 8; n++) {
            o[mtile][n][0] *= alpha[mtile][0]; o[mtile][n][1] *= alpha[mtile][0];
            o[mtile][n][2] *= alpha[mtile][1]; o[mtile][n][3] *= alpha[mtile][1];
        }
}

/* P~ from the S accumulators into A fragments (mma.cuh), all of it before the first mma of
 * P~ V_j: in fp16 it takes half the registers, and the fp32 S is dead before P~ V_j's
 * accumulators are touched (at d = 128, Bc = 64 that is 32 registers, the difference
 * between spilling and not) */
template <int BC, int MT>
__device__ __forceinline__ void s_to_p(uint32_t (&pf)[MT][BC / 16][4], const float (&s)[MT][BC / 8][4])
{
#pragma unroll
    for (int mtile = 0; mtile < MT; mtile++)
#pragma unroll
        for (int kk = 0; kk < BC / 16; kk++) c_pair_to_a(pf[mtile][kk], s[mtile][2 * kk], s[mtile][2 * kk + 1]);
}

/* O~ += P~ V_j, V_j through ldmatrix.trans, one V fragment for MT m-tiles */
template <int D, int BC, int MT, int LDH>
__device__ __forceinline__ void issue_pv(float (&o)[MT][D / 8][4], const uint32_t (&pf)[MT][BC / 16][4], const __half *Vj)
{
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
}

/* FA1's way (DEFER off): O divided by the new l at every step */
template <int D, int MT>
__device__ __forceinline__ void normalise_o(float (&o)[MT][D / 8][4], const float (&l_i)[MT][2])
{
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

/* Alg. 1 l.12-13: O_i = O~_i / l_i once; L_i = m_i + log(l_i) (+inf for a row that saw
 * nothing), for the thread's rows row0 + 16 mtile + 8 x */
template <int D, int MT, bool DEFER>
__device__ __forceinline__ void finish_rows(const attn_problem_t &p, float (&o)[MT][D / 8][4], const float (&m_i)[MT][2],
                                            float (&l_i)[MT][2], int row0, int t, float *O, float *L)
{
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
        /* END EXERCISE fa2.finish_mma */
    }
}

/* DEFER: O~ unnormalised, divided at the end (else normalised every step, as in FA1).
 * SKIP: causal blocks past the diagonal skipped and only diagonal/tail blocks masked
 * (else every block visited and, with a mask, every element masked).
 * MFIRST: blockIdx.x is the Q block (grid (num_m_blocks, B x H)); else the head.
 * MASKED: a FlashMask mask (common/mask.h, chapter 4c) instead of the causal rule: mcols its
 * four vectors a column at a time (int4), mblk the 8 per-block values of the preprocessing
 * pass (mask_gpu.cu). Each tile (Q block i, K/V block j) is classified from mblk: fully
 * masked tiles are skipped (K_j, V_j not loaded), partial ones test each element, unmasked
 * ones run the plain loop. */
template <int D, int BC, int MT, int STAGES, bool DEFER, bool SKIP, bool MFIRST, bool MASKED>
__global__ void __launch_bounds__(THREADS_OF(D), 8 / FA2_WARPS_OF(D))   /* 8 warps an SM */
fa2_mma_kernel(attn_problem_t p, const __half *Qg, const __half *Kg, const __half *Vg,
               float *Og, float *Lg, gpu_visits_t vis, const int32_t *mcols, const int32_t *mblk,
               const int32_t *morder)
{
    using C = Cfg<D, BC, MT, STAGES>;
    constexpr int LDH = C::LDH, BR = C::BR, THREADS = THREADS_OF(D);
    constexpr bool QREG = MT == 1 && D <= 128;   /* d = 256: 64 more registers would spill */
    constexpr bool PIPE_S = !QREG && MT == 1 && BC >= 64;   /* d = 256 (issue_s_pipelined) */
    FA2_MMA_SMEM(smem);
    __half *Qs = (__half *)(smem + C::Q_OFF);
    __half *Ks = (__half *)(smem + C::K_OFF), *Vs = (__half *)(smem + C::V_OFF);

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const int Tr = (p.N_q + BR - 1) / BR, Tc = (p.N_kv + BC - 1) / BC;
    int i, bh;
    q_block_of<MASKED, MFIRST>(p, Tr, morder, i, bh);
    const int b = bh / p.H, h = bh % p.H;
    const __half *Q = Qg + attn_q_offset(&p, b, h) + (size_t)i * BR * D;
    const __half *K = Kg + attn_kv_offset(&p, b, h), *V = Vg + attn_kv_offset(&p, b, h);
    float *O = Og + attn_q_offset(&p, b, h), *L = Lg + attn_l_offset(&p, b, h);
    const int i0 = i * BR, shift = p.N_kv - p.N_q;   /* row r sees keys <= r + shift */
    const float sl2 = p.scale * 1.4426950408889634f; /* exp(scale x) = 2^(sl2 x)      */

    /* the K/V blocks this Q block visits (fa2_kv_blocks() in fa2_cpu.c) */
    int n_blocks = Tc;
    if (SKIP && p.causal) n_blocks = causal_n_blocks<BR, BC>(p, i0, shift, Tc);
    KvBlocks<MASKED> kv = {smem + C::SMEM, 0, Tc, Tc};   /* a mask's classes past the tiles */
    if (MASKED && !visit_all(vis)) mask_q_range(morder, i, Tc, &kv.q_first, &kv.q_end);
    int j_first = 0;   /* the first K/V block visited: 0 but with a mask */
    if (MASKED) {
        classify_tiles<BR, BC, THREADS>(smem + C::SMEM, p, mblk, vis, i0, kv.q_first, kv.q_end, Tc);
        j_first = kv.next(-1);
        n_blocks = j_first < Tc;   /* 0: no tile to visit; the visits are counted in the loop below */
    }
    if (visit_all(vis)) n_blocks = Tc;
    /* this thread's rows: m-tile mtile (of MT), x = 0 / 1 -> row0 + 16 mtile + 8 x */
    const int row0 = i0 + warp * 16 * MT + g;
    if (n_blocks == 0) { write_empty_rows<D, BR, THREADS>(p, O, L, i0); return; }

    /* Alg. 1 l.4: Q_i, and the first K (and V) block, into shared memory */
    int j = j_first;
    cp_async_tile<D, LDH, THREADS>(Qs, Q, BR, p.N_q - i0);
    load_kv_tile<D, BC, LDH, THREADS>(Ks, K, j, p.N_kv);
    if (STAGES == 2) load_kv_tile<D, BC, LDH, THREADS>(Vs, V, j, p.N_kv);
    cp_async_commit();

    uint32_t qf[QREG ? D / 16 : 1][4];    /* MT = 1: Q_i's 16 rows as A fragments     */
    float o[MT][D / 8][4];                /* O~_i: 16 MT rows x D, fp32 accumulators  */
    float m_i[MT][2], l_i[MT][2];         /* m_i (raw-score row max), l_i (this thread's
                                             part of the row sum), rows g and g + 8  */
    init_rows<D, MT>(o, m_i, l_i);        /* l.5 */

    /* The two pipelines (STAGES, fa2_blocks.h), per K/V block j:
     *   2:  wait K_j V_j | sync | load K_j+1 V_j+1 (other pair) | S, softmax, P~ V_j
     *   1:  wait K_j | sync | load V_j | S, softmax | wait V_j | sync | load K_j+1 | P~ V_j */
    const int j_end = MASKED ? Tc : n_blocks;   /* with a mask, kv.next() returns Tc after the last */
    int v = 0;
    for (; j < j_end; v++) {                    /* l.6: K/V block j, the v-th visited */
        const int jn = MASKED ? kv.next(j) : j + 1;   /* the next one */
        const int st = STAGES == 2 ? (MASKED ? v : j) % 2 : 0;
        cp_async_wait<0>();
        __syncthreads();   /* K_j (STAGES = 2: and V_j; and Q_i) landed and are visible to
                              every warp; every warp is done with block j - 1's buffers */
        if (QREG && (MASKED ? v : j) == 0) load_q_regs<D, LDH>(qf, Qs, warp);   /* the first block visited */
        if (STAGES == 1) {        /* l.7: V_j streams in while S_ij is computed */
            load_kv_tile<D, BC, LDH, THREADS>(Vs, V, j, p.N_kv);
            cp_async_commit();
        } else if (jn < j_end) {   /* l.7: the next block streams in while this one is computed */
            load_kv_tile<D, BC, LDH, THREADS>(Ks + (1 - st) * BC * LDH, K, jn, p.N_kv);
            load_kv_tile<D, BC, LDH, THREADS>(Vs + (1 - st) * BC * LDH, V, jn, p.N_kv);
            cp_async_commit();
        }
        const __half *Kj = Ks + st * BC * LDH, *Vj = Vs + st * BC * LDH;
        if (MASKED && warp == 0 && jn < j_end && kv.tile_class[jn] == MASK_TILE_PARTIAL)   /* the next element test's runs */
            mask_prefetch_columns<BC>(mcols, jn, p.N_kv, lane);

        const bool partial_tile = MASKED && ((long)(j + 1) * BC > p.N_kv || kv.tile_class[j] == MASK_TILE_PARTIAL);
        uint32_t keep[MT][(BC + 31) / 32];
        if (C::BITS_BEFORE_S && partial_tile) mask_keep_bits<BC, MT>(keep, j, row0, p.N_kv, t, reinterpret_cast<const int4 *>(mcols));

        float s[MT][BC / 8][4];                 /* l.8: S_ij = Q_i K_j^T */
        zero_s<BC, MT>(s);
        if constexpr (PIPE_S) issue_s_pipelined<D, BC, LDH>(s, Qs, Kj, warp);
        else issue_s<D, BC, MT, LDH, QREG>(s, qf, Qs, Kj, warp);
        /* the mask: with SKIP only on blocks that cross the diagonal or N_kv; with MASKED on
         * the partial tiles (and the tail block) */
        const long last_key = (long)(j + 1) * BC - 1;
        const bool mask = last_key >= p.N_kv || (MASKED ? kv.tile_class[j] == MASK_TILE_PARTIAL
                                                         : p.causal && (!SKIP || last_key > (long)i0 + shift));
        if (mask && MASKED && !C::BITS_BEFORE_S) mask_keep_bits<BC, MT>(keep, j, row0, p.N_kv, t, reinterpret_cast<const int4 *>(mcols));
        if (mask) mask_s<BC, MT, MASKED>(s, keep, p.N_kv, p.causal, j, row0, shift, t);

        float alpha[MT][2];
        softmax_block<BC, MT, DEFER>(s, m_i, l_i, alpha, sl2);   /* l.9: m_new, P~, l */
        rescale_o<D, MT>(o, alpha);             /* l.10: O~ brought to the new max ... */
        uint32_t pf[MT][BC / 16][4];
        s_to_p<BC, MT>(pf, s);
        if (STAGES == 1) {
            cp_async_wait<0>();
            __syncthreads();   /* V_j landed; every warp is done with K_j */
            if (jn < j_end) {   /* the next K streams in while P~ V_j is computed */
                load_kv_tile<D, BC, LDH, THREADS>(Ks, K, jn, p.N_kv);
                cp_async_commit();
            }
        }
        issue_pv<D, BC, MT, LDH>(o, pf, Vj);    /* ... and O~ += P~ V_j */
        if (!DEFER) normalise_o<D, MT>(o, l_i);
        j = jn;
    }

    finish_rows<D, MT, DEFER>(p, o, m_i, l_i, row0, t, O, L);   /* l.12-13 */
    /* counted last, off the path to the first K/V block; the driver holds it to fa2_kv_blocks() */
    if (threadIdx.x == 0) visit_count(vis, i, MASKED ? v : n_blocks);
}

#endif
