/* sweep.c - a --sweep: tables of points and one function per point (sweep.h). */
#include "sweep.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sweep_point_t sweep_point(attn_problem_t p)
{
    sweep_point_t pt = { p, 0, 0 };
    return pt;
}

void sweep_add(sweep_point_t *pts, int *n, int cap, attn_problem_t p, int group)
{
    if (*n >= cap) {
        fprintf(stderr, "sweep: internal error: a table of %d points is too small for its loops\n", cap);
        abort();
    }
    pts[*n] = sweep_point(p);
    pts[(*n)++].group = group;
}

int sweep_tokens16k(sweep_point_t *pts, int max, int c0, int c1, int d0, int d1)
{
    int n = 0, group = 0;
    for (int c = c0; c <= c1; c++)
        for (int d = d0; d <= d1; d *= 2, group++)
            for (int N = DRV_T16K_NMIN; N <= DRV_T16K_NMAX && n < max; N *= 2) {
                pts[n] = sweep_point(drv_tokens16k(N, d, c));
                pts[n++].group = group;
            }
    return n;
}

int sweep_inputs_point(sweep_t *s, const sweep_point_t *pt, bool with_grad, sweep_rows_fn rows_fn,
                       const char *base, const char *faster, drv_row_t *rows)
{
    attn_inputs_t in;
    drv_inputs(&in, &pt->p, s->o->seed, with_grad, s->D->phase);
    const int n = rows_fn(s, pt, &in, rows);
    attn_inputs_free(&in);
    double t_base = NAN;
    for (int k = 0; base && k < n; k++) {
        if (strcmp(rows[k].kernel, base) == 0) t_base = rows[k].time_ms;
        if (strcmp(rows[k].kernel, faster) == 0) rows[k].speedup = t_base / rows[k].time_ms;
    }
    return n;
}

sweep_part_t sweep_tokens16k_part(const sweep_point_t *pts, int n, sweep_point_fn run)
{
    sweep_part_t part = { .name = "tokens16k", .where = SWEEP_GPU, .points = pts, .npoints = n, .run = run, .peers = true };
    return part;
}

/* ---- the bound on CPU work ------------------------------------------------------------ */
static bool within(const attn_problem_t *p, double max_flops)
{
    double scores = (double)p->B * p->H * p->N_q * p->N_kv;
    double elems = 2.0 * attn_q_elems(p) + 2.0 * attn_kv_elems(p) + 4.0 * scores;
    return attn_flops_fwd(p) <= max_flops && elems <= SWEEP_CPU_MAX_ELEMS;
}

static attn_problem_t shrink(const attn_problem_t *p, double max_flops)
{
    attn_problem_t q = *p;
    if (!within(&q, max_flops)) q.B = 1;
    if (!within(&q, max_flops)) {   /* keep GQA (a group of 2) or MHA, with at most 2 KV heads */
        const int G = q.H / q.H_kv;
        q.H_kv = q.H_kv < 2 ? q.H_kv : 2;
        q.H = q.H_kv * (G < 2 ? G : 2);
    }
    while (!within(&q, max_flops) && q.N_q > 1) q.N_q = (q.N_q + 1) / 2;
    while (!within(&q, max_flops) && q.N_kv > 1) q.N_kv = (q.N_kv + 1) / 2;
    return q;
}

static bool say_shrunk(const char *phase, const char *what, const attn_problem_t *p, const attn_problem_t *q,
                       double max_flops)
{
    if (q->B == p->B && q->H == p->H && q->H_kv == p->H_kv && q->N_q == p->N_q && q->N_kv == p->N_kv) return false;
    char want[96], ran[96];
    attn_problem_str(p, want, sizeof want);
    attn_problem_str(q, ran, sizeof ran);
    printf("%s: %s: the CPU runs %s for %s (the bound on a CPU point: %.3g FLOPs, %.3g elements)\n", phase, what, ran,
           want, max_flops, SWEEP_CPU_MAX_ELEMS);
    return true;
}

attn_problem_t sweep_bound(const char *phase, const char *what, const attn_problem_t *p, double max_flops)
{
    const attn_problem_t q = shrink(p, max_flops);
    say_shrunk(phase, what, p, &q, max_flops);
    return q;
}

attn_problem_t sweep_cpu_problem(sweep_t *s, const attn_problem_t *p)
{
    const double max_flops = s->part->cpu_flops > 0 ? s->part->cpu_flops : SWEEP_CPU_MAX_FLOPS;
    const attn_problem_t q = shrink(p, max_flops);
    if (!s->shrunk_said) {
        char what[64];
        snprintf(what, sizeof what, "sweep %s", s->part->name);
        s->shrunk_said = say_shrunk(s->D->phase, what, p, &q, max_flops);
    }
    return q;
}

void sweep_stop_group(sweep_t *s, const sweep_point_t *pt) { s->stop_group = pt->group; }

void sweep_count(sweep_t *s, const drv_row_t *r) { s->fails += drv_failed(r); }

/* ---- the peers' points ---------------------------------------------------------------- */
static bool same_problem(const attn_problem_t *a, const attn_problem_t *b)
{
    return a->B == b->B && a->H == b->H && a->H_kv == b->H_kv && a->N_q == b->N_q && a->N_kv == b->N_kv &&
           a->d == b->d && a->causal == b->causal;
}

/* <csv>.points: the GPU points of the parts marked peers, each once (in a part's order). */
static int write_peers(const sweep_t *s, const sweep_def_t *def)
{
    bool any = false;
    for (int k = 0; k < def->nparts; k++) any |= def->parts[k].peers;
    if (!any) return 0;
    char path[4096];
    if (snprintf(path, sizeof path, "%s.points", s->D->csv_path) >= (int)sizeof path) return -1;
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "# %s sweep: the points the peers time (tools/sdpa_peer.py read_points)\nB,H,H_kv,N_q,N_kv,d,causal\n",
            s->D->phase);
    for (int k = 0; k < def->nparts; k++) {
        const sweep_part_t *pt = &def->parts[k];
        for (int i = 0; pt->peers && i < pt->npoints; i++) {
            bool seen = false;
            for (int j = 0; j < i && !seen; j++) seen = same_problem(&pt->points[j].p, &pt->points[i].p);
            const attn_problem_t *p = &pt->points[i].p;
            if (!seen) fprintf(f, "%d,%d,%d,%d,%d,%d,%d\n", p->B, p->H, p->H_kv, p->N_q, p->N_kv, p->d, p->causal);
        }
    }
    return fclose(f) == 0 ? 0 : -1;
}

/* ---- the run -------------------------------------------------------------------------- */
static void run_part(sweep_t *s, const sweep_part_t *part)
{
    s->part = part;
    s->stop_group = -1;
    s->shrunk_said = false;
    for (int i = 0; i < part->npoints; i++) {
        const sweep_point_t *pt = &part->points[i];
        if (pt->group == s->stop_group) continue;
        drv_row_t rows[SWEEP_ROWS_MAX];
        const int n = part->run(s, pt, rows);
        for (int k = 0; k < n; k++) {
            s->fails += drv_failed(&rows[k]);
            drv_csv_row(s->D, &rows[k]);
        }
        if (part->line) part->line(s, pt, rows, n);
        else drv_sweep_line(rows, n);
        fflush(stdout);
    }
}

int sweep_run(drv_t *D, const cli_opts_t *o, const sweep_def_t *def)
{
    sweep_t s;
    memset(&s, 0, sizeof s);
    s.D = D; s.o = o; s.ctx = def->ctx;
    bool gpu_started = false, gpu_said = false;
    for (int k = 0; k < def->nparts; k++) {
        const sweep_part_t *part = &def->parts[k];
        if (part->where == SWEEP_NO_GPU && D->gpu) continue;
        if (part->where == SWEEP_GPU && (!D->gpu || !part->run)) {
            if (!gpu_said) printf("%s: GPU sweep skipped: %s\n", D->phase, D->why);
            gpu_said = true;
            continue;
        }
        if (part->where == SWEEP_GPU && !gpu_started) {
            if (def->gpu_begin) def->gpu_begin(&s);
            gpu_started = true;
        }
        run_part(&s, part);
    }
    if (gpu_started && def->gpu_end) def->gpu_end(&s);
    if (gpu_started && write_peers(&s, def) != 0)
        fprintf(stderr, "%s: could not write the peers' points next to %s\n", D->phase, D->csv_path);
    return drv_sweep_end(D, s.fails);
}

int sweep_run_parts(drv_t *D, const cli_opts_t *o, const sweep_part_t *parts, int n)
{
    const sweep_def_t def = { parts, n, NULL, NULL, NULL };
    return sweep_run(D, o, &def);
}
