/* decode_check.c - the fp64 oracle on a ragged KV cache: each sequence alone, with its
 * own number of keys, through REF(oracle_fwd) (common/ref.h), so that an exercise build
 * of phase 6 never compares with code a student writes elsewhere; and the GPU check of a
 * ragged output, each sequence held to phase 1's 2x rule on its own inputs. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "decode.h"
#include "decode_model.h"
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

/* Whether list (", "-separated) holds the exercise name ex. */
static bool names(const char *list, const char *ex)
{
    const size_t n = strlen(ex);
    for (const char *at = list; (at = strstr(at, ex)) != NULL; at += n)
        if ((at == list || at[-1] == ' ') && (at[n] == '\0' || at[n] == ','))
            return true;
    return false;
}

/* A failed row names ex beside the exercises it names already: a unit check that fails
 * on a row some other check failed adds its own exercise (an untouched handout names
 * them all; a one-line mistake, whose other checks pass, names one). The joined lists
 * live as long as the run. */
void dec_blame_also(drv_row_t *r, const char *ex)
{
    static char pool[32][160];
    static int used;
    if (!drv_failed(r)) return;
    if (!r->exercises) { r->exercises = ex; return; }
    if (names(r->exercises, ex)) return;
    char joined[160];
    snprintf(joined, sizeof joined, "%s, %s", r->exercises, ex);
    for (int k = 0; k < used; k++)
        if (strcmp(pool[k], joined) == 0) { r->exercises = pool[k]; return; }
    if (used == 32) return;   /* the names so far stand */
    memcpy(pool[used], joined, sizeof joined);
    r->exercises = pool[used++];
}

void dec_check_split_range(drv_row_t *r, int n, int Bc, int S)
{
    /* n itself, then Tc = 1 .. 2 S + 1 blocks (every remainder of Tc / S), the last one
     * half full: one key, and a tail */
    for (int Tc = 0; Tc <= 2 * S + 1; Tc++) {
        const int keys = Tc == 0 ? n : Tc == 1 ? 1 : Tc * Bc - Bc / 2;
        for (int s = 0; s < S; s++) {
            int k0, k1, r0, r1;
            dec_split_range(keys, Bc, S, s, &k0, &k1);
            REF(dec_split_range)(keys, Bc, S, s, &r0, &r1);
            if (k0 != r0 || k1 != r1) {
                drv_fail(r, "split %d of %d over %d keys (blocks of %d): keys [%d, %d), the reference's [%d, %d)", s, S,
                         keys, Bc, k0, k1, r0, r1);
                dec_blame_also(r, "dec.split_range");
                ex_unit("dec.split_range", false);
                return;
            }
        }
    }
    ex_unit("dec.split_range", true);
}

/* ---- the combine on partials whose L_s are far apart ----------------------------------
 * Three rows of S = 3 partials, d = 64: L_s = {100, 99, -inf}, {-inf, -101, -100} and all
 * -inf; an empty split's O_s is 0 (as the splits write it). */
enum { CB_S = 3, CB_ROWS = 3, CB_D = 64 };
static void combine_case(float Lp[CB_S][CB_ROWS], float Op[CB_S][CB_ROWS][CB_D], double Oref[CB_ROWS][CB_D],
                         double Lref[CB_ROWS])
{
    static const float LS[CB_ROWS][CB_S] = {{100, 99, -INFINITY}, {-INFINITY, -101, -100}, {-INFINITY, -INFINITY, -INFINITY}};
    for (int r = 0; r < CB_ROWS; r++) {
        double m = -INFINITY, l = 0;
        for (int s = 0; s < CB_S; s++) {
            Lp[s][r] = LS[r][s];
            m = fmax(m, LS[r][s]);
            for (int k = 0; k < CB_D; k++) Op[s][r][k] = LS[r][s] == -INFINITY ? 0.0f : (s + 1) * 0.25f + k / 64.0f - 0.5f * r;
        }
        for (int k = 0; k < CB_D; k++) Oref[r][k] = 0.0;
        if (m == -INFINITY) { Lref[r] = INFINITY; continue; }   /* no split saw a key */
        for (int s = 0; s < CB_S; s++) l += exp(LS[r][s] - m);
        Lref[r] = m + log(l);
        for (int s = 0; s < CB_S; s++)
            for (int k = 0; k < CB_D; k++) Oref[r][k] += exp(LS[r][s] - Lref[r]) * Op[s][r][k];
    }
}

static void combine_compare(drv_row_t *r, const float *O, const float *L, const double *Oref, const double *Lref,
                            const char *ex)
{
    const char *vs = "the combine of partials with L_s far apart ({100, 99, -inf}, {-inf, -101, -100}, all -inf) vs fp64";
    const bool okO = drv_compare(r, vs, "O", O, Oref, (size_t)CB_ROWS * CB_D, CB_D, tol_cpu(), false, NULL);
    const bool okL = drv_compare(r, vs, "L", L, Lref, CB_ROWS, CB_ROWS, tol_cpu(), false, NULL);
    if (!okO || !okL) dec_blame_also(r, ex);
    /* the CPU combine's unit check (common/check.h): its loops are the same for every d and S;
     * the GPU one's lanes are not (d = 64 here), so its pass clears nothing */
    if (strcmp(ex, "dec.combine") == 0) ex_unit(ex, okO && okL);
}

void dec_check_combine(drv_row_t *r)
{
    float Lp[CB_S][CB_ROWS], Op[CB_S][CB_ROWS][CB_D], O[CB_ROWS][CB_D], L[CB_ROWS], Ls[CB_S], Os[CB_S][CB_D];
    double Oref[CB_ROWS][CB_D], Lref[CB_ROWS];
    combine_case(Lp, Op, Oref, Lref);
    for (int row = 0; row < CB_ROWS; row++) {   /* one row's partials, as dec_cpu hands them over */
        for (int s = 0; s < CB_S; s++) { Ls[s] = Lp[s][row]; memcpy(Os[s], Op[s][row], sizeof Os[s]); }
        dec_combine_row(CB_S, CB_D, Ls, &Os[0][0], O[row], &L[row]);
    }
    combine_compare(r, &O[0][0], L, &Oref[0][0], Lref, "dec.combine");
}

/* ---- FlashDecoding++'s window and fallback (decode.h) ------------------------------- */
static bool same_f(float a, float b)   /* equal, or both NaN, or within fp32 rounding */
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return fabsf(a - b) <= 1e-6f * fabsf(b) + 1e-30f;
}

static int fdpp_units(char *why, size_t len)
{
    enum { D = 8, S = 3 };
    const float phi = 5.0f;
    /* one key's step: scores across the window's two edges (phi - 6, phi + 10) */
    static const float X[] = {-INFINITY, -20.0f, -1.5f, -1.0f, 0.0f, 4.0f, 14.9f, 15.0f, 15.5f, 40.0f};
    float v[D];
    for (int k = 0; k < D; k++) v[k] = 0.25f * (float)k - 1.0f;
    for (size_t a = 0; a < sizeof X / sizeof X[0]; a++) {
        online_state_t s, rs;
        s.m = rs.m = phi; s.l = rs.l = 0.5f;
        for (int k = 0; k < D; k++) s.o[k] = rs.o[k] = 0.1f * (float)k;
        int f = 0, rf = 0;
        dec_fdpp_push(&s, &f, X[a], v, D);
        REF(dec_fdpp_push)(&rs, &rf, X[a], v, D);
        bool ok = f == rf && same_f(s.l, rs.l);
        for (int k = 0; k < D; k++) ok = ok && same_f(s.o[k], rs.o[k]);
        if (!ok) {
            snprintf(why, len, "FD++ step, phi = %g, score %g: flags %d, l = %g; the reference's flags %d, l = %g",
                     (double)phi, (double)X[a], f, (double)s.l, rf, (double)rs.l);
            return -1;
        }
        for (int fl = 0; fl < 4; fl++) {
            const float l = 0.25f * (float)(a + 1);
            if (!same_f(dec_fdpp_signed_l(l, fl), REF(dec_fdpp_signed_l)(l, fl)) ||
                signbit(dec_fdpp_signed_l(0.0f, fl)) != signbit(REF(dec_fdpp_signed_l)(0.0f, fl))) {
                snprintf(why, len, "FD++ l_s as written, l = %g, flags %d: %g, the reference's %g", (double)l, fl,
                         (double)dec_fdpp_signed_l(l, fl), (double)REF(dec_fdpp_signed_l)(l, fl));
                return -1;
            }
        }
    }
    /* the combine: l_s as the splits write them (+inf passed the top, -l every weight tiny,
     * -0 no key, +l in the window) */
    static const float LS[][S] = {{1.5f, 0.5f, 2.0f}, {1.5f, INFINITY, 2.0f}, {-1e-4f, -2e-4f, -1e-5f},
                                  {-0.0f, -1e-4f, -2e-4f}, {-0.0f, -0.0f, -0.0f}, {-0.0f, 0.75f, -1e-3f}};
    for (size_t a = 0; a < sizeof LS / sizeof LS[0]; a++)
        for (int keys = 0; keys <= 1; keys++) {
            float us[S][D], o[D], ro[D], L = 0, rL = 0;
            for (int q = 0; q < S; q++)
                for (int k = 0; k < D; k++) us[q][k] = 0.125f * (float)(q + k) - 0.25f;
            const int got = dec_fdpp_combine_row(S, D, phi, keys, LS[a], &us[0][0], o, &L);
            const int want = REF(dec_fdpp_combine_row)(S, D, phi, keys, LS[a], &us[0][0], ro, &rL);
            bool ok = got == want && (!want || same_f(L, rL));
            for (int k = 0; want && k < D; k++) ok = ok && same_f(o[k], ro[k]);
            if (!ok) {
                snprintf(why, len, "FD++ combine, phi = %g, l_s = {%g, %g, %g}%s: %s (L = %g); the reference: %s (L = %g)",
                         (double)phi, (double)LS[a][0], (double)LS[a][1], (double)LS[a][2], keys ? "" : ", no key",
                         got ? "combined" : "fall back", (double)L, want ? "combined" : "fall back", (double)rL);
                return -1;
            }
        }
    /* the model with phi far from every score: every row that sees a key falls back (its
     * splits are the student's dec.split_range: judged only once that one's unit check passed) */
    if (ex_unit_failed("dec.split_range")) return 0;
    attn_problem_t p = attn_problem(1, 2, 1, 3, 150, 16, true);
    attn_inputs_t in;
    if (attn_inputs_make(&in, &p, 7, false) != 0) { snprintf(why, len, "FD++: out of host memory"); return -1; }
    const size_t nq = attn_q_elems(&p), nl = attn_l_elems(&p);
    float *O = xmalloc(2 * (nq + nl) * sizeof(float), "phase6"), *L = O + nq, *rO = L + nl, *rL = rO + nq;
    uint8_t *mk = xmalloc(2 * nl, "phase6"), *rmk = mk + nl;
    const attn_blocks_t bl = { 16, 32 };
    int rc = 0;
    for (int side = 0; side < 2 && rc == 0; side++) {
        const float ph = side == 0 ? -40.0f : 40.0f;
        dec_cpu_fdpp(&in, NULL, bl, 3, ph, O, L, NULL, mk);
        REF(dec_cpu_fdpp)(&in, NULL, bl, 3, ph, rO, rL, NULL, rmk);
        for (size_t e = 0; e < nl && rc == 0; e++)
            if (mk[e] != rmk[e] || !same_f(L[e], rL[e])) {
                snprintf(why, len, "FD++ with phi = %g (every score %s the window): row %zu %s, L = %g; the reference %s, L = %g",
                         (double)ph, side == 0 ? "above" : "below", e, mk[e] ? "recomputed" : "not recomputed", (double)L[e],
                         rmk[e] ? "recomputed" : "not recomputed", (double)rL[e]);
                rc = -1;
            }
        for (size_t e = 0; e < nq && rc == 0; e++)
            if (!same_f(O[e], rO[e])) {
                snprintf(why, len, "FD++ with phi = %g: O[%zu] = %g, the reference's %g", (double)ph, e, (double)O[e], (double)rO[e]);
                rc = -1;
            }
    }
    free(O); free(mk);
    attn_inputs_free(&in);
    return rc;
}

void dec_check_fdpp(drv_row_t *r)
{
    static int rc = 1;
    static char why[240];
    if (rc == 1) rc = fdpp_units(why, sizeof why);
    if (rc == 0) return;
    drv_fail(r, "%s", why);
    drv_blame(r, DEC_FDPP_NOT_EXERCISE);
}

#if HAVE_CUDA
void dec_check_combine_gpu(drv_row_t *r)
{
    float Lp[CB_S][CB_ROWS], Op[CB_S][CB_ROWS][CB_D], O[CB_ROWS][CB_D], L[CB_ROWS];
    double Oref[CB_ROWS][CB_D], Lref[CB_ROWS];
    combine_case(Lp, Op, Oref, Lref);
    float *dO = gpu_malloc(sizeof Op), *dL = gpu_malloc(sizeof Lp), *o = gpu_malloc(sizeof O), *l = gpu_malloc(sizeof L);
    gpu_upload(dO, Op, sizeof Op);
    gpu_upload(dL, Lp, sizeof Lp);
    gpu_poison_f32(o, (size_t)CB_ROWS * CB_D);
    gpu_poison_f32(l, CB_ROWS);
    dec_gpu_combine(CB_D, CB_S, CB_ROWS, dO, dL, o, l);
    gpu_sync();
    gpu_download(O, o, sizeof O);
    gpu_download(L, l, sizeof L);
    gpu_free(dO); gpu_free(dL); gpu_free(o); gpu_free(l);
    combine_compare(r, &O[0][0], L, &Oref[0][0], Lref, "dec.combine_gpu");
}
#endif
