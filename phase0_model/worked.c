/* worked.c - chapter 0's worked examples (see worked.h), step by step.
 *
 * The tile example runs the online softmax of FlashAttention (Dao et al. 2022, Alg. 1
 * l.9-12) on tiny matrices. Two equivalent ways of keeping the running output exist:
 *   FA1 keeps O_i normalised after every block: O_i = O~_i / l_i (Alg. 1 l.12);
 *   FA2 keeps O~_i unnormalised and divides by l_i once at the end (FA2 Alg. 1 l.12).
 * Both are printed; the numbers quoted in the chapter for "O after block 1" are the
 * normalised (FA1) ones.
 */
#include "worked.h"
#include "oracle.h"
#include "selfcheck.h"
#include <math.h>
#include <string.h>

static const float tQ[4][2] = {{1, 0}, {0, 1}, {2, 1}, {1, 2}};
static const float tK[4][2] = {{1, 1}, {0, 2}, {1, 0}, {2, 1}};
static const float tV[4][2] = {{1, 0}, {0, 1}, {2, 1}, {1, 2}};
enum { TN = 4, TD = 2, BR = 2, BC = 2 };

#define P(...) do { if (out) fprintf(out, __VA_ARGS__); } while (0)

void worked_tile(FILE *out, worked_tile_t *r)
{
    memset(r, 0, sizeof *r);
    P("(a) tiles: Q = [[1,0],[0,1],[2,1],[1,2]], K = [[1,1],[0,2],[1,0],[2,1]], V = Q,\n"
      "    no 1/sqrt(d) scaling, Br = Bc = 2: query block 1 = rows 1-2, block 2 = rows 3-4;\n"
      "    K/V block 1 = keys 1-2, block 2 = keys 3-4. Online softmax, FlashAttention Alg. 1:\n"
      "    m = max(m, rowmax S), P~ = exp(S - m), l = e^(m_old - m) l + rowsum P~,\n"
      "    O~ = e^(m_old - m) O~ + P~ V_j\n");
    for (int i0 = 0; i0 < TN; i0 += BR) {
        double m[BR], l[BR], Ot[BR][TD];
        for (int a = 0; a < BR; a++) { m[a] = -INFINITY; l[a] = 0; Ot[a][0] = Ot[a][1] = 0; }
        for (int j0 = 0; j0 < TN; j0 += BC) {
            P("  query block %d, K/V block %d:\n", i0 / BR + 1, j0 / BC + 1);
            for (int a = 0; a < BR; a++) {
                double S[BC], Pt[BC], mt = -INFINITY, rowsum = 0;
                for (int c = 0; c < BC; c++) {       /* S_ij = Q_i K_j^T        (l.9)  */
                    S[c] = tQ[i0 + a][0] * tK[j0 + c][0] + tQ[i0 + a][1] * tK[j0 + c][1];
                    mt = fmax(mt, S[c]);               /* m~_ij = rowmax(S_ij)   (l.10) */
                }
                double m_new = fmax(m[a], mt);         /* m_new = max(m_i, m~)   (l.11) */
                double alpha = exp(m[a] - m_new);      /* rescales the old l, O~        */
                for (int c = 0; c < BC; c++) { Pt[c] = exp(S[c] - m_new); rowsum += Pt[c]; }
                l[a] = alpha * l[a] + rowsum;          /* l_new                 (l.11) */
                for (int x = 0; x < TD; x++) {         /* O~ = alpha O~ + P~ V_j (l.12) */
                    Ot[a][x] *= alpha;
                    for (int c = 0; c < BC; c++) Ot[a][x] += Pt[c] * tV[j0 + c][x];
                }
                m[a] = m_new;
                P("    row %d: S = [%g, %g]  m = %g  P~ = exp(S - m) = [%.3f, %.3f]  "
                  "l = %.3f  O~ = [%.3f, %.3f]  O = O~/l = [%.3f, %.3f]\n",
                  i0 + a + 1, S[0], S[1], m[a], Pt[0], Pt[1], l[a], Ot[a][0], Ot[a][1],
                  Ot[a][0] / l[a], Ot[a][1] / l[a]);
                if (i0 == 0) {                         /* keep query block 1's steps */
                    double *mm = j0 == 0 ? r->m1 : r->m2, *ll = j0 == 0 ? r->l1 : r->l2;
                    double (*ot)[2] = j0 == 0 ? r->Ot1 : r->Ot2, (*o)[2] = j0 == 0 ? r->O1 : r->O2;
                    mm[a] = m[a]; ll[a] = l[a];
                    for (int x = 0; x < TD; x++) { ot[a][x] = Ot[a][x]; o[a][x] = Ot[a][x] / l[a]; }
                }
            }
        }
        for (int a = 0; a < BR; a++) {
            for (int x = 0; x < TD; x++) r->O[i0 + a][x] = Ot[a][x] / l[a];
            r->L[i0 + a] = m[a] + log(l[a]);
        }
    }
    /* The oracle on the same inputs: one head, N = 4, d = 2, scale 1. */
    attn_problem_t p = attn_problem(1, 1, 1, TN, TN, TD, false);
    p.scale = 1.0f;
    double O[TN * TD];
    oracle_fwd(&p, &tQ[0][0], &tK[0][0], &tV[0][0], O, r->L_ref);
    for (int i = 0; i < TN; i++) for (int x = 0; x < TD; x++) r->O_ref[i][x] = O[i * TD + x];
    P("  final O (tiled) vs the fp64 oracle:\n");
    for (int i = 0; i < TN; i++)
        P("    row %d: [%.4f, %.4f]  oracle [%.4f, %.4f]   L = %.4f  oracle %.4f\n", i + 1,
          r->O[i][0], r->O[i][1], r->O_ref[i][0], r->O_ref[i][1], r->L[i], r->L_ref[i]);
    P("  (O after block 1 above is the normalised O of FlashAttention-1; FlashAttention-2\n"
      "   keeps O~ and divides by l once at the end - the final O is the same.)\n");
}

void worked_stream(FILE *out, worked_stream_t *r)
{
    static const double x[3] = {3, 1, 2};
    memset(r, 0, sizeof *r);
    double m = -INFINITY, l = 0, o[3] = {0, 0, 0};  /* o in the basis v1, v2, v3 */
    P("(b) streaming softmax of the scores [3, 1, 2] with values v1, v2, v3\n"
      "    (Milakov & Gimelshein 2018): per element, m' = max(m, x), l' = l e^(m-m') + e^(x-m'),\n"
      "    o' = o e^(m-m') + e^(x-m') v\n");
    for (int j = 0; j < 3; j++) {
        double m_new = fmax(m, x[j]), alpha = exp(m - m_new), p = exp(x[j] - m_new);
        l = alpha * l + p;
        for (int c = 0; c < 3; c++) o[c] = alpha * o[c] + (c == j ? p : 0.0);
        m = m_new;
        r->m[j] = m; r->l[j] = l;
        memcpy(r->o[j], o, sizeof o);
        P("    after x%d = %g: m = %g  l = %.4f  o = %.4f v1 + %.4f v2 + %.4f v3\n",
          j + 1, x[j], m, l, o[0], o[1], o[2]);
    }
    for (int c = 0; c < 3; c++) r->w[c] = o[c] / l;
    r->L = m + log(l);
    r->L_ref = oracle_softmax_row(x, 3, r->w_ref);
    P("    weights o / l = [%.3f, %.3f, %.3f]  L = m + log l = %.4f\n"
      "    oracle softmax  [%.3f, %.3f, %.3f]  L = %.4f\n",
      r->w[0], r->w[1], r->w[2], r->L, r->w_ref[0], r->w_ref[1], r->w_ref[2], r->L_ref);
}

/* The numbers worked out by hand in docs/00_model.md, to the 3 decimals printed there:
 * a value passes within half a unit of the last digit. */
#define HAND_TOL 5e-4
static const double hand_m1[2] = {1, 2}, hand_l1[2] = {1.368, 1.368};
static const double hand_O1[2][2] = {{0.731, 0.269}, {0.269, 0.731}};
static const double hand_m2[2] = {2, 2}, hand_l2[2] = {1.871, 1.871};
static const double hand_O[4][2] = {{1.124, 1.338}, {0.538, 1.000}, {1.000, 1.700}, {0.607, 1.261}};
static const double hand_w[3] = {0.665, 0.090, 0.245}, hand_l_stream[3] = {1.000, 1.135, 1.503};

static double maxdiff(const double *a, const double *b, int n)
{
    double d = 0;
    for (int i = 0; i < n; i++) d = fmax(d, isnan(a[i] - b[i]) ? INFINITY : fabs(a[i] - b[i]));
    return d;
}

int worked_check(FILE *out, const worked_tile_t *t, const worked_stream_t *s, int *nchecks)
{
    int fails = 0, n = 0;
    double e;
#define CHECK(name, val, tol) (n++, e = (val), \
    fails += sc_line(out, name, e <= (tol), "max |diff| = %.3g > %.1g", e, (double)(tol)))
    CHECK("worked.tile.block1_m", maxdiff(t->m1, hand_m1, 2), 1e-12);
    CHECK("worked.tile.block1_l", maxdiff(t->l1, hand_l1, 2), HAND_TOL);
    CHECK("worked.tile.block1_O", maxdiff(&t->O1[0][0], &hand_O1[0][0], 4), HAND_TOL);
    CHECK("worked.tile.block2_m", maxdiff(t->m2, hand_m2, 2), 1e-12);
    CHECK("worked.tile.block2_l", maxdiff(t->l2, hand_l2, 2), HAND_TOL);
    CHECK("worked.tile.O_vs_hand", maxdiff(&t->O[0][0], &hand_O[0][0], 8), HAND_TOL);
    int before = fails;   /* the checks against the oracle: its softmax is an exercise */
    CHECK("worked.tile.O_vs_oracle", maxdiff(&t->O[0][0], &t->O_ref[0][0], 8), 1e-12);
    CHECK("worked.tile.L_vs_oracle", maxdiff(t->L, t->L_ref, 4), 1e-12);
    CHECK("worked.stream.vs_oracle", fmax(maxdiff(s->w, s->w_ref, 3), maxdiff(&s->L, &s->L_ref, 1)), 1e-12);
    sc_hint(out, fails > before, "p0.softmax_row");
    CHECK("worked.stream.l", maxdiff(s->l, hand_l_stream, 3), HAND_TOL);
    CHECK("worked.stream.weights", maxdiff(s->w, hand_w, 3), HAND_TOL);
#undef CHECK
    if (nchecks) *nchecks = n;
    return fails;
}
