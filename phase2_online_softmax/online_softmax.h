/* online_softmax.h - phase 2: softmax computed online, 3-pass -> 2-pass -> 1-pass.
 *
 * Softmax of one row x[0..n):  y_j = e^{x_j - m} / l,  m = max_j x_j,  l = sum_j e^{x_j - m}.
 *
 *   naive    (2 loads + 1 store = 3 accesses/element): l = sum e^{x_j}; y = e^{x_j}/l.
 *            Overflows in fp32 once x reaches ln(FLT_MAX) = 88.7: l = inf, y = NaN or 0.
 *   safe     (3 loads + 1 store = 4): pass 1 m; pass 2 l = sum e^{x_j - m}; pass 3 y.
 *   online   (2 loads + 1 store = 3): pass 1 keeps m and l together,
 *                m_i = max(m_{i-1}, x_i),  l_i = l_{i-1} e^{m_{i-1} - m_i} + e^{x_i - m_i}
 *            (Milakov & Gimelshein 2018, "Online normalizer calculation for softmax",
 *            Alg. 3); pass 2 writes y.
 *   1-pass attention: with values v_j the weighted sum is carried along too,
 *                o_i = o_{i-1} e^{m_{i-1} - m_i} + e^{x_i - m_i} v_i,   O = o_n / l_n,
 *            so O = softmax(x) V comes out of ONE pass over the keys, no row of P stored.
 *   merge:   two partial states over disjoint key sets combine exactly:
 *                m = max(m1, m2), l = l1 e^{m1-m} + l2 e^{m2-m}, o = o1 e^{m1-m} + o2 e^{m2-m}
 *            (the operator FlashAttention's outer loop and Flash-Decoding's combine use).
 *
 * Conventions. A masked score is -inf and adds nothing. A row whose every score is -inf
 * (nothing visible) gives softmax weights 0, and in attention O = 0 and L = +inf - the
 * project-wide convention of common/problem.h, so that the backward's P = e^{S - L} = 0.
 * Only the naive softmax makes NaN (that is its lesson).
 *
 * Access counts: every CPU function reads and writes its "HBM" row through the meter
 * (common/hbm.h), one 256-element tile at a time, so accesses per element =
 * (bytes read + bytes written) / (4 n) is counted, not assumed; the tests assert 3, 4, 3.
 */
#ifndef PHASE2_ONLINE_SOFTMAX_H
#define PHASE2_ONLINE_SOFTMAX_H
#include <stdint.h>
#include <stdio.h>
#include "hbm.h"
#include "problem.h"
#include "ref.h"

#ifdef __cplusplus
extern "C" {
#endif

#define P2_TILE 256      /* elements of a row held locally at once (the "SRAM" tile)  */
#define P2_MAX_D 256     /* largest head dimension (common/cli.h accepts up to 256)     */

/* ---- softmax of one row: y[0..n) from x[0..n), counted through the meter ---------- */
void softmax_naive_cpu (const float *x, float *y, int n, hbm_meter_t *meter);
REF_PROTO(void, softmax_safe_cpu, (const float *x, float *y, int n, hbm_meter_t *meter));
void softmax_online_cpu(const float *x, float *y, int n, hbm_meter_t *meter);

/* The online normaliser's step: fold score x into the running (m, l). x = -inf is a
 * masked score and changes nothing. Start from m = -inf, l = 0. */
REF_PROTO(void, online_ml_update, (float *m, float *l, float x));

/* ---- the running state of 1-pass attention for one query row ---------------------- */
typedef struct {
    float m;              /* running max of the scores seen           (-inf: none yet) */
    float l;              /* running sum of e^{x_j - m}                                 */
    float o[P2_MAX_D];    /* running sum of e^{x_j - m} v_j, NOT yet divided by l       */
} online_state_t;

REF_PROTO(void, online_state_init, (online_state_t *s, int d));
/* Fold in one key: its score x and its value row v[0..d). */
REF_PROTO(void, online_state_push, (online_state_t *s, float x, const float *v, int d));
/* a <- a (+) b: the state of the union of the two key sets. */
REF_PROTO(void, online_state_merge, (online_state_t *a, const online_state_t *b, int d));
/* O = o / l and L = m + ln l; a state that saw no key gives O = 0, L = +inf. */
REF_PROTO(void, online_state_finish, (const online_state_t *s, int d, float *o, float *L));

/* ---- 1-pass attention on the CPU ------------------------------------------------- */
/* Every query row streams over its visible keys once (causal, GQA as in problem.h):
 * reads q (fp16), each visible k_j and v_j (fp16), writes O (fp32) and L (fp32) through
 * the meter; counted bytes equal online_attn_traffic(p). O [B][H][N_q][d], L [B][H][N_q]. */
REF_PROTO(void, online_attn_cpu, (const attn_inputs_t *in, float *O, float *L, hbm_meter_t *meter));
/* The same keys cut into blocks of Bc, one state per block, the block states merged in
 * key order (reverse = 1: last block first): FlashAttention's outer loop in miniature.
 * Same bytes as online_attn_cpu. */
void online_attn_split_cpu(const attn_inputs_t *in, int Bc, int reverse,
                           float *O, float *L, hbm_meter_t *meter);
/* sum over rows (b, h, i) of 2d + 4d * visible(i) + 4d + 4 bytes. */
double online_attn_traffic(const attn_problem_t *p);
/* 1-pass attention's O as the reference the later phases check against: a malloc'd
 * [B][H][N_q][d] array (the caller frees it), or NULL when the problem has more than
 * max_flops forward FLOPs (the CPU would take too long). */
float *online_attn_reference(const attn_inputs_t *in, double max_flops);

/* The worked demonstrations (demos.c), each true when it shows what the chapter says:
 * the streaming softmax of scores [3, 1, 2] step by step (printed unless quiet), equal to
 * the oracle and the published weights [0.665, 0.090, 0.245]; and scores c + u for
 * c = 0..120, where the naive softmax overflows past c ~ 88.7 and the safe and online
 * ones stay within 1e-5 of the oracle (one CSV row per c into csv, which may be NULL). */
bool online_streaming_example(bool quiet);
bool softmax_overflow_demo(uint64_t seed, FILE *csv);

/* ---- the GPU softmax benchmark's input, the same on host and device --------------- */
/* x[idx] uniform in [-8, 8), from a hash of (seed, idx): the device fills a matrix of
 * any size without an upload, and the host recomputes any sampled row exactly (every
 * step is an integer op or an exact fp32 op). */
#ifdef __CUDACC__
#define P2_HD __host__ __device__
#else
#define P2_HD
#endif
static inline P2_HD float softmax_input(uint64_t seed, uint64_t idx)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + idx + 1;   /* splitmix64's mix */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z >> 40) * (16.0f / 16777216.0f) - 8.0f;
}

/* ---- GPU row softmax (softmax.cu), device pointers, rows x n fp32 row-major -------- */
/* One thread block per row, 16-byte loads when n % 4 == 0 (scalar loads otherwise).
 *   safe:   3 passes over the row in global memory (max; sum; normalise + store)
 *   online: 2 passes (running max and sum together; normalise + store)            */
void softmax_safe_gpu  (const float *x, float *y, int rows, int n);
void softmax_online_gpu(const float *x, float *y, int rows, int n);
/* Fill x[rows][n] with softmax_input(seed, r * n + j). */
void softmax_fill_gpu(float *x, int rows, int n, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
