#!/usr/bin/env bash
# tools/blocks_compare.sh - choose a block size by measurement: phase 4 built twice (the
# defaults of phase4_fa2/fa2_blocks.h, and once more with the make variables you give),
# fa2-mma timed by both builds on the same shapes, one after the other, plus the official
# FlashAttention-2 (PyTorch SDPA's flash backend) on the same shapes when PyTorch is there.
#
#   bash tools/blocks_compare.sh "FA2_D128_BC=64 FA2_SMEM_CAP=232448" \
#        "--B 4 --H 16 --N 4096 --d 128" "--B 4 --H 16 --N 4096 --d 128 --causal" ...
#
# Needs a GPU. Prints one line per build and shape (the driver's mma row: Br x Bc, time,
# TFLOP/s and its checks) and the peer's CSV; OUT (default results/blocks) keeps the logs.
set -u
cd "$(dirname "$0")/.." || exit 1
[ $# -ge 2 ] || { echo "usage: tools/blocks_compare.sh \"VAR=value ...\" \"SHAPE ARGS\" [\"SHAPE ARGS\" ...]" >&2; exit 2; }
VARS=$1; shift
OUT=${OUT:-results/blocks}
ALT=build/blocks-alt
ARCH=${CUDA_ARCH:-sm_90}
mkdir -p "$OUT"
make -j16 NO_DEPS=1 CUDA_ARCH="$ARCH" phase4-build >"$OUT/build.log" 2>&1 || { tail "$OUT/build.log"; exit 1; }
# shellcheck disable=SC2086  # VARS is a list of make assignments
make -j16 NO_DEPS=1 CUDA_ARCH="$ARCH" BUILD=$ALT $VARS phase4-build >"$OUT/build-alt.log" 2>&1 || { tail "$OUT/build-alt.log"; exit 1; }
echo "# default: build/phase4 | alt: $ALT/phase4 built with $VARS"
peers=()
for shape in "$@"; do
    for b in build "$ALT"; do
        # shellcheck disable=SC2086  # shape is a list of flags
        log=$("$b/phase4" --kernel mma --iters "${ITERS:-20}" --quiet $shape --csv "$OUT/rows.csv" 2>&1)
        line=$(echo "$log" | grep -E '^ *mma ' | head -n 1 | tr -s ' ')
        verdict=$(echo "$log" | grep -oE '^phase4: (PASS|FAIL)' | tail -n 1)
        printf '%-8s %-40s %s | %s\n' "$( [ "$b" = build ] && echo default || echo alt)" "$shape" "$line" "$verdict"
    done
    # B,H,N,d,causal for the peer
    set -- $shape
    B=4 H=16 N=4096 d=128 c=0
    while [ $# -gt 0 ]; do
        case $1 in --B) B=$2; shift;; --H) H=$2; shift;; --N) N=$2; shift;; --d) d=$2; shift;; --causal) c=1;; esac
        shift
    done
    peers+=("$B,$H,$N,$d,$c")
done
python3 tools/sdpa_peer.py "$OUT/peer.csv" "${peers[@]}" 2>&1 | grep -E '^sdpa_peer: flash' || true
