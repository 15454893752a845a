/* main.c - phase 6 driver: Flash-Decoding (split the KV cache, combine by log-sum-exp).
 *
 *   build/phase6 [--B b --H h --Hkv h --N n_q --Nkv L --d d --causal --seed s]
 *                [--kernel fa2-mma|split|split-pack|fused|fdpp|paged|ragged|all] [--iters k] [--phi X]
 *                [--sweep] [--csv file] [--dump dir] [--cpu] [--quiet]
 *   FA_SPLITS=S build/phase6 ...   every decode row with S splits instead of the heuristic's
 *   FA_SPLIT_UNIT=sm build/phase6 ...   the heuristic counting waves in SMs instead of blocks (FA2's slots)
 *
 * Order (docs/design.md, "The driver contract"): parse; inputs from the seed; the CPU
 * rows, each checked against the phase-0 oracle (tol_cpu) and phase 4's FA2 model, its
 * counted HBM bytes against decode_hbm_bytes():
 *   fa2-model        phase 4's model on the decode shape (the previous phase)
 *   split-S<k>       the split model, S = k splits (S = 1: no partials, no combine)
 *   paged-p<n>-S4    the same through a paged cache of n-key pages, a shuffled pool:
 *                    bitwise equal to split-S4
 *   ragged-S4, ragged-p16-S4   B = 4 sequences of different lengths, one of them empty
 * then with a GPU, on the whole problem, each on poisoned outputs (and partials), checked
 * against the fp64 oracle (phase 1's 2x rule, L within 1e-3) and phase 4's fa2-mma on the
 * same inputs (rel L2 < 3e-3), then timed:
 *   fa2-mma          phase 4's kernel on the decode shape (the previous phase)
 *   split            one block per (split, head, batch), S from the heuristic (decode.h)
 *   split-pack       + GQA packing: one block per (split, KV head, batch)
 *   fused            split-pack with the combine in the split kernel: the split that
 *                    finishes a row tile last merges it (no second launch); bitwise equal
 *                    to split-pack
 *   fdpp             FlashDecoding++ at split-pack's S: the unified max phi (calibrated,
 *                    or --phi), the FD++ combine, the rows out of the safe window
 *                    recomputed; the line under the table says how many
 *   paged-p16/64/256 split-pack through a block table, pool shuffled: bitwise equal to split-pack
 *   ragged, ragged-p16   B = 4 sequences of L, L/2 + 1, 0, 1 keys, each checked alone
 *                    against the oracle; sequence 0 bitwise equal to split-pack on the whole
 *                    cache, the paged one bitwise equal to the contiguous one
 * the table; the CSV; one verdict line. The default problem is one token against a
 * 4096-key cache, H = 32 with 8 KV heads, d = 128 (cli_parse takes H_kv and N_kv from the
 * defaults below unless --H / --N or --Hkv / --Nkv are given).
 * --sweep: the model's bytes vs the cache length L and vs the number of splits S; then
 * with a GPU: time and GB/s vs L (B = 1, 8; H = 32; H_kv = 32, 8; d = 128; L = 1k..256k)
 * of fa2-mma, split, split-pack; time vs S with the heuristic's pick; paged vs contiguous.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "decode_rows.h"
#include "driver.h"

#define PHASE DEC_PHASE

#define DEC_NAME(id, name, file) name,
static const char *const KERNELS[] = {"fa2-mma", DEC_VARIANTS(DEC_NAME) NULL};   /* decode.h's variants */
#undef DEC_NAME
/* CSV columns 1..22 (plot.gp reads them by number) */
static const char *const CSV_COLS[] = {"kernel", "device", "sweep", "B", "H", "H_kv", "N_q", "N_kv",
    "d", "causal", "Br", "Bc", "time_ms", "hbm_model", "hbm_formula", "max_abs", "rel_l2", "L_max_abs",
    "rel_prev", "verdict", "gbps", "speedup", NULL};
static const char *const TABLE_COLS[] = {"kernel", "device", "problem", "blocks", "time", "gbps", "hbm_model",
    "max_abs", "rel_l2", "L_abs", "vs_prev", "verdict", NULL};
static const cli_spec_t SPEC = { .phase = PHASE, .kernels = KERNELS,
    .summary = "Flash-Decoding: the KV cache cut into S splits, partials combined by log-sum-exp",
    .defaults = { .B = 1, .H = 32, .H_kv = 8, .N_q = 1, .N_kv = 4096, .d = 128 },
    .default_sweep_csv = "results/phase6/phase6_sweep.csv",
    /* the CPU part: the problem of the options at each L (bounded); the GPU part its own */
    .sweep_takes = "B H Hkv N d causal iters seed",
    .takes_phi = true };   /* --phi: FlashDecoding++'s unified max for the fdpp row, not calibrated */

/* What a split costs, in the bytes of the rows just run. */
static void explain(const drv_row_t *rows, int n)
{
    const drv_row_t *fa2 = &rows[0], *s1 = &rows[1];
    printf("bytes: phase 4's FA2 %.0f, split S=1 %.0f (%s)\n", fa2->hbm_model, s1->hbm_model,
           fa2->hbm_model == s1->hbm_model ? "the same: one split is FA2" : "different");
    for (int k = 2; k < n && strncmp(rows[k].kernel, "split-", 6) == 0; k++)
        if (drv_passed(&rows[k]))   /* bytes == formula and the output right: the formula's reasons hold */
            printf("  %-9s %.0f bytes: +%.0f (+%.3f%%): each split's own Q read, its partial written and read back\n",
                   rows[k].kernel, rows[k].hbm_model, rows[k].hbm_model - s1->hbm_model, 100.0 * (rows[k].hbm_model / s1->hbm_model - 1.0));
    if (*dec_fdpp_note()) printf("%s\n", dec_fdpp_note());
    if (*dec_fdpp_gpu_note()) printf("%s\n", dec_fdpp_gpu_note());
}

int main(int argc, char **argv)
{
    drv_t D;          /* the run: its GPU (if any), the machine, the CSV */
    cli_opts_t o;
    cli_parse(argc, argv, &SPEC, &o);
    const char *fs = getenv("FA_SPLITS");
    if (fs && *fs) {
        char *end;
        long v = strtol(fs, &end, 10);
        if (*end != '\0' || v < 1 || v > 1024) cli_die(PHASE, "FA_SPLITS must be a number of splits from 1 to 1024, not '%s'", fs);
        dec_set_splits((int)v);
    }
    const char *fu = getenv("FA_SPLIT_UNIT");
    if (fu && *fu) {
        if (strcmp(fu, "sm") != 0 && strcmp(fu, "slots") != 0) cli_die(PHASE, "FA_SPLIT_UNIT must be sm or slots, not '%s'", fu);
        dec_set_split_unit(strcmp(fu, "slots") == 0);
    }
    drv_start(&D, PHASE, &o);
    drv_csv_open(&D, &o, argc, argv, CSV_COLS);
    if (o.sweep) return dec_sweep(&D, &o);

    drv_banner(&D, &o, "Flash-Decoding, KV cache split into S, combined by log-sum-exp");
    drv_row_t rows[DEC_ROWS_MAX];
    attn_problem_t pc = attn_small_like(&o.p, DEC_CPU_ROWS_MAX_FLOPS);
    if (!o.quiet) attn_small_like_note(PHASE, &o.p, &pc, DEC_CPU_ROWS_MAX_FLOPS);
    int n = dec_cpu_rows(&pc, &o, rows), ncpu = n, S_split = 0, S_pack = 0, S_paged = 0;
#if HAVE_CUDA
    if (D.gpu) {
        attn_inputs_t in;
        drv_inputs(&in, &o.p, o.seed, false, PHASE);
        n += dec_gpu_rows(&in, &o, rows + n, &S_split, &S_pack, &S_paged);
        attn_inputs_free(&in);
        for (int k = ncpu + 1; k < n && strcmp(rows[ncpu].kernel, "fa2-mma") == 0; k++)
            rows[k].speedup = rows[ncpu].time_ms / rows[k].time_ms;
    }
#endif
    if (!D.gpu) printf("%s: GPU rows skipped: %s\n", PHASE, D.why);
    drv_print_rows(&D, TABLE_COLS, rows, n);
    if (!o.quiet) explain(rows, ncpu);
    if (!o.quiet && n > ncpu) {
        printf("GPU: splits S = %d (split), %d (split-pack), %d (paged) %s; time: median of %d runs after warm-up (CUDA "
               "events, L2 flushed)\n", S_split, S_pack, S_paged, getenv("FA_SPLITS") && *getenv("FA_SPLITS") ? "(FA_SPLITS)" : !dec_split_unit_slots() ? "(the heuristic in SMs, FA_SPLIT_UNIT)" : "(the heuristic, decode.h)", o.iters);
        for (int k = ncpu + 1; k < n; k++)
            if (drv_passed(&rows[k]) && !isnan(rows[k].speedup))
                printf("  %-12s %.2fx phase 4's fa2-mma\n", rows[k].kernel, rows[k].speedup);
    }
    return drv_finish(&D, rows, n, o.quiet);
}
