/* fp8.h - FP8 E4M3 (the OCP 8-bit float of Hopper's FP8 tensor cores) on the host.
 *
 *   sign | exponent (4 bits, bias 7) | mantissa (3 bits)
 *   normal:    (-1)^s 2^(e - 7) (1 + m / 8),  e = 1 .. 15 (e = 15, m = 7 is NaN)
 *   subnormal: (-1)^s 2^-6 (m / 8),           e = 0
 * so the largest value is 448 (e = 15, m = 6), the smallest normal 2^-6 = 0.015625 and the
 * smallest subnormal 2^-9 = 0.001953125: 3 bits of mantissa, 8 values an octave. E4M3 has
 * no infinity. Conversion rounds to nearest, ties to even, and SATURATES: anything beyond
 * 448 becomes +-448 (the GPU's cvt.rn.satfinite.e4m3x2.f32), NaN stays NaN. */
#ifndef COMMON_FP8_H
#define COMMON_FP8_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {   /* phase 4's CUDA files call it too */
#endif

#define E4M3_MAX 448.0f

uint8_t f32_to_e4m3(float f);
float   e4m3_to_f32(uint8_t b);
/* Round a float to the nearest E4M3 value (saturated), returned as float. */
static inline float e4m3_round(float f) { return e4m3_to_f32(f32_to_e4m3(f)); }

/* x's rows (rows x d, d a power of 2) <- x_row diag(sign) H / sqrt(d), in place: the fast
 * Walsh-Hadamard transform, d log2 d additions a row. */
void fp8_hadamard_rows(float *x, size_t rows, int d, const float *sign);

/* Quantise rows [0, n) of x (n x d, tiles of `tile` rows) in place to e4m3(x / s) and write
 * each tile's scale s = amax / 448 (1 for an all-zero tile); per_tensor: one scale for all.
 * phase 4's fp8_quant.cu does the same on the GPU, bit for bit. */
void fp8_quantise(float *x, size_t n, int d, int tile, int per_tensor, float *scale);
/* The d signs (+-1) of incoherent processing drawn from seed, as phase 4's fa3_fp8_cpu draws them. */
void fp8_signs(uint64_t seed, int d, float *sign);

/* V for an FP8 wgmma's O += P V: transposed, and its keys permuted within groups of 32.
 *
 * FP8 wgmma takes K-major operands only, and in P V the reduction runs over the keys, so
 * V's B operand must hold each of its d columns with the keys contiguous:
 *
 *   v8  [N_kv][d]                         v8t [d][N_kv_pad]   (N_kv_pad = fp8_pad16(N_kv))
 *   key 0: v(0,0) v(0,1) .. v(0,d-1)      column 0:   v(k(0),0) v(k(1),0) .. v(k(N_kv_pad-1),0)
 *   key 1: v(1,0) v(1,1) ..               column 1:   v(k(0),1) ..
 *   ..                                    ..          k(pos) = fp8_key_at(pos); 0 where k >= N_kv
 *
 * N_kv_pad is a multiple of 16 because a TMA global stride must be. Why permuted: P comes
 * from the fp32 accumulator of S = Q K^T, and the register A fragment of the FP8 wgmma
 * (k32, per warp 16 rows, lane 4g + t) wants different keys in thread t than S leaves there.
 * For one group of 32 keys:
 *
 *   S's accumulator, thread t, row g:   keys 2t 2t+1 8+2t 9+2t | 16+2t 17+2t 24+2t 25+2t
 *                                         e4m3, four at a time, in order   |
 *   A's registers, thread t:            reg 0 (row g, k 4t..4t+3)  | reg 2 (row g, k 16+4t..)
 *                                       (regs 1, 3: row g+8, the same k and keys)
 *
 * So logical k = kappa of P holds key perm(kappa) (t = 1: kappa 4..7 hold keys 2, 3, 10, 11),
 * and P needs no shuffle if V's row kappa is key perm(kappa)'s: P V = sum_kappa
 * P[:, perm(kappa)] V[perm(kappa), :] is the same sum. With kappa's bits b4 b3 b2 b1 b0:
 *
 *   key at position kappa:  perm(kappa) = b4 b1 b3 b2 b0   (fp8_key_at)
 *   position of key c4..c0: c4 c2 c1 c3 c0                 (fp8_pos_of)
 *   i.e. kappa = 16 h + 4 t + j (j < 4) holds key 16 h + 8 (j >> 1) + 2 t + (j & 1)
 *
 * Bit 4 (and every bit above: the group) stays, so a group's first 16 keys stay in its first
 * 16 positions: padding N_kv to a multiple of 16 is enough. Positions whose key is >= N_kv hold
 * byte 0x00 (+0), so that a kernel multiplying them by P = 0 gets 0, never NaN. */
#ifdef __CUDACC__
#define FP8_HD __host__ __device__   /* the kernel places its bytes with the same rule */
#else
#define FP8_HD
#endif
/* N_kv rounded up to a multiple of 16: v8t's row length in bytes. */
static inline FP8_HD int fp8_pad16(int n) { return (n + 15) / 16 * 16; }
/* The key stored at position pos of v8t's rows (pos may be any position: its group stays). */
static inline FP8_HD int fp8_key_at(int pos)
{
    return (pos & ~15) | (pos & 2) << 2 | (pos & 8) >> 1 | (pos & 4) >> 1 | (pos & 1);   /* b1 -> 3, b3 -> 2, b2 -> 1 */
}
/* Its inverse: the position of key `key` in v8t's rows. */
static inline FP8_HD int fp8_pos_of(int key)
{
    return (key & ~15) | (key & 4) << 1 | (key & 2) << 1 | (key & 8) >> 2 | (key & 1);   /* c2 -> 3, c1 -> 2, c3 -> 1 */
}
/* One head: v8 [n_kv][d] (e4m3 bytes) -> v8t [d][fp8_pad16(n_kv)], keys at fp8_key_at's
 * positions, 0x00 where the key is past n_kv. phase 4's fp8_quant.cu writes the same bytes. */
void fp8_transpose_keys(const uint8_t *v8, int n_kv, int d, uint8_t *v8t);
#ifdef __cplusplus
}
#endif
#endif
