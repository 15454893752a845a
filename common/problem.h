/* problem.h - the attention problem every phase solves, and its inputs.
 *
 *   O = softmax(scale * Q K^T + mask) V        L = rowwise log-sum-exp of the masked scores
 *
 * Memory layout (row-major, every tensor contiguous):
 *   Q, O  : [B][H   ][N_q ][d]        L : [B][H][N_q]
 *   K, V  : [B][H_kv][N_kv][d]
 * Grouped-query attention (GQA; MQA when H_kv = 1): H_kv divides H and query head h
 * reads KV head h / (H / H_kv). No copies: kernels index into the shared K/V head.
 *
 * Causal masking is aligned to the bottom-right corner of the N_q x N_kv score matrix
 * (the convention of FlashAttention >= 2.1 and of PyTorch's
 * torch.nn.attention.bias.causal_lower_right; the last query row is the newest token,
 * as when decoding with a KV cache):
 *   query row i may attend key column j  iff  j <= i + (N_kv - N_q).
 * PyTorch SDPA's is_causal=True is the TOP-LEFT aligned mask (j <= i) instead; the two
 * differ only when N_q != N_kv.
 * With N_q = N_kv this is the usual lower triangle. With N_q > N_kv the first
 * N_q - N_kv rows see no key at all: such a FULLY MASKED ROW returns O = 0 and
 * L = +inf (so that the backward pass's P = exp(S - L) is 0 there), in every phase.
 */
#ifndef COMMON_PROBLEM_H
#define COMMON_PROBLEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "mask.h"

/* The small index helpers below are callable from CUDA kernels too. */
#ifdef __CUDACC__
#define ATTN_HD __host__ __device__
#else
#define ATTN_HD
#endif

typedef struct {
    int B;        /* batch                                  */
    int H;        /* query heads                            */
    int H_kv;     /* key/value heads, divides H             */
    int N_q;      /* query sequence length                  */
    int N_kv;     /* key/value sequence length              */
    int d;        /* head dimension                         */
    bool causal;  /* bottom-right aligned causal mask       */
    /* A FlashMask mask (common/mask.h: two masked runs per key column): its handle from
     * mask_register(), or 0 for none; attn_mask() gives it. Host memory: the CPU models and
     * the oracle read it through attn_visible(); a kernel reads its own device copy. Set only
     * with causal = false. A 16-bit handle in the padding after causal, not a pointer: the
     * struct stays 32 bytes, and kernels take it by value (8 bytes more made fa2-mma spill). */
    uint16_t mask_id;
    float scale;  /* softmax scale, 1/sqrt(d) by default    */
} attn_problem_t;

/* The tile sizes of a blocked kernel or CPU tile model: Br query rows by Bc keys
 * (the papers' names; FA1 Alg. 1 l.1, FA2 Alg. 1 l.3). */
typedef struct { int Br, Bc; } attn_blocks_t;

/* A problem with the defaults filled in (scale = 1/sqrt(d), H_kv = H, N_kv = N_q). */
attn_problem_t attn_problem(int B, int H, int H_kv, int N_q, int N_kv, int d, bool causal);

/* A causal block range checked on the unit shapes: every causal N_q x N_kv of a grid of
 * small sizes (1, 2, 3, the sizes around 64 and tails up to 333) with each of bl's n_bl
 * blockings. check returns 0 or -1 with its reason; the first FAIL's shape and reason in
 * why, -1. (fa2_unit_causal_range, bwd_unit_causal_range: each its own exercise's range.) */
typedef int (*attn_range_check_fn)(const attn_problem_t *p, attn_blocks_t bl, char *why, size_t len);
int attn_range_units(attn_range_check_fn check, const attn_blocks_t *bl, int n_bl, char *why, size_t len);

/* Element counts of each tensor. */
size_t attn_q_elems(const attn_problem_t *p);   /* also O  */
size_t attn_kv_elems(const attn_problem_t *p);  /* K or V  */
size_t attn_l_elems(const attn_problem_t *p);   /* L       */

/* Which KV head query head h reads (GQA). */
static inline ATTN_HD int attn_kv_head(const attn_problem_t *p, int h) { return h / (p->H / p->H_kv); }

/* Offsets of the first element of head (b, h) in Q/O, K/V and L. */
static inline ATTN_HD size_t attn_q_offset(const attn_problem_t *p, int b, int h)
{ return ((size_t)b * p->H + h) * (size_t)p->N_q * p->d; }
static inline ATTN_HD size_t attn_kv_offset(const attn_problem_t *p, int b, int h)
{ return ((size_t)b * p->H_kv + attn_kv_head(p, h)) * (size_t)p->N_kv * p->d; }
static inline ATTN_HD size_t attn_l_offset(const attn_problem_t *p, int b, int h)
{ return ((size_t)b * p->H + h) * (size_t)p->N_q; }

/* The problem's FlashMask mask, or NULL (host only). */
static inline const attn_mask_t *attn_mask(const attn_problem_t *p) { return mask_registered(p->mask_id); }

/* May row i see column j? The mask's rule where the problem has one (on the host: device
 * code has no mask here), else the causal rule above. */
static inline ATTN_HD bool attn_visible(const attn_problem_t *p, int i, int j)
{
#ifndef __CUDA_ARCH__
    if (p->mask_id) return mask_visible(mask_registered(p->mask_id), i, j);
#endif
    return !p->causal || (long)j <= (long)i + (long)(p->N_kv - p->N_q);
}

/* FlashMask's preprocessing for a CPU tile model (chapter 4c): the per-block min/max of the
 * problem's mask at Bc-wide column blocks (mask_blocks), or an empty one without a mask. Free
 * with mask_blocks_free. Exits on out of memory. */
mask_blocks_t attn_mask_blocks(const attn_problem_t *p, int Bc);

/* Number of keys row i can see (0 for a fully masked row). */
int attn_visible_count(const attn_problem_t *p, int i);

/* Forward FLOPs: 4 * B * H * N_q * N_kv * d (two matmuls, 2 flops per multiply-add),
 * halved when causal with N_q = N_kv (the FlashAttention papers' convention); with a mask,
 * 4 * B * H * d * (the pairs it lets through), as the FlashMask paper counts. */
double attn_flops_fwd(const attn_problem_t *p);
/* Backward FLOPs: 2.5x forward (five matmuls instead of two). */
double attn_flops_bwd(const attn_problem_t *p);

/* One-line description, e.g. "B=1 H=8 Hkv=8 Nq=128 Nkv=128 d=64 causal". */
void attn_problem_str(const attn_problem_t *p, char *buf, size_t len);

/* The inputs a phase works on. Q/K/V (and dO) are drawn N(0,1) from the seed and
 * rounded to fp16 once: the *_h arrays are what a GPU kernel reads, the float arrays
 * hold exactly the same fp16-rounded values for the CPU models and the oracle, so an
 * error measures the kernel, never the cast. */
typedef struct {
    attn_problem_t p;
    uint16_t *q_h, *k_h, *v_h, *do_h;  /* fp16 bits          */
    float    *q,   *k,   *v,   *dO;    /* the same values    */
} attn_inputs_t;

/* with_grad: also draw dO (backward phases). Returns 0, or -1 if out of memory. */
int  attn_inputs_make(attn_inputs_t *in, const attn_problem_t *p, uint64_t seed, bool with_grad);
void attn_inputs_free(attn_inputs_t *in);

/* The bound on a CPU row's work. FLOPs alone do not bound it: a cheap shape with many
 * rows or a long cache (N_q = 10^6 against one key, B = 2 x 10^6 single-token sequences,
 * 10^6 heads) costs the CPU models, the fp64 oracle and the checks time and memory per
 * ELEMENT (every row's m, l, L and fp64 reference, every key's fp16 and fp32 copies),
 * whatever its FLOPs. So the CPU rows also stop at:
 *   ATTN_CPU_MAX_ROWS   query rows B * H * N_q      (per-row work: oracle row, m/l/L,
 *                                                     the check of each row)
 *   ATTN_CPU_MAX_ELEMS  elements of Q (= of O, dO) and of K (= of V) each
 * Sizing (measured on the 2-core dev machine): the most expensive driver per element is
 * phase 6 (12 CPU rows, each with its own outputs and an fp64 oracle; the ragged rows on 4
 * copies of the batch): about 150 bytes per element of Q and 40 us per query row, 31
 * bytes per element of K and V, most of its time drawing the inputs (Box-Muller). At
 * these caps a cache at the element cap costs ~4 s and 0.27 GB (phase 6's default problem:
 * K = V = 8 x 4096 x 128 = 2^22 elements; 9 s with the machine loaded by two parallel
 * builds), 2^12 heads of 4 keys at d = 256 (both caps) ~4 s and 0.5 GB (2^13 rows: 5.7 s
 * and 0.75 GB, hence 2^12): inside the bound of 10 s and 2 GB that every accepted
 * problem's CPU rows keep (docs/design.md), with the default problem of every phase
 * within the caps (phases 3-5: B = 2, H = 4, N_q = 512 is 2^12 rows). Per phase, the FLOPs bound is
 * each driver's CPU_MAX_FLOPS (its CPU rows' cost per FLOP differs 20x between phases). */
#define ATTN_CPU_MAX_ROWS  (1L << 12)
#define ATTN_CPU_MAX_ELEMS (1L << 22)

/* Is p within the CPU bound: forward FLOPs <= max_flops, and the rows and elements above? */
bool attn_cpu_fits(const attn_problem_t *p, double max_flops);

/* The problem a CPU model runs in place of p: p itself when attn_cpu_fits(p, max_flops),
 * else one that keeps d, the mask, the GQA grouping and the N_q : N_kv ratio (B = 1, at
 * most 2 KV heads and 2 query heads a KV head, N <= 256). The CPU rows of a driver stay
 * quick and small whatever the GPU problem is. */
attn_problem_t attn_small_like(const attn_problem_t *p, double max_flops);

/* The one line that says the CPU rows ran pc in place of p (nothing when they are the
 * same problem): "<phase>: the CPU rows run B=1 H=2 ... in place of this problem (...)". */
void attn_small_like_note(const char *phase, const attn_problem_t *p, const attn_problem_t *pc,
                          double max_flops);

/* Host bytes a run on p allocates, for the up-front check (cli.c, exit 2 when over the
 * machine's memory):
 *   ATTN_HOST_GPU_ROWS  the GPU rows' host side: Q, K, V (and dO) as fp16 bits and fp32
 *                       copies (attn_inputs_t), O and L fetched back as fp32, and dQ, dK,
 *                       dV fetched back in fp32 (a backward) - the inputs and what comes
 *                       back, 6 + 4 bytes an element;
 *   ATTN_HOST_CPU_ROWS  a CPU rows' problem (small: attn_small_like): the same, plus what
 *                       the CPU rows keep at once: an fp64 reference and up to 12 fp32
 *                       outputs of O and L (phase 6's rows), the gradients' three sets
 *                       and their fp64 references (phase 5's), and 4 copies of the batch
 *                       (phase 6's ragged rows) - a bound, 8x the GPU side's.
 * The CPU side of the largest problem the CPU rows run (ATTN_CPU_MAX_ELEMS) is ~0.5 GB. */
typedef enum { ATTN_HOST_GPU_ROWS, ATTN_HOST_CPU_ROWS } attn_host_t;
double attn_host_bytes(const attn_problem_t *p, attn_host_t which);

/* malloc that exits with "<who>: out of host memory" instead of returning NULL. */
void *xmalloc(size_t n, const char *who);

/* Rows checked against the oracle. Checking every row of a big problem against an fp64
 * reference would take the CPU minutes, so above max_rows rows a spread sample is
 * checked: max_rows (b, h, i) triples evenly over the flat row index, the first and the
 * last row included. Below it, every row. Writes triples into bhi[3*k..3*k+2] (bhi holds
 * 3*max_rows ints) and returns the count. */
int attn_check_rows(const attn_problem_t *p, int max_rows, int *bhi);

#endif
