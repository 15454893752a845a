/* step 2, wgmma-tma: step 1 with the copy engine (TMA) loading Q_i and the K/V tiles.
 *                                                  build/phase4 --kernel wgmma-tma
 * One thread issues a tile as boxes of 64 rows x 64 columns, already 128-byte swizzled; an
 * mbarrier per ring slot says when its bytes have landed; STAGES slots (3 at d = 64, 2 at
 * d = 128: the shared memory of 2 blocks a SM):
 *
 *        slot:      0        1        2
 *        tile:   K,V j    K,V j+1  K,V j+2       block j computed from slot j % STAGES,
 *        barrier: full[0]  full[1]  full[2]      waited with parity (j / STAGES) & 1;
 *                                                refilled with tile j + STAGES once every
 *                                                warp is done with it (__syncthreads)
 *
 * What it adds to step 1: the copies leave the 128 threads (no address arithmetic, no
 * cp.async waits), and STAGES - 1 blocks are in flight instead of one. */
#pragma once
#include "step01_wgmma.cuh"

template <int D>
using TmaLayout = WgLayout<D, D == 64 ? 3 : 2>;

/* K_j and V_j of block j into ring slot st, by the copy engine (one thread) */
template <int D>
__device__ __forceinline__ void tma_load_kv_block(unsigned char *Ks, unsigned char *Vs, uint64_t *full, const WgArgs &args,
                                                  int j, int st, int kv_head)
{
    using C = TmaLayout<D>;
    mbar_arrive_expect_tx(full + st, 2 * (uint32_t)C::TILE);
#pragma unroll
    for (int a = 0; a < C::ATOMS; a++) {
        tma_load_3d(Ks + st * C::TILE + a * ATOM_BYTES, &args.tk, full + st, 64 * a, j * WG_BC, kv_head);
        tma_load_3d(Vs + st * C::TILE + a * ATOM_BYTES, &args.tv, full + st, 64 * a, j * WG_BC, kv_head);
    }
}

template <int D>
__global__ void __launch_bounds__(WG_THREADS)
fa2_wgmma_tma_kernel(const __grid_constant__ WgArgs args)
{
#if FA_HAVE_WGMMA
    using C = TmaLayout<D>;
    const attn_problem_t &p = args.p;
    unsigned char *smem = smem_1024();
    unsigned char *Qs = smem + C::Q_OFF, *Ks = smem + C::K_OFF, *Vs = smem + C::V_OFF;
    uint64_t *full = (uint64_t *)(smem + C::BAR_OFF), *q_full = full + C::STAGES;   /* K/V slots landed; Q_i */
    const WgBlock<D> blk(args);
    if (threadIdx.x == 0) visit_count(args.vis, blk.tile.i, blk.n_blocks);
    if (blk.n_blocks == 0) {
        write_rows_without_keys<D>(blk.O, blk.L, blk.tile.i0, WG_BR, p.N_q, WG_THREADS);
        return;
    }
    const float sl2 = p.scale * FA_LOG2E;
    if (threadIdx.x == 0) {
        for (int st = 0; st <= C::STAGES; st++) mbar_init(full + st, 1);
        mbar_init_fence();
    }
    __syncthreads();   /* the barriers exist before anyone waits on them */
    if (threadIdx.x == 0) {   /* Q_i, then the first STAGES K/V blocks */
        mbar_arrive_expect_tx(q_full, (uint32_t)C::TILE);
#pragma unroll
        for (int a = 0; a < C::ATOMS; a++) tma_load_3d(Qs + a * ATOM_BYTES, &args.tq, q_full, 64 * a, blk.tile.i0, blk.tile.bh);
        for (int st = 0; st < C::STAGES && st < blk.n_blocks; st++)
            tma_load_kv_block<D>(Ks, Vs, full, args, st, st, blk.tile.kv_head);
    }

    RowTile<D> tile;   /* this warpgroup's O~, m, l */
    mbar_wait(q_full, 0);
    for (int j = 0; j < blk.n_blocks; j++) {
        const RingPos<C::STAGES> at{j};
        mbar_wait(full + at.slot(), at.phase());   /* the slot's (j / STAGES)-th fill */
        attend_block<D, true, WG_BC>(tile, Qs, Ks + at.slot() * C::TILE, Vs + at.slot() * C::TILE, j, blk.row0, blk.tile.i0,
                                     p, sl2, blk.t);
        __syncthreads();   /* every warp's wgmma's on the slot have completed: refill it */
        if (threadIdx.x == 0 && j + C::STAGES < blk.n_blocks)
            tma_load_kv_block<D>(Ks, Vs, full, args, j + C::STAGES, at.slot(), blk.tile.kv_head);
    }
    finish_rows<D>(tile, blk.O, blk.L, blk.row0, p, blk.t);
#else
    (void)args;
#endif
}
