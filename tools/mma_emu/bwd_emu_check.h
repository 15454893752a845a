/* tools/mma_emu/bwd_emu_check.h - what the backward emulations share (bwd_mma2d_emu.cpp,
 * bwd_wgmma_emu.cpp): a small problem's fp16 inputs, the fp64 backward they are held to (L =
 * +inf for a fully masked row, D = rowsum(dO * O) as the preprocess gives them), a thread
 * block run as THREADS std::threads, and the verdict (dQ, dK, dV rel L2 < 1e-2, no
 * non-finite element; the visit counts against the causal range). */
#pragma once
#include <thread>
#include <vector>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <functional>

struct EmuBwd {
    attn_problem_t p;
    std::vector<__half> Q, K, V, dO;
    std::vector<float> L, Dv, dQ, dK, dV;
    std::vector<double> rdQ, rdK, rdV;
};

inline EmuBwd emu_bwd_problem(int B, int H, int Hkv, int Nq, int Nkv, int D, bool causal)
{
    EmuBwd x;
    attn_problem_t &p = x.p;
    memset(&p, 0, sizeof p);
    p.B = B; p.H = H; p.H_kv = Hkv; p.N_q = Nq; p.N_kv = Nkv; p.d = D; p.causal = causal; p.scale = 1.0f / sqrtf((float)D);
    std::mt19937 rng(1234); std::normal_distribution<float> nd(0, 1);
    size_t nq = (size_t)B * H * Nq * D, nk = (size_t)B * Hkv * Nkv * D, nl = (size_t)B * H * Nq;
    x.Q.resize(nq); x.dO.resize(nq); x.K.resize(nk); x.V.resize(nk);
    std::vector<double> q(nq), k(nk), v(nk), dO64(nq);
    for (size_t i = 0; i < nq; i++) { x.Q[i] = __float2half(nd(rng)); q[i] = __half2float(x.Q[i]); x.dO[i] = __float2half(nd(rng)); dO64[i] = __half2float(x.dO[i]); }
    for (size_t i = 0; i < nk; i++) { x.K[i] = __float2half(nd(rng)); k[i] = __half2float(x.K[i]); x.V[i] = __float2half(nd(rng)); v[i] = __half2float(x.V[i]); }
    x.L.assign(nl, 0); x.Dv.assign(nl, 0); x.dQ.assign(nq, 0.f); x.dK.assign(nk, NAN); x.dV.assign(nk, NAN);
    x.rdQ.assign(nq, 0); x.rdK.assign(nk, 0); x.rdV.assign(nk, 0);
    const int G = H / Hkv, shift = Nkv - Nq;
    for (int b = 0; b < B; b++) for (int h = 0; h < H; h++) {
        const int kh = h / G;
        const double *qh = &q[((size_t)(b * H + h) * Nq) * D], *doh = &dO64[((size_t)(b * H + h) * Nq) * D];
        const double *kk = &k[((size_t)(b * Hkv + kh) * Nkv) * D], *vv = &v[((size_t)(b * Hkv + kh) * Nkv) * D];
        for (int i = 0; i < Nq; i++) {
            std::vector<double> s(Nkv), P(Nkv, 0);
            double mx = -INFINITY;
            for (int j = 0; j < Nkv; j++) { double a = 0; for (int e = 0; e < D; e++) a += qh[i * D + e] * kk[j * D + e]; s[j] = a * p.scale;
                if (!causal || j <= i + shift) mx = fmax(mx, s[j]); }
            double l = 0; for (int j = 0; j < Nkv; j++) if (!causal || j <= i + shift) l += exp(s[j] - mx);
            const double lse = mx == -INFINITY ? INFINITY : mx + log(l);
            x.L[(size_t)(b * H + h) * Nq + i] = (float)lse;
            std::vector<double> o(D, 0);
            for (int j = 0; j < Nkv; j++) if ((!causal || j <= i + shift) && lse != INFINITY) { P[j] = exp(s[j] - lse); for (int e = 0; e < D; e++) o[e] += P[j] * vv[j * D + e]; }
            double Di = 0; for (int e = 0; e < D; e++) Di += doh[i * D + e] * o[e];
            x.Dv[(size_t)(b * H + h) * Nq + i] = (float)Di;
            for (int j = 0; j < Nkv; j++) {
                double a = 0; for (int e = 0; e < D; e++) a += doh[i * D + e] * vv[j * D + e];
                const double ds = P[j] * (a - Di);
                for (int e = 0; e < D; e++) {
                    x.rdQ[((size_t)(b * H + h) * Nq + i) * D + e] += p.scale * ds * kk[j * D + e];
                    x.rdK[((size_t)(b * Hkv + kh) * Nkv + j) * D + e] += p.scale * ds * qh[i * D + e];
                    x.rdV[((size_t)(b * Hkv + kh) * Nkv + j) * D + e] += P[j] * doh[i * D + e];
                }
            }
        }
    }
    return x;
}

/* every thread block of a (Tc, B H_kv) grid in turn, THREADS host threads each; smem: the
 * block's shared memory (poisoned before each block); setup(): per-block barriers */
inline void emu_grid(int Tc, int By, int threads, std::vector<unsigned char> &smem_buf, unsigned char *smem,
                     size_t smem_bytes, const std::function<void()> &setup, const std::function<void()> &teardown,
                     const std::function<void(int)> &thread_body)
{
    for (int by = 0; by < By; by++) for (int bx = 0; bx < Tc; bx++) {
        (void)smem_buf;
        memset(smem, 0xff, smem_bytes);   /* poison */
        g_smem = smem;
        std::barrier<> bb(threads); g_block_bar = &bb;
        setup();
        std::vector<std::thread> th;
        for (int t = 0; t < threads; t++) th.emplace_back([&, t] {
            threadIdx = {(unsigned)t, 0, 0}; blockIdx = {(unsigned)bx, (unsigned)by, 0};
            thread_body(t);
        });
        for (auto &x : th) x.join();
        teardown();
    }
}

/* dQ, dK, dV against the fp64 backward and the visit counts (K/V block j visits B H (Tr -
 * first_j) Q blocks); prints one verdict line, returns 1 on FAIL */
inline int emu_bwd_verdict(const EmuBwd &x, const std::vector<unsigned long long> &counts, int BR, int BC,
                           bool visit_all_flag)
{
    const attn_problem_t &p = x.p;
    auto cmp = [](const char *name, const std::vector<float> &g, const std::vector<double> &r) {
        double num = 0, den = 0, ma = 0; size_t nan = 0, worst = 0;
        for (size_t i = 0; i < g.size(); i++) { if (!std::isfinite(g[i])) { nan++; continue; } double e = fabs(g[i] - r[i]); if (e > ma) { ma = e; worst = i; } num += e * e; den += r[i] * r[i]; }
        double rl = sqrt(num / (den > 0 ? den : 1));
        printf("    %s: rel L2 %.3g  max abs %.3g (at %zu: %g vs %g)  non-finite %zu\n", name, rl, ma, worst, g[worst], r[worst], nan);
        return nan == 0 && rl < 1e-2;
    };
    bool ok = cmp("dQ", x.dQ, x.rdQ) & cmp("dK", x.dK, x.rdK) & cmp("dV", x.dV, x.rdV);
    const int Tc = (p.N_kv + BC - 1) / BC, Tr = (p.N_q + BR - 1) / BR, shift = p.N_kv - p.N_q;
    int bad = 0;
    for (int j = 0; j < Tc; j++) {
        int first = 0;
        if (p.causal && !visit_all_flag) { const long row = std::max((long)j * BC - shift, 0L); first = row >= p.N_q ? Tr : (int)(row / BR); }
        unsigned long long want = (unsigned long long)p.B * p.H * (Tr - first);
        if (counts[j] != want) { printf("    visits: block %d counted %llu, want %llu\n", j, counts[j], want); bad++; }
    }
    printf("  d=%d Br=%d Bc=%d B=%d H=%d Hkv=%d Nq=%d Nkv=%d causal=%d: %s\n", p.d, BR, BC, p.B, p.H, p.H_kv, p.N_q,
           p.N_kv, (int)p.causal, ok && !bad ? "PASS" : "FAIL");
    return ok && !bad ? 0 : 1;
}
