/* bwd_sweep.c - phase 5's --sweep, as tables of points run by common/sweep.c:
 *
 *   vsN (CPU)        bytes vs N (d = 64, one head, causal and not): the standard backward
 *                    (fp16 S, P, dP, dS) and FA2's, the models counted up to N = 512, the
 *                    formulas beyond;
 *   wall (CPU)       the training memory wall: the smallest N whose S, P, dP, dS (fp16)
 *                    of B = 32, H = 8, d = 64 exceed an 80 GB GPU;
 *   tokens16k (GPU)  the FA2 paper's setting (hidden 2048, B x N = 16k tokens, d = 64 and
 *                    128; causal and not, --causal: causal only): the peers' points.
 */
#include <math.h>
#include <stdio.h>
#include "bwd.h"
#include "bwd_rows.h"
#include "bwd_sweep.h"
#include "sweep.h"

#define WALL_BYTES   80e9   /* an 80 GB GPU (1 GB = 1e9 bytes)                                   */
#define SIMPLE_MAX_N 2048   /* the sweep times the simple kernel up to this N (it takes seconds) */
#define COUNT_MAX_N  512    /* the models run up to this N, the formulas beyond                  */

static bwd_cpu_rows_fn cpu_rows;   /* main.c's CPU rows */

static int vsN_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows)
{
    if (pt->p.N_q <= COUNT_MAX_N) {
        const attn_problem_t p = sweep_cpu_problem(s, &pt->p);
        return cpu_rows(&p, s->o, "vsN", false, rows);
    }
    const attn_problem_t *p = &pt->p;
    const attn_blocks_t bl = bwd_blocks(p->d);
    rows[0] = drv_formula_row("std-formula", "vsN", p, (attn_blocks_t){0, 0}, bwd_std_bytes(p, 2), NAN, bwd_std_bytes(p, 2));
    rows[1] = drv_formula_row("fa2-formula", "vsN", p, bl, REF(bwd_hbm_bytes)(p, bl), NAN, bwd_std_bytes(p, 2));
    return 2;
}

static void vsN_line(sweep_t *s, const sweep_point_t *pt, const drv_row_t *rows, int n)
{
    (void)s; (void)pt;
    const drv_row_t *sd = &rows[0], *fa = &rows[n - 1];   /* std-bwd (fp16), fa2-bwd */
    const bool counted = n == 3;
    printf("  sweep vsN %-6s N=%6d  HBM standard (fp16 S, P, dP, dS) %.4g  FA2 %.4g  (%.1fx)  %s\n",
           sd->p.causal ? "causal" : "full", sd->p.N_q, sd->hbm_formula, fa->hbm_formula, sd->hbm_formula / fa->hbm_formula,
           counted ? (drv_passed(sd) && drv_passed(fa) ? "counted == formula" : "FAIL") : "formula");
}

/* The smallest N whose four matrices exceed WALL_BYTES (bisection), and what FA2 keeps. */
static int wall_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows)
{
    int lo = 1, hi = 1 << 20;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        attn_problem_t p = pt->p;
        p.N_q = p.N_kv = mid;
        if (bwd_std_sp_bytes(&p, 2) > WALL_BYTES) hi = mid; else lo = mid + 1;
    }
    attn_problem_t pw = pt->p, pb = pt->p;
    pw.N_q = pw.N_kv = lo;
    pb.N_q = pb.N_kv = lo - 1;
    printf("%s: memory wall (B = 32, H = 8, fp16): S, P, dP, dS take 4 x 2 x B H N^2 bytes: %.2f GB at N = %d, "
           "%.2f GB at N = %d: past 80 GB from N = %d (FA2's backward keeps none of them: %.3g GB of "
           "Q, K, V, O, dO, dQ, dK, dV, L, D at that N)\n", s->D->phase, bwd_std_sp_bytes(&pb, 2) / 1e9, lo - 1,
           bwd_std_sp_bytes(&pw, 2) / 1e9, lo, lo,
           (4 * 2.0 + 4 * 4.0) * 32 * 8 * (double)lo * 64 / 1e9 + 2 * 4.0 * 32 * 8 * lo / 1e9);
    rows[0] = drv_formula_row("wall", "vsN", &pw, bwd_blocks(64), bwd_hbm_bytes(&pw, bwd_blocks(64)), NAN, bwd_std_bytes(&pw, 2));
    return 1;
}

static void no_line(sweep_t *s, const sweep_point_t *pt, const drv_row_t *rows, int n)
{
    (void)s; (void)pt; (void)rows; (void)n;   /* wall_point says it all */
}

#if HAVE_CUDA
static int t16k_rows(sweep_t *s, const sweep_point_t *pt, const attn_inputs_t *in, drv_row_t *rows)
{
    return bwd_gpu_rows(in, s->o, "tokens16k", pt->p.N_q <= SIMPLE_MAX_N, rows, NULL);
}

static int t16k_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows)
{
    return sweep_inputs_point(s, pt, true, t16k_rows, "std", "mma", rows);
}
#else
#define t16k_point NULL   /* no GPU part to run */
#endif

int bwd_sweep(drv_t *D, const cli_opts_t *o, bwd_cpu_rows_fn fn)
{
    cpu_rows = fn;
    sweep_point_t cpu[2 * 8], wall = sweep_point(attn_problem(32, 8, 8, 1, 1, 64, false)), gpu[2 * 2 * 6];
    int nc = 0;
    for (int c = 0; c <= 1; c++)
        for (int N = 128; N <= 16384; N *= 2) cpu[nc++] = sweep_point(attn_problem(1, 1, 1, N, N, 64, c));
    const int ng = sweep_tokens16k(gpu, 2 * 2 * 6, o->p.causal, 1, 64, 128);
    const sweep_part_t parts[] = {
        { .name = "vsN", .where = SWEEP_CPU, .points = cpu, .npoints = nc, .run = vsN_point, .line = vsN_line },
        { .name = "wall", .where = SWEEP_CPU, .points = &wall, .npoints = 1, .run = wall_point, .line = no_line },
        sweep_tokens16k_part(gpu, ng, t16k_point),
    };
    return sweep_run_parts(D, o, parts, sizeof parts / sizeof parts[0]);
}
