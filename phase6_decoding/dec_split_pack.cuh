/* dec_split_pack.cuh - variant split-pack: GQA packing, the split kernel with a.pack = 1; the
 * command that runs it: build/phase6 --kernel split-pack
 *
 * What it adds: a block's rows are the G = H / H_kv query heads that share a KV head (G x N_q
 * rows, cut into row tiles of 16, or of 64 when there are more than 16 and d <= 128: the
 * block of WR = 4 m-tiles, dec_cfg.cuh), so the cache is read once per KV head, not once
 * per query head; the grid is (S, row tiles, B x H_kv). Without packing (split) a group is
 * one head: G = 1, the grid (S, row tiles, B x H). */
#ifndef PHASE6_DEC_SPLIT_PACK_CUH
#define PHASE6_DEC_SPLIT_PACK_CUH
#include "dec_cfg.cuh"

/* The rows of one block: row tile blockIdx.y of group blockIdx.z (a (batch, head) without
 * packing, a (batch, KV head) with it). Rows r0 .. of the group are consecutive rows of Q, O
 * and L: heads h0 .. h0 + G - 1, N_q rows each (common/problem.h's layout). */
struct DecRows {
    int b, kvh;          /* the sequence and the KV head                       */
    int r0, nrows;       /* the tile's first row in its group, and its rows    */
    size_t row_base;     /* the row of Q, O and L that is the tile's row 0     */
    size_t nq_rows;      /* rows of Q, O and L: B x H x N_q                    */
};

template <int ROWS_B>
__device__ __forceinline__ DecRows block_rows(const DecArgs &a)
{
    const attn_problem_t &p = a.p;
    const int G = a.pack ? p.H / p.H_kv : 1;              /* query heads in a block's group */
    const int ngroups = a.pack ? p.H_kv : p.H;
    const int b = blockIdx.z / ngroups, grp = blockIdx.z % ngroups;
    const int h0 = grp * G;
    const int R = G * p.N_q, r0 = blockIdx.y * ROWS_B;
    DecRows r;
    r.b = b;
    r.kvh = attn_kv_head(&p, h0);
    r.r0 = r0;
    r.nrows = min(ROWS_B, R - r0);
    r.row_base = ((size_t)b * p.H + h0) * p.N_q + r0;
    r.nq_rows = (size_t)p.B * p.H * p.N_q;
    return r;
}

#endif
