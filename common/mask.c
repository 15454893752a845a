/* mask.c - FlashMask's column-sparse masks (mask.h): the twelve masks of the paper's
 * Fig. 1(a) built as four run vectors, the CLI spec, the dense expansion for the
 * oracle, and the block rule that sorts tiles into skipped, unmasked and partial.
 *
 * Each constructor states its mask on POSITIONS: the key j and the query's position
 * q = i + (N_kv - N_q) in the key sequence (bottom-right alignment, problem.h). It gives
 * each column's two masked runs as position ranges, open-ended ones reaching Q_TOP or
 * Q_BOTTOM; set_column() moves them to rows and cuts them to [0, N_q). Cutting keeps a
 * run a run, so the two-run limit holds by construction for every N_q, N_kv.
 * The definitions follow PaddlePaddle's FlashMask generators (the benchmark scripts
 * that build the paper's masks as startend_row_indices); each constructor says where it
 * departs from them. */
#include "mask.h"
#include "rng.h"
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define Q_TOP    (-((long long)1 << 40))   /* above every row: an upper run from the top  */
#define Q_BOTTOM ((long long)1 << 40)      /* below every row: a lower run to the bottom  */

static long live_allocations;
long mask_live_allocations(void) { return live_allocations; }

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail(char *why, size_t len, const char *fmt, ...)
{
    if (why && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return 1;
}

static int check_shape(const char *name, int N_q, int N_kv, char *why, size_t len)
{
    if (N_q < 1 || N_kv < 1)
        return fail(why, len, "mask '%s' needs N_q >= 1 and N_kv >= 1, got N_q = %d, N_kv = %d.", name, N_q, N_kv);
    return 0;
}

/* The four vectors in one allocation (lts owns it). */
static int alloc_vectors(attn_mask_t *m, const char *name, int N_q, int N_kv, char *why, size_t len)
{
    memset(m, 0, sizeof *m);
    int32_t *v = malloc(4 * (size_t)N_kv * sizeof *v);
    if (!v) return fail(why, len, "mask '%s': out of host memory for %d columns.", name, N_kv);
    live_allocations++;
    m->name = name;
    m->N_q = N_q;
    m->N_kv = N_kv;
    m->lts = v;
    m->lte = v + (size_t)N_kv;
    m->uts = v + 2 * (size_t)N_kv;
    m->ute = v + 3 * (size_t)N_kv;
    return 0;
}

void mask_free(attn_mask_t *m)
{
    if (m->lts) { free(m->lts); live_allocations--; }
    memset(m, 0, sizeof *m);
}

static int32_t to_row(const attn_mask_t *m, long long q)
{
    long long i = q - (long long)(m->N_kv - m->N_q);
    return (int32_t)(i < 0 ? 0 : i > m->N_q ? m->N_q : i);
}

/* Column j masks positions [lo_s, lo_e) (the lower run) and [up_s, up_e) (the upper
 * run). Empty runs go to the edges ([N_q, N_q) and [0, 0)) so that the min/max of a
 * block are not pulled inward by a column that masks nothing. */
static void set_column(attn_mask_t *m, int j, long long lo_s, long long lo_e, long long up_s, long long up_e)
{
    int32_t a = to_row(m, lo_s), b = to_row(m, lo_e), c = to_row(m, up_s), d = to_row(m, up_e);
    if (a >= b) a = b = m->N_q;
    if (c >= d) c = d = 0;
    m->lts[j] = a; m->lte[j] = b;
    m->uts[j] = c; m->ute[j] = d;
}
#define NO_LOWER Q_BOTTOM, Q_BOTTOM
#define NO_UPPER Q_TOP, Q_TOP

int mask_check(const attn_mask_t *m, char *why, size_t len)
{
    if (!m->lts || !m->lte || !m->uts || !m->ute || m->N_q < 1 || m->N_kv < 1)
        return fail(why, len, "the mask has no vectors or no rows or columns.");
    for (int j = 0; j < m->N_kv; j++) {
        if (!(0 <= m->lts[j] && m->lts[j] <= m->lte[j] && m->lte[j] <= m->N_q))
            return fail(why, len, "column %d's lower run [%d, %d) is not within 0 <= start <= end <= N_q = %d.",
                        j, (int)m->lts[j], (int)m->lte[j], m->N_q);
        if (!(0 <= m->uts[j] && m->uts[j] <= m->ute[j] && m->ute[j] <= m->N_q))
            return fail(why, len, "column %d's upper run [%d, %d) is not within 0 <= start <= end <= N_q = %d.",
                        j, (int)m->uts[j], (int)m->ute[j], m->N_q);
    }
    return 0;
}

/* The end of construction: the vectors checked (a failure here is a bug in this file),
 * the spec recorded. */
static int finish(attn_mask_t *m, const char *spec, char *why, size_t len)
{
    snprintf(m->spec, sizeof m->spec, "%s", spec);
    if (mask_check(m, why, len)) { mask_free(m); return 1; }
    return 0;
}

/* A spec "name:a,b,c" from a list, cut with "..." when it does not fit. */
static void spec_of(char *out, size_t size, const char *name, const int *a, const int *b, int n)
{
    size_t k = (size_t)snprintf(out, size, "%s", name);
    for (int t = 0; t < n && k < size; t++) {
        char item[32];
        int w = b ? snprintf(item, sizeof item, "%c%d,%d", t ? ',' : ':', a[t], b[t])
                  : snprintf(item, sizeof item, "%c%d", t ? ',' : ':', a[t]);
        if (k + (size_t)w + 4 > size) { snprintf(out + k, size - k, ",..."); return; }
        memcpy(out + k, item, (size_t)w + 1);
        k += (size_t)w;
    }
}

/* ---- documents: the lengths given, then the rest of the keys as one more ------------ */
static int check_lengths(const char *name, const int *lens, int n, int N_kv, char *why, size_t len)
{
    if (n < 1) return fail(why, len, "mask '%s' needs at least one length.", name);
    long long sum = 0;
    for (int k = 0; k < n; k++) {
        if (lens[k] < 1)
            return fail(why, len, "mask '%s': length %d is %d; lengths must be at least 1.", name, k + 1, lens[k]);
        sum += lens[k];
    }
    if (sum > N_kv)
        return fail(why, len, "mask '%s': the lengths sum to %lld, more than N_kv = %d.", name, sum, N_kv);
    return 0;
}

typedef struct { const int *lens; int n, k; long long s, e, N; } doc_iter_t;
static doc_iter_t docs(const int *lens, int n, int N_kv) { doc_iter_t d = { lens, n, 0, 0, 0, N_kv }; return d; }
/* The next document [s, e) (k: its index); 0 when there is none. */
static int doc_next(doc_iter_t *d)
{
    d->s = d->e;
    if (d->s >= d->N) return 0;
    d->e = d->k < d->n ? d->s + d->lens[d->k] : d->N;
    d->k++;
    return 1;
}

/* ---- the twelve masks ---------------------------------------------------------------
 * Pictures: N = 6 (N_q = N_kv), rows i down, keys j across, '#' visible, '.' masked. */

/* full: no mask; both runs empty in every column.
 *     ######
 *     ######   (all six rows alike) */
int mask_full(attn_mask_t *m, int N_q, int N_kv, char *why, size_t len)
{
    if (check_shape("full", N_q, N_kv, why, len) || alloc_vectors(m, "full", N_q, N_kv, why, len)) return 1;
    for (int j = 0; j < N_kv; j++) set_column(m, j, NO_LOWER, NO_UPPER);
    return finish(m, "full", why, len);
}

/* causal: j <= q, problem.h's attn_visible (bottom-right). Upper run [top, j) in
 * positions, so rows [0, j - (N_kv - N_q)); no lower run.
 *     #.....
 *     ##....
 *     ###...
 *     ####..
 *     #####.
 *     ###### */
int mask_causal(attn_mask_t *m, int N_q, int N_kv, char *why, size_t len)
{
    if (check_shape("causal", N_q, N_kv, why, len) || alloc_vectors(m, "causal", N_q, N_kv, why, len)) return 1;
    for (int j = 0; j < N_kv; j++) set_column(m, j, NO_LOWER, Q_TOP, j);
    return finish(m, "causal", why, len);
}

/* sliding:W - causal, and only the W newest keys: j <= q < j + W (the diagonal counts as
 * one of the W; FlashAttention's window_size = (W - 1, 0); PaddlePaddle's sliding window
 * sets LTS_j = j + W). Upper run [top, j), lower run [j + W, bottom). W = 2:
 *     #.....
 *     ##....
 *     .##...
 *     ..##..
 *     ...##.
 *     ....## */
int mask_sliding(attn_mask_t *m, int N_q, int N_kv, int window, char *why, size_t len)
{
    if (check_shape("sliding", N_q, N_kv, why, len)) return 1;
    if (window < 1) return fail(why, len, "mask 'sliding' needs a window of at least 1 key, got %d.", window);
    if (alloc_vectors(m, "sliding", N_q, N_kv, why, len)) return 1;
    for (int j = 0; j < N_kv; j++) set_column(m, j, (long long)j + window, Q_BOTTOM, Q_TOP, j);
    char spec[40];
    snprintf(spec, sizeof spec, "sliding:%d", window);
    return finish(m, spec, why, len);
}

/* causal_document:L1,L2,... - causal inside each document, nothing across documents
 * (sequence packing). Key j of document [s, e): upper run [top, j) (causal), lower run
 * [e, bottom) (the later documents). Lengths 2, 3 (and 1 left over):
 *     #.....
 *     ##....
 *     ..#...
 *     ..##..
 *     ..###.
 *     .....# */
int mask_causal_document(attn_mask_t *m, int N_q, int N_kv, const int *lens, int n, char *why, size_t len)
{
    if (check_shape("causal_document", N_q, N_kv, why, len) ||
        check_lengths("causal_document", lens, n, N_kv, why, len) ||
        alloc_vectors(m, "causal_document", N_q, N_kv, why, len)) return 1;
    doc_iter_t d = docs(lens, n, N_kv);
    while (doc_next(&d))
        for (long long j = d.s; j < d.e; j++) set_column(m, (int)j, d.e, Q_BOTTOM, Q_TOP, j);
    char spec[MASK_SPEC_MAX];
    spec_of(spec, sizeof spec, "causal_document", lens, NULL, n);
    return finish(m, spec, why, len);
}

/* document:L1,L2,... - bidirectional inside each document, nothing across. Key j of
 * document [s, e): upper run [top, s), lower run [e, bottom). Rows before the first key
 * (N_q > N_kv) belong to no document and see nothing. Lengths 2, 3 (and 1 left over):
 *     ##....
 *     ##....
 *     ..###.
 *     ..###.
 *     ..###.
 *     .....# */
int mask_document(attn_mask_t *m, int N_q, int N_kv, const int *lens, int n, char *why, size_t len)
{
    if (check_shape("document", N_q, N_kv, why, len) || check_lengths("document", lens, n, N_kv, why, len) ||
        alloc_vectors(m, "document", N_q, N_kv, why, len)) return 1;
    doc_iter_t d = docs(lens, n, N_kv);
    while (doc_next(&d))
        for (long long j = d.s; j < d.e; j++) set_column(m, (int)j, d.e, Q_BOTTOM, Q_TOP, d.s);
    char spec[MASK_SPEC_MAX];
    spec_of(spec, sizeof spec, "document", lens, NULL, n);
    return finish(m, spec, why, len);
}

/* shared_question:Q,A1,A2,... - one question then its answers (reward models, DPO:
 * several answers share one prompt). Causal; every answer sees the question, no answer
 * sees another. Question keys: upper run [top, j) only. Key j of answer [s, e): upper
 * [top, j), lower [e, bottom). Q = 2, A1 = 2, A2 = 2:
 *     #.....
 *     ##....
 *     ###...
 *     ####..
 *     ##..#.
 *     ##..## */
int mask_shared_question(attn_mask_t *m, int N_q, int N_kv, const int *lens, int n, char *why, size_t len)
{
    if (check_shape("shared_question", N_q, N_kv, why, len) ||
        check_lengths("shared_question", lens, n, N_kv, why, len) ||
        alloc_vectors(m, "shared_question", N_q, N_kv, why, len)) return 1;
    doc_iter_t d = docs(lens, n, N_kv);
    while (doc_next(&d))
        for (long long j = d.s; j < d.e; j++)
            set_column(m, (int)j, d.k == 1 ? Q_BOTTOM : d.e, Q_BOTTOM, Q_TOP, j);
    char spec[MASK_SPEC_MAX];
    spec_of(spec, sizeof spec, "shared_question", lens, NULL, n);
    return finish(m, spec, why, len);
}

/* global_sliding:G,W - the first G tokens are global (they see and are seen by all),
 * the others see keys within W on either side: visible iff q < G or j < G or
 * |q - j| <= W (PaddlePaddle's global + sliding window, left = right = W; FlashAttention
 * window_size = (W, W)). Key j >= G: upper run [G, j - W), lower run [j + W + 1, bottom);
 * key j < G: none. Rows before the first key (q < 0 <= G) count as global, which keeps
 * the upper run one run. G = 1, W = 1:
 *     ######
 *     ###...
 *     ####..
 *     #.###.
 *     #..###
 *     #...## */
int mask_global_sliding(attn_mask_t *m, int N_q, int N_kv, int n_global, int window, char *why, size_t len)
{
    if (check_shape("global_sliding", N_q, N_kv, why, len)) return 1;
    if (n_global < 0 || n_global > N_kv)
        return fail(why, len, "mask 'global_sliding' needs 0 <= G <= N_kv = %d global tokens, got %d.", N_kv, n_global);
    if (window < 1) return fail(why, len, "mask 'global_sliding' needs a window of at least 1, got %d.", window);
    if (alloc_vectors(m, "global_sliding", N_q, N_kv, why, len)) return 1;
    for (int j = 0; j < N_kv; j++) {
        if (j < n_global) set_column(m, j, NO_LOWER, NO_UPPER);
        else set_column(m, j, (long long)j + window + 1, Q_BOTTOM, n_global, (long long)j - window);
    }
    char spec[48];
    snprintf(spec, sizeof spec, "global_sliding:%d,%d", n_global, window);
    return finish(m, spec, why, len);
}

/* causal_blockwise:L1,L2,... - causal documents, except that the last block sees every
 * earlier one (in-context learning: demonstration blocks, then the test input). Key j of
 * a block [s, e) that is not the last: upper [top, j), lower [e, start of the last
 * block); of the last: upper [top, j) only. Lengths 2, 2 (and 2 left over, the last):
 *     #.....
 *     ##....
 *     ..#...
 *     ..##..
 *     #####.
 *     ###### */
int mask_causal_blockwise(attn_mask_t *m, int N_q, int N_kv, const int *lens, int n, char *why, size_t len)
{
    if (check_shape("causal_blockwise", N_q, N_kv, why, len) ||
        check_lengths("causal_blockwise", lens, n, N_kv, why, len) ||
        alloc_vectors(m, "causal_blockwise", N_q, N_kv, why, len)) return 1;
    long long last = 0;
    doc_iter_t d = docs(lens, n, N_kv);
    while (doc_next(&d)) last = d.s;
    d = docs(lens, n, N_kv);
    while (doc_next(&d))
        for (long long j = d.s; j < d.e; j++) set_column(m, (int)j, d.e, last, Q_TOP, j);  /* empty in the last */
    char spec[MASK_SPEC_MAX];
    spec_of(spec, sizeof spec, "causal_blockwise", lens, NULL, n);
    return finish(m, spec, why, len);
}

/* prefix_lm_causal:P - the first P keys (the prefix) are seen by every row, the rest
 * causally: visible iff j < P or j <= q. Key j >= P: upper [top, j); key j < P: none.
 * Rows before the first key see the prefix. P = 3:
 *     ###...
 *     ###...
 *     ###...
 *     ####..
 *     #####.
 *     ###### */
int mask_prefix_lm_causal(attn_mask_t *m, int N_q, int N_kv, int prefix, char *why, size_t len)
{
    if (check_shape("prefix_lm_causal", N_q, N_kv, why, len)) return 1;
    if (prefix < 0 || prefix > N_kv)
        return fail(why, len, "mask 'prefix_lm_causal' needs a prefix of 0 to N_kv = %d keys, got %d.", N_kv, prefix);
    if (alloc_vectors(m, "prefix_lm_causal", N_q, N_kv, why, len)) return 1;
    for (int j = 0; j < N_kv; j++) {
        if (j < prefix) set_column(m, j, NO_LOWER, NO_UPPER);
        else set_column(m, j, NO_LOWER, Q_TOP, j);
    }
    char spec[40];
    snprintf(spec, sizeof spec, "prefix_lm_causal:%d", prefix);
    return finish(m, spec, why, len);
}

/* prefix_lm_document:P1,L1,P2,L2,... - documents of lengths Lk, each a prefix LM with a
 * prefix of Pk <= Lk keys; nothing across documents; the keys left over form one more
 * document with no prefix. Key j of document [s, e) with prefix P: lower [e, bottom);
 * upper [top, s) when j < s + P (a prefix key), else [top, j). (P, L) = (2, 3), (1, 3):
 *     ##....
 *     ##....
 *     ###...
 *     ...#..
 *     ...##.
 *     ...### */
int mask_prefix_lm_document(attn_mask_t *m, int N_q, int N_kv, const int *prefixes, const int *lens, int n,
                            char *why, size_t len)
{
    if (check_shape("prefix_lm_document", N_q, N_kv, why, len) ||
        check_lengths("prefix_lm_document", lens, n, N_kv, why, len)) return 1;
    for (int k = 0; k < n; k++)
        if (prefixes[k] < 0 || prefixes[k] > lens[k])
            return fail(why, len, "mask 'prefix_lm_document': document %d has length %d but a prefix of %d; "
                        "a prefix must be 0 to the document's length.", k + 1, lens[k], prefixes[k]);
    if (alloc_vectors(m, "prefix_lm_document", N_q, N_kv, why, len)) return 1;
    doc_iter_t d = docs(lens, n, N_kv);
    while (doc_next(&d)) {
        long long P = d.k <= n ? prefixes[d.k - 1] : 0;
        for (long long j = d.s; j < d.e; j++) set_column(m, (int)j, d.e, Q_BOTTOM, Q_TOP, j < d.s + P ? d.s : j);
    }
    char spec[MASK_SPEC_MAX];
    spec_of(spec, sizeof spec, "prefix_lm_document", prefixes, lens, n);
    return finish(m, spec, why, len);
}

/* qk_sparse:O1,L1,O2,L2,... - causal, and the keys of each span [Ok, Ok + Lk) are hidden
 * from the span's own queries (itself included): they are seen only by the rows after
 * the span (PaddlePaddle's QK-sparse benchmark mask: causal with LTS_j = j,
 * LTE_j = Ok + Lk inside a span). A span's queries still see the keys before it; a
 * query in a span that starts at key 0 sees nothing. Here the causal run and the span's
 * run are one: key j of a span: upper [top, Ok + Lk); other keys: upper [top, j). Spans
 * in increasing order, not overlapping (overlapping ones would not be one run). Span
 * (2, 2):
 *     #.....
 *     ##....
 *     ##....
 *     ##....
 *     #####.
 *     ###### */
int mask_qk_sparse(attn_mask_t *m, int N_q, int N_kv, const int *offsets, const int *lens, int n,
                   char *why, size_t len)
{
    if (check_shape("qk_sparse", N_q, N_kv, why, len)) return 1;
    if (n < 1) return fail(why, len, "mask 'qk_sparse' needs at least one span OFFSET,LENGTH.");
    long long end = 0;
    for (int k = 0; k < n; k++) {
        if (lens[k] < 1)
            return fail(why, len, "mask 'qk_sparse': span %d has length %d; lengths must be at least 1.", k + 1, lens[k]);
        if (offsets[k] < end)
            return fail(why, len, "mask 'qk_sparse': span %d starts at %d, inside or before the previous span "
                        "(spans must increase and not overlap, or a column would need more than two runs).",
                        k + 1, offsets[k]);
        end = (long long)offsets[k] + lens[k];
        if (end > N_kv)
            return fail(why, len, "mask 'qk_sparse': span %d ends at %lld, past N_kv = %d.", k + 1, end, N_kv);
    }
    if (alloc_vectors(m, "qk_sparse", N_q, N_kv, why, len)) return 1;
    for (int j = 0; j < N_kv; j++) set_column(m, j, NO_LOWER, Q_TOP, j);
    for (int k = 0; k < n; k++)
        for (int j = offsets[k]; j < offsets[k] + lens[k]; j++)
            set_column(m, j, NO_LOWER, Q_TOP, (long long)offsets[k] + lens[k]);
    char spec[MASK_SPEC_MAX];
    spec_of(spec, sizeof spec, "qk_sparse", offsets, lens, n);
    return finish(m, spec, why, len);
}

/* random_eviction:SEED[,C] - causal generation with a KV cache of C keys: from position C
 * on, each new token evicts one key chosen uniformly (from the seed) among those still
 * cached before it, and no later row sees that key again. So the row at position q sees
 * min(q + 1, C) keys. Key j evicted at position p_j: upper [top, j), lower [p_j, bottom)
 * (PaddlePaddle's random eviction benchmark mask: causal with LTS_j = the row that evicts
 * key j; theirs draws the victims differently). random_eviction:1,3 (seed 1 evicts
 * key 1 at position 3, key 3 at 4, key 2 at 5):
 *     #.....
 *     ##....
 *     ###...
 *     #.##..
 *     #.#.#.
 *     #...## */
int mask_random_eviction(attn_mask_t *m, int N_q, int N_kv, uint64_t seed, int cache, char *why, size_t len)
{
    if (check_shape("random_eviction", N_q, N_kv, why, len)) return 1;
    if (cache < 1) return fail(why, len, "mask 'random_eviction' needs a cache of at least 1 key, got %d.", cache);
    int C = cache < N_kv ? cache : N_kv;
    int *cached = malloc((size_t)C * sizeof *cached);
    if (!cached) return fail(why, len, "mask 'random_eviction': out of host memory for a cache of %d keys.", C);
    if (alloc_vectors(m, "random_eviction", N_q, N_kv, why, len)) { free(cached); return 1; }
    /* lte holds each key's eviction position while the cache runs */
    for (int j = 0; j < N_kv; j++) m->lte[j] = INT32_MAX;
    for (int k = 0; k < C; k++) cached[k] = k;
    rng_t r;
    rng_seed(&r, seed);
    for (int p = C; p < N_kv; p++) {
        int k = (int)(rng_u64(&r) % (uint64_t)C);
        m->lte[cached[k]] = p;
        cached[k] = p;                 /* the new token takes the victim's slot */
    }
    free(cached);
    for (int j = 0; j < N_kv; j++) {
        long long p = m->lte[j] == INT32_MAX ? Q_BOTTOM : m->lte[j];
        set_column(m, j, p, Q_BOTTOM, Q_TOP, j);
    }
    char spec[64];
    snprintf(spec, sizeof spec, "random_eviction:%llu,%d", (unsigned long long)seed, cache);
    return finish(m, spec, why, len);
}

/* ---- the CLI spec ------------------------------------------------------------------- */
typedef enum { K_FULL, K_CAUSAL, K_SLIDING, K_CAUSAL_DOC, K_DOC, K_SHARED_Q, K_GLOBAL_SLIDING,
               K_CAUSAL_BLOCKWISE, K_PREFIX_CAUSAL, K_PREFIX_DOC, K_QK_SPARSE, K_RANDOM_EVICTION } kind_t;
static const struct {
    const char *name, *usage;
    kind_t kind;
    int min, max;   /* numbers it takes (max -1: any) */
    int pairs;      /* numbers come in pairs          */
} KINDS[] = {
    { "full",               "full",                                  K_FULL,             0, 0,  0 },
    { "causal",             "causal",                                K_CAUSAL,           0, 0,  0 },
    { "sliding",            "sliding:W",                             K_SLIDING,          1, 1,  0 },
    { "causal_document",    "causal_document:L1,L2,...",             K_CAUSAL_DOC,       1, -1, 0 },
    { "document",           "document:L1,L2,...",                    K_DOC,              1, -1, 0 },
    { "shared_question",    "shared_question:Q,A1,A2,...",           K_SHARED_Q,         1, -1, 0 },
    { "global_sliding",     "global_sliding:G,W",                    K_GLOBAL_SLIDING,   2, 2,  0 },
    { "causal_blockwise",   "causal_blockwise:L1,L2,...",            K_CAUSAL_BLOCKWISE, 1, -1, 0 },
    { "prefix_lm_causal",   "prefix_lm_causal:P",                    K_PREFIX_CAUSAL,    1, 1,  0 },
    { "prefix_lm_document", "prefix_lm_document:P1,L1,P2,L2,...",    K_PREFIX_DOC,       2, -1, 1 },
    { "qk_sparse",          "qk_sparse:O1,L1,O2,L2,...",             K_QK_SPARSE,        2, -1, 1 },
    { "random_eviction",    "random_eviction:SEED[,C]",              K_RANDOM_EVICTION,  1, 2,  0 },
};
#define N_KINDS ((int)(sizeof KINDS / sizeof KINDS[0]))

double mask_build_bytes(const char *spec, int N_kv)
{
    const double vectors = 4.0 * N_kv * sizeof(int32_t);
    return strncmp(spec, "random_eviction", 15) == 0 ? vectors + (double)N_kv * sizeof(int) : vectors;
}

const char *mask_known_names(void)
{
    return "full, causal, sliding, causal_document, document, shared_question, global_sliding, "
           "causal_blockwise, prefix_lm_causal, prefix_lm_document, qk_sparse, random_eviction";
}

int mask_parse(const char *spec, int N_q, int N_kv, attn_mask_t *m, char *why, size_t len)
{
    memset(m, 0, sizeof *m);
    if (!spec || !*spec) return fail(why, len, "the mask spec is empty (known masks: %s).", mask_known_names());
    const char *colon = strchr(spec, ':');
    size_t name_len = colon ? (size_t)(colon - spec) : strlen(spec);
    int kind = -1;
    for (int k = 0; k < N_KINDS; k++)
        if (strlen(KINDS[k].name) == name_len && strncmp(KINDS[k].name, spec, name_len) == 0) kind = k;
    if (kind < 0)
        return fail(why, len, "unknown mask '%.*s' (known masks: %s).", (int)(name_len > 40 ? 40 : name_len), spec,
                    mask_known_names());
    const char *name = KINDS[kind].name, *usage = KINDS[kind].usage;

    /* the numbers: plain decimal digits, separated by single commas */
    uint64_t v[MASK_MAX_PARAMS];
    int n = 0;
    if (colon) {
        const char *p = colon + 1;
        if (!*p) return fail(why, len, "mask '%s' has a ':' but no numbers after it (usage: %s).", name, usage);
        for (;;) {
            const char *q = p;
            uint64_t x = 0;
            int over = 0;
            while (*q >= '0' && *q <= '9') {
                unsigned dgt = (unsigned)(*q - '0');
                if (x > (UINT64_MAX - dgt) / 10) over = 1;
                else x = 10 * x + dgt;
                q++;
            }
            size_t w = strcspn(p, ",");
            if (q == p || (*q && *q != ','))
                return fail(why, len, "mask '%s' wants whole numbers in plain decimal digits, got '%.*s' (usage: %s).",
                            name, (int)(w > 40 ? 40 : w), p, usage);
            if (over) return fail(why, len, "mask '%s': the number '%.*s' is too large.", name, (int)(w > 40 ? 40 : w), p);
            if (n == MASK_MAX_PARAMS) return fail(why, len, "mask '%s' takes at most %d numbers.", name, MASK_MAX_PARAMS);
            v[n++] = x;
            if (!*q) break;
            p = q + 1;
        }
    }
    if (n < KINDS[kind].min || (KINDS[kind].max >= 0 && n > KINDS[kind].max) || (KINDS[kind].pairs && n % 2))
        return fail(why, len, "mask '%s' takes %s, got %d number%s (usage: %s).", name,
                    KINDS[kind].max == 0 ? "no numbers" : KINDS[kind].pairs ? "pairs of numbers"
                    : KINDS[kind].min == KINDS[kind].max ? (KINDS[kind].min == 1 ? "1 number" : "2 numbers")
                    : KINDS[kind].max < 0 ? "at least 1 number" : "1 or 2 numbers",
                    n, n == 1 ? "" : "s", usage);
    /* every number but the seed is a count of keys: an int */
    int a[MASK_MAX_PARAMS], b[MASK_MAX_PARAMS / 2];
    for (int k = 0; k < n; k++) {
        if (KINDS[kind].kind == K_RANDOM_EVICTION && k == 0) continue;
        if (v[k] > INT_MAX)
            return fail(why, len, "mask '%s': the number %llu is too large (at most %d).", name,
                        (unsigned long long)v[k], INT_MAX);
        a[k] = (int)v[k];
    }
    if (KINDS[kind].pairs)   /* a: the firsts (prefixes, offsets), b: the seconds (lengths) */
        for (int k = 0; k < n / 2; k++) { a[k] = (int)v[2 * k]; b[k] = (int)v[2 * k + 1]; }

    switch (KINDS[kind].kind) {
    case K_FULL:             return mask_full(m, N_q, N_kv, why, len);
    case K_CAUSAL:           return mask_causal(m, N_q, N_kv, why, len);
    case K_SLIDING:          return mask_sliding(m, N_q, N_kv, a[0], why, len);
    case K_CAUSAL_DOC:       return mask_causal_document(m, N_q, N_kv, a, n, why, len);
    case K_DOC:              return mask_document(m, N_q, N_kv, a, n, why, len);
    case K_SHARED_Q:         return mask_shared_question(m, N_q, N_kv, a, n, why, len);
    case K_GLOBAL_SLIDING:   return mask_global_sliding(m, N_q, N_kv, a[0], a[1], why, len);
    case K_CAUSAL_BLOCKWISE: return mask_causal_blockwise(m, N_q, N_kv, a, n, why, len);
    case K_PREFIX_CAUSAL:    return mask_prefix_lm_causal(m, N_q, N_kv, a[0], why, len);
    case K_PREFIX_DOC:       return mask_prefix_lm_document(m, N_q, N_kv, a, b, n / 2, why, len);
    case K_QK_SPARSE:        return mask_qk_sparse(m, N_q, N_kv, a, b, n / 2, why, len);
    case K_RANDOM_EVICTION: {
        int cache = n == 2 ? a[1] : (N_kv / 2 > 0 ? N_kv / 2 : 1);
        return mask_random_eviction(m, N_q, N_kv, v[0], cache, why, len);
    }
    }
    return fail(why, len, "mask '%s' is not built yet.", name);
}

/* ---- the dense mask, the bytes ------------------------------------------------------ */
void mask_dense(const attn_mask_t *m, unsigned char *out)
{
    for (int i = 0; i < m->N_q; i++)
        for (int j = 0; j < m->N_kv; j++) out[(size_t)i * m->N_kv + j] = (unsigned char)mask_visible(m, i, j);
}

size_t mask_bytes(const attn_mask_t *m) { return 4 * (size_t)m->N_kv * sizeof(int32_t); }

const attn_mask_t *mask_slots[MASK_SLOTS + 1];

uint16_t mask_register(const attn_mask_t *m)
{
    static int next = 0;   /* the slot to reuse when all are taken */
    for (int id = 1; id <= MASK_SLOTS; id++)
        if (mask_slots[id] == m) return (uint16_t)id;
    for (int id = 1; id <= MASK_SLOTS; id++)
        if (!mask_slots[id]) { mask_slots[id] = m; return (uint16_t)id; }
    const int id = 1 + next;
    next = (next + 1) % MASK_SLOTS;
    mask_slots[id] = m;
    return (uint16_t)id;
}

double mask_pairs(const attn_mask_t *m)
{
    double pairs = 0;
    for (int j = 0; j < m->N_kv; j++) {
        long lo = m->lte[j] - m->lts[j], up = m->ute[j] - m->uts[j];
        long s = m->lts[j] > m->uts[j] ? m->lts[j] : m->uts[j], e = m->lte[j] < m->ute[j] ? m->lte[j] : m->ute[j];
        pairs += (double)m->N_q - lo - up + (e > s ? e - s : 0);   /* the overlap was taken twice */
    }
    return pairs;
}

/* first sampled row i' whose original row i' N_q / N_q' is >= r */
static int32_t sample_row(int32_t r, int N_q, int N_q_small)
{
    long long i = ((long long)r * N_q_small + N_q - 1) / N_q;   /* ceil(r N_q' / N_q) */
    return (int32_t)(i > N_q_small ? N_q_small : i);
}

int mask_sample(const attn_mask_t *m, int N_q, int N_kv, attn_mask_t *out)
{
    char why[16];
    if (alloc_vectors(out, m->name, N_q, N_kv, why, sizeof why)) return 1;
    snprintf(out->spec, sizeof out->spec, "%.60s sampled to %dx%d", m->spec, N_q, N_kv);
    for (int j = 0; j < N_kv; j++) {
        const int jo = (int)((long long)j * m->N_kv / N_kv);
        out->lts[j] = sample_row(m->lts[jo], m->N_q, N_q);
        out->lte[j] = sample_row(m->lte[jo], m->N_q, N_q);
        out->uts[j] = sample_row(m->uts[jo], m->N_q, N_q);
        out->ute[j] = sample_row(m->ute[jo], m->N_q, N_q);
    }
    return 0;
}

/* ---- the block preprocessing and the tile rule (FlashMask Sec. 4) --------------------- */
int mask_blocks(const attn_mask_t *m, int Bc, mask_blocks_t *b)
{
    memset(b, 0, sizeof *b);
    if (Bc < 1 || m->N_kv < 1) return 1;
    int nb = (m->N_kv + Bc - 1) / Bc;
    int32_t *v = malloc(8 * (size_t)nb * sizeof *v);
    if (!v) return 1;
    live_allocations++;
    b->Bc = Bc;
    b->n_blocks = nb;
    int32_t **arr[8] = { &b->lts_min, &b->lts_max, &b->lte_min, &b->lte_max,
                         &b->uts_min, &b->uts_max, &b->ute_min, &b->ute_max };
    for (int k = 0; k < 8; k++) *arr[k] = v + (size_t)k * nb;
    const int32_t *vec[4] = { m->lts, m->lte, m->uts, m->ute };
    for (int c = 0; c < nb; c++) {
        int j0 = c * Bc, j1 = j0 + Bc < m->N_kv ? j0 + Bc : m->N_kv;   /* a tail block: its columns only */
        for (int k = 0; k < 4; k++) {
            int32_t lo = vec[k][j0], hi = vec[k][j0];
            for (int j = j0 + 1; j < j1; j++) {
                if (vec[k][j] < lo) lo = vec[k][j];
                if (vec[k][j] > hi) hi = vec[k][j];
            }
            (*arr[2 * k])[c] = lo;
            (*arr[2 * k + 1])[c] = hi;
        }
    }
    return 0;
}

void mask_blocks_free(mask_blocks_t *b)
{
    if (b->lts_min) { free(b->lts_min); live_allocations--; }
    memset(b, 0, sizeof *b);
}

int mask_census(const attn_mask_t *m, int Br, int Bc, mask_census_t *c)
{
    memset(c, 0, sizeof *c);
    mask_blocks_t b;
    if (Br < 1 || mask_blocks(m, Bc, &b)) return 1;
    for (int r0 = 0; r0 < m->N_q; r0 += Br) {
        int r1 = r0 + Br < m->N_q ? r0 + Br : m->N_q;
        for (int cb = 0; cb < b.n_blocks; cb++) {
            mask_tile_t t = mask_tile_class(&b, r0, r1, cb);
            if (t == MASK_TILE_FULLY_MASKED) c->fully_masked++;
            else if (t == MASK_TILE_UNMASKED) c->unmasked++;
            else c->partial++;
        }
    }
    mask_blocks_free(&b);
    return 0;
}
