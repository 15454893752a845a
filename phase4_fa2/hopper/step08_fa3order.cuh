/* step 8, wgmma-fa3order: FlashAttention-3's intra-warpgroup order (Shah et al., Sec. 3.2,
 * Alg. 2) on step 3. The next block's S and the last block's P~ V are issued back to back;
 * the warpgroup waits for S alone and runs the softmax while P~ V is still on the tensor
 * cores; O~'s rescale waits for P~ V:      build/phase4 --kernel wgmma-fa3order
 *
 *   tensor cores:  S_0 | S_1 PV_0 ........ | S_2 PV_1 ........ | ... PV_n-1
 *   this warpgroup:    softmax_0 |  softmax_1 .. O~*=a_1 |  softmax_2 .. O~*=a_2
 *
 * What it adds to step 3: this loop (fa3_order_loop). One S accumulator: its P~ is in the A
 * registers (pa) before the next S is issued, and pa is refilled only once the P~ V reading
 * it has completed (step 5 instead ran softmax_j under S_(j+1) and waited for both products
 * together). The loop is written once for fp16 (F16Ops, here) and e4m3 (step 7's Fp8Ops):
 * an Ops gives the products, P~'s registers and each block's scales; a Turn (turns.cuh)
 * takes step 9's turns, or none. */
#pragma once
#include "step03_ws.cuh"

/* fp16 products, one factor for every block's S */
template <int D, int BC>
struct F16Ops {
    static constexpr int FMA_EX2 = 0;   /* every exponential on the SFU */
    using PA = uint32_t[BC / 16][4];
    float sl2;
#if FA_HAVE_WGMMA
    __device__ __forceinline__ void issue_s(float (&s)[BC / 64][32], const unsigned char *Qt, const unsigned char *Kj) const
    {
        ::issue_s<D, BC>(s, Qt, Kj);
    }
    __device__ __forceinline__ void issue_pv(RowTile<D> &t, const PA &pa, const unsigned char *Vj) const { ::issue_pv<D, BC>(t, pa, Vj); }
    __device__ __forceinline__ void p_to_a(PA &pa, const float (&s)[BC / 64][32]) const { p_to_a_f16<BC>(pa, s); }
    __device__ __forceinline__ float first_s_scale() const { return sl2; }
    __device__ __forceinline__ void load_scales(int) {}                  /* block j's factors: none */
    __device__ __forceinline__ float s_scale() const { return sl2; }    /* block j's S into the exponent's units */
    __device__ __forceinline__ float o_ratio() { return 1.0f; }         /* O~ into block j's units: the same */
    __device__ __forceinline__ float o_factor() const { return 1.0f; }  /* O = O~ o_factor / l */
#endif
};

#if FA_HAVE_WGMMA
/* The K/V loop in FlashAttention-3's order, for one consumer's 64 rows. */
template <int D, int BC, class Ring, class Ops, class Turn>
__device__ __forceinline__ void fa3_order_loop(RowTile<D> &tile, const Ring &ring, const Consumer &me, const attn_problem_t &p,
                                               int n_blocks, Ops &ops, Turn &turns)
{
    using Pos = typename Ring::Pos;
    const unsigned char *Qt = ring.q_tile(me.c);
    float s[BC / 64][32];
    typename Ops::PA pa;
    ring.wait_full({0});
    turns.take();
    ops.issue_s(s, Qt, ring.k_slot(0));
    turns.hand_over();
    wgmma_wait<0>();
    softmax_block<D, true, BC, false, Ops::FMA_EX2>(tile, s, 0, me.row0, me.first_row, p, ops.first_s_scale(), me.t);
    ops.p_to_a(pa, s);
    for (int j = 1; j < n_blocks; j++) {
        const Pos at{j}, prev{j - 1};
        const int slot = at.slot(), prev_slot = prev.slot();   /* both before the wait, off its path */
        ops.load_scales(j);   /* under the wait */
        ring.wait_full(at);
        turns.take();
        ops.issue_s(s, Qt, ring.k_slot(slot));                 /* S_j */
        ops.issue_pv(tile, pa, ring.v_slot(prev_slot));        /* O~ += P~_(j-1) V_(j-1) */
        turns.hand_over();
        wgmma_wait<1>();                                      /* S_j landed; P~ V may still run */
        for (int sub = 0; sub < BC / 64; sub++) wgmma_fence_regs(s[sub]);
        float o_scale[2];
        softmax_block<D, true, BC, false, Ops::FMA_EX2>(tile, s, j, me.row0, me.first_row, p, ops.s_scale(), me.t, false,
                                                        nullptr, ops.o_ratio(), o_scale);
        wgmma_wait<0>();                                      /* P~_(j-1) V_(j-1) landed */
        for (int a = 0; a < D / 64; a++) wgmma_fence_regs(tile.o[a]);
        ring.release(prev);                                   /* K_(j-1) and V_(j-1) are free */
        rescale_o<D>(tile, o_scale);
        ops.p_to_a(pa, s);
    }
    const Pos last{n_blocks - 1};
    turns.take();
    ops.issue_pv(tile, pa, ring.v_slot(last.slot()));
    turns.hand_over();
    wgmma_wait<0>();
    for (int a = 0; a < D / 64; a++) wgmma_fence_regs(tile.o[a]);
    ring.release(last);
}
#endif

/* Turn: step 9's Pingpong (step09_fa3.cuh); Epilogue: step 10's (step10_store.cuh) or the registers' */
template <int D, class Turn = NoTurns, class Epilogue = RegisterEpilogue>
struct Step8 : Fp16Step<D, FA2_WS_BC(D, false)> {
#if FA_HAVE_WGMMA
    template <class Ring>
    static __device__ __forceinline__ void consume(const WsContext<Ring> &x)
    {
        RowTile<D> tile;
        F16Ops<D, Ring::BC> ops{x.args.p.scale * FA_LOG2E};
        Turn turns(x.me.c, x.n_blocks + 1);   /* step 9: a turn an iteration, and one for S_0 */
        fa3_order_loop<D, Ring::BC>(tile, x.ring, x.me, x.args.p, x.n_blocks, ops, turns);
        Epilogue::template finish<D>(tile, x);
    }
#endif
};
