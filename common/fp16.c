#include "fp16.h"
#include <string.h>

/* binary16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
 * binary32: 1 sign bit, 8 exponent bits (bias 127), 23 mantissa bits. */
uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp  = (x >> 23) & 0xffu;
    uint32_t man  = x & 0x7fffffu;

    if (exp == 0xffu)                                   /* inf or NaN (keep it quiet) */
        return sign | 0x7c00u | (man ? (0x200u | (man >> 13)) : 0u);

    int e = (int)exp - 127 + 15;                        /* rebias */
    if (e >= 31) return sign | 0x7c00u;                 /* overflow -> inf */

    if (e <= 0) {                                       /* subnormal half (or zero) */
        if (e < -10) return sign;                       /* below half the smallest */
        man |= 0x800000u;                               /* the implicit 1 */
        int shift = 14 - e;                             /* 24-bit mantissa -> 10 - e bits */
        uint32_t half = man >> shift;
        uint32_t rem  = man & ((1u << shift) - 1u);
        uint32_t mid  = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;  /* ties to even */
        return sign | (uint16_t)half;                   /* may carry into exponent 1: fine */
    }

    uint32_t half = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem  = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;  /* may carry to inf: right */
    return sign | (uint16_t)half;
}

float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp  = (h >> 10) & 0x1fu;
    uint32_t man  = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        if (man == 0) x = sign;                          /* +-0 */
        else {                                           /* subnormal: normalise */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400u));
            x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (man << 13);            /* inf / NaN */
    } else {
        x = sign | ((exp - 15 + 127) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

void f32_to_f16_array(uint16_t *dst, const float *src, size_t n)
{ for (size_t i = 0; i < n; i++) dst[i] = f32_to_f16(src[i]); }

void f16_to_f32_array(float *dst, const uint16_t *src, size_t n)
{ for (size_t i = 0; i < n; i++) dst[i] = f16_to_f32(src[i]); }
