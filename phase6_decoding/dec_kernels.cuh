/* dec_kernels.cuh - the split kernels by their compile-time parts: SplitKernel<D, WR, Kv,
 * Sm>::fn is the variant's kernel for the head dimension D and WR m-tiles a block
 * (dec_cfg.cuh). decode.cu launches them; the emulator (tools/mma_emu/dec_emu.cpp) runs
 * them on the CPU.
 *
 *   Kv        Sm        kernel             variants (decode.h's DEC_VARIANTS)
 *   ContigKv  OnlineSm  dec_split_kernel   split, split-pack, fused, ragged
 *   PagedKv   OnlineSm  dec_paged_kernel   paged, ragged-p16
 *   either    FdppSm    dec_fdpp_kernel    fdpp */
#ifndef PHASE6_DEC_KERNELS_CUH
#define PHASE6_DEC_KERNELS_CUH
#include "dec_split.cuh"
#include "dec_paged.cuh"
#include "dec_fdpp.cuh"
#include "dec_fdpp_combine.cuh"

template <int D, int WR, class Kv, class Sm> struct SplitKernel;
template <int D, int WR> struct SplitKernel<D, WR, ContigKv, OnlineSm> { static constexpr auto fn = dec_split_kernel<D, WR>; };
template <int D, int WR> struct SplitKernel<D, WR, PagedKv, OnlineSm> { static constexpr auto fn = dec_paged_kernel<D, WR>; };
template <int D, int WR, class Kv> struct SplitKernel<D, WR, Kv, FdppSm> { static constexpr auto fn = dec_fdpp_kernel<D, Kv, WR>; };

/* The block of WR = 4 m-tiles (64 rows) exists for d <= 128 (decode.h's dec_gpu_block_rows):
 * WR for a block of `rows` rows. */
template <int D> constexpr int wide_wr(void) { return D <= 128 ? 4 : 1; }

#endif
