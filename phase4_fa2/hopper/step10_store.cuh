/* step 10, wgmma-store: step 8 with FlashAttention-3's and cuDNN's end of a tile: O_i goes
 * to shared memory, and the copy engine writes it out.
 *                                                  build/phase4 --kernel wgmma-store
 * What it adds to step 8: this epilogue (SmemTmaEpilogue). The stage is the consumer's own
 * Q tile, free once its last S has landed, so only the warpgroup's own named barrier
 * (bar_store(c)) is needed; rows past N_q are clipped by the copy engine. */
#pragma once
#include "step08_fa3order.cuh"

#if FA_HAVE_WGMMA
/* Alg. 1, lines 12-13 as finish_rows (epilogue.cuh), but O leaves through shared memory and the
 * copy engine: the warpgroup writes O_i (fp32) into a 128-byte-swizzled staging tile, and one
 * thread stores it with cp.async.bulk.tensor, boxes of 64 rows x 32 columns (128 bytes, the
 * swizzle's row), as FlashAttention-3's epilogue does. The stage is the warpgroup's own Q
 * tile, free once its last S = Q K^T has landed: 64 rows x D fp16 hold half of O's 64 rows x
 * D fp32, so O goes in two halves of D / 2 columns:
 *
 *   stage (Q tile):  [box 0: cols 0-31][box 1: 32-63] ...       half 0: cols 0 .. D/2 - 1
 *                    written (fence, barrier), stored, read back (wait_group.read): half 1
 *
 * A thread's float2 at (row, col) goes to row * 128 + 4 (col % 32) in its box, its 16-byte
 * chunk XOR-ed with row % 8. A float2 store is done 16 lanes at a time (g = 0..3 or 4..7,
 * t = 0..3), and if every lane stored the same 8-column block n8, those 16 lanes would reach
 * 4 chunks only (t / 2 and g's low bit flip the same chunk bit), two lanes a bank: twice the
 * wavefronts. So lanes t = 2, 3 store block n8 ^ 2 while lanes t = 0, 1 store n8 (chunk bit 2
 * then differs between them), and the 16 lanes reach all 8 chunks:
 *
 *   chunk of lane (g, t) = (2 (n8' % 4) + t / 2) ^ g,   n8' = n8 ^ 2 (t / 2)
 *   bit 0 = t/2 ^ g0,  bit 1 = n8_0 ^ g1,  bit 2 = n8_1 ^ t/2 ^ g2:  8 distinct for 16 lanes
 *
 * Both blocks sit in one 32-column box. Rows past N_q are clipped by the copy engine (the
 * tensor map stops at N_q). bar_id: a named barrier for the warpgroup's 128 threads alone. */
template <int D>
__device__ __forceinline__ void finish_rows_via_smem(const RowTile<D> &st, unsigned char *stage, const CUtensorMap *to,
                                                     float *L, int row0, int first_row, int head, const attn_problem_t &p,
                                                     int t, int bar_id)
{
    constexpr int ATOMS = D / 64, HALF = D / 2, BOX_BYTES = 64 * 128;
    const int tid = threadIdx.x % WG_THREADS, r_local = row0 - first_row;   /* 16 warp + g */
    const bool other = t >= 2;   /* this lane stores block n8 ^ 2 when the others store n8 */
    float scale_out[2];
#pragma unroll
    for (int x = 0; x < 2; x++) {
        const float l_row = row_l<D>(st, x);
        scale_out[x] = l_row > 0.0f ? 1.0f / l_row : 0.0f;
        if (t == 0 && row0 + 8 * x < p.N_q) L[row0 + 8 * x] = row_lse<D>(st, x, l_row);
    }
#pragma unroll
    for (int half = 0; half < 2; half++) {
        if (half == 1) named_bar_sync(bar_id, WG_THREADS);   /* the store of half 0 has read the stage */
#pragma unroll
        for (int a = 0; a < ATOMS; a++)
#pragma unroll
            for (int n8 = 0; n8 < 8; n8++) {
                if ((a * 64 + n8 * 8) / HALF != half) continue;   /* known at compile time (n8 ^ 2: the same box) */
                const int mine = other ? n8 ^ 2 : n8;
#pragma unroll
                for (int x = 0; x < 2; x++) {
                    const int r = r_local + 8 * x, c = (a * 64 + mine * 8 + 2 * t) % HALF;
                    const uint32_t lin = (uint32_t)((c / 32) * BOX_BYTES + r * 128 + 4 * (c % 32));
                    /* registers picked by a select, never indexed at run time (that would go to local memory) */
                    const float v0 = other ? st.o[a][4 * (n8 ^ 2) + 2 * x] : st.o[a][4 * n8 + 2 * x];
                    const float v1 = other ? st.o[a][4 * (n8 ^ 2) + 2 * x + 1] : st.o[a][4 * n8 + 2 * x + 1];
                    *reinterpret_cast<float2 *>(stage + (lin ^ ((lin >> 7 & 7) << 4))) =
                        make_float2(scale_out[x] * v0, scale_out[x] * v1);
                }
            }
        fence_proxy_async();                  /* the stores above, seen by the copy engine */
        named_bar_sync(bar_id, WG_THREADS);   /* every thread's share written */
        if (tid == 0) {
            for (int box = 0; box < HALF / 32; box++)
                tma_store_3d(to, stage + box * BOX_BYTES, half * HALF + 32 * box, first_row, head);
            bulk_commit();
            bulk_wait_read<0>();              /* the stage may be written again (and freed at the exit) */
        }
    }
}
#endif

struct SmemTmaEpilogue {
#if FA_HAVE_WGMMA
    template <int D, class Ring>
    static __device__ __forceinline__ void finish(const RowTile<D> &tile, const WsContext<Ring> &x)
    {   /* Q_i's tile is free: its last S landed (fa3_order_loop's last waits) */
        finish_rows_via_smem<D>(tile, x.ring.q_tile(x.me.c), &x.args.to, x.L, x.me.row0, x.me.first_row, x.ct.bh, x.args.p,
                                x.me.t, bar_store(x.me.c));
    }
#endif
};

template <int D>
using Step10 = Step8<D, NoTurns, SmemTmaEpilogue>;
