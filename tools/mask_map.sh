#!/usr/bin/env bash
# tools/mask_map.sh OUTDIR - chapter 4c's figure: six of FlashMask's masks on N = 1024 with
# their tile classes at Br x Bc = 128 x 64 (build/mask_map), drawn by phase4_fa2/masks.gp into
# OUTDIR/phase4_masks.png. Needs `make` (build/mask_map) and gnuplot (make deps).
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${1:?usage: tools/mask_map.sh OUTDIR}
MAP=${MAP:-${BUILD:-build}/mask_map}
mkdir -p "$OUT"
SPECS=(causal sliding:256 causal_document:200,300,250 document:200,300,250 shared_question:300,200,250 global_sliding:32,128)
echo "spec;density;fully_masked;partial;unmasked" > "$OUT/masks.csv"   # ";": a spec holds commas
k=0
for s in "${SPECS[@]}"; do
    k=$((k + 1))
    "$MAP" "$s" 1024 128 64 "$OUT/mask_$k" | awk '{ printf "%s;%s;%s;%s;%s\n", $1, $2, $3, $4, $5 }' >> "$OUT/masks.csv" || exit 1
done
bash tools/plot.sh phase4_fa2/masks.gp "$OUT"
