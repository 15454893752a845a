/* fp8_quant.cu - FlashAttention-3's FP8 pre-pass (fp8_quant.h says what and why).
 *
 * One block of 4 warps per tile of `tile` rows of one head. Each warp takes rows warp,
 * warp + 4, ...; lane l holds the row's elements l, l + 32, ..., so that a row is read by
 * the warp in d / 32 coalesced 64-byte pieces. Two passes over the tile:
 *
 *   1. each row times M (when asked), the tile's amax (a warp max, then the block's);
 *   2. the same rows times M again (recomputed: cheaper than holding the tile), divided by
 *      s = amax / 448, converted to e4m3 and written.
 *
 * The fast Walsh-Hadamard transform (common/fp8.c's fp8_hadamard_rows) on a warp's row: at
 * stride h the butterfly pairs element e with e + h (e with bit h clear) and makes
 * (a, b) -> (a + b, a - b). With element e in lane e % 32, register e / 32:
 *
 *   h = 1 .. 16:  the partner is in lane l ^ h, same register  -> __shfl_xor_sync
 *   h = 32 ..:    the partner is in this lane, register k ^ (h / 32)   -> in registers
 *
 *   stride 1:  lane 0 [a0 .. ]   lane 1 [a1 .. ]      lane 0: a0 + a1,  lane 1: a0 - a1
 *   stride 32: lane l [a_l, a_(l+32), ..]             a_l + a_(l+32),   a_l - a_(l+32)
 *
 * Each element goes through the same additions in the same order as on the CPU, so the
 * result is the CPU's bit for bit. */
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include "fp8_quant.h"
#include "cuda_check.cuh"

#define QTHREADS 128
#define QWARPS (QTHREADS / 32)
#define E4M3_MAX_F 448.0f

/* Row r's d values (fp16) into v[d / 32] (lane's elements lane + 32 k), times M when HAD. */
template <int D, bool HAD>
__device__ __forceinline__ void row_values(const __half *row, const float *sign, int lane, float (&v)[D / 32])
{
    constexpr int K = D / 32;
#pragma unroll
    for (int k = 0; k < K; k++) v[k] = __half2float(row[lane + 32 * k]);
    if constexpr (HAD) {
#pragma unroll
        for (int k = 0; k < K; k++) v[k] *= sign[lane + 32 * k];
#pragma unroll
        for (int h = 1; h < 32 && h < D; h *= 2)   /* partners in other lanes */
#pragma unroll
            for (int k = 0; k < K; k++) {
                const float other = __shfl_xor_sync(0xffffffffu, v[k], h);
                v[k] = (lane & h) ? other - v[k] : v[k] + other;   /* high: a - b; low: a + b */
            }
#pragma unroll
        for (int hk = 1; hk < K; hk *= 2)   /* h = 32 hk: partners in this lane's registers */
#pragma unroll
            for (int k = 0; k < K; k++)
                if (!(k & hk)) {
                    const float a = v[k], b = v[k + hk];
                    v[k] = a + b;
                    v[k + hk] = a - b;
                }
        const float norm = 1.0f / sqrtf((float)D);
#pragma unroll
        for (int k = 0; k < K; k++) v[k] *= norm;
    }
}

/* Tile blockIdx.x of head blockIdx.y: rows [t tile, (t + 1) tile) of `rows`. */
template <int D, bool HAD>
__global__ void __launch_bounds__(QTHREADS)
fp8_quant_kernel(const __half *x, int rows, int tile, const float *sign, uint8_t *x8, float *scale)
{
    constexpr int K = D / 32;
    __shared__ float warp_max[QWARPS];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int t = blockIdx.x, r0 = t * tile, r1 = min(r0 + tile, rows);
    const size_t head = (size_t)blockIdx.y * rows * D;
    float v[K];
    float amax = 0.0f;
    for (int r = r0 + warp; r < r1; r += QWARPS) {
        row_values<D, HAD>(x + head + (size_t)r * D, sign, lane, v);
#pragma unroll
        for (int k = 0; k < K; k++) amax = fmaxf(amax, fabsf(v[k]));
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
    if (lane == 0) warp_max[warp] = amax;
    __syncthreads();
    amax = warp_max[0];
#pragma unroll
    for (int w = 1; w < QWARPS; w++) amax = fmaxf(amax, warp_max[w]);
    const float s = amax > 0.0f ? __fdiv_rn(amax, E4M3_MAX_F) : 1.0f;   /* fp8_quantise's s */
    if (threadIdx.x == 0) scale[(size_t)blockIdx.y * gridDim.x + t] = s;
    for (int r = r0 + warp; r < r1; r += QWARPS) {
        row_values<D, HAD>(x + head + (size_t)r * D, sign, lane, v);
        uint8_t *out = x8 + head + (size_t)r * D;
#pragma unroll
        for (int k = 0; k < K; k++)   /* round to nearest even, saturated at +-448 */
            out[lane + 32 * k] = (uint8_t)__nv_cvt_float_to_fp8(__fdiv_rn(v[k], s), __NV_SATFINITE, __NV_E4M3);
    }
}

template <int D>
static void quant_one(const __half *x, int heads, int rows, int tile, bool had, const float *sign, uint8_t *x8, float *scale)
{
    const dim3 grid((unsigned)fp8_tiles(rows, tile), (unsigned)heads);
    if (had) fp8_quant_kernel<D, true><<<grid, QTHREADS>>>(x, rows, tile, sign, x8, scale);
    else fp8_quant_kernel<D, false><<<grid, QTHREADS>>>(x, rows, tile, sign, x8, scale);
    CUDA_CHECK_LAUNCH();
}

template <int D>
static void quant_all(const attn_problem_t *p, const void *q, const void *k, const void *v, int Br, int Bc, bool had,
                      const float *sign, const fp8_tensors_t *o)
{
    quant_one<D>((const __half *)q, p->B * p->H, p->N_q, Br, had, sign, o->q8, o->sq);
    quant_one<D>((const __half *)k, p->B * p->H_kv, p->N_kv, Bc, had, sign, o->k8, o->sk);
    quant_one<D>((const __half *)v, p->B * p->H_kv, p->N_kv, Bc, false, sign, o->v8, o->sv);   /* V: no M (it is not multiplied by K) */
}

extern "C" int fp8_quant_gpu(const attn_problem_t *p, const void *q, const void *k, const void *v, int Br, int Bc,
                             bool hadamard, const float *sign, const fp8_tensors_t *out)
{
    switch (p->d) {
    case 32:  quant_all<32>(p, q, k, v, Br, Bc, hadamard, sign, out); return 0;
    case 64:  quant_all<64>(p, q, k, v, Br, Bc, hadamard, sign, out); return 0;
    case 128: quant_all<128>(p, q, k, v, Br, Bc, hadamard, sign, out); return 0;
    case 256: quant_all<256>(p, q, k, v, Br, Bc, hadamard, sign, out); return 0;
    default:  return -1;
    }
}

extern "C" double fp8_quant_hbm_bytes(const attn_problem_t *p, int Br, int Bc)
{
    const double q = (double)p->B * p->H * p->N_q * p->d, kv = (double)p->B * p->H_kv * p->N_kv * p->d;
    const double scales = (double)p->B * p->H * fp8_tiles(p->N_q, Br) + 2.0 * p->B * p->H_kv * fp8_tiles(p->N_kv, Bc);
    return 2.0 * (q + 2 * kv) + (q + 2 * kv) + 4.0 * scales;   /* fp16 read, e4m3 written, fp32 scales written */
}
