/* fa2_rows.c - phase 4's rows (main.c's table): the CPU tile model on one problem, and with
 * a GPU each selected kernel on the whole problem and the ablation ladder, each checked
 * (main.c's header lists the checks). The --sweep is fa2_sweep.c.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cost.h"
#include "fa1.h"
#include "fa3_fp8.h"
#include "fa2_rows.h"
#include "naive.h"
#include "online_softmax.h"
#include "oracle.h"
#include "timer.h"

#define PHASE       FA2_PHASE
#define SMALL_FLOPS 1.1e9         /* up to here phase 2's 1-pass CPU reference runs */

/* ---- the CPU tile model ------------------------------------------------------------ */
/* The unit checks of the CPU model's exercises (fa2.h), once a run: a failure fails the
 * row first and names its exercise alone; a pass clears it, so that the composite checks
 * after it (bytes, the oracle) name only the exercises the units did not clear. */
static void fa2_cpu_units(drv_row_t *r)
{
    static const struct { const char *ex; int (*fn)(char *, size_t); } U[] = {
        {"fa2.causal_range", fa2_unit_causal_range}, {"fa2.mask_element", fa2_unit_mask_element},
        {"fa2.mask_tile", fa2_unit_mask_tile}, {"fa2.rescale", fa2_unit_rescale},
        {"fa2.normalise", fa2_unit_normalise}, {"fa2.lse", fa2_unit_lse}};
    enum { NU = sizeof U / sizeof U[0] };
    static int rc[NU], done;
    static char why[NU][400], failed[NU * 24];   /* the failing units' exercises, ", "-separated */
    for (int u = 0; u < NU && !done; u++) {
        rc[u] = U[u].fn(why[u], sizeof why[u]);
        ex_unit(U[u].ex, rc[u] == 0);
        if (rc[u] == 0) continue;
        printf("unit check of %s: FAIL: %s\n", U[u].ex, why[u]);
        const size_t n = strlen(failed);
        snprintf(failed + n, sizeof failed - n, "%s%s", n ? ", " : "", U[u].ex);
    }
    done = 1;
    for (int u = 0; u < NU; u++)
        if (rc[u] != 0) drv_fail(r, "%s", why[u]);   /* the first failure's reason */
    if (failed[0]) drv_blame(r, failed);              /* every failing unit's exercise */
}

drv_row_t fa2_cpu_row(const attn_problem_t *pc, const cli_opts_t *o, const char *sweep, bool full_checks)
{
    drv_row_t r = drv_row("cpu-model", "cpu", sweep, pc);
    attn_blocks_t bl = fa2_mma_blocks(pc->d);
    r.blocks = bl;
    fa2_cpu_units(&r);
    attn_inputs_t in;
    drv_inputs(&in, pc, o->seed, false, PHASE);
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
    if (r.hbm_model != r.hbm_formula)
        drv_fail(&r, "counted %.0f HBM bytes, the chapter's formula says %.0f", r.hbm_model, r.hbm_formula);
    if (attn_mask(pc)) {   /* FlashMask: the tiles the model read, against the reference's tile classes */
        const double want = REF(fa2_hbm_bytes)(pc, bl);
        if (r.hbm_model != want)
            drv_fail(&r, "with the mask %s the model read %.0f HBM bytes; the tiles the reference classifies "
                     "as not fully masked (and its partial tiles' vectors) make %.0f", attn_mask(pc)->spec, r.hbm_model, want);
        drv_blame(&r, "fa2.mask_tile");
    }
    if (nm != fa2_nonmatmul_flops(pc, bl))
        drv_fail(&r, "counted %.0f non-matmul FLOPs, the formula says %.0f", nm, fa2_nonmatmul_flops(pc, bl));
    /* the causal range of this shape's Q blocks, whatever its mask */
    char why[160];
    if (fa2_check_causal_range(pc, bl, why, sizeof why) != 0) drv_fail(&r, "%s", why);
    drv_blame(&r, "fa2.causal_range");
    if (full_checks) {
        oracle_check_cpu_row(&r, &in, O, L, attn_mask(pc) ? "fa2.rescale, fa2.normalise, fa2.mask_element"
                                                           : "fa2.rescale, fa2.normalise", "fa2.lse");
        /* the previous phases: phase 3's FA1 model, phase 2's 1-pass attention (fp32: 1e-5,
         * more over long caches: tol_cpu_rel_l2, check.h) */
        float *O3 = xmalloc(nq * sizeof(float), PHASE), *lm3 = xmalloc(2 * nl * sizeof(float), PHASE);
        attn_blocks_t b1;
        if (REF(fa1_block_sizes)(FA2_FA1_M, pc->d, &b1) == 0) {
            REF(fa1_cpu)(&in, b1, FA2_FA1_M, O3, lm3, lm3 + nl, NULL);   /* O, l, m */
            drv_compare_prev(&r, "phase 3's FA1 model", O, O3, nq, tol_cpu_rel_l2(pc->N_kv));
        }
        float *O2 = online_attn_reference(&in, INFINITY);
        drv_compare_prev(&r, "phase 2's 1-pass attention", O, O2, nq, tol_cpu_rel_l2(pc->N_kv));
        drv_dump(o, &in, O, L, PHASE);
        free(O3); free(lm3); free(O2);
    }
    free(O); free(L);
    attn_inputs_free(&in);
    return r;
}

#if HAVE_CUDA
/* ---- the GPU rows --------------------------------------------------------------------- */
/* the kernels of this phase, then the Hopper ladder's rows (hopper/steps.h): its fp16 steps
 * (K_FA2_WGMMA_WGMMA .. K_FA2_WGMMA_STORE, in the table's order) and the FP8 rows */
#define FA2_KIND_ROW(ID, ...) K_FA2_WGMMA_##ID,
typedef enum { K_CUBLAS, K_FA1_SIMPLE, K_FA1_MMA, K_FA2_SIMPLE, K_FA2_MMA, K_FA1_PLAIN,
               FA2_HOPPER_STEPS(FA2_KIND_ROW) FA2_HOPPER_FP8_ROWS(FA2_KIND_ROW) K_COUNT } kind_t;
#undef FA2_KIND_ROW
#define K_HOPPER_FIRST K_FA2_WGMMA_WGMMA
#define K_HOPPER_LAST (K_HOPPER_FIRST + FA2_HOPPER_N_STEPS - 1)
#define K_FP8_FIRST K_FA2_WGMMA_FP8
#define K_FP8_LAST (K_FP8_FIRST + FA2_HOPPER_N_FP8_ROWS - 1)
#define FA2_KIND_NAME(ID, NAME, ...) NAME,
static const char *const KIND_NAME[K_COUNT] = {"cublas", "fa1-simple", "fa1-mma", "simple", "mma", "fa1-plain",
                                               FA2_HOPPER_STEPS(FA2_KIND_NAME) FA2_HOPPER_FP8_ROWS(FA2_KIND_NAME)};
#undef FA2_KIND_NAME
static bool is_hopper(kind_t k) { return k >= K_HOPPER_FIRST && k <= K_HOPPER_LAST; }
static bool is_fp8(kind_t k) { return k >= K_FP8_FIRST && k <= K_FP8_LAST; }
/* an FP8 row whose pre-pass runs in every launch (the table's QUANTISE column) */
static bool fp8_quantises(kind_t k)
{
    static const bool QUANTISE[] = {
#define FA2_FP8_QUANT(ID, NAME, PP, FMA, QUANT, WHAT) QUANT,
        FA2_HOPPER_FP8_ROWS(FA2_FP8_QUANT)
#undef FA2_FP8_QUANT
    };
    return is_fp8(k) && QUANTISE[k - K_FP8_FIRST];
}
typedef int (*config_fn)(int d, gpu_kernel_config_t *c, char *why, size_t len);
static const config_fn CONFIG[K_HOPPER_FIRST] = {NULL, REF_GPU(fa1_simple_config), REF_GPU(fa1_mma_config), fa2_simple_config,
                                                 fa2_mma_config, REF_GPU(fa1_mma_config)};
static int kind_config(kind_t k, int d, gpu_kernel_config_t *c, char *why, size_t len)
{
    if (is_hopper(k)) return fa2_hopper_config((fa2_hopper_step_t)(k - K_HOPPER_FIRST), d, c, why, len);
    if (is_fp8(k)) return fa2_hopper_fp8_config((fa2_hopper_fp8_row_t)(k - K_FP8_FIRST), d, c, why, len);
    return CONFIG[k](d, c, why, len);
}

typedef struct { attn_problem_t p; kind_t kind; fa2_variant_t var; const drv_gpu_bufs_t *b; naive_gpu_t naive;
                 bool quantised; /* wgmma-fp8: this row's inputs are in e4m3 already */ } launch_t;

static void launch(void *ctx)
{
    launch_t *x = ctx;
    const drv_gpu_bufs_t *b = x->b;
    switch (x->kind) {
    case K_CUBLAS:     REF_GPU(naive_gpu_forward)(&x->naive); break;
    case K_FA1_SIMPLE: REF_GPU(fa1_simple_launch)(&x->p, b->Q, b->K, b->V, b->O, b->l, b->m); break;
    case K_FA1_MMA:    REF_GPU(fa1_mma_launch)(&x->p, FA1_BLOCK_SKIP, b->Q, b->K, b->V, b->O, b->l, b->m); break;
    case K_FA1_PLAIN:  REF_GPU(fa1_mma_launch)(&x->p, FA1_PLAIN, b->Q, b->K, b->V, b->O, b->l, b->m); break;
    case K_FA2_SIMPLE: fa2_simple_launch(&x->p, b->Q, b->K, b->V, b->O, b->L); break;
    case K_FA2_MMA:    fa2_mma_launch(&x->p, x->var, b->Q, b->K, b->V, b->O, b->L); break;
    default:
        if (is_hopper(x->kind)) {
            fa2_hopper_launch((fa2_hopper_step_t)(x->kind - K_HOPPER_FIRST), &x->p, b->Q, b->K, b->V, b->O, b->L);
            break;
        }
        /* FP8: the pre-pass in the row's first (checked) launch only, so that the kernel is
         * timed alone; or, wgmma-fp8+q, in every launch: what fp16 inputs cost end to end */
        fa2_hopper_fp8_row_launch((fa2_hopper_fp8_row_t)(x->kind - K_FP8_FIRST), &x->p, b->Q, b->K, b->V, b->O, b->L,
                                  fp8_quantises(x->kind) || !x->quantised);
        x->quantised = true;
        break;
    }
}

/* wgmma-fp8's HBM bytes: FA2's reads at one byte an element (e4m3 Q, K, V^T), O and L as
 * FA2 writes them, the scales read (sq once a Q block, sk and sv once a K/V block visited);
 * with_prepass: the pre-pass's own (fp8_quant.h). */
static double fp8_hbm_bytes(const attn_problem_t *p, attn_blocks_t b, bool with_prepass)
{
    const fa2_traffic_t t = fa2_hbm_traffic(p, b);
    const int Tr = (p->N_q + b.Br - 1) / b.Br;
    double blocks = 0;
    for (int i = 0; i < Tr; i++) blocks += fa2_kv_blocks(p, i, b.Br, b.Bc);
    const double scales = (double)p->B * p->H * (4.0 * Tr + 8.0 * blocks);
    return t.read_q / 2 + t.read_kv / 2 + t.write_o + t.write_l + scales +
           (with_prepass ? fp8_quant_hbm_bytes_v8t(p, b.Br, b.Bc, true) : 0.0);
}

/* One kernel: its blocks and the model's bytes, then the checked-then-timed run. */
static drv_row_t run_kernel(const attn_inputs_t *in, const drv_gpu_bufs_t *b, kind_t kind, fa2_variant_t var,
                            const char *name, const char *sweep, int iters, int check_rows,
                            const drv_prev_t *prev, int nprev, float **keep, bool profile)
{
    const attn_problem_t *p = &in->p;
    drv_row_t r = drv_row(name, "gpu", sweep, p);
    launch_t x = { *p, kind, var, b, { *p, NAIVE_CUBLAS, b->Q, b->K, b->V, b->S, b->P, b->Oh }, false };
    drv_visits_t vis = { 0 };   /* the blocks each tile must visit: filled below (cuBLAS, fa1-simple skip none) */
    drv_gpu_run_t how = { launch, &x, DRV_OUT_O_L, fa1_lse, attn_check_fp16, check_rows, prev, nprev,
                          1, iters, profile, keep, &vis };
    if (!REF_GPU_ON && kind != K_FA2_SIMPLE && kind != K_FA2_MMA && kind < K_HOPPER_FIRST) {   /* the student's own: common/ref.h */
        drv_not_run(&r, "n/a", "an earlier phase's kernel is not run in an exercise build");
        return r;
    }
    if (kind == K_CUBLAS) {
        r.hbm_model = r.hbm_formula = std_attn_traffic(p, 2).total;
        if (!b->S) { drv_not_run(&r, "OOM", "S and P do not fit"); return r; }
        how.out = DRV_OUT_F16_O;
        how.warmup = 2;
    } else {
        gpu_kernel_config_t cfg;
        char why[200];
        int rc = kind_config(kind, p->d, &cfg, why, sizeof why);
        if (rc != 0) { drv_not_run(&r, rc < 0 ? "n/a" : "skipped", why); return r; }
        r.blocks = kind == K_FA2_MMA ? fa2_mma_variant_blocks(p->d, var) : cfg.blocks;
        if (kind == K_FA1_SIMPLE || kind == K_FA1_MMA || kind == K_FA1_PLAIN) {
            how.out = DRV_OUT_O_LM;
            r.hbm_model = r.hbm_formula = kind == K_FA1_MMA ? fa1_hbm_bytes_skip(p, cfg.blocks) : fa1_hbm_bytes(p, cfg.blocks.Bc);
            if (kind != K_FA1_MMA) r.nonmatmul = fa1_nonmatmul_flops(p, cfg.blocks.Bc);   /* every block */
        } else {
            /* FA2's bytes at the kernel's blocks (wgmma's too: the same loop order); without
             * the causal skip every K/V block is read: the traffic of a full mask */
            attn_problem_t pf = *p;
            if (kind == K_FA2_MMA && var == FA2_NOSKIP) pf.causal = false;
            r.hbm_model = r.hbm_formula = fa2_hbm_bytes(&pf, r.blocks);
            r.nonmatmul = fa2_nonmatmul_flops(&pf, r.blocks);
            if (is_fp8(kind)) {   /* FP8: its bytes, its own tolerance */
                r.hbm_model = r.hbm_formula = fp8_hbm_bytes(p, r.blocks, fp8_quantises(kind));
                how.check = fa2_check_fp8;
            }
        }
    }
    if (kind == K_FA1_MMA || kind == K_FA1_PLAIN) fa1_visits_want(&vis, p, r.blocks, kind == K_FA1_MMA ? FA1_BLOCK_SKIP : FA1_PLAIN);
    else if (kind != K_CUBLAS && kind != K_FA1_SIMPLE)
        fa2_visits_want(&vis, p, r.blocks, !(kind == K_FA2_MMA && var == FA2_NOSKIP), kind == K_FA2_SIMPLE ? "fa2.causal_range_gpu"
                        : kind == K_FA2_MMA && !attn_mask(p) ? "fa2.causal_range_mma" : NULL);
    drv_gpu_run(&r, in, b, &how);
    drv_visits_free(&vis);
    drv_blame(&r, kind == K_FA2_SIMPLE ? "fa2.causal_range_gpu, fa2.online_gpu, fa2.finish_gpu"
                : kind == K_FA2_MMA ? "fa2.causal_range_mma, fa2.rowmax_mma, fa2.online_mma, fa2.finish_mma" : NULL);
    return r;
}

/* A step of the Hopper ladder runs under --kernel wgmma (all nine) or its own name. */
static bool wgmma_step_selected(const cli_opts_t *o, kind_t k)
{
    return cli_kernel_selected(o, "wgmma") || cli_kernel_selected(o, KIND_NAME[k]);
}

/* A kernel's mask path (chapter 4c), checked (oracle, prev, visit counters against the mask's
 * census) and timed; with --mask causal also the same kernel on --causal's path (no mask),
 * whose O must equal it bit for bit (docs/04c_masks.md). keep: receives the masked O when
 * it passed (or NULL). */
static drv_row_t run_masked(const attn_inputs_t *in, const drv_gpu_bufs_t *b, kind_t kind, const char *sweep, int iters,
                            int check_rows, const drv_prev_t *prev, int nprev, bool row, float **keep)
{
    const attn_problem_t *p = &in->p;
    const bool causal = row && strcmp(attn_mask(p)->name, "causal") == 0;
    float *om = NULL, *oc = NULL;
    drv_row_t r = run_kernel(in, b, kind, FA2_FULL, KIND_NAME[kind], sweep, row ? iters : 1, check_rows, prev, nprev,
                             causal || keep ? &om : NULL, row);
    if (causal && om) {   /* the causal mask through the mask path == --causal's path, bit for bit */
        attn_inputs_t ic = *in;
        ic.p.mask_id = 0;
        ic.p.causal = true;
        run_kernel(&ic, b, kind, FA2_FULL, KIND_NAME[kind], sweep, 1, check_rows, NULL, 0, &oc, false);
        if (!oc || memcmp(om, oc, attn_q_elems(p) * sizeof(float)) != 0)
            drv_fail(&r, "--mask causal: O differs from the causal path's (--causal) in some bit");
    }
    free(oc);
    if (keep) *keep = om;
    else free(om);
    return r;
}

/* The masked problem's rows: fa2-mma's mask path (a row when --kernel mma or all), then
 * wgmma-ws's (Hopper; --kernel wgmma-ws or all) held to fa2-mma's masked O on every element,
 * as the unmasked Hopper ladder is. prev2: phase 2's 1-pass attention (small problems). */
static int masked_rows(const attn_inputs_t *in, const drv_gpu_bufs_t *b, const cli_opts_t *o, const char *sweep,
                       int check_rows, const drv_prev_t *prev2, drv_row_t *rows)
{
    const attn_problem_t *p = &in->p;
    const bool mma = cli_kernel_selected(o, "mma"), ws = cli_kernel_selected(o, KIND_NAME[K_FA2_WGMMA_WS]);
    const attn_blocks_t bm = fa2_mma_blocks(p->d);
    const char *mma_na = p->d > FA2_MASK_MAX_D ? "fa2-mma has no mask path at d = 256 (fa2.h)"
                       : (p->N_kv + bm.Bc - 1) / bm.Bc > FA2_MASK_MAX_TC ? "a mask over more than FA2_MASK_MAX_TC K/V blocks (fa2.h)"
                       : NULL;
    int n = 0;
    float *om = NULL;   /* fa2-mma's masked O: wgmma-ws is held to it */
    if (mma && mma_na) {
        rows[n] = drv_row("mma", "gpu", sweep, p);
        drv_not_run(&rows[n++], "n/a", mma_na);
    } else if (!mma_na && (mma || ws)) {
        drv_row_t r = run_masked(in, b, K_FA2_MMA, sweep, o->iters, check_rows, prev2, 1, mma, ws ? &om : NULL);
        if (mma) rows[n++] = r;
    }
    if (ws) {
        gpu_kernel_config_t c;
        char why[200];
        if (p->d > FA2_WS_MASK_MAX_D && kind_config(K_FA2_WGMMA_WS, p->d, &c, why, sizeof why) >= 0) {   /* fa2.h */
            rows[n] = drv_row(KIND_NAME[K_FA2_WGMMA_WS], "gpu", sweep, p);
            snprintf(why, sizeof why, "wgmma-ws has no mask path at d = %d (FA2_WS_MASK_MAX_D, fa2.h)", p->d);
            drv_not_run(&rows[n++], "n/a", why);
        } else if (kind_config(K_FA2_WGMMA_WS, p->d, &c, why, sizeof why) >= 0 &&   /* built for d (maybe not runnable here) */
            (p->N_kv + c.blocks.Bc - 1) / c.blocks.Bc > FA2_WS_MASK_MAX_TC) {   /* its class bytes (fa2.h) */
            rows[n] = drv_row(KIND_NAME[K_FA2_WGMMA_WS], "gpu", sweep, p);
            snprintf(why, sizeof why, "a mask over more than FA2_WS_MASK_MAX_TC = %d K/V blocks of %d keys (fa2.h)",
                     FA2_WS_MASK_MAX_TC, c.blocks.Bc);
            drv_not_run(&rows[n++], "n/a", why);
        } else {   /* (off Hopper, or at d = 256, run_kernel's row says skipped or n/a, with the reason) */
            const drv_prev_t prev4[2] = { { om, "phase 4's fa2-mma" }, *prev2 };
            rows[n++] = run_masked(in, b, K_FA2_WGMMA_WS, sweep, o->iters, check_rows, om ? prev4 : prev2, om ? 2 : 1,
                                   true, NULL);
        }
    }
    free(om);
    return n;
}

/* The FP8 rows (wgmma-fp8: the kernel timed alone; wgmma-fp8+q: with the pre-pass), run only
 * when --kernel names one (their inputs and tolerance are their own). Each is held to the
 * oracle at FP8's tolerance (fa2_check_fp8), to the CPU model fa3_fp8.c on the same inputs
 * (small problems: the same algorithm on the same e4m3 bytes, its sums as the H100's tensor
 * core forms them, fp16's rel L2 bound), and to fa2-mma's O (o4) at FP8's RMSE bound. */
static int fp8_rows(const attn_inputs_t *in, const drv_gpu_bufs_t *b, const cli_opts_t *o, const char *sweep,
                    int check_rows, const float *o4, drv_row_t *rows)
{
    const attn_problem_t *p = &in->p;
    const size_t nq = attn_q_elems(p);
    float *model = NULL;
    if (attn_flops_fwd(p) <= SMALL_FLOPS) {
        model = xmalloc(nq * sizeof(float), PHASE);
        if (fa3_fp8_cpu_tc(in, FA3_FP8_BLOCK_HADAMARD, FA2_WS_BR_FP8, FA2_WS_BR_FP8, FA2_FP8_SEED, FA2_FP8_ACC_BITS,
                           model) != 0) {
            free(model);
            model = NULL;
        }
    }
    const drv_prev_t pm[1] = { { model, "the CPU model fa3_fp8.c" } };
    int n = 0;
    for (kind_t k = K_FP8_FIRST; k <= K_FP8_LAST; k++) {
        if (strcmp(o->kernel, KIND_NAME[k]) != 0) continue;
        float *of = NULL;
        drv_row_t r = run_kernel(in, b, k, FA2_FULL, KIND_NAME[k], sweep, o->iters, check_rows, model ? pm : NULL,
                                 model ? 1 : 0, o4 ? &of : NULL, true);
        if (of && o4) {   /* against fa2-mma on every element, at FP8's bound */
            double sum = 0;
            for (size_t e = 0; e < nq; e++) sum += ((double)of[e] - o4[e]) * ((double)of[e] - o4[e]);
            const double rmse = sqrt(sum / (double)nq), tol = fa2_fp8_rmse_bound(in, check_rows);
            if (!(rmse <= tol)) drv_fail(&r, "differs from phase 4's fa2-mma: RMSE %.3e (FP8: <= %.3e, fa2.h)", rmse, tol);
        }
        free(of);
        rows[n++] = r;
    }
    free(model);
    return n;
}

/* All selected GPU rows of one problem. simple_ok: time the simple kernels too. */
int fa2_gpu_rows(const attn_inputs_t *in, const cli_opts_t *o, const char *sweep, int check_rows,
                        bool simple_ok, drv_row_t *rows)
{
    const attn_problem_t *p = &in->p;
    drv_gpu_bufs_t b = drv_gpu_alloc(in, cli_kernel_selected(o, "cublas") ? DRV_SP_IF_ROOM : DRV_SP_NONE);
    /* the previous phases, nearest first: phase 3's fa1-mma (filled in below), and phase 2's
     * 1-pass attention on the CPU for small problems */
    float *o3 = NULL, *o2 = online_attn_reference(in, SMALL_FLOPS);
    drv_prev_t prev[2] = { { NULL, "phase 3's FA1 kernel" }, { o2, "phase 2's 1-pass attention" } };
    const int its = o->sweep && o->iters > 2 ? 2 : o->iters;   /* the simple kernels take seconds at 16k tokens */
    int n = 0;
    if (attn_mask(p)) {   /* FlashMask: the kernels with a mask path, fa2-mma and wgmma-ws */
        n = masked_rows(in, &b, o, sweep, check_rows, prev + 1, rows);
        free(o2);
        drv_gpu_free(&b);
        return n;
    }
    if (cli_kernel_selected(o, "cublas"))
        rows[n++] = run_kernel(in, &b, K_CUBLAS, FA2_FULL, "cublas", sweep, o->iters, check_rows, NULL, 0, NULL, true);
    if (cli_kernel_selected(o, "fa1-simple") && simple_ok)
        rows[n++] = run_kernel(in, &b, K_FA1_SIMPLE, FA2_FULL, "fa1-simple", sweep, its, check_rows, prev + 1, 1, NULL, true);
    /* phase 3's fa1-mma is the previous phase: always run, a row when selected */
    gpu_kernel_config_t c3;
    char why[200];
    kind_t k3 = REF_GPU(fa1_mma_config)(p->d, &c3, why, sizeof why) == 0 ? K_FA1_MMA : K_FA1_SIMPLE;
    bool listed = k3 == K_FA1_SIMPLE && cli_kernel_selected(o, "fa1-simple") && simple_ok;   /* a row already */
    bool row3 = cli_kernel_selected(o, KIND_NAME[k3]) && !listed;
    drv_row_t r3 = run_kernel(in, &b, k3, FA2_FULL, KIND_NAME[k3], sweep, row3 ? o->iters : 1, check_rows,
                              prev + 1, 1, &o3, row3);
    if (row3) rows[n++] = r3;
    else if (k3 != K_FA1_MMA && cli_kernel_selected(o, "fa1-mma"))   /* its row says why it did not run */
        rows[n++] = run_kernel(in, &b, K_FA1_MMA, FA2_FULL, "fa1-mma", sweep, 1, check_rows, NULL, 0, NULL, false);
    prev[0].O = o3;
    if (cli_kernel_selected(o, "simple") && simple_ok)
        rows[n++] = run_kernel(in, &b, K_FA2_SIMPLE, FA2_FULL, "simple", sweep, its, check_rows, prev, 2, NULL, true);
    /* wgmma (Hopper) is held to fa2-mma's output on every element: fa2-mma runs first.
     * --kernel wgmma runs the Hopper ladder's nine steps, --kernel wgmma-tma (...) one of them;
     * on a GPU other than Hopper they are skipped rows, with the reason. Only the kernel
     * named by --kernel is inside the profiler's range (tools/profile.sh measures one). */
    bool want_wgmma = false, want_fp8 = false;
    for (kind_t k = K_HOPPER_FIRST; k <= K_HOPPER_LAST; k++) want_wgmma |= wgmma_step_selected(o, k);
    for (kind_t k = K_FP8_FIRST; k <= K_FP8_LAST; k++) want_fp8 |= strcmp(o->kernel, KIND_NAME[k]) == 0;
    want_wgmma |= want_fp8;
    float *o4 = NULL;
    if (cli_kernel_selected(o, "mma") || want_wgmma) {
        const bool row4 = cli_kernel_selected(o, "mma");
        drv_row_t r4 = run_kernel(in, &b, K_FA2_MMA, FA2_FULL, "mma", sweep, row4 ? o->iters : 1,
                                  check_rows, prev, 2, want_wgmma ? &o4 : NULL, row4);
        if (row4) rows[n++] = r4;
    }
    if (want_wgmma) {
        drv_prev_t prev4[2] = { { o4, "phase 4's fa2-mma" }, prev[0] };
        for (kind_t k = K_HOPPER_FIRST; k <= K_HOPPER_LAST; k++)   /* the Hopper ladder's steps */
            if (wgmma_step_selected(o, k))
                rows[n++] = run_kernel(in, &b, k, FA2_FULL, KIND_NAME[k], sweep, o->iters, check_rows,
                                       o4 ? prev4 : prev, o4 ? 2 : 1, NULL, cli_kernel_selected(o, KIND_NAME[k]));
    }
    if (want_fp8) n += fp8_rows(in, &b, o, sweep, check_rows, o4, rows + n);
    free(o2); free(o3); free(o4);
    drv_gpu_free(&b);
    assert(n <= FA2_GPU_ROWS_MAX);   /* the callers' arrays hold that many */
    return n;
}

/* The ablation ladder at the FA2 paper's N = 4096 point (B = 4, H = 2048 / d), causal:
 * fa1-mma, then one change per row. */
int fa2_ladder(const cli_opts_t *o, int d, drv_row_t *rows)
{
    attn_problem_t p = attn_problem(4, 2048 / d, 2048 / d, 4096, 4096, d, true);
    attn_inputs_t in;
    drv_inputs(&in, &p, o->seed, false, PHASE);
    drv_gpu_bufs_t b = drv_gpu_alloc(&in, DRV_SP_NONE);
    static const struct { kind_t k; fa2_variant_t v; const char *name, *what; } STEP[] = {
        { K_FA1_PLAIN, FA2_FULL,   "fa1-plain",    "phase 3, Alg. 1 as written: K/V outer, O/l/m through HBM, every block" },
        { K_FA1_MMA, FA2_FULL,     "fa1-mma",      "+ skip fully masked blocks (FA1's block-sparse skip, Sec. 3.3)" },
        { K_FA2_MMA, FA2_PERSTEP,  "fa2-perstep",  "Q outer, split-Q warps, O in registers; O normalised every step" },
        { K_FA2_MMA, FA2_DEFERRED, "fa2-deferred", "+ O~ unnormalised, one divide at the end" },
        { K_FA2_MMA, FA2_GRID_BH,  "fa2-grid-bh",  "grid (B*H, m-blocks) instead of (m-blocks, B*H)" },
        { K_FA2_MMA, FA2_NOSKIP,   "fa2-noskip",   "fa2-deferred without the skip: every K/V block, masked" },
        { K_FA2_MMA, FA2_FULL,     "fa2-mma",      "fa2-deferred at larger blocks, one K and one V buffer" },
    };
    const int n = sizeof STEP / sizeof STEP[0];
    _Static_assert(sizeof STEP / sizeof STEP[0] == FA2_LADDER_STEPS, "FA2_LADDER_STEPS: the ladder's rows");
    for (int k = 0; k < n; k++) {
        rows[k] = run_kernel(&in, &b, STEP[k].k, STEP[k].v, STEP[k].name, "ladder", o->iters, FA2_SWEEP_ROWS,
                             NULL, 0, NULL, false);
        rows[k].device = "gpu-ladder";   /* not a --kernel name: tools/profile.sh leaves it */
        rows[k].what = STEP[k].what;
        /* the speedup this change alone bought: against the row above (grid-bh, noskip and
         * mma: against fa2-deferred, the same kernel in the other grid order, without the
         * skip, at the table's blocks) */
        if (k > 0) rows[k].speedup = rows[k < 5 ? k - 1 : 3].time_ms / rows[k].time_ms;
    }
    drv_gpu_free(&b);
    attn_inputs_free(&in);
    return n;
}

#endif
