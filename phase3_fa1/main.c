/* main.c - phase 3 driver: FlashAttention-1 (Alg. 1), KV-outer tiling.
 *
 *   build/phase3 [--B b --H h --Hkv h --N n --Nkv n --d d --causal --seed s --sram BYTES]
 *                [--kernel simple|mma|cublas|all] [--iters k] [--sweep] [--csv file]
 *                [--dump dir] [--cpu] [--quiet]
 *
 * Order (DESIGN.md): parse (an unsupported kernel/d pair or an M too small for one row
 * exits 2); inputs from the seed; the CPU tile model with the blocks of Alg. 1 l.1 for M =
 * --sram (its bytes against the chapter's formula, its output against the phase-0 oracle
 * and against phase 2's 1-pass attention and phase 1's pipeline); each GPU kernel on
 * poisoned outputs, checked against the oracle (2x rule), phase 2's 1-pass attention and
 * phase 1's cuBLAS pipeline (the previous phases), then timed; the table; the CSV; one
 * verdict line. `cublas` is phase 1's baseline, timed on the same inputs.
 * --sweep: HBM bytes of the model vs M and vs N (the IO-complexity plots), then, with a
 * GPU, the FlashAttention-2 paper's setting (fp16, hidden 2048, B x N = 16k tokens,
 * d = 64 and 128, N = 512..16384), not causal (--sweep --causal: causal).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "cost.h"
#include "csv.h"
#include "dump.h"
#include "fa1.h"
#include "fp16.h"
#include "gpu.h"
#include "naive.h"
#include "online_softmax.h"
#include "oracle.h"
#include "table.h"
#include "timer.h"

#define PHASE       "phase3"
/* The CPU rows run the problem itself up to this many FLOPs, a smaller one like it above. */
#define CPU_MAX_FLOPS (2e9)
#define DEFAULT_M   (128 * 1024)  /* --sram default: 128 KiB, of the H100's 228 KiB per SM */
#define CHECK_ROWS  512           /* oracle rows checked per GPU run (all when fewer) */
#define SWEEP_ROWS  96
#define SMALL_FLOPS 1.1e9          /* up to here the full 1-pass CPU reference is run  */
#define CSV_COLUMNS "kernel,device,sweep,B,H,H_kv,N_q,N_kv,d,causal,sram,Br,Bc,time_ms,tflops," \
                    "hbm_model,hbm_formula,hbm_std,hbm_measured,max_abs,rel_l2,rel_prev,pipeline_max_abs,verdict"

static const char *const KERNELS[] = {"simple", "mma", "cublas", NULL};

typedef struct {
    const char *kernel, *device, *sweep;
    attn_problem_t p;
    size_t sram;
    attn_blocks_t blocks;
    double time_ms, hbm_model, hbm_formula;
    double max_abs, rel_l2, rel_prev, pipe;   /* NAN: not measured */
    const char *verdict;
    char why[200];
} row_t;

static row_t row_new(const char *kernel, const char *device, const char *sweep, const attn_problem_t *p)
{
    row_t r;
    memset(&r, 0, sizeof r);
    r.kernel = kernel; r.device = device; r.sweep = sweep; r.p = *p;
    r.time_ms = r.max_abs = r.rel_l2 = r.rel_prev = r.pipe = NAN;
    r.verdict = "PASS";
    return r;
}

static void fail(row_t *r, const char *fmt, const char *detail)
{
    if (strcmp(r->verdict, "FAIL") == 0) return;   /* keep the first reason */
    r->verdict = "FAIL";
    snprintf(r->why, sizeof r->why, fmt, detail);
}

static void csv_row(FILE *f, const row_t *r)
{
    if (!f) return;
    const attn_problem_t *p = &r->p;
    fprintf(f, "%s,%s,%s,%d,%d,%d,%d,%d,%d,%d,%zu,%d,%d,", r->kernel, r->device, r->sweep, p->B,
            p->H, p->H_kv, p->N_q, p->N_kv, p->d, p->causal ? 1 : 0, r->sram, r->blocks.Br, r->blocks.Bc);
    csv_num(f, "%.4f", r->time_ms);
    csv_num(f, "%.3f", isnan(r->time_ms) ? NAN : attn_flops_fwd(p) / (r->time_ms * 1e-3) / 1e12);
    csv_num(f, "%.0f", r->hbm_model);
    csv_num(f, "%.0f", r->hbm_formula);
    fprintf(f, "%.0f,,", std_attn_traffic(p, 2).total);
    csv_num(f, "%.3e", r->max_abs);
    csv_num(f, "%.3e", r->rel_l2);
    csv_num(f, "%.3e", r->rel_prev);
    csv_num(f, "%.3e", r->pipe);
    fprintf(f, "%s\n", r->verdict);
    fflush(f);
}

static void table_row(table_t *t, const row_t *r)
{
    char c[12][TABLE_CELL], b1[32];
    const attn_problem_t *p = &r->p;
    int timed = !isnan(r->time_ms);
    const char *cells[12] = {
        r->kernel, r->device,
        fmt_cell(c[2], "B%d H%d/%d %dx%d d%d%s", p->B, p->H, p->H_kv, p->N_q, p->N_kv, p->d, p->causal ? " causal" : ""),
        r->blocks.Br ? fmt_cell(c[3], "%dx%d", r->blocks.Br, r->blocks.Bc) : "-",
        r->sram ? fmt_cell(c[4], "%zu KiB", r->sram / 1024) : "-",
        timed ? fmt_cell(c[5], "%.3f", r->time_ms) : "-",
        timed ? fmt_cell(c[6], "%.3g", attn_flops_fwd(p) / (r->time_ms * 1e-3) / 1e12) : "-",
        fmt_cell(c[7], "%s", fmt_bytes(r->hbm_model, b1)),
        isnan(r->max_abs) ? "-" : fmt_cell(c[8], "%.2e", r->max_abs),
        isnan(r->rel_l2) ? "-" : fmt_cell(c[9], "%.2e", r->rel_l2),
        isnan(r->rel_prev) ? "-" : fmt_cell(c[10], "%.2e", r->rel_prev),
        r->verdict };
    table_add(t, cells);
}

static void table_start(table_t *t)
{
    static const char *const head[12] = {"kernel", "device", "problem", ">Br x Bc", ">M",
        ">time ms", ">TFLOP/s", ">HBM model", ">max abs", ">rel L2", ">vs prev", "verdict"};
    table_init(t, 12, head);
}

/* ---- the CPU tile model ------------------------------------------------------------ */
static row_t run_cpu(const attn_problem_t *pc, size_t M, const cli_opts_t *o, const char *sweep, bool full_checks)
{
    row_t r = row_new("cpu-model", "cpu", sweep, pc);
    r.sram = M;
    if (fa1_block_sizes(M, pc->d, &r.blocks) != 0) { fail(&r, "%s", "M too small"); return r; }
    attn_inputs_t in;
    if (attn_inputs_make(&in, pc, o->seed, false) != 0) { fprintf(stderr, PHASE ": out of host memory\n"); exit(1); }
    size_t nq = attn_q_elems(pc), nl = attn_l_elems(pc);
    float *O = xmalloc(nq * sizeof(float), PHASE);
    float *l = xmalloc(nl * sizeof(float), PHASE);
    float *m = xmalloc(nl * sizeof(float), PHASE);
    float *L = xmalloc(nl * sizeof(float), PHASE);
    poison_f32(O, nq); poison_f32(l, nl); poison_f32(m, nl);
    hbm_meter_t meter;
    hbm_reset(&meter);
    double t0 = now_seconds();
    size_t peak = fa1_cpu(&in, r.blocks, M, O, l, m, &meter);
    r.time_ms = (now_seconds() - t0) * 1e3;
    fa1_lse(l, m, L, nl);
    r.hbm_model = (double)hbm_total(&meter);
    r.hbm_formula = fa1_hbm_bytes(pc, r.blocks.Bc);
    char b1[32], b2[32];
    snprintf(b1, sizeof b1, "%.0f", r.hbm_model);
    if (r.hbm_model != r.hbm_formula) fail(&r, "counted %s HBM bytes, not the chapter's formula", b1);
    /* Alg. 1 l.1 picks the largest blocks M allows: tiles that leave most of M empty
     * mean more passes over Q and O than needed. */
    if (2 * peak < M) {
        snprintf(b2, sizeof b2, "%zu of %zu", peak, M);
        fail(&r, "the blocks use %s bytes of SRAM: Alg. 1 l.1 fills M", b2);
    }
    if (full_checks) {
        double *Oref = xmalloc(nq * sizeof(double), PHASE);
        double *Lref = xmalloc(nl * sizeof(double), PHASE);
        oracle_fwd(pc, in.q, in.k, in.v, Oref, Lref);
        err_stats_t e = err_compare(O, Oref, nq, tol_cpu()), eL = err_compare(L, Lref, nl, tol_cpu());
        r.max_abs = e.max_abs; r.rel_l2 = e.rel_l2;
        char where[160];
        if (!err_pass(&e, tol_cpu())) { err_first_bad_str(&e, pc->d, "O", where, sizeof where); fail(&r, "vs oracle: %s", where); }
        if (!err_pass(&eL, tol_cpu())) { err_first_bad_str(&eL, pc->N_q, "L", where, sizeof where); fail(&r, "vs oracle: %s", where); }
        /* the previous phases: phase 2's 1-pass attention (fp32, so the same 1e-5) and
         * phase 1's pipeline (S, P, O rounded to fp16: its own error, 3e-3) */
        float *O2 = xmalloc(nq * sizeof(float), PHASE), *L2 = xmalloc(nl * sizeof(float), PHASE);
        hbm_meter_t m2;
        hbm_reset(&m2);
        online_attn_cpu(&in, O2, L2, &m2);
        r.rel_prev = rel_l2_f32(O, O2, nq);
        if (!(r.rel_prev < TOL_CPU_REL_L2)) fail(&r, "%s", "differs from phase 2's 1-pass attention");
        naive_cpu(&in, O2, NULL, &m2);
        if (!(rel_l2_f32(O, O2, nq) < TOL_FP16_REL_L2)) fail(&r, "%s", "differs from phase 1's pipeline");
        if (o->dump_dir && attn_dump(o->dump_dir, &in, O, L, NULL, NULL, NULL) != 0)
            fprintf(stderr, PHASE ": could not write the dump to %s\n", o->dump_dir);
        free(O2); free(L2); free(Oref); free(Lref);
    }
    free(O); free(l); free(m); free(L);
    attn_inputs_free(&in);
    return r;
}

#if HAVE_CUDA
/* ---- the GPU rows --------------------------------------------------------------------- */
typedef struct { attn_problem_t p; const void *Q, *K, *V; float *O, *l, *m; int mma; } fa1_ctx_t;
static void fa1_fn(void *c)
{
    fa1_ctx_t *x = c;
    if (x->mma) fa1_mma_launch(&x->p, x->Q, x->K, x->V, x->O, x->l, x->m);
    else fa1_simple_launch(&x->p, x->Q, x->K, x->V, x->O, x->l, x->m);
}

typedef struct {
    void *Q, *K, *V;
    float *O, *l, *m;
    void *S, *P, *Oh;     /* phase 1's buffers, NULL when they do not fit */
} fa1_dev_t;

static fa1_dev_t dev_alloc(const attn_inputs_t *in)
{
    const attn_problem_t *p = &in->p;
    size_t nq = attn_q_elems(p), nkv = attn_kv_elems(p), nl = attn_l_elems(p);
    fa1_dev_t d;
    memset(&d, 0, sizeof d);
    d.Q = gpu_malloc(nq * 2); d.K = gpu_malloc(nkv * 2); d.V = gpu_malloc(nkv * 2);
    d.O = gpu_malloc(nq * 4); d.l = gpu_malloc(nl * 4); d.m = gpu_malloc(nl * 4);
    gpu_upload(d.Q, in->q_h, nq * 2);
    gpu_upload(d.K, in->k_h, nkv * 2);
    gpu_upload(d.V, in->v_h, nkv * 2);
    size_t free_b, total_b;
    gpu_mem_info(&free_b, &total_b);
    if (naive_sp_bytes(p) + nq * 2 + (1 << 30) < (double)free_b) {
        size_t ns = (size_t)p->B * p->H * p->N_q * p->N_kv;
        d.S = gpu_malloc(ns * 2); d.P = gpu_malloc(ns * 2); d.Oh = gpu_malloc(nq * 2);
    }
    return d;
}

static void dev_free(fa1_dev_t *d)
{
    gpu_free(d->Q); gpu_free(d->K); gpu_free(d->V); gpu_free(d->O); gpu_free(d->l); gpu_free(d->m);
    if (d->S) { gpu_free(d->S); gpu_free(d->P); gpu_free(d->Oh); }
}

/* References from the previous phases on the same inputs: phase 1's cuBLAS pipeline
 * (O in fp16, on the GPU) and, for problems small enough, phase 2's 1-pass attention on
 * the CPU. NULL where not available. */
typedef struct { float *o1, *o2; } prev_t;

static row_t run_cublas(const attn_inputs_t *in, fa1_dev_t *d, const char *sweep, int iters,
                        int check_rows, bool profile, prev_t *prev)
{
    const attn_problem_t *p = &in->p;
    row_t r = row_new("cublas", "gpu", sweep, p);
    r.hbm_model = r.hbm_formula = std_attn_traffic(p, 2).total;
    if (!d->S) { r.verdict = "OOM"; snprintf(r.why, sizeof r.why, "S and P do not fit"); return r; }
    size_t nq = attn_q_elems(p);
    naive_gpu_t g = { *p, NAIVE_CUBLAS, d->Q, d->K, d->V, d->S, d->P, d->Oh };
    gpu_poison_f16(d->Oh, nq);
    if (profile) gpu_profile_range(1);
    naive_gpu_forward(&g);
    if (profile) gpu_profile_range(0);
    uint16_t *Oh = xmalloc(nq * 2, PHASE);
    float *O = xmalloc(nq * sizeof(float), PHASE);
    gpu_download(Oh, d->Oh, nq * 2);
    f16_to_f32_array(O, Oh, nq);
    free(Oh);
    attn_verdict_t v = attn_validate_fp16(in, O, NULL, check_rows);
    r.max_abs = v.O.max_abs; r.rel_l2 = v.O.rel_l2; r.pipe = v.pipeline_max_abs;
    if (!v.pass) { char w[160]; err_first_bad_str(&v.O, p->d, "O", w, sizeof w); fail(&r, "vs oracle: %s", w); }
    if (prev->o2) r.rel_prev = rel_l2_f32(O, prev->o2, nq);
    if (v.pass) prev->o1 = O;   /* a reference for the FA1 kernels only once it passed itself */
    else free(O);
    if (v.pass) r.time_ms = gpu_time_ms(naive_gpu_forward_fn, &g, 2, iters);
    return r;
}

static row_t run_fa1(const attn_inputs_t *in, fa1_dev_t *d, int mma, const char *sweep, int iters,
                     int check_rows, bool profile, const prev_t *prev)
{
    const attn_problem_t *p = &in->p;
    row_t r = row_new(mma ? "mma" : "simple", "gpu", sweep, p);
    gpu_kernel_config_t cfg;
    char why[160];
    if ((mma ? fa1_mma_config : fa1_simple_config)(p->d, &cfg, why, sizeof why) != 0) {
        r.verdict = "n/a"; snprintf(r.why, sizeof r.why, "%s", why); return r;
    }
    r.blocks = cfg.blocks; r.sram = cfg.smem_bytes;
    r.hbm_model = r.hbm_formula = fa1_hbm_bytes(p, cfg.blocks.Bc);
    size_t nq = attn_q_elems(p), nl = attn_l_elems(p);
    gpu_poison_f32(d->O, nq); gpu_poison_f32(d->l, nl); gpu_poison_f32(d->m, nl);
    fa1_ctx_t ctx = { *p, d->Q, d->K, d->V, d->O, d->l, d->m, mma };
    if (profile) gpu_profile_range(1);
    fa1_fn(&ctx);
    if (profile) gpu_profile_range(0);
    gpu_sync();
    float *O = xmalloc(nq * sizeof(float), PHASE), *l = xmalloc(nl * sizeof(float), PHASE);
    float *m = xmalloc(nl * sizeof(float), PHASE), *L = xmalloc(nl * sizeof(float), PHASE);
    gpu_download(O, d->O, nq * 4); gpu_download(l, d->l, nl * 4); gpu_download(m, d->m, nl * 4);
    fa1_lse(l, m, L, nl);
    attn_verdict_t v = attn_validate_fp16(in, O, L, check_rows);
    r.max_abs = v.O.max_abs; r.rel_l2 = v.O.rel_l2; r.pipe = v.pipeline_max_abs;
    char w[160];
    if (!v.pass) {
        if (!err_pass(&v.O, v.tol)) err_first_bad_str(&v.O, p->d, "O", w, sizeof w);
        else err_first_bad_str(&v.L, p->N_q, "L (from l, m)", w, sizeof w);
        fail(&r, "vs oracle: %s", w);
    }
    /* the previous phases on every element: phase 2's 1-pass (when run), phase 1's cuBLAS */
    if (prev->o2) {
        r.rel_prev = rel_l2_f32(O, prev->o2, nq);
        if (!(r.rel_prev < TOL_FP16_REL_L2)) fail(&r, "%s", "differs from phase 2's 1-pass attention");
    }
    if (prev->o1) {
        double e1 = rel_l2_f32(O, prev->o1, nq);
        if (isnan(r.rel_prev)) r.rel_prev = e1;
        if (!(e1 < TOL_FP16_REL_L2)) fail(&r, "%s", "differs from phase 1's cuBLAS pipeline");
    }
    free(O); free(l); free(m); free(L);
    if (strcmp(r.verdict, "PASS") == 0) r.time_ms = gpu_time_ms(fa1_fn, &ctx, 1, iters);
    return r;
}

/* All selected GPU rows of one problem. Returns the number of rows added. */
static int run_gpu_rows(const attn_inputs_t *in, const cli_opts_t *o, const char *sweep, int iters,
                        int check_rows, row_t *rows)
{
    const attn_problem_t *p = &in->p;
    fa1_dev_t d = dev_alloc(in);
    prev_t prev = { NULL, NULL };
    int n = 0;
    if (attn_flops_fwd(p) <= SMALL_FLOPS) {
        prev.o2 = xmalloc(attn_q_elems(p) * sizeof(float), PHASE);
        float *L2 = xmalloc(attn_l_elems(p) * sizeof(float), PHASE);
        hbm_meter_t m2;
        hbm_reset(&m2);
        online_attn_cpu(in, prev.o2, L2, &m2);
        free(L2);
    }
    bool sel_cublas = cli_kernel_selected(o, "cublas");
    row_t rc = run_cublas(in, &d, sweep, iters, check_rows, sel_cublas && !o->sweep, &prev);
    if (sel_cublas) rows[n++] = rc;
    for (int mma = 0; mma <= 1; mma++) {
        if (!cli_kernel_selected(o, KERNELS[mma])) continue;
        int it = iters;
        if (!mma && o->sweep) it = iters < 3 ? iters : 3;   /* simple is slow at 16k tokens */
        rows[n++] = run_fa1(in, &d, mma, sweep, it, check_rows, !o->sweep, &prev);
    }
    free(prev.o1); free(prev.o2);
    dev_free(&d);
    return n;
}
#endif

static int report(const row_t *rows, int n)
{
    int fails = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].verdict, "FAIL") == 0) {
            fails++;
            printf("  FAIL %s (%s): %s\n", rows[i].kernel, rows[i].device, rows[i].why);
        } else if (strcmp(rows[i].verdict, "n/a") == 0 || strcmp(rows[i].verdict, "OOM") == 0)
            printf("  %s %s: %s\n", rows[i].kernel, rows[i].verdict, rows[i].why);
    printf("%s: %s (%d rows, %d failed)\n", PHASE, fails ? "FAIL" : "PASS", n, fails);
    return fails ? 1 : 0;
}

/* ---- --sweep ------------------------------------------------------------------------ */
static int run_sweep(const cli_opts_t *o, int gpu, const char *why, FILE *csv)
{
    int fails = 0;
    /* IO complexity, counted by the model: bytes vs M (N = 1024) and vs N (M = 128 KiB),
     * d = 64, one head. The model runs up to N = 2048; beyond, the formula alone. */
    for (size_t M = 16 * 1024; M <= 1024 * 1024; M *= 2) {
        attn_problem_t p = attn_problem(1, 1, 1, 1024, 1024, 64, false);
        row_t r = run_cpu(&p, M, o, "vsM", false);
        fails += strcmp(r.verdict, "PASS") != 0;
        csv_row(csv, &r);
        printf("  sweep vsM  M=%7zu  Br x Bc = %3d x %3d  HBM %.0f bytes (standard attention %.0f)  %s\n",
               M, r.blocks.Br, r.blocks.Bc, r.hbm_model, std_attn_traffic(&p, 2).total, r.verdict);
    }
    for (int N = 256; N <= 16384; N *= 2) {
        attn_problem_t p = attn_problem(1, 1, 1, N, N, 64, false);
        row_t r;
        if (N <= 2048) r = run_cpu(&p, DEFAULT_M, o, "vsN", false);
        else {
            r = row_new("formula", "cpu", "vsN", &p);
            r.sram = DEFAULT_M;
            fa1_block_sizes(DEFAULT_M, 64, &r.blocks);
            r.hbm_model = NAN;
            r.hbm_formula = fa1_hbm_bytes(&p, r.blocks.Bc);
        }
        fails += strcmp(r.verdict, "PASS") != 0;
        csv_row(csv, &r);
        printf("  sweep vsN  N=%6d  HBM model %.0f formula %.0f  standard attention %.0f  %s\n", N,
               r.hbm_model, r.hbm_formula, std_attn_traffic(&p, 2).total, r.verdict);
    }
    if (!gpu) {
        printf("%s: GPU sweep skipped: %s\n", PHASE, why);
    } else {
#if HAVE_CUDA
        /* FlashAttention-2's setting: hidden 2048 (H = 2048 / d), B x N = 16k tokens;
         * not causal, or causal with --causal */
        const int causal = o->p.causal;
        for (int d = 64; d <= 128; d *= 2)
            for (int N = 512; N <= 16384; N *= 2) {
                attn_problem_t p = attn_problem(16384 / N, 2048 / d, 2048 / d, N, N, d, causal);
                attn_inputs_t in;
                if (attn_inputs_make(&in, &p, o->seed, false) != 0) { fprintf(stderr, PHASE ": out of host memory\n"); exit(1); }
                row_t rows[3];
                int n = run_gpu_rows(&in, o, "tokens16k", o->iters, SWEEP_ROWS, rows);
                printf("  sweep tokens16k d=%3d %-6s N=%5d B=%2d H=%2d:", d, causal ? "causal" : "full", N, p.B, p.H);
                for (int k = 0; k < n; k++) {
                    fails += strcmp(rows[k].verdict, "FAIL") == 0;
                    csv_row(csv, &rows[k]);
                    if (isnan(rows[k].time_ms)) printf("  %s %s", rows[k].kernel, rows[k].verdict);
                    else printf("  %s %.3f ms %.1f TFLOP/s", rows[k].kernel, rows[k].time_ms,
                                attn_flops_fwd(&p) / (rows[k].time_ms * 1e-3) / 1e12);
                    if (strcmp(rows[k].verdict, "FAIL") == 0) printf(" FAIL (%s)", rows[k].why);
                }
                printf("\n");
                fflush(stdout);
                attn_inputs_free(&in);
            }
        naive_gpu_teardown();
#endif
    }
    printf("%s: sweep %s (%d failed points)\n", PHASE, fails ? "FAIL" : "PASS", fails);
    return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
    cli_spec_t spec = {
        .phase = PHASE,
        .summary = "FlashAttention-1 (Alg. 1): K/V blocks outer, Q blocks inner, O/l/m through HBM",
        .kernels = KERNELS,
        .takes_sram = true,
        .defaults = attn_problem(2, 4, 4, 512, 512, 64, false),
        .host_bytes = NULL,
    };
    cli_opts_t o;
    cli_parse(argc, argv, &spec, &o);
    const attn_problem_t *p = &o.p;
    size_t M = o.sram_bytes ? (size_t)o.sram_bytes : DEFAULT_M;

    /* Refusals, before any allocation */
    if (M < fa1_min_sram(p->d))
        cli_die(PHASE, "--sram %zu cannot hold the tiles of one query row and one key at d=%d (%zu bytes)",
                M, p->d, fa1_min_sram(p->d));
    if (strcmp(o.kernel, "mma") == 0 && !fa1_mma_supports(p->d))
        cli_die(PHASE, "kernel mma is built for d = 32, 64 and 128, not d = %d (use --kernel simple)", p->d);

    char why[256] = "";
    int gpu = 0;
    if (o.cpu_only) snprintf(why, sizeof why, "--cpu given");
    else gpu = gpu_available(why, sizeof why);

    machine_info_t mi;
    if (gpu) { gpu_copy_bandwidth_gbps(); gpu_machine_info(&mi); }
    else machine_info_cpu(&mi);
    const char *csv_path = o.csv_path ? o.csv_path
                         : o.sweep ? "results/phase3/phase3_sweep.csv" : "results/phase3/phase3.csv";
    FILE *csv = csv_open(csv_path, PHASE, &mi, argc, argv, CSV_COLUMNS);

    if (o.sweep) {
        int rc = run_sweep(&o, gpu, why, csv);
        if (csv) fclose(csv);
        return rc;
    }

    char desc[128];
    attn_problem_str(p, desc, sizeof desc);
    if (!o.quiet) printf("%s: FlashAttention-1, KV-outer tiling (%s), CPU model with M = %zu bytes\n", PHASE, desc, M);

    row_t rows[8];
    int n = 0;
    attn_problem_t pc = attn_small_like(p, CPU_MAX_FLOPS);
    rows[n++] = run_cpu(&pc, M, &o, "-", true);
#if HAVE_CUDA
    if (gpu) {
        attn_inputs_t in;
        if (attn_inputs_make(&in, p, o.seed, false) != 0) { fprintf(stderr, PHASE ": out of host memory\n"); return 1; }
        n += run_gpu_rows(&in, &o, "-", o.iters, CHECK_ROWS, rows + n);
        attn_inputs_free(&in);
        naive_gpu_teardown();
    }
#endif
    if (!gpu) printf("%s: GPU rows skipped: %s\n", PHASE, why);

    table_t t;
    table_start(&t);
    for (int i = 0; i < n; i++) { table_row(&t, &rows[i]); csv_row(csv, &rows[i]); }
    table_print(&t, stdout);
    if (!o.quiet) {
        double std = std_attn_traffic(&pc, 2).total;
        printf("CPU model: Tc = %d passes over Q and O; HBM %.0f bytes = the formula of docs/03_fa1.md; "
               "standard attention would move %.0f (%.2fx)\n", (pc.N_kv + rows[0].blocks.Bc - 1) / rows[0].blocks.Bc,
               rows[0].hbm_model, std, rows[0].hbm_model / std);
        printf("time: CPU one run; GPU median of %d runs after warm-up (CUDA events, L2 flushed); "
               "vs prev: rel L2 against phase 2's 1-pass attention (or phase 1's cuBLAS when the problem is big); "
               "M of a GPU kernel: its shared memory per block\n", o.iters);
    }
    if (csv) { fclose(csv); if (!o.quiet) printf("csv: %s\n", csv_path); }
    return report(rows, n);
}
