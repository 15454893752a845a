/* tools/mma_emu/dec_emu.cpp - phase 6's decode kernels (phase6_decoding/dec_*.cuh, the same
 * headers decode.cu launches) on the CPU (run.sh decode): split, split-pack, fused, paged,
 * ragged, the combine, and FlashDecoding++
 * (the split with the unified max, its combine, its fallback), every d of the four, on small
 * problems, every thread block in turn as 128 host threads, against an fp64 attention: O rel
 * L2 < 3e-3 (the GPU rows' bound), L within 5e-3, a row with no key O = 0 and L = +inf, and
 * for FD++ the rows it recomputed (none with phi near the scores, all with phi far from
 * them). Warp shuffles are emulated here (a warp's lanes meet at its barrier). It proves the
 * indexing and the algebra, not the speed or the races. Exit 1 on any FAIL. */
#include "prelude.h"
#include "mma.cuh"
#include <vector>
#include <random>
#include <algorithm>
#include <string>

#include "warp_emu.h"
#include "dec_kernels.cuh"

struct Case { int B, H, Hkv, Nq, Nkv, S; bool causal, pack; int page; bool ragged; };

/* the fp64 reference: row (b, h, i) over the keys of its sequence (causal bottom-right on
 * its own length n); no key: O = 0, L = +inf */
static void reference(const attn_problem_t &p, const std::vector<__half> &Q, const std::vector<__half> &K,
                      const std::vector<__half> &V, const std::vector<int> &lens, std::vector<double> &O, std::vector<double> &L)
{
    const int D = p.d, G = p.H / p.H_kv;
    O.assign((size_t)p.B * p.H * p.N_q * D, 0.0); L.assign((size_t)p.B * p.H * p.N_q, INFINITY);
    for (int b = 0; b < p.B; b++) for (int h = 0; h < p.H; h++) for (int i = 0; i < p.N_q; i++) {
        const int n = lens[b], last = p.causal ? i + (n - p.N_q) : n - 1, kh = h / G;
        const size_t row = ((size_t)b * p.H + h) * p.N_q + i;
        if (n == 0 || last < 0) continue;
        std::vector<double> s(last + 1);
        double mx = -INFINITY;
        for (int j = 0; j <= last && j < n; j++) {
            double a = 0;
            for (int e = 0; e < D; e++)
                a += (double)__half2float(Q[row * D + e]) * __half2float(K[(((size_t)b * p.H_kv + kh) * p.N_kv + j) * D + e]);
            s[j] = a * p.scale; mx = std::max(mx, s[j]);
        }
        double l = 0;
        for (int j = 0; j <= last && j < n; j++) {
            const double w = exp(s[j] - mx);
            l += w;
            for (int e = 0; e < D; e++) O[row * D + e] += w * __half2float(V[(((size_t)b * p.H_kv + kh) * p.N_kv + j) * D + e]);
        }
        for (int e = 0; e < D; e++) O[row * D + e] /= l;
        L[row] = mx + log(l);
    }
}

/* the split kernel of (D, WR, Sm) on the cache's policy over the grid, block by block */
template <int D, int WR, class Sm>
static void split_blocks(const emu_dim3 &grid, const DecArgs &a, bool paged)
{
    const auto kernel = paged ? SplitKernel<D, WR, PagedKv, Sm>::fn : SplitKernel<D, WR, ContigKv, Sm>::fn;
    emu_blocks(grid, DTHREADS, DCfg<D, WR>::SMEM, [&] { kernel(a); });
}

/* one case: the split kernels (fdpp = false) or FD++ with phi (want_redo: rows it must
 * recompute, -1: every row with a key, 0: none) */
template <int D>
static int run(const Case &c, bool fdpp, float phi, int want_redo, bool fused = false)
{
    attn_problem_t p;
    memset(&p, 0, sizeof p);
    p.B = c.B; p.H = c.H; p.H_kv = c.Hkv; p.N_q = c.Nq; p.N_kv = c.Nkv; p.d = D; p.causal = c.causal;
    p.scale = 1.0f / sqrtf((float)D);
    std::mt19937 rng(77); std::normal_distribution<float> nd(0, 1);
    const size_t nq = (size_t)c.B * c.H * c.Nq, nk = (size_t)c.B * c.Hkv * c.Nkv;
    std::vector<__half> Q(nq * D), K(nk * D), V(nk * D);
    for (auto &x : Q) x = __float2half(nd(rng));
    for (auto &x : K) x = __float2half(nd(rng));
    for (auto &x : V) x = __float2half(nd(rng));
    std::vector<int> lens(c.B, c.Nkv);
    if (c.ragged) for (int b = 0; b < c.B; b++) lens[b] = b % 4 == 0 ? c.Nkv : b % 4 == 1 ? c.Nkv / 2 + 1 : b % 4 == 2 ? 0 : 1;
    /* a paged pool: every page of every sequence, in a shuffled order */
    const int pps = c.page ? (c.Nkv + c.page - 1) / c.page : 0;
    std::vector<int> table((size_t)c.B * std::max(pps, 1));
    std::vector<__half> Kp, Vp;
    if (c.page) {
        for (size_t k = 0; k < table.size(); k++) table[k] = (int)k;
        std::shuffle(table.begin(), table.end(), std::mt19937(5));
        Kp.assign(table.size() * c.Hkv * c.page * D, __float2half(0.f)); Vp = Kp;
        for (int b = 0; b < c.B; b++) for (int g = 0; g < c.Hkv; g++) for (int j = 0; j < c.Nkv; j++)
            for (int e = 0; e < D; e++) {
                const size_t from = (((size_t)b * c.Hkv + g) * c.Nkv + j) * D + e;
                const size_t to = ((((size_t)table[(size_t)b * pps + j / c.page] * c.Hkv + g) * c.page) + j % c.page) * D + e;
                Kp[to] = K[from]; Vp[to] = V[from];
            }
    }
    std::vector<float> O(nq * D, NAN), L(nq, NAN), ws((size_t)c.S * nq * (D + 1), NAN);
    std::vector<unsigned long long> counts(c.S, 0);
    std::vector<uint8_t> redo(nq, 0xff);
    DecArgs a;
    memset(&a, 0, sizeof a);
    a.p = p; a.Q = Q.data(); a.K = c.page ? Kp.data() : K.data(); a.V = c.page ? Vp.data() : V.data();
    a.seqlens = c.ragged ? lens.data() : nullptr; a.table = c.page ? table.data() : nullptr; a.page = c.page; a.pps = pps;
    a.O = O.data(); a.L = L.data(); a.Opart = ws.data(); a.Lpart = ws.data() + (size_t)c.S * nq * D;
    a.S = c.S; a.Bc = 64; a.pack = c.pack || fdpp; a.phi = phi;
    a.vis.counts = counts.data(); a.vis.visit_all = 0;
    const int G = a.pack ? c.H / c.Hkv : 1, groups = a.pack ? c.Hkv : c.H;
    /* the block's rows as decode_cpu.c's dec_gpu_block_rows picks them: 64 (four m-tiles, one a
     * warp) past 16 rows of a group at d <= 128 */
    const bool wide = G * c.Nq > ROWS && D <= 128;
    const int rows = wide ? 4 * ROWS : ROWS;
    const emu_dim3 grid = {(unsigned)c.S, (unsigned)((G * c.Nq + rows - 1) / rows), (unsigned)(c.B * groups)};
    /* fused: the combine in the split kernel's last block of each row tile (counters zeroed) */
    std::vector<int> done(fused ? (size_t)grid.y * grid.z : 0, 0);
    a.done = fused && c.S > 1 ? done.data() : nullptr;
    dec_fdpp_redo_d = 0;
    constexpr int W4 = wide_wr<D>();   /* no 64-row block at d = 256 */
    const bool paged = c.page != 0;
    if (wide) fdpp ? split_blocks<D, W4, FdppSm>(grid, a, paged) : split_blocks<D, W4, OnlineSm>(grid, a, paged);
    else fdpp ? split_blocks<D, 1, FdppSm>(grid, a, paged) : split_blocks<D, 1, OnlineSm>(grid, a, paged);
    const emu_dim3 rows_grid = {(unsigned)((nq + DWARPS - 1) / DWARPS), 1, 1};
    if (fdpp) {
        emu_blocks(rows_grid, DTHREADS, 0, [&] { dec_fdpp_combine_kernel<D>(p, a.seqlens, c.S, (int)nq, phi, a.Opart, a.Lpart, O.data(), L.data(), redo.data()); });
        emu_blocks(emu_dim3{(unsigned)nq, 1, 1}, DTHREADS, 0, [&] {
            if (c.page) dec_recompute_kernel<D, PagedKv>(a, redo.data()); else dec_recompute_kernel<D, ContigKv>(a, redo.data()); });
    } else if (c.S > 1 && !a.done) {
        emu_blocks(rows_grid, DTHREADS, 0, [&] { dec_combine_kernel<D>(c.S, (int)nq, a.Opart, a.Lpart, O.data(), L.data()); });
    }
    const bool done_zero = std::all_of(done.begin(), done.end(), [](int x) { return x == 0; });   /* reset for the next launch */
    std::vector<double> rO, rL;
    reference(p, Q, K, V, lens, rO, rL);
    double num = 0, den = 0, lmax = 0;
    size_t bad = 0, with_keys = 0;
    for (size_t r = 0; r < nq; r++) {
        const bool keys = std::isfinite(rL[r]);
        with_keys += keys;
        if (keys ? !(fabs(L[r] - rL[r]) <= 5e-3) : L[r] != INFINITY) bad++;
        else if (keys) lmax = std::max(lmax, fabs(L[r] - rL[r]));
        for (int e = 0; e < D; e++) {
            const double o = O[r * D + e];
            if (!std::isfinite(o)) { bad++; continue; }
            num += (o - rO[r * D + e]) * (o - rO[r * D + e]); den += rO[r * D + e] * rO[r * D + e];
        }
    }
    const double rel = sqrt(num / (den > 0 ? den : 1));
    const long want = want_redo < 0 ? (long)with_keys : want_redo;
    const bool redo_ok = !fdpp || dec_fdpp_redo_d == want;
    const bool ok = bad == 0 && rel < 3e-3 && redo_ok && done_zero;
    printf("  %s d=%d B=%d H=%d/%d Nq=%d Nkv=%d S=%d rows=%d%s%s%s%s: O rel L2 %.2e, L max abs %.2e, %zu bad%s%s: %s\n",
           fdpp ? "fdpp" : fused ? "fused" : c.pack ? "split-pack" : "split", D, c.B, c.H, c.Hkv, c.Nq, c.Nkv, c.S, rows, c.causal ? " causal" : "",
           c.page ? " paged" : "", c.ragged ? " ragged" : "", fdpp ? (phi > 50 ? " phi=+100" : phi < -20 ? " phi=-50" : " phi=0") : "",
           rel, lmax, bad, fdpp ? (std::string(", ") + std::to_string(dec_fdpp_redo_d) + " recomputed, want " + std::to_string(want)).c_str() : "",
           done_zero ? "" : " (the fused counts not reset)", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}

template <int D>
static int all_cases()
{
    int f = 0;
    f += run<D>({1, 4, 2, 4, 300, 3, true, false, 0, false}, false, 0, 0);    /* split: GQA, causal, tails, 3 splits */
    f += run<D>({1, 4, 2, 4, 300, 1, true, true, 0, false}, false, 0, 0);     /* split-pack, S = 1 (no combine) */
    f += run<D>({2, 4, 1, 3, 200, 2, false, true, 16, false}, false, 0, 0);   /* paged, MQA */
    f += run<D>({4, 2, 2, 2, 130, 2, true, true, 0, true}, false, 0, 0);      /* ragged: L, L/2+1, 0, 1; causal */
    f += run<D>({1, 4, 2, 4, 300, 3, true, true, 0, false}, true, 0.0f, 0);   /* FD++: phi near the scores */
    f += run<D>({1, 4, 2, 4, 300, 1, false, true, 0, false}, true, 0.0f, 0);  /* FD++ at S = 1 */
    f += run<D>({1, 4, 2, 4, 300, 3, true, true, 0, false}, true, 100.0f, -1);  /* every row past the top */
    f += run<D>({2, 4, 2, 4, 200, 2, true, true, 16, false}, true, -50.0f, -1); /* none reaching the bottom, paged */
    f += run<D>({4, 2, 2, 2, 130, 2, true, true, 0, true}, true, 0.0f, 0);    /* ragged, rows with no key */
    /* many query tokens with packing: G x N_q > 16 rows of a KV head in one 64-row block */
    f += run<D>({1, 8, 2, 16, 300, 3, true, true, 0, false}, false, 0, 0);   /* 64 rows, causal, tails, 3 splits */
    f += run<D>({2, 8, 2, 5, 200, 1, false, true, 16, false}, false, 0, 0);  /* 20 rows (44 padding), paged, S = 1 */
    f += run<D>({1, 8, 1, 12, 130, 2, true, true, 0, false}, false, 0, 0);   /* 96 rows: two row tiles, MQA */
    f += run<D>({4, 8, 2, 8, 130, 2, true, true, 0, true}, false, 0, 0);     /* ragged, 32 rows */
    f += run<D>({1, 8, 2, 16, 300, 3, true, true, 0, false}, true, 0.0f, 0);   /* FD++, 64 rows */
    f += run<D>({2, 8, 2, 8, 200, 2, true, true, 16, false}, true, 100.0f, -1); /* FD++ fallback, 32 rows, paged */
    /* fused: the split that finishes a row tile last merges it (no combine kernel) */
    f += run<D>({1, 4, 2, 4, 300, 3, true, true, 0, false}, false, 0, 0, true);    /* 3 splits, causal, tails */
    f += run<D>({2, 4, 1, 3, 200, 7, false, true, 16, false}, false, 0, 0, true);  /* paged, MQA, empty splits (S > blocks) */
    f += run<D>({4, 2, 2, 2, 130, 2, true, true, 0, true}, false, 0, 0, true);     /* ragged: empty sequences' splits count too */
    f += run<D>({1, 8, 2, 16, 300, 3, true, true, 0, false}, false, 0, 0, true);   /* the 64-row block */
    return f;
}

int main(int argc, char **argv)
{
    return emu_main_d(argc, argv, "dec_emu", [](auto d) { return all_cases<decltype(d)::value>(); });
}
