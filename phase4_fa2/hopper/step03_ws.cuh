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
    static __device__ __forceinline__ void finish(const RowTile<D> &tile, const Ring &, const WgArgs &args, const Consumer &me,
                                                  const CtaTile &, float *O, float *L, float o_factor = 1.0f)
    {
        finish_rows<D>(tile, O, L, me.row0, args.p, me.t, o_factor);
    }
#endif
};

template <int D, class Turn = NoTurns>
struct Step3 : Fp16Step<D, FA2_WS_BC(D, false)> {
    using Base = Fp16Step<D, FA2_WS_BC(D, false)>;
    using Ring = typename Base::Ring;
    static constexpr int BC = Base::BC;
#if FA_HAVE_WGMMA
    static __device__ __forceinline__ void consume(const Ring &ring, const WgArgs &args, const Consumer &me, const CtaTile &ct,
                                                   int n_blocks, float *O, float *L)
    {
        const attn_problem_t &p = args.p;
        const float sl2 = p.scale * FA_LOG2E;
        RowTile<D> tile;
        Turn turn(me.c, 2 * n_blocks);   /* step 4: a turn a product */
        for (int j = 0; j < n_blocks; j++) {
            const typename Ring::Pos at{j};
            ring.wait_full(at);
            attend_block<D, true, BC, false>(tile, ring.q_tile(me.c), ring.k_slot(at.slot()), ring.v_slot(at.slot()), j, me.row0,
                                      me.first_row, p, sl2, me.t, turn);
            ring.release(at);
        }
        RegisterEpilogue::finish<D>(tile, ring, args, me, ct, O, L);
    }
#endif
};
