/* fa2_check.c - the causal range of fa2_kv_blocks() against a brute-force scan of the
 * mask: whatever a shape's N_q, N_kv and blocks, Q block i must visit exactly the K/V
 * blocks that hold an entry one of its rows may see, and no more. */
#include <stdio.h>
#include <math.h>
#include "fa2.h"
#include "naive.h"   /* attn_validate_rmse: phase 1's oracle rows */

int fa2_check_causal_range(const attn_problem_t *p, attn_blocks_t bl, char *why, size_t len)
{
    attn_problem_t pm = *p;
    pm.causal = true;
    pm.mask_id = 0;   /* the causal rule alone, whatever mask the problem has */
    const int Tr = (p->N_q + bl.Br - 1) / bl.Br, Tc = (p->N_kv + bl.Bc - 1) / bl.Bc;
    for (int i = 0; i < Tr; i++) {
        int want = 0;   /* one past the last K/V block with a visible entry */
        for (int j = 0; j < Tc; j++)
            for (int row = i * bl.Br; row < p->N_q && row < (i + 1) * bl.Br; row++)
                if (attn_visible(&pm, row, j * bl.Bc)) { want = j + 1; break; }   /* its first key */
        int got = fa2_kv_blocks(&pm, i, bl.Br, bl.Bc);
        if (got != want) {
            snprintf(why, len, "causal range: Q block %d visits %d K/V blocks, not %d", i, got, want);
            return -1;
        }
    }
    return 0;
}

double fa2_fp8_rmse_bound(const attn_inputs_t *in, int check_rows)
{
    const size_t n = attn_kv_elems(&in->p);
    double sum = 0.0;
    for (size_t e = 0; e < n; e++) sum += (double)in->v[e] * in->v[e];
    const double rms_v = n ? sqrt(sum / (double)n) : 0.0;
    return fa2_fp8_rmse_tol(in->p.d) + 0x1p-3 * rms_v * sqrt(attn_mean_sum_p2(in, check_rows));
}

/* wgmma-fp8's rows: FP8's own tolerance (fa2.h), on the oracle rows the fp16 rows use */
void fa2_check_fp8(drv_row_t *r, const attn_inputs_t *in, const float *O, const float *L, int check_rows)
{
    const double tol = fa2_fp8_rmse_bound(in, check_rows);
    const attn_verdict_t v = attn_validate_rmse(in, O, L, check_rows, tol, FA2_FP8_L_TOL);
    r->max_abs = v.O.max_abs; r->rel_l2 = v.O.rel_l2; r->pipe = v.pipeline_max_abs;
    r->rows_checked = v.rows_checked;
    if (L) r->L_abs = v.L.max_abs;
    if (v.pass) return;
    if (v.O.nan_count || v.O.inf_mismatch || !(v.rmse <= tol)) {
        drv_fail(r, "vs oracle: O's RMSE %.3e on %d rows, %zu NaN, %zu wrong infinities (FP8: RMSE <= %.3e, fa2.h)",
                 v.rmse, v.rows_checked, v.O.nan_count, v.O.inf_mismatch, tol);
    } else {
        char where[160];
        err_first_bad_str(&v.L, in->p.N_q, "L", where, sizeof where);
        drv_fail(r, "vs oracle: %s (FP8: |L - L_oracle| <= %.2f (1 + |L_oracle|), fa2.h)", where, FA2_FP8_L_TOL);
    }
}
