/* bwd.h - phase 5: the backward pass of attention (FlashAttention-2, Dao 2023, Alg. 2).
 *
 * The math, one head, the paper's names (S, P of the forward; dO = dLoss/dO given):
 *   S  = scale Q K^T (+ mask)        P = softmax(S) = exp(S - L)       O = P V
 *   dV = P^T dO                      dP = dO V^T
 *   D_i = rowsum(dO_i * O_i)         (= rowsum(P_i * dP_i): d products instead of N_kv)
 *   dS = P * (dP - D)                (the softmax's backward, elementwise)
 *   dQ = scale dS K                  dK = scale dS^T Q
 * P is never stored: it is recomputed from Q, K and the forward's log-sum-exp L,
 *   P_ij = exp(scale Q_i K_j^T - L_i)                                  (Alg. 2 l.11)
 * and a fully masked row has L = +inf, so P = 0 there and it adds no gradient anywhere.
 *
 * Layouts as common/problem.h: dQ like Q [B][H][N_q][d]; dK, dV like K, V
 * [B][H_kv][N_kv][d]; O [B][H][N_q][d] and L, D [B][H][N_q]. Causal bottom-right
 * (attn_visible()). GQA: dK and dV of a KV head are the sums over its H / H_kv query heads.
 *
 * Two CPU models, both through the HBM meter (common/hbm.h):
 *   bwd_std_cpu   the standard backward (FA1 paper Alg. 3, with P recomputed from L):
 *                 S, P, dP, dS each written to HBM and read back, elem_bytes each
 *                 (2: fp16, as the GPU baseline will store them; 4: fp32)
 *   bwd_fa2_cpu   FA2's Alg. 2: K/V blocks OUTER (j), Q blocks inner (i); dK_j, dV_j
 *                 accumulate on chip and are written once; Q_i, dO_i, L_i, D_i read every
 *                 step; dQ_i read-modify-written in fp32 every step (the GPU's atomicAdd).
 *                 bwd_preprocess() (D = rowsum(dO * O), dQ = 0) is its own pass first.
 *
 * Element sizes in HBM: Q, K, V, dO fp16 (2 bytes); O, L, D, dQ, dK, dV fp32 (4).
 *
 * The FA2 model's bytes, per KV head (b, hk) with G = H / H_kv query heads, per K/V block
 * j of kr keys, rows_j = the query rows of the Q blocks j visits (N_q - first_j Br):
 *   K_j, V_j read (fp16)            4 kr d
 *   dK_j, dV_j written (fp32)       8 kr d
 *   per query head of the group:    rows_j (4 d  +  8  +  8 d)
 *                                   (Q_i, dO_i fp16; L_i, D_i fp32; dQ_i read + write fp32)
 * plus the preprocess, per query head:  dO 2 N_q d + O 4 N_q d + D 4 N_q + dQ = 0 4 N_q d.
 * bwd_hbm_bytes() is that sum; the model's meter equals it exactly.
 */
#ifndef PHASE5_BWD_H
#define PHASE5_BWD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "gpu.h"
#include "hbm.h"
#include "oracle.h"
#include "problem.h"
#include "ref.h"
#include "bwd_blocks.h"
#include "driver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The blocks for head dimension d: the row of BWD_TABLE (bwd_blocks.h); d = 64's row for
 * a d without one. Br query rows (inner), Bc keys (outer). */
static inline attn_blocks_t bwd_blocks(int d)
{
    attn_blocks_t b = { BWD_D64_BR, BWD_D64_BC };
#define BWD_BLOCKS_ROW(D, BR, BC) if (d == (D)) { b.Br = (BR); b.Bc = (BC); }
    BWD_TABLE(BWD_BLOCKS_ROW)
#undef BWD_BLOCKS_ROW
    return b;
}

/* The Q blocks K/V block j must visit are [first, Tr), Tr = ceil(N_q / Br): all of them
 * (first = 0) without a mask; causal, from the block holding the first row that sees the
 * block's first key (j Bc); Tr when no row sees it. The mirror of phase 4's fa2_kv_blocks. */
REF_PROTO(int, bwd_q_block_first, (const attn_problem_t *p, int j, int Br, int Bc));
/* bwd_q_block_first against a brute-force scan of the mask (the Q blocks holding a visible
 * entry of column block j): 0, or -1 with the first wrong K/V block in why (bwd_check.c). */
int bwd_check_causal_range(const attn_problem_t *p, attn_blocks_t bl, char *why, size_t len);
/* The same over shapes of its own (tails, N_q != N_kv both ways, blocks 1 x 1 to 128 x 64):
 * the unit check of bwd.causal_range, whatever the run's shape. */
int bwd_unit_causal_range(char *why, size_t len);

/* SRAM of the FA2 model in bytes (fp32 tiles): K_j, V_j, dK_j, dV_j (Bc x d); Q_i, dO_i,
 * dQ_i (Br x d); P_ij and dP_ij / dS_ij (Br x Bc); L_i, D_i (Br). */
size_t bwd_sram_bytes(int d, attn_blocks_t b);

/* The closed form above (bytes, all heads), split by tensor. */
typedef struct {
    double pre;          /* bwd_preprocess: dO, O read; D, dQ = 0 written             */
    double read_kv;      /* K_j, V_j once per (KV head, j)                            */
    double read_q_do;    /* Q_i, dO_i per visited step                                */
    double read_l_d;     /* L_i, D_i per visited step                                 */
    double rmw_dq;       /* dQ_i read + written per visited step                      */
    double write_dkv;    /* dK_j, dV_j once                                           */
    double read_mask;    /* FlashMask (chapter 4c): the preprocessing pass, then per (KV
                            head, j) its block's 8 values and its kr columns' 4 vectors */
    double total;
} bwd_traffic_t;
REF_PROTO(bwd_traffic_t, bwd_hbm_traffic, (const attn_problem_t *p, attn_blocks_t b));
REF_PROTO(double, bwd_hbm_bytes, (const attn_problem_t *p, attn_blocks_t b));

/* The standard backward's bytes (e = bytes of an S, P, dP or dS element), per query head
 * unless said:  1. S = scale Q K^T: Q 2 N_q d, K 2 N_kv d, S e N_q N_kv
 *               2. P = exp(S - L): S e N_q N_kv, L 4 N_q, P e N_q N_kv
 *               3. dP = dO V^T: dO 2 N_q d, V 2 N_kv d, dP e N_q N_kv
 *               4. dS = P * (dP - D), D = rowsum(P * dP): P, dP 2 e N_q N_kv, dS e N_q N_kv
 *               5. dQ = scale dS K: dS e N_q N_kv, K 2 N_kv d, dQ 4 N_q d
 *   per KV head 6. dV = P^T dO: P and dO of its G query heads, dV 4 N_kv d
 *   per KV head 7. dK = scale dS^T Q: dS and Q of its G query heads, dK 4 N_kv d
 * Every pass moves whole tensors: a causal mask changes no byte. */
double bwd_std_bytes(const attn_problem_t *p, int elem_bytes);
/* S, P, dP and dS of all heads at once: 4 e B H N_q N_kv bytes (the training memory wall). */
double bwd_std_sp_bytes(const attn_problem_t *p, int elem_bytes);

/* The standard backward's CPU model: the passes above, in that order, fp32 math, S, P,
 * dP, dS stored with elem_bytes (2: rounded to fp16 on every store, as the GPU baseline
 * will; 4: fp32). Reads in->q_h, k_h, v_h, do_h (fp16), L (fp32); writes dQ, dK, dV
 * (fp32). meter may be NULL. Returns 0, or -1 when its host buffers (4 N_q N_kv per
 * head) cannot be allocated. */
REF_PROTO(int, bwd_std_cpu, (const attn_inputs_t *in, const float *L, int elem_bytes,
                             float *dQ, float *dK, float *dV, hbm_meter_t *meter));

/* The preprocess pass of Alg. 2 (l.4): D = rowsum(dO * O) for every row (fp32 [B][H][N_q]),
 * and dQ = 0 (Alg. 2 l.5: dQ is an accumulator in HBM). Through the meter. */
REF_PROTO(void, bwd_preprocess, (const attn_inputs_t *in, const float *O, float *D, float *dQ, hbm_meter_t *meter));

/* The three exercises of Alg. 2's step, one element each (row r of the tile is the global
 * row i0 + r, column c the key j0 + c; P, dS rows of the tile, Li, Di the rows' L, D):
 *   bwd_recompute_P   P[c] = exp(s - Li[r]) where visible, else 0          (l.11)
 *   bwd_dS            dS[c] = P[c] (dp - Di[r])                             (l.14)
 *   bwd_dQ            dQi[r d + k] += scale s  (s: row r of dS_ij K_j, column k)  (l.15) */
REF_PROTO(void, bwd_recompute_P, (const attn_problem_t *p, int i0, int j0, int r, int c, float s,
                                  const float *Li, float *P));
REF_PROTO(void, bwd_dS, (int r, int c, const float *P, float dp, const float *Di, float *dS));
REF_PROTO(void, bwd_dQ, (int r, int k, int d, float scale, float s, float *dQi));
/* The parts the model's loop calls: its causal range and the three above. bwd_fa2_cpu
 * runs its own file's; a check may mix a student's with the reference's (bwd_blame). */
typedef struct {
    int  (*q_block_first)(const attn_problem_t *p, int j, int Br, int Bc);
    void (*recompute_P)(const attn_problem_t *p, int i0, int j0, int r, int c, float s, const float *Li, float *P);
    void (*dS)(int r, int c, const float *P, float dp, const float *Di, float *dS);
    void (*dQ)(int r, int k, int d, float scale, float s, float *dQi);
} bwd_parts_t;

/* The CPU tile model of FA2's backward (Alg. 2) with blocks b, after bwd_preprocess()
 * (dQ zeroed, D filled): reads in->q_h, k_h, v_h, do_h (fp16), L, D (fp32); accumulates
 * dQ (fp32, read-modify-write) and writes dK, dV (fp32). meter may be NULL. Returns the
 * SRAM peak in bytes (== bwd_sram_bytes; the tiles come from a budget of exactly that,
 * asserted <= BWD_SRAM_MAX). */
size_t bwd_fa2_cpu(const attn_inputs_t *in, attn_blocks_t b, const float *L, const float *D,
                   float *dQ, float *dK, float *dV, hbm_meter_t *meter);
/* bwd_fa2_cpu with the given parts. */
/* How many K/V blocks bwd_fa2_cpu_parts was given a first Q block outside [0, Tr] for (a
 * wrong bwd.causal_range): it clamps them, never indexing out of the tensors, and counts. */
long bwd_range_faults(void);
REF_PROTO(size_t, bwd_fa2_cpu_parts, (const attn_inputs_t *in, attn_blocks_t b, const float *L, const float *D,
                                      float *dQ, float *dK, float *dV, hbm_meter_t *meter, const bwd_parts_t *parts));

/* Both FA2 passes on a fresh meter: bwd_preprocess, then bwd_fa2_cpu. D may be NULL (a
 * scratch one is used). Returns the SRAM peak. */
REF_PROTO(size_t, bwd_fa2, (const attn_inputs_t *in, attn_blocks_t b, const float *O, const float *L,
                           float *dQ, float *dK, float *dV, hbm_meter_t *meter));

/* Chapter 0's 4 x 2 worked example, backward (bwd_worked.c): the forward of
 * worked.c's Q, K, V (scale 1), dO below, every intermediate (S, P, O, L, dP, D, dS, dQ,
 * dK, dV) printed to out (NULL: silent), checked against oracle_bwd (REF) and against
 * central finite differences of the fp64 forward (oracle_fwd, REF) of the loss
 * sum(dO * O). One "PASS name" / "FAIL name: why" line per check on out; returns the
 * number of FAILs, *nchecks the number of checks. exercises: the names to blame. */
int bwd_worked(FILE *out, int *nchecks);

/* ---- GPU kernels (bwd_std.cu, bwd_simple.cu, bwd_mma.cu, bwd_mma2d.cu, bwd_wgmma*.cu) -
 * Device pointers in the layouts above: Q, K, V, dO fp16; O, L (the forward's), D and the
 * gradients dQ, dK, dV fp32. Asynchronous; every launcher runs the whole backward,
 * preprocess included, so one call is one timed backward. */
typedef struct {
    const void *Q, *K, *V, *dO;     /* fp16                                        */
    const float *O, *L;             /* the forward's output and log-sum-exp        */
    float *D;                       /* scratch [B][H][N_q]: rowsum(dO * O)          */
    float *dQ, *dK, *dV;            /* the gradients (dQ is also the accumulator)  */
} bwd_gpu_args_t;

/* What a backward kernel's visit counters must read (common/driver.h, drv_visits_t): K/V
 * block j of the K/V-outer kernel (blocks b) visits B H (Tr - REF(bwd_q_block_first)(j))
 * Q blocks over all query heads (skip false: all Tr); with a FlashMask mask (and skip),
 * B H (the Q blocks i whose tile (i, j) mask.h's rule does not call fully masked). dq: the blocks of two-pass's dQ
 * kernel, whose Q block i then visits B H REF(fa2_kv_blocks)(i) K/V blocks (tiles after
 * the main kernel's); NULL for one kernel. Free with drv_visits_free. */
struct drv_visits;
void bwd_visits_want(struct drv_visits *v, const attn_problem_t *p, attn_blocks_t b, bool skip,
                     const attn_blocks_t *dq);

/* FlashMask (chapter 4c) on the GPU: mma and wgmma-ws (not wgmma-det) have a mask path. A
 * K/V block lists the Q blocks it visits (those whose tile is not fully masked) in shared
 * memory, a uint16_t each: at most this many Q blocks (N_q <= BWD_MASK_MAX_TR Br); the
 * driver says n/a past it. */
#define BWD_MASK_MAX_TR 8192
/* Does kernel `name` (mma, wgmma-ws, ...) have a mask path? The driver refuses --mask for the
 * others (main.c), and its message names these: */
#define BWD_MASK_KERNELS "mma, wgmma-ws"
bool bwd_kernel_has_mask_path(const char *name);

/* The preprocess (Alg. 2 l.4): D = rowsum(dO * O), and dQ = 0 when zero_dq (the
 * accumulator of the atomic kernels). One warp per row. */
void bwd_preprocess_launch(const attn_problem_t *p, const bwd_gpu_args_t *a, int zero_dq);

/* As fa2.h's *_config: 0 runs here, -1 not built for d (n/a), 1 too little shared memory. */
int bwd_simple_config(int d, gpu_kernel_config_t *c, char *why, size_t len);
int bwd_mma_config(int d, gpu_kernel_config_t *c, char *why, size_t len);
int bwd_mma2d_config(int d, gpu_kernel_config_t *c, char *why, size_t len);
/* wgmma: 1 "skipped" with the reason on any GPU but sm_90 (it is built for sm_90a alone) */
int bwd_wgmma_config(int d, bool dq_bulk, gpu_kernel_config_t *c, char *why, size_t len);
int bwd_wgmma_ws_config(int d, bool det, gpu_kernel_config_t *c, char *why, size_t len);

/* simple: the CPU model's loop order and blocks (bwd_blocks), fp32 tiles in shared memory,
 * CUDA cores, dQ_i added with fp32 atomics. */
void bwd_simple_launch(const attn_problem_t *p, const bwd_gpu_args_t *a);

/* mma variants (bwd_mma.cu):
 *   ATOMIC    Alg. 2: one pass, K/V outer, dQ_i added to HBM with fp32 atomics every step
 *   TWO_PASS  deterministic: pass 1 K/V outer for dK, dV only; pass 2 Q outer for dQ
 *             (S, P, dP, dS recomputed a second time; no atomics: bit-identical reruns)
 *   NOSKIP    ATOMIC without the causal skip: every Q block visited, masked elementwise */
typedef enum { BWD_ATOMIC = 0, BWD_TWO_PASS = 1, BWD_NOSKIP = 2 } bwd_variant_t;
void bwd_mma_launch(const attn_problem_t *p, bwd_variant_t v, const bwd_gpu_args_t *a);

/* mma2d (bwd_mma2d.cu): ATOMIC's algorithm (K/V outer, causal skip, dQ with atomics) with
 * FA2's 2-D warp grids for S/dP, dK/dV and dQ, P and dS staged in shared memory (fp16);
 * blocks and grids per d in BWD_MMA2D_TABLE (bwd_blocks.h). */
void bwd_mma2d_launch(const attn_problem_t *p, const bwd_gpu_args_t *a);

/* wgmma (bwd_wgmma.cu, sm_90a: H100, H200): ATOMIC's algorithm with the five products on
 * Hopper's warpgroup MMA, keys as M (S^T, dP^T; P^T, dS^T as register A of dV, dK), dS^T
 * through shared memory for dQ; blocks in BWD_WGMMA_TABLE (bwd_blocks.h). FA3's first step.
 * dq_bulk (wgmma-dq): dQ_i's partial sums through a shared fp32 tile and one bulk reduce
 * (cp.reduce.async.bulk .add.f32) a row, FA3's dQ path, in place of float2 atomics. */
void bwd_wgmma_launch(const attn_problem_t *p, bool dq_bulk, const bwd_gpu_args_t *a);

/* wgmma-ws (bwd_wgmma_ws.cu, sm_90a): wgmma-dq's products and dQ path in FA3's warp-
 * specialised structure: a producer warp loads Q_i, dO_i with the copy engine (TMA) into
 * a ring of mbarrier slots, a writer warp adds each dQ_i tile with bulk reduces, and two
 * MMA warpgroups (setmaxnreg) compute P^T while dP^T is still on the tensor cores.
 * det (wgmma-det): the K/V blocks add their dQ_i shares in a fixed order (each waits for
 * its turn on a counter a Q block): the gradients are the same bit for bit on every run. */
void bwd_wgmma_ws_launch(const attn_problem_t *p, bool det, const bwd_gpu_args_t *a);

/* The standard backward on the GPU (bwd_std.cu): the seven passes of bwd_std_bytes() with
 * cuBLAS for the five matmuls (fp16 in, fp32 accumulate) and two kernels for P and dS;
 * S, P, dP, dS in fp16 buffers of bwd_std_sp_bytes(p, 2) bytes together (sp). */
void bwd_std_gpu(const attn_problem_t *p, const bwd_gpu_args_t *a, void *sp);
void bwd_std_gpu_teardown(void);

/* The HBM bytes of the two-pass variant: pass 1 is bwd_hbm_bytes without the dQ
 * read-modify-write and zeroing; pass 2, per query head and Q block of qr rows: Q_i, dO_i
 * (4 d qr), L_i, D_i (8 qr), dQ_i written once (4 d qr), and K_j, V_j of every block it
 * visits (4 d kr); blocks dq (Br x Bc of the dQ kernel). */
/* The fp64 dQ of one row (b, h, i) from in's fp16-rounded values, alone: its scores, P,
 * dP, D = rowsum(P dP) and dS over the keys it sees, O(N_kv d) (bwd_check.c). The GPU rows
 * of a problem too big for oracle_bwd check a spread sample of dQ rows with it. */
void bwd_oracle_dq_row(const attn_inputs_t *in, int b, int h, int i, double *dq);

/* The standard fp16 backward's dQ of one row, emulated on the CPU: S, P, dP, dS rounded to
 * fp16 as bwd_std.cu stores them, fp32 sums (bwd_check.c). Where std's four matrices do
 * not fit on the GPU, its max abs error on the sampled rows is the 2x rule's yardstick,
 * as phase 1's emulated fp16 pipeline is for the forward. */
void bwd_std16_dq_row(const attn_inputs_t *in, int b, int h, int i, float *dq);

double bwd_hbm_bytes_two_pass(const attn_problem_t *p, attn_blocks_t b, attn_blocks_t dq);

/* ---- naming the exercise behind a wrong gradient (bwd_check.c) ------------------------
 * The exercises of the FA2 model that fail ALONE on in, each checked with every other
 * part the reference's (common/ref.h), so a one-line mistake names its own exercise:
 *   bwd.causal_range   against the mask (bwd_check_causal_range);
 *   bwd.D              the preprocess's D against fp64 rowsum(dO * O);
 *   bwd.recompute_P, bwd.dS, bwd.dQ   the reference model with that one part the
 *                      student's (bwd_fa2_cpu_parts), dQ, dK, dV against ref.
 * O, L: the forward's (the reference's); ref: the fp64 oracle's dQ, dK, dV, held to
 * tol[3] (NULL: tol_cpu()). Returns a list that lives as long as the run; all five when
 * none fails alone (an interaction). */
const char *bwd_blame(const attn_inputs_t *in, attn_blocks_t bl, const float *O, const float *L,
                      double *const ref[3], const tol_t *tol);
/* After r's checks of the FA2 model's gradients: when r has FAILed and names no exercise
 * yet, name the ones bwd_blame finds. */
void bwd_blame_row(drv_row_t *r, const attn_inputs_t *in, attn_blocks_t bl, const float *O, const float *L,
                   double *const ref[3], const tol_t *tol);
/* A causal problem (B = 1, H = 2, H_kv = 1, N_q = N_kv = N, head dimension d) whose
 * scores all lie near 128, past exp's fp32 range (88.7), while S - L stays small: every
 * row of Q and K is c + its random values less their mean (c^2 sqrt(d) = 128). Returns
 * the smallest score a row sees (fp64), which the checks require past BWD_EXP_MAX. */
#define BWD_EXP_MAX 88.73   /* log(FLT_MAX): expf overflows to inf past it */
double bwd_hot_inputs(attn_inputs_t *in, int d, int N, uint64_t seed);
/* The FA2 model (bwd_fa2) on a problem of head dimension d whose scores all exceed 88
 * (exp overflows fp32 past 88.7) while S - L stays small, causal, a few blocks of bl:
 * dQ, dK, dV against the fp64 oracle under the 2x rule against the reference model's own
 * error there. FAILs r naming the exercise (bwd_blame_row). */
void bwd_check_hot(drv_row_t *r, int d, attn_blocks_t bl, uint64_t seed);
/* bwd_blame on chapter 0's worked example (bwd_worked.c), Br = Bc = 2. */
const char *bwd_worked_blame(void);


#ifdef __cplusplus
}
#endif
#endif
