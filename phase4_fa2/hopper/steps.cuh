/* hopper/steps.cuh - every step's kernel (one file each), and the table's rows (steps.h)
 * turned into their launch facts: the kernel, its threads, Br, Bc and shared memory. The
 * launcher (fa2_wgmma.cu) and the CPU emulator (tools/mma_emu) both read them from here. */
#pragma once
#include "steps.h"
#include "step02_tma.cuh"
#include "step03m_mask.cuh"
#include "step04_pingpong.cuh"
#include "step05_overlap.cuh"
#include "step06_persist.cuh"
#include "step07_fp8.cuh"
#include "step09_fa3.cuh"
#include "step10_store.cuh"

/* A step's launch facts: its kernel, threads, Br, Bc and shared memory. */
template <int D, int STEP>
struct StepLaunch;
template <int D, class S>   /* the warp-specialised steps: ws_kernel.cuh's shell and the step S */
struct WsLaunch {
    static constexpr int THREADS = WS_THREADS, BR = WS_BR, BC = S::BC;
    static constexpr size_t SMEM = WsLayout<S::RING_D, S::BC>::SMEM;
    static constexpr auto kernel() { return fa2_ws_kernel<D, S>; }
};
template <int D>
struct StepLaunch<D, FA2_STEP_WGMMA> {
    static constexpr int THREADS = WG_THREADS, BR = WG_BR, BC = WG_BC;
    static constexpr size_t SMEM = WgLayout<D, 2>::SMEM;
    static constexpr auto kernel() { return fa2_wgmma_kernel<D>; }
};
template <int D>
struct StepLaunch<D, FA2_STEP_TMA> {
    static constexpr int THREADS = WG_THREADS, BR = WG_BR, BC = WG_BC;
    static constexpr size_t SMEM = TmaLayout<D>::SMEM;
    static constexpr auto kernel() { return fa2_wgmma_tma_kernel<D>; }
};
template <int D>
struct StepLaunch<D, FA2_STEP_PERSIST> {
    static constexpr int THREADS = WS_THREADS, BR = WS_BR, BC = FA2_WS_BC(D, false);
    static constexpr size_t SMEM = WsLayout<D, BC>::SMEM;
    static constexpr auto kernel() { return fa2_wgmma_persist_kernel<D>; }
};
template <int D> struct StepLaunch<D, FA2_STEP_WS> : WsLaunch<D, Step3<D>> {};
template <int D> struct StepLaunch<D, FA2_STEP_PINGPONG> : WsLaunch<D, Step4<D>> {};
template <int D> struct StepLaunch<D, FA2_STEP_OVERLAP> : WsLaunch<D, Step5<D>> {};
template <int D> struct StepLaunch<D, FA2_STEP_FA3ORDER> : WsLaunch<D, Step8<D>> {};
template <int D> struct StepLaunch<D, FA2_STEP_FA3> : WsLaunch<D, Step9<D>> {};
template <int D> struct StepLaunch<D, FA2_STEP_STORE> : WsLaunch<D, Step10<D>> {};

/* the table's D256 column: the steps built for d = 256 */
static constexpr bool built_for_d256(int step)
{
    switch (step) {
#define FA2_D256_CASE(ID, NAME, STEP, D256, WHAT) case FA2_STEP_##ID: return D256;
        FA2_HOPPER_STEPS(FA2_D256_CASE)
#undef FA2_D256_CASE
    }
    return false;
}
static const char *const STEP_NAME[] = {
#define FA2_NAME_ROW(ID, NAME, STEP, D256, WHAT) NAME,
    FA2_HOPPER_STEPS(FA2_NAME_ROW)
#undef FA2_NAME_ROW
};

