/* fault_tests.c - the test that the checks have no hole at infinity, for any phase's
 * CPU model: each injected fault must FAIL the phase's checks, the CPU one (err_compare +
 * err_pass with tol_cpu() against the oracle) and the GPU one (attn_validate_fp16), and
 * the unfaulted output must PASS both. The caller's problem has fully masked rows (causal,
 * N_q > N_kv). Test support, in the library so that phases 3 and 4 share one copy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "naive.h"
#include "oracle.h"

static int checks_pass(const attn_inputs_t *in, const float *O, const float *L, const double *Or,
                       const double *Lr, char *why, size_t len)
{
    const attn_problem_t *p = &in->p;
    size_t nq = attn_q_elems(p), nl = attn_l_elems(p);
    err_stats_t eO = err_compare(O, Or, nq, tol_cpu()), eL = err_compare(L, Lr, nl, tol_cpu());
    bool cpu = err_pass(&eO, tol_cpu()) && err_pass(&eL, tol_cpu());
    attn_verdict_t v = attn_validate_fp16(in, O, L, 1000);
    char w1[200], w2[200];
    err_first_bad_str(&eO, p->d, "O", w1, sizeof w1);
    err_first_bad_str(&eL, p->N_q, "L", w2, sizeof w2);
    snprintf(why, len, "cpu check %s (%s; %s), attn_validate_fp16 %s", cpu ? "PASS" : "FAIL", w1, w2,
             v.pass ? "PASS" : "FAIL");
    return (cpu ? 1 : 0) + (v.pass ? 2 : 0);           /* 3: both pass, 0: both fail */
}

void attn_fault_tests(const char *tag, const attn_inputs_t *in, const float *O0, const float *L0,
                      void (*report)(int ok, const char *name, const char *why))
{
    const attn_problem_t *p = &in->p;
    size_t nq = attn_q_elems(p), nl = attn_l_elems(p);
    const int masked = p->N_q - p->N_kv;
    double *Or = malloc(nq * 8), *Lr = malloc(nl * 8);
    float *O = malloc(nq * 4), *L = malloc(nl * 4);
    char name[200], why[600];
    REF(oracle_fwd)(p, in->q, in->k, in->v, Or, Lr);   /* the reference, whatever state phase 0 is in */
    snprintf(name, sizeof name, "faults (%s): the unfaulted O, L with masked rows pass both checks", tag);
    report(checks_pass(in, O0, L0, Or, Lr, why, sizeof why) == 3 && isinf(Lr[0]) && Lr[0] > 0 &&
           isfinite(Lr[masked]), name, why);
    struct { int is_L; size_t at; float val; const char *what; } f[] = {
        {0, 5 * (size_t)p->d + 3,  INFINITY,  "O = +inf"},
        {0, 20 * (size_t)p->d + 7, NAN,       "O = NaN"},
        {1, 3,                     -INFINITY, "masked row L = -inf (ref +inf)"},
        {1, (size_t)p->N_q + 15,   0.0f,      "masked row L = 0 (ref +inf)"},
        {1, 7,                     5.0f,      "masked row L finite where +inf is due"},
        {1, 30,                    INFINITY,  "L = +inf where a finite L is due"},
    };
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        memcpy(O, O0, nq * 4);
        memcpy(L, L0, nl * 4);
        if (f[k].is_L) L[f[k].at] = f[k].val; else O[f[k].at] = f[k].val;
        snprintf(name, sizeof name, "faults (%s): %s fails both checks", tag, f[k].what);
        report(checks_pass(in, O, L, Or, Lr, why, sizeof why) == 0, name, why);
    }
    free(Or); free(Lr); free(O); free(L);
}

