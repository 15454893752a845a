/* driver.c - the calls every phase's main() is made of (driver.h). */
#include "driver.h"
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "dump.h"
#include "fp16.h"
#include "ref.h"

/* ---- rows ------------------------------------------------------------------------------ */
drv_row_t drv_row(const char *kernel, const char *device, const char *sweep, const attn_problem_t *p)
{
    drv_row_t r;
    memset(&r, 0, sizeof r);
    r.kernel = kernel; r.device = device; r.sweep = sweep; r.what = ""; r.p = *p;
    r.sram = r.time_ms = r.flops = r.hbm_model = r.hbm_formula = r.hbm_std = r.nonmatmul = NAN;
    r.max_abs = r.rel_l2 = r.L_abs = r.rel_prev = r.pipe = r.speedup = r.sp_bytes = r.free_bytes = NAN;
    r.verdict = "PASS";
    return r;
}

void drv_fail(drv_row_t *r, const char *fmt, ...)
{
    if (drv_failed(r)) return;   /* the first reason is the one to read */
    r->verdict = "FAIL";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
}

void drv_blame(drv_row_t *r, const char *exercises)
{
    if (drv_failed(r) && !r->exercises) r->exercises = ex_blame(exercises);   /* less what unit checks cleared */
}

void drv_not_run(drv_row_t *r, const char *verdict, const char *why)
{
    r->verdict = verdict;
    snprintf(r->why, sizeof r->why, "%s", why);
}

bool drv_passed(const drv_row_t *r) { return strcmp(r->verdict, "PASS") == 0; }
bool drv_failed(const drv_row_t *r) { return strcmp(r->verdict, "FAIL") == 0; }

double drv_tflops(const drv_row_t *r)
{
    return (isnan(r->flops) ? attn_flops_fwd(&r->p) : r->flops) / (r->time_ms * 1e-3) / 1e12;
}

/* ---- checks ------------------------------------------------------------------------------ */
bool drv_compare(drv_row_t *r, const char *vs, const char *tensor, const float *out,
                 const double *ref, size_t n, int row_len, tol_t tol, bool record,
                 const char *exercises)
{
    err_stats_t e = err_compare(out, ref, n, tol);
    if (record) { r->max_abs = e.max_abs; r->rel_l2 = e.rel_l2; }
    bool pass = err_pass(&e, tol);
    if (!pass) {
        char where[160];
        err_first_bad_str(&e, row_len, tensor, where, sizeof where);
        drv_fail(r, "%s: %s", vs, where);
    }
    if (exercises) drv_blame(r, exercises);
    return pass;
}

bool drv_compare_prev(drv_row_t *r, const char *name, const float *out, const float *prev,
                      size_t n, double tol)
{
    double e = rel_l2_f32(out, prev, n);
    if (isnan(r->rel_prev)) r->rel_prev = e;
    if (e < tol) return true;
    drv_fail(r, "differs from %s (rel L2 %.2e, bound %.0e)", name, e, tol);
    return false;
}

/* ---- start and end ------------------------------------------------------------------------ */
void drv_start(drv_t *D, const char *phase, const cli_opts_t *o)
{
    memset(D, 0, sizeof *D);
    D->phase = phase;
    if (o->cpu_only) snprintf(D->why, sizeof D->why, "--cpu given");
    else D->gpu = gpu_available(D->why, sizeof D->why);
    if (D->gpu) { gpu_copy_bandwidth_gbps(); gpu_machine_info(&D->mi); }
    else machine_info_cpu(&D->mi);
}

void drv_csv_open(drv_t *D, const cli_opts_t *o, int argc, char **argv, const char *const *columns)
{
    const char *path = o->csv_path;
    char cols[1024] = "";
    for (int c = 0; columns[c]; c++) {
        size_t len = strlen(cols);
        snprintf(cols + len, sizeof cols - len, "%s%s", c ? "," : "", columns[c]);
    }
    D->csv_path = path;
    D->csv_columns = columns;
    D->csv = csv_open(path, D->phase, &D->mi, argc, argv, cols);   /* says why on failure */
    if (!D->csv) exit(CLI_EXIT_USAGE);
}

void drv_csv_row(const drv_t *D, const drv_row_t *r)
{
    FILE *f = D->csv;
    if (!f) return;
    const attn_problem_t *p = &r->p;
    const double s = r->time_ms * 1e-3;
    for (int c = 0; D->csv_columns[c]; c++) {
        const char *k = D->csv_columns[c];
        if (c) fputc(',', f);
#define COL(name) (strcmp(k, name) == 0)
        if      (COL("kernel"))  fputs(r->kernel, f);
        else if (COL("device"))  fputs(r->device, f);
        else if (COL("sweep"))   fputs(r->sweep, f);
        else if (COL("verdict")) fputs(r->verdict, f);
        else if (COL("B"))       fprintf(f, "%d", p->B);
        else if (COL("H"))       fprintf(f, "%d", p->H);
        else if (COL("H_kv"))    fprintf(f, "%d", p->H_kv);
        else if (COL("N_q"))     fprintf(f, "%d", p->N_q);
        else if (COL("N_kv"))    fprintf(f, "%d", p->N_kv);
        else if (COL("d"))       fprintf(f, "%d", p->d);
        else if (COL("causal"))  fprintf(f, "%d", p->causal ? 1 : 0);
        else if (COL("Br"))      fprintf(f, "%d", r->blocks.Br);
        else if (COL("Bc"))      fprintf(f, "%d", r->blocks.Bc);
        else {
            /* a number; "%.Ng" cells stay empty when not measured (NaN) */
            double x = NAN;
            const char *fmt = "%.3e";
            if      (COL("time_ms"))      { x = r->time_ms; fmt = "%.4f"; }
            else if (COL("tflops"))       { x = drv_tflops(r); fmt = "%.3f"; }
            else if (COL("gbps"))         { x = r->hbm_model / s / 1e9; fmt = "%.1f"; }
            else if (COL("sram"))         { x = r->sram; fmt = "%.0f"; }
            else if (COL("hbm_model"))    { x = r->hbm_model; fmt = "%.0f"; }
            else if (COL("hbm_formula"))  { x = r->hbm_formula; fmt = "%.0f"; }
            else if (COL("hbm_std"))      { x = r->hbm_std; fmt = "%.0f"; }
            else if (COL("nonmatmul"))    { x = r->nonmatmul; fmt = "%.0f"; }
            else if (COL("sp_bytes"))     { x = r->sp_bytes; fmt = "%.0f"; }
            else if (COL("free_bytes"))   { x = r->free_bytes; fmt = "%.0f"; }
            else if (COL("speedup"))      { x = r->speedup; fmt = "%.3f"; }
            else if (COL("max_abs"))      x = r->max_abs;
            else if (COL("rel_l2"))       x = r->rel_l2;
            else if (COL("L_max_abs"))    x = r->L_abs;
            else if (COL("rel_prev"))     x = r->rel_prev;
            else if (COL("pipeline_max_abs")) x = r->pipe;
            /* anything else (hbm_measured: tools/profile.sh fills it in) stays empty */
            if (!isnan(x)) fprintf(f, fmt, x);
        }
#undef COL
    }
    fputc('\n', f);
    fflush(f);
}

int drv_finish(drv_t *D, const drv_row_t *rows, int n, bool quiet)
{
    int fails = 0;
    for (int i = 0; i < n; i++) {
        if (drv_failed(&rows[i])) fails++;
        if (!drv_passed(&rows[i]))
            printf("  %s %s (%s): %s\n", rows[i].verdict, rows[i].kernel, rows[i].device, rows[i].why);
        if (EX_BUILD_ON && drv_failed(&rows[i]))
            printf("     exercises behind it: %s\n", rows[i].exercises ? rows[i].exercises : "(none named: see the chapter)");
    }
    /* an exercise build without a GPU checked the CPU fill-ins alone: say so, so that a PASS
     * is not read as one for the GPU exercises too */
    if (EX_BUILD_ON && !D->gpu)
        printf("%s: GPU exercises NOT checked (the .cu fill-ins: %s); make %s test EX=1 runs some of them on the "
               "CPU emulator, a GPU runs them all\n", D->phase, D->why, D->phase);
    bool bad_dump = attn_dump_failures() > 0;   /* said on stderr where it failed */
    printf("%s: %s (%d rows, %d failed%s)\n", D->phase, fails || bad_dump ? "FAIL" : "PASS", n, fails,
           bad_dump ? "; the dump could not be written" : "");
    int bad_csv = drv_csv_close(D, quiet) != 0;
    return fails || bad_dump || bad_csv ? 1 : 0;
}

void drv_banner(const drv_t *D, const cli_opts_t *o, const char *fmt, ...)
{
    if (o->quiet) return;
    char what[256], desc[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    attn_problem_str(&o->p, desc, sizeof desc);
    printf("%s: %s (%s)\n", D->phase, what, desc);
}

int drv_sweep_end(drv_t *D, int fails)
{
    bool bad_dump = attn_dump_failures() > 0;
    printf("%s: sweep %s (%d failed points%s)\n", D->phase, fails || bad_dump ? "FAIL" : "PASS", fails,
           bad_dump ? "; the dump could not be written" : "");
    return drv_csv_close(D, true) != 0 || fails || bad_dump ? 1 : 0;
}

int drv_csv_close(drv_t *D, bool quiet)
{
    if (!D->csv) return 0;
    int rc = csv_close(D->csv, D->csv_path, D->phase);
    if (rc == 0 && !quiet) printf("csv: %s\n", D->csv_path);
    D->csv = NULL;
    return rc;
}

/* ---- the table ----------------------------------------------------------------------------- */
static const struct { const char *name, *head; } TABLE_COLS[] = {
    {"kernel", "kernel"}, {"step", "step"}, {"what", "what changed"}, {"device", "device"},
    {"problem", "problem"}, {"blocks", ">Br x Bc"}, {"sram", ">M"}, {"time", ">time ms"},
    {"tflops", ">TFLOP/s"}, {"gbps", ">GB/s"}, {"hbm_model", ">HBM model"},
    {"hbm_meas", ">HBM meas."}, {"max_abs", ">max abs"}, {"rel_l2", ">rel L2"},
    {"L_abs", ">L abs"}, {"vs_prev", ">vs prev"}, {"speedup", ">speedup"},
    {"vs_first", ">vs first"}, {"extra", ">extra mem"}, {"verdict", "verdict"},
};

void drv_table_init(table_t *t, const char *const *columns)
{
    const char *head[TABLE_MAX_COLS];
    int n = 0;
    for (; columns[n] && n < TABLE_MAX_COLS; n++) {
        head[n] = columns[n];
        for (size_t k = 0; k < sizeof TABLE_COLS / sizeof TABLE_COLS[0]; k++)
            if (strcmp(columns[n], TABLE_COLS[k].name) == 0) head[n] = TABLE_COLS[k].head;
    }
    table_init(t, n, head);
}

void drv_table_add(table_t *t, const char *const *columns, const drv_row_t *r, const drv_row_t *first)
{
    char c[TABLE_MAX_COLS][TABLE_CELL], b[32];
    const char *cells[TABLE_MAX_COLS];
    const attn_problem_t *p = &r->p;
    const bool timed = !isnan(r->time_ms);
    for (int i = 0; columns[i] && i < TABLE_MAX_COLS; i++) {
        const char *k = columns[i];
        char *s = c[i];
        cells[i] = "-";
#define COL(name) (strcmp(k, name) == 0)
#define NUM(x, fmt) do { if (!isnan(x)) cells[i] = fmt_cell(s, fmt, x); } while (0)
        if (COL("kernel") || COL("step")) cells[i] = r->kernel;
        else if (COL("what"))     cells[i] = r->what;
        else if (COL("device"))   cells[i] = r->device;
        else if (COL("verdict"))  cells[i] = r->verdict;
        else if (COL("problem"))
            cells[i] = fmt_cell(s, "B%d H%d/%d %dx%d d%d%s", p->B, p->H, p->H_kv, p->N_q, p->N_kv,
                                p->d, p->causal ? " causal" : "");
        else if (COL("blocks") && r->blocks.Br) cells[i] = fmt_cell(s, "%dx%d", r->blocks.Br, r->blocks.Bc);
        else if (COL("sram") && !isnan(r->sram)) cells[i] = fmt_cell(s, "%.0f KiB", r->sram / 1024);
        else if (COL("time"))     NUM(r->time_ms, "%.3f");
        else if (COL("tflops") && timed) cells[i] = fmt_cell(s, "%.3g", drv_tflops(r));
        else if (COL("gbps") && timed) cells[i] = fmt_cell(s, "%.3g", r->hbm_model / (r->time_ms * 1e-3) / 1e9);
        else if (COL("hbm_model") && !isnan(r->hbm_model)) cells[i] = fmt_cell(s, "%s", fmt_bytes(r->hbm_model, b));
        else if (COL("max_abs"))  NUM(r->max_abs, "%.2e");
        else if (COL("rel_l2"))   NUM(r->rel_l2, "%.2e");
        else if (COL("L_abs"))    NUM(r->L_abs, "%.1e");
        else if (COL("vs_prev"))  NUM(r->rel_prev, "%.2e");
        else if (COL("speedup"))  NUM(r->speedup, "%.2fx");
        else if (COL("vs_first") && first && timed) NUM(first->time_ms / r->time_ms, "%.2fx");
        else if (COL("extra") && !isnan(r->sp_bytes)) cells[i] = fmt_cell(s, "%s", fmt_bytes(r->sp_bytes, b));
#undef NUM
#undef COL
    }
    table_add(t, cells);
}

void drv_print_rows(const drv_t *D, const char *const *columns, const drv_row_t *rows, int n)
{
    static table_t t;   /* 200 KiB: not on the stack */
    drv_table_init(&t, columns);
    for (int i = 0; i < n; i++) {
        drv_table_add(&t, columns, &rows[i], &rows[0]);
        drv_csv_row(D, &rows[i]);
    }
    table_print(&t, stdout);
}

/* ---- the FA2 paper's setting ------------------------------------------------------------------ */
attn_problem_t drv_tokens16k(int N, int d, bool causal)
{
    return attn_problem(16384 / N, 2048 / d, 2048 / d, N, N, d, causal);
}

void drv_sweep_line(const drv_row_t *rows, int n)
{
    if (n == 0) return;
    const attn_problem_t *p = &rows[0].p;
    printf("  sweep %s d=%3d %-6s N=%5d B=%2d H=%2d:", rows[0].sweep, p->d, p->causal ? "causal" : "full",
           p->N_q, p->B, p->H);
    for (int k = 0; k < n; k++) {
        if (isnan(rows[k].time_ms)) printf("  %s %s", rows[k].kernel, rows[k].verdict);
        else printf("  %s %.3f ms %.1f TFLOP/s", rows[k].kernel, rows[k].time_ms, drv_tflops(&rows[k]));
        if (drv_failed(&rows[k])) printf(" (%s)", rows[k].why);
    }
    printf("\n");
    fflush(stdout);
}

drv_row_t drv_formula_row(const char *kernel, const char *sweep, const attn_problem_t *p, attn_blocks_t blocks,
                          double hbm_formula, double nonmatmul, double hbm_std)
{
    drv_row_t r = drv_row(kernel, "cpu", sweep, p);
    r.blocks = blocks; r.hbm_formula = hbm_formula; r.nonmatmul = nonmatmul; r.hbm_std = hbm_std;
    return r;
}

void drv_dump(const cli_opts_t *o, const attn_inputs_t *in, const float *O, const float *L, const char *phase)
{
    if (o->dump_dir && attn_dump(o->dump_dir, in, O, L, NULL, NULL, NULL) != 0)
        fprintf(stderr, "%s: could not write the dump to %s\n", phase, o->dump_dir);
}

void drv_inputs(attn_inputs_t *in, const attn_problem_t *p, uint64_t seed, bool with_grad, const char *phase)
{
    if (attn_inputs_make(in, p, seed, with_grad) == 0) return;
    fprintf(stderr, "%s: out of host memory\n", phase);
    exit(1);
}

/* ---- GPU --------------------------------------------------------------------------------------- */
drv_gpu_bufs_t drv_gpu_alloc(const attn_inputs_t *in, drv_sp_t sp)
{
    const attn_problem_t *p = &in->p;
    size_t nq = attn_q_elems(p), nkv = attn_kv_elems(p), nl = attn_l_elems(p);
    drv_gpu_bufs_t b;
    memset(&b, 0, sizeof b);
    b.Q = gpu_malloc(nq * 2); b.K = gpu_malloc(nkv * 2); b.V = gpu_malloc(nkv * 2);
    b.O = gpu_malloc(nq * 4); b.L = gpu_malloc(nl * 4); b.l = gpu_malloc(nl * 4); b.m = gpu_malloc(nl * 4);
    gpu_upload(b.Q, in->q_h, nq * 2);
    gpu_upload(b.K, in->k_h, nkv * 2);
    gpu_upload(b.V, in->v_h, nkv * 2);
    if (sp != DRV_SP_NONE) {
        size_t free_b = 0, total_b, ns = (size_t)p->B * p->H * p->N_q * p->N_kv;
        if (sp == DRV_SP_IF_ROOM) gpu_mem_info(&free_b, &total_b);
        if (sp == DRV_SP_ALWAYS || 4.0 * ns + 2.0 * nq + (1 << 30) < (double)free_b) {   /* fp16 S, P, O */
            b.S = gpu_malloc(ns * 2); b.P = gpu_malloc(ns * 2); b.Oh = gpu_malloc(nq * 2);
        }
    }
    return b;
}

void drv_gpu_free(drv_gpu_bufs_t *b)
{
    void *all[] = {b->Q, b->K, b->V, b->O, b->L, b->l, b->m, b->S, b->P, b->Oh};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gpu_free(all[i]);
    memset(b, 0, sizeof *b);
}

/* ---- visit counters ------------------------------------------------------------------------ */
void drv_visits_init(drv_visits_t *v, int ntiles, const char *tile, const char *unit, const char *range,
                     const char *exercise)
{
    memset(v, 0, sizeof *v);
    v->ntiles = v->split = ntiles;
    v->want = xmalloc((size_t)(ntiles > 0 ? ntiles : 1) * sizeof *v->want, "drv_visits_init");
    for (int k = 0; k < ntiles; k++) v->want[k] = 0;
    v->part[0].tile = v->part[1].tile = tile;
    v->part[0].unit = v->part[1].unit = unit;
    v->part[0].exercise = v->part[1].exercise = exercise;
    v->range = range;
}

void drv_visits_free(drv_visits_t *v)
{
    free(v->want);
    memset(v, 0, sizeof *v);
}

bool drv_check_visits(drv_row_t *r, const drv_visits_t *v)
{
    if (!v || v->ntiles <= 0 || !gpu_visits_on()) return true;
    unsigned long long *got = xmalloc((size_t)v->ntiles * sizeof *got, "drv_check_visits");
    gpu_visits_read(got, (size_t)v->ntiles);
    int first = -1, differ = 0;
    for (int k = 0; k < v->ntiles; k++)
        if (got[k] != v->want[k] && differ++ == 0) first = k;
    if (differ) {
        const int part = first >= v->split, tile = part ? first - v->split : first;
        drv_fail(r, "visited %llu %s of %s %d (over batch and heads), %s allows %llu; %d tile%s differ%s", got[first],
                 v->part[part].unit, v->part[part].tile, tile, v->range, v->want[first], differ,
                 differ == 1 ? "" : "s", differ == 1 ? "s" : "");
        if (v->part[part].exercise) drv_blame(r, v->part[part].exercise);
    }
    free(got);
    return differ == 0;
}

void drv_gpu_run(drv_row_t *r, const attn_inputs_t *in, const drv_gpu_bufs_t *b, const drv_gpu_run_t *how)
{
    const attn_problem_t *p = &in->p;
    size_t nq = attn_q_elems(p), nl = attn_l_elems(p);
    /* poisoned outputs: an element the kernel forgets to write is NaN and fails */
    if (how->out == DRV_OUT_F16_O) gpu_poison_f16(b->Oh, nq);
    else { gpu_poison_f32(b->O, nq); gpu_poison_f32(b->L, nl); gpu_poison_f32(b->l, nl); gpu_poison_f32(b->m, nl); }
    gpu_visits_zero();   /* the checked run's counts alone (the timed runs add theirs after) */
    if (how->profile) gpu_profile_range(1);   /* the one run tools/profile.sh measures */
    how->launch(how->ctx);
    if (how->profile) gpu_profile_range(0);
    gpu_sync();
    /* first: a kernel that visits blocks outside its range can still give the right output
     * (the mask hides them), and a wrong range is the most precise reason there is */
    drv_check_visits(r, how->visits);

    float *O = xmalloc(nq * sizeof(float), "driver"), *L = NULL;
    if (how->out == DRV_OUT_F16_O) {
        uint16_t *Oh = xmalloc(nq * 2, "driver");
        gpu_download(Oh, b->Oh, nq * 2);
        f16_to_f32_array(O, Oh, nq);
        free(Oh);
    } else {
        gpu_download(O, b->O, nq * 4);
        L = xmalloc(nl * sizeof(float), "driver");
        if (how->out == DRV_OUT_O_L) gpu_download(L, b->L, nl * 4);
        else {
            float *l = xmalloc(nl * 4, "driver"), *m = xmalloc(nl * 4, "driver");
            gpu_download(l, b->l, nl * 4);
            gpu_download(m, b->m, nl * 4);
            how->lse(l, m, L, nl);
            free(l); free(m);
        }
    }
    how->check(r, in, O, L, how->check_rows);
    for (int k = 0; k < how->nprev; k++)
        if (how->prev[k].O) drv_compare_prev(r, how->prev[k].name, O, how->prev[k].O, nq, TOL_FP16_REL_L2);
    free(L);
    if (how->keep && drv_passed(r)) *how->keep = O;
    else free(O);
    /* a kernel is timed only once its check PASSed; a probe's build (Makefile's SOFTMAX_PROBE
     * and BWD_PROBE: results wrong by design) times its FAILed rows too, to measure them */
#if FA_PROBE_BUILD
    r->time_ms = gpu_time_ms(how->launch, how->ctx, how->warmup, how->iters);
#else
    if (drv_passed(r)) r->time_ms = gpu_time_ms(how->launch, how->ctx, how->warmup, how->iters);
#endif
}
