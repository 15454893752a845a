#!/usr/bin/env bash
# tools/handout_test.sh - the grader, tried as a student meets it: make the handout, untar
# it, and check in the untarred tree that
#   - README_STUDENT.md names every GPU exercise and points to nothing the tree lacks;
#   - untouched, `make phaseN run EX=1` and `make phaseN test EX=1` (make test's section of
#     phase N: each phase's tests run once a state) both FAIL, naming one of phase N's
#     exercises, for every phase;
#   - with only phase N's regions filled (its marked files copied back from the
#     solutions), both PASS, whatever state the other phases are in: phases in reverse
#     order, 6 first, each cut again (and rebuilt) before the next;
#   - with only phase N's CPU regions filled (phases 4-6, whose tests run GPU regions on the
#     CPU emulator), `make phaseN test EX=1` ends "0 failed" (HANDOUT_CPU_TRACK);
#   - `make test` FAILS untouched, naming exercises, and ends "N passed, 0 failed" with
#     every region filled.
# CPU checks only (NO_CUDA=1), unless HANDOUT_GPU=1: then the tree is built for
# CUDA_ARCH (default sm_90) and each run and test includes the GPU kernels and their
# tests, as a student with a GPU meets them (on a GPU machine). One
# build folder serves every step: in a handout every selection compiles the same files
# (there is no exercises/ copy), and a fill or a cut gives the files a new time, so make
# rebuilds exactly what changed.
#   tools/handout_test.sh [PHASE...]   those phases only (default: every phase with
#                                      exercises, 6 first), and no `make test` steps
# Prints one PASS/FAIL line per check; exit 1 on any FAIL.
set -u
cd "$(dirname "$0")/.." || exit 1
root=$(pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/handout-test.XXXXXX"); trap 'rm -rf "$T"' EXIT; trap 'exit 130' INT; trap 'exit 143' TERM
# HANDOUT_TARBALL=FILE: that handout (make test's tools section has just made one), not a
# new one; its BUILD folder lists the exercises
if [ -n "${HANDOUT_TARBALL:-}" ]; then
    tarball=$HANDOUT_TARBALL; xbuild=$(dirname "$tarball")
    [ -f "$tarball" ] || { echo "FAIL no handout at $tarball"; exit 1; }
else
    xbuild="$T/build"
    if [ -n "${HANDOUT_GPU:-}" ]; then                     # the GPU reference for CUDA_ARCH
        BUILD="$xbuild" CUDA_ARCH="${CUDA_ARCH:-sm_90}" bash tools/exercises.sh handout >/dev/null || { echo "FAIL make handout"; exit 1; }
    else BUILD="$xbuild" NO_CUDA=1 bash tools/exercises.sh handout >/dev/null || { echo "FAIL make handout"; exit 1; }; fi
    tarball="$xbuild/handout.tar.gz"
fi
tar -xzf "$tarball" -C "$T" && tree="$T/flash-attention-from-scratch"
[ -f "$tree/ref/libfa_ref.a" ] || { echo "FAIL the handout has no ref/libfa_ref.a"; exit 1; }
[ -z "${HANDOUT_GPU:-}" ] || [ -f "$tree/ref/libfa_ref_gpu.a" ] || { echo "FAIL the handout has no ref/libfa_ref_gpu.a"; exit 1; }
list=$(BUILD="$xbuild" bash tools/exercises.sh list)                     # "NAME FILE" per exercise
phase_of() { local d=${1%%/*}; echo "${d%%_*}"; }          # phase5_backward/x.c -> phase5
all_phases=$(for f in $(awk '{ print $2 }' <<<"$list"); do phase_of "$f"; done | sort -u -r)
only=1; phases=("$@"); [ ${#phases[@]} -eq 0 ] && { only=; phases=($all_phases); }
bad=0
took=0   # seconds of the last mk, shown on each line (the test runs in CI: keep it cheap)
pass() { echo "PASS [${took}s] $*"; }
fail() { echo "FAIL [${took}s] $*"; bad=1; }
summary() { grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1; }   # run_tests.sh's last line
# the first FAIL line of a log and the exercises named after it
why() { grep -m1 -E '(^| )FAIL' "$1" | tr -s ' ' | cut -c1-100; grep -m1 -oE 'exercises behind[^:]*: .*' "$1" | cut -c1-100; }

gpu_flags="NO_CUDA=1"; [ -n "${HANDOUT_GPU:-}" ] && gpu_flags="CUDA_ARCH=${CUDA_ARCH:-sm_90}"
# The emulator's tests of code no exercise reaches (testlib.sh's t_unmarked: the Hopper
# ladder, FP8) run once: in the every-region-filled make test, or, in make test's tools
# section (HANDOUT_TARBALL), in none: the repository's phase 4 tests have just run them on
# the code the handout ships. Every other state skips them (T_UNMARKED_SKIP=1).
unmarked_skip=1
# make in the tree as a student types it (EX=1 spelled out, as README_STUDENT.md does),
# one build folder, no dependency installs, host code only
mk() {   # LOG MAKE-ARGS...
    local log=$1 t0=$SECONDS rc=0; shift
    (cd "$tree" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL T_UNMARKED_SKIP=$unmarked_skip make --no-print-directory -j"${JOBS:-2}" \
        NO_DEPS=1 $gpu_flags BUILD="$bdir" "$@" >"$log" 2>&1) || rc=$?
    took=$((SECONDS - t0))
    return $rc
}
files_of() { awk -v p="$1" '{ split($2, q, "_"); if (q[1] == p) print $2 }' <<<"$list" | sort -u; }
names_of() { awk -v p="$1" '{ split($2, q, "_"); if (q[1] == p) print $1 }' <<<"$list" | paste -sd'|' | sed 's/\./\\./g'; }
fill() { local f; for f in "$@"; do cp "$root/$f" "$tree/$f"; done; }
# cut again from the tarball; -m: the time of the extraction, newer than every object
recut() { local f; for f in "$@"; do tar -xzmf "$tarball" -C "$(dirname "$tree")" "flash-attention-from-scratch/$f"; done; }
bdir="$T/b"   # the build folder of $tree

# --- README_STUDENT.md: every GPU exercise named, no pointer to what the tree lacks ---
readme="$tree/README_STUDENT.md"
missing=$(awk '$2 ~ /\.cuh?$/ { print $1 }' <<<"$list" | while read -r n; do
              grep -qF "\`$n\`" "$readme" || echo "$n"; done)
[ -z "$missing" ] && pass "README_STUDENT.md names every GPU exercise" ||
    fail "README_STUDENT.md does not name the GPU exercises $(echo $missing)"
# (it names exercises/ and make exercises only to say what they are here: those lines say "here")
if grep -nE 'exercises/|make exercises' "$readme" | grep -vw 'here' >"$T/readme.hits"; then
    fail "README_STUDENT.md points to exercises/ or make exercises, which the handout lacks: $(head -1 "$T/readme.hits")"
else pass "README_STUDENT.md points to no exercises/ and no make exercises"; fi
if out=$(bash tools/check_student_readme.sh "$tree"); then pass "$out"; else fail "$(echo "$out" | paste -sd' ')"; fi

# --- untouched: every phase's run and test FAIL, naming that phase's exercises ---------
mk "$T/build.log" EX=1 all || { fail "the untouched handout does not build: $(tail -3 "$T/build.log")"; exit 1; }
# HANDOUT_FILLED_ONLY=1: only the filled steps (a GPU machine's time is short)
[ -n "${HANDOUT_FILLED_ONLY:-}" ] && only=1
# --- the two states of make test, on a tree of their own (a second copy of the handout, its
# own build folder), run beside the phases' steps below: untouched, it FAILS naming the
# exercises, each phase's section naming its own (each phase's tests run once a state: a
# phase's own test runs untouched only when phases are named, with no make test); with
# every region filled, it ends "N passed, 0 failed"
make_test_states() {
    mkdir -p "$T/t2" && tar -xzf "$tarball" -C "$T/t2" || { fail "cannot untar a second handout"; return; }
    tree="$T/t2/flash-attention-from-scratch"; bdir="$T/b2"
    if [ -z "$only" ]; then
        log="$T/test.untouched.log"
        if mk "$log" test; then fail "untouched, make test passes"
        elif grep -qE 'exercises behind' "$log" && summary "$log" | grep -qE ', [1-9][0-9]* failed'; then
            pass "untouched, make test FAILS naming exercises: $(summary "$log")"
        else fail "untouched, make test fails without naming exercises: $(tail -n 2 "$log" | paste -sd' ')"; fi
        # its summary: one "not filled in" line per exercise, no line of pages
        nf=$(grep -c '^not filled in: exercise ' "$log"); long=$(awk 'length > 400' "$log" | wc -l)
        if [ "$nf" -eq "$(wc -l <<<"$list")" ] && [ "$long" -eq 0 ]; then pass "untouched, make test's summary names all $nf exercises as not filled in, no line over 400 characters"
        else fail "untouched, make test's summary: $nf of $(wc -l <<<"$list") exercises named as not filled in, $long lines over 400 characters"; fi
    fi
    for p in $([ -z "${HANDOUT_FILLED_ONLY:-}" ] && echo "${phases[@]}"); do
        names=$(names_of "$p"); log="$T/$p.test.untouched.log"
        awk -v p="$p" '$0 == "== " p { on = 1 } on { print } on && index($0, "== " p ": ") == 1 { exit }' \
            "$T/test.untouched.log" >"$log"
        if ! grep -q '^  FAIL' "$log"; then fail "untouched, make test's $p section passes with its exercises empty"
        elif grep -qE "exercises behind[^:]*: .*($names)" "$log"; then
            pass "untouched, make test's $p section FAILS naming its exercises: $(why "$log" | paste -sd' ')"
        else fail "untouched, make test's $p section fails without naming one of its exercises ($names)"; fi
    done
    if [ -z "$only" ]; then
        fill $(awk '{ print $2 }' <<<"$list" | sort -u)
        log="$T/test.filled.log"; [ -z "${HANDOUT_TARBALL:-}" ] && unmarked_skip=0
        if mk "$log" test && summary "$log" | grep -qE ', 0 failed'; then
            pass "every region filled, make test: $(summary "$log")"
        else fail "every region filled, make test fails: $(summary "$log")"; grep -E '^  FAIL' "$log" | head -5 | sed 's/^/    /'; fi
    fi
    return $bad
}
if [ -z "$only" ]; then
    make_test_states >"$T/make_test_states.out" 2>&1 &
    states_pid=$!
fi

for p in $([ -z "${HANDOUT_FILLED_ONLY:-}" ] && echo "${phases[@]}"); do
    names=$(names_of "$p")
    for action in run test; do
        log="$T/$p.$action.untouched.log"
        [ "$action" = test ] && [ -z "$only" ] && continue   # make test's section of it: make_test_states
        if mk "$log" "$p" "$action" EX=1; then fail "untouched, make $p $action EX=1 passes with its exercises empty"
        elif grep -qE "exercises behind[^:]*: .*($names)" "$log"; then
            pass "untouched, make $p $action EX=1 FAILS naming its exercises: $(why "$log" | paste -sd' ')"
        else fail "untouched, make $p $action EX=1 fails without naming one of its exercises ($names): $(tail -3 "$log" | paste -sd' ')"; fi
    done
done

# --- only phase N filled: run and test PASS (6 first; each cut again after) ------------
for p in "${phases[@]}"; do
    files=$(files_of "$p")
    fill $files
    for action in run test; do
        log="$T/$p.$action.filled.log"
        if mk "$log" "$p" "$action" EX=1; then
            pass "with only $p's regions filled, make $p $action EX=1 passes$([ "$action" = test ] && echo ": $(summary "$log")")"
        else fail "with only $p's regions filled, make $p $action EX=1 fails: $(why "$log" | paste -sd' ') $(summary "$log")"
             [ "$action" = test ] && grep -E '^  FAIL' "$log" | head -5 | sed 's/^/    /'; fi
    done
    recut $files
    for f in $files; do cmp -s "$tree/$f" <(tar -xzOf "$tarball" "flash-attention-from-scratch/$f") ||
        fail "$f was not cut again"; done
done

# --- the CPU-only track: only phase N's CPU regions filled (its GPU regions stubs), make
# phaseN test EX=1 ends "0 failed": the emulator's tests of the unfilled GPU regions SKIP,
# naming them. HANDOUT_CPU_TRACK: the phases (default: those whose tests run GPU regions on
# the CPU emulator, t_emu; "none": no step)
cpu_track=${HANDOUT_CPU_TRACK:-$(grep -l 't_emu ' phase*_*/tests.sh 2>/dev/null | sed 's|_.*||' | paste -sd' ')}
[ "$cpu_track" = none ] && cpu_track=
for p in $cpu_track; do
    [[ " ${phases[*]} " == *" $p "* ]] || continue
    files=$(files_of "$p" | grep -vE '\.cuh?$')
    [ -n "$files" ] || continue
    fill $files
    log="$T/$p.test.cpu.log"
    if mk "$log" "$p" test EX=1 && summary "$log" | grep -qE ', 0 failed'; then
        pass "with only $p's CPU regions filled, make $p test EX=1: $(summary "$log"), $(grep -c 'not filled in$' "$log") emulator tests skipped as not filled in"
    else fail "with only $p's CPU regions filled, make $p test EX=1 fails: $(summary "$log")"; grep -E '^  FAIL' "$log" | head -5 | sed 's/^/    /'; fi
    recut $files
done

if [ -n "${states_pid:-}" ]; then
    wait "$states_pid" || bad=1
    cat "$T/make_test_states.out"
fi
echo "handout test: $SECONDS s"
exit $bad
