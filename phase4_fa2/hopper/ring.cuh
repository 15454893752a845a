/* hopper/ring.cuh - the K/V ring of the warp-specialised steps (3-10): its shared-memory
 * layout, checked where it is computed, and a block's place in it.
 *
 *   [Q_i: consumer 0's 64 rows][consumer 1's] [K: slot 0 .. STAGES-1] [V: slot 0 .. STAGES-1]
 *   [mbarriers: full[STAGES] empty[STAGES] q_full q_empty] [tile no.] [class bytes (mask)]
 *
 * The v-th K/V block a CTA visits goes to slot v % STAGES, on that slot's (v / STAGES)-th
 * fill. full[s] completes once per fill (the producer's arrival and the copy's bytes), so a
 * consumer waits it with parity (v / STAGES) & 1; empty[s] completes when every consumer
 * thread is done with the fill, and the producer waits for the fill before its own
 * ((v / STAGES - 1) & 1) before it refills the slot:
 *
 *        slot:      0        1        2
 *        tile:   K,V v    K,V v+1  K,V v+2       (STAGES = 3)
 *        barrier: full[0]  full[1]  full[2]      consumers wait, producer arrives + bytes
 *                 empty[0] empty[1] empty[2]     consumers arrive, producer waits */
#pragma once
#include "fwd_base.cuh"

template <int D, int BC>
struct WsLayout {
    static constexpr size_t Q_TILE = tile64_bytes<D>();                /* a consumer's 64 rows */
    static constexpr size_t TILE = (BC / 64) * tile64_bytes<D>();      /* a K or V block */
    /* ring slots: 4, or as many as fit the H100's 227 KiB beside Q_i (3 at d = 128, Bc = 128) */
    static constexpr int FIT = (int)((SMEM_OPTIN_SM90 - 2048 - WS_CONSUMERS * Q_TILE) / (2 * TILE));
    static constexpr int STAGES = FIT < 4 ? FIT : 4;
    static constexpr size_t Q_OFF = 0, K_OFF = WS_CONSUMERS * Q_TILE, V_OFF = K_OFF + STAGES * TILE;
    static constexpr size_t BAR_OFF = V_OFF + STAGES * TILE;
    static constexpr int BARRIERS = 2 * STAGES + 2;                    /* full, empty, q_full, q_empty */
    static constexpr size_t TILE_NO_OFF = BAR_OFF + 8 * BARRIERS;      /* step 6: the tile handed over */
    static constexpr size_t CLASS_OFF = TILE_NO_OFF + 8;               /* the mask path: a byte a K/V block */
    static constexpr size_t SMEM = CLASS_OFF + 1024;                   /* + room to align the block to 1024 */
    static constexpr size_t SMEM_MASKED = SMEM + FA2_WS_MASK_MAX_TC;
    static_assert(Q_TILE % 1024 == 0 && TILE % 1024 == 0, "swizzle atoms must stay 1024-aligned");
    static_assert(BAR_OFF % 8 == 0, "mbarriers are 8-byte aligned");
    static_assert(STAGES >= 2 && SMEM <= SMEM_OPTIN_SM90, "the ring does not fit shared memory");
};

/* The v-th block's place in the ring: its slot, and the parity of that slot's fill. */
template <int STAGES>
struct RingPos {
    int v;
    __device__ __forceinline__ int slot() const { return v % STAGES; }
    __device__ __forceinline__ int fill() const { return v / STAGES; }
    __device__ __forceinline__ uint32_t phase() const { return (uint32_t)(v / STAGES) & 1; }
    __device__ __forceinline__ void advance() { v++; }
};

/* The ring in a CTA's shared memory: the tiles and the barriers at WsLayout's offsets. */
template <int D, int BC_>
struct WsRing {
    using C = WsLayout<D, BC_>;
    using Pos = RingPos<C::STAGES>;
    static constexpr int BC = BC_;
    unsigned char *base, *Q, *K, *V;
    uint64_t *full, *empty, *q_full, *q_empty;
    __device__ explicit WsRing(unsigned char *aligned)
        : base(aligned), Q(base + C::Q_OFF), K(base + C::K_OFF), V(base + C::V_OFF),
          full((uint64_t *)(base + C::BAR_OFF)), empty(full + C::STAGES), q_full(empty + C::STAGES), q_empty(q_full + 1) {}
    __device__ __forceinline__ unsigned char *k_slot(int st) const { return K + st * C::TILE; }
    __device__ __forceinline__ unsigned char *v_slot(int st) const { return V + st * C::TILE; }
    __device__ __forceinline__ unsigned char *q_tile(int c) const { return Q + c * C::Q_TILE; }
#if FA_HAVE_WGMMA
    /* full (the producer's arrival + bytes), empty (every consumer thread), q_full, and with
     * persistent, q_empty (every consumer thread); one thread, before the block's barrier */
    __device__ __forceinline__ void init_barriers(bool persistent = false) const
    {
        for (int st = 0; st < C::STAGES; st++) {
            mbar_init(full + st, 1);
            mbar_init(empty + st, WS_CONSUMERS * WG_THREADS);
        }
        mbar_init(q_full, 1);
        if (persistent) mbar_init(q_empty, WS_CONSUMERS * WG_THREADS);
        mbar_init_fence();
    }
    /* a consumer: block at pos has landed */
    __device__ __forceinline__ void wait_full(Pos at) const { mbar_wait(full + at.slot(), at.phase()); }
    /* a consumer thread: done with the block at pos (its slot may be refilled) */
    __device__ __forceinline__ void release(Pos at) const { mbar_arrive(empty + at.slot()); }
    /* the producer: the slot of pos is free (its previous fill released), then expect bytes */
    __device__ __forceinline__ void acquire(Pos at, uint32_t bytes) const
    {
        if (at.fill() > 0) mbar_wait(empty + at.slot(), (uint32_t)(at.fill() - 1) & 1);
        mbar_arrive_expect_tx(full + at.slot(), bytes);
    }
#endif
};

/* step 3's ring, which steps 3m and 6 share (Bc = FA2_WS_BC) */
template <int D>
using Fp16Ring = WsRing<D, FA2_WS_BC(D, false)>;
