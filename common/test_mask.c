/* test_mask.c - unit tests of common/mask.h, FlashMask's column-sparse masks: each of the
 * twelve masks, built from its CLI spec on square, wide, tall, tailed and one-element
 * shapes, against a definition written here directly on (row, key) - not through
 * mask.c's runs; causal against problem.h's attn_visible; the tile rule (FlashMask
 * Sec. 4) against a brute-force look at every tile; the refused specs.
 * Prints "PASS name" / "FAIL name: why" per test; exit 1 on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mask.h"
#include "problem.h"

static int failures;
static void expect(int ok, const char *name, const char *why)
{
    if (ok) printf("PASS %s\n", name);
    else { printf("FAIL %s: %s\n", name, why); failures++; }
}

/* ---- the direct definitions -------------------------------------------------------- */
enum { FULL, CAUSAL, SLIDING, CAUSAL_DOC, DOC, SHARED_Q, GLOBAL_SLIDING, CAUSAL_BLOCKWISE,
       PREFIX_CAUSAL, PREFIX_DOC, QK_SPARSE, RANDOM_EVICTION, N_MASKS };
static const char *NAMES[N_MASKS] = { "full", "causal", "sliding", "causal_document", "document",
    "shared_question", "global_sliding", "causal_blockwise", "prefix_lm_causal", "prefix_lm_document",
    "qk_sparse", "random_eviction" };

typedef struct { int kind, n, v[8]; char spec[96]; } tcase_t;

/* The documents of a list of lengths, the keys left over one more: the index of the
 * document holding key position p (-1 before the first key), and its start. */
static int doc_at(const tcase_t *c, int step, int N_kv, long p, long *start)
{
    if (p < 0) return -1;
    long s = 0;
    int k = 0;
    for (int t = step - 1; t < c->n; t += step, k++) {
        if (p < s + c->v[t]) { *start = s; return k; }
        s += c->v[t];
    }
    (void)N_kv;
    *start = s;          /* the leftover document */
    return k;
}
static int last_doc(const tcase_t *c, int N_kv)
{
    long s, sum = 0;
    for (int t = 0; t < c->n; t++) sum += c->v[t];
    return doc_at(c, 1, N_kv, sum < N_kv ? N_kv - 1 : sum - 1, &s);
}

/* May row i attend key j, straight from the mask's meaning (mask.h's list). */
static int direct(const tcase_t *c, int N_q, int N_kv, int i, int j)
{
    long q = (long)i + (N_kv - N_q), s1, s2;      /* the row's position among the keys */
    int causal = j <= q;
    switch (c->kind) {
    case FULL:     return 1;
    case CAUSAL:   return causal;
    case SLIDING:  return causal && q - j < c->v[0];
    case CAUSAL_DOC: return causal && doc_at(c, 1, N_kv, q, &s1) == doc_at(c, 1, N_kv, j, &s2);
    case DOC:      return doc_at(c, 1, N_kv, q, &s1) == doc_at(c, 1, N_kv, j, &s2);
    case SHARED_Q: {
        int dj = doc_at(c, 1, N_kv, j, &s2);
        return causal && (dj == 0 || dj == doc_at(c, 1, N_kv, q, &s1));
    }
    case GLOBAL_SLIDING: return q < c->v[0] || j < c->v[0] || labs(q - j) <= c->v[1];
    case CAUSAL_BLOCKWISE: {
        int dq = doc_at(c, 1, N_kv, q, &s1);
        return causal && (dq == doc_at(c, 1, N_kv, j, &s2) || dq == last_doc(c, N_kv));
    }
    case PREFIX_CAUSAL: return j < c->v[0] || causal;
    case PREFIX_DOC: {   /* v: P1, L1, P2, L2, ...; the leftover document has no prefix */
        int dj = doc_at(c, 2, N_kv, j, &s2);
        if (doc_at(c, 2, N_kv, q, &s1) != dj) return 0;
        int P = 2 * dj < c->n ? c->v[2 * dj] : 0;
        return j < s2 + P || causal;
    }
    case QK_SPARSE:      /* v: O1, L1, ... */
        for (int t = 0; t < c->n; t += 2)
            if (j >= c->v[t] && j < c->v[t] + c->v[t + 1] && q < c->v[t] + c->v[t + 1]) return 0;
        return causal;
    }
    return -1;
}

/* ---- the shapes and the cases ------------------------------------------------------ */
static const int SHAPES[][2] = { {1, 1}, {1, 9}, {9, 1}, {7, 7}, {37, 37}, {20, 45}, {45, 20},
                                 {64, 64}, {100, 130}, {130, 100}, {33, 96} };
#define N_SHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))

static int add(tcase_t *out, int n, int kind, int nv, const int *v)
{
    tcase_t *c = &out[n];
    c->kind = kind;
    c->n = nv;
    int k = snprintf(c->spec, sizeof c->spec, "%s", NAMES[kind]);
    for (int t = 0; t < nv; t++) {
        c->v[t] = v[t];
        k += snprintf(c->spec + k, sizeof c->spec - (size_t)k, "%c%d", t ? ',' : ':', v[t]);
    }
    return n + 1;
}
#define ADD(kind, ...) \
    do { const int v_[] = { __VA_ARGS__ }; n = add(out, n, kind, (int)(sizeof v_ / sizeof v_[0]), v_); } while (0)

/* The cases of one shape (parameters scaled to N_kv so that every one is valid). */
static int cases_for(int N_kv, tcase_t *out)
{
    int n = 0, N = N_kv;
    int a = N / 3 > 0 ? N / 3 : 1, b = N / 4 > 0 ? N / 4 : 1;
    int two = a + b <= N;                       /* room for two listed documents */
    n = add(out, n, FULL, 0, NULL);
    n = add(out, n, CAUSAL, 0, NULL);
    ADD(SLIDING, 1); ADD(SLIDING, 3); ADD(SLIDING, N / 3 + 1); ADD(SLIDING, N + 5);
    for (int kind = CAUSAL_DOC; kind <= CAUSAL_BLOCKWISE; kind++) {
        if (kind == GLOBAL_SLIDING) continue;
        ADD(kind, a);
        if (two) ADD(kind, a, b);
        ADD(kind, N);                           /* one document, nothing left over */
        if (two && N - a - b > 0) ADD(kind, a, b, N - a - b);   /* the lengths sum to N_kv */
    }
    ADD(GLOBAL_SLIDING, 0, 1); ADD(GLOBAL_SLIDING, N < 2 ? N : 2, 3); ADD(GLOBAL_SLIDING, N, 1);
    ADD(GLOBAL_SLIDING, 1, N / 5 + 1);
    ADD(PREFIX_CAUSAL, 0); ADD(PREFIX_CAUSAL, N / 2); ADD(PREFIX_CAUSAL, N);
    ADD(PREFIX_DOC, a / 2, a);
    if (two) ADD(PREFIX_DOC, a / 2, a, 0, b);
    ADD(PREFIX_DOC, N, N);
    ADD(QK_SPARSE, N / 4, N / 8 > 0 ? N / 8 : 1);
    ADD(QK_SPARSE, 0, 1);
    if (N >= 20) ADD(QK_SPARSE, 1, 2, 4, N / 4, N / 2, N / 2);
    return n;
}

/* ---- the tests ---------------------------------------------------------------------- */
static void test_vs_direct(void)
{
    char name[160], why[320];
    int bad[N_MASKS] = { 0 }, built[N_MASKS] = { 0 };
    char first[N_MASKS][320];
    tcase_t cs[64];
    for (int s = 0; s < N_SHAPES; s++) {
        int N_q = SHAPES[s][0], N_kv = SHAPES[s][1];
        int nc = cases_for(N_kv, cs);
        unsigned char *dense = malloc((size_t)N_q * N_kv);
        for (int t = 0; t < nc; t++) {
            const tcase_t *c = &cs[t];
            attn_mask_t m;
            char e[200] = "";
            if (mask_parse(c->spec, N_q, N_kv, &m, e, sizeof e)) {
                snprintf(why, sizeof why, "'%s' on %dx%d refused: %s", c->spec, N_q, N_kv, e);
            } else {
                built[c->kind]++;
                mask_dense(&m, dense);
                int i0 = -1, j0 = 0;
                for (int i = 0; i < N_q && i0 < 0; i++)
                    for (int j = 0; j < N_kv; j++)
                        if (dense[(size_t)i * N_kv + j] != direct(c, N_q, N_kv, i, j)) { i0 = i; j0 = j; break; }
                if (mask_check(&m, e, sizeof e)) snprintf(why, sizeof why, "'%s' on %dx%d: %s", c->spec, N_q, N_kv, e);
                else if (i0 >= 0)
                    snprintf(why, sizeof why, "'%s' on %dx%d: row %d key %d is %s, the definition says %s", c->spec,
                             N_q, N_kv, i0, j0, dense[(size_t)i0 * N_kv + j0] ? "visible" : "masked",
                             dense[(size_t)i0 * N_kv + j0] ? "masked" : "visible");
                else why[0] = 0;
                mask_free(&m);
            }
            if (why[0] && !bad[c->kind]++) snprintf(first[c->kind], sizeof first[c->kind], "%s", why);
        }
        free(dense);
    }
    for (int k = 0; k < N_MASKS; k++) {
        if (k == RANDOM_EVICTION) continue;
        snprintf(name, sizeof name, "mask: %s equals its direct definition (%d masks on %d shapes, N=1 and tails)",
                 NAMES[k], built[k], N_SHAPES);
        expect(!bad[k] && built[k] > 0, name, bad[k] ? first[k] : "no mask built");
    }
}

static void test_causal_is_attn_visible(void)
{
    char why[200] = "";
    for (int s = 0; s < N_SHAPES && !why[0]; s++) {
        int N_q = SHAPES[s][0], N_kv = SHAPES[s][1];
        attn_problem_t p = attn_problem(1, 1, 1, N_q, N_kv, 16, true);
        attn_mask_t m;
        if (mask_parse("causal", N_q, N_kv, &m, why, sizeof why)) break;
        for (int i = 0; i < N_q && !why[0]; i++)
            for (int j = 0; j < N_kv; j++)
                if (mask_visible(&m, i, j) != (int)attn_visible(&p, i, j)) {
                    snprintf(why, sizeof why, "%dx%d row %d key %d differs from attn_visible", N_q, N_kv, i, j);
                    break;
                }
        mask_free(&m);
    }
    expect(!why[0], "mask: causal equals problem.h's attn_visible on every shape (N_q > N_kv: empty rows)", why);
}

/* random_eviction has no closed form to compare with; what it promises is checked
 * instead, row by row: causal, the newest key always seen, min(q + 1, C) keys seen,
 * from position C on exactly one key leaves per row and none comes back. */
static void test_random_eviction(void)
{
    char why[240] = "";
    static const int caches[] = { 1, 3, 16 };
    for (int s = 0; s < N_SHAPES && !why[0]; s++)
        for (int ci = 0; ci < 3 && !why[0]; ci++)
            for (int seed = 1; seed <= 2 && !why[0]; seed++) {
                int N_q = SHAPES[s][0], N_kv = SHAPES[s][1], C = caches[ci], Ce = C < N_kv ? C : N_kv;
                char spec[48];
                snprintf(spec, sizeof spec, "random_eviction:%d,%d", seed, C);
                attn_mask_t m;
                if (mask_parse(spec, N_q, N_kv, &m, why, sizeof why)) break;
                for (int i = 0; i < N_q && !why[0]; i++) {
                    long q = (long)i + (N_kv - N_q), seen = 0, left = 0, back = 0;
                    int acausal = 0;
                    for (int j = 0; j < N_kv; j++) {
                        int v = mask_visible(&m, i, j);
                        seen += v;
                        acausal |= v && j > q;
                        if (i + 1 < N_q) {
                            int w = mask_visible(&m, i + 1, j);
                            left += v && !w;
                            back += !v && w && j != q + 1;
                        }
                    }
                    long want = q < 0 ? 0 : q + 1 < Ce ? q + 1 : Ce;
                    if (acausal || seen != want || (q >= 0 && !mask_visible(&m, i, (int)q)) ||
                        (i + 1 < N_q && q + 1 >= 0 && (back || left != (q + 1 >= C ? 1 : 0))))
                        snprintf(why, sizeof why, "%s on %dx%d, row %d (position %ld): sees %ld keys (want %ld), "
                                 "%ld leave and %ld come back at the next row", spec, N_q, N_kv, i, q, seen, want, left, back);
                }
                mask_free(&m);
            }
    expect(!why[0], "mask: random_eviction keeps a cache of C keys, one random eviction a row, never back", why);

    attn_mask_t a, b, c;
    char e[200];
    int ok = !mask_parse("random_eviction:7,32", 100, 130, &a, e, sizeof e) &&
             !mask_parse("random_eviction:7,32", 100, 130, &b, e, sizeof e) &&
             !mask_parse("random_eviction:8,32", 100, 130, &c, e, sizeof e);
    int same = ok && !memcmp(a.lts, b.lts, 4 * sizeof(int32_t) * 130);
    int other = ok && memcmp(a.lts, c.lts, 4 * sizeof(int32_t) * 130);
    if (ok) { mask_free(&a); mask_free(&b); mask_free(&c); }
    expect(same && other, "mask: random_eviction: same seed same mask, another seed another", "seeds do not behave");
}

/* The tile rule against every tile's elements. It must be sound both ways (fully masked
 * => no visible element, unmasked => every element visible); the partial tiles that are
 * in fact all masked or all visible are counted, the price of the min/max rule. */
static void test_tiles(void)
{
    static const int BLOCKS[][2] = { {1, 1}, {4, 4}, {16, 16}, {8, 32}, {32, 8}, {5, 7}, {64, 64}, {128, 64} };
    const int nblk = (int)(sizeof BLOCKS / sizeof BLOCKS[0]);
    long tiles[N_MASKS] = { 0 }, loose_full[N_MASKS] = { 0 }, loose_none[N_MASKS] = { 0 };
    int bad[N_MASKS] = { 0 };
    char first[N_MASKS][300], name[200];
    tcase_t cs[64];
    for (int s = 0; s < N_SHAPES; s++) {
        int N_q = SHAPES[s][0], N_kv = SHAPES[s][1];
        int nc = cases_for(N_kv, cs);
        nc = add(cs, nc, RANDOM_EVICTION, 2, (const int[]){ 3, N_kv / 2 > 0 ? N_kv / 2 : 1 });
        unsigned char *dense = malloc((size_t)N_q * N_kv);
        for (int t = 0; t < nc; t++) {
            attn_mask_t m;
            char e[200];
            if (mask_parse(cs[t].spec, N_q, N_kv, &m, e, sizeof e)) continue;   /* test_vs_direct reports it */
            mask_dense(&m, dense);
            int k = cs[t].kind;
            for (int bi = 0; bi < nblk; bi++) {
                int Br = BLOCKS[bi][0], Bc = BLOCKS[bi][1];
                mask_blocks_t b;
                mask_census_t cen;
                if (mask_blocks(&m, Bc, &b) || mask_census(&m, Br, Bc, &cen)) { bad[k]++; continue; }
                long nf = 0, np = 0, nu = 0;
                for (int r0 = 0; r0 < N_q; r0 += Br) {
                    int r1 = r0 + Br < N_q ? r0 + Br : N_q;
                    for (int cb = 0; cb < b.n_blocks; cb++) {
                        int j0 = cb * Bc, j1 = j0 + Bc < N_kv ? j0 + Bc : N_kv;
                        long vis = 0, area = (long)(r1 - r0) * (j1 - j0);
                        for (int i = r0; i < r1; i++)
                            for (int j = j0; j < j1; j++) vis += dense[(size_t)i * N_kv + j];
                        mask_tile_t cl = mask_tile_class(&b, r0, r1, cb);
                        const char *wrong = cl == MASK_TILE_FULLY_MASKED && vis ? "fully masked but has a visible element"
                                          : cl == MASK_TILE_UNMASKED && vis != area ? "unmasked but has a masked element"
                                          : cl == MASK_TILE_PARTIAL && Br == 1 && Bc == 1 ? "a 1x1 tile called partial"
                                          : NULL;
                        if (wrong && !bad[k]++)
                            snprintf(first[k], sizeof first[k], "'%s' on %dx%d, %dx%d tile rows [%d,%d) block %d: %s",
                                     cs[t].spec, N_q, N_kv, Br, Bc, r0, r1, cb, wrong);
                        nf += cl == MASK_TILE_FULLY_MASKED;
                        nu += cl == MASK_TILE_UNMASKED;
                        np += cl == MASK_TILE_PARTIAL;
                        loose_full[k] += cl == MASK_TILE_PARTIAL && vis == 0;
                        loose_none[k] += cl == MASK_TILE_PARTIAL && vis == area;
                        tiles[k]++;
                    }
                }
                long want = (long)((N_q + Br - 1) / Br) * b.n_blocks;
                if ((cen.fully_masked != nf || cen.partial != np || cen.unmasked != nu || nf + np + nu != want) && !bad[k]++)
                    snprintf(first[k], sizeof first[k],
                             "'%s' on %dx%d, %dx%d tiles: census %ld/%ld/%ld, tiles say %ld/%ld/%ld",
                             cs[t].spec, N_q, N_kv, Br, Bc, cen.fully_masked, cen.partial, cen.unmasked, nf, np, nu);
                mask_blocks_free(&b);
            }
            mask_free(&m);
        }
        free(dense);
    }
    for (int k = 0; k < N_MASKS; k++) {
        snprintf(name, sizeof name, "mask: %s tile rule is sound (%ld tiles; called partial but in fact "
                 "fully masked %ld, unmasked %ld)", NAMES[k], tiles[k], loose_full[k], loose_none[k]);
        expect(!bad[k] && tiles[k] > 0, name, bad[k] ? first[k] : "no tiles");
    }
}

/* The block min/max against the columns themselves, a tail block included; and causal's
 * census, known exactly: on 64 x 64 with 16 x 16 tiles, 6 skipped, 4 partial, 6 unmasked. */
static void test_blocks(void)
{
    attn_mask_t m;
    char why[200] = "";
    if (mask_parse("global_sliding:3,5", 50, 70, &m, why, sizeof why) == 0) {
        mask_blocks_t b;
        int Bc = 16;
        if (mask_blocks(&m, Bc, &b) || b.n_blocks != 5) snprintf(why, sizeof why, "mask_blocks failed or wrong block count");
        for (int c = 0; c < b.n_blocks && !why[0]; c++) {
            int32_t lo[4], hi[4];
            const int32_t *vec[4] = { m.lts, m.lte, m.uts, m.ute };
            const int32_t *got[8] = { b.lts_min, b.lts_max, b.lte_min, b.lte_max, b.uts_min, b.uts_max, b.ute_min, b.ute_max };
            for (int k = 0; k < 4; k++) {
                lo[k] = INT32_MAX; hi[k] = INT32_MIN;
                for (int j = c * Bc; j < (c + 1) * Bc && j < m.N_kv; j++) {
                    if (vec[k][j] < lo[k]) lo[k] = vec[k][j];
                    if (vec[k][j] > hi[k]) hi[k] = vec[k][j];
                }
                if (got[2 * k][c] != lo[k] || got[2 * k + 1][c] != hi[k])
                    snprintf(why, sizeof why, "block %d vector %d: min/max %d/%d, want %d/%d", c, k,
                             (int)got[2 * k][c], (int)got[2 * k + 1][c], (int)lo[k], (int)hi[k]);
            }
        }
        mask_blocks_free(&b);
        mask_free(&m);
    }
    expect(!why[0], "mask: mask_blocks gives each column block's min and max (a tail block of 6 columns)", why);

    mask_census_t c = { 0, 0, 0 };
    int rc = mask_parse("causal", 64, 64, &m, why, sizeof why);
    if (!rc) { rc = mask_census(&m, 16, 16, &c); mask_free(&m); }
    snprintf(why, sizeof why, "got %ld fully masked, %ld partial, %ld unmasked", c.fully_masked, c.partial, c.unmasked);
    expect(!rc && c.fully_masked == 6 && c.partial == 4 && c.unmasked == 6,
           "mask: causal 64x64 in 16x16 tiles: 6 skipped, 4 partial (the diagonal), 6 unmasked", why);
}

static void test_bytes_and_round_trip(void)
{
    attn_mask_t m, r;
    char why[512] = "", e[200];
    int ok = !mask_parse("causal_document:2538,1742,3213", 8192, 8192, &m, e, sizeof e);
    size_t bytes = ok ? mask_bytes(&m) : 0;
    double dense = ok ? mask_dense_bytes(&m) : 0;
    if (ok) {
        printf("  causal_document on 8192 x 8192: %zu bytes of vectors, %.0f bytes dense (%.0fx)\n",
               bytes, dense, dense / (double)bytes);
        mask_free(&m);
    }
    expect(ok && bytes == 16 * 8192 && dense == 8192.0 * 8192.0,
           "mask: the vectors take 16 * N_kv bytes (128 KiB at 8192), dense N_q * N_kv",
           "wrong byte counts");
    /* a mask's spec builds the same mask again */
    static const char *specs[] = { "sliding:5", "document:3,4", "prefix_lm_document:1,3,2,4", "qk_sparse:2,3,9,1",
                                   "random_eviction:11", "global_sliding:2,3", "shared_question:4,5" };
    for (int t = 0; t < 7 && !why[0]; t++) {
        if (mask_parse(specs[t], 17, 23, &m, e, sizeof e)) { snprintf(why, sizeof why, "%s: %s", specs[t], e); break; }
        if (mask_parse(m.spec, 17, 23, &r, e, sizeof e)) snprintf(why, sizeof why, "%s -> '%s': %s", specs[t], m.spec, e);
        else {
            if (memcmp(m.lts, r.lts, 4 * 23 * sizeof(int32_t)))
                snprintf(why, sizeof why, "%s -> '%s' builds another mask", specs[t], m.spec);
            mask_free(&r);
        }
        mask_free(&m);
    }
    expect(!why[0], "mask: the spec a mask records builds the same mask again", why);
}

/* Refused specs: nonzero, one sentence (ends with '.', no newline), nothing allocated. */
static void test_bad_specs(void)
{
    static const struct { const char *spec; int N_q, N_kv; } BAD[] = {
        { "", 64, 64 }, { "bogus", 64, 64 }, { "Causal", 64, 64 }, { "causal:3", 64, 64 }, { "full:", 64, 64 },
        { "sliding", 64, 64 }, { "sliding:", 64, 64 }, { "sliding:0", 64, 64 }, { "sliding:-3", 64, 64 },
        { "sliding:+3", 64, 64 }, { "sliding: 3", 64, 64 }, { "sliding:3x", 64, 64 }, { "sliding:3,4", 64, 64 },
        { "sliding:1:2", 64, 64 }, { "sliding:99999999999999999999", 64, 64 }, { "sliding:3000000000", 64, 64 },
        { "document:0", 64, 64 }, { "document:10,-1", 64, 64 }, { "document:a,b", 64, 64 }, { "document:1,,2", 64, 64 },
        { "document:1,2,", 64, 64 }, { "causal_document", 64, 64 }, { "causal_document:40,40", 64, 64 },
        { "shared_question:65", 64, 64 }, { "causal_blockwise:64,1", 64, 64 }, { "global_sliding:5", 64, 64 },
        { "global_sliding:70,3", 64, 64 }, { "global_sliding:2,0", 64, 64 }, { "prefix_lm_causal:65", 64, 64 },
        { "prefix_lm_document:5,4", 64, 64 }, { "prefix_lm_document:1,2,3", 64, 64 },
        { "prefix_lm_document:30,40,10,30", 64, 64 }, { "qk_sparse:10,5,12,3", 64, 64 }, { "qk_sparse:60,10", 64, 64 },
        { "qk_sparse:10,0", 64, 64 }, { "qk_sparse:10", 64, 64 }, { "random_eviction", 64, 64 },
        { "random_eviction:1,0", 64, 64 }, { "random_eviction:1,2,3", 64, 64 },
        { "random_eviction:18446744073709551616", 64, 64 }, { "causal", 0, 64 }, { "full", 64, 0 },
    };
    const int n = (int)(sizeof BAD / sizeof BAD[0]);
    char why[300], bad[400] = "";
    for (int t = 0; t < n; t++) {
        attn_mask_t m;
        memset(&m, 0x5a, sizeof m);
        long before = mask_live_allocations();
        why[0] = 0;
        int rc = mask_parse(BAD[t].spec, BAD[t].N_q, BAD[t].N_kv, &m, why, sizeof why);
        size_t L = strlen(why);
        printf("  '%s' (%dx%d): %s\n", BAD[t].spec, BAD[t].N_q, BAD[t].N_kv, why);
        const char *wrong = rc == 0 ? "accepted" : L == 0 ? "no reason given"
                          : strchr(why, '\n') ? "a reason of more than one line"
                          : why[L - 1] != '.' ? "the reason is not one sentence ending with '.'"
                          : mask_live_allocations() != before || m.lts ? "something was left allocated" : NULL;
        if (wrong && !bad[0])
            snprintf(bad, sizeof bad, "'%s' on %dx%d: %s (%s)", BAD[t].spec, BAD[t].N_q, BAD[t].N_kv, wrong, why);
        if (rc == 0) mask_free(&m);
    }
    char name[120];
    snprintf(name, sizeof name, "mask: %d bad specs refused, each with one sentence and nothing allocated", n);
    expect(!bad[0], name, bad);

    /* and mask_check catches a broken vector */
    attn_mask_t m;
    int ok = !mask_parse("document:3", 10, 10, &m, why, sizeof why);
    if (ok) {
        m.lte[4] = 11;                       /* past N_q */
        int caught = mask_check(&m, why, sizeof why) != 0;
        m.lte[4] = 10; m.uts[2] = 5; m.ute[2] = 4;   /* start after end */
        caught &= mask_check(&m, why, sizeof why) != 0;
        ok = caught;
        mask_free(&m);
    }
    expect(ok, "mask: mask_check refuses a run past N_q and a run that ends before it starts", "not caught");
}

int main(void)
{
    test_vs_direct();
    test_causal_is_attn_visible();
    test_random_eviction();
    test_tiles();
    test_blocks();
    test_bytes_and_round_trip();
    test_bad_specs();
    expect(mask_live_allocations() == 0, "mask: every vector and block allocation was freed", "allocations left");
    return failures ? 1 : 0;
}
