/* tools/mma_emu/bwd_mma2d_emu.cpp - bwd_mma2d_kernel (phase5_backward/bwd_mma2d.cu) on the
 * CPU (run.sh): each row of BWD_MMA2D_TABLE on small problems, every thread block in turn as
 * THREADS host threads, against an fp64 backward computed here (L = +inf for a fully masked
 * row, D = rowsum(dO * O) as the preprocess gives them), and its visit counts against the
 * causal range. Exit 1 on any FAIL. */
#include "prelude.h"
#include <thread>
#include <vector>
#include <cstdio>
#include <cstdlib>
#include <random>
thread_local emu_dim3 threadIdx, blockIdx;
unsigned char *g_smem;
std::barrier<> *g_block_bar;
std::mutex g_atomic_mu;
#include "mma.cuh"
EmuWarp g_warps[64];
#include "kernel.inc"

template <int D, int BR, int BC, int SM, int KN, int QM>
int run(int B, int H, int Hkv, int Nq, int Nkv, bool causal, int visit_all_flag)
{
    using C = Cfg2d<D, BR, BC, SM, KN, QM>;
    attn_problem_t p; memset(&p, 0, sizeof p);
    p.B = B; p.H = H; p.H_kv = Hkv; p.N_q = Nq; p.N_kv = Nkv; p.d = D; p.causal = causal; p.scale = 1.0f / sqrtf((float)D);
    std::mt19937 rng(1234); std::normal_distribution<float> nd(0, 1);
    size_t nq = (size_t)B * H * Nq * D, nk = (size_t)B * Hkv * Nkv * D, nl = (size_t)B * H * Nq;
    std::vector<__half> Q(nq), K(nk), V(nk), dO(nq);
    std::vector<double> q(nq), k(nk), v(nk), dO64(nq);
    for (size_t i = 0; i < nq; i++) { Q[i] = __float2half(nd(rng)); q[i] = __half2float(Q[i]); dO[i] = __float2half(nd(rng)); dO64[i] = __half2float(dO[i]); }
    for (size_t i = 0; i < nk; i++) { K[i] = __float2half(nd(rng)); k[i] = __half2float(K[i]); V[i] = __float2half(nd(rng)); v[i] = __half2float(V[i]); }
    std::vector<float> L(nl), Dv(nl), dQ(nq, 0.f), dK(nk, NAN), dV(nk, NAN);
    std::vector<double> rdQ(nq, 0), rdK(nk, 0), rdV(nk, 0);
    const int G = H / Hkv, shift = Nkv - Nq;
    for (int b = 0; b < B; b++) for (int h = 0; h < H; h++) {
        const int kh = h / G;
        const double *qh = &q[((size_t)(b * H + h) * Nq) * D], *doh = &dO64[((size_t)(b * H + h) * Nq) * D];
        const double *kk = &k[((size_t)(b * Hkv + kh) * Nkv) * D], *vv = &v[((size_t)(b * Hkv + kh) * Nkv) * D];
        for (int i = 0; i < Nq; i++) {
            std::vector<double> s(Nkv), P(Nkv, 0), dp(Nkv);
            double m = -INFINITY;
            for (int j = 0; j < Nkv; j++) { double a = 0; for (int e = 0; e < D; e++) a += qh[i * D + e] * kk[j * D + e]; s[j] = a * p.scale;
                if (!causal || j <= i + shift) m = fmax(m, s[j]); }
            double l = 0; for (int j = 0; j < Nkv; j++) if (!causal || j <= i + shift) l += exp(s[j] - m);
            const double lse = m == -INFINITY ? INFINITY : m + log(l);
            L[(size_t)(b * H + h) * Nq + i] = (float)lse;
            std::vector<double> o(D, 0);
            for (int j = 0; j < Nkv; j++) if ((!causal || j <= i + shift) && lse != INFINITY) { P[j] = exp(s[j] - lse); for (int e = 0; e < D; e++) o[e] += P[j] * vv[j * D + e]; }
            double Di = 0; for (int e = 0; e < D; e++) Di += doh[i * D + e] * o[e];
            Dv[(size_t)(b * H + h) * Nq + i] = (float)Di;
            for (int j = 0; j < Nkv; j++) {
                double a = 0; for (int e = 0; e < D; e++) a += doh[i * D + e] * vv[j * D + e];
                const double ds = P[j] * (a - Di);
                for (int e = 0; e < D; e++) {
                    rdQ[((size_t)(b * H + h) * Nq + i) * D + e] += p.scale * ds * kk[j * D + e];
                    rdK[((size_t)(b * Hkv + kh) * Nkv + j) * D + e] += p.scale * ds * qh[i * D + e];
                    rdV[((size_t)(b * Hkv + kh) * Nkv + j) * D + e] += P[j] * doh[i * D + e];
                }
            }
        }
    }
    const int Tc = (Nkv + BC - 1) / BC, Tr = (Nq + BR - 1) / BR;
    std::vector<unsigned long long> counts(Tc, 0);
    gpu_visits_t vis; vis.counts = counts.data(); vis.visit_all = visit_all_flag;
    std::vector<unsigned char> smem(C::SMEM + 64);
    for (int by = 0; by < B * Hkv; by++) for (int bx = 0; bx < Tc; bx++) {
        memset(smem.data(), 0xff, smem.size());   /* poison */
        g_smem = smem.data();
        std::barrier<> bb(C::THREADS); g_block_bar = &bb;
        std::vector<std::barrier<> *> wb; for (int w = 0; w < C::WARPS; w++) { wb.push_back(new std::barrier<>(32)); g_warps[w].bar = wb.back(); }
        std::vector<std::thread> th;
        for (int t = 0; t < C::THREADS; t++) th.emplace_back([&, t] {
            threadIdx = {(unsigned)t, 0, 0}; blockIdx = {(unsigned)bx, (unsigned)by, 0};
            bwd_mma2d_kernel<D, BR, BC, SM, KN, QM>(p, Q.data(), K.data(), V.data(), dO.data(), L.data(), Dv.data(), dQ.data(), dK.data(), dV.data(), vis);
        });
        for (auto &x : th) x.join();
        for (auto *x : wb) delete x;
    }
    auto cmp = [](const char *name, const std::vector<float> &g, const std::vector<double> &r) {
        double num = 0, den = 0, ma = 0; size_t nan = 0, worst = 0;
        for (size_t i = 0; i < g.size(); i++) { if (!std::isfinite(g[i])) { nan++; continue; } double e = fabs(g[i] - r[i]); if (e > ma) { ma = e; worst = i; } num += e * e; den += r[i] * r[i]; }
        double rl = sqrt(num / (den > 0 ? den : 1));
        printf("    %s: rel L2 %.3g  max abs %.3g (at %zu: %g vs %g)  non-finite %zu\n", name, rl, ma, worst, g[worst], r[worst], nan);
        return nan == 0 && rl < 1e-2;
    };
    bool ok = cmp("dQ", dQ, rdQ) & cmp("dK", dK, rdK) & cmp("dV", dV, rdV);
    int bad = 0;
    for (int j = 0; j < Tc; j++) {
        int first = 0;
        if (causal && !visit_all_flag) { long row = (long)j * BC - shift; if (row < 0) row = 0; first = row >= Nq ? Tr : (int)(row / BR); }
        unsigned long long want = (unsigned long long)B * H * (Tr - first);
        if (counts[j] != want) { printf("    visits: block %d counted %llu, want %llu\n", j, counts[j], want); bad++; }
    }
    printf("  d=%d Br=%d Bc=%d B=%d H=%d Hkv=%d Nq=%d Nkv=%d causal=%d: %s\n", D, BR, BC, B, H, Hkv, Nq, Nkv, causal, ok && !bad ? "PASS" : "FAIL");
    return ok && !bad ? 0 : 1;
}

int main(int argc, char **argv)
{
    int which = argc > 1 ? atoi(argv[1]) : 64, fails = 0;
#define ROW(D_, BR_, BC_, SM_, KN_, QM_)                                                          \
    if (which == D_) {                                                                            \
        fails += run<D_, BR_, BC_, SM_, KN_, QM_>(1, 4, 2, 150, 211, true, 0);   /* GQA, tails, N_q < N_kv */ \
        fails += run<D_, BR_, BC_, SM_, KN_, QM_>(1, 2, 1, 333, 100, true, 0);   /* fully masked rows */ \
        fails += run<D_, BR_, BC_, SM_, KN_, QM_>(1, 1, 1, 200, 200, false, 0);  /* full */        \
    }
    BWD_MMA2D_TABLE(ROW)
    printf("%d failed\n", fails);
    return fails != 0;
}
