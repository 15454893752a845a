/* step 3 with a FlashMask mask (chapter 4c): fully masked K/V blocks skipped, not loaded;
 * the element test on partial tiles only.  build/phase4 --kernel wgmma-ws --mask sliding:1024
 *
 * Before the loop every thread classifies a share of this Q block's Tc tiles from the
 * preprocessing pass's min/max (FlashMask Sec. 4, mask_tile_class_at) into one byte a K/V
 * block past the barriers (WsLayout's class bytes); then producer and consumers walk the
 * same sequence, the blocks not fully masked, the v-th of them in the ring at v:
 *
 *   class bytes:  U U P F F F P U     (U unmasked, P partial, F fully masked)
 *   visited j:    0 1 2       6 7     v = 0 1 2 3 4: slots 0 1 2 0 1 (STAGES = 3)
 *
 * so the ring's parities count visited blocks, not j. A partial block gets the element test
 * (mask_keep_bits, mask_apply), an unmasked one none. */
#pragma once
#include "step03_ws.cuh"

#if FA_HAVE_WGMMA
/* the producer thread: Q_i, then the visited blocks; their count to the visit counters */
template <int D, int BC>
__device__ __forceinline__ void masked_produce(const WsRing<D, BC> &ring, const WgArgs &args, const CtaTile &ct,
                                               const uint8_t *tile_class, int Tc, int q_first, int q_end)
{
    load_q_halves<D / 64, 64>(ring, &args.tq, ct.i0, ct.bh);
    int v = 0;
    for (int j = next_kv_block<true>(tile_class, -1, Tc, q_first, q_end); j < Tc;
         j = next_kv_block<true>(tile_class, j, Tc, q_first, q_end), v++)
        load_kv<D, BC>(ring, args, {v}, j, ct.kv_head);
    visit_count(args.vis, ct.i, v);   /* the blocks it loaded: the driver holds them to the census */
}

/* a consumer: the producer's sequence, the element test where the class byte says partial */
template <int D, int BC>
__device__ __forceinline__ void masked_consume(const WsRing<D, BC> &ring, const WgArgs &args, const Consumer &me,
                                               const uint8_t *tile_class, int Tc, int q_first, int q_end, float *O, float *L)
{
    const attn_problem_t &p = args.p;
    const float sl2 = p.scale * FA_LOG2E;
    RowTile<D> tile;
    auto next = [&](int j) { return __shfl_sync(0xffffffffu, next_kv_block<true>(tile_class, j, Tc, q_first, q_end), 0); };
    int v = 0;
    for (int j = next(-1), jn; j < Tc; j = jn, v++) {
        const typename WsRing<D, BC>::Pos at{v};
        jn = next(j);
        if (me.warp == 0 && jn < Tc && tile_class[jn] == MASK_TILE_PARTIAL)   /* the next element test's runs */
            mask_prefetch_columns<BC>(reinterpret_cast<const int32_t *>(args.mcols), jn, p.N_kv, me.lane);
        ring.wait_full(at);
        const bool partial = __shfl_sync(0xffffffffu, tile_class[j], 0) == MASK_TILE_PARTIAL;
        attend_block<D, true, BC, true>(tile, ring.q_tile(me.c), ring.k_slot(at.slot()), ring.v_slot(at.slot()), j, me.row0,
                                        me.first_row, p, sl2, me.t, NoTurns(), partial, args.mcols);
        ring.release(at);
    }
    finish_rows<D>(tile, O, L, me.row0, p, me.t);
}
#endif

/* step 3's kernel with the mask: the class bytes first, then producer and consumers on them */
template <int D>
__global__ void __launch_bounds__(WS_THREADS, 1)
fa2_wgmma_ws_mask_kernel(const __grid_constant__ WgArgs args)
{
#if FA_HAVE_WGMMA
    const Fp16Ring<D> ring(smem_1024());
    constexpr int BC = Fp16Ring<D>::BC;
    const attn_problem_t &p = args.p;
    const int Tr = (p.N_q + WS_BR - 1) / WS_BR, Tc = (p.N_kv + BC - 1) / BC;
    const CtaTile ct = tile_of_cta(p, Tr, WS_BR, true, args.morder);
    float *O = args.O + attn_q_offset(&p, ct.b, ct.h), *L = args.L + attn_l_offset(&p, ct.b, ct.h);
    uint8_t *tile_class = ring.base + Fp16Ring<D>::C::CLASS_OFF;   /* [Tc] */
    /* FlashMask Sec. 4: tile (i, j)'s class from column block j's 8 min/max, once (the loop
     * reads a byte). visit_all (the counters' test): every tile visited and tested */
    int q_first = 0, q_end = Tc;   /* the K/V blocks that may hold a visited tile (mask_q_range) */
    const int r1 = min(p.N_q, ct.i0 + WS_BR);
    if (!visit_all(args.vis)) mask_q_range(args.morder, ct.i, Tc, &q_first, &q_end);
    for (int jj = q_first + threadIdx.x; jj < q_end; jj += WS_THREADS)
        tile_class[jj] = visit_all(args.vis) ? MASK_TILE_PARTIAL : mask_tile_class_at(args.mblk, Tc, ct.i0, r1, jj);
    if (threadIdx.x == 0) ring.init_barriers();
    __syncthreads();   /* the barriers and the class bytes are written */
    if (next_kv_block<true>(tile_class, -1, Tc, q_first, q_end) == Tc) {   /* every tile fully masked: no visit */
        write_rows_without_keys<D>(O, L, ct.i0, WS_BR, p.N_q, WS_THREADS);
        return;
    }
    split_roles<WS_PRODUCER_REGS, WS_CONSUMER_REGS>(
        [&] { masked_produce<D, BC>(ring, args, ct, tile_class, Tc, q_first, q_end); },
        [&](int wg) {
            const Consumer me(wg, ct.i0);
            mbar_wait(ring.q_full, 0);
            masked_consume<D, BC>(ring, args, me, tile_class, Tc, q_first, q_end, O, L);
        });
#else
    (void)args;
#endif
}
