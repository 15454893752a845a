/* main.c - phase 3 driver: FlashAttention-1 (Alg. 1), KV-outer tiling.
 *
 *   build/phase3 [--B b --H h --Hkv h --N n --Nkv n --d d --causal --seed s --sram BYTES]
 *                [--kernel simple|mma|cublas|all] [--iters k] [--sweep] [--csv file]
 *                [--dump dir] [--cpu] [--quiet]
 *
 * Order (docs/design.md, "The driver contract"): parse (an unsupported kernel/d pair or
 * an M too small for one row exits 2); inputs from the seed; the CPU tile model with the
 * blocks of Alg. 1 l.1 for M = --sram (its bytes against the chapter's formula, its
 * output against the phase-0 oracle, phase 2's 1-pass attention and phase 1's
 * pipeline); each GPU kernel on poisoned outputs, checked against the oracle (2x rule),
 * phase 2's 1-pass attention and phase 1's cuBLAS pipeline (the previous phases), then
 * timed; the table; the CSV; one verdict line. `cublas` is phase 1's baseline.
 * --sweep: HBM bytes of the model vs M and vs N (the IO-complexity plots), then, with a
 * GPU, the FlashAttention-2 paper's setting (fp16, hidden 2048, B x N = 16k tokens,
 * d = 64 and 128, N = 512..16384), not causal (--sweep --causal: causal).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cost.h"
#include "driver.h"
#include "fa1.h"
#include "naive.h"
#include "online_softmax.h"
#include "oracle.h"
#include "sweep.h"
#include "timer.h"

#define PHASE         "phase3"
#define CPU_MAX_FLOPS 8e8           /* the CPU rows run a smaller problem like it above (~4 s) */
#define DEFAULT_M     (128 * 1024)  /* --sram default: 128 KiB, of the H100's 228 KiB per SM */
#define CHECK_ROWS    512           /* oracle rows checked per GPU run (all when fewer)  */
#define SWEEP_ROWS    96
#define SMALL_FLOPS   1.1e9         /* up to here phase 2's 1-pass CPU reference runs     */

/* mma skips, under the causal mask, the Q blocks that see none of a K/V block (the FA1
 * paper's block-sparse skip, Sec. 3.3); mma-plain is Alg. 1 as written, every block. */
static const char *const KERNELS[] = {"simple", "mma", "mma-plain", "cublas", NULL};
static const char *const CSV_COLS[] = {"kernel", "device", "sweep", "B", "H", "H_kv", "N_q", "N_kv",
    "d", "causal", "sram", "Br", "Bc", "time_ms", "tflops", "hbm_model", "hbm_formula", "hbm_std",
    "hbm_measured", "max_abs", "rel_l2", "rel_prev", "pipeline_max_abs", "verdict", NULL};
static const char *const TABLE_COLS[] = {"kernel", "device", "problem", "blocks", "sram", "time", "tflops",
    "hbm_model", "max_abs", "rel_l2", "vs_prev", "verdict", NULL};
static const cli_spec_t SPEC = {
    .phase = PHASE,
    .summary = "FlashAttention-1 (Alg. 1): K/V blocks outer, Q blocks inner, O/l/m through HBM",
    .kernels = KERNELS,
    .takes_sram = true,
    .defaults = { .B = 2, .H = 4, .H_kv = 4, .N_q = 512, .N_kv = 512, .d = 64 },   /* scale: 1/sqrt(d), set by cli_parse */
    .default_sweep_csv = "results/phase3/phase3_sweep.csv",
    .sweep_takes = "causal kernel iters seed",   /* --causal: the GPU part causal */
};

/* ---- the CPU tile model ------------------------------------------------------------ */
static drv_row_t run_cpu(const attn_problem_t *pc, size_t M, const cli_opts_t *o, const char *sweep, bool full_checks)
{
    drv_row_t r = drv_row("cpu-model", "cpu", sweep, pc);
    r.sram = (double)M;
    r.hbm_std = std_attn_traffic(pc, 2).total;
    attn_blocks_t want;   /* Alg. 1 l.1 as solved (in an exercise build: common/ref.h) */
    if (fa1_block_sizes(M, pc->d, &r.blocks) != 0 || REF(fa1_block_sizes)(M, pc->d, &want) != 0) {
        drv_fail(&r, "M too small");
        return r;
    }
    if (r.blocks.Br != want.Br || r.blocks.Bc != want.Bc)
        drv_fail(&r, "blocks Br x Bc = %d x %d, Alg. 1 l.1 gives %d x %d for M = %zu, d = %d",
                 r.blocks.Br, r.blocks.Bc, want.Br, want.Bc, M, pc->d);
    attn_inputs_t in;
    drv_inputs(&in, pc, o->seed, false, PHASE);
    size_t nq = attn_q_elems(pc), nl = attn_l_elems(pc);
    float *O = xmalloc(nq * sizeof(float), PHASE), *L = xmalloc(nl * sizeof(float), PHASE);
    float *l = xmalloc(nl * sizeof(float), PHASE), *m = xmalloc(nl * sizeof(float), PHASE);
    poison_f32(O, nq); poison_f32(l, nl); poison_f32(m, nl);
    hbm_meter_t meter;
    hbm_reset(&meter);
    double t0 = now_seconds();
    size_t peak = fa1_cpu(&in, r.blocks, M, O, l, m, &meter);
    r.time_ms = (now_seconds() - t0) * 1e3;
    fa1_lse(l, m, L, nl);
    r.hbm_model = (double)hbm_total(&meter);
    r.hbm_formula = fa1_hbm_bytes(pc, r.blocks.Bc);
    if (r.hbm_model != r.hbm_formula)
        drv_fail(&r, "counted %.0f HBM bytes, the chapter's formula says %.0f", r.hbm_model, r.hbm_formula);
    /* Alg. 1 l.1 picks the largest blocks M allows: tiles that leave most of M empty
     * mean more passes over Q and O than needed. */
    if (2 * peak < M) drv_fail(&r, "the blocks use %zu of %zu bytes of SRAM: Alg. 1 l.1 fills M", peak, M);
    drv_blame(&r, "fa1.blocks");
    if (full_checks) {
        /* L = m + log l is fa1.ml's alone, and oracle_check_cpu_row checks it first: a row
         * whose L passes and whose O fails names fa1.rescale */
        oracle_check_cpu_row(&r, &in, O, L, "fa1.rescale", "fa1.ml");
        /* the previous phases: phase 2's 1-pass attention (fp32: 1e-5, more over long
         * caches) and phase 1's pipeline (S, P, O rounded to fp16: 3e-3, more once P is
         * subnormal; both derived in check.h) */
        float *O2 = xmalloc(nq * sizeof(float), PHASE);
        hbm_meter_t m2;
        REF(online_attn_cpu)(&in, O2, l, &m2);
        drv_compare_prev(&r, "phase 2's 1-pass attention", O, O2, nq, tol_cpu_rel_l2(pc->N_kv));
        REF(naive_cpu)(&in, O2, NULL, &m2);
        drv_compare_prev(&r, "phase 1's pipeline", O, O2, nq, tol_fp16_rel_l2(pc->N_kv));
        drv_dump(o, &in, O, L, PHASE);
        free(O2);
    }
    free(O); free(l); free(m); free(L);
    attn_inputs_free(&in);
    return r;
}

#if HAVE_CUDA
/* ---- the GPU rows --------------------------------------------------------------------- */
typedef struct { attn_problem_t p; const drv_gpu_bufs_t *b; int k; naive_gpu_t naive; } launch_t;   /* k: KERNELS[k] */

static void launch_fa1(void *ctx)
{
    const launch_t *x = ctx;
    const drv_gpu_bufs_t *b = x->b;
    if (x->k == 0) fa1_simple_launch(&x->p, b->Q, b->K, b->V, b->O, b->l, b->m);
    else fa1_mma_launch(&x->p, x->k == 1 ? FA1_BLOCK_SKIP : FA1_PLAIN, b->Q, b->K, b->V, b->O, b->l, b->m);
}
static void launch_cublas(void *ctx) { REF_GPU(naive_gpu_forward)(&((const launch_t *)ctx)->naive); }

/* All selected GPU rows of one problem. Returns the number of rows added. */
static int run_gpu_rows(const attn_inputs_t *in, const cli_opts_t *o, const char *sweep, int check_rows, drv_row_t *rows)
{
    const attn_problem_t *p = &in->p;
    drv_gpu_bufs_t b = drv_gpu_alloc(in, DRV_SP_IF_ROOM);
    /* the previous phases on the same inputs, nearest first: phase 2's 1-pass attention on
     * the CPU (small problems), phase 1's cuBLAS pipeline (once it passed its own check) */
    float *o1 = NULL, *o2 = online_attn_reference(in, SMALL_FLOPS);
    int n = 0;
    launch_t x = { *p, &b, 0, { *p, NAIVE_CUBLAS, b.Q, b.K, b.V, b.S, b.P, b.Oh } };
    drv_prev_t prev[2] = { { o2, "phase 2's 1-pass attention" }, { NULL, "phase 1's cuBLAS pipeline" } };
    const bool sel_cublas = cli_kernel_selected(o, "cublas");
    drv_row_t rc = drv_row("cublas", "gpu", sweep, p);
    rc.hbm_model = rc.hbm_formula = rc.hbm_std = std_attn_traffic(p, 2).total;
    if (EX_BUILD_ON) drv_not_run(&rc, "n/a", "phase 1's kernel is not run in an exercise build (its code may be cut too)");
    else if (!b.S) drv_not_run(&rc, "OOM", "S and P do not fit");
    else {
        drv_gpu_run_t how = { launch_cublas, &x, DRV_OUT_F16_O, NULL, attn_check_fp16, check_rows, prev, 1,
                              2, o->iters, sel_cublas && !o->sweep, &o1, NULL };
        drv_gpu_run(&rc, in, &b, &how);
    }
    if (sel_cublas) rows[n++] = rc;
    prev[1].O = o1;
    for (int k = 0; k <= 2; k++) {
        /* the sweep times mma-plain only where it differs from mma: causal */
        if (!cli_kernel_selected(o, KERNELS[k]) || (k == 2 && o->sweep && !p->causal)) continue;
        drv_row_t r = drv_row(KERNELS[k], "gpu", sweep, p);
        gpu_kernel_config_t cfg;
        char why[200];
        int ok = (k ? fa1_mma_config : fa1_simple_config)(p->d, &cfg, why, sizeof why);
        if (ok != 0) drv_not_run(&r, ok < 0 ? "n/a" : "skipped", why);
        else {
            r.blocks = cfg.blocks; r.sram = (double)cfg.smem_bytes;
            r.hbm_model = r.hbm_formula = k == 1 ? fa1_hbm_bytes_skip(p, cfg.blocks) : fa1_hbm_bytes(p, cfg.blocks.Bc);
            r.hbm_std = std_attn_traffic(p, 2).total;
            int iters = k == 0 && o->sweep && o->iters > 3 ? 3 : o->iters;   /* simple is slow at 16k tokens */
            launch_t xk = x;
            xk.k = k;
            drv_visits_t vis = { 0 };   /* mma's passes: the Q blocks each must visit (simple skips none) */
            if (k) fa1_visits_want(&vis, p, cfg.blocks, k == 1 ? FA1_BLOCK_SKIP : FA1_PLAIN);
            drv_gpu_run_t how = { launch_fa1, &xk, DRV_OUT_O_LM, fa1_lse, attn_check_fp16, check_rows, prev, 2,
                                  1, iters, !o->sweep, NULL, &vis };
            drv_gpu_run(&r, in, &b, &how);
            drv_visits_free(&vis);
            drv_blame(&r, k == 0 ? "fa1.ml_gpu, fa1.rescale_gpu" : "fa1.rowmax_mma, fa1.ml_mma, fa1.rescale_mma");
        }
        rows[n++] = r;
    }
    free(o1); free(o2);
    drv_gpu_free(&b);
    return n;
}
#endif

/* ---- --sweep: tables of points run by common/sweep.c ----------------------------------
 * IO complexity, counted by the model: bytes vs M (N = 1024) and vs N (M = 128 KiB), d = 64,
 * one head; the model runs up to N = 2048, the formula alone beyond. Then with a GPU the
 * FA2 paper's setting (d = 64 and 128, N = 512..16384; not causal, or causal with --causal). */
static int vsM_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows)
{
    const attn_problem_t p = sweep_cpu_problem(s, &pt->p);
    rows[0] = run_cpu(&p, (size_t)pt->arg, s->o, "vsM", false);
    return 1;
}

static void vsM_line(sweep_t *s, const sweep_point_t *pt, const drv_row_t *r, int n)
{
    (void)s; (void)n;
    printf("  sweep vsM  M=%7zu  Br x Bc = %3d x %3d  HBM %.0f bytes (standard attention %.0f)  %s\n",
           (size_t)pt->arg, r->blocks.Br, r->blocks.Bc, r->hbm_model, r->hbm_std, r->verdict);
}

static int vsN_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows)
{
    const attn_problem_t *p = &pt->p;
    if (p->N_q <= 2048) {
        const attn_problem_t pc = sweep_cpu_problem(s, p);
        rows[0] = run_cpu(&pc, DEFAULT_M, s->o, "vsN", false);
        return 1;
    }
    rows[0] = drv_row("formula", "cpu", "vsN", p);
    rows[0].sram = DEFAULT_M;
    rows[0].hbm_std = std_attn_traffic(p, 2).total;
    fa1_block_sizes(DEFAULT_M, p->d, &rows[0].blocks);
    rows[0].hbm_formula = fa1_hbm_bytes(p, rows[0].blocks.Bc);
    return 1;
}

static void vsN_line(sweep_t *s, const sweep_point_t *pt, const drv_row_t *r, int n)
{
    (void)s; (void)pt; (void)n;
    printf("  sweep vsN  N=%6d  HBM model %.0f formula %.0f  standard attention %.0f  %s\n", r->p.N_q,
           r->hbm_model, r->hbm_formula, r->hbm_std, r->verdict);
}

#if HAVE_CUDA
static int t16k_rows(sweep_t *s, const sweep_point_t *pt, const attn_inputs_t *in, drv_row_t *rows)
{
    (void)pt;
    return run_gpu_rows(in, s->o, "tokens16k", SWEEP_ROWS, rows);
}

static int t16k_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows)
{
    return sweep_inputs_point(s, pt, false, t16k_rows, NULL, NULL, rows);
}
#else
#define t16k_point NULL   /* no GPU part to run */
#endif

static int run_sweep(drv_t *D, const cli_opts_t *o)
{
    sweep_point_t m[7], n[7], gpu[2 * 6];
    int nm = 0, nn = 0;
    for (int M = 16 * 1024; M <= 1024 * 1024; M *= 2) {
        m[nm] = sweep_point(attn_problem(1, 1, 1, 1024, 1024, 64, false));
        m[nm++].arg = M;
    }
    for (int N = 256; N <= 16384; N *= 2) n[nn++] = sweep_point(attn_problem(1, 1, 1, N, N, 64, false));
    const int ng = sweep_tokens16k(gpu, 2 * 6, o->p.causal, o->p.causal, 64, 128);
    const sweep_part_t parts[] = {
        { .name = "vsM", .where = SWEEP_CPU, .points = m, .npoints = nm, .run = vsM_point, .line = vsM_line },
        { .name = "vsN", .where = SWEEP_CPU, .points = n, .npoints = nn, .run = vsN_point, .line = vsN_line },
        sweep_tokens16k_part(gpu, ng, t16k_point),
    };
    return sweep_run_parts(D, o, parts, sizeof parts / sizeof parts[0]);
}

int main(int argc, char **argv)
{
    cli_opts_t o;
    cli_parse(argc, argv, &SPEC, &o);
    const attn_problem_t *p = &o.p;
    size_t M = o.sram_bytes ? (size_t)o.sram_bytes : DEFAULT_M;
    if (M < fa1_min_sram(p->d))
        cli_die(PHASE, "--sram %zu cannot hold the tiles of one query row and one key at d=%d (%zu bytes)",
                M, p->d, fa1_min_sram(p->d));
    if (strncmp(o.kernel, "mma", 3) == 0 && !fa1_mma_supports(p->d))
        cli_die(PHASE, "kernel mma is built for d = 32, 64 and 128, not d = %d (use --kernel simple)", p->d);

    drv_t D;
    drv_start(&D, PHASE, &o);
    drv_csv_open(&D, &o, argc, argv, CSV_COLS);
    if (o.sweep) return run_sweep(&D, &o);

    drv_banner(&D, &o, "FlashAttention-1, KV-outer tiling, CPU model with M = %zu bytes", M);

    drv_row_t rows[8];
    int n = 0;
    attn_problem_t pc = attn_small_like(p, CPU_MAX_FLOPS);
    if (!o.quiet) attn_small_like_note(PHASE, p, &pc, CPU_MAX_FLOPS);
    rows[n++] = run_cpu(&pc, M, &o, "-", true);
#if HAVE_CUDA
    if (D.gpu) {
        attn_inputs_t in;
        drv_inputs(&in, p, o.seed, false, PHASE);
        n += run_gpu_rows(&in, &o, "-", CHECK_ROWS, rows + n);
        attn_inputs_free(&in);
    }
#endif
    if (!D.gpu) printf("%s: GPU rows skipped: %s\n", PHASE, D.why);

    drv_print_rows(&D, TABLE_COLS, rows, n);
    if (!o.quiet) {
        printf("CPU model: Tc = %d passes over Q and O; HBM %.0f bytes = the formula of docs/03_fa1.md; "
               "standard attention would move %.0f (%.2fx)\n", (pc.N_kv + rows[0].blocks.Bc - 1) / rows[0].blocks.Bc,
               rows[0].hbm_model, rows[0].hbm_std, rows[0].hbm_model / rows[0].hbm_std);
        printf("time: CPU one run; GPU median of %d runs after warm-up (CUDA events, L2 flushed); "
               "vs prev: rel L2 against phase 2's 1-pass attention (or phase 1's cuBLAS when the problem is big); "
               "M of a GPU kernel: its shared memory per block\n", o.iters);
    }
    return drv_finish(&D, rows, n, o.quiet);
}
