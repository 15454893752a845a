/* oracle_check.c - a CPU model's output against the fp64 oracle, as one driver row. */
#include <stdlib.h>
#include "oracle.h"

void oracle_check_cpu_row(drv_row_t *r, const attn_inputs_t *in, const float *O, const float *L,
                          const char *exercises_O, const char *exercises_L)
{
    const attn_problem_t *p = &in->p;
    const tol_t tol = tol_cpu_keys(p->N_kv);   /* 1e-5, more over long caches (check.h) */
    size_t nq = attn_q_elems(p), nl = attn_l_elems(p);
    double *Oref = xmalloc(nq * sizeof(double), "oracle"), *Lref = xmalloc(nl * sizeof(double), "oracle");
    REF(oracle_fwd)(p, in->q, in->k, in->v, Oref, Lref);
    /* L first: it depends on fewer exercises than O (the running max and sum alone), so a
     * row whose L is right and whose O is wrong names O's exercises without L's */
    err_stats_t eL = err_compare(L, Lref, nl, tol);
    r->L_abs = eL.max_abs;
    drv_compare(r, "vs oracle", "L", L, Lref, nl, p->N_q, tol, false, exercises_L);
    drv_compare(r, "vs oracle", "O", O, Oref, nq, p->d, tol, true, exercises_O);
    free(Oref); free(Lref);
}
