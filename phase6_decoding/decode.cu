/* decode.cu - Flash-Decoding on the GPU, the host side: the decode kernels' checks, their
 * configuration and occupancy, and the launches (decode.h says what and why; the CPU model
 * decode_cpu.c is the same algorithm in C). The device code is the headers of this folder:
 * dec_cfg.cuh lists them, one a shared part or a variant (decode.h's DEC_VARIANTS), and
 * dec_kernels.cuh names the kernels by their parts.
 *
 *   split, split-pack, fused, paged, ragged   dec_gpu_launch: the split kernel of the cache
 *                (contiguous or paged), then when S > 1 the combine kernel, or the combine in
 *                the split kernel (fused, a.done)
 *   fdpp         dec_gpu_launch_fdpp: the FD++ split kernel, its combine, its fallback
 *
 * An exercise build cuts the marked headers: a quoted #include looks beside the including
 * file first, so this file includes each of them itself, before the headers that use them
 * (their include guards keep the cut copy). */
#include "dec_bounds.cuh"
#include "dec_combine.cuh"
#include "dec_paged.cuh"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <type_traits>
#include "cuda_check.cuh"
#include "dec_kernels.cuh"
#include "fa2.h"

/* Shared memory: the layout must fit the smallest opt-in limit of the build's GPUs
 * (sm_86/89: 99 KiB), and the merge must fit in the K/V stages it reuses. */
#ifndef DEC_SMEM_CAP
#define DEC_SMEM_CAP SMEM_OPTIN_SM86
#endif
#define DEC_ASSERT_D(D_)                                                                        \
    static_assert(DCfg<D_>::SMEM <= DEC_SMEM_CAP, "decode: shared memory above DEC_SMEM_CAP (99 KiB)");        \
    static_assert(DCfg<D_>::MERGE <= DCfg<D_>::STAGES * DCfg<D_>::STAGE, "decode: merge > stages"); \
    static_assert((D_) % 32 == 0, "decode: d a multiple of 32 (the combine's lanes)");     \
    static_assert(sizeof(float) * DWARPS * DEC_MAX_SPLITS <= DCfg<D_>::STAGES * DCfg<D_>::STAGE, \
                  "decode: the fused combine's weights fit the K/V stages");                \
    static_assert((D_) > 128 || (DCfg<D_, 4>::SMEM <= DEC_SMEM_CAP &&                           \
                                 DCfg<D_, 4>::MERGE <= DCfg<D_, 4>::STAGES * DCfg<D_, 4>::STAGE), \
                  "decode: the 64-row block's layout");
DEC_GPU_DS(DEC_ASSERT_D)

/* f(std::integral_constant<int, D>{}) for d, a head dimension of DEC_GPU_DS (decode.h);
 * false when d is not one of them. */
template <class F> static bool with_d(int d, F &&f)
{
    switch (d) {
#define DEC_D_CASE(D_) case D_: f(std::integral_constant<int, D_>{}); return true;
    DEC_GPU_DS(DEC_D_CASE)
#undef DEC_D_CASE
    default: return false;
    }
}

/* One split kernel on `grid`, its shared memory opted into once (more than 48 KiB needs it). */
template <int D, int WR, class Kv, class Sm>
static void launch_wr(const DecArgs &a, dim3 grid)
{
    constexpr auto kernel = SplitKernel<D, WR, Kv, Sm>::fn;
    static bool attr_set = false;
    if (!attr_set) {
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)DCfg<D, WR>::SMEM));
        attr_set = true;
    }
    kernel<<<grid, DTHREADS, DCfg<D, WR>::SMEM>>>(a);
    CUDA_CHECK_LAUNCH();
}

/* The block's rows: 16 (WR = 1), or 64 (WR = 4) when a group has more than 16 query rows
 * and d <= 128 (at d = 256 the warp's O~ alone is 128 registers: no room for 64 keys of S);
 * decode.h's dec_gpu_block_rows says which, for the host's bytes, visits and splits too. */
template <int D, class Kv, class Sm>
static void launch_rows(const DecArgs &a, dim3 grid, int rows)
{
    if (rows == 4 * ROWS && wide_wr<D>() == 4) launch_wr<D, wide_wr<D>(), Kv, Sm>(a, grid);
    else launch_wr<D, 1, Kv, Sm>(a, grid);
}

extern "C" int dec_gpu_config(int d, gpu_kernel_config_t *c, char *why, size_t len)
{
    c->name = "split";
    c->threads = DTHREADS;
    c->blocks = fa2_mma_blocks(d);   /* the split ranges' Bc; Br: the model's Q block */
    if (!with_d(d, [&](auto dc) { c->smem_bytes = DCfg<decltype(dc)::value>::SMEM; })) {
        snprintf(why, len, "the decode kernels are built for d = 32, 64, 128 and 256, not d = %d", d);
        return -1;
    }
    return fa1_config_fits(c, why, len);
}

/* The blocks of one split kernel the whole GPU holds at once: the paged kernel needs more
 * registers (its page ids, a tile ahead) and may fit fewer per SM. */
template <int D, int WR, class Kv>
static int slots_wr(int sms)
{
    constexpr auto kernel = SplitKernel<D, WR, Kv, OnlineSm>::fn;
    int per_sm = 0;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)DCfg<D, WR>::SMEM));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, DTHREADS, DCfg<D, WR>::SMEM));
    return sms * (per_sm > 0 ? per_sm : 1);
}

template <int D, class Kv>
static int slots_of(int sms, int rows)
{
    if (rows == 4 * ROWS && wide_wr<D>() == 4) return slots_wr<D, wide_wr<D>(), Kv>(sms);
    return slots_wr<D, 1, Kv>(sms);
}

extern "C" int dec_gpu_sms(void) { return gpu_sm_count(); }

extern "C" int dec_gpu_slots(int d, bool paged, int rows)
{
    const int sms = gpu_sm_count();
    int n = 0;
    auto slots = [&](auto dc) {
        constexpr int D = decltype(dc)::value;
        n = paged ? slots_of<D, PagedKv>(sms, rows) : slots_of<D, ContigKv>(sms, rows);
    };
    if (!with_d(d, slots)) slots(std::integral_constant<int, 128>{});
    return n;
}

/* The arguments of one launch of S splits (phi: FD++'s, 0 for the others). */
static DecArgs dec_args(const attn_problem_t *p, const dec_gpu_args_t *g, bool pack, int S, float phi)
{
    DecArgs a;
    memset(&a, 0, sizeof a);
    a.p = *p;
    a.Q = (const __half *)g->q;
    a.K = (const __half *)g->k;
    a.V = (const __half *)g->v;
    a.seqlens = g->seqlens;
    a.table = g->table;
    a.page = g->page;
    a.pps = g->pages_per_seq;
    a.O = g->o;   /* S = 1 (FD++: the fallback's rows) */
    a.L = g->L;
    const size_t nrows = (size_t)p->B * p->H * p->N_q;
    a.Opart = g->ws;
    a.Lpart = g->ws + (size_t)S * nrows * p->d;
    a.S = S;
    a.Bc = fa2_mma_blocks(p->d).Bc;
    a.pack = pack;
    a.phi = phi;
    a.vis = gpu_visits(S);
    return a;
}

/* The grid of a launch: (S, row tiles, B x groups), a group a head or with packing a KV head. */
static dim3 dec_grid(const attn_problem_t *p, bool pack, int S)
{
    const int G = pack ? p->H / p->H_kv : 1, groups = pack ? p->H_kv : p->H, rows = dec_gpu_block_rows(p, pack);
    return dim3(S, (G * p->N_q + rows - 1) / rows, p->B * groups);
}

extern "C" void dec_gpu_launch(const attn_problem_t *p, const dec_gpu_args_t *g, bool pack, int S)
{
    if (g->page > 0 && (g->page & (g->page - 1)) != 0) {   /* the driver's pages are 16..256 */
        fprintf(stderr, "dec_gpu_launch: page size %d is not a power of two\n", g->page);
        exit(2);
    }
    DecArgs a = dec_args(p, g, pack, S, 0.0f);
    const int G = pack ? p->H / p->H_kv : 1, rows = dec_gpu_block_rows(p, pack);
    /* the fused combine (S = 1 writes the output itself) when a row tile holds at most
     * DEC_FUSED_MAX_ROWS rows; past that the merge, one block's 4 warps after every split,
     * costs more than the second launch it saves (decode.h) */
    a.done = S > 1 && (G * p->N_q < rows ? G * p->N_q : rows) <= DEC_FUSED_MAX_ROWS ? g->done : NULL;
    const dim3 grid = dec_grid(p, pack, S);
    const bool paged = g->page > 0;
    const bool built = with_d(p->d, [&](auto dc) {
        constexpr int D = decltype(dc)::value;
        paged ? launch_rows<D, PagedKv, OnlineSm>(a, grid, rows) : launch_rows<D, ContigKv, OnlineSm>(a, grid, rows);
    });
    if (!built) return;   /* dec_gpu_config() said -1; the driver never gets here */
    const int nrows = p->B * p->H * p->N_q;
    if (S > 1 && !a.done) dec_gpu_combine(p->d, S, nrows, a.Opart, a.Lpart, g->o, g->L);   /* S <= DEC_MAX_SPLITS: FA_SPLITS up to 1024 */
}

/* FD++: the split kernel with the unified max (partials even for S = 1), the FD++ combine,
 * and the fallback for the rows it flags. The flags live in a buffer of this file, grown on
 * the first (untimed, checked) launch of a shape. */
static uint8_t *fdpp_redo;
static size_t fdpp_redo_cap;

template <int D, class Kv>
static void launch_fdpp(const DecArgs &a, dim3 grid, int rows, int nrows, const dec_gpu_args_t *g)
{
    launch_rows<D, Kv, FdppSm>(a, grid, rows);
    dec_fdpp_combine_kernel<D><<<(nrows + DWARPS - 1) / DWARPS, DTHREADS>>>(a.p, a.seqlens, a.S, nrows, a.phi, a.Opart,
                                                                          a.Lpart, g->o, g->L, fdpp_redo);
    CUDA_CHECK_LAUNCH();
    dec_recompute_kernel<D, Kv><<<nrows, DTHREADS>>>(a, fdpp_redo);
    CUDA_CHECK_LAUNCH();
}

extern "C" void dec_gpu_launch_fdpp(const attn_problem_t *p, const dec_gpu_args_t *g, int S, float phi)
{
    const size_t nrows = (size_t)p->B * p->H * p->N_q;
    if (nrows > fdpp_redo_cap) {
        if (fdpp_redo) CUDA_CHECK(cudaFree(fdpp_redo));
        CUDA_CHECK(cudaMalloc((void **)&fdpp_redo, nrows));
        fdpp_redo_cap = nrows;
    }
    const DecArgs a = dec_args(p, g, true, S, phi);
    const int rows = dec_gpu_block_rows(p, true), n = (int)nrows;
    const dim3 grid = dec_grid(p, true, S);
    const bool paged = g->page > 0;
    with_d(p->d, [&](auto dc) {   /* not built: dec_gpu_config() said -1 */
        constexpr int D = decltype(dc)::value;
        paged ? launch_fdpp<D, PagedKv>(a, grid, rows, n, g) : launch_fdpp<D, ContigKv>(a, grid, rows, n, g);
    });
}

extern "C" long dec_gpu_fdpp_recomputed(uint8_t *flags, size_t nrows)
{
    int n = 0;
    const int zero = 0;
    CUDA_CHECK(cudaMemcpyFromSymbol(&n, dec_fdpp_redo_d, sizeof n));
    CUDA_CHECK(cudaMemcpyToSymbol(dec_fdpp_redo_d, &zero, sizeof zero));
    if (flags) {
        if (fdpp_redo && nrows <= fdpp_redo_cap) CUDA_CHECK(cudaMemcpy(flags, fdpp_redo, nrows, cudaMemcpyDeviceToHost));
        else memset(flags, 0, nrows);
    }
    return n;
}

extern "C" void dec_gpu_combine(int d, int S, int nrows, const float *Opart, const float *Lpart, float *O, float *L)
{
    const int blocks = (nrows + DWARPS - 1) / DWARPS;
    auto combine = [&](auto dc) {
        dec_combine_kernel<decltype(dc)::value><<<blocks, DTHREADS>>>(S, nrows, Opart, Lpart, O, L);
    };
    if (!with_d(d, combine)) combine(std::integral_constant<int, 128>{});
    CUDA_CHECK_LAUNCH();
}

extern "C" int dec_gpu_page_faults(void)
{
    int n = 0;
#ifdef EX_BUILD
    const int zero = 0;
    CUDA_CHECK(cudaMemcpyFromSymbol(&n, dec_page_faults_d, sizeof n));
    CUDA_CHECK(cudaMemcpyToSymbol(dec_page_faults_d, &zero, sizeof zero));
#endif
    return n;
}

/* A cache of random fp16 values made on the device (the sweep's inputs at sizes the host
 * would take minutes to draw): a hash of (seed, index) to a uniform value in [-2, 2). */
__global__ void dec_fill_kernel(__half *x, size_t n, unsigned long long seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned long long z = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        x[i] = __float2half((float)(z >> 40) * (4.0f / 16777216.0f) - 2.0f);
    }
}

extern "C" void dec_gpu_fill(void *x, size_t n, unsigned long long seed)
{
    dec_fill_kernel<<<1024, 256>>>((__half *)x, n, seed);
    CUDA_CHECK_LAUNCH();
}

/* One thread per 16-byte chunk of a key row: row j of (b, g) to row j % page of pool page
 * table[b pps + j / page]. */
__global__ void dec_paginate_kernel(attn_problem_t p, const uint4 *k, const uint4 *v, const int *table, int page,
                                    int pps, uint4 *kp, uint4 *vp)
{
    const int CH = p.d / 8;
    const size_t total = (size_t)p.B * p.H_kv * p.N_kv * CH;
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
        const size_t row = e / CH;
        const int c = (int)(e % CH), j = (int)(row % p.N_kv);
        const int bg = (int)(row / p.N_kv), b = bg / p.H_kv, g = bg % p.H_kv;
        const int pid = table[(size_t)b * pps + j / page];
        const size_t to = (((size_t)pid * p.H_kv + g) * page + j % page) * CH + c;
        kp[to] = k[e];
        vp[to] = v[e];
    }
}

extern "C" void dec_gpu_paginate(const attn_problem_t *p, const void *k, const void *v, const int *table, int page,
                                 int pps, void *kpool, void *vpool)
{
    dec_paginate_kernel<<<2048, 256>>>(*p, (const uint4 *)k, (const uint4 *)v, table, page, pps, (uint4 *)kpool, (uint4 *)vpool);
    CUDA_CHECK_LAUNCH();
}
