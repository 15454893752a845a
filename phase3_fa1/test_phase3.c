/* test_phase3.c - unit tests of the FlashAttention-1 CPU model (no GPU needed).
 * One line per test: PASS name / FAIL name: why. Exit 1 on any FAIL. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "cost.h"
#include "fa1.h"
#include "naive.h"
#include "oracle.h"

static int fails;

static void report(int ok, const char *name, const char *why)
{
    if (ok) printf("PASS %s\n", name);
    else { printf("FAIL %s: %s\n", name, why); fails++; }
}

/* Block sizes: hand-computed cases, and the rule's invariants over a grid of (M, d). */
static void test_blocks(void)
{
    char why[200] = "";
    attn_blocks_t b;
    /* M = 256 KiB = 65536 floats, d = 32: Bc = ceil(65536 / 128) = 512, Br = min(512, 32) = 32;
     * tiles 2*32*32 + 2*512*32 + 32*512 + 2*32 = 51264 floats <= 65536: the paper's blocks fit */
    int ok = fa1_block_sizes(256 * 1024, 32, &b) == 0 && b.Br == 32 && b.Bc == 512;
    snprintf(why, sizeof why, "got Br=%d Bc=%d, want 32 x 512", b.Br, b.Bc);
    report(ok, "fa1 blocks M=256KiB d=32 = the paper's 32 x 512", why);
    /* M = 128 KiB = 32768 floats, d = 64: paper Bc = 128, Br = 64 needs 32896 floats; Bc = 127
     * needs 8192 + 16256 + 8128 + 128 = 32704 <= 32768 */
    ok = fa1_block_sizes(128 * 1024, 64, &b) == 0 && b.Br == 64 && b.Bc == 127;
    snprintf(why, sizeof why, "got Br=%d Bc=%d, want 64 x 127", b.Br, b.Bc);
    report(ok, "fa1 blocks M=128KiB d=64 = 64 x 127 (paper's 128 lowered to fit)", why);
    /* below one row and one key: refused */
    ok = fa1_block_sizes(fa1_min_sram(128) - 4, 128, &b) != 0 && fa1_block_sizes(fa1_min_sram(128), 128, &b) == 0;
    report(ok, "fa1 blocks refuse M below one row and one key", "min_sram boundary wrong");
    /* invariants: fits, Br <= min(Bc, d), Bc <= ceil(M/4d), and Bc + 1 would not fit */
    ok = 1;
    for (size_t M = 2048; M <= (4u << 20) && ok; M = M * 3 / 2)
        for (int d = 16; d <= 256 && ok; d *= 2) {
            if (M < fa1_min_sram(d)) continue;
            if (fa1_block_sizes(M, d, &b) != 0) { ok = 0; snprintf(why, sizeof why, "M=%zu d=%d refused", M, d); break; }
            size_t paper = (M / 4 + 4 * (size_t)d - 1) / (4 * (size_t)d);
            attn_blocks_t up = { b.Bc + 1 < d ? b.Bc + 1 : d, b.Bc + 1 };
            if (fa1_sram_bytes(d, b) > M || b.Br > b.Bc || b.Br > d || (size_t)b.Bc > paper ||
                ((size_t)b.Bc < paper && fa1_sram_bytes(d, up) <= M)) {
                ok = 0;
                snprintf(why, sizeof why, "M=%zu d=%d: Br=%d Bc=%d (paper Bc %zu)", M, d, b.Br, b.Bc, paper);
            }
        }
    report(ok, "fa1 blocks: fit in M, Br <= min(Bc, d), largest Bc <= ceil(M/4d)", why);
}

/* The model against the oracle (fp32 model, fp16-rounded inputs: rel L2 < 1e-5) and
 * its counted bytes against the closed form, exactly. */
static void model_case(int B, int H, int Hkv, int Nq, int Nkv, int d, int causal, size_t M)
{
    char name[200], why[400] = "";
    attn_problem_t p = attn_problem(B, H, Hkv, Nq, Nkv, d, causal);
    attn_inputs_t in;
    if (attn_inputs_make(&in, &p, 42, false) != 0) { report(0, "alloc", "out of memory"); return; }
    attn_blocks_t b;
    fa1_block_sizes(M, d, &b);
    size_t nq = attn_q_elems(&p), nl = attn_l_elems(&p);
    float *O = malloc(nq * 4), *l = malloc(nl * 4), *m = malloc(nl * 4), *L = malloc(nl * 4);
    double *Or = malloc(nq * 8), *Lr = malloc(nl * 8);
    poison_f32(O, nq); poison_f32(l, nl); poison_f32(m, nl);
    hbm_meter_t meter;
    hbm_reset(&meter);
    size_t peak = fa1_cpu(&in, b, M, O, l, m, &meter);
    fa1_lse(l, m, L, nl);
    REF(oracle_fwd)(&p, in.q, in.k, in.v, Or, Lr);
    err_stats_t eO = err_compare(O, Or, nq, tol_cpu()), eL = err_compare(L, Lr, nl, tol_cpu());
    snprintf(name, sizeof name, "fa1 model vs oracle B%d H%d/%d %dx%d d%d%s M=%zu (%dx%d)", B, H, Hkv,
             Nq, Nkv, d, causal ? " causal" : "", M, b.Br, b.Bc);
    char w1[160], w2[160];
    err_first_bad_str(&eO, d, "O", w1, sizeof w1);
    err_first_bad_str(&eL, Nq, "L", w2, sizeof w2);
    snprintf(why, sizeof why, "rel L2 O %.2e L %.2e; %s; %s", eO.rel_l2, eL.rel_l2, w1, w2);
    report(err_pass(&eO, tol_cpu()) && err_pass(&eL, tol_cpu()), name, why);

    double counted = (double)hbm_total(&meter), formula = fa1_hbm_bytes(&p, b.Bc);
    snprintf(name, sizeof name, "fa1 bytes == formula B%d H%d/%d %dx%d d%d%s M=%zu", B, H, Hkv, Nq, Nkv,
             d, causal ? " causal" : "", M);
    snprintf(why, sizeof why, "counted %.0f, formula %.0f", counted, formula);
    report(counted == formula && peak == fa1_sram_bytes(d, b) && peak <= M, name, why);
    free(O); free(l); free(m); free(L); free(Or); free(Lr);
    attn_inputs_free(&in);
}

/* IO complexity: at fixed M, doubling N multiplies the traffic by ~4 (Theta(N^2 d^2 / M))
 * while standard attention's is also ~4x but an order larger; halving M doubles the
 * Tc-dependent part. Checked on the closed form (itself tested against the meter above). */
static void test_complexity(void)
{
    char why[200];
    attn_blocks_t b;
    fa1_block_sizes(128 * 1024, 64, &b);
    attn_problem_t p1 = attn_problem(1, 1, 1, 4096, 4096, 64, false), p2 = attn_problem(1, 1, 1, 8192, 8192, 64, false);
    double r = fa1_hbm_bytes(&p2, b.Bc) / fa1_hbm_bytes(&p1, b.Bc);
    snprintf(why, sizeof why, "bytes(8192) / bytes(4096) = %.3f", r);
    report(r > 3.8 && r < 4.05, "fa1 traffic grows as N^2 at fixed M", why);
    attn_blocks_t big;
    fa1_block_sizes(512 * 1024, 64, &big);
    double q = fa1_hbm_bytes(&p2, b.Bc) / fa1_hbm_bytes(&p2, big.Bc);
    snprintf(why, sizeof why, "bytes(M=128K) / bytes(M=512K) = %.3f (Bc %d vs %d)", q, b.Bc, big.Bc);
    report(q > 3.0 && q < 4.5, "fa1 traffic falls as 1/M (4x M, ~4x fewer bytes)", why);
    /* against standard attention the saving is ~M/d^2 (with fp32 O round trips at a
     * quarter of that): more than 1 at M = 128 KiB, and 8x larger with 8x the SRAM */
    attn_blocks_t huge;
    fa1_block_sizes(1024 * 1024, 64, &huge);
    double s = std_attn_traffic(&p2, 2).total / fa1_hbm_bytes(&p2, b.Bc);
    double s8 = std_attn_traffic(&p2, 2).total / fa1_hbm_bytes(&p2, huge.Bc);
    snprintf(why, sizeof why, "standard / fa1 = %.2f at M=128K, %.2f at M=1M (N=8192 d=64)", s, s8);
    report(s > 1.0 && s8 > 5.0 * s, "fa1 beats standard attention's bytes by a factor that grows with M", why);
}

/* FA1_BLOCK_SKIP's bytes (fa1_hbm_bytes_skip) against a brute-force count: a step (i, j)
 * is taken iff some element of its block is visible (attn_visible, element by element),
 * and each step taken moves its real Q rows: Q_i read (2 d bytes a row), O_i, l_i, m_i
 * read and written (8 (d + 2)). Also per pair: the steps taken are exactly i >=
 * fa1_first_q_block(j), the loop the kernel runs, and every pass takes one (so K_j, V_j
 * are read once each, as the formula says). Blocks: the kernel's (FA1_MMA_TABLE) and a
 * few others. */
static void skip_case(int B, int H, int Nq, int Nkv, int d, attn_blocks_t b, int want_smaller)
{
    char name[200], why[300] = "";
    attn_problem_t p = attn_problem(B, H, H, Nq, Nkv, d, true), pf = p;
    pf.causal = false;
    const int Tr = (Nq + b.Br - 1) / b.Br, Tc = (Nkv + b.Bc - 1) / b.Bc;
    double rows = 0;
    int loop_ok = 1;
    for (int j = 0; j < Tc; j++) {
        int taken = 0;
        for (int i = 0; i < Tr; i++) {
            int seen = 0;
            for (int r = i * b.Br; r < Nq && r < (i + 1) * b.Br && !seen; r++)
                for (int c = j * b.Bc; c < Nkv && c < (j + 1) * b.Bc && !seen; c++)
                    seen = attn_visible(&p, r, c);
            if (seen) { rows += Nq - i * b.Br < b.Br ? Nq - i * b.Br : b.Br; taken++; }
            if (seen != (i >= fa1_first_q_block(&p, j, b.Bc, b.Br)) && loop_ok) {
                loop_ok = 0;
                snprintf(why, sizeof why, "step (i=%d, j=%d): visible %d, kernel's loop from i=%d", i, j, seen,
                         fa1_first_q_block(&p, j, b.Bc, b.Br));
            }
        }
        if (taken == 0 && loop_ok) { loop_ok = 0; snprintf(why, sizeof why, "pass j=%d takes no step", j); }
    }
    const double heads = (double)B * H;
    const double brute = heads * (4.0 * Nq * (d + 2) + 4.0 * Nkv * d + rows * (2.0 * d + 8.0 * (d + 2)));
    const double skip = fa1_hbm_bytes_skip(&p, b), plain = fa1_hbm_bytes(&p, b.Bc);
    snprintf(name, sizeof name, "fa1 skip bytes == brute force B%d H%d %dx%d d%d causal (%dx%d)%s", B, H, Nq, Nkv,
             d, b.Br, b.Bc, want_smaller ? ", < plain" : "");
    if (loop_ok)
        snprintf(why, sizeof why, "skip formula %.0f, brute force %.0f, plain %.0f", skip, brute, plain);
    report(loop_ok && skip == brute && skip <= plain && (!want_smaller || skip < plain), name, why);
    /* not causal: nothing to skip, the plain formula exactly */
    snprintf(name, sizeof name, "fa1 skip bytes == plain, not causal, %dx%d d%d (%dx%d)", Nq, Nkv, d, b.Br, b.Bc);
    snprintf(why, sizeof why, "skip %.0f, plain %.0f", fa1_hbm_bytes_skip(&pf, b), fa1_hbm_bytes(&pf, b.Bc));
    report(fa1_hbm_bytes_skip(&pf, b) == fa1_hbm_bytes(&pf, b.Bc), name, why);
}

static void test_skip_bytes(void)
{
    /* N_q = N_kv, tails; N_q > N_kv with fully masked rows; N_q < N_kv. smaller: 1 = fewer
     * bytes than plain once there is a second K/V block (pass 1 starts past Q block 0),
     * 2 = always (N_q - N_kv >= 64 >= Br fully masked rows: Q block 0 is never taken) */
    static const struct { int Nq, Nkv, smaller; } sh[] = {
        {1, 1, 0}, {17, 17, 0}, {300, 300, 1}, {1000, 1000, 1}, {4096, 4096, 1},
        {300, 77, 2}, {1000, 300, 2}, {100, 37, 0},
        {300, 1000, 1}, {77, 300, 0}, {1, 1000, 0},
    };
#define FA1_SKIP_ROW(D_, WR_, WC_)                                                              \
    for (size_t k = 0; k < sizeof sh / sizeof sh[0]; k++) {                                      \
        attn_blocks_t kb = { 16 * (WR_), FA1_WARP_KEYS * (WC_) };                                \
        skip_case(2, 2, sh[k].Nq, sh[k].Nkv, D_, kb,                                            \
                  sh[k].smaller == 2 || (sh[k].smaller == 1 && sh[k].Nkv > kb.Bc));             \
    }
    FA1_MMA_TABLE(FA1_SKIP_ROW)
#undef FA1_SKIP_ROW
    /* blocks other than the kernel's: Br > Bc, Br = Bc = 1, a Bc that does not divide */
    attn_blocks_t odd[] = { {64, 16}, {1, 1}, {48, 80} };
    for (size_t k = 0; k < sizeof odd / sizeof odd[0]; k++) {
        skip_case(1, 3, 333, 333, 64, odd[k], 1);
        skip_case(1, 1, 250, 90, 64, odd[k], 0);
        skip_case(1, 1, 90, 250, 64, odd[k], 0);
    }
    /* hand count: N = 512, Br = 32, Bc = 256 (fa1-mma d = 64): pass 0 takes all 512 rows,
     * pass 1 starts at row 256: 768 rows instead of 1024 */
    attn_problem_t p = attn_problem(1, 1, 1, 512, 512, 64, true);
    attn_blocks_t kb = { 32, 256 };
    double want = 4.0 * 512 * 66 + 4.0 * 512 * 64 + 768.0 * (128 + 8 * 66);
    char why[160];
    snprintf(why, sizeof why, "got %.0f, want %.0f", fa1_hbm_bytes_skip(&p, kb), want);
    report(fa1_hbm_bytes_skip(&p, kb) == want, "fa1 skip bytes, hand count N=512 d=64 (32x256): 768 Q rows", why);
}

int main(void)
{
    test_blocks();
    /* the shapes: d in {32, 64, 128}, N in {1, 17, 128, 1000}, causal and not;
     * M = 16 KiB gives small blocks, so N = 1000 has many K/V blocks and tails */
    static const int Ns[] = {1, 17, 128, 1000};
    for (int d = 32; d <= 128; d *= 2)
        for (int k = 0; k < 4; k++)
            for (int c = 0; c <= 1; c++)
                model_case(1, Ns[k] >= 1000 ? 1 : 2, Ns[k] >= 1000 ? 1 : 2, Ns[k], Ns[k], d, c, 16 * 1024);
    model_case(1, 2, 2, 300, 1000, 64, 1, 32 * 1024);   /* N_q < N_kv, causal */
    model_case(1, 2, 2, 100, 37, 64, 1, 8 * 1024);      /* N_q > N_kv: 63 fully masked rows */
    model_case(2, 4, 2, 77, 130, 32, 0, 8 * 1024);      /* GQA 2:1 */
    model_case(1, 6, 1, 65, 65, 128, 1, 64 * 1024);     /* MQA, causal */
    model_case(1, 2, 2, 200, 200, 16, 0, 2048);         /* tiny M */
    model_case(1, 1, 1, 129, 129, 256, 0, 128 * 1024);  /* d = 256 */
    test_complexity();
    test_skip_bytes();
    { void fault_tests_fa1(void); fault_tests_fa1(); }    /* appended: faults at infinity */
    return fails ? 1 : 0;
}

/* ---- faults at infinity: attn_fault_tests (phase1_naive/fault_tests.c) on fa1_cpu's output */
void fault_tests_fa1(void);
void fault_tests_fa1(void)
{
    attn_problem_t p = attn_problem(1, 2, 1, 40, 24, 32, true);
    attn_inputs_t in;
    if (attn_inputs_make(&in, &p, 17, false) != 0) { report(0, "alloc", "out of memory"); return; }
    size_t nq = attn_q_elems(&p), nl = attn_l_elems(&p);
    float *O = malloc(nq * 4), *l = malloc(nl * 4), *m = malloc(nl * 4), *L = malloc(nl * 4);
    attn_blocks_t b;
    fa1_block_sizes(8 * 1024, p.d, &b);
    poison_f32(O, nq); poison_f32(l, nl); poison_f32(m, nl);
    fa1_cpu(&in, b, 8 * 1024, O, l, m, NULL);
    fa1_lse(l, m, L, nl);
    attn_fault_tests("phase 3, fa1_cpu + fa1_lse", &in, O, L, report);
    free(O); free(l); free(m); free(L);
    attn_inputs_free(&in);
}
