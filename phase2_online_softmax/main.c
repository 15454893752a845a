/* main.c - phase 2 driver: softmax 3-pass -> 2-pass -> 1-pass.
 *
 *   build/phase2 [--B b --H h --N n --Nkv n --d d --causal --seed s]   attention problem
 *                [--kernel safe|online|all] [--iters k] [--sweep] [--csv file] [--cpu] [--quiet]
 *
 * In order: the streaming example [3, 1, 2]; the three CPU softmaxes on one row (counted
 * accesses per element, error vs the fp64 oracle); the overflow demonstration; 1-pass
 * attention and its split-and-merge form vs phase 1's naive_cpu and the phase-0 oracle;
 * then, with a GPU, the two row-softmax kernels on a 4096 x 65536 fp32 matrix vs the CPU
 * 3-pass (GB/s against the measured copy bandwidth), and with --sweep over row lengths.
 * CSVs: <csv> (the table), <dir>/phase2_overflow.csv, <dir>/phase2_sweep.csv (--sweep).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "cli.h"
#include "csv.h"
#include "gpu.h"
#include "naive.h"
#include "online_softmax.h"
#include "oracle.h"
#include "table.h"
#include "timer.h"

static const char *const KERNELS[] = {"safe", "online", NULL};
enum { SM_N = 4096, GPU_ROWS = 4096, GPU_N = 65536, SAMPLE_ROWS = 32 };

typedef struct {
    table_t t;
    FILE *csv;
    int checks, fails;
    char failed[256];
    bool quiet;
} report_t;

/* One table row and one CSV row. verdict NULL: informative row (not a check). */
static void add_row(report_t *r, const char *variant, const char *where, int rows, int n,
                    double acc, double bytes, double ms, double gbps, double eff_gbps,
                    double copy_gbps, double rel_l2, const char *verdict)
{
    char c[9][TABLE_CELL], b[32];
    const char *cells[] = {variant, where, fmt_cell(c[0], "%d x %d", rows, n),
                           acc > 0 ? fmt_cell(c[1], "%.2f", acc) : "-",
                           bytes > 0 ? fmt_cell(c[2], "%s", fmt_bytes(bytes, b)) : "-",
                           ms > 0 ? fmt_cell(c[3], "%.3f", ms) : "-",
                           gbps > 0 ? fmt_cell(c[4], "%.0f", gbps) : "-",
                           fmt_cell(c[5], "%.2e", rel_l2), verdict ? verdict : "info"};
    table_add(&r->t, cells);
    if (r->csv)
        fprintf(r->csv, "%s,%s,%d,%d,%.4f,%.0f,%.6f,%.2f,%.2f,%.2f,%.3e,%s\n", variant, where,
                rows, n, acc, bytes, ms, gbps, eff_gbps, copy_gbps, rel_l2, verdict ? verdict : "info");
    if (!verdict) return;
    r->checks++;
    if (strcmp(verdict, "PASS") != 0) {
        r->fails++;
        size_t len = strlen(r->failed);
        snprintf(r->failed + len, sizeof r->failed - len, "%s%s", len ? ", " : "", variant);
    }
}

/* ---- the unit checks: each exercise alone, on cases of its own ------------------------
 * p2.ml_update and p2.merge against the reference library's copies (common/ref.h) on
 * states whose maxima lie far apart, empty states and masked scores; p2.o_update through
 * online_state_push, held to its formula with the m that push itself produced (so a
 * mistake in p2.ml_update does not show as one in p2.o_update). Each records its verdict
 * (common/check.h, ex_unit): the composite checks below then name only what they did not
 * clear. */
static bool near_f(float got, float want)
{
    if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
    if (isinf(got) || isinf(want)) return got == want;
    return fabsf(got - want) <= 1e-5f * fabsf(want) + 1e-30f;
}
static const float UM[] = {-INFINITY, 0.0f, 2.0f, -5.0f, 100.0f, -100.0f};
static const float UL[] = {0.0f, 1.0f, 3.5f, 0.25f, 1.0f, 2.0f};
static const float UX[] = {-INFINITY, -200.0f, -3.0f, 0.0f, 0.5f, 2.0f, 7.0f, 100.0f, 150.0f};
enum { UD = 8 };
static void unit_state(online_state_t *s, float m, float l, int k)
{
    s->m = m; s->l = m == -INFINITY ? 0.0f : l;
    for (int c = 0; c < UD; c++) s->o[c] = m == -INFINITY ? 0.0f : 0.125f * (float)((c * 7 + k * 3) % 11) - 0.5f;
}
static void unit_checks(report_t *r)
{
    char bad[200] = "";
    /* p2.ml_update: every start state and score, then one long fold */
    bool ok = true;
    for (size_t a = 0; a < sizeof UM / sizeof UM[0] && ok; a++)
        for (size_t b = 0; b < sizeof UX / sizeof UX[0] && ok; b++) {
            float m = UM[a], l = UM[a] == -INFINITY ? 0.0f : UL[a], rm = m, rl = l;
            online_ml_update(&m, &l, UX[b]);
            REF(online_ml_update)(&rm, &rl, UX[b]);
            if (!near_f(m, rm) || !near_f(l, rl)) {
                ok = false;
                snprintf(bad, sizeof bad, "(m, l) = (%g, %g) then x = %g gives (%g, %g), the reference (%g, %g)",
                         (double)UM[a], (double)(UM[a] == -INFINITY ? 0.0f : UL[a]), (double)UX[b], (double)m, (double)l,
                         (double)rm, (double)rl);
            }
        }
    if (ok) {
        float m = -INFINITY, l = 0, rm = m, rl = l;
        for (int k = 0; k < 300; k++) {
            const float x = k % 17 == 0 ? -INFINITY : 0.37f * (float)((k * 37) % 101) - 18.0f + (k == 150 ? 60.0f : 0.0f);
            online_ml_update(&m, &l, x);
            REF(online_ml_update)(&rm, &rl, x);
        }
        if (!near_f(m, rm) || !near_f(l, rl)) {
            ok = false;
            snprintf(bad, sizeof bad, "300 scores folded in give (m, l) = (%g, %g), the reference (%g, %g)",
                     (double)m, (double)l, (double)rm, (double)rl);
        }
    }
    if (!ok && !r->quiet) printf("unit check of p2.ml_update: FAIL: %s\n", bad);
    add_row(r, "unit: p2.ml_update", "cpu", 1, 1, 0, 0, 0, 0, 0, 0, 0, ok ? "PASS" : "FAIL");
    check_hint_exercises(ok, "p2.ml_update");
    ex_unit("p2.ml_update", ok);

    /* p2.o_update: o after a push, against o_old e^(m_old - m) + e^(x - m) v with push's own m */
    ok = true;
    for (size_t a = 0; a < sizeof UM / sizeof UM[0] && ok; a++)
        for (size_t b = 0; b < sizeof UX / sizeof UX[0] && ok; b++) {
            online_state_t s;
            unit_state(&s, UM[a], UL[a], (int)(a + b));
            float v[UD], o_old[UD];
            for (int c = 0; c < UD; c++) { v[c] = 0.25f * (float)c - 0.75f + 0.1f * (float)b; o_old[c] = s.o[c]; }
            const float m_old = s.m;
            online_state_push(&s, UX[b], v, UD);
            for (int c = 0; c < UD && ok; c++) {
                const float want = UX[b] == -INFINITY ? o_old[c] : o_old[c] * expf(m_old - s.m) + expf(UX[b] - s.m) * v[c];
                if (!near_f(s.o[c], want)) {
                    ok = false;
                    snprintf(bad, sizeof bad, "m = %g, x = %g: o[%d] = %g after the push, want o e^(m_old - m) + e^(x - m) v = %g",
                             (double)m_old, (double)UX[b], c, (double)s.o[c], (double)want);
                }
            }
        }
    if (!ok && !r->quiet) printf("unit check of p2.o_update: FAIL: %s\n", bad);
    add_row(r, "unit: p2.o_update", "cpu", 1, 1, 0, 0, 0, 0, 0, 0, 0, ok ? "PASS" : "FAIL");
    check_hint_exercises(ok, "p2.o_update");
    ex_unit("p2.o_update", ok);

    /* p2.merge: pairs of states, their maxima equal, close, and 100 apart either way, or empty */
    static const float MA[][2] = {{0, 100}, {100, 0}, {5, 5}, {-INFINITY, 3}, {3, -INFINITY}, {-INFINITY, -INFINITY},
                                  {-50, 40}, {0.001f, -0.001f}, {-100, -99}};
    ok = true;
    for (size_t k = 0; k < sizeof MA / sizeof MA[0] && ok; k++) {
        online_state_t a, b, ra;
        unit_state(&a, MA[k][0], 1.5f, (int)k);
        unit_state(&b, MA[k][1], 0.75f, (int)k + 5);
        ra = a;
        online_state_merge(&a, &b, UD);
        REF(online_state_merge)(&ra, &b, UD);
        bool same = near_f(a.m, ra.m) && near_f(a.l, ra.l);
        for (int c = 0; c < UD; c++) same = same && near_f(a.o[c], ra.o[c]);
        if (!same) {
            ok = false;
            snprintf(bad, sizeof bad, "maxima %g and %g: merged (m, l, o[0]) = (%g, %g, %g), the reference (%g, %g, %g)",
                     (double)MA[k][0], (double)MA[k][1], (double)a.m, (double)a.l, (double)a.o[0], (double)ra.m,
                     (double)ra.l, (double)ra.o[0]);
        }
    }
    if (!ok && !r->quiet) printf("unit check of p2.merge: FAIL: %s\n", bad);
    add_row(r, "unit: p2.merge", "cpu", 1, 1, 0, 0, 0, 0, 0, 0, 0, ok ? "PASS" : "FAIL");
    check_hint_exercises(ok, "p2.merge");
    ex_unit("p2.merge", ok);
}

/* rel L2 of a float row against the fp64 oracle's weights. */
static err_stats_t vs_oracle(const float *y, const double *w, int n)
{ return err_compare(y, w, (size_t)n, tol_cpu()); }

/* The three softmaxes on one row of n scores: counted accesses and error. */
static void cpu_softmaxes(report_t *r, uint64_t seed)
{
    typedef void (*sm_fn)(const float *, float *, int, hbm_meter_t *);
    const struct { const char *name; sm_fn fn; double want; } V[] = {
        {"softmax naive", softmax_naive_cpu, 3}, {"softmax safe (3-pass)", softmax_safe_cpu, 4},
        {"softmax online (2-pass)", softmax_online_cpu, 3}};
    float *x = malloc(SM_N * sizeof *x), *y = malloc(SM_N * sizeof *y);
    double *xd = malloc(SM_N * sizeof *xd), *w = malloc(SM_N * sizeof *w);
    if (!x || !y || !xd || !w) { fprintf(stderr, "phase2: out of host memory\n"); exit(1); }
    for (int j = 0; j < SM_N; j++) xd[j] = x[j] = softmax_input(seed, (uint64_t)j);
    REF(oracle_softmax_row)(xd, SM_N, w);
    for (int v = 0; v < 3; v++) {
        hbm_meter_t m; hbm_reset(&m);
        poison_f32(y, SM_N);
        double t0 = now_seconds();
        V[v].fn(x, y, SM_N, &m);
        double ms = 1e3 * (now_seconds() - t0);
        double acc = (double)hbm_total(&m) / (4.0 * SM_N);
        err_stats_t e = vs_oracle(y, w, SM_N);
        bool ok = err_pass(&e, tol_cpu()) && acc == V[v].want;
        if (!ok && !r->quiet) {
            char bad[160];
            err_first_bad_str(&e, SM_N, "y", bad, sizeof bad);
            printf("%s: %.2f accesses per element (want %.0f), rel L2 %.2e, first bad %s\n",
                   V[v].name, acc, V[v].want, e.rel_l2, bad);
        }
        add_row(r, V[v].name, "cpu", 1, SM_N, acc, (double)hbm_total(&m), ms, 0, 0, 0, e.rel_l2,
                ok ? "PASS" : "FAIL");
        if (v == 2) check_hint_exercises(ok, "p2.ml_update, p2.merge");
    }
    free(x); free(y); free(xd); free(w);
}

static void overflow_rows(report_t *r, uint64_t seed, const char *dir, const machine_info_t *mi,
                          int argc, char **argv)
{
    char path[OUT_PATH_MAX];
    FILE *f = NULL;
    bool ok = true;
    if (dir) {   /* NULL: --csv is not a regular file, nothing is written beside it */
        path_join(path, dir, "phase2_overflow.csv");   /* fits: cli_parse kept room (path.h) */
        f = csv_open(path, "phase2", mi, argc, argv,
                     "offset,naive_finite_frac,safe_finite_frac,online_finite_frac,naive_rel_l2,safe_rel_l2,online_rel_l2");
        if (!f) ok = false;   /* said on stderr */
    }
    ok = softmax_overflow_demo(seed, f) && ok;
    if (f && csv_close(f, path, "phase2") != 0) ok = false;
    add_row(r, "overflow at x~100: naive NaN, safe/online ok", "cpu", 25, 1024, 0, 0, 0, 0, 0, 0, 0, ok ? "PASS" : "FAIL");
}

/* 1-pass attention (and split + merge) vs phase 1's naive_cpu and the oracle. */
static void attention(report_t *r, const attn_problem_t *p, uint64_t seed)
{
    attn_inputs_t in;
    size_t nq = attn_q_elems(p), nl = attn_l_elems(p);
    float *O = malloc(nq * sizeof *O), *L = malloc(nl * sizeof *L);
    float *On = malloc(nq * sizeof *On), *Ln = malloc(nl * sizeof *Ln);
    double *Oref = malloc(nq * sizeof *Oref), *Lref = malloc(nl * sizeof *Lref);
    double *Ond = malloc(nq * sizeof *Ond);
    if (!O || !L || !On || !Ln || !Oref || !Lref || !Ond || attn_inputs_make(&in, p, seed, false) != 0) {
        fprintf(stderr, "phase2: out of host memory for the attention problem\n"); exit(1);
    }
    REF(oracle_fwd)(p, in.q, in.k, in.v, Oref, Lref);
    const tol_t tc = tol_cpu_keys(p->N_kv);   /* 1e-5, more over long caches (check.h) */
    char desc[128];
    attn_problem_str(p, desc, sizeof desc);
    int rows = p->B * p->H * p->N_q;

    hbm_meter_t m; hbm_reset(&m);
    double t0 = now_seconds();
    REF(naive_cpu)(&in, On, Ln, &m);
    double ms = 1e3 * (now_seconds() - t0);
    err_stats_t en = err_compare(On, Oref, nq, tc);
    add_row(r, "attention phase 1 (S, P in fp16)", "cpu", rows, p->N_kv, 0, (double)hbm_total(&m),
            ms, 0, 0, 0, en.rel_l2, NULL);
    for (size_t i = 0; i < nq; i++) Ond[i] = On[i];

    for (int v = 0; v < 3; v++) {
        const char *name = v == 0 ? "attention 1-pass (m, l, o)" :
                           v == 1 ? "attention split Bc=64, merged" : "attention split Bc=64, merged in reverse";
        poison_f32(O, nq); poison_f32(L, nl);
        hbm_reset(&m);
        t0 = now_seconds();
        if (v == 0) online_attn_cpu(&in, O, L, &m);
        else online_attn_split_cpu(&in, 64, v == 2, O, L, &m);
        ms = 1e3 * (now_seconds() - t0);
        err_stats_t eo = err_compare(O, Oref, nq, tc);
        err_stats_t el = err_compare(L, Lref, nl, tc);
        bool ok = err_pass(&eo, tc) && err_pass(&el, tc) &&
                  (double)hbm_total(&m) == online_attn_traffic(p);
        if (v == 0) {   /* against phase 1: its 2x rule, and its own output */
            attn_verdict_t av = attn_validate_fp16(&in, O, L, rows);   /* every row: the bound of ep below */
            err_stats_t ep = err_compare(O, Ond, nq, av.tol);
            ok = ok && av.pass && err_pass(&ep, av.tol);
            if (!r->quiet)
                printf("1-pass attention, %s: vs oracle rel L2 %.2e (O), %.2e (L); vs phase 1 "
                       "rel L2 %.2e, max abs %.2e (bound %.2e); HBM bytes %llu = formula %.0f\n",
                       desc, eo.rel_l2, el.rel_l2, ep.rel_l2, ep.max_abs, av.tol.max_abs,
                       (unsigned long long)hbm_total(&m), online_attn_traffic(p));
        }
        if (!err_pass(&eo, tc) && !r->quiet) {
            char buf[160];
            err_first_bad_str(&eo, p->d, "O", buf, sizeof buf);
            printf("  %s: first bad %s\n", name, buf);
        }
        add_row(r, name, "cpu", rows, p->N_kv, 0, (double)hbm_total(&m), ms, 0, 0, 0, eo.rel_l2,
                ok ? "PASS" : "FAIL");
        check_hint_exercises(ok, v == 0 ? "p2.ml_update, p2.o_update" : "p2.merge, p2.ml_update, p2.o_update");
    }
    attn_inputs_free(&in);
    free(O); free(L); free(On); free(Ln); free(Oref); free(Lref); free(Ond);
}

#if HAVE_CUDA
typedef void (*gpu_sm_fn)(const float *, float *, int, int);
typedef struct { gpu_sm_fn fn; const float *x; float *y; int rows, n; } sm_ctx_t;
static void sm_call(void *c) { sm_ctx_t *k = c; k->fn(k->x, k->y, k->rows, k->n); }

typedef struct { double ms, gbps, eff, rel; bool ok; } gpu_point_t;

/* One kernel on rows x n: poisoned output, check SAMPLE_ROWS rows against the CPU 3-pass
 * and the fp64 oracle (rel L2 < 1e-5 both), then time (median of iters, L2 flushed). GB/s counts the bytes the algorithm moves
 * (acc accesses per element); eff counts one read + one write per element. */
static gpu_point_t gpu_point(gpu_sm_fn fn, double acc, const float *dx, float *dy, int rows,
                             int n, uint64_t seed, int iters)
{
    gpu_point_t g = {0, 0, 0, 0, false};
    size_t total = (size_t)rows * n;
    gpu_poison_f32(dy, total);
    fn(dx, dy, rows, n);
    gpu_sync();
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y),
          *yg = malloc((size_t)n * sizeof *yg);
    double *ref = malloc((size_t)n * sizeof *ref), *xd = malloc((size_t)n * sizeof *xd),
           *w = malloc((size_t)n * sizeof *w);
    if (!x || !y || !yg || !ref || !xd || !w) { fprintf(stderr, "phase2: out of host memory\n"); exit(1); }
    err_stats_t e, eo;                         /* vs the CPU 3-pass; vs the fp64 oracle */
    err_init(&e); err_init(&eo);
    int ns = rows < SAMPLE_ROWS ? rows : SAMPLE_ROWS;
    for (int s = 0; s < ns; s++) {
        int row = ns == 1 ? 0 : (int)((long long)s * (rows - 1) / (ns - 1));
        for (int j = 0; j < n; j++) xd[j] = x[j] = softmax_input(seed, (uint64_t)row * n + j);
        hbm_meter_t m;
        REF(softmax_safe_cpu)(x, y, n, &m);
        for (int j = 0; j < n; j++) ref[j] = y[j];
        REF(oracle_softmax_row)(xd, n, w);
        gpu_download(yg, dy + (size_t)row * n, (size_t)n * sizeof *yg);
        err_accumulate(&e, yg, ref, (size_t)n, (size_t)row * n, tol_cpu());
        err_accumulate(&eo, yg, w, (size_t)n, (size_t)row * n, tol_cpu());
    }
    err_finish(&e); err_finish(&eo);
    free(x); free(y); free(yg); free(ref); free(xd); free(w);
    g.rel = e.rel_l2;
    g.ok = err_pass(&e, tol_cpu()) && err_pass(&eo, tol_cpu());
    if (!g.ok) {
        char bad[160];
        err_first_bad_str(err_pass(&e, tol_cpu()) ? &eo : &e, n, "y", bad, sizeof bad);
        printf("GPU softmax n=%d: rel L2 %.2e vs CPU 3-pass, %.2e vs fp64 oracle (%zu NaN): FAIL, first bad %s\n",
               n, e.rel_l2, eo.rel_l2, e.nan_count, bad);
    }
    if (!g.ok) return g;                       /* a kernel that fails is not timed */
    sm_ctx_t c = {fn, dx, dy, rows, n};
    g.ms = gpu_time_ms(sm_call, &c, 3, iters);
    g.gbps = acc * 4.0 * (double)total / (g.ms * 1e6);
    g.eff = 8.0 * (double)total / (g.ms * 1e6);
    return g;
}

static void gpu_rows(report_t *r, const cli_opts_t *o, const char *dir, const machine_info_t *mi,
                     int argc, char **argv)
{
    double copy = mi->copy_gbps;
    const int lens[] = {1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072};
    int npts = o->sweep ? 8 : 1;
    FILE *f = NULL;
    char path[OUT_PATH_MAX];
    if (o->sweep && dir) {
        path_join(path, dir, "phase2_sweep.csv");
        f = csv_open(path, "phase2", mi, argc, argv,
                     "n,rows,safe_ms,online_ms,safe_gbps,online_gbps,safe_eff_gbps,online_eff_gbps,copy_gbps,speedup");
        if (!f) { add_row(r, "sweep CSV phase2_sweep.csv", "gpu", 0, 0, 0, 0, 0, 0, 0, 0, 0, "FAIL"); return; }
    }
    size_t maxn = o->sweep ? 131072 : GPU_N, fr, tot;
    if (gpu_mem_info(&fr, &tot) == 0 && 2.2 * GPU_ROWS * maxn * 4 > (double)fr) {
        printf("GPU rows skipped: %.1f GiB of device memory needed, %.1f GiB free\n",
               2.2 * GPU_ROWS * maxn * 4 / (1u << 30), (double)fr / (1u << 30));
        if (f && csv_close(f, path, "phase2") != 0)
            add_row(r, "sweep CSV phase2_sweep.csv", "gpu", 0, 0, 0, 0, 0, 0, 0, 0, 0, "FAIL");
        return;
    }
    float *dx = gpu_malloc(GPU_ROWS * maxn * 4), *dy = gpu_malloc(GPU_ROWS * maxn * 4);
    for (int k = 0; k < npts; k++) {
        int n = o->sweep ? lens[k] : GPU_N;
        softmax_fill_gpu(dx, GPU_ROWS, n, o->seed);
        gpu_point_t s = {0, 0, 0, 0, false}, on = s;
        bool want_s = cli_kernel_selected(o, "safe"), want_o = cli_kernel_selected(o, "online");
        if (want_s) s = gpu_point(softmax_safe_gpu, 4, dx, dy, GPU_ROWS, n, o->seed, o->iters);
        if (want_o) on = gpu_point(softmax_online_gpu, 3, dx, dy, GPU_ROWS, n, o->seed, o->iters);
        double sp = s.ms > 0 && on.ms > 0 ? s.ms / on.ms : 0;
        if (o->sweep && !o->quiet)
            printf("  sweep n=%6d: safe %.3f ms %5.0f GB/s | online %.3f ms %5.0f GB/s | speedup %.2fx\n",
                   n, s.ms, s.gbps, on.ms, on.gbps, sp);
        if (f) fprintf(f, "%d,%d,%.5f,%.5f,%.1f,%.1f,%.1f,%.1f,%.1f,%.4f\n", n, GPU_ROWS, s.ms, on.ms,
                       s.gbps, on.gbps, s.eff, on.eff, copy, sp);
        if (n != GPU_N) continue;                  /* the table shows the headline size */
        if (want_s)
            add_row(r, "softmax safe (3-pass)", "gpu", GPU_ROWS, n, 4, 16.0 * GPU_ROWS * n, s.ms,
                    s.gbps, s.eff, copy, s.rel, s.ok ? "PASS" : "FAIL");
        if (want_o)
            add_row(r, "softmax online (2-pass)", "gpu", GPU_ROWS, n, 3, 12.0 * GPU_ROWS * n, on.ms,
                    on.gbps, on.eff, copy, on.rel, on.ok ? "PASS" : "FAIL");
        if (sp > 0 && !o->quiet)
            printf("GPU %d x %d fp32: online is %.2fx faster than safe (target >= 1.15x: %s); "
                   "online at %.0f GB/s = %.0f%% of the measured copy bandwidth %.0f GB/s "
                   "(target >= 70%%: %s)\n", GPU_ROWS, n, sp, sp >= 1.15 ? "met" : "NOT met",
                   on.gbps, 100 * on.gbps / copy, copy, on.gbps >= 0.7 * copy ? "met" : "NOT met");
    }
    if (f && csv_close(f, path, "phase2") != 0)
        add_row(r, "sweep CSV phase2_sweep.csv", "gpu", 0, 0, 0, 0, 0, 0, 0, 0, 0, "FAIL");
    gpu_free(dx); gpu_free(dy);
}
#endif

int main(int argc, char **argv)
{
    static const char *const SIBLINGS[] = {"phase2_overflow.csv", NULL};
    static const char *const SWEEP_SIBLINGS[] = {"phase2_sweep.csv", NULL};
    cli_spec_t spec = {
        .phase = "phase2",
        .summary = "online softmax: naive, 3-pass safe, 2-pass online, 1-pass attention; GPU row softmax",
        .kernels = KERNELS,
        .defaults = attn_problem(1, 2, 2, 256, 256, 64, false),
        .no_dump = true,   /* phase 2 writes no tensors */
        .sweep_takes = "B H Hkv N Nkv d causal seed kernel iters",   /* the run, then the sweep */
        .siblings = SIBLINGS,
        .sweep_siblings = SWEEP_SIBLINGS,   /* written when a GPU runs the sweep; probed with --sweep */
    };
    cli_opts_t o;
    cli_parse(argc, argv, &spec, &o);

    char why[256] = "";
    bool gpu = !o.cpu_only && gpu_available(why, sizeof why);
    if (o.cpu_only) snprintf(why, sizeof why, "--cpu given");
    machine_info_t mi;
    machine_info_cpu(&mi);
    if (gpu) { gpu_copy_bandwidth_gbps(); gpu_machine_info(&mi); }

    const char *csv_path = o.csv_path, *dir = o.csv_dir;   /* probed by cli_parse, the CSVs beside it too */

    report_t r;
    memset(&r, 0, sizeof r);
    r.quiet = o.quiet;
    const char *heads[] = {"variant", "where", ">rows x n", ">acc/elem", ">HBM bytes", ">ms",
                           ">GB/s", ">rel L2 err", "verdict"};
    table_init(&r.t, 9, heads);
    r.csv = csv_open(csv_path, "phase2", &mi, argc, argv,
                     "variant,where,rows,n,accesses_per_elem,bytes_model,time_ms,gbps_model,gbps_effective,copy_gbps,rel_l2,verdict");
    if (!r.csv) return CLI_EXIT_USAGE;   /* probed writable a moment ago; said why on stderr */

    unit_checks(&r);
    bool ex = online_streaming_example(o.quiet);
    add_row(&r, "streaming example [3, 1, 2]", "cpu", 1, 3, 0, 0, 0, 0, 0, 0, 0, ex ? "PASS" : "FAIL");
    check_hint_exercises(ex, "p2.ml_update, p2.o_update");
    cpu_softmaxes(&r, o.seed);
    overflow_rows(&r, o.seed, dir, &mi, argc, argv);
    /* the CPU rows run the problem itself up to 0.25 GFLOP (about 4 s here: the three
     * passes, the oracle and phase 1's pipeline), a smaller one like it above */
    attn_problem_t pc = attn_small_like(&o.p, 2.5e8);
    if (!o.quiet) attn_small_like_note("phase2", &o.p, &pc, 2.5e8);
    attention(&r, &pc, o.seed);
#if HAVE_CUDA
    if (gpu) gpu_rows(&r, &o, dir, &mi, argc, argv);
#endif
    if (!gpu) printf("GPU rows skipped: %s\n", why);

    printf("\n");
    table_print(&r.t, stdout);
    bool bad_csv = csv_close(r.csv, csv_path, "phase2") != 0;
    if (r.fails)
        printf("phase2: FAIL (%d of %d checks: %s)%s%s\n", r.fails, r.checks, r.failed,
               *check_hint_named() ? "; exercises behind it: " : "", check_hint_named());
    else
        printf("phase2: %s (%d checks; CSV %s%s)\n", bad_csv ? "FAIL" : "PASS", r.checks, csv_path,
               dir ? " and phase2_overflow.csv beside it" : "");
    return r.fails || bad_csv ? 1 : 0;
}
