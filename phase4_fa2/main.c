/* main.c - phase 4 driver: FlashAttention-2 forward (Q outer, K/V inner).
 *
 *   build/phase4 [--B b --H h --Hkv h --N n --Nkv n --d d --causal | --mask name[:p,...] --seed s]
 *                [--kernel simple|mma|fa1-simple|fa1-mma|cublas|ladder|wgmma|wgmma-tma|wgmma-ws|
 *                          wgmma-pingpong|wgmma-overlap|wgmma-persist|wgmma-fa3order|wgmma-fa3|
 *                          wgmma-store|wgmma-fp8|wgmma-fp8+q|all] [--iters k]
 *                [--sweep] [--csv file] [--dump dir] [--cpu] [--quiet]
 *
 * Order (docs/design.md, "The driver contract"): parse (an unsupported kernel/d pair
 * exits 2); inputs from the seed; the CPU tile model (its bytes and non-matmul count
 * against the chapter's formulas, its causal range against a scan of the mask, its O and
 * L against the phase-0 oracle, phase 3's FA1 model and phase 2's 1-pass attention);
 * each GPU kernel on poisoned outputs, checked against the oracle (2x rule, L within
 * 1e-3), phase 3's fa1-mma (the previous phase) and, on small problems, phase 2's
 * 1-pass attention, then timed; the ablation ladder on the FA2 paper's N = 4096 point;
 * the table; the CSV; one verdict line. wgmma-fp8 (the FP8 kernel timed alone) and
 * wgmma-fp8+q (with its pre-pass) run only when named: FP8's own tolerance (fa2.h) against
 * the oracle and fa2-mma, the CPU model fa3_fp8.c on small problems; "all" leaves them out.
 * --sweep: the model vs N, then with a GPU the FA2 paper's setting (fp16, hidden 2048,
 * B x N = 16k tokens, N = 512..16384, d = 64 and 128, causal and not, with wgmma-fp8 at d = 128;
 * d = 256: fa2-mma, wgmma-ws, wgmma-persist and wgmma-fp8). --sweep --d D and/or --causal=0|1
 * run only the GPU points of that head dim and half (a long sweep in pieces).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cost.h"
#include "fa1.h"
#include "fa2_rows.h"

#define PHASE         FA2_PHASE
#define CPU_MAX_FLOPS 8e8           /* the CPU rows run a smaller problem like it above (~4 s) */
#define CHECK_ROWS    512           /* oracle rows checked per GPU run (all when fewer)   */

#define KERNEL_NAME(ID, NAME, ...) NAME,   /* the Hopper ladder's rows: hopper/steps.h */
static const char *const KERNELS[] = {"simple", "mma", "fa1-simple", "fa1-mma", "cublas", "ladder",
                                      FA2_HOPPER_STEPS(KERNEL_NAME) FA2_HOPPER_FP8_ROWS(KERNEL_NAME) NULL};
#undef KERNEL_NAME
static const char *const CSV_COLS[] = {"kernel", "device", "sweep", "B", "H", "H_kv", "N_q", "N_kv",
    "d", "causal", "Br", "Bc", "time_ms", "tflops", "hbm_model", "hbm_formula", "hbm_measured",
    "nonmatmul", "max_abs", "rel_l2", "L_max_abs", "rel_prev", "pipeline_max_abs", "speedup", "verdict", NULL};
static const char *const TABLE_COLS[] = {"kernel", "device", "problem", "blocks", "time", "tflops",
    "hbm_model", "max_abs", "rel_l2", "L_abs", "vs_prev", "verdict", NULL};
static const char *const LADDER_COLS[] = {"step", "what", "time", "tflops", "speedup", "vs_first", "verdict", NULL};
/* the default problem is not causal (as in phases 1-3); `make phase4 run` adds --causal */
static const cli_spec_t SPEC = { .phase = PHASE, .kernels = KERNELS,
    .summary = "FlashAttention-2 forward: Q blocks outer, K/V inner, O~ unnormalised, L written",
    .defaults = { .B = 2, .H = 4, .H_kv = 4, .N_q = 512, .N_kv = 512, .d = 64 },   /* scale: 1/sqrt(d), set by cli_parse */
    .default_sweep_csv = "results/phase4/phase4_sweep.csv", .sweep_takes = "kernel iters seed d causal",
    .takes_mask = true };

#define EXPLAIN_MAX_TILES 1e8   /* the census: well under a second */

/* What the CPU model's numbers mean, beside FA1's (phase 3) on the same problem. */
static void explain(const attn_problem_t *p, const attn_problem_t *pc, const drv_row_t *cpu, int iters)
{
    attn_blocks_t b1;
    REF(fa1_block_sizes)(FA2_FA1_M, pc->d, &b1);
    double fa1_bytes = fa1_hbm_bytes(pc, b1.Bc), fa1_nm = fa1_nonmatmul_flops(pc, b1.Bc);
    printf("CPU model (Br x Bc = %d x %d): HBM %.0f bytes = the formula of docs/04_fa2.md; FA1 (phase 3, "
           "M = 128 KiB, Bc = %d) would move %.0f (%.1fx)\nnon-matmul FLOPs (exp, max, rescale, divide): "
           "FA2 %.0f counted (= formula), FA1 %.0f (%.2fx more); matmul FLOPs %.0f\n", cpu->blocks.Br,
           cpu->blocks.Bc, cpu->hbm_model, b1.Bc, fa1_bytes, fa1_bytes / cpu->hbm_model, cpu->nonmatmul,
           fa1_nm, fa1_nm / cpu->nonmatmul, 4.0 * pc->B * pc->H * pc->N_q * pc->N_kv * pc->d);
    if (attn_mask(p)) {   /* FlashMask: the tile census of the problem asked for at the model's blocks, the mask's bytes */
        mask_census_t c;
        const double tiles = ceil((double)p->N_q / cpu->blocks.Br) * ceil((double)p->N_kv / cpu->blocks.Bc);
        if (tiles > EXPLAIN_MAX_TILES)   /* the census visits every tile of a head: bounded, as every CPU row */
            printf("mask %s, N_q x N_kv = %d x %d: the tile census is skipped (%.3g tiles a head; it counts at most %.3g)\n",
                   attn_mask(p)->spec, p->N_q, p->N_kv, tiles, EXPLAIN_MAX_TILES);
        else if (mask_census(attn_mask(p), cpu->blocks.Br, cpu->blocks.Bc, &c) == 0)
            printf("mask %s, N_q x N_kv = %d x %d (Br x Bc = %d x %d), tiles of a head: %ld fully masked (skipped, K/V "
                   "not read), %ld partial (element test), %ld unmasked; the four vectors take %zu bytes, a dense mask "
                   "%.0f; %.0f of the %.0f (row, key) pairs visible (density %.3f)\n", attn_mask(p)->spec, p->N_q, p->N_kv,
                   cpu->blocks.Br, cpu->blocks.Bc, c.fully_masked, c.partial, c.unmasked, mask_bytes(attn_mask(p)),
                   mask_dense_bytes(attn_mask(p)), mask_pairs(attn_mask(p)), (double)p->N_q * p->N_kv,
                   mask_pairs(attn_mask(p)) / ((double)p->N_q * p->N_kv));
    }
    printf("time: CPU one run; GPU median of %d runs after warm-up (CUDA events, L2 flushed); "
           "vs prev: rel L2 against phase 3's FA1 (kernel fa1-mma; for the CPU model its CPU model)\n", iters);
}

int main(int argc, char **argv)
{
    cli_opts_t o;
    cli_parse(argc, argv, &SPEC, &o);
    const attn_problem_t *p = &o.p;
    if ((strcmp(o.kernel, "mma") == 0 || strcmp(o.kernel, "ladder") == 0) && !fa2_mma_supports(p->d))
        cli_die(PHASE, "kernel %s is built for d = 32, 64, 128 and 256, not d = %d%s", o.kernel, p->d,
                p->d % 32 == 0 ? " (use --kernel simple)" : "");
    if (strcmp(o.kernel, "fa1-mma") == 0 && !fa1_mma_supports(p->d))
        cli_die(PHASE, "kernel fa1-mma is built for d = 32, 64 and 128, not d = %d", p->d);
    if (attn_mask(p) && strcmp(o.kernel, "all") != 0 && strcmp(o.kernel, "mma") != 0 && strcmp(o.kernel, "wgmma-ws") != 0)
        cli_die(PHASE, "kernel %s has no mask path: --mask runs fa2-mma (--kernel mma), wgmma-ws (--kernel wgmma-ws, "
                "Hopper) and the CPU model", o.kernel);
    if (strcmp(o.kernel, "simple") == 0 && p->d % 32 != 0)
        cli_die(PHASE, "kernel simple needs d a multiple of 32, not d = %d", p->d);
    if (o.sweep && o.sweep_d && o.sweep_d < 64)
        cli_die(PHASE, "--sweep --d %d: the sweep's head dims are 64, 128 and 256", o.sweep_d);

    drv_t D;
    drv_start(&D, PHASE, &o);
    drv_csv_open(&D, &o, argc, argv, CSV_COLS);
    if (o.sweep) return fa2_sweep(&D, &o);

    drv_banner(&D, &o, "FlashAttention-2 forward, Q outer / K-V inner");
    drv_row_t rows[1 + FA2_GPU_ROWS_MAX + FA2_LADDER_STEPS];   /* the CPU row, the GPU rows, the ladder */
    int n = 0, nl = 0;
    attn_problem_t pc = attn_small_like(p, CPU_MAX_FLOPS);
    if (!o.quiet) attn_small_like_note(PHASE, p, &pc, CPU_MAX_FLOPS);
    rows[n++] = fa2_cpu_row(&pc, &o, "-", true);
    drv_row_t ladder[FA2_LADDER_STEPS];
#if HAVE_CUDA
    if (D.gpu) {
        attn_inputs_t in;
        drv_inputs(&in, p, o.seed, false, PHASE);
        if (strcmp(o.kernel, "ladder") != 0) n += fa2_gpu_rows(&in, &o, "-", CHECK_ROWS, true, rows + n);
        attn_inputs_free(&in);
        bool want = strcmp(o.kernel, "ladder") == 0 || (strcmp(o.kernel, "all") == 0 && !o.quiet);
        if (want && !attn_mask(p) && (p->d == 64 || p->d == 128)) nl = fa2_ladder(&o, p->d, ladder);
    }
#endif
    if (!D.gpu) printf("%s: GPU rows skipped: %s\n", PHASE, D.why);

    drv_print_rows(&D, TABLE_COLS, rows, n);
    if (nl) {
        char desc[128];
        attn_problem_str(&ladder[0].p, desc, sizeof desc);
        printf("ablation ladder (%s; speedup: this row's change alone, grid-bh, noskip and mma against fa2-deferred; vs first: vs fa1-plain):\n", desc);
        drv_print_rows(&D, LADDER_COLS, ladder, nl);
        memcpy(rows + n, ladder, nl * sizeof ladder[0]);
        n += nl;
    }
    if (!o.quiet) explain(p, &pc, &rows[0], o.iters);
    return drv_finish(&D, rows, n, o.quiet);
}
