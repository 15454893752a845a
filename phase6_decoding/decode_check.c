/* decode_check.c - the fp64 oracle on a ragged KV cache: each sequence alone, with its
 * own number of keys, through REF(oracle_fwd) (common/ref.h), so that an exercise build
 * of phase 6 never compares with code a student writes elsewhere; and the GPU check of a
 * ragged output, each sequence held to phase 1's 2x rule on its own inputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "decode.h"
#include <stdio.h>
#include "naive.h"
#include "oracle.h"

int dec_oracle_ragged(const attn_inputs_t *in, const int *seqlens, double *Oref, double *Lref)
{
    const attn_problem_t *p = &in->p;
    const size_t qd = (size_t)p->H * p->N_q * p->d, ql = (size_t)p->H * p->N_q, d = (size_t)p->d;
    float *Kc = malloc(sizeof(float) * (size_t)p->H_kv * p->N_kv * d);
    float *Vc = malloc(sizeof(float) * (size_t)p->H_kv * p->N_kv * d);
    if (!Kc || !Vc) { free(Kc); free(Vc); return -1; }
    for (int b = 0; b < p->B; b++) {
        const int n = seqlens ? seqlens[b] : p->N_kv;
        double *O = Oref + (size_t)b * qd, *L = Lref + (size_t)b * ql;
        if (n == 0) {   /* no key at all: O = 0, L = +inf (common/problem.h) */
            for (size_t e = 0; e < qd; e++) O[e] = 0.0;
            for (size_t e = 0; e < ql; e++) L[e] = INFINITY;
            continue;
        }
        /* sequence b alone, its first n keys packed as [H_kv][n][d] */
        attn_problem_t pb = attn_problem(1, p->H, p->H_kv, p->N_q, n, p->d, p->causal);
        pb.scale = p->scale;
        for (int g = 0; g < p->H_kv; g++) {
            const size_t from = ((size_t)b * p->H_kv + g) * (size_t)p->N_kv * d, to = (size_t)g * n * d;
            memcpy(Kc + to, in->k + from, sizeof(float) * (size_t)n * d);
            memcpy(Vc + to, in->v + from, sizeof(float) * (size_t)n * d);
        }
        REF(oracle_fwd)(&pb, in->q + (size_t)b * qd, Kc, Vc, O, L);
    }
    free(Kc);
    free(Vc);
    return 0;
}

/* A GPU output on a ragged cache: each sequence alone, as its own problem of n keys, held
 * to phase 1's check (the oracle and the 2x rule against the fp16 pipeline on that
 * sequence's own inputs); a sequence of 0 keys must give O = 0 and L = +inf exactly. */
void dec_check_ragged_fp16(drv_row_t *r, const attn_inputs_t *in, const int *seqlens, const float *O,
                           const float *L, int check_rows)
{
    const attn_problem_t *p = &in->p;
    const size_t d = (size_t)p->d, qd = (size_t)p->H * p->N_q * d, ql = (size_t)p->H * p->N_q;
    double max_abs = 0, rel = 0, pipe = 0, Labs = 0;
    int rows = 0;
    for (int b = 0; b < p->B; b++) {
        const int n = seqlens[b];
        const float *Ob = O + (size_t)b * qd, *Lb = L + (size_t)b * ql;
        char where[160];
        if (n == 0) {   /* no key: O = 0, L = +inf, every element */
            for (size_t e = 0; e < qd; e++)
                if (Ob[e] != 0.0f) { drv_fail(r, "sequence %d (0 keys): O[%zu] = %g, want 0", b, e, Ob[e]); return; }
            for (size_t e = 0; e < ql; e++)
                if (!(Lb[e] == INFINITY)) { drv_fail(r, "sequence %d (0 keys): L[%zu] = %g, want +inf", b, e, Lb[e]); return; }
            continue;
        }
        attn_inputs_t sub;
        memset(&sub, 0, sizeof sub);
        sub.p = attn_problem(1, p->H, p->H_kv, p->N_q, n, p->d, p->causal);
        sub.p.scale = p->scale;
        const size_t kv = (size_t)p->H_kv * n * d;
        sub.q = malloc(sizeof(float) * qd); sub.q_h = malloc(2 * qd);
        sub.k = malloc(sizeof(float) * kv); sub.v = malloc(sizeof(float) * kv);
        sub.k_h = malloc(2 * kv); sub.v_h = malloc(2 * kv);
        if (!sub.q || !sub.q_h || !sub.k || !sub.v || !sub.k_h || !sub.v_h) {
            fprintf(stderr, "phase6: out of host memory\n");
            exit(1);
        }
        memcpy(sub.q, in->q + (size_t)b * qd, sizeof(float) * qd);
        memcpy(sub.q_h, in->q_h + (size_t)b * qd, 2 * qd);
        for (int g = 0; g < p->H_kv; g++) {
            const size_t from = ((size_t)b * p->H_kv + g) * (size_t)p->N_kv * d, to = (size_t)g * n * d;
            memcpy(sub.k + to, in->k + from, sizeof(float) * n * d);
            memcpy(sub.v + to, in->v + from, sizeof(float) * n * d);
            memcpy(sub.k_h + to, in->k_h + from, 2 * n * d);
            memcpy(sub.v_h + to, in->v_h + from, 2 * n * d);
        }
        attn_verdict_t v = attn_validate_fp16(&sub, Ob, Lb, check_rows);
        if (v.O.max_abs > max_abs) max_abs = v.O.max_abs;
        if (v.O.rel_l2 > rel || isnan(v.O.rel_l2)) rel = v.O.rel_l2;
        if (v.pipeline_max_abs > pipe) pipe = v.pipeline_max_abs;
        if (v.L.max_abs > Labs || isnan(v.L.max_abs)) Labs = v.L.max_abs;
        rows += v.rows_checked;
        if (!v.pass) {
            if (!err_pass(&v.O, v.tol)) err_first_bad_str(&v.O, p->d, "O", where, sizeof where);
            else err_first_bad_str(&v.L, p->N_q, "L", where, sizeof where);
            drv_fail(r, "sequence %d (%d keys) vs oracle: %s (2x rule: max abs <= %.3e)", b, n, where, v.tol.max_abs);
        }
        free(sub.q); free(sub.q_h); free(sub.k); free(sub.v); free(sub.k_h); free(sub.v_h);
        if (!drv_passed(r)) return;
    }
    r->max_abs = max_abs; r->rel_l2 = rel; r->pipe = pipe; r->L_abs = Labs; r->rows_checked = rows;
}
