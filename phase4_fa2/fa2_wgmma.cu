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
 *
 * The ladder (STEP, one kernel template, one row each: build/phase4 --kernel wgmma):
 *   1  wgmma     the loads of chapter 4: every thread copies 16-byte chunks (cp.async),
 *                two K/V stages, a __syncthreads per block
 *   2  wgmma-tma the copy engine (TMA) loads Q_i and the K/V tiles: one thread issues a
 *                tile as boxes of 64 rows x 64 columns, already 128-byte swizzled; an
 *                mbarrier per ring slot says when its bytes have landed; STAGES slots
 *                (3 at d = 64, 2 at d = 128: the shared memory of 2 blocks a SM)
 *
 *        slot:      0        1        2
 *        tile:   K,V j    K,V j+1  K,V j+2       block j computed from slot j % STAGES,
 *        barrier: full[0]  full[1]  full[2]      waited with parity (j / STAGES) & 1;
 *                                                refilled with tile j + STAGES once every
 *                                                warp is done with it
 *   3  wgmma-ws, 4 wgmma-pingpong, 5 wgmma-overlap: a producer warpgroup and two consumer
 *                warpgroups (Br = 128), further down
 *   3m wgmma-ws with a FlashMask mask (chapter 4c): fully masked K/V blocks skipped, not
 *                loaded; the element test on partial tiles only
 *                                   build/phase4 --kernel wgmma-ws --mask sliding:1024
 *   6  wgmma-persist step 3 on a persistent grid: one CTA a SM, the tiles longest first,
 *                the K/V ring running on across tiles, Q_i's buffer handed back by a barrier
 *   7  wgmma-fp8   FlashAttention-3's FP8 on step 8's schedule (its own kernel, further down)
 *   8  wgmma-fa3order, 9 wgmma-fa3: FlashAttention-3's intra-warpgroup order, and pingpong on it
 *   10 wgmma-store step 8 with O staged in shared memory and written by TMA stores
 */
#include <cuda.h>        /* CUtensorMap and its enums (the encoder is fetched at run time) */
#include <cuda_fp16.h>
#include <math.h>
#include <string.h>
#include <stdio.h>
#include "cuda_check.cuh"
#include "mma.cuh"
#include "wgmma.cuh"
#include "visits.cuh"
#include "tma_map.cuh"   /* the tensor maps (host) */
#include "mask_gpu.h"    /* FlashMask's vectors and preprocessing pass (step 3's mask path) */
#include "fa2.h"
#include "fp8.h"         /* fp8_pad16: V^T's row length (step 7) */
#include "fp8_quant.h"   /* the pre-pass's tensors (step 7) */

#define WG_THREADS 128
/* threadIdx.x / WG_THREADS broadcast from lane 0: the same number, but one the compiler knows
 * is the same in every lane of the warp (CUTLASS's canonical_warp_group_idx). A consumer's
 * Q tile and its wgmma descriptors are computed from it, and so stay in uniform registers
 * instead of being built per lane and moved over (R2UR) before each wgmma. */
__device__ __forceinline__ int warpgroup_idx()
{
    return __shfl_sync(0xffffffffu, (int)(threadIdx.x / WG_THREADS), 0);
}
#define WG_BR 64
#define WG_BC 64
#define ATOM_BYTES (64 * 128)   /* 64 rows x 64 fp16: one swizzled 64-column half */

/* 64 rows of D columns: D / 64 atoms. A K/V block of BC keys is BC / 64 such tiles, one
 * after the other in shared memory (laid out as a Q tile is); S for it is BC / 64
 * accumulators of 64 x 64, s[sub] holding keys 64 sub .. 64 sub + 63 of the block. */
template <int D>
__host__ __device__ constexpr size_t tile64_bytes() { return (size_t)(D / 64) * ATOM_BYTES; }

template <int D, int STEP>
struct WgCfg {
    static constexpr int ATOMS = D / 64;                               /* per 64-row tile */
    static constexpr size_t TILE = tile64_bytes<D>();
    static constexpr int STAGES = STEP == 1 ? 2 : (D == 64 ? 3 : 2);   /* K/V ring slots */
    static constexpr size_t Q_OFF = 0, K_OFF = TILE, V_OFF = (1 + STAGES) * TILE;
    static constexpr size_t BAR_OFF = (1 + 2 * STAGES) * TILE;         /* STAGES + 1 mbarriers */
    static constexpr size_t SMEM = BAR_OFF + 8 * (STAGES + 1) + 1024;  /* + room to align */
};

/* What a launch needs, by value. The tensor maps (step 2) describe Q, K, V to the copy
 * engine as 3-D tensors [heads][rows][d]: a box of 64 x 64 stops at its head's last row
 * (the rest zero-filled), so tails need no care. Step 1 leaves them zero. */
struct WgArgs {
    attn_problem_t p;
    const __half *Q, *K, *V;
    float *O, *L;
    CUtensorMap tq, tk, tv;
    CUtensorMap to;               /* step 10: O (fp32) to the copy engine, boxes of 64 rows x 32 columns */
    gpu_visits_t vis;             /* counts[Q block] += the K/V blocks it visited */
    /* FlashMask (step 3's mask path, chapter 4c): the four vectors a column at a time and the
     * preprocessing pass's 8 min/max values a K/V block (common/mask_gpu.h); NULL without */
    const int4 *mcols;
    const int32_t *mblk;
    const int32_t *morder;        /* the Q blocks longest first (mask_gpu_order), NULL: last first */
    /* step 6 (persistent): a counter every launch takes its tiles from, never reset: this
     * launch's tile t is the grab that returned tile_base + t (launch() keeps the base) */
    unsigned long long *tile_ctr, tile_base;
    /* step 7 (FP8): Q, K, V^T in e4m3 (tq, tk, tv map them; fp8_quant.h's layouts) and their
     * tiles' scales: sq [B H][Tr] (Br = 128), sk, sv [B H_kv][Tc] (Bc = 128) */
    const float *sq, *sk, *sv;
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

#if FA_HAVE_WGMMA
/* What one warpgroup carries through the K/V loop for its 64 rows (Alg. 1's O~_i, m_i,
 * l_i): O~ as D / 64 wgmma accumulators of 64 x 64, and this thread's two rows' m and l.
 * m is kept in the exponent's units, m = max_j S_ij scale log2(e), so that a block whose S
 * carries its own factor (the FP8 step's scales) compares with the others. */
template <int D>
struct RowTile {
    float o[D / 64][32];
    float m[2], l[2];
    __device__ RowTile()
    {
        for (int a = 0; a < D / 64; a++)
            for (int e = 0; e < 32; e++) o[a][e] = 0.0f;
        m[0] = m[1] = -INFINITY;
        l[0] = l[1] = 0.0f;
    }
};

/* Pingpong (step 4): two consumer warpgroups take turns on the tensor cores. Before it
 * issues a product a warpgroup waits for its turn (named barrier `mine`: it completes when
 * the other warpgroup has arrived there); right after issuing it hands the turn over
 * (arrives at `theirs`) and goes on to wait for its result and run its softmax while
 * the other's product runs:
 *
 *   tensor cores:  S_j(A)  S_j(B)  PV_j(A)  PV_j(B)  S_j+1(A)  S_j+1(B)  ...
 *   WG A:         [S_j] softmax_j ......[PV_j] ...........[S_j+1] softmax_j+1 ...
 *   WG B:                [S_j] softmax_j ......[PV_j] ...........[S_j+1] ...
 *                 the turn passes each time a warpgroup has issued a product ([..])
 *
 * last_pv_hands_over = false drops the very last hand-over of the warpgroup that started
 * second, so that every wait has exactly one matching arrival. */
struct Turns {
    bool on;
    int mine, theirs;            /* named barrier ids */
    bool last_pv_hands_over;     /* for this block */
};

/* Step 9's turn, and the FP8 kernel's with FA2_FP8_PINGPONG: one turn for each issue group
 * of a warpgroup (S_0, the n_blocks - 1 pairs S_j + P~_(j-1) V_(j-1), the last P~ V), so
 * n_blocks + 1 each, taken on named barrier 1 + c and handed to the other's. Consumer 0
 * goes first; consumer 1 leaves out its last hand-over, so that every wait has exactly one
 * arrival and none is left at the block's end. on = false: every call does nothing. */
struct IterTurns {
    bool on;
    int c, left;                 /* this consumer; its hand-overs still to come */
    __device__ __forceinline__ IterTurns(bool on_, int c_, int n_blocks) : on(on_), c(c_), left(n_blocks + 1)
    {
        if (on && c == 1) named_bar_arrive(1, 2 * WG_THREADS);   /* consumer 0 goes first */
    }
    __device__ __forceinline__ void take() const { if (on) named_bar_sync(1 + c, 2 * WG_THREADS); }
    __device__ __forceinline__ void hand_over()
    {
        if (on && !(c == 1 && left == 1)) named_bar_arrive(1 + (1 - c), 2 * WG_THREADS);
        left--;
    }
};

/* The three parts of a K/V block for a warpgroup's 64 rows (Alg. 1, lines 8-10). */

/* S = Q_i K_j^T: D / 16 wgmma's per 64 keys, each a k16 slice (32 bytes further in its
 * atom); issued and committed as one group, not waited for */
template <int D, int BC>
__device__ __forceinline__ void issue_s(float (&s)[BC / 64][32], const unsigned char *Qt, const unsigned char *Kj)
{
    wgmma_fence();
#pragma unroll
    for (int sub = 0; sub < BC / 64; sub++)
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            const uint64_t dq = wgmma_desc_sw128(Qt + (kk / 4) * ATOM_BYTES, 16, 1024) + 2 * (kk % 4);
            const uint64_t dk = wgmma_desc_sw128(Kj + sub * tile64_bytes<D>() + (kk / 4) * ATOM_BYTES, 16, 1024) + 2 * (kk % 4);
            wgmma_m64n64k16_ss<0>(s[sub], dq, dk, kk > 0);
        }
    wgmma_commit();
}

/* FlashMask's element test on a partial tile (FlashMask Sec. 4; mask.h's mask_row_visible),
 * as one bit an S element: bit 4 n8 + 2 x + c of keep[sub] says whether row row0 + 8 x may
 * see key j Bc + 64 sub + 8 n8 + 2 t + c (a key past N_kv may not). A thread's 2 rows share
 * each of its columns, so one 16-byte load of the column's {LTS, LTE, UTS, UTE} serves both:
 *
 *            64 keys of s[sub]: thread t holds columns 8 n8 + 2t, + 1 (n8 = 0..7)
 *   row0     . . x x . . x x ...     s[sub][4 n8 + c]       (x: in a masked run)
 *   row0 + 8 . . . x . . x x ...     s[sub][4 n8 + 2 + c]
 *                  ^ one int4 a column: 16 loads a thread per 64 keys
 *
 * The bits need no S: attend_block computes them while the tensor cores compute S = Q K^T,
 * so the loads and the 4 comparisons an element (as many integer instructions as the
 * softmax's exp2 and max together) run under the product, and after the wait each element
 * costs one select (mask_apply). */
template <int BC>
__device__ __forceinline__ void mask_keep_bits(uint32_t (&keep)[BC / 64], int j, int row0, const attn_problem_t &p,
                                               int t, const int4 *mcols)
{
#pragma unroll
    for (int sub = 0; sub < BC / 64; sub++) {
        uint32_t bits = 0;
#pragma unroll
        for (int n8 = 0; n8 < 8; n8++)
#pragma unroll
            for (int c = 0; c < 2; c++) {
                const int col = j * BC + 64 * sub + 8 * n8 + 2 * t + c;
                if (col < p.N_kv) {
                    const int4 r = __ldg(mcols + col);
#pragma unroll
                    for (int x = 0; x < 2; x++)
                        bits |= (uint32_t)mask_row_visible(r.x, r.y, r.z, r.w, row0 + 8 * x) << (4 * n8 + 2 * x + c);
                }
            }
        keep[sub] = bits;
    }
}

/* S = -inf where mask_keep_bits said the row may not see the key */
template <int BC>
__device__ __forceinline__ void mask_apply(float (&s)[BC / 64][32], const uint32_t *keep)
{
#pragma unroll
    for (int sub = 0; sub < BC / 64; sub++)
#pragma unroll
        for (int e = 0; e < 32; e++)
            if (!((keep[sub] >> e) & 1u)) s[sub][e] = -INFINITY;
}

/* O~ *= the row's factor (alpha, and the FP8 step's change of V scale): this thread's rows
 * row0 (elements e % 4 < 2) and row0 + 8 */
template <int D>
__device__ __forceinline__ void rescale_o(RowTile<D> &st, const float (&o_scale)[2])
{
#pragma unroll
    for (int a = 0; a < D / 64; a++)
#pragma unroll
        for (int e = 0; e < 32; e++) st.o[a][e] *= o_scale[(e % 4) / 2];
}

/* the mask, the online softmax and the rescale of O~ for block j; s becomes P~ (fp32).
 * row0: this thread's first row (the other is row0 + 8); first_row: the tile's first row
 * (the mask test). sl2: what turns this block's S into the exponent's units (scale log2 e;
 * the FP8 step's also carries its tiles' scales). o_ratio: a factor on O~ beside alpha (the
 * FP8 step's change of V's scale). MASKED: FlashMask's mask instead of the causal rule,
 * applied from the keep bits (mask_keep_bits) on partial tiles (and a tail block) only,
 * test set; an unmasked tile does no mask work. FMA_EX2: of each 16 exponentials of a row's
 * 64-key share, this many by fma_ex2 (the FMA pipe) instead of the SFU (the FP8 step's). */
template <int D, bool SKIP, int BC, bool MASKED = false, int FMA_EX2 = 0>
__device__ __forceinline__ void softmax_block(RowTile<D> &st, float (&s)[BC / 64][32], int j, int row0, int first_row,
                                              const attn_problem_t &p, float sl2, int t, bool test = false,
                                              const uint32_t *keep = nullptr, float o_ratio = 1.0f,
                                              float *o_scale_later = nullptr)
{
    const int shift = p.N_kv - p.N_q;
    /* the mask, on the blocks that cross the diagonal or N_kv; s[sub][4 n8 + e] is row
     * row0 + 8 (e / 2), key j Bc + 64 sub + 8 n8 + 2 t + e % 2 (wgmma.cuh's picture) */
    const long last_key = (long)(j + 1) * BC - 1;
    if constexpr (MASKED) {
        if (test) mask_apply<BC>(s, keep);
    } else if (last_key >= p.N_kv || (p.causal && (!SKIP || last_key > (long)first_row + shift))) {
#pragma unroll
        for (int sub = 0; sub < BC / 64; sub++)
#pragma unroll
            for (int e = 0; e < 32; e++) {
                const int row = row0 + 8 * ((e % 4) / 2), col = j * BC + 64 * sub + (e / 4) * 8 + 2 * t + e % 2;
                if (col >= p.N_kv || (p.causal && col > row + shift)) s[sub][e] = -INFINITY;
            }
    }
    /* the online softmax (chapter 4's), for rows g and g + 8 of the warp: a row's BC keys
     * sit in the 4 lanes of a quad, BC / 4 each */
    float alpha[2];
#pragma unroll
    for (int x = 0; x < 2; x++) {
        float block_max = -INFINITY;
#pragma unroll
        for (int sub = 0; sub < BC / 64; sub++)
#pragma unroll
            for (int n8 = 0; n8 < 8; n8++) block_max = fmaxf(block_max, fmaxf(s[sub][4 * n8 + 2 * x], s[sub][4 * n8 + 2 * x + 1]));
#pragma unroll
        for (int quad_lane = 1; quad_lane < 4; quad_lane <<= 1)
            block_max = fmaxf(block_max, __shfl_xor_sync(0xffffffffu, block_max, quad_lane));
        const float row_max = fmaxf(st.m[x], sl2 * block_max);   /* sl2 > 0: the max of the scaled S */
        const bool no_key = row_max == -INFINITY;   /* the row has seen no key yet */
        alpha[x] = no_key ? 0.0f : sfu_ex2(st.m[x] - row_max);
        const float max_scaled = no_key ? 0.0f : row_max;
        st.m[x] = row_max;
        float part = 0.0f;   /* this thread's share of the row sum */
#pragma unroll
        for (int sub = 0; sub < BC / 64; sub++)
#pragma unroll
            for (int n8 = 0; n8 < 8; n8++)
#pragma unroll
                for (int c = 0; c < 2; c++) {
                    float &v = s[sub][4 * n8 + 2 * x + c];
                    const float e2 = fmaf(v, sl2, -max_scaled);
                    v = 2 * n8 + c < FMA_EX2 ? fma_ex2(e2) : sfu_ex2(e2);
                    part += v;
                }
        st.l[x] = fmaf(alpha[x], st.l[x], part);
    }
    const float o_scale[2] = { alpha[0] * o_ratio, alpha[1] * o_ratio };
    if (o_scale_later) {   /* O~ is still being written by a product in flight: the caller rescales it */
        o_scale_later[0] = o_scale[0];
        o_scale_later[1] = o_scale[1];
        return;
    }
    rescale_o<D>(st, o_scale);
}

/* P~ (fp32, block of BC keys) as fp16 A registers: k16 slice kk = keys 16 kk .. 16 kk + 15 */
template <int BC>
__device__ __forceinline__ void p_to_a_f16(uint32_t (&pa)[BC / 16][4], const float (&s)[BC / 64][32])
{
#pragma unroll
    for (int kk = 0; kk < BC / 16; kk++) c_pair_to_a(pa[kk], s[kk / 4] + 8 * (kk % 4), s[kk / 4] + 8 * (kk % 4) + 4);
}

/* O~ += P~ V_j: V_j transposed from shared memory, one wgmma per 64-column half of d and
 * k16 slice; issued and committed as one group, not waited for */
template <int D, int BC>
__device__ __forceinline__ void issue_pv(RowTile<D> &st, const uint32_t (&pa)[BC / 16][4], const unsigned char *Vj)
{
    wgmma_fence();
#pragma unroll
    for (int a = 0; a < D / 64; a++)
#pragma unroll
        for (int kk = 0; kk < BC / 16; kk++) {   /* 16 keys further: 2048 bytes, +128 */
            const unsigned char *v64 = Vj + (kk / 4) * tile64_bytes<D>() + a * ATOM_BYTES;   /* its 64-key tile */
            wgmma_m64n64k16_rs<1>(st.o[a], pa[kk], wgmma_desc_sw128(v64, ATOM_BYTES, 1024) + 128 * (kk % 4), 1);
        }
    wgmma_commit();
}

/* One K/V block, in order: S, softmax, P V, each product waited for (steps 1-4; with the
 * turns of step 4 around each product). MASKED, partial, mcols: softmax_block's. */
template <int D, bool SKIP, int BC, bool MASKED = false>
__device__ __forceinline__ void attend_block(RowTile<D> &st, const unsigned char *Qt, const unsigned char *Kj,
                                             const unsigned char *Vj, int j, int row0, int first_row,
                                             const attn_problem_t &p, float sl2, int t, const Turns &turn,
                                             bool partial = false, const int4 *mcols = nullptr)
{
    float s[BC / 64][32];
    uint32_t pa[BC / 16][4];
    uint32_t keep[BC / 64];   /* MASKED: the element test's bits */
    const bool test = MASKED && (partial || (long)(j + 1) * BC > p.N_kv);   /* a partial or tail tile */
    if (turn.on) named_bar_sync(turn.mine, 2 * WG_THREADS);
    issue_s<D, BC>(s, Qt, Kj);
    if (turn.on) named_bar_arrive(turn.theirs, 2 * WG_THREADS);
    if constexpr (MASKED)
        if (test) mask_keep_bits<BC>(keep, j, row0, p, t, mcols);   /* under the product S = Q K^T */
    wgmma_wait<0>();
    softmax_block<D, SKIP, BC, MASKED>(st, s, j, row0, first_row, p, sl2, t, test, keep);
    p_to_a_f16<BC>(pa, s);
    if (turn.on) named_bar_sync(turn.mine, 2 * WG_THREADS);
    issue_pv<D, BC>(st, pa, Vj);
    if (turn.on && turn.last_pv_hands_over) named_bar_arrive(turn.theirs, 2 * WG_THREADS);
    wgmma_wait<0>();
}

/* The K/V blocks a Q block of Br rows starting at row i0 visits: all Tc, or with the causal
 * skip up to the block holding the last key its last row may see (bottom-right diagonal);
 * 0 when even that row sees no key. */
template <bool SKIP>
__device__ __forceinline__ int visited_blocks(const attn_problem_t &p, int i0, int Br, int Bc, int Tc)
{
    if (!SKIP || !p.causal) return Tc;
    const long last_key = (long)min(p.N_q, i0 + Br) - 1 + (p.N_kv - p.N_q);
    return last_key < 0 ? 0 : (int)min((long)Tc, last_key / Bc + 1);
}

/* A Q block none of whose rows sees a key: O = 0, L = +inf (common/problem.h), written by
 * the block's `threads` threads; rows past N_q are padding. */
template <int D>
__device__ __forceinline__ void write_rows_without_keys(float *O, float *L, int i0, int Br, int N_q, int threads,
                                                        int tid)
{
    for (int e = tid; e < Br * D; e += threads)
        if (i0 + e / D < N_q) O[(size_t)i0 * D + e] = 0.0f;
    for (int r = tid; r < Br; r += threads)
        if (i0 + r < N_q) L[i0 + r] = INFINITY;
}
template <int D>
__device__ __forceinline__ void write_rows_without_keys(float *O, float *L, int i0, int Br, int N_q, int threads)
{
    write_rows_without_keys<D>(O, L, i0, Br, N_q, threads, (int)threadIdx.x);
}

/* This thread's row x: l, the quad's 4 shares summed (every lane joins the shuffles), and
 * from it L_i = m_i scale + log l (Alg. 1, line 13; +inf for a row that saw no key; m is kept
 * times log2 e: m ln 2). */
template <int D>
__device__ __forceinline__ float row_l(const RowTile<D> &st, int x)
{
    float l_row = st.l[x];
    l_row += __shfl_xor_sync(0xffffffffu, l_row, 1);
    l_row += __shfl_xor_sync(0xffffffffu, l_row, 2);
    return l_row;
}
template <int D>
__device__ __forceinline__ float row_lse(const RowTile<D> &st, int x, float l_row)
{
    return l_row > 0.0f ? fmaf(st.m[x], 0.6931471805599453f, logf(l_row)) : INFINITY;
}

/* Alg. 1, lines 12-13: O_i = O~ / l once, L_i (row_lse); rows past N_q (the last Q tile's
 * padding) are not written. o_factor: a factor on O (the FP8 step's last V scale). */
template <int D>
__device__ __forceinline__ void finish_rows(const RowTile<D> &st, float *O, float *L, int row0, const attn_problem_t &p, int t,
                                            float o_factor = 1.0f)
{
    constexpr int ATOMS = D / 64;
#pragma unroll
    for (int x = 0; x < 2; x++) {
        const float l_row = row_l<D>(st, x);
        const int row = row0 + 8 * x;
        if (row >= p.N_q) continue;   /* padding rows of the last Q block */
        const float scale_out = l_row > 0.0f ? o_factor / l_row : 0.0f;
        float *out = O + (size_t)row * D + 2 * t;
#pragma unroll
        for (int a = 0; a < ATOMS; a++)
#pragma unroll
            for (int n8 = 0; n8 < 8; n8++)
                *reinterpret_cast<float2 *>(out + a * 64 + n8 * 8) =
                    make_float2(scale_out * st.o[a][4 * n8 + 2 * x], scale_out * st.o[a][4 * n8 + 2 * x + 1]);
        if (t == 0) L[row] = row_lse<D>(st, x, l_row);
    }
}

/* Step 10: Alg. 1, lines 12-13 as finish_rows, but O leaves through shared memory and the
 * copy engine: the warpgroup writes O_i (fp32) into a 128-byte-swizzled staging tile, and one
 * thread stores it with cp.async.bulk.tensor, boxes of 64 rows x 32 columns (128 bytes, the
 * swizzle's row), as FlashAttention-3's epilogue does. The stage is the warpgroup's own Q
 * tile, free once its last S = Q K^T has landed: 64 rows x D fp16 hold half of O's 64 rows x
 * D fp32, so O goes in two halves of D / 2 columns:
 *
 *   stage (Q tile):  [box 0: cols 0-31][box 1: 32-63] ...       half 0: cols 0 .. D/2 - 1
 *                    written (fence, barrier), stored, read back (wait_group.read): half 1
 *
 * A thread's float2 at (row, col) goes to row * 128 + 4 (col % 32) in its box, its 16-byte
 * chunk XOR-ed with row % 8. A float2 store is done 16 lanes at a time (g = 0..3 or 4..7,
 * t = 0..3), and if every lane stored the same 8-column block n8, those 16 lanes would reach
 * 4 chunks only (t / 2 and g's low bit flip the same chunk bit), two lanes a bank: twice the
 * wavefronts. So lanes t = 2, 3 store block n8 ^ 2 while lanes t = 0, 1 store n8 (chunk bit 2
 * then differs between them), and the 16 lanes reach all 8 chunks:
 *
 *   chunk of lane (g, t) = (2 (n8' % 4) + t / 2) ^ g,   n8' = n8 ^ 2 (t / 2)
 *   bit 0 = t/2 ^ g0,  bit 1 = n8_0 ^ g1,  bit 2 = n8_1 ^ t/2 ^ g2:  8 distinct for 16 lanes
 *
 * Both blocks sit in one 32-column box. Rows past N_q are clipped by the copy engine (the
 * tensor map stops at N_q). bar_id: a named barrier for the warpgroup's 128 threads alone. */
template <int D>
__device__ __forceinline__ void finish_rows_via_smem(const RowTile<D> &st, unsigned char *stage, const CUtensorMap *to,
                                                     float *L, int row0, int first_row, int head, const attn_problem_t &p,
                                                     int t, int bar_id)
{
    constexpr int ATOMS = D / 64, HALF = D / 2, BOX_BYTES = 64 * 128;
    const int tid = threadIdx.x % WG_THREADS, r_local = row0 - first_row;   /* 16 warp + g */
    const bool other = t >= 2;   /* this lane stores block n8 ^ 2 when the others store n8 */
    float scale_out[2];
#pragma unroll
    for (int x = 0; x < 2; x++) {
        const float l_row = row_l<D>(st, x);
        scale_out[x] = l_row > 0.0f ? 1.0f / l_row : 0.0f;
        if (t == 0 && row0 + 8 * x < p.N_q) L[row0 + 8 * x] = row_lse<D>(st, x, l_row);
    }
#pragma unroll
    for (int half = 0; half < 2; half++) {
        if (half == 1) named_bar_sync(bar_id, WG_THREADS);   /* the store of half 0 has read the stage */
#pragma unroll
        for (int a = 0; a < ATOMS; a++)
#pragma unroll
            for (int n8 = 0; n8 < 8; n8++) {
                if ((a * 64 + n8 * 8) / HALF != half) continue;   /* known at compile time (n8 ^ 2: the same box) */
                const int mine = other ? n8 ^ 2 : n8;
#pragma unroll
                for (int x = 0; x < 2; x++) {
                    const int r = r_local + 8 * x, c = (a * 64 + mine * 8 + 2 * t) % HALF;
                    const uint32_t lin = (uint32_t)((c / 32) * BOX_BYTES + r * 128 + 4 * (c % 32));
                    /* registers picked by a select, never indexed at run time (that would go to local memory) */
                    const float v0 = other ? st.o[a][4 * (n8 ^ 2) + 2 * x] : st.o[a][4 * n8 + 2 * x];
                    const float v1 = other ? st.o[a][4 * (n8 ^ 2) + 2 * x + 1] : st.o[a][4 * n8 + 2 * x + 1];
                    *reinterpret_cast<float2 *>(stage + (lin ^ ((lin >> 7 & 7) << 4))) =
                        make_float2(scale_out[x] * v0, scale_out[x] * v1);
                }
            }
        fence_proxy_async();                  /* the stores above, seen by the copy engine */
        named_bar_sync(bar_id, WG_THREADS);   /* every thread's share written */
        if (tid == 0) {
            for (int box = 0; box < HALF / 32; box++)
                tma_store_3d(to, stage + box * BOX_BYTES, half * HALF + 32 * box, first_row, head);
            bulk_commit();
            bulk_wait_read<0>();              /* the stage may be written again (and freed at the exit) */
        }
    }
}
#endif

/* SKIP: causal K/V blocks past the diagonal skipped, the mask only where needed. */
template <int D, bool SKIP, int STEP>
__global__ void __launch_bounds__(WG_THREADS)
fa2_wgmma_kernel(const __grid_constant__ WgArgs args)
{
#if FA_HAVE_WGMMA
    using C = WgCfg<D, STEP>;
    const attn_problem_t &p = args.p;
    extern __shared__ unsigned char smem_raw[];
    /* the 128-byte swizzle is applied to address bits 4-9: atoms must be 1024-aligned */
    unsigned char *smem = (unsigned char *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    unsigned char *Qs = smem + C::Q_OFF, *Ks = smem + C::K_OFF, *Vs = smem + C::V_OFF;
    uint64_t *full = (uint64_t *)(smem + C::BAR_OFF);   /* [STAGES]: K/V slot landed; [STAGES]: Q_i */

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const int Tr = (p.N_q + WG_BR - 1) / WG_BR, Tc = (p.N_kv + WG_BC - 1) / WG_BC;
    const int i = p.causal ? Tr - 1 - (int)blockIdx.x : (int)blockIdx.x;   /* longest first */
    const int b = blockIdx.y / p.H, h = blockIdx.y % p.H;
    const int kv_head = b * p.H_kv + attn_kv_head(&p, h);   /* the tensor maps' outer index */
    const __half *Q = args.Q + attn_q_offset(&p, b, h) + (size_t)i * WG_BR * D;
    const __half *K = args.K + attn_kv_offset(&p, b, h), *V = args.V + attn_kv_offset(&p, b, h);
    float *O = args.O + attn_q_offset(&p, b, h), *L = args.L + attn_l_offset(&p, b, h);
    const int i0 = i * WG_BR;
    const float sl2 = p.scale * 1.4426950408889634f;

    const int n_blocks = visit_all(args.vis) ? Tc : visited_blocks<SKIP>(p, i0, WG_BR, WG_BC, Tc);   /* the causal range, as fa2-mma's */
    if (threadIdx.x == 0) visit_count(args.vis, i, n_blocks);   /* the driver holds it to fa2_kv_blocks() */
    const int row0 = i0 + warp * 16 + g;   /* this thread's rows: row0, row0 + 8 */
    if (n_blocks == 0) {
        write_rows_without_keys<D>(O, L, i0, WG_BR, p.N_q, WG_THREADS);
        return;
    }

    /* step 2: K_j and V_j of block jj into ring slot st, by the copy engine (one thread) */
    auto issue_kv = [&](int jj, int st) {
        mbar_arrive_expect_tx(full + st, 2 * (uint32_t)C::TILE);
#pragma unroll
        for (int a = 0; a < C::ATOMS; a++) {
            tma_load_3d(Ks + st * C::TILE + a * ATOM_BYTES, &args.tk, full + st, 64 * a, jj * WG_BC, kv_head);
            tma_load_3d(Vs + st * C::TILE + a * ATOM_BYTES, &args.tv, full + st, 64 * a, jj * WG_BC, kv_head);
        }
    };
    if (STEP == 1) {
        load_tile_sw<D>(Qs, Q, p.N_q - i0);
        load_tile_sw<D>(Ks, K, p.N_kv);
        load_tile_sw<D>(Vs, V, p.N_kv);
        cp_async_commit();
    } else {
        if (threadIdx.x == 0) {
            for (int st = 0; st <= C::STAGES; st++) mbar_init(full + st, 1);
            mbar_init_fence();
        }
        __syncthreads();   /* the barriers exist before anyone waits on them */
        if (threadIdx.x == 0) {   /* Q_i, then the first STAGES K/V blocks */
            mbar_arrive_expect_tx(full + C::STAGES, (uint32_t)C::TILE);
#pragma unroll
            for (int a = 0; a < C::ATOMS; a++)
                tma_load_3d(Qs + a * ATOM_BYTES, &args.tq, full + C::STAGES, 64 * a, i0, b * p.H + h);
            for (int st = 0; st < C::STAGES && st < n_blocks; st++) issue_kv(st, st);
        }
    }

    RowTile<D> tile;   /* this warpgroup's O~, m, l */

    for (int j = 0; j < n_blocks; j++) {
        const int st = j % C::STAGES;
        if (STEP == 1) {
            cp_async_wait<0>();
            fence_proxy_async();   /* the tiles were written by ordinary (cp.async) copies */
            __syncthreads();
            if (j + 1 < n_blocks) {   /* block j + 1 streams in while this one is computed */
                load_tile_sw<D>(Ks + (1 - st) * C::TILE, K + (size_t)(j + 1) * WG_BC * D, p.N_kv - (j + 1) * WG_BC);
                load_tile_sw<D>(Vs + (1 - st) * C::TILE, V + (size_t)(j + 1) * WG_BC * D, p.N_kv - (j + 1) * WG_BC);
                cp_async_commit();
            }
        } else {
            if (j == 0) mbar_wait(full + C::STAGES, 0);   /* Q_i */
            mbar_wait(full + st, (j / C::STAGES) & 1);     /* the slot's (j / STAGES)-th fill */
        }
        attend_block<D, SKIP, WG_BC>(tile, Qs, Ks + st * C::TILE, Vs + st * C::TILE, j, row0, i0, p, sl2, t, Turns{});
        if (STEP == 2) {
            __syncthreads();   /* every warp's wgmma's on slot st have completed: refill it */
            if (threadIdx.x == 0 && j + C::STAGES < n_blocks) issue_kv(j + C::STAGES, st);
        }
    }

    finish_rows<D>(tile, O, L, row0, p, t);
#else
    (void)args;
#endif
}

/* ---- steps 3 and 4: a producer warpgroup and two consumer warpgroups ------------------
 *
 *   warpgroup 0 (producer, registers given back: setmaxnreg.dec)  one thread issues TMA:
 *       Q_i (both consumers' 64-row halves), then K_j, V_j into slot j % STAGES once
 *       its `empty` barrier says both consumers are done with the slot's previous block
 *   warpgroups 1, 2 (consumers, registers taken: setmaxnreg.inc)  rows i0 .. i0 + 63 and
 *       i0 + 64 .. i0 + 127 of the Q block (Br = 128): wait `full`, attend, arrive `empty`
 *
 *          producer                       consumers (each of the 256 threads)
 *   wait empty[s] (parity u - 1)       wait full[s] (parity u = (j / STAGES) & 1)
 *   expect_tx full[s]; TMA K_j, V_j    attend_block(slot s)
 *                                      arrive empty[s]            (256 arrivals a phase)
 *
 * No __syncthreads in the loop: the copy of block j + STAGES - 1 overlaps the products of
 * block j without any thread waiting for it. PINGPONG adds step 4's turns (Turns).
 *
 * MASKED (step 3 only; build/phase4 --kernel wgmma-ws --mask sliding:1024): a FlashMask
 * mask (chapter 4c). Before the loop every thread classifies a share of this Q block's Tc
 * tiles from the preprocessing pass's min/max (FlashMask Sec. 4, mask_tile_class_at) into
 * one byte a K/V block past the barriers; then producer and consumers walk the same
 * sequence, the blocks not fully masked, the v-th of them in ring slot v % STAGES:
 *
 *   class bytes:  U U P F F F P U     (U unmasked, P partial, F fully masked)
 *   visited j:    0 1 2       6 7     v = 0 1 2 3 4: slots 0 1 2 0 1 (STAGES = 3)
 *
 * so the ring's parities count visited blocks, not j. A fully masked K/V block is never
 * loaded; a partial one gets the element test (mask_keep_bits, mask_apply), an unmasked one none. */
#define WS_CONSUMERS 2
#define WS_THREADS (WG_THREADS * (1 + WS_CONSUMERS))
#define WS_BR (64 * WS_CONSUMERS)
#define WS_PRODUCER_REGS 40    /* 128 x 40 + 256 x 232 = 64512 of the SM's 65536 */
#define WS_CONSUMER_REGS 232

template <int D, int BC>
struct WsCfg {
    static constexpr size_t Q_TILE = tile64_bytes<D>();                /* a consumer's 64 rows */
    static constexpr size_t TILE = (BC / 64) * tile64_bytes<D>();      /* a K or V block */
    /* ring slots: 4, or as many as fit the H100's 227 KiB beside Q_i (3 at d = 128, Bc = 128) */
    static constexpr int FIT = (int)((SMEM_OPTIN_SM90 - 2048 - WS_CONSUMERS * Q_TILE) / (2 * TILE));
    static constexpr int STAGES = FIT < 4 ? FIT : 4;
    static constexpr size_t Q_OFF = 0, K_OFF = WS_CONSUMERS * Q_TILE, V_OFF = K_OFF + STAGES * TILE;
    static constexpr size_t BAR_OFF = V_OFF + STAGES * TILE;           /* full, empty, Q */
    static constexpr size_t CLASS_OFF = BAR_OFF + 8 * (2 * STAGES + 1);   /* MASKED: a byte a K/V block */
    static constexpr size_t SMEM = CLASS_OFF + 1024;
    static constexpr size_t SMEM_MASKED = SMEM + FA2_WS_MASK_MAX_TC;
    static constexpr size_t SMEM_PERSIST = SMEM + 16;                  /* step 6: q_empty, the tile, at CLASS_OFF */
    static_assert(SMEM_PERSIST <= SMEM_OPTIN_SM90, "the persistent kernel's barriers do not fit");
    static_assert(STAGES >= 2 && SMEM <= SMEM_OPTIN_SM90, "the ring does not fit shared memory");
};

/* The warp-specialised kernels' shared memory (steps 3-6): Q_i's two halves, the K/V ring
 * and its barriers (WsCfg's layout), in the dynamic block aligned to the 1024 bytes the
 * 128-byte swizzle needs; and the producer's copy of one K/V block into a ring slot. */
template <int D, int BC>
struct WsRing {
    using C = WsCfg<D, BC>;
    unsigned char *base, *Q, *K, *V;
    uint64_t *full, *empty, *q_full;
    __device__ explicit WsRing(unsigned char *raw)
        : base((unsigned char *)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023)), Q(base + C::Q_OFF), K(base + C::K_OFF),
          V(base + C::V_OFF), full((uint64_t *)(base + C::BAR_OFF)), empty(full + C::STAGES), q_full(empty + C::STAGES) {}
#if FA_HAVE_WGMMA
    /* the ring's barriers and Q_i's: full (the producer's arrival + bytes), empty (every
     * consumer thread), q_full; one thread, before the block's barrier */
    __device__ __forceinline__ void init_barriers() const
    {
        for (int st = 0; st < C::STAGES; st++) {
            mbar_init(full + st, 1);
            mbar_init(empty + st, WS_CONSUMERS * WG_THREADS);
        }
        mbar_init(q_full, 1);
    }
    /* K_j, V_j of K/V head kv_head into slot st for its use-th fill, once both consumers are
     * done with the slot's previous block (its (use - 1)-th fill); one thread issues it */
    __device__ __forceinline__ void load_kv(const WgArgs &args, int j, int st, int use, int kv_head) const
    {
        constexpr int ATOMS = D / 64;
        if (use > 0) mbar_wait(empty + st, (use - 1) & 1);
        mbar_arrive_expect_tx(full + st, 2 * (uint32_t)C::TILE);
        for (int sub = 0; sub < BC / 64; sub++)   /* 64 keys a box */
            for (int a = 0; a < ATOMS; a++) {
                const size_t at = st * C::TILE + sub * C::Q_TILE + a * ATOM_BYTES;
                tma_load_3d(K + at, &args.tk, full + st, 64 * a, j * BC + 64 * sub, kv_head);
                tma_load_3d(V + at, &args.tv, full + st, 64 * a, j * BC + 64 * sub, kv_head);
            }
    }
#endif
};

/* The next K/V block a Q block visits after j: j + 1, or with a mask the next whose tile is
 * not fully masked, looked for in [first, end) alone (mask_q_range), Tc after the last. The
 * producer and the consumers both call it, on the same class bytes: they walk the same
 * blocks. */
template <bool MASKED>
__device__ __forceinline__ int next_kv_block(const uint8_t *tile_class, int j, int Tc, int first = 0, int end = 0)
{
    j++;
    if constexpr (MASKED) {
        if (j < first) j = first;
        while (j < end && tile_class[j] == MASK_TILE_FULLY_MASKED) j++;
        if (j >= end) j = Tc;
    }
    return j;
}

/* MODE: WS_PLAIN (step 3), WS_PINGPONG (step 4), WS_OVERLAP (step 5: on step 3, the next
 * block's S = Q K^T issued before this block's softmax), WS_FA3ORDER (step 8: FlashAttention-3's
 * intra-warpgroup overlap, the softmax under the last block's P~ V), WS_FA3 (step 9: step 8
 * with pingpong, one turn an iteration), WS_STORE (step 10: step 8 with O through shared memory
 * and one TMA store, finish_rows_via_smem) */
enum { WS_PLAIN = 0, WS_PINGPONG = 1, WS_OVERLAP = 2, WS_FA3ORDER = 3, WS_FA3 = 4, WS_STORE = 5 };
/* the ladder's step of a warp-specialised mode, and back */
__host__ __device__ constexpr int ws_mode_of_step(int step) { return step <= 5 ? step - 3 : step - 5; }

template <int D, bool SKIP, int MODE, int BC, bool MASKED = false>
__global__ void __launch_bounds__(WS_THREADS, 1)
fa2_wgmma_ws_kernel(const __grid_constant__ WgArgs args)
{
    static_assert(!MASKED || MODE == WS_PLAIN, "the mask path is step 3's (wgmma-ws)");
#if FA_HAVE_WGMMA
    using C = WsCfg<D, BC>;
    constexpr int ATOMS = D / 64;
    const attn_problem_t &p = args.p;
    extern __shared__ unsigned char smem_raw[];
    const WsRing<D, BC> ring(smem_raw);
    unsigned char *smem = ring.base, *Qs = ring.Q, *Ks = ring.K, *Vs = ring.V;
    uint64_t *full = ring.full, *empty = ring.empty, *q_full = ring.q_full;

    const int Tr = (p.N_q + WS_BR - 1) / WS_BR, Tc = (p.N_kv + BC - 1) / BC;
    /* longest first: causal, the last Q block first; with a mask, as fa2-mma, the order of
     * mask_gpu_order taken rank by rank across every head (mask_block_of) */
    int i = p.causal ? Tr - 1 - (int)blockIdx.x : (int)blockIdx.x, bh = blockIdx.y;
    if (MASKED) mask_block_of(blockIdx.x + blockIdx.y * gridDim.x, gridDim.y, Tr, args.morder, &i, &bh);
    const int b = bh / p.H, h = bh % p.H;
    const int kv_head = b * p.H_kv + attn_kv_head(&p, h);
    float *O = args.O + attn_q_offset(&p, b, h), *L = args.L + attn_l_offset(&p, b, h);
    const int i0 = i * WS_BR;
    uint8_t *tile_class = smem + C::CLASS_OFF;   /* MASKED: [Tc] */

    int n_blocks = Tc;   /* MASKED: unused (the class bytes say which blocks are visited) */
    int q_first = 0, q_end = Tc;   /* MASKED: the K/V blocks that may hold a visited tile (mask_q_range) */
    if constexpr (!MASKED) {
        n_blocks = visit_all(args.vis) ? Tc : visited_blocks<SKIP>(p, i0, WS_BR, BC, Tc);
        if (threadIdx.x == 0) visit_count(args.vis, i, n_blocks);   /* the producer's thread: it loads them */
        if (n_blocks == 0) {
            write_rows_without_keys<D>(O, L, i0, WS_BR, p.N_q, WS_THREADS);
            return;
        }
    } else {
        /* FlashMask Sec. 4: tile (i, j)'s class from column block j's 8 min/max, once (the
         * loop reads a byte). visit_all (the counters' test): every tile visited and tested */
        const int r1 = min(p.N_q, i0 + WS_BR);
        if (!visit_all(args.vis)) mask_q_range(args.morder, i, Tc, &q_first, &q_end);
        for (int jj = q_first + threadIdx.x; jj < q_end; jj += WS_THREADS)
            tile_class[jj] = visit_all(args.vis) ? MASK_TILE_PARTIAL : mask_tile_class_at(args.mblk, Tc, i0, r1, jj);
    }
    if (threadIdx.x == 0) {
        ring.init_barriers();
        mbar_init_fence();
    }
    __syncthreads();   /* the last block-wide barrier: from here on, only mbarriers (and the
                          class bytes, MASKED, are written) */
    if constexpr (MASKED) {
        if (next_kv_block<true>(tile_class, -1, Tc, q_first, q_end) == Tc) {   /* every tile fully masked: no visit */
            write_rows_without_keys<D>(O, L, i0, WS_BR, p.N_q, WS_THREADS);
            return;
        }
    }

    const int wg = warpgroup_idx();
    if (wg == 0) {   /* ---- producer ---- */
        setmaxnreg_dec<WS_PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            mbar_arrive_expect_tx(q_full, (uint32_t)(WS_CONSUMERS * C::Q_TILE));
            for (int c = 0; c < WS_CONSUMERS; c++)
                for (int a = 0; a < ATOMS; a++)
                    tma_load_3d(Qs + c * C::Q_TILE + a * ATOM_BYTES, &args.tq, q_full, 64 * a, i0 + 64 * c, b * p.H + h);
            /* the v-th block visited goes to ring slot v % STAGES, fill v / STAGES (v = j
             * without a mask) */
            auto load_kv = [&](int j, int st, int use) { ring.load_kv(args, j, st, use, kv_head); };
            if constexpr (MASKED) {
                int v = 0;
                for (int j = next_kv_block<true>(tile_class, -1, Tc, q_first, q_end); j < Tc;
                     j = next_kv_block<true>(tile_class, j, Tc, q_first, q_end), v++)
                    load_kv(j, v % C::STAGES, v / C::STAGES);
                visit_count(args.vis, i, v);   /* the blocks it loaded: the driver holds them to the census */
            } else {
                for (int j = 0; j < n_blocks; j++) load_kv(j, j % C::STAGES, j / C::STAGES);
            }
        }
        return;
    }
    /* ---- consumers ---- */
    setmaxnreg_inc<WS_CONSUMER_REGS>();
    const int c = wg - 1, lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4;
    const int g = lane / 4, t = lane % 4;
    const int first_row = i0 + 64 * c, row0 = first_row + 16 * warp + g;
    const float sl2 = p.scale * 1.4426950408889634f;
    const unsigned char *Qt = Qs + c * C::Q_TILE;
    RowTile<D> tile;
    mbar_wait(q_full, 0);
    if constexpr (MASKED) {   /* the producer's sequence: visit v in slot v % STAGES */
        int v = 0;
        auto next = [&](int j) { return __shfl_sync(0xffffffffu, next_kv_block<true>(tile_class, j, Tc, q_first, q_end), 0); };
        for (int j = next(-1), jn; j < Tc; j = jn, v++) {
            const int st = v % C::STAGES;
            jn = next(j);
            if (warp == 0 && jn < Tc && tile_class[jn] == MASK_TILE_PARTIAL)   /* the next element test's runs */
                mask_prefetch_columns<BC>(reinterpret_cast<const int32_t *>(args.mcols), jn, p.N_kv, lane);
            mbar_wait(full + st, (v / C::STAGES) & 1);
            const bool partial = __shfl_sync(0xffffffffu, tile_class[j], 0) == MASK_TILE_PARTIAL;
            attend_block<D, SKIP, BC, true>(tile, Qt, Ks + st * C::TILE, Vs + st * C::TILE, j, row0, first_row, p, sl2, t,
                                            Turns{}, partial, args.mcols);
            mbar_arrive(empty + st);
        }
    } else if (MODE == WS_PLAIN || MODE == WS_PINGPONG) {
        Turns turn{MODE == WS_PINGPONG, 1 + c, 1 + (1 - c), true};
        if (MODE == WS_PINGPONG && c == 1) named_bar_arrive(1, 2 * WG_THREADS);   /* consumer 0 goes first */
        for (int j = 0; j < n_blocks; j++) {
            const int st = j % C::STAGES;
            mbar_wait(full + st, (j / C::STAGES) & 1);
            turn.last_pv_hands_over = !(c == 1 && j == n_blocks - 1);
            attend_block<D, SKIP, BC>(tile, Qt, Ks + st * C::TILE, Vs + st * C::TILE, j, row0, first_row, p, sl2, t, turn);
            mbar_arrive(empty + st);
        }
    } else if constexpr (MODE == WS_OVERLAP) {
        /* step 5: while the special-function units run block j's softmax, the tensor cores
         * already compute S_{j+1} = Q K_{j+1}^T:
         *
         *   tensor cores:  S_0 | S_1 ......... | PV_0 S_2 ......... | PV_1 S_3 ...
         *   this warpgroup:     softmax_0 ....       softmax_1 ....
         *
         * two S accumulators (BC / 2 floats each) alternate; both products of an iteration
         * are waited for together at its end */
        float s_cur[BC / 64][32], s_next[BC / 64][32];
        uint32_t pa[BC / 16][4];
        mbar_wait(full, 0);
        issue_s<D, BC>(s_cur, Qt, Ks);
        wgmma_wait<0>();
        for (int j = 0; j < n_blocks; j++) {
            const int st = j % C::STAGES;
            if (j + 1 < n_blocks) {
                const int nx = (j + 1) % C::STAGES;
                mbar_wait(full + nx, ((j + 1) / C::STAGES) & 1);
                issue_s<D, BC>(s_next, Qt, Ks + nx * C::TILE);
            }
            softmax_block<D, SKIP, BC>(tile, s_cur, j, row0, first_row, p, sl2, t);
            p_to_a_f16<BC>(pa, s_cur);
            issue_pv<D, BC>(tile, pa, Vs + st * C::TILE);
            wgmma_wait<0>();
            for (int sub = 0; sub < BC / 64; sub++) wgmma_fence_regs(s_next[sub]);   /* written by the tensor cores up to the wait above */
            for (int a = 0; a < D / 64; a++) wgmma_fence_regs(tile.o[a]);
            mbar_arrive(empty + st);    /* K_j (read by S_j) and V_j are free */
#pragma unroll
            for (int sub = 0; sub < BC / 64; sub++)
#pragma unroll
                for (int e = 0; e < 32; e++) s_cur[sub][e] = s_next[sub][e];
        }
    } else {
        /* steps 8 and 9, FlashAttention-3's schedules (Shah et al., Sec. 3.1-3.2, Alg. 2).
         * Intra-warpgroup overlap in FA3's order: the next block's S and the last block's
         * P~ V are issued back to back, the warpgroup waits for S alone and runs the
         * softmax while P~ V is still on the tensor cores; O~'s rescale waits for P~ V:
         *
         *   tensor cores:  S_0 | S_1 PV_0 ........ | S_2 PV_1 ........ | ... PV_n-1
         *   this warpgroup:    softmax_0 |  softmax_1 .. O~*=a_1 |  softmax_2 .. O~*=a_2
         *
         * One S accumulator: its P~ is in the A registers (pa) before the next S is issued,
         * and pa is refilled only once the P~ V reading it has completed (step 5 instead
         * ran softmax_j under S_(j+1) and waited for both products together).
         *
         * Step 9 adds pingpong with one turn an iteration: a warpgroup issues its products
         * (S_j and P~_(j-1) V_(j-1), or S_0 alone, or the last P~ V alone) only in its turn,
         * and hands the turn over right after issuing them, so the other's products run
         * under its softmax:
         *
         *   tensor cores:  [S_1 PV_0](A) [S_1 PV_0](B) [S_2 PV_1](A) [S_2 PV_1](B) ...
         *   WG A:          issue | softmax_1 ...........| issue | softmax_2 ...
         *   WG B:                  issue | softmax_1 .........  | issue | ...
         *
         * (step 4 handed the turn over twice an iteration, around each product). Each
         * warpgroup takes n_blocks + 1 turns; the one that started second leaves out its
         * last hand-over, so that every wait has exactly one arrival. */
        IterTurns turns(MODE == WS_FA3, c, n_blocks);
        float s[BC / 64][32];
        uint32_t pa[BC / 16][4];
        mbar_wait(full, 0);
        turns.take();
        issue_s<D, BC>(s, Qt, Ks);
        turns.hand_over();
        wgmma_wait<0>();
        softmax_block<D, SKIP, BC>(tile, s, 0, row0, first_row, p, sl2, t);
        p_to_a_f16<BC>(pa, s);
        for (int j = 1; j < n_blocks; j++) {
            const int st = j % C::STAGES, prev = (j - 1) % C::STAGES;
            mbar_wait(full + st, (j / C::STAGES) & 1);
            turns.take();
            issue_s<D, BC>(s, Qt, Ks + st * C::TILE);       /* S_j */
            issue_pv<D, BC>(tile, pa, Vs + prev * C::TILE);  /* O~ += P~_(j-1) V_(j-1) */
            turns.hand_over();
            wgmma_wait<1>();                                 /* S_j landed; P~ V may still run */
            for (int sub = 0; sub < BC / 64; sub++) wgmma_fence_regs(s[sub]);
            float o_scale[2];
            softmax_block<D, SKIP, BC>(tile, s, j, row0, first_row, p, sl2, t, false, nullptr, 1.0f, o_scale);
            wgmma_wait<0>();                                 /* P~_(j-1) V_(j-1) landed */
            for (int a = 0; a < D / 64; a++) wgmma_fence_regs(tile.o[a]);
            mbar_arrive(empty + prev);                       /* K_(j-1) and V_(j-1) are free */
            rescale_o<D>(tile, o_scale);
            p_to_a_f16<BC>(pa, s);
        }
        const int last = (n_blocks - 1) % C::STAGES;
        turns.take();
        issue_pv<D, BC>(tile, pa, Vs + last * C::TILE);
        turns.hand_over();
        wgmma_wait<0>();
        for (int a = 0; a < D / 64; a++) wgmma_fence_regs(tile.o[a]);
        mbar_arrive(empty + last);
    }
    if constexpr (MODE == WS_STORE)   /* Q_i's tile is free: its last S landed (wgmma_wait above) */
        finish_rows_via_smem<D>(tile, Qs + c * C::Q_TILE, &args.to, L, row0, first_row, b * p.H + h, p, t, 3 + c);
    else
        finish_rows<D>(tile, O, L, row0, p, t);
#else
    (void)args;
#endif
}

/* ---- step 6: one persistent grid (wgmma-persist) ---------------------------------------
 *
 * Step 3 launches one CTA per (Q block, head); each pays its prologue (barriers, setmaxnreg,
 * Q_i's load, the ring's first fill) and the ring drains at its end. Here the grid is one
 * CTA a SM for the whole launch, and each CTA takes its next tile from a counter in global
 * memory (atomicAdd) when it is ready for one, as the hardware hands out step 3's CTAs, in
 * the same order: head by head, in a head the Q blocks longest first (causal: the last
 * first). A fixed share per CTA (k, k + grid, ...) measured 0.64x step 3's speed on a causal
 * N = 16384: the long tiles fell unevenly. Against step 3:
 *
 *   - the K/V ring runs on across tiles: the v-th block this CTA loads, counted over all its
 *     tiles, goes to slot v % STAGES, fill v / STAGES; the producer streams the next tile's
 *     first block while the consumers finish this tile's last;
 *   - Q_i gets a barrier pair of its own: q_full (the tile's number written, Q_i's bytes
 *     landed), q_empty (both consumers done with Q_i and the number); the producer takes the
 *     next tile and loads its Q_i once q_empty says so, while the consumers write O_i, L_i.
 *
 *          producer (one thread)                    consumers (256 threads)
 *   loop:                                      loop:
 *     t = next tile (atomicAdd)                  wait q_full (parity n); t = the shared number
 *     K_0, V_0 into the next slot (t's)          t past the list: stop
 *     wait q_empty (parity n - 1), n > 0         for each block: wait full[s], attend_block,
 *     write t; expect_tx q_full; TMA Q_i           arrive empty[s]        (s = v % STAGES)
 *     (t past the list: write it, arrive, stop)  arrive q_empty; O_i, L_i from registers
 *     for each further block: wait empty[s],
 *       TMA K_j, V_j
 *
 * n counts the tiles handed over; a tile whose rows see no key is handed over without
 * loads (its O = 0, L = +inf written by the consumers). */
template <int D, bool SKIP, int BC>
__global__ void __launch_bounds__(WS_THREADS, 1)
fa2_wgmma_persist_kernel(const __grid_constant__ WgArgs args)
{
#if FA_HAVE_WGMMA
    using C = WsCfg<D, BC>;
    constexpr int ATOMS = D / 64;
    const attn_problem_t &p = args.p;
    extern __shared__ unsigned char smem_raw[];
    const WsRing<D, BC> ring(smem_raw);
    unsigned char *Qs = ring.Q, *Ks = ring.K, *Vs = ring.V;
    uint64_t *full = ring.full, *empty = ring.empty, *q_full = ring.q_full;
    uint64_t *q_empty = (uint64_t *)(ring.base + C::CLASS_OFF);
    volatile int *tile_sh = (volatile int *)(ring.base + C::CLASS_OFF + 8);   /* the tile handed over */

    const int Tr = (p.N_q + WS_BR - 1) / WS_BR, Tc = (p.N_kv + BC - 1) / BC;
    const int n_tiles = Tr * p.B * p.H;
    /* tile t: head t / Tr, its Q block t % Tr (causal: the last first) */
    auto q_block_of = [&](int t) { const int r = t % Tr; return p.causal ? Tr - 1 - r : r; };
    auto blocks_of = [&](int i) { return visit_all(args.vis) ? Tc : visited_blocks<SKIP>(p, i * WS_BR, WS_BR, BC, Tc); };
    if (threadIdx.x == 0) {
        ring.init_barriers();
        mbar_init(q_empty, WS_CONSUMERS * WG_THREADS);
        mbar_init_fence();
    }
    __syncthreads();   /* the only block-wide barrier */

    const int wg = warpgroup_idx();
    if (wg == 0) {   /* ---- producer ---- */
        setmaxnreg_dec<WS_PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            int v = 0;   /* K/V blocks loaded so far */
            for (int n = 0;; n++) {   /* n: tiles handed over so far */
                const long long grab = (long long)(atomicAdd(args.tile_ctr, 1ull) - args.tile_base);
                const int t = grab < n_tiles ? (int)grab : n_tiles;   /* n_tiles: no tile left */
                const int i = t < n_tiles ? q_block_of(t) : 0, bh = t / Tr, b = bh / p.H, h = bh % p.H;
                const int kv_head = t < n_tiles ? b * p.H_kv + attn_kv_head(&p, h) : 0, i0 = i * WS_BR;
                const int n_blocks = t < n_tiles ? blocks_of(i) : 0;
                if (t < n_tiles) visit_count(args.vis, i, n_blocks);
                auto load_kv = [&](int j) {   /* block j into the ring's next slot, v++ */
                    ring.load_kv(args, j, v % C::STAGES, v / C::STAGES, kv_head);
                    v++;
                };
                /* the tile's first K/V block before its Q_i: its slot frees while the consumers
                 * still work on the last tile, Q_i's buffer only once they are done with it */
                if (n_blocks > 0) load_kv(0);
                if (n > 0) mbar_wait(q_empty, (n - 1) & 1);   /* both consumers done with the last tile */
                *tile_sh = t;
                if (n_blocks > 0) {
                    mbar_arrive_expect_tx(q_full, (uint32_t)(WS_CONSUMERS * C::Q_TILE));   /* releases the number too */
                    for (int c = 0; c < WS_CONSUMERS; c++)
                        for (int a = 0; a < ATOMS; a++)
                            tma_load_3d(Qs + c * C::Q_TILE + a * ATOM_BYTES, &args.tq, q_full, 64 * a, i0 + 64 * c, bh);
                } else {
                    mbar_arrive(q_full);   /* the number alone: no rows to load, or no tile left */
                }
                if (t >= n_tiles) break;
                for (int j = 1; j < n_blocks; j++) load_kv(j);
            }
        }
        return;
    }
    /* ---- consumers ---- */
    setmaxnreg_inc<WS_CONSUMER_REGS>();
    const int c = wg - 1, lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4;
    const int g = lane / 4, t4 = lane % 4;
    const float sl2 = p.scale * 1.4426950408889634f;
    const unsigned char *Qt = Qs + c * C::Q_TILE;
    int v = 0;
    for (int n = 0;; n++) {
        mbar_wait(q_full, n & 1);
        const int t = *tile_sh;
        if (t >= n_tiles) break;
        const int i = q_block_of(t), bh = t / Tr, b = bh / p.H, h = bh % p.H;
        const int i0 = i * WS_BR, n_blocks = blocks_of(i);
        float *O = args.O + attn_q_offset(&p, b, h), *L = args.L + attn_l_offset(&p, b, h);
        if (n_blocks == 0) {   /* no row of this Q block sees a key */
            mbar_arrive(q_empty);
            write_rows_without_keys<D>(O, L, i0, WS_BR, p.N_q, WS_CONSUMERS * WG_THREADS, (int)threadIdx.x - WG_THREADS);
            continue;
        }
        const int first_row = i0 + 64 * c, row0 = first_row + 16 * warp + g;
        RowTile<D> tile;
        for (int j = 0; j < n_blocks; j++, v++) {
            const int st = v % C::STAGES;
            mbar_wait(full + st, (v / C::STAGES) & 1);
            attend_block<D, SKIP, BC>(tile, Qt, Ks + st * C::TILE, Vs + st * C::TILE, j, row0, first_row, p, sl2, t4, Turns{});
            mbar_arrive(empty + st);
        }
        mbar_arrive(q_empty);   /* attend_block waited for its products: Q_i and the number are free */
        finish_rows<D>(tile, O, L, row0, p, t4);
    }
#else
    (void)args;
#endif
}

/* ---- step 7: FP8 (wgmma-fp8), FlashAttention-3 Sec. 3.3 --------------------------------
 *
 * Step 3 with e4m3 operands: the tensor cores run k32 e4m3 products at twice fp16's rate.
 * The pre-pass (fp8_quant.cu) has left Q M and K M (incoherent processing) and V in e4m3
 * with one scale a tile: Q's of Br = 128 rows (one Q block), K's and V's of Bc = 128 keys
 * (one K/V block). A tile's bytes are its values divided by its scale, so
 *
 *   S_ij  = (Q8_i K8_j^T) sq_i sk_j          the factor folded into softmax_block's sl2
 *   O~_i  = sum_j P~_ij (V8_j sv_j)          kept in units of the current block's sv_j:
 *                                            O~ *= alpha sv_(j-1) / sv_j before P~ V8_j
 *   O_i   = O~_i sv_last / l_i               (finish_rows' o_factor)
 *
 * P~ (fp32, <= 1) is rounded to e4m3 for the product, as FA3 does (no scale: e4m3 keeps
 * 2^-9 .. 1 with 3 bits), while l sums the fp32 P~, as the CPU model fa3_fp8.c does.
 *
 * LAYOUTS. 8-bit wgmma takes K-major operands only. Q and K are K-major as stored (d
 * contiguous). For O = P V the contraction runs over keys, so V is stored transposed: V^T
 * [d][N_kv_pad], keys contiguous (the pre-pass writes it, as it quantises V). A tile row is
 * 128 bytes either way: a d = 128 row of Q or K, or Bc = 128 keys of V^T, one swizzle atom
 * wide:
 *
 *   Q_i (a consumer's 64 rows)   K_j (128 keys)          V^T_j (d rows of 128 keys)
 *   64 x d bytes                 2 x [64 x d bytes]      d / 64 x [64 rows x 128 bytes]
 *   S = Q K^T: A = Q, B = K      (both k = d contiguous) O = P V: A = P (registers), B = V^T
 *
 * P's bytes. The S accumulator gives thread (g, t) of a warp, in a k32 slice of keys, the
 * columns 2t, 2t+1, 8+2t, 9+2t, 16+2t, 17+2t, 24+2t, 25+2t; the e4m3 A fragment wants k =
 * 4t..4t+3 and 16+4t..16+4t+3 (wgmma.cuh). Converting the accumulators four at a time in
 * their own order (p_to_a_e4m3) puts key perm(kappa) at k = kappa:
 *
 *   k (kappa):   0  1  2  3 |  4  5  6  7 | ... | 16 17 18 19 | 20 21 22 23 | ...
 *   key:         0  1  8  9 |  2  3 10 11 | ... | 16 17 24 25 | 18 19 26 27 | ...
 *                thread t = 0  thread t = 1        t = 0          t = 1
 *
 * and the pre-pass stores V^T's keys in that same order (fp8_quant.h), so P~ V needs no
 * shuffle of P: FA3 permutes P's bytes in registers instead, because its V arrives as is. */
#if FA_HAVE_WGMMA
template <int BC>
__device__ __forceinline__ void p_to_a_e4m3(uint32_t (&pa)[BC / 32][4], const float (&s)[BC / 64][32])
{
#pragma unroll
    for (int kk = 0; kk < BC / 32; kk++) {   /* keys 32 kk .. 32 kk + 31: n8 tiles 4 (kk % 2) .. + 3 of s[kk / 2] */
        const float *c = s[kk / 2] + 16 * (kk % 2);   /* c[4 n8 + e], n8 = 0..3 */
        pa[kk][0] = e4m3x4_pack(c[0], c[1], c[4], c[5]);       /* row g:     keys 2t, 2t+1, 8+2t, 9+2t */
        pa[kk][1] = e4m3x4_pack(c[2], c[3], c[6], c[7]);       /* row g + 8 */
        pa[kk][2] = e4m3x4_pack(c[8], c[9], c[12], c[13]);     /* row g:     keys 16+2t, .., 24+2t, 25+2t */
        pa[kk][3] = e4m3x4_pack(c[10], c[11], c[14], c[15]);   /* row g + 8 */
    }
}

/* S = Q_i K_j^T in e4m3: d / 32 k32 slices a 64-key half, 32 bytes further in the atom each */
template <int D, int BC>
__device__ __forceinline__ void issue_s_e4m3(float (&s)[BC / 64][32], const unsigned char *Qt, const unsigned char *Kj)
{
    constexpr size_t ROWS64 = (size_t)(D / 128) * ATOM_BYTES;   /* 64 rows of d bytes */
    wgmma_fence();
#pragma unroll
    for (int sub = 0; sub < BC / 64; sub++)
#pragma unroll
        for (int kk = 0; kk < D / 32; kk++) {
            const uint64_t dq = wgmma_desc_sw128(Qt + (kk / 4) * ATOM_BYTES, 16, 1024) + 2 * (kk % 4);
            const uint64_t dk = wgmma_desc_sw128(Kj + sub * ROWS64 + (kk / 4) * ATOM_BYTES, 16, 1024) + 2 * (kk % 4);
            wgmma_m64n64k32_e4m3_ss(s[sub], dq, dk, kk > 0);
        }
    wgmma_commit();
}

/* O~ += P~ V_j in e4m3: V^T_j's 64-row atom a gives O's columns 64 a .. 64 a + 63; k32 slice
 * kk is 32 keys, 32 bytes further in the atom's 128-byte rows */
template <int D, int BC>
__device__ __forceinline__ void issue_pv_e4m3(RowTile<D> &st, const uint32_t (&pa)[BC / 32][4], const unsigned char *Vt)
{
    static_assert(BC == 128, "a V^T row of the block is one 128-byte swizzle atom wide");
    wgmma_fence();
#pragma unroll
    for (int a = 0; a < D / 64; a++)
#pragma unroll
        for (int kk = 0; kk < BC / 32; kk++)
            wgmma_m64n64k32_e4m3_rs(st.o[a], pa[kk], wgmma_desc_sw128(Vt + a * ATOM_BYTES, 16, 1024) + 2 * kk, 1);
    wgmma_commit();
}

#endif

#define FP8_BC 128   /* the pre-pass's K/V tile: one scale a K/V block */
/* d = 256 holds O~ in 128 registers a thread beside S's 64: the consumers take 240 (the
 * producer, one thread issuing copies, keeps 24): 128 x 24 + 256 x 240 = 64512 */
#define FP8_PRODUCER_REGS 24
#define FP8_CONSUMER_REGS 240

template <int D, bool SKIP>
__global__ void __launch_bounds__(WS_THREADS, 1)
fa2_wgmma_fp8_kernel(const __grid_constant__ WgArgs args)
{
#if FA_HAVE_WGMMA
    constexpr int BC = FP8_BC;
    /* an e4m3 row of D is D / 2 fp16 columns wide in bytes: step 3's ring at half D */
    using R = WsRing<D / 2, BC>;
    using C = typename R::C;
    constexpr int ATOMS = D / 128;   /* 128-byte atoms a row of Q or K */
    const attn_problem_t &p = args.p;
    extern __shared__ unsigned char smem_raw[];
    const R ring(smem_raw);
    unsigned char *Qs = ring.Q, *Ks = ring.K, *Vs = ring.V;
    uint64_t *full = ring.full, *empty = ring.empty, *q_full = ring.q_full;

    const int Tr = (p.N_q + WS_BR - 1) / WS_BR, Tc = (p.N_kv + BC - 1) / BC;
    const int i = p.causal ? Tr - 1 - (int)blockIdx.x : (int)blockIdx.x, bh = blockIdx.y;   /* longest first */
    const int b = bh / p.H, h = bh % p.H;
    const int kv_head = b * p.H_kv + attn_kv_head(&p, h);
    float *O = args.O + attn_q_offset(&p, b, h), *L = args.L + attn_l_offset(&p, b, h);
    const int i0 = i * WS_BR;
    const int n_blocks = visit_all(args.vis) ? Tc : visited_blocks<SKIP>(p, i0, WS_BR, BC, Tc);
    if (threadIdx.x == 0) visit_count(args.vis, i, n_blocks);
    if (n_blocks == 0) {
        write_rows_without_keys<D>(O, L, i0, WS_BR, p.N_q, WS_THREADS);
        return;
    }
    if (threadIdx.x == 0) {
        ring.init_barriers();
        mbar_init_fence();
    }
    __syncthreads();

    const int wg = warpgroup_idx();
    if (wg == 0) {   /* ---- producer: step 3's, with the e4m3 boxes (128 bytes x 64 rows) ---- */
        setmaxnreg_dec<FP8_PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            mbar_arrive_expect_tx(q_full, (uint32_t)(WS_CONSUMERS * C::Q_TILE));
            for (int c = 0; c < WS_CONSUMERS; c++)
                for (int a = 0; a < ATOMS; a++)
                    tma_load_3d(Qs + c * C::Q_TILE + a * ATOM_BYTES, &args.tq, q_full, 128 * a, i0 + 64 * c, bh);
            for (int j = 0; j < n_blocks; j++) {
                const int st = j % C::STAGES, use = j / C::STAGES;
                if (use > 0) mbar_wait(empty + st, (use - 1) & 1);
                mbar_arrive_expect_tx(full + st, 2 * (uint32_t)C::TILE);
                for (int sub = 0; sub < BC / 64; sub++)   /* K_j: 64 keys x d bytes a box row group */
                    for (int a = 0; a < ATOMS; a++)
                        tma_load_3d(Ks + st * C::TILE + sub * C::Q_TILE + a * ATOM_BYTES, &args.tk, full + st, 128 * a,
                                    j * BC + 64 * sub, kv_head);
                for (int a = 0; a < D / 64; a++)           /* V^T_j: d rows of 128 keys, 64 rows a box */
                    tma_load_3d(Vs + st * C::TILE + a * ATOM_BYTES, &args.tv, full + st, j * BC, 64 * a, kv_head);
            }
        }
        return;
    }
    /* ---- consumers ---- */
    setmaxnreg_inc<FP8_CONSUMER_REGS>();
    const int c = wg - 1, lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4;
    const int g = lane / 4, t = lane % 4;
    const int first_row = i0 + 64 * c, row0 = first_row + 16 * warp + g;
    const float sl2_q = p.scale * 1.4426950408889634f * __ldg(args.sq + (size_t)bh * Tr + i);
    const float *sk = args.sk + (size_t)kv_head * Tc, *sv = args.sv + (size_t)kv_head * Tc;
    const unsigned char *Qt = Qs + c * C::Q_TILE;
    RowTile<D> tile;
    float sv_prev = __ldg(sv);   /* O~'s units: the last block's V scale */
    mbar_wait(q_full, 0);
    /* step 8's schedule (FlashAttention-3's order): S_j and P~_(j-1) V_(j-1) issued back to
     * back, the softmax of S_j under P~ V, O~'s rescale once P~ V has landed. At twice the
     * tensor rate the softmax is a larger share of an iteration than in fp16: this is where
     * hiding it pays most. */
    /* FA2_FP8_PINGPONG (fa2_blocks.h): step 9's turn on top, one a warpgroup's iteration, so
     * that one warpgroup's exp2 runs under the other's products (at d = 128 the SM's exp2
     * take as long as its FP8 products). n_blocks + 1 turns each; the warpgroup that starts
     * second leaves out its last hand-over. */
    IterTurns turns(FA2_FP8_PINGPONG != 0, c, n_blocks);
    float s[BC / 64][32];
    uint32_t pa[BC / 32][4];
    mbar_wait(full, 0);
    turns.take();
    issue_s_e4m3<D, BC>(s, Qt, Ks);
    turns.hand_over();
    wgmma_wait<0>();
    softmax_block<D, SKIP, BC, false, FA2_FP8_EXP2_FMA>(tile, s, 0, row0, first_row, p, sl2_q * __ldg(sk), t);
    p_to_a_e4m3<BC>(pa, s);
    for (int j = 1; j < n_blocks; j++) {
        const int st = j % C::STAGES, prev = (j - 1) % C::STAGES;
        const float sk_j = __ldg(sk + j), sv_j = __ldg(sv + j);   /* under the wait */
        mbar_wait(full + st, (j / C::STAGES) & 1);
        turns.take();
        issue_s_e4m3<D, BC>(s, Qt, Ks + st * C::TILE);      /* S_j */
        issue_pv_e4m3<D, BC>(tile, pa, Vs + prev * C::TILE);  /* O~ += P~_(j-1) V8_(j-1), units sv_(j-1) */
        turns.hand_over();
        wgmma_wait<1>();                                     /* S_j landed; P~ V may still run */
        for (int sub = 0; sub < BC / 64; sub++) wgmma_fence_regs(s[sub]);
        float o_scale[2];   /* alpha_j sv_(j-1) / sv_j: O~ into block j's units */
        softmax_block<D, SKIP, BC, false, FA2_FP8_EXP2_FMA>(tile, s, j, row0, first_row, p, sl2_q * sk_j, t, false, nullptr,
                                                            sv_prev / sv_j, o_scale);
        sv_prev = sv_j;
        wgmma_wait<0>();                                     /* P~_(j-1) V_(j-1) landed */
        for (int a = 0; a < D / 64; a++) wgmma_fence_regs(tile.o[a]);
        mbar_arrive(empty + prev);                           /* K_(j-1) and V_(j-1) are free */
        rescale_o<D>(tile, o_scale);
        p_to_a_e4m3<BC>(pa, s);
    }
    const int last = (n_blocks - 1) % C::STAGES;
    turns.take();
    issue_pv_e4m3<D, BC>(tile, pa, Vs + last * C::TILE);
    turns.hand_over();
    wgmma_wait<0>();
    for (int a = 0; a < D / 64; a++) wgmma_fence_regs(tile.o[a]);
    mbar_arrive(empty + last);
    finish_rows<D>(tile, O, L, row0, p, t, sv_prev);
#else
    (void)args;
#endif
}

/* ---- host side ------------------------------------------------------------------------ */

/* What differs between the steps, in one place: the kernel, its threads, Br, its shared
 * memory (steps 1-2: one warpgroup, Br = 64; steps 3-5: a producer and two consumers,
 * Br = 128). */
template <int D, int STEP>
struct Step {
    static constexpr bool WS = STEP >= 3;
    static constexpr int THREADS = WS ? WS_THREADS : WG_THREADS, BR = WS ? WS_BR : WG_BR;
    static constexpr int BC = WS ? FA2_WS_BC(D, ws_mode_of_step(STEP)) : WG_BC;
    static constexpr size_t SMEM = STEP == 6 ? WsCfg<D, BC>::SMEM_PERSIST : WS ? WsCfg<D, BC>::SMEM : WgCfg<D, WS ? 2 : STEP>::SMEM;
    static constexpr auto kernel()
    {
        if constexpr (STEP == 6) return fa2_wgmma_persist_kernel<D, true, BC>;
        else if constexpr (WS) return fa2_wgmma_ws_kernel<D, true, ws_mode_of_step(STEP), BC>;
        else return fa2_wgmma_kernel<D, true, STEP>;
    }
};

/* More than 48 KiB of shared memory a block needs an opt-in, once per kernel. */
template <typename Kernel>
static void smem_opt_in(Kernel kernel, size_t smem, bool &done)
{
    if (!done) {
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        done = true;
    }
}

template <int D, int STEP>
static void launch(const attn_problem_t *p, const void *q, const void *k, const void *v, float *o, float *L)
{
    using S = Step<D, STEP>;
    static bool attr_set = false;
    /* the tensor maps are encoded once per set of buffers and shapes, not in the timed loop */
    static WgArgs a;
    static bool have = false;
    if (!have || memcmp(&a.p, p, sizeof *p) != 0 || a.Q != q || a.K != k || a.V != v || a.O != o || a.L != L) {
        memset(&a, 0, sizeof a);
        a.p = *p;
        a.Q = (const __half *)q; a.K = (const __half *)k; a.V = (const __half *)v; a.O = o; a.L = L;
        if (STEP >= 2) {
            a.tq = tma_map_3d_f16(q, D, p->N_q, p->B * p->H, WG_BR, "fa2-wgmma");
            a.tk = tma_map_3d_f16(k, D, p->N_kv, p->B * p->H_kv, WG_BR, "fa2-wgmma");
            a.tv = tma_map_3d_f16(v, D, p->N_kv, p->B * p->H_kv, WG_BR, "fa2-wgmma");
        }
        if (STEP == 10)   /* O [heads][N_q][d] fp32, stored in boxes of 64 rows x 32 columns */
            a.to = tma_map_3d(o, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, D, p->N_q, p->B * p->H, 64, "fa2-wgmma");
        have = true;
    }
    const dim3 grid((p->N_q + S::BR - 1) / S::BR, p->B * p->H);
    a.vis = gpu_visits(grid.x);   /* every launch: the buffer may have grown */
    if constexpr (STEP == 3 && D == 256) {
        if (attn_mask(p)) {   /* the driver says n/a before this (FA2_WS_MASK_MAX_D) */
            fprintf(stderr, "fa2-wgmma-ws: no mask path at d = 256\n");
            exit(2);
        }
    } else if constexpr (STEP == 3) {
        if (attn_mask(p)) {   /* FlashMask: the vectors (uploaded once) and this launch's preprocessing pass */
            constexpr auto kernel = fa2_wgmma_ws_kernel<D, true, WS_PLAIN, S::BC, true>;
            constexpr size_t smem = WsCfg<D, S::BC>::SMEM_MASKED;
            static_assert(smem <= SMEM_OPTIN_SM90, "wgmma-ws: FA2_WS_MASK_MAX_TC class bytes do not fit beside the ring");
            static bool masked_attr_set = false;
            if ((p->N_kv + S::BC - 1) / S::BC > FA2_WS_MASK_MAX_TC) {   /* the driver says n/a before this */
                fprintf(stderr, "fa2-wgmma-ws: a mask over more than FA2_WS_MASK_MAX_TC K/V blocks\n");
                exit(2);
            }
            smem_opt_in(kernel, smem, masked_attr_set);
            a.mblk = mask_gpu_blocks(mask_gpu_runs(attn_mask(p)), p->N_kv, S::BC);
            a.mcols = reinterpret_cast<const int4 *>(mask_gpu_columns(attn_mask(p)));
            a.morder = mask_gpu_order(a.mblk, p->N_q, p->N_kv, WS_BR, S::BC);
            kernel<<<grid, S::THREADS, smem>>>(a);
            CUDA_CHECK_LAUNCH();
            return;
        }
    }
    smem_opt_in(S::kernel(), S::SMEM, attr_set);
    if constexpr (STEP == 6) {   /* one CTA a SM (the ring takes a SM's shared memory), none idle */
        static const int sms = gpu_sm_count();
        static unsigned long long *ctr = NULL, base = 0;   /* the tile counter, never reset */
        if (!ctr) {
            ctr = (unsigned long long *)gpu_malloc(sizeof *ctr);
            gpu_zero(ctr, sizeof *ctr);
        }
        const int tiles = (int)(grid.x * grid.y), ctas = tiles < sms ? tiles : sms;
        a.tile_ctr = ctr;
        a.tile_base = base;
        base += (unsigned long long)tiles + ctas;   /* this launch's grabs: every tile, and each CTA's last */
        S::kernel()<<<ctas, S::THREADS, S::SMEM>>>(a);
    } else {
        S::kernel()<<<grid, S::THREADS, S::SMEM>>>(a);
    }
    CUDA_CHECK_LAUNCH();
}

static const char *const STEP_NAME[] = {"", "wgmma", "wgmma-tma", "wgmma-ws", "wgmma-pingpong", "wgmma-overlap", "wgmma-persist",
                                        "wgmma-fp8", "wgmma-fa3order", "wgmma-fa3", "wgmma-store"};

template <int D, int STEP>
static void step_facts(gpu_kernel_config_t *c)
{
    c->threads = Step<D, STEP>::THREADS;
    c->blocks.Br = Step<D, STEP>::BR;
    c->blocks.Bc = Step<D, STEP>::BC;
    c->smem_bytes = Step<D, STEP>::SMEM;
}

template <int D>
static void step_facts(int step, gpu_kernel_config_t *c)
{
    if constexpr (D == 256) {   /* steps 3 and 6 alone (config says n/a for the others) */
        if (step == 3) step_facts<D, 3>(c);
        else if (step == 6) step_facts<D, 6>(c);
    } else {
        switch (step) {
        case 1: step_facts<D, 1>(c); break;
        case 2: step_facts<D, 2>(c); break;
        case 3: step_facts<D, 3>(c); break;
        case 4: step_facts<D, 4>(c); break;
        case 5: step_facts<D, 5>(c); break;
        case 6: step_facts<D, 6>(c); break;
        case 8: step_facts<D, 8>(c); break;
        case 9: step_facts<D, 9>(c); break;
        case 10: step_facts<D, 10>(c); break;
        }
    }
}

static int config(int d, int step, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = STEP_NAME[step];
    if (d == 64) step_facts<64>(step, c);
    else if (d == 128) step_facts<128>(step, c);
    else if (d == 256 && (step == 3 || step == 6)) step_facts<256>(step, c);
    else {
        snprintf(why, len, "kernel %s is built for d = 64 and 128%s, not d = %d", c->name,
                 step == 3 || step == 6 ? " and 256" : " (wgmma-ws and wgmma-persist also for 256)", d);
        return -1;
    }
    return gpu_config_fits(c, 1, why, len);   /* built for sm_90a alone */
}

extern "C" int fa2_wgmma_config(int d, gpu_kernel_config_t *c, char *why, size_t len) { return config(d, 1, c, why, len); }
extern "C" int fa2_wgmma_tma_config(int d, gpu_kernel_config_t *c, char *why, size_t len) { return config(d, 2, c, why, len); }
extern "C" int fa2_wgmma_ws_config(int d, gpu_kernel_config_t *c, char *why, size_t len) { return config(d, 3, c, why, len); }
extern "C" int fa2_wgmma_pingpong_config(int d, gpu_kernel_config_t *c, char *why, size_t len) { return config(d, 4, c, why, len); }
extern "C" int fa2_wgmma_overlap_config(int d, gpu_kernel_config_t *c, char *why, size_t len) { return config(d, 5, c, why, len); }
extern "C" int fa2_wgmma_persist_config(int d, gpu_kernel_config_t *c, char *why, size_t len) { return config(d, 6, c, why, len); }
extern "C" int fa2_wgmma_fa3order_config(int d, gpu_kernel_config_t *c, char *why, size_t len) { return config(d, 8, c, why, len); }
extern "C" int fa2_wgmma_fa3_config(int d, gpu_kernel_config_t *c, char *why, size_t len) { return config(d, 9, c, why, len); }
extern "C" int fa2_wgmma_store_config(int d, gpu_kernel_config_t *c, char *why, size_t len) { return config(d, 10, c, why, len); }

/* ---- step 7 (FP8): its own inputs, the pre-pass's e4m3 tensors and scales ---- */
template <int D>
static void launch_fp8(const attn_problem_t *p, const fp8_tensors_t *t, float *o, float *L)
{
    constexpr auto kernel = fa2_wgmma_fp8_kernel<D, true>;
    constexpr size_t smem = WsCfg<D / 2, FP8_BC>::SMEM;
    static bool attr_set = false;
    smem_opt_in(kernel, smem, attr_set);
    static WgArgs a;
    static const uint8_t *q8 = NULL, *k8 = NULL, *v8t = NULL;
    if (memcmp(&a.p, p, sizeof *p) != 0 || q8 != t->q8 || k8 != t->k8 || v8t != t->v8t) {   /* encoded once a set */
        memset(&a, 0, sizeof a);
        a.p = *p;
        q8 = t->q8; k8 = t->k8; v8t = t->v8t;
        a.tq = tma_map_3d_u8(q8, D, p->N_q, p->B * p->H, 64, "fa2-wgmma-fp8");
        a.tk = tma_map_3d_u8(k8, D, p->N_kv, p->B * p->H_kv, 64, "fa2-wgmma-fp8");
        a.tv = tma_map_3d_u8(v8t, fp8_pad16(p->N_kv), D, p->B * p->H_kv, 64, "fa2-wgmma-fp8");   /* [d][N_kv_pad] */
    }
    a.O = o; a.L = L;
    a.sq = t->sq; a.sk = t->sk; a.sv = t->sv;
    const dim3 grid((p->N_q + WS_BR - 1) / WS_BR, p->B * p->H);
    a.vis = gpu_visits(grid.x);
    kernel<<<grid, WS_THREADS, smem>>>(a);
    CUDA_CHECK_LAUNCH();
}

extern "C" int fa2_wgmma_fp8_config(int d, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = "wgmma-fp8";
    c->threads = WS_THREADS;
    c->blocks.Br = WS_BR;
    c->blocks.Bc = FP8_BC;
    if (d == 128) c->smem_bytes = WsCfg<64, FP8_BC>::SMEM;
    else if (d == 256) c->smem_bytes = WsCfg<128, FP8_BC>::SMEM;
    else {
        snprintf(why, len, "kernel wgmma-fp8 is built for d = 128 and 256 (a row of 128 bytes or two), not d = %d", d);
        return -1;
    }
    return gpu_config_fits(c, 1, why, len);   /* built for sm_90a alone */
}

extern "C" void fa2_wgmma_fp8_launch(const attn_problem_t *p, const fp8_tensors_t *t, float *o, float *L)
{
    if (p->d == 128) launch_fp8<128>(p, t, o, L);
    else if (p->d == 256) launch_fp8<256>(p, t, o, L);
}

/* A driver row's FP8 forward from the fp16 inputs: with quantise, the pre-pass first (Br =
 * Bc = 128, incoherent processing with FA2_FP8_SEED's signs, V^T written) into buffers kept
 * here for the next launch, then the kernel on them. */
extern "C" int fa2_wgmma_fp8_row_launch(const attn_problem_t *p, const void *q, const void *k, const void *v, float *o,
                                        float *L, bool quantise)
{
    static fp8_tensors_t t;
    static size_t have[7];   /* bytes held: q8, k8, v8, v8t, sq, sk, sv */
    static float *sign = NULL;
    static int sign_d = 0;
    const size_t nq = (size_t)p->B * p->H * p->N_q * p->d, nkv = (size_t)p->B * p->H_kv * p->N_kv * p->d;
    const size_t nvt = (size_t)p->B * p->H_kv * p->d * fp8_pad16(p->N_kv);
    const size_t nsq = (size_t)p->B * p->H * fp8_tiles(p->N_q, WS_BR), nskv = (size_t)p->B * p->H_kv * fp8_tiles(p->N_kv, FP8_BC);
    auto grow = [](void *&buf, size_t &held, size_t need) {   /* a buffer of at least need bytes */
        if (held >= need) return;
        if (buf) gpu_free(buf);
        buf = gpu_malloc(need);
        held = need;
    };
    if (quantise) {
        grow((void *&)t.q8, have[0], nq);
        grow((void *&)t.k8, have[1], nkv);
        grow((void *&)t.v8, have[2], nkv);
        grow((void *&)t.v8t, have[3], nvt);
        grow((void *&)t.sq, have[4], nsq * sizeof(float));
        grow((void *&)t.sk, have[5], nskv * sizeof(float));
        grow((void *&)t.sv, have[6], nskv * sizeof(float));
        if (sign_d != p->d) {
            float hs[256];
            fp8_signs(FA2_FP8_SEED, p->d, hs);
            if (sign) gpu_free(sign);
            sign = (float *)gpu_malloc(sizeof(float) * p->d);
            gpu_upload(sign, hs, sizeof(float) * p->d);
            sign_d = p->d;
        }
        if (fp8_quant_gpu(p, q, k, v, WS_BR, FP8_BC, true, sign, &t) != 0) return -1;
    }
    fa2_wgmma_fp8_launch(p, &t, o, L);
    return 0;
}

template <int D>
static void launch_step(const attn_problem_t *p, int step, const void *q, const void *k, const void *v, float *o, float *L)
{
    if constexpr (D == 256) {   /* steps 3 and 6 alone */
        if (step == 3) launch<D, 3>(p, q, k, v, o, L);
        else if (step == 6) launch<D, 6>(p, q, k, v, o, L);
    } else {
        switch (step) {
        case 1: launch<D, 1>(p, q, k, v, o, L); break;
        case 2: launch<D, 2>(p, q, k, v, o, L); break;
        case 3: launch<D, 3>(p, q, k, v, o, L); break;
        case 4: launch<D, 4>(p, q, k, v, o, L); break;
        case 5: launch<D, 5>(p, q, k, v, o, L); break;
        case 6: launch<D, 6>(p, q, k, v, o, L); break;
        case 8: launch<D, 8>(p, q, k, v, o, L); break;
        case 9: launch<D, 9>(p, q, k, v, o, L); break;
        case 10: launch<D, 10>(p, q, k, v, o, L); break;
        }
    }
}

extern "C" void fa2_wgmma_launch(const attn_problem_t *p, int step, const void *q, const void *k, const void *v,
                                 float *o, float *L)
{
    if (p->d == 64) launch_step<64>(p, step, q, k, v, o, L);
    else if (p->d == 128) launch_step<128>(p, step, q, k, v, o, L);
    else if (p->d == 256) launch_step<256>(p, step, q, k, v, o, L);
}
