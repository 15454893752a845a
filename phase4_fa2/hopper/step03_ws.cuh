/* step 3, wgmma-ws: warp specialisation. A producer warpgroup and two consumer warpgroups
 * (Br = 128), the K/V ring of STAGES slots between them (ws_kernel.cuh draws it):
 *                                                  build/phase4 --kernel wgmma-ws
 * the producer's one thread only issues copies, so its warpgroup gives registers back
 * (setmaxnreg) and the consumers take them; the consumers never wait for a copy they could
 * have overlapped, and never meet at a __syncthreads. Bc = 128 keys a block (FA2_WS_BC):
 * twice step 2's, halving the work each block costs whatever its size (the mbarrier round
 * trip, the row max's shuffles, the rescale of O~, the wait for each product).
 *
 * What the consumer does with a block is still step 1's: S, its softmax, P~ V, each
 * product waited for (attend_block). With Pingpong turns it is step 4 (step04_pingpong.cuh). */
#pragma once
#include "ws_kernel.cuh"

/* Alg. 1, lines 12-13 from the registers: each thread's float2 stores of its two rows */
struct RegisterEpilogue {
#if FA_HAVE_WGMMA
    template <int D, class Ring>
    static __device__ __forceinline__ void finish(const RowTile<D> &tile, const WsContext<Ring> &x, float o_factor = 1.0f)
    {
        finish_rows<D>(tile, x.O, x.L, x.me.row0, x.args.p, x.me.t, o_factor);
    }
#endif
};

template <int D, class Turn = NoTurns>
struct Step3 : Fp16Step<D, FA2_WS_BC(D, false)> {
#if FA_HAVE_WGMMA
    template <class Ring>
    static __device__ __forceinline__ void consume(const WsContext<Ring> &x)
    {
        const attn_problem_t &p = x.args.p;
        const float sl2 = p.scale * FA_LOG2E;
        RowTile<D> tile;
        Turn turn(x.me.c, 2 * x.n_blocks);   /* step 4: a turn a product */
        for (int j = 0; j < x.n_blocks; j++) attend_from_ring<D>(tile, x.ring, x.me, {j}, j, p, sl2, turn);
        RegisterEpilogue::finish<D>(tile, x);
    }
#endif
};
