/* test_phase1.c - unit tests of phase 1's CPU model and validation (no GPU needed):
 *   - the metered HBM bytes equal the phase-0 formula std_attn_traffic(p, 2) exactly;
 *   - the CPU model agrees with the fp64 oracle (rel L2 < 3e-3: S, P, O are fp16) on
 *     d in {32, 64, 128} x N in {1, 17, 128} x causal or not, N_q != N_kv both ways, GQA;
 *   - naive_cpu_row makes exactly the roundings of naive_cpu;
 *   - fully masked rows give O = 0 and L = +inf;
 *   - the validation has teeth: a perturbed output, a NaN, a wrong L fail; so do the
 *     faults at infinity (O = +inf, O = NaN, a fully masked row's L = -inf, 0 or finite
 *     where +inf is due, L = +inf where a finite L is due).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cost.h"
#include "naive.h"
#include "oracle.h"

static int failures = 0;

static void report(int ok, const char *name, const char *why)
{
    if (ok) printf("PASS %s\n", name);
    else { printf("FAIL %s: %s\n", name, why); failures++; }
}

typedef struct { attn_inputs_t in; float *O, *L; hbm_meter_t m; } run_t;

static run_t run(attn_problem_t p, uint64_t seed)
{
    run_t r;
    if (attn_inputs_make(&r.in, &p, seed, false) != 0) { printf("FAIL setup: out of memory\n"); exit(1); }
    r.O = malloc(attn_q_elems(&p) * sizeof(float));
    r.L = malloc(attn_l_elems(&p) * sizeof(float));
    poison_f32(r.O, attn_q_elems(&p));
    poison_f32(r.L, attn_l_elems(&p));
    hbm_reset(&r.m);
    naive_cpu(&r.in, r.O, r.L, &r.m);
    return r;
}

static void run_free(run_t *r) { free(r->O); free(r->L); attn_inputs_free(&r->in); }

static void shape_tests(attn_problem_t p)
{
    char desc[128], name[256], why[256];
    attn_problem_str(&p, desc, sizeof desc);
    run_t r = run(p, 7);

    double formula = std_attn_traffic(&p, 2).total;
    snprintf(name, sizeof name, "HBM bytes == std_attn_traffic (%s)", desc);
    snprintf(why, sizeof why, "counted %llu, formula %.0f",
             (unsigned long long)hbm_total(&r.m), formula);
    report((double)hbm_total(&r.m) == formula, name, why);

    /* every row against the oracle, rel L2 < 3e-3, and L within 1e-3 */
    attn_verdict_t v = attn_validate_fp16(&r.in, r.O, r.L, p.B * p.H * p.N_q);
    snprintf(name, sizeof name, "cpu model vs fp64 oracle (%s)", desc);
    snprintf(why, sizeof why, "rel L2 %.3e, max abs %.3e (pipeline %.3e), L max abs %.3e, NaN %zu, rows %d",
             v.O.rel_l2, v.O.max_abs, v.pipeline_max_abs, v.L.max_abs, v.O.nan_count, v.rows_checked);
    report(v.pass && v.O.rel_l2 < TOL_FP16_REL_L2 && v.rows_checked == p.B * p.H * p.N_q, name, why);
    run_free(&r);
}

/* Faults injected into a correct O, L (the CPU model's) of a problem with fully masked
 * rows (causal, N_q = 40 > N_kv = 24: rows 0..15 see no key): attn_validate_fp16 must
 * FAIL each one, and PASS the unfaulted output. */
static void fault_tests(void)
{
    attn_problem_t p = attn_problem(1, 2, 1, 40, 24, 32, true);
    run_t r = run(p, 13);
    size_t nq = attn_q_elems(&p), nl = attn_l_elems(&p);
    const int masked = p.N_q - p.N_kv;                 /* rows 0..15 of each head */
    float *O = malloc(nq * sizeof(float)), *L = malloc(nl * sizeof(float));
    attn_verdict_t v = attn_validate_fp16(&r.in, r.O, r.L, 1000);
    report(v.pass && isinf(r.L[0]) && r.L[0] > 0 && isfinite(r.L[masked]),
           "faults (phase 1 check): the unfaulted O, L with masked rows pass", "failed, or no masked row");
    struct { int is_L; size_t at; float val; const char *name; } f[] = {
        {0, 5 * 32 + 3,          INFINITY,  "faults (phase 1 check): O = +inf fails"},
        {0, 20 * 32 + 7,         NAN,       "faults (phase 1 check): O = NaN fails"},
        {1, 3,                   -INFINITY, "faults (phase 1 check): masked row L = -inf (ref +inf) fails"},
        {1, 40 + 15,             0.0f,      "faults (phase 1 check): masked row L = 0 (ref +inf) fails"},
        {1, 7,                   5.0f,      "faults (phase 1 check): masked row L finite where +inf is due fails"},
        {1, 30,                  INFINITY,  "faults (phase 1 check): L = +inf where a finite L is due fails"},
    };
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        memcpy(O, r.O, nq * sizeof(float));
        memcpy(L, r.L, nl * sizeof(float));
        if (f[k].is_L) L[f[k].at] = f[k].val; else O[f[k].at] = f[k].val;
        v = attn_validate_fp16(&r.in, O, L, 1000);
        const err_stats_t *e = f[k].is_L ? &v.L : &v.O;
        char where[200];
        err_first_bad_str(e, f[k].is_L ? p.N_q : p.d, f[k].is_L ? "L" : "O", where, sizeof where);
        report(!v.pass && e->first_bad == f[k].at && (e->nan_count + e->inf_mismatch) == 1, f[k].name, where);
    }
    free(O); free(L);
    run_free(&r);
}

int main(void)
{
    static const int ds[] = {32, 64, 128}, Ns[] = {1, 17, 128};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 2; c++)
                shape_tests(attn_problem(1, 2, 2, Ns[b], Ns[b], ds[a], c));
    /* N_q != N_kv both ways (with N_q > N_kv, causal rows 0..N_q-N_kv-1 see no key), GQA, MQA */
    shape_tests(attn_problem(2, 2, 2, 17, 45, 64, true));
    shape_tests(attn_problem(1, 2, 2, 45, 17, 64, true));
    shape_tests(attn_problem(1, 2, 2, 45, 17, 32, false));
    shape_tests(attn_problem(2, 4, 2, 33, 33, 64, true));
    shape_tests(attn_problem(1, 4, 1, 20, 70, 128, false));

    /* naive_cpu_row = naive_cpu, bit for bit, on every row of a GQA causal problem */
    {
        attn_problem_t p = attn_problem(2, 4, 2, 19, 31, 32, true);
        run_t r = run(p, 3);
        float *o = malloc(p.d * sizeof(float));
        int same = 1;
        for (int b = 0; b < p.B; b++)
            for (int h = 0; h < p.H; h++)
                for (int i = 0; i < p.N_q; i++) {
                    naive_cpu_row(&p, r.in.q, r.in.k, r.in.v, b, h, i, o);
                    same &= memcmp(o, r.O + attn_q_offset(&p, b, h) + (size_t)i * p.d, p.d * sizeof(float)) == 0;
                }
        report(same, "naive_cpu_row makes the same roundings as naive_cpu", "a row differs");
        free(o);
        run_free(&r);
    }

    /* fully masked rows: N_q = 30 > N_kv = 10, causal: rows 0..19 see nothing */
    {
        attn_problem_t p = attn_problem(1, 1, 1, 30, 10, 16, true);
        run_t r = run(p, 5);
        int ok = 1;
        for (int i = 0; i < 20; i++) {
            ok &= isinf(r.L[i]) && r.L[i] > 0;
            for (int x = 0; x < p.d; x++) ok &= r.O[(size_t)i * p.d + x] == 0.0f;
        }
        ok &= isfinite(r.L[20]);
        report(ok, "fully masked rows give O = 0 and L = +inf", "a masked row has O != 0 or finite L");
        run_free(&r);
    }

    /* the check has teeth */
    {
        attn_problem_t p = attn_problem(1, 2, 1, 40, 40, 64, false);
        run_t r = run(p, 11);
        size_t n = attn_q_elems(&p);
        float *bad = malloc(n * sizeof(float));
        double pipe = naive_fp16_pipeline_max_abs(&r.in, 1000);
        report(pipe > 0 && pipe < 1e-2, "fp16 pipeline max abs error is small and non-zero", "out of (0, 1e-2)");

        memcpy(bad, r.O, n * sizeof(float));
        bad[5 * p.d + 3] += (float)(3 * pipe + 1e-3);     /* one element beyond the 2x rule */
        attn_verdict_t v = attn_validate_fp16(&r.in, bad, NULL, 1000);
        report(!v.pass && v.O.first_bad == (size_t)(5 * p.d + 3), "validation catches one element beyond 2x the pipeline error",
               "passed, or pointed at the wrong element");

        memcpy(bad, r.O, n * sizeof(float));
        bad[n - 1] = NAN;
        v = attn_validate_fp16(&r.in, bad, NULL, 1000);
        report(!v.pass && v.O.nan_count == 1, "validation catches a NaN (an unwritten element)", "passed");

        float *badL = malloc(attn_l_elems(&p) * sizeof(float));
        memcpy(badL, r.L, attn_l_elems(&p) * sizeof(float));
        badL[7] += 0.01f;
        v = attn_validate_fp16(&r.in, r.O, badL, 1000);
        report(!v.pass, "validation catches an L off by 0.01", "passed");
        v = attn_validate_fp16(&r.in, r.O, r.L, 1000);
        report(v.pass, "validation passes the model's own O and L", "failed");
        free(badL);
        free(bad);
        run_free(&r);
    }

    /* sampling: a big problem is checked on at most max_rows rows, first and last included */
    {
        attn_problem_t p = attn_problem(2, 3, 3, 500, 500, 32, false);
        attn_inputs_t in;
        attn_inputs_make(&in, &p, 1, false);
        float *O = malloc(attn_q_elems(&p) * sizeof(float));
        poison_f32(O, attn_q_elems(&p));
        attn_verdict_t v = attn_validate_fp16(&in, O, NULL, 64);
        report(v.rows_checked == 64 && v.O.n == 64u * 32 && !v.pass, "big problems are checked on a sample of rows",
               "wrong row count, or a poisoned output passed");
        free(O);
        attn_inputs_free(&in);
    }

    /* the memory-wall sizes: B=32, H=8, N=2048 -> S is 2 GiB in fp16, S + P 4 GiB */
    {
        attn_problem_t p = attn_problem(32, 8, 8, 2048, 2048, 64, false);
        report(naive_sp_bytes(&p) == 4.0 * 1073741824.0, "S + P of B=32 H=8 N=2048 is 4 GiB", "wrong size");
    }
    fault_tests();
    return failures ? 1 : 0;
}
