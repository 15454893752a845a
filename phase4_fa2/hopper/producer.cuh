/* hopper/producer.cuh - the copies into shared memory: step 1's cp.async tiles, and the
 * producer thread's TMA boxes (64 rows x 128 bytes, already 128-byte swizzled) of Q_i, K_j
 * and V_j, or FP8's V^T_j, each onto the mbarrier that says when its bytes have landed. */
#pragma once
#include "ring.cuh"

#if FA_HAVE_WGMMA
/* a 64-row tile of D fp16 columns, global -> swizzled shared (rows at or past valid zero) */
template <int D>
__device__ __forceinline__ void load_tile_sw(unsigned char *dst, const __half *src, int valid)
{
    constexpr int CH = D / 8;   /* 16-byte chunks a row */
    for (int c = threadIdx.x; c < 64 * CH; c += WG_THREADS) {
        const int r = c / CH, ch = c % CH, atom = ch / 8;
        const bool ok = r < valid;
        cp_async16(dst + atom * ATOM_BYTES + sw128_offset(r, (ch % 8) * 8), ok ? src + (size_t)r * D + ch * 8 : src, ok);
    }
}

/* Q_i, both consumers' 64-row halves, onto q_full (one thread). BOX_COLS: the tensor map's
 * box width in elements (64 fp16 or 128 e4m3: a 128-byte atom either way). */
template <int ATOMS, int BOX_COLS, class Ring>
__device__ __forceinline__ void load_q_halves(const Ring &ring, const CUtensorMap *tq, int i0, int bh)
{
    mbar_arrive_expect_tx(ring.q_full, (uint32_t)(WS_CONSUMERS * Ring::C::Q_TILE));
    for (int c = 0; c < WS_CONSUMERS; c++)
        for (int a = 0; a < ATOMS; a++)
            tma_load_3d(ring.q_tile(c) + a * ATOM_BYTES, tq, ring.q_full, BOX_COLS * a, i0 + 64 * c, bh);
}

/* The BC keys of block j of K/V head kv_head as BC / 64 x ATOMS boxes into the tile at dst
 * (laid out as BC / 64 Q tiles of ROWS64 bytes), onto bar. */
template <int ATOMS, int BC, int BOX_COLS, size_t ROWS64>
__device__ __forceinline__ void load_key_rows(unsigned char *dst, const CUtensorMap *map, uint64_t *bar, int j, int kv_head)
{
    for (int sub = 0; sub < BC / 64; sub++)   /* 64 keys a box */
        for (int a = 0; a < ATOMS; a++)
            tma_load_3d(dst + sub * ROWS64 + a * ATOM_BYTES, map, bar, BOX_COLS * a, j * BC + 64 * sub, kv_head);
}

/* K_j, V_j (fp16) into the ring at pos, once both consumers are done with the slot's
 * previous fill; one thread issues it */
template <int D, int BC>
__device__ __forceinline__ void load_kv(const WsRing<D, BC> &ring, const WgArgs &args, RingPos<WsLayout<D, BC>::STAGES> at,
                                        int j, int kv_head)
{
    using C = WsLayout<D, BC>;
    const int st = at.slot();
    ring.acquire(at, 2 * (uint32_t)C::TILE);
    load_key_rows<D / 64, BC, 64, C::Q_TILE>(ring.k_slot(st), &args.tk, ring.full + st, j, kv_head);
    load_key_rows<D / 64, BC, 64, C::Q_TILE>(ring.v_slot(st), &args.tv, ring.full + st, j, kv_head);
}

/* FP8 (step 7): K8_j as above, 128 e4m3 a box row, and V^T_j, d rows of BC = 128 keys (one
 * 128-byte atom), 64 rows a box. The ring is laid out for D / 2 fp16 columns (D bytes). */
template <int D, int BC>
__device__ __forceinline__ void load_kv_fp8(const WsRing<D / 2, BC> &ring, const WgArgs &args,
                                            RingPos<WsLayout<D / 2, BC>::STAGES> at, int j, int kv_head)
{
    using C = WsLayout<D / 2, BC>;
    const int st = at.slot();
    ring.acquire(at, 2 * (uint32_t)C::TILE);
    load_key_rows<D / 128, BC, 128, C::Q_TILE>(ring.k_slot(st), &args.tk, ring.full + st, j, kv_head);
    for (int a = 0; a < D / 64; a++)
        tma_load_3d(ring.v_slot(st) + a * ATOM_BYTES, &args.tv, ring.full + st, j * BC, 64 * a, kv_head);
}
#endif
