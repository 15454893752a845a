/* fa1_blocks.h - the blocks of fa1-mma (fa1_mma.cu), one row per head dimension.
 *
 * The one place they are chosen; gcc reads it (fa1_mma_supports(), the driver) and nvcc
 * reads it (the kernel's template parameters, fa1_mma_config()). Each value is a make
 * variable (`make FA1_D64_WC=2 phase3-build`): make writes the ones that are set into
 * $(BUILD)/gen/fa1_blocks_set.h (included below), which both compilers see and which
 * the objects that include this file depend on, so a change rebuilds them (fa2_blocks.h).
 *
 * The kernel's thread block is WR x WC warps over one step (i, j) of Alg. 1 ("split-K"):
 * warp (wr, wc) takes query rows 16 wr .. 16 wr + 15 of Q_i and keys
 * FA1_WARP_KEYS wc .. FA1_WARP_KEYS (wc + 1) - 1 of K_j, so
 *
 *   Br = 16 * WR        Bc = FA1_WARP_KEYS * WC
 *
 *   keys of K_j ->   | warp (0,0) | warp (0,1) | ... | warp (0,WC-1) |  rows 0..15 of Q_i
 *                    | warp (1,0) | warp (1,1) | ... |               |  rows 16..31
 *                      <- FA1_WARP_KEYS ->
 *
 * Defaults: d = 32, 64: 2 x 4 warps (Br = 32, Bc = 256); d = 128: 4 x 2 (Br = 64,
 * Bc = 128). Shared memory: 74.5 KiB at d = 32, 134.5 KiB at d = 64, 203.5 KiB at
 * d = 128: fa1_mma.cu asserts only the 227 KiB of sm_90, and fa1_mma_config() reports
 * (return 1) a device with less.
 */
#ifndef PHASE3_FA1_BLOCKS_H
#define PHASE3_FA1_BLOCKS_H

#ifdef FA_BLOCKS_GEN
#include "fa1_blocks_set.h"   /* $(BUILD)/gen/: the make variables that were set */
#endif

/* Keys of K_j one warp takes in a step: its S slice is 16 x FA1_WARP_KEYS in registers
 * (FA1_WARP_KEYS / 8 n-tiles), a multiple of 16 (two n-tiles per ldmatrix). */
#ifndef FA1_WARP_KEYS
#define FA1_WARP_KEYS 64
#endif

#ifndef FA1_D32_WR
#define FA1_D32_WR 2
#endif
#ifndef FA1_D32_WC
#define FA1_D32_WC 4
#endif
#ifndef FA1_D64_WR
#define FA1_D64_WR 2
#endif
#ifndef FA1_D64_WC
#define FA1_D64_WC 4
#endif
#ifndef FA1_D128_WR
#define FA1_D128_WR 4
#endif
#ifndef FA1_D128_WC
#define FA1_D128_WC 2
#endif

/* The table: X(d, WR, WC) for every head dimension the kernel is built for. */
#define FA1_MMA_TABLE(X)                    \
    X(32,  FA1_D32_WR,  FA1_D32_WC)         \
    X(64,  FA1_D64_WR,  FA1_D64_WC)         \
    X(128, FA1_D128_WR, FA1_D128_WC)

/* Two speed-ups that change no result, each a switch (1 = on) so that their effect can be
 * measured (make FA1_K_IN_REGISTERS=0): K_j kept in registers across the inner loop
 * (d <= 64), and no mask arithmetic on warp tiles that are entirely visible. */
#ifndef FA1_K_IN_REGISTERS
#define FA1_K_IN_REGISTERS 1
#endif
#ifndef FA1_SKIP_FULL_MASK
#define FA1_SKIP_FULL_MASK 1
#endif

#endif
