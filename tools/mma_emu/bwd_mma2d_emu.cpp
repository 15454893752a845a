/* tools/mma_emu/bwd_mma2d_emu.cpp - bwd_mma2d_kernel (phase5_backward/bwd_mma2d.cu) on the
 * CPU (run.sh): each row of BWD_MMA2D_TABLE on small problems, every thread block in turn as
 * THREADS host threads, against an fp64 backward (bwd_emu_check.h), and its visit counts
 * against the causal range. Exit 1 on any FAIL. */
#include "prelude.h"
#include "mma.cuh"
/* phase 5's own header as it is: its dynamic shared memory the block's host buffer, its
 * device functions plain inline ones (the stand-ins' way) */
#define BWD_DYNAMIC_SMEM(name) unsigned char *name = g_smem
#undef __forceinline__
#define __forceinline__ inline
#include "bwd.h"          /* BWD_MMA2D_TABLE */
#include "bwd_mma2d.cuh"
#include "bwd_emu_check.h"

template <int D, int BR, int BC, int SM, int KN, int QM>
int run(int B, int H, int Hkv, int Nq, int Nkv, bool causal, int visit_all_flag)
{
    using C = Cfg2d<D, BR, BC, SM, KN, QM>;
    EmuBwd x = emu_bwd_problem(B, H, Hkv, Nq, Nkv, D, causal);
    const int Tc = (Nkv + BC - 1) / BC;
    std::vector<unsigned long long> counts(Tc, 0);
    gpu_visits_t vis; vis.counts = counts.data(); vis.visit_all = visit_all_flag;
    std::vector<unsigned char> smem(C::SMEM + 64);
    std::vector<std::barrier<> *> wb;
    emu_grid(Tc, B * Hkv, C::THREADS, smem, smem.data(), smem.size(),
        [&] { for (int w = 0; w < C::WARPS; w++) { wb.push_back(new std::barrier<>(32)); g_warps[w].bar = wb.back(); } },
        [&] { for (auto *b : wb) delete b; wb.clear(); },
        [&](int) {
            bwd_mma2d_kernel<D, BR, BC, SM, KN, QM>(x.p, x.Q.data(), x.K.data(), x.V.data(), x.dO.data(), x.L.data(),
                                                    x.Dv.data(), x.dQ.data(), x.dK.data(), x.dV.data(), vis);
        });
    return emu_bwd_verdict(x, counts, BR, BC, visit_all_flag);
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
