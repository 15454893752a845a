/* fa2_check.c - the causal range of fa2_kv_blocks() against a brute-force scan of the
 * mask: whatever a shape's N_q, N_kv and blocks, Q block i must visit exactly the K/V
 * blocks that hold an entry one of its rows may see, and no more. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "fa2.h"
#include "naive.h"   /* attn_validate_rmse: phase 1's oracle rows */

int fa2_check_causal_range(const attn_problem_t *p, attn_blocks_t bl, char *why, size_t len)
{
    attn_problem_t pm = *p;
    pm.causal = true;
    pm.mask_id = 0;   /* the causal rule alone, whatever mask the problem has */
    const int Tr = (p->N_q + bl.Br - 1) / bl.Br, Tc = (p->N_kv + bl.Bc - 1) / bl.Bc;
    for (int i = 0; i < Tr; i++) {
        int want = 0;   /* one past the last K/V block with a visible entry */
        for (int j = 0; j < Tc; j++)
            for (int row = i * bl.Br; row < p->N_q && row < (i + 1) * bl.Br; row++)
                if (attn_visible(&pm, row, j * bl.Bc)) { want = j + 1; break; }   /* its first key */
        int got = fa2_kv_blocks(&pm, i, bl.Br, bl.Bc);
        if (got != want) {
            snprintf(why, len, "causal range: Q block %d visits %d K/V blocks, not %d", i, got, want);
            return -1;
        }
    }
    return 0;
}

/* ---- the unit checks (fa2.h): one exercise each, on shapes and masks of their own ---- */
int fa2_unit_causal_range(char *why, size_t len)
{
    static const attn_blocks_t BL[] = {{64, 64}, {128, 64}, {64, 32}, {64, 128}, {16, 16}, {3, 5}, {1, 1}};
    return attn_range_units(fa2_check_causal_range, BL, (int)(sizeof BL / sizeof BL[0]), why, len);
}

/* The unit masks: N_q x N_kv, two runs a column anywhere in [0, N_q] (mask.h's invariant
 * 0 <= start <= end <= N_q), in three families: (0) runs that move smoothly along the
 * columns, the upper one starting anywhere (not only at row 0 or G); (1) runs constant on
 * each 4-column group, their ends on multiples of 4 rows, so that tiles of 4 or 8 rows meet
 * them exactly (r1 == start, r0 == end); (2) any runs, column by column. Built by hand
 * (not mask.c's constructors), freed by unit_mask_free. */
enum { UM_NQ = 61, UM_NKV = 53, UM_MASKS = 12 };
static unsigned unit_rng(unsigned *s) { *s = *s * 1664525u + 1013904223u; return *s >> 8; }
static int clampi(long v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : (int)v; }
static int unit_mask_make(attn_mask_t *m, int k)
{
    memset(m, 0, sizeof *m);
    m->name = "unit";
    m->N_q = UM_NQ; m->N_kv = UM_NKV;
    int32_t *v = malloc(4 * sizeof(int32_t) * UM_NKV);
    if (!v) return -1;
    m->lts = v; m->lte = v + UM_NKV; m->uts = v + 2 * UM_NKV; m->ute = v + 3 * UM_NKV;
    snprintf(m->spec, sizeof m->spec, "unit mask %d (family %d)", k, k % 3);
    unsigned s = 12345u + 977u * (unsigned)k;
    const int fam = k % 3;
    const int a0 = (int)(unit_rng(&s) % UM_NQ), a1 = (int)(unit_rng(&s) % 5) - 2, w0 = (int)(unit_rng(&s) % 30);
    const int c0 = (int)(unit_rng(&s) % (UM_NQ / 2)), c1 = (int)(unit_rng(&s) % 5) - 2, w1 = (int)(unit_rng(&s) % 25);
    int g[4] = {0, 0, 0, 0};
    for (int j = 0; j < UM_NKV; j++) {
        int lts, lte, uts, ute;
        if (fam == 0) {
            lts = clampi(a0 + (long)a1 * j / 2, 0, UM_NQ); lte = clampi(lts + w0 + j % 3, lts, UM_NQ);
            uts = clampi(c0 + (long)c1 * j / 3, 0, UM_NQ); ute = clampi(uts + w1 + j % 2, uts, UM_NQ);
        } else if (fam == 1) {
            if (j % 4 == 0)
                for (int q = 0; q < 4; q++) g[q] = 4 * (int)(unit_rng(&s) % (UM_NQ / 4 + 2));
            lts = clampi(g[0], 0, UM_NQ); lte = clampi(g[0] + g[1], lts, UM_NQ);
            uts = clampi(g[2], 0, UM_NQ); ute = clampi(g[2] + g[3] / 2, uts, UM_NQ);
        } else {
            lts = (int)(unit_rng(&s) % (UM_NQ + 1)); lte = lts + (int)(unit_rng(&s) % (UM_NQ + 1 - lts));
            uts = (int)(unit_rng(&s) % (UM_NQ + 1)); ute = uts + (int)(unit_rng(&s) % (UM_NQ + 1 - uts));
        }
        m->lts[j] = lts; m->lte[j] = lte; m->uts[j] = uts; m->ute[j] = ute;
    }
    return 0;
}
static void unit_mask_free(attn_mask_t *m) { free(m->lts); memset(m, 0, sizeof *m); }

int fa2_unit_mask_element(char *why, size_t len)
{
    for (int k = 0; k < UM_MASKS; k++) {
        attn_mask_t m;
        if (unit_mask_make(&m, k) != 0) { snprintf(why, len, "unit check: out of host memory"); return -1; }
        for (int key = 0; key < m.N_kv; key++)
            for (int row = 0; row < m.N_q; row++) {
                const bool want = !mask_visible(&m, row, key), got = fa2_mask_hidden(&m, row, key);
                if (got != want) {
                    snprintf(why, len, "unit check, %s: row %d, key %d (runs [%d, %d) and [%d, %d)) is %s, mask.h's rule says %s",
                             m.spec, row, key, m.lts[key], m.lte[key], m.uts[key], m.ute[key],
                             got ? "hidden" : "visible", want ? "hidden" : "visible");
                    unit_mask_free(&m);
                    return -1;
                }
            }
        unit_mask_free(&m);
    }
    return 0;
}

/* Every tile's class against mask.h's rule, for tiles of several sizes (tails included);
 * the first difference is reported with both censuses of that mask and tile size. */
int fa2_unit_mask_tile(char *why, size_t len)
{
    static const char *const CLASS[] = {"UNMASKED", "PARTIAL", "FULLY_MASKED"};
    static const attn_blocks_t BL[] = {{4, 4}, {8, 4}, {4, 8}, {16, 16}, {64, 64}, {3, 5}, {1, 1}, {7, 16}};
    for (int k = 0; k < UM_MASKS + 3; k++) {
        attn_mask_t m;
        char w[160];
        int rc = k < UM_MASKS ? unit_mask_make(&m, k)
               : mask_parse(k == UM_MASKS ? "global_sliding:5,9" : k == UM_MASKS + 1 ? "causal_document:20,13" : "sliding:11",
                            UM_NQ, UM_NKV, &m, w, sizeof w);
        if (rc != 0) { snprintf(why, len, "unit check: cannot make mask %d", k); return -1; }
        for (size_t t = 0; t < sizeof BL / sizeof BL[0]; t++) {
            const int Br = BL[t].Br, Bc = BL[t].Bc, Tr = (m.N_q + Br - 1) / Br;
            mask_blocks_t mb;
            if (mask_blocks(&m, Bc, &mb) != 0) { snprintf(why, len, "unit check: out of host memory"); rc = -1; break; }
            long got[3] = {0, 0, 0}, want[3] = {0, 0, 0};
            int bad_i = -1, bad_j = -1, bad_got = 0, bad_want = 0;
            for (int i = 0; i < Tr; i++)
                for (int j = 0; j < mb.n_blocks; j++) {
                    const int r0 = i * Br, r1 = m.N_q < r0 + Br ? m.N_q : r0 + Br;
                    const int g = (int)fa2_mask_tile(&mb, i, r1 - r0, j, Br), x = (int)mask_tile_class(&mb, r0, r1, j);
                    if (g < 0 || g > 2) { got[1]++; } else got[g]++;
                    want[x]++;
                    if (g != x && bad_i < 0) { bad_i = i; bad_j = j; bad_got = g; bad_want = x; }
                }
            mask_blocks_free(&mb);
            if (bad_i >= 0) {
                const int r0 = bad_i * Br, r1 = m.N_q < r0 + Br ? m.N_q : r0 + Br;
                snprintf(why, len, "unit check, %s, tiles %d x %d: tile (%d, %d), rows [%d, %d), is %s, mask.h's rule says %s; "
                         "tile census (fully masked / partial / unmasked) %ld / %ld / %ld, the reference's %ld / %ld / %ld",
                         m.spec, Br, Bc, bad_i, bad_j, r0, r1, bad_got >= 0 && bad_got <= 2 ? CLASS[bad_got] : "no class",
                         CLASS[bad_want], got[2], got[1], got[0], want[2], want[1], want[0]);
                rc = -1;
                break;
            }
        }
        if (k < UM_MASKS) unit_mask_free(&m); else mask_free(&m);
        if (rc != 0) return -1;
    }
    return 0;
}

static bool unit_near(float got, float want)
{
    if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
    if (isinf(got) || isinf(want)) return got == want;
    return fabsf(got - want) <= 1e-6f * fabsf(want) + 1e-30f;
}
static const float UNIT_V[] = {0.0f, 1.0f, -2.5f, 0.3f, 1e-3f, 7.0f, -0.0f, 40.0f};
#define UNIT_NV (sizeof UNIT_V / sizeof UNIT_V[0])

int fa2_unit_rescale(char *why, size_t len)
{
    static const float ALPHA[] = {0.0f, 1.0f, 0.5f, 1e-20f, 0.999f};
    for (size_t a = 0; a < UNIT_NV; a++)
        for (size_t b = 0; b < sizeof ALPHA / sizeof ALPHA[0]; b++)
            for (size_t c = 0; c < UNIT_NV; c++) {
                const float got = fa2_rescale_o(UNIT_V[a], ALPHA[b], UNIT_V[c]), want = REF(fa2_rescale_o)(UNIT_V[a], ALPHA[b], UNIT_V[c]);
                if (!unit_near(got, want)) {
                    snprintf(why, len, "unit check: O~ = %g, alpha = %g, pv = %g gives %g, the reference %g",
                             (double)UNIT_V[a], (double)ALPHA[b], (double)UNIT_V[c], (double)got, (double)want);
                    return -1;
                }
            }
    return 0;
}

int fa2_unit_normalise(char *why, size_t len)
{
    static const float L[] = {0.0f, 1.0f, 2.5f, 1e-30f, 300.0f};
    for (size_t a = 0; a < sizeof L / sizeof L[0]; a++) {
        float o[UNIT_NV], r[UNIT_NV];
        memcpy(o, UNIT_V, sizeof o);
        memcpy(r, UNIT_V, sizeof r);
        fa2_normalise_row(o, L[a], (int)UNIT_NV);
        REF(fa2_normalise_row)(r, L[a], (int)UNIT_NV);
        for (size_t k = 0; k < UNIT_NV; k++)
            if (!unit_near(o[k], r[k])) {
                snprintf(why, len, "unit check: O~[%zu] = %g with l = %g gives O = %g, the reference %g",
                         k, (double)UNIT_V[k], (double)L[a], (double)o[k], (double)r[k]);
                return -1;
            }
    }
    return 0;
}

int fa2_unit_lse(char *why, size_t len)
{
    static const float M[] = {-INFINITY, 0.0f, 3.0f, -80.0f, 100.0f};
    static const float L[] = {0.0f, 1.0f, 2.5f, 1e-30f, 300.0f};
    for (size_t a = 0; a < sizeof M / sizeof M[0]; a++)
        for (size_t b = 0; b < sizeof L / sizeof L[0]; b++) {
            if ((M[a] == -INFINITY) != (L[b] == 0.0f)) continue;   /* l = 0 exactly when no key was seen */
            const float got = fa2_lse(M[a], L[b]), want = REF(fa2_lse)(M[a], L[b]);
            if (!unit_near(got, want)) {
                snprintf(why, len, "unit check: m = %g, l = %g gives L = %g, the reference %g", (double)M[a], (double)L[b],
                         (double)got, (double)want);
                return -1;
            }
        }
    return 0;
}

double fa2_fp8_rmse_bound(const attn_inputs_t *in, int check_rows)
{
    const size_t n = attn_kv_elems(&in->p);
    double sum = 0.0;
    for (size_t e = 0; e < n; e++) sum += (double)in->v[e] * in->v[e];
    const double rms_v = n ? sqrt(sum / (double)n) : 0.0;
    return fa2_fp8_rmse_tol(in->p.d) + 0x1p-3 * rms_v * sqrt(attn_mean_sum_p2(in, check_rows));
}

/* wgmma-fp8's rows: FP8's own tolerance (fa2.h), on the oracle rows the fp16 rows use */
void fa2_check_fp8(drv_row_t *r, const attn_inputs_t *in, const float *O, const float *L, int check_rows)
{
    const double tol = fa2_fp8_rmse_bound(in, check_rows);
    const attn_verdict_t v = attn_validate_rmse(in, O, L, check_rows, tol, FA2_FP8_L_TOL);
    r->max_abs = v.O.max_abs; r->rel_l2 = v.O.rel_l2; r->pipe = v.pipeline_max_abs;
    r->rows_checked = v.rows_checked;
    if (L) r->L_abs = v.L.max_abs;
    if (v.pass) return;
    if (v.O.nan_count || v.O.inf_mismatch || !(v.rmse <= tol)) {
        drv_fail(r, "vs oracle: O's RMSE %.3e on %d rows, %zu NaN, %zu wrong infinities (FP8: RMSE <= %.3e, fa2.h)",
                 v.rmse, v.rows_checked, v.O.nan_count, v.O.inf_mismatch, tol);
    } else {
        char where[160];
        err_first_bad_str(&v.L, in->p.N_q, "L", where, sizeof where);
        drv_fail(r, "vs oracle: %s (FP8: |L - L_oracle| <= %.2f (1 + |L_oracle|), fa2.h)", where, FA2_FP8_L_TOL);
    }
}
