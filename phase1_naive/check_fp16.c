/* check_fp16.c - the check of every fp16-in / fp32-accumulate kernel output (phases 1-4),
 * as one driver row: attn_validate_fp16's 2x rule, its numbers in the row, and the first
 * bad element as the reason of a FAIL. */
#include "naive.h"

void attn_check_fp16(drv_row_t *r, const attn_inputs_t *in, const float *O, const float *L, int check_rows)
{
    attn_verdict_t v = attn_validate_fp16(in, O, L, check_rows);
    r->max_abs = v.O.max_abs; r->rel_l2 = v.O.rel_l2; r->pipe = v.pipeline_max_abs;
    r->rows_checked = v.rows_checked;
    if (L) r->L_abs = v.L.max_abs;
    if (v.pass) return;
    char where[160];
    if (!err_pass(&v.O, v.tol)) {
        err_first_bad_str(&v.O, in->p.d, "O", where, sizeof where);
        drv_fail(r, "vs oracle: %s (%d rows checked; rel L2 < %.0e, max abs <= %.3e)", where,
                 v.rows_checked, v.tol.rel_l2, v.tol.max_abs);
    } else {
        err_first_bad_str(&v.L, in->p.N_q, "L", where, sizeof where);
        drv_fail(r, "vs oracle: %s (L within 1e-3; a fully masked row's L is +inf)", where);
    }
}
