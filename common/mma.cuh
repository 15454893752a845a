/* mma.cuh - the tensor-core building blocks used from phase 3 on (sm_80 and later):
 *
 *   cp_async16()       16-byte global -> shared copy that does not stall the thread
 *   cp_async4()        the same for one 4-byte word (unaligned rows, e.g. l and m)
 *   ldmatrix_x4()      four 8x8 fp16 tiles from shared memory into mma fragments
 *   ldmatrix_x4_trans  the same, transposed (for a row-major B operand such as V)
 *   mma_16816()        D = A B + D, A 16x16 fp16, B 16x8 fp16, C/D 16x8 fp32
 *
 * Fragment layouts of mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 (PTX ISA,
 * "Matrix Fragments for mma.m16n8k16 with floating point type"). A warp's 32 lanes are
 * 8 groups of 4:  g = lane / 4 (groupID), t = lane % 4 (threadID_in_group).
 *
 *   A (16 x 16, row-major), 4 regs of f16x2 = a0..a7:
 *                 cols 0..7                cols 8..15
 *     rows 0..7   a0,a1 at (g, 2t, 2t+1)    a4,a5 at (g, 8+2t, 8+2t+1)
 *     rows 8..15  a2,a3 at (g+8, 2t, 2t+1)  a6,a7 at (g+8, 8+2t, 8+2t+1)
 *
 *   B (16 x 8, "col": element (k, n)), 2 regs = b0..b3:
 *     b0,b1 at (k = 2t, 2t+1,   n = g)
 *     b2,b3 at (k = 8+2t, 8+2t+1, n = g)
 *
 *   C, D (16 x 8, fp32), 4 regs:
 *     c0,c1 at (row g,   col 2t, 2t+1)
 *     c2,c3 at (row g+8, col 2t, 2t+1)
 *
 *   lane:   0   1   2   3   4  ...  31          e.g. C row g = 2 is held by lanes 8..11,
 *   (g,t): 0,0 0,1 0,2 0,3 1,0 ... 7,3          each lane two adjacent columns.
 *
 * Two facts the attention kernels build on:
 *  - The C fragments of two n-tiles side by side (cols 0..7 and 8..15) hold exactly the
 *    elements an A fragment of a 16x16 tile wants (a0a1 = c0c1 of the left tile, a2a3 =
 *    c2c3 of the left, a4a5 = c0c1 of the right, a6a7 = c2c3 of the right). So
 *    P = softmax(S) can feed the next mma (P V) from registers after a cast to fp16.
 *  - ldmatrix.x4: lanes 8q..8q+7 give the row addresses of 8x8 tile q (16 bytes each);
 *    every lane receives, of each tile q, the two elements (row lane/4, cols 2(lane%4),
 *    +1) in register q: the A/B/C pattern above. With .trans a lane receives
 *    (rows 2(lane%4), +1 of col lane/4) instead, which turns a row-major [k][n] tile
 *    into the B fragment.
 */
#ifndef COMMON_MMA_CUH
#define COMMON_MMA_CUH
#include <cuda_fp16.h>
#include <stdint.h>

/* Address of a shared-memory object as the 32-bit shared-window offset PTX wants. */
__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* Copy 16 bytes global -> shared, asynchronously, through L2 only (.cg). When valid is
 * false nothing is read and the 16 bytes are zero-filled (the tail rows of a tile).
 * Both addresses must be 16-byte aligned. */
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(smem_u32(smem)), "l"(gmem), "r"(valid ? 16 : 0) : "memory");
}
/* The same for 4 bytes (one float; .ca: the only cache mode for sizes below 16). */
__device__ __forceinline__ void cp_async4(void *smem, const void *gmem, bool valid)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :: "r"(smem_u32(smem)), "l"(gmem), "r"(valid ? 4 : 0) : "memory");
}
/* Close the group of copies issued so far; wait until at most N groups are in flight.
 * The data is visible to the issuing thread after the wait, to the others only after
 * a __syncthreads() that follows it. */
__device__ __forceinline__ void cp_async_commit(void) { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait(void) { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }

/* Four 8x8 fp16 tiles. For a 16x16 A tile at (r0, k0) of a row-major array with
 * `stride` halves per row, lane l passes &a[(r0 + l % 16) * stride + k0 + (l / 16) * 8]:
 * r[0..3] are then a0a1, a2a3, a4a5, a6a7. */
__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *smem)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(smem)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void *smem)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(smem)));
}

/* d += a * b on the tensor cores: m16n8k16, fp16 inputs, fp32 accumulate. */
__device__ __forceinline__ void mma_16816(float d[4], const uint32_t a[4], const uint32_t b[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Two floats -> one f16x2 register (lo in the low half), round to nearest even. */
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi)
{
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}
#endif
