#include "rng.h"
#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void rng_seed(rng_t *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
    r->has_spare = 0;
    r->spare = 0.0;
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_u64(rng_t *r)  /* xoshiro256** */
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double rng_uniform(rng_t *r)
{
    /* 53 random bits, shifted by half a step so the result is never 0 or 1 */
    return ((double)(rng_u64(r) >> 11) + 0.5) * 0x1.0p-53;
}

double rng_normal(rng_t *r)
{
    if (r->has_spare) { r->has_spare = 0; return r->spare; }
    double u1 = rng_uniform(r), u2 = rng_uniform(r);
    double radius = sqrt(-2.0 * log(u1));
    double angle  = 6.283185307179586476925 * u2;  /* 2 pi */
    r->spare = radius * sin(angle);
    r->has_spare = 1;
    return radius * cos(angle);
}
