#!/usr/bin/env bash
# tools/families_check.sh OUTDIR [phase5] [phase6] - the backward's and the decode kernels'
# GPU checks in one go (phase 4's Hopper ladder: tools/hopper_fwd_check.sh): every kernel of the
# phase (--kernel all) on the shape families of its tests (tails, GQA, N_q != N_kv both ways,
# fully masked rows, long caches, d = 32 to 256), then compute-sanitizer (memcheck, racecheck)
# on a small shape. Each run is the driver's own check (oracle, the previous phase, the visit
# counters); a line a run in OUTDIR/families_check.txt.
set -u
out=$1; shift; mkdir -p "$out"; log=$out/families_check.txt; : >"$log"; fails=0
phases=("$@"); [ ${#phases[@]} -gt 0 ] || phases=(phase5 phase6)
run() {   # NAME CMD...: PASS when the driver exits 0 and prints no FAIL row
    local name=$1; shift
    if "$@" >"$out/last.log" 2>&1 && ! grep -q ' FAIL' "$out/last.log"; then echo "PASS  $name" >>"$log"
    else echo "FAIL  $name" >>"$log"; tail -n 20 "$out/last.log" >>"$log"; fails=$((fails + 1)); fi
}
san() { run "$1 $2" compute-sanitizer --tool "$1" --error-exitcode 9 "${@:3}"; }
for ph in "${phases[@]}"; do
  case $ph in
  phase5)
    for s in "--B 2 --H 2 --N 300 --Nkv 1000 --d 64 --causal" "--B 2 --H 2 --N 1000 --Nkv 300 --d 128 --causal" \
             "--B 2 --H 16 --Hkv 2 --N 333 --d 128 --causal" "--B 3 --H 8 --Hkv 1 --N 100 --Nkv 257 --d 64" \
             "--B 1 --H 2 --N 200 --d 256 --causal" "--B 4 --H 16 --N 4096 --d 128 --causal"; do
        run "phase5 all $s" build/phase5 --quiet --iters 2 $s
    done
    for k in wgmma wgmma-dq wgmma-ws wgmma-det; do
        run "phase5 $k d=64 full N=1000" build/phase5 --kernel $k --quiet --iters 2 --B 1 --H 4 --N 1000 --d 64
    done
    for t in memcheck racecheck; do for d in 64 128; do
        san $t "phase5 all d=$d" build/phase5 --quiet --iters 1 --B 1 --H 4 --Hkv 2 --N 200 --Nkv 77 --d $d --causal
    done; done ;;
  phase6)
    for s in "--H 32 --Hkv 8 --N 1 --Nkv 100000 --d 128" "--H 8 --Hkv 2 --N 4 --Nkv 100000 --d 128 --causal" \
             "--H 32 --Hkv 8 --N 1 --Nkv 1000 --d 64" "--H 32 --Hkv 4 --N 4 --Nkv 4097 --d 128 --causal" \
             "--H 32 --Hkv 1 --N 16 --Nkv 1000 --d 128 --causal" "--B 3 --H 8 --Hkv 8 --N 1 --Nkv 100000 --d 64" \
             "--H 4 --Hkv 1 --N 16 --Nkv 7 --d 64 --causal" "--H 4 --Hkv 2 --N 4 --Nkv 500 --d 32 --causal" \
             "--H 8 --Hkv 2 --N 4 --Nkv 3000 --d 256 --causal"; do
        run "phase6 all $s" build/phase6 --quiet --iters 2 $s
    done
    run "phase6 FA_SPLITS=7 GQA 8:2 N_q=4 L=3000" env FA_SPLITS=7 build/phase6 --quiet --iters 2 --B 2 --H 8 --Hkv 2 --N 4 --Nkv 3000 --d 128 --causal
    for t in memcheck racecheck; do for d in 64 128; do
        san $t "phase6 all d=$d" build/phase6 --quiet --iters 1 --B 2 --H 8 --Hkv 2 --N 4 --Nkv 700 --d $d --causal
    done; done ;;
  esac
done
echo "$(grep -c '^PASS' "$log") passed, $fails failed" | tee -a "$log"
exit $((fails != 0))
