/* tools/mma_emu/fp8q_emu.cpp - phase 4's FP8 pre-pass (phase4_fa2/fp8_quant.cu) on the CPU
 * (run.sh fp8q): every thread block as 128 host threads, warp shuffles emulated, against the
 * CPU model's quantisation (common/fp8.c: fp8_hadamard_rows, fp8_quantise) on the same
 * rows, bit for bit: every e4m3 byte and every tile's scale, with and without incoherent
 * processing, at d = 32 to 256, with tail tiles, an all-zero tile (scale 1) and one outlier
 * per tile. It proves the butterflies' lanes and order, the reduction and the indexing, not
 * the speed. Exit 1 on any FAIL. */
#include "prelude.h"
#include "mma.cuh"      /* the emulated warp (its lanes, their barrier), which warp_emu.h uses */
#include "warp_emu.h"
#include <vector>
#include <random>
#include "fp8.h"
#include "fp8.c"
#include "rng.c"
#include "kernel_fp8q.inc"

template <int D>
static int run(int heads, int rows, int tile, bool had)
{
    std::mt19937 g(3); std::normal_distribution<float> nd(0, 1);
    std::uniform_real_distribution<float> u(0, 1);
    const size_t n = (size_t)heads * rows * D, tiles = (size_t)(rows + tile - 1) / tile;
    std::vector<__half> x(n);
    std::vector<float> xf(n);
    for (size_t i = 0; i < n; i++) {
        float v = nd(g) + (u(g) < 0.002f ? 10.0f * nd(g) : 0.0f);   /* FA3's outliers, a few a tile */
        const size_t r = i / D % rows;
        if (r < (size_t)tile && i / D / rows == 1) v = 0.0f;        /* head 1's first tile: all zero */
        x[i] = __float2half(v);
        xf[i] = __half2float(x[i]);
    }
    float sign[256];
    fp8_signs(5, D, sign);
    std::vector<uint8_t> x8(n, 0xff);
    std::vector<float> scale(heads * tiles, NAN);
    emu_blocks(emu_dim3{(unsigned)tiles, (unsigned)heads, 1}, QTHREADS, 0, [&] {
        if (had) fp8_quant_kernel<D, true>(x.data(), rows, tile, sign, x8.data(), scale.data());
        else fp8_quant_kernel<D, false>(x.data(), rows, tile, sign, x8.data(), scale.data());
    });
    size_t bad = 0, bad_s = 0;
    std::vector<float> s(tiles);
    for (int h = 0; h < heads; h++) {
        float *row = xf.data() + (size_t)h * rows * D;
        if (had) fp8_hadamard_rows(row, (size_t)rows, D, sign);
        fp8_quantise(row, (size_t)rows, D, tile, 0, s.data());
        for (size_t i = 0; i < (size_t)rows * D; i++) bad += f32_to_e4m3(row[i]) != x8[(size_t)h * rows * D + i];
        for (size_t t = 0; t < tiles; t++) bad_s += memcmp(&s[t], &scale[h * tiles + t], 4) != 0;
    }
    const bool ok = bad == 0 && bad_s == 0;
    printf("  fp8q d=%d heads=%d rows=%d tile=%d%s: %zu of %zu bytes, %zu of %zu scales differ: %s\n", D, heads, rows, tile,
           had ? " Hadamard" : "", bad, n, bad_s, heads * tiles, ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}

template <int D>
static int all_cases()
{
    int f = 0;
    for (int had = 0; had <= 1; had++) {
        f += run<D>(3, 300, 128, had);   /* tail tile of 44 rows */
        f += run<D>(2, 200, 64, had);
    }
    return f;
}

int main(int argc, char **argv)
{
    return emu_main_d(argc, argv, "fp8q_emu", [](auto d) { return all_cases<decltype(d)::value>(); });
}
