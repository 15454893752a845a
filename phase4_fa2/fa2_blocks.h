/* fa2_blocks.h - the blocks of fa2-mma (fa2_mma.cu), one row per head dimension.
 *
 * The one place they are chosen. gcc reads it (fa2_mma_blocks(): the CPU model and the
 * driver use the kernel's Br x Bc, so the model's bytes are the kernel's) and nvcc reads
 * it (the kernel's template parameters, fa2_mma_config()). Each value is a make variable:
 *
 *   make FA2_D64_BC=64 phase4-build
 *
 * writes it into the build's generated $(BUILD)/gen/fa2_blocks_set.h (included below),
 * which both compilers see and which every object that includes this file depends on:
 * changing a value rebuilds exactly those objects. A hand compile without make (no
 * -DFA_BLOCKS_GEN) gets the defaults.
 *
 * A thread block is FA2_WARPS_OF(d) warps; each warp owns MT m-tiles of 16 query rows for
 * the whole K/V loop (split-Q), so
 *
 *   Br = 16 * FA2_WARPS_OF(d) * MT        Bc = keys per K/V block (a multiple of 16)
 *
 * Defaults, each chosen by measurement on the H100 (tools/blocks_compare.sh; chapter 4):
 *   d = 32:  MT = 1 (Q_i stays in registers), Bc = 128, STAGES = 2;
 *   d = 64:  MT = 2, Bc = 128, STAGES = 1 (MT = 2 beat MT = 1 by 1.13-1.16x: every K or V
 *            fragment a warp loads from shared memory feeds two m-tiles; Bc = 128 beat 64
 *            by 1.07x: half the row-max shuffles, barriers and rescales per key);
 *   d = 128: MT = 2, Bc = 64, STAGES = 1 (1.15-1.18x over Bc = 32 with two stages: Q_i's
 *            fragments, read from shared memory once per K/V block, are then read half as
 *            often per key; two stages at Bc = 64 would not fit 99 KiB);
 *   d = 256: MT = 1, Bc = 64, STAGES = 1 (1.2x over Bc = 32, STAGES = 2), Q_i read from
 *            shared memory (in registers, 64 more, ptxas spills);
 * which are the official FlashAttention-2's blocks on this GPU (Nsight Compute names its
 * kernels' traits; at d = 256 they are 4 warps, Br = Bc = 64, as here). A thread holds
 * MT (Bc/2 + d/2) accumulator floats: 192 at d = 64 and 128, 160 at d = 256, of its 255
 * registers.
 * fa2_mma.cu static_asserts what must hold (Bc % 16 == 0, shared memory within the
 * 99 KiB of sm_86/89); `make phase4-spills` says whether a choice spills registers.
 */
#ifndef PHASE4_FA2_BLOCKS_H
#define PHASE4_FA2_BLOCKS_H

#ifdef FA_BLOCKS_GEN
#include "fa2_blocks_set.h"   /* $(BUILD)/gen/: the make variables that were set */
#endif

/* Warps per thread block: 4. At d = 256 a warp holds 16 rows (MT = 1), and 8 warps make
 * Br = 128, so each K/V block fetched from L2 serves twice the rows; at Bc = 64 that needs
 * 135 KiB of shared memory, more than sm_86/89 have, so it is an experiment for GPUs with
 * more (make FA2_D256_WARPS=8 FA2_D256_BC=64 FA2_SMEM_CAP=232448; chapter 4 has its time). */
#ifndef FA2_D256_WARPS
#define FA2_D256_WARPS 4
#endif
#define FA2_WARPS_OF(d) ((d) == 256 ? FA2_D256_WARPS : 4)

#ifndef FA2_D32_MT
#define FA2_D32_MT 1
#endif
#ifndef FA2_D32_STAGES
#define FA2_D32_STAGES 2
#endif
#ifndef FA2_D32_BC
#define FA2_D32_BC 128
#endif
#ifndef FA2_D64_MT
#define FA2_D64_MT 2
#endif
#ifndef FA2_D64_STAGES
#define FA2_D64_STAGES 1
#endif
#ifndef FA2_D64_BC
#define FA2_D64_BC 128
#endif
#ifndef FA2_D128_MT
#define FA2_D128_MT 2
#endif
#ifndef FA2_D128_STAGES
#define FA2_D128_STAGES 1
#endif
#ifndef FA2_D128_BC
#define FA2_D128_BC 64
#endif
#ifndef FA2_D256_MT
#define FA2_D256_MT 1
#endif
#ifndef FA2_D256_STAGES
#define FA2_D256_STAGES 1
#endif
#ifndef FA2_D256_BC
#define FA2_D256_BC 64
#endif
/* The shared memory a block of fa2-mma may take, in bytes: 99 KiB, the opt-in limit of
 * sm_86/89, the smallest of the GPUs the build promises. A larger value (e.g. 232448, the
 * H100's) lets block choices that only a larger GPU can run build, for an experiment; the
 * driver still asks the device and says so if one does not fit. */
#ifndef FA2_SMEM_CAP
#define FA2_SMEM_CAP SMEM_OPTIN_SM86
#endif

/* Bc of the Hopper chapter's warp-specialised kernels (hopper/, steps 3-5: wgmma-ws,
 * wgmma-pingpong, wgmma-overlap; Br = 128 there): 64 or 128 keys a K/V block, per d. A
 * block of 128 keys halves the per-block work that does not grow with the keys (the
 * mbarrier round trip, the row max's shuffles, the rescale of O~, the wait for each
 * product). Step 5 keeps two S accumulators, so it has its own value; steps 8 and 9
 * (FlashAttention-3's order: one S accumulator) take step 3's. Steps 1-2 keep Bc = 64 (one
 * warpgroup; 2-3 blocks an SM). */
#ifndef FA2_WS_D64_BC
#define FA2_WS_D64_BC 128
#endif
#ifndef FA2_WS_D128_BC
#define FA2_WS_D128_BC 128
#endif
#ifndef FA2_WS_OVERLAP_BC
#define FA2_WS_OVERLAP_BC 64
#endif
/* d = 256 (steps 3 and 6 only): a K and a V block of 64 keys take 64 KiB beside Q_i's 64 KiB,
 * so the H100's 227 KiB hold two ring slots; O~ takes 128 registers a thread */
#ifndef FA2_WS_D256_BC
#define FA2_WS_D256_BC 64
#endif
/* two_s: the step keeps two S accumulators (step 5) */
#define FA2_WS_BC(d, two_s) ((d) == 256 ? FA2_WS_D256_BC : (two_s) ? FA2_WS_OVERLAP_BC : (d) == 64 ? FA2_WS_D64_BC : FA2_WS_D128_BC)

/* The table: X(d, MT, Bc, STAGES, LADDER) for every head dimension the kernel is built
 * for. STAGES: K/V buffers in shared memory. 2: K_j+1 and V_j+1 stream into the second
 * pair while block j is computed (one barrier per block); 1: one K and one V buffer, as
 * the official FlashAttention-2 does: V_j streams in while S = Q_i K_j^T is computed,
 * K_j+1 while P~ V_j is (two barriers per block, half the shared memory). LADDER = 1 also builds the ablation ladder's variants (fa2_variant_t) for that d; with
 * 0 only the full kernel exists and every variant runs it. */
#define FA2_MMA_TABLE(X)                           \
    X(32,  FA2_D32_MT,  FA2_D32_BC,  FA2_D32_STAGES,  0)   \
    X(64,  FA2_D64_MT,  FA2_D64_BC,  FA2_D64_STAGES,  1)   \
    X(128, FA2_D128_MT, FA2_D128_BC, FA2_D128_STAGES, 1)   \
    X(256, FA2_D256_MT, FA2_D256_BC, FA2_D256_STAGES, 0)

/* The blocks of the ablation ladder's variants (fa2_variant_t: perstep, deferred, grid-bh,
 * noskip), X(d, MT, Bc, STAGES) for each d with LADDER = 1: the blocks fa2-mma had before
 * the table's current ones, so that every change of the ladder is measured on one kernel
 * shape, and the last step (deferred -> mma) is the change of blocks alone. */
#define FA2_LADDER_BLOCKS(X)   \
    X(64,  2, 64, 2)           \
    X(128, 2, 32, 2)

#endif
