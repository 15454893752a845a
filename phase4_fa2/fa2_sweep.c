/* fa2_sweep.c - phase 4's --sweep, as tables of points run by common/sweep.c:
 *
 *   vsN (CPU)        the model vs N (d = 64, one head, causal and not): bytes and
 *                    non-matmul counts of FA2 (counted up to N = 1024, the formula beyond)
 *                    beside FA1's formula;
 *   tokens16k (GPU)  the FA2 paper's setting (fp16, hidden 2048, B x N = 16k tokens,
 *                    N = 512..16384, d = 64, 128, 256, causal and not): the peers' points.
 *                    d = 256: fa2-mma, wgmma-ws, wgmma-persist and wgmma-fp8 (phase 3's
 *                    kernel as each one's check): the other kernels are not built for it
 *                    or take minutes there; wgmma-fp8 at d = 128 too. --kernel wgmma: the
 *                    Hopper steps and wgmma-fp8 alone. --d D and --causal=0|1: only
 *                    the points of that head dim and half.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "fa1.h"
#include "fa2_rows.h"
#include "sweep.h"

#define SIMPLE_MAX_N 4096   /* the sweep times the simple kernels up to this N */

static int vsN_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows)
{
    const bool counted = pt->p.N_q <= 1024;
    const attn_problem_t p = counted ? sweep_cpu_problem(s, &pt->p) : pt->p;
    attn_blocks_t bl = fa2_mma_blocks(p.d), b1;
    REF(fa1_block_sizes)(FA2_FA1_M, p.d, &b1);
    rows[0] = counted ? fa2_cpu_row(&p, s->o, "vsN", false)
            : drv_formula_row("formula", "vsN", &p, bl, fa2_hbm_bytes(&p, bl), fa2_nonmatmul_flops(&p, bl), NAN);
    rows[1] = drv_formula_row("fa1-formula", "vsN", &p, b1, fa1_hbm_bytes(&p, b1.Bc), fa1_nonmatmul_flops(&p, b1.Bc), NAN);
    return 2;
}

static void vsN_line(sweep_t *s, const sweep_point_t *pt, const drv_row_t *rows, int n)
{
    (void)s; (void)pt; (void)n;
    const drv_row_t *r = &rows[0], *r1 = &rows[1];
    printf("  sweep vsN %-6s N=%6d  HBM fa2 %.0f (fa1 %.0f, %.1fx)  non-matmul fa2 %.3g (fa1 %.3g, %.2fx)  %s\n",
           r->p.causal ? "causal" : "full", r->p.N_q, r->hbm_formula, r1->hbm_formula, r1->hbm_formula / r->hbm_formula,
           r->nonmatmul, r1->nonmatmul, r1->nonmatmul / r->nonmatmul, r->verdict);
}

#if HAVE_CUDA
static int t16k_rows(sweep_t *s, const sweep_point_t *pt, const attn_inputs_t *in, drv_row_t *rows)
{
    /* d = 256: fa2-mma and the Hopper kernels built for it (steps 3 and 6, FP8): the others
     * are not built for it or take minutes there. d = 128 and 256: the FP8 kernel too (a row
     * only when named, so asked for here by name) */
    static const char *const D256[] = { "mma", "wgmma-ws", "wgmma-persist", "wgmma-fp8" };
    _Static_assert(FA2_GPU_ROWS_MAX + 1 <= SWEEP_ROWS_MAX, "a d = 128 point: every row and wgmma-fp8's");
    /* --kernel all: every kernel; --kernel wgmma: the Hopper steps and FP8 alone (the sweep
     * without the minutes the teaching kernels take at 16k tokens) */
    const bool all = strcmp(s->o->kernel, "all") == 0, hopper = strcmp(s->o->kernel, "wgmma") == 0;
    const int simple_ok = pt->p.N_q <= SIMPLE_MAX_N;
    cli_opts_t one = *s->o;
    int n = 0;
    if ((all || hopper) && pt->p.d == 256) {
        for (size_t k = hopper ? 1 : 0; k < sizeof D256 / sizeof D256[0]; k++) {
            one.kernel = D256[k];
            n += fa2_gpu_rows(in, &one, "tokens16k", FA2_SWEEP_ROWS, simple_ok, rows + n);
        }
        return n;
    }
    n = fa2_gpu_rows(in, s->o, "tokens16k", FA2_SWEEP_ROWS, simple_ok, rows);
    if ((all || hopper) && pt->p.d == 128) {
        one.kernel = "wgmma-fp8";
        n += fa2_gpu_rows(in, &one, "tokens16k", FA2_SWEEP_ROWS, simple_ok, rows + n);
    }
    return n;
}

static int t16k_point(sweep_t *s, const sweep_point_t *pt, drv_row_t *rows)
{
    return sweep_inputs_point(s, pt, false, t16k_rows, "fa1-mma", "mma", rows);
}
#else
#define t16k_point NULL   /* no GPU part to run */
#endif

int fa2_sweep(drv_t *D, const cli_opts_t *o)
{
    sweep_point_t cpu[2 * 7], gpu[2 * 3 * 6];
    int nc = 0, ng = 0;
    for (int c = 0; c <= 1; c++)
        for (int N = 256; N <= 16384; N *= 2) cpu[nc++] = sweep_point(attn_problem(1, 1, 1, N, N, 64, c));
    /* --d D and --causal=0|1: only that head dim's and that half's points (the sweep in
     * pieces, each short enough for one call) */
    const int d0 = o->sweep_d ? o->sweep_d : 64, d1 = o->sweep_d ? o->sweep_d : 256;
    const int c0 = o->sweep_causal < 0 ? 0 : o->sweep_causal, c1 = o->sweep_causal < 0 ? 1 : o->sweep_causal;
    ng = sweep_tokens16k(gpu, 2 * 3 * 6, c0, c1, d0, d1);
    const sweep_part_t parts[] = {
        { .name = "vsN", .where = SWEEP_CPU, .points = cpu, .npoints = nc, .run = vsN_point, .line = vsN_line },
        sweep_tokens16k_part(gpu, ng, t16k_point),
    };
    return sweep_run_parts(D, o, parts, sizeof parts / sizeof parts[0]);
}
