# phase5_backward/tests.sh - phase 5's tests (sourced by tools/run_tests.sh): the CPU
# models here, the GPU kernels where a GPU is (t_gpu: reported skipped without one).
t_units "$BUILD/test_phase5"

P5="$BUILD/phase5"
PYTHON=${PYTHON:-python3}
T5=$(mktemp -d "${TMPDIR:-/tmp}/phase5-tests.XXXXXX")
t_run   "phase5 CPU rows pass (default problem)" "$P5" --cpu --quiet --csv "$T5/cpu.csv"
t_run   "phase5 CPU rows pass (default problem, causal)" "$P5" --cpu --quiet --causal --csv "$T5/cpu1.csv"
t_run   "phase5 CPU rows pass (not causal, d=128, tails)" "$P5" --cpu --quiet --B 1 --H 2 --N 133 --d 128 --csv "$T5/cpu2.csv"
t_run   "phase5 CPU rows pass (N=1)" "$P5" --cpu --quiet --B 2 --H 2 --N 1 --d 64 --causal --csv "$T5/cpu3.csv"
# mma2d's fragment indexing without a GPU: the kernel's own code and mma.cuh's loaders on
# emulated ldmatrix / mma.sync / cp.async (tools/mma_emu), against an fp64 backward
# (t_emu: skipped, naming it, while bwd_gpu.cuh's GPU region is its stub: testlib.sh)
EMU5=phase5_backward/bwd_gpu.cuh   # the marked file both emulations compile
if [ -f "${CUDA_HOME:-/usr/local/cuda}/include/cuda_fp16.h" ]; then
    t_emu "$EMU5" t_run "phase5 mma2d on the CPU emulator (d = 32, 64): dQ, dK, dV and the visits against fp64" bash tools/mma_emu/run.sh 32 64
else t_skip "phase5 mma2d on the CPU emulator" "no CUDA headers (cuda_fp16.h)"; fi
# wgmma's (bwd_wgmma.cu, sm_90a) the same way, with wgmma.mma_async, its descriptors, the
# 128-byte swizzle and register A fragments emulated from the PTX ISA (wgmma_emu.h); and
# the emulation has teeth: one planted mistake (EMU_MUTATE) must FAIL the gradients
if [ -f "${CUDA_HOME:-/usr/local/cuda}/include/cuda_fp16.h" ]; then
    t_emu "$EMU5" t_run "phase5 wgmma on the CPU emulator (d = 64, 128): dQ, dK, dV and the visits against fp64 (after phase 4's H100-verified fa2-wgmma step 1 PASSes on it)" bash tools/mma_emu/run.sh wgmma 64 128
    wgmma_mutant() {   # NAME OLD NEW: bwd_wgmma.cu with OLD replaced by NEW must FAIL on the emulator
        t_emu "$EMU5" t_teeth --run "phase5 wgmma emulator catches $1" bash -c "
            EMU_OUT='$T5/emu-mutant' EMU_MUTATE='$2=>$3' bash tools/mma_emu/run.sh wgmma 64 >'$T5/mutant.log' 2>&1
            rc=\$?; cat '$T5/mutant.log'; [ \$rc -eq 1 ] && grep -qE '^  d=64 .*: FAIL$' '$T5/mutant.log'"
    }
    wgmma_mutant "dV += P^T dO_i, dK += dS^T Q_i with B's transpose flag dropped" 'wgmma_m64n64k16_rs<1>(acc[a]' 'wgmma_m64n64k16_rs<0>(acc[a]'
    wgmma_mutant "wgmma-dq's two partial dQ tiles (d = 64, by keys) stored into one" \
        'tiles + (C::DQ_BY_KEYS ? wg * C::DQ_TILE : 0)' 'tiles + 0'
    wgmma_mutant "dS^T stored unswizzled" 'dSs + sw128_offset(key0 + 8 * (r % 2), 16 * kk + 8 * (r / 2) + 2 * t)' \
        'dSs + (key0 + 8 * (r % 2)) * 128 + 2 * (16 * kk + 8 * (r / 2) + 2 * t)'
    t_emu "$EMU5" t_teeth --run "phase5 wgmma emulator catches dQ = dS K_j with dS^T's transpose flag dropped (reads past shared memory)" bash -c "
        EMU_OUT='$T5/emu-mutant' EMU_MUTATE='wgmma_m64n64k16_ss<1, 1>(dq[h]=>wgmma_m64n64k16_ss<1, 0>(dq[h]' \
            bash tools/mma_emu/run.sh wgmma 64 >'$T5/mutant.log' 2>&1
        rc=\$?; cat '$T5/mutant.log'; [ \$rc -eq 1 ] && grep -q 'wgmma_emu: operand read past' '$T5/mutant.log'"
else t_skip "phase5 wgmma on the CPU emulator" "no CUDA headers (cuda_fp16.h)"; fi
t_run   "phase5 CPU rows pass (GQA 8:1, N_q < N_kv, causal, d=32)" "$P5" --cpu --quiet --B 1 --H 8 --Hkv 1 --N 50 --Nkv 170 --d 32 --causal --csv "$T5/cpu4.csv"
t_run   "phase5 CPU rows pass (N_q > N_kv causal: fully masked rows)" "$P5" --cpu --quiet --B 1 --H 2 --N 150 --Nkv 40 --d 64 --causal --csv "$T5/cpu5.csv"
t_run   "phase5 CPU rows pass (MQA H=4 Hkv=1, d=128, causal)" "$P5" --cpu --quiet --B 2 --H 4 --Hkv 1 --N 97 --d 128 --causal --csv "$T5/cpu6.csv"
# bytes == formula on every CPU row of a run: the CSV's hbm_model and hbm_formula columns
t_run   "phase5 CSV: every model row's counted bytes == its formula" bash -c "
    awk -F, '!/^#/ && \$1 != \"kernel\" && \$15 != \"\" { n++; if (\$15 != \$16) bad++ } END { exit !(n >= 3 && !bad) }' \"$T5/cpu5.csv\""
t_run   "phase5 model sweep bytes == formulas, memory wall printed" bash -c "\"$P5\" --sweep --cpu --quiet --csv \"$T5/sweep.csv\" >\"$T5/sweep.log\" && grep -q 'sweep PASS' \"$T5/sweep.log\" && grep -q 'memory wall .*past 80 GB from N = ' \"$T5/sweep.log\""
t_exit2_says "phase5 --sweep refuses --d (its problems are its own)" "sweep.*ignores --d" "$P5" --sweep --d 128
t_exit2_says "phase5 --sweep refuses --Nkv" "sweep.*ignores --Nkv" "$P5" --sweep --causal --Nkv 100
t_bounded "phase5 --cpu --sweep --causal ends within 10 s and 2 GB" 10 2048 "$P5" --cpu --sweep --causal --quiet --csv "$T5/bound.csv"
t_run   "phase5 default run prints the worked example" bash -c "
    \"$P5\" --cpu --csv \"$T5/d.csv\" >\"$T5/d.log\" && grep -q '58 checks, 0 failed' \"$T5/d.log\""

# The independent NumPy cross-check of the gradients (tools/check_numpy.py): the CPU FA2
# model's here; on a GPU the mma kernel's (fp16 inputs: the fp16 kernel bounds).
if "$PYTHON" -c "import numpy" >/dev/null 2>&1; then
    t_run "phase5 --cpu --dump (GQA, causal, N_q < N_kv)" "$P5" --cpu --quiet --B 1 --H 4 --Hkv 2 --N 40 --Nkv 70 --d 32 --causal \
          --dump "$T5/dump1" --csv "$T5/dump1.csv"
    t_run "numpy cross-check of phase5's CPU gradients" "$PYTHON" tools/check_numpy.py "$T5/dump1"
    t_fail "numpy cross-check catches a wrong dK" bash -c "cp -r '$T5/dump1' '$T5/bad' &&
        '$PYTHON' -c \"import numpy as np; x = np.load('$T5/bad/dK.npy'); x[0, 1, 2, 3] += 1e-2; np.save('$T5/bad/dK.npy', x)\" &&
        '$PYTHON' tools/check_numpy.py '$T5/bad'"
    # an incomplete dump is said to be one (exit 2), never a PASS on what is left
    for f in dO dQ; do
        rm -rf "$T5/inc_$f"; cp -r "$T5/dump1" "$T5/inc_$f"; rm -f "$T5/inc_$f/$f.npy"
        t_exit2_says "numpy cross-check of a dump without $f.npy says it is missing" "$f.npy is missing" \
            "$PYTHON" tools/check_numpy.py "$T5/inc_$f"
    done
    rm -rf "$T5/inc_O"; cp -r "$T5/dump1" "$T5/inc_O"; printf 'abcd' >>"$T5/inc_O/O.npy"
    t_exit2_says "numpy cross-check of a dump whose O.npy has 4 bytes more than its header says" "bytes past the data" \
        "$PYTHON" tools/check_numpy.py "$T5/inc_O"
    # a reused folder: phase 4's forward dump over phase 5's masked one (dO, dQ, dK, dV, mask_runs left)
    t_run_for "phase4 phase5" "numpy cross-check of a forward dump in a folder a masked backward dump used passes" bash -c "
        \"$P5\" --cpu --quiet --B 1 --H 2 --N 60 --d 32 --mask sliding:20 --dump '$T5/reuse' --csv '$T5/reuse.csv' &&
        \"$BUILD/phase4\" --cpu --quiet --B 1 --H 2 --N 50 --d 32 --dump '$T5/reuse' --csv '$T5/reuse.csv' &&
        '$PYTHON' tools/check_numpy.py '$T5/reuse'"
    t_gpu "phase5 gpu --dump: numpy cross-check of mma's gradients (GQA 4:1, causal, tails)" bash -c "
        \"$P5\" --quiet --iters 1 --B 2 --H 4 --Hkv 1 --N 150 --Nkv 211 --d 64 --causal --kernel mma --dump \"$T5/gdump\" --csv \"$T5/gd.csv\" &&
        \"$PYTHON\" tools/check_numpy.py --tol 3e-3 --gtol 1e-2 \"$T5/gdump\""
else
    t_skip "numpy cross-check of phase5's dump" "NumPy missing for $PYTHON: install it with '$PYTHON -m pip install numpy' (or make deps)"
fi

# GPU: every kernel's dQ, dK, dV against the fp64 oracle (2x rule against std) and std's,
# on the shape families of phases 1-4 (tails, N = 1, N_q != N_kv causal, fully masked
# rows, GQA 8:1 and MQA, d = 32/64/128; simple and mma2d also d = 256)
for d in 32 64 128; do
    for N in 1 77 256 1000; do
        for c in "" --causal; do
            t_gpu "phase5 gpu d=$d N=$N ${c:-full} (std, simple, mma, mma2d, wgmma, wgmma-dq, two-pass, noskip vs oracle and std)" \
                "$P5" --quiet --iters 2 --B 2 --H 2 --N $N --d $d $c --csv "$T5/g.csv"
        done
    done
done
# the run `make phase5 run` does, not --quiet: every row, the notes; the other
# GPU tests are --quiet, and a table one row too long once overflowed only here
t_gpu "phase5 gpu: the default run, not quiet, PASSes" "$P5" --causal --csv "$T5/default.csv"
t_gpu "phase5 gpu N_q=300 N_kv=1000 causal" "$P5" --quiet --iters 2 --B 2 --H 2 --N 300 --Nkv 1000 --d 64 --causal --csv "$T5/g.csv"
t_gpu "phase5 gpu N_q=1000 N_kv=300 causal (fully masked rows)" "$P5" --quiet --iters 2 --B 2 --H 2 --N 1000 --Nkv 300 --d 128 --causal --csv "$T5/g.csv"
t_gpu "phase5 gpu GQA 8:1 H=16 Hkv=2 d=128 causal" "$P5" --quiet --iters 2 --B 2 --H 16 --Hkv 2 --N 333 --d 128 --causal --csv "$T5/g.csv"
t_gpu "phase5 gpu MQA H=8 Hkv=1 d=64 N_q != N_kv" "$P5" --quiet --iters 2 --B 3 --H 8 --Hkv 1 --N 100 --Nkv 257 --d 64 --csv "$T5/g.csv"
t_gpu "phase5 gpu d=256 (simple, mma2d; mma n/a)" "$P5" --quiet --iters 2 --B 1 --H 2 --N 200 --d 256 --causal --csv "$T5/g.csv"
# mma2d (bwd_mma2d.cu): its own shapes at every d it is built for: GQA 4:1 with tails in
# both N_q and N_kv (not multiples of Br, Bc), N_q < N_kv and N_q > N_kv causal (fully
# masked rows), and d = 256 (its 64 x 64 blocks)
for d in 32 64 128 256; do
    t_gpu "phase5 gpu mma2d d=$d GQA 4:1 N_q=150 N_kv=211 causal" \
        "$P5" --quiet --iters 2 --B 2 --H 8 --Hkv 2 --N 150 --Nkv 211 --d $d --causal --kernel mma2d --csv "$T5/g.csv"
    t_gpu "phase5 gpu mma2d d=$d N_q=333 N_kv=100 causal (fully masked rows)" \
        "$P5" --quiet --iters 2 --B 1 --H 2 --N 333 --Nkv 100 --d $d --causal --kernel mma2d --csv "$T5/g.csv"
    t_gpu "phase5 gpu mma2d d=$d N=1000 full" \
        "$P5" --quiet --iters 2 --B 1 --H 2 --N 1000 --d $d --kernel mma2d --csv "$T5/g.csv"
done
# wgmma, wgmma-dq (bwd_wgmma.cu) and wgmma-ws, wgmma-det (bwd_wgmma_ws.cu), sm_90a: the same
# shapes at d = 64 and 128 (their rows), and N = 1; wgmma-det's row also reruns itself and
# FAILs unless the gradients come back bit for bit.
# On a GPU other than sm_90 its row says skipped with the reason, and so does the test.
wgmma5_skip_reason() {
    local why; why=$(gpu_skip_reason)
    [ -n "$why" ] || why=$("$P5" --quiet --iters 1 --B 1 --H 2 --N 64 --d 64 --kernel wgmma --csv "$T5/wgp.csv" 2>&1 |
        grep -o 'skipped wgmma (gpu): .*' | head -n 1 | sed 's/^skipped wgmma (gpu): //')
    echo "$why"
}
WG5_WHY=$(wgmma5_skip_reason)
wgmma5_case() {   # KERNEL NAME ARGS...: the KERNEL row (wgmma, wgmma-dq, wgmma-ws, wgmma-det; and std's, the yardstick) PASS
    local k=$1 name=$2; shift 2
    if [ -n "$WG5_WHY" ]; then t_skip "$name" "$WG5_WHY"; return; fi
    t_run "$name" bash -c "\"\$0\" --kernel $k --iters 2 \"\$@\" --csv '$T5/wg.csv' >'$T5/wg.log' 2>&1; rc=\$?; cat '$T5/wg.log'
        [ \$rc -eq 0 ] && awk '\$1 == \"$k\" && \$2 == \"gpu\" { n++; if (\$NF != \"PASS\") bad = 1 } END { exit !(n == 1 && !bad) }' '$T5/wg.log'" "$P5" "$@"
}
for k in wgmma wgmma-dq wgmma-ws wgmma-det; do
    for d in 64 128; do
        wgmma5_case $k "phase5 gpu $k d=$d GQA 4:1 N_q=150 N_kv=211 causal" --B 2 --H 8 --Hkv 2 --N 150 --Nkv 211 --d $d --causal
        wgmma5_case $k "phase5 gpu $k d=$d N_q=333 N_kv=100 causal (fully masked rows)" --B 1 --H 2 --N 333 --Nkv 100 --d $d --causal
        wgmma5_case $k "phase5 gpu $k d=$d N=1000 full" --B 1 --H 2 --N 1000 --d $d
        wgmma5_case $k "phase5 gpu $k d=$d N=1" --B 2 --H 2 --N 1 --d $d --causal
    done
    wgmma5_case $k "phase5 gpu $k large problem: sampled dQ rows (B=4 H=16 N=2048 d=128 causal)" --B 4 --H 16 --N 2048 --d 128 --causal
    wgmma5_case $k "phase5 gpu $k large problem: sampled dQ rows (B=4 H=32 N=2048 d=64 causal)" --B 4 --H 32 --N 2048 --d 64 --causal
done
for k in wgmma wgmma-dq wgmma-ws wgmma-det; do
    if [ -n "$WG5_WHY" ]; then t_skip "phase5 gpu $k: a deleted causal range FAILs on the visit counters" "$WG5_WHY"
    else t_run "phase5 gpu $k: a deleted causal range FAILs on the visit counters" bash tools/visits_fail.sh "$k" \
        "$P5" --quiet --iters 1 --B 1 --H 4 --Hkv 2 --N 300 --d 64 --causal --kernel $k --csv "$T5/vaw.csv"; fi
done
t_gpu "phase5 gpu large problem: sampled dQ rows vs the oracle (B=4 H=16 N=2048 d=128 causal)" \
    "$P5" --quiet --iters 2 --B 4 --H 16 --N 2048 --d 128 --causal --kernel mma --csv "$T5/g.csv"
t_gpu "phase5 gpu large problem, mma2d: sampled dQ rows vs the oracle (B=4 H=16 N=2048 d=128 causal)" \
    "$P5" --quiet --iters 2 --B 4 --H 16 --N 2048 --d 128 --causal --kernel mma2d --csv "$T5/g.csv"
# B = 48: S, P, dP, dS take 206 GB, past every GPU's memory (an H200 holds B = 32's 137 GB)
t_gpu "phase5 gpu past the memory wall: std OOM (S, P, dP, dS: 206 GB), mma runs and passes (B=48 H=8 N=8192 d=64 causal)" bash -c "
    \"$P5\" --quiet --iters 1 --B 48 --H 8 --N 8192 --d 64 --causal --kernel mma --csv \"$T5/wall.csv\" >\"$T5/wall.log\" 2>&1
    awk -F, '!/^#/ && \$2 == \"gpu\" { v[\$1] = \$NF } END { exit !(v[\"mma\"] == \"PASS\") }' \"$T5/wall.csv\" &&
    grep -q 'std .*S, P, dP, dS (fp16) do not fit in device memory' \"$T5/wall.log\""
t_gpu "phase5 gpu two-pass is bit-identical on a rerun, every kernel row PASS (wgmma: or skipped off sm_90)" bash -c "
    \"$P5\" --iters 2 --B 2 --H 4 --N 700 --d 64 --causal --csv \"$T5/det.csv\" >\"$T5/det.log\" &&
    grep -q 'two-pass: none, checked bit for bit' \"$T5/det.log\" &&
    awk -F, '!/^#/ && \$2 == \"gpu\" { n++; if (\$NF != \"PASS\" && !(\$1 ~ /^wgmma/ && \$NF == \"skipped\")) bad++ } END { exit !(n >= 6 && !bad) }' \"$T5/det.csv\""
# FlashMask's masks (chapter 4c) in the backward's CPU models: the tiles a K/V block visits
# classified from its column block's min and max, fully masked ones skipped (Q_i, dO_i not
# read); dQ, dK, dV against the fp64 oracle and the standard backward, the bytes == the formula.
for m in full causal sliding:64 causal_document:100,150,60 document:200 shared_question:100,60,70 \
         global_sliding:16,64 causal_blockwise:100,100 prefix_lm_causal:128 prefix_lm_document:50,200,40,100 \
         qk_sparse:100,50,200,40 random_eviction:7; do
    t_run "phase5 CPU rows pass, --mask $m (GQA 2:1, N_q=300 N_kv=333, d=64)" \
        "$P5" --cpu --quiet --B 1 --H 4 --Hkv 2 --N 300 --Nkv 333 --d 64 --mask $m --csv "$T5/m.csv"
done
t_run "phase5 CPU rows pass, --mask document:200 d=128" "$P5" --cpu --quiet --B 1 --H 2 --N 300 --Nkv 333 --d 128 --mask document:200 --csv "$T5/m.csv"
t_run "phase5 CPU rows pass, --mask sliding:40, N_q=333 N_kv=100 (rows that see no key)" \
    "$P5" --cpu --quiet --B 1 --H 2 --N 333 --Nkv 100 --d 64 --mask sliding:40 --csv "$T5/m.csv"
t_run "phase5 --mask: fewer bytes than without it (causal_document skips its fully masked tiles)" bash -c "
    \"$P5\" --cpu --quiet --B 1 --H 2 --N 300 --d 64 --mask full --csv '$T5/mf.csv' &&
    \"$P5\" --cpu --quiet --B 1 --H 2 --N 300 --d 64 --mask causal_document:100,150,50 --csv '$T5/mc.csv' &&
    f=\$(awk -F, '\$1 == \"fa2-bwd\" { print \$15 }' '$T5/mf.csv') && c=\$(awk -F, '\$1 == \"fa2-bwd\" { print \$15 }' '$T5/mc.csv') &&
    [ -n \"\$c\" ] && [ \"\$c\" -lt \"\$f\" ]"
# The kernels without a mask path refuse --mask: one line naming the ones that have one
for k in std simple mma2d wgmma wgmma-dq wgmma-det two-pass noskip fwd-bwd; do
    t_exit2_says "phase5 refuses --mask for $k (no mask path)" "kernel $k has no mask path: with --mask use --kernel mma, wgmma-ws" \
        "$P5" --kernel $k --mask causal
done
t_run "phase5 --kernel mma --mask is taken (the CPU rows with --cpu)" "$P5" --cpu --quiet --kernel mma --B 1 --H 2 --N 200 --d 64 \
    --mask sliding:40 --csv "$T5/mk.csv"
t_run "phase5 --kernel wgmma-ws --mask is taken (the CPU rows with --cpu)" "$P5" --cpu --quiet --kernel wgmma-ws --B 1 --H 2 --N 200 \
    --d 64 --mask sliding:40 --csv "$T5/mk.csv"
# On the GPU: mma's and wgmma-ws's mask paths (bwd_mma.cu, bwd_wgmma_ws.cu: per K/V block the
# Q blocks whose tile is not fully masked, listed from the preprocessing pass's min/max;
# partial tiles test each element): dQ, dK, dV against the fp64 oracle (2x rule against the
# standard backward's fp16 passes, emulated on the CPU: bwd_std.cu has no mask path) and
# against those passes' gradients, the visit counters against the mask's tile classes. Every
# mask at d = 64 and 128, GQA 2:1 with tails (N_q = 300, N_kv = 333: no multiple of Br or
# Bc); N_q > N_kv (rows that see no key: L = +inf, P = 0); --mask causal also reruns the
# --causal path and FAILs unless dK, dV match bit for bit; a large problem (sampled dQ rows).
# --kernel all runs both kernels of a mask path; wgmma-ws is skipped off sm_90 (WG5_WHY).
masked5_case() {   # NAME ARGS...: the mma row PASS, and the wgmma-ws row PASS (or skipped off sm_90)
    local name=$1; shift
    if [ -n "$(gpu_skip_reason)" ]; then t_skip "$name" "$(gpu_skip_reason)"; return; fi
    t_run "$name" bash -c "\"\$0\" --kernel all --iters 2 \"\$@\" --csv '$T5/gm.csv' >'$T5/gm.log' 2>&1; rc=\$?; cat '$T5/gm.log'
        [ \$rc -eq 0 ] && awk -v ws_skip='${WG5_WHY:+1}' '\$2 == \"gpu\" && \$1 == \"mma\" { m++; if (\$NF != \"PASS\") bad = 1 }
            \$2 == \"gpu\" && \$1 == \"wgmma-ws\" { w++; if (\$NF != \"PASS\" && !(ws_skip && \$NF == \"skipped\")) bad = 1 }
            END { exit !(m == 1 && w == 1 && !bad) }' '$T5/gm.log'" "$P5" "$@"
}
for m in full causal sliding:64 causal_document:100,150,60 document:200 shared_question:100,60,70 \
         global_sliding:16,64 causal_blockwise:100,100 prefix_lm_causal:128 prefix_lm_document:50,200,40,100 \
         qk_sparse:100,50,200,40 random_eviction:7; do
    for d in 64 128; do
        masked5_case "phase5 gpu mma, wgmma-ws --mask $m d=$d (GQA 2:1, N_q=300 N_kv=333)" \
            --B 2 --H 4 --Hkv 2 --N 300 --Nkv 333 --d $d --mask $m
    done
done
for m in causal sliding:40 document:60 prefix_lm_causal:30; do
    masked5_case "phase5 gpu mma, wgmma-ws --mask $m, N_q=333 N_kv=100 (rows that see no key)" \
        --B 1 --H 4 --Hkv 2 --N 333 --Nkv 100 --d 64 --mask $m
done
for shape in "--N 1" "--N 200 --Nkv 1000" "--N 1000 --Nkv 300" "--N 4096 --B 2 --H 8"; do
    masked5_case "phase5 gpu mma, wgmma-ws --mask causal == --causal bit for bit in dK, dV ($shape, d=128)" \
        $shape --d 128 --mask causal
done
t_gpu "phase5 gpu mma --mask sliding:64 d=32 (GQA 2:1, N_q=300 N_kv=333)" "$P5" --quiet --iters 2 --kernel mma \
    --B 2 --H 4 --Hkv 2 --N 300 --Nkv 333 --d 32 --mask sliding:64 --csv "$T5/gm.csv"
masked5_case "phase5 gpu mma, wgmma-ws --mask causal_document large problem (B=2 H=16 N=4096 d=128, sampled dQ rows)" \
    --B 2 --H 16 --N 4096 --d 128 --mask causal_document:1000,1500,700
if [ -n "$(gpu_skip_reason)" ]; then t_skip "phase5 gpu mma --mask: visiting every tile FAILs on the counters" "$(gpu_skip_reason)"
else t_run "phase5 gpu mma --mask: visiting every tile FAILs on the counters" bash tools/visits_fail.sh mma \
    "$P5" --quiet --iters 1 --kernel mma --B 1 --H 2 --N 600 --d 64 --mask sliding:100 --csv "$T5/gv.csv"; fi
if [ -n "$WG5_WHY" ]; then t_skip "phase5 gpu wgmma-ws --mask: visiting every tile FAILs on the counters" "$WG5_WHY"
else t_run "phase5 gpu wgmma-ws --mask: visiting every tile FAILs on the counters" bash tools/visits_fail.sh wgmma-ws \
    "$P5" --quiet --iters 1 --kernel wgmma-ws --B 1 --H 2 --N 600 --d 64 --mask sliding:100 --csv "$T5/gv.csv"; fi
t_exit2_says "phase5 --sweep refuses --mask" "sweep.*ignores --mask" "$P5" --sweep --mask causal
t_exit2 "phase5 rejects an unknown kernel"   "$P5" --kernel flash
t_exit2 "phase5 rejects d=48"                "$P5" --d 48
t_exit2 "phase5 rejects H % Hkv != 0"        "$P5" --H 6 --Hkv 4
t_exit2 "phase5 rejects N=0"                 "$P5" --N 0
t_exit2 "phase5 rejects --sram (no SRAM knob here)" "$P5" --sram 4096
t_exit2 "phase5 rejects an unknown flag"     "$P5" --frobnicate

# The visit counters (common/gpu.h): with the causal ranges deleted (FA_TEST_VISIT_ALL=1)
# the gradients stay right (the mask zeroes the extra blocks), and only the counters FAIL
# the rows that skip, naming the K/V block (two-pass: and its dQ kernel's Q blocks).
t_gpu "phase5 gpu simple, mma, mma2d, two-pass: a deleted causal range FAILs on the visit counters" bash tools/visits_fail.sh \
    "simple mma mma2d two-pass" "$P5" --quiet --iters 1 --B 1 --H 4 --Hkv 2 --N 300 --d 64 --causal --csv "$T5/va.csv"

# The grader catches these mistakes: `make phase5 run EX=1` built from the reference with
# ONE mistake in an exercise must FAIL and name that exercise (phase5_EX_RUNS adds the
# edge shapes). CPU only. Skipped where the reference is cut (a handout).
F5=phase5_backward/bwd_cpu.c
ex_mistake "EX=1 catches bwd.causal_range aligned top-left (N_kv - N_q forgotten)" phase5 $F5 bwd.causal_range 1 's/ - (p->N_kv - p->N_q)//'
ex_mistake "EX=1 catches bwd.causal_range off by one block (row / Br + 1)" phase5 $F5 bwd.causal_range 4 's|row / Br|row / Br + 1|'
ex_mistake "EX=1 catches bwd.D with a sign flipped" phase5 $F5 bwd.D 1 's/+=/-=/'
ex_mistake "EX=1 catches bwd.dS without D" phase5 $F5 bwd.dS 1 '=dS[c] = P[c] * dp;'
ex_mistake "EX=1 catches bwd.recompute_P without the mask" phase5 $F5 bwd.recompute_P 1 '=P[c] = expf(s - Li[r]);'
ex_mistake "EX=1 catches bwd.dQ overwriting instead of adding" phase5 $F5 bwd.dQ 1 's/+=/=/'
ex_mistake "EX=1 catches bwd.dQ without the scale" phase5 $F5 bwd.dQ 1 's/scale \* s/s/'

# ---- bounded, and valid means PASS : every accepted problem's CPU rows end
# within 10 s under 2 GB (ulimit -v + timeout 10) and PASS; shapes cheap in FLOPs but
# huge in rows or elements run a smaller problem (problem.h: ATTN_CPU_MAX_ROWS, _ELEMS)
t_run "phase5 CPU rows bounded and PASS: N_q = 10^6 rows against 1 key" "${BOUNDED[@]}" "$P5" --cpu --quiet --N 1000000 --Nkv 1 --H 1 --Hkv 1 --csv "$T_ROOT/bound-phase5.csv"
t_run "phase5 CPU rows bounded and PASS: B = 2x10^6 single-token sequences" "${BOUNDED[@]}" "$P5" --cpu --quiet --B 2000000 --N 1 --Nkv 1 --d 16 --csv "$T_ROOT/bound-phase5.csv"
t_run "phase5 CPU rows bounded and PASS: H = Hkv = 10^6 heads (host check: the CPU rows' problem, not the whole)" "${BOUNDED[@]}" "$P5" --cpu --quiet --H 1000000 --Hkv 1000000 --csv "$T_ROOT/bound-phase5.csv"
t_run "phase5 CPU rows bounded and PASS: N_kv = 1 (dQ = 0 exactly: max abs judges it)" "${BOUNDED[@]}" "$P5" --cpu --quiet --Nkv 1 --csv "$T_ROOT/bound-phase5.csv"
t_run "phase5 CPU rows bounded and PASS: N_q = 2, N_kv = 1 (dQ = 0)" "${BOUNDED[@]}" "$P5" --cpu --quiet --N 2 --Nkv 1 --csv "$T_ROOT/bound-phase5.csv"
t_run "phase5 CPU rows bounded and PASS: N_q = 10^5 against 1 key" "${BOUNDED[@]}" "$P5" --cpu --quiet --B 1 --H 1 --N 100000 --Nkv 1 --csv "$T_ROOT/bound-phase5.csv"
t_run "phase5 CPU rows bounded and PASS: 4096 rows (the row cap) against 1 key (dV ~ 64)" "${BOUNDED[@]}" "$P5" --cpu --quiet --B 1 --H 1 --Hkv 1 --N 4096 --Nkv 1 --csv "$T_ROOT/bound-phase5.csv"
t_run "phase5 CPU rows bounded and PASS: a 2^18-key cache at d = 16 (rel L2 of long sums, check.h)" "${BOUNDED[@]}" "$P5" --cpu --quiet --B 1 --H 1 --Hkv 1 --N 1 --Nkv 262144 --d 16 --csv "$T_ROOT/bound-phase5.csv"
t_run "phase5 --Nkv 1: no FAIL line (dQ = 0: the reason and the verdict agree)" bash -c "! \"$P5\" --cpu --Nkv 1 --csv \"$T_ROOT/bound-l.csv\" | grep -q FAIL"

# ---- masks at any N: the vectors are bounded up front (they were built past the host check) ----
t_exit2_says "phase5 --cpu --mask causal at N = 4x10^8 is refused up front (6 GiB of vectors)" \
    "builds at most 512 MiB" "$P5" --cpu --N 400000000 --mask causal --csv "$T_ROOT/mask-bound5.csv"
t_run "phase5 --cpu --mask sliding:1000 at N = 3x10^7: bounded and PASS" "${BOUNDED[@]}" "$P5" --cpu --quiet --N 30000000 --mask sliding:1000 --csv "$T_ROOT/mask-bound5.csv"
