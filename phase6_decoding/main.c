/* main.c - phase 6 driver: Flash-Decoding (split the KV cache, combine by log-sum-exp).
 *
 *   build/phase6 [--B b --H h --Hkv h --N n_q --Nkv L --d d --causal --seed s]
 *                [--kernel fa2-mma|split|split-pack|paged|ragged|all] [--iters k]
 *                [--sweep] [--csv file] [--dump dir] [--cpu] [--quiet]
 *   FA_SPLITS=S build/phase6 ...   every decode row with S splits instead of the heuristic's
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
#include "decode.h"
#include "driver.h"
#include "fa2.h"
#include "naive.h"
#include "oracle.h"
#include "timer.h"

#define PHASE         "phase6"
#define CPU_MAX_FLOPS 8e7          /* the CPU rows run a smaller problem like it above (12 rows, ~6 s) */
#define SWEEP_COUNT_L 8192         /* the sweep counts bytes up to this L, formula beyond */
#define ROWS_MAX      24

static const int SPLITS[] = {1, 2, 4, 8, 16, 32};
static const int PAGES[] = {16, 64, 256};
#define PAGED_S 4

static const char *const KERNELS[] = {"fa2-mma", "split", "split-pack", "paged", "ragged", NULL};
/* CSV columns 1..22 (plot.gp reads them by number) */
static const char *const CSV_COLS[] = {"kernel", "device", "sweep", "B", "H", "H_kv", "N_q", "N_kv",
    "d", "causal", "Br", "Bc", "time_ms", "hbm_model", "hbm_formula", "max_abs", "rel_l2", "L_max_abs",
    "rel_prev", "verdict", "gbps", "speedup", NULL};
static const char *const TABLE_COLS[] = {"kernel", "device", "problem", "blocks", "time", "gbps", "hbm_model",
    "max_abs", "rel_l2", "L_abs", "vs_prev", "verdict", NULL};
static const cli_spec_t SPEC = { .phase = PHASE, .kernels = KERNELS,
    .summary = "Flash-Decoding: the KV cache cut into S splits, partials combined by log-sum-exp",
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
        drv_compare_prev(&r, "phase 4's FA2 model", out.O, o4.O, nq, tol_cpu_rel_l2(pc->N_kv));
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
        drv_compare_prev(&r, "phase 4's FA2 model", out.O, o4.O, nq, tol_cpu_rel_l2(pc->N_kv));
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
        drv_compare(&r, "vs oracle (per sequence)", "O", out.O, Oref, rq, pr.d, tol_cpu_keys(pr.N_kv), true, ex);
        drv_compare(&r, "vs oracle (per sequence)", "L", out.L, Lref, rl, pr.N_q, tol_cpu_keys(pr.N_kv), false, ex);
        drv_blame(&r, ex);
        out_free(&out);
        if (paged) dec_paged_free(&pg);
        rows[n++] = r;
    }
    free(Oref); free(Lref);
    attn_inputs_free(&in);
    return n;
}

#if HAVE_CUDA
/* ---- the GPU rows ---------------------------------------------------------------------- */
#define CHECK_ROWS 512           /* oracle rows checked per GPU run (all of a decode shape) */

typedef struct {
    attn_problem_t p;
    bool fa2;                    /* phase 4's fa2-mma instead of the decode kernels */
    bool pack;
    int S;
    dec_gpu_args_t a;
} dec_launch_t;

static void dec_launch(void *ctx)
{
    const dec_launch_t *x = ctx;
    if (x->fa2) fa2_mma_launch(&x->p, FA2_FULL, x->a.q, x->a.k, x->a.v, x->a.o, x->a.L);
    else dec_gpu_launch(&x->p, &x->a, x->pack, x->S);
}

/* FA_SPLITS (environment): the number of splits of every decode row instead of the
 * heuristic's (0: the heuristic). Read and checked before any allocation. */
static int splits_override;

/* the heuristic's S for the kernel that runs (paged: its own occupancy, decode.h) */
static int pick_splits(const attn_problem_t *p, bool pack, bool paged)
{
    return splits_override > 0 ? splits_override : dec_num_splits(p, pack, dec_gpu_slots(p->d, paged));
}

static const int *ragged_lens;   /* the ragged rows' check (drv_check_fn has no context) */
static void check_ragged(drv_row_t *r, const attn_inputs_t *in, const float *O, const float *L, int rows)
{
    dec_check_ragged_fp16(r, in, ragged_lens, O, L, rows);
}

/* One decode kernel (or phase 4's) on the buffers b: its bytes, then the checked-then-timed
 * run (poisoned outputs and partials). keep: its O and L on the host when it passed. */
static drv_row_t run_dec(const char *name, const attn_inputs_t *in, const drv_gpu_bufs_t *b, const dec_cache_t *hc,
                         dec_gpu_args_t a, bool fa2, bool pack, int S, const drv_prev_t *prev, int nprev,
                         drv_check_fn check, int iters, float **keepO, float **keepL, const char *exercises)
{
    const attn_problem_t *p = &in->p;
    drv_row_t r = drv_row(name, "gpu", "-", p);
    gpu_kernel_config_t cfg;
    char why[200];
    int rc = fa2 ? fa2_mma_config(p->d, &cfg, why, sizeof why) : dec_gpu_config(p->d, &cfg, why, sizeof why);
    if (rc == 0 && !fa2 && p->N_q > DEC_GPU_MAX_NQ) {
        snprintf(why, sizeof why, "the decode kernels take N_q <= %d (phase 4's fa2-mma is the kernel for more)", DEC_GPU_MAX_NQ);
        rc = -1;
    }
    if (rc == 0 && fa2 && EX_BUILD_ON) { snprintf(why, sizeof why, "an earlier phase's kernel is not run in an exercise build"); rc = -1; }
    if (rc != 0) { drv_not_run(&r, rc < 0 ? "n/a" : "skipped", why); return r; }
    r.blocks = cfg.blocks;
    r.hbm_model = r.hbm_formula = fa2 ? fa2_hbm_bytes(p, cfg.blocks) : dec_hbm_traffic_gpu(p, hc, cfg.blocks, S, pack).total;
    a.q = b->Q; a.o = b->O; a.L = b->L;
    if (!hc || hc->page == 0) { a.k = b->K; a.v = b->V; }
    const size_t ws_bytes = dec_gpu_workspace_bytes(p, S);
    a.ws = ws_bytes ? gpu_malloc(ws_bytes) : NULL;
    if (a.ws) gpu_poison_f32(a.ws, ws_bytes / sizeof(float));   /* an unwritten partial is NaN */
    dec_launch_t x = { *p, fa2, pack, S, a };
    float *O = NULL;
    drv_gpu_run_t how = { dec_launch, &x, DRV_OUT_O_L, NULL, check, CHECK_ROWS, prev, nprev, 2, iters, false, &O };
    drv_gpu_run(&r, in, b, &how);
    drv_blame(&r, exercises);
    if (keepO) { *keepO = O; O = NULL; }
    if (keepL && drv_passed(&r)) {
        *keepL = xmalloc(attn_l_elems(p) * sizeof(float), PHASE);
        gpu_download(*keepL, b->L, attn_l_elems(p) * sizeof(float));   /* the timed runs wrote the same */
    }
    free(O);
    gpu_free(a.ws);
    return r;
}

/* Bitwise equality of two runs that read the same keys in the same order. */
static void same_bits(drv_row_t *r, const float *O, const float *O0, const float *L, const float *L0, size_t nq,
                      size_t nl, const char *what)
{
    if (!drv_passed(r)) return;
    if (!O || !O0 || !L || !L0) { drv_fail(r, "no output of %s to compare with", what); return; }
    if (memcmp(O, O0, nq * sizeof(float)) != 0 || memcmp(L, L0, nl * sizeof(float)) != 0)
        drv_fail(r, "O or L differs from %s (same keys, same order: must be bitwise equal)", what);
}

static int run_gpu_rows(const attn_inputs_t *in, const cli_opts_t *o, drv_row_t *rows, int *S_split, int *S_pack,
                        int *S_paged_out)
{
    const attn_problem_t *p = &in->p;
    const size_t nq = attn_q_elems(p), nl = attn_l_elems(p);
    int n = 0;
    drv_gpu_bufs_t b = drv_gpu_alloc(in, DRV_SP_NONE);
    dec_gpu_args_t a0;
    memset(&a0, 0, sizeof a0);
    /* phase 4's fa2-mma on the decode shape: the previous phase (its reference copy on
     * the CPU in an exercise build, where phase 4's kernel may be a student's) */
    float *O4 = NULL;
    drv_row_t r4 = run_dec("fa2-mma", in, &b, NULL, a0, true, false, 1, NULL, 0, attn_check_fp16, o->iters, &O4, NULL, NULL);
    if (EX_BUILD_ON && attn_flops_fwd(p) <= CPU_MAX_FLOPS) {
        O4 = xmalloc(nq * sizeof(float), PHASE);
        float *L4 = xmalloc(nl * sizeof(float), PHASE);
        REF(fa2_cpu)(in, fa2_mma_blocks(p->d), O4, L4, NULL, NULL);
        free(L4);
    }
    drv_prev_t prev = { O4, EX_BUILD_ON ? "phase 4's FA2 model" : "phase 4's fa2-mma" };
    const int nprev = O4 ? 1 : 0;
    if (cli_kernel_selected(o, "fa2-mma")) rows[n++] = r4;
    const bool dec_ok = p->N_q <= DEC_GPU_MAX_NQ && (p->d == 64 || p->d == 128);
    *S_split = dec_ok ? pick_splits(p, false, false) : 1;
    *S_pack = dec_ok ? pick_splits(p, true, false) : 1;
    const int S_paged = *S_paged_out = dec_ok ? pick_splits(p, true, true) : 1;
    const char *EX_SPLIT = "dec.split_range_gpu, dec.combine_gpu";
    if (cli_kernel_selected(o, "split"))
        rows[n++] = run_dec("split", in, &b, NULL, a0, false, false, *S_split, &prev, nprev, attn_check_fp16, o->iters, NULL, NULL, EX_SPLIT);
    /* split-pack: its O and L, at the paged kernel's S, are what the paged rows must equal
     * bit for bit (a second, unshown run when the paged kernel's S differs) */
    float *Op = NULL, *Lp = NULL;
    const bool want_paged = cli_kernel_selected(o, "paged");
    if (cli_kernel_selected(o, "split-pack") || want_paged) {
        const bool same = S_paged == *S_pack;
        drv_row_t r = run_dec("split-pack", in, &b, NULL, a0, false, true, *S_pack, &prev, nprev, attn_check_fp16, o->iters,
                              same ? &Op : NULL, same ? &Lp : NULL, EX_SPLIT);
        if (cli_kernel_selected(o, "split-pack")) rows[n++] = r;
        if (want_paged && !same)
            run_dec("split-pack", in, &b, NULL, a0, false, true, S_paged, &prev, nprev, attn_check_fp16, 1, &Op, &Lp, EX_SPLIT);
    }
    for (size_t k = 0; want_paged && k < sizeof PAGES / sizeof PAGES[0]; k++) {
        dec_paged_t pg;
        if (dec_paged_make(&pg, in, PAGES[k], NULL, o->seed + 1) != 0) { fprintf(stderr, "%s: out of host memory\n", PHASE); exit(1); }
        const size_t pool = (size_t)pg.c.n_pages * p->H_kv * PAGES[k] * p->d * 2, tab = (size_t)pg.c.n_pages * sizeof(int);
        dec_gpu_args_t a = a0;
        void *kp = gpu_malloc(pool), *vp = gpu_malloc(pool), *tb = gpu_malloc(tab);
        gpu_upload(kp, pg.k, pool); gpu_upload(vp, pg.v, pool); gpu_upload(tb, pg.table, tab);
        a.k = kp; a.v = vp; a.table = tb; a.page = PAGES[k]; a.pages_per_seq = pg.c.pages_per_seq;
        float *O = NULL, *L = NULL;
        drv_row_t r = run_dec(row_name("paged-p%d", PAGES[k], 0), in, &b, &pg.c, a, false, true, S_paged, &prev, nprev,
                              attn_check_fp16, o->iters, &O, &L, "dec.page_lookup_gpu, dec.split_range_gpu, dec.combine_gpu");
        same_bits(&r, O, Op, L, Lp, nq, nl, "split-pack on the contiguous cache");
        drv_blame(&r, "dec.page_lookup_gpu");
        rows[n++] = r;
        free(O); free(L);
        gpu_free(kp); gpu_free(vp); gpu_free(tb);
        dec_paged_free(&pg);
    }
    free(Op); free(Lp); free(O4);
    drv_gpu_free(&b);

    /* ragged: B = 4 sequences of L, L/2 + 1, 0 and 1 keys (as the CPU rows), contiguous and
     * in 16-key pages; sequence 0 (all L keys) against split-pack on the whole cache */
    if (cli_kernel_selected(o, "ragged") && dec_ok) {
        attn_problem_t pr = *p;
        pr.B = 4;
        const int lens[4] = {p->N_kv, p->N_kv / 2 + 1, 0, 1};
        attn_inputs_t inr;
        drv_inputs(&inr, &pr, o->seed, false, PHASE);
        const size_t rq = attn_q_elems(&pr), rl = attn_l_elems(&pr);
        drv_gpu_bufs_t br = drv_gpu_alloc(&inr, DRV_SP_NONE);
        const int S = pick_splits(&pr, true, false);   /* one S for all three: bitwise compared */
        float *Of = NULL, *Lf = NULL, *Oc = NULL, *Lc = NULL;
        drv_row_t rf = run_dec("split-pack", &inr, &br, NULL, a0, false, true, S, NULL, 0, attn_check_fp16, 1, &Of, &Lf, EX_SPLIT);
        int *lens_d = gpu_malloc(sizeof lens);
        gpu_upload(lens_d, lens, sizeof lens);
        dec_gpu_args_t a = a0;
        a.seqlens = lens_d;
        dec_cache_t c = { .seqlens_k = lens };
        ragged_lens = lens;
        const char *EXR = "dec.split_range_gpu, dec.combine_gpu";
        drv_row_t r = run_dec("ragged", &inr, &br, &c, a, false, true, S, NULL, 0, check_ragged, o->iters, &Oc, &Lc, EXR);
        const size_t q0 = rq / 4, l0 = rl / 4;   /* sequence 0's rows */
        if (!drv_passed(&rf)) drv_fail(&r, "split-pack on the whole cache failed: %s", rf.why);
        same_bits(&r, Oc, Of, Lc, Lf, q0, l0, "split-pack on the whole cache (sequence 0)");
        rows[n++] = r;
        dec_paged_t pg;
        if (dec_paged_make(&pg, &inr, 16, lens, o->seed + 2) != 0) { fprintf(stderr, "%s: out of host memory\n", PHASE); exit(1); }
        const size_t pool = (size_t)pg.c.n_pages * p->H_kv * 16 * p->d * 2, tab = (size_t)pg.c.n_pages * sizeof(int);
        void *kp = gpu_malloc(pool), *vp = gpu_malloc(pool), *tb = gpu_malloc(tab);
        gpu_upload(kp, pg.k, pool); gpu_upload(vp, pg.v, pool); gpu_upload(tb, pg.table, tab);
        a.k = kp; a.v = vp; a.table = tb; a.page = 16; a.pages_per_seq = pg.c.pages_per_seq;
        float *Opg = NULL, *Lpg = NULL;
        drv_row_t rp = run_dec("ragged-p16", &inr, &br, &pg.c, a, false, true, S, NULL, 0, check_ragged, o->iters, &Opg, &Lpg,
                               "dec.page_lookup_gpu, dec.split_range_gpu, dec.combine_gpu");
        same_bits(&rp, Opg, Oc, Lpg, Lc, rq, rl, "ragged on the contiguous cache");
        drv_blame(&rp, "dec.page_lookup_gpu");
        rows[n++] = rp;
        free(Of); free(Lf); free(Oc); free(Lc); free(Opg); free(Lpg);
        gpu_free(kp); gpu_free(vp); gpu_free(tb); gpu_free(lens_d);
        dec_paged_free(&pg);
        drv_gpu_free(&br);
        attn_inputs_free(&inr);
    }
    return n;
}

/* ---- the GPU sweep ----------------------------------------------------------------------
 * Inputs made on the device (dec_gpu_fill: at B = 8, L = 256k the cache is 34 GB, which the
 * host would take minutes to draw); every point's split and split-pack outputs are checked
 * against phase 4's fa2-mma on the same inputs (rel L2 < 3e-3, no NaN) before they are
 * timed; the oracle checks are the default run's and the tests'. */
#define SWEEP_LMAX (256 * 1024)

typedef struct { void *Q, *K, *V; float *O, *L, *ws; size_t kv_elems; } sweep_bufs_t;

/* One timed point: the median of o->iters CUDA-event runs after 2 warm-ups (L2 flushed). */
static drv_row_t sweep_time(const cli_opts_t *o, const attn_problem_t *p, const char *kernel, const char *sweep,
                            const sweep_bufs_t *sb, const dec_gpu_args_t *ca, bool fa2, bool pack, int S,
                            const float *O4, float **keep)
{
    drv_row_t r = drv_row(kernel, "gpu", sweep, p);
    r.blocks = fa2_mma_blocks(p->d);
    r.hbm_model = r.hbm_formula = fa2 ? fa2_hbm_bytes(p, r.blocks) : dec_hbm_traffic_gpu(p, NULL, r.blocks, S, pack).total;
    dec_gpu_args_t a = ca ? *ca : (dec_gpu_args_t){ 0 };
    a.q = sb->Q; a.o = sb->O; a.L = sb->L; a.ws = sb->ws;
    if (!ca) { a.k = sb->K; a.v = sb->V; }
    dec_launch_t x = { *p, fa2, pack, S, a };
    const size_t nq = attn_q_elems(p);
    gpu_poison_f32(sb->O, nq);
    dec_launch(&x);
    gpu_sync();
    float *O = xmalloc(nq * sizeof(float), PHASE);
    gpu_download(O, sb->O, nq * sizeof(float));
    if (O4) drv_compare_prev(&r, "phase 4's fa2-mma", O, O4, nq, TOL_FP16_REL_L2);
    else {   /* phase 4's own row: no NaN, every element written */
        for (size_t e = 0; e < nq; e++)
            if (isnan(O[e])) { drv_fail(&r, "O[%zu] is NaN (unwritten)", e); break; }
    }
    if (drv_passed(&r)) r.time_ms = gpu_time_ms(dec_launch, &x, 2, o->iters);
    if (keep && drv_passed(&r)) *keep = O;
    else free(O);
    return r;
}

static void sweep_print(const drv_row_t *r, double copy_gbps)
{
    const double gbs = r->hbm_model / (r->time_ms * 1e-3) / 1e9;
    printf("  sweep %-8s B=%d H=%d/%-2d L=%6d %-18s %9.1f us %7.0f GB/s (%3.0f%% of copy)  speedup %-6.2f %s\n",
           r->sweep, r->p.B, r->p.H, r->p.H_kv, r->p.N_kv, r->kernel, r->time_ms * 1e3, gbs, 100.0 * gbs / copy_gbps,
           r->speedup, r->verdict);
}

static int run_gpu_sweep(drv_t *D, const cli_opts_t *o)
{
    int fails = 0;
    const int d = 128, H = 32;
    sweep_bufs_t sb;
    sb.kv_elems = (size_t)8 * H * SWEEP_LMAX * d;   /* the largest point: B = 8, MHA */
    sb.Q = gpu_malloc((size_t)8 * H * 2 * d);
    sb.K = gpu_malloc(sb.kv_elems * 2);
    sb.V = gpu_malloc(sb.kv_elems * 2);
    sb.O = gpu_malloc((size_t)8 * H * d * 4);
    sb.L = gpu_malloc((size_t)8 * H * 4);
    sb.ws = gpu_malloc(dec_gpu_workspace_bytes(&(attn_problem_t){ .B = 8, .H = H, .N_q = 1, .d = d }, 128));
    dec_gpu_fill(sb.Q, (size_t)8 * H * d, o->seed);
    dec_gpu_fill(sb.K, sb.kv_elems, o->seed + 1);
    dec_gpu_fill(sb.V, sb.kv_elems, o->seed + 2);
    const double copy = D->mi.copy_gbps > 0 ? D->mi.copy_gbps : gpu_copy_bandwidth_gbps();
    const int slots = dec_gpu_slots(d, false);
    printf("%s: GPU sweep: d = 128, N_q = 1, H = 32; %d split blocks fit the GPU at once; copy bandwidth %.0f GB/s\n",
           PHASE, slots, copy);
    /* 1. time and GB/s vs L: fa2-mma, split, split-pack */
    for (int B = 1; B <= 8; B *= 8)
        for (int Hkv = H; Hkv >= 8; Hkv /= 4)
            for (int L = 1024; L <= SWEEP_LMAX; L *= 2) {
                attn_problem_t p = attn_problem(B, H, Hkv, 1, L, d, false);
                float *O4 = NULL;
                drv_row_t r[3];
                const int S1 = pick_splits(&p, false, false), S2 = pick_splits(&p, true, false);
                r[0] = sweep_time(o, &p, "fa2-mma", "vsL", &sb, NULL, true, false, 1, NULL, &O4);
                r[1] = sweep_time(o, &p, row_name("split-S%d", S1, 0), "vsL", &sb, NULL, false, false, S1, O4, NULL);
                r[2] = sweep_time(o, &p, row_name("split-pack-S%d", S2, 0), "vsL", &sb, NULL, false, true, S2, O4, NULL);
                for (int k = 0; k < 3; k++) {
                    r[k].speedup = r[0].time_ms / r[k].time_ms;
                    fails += drv_failed(&r[k]);
                    drv_csv_row(D, &r[k]);
                    sweep_print(&r[k], copy);
                }
                free(O4);
            }
    /* 2. time vs S (B = 1, GQA 32:8, split-pack) at L = 16k and 64k; the heuristic's pick
     * is the row of sweep "vsS-pick" */
    for (int L = 16384; L <= 65536; L *= 4) {
        attn_problem_t p = attn_problem(1, H, 8, 1, L, d, false);
        float *O4 = NULL;
        drv_row_t r4 = sweep_time(o, &p, "fa2-mma", "vsS", &sb, NULL, true, false, 1, NULL, &O4);
        fails += drv_failed(&r4);
        for (int S = 1; S <= 128; S *= 2) {
            drv_row_t r = sweep_time(o, &p, row_name("split-pack-S%d", S, 0), "vsS", &sb, NULL, false, true, S, O4, NULL);
            r.speedup = r4.time_ms / r.time_ms;
            fails += drv_failed(&r);
            drv_csv_row(D, &r);
            sweep_print(&r, copy);
        }
        const int S = dec_num_splits(&p, true, slots);
        drv_row_t r = sweep_time(o, &p, row_name("split-pack-S%d", S, 0), "vsS-pick", &sb, NULL, false, true, S, O4, NULL);
        r.speedup = r4.time_ms / r.time_ms;
        fails += drv_failed(&r);
        drv_csv_row(D, &r);
        sweep_print(&r, copy);
        free(O4);
    }
    /* 3. paged vs contiguous (split-pack, GQA 32:8, L = 64k, B = 1 and 8): a pool of pages
     * shuffled from the seed, made on the device from the contiguous cache. Each kernel
     * runs with its own heuristic's S (the paged one may fit fewer blocks per SM); the
     * speed-up is against the contiguous row, and each paged output must be bitwise equal
     * to the contiguous kernel's at the same S (that row shown too when the S differ). */
    for (int B = 1; B <= 8; B *= 8) {
        attn_problem_t p = attn_problem(B, H, 8, 1, 65536, d, false);
        const int S = pick_splits(&p, true, false), Sp = pick_splits(&p, true, true);
        float *Oc = NULL;
        drv_row_t rc = sweep_time(o, &p, row_name("split-pack-S%d", S, 0), "paged", &sb, NULL, false, true, S, NULL, &Oc);
        rc.speedup = 1.0;
        fails += drv_failed(&rc);
        drv_csv_row(D, &rc);
        sweep_print(&rc, copy);
        if (Sp != S) {   /* the bitwise reference at the paged kernel's S */
            free(Oc);
            Oc = NULL;
            drv_row_t rs = sweep_time(o, &p, row_name("split-pack-S%d", Sp, 0), "paged", &sb, NULL, false, true, Sp, NULL, &Oc);
            rs.speedup = rc.time_ms / rs.time_ms;
            fails += drv_failed(&rs);
            drv_csv_row(D, &rs);
            sweep_print(&rs, copy);
        }
        const size_t kv = attn_kv_elems(&p), nq = attn_q_elems(&p);
        void *kp = gpu_malloc(kv * 2 + 256 * 8 * d * 2), *vp = gpu_malloc(kv * 2 + 256 * 8 * d * 2);
        for (int page = 16; page <= 256; page *= 2) {
            const int pps = (p.N_kv + page - 1) / page, np = p.B * pps;
            int *table = xmalloc(sizeof(int) * np, PHASE);
            dec_table_shuffle(table, np, o->seed + 1);
            int *tb = gpu_malloc(sizeof(int) * np);
            gpu_upload(tb, table, sizeof(int) * np);
            dec_gpu_paginate(&p, sb.K, sb.V, tb, page, pps, kp, vp);
            dec_gpu_args_t a = { .k = kp, .v = vp, .table = tb, .page = page, .pages_per_seq = pps };
            float *O = NULL;
            drv_row_t r = sweep_time(o, &p, row_name("paged-p%d-S%d", page, Sp), "paged", &sb, &a, false, true, Sp, NULL, &O);
            r.speedup = rc.time_ms / r.time_ms;   /* against the contiguous cache */
            if (drv_passed(&r) && (!Oc || memcmp(O, Oc, nq * sizeof(float)) != 0))
                drv_fail(&r, "O differs from split-pack on the contiguous cache (must be bitwise equal)");
            r.hbm_model = r.hbm_formula = dec_hbm_traffic_gpu(&p, &(dec_cache_t){ .page = page }, r.blocks, Sp, true).total;
            fails += drv_failed(&r);
            drv_csv_row(D, &r);
            sweep_print(&r, copy);
            free(O); free(table);
            gpu_free(tb);
        }
        gpu_free(kp); gpu_free(vp);
        free(Oc);
    }
    gpu_free(sb.Q); gpu_free(sb.K); gpu_free(sb.V); gpu_free(sb.O); gpu_free(sb.L); gpu_free(sb.ws);
    return fails;
}
#endif

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
    printf("%s: sweep of the CPU model's bytes (counted up to L = %d, the formula beyond)\n", PHASE, SWEEP_COUNT_L);
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
    if (!D->gpu) printf("%s: GPU sweep skipped: %s\n", PHASE, D->why);
#if HAVE_CUDA
    else fails += run_gpu_sweep(D, o);
#endif
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
    drv_t D;          /* the run: its GPU (if any), the machine, the CSV */
    cli_opts_t o;
    cli_parse(argc, argv, &SPEC, &o);
    const char *fs = getenv("FA_SPLITS");
    if (fs && *fs) {
        char *end;
        long v = strtol(fs, &end, 10);
        if (*end != '\0' || v < 1 || v > 1024) cli_die(PHASE, "FA_SPLITS must be a number of splits from 1 to 1024, not '%s'", fs);
#if HAVE_CUDA
        splits_override = (int)v;
#endif
    }
    drv_start(&D, PHASE, &o);
    drv_csv_open(&D, &o, argc, argv, CSV_COLS);
    if (o.sweep) return run_sweep(&D, &o);

    drv_banner(&D, &o, "Flash-Decoding, KV cache split into S, combined by log-sum-exp");
    drv_row_t rows[ROWS_MAX];
    attn_problem_t pc = attn_small_like(&o.p, CPU_MAX_FLOPS);
    if (!o.quiet) attn_small_like_note(PHASE, &o.p, &pc, CPU_MAX_FLOPS);
    int n = run_cpu_rows(&pc, &o, rows), ncpu = n, S_split = 0, S_pack = 0, S_paged = 0;
#if HAVE_CUDA
    if (D.gpu) {
        attn_inputs_t in;
        drv_inputs(&in, &o.p, o.seed, false, PHASE);
        n += run_gpu_rows(&in, &o, rows + n, &S_split, &S_pack, &S_paged);
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
               "events, L2 flushed)\n", S_split, S_pack, S_paged, getenv("FA_SPLITS") && *getenv("FA_SPLITS") ? "(FA_SPLITS)" : "(the heuristic, decode.h)", o.iters);
        for (int k = ncpu + 1; k < n; k++)
            if (drv_passed(&rows[k]) && !isnan(rows[k].speedup))
                printf("  %-12s %.2fx phase 4's fa2-mma\n", rows[k].kernel, rows[k].speedup);
    }
    return drv_finish(&D, rows, n, o.quiet);
}
