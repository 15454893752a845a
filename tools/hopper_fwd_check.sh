#!/usr/bin/env bash
# tools/hopper_fwd_check.sh OUTDIR - the Hopper forward ladder on a GPU in one go: every fp16
# step (--kernel wgmma) and every FP8 row (tools/kernels.sh) on the shape families (tails,
# GQA with N_q < N_kv causal, fully masked rows, N = 1, a large sampled problem), wgmma-ws's
# mask path, then compute-sanitizer (memcheck, racecheck) on a small shape of each. Each run is
# the driver's own check (oracle, fa2-mma, visit counters); a line a run in OUTDIR/hopper_check.txt.
set -u
out=$1; mkdir -p "$out"; P4=build/phase4; log=$out/hopper_check.txt; : >"$log"; fails=0
run() {   # NAME CMD...: PASS when the driver exits 0 and prints no FAIL row
    local name=$1; shift
    if "$@" >"$out/last.log" 2>&1 && ! grep -q ' FAIL' "$out/last.log"; then echo "PASS  $name" >>"$log"
    else echo "FAIL  $name" >>"$log"; tail -n 20 "$out/last.log" >>"$log"; fails=$((fails + 1)); fi
}
SHAPES=("--B 2 --H 4 --N 300 --d 64" "--B 1 --H 2 --N 333 --d 128 --causal" "--B 1 --H 8 --Hkv 1 --N 50 --Nkv 170 --d 64 --causal"
        "--B 1 --H 2 --N 150 --Nkv 40 --d 128 --causal" "--B 2 --H 2 --N 1 --d 128" "--B 4 --H 16 --N 4096 --d 128 --causal"
        "--B 1 --H 2 --N 300 --Nkv 333 --d 256 --causal")
for s in "${SHAPES[@]}"; do run "wgmma (every step) $s" $P4 --kernel wgmma --iters 2 --quiet $s; done
for k in $(bash tools/kernels.sh phase4-fp8 --names); do
    for s in "--B 2 --H 4 --N 300 --d 128" "--B 1 --H 8 --Hkv 1 --N 50 --Nkv 170 --d 128 --causal" \
             "--B 1 --H 2 --N 150 --Nkv 40 --d 256 --causal" "--B 4 --H 16 --N 4096 --d 128 --causal"; do
        run "$k $s" $P4 --kernel "$k" --iters 2 --quiet $s
    done
done
for d in 64 128; do for m in sliding:40 document:30 causal; do
    run "wgmma-ws --mask $m d=$d" $P4 --kernel wgmma-ws --iters 2 --quiet --B 1 --H 4 --Hkv 2 --N 300 --Nkv 333 --d $d --mask $m
done; done
for t in memcheck racecheck; do
    for s in "--d 64" "--d 128"; do
        run "$t wgmma (every step) $s" compute-sanitizer --tool $t --error-exitcode 9 $P4 --kernel wgmma --iters 1 --quiet --B 1 --H 4 --Hkv 2 --N 200 --Nkv 77 --causal $s
    done
    run "$t wgmma-fp8-pingpong d=128" compute-sanitizer --tool $t --error-exitcode 9 $P4 --kernel wgmma-fp8-pingpong --iters 1 --quiet --B 1 --H 4 --Hkv 2 --N 200 --Nkv 77 --causal --d 128
    run "$t wgmma-ws --mask sliding:40" compute-sanitizer --tool $t --error-exitcode 9 $P4 --kernel wgmma-ws --iters 1 --quiet --B 1 --H 4 --Hkv 2 --N 200 --Nkv 77 --d 128 --mask sliding:40
done
echo "$(grep -c '^PASS' "$log") passed, $fails failed" | tee -a "$log"
exit $((fails != 0))
