#!/usr/bin/env bash
# tools/run_tests.sh PHASE... - `make test`: common/ and tools/ tests, then each named
# phase's tests.sh, then one summary line "N passed, M failed, K skipped".
set -u
cd "$(dirname "$0")/.." || exit 1
source tools/testlib.sh

# each section ends with its time, so that a slow one shows itself
SECTION=; SECTION_T0=$SECONDS
section_end() { [ -n "$SECTION" ] && printf '== %s: %ss\n' "$SECTION" $((SECONDS - SECTION_T0)); SECTION=; }
section() { section_end; SECTION=$1; SECTION_T0=$SECONDS; printf '\n== %s\n' "$1"; }
export TEST_PHASES="$*"   # the phases under test (common/tests.sh asks, in an exercise build)
# EXERCISES_ONLY=1: the exercise tests of tools/tests.sh alone (EXERCISE_FILTER narrows them)
[ -z "${EXERCISES_ONLY:-}" ] && { section common; source common/tests.sh; }
[ -n "${EXERCISES_ONLY:-}" ] && set --
# the handout and its test, in the background beside the phases (tools/tests.sh takes it)
if [ -z "${SKIP_TOOLS:-}" ]; then section handout; source tools/handout_bg.sh; fi
for phase in "$@"; do
    dir=$(ls -d "${phase}"_*/ 2>/dev/null | head -n 1)
    [ -f "${dir}tests.sh" ] || continue
    section "$phase"; source "${dir}tests.sh"
done
# SKIP_TOOLS=1: the phases only (tools/gpu_check.sh runs the project-wide tests once)
if [ -z "${SKIP_TOOLS:-}" ]; then section tools; source tools/tests.sh; fi
section_end
t_summary
