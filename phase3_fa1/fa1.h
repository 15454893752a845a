/* fa1.h - phase 3: FlashAttention-1 (Dao et al. 2022, Algorithm 1), KV-outer tiling.
 *
 * For each head, K and V are cut into Tc blocks of Bc rows (outer loop j) and Q into
 * Tr blocks of Br rows (inner loop i). Each step (i, j) loads Q_i, O_i, l_i, m_i and
 * combines the scores of K_j with them (Alg. 1 l.8-13); O_i leaves the step
 * normalised, so O, l and m go to HBM and come back once per K/V block:
 *
 *   per head:  write O,l,m once (l.2)  +  read K,V once (l.6)
 *              + Tc x (read Q + read O,l,m + write O,l,m)        (l.8, l.12-13)
 *
 * Element sizes: Q, K, V are fp16 (2 bytes) as the GPU kernels read them; O, l, m are
 * fp32 (4 bytes) because they are the running accumulator that makes the round trip
 * (FA1's own code keeps its o_tmp in fp32 for the same reason). The output O is fp32.
 *
 * The CPU model and both GPU kernels move exactly these bytes; fa1_hbm_bytes() is the
 * closed form of docs/03_fa1.md and equals the model's meter for every problem.
 * fa1-mma's block-skip variant (FA1_BLOCK_SKIP) visits, under the causal mask, only the
 * Q blocks that see some key of K_j, and moves fa1_hbm_bytes_skip() bytes instead.
 */
#ifndef PHASE3_FA1_H
#define PHASE3_FA1_H
#include <stdbool.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include "hbm.h"
#include "problem.h"
#include "ref.h"
#include "gpu.h"
#include "fa1_blocks.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Block sizes of Alg. 1 l.1 from the SRAM size M (bytes; the CPU model's tiles are fp32,
 * so M holds M/4 elements). Returns 0, or -1 if M cannot hold even Br = Bc = 1. */
REF_PROTO(int, fa1_block_sizes, (size_t M_bytes, int d, attn_blocks_t *b));

/* Bytes of SRAM the CPU model takes for blocks b: Q_i, O_i (Br x d), K_j, V_j (Bc x d),
 * S_ij (Br x Bc), l_i, m_i (Br), all fp32. */
size_t fa1_sram_bytes(int d, attn_blocks_t b);

/* Smallest M the paper's rule accepts for head dimension d (the tiles of Br = Bc = 1). */
size_t fa1_min_sram(int d);

/* The closed form of the traffic (docs/03_fa1.md), in bytes, for all B x H heads:
 *   B H [ 4 N_q (d + 2)  +  4 N_kv d  +  Tc (2 N_q d + 8 N_q (d + 2)) ],  Tc = ceil(N_kv / Bc)
 * It depends on Bc only: every pass over a K/V block touches every Q row once. */
typedef struct { double init_olm, read_kv, read_q, read_olm, write_olm, total; } fa1_traffic_t;
fa1_traffic_t fa1_hbm_traffic(const attn_problem_t *p, int Bc);
double fa1_hbm_bytes(const attn_problem_t *p, int Bc);

/* The causal block skip (FA1_BLOCK_SKIP below): the first Q block of pass j over K/V.
 * Row r sees key c iff c <= r + (N_kv - N_q) (attn_visible), so the rows that see any
 * key of K_j (whose first key is j Bc) are r >= j Bc - (N_kv - N_q); Q blocks wholly
 * above that row see none of K_j and are skipped by the inner loop (Alg. 1 l.7): the
 * FA1 paper's block-sparse FlashAttention (Sec. 3.3, Alg. 5: a step (i, j) whose block
 * of the mask is all zero is not taken), with the causal mask as the block mask. The
 * last row sees every key, so each pass keeps at least one Q block (the result is
 * < Tr) and K_j, V_j are still read once each. Not causal: 0, every Q block. */
static inline ATTN_HD int fa1_first_q_block(const attn_problem_t *p, int j, int Bc, int Br)
{
    if (!p->causal) return 0;
    const long r = (long)j * Bc - (long)(p->N_kv - p->N_q);   /* first row that sees key j Bc */
    return r <= 0 ? 0 : (int)(r / Br);
}

/* The bytes of the skip variant with blocks b (Br matters now, not just Bc), all heads:
 *   B H [ 4 N_q (d + 2)  +  4 N_kv d  +  sum_j R_j (2 d + 8 (d + 2)) ]
 * R_j = N_q - Br fa1_first_q_block(j): the rows of the Q blocks pass j visits (the last
 * may be a tail; only its real rows move). Per row: Q_i read (fp16), O_i, l_i, m_i read
 * and written (fp32). Equal to fa1_hbm_bytes() when not causal (R_j = N_q). */
fa1_traffic_t fa1_hbm_traffic_skip(const attn_problem_t *p, attn_blocks_t b);
double fa1_hbm_bytes_skip(const attn_problem_t *p, attn_blocks_t b);

/* The CPU tile model of Alg. 1 with blocks b inside an SRAM budget of M_bytes (every
 * tile is taken from an sram_t of that size, so a model that cheats aborts).
 * Reads in->q_h, k_h, v_h (fp16, 2 bytes/element) through the meter; O [B][H][N_q][d],
 * l and m [B][H][N_q] are the fp32 "HBM" arrays of Alg. 1 (l.2 initialises them here).
 * meter may be NULL. Returns the SRAM peak in bytes. */
REF_PROTO(size_t, fa1_cpu, (const attn_inputs_t *in, attn_blocks_t b, size_t M_bytes,
               float *O, float *l, float *m, hbm_meter_t *meter));

/* L = m + log(l) for n rows, with the project's rule: a row that saw no key (l = 0)
 * gets L = +inf. */
void fa1_lse(const float *l, const float *m, float *L, size_t n);

/* e^(m_old - m_new): brings a sum taken against the old row max to the new one (Alg. 1
 * l.11-12; FA2's alpha, Alg. 1 l.9-10 of FA2). The rule for a row that has seen no key
 * yet (m_old = -inf): 0. Its l is 0 and its O is 0, so its old part weighs nothing
 * whatever the factor, and -inf - (-inf) would be NaN. Every model and kernel of
 * phases 3 and 4 uses this rule (fa2_mma.cu in log2 units), so they agree bit for bit
 * on the rows that see no key. One source for the CPU models and the simple kernels. */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline float fa1_rescale(float m_old, float m_new)
{
#ifdef __CUDA_ARCH__
    return m_old == -INFINITY ? 0.0f : __expf(m_old - m_new);   /* the SFU's exp */
#else
    return m_old == -INFINITY ? 0.0f : expf(m_old - m_new);
#endif
}

/* ---- GPU kernels (fa1_simple.cu, fa1_mma.cu) ----------------------------------------
 * Device pointers: q, k, v fp16 in the layout of common/problem.h; o fp32 [B][H][N_q][d];
 * l, m fp32 [B][H][N_q]. One thread block per (batch, head): FA1's parallelism.
 * Nothing here synchronises. */

/* Head dimensions the mma kernel is built for: the rows of FA1_MMA_TABLE (fa1_blocks.h).
 * Needs no GPU (the driver checks --kernel mma --d against it). */
static inline bool fa1_mma_supports(int d)
{
#define FA1_SUPPORTS_ROW(D, WR, WC) if (d == (D)) return true;
    FA1_MMA_TABLE(FA1_SUPPORTS_ROW)
#undef FA1_SUPPORTS_ROW
    return false;
}

/* What a kernel needs for head dimension d (its blocks, shared memory, threads), and
 * whether it can run here:
 *    0   it can: c is filled in, the launcher may be called with this d;
 *   -1   it is not built for d (why says so; c->name only);
 *    1   it is built for d (c is filled in) but cannot run on this device: its shared
 *        memory exceeds the device's opt-in limit (gpu_kernel_fits(), which FA_SMEM_LIMIT
 *        lowers), or there is no usable device; why says which.
 * The caller marks the row "n/a" (-1) or "skipped" (1) and goes on: the launchers must
 * only be called after a 0 (they check nothing, so as to cost nothing in a timed loop). */
/* REF_PROTO: phase 4 borrows these rows through REF_GPU (common/ref.h) */
REF_PROTO(int, fa1_simple_config, (int d, gpu_kernel_config_t *c, char *why, size_t len));
REF_PROTO(int, fa1_mma_config, (int d, gpu_kernel_config_t *c, char *why, size_t len));

/* The last step of the *_config() of phases 3, 4 and 6: 0 when c can run on this device,
 * else 1 with why (no device, or too little shared memory): common/gpu.h's gpu_config_fits. */
static inline int fa1_config_fits(const gpu_kernel_config_t *c, char *why, size_t len)
{
    return gpu_config_fits(c, 0, why, len);
}
REF_PROTO(void, fa1_simple_launch, (const attn_problem_t *p, const void *q, const void *k, const void *v,
                                    float *o, float *l, float *m));
/* fa1-mma's two variants (template instances of one kernel, fa1_mma.cu):
 *   FA1_PLAIN       Alg. 1 as written: every pass j visits every Q block (causal blocks
 *                   wholly masked are computed, and give exp(-inf) = 0);
 *   FA1_BLOCK_SKIP  under the causal mask pass j starts at fa1_first_q_block(j): the Q
 *                   blocks above it are not loaded, computed or stored in pass j; a row
 *                   that sees no key at all keeps l.2's O = 0, l = 0, m = -inf (so
 *                   L = +inf). A skipped step would only have added zeros; FA1_PLAIN
 *                   still takes it and multiplies O_i by l_i (1 / l_i), so the two differ
 *                   only by that rounding, in rows that had seen keys. The same skip
 *                   as fa2-mma's (phase 4), so the ladder can tell the two gains apart.
 *                   Not causal: the same work as FA1_PLAIN.
 * Bytes: fa1_hbm_bytes(p, Bc) and fa1_hbm_bytes_skip(p, blocks). */
typedef enum { FA1_PLAIN = 0, FA1_BLOCK_SKIP = 1 } fa1_variant_t;
/* What fa1-mma's visit counters must read (common/driver.h, drv_visits_t): pass j (K/V
 * block j of Bc keys) visits B H (Tr - fa1_first_q_block(j)) Q blocks of Br rows over all
 * heads (FA1_PLAIN: B H Tr). Free with drv_visits_free. */
struct drv_visits;
void fa1_visits_want(struct drv_visits *v, const attn_problem_t *p, attn_blocks_t b, fa1_variant_t variant);
REF_PROTO(void, fa1_mma_launch, (const attn_problem_t *p, fa1_variant_t variant, const void *q, const void *k,
                                 const void *v, float *o, float *l, float *m));

/* The SRAM size the simple kernel hands to fa1_block_sizes(): 48 KiB, the shared memory
 * every CUDA GPU gives a thread block without opting in. */
#define FA1_SIMPLE_SRAM (48u * 1024u)

#ifdef __cplusplus
}
#endif
#endif
