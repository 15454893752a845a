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
#include <cuda.h>   /* CUtensorMap: the emulated tensor maps live in its bytes */

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

/* the shared-memory byte address of element (mn, k) of a descriptor's operand of esz-byte
 * elements (2: fp16, 1: e4m3; MN-major only for fp16) */
inline uint32_t emu_desc_addr(uint64_t desc, int mn, int k, bool mn_major, int esz = 2)
{
    const uint32_t start = (uint32_t)(desc & 0x3FFF) << 4, lbo = (uint32_t)((desc >> 16) & 0x3FFF) << 4,
                   sbo = (uint32_t)((desc >> 32) & 0x3FFF) << 4;
    if (((desc >> 49) & 7) != 0) emu_die("base offset not 0", desc);
    if ((desc >> 62) != 1) emu_die("not the 128-byte swizzle", desc);
    if (mn_major && esz != 2) emu_die("an MN-major 8-bit operand (the PTX ISA allows K-major alone)", desc);
    const uint32_t logical = mn_major ? start + (k / 8) * sbo + (k % 8) * 128 + (mn / 64) * lbo + 2 * (mn % 64)
                                      : start + (mn / 8) * sbo + (mn % 8) * 128 + esz * k;
    const uint32_t addr = logical ^ (((logical >> 7) & 7) << 4);
    if (addr + esz > g_smem_bytes) emu_die("operand read past the block's shared memory", addr);
    return addr;
}

inline float emu_h(uint32_t addr) { __half h; memcpy(&h, g_smem + addr, 2); return __half2float(h); }
inline float emu_h2(uint32_t w, int hi) { uint16_t b = hi ? (uint16_t)(w >> 16) : (uint16_t)(w & 0xffff); __half h; memcpy(&h, &b, 2); return __half2float(h); }
/* e4m3, from its definition (sign, 4 exponent bits of bias 7, 3 mantissa bits; e = 15, m = 7
 * is NaN; e = 0 subnormal), written apart from common/fp8.c */
inline float emu_e4m3(uint8_t b)
{
    const int e = (b >> 3) & 15, m = b & 7;
    const float v = e == 15 && m == 7 ? NAN : e == 0 ? ldexpf((float)m / 8.0f, -6) : ldexpf(1.0f + (float)m / 8.0f, e - 7);
    return b & 0x80 ? -v : v;
}

/* D[64 x 64] (+)= A[64 x K] B[K x 64]; A from desc_a (a == nullptr) or the registers a.
 * fp16: K = 16; fp8 (e4m3, both K-major): K = 32, one byte an element */
inline void emu_wgmma(float (&d)[32], uint64_t desc_a, const uint32_t *a, uint64_t desc_b, int accumulate,
                      int trans_a, int trans_b, bool fp8 = false)
{
    EmuWg &w = WG();
    const int tid = threadIdx.x % 128, KK = fp8 ? 32 : 16, esz = fp8 ? 1 : 2;
    w.da[tid] = a ? ~0ull : desc_a; w.db[tid] = desc_b; w.acc[tid] = accumulate != 0;
    if (a) for (int r = 0; r < 4; r++) w.a[tid][r] = a[r];
    w.bar->arrive_and_wait();
    for (int o = 0; o < 128; o++)
        if (w.da[o] != w.da[0] || w.db[o] != w.db[0] || w.acc[o] != w.acc[0])
            emu_die("the warpgroup's threads disagree on a wgmma's descriptors or flags", o);
    const int warp = tid / 32, t = tid % 4;
    float A[2][32], B[32][64];
    for (int x = 0; x < 2; x++) {
        const int row = 16 * warp + (tid % 32) / 4 + 8 * x;   /* this thread's two rows of D */
        for (int k = 0; k < KK; k++) {
            if (!a) {
                const uint32_t at = emu_desc_addr(desc_a, row, k, trans_a, esz);
                A[x][k] = fp8 ? emu_e4m3(g_smem[at]) : emu_h(at);
                continue;
            }
            const int r16 = row % 16;
            if (!fp8) {
                /* the register holding (row, k): lane 4 (row % 8) + (k % 8) / 2 of warp row / 16,
                 * register (row % 16) / 8 + 2 (k / 8), half k % 2 */
                const int lane = 4 * (r16 % 8) + (k % 8) / 2;
                A[x][k] = emu_h2(w.a[32 * (row / 16) + lane][r16 / 8 + 2 * (k / 8)], k % 2);
            } else {
                /* 8-bit A (PTX ISA, wgmma .m64nNk32 register fragment): lane 4 (row % 8) + (k % 16) / 4,
                 * register (row % 16) / 8 + 2 (k / 16), byte k % 4 (byte 0 the lowest) */
                const int lane = 4 * (r16 % 8) + (k % 16) / 4;
                A[x][k] = emu_e4m3((uint8_t)(w.a[32 * (row / 16) + lane][r16 / 8 + 2 * (k / 16)] >> (8 * (k % 4))));
            }
        }
    }
    for (int k = 0; k < KK; k++)
        for (int n = 0; n < 64; n++) {
            const uint32_t at = emu_desc_addr(desc_b, n, k, trans_b, esz);
            B[k][n] = fp8 ? emu_e4m3(g_smem[at]) : emu_h(at);
        }
    const bool acc = w.acc[0];
    for (int e = 0; e < 32; e++) {
        const int x = (e % 4) / 2, col = 8 * (e / 4) + 2 * t + e % 2;
        float s = 0;
        for (int k = 0; k < KK; k++) s += A[x][k] * B[k][col];
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
/* four floats -> four e4m3, x0 in the lowest byte: defined by the harness that runs the FP8
 * step (fa3_fp8_emu.cpp, from common/fp8.c's conversion) */
uint32_t e4m3x4_pack(float x0, float x1, float x2, float x3);
inline void wgmma_m64n64k32_e4m3_ss(float (&d)[32], uint64_t desc_a, uint64_t desc_b, int accumulate)
{
    emu_wgmma(d, desc_a, nullptr, desc_b, accumulate, 0, 0, true);
}
inline void wgmma_m64n64k32_e4m3_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b, int accumulate)
{
    emu_wgmma(d, 0, a, desc_b, accumulate, 0, 0, true);
}

/* ---- the copy engine and its barriers (steps 2-6, the FP8 step) -------------------------
 *
 * mbarrier (PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier"):
 * a phase completes when its pending arrivals reach 0 and its transaction count is 0; then
 * the next phase starts with the init count. test_wait.parity P returns once the phase of
 * parity P has completed, that is while the current phase's parity differs from P (so a
 * fresh barrier passes a wait on parity 1 at once). Here each barrier is a record keyed by
 * its shared-memory offset; a wait spins, yielding, and a wait longer than EMU_WAIT_S
 * seconds (default 60) stops the emulation: a parity or count mistake deadlocks on the GPU.
 *
 * TMA (cp.async.bulk.tensor.3d, loads and stores): done at issue, then the bytes of the whole box (zero-filled
 * past the tensor, as the hardware counts them) are completed on the barrier. A tensor map
 * is the emulation's own record (emu_tma_map_3d) in the CUtensorMap's bytes: base, the 3
 * dims in elements, the 2 outer strides in bytes, the box, the element size. The 128-byte
 * swizzle is the hardware's: in the destination's address, bits 4-6 XOR bits 7-9 (the box's
 * inner dimension must be 128 bytes, its destination 1024-aligned).
 *
 * Named barriers (bar.sync / bar.arrive id, n): complete when n threads have arrived.
 * setmaxnreg: nothing to do. The CTAs of a grid run one after another here. */
#include <map>
#include <thread>
#include <chrono>
struct EmuMbar { uint32_t count, pending; long long tx; uint32_t phase; };
inline std::map<uint32_t, EmuMbar> g_mbars;
inline std::mutex g_mbar_mu;
inline uint32_t emu_smem_off(const void *p, const char *what)
{
    const unsigned char *c = (const unsigned char *)p;
    if (c < g_smem || c >= g_smem + g_smem_bytes) emu_die(what, (uint64_t)(uintptr_t)p);
    return (uint32_t)(c - g_smem);
}
inline EmuMbar &emu_mbar(uint64_t *bar)   /* under g_mbar_mu */
{
    const uint32_t off = emu_smem_off(bar, "an mbarrier outside shared memory");
    if (off % 8) emu_die("an mbarrier not 8-byte aligned", off);
    auto it = g_mbars.find(off);
    if (it == g_mbars.end()) emu_die("an mbarrier used before mbar_init", off);
    return it->second;
}
inline void emu_mbar_step(EmuMbar &b)
{
    if (b.pending == 0 && b.tx == 0) { b.phase++; b.pending = b.count; }
}
inline void mbar_init(uint64_t *bar, uint32_t arrivals)
{
    std::lock_guard<std::mutex> l(g_mbar_mu);
    g_mbars[emu_smem_off(bar, "an mbarrier outside shared memory")] = EmuMbar{arrivals, arrivals, 0, 0};
}
inline void mbar_init_fence() {}
inline void emu_arrive(uint64_t *bar, long long tx)
{
    std::lock_guard<std::mutex> l(g_mbar_mu);
    EmuMbar &b = emu_mbar(bar);
    if (b.pending == 0) emu_die("an arrival on an mbarrier with none pending", b.phase);
    b.tx += tx;
    b.pending--;
    emu_mbar_step(b);
}
inline void mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes) { emu_arrive(bar, bytes); }
inline void mbar_arrive(uint64_t *bar) { emu_arrive(bar, 0); }
inline void cp_async_mbar_arrive(uint64_t *bar) { emu_arrive(bar, 0); }   /* the copies are done at issue here */
inline void mbar_expect_tx(uint64_t *bar, uint32_t bytes)
{
    std::lock_guard<std::mutex> l(g_mbar_mu);
    emu_mbar(bar).tx += bytes;
}
inline void emu_complete_tx(uint64_t *bar, uint32_t bytes)
{
    std::lock_guard<std::mutex> l(g_mbar_mu);
    EmuMbar &b = emu_mbar(bar);
    b.tx -= bytes;
    if (b.tx < 0) emu_die("the copy engine completed bytes no one expected (expect_tx after the copy?)", (uint64_t)-b.tx);
    emu_mbar_step(b);
}
inline double emu_wait_limit() { const char *e = getenv("EMU_WAIT_S"); return e ? atof(e) : 60.0; }
template <class Done> inline void emu_spin(Done done, const char *what, uint64_t v)
{
    const auto t0 = std::chrono::steady_clock::now();
    while (!done()) {
        std::this_thread::yield();
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > emu_wait_limit())
            emu_die(what, v);
    }
}
inline void mbar_wait(uint64_t *bar, uint32_t parity)
{
    emu_spin([&] { std::lock_guard<std::mutex> l(g_mbar_mu); return (emu_mbar(bar).phase & 1) != (parity & 1); },
             "an mbarrier wait that never completes (a deadlock on the GPU)", emu_smem_off(bar, "mbarrier"));
}

struct EmuTmap { const unsigned char *base; uint64_t dims[3], strides[2]; uint32_t box[3], elem; };
static_assert(sizeof(EmuTmap) <= sizeof(CUtensorMap), "the emulated tensor map does not fit a CUtensorMap");
/* a 3-D tensor [dims2][dims1][dims0] of elem-byte elements, rows of dims0, boxes of box0 x box1 x 1 */
inline CUtensorMap emu_tma_map_3d(const void *base, uint32_t elem, uint64_t dims0, uint64_t dims1, uint64_t dims2,
                                  uint32_t box0, uint32_t box1)
{
    CUtensorMap m; memset(&m, 0, sizeof m);
    EmuTmap t{(const unsigned char *)base, {dims0, dims1, dims2}, {dims0 * elem, dims0 * dims1 * elem}, {box0, box1, 1}, elem};
    if ((dims0 * elem) % 16) emu_die("a TMA global stride not a multiple of 16 bytes", dims0 * elem);
    if (box0 * elem != 128) emu_die("a 128-byte-swizzled box whose inner dimension is not 128 bytes", box0 * elem);
    memcpy(&m, &t, sizeof t);
    return m;
}
/* a TMA box walked element by element: each(in, global element, shared element), `in` false
 * past the tensor's end; shared addresses 128-byte swizzled from a 1024-aligned start. Returns
 * the box's bytes. */
template <class Each>
inline uint32_t emu_tma_box(const void *tensor_map, const void *smem, const char *outside, int c0, int c1, int c2, Each each)
{
    EmuTmap t; memcpy(&t, tensor_map, sizeof t);
    const uint32_t off = emu_smem_off(smem, outside);
    if (off % 1024) emu_die("a 128-byte-swizzled TMA box in shared memory not 1024-aligned", off);
    const uint32_t bytes = t.box[0] * t.box[1] * t.elem;
    if (off + bytes > g_smem_bytes) emu_die("a TMA box past the block's shared memory", off);
    for (uint32_t y = 0; y < t.box[1]; y++)
        for (uint32_t x = 0; x < t.box[0]; x++) {
            const long long gx = (long long)c0 + x, gy = (long long)c1 + y, gz = c2;
            const uint32_t lin = off + (y * t.box[0] + x) * t.elem, at = lin ^ (((lin >> 7) & 7) << 4);
            const bool in = gx >= 0 && gy >= 0 && gz >= 0 && (uint64_t)gx < t.dims[0] && (uint64_t)gy < t.dims[1] &&
                            (uint64_t)gz < t.dims[2];
            each(in, in ? (unsigned char *)t.base + gz * t.strides[1] + gy * t.strides[0] + gx * t.elem : nullptr,
                 g_smem + at, t.elem);
        }
    return bytes;
}
inline void tma_load_3d(void *dst, const void *tensor_map, uint64_t *bar, int c0, int c1, int c2)
{
    const uint32_t bytes = emu_tma_box(tensor_map, dst, "a TMA destination outside shared memory", c0, c1, c2,
                                       [](bool in, unsigned char *g, unsigned char *s, uint32_t n) {
                                           if (in) memcpy(s, g, n); else memset(s, 0, n);
                                       });
    emu_complete_tx(bar, bytes);
}
/* the store (cp.async.bulk.tensor global <- shared): done at issue, the box's elements inside
 * the tensor written, the rest clipped, as the hardware does */
inline void tma_store_3d(const void *tensor_map, const void *src, int c0, int c1, int c2)
{
    emu_tma_box(tensor_map, src, "a TMA store source outside shared memory", c0, c1, c2,
                [](bool in, unsigned char *g, unsigned char *s, uint32_t n) { if (in) memcpy(g, s, n); });
}

struct EmuNamedBar { int arrived; unsigned long long gen; };
inline EmuNamedBar g_named[16];
inline void emu_named_reset() { std::lock_guard<std::mutex> l(g_mbar_mu); for (auto &b : g_named) b = EmuNamedBar{0, 0}; g_mbars.clear(); }
inline unsigned long long emu_named_arrive(int id, int threads)
{
    if (id < 1 || id > 15) emu_die("a named barrier id outside 1..15", id);
    std::lock_guard<std::mutex> l(g_mbar_mu);
    EmuNamedBar &b = g_named[id];
    const unsigned long long gen = b.gen;
    if (++b.arrived == threads) { b.arrived = 0; b.gen++; }
    return gen;
}
inline void named_bar_arrive(int id, int threads) { emu_named_arrive(id, threads); }
inline void named_bar_sync(int id, int threads)
{
    const unsigned long long gen = emu_named_arrive(id, threads);
    emu_spin([&] { std::lock_guard<std::mutex> l(g_mbar_mu); return g_named[id].gen != gen; },
             "a named barrier that never completes (a deadlock on the GPU)", id);
}
template <int N> inline void setmaxnreg_dec() {}
template <int N> inline void setmaxnreg_inc() {}

/* __shfl_xor_sync over a warp's 32 threads (full mask only), through the warp's barrier */
struct EmuShfl { float v[32]; int i[32]; };
inline EmuShfl g_shfl[64];
/* __shfl_sync of an int from lane src (full mask only): warpgroup_idx's broadcast */
inline int __shfl_sync(unsigned mask, int v, int src)
{
    if (mask != 0xffffffffu) emu_die("__shfl_sync: only the full mask is emulated", mask);
    const int w = threadIdx.x / 32, l = threadIdx.x % 32;
    g_shfl[w].i[l] = v;
    g_warps[w].bar->arrive_and_wait();
    const int r = g_shfl[w].i[src & 31];
    g_warps[w].bar->arrive_and_wait();
    return r;
}
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
