/* fp8.c - FP8 E4M3 on the host (fp8.h): bit-exact conversions, round to nearest even. */
#include "fp8.h"
#include <math.h>
#include "rng.h"

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

void fp8_hadamard_rows(float *x, size_t rows, int d, const float *sign)
{
    const float norm = 1.0f / sqrtf((float)d);
    for (size_t r = 0; r < rows; r++) {
        float *v = x + r * (size_t)d;
        for (int k = 0; k < d; k++) v[k] *= sign[k];
        for (int h = 1; h < d; h *= 2)            /* log2 d butterflies: (a, b) -> (a + b, a - b) */
            for (int i = 0; i < d; i += 2 * h)
                for (int k = i; k < i + h; k++) {
                    const float a = v[k], b = v[k + h];
                    v[k] = a + b;
                    v[k + h] = a - b;
                }
        for (int k = 0; k < d; k++) v[k] *= norm;
    }
}

void fp8_signs(uint64_t seed, int d, float *sign)
{
    rng_t r;
    rng_seed(&r, seed);
    for (int k = 0; k < d; k++) sign[k] = rng_u64(&r) & 1 ? 1.0f : -1.0f;
}

void fp8_quantise(float *x, size_t n, int d, int tile, int per_tensor, float *scale)
{
    const size_t tiles = (n + tile - 1) / tile;
    float amax_all = 0;
    for (size_t i = 0; i < n * d; i++) amax_all = fmaxf(amax_all, fabsf(x[i]));
    for (size_t t = 0; t < tiles; t++) {
        const size_t r0 = t * tile, r1 = r0 + tile < n ? r0 + tile : n;
        float amax = 0;
        for (size_t i = r0 * d; i < r1 * d; i++) amax = fmaxf(amax, fabsf(x[i]));
        if (per_tensor) amax = amax_all;
        const float s = amax > 0 ? amax / E4M3_MAX : 1.0f;
        scale[t] = s;
        for (size_t i = r0 * d; i < r1 * d; i++) x[i] = e4m3_round(x[i] / s);
    }
}

void fp8_transpose_keys(const uint8_t *v8, int n_kv, int d, uint8_t *v8t)
{
    const int pad = fp8_pad16(n_kv);
    for (int n = 0; n < d; n++)
        for (int pos = 0; pos < pad; pos++) {
            const int key = fp8_key_at(pos);
            v8t[(size_t)n * pad + pos] = key < n_kv ? v8[(size_t)key * d + n] : 0;
        }
}
