#!/usr/bin/env bash
# tools/visits_fail.sh "ROW..." CMD... - the visit counters have teeth (common/gpu.h).
# CMD (a phase's driver) runs with FA_TEST_VISIT_ALL=1: every kernel that counts its
# visits then visits every block, as a deleted range would. The output stays right (the
# mask hides the extra blocks), so only the counters can tell. Passes when CMD exits 1 and
# each ROW (a kernel row of the driver's table) FAILed on its counters:
#   "  FAIL <row> (gpu): visited <n> <unit> of <tile> <k> (over batch and heads), <range> allows <m>; <t> tile(s) differ"
# The phases' tests.sh run it on a GPU (t_gpu).
set -u
[ $# -ge 2 ] || { echo "usage: tools/visits_fail.sh \"ROW...\" CMD..." >&2; exit 2; }
rows=$1; shift
log=$(mktemp "${TMPDIR:-/tmp}/visits.XXXXXX") || exit 1
rc=0
FA_TEST_VISIT_ALL=1 "$@" >"$log" 2>&1 || rc=$?
cat "$log"
bad=0
[ $rc -eq 1 ] || { echo "visits_fail: want exit 1 (a FAIL), got $rc"; bad=1; }
for r in $rows; do
    grep -qE "^  FAIL $r \(gpu\): visited [0-9]+ .* of .* [0-9]+ \(over batch and heads\), the .* allows [0-9]+; [0-9]+ tiles? differs?$" "$log" ||
        { echo "visits_fail: row $r did not FAIL on its visit counters"; bad=1; }
done
rm -f "$log"
exit $bad
