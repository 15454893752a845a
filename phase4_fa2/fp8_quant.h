/* fp8_quant.h - FlashAttention-3's FP8 pre-pass on the GPU (chapter 4b, "FP8"): Q, K and V
 * from fp16 to e4m3 with one scale per tile, Q and K first multiplied by the random-sign
 * Hadamard matrix M = diag(sign) H / sqrt(d) when asked (incoherent processing).
 *
 * It is the CPU model's quantisation (common/fp8.c: fp8_quantise, fp8_hadamard_rows) on the GPU, operation for
 * operation: the same butterflies in the same order, the same division by the same scale,
 * the same round-to-nearest-even saturating conversion. So its bytes and scales must EQUAL
 * the CPU model's, bit for bit (build/test_fp8_quant; tools/mma_emu/run.sh fp8q without a
 * GPU).
 *
 * Layouts (device): q8 [B][H][N_q][d], k8 and v8 [B][H_kv][N_kv][d] bytes, the inputs' own
 * order; sq [B][H][ceil(N_q / Br)], sk and sv [B][H_kv][ceil(N_kv / Bc)] fp32 scales, each
 * amax / 448 of its tile (1 for an all-zero tile). */
#ifndef PHASE4_FP8_QUANT_H
#define PHASE4_FP8_QUANT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint8_t *q8, *k8, *v8;   /* e4m3 */
    float *sq, *sk, *sv;     /* one scale a tile */
} fp8_tensors_t;

/* The pre-pass's tiles: rows of a head (N_q or N_kv) in tiles of `tile` rows. */
static inline size_t fp8_tiles(int rows, int tile) { return (size_t)(rows + tile - 1) / tile; }

/* Quantise q (fp16, [B][H][N_q][d]) and k, v (fp16, [B][H_kv][N_kv][d]) into out (device
 * buffers of the sizes above), asynchronously. hadamard: Q and K times M first, with sign
 * (device, d floats of +-1). d a power of 2 from 32 to 256. Returns 0, or -1 when d is not
 * one the kernel is built for. */
int fp8_quant_gpu(const attn_problem_t *p, const void *q, const void *k, const void *v, int Br, int Bc, bool hadamard,
                  const float *sign, const fp8_tensors_t *out);

/* Its HBM bytes: each fp16 element read once (the second pass over a tile reads it from L2:
 * one tile is at most 64 KiB), each e4m3 byte and each scale written once. */
double fp8_quant_hbm_bytes(const attn_problem_t *p, int Br, int Bc);

#ifdef __cplusplus
}
#endif
#endif
