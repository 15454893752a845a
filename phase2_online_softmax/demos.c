/* demos.c - phase 2's 1-pass attention as the later phases' reference, and its two
 * worked demonstrations, each a check that returns PASS or FAIL:
 * the streaming softmax of three scores step by step, and the overflow that the safe and
 * online softmaxes avoid. The driver adds each as one row of its table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "check.h"
#include "online_softmax.h"
#include "oracle.h"

enum { OVF_N = 1024 };

float *online_attn_reference(const attn_inputs_t *in, double max_flops)
{
    if (attn_flops_fwd(&in->p) > max_flops) return NULL;
    float *O = xmalloc(attn_q_elems(&in->p) * sizeof(float), "phase2");
    float *L = xmalloc(attn_l_elems(&in->p) * sizeof(float), "phase2");
    hbm_meter_t meter;
    REF(online_attn_cpu)(in, O, L, &meter);
    free(L);
    return O;
}

/* The chapter's worked example: scores [3, 1, 2], values = the unit vectors, so the
 * unnormalised o IS the vector of unnormalised weights. Checked against the oracle and
 * against the published [0.665, 0.090, 0.245] (3 decimals). */
bool online_streaming_example(bool quiet)
{
    const float x[3] = {3, 1, 2}, V[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    const double published[3] = {0.665, 0.090, 0.245};
    online_state_t s;
    online_state_init(&s, 3);
    if (!quiet) printf("Streaming softmax of scores [3, 1, 2], values v1..v3 = unit vectors:\n");
    for (int i = 0; i < 3; i++) {
        online_state_push(&s, x[i], V[i], 3);
        if (!quiet)
            printf("  after x%d = %g: m = %g  l = %.4f  o = [%.4f, %.4f, %.4f]\n", i + 1, x[i],
                   s.m, s.l, s.o[0], s.o[1], s.o[2]);
    }
    float w[3], L;
    online_state_finish(&s, 3, w, &L);
    double xd[3] = {3, 1, 2}, ref[3];
    double Lref = REF(oracle_softmax_row)(xd, 3, ref);
    bool ok = fabs(L - Lref) < 1e-6;
    for (int j = 0; j < 3; j++) ok &= fabs(w[j] - ref[j]) < 1e-6 && fabs(w[j] - published[j]) < 5e-4;
    if (!quiet)
        printf("  weights = o / l = [%.3f, %.3f, %.3f]  (oracle [%.3f, %.3f, %.3f], L = %.4f): %s\n\n",
               w[0], w[1], w[2], ref[0], ref[1], ref[2], L, ok ? "PASS" : "FAIL");
    return ok;
}

/* Scores c + u, u in [-1, 1): as c passes ln(FLT_MAX) = 88.7 the naive sum overflows. */
bool softmax_overflow_demo(uint64_t seed, FILE *f)
{
    float x[OVF_N], y[3][OVF_N];
    double xd[OVF_N], w[OVF_N];
    bool safe_ok = true, naive_breaks = false;
    for (int c = 0; c <= 120; c += 5) {
        for (int j = 0; j < OVF_N; j++) xd[j] = x[j] = (float)c + softmax_input(seed, (uint64_t)j) / 8.0f;
        REF(oracle_softmax_row)(xd, OVF_N, w);
        hbm_meter_t m;
        softmax_naive_cpu(x, y[0], OVF_N, &m);
        softmax_safe_cpu(x, y[1], OVF_N, &m);
        softmax_online_cpu(x, y[2], OVF_N, &m);
        double fin[3], rel[3];
        for (int v = 0; v < 3; v++) {
            int k = 0;
            for (int j = 0; j < OVF_N; j++) k += isfinite(y[v][j]);
            fin[v] = (double)k / OVF_N;
            err_stats_t e = err_compare(y[v], w, OVF_N, tol_cpu());
            rel[v] = e.nan_count ? -1 : e.rel_l2;          /* -1: not a number to plot */
            if (v > 0) safe_ok &= err_pass(&e, tol_cpu());
        }
        if (c == 100) naive_breaks = fin[0] < 1.0 || rel[0] < 0 || rel[0] > 0.5;
        if (f) fprintf(f, "%d,%.4f,%.4f,%.4f,%.3e,%.3e,%.3e\n", c, fin[0], fin[1], fin[2], rel[0], rel[1], rel[2]);
    }
    return safe_ok && naive_breaks;
}
