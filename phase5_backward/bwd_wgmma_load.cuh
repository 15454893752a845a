/* bwd_wgmma_load.cuh - the Hopper backward's loads into 128-byte swizzled tiles (64-column
 * halves, bwd_wgmma.cu's picture): steps 1-2's cp.async copies, which every thread issues and
 * waits for, and steps 3-4's producer warp, which issues copies that complete on mbarriers
 * (the copy engine's boxes for Q_i, dO_i, K_j, V_j; cp.async for L_i, D_i) and never waits.
 */
#ifndef PHASE5_BWD_WGMMA_LOAD_CUH
#define PHASE5_BWD_WGMMA_LOAD_CUH
#include <cuda.h>   /* CUtensorMap */
#include "bwd_gpu.cuh"
#include "bwd_wgmma_pipe.cuh"

#if FA_HAVE_WGMMA
/* byte offset of element (r, c) of a swizzled tile of ROWS rows (halves of 64 columns) */
template <int ROWS>
__device__ __forceinline__ uint32_t tile_off(int r, int c)
{
    return (uint32_t)((c / 64) * ROWS * SW_ROW) + sw128_offset(r, c % 64);
}

/* ROWS rows of D fp16 columns, global -> swizzled shared with cp.async (rows at or past
 * valid zero-filled, not read) */
template <int ROWS, int D, int THREADS>
__device__ __forceinline__ void load_tile_sw(unsigned char *dst, const __half *src, int valid)
{
    constexpr int CH = D / 8;   /* 16-byte chunks a row */
#pragma unroll
    for (int c = threadIdx.x; c < ROWS * CH; c += THREADS) {
        const int r = c / CH, ch = c % CH;
        const bool ok = r < valid;
        cp_async16(dst + tile_off<ROWS>(r, ch * 8), ok ? src + (size_t)r * D + ch * 8 : src, ok);
    }
}

/* Steps 1-2, Alg. 2 l.9: step st's Q_i, dO_i (swizzled), L_i and D_i into one stage with
 * cp.async, every thread its share; rows past N_q zero (the mask hides them). */
template <int D, int BR, int THREADS>
__device__ __forceinline__ void load_step_sw(const bwd_steps_t &sched, int st, unsigned char *Qs, unsigned char *dOs,
                                             float *Ls, float *Ds, const __half *Qg, const __half *dOg, const float *Lg,
                                             const float *Dg, int N_q)
{
    int i; size_t l_off;
    sched.at(st, BR, i, l_off);
    const int valid = N_q - i * BR;
    load_tile_sw<BR, D, THREADS>(Qs, Qg + l_off * D, valid);
    load_tile_sw<BR, D, THREADS>(dOs, dOg + l_off * D, valid);
    bwd_load_ld<BR, THREADS>(Ls, Ds, Lg, Dg, l_off, valid);
}

/* Steps 3-4, one thread: ROWS rows (from row0) of two [heads][rows][D] fp16 tensors of head
 * `head` into two swizzled tiles, by the copy engine, in boxes of 64 rows x 64 columns (rows
 * past the tensor's end: zeros), completing on bar, whose bytes it announces first (so that no
 * other arrival completes the phase before them); ARRIVE: with this thread's arrival, the only
 * one bar waits for. K_j, V_j once (Alg. 2 l.6, ARRIVE), and each step's Q_i, dO_i into a ring
 * slot (l.9: the producer warp's lanes arrive when their L_i, D_i land). */
template <int ROWS, int D, bool ARRIVE>
__device__ __forceinline__ void tma_load_pair(unsigned char *dst0, unsigned char *dst1, const CUtensorMap *map0,
                                              const CUtensorMap *map1, uint64_t *bar, int row0, int head)
{
    if (ARRIVE) mbar_arrive_expect_tx(bar, 2 * (uint32_t)((size_t)ROWS * D * 2));
    else mbar_expect_tx(bar, 2 * (uint32_t)((size_t)ROWS * D * 2));
    for (int a = 0; a < D / 64; a++)
        for (int sub = 0; sub < ROWS / 64; sub++) {
            const size_t at = (size_t)a * ROWS * SW_ROW + (size_t)sub * 64 * SW_ROW;
            tma_load_3d(dst0 + at, map0, bar, 64 * a, row0 + 64 * sub, head);
            tma_load_3d(dst1 + at, map1, bar, 64 * a, row0 + 64 * sub, head);
        }
}

/* Steps 3-4, the producer warp's lanes: L_i, D_i (not 16-byte aligned rows: no TMA) with
 * cp.async, rows past N_q 0; each lane's arrival on full comes when its copies land, so the
 * producer runs on at once */
template <int BR>
__device__ __forceinline__ void cp_async_ld_arrive(float *Ls, float *Ds, const float *Lg, const float *Dg,
                                                   size_t l_off, int valid, uint64_t *full, int lane)
{
    for (int r = lane; r < BR; r += 32) {
        cp_async4(Ls + r, r < valid ? Lg + l_off + r : Lg, r < valid);
        cp_async4(Ds + r, r < valid ? Dg + l_off + r : Dg, r < valid);
    }
    cp_async_mbar_arrive(full);
}
#endif
#endif
