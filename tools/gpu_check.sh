#!/usr/bin/env bash
# tools/gpu_check.sh [PHASE...] - everything a lent GPU must show, in one call:
# build for one arch, each phase's tests (GPU tests included), compute-sanitizer,
# the default run + Nsight Compute bytes, the sweep, and peers; logs under $OUT.
#
#   on the GPU machine, from the repo root:   bash tools/gpu_check.sh            (all)
#                                             bash tools/gpu_check.sh phase1     (one)
#   OUT (default results/gpu_check) receives: summary.txt, gpu_info.txt, logs.tar.gz and
#   the phases' CSVs (at most 8 files in all: the device tool brings back no more).
#   GPU_CHECK_BUDGET (default 560 s): steps are skipped, then cut, as it runs out.
#   GPU_CHECK_PARALLEL=1: the phases' test and sanitize steps run at once (see below).
#
# A phase adds itself with one `phase` line below: its name, its sweep command, and an
# optional extra command (peers), each run with $OUT set. The standard steps per phase:
#   tests     bash tools/run_tests.sh PHASE       (its tests.sh, GPU tests included)
#   sanitize  make PHASE sanitize                 (memcheck + racecheck, a small shape)
#   run       build/PHASE --csv $OUT/PHASE.csv    (the default problem, the table)
#   profile   tools/profile.sh build/PHASE $OUT/PHASE.csv   (ncu DRAM bytes)
#   sweep, extra                                  (as given on the phase line)
#   handout   HANDOUT_GPU=1 HANDOUT_FILLED_ONLY=1 tools/handout_test.sh PHASE (with its GPU
#             kernels and tests, only PHASE's regions filled: not in the default steps)
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-results/gpu_check}
ARCH=${CUDA_ARCH:-sm_90}
BUDGET=${GPU_CHECK_BUDGET:-560}
LOGS=$OUT/logs
mkdir -p "$LOGS"
export OUT
START=$(date +%s)
SUMMARY=()

left() { echo $((BUDGET - ($(date +%s) - START))); }
# one line of the summary table: NAME VERDICT SECONDS LAST-LINE (the verdict from rc:
# 0 PASS, 124/137 TIMEOUT, any other FAIL)
verdict_of() { case $1 in 0) echo PASS ;; 124|137) echo TIMEOUT ;; *) echo FAIL ;; esac; }
summary_row() { SUMMARY+=("$(printf '%-26s %-7s %5s  %s' "$1" "$2" "$3" "$4")"); }

# step NAME CMD... : log to $LOGS/NAME.log; PASS/FAIL/TIMEOUT/SKIP with seconds and the
# log's last summary-looking line.
step() {
    local name=$1; shift
    local log="$LOGS/$name.log" t0 rc lim
    lim=$(left)
    if [ "$lim" -lt 15 ]; then summary_row "$name" SKIP - "out of time budget"; return; fi
    t0=$(date +%s)
    echo "== $name (limit ${lim}s): $*"
    timeout --kill-after=5 "$lim" "$@" >"$log" 2>&1; rc=$?
    local dt=$(( $(date +%s) - t0 ))
    local last; last=$(grep -E 'passed|PASS|FAIL|skipped|ERROR SUMMARY|written|wall' "$log" | tail -n 1 | cut -c1-90)
    tail -n 3 "$log" | sed 's/^/   | /'
    summary_row "$name" "$(verdict_of $rc)" "${dt}s" "$last"
}

PHASES=()
declare -A SWEEP EXTRA
phase() { PHASES+=("$1"); SWEEP[$1]=$2; EXTRA[$1]=${3:-}; }

# ---- the phases: one line each ------------------------------------------------------
phase phase1 "build/phase1 --sweep --iters 5 --csv \$OUT/phase1_sweep.csv && bash tools/profile.sh build/phase1 \$OUT/phase1_sweep.csv 4096 \"r['d'] == '64' and r['causal'] == '0' and r['sweep'] == 'tokens16k'\"" \
             "build/phase1 --kernel cublas --B 4 --H 16 --N 4096 --d 128 --csv \$OUT/phase1_ref.csv --quiet && build/phase1 --kernel cublas --B 4 --H 32 --N 4096 --d 64 --csv \$OUT/phase1_ref64.csv --quiet && tail -n 2 \$OUT/phase1_ref.csv \$OUT/phase1_ref64.csv && python3 tools/sdpa_peer.py \$OUT/sdpa_peer.csv 4,16,4096,128,0 4,32,4096,64,0 1,32,8192,64,0 1,16,8192,128,0"
phase phase2 "mkdir -p \$OUT/p2 && build/phase2 --sweep --csv \$OUT/p2/phase2.csv && mv \$OUT/p2/phase2_sweep.csv \$OUT/ && rm -rf \$OUT/p2"
phase phase3 "build/phase3 --sweep --iters 5 --csv \$OUT/phase3_sweep.csv && bash tools/profile.sh build/phase3 \$OUT/phase3_sweep.csv 2048 \"r['d'] == '64' and r['N_q'] in ('512', '2048')\""
phase phase4 "build/phase4 --sweep --iters 5 --csv \$OUT/phase4_sweep.csv && python3 tools/peers.py \$OUT/phase4_peers.csv" \
             "MASK_POINTS=8192:128 MASK_SET=table bash tools/masks_sweep.sh \$OUT/masks && python3 tools/masks_table.py \$OUT/masks 8192 128"
phase phase5 "build/phase5 --sweep --iters 5 --csv \$OUT/phase5_sweep.csv && python3 tools/bwd_peers.py \$OUT/phase5_peers.csv"
phase phase6 "build/phase6 --sweep --iters 10 --csv \$OUT/phase6_sweep.csv && python3 tools/decode_peers.py \$OUT/phase6_peers.csv"
# -------------------------------------------------------------------------------------

want=("$@"); [ ${#want[@]} -eq 0 ] && want=("${PHASES[@]}")

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv >"$OUT/gpu_info.txt" 2>&1
step build make -j16 NO_DEPS=1 CUDA_ARCH="$ARCH" all
# a failed build runs nothing else: every later step would only fail on the missing programs
case ${SUMMARY[-1]} in "build "*FAIL*) want=(); GPU_CHECK_STEPS=none ;; esac
build/gpu_info >>"$OUT/gpu_info.txt" 2>&1
# GPU_CHECK_STEPS picks the steps (default: all); "tools" runs the project-wide tests
# (exercises: each GPU fill-in must FAIL its check; ASan; spills) once, after the phases.
STEPS=" ${GPU_CHECK_STEPS:-tests sanitize run sweep profile extra tools} "
has() { [[ "$STEPS" == *" $1 "* ]]; }
# GPU_CHECK_PARALLEL=1: the phases' tests and sanitizers all at once (each its own log), before
# the other steps: four phases' GPU tests take one phase's time, and neither is a timing
if [ "${GPU_CHECK_PARALLEL:-0}" = 1 ] && { has tests || has sanitize; }; then
    lim=$(left); jobs=()
    for p in "${want[@]}"; do
        [ -n "${SWEEP[$p]+x}" ] || continue
        has tests && jobs+=("$p-tests")
        has sanitize && jobs+=("$p-sanitize")
    done
    for j in "${jobs[@]}"; do
        p=${j%-*}
        case $j in
            *-tests) cmd=(env LOGDIR=build/testlogs_$p SKIP_TOOLS=1 bash tools/run_tests.sh "$p") ;;
            *) cmd=(make --no-print-directory NO_DEPS=1 CUDA_ARCH="$ARCH" "$p" sanitize) ;;
        esac
        ( t0=$(date +%s); timeout --kill-after=5 "$lim" "${cmd[@]}" >"$LOGS/$j.log" 2>&1
          echo "$? $(( $(date +%s) - t0 ))" >"$LOGS/$j.rc" ) &
    done
    wait
    for j in "${jobs[@]}"; do
        [ -f "$LOGS/$j.rc" ] || continue
        read -r rc dt <"$LOGS/$j.rc"; rm -f "$LOGS/$j.rc"
        summary_row "$j" "$(verdict_of "$rc")" "${dt}s" "$(grep -E 'passed|ERROR SUMMARY' "$LOGS/$j.log" | tail -n 1 | cut -c1-90)"
    done
    STEPS=${STEPS/ tests / }; STEPS=${STEPS/ sanitize / }
fi
for p in "${want[@]}"; do
    [ -n "${SWEEP[$p]+x}" ] || { SUMMARY+=("$p: no phase line in tools/gpu_check.sh"); continue; }
    has tests    && step "$p-tests"    env SKIP_TOOLS=1 bash tools/run_tests.sh "$p"
    has sanitize && step "$p-sanitize" make --no-print-directory NO_DEPS=1 CUDA_ARCH="$ARCH" "$p" sanitize
    has run      && step "$p-run"      build/"$p" --csv "$OUT/$p.csv"
    has sweep    && step "$p-sweep"    bash -c "${SWEEP[$p]}"
    has profile  && step "$p-profile"  bash tools/profile.sh build/"$p" "$OUT/$p.csv"
    has extra    && [ -n "${EXTRA[$p]}" ] && step "$p-extra" bash -c "${EXTRA[$p]}"
    has handout  && step "$p-handout" env HANDOUT_GPU=1 HANDOUT_FILLED_ONLY=1 CUDA_ARCH="$ARCH" JOBS=16 bash tools/handout_test.sh "$p"
done
has tools && step "tools-tests" env JOBS=16 EX_CUDA_ARCH="$ARCH" bash tools/run_tests.sh

# the tables a reader wants to see in the call's output (the logs travel in the tarball)
for f in "$LOGS"/*-run.log "$LOGS"/*-sweep.log "$LOGS"/*-profile*.log "$LOGS"/*-extra.log; do
    [ -f "$f" ] && { echo "---- ${f##*/}"; grep -v '^==PROF==' "$f" | tail -n 45; }
done

# logs (and any extra CSV beyond the 8-file limit) travel as one tarball
tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs $(cd "$OUT" && ls *_ref*.csv 2>/dev/null) && rm -rf "$LOGS" "$OUT"/*_ref*.csv
{
    echo "gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(head -n 2 "$OUT/gpu_info.txt" | tail -n 1)  ($(( $(date +%s) - START )) s)"
    printf '%s\n' "${SUMMARY[@]}"
} | tee "$OUT/summary.txt"
! grep -qE '^[^ ]+ +(FAIL|TIMEOUT)' "$OUT/summary.txt"
