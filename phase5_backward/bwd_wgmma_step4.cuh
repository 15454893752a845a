/* bwd_wgmma_step4.cuh - step 4 of the Hopper backward (chapter 5b): step 3 with dQ_i added in a
 * fixed order, so that the gradients are the same bit for bit on every run.
 *                                          build/phase5 --kernel wgmma-det [--causal]  (sm_90a)
 * No mask path: the turn order below counts on every K/V block in [0, jl] visiting Q block i,
 * which holds for the causal range but not for a mask that skips blocks in between (a
 * document mask): a skipped block never takes its turn, and the blocks left of it would wait
 * for ever. The driver refuses it.
 */
#ifndef PHASE5_BWD_WGMMA_STEP4_CUH
#define PHASE5_BWD_WGMMA_STEP4_CUH
#include "bwd_wgmma_step3.cuh"

#if FA_HAVE_WGMMA
/* The K/V blocks add into Q block i's rows in a fixed order, last first: j = jl, jl - 1, .., 0
 * (jl = bwd_last_kv_block(i); under the causal mask every block before jl visits Q block i
 * too), so the fp32 sums, and the gradients, are the same on every run. Block j waits for its
 * turn: the counter of (query head, i) reaching jl - j. Last first, because a causal block j
 * starts at its first Q block, where the blocks after it (the diagonal's) have already been:
 * ascending, block j would wait at its first Q block for block 0 to get there. The grid runs
 * the blocks of a head last first too (blockIdx.x 0 is block Tc - 1: the kernel's j), so that a
 * block never waits for one not yet started. */
template <class C>
struct WsDqOrder<C, true> {
    int *turn;     /* (query head, Q block i)'s counter: the K/V blocks that have added */
    int mine;      /* jl - j: the count at which it is this block's turn */
    __device__ __forceinline__ WsDqOrder(const WsBwdArgs &args, size_t l_off, int i, int j, int Tc)
    {
        const attn_problem_t &p = args.p;
        turn = args.dq_turn + (l_off / p.N_q) * ((p.N_q + C::BR - 1) / C::BR) + i;
        mine = (visit_all(args.vis) ? Tc - 1 : bwd_last_kv_block(p, i, C::BR, C::BC)) - j;
    }
    __device__ __forceinline__ void wait_turn(int lane) const
    {
        if (lane == 0) while (ld_acquire_gpu(turn) != mine) ;
        __syncwarp();
    }
    /* the adds written (not only read), then the next block's turn */
    __device__ __forceinline__ void added(int lane) const
    {
        bulk_wait<0>();
        __syncwarp();
        if (lane == 0) { fence_proxy_async_global(); st_release_gpu(turn, mine + 1); }
    }
};
#endif
#endif
