# tools/testlib.sh - the few functions every tests.sh uses. Sourced by run_tests.sh.
#
#   t_run   NAME CMD...   passes when CMD exits 0
#   t_fail  NAME CMD...   passes when CMD exits non-zero but not 2 (a check that must FAIL)
#   t_exit2 NAME CMD...   passes when CMD exits 2 with exactly one line on stderr, nothing on stdout
#   t_exit2_says NAME REGEX CMD...   t_exit2, and that line matches REGEX (grep -E)
#   t_units CMD...        runs a unit-test program that prints "PASS name", "FAIL name: why"
#                         and "SKIP name: why" lines; each line counts as one test
#   t_gpu   NAME CMD...   t_run on a machine with a usable CUDA device, else SKIP with the reason
#   t_skip  NAME WHY      records a skipped test
# Each test's output goes to $LOGDIR/<name>.log; a failure prints its last lines.
#
# Temporary files: sourcing this makes one folder for the whole run and exports it as
# TMPDIR, so every `mktemp` of every tests.sh (and of the programs they start) lands in it;
# it is removed when the run exits, however it exits (EXIT trap; INT, TERM and HUP exit
# through it). A tests.sh must not set its own EXIT trap (it would replace this one).

BUILD=${BUILD:-build}
LOGDIR=${LOGDIR:-$BUILD/testlogs}
mkdir -p "$LOGDIR"
T_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/fa-tests.XXXXXX") || { echo "testlib: cannot make a temporary folder" >&2; exit 1; }
export TMPDIR=$T_ROOT
# T_BG_PIDS: tests a tests.sh runs in the background (tools/tests.sh's handout test), stopped
# with the run
_t_cleanup() {
    [ -n "${T_BG_PIDS:-}" ] && kill $T_BG_PIDS 2>/dev/null
    [ -n "${T_ROOT:-}" ] && chmod -R u+rwx "$T_ROOT" 2>/dev/null; rm -rf "${T_ROOT:?}"
}
trap _t_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
PASSED=0; FAILED=0; SKIPPED=0; FAILED_NAMES=()

_log() { echo "$LOGDIR/$(echo "$1" | tr -c 'A-Za-z0-9_.-' '_').log"; }
_pass() { PASSED=$((PASSED + 1)); printf '  PASS  %s\n' "$1"; }
_failed() {
    FAILED=$((FAILED + 1)); FAILED_NAMES+=("$1")
    printf '  FAIL  %s%s\n' "$1" "${2:+ ($2)}"
    [ -f "$3" ] && tail -n 15 "$3" | sed 's/^/        | /'
}
t_skip() { SKIPPED=$((SKIPPED + 1)); printf '  SKIP  %s: %s\n' "$1" "$2"; }
# T_FROM=TEXT: every test before the first whose name holds TEXT is skipped, not run (a run
# cut by a time limit goes on where it stopped); code between tests still runs
# T_GPU_ONLY=1: only the GPU tests (t_gpu) and the unit programs (t_units) run; every other
# test is skipped, said so (a lent GPU's call re-runs what CI cannot, not what it did)
_before_from() {
    if [ "${T_GPU_ONLY:-0}" = 1 ] && [ -z "${_T_IN_GPU:-}" ] && [[ "$1" != units_* ]]; then
        t_skip "$1" "not a GPU test (T_GPU_ONLY)"; return 0
    fi
    [ -n "${T_FROM:-}" ] || return 1
    if [[ "$1" == *"$T_FROM"* ]]; then T_FROM=; return 1; fi
    t_skip "$1" "before T_FROM"
}

# every test's seconds, for the summary's slowest tests (the next slow test shows itself)
T_TIMES=$T_ROOT/.times
_took() { echo "$((SECONDS - $1)) $2" >>"$T_TIMES"; }

t_run() {
    _before_from "$1" && return 0
    local name=$1 t0=$SECONDS; shift; local log; log=$(_log "$name")
    if "$@" >"$log" 2>&1; then _pass "$name"; else _failed "$name" "exit $?" "$log"; fi
    _took "$t0" "$name"
}

t_fail() {
    _before_from "$1" && return 0
    local name=$1 t0=$SECONDS; shift; local log; log=$(_log "$name"); local rc=0
    "$@" >"$log" 2>&1 || rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 2 ] && [ $rc -lt 124 ]; then _pass "$name"
    else _failed "$name" "expected a failing check, got exit $rc" "$log"; fi
    _took "$t0" "$name"
}

t_exit2() {
    _before_from "$1" && return 0
    local name=$1; shift; local log; log=$(_log "$name"); local rc=0
    "$@" >"$log.out" 2>"$log" || rc=$?
    local lines; lines=$(wc -l <"$log")
    if [ $rc -eq 2 ] && [ "$lines" -eq 1 ] && [ ! -s "$log.out" ]; then _pass "$name"
    else _failed "$name" "want exit 2 and one stderr line; got exit $rc, $lines lines" "$log"; fi
}

t_exit2_says() {
    _before_from "$1" && return 0
    local name=$1 re=$2; shift 2; local log; log=$(_log "$name"); local rc=0
    "$@" >"$log.out" 2>"$log" || rc=$?
    local lines; lines=$(wc -l <"$log")
    if [ $rc -eq 2 ] && [ "$lines" -eq 1 ] && [ ! -s "$log.out" ] && grep -qE -- "$re" "$log"; then _pass "$name"
    else _failed "$name" "want exit 2 and one stderr line matching /$re/; got exit $rc, $lines lines" "$log"; fi
}

t_units() {
    _before_from "units_$(basename "$1")" && return 0
    local log t0=$SECONDS; log=$(_log "units_$(basename "$1")"); local rc=0
    "$@" >"$log" 2>&1 || rc=$?
    _took "$t0" "units_$(basename "$1")"
    local before=$FAILED
    while IFS= read -r line; do
        case "$line" in
            "PASS "*) _pass "${line#PASS }" ;;
            "FAIL "*) _failed "${line#FAIL }" "" "" ;;
            "SKIP "*) SKIPPED=$((SKIPPED + 1)); printf '  SKIP  %s\n' "${line#SKIP }" ;;
        esac
    done <"$log"
    if [ $rc -ne 0 ] && [ $FAILED -eq $before ]; then _failed "$(basename "$1")" "exit $rc" "$log"; fi
}

# Why GPU tests cannot run here, or nothing when they can.
gpu_skip_reason() {
    if [ ! -x "$BUILD/gpu_info" ]; then echo "built without nvcc (no CUDA toolkit)"; return; fi
    local why; why=$("$BUILD/gpu_info" --probe 2>&1) || { echo "${why:-no usable CUDA device}"; return; }
}

t_gpu() {
    local name=$1; shift
    local why; why=$(gpu_skip_reason)
    if [ -n "$why" ]; then t_skip "$name" "$why"; else _T_IN_GPU=1 t_run "$name" "$@"; fi
}

# The summary: in an exercise build each exercise of the phases under test that is not
# filled in yet (one line each: its region is still the stub), then the failed tests' names,
# the first T_SHOW_FAILED (20) and how many more, then the count line.
T_SHOW_FAILED=${T_SHOW_FAILED:-20}
t_summary() {
    echo
    if [ -s "$T_TIMES" ]; then
        echo "slowest tests (seconds):"
        sort -rn "$T_TIMES" | head -n 8 | sed 's/^/  /'
    fi
    if [ -n "${EX_BUILD:-}" ]; then
        local dir=${T_EXDIR:-exercises} files="" p d
        [ -f ref/exercises.tsv ] && dir=.
        for p in ${TEST_PHASES:-}; do for d in "${p}"_*/; do files="$files ${d%/}"; done; done
        bash tools/exercises.sh unfilled "$dir" 2>/dev/null | while read -r n f k; do
            case " $files " in *" ${f%%/*} "*) printf 'not filled in: exercise %s (%s, %s)\n' "$n" "$f" "$k" ;; esac
        done
    fi
    if [ $FAILED -gt 0 ]; then
        local i
        echo "failed ($FAILED):"
        for ((i = 0; i < FAILED && i < T_SHOW_FAILED; i++)); do printf '  %s\n' "${FAILED_NAMES[$i]:0:160}"; done
        [ $FAILED -gt $T_SHOW_FAILED ] && echo "  ... and $((FAILED - T_SHOW_FAILED)) more (their FAIL lines above; logs in $LOGDIR)"
    fi
    echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
    [ $FAILED -eq 0 ]
}

# ---- GPU regions on the CPU emulator (tools/mma_emu) --------------------------------------
# The emulator compiles a tree's GPU sources as they are: in a handout those are the
# student's, and a region still its stub would fail the test without naming an exercise.
# gpu_unfilled FILE...: the GPU exercises of FILEs whose regions in this tree are still the
# stub ("a, b"); none in the repository (there its files are the reference).
# (the student's files: a handout's tree itself; in the repository, an exercise build's
# EXDIR, whose copies the emulator compiles, e.g. EMU_FA2_KERNEL)
gpu_unfilled() {
    local dir=.
    [ -n "${EX_BUILD:-}" ] && [ ! -f ref/exercises.tsv ] && dir=${EXDIR:-exercises}
    bash tools/exercises.sh unfilled "$dir" "$@" 2>/dev/null | awk '$3 == "GPU" { print $1 }' | paste -sd, - | sed 's/,/, /g'
}
# t_emu "FILE..." t_run|t_fail|t_teeth [--run] NAME CMD...: the test, skipped while one of the GPU regions of
# FILEs (those the emulation compiles) is unfilled, saying which; in a handout a t_run's
# name ends with the GPU exercises it runs, so that its FAIL names them (T_EMU_BLAMES=1: not
# so; the emulator names those behind a FAIL itself, by their own checks: fa2_units.h)
t_emu() {
    local files=$1 fn=$2 opt=() name u names; shift 2
    [ "$1" = --run ] && { opt=(--run); shift; }   # t_teeth --run
    name=$1; shift
    u=$(gpu_unfilled $files)
    if [ -n "$u" ]; then
        case "$u" in *,*) t_skip "$name" "GPU exercises $u not filled in" ;; *) t_skip "$name" "GPU exercise $u not filled in" ;; esac
        return 0
    fi
    if [ "$fn" = t_run ] && [ -f ref/exercises.tsv ] && [ -z "${T_EMU_BLAMES:-}" ]; then
        names=$(awk -F'\t' -v fs=" $files " 'index(fs, " " $2 " ") && $3 == "GPU" { print $1 }' ref/exercises.tsv | paste -sd, - | sed 's/,/, /g')
        [ -z "$names" ] || name="$name (exercises behind it: $names)"
    fi
    "$fn" "${opt[@]}" "$name" "$@"
}

# ---- tests no exercise reaches ----------------------------------------------------------
# An emulator program none of whose files holds an exercise region (tools/mma_emu/run.sh with
# EMU_DEPS=1 lists them; gen.py's copy of a header counts as that header) tests the
# repository's own code: in a handout, the code the repository's make test passed. The
# handout test sets T_UNMARKED_SKIP=1 in the states that would only run it again.
# t_unmarked MODE NAME CMD...: t_run, skipped under T_UNMARKED_SKIP=1 in an exercise build
# when the emulator program MODE compiles no exercise file
exercise_files() {
    if [ -f ref/exercises.tsv ]; then cut -f2 ref/exercises.tsv
    else bash tools/exercises.sh list 2>/dev/null | awk '{ print $2 }'; fi | sort -u
}
emu_exercise_files() {   # MODE: the exercise files among those its emulator program compiles
    local deps
    deps=$(EMU_DEPS=1 EMU_OUT="$T_ROOT/emu_deps" bash tools/mma_emu/run.sh "$@" 2>/dev/null) && [ -n "$deps" ] ||
        { echo "(not known: EMU_DEPS failed)"; return; }
    awk 'NR == FNR { ex[$0] = 1; n = split($0, p, "/"); base[p[n]] = $0; next }
         /^gen:/ { b = substr($0, 5); if (b in base) print base[b]; next }
         $0 in ex { print }' <(exercise_files) <(echo "$deps") | sort -u
}
t_unmarked() {
    local mode=$1; shift
    if [ "${T_UNMARKED_SKIP:-}" = 1 ] && [ -n "${EX_BUILD:-}" ] && [ -z "$(emu_exercise_files "$mode")" ]; then
        t_skip "$1" "no exercise's file is in it (EMU_DEPS=1 tools/mma_emu/run.sh $mode): the handout test runs it once"
    else t_run "$@"; fi
}

# ---- the grader's teeth: one plausible mistake in an exercise must FAIL and be named ----
# `make PHASE run EX=1` built from the reference with ONE mistake in the exercise (the K-th
# reference line of EXERCISE edited) must FAIL and name EXERCISE alone (every "exercises
# behind" line of the run names it and no other). CPU only (NO_CUDA=1).
ex_mistake_fails() {   # PHASE FILE EXERCISE K EDIT BUILD: EDIT the K-th reference line of EXERCISE
    local phase=$1 file=$2 ex=$3 k=$4 edit=$5 dir line n out rc=0
    dir=$(mktemp -d "${TMPDIR:-/tmp}/mistake.XXXXXX"); mkdir -p "$dir/ex/$(dirname "$file")"
    line=$("$BUILD/mkexercise" --only "$ex" --solutions "$file" | sed -n "${k}p")
    n=$(awk -v ex="/* EXERCISE $ex:" -v l="$line" 'index($0, ex) { on = 1 } on && $0 == l { print NR; exit }' "$file")
    [ -n "$line" ] && [ -n "$n" ] || { echo "no reference line $k of $ex in $file"; return 3; }
    case "$edit" in   # =TEXT: the line becomes TEXT (its indentation kept); s/../../: sed on it
    =*) sed "${n}s|[^[:space:]].*|${edit#=}|" "$file" ;;
    *)  sed "${n}${edit}" "$file" ;;
    esac >"$dir/ex/$file"
    ! cmp -s "$file" "$dir/ex/$file" || { echo "the edit changed nothing"; return 3; }
    out=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -j"${JOBS:-2}" NO_DEPS=1 NO_CUDA=1 EX=1 \
          EXDIR="$dir/ex" BUILD="$6" RESULTS="$dir/results" "$phase" run 2>&1) || rc=$?
    echo "$out" | grep -E 'FAIL|exercises behind|error' | head -20
    [ $rc -ne 0 ] || { echo "make $phase run EX=1 passed with the mistake"; return 1; }
    grep -qE "exercises behind (this check|it): .*$ex([^a-z_]|$)" <<<"$out" || { echo "the FAIL does not name $ex"; return 1; }
    # and names it alone: every "exercises behind" line of the run names $ex and no other
    local named
    named=$(grep -E "exercises behind (this check|it): " <<<"$out" | sed -E 's/^.*exercises behind (this check|it): //' | sort -u)
    [ "$named" = "$ex" ] || { echo "want every FAIL to name $ex alone; the run names:"; echo "$named"; return 1; }
}
ex_mistake() {   # NAME PHASE FILE EXERCISE K EDIT (the reference line itself is never written here:
                 # a handout holds this file, and leaks checks it holds no solution line)
    # a test of the grader, not of the student's code: never in an exercise build (in a
    # handout the "reference" lines would be the student's own, which the edit need not fit)
    if [ -n "${EX_BUILD:-}" ]; then t_skip "$1" "a test of the grader: the repository's make test runs it"
    elif [ -n "$("$BUILD/mkexercise" --only "$4" --solutions "$3" 2>/dev/null)" ]; then
        t_run "$1" ex_mistake_fails "$2" "$3" "$4" "$5" "$6" "$T_ROOT/mistakes-$2"   # one build a phase: only the edited file recompiles
    else t_skip "$1" "the reference of $4 is not in this tree (a handout)"; fi
}

# t_teeth NAME CMD... / t_teeth --run NAME CMD...: t_fail / t_run for a mistake planted in
# the repository's own code (EMU_MUTATE: the emulator's teeth). A test of the test tools, not
# of the student's code: in an exercise build skipped (the planted text may not be there,
# and the repository's make test runs it once)
t_teeth() {
    local fn=t_fail
    [ "$1" = --run ] && { fn=t_run; shift; }
    if [ -n "${EX_BUILD:-}" ]; then t_skip "$1" "a test of the emulator's teeth: the repository's make test runs it"
    else "$fn" "$@"; fi
}

# t_bounded NAME SECONDS MIB CMD...: t_run, and CMD (with its children) ended within SECONDS
# of wall time and MIB of peak resident memory (GNU time -v); SKIP without /usr/bin/time.
t_bounded() {
    _before_from "$1" && return 0
    local name=$1 secs=$2 mib=$3; shift 3; local log; log=$(_log "$name"); local rc=0
    [ -x /usr/bin/time ] || { t_skip "$name" "/usr/bin/time not found"; return; }
    /usr/bin/time -v -o "$log.time" "$@" >"$log" 2>&1 || rc=$?
    local wall kb
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s }' "$log.time")
    kb=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$log.time")
    if [ $rc -eq 0 ] && awk -v w="${wall:-1e9}" -v k="${kb:-1e12}" -v s="$secs" -v m="$mib" 'BEGIN { exit !(w < s && k < m * 1024) }'
    then _pass "$name (${wall} s, $(( ${kb:-0} / 1024 )) MiB)"
    else _failed "$name" "exit $rc, ${wall} s, $(( ${kb:-0} / 1024 )) MiB; bound ${secs} s, ${mib} MiB" "$log"; fi
}

# "${BOUNDED[@]}" CMD...: CMD under 2 GB of virtual memory and 10 s, the bound every
# accepted problem's CPU rows keep (problem.h: attn_small_like); a run past it is killed
# and its test fails. (t_bounded measures a run's wall time and peak memory instead.)
BOUNDED=(bash -c 'ulimit -v 2000000 && exec timeout 10 "$@"' bounded)

# t_run_for "PHASES" NAME CMD...: t_run, but in an exercise build where one of PHASES is not
# under test (run_tests.sh's TEST_PHASES) skipped with the reason: CMD needs that phase's
# code, which is the student's there and may be unwritten (a phase's tests never need
# another phase solved).
t_run_for() {
    local phases=$1 p; shift
    if [ -n "${EX_BUILD:-}" ]; then
        for p in $phases; do
            [[ " ${TEST_PHASES:-} " == *" $p "* ]] || { t_skip "$1" "an exercise build: it runs $p's code (make $p test EX=1 tests it)"; return; }
        done
    fi
    t_run "$@"
}
