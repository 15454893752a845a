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
#endif
