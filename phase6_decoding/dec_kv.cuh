/* dec_kv.cuh - the K/V tile loads: BK keys of K and V a tile, through a ring of DCfg::STAGES
 * tiles in shared memory filled by cp.async, one commit group a tile. Where a key's row is
 * comes from the cache policy Kv: ContigKv here ([B][H_kv][N_kv][d]), PagedKv in
 * dec_paged.cuh (the block table). A policy gives
 *   fetch<D>(pid, a, b, jt, kend)     the pool pages of this thread's rows of the tile at jt
 *                                      (a tile ahead of their use; nothing when contiguous)
 *   row<D>(a, pid, b, kvh, j)          the element offset of key j's row in K (and V)
 *   key_row<D>(a, b, kvh, j)           the same for one key, its page looked up on the spot */
#ifndef PHASE6_DEC_KV_CUH
#define PHASE6_DEC_KV_CUH
#include "dec_cfg.cuh"
#include "dec_split_pack.cuh"

/* The K/V stream's 16-byte copy: cp_async16 with the .L2::256B prefetch hint, which asks L2
 * to fetch the whole 256-byte run around each request (a K row at d = 128 is 256 bytes, a
 * tile 16 KiB in one run). Measured on the H100 beside the plain copy (DEC_KV_PLAIN, the
 * _pf sweep of docs/results/h100/phase6): the packed kernels (split-pack, fdpp, paged) and
 * MHA take 1.0-1.4% less time from L = 16k on; the unpacked split on GQA, whose G blocks
 * of a KV head read the same rows, 8-25% more (a teaching row: packing is its fix) */
__device__ __forceinline__ void kv_copy16(void *dst, const void *src, bool valid)
{
#if defined(__CUDACC__) && !defined(DEC_KV_PLAIN)
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n"
                 :: "r"(smem_u32(dst)), "l"(src), "r"(valid ? 16 : 0) : "memory");
#else   /* the plain copy (and the emulator's, which has no L2) */
    cp_async16(dst, src, valid);
#endif
}

/* The contiguous cache: key j of KV head kvh of sequence b is row j of [B][H_kv][N_kv][d]. */
struct ContigKv {
    template <int D>
    static __device__ __forceinline__ void fetch(int (&)[KvRows<D>::N], const DecArgs &, int, int, int) {}
    template <int D>
    static __device__ __forceinline__ size_t row(const DecArgs &a, int, int b, int kvh, int j)
    {
        return (((size_t)b * a.p.H_kv + kvh) * (size_t)a.p.N_kv + (size_t)j) * D;
    }
    template <int D>
    static __device__ __forceinline__ size_t key_row(const DecArgs &a, int b, int kvh, int j) { return row<D>(a, 0, b, kvh, j); }
};

/* Keys [jt, jt + BK) of KV head kvh of sequence b into shared memory (K and V), rows at or
 * past kend zero-filled (and never read from HBM). pid: the pool pages of this thread's
 * rows (Kv::fetch). */
template <int D, class Kv>
__device__ __forceinline__ void load_kv(__half *Ks, __half *Vs, const DecArgs &a, int b, int kvh, int jt, int kend,
                                        const int (&pid)[KvRows<D>::N])
{
    constexpr int LDH = DCfg<D>::LDH, CH = D / 8;   /* 16-byte chunks per row */
#pragma unroll
    for (int k = 0; k < KvRows<D>::N; k++) {
        const int c = threadIdx.x + k * DTHREADS, r = c / CH, col = (c % CH) * 8, j = jt + r;
        const bool valid = j < kend;
        size_t row = 0;   /* element offset of key j's row in K (and V) */
        if (valid) row = Kv::template row<D>(a, pid[k], b, kvh, j);
        kv_copy16(Ks + r * LDH + col, a.K + row + col, valid);
        kv_copy16(Vs + r * LDH + col, a.V + row + col, valid);
    }
}

/* Stage st of the ring: K at st 2 BK LDH halves past the stages' start, V after it. */
template <int D>
__device__ __forceinline__ __half *ring_stage(__half *KVs, int st) { return KVs + st * 2 * BK * DCfg<D>::LDH; }

/* Q's rows (zero past nrows) and the ring's first STAGES - 1 tiles: one cp.async group each
 * (an empty group past k1), so that the loop's wait counts groups alike for every tile. */
template <int D, int WR, class Kv>
__device__ __forceinline__ void ring_start(__half *Qs, __half *KVs, int (&pid)[KvRows<D>::N], const DecArgs &a,
                                           const DecRows &r, int k0, int k1)
{
    using C = DCfg<D, WR>;
    Kv::template fetch<D>(pid, a, r.b, k0, k1);
    cp_async_tile<D, C::LDH, DTHREADS>(Qs, a.Q + r.row_base * D, C::ROWS_B, r.nrows);
#pragma unroll
    for (int st = 0; st < C::STAGES - 1; st++) {
        if (k0 + st * BK < k1) {
            __half *dst = ring_stage<D>(KVs, st);
            load_kv<D, Kv>(dst, dst + BK * C::LDH, a, r.b, r.kvh, k0 + st * BK, k1, pid);
            Kv::template fetch<D>(pid, a, r.b, k0 + (st + 1) * BK, k1);   /* the next tile's, a tile ahead */
        }
        cp_async_commit();
    }
}

/* Tile tt (keys from jt) landed and visible to every warp, every warp done with the stage
 * tile tt - 1 used. One stage: tile tt is loaded now, once every warp is done with tt - 1. */
template <int D, int WR, class Kv>
__device__ __forceinline__ void ring_wait(__half *KVs, int (&pid)[KvRows<D>::N], const DecArgs &a, const DecRows &r,
                                          int tt, int jt, int k1)
{
    using C = DCfg<D, WR>;
    if constexpr (C::STAGES == 1) {
        if (tt > 0) __syncthreads();
        load_kv<D, Kv>(KVs, KVs + BK * C::LDH, a, r.b, r.kvh, jt, k1, pid);
        Kv::template fetch<D>(pid, a, r.b, jt + BK, k1);   /* the next tile's pages */
        cp_async_commit();
    }
    cp_async_wait<(C::STAGES >= 2 ? C::STAGES - 2 : 0)>();   /* all but the newest STAGES - 2 groups: tile tt's */
    __syncthreads();   /* tile tt (and Q) landed and are visible to every warp; every warp
                          is done with the stage tile tt - 1 used, which ring_ahead refills */
}

/* Tile tt + STAGES - 1 streams in while tile tt is computed (an empty group past the range's
 * end, so that ring_wait's count stays one group a tile). */
template <int D, int WR, class Kv>
__device__ __forceinline__ void ring_ahead(__half *KVs, int (&pid)[KvRows<D>::N], const DecArgs &a, const DecRows &r,
                                           int tt, int ntiles, int k0, int k1)
{
    using C = DCfg<D, WR>;
    if (C::STAGES > 1) {
        const int ahead = tt + C::STAGES - 1;
        if (ahead < ntiles) {
            __half *nx = ring_stage<D>(KVs, ahead % C::STAGES);
            load_kv<D, Kv>(nx, nx + BK * C::LDH, a, r.b, r.kvh, k0 + ahead * BK, k1, pid);
            Kv::template fetch<D>(pid, a, r.b, k0 + (ahead + 1) * BK, k1);   /* its successor's pages */
        }
        cp_async_commit();
    }
}

#endif
