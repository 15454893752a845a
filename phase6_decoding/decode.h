/* decode.h - phase 6: Flash-Decoding (split the KV cache, combine by log-sum-exp).
 *
 * Decoding: one query token (N_q = 1, or a few with speculative decoding) per sequence
 * attends to a long KV cache of L = N_kv keys. FA2 (phase 4) gives one thread block to
 * each (Q block, head, batch): at B = 1, N_q = 1, H = 32 that is 32 blocks on a GPU with
 * 132 SMs, each streaming the whole cache alone. Flash-Decoding adds the KV length as a
 * third axis of the grid: the cache is cut into S splits of whole Bc blocks, and
 *
 *   split s (one block per (split, Q block, head, batch)): phase 4's inner loop over its
 *     own keys [k0_s, k1_s) only, then the normalised partial O_s = O~_s / l_s and
 *     L_s = m_s + log l_s written to HBM (fp32);
 *   combine (one block per (Q block, head, batch)): chapter 2's merge of the S partials,
 *     L = log sum_s e^{L_s},   O = sum_s e^{L_s - L} O_s.
 *
 * A split that sees no key (an empty range when S exceeds the blocks, a fully masked
 * range, a short sequence) writes O_s = 0 and L_s = -inf: the log of an empty sum, so its
 * weight e^{L_s - L} is 0 and it changes nothing. It reads no Q and no K/V. When every
 * split of a row is empty the row saw no key at all: the combine writes O = 0 and
 * L = +inf, the project's convention (common/problem.h). With S = 1 there is nothing to
 * combine: the one split writes O and L itself (L = +inf for a row with no key), and its
 * bytes are phase 4's.
 *
 * The inner loop is phase 4's: K_j, V_j blocks of Bc keys through the meter, each row's
 * running (m, l, O~) updated key by key with chapter 2's online state (phase 2's
 * online_state_push; phase 4's block step fa2_step is static in fa2_cpu.c).
 *
 * The cache may be PAGED (PagedAttention; FlashAttention-2's block_table): a pool of
 * pages of `page` keys, pool layout [n_pages][H_kv][page][d], and a block table per
 * sequence giving the pool page of its keys j .. j + page - 1; key j of sequence b is row
 * j % page of page block_table[b][j / page]. Sequences may be RAGGED (seqlens_k[b] keys,
 * 0 allowed: that sequence's rows give O = 0, L = +inf). Causal with N_q > 1 is
 * bottom-right aligned on each sequence's own length: row i sees key j when
 * j <= i + (seqlens_k[b] - N_q).
 *
 * HBM bytes (decode_hbm_bytes(), equal to the model's meter for every shape and S):
 *   per (b, h, Q block i of qr rows, split s) that sees a key:
 *        2 qr d (Q_i, fp16) + 4 d keys(i, s) (K, V fp16) [+ 4 per page a K/V block spans]
 *   S = 1:  + 4 qr (d + 1)  (O, L written, fp32)
 *   S > 1:  + 4 qr (d + 1) per split, empty or not (the partials), and the combine:
 *           4 qr S (d + 1) (partials read back) + 4 qr (d + 1) (O, L written)
 *   + 4 bytes per work item (split or combine) when seqlens_k is given.
 * keys(i, s) = the keys of the whole Bc blocks of split s that Q block i can see.
 */
#ifndef PHASE6_DECODE_H
#define PHASE6_DECODE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hbm.h"
#include "driver.h"
#include "gpu.h"
#include "problem.h"
#include "ref.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The KV cache as a decoding kernel sees it. All zero (or NULL pointer): contiguous,
 * every sequence N_kv keys, K/V read from attn_inputs_t as in common/problem.h. */
typedef struct {
    const int *seqlens_k;      /* [B] keys of each sequence (<= N_kv); NULL: all N_kv     */
    int page;                  /* keys per page; 0: contiguous cache                     */
    int pages_per_seq;         /* block-table row length: ceil(N_kv / page)              */
    const int *block_table;    /* [B][pages_per_seq] pool page of each page of keys      */
    const uint16_t *k_pool, *v_pool;   /* [n_pages][H_kv][page][d] fp16                  */
    int n_pages;
    long *faults;              /* NULL, or counts the key rows dec_kv_row() put outside the
                                  pool (a wrong page lookup): dec_cpu reads them as zeros
                                  instead of crashing, and the check FAILs on the count  */
} dec_cache_t;

/* Keys of sequence b. */
int dec_seqlen(const attn_problem_t *p, const dec_cache_t *c, int b);

/* Split s of S over a cache of n keys in blocks of Bc: keys [*k0, *k1), whole blocks
 * (k0 a multiple of Bc), the splits in order, together covering [0, n) exactly once;
 * ceil(Tc / S) blocks each, so the last splits may be empty (k0 == k1). */
REF_PROTO(void, dec_split_range, (int n, int Bc, int S, int s, int *k0, int *k1));

/* Element offset of key j's row (K or V: same offset) for KV head g of sequence b: in
 * the pool when paged, else in attn_inputs_t's k_h / v_h. */
size_t dec_kv_row(const attn_problem_t *p, const dec_cache_t *c, int b, int g, int j);

/* The combine of one row from S partials in SRAM: Ls[S], Os[S][d] -> o[d], *L.
 * L = log sum e^{L_s}; O = sum e^{L_s - L} O_s; every L_s = -inf: O = 0, L = +inf. */
void dec_combine_row(int S, int d, const float *Ls, const float *Os, float *o, float *L);

/* The CPU tile model: S splits and the combine, blocks b (Br query rows, Bc keys), cache
 * c (NULL: contiguous). Writes O [B][H][N_q][d] and L [B][H][N_q] (fp32); the partials
 * live in an "HBM" array of its own. meter may be NULL. Returns the SRAM peak in bytes
 * (== dec_sram_bytes). */
REF_PROTO(size_t, dec_cpu, (const attn_inputs_t *in, const dec_cache_t *c, attn_blocks_t b, int S,
                            float *O, float *L, hbm_meter_t *meter));
size_t dec_sram_bytes(int d, attn_blocks_t b, int S);

/* ---- FlashDecoding++'s asynchronised softmax (Hong et al., arXiv 2311.01282, Sec. 3) ----
 *
 * Flash-Decoding's splits each keep a running max m_s and rescale their sum whenever it
 * moves; the combine then rescales every partial again by e^{L_s - L}. FlashDecoding++
 * replaces every running max by ONE value phi, the same for all splits, fixed before the
 * kernel runs:
 *
 *   split s:  u_s = sum_j e^{x_j - phi} v_j,   l_s = sum_j e^{x_j - phi}   (no max, no rescale)
 *   combine:  O = (sum_s u_s) / (sum_s l_s),   L = phi + log sum_s l_s     (a sum and a divide)
 *
 * Exact in real arithmetic for any phi; in floating point only while every e^{x_j - phi}
 * is representable and the row's largest ones are not tiny. The GPU kernel rounds P to
 * fp16 for the P V product, so the SAFE WINDOW is
 *   - no score above phi + DEC_PHI_ABOVE (e^10 = 22026 < fp16's largest, 65504, with room
 *     for V), and
 *   - some score at or above phi - DEC_PHI_BELOW (the row's largest weight >= e^-6, well
 *     inside fp16's normal range, so the weights the row is made of keep fp16's precision).
 * A split records both tests for each row, with no extra byte: l_s is written as +inf when
 * a score passed the top, and with its sign flipped (-l_s, -0 for an empty split) when no
 * score reached the bottom. The combine recomputes a row with Flash-Decoding's own path
 * (one split, the online softmax) when a split passed the top, or when the row has a key
 * but no split reached the bottom. */
#define DEC_PHI_ABOVE 10.0f
#define DEC_PHI_BELOW 6.0f

/* phi from the inputs' statistics, as FD++ calibrates from a model's scores offline: the
 * median, over up to 64 query rows spread through the problem, of the row's largest score
 * against up to 1024 keys spread through its visible cache. Not metered (a calibration,
 * not the kernel's work). 0 when no row sees a key. */
float dec_phi_calibrate(const attn_inputs_t *in, const dec_cache_t *c);

/* The combine of one row under FD++ from S partials (ls[S] as the splits wrote them, us[S][d]
 * the unnormalised sums). has_keys: the row sees a key. Returns 1 and writes o, L, or 0: the
 * row left the safe window and must be recomputed (o, L then unspecified). A row with no key
 * gives O = 0, L = +inf (safe). */
REF_PROTO(int, dec_fdpp_combine_row, (int S, int d, float phi, bool has_keys, const float *ls, const float *us,
                                      float *o, float *L));

/* The FD++ model: dec_cpu's splits with the unified phi, the FD++ combine, then each row that
 * left the window recomputed by one synchronised pass over its keys (written over the
 * combine's). recomputed [B][H][N_q] (may be NULL): 1 where a row was recomputed. Returns the
 * SRAM peak (== dec_sram_bytes). */
REF_PROTO(size_t, dec_cpu_fdpp, (const attn_inputs_t *in, const dec_cache_t *c, attn_blocks_t b, int S, float phi,
                                 float *O, float *L, hbm_meter_t *meter, uint8_t *recomputed));

/* The bytes of one row's recompute (row `row` of sequence bseq, any head): its seqlens entry
 * (ragged), its Q row, the K/V of every visible key in whole Bc blocks (and their pages'
 * table entries), O and L written. FD++'s bytes are decode_hbm_bytes() plus this for each
 * recomputed row. */
double dec_recompute_bytes(const attn_problem_t *p, const dec_cache_t *c, attn_blocks_t b, int bseq, int row);
/* FD++'s closed form: decode_hbm_bytes() plus dec_recompute_bytes() of each row that
 * recomputed marks ([B][H][N_q], as dec_cpu_fdpp writes it); *n_recomputed (may be NULL)
 * gets their number. */
double dec_fdpp_hbm_bytes(const attn_problem_t *p, const dec_cache_t *c, attn_blocks_t b, int S,
                          const uint8_t *recomputed, long *n_recomputed);

/* The closed form above, by tensor (all B x H heads). */
typedef struct { double read_q, read_kv, read_table, read_seqlens, write_part, read_part,
                 write_o, total; } dec_traffic_t;
dec_traffic_t dec_hbm_traffic(const attn_problem_t *p, const dec_cache_t *c, attn_blocks_t b, int S);
double decode_hbm_bytes(const attn_problem_t *p, const dec_cache_t *c, attn_blocks_t b, int S);

/* A paged copy of in's K/V with pages of `page` keys, the pool pages in an order
 * shuffled from seed (a pool with every page of every sequence, no two sharing). Not
 * metered: it builds the cache's contents, as attn_inputs_make draws them. seqlens may be
 * NULL. Returns 0, or -1 out of memory. */
typedef struct { dec_cache_t c; int *table; uint16_t *k, *v; long faults; } dec_paged_t;
int  dec_paged_make(dec_paged_t *pg, const attn_inputs_t *in, int page, const int *seqlens,
                    uint64_t seed);
void dec_paged_free(dec_paged_t *pg);
/* The block table of dec_paged_make: np = B x pages_per_seq entries, a permutation of the
 * pool's pages drawn from seed (Fisher-Yates). */
void dec_table_shuffle(int *table, int np, uint64_t seed);

/* The fp64 oracle on a ragged cache: each sequence b run alone with its seqlens[b] keys
 * (REF(oracle_fwd), common/ref.h); a sequence of 0 keys gives O = 0, L = +inf. Oref
 * [B][H][N_q][d], Lref [B][H][N_q]. Returns 0, or -1 out of memory (decode_check.c). */
int dec_oracle_ragged(const attn_inputs_t *in, const int *seqlens, double *Oref, double *Lref);

/* A failed row r names the exercise ex beside those it names already (a check that fails
 * on a row another check failed adds its own: an untouched handout names them all, a
 * one-line mistake, whose other checks pass, names one). */
void dec_blame_also(drv_row_t *r, const char *ex);
/* dec_split_range against the reference's (REF) for S splits of n keys in blocks of Bc,
 * and of 1 .. 2 S + 1 blocks (every remainder, a tail; more splits than blocks); FAILs r
 * naming dec.split_range, beside any exercise r names already (decode_check.c). */
void dec_check_split_range(drv_row_t *r, int n, int Bc, int S);
/* dec_combine_row on partials whose L_s are far apart (decode_check.c): {100, 99, -inf}
 * (e^100 overflows fp32: a combine that does not subtract the max gives inf or NaN),
 * {-100, -101, -inf} (e^-100 is a denormal of a few bits) and every split empty (O = 0,
 * L = +inf), against fp64. FAILs r naming dec.combine (beside any exercise r names). */
void dec_check_combine(drv_row_t *r);
/* FlashDecoding++'s window and fallback (decode_fdpp_cpu.c: no exercise) against the
 * reference library's copies: a key past phi + DEC_PHI_ABOVE, a split whose weights are all
 * below e^-DEC_PHI_BELOW, a split with no key beside them, a row in the window (L = phi +
 * log l); then the FD++ model on a small problem of its own with phi 40 below and 40 above
 * the scores (every row must fall back: the rows recomputed and O, L as the reference's).
 * A failure names DEC_FDPP_NOT_EXERCISE (no exercise of the student's is behind it). */
#define DEC_FDPP_NOT_EXERCISE "(no exercise: FlashDecoding++'s window and fallback, decode_fdpp_cpu.c)"
void dec_check_fdpp(drv_row_t *r);
/* The same partials through the GPU combine kernel (dec_combine_kernel, d = 64); FAILs r
 * naming dec.combine_gpu. */
void dec_check_combine_gpu(drv_row_t *r);

/* A GPU output (O, L) on a ragged cache checked as a driver row: each sequence b with
 * seqlens[b] > 0 alone, as a problem of its own, through phase 1's attn_validate_fp16 (the
 * oracle, the 2x rule against the fp16 pipeline on its inputs, L within 1e-3); a sequence
 * of 0 keys must hold O = 0 and L = +inf exactly. Fills max_abs, rel_l2, pipe, L_abs;
 * FAILs r with the first bad element (decode_check.c). */
void dec_check_ragged_fp16(drv_row_t *r, const attn_inputs_t *in, const int *seqlens, const float *O,
                           const float *L, int check_rows);

/* ---- the GPU half (decode.cu and the dec_*.cuh headers) -------------------------------
 * GQA PACKING: the G = H / H_kv query heads that share a KV head are the rows of one
 * block (G x N_q rows, in row tiles of dec_gpu_block_rows), so K/V are read once per KV head. Its
 * bytes are the model's with the K/V (and block-table) reads of a KV head's G heads
 * counted once per row tile instead of once per head: dec_hbm_traffic_gpu(pack = true).
 * pack = false gives dec_hbm_traffic() exactly (the unpacked kernel is the model), except
 * that the GPU combine reads no seqlens_k (4 bytes per (b, h) fewer on a ragged cache). */
/* The decode kernels' variants, one row each: X(ID, name, file). name: the GPU row and
 * --kernel's name (main.c lists fa2-mma, then these; --help prints the list); file: the
 * header of this folder that holds what the variant adds; it opens with "variant NAME:" and
 * the command that runs it (phase6_decoding/tests.sh checks both). */
#define DEC_VARIANTS(X)                                  \
    X(SPLIT,      "split",      "dec_split.cuh")         \
    X(SPLIT_PACK, "split-pack", "dec_split_pack.cuh")    \
    X(FUSED,      "fused",      "dec_fused.cuh")         \
    X(FDPP,       "fdpp",       "dec_fdpp.cuh")          \
    X(PAGED,      "paged",      "dec_paged.cuh")         \
    X(RAGGED,     "ragged",     "dec_ragged.cuh")
/* The head dimensions the decode kernels are built for: X(d). */
#define DEC_GPU_DS(X) X(32) X(64) X(128) X(256)
#define DEC_GPU_ROWS  16      /* query rows of a block: one mma m-tile (FD++'s flat GEMM) */
#define DEC_GPU_ROWS_WIDE 64  /* ... or four m-tiles, one a warp, when a group has more  */
/* The rows of the split kernel's blocks on this problem: DEC_GPU_ROWS_WIDE when a group (a
 * head, or with packing a KV head's G heads) has more than DEC_GPU_ROWS query rows and
 * d <= 128, else DEC_GPU_ROWS. A group's G x N_q rows are cut into row tiles of this many. */
int dec_gpu_block_rows(const attn_problem_t *p, bool pack);
#define DEC_GPU_MAX_NQ 16     /* the decode kernels take N_q <= this (phase 4 beyond) */
#ifndef DEC_WARPS
#define DEC_WARPS 4           /* warps of a split block (8: the Makefile's DEC_WARPS=8 experiment) */
#endif
#define DEC_GPU_TILE_KEYS (16 * DEC_WARPS)  /* keys of the K/V tiles a split walks (its range in tiles):
                                               16 a warp */
dec_traffic_t dec_hbm_traffic_gpu(const attn_problem_t *p, const dec_cache_t *c, attn_blocks_t b, int S, bool pack);
/* What the split kernel's visit counters must read (common/driver.h): split s visits, in
 * each block (row tile of a head, or of a KV head's G heads when packed, and sequence b),
 * the K/V tiles of DEC_GPU_TILE_KEYS keys that cover its keys REF(dec_split_range)(n_b, Bc,
 * S, s), n_b = seqlens[b] (NULL: N_kv); summed over the blocks. Bc: the split ranges'
 * (fa2_mma_blocks(d).Bc). Free with drv_visits_free. */
void dec_visits_want(drv_visits_t *v, const attn_problem_t *p, const int *seqlens, int Bc, bool pack, int S);

/* The number of splits (FlashAttention-2's num_splits_heuristic, measured on waves): a
 * launch of `work` blocks per split on a GPU that holds `slots` blocks at once (SMs x
 * blocks per SM) runs in ceil(work S / slots) waves; its wave efficiency is
 * (work S / slots) / ceil(work S / slots). When work alone nearly fills the GPU
 * (>= 80% of the slots), S = 1. Else, over the S <= min(max_splits, slots, n_blocks)
 * that change the blocks a split gets (ceil(n_blocks / S) != ceil(n_blocks / (S - 1))),
 * the smallest S whose efficiency is >= DEC_SPLIT_EFF of the best. FA2 takes 85%: its
 * splits run compute-bound prefill tiles, where each split's partials and the combine
 * cost real time. Here a split costs 2 x (d + 1) floats a row, nothing beside the cache it
 * streams, so a fuller last wave is worth more: 95% picks the fastest measured S at each
 * of the sweep's vsS/vsSb shapes on the H100 (within 3%), where 85% picked S = 28 (B = 1 GQA, L = 64k: 3.5% slower than S = 32). */
#define DEC_SPLIT_EFF 0.95
int dec_num_splits_heuristic(int work, int slots, int n_blocks, int max_splits);
/* The heuristic on a problem: work = B x (H_kv if pack else H) x row tiles, n_blocks =
 * ceil(N_kv / Bc) with the model's Bc, max 128. */
int dec_num_splits(const attn_problem_t *p, bool pack, int slots);

/* Device pointers of one decode launch. k, v: the contiguous cache (common/problem.h's
 * layout), or the pool [n_pages][H_kv][page][d] when page > 0 (table [B][pages_per_seq]).
 * seqlens NULL: every sequence N_kv keys. ws: dec_gpu_workspace_bytes(p, S) of fp32
 * partials (O_s [S][B][H][N_q][d], then L_s [S][B][H][N_q]); unused when S = 1. */
typedef struct {
    const void *q, *k, *v;
    const int *seqlens, *table;
    int page, pages_per_seq;
    float *o, *L, *ws;
    int *done;   /* NULL: split + the combine kernel. Else the fused combine (dec_gpu_launch,
                    S > 1, row tiles of at most DEC_FUSED_MAX_ROWS rows; else the combine
                    kernel): dec_gpu_done_ints(p, pack) zeroed ints, left zeroed by each launch */
} dec_gpu_args_t;
/* The fused combine's limit: the last split block of a row tile merges its rows with 4
 * warps, S partials a row, after every other split has finished. Measured on the H100
 * (sweep vsNq, GQA 32:8, L = 16k, S = 32 and 4): with 4 or 8 rows a tile (1 or 2 a warp)
 * it saves the combine launch (0.91-0.99x split-pack's time); with 16 rows it took
 * 1.01-1.05x, with 32 or 64 (the 64-row block) 1.05-1.62x. */
#define DEC_FUSED_MAX_ROWS 8
/* The fused combine's counters: one a row tile of the launch (B x groups x row tiles). */
int dec_gpu_done_ints(const attn_problem_t *p, bool pack);
static inline size_t dec_gpu_workspace_bytes(const attn_problem_t *p, int S)
{ return S > 1 ? sizeof(float) * (size_t)S * p->B * p->H * p->N_q * (p->d + 1) : 0; }

/* As fa2_mma_config(): 0 it can run d here; -1 not built for d (d = 32, 64 and 128 are);
 * 1 built, but this device's shared memory is too small (why says so). */
int dec_gpu_config(int d, gpu_kernel_config_t *c, char *why, size_t len);
/* Blocks of the split kernel (the paged variant when paged) the whole GPU holds at once
 * (SMs x occupancy): the heuristic's slots. */
int dec_gpu_slots(int d, bool paged, int rows);
/* The GPU's SMs: the heuristic's unit by default (decode_rows.c's dec_pick_splits). */
int dec_gpu_sms(void);
/* split (+ combine when S > 1), asynchronous. Never called after dec_gpu_config != 0. */
void dec_gpu_launch(const attn_problem_t *p, const dec_gpu_args_t *a, bool pack, int S);
/* FlashDecoding++ on the GPU (decode.cu, dec_fdpp.cuh): split-pack with the unified max phi, the FD++
 * combine, and the fallback for the rows that left the safe window; asynchronous. ws:
 * dec_gpu_fdpp_workspace_bytes(p, S) (u_s and the signed l_s, for S = 1 too). */
void dec_gpu_launch_fdpp(const attn_problem_t *p, const dec_gpu_args_t *a, int S, float phi);
static inline size_t dec_gpu_fdpp_workspace_bytes(const attn_problem_t *p, int S)
{ return sizeof(float) * (size_t)S * p->B * p->H * p->N_q * (p->d + 1); }
/* The rows the FD++ launches recomputed since the last call (a sum over launches), and the
 * last launch's flags [B][H][N_q] into flags (may be NULL). */
long dec_gpu_fdpp_recomputed(uint8_t *flags, size_t nrows);
/* The FD++ kernels' bytes: dec_hbm_traffic_gpu(pack) with the partials written and read even
 * at S = 1, plus dec_recompute_bytes() of each row flags marks (may be NULL). */
double dec_fdpp_hbm_bytes_gpu(const attn_problem_t *p, const dec_cache_t *c, attn_blocks_t b, int S, const uint8_t *flags);
/* The combine kernel alone on device partials Opart [S][nrows][d], Lpart [S][nrows] (the
 * check of dec.combine_gpu on crafted partials, dec_check_combine_gpu); d = 32, 64 or 128. */
void dec_gpu_combine(int d, int S, int nrows, const float *Opart, const float *Lpart, float *O, float *L);
/* In an exercise build the paged split kernel checks every pool page its page lookup
 * (dec.page_lookup_gpu) returns against the pool of B x pages_per_seq pages the driver
 * builds (dec_gpu_paginate), reads an out-of-range one as page 0 instead of faulting,
 * and counts it: the count since the last call (0 in a reference build). */
int dec_gpu_page_faults(void);
/* n fp16 values in [-2, 2) from a hash of (seed, index), made on the device. */
void dec_gpu_fill(void *x, size_t n, unsigned long long seed);
/* A paged copy of a contiguous device cache k, v ([B][H_kv][N_kv][d]) into the pools
 * kpool, vpool ([B pps][H_kv][page][d]) through the device block table (as dec_paged_make
 * does on the host). */
void dec_gpu_paginate(const attn_problem_t *p, const void *k, const void *v, const int *table, int page,
                      int pps, void *kpool, void *vpool);

#ifdef __cplusplus
}
#endif
#endif
