/* decode_sweep.c - phase 6's --sweep, as tables of points run by common/sweep.c:
 *
 *   vsL, vsS (CPU)   the split model's bytes vs the cache length L (S = 1, 8, 32, beside
 *                    phase 4's FA2) and vs the number of splits S, counted up to
 *                    L = SWEEP_COUNT_L (on the problem of the options, within the bound on
 *                    CPU work), the formula beyond;
 *   vsL (GPU)        time and GB/s vs L (B = 1, 8; H = 32; H_kv = 32, 8; d = 128;
 *                    L = 1k..256k) of fa2-mma, split, split-pack, fdpp: the peers' points;
 *   vsS (GPU)        time vs S with the heuristic's pick (B = 1, GQA 32:8, L = 16k, 64k);
 *   paged (GPU)      paged vs contiguous (split-pack, GQA 32:8, L = 64k, B = 1 and 8);
 *   vsNq (GPU)       several query tokens a step: N_q = 1..16 (B = 1, 8; GQA 32:8; L = 16k),
 *                    the rows of vsL: the peers' points too.
 * vsL and vsNq time FlashDecoding++ (fdpp) and fused (the combine in the split kernel)
 * beside split-pack at the same S.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "decode_rows.h"
#include "fa2.h"
#include "sweep.h"

#define PHASE         DEC_PHASE
#define SWEEP_COUNT_L 8192         /* the sweep counts bytes up to this L, formula beyond */
/* The bound on a CPU point's problem (it runs 3 or 8 times, on one draw of inputs): the
 * default problem's L = 8192 point (B = 1, H = 32/8, N_q = 1, d = 128) is within it; the
 * whole CPU sweep then ends in a few seconds whatever the options. */
#define SWEEP_CPU_FLOPS 1.5e8

/* ---- the CPU model's bytes -------------------------------------------------------------- */
static const int VSL_S[] = {1, 8, 32};

static drv_row_t formula_row(const attn_problem_t *p, int S, const char *sweep)
{
    drv_row_t r = drv_row(dec_row_name("formula-S%d", S, 0), "cpu", sweep, p);
    r.blocks = fa2_mma_blocks(p->d);
    r.hbm_formula = decode_hbm_bytes(p, NULL, r.blocks, S);
    return r;
}

/* The split model at each S of Ss on the point's problem (within the bound), one input
 * draw for all; beyond SWEEP_COUNT_L the formula alone. */
static int split_rows(sweep_t *s, const sweep_point_t *pt, const int *Ss, int nS, drv_row_t *rows)
{
    const char *sweep = s->part->name;
    if (pt->p.N_kv > SWEEP_COUNT_L) {
        for (int k = 0; k < nS; k++) rows[k] = formula_row(&pt->p, Ss[k], sweep);
        return nS;
    }
    const attn_problem_t q = sweep_cpu_problem(s, &pt->p);
    attn_inputs_t in;
    drv_inputs(&in, &q, s->o->seed, false, PHASE);
    for (int k = 0; k < nS; k++) {
        dec_out_t out = dec_out_alloc(&q);
        rows[k] = dec_run_split(&in, NULL, Ss[k], dec_row_name("split-S%d", Ss[k], 0), sweep, &out);
        dec_out_free(&out);
    }
    attn_inputs_free(&in);
    return nS;
}

static int vsL_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows)
{
    return split_rows(s, pt, VSL_S, 3, rows);
}

static void vsL_line(sweep_t *s, const sweep_point_t *pt, const drv_row_t *rows, int n)
{
    (void)s; (void)pt;
    const double f4 = REF(fa2_hbm_bytes)(&rows[0].p, rows[0].blocks);   /* FA2 on the problem the rows ran */
    printf("  sweep vsL L=%6d  fa2 %.0f", rows[0].p.N_kv, f4);
    for (int k = 0; k < n; k++)
        printf("  S=%d %.0f (%s, +%.2f%%)", VSL_S[k], rows[k].hbm_formula, isnan(rows[k].hbm_model) ? "formula" : rows[k].verdict,
               100.0 * (rows[k].hbm_formula / f4 - 1.0));
    printf("\n");
}

static int vsS_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows)
{
    static const int SS[] = {1, 2, 4, 8, 16, 32, 64, 128};
    return split_rows(s, pt, SS, 8, rows);
}

static void vsS_line(sweep_t *s, const sweep_point_t *pt, const drv_row_t *rows, int n)
{
    (void)s; (void)pt;
    for (int k = 0; k < n; k++) {
        const int S = 1 << k;
        dec_traffic_t t = dec_hbm_traffic(&rows[k].p, NULL, rows[k].blocks, S);
        printf("  sweep vsS L=%6d S=%3d  HBM %.0f  partials %.0f (%.2f%% of it)  %s\n", rows[k].p.N_kv, S, t.total,
               t.write_part + t.read_part, 100.0 * (t.write_part + t.read_part) / t.total,
               isnan(rows[k].hbm_model) ? "formula" : rows[k].verdict);
    }
}

#if HAVE_CUDA
/* ---- the GPU sweep ----------------------------------------------------------------------
 * Inputs made on the device (dec_gpu_fill: at B = 8, L = 256k the cache is 34 GB, which the
 * host would take minutes to draw); every point's split and split-pack outputs are checked
 * against phase 4's fa2-mma on the same inputs (rel L2 < 3e-3, no NaN) before they are
 * timed; the oracle checks are the default run's and the tests'. */
#define SWEEP_LMAX (256 * 1024)
#define SWEEP_D    128
#define SWEEP_H    32
#define SWEEP_NQMAX 16   /* the vsNq part's most query tokens */

typedef struct { void *Q, *K, *V; float *O, *L, *ws; int *done; size_t kv_elems; double copy, read; int slots; } sweep_bufs_t;
#define SWEEP_DONE_INTS 4096   /* the fused combine's counters: B x groups x row tiles <= 8 x 32 x 16 */
static sweep_bufs_t sb;

static void gpu_begin(sweep_t *s)
{
    const int d = SWEEP_D, H = SWEEP_H;
    sb.kv_elems = (size_t)8 * H * SWEEP_LMAX * d;   /* the largest point: B = 8, MHA */
    const size_t rows = (size_t)8 * H * SWEEP_NQMAX;   /* query rows of the largest point: B = 8, N_q = 16 */
    sb.Q = gpu_malloc(rows * 2 * d);
    sb.K = gpu_malloc(sb.kv_elems * 2);
    sb.V = gpu_malloc(sb.kv_elems * 2);
    sb.O = gpu_malloc(rows * d * 4);
    sb.L = gpu_malloc(rows * 4);
    sb.ws = gpu_malloc(dec_gpu_workspace_bytes(&(attn_problem_t){ .B = 8, .H = H, .N_q = SWEEP_NQMAX, .d = d }, 128));
    sb.done = gpu_malloc(SWEEP_DONE_INTS * sizeof(int));
    gpu_zero(sb.done, SWEEP_DONE_INTS * sizeof(int));
    dec_gpu_fill(sb.Q, rows * d, s->o->seed);
    dec_gpu_fill(sb.K, sb.kv_elems, s->o->seed + 1);
    dec_gpu_fill(sb.V, sb.kv_elems, s->o->seed + 2);
    sb.copy = s->D->mi.copy_gbps > 0 ? s->D->mi.copy_gbps : gpu_copy_bandwidth_gbps();
    sb.slots = dec_gpu_slots(d, false, DEC_GPU_ROWS);
    sb.read = gpu_read_bandwidth_gbps();
    printf("%s: GPU sweep: d = 128, N_q = 1, H = 32; %d split blocks fit the GPU at once; copy bandwidth %.0f GB/s, "
           "read bandwidth %.0f GB/s (the roof: a streaming read kernel)\n", PHASE, sb.slots, sb.copy, sb.read);
}

static void gpu_end(sweep_t *s)
{
    (void)s;
    gpu_free(sb.Q); gpu_free(sb.K); gpu_free(sb.V); gpu_free(sb.O); gpu_free(sb.L); gpu_free(sb.ws); gpu_free(sb.done);
}

/* One timed point: the median of o->iters CUDA-event runs after 2 warm-ups (L2 flushed).
 * phi: FlashDecoding++ (fdpp) with this unified max; NULL: the split kernels or fa2-mma. */
static drv_row_t sweep_time_phi(const cli_opts_t *o, const attn_problem_t *p, const char *kernel, const char *sweep,
                                const dec_gpu_args_t *ca, bool fa2, bool pack, int S, const float *O4, float **keep,
                                const float *phi)
{
    drv_row_t r = drv_row(kernel, "gpu", sweep, p);
    r.blocks = fa2_mma_blocks(p->d);
    r.hbm_model = r.hbm_formula = fa2 ? REF(fa2_hbm_bytes)(p, r.blocks)
                                : phi ? dec_fdpp_hbm_bytes_gpu(p, NULL, r.blocks, S, NULL)
                                      : dec_hbm_traffic_gpu(p, NULL, r.blocks, S, pack).total;
    dec_gpu_args_t a = ca ? *ca : (dec_gpu_args_t){ 0 };
    a.q = sb.Q; a.o = sb.O; a.L = sb.L; a.ws = sb.ws;
    if (!ca) { a.k = sb.K; a.v = sb.V; }
    dec_launch_t x = { *p, fa2, pack, S, a, phi != NULL, phi ? *phi : 0.0f };
    const size_t nq = attn_q_elems(p);
    gpu_poison_f32(sb.O, nq);
    if (phi) dec_gpu_fdpp_recomputed(NULL, 0);
    dec_launch(&x);
    gpu_sync();
    if (phi) {   /* FD++: the rows this launch recomputed (their bytes are not in the row's) */
        const long nre = dec_gpu_fdpp_recomputed(NULL, 0);
        if (nre) printf("  sweep %s B=%d L=%d: %ld of %zu rows recomputed (phi = %.2f)\n", kernel, p->B, p->N_kv, nre,
                        attn_l_elems(p), *phi);
    }
    float *O = xmalloc(nq * sizeof(float), PHASE);
    gpu_download(O, sb.O, nq * sizeof(float));
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

static drv_row_t sweep_time(const cli_opts_t *o, const attn_problem_t *p, const char *kernel, const char *sweep,
                            const dec_gpu_args_t *ca, bool fa2, bool pack, int S, const float *O4, float **keep)
{
    return sweep_time_phi(o, p, kernel, sweep, ca, fa2, pack, S, O4, keep, NULL);
}

static void gpu_line(sweep_t *s, const sweep_point_t *pt, const drv_row_t *rows, int n)
{
    (void)s; (void)pt;
    for (int k = 0; k < n; k++) {
        const drv_row_t *r = &rows[k];
        const double gbs = r->hbm_model / (r->time_ms * 1e-3) / 1e9;
        printf("  sweep %-8s B=%d H=%d/%-2d L=%6d %-18s %9.1f us %7.0f GB/s (%3.0f%% of read, %3.0f%% of copy)  speedup %-6.2f %s\n",
               r->sweep, r->p.B, r->p.H, r->p.H_kv, r->p.N_kv, r->kernel, r->time_ms * 1e3, gbs, 100.0 * gbs / sb.read,
               100.0 * gbs / sb.copy, r->speedup, r->verdict);
    }
}

/* 1. time and GB/s vs L: fa2-mma, split, split-pack, FlashDecoding++ and fused (split-pack
 * with the combine in the split kernel) at split-pack's S.
 * FD++'s phi: 0, as calibrated offline for these inputs (uniform in [-2, 2), d = 128:
 * scores of standard deviation 1.33 and row maxima below 10 at every L here, inside the
 * window [phi - 6, phi + 10]); the rows it recomputes, if any, are printed */
static int gpu_vsL_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *r)
{
    const attn_problem_t *p = &pt->p;
    const char *part = s->part->name;   /* vsL, or vsNq (the same rows, N_q = 1..16) */
    float *O4 = NULL;
    const int S1 = dec_pick_splits(p, false, false), S2 = dec_pick_splits(p, true, false);
    const float phi = 0.0f;
    r[0] = sweep_time(s->o, p, "fa2-mma", part, NULL, true, false, 1, NULL, &O4);
    r[1] = sweep_time(s->o, p, dec_row_name("split-S%d", S1, 0), part, NULL, false, false, S1, O4, NULL);
    r[2] = sweep_time(s->o, p, dec_row_name("split-pack-S%d", S2, 0), part, NULL, false, true, S2, O4, NULL);
    r[3] = sweep_time_phi(s->o, p, dec_row_name("fdpp-S%d", S2, 0), part, NULL, false, true, S2, O4, NULL, &phi);
    const dec_gpu_args_t fused = { .k = sb.K, .v = sb.V, .done = sb.done };   /* the combine in the split kernel */
    if (dec_gpu_done_ints(p, true) > SWEEP_DONE_INTS) { fprintf(stderr, "%s: sweep: the fused combine needs more counters\n", PHASE); exit(1); }
    r[4] = sweep_time(s->o, p, dec_row_name("fused-S%d", S2, 0), part, &fused, false, true, S2, O4, NULL);
    for (int k = 0; k < 5; k++) r[k].speedup = r[0].time_ms / r[k].time_ms;
    free(O4);
    return 5;
}

/* 2. time vs S (split-pack) against fa2-mma (timed, not a row); the heuristic's pick is
 * the row of sweep "<part>-pick", and the pick of the other unit (decode_rows.c's
 * dec_split_units: SMs or FA2's slots) the row "<part>-pick-slots" (or "-pick-sm").
 * Parts vsS (B = 1, GQA, L = 16k and 64k: the chapter's plot) and vsSb (other shapes). */
static int gpu_vsS_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows)
{
    const attn_problem_t *p = &pt->p;
    const char *part = s->part->name;
    static char pick[32], other[32];
    const bool slots = dec_split_unit_slots();
    snprintf(pick, sizeof pick, "%s-pick", part);
    snprintf(other, sizeof other, "%s-pick-%s", part, slots ? "sm" : "slots");
    float *O4 = NULL;
    drv_row_t r4 = sweep_time(s->o, p, "fa2-mma", part, NULL, true, false, 1, NULL, &O4);
    sweep_count(s, &r4);
    int n = 0;
    for (int S = 1; S <= 128; S *= 2)
        rows[n++] = sweep_time(s->o, p, dec_row_name("split-pack-S%d", S, 0), part, NULL, false, true, S, O4, NULL);
    const int S = dec_pick_splits(p, true, false);
    rows[n++] = sweep_time(s->o, p, dec_row_name("split-pack-S%d", S, 0), pick, NULL, false, true, S, O4, NULL);
    const int So = dec_num_splits(p, true, dec_split_units(p, true, false, !slots));
    rows[n++] = sweep_time(s->o, p, dec_row_name("split-pack-S%d", So, 0), other, NULL, false, true, So, O4, NULL);
    for (int k = 0; k < n; k++) rows[k].speedup = r4.time_ms / rows[k].time_ms;
    free(O4);
    return n;
}

/* 3. paged vs contiguous: a pool of pages shuffled from the seed, made on the device from
 * the contiguous cache. Each kernel runs with its own heuristic's S (the paged one may fit
 * fewer blocks per SM); the speed-up is against the contiguous row, and each paged output
 * must be bitwise equal to the contiguous kernel's at the same S (that row shown too when
 * the S differ). */
static int gpu_paged_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows)
{
    const cli_opts_t *o = s->o;
    const attn_problem_t *p = &pt->p;
    const int d = p->d, S = dec_pick_splits(p, true, false), Sp = dec_pick_splits(p, true, true);
    int n = 0;
    float *Oc = NULL;
    drv_row_t rc = rows[n++] = sweep_time(o, p, dec_row_name("split-pack-S%d", S, 0), "paged", NULL, false, true, S, NULL, &Oc);
    rows[0].speedup = 1.0;
    if (Sp != S) {   /* the bitwise reference at the paged kernel's S */
        free(Oc);
        Oc = NULL;
        rows[n] = sweep_time(o, p, dec_row_name("split-pack-S%d", Sp, 0), "paged", NULL, false, true, Sp, NULL, &Oc);
        rows[n].speedup = rc.time_ms / rows[n].time_ms;
        n++;
    }
    const size_t kv = attn_kv_elems(p), nq = attn_q_elems(p);
    void *kp = gpu_malloc(kv * 2 + 256 * 8 * d * 2), *vp = gpu_malloc(kv * 2 + 256 * 8 * d * 2);
    for (int page = 16; page <= 256; page *= 2) {
        const int pps = (p->N_kv + page - 1) / page, np = p->B * pps;
        int *table = xmalloc(sizeof(int) * np, PHASE);
        dec_table_shuffle(table, np, o->seed + 1);
        int *tb = gpu_malloc(sizeof(int) * np);
        gpu_upload(tb, table, sizeof(int) * np);
        dec_gpu_paginate(p, sb.K, sb.V, tb, page, pps, kp, vp);
        dec_gpu_args_t a = { .k = kp, .v = vp, .table = tb, .page = page, .pages_per_seq = pps };
        float *O = NULL;
        drv_row_t r = sweep_time(o, p, dec_row_name("paged-p%d-S%d", page, Sp), "paged", &a, false, true, Sp, NULL, &O);
        r.speedup = rc.time_ms / r.time_ms;   /* against the contiguous cache */
        if (drv_passed(&r) && (!Oc || memcmp(O, Oc, nq * sizeof(float)) != 0))
            drv_fail(&r, "O differs from split-pack on the contiguous cache (must be bitwise equal)");
        r.hbm_model = r.hbm_formula = dec_hbm_traffic_gpu(p, &(dec_cache_t){ .page = page }, r.blocks, Sp, true).total;
        rows[n++] = r;
        free(O); free(table);
        gpu_free(tb);
    }
    gpu_free(kp); gpu_free(vp);
    free(Oc);
    return n;
}
#endif

/* ---- the tables -------------------------------------------------------------------------- */
int dec_sweep(drv_t *D, const cli_opts_t *o)
{
    printf("%s: sweep of the CPU model's bytes (counted up to L = %d, the formula beyond)\n", PHASE, SWEEP_COUNT_L);
    /* the problem of the options, within the bound at the largest counted L (the formula
     * rows too: the formula's own work grows with B x N_q x L) */
    attn_problem_t p = o->p;
    p.N_kv = SWEEP_COUNT_L;
    p = sweep_bound(PHASE, "CPU sweep", &p, SWEEP_CPU_FLOPS);
    sweep_point_t cl[9], cs[2];
    int ncl = 0, ncs = 0;
    for (int Lk = 1; Lk <= 256; Lk *= 2) { cl[ncl] = sweep_point(p); cl[ncl++].p.N_kv = Lk * 1024; }
    for (int Lk = 4; Lk <= 64; Lk *= 16) { cs[ncs] = sweep_point(p); cs[ncs++].p.N_kv = Lk * 1024; }
#if HAVE_CUDA
    sweep_point_t gl[2 * 2 * 9], gs[2], gsb[3], gp[2], gq[2 * 5];
    int ngl = 0, ngs = 0, ngsb = 0, ngp = 0, ngq = 0;
    for (int B = 1; B <= 8; B *= 8)
        for (int Hkv = SWEEP_H; Hkv >= 8; Hkv /= 4)
            for (int L = 1024; L <= SWEEP_LMAX; L *= 2)
                gl[ngl++] = sweep_point(attn_problem(B, SWEEP_H, Hkv, 1, L, SWEEP_D, false));
    for (int L = 16384; L <= 65536; L *= 4) gs[ngs++] = sweep_point(attn_problem(1, SWEEP_H, 8, 1, L, SWEEP_D, false));
    gsb[ngsb++] = sweep_point(attn_problem(1, SWEEP_H, SWEEP_H, 1, 65536, SWEEP_D, false));   /* B = 1, MHA */
    gsb[ngsb++] = sweep_point(attn_problem(8, SWEEP_H, 8, 1, 65536, SWEEP_D, false));         /* B = 8, GQA */
    gsb[ngsb++] = sweep_point(attn_problem(8, SWEEP_H, 8, 16, 16384, SWEEP_D, false));        /* B = 8, GQA, N_q = 16 */
    for (int B = 1; B <= 8; B *= 8) gp[ngp++] = sweep_point(attn_problem(B, SWEEP_H, 8, 1, 65536, SWEEP_D, false));
    /* several query tokens a step (speculative decoding): with GQA packing the G x N_q rows
     * of a KV head share one read of its cache */
    for (int B = 1; B <= 8; B *= 8)
        for (int Nq = 1; Nq <= SWEEP_NQMAX; Nq *= 2) gq[ngq++] = sweep_point(attn_problem(B, SWEEP_H, 8, Nq, 16384, SWEEP_D, false));
#endif
    const sweep_part_t parts[] = {
        { .name = "vsL", .where = SWEEP_CPU, .points = cl, .npoints = ncl, .run = vsL_point, .line = vsL_line, .cpu_flops = SWEEP_CPU_FLOPS },
        { .name = "vsS", .where = SWEEP_CPU, .points = cs, .npoints = ncs, .run = vsS_point, .line = vsS_line, .cpu_flops = SWEEP_CPU_FLOPS },
#if HAVE_CUDA
        { .name = "vsL", .where = SWEEP_GPU, .points = gl, .npoints = ngl, .run = gpu_vsL_point, .line = gpu_line, .peers = true },
        { .name = "vsS", .where = SWEEP_GPU, .points = gs, .npoints = ngs, .run = gpu_vsS_point, .line = gpu_line },
        { .name = "vsSb", .where = SWEEP_GPU, .points = gsb, .npoints = ngsb, .run = gpu_vsS_point, .line = gpu_line },
        { .name = "paged", .where = SWEEP_GPU, .points = gp, .npoints = ngp, .run = gpu_paged_point, .line = gpu_line },
        { .name = "vsNq", .where = SWEEP_GPU, .points = gq, .npoints = ngq, .run = gpu_vsL_point, .line = gpu_line, .peers = true },
#else
        { .name = "gpu", .where = SWEEP_GPU },   /* says why it is skipped */
#endif
    };
    sweep_def_t def = { parts, sizeof parts / sizeof parts[0], NULL, NULL, NULL };
#if HAVE_CUDA
    def.gpu_begin = gpu_begin;
    def.gpu_end = gpu_end;
#endif
    return sweep_run(D, o, &def);
}
