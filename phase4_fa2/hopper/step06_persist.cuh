/* step 6, wgmma-persist: step 3 on one persistent grid.     build/phase4 --kernel wgmma-persist
 *
 *
 * Step 3 launches one CTA per (Q block, head); each pays its prologue (barriers, setmaxnreg,
 * Q_i's load, the ring's first fill) and the ring drains at its end. Here the grid is one
 * CTA a SM for the whole launch, and each CTA takes its next tile from a counter in global
 * memory (atomicAdd) when it is ready for one, as the hardware hands out step 3's CTAs, in
 * the same order: head by head, in a head the Q blocks longest first (causal: the last
 * first). A fixed share per CTA (k, k + grid, ...) measured 0.64x step 3's speed on a causal
 * N = 16384: the long tiles fell unevenly. Against step 3:
 *
 *   - the K/V ring runs on across tiles: the v-th block this CTA loads, counted over all its
 *     tiles, goes to slot v % STAGES, fill v / STAGES; the producer streams the next tile's
 *     first block while the consumers finish this tile's last;
 *   - Q_i gets a barrier pair of its own: q_full (the tile's number written, Q_i's bytes
 *     landed), q_empty (both consumers done with Q_i and the number); the producer takes the
 *     next tile and loads its Q_i once q_empty says so, while the consumers write O_i, L_i.
 *
 *          producer (one thread)                    consumers (256 threads)
 *   loop:                                      loop:
 *     t = next tile (atomicAdd)                  wait q_full (parity n); t = the shared number
 *     K_0, V_0 into the next slot (t's)          t past the list: stop
 *     wait q_empty (parity n - 1), n > 0         for each block: wait full[s], attend_block,
 *     write t; expect_tx q_full; TMA Q_i           arrive empty[s]        (s = v % STAGES)
 *     (t past the list: write it, arrive, stop)  arrive q_empty; O_i, L_i from registers
 *     for each further block: wait empty[s],
 *       TMA K_j, V_j
 *
 * n counts the tiles handed over; a tile whose rows see no key is handed over without
 * loads (its O = 0, L = +inf written by the consumers). */
#pragma once
#include "step03_ws.cuh"

#if FA_HAVE_WGMMA
/* The producer thread: tile after tile until the counter runs out. v counts the K/V blocks
 * loaded so far (the ring's position, across tiles); n the tiles handed over. */
template <int D, int BC>
__device__ __forceinline__ void persist_produce(const WsRing<D, BC> &ring, const WgArgs &args, const PersistentTiles &tiles,
                                                volatile int *tile_no)
{
    const attn_problem_t &p = args.p;
    const int Tc = (p.N_kv + BC - 1) / BC;
    int v = 0;
    for (int n = 0;; n++) {
        const int t = tiles.grab(args);   /* n_tiles: no tile left */
        const bool any = t < tiles.n_tiles;
        const CtaTile ct = make_tile(p, any ? tiles.q_block(t) : 0, t / tiles.Tr, WS_BR);
        const int kv_head = any ? ct.kv_head : 0;
        const int n_blocks = any ? blocks_to_visit<true>(args, ct.i0, WS_BR, BC, Tc) : 0;
        if (any) visit_count(args.vis, ct.i, n_blocks);
        /* the tile's first K/V block before its Q_i: its slot frees while the consumers
         * still work on the last tile, Q_i's buffer only once they are done with it */
        if (n_blocks > 0) load_kv<D, BC>(ring, args, {v++}, 0, kv_head);
        if (n > 0) mbar_wait(ring.q_empty, (n - 1) & 1);   /* both consumers done with the last tile */
        *tile_no = t;
        if (n_blocks > 0) load_q_halves<D / 64, 64>(ring, &args.tq, ct.i0, ct.bh);   /* releases the number too */
        else mbar_arrive(ring.q_full);   /* the number alone: no rows to load, or no tile left */
        if (!any) break;
        for (int j = 1; j < n_blocks; j++) load_kv<D, BC>(ring, args, {v++}, j, kv_head);
    }
}

/* A consumer: the tiles the producer hands over, until one past the list. */
template <int D, int BC>
__device__ __forceinline__ void persist_consume(const WsRing<D, BC> &ring, const WgArgs &args, const PersistentTiles &tiles,
                                                const volatile int *tile_no, int wg)
{
    const attn_problem_t &p = args.p;
    const int Tc = (p.N_kv + BC - 1) / BC;
    const float sl2 = p.scale * FA_LOG2E;
    int v = 0;
    for (int n = 0;; n++) {
        mbar_wait(ring.q_full, n & 1);
        const int t = *tile_no;
        if (t >= tiles.n_tiles) break;
        const CtaTile ct = make_tile(p, tiles.q_block(t), t / tiles.Tr, WS_BR);
        const int n_blocks = blocks_to_visit<true>(args, ct.i0, WS_BR, BC, Tc);
        float *O = args.O + attn_q_offset(&p, ct.b, ct.h), *L = args.L + attn_l_offset(&p, ct.b, ct.h);
        if (n_blocks == 0) {   /* no row of this Q block sees a key */
            mbar_arrive(ring.q_empty);
            write_rows_without_keys<D>(O, L, ct.i0, WS_BR, p.N_q, WS_CONSUMERS * WG_THREADS, (int)threadIdx.x - WG_THREADS);
            continue;
        }
        const Consumer me(wg, ct.i0);
        RowTile<D> tile;
        for (int j = 0; j < n_blocks; j++) attend_from_ring<D>(tile, ring, me, {v++}, j, p, sl2);   /* ring fill v */
        mbar_arrive(ring.q_empty);   /* attend_block waited for its products: Q_i and the number are free */
        finish_rows<D>(tile, O, L, me.row0, p, me.t);
    }
}
#endif

/* one CTA a SM: the producer and the consumers each walk the tiles the counter hands out */
template <int D>
__global__ void __launch_bounds__(WS_THREADS, 1)
fa2_wgmma_persist_kernel(const __grid_constant__ WgArgs args)
{
#if FA_HAVE_WGMMA
    using Ring = Fp16Ring<D>;
    const Ring ring(smem_1024());
    volatile int *tile_no = (volatile int *)(ring.base + Ring::C::TILE_NO_OFF);   /* the tile handed over */
    const attn_problem_t &p = args.p;
    const int Tr = (p.N_q + WS_BR - 1) / WS_BR;
    const PersistentTiles tiles{Tr, Tr * p.B * p.H, p.causal};
    if (threadIdx.x == 0) ring.init_barriers(true);
    __syncthreads();   /* the only block-wide barrier */
    split_roles<WS_PRODUCER_REGS, WS_CONSUMER_REGS>([&] { persist_produce<D, Ring::BC>(ring, args, tiles, tile_no); },
                                                   [&](int wg) { persist_consume<D, Ring::BC>(ring, args, tiles, tile_no, wg); });
#else
    (void)args;
#endif
}
