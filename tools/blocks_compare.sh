#!/usr/bin/env bash
# tools/blocks_compare.sh - choose a block size by measurement: phase 4 built with the
# defaults of phase4_fa2/fa2_blocks.h, and once more for each set of make variables you
# give (sets separated by ';'), fa2-mma timed by every build on the same shapes, one after
# the other, plus the official FlashAttention-2 (PyTorch SDPA's flash backend) on the same
# shapes when PyTorch is there.
#
#   bash tools/blocks_compare.sh "FA2_D128_BC=64 FA2_D128_STAGES=1; FA2_D128_BC=16" \
#        "--B 4 --H 16 --N 4096 --d 128" "--B 4 --H 16 --N 4096 --d 128 --causal" ...
#
# BASE_TREE=dir (optional): another copy of the project (e.g. `git archive` of an earlier
# commit, unpacked); its phase 4 is built with its own defaults and timed as "base", so a
# change of the kernel's code, not only of a make variable, is measured in the same run.
#
# KERNEL (optional, default mma): the driver's kernel to time, e.g. wgmma-ws (the Hopper
# chapter's steps, FA2_WS_* variables); the peer is then SDPA's cuDNN backend too.
#
# Needs a GPU. Prints one line per build and shape (the driver's row of that kernel: Br x
# Bc, time, TFLOP/s and its checks, and its verdict) and the peer's lines; OUT (default
# results/blocks) keeps the logs.
set -u
cd "$(dirname "$0")/.." || exit 1
[ $# -ge 2 ] || { echo "usage: tools/blocks_compare.sh \"VAR=value ...\" \"SHAPE ARGS\" [\"SHAPE ARGS\" ...]" >&2; exit 2; }
IFS=';' read -r -a SETS <<<"$1"; shift
OUT=${OUT:-results/blocks}
KERNEL=${KERNEL:-mma}
ARCH=${CUDA_ARCH:-sm_90}
mkdir -p "$OUT"
make -j16 NO_DEPS=1 CUDA_ARCH="$ARCH" phase4-build >"$OUT/build.log" 2>&1 || { tail "$OUT/build.log"; exit 1; }
echo "# default: build/phase4 (phase4_fa2/fa2_blocks.h)"
BUILDS=(build)
for k in "${!SETS[@]}"; do
    alt=build/blocks-alt$k
    # shellcheck disable=SC2086  # a set is a list of make assignments
    make -j16 NO_DEPS=1 CUDA_ARCH="$ARCH" BUILD=$alt ${SETS[$k]} phase4-build >"$OUT/build-alt$k.log" 2>&1 \
        || { tail "$OUT/build-alt$k.log"; exit 1; }
    echo "# alt$k: $alt/phase4 built with${SETS[$k]}"
    BUILDS+=("$alt")
done
if [ -n "${BASE_TREE:-}" ]; then
    make -C "$BASE_TREE" -j16 NO_DEPS=1 CUDA_ARCH="$ARCH" phase4-build >"$OUT/build-base.log" 2>&1 \
        || { tail "$OUT/build-base.log"; exit 1; }
    echo "# base: $BASE_TREE/build/phase4 (another tree, its own defaults)"
    BUILDS=("$BASE_TREE/build" "${BUILDS[@]}")
fi
peers=()
for shape in "$@"; do
    for b in "${BUILDS[@]}"; do
        # shellcheck disable=SC2086  # shape is a list of flags
        log=$("$b/phase4" --kernel "$KERNEL" --iters "${ITERS:-20}" --quiet $shape --csv "$OUT/rows.csv" 2>&1)
        line=$(echo "$log" | grep -E "^ *$KERNEL " | head -n 1 | tr -s ' ')
        verdict=$(echo "$log" | grep -oE '^phase4: (PASS|FAIL)' | tail -n 1)
        label=${b#build/blocks-}
        [ "$b" = build ] && label=default
        [ -n "${BASE_TREE:-}" ] && [ "$b" = "$BASE_TREE/build" ] && label=base
        printf '%-8s %-40s %s | %s\n' "$label" "$shape" "$line" "$verdict"
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
