/* bwd_worked.c - chapter 0's 4 x 2 worked example, backward (docs/05_backward.md).
 *
 * Q, K, V of phase0_model/worked.c (one head, N = 4, d = 2, scale 1, no mask) and a small
 * upstream gradient dO. The backward in fp64 by the formulas of bwd.h, every intermediate
 * printed; then checked three ways:
 *   - against the fp64 oracle's backward (REF(oracle_bwd));
 *   - against central finite differences of the fp64 forward (REF(oracle_fwd)) of the
 *     loss f = sum(dO * O): df/dx ~ (f(x + h) - f(x - h)) / 2h, h = 2^-10;
 *   - the two CPU models of this phase on the same tiny problem (FA2's with Br = Bc = 2,
 *     the 2 x 2 grid of chapter 0's tiles; the standard one in fp32), within tol_cpu().
 */
#include <math.h>
#include <string.h>
#include "bwd.h"
#include "fa2.h"
#include "check.h"
#include "fp16.h"

enum { WN = 4, WD = 2 };
static const float wQ[WN * WD] = {1, 0, 0, 1, 2, 1, 1, 2};
static const float wK[WN * WD] = {1, 1, 0, 2, 1, 0, 2, 1};
static const float wV[WN * WD] = {1, 0, 0, 1, 2, 1, 1, 2};
static const float wdO[WN * WD] = {1, 0, 0, -1, 0.5f, 0.5f, -1, 1};

#define PR(...) do { if (out) fprintf(out, __VA_ARGS__); } while (0)

static void print_mat(FILE *out, const char *name, const double *x, int rows, int cols)
{
    if (!out) return;
    fprintf(out, "    %-4s=", name);
    for (int i = 0; i < rows; i++) {
        fprintf(out, " [");
        for (int c = 0; c < cols; c++) fprintf(out, "%s%8.4f", c ? "," : "", x[i * cols + c]);
        fprintf(out, "]");
    }
    fprintf(out, "\n");
}

static int check(FILE *out, int *n, const char *name, double got, double want, double tol)
{
    (*n)++;
    if (fabs(got - want) <= tol) return 0;
    PR("FAIL %s: %.8f vs %.8f\n", name, got, want);
    return 1;
}

/* the loss sum(dO * O) of the fp64 forward */
static double loss(const attn_problem_t *p, const float *Q, const float *K, const float *V)
{
    double O[WN * WD], f = 0;
    REF(oracle_fwd)(p, Q, K, V, O, NULL);
    for (int k = 0; k < WN * WD; k++) f += wdO[k] * O[k];
    return f;
}

/* The worked example as a problem of its own (scale 1): 0, or -1 out of memory. */
static int worked_inputs(attn_inputs_t *in)
{
    attn_problem_t p = attn_problem(1, 1, 1, WN, WN, WD, false);
    p.scale = 1.0f;
    if (attn_inputs_make(in, &p, 1, true) != 0) return -1;
    in->p = p;
    memcpy(in->q, wQ, sizeof wQ); memcpy(in->k, wK, sizeof wK); memcpy(in->v, wV, sizeof wV); memcpy(in->dO, wdO, sizeof wdO);
    f32_to_f16_array(in->q_h, wQ, WN * WD); f32_to_f16_array(in->k_h, wK, WN * WD);
    f32_to_f16_array(in->v_h, wV, WN * WD); f32_to_f16_array(in->do_h, wdO, WN * WD);
    return 0;
}

const char *bwd_worked_blame(void)
{
    attn_inputs_t in;
    if (worked_inputs(&in) != 0) return NULL;
    float O[WN * WD], L[WN];
    double rQ[WN * WD], rK[WN * WD], rV[WN * WD];
    double *ref[3] = { rQ, rK, rV };
    const attn_blocks_t b2 = { 2, 2 };
    REF(fa2_cpu)(&in, b2, O, L, NULL, NULL);
    REF(oracle_bwd)(&in.p, wQ, wK, wV, wdO, rQ, rK, rV);
    const char *ex = bwd_blame(&in, b2, O, L, ref, NULL);
    attn_inputs_free(&in);
    return ex;
}

int bwd_worked(FILE *out, int *nchecks)
{
    attn_problem_t p = attn_problem(1, 1, 1, WN, WN, WD, false);
    p.scale = 1.0f;
    double S[WN * WN], P[WN * WN], O[WN * WD] = {0}, L[WN], dP[WN * WN], D[WN], dS[WN * WN];
    double dQ[WN * WD] = {0}, dK[WN * WD] = {0}, dV[WN * WD] = {0};
    for (int i = 0; i < WN; i++) {
        double m = -INFINITY, l = 0;
        for (int j = 0; j < WN; j++) {
            S[i * WN + j] = wQ[i * WD] * wK[j * WD] + wQ[i * WD + 1] * wK[j * WD + 1];
            m = fmax(m, S[i * WN + j]);
        }
        for (int j = 0; j < WN; j++) l += exp(S[i * WN + j] - m);
        L[i] = m + log(l);
        for (int j = 0; j < WN; j++) {
            P[i * WN + j] = exp(S[i * WN + j] - L[i]);
            for (int c = 0; c < WD; c++) O[i * WD + c] += P[i * WN + j] * wV[j * WD + c];
        }
    }
    for (int i = 0; i < WN; i++) {
        D[i] = 0;
        for (int c = 0; c < WD; c++) D[i] += wdO[i * WD + c] * O[i * WD + c];
        for (int j = 0; j < WN; j++) {
            dP[i * WN + j] = wdO[i * WD] * wV[j * WD] + wdO[i * WD + 1] * wV[j * WD + 1];
            dS[i * WN + j] = P[i * WN + j] * (dP[i * WN + j] - D[i]);
        }
    }
    for (int i = 0; i < WN; i++)
        for (int j = 0; j < WN; j++)
            for (int c = 0; c < WD; c++) {
                dV[j * WD + c] += P[i * WN + j] * wdO[i * WD + c];
                dQ[i * WD + c] += dS[i * WN + j] * wK[j * WD + c];
                dK[j * WD + c] += dS[i * WN + j] * wQ[i * WD + c];
            }
    double Dalt[WN];   /* D = rowsum(P * dP), the long way */
    for (int i = 0; i < WN; i++) { Dalt[i] = 0; for (int j = 0; j < WN; j++) Dalt[i] += P[i * WN + j] * dP[i * WN + j]; }

    PR("worked example (chapter 0's 4 x 2: Q, K, V of docs/00_model.md, scale 1, no mask), backward\n");
    PR("  the forward:\n");
    print_mat(out, "S", S, WN, WN); print_mat(out, "P", P, WN, WN);
    print_mat(out, "O", O, WN, WD); print_mat(out, "L", L, 1, WN);
    PR("  the backward, with dO = [[1,0],[0,-1],[0.5,0.5],[-1,1]]:\n");
    print_mat(out, "dV", dV, WN, WD); print_mat(out, "dP", dP, WN, WN);
    print_mat(out, "D", D, 1, WN);
    print_mat(out, "sum", Dalt, 1, WN);
    PR("         (the row sums of P * dP: the same D, from N_kv products a row instead of d)\n");
    print_mat(out, "dS", dS, WN, WN); print_mat(out, "dQ", dQ, WN, WD); print_mat(out, "dK", dK, WN, WD);

    int fails = 0, n = 0;
    char name[96];
    /* 1. the oracle's backward */
    double rQ[WN * WD], rK[WN * WD], rV[WN * WD];
    REF(oracle_bwd)(&p, wQ, wK, wV, wdO, rQ, rK, rV);
    for (int k = 0; k < WN * WD; k++) {
        snprintf(name, sizeof name, "worked dQ[%d] == oracle_bwd", k); fails += check(out, &n, name, dQ[k], rQ[k], 1e-12);
        snprintf(name, sizeof name, "worked dK[%d] == oracle_bwd", k); fails += check(out, &n, name, dK[k], rK[k], 1e-12);
        snprintf(name, sizeof name, "worked dV[%d] == oracle_bwd", k); fails += check(out, &n, name, dV[k], rV[k], 1e-12);
    }
    for (int i = 0; i < WN; i++) {
        snprintf(name, sizeof name, "worked D[%d] == rowsum(P * dP)", i); fails += check(out, &n, name, D[i], Dalt[i], 1e-12);
    }
    /* 2. central finite differences of the fp64 forward */
    const float h = 1.0f / 1024;
    double worst = 0;
    for (int t = 0; t < 3; t++) {
        float x[WN * WD];
        const float *src = t == 0 ? wQ : t == 1 ? wK : wV;
        const double *g = t == 0 ? dQ : t == 1 ? dK : dV;
        for (int k = 0; k < WN * WD; k++) {
            memcpy(x, src, sizeof x);
            x[k] = src[k] + h;
            double fp = loss(&p, t == 0 ? x : wQ, t == 1 ? x : wK, t == 2 ? x : wV);
            x[k] = src[k] - h;
            double fm = loss(&p, t == 0 ? x : wQ, t == 1 ? x : wK, t == 2 ? x : wV);
            double fd = (fp - fm) / (2.0 * h);
            worst = fmax(worst, fabs(fd - g[k]));
            snprintf(name, sizeof name, "worked d%c[%d] == finite difference", "QKV"[t], k);
            fails += check(out, &n, name, g[k], fd, 1e-5);
        }
    }
    PR("  finite differences of the fp64 forward (h = 2^-10): largest |FD - gradient| = %.2e (bound 1e-5)\n", worst);

    /* 3. the two CPU models on the same problem: FA2 with Br = Bc = 2, the standard in fp32 */
    attn_inputs_t in;
    if (worked_inputs(&in) != 0) { PR("FAIL worked: out of memory\n"); *nchecks = n + 1; return fails + 1; }
    float fO[WN * WD], fL[WN], g[3][WN * WD], s[3][WN * WD];
    attn_blocks_t b2 = { 2, 2 };
    REF(fa2_cpu)(&in, b2, fO, fL, NULL, NULL);
    bwd_fa2(&in, b2, fO, fL, g[0], g[1], g[2], NULL);
    int rc = REF(bwd_std_cpu)(&in, fL, 4, s[0], s[1], s[2], NULL);
    const double *ref[3] = { dQ, dK, dV };
    double wf = 0, ws = 0;
    for (int t = 0; t < 3; t++) {
        err_stats_t e = err_compare(g[t], ref[t], WN * WD, tol_cpu()), es = err_compare(s[t], ref[t], WN * WD, tol_cpu());
        wf = fmax(wf, e.max_abs); ws = fmax(ws, es.max_abs);
        n += 2;
        if (!err_pass(&e, tol_cpu())) { PR("FAIL worked d%c of the FA2 model (Br = Bc = 2): max abs %.2e\n", "QKV"[t], e.max_abs); fails++; }
        if (rc != 0 || !err_pass(&es, tol_cpu())) { PR("FAIL worked d%c of the standard model: max abs %.2e\n", "QKV"[t], es.max_abs); fails++; }
    }
    PR("  the FA2 model (Br = Bc = 2) and the standard model (fp32) on it: max abs %.1e and %.1e vs the above\n", wf, ws);
    attn_inputs_free(&in);
    PR("  %d checks, %d failed\n", n, fails);
    *nchecks = n;
    return fails;
}
