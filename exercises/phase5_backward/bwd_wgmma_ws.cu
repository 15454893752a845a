/* bwd_wgmma_ws.cu - FlashAttention-3's backward structure on Hopper (chapter 5b, steps 3-4):
 * bwd_wgmma.cu's products and layouts (bwd_wgmma.cuh), fed by the copy engine and
 * specialised by warp, so that no thread of the two MMA warpgroups issues a copy, waits for
 * one or adds dQ to HBM.
 *
 *   wgmma-ws  grid (Tc, B x H_kv), 3 warpgroups (384 threads): a thread block per K/V block
 *             j of Bc = 128 keys and KV head, as wgmma. Warpgroup 0 gives its registers
 *             away (setmaxnreg 24) and holds two specialists: warp 0, the producer, loads
 *             K_j, V_j once and Q_i, dO_i (TMA boxes) with L_i, D_i (cp.async) into a ring
 *             of STAGES slots; warp 1, the dQ writer, adds each step's dQ_i tile from shared
 *             memory to HBM with one bulk reduce a row (cp.reduce.async.bulk .add.f32).
 *             Warpgroups 1, 2 (setmaxnreg 240) own keys 0-63 and 64-127 and run the five
 *             products.                    build/phase5 --kernel wgmma-ws [--causal]   (sm_90a)
 *   wgmma-det the same, with dQ_i added in a fixed order (DET: turn counters, last K/V block
 *             first; the dQ writer below): the gradients are the same bit for bit on every run.
 *                                          build/phase5 --kernel wgmma-det [--causal]  (sm_90a)
 *   wgmma-ws + a FlashMask mask (MASKED, chapter 4c): the Q blocks a K/V block visits are
 *             listed once in shared memory (the tiles not fully masked, FlashMask Sec. 4 from
 *             the K/V block's side), and the producer, the dQ writer and the MMA warpgroups
 *             all walk that one list; partial tiles test each element.
 *                                          build/phase5 --kernel wgmma-ws --mask sliding:1024
 *             wgmma-det has no mask path: its turn order (block j adds after the jl - j blocks
 *             right of it, jl = the last K/V block Q block i sees) counts on every block in
 *             [0, jl] visiting Q block i, which holds for the causal range but not for a mask
 *             that skips blocks in between (a document mask): a skipped block never takes its
 *             turn, and the blocks left of it would wait for ever. The driver refuses it.
 *
 * Who waits for whom (mbarriers: a phase completes when its arrivals are in; the u-th use
 * of a barrier waits for parity u & 1):
 *
 *   producer:  wait empty[s] -> Q_i, dO_i (TMA: bytes), L_i, D_i (cp.async: arrivals) -> full[s]
 *   MMA WGs:   wait full[s]  -> S^T, dP^T, P^T, dS^T, dV, dQ, dK       -> empty[s]
 *                 ... wait dq_empty[q] -> dQ_i tile to shared memory -> dq_full[q]
 *   dQ writer: wait dq_full[q] -> bulk reduces, read back             -> dq_empty[q]
 *
 * The producer never waits for a copy: lane 0 announces the TMA bytes (expect_tx) and every
 * lane's arrival on full[s] is made by the hardware when its cp.async copies have landed
 * (cp.async.mbarrier.arrive), so it runs up to STAGES steps ahead.
 *
 * The blocks (BWD_WGMMA_WS_TABLE, bwd_blocks.h): Bc = 128 keys, 64 a warpgroup, and
 *   d = 128: Br = 64 queries a step (bwd_wgmma.cu's block);
 *   d =  64: Br = 128 (FlashAttention-3's block at d = 64): a 64-query step at d = 64 does
 *            half a d = 128 step's work at the same fixed cost (the waits, the barrier, the
 *            dQ tile). A warpgroup's S^T, dP^T are then two 64 x 64 products each (query
 *            slices qh = 0, 1: 2 x 64 registers a thread beside dK_j, dV_j's 2 x 32), and
 *            dS^T is computed from P^T's fp16 fragments so that S^T's registers are free.
 *
 * One step of an MMA warpgroup, the tensor cores kept busy while the registers work
 * (d = 128; at d = 64, Br = 128, dV is issued as soon as P^T is in the registers, so it
 * runs under the dS^T work):
 *
 *   tensor cores: [S^T][dP^T]        [dV]  |bar|  [dQ][dK]
 *   registers:         P^T = exp(..)  dS^T  |   |       dQ tile -> shared, then wait dK
 *                      (S^T waited,   (dP^T waited)
 *                       dP^T running)
 *
 * Who computes which part of dQ_i = dS K_j (WgDqSplit, bwd_wgmma.cuh), so that the two
 * warpgroups' products need all 128 keys of dS^T, and so meet at a named barrier a step:
 *
 *   d = 128, Br = 64:   dQ_i  64 x 128          d = 64, Br = 128:   dQ_i  128 x 64
 *                       cols 0-63 | 64-127                          rows   0-63: WG 1
 *                       WG 1      | WG 2                            rows 64-127: WG 2
 *
 * dS^T is double-buffered in shared memory (a warpgroup's dQ reads both warpgroups' rows of
 * it): a warpgroup writes step st's buffer only after the named barrier of step st - 1,
 * which the other warpgroup reaches after its dQ of step st - 2 read the same buffer.
 * The dQ tile has one stage (shared memory is full): the writer hands it back (dq_empty) as
 * soon as the copy engine has read it. Each warpgroup stores its part (above) of the tile.
 * (Built with Br = 64 at d = 64, -DBWD_WGMMA_WS_D64_BR=64, each warpgroup's dQ is a partial
 * sum of all 64 columns over its own 64 keys: warpgroup 1 stores its partial, warpgroup 0
 * adds its own after a named barrier a dQ stage, 2 stages, 3 ring slots.)
 *
 * Shared memory (1024-aligned; tiles 128-byte swizzled in 64-column halves, as bwd_wgmma.cu;
 * dS^T at Br = 128 in two 64-query slices of 128 key rows):
 *   | K_j | V_j | Q_i x STAGES | dO_i x STAGES | dS^T x 2 | dQ tile x DQ_STAGES | L_i, D_i x STAGES | barriers |
 *   d = 128, Br =  64 (2 slots, 1 dQ stage):  32 + 32 + 32 + 32 + 32 + 34 + 1 KiB + 1 KiB to align = 196 KiB
 *   d =  64, Br = 128 (2 slots, 1 dQ stage):  16 + 16 + 32 + 32 + 64 + 36 + 2 KiB + 1 KiB          = 199 KiB
 */
#include <cuda.h>        /* CUtensorMap */
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include "cuda_check.cuh"
#include "mma.cuh"
#include "wgmma.cuh"
#include "bwd.h"
#include "bwd_gpu.cuh"
#include "bwd_wgmma.cuh"
#include "visits.cuh"
#include "tma_map.cuh"
#include "mask_gpu.h"

#define WS_PRODUCER_REGS 24    /* 128 x 24 + 256 x 240 = 64512 of the SM's 65536 */
#define WS_MMA_REGS 240
#define WS_BAR_DS 1            /* named barrier: both MMA warpgroups' dS^T are in shared memory */
#define WS_BAR_DQ 2            /* named barriers 2, 3 (d = 64, Br = 64): warpgroup 1's partial dQ_i is in tile stage 0, 1 */

template <int D, int BR, int BC>
struct WsBwdCfg {
    static constexpr int MMA_WGS = BC / 64, MMA_THREADS = MMA_WGS * WGB_THREADS;
    static constexpr int THREADS = WGB_THREADS + MMA_THREADS;
    /* ring slots for Q_i, dO_i, L_i, D_i, and dQ tile stages: as many as 227 KiB allow (a
     * d = 64 step is half as long, so its copies need more of a head start) */
    using DQ = WgDqSplit<D, BC, BR>;
    static constexpr int QH = BR / 64;   /* 64-query slices of a step: S^T, dP^T as QH n64 products */
    static constexpr int STAGES = (D <= 64 && BR == 64) ? 3 : 2, DQ_STAGES = DQ::BY_KEYS ? 2 : 1;
    static constexpr size_t KV_TILE = (size_t)BC * D * 2, Q_TILE = (size_t)BR * D * 2, DS_TILE = (size_t)BC * BR * 2;
    static constexpr size_t K_OFF = 0, V_OFF = KV_TILE, Q_OFF = 2 * KV_TILE;
    static constexpr size_t DO_OFF = Q_OFF + STAGES * Q_TILE;
    static constexpr size_t DS_OFF = DO_OFF + STAGES * Q_TILE;          /* 2 buffers         */
    static constexpr size_t DQ_OFF = DS_OFF + 2 * DS_TILE;              /* one tile a stage  */
    static constexpr size_t LD_OFF = DQ_OFF + DQ_STAGES * DQ::TILE;     /* L, D: STAGES each */
    static constexpr size_t BAR_OFF = LD_OFF + 2 * STAGES * BR * sizeof(float);
    static constexpr int BARS = 1 + 2 * STAGES + 2 * DQ_STAGES;   /* kv_full, full[], empty[], dq_full[], dq_empty[] */
    static constexpr size_t SMEM = BAR_OFF + 8 * BARS + 1024;   /* + room to align */
    /* MASKED: past the barriers, the Q-block list's length and the list (mask_list_bytes more) */
    static constexpr size_t MASK_OFF = (BAR_OFF + 8 * BARS + 15) / 16 * 16;
    static_assert((BR == 64 || (BR == 128 && D == 64)) && BC == 128 && D % 64 == 0,
                  "wgmma-ws bwd: Br = 64 (bwd_wgmma.cu's blocks), or 128 at d = 64 (FA3's)");
    static_assert(DQ_OFF % 1024 == 0 && BAR_OFF % 8 == 0, "wgmma-ws bwd: aligned regions");
};

/* What a launch needs, by value (the tensor maps must live in parameter space): Q, dO as
 * [B H][N_q][d], K, V as [B H_kv][N_kv][d], boxes of 64 rows x 64 columns. */
struct WsBwdArgs {
    attn_problem_t p;
    CUtensorMap tq, tdo, tk, tv;
    const float *L, *D;
    float *dQ, *dK, *dV;
    gpu_visits_t vis;
    int *dq_turn;   /* DET: per query head and Q block, how many K/V blocks have added their dQ_i */
    const int32_t *mcols, *mblk;   /* MASKED: the mask's columns (int4 each) and the 8 per-block min/max */
};

/* MASKED: the shared memory past the barriers: the list's length (16 bytes), a uint16_t per Q
 * block, and 16 bytes for the barriers' end rounded up to 16 (MASK_OFF) */
static size_t mask_list_bytes(int Tr) { return 32 + ((2 * (size_t)Tr + 15) & ~(size_t)15); }

template <int D, int BR, int BC, bool DET, bool MASKED>
__global__ void __launch_bounds__(WsBwdCfg<D, BR, BC>::THREADS, 1)
bwd_wgmma_ws_kernel(const __grid_constant__ WsBwdArgs args)
{
    static_assert(!(DET && MASKED), "wgmma-det has no mask path (its turn order; the head comment)");
#if FA_HAVE_WGMMA
    using C = WsBwdCfg<D, BR, BC>;
    using DQ = typename C::DQ;
    constexpr int HALVES = D / 64, QH = C::QH, STAGES = C::STAGES, DQ_STAGES = C::DQ_STAGES;
    const attn_problem_t &p = args.p;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    /* the 128-byte swizzle acts on address bits 4-9: tiles must be 1024-aligned */
    unsigned char *smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);   /* still a shared pointer */
    unsigned char *Ks = smem + C::K_OFF, *Vs = smem + C::V_OFF, *Qs = smem + C::Q_OFF, *dOs = smem + C::DO_OFF;
    unsigned char *dSs = smem + C::DS_OFF, *dQs = smem + C::DQ_OFF;
    float *Ls = (float *)(smem + C::LD_OFF), *Ds = Ls + STAGES * BR;
    uint64_t *kv_full = (uint64_t *)(smem + C::BAR_OFF), *full = kv_full + 1, *empty = full + STAGES;
    uint64_t *dq_full = empty + STAGES, *dq_empty = dq_full + DQ_STAGES;

    /* DET: the K/V blocks of a head run last first (see the dQ writer below) */
    const int Tc = (p.N_kv + BC - 1) / BC, j = DET ? Tc - 1 - (int)blockIdx.x : (int)blockIdx.x;
    const int b = blockIdx.y / p.H_kv, kvh = blockIdx.y % p.H_kv, G = p.H / p.H_kv;
    const int j0 = j * BC;
    const size_t kv_off = ((size_t)b * p.H_kv + kvh) * p.N_kv * D;

    /* Alg. 2 l.5-6: the Q blocks this K/V block visits, for each of the G query heads: the
     * causal range, or with a mask the list of tiles not fully masked, written once by warp 2
     * (idle otherwise) while thread 0 sets up the barriers: every role walks the same list */
    int *n_vis = (int *)(smem + C::MASK_OFF);
    uint16_t *list = (uint16_t *)(smem + C::MASK_OFF + 16);
    if (MASKED && threadIdx.x / 32 == 2) {
        const int n = bwd_mask_q_blocks(args.mblk, Tc, j, p.N_q, BR, visit_all(args.vis), list);
        if (threadIdx.x % 32 == 0) *n_vis = n;
    }
    if (threadIdx.x == 0) {
        mbar_init(kv_full, 1);
        for (int s = 0; s < STAGES; s++) {
            mbar_init(full + s, 32);                 /* the producer warp's lanes' L_i, D_i copies (+ bytes) */
            mbar_init(empty + s, C::MMA_THREADS);    /* every MMA thread is done with the slot */
        }
        for (int s = 0; s < DQ_STAGES; s++) {
            mbar_init(dq_full + s, C::MMA_THREADS);  /* every MMA thread stored its part of dQ_i */
            mbar_init(dq_empty + s, 1);              /* the writer: the copy engine has read it  */
        }
        mbar_init_fence();
    }
    __syncthreads();   /* the barriers are initialised (MASKED: and the Q-block list written);
                          from here on, only mbarriers */
    const bwd_steps_t sched = MASKED ? bwd_steps_masked(p, b, kvh, list, *n_vis)
                                     : bwd_steps(p, j, b, kvh, BR, BC, !visit_all(args.vis));
    const int steps = sched.count;
    if (threadIdx.x == 0) visit_count(args.vis, j, steps);   /* the driver holds it to bwd_visits_want() */

    const int wg = threadIdx.x / WGB_THREADS, lane = threadIdx.x % 32;
    if (wg == 0) {
        setmaxnreg_dec<WS_PRODUCER_REGS>();
        const int warp = threadIdx.x / 32;
        if (warp == 0 && steps > 0) {   /* ---- the producer ---- */
            if (lane == 0) {   /* l.6: K_j, V_j once, 64-row boxes (rows past N_kv: zeros) */
                mbar_arrive_expect_tx(kv_full, 2 * (uint32_t)C::KV_TILE);
                for (int sub = 0; sub < BC / 64; sub++)
                    for (int a = 0; a < HALVES; a++) {
                        const size_t at = (size_t)a * BC * SW_ROW + (size_t)sub * 64 * SW_ROW;
                        tma_load_3d(Ks + at, &args.tk, kv_full, 64 * a, j0 + 64 * sub, b * p.H_kv + kvh);
                        tma_load_3d(Vs + at, &args.tv, kv_full, 64 * a, j0 + 64 * sub, b * p.H_kv + kvh);
                    }
            }
            for (int st = 0; st < steps; st++) {   /* l.9: Q_i, dO_i, L_i, D_i of each step */
                const int s = st % STAGES, use = st / STAGES;
                if (use > 0) mbar_wait(empty + s, (use - 1) & 1);   /* step st - STAGES is done with slot s */
                int i; size_t l_off;
                sched.at(st, BR, i, l_off);
                const int valid = p.N_q - i * BR, head = b * p.H + kvh * G + st / sched.per_head;
                if (lane == 0) {   /* the bytes to wait for, before any lane can arrive */
                    mbar_expect_tx(full + s, 2 * (uint32_t)C::Q_TILE);
                    for (int a = 0; a < HALVES; a++)
                        for (int qh = 0; qh < QH; qh++) {   /* 64-row boxes (rows past N_q: zeros) */
                            const size_t at = s * C::Q_TILE + (size_t)a * BR * SW_ROW + (size_t)qh * 64 * SW_ROW;
                            tma_load_3d(Qs + at, &args.tq, full + s, 64 * a, i * BR + 64 * qh, head);
                            tma_load_3d(dOs + at, &args.tdo, full + s, 64 * a, i * BR + 64 * qh, head);
                        }
                }
                /* L_i, D_i (not 16-byte aligned rows: no TMA) with cp.async; each lane's arrival
                 * comes when its copies land, so the producer runs on at once. Rows past N_q: 0. */
                for (int r = lane; r < BR; r += 32) {
                    cp_async4(Ls + s * BR + r, r < valid ? args.L + l_off + r : args.L, r < valid);
                    cp_async4(Ds + s * BR + r, r < valid ? args.D + l_off + r : args.D, r < valid);
                }
                cp_async_mbar_arrive(full + s);
            }
        } else if (warp == 1 && steps > 0) {   /* ---- the dQ writer (l.15's adds) ---- */
            for (int st = 0; st < steps; st++) {
                const int s = st % DQ_STAGES;
                const unsigned char *tile = dQs + s * DQ::TILE;
                mbar_wait(dq_full + s, (st / DQ_STAGES) & 1);
                int i; size_t l_off;
                sched.at(st, BR, i, l_off);
                const int valid = p.N_q - i * BR;
                /* DET (step 5): the K/V blocks add into Q block i's rows in a fixed order, last
                 * first: j = jl, jl - 1, .., 0 (jl = bwd_last_kv_block(i); under the causal mask
                 * every block before jl visits Q block i too), so the fp32 sums, and the
                 * gradients, are the same bit for bit on every run. Block j waits for its turn:
                 * the counter of (query head, i) reaching jl - j. Last first, because a causal
                 * block j starts at its first Q block, where the blocks after it (the diagonal's)
                 * have already been: ascending, block j would wait at its first Q block for block
                 * 0 to get there. The grid runs the blocks of a head last first too (blockIdx.x
                 * 0 is block Tc - 1), so that a block never waits for one not yet started. */
                int *turn = DET ? args.dq_turn + (l_off / p.N_q) * ((p.N_q + BR - 1) / BR) + i : nullptr;   /* (head, i) */
                const int jl = visit_all(args.vis) ? Tc - 1 : bwd_last_kv_block(p, i, BR, BC);
                if (DET && lane == 0) while (ld_acquire_gpu(turn) != jl - j) ;
                __syncwarp();
                for (int row = lane; row < BR && row < valid; row += 32)   /* rows past N_q: not added */
                    bulk_reduce_add_f32(args.dQ + (l_off + row) * D, tile + row * DQ::PITCH, D * sizeof(float));
                bulk_commit();
                if (DET) {   /* the adds written (not only read), then the next block's turn */
                    bulk_wait<0>();
                    __syncwarp();
                    if (lane == 0) { fence_proxy_async_global(); st_release_gpu(turn, jl - j + 1); }
                } else {
                    bulk_wait_read<0>();   /* this lane's reduces have read the tile */
                    __syncwarp();
                }
                if (lane == 0) mbar_arrive(dq_empty + s);
            }
            bulk_wait<0>();   /* the adds are done before the block's shared memory goes */
        }
        return;
    }

    /* ---- the MMA warpgroups: c = 0, 1 owns keys 64 c .. 64 c + 63 of the block ---- */
    setmaxnreg_inc<WS_MMA_REGS>();
    const int c = wg - 1, warp = (threadIdx.x / 32) % 4, g = lane / 4, t = lane % 4;
    const int key0 = 64 * c + 16 * warp + g;   /* this thread's keys of the block: key0, key0 + 8 */
    const float sl2 = p.scale * BWD_LOG2E;
    int4 mrun[2];   /* MASKED: the two runs of those keys' columns, the same at every step */
#pragma unroll
    for (int x = 0; x < 2; x++) mrun[x] = MASKED ? bwd_mask_column(args.mcols, j0 + key0 + 8 * x, p.N_kv) : make_int4(0, 0, 0, 0);
    float dk[HALVES][32], dv[HALVES][32];   /* l.7: this warpgroup's 64 rows of dK_j, dV_j */
#pragma unroll
    for (int a = 0; a < HALVES; a++)
#pragma unroll
        for (int e = 0; e < 32; e++) dk[a][e] = dv[a][e] = 0.0f;

    if (steps > 0) mbar_wait(kv_full, 0);
    for (int st = 0; st < steps; st++) {                                      /* l.8 */
        const int s = st % STAGES;
        mbar_wait(full + s, (st / STAGES) & 1);   /* Q_i, dO_i, L_i, D_i are in slot s */
        const unsigned char *Qi = Qs + s * C::Q_TILE, *dOi = dOs + s * C::Q_TILE;
        const float *Li = Ls + s * BR, *Di = Ds + s * BR;
        unsigned char *dSt = dSs + (st % 2) * C::DS_TILE;
        int i; size_t l_off;
        sched.at(st, BR, i, l_off);
        const bool mask = bwd_block_needs_mask(p, i, j, BR, BC);   /* tails (and causal: the diagonal) */
        const bool partial = MASKED && sched.partial(st);         /* FlashMask: the element test */

        /* l.10-12: S^T and dP^T, two groups: P^T is computed while dP^T is still running.
         * Each is QH products of 64 keys x 64 queries (query slice qh: rows 64 qh .. of Q_i) */
        float sc[QH][32], dp[QH][32];
        wgmma_fence();
#pragma unroll
        for (int qh = 0; qh < QH; qh++) issue_nt<D, BR, BC>(sc[qh], Ks + c * 64 * SW_ROW, Qi + qh * 64 * SW_ROW);
        wgmma_commit();
#pragma unroll
        for (int qh = 0; qh < QH; qh++) issue_nt<D, BR, BC>(dp[qh], Vs + c * 64 * SW_ROW, dOi + qh * 64 * SW_ROW);
        wgmma_commit();
        uint32_t pa[BR / 16][4], dsa[BR / 16][4];   /* k16 slices 4 qh .. 4 qh + 3: query slice qh */
        using Frag64 = uint32_t[4][4];
        wgmma_wait<1>();   /* S^T */
#pragma unroll
        for (int qh = 0; qh < QH; qh++) {                                       /* l.11 */
            wgmma_fence_regs(sc[qh]);
            if constexpr (MASKED)   /* a row that sees no key: L = +inf, P = 2^-inf = 0 already */
                bwd_p_fm<64>(sc[qh], *reinterpret_cast<Frag64 *>(pa[4 * qh]), Li + 64 * qh, p, i * BR + 64 * qh, key0, j0,
                             mask, partial, mrun, sl2, t);
            else
                bwd_p<64>(sc[qh], *reinterpret_cast<Frag64 *>(pa[4 * qh]), Li + 64 * qh, p, i * BR + 64 * qh, key0, j0,
                          mask, sl2, t);
        }
        /* l.13: dV_j += P^T dO_i. At Br = 128 it is issued at once (FA3's order) and runs while
         * dP^T finishes and dS^T is computed; at Br = 64 (d = 128) after dS^T, the order that
         * measured 2-3% faster there (the dV group would otherwise queue behind dP^T's). */
        constexpr bool EARLY_DV = QH > 1;
        if constexpr (EARLY_DV) {
            wgmma_fence();
            issue_rs<D, BR>(dv, pa, dOi);
            wgmma_commit();
            wgmma_wait<1>();   /* dP^T (dV runs on) */
        } else {
            wgmma_wait<0>();   /* dP^T */
        }
#pragma unroll
        for (int qh = 0; qh < QH; qh++) {                                       /* l.13-14 */
            wgmma_fence_regs(dp[qh]);
            if (QH == 1) bwd_ds<64>(sc[qh], dp[qh], *reinterpret_cast<Frag64 *>(dsa[4 * qh]), dSt, Di, key0, t);
            else   /* Br = 128: P^T from its fp16 fragments, so that S^T's 64 registers are free */
                bwd_ds_p16<64>(*reinterpret_cast<Frag64 *>(pa[4 * qh]), dp[qh], *reinterpret_cast<Frag64 *>(dsa[4 * qh]),
                               dSt + (size_t)qh * BC * SW_ROW, Di + 64 * qh, key0, t);
        }
        fence_proxy_async();   /* dS^T was written by ordinary stores; the tensor cores read it */
        if constexpr (!EARLY_DV) {
            wgmma_fence();
            issue_rs<D, BR>(dv, pa, dOi);
            wgmma_commit();
        }

        /* d = 128 (its dQ columns) and Br = 128 (its dQ rows): a warpgroup's dQ sums over all
         * 128 keys, so both warpgroups' dS^T rows must be in dSt; BY_KEYS (d = 64, Br = 64):
         * each reads its own 64 rows, and they need not meet */
        if (!DQ::BY_KEYS) named_bar_sync(WS_BAR_DS, C::MMA_THREADS);

        /* l.15-16: dQ_i = dS K_j (its own group), then dK_j += dS^T Q_i */
        float dq[DQ::NH][32];
        issue_dq<D, BR, BC>(dq, dSt, Ks, c);
        issue_rs<D, BR>(dk, dsa, Qi);
        wgmma_commit();
        wgmma_wait<1>();   /* dV and dQ (groups complete in order); dK runs on */
#pragma unroll
        for (int h = 0; h < DQ::NH; h++) wgmma_fence_regs(dq[h]);
#pragma unroll
        for (int a = 0; a < HALVES; a++) wgmma_fence_regs(dv[a]);
#pragma unroll
        for (int kk = 0; kk < BR / 16; kk++) wgmma_hold_a(pa[kk]);
        const int qs = st % DQ_STAGES, quse = st / DQ_STAGES;
        if (quse > 0) mbar_wait(dq_empty + qs, (quse - 1) & 1);   /* the writer is done with step st - DQ_STAGES's tile */
        unsigned char *tile = dQs + qs * DQ::TILE;
        if (DQ::BY_ROWS) {   /* Br = 128: each warpgroup its 64 rows of the tile */
            store_dq<D, DQ::NH, DQ::PITCH>(tile + (size_t)64 * c * DQ::PITCH, dq, 0, warp, g, t, p.scale);
        } else if (!DQ::BY_KEYS) {   /* d = 128: each warpgroup its 64 columns of the tile */
            store_dq<D, DQ::NH, DQ::PITCH>(tile, dq, c * DQ::NH, warp, g, t, p.scale);
        } else if (c == 1) {   /* d = 64: two partial sums of every column; warpgroup 1 stores its own */
            store_dq<D, DQ::NH, DQ::PITCH>(tile, dq, 0, warp, g, t, p.scale);
            named_bar_arrive(WS_BAR_DQ + qs, C::MMA_THREADS);
        } else {   /* ... and warpgroup 0 adds its own to it: one tile, half the bytes to reduce */
            named_bar_sync(WS_BAR_DQ + qs, C::MMA_THREADS);
            store_dq<D, DQ::NH, DQ::PITCH, true>(tile, dq, 0, warp, g, t, p.scale);
        }
        fence_proxy_async();   /* ordinary stores; the copy engine reads the tile next */
        mbar_arrive(dq_full + qs);
        wgmma_wait<0>();   /* dK */
#pragma unroll
        for (int a = 0; a < HALVES; a++) wgmma_fence_regs(dk[a]);
#pragma unroll
        for (int kk = 0; kk < BR / 16; kk++) wgmma_hold_a(dsa[kk]);
        mbar_arrive(empty + s);   /* slot s (Q_i, dO_i, L_i, D_i) is free for step st + STAGES */
    }
    store_dkdv<D>(args.dK, args.dV, dk, dv, p, kv_off, j0, key0, t);   /* l.18 */
#else
    (void)args;
#endif
}

/* What must hold for every row of BWD_WGMMA_WS_TABLE (bwd_blocks.h) */
#define BWDWS_ASSERT_ROW(D_, BR_, BC_)                                                                    \
    static_assert(WsBwdCfg<D_, BR_, BC_>::SMEM + 32 + 2 * BWD_MASK_MAX_TR <= SMEM_OPTIN_SM90,             \
                  "wgmma-ws bwd: shared memory (and a mask's Q-block list) above 227 KiB");
BWD_WGMMA_WS_TABLE(BWDWS_ASSERT_ROW)
#undef BWDWS_ASSERT_ROW

/* DET's turn counters: one int per query head and Q block, zeroed before each launch; kept
 * between launches (grown when a larger problem comes) */
static int *dq_turn_buffer(const attn_problem_t *p, int br)
{
    static int *buf = NULL;
    static size_t cap = 0;
    const size_t n = (size_t)p->B * p->H * ((p->N_q + br - 1) / br);
    if (n > cap) {
        if (buf) CUDA_CHECK(cudaFree(buf));
        CUDA_CHECK(cudaMalloc(&buf, n * sizeof(int)));
        cap = n;
    }
    CUDA_CHECK(cudaMemsetAsync(buf, 0, n * sizeof(int)));
    return buf;
}

template <int D, int BR, int BC, bool DET, bool MASKED = false>
static void launch_ws(const attn_problem_t *p, const bwd_gpu_args_t *a)
{
    using C = WsBwdCfg<D, BR, BC>;
    const dim3 grid((p->N_kv + BC - 1) / BC, p->B * p->H_kv);
    WsBwdArgs x;
    x.p = *p;
    x.tq = tma_map_3d_f16(a->Q, D, p->N_q, p->B * p->H, 64, "wgmma-ws");
    x.tdo = tma_map_3d_f16(a->dO, D, p->N_q, p->B * p->H, 64, "wgmma-ws");
    x.tk = tma_map_3d_f16(a->K, D, p->N_kv, p->B * p->H_kv, 64, "wgmma-ws");
    x.tv = tma_map_3d_f16(a->V, D, p->N_kv, p->B * p->H_kv, 64, "wgmma-ws");
    x.L = a->L; x.D = a->D; x.dQ = a->dQ; x.dK = a->dK; x.dV = a->dV;
    x.vis = gpu_visits(grid.x);
    x.dq_turn = DET ? dq_turn_buffer(p, BR) : NULL;
    /* FlashMask: the vectors (an input, uploaded once) and this launch's preprocessing pass at Bc */
    x.mblk = MASKED ? mask_gpu_blocks(mask_gpu_runs(attn_mask(p)), p->N_kv, BC) : NULL;
    x.mcols = MASKED ? mask_gpu_columns(attn_mask(p)) : NULL;
    bwd_preprocess_launch(p, a, 1);   /* D = rowsum(dO * O), dQ = 0 */
    static bool attr = false;
    if (!attr) {
        CUDA_CHECK(cudaFuncSetAttribute(bwd_wgmma_ws_kernel<D, BR, BC, DET, MASKED>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)(C::SMEM + (MASKED ? mask_list_bytes(BWD_MASK_MAX_TR) : 0))));
        attr = true;
    }
    const size_t smem = C::SMEM + (MASKED ? mask_list_bytes((p->N_q + BR - 1) / BR) : 0);
    bwd_wgmma_ws_kernel<D, BR, BC, DET, MASKED><<<grid, C::THREADS, smem>>>(x);
    CUDA_CHECK_LAUNCH();
}

extern "C" int bwd_wgmma_ws_config(int d, bool det, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = det ? "wgmma-det" : "wgmma-ws";
    switch (d) {
#define BWDWS_CONFIG_ROW(D_, BR_, BC_)                      \
    case D_:                                                \
        c->blocks.Br = BR_; c->blocks.Bc = BC_;             \
        c->threads = WsBwdCfg<D_, BR_, BC_>::THREADS;       \
        c->smem_bytes = WsBwdCfg<D_, BR_, BC_>::SMEM;       \
        break;
    BWD_WGMMA_WS_TABLE(BWDWS_CONFIG_ROW)
#undef BWDWS_CONFIG_ROW
    default:
        snprintf(why, len, "kernel %s is built for d = 64 and 128 (bwd_blocks.h), not d = %d", c->name, d);
        return -1;
    }
    return gpu_config_fits(c, 1, why, len);   /* built for sm_90a alone */
}

extern "C" void bwd_wgmma_ws_launch(const attn_problem_t *p, bool det, const bwd_gpu_args_t *a)
{
    switch (p->d) {
#define BWDWS_LAUNCH_ROW(D_, BR_, BC_)                       \
    case D_:                                                 \
        if (det) launch_ws<D_, BR_, BC_, true>(p, a);        \
        else if (attn_mask(p)) launch_ws<D_, BR_, BC_, false, true>(p, a);   /* FlashMask */ \
        else launch_ws<D_, BR_, BC_, false>(p, a);           \
        break;
    BWD_WGMMA_WS_TABLE(BWDWS_LAUNCH_ROW)
#undef BWDWS_LAUNCH_ROW
    default: break;   /* bwd_wgmma_ws_config() said -1 */
    }
}
