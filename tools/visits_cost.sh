#!/usr/bin/env bash
# tools/visits_cost.sh [PHASE ["ARGS" ...]] - what the visit counters cost (common/gpu.h;
# the design asks for under 1%). Builds PHASE twice, as is (build/) and with FA_NO_VISITS=1
# (build/novisits: the counting compiled out), then runs the driver of each build on the
# same shapes, ROUNDS times in turn (default 3), and prints, per shape and GPU row, the
# median of the rounds' times (each itself a median of --iters runs) and counted / not.
#
#   bash tools/visits_cost.sh                  every phase with kernels that count, at its
#                                              shapes below
#   bash tools/visits_cost.sh phase4 "--B 4 --H 16 --N 4096 --d 128 --causal --kernel mma"
#
# Needs a GPU. OUT (default results/visits_cost) keeps the CSVs and build logs.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-results/visits_cost}
ARCH=${CUDA_ARCH:-sm_90}
ROUNDS=${ROUNDS:-3}
ITERS=${ITERS:-20}
mkdir -p "$OUT"
declare -A SHAPES=(
    [phase3]="--B 4 --H 16 --N 4096 --d 64 --causal --kernel mma"
    [phase4]="--B 4 --H 16 --N 4096 --d 128 --causal --kernel mma|--B 4 --H 16 --N 4096 --d 128 --causal --kernel wgmma|--B 4 --H 32 --N 4096 --d 64 --causal --kernel simple"
    [phase5]="--B 4 --H 16 --N 4096 --d 128 --causal --kernel mma|--B 4 --H 16 --N 4096 --d 128 --causal --kernel two-pass"
    [phase6]="--B 1 --H 32 --Hkv 8 --N 1 --Nkv 65536 --d 128 --kernel split-pack|--B 1 --H 32 --Hkv 8 --N 1 --Nkv 65536 --d 128 --kernel paged"
)
if [ $# -eq 0 ]; then set -- phase3 phase4 phase5 phase6; fi
if [ $# -ge 2 ] && [[ "$2" == -* ]]; then   # one phase and its shapes
    phase=$1; shift
    list=$(printf '%s|' "$@"); SHAPES[$phase]=${list%|}
    set -- "$phase"
fi
for phase in "$@"; do
    [ -n "${SHAPES[$phase]+x}" ] || { echo "visits_cost: no shapes for $phase" >&2; exit 2; }
    make -j16 NO_DEPS=1 CUDA_ARCH="$ARCH" "$phase-build" >"$OUT/build-$phase.log" 2>&1 \
        || { tail "$OUT/build-$phase.log"; exit 1; }
    make -j16 NO_DEPS=1 CUDA_ARCH="$ARCH" BUILD=build/novisits FA_NO_VISITS=1 "$phase-build" \
        >"$OUT/build-$phase-novisits.log" 2>&1 || { tail "$OUT/build-$phase-novisits.log"; exit 1; }
    IFS='|' read -r -a shapes <<<"${SHAPES[$phase]}"
    for k in "${!shapes[@]}"; do
        for r in $(seq 1 "$ROUNDS"); do
            for b in build build/novisits; do
                tag=$([ "$b" = build ] && echo counted || echo none)
                # shellcheck disable=SC2086  # a shape is a list of flags
                "$b/$phase" --quiet --iters "$ITERS" ${shapes[$k]} --csv "$OUT/$phase-s$k-$tag-r$r.csv" \
                    >"$OUT/$phase-s$k-$tag-r$r.log" 2>&1 || echo "visits_cost: $b/$phase ${shapes[$k]}: exit $? (see $OUT)"
            done
        done
        python3 - "$OUT" "$phase-s$k" "${shapes[$k]}" "$ROUNDS" <<'PY'
import csv, glob, statistics, sys
out, stem, shape, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def times(tag):
    t = {}
    for r in range(1, rounds + 1):
        try:
            f = open(f"{out}/{stem}-{tag}-r{r}.csv")
        except OSError:
            continue   # said above: that run failed
        with f:
            for row in csv.DictReader(l for l in f if not l.startswith('#')):
                if row.get('device') == 'gpu' and row.get('time_ms'):
                    t.setdefault(row['kernel'], []).append(float(row['time_ms']))
    return {k: statistics.median(v) for k, v in t.items()}
a, b = times('counted'), times('none')
print(f"{stem.split('-')[0]} {shape}")
for k in a:
    if k in b:
        print(f"  {k:16s} counted {a[k]:9.4f} ms   without {b[k]:9.4f} ms   counted/without {a[k] / b[k]:.4f}")
PY
    done
done
