/* decode_model.h - what the CPU model's files share beyond decode.h (decode_cpu.c: the
 * splits and the combine; decode_bytes.c: the closed forms; decode_fdpp_cpu.c: FD++). */
#ifndef PHASE6_DECODE_MODEL_H
#define PHASE6_DECODE_MODEL_H
#include "decode.h"
#include "online_softmax.h"

/* The keys [0, n) Q block i (rows i0 .. i0 + qr - 1) can see, rounded up to whole Bc
 * blocks (as phase 4's fa2_kv_blocks) and capped at the sequence's n keys. */
int dec_visible_keys(const attn_problem_t *p, int n, int i0, int qr, int Bc);
/* The key range split s of Q block i reads: [k0, k1), empty when it sees no key. */
void dec_split_keys(const attn_problem_t *p, int n, int i0, int qr, attn_blocks_t bl, int S, int s,
                    int *k0, int *k1);
/* Pages a K/V block of keys [j0, j0 + kr) spans: the block-table entries it reads. */
int dec_pages_spanned(int j0, int kr, int page);

/* Key rows [j0, j0 + kr) of sequence b, KV head g, into Kj, Vj (fp16 -> fp32, metered);
 * pool: the paged pool's elements (a row outside it reads as zeros, counted in faults). */
void dec_load_kv_block(const attn_problem_t *p, const dec_cache_t *c, int b, int g, int j0, int kr,
                       const uint16_t *Kh, const uint16_t *Vh, size_t pool, float *Kj, float *Vj,
                       hbm_meter_t *meter);

/* FD++ (decode_fdpp_cpu.c): one key's step against phi (in s->m) with the window's flags,
 * a split's l_s as written (the flags in its value), whether a row of a sequence of n keys
 * sees any key, and the fallback that recomputes one row (Qi, Kj, Vj, st: SRAM tiles). */
enum { FDPP_REACHED = 1, FDPP_PASSED = 2 };
REF_PROTO(void, dec_fdpp_push, (online_state_t *s, int *flags, float x, const float *v, int d));
REF_PROTO(float, dec_fdpp_signed_l, (float l, int flags));
bool dec_row_has_keys(const attn_problem_t *p, int n, int row);
void dec_recompute_row(const attn_inputs_t *in, const dec_cache_t *c, attn_blocks_t bl, int b, int h, int row,
                       const uint16_t *Kh, const uint16_t *Vh, size_t pool, float *Qi, float *Kj, float *Vj,
                       online_state_t *st, float *O, float *L, hbm_meter_t *meter);
#endif
