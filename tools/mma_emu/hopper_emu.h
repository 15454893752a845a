/* tools/mma_emu/hopper_emu.h - what the Hopper harnesses share (fa2_wgmma_emu.cpp,
 * fa3_fp8_emu.cpp): a problem with its fp16 inputs and the fp64 forward from them, and one
 * launch of a grid, block after block, each block's threads as host threads. */
#pragma once
#include <vector>
#include <thread>
#include <random>
#include <functional>

/* a problem, its fp16 inputs, and the fp64 forward from them */
struct Problem {
    attn_problem_t p;
    std::vector<__half> Q, K, V;
    std::vector<double> rO, rL;
};

/* outliers: FlashAttention-3's Table 3 inputs, N(0,1) plus N(0,100) in one element of a
 * thousand of Q, K and V */
static Problem make_problem(int D, int B, int H, int Hkv, int Nq, int Nkv, bool causal, bool outliers = false)
{
    Problem x;
    attn_problem_t &p = x.p;
    memset(&p, 0, sizeof p);
    p.B = B; p.H = H; p.H_kv = Hkv; p.N_q = Nq; p.N_kv = Nkv; p.d = D; p.causal = causal; p.scale = 1.0f / sqrtf((float)D);
    std::mt19937 rng(99); std::normal_distribution<float> nd(0, 1);
    const size_t nq = (size_t)B * H * Nq * D, nk = (size_t)B * Hkv * Nkv * D;
    x.Q.resize(nq); x.K.resize(nk); x.V.resize(nk);
    std::uniform_real_distribution<float> u(0, 1);
    auto draw = [&] { return nd(rng) + (outliers && u(rng) < 0.001f ? 10.0f * nd(rng) : 0.0f); };
    for (auto &v : x.Q) v = __float2half(draw());
    for (auto &v : x.K) v = __float2half(draw());
    for (auto &v : x.V) v = __float2half(draw());
    x.rO.assign(nq, 0); x.rL.assign((size_t)B * H * Nq, 0);
    const int G = H / Hkv, shift = Nkv - Nq;
    for (int b = 0; b < B; b++) for (int h = 0; h < H; h++) for (int i = 0; i < Nq; i++) {
        const __half *q = &x.Q[((size_t)(b * H + h) * Nq + i) * D];
        const __half *k = &x.K[((size_t)(b * Hkv + h / G) * Nkv) * D], *v = &x.V[((size_t)(b * Hkv + h / G) * Nkv) * D];
        std::vector<double> s(Nkv);
        double mx = -INFINITY;
        for (int j = 0; j < Nkv; j++) {
            double a = 0; for (int e = 0; e < D; e++) a += (double)__half2float(q[e]) * __half2float(k[(size_t)j * D + e]);
            s[j] = a * p.scale; if (!causal || j <= i + shift) mx = fmax(mx, s[j]);
        }
        double l = 0; for (int j = 0; j < Nkv; j++) if (!causal || j <= i + shift) l += exp(s[j] - mx);
        x.rL[(size_t)(b * H + h) * Nq + i] = mx == -INFINITY ? INFINITY : mx + log(l);
        if (mx == -INFINITY) continue;
        for (int j = 0; j < Nkv; j++) if (!causal || j <= i + shift)
            for (int e = 0; e < D; e++) x.rO[((size_t)(b * H + h) * Nq + i) * D + e] += exp(s[j] - mx) / l * __half2float(v[(size_t)j * D + e]);
    }
    return x;
}

/* one launch: grid.x x grid.y blocks in turn, `threads` host threads each, smem_bytes of
 * shared memory (poisoned), a barrier a warp and a warpgroup, fresh mbarriers */
static void emu_launch(unsigned gx, unsigned gy, int threads, size_t smem_bytes, const std::function<void()> &kernel)
{
    const size_t bytes = (smem_bytes + 1023) / 1024 * 1024;
    unsigned char *smem = (unsigned char *)aligned_alloc(1024, bytes);
    g_smem_bytes = bytes;
    for (unsigned by = 0; by < gy; by++) for (unsigned bx = 0; bx < gx; bx++) {
        memset(smem, 0xff, bytes);
        g_smem = smem;
        emu_named_reset();
        std::barrier<> bb(threads); g_block_bar = &bb;
        std::vector<std::barrier<> *> bars;
        for (int w = 0; w < threads / 128; w++) { bars.push_back(new std::barrier<>(128)); g_wgs[w].bar = bars.back(); }
        for (int w = 0; w < threads / 32; w++) { bars.push_back(new std::barrier<>(32)); g_warps[w].bar = bars.back(); }
        std::vector<std::thread> th;
        for (int t = 0; t < threads; t++) th.emplace_back([&, t] {
            threadIdx = {(unsigned)t, 0, 0}; blockIdx = {bx, by, 0}; gridDim = {gx, gy, 1};
            kernel();
        });
        for (auto &x : th) x.join();
        for (auto *x : bars) delete x;
        for (int id = 1; id < 16; id++)   /* a turn handed over that no one took: the protocol is off by one */
            if (g_named[id].arrived) emu_die("a named barrier left with arrivals at the block's end", id);
    }
    free(smem);
}

