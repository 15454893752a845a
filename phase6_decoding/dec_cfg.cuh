/* dec_cfg.cuh - the decode kernels' shared shape: the block (warps, tile keys, rows), its
 * shared-memory layout (DCfg), the arguments of one launch (DecArgs), and the three spellings
 * the CPU emulator (tools/mma_emu, g++ without __CUDACC__) replaces: block-shared arrays,
 * the dynamic shared memory, the L2-hinted copy (dec_kv.cuh).
 *
 * The parts, each a small header of this folder, used by every variant:
 *   dec_bounds.cuh   a split's keys (dec_split_range's whole Bc blocks)
 *   dec_kv.cuh       the K/V tile loads (the cp.async ring) of a contiguous cache
 *   dec_softmax.cuh  one tile's S = Q K^T, its mask, the online softmax, P V, the warps' merge
 *   dec_combine.cuh  the log-sum-exp combine of a row's S partials, and its kernel
 * and the variants (decode.h's DEC_VARIANTS), each a file that holds what it adds:
 *   dec_split.cuh       split: the split kernel itself, one block's steps in order
 *   dec_split_pack.cuh  split-pack: GQA packing, a KV head's query heads as one block's rows
 *   dec_fused.cuh       fused: the combine in the split kernel's last block of a row tile
 *   dec_paged.cuh       paged: K and V through the block table (the page walk)
 *   dec_ragged.cuh      ragged: each sequence its own length (seqlens_k)
 *   dec_fdpp.cuh        fdpp: FlashDecoding++'s unified max (dec_fdpp_combine.cuh: its
 *                       combine and fallback)
 * dec_kernels.cuh names the split kernels by their parts; decode.cu launches them.
 */
#ifndef PHASE6_DEC_CFG_CUH
#define PHASE6_DEC_CFG_CUH
#include <cuda_fp16.h>
#include <math.h>
#include <stddef.h>
#include "mma.cuh"
#include "visits.cuh"
#include "decode.h"

#ifdef __CUDACC__
#define DEC_SHARED __shared__   /* a block-shared array */
#define DEC_DYNAMIC_SMEM(name) extern __shared__ __align__(16) unsigned char name[]
#else   /* the emulator: one block at a time, its threads std::threads; the block's host buffer */
#define DEC_SHARED static
#define DEC_DYNAMIC_SMEM(name) unsigned char *name = g_smem
#endif

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

/* Rows of a K/V tile one thread copies: thread t copies the 16-byte chunks t + k THREADS,
 * k < KV_ROWS, each of a row of its own (row (t + k THREADS) / (D / 8)). */
template <int D> struct KvRows { static constexpr int N = BK * (D / 8) / DTHREADS; };

#endif
