/* fa2.h - phase 4: FlashAttention-2 forward (Dao 2023, Algorithm 1), Q-outer tiling.
 *
 * For each head, Q is cut into Tr blocks of Br rows (OUTER loop i, one thread block each
 * on the GPU) and K, V into Tc blocks of Bc rows (INNER loop j). A Q block keeps its
 * running output O~_i, m_i, l_i on chip for the whole inner loop:
 *
 *   S_ij = Q_i K_j^T                                   (Alg. 1 l.8)
 *   m_i' = max(m_i, rowmax(S_ij)),  P~_ij = exp(S_ij - m_i')
 *   l_i' = e^(m_i - m_i') l_i + rowsum(P~_ij)          (l.9)
 *   O~_i' = diag(e^(m_i - m_i')) O~_i + P~_ij V_j      (l.10: unnormalised)
 *   after the last j:  O_i = diag(l_i)^-1 O~_i,  L_i = m_i + log(l_i)   (l.12-13)
 *
 * HBM per head: Q_i read once, K_j and V_j once per Q block (only the blocks a causal
 * Q block can see), O_i and L_i written once:
 *   per head = 2 N_q d  (Q, fp16)  +  sum_i 4 d * keys(i)  (K, V fp16)  +  4 N_q (d + 1)  (O, L fp32)
 * where keys(i) is the number of key rows in the K/V blocks Q block i visits (N_kv without
 * a mask). fa2_hbm_bytes() is that formula; the CPU model's meter equals it exactly.
 */
#ifndef PHASE4_FA2_H
#define PHASE4_FA2_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hbm.h"
#include "problem.h"
#include "ref.h"
#include "gpu.h"
#include "fa1.h"          /* fa1_rescale(), fa1_config_fits(): phase 4 links phase 3 */
#include "fa2_blocks.h"
#include "fp8_quant.h"     /* fp8_tensors_t: step 7's inputs */
#include "hopper/steps.h"  /* the Hopper ladder's rows */

#ifdef __cplusplus
extern "C" {
#endif

/* The mma kernel's compile-time variants, for the ablation ladder (fa2_mma.cu). Skipping
 * fully masked blocks is not FA2's own idea (FA1's block-sparse FlashAttention skips zero
 * blocks, Sec. 3.3), so phase 3's fa1-mma skips them too and every FA2 step keeps it.
 * All but FULL run at the ladder's blocks (FA2_LADDER_BLOCKS, fa2_blocks.h):
 *   PERSTEP   FA2's loop order and split-Q, masked K/V blocks skipped, but O_i normalised
 *             at every step as in FA1
 *   DEFERRED  + O~ kept unnormalised, divided by l once at the end
 *   GRID_BH   DEFERRED with the grid ordered (B x H, num_m_blocks), not (num_m_blocks, B x H)
 *   NOSKIP    DEFERRED without the skip: every K/V block, masked elementwise
 *   FULL      DEFERRED at the table's blocks (FA2_MMA_TABLE): this is fa2-mma */
typedef enum { FA2_PERSTEP = 0, FA2_DEFERRED = 1, FA2_FULL = 2, FA2_GRID_BH = 3, FA2_NOSKIP = 4 } fa2_variant_t;

/* The blocks of the mma kernel (fa2_mma.cu) for head dimension d: the row of
 * FA2_MMA_TABLE (fa2_blocks.h), Br = 16 FA2_WARPS_OF(d) MT query rows, Bc keys. The CPU model
 * and the driver use the same blocks so that the model's bytes are the kernel's. A d the
 * kernel is not built for gets the d = 64 row's blocks (the CPU model runs every d). */
static inline attn_blocks_t fa2_mma_blocks(int d)
{
    attn_blocks_t b = { 16 * FA2_WARPS_OF(64) * FA2_D64_MT, FA2_D64_BC };
#define FA2_BLOCKS_ROW(D, MT, BC, STAGES, LADDER) \
    if (d == (D)) { b.Br = 16 * FA2_WARPS_OF(D) * (MT); b.Bc = (BC); }
    FA2_MMA_TABLE(FA2_BLOCKS_ROW)
#undef FA2_BLOCKS_ROW
    return b;
}
/* The blocks variant v runs at (the ladder's for all but FA2_FULL, where d has a ladder). */
static inline attn_blocks_t fa2_mma_variant_blocks(int d, fa2_variant_t v)
{
    attn_blocks_t b = fa2_mma_blocks(d);
#define FA2_LADDER_ROW(D, MT, BC, STAGES) \
    if (v != FA2_FULL && d == (D)) { b.Br = 16 * FA2_WARPS_OF(D) * (MT); b.Bc = (BC); }
    FA2_LADDER_BLOCKS(FA2_LADDER_ROW)
#undef FA2_LADDER_ROW
    return b;
}
/* Head dimensions the mma kernel is built for (the rows of FA2_MMA_TABLE); needs no GPU. */
static inline bool fa2_mma_supports(int d)
{
#define FA2_SUPPORTS_ROW(D, MT, BC, STAGES, LADDER) if (d == (D)) return true;
    FA2_MMA_TABLE(FA2_SUPPORTS_ROW)
#undef FA2_SUPPORTS_ROW
    return false;
}

/* The K/V blocks [0, n) Q block i (rows i Br .. min(N_q, (i+1) Br) - 1) must visit:
 * all Tc without a mask; with the causal mask only up to the block holding the last
 * key its last row sees (0 when every row of the block is fully masked). */
REF_PROTO(int, fa2_kv_blocks, (const attn_problem_t *p, int i, int Br, int Bc));
/* What a forward kernel's visit counters must read (common/driver.h, drv_visits_t): Q block
 * i of Br rows visits B H REF(fa2_kv_blocks)(p, i, Br, Bc) K/V blocks of Bc keys over all
 * heads (skip false: all Tc, a kernel without the causal skip). exercise: the kernel's
 * causal range (blamed on a mismatch), or NULL. Free with drv_visits_free. */
struct drv_visits;
void fa2_visits_want(struct drv_visits *v, const attn_problem_t *p, attn_blocks_t b, bool skip,
                     const char *exercise);
/* Does block (i, j) hold any masked entry (causal diagonal or a key past N_kv)? Only
 * those need the elementwise mask. */
bool fa2_block_needs_mask(const attn_problem_t *p, int i, int j, int Br, int Bc);
/* Check fa2_kv_blocks against a brute-force scan of the causal mask of p's shape (the
 * blocks that hold a visible entry): 0, or -1 with the first wrong Q block in why
 * (fa2_check.c). */
int fa2_check_causal_range(const attn_problem_t *p, attn_blocks_t bl, char *why, size_t len);

/* FlashMask's two rules as the CPU model writes them (the exercises fa2.mask_tile and
 * fa2.mask_element, fa2_cpu.c): the class of the tile of Q block i (qr rows of Br) and
 * column block j, from the blocks' min/max; is row `row` in one of key column `key`'s
 * masked runs? */
mask_tile_t fa2_mask_tile(const mask_blocks_t *mb, int i, int qr, int j, int Br);
bool fa2_mask_hidden(const attn_mask_t *m, int row, int key);
/* Unit checks of one exercise each, on shapes and masks of their own (fa2_check.c), so that
 * a mistake in one is named alone (common/check.h, ex_unit): fa2.causal_range over tails,
 * N_q != N_kv and every diagonal offset; fa2.mask_element and fa2.mask_tile (its classes
 * tile by tile, and the census) against mask.h's rules on random two-run masks whose runs
 * start and end anywhere (the shipped masks start the upper run at row 0 or G only).
 * 0, or -1 with the first mistake in why. */
int fa2_unit_causal_range(char *why, size_t len);
int fa2_unit_mask_element(char *why, size_t len);
int fa2_unit_mask_tile(char *why, size_t len);
/* Alg. 1 l.10, l.12 and l.13 as the CPU model writes them (the exercises fa2.rescale,
 * fa2.normalise, fa2.lse): one element of O~ rescaled, a row divided by l, L from m and l;
 * and their unit checks against the reference library's copies (l = 0 rows included). */
REF_PROTO(float, fa2_rescale_o, (float o, float alpha, float pv));
REF_PROTO(void, fa2_normalise_row, (float *o, float l, int d));
REF_PROTO(float, fa2_lse, (float m, float l));
int fa2_unit_rescale(char *why, size_t len);
int fa2_unit_normalise(char *why, size_t len);
int fa2_unit_lse(char *why, size_t len);

/* SRAM of the CPU model: Q_i, O~_i (Br x d), K_j, V_j (Bc x d), S_ij (Br x Bc), m_i, l_i. */
size_t fa2_sram_bytes(int d, attn_blocks_t b);

/* The closed form above (bytes, all B x H heads), split by tensor. */
typedef struct { double read_q, read_kv, write_o, write_l, read_mask, total; } fa2_traffic_t;
fa2_traffic_t fa2_hbm_traffic(const attn_problem_t *p, attn_blocks_t b);
REF_PROTO(double, fa2_hbm_bytes, (const attn_problem_t *p, attn_blocks_t b));

/* Non-matmul floating-point operations (adds, multiplies, max, exp, divide, log; an exp
 * counts one) outside the two matmuls, counted line by line (docs/04_fa2.md):
 *   FA1 (Alg. 1 of FA1, every K/V block, O normalised at every step), per row and block
 *       of kr keys: 5 kr + 4 d + 10;  per row at the end: 2 (L = m + log l)
 *   FA2 per row and visited block:   5 kr + d + 5;    per row at the end: d + 3
 * fa2_cpu() counts its own as it runs (== fa2_nonmatmul_flops); FA1's is the formula
 * of phase 3's fa1_step with fa1's Bc. */
double fa1_nonmatmul_flops(const attn_problem_t *p, int Bc);
double fa2_nonmatmul_flops(const attn_problem_t *p, attn_blocks_t b);

/* The CPU tile model of FA2's forward with blocks b. Reads in->q_h, k_h, v_h (fp16) via
 * the meter, writes O [B][H][N_q][d] and L [B][H][N_q] (fp32). meter and flops may be
 * NULL. Returns the SRAM peak in bytes (== fa2_sram_bytes). */
REF_PROTO(size_t, fa2_cpu, (const attn_inputs_t *in, attn_blocks_t b, float *O, float *L,
               hbm_meter_t *meter, double *flops));

/* ---- GPU kernels (fa2_simple.cu, fa2_mma.cu) ----------------------------------------
 * Device pointers: q, k, v fp16 in the layout of common/problem.h; o fp32 [B][H][N_q][d];
 * L fp32 [B][H][N_q]. Grid: one thread block per (Q block, batch x head). Asynchronous. */


/* The kernel's blocks, shared memory and threads for head dimension d, and whether it
 * can run here (as fa1.h's fa1_*_config()):
 *    0   it can run this d on this device: the launcher may be called;
 *   -1   it is not built for d (simple: d not a multiple of 32 up to 256; mma: d not a
 *        row of fa2_blocks.h); why says so;
 *    1   built for d (c filled in), but its shared memory exceeds this device's opt-in
 *        limit (gpu_kernel_fits(); FA_SMEM_LIMIT lowers it), or there is no device.
 * The driver marks the row "n/a" (-1) or "skipped" (1) and goes on; the launchers are
 * never called after -1 or 1 (they check nothing: they sit in the timed loop). */
int fa2_simple_config(int d, gpu_kernel_config_t *c, char *why, size_t len);
/* REF_PROTO: phases 5 and 6 borrow these through REF_GPU (common/ref.h) */
REF_PROTO(int, fa2_mma_config, (int d, gpu_kernel_config_t *c, char *why, size_t len));
REF_PROTO(void, fa2_simple_launch, (const attn_problem_t *p, const void *q, const void *k, const void *v,
                                    float *o, float *L));
/* fa2-mma with a FlashMask mask keeps one class byte per K/V block in shared memory: at
 * most this many K/V blocks (N_kv <= FA2_MASK_MAX_TC Bc). */
#define FA2_MASK_MAX_TC 4096
#define FA2_MASK_MAX_D 128   /* d = 256's tiles leave no room for them under 99 KiB: no mask path */
REF_PROTO(void, fa2_mma_launch, (const attn_problem_t *p, fa2_variant_t variant, const void *q,
                                 const void *k, const void *v, float *o, float *L));
/* fa2_wgmma.cu: the same algorithm on Hopper's warpgroup MMA (wgmma), the copy engine and
 * warp specialisation, one step of the ladder a row of hopper/steps.h (its kernels:
 * hopper/stepNN_*.cuh). Built for sm_90a alone: config says 1 ("skipped", with the reason)
 * on any other GPU; -1 (n/a) for a d the step is not built for (64 and 128; steps 3 and 6
 * also 256). */
int fa2_hopper_config(fa2_hopper_step_t step, int d, gpu_kernel_config_t *c, char *why, size_t len);
void fa2_hopper_launch(fa2_hopper_step_t step, const attn_problem_t *p, const void *q, const void *k, const void *v,
                       float *o, float *L);
/* Step 7, wgmma-fp8 (FlashAttention-3's FP8, Sec. 3.3): step 3 on the pre-pass's e4m3 Q M,
 * K M and V^T (fp8_quant.h: Br = Bc = 128, v8t written) with their tiles' scales; d = 128
 * and 256; sm_90a alone. O and L as the other steps write them. */
int fa2_hopper_fp8_config(fa2_hopper_fp8_row_t row, int d, gpu_kernel_config_t *c, char *why, size_t len);
/* FP8 rows' own tolerance, never the fp16 one loosened. Chapter 4b's accuracy table (the CPU
 * model fa3_fp8.c, block scales + Hadamard, FlashAttention-3's Table 3 inputs, N = 1024)
 * gives O an RMSE against the fp64 oracle of 6.948e-3 at d = 128 and 6.017e-3 at d = 256:
 * fa2_fp8_rmse_tol is twice its d's (the kernel's exp2 and sum order move a P across an e4m3
 * step now and then; two keys of P swapped measured 3 to 5 times this in the emulation,
 * run.sh fp8). That RMSE is of rows that spread their weight over many keys. Part of the
 * error is each key's own: V_j and P_j each rounded to e4m3, at most 2^-4 of the value
 * apiece, so e_j <= 2^-3 |v_j| and O_r carries sum_j p_rj e_j, of RMS up to 2^-3 rms(V)
 * sqrt(sum_j p_rj^2) (attn_mean_sum_p2): a row that sees one key keeps V's rounding whole
 * (2.7e-2 on N(0,1) values), one that sees thousands averages it away. The bound
 * (fa2_fp8_rmse_bound, fa2_check.c) is the sum of the two:
 *
 *   RMSE(O) <= fa2_fp8_rmse_tol(d) + 2^-3 rms(V) sqrt(mean_r sum_j p_rj^2)
 *
 * L (the log-sum-exp of S from e4m3 products) with |L - L_oracle| <= FA2_FP8_L_TOL (1 +
 * |L_oracle|): a row with few keys carries one product's e4m3 error whole (tools/mma_emu/
 * run.sh fp8 measured up to 0.038 on such rows). */
static inline double fa2_fp8_rmse_tol(int d) { return 2.0 * (d <= 128 ? 6.948e-3 : 6.017e-3); }
static inline bool fa2_fp8_o_ok(int d, double rmse) { return rmse <= fa2_fp8_rmse_tol(d); }
double fa2_fp8_rmse_bound(const attn_inputs_t *in, int check_rows);
/* The H100's FP8 tensor core keeps 13 bits of fraction in its sums, not fp32's 23
 * (fa3_fp8_cpu_tc): the CPU model a GPU row is held to sums as it does. */
#define FA2_FP8_ACC_BITS 13
#define FA2_FP8_L_TOL 0.05
/* A driver row's (one of FA2_HOPPER_FP8_ROWS): from q, k, v (fp16), quantise: the pre-pass
 * first (fp8_quant_gpu, Br = Bc = 128, Hadamard with FA2_FP8_SEED's signs, v8t) into buffers
 * kept for the next launch; then the row's kernel. Returns 0, or -1 when the pre-pass
 * refuses d. */
int fa2_hopper_fp8_row_launch(fa2_hopper_fp8_row_t row, const attn_problem_t *p, const void *q, const void *k,
                              const void *v, float *o, float *L, bool quantise);
#define FA2_FP8_SEED 7   /* the signs of incoherent processing (fp8_signs), the CPU model's too */
#define FA2_WS_BR_FP8 128   /* its Q tile and K/V tile (Br = Bc): one scale each */
/* wgmma-ws (step 3) has a FlashMask mask path too (attn_mask(p) set; the other steps have
 * none): one class byte a K/V block of Bc = 128 keys past its ring, and what the d = 128 ring
 * leaves of the H100's 227 KiB holds this many (N_kv <= 131072); the driver says n/a beyond. */
#define FA2_WS_MASK_MAX_TC 1024
/* ... and at d = 256 (Bc = 64, O~ in 128 registers a thread) the element test's bits do not
 * fit beside O~ without spilling: wgmma-ws has no mask path above this d */
#define FA2_WS_MASK_MAX_D 128

#ifdef __cplusplus
}
#endif
#endif
