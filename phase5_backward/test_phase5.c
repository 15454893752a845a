/* test_phase5.c - unit tests of the backward pass's CPU models (no GPU needed).
 * One line per test: PASS name / FAIL name: why. Exit 1 on any FAIL. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bwd.h"
#include "fa2.h"
#include "check.h"

static int fails;

static void report(int ok, const char *name, const char *why)
{
    if (ok) printf("PASS %s\n", name);
    else { printf("FAIL %s: %s\n", name, why); fails++; }
}

/* The causal range by hand, and against a brute-force count of the visited blocks. */
static void test_range(void)
{
    char why[200];
    /* N_q = N_kv = 256, Br = 64, Bc = 128: K/V block 0 (keys 0..127) is seen from row 0
     * -> Q block 0; block 1 (keys 128..255) from row 128 -> Q block 2 */
    attn_problem_t p = attn_problem(1, 1, 1, 256, 256, 64, true);
    int a = bwd_q_block_first(&p, 0, 64, 128), b = bwd_q_block_first(&p, 1, 64, 128);
    snprintf(why, sizeof why, "got %d %d, want 0 2", a, b);
    report(a == 0 && b == 2, "bwd causal range N=256 Br=64 Bc=128", why);
    /* N_q = 100 > N_kv = 37 (shift -63), Br = 32, Bc = 16: key 0 first seen by row 63 (Q
     * block 1), key 16 by row 79 (block 2), key 32 by row 95 (block 2) */
    attn_problem_t q = attn_problem(1, 1, 1, 100, 37, 64, true);
    a = bwd_q_block_first(&q, 0, 32, 16); b = bwd_q_block_first(&q, 1, 32, 16);
    int c = bwd_q_block_first(&q, 2, 32, 16);
    snprintf(why, sizeof why, "got %d %d %d, want 1 2 2", a, b, c);
    report(a == 1 && b == 2 && c == 2, "bwd causal range N_q=100 > N_kv=37 (masked rows)", why);
    /* N_q = 300 < N_kv = 1000 (shift 700): blocks of keys < 700 are seen by every row */
    attn_problem_t r = attn_problem(1, 1, 1, 300, 1000, 64, true);
    a = bwd_q_block_first(&r, 10, 64, 64); b = bwd_q_block_first(&r, 15, 64, 64);
    snprintf(why, sizeof why, "got %d %d, want 0 4", a, b);   /* key 640 -> row 0; key 960 -> row 260 */
    report(a == 0 && b == 4, "bwd causal range N_q=300 < N_kv=1000", why);
    attn_problem_t nc = attn_problem(1, 1, 1, 300, 1000, 64, false);
    snprintf(why, sizeof why, "got %d", bwd_q_block_first(&nc, 15, 64, 64));
    report(bwd_q_block_first(&nc, 15, 64, 64) == 0, "bwd no mask: every Q block", why);
    /* brute force: (i, j) visited iff the block holds a visible entry; the formula's row
     * count == the rows of the visited blocks counted one by one */
    int ok = 1;
    for (int Nq = 1; Nq <= 130 && ok; Nq += 43)
        for (int Nkv = 1; Nkv <= 130 && ok; Nkv += 37) {
            attn_problem_t s = attn_problem(1, 1, 1, Nq, Nkv, 32, true);
            attn_blocks_t bl = { 16, 32 };
            if (bwd_check_causal_range(&s, bl, why, sizeof why) != 0) { ok = 0; break; }
            double rows = 0;
            for (int j = 0; j * 32 < Nkv && ok; j++) {
                int first = bwd_q_block_first(&s, j, 16, 32);
                for (int i = 0; i * 16 < Nq; i++) {
                    int vis = 0;
                    for (int row = i * 16; row < Nq && row < (i + 1) * 16; row++)
                        for (int col = j * 32; col < Nkv && col < (j + 1) * 32; col++) vis |= attn_visible(&s, row, col);
                    if ((i >= first) != (vis != 0)) {
                        ok = 0;
                        snprintf(why, sizeof why, "Nq=%d Nkv=%d block (%d, %d): visits %d, visible %d", Nq, Nkv, i, j, i >= first, vis);
                    }
                    if (vis) rows += (Nq - i * 16 < 16 ? Nq - i * 16 : 16);
                }
            }
            /* read_l_d = rows x 2 x 4 bytes (one head) */
            double want = rows * 8.0, got = bwd_hbm_traffic(&s, bl).read_l_d;
            if (ok && got != want) { ok = 0; snprintf(why, sizeof why, "Nq=%d Nkv=%d: formula's L, D bytes %.0f, brute force %.0f", Nq, Nkv, got, want); }
        }
    report(ok, "bwd causal range = exactly the blocks with a visible entry; formula's rows = brute-force count", why);
}

/* Max abs and rel L2 of out vs ref. */
static int close_to(const float *out, const double *ref, size_t n, char *why, size_t len, const char *what)
{
    err_stats_t e = err_compare(out, ref, n, tol_cpu());
    char w[160];
    err_first_bad_str(&e, 1, what, w, sizeof w);
    snprintf(why, len, "%s: max abs %.2e rel L2 %.2e; %s", what, e.max_abs, e.rel_l2, w);
    return err_pass(&e, tol_cpu());
}

/* Both models against the oracle (tol_cpu), their bytes against the formulas exactly. */
static void model_case(int B, int H, int Hkv, int Nq, int Nkv, int d, int causal, attn_blocks_t bl)
{
    char name[200], why[400] = "ok";
    attn_problem_t p = attn_problem(B, H, Hkv, Nq, Nkv, d, causal);
    attn_inputs_t in;
    if (attn_inputs_make(&in, &p, 11, true) != 0) { report(0, "alloc", "out of memory"); return; }
    size_t nq = attn_q_elems(&p), nk = attn_kv_elems(&p), nl = attn_l_elems(&p);
    float *O = malloc(nq * 4), *L = malloc(nl * 4), *g[3], *s[3];
    double *r[3];
    for (int t = 0; t < 3; t++) {
        size_t n = t ? nk : nq;
        g[t] = malloc(n * 4); s[t] = malloc(n * 4); r[t] = malloc(n * 8);
        poison_f32(g[t], n); poison_f32(s[t], n);
    }
    attn_blocks_t b4 = { 32, 32 };
    REF(fa2_cpu)(&in, b4, O, L, NULL, NULL);
    REF(oracle_bwd)(&p, in.q, in.k, in.v, in.dO, r[0], r[1], r[2]);
    hbm_meter_t m;
    hbm_reset(&m);
    size_t peak = bwd_fa2(&in, bl, O, L, g[0], g[1], g[2], &m);
    char tag[120];
    snprintf(tag, sizeof tag, "B%d H%d/%d %dx%d d%d%s (%dx%d)", B, H, Hkv, Nq, Nkv, d, causal ? " causal" : "", bl.Br, bl.Bc);
    int ok = 1;
    for (int t = 0; t < 3 && ok; t++) ok = close_to(g[t], r[t], t ? nk : nq, why, sizeof why, t == 0 ? "dQ" : t == 1 ? "dK" : "dV");
    snprintf(name, sizeof name, "fa2 bwd model vs oracle_bwd %s", tag);
    report(ok, name, why);
    double counted = (double)hbm_total(&m), formula = bwd_hbm_bytes(&p, bl);
    snprintf(name, sizeof name, "fa2 bwd bytes == formula, SRAM == budget %s", tag);
    snprintf(why, sizeof why, "counted %.0f, formula %.0f; SRAM peak %zu of %zu", counted, formula, peak, bwd_sram_bytes(d, bl));
    report(counted == formula && peak == bwd_sram_bytes(d, bl), name, why);

    for (int e = 4; e >= 2; e -= 2) {
        hbm_reset(&m);
        int rc = bwd_std_cpu(&in, L, e, s[0], s[1], s[2], &m);
        snprintf(name, sizeof name, "std bwd (e=%d) bytes == formula %s", e, tag);
        snprintf(why, sizeof why, "rc %d, counted %.0f, formula %.0f", rc, (double)hbm_total(&m), bwd_std_bytes(&p, e));
        report(rc == 0 && (double)hbm_total(&m) == bwd_std_bytes(&p, e), name, why);
        if (e == 2 && d <= 128) {   /* the per-row emulation stands in for this model's dQ */
            double diff = 0, err = 0;
            float *row = malloc((size_t)d * 4);
            for (int b = 0; b < B; b++)
                for (int h = 0; h < H; h++)
                    for (int i = 0; i < Nq; i++) {
                        bwd_std16_dq_row(&in, b, h, i, row);
                        const size_t o = attn_q_offset(&p, b, h) + (size_t)i * d;
                        for (int k = 0; k < d; k++) {
                            diff = fmax(diff, fabs(row[k] - s[0][o + k]));
                            err = fmax(err, fabs(s[0][o + k] - r[0][o + k]));
                        }
                    }
            free(row);
            snprintf(name, sizeof name, "std16 dQ row emulation == std bwd (fp16) model's dQ %s", tag);
            snprintf(why, sizeof why, "max |emulation - model| %.3e, the model's own max abs error %.3e", diff, err);
            report(diff <= 0.25 * err || diff <= 1e-6, name, why);
        }
        if (e == 4) {
            ok = 1;
            for (int t = 0; t < 3 && ok; t++) ok = close_to(s[t], r[t], t ? nk : nq, why, sizeof why, t == 0 ? "dQ" : t == 1 ? "dK" : "dV");
            snprintf(name, sizeof name, "std bwd (fp32) vs oracle_bwd %s", tag);
            report(ok, name, why);
        }
    }
    for (int t = 0; t < 3; t++) { free(g[t]); free(s[t]); free(r[t]); }
    free(O); free(L);
    attn_inputs_free(&in);
}

/* The exercises' pieces on their own: D = rowsum(dO * O) == rowsum(P * dP) (the identity
 * the preprocess rests on), dQ zeroed by the preprocess, and the bytes of the preprocess. */
static void test_pieces(void)
{
    char why[200] = "ok";
    attn_problem_t p = attn_problem(1, 2, 2, 37, 53, 32, true);
    attn_inputs_t in;
    if (attn_inputs_make(&in, &p, 5, true) != 0) { report(0, "alloc", "out of memory"); return; }
    size_t nq = attn_q_elems(&p), nl = attn_l_elems(&p);
    float *O = malloc(nq * 4), *L = malloc(nl * 4), *D = malloc(nl * 4), *dQ = malloc(nq * 4);
    attn_blocks_t b4 = { 16, 16 };
    REF(fa2_cpu)(&in, b4, O, L, NULL, NULL);
    poison_f32(dQ, nq); poison_f32(D, nl);
    hbm_meter_t m;
    hbm_reset(&m);
    bwd_preprocess(&in, O, D, dQ, &m);
    int ok = 1, zero = 1;
    double worst = 0;
    for (int h = 0; h < p.H && ok; h++)
        for (int i = 0; i < p.N_q; i++) {
            /* rowsum(P * dP) in fp64 from the oracle's row */
            double o[32], Lr, want = 0;
            REF(oracle_fwd_row)(&p, in.q, in.k, in.v, 0, h, i, o, &Lr);
            for (int j = 0; j < p.N_kv; j++) {
                if (!attn_visible(&p, i, j)) continue;
                double s = 0, dp = 0;
                for (int c = 0; c < p.d; c++) {
                    s += (double)in.q[attn_q_offset(&p, 0, h) + i * 32 + c] * in.k[attn_kv_offset(&p, 0, h) + j * 32 + c];
                    dp += (double)in.dO[attn_q_offset(&p, 0, h) + i * 32 + c] * in.v[attn_kv_offset(&p, 0, h) + j * 32 + c];
                }
                want += exp(s * p.scale - Lr) * dp;
            }
            double got = D[attn_l_offset(&p, 0, h) + i];
            worst = fmax(worst, fabs(got - want));
            if (!(fabs(got - want) <= 1e-4)) { ok = 0; snprintf(why, sizeof why, "h %d row %d: D %.6f, rowsum(P dP) %.6f", h, i, got, want); break; }
        }
    for (size_t k = 0; k < nq; k++) zero &= dQ[k] == 0.0f;
    report(ok, "bwd.D: rowsum(dO * O) == rowsum(P * dP) (fp64 P, dP)", why);
    report(zero, "bwd preprocess zeroes dQ", "a dQ element is not 0");
    double want = (double)p.H * (2.0 * p.N_q * p.d + 4.0 * p.N_q * p.d + 4.0 * p.N_q + 4.0 * p.N_q * p.d);
    snprintf(why, sizeof why, "counted %.0f, formula %.0f, want %.0f", (double)hbm_total(&m), bwd_hbm_traffic(&p, b4).pre, want);
    report((double)hbm_total(&m) == want && bwd_hbm_traffic(&p, b4).pre == want, "bwd preprocess bytes", why);
    free(O); free(L); free(D); free(dQ);
    attn_inputs_free(&in);
}

/* The worked example (quiet): oracle, finite differences, both models. */
static void test_worked(void)
{
    char why[100];
    int n = 0, f = bwd_worked(NULL, &n);
    snprintf(why, sizeof why, "%d of %d checks failed (build/phase5 prints them)", f, n);
    report(f == 0 && n == 58, "bwd worked example 4x2: oracle, finite differences, models", why);
}

/* The claims of the chapter, on the formulas (tested against the counters above). */
static void test_claims(void)
{
    char why[200];
    attn_problem_t p = attn_problem(1, 1, 1, 4096, 4096, 64, false), pc = p;
    pc.causal = true;
    attn_blocks_t bl = bwd_blocks(64);
    double f = bwd_hbm_bytes(&p, bl), fc = bwd_hbm_bytes(&pc, bl), s = bwd_std_bytes(&p, 2);
    snprintf(why, sizeof why, "standard %.0f, fa2 %.0f, fa2 causal %.0f", s, f, fc);
    /* both grow as N^2 (FA2 re-reads Q_i, dO_i and updates dQ_i once per K/V block): about
     * 12 d / Bc bytes a (row, key) against the standard's 20 (fp16) */
    report(f < s / 3 && fc < 0.55 * f, "fa2 bwd moves > 3x fewer bytes than the standard, causal ~half (N=4096 d=64)", why);
    snprintf(why, sizeof why, "S,P,dP,dS at B=32 H=8 N=6250: %.4g bytes", bwd_std_sp_bytes(&(attn_problem_t){32, 8, 8, 6250, 6250, 64, false, 0, 0.125f}, 2));
    attn_problem_t w = attn_problem(32, 8, 8, 6250, 6250, 64, false);
    report(bwd_std_sp_bytes(&w, 2) == 4.0 * 2 * 32 * 8 * 6250.0 * 6250, "the memory wall's bytes: 4 x 2 x B H N^2", why);
}

/* The visit counters' expectation under a FlashMask mask (bwd_visits_want): --mask causal
 * wants what --causal wants, K/V block by K/V block (the tile rule's not-fully-masked Q blocks
 * of a column block are exactly the causal range); for other masks the total over the K/V
 * blocks is B H (the tiles not fully masked), mask_census's count of the same tiles; and the
 * masked row names no exercise (the mask's classes are none). */
static void test_mask_visits(void)
{
    static const int shapes[][2] = { {300, 333}, {333, 100}, {1, 1}, {200, 1000}, {128, 128} };
    static const char *const specs[] = { "sliding:40", "causal_document:100,150,60", "document:60", "qk_sparse:10,20,50,40",
                                         "shared_question:50,30,20", "random_eviction:7" };
    const attn_blocks_t blocks[] = { { 32, 128 }, { 64, 128 }, { 128, 128 } };
    char why[240];
    int ok = 1;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0] && ok; s++)
        for (size_t k = 0; k < sizeof blocks / sizeof blocks[0] && ok; k++) {
            const int Nq = shapes[s][0], Nkv = shapes[s][1];
            attn_mask_t m;
            if (mask_parse("causal", Nq, Nkv, &m, why, sizeof why) != 0) { ok = 0; break; }
            attn_problem_t pc = attn_problem(2, 4, 2, Nq, Nkv, 64, true), pm = attn_problem(2, 4, 2, Nq, Nkv, 64, false);
            pm.mask_id = mask_register(&m);
            drv_visits_t vc = { 0 }, vm = { 0 };
            bwd_visits_want(&vc, &pc, blocks[k], true, NULL);
            bwd_visits_want(&vm, &pm, blocks[k], true, NULL);
            for (int j = 0; j < vc.ntiles && ok; j++)
                if (vc.want[j] != vm.want[j]) {
                    snprintf(why, sizeof why, "N_q=%d N_kv=%d Br=%d: K/V block %d wants %llu Q blocks with --mask causal, "
                             "%llu with --causal", Nq, Nkv, blocks[k].Br, j, vm.want[j], vc.want[j]);
                    ok = 0;
                }
            if (ok && vm.part[0].exercise != NULL) { snprintf(why, sizeof why, "a masked row blames an exercise"); ok = 0; }
            drv_visits_free(&vc); drv_visits_free(&vm);
            mask_free(&m);
        }
    report(ok, "bwd masked visits: --mask causal wants what --causal wants (K/V block by K/V block)", why);
    ok = 1;
    for (size_t s = 0; s < sizeof specs / sizeof specs[0] && ok; s++)
        for (size_t k = 0; k < sizeof blocks / sizeof blocks[0] && ok; k++) {
            attn_mask_t m;
            if (mask_parse(specs[s], 300, 333, &m, why, sizeof why) != 0) { ok = 0; break; }
            attn_problem_t p = attn_problem(2, 4, 2, 300, 333, 64, false);
            p.mask_id = mask_register(&m);
            drv_visits_t v = { 0 };
            bwd_visits_want(&v, &p, blocks[k], true, NULL);
            unsigned long long got = 0;
            for (int j = 0; j < v.ntiles; j++) got += v.want[j];
            mask_census_t c;
            mask_census(&m, blocks[k].Br, blocks[k].Bc, &c);
            const unsigned long long want = 2ull * 4 * (unsigned long long)(c.partial + c.unmasked);
            if (got != want) {
                snprintf(why, sizeof why, "%s Br=%d: the K/V blocks want %llu Q blocks in all, the census says %llu", specs[s],
                         blocks[k].Br, got, want);
                ok = 0;
            }
            /* and fewer than without the skip: the masks above hide whole tiles */
            drv_visits_t all = { 0 };
            bwd_visits_want(&all, &p, blocks[k], false, NULL);
            unsigned long long every = 0;
            for (int j = 0; j < all.ntiles; j++) every += all.want[j];
            if (ok && c.fully_masked > 0 && !(got < every)) {
                snprintf(why, sizeof why, "%s Br=%d: %llu visits with the skip, %llu without", specs[s], blocks[k].Br, got, every);
                ok = 0;
            }
            drv_visits_free(&v); drv_visits_free(&all);
            mask_free(&m);
        }
    report(ok, "bwd masked visits: the K/V blocks' Q blocks sum to the census's tiles not fully masked (B H of them)", why);
}

int main(void)
{
    test_range();
    test_mask_visits();
    static const int Ns[] = {1, 17, 128, 200};
    for (int d = 32; d <= 128; d *= 2)
        for (int k = 0; k < 4; k++)
            for (int c = 0; c <= 1; c++)
                model_case(1, 2, 2, Ns[k], Ns[k], d, c, bwd_blocks(d));
    attn_blocks_t small = { 16, 32 };
    model_case(1, 2, 2, 90, 300, 64, 1, small);     /* N_q < N_kv, causal */
    model_case(1, 2, 2, 100, 37, 64, 1, small);     /* N_q > N_kv: 63 fully masked rows */
    model_case(2, 8, 1, 77, 130, 32, 1, small);     /* GQA 8:1, causal */
    model_case(1, 4, 1, 65, 40, 64, 0, small);      /* MQA, N_q > N_kv, not causal */
    model_case(1, 1, 1, 70, 70, 256, 1, bwd_blocks(256));
    model_case(1, 2, 2, 50, 50, 16, 1, small);      /* d = 16 */
    test_pieces();
    test_worked();
    test_claims();
    return fails ? 1 : 0;
}
