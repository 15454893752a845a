/* bwd_wgmma_step3.cuh - step 3 of the Hopper backward (chapter 5b): FlashAttention-3's
 * structure. Warpgroup 0 gives its registers away and holds a producer warp (Q_i, dO_i by the
 * copy engine, L_i, D_i by cp.async, into a ring of mbarrier slots) and a dQ writer warp (each
 * step's dQ_i tile added to HBM by bulk reduces); the two MMA warpgroups run the five products,
 * P^T computed while dP^T is still on the tensor cores. With --mask, FlashMask's list of the Q
 * blocks to visit, walked by every role.
 *                          build/phase5 --kernel wgmma-ws [--causal | --mask sliding:1024]   (sm_90a)
 * Who waits for whom, the step's timeline and dQ's split: bwd_wgmma_ws.cu's head comment.
 */
#ifndef PHASE5_BWD_WGMMA_STEP3_CUH
#define PHASE5_BWD_WGMMA_STEP3_CUH
#include "bwd_wgmma_ws_layout.cuh"
#include "bwd_wgmma_load.cuh"
#include "bwd_wgmma_epilogue.cuh"
#include "visits.cuh"
#include "mask_gpu.h"

#if FA_HAVE_WGMMA
/* The order in which the K/V blocks add their dQ_i into the same rows: any (step 3, below),
 * or a fixed one (step 4, WsDqOrder<C, true>: bwd_wgmma_step4.cuh). wait_turn before the
 * adds of (query head, Q block i), added after them. */
template <class C, bool DET>
struct WsDqOrder {
    __device__ __forceinline__ WsDqOrder(const WsBwdArgs &, size_t, int, int, int) {}
    __device__ __forceinline__ void wait_turn(int) const { __syncwarp(); }
    __device__ __forceinline__ void added(int) const
    {
        bulk_wait_read<0>();   /* this lane's reduces have read the tile */
        __syncwarp();
    }
};

/* The producer warp (Alg. 2 l.6, l.9): K_j, V_j once, then each step's Q_i, dO_i, L_i, D_i into
 * the ring, up to STAGES steps ahead of the MMA warpgroups */
template <class C>
__device__ __forceinline__ void ws_producer(const WsBwdArgs &args, const WsSmem<C> &sm, const bwd_steps_t &sched,
                                            int j0, int b, int kvh, int G, int lane)
{
    const attn_problem_t &p = args.p;
    if (lane == 0)   /* l.6: K_j, V_j once */
        tma_load_pair<C::BC, C::D, true>(sm.Ks, sm.Vs, &args.tk, &args.tv, sm.kv_full, j0, b * p.H_kv + kvh);
    BwdRing<C::STAGES> ring(sm.full, sm.empty);
    for (int st = 0; st < sched.count; st++, ring.advance()) {
        ring.wait_empty();   /* step st - STAGES is done with the slot */
        int i; size_t l_off;
        sched.at(st, C::BR, i, l_off);
        const int valid = p.N_q - i * C::BR, head = b * p.H + kvh * G + st / sched.per_head;
        const size_t at = ring.slot() * C::Q_TILE;
        if (lane == 0)
            tma_load_pair<C::BR, C::D, false>(sm.Qs + at, sm.dOs + at, &args.tq, &args.tdo, ring.full + ring.slot(),
                                              i * C::BR, head);
        cp_async_ld_arrive<C::BR>(sm.Ls + ring.slot() * C::BR, sm.Ds + ring.slot() * C::BR, args.L, args.D, l_off, valid,
                                  ring.full + ring.slot(), lane);
    }
}

#endif

#include "bwd_wgmma_ws_mma.cuh"   /* the MMA warpgroups' step */

#define WS_BAR_DS 1
#define WS_BAR_DQ 2
template <int D, int BR, int BC, bool DET, bool MASKED>
__global__ void __launch_bounds__(WsBwdCfg<D, BR, BC>::THREADS, 1)
bwd_wgmma_ws_kernel(const __grid_constant__ WsBwdArgs args)
{
    static_assert(!(DET && MASKED), "wgmma-det has no mask path (its turn order: bwd_wgmma_step4.cuh)");
#if FA_HAVE_WGMMA
    using C = WsBwdCfg<D, BR, BC>;
    const attn_problem_t &p = args.p;
    BWD_DYNAMIC_SMEM(smem_raw);
    const WsSmem<C> sm(smem_raw + swizzle_pad(smem_raw));   /* still a shared pointer */

    /* DET (step 4): the K/V blocks of a head run last first, the order of its turns */
    const int Tc = (p.N_kv + BC - 1) / BC, j = DET ? Tc - 1 - (int)blockIdx.x : (int)blockIdx.x;
    const int b = blockIdx.y / p.H_kv, kvh = blockIdx.y % p.H_kv, G = p.H / p.H_kv;
    const int j0 = j * BC;
    const size_t kv_off = ((size_t)b * p.H_kv + kvh) * p.N_kv * D;

    /* Alg. 2 l.5-6: the Q blocks this K/V block visits, for each of the G query heads: the
     * causal range, or with a mask the list of tiles not fully masked, written once by warp 2
     * (idle otherwise) while thread 0 sets up the barriers: every role walks the same list */
    if (MASKED && threadIdx.x / 32 == 2) {
        const int n = bwd_mask_q_blocks(args.mblk, Tc, j, p.N_q, BR, visit_all(args.vis), sm.list);
        if (threadIdx.x % 32 == 0) *sm.n_vis = n;
    }
    if (threadIdx.x == 0) sm.init_barriers();
    __syncthreads();   /* the barriers are initialised (MASKED: and the Q-block list written);
                          from here on, only mbarriers */
    const bwd_steps_t sched = MASKED ? bwd_steps_masked(p, b, kvh, sm.list, *sm.n_vis)
                                     : bwd_steps(p, j, b, kvh, BR, BC, !visit_all(args.vis));
    const int steps = sched.count;
    if (threadIdx.x == 0) visit_count(args.vis, j, steps);   /* the driver holds it to bwd_visits_want() */

    const int wg = threadIdx.x / WGB_THREADS, lane = threadIdx.x % 32;
    if (wg == 0) {
        setmaxnreg_dec<WS_PRODUCER_REGS>();
        const int warp = threadIdx.x / 32;
        if (warp == 0 && steps > 0) {
            ws_producer<C>(args, sm, sched, j0, b, kvh, G, lane);
        } else if (warp == 1 && steps > 0) {   /* the dQ writer (Alg. 2 l.15's adds): each step's tile
                                                  to HBM, one bulk reduce a row, in the order DET picks;
                                                  the tile handed back as soon as it is read. (Here, not
                                                  in a function: so it stays in its 24 registers.) */
            BwdRing<C::DQ_STAGES> dq(sm.dq_full, sm.dq_empty);
            for (int st = 0; st < steps; st++, dq.advance()) {
                const unsigned char *tile = sm.dQs + dq.slot() * C::DQ::TILE;
                dq.wait_full();
                int i; size_t l_off;
                sched.at(st, BR, i, l_off);
                const int valid = p.N_q - i * BR;
                const WsDqOrder<C, DET> order(args, l_off, i, j, Tc);
                order.wait_turn(lane);
#if BWD_PROBE_NO_DQ_ADD   /* probes of the adds' cost (Makefile's BWD_PROBE): dQ wrong */
#elif BWD_PROBE_ONE_BULK
                if (lane == 0)
                    bulk_reduce_add_f32(args.dQ + l_off * D, tile, (unsigned)(min(valid, BR) * D * sizeof(float)));
#else
                for (int row = lane; row < BR && row < valid; row += 32)   /* rows past N_q: not added */
                    bulk_reduce_add_f32(args.dQ + (l_off + row) * D, tile + row * C::DQ::PITCH, D * sizeof(float));
#endif
                bulk_commit();
                order.added(lane);
                if (lane == 0) dq.release();
            }
            bulk_wait<0>();   /* the adds are done before the block's shared memory goes */
        }
        return;
    }
    setmaxnreg_inc<WS_MMA_REGS>();   /* the MMA warpgroups */
    ws_mma_warpgroups<C, MASKED>(args, sm, sched, wg - 1, j, j0, kv_off, lane);
#else
    (void)args;
#endif
}

#endif
