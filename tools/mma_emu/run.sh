#!/usr/bin/env bash
# tools/mma_emu/run.sh [d ...] - phase 5's mma2d kernel (bwd_mma2d.cu) run on the CPU: no GPU
# needed. gen.py stands in for ldmatrix, mma.sync and cp.async (a warp's lanes are threads
# meeting at barriers; the fragments from the PTX ISA's layouts); the kernel's own code and
# common/mma.cuh's loaders run as they are, on small problems (GQA with tails, N_q < N_kv and
# N_q > N_kv causal, full), against an fp64 backward: dQ, dK, dV rel L2 < 1e-2 and the
# visit counts. It proves the indexing, not the speed, the races the barriers guard or the
# hardware's atomics. Default: every d of BWD_MMA2D_TABLE. About 10 s (d = 32) to a few
# minutes (d = 256) each, on 2 cores.
# tools/mma_emu/run.sh wgmma [d ...] - the same for phase 5's wgmma kernel (bwd_wgmma.cu),
# with wgmma.mma_async emulated too (wgmma_emu.h: descriptors, swizzle, register A), after
# phase 4's fa2-wgmma step 1 (PASSed on an H100) on the same emulation: its anchor.
# EMU_MUTATE='old=>new' plants a mistake in bwd_wgmma.cu's text first (gen.py): it must FAIL.
# tools/mma_emu/run.sh hopper [step ...] - phase 4's Hopper ladder (fa2_wgmma.cu, steps 1-6, 8-10: TMA,
# mbarriers, named barriers and the persistent grid's tile counter emulated too) against an
# fp64 forward and the visit counts.
# tools/mma_emu/run.sh fp8 [d ...] - phase 4's FP8 step (wgmma-fp8, FP8 wgmma emulated) on the
# pre-pass's bytes against the CPU model fa3_fp8.c and an fp64 forward (fa3_fp8_emu.cpp).
# tools/mma_emu/run.sh decode [d ...] - phase 6's decode kernels (decode.cu: split, split-pack,
# paged, ragged, the combine, FlashDecoding++ with its combine and fallback) the same way
# (dec_emu.cpp; warp shuffles emulated), against an fp64 attention.
# tools/mma_emu/run.sh fp8q [d ...] - phase 4's FP8 pre-pass (fp8_quant.cu: e4m3 with tile
# scales, incoherent processing's Hadamard by warp shuffles) against common/fp8.c, bit for bit.
# tools/mma_emu/run.sh mask [d ...] - phase 4's fa2-mma with a FlashMask mask (fa2_mask_emu.cpp:
# the preprocessing, the order and each Q block's range done on the host as mask_gpu.cu does),
# against an fp64 attention over the visible keys, and the visit counts against the classes.
# EMU_FA2_KERNEL=PATH: fa2_mma_kernel.cuh from PATH (an exercise build's fill-in copy).
set -eu
here=$(cd "$(dirname "$0")" && pwd); root=$here/../..
out=${EMU_OUT:-${BUILD:-$root/build}/mma_emu}   # EMU_OUT: a mutant builds apart
mkdir -p "$out"
python3 "$here/gen.py" "$out"
CUDA_INC=${CUDA_HOME:-/usr/local/cuda}/include
# An emulator compiles once for the code it is made of: the preprocessed source's hash names
# its program in $out/.cache, so a run on the same code (a handout's states, filled the same
# way again) takes the program made before instead of a compile of a minute or more
cxx() {   # SOURCE OUT
    local flags=(-std=c++20 -O2 -w ${EMU_CXXFLAGS:-} -I"$out" -I"$here" -I"$root/common" -I"$root/phase6_decoding" -I"$root/phase5_backward" -I"$root/phase4_fa2" -I"$root/phase3_fa1" -I"$root/phase2_online_softmax" -I"$root/phase1_naive"
                 -I"$root/phase0_model" -I"${BUILD:-$root/build}/gen" -DFA_BLOCKS_GEN -DHAVE_CUDA=1 -I"$CUDA_INC")
    if [ -n "${EMU_DEPS:-}" ]; then   # the files it compiles, one a line: relative to the tree's
        # top, or gen:NAME for gen.py's copy of a header of that name in $out
        local gen top f
        gen=$(realpath "$out"); top=$(realpath "$root")
        g++ "${flags[@]}" -MM -x c++ "$here/$1" | tr ' \\' '\n\n' | grep -E '\.(c|cu|cuh|h|cpp|inc)$' |
            while read -r f; do
                f=$(realpath "$f")
                case "$f" in "$gen"/*) echo "gen:$(basename "$f")" ;; *) realpath --relative-to="$top" "$f" ;; esac
            done | grep -v '^\.\./' | sort -u
        return
    fi
    local key
    key=$(g++ "${flags[@]}" -E -P -x c++ "$here/$1" | cat - <(echo "${flags[*]}") | sha1sum | cut -c1-16)
    if [ -x "$out/.cache/$key/$2" ]; then cp -p "$out/.cache/$key/$2" "$out/$2"; return; fi
    g++ "${flags[@]}" -x c++ "$here/$1" -o "$out/$2" -lpthread
    mkdir -p "$out/.cache/$key" && cp -p "$out/$2" "$out/.cache/$key/$2"
}
fails=0
blamed=   # a program that names the exercises behind its FAIL itself (fa2_units.h's checks)
emu() {   # PROGRAM ARGS...: one run of a program cxx made; a FAIL counted (none under EMU_DEPS)
    [ -n "${EMU_DEPS:-}" ] && return 0
    local rc=0
    "$out/$1" "${@:2}" >"$out/$1.log" 2>&1 || rc=$?
    cat "$out/$1.log"
    [ $rc -eq 0 ] || { fails=$((fails + 1)); grep -q 'exercises behind this check: ' "$out/$1.log" && blamed=1; }
    return 0
}
if [ "${1:-}" = fp8q ]; then   # phase 4's FP8 pre-pass (fp8_quant.cu): d = 32 to 256, or those named
    shift
    cxx fp8q_emu.cpp fp8q_emu
    for d in ${@:-32 64 128 256}; do emu fp8q_emu "$d"; done
elif [ "${1:-}" = mask ]; then   # phase 4's fa2-mma with a FlashMask mask: d = 64 and 128, or those named
    shift
    cxx fa2_mask_emu.cpp fa2_mask_emu
    for d in ${@:-64 128}; do emu fa2_mask_emu "$d"; done
elif [ "${1:-}" = decode ]; then   # phase 6's decode kernels (decode.cu): every d of the four, or those named
    shift
    cxx dec_emu.cpp dec_emu
    for d in ${@:-32 64 128 256}; do emu dec_emu "$d"; done
elif [ "${1:-}" = fp8 ]; then   # phase 4's FP8 step (wgmma-fp8): d = 128 and 256, or those named
    shift
    EMU_CXXFLAGS=-fpermissive cxx fa3_fp8_emu.cpp fa3_fp8_emu   # the CPU model's C (malloc without a cast)
    for d in ${@:-128 256}; do emu fa3_fp8_emu "$d"; done
elif [ "${1:-}" = hopper ]; then   # phase 4's Hopper ladder (fa2_wgmma.cu): steps 1-6, 8-10, or those named
    shift
    cxx fa2_wgmma_emu.cpp fa2_wgmma_emu
    emu fa2_wgmma_emu ${@:-1 2 3 4 5 6 8 9 10}
elif [ "${1:-}" = wgmma ]; then   # bwd_wgmma.cu: every d of BWD_WGMMA_TABLE, or those named after it
    shift
    cxx bwd_wgmma_emu.cpp bwd_wgmma_emu
    # first the emulation itself against the hardware: phase 4's step-1 forward PASSed on an
    # H100; here it must PASS too (unless a mutant is planted, which only the backward gets)
    if [ -z "${EMU_MUTATE:-}" ]; then cxx fa2_wgmma_emu.cpp fa2_wgmma_emu; emu fa2_wgmma_emu; fi
    for d in ${@:-64 128}; do emu bwd_wgmma_emu "$d"; done
else
    cxx bwd_mma2d_emu.cpp bwd_mma2d_emu
    for d in ${@:-32 64 128 256}; do emu bwd_mma2d_emu "$d"; done
fi
# EMU_DEPS=1: no compile and no run; print the files each program would compile (the tests
# that an exercise cannot reach are found by them: testlib.sh's t_unmarked)
[ -n "${EMU_DEPS:-}" ] && exit 0
# EMU_EXERCISES="a, b": the exercises whose code the run emulates (an exercise build's
# fill-ins, EMU_FA2_KERNEL): a FAIL names them, as a phase's run does, unless the program
# named those behind its FAIL itself
[ $fails -eq 0 ] && echo "mma_emu: PASS" || { echo "mma_emu: FAIL"; [ -z "${EMU_EXERCISES:-}" ] || [ -n "$blamed" ] || echo "  -> exercises behind this check: $EMU_EXERCISES"; exit 1; }
