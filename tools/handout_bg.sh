# tools/handout_bg.sh - sourced by tools/run_tests.sh before the phases when the project-wide
# tests will run (tools/tests.sh, which takes the result at its end): one handout (its own
# build folder: a CPU-only reference, as a machine without nvcc makes it) for the leak
# check, the student's tests and the handout test. The handout test (the grader as a
# student meets it: in the untarred handout any phase can be done first) works in trees and
# build folders of its own, so it runs in the background beside the phases' tests and the
# rest of tools/tests.sh (a 2-core machine's second core is idle much of that time), and is
# counted where tools/tests.sh waits for it, with its own seconds in the slowest tests.
HO_BUILD=$(mktemp -d "${TMPDIR:-/tmp}/handout.XXXXXX")
HANDOUT_TEST_NAME="handout: make phaseN run and test EX=1 FAIL untouched naming the exercises, PASS with only phase N filled (6 first); make test FAILS untouched, passes filled"
[ -z "${EXERCISES_ONLY:-}" ] && t_run "make handout writes the student tarball" make --no-print-directory BUILD="$HO_BUILD" NO_CUDA=1 handout
HANDOUT_TEST=(env HANDOUT_TARBALL="$HO_BUILD/handout.tar.gz" bash tools/handout_test.sh)
if [ -z "${EXERCISES_ONLY:-}" ] && [ "${T_GPU_ONLY:-0}" != 1 ] && [ -z "${T_FROM:-}" ] && [ -f "$HO_BUILD/handout.tar.gz" ]; then
    "${HANDOUT_TEST[@]}" >"$HO_BUILD/handout_test.log" 2>&1 &
    HANDOUT_TEST_PID=$!; T_BG_PIDS="${T_BG_PIDS:-} $HANDOUT_TEST_PID"   # killed if the run stops early
fi
