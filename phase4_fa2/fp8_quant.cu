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
 * result is the CPU's bit for bit.
 *
 * V transposed (v8t, when asked): pass 2 also drops each byte into a shared-memory copy of
 * the tile laid out as v8t holds it, then the block writes v8t's d rows of the tile, each a
 * run of contiguous bytes (what TMA will read back):
 *
 *   pass 2: lane l, row r (key r)        staged [n][STAGE_ROW]               v8t (global)
 *   byte of column n = l + 32 k   ->     row n, byte fp8_pos_of(r) - r0  ->  row n, bytes [r0, r0 + tile)
 *   keys r1 .. r0 + tile - 1 (past N_kv): 0x00                               one 4-byte word a thread
 *
 * A lane's K bytes land in K different rows of `staged`. With rows of 128 + 4 bytes, lane l's
 * byte is in bank (33 l + const) % 32: the 32 lanes hit 32 banks. Reading a row back, a warp
 * takes 32 consecutive words: conflict free too, and 128 contiguous bytes of v8t a store. */
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include "fp8.h"
#include "fp8_quant.h"
#include "cuda_check.cuh"

#define QTHREADS 128
#define QWARPS (QTHREADS / 32)
#define E4M3_MAX_F 448.0f
#define STAGE_ROW (FP8_V8T_BC_MAX + 4)   /* bytes: + 4 spreads a warp's column bytes over the banks */

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

/* Tile blockIdx.x of head blockIdx.y: rows [t tile, (t + 1) tile) of `rows`. TRANS: also
 * x8t [heads][D][rows_pad], the tile's keys transposed and permuted (fp8_quant.h; tile a
 * multiple of 32 up to FP8_V8T_BC_MAX, rows_pad = fp8_pad16(rows)). */
template <int D, bool HAD, bool TRANS>
__global__ void __launch_bounds__(QTHREADS)
fp8_quant_kernel(const __half *x, int rows, int tile, const float *sign, uint8_t *x8, float *scale, uint8_t *x8t,
                 int rows_pad)
{
    constexpr int K = D / 32;
    __shared__ float warp_max[QWARPS];
    __shared__ uint32_t staged_words[TRANS ? D * STAGE_ROW / 4 : 1];   /* words: 4-byte aligned rows */
    uint8_t *staged = (uint8_t *)staged_words;
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
        const int pos = fp8_pos_of(r) - r0;   /* r0 is a multiple of 32: the tile's own positions */
#pragma unroll
        for (int k = 0; k < K; k++) {   /* round to nearest even, saturated at +-448 */
            const uint8_t b = (uint8_t)__nv_cvt_float_to_fp8(__fdiv_rn(v[k], s), __NV_SATFINITE, __NV_E4M3);
            out[lane + 32 * k] = b;
            if constexpr (TRANS) staged[(lane + 32 * k) * STAGE_ROW + pos] = b;
        }
    }
    if constexpr (TRANS) {
        /* keys r1 .. r0 + tile - 1 are past N_kv: 0x00 (+0), so that P = 0 times them is 0 */
        for (int i = threadIdx.x; i < (r0 + tile - r1) * D; i += QTHREADS)
            staged[(i % D) * STAGE_ROW + fp8_pos_of(r1 + i / D) - r0] = 0;
        __syncthreads();
        /* v8t's positions [r0, min(r0 + tile, rows_pad)) of each of the D rows: a multiple of
         * 16 bytes (tile of 32 n, rows_pad of 16 n) from a 16-byte aligned start */
        const int words = (min(r0 + tile, rows_pad) - r0) / 4;
        uint8_t *dst = x8t + (size_t)blockIdx.y * D * rows_pad + r0;
        for (int i = threadIdx.x; i < D * words; i += QTHREADS) {
            const int n = i / words, w = i % words;
            *(uint32_t *)(dst + (size_t)n * rows_pad + 4 * w) = staged_words[n * (STAGE_ROW / 4) + w];
        }
    }
}

/* x8t: V's transposed copy too (V only: never with had). */
template <int D>
static void quant_one(const __half *x, int heads, int rows, int tile, bool had, const float *sign, uint8_t *x8, float *scale,
                      uint8_t *x8t = nullptr)
{
    const dim3 grid((unsigned)fp8_tiles(rows, tile), (unsigned)heads);
    if (x8t) fp8_quant_kernel<D, false, true><<<grid, QTHREADS>>>(x, rows, tile, sign, x8, scale, x8t, fp8_pad16(rows));
    else if (had) fp8_quant_kernel<D, true, false><<<grid, QTHREADS>>>(x, rows, tile, sign, x8, scale, nullptr, 0);
    else fp8_quant_kernel<D, false, false><<<grid, QTHREADS>>>(x, rows, tile, sign, x8, scale, nullptr, 0);
    CUDA_CHECK_LAUNCH();
}

template <int D>
static void quant_all(const attn_problem_t *p, const void *q, const void *k, const void *v, int Br, int Bc, bool had,
                      const float *sign, const fp8_tensors_t *o)
{
    quant_one<D>((const __half *)q, p->B * p->H, p->N_q, Br, had, sign, o->q8, o->sq);
    quant_one<D>((const __half *)k, p->B * p->H_kv, p->N_kv, Bc, had, sign, o->k8, o->sk);
    quant_one<D>((const __half *)v, p->B * p->H_kv, p->N_kv, Bc, false, sign, o->v8, o->sv, o->v8t);   /* V: no M (it is not multiplied by K) */
}

extern "C" int fp8_quant_gpu(const attn_problem_t *p, const void *q, const void *k, const void *v, int Br, int Bc,
                             bool hadamard, const float *sign, const fp8_tensors_t *out)
{
    if (out->v8t && (Bc % 32 != 0 || Bc > FP8_V8T_BC_MAX)) return -1;   /* whole groups of 32 keys, staged tiles */
    switch (p->d) {
    case 32:  quant_all<32>(p, q, k, v, Br, Bc, hadamard, sign, out); return 0;
    case 64:  quant_all<64>(p, q, k, v, Br, Bc, hadamard, sign, out); return 0;
    case 128: quant_all<128>(p, q, k, v, Br, Bc, hadamard, sign, out); return 0;
    case 256: quant_all<256>(p, q, k, v, Br, Bc, hadamard, sign, out); return 0;
    default:  return -1;
    }
}

extern "C" double fp8_quant_hbm_bytes_v8t(const attn_problem_t *p, int Br, int Bc, bool with_v8t)
{
    const double q = (double)p->B * p->H * p->N_q * p->d, kv = (double)p->B * p->H_kv * p->N_kv * p->d;
    const double scales = (double)p->B * p->H * fp8_tiles(p->N_q, Br) + 2.0 * p->B * p->H_kv * fp8_tiles(p->N_kv, Bc);
    const double v8t = with_v8t ? (double)p->B * p->H_kv * p->d * fp8_pad16(p->N_kv) : 0.0;
    return 2.0 * (q + 2 * kv) + (q + 2 * kv) + 4.0 * scales + v8t;   /* fp16 read, e4m3 written, fp32 scales written */
}

extern "C" double fp8_quant_hbm_bytes(const attn_problem_t *p, int Br, int Bc)
{
    return fp8_quant_hbm_bytes_v8t(p, Br, Bc, false);
}
