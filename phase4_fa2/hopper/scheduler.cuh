/* hopper/scheduler.cuh - which tile a CTA works on, and which K/V blocks that tile visits.
 *
 *   one tile a CTA (steps 1-5, 7-10): the grid is (Q blocks, B x H); CTA x takes Q block
 *       x, or with the causal mask Tr - 1 - x, so that the longest tiles start first; with
 *       a FlashMask mask the order of mask_gpu_order, rank by rank across every head
 *   persistent (step 6): one CTA a SM; each takes its next tile from a counter in global
 *       memory when it is ready for one, in the same order (PersistentTiles) */
#pragma once
#include "fwd_base.cuh"

/* A tile: Q block i of head bh = b H + h, its first row i0, and its K/V head. */
struct CtaTile {
    int i, bh, b, h, kv_head, i0;
};
__device__ __forceinline__ CtaTile make_tile(const attn_problem_t &p, int i, int bh, int Br)
{
    CtaTile t;
    t.i = i;
    t.bh = bh;
    t.b = bh / p.H;
    t.h = bh % p.H;
    t.kv_head = t.b * p.H_kv + attn_kv_head(&p, t.h);   /* the tensor maps' outer index */
    t.i0 = i * Br;
    return t;
}
/* one tile a CTA, longest first (MASKED: mask_gpu_order's order) */
__device__ __forceinline__ CtaTile tile_of_cta(const attn_problem_t &p, int Tr, int Br, bool masked = false,
                                               const int32_t *order = nullptr)
{
    int i = p.causal ? Tr - 1 - (int)blockIdx.x : (int)blockIdx.x, bh = blockIdx.y;
    if (masked) mask_block_of(blockIdx.x + blockIdx.y * gridDim.x, gridDim.y, Tr, order, &i, &bh);
    return make_tile(p, i, bh, Br);
}

/* The persistent grid's tiles: tile t is head t / Tr, its Q block t % Tr (causal: the last
 * first). A grab of the launch's counter returns the next; n_tiles means none is left. */
struct PersistentTiles {
    int Tr, n_tiles;
    bool causal;
    __device__ __forceinline__ int q_block(int t) const { const int r = t % Tr; return causal ? Tr - 1 - r : r; }
    __device__ __forceinline__ int grab(const WgArgs &args) const
    {
        const long long g = (long long)(atomicAdd(args.tile_ctr, 1ull) - args.tile_base);
        return g < n_tiles ? (int)g : n_tiles;
    }
};

/* The K/V blocks a Q block of Br rows starting at row i0 visits: all Tc, or with the causal
 * skip up to the block holding the last key its last row may see (bottom-right diagonal);
 * 0 when even that row sees no key. */
template <bool SKIP>
__device__ __forceinline__ int visited_blocks(const attn_problem_t &p, int i0, int Br, int Bc, int Tc)
{
    if (!SKIP || !p.causal) return Tc;
    const long last_key = (long)min(p.N_q, i0 + Br) - 1 + (p.N_kv - p.N_q);
    return last_key < 0 ? 0 : (int)min((long)Tc, last_key / Bc + 1);
}

/* The K/V blocks tile i visits: visited_blocks, or all Tc when the visit counters' test asks
 * for every block (visit_all) */
template <bool SKIP>
__device__ __forceinline__ int blocks_to_visit(const WgArgs &args, int i0, int Br, int Bc, int Tc)
{
    return visit_all(args.vis) ? Tc : visited_blocks<SKIP>(args.p, i0, Br, Bc, Tc);
}

/* The next K/V block a Q block visits after j: j + 1, or with a mask the next whose tile is
 * not fully masked, looked for in [first, end) alone (mask_q_range), Tc after the last. The
 * producer and the consumers both call it, on the same class bytes: they walk the same
 * blocks. */
template <bool MASKED>
__device__ __forceinline__ int next_kv_block(const uint8_t *tile_class, int j, int Tc, int first = 0, int end = 0)
{
    j++;
    if constexpr (MASKED) {
        if (j < first) j = first;
        while (j < end && tile_class[j] == MASK_TILE_FULLY_MASKED) j++;
        if (j >= end) j = Tc;
    }
    return j;
}
