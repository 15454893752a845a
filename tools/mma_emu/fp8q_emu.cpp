/* tools/mma_emu/fp8q_emu.cpp - phase 4's FP8 pre-pass (phase4_fa2/fp8_quant.cu) on the CPU
 * (run.sh fp8q): every thread block as 128 host threads, warp shuffles emulated, against the
 * CPU model's quantisation (common/fp8.c: fp8_hadamard_rows, fp8_quantise) on the same
 * rows, bit for bit: every e4m3 byte and every tile's scale, with and without incoherent
 * processing, at d = 32 to 256, with tail tiles, an all-zero tile (scale 1) and one outlier
 * per tile. It proves the butterflies' lanes and order, the reduction and the indexing, not
 * the speed. With V's transposed copy (v8t: the V kernel's TRANS), every byte of it, padding
 * included, against common/fp8.c's fp8_transpose_keys, and the bytes just past it untouched;
 * and first the permutation itself against the two register layouts it joins (the PTX ISA's
 * wgmma accumulator and 8-bit register A), written here apart from fp8.h. Exit 1 on any FAIL. */
#include "prelude.h"
#include "mma.cuh"      /* the emulated warp (its lanes, their barrier), which warp_emu.h uses */
#include "warp_emu.h"
#include <vector>
#include <random>
#include "fp8.h"
#include "fp8.c"
#include "rng.c"
#include "fp8_quant.h"   /* FP8_V8T_BC_MAX (gen.py drops the kernel's own include) */
#include "kernel_fp8q.inc"

/* The permutation from the fragments (PTX ISA, wgmma): thread t of S's fp32 accumulator holds
 * of a row, in its order, the columns 8 i + 2 t, 8 i + 2 t + 1 (i = 0 .. 3 for 32 keys);
 * converted four at a time in that order, they fill 8-bit register A's byte j of register
 * 0 (k = 4 t + j) and of register 2 (k = 16 + 4 t + j). So position k must hold that key. */
static int layout_check()
{
    int bad = 0;
    for (int t = 0; t < 4; t++)
        for (int c = 0; c < 8; c++) {   /* the thread's c-th accumulator column of the row */
            const int key = 8 * (c / 2) + 2 * t + c % 2;
            const int k = c < 4 ? 4 * t + c : 16 + 4 * t + (c - 4);   /* register 0, then register 2 */
            for (int grp = 0; grp < 3; grp++)
                bad += fp8_key_at(32 * grp + k) != 32 * grp + key || fp8_pos_of(32 * grp + key) != 32 * grp + k;
        }
    printf("  fp8q v8t's permutation against the accumulator and register A layouts: %d of 96 differ: %s\n", bad,
           bad ? "FAIL" : "PASS");
    return bad != 0;
}

/* trans: V's pass (no Hadamard) with its transposed copy v8t too. */
template <int D>
static int run(int heads, int rows, int tile, bool had, bool trans = false)
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
    const int pad = fp8_pad16(rows), guard = FP8_V8T_BC_MAX;   /* bytes past v8t that must stay 0xff: a tile's overrun */
    const size_t nt = (size_t)heads * D * pad;
    std::vector<uint8_t> x8t(trans ? nt + guard : 0, 0xff);
    emu_blocks(emu_dim3{(unsigned)tiles, (unsigned)heads, 1}, QTHREADS, 0, [&] {
        if (trans) fp8_quant_kernel<D, false, true>(x.data(), rows, tile, sign, x8.data(), scale.data(), x8t.data(), pad);
        else if (had) fp8_quant_kernel<D, true, false>(x.data(), rows, tile, sign, x8.data(), scale.data(), nullptr, 0);
        else fp8_quant_kernel<D, false, false>(x.data(), rows, tile, sign, x8.data(), scale.data(), nullptr, 0);
    });
    size_t bad = 0, bad_s = 0, bad_t = 0, bad_guard = 0, first_t = 0;
    uint8_t first_model = 0;
    std::vector<float> s(tiles);
    std::vector<uint8_t> v8(trans ? (size_t)rows * D : 0), v8t(trans ? (size_t)D * pad : 0);
    for (int h = 0; h < heads; h++) {
        float *row = xf.data() + (size_t)h * rows * D;
        if (had) fp8_hadamard_rows(row, (size_t)rows, D, sign);
        fp8_quantise(row, (size_t)rows, D, tile, 0, s.data());
        for (size_t i = 0; i < (size_t)rows * D; i++) bad += f32_to_e4m3(row[i]) != x8[(size_t)h * rows * D + i];
        for (size_t t = 0; t < tiles; t++) bad_s += memcmp(&s[t], &scale[h * tiles + t], 4) != 0;
        if (trans) {   /* the model's bytes, transposed and permuted by the model */
            for (size_t i = 0; i < (size_t)rows * D; i++) v8[i] = f32_to_e4m3(row[i]);
            fp8_transpose_keys(v8.data(), rows, D, v8t.data());
            for (size_t i = 0; i < (size_t)D * pad; i++)
                if (v8t[i] != x8t[(size_t)h * D * pad + i] && bad_t++ == 0) first_t = (size_t)h * D * pad + i, first_model = v8t[i];
        }
    }
    for (int i = 0; trans && i < guard; i++) bad_guard += x8t[nt + i] != 0xff;
    const bool ok = bad == 0 && bad_s == 0 && bad_t == 0 && bad_guard == 0;
    printf("  fp8q d=%d heads=%d rows=%d tile=%d%s: %zu of %zu bytes, %zu of %zu scales differ", D, heads, rows, tile,
           had ? " Hadamard" : "", bad, n, bad_s, heads * tiles);
    if (trans) {
        printf("; v8t (N_kv_pad=%d): %zu of %zu bytes differ, %zu of %d past it written", pad, bad_t, nt, bad_guard, guard);
        if (bad_t) {   /* first: head, row n (V's column), position, and the key there */
            const size_t hd = first_t / ((size_t)D * pad), nn = first_t / pad % D, pos = first_t % pad;
            printf(" (first: head %zu row %zu position %zu, key %d: 0x%02x, model 0x%02x)", hd, nn, pos, fp8_key_at((int)pos),
                   x8t[first_t], first_model);
        }
    }
    printf(": %s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}

template <int D>
static int all_cases()
{
    int f = 0;
    f += layout_check();
    for (int had = 0; had <= 1; had++) {
        f += run<D>(3, 300, 128, had);   /* tail tile of 44 rows */
        f += run<D>(2, 200, 64, had);
    }
    /* V with v8t: tails inside a half group (77: N_kv_pad 80), past a half (300: 304; 333:
     * 336, a tile of 32 too), one key, a multiple of 128 (no padding), tiles of 32 to 128 */
    const int cases[][2] = {{300, 128}, {200, 64}, {77, 64}, {333, 128}, {333, 32}, {1, 128}, {256, 128}, {256, 64}};
    for (const auto &c : cases) f += run<D>(3, c[0], c[1], false, true);
    return f;
}

int main(int argc, char **argv)
{
    return emu_main_d(argc, argv, "fp8q_emu", [](auto d) { return all_cases<decltype(d)::value>(); });
}
