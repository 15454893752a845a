#!/usr/bin/env bash
# tools/softmax_probe.sh - on the GPU machine: what the Hopper steps' softmax costs. Phase 4
# built three ways: as it is, with O~'s rescale taken out (SOFTMAX_PROBE=NO_RESCALE), and
# with its exp2 replaced by nothing (SOFTMAX_PROBE=NO_EXP: P~ = the exponent, an FFMA's
# worth of work); each build's TFLOP/s on the same points (median of 20 runs, CUDA events,
# L2 flushed). The probes' results are wrong (their verdicts FAIL): a measurement of the
# exp budget (chapter 4b), not a kernel.
set -u
cd "$(dirname "$0")/.." || exit 1
ARCH=${CUDA_ARCH:-sm_90}
builds=("default:" "norescale:NO_RESCALE" "noexp:NO_EXP")
for b in "${builds[@]}"; do
    IFS=: read -r name probe <<<"$b"
    make -j6 NO_DEPS=1 CUDA_ARCH="$ARCH" BUILD="build_probe_$name" ${probe:+SOFTMAX_PROBE=$probe} \
        "build_probe_$name/phase4" >"build_probe_$name.log" 2>&1 &
done
wait
shapes=("4 16 4096 128 0" "4 16 4096 128 1" "4 32 4096 64 0" "4 32 4096 64 1" "2 8 8192 256 0")
kernels=${PROBE_KERNELS:-wgmma-ws wgmma-fa3order wgmma-fp8}
printf '%-10s %-15s %2s %3s %5s %3s %2s %8s %7s\n' build kernel B H N d c ms TFLOP/s
for b in "${builds[@]}"; do
    name=${b%%:*}; prog=build_probe_$name/phase4
    [ -x "$prog" ] || { echo "$name: build failed: $(tail -2 "build_probe_$name.log")"; continue; }
    for s in "${shapes[@]}"; do
        read -r B H N d c <<<"$s"
        for k in $kernels; do
            rm -f "$prog.csv"
            "$prog" --kernel "$k" --B "$B" --H "$H" --N "$N" --d "$d" $([ "$c" = 1 ] && echo --causal) --iters 20 --quiet \
                --csv "$prog.csv" >/dev/null 2>&1
            awk -F, -v n="$name" -v k="$k" '/^#/ { next } $1 == "kernel" { for (i = 1; i <= NF; i++) c[$i] = i; next }
                $c["device"] == "gpu" && $c["kernel"] == k { printf "%-10s %-15s %2d %3d %5d %3d %2d %8.3f %7.1f %s\n", n, k, $c["B"], $c["H"], $c["N_q"], $c["d"], $c["causal"], $c["time_ms"], $c["tflops"], $c["verdict"] }' "$prog.csv" 2>/dev/null ||
                echo "$name $k $s: no row"
        done
    done
done
