/* test_phase2.c - unit tests of phase 2: one line per test (PASS/FAIL/SKIP name).
 *
 * Counted accesses per element (naive 3, safe 4, online 3); every CPU softmax vs the fp64
 * oracle (rel L2 < 1e-5) on random and edge rows; the streaming example; the overflow of
 * the naive softmax; split + merge of (m, l, o) states in any order; 1-pass attention vs
 * the oracle and vs phase 1; its HBM bytes vs the formula; the GPU kernels vs the CPU
 * 3-pass (skipped with the reason when there is no GPU).
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "gpu.h"
#include "naive.h"
#include "online_softmax.h"
#include "oracle.h"
#include "rng.h"

static int failures;

static void report(bool ok, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report(bool ok, const char *name, const char *fmt, ...)
{
    if (ok) { printf("PASS %s\n", name); return; }
    failures++;
    printf("FAIL %s: ", name);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

typedef void (*sm_fn)(const float *, float *, int, hbm_meter_t *);
static const struct { const char *name; sm_fn fn; int acc; } SM[] = {
    {"naive", softmax_naive_cpu, 3}, {"safe", softmax_safe_cpu, 4}, {"online", softmax_online_cpu, 3}};

static void test_accesses(void)
{
    const int ns[] = {1, 255, 256, 257, 1000, 4096};
    for (int v = 0; v < 3; v++) {
        bool ok = true;
        char why[128] = "";
        for (int k = 0; k < 6; k++) {
            int n = ns[k];
            float *x = calloc((size_t)n, 4), *y = calloc((size_t)n, 4);
            hbm_meter_t m; hbm_reset(&m);
            SM[v].fn(x, y, n, &m);
            if (hbm_total(&m) != (uint64_t)SM[v].acc * 4 * n && ok) {
                ok = false;
                snprintf(why, sizeof why, "n=%d: %.3f accesses per element, want %d", n,
                         (double)hbm_total(&m) / (4.0 * n), SM[v].acc);
            }
            free(x); free(y);
        }
        char name[96];
        snprintf(name, sizeof name, "softmax %s: %d accesses per element (counted)", SM[v].name, SM[v].acc);
        report(ok, name, "%s", why);
    }
}

/* Row x of n vs the oracle; for safe/online the tolerance is tol_cpu and no NaN. */
static bool row_vs_oracle(sm_fn fn, const float *x, int n, char *why, size_t len)
{
    float *y = malloc((size_t)n * 4);
    double *xd = malloc((size_t)n * 8), *w = malloc((size_t)n * 8);
    for (int j = 0; j < n; j++) xd[j] = x[j];
    REF(oracle_softmax_row)(xd, n, w);
    poison_f32(y, (size_t)n);
    hbm_meter_t m; hbm_reset(&m);
    fn(x, y, n, &m);
    err_stats_t e = err_compare(y, w, (size_t)n, tol_cpu());
    bool ok = err_pass(&e, tol_cpu());
    if (!ok) snprintf(why, len, "n=%d rel L2 %.3g, %zu NaN, first bad y[%zu] = %g vs %g", n,
                      e.rel_l2, e.nan_count, e.first_bad, e.first_out, e.first_ref);
    free(y); free(xd); free(w);
    return ok;
}

static void test_vs_oracle(void)
{
    const int ns[] = {2, 17, 256, 1000, 4099, 65536, 131072};
    for (int v = 0; v < 3; v++) {
        bool ok = true;
        char why[256] = "";
        for (int k = 0; k < 7 && ok; k++) {
            float *x = malloc((size_t)ns[k] * 4);
            for (int j = 0; j < ns[k]; j++) x[j] = softmax_input(7 + k, (uint64_t)j);
            ok = row_vs_oracle(SM[v].fn, x, ns[k], why, sizeof why);
            free(x);
        }
        char name[96];
        snprintf(name, sizeof name, "softmax %s vs fp64 oracle, rel L2 < 1e-5", SM[v].name);
        report(ok, name, "%s", why);
    }
}

static void test_edges(void)
{
    float one[1] = {3.5f}, equal[64], masked[64], huge[64], huge2[64], allm[8];
    for (int j = 0; j < 64; j++) {
        equal[j] = 2.25f;
        masked[j] = (j % 3 == 0) ? -INFINITY : softmax_input(3, (uint64_t)j);
        huge[j] = softmax_input(4, (uint64_t)j);
        huge2[j] = j == 5 ? -FLT_MAX : softmax_input(5, (uint64_t)j);
    }
    huge[40] = 1e30f;
    huge2[9] = FLT_MAX;
    for (int j = 0; j < 8; j++) allm[j] = -INFINITY;
    const struct { const char *name; const float *x; int n; } E[] = {
        {"length 1", one, 1}, {"all equal", equal, 64}, {"-inf (masked) entries", masked, 64},
        {"one huge value 1e30", huge, 64}, {"FLT_MAX and -FLT_MAX", huge2, 64}};
    for (int v = 1; v < 3; v++)
        for (int k = 0; k < 5; k++) {
            char name[128], why[256] = "";
            snprintf(name, sizeof name, "softmax %s edge row: %s = oracle, no NaN", SM[v].name, E[k].name);
            bool ok = row_vs_oracle(SM[v].fn, E[k].x, E[k].n, why, sizeof why);
            report(ok, name, "%s", why);
        }
    /* A fully masked row: weights 0 (not NaN) and, in attention, O = 0 and L = +inf. */
    for (int v = 1; v < 3; v++) {
        float y[8];
        hbm_meter_t m;
        SM[v].fn(allm, y, 8, &m);
        bool ok = true;
        for (int j = 0; j < 8; j++) ok &= y[j] == 0.0f;
        char name[96];
        snprintf(name, sizeof name, "softmax %s fully masked row gives weights 0", SM[v].name);
        report(ok, name, "y[0] = %g", y[0]);
    }
    online_state_t s;
    float v[4] = {1, 2, 3, 4}, o[4], L;
    online_state_init(&s, 4);
    for (int j = 0; j < 8; j++) online_state_push(&s, -INFINITY, v, 4);
    online_state_finish(&s, 4, o, &L);
    report(o[0] == 0 && o[1] == 0 && o[2] == 0 && o[3] == 0 && L == INFINITY,
           "fully masked attention row: O = 0, L = +inf", "O[0] = %g, L = %g", o[0], L);
}

static void test_streaming_example(void)
{
    const float x[3] = {3, 1, 2}, V[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    online_state_t s;
    online_state_init(&s, 3);
    bool ok = true;
    for (int i = 0; i < 3; i++) {
        online_state_push(&s, x[i], V[i], 3);
        /* the state after element i, computed independently in double */
        double m = x[0], l = 0;
        for (int k = 1; k <= i; k++) m = fmax(m, x[k]);
        for (int k = 0; k <= i; k++) l += exp(x[k] - m);
        ok &= s.m == (float)m && fabs(s.l - l) < 1e-6;
        for (int k = 0; k < 3; k++) ok &= fabs(s.o[k] - (k <= i ? exp(x[k] - m) : 0.0)) < 1e-6;
    }
    float w[3], L;
    online_state_finish(&s, 3, w, &L);
    ok &= fabs(w[0] - 0.665) < 5e-4 && fabs(w[1] - 0.090) < 5e-4 && fabs(w[2] - 0.245) < 5e-4;
    report(ok, "streaming example [3, 1, 2]: m, l, o per step; weights [0.665, 0.090, 0.245]",
           "weights [%.4f, %.4f, %.4f], m %g l %g", w[0], w[1], w[2], s.m, s.l);
}

static void test_overflow(void)
{
    float x[256], y[256];
    for (int j = 0; j < 256; j++) x[j] = 100.0f + softmax_input(9, (uint64_t)j) / 8.0f;
    hbm_meter_t m;
    softmax_naive_cpu(x, y, 256, &m);
    int bad = 0;
    for (int j = 0; j < 256; j++) bad += !isfinite(y[j]);
    report(bad > 0, "naive softmax overflows at scores ~100 (inf/NaN in fp32)",
           "no non-finite output: the naive sum did not overflow");
    char why[256] = "";
    report(row_vs_oracle(softmax_safe_cpu, x, 256, why, sizeof why) &&
           row_vs_oracle(softmax_online_cpu, x, 256, why, sizeof why),
           "safe and online softmax at scores ~100 match the oracle", "%s", why);
}

/* Any split of a row into blocks, the block states merged in any order, gives the O of
 * the sequential pass within fp32 rounding: rel L2 < 32 FLT_EPSILON = 3.8e-6 (seen: ~1e-6
 * at worst over the 200 trials; a wrong merge is off by O(1)). */
static void test_merge(void)
{
    enum { N = 1000, D = 64, TRIALS = 200 };
    static float x[N], V[N][D];
    static online_state_t blk[16];
    rng_t r;
    rng_seed(&r, 42);
    for (int j = 0; j < N; j++) {
        x[j] = 2.0f * softmax_input(11, (uint64_t)j);          /* in [-16, 16): the max moves */
        if (j % 7 == 3 || (j >= 500 && j < 540)) x[j] = -INFINITY;  /* masked, a masked run */
        for (int c = 0; c < D; c++) V[j][c] = (float)rng_normal(&r);
    }
    online_state_t seq;
    online_state_init(&seq, D);
    for (int j = 0; j < N; j++) online_state_push(&seq, x[j], V[j], D);
    float Oseq[D], O[D], Lseq, L;
    online_state_finish(&seq, D, Oseq, &Lseq);

    double xd[N], w[N], Oref[D];
    for (int j = 0; j < N; j++) xd[j] = x[j];
    double Lref = REF(oracle_softmax_row)(xd, N, w);
    for (int c = 0; c < D; c++) { Oref[c] = 0; for (int j = 0; j < N; j++) Oref[c] += w[j] * V[j][c]; }
    err_stats_t e0 = err_compare(Oseq, Oref, D, tol_cpu());
    report(err_pass(&e0, tol_cpu()) && fabs(Lseq - Lref) < 1e-5 * fabs(Lref),
           "1-pass (m, l, o) over 1000 keys vs fp64 oracle", "rel L2 %.3g, L %g vs %g", e0.rel_l2, Lseq, Lref);

    double Oseqd[D], worst = 0;
    for (int c = 0; c < D; c++) Oseqd[c] = Oseq[c];
    bool ok = true;
    char why[160] = "";
    for (int t = 0; t < TRIALS && ok; t++) {
        int k = 1 + (int)(rng_u64(&r) % 16), cut[17], order[16];
        cut[0] = 0; cut[k] = N;
        for (int b = 1; b < k; b++) cut[b] = (int)(rng_u64(&r) % (N + 1));   /* empty blocks too */
        for (int a = 1; a < k; a++)                                           /* sort cuts */
            for (int b = a; b > 1 && cut[b] < cut[b - 1]; b--) { int tmp = cut[b]; cut[b] = cut[b - 1]; cut[b - 1] = tmp; }
        for (int b = 0; b < k; b++) {
            online_state_init(&blk[b], D);
            for (int j = cut[b]; j < cut[b + 1]; j++) online_state_push(&blk[b], x[j], V[j], D);
            order[b] = b;
        }
        for (int b = k - 1; b > 0; b--) {                                     /* shuffle */
            int a = (int)(rng_u64(&r) % (uint64_t)(b + 1)), tmp = order[a]; order[a] = order[b]; order[b] = tmp;
        }
        online_state_t acc;
        if (t % 2 == 0) {                       /* left fold in a random order */
            online_state_init(&acc, D);
            for (int b = 0; b < k; b++) online_state_merge(&acc, &blk[order[b]], D);
        } else {                                /* a tree: pairwise, in the shuffled order */
            online_state_t *lv[16];
            for (int b = 0; b < k; b++) lv[b] = &blk[order[b]];
            for (int cnt = k, w; cnt > 1; cnt = w) {
                w = 0;
                for (int b = 0; b < cnt; b += 2) {
                    if (b + 1 < cnt) online_state_merge(lv[b], lv[b + 1], D);
                    lv[w++] = lv[b];
                }
            }
            acc = *lv[0];
        }
        online_state_finish(&acc, D, O, &L);
        err_stats_t e = err_compare(O, Oseqd, D, tol_cpu());
        if (e.rel_l2 > worst) worst = e.rel_l2;
        err_stats_t eref = err_compare(O, Oref, D, tol_cpu());
        if (!(e.rel_l2 < 32 * FLT_EPSILON) || e.nan_count || fabsf(L - Lseq) > 1e-5f * fabsf(Lseq) ||
            !err_pass(&eref, tol_cpu())) {
            ok = false;
            snprintf(why, sizeof why, "trial %d (%d blocks, %s): rel L2 vs sequential %.3g, vs oracle %.3g, L %g vs %g",
                     t, k, t % 2 ? "tree" : "fold", e.rel_l2, eref.rel_l2, L, Lseq);
        }
    }
    report(ok, "merge: any split, any merge order = sequential O (rel L2 < 32 eps)", "%s (worst so far %.3g)", why, worst);
}

/* 1-pass attention vs the oracle (rel L2 < 1e-5), vs phase 1 (2x rule), bytes = formula. */
static void test_attention(void)
{
    const struct { int B, H, Hkv, Nq, Nkv, d; bool causal; } P[] = {
        {1, 1, 1, 1, 1, 32, false}, {1, 2, 2, 64, 64, 128, false}, {2, 4, 2, 37, 53, 64, true},
        {1, 2, 1, 50, 30, 32, true}, {1, 1, 1, 70, 70, 16, true}};
    for (int k = 0; k < 5; k++) {
        attn_problem_t p = attn_problem(P[k].B, P[k].H, P[k].Hkv, P[k].Nq, P[k].Nkv, P[k].d, P[k].causal);
        attn_inputs_t in;
        attn_inputs_make(&in, &p, 100 + k, false);
        size_t nq = attn_q_elems(&p), nl = attn_l_elems(&p);
        float *O = malloc(nq * 4), *L = malloc(nl * 4);
        double *Oref = malloc(nq * 8), *Lref = malloc(nl * 8);
        REF(oracle_fwd)(&p, in.q, in.k, in.v, Oref, Lref);
        char desc[128], name[256];
        attn_problem_str(&p, desc, sizeof desc);
        for (int v = 0; v < 2; v++) {
            poison_f32(O, nq); poison_f32(L, nl);
            hbm_meter_t m; hbm_reset(&m);
            if (v == 0) online_attn_cpu(&in, O, L, &m);
            else online_attn_split_cpu(&in, 16, k % 2, O, L, &m);
            err_stats_t eo = err_compare(O, Oref, nq, tol_cpu()), el = err_compare(L, Lref, nl, tol_cpu());
            snprintf(name, sizeof name, "attention %s vs oracle (O, L rel L2 < 1e-5): %s",
                     v ? "split Bc=16 + merge" : "1-pass", desc);
            report(err_pass(&eo, tol_cpu()) && err_pass(&el, tol_cpu()), name,
                   "O rel L2 %.3g (%zu NaN), L rel L2 %.3g", eo.rel_l2, eo.nan_count, el.rel_l2);
            snprintf(name, sizeof name, "attention %s HBM bytes = formula: %s", v ? "split" : "1-pass", desc);
            report((double)hbm_total(&m) == online_attn_traffic(&p), name, "%llu counted vs %.0f",
                   (unsigned long long)hbm_total(&m), online_attn_traffic(&p));
            if (v == 1) continue;
            attn_verdict_t av = attn_validate_fp16(&in, O, L, 1000);
            snprintf(name, sizeof name, "attention 1-pass within phase 1's fp16 bound: %s", desc);
            report(av.pass, name, "max abs %.3g vs bound %.3g, rel L2 %.3g", av.O.max_abs, av.tol.max_abs, av.O.rel_l2);
        }
        attn_inputs_free(&in);
        free(O); free(L); free(Oref); free(Lref);
    }
}

#if HAVE_CUDA
static void test_gpu(void)
{
    const int ns[] = {1, 3, 4, 255, 1000, 1001, 4096, 4099, 65536};
    const int rows = 6;
    typedef void (*gfn)(const float *, float *, int, int);
    const struct { const char *name; gfn fn; } G[] = {{"safe", softmax_safe_gpu}, {"online", softmax_online_gpu}};
    for (int k = 0; k < 9; k++) {
        int n = ns[k];
        size_t tot = (size_t)rows * n;
        float *x = malloc(tot * 4), *y = malloc(tot * 4), *yg = malloc(tot * 4);
        double *ref = malloc(tot * 8), *xd = malloc((size_t)n * 8), *w = malloc((size_t)n * 8);
        for (size_t i = 0; i < tot; i++) x[i] = softmax_input(21, i);
        /* row 1: masked entries; row 2: one huge value; row 3: fully masked; row 4: all equal */
        for (int j = 0; j < n; j++) {
            if (j % 3 == 1) x[1 * (size_t)n + j] = -INFINITY;
            x[3 * (size_t)n + j] = -INFINITY;
            x[4 * (size_t)n + j] = 1.5f;
        }
        x[2 * (size_t)n + n / 2] = 1e30f;
        for (int r = 0; r < rows; r++) {
            hbm_meter_t m;
            softmax_safe_cpu(x + (size_t)r * n, y + (size_t)r * n, n, &m);
        }
        for (size_t i = 0; i < tot; i++) ref[i] = y[i];
        float *dx = gpu_malloc(tot * 4), *dy = gpu_malloc(tot * 4);
        gpu_upload(dx, x, tot * 4);
        for (int g = 0; g < 2; g++) {
            gpu_poison_f32(dy, tot);
            G[g].fn(dx, dy, rows, n);
            gpu_download(yg, dy, tot * 4);
            bool ok = true, zeros = true;
            char why[200] = "";
            for (int r = 0; r < rows && ok; r++) {    /* row by row: each row is its own softmax */
                size_t o = (size_t)r * n;
                for (int j = 0; j < n; j++) xd[j] = x[o + j];
                REF(oracle_softmax_row)(xd, n, w);
                err_stats_t e = err_compare(yg + o, ref + o, (size_t)n, tol_cpu());
                err_stats_t eo = err_compare(yg + o, w, (size_t)n, tol_cpu());
                ok = err_pass(&e, tol_cpu()) && err_pass(&eo, tol_cpu());
                if (!ok) snprintf(why, sizeof why, "row %d: rel L2 %.3g vs CPU 3-pass, %.3g vs oracle, %zu NaN",
                                  r, e.rel_l2, eo.rel_l2, e.nan_count);
            }
            for (int j = 0; j < n; j++) zeros &= yg[3 * (size_t)n + j] == 0.0f;
            char name[128];
            snprintf(name, sizeof name, "GPU softmax %s vs CPU 3-pass and oracle, %d rows x n=%d (masked, huge, fully masked rows)",
                     G[g].name, rows, n);
            report(ok && zeros, name, "%s%s", why, zeros ? "" : " fully masked row not 0");
        }
        gpu_free(dx); gpu_free(dy);
        free(x); free(y); free(yg); free(ref); free(xd); free(w);
    }
}
#endif

int main(void)
{
    test_accesses();
    test_vs_oracle();
    test_edges();
    test_streaming_example();
    test_overflow();
    test_merge();
    test_attention();
    char why[256] = "built without nvcc";
#if HAVE_CUDA
    if (gpu_available(why, sizeof why)) test_gpu();
    else
#endif
        printf("SKIP GPU softmax kernels vs CPU 3-pass: %s\n", why);
    return failures ? 1 : 0;
}
