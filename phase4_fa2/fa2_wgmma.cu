/* fa2_wgmma.cu - the Hopper forward ladder's host side: FlashAttention-2's forward (chapter 4)
 * rebuilt step by step on Hopper's warpgroup MMA, the copy engine and warp specialisation,
 * toward FlashAttention-3 (chapter 4b). The kernels are in hopper/, over shared parts (its
 * fwd_base.cuh lists them), one file a step holding only what the step adds:
 *
 *   1  wgmma          hopper/step01_wgmma.cuh     build/phase4 --kernel wgmma (every step)
 *   2  wgmma-tma      hopper/step02_tma.cuh       build/phase4 --kernel wgmma-tma
 *   3  wgmma-ws       hopper/step03_ws.cuh        build/phase4 --kernel wgmma-ws
 *   3m (with a mask)  hopper/step03m_mask.cuh     build/phase4 --kernel wgmma-ws --mask sliding:1024
 *   4  wgmma-pingpong hopper/step04_pingpong.cuh  build/phase4 --kernel wgmma-pingpong
 *   5  wgmma-overlap  hopper/step05_overlap.cuh   build/phase4 --kernel wgmma-overlap
 *   6  wgmma-persist  hopper/step06_persist.cuh   build/phase4 --kernel wgmma-persist
 *   7  wgmma-fp8      hopper/step07_fp8.cuh       build/phase4 --kernel wgmma-fp8 (its rows: steps.h)
 *   8  wgmma-fa3order hopper/step08_fa3order.cuh  build/phase4 --kernel wgmma-fa3order
 *   9  wgmma-fa3      hopper/step09_fa3.cuh       build/phase4 --kernel wgmma-fa3
 *   10 wgmma-store    hopper/step10_store.cuh     build/phase4 --kernel wgmma-store
 *
 * The table hopper/steps.h names them once; here each row becomes its kernel, its launch
 * and its config (threads, blocks, shared memory). Built for sm_90a alone: config says
 * "skipped" with the reason on any other GPU. */
#include <string.h>
#include <stdio.h>
#include "cuda_check.cuh"
#include "tma_map.cuh"   /* the tensor maps (host) */
#include "fp8.h"         /* fp8_pad16: V^T's row length (step 7) */
#include "fp8_quant.h"   /* the pre-pass's tensors (step 7) */
#include "hopper/steps.cuh"   /* every step's kernel and launch facts */

/* More than 48 KiB of shared memory a block needs an opt-in, once per kernel. */
template <typename Kernel>
static void smem_opt_in(Kernel kernel, size_t smem, bool &done)
{
    if (!done) {
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        done = true;
    }
}

/* step 3's mask path: the vectors (uploaded once) and this launch's preprocessing pass */
template <int D>
static void launch_masked(WgArgs &a, const attn_problem_t *p, dim3 grid)
{
    constexpr int BC = FA2_WS_BC(D, false);
    constexpr size_t smem = WsLayout<D, BC>::SMEM_MASKED;
    static_assert(smem <= SMEM_OPTIN_SM90, "wgmma-ws: FA2_WS_MASK_MAX_TC class bytes do not fit beside the ring");
    static bool attr_set = false;
    if ((p->N_kv + BC - 1) / BC > FA2_WS_MASK_MAX_TC) {   /* the driver says n/a before this */
        fprintf(stderr, "fa2-wgmma-ws: a mask over more than FA2_WS_MASK_MAX_TC K/V blocks\n");
        exit(2);
    }
    smem_opt_in(fa2_wgmma_ws_mask_kernel<D>, smem, attr_set);
    a.mblk = mask_gpu_blocks(mask_gpu_runs(attn_mask(p)), p->N_kv, BC);
    a.mcols = reinterpret_cast<const int4 *>(mask_gpu_columns(attn_mask(p)));
    a.morder = mask_gpu_order(a.mblk, p->N_q, p->N_kv, WS_BR, BC);
    fa2_wgmma_ws_mask_kernel<D><<<grid, WS_THREADS, smem>>>(a);
    CUDA_CHECK_LAUNCH();
}

/* step 6: one CTA a SM (the ring takes a SM's shared memory), none idle */
template <typename Kernel>
static void launch_persistent(Kernel kernel, WgArgs &a, dim3 grid, int threads, size_t smem)
{
    static const int sms = gpu_sm_count();
    static unsigned long long *ctr = NULL, base = 0;   /* the tile counter, never reset */
    if (!ctr) {
        ctr = (unsigned long long *)gpu_malloc(sizeof *ctr);
        gpu_zero(ctr, sizeof *ctr);
    }
    const int tiles = (int)(grid.x * grid.y), ctas = tiles < sms ? tiles : sms;
    a.tile_ctr = ctr;
    a.tile_base = base;
    base += (unsigned long long)tiles + ctas;   /* this launch's grabs: every tile, and each CTA's last */
    kernel<<<ctas, threads, smem>>>(a);
}

template <int D, int STEP>
static void launch(const attn_problem_t *p, const void *q, const void *k, const void *v, float *o, float *L)
{
    if constexpr (D == 256 && !built_for_d256(STEP)) {
        return;   /* config says n/a: never called */
    } else {
        using S = StepLaunch<D, STEP>;
        static bool attr_set = false;
        /* the tensor maps are encoded once per set of buffers and shapes, not in the timed loop */
        static WgArgs a;
        static bool have = false;
        if (!have || memcmp(&a.p, p, sizeof *p) != 0 || a.Q != q || a.K != k || a.V != v || a.O != o || a.L != L) {
            memset(&a, 0, sizeof a);
            a.p = *p;
            a.Q = (const __half *)q; a.K = (const __half *)k; a.V = (const __half *)v; a.O = o; a.L = L;
            if (STEP != FA2_STEP_WGMMA) {
                a.tq = tma_map_3d_f16(q, D, p->N_q, p->B * p->H, WG_BR, "fa2-wgmma");
                a.tk = tma_map_3d_f16(k, D, p->N_kv, p->B * p->H_kv, WG_BR, "fa2-wgmma");
                a.tv = tma_map_3d_f16(v, D, p->N_kv, p->B * p->H_kv, WG_BR, "fa2-wgmma");
            }
            if (STEP == FA2_STEP_STORE)   /* O [heads][N_q][d] fp32, stored in boxes of 64 rows x 32 columns */
                a.to = tma_map_3d(o, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, D, p->N_q, p->B * p->H, 64, "fa2-wgmma");
            have = true;
        }
        const dim3 grid((p->N_q + S::BR - 1) / S::BR, p->B * p->H);
        a.vis = gpu_visits(grid.x);   /* every launch: the buffer may have grown */
        if constexpr (STEP == FA2_STEP_WS) {
            if (attn_mask(p)) {
                if constexpr (D > FA2_WS_MASK_MAX_D) {   /* the driver says n/a before this */
                    fprintf(stderr, "fa2-wgmma-ws: no mask path at d = %d\n", D);
                    exit(2);
                } else {
                    launch_masked<D>(a, p, grid);
                    return;
                }
            }
        }
        smem_opt_in(S::kernel(), S::SMEM, attr_set);
        if constexpr (STEP == FA2_STEP_PERSIST) launch_persistent(S::kernel(), a, grid, S::THREADS, S::SMEM);
        else S::kernel()<<<grid, S::THREADS, S::SMEM>>>(a);
        CUDA_CHECK_LAUNCH();
    }
}

/* one case a row of the table, for head dimension D */
template <int D>
static void launch_step(fa2_hopper_step_t step, const attn_problem_t *p, const void *q, const void *k, const void *v,
                        float *o, float *L)
{
    switch (step) {
#define FA2_LAUNCH_CASE(ID, NAME, STEP, D256, WHAT) case FA2_STEP_##ID: launch<D, FA2_STEP_##ID>(p, q, k, v, o, L); break;
        FA2_HOPPER_STEPS(FA2_LAUNCH_CASE)
#undef FA2_LAUNCH_CASE
    default: break;
    }
}

template <int D, int STEP>
static void step_facts(gpu_kernel_config_t *c)
{
    if constexpr (!(D == 256 && !built_for_d256(STEP))) {
        using S = StepLaunch<D, STEP>;
        c->threads = S::THREADS;
        c->blocks.Br = S::BR;
        c->blocks.Bc = S::BC;
        c->smem_bytes = S::SMEM;
    }
}
template <int D>
static void step_facts(fa2_hopper_step_t step, gpu_kernel_config_t *c)
{
    switch (step) {
#define FA2_FACTS_CASE(ID, NAME, STEP, D256, WHAT) case FA2_STEP_##ID: step_facts<D, FA2_STEP_##ID>(c); break;
        FA2_HOPPER_STEPS(FA2_FACTS_CASE)
#undef FA2_FACTS_CASE
    default: break;
    }
}

extern "C" int fa2_hopper_config(fa2_hopper_step_t step, int d, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = STEP_NAME[step];
    if (d == 64) step_facts<64>(step, c);
    else if (d == 128) step_facts<128>(step, c);
    else if (d == 256 && built_for_d256(step)) step_facts<256>(step, c);
    else {
        snprintf(why, len, "kernel %s is built for d = 64 and 128%s, not d = %d", c->name,
                 built_for_d256(step) ? " and 256" : " (wgmma-ws and wgmma-persist also for 256)", d);
        return -1;
    }
    return gpu_config_fits(c, 1, why, len);   /* built for sm_90a alone */
}

extern "C" void fa2_hopper_launch(fa2_hopper_step_t step, const attn_problem_t *p, const void *q, const void *k,
                                  const void *v, float *o, float *L)
{
    if (p->d == 64) launch_step<64>(step, p, q, k, v, o, L);
    else if (p->d == 128) launch_step<128>(step, p, q, k, v, o, L);
    else if (p->d == 256) launch_step<256>(step, p, q, k, v, o, L);
}

/* ---- step 7 (FP8): its own inputs, the pre-pass's e4m3 tensors and scales ---- */
template <int D, bool PINGPONG, int FMA_EX2>
static void launch_fp8(const attn_problem_t *p, const fp8_tensors_t *t, float *o, float *L)
{
    constexpr auto kernel = fa2_ws_kernel<D, Fp8Row<D, PINGPONG, FMA_EX2>>;
    constexpr size_t smem = WsLayout<D / 2, FP8_BC>::SMEM;
    static bool attr_set = false;
    smem_opt_in(kernel, smem, attr_set);
    static WgArgs a;
    static const uint8_t *q8 = NULL, *k8 = NULL, *v8t = NULL;
    if (memcmp(&a.p, p, sizeof *p) != 0 || q8 != t->q8 || k8 != t->k8 || v8t != t->v8t) {   /* encoded once a set */
        memset(&a, 0, sizeof a);
        a.p = *p;
        q8 = t->q8; k8 = t->k8; v8t = t->v8t;
        a.tq = tma_map_3d_u8(q8, D, p->N_q, p->B * p->H, 64, "fa2-wgmma-fp8");
        a.tk = tma_map_3d_u8(k8, D, p->N_kv, p->B * p->H_kv, 64, "fa2-wgmma-fp8");
        a.tv = tma_map_3d_u8(v8t, fp8_pad16(p->N_kv), D, p->B * p->H_kv, 64, "fa2-wgmma-fp8");   /* [d][N_kv_pad] */
    }
    a.O = o; a.L = L;
    a.sq = t->sq; a.sk = t->sk; a.sv = t->sv;
    const dim3 grid((p->N_q + WS_BR - 1) / WS_BR, p->B * p->H);
    a.vis = gpu_visits(grid.x);
    kernel<<<grid, WS_THREADS, smem>>>(a);
    CUDA_CHECK_LAUNCH();
}

template <int D>
static void launch_fp8_row(fa2_hopper_fp8_row_t row, const attn_problem_t *p, const fp8_tensors_t *t, float *o, float *L)
{
    switch (row) {
#define FA2_FP8_CASE(ID, NAME, PP, FMA, QUANT, WHAT) case FA2_ROW_##ID: launch_fp8<D, PP != 0, FMA>(p, t, o, L); break;
        FA2_HOPPER_FP8_ROWS(FA2_FP8_CASE)
#undef FA2_FP8_CASE
    default: break;
    }
}

extern "C" int fa2_hopper_fp8_config(fa2_hopper_fp8_row_t row, int d, gpu_kernel_config_t *c, char *why, size_t len)
{
    static const char *const NAME[] = {
#define FA2_FP8_NAME(ID, NAME, PP, FMA, QUANT, WHAT) NAME,
        FA2_HOPPER_FP8_ROWS(FA2_FP8_NAME)
#undef FA2_FP8_NAME
    };
    c->name = NAME[row];
    c->threads = WS_THREADS;
    c->blocks.Br = WS_BR;
    c->blocks.Bc = FP8_BC;
    if (d == 128) c->smem_bytes = WsLayout<64, FP8_BC>::SMEM;
    else if (d == 256) c->smem_bytes = WsLayout<128, FP8_BC>::SMEM;
    else {
        snprintf(why, len, "kernel %s is built for d = 128 and 256 (a row of 128 bytes or two), not d = %d", c->name, d);
        return -1;
    }
    return gpu_config_fits(c, 1, why, len);   /* built for sm_90a alone */
}

/* A driver row's FP8 forward from the fp16 inputs: with quantise, the pre-pass first (Br =
 * Bc = 128, incoherent processing with FA2_FP8_SEED's signs, V^T written) into buffers kept
 * here for the next launch, then the row's kernel on them. */
extern "C" int fa2_hopper_fp8_row_launch(fa2_hopper_fp8_row_t row, const attn_problem_t *p, const void *q, const void *k,
                                         const void *v, float *o, float *L, bool quantise)
{
    static fp8_tensors_t t;
    static size_t have[7];   /* bytes held: q8, k8, v8, v8t, sq, sk, sv */
    static float *sign = NULL;
    static int sign_d = 0;
    const size_t nq = (size_t)p->B * p->H * p->N_q * p->d, nkv = (size_t)p->B * p->H_kv * p->N_kv * p->d;
    const size_t nvt = (size_t)p->B * p->H_kv * p->d * fp8_pad16(p->N_kv);
    const size_t nsq = (size_t)p->B * p->H * fp8_tiles(p->N_q, WS_BR), nskv = (size_t)p->B * p->H_kv * fp8_tiles(p->N_kv, FP8_BC);
    auto grow = [](void *&buf, size_t &held, size_t need) {   /* a buffer of at least need bytes */
        if (held >= need) return;
        if (buf) gpu_free(buf);
        buf = gpu_malloc(need);
        held = need;
    };
    if (quantise) {
        grow((void *&)t.q8, have[0], nq);
        grow((void *&)t.k8, have[1], nkv);
        grow((void *&)t.v8, have[2], nkv);
        grow((void *&)t.v8t, have[3], nvt);
        grow((void *&)t.sq, have[4], nsq * sizeof(float));
        grow((void *&)t.sk, have[5], nskv * sizeof(float));
        grow((void *&)t.sv, have[6], nskv * sizeof(float));
        if (sign_d != p->d) {
            float hs[256];
            fp8_signs(FA2_FP8_SEED, p->d, hs);
            if (sign) gpu_free(sign);
            sign = (float *)gpu_malloc(sizeof(float) * p->d);
            gpu_upload(sign, hs, sizeof(float) * p->d);
            sign_d = p->d;
        }
        if (fp8_quant_gpu(p, q, k, v, WS_BR, FP8_BC, true, sign, &t) != 0) return -1;
    }
    if (p->d == 128) launch_fp8_row<128>(row, p, &t, o, L);
    else if (p->d == 256) launch_fp8_row<256>(row, p, &t, o, L);
    return 0;
}
