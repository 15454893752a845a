/* tools/mma_emu/fa3_fp8_emu.cpp - phase 4's FP8 step (fa2_wgmma.cu, wgmma-fp8) on the CPU
 * (run.sh fp8): FP8 wgmma (m64n64k32 e4m3: K-major operands, the 8-bit register A
 * fragment), the copy engine and the barriers emulated (wgmma_emu.h), each block as its 384
 * host threads. Its inputs are the pre-pass's, made here by the CPU model's quantisation
 * (common/fp8.c: fp8_hadamard_rows, fp8_quantise, fp8_transpose_keys; the GPU pre-pass equals
 * it bit for bit, run.sh fp8q). Two checks a problem:
 *
 *   against the CPU model (phase4_fa2/fa3_fp8.c, block scales + Hadamard, Br = Bc = 128): the
 *     same algorithm on the same bytes, so O may differ only where a P rounds to the other
 *     side of an e4m3 step (exp2 against exp, the order of sums): rel L2 < 2e-3, far below
 *     the FP8 error itself;
 *   against the fp64 forward of the fp16 inputs: the FP8 error, held to the rule the driver
 *     uses for FP8 rows (fa2_check.c) and printed beside the model's own.
 *
 * It proves the layouts (V^T's key order against P's bytes, the scales' indexing and their
 * folding into S and O), not the speed. Exit 1 on any FAIL. */
#include "prelude.h"
#include <cstdlib>
#include <cstdio>
#include "mma.cuh"
#include "wgmma.cuh"
#include "fp8.h"
#include "fp8.c"
#include "fp16.c"
#include "rng.c"
#include "fa3_fp8.h"
/* the two of common/problem.c that the CPU model calls (problem.c itself brings the mask
 * registry and the thread pool, which the emulation does without) */
size_t attn_q_elems(const attn_problem_t *p) { return (size_t)p->B * p->H * p->N_q * p->d; }
size_t attn_kv_elems(const attn_problem_t *p) { return (size_t)p->B * p->H_kv * p->N_kv * p->d; }
#include "fa3_fp8.c"
/* the kernel's cvt.rn.satfinite.e4m3x2.f32, four at a time, x0 in the lowest byte */
uint32_t e4m3x4_pack(float x0, float x1, float x2, float x3)
{
    return (uint32_t)f32_to_e4m3(x0) | (uint32_t)f32_to_e4m3(x1) << 8 | (uint32_t)f32_to_e4m3(x2) << 16 |
           (uint32_t)f32_to_e4m3(x3) << 24;
}
#include "hopper/steps.cuh"   /* phase 4's Hopper ladder, as the GPU build includes it */
#include "hopper_emu.h"

/* one FP8 row's kernel (Fp8Row<D, PINGPONG, FMA_EX2>, step07_fp8.cuh) on one problem */
template <int D, bool PINGPONG, int FMA_EX2>
static int run(const char *name, int B, int H, int Hkv, int Nq, int Nkv, bool causal, bool outliers)
{
    const Problem x = make_problem(D, B, H, Hkv, Nq, Nkv, causal, outliers);
    const attn_problem_t &p = x.p;
    constexpr int BR = WS_BR, BC = FP8_BC;
    const int Tr = (Nq + BR - 1) / BR, Tc = (Nkv + BC - 1) / BC, pad = fp8_pad16(Nkv);
    const uint64_t seed = 7;
    /* the CPU model's inputs: the fp16 values as floats */
    attn_inputs_t in; memset(&in, 0, sizeof in);
    in.p = p;
    std::vector<float> qf(x.Q.size()), kf(x.K.size()), vf(x.V.size());
    for (size_t e = 0; e < qf.size(); e++) qf[e] = __half2float(x.Q[e]);
    for (size_t e = 0; e < kf.size(); e++) { kf[e] = __half2float(x.K[e]); vf[e] = __half2float(x.V[e]); }
    in.q = qf.data(); in.k = kf.data(); in.v = vf.data();
    std::vector<float> Om(x.rO.size(), NAN);
    if (fa3_fp8_cpu(&in, FA3_FP8_BLOCK_HADAMARD, BR, BC, seed, Om.data()) != 0) { printf("  the CPU model failed\n"); return 1; }
    /* the pre-pass, as the CPU model quantises: Q M, K M (incoherent processing), V; e4m3
     * with a scale a tile; V also transposed, keys in P's order */
    float sign[256];
    fp8_signs(seed, D, sign);
    std::vector<uint8_t> q8(qf.size()), k8(kf.size()), v8(vf.size()), v8t((size_t)B * Hkv * D * pad);
    std::vector<float> sq((size_t)B * H * Tr), sk((size_t)B * Hkv * Tc), sv((size_t)B * Hkv * Tc);
    auto quantise = [&](const float *src, int rows, int tile, bool had, uint8_t *dst, float *scale) {
        std::vector<float> t(src, src + (size_t)rows * D);
        if (had) fp8_hadamard_rows(t.data(), (size_t)rows, D, sign);
        fp8_quantise(t.data(), (size_t)rows, D, tile, 0, scale);
        for (size_t e = 0; e < t.size(); e++) dst[e] = f32_to_e4m3(t[e]);
    };
    for (int bh = 0; bh < B * H; bh++)
        quantise(qf.data() + (size_t)bh * Nq * D, Nq, BR, true, q8.data() + (size_t)bh * Nq * D, sq.data() + (size_t)bh * Tr);
    for (int bh = 0; bh < B * Hkv; bh++) {
        const size_t o = (size_t)bh * Nkv * D;
        quantise(kf.data() + o, Nkv, BC, true, k8.data() + o, sk.data() + (size_t)bh * Tc);
        quantise(vf.data() + o, Nkv, BC, false, v8.data() + o, sv.data() + (size_t)bh * Tc);
        fp8_transpose_keys(v8.data() + o, Nkv, D, v8t.data() + (size_t)bh * D * pad);
    }
    /* the kernel, on the launch fa2_wgmma.cu's launch_fp8 makes */
    std::vector<float> O(x.rO.size(), NAN), L(x.rL.size(), NAN);
    std::vector<unsigned long long> counts(Tr, 0);
    WgArgs a; memset(&a, 0, sizeof a);
    a.p = p; a.O = O.data(); a.L = L.data();
    a.vis.counts = counts.data(); a.vis.visit_all = 0;
    a.tq = emu_tma_map_3d(q8.data(), 1, D, Nq, (uint64_t)B * H, 128, 64);
    a.tk = emu_tma_map_3d(k8.data(), 1, D, Nkv, (uint64_t)B * Hkv, 128, 64);
    a.tv = emu_tma_map_3d(v8t.data(), 1, pad, D, (uint64_t)B * Hkv, 128, 64);
    a.sq = sq.data(); a.sk = sk.data(); a.sv = sv.data();
    emu_launch(Tr, B * H, WS_THREADS, WsLayout<D / 2, BC>::SMEM, [&] { fa2_ws_kernel<D, Fp8Row<D, PINGPONG, FMA_EX2>>(a); });
    /* against the model, against fp64 */
    double num = 0, den = 0, num64 = 0, num_m = 0, den64 = 0, ma = 0, maL = 0; size_t bad = 0, badL = 0, bad_visits = 0;
    for (size_t e = 0; e < O.size(); e++) {
        if (!std::isfinite(O[e])) { bad++; continue; }
        const double dm = O[e] - Om[e], d64 = O[e] - x.rO[e], m64 = Om[e] - x.rO[e];
        ma = fmax(ma, fabs(dm)); num += dm * dm; den += (double)Om[e] * Om[e];
        num64 += d64 * d64; num_m += m64 * m64; den64 += x.rO[e] * x.rO[e];
    }
    for (size_t e = 0; e < x.rL.size(); e++) {
        if (std::isinf(x.rL[e])) { badL += !(std::isinf(L[e]) && L[e] > 0); continue; }
        if (!std::isfinite(L[e])) { badL++; continue; }
        maL = fmax(maL, fabs(L[e] - x.rL[e]) / (1.0 + fabs(x.rL[e])));   /* fa2_fp8_l_ok's measure */
    }
    for (int i = 0; i < Tr; i++)
        bad_visits += counts[i] != (unsigned long long)B * H * visited_blocks<true>(p, i * BR, BR, BC, Tc);
    const double rl_model = sqrt(num / (den > 0 ? den : 1)), n = (double)O.size();
    const double rmse = sqrt(num64 / n), rmse_model = sqrt(num_m / n), rl64 = sqrt(num64 / (den64 > 0 ? den64 : 1));
    const bool ok = !bad && !badL && !bad_visits && rl_model < 2e-3 && fa2_fp8_o_ok(D, rmse) && maL <= FA2_FP8_L_TOL;
    printf("  %s d=%d B=%d H=%d Hkv=%d Nq=%d Nkv=%d causal=%d%s: O vs the CPU model rel L2 %.3g (max abs %.3g); "
           "vs fp64 RMSE %.3g (the model's %.3g), rel L2 %.3g; L's |error| / (1 + |L|) at most %.3g; non-finite %zu, L wrong %zu, "
           "visit counts wrong %zu: %s\n", name, D, B, H, Hkv, Nq, Nkv, (int)causal, outliers ? " outliers" : "", rl_model, ma,
           rmse, rmse_model, rl64, maL, bad, badL, bad_visits, ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}

/* every FP8 row with a kernel of its own (wgmma-fp8+q runs wgmma-fp8's) on three problems */
template <int D>
static int all_cases()
{
    int f = 0;
#define EMU_FP8_ROW(ID, NAME, PP, FMA, QUANT, WHAT)                                                                    \
    if (!QUANT) {                                                                                                      \
        f += run<D, PP != 0, FMA>(NAME, 1, 2, 1, 200, 333, true, false);   /* GQA, tails, N_q < N_kv causal */        \
        f += run<D, PP != 0, FMA>(NAME, 1, 2, 2, 300, 90, true, false);    /* N_q > N_kv: rows and a Q block with no key */ \
        f += run<D, PP != 0, FMA>(NAME, 1, 2, 1, 130, 700, false, true);   /* FA3's outliers; the ring wraps (6 K/V blocks) */ \
    }
    FA2_HOPPER_FP8_ROWS(EMU_FP8_ROW)
#undef EMU_FP8_ROW
    return f;
}

int main(int argc, char **argv)
{
    int fails = 0;
    for (int k = 1; k < argc || k == 1; k++) {
        const int d = argc > 1 ? atoi(argv[k]) : 128;
        if (d == 128) fails += all_cases<128>();
        else if (d == 256) fails += all_cases<256>();
        else { fprintf(stderr, "fa3_fp8_emu: d = %d is not built (wgmma-fp8: d = 128 and 256)\n", d); return 2; }
    }
    printf("%d failed\n", fails);
    return fails != 0;
}
