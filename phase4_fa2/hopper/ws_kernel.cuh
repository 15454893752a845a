/* hopper/ws_kernel.cuh - the warp-specialised kernel's shell (steps 3-5, 7-10): one CTA a
 * tile of Br = 128 rows, a producer warpgroup and two consumer warpgroups.
 *
 *   warpgroup 0 (producer, registers given back: setmaxnreg.dec)  one thread issues TMA:
 *       Q_i (both consumers' 64-row halves), then K_j, V_j into the ring at j once the
 *       slot's `empty` barrier says both consumers are done with its previous block
 *   warpgroups 1, 2 (consumers, registers taken: setmaxnreg.inc)  rows i0 .. i0 + 63 and
 *       i0 + 64 .. i0 + 127 of the Q block: wait `full`, compute, arrive `empty`
 *
 *          producer                       consumers (each of the 256 threads)
 *   ring.acquire(j): wait empty         ring.wait_full(j)
 *   expect_tx full; TMA K_j, V_j        the step's block (S, softmax, P~ V)
 *                                       ring.release(j): arrive empty  (256 arrivals a fill)
 *
 * No __syncthreads in the loop: the copy of block j + STAGES - 1 overlaps the products of
 * block j without any thread waiting for it. A step is a struct S (step03_ws.cuh ...) with
 *   BC, RING_D (D, or D / 2 for e4m3's bytes), PRODUCER_REGS, CONSUMER_REGS,
 *   produce(ring, args, tile, n_blocks)   the producer thread's copies
 *   consume(WsContext)                    a consumer's K/V loop and its epilogue */
#pragma once
#include "mma_ops.cuh"
#include "producer.cuh"
#include "epilogue.cuh"
#include "scheduler.cuh"

#define WS_PRODUCER_REGS 40    /* 128 x 40 + 256 x 232 = 64512 of the SM's 65536 */
#define WS_CONSUMER_REGS 232

/* A consumer thread's place: warpgroup c's 64 rows of the tile, and this thread's two. */
struct Consumer {
    int c, lane, warp, g, t, first_row, row0;
    __device__ Consumer(int wg, int i0)
        : c(wg - 1), lane(threadIdx.x % 32), warp((threadIdx.x / 32) % 4), g(lane / 4), t(lane % 4),
          first_row(i0 + 64 * c), row0(first_row + 16 * warp + g) {}
};

/* The roles (the picture above): warpgroup 0 gives registers back and its first thread runs
 * produce(); the consumer warpgroups take them and run consume(wg). Every kernel with a
 * producer warpgroup (steps 3-10, the mask's and the persistent one) splits here. */
template <int PRODUCER_REGS, int CONSUMER_REGS, class Produce, class Consume>
__device__ __forceinline__ void split_roles(const Produce &produce, const Consume &consume)
{
#if FA_HAVE_WGMMA
    const int wg = warpgroup_idx();
    if (wg == 0) {   /* ---- producer ---- */
        setmaxnreg_dec<PRODUCER_REGS>();
        if (threadIdx.x == 0) produce();
        return;
    }
    setmaxnreg_inc<CONSUMER_REGS>();   /* ---- consumers ---- */
    consume(wg);
#endif
}

/* What a step's consumer works with: the ring, the launch, its place, the tile, the K/V
 * blocks it visits, and where O_i and L_i go. */
template <class Ring>
struct WsContext {
    const Ring &ring;
    const WgArgs &args;
    const Consumer &me;
    const CtaTile &ct;
    int n_blocks;
    float *O, *L;
};

#if FA_HAVE_WGMMA
/* A consumer's K/V block j from the ring's slot at, in order: wait for its fill, attend it
 * (attend_block: S, softmax, P~ V, each product waited for), free the slot (steps 3, 4, 6). */
template <int D, class Ring, class Turn = NoTurns>
__device__ __forceinline__ void attend_from_ring(RowTile<D> &tile, const Ring &ring, const Consumer &me,
                                                 typename Ring::Pos at, int j, const attn_problem_t &p, float sl2,
                                                 Turn &&turn = Turn())
{
    ring.wait_full(at);
    attend_block<D, true, Ring::BC, false>(tile, ring.q_tile(me.c), ring.k_slot(at.slot()), ring.v_slot(at.slot()), j,
                                           me.row0, me.first_row, p, sl2, me.t, static_cast<Turn &&>(turn));
    ring.release(at);
}
#endif

/* The fp16 steps' producer: Q_i, then every visited K/V block in order. */
template <int D, int BC_>
struct Fp16Step {
    static constexpr int BC = BC_, RING_D = D;
    static constexpr int PRODUCER_REGS = WS_PRODUCER_REGS, CONSUMER_REGS = WS_CONSUMER_REGS;
    using Ring = WsRing<D, BC>;
#if FA_HAVE_WGMMA
    static __device__ __forceinline__ void produce(const Ring &ring, const WgArgs &args, const CtaTile &ct, int n_blocks)
    {
        load_q_halves<D / 64, 64>(ring, &args.tq, ct.i0, ct.bh);
        for (int j = 0; j < n_blocks; j++) load_kv<D, BC>(ring, args, {j}, j, ct.kv_head);
    }
#endif
};

template <int D, class S>
__global__ void __launch_bounds__(WS_THREADS, 1)
fa2_ws_kernel(const __grid_constant__ WgArgs args)
{
#if FA_HAVE_WGMMA
    using Ring = WsRing<S::RING_D, S::BC>;
    const attn_problem_t &p = args.p;
    const Ring ring(smem_1024());
    const int Tr = (p.N_q + WS_BR - 1) / WS_BR, Tc = (p.N_kv + S::BC - 1) / S::BC;
    const CtaTile ct = tile_of_cta(p, Tr, WS_BR);
    float *O = args.O + attn_q_offset(&p, ct.b, ct.h), *L = args.L + attn_l_offset(&p, ct.b, ct.h);
    const int n_blocks = blocks_to_visit<true>(args, ct.i0, WS_BR, S::BC, Tc);
    if (threadIdx.x == 0) visit_count(args.vis, ct.i, n_blocks);   /* the producer's thread: it loads them */
    if (n_blocks == 0) {
        write_rows_without_keys<D>(O, L, ct.i0, WS_BR, p.N_q, WS_THREADS);
        return;
    }
    if (threadIdx.x == 0) ring.init_barriers();
    __syncthreads();   /* the last block-wide barrier: from here on, only mbarriers */

    split_roles<S::PRODUCER_REGS, S::CONSUMER_REGS>([&] { S::produce(ring, args, ct, n_blocks); },
                                                   [&](int wg) {
                                                       const Consumer me(wg, ct.i0);
                                                       mbar_wait(ring.q_full, 0);
                                                       S::consume(WsContext<Ring>{ring, args, me, ct, n_blocks, O, L});
                                                   });
#else
    (void)args;
#endif
}
