/* hopper/epilogue.cuh - the end of a tile (Alg. 1, lines 12-13): O_i = O~ / l and L_i, from
 * the registers (finish_rows) or through shared memory and a TMA store (finish_rows_via_smem,
 * step10_store.cuh); and the rows of a Q block that sees no key. */
#pragma once
#include "softmax.cuh"

#if FA_HAVE_WGMMA
/* A Q block none of whose rows sees a key: O = 0, L = +inf (common/problem.h), written by
 * the block's `threads` threads; rows past N_q are padding. */
template <int D>
__device__ __forceinline__ void write_rows_without_keys(float *O, float *L, int i0, int Br, int N_q, int threads,
                                                        int tid)
{
    for (int e = tid; e < Br * D; e += threads)
        if (i0 + e / D < N_q) O[(size_t)i0 * D + e] = 0.0f;
    for (int r = tid; r < Br; r += threads)
        if (i0 + r < N_q) L[i0 + r] = INFINITY;
}
template <int D>
__device__ __forceinline__ void write_rows_without_keys(float *O, float *L, int i0, int Br, int N_q, int threads)
{
    write_rows_without_keys<D>(O, L, i0, Br, N_q, threads, (int)threadIdx.x);
}

/* This thread's row x: l, the quad's 4 shares summed (every lane joins the shuffles), and
 * from it L_i = m_i scale + log l (Alg. 1, line 13; +inf for a row that saw no key; m is kept
 * times log2 e: m ln 2). */
template <int D>
__device__ __forceinline__ float row_l(const RowTile<D> &st, int x)
{
    float l_row = st.l[x];
    l_row += __shfl_xor_sync(0xffffffffu, l_row, 1);
    l_row += __shfl_xor_sync(0xffffffffu, l_row, 2);
    return l_row;
}
template <int D>
__device__ __forceinline__ float row_lse(const RowTile<D> &st, int x, float l_row)
{
    return l_row > 0.0f ? fmaf(st.m[x], FA_LN2, logf(l_row)) : INFINITY;
}

/* Alg. 1, lines 12-13: O_i = O~ / l once, L_i (row_lse); rows past N_q (the last Q tile's
 * padding) are not written. o_factor: a factor on O (the FP8 step's last V scale). */
template <int D>
__device__ __forceinline__ void finish_rows(const RowTile<D> &st, float *O, float *L, int row0, const attn_problem_t &p, int t,
                                            float o_factor = 1.0f)
{
    constexpr int ATOMS = D / 64;
#pragma unroll
    for (int x = 0; x < 2; x++) {
        const float l_row = row_l<D>(st, x);
        const int row = row0 + 8 * x;
        if (row >= p.N_q) continue;   /* padding rows of the last Q block */
        const float scale_out = l_row > 0.0f ? o_factor / l_row : 0.0f;
        float *out = O + (size_t)row * D + 2 * t;
#pragma unroll
        for (int a = 0; a < ATOMS; a++)
#pragma unroll
            for (int n8 = 0; n8 < 8; n8++)
                *reinterpret_cast<float2 *>(out + a * 64 + n8 * 8) =
                    make_float2(scale_out * st.o[a][4 * n8 + 2 * x], scale_out * st.o[a][4 * n8 + 2 * x + 1]);
        if (t == 0) L[row] = row_lse<D>(st, x, l_row);
    }
}

#endif
