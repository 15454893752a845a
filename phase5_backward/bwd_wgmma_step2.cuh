/* bwd_wgmma_step2.cuh - step 2 of the Hopper backward (chapter 5b): step 1 with
 * FlashAttention-3's dQ path. A step's dQ_i share goes to a shared fp32 tile (two stages), and
 * the copy engine adds the tile to HBM, one cp.reduce.async.bulk .add.f32 a row, in place of
 * the float2 atomics.              build/phase5 --kernel wgmma-dq [--causal]   (sm_90a)
 */
#ifndef PHASE5_BWD_WGMMA_STEP2_CUH
#define PHASE5_BWD_WGMMA_STEP2_CUH
#include "bwd_wgmma_step1.cuh"

#if FA_HAVE_WGMMA
template <class C>
struct WgDqPath<C, true> {
    /* thread r < DQ_TILES x Br adds row r % Br of tile r / Br */
    static __device__ __forceinline__ bool issuer() { return (int)threadIdx.x < C::DQ_TILES * C::BR; }
    /* step st - 2's reduce has read this stage's dQ tile */
    static __device__ __forceinline__ void before_step()
    {
        if (issuer()) bulk_wait_read<1>();
    }
    static __device__ __forceinline__ void add(const WgSmem<C> &sm, const float (&dq)[C::DQ_HALVES][32], int stage,
                                               float *dQi, int valid, float scale, int wg, int warp, int g, int t)
    {
        unsigned char *tiles = sm.dQs + stage * C::DQ_TILES * C::DQ_TILE;
        store_dq<C::D, C::DQ_HALVES, C::DQ_PITCH>(tiles + (C::DQ_BY_KEYS ? wg * C::DQ_TILE : 0), dq,
                                                  C::DQ_BY_KEYS ? 0 : wg * C::DQ_HALVES, warp, g, t, scale);
        fence_proxy_async();   /* ordinary stores; the copy engine reads the tile next */
        __syncthreads();       /* every warpgroup's share of the tile is in */
        if (issuer()) {
            const int row = threadIdx.x % C::BR, tile = threadIdx.x / C::BR;
            if (row < valid)   /* rows past N_q: not added */
                bulk_reduce_add_f32(dQi + (size_t)row * C::D, tiles + tile * C::DQ_TILE + row * C::DQ_PITCH,
                                    C::D * sizeof(float));
            bulk_commit();
        }
    }
    /* the last reduces done before the block's shared memory goes */
    static __device__ __forceinline__ void finish()
    {
        if (issuer()) bulk_wait<0>();
    }
};
#endif
#endif
