/* tools/mma_emu/bwd_wgmma_emu.cpp - bwd_wgmma_kernel (phase5_backward/bwd_wgmma.cu) on the
 * CPU (run.sh wgmma): each row of BWD_WGMMA_TABLE on small problems, with both dQ paths
 * (float2 atomics: wgmma; a shared tile and bulk reductions: wgmma-dq), every thread block in
 * turn as THREADS host threads, wgmma.mma_async emulated from the PTX ISA's layouts
 * (wgmma_emu.h: descriptors, the 128-byte swizzle, register A fragments), cp.async as a
 * copy, against an fp64 backward (bwd_emu_check.h) and the visit counts. Exit 1 on any FAIL. */
#include "prelude.h"
#include <cstdlib>
#include "mma.cuh"
#include "wgmma.cuh"
/* phase 5's own headers as they are (EMU_MUTATE: gen.py's mutated copy of one of them hides
 * it): their dynamic shared memory the block's host buffer, their device functions plain
 * inline ones (the stand-ins' way) */
#define BWD_DYNAMIC_SMEM(name) unsigned char *name = g_smem
#undef __forceinline__
#define __forceinline__ inline
#include "bwd.h"          /* BWD_WGMMA_TABLE */
#include "bwd_wgmma_step1.cuh"
#include "bwd_wgmma_step2.cuh"
#include "bwd_emu_check.h"

template <int D, int BR, int BC, bool BULK>
int run(int B, int H, int Hkv, int Nq, int Nkv, bool causal, int visit_all_flag)
{
    using C = WgBwdCfg<D, BR, BC, BULK>;
    printf("  %s (dQ by %s)\n", BULK ? "wgmma-dq" : "wgmma", BULK ? "a shared tile and bulk reductions" : "float2 atomics");
    EmuBwd x = emu_bwd_problem(B, H, Hkv, Nq, Nkv, D, causal);
    const int Tc = (Nkv + BC - 1) / BC;
    std::vector<unsigned long long> counts(Tc, 0);
    gpu_visits_t vis; vis.counts = counts.data(); vis.visit_all = visit_all_flag;
    /* 1024-aligned, as the GPU's is after the kernel's own alignment: shared addresses are
     * offsets from it, so the swizzle sees the same address bits */
    const size_t bytes = (C::SMEM + 1023) / 1024 * 1024;
    unsigned char *smem = (unsigned char *)aligned_alloc(1024, bytes);
    g_smem_bytes = bytes;
    std::vector<unsigned char> unused;
    std::vector<std::barrier<> *> bars;
    emu_grid(Tc, B * Hkv, C::THREADS, unused, smem, bytes,
        [&] { for (int w = 0; w < C::WGS; w++) { bars.push_back(new std::barrier<>(128)); g_wgs[w].bar = bars.back(); } },
        [&] { for (auto *b : bars) delete b; bars.clear(); },
        [&](int) {
            bwd_wgmma_kernel<D, BR, BC, BULK>(x.p, x.Q.data(), x.K.data(), x.V.data(), x.dO.data(), x.L.data(),
                                        x.Dv.data(), x.dQ.data(), x.dK.data(), x.dV.data(), vis);
        });
    free(smem);
    return emu_bwd_verdict(x, counts, BR, BC, visit_all_flag);
}

/* bwd_last_kv_block (bwd_gpu.cuh; wgmma-det's turn order hangs on it) against
 * bwd_first_q_block: K/V block j visits Q block i exactly when j <= last(i), for every
 * i, j of many shapes, causal (N_q <, =, > N_kv, tails) and not. Returns the mismatches. */
static int check_last_kv_block(void)
{
    int bad = 0, pairs = 0;
    for (int c = 0; c <= 1; c++)
        for (int nq = 1; nq <= 300; nq += 13)
            for (int nkv = 1; nkv <= 300; nkv += 17) {
                attn_problem_t p;   /* the emulation links no library: the fields the two read */
                memset(&p, 0, sizeof p);
                p.B = p.H = p.H_kv = 1; p.N_q = nq; p.N_kv = nkv; p.d = 64; p.causal = c;
                const int Br = 64, Bc = 128, Tr = (nq + Br - 1) / Br, Tc = (nkv + Bc - 1) / Bc;
                for (int i = 0; i < Tr; i++)
                    for (int j = 0; j < Tc; j++) {
                        const bool visits = bwd_first_q_block(p, j, Br, Bc) <= i;
                        pairs++;
                        if (visits != (j <= bwd_last_kv_block(p, i, Br, Bc))) {
                            if (bad++ < 5) printf("  bwd_last_kv_block: N_q=%d N_kv=%d causal=%d i=%d j=%d: visits %d\n", nq, nkv, c, i, j, visits);
                        }
                    }
            }
    printf("  bwd_last_kv_block against bwd_first_q_block: %d (Q block, K/V block) pairs, %d wrong: %s\n", pairs, bad,
           bad ? "FAIL" : "PASS");
    return bad != 0;
}

int main(int argc, char **argv)
{
    int which = argc > 1 ? atoi(argv[1]) : 64, fails = check_last_kv_block(), ran = 0;
#define ROW(D_, BR_, BC_)                                                                              \
    if (which == D_) {                                                                                 \
        ran = 1;                                                                                       \
        fails += run<D_, BR_, BC_, false>(1, 4, 2, 150, 211, true, 0);   /* GQA 2:1, tails, N_q < N_kv */ \
        fails += run<D_, BR_, BC_, false>(1, 2, 1, 333, 100, true, 0);   /* N_q > N_kv: fully masked rows */ \
        fails += run<D_, BR_, BC_, false>(1, 1, 1, 200, 200, false, 0);  /* full, tails */                \
        fails += run<D_, BR_, BC_, false>(1, 2, 2, 130, 130, true, 1);   /* every Q block (visit_all) */  \
        fails += run<D_, BR_, BC_, true>(1, 4, 2, 150, 211, true, 0);    /* wgmma-dq: the same shapes */   \
        fails += run<D_, BR_, BC_, true>(1, 2, 1, 333, 100, true, 0);                                     \
        fails += run<D_, BR_, BC_, true>(1, 1, 1, 200, 200, false, 0);                                    \
    }
    BWD_WGMMA_TABLE(ROW)
    if (!ran) { printf("no row of BWD_WGMMA_TABLE for d = %d\n", which); return 1; }
    printf("%d failed\n", fails);
    return fails != 0;
}
