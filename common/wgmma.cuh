/* wgmma.cuh - Hopper's warpgroup matrix multiply (wgmma.mma_async, sm_90a), from scratch.
 *
 * mma.sync (mma.cuh) is one warp's 16 x 8 x 16 product with every operand in registers.
 * wgmma is four warps' (a warpgroup's) 64 x N x 16 product, issued asynchronously, with B
 * (and optionally A) read by the tensor cores straight from shared memory through a
 * 64-bit "matrix descriptor". Only code built for sm_90a may use it
 * (-gencode arch=compute_90a,code=sm_90a).
 *
 *   D[64 x N] (+)= A[64 x 16] B[16 x N]      A: shared memory (descriptor) or registers
 *                                            B: shared memory (descriptor)
 *
 * Accumulator layout (fp32, N = 64: 32 registers a thread). Warp w of the warpgroup owns
 * rows 16w .. 16w + 15; inside a warp it is mma.sync's C layout repeated over N / 8
 * column tiles (g = lane / 4, t = lane % 4):
 *
 *        cols  n8*8+2t  n8*8+2t+1
 *   row 16w + g     d[4 n8 + 0]  d[4 n8 + 1]
 *   row 16w + g + 8 d[4 n8 + 2]  d[4 n8 + 3]
 *
 * A from registers: per warp, mma.sync's A fragment of rows 16w .. 16w + 15 (mma.cuh), so
 * a softmax written for mma.sync's C layout hands P to the next wgmma unchanged.
 *
 * Shared-memory tiles, 128-byte swizzle. A tile row of 64 fp16 (128 bytes) is 8 chunks of
 * 16 bytes; in row r, chunk c is stored at chunk position c ^ (r % 8). Eight rows (1024
 * bytes, 1024-aligned) are one swizzle atom:
 *
 *   row 0:  c0 c1 c2 c3 c4 c5 c6 c7
 *   row 1:  c1 c0 c3 c2 c5 c4 c7 c6      (position p holds chunk p ^ 1)
 *   row 2:  c2 c3 c0 c1 c6 c7 c4 c5
 *   ...                                  the 8 rows of an 8 x 8 ldmatrix-sized block land
 *   row 7:  c7 c6 c5 c4 c3 c2 c1 c0      in 8 different bank groups: no conflicts
 *
 * The descriptor (PTX ISA, "Matrix Descriptor Format"): bits 0-13 start address >> 4,
 * 16-29 leading-dimension byte offset >> 4, 32-45 stride-dimension byte offset >> 4,
 * 49-51 base offset (0 here: atoms 1024-aligned), 62-63 swizzle (1 = 128 B).
 *   K-major operand (its 16-wide k slice contiguous: Q and K for S = Q K^T): the stride
 *     offset is 1024 (from one 8-row group to the next); the leading offset is unused
 *     with the 128-byte swizzle; the next k16 slice starts 32 bytes further.
 *   MN-major operand (N contiguous: V for O = P V, read with the transpose flag): the
 *     stride offset is 1024 (8 k-rows of 128 bytes); the leading offset is the distance
 *     from one 64-wide column atom to the next (when N > 64); the next k16 slice starts
 *     16 rows (2048 bytes) further.
 */
#ifndef COMMON_WGMMA_CUH
#define COMMON_WGMMA_CUH

#include <stdint.h>
#include "mma.cuh"   /* smem_u32 */

/* byte offset of element (r, c) (c < 64: fp16 columns) in a 128-byte-swizzled tile whose
 * rows are 64 fp16 wide */
__host__ __device__ __forceinline__ uint32_t sw128_offset(int r, int c)
{
    return (uint32_t)(r * 128 + ((((c >> 3) ^ (r & 7)) & 7) << 4) + (c & 7) * 2);
}

/* the 64-bit matrix descriptor of a 128-byte-swizzled shared-memory operand at smem */
__device__ __forceinline__ uint64_t wgmma_desc_sw128(const void *smem, uint32_t lead_bytes, uint32_t stride_bytes)
{
    const uint32_t addr = (uint32_t)__cvta_generic_to_shared(smem);
    return (uint64_t)((addr >> 4) & 0x3FFF) | ((uint64_t)((lead_bytes >> 4) & 0x3FFF) << 16) |
           ((uint64_t)((stride_bytes >> 4) & 0x3FFF) << 32) | (1ull << 62);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FA_HAVE_WGMMA 1

/* Order this thread's earlier register writes of the accumulators (and of a register A)
 * before the wgmma's that follow (PTX: required before the first wgmma and whenever the
 * registers were touched in between). */
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
/* Tell the compiler that the tensor cores have written these accumulator registers here
 * (after a wgmma_wait): it must not move a read of them above this point. */
__device__ __forceinline__ void wgmma_fence_regs(float (&d)[32])
{
#pragma unroll
    for (int e = 0; e < 32; e++) asm volatile("" : "+f"(d[e])::"memory");
}
/* Tell the compiler that a register A fragment is still in use here (after the
 * wgmma_wait of the wgmma's that read it): it must not reuse those registers before. */
__device__ __forceinline__ void wgmma_hold_a(uint32_t (&a)[4])
{
    asm volatile("" : "+r"(a[0]), "+r"(a[1]), "+r"(a[2]), "+r"(a[3])::"memory");
}
/* close the group of wgmma's issued so far; wait until at most N groups are in flight */
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
/* shared memory written by ordinary stores, next read by the tensor cores (async proxy):
 * each writing thread fences before the barrier */
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

#define FA_W32(d)                                                                              \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),   \
        "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), \
        "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), \
        "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define FA_R32                                                                                   \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
    "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"

/* D[64 x 64] (+)= A B, A and B from shared memory. accumulate = 0 overwrites D.
 * TRANS_B = 1: B is MN-major (N contiguous), as V is for O = P V.
 * TRANS_A = 1: A is MN-major (M contiguous: stored K x M), as dS^T is for dQ = dS K. */
template <int TRANS_B, int TRANS_A = 0>
__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[32], uint64_t desc_a, uint64_t desc_b, int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " FA_R32 ", %32, %33, p, 1, 1, %36, %35;\n}\n"
                 : FA_W32(d)
                 : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(TRANS_B), "n"(TRANS_A));
}

/* D[64 x 64] (+)= A B, A from registers (mma.sync's A fragment of the warp's 16 rows),
 * B from shared memory. */
template <int TRANS_B>
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b, int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " FA_R32 ", {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
                 : FA_W32(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate), "n"(TRANS_B));
}
/* FP8 (e4m3): D[64 x 64] (+)= A[64 x 32] B[32 x 64], fp32 accumulate. 8-bit operands are
 * K-major only (no transpose flag), so V must come to O = P V with its keys contiguous. A
 * k32 slice of e4m3 is 32 bytes, as a k16 slice of fp16: the descriptors are fp16's. */
__device__ __forceinline__ void wgmma_m64n64k32_e4m3_ss(float (&d)[32], uint64_t desc_a, uint64_t desc_b, int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 " FA_R32 ", %32, %33, p, 1, 1;\n}\n"
                 : FA_W32(d)
                 : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
/* A from registers: per warp, rows 16w .. 16w + 15 as four 32-bit words of 4 e4m3 each
 * (PTX ISA, the .m64nNk32 register fragment for 8-bit types; g = lane / 4, t = lane % 4):
 *   a[0]: row g,     k 4t .. 4t + 3         a[2]: row g,     k 16 + 4t .. 16 + 4t + 3
 *   a[1]: row g + 8, k 4t .. 4t + 3         a[3]: row g + 8, k 16 + 4t .. 16 + 4t + 3
 * byte 0 (the lowest) holding the smallest k. */
__device__ __forceinline__ void wgmma_m64n64k32_e4m3_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b, int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 " FA_R32 ", {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
                 : FA_W32(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}
/* four floats -> four e4m3 (round to nearest even, saturated), x0 in the lowest byte.
 * cvt ...e4m3x2.f32 d, a, b puts a in the upper byte of d and b in the lower. */
__device__ __forceinline__ uint32_t e4m3x4_pack(float x0, float x1, float x2, float x3)
{
    uint16_t lo, hi;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(x1), "f"(x0));
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(x3), "f"(x2));
    return (uint32_t)lo | ((uint32_t)hi << 16);
}
#undef FA_W32
#undef FA_R32

/* ---- TMA and mbarriers: the copy engine fills shared memory and says when -------------
 *
 * An mbarrier is a 64-bit word in shared memory with a phase bit. The consumer waits for
 * "phase p completed"; a phase completes when the expected arrivals (here 1: the thread
 * that issues the copy) have arrived AND the transaction bytes announced with
 * expect_tx have landed (the TMA unit counts them down as it writes). Each use of a
 * barrier flips its phase, so a ring slot used for the u-th time waits for parity u & 1:
 *
 *   issuer:   arrive.expect_tx(bar, bytes); cp.async.bulk.tensor(dst, map, coords, bar)
 *   consumer: while (!try_wait.parity(bar, u & 1)) ;     the tile is in shared memory
 */
__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t arrivals)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(arrivals) : "memory");
}
/* make the initialised barriers visible to the copy engine (the async proxy) */
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

/* one arrival that also announces `bytes` to come from the copy engine */
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}

/* announce `bytes` to come from the copy engine WITHOUT arriving: for a barrier whose
 * arrivals come from elsewhere (e.g. cp_async_mbar_arrive below) */
__device__ __forceinline__ void mbar_expect_tx(uint64_t *bar, uint32_t bytes)
{
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}

/* one arrival on bar once every cp.async this thread has issued so far has landed (.noinc:
 * counted among the barrier's expected arrivals): the thread goes on at once */
__device__ __forceinline__ void cp_async_mbar_arrive(uint64_t *bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}

/* one plain arrival (a consumer saying "I am done with this slot") */
__device__ __forceinline__ void mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}

/* wait until the phase with this parity has completed */
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity)
{
    asm volatile("{\n.reg .pred done;\nwait_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait_%=;\n}\n" ::"r"(smem_u32(bar)), "r"(parity) : "memory");
}

/* a box of a 3-D tensor (tensor map built on the host: cuTensorMapEncodeTiled) into shared
 * memory at dst, completing `bytes` on bar; coordinates innermost first, in elements.
 * Out-of-range rows of the box are filled with zeros. */
__device__ __forceinline__ void tma_load_3d(void *dst, const void *tensor_map, uint64_t *bar, int c0, int c1, int c2)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4, %5}], [%2];\n"
                 ::"r"(smem_u32(dst)), "l"((uint64_t)tensor_map), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}

/* the other way: a box of the tensor from shared memory at src (128-byte swizzled, as the
 * loads leave it) to global memory, in the thread's bulk group (bulk_commit, bulk_wait_read
 * below). Rows and columns past the tensor are not written: the copy engine clips them. The
 * source was written by ordinary stores: fence_proxy_async() and a barrier first. */
__device__ __forceinline__ void tma_store_3d(const void *tensor_map, const void *src, int c0, int c1, int c2)
{
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n"
                 ::"l"((uint64_t)tensor_map), "r"(smem_u32(src)), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}

/* ---- bulk reductions (no tensor map): shared memory added into global ---------------------
 * cp.reduce.async.bulk adds `bytes` (a multiple of 16, both addresses 16-byte aligned) of
 * fp32 from shared memory into global memory, element by element, in the copy engine: one
 * instruction where a warp would issue bytes / 8 float2 atomics. Each thread tracks its own
 * bulk groups: commit closes one; wait_group.read N returns when at most N of the thread's
 * groups still read their shared source (it may be written again), wait_group N when at
 * most N are still in flight at all. The source was written by ordinary stores:
 * fence_proxy_async() and a barrier first. */
__device__ __forceinline__ void bulk_reduce_add_f32(float *gdst, const void *ssrc, uint32_t bytes)
{
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n"
                 ::"l"(gdst), "r"(smem_u32(ssrc)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory"); }
template <int N>
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory"); }

/* ---- ordering between thread blocks (a deterministic order of bulk adds) -----------------
 * A flag in global memory: the writer stores with release semantics after its data, the
 * reader loads with acquire semantics before its own. fence_proxy_async_global orders the
 * copy engine's completed writes (async proxy) before the thread's next generic accesses. */
__device__ __forceinline__ int ld_acquire_gpu(const int *p)
{
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release_gpu(int *p, int v)
{
    asm volatile("st.release.gpu.global.b32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void fence_proxy_async_global() { asm volatile("fence.proxy.async.global;\n" ::: "memory"); }

/* ---- warp specialisation ----------------------------------------------------------------
 * setmaxnreg moves registers between the warpgroups of a block: a producer that only
 * issues copies gives most of its registers back (dec), the consumers take them (inc).
 * Every thread of the warpgroup executes it; counts are multiples of 8 in [24, 256]. */
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N)); }
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N)); }

/* Named barriers (ids 1..15; 0 is __syncthreads): sync waits until `threads` threads have
 * arrived at barrier id, counting itself; arrive counts itself and goes on. Two
 * warpgroups hand each other a turn with them (pingpong). */
__device__ __forceinline__ void named_bar_sync(int id, int threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int threads)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
#else
#define FA_HAVE_WGMMA 0
#endif

#endif
