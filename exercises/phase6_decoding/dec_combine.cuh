/* dec_combine.cuh - the log-sum-exp combine of a row's S partials (chapter 2's merge):
 * L = log sum_s e^{L_s}, O = sum_s e^{L_s - L} O_s; a row whose every split is empty (every
 * L_s = -inf) is O = 0, L = +inf. combine_row is one row by one warp; dec_combine_kernel runs
 * it after the split kernel when S > 1 (split, split-pack, paged, ragged), and the fused
 * combine (dec_fused.cuh) in the split kernel's last block of a row tile. */
#ifndef PHASE6_DEC_COMBINE_CUH
#define PHASE6_DEC_COMBINE_CUH
#include "dec_cfg.cuh"

/* The combine: one warp per query row (rows of [B][H][N_q]), S partials each. The S
 * weights go through shared memory so that the O loop issues its loads unrolled, several
 * partial rows in flight at once (a loop of dependent loads would wait on each). */
#define DEC_MAX_SPLITS 1024
/* One row of the combine, by one warp: w, the warp's DEC_MAX_SPLITS floats of shared memory.
 * dec_combine_kernel runs it, and so does the fused combine (the split kernel's last block
 * of a row tile). */
template <int D>
__device__ __forceinline__ void combine_row(int S, int nrows, int row, const float *Opart, const float *Lpart, float *O,
                                            float *L, float *w)
{
    const int lane = threadIdx.x % 32;
    const size_t nq = (size_t)nrows * D;
    float acc[D / 32];          /* columns lane, lane + 32, ...: every load coalesced */
#pragma unroll
    for (int k = 0; k < D / 32; k++) acc[k] = 0.0f;
    float lse;
    __syncwarp();   /* a warp that merges several rows (the fused combine): every lane is done
                       reading the previous row's weights before any lane writes this row's */
    /* TODO EXERCISE dec.combine_gpu: the log-sum-exp combine of one row's S partials (a warp; lane owns columns lane + 32 k)
     * HINT: as dec.combine: m = max_s L_s (L_s = Lpart[s * nrows + row]; the lanes share the
     * HINT: S values, then a warp max by __shfl_xor_sync); m = -inf: no split saw a key, the
     * HINT: row is O = 0 (acc as it is) and lse = +inf. Else lse = m + log sum_s e^{L_s - m}
     * HINT: (a warp sum the same way), w[s] = e^{L_s - lse} (w: this warp's shared array;
     * HINT: __syncwarp() before reading it) and acc[k] = sum_s w[s] O_s[row][lane + 32 k]
     * HINT: (O_s at Opart + s * nq + row * D). */
    lse = Lpart[row]; for (int k = 0; k < D / 32; k++) acc[k] = Opart[(size_t)row * D + lane + 32 * k]; (void)S; (void)nq; (void)w;
    /* END EXERCISE dec.combine_gpu */
#pragma unroll
    for (int k = 0; k < D / 32; k++) O[(size_t)row * D + lane + 32 * k] = acc[k];
    if (lane == 0) L[row] = lse;
}

template <int D>
__global__ void __launch_bounds__(DTHREADS)
dec_combine_kernel(int S, int nrows, const float *Opart, const float *Lpart, float *O, float *L)
{
    DEC_SHARED float wsh[DWARPS][DEC_MAX_SPLITS];
    const int warp = threadIdx.x / 32, row = blockIdx.x * DWARPS + warp;
    if (row >= nrows) return;   /* warp-uniform; no block-wide barrier below */
    combine_row<D>(S, nrows, row, Opart, Lpart, O, L, wsh[warp]);
}

#endif
