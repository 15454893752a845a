#!/usr/bin/env bash
# tools/bwd_cost_probe.sh - on the GPU machine: what parts of the Hopper backward's step cost
# (chapter 5b). Phase 5 built four ways: as it is; with P^T's exp2 replaced by an FFMA
# (BWD_PROBE=NO_EXP); with the dQ writer's adds left out (NO_DQ_ADD: the tile is stored and
# handed back, never added); and with one bulk reduce a tile in place of one a row
# (ONE_BULK: the tile's bytes added as one run, padding and all, so to the wrong places).
# Each build's TFLOP/s on the same points (median of ITERS runs, CUDA events, L2 flushed).
# The probes' results are wrong (their verdicts FAIL): a measurement, not a kernel.
#   bash tools/bwd_cost_probe.sh            KERNELS="wgmma-ws wgmma-det" ITERS=20 ...
set -u
cd "$(dirname "$0")/.." || exit 1
ARCH=${CUDA_ARCH:-sm_90}
ITERS=${ITERS:-10}
builds=(${BUILDS:-default: noexp:NO_EXP nodqadd:NO_DQ_ADD onebulk:ONE_BULK})
for b in "${builds[@]}"; do
    IFS=: read -r name probe <<<"$b"
    make -j4 NO_DEPS=1 CUDA_ARCH="$ARCH" BUILD="build_bprobe_$name" ${probe:+BWD_PROBE=$probe} \
        "build_bprobe_$name/phase5" >"build_bprobe_$name.log" 2>&1 &
done
wait
#        B  H  N    d   causal
shapes=("4 16 4096 128 0" "4 16 4096 128 1" "4 32 4096 64 0" "4 32 4096 64 1")
kernels=${KERNELS:-wgmma-ws}
printf '%-10s %-10s %2s %3s %5s %3s %2s %8s %7s\n' build kernel B H N d c ms TFLOP/s
for b in "${builds[@]}"; do
    name=${b%%:*}; prog=build_bprobe_$name/phase5
    [ -x "$prog" ] || { echo "$name: build failed: $(tail -2 "build_bprobe_$name.log")"; continue; }
    for s in "${shapes[@]}"; do
        read -r B H N d c <<<"$s"
        for k in $kernels; do
            rm -f "$prog.csv"
            "$prog" --kernel "$k" --B "$B" --H "$H" --N "$N" --d "$d" $([ "$c" = 1 ] && echo --causal) --iters "$ITERS" \
                --quiet --csv "$prog.csv" >/dev/null 2>&1
            awk -F, -v n="$name" -v k="$k" '/^#/ { next } $1 == "kernel" { for (i = 1; i <= NF; i++) c[$i] = i; next }
                $c["device"] == "gpu" && $c["kernel"] == k { printf "%-10s %-10s %2d %3d %5d %3d %2d %8.3f %7.1f %s\n", n, k, $c["B"], $c["H"], $c["N_q"], $c["d"], $c["causal"], $c["time_ms"], $c["tflops"], $c["verdict"] }' "$prog.csv" 2>/dev/null ||
                echo "$name $k $s: no row"
        done
    done
done
