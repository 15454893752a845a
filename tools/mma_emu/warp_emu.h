/* tools/mma_emu/warp_emu.h - the warp collectives a kernel beyond mma.sync uses, for the host
 * emulation (after mma.cuh's mock, whose warps meet at a barrier each): __shfl_xor_sync,
 * __any_sync, __syncwarp, and the integer built-ins the kernels call. Every lane of the warp
 * must call a collective, as on the GPU. And emu_blocks, the grid those kernels run on. */
#pragma once
#include <functional>
#include <type_traits>
#include <thread>
#include <vector>
/* warp collectives: each lane posts its 32-bit value, the warp meets, each reads */
struct EmuX { uint32_t v[32]; };
inline EmuX g_x[64];
template <class T> inline T __shfl_xor_sync(unsigned, T v, int m)
{
    static_assert(sizeof(T) == 4, "32-bit shuffles only");
    const int l = lane_id(), w = threadIdx.x / 32;
    memcpy(&g_x[w].v[l], &v, 4);
    W().bar->arrive_and_wait();
    T r;
    memcpy(&r, &g_x[w].v[l ^ m], 4);
    W().bar->arrive_and_wait();
    return r;
}
inline int __any_sync(unsigned, int p)
{
    const int l = lane_id(), w = threadIdx.x / 32;
    g_x[w].v[l] = p != 0;
    W().bar->arrive_and_wait();
    int any = 0;
    for (int k = 0; k < 32; k++) any |= (int)g_x[w].v[k];
    W().bar->arrive_and_wait();
    return any;
}
inline void __syncwarp() { W().bar->arrive_and_wait(); }
inline int atomicAdd(int *p, int v) { std::lock_guard<std::mutex> l(g_atomic_mu); int o = *p; *p += v; return o; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int max(int a, int b) { return a > b ? a : b; }

/* every block of the grid in turn, `threads` host threads a block, a barrier a warp, the
 * block's shared memory poisoned first */
inline void emu_blocks(emu_dim3 grid, int threads, size_t smem_bytes, const std::function<void()> &body)
{
    std::vector<unsigned char> smem(smem_bytes + 64);
    for (unsigned z = 0; z < grid.z; z++) for (unsigned y = 0; y < grid.y; y++) for (unsigned x = 0; x < grid.x; x++) {
        memset(smem.data(), 0xff, smem.size());
        g_smem = smem.data();
        std::barrier<> bb(threads);
        g_block_bar = &bb;
        std::vector<std::barrier<> *> wb;
        for (int w = 0; w < threads / 32; w++) { wb.push_back(new std::barrier<>(32)); g_warps[w].bar = wb.back(); }
        std::vector<std::thread> th;
        for (int t = 0; t < threads; t++) th.emplace_back([&, t] {
            threadIdx = {(unsigned)t, 0, 0}; blockIdx = {x, y, z}; gridDim = grid; blockDim = {(unsigned)threads, 1, 1};
            body();
        });
        for (auto &t : th) t.join();
        for (auto *b : wb) delete b;
    }
}

/* A harness's main: cases(std::integral_constant<int, d>) for each d named on the command
 * line (none: 128), each returning its failures; "N failed", and exit 1 on any (2: a d that
 * is not built). */
template <class F> inline int emu_main_d(int argc, char **argv, const char *name, F &&cases)
{
    int fails = 0;
    for (int k = 1; k < argc || k == 1; k++) {
        const int d = argc > 1 ? atoi(argv[k]) : 128;
        if (d == 32) fails += cases(std::integral_constant<int, 32>{});
        else if (d == 64) fails += cases(std::integral_constant<int, 64>{});
        else if (d == 128) fails += cases(std::integral_constant<int, 128>{});
        else if (d == 256) fails += cases(std::integral_constant<int, 256>{});
        else { fprintf(stderr, "%s: d = %d is not built\n", name, d); return 2; }
    }
    printf("%d failed\n", fails);
    return fails != 0;
}
