/* main.c - phase 6 driver: Flash-Decoding (split the KV cache, combine by log-sum-exp).
 *
 *   build/phase6 [--B b --H h --Hkv h --N n_q --Nkv L --d d --causal --seed s]
 *                [--sweep] [--csv file] [--dump dir] [--cpu] [--quiet]
 *
 * Order (docs/design.md, "The driver contract"): parse; inputs from the seed; the CPU
 * rows, each checked against the phase-0 oracle (tol_cpu) and phase 4's FA2 model, its
 * counted HBM bytes against decode_hbm_bytes():
 *   fa2-model        phase 4's model on the decode shape (the previous phase)
 *   split-S<k>       the split model, S = k splits (S = 1: no partials, no combine)
 *   paged-p<n>-S4    the same through a paged cache of n-key pages, a shuffled pool:
 *                    bitwise equal to split-S4
 *   ragged-S4, ragged-p16-S4   B = 4 sequences of different lengths, one of them empty
 * the table; the CSV; one verdict line. The GPU kernels of this phase are not written yet.
 * The default problem is one token against a 4096-key cache, H = 32 with 8 KV heads,
 * d = 128 (cli_parse takes H_kv and N_kv from the defaults below unless --H / --N or
 * --Hkv / --Nkv are given).
 * --sweep: the model's bytes vs the cache length L (counted up to 8k, the formula beyond)
 * and vs the number of splits S.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "decode.h"
#include "driver.h"
#include "fa2.h"
#include "oracle.h"
#include "timer.h"

#define PHASE         "phase6"
#define CPU_MAX_FLOPS 2e9          /* the CPU rows run a smaller problem like it above */
#define SWEEP_COUNT_L 8192         /* the sweep counts bytes up to this L, formula beyond */
#define ROWS_MAX      24

static const int SPLITS[] = {1, 2, 4, 8, 16, 32};
static const int PAGES[] = {16, 64, 256};
#define PAGED_S 4

static const char *const CSV_COLS[] = {"kernel", "device", "sweep", "B", "H", "H_kv", "N_q", "N_kv",
    "d", "causal", "Br", "Bc", "time_ms", "hbm_model", "hbm_formula", "max_abs", "rel_l2", "L_max_abs",
    "rel_prev", "verdict", NULL};
static const char *const TABLE_COLS[] = {"kernel", "device", "problem", "blocks", "time", "hbm_model",
    "max_abs", "rel_l2", "L_abs", "vs_prev", "verdict", NULL};
static const cli_spec_t SPEC = { .phase = PHASE,
    .summary = "Flash-Decoding: the KV cache cut into S splits, partials combined by log-sum-exp (CPU model)",
    .defaults = { .B = 1, .H = 32, .H_kv = 8, .N_q = 1, .N_kv = 4096, .d = 128 },
    .default_sweep_csv = "results/phase6/phase6_sweep.csv" };

/* A row name that lives as long as the run. */
static const char *row_name(const char *fmt, int a, int b)
{
    static char names[512][32];
    static int next;
    char *s = names[next++ % 512];
    snprintf(s, sizeof names[0], fmt, a, b);
    return s;
}

typedef struct { float *O, *L; } out_t;

static out_t out_alloc(const attn_problem_t *p)
{
    out_t o = { xmalloc(attn_q_elems(p) * sizeof(float), PHASE), xmalloc(attn_l_elems(p) * sizeof(float), PHASE) };
    poison_f32(o.O, attn_q_elems(p));
    poison_f32(o.L, attn_l_elems(p));
    return o;
}
static void out_free(out_t *o) { free(o->O); free(o->L); }

/* One run of the split model: timed, bytes against the formula. */
static drv_row_t run_split(const attn_inputs_t *in, const dec_cache_t *c, int S, const char *name,
                           const char *sweep, out_t *out)
{
    const attn_problem_t *p = &in->p;
    drv_row_t r = drv_row(name, "cpu", sweep, p);
    r.blocks = fa2_mma_blocks(p->d);
    hbm_meter_t meter;
    hbm_reset(&meter);
    double t0 = now_seconds();
    size_t peak = dec_cpu(in, c, r.blocks, S, out->O, out->L, &meter);
    r.time_ms = (now_seconds() - t0) * 1e3;
    r.hbm_model = (double)hbm_total(&meter);
    r.hbm_formula = decode_hbm_bytes(p, c, r.blocks, S);
    if (r.hbm_model != r.hbm_formula)
        drv_fail(&r, "counted %.0f HBM bytes, decode_hbm_bytes says %.0f", r.hbm_model, r.hbm_formula);
    if (peak != dec_sram_bytes(p->d, r.blocks, S))
        drv_fail(&r, "SRAM peak %zu, dec_sram_bytes says %zu", peak, dec_sram_bytes(p->d, r.blocks, S));
    drv_blame(&r, "dec.split_range");
    return r;
}

/* The CPU rows of one problem: phase 4's model, the splits, the paged caches, ragged. */
static int run_cpu_rows(const attn_problem_t *pc, const cli_opts_t *o, drv_row_t *rows)
{
    int n = 0;
    attn_inputs_t in;
    drv_inputs(&in, pc, o->seed, false, PHASE);
    const size_t nq = attn_q_elems(pc);
    /* phase 4's FA2 model on the decode shape: the previous phase, and the reference the
     * split rows are held to (REF: its solution in an exercise build, common/ref.h) */
    out_t o4 = out_alloc(pc);
    {
        drv_row_t r = drv_row("fa2-model", "cpu", "-", pc);
        r.blocks = fa2_mma_blocks(pc->d);
        hbm_meter_t meter;
        hbm_reset(&meter);
        double t0 = now_seconds();
        REF(fa2_cpu)(&in, r.blocks, o4.O, o4.L, &meter, NULL);
        r.time_ms = (now_seconds() - t0) * 1e3;
        r.hbm_model = (double)hbm_total(&meter);
        r.hbm_formula = fa2_hbm_bytes(pc, r.blocks);
        if (r.hbm_model != r.hbm_formula) drv_fail(&r, "counted %.0f HBM bytes, fa2_hbm_bytes says %.0f", r.hbm_model, r.hbm_formula);
        oracle_check_cpu_row(&r, &in, o4.O, o4.L, NULL, NULL);
        rows[n++] = r;
    }
    /* the split model, S = 1, 2, 4, ...; split-S4 kept for the paged rows */
    out_t o4s = out_alloc(pc);
    for (size_t k = 0; k < sizeof SPLITS / sizeof SPLITS[0]; k++) {
        const int S = SPLITS[k];
        out_t out = S == PAGED_S ? o4s : out_alloc(pc);
        drv_row_t r = run_split(&in, NULL, S, row_name("split-S%d", S, 0), "-", &out);
        oracle_check_cpu_row(&r, &in, out.O, out.L, "dec.split_range, dec.combine", "dec.split_range, dec.combine");
        drv_compare_prev(&r, "phase 4's FA2 model", out.O, o4.O, nq, TOL_CPU_REL_L2);
        drv_blame(&r, "dec.split_range, dec.combine");
        if (S == PAGED_S) drv_dump(o, &in, out.O, out.L, PHASE);
        else out_free(&out);
        rows[n++] = r;
    }
    /* a paged cache, pages shuffled in the pool: the same bits as the contiguous S = 4 */
    for (size_t k = 0; k < sizeof PAGES / sizeof PAGES[0]; k++) {
        dec_paged_t pg;
        if (dec_paged_make(&pg, &in, PAGES[k], NULL, o->seed + 1) != 0) { fprintf(stderr, "%s: out of host memory\n", PHASE); exit(1); }
        out_t out = out_alloc(pc);
        drv_row_t r = run_split(&in, &pg.c, PAGED_S, row_name("paged-p%d-S%d", PAGES[k], PAGED_S), "-", &out);
        if (memcmp(out.O, o4s.O, nq * sizeof(float)) != 0 || memcmp(out.L, o4s.L, attn_l_elems(pc) * sizeof(float)) != 0)
            drv_fail(&r, "O or L differs from split-S%d on the contiguous cache (same keys, same order)", PAGED_S);
        drv_blame(&r, "dec.page_lookup");
        oracle_check_cpu_row(&r, &in, out.O, out.L, "dec.page_lookup, dec.combine", "dec.page_lookup, dec.combine");
        drv_compare_prev(&r, "phase 4's FA2 model", out.O, o4.O, nq, TOL_CPU_REL_L2);
        out_free(&out);
        dec_paged_free(&pg);
        rows[n++] = r;
    }
    out_free(&o4); out_free(&o4s);
    attn_inputs_free(&in);

    /* ragged: B = 4 sequences of L, L/2 + 1, 0 and 1 keys, contiguous and paged */
    attn_problem_t pr = *pc;
    pr.B = 4;
    const int lens[4] = {pc->N_kv, pc->N_kv / 2 + 1, 0, 1};
    drv_inputs(&in, &pr, o->seed, false, PHASE);
    const size_t rq = attn_q_elems(&pr), rl = attn_l_elems(&pr);
    double *Oref = xmalloc(rq * sizeof(double), PHASE), *Lref = xmalloc(rl * sizeof(double), PHASE);
    if (dec_oracle_ragged(&in, lens, Oref, Lref) != 0) { fprintf(stderr, "%s: out of host memory\n", PHASE); exit(1); }
    for (int paged = 0; paged <= 1; paged++) {
        dec_paged_t pg;
        dec_cache_t c = { .seqlens_k = lens };
        if (paged && dec_paged_make(&pg, &in, 16, lens, o->seed + 2) != 0) { fprintf(stderr, "%s: out of host memory\n", PHASE); exit(1); }
        out_t out = out_alloc(&pr);
        drv_row_t r = run_split(&in, paged ? &pg.c : &c, PAGED_S,
                                paged ? row_name("ragged-p16-S%d", PAGED_S, 0) : row_name("ragged-S%d", PAGED_S, 0), "-", &out);
        const char *ex = paged ? "dec.split_range, dec.page_lookup, dec.combine" : "dec.split_range, dec.combine";
        drv_compare(&r, "vs oracle (per sequence)", "O", out.O, Oref, rq, pr.d, tol_cpu(), true, ex);
        drv_compare(&r, "vs oracle (per sequence)", "L", out.L, Lref, rl, pr.N_q, tol_cpu(), false, ex);
        drv_blame(&r, ex);
        out_free(&out);
        if (paged) dec_paged_free(&pg);
        rows[n++] = r;
    }
    free(Oref); free(Lref);
    attn_inputs_free(&in);
    return n;
}

/* ---- --sweep ------------------------------------------------------------------------ */
static drv_row_t formula_row(const attn_problem_t *p, int S, const char *sweep)
{
    drv_row_t r = drv_row(row_name("formula-S%d", S, 0), "cpu", sweep, p);
    r.blocks = fa2_mma_blocks(p->d);
    r.hbm_formula = decode_hbm_bytes(p, NULL, r.blocks, S);
    return r;
}

static drv_row_t sweep_point(const cli_opts_t *o, const attn_problem_t *p, int S, const char *sweep)
{
    if (p->N_kv > SWEEP_COUNT_L) return formula_row(p, S, sweep);
    attn_inputs_t in;
    drv_inputs(&in, p, o->seed, false, PHASE);
    out_t out = out_alloc(p);
    drv_row_t r = run_split(&in, NULL, S, row_name("split-S%d", S, 0), sweep, &out);
    out_free(&out);
    attn_inputs_free(&in);
    return r;
}

static int run_sweep(drv_t *D, const cli_opts_t *o)
{
    int fails = 0;
    const attn_problem_t *p = &o->p;
    attn_blocks_t bl = fa2_mma_blocks(p->d);
    /* bytes vs L: FA2 (phase 4's formula) beside the split model at S = 1, 8, 32 */
    for (int Lk = 1; Lk <= 256; Lk *= 2) {
        attn_problem_t q = *p;
        q.N_kv = Lk * 1024;
        double f4 = fa2_hbm_bytes(&q, bl);
        printf("  sweep vsL L=%6d  fa2 %.0f", q.N_kv, f4);
        const int Ss[] = {1, 8, 32};
        for (int k = 0; k < 3; k++) {
            drv_row_t r = sweep_point(o, &q, Ss[k], "vsL");
            fails += drv_failed(&r);
            drv_csv_row(D, &r);
            printf("  S=%d %.0f (%s, +%.2f%%)", Ss[k], r.hbm_formula, isnan(r.hbm_model) ? "formula" : r.verdict,
                   100.0 * (r.hbm_formula / f4 - 1.0));
        }
        printf("\n");
    }
    /* bytes vs S at L = 4096 (counted) and L = 65536 (formula) */
    for (int Lk = 4; Lk <= 64; Lk *= 16)
        for (int S = 1; S <= 128; S *= 2) {
            attn_problem_t q = *p;
            q.N_kv = Lk * 1024;
            drv_row_t r = sweep_point(o, &q, S, "vsS");
            fails += drv_failed(&r);
            drv_csv_row(D, &r);
            dec_traffic_t t = dec_hbm_traffic(&q, NULL, bl, S);
            printf("  sweep vsS L=%6d S=%3d  HBM %.0f  partials %.0f (%.2f%% of it)  %s\n", q.N_kv, S, t.total,
                   t.write_part + t.read_part, 100.0 * (t.write_part + t.read_part) / t.total,
                   isnan(r.hbm_model) ? "formula" : r.verdict);
        }
    return drv_sweep_end(D, fails);
}

/* What a split costs, in the bytes of the rows just run. */
static void explain(const drv_row_t *rows, int n)
{
    const drv_row_t *fa2 = &rows[0], *s1 = &rows[1];
    printf("bytes: phase 4's FA2 %.0f, split S=1 %.0f (%s)\n", fa2->hbm_model, s1->hbm_model,
           fa2->hbm_model == s1->hbm_model ? "the same: one split is FA2" : "different");
    for (int k = 2; k < n && strncmp(rows[k].kernel, "split-", 6) == 0; k++)
        printf("  %-9s %.0f bytes: +%.0f (+%.3f%%): each split's own Q read, its partial written and read back\n", rows[k].kernel,
               rows[k].hbm_model, rows[k].hbm_model - s1->hbm_model, 100.0 * (rows[k].hbm_model / s1->hbm_model - 1.0));
}

int main(int argc, char **argv)
{
    drv_t D;          /* the run: its GPU (none needed here), the machine, the CSV */
    cli_opts_t o;
    cli_parse(argc, argv, &SPEC, &o);
    drv_start(&D, PHASE, &o);
    drv_csv_open(&D, &o, argc, argv, CSV_COLS);
    printf("%s: the GPU kernels of this phase are not written yet: CPU rows only\n", PHASE);
    if (o.sweep) return run_sweep(&D, &o);

    drv_banner(&D, &o, "Flash-Decoding, KV cache split into S, combined by log-sum-exp");
    drv_row_t rows[ROWS_MAX];
    attn_problem_t pc = attn_small_like(&o.p, CPU_MAX_FLOPS);
    int n = run_cpu_rows(&pc, &o, rows);
    drv_print_rows(&D, TABLE_COLS, rows, n);
    if (!o.quiet) explain(rows, n);
    return drv_finish(&D, rows, n, o.quiet);
}
