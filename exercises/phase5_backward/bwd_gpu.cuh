/* bwd_gpu.cuh - what the backward kernels (bwd_simple.cu, bwd_mma.cu, bwd_mma2d.cu,
 * bwd_wgmma.cu) share on the device.
 *
 * The causal range of a K/V block, the mirror of phase 4's fa2_kv_blocks: with the
 * bottom-right mask (common/problem.h) row r sees key c iff c <= r + (N_kv - N_q), so
 * the rows that see ANY key of block j are those that see its FIRST key, j Bc:
 *
 *            keys ->   block j
 *          +-----------+-----+-------+
 *   rows   |  \ seen   |     |       |   Q blocks above `first` see none of block j:
 *     |    |    \      |     |       |   skipped, never loaded.
 *     v    |      \    |     |       |
 *  first ->|--------\--|-----|       |   the Q block holding row j Bc - (N_kv - N_q):
 *          |          \|xxxxx|       |   the first that must be visited (masked).
 *          |           |\xxxx|       |
 *          |           |  \xx|       |   below it every Q block is visited: the rows
 *          |           |    \|       |   only grow, so they see every key of block j
 *          +-----------+-----+-------+   (masked only on the diagonal and the tails).
 */
#ifndef PHASE5_BWD_GPU_CUH
#define PHASE5_BWD_GPU_CUH
#include "problem.h"
#include "mma.cuh"   /* cp_async_tile, cp_async4 (and __half) */

/* The block's dynamic shared memory, as a kernel declares it. tools/mma_emu defines it first,
 * as the emulated block's host buffer. */
#ifndef BWD_DYNAMIC_SMEM
#define BWD_DYNAMIC_SMEM(name) extern __shared__ __align__(16) unsigned char name[]
#endif

/* The first of the Q blocks [first, Tr) that K/V block j (keys j Bc ..) must visit, Tr =
 * ceil(N_q / Br): 0 without a mask; Tr when no row sees the block (its dK_j, dV_j are 0). */
__device__ __forceinline__ int bwd_first_q_block(const attn_problem_t &p, int j, int Br, int Bc)
{
    const int Tr = (p.N_q + Br - 1) / Br;
    if (!p.causal) return 0;
    /* TODO EXERCISE bwd.causal_range_gpu: the first Q block K/V block j must visit, on the GPU
     * HINT: as bwd.causal_range (bwd_cpu.c): the first row that sees key j Bc is
     * HINT: j Bc - (N_kv - N_q), at least 0; its Q block, or Tr when that row is past N_q.
     * HINT: Work in long: j Bc - (N_kv - N_q) may be negative. */
    (void)j; (void)Bc; (void)Tr; return 0;
    /* END EXERCISE bwd.causal_range_gpu */
}

/* The mirror image: the last K/V block any row of Q block i sees (-1: none; Tc - 1 without a
 * mask). K/V block j visits Q block i exactly when j <= bwd_last_kv_block(i), i.e. when
 * bwd_first_q_block(j) <= i: the last row of block i sees key j Bc. */
__device__ __forceinline__ int bwd_last_kv_block(const attn_problem_t &p, int i, int Br, int Bc)
{
    const int Tc = (p.N_kv + Bc - 1) / Bc;
    if (!p.causal) return Tc - 1;
    const long last_row = ((long)(i + 1) * Br < p.N_q ? (long)(i + 1) * Br : (long)p.N_q) - 1;
    const long last_key = last_row + (p.N_kv - p.N_q);
    if (last_key < 0) return -1;
    return last_key / Bc < Tc - 1 ? (int)(last_key / Bc) : Tc - 1;
}

/* Does Q block i x K/V block j hold an entry the mask hides: a key past N_kv, a row past
 * N_q (tail blocks), or, causal, a key right of the diagonal (its last key past its first
 * row's last visible key)? Only those blocks pay for the elementwise mask. */
__device__ __forceinline__ bool bwd_block_needs_mask(const attn_problem_t &p, int i, int j, int Br, int Bc)
{
    const long last_key = (long)(j + 1) * Bc - 1;
    return last_key >= p.N_kv || (long)(i + 1) * Br > p.N_q ||
           (p.causal && last_key > (long)i * Br + (p.N_kv - p.N_q));
}

/* The K/V block a K/V-outer thread block holds (mma, mma2d: grid (Tc, B x H_kv)): block j,
 * keys j0 = j Bc .., of KV head kvh of batch b; kv_off, that head's offset in K, V, dK, dV */
struct bwd_kv_block_t {
    int j, b, kvh, j0;
    size_t kv_off;
};
__device__ __forceinline__ bwd_kv_block_t bwd_kv_block(const attn_problem_t p, int Bc, int D)
{
    const int j = blockIdx.x, b = blockIdx.y / p.H_kv, kvh = blockIdx.y % p.H_kv;
    return {j, b, kvh, j * Bc, ((size_t)b * p.H_kv + kvh) * p.N_kv * D};
}

/* Alg. 2 l.8, the inner loop of a K/V-outer thread block (mma, mma2d, wgmma): under GQA the
 * G query heads of its KV head in turn, each over the Q blocks [first, Tr) its causal range
 * allows, or with a FlashMask mask over the Q blocks of its list (bwd_mask_q_blocks below).
 * Step st is (query head kvh G + st / per_head, Q block i = first + st % per_head, or the
 * list's entry st % per_head); l_off is its first row's offset in L and D, l_off d the same
 * in Q, dO and dQ. */
#define BWD_MASK_PARTIAL 0x8000u   /* a list entry's flag: the tile is partial (element test) */
struct bwd_steps_t {
    int first, per_head, count;   /* count = G per_head: the steps, and the visits counted */
    size_t head0;                 /* (b H + kvh G) N_q: the first query head's rows       */
    int N_q;
    const uint16_t *list;         /* FlashMask: the visited Q blocks (shared memory), or NULL */
    __device__ __forceinline__ void at(int st, int Br, int &i, size_t &l_off) const
    {
        const int k = st % per_head;
        i = list ? (int)(list[k] & ~BWD_MASK_PARTIAL) : first + k;
        l_off = head0 + (size_t)(st / per_head) * N_q + (size_t)i * Br;
    }
    /* FlashMask: is step st's tile partial (its elements tested)? */
    __device__ __forceinline__ bool partial(int st) const { return (list[st % per_head] & BWD_MASK_PARTIAL) != 0; }
};
/* skip: start at bwd_first_q_block (else every Q block: noskip, or a test's deleted range) */
__device__ __forceinline__ bwd_steps_t bwd_steps(const attn_problem_t &p, int j, int b, int kvh, int Br, int Bc,
                                                 bool skip)
{
    const int G = p.H / p.H_kv, Tr = (p.N_q + Br - 1) / Br;
    bwd_steps_t s;
    s.first = skip ? bwd_first_q_block(p, j, Br, Bc) : 0;
    s.per_head = Tr - s.first;
    s.count = G * s.per_head;
    s.head0 = ((size_t)b * p.H + (size_t)kvh * G) * p.N_q;
    s.N_q = p.N_q;
    s.list = nullptr;
    return s;
}

/* FlashMask (Wang et al., arXiv 2410.01359, Sec. 4) from the K/V block's side: the tile
 * (Q block i, K/V block j) is classified by mask.h's rule on column block j's 8 min/max
 * values (mblk: the preprocessing pass, mask_gpu_blocks, at this kernel's Bc), the same rule
 * as the forward's but with j fixed and i running. K/V block j visits the Q blocks whose tile
 * is not fully masked; they need not be a range (a document mask's column sees one run of
 * rows, qk_sparse's up to three), so they are listed: list[n] = i, with BWD_MASK_PARTIAL set
 * where the tile is partial. One warp builds it, 32 Q blocks a ballot; returns the count
 * (every lane). all (the tests' deleted range, visit_all): every Q block, every one partial,
 * so the result stays right and only the visit counters can tell.
 *
 *        Q blocks i:  0  1  2  3  4  5  6  7       column block j's class of each tile
 *        class:       F  F  P  U  U  P  F  F       (F fully masked, P partial, U unmasked)
 *        list:              2  3  4  5             per_head = 4 steps a query head
 */
#ifdef __CUDACC__   /* warp intrinsics: tools/mma_emu compiles this header as host C++ (mma2d, wgmma: no mask path) */
__device__ __forceinline__ int bwd_mask_q_blocks(const int32_t *mblk, int Tc, int j, int N_q, int Br, bool all,
                                                 uint16_t *list)
{
    const int lane = threadIdx.x % 32, Tr = (N_q + Br - 1) / Br;
    int n = 0;
    for (int base = 0; base < Tr; base += 32) {
        const int i = base + lane;
        mask_tile_t c = MASK_TILE_FULLY_MASKED;
        if (i < Tr) c = all ? MASK_TILE_PARTIAL : mask_tile_class_at(mblk, Tc, i * Br, min(N_q, i * Br + Br), j);
        const unsigned seen = __ballot_sync(0xffffffffu, c != MASK_TILE_FULLY_MASKED);
        if (c != MASK_TILE_FULLY_MASKED)   /* its place: the visited blocks of lower lanes before it */
            list[n + __popc(seen & ((1u << lane) - 1u))] = (uint16_t)(i | (c == MASK_TILE_PARTIAL ? BWD_MASK_PARTIAL : 0u));
        n += __popc(seen);
    }
    return n;
}

/* The schedule of a masked K/V block: the G query heads, each over the n Q blocks of list. */
__device__ __forceinline__ bwd_steps_t bwd_steps_masked(const attn_problem_t &p, int b, int kvh, const uint16_t *list,
                                                        int n)
{
    const int G = p.H / p.H_kv;
    bwd_steps_t s;
    s.first = 0;
    s.per_head = n;
    s.count = G * n;
    s.head0 = ((size_t)b * p.H + (size_t)kvh * G) * p.N_q;
    s.N_q = p.N_q;
    s.list = list;
    return s;
}

/* Column `key`'s two runs {lts, lte, uts, ute} (one 16-byte load from mask_gpu_columns), or
 * none past N_kv (those keys are zeroed by the tail test). A thread of the K/V-outer kernels
 * holds the same keys for every step, so it loads its columns once. */
__device__ __forceinline__ int4 bwd_mask_column(const int32_t *mcols, int key, int N_kv)
{
    return key < N_kv ? __ldg(reinterpret_cast<const int4 *>(mcols) + key) : make_int4(0, 0, 0, 0);
}
#endif

/* acc (a warp's 16 rows x NT n-tiles of 8 columns) += a b: a the A fragment of a k16 slice
 * (mma.cuh's layout), b the slice's 16 rows of a K x N tile stored row-major, LDH halves apart
 * (read transposed by ldmatrix: load_b_kn_trans). The backward's products whose B is Q_i, dO_i
 * or K_j as they lie in shared memory: dV += P^T dO_i, dK += dS^T Q_i, dQ += dS K_j. */
template <int NT, int LDH>
__device__ __forceinline__ void mma_a_bkn(float (&acc)[NT][4], const uint32_t (&a)[4], const __half *b)
{
#pragma unroll
    for (int n2 = 0; n2 < NT / 2; n2++) {
        uint32_t bf[4];
        load_b_kn_trans(bf, b + n2 * 16, LDH);
        mma_16816(acc[2 * n2], a, bf);
        mma_16816(acc[2 * n2 + 1], a, bf + 2);
    }
}

/* L_i and D_i of a step (its rows from l_off, `valid` of them before N_q) into one stage's
 * Ls, Ds with cp.async; the rows past N_q get 0 (the mask hides them). */
template <int BR, int THREADS>
__device__ __forceinline__ void bwd_load_ld(float *Ls, float *Ds, const float *Lg, const float *Dg, size_t l_off,
                                            int valid)
{
    for (int r = threadIdx.x; r < 2 * BR; r += THREADS) {
        const int row = r % BR;
        const float *src = (r < BR ? Lg : Dg) + l_off + row;
        cp_async4((r < BR ? Ls : Ds) + row, row < valid ? src : Lg, row < valid);
    }
}

/* Step st's Q_i and dO_i (rows of LDH halves, zero past N_q), L_i and D_i into one stage
 * with cp.async: the layout of the mma kernels (wgmma's swizzled tiles load their own). */
template <int D, int LDH, int BR, int THREADS>
__device__ __forceinline__ void bwd_load_step(const bwd_steps_t &s, int st, __half *Qs, __half *dOs, float *Ls,
                                              float *Ds, const __half *Qg, const __half *dOg, const float *Lg,
                                              const float *Dg)
{
    int i; size_t l_off;
    s.at(st, BR, i, l_off);
    const int valid = s.N_q - i * BR;
    cp_async_tile<D, LDH, THREADS>(Qs, Qg + l_off * D, BR, valid);
    cp_async_tile<D, LDH, THREADS>(dOs, dOg + l_off * D, BR, valid);
    bwd_load_ld<BR, THREADS>(Ls, Ds, Lg, Dg, l_off, valid);
}

/* P = e^(scale s - L) is computed as 2^(s scale log2 e - L log2 e) on the SFU (sfu_ex2,
 * common/mma.cuh). */
#define BWD_LOG2E 1.4426950408889634f

#endif
