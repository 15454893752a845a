/* dec_softmax.cuh - one K/V tile of a warp, in registers: S = Q K^T on the tensor cores, the
 * mask, the softmax block (OnlineSm here: chapter 2's running max; FdppSm in dec_fdpp.cuh),
 * O~ += P V; then the block's warps merged in shared memory and its rows written.
 *
 * A softmax policy Sm holds a thread's state of its rows g and g + 8 and gives
 *   FDPP                    true for FD++ (partials even at S = 1, no fused combine)
 *   init(a)                 the state before the first tile
 *   block(sc, alpha, sl2)   the tile's scores -> the weights P in place; alpha: O~'s rescale
 *   rescale(o, alpha)       O~ *= alpha before P V (nothing under a fixed max)
 *   quad_flags(x)           what m carries into the merge (FD++: the window's flags)
 *   merge_row(...)          one block row's weights of the warps and its L_s
 *   empty_L(to_output)      L_s of a split that sees no key */
#ifndef PHASE6_DEC_SOFTMAX_CUH
#define PHASE6_DEC_SOFTMAX_CUH
#include "dec_cfg.cuh"

#define DEC_LOG2E 1.4426950408889634f   /* e^x = 2^(x log2(e)) */

/* This thread's rows g and g + 8 of its warp's m-tile wr: the last key each may see (causal,
 * bottom-right on this sequence's own length n); rows past nrows are padding. */
__device__ __forceinline__ void row_limits(int (&lim)[2], const attn_problem_t &p, int r0, int wr, int g, int n)
{
#pragma unroll
    for (int x = 0; x < 2; x++) lim[x] = p.causal ? (r0 + wr * ROWS + g + 8 * x) % p.N_q + (n - p.N_q) : n - 1;
}

/* S = Q K^T: 16 rows x NT n-tiles of 8 keys. QREG: Q's fragments in registers (qf, loaded
 * once), else read from shared memory (Qw) at each use. */
template <int D, int NT, bool QREG>
__device__ __forceinline__ void qk_tile(float (&sc)[NT][4], uint32_t (&qf)[QREG ? D / 16 : 1][4], const __half *Qw,
                                        const __half *Kw)
{
    constexpr int LDH = DCfg<D>::LDH;
#pragma unroll
    for (int nn = 0; nn < NT; nn++) sc[nn][0] = sc[nn][1] = sc[nn][2] = sc[nn][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        if (!QREG) load_a_16x16(qf[0], Qw + kk * 16, LDH);
#pragma unroll
        for (int c = 0; c < NT / 2; c++) {   /* 16 keys a step */
            uint32_t bf[4];
            load_b_nk(bf, Kw + c * 16 * LDH + kk * 16, LDH);
            mma_16816(sc[2 * c], qf[QREG ? kk : 0], bf);
            mma_16816(sc[2 * c + 1], qf[QREG ? kk : 0], bf + 2);
        }
    }
}

/* The mask of the warp's keys from jw: past the range's end k1, and the causal diagonal
 * (lim; lim_min the least of any row). t: the lane's column pair in the quad. */
template <int NT>
__device__ __forceinline__ void mask_tile(float (&sc)[NT][4], int jw, int k1, const int (&lim)[2], int lim_min, int t)
{
    constexpr int KWW = NT * 8;
    if (jw + KWW > k1 || jw + KWW - 1 > lim_min) {
#pragma unroll
        for (int nn = 0; nn < NT; nn++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int col = jw + nn * 8 + 2 * t + e % 2;
                if (col >= k1 || col > lim[e / 2]) sc[nn][e] = -INFINITY;
            }
    }
}

/* O~ += P V_w: P from the S registers, one A fragment per 16 keys. */
template <int D, int NT>
__device__ __forceinline__ void pv_tile(float (&o)[D / 8][4], float (&sc)[NT][4], const __half *Vw)
{
    constexpr int LDH = DCfg<D>::LDH;
#pragma unroll
    for (int c = 0; c < NT / 2; c++) {
        uint32_t pa[4];
        c_pair_to_a(pa, sc[2 * c], sc[2 * c + 1]);
#pragma unroll
        for (int n2 = 0; n2 < D / 16; n2++) {
            uint32_t bf[4];
            load_b_kn_trans(bf, Vw + c * 16 * LDH + n2 * 16, LDH);
            mma_16816(o[2 * n2], pa, bf);
            mma_16816(o[2 * n2 + 1], pa, bf + 2);
        }
    }
}

/* The warps' merge area over the K/V stages: O~ [DWARPS][ROWS][D] (each warp's 16 rows), m, l,
 * the weights [DWARPS][ROWS], and each block row's L [ROWS_B]. */
struct MergeArea {
    float *Om, *Mm, *Lm, *Wm, *Lrow;
    __device__ __forceinline__ MergeArea(unsigned char *stages, int D)
    {
        Om = (float *)stages;
        Mm = Om + DWARPS * ROWS * D; Lm = Mm + DWARPS * ROWS; Wm = Lm + DWARPS * ROWS;
        Lrow = Wm + DWARPS * ROWS;
    }
};

/* Chapter 2's online softmax of rows g, g + 8 (the quad's 4 lanes hold a row's keys). */
struct OnlineSm {
    static constexpr bool FDPP = false;
    float m_i[2], l_i[2];
    __device__ __forceinline__ void init(const DecArgs &)
    {
        m_i[0] = m_i[1] = -INFINITY;
        l_i[0] = l_i[1] = 0.0f;
    }
    template <int NT>
    __device__ __forceinline__ void block(float (&sc)[NT][4], float (&alpha)[2], float sl2)
    {
#pragma unroll
        for (int x = 0; x < 2; x++) {
            float mx = m_i[x];
#pragma unroll
            for (int nn = 0; nn < NT; nn++) mx = fmaxf(mx, fmaxf(sc[nn][2 * x], sc[nn][2 * x + 1]));
#pragma unroll
            for (int lane_xor = 1; lane_xor <= 2; lane_xor *= 2)   /* the quad's 4 lanes */
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, lane_xor));
            alpha[x] = mx == -INFINITY ? 0.0f : sfu_ex2((m_i[x] - mx) * sl2);
            const float m_scaled = (mx == -INFINITY) ? 0.0f : sl2 * mx;
            m_i[x] = mx;
            float row_sum = 0.0f;
#pragma unroll
            for (int nn = 0; nn < NT; nn++)
#pragma unroll
                for (int e = 2 * x; e <= 2 * x + 1; e++) {
                    sc[nn][e] = sfu_ex2(fmaf(sc[nn][e], sl2, -m_scaled));
                    row_sum += sc[nn][e];
                }
            l_i[x] = alpha[x] * l_i[x] + row_sum;   /* this thread's columns; the quad's are added at the end */
        }
    }
    template <int D>
    __device__ __forceinline__ void rescale(float (&o)[D / 8][4], const float (&alpha)[2])
    {
#pragma unroll
        for (int nn = 0; nn < D / 8; nn++) { o[nn][0] *= alpha[0]; o[nn][1] *= alpha[0]; o[nn][2] *= alpha[1]; o[nn][3] *= alpha[1]; }
    }
    __device__ __forceinline__ void quad_flags(int) {}
    /* chapter 2's merge of the warps: m = max m_w, l = sum e^{m_w - m} l_w; O_s = O~ / l,
     * L_s = m + log l. A row with no key: O_s = 0 and L_s = -inf (a partial: the log of an
     * empty sum), or L = +inf when this is the output (S = 1). Block row tid is row rr of
     * the WK warps w0 + WR k that share its m-tile. */
    template <int WR, int WK>
    static __device__ __forceinline__ void merge_row(const MergeArea &m, int tid, float sl2, const DecArgs &a)
    {
        const int w0 = tid / ROWS, rr = tid % ROWS;
        float mx = -INFINITY;
#pragma unroll
        for (int k = 0; k < WK; k++) mx = fmaxf(mx, m.Mm[(w0 + WR * k) * ROWS + rr]);
        float l = 0.0f, e[WK];
#pragma unroll
        for (int k = 0; k < WK; k++) {
            const int w = w0 + WR * k;
            e[k] = mx == -INFINITY ? 0.0f : sfu_ex2((m.Mm[w * ROWS + rr] - mx) * sl2);
            l += e[k] * m.Lm[w * ROWS + rr];
        }
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
        for (int k = 0; k < WK; k++) m.Wm[(w0 + WR * k) * ROWS + rr] = e[k] * inv;
        m.Lrow[tid] = l > 0.0f ? mx * a.p.scale + logf(l) : (a.S == 1 ? INFINITY : -INFINITY);
    }
    static __device__ __forceinline__ float empty_L(bool to_output) { return to_output ? INFINITY : -INFINITY; }
};

/* A warp's state into the merge area: the quad's l summed, O~'s rows g and g + 8, m and l. */
template <int D, class Sm>
__device__ __forceinline__ void stash_warp(const MergeArea &m, Sm &sm, const float (&o)[D / 8][4], int warp, int g, int t)
{
#pragma unroll
    for (int x = 0; x < 2; x++) {
        sm.l_i[x] += __shfl_xor_sync(0xffffffffu, sm.l_i[x], 1);
        sm.l_i[x] += __shfl_xor_sync(0xffffffffu, sm.l_i[x], 2);
        const int r = g + 8 * x;
#pragma unroll
        for (int nn = 0; nn < D / 8; nn++)
            *reinterpret_cast<float2 *>(m.Om + ((size_t)warp * ROWS + r) * D + nn * 8 + 2 * t) = make_float2(o[nn][2 * x], o[nn][2 * x + 1]);
        sm.quad_flags(x);
        if (t == 0) { m.Mm[warp * ROWS + r] = sm.m_i[x]; m.Lm[warp * ROWS + r] = sm.l_i[x]; }
    }
}

/* The block's warps merged over the K/V stages (once every warp is done with them) and its
 * nrows rows written: O_s = the warps' O~ by their weights into Odst, L_s into Ldst. warp, g, t:
 * the thread's warp, and its row and column pair in the mma fragments (lane / 4, lane % 4). */
template <int D, int WR, class Sm>
__device__ __forceinline__ void merge_warps(unsigned char *stages, Sm &sm, const float (&o)[D / 8][4], float sl2,
                                            const DecArgs &a, float *Odst, float *Ldst, int nrows, int warp, int g, int t)
{
    using C = DCfg<D, WR>;
    const int tid = threadIdx.x;
    cp_async_wait<0>();
    __syncthreads();   /* every warp is done with the K/V stages: they become the merge area */
    const MergeArea m(stages, D);
    stash_warp<D>(m, sm, o, warp, g, t);
    __syncthreads();   /* every warp's O~, m, l are in shared memory */
    if (tid < C::ROWS_B) Sm::template merge_row<WR, C::WK>(m, tid, sl2, a);
    __syncthreads();   /* the weights and L of every row are in shared memory */
    for (int e4 = tid * 4; e4 < nrows * D; e4 += DTHREADS * 4) {
        const int r = e4 / D, c = e4 % D, w0 = r / ROWS, rr = r % ROWS;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int k = 0; k < C::WK; k++) {
            const int w = w0 + WR * k;
            const float wt = m.Wm[w * ROWS + rr];
            const float4 x = *reinterpret_cast<const float4 *>(m.Om + ((size_t)w * ROWS + rr) * D + c);
            v.x += wt * x.x; v.y += wt * x.y; v.z += wt * x.z; v.w += wt * x.w;
        }
        *reinterpret_cast<float4 *>(Odst + e4) = v;
    }
    if (tid < nrows) Ldst[tid] = m.Lrow[tid];
}

#endif
