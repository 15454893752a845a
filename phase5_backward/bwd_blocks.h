/* bwd_blocks.h - the blocks of the backward pass (FA2 Alg. 2), one row per head dimension.
 *
 * The one place they are chosen: the CPU model and the simple kernel read them
 * (bwd_blocks(), bwd.h), so that the model's bytes are the kernel's. Each value can be set on the compiler's command line
 * (-DBWD_D64_BC=64); the defaults are below.
 *
 *   Bc = K/V rows of a block (the OUTER loop j: dK_j, dV_j stay on chip)
 *   Br = query rows of a block (the INNER loop i: Q_i, dO_i, L_i, D_i read, dQ_i updated)
 *
 * Each row must keep the CPU model's SRAM (bwd_sram_bytes(): K_j, V_j, dK_j, dV_j,
 * Q_i, dO_i, dQ_i, two Br x Bc tiles, L_i, D_i, in fp32) within BWD_SRAM_MAX; bwd_cpu.c
 * asserts it. The simple kernel (bwd_simple.cu) keeps exactly those fp32 tiles in shared
 * memory, so it uses these rows too.
 *
 * The mma kernel (bwd_mma.cu) keeps dK_j and dV_j in registers and its tiles in fp16, so
 * its blocks are larger: BWD_MMA_TABLE below, X(d, Br, Bc). Bc = 16 keys per warp, so Bc
 * also sets the warps (Bc / 16); Br is the rows of Q_i, dO_i a step. The driver gives the
 * formula those blocks, so the bytes it shows for the mma row are that kernel's.
 */
#ifndef PHASE5_BWD_BLOCKS_H
#define PHASE5_BWD_BLOCKS_H

#define BWD_SRAM_MAX (224 * 1024)   /* bytes: an H100 SM's 228 KiB of shared memory, less 4 */

#ifndef BWD_D32_BR
#define BWD_D32_BR 64
#endif
#ifndef BWD_D32_BC
#define BWD_D32_BC 128
#endif
#ifndef BWD_D64_BR
#define BWD_D64_BR 32
#endif
#ifndef BWD_D64_BC
#define BWD_D64_BC 128
#endif
#ifndef BWD_D128_BR
#define BWD_D128_BR 32
#endif
#ifndef BWD_D128_BC
#define BWD_D128_BC 64
#endif
#ifndef BWD_D256_BR
#define BWD_D256_BR 16
#endif
#ifndef BWD_D256_BC
#define BWD_D256_BC 32
#endif

/* X(d, Br, Bc) for every head dimension with its own row; any other d gets d = 64's. */
#define BWD_TABLE(X)                      \
    X(32,  BWD_D32_BR,  BWD_D32_BC)       \
    X(64,  BWD_D64_BR,  BWD_D64_BC)       \
    X(128, BWD_D128_BR, BWD_D128_BC)      \
    X(256, BWD_D256_BR, BWD_D256_BC)

/* The mma kernel's rows: X(d, Br, Bc). d = 128 takes Br = 32: with 64 rows a step the
 * S^T and dP^T accumulators (2 x 32 registers) beside dK_j and dV_j (2 x 64) spill. */
#ifndef BWD_MMA_D32_BR
#define BWD_MMA_D32_BR 64
#endif
#ifndef BWD_MMA_D64_BR
#define BWD_MMA_D64_BR 64
#endif
#ifndef BWD_MMA_D128_BR
#define BWD_MMA_D128_BR 32
#endif
#ifndef BWD_MMA_BC
#define BWD_MMA_BC 128
#endif
#define BWD_MMA_TABLE(X)                     \
    X(32,  BWD_MMA_D32_BR,  BWD_MMA_BC)      \
    X(64,  BWD_MMA_D64_BR,  BWD_MMA_BC)      \
    X(128, BWD_MMA_D128_BR, BWD_MMA_BC)

/* The mma2d kernel's rows (bwd_mma2d.cu): X(d, Br, Bc, SM, KN, QM), 8 warps, FA2's blocks
 * and warp grids on an H100 (its Flash_bwd_kernel_traits<d, kBlockM, kBlockN, 8,
 * AtomLayoutMSdP, AtomLayoutNdKV, AtomLayoutMdQ> for >= 144 KiB of shared memory, d = 256's
 * for >= 176 KiB):
 *   SM  warps along Br in the S/dP grid (Br x Bc; Bc over the other 8 / SM)
 *   KN  warps along Bc in the dK/dV grid (Bc x d; d over the other 8 / KN)
 *   QM  warps along Br in the dQ grid (Br x d; d over the other 8 / QM)
 * A warp's dK_j, dV_j tile lives in registers for the whole loop: Bc d / 128 floats each a
 * thread (d = 128, 256: 2 x 64). Shared memory (bwd_mma2d.cu's picture): d = 32 130 KiB,
 * 64 178 KiB, 128 171 KiB, 256 217 KiB, so all but d = 32 need an H100's 227 KiB (on an
 * A100, 163 KiB, the config says skipped). Br and Bc can be set as -DBWD_MMA2D_D64_BR=64;
 * the static_asserts of bwd_mma2d.cu check that the grids still divide them. */
#ifndef BWD_MMA2D_D32_BR
#define BWD_MMA2D_D32_BR 128
#endif
#ifndef BWD_MMA2D_D32_BC
#define BWD_MMA2D_D32_BC 128
#endif
#ifndef BWD_MMA2D_D64_BR
#define BWD_MMA2D_D64_BR 128
#endif
#ifndef BWD_MMA2D_D64_BC
#define BWD_MMA2D_D64_BC 128
#endif
#ifndef BWD_MMA2D_D128_BR
#define BWD_MMA2D_D128_BR 64
#endif
#ifndef BWD_MMA2D_D128_BC
#define BWD_MMA2D_D128_BC 128
#endif
#ifndef BWD_MMA2D_D256_BR
#define BWD_MMA2D_D256_BR 64
#endif
#ifndef BWD_MMA2D_D256_BC
#define BWD_MMA2D_D256_BC 64
#endif
/*                        d    Br                 Bc                 SM KN QM */
#define BWD_MMA2D_TABLE(X)                                                 \
    X(32,  BWD_MMA2D_D32_BR,  BWD_MMA2D_D32_BC,  4, 4, 4)                 \
    X(64,  BWD_MMA2D_D64_BR,  BWD_MMA2D_D64_BC,  4, 4, 4)                 \
    X(128, BWD_MMA2D_D128_BR, BWD_MMA2D_D128_BC, 2, 4, 2)                 \
    X(256, BWD_MMA2D_D256_BR, BWD_MMA2D_D256_BC, 4, 2, 2)

/* The wgmma kernel's rows (bwd_wgmma.cu, sm_90a): X(d, Br, Bc). Two warpgroups of 64 keys
 * (Bc = 128), keys as wgmma's M, so S^T and dP^T are 64 keys x Br queries a warpgroup; Br =
 * 64 (FA3's at d = 128): Br = 128 doubles S^T, dP^T to 2 x 64 registers a thread beside dK_j,
 * dV_j's 2 x 64 at d = 128 and spills. Shared memory 82 KiB (d = 64), 146 KiB (d = 128).
 * Br is fixed at 64 (a dS^T row is one 128-byte swizzle row); Bc must be 128 (two
 * warpgroups; bwd_wgmma.cu's static_asserts). */
#define BWD_WGMMA_BR 64
#define BWD_WGMMA_BC 128
#define BWD_WGMMA_TABLE(X)                       \
    X(64,  BWD_WGMMA_BR, BWD_WGMMA_BC)           \
    X(128, BWD_WGMMA_BR, BWD_WGMMA_BC)

/* The warp-specialised kernels' rows (bwd_wgmma_ws.cu: wgmma-ws, wgmma-det): X(d, Br, Bc).
 * d = 128 as above. d = 64 takes Br = 128, FlashAttention-3's block at d = 64: a d = 64
 * step of 64 queries does half a d = 128 step's work at the same fixed cost (the waits,
 * the barrier, the dQ tile), so each warpgroup takes S^T and dP^T for 128 queries (2 x 64
 * registers a thread) beside dK_j, dV_j's 2 x 32, and computes dQ for 64 of the 128 query
 * rows over all 128 keys. Br = 64 at d = 64 can be built with -DBWD_WGMMA_WS_D64_BR=64. */
#ifndef BWD_WGMMA_WS_D64_BR
#define BWD_WGMMA_WS_D64_BR 128
#endif
#define BWD_WGMMA_WS_TABLE(X)                        \
    X(64,  BWD_WGMMA_WS_D64_BR, BWD_WGMMA_BC)        \
    X(128, BWD_WGMMA_BR, BWD_WGMMA_BC)

/* The two-pass variant's second kernel (dQ, Q blocks outer): 4 warps of 16 rows, Bc keys. */
#define BWD_DQ_BR 64
#define BWD_DQ_BC 64

#endif
