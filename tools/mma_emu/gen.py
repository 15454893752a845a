#!/usr/bin/env python3
"""tools/mma_emu/gen.py OUT - the host stand-ins that let a tensor-core kernel run on the CPU.

Writes into OUT: mma.cuh (common/mma.cuh's loaders as they are, over an emulated ldmatrix and
mma.sync: a warp's 32 lanes are 32 std::threads that meet at a barrier, and every lane
computes its fragment from the PTX ISA's layouts, written here independently of mma.cuh's
pictures; its sfu_ex2's ex2.approx as exp2f), bwd_gpu.cuh, visits.cuh, cuda_check.cuh (phase 5's
mma2d kernel, bwd_mma2d.cuh, is included as it is); for Hopper wgmma.cuh (wgmma_emu.h under
common/wgmma.cuh's host half), phase 5's Hopper headers as they are (EMU_MUTATE: the one
mutated copy), phase 4's Hopper ladder (phase4_fa2/hopper/, whose step 1 PASSed on an H100:
the emulation's check against the hardware) as it is (EMU_MUTATE_HOPPER: mutated copies), and
phase 6's decode headers (dec_emu.cpp; EMU_MUTATE_DECODE)."""
import os, sys
out = sys.argv[1]
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
rd = lambda p: open(os.path.join(root, p)).read()
src = rd('common/mma.cuh')
loaders = src[src.index('/* A operand: the 16x16 tile whose element (0, 0)'):src.index('/* d += a * b on the tensor cores')]
tail = src[src.index('/* Two floats -> one f16x2 register'):src.rindex('#endif')]
asm = '    float y;\n    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));\n    return y;'
assert asm in tail   # sfu_ex2: ex2.approx as exp2f
tail = tail.replace(asm, '    return exp2f(x);')
mock = r'''#pragma once
#include "prelude.h"
struct EmuWarp { const void *addr[32]; uint32_t a[32][4], b[32][2]; std::barrier<> *bar; };
inline EmuWarp g_warps[64];
inline int lane_id(void) { return threadIdx.x % 32; }
inline EmuWarp &W() { return g_warps[threadIdx.x / 32]; }
inline void cp_async16(void *s, const void *g, bool valid) { if (valid) memcpy(s, g, 16); else memset(s, 0, 16); }
inline void cp_async4(void *s, const void *g, bool valid) { if (valid) memcpy(s, g, 4); else memset(s, 0, 4); }
inline void cp_async_commit(void) {}
template <int N> inline void cp_async_wait(void) {}
static inline uint16_t hbits(const void *p, int i) { uint16_t v; memcpy(&v, (const char *)p + 2 * i, 2); return v; }
/* ldmatrix.x4: lanes 8q..8q+7 address the rows of 8x8 tile q; lane l receives of tile q
 * (row l/4, cols 2(l%4), +1), or with .trans (rows 2(l%4), +1 of col l/4) (PTX ISA) */
inline void ldm(uint32_t r[4], const void *smem, bool trans)
{
    EmuWarp &w = W(); const int l = lane_id();
    w.addr[l] = smem; w.bar->arrive_and_wait();
    for (int q = 0; q < 4; q++) {
        uint16_t lo, hi;
        if (!trans) { const void *row = w.addr[8 * q + l / 4]; lo = hbits(row, 2 * (l % 4)); hi = hbits(row, 2 * (l % 4) + 1); }
        else { lo = hbits(w.addr[8 * q + 2 * (l % 4)], l / 4); hi = hbits(w.addr[8 * q + 2 * (l % 4) + 1], l / 4); }
        r[q] = (uint32_t)lo | ((uint32_t)hi << 16);
    }
    w.bar->arrive_and_wait();
}
inline void ldmatrix_x4(uint32_t r[4], const void *s) { ldm(r, s, false); }
inline void ldmatrix_x4_trans(uint32_t r[4], const void *s) { ldm(r, s, true); }
static inline float h2f(uint32_t w, int hi) { uint16_t b = hi ? (w >> 16) : (w & 0xffff); __half h; memcpy(&h, &b, 2); return __half2float(h); }
/* mma.m16n8k16 row.col: A a0..a3 = (g | g+8, 2t | 8+2t ..), B b0, b1 = (k 2t | 8+2t .., n g),
 * C (row g | g+8, cols 2t, 2t+1) (PTX ISA) */
inline void mma_16816(float d[4], const uint32_t a[4], const uint32_t b[2])
{
    EmuWarp &w = W(); const int l = lane_id();
    for (int i = 0; i < 4; i++) w.a[l][i] = a[i];
    w.b[l][0] = b[0]; w.b[l][1] = b[1];
    w.bar->arrive_and_wait();
    float A[16][16], B[16][8];
    for (int L = 0; L < 32; L++) {
        const int g = L / 4, t = L % 4;
        for (int e = 0; e < 2; e++) {
            A[g][2 * t + e] = h2f(w.a[L][0], e);     A[g + 8][2 * t + e] = h2f(w.a[L][1], e);
            A[g][8 + 2 * t + e] = h2f(w.a[L][2], e); A[g + 8][8 + 2 * t + e] = h2f(w.a[L][3], e);
            B[2 * t + e][g] = h2f(w.b[L][0], e);     B[8 + 2 * t + e][g] = h2f(w.b[L][1], e);
        }
    }
    w.bar->arrive_and_wait();
    const int g = l / 4, t = l % 4;
    for (int i = 0; i < 4; i++) {
        const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
        float s = 0; for (int k = 0; k < 16; k++) s += A[row][k] * B[k][col];
        d[i] += s;
    }
}
'''
dev = '__device__ __forceinline__'
open(os.path.join(out, 'mma.cuh'), 'w').write(mock + loaders.replace(dev + ' ', 'inline ') + tail.replace(dev + ' ', 'inline '))
g = rd('phase5_backward/bwd_gpu.cuh').replace(dev, 'inline')
open(os.path.join(out, 'bwd_gpu.cuh'), 'w').write(g)
open(os.path.join(out, 'cuda_check.cuh'), 'w').write('#pragma once\n')
open(os.path.join(out, 'visits.cuh'), 'w').write('''#pragma once
#include "gpu.h"
inline bool visit_all(const gpu_visits_t &v) { return v.visit_all != 0; }
inline void visit_count(const gpu_visits_t &v, int tile, int n) { atomicAdd(v.counts + tile, (unsigned long long)n); }
''')

# Hopper: common/wgmma.cuh's host-portable half as it is (sw128_offset, the descriptor
# builder, over an emulated shared-address space: offsets from the block's buffer), its
# device half replaced by wgmma_emu.h.
w = rd('common/wgmma.cuh')
cut = '#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)'
assert cut in w and '__cvta_generic_to_shared(smem)' in w
w = w[:w.index(cut)].replace('__host__ ' + dev, 'inline').replace(dev, 'inline')
w = w.replace('__cvta_generic_to_shared(smem)', '(size_t)((const unsigned char *)smem - g_smem)')
open(os.path.join(out, 'wgmma.cuh'), 'w').write(w + '#define FA_HAVE_WGMMA 1\n#include "wgmma_emu.h"\n#endif\n')

# phase 5's kernels are the real headers (bwd_mma2d.cuh; bwd_wgmma_step1.cuh, _step2.cuh and
# the family's parts they include), which the emulations include as they are; nothing is cut.
# EMU_MUTATE='old=>new' plants one mistake in the Hopper backward (run.sh wgmma-mutant: the
# emulation must FAIL it): old must occur once in those headers. They are then all copied
# here, the one that holds it mutated, and hide the real ones (OUT comes first on the include
# path, and a header's own folder first for the headers it includes: so all of them).
BWD_WGMMA_HEADERS = ['phase5_backward/' + f for f in ('bwd_wgmma_step1.cuh', 'bwd_wgmma_step2.cuh', 'bwd_wgmma.cuh',
                                                        'bwd_wgmma_pipe.cuh', 'bwd_wgmma_load.cuh', 'bwd_wgmma_epilogue.cuh')]
for path in BWD_WGMMA_HEADERS:   # a copy a mutant left here must not hide the real header in the next run
    stale = os.path.join(out, os.path.basename(path))
    if os.path.exists(stale):
        os.remove(stale)
for name in ('kernel.inc', 'kernel_wgmma.inc'):   # what earlier versions of this script cut
    if os.path.exists(os.path.join(out, name)):
        os.remove(os.path.join(out, name))
mut = os.environ.get('EMU_MUTATE')
if mut:
    old, new = mut.split('=>')
    texts = {path: rd(path) for path in BWD_WGMMA_HEADERS}
    assert sum(t.count(old) for t in texts.values()) == 1, 'EMU_MUTATE: %r must occur once in %s' % (old, ', '.join(texts))
    for path, t in texts.items():
        open(os.path.join(out, os.path.basename(path)), 'w').write(t.replace(old, new))

# phase 4's Hopper ladder: the emulators include phase4_fa2/hopper/'s headers themselves
# (fa2_wgmma_emu.cpp, fa3_fp8_emu.cpp). EMU_MUTATE_HOPPER='old=>new' plants one mistake: the
# headers are copied into OUT/hopper (found there first: -I OUT comes before the phase's
# folder) with old, which must occur once in them all, replaced (run.sh hopper must FAIL it).
import glob, shutil
hop = os.path.join(out, 'hopper')
shutil.rmtree(hop, ignore_errors=True)
mut = os.environ.get('EMU_MUTATE_HOPPER')
if mut:
    old, new = mut.split('=>')
    src = {os.path.basename(f): open(f).read() for f in glob.glob(os.path.join(root, 'phase4_fa2', 'hopper', '*'))}
    assert sum(t.count(old) for t in src.values()) == 1, 'EMU_MUTATE_HOPPER: %r must occur once in phase4_fa2/hopper/' % old
    os.makedirs(hop)
    for name, t in src.items():
        open(os.path.join(hop, name), 'w').write(t.replace(old, new))

def plant(f, var, path):
    """f with the one mistake $var plants ('old=>new', old once in f), if it is set."""
    mut = os.environ.get(var)
    if mut:
        old, new = mut.split('=>')
        assert f.count(old) == 1, '%s: %r must occur once in %s' % (var, old, path)
        f = f.replace(old, new)
    return f

def device_half(path, end, var, extra=()):
    """A kernel file up to its host code (end), for the emulation: its dynamic shared memory
    the block's host buffer, __device__ functions inline, and extra
    (old, new) replacements; then the one mistake $var plants ('old=>new': a test that the
    emulation must FAIL)."""
    f = rd(path)
    f = f[:f.index(end)]
    shared = 'extern __shared__ __align__(16) unsigned char smem[];'
    assert f.count(shared) == 1
    f = f.replace(shared, 'unsigned char *smem = g_smem;')
    for old, new in extra:
        assert old in f, '%s: %r not found' % (path, old)
        f = f.replace(old, new)
    f = f.replace(dev, 'inline').replace('#include <cuda_fp16.h>', '#include "prelude.h"')
    return plant(f, var, path)

# phase 6's decode kernels: split, split-pack, fused, paged, ragged, the combine and
# FlashDecoding++ (fdpp, its combine and fallback) run here (dec_emu.cpp). The device code is
# phase6_decoding's headers, written for g++ too (dec_cfg.cuh: without __CUDACC__ the block-
# shared arrays are statics, the dynamic shared memory the block's host buffer); they are
# copied into OUT as they are, where their own #includes find the stand-ins above first.
# EMU_MUTATE_DECODE='old=>new' plants one mistake: old must occur once in all of them.
dec_dir = os.path.join(root, 'phase6_decoding')
dec = {n: rd('phase6_decoding/' + n) for n in sorted(os.listdir(dec_dir)) if n.endswith('.cuh')}
dmut = os.environ.get('EMU_MUTATE_DECODE')
if dmut:
    old, new = dmut.split('=>')
    assert sum(t.count(old) for t in dec.values()) == 1, 'EMU_MUTATE_DECODE: %r must occur once in phase6_decoding/*.cuh' % old
    dec = {n: t.replace(old, new) for n, t in dec.items()}
for n, t in dec.items():
    open(os.path.join(out, n), 'w').write(t)

# phase 4's fa2-mma: fa2_mask_emu.cpp includes its device code, phase4_fa2/fa2_mma_kernel.cuh,
# as it is (its FlashMask path, MASKED, runs there). EMU_MUTATE_FA2 plants its one mistake in
# a copy of that header in OUT, which the emulator's include path (OUT first) finds instead.
# EMU_FA2_KERNEL=PATH: that file instead (an exercise build's fill-in copy of the header).
fa2k = os.path.join(out, 'fa2_mma_kernel.cuh')
fa2src = os.environ.get('EMU_FA2_KERNEL')
if os.environ.get('EMU_MUTATE_FA2') or fa2src:
    text = open(fa2src).read() if fa2src else rd('phase4_fa2/fa2_mma_kernel.cuh')
    open(fa2k, 'w').write(plant(text, 'EMU_MUTATE_FA2', fa2src or 'phase4_fa2/fa2_mma_kernel.cuh'))
elif os.path.exists(fa2k):
    os.remove(fa2k)   # an earlier mutant's copy

# common/mask_gpu.cu's two kernels (the preprocessing pass and the order with each Q block's
# range), cut from its host code, and common/warp_reduce.cuh as it is: fa2_mask_emu.cpp runs
# them before fa2-mma, and checks them against the same preprocessing done on the host
m = rd('common/mask_gpu.cu')
kb = m[m.index('/* One warp a column block'):m.index('extern "C" const int32_t *mask_gpu_blocks')]
ko = m[m.index('/* Longest first'):m.index('extern "C" const int32_t *mask_gpu_order')]
shared = 'extern __shared__ __align__(16) int32_t tiles[];'
assert ko.count(shared) == 1
ko = ko.replace(shared, 'int32_t *tiles = (int32_t *)g_smem;')
open(os.path.join(out, 'kernel_mask_gpu.inc'), 'w').write('#include "warp_reduce.cuh"\n' + kb + ko)
open(os.path.join(out, 'warp_reduce.cuh'), 'w').write(rd('common/warp_reduce.cuh').replace(dev, 'inline'))

# phase 4's FP8 pre-pass (fp8_quant.cu) up to its launchers: fp8q_emu.cpp runs it against the
# CPU model's quantisation (common/fp8.c). The e4m3 conversion is common/fp8.c's (the same
# round to nearest even, saturated), __fdiv_rn a plain division (IEEE on the host too);
# EMU_MUTATE_FP8Q plants a mistake that must FAIL.
q = rd('phase4_fa2/fp8_quant.cu')
q = q[:q.index('template <int D>\nstatic void quant_one')]
for old, new in (('#include <cuda_fp16.h>', '#include "prelude.h"'), ('#include <cuda_fp8.h>', '#include "fp8.h"'),
                 ('#include "fp8_quant.h"', ''), ('#include "cuda_check.cuh"', ''), ('__shared__ ', 'static '),
                 ('(uint8_t)__nv_cvt_float_to_fp8(__fdiv_rn(v[k], s), __NV_SATFINITE, __NV_E4M3)', 'f32_to_e4m3(v[k] / s)'),
                 ('__fdiv_rn(amax, E4M3_MAX_F)', '(amax / E4M3_MAX_F)')):
    assert old in q, 'fp8_quant.cu: %r not found' % old
    q = q.replace(old, new)
open(os.path.join(out, 'kernel_fp8q.inc'), 'w').write(plant(q.replace(dev, 'inline'), 'EMU_MUTATE_FP8Q', 'phase4_fa2/fp8_quant.cu'))
