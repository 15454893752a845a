/* fp8.c - FP8 E4M3 on the host (fp8.h): bit-exact conversions, round to nearest even. */
#include "fp8.h"
#include <math.h>

float e4m3_to_f32(uint8_t b)
{
    const int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    if (e == 15 && m == 7) return NAN;
    const float mag = e == 0 ? ldexpf((float)m, -9)                 /* 2^-6 m / 8   */
                             : ldexpf((float)(8 + m), e - 10);       /* 2^(e-7) (1 + m/8) */
    return s ? -mag : mag;
}

uint8_t f32_to_e4m3(float f)
{
    if (isnan(f)) return 0x7f;
    const uint8_t sign = signbit(f) ? 0x80 : 0;
    float a = fabsf(f);
    if (a >= E4M3_MAX) return sign | 0x7e;              /* saturate: 448 */
    /* the quantum of a's binade: 2^(e - 3) for a normal a in [2^e, 2^(e+1)), 2^-9 below 2^-6 */
    int e;
    frexpf(a, &e);                                       /* a = f 2^e, f in [0.5, 1) */
    e -= 1;                                              /* a in [2^e, 2^(e+1)) */
    if (e < -6) e = -6;
    const float q = ldexpf(1.0f, e - 3);
    const float n = nearbyintf(a / q);                   /* ties to even (the default rounding mode) */
    const float r = n * q;                               /* may round up into the next binade, or to 448 */
    if (r >= E4M3_MAX) return sign | 0x7e;
    if (r == 0) return sign;
    int re;
    frexpf(r, &re);
    re -= 1;
    if (re < -6) return sign | (uint8_t)(int)(r / ldexpf(1.0f, -9));            /* subnormal: m = r / 2^-9 */
    const int m = (int)(r / ldexpf(1.0f, re - 3)) - 8;                            /* 0 .. 7 */
    return sign | (uint8_t)((re + 7) << 3) | (uint8_t)m;
}
