/* rng.h - a small seeded generator (splitmix64 -> xoshiro256**), normal by Box-Muller.
 * Same seed, same numbers, on every machine: results are reproducible. */
#ifndef COMMON_RNG_H
#define COMMON_RNG_H
#include <stdint.h>

typedef struct { uint64_t s[4]; int has_spare; double spare; } rng_t;

void     rng_seed(rng_t *r, uint64_t seed);
uint64_t rng_u64(rng_t *r);
double   rng_uniform(rng_t *r);   /* in (0, 1): never 0, so log() is safe */
double   rng_normal(rng_t *r);    /* N(0, 1) by Box-Muller                */
#endif
