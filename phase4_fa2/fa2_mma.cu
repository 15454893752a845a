/* fa2_mma.cu - FlashAttention-2's forward on the tensor cores (common/mma.cuh).
 *
 *   mma   grid (num_m_blocks, B x H): a thread block per Q block, 4 warps, each warp owns
 *         its query rows for the whole K/V loop (split-Q). Blocks: FA2_MMA_TABLE in
 *         fa2_blocks.h; by default d = 32: 16 rows a warp (Br = 64), Bc = 128 keys, Q_i in
 *         registers, K/V double-buffered; d = 64 and 128: 32 rows a warp (Br = 128), Bc =
 *         128 and 64, Q_i read from shared memory, one K and one V buffer (V_j loaded
 *         under S = Q_i K_j^T, K_j+1 under P~ V_j); d = 256: 16 rows a warp, Bc = 64, the
 *         same. Loads with cp.async; S and P in registers, O~ unnormalised in registers and
 *         divided by l once; causal blocks past the diagonal skipped.
 *                                                   build/phase4 --kernel mma [--causal]
 *         The kernel and its steps are fa2_mma_kernel.cuh; this file checks the table's
 *         rows and launches them.
 *   The ablation ladder (build/phase4 prints it) runs the same source with compile-time
 *   switches (template parameters, fa2_variant_t in fa2.h), at the ladder's blocks
 *   (FA2_LADDER_BLOCKS: d = 64 Bc = 64, d = 128 Bc = 32, two K/V stages):
 *   perstep    O normalised at every step as in FA1 (2 multiplies per O element, a divide)
 *   deferred   + O~ unnormalised, one multiply per element per step, one divide at the end;
 *              causal: K/V blocks past the diagonal skipped, the mask on diagonal ones only
 *   grid-bh    deferred with the grid (B x H, num_m_blocks): the Q blocks of one head are
 *              no longer neighbours in launch order
 *   noskip     deferred without the skip
 *   mma        deferred at the table's blocks: the official FlashAttention-2's
 *
 * What FA1's kernel (phase3_fa1/fa1_mma.cu) did differently, and this one does not do:
 * its warps split the K/V block (split-K), so every step it wrote partial O, m, l to
 * shared memory and combined them behind two barriers; and O, l, m went to HBM and back
 * once per K/V block. Here a warp's rows are entirely its own: the row max and sum
 * need only the 4 lanes of a quad (two shuffles), and the only barrier per K/V block is
 * the one that hands the next K/V buffer over.
 *
 * Register fragments (mma.cuh): a thread holds rows g and g + 8 of its warp's 16 (g =
 * lane / 4), two adjacent columns 2t, 2t + 1 (t = lane % 4) of every 8-wide tile. Its
 * l is a partial sum over its own columns; the quad's 4 partials are added once at the end
 * (they were all rescaled by the same factors).
 */
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include "cuda_check.cuh"
#include "fa2.h"
#include "fa2_mma_kernel.cuh"   /* the kernel and its steps (the emulator runs the same header) */

/* What must hold for every row of FA2_MMA_TABLE (fa2_blocks.h). Shared memory: fa2-mma
 * promises every GPU of the build (sm_80 and up), so its layout must fit the smallest
 * opt-in limit, sm_86/89's 99 KiB; fa2_mma_config() still asks the device (FA_SMEM_LIMIT). */
#define FA2_ASSERT_ROW(D_, MT_, BC_, ST_, LADDER_)                                                  \
    static_assert((D_) % 16 == 0, "fa2-mma: d must be whole k16 slices (S = Q K^T)");           \
    static_assert((BC_) % 16 == 0 && (BC_) > 0,                                                \
                  "fa2-mma: Bc must be whole k16 slices of P V and pairs of n-tiles of S");     \
    static_assert((MT_) >= 1, "fa2-mma: MT >= 1 m-tile of 16 rows per warp");                   \
    static_assert((ST_) == 1 || (ST_) == 2, "fa2-mma: STAGES is 1 or 2 K/V buffers");                   \
    static_assert(Cfg<D_, BC_, MT_, ST_>::BR == 16 * FA2_WARPS_OF(D_) * (MT_), "fa2-mma: Br = 16 WARPS MT");    \
    static_assert(Cfg<D_, BC_, MT_, ST_>::SMEM + ((D_) <= FA2_MASK_MAX_D ? FA2_MASK_MAX_TC : 0) <= FA2_SMEM_CAP, \
                  "fa2-mma: shared memory (and a mask's class bytes) above sm_86/89's 99 KiB opt-in limit (fa2_blocks.h)");
FA2_MMA_TABLE(FA2_ASSERT_ROW)
#undef FA2_ASSERT_ROW

template <int D, int BC, int MT, int STAGES, bool DEFER, bool SKIP, bool MFIRST, bool MASKED = false>
static void launch(const attn_problem_t *p, const void *q, const void *k, const void *v, float *o, float *L)
{
    using C = Cfg<D, BC, MT, STAGES>;
    /* MASKED: one class byte a K/V block past the tiles (FA2_MASK_MAX_TC of them at most) */
    const size_t smem = C::SMEM + (MASKED ? FA2_MASK_MAX_TC : 0);
    static bool attr_set = false;   /* more than 48 KiB of shared memory needs an opt-in */
    if (!attr_set) {
        CUDA_CHECK(cudaFuncSetAttribute(fa2_mma_kernel<D, BC, MT, STAGES, DEFER, SKIP, MFIRST, MASKED>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        attr_set = true;
    }
    const int Tr = (p->N_q + C::BR - 1) / C::BR, BH = p->B * p->H;
    const dim3 grid = MFIRST ? dim3(Tr, BH) : dim3(BH, Tr);
    /* FlashMask: the vectors (an input, uploaded once) and this launch's preprocessing pass */
    const int32_t *blk = MASKED ? mask_gpu_blocks(mask_gpu_runs(attn_mask(p)), p->N_kv, BC) : NULL;
    const int32_t *cols = MASKED ? mask_gpu_columns(attn_mask(p)) : NULL;
    const int32_t *order = MASKED ? mask_gpu_order(blk, p->N_q, p->N_kv, C::BR, BC) : NULL;
    fa2_mma_kernel<D, BC, MT, STAGES, DEFER, SKIP, MFIRST, MASKED><<<grid, THREADS_OF(D), smem>>>(
        *p, (const __half *)q, (const __half *)k, (const __half *)v, o, L, gpu_visits(Tr), cols, blk, order);
    CUDA_CHECK_LAUNCH();
}

/* The ladder's blocks per d (FA2_LADDER_BLOCKS, fa2_blocks.h), for launch_variant(). */
template <int D> struct LadderBlocks { static constexpr int MT = 1, BC = 16, ST = 2; };   /* unused */
#define FA2_LADDER_SPEC(D_, MT_, BC_, ST_)                                         \
    template <> struct LadderBlocks<D_> { static constexpr int MT = MT_, BC = BC_, ST = ST_; }; \
    static_assert(Cfg<D_, BC_, MT_, ST_>::SMEM <= SMEM_OPTIN_SM86, "fa2-mma: ladder blocks above 99 KiB");
FA2_LADDER_BLOCKS(FA2_LADDER_SPEC)
#undef FA2_LADDER_SPEC

/* LADDER = 0 (fa2_blocks.h): only the full kernel is built; every variant runs it. With
 * LADDER = 1 every variant but FULL runs at the ladder's blocks (fa2_mma_variant_blocks). */
template <int D, int BC, int MT, int STAGES, int LADDER>
static void launch_variant(const attn_problem_t *p, fa2_variant_t var, const void *q, const void *k,
                           const void *v, float *o, float *L)
{
    using LB = LadderBlocks<D>;
    if (!LADDER) var = FA2_FULL;
    switch (var) {
    case FA2_PERSTEP:  if constexpr (LADDER != 0) launch<D, LB::BC, LB::MT, LB::ST, false, true, true>(p, q, k, v, o, L); break;
    case FA2_DEFERRED: if constexpr (LADDER != 0) launch<D, LB::BC, LB::MT, LB::ST, true, true, true>(p, q, k, v, o, L); break;
    case FA2_NOSKIP:   if constexpr (LADDER != 0) launch<D, LB::BC, LB::MT, LB::ST, true, false, true>(p, q, k, v, o, L); break;
    case FA2_GRID_BH:  if constexpr (LADDER != 0) launch<D, LB::BC, LB::MT, LB::ST, true, true, false>(p, q, k, v, o, L); break;
    case FA2_FULL:   /* the one variant with a mask path */
        if constexpr (D <= FA2_MASK_MAX_D)
            if (attn_mask(p)) { launch<D, BC, MT, STAGES, true, true, true, true>(p, q, k, v, o, L); break; }
        launch<D, BC, MT, STAGES, true, true, true>(p, q, k, v, o, L);   /* (d = 256 with a mask: the driver says n/a) */
        break;
    }
}

extern "C" int fa2_mma_config(int d, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = "mma";
    c->threads = THREADS_OF(d);
    switch (d) {   /* the rows of FA2_MMA_TABLE; fa2_mma_blocks() reads the same */
#define FA2_CONFIG_ROW(D_, MT_, BC_, ST_, LADDER_) \
    case D_: c->blocks = fa2_mma_blocks(D_); c->smem_bytes = Cfg<D_, BC_, MT_, ST_>::SMEM; break;
    FA2_MMA_TABLE(FA2_CONFIG_ROW)
#undef FA2_CONFIG_ROW
    default:
        snprintf(why, len, "kernel mma is built for d = 32, 64, 128 and 256 (fa2_blocks.h), not d = %d (use --kernel simple)", d);
        return -1;
    }
    return fa1_config_fits(c, why, len);
}

extern "C" void fa2_mma_launch(const attn_problem_t *p, fa2_variant_t var, const void *q,
                               const void *k, const void *v, float *o, float *L)
{
    switch (p->d) {   /* the blocks of fa2_mma_blocks() */
#define FA2_LAUNCH_ROW(D_, MT_, BC_, ST_, LADDER_) \
    case D_: launch_variant<D_, BC_, MT_, ST_, LADDER_>(p, var, q, k, v, o, L); break;
    FA2_MMA_TABLE(FA2_LAUNCH_ROW)
#undef FA2_LAUNCH_ROW
    default: break;   /* fa2_mma_config() said -1; the driver never gets here */
    }
}
