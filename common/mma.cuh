/* mma.cuh - the tensor-core building blocks used from phase 3 on (sm_80 and later):
 *
 *   cp_async16()       16-byte global -> shared copy that does not stall the thread
 *   cp_async4()        the same for one 4-byte word (unaligned rows, e.g. l and m)
 *   cp_async_tile()    a tile's rows global -> shared with cp_async16, tail rows zeroed
 *   ldmatrix_x4()      four 8x8 fp16 tiles from shared memory into mma fragments
 *   ldmatrix_x4_trans  the same, transposed
 *   load_a_16x16()     the A operand: a 16x16 row-major tile (e.g. Q_i, for S = Q K^T)
 *   load_b_nk()        the B operand of two 8-wide n-tiles over k16, from an array stored
 *                      N x K (rows = n): K_j for S = Q K^T
 *   load_b_kn_trans()  the same from an array stored K x N (rows = k): V_j for P V
 *   load_a_trans()     the A operand from an array stored K x M (dS^T for dQ = dS K)
 *   mma_16816()        D = A B + D, A 16x16 fp16, B 16x8 fp16, C/D 16x8 fp32
 *   c_pair_to_a()      two n-tiles of C, in fp16, as the A fragment of one k16 slice
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
 *    (rows 2(lane%4), +1 of col lane/4) instead. The three loaders below only choose
 *    which lane points at which 8x8 tile; each draws its choice once.
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

/* Four 8x8 fp16 tiles: lane l passes the address of row l % 8 of tile l / 8 (16 bytes,
 * 16-byte aligned); register q receives tile q (see above). The loaders below say which. */
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

/* The lane's index in its warp (every kernel here is one-dimensional). */
__device__ __forceinline__ int lane_id(void) { return threadIdx.x % 32; }

/* A operand: the 16x16 tile whose element (0, 0) is at `tile`, in a row-major array of
 * `ld` halves per row (e.g. Q_i in shared memory, one k16 slice at a time):
 *
 *                  cols 0..7                cols 8..15
 *   rows 0..7    tile 0 <- lanes  0..7    tile 2 <- lanes 16..23
 *   rows 8..15   tile 1 <- lanes  8..15   tile 3 <- lanes 24..31
 *
 *   lane l points at row l % 16, col (l / 16) * 8;   a[q] = tile q:
 *   a[0] = a0a1 (rows 0..7, cols 0..7)   a[1] = a2a3 (rows 8..15, cols 0..7)
 *   a[2] = a4a5 (rows 0..7, cols 8..15)  a[3] = a6a7 (rows 8..15, cols 8..15)
 */
__device__ __forceinline__ void load_a_16x16(uint32_t a[4], const __half *tile, int ld)
{
    const int l = lane_id();
    ldmatrix_x4(a, tile + (l % 16) * ld + (l / 16) * 8);
}

/* B operand of two n-tiles (n 0..7 and 8..15) over one k16 slice, from an array stored
 * N x K: row n holds (k = 0, 1, ...), `ld` halves per row. This is K_j in S = Q_i K_j^T
 * (n = key, k = head dimension): the "col" B layout is exactly K's rows, so no transpose.
 *
 *                  k 0..7                   k 8..15
 *   n 0..7       tile 0 <- lanes  0..7    tile 1 <- lanes  8..15   -> n-tile 0
 *   n 8..15      tile 2 <- lanes 16..23   tile 3 <- lanes 24..31   -> n-tile 1
 *
 *   lane l points at row n = (l / 16) * 8 + l % 8, col k = (l / 8 % 2) * 8; a lane
 *   receives (row g, cols 2t, 2t+1) of each tile = (n = g, k = 2t, 2t+1): b0b1.
 *   b[0] = b0b1, b[1] = b2b3 of n-tile 0;  b[2] = b0b1, b[3] = b2b3 of n-tile 1:
 *   mma_16816(c0, a, b) and mma_16816(c1, a, b + 2).
 */
__device__ __forceinline__ void load_b_nk(uint32_t b[4], const __half *tile, int ld)
{
    const int l = lane_id();
    ldmatrix_x4(b, tile + ((l / 16) * 8 + l % 8) * ld + (l / 8 % 2) * 8);
}

/* The same two n-tiles from an array stored K x N: row k holds (n = 0, 1, ...), `ld`
 * halves per row. This is V_j in O += P~_ij V_j (k = key, n = head dimension); .trans
 * turns each 8x8 tile over, so a lane receives (rows 2t, 2t+1 of col g) = (k = 2t, 2t+1,
 * n = g): b0b1 again.
 *
 *                  n 0..7                   n 8..15
 *   k 0..7       tile 0 <- lanes  0..7    tile 2 <- lanes 16..23
 *   k 8..15      tile 1 <- lanes  8..15   tile 3 <- lanes 24..31
 *                  = n-tile 0               = n-tile 1
 *
 *   lane l points at row k = (l / 8 % 2) * 8 + l % 8, col n = (l / 16) * 8;
 *   b[0], b[1] = n-tile 0 (tiles 0, 1);  b[2], b[3] = n-tile 1 (tiles 2, 3).
 */
__device__ __forceinline__ void load_b_kn_trans(uint32_t b[4], const __half *tile, int ld)
{
    const int l = lane_id();
    ldmatrix_x4_trans(b, tile + ((l / 8 % 2) * 8 + l % 8) * ld + (l / 16) * 8);
}

/* A operand of a 16x16 tile that is stored TRANSPOSED: an array stored K x M, row k
 * holding (m = 0, 1, ...), `ld` halves per row; `tile` points at element (k0, m0). This
 * is dS in dQ = dS K when the backward kept dS^T (keys x queries) in shared memory.
 * .trans hands a lane (rows 2t, 2t+1 of col g) of each stored 8x8 tile = (m = g, k = 2t,
 * 2t+1): the A pattern, once each register takes the right tile:
 *
 *   stored:        m 0..7                   m 8..15
 *   k 0..7       tile 0 <- lanes  0..7    tile 1 <- lanes  8..15   -> a[0], a[1]
 *   k 8..15      tile 2 <- lanes 16..23   tile 3 <- lanes 24..31   -> a[2], a[3]
 *
 *   lane l points at row k = (l / 16) * 8 + l % 8, col m = (l / 8 % 2) * 8;
 *   a[0] = (m 0..7, k 0..7)   a[1] = (m 8..15, k 0..7)   a[2] = (m 0..7, k 8..15) ...
 */
__device__ __forceinline__ void load_a_trans(uint32_t a[4], const __half *tile, int ld)
{
    const int l = lane_id();
    ldmatrix_x4_trans(a, tile + ((l / 16) * 8 + l % 8) * ld + (l / 8 % 2) * 8);
}

/* A tile's `rows` rows of COLS halves from global memory (row stride COLS: a head's Q, K
 * or V) into shared memory (row stride LD >= COLS), 16 bytes per cp.async, spread over
 * the NT threads of the block. Rows at or past `valid` are zero-filled and not read (the
 * tail of the last block). Commit and wait are the caller's (cp_async_commit/wait).
 *
 *   global  src: | row 0: COLS halves | row 1 | ... | row valid-1 |   (nothing read below)
 *   shared  dst: | row 0 | pad | row 1 | pad | ... | zeros ... |     (LD halves a row)
 *   copy c (thread c, c + NT, ...): row c / (COLS/8), halves (c % (COLS/8)) * 8 .. +7
 */
template <int COLS, int LD, int NT>
__device__ __forceinline__ void cp_async_tile(__half *dst, const __half *src, int rows, int valid)
{
    static_assert(COLS % 8 == 0 && LD % 8 == 0, "rows must be whole 16-byte chunks");
    constexpr int CPR = COLS / 8;   /* 16-byte copies per row */
    if constexpr (NT % CPR == 0) {
        /* A thread's copies all sit in one column k, STEP rows apart, so each is a base
         * address plus a constant: no divide, no multiply per copy. rows is a constant at
         * every call, so the loop unrolls; a whole tile (every K/V block but the tail one)
         * needs no row test. Written as the loop below, ptxas spent ~20 instructions of
         * address arithmetic on every 16-byte copy (fa2-mma at d = 128: ~320 a K/V block,
         * more than its 256 mma's). */
        constexpr int STEP = NT / CPR;
        const int r0 = threadIdx.x / CPR, k = (threadIdx.x % CPR) * 8;
        __half *d = dst + r0 * LD + k;
        const __half *s = src + (size_t)r0 * COLS + k;
        if (valid >= rows) {
#pragma unroll
            for (int i = 0; i < (rows + STEP - 1) / STEP; i++)
                if (rows % STEP == 0 || r0 + i * STEP < rows)
                    cp_async16(d + i * STEP * LD, s + (size_t)i * STEP * COLS, true);
        } else {   /* the tail block: rare, kept a loop (fewer registers) */
#pragma unroll 1
            for (int i = 0; i < (rows + STEP - 1) / STEP; i++)
                if (rows % STEP == 0 || r0 + i * STEP < rows) {
                    const bool ok = r0 + i * STEP < valid;
                    cp_async16(d + i * STEP * LD, ok ? s + (size_t)i * STEP * COLS : src, ok);
                }
        }
    } else {
        for (int c = threadIdx.x; c < rows * CPR; c += NT) {
            const int r = c / CPR, k = (c % CPR) * 8;
            const bool ok = r < valid;
            cp_async16(dst + r * LD + k, ok ? src + (size_t)r * COLS + k : src, ok);
        }
    }
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

/* The C fragments of two neighbouring n-tiles (columns 16k..16k+7 in lo, 16k+8..16k+15 in
 * hi), rounded to fp16, are the A fragment of k16 slice k (the pictures above): so P (and
 * dS) computed by one mma feed the next one without leaving the registers. */
__device__ __forceinline__ void c_pair_to_a(uint32_t a[4], const float lo[4], const float hi[4])
{
    a[0] = pack_half2(lo[0], lo[1]);
    a[1] = pack_half2(lo[2], lo[3]);
    a[2] = pack_half2(hi[0], hi[1]);
    a[3] = pack_half2(hi[2], hi[3]);
}

/* 2^x on the SFU: ex2.approx.ftz, one MUFU.EX2 (2 ulp; 2^-inf = 0; a result below 2^-126
 * flushed to 0). exp2f adds a range check and two multiplies an element to keep such
 * results as denormals, which a softmax does not need: its largest term is 1. */
__device__ __forceinline__ float sfu_ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* 2^x without the SFU, on the FMA and integer pipes (FlashAttention-4's software exp2): x
 * = n + f with n the nearest integer (adding 1.5 2^23 rounds it into the low bits), f in
 * [-1/2, 1/2]; 2^f by a degree-3 polynomial fitted to 2^f's relative error on that range
 * (at most 1.2e-4, far below e4m3's 2^-4 step), and n added to its exponent bits. For x <= 0
 * (a softmax's exponents): below -126 the result is 0, as ex2.approx.ftz's is. */
__device__ __forceinline__ float fma_ex2(float x)
{
    const float t = x + 12582912.0f, n = t - 12582912.0f, f = x - n;
    const float p = fmaf(fmaf(fmaf(0.05459282f, f, 0.24221784f), f, 0.6933686f), f, 1.0f);
    const float y = __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
    return x < -126.0f ? 0.0f : y;
}

/* The opt-in shared memory a thread block may have (cudaDevAttrMaxSharedMemoryPerBlockOptin)
 * on each target of the build: the kernels static_assert their layout against the
 * smallest target they promise to run on, and check the device at run time
 * (gpu_kernel_fits()) for the rest. */
constexpr size_t SMEM_OPTIN_SM86 = 99 * 1024;    /* sm_86, sm_89 (RTX 30xx/40xx, L4, A10) */
constexpr size_t SMEM_OPTIN_SM80 = 163 * 1024;   /* sm_80 (A100)                          */
constexpr size_t SMEM_OPTIN_SM90 = 227 * 1024;   /* sm_90 (H100, H200)                    */
#endif
