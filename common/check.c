#include "check.h"
#include <math.h>
#include <stdio.h>

void err_init(err_stats_t *e)
{
    e->n = 0; e->max_abs = 0; e->rel_l2 = 0; e->nan_count = 0; e->worst = 0;
    e->first_bad = (size_t)-1; e->first_out = e->first_ref = 0;
    e->sum_diff2 = e->sum_ref2 = 0;
}

void err_accumulate(err_stats_t *e, const float *out, const double *ref, size_t n,
                    size_t base, tol_t tol)
{
    double ref_max = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(ref[i]) && fabs(ref[i]) > ref_max) ref_max = fabs(ref[i]);
    double bad_above = isfinite(tol.max_abs) ? tol.max_abs : 10.0 * tol.rel_l2 * ref_max;
    for (size_t i = 0; i < n; i++) {
        double o = out[i], r = ref[i], diff;
        int nan = isnan(o);
        if (nan) { e->nan_count++; diff = INFINITY; }
        else if (isinf(r) || isinf(o)) diff = (o == r) ? 0.0 : INFINITY;
        else {
            diff = fabs(o - r);
            e->sum_diff2 += diff * diff;
            e->sum_ref2 += r * r;
        }
        if (diff > e->max_abs || (nan && e->max_abs != INFINITY)) { e->max_abs = diff; e->worst = base + i; }
        if ((nan || diff > bad_above) && e->first_bad == (size_t)-1) {
            e->first_bad = base + i; e->first_out = o; e->first_ref = r;
        }
    }
    e->n += n;
}

void err_finish(err_stats_t *e)
{
    double num = e->sum_diff2, den = e->sum_ref2;
    e->rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
    if (e->nan_count) e->rel_l2 = NAN;
    if (e->first_bad == (size_t)-1) e->first_bad = e->n;
}

err_stats_t err_compare(const float *out, const double *ref, size_t n, tol_t tol)
{
    err_stats_t e;
    err_init(&e);
    err_accumulate(&e, out, ref, n, 0, tol);
    err_finish(&e);
    return e;
}

bool err_pass(const err_stats_t *e, tol_t tol)
{
    if (e->nan_count) return false;
    if (!(e->rel_l2 < tol.rel_l2)) return false;     /* also false for NaN */
    if (isfinite(tol.max_abs) && !(e->max_abs <= tol.max_abs)) return false;
    return true;
}

double rel_l2_f32(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i])) return NAN;
        double d = (double)a[i] - b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

tol_t tol_cpu(void) { tol_t t = { TOL_CPU_REL_L2, INFINITY }; return t; }
tol_t tol_fp16(double pipeline_max_abs)
{ tol_t t = { TOL_FP16_REL_L2, 2.0 * pipeline_max_abs + TOL_ABS_SLACK }; return t; }
tol_t tol_grad(double pipeline_max_abs)
{ tol_t t = { TOL_GRAD_REL_L2, 2.0 * pipeline_max_abs + TOL_ABS_SLACK }; return t; }

const char *err_verdict(const err_stats_t *e, tol_t tol) { return err_pass(e, tol) ? "PASS" : "FAIL"; }

void err_first_bad_str(const err_stats_t *e, int row_len, const char *tensor, char *buf, size_t len)
{
    if (e->first_bad >= e->n) { snprintf(buf, len, "%s: no element out of tolerance", tensor); return; }
    size_t row = e->first_bad / (size_t)row_len, col = e->first_bad % (size_t)row_len;
    snprintf(buf, len, "%s[%zu] = %.6g vs ref %.6g (row %zu, col %zu)", tensor, e->first_bad,
             e->first_out, e->first_ref, row, col);
}

void poison_f32(float *x, size_t n) { for (size_t i = 0; i < n; i++) x[i] = NAN; }

void check_hint_exercises(bool pass, const char *names)
{
#ifdef EX_BUILD
    if (!pass) printf("  -> exercises behind this check: %s\n", names);
#else
    (void)pass; (void)names;
#endif
}
