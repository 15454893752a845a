/* main.c - phase 5 driver: the backward pass of attention (FlashAttention-2, Alg. 2).
 *
 *   build/phase5 [--B b --H h --Hkv h --N n --Nkv n --d d --causal --seed s]
 *                [--kernel cpu|std|simple|mma|mma2d|wgmma|wgmma-dq|wgmma-ws|wgmma-det|two-pass|noskip|fwd-bwd|all]
 *                [--iters k]
 *                [--sweep] [--csv file] [--cpu] [--quiet]
 *
 * Order (docs/design.md, "The driver contract"): parse; inputs with dO from the seed; the
 * forward's O and L from phase 4's CPU model (REF(fa2_cpu)); the CPU rows: the standard
 * backward (S, P, dP, dS stored in fp16 as the GPU baseline will, and in fp32) and FA2's
 * backward model (Alg. 2), each with dQ, dK, dV against the fp64 oracle (REF(oracle_bwd)),
 * its bytes against the chapter's formula, FA2's against the standard's; the table; the
 * CSV; the worked example (chapter 0's 4 x 2); one verdict line.
 * With a GPU, the GPU rows first run phase 4's forward (fa2-mma) for O and L on the device
 * (end to end, as training does), then each backward kernel: std (cuBLAS, S, P, dP, dS in
 * HBM: the previous kernel), simple, mma, mma2d (FA2's 2-D warp grids), wgmma (Hopper's
 * warpgroup MMA, sm_90a: skipped with the reason elsewhere), wgmma-dq (the same with FA3's
 * dQ path: a shared tile and bulk reductions), wgmma-ws (FA3's warp-specialised structure:
 * a TMA producer, a dQ writer warp, two MMA warpgroups), wgmma-det (the same, dQ added in a
 * fixed order: bit-identical reruns), two-pass, noskip,
 * each with poisoned outputs, its dQ, dK, dV against the fp64 oracle (all of them, or a
 * spread sample of dQ rows when the problem is too big for the CPU oracle) under the 2x
 * rule against std, and against std's on every element; timed only when it passed.
 * fwd-bwd times the training step.
 * --dump DIR: the inputs, O, L and the gradients of mma on the GPU (of the CPU FA2 model,
 * on its problem, without one) for tools/check_numpy.py --tol 3e-3 --gtol 1e-2.
 * --sweep: the models' bytes vs N (counted up to N = 512, the formulas beyond), the
 * training memory wall at B = 32, H = 8, and with a GPU the FA2 paper's setting.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bwd.h"
#include "bwd_rows.h"
#include "bwd_sweep.h"
#include "dump.h"
#include "fa2.h"
#include "driver.h"
#include "timer.h"

#define PHASE         "phase5"
#define CPU_MAX_FLOPS 2e8    /* the CPU rows run a smaller problem like it above (attn_small_like) */

static const char *const KERNELS[] = {"cpu", "std", "simple", "mma", "mma2d", "wgmma", "wgmma-dq", "wgmma-ws", "wgmma-det",
                                       "two-pass", "noskip", "fwd-bwd", NULL};
static const char *const CSV_COLS[] = {"kernel", "device", "sweep", "B", "H", "H_kv", "N_q", "N_kv",
    "d", "causal", "Br", "Bc", "time_ms", "tflops", "hbm_model", "hbm_formula", "hbm_std", "sp_bytes",
    "max_abs", "rel_l2", "rel_prev", "speedup", "verdict", NULL};
static const char *const TABLE_COLS[] = {"kernel", "device", "problem", "blocks", "sram", "time", "tflops",
    "hbm_model", "extra", "max_abs", "rel_l2", "vs_prev", "verdict", NULL};
static const cli_spec_t SPEC = { .phase = PHASE, .kernels = KERNELS,
    .summary = "attention backward: the standard pass (S, P, dP, dS in HBM) and FA2's Alg. 2 (K/V outer, Q inner), CPU models and GPU kernels",
    .defaults = { .B = 2, .H = 4, .H_kv = 4, .N_q = 512, .N_kv = 512, .d = 64 },
    .default_sweep_csv = "results/phase5/phase5_sweep.csv",
    .sweep_takes = "causal kernel iters seed",     /* --causal: the GPU part causal only */
    .takes_mask = true };                          /* FlashMask's masks: the CPU models (chapter 4c) */

/* dQ, dK, dV against the oracle's; the row records the largest max abs and rel L2. */
static void check3(drv_row_t *r, float *const g[3], double *const ref[3], const attn_problem_t *p,
                   tol_t tol, const char *const ex[3])
{
    static const char *const NAME[3] = {"dQ", "dK", "dV"};
    double ma = 0, rl = 0;
    for (int t = 0; t < 3; t++) {
        size_t n = t == 0 ? attn_q_elems(p) : attn_kv_elems(p);
        drv_compare(r, "vs the fp64 oracle_bwd", NAME[t], g[t], ref[t], n, p->d, tol, true, ex ? ex[t] : NULL);
        ma = fmax(ma, r->max_abs); rl = fmax(rl, r->rel_l2);
    }
    r->max_abs = ma; r->rel_l2 = rl;
}

typedef struct { float *g[3]; } grads_t;
static grads_t grads(const attn_problem_t *p)
{
    grads_t x;
    for (int t = 0; t < 3; t++) {
        size_t n = t == 0 ? attn_q_elems(p) : attn_kv_elems(p);
        x.g[t] = xmalloc(n * sizeof(float), PHASE);
        poison_f32(x.g[t], n);
    }
    return x;
}
static void grads_free(grads_t *x) { for (int t = 0; t < 3; t++) free(x->g[t]); }

/* ---- the CPU rows: std-bwd (fp16 S, P, dP, dS), std-bwd-fp32, fa2-bwd --------------- */
static int run_cpu(const attn_problem_t *pc, const cli_opts_t *o, const char *sweep, bool checks, drv_row_t *rows)
{
    attn_inputs_t in;
    drv_inputs(&in, pc, o->seed, true, PHASE);
    size_t nq = attn_q_elems(pc), nl = attn_l_elems(pc), nk = attn_kv_elems(pc);
    attn_blocks_t bl = bwd_blocks(pc->d);
    /* dQ sums over N_kv keys, dK and dV over N_q rows: the rel L2 bounds of long sums */
    const double n_sum = pc->N_q > pc->N_kv ? pc->N_q : pc->N_kv;
    /* the forward's O and L: phase 4's CPU model (the previous phase) */
    float *O = xmalloc(nq * sizeof(float), PHASE), *L = xmalloc(nl * sizeof(float), PHASE);
    attn_blocks_t b4 = { 64, 64 };
    REF(fa2_cpu)(&in, b4, O, L, NULL, NULL);
    double *ref[3] = { NULL, NULL, NULL };
    if (checks) {
        ref[0] = xmalloc(nq * sizeof(double), PHASE);
        ref[1] = xmalloc(nk * sizeof(double), PHASE);
        ref[2] = xmalloc(nk * sizeof(double), PHASE);
        REF(oracle_bwd)(pc, in.q, in.k, in.v, in.dO, ref[0], ref[1], ref[2]);
    }
    grads_t s32 = grads(pc), s16 = grads(pc), f = grads(pc);
    hbm_meter_t m;
    int n = 0;
    for (int e = 2; e <= 4; e += 2) {   /* the standard backward, fp16 then fp32 storage */
        drv_row_t r = drv_row(e == 2 ? "std-bwd" : "std-bwd-fp32", "cpu", sweep, pc);
        r.flops = attn_flops_bwd(pc);
        grads_t *x = e == 2 ? &s16 : &s32;
        hbm_reset(&m);
        double t0 = now_seconds();
        if (bwd_std_cpu(&in, L, e, x->g[0], x->g[1], x->g[2], &m) != 0) {
            drv_not_run(&r, "OOM", "S, P, dP, dS do not fit in host memory");
            rows[n++] = r;
            continue;
        }
        r.time_ms = (now_seconds() - t0) * 1e3;
        r.hbm_model = (double)hbm_total(&m);
        r.hbm_formula = r.hbm_std = bwd_std_bytes(pc, e);
        if (r.hbm_model != r.hbm_formula)
            drv_fail(&r, "counted %.0f HBM bytes, the formula says %.0f", r.hbm_model, r.hbm_formula);
        /* fp16 S, P, dP, dS: the baseline's own rounding, held to the fp16 rel L2 bound of the
         * forward kernels (and a max abs of 0.05, loose: it is the yardstick, not the target) */
        tol_t t16 = { tol_fp16_rel_l2(n_sum), 0.05, false };
        if (checks) check3(&r, x->g, ref, pc, e == 2 ? t16 : tol_cpu_keys(n_sum), NULL);
        rows[n++] = r;
    }
    drv_row_t r = drv_row("fa2-bwd", "cpu", sweep, pc);
    r.flops = attn_flops_bwd(pc);
    r.blocks = bl;
    /* the causal range first: it decides which tiles the model reads (checked against a scan
     * of the mask, so that a range outside [0, Tr] FAILs here, named, before the model runs) */
    char why[240];
    if (bwd_unit_causal_range(why, sizeof why) != 0 || bwd_check_causal_range(pc, bl, why, sizeof why) != 0) {
        drv_fail(&r, "%s", why);
        ex_unit("bwd.causal_range", false);
    }
    drv_blame(&r, "bwd.causal_range");
    hbm_reset(&m);
    const long faults0 = bwd_range_faults();
    double t0 = now_seconds();
    r.sram = (double)bwd_fa2(&in, bl, O, L, f.g[0], f.g[1], f.g[2], &m);
    if (bwd_range_faults() != faults0) {
        drv_fail(&r, "the causal range gave %ld K/V blocks a first Q block outside [0, Tr]", bwd_range_faults() - faults0);
        drv_blame(&r, "bwd.causal_range");
    }
    r.time_ms = (now_seconds() - t0) * 1e3;
    r.hbm_model = (double)hbm_total(&m);
    r.hbm_formula = REF(bwd_hbm_bytes)(pc, bl);
    r.hbm_std = bwd_std_bytes(pc, 2);
    if (r.hbm_model != r.hbm_formula)
        drv_fail(&r, "counted %.0f HBM bytes, the chapter's formula says %.0f", r.hbm_model, r.hbm_formula);
    if (r.sram != (double)bwd_sram_bytes(pc->d, bl))
        drv_fail(&r, "SRAM peak %.0f bytes, bwd_sram_bytes says %zu", r.sram, bwd_sram_bytes(pc->d, bl));
    if (checks) {
        check3(&r, f.g, ref, pc, tol_cpu_keys(n_sum), NULL);
        /* against each other: the standard model in fp32 (REF: its code is this file's) */
        grads_t sr = grads(pc);
        if (REF(bwd_std_cpu)(&in, L, 4, sr.g[0], sr.g[1], sr.g[2], NULL) == 0) {
            drv_compare_prev(&r, "the standard backward's dQ", f.g[0], sr.g[0], nq, tol_cpu_rel_l2(n_sum));
            drv_compare_prev(&r, "the standard backward's dK", f.g[1], sr.g[1], nk, tol_cpu_rel_l2(n_sum));
            drv_compare_prev(&r, "the standard backward's dV", f.g[2], sr.g[2], nk, tol_cpu_rel_l2(n_sum));
        }
        grads_free(&sr);
        bwd_blame_row(&r, &in, bl, O, L, ref, NULL);   /* the exercise behind a wrong gradient */
        bwd_check_hot(&r, pc->d, bl, o->seed);
        /* --dump without a GPU: this model's gradients (with a GPU, bwd_rows.c dumps mma's) */
        char why_gpu[8];
        if (o->dump_dir && (o->cpu_only || !gpu_available(why_gpu, sizeof why_gpu)) &&
            attn_dump(o->dump_dir, &in, O, L, f.g[0], f.g[1], f.g[2]) != 0)
            fprintf(stderr, "%s: could not write the dump to %s\n", PHASE, o->dump_dir);
    }
    rows[n++] = r;
    grads_free(&s32); grads_free(&s16); grads_free(&f);
    for (int t = 0; t < 3; t++) free(ref[t]);
    free(O); free(L);
    attn_inputs_free(&in);
    return n;
}

static void explain(const drv_row_t *rows, int n, size_t rerun)
{
    const drv_row_t *s = &rows[0], *f = &rows[2];
    const double x = s->hbm_model / f->hbm_model;   /* the bytes counted in this run */
    printf("standard backward: %.0f HBM bytes with fp16 S, P, dP, dS (%.0f in fp32); FA2's Alg. 2 "
           "(Br x Bc = %d x %d, SRAM %.0f bytes): %.0f (%.1fx %s), %s the formula of docs/05_backward.md\n",
           s->hbm_model, rows[1].hbm_model, f->blocks.Br, f->blocks.Bc, f->sram, f->hbm_model,
           x >= 1 ? x : 1 / x, x >= 1 ? "fewer" : "more", f->hbm_model == f->hbm_formula ? "equal to" : "NOT");
    for (int k = 0; k < n; k++)
        if (strcmp(rows[k].device, "gpu") == 0 && strcmp(rows[k].kernel, "mma") == 0 && drv_passed(&rows[k]))
            printf("mma adds dQ with atomics: a rerun changed %zu of the gradient elements (two-pass: none, "
                   "checked bit for bit)\n", rerun);
    printf("GPU rows: dQ, dK, dV vs the fp64 oracle (rel L2 < 1e-2, max abs <= 2x std's + 1e-4) and vs std "
           "(vs prev); extra mem: beyond Q, K, V, O, dO and the gradients (std: S, P, dP, dS; flash: D)\n");
}

int main(int argc, char **argv)
{
    cli_opts_t o;
    cli_parse(argc, argv, &SPEC, &o);
    /* FlashMask: mma and wgmma-ws have a mask path (bwd_mma.cu, bwd_wgmma_ws.cu); all runs those */
    if (attn_mask(&o.p) && strcmp(o.kernel, "all") != 0 && strcmp(o.kernel, "cpu") != 0 && !bwd_kernel_has_mask_path(o.kernel))
        cli_die(PHASE, "kernel %s has no mask path: with --mask use --kernel %s, or cpu (the CPU models)", o.kernel,
                BWD_MASK_KERNELS);
    drv_t D;
    drv_start(&D, PHASE, &o);
    drv_csv_open(&D, &o, argc, argv, CSV_COLS);
    if (o.sweep) return bwd_sweep(&D, &o, run_cpu);

    drv_banner(&D, &o, "attention backward, standard and FlashAttention-2 (Alg. 2: K/V outer, Q inner)");
    drv_row_t rows[16];
    attn_problem_t pc = attn_small_like(&o.p, CPU_MAX_FLOPS);
    if (!o.quiet) attn_small_like_note(PHASE, &o.p, &pc, CPU_MAX_FLOPS);
    int n = run_cpu(&pc, &o, "-", true, rows);
    /* the worked example: its own row, checked against the oracle and finite differences */
    drv_row_t w = drv_row("worked-4x2", "cpu", "-", &pc);
    w.p = attn_problem(1, 1, 1, 4, 4, 2, false);
    w.p.scale = 1.0f;
    int nchk = 0, wf = bwd_worked(o.quiet ? NULL : stdout, &nchk);
    if (wf) drv_fail(&w, "worked example: %d of %d checks failed", wf, nchk);
    if (wf) drv_blame(&w, bwd_worked_blame());
    rows[n++] = w;
    size_t rerun = 0;
    (void)rerun;
#if HAVE_CUDA
    if (D.gpu && attn_mask(&o.p) && strcmp(o.kernel, "cpu") != 0 && !o.quiet)   /* FlashMask: bwd_rows.c */
        printf("%s: --mask: the GPU rows are the kernels with a mask path (%s); std's yardstick is its fp16 "
               "passes emulated on the CPU (bwd_std.cu has no mask path)\n", PHASE, BWD_MASK_KERNELS);
    if (D.gpu) {
        attn_inputs_t in;
        drv_inputs(&in, &o.p, o.seed, true, PHASE);
        n += bwd_gpu_rows(&in, &o, "-", true, rows + n, &rerun);
        attn_inputs_free(&in);
    }
#endif
    if (!D.gpu) printf("%s: GPU rows skipped: %s\n", PHASE, D.why);
    drv_print_rows(&D, TABLE_COLS, rows, n);
    if (!o.quiet) explain(rows, n, rerun);
    return drv_finish(&D, rows, n, o.quiet);
}
