/* bwd_mma.cu - FlashAttention-2's backward (Alg. 2) on the tensor cores (common/mma.cuh).
 *
 *   mma       grid (Tc, B x H_kv): a thread block per K/V block j of Bc keys and KV head;
 *             Bc / 16 warps, each OWNS 16 keys: their dK_j, dV_j rows stay in its
 *             registers for the whole loop over the Q blocks i (and over the G query
 *             heads of the KV head: GQA's sum happens on chip). Per step Q_i, dO_i, L_i,
 *             D_i stream in (cp.async, double-buffered) and dQ_i gets this block's share
 *             with fp32 atomics.                       build/phase5 --kernel mma [--causal]
 *   two-pass  deterministic: the same kernel without dQ (dK, dV only), then a Q-outer
 *             kernel for dQ that recomputes S, P, dP, dS and writes dQ_i once.
 *                                                      build/phase5 --kernel two-pass
 *   noskip    mma with every Q block visited and masked (what the causal skip buys).
 *   mma + a FlashMask mask (chapter 4c; MASKED below): the Q blocks each K/V block visits
 *             are those whose tile is not fully masked, from the preprocessing pass's
 *             min/max; partial tiles test each element.
 *                                                      build/phase5 --kernel mma --mask sliding:1024
 *
 * Why the warps own keys. The step computes S^T = K_j Q_i^T rather than S: a warp's
 * accumulators are then 16 keys x Br queries, and the mma's C layout is exactly the A
 * layout of the next product (mma.cuh), so P^T and dS^T feed dV += P^T dO_i and
 * dK += dS^T Q_i straight from registers, as P feeds P V in the forward. Only dQ_i = dS K_j
 * needs dS the other way round: dS^T goes to shared memory once and is read back
 * transposed by ldmatrix (load_a_trans).
 *
 *   one step (i, query head h), warp w's 16 keys:
 *     S^T  = K_j[w] Q_i^T        16 x Br     A: K_j (smem)     B: Q_i (smem, "nk")
 *     P^T  = 2^(S^T sl2 - L_i log2 e)         L_i per COLUMN now (one per query)
 *     dP^T = V_j[w] dO_i^T       16 x Br     A: V_j (smem)     B: dO_i (smem, "nk")
 *     dS^T = P^T (dP^T - D_i)
 *     dV[w] += P^T dO_i          16 x d      A: P^T (regs)     B: dO_i (smem, ".trans")
 *     dK[w] += dS^T Q_i          16 x d      A: dS^T (regs)    B: Q_i (smem, ".trans")
 *     dS^T -> smem; barrier; dQ_i += dS K_j, Br x d over all warps; red.global.add
 */
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include "cuda_check.cuh"
#include "mma.cuh"
#include "bwd.h"
#include "bwd_gpu.cuh"
#include "visits.cuh"
#include "mask_gpu.h"

/* D: head dimension; BR: query rows a step; BC: keys of the block, 16 a warp. */
template <int D, int BR, int BC>
struct Cfg {
    static constexpr int WARPS = BC / 16, THREADS = 32 * WARPS;
    static constexpr int LDH = D + 8;    /* +16 bytes a row: the 8 rows of an ldmatrix tile
                                            start in different banks */
    static constexpr int LDS = BR + 8;   /* dS^T rows (keys x queries)                    */
    static constexpr size_t K_OFF = 0;
    static constexpr size_t V_OFF = K_OFF + sizeof(__half) * BC * LDH;
    static constexpr size_t Q_OFF = V_OFF + sizeof(__half) * BC * LDH;      /* 2 stages */
    static constexpr size_t DO_OFF = Q_OFF + 2 * sizeof(__half) * BR * LDH; /* 2 stages */
    static constexpr size_t L_OFF = DO_OFF + 2 * sizeof(__half) * BR * LDH; /* L, D: 2 stages */
    static constexpr size_t DS_OFF = L_OFF + 4 * sizeof(float) * BR;
    static constexpr size_t SMEM = DS_OFF + sizeof(__half) * BC * LDS;
    /* dQ_i = dS K_j (Br x d) over the warps: WM along the rows, WD along d */
    static constexpr int WM = BR / 16, WD = WARPS / WM, NT = D / 8 / WD;
};

/* acc (the warp's 16 rows x N columns, N/8 n-tiles) += A B^T over k = 0 .. D-1: A is the
 * warp's 16 rows at `a` (row-major, e.g. K_j's keys), B is stored N x D at `b` (rows = the
 * columns of acc, e.g. Q_i). S^T = K_j Q_i^T and dP^T = V_j dO_i^T are both this. */
template <int D, int N, int LDH>
__device__ __forceinline__ void mma_rows_bt(float (&acc)[N / 8][4], const __half *a, const __half *b)
{
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        uint32_t af[4];
        load_a_16x16(af, a + kk * 16, LDH);
#pragma unroll
        for (int n2 = 0; n2 < N / 16; n2++) {
            uint32_t bf[4];
            load_b_nk(bf, b + n2 * 16 * LDH + kk * 16, LDH);
            mma_16816(acc[2 * n2], af, bf);
            mma_16816(acc[2 * n2 + 1], af, bf + 2);
        }
    }
}

/* The kernel's steps below, each a small function named for its line of Alg. 2. They take
 * the problem by value, as the kernel does: the compiler may then read its fields ahead of a
 * branch, which through a reference it may not (the code it generates would change). */

/* The tiles of a step in shared memory (Cfg's layout): K_j, V_j for the whole loop, Q_i, dO_i,
 * L_i, D_i in two cp.async stages, dS^T for dQ. */
template <int D, int BR, int BC>
struct MmaTiles {
    using C = Cfg<D, BR, BC>;
    __half *Ks, *Vs, *Qs, *dOs, *dSs;
    float *Ls, *Ds;
    __device__ __forceinline__ explicit MmaTiles(unsigned char *smem)
        : Ks((__half *)(smem + C::K_OFF)), Vs((__half *)(smem + C::V_OFF)), Qs((__half *)(smem + C::Q_OFF)),
          dOs((__half *)(smem + C::DO_OFF)), dSs((__half *)(smem + C::DS_OFF)), Ls((float *)(smem + C::L_OFF)),
          Ds(Ls + 2 * BR) {}
    __device__ __forceinline__ const __half *Q(int stage) const { return Qs + stage * BR * C::LDH; }
    __device__ __forceinline__ const __half *dO(int stage) const { return dOs + stage * BR * C::LDH; }
    __device__ __forceinline__ const float *L(int stage) const { return Ls + stage * BR; }
    __device__ __forceinline__ const float *Dv(int stage) const { return Ds + stage * BR; }
    /* Q_i, dO_i, L_i, D_i of step st into a stage (Alg. 2 l.9) */
    __device__ __forceinline__ void load_step(const bwd_steps_t &s, int st, int stage, const __half *Qg,
                                              const __half *dOg, const float *Lg, const float *Dg) const
    {
        bwd_load_step<D, C::LDH, BR, C::THREADS>(s, st, Qs + stage * BR * C::LDH, dOs + stage * BR * C::LDH,
                                                 Ls + stage * BR, Ds + stage * BR, Qg, dOg, Lg, Dg);
    }
};

/* Alg. 2 l.5-6: the Q blocks K/V block j visits, for each of the G query heads: the causal
 * range (SKIP: from its first Q block), or with a FlashMask mask (MASKED) the list of tiles
 * not fully masked, which warp 0 writes past the tiles (list_at: its length, then the list),
 * and mrun, the two runs of the thread's keys key0, key0 + 8 (the same at every step). */
template <int BR, int BC, bool SKIP, bool MASKED>
__device__ __forceinline__ bwd_steps_t mma_schedule(const attn_problem_t p, unsigned char *list_at,
                                                    const int32_t *mcols, const int32_t *mblk, gpu_visits_t vis,
                                                    int j, int b, int kvh, int key0, int4 (&mrun)[2])
{
    if constexpr (MASKED) {
        int *n_vis = (int *)list_at;
        uint16_t *list = (uint16_t *)(list_at + 16);
        if (threadIdx.x < 32) {   /* warp 0 lists the Q blocks (a ballot per 32 of them) */
            const int n = bwd_mask_q_blocks(mblk, gridDim.x, j, p.N_q, BR, visit_all(vis), list);
            if (threadIdx.x % 32 == 0) *n_vis = n;
        }
#pragma unroll
        for (int x = 0; x < 2; x++) mrun[x] = bwd_mask_column(mcols, key0 + 8 * x, p.N_kv);
        __syncthreads();   /* the list and its length are in shared memory */
        return bwd_steps_masked(p, b, kvh, list, *n_vis);
    } else {
        return bwd_steps(p, j, b, kvh, BR, BC, SKIP && !visit_all(vis));
    }
}

/* Alg. 2 l.11: P^T = e^(scale S^T - L) in place of S^T (the warp's 16 keys x BR queries), L
 * one per query column; masked entries 0. key0: the thread's first key (j Bc + 16 warp + g).
 * With a FlashMask mask p.causal is false: `mask` is then the tails alone, and `partial` the
 * mask's element test against mrun, after the exercise's lines. */
template <int BR, bool MASKED>
__device__ __forceinline__ void recompute_p(float (&s)[BR / 8][4], const float *Li, const attn_problem_t p, int i,
                                            int key0, int t, float sl2, bool mask, bool partial, const int4 (&mrun)[2])
{
#pragma unroll
    for (int n = 0; n < BR / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int col = n * 8 + 2 * t + e % 2;   /* query row of Q_i           */
            const int key = key0 + 8 * (e / 2);
            /* TODO EXERCISE bwd.recompute_P_mma: P^T from the forward's L (Alg. 2 l.11), in registers
             * HINT: s[n][e] is the raw score of (key, query row i BR + col); Li[col] is that
             * HINT: row's L (natural log). P = e^(scale s - L) = 2^(s sl2 - L log2 e): sfu_ex2,
             * HINT: BWD_LOG2E. When mask is set, an entry whose key is past N_kv, whose row is
             * HINT: past N_q, or that the causal rule hides (attn_visible) is 0. */
            s[n][e] = 0.0f; (void)col; (void)key; (void)mask; (void)sl2;
            /* END EXERCISE bwd.recompute_P_mma */
            /* FlashMask's element test (partial tiles only): row i BR + col in one of key's
             * two runs. A row that sees no key has L = +inf: P = 2^-inf = 0 already. */
            if (MASKED && partial && !mask_row_visible(mrun[e / 2].x, mrun[e / 2].y, mrun[e / 2].z, mrun[e / 2].w,
                                                       i * BR + col))
                s[n][e] = 0.0f;
        }
}

/* Alg. 2 l.14: dS^T = P^T * (dP^T - D) in place of dP^T, D one per query column */
template <int BR>
__device__ __forceinline__ void ds_from_dp(const float (&s)[BR / 8][4], float (&dp)[BR / 8][4], const float *Di, int t)
{
#pragma unroll
    for (int n = 0; n < BR / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            /* TODO EXERCISE bwd.dS_mma: dS^T = P^T (dP^T - D_i), elementwise in registers (Alg. 2 l.14)
             * HINT: s[n][e] holds P^T, dp[n][e] dP^T of the same (key, query) entry; the query
             * HINT: is column n * 8 + 2 t + e % 2 of Q_i, and Di[] holds D of every row of Q_i.
             * HINT: Leave dS^T in dp[n][e]. */
            dp[n][e] = 0.0f;
            /* END EXERCISE bwd.dS_mma */
        }
}

/* Alg. 2 l.13 and l.16: dV_j += P^T dO_i, dK_j += dS^T Q_i; P^T and dS^T are the A fragments
 * of their k16 slices of queries as they are (mma.cuh). DQ: dS^T also to shared memory (its
 * rows: the warp's 16 keys; fp16, as the mma takes it) for dQ. */
template <int D, int BR, int LDH, int LDS, bool DQ>
__device__ __forceinline__ void accum_dkdv(float (&dv)[D / 8][4], float (&dk)[D / 8][4], const float (&s)[BR / 8][4],
                                           const float (&dp)[BR / 8][4], const __half *dOi, const __half *Qi,
                                           __half *dSs, int warp, int g, int t)
{
#pragma unroll
    for (int kk = 0; kk < BR / 16; kk++) {
        uint32_t ap[4], as[4];
        c_pair_to_a(ap, s[2 * kk], s[2 * kk + 1]);
        c_pair_to_a(as, dp[2 * kk], dp[2 * kk + 1]);
        mma_a_bkn<D / 8, LDH>(dv, ap, dOi + kk * 16 * LDH);
        mma_a_bkn<D / 8, LDH>(dk, as, Qi + kk * 16 * LDH);
        if constexpr (DQ) {
            __half2 *lo = (__half2 *)(dSs + (warp * 16 + g) * LDS + kk * 16 + 2 * t);
            __half2 *hi = (__half2 *)(dSs + (warp * 16 + g + 8) * LDS + kk * 16 + 2 * t);
            *(uint32_t *)lo = as[0];         /* (key g,     queries 2t, 2t+1)     */
            *(uint32_t *)hi = as[1];         /* (key g + 8, ...)                  */
            *(uint32_t *)(lo + 4) = as[2];   /* (key g,     queries 8+2t, 8+2t+1) */
            *(uint32_t *)(hi + 4) = as[3];
        }
    }
}

/* Alg. 2 l.15, the product: q = (dS K_j) for warp (mt, dn)'s tile of dQ_i, rows mt 16 .. and
 * NT n-tiles of d from dn NT 8, dS read transposed from dS^T in shared memory */
template <class C, int BC>
__device__ __forceinline__ void dq_product(float (&q)[C::NT][4], const __half *dSs, const __half *Ks, int mt, int dn)
{
#pragma unroll
    for (int n = 0; n < C::NT; n++) q[n][0] = q[n][1] = q[n][2] = q[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < BC / 16; kk++) {
        uint32_t a[4];
        load_a_trans(a, dSs + kk * 16 * C::LDS + mt * 16, C::LDS);
        mma_a_bkn<C::NT, C::LDH>(q, a, Ks + kk * 16 * C::LDH + dn * C::NT * 8);
    }
}

/* Alg. 2 l.15, the add: dQ_i += scale q in HBM (dQi: row 0 of Q block i, column 0), the rows
 * of the thread past N_q left out */
template <int D, int BR, int NT>
__device__ __forceinline__ void add_dq_share(float *dQi, const float (&q)[NT][4], const attn_problem_t p, int i,
                                             int mt, int dn, int g, int t)
{
#pragma unroll
    for (int x = 0; x < 2; x++) {
        const int row = mt * 16 + g + 8 * x;
        if (i * BR + row >= p.N_q) continue;
        float *dq = dQi + (size_t)row * D + dn * NT * 8 + 2 * t;
#pragma unroll
        for (int n = 0; n < NT; n++) {
            /* TODO EXERCISE bwd.dQ_mma: add this K/V block's share of dQ_i to HBM (Alg. 2 l.15)
             * HINT: q[n][2x], q[n][2x + 1] are (dS K_j) at this row, columns n * 8 + 2 t and
             * HINT: + 1 from dq; other thread blocks (the other K/V blocks) add to the same
             * HINT: elements at the same time, so a plain store loses their work: atomicAdd.
             * HINT: dQ = scale dS K. */
            (void)dq;
            /* END EXERCISE bwd.dQ_mma */
        }
    }
}

/* Alg. 2 l.18: dK_j = scale dS^T Q, dV_j of the thread's keys key0, key0 + 8 written once
 * (keys past N_kv not written) */
template <int D>
__device__ __forceinline__ void store_dkdv_rows(float *dKg, float *dVg, const float (&dk)[D / 8][4],
                                                const float (&dv)[D / 8][4], const attn_problem_t p, size_t kv_off,
                                                int key0, int t)
{
#pragma unroll
    for (int x = 0; x < 2; x++) {
        const int key = key0 + 8 * x;
        if (key >= p.N_kv) continue;
        float *dK = dKg + kv_off + (size_t)key * D + 2 * t, *dV = dVg + kv_off + (size_t)key * D + 2 * t;
#pragma unroll
        for (int n = 0; n < D / 8; n++) {
            *(float2 *)(dK + n * 8) = make_float2(dk[n][2 * x] * p.scale, dk[n][2 * x + 1] * p.scale);
            *(float2 *)(dV + n * 8) = make_float2(dv[n][2 * x], dv[n][2 * x + 1]);
        }
    }
}

/* DQ: compute dQ (the atomic pass) or not (pass 1 of two). SKIP: start at the causal
 * range's first Q block and mask only the blocks that need it.
 * MASKED: a FlashMask mask (common/mask.h) instead of the causal rule, FlashMask Sec. 4 from
 * the K/V block's side: mblk the 8 per-block min/max values of the preprocessing pass at
 * this Bc (mask_gpu_blocks), mcols the four vectors a column at a time (int4). The Q blocks
 * whose tile (i, j) is not fully masked are listed in shared memory past the tiles
 * (bwd_mask_q_blocks, bwd_gpu.cuh) and visited (Q_i, dO_i of the others never loaded);
 * partial tiles test each element against its column's two runs, unmasked ones do no mask
 * work. The thread's two keys are the same at every step (S^T's rows), so their columns'
 * runs are loaded once, into registers. */
template <int D, int BR, int BC, bool DQ, bool SKIP, bool MASKED>
__global__ void __launch_bounds__(Cfg<D, BR, BC>::THREADS, 1)
bwd_mma_kernel(attn_problem_t p, const __half *Qg, const __half *Kg, const __half *Vg, const __half *dOg,
               const float *Lg, const float *Dg, float *dQg, float *dKg, float *dVg, gpu_visits_t vis,
               const int32_t *mcols, const int32_t *mblk)
{
    using C = Cfg<D, BR, BC>;
    constexpr int LDH = C::LDH, THREADS = C::THREADS;
    extern __shared__ __align__(16) unsigned char smem[];
    const MmaTiles<D, BR, BC> tile(smem);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const auto [j, b, kvh, j0, kv_off] = bwd_kv_block(p, BC, D);
    const int key0 = j0 + warp * 16 + g;   /* the thread's keys: key0, key0 + 8 */
    const float sl2 = p.scale * BWD_LOG2E;

    int4 mrun[2];   /* MASKED: the two runs of the thread's keys */
    const bwd_steps_t sched = mma_schedule<BR, BC, SKIP, MASKED>(p, smem + C::SMEM, mcols, mblk, vis, j, b, kvh, key0, mrun);
    const int steps = sched.count;
    if (threadIdx.x == 0) visit_count(vis, j, steps);   /* the driver holds it to bwd_visits_want() */

    /* Alg. 2 l.6: K_j, V_j into shared memory (rows past N_kv zero), and the first step */
    cp_async_tile<D, LDH, THREADS>(tile.Ks, Kg + kv_off + (size_t)j0 * D, BC, p.N_kv - j0);
    cp_async_tile<D, LDH, THREADS>(tile.Vs, Vg + kv_off + (size_t)j0 * D, BC, p.N_kv - j0);
    if (steps > 0) tile.load_step(sched, 0, 0, Qg, dOg, Lg, Dg);
    cp_async_commit();

    float dk[D / 8][4], dv[D / 8][4];   /* l.7: dK_j, dV_j of the warp's 16 keys, on chip */
#pragma unroll
    for (int n = 0; n < D / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) dk[n][e] = dv[n][e] = 0.0f;

    const __half *Kw = tile.Ks + warp * 16 * LDH, *Vw = tile.Vs + warp * 16 * LDH;
    for (int st = 0; st < steps; st++) {                                      /* l.8 */
        const int stage = st % 2;
        int i; size_t l_off;
        sched.at(st, BR, i, l_off);
        cp_async_wait<0>();
        __syncthreads();   /* this step's tiles landed and are visible; every warp is done
                              with the other stage and with dS^T of the last step */
        if (st + 1 < steps) { tile.load_step(sched, st + 1, 1 - stage, Qg, dOg, Lg, Dg); cp_async_commit(); }   /* l.9 */
        const __half *Qi = tile.Q(stage), *dOi = tile.dO(stage);

        float s[BR / 8][4], dp[BR / 8][4];
#pragma unroll
        for (int n = 0; n < BR / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) s[n][e] = dp[n][e] = 0.0f;
        mma_rows_bt<D, BR, LDH>(s, Kw, Qi);                                   /* l.10: S^T = K_j Q_i^T */
        const bool mask = (!SKIP && p.causal) || bwd_block_needs_mask(p, i, j, BR, BC);
        recompute_p<BR, MASKED>(s, tile.L(stage), p, i, key0, t, sl2, mask, MASKED && sched.partial(st), mrun);   /* l.11 */
        mma_rows_bt<D, BR, LDH>(dp, Vw, dOi);                                 /* l.12: dP^T = V_j dO_i^T */
        ds_from_dp<BR>(s, dp, tile.Dv(stage), t);                             /* l.14 */
        accum_dkdv<D, BR, LDH, C::LDS, DQ>(dv, dk, s, dp, dOi, Qi, tile.dSs, warp, g, t);   /* l.13, 16 */
        if constexpr (DQ) {
            __syncthreads();   /* every warp's dS^T rows are in shared memory */
            const int mt = warp % C::WM, dn = warp / C::WM;   /* the warp's tile of dQ_i (Cfg) */
            float q[C::NT][4];
            dq_product<C, BC>(q, tile.dSs, tile.Ks, mt, dn);                  /* l.15 */
            add_dq_share<D, BR, C::NT>(dQg + l_off * D, q, p, i, mt, dn, g, t);
        }
    }
    store_dkdv_rows<D>(dKg, dVg, dk, dv, p, kv_off, key0, t);                 /* l.18 */
}

/* Pass 2 of the deterministic variant: dQ with the Q blocks outer, as the forward's loop.
 * Grid (Tr, B x H); 4 warps of 16 rows; K_j, V_j double-buffered. A warp's S, P, dP, dS are
 * 16 rows x BC keys in registers; dS feeds dQ_i += dS K_j as the A operand directly; dQ_i
 * is written once, so no atomics and no order to depend on. */
template <int D>
struct DqCfg {
    static constexpr int BR = BWD_DQ_BR, BC = BWD_DQ_BC, THREADS = 128, LDH = D + 8;
    static constexpr size_t Q_OFF = 0;
    static constexpr size_t DO_OFF = Q_OFF + sizeof(__half) * BR * LDH;
    static constexpr size_t K_OFF = DO_OFF + sizeof(__half) * BR * LDH;   /* 2 stages */
    static constexpr size_t V_OFF = K_OFF + 2 * sizeof(__half) * BC * LDH; /* 2 stages */
    static constexpr size_t SMEM = V_OFF + 2 * sizeof(__half) * BC * LDH;
};
static_assert(BWD_DQ_BR == 16 * 4, "the dQ kernel: 4 warps of 16 rows");

template <int D>
__global__ void __launch_bounds__(128, 2)
bwd_dq_kernel(attn_problem_t p, const __half *Qg, const __half *Kg, const __half *Vg, const __half *dOg,
              const float *Lg, const float *Dg, float *dQg, gpu_visits_t vis)
{
    using C = DqCfg<D>;
    constexpr int LDH = C::LDH, BR = C::BR, BC = C::BC;
    extern __shared__ __align__(16) unsigned char smem[];
    __half *Qs = (__half *)(smem + C::Q_OFF), *dOs = (__half *)(smem + C::DO_OFF);
    __half *Ks = (__half *)(smem + C::K_OFF), *Vs = (__half *)(smem + C::V_OFF);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
    const int Tr = (p.N_q + BR - 1) / BR;
    const int i = p.causal ? Tr - 1 - (int)blockIdx.x : (int)blockIdx.x;   /* long rows first */
    const int b = blockIdx.y / p.H, h = blockIdx.y % p.H, i0 = i * BR, shift = p.N_kv - p.N_q;
    const size_t q_off = (((size_t)b * p.H + h) * p.N_q + i0) * D;
    const size_t l_off = ((size_t)b * p.H + h) * p.N_q + i0;
    const __half *K = Kg + attn_kv_offset(&p, b, h), *V = Vg + attn_kv_offset(&p, b, h);
    const float sl2 = p.scale * BWD_LOG2E;
    /* the K/V blocks the block's last row sees (all without a mask) */
    const long seen = p.causal ? (long)i0 + BR - 1 + shift + 1 : p.N_kv;
    const long keys = seen < p.N_kv ? seen : p.N_kv;
    const int n_blocks = visit_all(vis) ? (p.N_kv + BC - 1) / BC : keys > 0 ? (int)((keys + BC - 1) / BC) : 0;
    if (threadIdx.x == 0) visit_count(vis, i, n_blocks);   /* the driver holds it to fa2_kv_blocks() */

    cp_async_tile<D, LDH, 128>(Qs, Qg + q_off, BR, p.N_q - i0);
    cp_async_tile<D, LDH, 128>(dOs, dOg + q_off, BR, p.N_q - i0);
    if (n_blocks > 0) {
        cp_async_tile<D, LDH, 128>(Ks, K, BC, p.N_kv);
        cp_async_tile<D, LDH, 128>(Vs, V, BC, p.N_kv);
    }
    cp_async_commit();
    float Lr[2], Dr[2];   /* rows g and g + 8 of the warp: L log2 e (+inf past N_q), D */
#pragma unroll
    for (int x = 0; x < 2; x++) {
        const int row = i0 + warp * 16 + g + 8 * x;
        Lr[x] = row < p.N_q ? Lg[l_off + warp * 16 + g + 8 * x] * BWD_LOG2E : INFINITY;
        Dr[x] = row < p.N_q ? Dg[l_off + warp * 16 + g + 8 * x] : 0.0f;
    }
    float dq[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; n++) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.0f;
    const __half *Qw = Qs + warp * 16 * LDH, *dOw = dOs + warp * 16 * LDH;

    for (int jb = 0; jb < n_blocks; jb++) {
        const int stg = jb % 2;
        cp_async_wait<0>();
        __syncthreads();
        if (jb + 1 < n_blocks) {
            cp_async_tile<D, LDH, 128>(Ks + (1 - stg) * BC * LDH, K + (size_t)(jb + 1) * BC * D, BC, p.N_kv - (jb + 1) * BC);
            cp_async_tile<D, LDH, 128>(Vs + (1 - stg) * BC * LDH, V + (size_t)(jb + 1) * BC * D, BC, p.N_kv - (jb + 1) * BC);
            cp_async_commit();
        }
        const __half *Kj = Ks + stg * BC * LDH, *Vj = Vs + stg * BC * LDH;
        float s[BC / 8][4], dp[BC / 8][4];
#pragma unroll
        for (int n = 0; n < BC / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) s[n][e] = dp[n][e] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {   /* S = Q_i K_j^T and dP = dO_i V_j^T */
            uint32_t aq[4], ad[4];
            load_a_16x16(aq, Qw + kk * 16, LDH);
            load_a_16x16(ad, dOw + kk * 16, LDH);
#pragma unroll
            for (int n2 = 0; n2 < BC / 16; n2++) {
                uint32_t bf[4];
                load_b_nk(bf, Kj + n2 * 16 * LDH + kk * 16, LDH);
                mma_16816(s[2 * n2], aq, bf);
                mma_16816(s[2 * n2 + 1], aq, bf + 2);
                load_b_nk(bf, Vj + n2 * 16 * LDH + kk * 16, LDH);
                mma_16816(dp[2 * n2], ad, bf);
                mma_16816(dp[2 * n2 + 1], ad, bf + 2);
            }
        }
        const long last_key = (long)(jb + 1) * BC - 1;
        const bool mask = last_key >= p.N_kv || (p.causal && last_key > (long)i0 + shift);
#pragma unroll
        for (int n = 0; n < BC / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int x = e / 2, row = i0 + warp * 16 + g + 8 * x, key = jb * BC + n * 8 + 2 * t + e % 2;
                float pe = sfu_ex2(fmaf(s[n][e], sl2, -Lr[x]));
                if (mask && (key >= p.N_kv || !attn_visible(&p, row, key))) pe = 0.0f;
                dp[n][e] = pe * (dp[n][e] - Dr[x]);   /* dS */
            }
#pragma unroll
        for (int kk = 0; kk < BC / 16; kk++) {   /* dQ_i += dS K_j: dS is the A operand as it is */
            uint32_t a[4];
            c_pair_to_a(a, dp[2 * kk], dp[2 * kk + 1]);
            mma_a_bkn<D / 8, LDH>(dq, a, Kj + kk * 16 * LDH);
        }
    }
#pragma unroll
    for (int x = 0; x < 2; x++) {
        const int row = warp * 16 + g + 8 * x;
        if (i0 + row >= p.N_q) continue;
        float *out = dQg + q_off + (size_t)row * D + 2 * t;
#pragma unroll
        for (int n = 0; n < D / 8; n++)
            *(float2 *)(out + n * 8) = make_float2(dq[n][2 * x] * p.scale, dq[n][2 * x + 1] * p.scale);
    }
}

/* What must hold for every row of BWD_MMA_TABLE (bwd_blocks.h). The kernel needs more than
 * sm_86/89's 99 KiB at d = 128; bwd_mma_config() asks the device and says "skipped". */
#define BWD_ASSERT_ROW(D_, BR_, BC_)                                                               \
    static_assert((D_) % 16 == 0 && (BR_) % 16 == 0 && (BC_) % 16 == 0, "bwd-mma: whole k16 slices"); \
    static_assert(Cfg<D_, BR_, BC_>::WARPS % Cfg<D_, BR_, BC_>::WM == 0 &&                          \
                  (D_) / 8 % Cfg<D_, BR_, BC_>::WD == 0 && Cfg<D_, BR_, BC_>::NT % 2 == 0,          \
                  "bwd-mma: dQ's Br x d tile must split evenly over the warps");                    \
    static_assert(Cfg<D_, BR_, BC_>::SMEM + 16 + 2 * BWD_MASK_MAX_TR <= SMEM_OPTIN_SM90,                \
                  "bwd-mma: shared memory (and a mask's Q-block list) above 227 KiB");                \
    static_assert(DqCfg<D_>::SMEM <= Cfg<D_, BR_, BC_>::SMEM, "bwd-dq: more shared memory than the main kernel (bwd_mma_config checks that one)");
BWD_MMA_TABLE(BWD_ASSERT_ROW)
#undef BWD_ASSERT_ROW

template <typename F>
static void set_smem(F *kernel, size_t bytes, bool &done)
{
    if (!done) {
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
        done = true;
    }
}

/* MASKED: the Q-block list's shared memory past the tiles (its length, then a uint16_t a Q
 * block), for Tr Q blocks; at most BWD_MASK_MAX_TR (bwd.h) */
static size_t mask_list_bytes(int Tr) { return 16 + ((2 * (size_t)Tr + 15) & ~(size_t)15); }

template <int D, int BR, int BC>
static void launch(const attn_problem_t *p, bwd_variant_t v, const bwd_gpu_args_t *a)
{
    using C = Cfg<D, BR, BC>;
    const __half *Q = (const __half *)a->Q, *K = (const __half *)a->K, *V = (const __half *)a->V,
                 *dO = (const __half *)a->dO;
    const dim3 grid((p->N_kv + BC - 1) / BC, p->B * p->H_kv);
    const dim3 g2((p->N_q + BWD_DQ_BR - 1) / BWD_DQ_BR, p->B * p->H);   /* two-pass: the dQ kernel */
    /* counters: the K/V blocks of the main kernel, then (two-pass) the dQ kernel's Q blocks */
    const gpu_visits_t vis = gpu_visits(grid.x + (v == BWD_TWO_PASS ? g2.x : 0));
    bwd_preprocess_launch(p, a, v != BWD_TWO_PASS);
    if (v == BWD_TWO_PASS) {
        static bool s1 = false, s2 = false;
        set_smem(bwd_mma_kernel<D, BR, BC, false, true, false>, C::SMEM, s1);
        bwd_mma_kernel<D, BR, BC, false, true, false><<<grid, C::THREADS, C::SMEM>>>(*p, Q, K, V, dO, a->L, a->D, a->dQ, a->dK,
                                                                                    a->dV, vis, nullptr, nullptr);
        CUDA_CHECK_LAUNCH();
        set_smem(bwd_dq_kernel<D>, DqCfg<D>::SMEM, s2);
        gpu_visits_t vis_dq = vis;
        if (vis_dq.counts) vis_dq.counts += grid.x;
        bwd_dq_kernel<D><<<g2, 128, DqCfg<D>::SMEM>>>(*p, Q, K, V, dO, a->L, a->D, a->dQ, vis_dq);
        CUDA_CHECK_LAUNCH();
    } else if (v == BWD_NOSKIP) {
        static bool s = false;
        set_smem(bwd_mma_kernel<D, BR, BC, true, false, false>, C::SMEM, s);
        bwd_mma_kernel<D, BR, BC, true, false, false><<<grid, C::THREADS, C::SMEM>>>(*p, Q, K, V, dO, a->L, a->D, a->dQ, a->dK,
                                                                                    a->dV, vis, nullptr, nullptr);
        CUDA_CHECK_LAUNCH();
    } else if (attn_mask(p)) {   /* FlashMask: the one variant with a mask path (the driver refuses the others) */
        static bool s = false;
        set_smem(bwd_mma_kernel<D, BR, BC, true, true, true>, C::SMEM + mask_list_bytes(BWD_MASK_MAX_TR), s);
        /* the vectors (an input, uploaded once) and this launch's preprocessing pass at this Bc */
        const int32_t *blk = mask_gpu_blocks(mask_gpu_runs(attn_mask(p)), p->N_kv, BC);
        const int32_t *cols = mask_gpu_columns(attn_mask(p));
        const size_t smem = C::SMEM + mask_list_bytes((p->N_q + BR - 1) / BR);
        bwd_mma_kernel<D, BR, BC, true, true, true><<<grid, C::THREADS, smem>>>(*p, Q, K, V, dO, a->L, a->D, a->dQ, a->dK,
                                                                                a->dV, vis, cols, blk);
        CUDA_CHECK_LAUNCH();
    } else {
        static bool s = false;
        set_smem(bwd_mma_kernel<D, BR, BC, true, true, false>, C::SMEM, s);
        bwd_mma_kernel<D, BR, BC, true, true, false><<<grid, C::THREADS, C::SMEM>>>(*p, Q, K, V, dO, a->L, a->D, a->dQ, a->dK,
                                                                                   a->dV, vis, nullptr, nullptr);
        CUDA_CHECK_LAUNCH();
    }
}

extern "C" int bwd_mma_config(int d, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = "mma";
    switch (d) {
#define BWD_CONFIG_ROW(D_, BR_, BC_)                                          \
    case D_:                                                                  \
        c->blocks.Br = BR_; c->blocks.Bc = BC_;                               \
        c->threads = Cfg<D_, BR_, BC_>::THREADS;                              \
        c->smem_bytes = Cfg<D_, BR_, BC_>::SMEM;                              \
        break;
    BWD_MMA_TABLE(BWD_CONFIG_ROW)
#undef BWD_CONFIG_ROW
    default:
        snprintf(why, len, "kernel mma is built for d = 32, 64 and 128 (bwd_blocks.h), not d = %d (use --kernel simple)", d);
        return -1;
    }
    return gpu_config_fits(c, 0, why, len);
}

extern "C" void bwd_mma_launch(const attn_problem_t *p, bwd_variant_t v, const bwd_gpu_args_t *a)
{
    switch (p->d) {
#define BWD_LAUNCH_ROW(D_, BR_, BC_) case D_: launch<D_, BR_, BC_>(p, v, a); break;
    BWD_MMA_TABLE(BWD_LAUNCH_ROW)
#undef BWD_LAUNCH_ROW
    default: break;   /* bwd_mma_config() said -1 */
    }
}
