/* step 1, wgmma: FlashAttention-2's forward (fa2_mma.cu's algorithm: Q blocks outer, K/V
 * inner, O~ unnormalised, L written, causal blocks skipped) with Hopper's warpgroup MMA
 * doing the products.   build/phase4 --kernel wgmma   (every step; this is its first row)
 *
 *   S = Q_i K_j^T    one wgmma m64n64k16 per k16 slice of d, Q_i and K_j read by the
 *                    tensor cores from shared memory (no ldmatrix, no A/B registers)
 *   O~ += P~ V_j     P~ from the S accumulators straight into A registers (wgmma's
 *                    accumulator layout is mma.sync's, warp by warp), V_j from shared
 *                    memory, read transposed (it is stored key-major, d contiguous)
 *
 * One warpgroup (4 warps, 128 threads) per 64-row Q block; warp w owns rows 16w .. 16w+15
 * of S and O, as in fa2-mma. K/V blocks of 64 keys, double-buffered with cp.async (the
 * loads of chapter 4), a __syncthreads per block. Tiles are stored with the 128-byte
 * swizzle the descriptors name (wgmma.cuh); a d = 128 tile is two 64-column halves
 * ("atoms" of 64 rows x 128 bytes), one after the other:
 *
 *   Q_i:  [atom d 0..63: 8 KiB][atom d 64..127: 8 KiB]
 *   K_j:  stage 0 [atoms], stage 1 [atoms]      V_j: the same
 *
 * Each wgmma is waited for before its result is used (attend_block): no overlap of the
 * softmax with the products yet. */
#pragma once
#include "mma_ops.cuh"
#include "producer.cuh"
#include "epilogue.cuh"
#include "scheduler.cuh"

/* One warpgroup's shared memory: Q_i, then STAGES K and STAGES V slots, then (step 2) STAGES
 * + 1 mbarriers: a slot's bytes landed, Q_i's. */
template <int D, int STAGES_>
struct WgLayout {
    static constexpr int ATOMS = D / 64, STAGES = STAGES_;
    static constexpr size_t TILE = tile64_bytes<D>();
    static constexpr size_t Q_OFF = 0, K_OFF = TILE, V_OFF = (1 + STAGES) * TILE;
    static constexpr size_t BAR_OFF = (1 + 2 * STAGES) * TILE;
    static constexpr size_t SMEM = BAR_OFF + 8 * (STAGES + 1) + 1024;  /* + room to align */
    static_assert(TILE % 1024 == 0, "swizzle atoms must stay 1024-aligned");
};

/* A one-warpgroup CTA's Q block (steps 1 and 2): where its rows are, and this thread's. */
template <int D>
struct WgBlock {
    CtaTile tile;
    int Tc, row0, t, n_blocks;
    const __half *Q, *K, *V;
    float *O, *L;
    __device__ explicit WgBlock(const WgArgs &args)
    {
        const attn_problem_t &p = args.p;
        const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
        const int Tr = (p.N_q + WG_BR - 1) / WG_BR;
        Tc = (p.N_kv + WG_BC - 1) / WG_BC;
        tile = tile_of_cta(p, Tr, WG_BR);
        Q = args.Q + attn_q_offset(&p, tile.b, tile.h) + (size_t)tile.i0 * D;
        K = args.K + attn_kv_offset(&p, tile.b, tile.h);
        V = args.V + attn_kv_offset(&p, tile.b, tile.h);
        O = args.O + attn_q_offset(&p, tile.b, tile.h);
        L = args.L + attn_l_offset(&p, tile.b, tile.h);
        n_blocks = blocks_to_visit<true>(args, tile.i0, WG_BR, WG_BC, Tc);   /* the causal range, as fa2-mma's */
        row0 = tile.i0 + warp * 16 + lane / 4;   /* this thread's rows: row0, row0 + 8 */
        t = lane % 4;
    }
};

template <int D>
__global__ void __launch_bounds__(WG_THREADS)
fa2_wgmma_kernel(const __grid_constant__ WgArgs args)
{
#if FA_HAVE_WGMMA
    using C = WgLayout<D, 2>;
    const attn_problem_t &p = args.p;
    unsigned char *smem = smem_1024();
    unsigned char *Qs = smem + C::Q_OFF, *Ks = smem + C::K_OFF, *Vs = smem + C::V_OFF;
    const WgBlock<D> blk(args);
    if (threadIdx.x == 0) visit_count(args.vis, blk.tile.i, blk.n_blocks);   /* the driver holds it to fa2_kv_blocks() */
    if (blk.n_blocks == 0) {
        write_rows_without_keys<D>(blk.O, blk.L, blk.tile.i0, WG_BR, p.N_q, WG_THREADS);
        return;
    }
    const float sl2 = p.scale * FA_LOG2E;
    load_tile_sw<D>(Qs, blk.Q, p.N_q - blk.tile.i0);
    load_tile_sw<D>(Ks, blk.K, p.N_kv);
    load_tile_sw<D>(Vs, blk.V, p.N_kv);
    cp_async_commit();

    RowTile<D> tile;   /* this warpgroup's O~, m, l */
    for (int j = 0; j < blk.n_blocks; j++) {
        const int st = j % 2;
        cp_async_wait<0>();
        fence_proxy_async();   /* the tiles were written by ordinary (cp.async) copies */
        __syncthreads();       /* every warp's copies of block j landed, and every warp is done with block j - 1's slot */
        if (j + 1 < blk.n_blocks) {   /* block j + 1 streams in while this one is computed */
            const int next = (j + 1) * WG_BC;
            load_tile_sw<D>(Ks + (1 - st) * C::TILE, blk.K + (size_t)next * D, p.N_kv - next);
            load_tile_sw<D>(Vs + (1 - st) * C::TILE, blk.V + (size_t)next * D, p.N_kv - next);
            cp_async_commit();
        }
        attend_block<D, true, WG_BC>(tile, Qs, Ks + st * C::TILE, Vs + st * C::TILE, j, blk.row0, blk.tile.i0, p, sl2,
                                     blk.t);
    }
    finish_rows<D>(tile, blk.O, blk.L, blk.row0, p, blk.t);
#else
    (void)args;
#endif
}
