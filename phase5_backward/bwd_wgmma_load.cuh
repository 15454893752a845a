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

/* Steps 3-4, Alg. 2 l.6, one thread: K_j, V_j (keys j0 .. of KV head kv_head) by the copy
 * engine in boxes of 64 rows x 64 columns (rows past N_kv: zeros), completing on bar */
template <int D, int BC>
__device__ __forceinline__ void tma_load_kv(unsigned char *Ks, unsigned char *Vs, const CUtensorMap *tk,
                                            const CUtensorMap *tv, uint64_t *bar, int j0, int kv_head)
{
    mbar_arrive_expect_tx(bar, 2 * (uint32_t)((size_t)BC * D * 2));
    for (int sub = 0; sub < BC / 64; sub++)
        for (int a = 0; a < D / 64; a++) {
            const size_t at = (size_t)a * BC * SW_ROW + (size_t)sub * 64 * SW_ROW;
            tma_load_3d(Ks + at, tk, bar, 64 * a, j0 + 64 * sub, kv_head);
            tma_load_3d(Vs + at, tv, bar, 64 * a, j0 + 64 * sub, kv_head);
        }
}

/* Steps 3-4, Alg. 2 l.9, one thread: Q_i, dO_i (Q block i of query head `head`) into a ring
 * slot in 64-row boxes (rows past N_q: zeros); the bytes announced on full first, before any
 * lane's L_i, D_i arrival can complete its phase */
template <int D, int BR>
__device__ __forceinline__ void tma_load_q_do(unsigned char *Qs, unsigned char *dOs, const CUtensorMap *tq,
                                              const CUtensorMap *tdo, uint64_t *full, int i, int head)
{
    mbar_expect_tx(full, 2 * (uint32_t)((size_t)BR * D * 2));
    for (int a = 0; a < D / 64; a++)
        for (int qh = 0; qh < BR / 64; qh++) {
            const size_t at = (size_t)a * BR * SW_ROW + (size_t)qh * 64 * SW_ROW;
            tma_load_3d(Qs + at, tq, full, 64 * a, i * BR + 64 * qh, head);
            tma_load_3d(dOs + at, tdo, full, 64 * a, i * BR + 64 * qh, head);
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
