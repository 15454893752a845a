#!/usr/bin/env bash
# tools/bwd_probe.sh - phase 5's backward kernels on the headline shapes beside SDPA's flash
# (the official FA2 backward) and cuDNN backward, timed in the same call: the quick reading
# between two sweeps of record, on the GPU machine.
#
#   bash tools/bwd_probe.sh                         (after make phase5-build CUDA_ARCH=sm_90)
#   KERNELS="wgmma wgmma-dq" ITERS=20 PEERS=0 bash tools/bwd_probe.sh
#
# Shapes (the issue tables' and chapter 5b's): d = 128, N = 4096, B = 4, H = 16 and d = 64,
# N = 4096, B = 4, H = 32, causal and not; GQA 32:8, N = 8192, d = 128, causal.
# Each of our rows is phase 5's own checked run (poisoned outputs, the oracle, the visit
# counters: a row that FAILs is not timed, and says FAIL here); the peers are
# tools/sdpa_peer.py's medians (GQA: not timed, SDPA's flash has no GQA path).
# $OUT (default results/bwd_probe) receives bwd_probe.csv (ours, phase 5's CSV columns, one
# metadata header) and bwd_probe_peers.csv; the table is printed last.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-results/bwd_probe}
KERNELS=${KERNELS:-mma2d wgmma wgmma-dq}
ITERS=${ITERS:-10}
PEERS=${PEERS:-1}
P5=${P5:-build/phase5}
mkdir -p "$OUT"
T=$(mktemp -d "${TMPDIR:-/tmp}/bwdprobe.XXXXXX"); trap 'rm -rf "$T"' EXIT
#        B  H  Hkv N    d   causal
SHAPES=("4 16 16 4096 128 0" "4 16 16 4096 128 1" "4 32 32 4096 64 0" "4 32 32 4096 64 1" "1 32 8 8192 128 1")

CSV=$OUT/bwd_probe.csv
: >"$CSV"
for s in "${SHAPES[@]}"; do
    read -r B H Hkv N d c <<<"$s"
    for k in $KERNELS; do
        args=(--kernel "$k" --B "$B" --H "$H" --Hkv "$Hkv" --N "$N" --d "$d" --iters "$ITERS" --quiet)
        [ "$c" = 1 ] && args+=(--causal)
        "$P5" "${args[@]}" --csv "$T/r.csv" >"$T/r.log" 2>&1 || { echo "bwd_probe: $k $s: exit $?"; tail -n 5 "$T/r.log"; }
        [ -s "$CSV" ] || grep '^#\|^kernel,' "$T/r.csv" >"$CSV"
        awk -F, -v k="$k" '!/^#/ && $1 == k && $2 == "gpu"' "$T/r.csv" >>"$CSV"
    done
done

PCSV=$OUT/bwd_probe_peers.csv
if [ "$PEERS" = 1 ]; then
    specs=()
    for s in "${SHAPES[@]}"; do
        read -r B H Hkv N d c <<<"$s"
        [ "$H" = "$Hkv" ] && specs+=("$B,$H,$N,$d,$c")
    done
    python3 -c "import sys; sys.path.insert(0, 'tools'); import sdpa_peer
sdpa_peer.main(sys.argv[1:], backends=('flash', 'cudnn'), phase='phase5 (bwd_probe peers)', mode='bwd')" \
        "$PCSV" "${specs[@]}" >"$T/peers.log" 2>&1 || { echo "bwd_probe: peers failed"; tail -n 5 "$T/peers.log"; }
fi

# the table: one line a shape, TFLOP/s of each kernel and peer, and ours / FA2, ours / cuDNN
python3 - "$CSV" "$PCSV" $KERNELS <<'EOF'
import csv, sys
ours, peers, kernels = sys.argv[1], sys.argv[2], sys.argv[3:]
def rows(path):
    try:
        with open(path) as f:
            return list(csv.DictReader(l for l in f if not l.startswith("#")))
    except OSError:
        return []
tf = {}
for r in rows(ours):
    key = (r["B"], r["H"], r["H_kv"], r["N_q"], r["d"], r["causal"])
    tf[key, r["kernel"]] = (r["tflops"] or "-") if r["verdict"] == "PASS" else r["verdict"]
for r in rows(peers):
    key = (r["B"], r["H"], r["H"], r["N"], r["d"], r["causal"])
    tf[key, r["backend"]] = r["tflops"] or "-"
shapes = sorted({k for k, _ in tf}, key=lambda s: (-int(s[4]), s[2] != s[1], s[5]))
cols = kernels + ["flash", "cudnn"]
print("bwd_probe: TFLOP/s (backward FLOPs 2.5x the forward's); ratios of the best of ours")
print(f"{'B H Hkv N d causal':24s}" + "".join(f"{c:>10s}" for c in cols) + f"{'/FA2':>7s}{'/cuDNN':>7s}")
for s in shapes:
    vals = [tf.get((s, c), "-") for c in cols]
    num = lambda v: float(v) if v.replace(".", "", 1).isdigit() else None
    best = max((num(v) for v in vals[:len(kernels)] if num(v)), default=None)
    ratio = lambda p: f"{best / num(p):7.2f}" if best and num(p) else f"{'-':>7s}"
    print(f"{' '.join(s):24s}" + "".join(f"{v:>10s}" for v in vals) + ratio(vals[-2]) + ratio(vals[-1]))
EOF
