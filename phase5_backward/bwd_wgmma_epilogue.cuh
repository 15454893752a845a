/* bwd_wgmma_epilogue.cuh - where the Hopper backward's results go: a step's dQ_i share (Alg. 2
 * l.15) added to HBM by fp32 atomics (step 1) or stored to a shared fp32 tile that the copy
 * engine adds (steps 2-4), and dK_j, dV_j written once at the end (l.18).
 */
#ifndef PHASE5_BWD_WGMMA_EPILOGUE_CUH
#define PHASE5_BWD_WGMMA_EPILOGUE_CUH
#include "bwd_gpu.cuh"
#include "bwd_wgmma_pipe.cuh"

#if FA_HAVE_WGMMA
/* dQ_i += scale dS K_j in HBM (fp32 atomics: the other K/V blocks of the head add to the
 * same rows): accumulator rows are queries 16 warp + g (+ 8), columns 64 a + 8 n8 + 2 t. */
template <int D, int NH>
__device__ __forceinline__ void add_dq(float *dQi, const float (&dq)[NH][32], int a0, int warp, int g, int t,
                                       int valid, float scale)
{
#pragma unroll
    for (int x = 0; x < 2; x++) {
        const int row = 16 * warp + g + 8 * x;
        if (row >= valid) continue;   /* rows past N_q */
#pragma unroll
        for (int h = 0; h < NH; h++)
#pragma unroll
            for (int n8 = 0; n8 < 8; n8++) {
                float *out = dQi + (size_t)row * D + 64 * (a0 + h) + 8 * n8 + 2 * t;
                const float v0 = dq[h][4 * n8 + 2 * x] * scale, v1 = dq[h][4 * n8 + 2 * x + 1] * scale;
                atomicAdd(reinterpret_cast<float2 *>(out), make_float2(v0, v1));
            }
    }
}

/* This warpgroup's dQ_i share (scaled) into a shared fp32 tile of padded rows
 * (WgDqSplit::PITCH): accumulator rows are queries 16 warp + g (+ 8), columns 64 (a0 + h) +
 * 8 n8 + 2 t; the bulk reduce adds the tile's rows to HBM. ADD: added to what the tile holds
 * (another warpgroup's partial sum of the same columns, written before a barrier): read,
 * add, write back, each element by its owner. */
template <int D, int NH, int PITCH, bool ADD = false>
__device__ __forceinline__ void store_dq(unsigned char *tile, const float (&dq)[NH][32], int a0, int warp, int g, int t,
                                         float scale)
{
#pragma unroll
    for (int x = 0; x < 2; x++) {
        unsigned char *row = tile + (16 * warp + g + 8 * x) * PITCH;
#pragma unroll
        for (int h = 0; h < NH; h++)
#pragma unroll
            for (int n8 = 0; n8 < 8; n8++) {
                float2 *at = (float2 *)(row + 4 * (64 * (a0 + h) + 8 * n8 + 2 * t));
                const float2 o = ADD ? *at : make_float2(0.0f, 0.0f);
                *at = make_float2(fmaf(dq[h][4 * n8 + 2 * x], scale, o.x), fmaf(dq[h][4 * n8 + 2 * x + 1], scale, o.y));
            }
    }
}

/* Alg. 2 l.18: this thread's rows of dK_j = scale dS^T Q and dV_j, written once (keys
 * key0, key0 + 8 of the block; those past N_kv not written); a block no query row sees
 * (no steps) writes zeros */
template <int D>
__device__ __forceinline__ void store_dkdv(float *dKg, float *dVg, const float (&dk)[D / 64][32],
                                           const float (&dv)[D / 64][32], const attn_problem_t &p, size_t kv_off,
                                           int j0, int key0, int t)
{
#pragma unroll
    for (int x = 0; x < 2; x++) {
        const int key = j0 + key0 + 8 * x;
        if (key >= p.N_kv) continue;
        const size_t at = kv_off + (size_t)key * D + 2 * t;
#pragma unroll
        for (int a = 0; a < D / 64; a++)
#pragma unroll
            for (int n8 = 0; n8 < 8; n8++) {
                const int c = 64 * a + 8 * n8;
                *(float2 *)(dKg + at + c) = make_float2(dk[a][4 * n8 + 2 * x] * p.scale, dk[a][4 * n8 + 2 * x + 1] * p.scale);
                *(float2 *)(dVg + at + c) = make_float2(dv[a][4 * n8 + 2 * x], dv[a][4 * n8 + 2 * x + 1]);
            }
    }
}
#endif
#endif
