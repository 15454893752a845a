/* main.c - phase 4 driver: FlashAttention-2 forward (Q outer, K/V inner).
 *
 *   build/phase4 [--B b --H h --Hkv h --N n --Nkv n --d d --causal --seed s]
 *                [--kernel simple|mma|fa1-simple|fa1-mma|cublas|ladder|all] [--iters k]
 *                [--sweep] [--csv file] [--dump dir] [--cpu] [--quiet]
 *
 * Order (DESIGN.md): parse (an unsupported kernel/d pair exits 2); inputs from the seed;
 * the CPU tile model (its bytes against the chapter's formula, its O and L against the
 * phase-0 oracle, phase 3's FA1 model and phase 2's 1-pass attention; its non-matmul
 * count against the formula, printed beside FA1's); each GPU kernel on poisoned outputs,
 * checked against the oracle (2x rule, L within 1e-3), phase 3's fa1-mma (the previous
 * phase, on every element) and, on small problems, phase 2's 1-pass attention, then
 * timed; the ablation ladder (kernel all without --quiet, or --kernel ladder) on the FA2
 * paper's N = 4096 point; the table; the CSV; one verdict line.
 * --sweep: the model vs N, then with a GPU the FA2 paper's setting (fp16, hidden 2048,
 * B x N = 16k tokens, N = 512..16384, d = 64 and 128, causal and not).
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
#include "fa2.h"
#include "fp16.h"
#include "gpu.h"
#include "naive.h"
#include "online_softmax.h"
#include "oracle.h"
#include "table.h"
#include "timer.h"

#define PHASE       "phase4"
/* The CPU rows run the problem itself up to this many FLOPs, a smaller one like it above. */
#define CPU_MAX_FLOPS (2e9)
#define FA1_M       (128 * 1024)  /* phase 3's default SRAM for its CPU model */
#define CHECK_ROWS  512
#define SWEEP_ROWS  96
#define SMALL_FLOPS 1.1e9         /* up to here phase 2's 1-pass CPU reference is run */
#define SIMPLE_MAX_N 4096         /* the sweep times the simple kernels up to this N */
#define L_TOL       1e-3
#define CSV_COLUMNS "kernel,device,sweep,B,H,H_kv,N_q,N_kv,d,causal,Br,Bc,time_ms,tflops," \
                    "hbm_model,hbm_formula,hbm_measured,nonmatmul,max_abs,rel_l2,L_max_abs,rel_prev," \
                    "pipeline_max_abs,speedup,verdict"

static const char *const KERNELS[] = {"simple", "mma", "fa1-simple", "fa1-mma", "cublas", "ladder", NULL};

typedef struct {
    const char *kernel, *device, *sweep, *what;
    attn_problem_t p;
    int Br, Bc;
    double time_ms, hbm_model, hbm_formula, nonmatmul;
    double max_abs, rel_l2, L_abs, rel_prev, pipe, speedup;   /* NAN: not measured */
    const char *verdict;
    char why[200];
} row_t;

static row_t row_new(const char *kernel, const char *device, const char *sweep, const attn_problem_t *p)
{
    row_t r;
    memset(&r, 0, sizeof r);
    r.kernel = kernel; r.device = device; r.sweep = sweep; r.p = *p; r.what = "";
    r.time_ms = r.max_abs = r.rel_l2 = r.L_abs = r.rel_prev = r.pipe = r.speedup = NAN;
    r.hbm_model = r.hbm_formula = r.nonmatmul = NAN;
    r.verdict = "PASS";
    return r;
}

static void fail(row_t *r, const char *fmt, const char *detail)
{
    if (strcmp(r->verdict, "FAIL") == 0) return;   /* keep the first reason */
    r->verdict = "FAIL";
    snprintf(r->why, sizeof r->why, fmt, detail);
}

static double tflops(const row_t *r) { return isnan(r->time_ms) ? NAN : attn_flops_fwd(&r->p) / (r->time_ms * 1e-3) / 1e12; }

static void csv_row(FILE *f, const row_t *r)
{
    if (!f) return;
    const attn_problem_t *p = &r->p;
    fprintf(f, "%s,%s,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,", r->kernel, r->device, r->sweep, p->B, p->H,
            p->H_kv, p->N_q, p->N_kv, p->d, p->causal ? 1 : 0, r->Br, r->Bc);
    csv_num(f, "%.4f", r->time_ms);
    csv_num(f, "%.3f", tflops(r));
    csv_num(f, "%.0f", r->hbm_model);
    csv_num(f, "%.0f", r->hbm_formula);
    fputc(',', f);                      /* hbm_measured: tools/profile.sh */
    csv_num(f, "%.0f", r->nonmatmul);
    csv_num(f, "%.3e", r->max_abs);
    csv_num(f, "%.3e", r->rel_l2);
    csv_num(f, "%.3e", r->L_abs);
    csv_num(f, "%.3e", r->rel_prev);
    csv_num(f, "%.3e", r->pipe);
    csv_num(f, "%.3f", r->speedup);
    fprintf(f, "%s\n", r->verdict);
    fflush(f);
}

/* ---- the CPU tile model ------------------------------------------------------------ */
static row_t run_cpu(const attn_problem_t *pc, const cli_opts_t *o, const char *sweep, bool full_checks)
{
    row_t r = row_new("cpu-model", "cpu", sweep, pc);
    attn_blocks_t bl = fa2_mma_blocks(pc->d);
    r.Br = bl.Br; r.Bc = bl.Bc;
    attn_inputs_t in;
    if (attn_inputs_make(&in, pc, o->seed, false) != 0) { fprintf(stderr, PHASE ": out of host memory\n"); exit(1); }
    size_t nq = attn_q_elems(pc), nl = attn_l_elems(pc);
    float *O = xmalloc(nq * sizeof(float), PHASE), *L = xmalloc(nl * sizeof(float), PHASE);
    poison_f32(O, nq); poison_f32(L, nl);
    hbm_meter_t meter;
    hbm_reset(&meter);
    double t0 = now_seconds(), nm = 0;
    fa2_cpu(&in, bl, O, L, &meter, &nm);
    r.time_ms = (now_seconds() - t0) * 1e3;
    r.hbm_model = (double)hbm_total(&meter);
    r.hbm_formula = fa2_hbm_bytes(pc, bl);
    r.nonmatmul = nm;
    char b1[64];
    snprintf(b1, sizeof b1, "%.0f (formula %.0f)", r.hbm_model, r.hbm_formula);
    if (r.hbm_model != r.hbm_formula) fail(&r, "counted %s HBM bytes, not the chapter's formula", b1);
    snprintf(b1, sizeof b1, "%.0f (formula %.0f)", nm, fa2_nonmatmul_flops(pc, bl));
    if (nm != fa2_nonmatmul_flops(pc, bl)) fail(&r, "counted %s non-matmul FLOPs", b1);
    /* the causal range of this shape's Q blocks, whatever its mask: exactly the K/V blocks
     * that hold a visible entry (a brute-force scan of the mask) */
    attn_problem_t pm = *pc;
    pm.causal = true;
    const int Tr = (pc->N_q + bl.Br - 1) / bl.Br, Tc = (pc->N_kv + bl.Bc - 1) / bl.Bc;
    for (int i = 0; i < Tr; i++) {
        int want = 0;
        for (int j = 0; j < Tc; j++)
            for (int row = i * bl.Br; row < pc->N_q && row < (i + 1) * bl.Br; row++)
                if (attn_visible(&pm, row, j * bl.Bc)) { want = j + 1; break; }   /* its first key */
        if (fa2_kv_blocks(&pm, i, bl.Br, bl.Bc) != want) {
            snprintf(b1, sizeof b1, "%d visits %d K/V blocks, not %d", i, fa2_kv_blocks(&pm, i, bl.Br, bl.Bc), want);
            fail(&r, "causal range: Q block %s", b1);
            break;
        }
    }
    check_hint_exercises(strcmp(r.verdict, "PASS") == 0, "fa2.causal_range");
    if (full_checks) {
        double *Oref = xmalloc(nq * sizeof(double), PHASE);
        double *Lref = xmalloc(nl * sizeof(double), PHASE);
        oracle_fwd(pc, in.q, in.k, in.v, Oref, Lref);
        err_stats_t e = err_compare(O, Oref, nq, tol_cpu()), eL = err_compare(L, Lref, nl, tol_cpu());
        r.max_abs = e.max_abs; r.rel_l2 = e.rel_l2; r.L_abs = eL.max_abs;
        char where[160];
        if (!err_pass(&e, tol_cpu())) { err_first_bad_str(&e, pc->d, "O", where, sizeof where); fail(&r, "vs oracle: %s", where); }
        check_hint_exercises(err_pass(&e, tol_cpu()), "fa2.rescale, fa2.normalise");
        if (!err_pass(&eL, tol_cpu())) { err_first_bad_str(&eL, pc->N_q, "L", where, sizeof where); fail(&r, "vs oracle: %s", where); }
        check_hint_exercises(err_pass(&eL, tol_cpu()), "fa2.lse");
        /* the previous phases: phase 3's FA1 model, phase 2's 1-pass attention (fp32: 1e-5) */
        float *O2 = xmalloc(nq * sizeof(float), PHASE);
        float *l2 = xmalloc(nl * sizeof(float), PHASE);
        float *m2 = xmalloc(nl * sizeof(float), PHASE);
        attn_blocks_t b1b;
        if (fa1_block_sizes(FA1_M, pc->d, &b1b) == 0) {
            fa1_cpu(&in, b1b, FA1_M, O2, l2, m2, NULL);
            r.rel_prev = rel_l2_f32(O, O2, nq);
            if (!(r.rel_prev < TOL_CPU_REL_L2)) fail(&r, "%s", "differs from phase 3's FA1 model");
        }
        hbm_meter_t mm;
        hbm_reset(&mm);
        online_attn_cpu(&in, O2, l2, &mm);
        if (!(rel_l2_f32(O, O2, nq) < TOL_CPU_REL_L2)) fail(&r, "%s", "differs from phase 2's 1-pass attention");
        if (o->dump_dir && attn_dump(o->dump_dir, &in, O, L, NULL, NULL, NULL) != 0)
            fprintf(stderr, PHASE ": could not write the dump to %s\n", o->dump_dir);
        free(O2); free(l2); free(m2); free(Oref); free(Lref);
    }
    free(O); free(L);
    attn_inputs_free(&in);
    return r;
}

#if HAVE_CUDA
/* ---- the GPU rows --------------------------------------------------------------------- */
typedef enum { K_CUBLAS, K_FA1_SIMPLE, K_FA1_MMA, K_FA2_SIMPLE, K_FA2_MMA } kind_t;
static const char *const KIND_NAME[] = {"cublas", "fa1-simple", "fa1-mma", "simple", "mma"};

typedef struct {
    attn_problem_t p;
    kind_t kind;
    fa2_variant_t var;
    const void *Q, *K, *V;
    float *O, *L, *l, *m;
    naive_gpu_t naive;
} ctx_t;

static void run_fn(void *c)
{
    ctx_t *x = c;
    switch (x->kind) {
    case K_CUBLAS:     naive_gpu_forward(&x->naive); break;
    case K_FA1_SIMPLE: fa1_simple_launch(&x->p, x->Q, x->K, x->V, x->O, x->l, x->m); break;
    case K_FA1_MMA:    fa1_mma_launch(&x->p, x->Q, x->K, x->V, x->O, x->l, x->m); break;
    case K_FA2_SIMPLE: fa2_simple_launch(&x->p, x->Q, x->K, x->V, x->O, x->L); break;
    case K_FA2_MMA:    fa2_mma_launch(&x->p, x->var, x->Q, x->K, x->V, x->O, x->L); break;
    }
}

typedef struct {
    void *Q, *K, *V;
    float *O, *L, *l, *m;
    void *S, *P, *Oh;   /* phase 1's buffers, NULL when they do not fit */
} fa2_dev_t;

static fa2_dev_t dev_alloc(const attn_inputs_t *in, bool want_cublas)
{
    const attn_problem_t *p = &in->p;
    size_t nq = attn_q_elems(p), nkv = attn_kv_elems(p), nl = attn_l_elems(p);
    fa2_dev_t d;
    memset(&d, 0, sizeof d);
    d.Q = gpu_malloc(nq * 2); d.K = gpu_malloc(nkv * 2); d.V = gpu_malloc(nkv * 2);
    d.O = gpu_malloc(nq * 4); d.L = gpu_malloc(nl * 4); d.l = gpu_malloc(nl * 4); d.m = gpu_malloc(nl * 4);
    gpu_upload(d.Q, in->q_h, nq * 2);
    gpu_upload(d.K, in->k_h, nkv * 2);
    gpu_upload(d.V, in->v_h, nkv * 2);
    size_t free_b, total_b;
    gpu_mem_info(&free_b, &total_b);
    if (want_cublas && naive_sp_bytes(p) + nq * 2 + (1 << 30) < (double)free_b) {
        size_t ns = (size_t)p->B * p->H * p->N_q * p->N_kv;
        d.S = gpu_malloc(ns * 2); d.P = gpu_malloc(ns * 2); d.Oh = gpu_malloc(nq * 2);
    }
    return d;
}

static void dev_free(fa2_dev_t *d)
{
    gpu_free(d->Q); gpu_free(d->K); gpu_free(d->V); gpu_free(d->O); gpu_free(d->L);
    gpu_free(d->l); gpu_free(d->m);
    if (d->S) { gpu_free(d->S); gpu_free(d->P); gpu_free(d->Oh); }
}

/* The previous phases' outputs on the same inputs: phase 2's 1-pass attention (CPU,
 * small problems) and phase 3's fa1-mma (or fa1-simple where mma has no build for d). */
typedef struct { float *o2, *o3; } prev_t;

/* Run one kernel once on poisoned outputs, check it, time it if it passed. O (host,
 * float) is returned through keep when keep != NULL and the check passed. */
static row_t run_kernel(const attn_inputs_t *in, fa2_dev_t *d, kind_t kind, fa2_variant_t var, const char *name,
                        const char *sweep, int iters, int check_rows, const prev_t *prev, float **keep,
                        bool profile)
{
    const attn_problem_t *p = &in->p;
    row_t r = row_new(name, "gpu", sweep, p);
    size_t nq = attn_q_elems(p), nl = attn_l_elems(p);
    char why[200];
    ctx_t c;
    memset(&c, 0, sizeof c);
    c.p = *p; c.kind = kind; c.var = var; c.Q = d->Q; c.K = d->K; c.V = d->V;
    c.O = d->O; c.L = d->L; c.l = d->l; c.m = d->m;
    if (kind == K_CUBLAS) {
        r.hbm_model = r.hbm_formula = std_attn_traffic(p, 2).total;
        if (!d->S) { r.verdict = "OOM"; snprintf(r.why, sizeof r.why, "S and P do not fit"); return r; }
        naive_gpu_t g = { *p, NAIVE_CUBLAS, d->Q, d->K, d->V, d->S, d->P, d->Oh };
        c.naive = g;
    } else if (kind == K_FA1_SIMPLE || kind == K_FA1_MMA) {
        gpu_kernel_config_t cfg;
        if ((kind == K_FA1_MMA ? fa1_mma_config : fa1_simple_config)(p->d, &cfg, why, sizeof why) != 0) {
            r.verdict = "n/a"; snprintf(r.why, sizeof r.why, "%s", why); return r;
        }
        r.Br = cfg.blocks.Br; r.Bc = cfg.blocks.Bc;
        r.hbm_model = r.hbm_formula = fa1_hbm_bytes(p, cfg.blocks.Bc);
        r.nonmatmul = fa1_nonmatmul_flops(p, cfg.blocks.Bc);
    } else {
        gpu_kernel_config_t cfg;
        if ((kind == K_FA2_MMA ? fa2_mma_config : fa2_simple_config)(p->d, &cfg, why, sizeof why) != 0) {
            r.verdict = "n/a"; snprintf(r.why, sizeof r.why, "%s", why); return r;
        }
        r.Br = cfg.blocks.Br; r.Bc = cfg.blocks.Bc;
        attn_blocks_t bl = cfg.blocks;
        /* without the causal skip every K/V block is read: the traffic of a full mask */
        attn_problem_t pf = *p;
        if (kind == K_FA2_MMA && var < FA2_FULL) pf.causal = false;
        r.hbm_model = r.hbm_formula = fa2_hbm_bytes(&pf, bl);
        r.nonmatmul = fa2_nonmatmul_flops(&pf, bl);
    }
    if (kind == K_CUBLAS) gpu_poison_f16(d->Oh, nq);
    else { gpu_poison_f32(d->O, nq); gpu_poison_f32(d->L, nl); gpu_poison_f32(d->l, nl); gpu_poison_f32(d->m, nl); }
    if (profile) gpu_profile_range(1);   /* one run bracketed for tools/profile.sh */
    run_fn(&c);
    if (profile) gpu_profile_range(0);
    gpu_sync();
    float *O = xmalloc(nq * sizeof(float), PHASE), *L = NULL;
    if (kind == K_CUBLAS) {
        uint16_t *Oh = xmalloc(nq * 2, PHASE);
        gpu_download(Oh, d->Oh, nq * 2);
        f16_to_f32_array(O, Oh, nq);
        free(Oh);
    } else {
        gpu_download(O, d->O, nq * 4);
        L = xmalloc(nl * sizeof(float), PHASE);
        if (kind == K_FA1_SIMPLE || kind == K_FA1_MMA) {
            float *l = xmalloc(nl * 4, PHASE), *m = xmalloc(nl * 4, PHASE);
            gpu_download(l, d->l, nl * 4); gpu_download(m, d->m, nl * 4);
            fa1_lse(l, m, L, nl);
            free(l); free(m);
        } else gpu_download(L, d->L, nl * 4);
    }
    attn_verdict_t v = attn_validate_fp16(in, O, L, check_rows);
    r.max_abs = v.O.max_abs; r.rel_l2 = v.O.rel_l2; r.pipe = v.pipeline_max_abs;
    if (L) r.L_abs = v.L.max_abs;
    char w[160];
    if (!v.pass) {
        if (!err_pass(&v.O, v.tol)) err_first_bad_str(&v.O, p->d, "O", w, sizeof w);
        else err_first_bad_str(&v.L, p->N_q, "L", w, sizeof w);
        fail(&r, "vs oracle: %s", w);
    }
    if (L && !(v.L.max_abs <= L_TOL)) fail(&r, "%s", "L more than 1e-3 from the oracle's log-sum-exp");
    /* the previous phases on every element */
    if (prev && prev->o2) {
        r.rel_prev = rel_l2_f32(O, prev->o2, nq);
        if (!(r.rel_prev < TOL_FP16_REL_L2)) fail(&r, "%s", "differs from phase 2's 1-pass attention");
    }
    if (prev && prev->o3) {
        double e3 = rel_l2_f32(O, prev->o3, nq);
        r.rel_prev = e3;
        if (!(e3 < TOL_FP16_REL_L2)) fail(&r, "%s", "differs from phase 3's FA1 kernel");
    }
    free(L);
    bool pass = strcmp(r.verdict, "PASS") == 0;
    if (keep && pass) *keep = O; else free(O);
    if (pass) r.time_ms = gpu_time_ms(run_fn, &c, 1, iters);
    return r;
}

/* All selected GPU rows of one problem. simple_ok: time the simple kernels too. */
static int run_gpu_rows(const attn_inputs_t *in, const cli_opts_t *o, const char *sweep, int iters,
                        int check_rows, bool simple_ok, row_t *rows)
{
    const attn_problem_t *p = &in->p;
    fa2_dev_t d = dev_alloc(in, cli_kernel_selected(o, "cublas"));
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
    const int its = o->sweep && iters > 2 ? 2 : iters;   /* the simple kernels take seconds at 16k tokens */
    if (cli_kernel_selected(o, "cublas"))
        rows[n++] = run_kernel(in, &d, K_CUBLAS, FA2_FULL, "cublas", sweep, iters, check_rows, NULL, NULL, true);
    if (cli_kernel_selected(o, "fa1-simple") && simple_ok)
        rows[n++] = run_kernel(in, &d, K_FA1_SIMPLE, FA2_FULL, "fa1-simple", sweep, its, check_rows, &prev, NULL, true);
    /* phase 3's fa1-mma is the previous phase: always run, a row when selected */
    kind_t k3 = fa1_mma_supports(p->d) ? K_FA1_MMA : K_FA1_SIMPLE;
    bool listed = k3 == K_FA1_SIMPLE && cli_kernel_selected(o, "fa1-simple") && simple_ok;   /* a row already */
    bool row3 = cli_kernel_selected(o, KIND_NAME[k3]) && !listed;
    row_t r3 = run_kernel(in, &d, k3, FA2_FULL, KIND_NAME[k3], sweep, row3 ? iters : 1, check_rows, &prev, &prev.o3, row3);
    if (row3) rows[n++] = r3;
    if (cli_kernel_selected(o, "simple") && simple_ok)
        rows[n++] = run_kernel(in, &d, K_FA2_SIMPLE, FA2_FULL, "simple", sweep, its, check_rows, &prev, NULL, true);
    if (cli_kernel_selected(o, "mma"))
        rows[n++] = run_kernel(in, &d, K_FA2_MMA, FA2_FULL, "mma", sweep, iters, check_rows, &prev, NULL, true);
    free(prev.o2); free(prev.o3);
    dev_free(&d);
    return n;
}

/* The ablation ladder at the FA2 paper's N = 4096 point (B = 4, H = 2048 / d), causal:
 * fa1-mma, then one change per row. */
static int run_ladder(const cli_opts_t *o, int d, row_t *rows)
{
    attn_problem_t p = attn_problem(4, 2048 / d, 2048 / d, 4096, 4096, d, true);
    attn_inputs_t in;
    if (attn_inputs_make(&in, &p, o->seed, false) != 0) { fprintf(stderr, PHASE ": out of host memory\n"); exit(1); }
    fa2_dev_t dv = dev_alloc(&in, false);
    static const struct { kind_t k; fa2_variant_t v; const char *name, *what; } L[] = {
        { K_FA1_MMA, FA2_FULL,     "fa1-mma",      "phase 3: K/V outer, O/l/m through HBM, split-K warps" },
        { K_FA2_MMA, FA2_PERSTEP,  "fa2-perstep",  "Q outer, split-Q warps, O in registers; O normalised every step" },
        { K_FA2_MMA, FA2_DEFERRED, "fa2-deferred", "+ O~ unnormalised, one divide at the end" },
        { K_FA2_MMA, FA2_FULL,     "fa2-mma",      "+ causal: skip masked K/V blocks, mask diagonal only" },
        { K_FA2_MMA, FA2_GRID_BH,  "fa2-grid-bh",  "grid (B*H, m-blocks) instead of (m-blocks, B*H)" },
    };
    int n = 0;
    for (int k = 0; k < 5; k++) {
        rows[n] = run_kernel(&in, &dv, L[k].k, L[k].v, L[k].name, "ladder", o->iters, SWEEP_ROWS, NULL, NULL, false);
        rows[n].device = "gpu-ladder";   /* not a --kernel name: tools/profile.sh leaves it */
        rows[n].what = L[k].what;
        /* the speedup this change alone bought: against the row above (grid-bh: against
         * fa2-mma, the same kernel in the other grid order) */
        if (k > 0) rows[n].speedup = rows[n - 1].time_ms / rows[n].time_ms;
        n++;
    }
    dev_free(&dv);
    attn_inputs_free(&in);
    return n;
}

static void print_ladder(const row_t *r, int n)
{
    static const char *const head[7] = {"step", "what changed", ">time ms", ">TFLOP/s", ">speedup", ">vs fa1-mma", "verdict"};
    table_t t;
    table_init(&t, 7, head);
    for (int i = 0; i < n; i++) {
        char c[7][TABLE_CELL];
        const char *cells[7] = { r[i].kernel, r[i].what,
            isnan(r[i].time_ms) ? "-" : fmt_cell(c[2], "%.3f", r[i].time_ms),
            isnan(r[i].time_ms) ? "-" : fmt_cell(c[3], "%.1f", tflops(&r[i])),
            isnan(r[i].speedup) ? "-" : fmt_cell(c[4], "%.2fx", r[i].speedup),
            isnan(r[i].time_ms) ? "-" : fmt_cell(c[5], "%.2fx", r[0].time_ms / r[i].time_ms),
            r[i].verdict };
        table_add(&t, cells);
    }
    char desc[128];
    attn_problem_str(&r[0].p, desc, sizeof desc);
    printf("ablation ladder (%s; speedup: this row's change alone, grid-bh against fa2-mma):\n", desc);
    table_print(&t, stdout);
}
#endif

static void table_row(table_t *t, const row_t *r)
{
    char c[12][TABLE_CELL], b1[32];
    const attn_problem_t *p = &r->p;
    const char *cells[12] = {
        r->kernel, r->device,
        fmt_cell(c[2], "B%d H%d/%d %dx%d d%d%s", p->B, p->H, p->H_kv, p->N_q, p->N_kv, p->d, p->causal ? " causal" : ""),
        r->Br ? fmt_cell(c[3], "%dx%d", r->Br, r->Bc) : "-",
        isnan(r->time_ms) ? "-" : fmt_cell(c[4], "%.3f", r->time_ms),
        isnan(r->time_ms) ? "-" : fmt_cell(c[5], "%.3g", tflops(r)),
        isnan(r->hbm_model) ? "-" : fmt_cell(c[6], "%s", fmt_bytes(r->hbm_model, b1)),
        isnan(r->max_abs) ? "-" : fmt_cell(c[7], "%.2e", r->max_abs),
        isnan(r->rel_l2) ? "-" : fmt_cell(c[8], "%.2e", r->rel_l2),
        isnan(r->L_abs) ? "-" : fmt_cell(c[9], "%.1e", r->L_abs),
        isnan(r->rel_prev) ? "-" : fmt_cell(c[10], "%.2e", r->rel_prev),
        r->verdict };
    table_add(t, cells);
}

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
    /* the model vs N (d = 64, one head, causal and not): bytes and non-matmul counts of
     * FA2 (counted up to N = 1024, the formula beyond) beside FA1's formula */
    for (int c = 0; c <= 1; c++)
        for (int N = 256; N <= 16384; N *= 2) {
            attn_problem_t p = attn_problem(1, 1, 1, N, N, 64, c);
            attn_blocks_t bl = fa2_mma_blocks(64);
            attn_blocks_t b1;
            fa1_block_sizes(FA1_M, 64, &b1);
            row_t r;
            if (N <= 1024) r = run_cpu(&p, o, "vsN", false);
            else {
                r = row_new("formula", "cpu", "vsN", &p);
                r.Br = bl.Br; r.Bc = bl.Bc;
                r.hbm_formula = fa2_hbm_bytes(&p, bl);
                r.nonmatmul = fa2_nonmatmul_flops(&p, bl);
            }
            row_t r1 = row_new("fa1-formula", "cpu", "vsN", &p);
            r1.Br = b1.Br; r1.Bc = b1.Bc;
            r1.hbm_formula = fa1_hbm_bytes(&p, b1.Bc);
            r1.nonmatmul = fa1_nonmatmul_flops(&p, b1.Bc);
            fails += strcmp(r.verdict, "PASS") != 0;
            csv_row(csv, &r);
            csv_row(csv, &r1);
            printf("  sweep vsN %-6s N=%6d  HBM fa2 %.0f (fa1 %.0f, %.1fx)  non-matmul fa2 %.3g (fa1 %.3g, %.2fx)  %s\n",
                   c ? "causal" : "full", N, r.hbm_formula, r1.hbm_formula, r1.hbm_formula / r.hbm_formula,
                   r.nonmatmul, r1.nonmatmul, r1.nonmatmul / r.nonmatmul, r.verdict);
        }
    if (!gpu) {
        printf("%s: GPU sweep skipped: %s\n", PHASE, why);
    } else {
#if HAVE_CUDA
        for (int c = 0; c <= 1; c++)
            for (int d = 64; d <= 128; d *= 2)
                for (int N = 512; N <= 16384; N *= 2) {
                    attn_problem_t p = attn_problem(16384 / N, 2048 / d, 2048 / d, N, N, d, c);
                    attn_inputs_t in;
                    if (attn_inputs_make(&in, &p, o->seed, false) != 0) { fprintf(stderr, PHASE ": out of host memory\n"); exit(1); }
                    row_t rows[6];
                    int n = run_gpu_rows(&in, o, "tokens16k", o->iters, SWEEP_ROWS, N <= SIMPLE_MAX_N, rows);
                    printf("  sweep tokens16k d=%3d %-6s N=%5d B=%2d H=%2d:", d, c ? "causal" : "full", N, p.B, p.H);
                    double t1 = NAN, t2 = NAN;
                    for (int k = 0; k < n; k++) {
                        fails += strcmp(rows[k].verdict, "FAIL") == 0;
                        if (strcmp(rows[k].kernel, "fa1-mma") == 0) t1 = rows[k].time_ms;
                        if (strcmp(rows[k].kernel, "mma") == 0) { t2 = rows[k].time_ms; rows[k].speedup = t1 / t2; }
                        csv_row(csv, &rows[k]);
                        if (isnan(rows[k].time_ms)) printf("  %s %s", rows[k].kernel, rows[k].verdict);
                        else printf("  %s %.1f", rows[k].kernel, tflops(&rows[k]));
                        if (strcmp(rows[k].verdict, "FAIL") == 0) printf(" FAIL (%s)", rows[k].why);
                    }
                    printf("  TFLOP/s; fa2-mma/fa1-mma %.2fx\n", t1 / t2);
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
        .summary = "FlashAttention-2 forward: Q blocks outer, K/V inner, O~ unnormalised, L written",
        .kernels = KERNELS,
        .takes_sram = false,
        .defaults = attn_problem(2, 4, 4, 512, 512, 64, false),
        .host_bytes = NULL,
    };
    cli_opts_t o;
    cli_parse(argc, argv, &spec, &o);
    const attn_problem_t *p = &o.p;
    if ((strcmp(o.kernel, "mma") == 0 || strcmp(o.kernel, "ladder") == 0) && !fa2_mma_supports(p->d))
        cli_die(PHASE, "kernel %s is built for d = 32, 64 and 128, not d = %d (use --kernel simple)", o.kernel, p->d);
    if (strcmp(o.kernel, "fa1-mma") == 0 && !fa1_mma_supports(p->d))
        cli_die(PHASE, "kernel fa1-mma is built for d = 32, 64 and 128, not d = %d", p->d);
    if (strcmp(o.kernel, "simple") == 0 && p->d % 32 != 0)
        cli_die(PHASE, "kernel simple needs d a multiple of 32, not d = %d", p->d);

    char why[256] = "";
    int gpu = 0;
    if (o.cpu_only) snprintf(why, sizeof why, "--cpu given");
    else gpu = gpu_available(why, sizeof why);

    machine_info_t mi;
    if (gpu) { gpu_copy_bandwidth_gbps(); gpu_machine_info(&mi); }
    else machine_info_cpu(&mi);
    const char *csv_path = o.csv_path ? o.csv_path
                         : o.sweep ? "results/phase4/phase4_sweep.csv" : "results/phase4/phase4.csv";
    FILE *csv = csv_open(csv_path, PHASE, &mi, argc, argv, CSV_COLUMNS);

    if (o.sweep) {
        int rc = run_sweep(&o, gpu, why, csv);
        if (csv) fclose(csv);
        return rc;
    }

    char desc[128];
    attn_problem_str(p, desc, sizeof desc);
    if (!o.quiet) printf("%s: FlashAttention-2 forward, Q outer / K-V inner (%s)\n", PHASE, desc);

    row_t rows[16];
    int n = 0;
    attn_problem_t pc = attn_small_like(p, CPU_MAX_FLOPS);
    rows[n++] = run_cpu(&pc, &o, "-", true);
#if HAVE_CUDA
    int nl = 0;
    row_t ladder[5];
    if (gpu) {
        attn_inputs_t in;
        if (attn_inputs_make(&in, p, o.seed, false) != 0) { fprintf(stderr, PHASE ": out of host memory\n"); return 1; }
        if (strcmp(o.kernel, "ladder") != 0)
            n += run_gpu_rows(&in, &o, "-", o.iters, CHECK_ROWS, true, rows + n);
        attn_inputs_free(&in);
        bool want = strcmp(o.kernel, "ladder") == 0 || (strcmp(o.kernel, "all") == 0 && !o.quiet);
        if (want && (p->d == 64 || p->d == 128)) nl = run_ladder(&o, p->d, ladder);
        naive_gpu_teardown();
    }
#endif
    if (!gpu) printf("%s: GPU rows skipped: %s\n", PHASE, why);

    table_t t;
    static const char *const head[12] = {"kernel", "device", "problem", ">Br x Bc", ">time ms", ">TFLOP/s",
        ">HBM model", ">max abs", ">rel L2", ">L abs", ">vs prev", "verdict"};
    table_init(&t, 12, head);
    for (int i = 0; i < n; i++) { table_row(&t, &rows[i]); csv_row(csv, &rows[i]); }
    table_print(&t, stdout);
#if HAVE_CUDA
    if (nl) {
        print_ladder(ladder, nl);
        for (int i = 0; i < nl; i++) { csv_row(csv, &ladder[i]); rows[n++] = ladder[i]; }
    }
#endif
    if (!o.quiet) {
        attn_blocks_t bl = fa2_mma_blocks(pc.d);
        attn_blocks_t b1;
        fa1_block_sizes(FA1_M, pc.d, &b1);
        char ds[128];
        attn_problem_str(&pc, ds, sizeof ds);
        printf("CPU model (%s, Br x Bc = %d x %d): HBM %.0f bytes = the formula of docs/04_fa2.md; "
               "FA1 (phase 3, M = 128 KiB, Bc = %d) would move %.0f (%.1fx)\n", ds, bl.Br, bl.Bc,
               rows[0].hbm_model, b1.Bc, fa1_hbm_bytes(&pc, b1.Bc), fa1_hbm_bytes(&pc, b1.Bc) / rows[0].hbm_model);
        printf("non-matmul FLOPs (exp, max, rescale, divide): FA2 %.0f counted (= formula), FA1 %.0f (%.2fx more); "
               "matmul FLOPs %.0f\n", rows[0].nonmatmul, fa1_nonmatmul_flops(&pc, b1.Bc),
               fa1_nonmatmul_flops(&pc, b1.Bc) / rows[0].nonmatmul, 4.0 * pc.B * pc.H * pc.N_q * pc.N_kv * pc.d);
        printf("time: CPU one run; GPU median of %d runs after warm-up (CUDA events, L2 flushed); "
               "vs prev: rel L2 against phase 3's FA1 (kernel fa1-mma; for the CPU model its CPU model)\n", o.iters);
    }
    if (csv) { fclose(csv); if (!o.quiet) printf("csv: %s\n", csv_path); }
    return report(rows, n);
}
