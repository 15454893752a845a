/* hopper/turns.cuh - pingpong: the two consumer warpgroups take turns on the tensor cores,
 * on the named barriers bar_turn(0) and bar_turn(1) (fwd_base.cuh). A warpgroup takes its
 * turn before it issues products (waits at its own barrier: it completes when the other has
 * arrived there) and hands it over right after issuing them (arrives at the other's), then
 * waits for its results and runs its softmax while the other's products run. Where the
 * turns are taken is the step's: around each product (step 4, attend_block) or once an
 * iteration (step 9 and FP8's pingpong row, fa3_order_loop).
 *
 * Consumer 0 goes first (consumer 1 arrives on consumer 0's barrier once, at the start), and
 * consumer 1 leaves out its very last hand-over, so that every wait has exactly one arrival
 * and none is left at the block's end: a warpgroup that takes n turns hands over n times,
 * but consumer 1 n - 1. */
#pragma once
#include "fwd_base.cuh"

struct Pingpong {
    int c, left;   /* this consumer; its hand-overs still to come */
#if FA_HAVE_WGMMA
    __device__ __forceinline__ Pingpong(int c_, int turns) : c(c_), left(turns)
    {
        if (c == 1) named_bar_arrive(bar_turn(0), 2 * WG_THREADS);   /* consumer 0 goes first */
    }
    __device__ __forceinline__ void take() const { named_bar_sync(bar_turn(c), 2 * WG_THREADS); }
    __device__ __forceinline__ void hand_over()
    {
        if (!(c == 1 && left == 1)) named_bar_arrive(bar_turn(1 - c), 2 * WG_THREADS);
        left--;
    }
#endif
};

/* no turns: each warpgroup issues when it is ready (steps 1-3, 5-8, 10) */
struct NoTurns {
    __device__ __forceinline__ NoTurns(int = 0, int = 0) {}
    __device__ __forceinline__ void take() const {}
    __device__ __forceinline__ void hand_over() {}
};
