/* step 4, wgmma-pingpong: step 3 with the two consumer warpgroups taking turns on the
 * tensor cores, so that one's softmax runs while the other's products do:
 *                                                  build/phase4 --kernel wgmma-pingpong
 *   tensor cores:  S_j(A)  S_j(B)  PV_j(A)  PV_j(B)  S_j+1(A)  S_j+1(B)  ...
 *   WG A:         [S_j] softmax_j ......[PV_j] ...........[S_j+1] softmax_j+1 ...
 *   WG B:                [S_j] softmax_j ......[PV_j] ...........[S_j+1] ...
 *                 the turn passes each time a warpgroup has issued a product ([..])
 *
 * What it adds to step 3: the turns (turns.cuh's Turns, on the named barriers bar_turn(c)):
 * before it issues a product a consumer waits for its turn; right after issuing it hands
 * the turn to the other. Consumer 0 goes first (consumer 1 arrives on its barrier once,
 * before the loop), and consumer 1's very last hand-over is left out, so that every wait
 * has exactly one matching arrival and none is left at the block's end. */
#pragma once
#include "step03_ws.cuh"

template <int D>
using Step4 = Step3<D, true>;
