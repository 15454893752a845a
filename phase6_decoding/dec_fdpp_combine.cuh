/* dec_fdpp_combine.cuh - FlashDecoding++'s combine and its fallback (variant fdpp,
 * dec_fdpp.cuh; build/phase6 --kernel fdpp): the FD++ combine merges the partials of the
 * rows that stayed in the safe window with a sum and a divide, and flags the others;
 * dec_recompute_kernel redoes the flagged rows with the safe two-pass softmax. */
#ifndef PHASE6_DEC_FDPP_COMBINE_CUH
#define PHASE6_DEC_FDPP_COMBINE_CUH
#include "dec_cfg.cuh"
#include "dec_ragged.cuh"
#include "dec_kv.cuh"
#include "dec_paged.cuh"

__device__ int dec_fdpp_redo_d;   /* rows recomputed since dec_gpu_fdpp_recomputed() last read it */

/* FD++'s combine (decode_fdpp_cpu.c's dec_fdpp_combine_row), one warp per query row: no max and
 * no exponentials, O = (sum_s u_s) / (sum_s l_s), L = phi + log sum_s l_s. A row where a split
 * passed the window's top (l_s = +inf), or that has a key but where no split reached its
 * bottom (every l_s <= 0), is flagged in redo[] for dec_recompute_kernel (and counted); a row
 * with no key is O = 0, L = +inf. Every row's flag is written, so redo needs no reset. */
template <int D>
__global__ void __launch_bounds__(DTHREADS)
dec_fdpp_combine_kernel(attn_problem_t p, const int *seqlens, int S, int nrows, float phi, const float *Opart,
                        const float *Lpart, float *O, float *L, uint8_t *redo)
{
    const int lane = threadIdx.x % 32, row = blockIdx.x * DWARPS + threadIdx.x / 32;
    if (row >= nrows) return;   /* warp-uniform */
    const size_t nq = (size_t)nrows * D;
    bool passed = false, reached = false;
    float l = 0.0f;
    for (int s = lane; s < S; s += 32) {
        const float ls = Lpart[(size_t)s * nrows + row];
        passed |= ls == INFINITY;
        reached |= ls > 0.0f;
        l += fabsf(ls);
    }
    passed = __any_sync(0xffffffffu, passed);
    reached = __any_sync(0xffffffffu, reached);
#pragma unroll
    for (int off = 16; off > 0; off /= 2) l += __shfl_xor_sync(0xffffffffu, l, off);
    int n;
    const bool has = row_has_keys(p, seqlens, row / (p.H * p.N_q), row % p.N_q, &n);
    const bool again = has && (passed || !reached);
    if (lane == 0) {
        redo[row] = again;
        if (again) atomicAdd(&dec_fdpp_redo_d, 1);
    }
    if (again) return;   /* dec_recompute_kernel writes the row */
    float acc[D / 32];
#pragma unroll
    for (int k = 0; k < D / 32; k++) acc[k] = 0.0f;
    if (has) {
#pragma unroll 8
        for (int s = 0; s < S; ++s) {
            const float *Us = Opart + (size_t)s * nq + (size_t)row * D;
#pragma unroll
            for (int k = 0; k < D / 32; k++) acc[k] += Us[lane + 32 * k];
        }
        const float inv = 1.0f / l;
#pragma unroll
        for (int k = 0; k < D / 32; k++) acc[k] *= inv;
    }
#pragma unroll
    for (int k = 0; k < D / 32; k++) O[(size_t)row * D + lane + 32 * k] = acc[k];
    if (lane == 0) L[row] = has ? phi + logf(l) : INFINITY;
}

/* FD++'s fallback (decode_fdpp_cpu.c's dec_recompute_row): one block per query row, doing nothing
 * unless the row is flagged; a flagged row is recomputed with the safe two-pass softmax over
 * all its visible keys (pass 1: the max; pass 2: the weights, 128 keys at a time through
 * shared memory, and O's columns, thread k owning column k). Rare by design, so written
 * for clarity, not speed. */
template <int D, class Kv>
__global__ void __launch_bounds__(DTHREADS)
dec_recompute_kernel(const DecArgs a, const uint8_t *redo)
{
    const attn_problem_t &p = a.p;
    const int row = blockIdx.x, tid = threadIdx.x;
    if (!redo[row]) return;   /* block-uniform */
    DEC_SHARED float qs[D], ws[DTHREADS], red[DWARPS];
    const int b = row / (p.H * p.N_q), h = (row / p.N_q) % p.H, q = row % p.N_q, kvh = attn_kv_head(&p, h);
    int n;
    row_has_keys(p, a.seqlens, b, q, &n);
    const int last = p.causal ? q + (n - p.N_q) : n - 1;   /* the last visible key */
    for (int k = tid; k < D; k += DTHREADS) qs[k] = __half2float(a.Q[(size_t)row * D + k]);
    __syncthreads();
    auto key_row = [&](int j) { return Kv::template key_row<D>(a, b, kvh, j); };   /* key j's row in K (and V) */
    auto score = [&](int j) {
        const __half *kr = a.K + key_row(j);
        float acc = 0.0f;
#pragma unroll 8
        for (int k = 0; k < D; k++) acc += qs[k] * __half2float(kr[k]);
        return acc * p.scale;
    };
    auto block_reduce = [&](float v, bool is_max) {
#pragma unroll
        for (int off = 16; off > 0; off /= 2) {
            const float o = __shfl_xor_sync(0xffffffffu, v, off);
            v = is_max ? fmaxf(v, o) : v + o;
        }
        if (tid % 32 == 0) red[tid / 32] = v;
        __syncthreads();
        float r = red[0];
        for (int w = 1; w < DWARPS; w++) r = is_max ? fmaxf(r, red[w]) : r + red[w];
        __syncthreads();
        return r;
    };
    float m = -INFINITY;   /* pass 1: the row's max score */
    for (int j = tid; j <= last; j += DTHREADS) m = fmaxf(m, score(j));
    m = block_reduce(m, true);
    float l = 0.0f, acc[(D + DTHREADS - 1) / DTHREADS] = {};
    for (int j0 = 0; j0 <= last; j0 += DTHREADS) {   /* pass 2 */
        const int j = j0 + tid, cnt = min(DTHREADS, last + 1 - j0);
        ws[tid] = j <= last ? expf(score(j) - m) : 0.0f;
        l += ws[tid];
        __syncthreads();
        for (int k = tid, c = 0; k < D; k += DTHREADS, c++)
            for (int jj = 0; jj < cnt; jj++) acc[c] += ws[jj] * __half2float(a.V[key_row(j0 + jj) + k]);
        __syncthreads();
    }
    l = block_reduce(l, false);
    for (int k = tid, c = 0; k < D; k += DTHREADS, c++) a.O[(size_t)row * D + k] = acc[c] / l;
    if (tid == 0) a.L[row] = m + logf(l);
}

#endif
