/* dec_fused.cuh - variant fused: split-pack with the combine in the split kernel (a.done: a
 * counter a row tile); the command that runs it: build/phase6 --kernel fused
 *
 * What it adds: no combine kernel. Each split block, its partial written, counts itself done
 * for its row tile, and the block that counts last merges the tile's rows (fused_tail, with
 * dec_combine.cuh's combine_row). decode.cu uses it when S > 1 and a row tile holds at most
 * DEC_FUSED_MAX_ROWS rows (decode.h); past that the combine kernel runs instead. */
#ifndef PHASE6_DEC_FUSED_CUH
#define PHASE6_DEC_FUSED_CUH
#include "dec_cfg.cuh"
#include "dec_combine.cuh"

/* The fused combine (DecArgs.done): each split block, its partial written, counts itself
 * done for its row tile; the block that counts last (it sees the S - 1 others' partials,
 * each made visible by its __threadfence before it counted) merges the tile's rows with
 * combine_row and resets the count for the next launch. No second kernel and no gap
 * between two launches: Lean Attention's merge by the tile that finishes a row (arXiv
 * 2405.10480), here with the split kernel's own grid. w: DWARPS x DEC_MAX_SPLITS floats of
 * shared memory that the block no longer needs. */
template <int D>
__device__ __forceinline__ void fused_tail(const DecArgs &a, size_t row_base, int nrows, size_t nq_rows, float *w)
{
    DEC_SHARED int last;
    __threadfence();   /* this block's partial, visible to the whole GPU before it is counted */
    __syncthreads();
    const int tile = blockIdx.z * gridDim.y + blockIdx.y;
    if (threadIdx.x == 0) last = atomicAdd(&a.done[tile], 1) == a.S - 1;
    __syncthreads();
    if (!last) return;   /* block-uniform */
    __threadfence();     /* the others' partials: counted before ours, so written before */
    const int warp = threadIdx.x / 32;
    for (int r = warp; r < nrows; r += DWARPS)
        combine_row<D>(a.S, (int)nq_rows, (int)(row_base + r), a.Opart, a.Lpart, a.O, a.L, w + warp * DEC_MAX_SPLITS);
    if (threadIdx.x == 0) a.done[tile] = 0;
}

#endif
