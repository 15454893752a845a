/* tools/mma_emu/wgmma_emu.h - Hopper's wgmma.mma_async m64n64k16 (f16 in, f32 accumulate) on
 * the CPU, for the emulated kernels (gen.py puts it where common/wgmma.cuh's device half
 * was). A warpgroup's 128 threads are 128 std::threads that meet at a barrier; each
 * deposits its operands, then computes its own 32 accumulators. Written from the PTX ISA
 * ("Asynchronous Warpgroup Level Matrix Multiply": register fragments, "Matrix Descriptor
 * Format", the 128-byte swizzle), not from wgmma.cuh's pictures:
 *
 *   descriptor   bits 0-13 start >> 4, 16-29 leading byte offset (LBO) >> 4, 32-45 stride
 *                byte offset (SBO) >> 4, 49-51 base offset, 62-63 swizzle (1 = 128 B).
 *   K-major      (k contiguous) element (mn, k), k < 16:
 *                  start + (mn / 8) SBO + (mn % 8) 128 + 2 k
 *   MN-major     (mn contiguous, the transpose flag) element (mn, k):
 *                  start + (k / 8) SBO + (k % 8) 128 + (mn / 64) LBO + 2 (mn % 64)
 *   128-byte swizzle: the address computed so is XOR-ed, bits 4-6 with bits 7-9
 *                (Swizzle<3,4,3>: the 16-byte chunk with the row within 8 rows of 128 B)
 *   A from registers: warp w holds rows 16 w .. 16 w + 15, mma.m16n8k16's A fragment:
 *                a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 8+2t..), a3 (g+8, 8+2t..)
 *   D: thread (warp w, lane 4 g + t) holds d[4 n8 + i] = (16 w + g + 8 (i / 2), 8 n8 + 2 t + i % 2)
 *
 * What it checks beyond the arithmetic: the 128 threads pass the same descriptors and flags
 * (.sync.aligned), the swizzle mode is 128 B with base offset 0, every element read lies
 * inside the block's shared memory. What it does not model: asynchrony (a wgmma completes
 * at its issue, so a missing wgmma_wait, fence or __syncthreads goes unseen), the hardware's
 * accumulation order and rounding inside a k16 step (fp32 sums here), LBO of a K-major
 * operand (unused with the 128-byte swizzle at k16), base offsets other than 0. */
#pragma once
#include <cstdio>
#include <cstdlib>

struct EmuWg { uint64_t da[128], db[128]; int acc[128]; uint32_t a[128][4]; std::barrier<> *bar; };
inline EmuWg g_wgs[8];
inline size_t g_smem_bytes;
inline EmuWg &WG() { return g_wgs[threadIdx.x / 128]; }

inline void wgmma_fence() {}
inline void wgmma_fence_regs(float (&)[32]) {}
inline void wgmma_hold_a(uint32_t (&)[4]) {}
inline void wgmma_commit() {}
template <int N> inline void wgmma_wait() {}
inline void fence_proxy_async() {}
/* bulk reductions: done at issue (an atomic add per float), so a missing wait goes unseen */
inline void bulk_reduce_add_f32(float *g, const void *s, uint32_t bytes)
{
    if (bytes % 16 || (uintptr_t)g % 16 || ((const unsigned char *)s - g_smem) % 16) {
        fprintf(stderr, "wgmma_emu: bulk reduce of %u bytes not 16-byte aligned\n", bytes); exit(1);
    }
    if ((const unsigned char *)s < g_smem || (const unsigned char *)s + bytes > g_smem + g_smem_bytes) {
        fprintf(stderr, "wgmma_emu: bulk reduce source outside shared memory\n"); exit(1);
    }
    for (uint32_t i = 0; i < bytes / 4; i++) atomicAdd(g + i, ((const float *)s)[i]);
}
inline void bulk_commit() {}
template <int N> inline void bulk_wait_read() {}
template <int N> inline void bulk_wait() {}

[[noreturn]] inline void emu_die(const char *what, uint64_t v)
{
    fprintf(stderr, "wgmma_emu: %s (0x%llx)\n", what, (unsigned long long)v);
    exit(3);
}

/* the shared-memory byte address of element (mn, k) of a descriptor's operand */
inline uint32_t emu_desc_addr(uint64_t desc, int mn, int k, bool mn_major)
{
    const uint32_t start = (uint32_t)(desc & 0x3FFF) << 4, lbo = (uint32_t)((desc >> 16) & 0x3FFF) << 4,
                   sbo = (uint32_t)((desc >> 32) & 0x3FFF) << 4;
    if (((desc >> 49) & 7) != 0) emu_die("base offset not 0", desc);
    if ((desc >> 62) != 1) emu_die("not the 128-byte swizzle", desc);
    const uint32_t logical = mn_major ? start + (k / 8) * sbo + (k % 8) * 128 + (mn / 64) * lbo + 2 * (mn % 64)
                                      : start + (mn / 8) * sbo + (mn % 8) * 128 + 2 * k;
    const uint32_t addr = logical ^ (((logical >> 7) & 7) << 4);
    if (addr + 2 > g_smem_bytes) emu_die("operand read past the block's shared memory", addr);
    return addr;
}

inline float emu_h(uint32_t addr) { __half h; memcpy(&h, g_smem + addr, 2); return __half2float(h); }
inline float emu_h2(uint32_t w, int hi) { uint16_t b = hi ? (uint16_t)(w >> 16) : (uint16_t)(w & 0xffff); __half h; memcpy(&h, &b, 2); return __half2float(h); }

/* D[64 x 64] (+)= A[64 x 16] B[16 x 64]; A from desc_a (a == nullptr) or the registers a */
inline void emu_wgmma(float (&d)[32], uint64_t desc_a, const uint32_t *a, uint64_t desc_b, int accumulate,
                      int trans_a, int trans_b)
{
    EmuWg &w = WG();
    const int tid = threadIdx.x % 128;
    w.da[tid] = a ? ~0ull : desc_a; w.db[tid] = desc_b; w.acc[tid] = accumulate != 0;
    if (a) for (int r = 0; r < 4; r++) w.a[tid][r] = a[r];
    w.bar->arrive_and_wait();
    for (int o = 0; o < 128; o++)
        if (w.da[o] != w.da[0] || w.db[o] != w.db[0] || w.acc[o] != w.acc[0])
            emu_die("the warpgroup's threads disagree on a wgmma's descriptors or flags", o);
    const int warp = tid / 32, g = (tid % 32) / 4, t = tid % 4;
    float A[2][16], B[16][64];
    for (int x = 0; x < 2; x++) {
        const int row = 16 * warp + g + 8 * x;   /* this thread's two rows of D */
        for (int k = 0; k < 16; k++) {
            if (!a) { A[x][k] = emu_h(emu_desc_addr(desc_a, row, k, trans_a)); continue; }
            /* the register holding (row, k): lane 4 (row % 8) + (k % 8) / 2 of warp row / 16,
             * register (row % 16) / 8 + 2 (k / 8), half k % 2 */
            const int r16 = row % 16, lane = 4 * (r16 % 8) + (k % 8) / 2;
            A[x][k] = emu_h2(w.a[32 * (row / 16) + lane][r16 / 8 + 2 * (k / 8)], k % 2);
        }
    }
    for (int k = 0; k < 16; k++)
        for (int n = 0; n < 64; n++) B[k][n] = emu_h(emu_desc_addr(desc_b, n, k, trans_b));
    const bool acc = w.acc[0];
    for (int e = 0; e < 32; e++) {
        const int x = (e % 4) / 2, col = 8 * (e / 4) + 2 * t + e % 2;
        float s = 0;
        for (int k = 0; k < 16; k++) s += A[x][k] * B[k][col];
        d[e] = (acc ? d[e] : 0.0f) + s;
    }
    w.bar->arrive_and_wait();   /* every thread has read the deposits before the next wgmma */
}

template <int TRANS_B, int TRANS_A = 0>
inline void wgmma_m64n64k16_ss(float (&d)[32], uint64_t desc_a, uint64_t desc_b, int accumulate)
{
    emu_wgmma(d, desc_a, nullptr, desc_b, accumulate, TRANS_A, TRANS_B);
}
template <int TRANS_B>
inline void wgmma_m64n64k16_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b, int accumulate)
{
    emu_wgmma(d, 0, a, desc_b, accumulate, 0, TRANS_B);
}

/* What fa2_wgmma.cu's other steps use (TMA, mbarriers, register reallocation, named
 * barriers): present so that its step-1 kernel compiles here (fa2_wgmma_emu.cpp), never
 * called by it; a call stops the emulation. */
inline void mbar_init(uint64_t *, uint32_t) { emu_die("mbarriers are not emulated", 0); }
inline void mbar_init_fence() { emu_die("mbarriers are not emulated", 0); }
inline void mbar_arrive_expect_tx(uint64_t *, uint32_t) { emu_die("mbarriers are not emulated", 0); }
inline void mbar_arrive(uint64_t *) { emu_die("mbarriers are not emulated", 0); }
inline void mbar_wait(uint64_t *, uint32_t) { emu_die("mbarriers are not emulated", 0); }
inline void tma_load_3d(void *, const void *, uint64_t *, int, int, int) { emu_die("TMA is not emulated", 0); }
template <int N> inline void setmaxnreg_dec() { emu_die("setmaxnreg is not emulated", 0); }
template <int N> inline void setmaxnreg_inc() { emu_die("setmaxnreg is not emulated", 0); }
inline void named_bar_sync(int, int) { emu_die("named barriers are not emulated", 0); }
inline void named_bar_arrive(int, int) { emu_die("named barriers are not emulated", 0); }

/* __shfl_xor_sync over a warp's 32 threads (full mask only), through the warp's barrier */
struct EmuShfl { float v[32]; };
inline EmuShfl g_shfl[64];
inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask)
{
    if (mask != 0xffffffffu) emu_die("__shfl_xor_sync: only the full mask is emulated", mask);
    const int w = threadIdx.x / 32, l = threadIdx.x % 32;
    g_shfl[w].v[l] = v;
    g_warps[w].bar->arrive_and_wait();
    const float r = g_shfl[w].v[l ^ lane_mask];
    g_warps[w].bar->arrive_and_wait();
    return r;
}
