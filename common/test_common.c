/* test_common.c - unit tests of common/: fp16 rounding on edge values, the RNG, the
 * error metrics, the causal rule, the row sampler, the HBM meter, .npy files, median, the
 * sweep runner and its bound on CPU work, the parallel for.
 * Prints "PASS name" / "FAIL name: why" per test; exit 1 on any failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "fp16.h"
#include "fp8.h"
#include "hbm.h"
#include "npy.h"
#include "par.h"
#include "problem.h"
#include "rng.h"
#include "sweep.h"
#include "table.h"
#include "timer.h"

static int failures;
static void expect(int ok, const char *name, const char *why)
{
    if (ok) printf("PASS %s\n", name);
    else { printf("FAIL %s: %s\n", name, why); failures++; }
}

static int bits_are(float f, uint16_t want) { return f32_to_f16(f) == want; }

static void test_fp16(void)
{
    char why[160];
    /* exact values and the largest finite half */
    expect(bits_are(1.0f, 0x3c00) && bits_are(-2.0f, 0xc000) && bits_are(65504.0f, 0x7bff),
           "fp16: exact values (1, -2, 65504)", "wrong bits");
    /* 65519.99 rounds down to 65504; 65520 is the tie with 65536 -> even -> inf */
    expect(bits_are(65519.0f, 0x7bff) && bits_are(65520.0f, 0x7c00) && bits_are(1e6f, 0x7c00),
           "fp16: overflow rounds to inf only from 65520 up", "wrong bits near 65504");
    /* round to nearest, ties to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 */
    expect(bits_are(1.0f + 0x1p-11f, 0x3c00) && bits_are(1.0f + 3 * 0x1p-11f, 0x3c02) &&
           bits_are(1.0f + 0x1p-11f + 0x1p-20f, 0x3c01),
           "fp16: ties to even, above the tie rounds up", "wrong rounding at 1 + 2^-11");
    /* subnormals: smallest 2^-24; 2^-25 is the tie with 0 -> 0; 3 * 2^-25 -> 2 * 2^-24 */
    expect(bits_are(0x1p-24f, 0x0001) && bits_are(0x1p-25f, 0x0000) &&
           bits_are(3 * 0x1p-25f, 0x0002) && bits_are(0x1p-14f, 0x0400) &&
           bits_are(0x1p-14f - 0x1p-24f, 0x03ff) && bits_are(0x1p-26f, 0x0000),
           "fp16: subnormals and their rounding", "wrong subnormal bits");
    /* round trip of every finite half value */
    int bad = -1;
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00) continue;              /* inf / NaN below */
        if (f32_to_f16(f16_to_f32((uint16_t)h)) != h) { bad = (int)h; break; }
    }
    snprintf(why, sizeof why, "0x%04x does not survive half -> float -> half", bad);
    expect(bad < 0, "fp16: all 63488 finite values round-trip", why);
    expect(f16_to_f32(0x0001) == 0x1p-24f && f16_to_f32(0x7bff) == 65504.0f &&
           f16_to_f32(0x8000) == 0.0f && signbit(f16_to_f32(0x8000)),
           "fp16: decoding subnormal, max, -0", "wrong decoded value");
    expect(bits_are(INFINITY, 0x7c00) && bits_are(-INFINITY, 0xfc00) &&
           isinf(f16_to_f32(0x7c00)) && isnan(f16_to_f32(f32_to_f16(NAN))) &&
           (f32_to_f16(NAN) & 0x7c00) == 0x7c00 && (f32_to_f16(NAN) & 0x3ff) != 0,
           "fp16: inf and NaN", "inf/NaN not preserved");
}

/* FP8 E4M3 (fp8.h): every code's value, the round trip, ties to even, saturation, subnormals */
static void test_fp8(void)
{
    char why[160];
    expect(e4m3_to_f32(0x7e) == 448.0f && e4m3_to_f32(0x08) == 0x1p-6f && e4m3_to_f32(0x01) == 0x1p-9f &&
           e4m3_to_f32(0x38) == 1.0f && e4m3_to_f32(0xb8) == -1.0f && isnan(e4m3_to_f32(0x7f)),
           "fp8 e4m3: 448, 2^-6, 2^-9, +-1 and NaN decode", "wrong value");
    int bad = -1;
    for (int b = 0; b < 256; b++) {
        const float x = e4m3_to_f32((uint8_t)b);
        if (isnan(x)) continue;
        if (f32_to_e4m3(x) != b) { bad = b; break; }
    }
    snprintf(why, sizeof why, "0x%02x does not survive e4m3 -> float -> e4m3", bad);
    expect(bad < 0, "fp8 e4m3: all 254 non-NaN codes round-trip", why);
    /* 1 + 1/16 is halfway between 1 and 1.125 -> even (1); 1 + 3/16 -> 1.25; 17 -> 16 (quantum 2) */
    expect(e4m3_round(1.0625f) == 1.0f && e4m3_round(1.1875f) == 1.25f && e4m3_round(17.0f) == 16.0f &&
           e4m3_round(1.0626f) == 1.125f, "fp8 e4m3: ties to even, above the tie rounds up", "wrong rounding");
    expect(e4m3_round(500.0f) == 448.0f && e4m3_round(-1e30f) == -448.0f && e4m3_round(464.0f) == 448.0f,
           "fp8 e4m3: saturates at +-448 (no infinity)", "not saturated");
    expect(e4m3_round(0x1p-10f) == 0.0f && e4m3_round(0x1p-10f + 0x1p-20f) == 0x1p-9f &&
           e4m3_round(3 * 0x1p-10f) == 2 * 0x1p-9f, "fp8 e4m3: subnormals (2^-9 steps) and their ties", "wrong subnormal");
}

static void test_rng(void)
{
    rng_t a, b;
    rng_seed(&a, 42); rng_seed(&b, 42);
    int same = 1;
    for (int i = 0; i < 1000; i++) same &= rng_u64(&a) == rng_u64(&b);
    rng_seed(&b, 43);
    expect(same && rng_u64(&a) != rng_u64(&b), "rng: same seed same stream, other seed differs",
           "streams do not behave");
    rng_seed(&a, 7);
    double sum = 0, sum2 = 0;
    int n = 200000;
    for (int i = 0; i < n; i++) { double x = rng_normal(&a); sum += x; sum2 += x * x; }
    double mean = sum / n, var = sum2 / n - mean * mean;
    char why[128];
    snprintf(why, sizeof why, "mean %.4f var %.4f", mean, var);
    expect(fabs(mean) < 0.01 && fabs(var - 1) < 0.02, "rng: normal has mean 0, variance 1", why);
}

static void test_check(void)
{
    double ref[4] = {1, 2, 3, 4};
    float out[4] = {1, 2, 3, 4.5f};
    err_stats_t e = err_compare(out, ref, 4, tol_cpu());
    double want = 0.5 / sqrt(30.0);
    expect(fabs(e.max_abs - 0.5) < 1e-12 && fabs(e.rel_l2 - want) < 1e-12 && e.worst == 3 &&
           e.first_bad == 3 && !err_pass(&e, tol_cpu()),
           "check: max abs, rel L2, first bad index", "wrong metrics");
    out[3] = 4; out[1] = NAN;
    e = err_compare(out, ref, 4, tol_fp16(0.1));
    expect(e.nan_count == 1 && e.first_bad == 1 && !err_pass(&e, tol_fp16(0.1)),
           "check: a NaN (poisoned, unwritten) element fails", "NaN passed");
    double ref_inf[2] = {INFINITY, 1};
    float out_inf[2] = {INFINITY, 1};
    e = err_compare(out_inf, ref_inf, 2, tol_cpu());
    expect(err_pass(&e, tol_cpu()), "check: equal infinities (masked row L) agree", "inf != inf");
    out[1] = 2.0f + 1e-3f;
    e = err_compare(out, ref, 4, tol_fp16(0.0004));      /* abs bound 2*0.0004 + 1e-4 = 9e-4 */
    expect(!err_pass(&e, tol_fp16(0.0004)) && err_pass(&e, tol_fp16(0.001)),
           "check: the 2x rule bounds max abs error", "2x rule not applied");
    float p[3];
    poison_f32(p, 3);
    expect(isnan(p[0]) && isnan(p[2]), "check: poison fills with NaN", "not NaN");
}

/* The rule for one element at infinity and NaN (check.h), and the finite max-abs bound
 * of tol_cpu(): each fault alone makes err_pass false, and the unfaulted array passes. */
static void test_check_inf(void)
{
    char buf[256];
    /* row 0 = a fully masked row's L (+inf in the reference), then finite values */
    double ref[4] = {INFINITY, 1.5, -2.0, 3.25};
    float good[4] = {INFINITY, 1.5f, -2.0f, 3.25f}, out[4];
    tol_t tc = tol_cpu(), tf = tol_fp16(1e-3);
    err_stats_t e = err_compare(good, ref, 4, tc);
    expect(err_pass(&e, tc) && err_pass(&e, tf) && e.inf_mismatch == 0 && e.max_abs == 0 && e.first_bad == 4,
           "check: +inf == +inf (masked row L) and equal finite values pass", "the unfaulted array fails");

    struct { int at; float v; const char *name; } faults[] = {
        {0, -INFINITY, "check: L = -inf where the reference is +inf fails (cpu and fp16 tol)"},
        {0, 0.0f,      "check: L = 0 where the reference is +inf fails (cpu and fp16 tol)"},
        {0, 3.4e38f,   "check: a finite L (FLT_MAX) where +inf is due fails (cpu and fp16 tol)"},
        {1, INFINITY,  "check: an element forced to +inf fails (cpu and fp16 tol)"},
        {2, -INFINITY, "check: an element forced to -inf fails (cpu and fp16 tol)"},
    };
    for (size_t f = 0; f < sizeof faults / sizeof faults[0]; f++) {
        memcpy(out, good, sizeof out);
        out[faults[f].at] = faults[f].v;
        err_stats_t a = err_compare(out, ref, 4, tc), b = err_compare(out, ref, 4, tf);
        err_first_bad_str(&a, 4, "L", buf, sizeof buf);
        expect(!err_pass(&a, tc) && !err_pass(&b, tf) && a.inf_mismatch == 1 && a.nan_count == 0 &&
               a.max_abs == INFINITY && a.first_bad == (size_t)faults[f].at && a.worst == (size_t)faults[f].at &&
               strstr(buf, "not the same infinity") != NULL,
               faults[f].name, buf);
    }
    /* rel L2 stays the L2 over the finite pairs: an inf mismatch does not make it inf */
    memcpy(out, good, sizeof out);
    out[0] = 0.0f; out[3] = 3.5f;
    e = err_compare(out, ref, 4, tc);
    double want = 0.25 / sqrt(1.5 * 1.5 + 2.0 * 2.0 + 3.25 * 3.25);
    expect(fabs(e.rel_l2 - want) < 1e-12 && e.inf_mismatch == 1, "check: rel L2 is over the finite pairs only",
           "rel L2 includes the infinite pair");

    /* NaN on either side never equals anything, not even NaN */
    double ref_nan[2] = {NAN, 1.0};
    float out_nan[2] = {NAN, 1.0f};
    e = err_compare(out_nan, ref_nan, 2, tc);
    err_first_bad_str(&e, 2, "O", buf, sizeof buf);
    expect(!err_pass(&e, tc) && e.nan_count == 1 && e.max_abs == INFINITY && e.first_bad == 0 && strstr(buf, "NaN"),
           "check: NaN vs NaN fails (a NaN in the reference too)", buf);
    out_nan[0] = 1.0f;
    e = err_compare(out_nan, ref_nan, 2, tc);
    expect(!err_pass(&e, tc) && e.nan_count == 1, "check: a finite value vs a NaN reference fails", "passed");

    /* every tolerance is finite: tol_cpu's max abs, and a tol without one never passes */
    expect(isfinite(tc.max_abs) && tc.max_abs == TOL_CPU_MAX_ABS && isfinite(tf.max_abs),
           "check: tol_cpu and tol_fp16 have finite max-abs bounds", "a bound is not finite");
    tol_t unbounded = { TOL_CPU_REL_L2, INFINITY, false };
    e = err_compare(good, ref, 4, tc);
    expect(!err_pass(&e, unbounded), "check: a tolerance with an infinite max abs never passes", "passed");

    /* tol_cpu's max abs bites where rel L2 is diluted: one element 8e-4 off among 10^4
     * values of 1 .. 7 (the bound on that scale: 1e-4 x 7) */
    enum { NBIG = 10000 };
    static float big[NBIG];
    static double bigref[NBIG];
    for (int i = 0; i < NBIG; i++) { bigref[i] = 1.0 + i % 7; big[i] = (float)bigref[i]; }
    big[4321] += 8e-4f;
    e = err_compare(big, bigref, NBIG, tc);
    err_first_bad_str(&e, 100, "O", buf, sizeof buf);
    expect(e.rel_l2 < TOL_CPU_REL_L2 && !err_pass(&e, tc) && e.first_bad == 4321 && strstr(buf, "row 43, col 21"),
           "check: tol_cpu's max abs catches one element the rel L2 dilutes", buf);
    /* a failure by rel L2 alone still names where the largest error is */
    for (int i = 0; i < NBIG; i++) big[i] = (float)(bigref[i] * (1 + 1.3e-5));   /* at most 9.1e-5 off each */
    e = err_compare(big, bigref, NBIG, tc);
    err_first_bad_str(&e, 100, "O", buf, sizeof buf);
    expect(!err_pass(&e, tc) && e.first_bad == NBIG && strstr(buf, "largest error O["),
           "check: a rel-L2-only failure reports the largest error", buf);
}

/* The tolerance rules of check.h: an exactly zero reference is judged by max abs alone;
 * tol_cpu's max abs follows the output's scale (with a floor of 1); the rel L2 bounds of
 * long sums. Each rule keeps its teeth. */
static void test_check_scale(void)
{
    enum { NZ = 512 };
    static float out[NZ];
    static double ref[NZ];
    tol_t tc = tol_cpu();
    for (int i = 0; i < NZ; i++) { ref[i] = 0.0; out[i] = (i % 3 - 1) * 5e-5f; }   /* dQ with one key */
    err_stats_t e = err_compare(out, ref, NZ, tc);
    char buf[256];
    err_first_bad_str(&e, 64, "dQ", buf, sizeof buf);
    expect(e.ref_zero && err_pass(&e, tc) && isnan(e.rel_l2) && e.nan_count == 0 && strstr(buf, "no element beyond"),
           "check: a zero reference (dQ with one key) is judged by max abs, and the reason agrees", buf);
    out[77] = 2e-4f;
    e = err_compare(out, ref, NZ, tc);
    expect(e.ref_zero && !err_pass(&e, tc) && e.first_bad == 77, "check: a zero reference still fails one element 2e-4 off",
           "passed");
    for (int i = 0; i < NZ; i++) { ref[i] = 300.0 * sin(i + 1.0); out[i] = (float)(ref[i] * (1 + 3e-6)); }   /* dV ~ 300 */
    e = err_compare(out, ref, NZ, tc);
    expect(err_pass(&e, tc) && e.max_abs > 1e-4, "check: tol_cpu's max abs is on the output's scale (dV ~ 300, 1e-3 off)",
           "an fp32-accurate large output fails");
    out[100] = (float)(ref[100] + 0.05);
    e = err_compare(out, ref, NZ, tc);
    expect(!err_pass(&e, tc) && e.first_bad == 100, "check: ... and still fails one element 0.05 off (bound 1e-4 x 300)",
           "passed");
    tol_t tf = tol_fp16(1e-3);
    for (int i = 0; i < NZ; i++) { ref[i] = 3.0 * sin(i + 1.0); out[i] = (float)ref[i]; }
    out[5] = (float)(ref[5] + 2.5e-3);
    e = err_compare(out, ref, NZ, tf);
    expect(!err_pass(&e, tf), "check: tol_fp16's max abs stays absolute (2x pipeline + 1e-4)", "scaled");
    expect(tol_cpu_rel_l2(512) == TOL_CPU_REL_L2 && tol_cpu_rel_l2(3000) == TOL_CPU_REL_L2 &&
           fabs(tol_cpu_rel_l2(262144) - 3 * TOL_U32 * 512) < 1e-12 && tol_cpu_keys(262144).rel_l2 == tol_cpu_rel_l2(262144) &&
           tol_fp16_rel_l2(4096) == TOL_FP16_REL_L2 && fabs(tol_fp16_rel_l2(262144) - sqrt(3.0) * 262144 / 33554432.0) < 1e-12,
           "check: the rel L2 bounds of long sums: 1e-5 / 3e-3 for short ones, 3 u sqrt(n) / sqrt(3) 2^-25 n beyond",
           "wrong values");
}

/* The CPU bound by rows and elements, not only FLOPs (problem.h). */
static void test_cpu_bound(void)
{
    struct { attn_problem_t p; int fits; const char *what; } c[] = {
        {attn_problem(1, 1, 1, 1000000, 1, 128, false), 0, "10^6 rows against 1 key"},
        {attn_problem(2000000, 32, 8, 1, 1, 16, false), 0, "2x10^6 sequences"},
        {attn_problem(1, 1000000, 1000000, 1024, 1024, 64, false), 0, "10^6 heads"},
        {attn_problem(1, 1, 1, 1, 1000000, 16, false), 0, "a 10^6-key cache"},
        {attn_problem(1, 32, 8, 1, 4096, 128, false), 1, "phase 6's default"},
        {attn_problem(2, 4, 4, 512, 512, 64, false), 1, "phase 4's default"},
        {attn_problem(1, 1, 1, 1, 262144, 16, false), 1, "a 2^18-key cache at d = 16"},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        attn_problem_t s = attn_small_like(&c[k].p, 8e8);
        int same = s.B == c[k].p.B && s.H == c[k].p.H && s.N_q == c[k].p.N_q && s.N_kv == c[k].p.N_kv;
        char name[160];
        snprintf(name, sizeof name, "problem: the CPU bound %s %s", c[k].fits ? "keeps" : "shrinks", c[k].what);
        expect(attn_cpu_fits(&s, 8e8) && same == c[k].fits && s.d == c[k].p.d &&
               attn_host_bytes(&s, ATTN_HOST_CPU_ROWS) < 1e9, name, "wrong");
    }
    attn_problem_t big = attn_problem(1, 1000000, 1000000, 1024, 1024, 64, false);
    expect(attn_host_bytes(&big, ATTN_HOST_GPU_ROWS) > 1e12, "problem: the GPU rows' host bytes are the whole problem's",
           "too small");
}

static void test_problem(void)
{
    attn_problem_t p = attn_problem(1, 1, 1, 3, 5, 64, true);   /* N_q < N_kv: offset 2 */
    expect(attn_visible(&p, 0, 2) && !attn_visible(&p, 0, 3) && attn_visible_count(&p, 0) == 3 &&
           attn_visible_count(&p, 2) == 5, "problem: causal is bottom-right aligned (Nq < Nkv)",
           "wrong visibility");
    p = attn_problem(1, 1, 1, 5, 3, 64, true);                   /* N_q > N_kv: rows 0,1 masked */
    expect(attn_visible_count(&p, 0) == 0 && attn_visible_count(&p, 1) == 0 &&
           attn_visible_count(&p, 2) == 1 && attn_visible_count(&p, 4) == 3,
           "problem: causal with Nq > Nkv masks the first rows fully", "wrong counts");
    p = attn_problem(2, 8, 2, 16, 16, 32, false);
    expect(attn_kv_head(&p, 3) == 0 && attn_kv_head(&p, 4) == 1 && attn_kv_head(&p, 7) == 1 &&
           attn_kv_offset(&p, 1, 5) == (size_t)(1 * 2 + 1) * 16 * 32,
           "problem: GQA maps query head h to KV head h / (H/Hkv)", "wrong mapping");
    expect(attn_flops_fwd(&p) == 4.0 * 2 * 8 * 16 * 16 * 32 && p.scale == 1.0f / sqrtf(32.0f),
           "problem: FLOPs and default scale", "wrong");
    p.causal = true;
    expect(attn_flops_fwd(&p) == 2.0 * 2 * 8 * 16 * 16 * 32, "problem: causal FLOPs are halved", "not halved");

    int bhi[3 * 64];
    attn_problem_t big = attn_problem(4, 16, 16, 4096, 4096, 128, false);
    int n = attn_check_rows(&big, 64, bhi);
    expect(n == 64 && bhi[0] == 0 && bhi[1] == 0 && bhi[2] == 0 && bhi[189] == 3 &&
           bhi[190] == 15 && bhi[191] == 4095, "problem: row sample spans first to last row",
           "wrong sample");
    attn_problem_t small = attn_problem(1, 2, 2, 3, 3, 16, false);
    n = attn_check_rows(&small, 64, bhi);
    expect(n == 6 && bhi[3 * 5 + 1] == 1 && bhi[3 * 5 + 2] == 2, "problem: small problems check every row",
           "not every row");

    attn_inputs_t in, in2;
    attn_problem_t q = attn_problem(1, 2, 1, 8, 8, 16, false);
    attn_inputs_make(&in, &q, 5, true);
    attn_inputs_make(&in2, &q, 5, true);
    int exact = 1, same = 1;
    for (size_t i = 0; i < attn_q_elems(&q); i++) {
        exact &= in.q[i] == f16_to_f32(in.q_h[i]) && in.dO[i] == f16_to_f32(in.do_h[i]);
        same &= in.q_h[i] == in2.q_h[i];
    }
    expect(exact && same, "problem: inputs are fp16-rounded and reproducible from the seed",
           "float copy differs from fp16 or seed not reproducible");
    attn_inputs_free(&in); attn_inputs_free(&in2);
}

static void test_hbm(void)
{
    hbm_meter_t m;
    hbm_reset(&m);
    uint16_t h[8];
    float t[8] = {1, 2, 3, 4, 5, 6, 7, 8}, back[8];
    hbm_store_f16(&m, h, t, 8);
    hbm_load_f16(&m, back, h, 8);
    hbm_read(&m, 100);
    expect(m.bytes_written == 16 && m.bytes_read == 116 && hbm_total(&m) == 132 && back[7] == 8,
           "hbm: meter counts fp16 loads and stores in bytes", "wrong counts");
    sram_t s;
    sram_init(&s, 1024);
    float *a = sram_take_f32(&s, 128, "a"), *b = sram_take_f32(&s, 64, "b");
    sram_give_f32(&s, b, 64);
    float *c = sram_take_f32(&s, 128, "c");
    expect(s.used == 1024 && s.peak == 1024, "hbm: SRAM budget tracks use and peak", "wrong use");
    sram_give_f32(&s, a, 128); sram_give_f32(&s, c, 128);
}

static void test_npy(void)
{
    float x[6] = {1, 2, 3, 4, 5, 6};
    size_t shape[2] = {2, 3};
    /* a fresh file in the temporary folder (tools/testlib.sh exports TMPDIR): never a
     * path under build/, which need not exist (make test BUILD=elsewhere, a handout) */
    const char *tmp = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/test_common.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd >= 0) close(fd);
    int rc = fd >= 0 ? npy_write_f32(path, x, shape, 2) : -1;
    FILE *f = fopen(path, "rb");
    unsigned char head[10];
    char dict[256] = "";
    float y[6] = {0};
    int ok = rc == 0 && f && fread(head, 1, 10, f) == 10 && memcmp(head, "\x93NUMPY\x01\x00", 8) == 0;
    size_t hlen = ok ? (size_t)(head[8] | head[9] << 8) : 0;
    ok = ok && (10 + hlen) % 64 == 0 && hlen < sizeof dict && fread(dict, 1, hlen, f) == hlen &&
         strstr(dict, "'descr': '<f4'") && strstr(dict, "'shape': (2, 3)") && dict[hlen - 1] == '\n' &&
         fread(y, 4, 6, f) == 6 && y[5] == 6;
    if (f) fclose(f);
    remove(path);
    expect(ok, "npy: header is aligned to 64 and the data follows", "bad .npy file");
}

/* par_for: every item runs once, each writes its own slot (the serial loop's result), with
 * more items than threads and with fewer */
static void par_square(int i, void *ctx) { ((long *)ctx)[i] = (long)i * i + 1; }
static void test_par(void)
{
    enum { N = 1000 };
    long *a = calloc(N, sizeof *a);
    int ok = a != NULL;
    if (ok) {
        par_for(N, par_square, a);
        for (int i = 0; i < N; i++) ok &= a[i] == (long)i * i + 1;
        memset(a, 0, N * sizeof *a);
        par_for(1, par_square, a);
        ok &= a[0] == 1 && a[1] == 0;
        par_for(0, par_square, a);   /* nothing to do: returns */
    }
    free(a);
    expect(ok && par_threads() >= 1, "par: par_for runs every item once, into its own slot", "an item missed or run twice");
    /* the inputs, made in chunks on every core, are one serial stream of draws bit for bit:
     * Q, K, V, dO in turn, odd lengths (a pair of draws split across two tensors), more
     * than one chunk (2^20 draws) */
    attn_problem_t p = attn_problem(1, 3, 1, 70001, 90001, 8, false);
    attn_inputs_t in;
    int same = attn_inputs_make(&in, &p, 42, true) == 0;
    if (same) {
        rng_t r;
        rng_seed(&r, 42);
        const size_t nq = attn_q_elems(&p), nkv = attn_kv_elems(&p);
        const float *t[4] = {in.q, in.k, in.v, in.dO};
        const size_t n[4] = {nq, nkv, nkv, nq};
        for (int k = 0; k < 4 && same; k++)
            for (size_t e = 0; e < n[k] && same; e++) same = t[k][e] == f16_to_f32(f32_to_f16((float)rng_normal(&r)));
        attn_inputs_free(&in);
    }
    expect(same, "problem: the inputs made on every core are the serial stream's draws", "a value differs");
}

static void test_misc(void)
{
    double v[5] = {5, 1, 4, 2, 3}, w[4] = {4, 1, 3, 2};
    expect(median(v, 5) == 3 && median(w, 4) == 2.5 && v[0] == 5, "timer: median (odd, even), input untouched",
           "wrong median");
    char b[32];
    expect(strcmp(fmt_bytes(2.0 * 1024 * 1024, b), "2.00 MiB") == 0 &&
           strcmp(fmt_bytes(512.0 * 1024 * 1024, b), "512 MiB") == 0 &&
           strcmp(fmt_bytes(32.0 * 1024 * 1024 * 1024, b), "32.0 GiB") == 0,
           "table: bytes in binary units", fmt_bytes(2.0 * 1024 * 1024, b));
}

/* The sweep runner: every point's rows counted, a group stopped, a GPU part skipped
 * without a GPU; the bound keeps a point's axes (N_kv, d) and is within its limits. */
static int sweep_calls;
static int sweep_test_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows)
{
    sweep_calls++;
    rows[0] = drv_row("k", "cpu", s->part->name, &pt->p);
    if (pt->arg == 1) drv_fail(&rows[0], "the point that fails");
    if (pt->arg == 2) sweep_stop_group(s, pt);
    return 1;
}
static void sweep_quiet_line(sweep_t *s, const sweep_point_t *pt, const drv_row_t *rows, int n)
{
    (void)s; (void)pt; (void)rows; (void)n;
}

static void test_sweep(void)
{
    drv_t D;
    memset(&D, 0, sizeof D);
    D.phase = "test_common";
    snprintf(D.why, sizeof D.why, "no GPU in this test");
    cli_opts_t o;
    memset(&o, 0, sizeof o);
    sweep_point_t pts[4];
    for (int k = 0; k < 4; k++) {
        pts[k] = sweep_point(attn_problem(1, 1, 1, 16, 16, 16, false));
        pts[k].arg = k;
        pts[k].group = k < 3 ? 0 : 1;   /* point 2 stops group 0 (nothing left of it); 3 runs */
    }
    const sweep_part_t parts[] = {
        { .name = "cpu", .where = SWEEP_CPU, .points = pts, .npoints = 4, .run = sweep_test_point, .line = sweep_quiet_line },
        { .name = "gpu", .where = SWEEP_GPU, .points = pts, .npoints = 4, .run = sweep_test_point, .line = sweep_quiet_line },
    };
    int rc = sweep_run_parts(&D, &o, parts, 2);
    expect(rc == 1 && sweep_calls == 4, "sweep: each CPU point runs, a FAIL row fails the sweep, the GPU part skipped",
           "wrong exit code or number of points run");
    sweep_point_t stop[3];
    for (int k = 0; k < 3; k++) { stop[k] = sweep_point(attn_problem(1, 1, 1, 16, 16, 16, false)); stop[k].arg = 2; }
    sweep_calls = 0;
    const sweep_part_t p2 = { .name = "stop", .where = SWEEP_CPU, .points = stop, .npoints = 3, .run = sweep_test_point,
                              .line = sweep_quiet_line };
    rc = sweep_run_parts(&D, &o, &p2, 1);
    expect(rc == 0 && sweep_calls == 1, "sweep: sweep_stop_group skips the rest of a group", "the group ran on");
    const attn_problem_t big = attn_problem(2000000, 64, 8, 100000, 8192, 128, true);
    const attn_problem_t q = sweep_bound("test_common", "the bound", &big, SWEEP_CPU_MAX_FLOPS);
    const double elems = 2.0 * attn_q_elems(&q) + 2.0 * attn_kv_elems(&q) + 4.0 * q.B * q.H * q.N_q * (double)q.N_kv;
    expect(attn_flops_fwd(&q) <= SWEEP_CPU_MAX_FLOPS && elems <= SWEEP_CPU_MAX_ELEMS && q.N_kv == 8192 && q.d == 128 &&
           q.causal && q.H % q.H_kv == 0 && q.H / q.H_kv == 2, "sweep: the bound on CPU work keeps N_kv, d, causal, GQA",
           "out of the bound, or an axis changed");
}

int main(void)
{
    test_fp16();
    test_fp8();
    test_rng();
    test_check();
    test_check_inf();
    test_check_scale();
    test_cpu_bound();
    test_problem();
    test_hbm();
    test_npy();
    test_misc();
    test_par();
    test_sweep();
    return failures ? 1 : 0;
}
