# tools/tests.sh - project-wide tests (sourced by tools/run_tests.sh after the phases):
# exercises, handout, a sanitized and warning-free host build, the make targets.
# Every nested make names its BUILD: `make test BUILD=x` passes BUILD=x down through
# MAKEFLAGS, which would otherwise put an EX=1 build into the tests' own build folder.
PYTHON=${PYTHON:-python3}
T=$(mktemp -d "${TMPDIR:-/tmp}/tools-tests.XXXXXX")   # under testlib's run folder, removed at exit

# The handout (HO_BUILD) and its test in the background: tools/handout_bg.sh, which
# run_tests.sh sources before the phases; without it (tests.sh sourced alone) they start here
[ -n "${HO_BUILD:-}" ] || source tools/handout_bg.sh

# --- exercises: up to date; each cut compiles and FAILS its phase's check ----------
t_run "exercises/ up to date with the markers" bash tools/exercises.sh check

# --- the kernel families read in one sitting (docs/design.md): function, file, step sizes ----
if command -v ctags >/dev/null 2>&1; then
    t_run "code sizes: phases 4-6, every .cu/.cuh function <= 120 lines, every file <= 600, every step file <= 200" \
        bash tools/code_sizes.sh
    t_fail "code sizes: a function of 121 lines fails" bash -c "d=\$(mktemp -d) && mkdir -p \$d/x && \
        { echo 'void f() {'; for i in \$(seq 119); do echo '  ;'; done; echo '}'; } >\$d/x/long.cu && bash tools/code_sizes.sh \$d/x"
else
    t_skip "code sizes: phases 4-6" "ctags not found (apt-get install universal-ctags)"
fi
# the families' tables read back by the C preprocessor (tools/kernels.sh): every row a name
t_run "kernels.sh: the Hopper ladder's 9 fp16 steps, its 4 FP8 rows, the 6 decode variants" bash -c \
    "[ \$(bash tools/kernels.sh phase4-hopper --names | wc -l) -eq 9 ] && [ \$(bash tools/kernels.sh phase4-fp8 --names | wc -l) -eq 4 ] && \
     [ \$(bash tools/kernels.sh phase6-decode --names | wc -l) -eq 6 ]"

phase_of() { local d=${1%%/*}; echo "${d%%_*}"; }      # phase1_naive/x.cu -> phase1

# Build one phase from a cut tree and expect `make <phase> run EX=1` on it to FAIL: the
# default problem (with <phase>_RUN_ARGS) and the shapes of <phase>_EX_RUNS, as a student
# runs it. Exit 1 for that FAIL (make's own 2 would read as a broken test), 3 when the
# cut does not compile.
exercise_run_fails() {   # NAME DIR MAKE-VARIABLES...
    local name=$1 dir=$2 file phase; shift 2
    file=$(bash tools/exercises.sh cut "$name" "$dir" | head -n 1)
    phase=$(phase_of "$file")
    make --no-print-directory -j"${JOBS:-2}" "$@" EX=1 EXDIR="$dir" BUILD="$dir/build" \
         "$phase-build" >"$dir/build.log" 2>&1 || { echo "the fill-in version does not compile:"; tail -20 "$dir/build.log"; return 3; }
    make --no-print-directory "$@" NO_DEPS=1 EX=1 EXDIR="$dir" BUILD="$dir/build" RESULTS="$dir/results" \
         "$phase" run || return 1
}
# CPU only; the FAIL must name the exercise
exercise_fails_cpu() {   # NAME DIR
    local rc=0; exercise_run_fails "$1" "$2" NO_CUDA=1 >"$2/run.log" 2>&1 || rc=$?
    cat "$2/run.log"
    [ $rc -eq 1 ] && ! grep -qE "exercises behind (this check|it): .*$1([^a-z_]|$)" "$2/run.log" && { echo "the FAIL does not name $1"; return 4; }
    return $rc
}
# For a cut in a .cu file: compile it (one arch, fast), then on a GPU expect the FAIL.
exercise_fails_gpu() {   # NAME DIR
    exercise_run_fails "$1" "$2" CUDA_ARCH="${EX_CUDA_ARCH:-sm_90}"
}
# passes only on the check's FAIL (exit 1): not on a cut that does not compile (3), nor
# on a FAIL that does not name its exercise (4)
fails_the_check() { local rc=0; "$@" || rc=$?; [ $rc -eq 1 ] || { echo "want the check's FAIL (exit 1), got exit $rc"; return 1; }; }
while read -r name file; do
    [ -n "$name" ] || continue
    case "$file" in
    *.cu|*.cuh)
        if ! command -v "${NVCC:-nvcc}" >/dev/null 2>&1; then
            t_skip "exercise $name: fill-in compiles and fails the check" "nvcc not found"
        elif [ -n "$(gpu_skip_reason)" ]; then
            # without a GPU the check cannot run: show at least that it compiles
            # every .cu of the cut: the file itself, or for a cut header the sources that
            # include it (exercises.sh cut copies them beside it)
            t_run "exercise $name: fill-in compiles" bash -c "
                dir=\$(mktemp -d '$T/ex.XXXX'); bash tools/exercises.sh cut '$name' \"\$dir\" >/dev/null || exit 1
                n=0; for cu in \$(find \"\$dir\" -name '*.cu'); do n=\$((n + 1))
                    ${NVCC:-nvcc} -std=c++17 -arch=sm_90 -Icommon $(printf -- '-I%s ' phase*_*) -DHAVE_CUDA=1 -c \"\$cu\" -o \"\$dir/x.o\" || exit 1
                done; [ \$n -gt 0 ]"
            t_skip "exercise $name: fill-in fails the check" "$(gpu_skip_reason)"
        else
            t_run "exercise $name: fill-in fails the check" fails_the_check exercise_fails_gpu "$name" "$(mktemp -d "$T/ex.XXXX")"
        fi ;;
    *)  t_run "exercise $name: fill-in compiles and fails the check" fails_the_check exercise_fails_cpu "$name" "$(mktemp -d "$T/ex.XXXX")" ;;
    esac
done < <(bash tools/exercises.sh list | grep -E -- "${EXERCISE_FILTER:-.}")
# EXERCISES_ONLY=1 (with EXERCISE_FILTER, e.g. '\.cu$' for the GPU fill-ins): stop here
[ -n "${EXERCISES_ONLY:-}" ] && return 0

# `make phase2 run EX=1` cuts phase 2's exercises only (the phase-0 oracle it is checked
# against stays whole: its weights for [3, 1, 2] still print right), and a failing check
# names the exercises behind it
t_run "make phase2 run EX=1 fails on phase 2's exercises alone, naming them" bash -c '
    out=$(make --no-print-directory NO_DEPS=1 EX=1 BUILD="'"$BUILD"'/ex-phase2" RESULTS="'"$T"'/ex-results" phase2 run 2>&1) && exit 1
    grep -q "exercises behind this check: p2\." <<<"$out" && grep -qF "oracle [0.665, 0.090, 0.245]" <<<"$out"'

source tools/mutants.sh   # the grader's holes: one mistake in one exercise FAILs naming it alone
# the side-by-side profile table (tools/ncu_compare.py) on the recorded raw metrics: the
# backward kernels' rows as chapter 5 quotes them, and no table from a CSV with no launch
t_run "ncu_compare table reads recorded raw profiles (chapter 5's rows)" bash -c '
    d=$(mktemp -d "'"$T"'/ncu.XXXX") && tar -xzf docs/results/h100/ncu_raw_afbaa25.tar.gz -C "$d" ours_bwd128.csv fa2_bwd128.csv &&
    out=$('"$PYTHON"' tools/ncu_compare.py table "$d/ours_bwd128.csv" "$d/fa2_bwd128.csv") &&
    grep -qE "^time \(ms.* 15\.53 +10\.95$" <<<"$out" && grep -qE "^shared ld wavefronts +1\.813e\+09 +1\.210e\+09$" <<<"$out"'
t_fail "ncu_compare table refuses a CSV with no profiled launch" bash -c '
    f="'"$T"'/empty_ncu.csv"; printf "\"ID\",\"Kernel Name\"\n" >"$f"; '"$PYTHON"' tools/ncu_compare.py table "$f"'
t_run "chapters 4b, 5, 5b, 6 quote their recorded files (tools/check_chapters.py)" "$PYTHON" tools/check_chapters.py

# the handout test runs the emulator's tests of code no exercise reaches once (t_unmarked):
# the files each emulator program compiles name the exercises it reaches
emu_marks_known() {
    local m h d
    m=$(emu_exercise_files mask); h=$(emu_exercise_files hopper); d=$(emu_exercise_files decode | paste -sd' ')
    echo "mask: $m; hopper: ${h:-none}; decode: $d"
    [ "$m" = phase4_fa2/fa2_mma_kernel.cuh ] && [ -z "$h" ] &&
        [ "$d" = "phase6_decoding/dec_bounds.cuh phase6_decoding/dec_combine.cuh phase6_decoding/dec_paged.cuh" ]
}
if command -v g++ >/dev/null 2>&1 && [ -f "${CUDA_HOME:-/usr/local/cuda}/include/cuda_fp16.h" ]; then
    t_run "EMU_DEPS: the mask emulator compiles fa2_mma_kernel.cuh, the decode one phase 6's three marked headers (gen.py's copies), the Hopper ladder's no exercise file" emu_marks_known
else t_skip "EMU_DEPS: the files each emulator program compiles" "no g++ or no CUDA headers"; fi

# with nvcc, the handout carries the GPU reference (one arch here, to keep it quick): the
# kernels a phase borrows from another, renamed ref_f, with no unrenamed launcher left
if [ -n "$(command -v "${NVCC:-nvcc}")" ]; then
    t_run "make handout with nvcc ships ref/libfa_ref_gpu.a: fa2_mma_launch as ref_fa2_mma_launch only" bash -c '
        make --no-print-directory BUILD="'"$T"'/hgpu" CUDA_ARCH=sm_90 handout >/dev/null || exit 1
        lib=$(mktemp -d "'"$T"'/hgpu.XXXX"); tar -xzf "'"$T"'/hgpu/handout.tar.gz" -C "$lib" || exit 1
        a="$lib/flash-attention-from-scratch/ref/libfa_ref_gpu.a"; [ -f "$a" ] || { echo "no $a"; exit 1; }
        nm "$a" | grep -q " T ref_fa2_mma_launch$" && ! nm "$a" | grep -qE " T (fa2_mma_launch|fa1_mma_launch|naive_gpu_forward)$"'
else t_skip "make handout with nvcc ships ref/libfa_ref_gpu.a" "nvcc not found"; fi
t_run "handout holds no solution line" bash tools/exercises.sh leaks "$HO_BUILD/handout.tar.gz"
source tools/student_tests.sh   # README_STUDENT.md, unfilled regions, make test's summary, make grade, warning-free stubs

# --- host code: no warnings (-Werror), and clean under AddressSanitizer + UBSan -----
SAN="$T/asan"
t_run "host code builds with -Wall -Wextra -Werror" make --no-print-directory -j"${JOBS:-2}" NO_CUDA=1 BUILD="$SAN" \
      CFLAGS="-O1 -g -Werror -fsanitize=address,undefined -fno-omit-frame-pointer" \
      LDLIBS="-lm -fsanitize=address,undefined" all
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
for prog in "$SAN"/test_phase* "$SAN"/test_common "$SAN"/test_mask; do
    [ -x "$prog" ] && t_run "ASan+UBSan clean: $(basename "$prog")" "$prog"
done
for prog in "$SAN"/phase?; do
    [ -x "$prog" ] && t_run "ASan+UBSan clean: $(basename "$prog") --quiet" "$prog" --quiet --csv "$T/asan.csv"
done
# a sweep builds its tables of points on the stack: every one, CPU points only (bounded)
for prog in "$SAN"/phase[1-6]; do
    [ -x "$prog" ] && t_run "ASan+UBSan clean: $(basename "$prog") --sweep --cpu" "$prog" --sweep --cpu --quiet --csv "$T/asan_sweep.csv"
done

# --- GPU kernels: no register spills (ptxas -v for sm_90; needs nvcc, not a GPU) ------
for p in $(make --no-print-directory -s list-spills 2>/dev/null); do
    if command -v "${NVCC:-nvcc}" >/dev/null 2>&1; then
        t_run "$p kernels compile without register spills or serialised wgmma (ptxas -v, sm_90)" make --no-print-directory BUILD="$BUILD" "$p-spills"
    else
        t_skip "$p kernels compile without register spills" "nvcc not found"
    fi
done

# --- the make targets a reader types --------------------------------------------------
t_run "make help lists every target" bash -c \
    'out=$(make --no-print-directory help); for w in "phaseN run" "phaseN test" "phaseN plot" "phaseN profile" "phaseN sanitize" "make run" "make test" "make deps" "make clean" "make handout" "make exercises" "make grade" "make train-lib" "make train-check"; do grep -qF "$w" <<<"$out" || { echo "missing: $w"; exit 1; }; done'
# the training check (optional): the library builds and exports its C API alone; the script
# skips in one line, exit 0, where PyTorch with CUDA is missing (where it is, make train-check
# runs it: minutes, not a test)
if command -v "${NVCC:-nvcc}" >/dev/null 2>&1; then
    t_run "make train-lib builds libfa_train.so exporting fa_train_* alone" bash -c '
        make --no-print-directory -j"${JOBS:-2}" BUILD="'"$T"'/train" CUDA_ARCH=sm_90 train-lib >/dev/null || exit 1
        syms=$(nm -D --defined-only "'"$T"'/train/libfa_train.so" | awk "{ print \$3 }" | sort | tr "\n" " ")
        [ "$syms" = "fa_train_backward fa_train_config fa_train_error fa_train_forward fa_train_init " ] || { echo "exports: $syms"; exit 1; }'
else t_skip "make train-lib builds libfa_train.so" "nvcc not found"; fi
if "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" >/dev/null 2>&1; then
    t_skip "tools/train_check.py skips without PyTorch + CUDA" "PyTorch with CUDA is here: make train-check runs it"
else
    t_run "tools/train_check.py skips without PyTorch + CUDA (one line, exit 0)" bash -c '
        out=$('"$PYTHON"' tools/train_check.py --out "'"$T"'/train_check.csv") && [ "$(wc -l <<<"$out")" -eq 1 ] &&
        grep -q "^train_check: skipped: " <<<"$out" && [ ! -e "'"$T"'/train_check.csv" ]'
fi
# the peers (optional): the scripts compile; FlexAttention's peer skips in one line, exit 0,
# writing nothing where PyTorch with CUDA is missing (where it is, make phase4/5 sweep runs
# it through peers.py and bwd_peers.py: minutes, not a test); a bad command line is one
# stderr line, exit 2; --cpu-smoke runs its code path on the CPU (no result)
t_run "peer scripts compile (sdpa_peer, flex_peer, peers, bwd_peers, decode_peers)" \
    "$PYTHON" -m py_compile tools/sdpa_peer.py tools/flex_peer.py tools/peers.py tools/bwd_peers.py tools/decode_peers.py
if "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" >/dev/null 2>&1; then
    t_skip "tools/flex_peer.py skips without PyTorch + CUDA" "PyTorch with CUDA is here: tools/flex_peer.py, or FA_PEERS_FLEX=1 with peers.py / bwd_peers.py, runs it"
else
    t_run "tools/flex_peer.py skips without PyTorch + CUDA (one line, exit 0, no CSV)" bash -c '
        out=$('"$PYTHON"' tools/flex_peer.py --mode bwd "'"$T"'/flex_peer.csv" 1,4,2,256,64,1 1,4,256,64,0) &&
        [ "$(wc -l <<<"$out")" -eq 1 ] && grep -q "^flex_peer: skipped: " <<<"$out" && [ ! -e "'"$T"'/flex_peer.csv" ]'
fi
if "$PYTHON" -c "import torch.nn.attention.flex_attention" >/dev/null 2>&1; then
    t_exit2_says "tools/flex_peer.py refuses a bad spec (exit 2, one line)" "spec is B,H,N,d,causal" \
        "$PYTHON" tools/flex_peer.py "$T/flex_bad.csv" 1,2,3
    if command -v "${CXX:-g++}" >/dev/null 2>&1; then
        t_run "tools/flex_peer.py --cpu-smoke: masks agree with SDPA on the CPU, the error path notes" bash -c '
            '"$PYTHON"' tools/flex_peer.py --cpu-smoke 2>&1 | tee /dev/stderr | grep -q "^flex_peer: SMOKE passed$"'
    else t_skip "tools/flex_peer.py --cpu-smoke" "no C++ compiler for inductor on the CPU"; fi
else t_skip "tools/flex_peer.py command line and --cpu-smoke" "no torch with flex_attention"; fi
for p in phase0 phase1 phase2 phase3 phase4 phase5 phase6; do
    dir=$(ls -d ${p}_* 2>/dev/null | head -n 1)
    if [ -f "$dir/rules.mk" ]; then
        # what a learner types first: it must pass here too (GPU rows skipped, plots drawn
        # or skipped with a reason), never stop on a missing CSV
        t_run "make $p run (into a temp results folder)" make --no-print-directory NO_DEPS=1 BUILD="$BUILD" RESULTS="$T/results" "$p" run
        # the plots are a line of their own: drawn (a PNG from the run's CSV), or skipped with the reason
        if ! command -v "${GNUPLOT:-gnuplot}" >/dev/null 2>&1; then t_skip "make $p run draws its plots" "gnuplot not found"
        else t_run "make $p run draws its plots" bash -c "bash tools/plot.sh $dir/plot.gp '$T/results/$p' | grep -qE '^plots: .*\.png'"; fi
    else
        t_run "make $p run says the chapter is coming" bash -c "make --no-print-directory NO_DEPS=1 $p run | grep -q 'not written yet'"
    fi
done

# the handout test, started by tools/handout_bg.sh
if [ -n "${HANDOUT_TEST_PID:-}" ]; then
    handout_rc=0; wait "$HANDOUT_TEST_PID" || handout_rc=$?
    t_run "$HANDOUT_TEST_NAME" bash -c 'cat "$1"; exit "$2"' - "$HO_BUILD/handout_test.log" "$handout_rc"
    secs=$(sed -n 's/^handout test: \([0-9]*\) s$/\1/p' "$HO_BUILD/handout_test.log")
    [ -n "$secs" ] && echo "$secs $HANDOUT_TEST_NAME (beside the section)" >>"$T_TIMES"
else t_run "$HANDOUT_TEST_NAME" "${HANDOUT_TEST[@]}"; fi
