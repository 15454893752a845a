/* mask.h - attention masks as FlashMask stores them: two masked runs per key column.
 *
 * FlashMask (Wang et al., "FlashMask: Efficient and Rich Mask Extension of
 * FlashAttention", arXiv 2410.01359, ICLR 2025, Sec. 4 and Fig. 1(b)) observes that in
 * the masks used in practice the MASKED query rows of one key column j form at most two
 * runs:
 *
 *            key column j
 *                 |
 *        row 0    x   <- the upper run [UTS_j, UTE_j)   (above the diagonal, usually)
 *                 x
 *                 .   <- visible rows
 *                 .
 *                 x   <- the lower run [LTS_j, LTE_j)   (below the diagonal, usually)
 *        N_q - 1  x
 *
 * so four int32 vectors of length N_kv describe the whole N_q x N_kv mask: O(N) bytes
 * instead of O(N^2). Row i may attend key j iff i lies in neither run of column j. Either
 * run may be empty (start == end); an empty lower run is stored as [N_q, N_q), an empty
 * upper run as [0, 0), so that the block rule below sees empty runs at the far edges.
 *
 * Rows and keys of different lengths (N_q != N_kv) are aligned to the bottom-right
 * corner, as the causal rule of problem.h: query row i is the token at position
 * q = i + (N_kv - N_q) of the key sequence (the last query is the newest token). Every
 * mask below is defined on positions (q, j); its runs are then shifted to rows and cut to
 * [0, N_q). With N_q > N_kv the first N_q - N_kv rows have q < 0: they stand before
 * every key, so a causal mask hides every key from them (a fully masked row, O = 0,
 * L = +inf, as in every phase); what each non-causal mask does with them is said at its
 * constructor. One mask serves every batch and head of a problem (FlashMask allows one
 * set of vectors per batch and head; the tutorial needs one).
 *
 * The block rule (FlashMask Sec. 4, its preprocessing and block skipping): for each
 * Bc-wide column block, the min and the max of each vector over the block's columns
 * (mask_blocks). A Br x Bc tile of rows [r0, r1)
 *   - is FULLY MASKED when, for one of the two runs, [r0, r1) lies inside that run in
 *     every column: r0 >= max start and r1 <= min end - the kernel skips it;
 *   - is UNMASKED when, for both runs, [r0, r1) misses the run in every column:
 *     r1 <= min start or r0 >= max end - the kernel computes it with no mask work;
 *   - is PARTIAL otherwise - the kernel tests each element (mask_visible).
 * The rule is conservative: it never calls a tile with a visible element fully masked,
 * nor a tile with a masked element unmasked, but it may call PARTIAL a tile that the two
 * runs together cover (or that no run touches though the min/max say otherwise).
 *
 * Masks come from a CLI spec NAME[:p1,p2,...] (mask_parse) or from the constructors.
 * Document lengths: the lengths given are the first documents in order; the keys left
 * after them (if any) form one more, last document - so "document:512" on N_kv = 2048 is
 * two documents, 512 and 1536. The lengths may not sum to more than N_kv.
 */
#ifndef COMMON_MASK_H
#define COMMON_MASK_H

#include <stddef.h>
#include <stdint.h>

/* The rules below are callable from CUDA kernels too (a kernel's device copy of the vectors). */
#ifdef __CUDACC__
#define MASK_HD __host__ __device__
#else
#define MASK_HD
#endif

#define MASK_SPEC_MAX   96     /* the spec kept in attn_mask_t (longer ones are cut) */
#define MASK_MAX_PARAMS 1024   /* numbers a spec may carry                           */

typedef struct attn_mask {
    const char *name;          /* "causal_document", ... (a static string)          */
    int N_q, N_kv;
    int32_t *lts, *lte;        /* lower run of column j: rows [lts[j], lte[j])      */
    int32_t *uts, *ute;        /* upper run of column j: rows [uts[j], ute[j])      */
    char spec[MASK_SPEC_MAX];  /* how to make it again, e.g. "sliding:1024"         */
} attn_mask_t;

#ifdef __cplusplus
extern "C" {
#endif

/* The host bytes mask_parse(spec, ., N_kv) allocates: the four vectors, and for
 * random_eviction its cache while it runs (an upper bound; before any allocation). */
double mask_build_bytes(const char *spec, int N_kv);

/* The names mask_parse knows, for a usage line: "full, causal, sliding, ...". */
const char *mask_known_names(void);

/* Parse "NAME[:p1,p2,...]" (numbers in plain decimal digits) and build the mask for
 * N_q x N_kv. Returns 0, or nonzero with one sentence in why (no newline) and nothing
 * allocated (*m is zeroed). The specs:
 *   full                        no mask
 *   causal                      problem.h's bottom-right causal rule
 *   sliding:W                   causal, the W newest keys (the diagonal included), W >= 1
 *   causal_document:L1,L2,...   causal inside each document
 *   document:L1,L2,...          bidirectional inside each document
 *   shared_question:Q,A1,A2,... causal; a question, answers that see it but not each other
 *   global_sliding:G,W          the first G tokens global, else |q - j| <= W, W >= 1
 *   causal_blockwise:L1,L2,...  causal documents, except the last sees every earlier one
 *   prefix_lm_causal:P          the first P keys seen by all, causal after them
 *   prefix_lm_document:P1,L1,P2,L2,...   prefix-LM inside each document (Pk <= Lk)
 *   qk_sparse:O1,L1,O2,L2,...   causal; keys of span [Ok, Ok+Lk) hidden inside the span
 *   random_eviction:SEED[,C]    causal; a cache of C keys (default N_kv/2), one random
 *                               key evicted per new token */
int mask_parse(const char *spec, int N_q, int N_kv, attn_mask_t *m, char *why, size_t len);

/* The constructors. Each returns 0, or nonzero with one sentence in why and nothing
 * allocated; lists of lengths follow the document rule above. */
int mask_full(attn_mask_t *m, int N_q, int N_kv, char *why, size_t len);
int mask_causal(attn_mask_t *m, int N_q, int N_kv, char *why, size_t len);
int mask_sliding(attn_mask_t *m, int N_q, int N_kv, int window, char *why, size_t len);
int mask_causal_document(attn_mask_t *m, int N_q, int N_kv, const int *lens, int n, char *why, size_t len);
int mask_document(attn_mask_t *m, int N_q, int N_kv, const int *lens, int n, char *why, size_t len);
int mask_shared_question(attn_mask_t *m, int N_q, int N_kv, const int *lens, int n, char *why, size_t len);
int mask_global_sliding(attn_mask_t *m, int N_q, int N_kv, int n_global, int window, char *why, size_t len);
int mask_causal_blockwise(attn_mask_t *m, int N_q, int N_kv, const int *lens, int n, char *why, size_t len);
int mask_prefix_lm_causal(attn_mask_t *m, int N_q, int N_kv, int prefix, char *why, size_t len);
int mask_prefix_lm_document(attn_mask_t *m, int N_q, int N_kv, const int *prefixes, const int *lens, int n,
                            char *why, size_t len);
int mask_qk_sparse(attn_mask_t *m, int N_q, int N_kv, const int *offsets, const int *lens, int n,
                   char *why, size_t len);
int mask_random_eviction(attn_mask_t *m, int N_q, int N_kv, uint64_t seed, int cache, char *why, size_t len);

void mask_free(attn_mask_t *m);

/* Every vector within 0 <= start <= end <= N_q: 0, or nonzero with the first bad column
 * in why. The constructors run it on what they build. */
int mask_check(const attn_mask_t *m, char *why, size_t len);

/* The element test: may row i attend key j? runs: the four vectors one after the other,
 * [lts | lte | uts | ute], N_kv each (how attn_mask_t holds them, and a kernel's copy). */
static inline MASK_HD int mask_row_visible(int32_t lts, int32_t lte, int32_t uts, int32_t ute, int i)
{
    return !(i >= lts && i < lte) && !(i >= uts && i < ute);   /* in neither run of its column */
}
static inline MASK_HD int mask_visible_at(const int32_t *runs, int N_kv, int i, int j)
{
    return mask_row_visible(runs[j], runs[N_kv + j], runs[2 * (size_t)N_kv + j], runs[3 * (size_t)N_kv + j], i);
}
static inline int mask_visible(const attn_mask_t *m, int i, int j) { return mask_visible_at(m->lts, m->N_kv, i, j); }

/* The dense mask for the fp64 oracle: out[i * N_kv + j] = 1 when visible, else 0. */
void mask_dense(const attn_mask_t *m, unsigned char *out);

/* The (row, key) pairs the mask lets through: sum over columns of N_q less the rows of
 * its two runs (their overlap counted once). O(N_kv). */
double mask_pairs(const attn_mask_t *m);

/* The same mask on a smaller problem, for a CPU model that runs one (problem.h's
 * attn_small_like): row i' of N_q' stands for row i'N_q / N_q' of the original, column j'
 * for column j'N_kv / N_kv'. Sampling rows in order keeps each run a run, so the result is
 * again two runs a column. Returns 0, or nonzero (out of memory) with nothing allocated. */
int mask_sample(const attn_mask_t *m, int N_q, int N_kv, attn_mask_t *out);

/* Bytes of the four vectors (16 * N_kv), beside the dense mask's N_q * N_kv. */
size_t mask_bytes(const attn_mask_t *m);
static inline double mask_dense_bytes(const attn_mask_t *m) { return (double)m->N_q * m->N_kv; }

/* ---- the block preprocessing (FlashMask Sec. 4) -------------------------------------- */
typedef enum { MASK_TILE_UNMASKED = 0, MASK_TILE_PARTIAL = 1, MASK_TILE_FULLY_MASKED = 2 } mask_tile_t;

typedef struct {
    int Bc, n_blocks;          /* n_blocks = ceil(N_kv / Bc); the last may be a tail */
    int32_t *lts_min, *lts_max, *lte_min, *lte_max;
    int32_t *uts_min, *uts_max, *ute_min, *ute_max;
} mask_blocks_t;

/* Per Bc-wide column block, the min and max of each vector over its columns. Returns 0,
 * or nonzero (Bc < 1, out of memory) with nothing allocated. */
int  mask_blocks(const attn_mask_t *m, int Bc, mask_blocks_t *b);
void mask_blocks_free(mask_blocks_t *b);


/* The class of the tile of rows [r0, r1) (r0 < r1 <= N_q) and column block c, from the 8
 * per-block values one after the other, n_blocks each, in the order of mask_blocks_t
 * (lts_min, lts_max, lte_min, lte_max, uts_min, uts_max, ute_min, ute_max): the host's
 * mask_blocks_t and a kernel's copy. */
static inline MASK_HD mask_tile_t mask_tile_class_at(const int32_t *blk, int n_blocks, int r0, int r1, int c)
{
    const int32_t lts_min = blk[c], lts_max = blk[n_blocks + c], lte_min = blk[2 * n_blocks + c], lte_max = blk[3 * n_blocks + c];
    const int32_t uts_min = blk[4 * n_blocks + c], uts_max = blk[5 * n_blocks + c];
    const int32_t ute_min = blk[6 * n_blocks + c], ute_max = blk[7 * n_blocks + c];
    /* inside one run in every column of the block: nothing visible */
    if ((r0 >= lts_max && r1 <= lte_min) || (r0 >= uts_max && r1 <= ute_min)) return MASK_TILE_FULLY_MASKED;
    /* clear of both runs in every column: nothing masked */
    if ((r1 <= lts_min || r0 >= lte_max) && (r1 <= uts_min || r0 >= ute_max)) return MASK_TILE_UNMASKED;
    return MASK_TILE_PARTIAL;
}
static inline mask_tile_t mask_tile_class(const mask_blocks_t *b, int r0, int r1, int c)
{
    return mask_tile_class_at(b->lts_min, b->n_blocks, r0, r1, c);
}

/* Tiles of Br x Bc (tails included) in each class. Returns 0, or nonzero when out of
 * memory or Br, Bc < 1. */
typedef struct { long fully_masked, partial, unmasked; } mask_census_t;
int mask_census(const attn_mask_t *m, int Br, int Bc, mask_census_t *c);

/* Allocations mask.c holds now (vectors and blocks not yet freed): the tests check that a
 * refused spec leaves it unchanged and that every free returns it to where it was. */
long mask_live_allocations(void);

/* Masks a problem refers to by a small handle (attn_problem_t.mask_id): mask_register(m)
 * gives m's handle, 1 .. MASK_SLOTS (the same one when m is registered again; the oldest
 * slot is reused past MASK_SLOTS); mask_registered(0) is NULL. The mask must outlive the
 * problems that name it. */
#define MASK_SLOTS 8
extern const attn_mask_t *mask_slots[MASK_SLOTS + 1];
uint16_t mask_register(const attn_mask_t *m);
static inline const attn_mask_t *mask_registered(uint16_t id) { return id <= MASK_SLOTS ? mask_slots[id] : NULL; }

#ifdef __cplusplus
}
#endif
#endif
