/* fp8_accuracy.c - FlashAttention-3's Table 3 on this machine's CPU: the forward's error
 * against the fp64 oracle in fp16 and in three FP8 variants (fa3_fp8.h), on FA3's inputs
 * (N(0,1) + N(0,100) Bernoulli(0.001) in Q, K and V).
 *
 *   build/fp8_accuracy [--B b --H h --Hkv h --N n --Nkv n --d d --causal --seed s --csv file]
 *
 * One row a mode: RMSE of O (FA3's measure) and its ratio to fp16's, rel L2 and max abs; the
 * CSV (results/fp8/fp8_accuracy.csv unless --csv) carries the same. Blocks: FA3's FP8
 * forward tiles, Br = 128 and Bc = 128 (for d = 256 too, the accuracy does not depend on the
 * kernel's Bc beyond the scales' tiles). The reference is computed from the same fp16
 * inputs every mode starts from. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "cli.h"
#include "csv.h"
#include "driver.h"
#include "fa3_fp8.h"
#include "oracle.h"

static const cli_spec_t SPEC = { .phase = "fp8_accuracy",
    .summary = "FlashAttention-3's FP8 forward on the CPU: its error against fp64 in fp16 and three FP8 variants",
    .defaults = { .B = 1, .H = 4, .H_kv = 4, .N_q = 1024, .N_kv = 1024, .d = 128 },
    .default_csv = "results/fp8/fp8_accuracy.csv", .no_dump = true };

int main(int argc, char **argv)
{
    cli_opts_t o;
    cli_parse(argc, argv, &SPEC, &o);
    const attn_problem_t *p = &o.p;
    if (!attn_cpu_fits(p, 2e10)) {
        fprintf(stderr, "fp8_accuracy: the problem is too large for the CPU (4 B H N_q N_kv d above 2e10, or the "
                        "row and element bounds of common/problem.h)\n");
        return 2;
    }
    if (p->d & (p->d - 1)) { fprintf(stderr, "fp8_accuracy: d must be a power of 2 (the Hadamard transform)\n"); return 2; }
    attn_inputs_t in;
    if (attn_inputs_make(&in, p, o.seed, false) != 0) { fprintf(stderr, "fp8_accuracy: out of host memory\n"); return 1; }
    fa3_add_outliers(&in, o.seed + 1);
    const size_t n = attn_q_elems(p);
    double *ref = malloc(sizeof(double) * n);
    float *O = malloc(sizeof(float) * n);
    if (!ref || !O) { fprintf(stderr, "fp8_accuracy: out of host memory\n"); return 1; }
    REF(oracle_fwd)(p, in.q, in.k, in.v, ref, NULL);   /* the reference, whatever phase 0 holds (common/ref.h) */
    machine_info_t mi;
    machine_info_cpu(&mi);
    FILE *csv = csv_open(o.csv_path, SPEC.phase, &mi, argc, argv, "mode,B,H,H_kv,N_q,N_kv,d,causal,Br,Bc,rmse,rmse_vs_fp16,rel_l2,max_abs");
    if (!csv) return 1;
    char prob[160];
    attn_problem_str(p, prob, sizeof prob);
    printf("fp8_accuracy: %s, inputs N(0,1) + N(0,100) Bernoulli(0.001), blocks 128 x 128, seed %llu\n", prob,
           (unsigned long long)o.seed);
    printf("%-30s %11s %9s %11s %11s\n", "mode", "RMSE of O", "vs fp16", "rel L2", "max abs");
    double rmse16 = 0;
    int fail = 0;
    for (int m = 0; m < FA3_MODES; m++) {
        if (fa3_fp8_cpu(&in, (fa3_mode_t)m, 128, 128, o.seed + 2, O) != 0) { fprintf(stderr, "fp8_accuracy: out of host memory\n"); return 1; }
        double se = 0, ref2 = 0, mx = 0;
        for (size_t i = 0; i < n; i++) {
            const double e = (double)O[i] - ref[i];
            se += e * e;
            ref2 += ref[i] * ref[i];
            mx = fmax(mx, fabs(e));
        }
        const double rmse = sqrt(se / (double)n), rel = ref2 > 0 ? sqrt(se / ref2) : sqrt(se);
        if (m == FA3_FP16) rmse16 = rmse;
        fail |= !isfinite(rmse);
        printf("%-30s %11.3e %8.1fx %11.3e %11.3e\n", FA3_MODE_NAME[m], rmse, rmse / rmse16, rel, mx);
        fprintf(csv, "\"%s\",%d,%d,%d,%d,%d,%d,%d,128,128,%.4e,%.2f,%.4e,%.4e\n", FA3_MODE_NAME[m], p->B, p->H, p->H_kv,
                p->N_q, p->N_kv, p->d, p->causal ? 1 : 0, rmse, rmse / rmse16, rel, mx);
    }
    printf("FlashAttention-3's Table 3 (Shah et al., arXiv 2407.08608), for the same kind of inputs: fp16 1.9e-4, "
           "fp8 with one scale a tensor 2.4e-2, FA3's fp8 (block scales + incoherent processing) 9.1e-3\n");
    free(ref); free(O);
    attn_inputs_free(&in);
    if (csv_close(csv, o.csv_path, SPEC.phase) != 0) return 1;
    printf("csv: %s\n", o.csv_path);
    return fail;
}
