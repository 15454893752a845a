/* tools/mma_emu/fa2_wgmma_emu.cpp - phase 4's fa2_wgmma_kernel, step 1 (fa2_wgmma.cu), on the
 * CPU with the same emulated wgmma as bwd_wgmma_emu.cpp (run.sh wgmma). That kernel PASSed
 * against the fp64 oracle on an H100 (docs/results/h100/phase4/phase4_hopper_steps_*.txt), so
 * where this emulation agrees with the fp64 forward, its reading of the descriptors, the
 * 128-byte swizzle, K-major A and B, MN-major B and register A agrees with the hardware's on
 * those paths. (MN-major A, the backward's dQ, is not among them: build/test_wgmma checks
 * it on the GPU.) O and L against an fp64 forward; exit 1 on any FAIL. */
#include "prelude.h"
#include <cstdlib>
#include <vector>
#include <thread>
#include <random>
#include <cstdio>
#include "mma.cuh"
#include "wgmma.cuh"
#include "kernel_fa2_wgmma.inc"

template <int D>
int run(int B, int H, int Hkv, int Nq, int Nkv, bool causal)
{
    using C = WgCfg<D, 1>;
    attn_problem_t p; memset(&p, 0, sizeof p);
    p.B = B; p.H = H; p.H_kv = Hkv; p.N_q = Nq; p.N_kv = Nkv; p.d = D; p.causal = causal; p.scale = 1.0f / sqrtf((float)D);
    std::mt19937 rng(99); std::normal_distribution<float> nd(0, 1);
    const size_t nq = (size_t)B * H * Nq * D, nk = (size_t)B * Hkv * Nkv * D;
    std::vector<__half> Q(nq), K(nk), V(nk);
    for (auto &x : Q) x = __float2half(nd(rng));
    for (auto &x : K) x = __float2half(nd(rng));
    for (auto &x : V) x = __float2half(nd(rng));
    std::vector<float> O(nq, NAN), L((size_t)B * H * Nq, NAN);
    std::vector<double> rO(nq, 0), rL((size_t)B * H * Nq);
    const int G = H / Hkv, shift = Nkv - Nq;
    for (int b = 0; b < B; b++) for (int h = 0; h < H; h++) for (int i = 0; i < Nq; i++) {
        const __half *q = &Q[((size_t)(b * H + h) * Nq + i) * D];
        const __half *k = &K[((size_t)(b * Hkv + h / G) * Nkv) * D], *v = &V[((size_t)(b * Hkv + h / G) * Nkv) * D];
        std::vector<double> s(Nkv);
        double mx = -INFINITY;
        for (int j = 0; j < Nkv; j++) {
            double a = 0; for (int e = 0; e < D; e++) a += (double)__half2float(q[e]) * __half2float(k[(size_t)j * D + e]);
            s[j] = a * p.scale; if (!causal || j <= i + shift) mx = fmax(mx, s[j]);
        }
        double l = 0; for (int j = 0; j < Nkv; j++) if (!causal || j <= i + shift) l += exp(s[j] - mx);
        rL[(size_t)(b * H + h) * Nq + i] = mx == -INFINITY ? INFINITY : mx + log(l);
        if (mx == -INFINITY) continue;
        for (int j = 0; j < Nkv; j++) if (!causal || j <= i + shift)
            for (int e = 0; e < D; e++) rO[((size_t)(b * H + h) * Nq + i) * D + e] += exp(s[j] - mx) / l * __half2float(v[(size_t)j * D + e]);
    }
    const int Tr = (Nq + WG_BR - 1) / WG_BR;
    std::vector<unsigned long long> counts(Tr, 0);
    WgArgs a; memset(&a, 0, sizeof a);
    a.p = p; a.Q = Q.data(); a.K = K.data(); a.V = V.data(); a.O = O.data(); a.L = L.data();
    a.vis.counts = counts.data(); a.vis.visit_all = 0;
    const size_t bytes = (C::SMEM + 1023) / 1024 * 1024;
    unsigned char *smem = (unsigned char *)aligned_alloc(1024, bytes);
    g_smem_bytes = bytes;
    for (int by = 0; by < B * H; by++) for (int bx = 0; bx < Tr; bx++) {
        memset(smem, 0xff, bytes);
        g_smem = smem;
        std::barrier<> bb(WG_THREADS); g_block_bar = &bb;
        std::barrier<> wgb(WG_THREADS); g_wgs[0].bar = &wgb;
        std::vector<std::barrier<> *> wb;
        for (int w = 0; w < 4; w++) { wb.push_back(new std::barrier<>(32)); g_warps[w].bar = wb.back(); }
        std::vector<std::thread> th;
        for (int t = 0; t < WG_THREADS; t++) th.emplace_back([&, t] {
            threadIdx = {(unsigned)t, 0, 0}; blockIdx = {(unsigned)bx, (unsigned)by, 0};
            fa2_wgmma_kernel<D, true, 1>(a);
        });
        for (auto &x : th) x.join();
        for (auto *x : wb) delete x;
    }
    free(smem);
    double num = 0, den = 0, ma = 0; size_t bad = 0;
    for (size_t e = 0; e < nq; e++) {
        if (!std::isfinite(O[e])) { bad++; continue; }
        const double d = fabs(O[e] - rO[e]); ma = fmax(ma, d); num += d * d; den += rO[e] * rO[e];
    }
    size_t badL = 0;
    for (size_t e = 0; e < rL.size(); e++)
        if (std::isinf(rL[e]) ? !(std::isinf(L[e]) && L[e] > 0) : !(fabs(L[e] - rL[e]) < 1e-3)) badL++;
    const double rl = sqrt(num / (den > 0 ? den : 1));
    const bool ok = !bad && !badL && rl < 3e-3;
    printf("  fa2-wgmma step 1 d=%d B=%d H=%d Hkv=%d Nq=%d Nkv=%d causal=%d: O rel L2 %.3g max abs %.3g non-finite %zu, "
           "L wrong %zu: %s\n", D, B, H, Hkv, Nq, Nkv, (int)causal, rl, ma, bad, badL, ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}

int main()
{
    int fails = 0;
    fails += run<64>(1, 4, 2, 150, 211, true);    /* GQA, tails, N_q < N_kv */
    fails += run<64>(1, 2, 1, 200, 90, true);     /* fully masked rows */
    fails += run<128>(1, 2, 2, 130, 130, false);  /* full, tails */
    printf("%d failed\n", fails);
    return fails != 0;
}
