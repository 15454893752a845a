/* dec_split.cuh - variant split: the split kernel, Flash-Decoding's split of the KV cache;
 * the command that runs it: build/phase6 --kernel split
 *
 * What it adds (over phase 4's fa2-mma, one block per (Q block, head, batch)): the KV length
 * as the grid's third axis. Grid (S, row tiles, B x H): one block per (split, head, batch)
 * walks only its split's keys (dec_bounds.cuh) in tiles of BK = 64 keys through a ring of
 * cp.async stages (dec_kv.cuh). Its 16-row m-tile holds the head's N_q query rows; 4 warps,
 * each warp 16 keys of every tile (split-K inside the block), Q K^T and P V on the tensor
 * cores (mma.sync m16n8k16, common/mma.cuh), the online softmax in registers
 * (dec_softmax.cuh). At the end the 4 warps' (m, l, O~) are merged in shared memory and the
 * partial (O_s, L_s) written (S = 1: O and L themselves); dec_combine_kernel then merges the
 * S partials of each row (dec_combine.cuh).
 *
 * dec_split_block is one block's steps, in order, for every variant: the cache policy Kv
 * (ContigKv, or dec_paged.cuh's PagedKv) and the softmax policy Sm (OnlineSm, or
 * dec_fdpp.cuh's FdppSm) are the compile-time ones; GQA packing (a.pack), the fused
 * combine (a.done) and ragged lengths (a.seqlens) are run-time switches of the same code.
 *
 * Why the tensor cores for a problem with 1..16 query rows: decoding is memory-bound
 * (every K/V element read once is used by G x N_q rows), so the arithmetic unit matters
 * only through its instruction count. One mma.sync does 16 x 8 x 16 multiply-adds for
 * the issue cost of one instruction, and its B operand comes straight from shared
 * memory through ldmatrix with no fp16 -> fp32 conversions; padding the rows to 16 wastes
 * tensor-core work that is free here (at 3 TB/s the padded mma work of d = 128 is well
 * under a tenth of the time the bytes take). */
#ifndef PHASE6_DEC_SPLIT_CUH
#define PHASE6_DEC_SPLIT_CUH
#include "dec_cfg.cuh"
#include "dec_bounds.cuh"
#include "dec_split_pack.cuh"
#include "dec_ragged.cuh"
#include "dec_kv.cuh"
#include "dec_softmax.cuh"
#include "dec_fused.cuh"

/* A split that sees no key: O_s = 0 and Sm's empty L_s (online: -inf, the log of an empty
 * sum; S = 1: the row saw no key, L = +inf; FD++: l_s = -0); it reads no Q and no K/V. */
template <int D, class Sm>
__device__ __forceinline__ void write_empty(float *Odst, float *Ldst, int nrows, bool to_output)
{
    for (int e = threadIdx.x; e < nrows * D; e += DTHREADS) Odst[e] = 0.0f;
    for (int r = threadIdx.x; r < nrows; r += DTHREADS) Ldst[r] = Sm::empty_L(to_output);
}

/* One block: split blockIdx.x of row tile blockIdx.y of group blockIdx.z (dec_split_pack.cuh). */
template <int D, int WR, class Kv, class Sm>
__device__ __forceinline__ void dec_split_block(const DecArgs &a)
{
    using C = DCfg<D, WR>;
    constexpr int KWW = C::KWW, NT = KWW / 8, LDH = C::LDH;   /* NT: the warp's n-tiles of 8 keys */
    constexpr bool QREG = D <= 128;   /* Q's fragments in registers; at d = 256 (128 accumulators of
                                         O~ already) read from shared memory at each use, or the
                                         paged kernel spills */
    const attn_problem_t &p = a.p;
    DEC_DYNAMIC_SMEM(smem);
    __half *Qs = (__half *)(smem + C::Q_OFF);
    __half *KVs = (__half *)(smem + C::KV_OFF);   /* the ring's stages (ring_stage) */
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, g = lane / 4, t = lane % 4;
    const int wr = warp % WR, wk = warp / WR;   /* this warp's m-tile of the block, its keys of a tile */
    const int s = blockIdx.x;
    const DecRows r = block_rows<C::ROWS_B>(a);
    const int n = seq_keys(a, r.b);
    const bool to_output = a.S == 1 && !Sm::FDPP;   /* FD++ writes partials even for S = 1 */
    float *Odst = to_output ? a.O + r.row_base * D : a.Opart + ((size_t)s * r.nq_rows + r.row_base) * D;
    float *Ldst = to_output ? a.L + r.row_base : a.Lpart + (size_t)s * r.nq_rows + r.row_base;
    int k0, k1;
    split_range(a, s, n, k0, k1);
    if (k1 <= k0) {
        write_empty<D, Sm>(Odst, Ldst, r.nrows, to_output);
        if (!Sm::FDPP && !to_output && a.done) fused_tail<D>(a, r.row_base, r.nrows, r.nq_rows, (float *)(smem + C::KV_OFF));
        return;
    }

    int pid[KvRows<D>::N] = {};   /* pool pages of the next tile this thread copies (paged) */
    ring_start<D, WR, Kv>(Qs, KVs, pid, a, r, k0, k1);
    const float sl2 = p.scale * DEC_LOG2E;   /* e^(scale x) = 2^(sl2 x) */
    int lim[2];
    row_limits(lim, p, r.r0, wr, g, n);
    const int lim_min = p.causal ? n - p.N_q : n - 1;   /* the least of any row (query 0) */
    uint32_t qf[QREG ? D / 16 : 1][4];
    const __half *Qw = Qs + wr * ROWS * LDH;   /* this warp's 16 rows of Q */
    float o[D / 8][4];                         /* this warp's O~: 16 rows x D, fp32 */
    Sm sm;
    sm.init(a);
#pragma unroll
    for (int nn = 0; nn < D / 8; nn++) o[nn][0] = o[nn][1] = o[nn][2] = o[nn][3] = 0.0f;

    const int ntiles = (k1 - k0 + BK - 1) / BK;
    for (int tt = 0; tt < ntiles; tt++) {
        const int st = tt % C::STAGES, jt = k0 + tt * BK;
        ring_wait<D, WR, Kv>(KVs, pid, a, r, tt, jt, k1);
        if (QREG && tt == 0) {
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) load_a_16x16(qf[QREG ? kk : 0], Qw + kk * 16, LDH);
        }
        ring_ahead<D, WR, Kv>(KVs, pid, a, r, tt, ntiles, k0, k1);
        const int jw = jt + wk * KWW;    /* this warp's KWW keys */
        if (jw >= k1) continue;          /* warp-uniform: past the range's end */
        const __half *Kw = KVs + st * 2 * BK * LDH + wk * KWW * LDH, *Vw = Kw + BK * LDH;   /* ring_stage(st), keys wk KWW .. */
        float sc[NT][4], alpha[2];
        qk_tile<D, NT, QREG>(sc, qf, Qw, Kw);
        mask_tile<NT>(sc, jw, k1, lim, lim_min, t);
        sm.block(sc, alpha, sl2);
        sm.template rescale<D>(o, alpha);
        pv_tile<D, NT>(o, sc, Vw);
    }

    merge_warps<D, WR>(smem + C::KV_OFF, sm, o, sl2, a, Odst, Ldst, r.nrows, warp, g, t);
    if (!Sm::FDPP && !to_output && a.done) {   /* the fused combine: the K/V stages hold the warps' weights */
        __syncthreads();   /* every thread is done with the merge area */
        fused_tail<D>(a, r.row_base, r.nrows, r.nq_rows, (float *)(smem + C::KV_OFF));
    }
}

/* The split kernel: a contiguous cache, the online softmax (split, split-pack, fused, ragged). */
template <int D, int WR>
__global__ void __launch_bounds__(DTHREADS) dec_split_kernel(const DecArgs a)
{
    dec_split_block<D, WR, ContigKv, OnlineSm>(a);
}

#endif
