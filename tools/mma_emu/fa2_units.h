/* tools/mma_emu/fa2_units.h - one check per GPU exercise of fa2_mma_kernel.cuh, each on the
 * device function that holds the exercise's region alone, on one emulated warp, against
 * values worked out here from the function's contract (fa2_mask_emu.cpp runs them before the
 * whole kernel). A wrong exercise then FAILs its own check and no other, and the FAIL names
 * it alone, where the whole kernel's wrong O could come from any of the four.
 *
 * The warp's registers hold S, O~ and the row statistics in the mma accumulator layout
 * (common/mma.cuh): lane = 4 g + t holds, of m-tile mtile, rows r = 16 mtile + 8 x + g
 * (x = 0, 1) and columns 8 n + 2 t + {0, 1}:
 *
 *            cols 8n+0,1   8n+2,3   8n+4,5   8n+6,7
 *   row g      lane 4g    lane 4g+1 lane 4g+2 lane 4g+3     s[mtile][n][0..1]  (x = 0)
 *   row g+8    lane 4g    lane 4g+1 lane 4g+2 lane 4g+3     s[mtile][n][2..3]  (x = 1)
 *
 * so a row's values sit in the 4 lanes of a quad, and its m_i, l_i in each of them. */
#pragma once
#include <string>

namespace fa2_units {

inline float value_at(int r, int c, int salt)   /* a fixed pseudo-random score in [-4, 4) */
{
    unsigned h = (unsigned)(r * 7919 + c * 104729 + salt * 1299709);
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    return (float)(h % 8000) / 1000.0f - 4.0f;
}
inline bool close(float got, double want, double rel)
{
    if (std::isinf(want) || want == 0.0) return got == (float)want;
    return std::isfinite(got) && fabs(got - want) <= rel * fabs(want);
}
/* the rows' old statistics: row 3 has seen no key (m = -inf, l = 0), row 5 has a max above
 * every score of the block, the others below it */
/* row 9 of the block sees no key at all, before or now (every score -inf: a masked row) */
inline bool row_empty(int r) { return r == 9; }
inline float m_old_of(int r) { return r == 3 || row_empty(r) ? -INFINITY : r == 5 ? 9.0f : value_at(r, -1, 1) - 2.0f; }
inline float l_old_of(int r) { return r == 3 || row_empty(r) ? 0.0f : 1.0f + (float)(r % 7); }

/* fa2.rowmax_mma: row_max() returns max(m_i, the row's max over the quad's columns) */
template <int BC, int MT> inline bool rowmax_ok(std::string &why)
{
    std::vector<float> got(32 * MT * 2);
    emu_blocks({1, 1, 1}, 32, 0, [&] {
        const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
        float s[MT][BC / 8][4], m_i[MT][2];
        for (int mt = 0; mt < MT; mt++) for (int x = 0; x < 2; x++) {
            const int r = 16 * mt + 8 * x + g;
            m_i[mt][x] = m_old_of(r);
            for (int n = 0; n < BC / 8; n++) for (int k = 0; k < 2; k++) s[mt][n][2 * x + k] = value_at(r, 8 * n + 2 * t + k, 2);
        }
        for (int mt = 0; mt < MT; mt++) for (int x = 0; x < 2; x++) got[(lane * MT + mt) * 2 + x] = row_max<BC, MT>(s, m_i, mt, x);
    });
    for (int lane = 0; lane < 32; lane++) for (int mt = 0; mt < MT; mt++) for (int x = 0; x < 2; x++) {
        const int r = 16 * mt + 8 * x + lane / 4;
        float want = m_old_of(r);
        for (int c = 0; c < BC; c++) want = std::max(want, value_at(r, c, 2));
        if (got[(lane * MT + mt) * 2 + x] != want) {
            why = "lane " + std::to_string(lane) + ", row " + std::to_string(r) + ": " + std::to_string(got[(lane * MT + mt) * 2 + x]) +
                  ", want the row's max " + std::to_string(want);
            return false;
        }
    }
    return true;
}

/* fa2.online_mma: online_update() at the new max mx = max(m_old, rowmax S) turns the thread's
 * S into P~ = e^(scale (S - mx)), sets alpha = e^(scale (m_old - mx)) and m_i = mx, and l_i =
 * alpha l_old + (this thread's P~ sum) (DEFER), or = alpha l_old + (the quad's P~ sum) with
 * alpha times l_old (FA1's way) */
template <int BC, int MT, bool DEFER> inline bool online_ok(float scale, std::string &why)
{
    const float sl2 = scale * 1.4426950408889634f;
    struct Out { float p[MT][BC / 8][4], m[MT][2], l[MT][2], alpha[MT][2]; };
    std::vector<Out> got(32);
    auto score = [](int r, int c) { return row_empty(r) ? -INFINITY : value_at(r, c, 3); };
    auto new_max = [&](int r) { float m = m_old_of(r); for (int c = 0; c < BC; c++) m = std::max(m, score(r, c)); return m; };
    emu_blocks({1, 1, 1}, 32, 0, [&] {
        const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
        float s[MT][BC / 8][4], m_i[MT][2], l_i[MT][2], alpha[MT][2];
        for (int mt = 0; mt < MT; mt++) for (int x = 0; x < 2; x++) {
            const int r = 16 * mt + 8 * x + g;
            m_i[mt][x] = m_old_of(r); l_i[mt][x] = l_old_of(r);
            for (int n = 0; n < BC / 8; n++) for (int k = 0; k < 2; k++) s[mt][n][2 * x + k] = score(r, 8 * n + 2 * t + k);
        }
        for (int mt = 0; mt < MT; mt++) for (int x = 0; x < 2; x++)
            online_update<BC, MT, DEFER>(s, m_i, l_i, alpha, mt, x, new_max(16 * mt + 8 * x + g), sl2);
        Out &o = got[lane];
        memcpy(o.p, s, sizeof s); memcpy(o.m, m_i, sizeof m_i); memcpy(o.l, l_i, sizeof l_i); memcpy(o.alpha, alpha, sizeof alpha);
    });
    for (int lane = 0; lane < 32; lane++) for (int mt = 0; mt < MT; mt++) for (int x = 0; x < 2; x++) {
        const int g = lane / 4, t = lane % 4, r = 16 * mt + 8 * x + g;
        const double mx = new_max(r), m_old = m_old_of(r), l_old = l_old_of(r);
        const double a = mx == -INFINITY ? 0.0 : exp((double)scale * (m_old - mx));
        auto p_of = [&](int c) { const double v = score(r, c); return mx == -INFINITY ? 0.0 : exp((double)scale * (v - mx)); };
        double mine = 0, quad = 0;
        const Out &o = got[lane];
        for (int c = 0; c < BC; c++) quad += p_of(c);
        std::string at = "lane " + std::to_string(lane) + ", row " + std::to_string(r);
        for (int n = 0; n < BC / 8; n++) for (int k = 0; k < 2; k++) {
            const double want = p_of(8 * n + 2 * t + k);
            mine += want;
            if (!close(o.p[mt][n][2 * x + k], want, 2e-5)) {
                why = at + ", column " + std::to_string(8 * n + 2 * t + k) + ": P~ " + std::to_string(o.p[mt][n][2 * x + k]) +
                      ", want e^(scale (S - m_new)) = " + std::to_string(want);
                return false;
            }
        }
        const double want_l = a * l_old + (DEFER ? mine : quad), want_alpha = DEFER ? a : a * l_old;
        if (o.m[mt][x] != (float)mx) { why = at + ": m_i " + std::to_string(o.m[mt][x]) + ", want the new max " + std::to_string(mx); return false; }
        if (!close(o.alpha[mt][x], want_alpha, 2e-5)) {
            why = at + ": alpha " + std::to_string(o.alpha[mt][x]) + ", want " + std::to_string(want_alpha) +
                  (DEFER ? " = e^(scale (m_old - m_new))" : " = e^(scale (m_old - m_new)) l_old");
            return false;
        }
        if (!close(o.l[mt][x], want_l, 2e-5)) {
            why = at + ": l_i " + std::to_string(o.l[mt][x]) + ", want " + std::to_string(want_l) +
                  (DEFER ? " = alpha l_old + the thread's P~ sum" : " = alpha l_old + the row's P~ sum");
            return false;
        }
    }
    return true;
}

/* fa2.finish_mma: finish_rows() writes O_i = O~ / l (the quad's l: DEFER adds its parts
 * first) and L_i = scale m + log l, +inf and O = 0 for a row with l = 0; rows at or past
 * N_q untouched. The warp's first row is row0 = g (its rows g + 16 mtile + 8 x). */
template <int D, int MT, bool DEFER> inline bool finish_ok(float scale, std::string &why)
{
    const int rows = 16 * MT, n_q = rows - 3;          /* the last 3 rows lie past N_q */
    attn_problem_t p;
    memset(&p, 0, sizeof p);
    p.N_q = n_q; p.N_kv = 1; p.d = D; p.scale = scale;
    std::vector<float> O((size_t)rows * D, NAN), L(rows, NAN);
    auto o_at = [](int r, int c) { return r == 3 ? 0.0f : value_at(r, c, 4); };
    auto m_at = [](int r) { return r == 3 ? -INFINITY : value_at(r, -2, 4); };
    /* DEFER: the quad's 4 lanes hold parts of l, lane t the part (t + 1) l_r / 10 */
    auto l_at = [](int r) { return r == 3 ? 0.0f : 0.5f + (float)(r % 5); };
    emu_blocks({1, 1, 1}, 32, 0, [&] {
        const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
        float o[MT][D / 8][4], m_i[MT][2], l_i[MT][2];
        for (int mt = 0; mt < MT; mt++) for (int x = 0; x < 2; x++) {
            const int r = 16 * mt + 8 * x + g;
            m_i[mt][x] = m_at(r);
            l_i[mt][x] = DEFER ? l_at(r) * (float)(t + 1) / 10.0f : l_at(r);
            for (int n = 0; n < D / 8; n++) for (int k = 0; k < 2; k++) o[mt][n][2 * x + k] = o_at(r, 8 * n + 2 * t + k);
        }
        finish_rows<D, MT, DEFER>(p, o, m_i, l_i, g, t, O.data(), L.data());
    });
    for (int r = 0; r < rows; r++) {
        std::string at = "row " + std::to_string(r);
        if (r >= n_q) {
            bool untouched = std::isnan(L[r]);
            for (int c = 0; c < D; c++) untouched = untouched && std::isnan(O[(size_t)r * D + c]);
            if (!untouched) { why = at + " lies past N_q = " + std::to_string(n_q) + " and was written"; return false; }
            continue;
        }
        const double l = l_at(r), want_L = l > 0 ? (double)scale * m_at(r) + log(l) : INFINITY;
        if (!close(L[r], want_L, 1e-5)) { why = at + ": L " + std::to_string(L[r]) + ", want scale m + log l = " + std::to_string(want_L); return false; }
        for (int c = 0; c < D; c++) {
            const double want = l > 0 ? (DEFER ? o_at(r, c) / l : o_at(r, c)) : 0.0;
            if (!close(O[(size_t)r * D + c], want, 1e-5)) {
                why = at + ", column " + std::to_string(c) + ": O " + std::to_string(O[(size_t)r * D + c]) + ", want " +
                      std::to_string(want) + (DEFER ? " = O~ / l" : " = O~ (already normalised)");
                return false;
            }
        }
    }
    return true;
}

/* fa2.causal_range_mma: causal_n_blocks() is one past the last K/V block holding a key that a
 * row of the Q block [i0, min(N_q, i0 + BR)) sees (row r sees keys <= r + shift), at most Tc */
template <int BR, int BC> inline bool causal_range_ok(std::string &why)
{
    const int shapes[][2] = {{300, 333}, {333, 100}, {1, 1}, {BR + 1, 3 * BC + 5}, {5 * BR, 5 * BR}, {200, 1000}};
    for (const auto &sh : shapes) {
        attn_problem_t p;
        memset(&p, 0, sizeof p);
        p.N_q = sh[0]; p.N_kv = sh[1]; p.causal = 1;
        const int shift = p.N_kv - p.N_q, Tc = (p.N_kv + BC - 1) / BC;
        for (int i0 = 0; i0 < p.N_q; i0 += BR) {
            int want = 0;
            for (int r = i0; r < std::min(p.N_q, i0 + BR); r++)
                for (int j = 0; j < Tc; j++) if ((long)j * BC <= (long)r + shift) want = std::max(want, j + 1);
            const int got = causal_n_blocks<BR, BC>(p, i0, shift, Tc);
            if (got != want) {
                why = "N_q = " + std::to_string(p.N_q) + ", N_kv = " + std::to_string(p.N_kv) + ", the Q block from row " +
                      std::to_string(i0) + ": " + std::to_string(got) + " K/V blocks, want " + std::to_string(want);
                return false;
            }
        }
    }
    return true;
}

/* every check of the four, each line PASS or FAIL with the first wrong value; the names of
 * the exercises whose check FAILed, ", "-separated (empty: all four PASS) */
template <int D, int BC, int MT, int BR> inline std::string failed(float scale)
{
    std::string why, names;
    auto one = [&](const char *ex, bool ok) {
        printf("  unit %s: %s%s%s\n", ex, ok ? "PASS" : "FAIL", ok ? "" : ": ", ok ? "" : why.c_str());
        if (!ok) names += (names.empty() ? "" : ", ") + std::string(ex);
        why.clear();
    };
    one("fa2.causal_range_mma", causal_range_ok<BR, BC>(why));
    one("fa2.rowmax_mma", rowmax_ok<BC, MT>(why));
    bool on = online_ok<BC, MT, true>(scale, why);
    if (on) on = online_ok<BC, MT, false>(scale, why);
    one("fa2.online_mma", on);
    bool fin = finish_ok<D, MT, true>(scale, why);
    if (fin) fin = finish_ok<D, MT, false>(scale, why);
    one("fa2.finish_mma", fin);
    return names;
}

}   // namespace fa2_units
