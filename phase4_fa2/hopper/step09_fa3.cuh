/* step 9, wgmma-fa3: step 8 with pingpong, one turn an iteration (FlashAttention-3, Sec. 3.1):
 * a warpgroup issues its products (S_j and P~_(j-1) V_(j-1), or S_0 alone, or the last P~ V
 * alone) only in its turn, and hands the turn over right after issuing them, so the other's
 * products run under its softmax:           build/phase4 --kernel wgmma-fa3
 *
 *   tensor cores:  [S_1 PV_0](A) [S_1 PV_0](B) [S_2 PV_1](A) [S_2 PV_1](B) ...
 *   WG A:          issue | softmax_1 ...........| issue | softmax_2 ...
 *   WG B:                  issue | softmax_1 .........  | issue | ...
 *
 * What it adds to step 8: the turns (turns.cuh's Pingpong; step 4 handed the turn over
 * twice an iteration, around each product), n_blocks + 1 a warpgroup, taken where
 * fa3_order_loop issues. */
#pragma once
#include "step08_fa3order.cuh"

template <int D>
using Step9 = Step8<D, Pingpong>;
