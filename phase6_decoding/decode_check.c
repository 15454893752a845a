/* decode_check.c - the fp64 oracle on a ragged KV cache: each sequence alone, with its
 * own number of keys, through REF(oracle_fwd) (common/ref.h), so that an exercise build
 * of phase 6 never compares with code a student writes elsewhere. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "decode.h"
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
