/* selfcheck.c - the checks behind build/phase0's verdict (see selfcheck.h). */
#include "selfcheck.h"
#include "check.h"
#include "cost.h"
#include "oracle.h"
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int sc_line(FILE *out, const char *name, int ok, const char *fmt, ...)
{
    if (out) {
        fprintf(out, "%s %s", ok ? "PASS" : "FAIL", name);
        if (!ok) {
            va_list ap;
            va_start(ap, fmt);
            fputs(": ", out);
            vfprintf(out, fmt, ap);
            va_end(ap);
        }
        fputc('\n', out);
    }
    return !ok;
}

int sc_hint(FILE *out, int failed, const char *exercises)
{
    if (out && failed) check_hint_exercises(false, exercises);
    return failed;
}

/* ---- the unit check of p0.softmax_row: against the reference library's copy ---------
 * (common/ref.h) on rows of its own: short and long, masked entries, a fully masked row,
 * scores near 700 (exp overflows a double past 709) and near -700. A pass clears
 * p0.softmax_row (common/check.h, ex_unit): the checks after it that run the whole oracle
 * (finite differences, GQA, masked rows) then name p0.dS alone. */
int sc_unit_checks(FILE *out, int *nchecks)
{
    enum { NMAX = 40 };
    static const int LEN[] = {1, 2, 3, 7, 40};
    static const double SHIFT[] = {0.0, 700.0, -700.0, 3.5};
    double x[NMAX], w[NMAX], wr[NMAX];
    int ok = 1;
    char bad[200] = "";
    for (size_t a = 0; a < sizeof LEN / sizeof LEN[0] && ok; a++)
        for (size_t b = 0; b < sizeof SHIFT / sizeof SHIFT[0] && ok; b++)
            for (int mask = 0; mask < 3 && ok; mask++) {   /* 0: none, 1: every third entry, 2: all */
                const int n = LEN[a];
                for (int j = 0; j < n; j++)
                    x[j] = (mask == 2 || (mask == 1 && j % 3 == 1)) ? -INFINITY : SHIFT[b] + 0.37 * ((j * 7) % 11) - 1.5;
                const double L = oracle_softmax_row(x, n, w), Lr = REF(oracle_softmax_row)(x, n, wr);
                double err = L == Lr ? 0 : isfinite(L) && isfinite(Lr) ? fabs(L - Lr) : INFINITY;   /* +inf is not -inf */
                for (int j = 0; j < n; j++) err = fmax(err, w[j] == wr[j] ? 0 : fabs(w[j] - wr[j]));
                if (!(err <= 1e-12 * (1 + (isfinite(Lr) ? fabs(Lr) : 0)))) {
                    ok = 0;
                    snprintf(bad, sizeof bad, "a row of %d scores (shift %g, %s): L = %.17g, the reference %.17g; "
                             "max |w - w_ref| with L's %.3g", n, SHIFT[b], mask == 0 ? "none masked" : mask == 1 ? "every third masked" : "all masked",
                             L, Lr, err);
                }
            }
    *nchecks += 1;
    ex_unit("p0.softmax_row", ok);
    return sc_hint(out, sc_line(out, "oracle.unit.softmax_row", ok, "%s", bad), "p0.softmax_row");
}

/* ---- finite differences ------------------------------------------------------------ */
static double loss(const attn_problem_t *p, const attn_inputs_t *in, double *O)
{
    oracle_fwd(p, in->q, in->k, in->v, O, NULL);
    double f = 0;
    for (size_t i = 0; i < attn_q_elems(p); i++) f += (double)in->dO[i] * O[i];
    return f;
}

/* d loss / d x[idx] by central differences at h and h/2, Richardson-extrapolated
 * (error O(h^4)). The inputs are fp16 values, so x +- 2^-8 is exact in float: the step
 * really is h. */
static double fd_one(const attn_problem_t *p, attn_inputs_t *in, float *x, size_t idx, double *O)
{
    const float orig = x[idx];
    double D[2];
    for (int k = 0; k < 2; k++) {
        float h = k == 0 ? 0x1p-8f : 0x1p-9f;
        x[idx] = orig + h; double fp = loss(p, in, O);
        x[idx] = orig - h; double fm = loss(p, in, O);
        D[k] = (fp - fm) / (2.0 * h);
    }
    x[idx] = orig;
    return (4.0 * D[1] - D[0]) / 3.0;
}

static double rel_err_vs_fd(const attn_problem_t *p, attn_inputs_t *in, float *x,
                            const double *g, size_t n, double *O)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double fd = fd_one(p, in, x, i, O);
        num += (g[i] - fd) * (g[i] - fd);
        den += fd * fd;
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

sc_grad_err_t sc_fd_check(const attn_problem_t *p, uint64_t seed)
{
    sc_grad_err_t r = { INFINITY, INFINITY, INFINITY };
    attn_inputs_t in;
    if (attn_inputs_make(&in, p, seed, true) != 0) return r;
    size_t nq = attn_q_elems(p), nkv = attn_kv_elems(p);
    double *dQ = malloc(nq * sizeof *dQ), *dK = malloc(nkv * sizeof *dK);
    double *dV = malloc(nkv * sizeof *dV), *O = malloc(nq * sizeof *O);
    if (dQ && dK && dV && O) {
        oracle_bwd(p, in.q, in.k, in.v, in.dO, dQ, dK, dV);
        r.dq = rel_err_vs_fd(p, &in, in.q, dQ, nq, O);
        r.dk = rel_err_vs_fd(p, &in, in.k, dK, nkv, O);
        r.dv = rel_err_vs_fd(p, &in, in.v, dV, nkv, O);
    }
    free(dQ); free(dK); free(dV); free(O);
    attn_inputs_free(&in);
    return r;
}

static int fd_case(FILE *out, const char *name, attn_problem_t p)
{
    sc_grad_err_t e = sc_fd_check(&p, 7);
    int ok = e.dq < SC_FD_TOL && e.dk < SC_FD_TOL && e.dv < SC_FD_TOL;
    return sc_hint(out, sc_line(out, name, ok, "rel err vs finite differences dQ %.2e dK %.2e dV %.2e (want < %.0e)",
                                e.dq, e.dk, e.dv, SC_FD_TOL), "p0.dS, p0.softmax_row");
}

/* ---- GQA: the same as giving every query head its own copy of its KV head ----------- */
static double maxdiff(const double *a, const double *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        if (a[i] == b[i]) continue;                 /* equal infinities too */
        double d = fabs(a[i] - b[i]);
        m = isnan(d) ? INFINITY : fmax(m, d);
    }
    return m;
}

static int gqa_case(FILE *out)
{
    attn_problem_t p = attn_problem(2, 4, 2, 5, 7, 8, true), p2 = p;
    p2.H_kv = p.H;
    attn_inputs_t in;
    if (attn_inputs_make(&in, &p, 11, true) != 0) return sc_line(out, "oracle.gqa_equals_repeated_kv", 0, "out of memory");
    size_t nq = attn_q_elems(&p), nkv = attn_kv_elems(&p), nkv2 = attn_kv_elems(&p2), nl = attn_l_elems(&p);
    float *K2 = malloc(nkv2 * sizeof *K2), *V2 = malloc(nkv2 * sizeof *V2);
    double *buf = malloc((4 * nq + 2 * nl + 2 * nkv + 2 * nkv2) * sizeof *buf);
    double worst = INFINITY;
    if (K2 && V2 && buf) {
        double *O = buf, *O2 = O + nq, *L = O2 + nq, *L2 = L + nl, *dQ = L2 + nl, *dQ2 = dQ + nq;
        double *dK = dQ2 + nq, *dV = dK + nkv, *dK2 = dV + nkv, *dV2 = dK2 + nkv2;
        for (int b = 0; b < p.B; b++)                 /* K2[b][h] = K[b][h / (H/Hkv)] */
            for (int h = 0; h < p.H; h++) {
                memcpy(K2 + attn_kv_offset(&p2, b, h), in.k + attn_kv_offset(&p, b, h), (size_t)p.N_kv * p.d * sizeof *K2);
                memcpy(V2 + attn_kv_offset(&p2, b, h), in.v + attn_kv_offset(&p, b, h), (size_t)p.N_kv * p.d * sizeof *V2);
            }
        oracle_fwd(&p, in.q, in.k, in.v, O, L);
        oracle_fwd(&p2, in.q, K2, V2, O2, L2);
        oracle_bwd(&p, in.q, in.k, in.v, in.dO, dQ, dK, dV);
        oracle_bwd(&p2, in.q, K2, V2, in.dO, dQ2, dK2, dV2);
        /* dK of a shared KV head = the sum of the copies' dK */
        for (int b = 0; b < p.B; b++)
            for (int h = 0; h < p.H; h++) {
                if (h % (p.H / p.H_kv) == 0) continue;   /* the group's first head is the base */
                double *base = dK2 + attn_kv_offset(&p2, b, h - h % (p.H / p.H_kv));
                double *basev = dV2 + attn_kv_offset(&p2, b, h - h % (p.H / p.H_kv));
                for (size_t x = 0; x < (size_t)p.N_kv * p.d; x++) {
                    base[x] += dK2[attn_kv_offset(&p2, b, h) + x];
                    basev[x] += dV2[attn_kv_offset(&p2, b, h) + x];
                }
            }
        worst = fmax(maxdiff(O, O2, nq), maxdiff(L, L2, nl));
        worst = fmax(worst, maxdiff(dQ, dQ2, nq));
        for (int b = 0; b < p.B; b++)
            for (int g = 0; g < p.H_kv; g++) {
                int h = g * (p.H / p.H_kv);
                worst = fmax(worst, maxdiff(dK + attn_kv_offset(&p, b, h), dK2 + attn_kv_offset(&p2, b, h), (size_t)p.N_kv * p.d));
                worst = fmax(worst, maxdiff(dV + attn_kv_offset(&p, b, h), dV2 + attn_kv_offset(&p2, b, h), (size_t)p.N_kv * p.d));
            }
    }
    free(K2); free(V2); free(buf);
    attn_inputs_free(&in);
    return sc_hint(out, sc_line(out, "oracle.gqa_equals_repeated_kv", worst < 1e-12,
                                "GQA vs repeated KV heads: max |diff| = %.3g", worst), "p0.softmax_row, p0.dS");
}

/* ---- causal with N_q > N_kv: rows 1-2 see nothing, row 3 sees key 1 only ------------- */
static int masked_case(FILE *out)
{
    attn_problem_t p = attn_problem(1, 1, 1, 5, 3, 8, true);
    attn_inputs_t in;
    if (attn_inputs_make(&in, &p, 5, true) != 0) return sc_line(out, "oracle.masked_rows", 0, "out of memory");
    double O[5 * 8], L[5], dQ[5 * 8], dK[3 * 8], dV[3 * 8];
    oracle_fwd(&p, in.q, in.k, in.v, O, L);
    oracle_bwd(&p, in.q, in.k, in.v, in.dO, dQ, dK, dV);
    double s = 0, err = 0;
    for (int c = 0; c < 8; c++) s += (double)in.q[2 * 8 + c] * in.k[c];
    s *= p.scale;
    int ok = isinf(L[0]) && L[0] > 0 && isinf(L[1]) && L[1] > 0;
    for (int c = 0; c < 8; c++) {
        err = fmax(err, fabs(O[c]) + fabs(O[8 + c]));           /* O = 0 on masked rows  */
        err = fmax(err, fabs(O[16 + c] - in.v[c]));               /* one key: O = V_1      */
        for (int i = 0; i < 3; i++) err = fmax(err, fabs(dQ[i * 8 + c])); /* P = 1: dS = 0 */
    }
    err = fmax(err, fabs(L[2] - s));                              /* L = S_31             */
    ok = ok && err < 1e-12;
    attn_inputs_free(&in);
    return sc_hint(out, sc_line(out, "oracle.masked_rows", ok,
                   "Nq=5 Nkv=3 causal: want O=0, L=+inf on rows 1-2 (L = %g, %g) and O = V_1, "
                   "L = S_31, dQ = 0 on row 3; max err %.3g", L[0], L[1], err), "p0.softmax_row, p0.dS");
}

int sc_oracle_checks(FILE *out, int *nchecks)
{
    int f = 0;
    f += fd_case(out, "oracle.fd.gqa_causal_Nq3_Nkv5", attn_problem(1, 2, 1, 3, 5, 4, true));
    f += fd_case(out, "oracle.fd.mha_B2_N4_d8", attn_problem(2, 2, 2, 4, 4, 8, false));
    f += fd_case(out, "oracle.fd.causal_Nq5_Nkv3_masked", attn_problem(1, 2, 1, 5, 3, 4, true));
    f += gqa_case(out);
    f += masked_case(out);
    *nchecks += 5;
    return f;
}

/* ---- the memory wall the FlashAttention write-ups quote ------------------------------ */
int sc_cost_checks(FILE *out, int *nchecks)
{
    const double MiB = 1024.0 * 1024.0, GiB = 1024.0 * MiB;
    attn_problem_t a = attn_problem(1, 1, 1, 1024, 1024, 64, false);
    attn_problem_t b = attn_problem(1, 1, 1, 16384, 16384, 64, false);
    attn_problem_t c = attn_problem(32, 8, 8, 2048, 2048, 64, false);
    attn_problem_t e = attn_problem(32, 8, 8, 8192, 8192, 64, false);
    int ok = std_attn_s_bytes(&a, 2) == 2 * MiB && std_attn_s_bytes(&b, 2) == 512 * MiB &&
             std_attn_s_bytes(&c, 2) == 2 * GiB && std_attn_s_bytes(&e, 2) == 32 * GiB;
    int f = sc_line(out, "cost.memory_wall", ok,
                    "S in fp16: one head N=1024 %.0f MiB (want 2), N=16384 %.0f MiB (want 512); "
                    "B=32 H=8 N=2048 %.2f GiB (want 2), N=8192 %.2f GiB (want 32)",
                    std_attn_s_bytes(&a, 2) / MiB, std_attn_s_bytes(&b, 2) / MiB,
                    std_attn_s_bytes(&c, 2) / GiB, std_attn_s_bytes(&e, 2) / GiB);
    /* N = 1024, d = 64, fp16: intensity N d / (e (N + d)) = 65536 / 2176 = 512/17 */
    double I = std_attn_intensity(&a, 2), If = fused_attn_intensity(&a, 2);
    f += sc_line(out, "cost.intensity", fabs(I - 512.0 / 17.0) < 1e-12 && fabs(If - 512.0) < 1e-12,
                 "N=1024 d=64 fp16: standard %.6f FLOP/B (want 512/17 = 30.117647), fused %.3f (want N/e = 512)",
                 I, If);
    *nchecks += 2;
    return f;
}
