# phase0_model/tests.sh - phase 0's tests (sourced by tools/run_tests.sh).
t_units "$BUILD/test_phase0"

P0="$BUILD/phase0"
PYTHON=${PYTHON:-python3}
T0=$(mktemp -d "${TMPDIR:-/tmp}/phase0-tests.XXXXXX")   # under testlib's run folder, removed at exit
mkdir -p "$T0/run" "$T0/gqa" "$T0/d1" "$T0/d2"   # folders are made only under results/ (common/cli.h)
t_run   "phase0 self-checks pass (default problem)" "$P0" --quiet --csv "$T0/run/phase0.csv"
t_run   "phase0 writes its four CSVs" bash -c "for f in phase0 memory_wall roofline roofline_lines; do
             [ -s '$T0/run/'\$f.csv ] || { echo \"missing \$f.csv\"; exit 1; }; done"
t_run   "phase0 GQA, N_q != N_kv, causal problem" "$P0" --quiet --B 2 --H 8 --Hkv 2 --N 300 --Nkv 700 --d 128 --causal --csv "$T0/gqa/phase0.csv"
t_run   "phase0's CSV names the operation in every row (no empty cell)" bash -c "
             awk -F, '/^[0-9]+,/ && \$2 == \"\" { print \"empty operation: \" \$0; bad = 1 } END { exit bad }' '$T0/run/phase0.csv' &&
             [ \$(grep -c '^[0-9],' '$T0/run/phase0.csv') -eq 8 ]"
# Every CSV it writes is probed before any work (exit 2, one line), and every write is checked
t_exit2_says "phase0 --csv /dev/full: refused up front (no /dev/memory_wall.csv)" "cannot write the CSV /dev/full" \
             "$P0" --quiet --csv /dev/full
t_run   "phase0 --csv /dev/full created nothing in /dev" bash -c "
             for f in memory_wall roofline roofline_lines; do [ ! -e /dev/\$f.csv ] || { echo \"made /dev/\$f.csv\"; exit 1; }; done"
t_run   "phase0 --csv /dev/null and /dev/stdout (to a file): PASS, nothing written beside them in /dev" bash -c "
             '$P0' --quiet --csv /dev/null >/dev/null || exit 1
             '$P0' --quiet --csv /dev/stdout >'$T0/stdout.txt' || exit 1
             for f in memory_wall roofline roofline_lines; do [ ! -e /dev/\$f.csv ] || { echo \"made /dev/\$f.csv\"; exit 1; }; done"
mkdir -p "$T0/sib/memory_wall.csv" "$T0/sib2"
t_exit2_says "phase0 probes memory_wall.csv beside the CSV (a folder there: exit 2 up front)" \
             "cannot write .*memory_wall.csv .*beside the CSV.*folder" "$P0" --quiet --csv "$T0/sib/phase0.csv"
t_exit2_says "phase0 refuses a --csv named like a file it writes beside it" "name of a file" \
             "$P0" --quiet --csv "$T0/sib2/roofline.csv"
# a write that fails at run time (ulimit -f, SIGXFSZ ignored: EFBIG) fails the run: FAIL, exit 1
t_run   "phase0: a CSV write that fails at run time fails the run (exit 1, FAIL, no temporary left)" bash -c "
             mkdir -p '$T0/fsz'; rc=0
             (trap '' XFSZ; ulimit -f 1; exec '$P0' --quiet --csv '$T0/fsz/phase0.csv') >'$T0/fsz.out' 2>'$T0/fsz.err' || rc=\$?
             cat '$T0/fsz.out' '$T0/fsz.err'
             [ \$rc -eq 1 ] && grep -q '^phase0: FAIL' '$T0/fsz.out' && grep -q 'could not write .*File too large' '$T0/fsz.err' &&
             [ -z \"\$(find '$T0/fsz' -name '*.tmp-*')\" ]"
t_exit2 "phase0 rejects an unknown flag"      "$P0" --frobnicate
t_exit2 "phase0 rejects a missing value"      "$P0" --N
t_exit2 "phase0 rejects N=0"                  "$P0" --N 0
t_exit2 "phase0 rejects d=48"                 "$P0" --d 48
t_exit2 "phase0 rejects H % Hkv != 0"         "$P0" --H 6 --Hkv 4
t_exit2 "phase0 rejects an unknown kernel"    "$P0" --kernel flash
t_exit2_says "phase0 refuses --sweep (it has no sweep)" "no sweep" "$P0" --sweep
# beyond host memory: phase 0 allocates nothing for it (closed forms) unless --dump (the
# the host check counts what is allocated)
t_run   "phase0 runs a problem beyond host memory on closed forms (nothing allocated)" "$P0" --quiet --B 100000 --H 64 --N 1000000 --d 256 --csv "$T0/huge.csv"
t_exit2 "phase0 --dump refuses a problem beyond host memory" "$P0" --B 100000 --H 64 --N 1000000 --d 256 --dump "$T0/huge-dump"
t_exit2 "phase0 rejects a --dump too big for the CPU oracle" "$P0" --dump "$T0/big" --B 8 --H 16 --N 4096

# The independent NumPy cross-check of the oracle's dump (tools/check_numpy.py).
if "$PYTHON" -c "import numpy" >/dev/null 2>&1; then
    t_run "phase0 --dump (GQA, causal, N_q < N_kv)" "$P0" --quiet --B 2 --H 4 --Hkv 2 --N 33 --Nkv 47 --d 32 --causal \
          --dump "$T0/dump1" --csv "$T0/d1/phase0.csv"
    t_run "numpy cross-check of phase0's dump (N_q < N_kv)" "$PYTHON" tools/check_numpy.py "$T0/dump1"
    t_run "phase0 --dump (causal, N_q > N_kv: fully masked rows)" "$P0" --quiet --B 1 --H 2 --N 40 --Nkv 25 --d 16 --causal \
          --dump "$T0/dump2" --csv "$T0/d2/phase0.csv"
    t_run "numpy cross-check of phase0's dump (masked rows)" "$PYTHON" tools/check_numpy.py "$T0/dump2"
    t_fail "numpy cross-check catches a wrong O" bash -c "cp -r '$T0/dump1' '$T0/bad' &&
        '$PYTHON' -c \"import numpy as np; o = np.load('$T0/bad/O.npy'); o[0, 1, 2, 3] += 1e-2; np.save('$T0/bad/O.npy', o)\" &&
        '$PYTHON' tools/check_numpy.py '$T0/bad'"
else
    t_skip "numpy cross-check of phase0's dump" "NumPy missing for $PYTHON: install it with '$PYTHON -m pip install numpy' (or make deps)"
fi

# The CPU code under valgrind once: no invalid access, no leak.
if command -v valgrind >/dev/null 2>&1; then
    # tools/valgrind.supp: the system loader's own over-read while the CUDA runtime loads
    t_run "phase0 under valgrind (self-checks + --dump)" valgrind -q --error-exitcode=1 --leak-check=full \
          --suppressions=tools/valgrind.supp \
          "$P0" --quiet --B 1 --H 2 --Hkv 1 --N 20 --Nkv 30 --d 16 --causal --dump "$T0/vg" --csv "$T0/vg.csv"
else
    t_skip "phase0 under valgrind" "valgrind not found (install: sudo apt-get install valgrind)"
fi

# ---- bounded, and valid means PASS : every accepted problem's --dump ends
# within 10 s under 2 GB (ulimit -v + timeout 10) and PASS; shapes cheap in FLOPs but
# huge in rows or elements run a smaller problem (problem.h: ATTN_CPU_MAX_ROWS, _ELEMS)
for a in "--N 1000000 --Nkv 1 --H 1 --Hkv 1" "--B 2000000 --N 1 --Nkv 1 --d 16" "--H 1000000 --Hkv 1000000"; do
    t_exit2_says "phase0 --dump refuses $a up front (rows and elements, not only FLOPs)" 'elements' "${BOUNDED[@]}" "$P0" $a --dump "$T0/dump-big" --csv "$T0/b.csv"
    t_run "phase0 without --dump: $a is closed forms only, bounded" "${BOUNDED[@]}" "$P0" --quiet $a --csv "$T0/b.csv"
done
t_run "phase0 --dump of a 2^18-key cache at d = 16: bounded" "${BOUNDED[@]}" "$P0" --quiet --B 1 --H 1 --Hkv 1 --N 1 --Nkv 262144 --d 16 --dump "$T0/dump-long" --csv "$T0/b.csv"
rm -rf "$T0"
