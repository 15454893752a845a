/* main.c - phase 1 driver: standard attention with S and P in HBM.
 *
 *   build/phase1 [--B b --H h --Hkv h --N n --Nkv n --d d --causal --kernel simple|cublas|all
 *                 --iters k --sweep --csv file --dump dir --cpu --quiet]
 *
 * Order (DESIGN.md): parse; the memory wall (S and P must fit in free device memory,
 * else exit 2 before allocating); inputs from the seed; the CPU model on a small problem
 * (its bytes against the phase-0 formula, its output against the phase-0 oracle); each
 * GPU variant on poisoned outputs, checked against the oracle with the 2x rule, then
 * timed (median of --iters after warm-up); the table; the CSV; one verdict line.
 * --sweep: the FlashAttention-2 paper's setting (hidden 2048, B x N = 16k tokens) for
 * d = 64 and 128, then the memory wall at a fixed batch (B = 4), N doubling until S and
 * P no longer fit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "cost.h"
#include "csv.h"
#include "dump.h"
#include "fp16.h"
#include "gpu.h"
#include "naive.h"
#include "table.h"
#include "timer.h"

#define PHASE          "phase1"
/* The CPU rows run the problem itself up to this many FLOPs, a smaller one like it above. */
#define CPU_MAX_FLOPS (4.0 * (1 << 24))
#define CHECK_ROWS     512    /* oracle rows checked per run (all rows when fewer)   */
#define SWEEP_ROWS     128    /* ... per sweep point                                 */
#define WALL_B         4      /* the fixed batch of the memory-wall sweep            */
#define CSV_COLUMNS "kernel,device,sweep,B,H,H_kv,N_q,N_kv,d,causal,time_ms,tflops,gbps," \
                    "hbm_model,hbm_measured,sp_bytes,free_bytes,max_abs,rel_l2,pipeline_max_abs,verdict"

static const char *const KERNELS[] = {"simple", "cublas", NULL};
static const double GiB = 1073741824.0;

typedef struct {
    const char *kernel, *device, *sweep;
    attn_problem_t p;
    double time_ms;          /* NAN: not timed                    */
    double hbm_model, free_bytes;
    attn_verdict_t v;
    int checked;             /* v holds a check                   */
    const char *verdict;     /* PASS, FAIL, OOM                   */
    char why[160];           /* first bad element, or the reason  */
} row_t;

static void csv_row(FILE *f, const row_t *r)
{
    if (!f) return;
    const attn_problem_t *p = &r->p;
    double t = r->time_ms;
    fprintf(f, "%s,%s,%s,%d,%d,%d,%d,%d,%d,%d,", r->kernel, r->device, r->sweep, p->B, p->H,
            p->H_kv, p->N_q, p->N_kv, p->d, p->causal ? 1 : 0);
    if (isnan(t)) fprintf(f, ",,,");
    else fprintf(f, "%.4f,%.3f,%.1f,", t, attn_flops_fwd(p) / (t * 1e-3) / 1e12,
                 r->hbm_model / (t * 1e-3) / 1e9);
    fprintf(f, "%.0f,,%.0f,%.0f,", r->hbm_model, naive_sp_bytes(p), r->free_bytes);
    if (r->checked) fprintf(f, "%.3e,%.3e,%.3e,", r->v.O.max_abs, r->v.O.rel_l2, r->v.pipeline_max_abs);
    else fprintf(f, ",,,");
    fprintf(f, "%s\n", r->verdict);
    fflush(f);
}

static void table_row(table_t *t, const row_t *r)
{
    char c[11][TABLE_CELL], b1[32], shape[TABLE_CELL];
    const attn_problem_t *p = &r->p;
    snprintf(shape, sizeof shape, "B%d H%d/%d %dx%d d%d%s", p->B, p->H, p->H_kv, p->N_q, p->N_kv,
             p->d, p->causal ? " causal" : "");
    int timed = !isnan(r->time_ms);
    double s = r->time_ms * 1e-3;
    const char *cells[11] = {
        r->kernel, r->device, fmt_cell(c[2], "%s", shape),
        timed ? fmt_cell(c[3], "%.3f", r->time_ms) : "-",
        timed ? fmt_cell(c[4], "%.3g", attn_flops_fwd(p) / s / 1e12) : "-",
        timed ? fmt_cell(c[5], "%.3g", r->hbm_model / s / 1e9) : "-",
        fmt_cell(c[6], "%s", fmt_bytes(r->hbm_model, b1)),
        "-",
        r->checked ? fmt_cell(c[8], "%.2e", r->v.O.max_abs) : "-",
        r->checked ? fmt_cell(c[9], "%.2e", r->v.O.rel_l2) : "-",
        r->verdict };
    table_add(t, cells);
}

static void table_start(table_t *t)
{
    static const char *const head[11] = {"kernel", "device", "problem", ">time ms", ">TFLOP/s",
        ">GB/s", ">HBM model", ">HBM meas.", ">max abs", ">rel L2", "verdict"};
    table_init(t, 11, head);
}

static row_t run_cpu(const attn_problem_t *pc, const cli_opts_t *o)
{
    row_t r;
    memset(&r, 0, sizeof r);
    r.kernel = "cpu-model"; r.device = "cpu"; r.sweep = "-"; r.p = *pc; r.time_ms = NAN;
    attn_inputs_t in;
    if (attn_inputs_make(&in, pc, o->seed, false) != 0) { fprintf(stderr, PHASE ": out of host memory\n"); exit(1); }
    float *O = malloc(attn_q_elems(pc) * sizeof(float)), *L = malloc(attn_l_elems(pc) * sizeof(float));
    if (!O || !L) { fprintf(stderr, PHASE ": out of host memory\n"); exit(1); }
    poison_f32(O, attn_q_elems(pc));
    poison_f32(L, attn_l_elems(pc));
    hbm_meter_t m;
    hbm_reset(&m);
    double t0 = now_seconds();
    naive_cpu(&in, O, L, &m);
    r.time_ms = (now_seconds() - t0) * 1e3;
    r.hbm_model = (double)hbm_total(&m);
    r.v = attn_validate_fp16(&in, O, L, pc->B * pc->H * pc->N_q);   /* every row */
    r.checked = 1;
    double formula = std_attn_traffic(pc, 2).total;
    if (r.hbm_model != formula) {
        r.verdict = "FAIL";
        snprintf(r.why, sizeof r.why, "counted %.0f HBM bytes, the phase-0 formula says %.0f", r.hbm_model, formula);
    } else {
        r.verdict = r.v.pass ? "PASS" : "FAIL";
        err_first_bad_str(&r.v.O, pc->d, "O", r.why, sizeof r.why);
    }
    if (o->dump_dir && attn_dump(o->dump_dir, &in, O, L, NULL, NULL, NULL) != 0)
        fprintf(stderr, PHASE ": could not write the dump to %s\n", o->dump_dir);
    free(O); free(L);
    attn_inputs_free(&in);
    return r;
}

#if HAVE_CUDA
/* Device buffers of one problem, shared by the variants. */
typedef struct { void *Q, *K, *V, *S, *P, *O; } devbufs_t;

static devbufs_t dev_alloc(const attn_inputs_t *in)
{
    const attn_problem_t *p = &in->p;
    size_t nq = attn_q_elems(p), nkv = attn_kv_elems(p), ns = (size_t)p->B * p->H * p->N_q * p->N_kv;
    devbufs_t d = { gpu_malloc(nq * 2), gpu_malloc(nkv * 2), gpu_malloc(nkv * 2),
                gpu_malloc(ns * 2), gpu_malloc(ns * 2), gpu_malloc(nq * 2) };
    gpu_upload(d.Q, in->q_h, nq * 2);
    gpu_upload(d.K, in->k_h, nkv * 2);
    gpu_upload(d.V, in->v_h, nkv * 2);
    return d;
}

static void dev_free(devbufs_t *d)
{
    gpu_free(d->Q); gpu_free(d->K); gpu_free(d->V); gpu_free(d->S); gpu_free(d->P); gpu_free(d->O);
}

/* One variant: poisoned outputs, one run (bracketed for the profiler), the check, and
 * only when it passes, the timing. */
static row_t run_gpu(const attn_inputs_t *in, const devbufs_t *d, naive_kernel_t k, const char *sweep,
                     int iters, int check_rows, double free_bytes)
{
    const attn_problem_t *p = &in->p;
    row_t r;
    memset(&r, 0, sizeof r);
    r.kernel = KERNELS[k]; r.device = "gpu"; r.sweep = sweep; r.p = *p; r.time_ms = NAN;
    r.hbm_model = std_attn_traffic(p, 2).total;
    r.free_bytes = free_bytes;
    size_t nq = attn_q_elems(p), ns = (size_t)p->B * p->H * p->N_q * p->N_kv;
    naive_gpu_t g = { *p, k, d->Q, d->K, d->V, d->S, d->P, d->O };

    gpu_poison_f16(d->S, ns);
    gpu_poison_f16(d->P, ns);
    gpu_poison_f16(d->O, nq);
    gpu_profile_range(1);
    naive_gpu_forward(&g);
    gpu_profile_range(0);

    uint16_t *Oh = malloc(nq * 2);
    float *O = malloc(nq * sizeof(float));
    if (!Oh || !O) { fprintf(stderr, PHASE ": out of host memory\n"); exit(1); }
    gpu_download(Oh, d->O, nq * 2);
    f16_to_f32_array(O, Oh, nq);
    r.v = attn_validate_fp16(in, O, NULL, check_rows);
    r.checked = 1;
    r.verdict = r.v.pass ? "PASS" : "FAIL";
    err_first_bad_str(&r.v.O, p->d, "O", r.why, sizeof r.why);
    free(Oh); free(O);
    if (r.v.pass) r.time_ms = gpu_time_ms(naive_gpu_forward_fn, &g, 2, iters);
    return r;
}
#endif

static int report_verdict(const row_t *rows, int n, int quiet)
{
    int fails = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].verdict, "FAIL") == 0) {
            fails++;
            printf("  FAIL %s (%s): %s (rows checked: %d, tolerance: rel L2 < %.0e, max abs <= %.3e)\n",
                   rows[i].kernel, rows[i].device, rows[i].why, rows[i].v.rows_checked,
                   rows[i].v.tol.rel_l2, rows[i].v.tol.max_abs);
        }
    (void)quiet;
    printf("%s: %s (%d rows, %d failed)\n", PHASE, fails ? "FAIL" : "PASS", n, fails);
    return fails ? 1 : 0;
}

/* ---- --sweep ---------------------------------------------------------------------------- */
static int run_sweep(const cli_opts_t *o, int gpu, const char *why, FILE *csv)
{
    int fails = 0;
    if (!gpu) {
        /* no GPU: the model columns still make the memory plots */
        printf("%s: GPU rows skipped: %s; writing the model columns only\n", PHASE, why);
        for (int d = 64; d <= 128; d *= 2)
            for (int N = 512; N <= 16384; N *= 2) {
                row_t r;
                memset(&r, 0, sizeof r);
                r.kernel = "model"; r.device = "none"; r.sweep = "tokens16k"; r.time_ms = NAN;
                r.p = attn_problem(16384 / N, 2048 / d, 2048 / d, N, N, d, false);
                r.hbm_model = std_attn_traffic(&r.p, 2).total;
                r.verdict = "skipped";
                csv_row(csv, &r);
            }
        return 0;
    }
#if HAVE_CUDA
    /* Part 1: hidden 2048 (H = 2048 / d), B x N = 16k tokens: the FlashAttention-2 plots.
     * One set of inputs per (d, N) serves the full and the causal runs. */
    for (int d = 64; d <= 128; d *= 2)
        for (int N = 512; N <= 16384; N *= 2) {
            attn_problem_t p = attn_problem(16384 / N, 2048 / d, 2048 / d, N, N, d, false);
            size_t free_b, total_b;
            gpu_mem_info(&free_b, &total_b);
            if (naive_device_bytes(&p) > (double)free_b) {
                printf("  sweep tokens16k d=%d N=%d: S and P need %.2f GiB, %.2f GiB free: stop\n",
                       d, N, naive_sp_bytes(&p) / GiB, free_b / GiB);
                break;
            }
            attn_inputs_t in;
            if (attn_inputs_make(&in, &p, o->seed, false) != 0) { fprintf(stderr, PHASE ": out of host memory\n"); exit(1); }
            devbufs_t dv = dev_alloc(&in);
            for (int causal = 0; causal <= 1; causal++) {
                in.p.causal = causal;
                printf("  sweep tokens16k d=%3d %-6s N=%5d B=%2d H=%2d  S+P %7.2f GiB:", d,
                       causal ? "causal" : "full", N, p.B, p.H, naive_sp_bytes(&p) / GiB);
                for (int k = 0; KERNELS[k]; k++) {
                    if (!cli_kernel_selected(o, KERNELS[k])) continue;
                    row_t r = run_gpu(&in, &dv, (naive_kernel_t)k, "tokens16k", o->iters, SWEEP_ROWS, (double)free_b);
                    fails += strcmp(r.verdict, "PASS") != 0;
                    csv_row(csv, &r);
                    if (isnan(r.time_ms)) printf("  %s %s", r.kernel, r.verdict);
                    else printf("  %s %.3f ms %.1f TFLOP/s %s", r.kernel, r.time_ms,
                                attn_flops_fwd(&in.p) / (r.time_ms * 1e-3) / 1e12, r.verdict);
                    fflush(stdout);
                }
                printf("\n");
            }
            dev_free(&dv);
            attn_inputs_free(&in);
        }
    /* Part 2: the memory wall at a fixed batch: B = 4, N doubling from 8192 (below that
     * B = 4 is a point of part 1) until S and P no longer fit (cublas, non-causal). */
    const char *wk = cli_kernel_selected(o, "cublas") ? "cublas" : "simple";
    for (int d = 64; d <= 128; d *= 2)
        for (int N = 1024; N < 8192; N *= 2) {        /* the sizes only, for the plot */
            row_t r;
            memset(&r, 0, sizeof r);
            r.kernel = "model"; r.device = "none"; r.sweep = "wall_B4"; r.time_ms = NAN;
            r.p = attn_problem(WALL_B, 2048 / d, 2048 / d, N, N, d, false);
            r.hbm_model = std_attn_traffic(&r.p, 2).total;
            r.verdict = "model";
            csv_row(csv, &r);
        }
    for (int d = 64; d <= 128; d *= 2)
        for (int N = 8192; N <= (1 << 20); N *= 2) {
            attn_problem_t p = attn_problem(WALL_B, 2048 / d, 2048 / d, N, N, d, false);
            size_t free_b, total_b;
            gpu_mem_info(&free_b, &total_b);
            row_t r;
            memset(&r, 0, sizeof r);
            r.kernel = wk; r.device = "gpu"; r.sweep = "wall_B4"; r.p = p; r.time_ms = NAN;
            r.hbm_model = std_attn_traffic(&p, 2).total; r.free_bytes = (double)free_b;
            if (naive_device_bytes(&p) > (double)free_b) {
                r.verdict = "OOM";
                csv_row(csv, &r);
                printf("  memory wall (B=%d H=%d d=%d): N=%d needs %.2f GiB for S and P (%.2f GiB in all), "
                       "the GPU has %.2f GiB free: stop\n", WALL_B, p.H, d, N, naive_sp_bytes(&p) / GiB,
                       naive_device_bytes(&p) / GiB, free_b / GiB);
                break;
            }
            attn_inputs_t in;
            if (attn_inputs_make(&in, &p, o->seed, false) != 0) { fprintf(stderr, PHASE ": out of host memory\n"); exit(1); }
            devbufs_t dv = dev_alloc(&in);
            r = run_gpu(&in, &dv, strcmp(wk, "cublas") == 0 ? NAIVE_CUBLAS : NAIVE_SIMPLE, "wall_B4",
                        o->iters < 3 ? o->iters : 3, SWEEP_ROWS, (double)free_b);
            fails += strcmp(r.verdict, "PASS") != 0;
            csv_row(csv, &r);
            printf("  sweep wall_B4 d=%3d N=%6d B=%d H=%2d  S+P %7.2f GiB of %.2f GiB free:  %s %.3f ms %s\n",
                   d, N, WALL_B, p.H, naive_sp_bytes(&p) / GiB, free_b / GiB, wk, r.time_ms, r.verdict);
            fflush(stdout);
            dev_free(&dv);
            attn_inputs_free(&in);
        }
    naive_gpu_teardown();
#else
    (void)o; (void)why;
#endif
    printf("%s: sweep %s (%d failed points)\n", PHASE, fails ? "FAIL" : "PASS", fails);
    return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
    cli_spec_t spec = {
        .phase = PHASE,
        .summary = "standard attention on the GPU: S and P materialised in HBM",
        .kernels = KERNELS,
        .takes_sram = false,
        .defaults = attn_problem(4, 16, 16, 2048, 2048, 64, false),
        .host_bytes = NULL,
    };
    cli_opts_t o;
    cli_parse(argc, argv, &spec, &o);
    const attn_problem_t *p = &o.p;

    char why[256] = "";
    int gpu = 0;
    if (o.cpu_only) snprintf(why, sizeof why, "--cpu given");
    else gpu = gpu_available(why, sizeof why);

    /* The memory wall, before any allocation: S and P (and Q, K, V, O) must fit. */
    size_t free_b = 0, total_b = 0;
    if (gpu && !o.sweep) {
        gpu_mem_info(&free_b, &total_b);
        if (naive_device_bytes(p) > (double)free_b)
            cli_die(PHASE, "the memory wall: S and P need %.2f GiB (%.2f GiB with Q, K, V, O) "
                    "but the GPU has %.2f GiB free", naive_sp_bytes(p) / GiB,
                    naive_device_bytes(p) / GiB, free_b / GiB);
    }

    machine_info_t mi;
    if (gpu) { gpu_copy_bandwidth_gbps(); gpu_machine_info(&mi); }
    else machine_info_cpu(&mi);
    const char *csv_path = o.csv_path ? o.csv_path
                         : o.sweep ? "results/phase1/phase1_sweep.csv" : "results/phase1/phase1.csv";
    FILE *csv = csv_open(csv_path, PHASE, &mi, argc, argv, CSV_COLUMNS);

    if (o.sweep) {
        int rc = run_sweep(&o, gpu, why, csv);
        if (csv) fclose(csv);
        return rc;
    }

    char desc[128];
    attn_problem_str(p, desc, sizeof desc);
    if (!o.quiet) printf("%s: standard attention, S and P in HBM (%s)\n", PHASE, desc);

    row_t rows[4];
    int n = 0;
    attn_problem_t pc = attn_small_like(p, CPU_MAX_FLOPS);
    rows[n++] = run_cpu(&pc, &o);

#if HAVE_CUDA
    if (gpu) {
        attn_inputs_t in;
        if (attn_inputs_make(&in, p, o.seed, false) != 0) { fprintf(stderr, PHASE ": out of host memory\n"); return 1; }
        devbufs_t dv = dev_alloc(&in);
        for (int k = 0; KERNELS[k]; k++)
            if (cli_kernel_selected(&o, KERNELS[k]))
                rows[n++] = run_gpu(&in, &dv, (naive_kernel_t)k, "-", o.iters, CHECK_ROWS, (double)free_b);
        dev_free(&dv);
        attn_inputs_free(&in);
        naive_gpu_teardown();
    }
#endif
    if (!gpu) printf("%s: GPU rows skipped: %s\n", PHASE, why);

    table_t t;
    table_start(&t);
    for (int i = 0; i < n; i++) { table_row(&t, &rows[i]); csv_row(csv, &rows[i]); }
    table_print(&t, stdout);
    if (!o.quiet) {
        printf("time: CPU one run; GPU median of %d runs after warm-up (CUDA events, L2 flushed between runs); "
               "HBM meas.: make phase1 profile\n", o.iters);
        if (n > 1) printf("checked %d rows against the fp64 oracle; fp16 pipeline max abs error %.3e "
                          "(the 2x rule's yardstick)\n", rows[1].v.rows_checked, rows[1].v.pipeline_max_abs);
    }
    if (csv) { fclose(csv); if (!o.quiet) printf("csv: %s\n", csv_path); }
    return report_verdict(rows, n, o.quiet);
}
