/* step 4, wgmma-pingpong: step 3 with the two consumer warpgroups taking turns on the
 * tensor cores, so that one's softmax runs while the other's products do:
 *                                                  build/phase4 --kernel wgmma-pingpong
 *   tensor cores:  S_j(A)  S_j(B)  PV_j(A)  PV_j(B)  S_j+1(A)  S_j+1(B)  ...
 *   WG A:         [S_j] softmax_j ......[PV_j] ...........[S_j+1] softmax_j+1 ...
 *   WG B:                [S_j] softmax_j ......[PV_j] ...........[S_j+1] ...
 *                 the turn passes each time a warpgroup has issued a product ([..])
 *
 * What it adds to step 3: the turns (turns.cuh's Pingpong, on the named barriers
 * bar_turn(c)), 2 a block: attend_block takes one before each product it issues and hands
 * it over right after. */
#pragma once
#include "step03_ws.cuh"

template <int D>
using Step4 = Step3<D, Pingpong>;
