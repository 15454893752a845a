/* decode_rows.c - phase 6's rows (main.c's table): the CPU models of Flash-Decoding on one
 * problem, and with a GPU the decode kernels on the whole problem, each checked (main.c's
 * header lists the rows and their checks). The --sweep is decode_sweep.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "decode_rows.h"
#include "fa2.h"
#include "naive.h"
#include "oracle.h"
#include "timer.h"

#define PHASE DEC_PHASE

static const int SPLITS[] = {1, 2, 4, 8, 16, 32};
static char fdpp_note[256];   /* the FD++ row's phi and recompute rate (main.c prints it) */
const char *dec_fdpp_note(void) { return fdpp_note; }
static char fdpp_gpu_note[256];   /* the same for the GPU's fdpp row */
const char *dec_fdpp_gpu_note(void) { return fdpp_gpu_note; }
static const int PAGES[] = {16, 64, 256};
#define PAGED_S DEC_PAGED_S

const char *dec_row_name(const char *fmt, int a, int b)
{
    static char names[512][32];
    static int next;
    char *s = names[next++ % 512];
    snprintf(s, sizeof names[0], fmt, a, b);
    return s;
}

dec_out_t dec_out_alloc(const attn_problem_t *p)
{
    dec_out_t o = { xmalloc(attn_q_elems(p) * sizeof(float), PHASE), xmalloc(attn_l_elems(p) * sizeof(float), PHASE) };
    poison_f32(o.O, attn_q_elems(p));
    poison_f32(o.L, attn_l_elems(p));
    return o;
}
void dec_out_free(dec_out_t *o) { free(o->O); free(o->L); }

/* One run of the split model (phi NULL) or FD++'s (phi, recomputed): timed, its counted bytes
 * against the closed form, its SRAM peak against dec_sram_bytes. */
static drv_row_t run_model(const attn_inputs_t *in, const dec_cache_t *c, int S, const float *phi, const char *name,
                           const char *sweep, dec_out_t *out, uint8_t *recomputed)
{
    const attn_problem_t *p = &in->p;
    drv_row_t r = drv_row(name, "cpu", sweep, p);
    r.blocks = fa2_mma_blocks(p->d);
    hbm_meter_t meter;
    hbm_reset(&meter);
    double t0 = now_seconds();
    size_t peak = phi ? dec_cpu_fdpp(in, c, r.blocks, S, *phi, out->O, out->L, &meter, recomputed)
                      : dec_cpu(in, c, r.blocks, S, out->O, out->L, &meter);
    r.time_ms = (now_seconds() - t0) * 1e3;
    r.hbm_model = (double)hbm_total(&meter);
    r.hbm_formula = phi ? dec_fdpp_hbm_bytes(p, c, r.blocks, S, recomputed, NULL) : decode_hbm_bytes(p, c, r.blocks, S);
    if (r.hbm_model != r.hbm_formula)
        drv_fail(&r, "counted %.0f HBM bytes, %s says %.0f", r.hbm_model,
                 phi ? "decode_hbm_bytes + the recomputed rows'" : "decode_hbm_bytes", r.hbm_formula);
    if (peak != dec_sram_bytes(p->d, r.blocks, S))
        drv_fail(&r, "SRAM peak %zu, dec_sram_bytes says %zu", peak, dec_sram_bytes(p->d, r.blocks, S));
    drv_blame(&r, "dec.split_range");
    dec_check_split_range(&r, p->N_kv, r.blocks.Bc, S);
    return r;
}

drv_row_t dec_run_split(const attn_inputs_t *in, const dec_cache_t *c, int S, const char *name,
                        const char *sweep, dec_out_t *out)
{
    return run_model(in, c, S, NULL, name, sweep, out, NULL);
}

drv_row_t dec_run_fdpp(const attn_inputs_t *in, const dec_cache_t *c, int S, float phi, const char *name,
                       const char *sweep, dec_out_t *out, uint8_t *recomputed)
{
    return run_model(in, c, S, &phi, name, sweep, out, recomputed);
}

int dec_cpu_rows(const attn_problem_t *pc, const cli_opts_t *o, drv_row_t *rows)
{
    int n = 0;
    attn_inputs_t in;
    drv_inputs(&in, pc, o->seed, false, PHASE);
    const size_t nq = attn_q_elems(pc);
    /* phase 4's FA2 model on the decode shape: the previous phase, and the reference the
     * split rows are held to (REF: its solution in an exercise build, common/ref.h) */
    dec_out_t o4 = dec_out_alloc(pc);
    {
        drv_row_t r = drv_row("fa2-model", "cpu", "-", pc);
        r.blocks = fa2_mma_blocks(pc->d);
        hbm_meter_t meter;
        hbm_reset(&meter);
        double t0 = now_seconds();
        REF(fa2_cpu)(&in, r.blocks, o4.O, o4.L, &meter, NULL);
        r.time_ms = (now_seconds() - t0) * 1e3;
        r.hbm_model = (double)hbm_total(&meter);
        r.hbm_formula = REF(fa2_hbm_bytes)(pc, r.blocks);   /* phase 4 may be a student's: common/ref.h */
        if (r.hbm_model != r.hbm_formula) drv_fail(&r, "counted %.0f HBM bytes, fa2_hbm_bytes says %.0f", r.hbm_model, r.hbm_formula);
        oracle_check_cpu_row(&r, &in, o4.O, o4.L, NULL, NULL);
        rows[n++] = r;
    }
    /* the split model, S = 1, 2, 4, ...; split-S4 kept for the paged rows */
    dec_out_t o4s = dec_out_alloc(pc);
    for (size_t k = 0; k < sizeof SPLITS / sizeof SPLITS[0]; k++) {
        const int S = SPLITS[k];
        dec_out_t out = S == PAGED_S ? o4s : dec_out_alloc(pc);
        drv_row_t r = dec_run_split(&in, NULL, S, dec_row_name("split-S%d", S, 0), "-", &out);
        if (S > 1) dec_check_combine(&r);   /* partials whose L_s are far apart */
        oracle_check_cpu_row(&r, &in, out.O, out.L, "dec.split_range, dec.combine", "dec.split_range, dec.combine");
        drv_compare_prev(&r, "phase 4's FA2 model", out.O, o4.O, nq, tol_cpu_rel_l2(pc->N_kv));
        drv_blame(&r, "dec.split_range, dec.combine");
        if (S == PAGED_S) drv_dump(o, &in, out.O, out.L, PHASE);
        else dec_out_free(&out);
        rows[n++] = r;
    }
    /* FlashDecoding++'s unified max (decode.h), S = PAGED_S, phi calibrated from the inputs:
     * held to the oracle and to split-S4; its bytes are split-S4's plus each recomputed row's */
    {
        dec_out_t out = dec_out_alloc(pc);
        const float phi = o->phi_given ? o->phi : dec_phi_calibrate(&in, NULL);   /* --phi, or from the inputs */
        const size_t nl = attn_l_elems(pc);
        uint8_t *redo = xmalloc(nl, PHASE);
        drv_row_t r = dec_run_fdpp(&in, NULL, PAGED_S, phi, dec_row_name("fdpp-S%d", PAGED_S, 0), "-", &out, redo);
        long n_redo = 0;
        for (size_t k = 0; k < nl; k++) n_redo += redo[k];
        dec_check_fdpp(&r);   /* its window and fallback, which no exercise holds, first */
        oracle_check_cpu_row(&r, &in, out.O, out.L, "dec.split_range", "dec.split_range");
        /* against the reference's split-S4 (REF: never the student's combine, common/ref.h) */
        dec_out_t r4 = dec_out_alloc(pc);
        REF(dec_cpu)(&in, NULL, r.blocks, PAGED_S, r4.O, r4.L, NULL);
        drv_compare_prev(&r, "split-S4", out.O, r4.O, nq, tol_cpu_rel_l2(pc->N_kv));
        drv_blame(&r, "dec.split_range");
        dec_out_free(&r4);
        snprintf(fdpp_note, sizeof fdpp_note, "fdpp-S%d: phi = %.3f (%s); %ld of %zu rows "
                 "left the window [phi - %.0f, phi + %.0f] and were recomputed (%.2f%%)", PAGED_S, (double)phi,
                 o->phi_given ? "given by --phi" : "calibrated from the inputs' scores", n_redo, nl,
                 (double)DEC_PHI_BELOW, (double)DEC_PHI_ABOVE, 100.0 * (double)n_redo / (double)nl);
        free(redo);
        dec_out_free(&out);
        rows[n++] = r;
    }
    /* a paged cache, pages shuffled in the pool: the same bits as the contiguous S = 4 */
    for (size_t k = 0; k < sizeof PAGES / sizeof PAGES[0]; k++) {
        dec_paged_t pg;
        if (dec_paged_make(&pg, &in, PAGES[k], NULL, o->seed + 1) != 0) { fprintf(stderr, "%s: out of host memory\n", PHASE); exit(1); }
        dec_out_t out = dec_out_alloc(pc);
        drv_row_t r = dec_run_split(&in, &pg.c, PAGED_S, dec_row_name("paged-p%d-S%d", PAGES[k], PAGED_S), "-", &out);
        dec_check_combine(&r);   /* as the contiguous S = 4's (same partials) */
        if (pg.faults) drv_fail(&r, "%ld key rows looked up outside the page pool", pg.faults);
        const bool differs = memcmp(out.O, o4s.O, nq * sizeof(float)) != 0 || memcmp(out.L, o4s.L, attn_l_elems(pc) * sizeof(float)) != 0;
        if (differs) drv_fail(&r, "O or L differs from split-S%d on the contiguous cache (same keys, same order)", PAGED_S);
        if (pg.faults || differs) dec_blame_also(&r, "dec.page_lookup");
        oracle_check_cpu_row(&r, &in, out.O, out.L, "dec.page_lookup, dec.combine", "dec.page_lookup, dec.combine");
        drv_compare_prev(&r, "phase 4's FA2 model", out.O, o4.O, nq, tol_cpu_rel_l2(pc->N_kv));
        dec_out_free(&out);
        dec_paged_free(&pg);
        rows[n++] = r;
    }
    dec_out_free(&o4); dec_out_free(&o4s);
    attn_inputs_free(&in);

    /* ragged: B = 4 sequences of L, L/2 + 1, 0 and 1 keys, contiguous and paged */
    attn_problem_t pr = *pc;
    pr.B = 4;
    const int lens[4] = {pc->N_kv, pc->N_kv / 2 + 1, 0, 1};
    drv_inputs(&in, &pr, o->seed, false, PHASE);
    const size_t rq = attn_q_elems(&pr), rl = attn_l_elems(&pr);
    double *Oref = xmalloc(rq * sizeof(double), PHASE), *Lref = xmalloc(rl * sizeof(double), PHASE);
    if (dec_oracle_ragged(&in, lens, Oref, Lref) != 0) { fprintf(stderr, "%s: out of host memory\n", PHASE); exit(1); }
    float *Oc = NULL;   /* the contiguous row's O: the paged one must equal it bit for bit */
    for (int paged = 0; paged <= 1; paged++) {
        dec_paged_t pg;
        dec_cache_t c = { .seqlens_k = lens };
        if (paged && dec_paged_make(&pg, &in, 16, lens, o->seed + 2) != 0) { fprintf(stderr, "%s: out of host memory\n", PHASE); exit(1); }
        dec_out_t out = dec_out_alloc(&pr);
        drv_row_t r = dec_run_split(&in, paged ? &pg.c : &c, PAGED_S,
                                paged ? dec_row_name("ragged-p16-S%d", PAGED_S, 0) : dec_row_name("ragged-S%d", PAGED_S, 0), "-", &out);
        dec_check_combine(&r);   /* partials whose L_s are far apart (and rows with no key) */
        if (paged && pg.faults) drv_fail(&r, "%ld key rows looked up outside the page pool", pg.faults);
        const bool differs = paged && memcmp(out.O, Oc, rq * sizeof(float)) != 0;   /* same keys, same order */
        if (differs) drv_fail(&r, "O differs from ragged-S%d on the contiguous cache (same keys, same order)", PAGED_S);
        if (paged && (pg.faults || differs)) dec_blame_also(&r, "dec.page_lookup");
        /* the contiguous row passed on the same keys: only the page lookup differs */
        const char *ex = !paged ? "dec.split_range, dec.combine"
                       : drv_passed(&rows[n - 1]) ? "dec.page_lookup" : "dec.split_range, dec.page_lookup, dec.combine";
        drv_compare(&r, "vs oracle (per sequence)", "O", out.O, Oref, rq, pr.d, tol_cpu_keys(pr.N_kv), true, ex);
        drv_compare(&r, "vs oracle (per sequence)", "L", out.L, Lref, rl, pr.N_q, tol_cpu_keys(pr.N_kv), false, ex);
        drv_blame(&r, ex);
        if (paged) dec_out_free(&out);
        else { Oc = out.O; free(out.L); }
        if (paged) dec_paged_free(&pg);
        rows[n++] = r;
    }
    free(Oc); free(Oref); free(Lref);
    attn_inputs_free(&in);
    return n;
}

/* FA_SPLITS, FA_SPLIT_UNIT: set by main.c (parsed before any allocation) */
static int splits_override;
static bool unit_slots = true;
void dec_set_splits(int S) { splits_override = S; }
void dec_set_split_unit(bool slots) { unit_slots = slots; }
bool dec_split_unit_slots(void) { return unit_slots; }

#if HAVE_CUDA
/* ---- the GPU rows ---------------------------------------------------------------------- */
#define CHECK_ROWS 512           /* oracle rows checked per GPU run (all of a decode shape) */

void dec_launch(void *ctx)
{
    const dec_launch_t *x = ctx;
    if (x->fa2) REF_GPU(fa2_mma_launch)(&x->p, FA2_FULL, x->a.q, x->a.k, x->a.v, x->a.o, x->a.L);
    else if (x->fdpp) dec_gpu_launch_fdpp(&x->p, &x->a, x->S, x->phi);
    else dec_gpu_launch(&x->p, &x->a, x->pack, x->S);
}


/* the heuristic's S for the kernel that runs (paged: its own occupancy, decode.h) */
int dec_pick_splits(const attn_problem_t *p, bool pack, bool paged)
{
    if (splits_override > 0) return splits_override;
    return dec_num_splits(p, pack, dec_split_units(p, pack, paged, unit_slots));
}

/* The heuristic's unit: FA2's slots (SMs x the kernel's blocks per SM, the default), or the
 * SM (FA_SPLIT_UNIT=sm). The SM was tried on the idea that an SM streams its share of HBM
 * with one block as well as with two; measured on the H100 it picks fewer splits that run
 * 3-7% slower at B = 1 GQA and B = 8 GQA (the sweep's vsS and vsSb parts show both picks). */
int dec_split_units(const attn_problem_t *p, bool pack, bool paged, bool slots)
{
    return slots ? dec_gpu_slots(p->d, paged, dec_gpu_block_rows(p, pack)) : dec_gpu_sms();
}

static const int *ragged_lens;   /* the ragged rows' check (drv_check_fn has no context) */
static void check_ragged(drv_row_t *r, const attn_inputs_t *in, const float *O, const float *L, int rows)
{
    dec_check_ragged_fp16(r, in, ragged_lens, O, L, rows);
}

/* One decode kernel (or phase 4's) on the buffers b: its bytes, then the checked-then-timed
 * run (poisoned outputs and partials). keep: its O and L on the host when it passed.
 * phi: FlashDecoding++ with this unified max (pack; its bytes add the recomputed rows'
 * after the run), NULL: the split kernels. */
static drv_row_t run_dec_phi(const char *name, const attn_inputs_t *in, const drv_gpu_bufs_t *b, const dec_cache_t *hc,
                             dec_gpu_args_t a, bool fa2, bool pack, int S, const drv_prev_t *prev, int nprev,
                             drv_check_fn check, int iters, float **keepO, float **keepL, const char *exercises,
                             const float *phi)
{
    const attn_problem_t *p = &in->p;
    drv_row_t r = drv_row(name, "gpu", "-", p);
    gpu_kernel_config_t cfg;
    char why[200];
    int rc = fa2 ? REF_GPU(fa2_mma_config)(p->d, &cfg, why, sizeof why) : dec_gpu_config(p->d, &cfg, why, sizeof why);
    if (rc == 0 && !fa2 && p->N_q > DEC_GPU_MAX_NQ) {
        snprintf(why, sizeof why, "the decode kernels take N_q <= %d (phase 4's fa2-mma is the kernel for more)", DEC_GPU_MAX_NQ);
        rc = -1;
    }
    if (rc == 0 && fa2 && !REF_GPU_ON) { snprintf(why, sizeof why, "an earlier phase's kernel is not run in an exercise build"); rc = -1; }
    if (rc != 0) { drv_not_run(&r, rc < 0 ? "n/a" : "skipped", why); return r; }
    r.blocks = cfg.blocks;
    r.hbm_model = r.hbm_formula = fa2 ? REF(fa2_hbm_bytes)(p, cfg.blocks) : dec_hbm_traffic_gpu(p, hc, cfg.blocks, S, pack).total;
    a.q = b->Q; a.o = b->O; a.L = b->L;
    if (!hc || hc->page == 0) { a.k = b->K; a.v = b->V; }
    const size_t ws_bytes = phi ? dec_gpu_fdpp_workspace_bytes(p, S) : dec_gpu_workspace_bytes(p, S);
    a.ws = ws_bytes ? gpu_malloc(ws_bytes) : NULL;
    if (a.ws) gpu_poison_f32(a.ws, ws_bytes / sizeof(float));   /* an unwritten partial is NaN */
    dec_launch_t x = { *p, fa2, pack, S, a, phi != NULL, phi ? *phi : 0.0f };
    float *O = NULL;
    drv_visits_t vis;   /* the K/V tiles each split must visit (fa2-mma: each Q block's K/V blocks) */
    if (fa2) fa2_visits_want(&vis, p, cfg.blocks, true, NULL);
    else dec_visits_want(&vis, p, hc ? hc->seqlens_k : NULL, cfg.blocks.Bc, pack, S);
    drv_gpu_run_t how = { dec_launch, &x, DRV_OUT_O_L, NULL, check, CHECK_ROWS, prev, nprev, 2, iters, false, &O, &vis };
    drv_gpu_run(&r, in, b, &how);
    drv_visits_free(&vis);
    if (phi && r.time_ms > 0) {   /* FD++: one more launch to read the rows it recomputes (a sum over launches otherwise) */
        const size_t nl = attn_l_elems(p);
        uint8_t *flags = xmalloc(nl, PHASE);
        dec_gpu_fdpp_recomputed(NULL, 0);
        dec_launch(&x);
        gpu_sync();
        const long nre = dec_gpu_fdpp_recomputed(flags, nl);
        r.hbm_model = r.hbm_formula = dec_fdpp_hbm_bytes_gpu(p, hc, cfg.blocks, S, flags);
        snprintf(fdpp_gpu_note, sizeof fdpp_gpu_note, "%s: phi = %.3f; %ld of %zu rows recomputed (%.2f%%)", name, *phi, nre,
                 nl, 100.0 * (double)nre / (double)nl);
        free(flags);
    }
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

static drv_row_t run_dec(const char *name, const attn_inputs_t *in, const drv_gpu_bufs_t *b, const dec_cache_t *hc,
                         dec_gpu_args_t a, bool fa2, bool pack, int S, const drv_prev_t *prev, int nprev,
                         drv_check_fn check, int iters, float **keepO, float **keepL, const char *exercises)
{
    return run_dec_phi(name, in, b, hc, a, fa2, pack, S, prev, nprev, check, iters, keepO, keepL, exercises, NULL);
}

/* A paged run whose page lookups left the pool (counted in an exercise build) FAILs. */
static void gpu_faults(drv_row_t *r)
{
    const int f = dec_gpu_page_faults();
    if (f) drv_fail(r, "%d pool pages looked up out of range (read as page 0)", f);
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

int dec_gpu_rows(const attn_inputs_t *in, const cli_opts_t *o, drv_row_t *rows, int *S_split, int *S_pack,
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
    if (EX_BUILD_ON && attn_flops_fwd(p) <= DEC_CPU_MAX_FLOPS) {
        O4 = xmalloc(nq * sizeof(float), PHASE);
        float *L4 = xmalloc(nl * sizeof(float), PHASE);
        REF(fa2_cpu)(in, fa2_mma_blocks(p->d), O4, L4, NULL, NULL);
        free(L4);
    }
    drv_prev_t prev = { O4, EX_BUILD_ON ? "phase 4's FA2 model" : "phase 4's fa2-mma" };
    const int nprev = O4 ? 1 : 0;
    if (cli_kernel_selected(o, "fa2-mma")) rows[n++] = r4;
    const bool dec_ok = p->N_q <= DEC_GPU_MAX_NQ && (p->d == 32 || p->d == 64 || p->d == 128 || p->d == 256);
    *S_split = dec_ok ? dec_pick_splits(p, false, false) : 1;
    *S_pack = dec_ok ? dec_pick_splits(p, true, false) : 1;
    const int S_paged = *S_paged_out = dec_ok ? dec_pick_splits(p, true, true) : 1;
    const char *EX_SPLIT = "dec.split_range_gpu, dec.combine_gpu";
    if (cli_kernel_selected(o, "split")) {
        rows[n++] = run_dec("split", in, &b, NULL, a0, false, false, *S_split, &prev, nprev, attn_check_fp16, o->iters, NULL, NULL, EX_SPLIT);
        if (drv_passed(&rows[n - 1])) dec_check_combine_gpu(&rows[n - 1]);   /* partials whose L_s are far apart */
    }
    /* split-pack: its O and L, at the paged kernel's S, are what the paged rows must equal
     * bit for bit (a second, unshown run when the paged kernel's S differs) */
    float *Os = NULL, *Ls = NULL, *Op2 = NULL, *Lp2 = NULL;   /* split-pack at its own S; at the paged S when it differs */
    const bool want_paged = cli_kernel_selected(o, "paged"), want_fused = cli_kernel_selected(o, "fused");
    if (cli_kernel_selected(o, "split-pack") || want_paged || want_fused) {
        drv_row_t r = run_dec("split-pack", in, &b, NULL, a0, false, true, *S_pack, &prev, nprev, attn_check_fp16, o->iters,
                              &Os, &Ls, EX_SPLIT);
        if (cli_kernel_selected(o, "split-pack")) rows[n++] = r;
        if (want_paged && S_paged != *S_pack)
            run_dec("split-pack", in, &b, NULL, a0, false, true, S_paged, &prev, nprev, attn_check_fp16, 1, &Op2, &Lp2, EX_SPLIT);
    }
    const float *Op = S_paged == *S_pack ? Os : Op2, *Lp = S_paged == *S_pack ? Ls : Lp2;   /* what the paged rows must equal */
    /* fused: split-pack with the combine in the split kernel's last block of each row tile
     * (decode.h), at split-pack's S: the same arithmetic in the same order, so bitwise equal */
    if (want_fused) {
        const size_t done_bytes = (size_t)dec_gpu_done_ints(p, true) * sizeof(int);
        dec_gpu_args_t a = a0;
        a.done = gpu_malloc(done_bytes);
        gpu_zero(a.done, done_bytes);
        float *O = NULL, *L = NULL;
        drv_row_t r = run_dec("fused", in, &b, NULL, a, false, true, *S_pack, &prev, nprev, attn_check_fp16, o->iters, &O, &L, EX_SPLIT);
        if (*S_pack > 1) same_bits(&r, O, Os, L, Ls, nq, nl, "split-pack at the same S");
        rows[n++] = r;
        free(O); free(L);
        gpu_free(a.done);
    }
    /* FlashDecoding++ at split-pack's S: phi given (--phi) or calibrated as the CPU row's */
    if (cli_kernel_selected(o, "fdpp")) {
        const float phi = o->phi_given ? (float)o->phi : dec_phi_calibrate(in, NULL);
        rows[n++] = run_dec_phi("fdpp", in, &b, NULL, a0, false, true, *S_pack, &prev, nprev, attn_check_fp16, o->iters,
                                NULL, NULL, NULL, &phi);
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
        drv_row_t r = run_dec(dec_row_name("paged-p%d", PAGES[k], 0), in, &b, &pg.c, a, false, true, S_paged, &prev, nprev,
                              attn_check_fp16, o->iters, &O, &L, NULL);
        gpu_faults(&r);
        same_bits(&r, O, Op, L, Lp, nq, nl, "split-pack on the contiguous cache");
        /* split-pack passed on the same keys (Lp kept): only the page lookup differs */
        drv_blame(&r, Lp ? "dec.page_lookup_gpu" : "dec.page_lookup_gpu, dec.split_range_gpu, dec.combine_gpu");
        rows[n++] = r;
        free(O); free(L);
        gpu_free(kp); gpu_free(vp); gpu_free(tb);
        dec_paged_free(&pg);
    }
    free(Os); free(Ls); free(Op2); free(Lp2); free(O4);
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
        const int S = dec_pick_splits(&pr, true, false);   /* one S for all three: bitwise compared */
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
                               NULL);
        gpu_faults(&rp);
        same_bits(&rp, Opg, Oc, Lpg, Lc, rq, rl, "ragged on the contiguous cache");
        drv_blame(&rp, drv_passed(&r) ? "dec.page_lookup_gpu" : "dec.page_lookup_gpu, dec.split_range_gpu, dec.combine_gpu");
        rows[n++] = rp;
        free(Of); free(Lf); free(Oc); free(Lc); free(Opg); free(Lpg);
        gpu_free(kp); gpu_free(vp); gpu_free(tb); gpu_free(lens_d);
        dec_paged_free(&pg);
        drv_gpu_free(&br);
        attn_inputs_free(&inr);
    }
    return n;
}

#endif
