#!/usr/bin/env bash
# tools/ab_speed.sh BASE OUTDIR - a restructuring's speed, before against after, in one call on
# the GPU: the tree BASE (a copy of the commit before, e.g. `git archive REV | tar -x -C BASE`)
# and this tree are built alike (sm_90/sm_90a), then every Hopper forward step, every Hopper
# backward kernel and every decode kernel is timed on the shapes of record, the two builds in
# turn (before, after, before, after ...: AB_ROUNDS rounds), each run its phase's own checked,
# CUDA-event-timed row (median of --iters). Writes OUTDIR/ab_table.txt (a row a kernel and
# shape: the medians of the rounds, after / before) and OUTDIR/ab_sass.txt (each kernel's SASS
# instruction count and local-memory accesses in both builds, tools/sass_count.sh). A kernel
# only one tree has (a new row) is timed there alone: its ratio is nan. AB_ONLY
# (a grep -E pattern) keeps the runs whose names match.
set -u
base=$(cd "$1" && pwd); out=$2; here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${AB_ROUNDS:-3}
mkdir -p "$out/raw"
build() { (cd "$1" && make -j"$(nproc)" CUDA_ARCH=sm_90 NO_DEPS=1 phase4-build phase5-build phase6-build >"$out/raw/build_$2.log" 2>&1) || { echo "build $2 FAILED"; tail -20 "$out/raw/build_$2.log"; exit 1; }; }
build "$base" before & build "$here" after & wait
# the runs: NAME|PHASE|ARGS (each prints one CSV row a kernel)
RUNS=(
  "fwd d128|phase4|--kernel wgmma --B 4 --H 16 --N 4096 --d 128"
  "fwd d128 causal|phase4|--kernel wgmma --B 4 --H 16 --N 4096 --d 128 --causal"
  "fwd d64|phase4|--kernel wgmma --B 4 --H 32 --N 4096 --d 64"
  "fwd d256|phase4|--kernel wgmma --B 4 --H 8 --N 4096 --d 256"
  "fp8 d128|phase4|--kernel wgmma-fp8 --B 4 --H 16 --N 4096 --d 128"
  "fp8 d256|phase4|--kernel wgmma-fp8 --B 4 --H 8 --N 4096 --d 256"
  "fp8 pp d128|phase4|--kernel wgmma-fp8-pingpong --B 4 --H 16 --N 4096 --d 128"
  "fp8 fma d128|phase4|--kernel wgmma-fp8-fmaex2 --B 4 --H 16 --N 4096 --d 128"
  "bwd d128|phase5|--kernel wgmma --B 4 --H 16 --N 4096 --d 128 --causal"
  "bwd-ws d128|phase5|--kernel wgmma-ws --B 4 --H 16 --N 4096 --d 128 --causal"
  "bwd-ws d64|phase5|--kernel wgmma-ws --B 4 --H 32 --N 4096 --d 64 --causal"
  "bwd-dq d128|phase5|--kernel wgmma-dq --B 4 --H 16 --N 4096 --d 128 --causal"
  "bwd-det d128|phase5|--kernel wgmma-det --B 4 --H 16 --N 4096 --d 128 --causal"
  "dec MHA 64k|phase6|--kernel all --B 1 --H 32 --Nkv 65536 --d 128"
  "dec GQA 64k|phase6|--kernel all --B 1 --H 32 --Hkv 8 --Nkv 65536 --d 128"
)
# AB_ONLY: a grep -E pattern on the runs' names (e.g. 'fwd|fp8'): those alone
if [ -n "${AB_ONLY:-}" ]; then keep=(); for r in "${RUNS[@]}"; do [[ "${r%%|*}" =~ $AB_ONLY ]] && keep+=("$r"); done; RUNS=("${keep[@]}"); fi
for r in $(seq 1 "$rounds"); do
  for side in before after; do
    dir=$([ $side = before ] && echo "$base" || echo "$here")
    for i in "${!RUNS[@]}"; do
      IFS='|' read -r name ph args <<<"${RUNS[$i]}"
      (cd "$dir" && timeout 120 build/$ph $args --iters 20 --quiet --csv "$out/raw/${side}_${i}_$r.csv" >"$out/raw/${side}_${i}_$r.log" 2>&1) ||
        echo "run $side $name round $r: exit $?" >>"$out/raw/errors.txt"
    done
  done
done
python3 - "$out" "$rounds" "${RUNS[@]}" <<'PY'
import csv, sys, statistics, glob, os
out, rounds, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def times(side, i):
    t = {}
    for r in range(1, rounds + 1):
        f = os.path.join(out, 'raw', '%s_%d_%d.csv' % (side, i, r))
        if not os.path.exists(f): continue
        rows = [l for l in open(f) if not l.startswith('#')]
        for row in csv.DictReader(rows):
            if row.get('device') != 'gpu' or not row.get('time_ms'): continue
            try: v = float(row['time_ms'])
            except ValueError: continue
            if v > 0: t.setdefault(row['kernel'], []).append(v)
    return t
lines = ['%-18s %-22s %12s %12s %8s' % ('shape', 'kernel', 'before ms', 'after ms', 'ratio')]
worst = 0
for i, spec in enumerate(runs):
    name = spec.split('|')[0]
    b, a = times('before', i), times('after', i)
    for k in sorted(set(b) | set(a), key=lambda k: list(a).index(k) if k in a else 99):
        mb = statistics.median(b[k]) if k in b else float('nan')
        ma = statistics.median(a[k]) if k in a else float('nan')
        ratio = ma / mb if k in a and k in b else float('nan')
        if ratio == ratio: worst = max(worst, ratio)
        lines.append('%-18s %-22s %12.4f %12.4f %8.3f' % (name, k, mb, ma, ratio))
lines.append('worst after/before: %.3f (rounds: %d, each the median of --iters 20)' % (worst, rounds))
open(os.path.join(out, 'ab_table.txt'), 'w').write('\n'.join(lines) + '\n')
print('\n'.join(lines))
PY
{ for side in before after; do
    dir=$([ $side = before ] && echo "$base" || echo "$here")
    echo "== $side"
    for o in $(cd "$dir" && ls build/obj/phase4_fa2/fa2_wgmma.o build/obj/phase5_backward/*wgmma*.o build/obj/phase6_decoding/*.o 2>/dev/null); do
      echo "-- $o"; bash "$here/tools/sass_count.sh" "$dir/$o"
    done
  done; } >"$out/ab_sass.txt" 2>&1
