#!/usr/bin/env bash
# tools/dec_stages_probe.sh - on the GPU machine: phase 6's decode kernels built with other
# ring depths and block widths (DEC_STAGES=3, 4; DEC_WARPS=8) beside the default, on the
# decode table's N_q = 1 points; GB/s of K and V from each build's own CSV (median of 20
# runs, CUDA events, L2 flushed). A probe for choosing a default, not a test.
set -u
cd "$(dirname "$0")/.." || exit 1
ARCH=${CUDA_ARCH:-sm_90}
builds=("default::" "stages3:3:" "stages4:4:" "warps8::8")
for b in "${builds[@]}"; do
    IFS=: read -r name stages warps <<<"$b"
    make -j8 NO_DEPS=1 CUDA_ARCH="$ARCH" BUILD="build_probe_$name" ${stages:+DEC_STAGES=$stages} \
        ${warps:+DEC_WARPS=$warps} "build_probe_$name/phase6" >"build_probe_$name.log" 2>&1 &
done
wait
shapes=("1 32 32 65536" "8 32 32 32768" "1 32 8 100003" "8 32 8 32768" "64 32 8 4096")
printf '%-9s %-11s %3s %3s %3s %7s %9s %7s\n' build kernel B H Hkv L us GB/s
for b in "${builds[@]}"; do
    name=${b%%:*}; prog=build_probe_$name/phase6
    [ -x "$prog" ] || { echo "$name: build failed: $(tail -2 "build_probe_$name.log")"; continue; }
    for s in "${shapes[@]}"; do
        read -r B H Hkv L <<<"$s"
        for k in split-pack fused; do
            "$prog" --kernel "$k" --B "$B" --H "$H" --Hkv "$Hkv" --Nkv "$L" --iters 20 --quiet --csv "$prog.csv" >/dev/null 2>&1 ||
                { echo "$name $k $s: FAIL"; continue; }
            awk -F, -v n="$name" -v k="$k" '/^#/ || $1 == "kernel" { if ($1 == "kernel") for (i = 1; i <= NF; i++) c[$i] = i; next }
                $c["device"] == "gpu" && $c["kernel"] == k { printf "%-9s %-11s %3d %3d %3d %7d %9.1f %7.0f %s\n", n, k, $c["B"], $c["H"], $c["H_kv"], $c["N_kv"], $c["time_ms"] * 1e3, $c["gbps"], $c["verdict"] }' "$prog.csv"
        done
    done
done
