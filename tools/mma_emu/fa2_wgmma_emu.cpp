/* tools/mma_emu/fa2_wgmma_emu.cpp - phase 4's Hopper ladder (fa2_wgmma.cu) on the CPU (run.sh
 * wgmma, run.sh hopper): every thread block as its 128 or 384 host threads, wgmma.mma_async,
 * the copy engine (TMA), mbarriers and named barriers emulated (wgmma_emu.h), against an
 * fp64 forward (O, L) and the visit counts the CPU model expects (visited_blocks).
 *
 * Step 1 PASSed against the fp64 oracle on an H100 (docs/results/h100/phase4/), so where
 * this emulation agrees with the fp64 forward, its reading of the descriptors, the 128-byte
 * swizzle, K-major A and B, MN-major B and register A agrees with the hardware's on those
 * paths: step 1 is the emulation's anchor. Steps 2-6 add what the hardware schedules: the
 * ring's parities, the producer's and the consumers' sequences, the persistent grid's tile
 * counter and its Q_i hand-over. A wrong parity or count deadlocks on the GPU and stops the
 * emulation here (EMU_WAIT_S). What it cannot see: asynchrony (a wgmma or a copy completes
 * at its issue), races the barriers guard, the speed. Exit 1 on any FAIL. */
#include "prelude.h"
#include <cstdlib>
#include <vector>
#include <thread>
#include <random>
#include <cstdio>
#include <functional>
#include "mma.cuh"
#include "wgmma.cuh"
#include "hopper/steps.cuh"   /* phase 4's Hopper ladder, as the GPU build includes it */
#include "hopper_emu.h"

/* step s of the ladder (its row of hopper/steps.h) on one problem, launched as fa2_wgmma.cu's
 * launch() does: one CTA a tile, or (persistent) `ctas` CTAs on the tile counter */
template <int D, int STEP>
static int run_step(const Problem &x, int ctas = 3)
{
    using S = StepLaunch<D, STEP>;
    const attn_problem_t &p = x.p;
    constexpr int BR = S::BR, BC = S::BC;
    const int Tr = (p.N_q + BR - 1) / BR, Tc = (p.N_kv + BC - 1) / BC;
    std::vector<float> O(x.rO.size(), NAN), L(x.rL.size(), NAN);
    std::vector<unsigned long long> counts(Tr, 0);
    unsigned long long ctr = 1000;   /* the persistent grid's counter: not reset between launches */
    WgArgs a; memset(&a, 0, sizeof a);
    a.p = p; a.Q = x.Q.data(); a.K = x.K.data(); a.V = x.V.data(); a.O = O.data(); a.L = L.data();
    a.vis.counts = counts.data(); a.vis.visit_all = 0;
    a.tq = emu_tma_map_3d(a.Q, 2, D, p.N_q, (uint64_t)p.B * p.H, 64, WG_BR);    /* as launch(): boxes of 64 rows */
    a.tk = emu_tma_map_3d(a.K, 2, D, p.N_kv, (uint64_t)p.B * p.H_kv, 64, WG_BR);
    a.tv = emu_tma_map_3d(a.V, 2, D, p.N_kv, (uint64_t)p.B * p.H_kv, 64, WG_BR);
    a.to = emu_tma_map_3d(a.O, 4, D, p.N_q, (uint64_t)p.B * p.H, 32, 64);         /* step 10's store: 64 x 32 fp32 */
    a.tile_ctr = &ctr; a.tile_base = ctr;
    if constexpr (STEP == FA2_STEP_PERSIST) emu_launch(ctas, 1, S::THREADS, S::SMEM, [&] { S::kernel()(a); });
    else emu_launch(Tr, p.B * p.H, S::THREADS, S::SMEM, [&] { S::kernel()(a); });
    double num = 0, den = 0, ma = 0; size_t bad = 0, badL = 0, bad_visits = 0;
    for (size_t e = 0; e < O.size(); e++) {
        if (!std::isfinite(O[e])) { bad++; continue; }
        const double d = fabs(O[e] - x.rO[e]); ma = fmax(ma, d); num += d * d; den += x.rO[e] * x.rO[e];
    }
    for (size_t e = 0; e < x.rL.size(); e++)
        if (std::isinf(x.rL[e]) ? !(std::isinf(L[e]) && L[e] > 0) : !(fabs(L[e] - x.rL[e]) < 1e-3)) badL++;
    for (int i = 0; i < Tr; i++)   /* every head visits the model's count of Q block i */
        bad_visits += counts[i] != (unsigned long long)p.B * p.H * visited_blocks<true>(p, i * BR, BR, BC, Tc);
    const double rl = sqrt(num / (den > 0 ? den : 1));
    const bool ok = !bad && !badL && !bad_visits && rl < 3e-3;
    printf("  %-14s d=%d B=%d H=%d Hkv=%d Nq=%d Nkv=%d causal=%d: O rel L2 %.3g max abs %.3g non-finite %zu, "
           "L wrong %zu, visit counts wrong %zu: %s\n", STEP_NAME[STEP], D, p.B, p.H, p.H_kv, p.N_q, p.N_kv, (int)p.causal, rl, ma,
           bad, badL, bad_visits, ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}

/* the steps named (their numbers on the ladder: 1-6, 8-10) on one problem; d = 256: the steps
 * built for it (steps.h's D256 column) */
template <int D>
static int run(const std::vector<int> &steps, int B, int H, int Hkv, int Nq, int Nkv, bool causal)
{
    const Problem x = make_problem(D, B, H, Hkv, Nq, Nkv, causal);
    int f = 0;
    for (int s : steps) {
#define EMU_STEP(ID, NAME, STEP, D256, WHAT) \
        if (s == STEP && (D != 256 || D256)) f += run_step<D, FA2_STEP_##ID>(x);
        FA2_HOPPER_STEPS(EMU_STEP)
#undef EMU_STEP
    }
    return f;
}

/* fa2_wgmma_emu [step ...]: steps 1-6, 8-10 (default: 1, the anchor, alone) */
int main(int argc, char **argv)
{
    std::vector<int> steps;
    for (int k = 1; k < argc; k++) steps.push_back(atoi(argv[k]));
    if (steps.empty()) steps.push_back(1);
    int fails = 0;
    fails += run<64>(steps, 1, 4, 2, 150, 211, true);    /* GQA, tails, N_q < N_kv */
    fails += run<64>(steps, 1, 2, 1, 200, 90, true);     /* fully masked rows and Q blocks */
    fails += run<128>(steps, 1, 2, 2, 130, 130, false);  /* full, tails */
    fails += run<128>(steps, 2, 2, 1, 300, 333, true);   /* B = 2, GQA, causal with tails */
    fails += run<128>(steps, 1, 2, 1, 200, 1100, false); /* 9 K/V blocks: the ring wraps (3 slots at d = 128) */
    fails += run<64>(steps, 1, 1, 1, 600, 700, true);    /* the ring wraps at d = 64 too (4 slots) */
    fails += run<256>(steps, 1, 2, 1, 300, 333, true);   /* d = 256 (steps 3, 6: Bc = 64, 2 slots, the ring wraps), GQA, tails */
    printf("%d failed\n", fails);
    return fails != 0;
}
