/* bwd_blocks.h - the blocks of the backward pass (FA2 Alg. 2), one row per head dimension.
 *
 * The one place they are chosen: the CPU model reads them now (bwd_blocks(), bwd.h) and
 * the GPU kernel of a later session will read the same rows, so that the model's bytes
 * are the kernel's. Each value can be set on the compiler's command line
 * (-DBWD_D64_BC=64); the defaults are below.
 *
 *   Bc = K/V rows of a block (the OUTER loop j: dK_j, dV_j stay on chip)
 *   Br = query rows of a block (the INNER loop i: Q_i, dO_i, L_i, D_i read, dQ_i updated)
 *
 * Each row must keep the CPU model's SRAM (bwd_sram_bytes(): K_j, V_j, dK_j, dV_j,
 * Q_i, dO_i, dQ_i, two Br x Bc tiles, L_i, D_i, in fp32) within BWD_SRAM_MAX; bwd_cpu.c
 * asserts it. These are first choices for the CPU model (the GPU session will tune them).
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

#endif
