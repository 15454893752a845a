#include "check.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

void err_init(err_stats_t *e)
{
    e->n = 0; e->max_abs = 0; e->rel_l2 = 0; e->nan_count = 0; e->inf_mismatch = 0;
    e->worst = 0; e->worst_out = e->worst_ref = 0;
    e->first_bad = (size_t)-1; e->first_out = e->first_ref = 0;
    e->sum_diff2 = e->sum_ref2 = 0;
    e->ref_zero = false; e->max_scaled = 0;
}

/* The rule of check.h: NaN on either side -> never equal; an infinity on either side ->
 * equal only to the same infinity; else the finite difference counts. */
void err_accumulate(err_stats_t *e, const float *out, const double *ref, size_t n,
                    size_t base, tol_t tol)
{
    double scale = 1.0;            /* tol.rel_scale: max(1, max |ref|) over these values */
    if (tol.rel_scale)
        for (size_t i = 0; i < n; i++)
            if (isfinite(ref[i]) && fabs(ref[i]) > scale) scale = fabs(ref[i]);
    for (size_t i = 0; i < n; i++) {
        double o = out[i], r = ref[i], diff;
        bool bad;
        if (isnan(o) || isnan(r)) {
            e->nan_count++; diff = INFINITY; bad = true;
        } else if (isinf(o) || isinf(r)) {
            bad = o != r;                    /* same infinity: equal, and no error */
            if (bad) e->inf_mismatch++;
            diff = bad ? INFINITY : 0.0;
        } else {
            diff = fabs(o - r);
            e->sum_diff2 += diff * diff;
            e->sum_ref2 += r * r;
            bad = !(diff <= tol.max_abs * scale);
        }
        if (!(diff / scale <= e->max_scaled)) e->max_scaled = diff / scale;   /* NaN-safe */
        if (diff > e->max_abs) { e->max_abs = diff; e->worst = base + i; e->worst_out = o; e->worst_ref = r; }
        if (bad && e->first_bad == (size_t)-1) {
            e->first_bad = base + i; e->first_out = o; e->first_ref = r;
        }
    }
    e->n += n;
}

void err_finish(err_stats_t *e)
{
    double num = e->sum_diff2, den = e->sum_ref2;
    /* an exactly zero reference: no relative error exists (NaN, "-" in a table); max abs,
     * with its absolute floor, is the verdict */
    e->ref_zero = e->n > e->nan_count + e->inf_mismatch && den == 0;
    e->rel_l2 = den > 0 ? sqrt(num / den) : e->ref_zero ? NAN : 0.0;
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
    if (e->nan_count || e->inf_mismatch) return false;
    if (!isfinite(tol.max_abs)) return false;        /* every tolerance is finite */
    if (!e->ref_zero && !(e->rel_l2 < tol.rel_l2)) return false;   /* also false for NaN */
    if (!(e->max_scaled <= tol.max_abs)) return false;
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

tol_t tol_cpu(void) { tol_t t = { TOL_CPU_REL_L2, TOL_CPU_MAX_ABS, true }; return t; }
tol_t tol_fp16(double pipeline_max_abs)
{ tol_t t = { TOL_FP16_REL_L2, 2.0 * pipeline_max_abs + TOL_ABS_SLACK, false }; return t; }

/* The derivations are in check.h ("long sums"). */
double tol_cpu_rel_l2(double n)
{
    double b = 3.0 * TOL_U32 * sqrt(n > 0 ? n : 0);
    return b > TOL_CPU_REL_L2 ? b : TOL_CPU_REL_L2;
}
tol_t tol_cpu_keys(double n) { tol_t t = tol_cpu(); t.rel_l2 = tol_cpu_rel_l2(n); return t; }
double tol_fp16_rel_l2(double n)
{
    double b = sqrt(3.0) * ldexp(1.0, -25) * (n > 0 ? n : 0);
    return b > TOL_FP16_REL_L2 ? b : TOL_FP16_REL_L2;
}

static const char *why_bad(double o, double r)
{
    if (isnan(o) || isnan(r)) return ": NaN";
    if (isinf(o) || isinf(r)) return ": not the same infinity";
    return "";
}

void err_first_bad_str(const err_stats_t *e, int row_len, const char *tensor, char *buf, size_t len)
{
    if (row_len < 1) row_len = 1;
    if (e->first_bad >= e->n) {
        if (e->n == 0 || e->max_abs == 0) { snprintf(buf, len, "%s: no element out of tolerance", tensor); return; }
        size_t row = e->worst / (size_t)row_len, col = e->worst % (size_t)row_len;
        snprintf(buf, len, "%s: no element beyond the max abs bound; largest error %s[%zu] = %.6g vs ref %.6g (row %zu, col %zu)",
                 tensor, tensor, e->worst, e->worst_out, e->worst_ref, row, col);
        return;
    }
    size_t row = e->first_bad / (size_t)row_len, col = e->first_bad % (size_t)row_len;
    snprintf(buf, len, "%s[%zu] = %.6g vs ref %.6g (row %zu, col %zu)%s", tensor, e->first_bad,
             e->first_out, e->first_ref, row, col, why_bad(e->first_out, e->first_ref));
}

void poison_f32(float *x, size_t n) { for (size_t i = 0; i < n; i++) x[i] = NAN; }

/* every exercise a failed check has named so far in this run, once each (check_hint_named) */
static char hint_named[512];

static void hint_add(const char *names)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", names);
    for (char *tok = strtok(buf, ", "); tok; tok = strtok(NULL, ", ")) {
        const size_t n = strlen(tok), len = strlen(hint_named);
        bool seen = false;
        for (const char *at = strstr(hint_named, tok); at && !seen; at = strstr(at + 1, tok))
            seen = (at == hint_named || at[-1] == ' ') && (at[n] == ',' || at[n] == '\0');
        if (!seen && len + n + 3 < sizeof hint_named)
            snprintf(hint_named + len, sizeof hint_named - len, "%s%s", len ? ", " : "", tok);
    }
}

void check_hint_exercises(bool pass, const char *names)
{
#ifdef EX_BUILD
    if (!pass) {
        const char *blamed = ex_blame(names);
        printf("  -> exercises behind this check: %s\n", blamed);
        hint_add(blamed);
    }
#else
    (void)pass; (void)names; (void)hint_add;
#endif
}

const char *check_hint_named(void) { return hint_named; }

/* ---- precise blame (check.h): the unit checks' verdicts, by exercise name ------------- */
enum { EX_UNITS_MAX = 64, EX_NAME_MAX = 48, EX_BLAME_POOL = 64, EX_BLAME_LEN = 240 };
static struct { char name[EX_NAME_MAX]; int failed, passed; } ex_units[EX_UNITS_MAX];
static int ex_units_n;

static int ex_unit_find(const char *name, size_t len)
{
    for (int k = 0; k < ex_units_n; k++)
        if (strlen(ex_units[k].name) == len && strncmp(ex_units[k].name, name, len) == 0) return k;
    return -1;
}

void ex_unit(const char *name, bool pass)
{
    int k = ex_unit_find(name, strlen(name));
    if (k < 0) {
        if (ex_units_n == EX_UNITS_MAX) return;
        k = ex_units_n++;
        snprintf(ex_units[k].name, sizeof ex_units[k].name, "%s", name);
    }
    if (pass) ex_units[k].passed = 1; else ex_units[k].failed = 1;
}

bool ex_unit_failed(const char *name)
{
    const int k = ex_unit_find(name, strlen(name));
    return k >= 0 && ex_units[k].failed;
}

const char *ex_blame(const char *involved)
{
    static char pool[EX_BLAME_POOL][EX_BLAME_LEN];
    static int used;
    if (!involved) return NULL;
    char pick[2][EX_BLAME_LEN] = { "", "" };   /* [0]: convicted by a unit check; [1]: not cleared */
    for (const char *at = involved; *at;) {
        while (*at == ' ' || *at == ',') at++;
        const char *end = at;
        while (*end && *end != ',') end++;
        size_t len = (size_t)(end - at);
        while (len > 0 && at[len - 1] == ' ') len--;
        if (len > 0) {
            const int k = ex_unit_find(at, len);
            const int which = k >= 0 && ex_units[k].failed ? 0 : k >= 0 && ex_units[k].passed ? -1 : 1;
            if (which >= 0) {
                const size_t n = strlen(pick[which]);
                snprintf(pick[which] + n, sizeof pick[which] - n, "%s%.*s", n ? ", " : "", (int)len, at);
            }
        }
        at = end;
    }
    const char *chosen = pick[0][0] ? pick[0] : pick[1][0] ? pick[1] : involved;
    for (int k = 0; k < used; k++)
        if (strcmp(pool[k], chosen) == 0) return pool[k];
    if (chosen == involved || used == EX_BLAME_POOL) return involved;   /* the caller's string lives on */
    snprintf(pool[used], sizeof pool[used], "%s", chosen);
    return pool[used++];
}
