/* test_phase6.c - unit tests of the Flash-Decoding CPU model (no GPU needed).
 * One line per test: PASS name / FAIL name: why. Exit 1 on any FAIL. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "decode.h"
#include "fa2.h"
#include "online_softmax.h"
#include "oracle.h"
#include "rng.h"
#include "fp16.h"

static int fails;

static void report(int ok, const char *name, const char *why)
{
    if (ok) printf("PASS %s\n", name);
    else { printf("FAIL %s: %s\n", name, why); fails++; }
}

/* The combine against one pass: random scores and values cut into S disjoint key sets;
 * each set's partial from chapter 2's state (O_s, L_s; -inf when empty), combined, must
 * equal the state of all keys at once and chapter 2's merge of the S states. */
static void test_combine(void)
{
    enum { D = 16, NK = 40 };
    char why[200] = "";
    rng_t rng;
    rng_seed(&rng, 3);
    float x[NK], v[NK][D];
    int ok = 1;
    for (int trial = 0; trial < 50 && ok; trial++) {
        for (int j = 0; j < NK; j++) {
            x[j] = (float)(rng_normal(&rng) * 4.0);
            if (j % 7 == 3) x[j] = -INFINITY;           /* masked keys */
            for (int k = 0; k < D; k++) v[j][k] = (float)rng_normal(&rng);
        }
        const int S = 1 + trial % 9;
        float Ls[9], Os[9 * D], o[D], L, o1[D], L1, om[D], Lm;
        online_state_t all, merged, part;
        REF(online_state_init)(&all, D);
        REF(online_state_init)(&merged, D);
        for (int s = 0; s < S; s++) {
            REF(online_state_init)(&part, D);
            for (int j = 0; j < NK; j++)                 /* key j goes to split j * S / NK */
                if (j * S / NK == s && !(trial % 5 == 0 && s == 1)) REF(online_state_push)(&part, x[j], v[j], D);
            REF(online_state_finish)(&part, D, Os + s * D, &Ls[s]);
            if (Ls[s] == INFINITY) Ls[s] = -INFINITY;   /* an empty split's partial */
            REF(online_state_merge)(&merged, &part, D);
        }
        for (int j = 0; j < NK; j++)
            if (!(trial % 5 == 0 && S > 1 && j * S / NK == 1)) REF(online_state_push)(&all, x[j], v[j], D);
        dec_combine_row(S, D, Ls, Os, o, &L);
        REF(online_state_finish)(&all, D, o1, &L1);
        REF(online_state_finish)(&merged, D, om, &Lm);
        double e = fmax(fabs(L - L1), fabs(L - Lm));
        for (int k = 0; k < D; k++) e = fmax(e, fmax(fabs(o[k] - o1[k]), fabs(o[k] - om[k])));
        if (!(e < 1e-5)) { ok = 0; snprintf(why, sizeof why, "trial %d S=%d: error %.3g (L %g, one pass %g)", trial, S, e, L, L1); }
    }
    report(ok, "combine == one pass == chapter 2's merge (50 trials, S = 1..9, empty splits)", why);
    /* every split empty: O = 0, L = +inf */
    float Ls[3] = {-INFINITY, -INFINITY, -INFINITY}, Os[3 * 4], o[4], L = 0;
    for (int e = 0; e < 12; e++) Os[e] = 0.0f;
    dec_combine_row(3, 4, Ls, Os, o, &L);
    snprintf(why, sizeof why, "L = %g, o[0] = %g", L, o[0]);
    report(L == INFINITY && o[0] == 0 && o[3] == 0, "combine of only empty splits: O = 0, L = +inf", why);
    /* two equal partials: L = L_s + log 2, O = O_s */
    float L2[2] = {1.5f, 1.5f}, O2[2] = {0.25f, 0.25f}, o2, Lo;
    dec_combine_row(2, 1, L2, O2, &o2, &Lo);
    snprintf(why, sizeof why, "L = %.7g (want %.7g), O = %g", Lo, 1.5 + log(2.0), o2);
    report(fabs(Lo - (1.5 + log(2.0))) < 1e-6 && fabs(o2 - 0.25f) < 1e-7, "combine of two equal partials: L + log 2", why);
}

/* Split ranges: whole blocks, in order, covering [0, n) exactly once. */
static void test_ranges(void)
{
    char why[200] = "";
    int ok = 1;
    for (int n = 0; n <= 300 && ok; n++)
        for (int Bc = 16; Bc <= 64 && ok; Bc *= 2)
            for (int S = 1; S <= 12 && ok; S++) {
                int next = 0;
                for (int s = 0; s < S && ok; s++) {
                    int k0, k1;
                    dec_split_range(n, Bc, S, s, &k0, &k1);
                    if (k0 != next || k1 < k0 || (k0 < n && k0 % Bc) || k1 > n) {
                        ok = 0;
                        snprintf(why, sizeof why, "n=%d Bc=%d S=%d split %d: [%d, %d), expected to start at %d", n, Bc, S, s, k0, k1, next);
                    }
                    next = k1;
                }
                if (ok && next != n) { ok = 0; snprintf(why, sizeof why, "n=%d Bc=%d S=%d: splits end at %d", n, Bc, S, next); }
            }
    report(ok, "split ranges: whole blocks, in order, cover the cache exactly once", why);
    int k0, k1;
    dec_split_range(1000, 32, 4, 3, &k0, &k1);   /* Tc = 32 blocks, 8 a split: the last [768, 1000) */
    snprintf(why, sizeof why, "got [%d, %d), want [768, 1000)", k0, k1);
    report(k0 == 768 && k1 == 1000, "split range by hand: n=1000 Bc=32 S=4 s=3", why);
    dec_split_range(40, 32, 4, 2, &k0, &k1);     /* 2 blocks, 1 a split: split 2 empty at 40 */
    snprintf(why, sizeof why, "got [%d, %d), want [40, 40)", k0, k1);
    report(k0 == 40 && k1 == 40, "split range by hand: more splits than blocks gives empty splits", why);
}

/* The page lookup: every key of every sequence and head found where the contiguous one is. */
static void test_pages(void)
{
    char why[200] = "";
    attn_problem_t p = attn_problem(3, 4, 2, 1, 77, 32, false);
    attn_inputs_t in;
    if (attn_inputs_make(&in, &p, 5, false) != 0) { report(0, "alloc", "out of memory"); return; }
    int ok = 1;
    for (int page = 1; page <= 128 && ok; page *= 4) {
        dec_paged_t pg;
        if (dec_paged_make(&pg, &in, page, NULL, 9) != 0) { report(0, "alloc", "out of memory"); break; }
        int moved = 0;
        for (int b = 0; b < p.B; b++)
            for (int g = 0; g < p.H_kv; g++)
                for (int j = 0; j < p.N_kv && ok; j++) {
                    size_t a = dec_kv_row(&p, &pg.c, b, g, j), c = dec_kv_row(&p, NULL, b, g, j);
                    moved += a != c;
                    if (memcmp(pg.k + a, in.k_h + c, 2 * (size_t)p.d) || memcmp(pg.v + a, in.v_h + c, 2 * (size_t)p.d)) {
                        ok = 0;
                        snprintf(why, sizeof why, "page %d: key %d of sequence %d head %d not found", page, j, b, g);
                    }
                }
        if (ok && !moved) { ok = 0; snprintf(why, sizeof why, "page %d: the shuffled pool put every key in place", page); }
        dec_paged_free(&pg);
    }
    report(ok, "page lookup through a shuffled pool finds every key (pages 1, 4, 16, 64)", why);
    attn_inputs_free(&in);
}

/* The model: O and L vs the oracle (per sequence when ragged), bytes == formula, SRAM. */
static void model_case(int B, int H, int Hkv, int Nq, int Nkv, int d, int causal, int S, int page, int ragged)
{
    char name[240], why[400] = "";
    attn_problem_t p = attn_problem(B, H, Hkv, Nq, Nkv, d, causal);
    attn_inputs_t in;
    if (attn_inputs_make(&in, &p, 11, false) != 0) { report(0, "alloc", "out of memory"); return; }
    int *lens = malloc(sizeof(int) * (size_t)B);
    for (int b = 0; b < B; b++) lens[b] = ragged ? (b == 1 ? 0 : (int)((long)Nkv * (B - b) / B)) : Nkv;
    dec_paged_t pg;
    dec_cache_t c = { .seqlens_k = ragged ? lens : NULL };
    if (page && dec_paged_make(&pg, &in, page, c.seqlens_k, 13) != 0) { report(0, "alloc", "out of memory"); return; }
    const dec_cache_t *cp = page ? &pg.c : &c;
    size_t nq = attn_q_elems(&p), nl = attn_l_elems(&p);
    float *O = malloc(nq * 4), *L = malloc(nl * 4);
    double *Or = malloc(nq * 8), *Lr = malloc(nl * 8);
    poison_f32(O, nq); poison_f32(L, nl);
    attn_blocks_t bl = fa2_mma_blocks(d);
    hbm_meter_t meter;
    hbm_reset(&meter);
    size_t peak = dec_cpu(&in, cp, bl, S, O, L, &meter);
    dec_oracle_ragged(&in, c.seqlens_k, Or, Lr);
    err_stats_t eO = err_compare(O, Or, nq, tol_cpu()), eL = err_compare(L, Lr, nl, tol_cpu());
    char tag[120];
    snprintf(tag, sizeof tag, "B%d H%d/%d Nq=%d L=%d d%d%s S=%d%s%s", B, H, Hkv, Nq, Nkv, d, causal ? " causal" : "", S,
             page ? " paged" : "", ragged ? " ragged" : "");
    if (page) snprintf(tag + strlen(tag), sizeof tag - strlen(tag), "%d", page);
    char w1[160], w2[160];
    err_first_bad_str(&eO, d, "O", w1, sizeof w1);
    err_first_bad_str(&eL, Nq, "L", w2, sizeof w2);
    snprintf(name, sizeof name, "decode model vs oracle %s", tag);
    snprintf(why, sizeof why, "rel L2 O %.2e L %.2e; %s; %s", eO.rel_l2, eL.rel_l2, w1, w2);
    report(err_pass(&eO, tol_cpu()) && err_pass(&eL, tol_cpu()), name, why);
    double counted = (double)hbm_total(&meter), formula = decode_hbm_bytes(&p, cp, bl, S);
    snprintf(name, sizeof name, "decode bytes == formula %s", tag);
    snprintf(why, sizeof why, "counted %.0f, formula %.0f; SRAM peak %zu of %zu", counted, formula, peak, dec_sram_bytes(d, bl, S));
    report(counted == formula && peak == dec_sram_bytes(d, bl, S), name, why);
    free(O); free(L); free(Or); free(Lr); free(lens);
    if (page) dec_paged_free(&pg);
    attn_inputs_free(&in);
}

/* ---- FlashDecoding++ (decode.h): the unified phi and its fallback ---------------------- */
enum { FD_NORMAL, FD_PLUS_MINUS_1000, FD_MINUS_1000, FD_OUTLIER, FD_EQUAL };
static const char *const FD_NAME[] = {"N(0,1) scores", "scores +-1000", "scores all -1000",
                                      "one huge outlier in head 0", "all scores equal"};

static void set_value(uint16_t *h, float *f, size_t i, float x) { h[i] = f32_to_f16(x); f[i] = f16_to_f32(h[i]); }

/* Scores of a chosen shape (the drawn inputs rewritten, fp16 bits and values together):
 *   +-1000:  Q all a, each key all +-a (a random sign), so that every score is +-1000;
 *   -1000:   every key all -a;
 *   outlier: in KV head 0 of each sequence, key 3 along query head 0's row 0, scaled to a
 *            score of 40 there (the other heads, and so the calibration's median, are N(0,1));
 *   equal:   every key the same row, so that every score of a row is the same. */
static void fd_shape(attn_inputs_t *in, int mode)
{
    const attn_problem_t *p = &in->p;
    const size_t nq = attn_q_elems(p), nk = attn_kv_elems(p);
    const int d = p->d;
    const float a = sqrtf(1000.0f / (d * p->scale));
    if (mode == FD_PLUS_MINUS_1000 || mode == FD_MINUS_1000) {
        for (size_t i = 0; i < nq; i++) set_value(in->q_h, in->q, i, a);
        for (size_t r = 0; r < nk / d; r++) {
            const float sgn = mode == FD_MINUS_1000 || (r * 2654435761u) % 7 < 3 ? -1.0f : 1.0f;
            for (int k = 0; k < d; k++) set_value(in->k_h, in->k, r * d + k, sgn * a);
        }
    } else if (mode == FD_OUTLIER) {
        for (int b = 0; b < p->B && p->N_kv > 3; b++) {   /* query head 0 reads KV head 0 */
            const float *q = in->q + attn_q_offset(p, b, 0);
            float qq = 0;
            for (int k = 0; k < d; k++) qq += q[k] * q[k];
            const size_t row = attn_kv_offset(p, b, 0) + 3 * (size_t)d;
            for (int k = 0; k < d; k++) set_value(in->k_h, in->k, row + k, 40.0f * q[k] / (qq * p->scale));
        }
    } else if (mode == FD_EQUAL) {
        for (size_t r = 0; r < nk / d; r++)
            for (int k = 0; k < d; k++) set_value(in->k_h, in->k, r * d + k, in->k[k]);
    }
}

/* The FD++ model on one shape: O and L vs the oracle, bytes == decode_hbm_bytes + the
 * recomputed rows', SRAM, and the rows recomputed within [lo, hi]. phi: NAN to calibrate. */
static void fdpp_case(int B, int H, int Hkv, int Nq, int Nkv, int d, int causal, int S, int page, int ragged,
                      int mode, float phi, long lo, long hi)
{
    char name[300], why[500] = "";
    attn_problem_t p = attn_problem(B, H, Hkv, Nq, Nkv, d, causal);
    attn_inputs_t in;
    if (attn_inputs_make(&in, &p, 17, false) != 0) { report(0, "alloc", "out of memory"); return; }
    fd_shape(&in, mode);
    int *lens = malloc(sizeof(int) * (size_t)B);
    for (int b = 0; b < B; b++) lens[b] = ragged ? (b == 1 ? 0 : (int)((long)Nkv * (B - b) / B)) : Nkv;
    dec_paged_t pg;
    dec_cache_t c = { .seqlens_k = ragged ? lens : NULL };
    if (page && dec_paged_make(&pg, &in, page, c.seqlens_k, 13) != 0) { report(0, "alloc", "out of memory"); return; }
    const dec_cache_t *cp = page ? &pg.c : &c;
    const size_t nq = attn_q_elems(&p), nl = attn_l_elems(&p);
    float *O = malloc(nq * 4), *L = malloc(nl * 4);
    double *Or = malloc(nq * 8), *Lr = malloc(nl * 8);
    uint8_t *redo = malloc(nl);
    poison_f32(O, nq); poison_f32(L, nl);
    attn_blocks_t bl = fa2_mma_blocks(d);
    if (phi != phi) phi = dec_phi_calibrate(&in, cp);
    hbm_meter_t meter;
    hbm_reset(&meter);
    const size_t peak = dec_cpu_fdpp(&in, cp, bl, S, phi, O, L, &meter, redo);
    dec_oracle_ragged(&in, c.seqlens_k, Or, Lr);
    long n_redo = 0;
    const double formula = dec_fdpp_hbm_bytes(&p, cp, bl, S, redo, &n_redo);
    err_stats_t eO = err_compare(O, Or, nq, tol_cpu()), eL = err_compare(L, Lr, nl, tol_cpu());
    char tag[200], w1[160], w2[160];
    snprintf(tag, sizeof tag, "%s, B%d H%d/%d Nq=%d L=%d d%d%s S=%d%s%s phi=%.1f", FD_NAME[mode], B, H, Hkv, Nq, Nkv, d,
             causal ? " causal" : "", S, page ? " paged" : "", ragged ? " ragged" : "", (double)phi);
    err_first_bad_str(&eO, d, "O", w1, sizeof w1);
    err_first_bad_str(&eL, Nq, "L", w2, sizeof w2);
    snprintf(name, sizeof name, "fd++ model vs oracle (%s)", tag);
    snprintf(why, sizeof why, "rel L2 O %.2e L %.2e; %s; %s", eO.rel_l2, eL.rel_l2, w1, w2);
    report(err_pass(&eO, tol_cpu()) && err_pass(&eL, tol_cpu()), name, why);
    const double counted = (double)hbm_total(&meter);
    snprintf(name, sizeof name, "fd++ bytes == formula + recomputed rows, rows recomputed in [%ld, %ld] (%s)", lo, hi, tag);
    snprintf(why, sizeof why, "counted %.0f, formula %.0f; SRAM peak %zu of %zu; %ld rows recomputed",
             counted, formula, peak, dec_sram_bytes(d, bl, S), n_redo);
    report(counted == formula && peak == dec_sram_bytes(d, bl, S) && n_redo >= lo && n_redo <= hi, name, why);
    free(O); free(L); free(Or); free(Lr); free(lens); free(redo);
    if (page) dec_paged_free(&pg);
    attn_inputs_free(&in);
}

/* The combine's window rule on hand-made partials: passing the top (+inf), no split
 * reaching the bottom (every l_s negative), a row with no key (-0 everywhere). */
static void test_fdpp_combine(void)
{
    float us[2 * 4] = {1, 2, 3, 4, 5, 6, 7, 8}, o[4], L;
    const float ok[2] = {2.0f, -0.5f}, top[2] = {2.0f, INFINITY}, low[2] = {-1e-3f, -2e-3f}, none[2] = {-0.0f, -0.0f};
    int r = dec_fdpp_combine_row(2, 4, 1.5f, true, ok, us, o, &L);
    report(r == 1 && fabsf(o[0] - 6.0f / 2.5f) < 1e-6f && fabsf(L - (1.5f + logf(2.5f))) < 1e-6f,
           "fd++ combine: O = sum u_s / sum |l_s|, L = phi + log sum |l_s| (a split below the window still counts)",
           "wrong O or L");
    report(dec_fdpp_combine_row(2, 4, 1.5f, true, top, us, o, &L) == 0, "fd++ combine: a split past the top recomputes the row", "kept");
    report(dec_fdpp_combine_row(2, 4, 1.5f, true, low, us, o, &L) == 0, "fd++ combine: no split reaching the bottom recomputes the row", "kept");
    r = dec_fdpp_combine_row(2, 4, 1.5f, false, none, us, o, &L);
    report(r == 1 && o[0] == 0 && L == INFINITY, "fd++ combine: a row with no key: O = 0, L = +inf, nothing to recompute", "wrong");
}

/* Claims on the formula (checked against the meter above): S = 1 moves phase 4's bytes;
 * each further split that sees a key costs a head 2 qr d (its own read of Q_i) and every
 * split 8 qr (d + 1) (its partial written, then read back by the combine). */
static void test_claims(void)
{
    char why[240];
    attn_problem_t p = attn_problem(1, 32, 8, 1, 4096, 128, false);
    attn_blocks_t bl = fa2_mma_blocks(128);
    double f4 = REF(fa2_hbm_bytes)(&p, bl), s1 = decode_hbm_bytes(&p, NULL, bl, 1);
    snprintf(why, sizeof why, "fa2 %.0f, S=1 %.0f", f4, s1);
    report(f4 == s1, "S = 1 moves exactly phase 4's bytes (N_q=1 L=4096 H=32 d=128)", why);
    attn_problem_t pc = attn_problem(2, 4, 2, 16, 1000, 64, true);
    attn_blocks_t b64 = fa2_mma_blocks(64);
    snprintf(why, sizeof why, "fa2 %.0f, S=1 %.0f", REF(fa2_hbm_bytes)(&pc, b64), decode_hbm_bytes(&pc, NULL, b64, 1));
    report(REF(fa2_hbm_bytes)(&pc, b64) == decode_hbm_bytes(&pc, NULL, b64, 1), "S = 1 moves phase 4's bytes (causal, N_q=16)", why);
    double s8 = decode_hbm_bytes(&p, NULL, bl, 8), want = s1 + 32.0 * (7 * 2 * 128 + 8 * 8 * (128 + 1));
    snprintf(why, sizeof why, "S=8 %.0f, S=1 + H (7 x 2d + 8 x 8 (d + 1)) = %.0f", s8, want);
    report(s8 == want, "S = 8 adds 7 reads of Q and 8 partials written and read back, per head", why);
}

/* The GPU kernels' bytes (no GPU needed): unpacked = the model's formula; packed = the
 * model's minus the K/V reads of all but one head of each group (N_q = 1: one row tile). */
static void test_gpu_bytes(void)
{
    char why[200] = "";
    int ok = 1;
    for (int Hkv = 1; Hkv <= 8 && ok; Hkv *= 2)
        for (int S = 1; S <= 64 && ok; S *= 4) {
            attn_problem_t p = attn_problem(2, 8, Hkv, 1, 3000, 128, false);
            attn_blocks_t bl = fa2_mma_blocks(128);
            dec_traffic_t m = dec_hbm_traffic(&p, NULL, bl, S), u = dec_hbm_traffic_gpu(&p, NULL, bl, S, false),
                          k = dec_hbm_traffic_gpu(&p, NULL, bl, S, true);
            if (u.total != m.total) { snprintf(why, sizeof why, "Hkv=%d S=%d unpacked %.0f != model %.0f", Hkv, S, u.total, m.total); ok = 0; }
            else if (k.read_kv * (p.H / Hkv) != m.read_kv || k.total != m.total - m.read_kv + k.read_kv) {
                snprintf(why, sizeof why, "Hkv=%d S=%d packed K/V %.0f, model %.0f", Hkv, S, k.read_kv, m.read_kv); ok = 0;
            }
        }
    report(ok, "GPU bytes: unpacked == the model's formula; packing reads K/V once per KV head", why);
}

/* FA2's num_splits_heuristic on waves: what it must pick on known cases. */
static void test_heuristic(void)
{
    char why[200] = "";
    int ok = 1;
    struct { int work, slots, nblocks, want; } c[] = {
        {256, 264, 4096, 1},    /* >= 80% of the slots already: no split */
        {8, 264, 128, 32},      /* 8 x 32 = 256 of 264 (S = 33 adds only empty splits) */
        {32, 264, 8192, 8},     /* 32 x 8 = 256 of 264 slots: 97% */
        {8, 264, 3, 3},         /* no more splits than K/V blocks */
        {8, 264, 512, 31},      /* B = 1 GQA 32:8, L = 64k: 248 of 264 slots (85%, FA2's, takes 28) */
        {1, 132, 1, 1},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0] && ok; i++) {
        int S = dec_num_splits_heuristic(c[i].work, c[i].slots, c[i].nblocks, 128);
        if (S != c[i].want) { snprintf(why, sizeof why, "work %d slots %d blocks %d: S = %d, want %d", c[i].work, c[i].slots, c[i].nblocks, S, c[i].want); ok = 0; }
    }
    report(ok, "num_splits heuristic: fills the waves (FA2's rule, 95% of the best wave efficiency)", why);
}

int main(void)
{
    test_gpu_bytes();
    test_heuristic();
    test_combine();
    test_ranges();
    test_pages();
    static const int Nqs[] = {1, 4, 16}, Ls[] = {1, 7, 1000, 4097};
    for (int a = 0; a < 3; a++)
        for (int k = 0; k < 4; k++)
            for (int causal = 0; causal <= 1; causal++)
                model_case(1, 4, 2, Nqs[a], Ls[k], 64, causal, Ls[k] > 1000 ? 8 : 3, 0, 0);
    model_case(1, 32, 8, 1, 1000, 128, 0, 4, 0, 0);    /* GQA 32:8 */
    model_case(1, 32, 4, 4, 1000, 128, 1, 4, 0, 0);    /* GQA 32:4 */
    model_case(1, 8, 1, 16, 777, 32, 1, 5, 0, 0);      /* MQA */
    model_case(2, 4, 4, 4, 300, 64, 1, 64, 0, 0);      /* more splits than blocks */
    model_case(1, 4, 2, 20, 7, 64, 1, 2, 0, 0);        /* N_q > N_kv: fully masked rows */
    for (int page = 16; page <= 256; page *= 4) {
        model_case(2, 4, 2, 4, 1000, 64, 1, 4, page, 0);
        model_case(3, 4, 2, 4, 1000, 128, 1, 4, page, 1);   /* ragged with a zero-length sequence */
    }
    model_case(4, 4, 1, 1, 4097, 64, 0, 8, 0, 1);
    model_case(3, 2, 2, 16, 50, 64, 1, 1, 0, 1);       /* ragged, S = 1: no combine */
    /* FlashDecoding++: the unified phi calibrated (no row recomputed on N(0,1) scores), then
     * the adversarial scores through the fallback, on the shapes of the model's cases */
    test_fdpp_combine();
    for (int a = 0; a < 3; a++)
        for (int causal = 0; causal <= 1; causal++)
            fdpp_case(1, 4, 2, Nqs[a], 1000, 64, causal, 3, 0, 0, FD_NORMAL, NAN, 0, 0);
    fdpp_case(1, 32, 8, 1, 4097, 128, 0, 4, 0, 0, FD_NORMAL, NAN, 0, 0);
    fdpp_case(1, 8, 1, 16, 777, 32, 1, 5, 0, 0, FD_NORMAL, NAN, 0, 0);          /* MQA */
    fdpp_case(1, 4, 2, 20, 7, 64, 1, 2, 0, 0, FD_NORMAL, NAN, 0, 0);            /* rows that see no key */
    fdpp_case(1, 4, 2, 1, 1, 64, 0, 1, 0, 0, FD_NORMAL, NAN, 0, 0);             /* L = 1, S = 1 */
    fdpp_case(3, 4, 2, 4, 1000, 128, 1, 4, 64, 1, FD_NORMAL, NAN, 0, 0);        /* paged, ragged, an empty sequence */
    /* phi fixed at 0 (calibrated elsewhere, as FD++ calibrates offline): +-1000 passes the top
     * in every row, -1000 reaches no bottom: every row with a key recomputed, and right */
    fdpp_case(1, 4, 2, 4, 1000, 64, 0, 4, 0, 0, FD_PLUS_MINUS_1000, 0.0f, 16, 16);
    fdpp_case(1, 4, 2, 4, 1000, 64, 1, 1, 0, 0, FD_PLUS_MINUS_1000, 0.0f, 16, 16);
    fdpp_case(1, 4, 2, 4, 1000, 64, 0, 4, 0, 0, FD_MINUS_1000, 0.0f, 16, 16);
    fdpp_case(3, 4, 2, 4, 1000, 128, 1, 4, 16, 1, FD_MINUS_1000, 0.0f, 32, 32);  /* 2 sequences with keys */
    /* calibrated on the same scores, +-1000 sits inside the window: nothing recomputed */
    fdpp_case(1, 4, 2, 4, 1000, 64, 0, 4, 0, 0, FD_PLUS_MINUS_1000, NAN, 0, 0);
    /* one outlier (key 3 of head 0, far above the phi calibrated on the other heads): that
     * row recomputed, and only it */
    fdpp_case(1, 4, 4, 1, 1000, 64, 0, 4, 0, 0, FD_OUTLIER, NAN, 1, 1);
    fdpp_case(2, 8, 8, 1, 4097, 128, 0, 8, 0, 0, FD_OUTLIER, NAN, 2, 2);
    /* all scores equal: inside the window, O = the mean of V, nothing recomputed */
    fdpp_case(1, 4, 2, 1, 1000, 64, 0, 4, 0, 0, FD_EQUAL, NAN, 0, 0);
    test_claims();
    return fails ? 1 : 0;
}
