/* step 5, wgmma-overlap: step 3 with the next block's S = Q K^T issued before this block's
 * softmax, so that the special-function units and the tensor cores work at once:
 *                                                  build/phase4 --kernel wgmma-overlap
 *   tensor cores:  S_0 | S_1 ......... | PV_0 S_2 ......... | PV_1 S_3 ...
 *   this warpgroup:     softmax_0 ....       softmax_1 ....
 *
 * What it adds to step 3: two S accumulators (s_cur, s_next) that alternate, so Bc = 64
 * (FA2_WS_OVERLAP_BC: two of 128 keys would not fit the registers beside O~); both products
 * of an iteration are waited for together at its end. */
#pragma once
#include "step03_ws.cuh"

template <int D>
struct Step5 : Fp16Step<D, FA2_WS_BC(D, true)> {
#if FA_HAVE_WGMMA
    template <class Ring>
    static __device__ __forceinline__ void consume(const WsContext<Ring> &x)
    {
        constexpr int BC = Ring::BC;
        const Ring &ring = x.ring;
        const Consumer &me = x.me;
        const int n_blocks = x.n_blocks;
        const attn_problem_t &p = x.args.p;
        const float sl2 = p.scale * FA_LOG2E;
        const unsigned char *Qt = ring.q_tile(me.c);
        RowTile<D> tile;
        float s_cur[BC / 64][32], s_next[BC / 64][32];
        uint32_t pa[BC / 16][4];
        ring.wait_full({0});
        issue_s<D, BC>(s_cur, Qt, ring.k_slot(0));
        wgmma_wait<0>();
        for (int j = 0; j < n_blocks; j++) {
            const typename Ring::Pos at{j}, next{j + 1};
            if (j + 1 < n_blocks) {   /* S_(j+1) under this block's softmax */
                ring.wait_full(next);
                issue_s<D, BC>(s_next, Qt, ring.k_slot(next.slot()));
            }
            softmax_block<D, true, BC>(tile, s_cur, j, me.row0, me.first_row, p, sl2, me.t);
            p_to_a_f16<BC>(pa, s_cur);
            issue_pv<D, BC>(tile, pa, ring.v_slot(at.slot()));
            wgmma_wait<0>();
            for (int sub = 0; sub < BC / 64; sub++) wgmma_fence_regs(s_next[sub]);   /* written by the tensor cores up to the wait above */
            for (int a = 0; a < D / 64; a++) wgmma_fence_regs(tile.o[a]);
            ring.release(at);    /* K_j (read by S_j) and V_j are free */
#pragma unroll
            for (int sub = 0; sub < BC / 64; sub++)
#pragma unroll
                for (int e = 0; e < 32; e++) s_cur[sub][e] = s_next[sub][e];
        }
        RegisterEpilogue::finish<D>(tile, x);
    }
#endif
};
