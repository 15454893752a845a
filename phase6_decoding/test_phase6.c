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
        {1, 132, 1, 1},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0] && ok; i++) {
        int S = dec_num_splits_heuristic(c[i].work, c[i].slots, c[i].nblocks, 128);
        if (S != c[i].want) { snprintf(why, sizeof why, "work %d slots %d blocks %d: S = %d, want %d", c[i].work, c[i].slots, c[i].nblocks, S, c[i].want); ok = 0; }
    }
    report(ok, "num_splits heuristic: fills the waves (FA2's rule)", why);
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
    test_claims();
    return fails ? 1 : 0;
}
