/*
 * rng.h: a small seeded random generator (xoshiro256**, seeded through splitmix64) for
 * shuffling and splitting, and for the random ops (a session's generator, or a seeded node's
 * own).  Its whole state is 4 words, so checkpoints can save it.  Internal header.
 */
#ifndef OG_RNG_H
#define OG_RNG_H

#include <stdint.h>

typedef struct og_rng {
    uint64_t s[4];
} og_rng;

static inline uint64_t og_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline void og_rng_seed(og_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = og_splitmix64(&seed);
}

static inline uint64_t og_rng_next(og_rng *r)
{
    uint64_t *s = r->s;
    uint64_t x = s[1] * 5, result = ((x << 7) | (x >> 57)) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return result;
}

/* Uniform in [0, 1): 53 random bits. */
static inline double og_rng_uniform(og_rng *r)
{
    return (double)(og_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform in [0, n) without modulo bias (n > 0). */
static inline uint64_t og_rng_below(og_rng *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n, x;
    do {
        x = og_rng_next(r);
    } while (x >= limit);
    return x % n;
}

/* Fisher-Yates shuffle of idx[0..n-1]. */
static inline void og_rng_shuffle(og_rng *r, int64_t *idx, int64_t n)
{
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)og_rng_below(r, (uint64_t)i + 1);
        int64_t tmp = idx[i];
        idx[i] = idx[j];
        idx[j] = tmp;
    }
}

#endif
