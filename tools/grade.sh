#!/usr/bin/env bash
# tools/grade.sh PHASE... - `make grade`: one row per exercise of PHASEs and a total.
#
# Each phase with a filled region runs as `make PHASE run EX=1` does (the default problem
# and the shapes of PHASE_EX_RUNS); then each exercise is
#   UNFILLED         its region is still the stub (tools/exercises.sh unfilled)
#   FAIL             a FAIL line of the run names it among "exercises behind ...", with no
#                    unfilled exercise beside it (or the run failed naming no exercise); in
#                    "a (and b, c)" a is named, b and c are the other code that check ran
#   BLOCKED          only FAIL lines that also name an unfilled exercise name it: fill that
#                    one first (a check runs the code of every exercise it names)
#   SKIPPED(no GPU)  a GPU exercise, filled, where no GPU runs it (no nvcc, or no device)
#   PASS             otherwise
# Points: 1 a CPU exercise, 2 a GPU one, earned on PASS. Exit 0 once graded (1 if a phase's
# build broke: its exercises are FAIL). Environment (set by the Makefile): GRADE_EXDIR (the
# student's files in a repository: exercises), GRADE_BUILD (a handout: one build folder),
# GRADE_BUILD_BASE (a repository: PHASE builds in BASE/ex-PHASE, as `make PHASE run EX=1`
# does), GRADE_NVCC (nvcc's path when the build has it), GRADE_GPU_INFO (the build's
# gpu_info: --probe says whether a device runs the GPU rows), GRADE_MAKE.
set -u
cd "$(dirname "$0")/.." || exit 1
MAKE=${GRADE_MAKE:-make}
T=$(mktemp -d "${TMPDIR:-/tmp}/grade.XXXXXX"); trap 'rm -rf "$T"' EXIT
handout=; [ -f ref/exercises.tsv ] && handout=1
dir=${GRADE_EXDIR:-exercises}; [ -n "$handout" ] && dir=.
bash tools/exercises.sh manifest >"$T/m.tsv" || { echo "make grade: no exercise list" >&2; exit 2; }
bash tools/exercises.sh unfilled "$dir" | awk '{ print $1 }' >"$T/unfilled"
cut -f1 "$T/m.tsv" >"$T/m.names"
gpu_why=
if [ -z "${GRADE_NVCC:-}" ]; then gpu_why="built without nvcc"
else
    gi=${GRADE_GPU_INFO:-build/gpu_info}
    if [ ! -x "$gi" ] || ! "$gi" --probe >/dev/null 2>&1; then gpu_why="no usable CUDA device"; fi
fi
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=($(cut -f2 "$T/m.tsv" | sed 's/_.*//' | awk '!s[$0]++'))
echo "make grade: ${phases[*]}${gpu_why:+ (GPU exercises: $gpu_why)}"
broke=0
for p in "${phases[@]}"; do
    awk -F'\t' -v p="$p" '{ q = $2; sub(/_.*/, "", q) } q == p { print $1 }' "$T/m.tsv" >"$T/$p.names"
    [ -s "$T/$p.names" ] || continue
    : >"$T/$p.fail"; : >"$T/$p.blocked"
    if [ -z "$(grep -vxF -f "$T/unfilled" "$T/$p.names")" ]; then echo "  $p: every region unfilled, not run"; continue; fi
    if [ -n "$handout" ]; then b=${GRADE_BUILD:-build}; else b=${GRADE_BUILD_BASE:-build}/ex-$p; fi
    t0=$SECONDS; rc=0
    "$MAKE" --no-print-directory NO_DEPS=1 EX=1 BUILD="$b" RESULTS="$T/results" "$p" run >"$T/$p.log" 2>&1 || rc=$?
    # every "exercises behind ...: a, b (and c)" line of a FAIL, as one line of names
    grep -oE 'exercises behind (this check|it): .*' "$T/$p.log" | sed 's/^[^:]*: //' | while IFS= read -r l; do
        # the names outside parentheses are the suspects; "(and b, c)" the other code it ran
        all=$(grep -oE '[A-Za-z0-9]+\.[A-Za-z0-9_]+' <<<"$l" | grep -xF -f "$T/m.names")
        names=$(sed 's/([^)]*)//g' <<<"$l" | grep -oE '[A-Za-z0-9]+\.[A-Za-z0-9_]+' | grep -xF -f "$T/m.names")
        [ -n "$names" ] || names=$all
        [ -n "$names" ] || continue
        if grep -qxF -f "$T/unfilled" <<<"$all"; then grep -vxF -f "$T/unfilled" <<<"$names" >>"$T/$p.blocked"
        else echo "$names" >>"$T/$p.fail"; fi
    done
    if [ $rc -ne 0 ] && [ ! -s "$T/$p.fail" ] && [ ! -s "$T/$p.blocked" ]; then
        grep -vxF -f "$T/unfilled" "$T/$p.names" >>"$T/$p.fail"
        if grep -qE 'error|Error' "$T/$p.log" && ! grep -qE '(^| )(PASS|FAIL)' "$T/$p.log"; then
            broke=1; echo "  $p: the build failed: $(grep -m1 -E 'error' "$T/$p.log" | cut -c1-120)"
        else echo "  $p: the run failed naming no exercise: $(grep -m1 -E 'FAIL' "$T/$p.log" | cut -c1-120)"; fi
    fi
    echo "  $p: make $p run EX=1 $([ $rc -eq 0 ] && echo PASS || echo FAIL) ($((SECONDS - t0)) s)"
done
echo
printf '%-22s %-7s %-16s %s\n' exercise "runs on" status points
cat "$T"/*.fail 2>/dev/null | sort -u >"$T/all.fail"
cat "$T"/*.blocked 2>/dev/null | sort -u >"$T/all.blocked"
for p in "${phases[@]}"; do cat "$T/$p.names" 2>/dev/null; done >"$T/graded"
awk -F'\t' -v gw="$gpu_why" -v U="$T/unfilled" -v F="$T/all.fail" -v B="$T/all.blocked" -v G="$T/graded" '
    BEGIN { while ((getline l < U) > 0) u[l] = 1; while ((getline l < F) > 0) f[l] = 1
            while ((getline l < B) > 0) b[l] = 1; while ((getline l < G) > 0) g[l] = 1 }
    !($1 in g) { next }
    { pts = $3 == "GPU" ? 2 : 1
      if ($1 in u) st = "UNFILLED"; else if ($1 in f) st = "FAIL"; else if ($1 in b) st = "BLOCKED"
      else if ($3 == "GPU" && gw != "") st = "SKIPPED(no GPU)"; else st = "PASS"
      got = st == "PASS" ? pts : 0; tot += pts; sum += got; n[st]++
      if ($3 == "GPU") { gt += pts; gg += got } else { ct += pts; cg += got }
      printf "%-22s %-7s %-16s %d/%d\n", $1, $3, st, got, pts }
    END { printf "\ntotal: %d/%d points (CPU %d/%d, GPU %d/%d); %d PASS, %d FAIL, %d BLOCKED, %d UNFILLED, %d SKIPPED(no GPU)\n",
                 sum, tot, cg, ct, gg, gt, n["PASS"], n["FAIL"], n["BLOCKED"], n["UNFILLED"], n["SKIPPED(no GPU)"] }' "$T/m.tsv"
exit $broke
