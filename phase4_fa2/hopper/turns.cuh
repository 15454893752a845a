/* hopper/turns.cuh - pingpong: the two consumer warpgroups take turns on the tensor cores
 * (named barriers bar_turn(0), bar_turn(1), fwd_base.cuh). Turns is step 4's (a turn
 * around each product), IterTurns step 9's and FP8's pingpong row's (one turn an iteration). */
#pragma once
#include "fwd_base.cuh"

#if FA_HAVE_WGMMA

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

/* Step 9's turn, and the FP8 pingpong row's (wgmma-fp8-pingpong): one turn for each issue group
 * of a warpgroup (S_0, the n_blocks - 1 pairs S_j + P~_(j-1) V_(j-1), the last P~ V), so
 * n_blocks + 1 each, taken on bar_turn(c) and handed to the other's. Consumer 0
 * goes first; consumer 1 leaves out its last hand-over, so that every wait has exactly one
 * arrival and none is left at the block's end. on = false: every call does nothing. */
struct IterTurns {
    bool on;
    int c, left;                 /* this consumer; its hand-overs still to come */
    __device__ __forceinline__ IterTurns(bool on_, int c_, int n_blocks) : on(on_), c(c_), left(n_blocks + 1)
    {
        if (on && c == 1) named_bar_arrive(bar_turn(0), 2 * WG_THREADS);   /* consumer 0 goes first */
    }
    __device__ __forceinline__ void take() const { if (on) named_bar_sync(bar_turn(c), 2 * WG_THREADS); }
    __device__ __forceinline__ void hand_over()
    {
        if (on && !(c == 1 && left == 1)) named_bar_arrive(bar_turn(1 - c), 2 * WG_THREADS);
        left--;
    }
};

/* step 4's turns for consumer c: wait on its own barrier, hand over on the other's */
__device__ __forceinline__ Turns pingpong_turns(bool on, int c) { return Turns{on, bar_turn(c), bar_turn(1 - c), true}; }
#endif
