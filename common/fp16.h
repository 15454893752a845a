/* fp16.h - IEEE 754 binary16 on the host, without compiler extensions.
 * float -> half rounds to nearest, ties to even (what the GPU's __float2half_rn does),
 * handles subnormals, overflow to inf (anything that rounds above 65504) and NaN. */
#ifndef COMMON_FP16_H
#define COMMON_FP16_H
#include <stddef.h>
#include <stdint.h>

uint16_t f32_to_f16(float f);
float    f16_to_f32(uint16_t h);
/* Round a float to the nearest fp16 value, returned as float. */
static inline float f16_round(float f) { return f16_to_f32(f32_to_f16(f)); }

void f32_to_f16_array(uint16_t *dst, const float *src, size_t n);
void f16_to_f32_array(float *dst, const uint16_t *src, size_t n);
#endif
