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
 * amax / 448 of its tile (1 for an all-zero tile).
 *
 * Optionally also v8t [B][H_kv][d][N_kv_pad] bytes, N_kv_pad = fp8_pad16(N_kv): V's bytes
 * (v8's, scaled by the same sv) for an FP8 wgmma's O += P V, whose B operand must be K-major
 * (the keys contiguous for each of the d columns), with the keys permuted in groups of 32 so
 * that P needs no shuffle from S's accumulator to wgmma's register A:
 *
 *   v8t row n of a head (column n of V), one group of 32 keys:
 *     position  0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15   16 .. 31
 *     key       0  1  8  9  2  3 10 11  4  5 12 13  6  7 14 15   16 + the same
 *   group grp: positions and keys + 32 grp; byte 0x00 where the key is >= N_kv
 *
 * position 32 grp + kappa holds key 32 grp + fp8_key_at(kappa): the picture and the reason are
 * at fp8_key_at in common/fp8.h; common/fp8.c's fp8_transpose_keys is the CPU model. */
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
    uint8_t *v8t;            /* V transposed and permuted (above); NULL: not written */
} fp8_tensors_t;

/* The pre-pass's tiles: rows of a head (N_q or N_kv) in tiles of `tile` rows. */
static inline size_t fp8_tiles(int rows, int tile) { return (size_t)(rows + tile - 1) / tile; }

/* v8t's tiles of Bc keys are staged whole in shared memory (d rows of at most this many
 * bytes, 33 KiB at d = 256), and a tile must hold whole groups of 32 keys (a group's keys
 * are permuted among its positions): with v8t, Bc must be a multiple of 32 up to this. */
#define FP8_V8T_BC_MAX 128

/* Quantise q (fp16, [B][H][N_q][d]) and k, v (fp16, [B][H_kv][N_kv][d]) into out (device
 * buffers of the sizes above), asynchronously. hadamard: Q and K times M first, with sign
 * (device, d floats of +-1). d a power of 2 from 32 to 256. Returns 0, or -1, having
 * launched nothing, when d is not one the kernel is built for, or out->v8t is asked for
 * with a Bc that is not a multiple of 32 up to FP8_V8T_BC_MAX. */
int fp8_quant_gpu(const attn_problem_t *p, const void *q, const void *k, const void *v, int Br, int Bc, bool hadamard,
                  const float *sign, const fp8_tensors_t *out);

/* Its HBM bytes: each fp16 element read once (the second pass over a tile reads it from L2:
 * one tile is at most 64 KiB), each e4m3 byte and each scale written once; with_v8t: v8t's
 * B H_kv d N_kv_pad bytes written too (staged on chip: nothing more is read). */
double fp8_quant_hbm_bytes_v8t(const attn_problem_t *p, int Br, int Bc, bool with_v8t);
/* The same without v8t. */
double fp8_quant_hbm_bytes(const attn_problem_t *p, int Br, int Bc);

#ifdef __cplusplus
}
#endif
#endif
