#!/usr/bin/env bash
# tools/handout_test.sh - the grader, tried as a student would: make the handout, untar
# it, and for every phase with exercises check that `make phaseN run EX=1` FAILS on the
# untouched tree and PASSES once that phase's regions alone are filled (its marked files
# copied back from the solutions), whatever state the other phases are in. CPU checks
# only (NO_CUDA=1): the GPU fill-ins are tried on a GPU by tools/tests.sh.
#   tools/handout_test.sh [PHASE...]      prints one PASS/FAIL line per check; exit 1 on any FAIL
set -u
cd "$(dirname "$0")/.." || exit 1
root=$(pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/handout-test.XXXXXX"); trap 'rm -rf "$T"' EXIT
BUILD="$T/build" bash tools/exercises.sh handout >/dev/null || { echo "FAIL make handout"; exit 1; }
tar -xzf "$T/build/handout.tar.gz" -C "$T" && tree="$T/flash-attention-from-scratch"
[ -f "$tree/ref/libfa_ref.a" ] || { echo "FAIL the handout has no ref/libfa_ref.a"; exit 1; }
phases=("$@")
[ ${#phases[@]} -eq 0 ] && phases=($(bash tools/exercises.sh list | awk '{ split($2, p, "_"); print p[1] }' | sort -u))
bad=0
run() {   # phase -> exit status of `make phase run EX=1` in the handout tree (one build folder)
    (cd "$tree" && make --no-print-directory NO_DEPS=1 NO_CUDA=1 BUILD="$T/b" "$1" run EX=1 >"$T/$1.$2.log" 2>&1)
}
for p in "${phases[@]}"; do
    files=$(bash tools/exercises.sh list | awk -v p="$p" '{ split($2, q, "_"); if (q[1] == p) print $2 }' | sort -u)
    if run "$p" untouched; then echo "FAIL $p: make $p run EX=1 passes with its exercises empty"; bad=1
    elif grep -qE '(^| )FAIL' "$T/$p.untouched.log"; then
        echo "PASS $p: untouched, make $p run EX=1 fails: $(grep -m1 -E '(^| )FAIL' "$T/$p.untouched.log" | cut -c1-110)"
    else echo "FAIL $p: untouched, make $p run EX=1 stops without a FAIL verdict (a build error?)"; bad=1; fi
    for f in $files; do cp "$root/$f" "$tree/$f"; done            # fill in this phase only
    if run "$p" filled; then echo "PASS $p: with only its regions filled, make $p run EX=1 passes"
    else echo "FAIL $p: filled, make $p run EX=1 fails (log: $(grep -m1 -E 'FAIL' "$T/$p.filled.log"))"; bad=1; fi
    for f in $files; do tar -xzf "$T/build/handout.tar.gz" -C "$T" "flash-attention-from-scratch/$f"; done   # cut again
done
exit $bad
