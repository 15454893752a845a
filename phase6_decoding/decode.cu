/* decode.cu - Flash-Decoding on the GPU: split the KV cache, combine by log-sum-exp
 * (decode.h says what and why; the CPU model decode_cpu.c is the same algorithm in C).
 *
 *   split        grid (S, row tiles, B x H): one block per (split, head, batch); its 16-row
 *                m-tile holds the head's N_q query rows; 4 warps, each warp 16 keys of
 *                every 64-key K/V tile (split-K inside the block), Q K^T and P V on the
 *                tensor cores (mma.sync m16n8k16, common/mma.cuh); K/V tiles
 *                double-buffered in shared memory by cp.async; at the end the 4 warps'
 *                (m, l, O~) merged in shared memory and the partial (O_s, L_s) written
 *                (S = 1: O and L themselves)          build/phase6 --kernel split
 *   split-pack   the same with GQA PACKING: grid (S, row tiles, B x H_kv); the
 *                G = H / H_kv query heads that share a KV head are the rows of one block
 *                (G x N_q rows, 16 a tile; 64 a tile when they are more than 16 and
 *                d <= 128, one m-tile a warp: WR = 4 below), so the cache is read once
 *                per KV head, not once per query head  build/phase6 --kernel split-pack
 *   fused        split-pack with the combine in the split kernel: the block that counts
 *                itself last for its row tile merges the tile's rows (fused_tail)
 *                                                      build/phase6 --kernel fused
 *   paged        split-pack reading K and V through the block table (a pool of pages)
 *                                                      build/phase6 --kernel paged
 *   ragged       split-pack on a batch of sequences of their own lengths (seqlens_k)
 *                                                      build/phase6 --kernel ragged
 *   combine      one warp per query row: L = log sum_s e^{L_s}, O = sum_s e^{L_s - L} O_s
 *                (launched after split when S > 1)
 *   fdpp         FlashDecoding++ (decode.h): split-pack with the unified max phi instead of
 *                a running max: no rescale of O~ in the loop, the warps' merge a plain sum;
 *                the partials are u_s and l_s carrying the safe window's flags; then the
 *                FD++ combine (a sum and a divide: dec_fdpp_combine_kernel) flags each row
 *                that left the window, and dec_recompute_kernel redoes those rows with the
 *                online softmax                       build/phase6 --kernel fdpp
 *
 * Why the tensor cores for a problem with 1..16 query rows: decoding is memory-bound
 * (every K/V element read once is used by G x N_q rows), so the arithmetic unit matters
 * only through its instruction count. One mma.sync does 16 x 8 x 16 multiply-adds for
 * the issue cost of one instruction, and its B operand comes straight from shared
 * memory through ldmatrix with no fp16 -> fp32 conversions; padding the rows to 16 wastes
 * tensor-core work that is free here (at 3 TB/s the padded mma work of d = 128 is well
 * under a tenth of the time the bytes take).
 *
 * The split ranges are dec_split_range()'s, whole blocks of the CPU model's Bc
 * (fa2_mma_blocks(d).Bc), so the model's bytes (decode_hbm_bytes) are this kernel's; the
 * kernel walks its range in tiles of 64 keys, masking past the range's end.
 */
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_check.cuh"
#include "mma.cuh"
#include "visits.cuh"
#include "decode.h"
#include "fa2.h"

#define DWARPS   DEC_WARPS               /* warps per block (decode.h: 4)          */
#define DTHREADS (32 * DWARPS)
#define KW       16                      /* keys per warp in a tile (WR = 1)        */
#define BK       (DWARPS * KW)           /* keys per K/V tile                       */
#define ROWS     16                      /* query rows of an m-tile (a block: WR of them) */
static_assert(BK == DEC_GPU_TILE_KEYS, "decode.h's tile (the visit counters' unit) is the kernel's");
#ifndef DEC_STAGES
#define DEC_STAGES 2                     /* K/V tiles in the ring: 1 computed, the rest in flight */
#endif
/* d = 256: a 64-key tile of K and V is 66 KiB, so two of them (132 KiB) pass the 99 KiB that
 * sm_86/89 allow a block: one stage, loaded at the top of each step and waited for (no
 * overlap of copy and compute inside a block; the SM's other blocks provide it) */
#define DEC_STAGES_OF(D) ((D) >= 256 ? 1 : DEC_STAGES)

/* WR: the warps that split a block's rows. WR = 1 (one m-tile of 16 rows, the 4 warps split
 * each 64-key tile into 16 keys each, merged at the end) is FlashDecoding++'s flat GEMM: a
 * single query row pads to 16, not to 64. WR = 4 (64 rows, each warp its own 16 rows over the
 * whole tile, as phase 4) takes many query tokens with GQA packing (G x N_q > 16) in one
 * block, so the K/V tile that 64 rows share is read once, not once per 16 rows:
 *
 *            WR = 1: keys of the tile ->              WR = 4: keys of the tile ->
 *   rows   | warp 0 | warp 1 | warp 2 | warp 3 |     | warp 0 (rows  0-15), 64 keys |
 *   0-15   |16 keys |16 keys |16 keys |16 keys |     | warp 1 (rows 16-31), 64 keys |
 *                                                    | warp 2 (rows 32-47), 64 keys |
 *                                                    | warp 3 (rows 48-63), 64 keys |  */
template <int D, int WR = 1>
struct DCfg {
    static constexpr int LDH = D + 8;    /* halves per shared row: +16 bytes, so the 8 rows of an
                                            ldmatrix tile start in different banks */
    static constexpr int ROWS_B = ROWS * WR;   /* query rows a block holds */
    static constexpr int WK = DWARPS / WR;     /* warps that share a row (split the tile's keys) */
    static constexpr int KWW = BK / WK;        /* keys of a tile one warp takes: 16 or 64 */
    static constexpr size_t Q_OFF = 0;
    static constexpr size_t KV_OFF = sizeof(__half) * ROWS_B * LDH;
    static constexpr size_t STAGE = 2 * sizeof(__half) * BK * LDH;   /* K_j and V_j */
    static constexpr int STAGES = DEC_STAGES_OF(D);
    static constexpr size_t SMEM = KV_OFF + STAGES * STAGE;
    /* after the loop the stages hold the warps' merge: O~ [DWARPS][ROWS][D] (each warp's 16
     * rows), m, l, the per-warp weights [DWARPS][ROWS] and each block row's L [ROWS_B] */
    static constexpr size_t MERGE = sizeof(float) * ((size_t)DWARPS * ROWS * D + 3 * DWARPS * ROWS + ROWS_B);
};

/* What one launch of the split kernel needs (by value, as a kernel parameter). */
struct DecArgs {
    attn_problem_t p;
    const __half *Q, *K, *V;      /* K, V: the contiguous cache, or the pool when paged */
    const int *seqlens;           /* [B] or NULL: every sequence N_kv keys            */
    const int *table;             /* [B][pps] pool page of each page of keys          */
    int page, pps;                /* page: keys per page, a power of two               */
    float *O, *L;                 /* S = 1: the outputs                               */
    float *Opart, *Lpart;         /* S > 1: the partials [S][B][H][N_q][d], [S][B][H][N_q] */
    int S, Bc, pack;
    float phi;                    /* FDPP: the unified max, in units of scale q.k        */
    int *done;                    /* NULL, or per row tile [B x groups x tiles] the splits
                                     done so far (the fused combine; zero between launches) */
    gpu_visits_t vis;             /* counts[split] += the K/V tiles it visited          */
};

/* log2 of the page size (a power of two): key j's page is j >> page_shift(a), its row in
 * the page j & (a.page - 1). A divide by a run-time value would be a sequence of integer
 * instructions for every key row a thread copies. */
__device__ __forceinline__ int page_shift(const DecArgs &a) { return __ffs(a.page) - 1; }


/* Rows of a K/V tile one thread copies: thread t copies the 16-byte chunks t + k THREADS,
 * k < KV_ROWS, each of a row of its own (row (t + k THREADS) / (D / 8)). */
template <int D> struct KvRows { static constexpr int N = BK * (D / 8) / DTHREADS; };

#ifdef EX_BUILD
__device__ int dec_page_faults_d;   /* pool pages out of range looked up (an exercise build) */
#endif

/* The pool pages of this thread's rows of the tile at jt (paged cache), fetched one tile
 * ahead of their use so that the table's latency hides behind a tile's compute. */
template <int D>
__device__ __forceinline__ void fetch_pages(int (&pid)[KvRows<D>::N], const DecArgs &a, int b, int jt, int kend)
{
    constexpr int CH = D / 8;
#pragma unroll
    for (int k = 0; k < KvRows<D>::N; k++) {
        const int j = jt + (int)(threadIdx.x + k * DTHREADS) / CH;
        /* EXERCISE dec.page_lookup_gpu: the pool page of key j of sequence b, through the block table
         * HINT: as dec.page_lookup: a.table holds a.pps pool pages per sequence (row b); the
         * HINT: entry of key j's page (j / a.page, written j >> page_shift(a)) is the pool page.
         * HINT: A key at or past kend is never read (set 0: its table entry may not exist). */
        pid[k] = j < kend ? a.table[(size_t)b * a.pps + (j >> page_shift(a))] : 0;
        /* STUB: pid[k] = b * a.pps + (j >> page_shift(a)); (void)kend; */
        /* END EXERCISE */
#ifdef EX_BUILD   /* a wrong lookup reads page 0 instead of faulting, and is counted (dec_gpu_page_faults) */
        if (j < kend && (unsigned)pid[k] >= (unsigned)(a.p.B * a.pps)) { atomicAdd(&dec_page_faults_d, 1); pid[k] = 0; }
#endif
    }
}

/* The K/V stream's 16-byte copy: cp_async16 with the .L2::256B prefetch hint, which asks L2
 * to fetch the whole 256-byte run around each request (a K row at d = 128 is 256 bytes, a
 * tile 16 KiB in one run). Measured on the H100 beside the plain copy (DEC_KV_PLAIN, the
 * _pf sweep of docs/results/h100/phase6): the packed kernels (split-pack, fdpp, paged) and
 * MHA take 1.0-1.4% less time from L = 16k on; the unpacked split on GQA, whose G blocks
 * of a KV head read the same rows, 8-25% more (a teaching row: packing is its fix) */
__device__ __forceinline__ void kv_copy16(void *dst, const void *src, bool valid)
{
#ifndef DEC_KV_PLAIN
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n"
                 :: "r"(smem_u32(dst)), "l"(src), "r"(valid ? 16 : 0) : "memory");
#else
    cp_async16(dst, src, valid);
#endif
}

/* Keys [jt, jt + BK) of KV head kvh of sequence b into shared memory (K and V), rows at or
 * past kend zero-filled (and never read from HBM). pid: the pool pages of this thread's
 * rows (fetch_pages) when paged: the pool is [n_pages][H_kv][page][D], key j row j % page
 * of its page. */
template <int D, bool PAGED>
__device__ __forceinline__ void load_kv(__half *Ks, __half *Vs, const DecArgs &a, int b, int kvh, int jt, int kend,
                                        const int (&pid)[KvRows<D>::N])
{
    constexpr int LDH = DCfg<D>::LDH, CH = D / 8;   /* 16-byte chunks per row */
    const attn_problem_t &p = a.p;
#pragma unroll
    for (int k = 0; k < KvRows<D>::N; k++) {
        const int c = threadIdx.x + k * DTHREADS, r = c / CH, col = (c % CH) * 8, j = jt + r;
        const bool valid = j < kend;
        size_t row = 0;   /* element offset of key j's row in K (and V) */
        if (valid)
            row = PAGED ? ((((size_t)pid[k] * p.H_kv + kvh) << page_shift(a)) + (size_t)(j & (a.page - 1))) * D
                        : (((size_t)b * p.H_kv + kvh) * (size_t)p.N_kv + (size_t)j) * D;
        kv_copy16(Ks + r * LDH + col, a.K + row + col, valid);
        kv_copy16(Vs + r * LDH + col, a.V + row + col, valid);
    }
}

/* The combine: one warp per query row (rows of [B][H][N_q]), S partials each. The S
 * weights go through shared memory so that the O loop issues its loads unrolled, several
 * partial rows in flight at once (a loop of dependent loads would wait on each). */
#define DEC_MAX_SPLITS 1024
/* One row of the combine, by one warp: w, the warp's DEC_MAX_SPLITS floats of shared memory.
 * dec_combine_kernel runs it, and so does the fused combine (the split kernel's last block
 * of a row tile). */
template <int D>
__device__ __forceinline__ void combine_row(int S, int nrows, int row, const float *Opart, const float *Lpart, float *O,
                                            float *L, float *w)
{
    const int lane = threadIdx.x % 32;
    const size_t nq = (size_t)nrows * D;
    float acc[D / 32];          /* columns lane, lane + 32, ...: every load coalesced */
#pragma unroll
    for (int k = 0; k < D / 32; k++) acc[k] = 0.0f;
    float lse;
    __syncwarp();   /* a warp that merges several rows (the fused combine): every lane is done
                       reading the previous row's weights before any lane writes this row's */
    /* EXERCISE dec.combine_gpu: the log-sum-exp combine of one row's S partials (a warp; lane owns columns lane + 32 k)
     * HINT: as dec.combine: m = max_s L_s (L_s = Lpart[s * nrows + row]; the lanes share the
     * HINT: S values, then a warp max by __shfl_xor_sync); m = -inf: no split saw a key, the
     * HINT: row is O = 0 (acc as it is) and lse = +inf. Else lse = m + log sum_s e^{L_s - m}
     * HINT: (a warp sum the same way), w[s] = e^{L_s - lse} (w: this warp's shared array;
     * HINT: __syncwarp() before reading it) and acc[k] = sum_s w[s] O_s[row][lane + 32 k]
     * HINT: (O_s at Opart + s * nq + row * D). */
    float lmax = -INFINITY;
    for (int s = lane; s < S; s += 32) lmax = fmaxf(lmax, Lpart[(size_t)s * nrows + row]);
#pragma unroll
    for (int off = 16; off > 0; off /= 2) lmax = fmaxf(lmax, __shfl_xor_sync(0xffffffffu, lmax, off));
    if (lmax == -INFINITY) {
        lse = INFINITY;
    } else {
        float sum = 0.0f;
        for (int s = lane; s < S; s += 32) sum += expf(Lpart[(size_t)s * nrows + row] - lmax);
#pragma unroll
        for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
        lse = lmax + logf(sum);
        for (int s = lane; s < S; s += 32) w[s] = expf(Lpart[(size_t)s * nrows + row] - lse);
        __syncwarp();   /* every lane's weights are visible to the whole warp */
#pragma unroll 8
        for (int s = 0; s < S; ++s) {
            const float *Os = Opart + (size_t)s * nq + (size_t)row * D;
#pragma unroll
            for (int k = 0; k < D / 32; k++) acc[k] += w[s] * Os[lane + 32 * k];
        }
    }
    /* STUB: lse = Lpart[row]; for (int k = 0; k < D / 32; k++) acc[k] = Opart[(size_t)row * D + lane + 32 * k]; (void)S; (void)nq; (void)w; */
    /* END EXERCISE */
#pragma unroll
    for (int k = 0; k < D / 32; k++) O[(size_t)row * D + lane + 32 * k] = acc[k];
    if (lane == 0) L[row] = lse;
}

template <int D>
__global__ void __launch_bounds__(DTHREADS)
dec_combine_kernel(int S, int nrows, const float *Opart, const float *Lpart, float *O, float *L)
{
    __shared__ float wsh[DWARPS][DEC_MAX_SPLITS];
    const int warp = threadIdx.x / 32, row = blockIdx.x * DWARPS + warp;
    if (row >= nrows) return;   /* warp-uniform; no block-wide barrier below */
    combine_row<D>(S, nrows, row, Opart, Lpart, O, L, wsh[warp]);
}

/* The fused combine (DecArgs.done): each split block, its partial written, counts itself
 * done for its row tile; the block that counts last (it sees the S - 1 others' partials,
 * each made visible by its __threadfence before it counted) merges the tile's rows with
 * combine_row and resets the count for the next launch. No second kernel and no gap
 * between two launches: Lean Attention's merge by the tile that finishes a row (arXiv
 * 2405.10480), here with the split kernel's own grid. w: DWARPS x DEC_MAX_SPLITS floats of
 * shared memory that the block no longer needs. */
template <int D>
__device__ __forceinline__ void fused_tail(const DecArgs &a, size_t row_base, int nrows, size_t nq_rows, float *w)
{
    __shared__ int last;
    __threadfence();   /* this block's partial, visible to the whole GPU before it is counted */
    __syncthreads();
    const int tile = blockIdx.z * gridDim.y + blockIdx.y;
    if (threadIdx.x == 0) last = atomicAdd(&a.done[tile], 1) == a.S - 1;
    __syncthreads();
    if (!last) return;   /* block-uniform */
    __threadfence();     /* the others' partials: counted before ours, so written before */
    const int warp = threadIdx.x / 32;
    for (int r = warp; r < nrows; r += DWARPS)
        combine_row<D>(a.S, (int)nq_rows, (int)(row_base + r), a.Opart, a.Lpart, a.O, a.L, w + warp * DEC_MAX_SPLITS);
    if (threadIdx.x == 0) a.done[tile] = 0;
}

/* One block: split blockIdx.x of row tile blockIdx.y of group blockIdx.z (a (batch, head)
 * without packing, a (batch, KV head) with it). */
template <int D, bool PAGED, bool FDPP = false, int WR = 1>
__global__ void __launch_bounds__(DTHREADS)
dec_split_kernel(const DecArgs a)
{
    using C = DCfg<D, WR>;
    constexpr int WK = C::WK, KWW = C::KWW, NT = KWW / 8;   /* NT: the warp's n-tiles of 8 keys */
    constexpr int LDH = C::LDH;
    const attn_problem_t &p = a.p;
    extern __shared__ __align__(16) unsigned char smem[];
    __half *Qs = (__half *)(smem + C::Q_OFF);
    __half *KVs = (__half *)(smem + C::KV_OFF);   /* stage st: K at st 2 BK LDH, V after it */

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, g = lane / 4, t = lane % 4;
    const int wr = warp % WR, wk = warp / WR;   /* this warp's m-tile of the block, its keys of a tile */
    const int s = blockIdx.x, rt = blockIdx.y;
    const int G = a.pack ? p.H / p.H_kv : 1;              /* query heads in a block's group */
    const int ngroups = a.pack ? p.H_kv : p.H;
    const int b = blockIdx.z / ngroups, grp = blockIdx.z % ngroups;
    const int h0 = grp * G, kvh = attn_kv_head(&p, h0);
    const int R = G * p.N_q, r0 = rt * C::ROWS_B, nrows = min(C::ROWS_B, R - r0);
    /* rows r0 .. of the group are consecutive rows of Q, O and L: heads h0 .. h0 + G - 1,
     * N_q rows each (common/problem.h's layout) */
    const size_t row_base = ((size_t)b * p.H + h0) * p.N_q + r0;
    const size_t nq_rows = (size_t)p.B * p.H * p.N_q;
    const int n = a.seqlens ? a.seqlens[b] : p.N_kv;       /* this sequence's keys */
    /* FDPP writes partials even for S = 1: its combine decides which rows to recompute */
    const bool to_output = a.S == 1 && !FDPP;
    float *Odst = to_output ? a.O + row_base * D : a.Opart + ((size_t)s * nq_rows + row_base) * D;
    float *Ldst = to_output ? a.L + row_base : a.Lpart + (size_t)s * nq_rows + row_base;

    /* the keys [k0, k1) of split s: whole blocks of the model's Bc (dec_split_range) */
    int k0, k1;
    {
        const int Tc = (n + a.Bc - 1) / a.Bc;
        /* EXERCISE dec.split_range_gpu: the keys [k0, k1) of split s, whole blocks of a.Bc keys, as dec.split_range
         * HINT: Tc blocks of a.Bc keys cut into a.S splits of ceil(Tc / a.S) blocks each, in
         * HINT: order; both ends clamped to Tc blocks and then to the n keys (the last splits
         * HINT: may be empty: k0 == k1). */
        const int per_split = (Tc + a.S - 1) / a.S;
        const int blk0 = min(s * per_split, Tc), blk1 = min((s + 1) * per_split, Tc);
        k0 = min(blk0 * a.Bc, n);
        k1 = min(blk1 * a.Bc, n);
        /* STUB: k0 = 0; k1 = n; (void)Tc; */
        /* END EXERCISE */
    }
    if (visit_all(a.vis)) { k0 = 0; k1 = n; }
    if (tid == 0 && k1 > k0) visit_count(a.vis, s, (k1 - k0 + BK - 1) / BK);   /* the driver holds it to dec_split_range() */
    if (k1 <= k0) {   /* an empty split: O_s = 0, L_s = -inf (S = 1: the row saw no key, L = +inf);
                         FDPP: u_s = 0 and l_s = -0 (no key, none reached the window's bottom) */
        for (int e = tid; e < nrows * D; e += DTHREADS) Odst[e] = 0.0f;
        for (int r = tid; r < nrows; r += DTHREADS) Ldst[r] = FDPP ? -0.0f : to_output ? INFINITY : -INFINITY;
        if (!FDPP && !to_output && a.done) fused_tail<D>(a, row_base, nrows, nq_rows, (float *)(smem + C::KV_OFF));
        return;
    }

    /* Q's rows (zero past nrows) and the first K/V tile */
    int pid[KvRows<D>::N] = {};   /* pool pages of the next tile this thread copies (paged) */
    if (PAGED) fetch_pages<D>(pid, a, b, k0, k1);
    cp_async_tile<D, LDH, DTHREADS>(Qs, a.Q + row_base * D, C::ROWS_B, nrows);
    /* the ring's first STAGES - 1 tiles: one cp.async group each (an empty group past k1),
     * so that the loop's wait counts groups alike for every tile */
#pragma unroll
    for (int st = 0; st < C::STAGES - 1; st++) {
        if (k0 + st * BK < k1) {
            __half *dst = KVs + st * 2 * BK * LDH;
            load_kv<D, PAGED>(dst, dst + BK * LDH, a, b, kvh, k0 + st * BK, k1, pid);
            if (PAGED) fetch_pages<D>(pid, a, b, k0 + (st + 1) * BK, k1);   /* the next tile's, a tile ahead */
        }
        cp_async_commit();
    }

    const float sl2 = p.scale * 1.4426950408889634f;   /* e^(scale x) = 2^(sl2 x) */
    /* this thread's rows g and g + 8 of the tile: the last key each may see (causal,
     * bottom-right on this sequence's own length); rows past nrows are padding */
    int lim[2];
#pragma unroll
    for (int x = 0; x < 2; x++) lim[x] = p.causal ? (r0 + wr * ROWS + g + 8 * x) % p.N_q + (n - p.N_q) : n - 1;
    const int lim_min = p.causal ? n - p.N_q : n - 1;   /* the least of any row (query 0) */

    /* the warp's 16 rows of Q as A fragments, loaded once; at d = 256 (128 accumulators of O~ already) read
     * from shared memory at each use instead, or the paged kernel spills */
    constexpr bool QREG = D <= 128;
    uint32_t qf[QREG ? D / 16 : 1][4];
    const __half *Qw = Qs + wr * ROWS * LDH;   /* this warp's 16 rows of Q */
    float o[D / 8][4];                    /* this warp's O~: 16 rows x D, fp32              */
    float m_i[2] = {-INFINITY, -INFINITY}, l_i[2] = {0.0f, 0.0f};
    /* FDPP: the weights are 2^(sl2 S - phi2), phi2 = phi log2(e); the safe window's tests in
     * the same base-2 units; win[x]: bit 1 a score reached the bottom, bit 2 one passed the top */
    const float phi2 = a.phi * 1.4426950408889634f;
    const float above2 = DEC_PHI_ABOVE * 1.4426950408889634f, below2 = DEC_PHI_BELOW * 1.4426950408889634f;
    int win[2] = {0, 0};
#pragma unroll
    for (int nn = 0; nn < D / 8; nn++) o[nn][0] = o[nn][1] = o[nn][2] = o[nn][3] = 0.0f;

    const int ntiles = (k1 - k0 + BK - 1) / BK;
    for (int tt = 0; tt < ntiles; tt++) {
        const int st = tt % C::STAGES, jt = k0 + tt * BK;
        if constexpr (C::STAGES == 1) {   /* one stage: tile tt now, once every warp is done with tile tt - 1 */
            if (tt > 0) __syncthreads();
            load_kv<D, PAGED>(KVs, KVs + BK * LDH, a, b, kvh, jt, k1, pid);
            if (PAGED) fetch_pages<D>(pid, a, b, jt + BK, k1);   /* the next tile's pages */
            cp_async_commit();
        }
        cp_async_wait<(C::STAGES >= 2 ? C::STAGES - 2 : 0)>();   /* all but the newest STAGES - 2 groups: tile tt's */
        __syncthreads();   /* tile tt (and Q) landed and are visible to every warp; every warp
                              is done with the stage tile tt - 1 used, which the load below refills */
        if (QREG && tt == 0) {
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) load_a_16x16(qf[QREG ? kk : 0], Qw + kk * 16, LDH);
        }
        if (C::STAGES > 1) {   /* tile tt + STAGES - 1 streams in while this one is computed (an
                                  empty group past the range's end, so the wait above stays one count) */
            const int ahead = tt + C::STAGES - 1;
            if (ahead < ntiles) {
                __half *nx = KVs + (ahead % C::STAGES) * 2 * BK * LDH;
                load_kv<D, PAGED>(nx, nx + BK * LDH, a, b, kvh, k0 + ahead * BK, k1, pid);
                if (PAGED) fetch_pages<D>(pid, a, b, k0 + (ahead + 1) * BK, k1);   /* its successor's pages */
            }
            cp_async_commit();
        }
        const int jw = jt + wk * KWW;    /* this warp's KWW keys */
        if (jw >= k1) continue;          /* warp-uniform: past the range's end */
        const __half *Kw = KVs + st * 2 * BK * LDH + wk * KWW * LDH, *Vw = Kw + BK * LDH;

        /* S = Q K^T: 16 rows x KWW keys (NT n-tiles of 8) */
        float sc[NT][4];
#pragma unroll
        for (int nn = 0; nn < NT; nn++) sc[nn][0] = sc[nn][1] = sc[nn][2] = sc[nn][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            if (!QREG) load_a_16x16(qf[0], Qw + kk * 16, LDH);
#pragma unroll
            for (int c = 0; c < NT / 2; c++) {   /* 16 keys a step */
                uint32_t bf[4];
                load_b_nk(bf, Kw + c * 16 * LDH + kk * 16, LDH);
                mma_16816(sc[2 * c], qf[QREG ? kk : 0], bf);
                mma_16816(sc[2 * c + 1], qf[QREG ? kk : 0], bf + 2);
            }
        }
        /* the mask: keys past the range's end, and the causal diagonal */
        if (jw + KWW > k1 || jw + KWW - 1 > lim_min) {
#pragma unroll
            for (int nn = 0; nn < NT; nn++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int col = jw + nn * 8 + 2 * t + e % 2;
                    if (col >= k1 || col > lim[e / 2]) sc[nn][e] = -INFINITY;
                }
        }
        /* the online softmax of rows g, g + 8 (the quad's 4 lanes hold a row's 16 keys);
         * FDPP: against the fixed phi, no max and no rescale (FlashDecoding++ Sec. 3.1) */
        float alpha[2];
        if constexpr (FDPP) {
#pragma unroll
            for (int x = 0; x < 2; x++) {
                float row_sum = 0.0f;
#pragma unroll
                for (int nn = 0; nn < NT; nn++)
#pragma unroll
                    for (int e = 2 * x; e <= 2 * x + 1; e++) {
                        const float z2 = fmaf(sc[nn][e], sl2, -phi2);   /* (x - phi) log2(e); -inf when masked */
                        win[x] |= (z2 >= -below2 ? 1 : 0) | (z2 > above2 ? 2 : 0);
                        /* l sums the fp16 weight that multiplies V below, not the fp32 one:
                         * with e^(x - phi) far from 1 the two differ by up to 2^-11, and a
                         * row of one key must come out as V itself (m-based weights dodge
                         * this: their largest is e^0 = 1, exact in fp16) */
                        sc[nn][e] = __half2float(__float2half_rn(sfu_ex2(z2)));
                        row_sum += sc[nn][e];
                    }
                l_i[x] += row_sum;
                alpha[x] = 1.0f;
            }
        } else
#pragma unroll
        for (int x = 0; x < 2; x++) {
            float mx = m_i[x];
#pragma unroll
            for (int nn = 0; nn < NT; nn++) mx = fmaxf(mx, fmaxf(sc[nn][2 * x], sc[nn][2 * x + 1]));
#pragma unroll
            for (int lane_xor = 1; lane_xor <= 2; lane_xor *= 2)   /* the quad's 4 lanes */
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, lane_xor));
            alpha[x] = mx == -INFINITY ? 0.0f : sfu_ex2((m_i[x] - mx) * sl2);
            const float m_scaled = (mx == -INFINITY) ? 0.0f : sl2 * mx;
            m_i[x] = mx;
            float row_sum = 0.0f;
#pragma unroll
            for (int nn = 0; nn < NT; nn++)
#pragma unroll
                for (int e = 2 * x; e <= 2 * x + 1; e++) {
                    sc[nn][e] = sfu_ex2(fmaf(sc[nn][e], sl2, -m_scaled));
                    row_sum += sc[nn][e];
                }
            l_i[x] = alpha[x] * l_i[x] + row_sum;   /* this thread's columns; the quad's are added at the end */
        }
        /* O~ = diag(alpha) O~ + P V_w: P from the S registers, one A fragment per 16 keys */
        if (!FDPP) {
#pragma unroll
            for (int nn = 0; nn < D / 8; nn++) { o[nn][0] *= alpha[0]; o[nn][1] *= alpha[0]; o[nn][2] *= alpha[1]; o[nn][3] *= alpha[1]; }
        }
#pragma unroll
        for (int c = 0; c < NT / 2; c++) {
            uint32_t pa[4];
            c_pair_to_a(pa, sc[2 * c], sc[2 * c + 1]);
#pragma unroll
            for (int n2 = 0; n2 < D / 16; n2++) {
                uint32_t bf[4];
                load_b_kn_trans(bf, Vw + c * 16 * LDH + n2 * 16, LDH);
                mma_16816(o[2 * n2], pa, bf);
                mma_16816(o[2 * n2 + 1], pa, bf + 2);
            }
        }
    }

    /* the 4 warps' states merged in shared memory (over the K/V stages) */
    cp_async_wait<0>();
    __syncthreads();   /* every warp is done with the K/V stages: they become the merge area */
    float *Om = (float *)(smem + C::KV_OFF);          /* [DWARPS][ROWS][D] */
    float *Mm = Om + DWARPS * ROWS * D, *Lm = Mm + DWARPS * ROWS, *Wm = Lm + DWARPS * ROWS;
    float *Lrow = Wm + DWARPS * ROWS;   /* [ROWS_B] */
#pragma unroll
    for (int x = 0; x < 2; x++) {
        l_i[x] += __shfl_xor_sync(0xffffffffu, l_i[x], 1);
        l_i[x] += __shfl_xor_sync(0xffffffffu, l_i[x], 2);
        const int r = g + 8 * x;
#pragma unroll
        for (int nn = 0; nn < D / 8; nn++)
            *reinterpret_cast<float2 *>(Om + ((size_t)warp * ROWS + r) * D + nn * 8 + 2 * t) = make_float2(o[nn][2 * x], o[nn][2 * x + 1]);
        if (FDPP) {   /* the quad's window flags; m carries them (FDPP has no max) */
            win[x] |= __shfl_xor_sync(0xffffffffu, win[x], 1);
            win[x] |= __shfl_xor_sync(0xffffffffu, win[x], 2);
            m_i[x] = (float)win[x];
        }
        if (t == 0) { Mm[warp * ROWS + r] = m_i[x]; Lm[warp * ROWS + r] = l_i[x]; }
    }
    __syncthreads();   /* every warp's O~, m, l are in shared memory */
    /* block row rb is row rb % ROWS of the WK warps wr + WR k (k < WK) that share its m-tile */
    if (tid < C::ROWS_B) {
        const int w0 = tid / ROWS, rr = tid % ROWS;
        if (FDPP) {   /* FD++'s merge of the warps: sums; l_s signed by the window (decode.h) */
            int w_or = 0;
            float l = 0.0f;
#pragma unroll
            for (int k = 0; k < WK; k++) {
                const int w = w0 + WR * k;
                w_or |= (int)Mm[w * ROWS + rr]; l += Lm[w * ROWS + rr]; Wm[w * ROWS + rr] = 1.0f;
            }
            Lrow[tid] = (w_or & 2) ? INFINITY : (w_or & 1) ? l : -l;
        } else {   /* chapter 2's merge of the warps: m = max m_w, l = sum e^{m_w - m} l_w */
            float mx = -INFINITY;
#pragma unroll
            for (int k = 0; k < WK; k++) mx = fmaxf(mx, Mm[(w0 + WR * k) * ROWS + rr]);
            float l = 0.0f, e[WK];
#pragma unroll
            for (int k = 0; k < WK; k++) {
                const int w = w0 + WR * k;
                e[k] = mx == -INFINITY ? 0.0f : sfu_ex2((Mm[w * ROWS + rr] - mx) * sl2);
                l += e[k] * Lm[w * ROWS + rr];
            }
            const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
            for (int k = 0; k < WK; k++) Wm[(w0 + WR * k) * ROWS + rr] = e[k] * inv;
            /* O_s = O~ / l, L_s = m + log l; a row with no key: O_s = 0 and L_s = -inf (a
             * partial: the log of an empty sum), or L = +inf when this is the output (S = 1) */
            Lrow[tid] = l > 0.0f ? mx * p.scale + logf(l) : (a.S == 1 ? INFINITY : -INFINITY);
        }
    }
    __syncthreads();   /* the weights and L of every row are in shared memory */
    for (int e4 = tid * 4; e4 < nrows * D; e4 += DTHREADS * 4) {
        const int r = e4 / D, c = e4 % D, w0 = r / ROWS, rr = r % ROWS;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int k = 0; k < WK; k++) {
            const int w = w0 + WR * k;
            const float wt = Wm[w * ROWS + rr];
            const float4 x = *reinterpret_cast<const float4 *>(Om + ((size_t)w * ROWS + rr) * D + c);
            v.x += wt * x.x; v.y += wt * x.y; v.z += wt * x.z; v.w += wt * x.w;
        }
        *reinterpret_cast<float4 *>(Odst + e4) = v;
    }
    if (tid < nrows) Ldst[tid] = Lrow[tid];
    if (!FDPP && !to_output && a.done) {   /* the fused combine: the K/V stages hold the warps' weights */
        __syncthreads();   /* every thread is done with the merge area */
        fused_tail<D>(a, row_base, nrows, nq_rows, (float *)(smem + C::KV_OFF));
    }
}

/* ---- FlashDecoding++ (decode.h): its combine and its fallback ------------------------- */

/* Does row q (of N_q) of sequence b see any key (causal: bottom-right on its own length)? */
__device__ __forceinline__ bool row_has_keys(const attn_problem_t &p, const int *seqlens, int b, int q, int *n_out)
{
    const int n = seqlens ? seqlens[b] : p.N_kv;
    *n_out = n;
    return n > 0 && (!p.causal || q + (n - p.N_q) >= 0);
}

__device__ int dec_fdpp_redo_d;   /* rows recomputed since dec_gpu_fdpp_recomputed() last read it */

/* FD++'s combine (decode_cpu.c's dec_fdpp_combine_row), one warp per query row: no max and
 * no exponentials, O = (sum_s u_s) / (sum_s l_s), L = phi + log sum_s l_s. A row where a split
 * passed the window's top (l_s = +inf), or that has a key but where no split reached its
 * bottom (every l_s <= 0), is flagged in redo[] for dec_recompute_kernel (and counted); a row
 * with no key is O = 0, L = +inf. Every row's flag is written, so redo needs no reset. */
template <int D>
__global__ void __launch_bounds__(DTHREADS)
dec_fdpp_combine_kernel(attn_problem_t p, const int *seqlens, int S, int nrows, float phi, const float *Opart,
                        const float *Lpart, float *O, float *L, uint8_t *redo)
{
    const int lane = threadIdx.x % 32, row = blockIdx.x * DWARPS + threadIdx.x / 32;
    if (row >= nrows) return;   /* warp-uniform */
    const size_t nq = (size_t)nrows * D;
    bool passed = false, reached = false;
    float l = 0.0f;
    for (int s = lane; s < S; s += 32) {
        const float ls = Lpart[(size_t)s * nrows + row];
        passed |= ls == INFINITY;
        reached |= ls > 0.0f;
        l += fabsf(ls);
    }
    passed = __any_sync(0xffffffffu, passed);
    reached = __any_sync(0xffffffffu, reached);
#pragma unroll
    for (int off = 16; off > 0; off /= 2) l += __shfl_xor_sync(0xffffffffu, l, off);
    int n;
    const bool has = row_has_keys(p, seqlens, row / (p.H * p.N_q), row % p.N_q, &n);
    const bool again = has && (passed || !reached);
    if (lane == 0) {
        redo[row] = again;
        if (again) atomicAdd(&dec_fdpp_redo_d, 1);
    }
    if (again) return;   /* dec_recompute_kernel writes the row */
    float acc[D / 32];
#pragma unroll
    for (int k = 0; k < D / 32; k++) acc[k] = 0.0f;
    if (has) {
#pragma unroll 8
        for (int s = 0; s < S; ++s) {
            const float *Us = Opart + (size_t)s * nq + (size_t)row * D;
#pragma unroll
            for (int k = 0; k < D / 32; k++) acc[k] += Us[lane + 32 * k];
        }
        const float inv = 1.0f / l;
#pragma unroll
        for (int k = 0; k < D / 32; k++) acc[k] *= inv;
    }
#pragma unroll
    for (int k = 0; k < D / 32; k++) O[(size_t)row * D + lane + 32 * k] = acc[k];
    if (lane == 0) L[row] = has ? phi + logf(l) : INFINITY;
}

/* FD++'s fallback (decode_cpu.c's recompute_row): one block per query row, doing nothing
 * unless the row is flagged; a flagged row is recomputed with the safe two-pass softmax over
 * all its visible keys (pass 1: the max; pass 2: the weights, 128 keys at a time through
 * shared memory, and O's columns, thread k owning column k). Rare by design, so written
 * for clarity, not speed. */
template <int D, bool PAGED>
__global__ void __launch_bounds__(DTHREADS)
dec_recompute_kernel(const DecArgs a, const uint8_t *redo)
{
    const attn_problem_t &p = a.p;
    const int row = blockIdx.x, tid = threadIdx.x;
    if (!redo[row]) return;   /* block-uniform */
    __shared__ float qs[D], ws[DTHREADS], red[DWARPS];
    const int b = row / (p.H * p.N_q), h = (row / p.N_q) % p.H, q = row % p.N_q, kvh = attn_kv_head(&p, h);
    int n;
    row_has_keys(p, a.seqlens, b, q, &n);
    const int last = p.causal ? q + (n - p.N_q) : n - 1;   /* the last visible key */
    for (int k = tid; k < D; k += DTHREADS) qs[k] = __half2float(a.Q[(size_t)row * D + k]);
    __syncthreads();
    auto key_row = [&](int j) -> size_t {   /* element offset of key j's row in K (and V) */
        if (PAGED) {
            const int pid = a.table[(size_t)b * a.pps + (j >> page_shift(a))];
            return ((((size_t)pid * p.H_kv + kvh) << page_shift(a)) + (size_t)(j & (a.page - 1))) * D;
        }
        return (((size_t)b * p.H_kv + kvh) * (size_t)p.N_kv + (size_t)j) * D;
    };
    auto score = [&](int j) {
        const __half *kr = a.K + key_row(j);
        float acc = 0.0f;
#pragma unroll 8
        for (int k = 0; k < D; k++) acc += qs[k] * __half2float(kr[k]);
        return acc * p.scale;
    };
    auto block_reduce = [&](float v, bool is_max) {
#pragma unroll
        for (int off = 16; off > 0; off /= 2) {
            const float o = __shfl_xor_sync(0xffffffffu, v, off);
            v = is_max ? fmaxf(v, o) : v + o;
        }
        if (tid % 32 == 0) red[tid / 32] = v;
        __syncthreads();
        float r = red[0];
        for (int w = 1; w < DWARPS; w++) r = is_max ? fmaxf(r, red[w]) : r + red[w];
        __syncthreads();
        return r;
    };
    float m = -INFINITY;   /* pass 1: the row's max score */
    for (int j = tid; j <= last; j += DTHREADS) m = fmaxf(m, score(j));
    m = block_reduce(m, true);
    float l = 0.0f, acc[(D + DTHREADS - 1) / DTHREADS] = {};
    for (int j0 = 0; j0 <= last; j0 += DTHREADS) {   /* pass 2 */
        const int j = j0 + tid, cnt = min(DTHREADS, last + 1 - j0);
        ws[tid] = j <= last ? expf(score(j) - m) : 0.0f;
        l += ws[tid];
        __syncthreads();
        for (int k = tid, c = 0; k < D; k += DTHREADS, c++)
            for (int jj = 0; jj < cnt; jj++) acc[c] += ws[jj] * __half2float(a.V[key_row(j0 + jj) + k]);
        __syncthreads();
    }
    l = block_reduce(l, false);
    for (int k = tid, c = 0; k < D; k += DTHREADS, c++) a.O[(size_t)row * D + k] = acc[c] / l;
    if (tid == 0) a.L[row] = m + logf(l);
}

/* Shared memory: the layout must fit the smallest opt-in limit of the build's GPUs
 * (sm_86/89: 99 KiB), and the merge must fit in the K/V stages it reuses. */
#ifndef DEC_SMEM_CAP
#define DEC_SMEM_CAP SMEM_OPTIN_SM86
#endif
#define DEC_ASSERT_D(D_)                                                                        \
    static_assert(DCfg<D_>::SMEM <= DEC_SMEM_CAP, "decode: shared memory above DEC_SMEM_CAP (99 KiB)");        \
    static_assert(DCfg<D_>::MERGE <= DCfg<D_>::STAGES * DCfg<D_>::STAGE, "decode: merge > stages"); \
    static_assert((D_) % 32 == 0, "decode: d a multiple of 32 (the combine's lanes)");     \
    static_assert(sizeof(float) * DWARPS * DEC_MAX_SPLITS <= DCfg<D_>::STAGES * DCfg<D_>::STAGE, \
                  "decode: the fused combine's weights fit the K/V stages");                \
    static_assert((D_) > 128 || (DCfg<D_, 4>::SMEM <= DEC_SMEM_CAP &&                           \
                                 DCfg<D_, 4>::MERGE <= DCfg<D_, 4>::STAGES * DCfg<D_, 4>::STAGE), \
                  "decode: the 64-row block's layout");
DEC_ASSERT_D(32)
DEC_ASSERT_D(64)
DEC_ASSERT_D(128)
DEC_ASSERT_D(256)

/* The block's rows: 16 (WR = 1), or 64 (WR = 4) when a group has more than 16 query rows
 * and d <= 128 (at d = 256 the warp's O~ alone is 128 registers: no room for 64 keys of S);
 * decode.h's dec_gpu_block_rows says which, for the host's bytes, visits and splits too. */
template <int D, bool PAGED, bool FDPP>
static void launch_rows(const DecArgs &a, dim3 grid, int rows)
{
    static bool attr_set[2] = {false, false};   /* more than 48 KiB of shared memory needs an opt-in */
    if constexpr (D <= 128) {
        if (rows == 4 * ROWS) {
            if (!attr_set[1]) {
                CUDA_CHECK(cudaFuncSetAttribute(dec_split_kernel<D, PAGED, FDPP, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)DCfg<D, 4>::SMEM));
                attr_set[1] = true;
            }
            dec_split_kernel<D, PAGED, FDPP, 4><<<grid, DTHREADS, DCfg<D, 4>::SMEM>>>(a);
            CUDA_CHECK_LAUNCH();
            return;
        }
    }
    {
        if (!attr_set[0]) {
            CUDA_CHECK(cudaFuncSetAttribute(dec_split_kernel<D, PAGED, FDPP>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)DCfg<D>::SMEM));
            attr_set[0] = true;
        }
        dec_split_kernel<D, PAGED, FDPP><<<grid, DTHREADS, DCfg<D>::SMEM>>>(a);
    }
    CUDA_CHECK_LAUNCH();
}

template <int D, bool PAGED>
static void launch_split(const DecArgs &a, dim3 grid, int rows)
{
    launch_rows<D, PAGED, false>(a, grid, rows);
}

extern "C" int dec_gpu_config(int d, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = "split";
    c->threads = DTHREADS;
    c->blocks = fa2_mma_blocks(d);   /* the split ranges' Bc; Br: the model's Q block */
    switch (d) {
    case 32:  c->smem_bytes = DCfg<32>::SMEM; break;
    case 64:  c->smem_bytes = DCfg<64>::SMEM; break;
    case 128: c->smem_bytes = DCfg<128>::SMEM; break;
    case 256: c->smem_bytes = DCfg<256>::SMEM; break;
    default:
        snprintf(why, len, "the decode kernels are built for d = 32, 64, 128 and 256, not d = %d", d);
        return -1;
    }
    return fa1_config_fits(c, why, len);
}

/* The blocks of one variant of the split kernel the whole GPU holds at once: the paged
 * kernel needs more registers (its page ids, a tile ahead) and may fit fewer per SM. */
template <int D, bool PAGED, int WR>
static int slots_wr(int sms)
{
    int per_sm = 0;
    CUDA_CHECK(cudaFuncSetAttribute(dec_split_kernel<D, PAGED, false, WR>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)DCfg<D, WR>::SMEM));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, dec_split_kernel<D, PAGED, false, WR>, DTHREADS, DCfg<D, WR>::SMEM));
    return sms * (per_sm > 0 ? per_sm : 1);
}

template <int D, bool PAGED>
static int slots_of(int sms, int rows)
{
    if constexpr (D <= 128) { if (rows == 4 * ROWS) return slots_wr<D, PAGED, 4>(sms); }
    return slots_wr<D, PAGED, 1>(sms);
}

extern "C" int dec_gpu_sms(void) { return gpu_sm_count(); }

extern "C" int dec_gpu_slots(int d, bool paged, int rows)
{
    const int sms = gpu_sm_count();
    if (d == 32) return paged ? slots_of<32, true>(sms, rows) : slots_of<32, false>(sms, rows);
    if (d == 64) return paged ? slots_of<64, true>(sms, rows) : slots_of<64, false>(sms, rows);
    if (d == 256) return paged ? slots_of<256, true>(sms, rows) : slots_of<256, false>(sms, rows);
    return paged ? slots_of<128, true>(sms, rows) : slots_of<128, false>(sms, rows);
}

extern "C" void dec_gpu_launch(const attn_problem_t *p, const dec_gpu_args_t *g, bool pack, int S)
{
    DecArgs a;
    a.p = *p;
    a.Q = (const __half *)g->q;
    a.K = (const __half *)g->k;
    a.V = (const __half *)g->v;
    a.seqlens = g->seqlens;
    a.table = g->table;
    a.page = g->page;
    a.pps = g->pages_per_seq;
    if (g->page > 0 && (g->page & (g->page - 1)) != 0) {   /* the driver's pages are 16..256 */
        fprintf(stderr, "dec_gpu_launch: page size %d is not a power of two\n", g->page);
        exit(2);
    }
    a.O = g->o;
    a.L = g->L;
    const size_t nrows = (size_t)p->B * p->H * p->N_q;
    a.Opart = g->ws;
    a.Lpart = g->ws + (size_t)S * nrows * p->d;
    a.S = S;
    a.Bc = fa2_mma_blocks(p->d).Bc;
    a.pack = pack;
    a.phi = 0.0f;
    const int G = pack ? p->H / p->H_kv : 1, groups = pack ? p->H_kv : p->H, rows = dec_gpu_block_rows(p, pack);
    /* the fused combine (S = 1 writes the output itself) when a row tile holds at most
     * DEC_FUSED_MAX_ROWS rows; past that the merge, one block's 4 warps after every split,
     * costs more than the second launch it saves (decode.h) */
    a.done = S > 1 && (G * p->N_q < rows ? G * p->N_q : rows) <= DEC_FUSED_MAX_ROWS ? g->done : NULL;
    const dim3 grid(S, (G * p->N_q + rows - 1) / rows, p->B * groups);
    a.vis = gpu_visits(S);
    const bool paged = g->page > 0;
    switch (p->d) {
    case 32:  paged ? launch_split<32, true>(a, grid, rows) : launch_split<32, false>(a, grid, rows); break;
    case 64:  paged ? launch_split<64, true>(a, grid, rows) : launch_split<64, false>(a, grid, rows); break;
    case 128: paged ? launch_split<128, true>(a, grid, rows) : launch_split<128, false>(a, grid, rows); break;
    case 256: paged ? launch_split<256, true>(a, grid, rows) : launch_split<256, false>(a, grid, rows); break;
    default: return;   /* dec_gpu_config() said -1; the driver never gets here */
    }
    if (S > 1 && !a.done) dec_gpu_combine(p->d, S, (int)nrows, a.Opart, a.Lpart, g->o, g->L);   /* S <= DEC_MAX_SPLITS: FA_SPLITS up to 1024 */
}

/* FD++: the split kernel with the unified max (partials even for S = 1), the FD++ combine,
 * and the fallback for the rows it flags. The flags live in a buffer of this file, grown on
 * the first (untimed, checked) launch of a shape. */
static uint8_t *fdpp_redo;
static size_t fdpp_redo_cap;

template <int D, bool PAGED>
static void launch_fdpp(const DecArgs &a, dim3 grid, int rows, int nrows, const dec_gpu_args_t *g)
{
    launch_rows<D, PAGED, true>(a, grid, rows);
    dec_fdpp_combine_kernel<D><<<(nrows + DWARPS - 1) / DWARPS, DTHREADS>>>(a.p, a.seqlens, a.S, nrows, a.phi, a.Opart,
                                                                          a.Lpart, g->o, g->L, fdpp_redo);
    CUDA_CHECK_LAUNCH();
    dec_recompute_kernel<D, PAGED><<<nrows, DTHREADS>>>(a, fdpp_redo);
    CUDA_CHECK_LAUNCH();
}

extern "C" void dec_gpu_launch_fdpp(const attn_problem_t *p, const dec_gpu_args_t *g, int S, float phi)
{
    const size_t nrows = (size_t)p->B * p->H * p->N_q;
    if (nrows > fdpp_redo_cap) {
        if (fdpp_redo) CUDA_CHECK(cudaFree(fdpp_redo));
        CUDA_CHECK(cudaMalloc((void **)&fdpp_redo, nrows));
        fdpp_redo_cap = nrows;
    }
    DecArgs a;
    memset(&a, 0, sizeof a);
    a.p = *p;
    a.Q = (const __half *)g->q; a.K = (const __half *)g->k; a.V = (const __half *)g->v;
    a.seqlens = g->seqlens; a.table = g->table; a.page = g->page; a.pps = g->pages_per_seq;
    a.O = g->o; a.L = g->L;   /* the fallback's rows */
    a.Opart = g->ws;
    a.Lpart = g->ws + (size_t)S * nrows * p->d;
    a.S = S;
    a.Bc = fa2_mma_blocks(p->d).Bc;
    a.pack = 1;
    a.phi = phi;
    const int G = p->H / p->H_kv, rows = dec_gpu_block_rows(p, true);
    const dim3 grid(S, (G * p->N_q + rows - 1) / rows, p->B * p->H_kv);
    a.vis = gpu_visits(S);
    const bool paged = g->page > 0;
    const int n = (int)nrows;
    switch (p->d) {
    case 32:  paged ? launch_fdpp<32, true>(a, grid, rows, n, g) : launch_fdpp<32, false>(a, grid, rows, n, g); break;
    case 64:  paged ? launch_fdpp<64, true>(a, grid, rows, n, g) : launch_fdpp<64, false>(a, grid, rows, n, g); break;
    case 128: paged ? launch_fdpp<128, true>(a, grid, rows, n, g) : launch_fdpp<128, false>(a, grid, rows, n, g); break;
    case 256: paged ? launch_fdpp<256, true>(a, grid, rows, n, g) : launch_fdpp<256, false>(a, grid, rows, n, g); break;
    default: return;   /* dec_gpu_config() said -1 */
    }
}

extern "C" long dec_gpu_fdpp_recomputed(uint8_t *flags, size_t nrows)
{
    int n = 0;
    const int zero = 0;
    CUDA_CHECK(cudaMemcpyFromSymbol(&n, dec_fdpp_redo_d, sizeof n));
    CUDA_CHECK(cudaMemcpyToSymbol(dec_fdpp_redo_d, &zero, sizeof zero));
    if (flags) {
        if (fdpp_redo && nrows <= fdpp_redo_cap) CUDA_CHECK(cudaMemcpy(flags, fdpp_redo, nrows, cudaMemcpyDeviceToHost));
        else memset(flags, 0, nrows);
    }
    return n;
}

extern "C" void dec_gpu_combine(int d, int S, int nrows, const float *Opart, const float *Lpart, float *O, float *L)
{
    const int blocks = (nrows + DWARPS - 1) / DWARPS;
    if (d == 32) dec_combine_kernel<32><<<blocks, DTHREADS>>>(S, nrows, Opart, Lpart, O, L);
    else if (d == 64) dec_combine_kernel<64><<<blocks, DTHREADS>>>(S, nrows, Opart, Lpart, O, L);
    else if (d == 256) dec_combine_kernel<256><<<blocks, DTHREADS>>>(S, nrows, Opart, Lpart, O, L);
    else dec_combine_kernel<128><<<blocks, DTHREADS>>>(S, nrows, Opart, Lpart, O, L);
    CUDA_CHECK_LAUNCH();
}

extern "C" int dec_gpu_page_faults(void)
{
    int n = 0;
#ifdef EX_BUILD
    const int zero = 0;
    CUDA_CHECK(cudaMemcpyFromSymbol(&n, dec_page_faults_d, sizeof n));
    CUDA_CHECK(cudaMemcpyToSymbol(dec_page_faults_d, &zero, sizeof zero));
#endif
    return n;
}

/* A cache of random fp16 values made on the device (the sweep's inputs at sizes the host
 * would take minutes to draw): a hash of (seed, index) to a uniform value in [-2, 2). */
__global__ void dec_fill_kernel(__half *x, size_t n, unsigned long long seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned long long z = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        x[i] = __float2half((float)(z >> 40) * (4.0f / 16777216.0f) - 2.0f);
    }
}

extern "C" void dec_gpu_fill(void *x, size_t n, unsigned long long seed)
{
    dec_fill_kernel<<<1024, 256>>>((__half *)x, n, seed);
    CUDA_CHECK_LAUNCH();
}

/* One thread per 16-byte chunk of a key row: row j of (b, g) to row j % page of pool page
 * table[b pps + j / page]. */
__global__ void dec_paginate_kernel(attn_problem_t p, const uint4 *k, const uint4 *v, const int *table, int page,
                                    int pps, uint4 *kp, uint4 *vp)
{
    const int CH = p.d / 8;
    const size_t total = (size_t)p.B * p.H_kv * p.N_kv * CH;
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
        const size_t row = e / CH;
        const int c = (int)(e % CH), j = (int)(row % p.N_kv);
        const int bg = (int)(row / p.N_kv), b = bg / p.H_kv, g = bg % p.H_kv;
        const int pid = table[(size_t)b * pps + j / page];
        const size_t to = (((size_t)pid * p.H_kv + g) * page + j % page) * CH + c;
        kp[to] = k[e];
        vp[to] = v[e];
    }
}

extern "C" void dec_gpu_paginate(const attn_problem_t *p, const void *k, const void *v, const int *table, int page,
                                 int pps, void *kpool, void *vpool)
{
    dec_paginate_kernel<<<2048, 256>>>(*p, (const uint4 *)k, (const uint4 *)v, table, page, pps, (uint4 *)kpool, (uint4 *)vpool);
    CUDA_CHECK_LAUNCH();
}
