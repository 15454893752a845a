/* main.c - phase 1 driver: standard attention with S and P in HBM.
 *
 *   build/phase1 [--B b --H h --Hkv h --N n --Nkv n --d d --causal --kernel simple|cublas|all
 *                 --iters k --sweep --csv file --dump dir --cpu --quiet]
 *
 * Order (docs/design.md, "The driver contract"): parse; the memory wall (S and P must fit
 * in free device memory, else exit 2 before allocating); inputs from the seed; the CPU
 * model on a small problem (its bytes against the phase-0 formula, its output against the
 * phase-0 oracle); each GPU variant on poisoned outputs, checked against the oracle with
 * the 2x rule, then timed (median of --iters after warm-up); the table; the CSV; one
 * verdict line.
 * --sweep: the FlashAttention-2 paper's setting (hidden 2048, B x N = 16k tokens) for
 * d = 64 and 128, then the memory wall at a fixed batch (B = 4), N doubling until S and
 * P no longer fit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cost.h"
#include "driver.h"
#include "naive.h"
#include "sweep.h"
#include "timer.h"

#define PHASE          "phase1"
#define CPU_MAX_FLOPS  (4.0 * (1 << 24))   /* the CPU row runs a smaller problem like it above */
#define CHECK_ROWS     512    /* oracle rows checked per run (all rows when fewer)   */
#define SWEEP_ROWS     128    /* ... per sweep point                                 */
#define WALL_B         4      /* the fixed batch of the memory-wall sweep            */

static const char *const KERNELS[] = {"simple", "cublas", NULL};
static const char *const CSV_COLS[] = {"kernel", "device", "sweep", "B", "H", "H_kv", "N_q", "N_kv", "d",
    "causal", "time_ms", "tflops", "gbps", "hbm_model", "hbm_measured", "sp_bytes", "free_bytes",
    "max_abs", "rel_l2", "pipeline_max_abs", "verdict", NULL};
static const char *const TABLE_COLS[] = {"kernel", "device", "problem", "time", "tflops", "gbps",
    "hbm_model", "hbm_meas", "max_abs", "rel_l2", "verdict", NULL};
static const cli_spec_t SPEC = {
    .phase = PHASE,
    .summary = "standard attention on the GPU: S and P materialised in HBM",
    .kernels = KERNELS,
    .defaults = { .B = 4, .H = 16, .H_kv = 16, .N_q = 2048, .N_kv = 2048, .d = 64 },   /* scale: 1/sqrt(d), set by cli_parse */
    .default_sweep_csv = "results/phase1/phase1_sweep.csv",
    .sweep_takes = "kernel iters seed",   /* its problems: the FA2 paper's setting, the memory wall */
};
static const double GiB = 1073741824.0;

/* A row of this phase: the model's bytes (standard attention's, phase 0's formula) and
 * the size of S and P that make the memory wall. */
static drv_row_t row(const char *kernel, const char *device, const char *sweep, const attn_problem_t *p, double free_b)
{
    drv_row_t r = drv_row(kernel, device, sweep, p);
    r.hbm_model = std_attn_traffic(p, 2).total;
    r.sp_bytes = naive_sp_bytes(p);
    r.free_bytes = free_b;
    return r;
}

static drv_row_t run_cpu(const attn_problem_t *pc, const cli_opts_t *o)
{
    drv_row_t r = row("cpu-model", "cpu", "-", pc, 0);
    attn_inputs_t in;
    drv_inputs(&in, pc, o->seed, false, PHASE);
    float *O = xmalloc(attn_q_elems(pc) * sizeof(float), PHASE), *L = xmalloc(attn_l_elems(pc) * sizeof(float), PHASE);
    poison_f32(O, attn_q_elems(pc));
    poison_f32(L, attn_l_elems(pc));
    hbm_meter_t m;
    hbm_reset(&m);
    double t0 = now_seconds();
    naive_cpu(&in, O, L, &m);
    r.time_ms = (now_seconds() - t0) * 1e3;
    if ((double)hbm_total(&m) != r.hbm_model)
        drv_fail(&r, "counted %.0f HBM bytes, the phase-0 formula says %.0f", (double)hbm_total(&m), r.hbm_model);
    attn_check_fp16(&r, &in, O, L, pc->B * pc->H * pc->N_q);   /* every row */
    drv_blame(&r, "naive.cpu_softmax");
    drv_dump(o, &in, O, L, PHASE);
    free(O); free(L);
    attn_inputs_free(&in);
    return r;
}

#if HAVE_CUDA
/* One variant on buffers b (S and P included): the checked-then-timed run. */
static drv_row_t run_gpu(const attn_inputs_t *in, const drv_gpu_bufs_t *b, naive_kernel_t k, const char *sweep,
                         int iters, int check_rows, double free_b)
{
    drv_row_t r = row(KERNELS[k], "gpu", sweep, &in->p, free_b);
    naive_gpu_t g = { in->p, k, b->Q, b->K, b->V, b->S, b->P, b->Oh };
    gpu_poison_f16(b->S, (size_t)in->p.B * in->p.H * in->p.N_q * in->p.N_kv);   /* S and P poisoned too */
    gpu_poison_f16(b->P, (size_t)in->p.B * in->p.H * in->p.N_q * in->p.N_kv);
    drv_gpu_run_t how = { naive_gpu_forward_fn, &g, DRV_OUT_F16_O, NULL, attn_check_fp16, check_rows, NULL, 0,
                          2, iters, true, NULL, NULL };   /* naive kernels skip no block: no visits */
    drv_gpu_run(&r, in, b, &how);
    drv_blame(&r, k == NAIVE_SIMPLE ? "naive.gemm_tile, naive.block_reduce, naive.softmax_stats"
                                               : "naive.block_reduce, naive.softmax_stats");
    return r;
}

/* Every selected variant on one problem; S and P must fit (the caller checked). */
static int run_gpu_rows(const attn_problem_t *p, const cli_opts_t *o, const char *sweep, int iters,
                        int check_rows, double free_b, drv_row_t *rows)
{
    attn_inputs_t in;
    drv_inputs(&in, p, o->seed, false, PHASE);
    drv_gpu_bufs_t b = drv_gpu_alloc(&in, DRV_SP_ALWAYS);
    int n = 0;
    for (int k = 0; KERNELS[k]; k++)
        if (cli_kernel_selected(o, KERNELS[k]))
            rows[n++] = run_gpu(&in, &b, (naive_kernel_t)k, sweep, iters, check_rows, free_b);
    drv_gpu_free(&b);
    attn_inputs_free(&in);
    return n;
}

/* Does p's pipeline fit in the free device memory? Else one line saying so. */
static bool fits(const attn_problem_t *p, const char *what, size_t *free_b)
{
    size_t total_b;
    gpu_mem_info(free_b, &total_b);
    if (naive_device_bytes(p) <= (double)*free_b) return true;
    printf("  %s (B=%d H=%d d=%d): N=%d needs %.2f GiB for S and P (%.2f GiB in all), the GPU has %.2f GiB free: stop\n",
           what, p->B, p->H, p->d, p->N_q, naive_sp_bytes(p) / GiB, naive_device_bytes(p) / GiB, *free_b / GiB);
    return false;
}
#endif

/* ---- --sweep: tables of points run by common/sweep.c ---------------------------------- */
/* No GPU: the model columns still make the memory plots. */
static int model_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows)
{
    rows[0] = row("model", "none", "tokens16k", &pt->p, NAN);
    drv_not_run(&rows[0], "skipped", s->D->why);
    return 1;
}

static void no_line(sweep_t *s, const sweep_point_t *pt, const drv_row_t *rows, int n)
{
    (void)s; (void)pt; (void)rows; (void)n;
}

#if HAVE_CUDA
/* Part 1: the FlashAttention-2 plots' setting, full and causal on the same inputs; a d
 * stops at the first N whose S and P do not fit. */
static int t16k_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows)
{
    size_t free_b;
    if (!fits(&pt->p, "sweep tokens16k", &free_b)) { sweep_stop_group(s, pt); return 0; }
    return run_gpu_rows(&pt->p, s->o, "tokens16k", s->o->iters, SWEEP_ROWS, (double)free_b, rows);
}

/* Part 2: the memory wall at a fixed batch, B = 4, cublas (else simple), not causal: the
 * sizes alone below N = 8192 (a point of part 1 there), then N doubling until S and P no
 * longer fit (that point an OOM row, the last of its d). */
static int wall_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows)
{
    const char *wk = cli_kernel_selected(s->o, "cublas") ? "cublas" : "simple";
    if (pt->p.N_q < 8192) {
        rows[0] = row("model", "none", "wall_B4", &pt->p, NAN);
        rows[0].verdict = "model";
        return 1;
    }
    size_t free_b;
    if (!fits(&pt->p, "memory wall", &free_b)) {
        rows[0] = row(wk, "gpu", "wall_B4", &pt->p, (double)free_b);
        drv_not_run(&rows[0], "OOM", "S and P do not fit");
        sweep_stop_group(s, pt);
        return 1;
    }
    cli_opts_t ow = *s->o;
    ow.kernel = wk;
    return run_gpu_rows(&pt->p, &ow, "wall_B4", s->o->iters < 3 ? s->o->iters : 3, SWEEP_ROWS, (double)free_b, rows);
}

static void wall_line(sweep_t *s, const sweep_point_t *pt, const drv_row_t *r, int n)
{
    (void)s;
    if (n == 0 || strcmp(r->device, "gpu") != 0 || strcmp(r->verdict, "OOM") == 0) return;
    printf("  sweep wall_B4 d=%3d N=%6d B=%d H=%2d  S+P %7.2f GiB of %.2f GiB free:  %s %.3f ms %s\n",
           pt->p.d, pt->p.N_q, WALL_B, pt->p.H, r->sp_bytes / GiB, r->free_bytes / GiB, r->kernel, r->time_ms, r->verdict);
}
#endif

static int run_sweep(drv_t *D, const cli_opts_t *o)
{
    enum { T16K_NS = 6, WALL_NS = 11 };   /* N = 512 .. 16384 and 1024 .. 2^20, doubling */
    sweep_point_t t16k[2 * T16K_NS * 2], model[2 * T16K_NS], wall[2 * WALL_NS];
    int nt = 0, nm = 0, nw = 0;
    for (int d = 64; d <= 128; d *= 2)
        for (int N = DRV_T16K_NMIN; N <= DRV_T16K_NMAX; N *= 2) {
            SWEEP_ADD(model, nm, drv_tokens16k(N, d, false), 0);
            for (int causal = 0; causal <= 1; causal++) SWEEP_ADD(t16k, nt, drv_tokens16k(N, d, causal), d);
        }
    for (int d = 64; d <= 128; d *= 2)
        for (int N = 1024; N <= (1 << 20); N *= 2) SWEEP_ADD(wall, nw, attn_problem(WALL_B, 2048 / d, 2048 / d, N, N, d, false), d);
    if (!D->gpu) printf("%s: GPU rows skipped: %s; writing the model columns only\n", PHASE, D->why);
    const sweep_part_t parts[] = {
        { .name = "tokens16k", .where = SWEEP_NO_GPU, .points = model, .npoints = nm, .run = model_point, .line = no_line },
#if HAVE_CUDA
        { .name = "tokens16k", .where = SWEEP_GPU, .points = t16k, .npoints = nt, .run = t16k_point },
        { .name = "wall_B4", .where = SWEEP_GPU, .points = wall, .npoints = nw, .run = wall_point, .line = wall_line },
#endif
    };
#if !HAVE_CUDA
    (void)t16k; (void)wall;   /* the GPU parts' tables */
#endif
    return sweep_run_parts(D, o, parts, sizeof parts / sizeof parts[0]);
}

/* The memory wall, before any allocation: S and P (and Q, K, V, O) must fit in the free
 * device memory, else one line and exit 2. Returns the free bytes. */
static double refuse_beyond_the_wall(const attn_problem_t *p)
{
    size_t free_b = 0, total_b = 0;
    gpu_mem_info(&free_b, &total_b);
    if (naive_device_bytes(p) > (double)free_b)
        cli_die(PHASE, "the memory wall: S and P need %.2f GiB (%.2f GiB with Q, K, V, O) but the GPU has "
                "%.2f GiB free", naive_sp_bytes(p) / GiB, naive_device_bytes(p) / GiB, free_b / GiB);
    return (double)free_b;
}

int main(int argc, char **argv)
{
    cli_opts_t o;
    cli_parse(argc, argv, &SPEC, &o);
    const attn_problem_t *p = &o.p;

    drv_t D;
    drv_start(&D, PHASE, &o);
    double free_b = D.gpu && !o.sweep ? refuse_beyond_the_wall(p) : 0;   /* for the GPU rows */
    (void)free_b;
    drv_csv_open(&D, &o, argc, argv, CSV_COLS);
    if (o.sweep) return run_sweep(&D, &o);

    drv_banner(&D, &o, "standard attention, S and P in HBM");

    drv_row_t rows[4];
    int n = 0;
    attn_problem_t pc = attn_small_like(p, CPU_MAX_FLOPS);
    if (!o.quiet) attn_small_like_note(PHASE, p, &pc, CPU_MAX_FLOPS);
    rows[n++] = run_cpu(&pc, &o);
#if HAVE_CUDA
    if (D.gpu) {
        n += run_gpu_rows(p, &o, "-", o.iters, CHECK_ROWS, free_b, rows + n);
    }
#endif
    if (!D.gpu) printf("%s: GPU rows skipped: %s\n", PHASE, D.why);

    drv_print_rows(&D, TABLE_COLS, rows, n);
    if (!o.quiet) {
        printf("time: CPU one run; GPU median of %d runs after warm-up (CUDA events, L2 flushed between runs); "
               "HBM meas.: make phase1 profile\n", o.iters);
        if (n > 1) printf("checked %d rows against the fp64 oracle; fp16 pipeline max abs error %.3e "
                          "(the 2x rule's yardstick)\n", rows[1].rows_checked, rows[1].pipe);
    }
    return drv_finish(&D, rows, n, o.quiet);
}
