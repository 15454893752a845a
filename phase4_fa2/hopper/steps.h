/* hopper/steps.h - the Hopper forward ladder, one row a --kernel variant: the one list the
 * launcher (fa2_wgmma.cu), the driver's rows (fa2_rows.c) and the tools read.
 * `tools/kernels.sh phase4` prints it (name, step, what it adds), one line a row.
 *
 * FA2_HOPPER_STEPS(X): X(ID, name, step, D256, what it adds), the fp16 steps in the order of
 * the ladder (step 7, FP8, has inputs of its own: FA2_HOPPER_FP8_ROWS). D256: 1 where the
 * step is built for d = 256 too (its O~ takes 128 registers a thread; the others' schedules
 * need more than the 232 a consumer has there).
 *
 * FA2_HOPPER_FP8_ROWS(X): X(ID, name, PINGPONG, FMA_EX2, QUANTISE, what it adds): step 7 and
 * the variants of its schedule chapter 4b measures, each a row timed in the same run.
 * QUANTISE: the pre-pass runs in every launch (the row's time is fp16 in, O out). */
#ifndef PHASE4_HOPPER_STEPS_H
#define PHASE4_HOPPER_STEPS_H

#define FA2_HOPPER_STEPS(X)                                                                              \
    X(WGMMA, "wgmma", 1, 0, "wgmma from shared memory; cp.async loads, a __syncthreads a block")          \
    X(TMA, "wgmma-tma", 2, 0, "the copy engine (TMA) and an mbarrier ring of K/V slots")                 \
    X(WS, "wgmma-ws", 3, 1, "warp specialisation: a producer warpgroup, two consumers, Br = 128")       \
    X(PINGPONG, "wgmma-pingpong", 4, 0, "the consumers take turns on the tensor cores")                  \
    X(OVERLAP, "wgmma-overlap", 5, 0, "the next block's S issued before this block's softmax")           \
    X(PERSIST, "wgmma-persist", 6, 1, "a persistent grid: one CTA a SM, tiles from a counter")           \
    X(FA3ORDER, "wgmma-fa3order", 8, 0, "FlashAttention-3's order: the softmax under the last P~ V")     \
    X(FA3, "wgmma-fa3", 9, 0, "step 8 with pingpong, one turn an iteration")                             \
    X(STORE, "wgmma-store", 10, 0, "step 8 with O through shared memory and a TMA store")

#define FA2_HOPPER_FP8_ROWS(X)                                                                           \
    X(FP8, "wgmma-fp8", 0, 0, 0, "FlashAttention-3's FP8 on step 8's schedule (the kernel alone)")       \
    X(FP8_Q, "wgmma-fp8+q", 0, 0, 1, "wgmma-fp8 with its quantisation pre-pass in every launch")          \
    X(FP8_PINGPONG, "wgmma-fp8-pingpong", 1, 0, 0, "wgmma-fp8 with step 9's turns")                      \
    X(FP8_FMA_EX2, "wgmma-fp8-fmaex2", 0, 4, 0, "wgmma-fp8 with 4 of each 16 exponentials on the FMA pipe")

/* the fp16 steps as an enum (FA2_STEP_WGMMA = 0 ...) and their count (FA2_TABLE_ONLY: the
 * tables alone, for tools/kernels.sh) */
#ifndef FA2_TABLE_ONLY
typedef enum {
#define FA2_STEP_ENUM(ID, NAME, STEP, D256, WHAT) FA2_STEP_##ID,
    FA2_HOPPER_STEPS(FA2_STEP_ENUM)
#undef FA2_STEP_ENUM
    FA2_HOPPER_N_STEPS
} fa2_hopper_step_t;
typedef enum {
#define FA2_FP8_ENUM(ID, NAME, PP, FMA, QUANT, WHAT) FA2_ROW_##ID,
    FA2_HOPPER_FP8_ROWS(FA2_FP8_ENUM)
#undef FA2_FP8_ENUM
    FA2_HOPPER_N_FP8_ROWS
} fa2_hopper_fp8_row_t;
#endif

#endif
