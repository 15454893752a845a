/* tools/mma_emu/prelude.h - CUDA's keywords and built-ins as plain C++ for the host emulation
 * (run.sh): a thread block is THREADS std::threads; __syncthreads a barrier; atomics a mutex. */
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <barrier>
#include <cuda_fp16.h>
#undef __global__
#define __global__
#define __launch_bounds__(...)
#define __grid_constant__
#define FA_EMU 1   /* phase4_fa2/hopper: a block's dynamic shared memory is g_smem */
struct emu_dim3 { unsigned x, y, z; };
inline thread_local emu_dim3 threadIdx, blockIdx, gridDim, blockDim;   /* C++17 inline variables: one definition for every program */
/* a read through the read-only cache: a plain read here */
template <class T> inline T __ldg(const T *p) { return *p; }
/* Warp shuffles are not emulated (a warp's lanes are threads that meet only at barriers):
 * declared so that the kernels beside the emulated ones compile, and fatal if one is run. */
template <class T> inline T __shfl_sync(unsigned, T, int)
{
    fprintf(stderr, "mma_emu: __shfl_sync is not emulated (a kernel outside the emulation ran)\n");
    abort();
}
inline unsigned char *g_smem;
/* a shared-memory address: the offset in the block's buffer (mma.cuh's smem_u32 on the GPU) */
inline uint32_t smem_u32(const void *p) { return (uint32_t)((const unsigned char *)p - g_smem); }
inline std::barrier<> *g_block_bar;
inline void __syncthreads() { g_block_bar->arrive_and_wait(); }
inline std::mutex g_atomic_mu;
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }   /* blocks run one after another here */
inline float atomicAdd(float *p, float v) { std::lock_guard<std::mutex> l(g_atomic_mu); float o = *p; *p += v; return o; }
inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) { std::lock_guard<std::mutex> l(g_atomic_mu); auto o = *p; *p += v; return o; }
inline float2 atomicAdd(float2 *p, float2 v) { std::lock_guard<std::mutex> l(g_atomic_mu); float2 o = *p; p->x += v.x; p->y += v.y; return o; }
inline int min(int a, int b) { return a < b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }   /* fma_ex2's bit moves */
inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }

/* problem.h's attn_visible() reads the table of FlashMask masks on the host (common/mask.c,
 * not linked into the emulator): here no problem has a mask, so an empty table. */
#include "mask.h"
const attn_mask_t *mask_slots[MASK_SLOTS + 1];
