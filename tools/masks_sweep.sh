#!/usr/bin/env bash
# tools/masks_sweep.sh OUTDIR [ours|peers|all] - chapter 4c's masks sweep: our masked kernels,
# forward (build/phase4) and backward (build/phase5), on FlashMask's masks at N = 8k, 16k, 32k
# and d = 64, 128 (B = 1, H = 16, fp16, as the FlashMask paper's kernel tables), each beside
# the same kernel's causal path (--causal: the yardstick of "pairs-only TFLOP/s of a mask
# against causal"), then the peers on the same masks (tools/mask_peers.py: FlexAttention and
# SDPA with a dense mask; optional, without PyTorch one line says so). Needs `make` (the
# phases and build/mask_map); a GPU for our rows (without one the phases print skipped rows,
# which the table leaves out).
#
#   OUTDIR/masks_ours.csv    every GPU row our drivers printed: spec,pass,kernel,B,H,N,d,
#                            time_ms,tflops,verdict (spec "causal-flag": the --causal run)
#   OUTDIR/masks_peers.csv   tools/mask_peers.py's rows
#   then tools/masks_table.py OUTDIR merges both into OUTDIR/masks.csv and prints the table
#
# Each of our runs is a checked run (the oracle, the visit counters, the bytes) before it is
# timed: a row that does not PASS is kept with its verdict and the table says so.
# Knobs: MASK_NS ("8192 16384 32768"), MASK_DS ("64 128") or MASK_POINTS ("8192:64 16384:128":
# the points N:d themselves), MASK_SET (all: the 12 masks; table:
# the six of the chapter's speed table), ITERS (10), FWD_KERNELS ("mma wgmma-ws"),
# BWD_KERNELS ("mma wgmma-ws"): the kernels with a mask path, whose --causal runs are the
# yardsticks (a masked run is one --kernel all run a pass: every kernel with a mask path, in
# one process; empty: that pass is not run).
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${1:?usage: tools/masks_sweep.sh OUTDIR [ours|peers|all]}
PART=${2:-all}
BUILD=${BUILD:-build}
NS=${MASK_NS:-8192 16384 32768}
DS=${MASK_DS:-64 128}
SET=${MASK_SET:-all}
ITERS=${ITERS:-10}
FWD_KERNELS=${FWD_KERNELS-mma wgmma-ws}
BWD_KERNELS=${BWD_KERNELS-mma wgmma-ws}
B=1 H=16
POINTS=${MASK_POINTS:-$(for N in $NS; do for d in $DS; do printf '%s:%s ' "$N" "$d"; done; done)}
mkdir -p "$OUT"

# The masks at N tokens: the chapter's six (the FlashMask paper's kernel-table masks), then
# the paper's other six. Documents: five of 30, 25, 20, 15 and 10 % of N (mask.h's document
# rule: the last takes what is left).
specs_for() {
    local N=$1 d1=$(($1 * 30 / 100)) d2=$(($1 * 25 / 100)) d3=$(($1 * 20 / 100)) d4=$(($1 * 15 / 100))
    local q=$(($1 / 4))
    echo "causal"
    echo "sliding:1024"
    echo "causal_document:$d1,$d2,$d3,$d4"
    echo "document:$d1,$d2,$d3,$d4"
    echo "prefix_lm_causal:$q"
    echo "global_sliding:64,1024"
    [ "$SET" = table ] && return
    echo "full"
    echo "shared_question:$q,$q,$q"
    echo "causal_blockwise:$d1,$d2,$d3,$d4"
    echo "prefix_lm_document:$((d1 / 4)),$d1,$((d2 / 4)),$d2,$((d3 / 4)),$d3,$((d4 / 4)),$d4"
    echo "qk_sparse:$q,$((N / 8)),$((N / 2)),$((N / 8))"
    echo "random_eviction:7"
}

# our rows: one run of a phase, its GPU rows appended with the spec and the pass in front
ours() {   # PHASE PASS SPEC KERNEL N d ARGS...
    local ph=$1 pass=$2 spec=$3 k=$4 N=$5 d=$6
    shift 6
    local tmp="$OUT/.run.csv"
    rm -f "$tmp"
    "$BUILD/$ph" --kernel "$k" --B $B --H $H --N "$N" --d "$d" --iters "$ITERS" --quiet --csv "$tmp" "$@" \
        > "$OUT/.run.log" 2>&1
    local rc=$?
    if [ ! -s "$tmp" ]; then   # refused (exit 2) or crashed: its line in the log, and a row saying so
        echo "\"$spec\",$pass,# $ph --kernel $k N=$N d=$d $*: exit $rc: $(tail -n 1 "$OUT/.run.log")" >> "$OUT/masks_ours.csv"
        return
    fi
    [ -s "$OUT/masks_ours.csv" ] || { grep '^#' "$tmp"; echo "spec,pass,kernel,B,H,N,d,time_ms,tflops,verdict"; } > "$OUT/masks_ours.csv"
    # the columns by name (phase 4's and phase 5's tables differ), the GPU rows alone
    grep -v '^#' "$tmp" | awk -F, -v s="$spec" -v p="$pass" '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["device"] == "gpu" { printf "\"%s\",%s,%s,%s,%s,%s,%s,%s,%s,%s\n", s, p, $c["kernel"], $c["B"], $c["H"],
                                  $c["N_q"], $c["d"], $c["time_ms"], $c["tflops"], $c["verdict"] }' >> "$OUT/masks_ours.csv"
}

if [ "$PART" = ours ] || [ "$PART" = all ]; then
    rm -f "$OUT/masks_ours.csv"
    for pt in $POINTS; do
        N=${pt%:*} d=${pt#*:}
        {
            S=$(date +%s)
            for k in $FWD_KERNELS; do ours phase4 fwd causal-flag "$k" "$N" "$d" --causal; done
            for k in $BWD_KERNELS; do ours phase5 bwd causal-flag "$k" "$N" "$d" --causal; done
            while read -r spec; do   # one run a pass: --kernel all runs every kernel with a mask path
                [ -n "$FWD_KERNELS" ] && ours phase4 fwd "$spec" all "$N" "$d" --mask "$spec"
                [ -n "$BWD_KERNELS" ] && ours phase5 bwd "$spec" all "$N" "$d" --mask "$spec"
            done < <(specs_for "$N")
            echo "masks_sweep: ours N=$N d=$d in $(( $(date +%s) - S )) s"
        }
    done
    rm -f "$OUT/.run.csv" "$OUT/.run.log"
fi

if [ "$PART" = peers ] || [ "$PART" = all ]; then
    rm -f "$OUT/masks_peers.csv"
    for pt in $POINTS; do
        N=${pt%:*} d=${pt#*:}
        {
            S=$(date +%s)
            mapfile -t specs < <(specs_for "$N")
            MAP="$BUILD/mask_map" python3 tools/mask_peers.py "$OUT/masks_peers.csv" $B $H "$N" "$d" "${specs[@]}" \
                > "$OUT/.peers.log" 2>&1 || { tail -n 5 "$OUT/.peers.log"; exit 1; }
            grep -m1 "skipped" "$OUT/.peers.log" && break
            echo "masks_sweep: peers N=$N d=$d in $(( $(date +%s) - S )) s"
        }
    done
    rm -f "$OUT/.peers.log"
fi
