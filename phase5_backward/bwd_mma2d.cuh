/* bwd_mma2d.cuh - the mma2d kernel (FA2's backward with its 2-D warp grids) and its pieces:
 * the layouts and the reasons for them are bwd_mma2d.cu's head comment; bwd_mma2d.cu launches
 * it, tools/mma_emu/bwd_mma2d_emu.cpp runs it on the CPU.
 */
#ifndef PHASE5_BWD_MMA2D_CUH
#define PHASE5_BWD_MMA2D_CUH
#include "mma.cuh"
#include "bwd_gpu.cuh"
#include "visits.cuh"

/* D: head dimension; BR x BC the block; SM: warps along Br in the S/dP grid; KN: warps
 * along Bc in the dK/dV grid; QM: warps along Br in the dQ grid (FA2's AtomLayoutMSdP,
 * AtomLayoutNdKV, AtomLayoutMdQ). A warp's tile in each grid is *_ROWS x *_COLS, that is
 * *_MT m-tiles of 16 rows by *_NT n-tiles of 8 columns. */
template <int D, int BR, int BC, int SM, int KN, int QM>
struct Cfg2d {
    static constexpr int WARPS = 8, THREADS = 32 * WARPS;
    static constexpr int LDH = D + 8;    /* Q, dO, K, V rows                              */
    static constexpr int LDP = BC + 8;   /* P, dS rows (queries x keys)                   */
    /* S, dP: Br x Bc over SM x SN warps */
    static constexpr int SN = WARPS / SM, S_ROWS = BR / SM, S_COLS = BC / SN;
    static constexpr int S_MT = S_ROWS / 16, S_NT = S_COLS / 8;
    /* dK, dV: Bc x d over KN x KD warps */
    static constexpr int KD = WARPS / KN, KV_ROWS = BC / KN, KV_COLS = D / KD;
    static constexpr int KV_MT = KV_ROWS / 16, KV_NT = KV_COLS / 8;
    /* dQ: Br x d over QM x QD warps */
    static constexpr int QD = WARPS / QM, Q_ROWS = BR / QM, Q_COLS = D / QD;
    static constexpr int Q_MT = Q_ROWS / 16, Q_NT = Q_COLS / 8;
    static constexpr int Q_CH = Q_NT < 4 ? Q_NT : 4;   /* n-tiles of dQ a pass (add_dq) */
    static_assert(Q_NT % Q_CH == 0 && Q_CH % 2 == 0, "mma2d: dQ's passes split its tile evenly");
    static constexpr size_t K_OFF = 0;
    static constexpr size_t V_OFF = K_OFF + sizeof(__half) * BC * LDH;
    static constexpr size_t Q_OFF = V_OFF + sizeof(__half) * BC * LDH;      /* 2 stages */
    static constexpr size_t DO_OFF = Q_OFF + 2 * sizeof(__half) * BR * LDH; /* 2 stages */
    static constexpr size_t L_OFF = DO_OFF + 2 * sizeof(__half) * BR * LDH; /* L, D: 2 stages each */
    static constexpr size_t P_OFF = L_OFF + 4 * sizeof(float) * BR;
    static constexpr size_t DS_OFF = P_OFF + sizeof(__half) * BR * LDP;
    static constexpr size_t SMEM = DS_OFF + sizeof(__half) * BR * LDP;
};

/* acc (a warp's MT m-tiles x NT n-tiles) += A B over k = 0 .. KDIM-1, A and B read from
 * shared memory:
 *   A_KM false: A stored M x K row-major at a (row m, column k): load_a_16x16
 *   A_KM true:  A stored K x M at a (row k holds m = 0, 1, ...):  load_a_trans
 *   B_KN false: B stored N x K at b (row n holds k = 0, 1, ...):  load_b_nk
 *   B_KN true:  B stored K x N at b (row k holds n = 0, 1, ...):  load_b_kn_trans
 * a points at the warp's first row m (A_KM: first column m), b at its first column n. */
template <int MT, int NT, int KDIM, int LDA, int LDB, bool A_KM, bool B_KN>
__device__ __forceinline__ void warp_mma(float (&acc)[MT][NT][4], const __half *a, const __half *b)
{
    static_assert(NT % 2 == 0 && KDIM % 16 == 0, "two n-tiles per B load, whole k16 slices");
#pragma unroll
    for (int kk = 0; kk < KDIM / 16; kk++) {
        uint32_t af[MT][4];
#pragma unroll
        for (int m = 0; m < MT; m++) {
            if constexpr (A_KM) load_a_trans(af[m], a + kk * 16 * LDA + m * 16, LDA);
            else                load_a_16x16(af[m], a + m * 16 * LDA + kk * 16, LDA);
        }
#pragma unroll
        for (int n2 = 0; n2 < NT / 2; n2++) {
            uint32_t bf[4];
            if constexpr (B_KN) load_b_kn_trans(bf, b + kk * 16 * LDB + n2 * 16, LDB);
            else                load_b_nk(bf, b + n2 * 16 * LDB + kk * 16, LDB);
#pragma unroll
            for (int m = 0; m < MT; m++) {
                mma_16816(acc[m][2 * n2], af[m], bf);
                mma_16816(acc[m][2 * n2 + 1], af[m], bf + 2);
            }
        }
    }
}

template <int MT, int NT>
__device__ __forceinline__ void zero_acc(float (&acc)[MT][NT][4])
{
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int n = 0; n < NT; n++) acc[m][n][0] = acc[m][n][1] = acc[m][n][2] = acc[m][n][3] = 0.0f;
}

/* Alg. 2 l.11: P = 2^(S scale log2 e - L log2 e) of the warp's S tile (rows r0.., keys c0..
 * of the block; C layout: acc[m][n][2x + e] is row r0 + 16m + g + 8x, key c0 + 8n + 2t + e),
 * masked to 0 where the key is past N_kv, the row past N_q, or causal hides it (only in
 * blocks that need it: mask). Stored to Ps [query][key] in fp16 pairs: lanes g, t write
 * word 4g + t (mod 32) of a row pitch of Bc + 8 halves, so the 32 stores of a warp hit 32
 * different banks. */
template <int MT, int NT, int LDP>
__device__ __forceinline__ void p_to_smem(const float (&s)[MT][NT][4], __half *Ps,
                                          int r0, int c0, const float *Li, const attn_problem_t &p,
                                          int q0, int k0, bool mask, float sl2)
{
    const int lane = lane_id(), g = lane / 4, t = lane % 4;
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int x = 0; x < 2; x++) {
            const int row = r0 + m * 16 + g + 8 * x, qrow = q0 + row;
            const float l2 = Li[row] * BWD_LOG2E;   /* +inf for a fully masked row: P = 0 */
#pragma unroll
            for (int n = 0; n < NT; n++) {
                const int col = c0 + n * 8 + 2 * t;
                float pv[2];
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int key = k0 + col + e;
                    pv[e] = sfu_ex2(fmaf(s[m][n][2 * x + e], sl2, -l2));
                    if (mask && (key >= p.N_kv || qrow >= p.N_q || !attn_visible(&p, qrow, key))) pv[e] = 0.0f;
                }
                *(uint32_t *)(Ps + row * LDP + col) = pack_half2(pv[0], pv[1]);
            }
        }
}

/* Alg. 2 l.14: dS = P (dP - D_i), D one per query row, from the warp's dP tile (same
 * places as p_to_smem); stored to dSs [query][key] in fp16. P is read back from Ps: each
 * lane reads exactly the words it wrote there itself (program order, no barrier needed),
 * in fp16: dS is rounded to fp16 next anyway (the standard backward rounds P, dP and dS),
 * and keeping P in registers through dP's mma spilled at d = 128. */
template <int MT, int NT, int LDP>
__device__ __forceinline__ void ds_to_smem(const __half *Ps, const float (&dp)[MT][NT][4],
                                           __half *dSs, int r0, int c0, const float *Di)
{
    const int lane = lane_id(), g = lane / 4, t = lane % 4;
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int x = 0; x < 2; x++) {
            const int row = r0 + m * 16 + g + 8 * x;
            const float dr = Di[row];
#pragma unroll
            for (int n = 0; n < NT; n++) {
                const int at = row * LDP + c0 + n * 8 + 2 * t;
                uint32_t pw = *(const uint32_t *)(Ps + at);   /* read as it was written: a word */
                const float2 pf = __half22float2(*reinterpret_cast<__half2 *>(&pw));
                *(uint32_t *)(dSs + at) =
                    pack_half2(pf.x * (dp[m][n][2 * x] - dr), pf.y * (dp[m][n][2 * x + 1] - dr));
            }
        }
}

/* Alg. 2 l.15: this block's share of dQ_i (scale dS K_j: the warp's Q_ROWS x Q_COLS tile
 * at row r0, column c0 of dQ_i) added to HBM: other thread blocks (the other K/V blocks of
 * the head) add to the same elements at the same time. Rows past N_q are not written. */
template <int MT, int NT, int D>
__device__ __forceinline__ void add_dq(float *dQi, const float (&q)[MT][NT][4], int r0, int c0, int valid, float scale)
{
    const int lane = lane_id(), g = lane / 4, t = lane % 4;
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int x = 0; x < 2; x++) {
            const int row = r0 + m * 16 + g + 8 * x;
            if (row >= valid) continue;
            float *out = dQi + (size_t)row * D + c0 + 2 * t;
#pragma unroll
            for (int n = 0; n < NT; n++) {
                const float v0 = q[m][n][2 * x] * scale, v1 = q[m][n][2 * x + 1] * scale;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900   /* one 8-byte atomic (sm_90 and later) */
                atomicAdd(reinterpret_cast<float2 *>(out + 8 * n), make_float2(v0, v1));
#else
                atomicAdd(out + 8 * n, v0);
                atomicAdd(out + 8 * n + 1, v1);
#endif
            }
        }
}

template <int D, int BR, int BC, int SM, int KN, int QM>
__global__ void __launch_bounds__(Cfg2d<D, BR, BC, SM, KN, QM>::THREADS, 1)   /* 1 block of 8 warps an
                                        SM: up to 255 registers a thread for dK_j, dV_j in registers */
bwd_mma2d_kernel(attn_problem_t p, const __half *Qg, const __half *Kg, const __half *Vg, const __half *dOg,
                 const float *Lg, const float *Dg, float *dQg, float *dKg, float *dVg, gpu_visits_t vis)
{
    using C = Cfg2d<D, BR, BC, SM, KN, QM>;
    constexpr int LDH = C::LDH, LDP = C::LDP, THREADS = C::THREADS;
    BWD_DYNAMIC_SMEM(smem);
    __half *Ks = (__half *)(smem + C::K_OFF), *Vs = (__half *)(smem + C::V_OFF);
    __half *Qs = (__half *)(smem + C::Q_OFF), *dOs = (__half *)(smem + C::DO_OFF);
    float *Ls = (float *)(smem + C::L_OFF), *Ds = Ls + 2 * BR;
    __half *Ps = (__half *)(smem + C::P_OFF), *dSs = (__half *)(smem + C::DS_OFF);

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const auto [j, b, kvh, j0, kv_off] = bwd_kv_block(p, BC, D);
    const float sl2 = p.scale * BWD_LOG2E;
    /* the warp's place in the three grids (the picture above) */
    const int s_r = (warp % SM) * C::S_ROWS, s_c = (warp / SM) * C::S_COLS;      /* S, dP   */
    const int kv_r = (warp % KN) * C::KV_ROWS, kv_c = (warp / KN) * C::KV_COLS;  /* dK, dV  */
    const int q_r = (warp % QM) * C::Q_ROWS, q_c = (warp / QM) * C::Q_COLS;      /* dQ      */

    /* Alg. 2 l.5-6: the Q blocks this K/V block visits, for each of the G query heads */
    const bwd_steps_t sched = bwd_steps(p, j, b, kvh, BR, BC, !visit_all(vis));
    const int steps = sched.count;
    if (threadIdx.x == 0) visit_count(vis, j, steps);   /* the driver holds it to bwd_q_block_first() */

    /* step st -> (query head h, Q block i); its rows' offset in Q, dO, dQ and in L, D */
    auto step_at = [&](int st, int &i, size_t &q_off, size_t &l_off) {
        sched.at(st, BR, i, l_off);
        q_off = l_off * D;
    };
    auto load_step = [&](int st, int stage) {   /* Q_i, dO_i, L_i, D_i into a stage */
        bwd_load_step<D, LDH, BR, THREADS>(sched, st, Qs + stage * BR * LDH, dOs + stage * BR * LDH,
                                           Ls + stage * BR, Ds + stage * BR, Qg, dOg, Lg, Dg);
    };

    /* Alg. 2 l.6: K_j, V_j into shared memory (rows past N_kv zero), and the first step */
    cp_async_tile<D, LDH, THREADS>(Ks, Kg + kv_off + (size_t)j0 * D, BC, p.N_kv - j0);
    cp_async_tile<D, LDH, THREADS>(Vs, Vg + kv_off + (size_t)j0 * D, BC, p.N_kv - j0);
    if (steps > 0) load_step(0, 0);
    cp_async_commit();

    float dk[C::KV_MT][C::KV_NT][4], dv[C::KV_MT][C::KV_NT][4];   /* l.7: the warp's dK_j, dV_j tile */
    zero_acc(dk);
    zero_acc(dv);

    for (int st = 0; st < steps; st++) {                                      /* l.8 */
        const int stage = st % 2;
        cp_async_wait<0>();
        __syncthreads();   /* this step's tiles landed and are visible to all; every warp is
                              done with the other stage and with P, dS of the last step */
        if (st + 1 < steps) { load_step(st + 1, 1 - stage); cp_async_commit(); }   /* l.9 */
        const __half *Qi = Qs + stage * BR * LDH, *dOi = dOs + stage * BR * LDH;
        const float *Li = Ls + stage * BR, *Di = Ds + stage * BR;
        int i; size_t q_off, l_off;
        step_at(st, i, q_off, l_off);
        const bool mask = bwd_block_needs_mask(p, i, j, BR, BC);

        /* l.10-11: S = Q_i K_j^T on the warp's tile, then P, to Ps */
        {
            float s[C::S_MT][C::S_NT][4];
            zero_acc(s);
            warp_mma<C::S_MT, C::S_NT, D, LDH, LDH, false, false>(s, Qi + s_r * LDH, Ks + s_c * LDH);
            p_to_smem<C::S_MT, C::S_NT, LDP>(s, Ps, s_r, s_c, Li, p, i * BR, j0, mask, sl2);
        }
        /* l.12, l.14: dP = dO_i V_j^T on the same tile, then dS = P (dP - D_i) to dSs */
        {
            float dp[C::S_MT][C::S_NT][4];
            zero_acc(dp);
            warp_mma<C::S_MT, C::S_NT, D, LDH, LDH, false, false>(dp, dOi + s_r * LDH, Vs + s_c * LDH);
            ds_to_smem<C::S_MT, C::S_NT, LDP>(Ps, dp, dSs, s_r, s_c, Di);
        }
        __syncthreads();   /* every warp's P and dS tiles are in shared memory */

        /* l.13: dV_j += P^T dO_i and l.16: dK_j += dS^T Q_i, the warp's keys kv_r.., columns
         * kv_c.. of d; k runs over the Br queries. P^T, dS^T: the stored [query][key] tiles
         * read transposed (Ps + kv_r is element (query 0, key kv_r)) */
        warp_mma<C::KV_MT, C::KV_NT, BR, LDP, LDH, true, true>(dv, Ps + kv_r, dOi + kv_c);
        warp_mma<C::KV_MT, C::KV_NT, BR, LDP, LDH, true, true>(dk, dSs + kv_r, Qi + kv_c);

        /* l.15: dQ_i += scale dS K_j, the warp's rows q_r.., columns q_c..; k over the Bc keys.
         * In chunks of Q_CH n-tiles (32 columns): beside dK_j, dV_j's registers a whole
         * 32 x 64 tile (d = 256) spilled on sm_80 */
#pragma unroll
        for (int c = 0; c < C::Q_NT; c += C::Q_CH) {
            float q[C::Q_MT][C::Q_CH][4];
            zero_acc(q);
            warp_mma<C::Q_MT, C::Q_CH, BC, LDP, LDH, false, true>(q, dSs + q_r * LDP, Ks + q_c + 8 * c);
            add_dq<C::Q_MT, C::Q_CH, D>(dQg + q_off, q, q_r, q_c + 8 * c, p.N_q - i * BR, p.scale);
        }
    }
    cp_async_wait<0>();   /* steps = 0: K_j, V_j's copies land before the block exits */
    /* l.18: dK_j = scale dS^T Q, dV_j written once (keys past N_kv not written); a block no
     * query row sees (steps = 0) writes zeros */
#pragma unroll
    for (int m = 0; m < C::KV_MT; m++)
#pragma unroll
        for (int x = 0; x < 2; x++) {
            const int key = j0 + kv_r + m * 16 + g + 8 * x;
            if (key >= p.N_kv) continue;
            const size_t at = kv_off + (size_t)key * D + kv_c + 2 * t;
#pragma unroll
            for (int n = 0; n < C::KV_NT; n++) {
                *(float2 *)(dKg + at + 8 * n) = make_float2(dk[m][n][2 * x] * p.scale, dk[m][n][2 * x + 1] * p.scale);
                *(float2 *)(dVg + at + 8 * n) = make_float2(dv[m][n][2 * x], dv[m][n][2 * x + 1]);
            }
        }
}
#endif
