/* test_phase0.c - unit tests of the oracle and the cost model. One line per test:
 * "PASS name" or "FAIL name: why"; exit 1 on any FAIL.
 *
 * The expected values are worked out on paper (in the comments), not taken from the
 * code under test: a 2x2 forward, a 1x2 backward in closed form, causal alignment by
 * truncating K/V, and the figures the FlashAttention write-ups quote. */
#include "cost.h"
#include "oracle.h"
#include "problem.h"
#include "selfcheck.h"
#include "worked.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static int fails;
#define EXPECT(name, cond, ...) (fails += sc_line(stdout, name, (cond), __VA_ARGS__))

static double maxdiff(const double *a, const double *b, int n)
{
    double m = 0;
    for (int i = 0; i < n; i++) {
        if (a[i] == b[i]) continue;
        double d = fabs(a[i] - b[i]);
        m = isnan(d) ? INFINITY : fmax(m, d);
    }
    return m;
}

/* Q = [[1,0],[0,2]], K = I, V = [[1,2],[3,4]], scale 1: S = [[1,0],[0,2]].
 * Row 1: P = [e, 1] / (e + 1), O = P V, L = log(e + 1).
 * Row 2: P = [1, e^2] / (1 + e^2),     L = log(1 + e^2). */
static void test_forward_2x2(void)
{
    const float Q[4] = {1, 0, 0, 2}, K[4] = {1, 0, 0, 1}, V[4] = {1, 2, 3, 4};
    attn_problem_t p = attn_problem(1, 1, 1, 2, 2, 2, false);
    p.scale = 1.0f;
    double O[4], L[2];
    oracle_fwd(&p, Q, K, V, O, L);
    double e = exp(1.0), e2 = exp(2.0);
    double a = e / (e + 1), b = 1 / (1 + e2);
    double wantO[4] = {a * 1 + (1 - a) * 3, a * 2 + (1 - a) * 4, b * 1 + (1 - b) * 3, b * 2 + (1 - b) * 4};
    double wantL[2] = {log(e + 1), log(1 + e2)};
    double err = fmax(maxdiff(O, wantO, 4), maxdiff(L, wantL, 2));
    EXPECT("oracle.forward_2x2_by_hand", err < 1e-12, "max err %.3g", err);

    /* causal, N_q = N_kv: row 1 sees key 1 only: O_1 = V_1, L_1 = S_11 = 1 */
    p.causal = true;
    oracle_fwd(&p, Q, K, V, O, L);
    double wantC[4] = {1, 2, wantO[2], wantO[3]}, wantLC[2] = {1, wantL[1]};
    err = fmax(maxdiff(O, wantC, 4), maxdiff(L, wantLC, 2));
    EXPECT("oracle.causal_2x2_by_hand", err < 1e-12, "max err %.3g", err);

    /* scale 1/2 halves the scores: row 1 P = [e^0.5, 1] / (e^0.5 + 1) */
    p.causal = false;
    p.scale = 0.5f;
    oracle_fwd(&p, Q, K, V, O, L);
    double as = exp(0.5) / (exp(0.5) + 1);
    err = fmax(fabs(O[0] - (as + 3 * (1 - as))), fabs(L[0] - log(exp(0.5) + 1)));
    EXPECT("oracle.scale_by_hand", err < 1e-12, "max err %.3g", err);
}

/* N_q = 1, N_kv = 2, d = 1, scale 1: q = 1, k = [0, 1], v = [1, 3], dO = 1.
 * P = [a, b] = [1, e] / (1 + e); O = a + 3b; dV = P^T dO = [a, b]; dP = [1, 3];
 * D = dO O = a + 3b; dS = P (dP - D) = [a(1 - a - 3b), b(3 - a - 3b)] = [-2ab, 2ab]
 * (using a + b = 1); dQ = dS . k = 2ab; dK = dS q = [-2ab, 2ab]. */
static void test_backward_by_hand(void)
{
    const float q[1] = {1}, k[2] = {0, 1}, v[2] = {1, 3}, dO[1] = {1};
    attn_problem_t p = attn_problem(1, 1, 1, 1, 2, 1, false);
    p.scale = 1.0f;
    double dQ[1], dK[2], dV[2];
    oracle_bwd(&p, q, k, v, dO, dQ, dK, dV);
    double a = 1 / (1 + exp(1.0)), b = 1 - a, ab2 = 2 * a * b;
    double got[5] = {dQ[0], dK[0], dK[1], dV[0], dV[1]}, want[5] = {ab2, -ab2, ab2, a, b};
    double err = maxdiff(got, want, 5);
    EXPECT("oracle.backward_1x2_by_hand", err < 1e-12, "max err %.3g (dQ %g want %g)", err, dQ[0], ab2);
}

static void fd(const char *name, attn_problem_t p)
{
    sc_grad_err_t e = sc_fd_check(&p, 3);
    EXPECT(name, e.dq < SC_FD_TOL && e.dk < SC_FD_TOL && e.dv < SC_FD_TOL,
           "rel err dQ %.2e dK %.2e dV %.2e (want < %.0e)", e.dq, e.dk, e.dv, SC_FD_TOL);
}

/* Bottom-right causal with N_q = 2 < N_kv = 4: row 1 sees keys 1-3, row 2 all four.
 * So row 1 equals the non-causal oracle on the first 3 keys. */
static void test_causal_alignment(void)
{
    attn_problem_t p = attn_problem(1, 1, 1, 2, 4, 16, true);
    attn_inputs_t in;
    if (attn_inputs_make(&in, &p, 9, false) != 0) { EXPECT("oracle.causal_alignment", 0, "out of memory"); return; }
    double O[2 * 16], L[2], O3[16], L3, O4[16], L4;
    oracle_fwd(&p, in.q, in.k, in.v, O, L);
    attn_problem_t p3 = attn_problem(1, 1, 1, 2, 3, 16, false), p4 = attn_problem(1, 1, 1, 2, 4, 16, false);
    oracle_fwd_row(&p3, in.q, in.k, in.v, 0, 0, 0, O3, &L3);   /* keys 1..3 */
    oracle_fwd_row(&p4, in.q, in.k, in.v, 0, 0, 1, O4, &L4);   /* keys 1..4 */
    double err = fmax(fmax(maxdiff(O, O3, 16), fabs(L[0] - L3)), fmax(maxdiff(O + 16, O4, 16), fabs(L[1] - L4)));
    EXPECT("oracle.causal_bottom_right_Nq2_Nkv4", err < 1e-12, "max err %.3g", err);
    EXPECT("problem.visible_count_Nq2_Nkv4", attn_visible_count(&p, 0) == 3 && attn_visible_count(&p, 1) == 4,
           "visible %d, %d (want 3, 4)", attn_visible_count(&p, 0), attn_visible_count(&p, 1));
    attn_inputs_free(&in);
}

/* N_q = 3 > N_kv = 1, causal: rows 1, 2 see nothing -> O = 0, L = +inf, no gradient. */
static void test_fully_masked(void)
{
    attn_problem_t p = attn_problem(1, 1, 1, 3, 1, 16, true);
    attn_inputs_t in;
    if (attn_inputs_make(&in, &p, 4, true) != 0) { EXPECT("oracle.fully_masked_row", 0, "out of memory"); return; }
    double O[3 * 16], L[3], dQ[3 * 16], dK[16], dV[16];
    oracle_fwd(&p, in.q, in.k, in.v, O, L);
    oracle_bwd(&p, in.q, in.k, in.v, in.dO, dQ, dK, dV);
    double err = 0;
    for (int c = 0; c < 32; c++) err = fmax(err, fabs(O[c]) + fabs(dQ[c]));
    for (int c = 0; c < 16; c++) err = fmax(err, fabs(O[32 + c] - in.v[c]));   /* row 3: O = V_1 */
    for (int c = 0; c < 16; c++) err = fmax(err, fabs(dV[c] - in.dO[32 + c])); /* dV_1 = dO_3    */
    int ok = isinf(L[0]) && L[0] > 0 && isinf(L[1]) && L[1] > 0 && isfinite(L[2]) && err == 0;
    EXPECT("oracle.fully_masked_row", ok, "L = %g %g %g, max err %.3g", L[0], L[1], L[2], err);
    attn_inputs_free(&in);
}

static void test_softmax_row(void)
{
    double w[3], L;
    const double mixed[3] = {-INFINITY, 0.0, -INFINITY};
    L = oracle_softmax_row(mixed, 3, w);
    EXPECT("softmax.masked_entries", w[0] == 0 && w[1] == 1 && w[2] == 0 && L == 0,
           "w = [%g %g %g] L = %g (want [0 1 0], 0)", w[0], w[1], w[2], L);
    const double none[2] = {-INFINITY, -INFINITY};
    L = oracle_softmax_row(none, 2, w);
    EXPECT("softmax.all_masked", w[0] == 0 && w[1] == 0 && isinf(L) && L > 0,
           "w = [%g %g] L = %g (want 0, +inf)", w[0], w[1], L);
    const double huge[2] = {1000.0, 0.0};     /* exp(1000) overflows: the max must go first */
    L = oracle_softmax_row(huge, 2, w);
    EXPECT("softmax.one_huge_value", w[0] == 1 && w[1] == exp(-1000.0) && L == 1000,
           "w = [%g %g] L = %g (want [1 0], 1000)", w[0], w[1], L);
    const double twins[2] = {710.0, 710.0};   /* e^710 > DBL_MAX */
    L = oracle_softmax_row(twins, 2, w);
    EXPECT("softmax.no_overflow", w[0] == 0.5 && w[1] == 0.5 && fabs(L - (710 + log(2.0))) < 1e-12,
           "w = [%g %g] L = %.17g (want 0.5, 710 + log 2)", w[0], w[1], L);
    const double tiny[2] = {-1000.0, -1000.0}; /* e^-1000 underflows to 0 without the max */
    L = oracle_softmax_row(tiny, 2, w);
    EXPECT("softmax.no_underflow", w[0] == 0.5 && w[1] == 0.5 && fabs(L - (-1000 + log(2.0))) < 1e-12,
           "w = [%g %g] L = %.17g (want 0.5, -1000 + log 2)", w[0], w[1], L);
}

static void test_cost(void)
{
    const double MiB = 1048576.0, GiB = 1024 * MiB;
    attn_problem_t a = attn_problem(1, 1, 1, 1024, 1024, 64, false), b = attn_problem(1, 1, 1, 16384, 16384, 64, false);
    attn_problem_t c = attn_problem(32, 8, 8, 2048, 2048, 64, false), e = attn_problem(32, 8, 8, 8192, 8192, 64, false);
    EXPECT("cost.S_1head_N1024_fp16_2MiB", std_attn_s_bytes(&a, 2) == 2 * MiB, "%.0f", std_attn_s_bytes(&a, 2));
    EXPECT("cost.S_1head_N16384_fp16_512MiB", std_attn_s_bytes(&b, 2) == 512 * MiB, "%.0f", std_attn_s_bytes(&b, 2));
    EXPECT("cost.S_B32H8_N2048_fp16_2GiB", std_attn_s_bytes(&c, 2) == 2 * GiB, "%.0f", std_attn_s_bytes(&c, 2));
    EXPECT("cost.S_B32H8_N8192_fp16_32GiB", std_attn_s_bytes(&e, 2) == 32 * GiB, "%.0f", std_attn_s_bytes(&e, 2));

    /* N = 1024, d = 64, fp16: Q, K, V, O 128 KiB each, S 2 MiB read/written 4 times:
     * 4 x 131072 + 4 x 2097152 = 8912896 bytes; FLOPs 4 N^2 d = 268435456. */
    std_traffic_t t = std_attn_traffic(&a, 2);
    EXPECT("cost.traffic_steps_N1024_d64",
           t.read_q == 131072 && t.read_k == 131072 && t.write_s == 2097152 && t.read_s == 2097152 &&
           t.write_p == 2097152 && t.read_p == 2097152 && t.read_v == 131072 && t.write_o == 131072 &&
           t.total == 8912896, "total %.0f (want 8912896)", t.total);
    EXPECT("cost.flops_N1024_d64", attn_flops_fwd(&a) == 268435456.0, "%.0f", attn_flops_fwd(&a));
    EXPECT("cost.intensity_std_N1024_d64", fabs(std_attn_intensity(&a, 2) - 268435456.0 / 8912896.0) < 1e-12,
           "%.6f", std_attn_intensity(&a, 2));
    EXPECT("cost.fused_bytes_N1024_d64", fused_attn_min_bytes(&a, 2) == 524288 &&
           fabs(fused_attn_intensity(&a, 2) - 512) < 1e-12, "%.0f bytes", fused_attn_min_bytes(&a, 2));

    /* GQA: B=1 H=8 Hkv=2 N=128 d=64 fp16. Standard: K, V per query head = 8 x 16 KiB each;
     * fused: K, V per KV head = 2 x 16 KiB each, Q and O 8 x 16 KiB each. */
    attn_problem_t g = attn_problem(1, 8, 2, 128, 128, 64, false);
    EXPECT("cost.gqa_traffic", std_attn_traffic(&g, 2).read_k == 8 * 16384.0 &&
           fused_attn_min_bytes(&g, 2) == 2 * 8 * 16384.0 + 2 * 2 * 16384.0,
           "read_k %.0f fused %.0f", std_attn_traffic(&g, 2).read_k, fused_attn_min_bytes(&g, 2));

    const roofline_gpu_t *rows;
    int n = roofline_datasheet(&rows);
    EXPECT("roofline.datasheet_rows", n == 2 && rows[0].bw_bytes_per_s == 2039e9 && rows[0].fp16_tensor_flops == 312e12 &&
           rows[1].bw_bytes_per_s == 3350e9 && rows[1].fp16_tensor_flops == 989.4e12 &&
           strcmp(rows[0].source, "datasheet") == 0, "n = %d", n);
    /* H100 SXM5: ridge = 989.4e12 / 3.35e12 = 295.3 FLOP/byte; at I = 30 it attains
     * 30 x 3.35e12 = 100.5 TFLOP/s; at I = 1000 the peak. */
    EXPECT("roofline.ridge_and_attainable", fabs(roofline_ridge(&rows[1]) - 989.4 / 3.35) < 1e-9 &&
           fabs(roofline_attainable(&rows[1], 30) - 100.5e12) < 1 && roofline_attainable(&rows[1], 1000) == 989.4e12,
           "ridge %.3f", roofline_ridge(&rows[1]));
    const roofline_gpu_t *h = roofline_known_part("NVIDIA H100 80GB HBM3"), *pc = roofline_known_part("NVIDIA H100 PCIe");
    const roofline_gpu_t *l4 = roofline_known_part("NVIDIA L4"), *l40 = roofline_known_part("NVIDIA L40S");
    const roofline_gpu_t *a100 = roofline_known_part("NVIDIA A100-SXM4-80GB");
    EXPECT("roofline.known_parts", h && h->fp16_tensor_flops == 989.4e12 && pc && pc->fp16_tensor_flops == 756e12 &&
           l4 && l4->fp16_tensor_flops == 121e12 && !l40 && a100 && a100->bw_bytes_per_s == 2039e9 &&
           !roofline_known_part("Tesla T4"), "lookup by device name gave a wrong row");
}

static void test_worked(void)
{
    worked_tile_t t;
    worked_stream_t s;
    worked_tile(NULL, &t);
    worked_stream(NULL, &s);
    int n, f = worked_check(NULL, &t, &s, &n);
    EXPECT("worked.examples", f == 0 && n > 0, "%d of %d checks failed (run build/phase0 to see which)", f, n);
}

int main(void)
{
    test_forward_2x2();
    test_backward_by_hand();
    fd("oracle.fd.noncausal_N4_d8", attn_problem(1, 1, 1, 4, 4, 8, false));
    fd("oracle.fd.causal_N5_d4", attn_problem(1, 1, 1, 5, 5, 4, true));
    fd("oracle.fd.gqa_H4_Hkv2_causal", attn_problem(1, 4, 2, 3, 4, 4, true));
    fd("oracle.fd.mqa_H3_Hkv1_Nq4_Nkv6", attn_problem(2, 3, 1, 4, 6, 4, false));
    fd("oracle.fd.causal_Nq6_Nkv3_masked", attn_problem(1, 2, 2, 6, 3, 4, true));
    test_causal_alignment();
    test_fully_masked();
    test_softmax_row();
    test_cost();
    test_worked();
    return fails ? 1 : 0;
}
