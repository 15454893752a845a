# phase2_online_softmax/tests.sh - phase 2's tests (sourced by tools/run_tests.sh).
t_units "$BUILD/test_phase2"
P2OUT=$(mktemp -d "${TMPDIR:-/tmp}/phase2-tests.XXXXXX")   # under testlib's run folder, removed at exit
mkdir -p "$P2OUT/default" "$P2OUT/causal" "$P2OUT/n1" "$P2OUT/sweep"   # folders are made only under results/ (cli.h)
t_run   "phase2 driver: default run passes (CPU rows; GPU rows where a GPU is)" \
        "$BUILD/phase2" --quiet --csv "$P2OUT/default/phase2.csv"
t_run   "phase2 driver: causal GQA with fully masked rows (N_q > N_kv)" \
        "$BUILD/phase2" --quiet --cpu --B 2 --H 4 --Hkv 2 --N 80 --Nkv 50 --d 32 --causal --csv "$P2OUT/causal/phase2.csv"
t_run   "phase2 driver: d=128, N=1" "$BUILD/phase2" --quiet --cpu --N 1 --d 128 --csv "$P2OUT/n1/phase2.csv"
t_run   "phase2 driver writes the table, overflow CSVs with metadata headers" bash -c \
        "grep -q '^# gpu:' '$P2OUT/default/phase2.csv' && grep -q '^variant,' '$P2OUT/default/phase2.csv' && grep -q '^offset,' '$P2OUT/default/phase2_overflow.csv'"
t_exit2 "phase2 rejects an unknown flag" "$BUILD/phase2" --bogus
# the CSV beside --csv is probed with it, before any work (cli_spec_t.siblings)
mkdir -p "$P2OUT/sib/phase2_overflow.csv"
t_exit2_says "phase2 probes phase2_overflow.csv beside the CSV (a folder there: exit 2 up front)" \
        "cannot write .*phase2_overflow.csv .*beside the CSV.*folder" "$BUILD/phase2" --quiet --cpu --csv "$P2OUT/sib/phase2.csv"
t_run   "phase2 --csv /dev/null writes nothing beside it (no /dev/phase2_overflow.csv)" bash -c "
        '$BUILD/phase2' --quiet --cpu --N 16 --d 16 --csv /dev/null >/dev/null || exit 1
        [ ! -e /dev/phase2_overflow.csv ] || { echo 'made /dev/phase2_overflow.csv'; exit 1; }"
t_exit2 "phase2 rejects d=48" "$BUILD/phase2" --d 48
t_exit2 "phase2 rejects an unknown kernel" "$BUILD/phase2" --kernel fast
t_gpu   "phase2 GPU sweep writes phase2_sweep.csv" bash -c \
        "'$BUILD/phase2' --quiet --sweep --iters 3 --csv '$P2OUT/sweep/phase2.csv' && grep -q '^n,rows' '$P2OUT/sweep/phase2_sweep.csv'"

# ---- bounded, and valid means PASS : every accepted problem's CPU rows end
# within 10 s under 2 GB (ulimit -v + timeout 10) and PASS; shapes cheap in FLOPs but
# huge in rows or elements run a smaller problem (problem.h: ATTN_CPU_MAX_ROWS, _ELEMS)
t_run "phase2 CPU rows bounded and PASS: N_q = 10^6 rows against 1 key" "${BOUNDED[@]}" "$BUILD/phase2" --cpu --quiet --N 1000000 --Nkv 1 --H 1 --Hkv 1 --csv "$T_ROOT/bound-phase2.csv"
t_run "phase2 CPU rows bounded and PASS: B = 2x10^6 single-token sequences" "${BOUNDED[@]}" "$BUILD/phase2" --cpu --quiet --B 2000000 --N 1 --Nkv 1 --d 16 --csv "$T_ROOT/bound-phase2.csv"
t_run "phase2 CPU rows bounded and PASS: H = Hkv = 10^6 heads (host check: the CPU rows' problem, not the whole)" "${BOUNDED[@]}" "$BUILD/phase2" --cpu --quiet --H 1000000 --Hkv 1000000 --csv "$T_ROOT/bound-phase2.csv"
t_run "phase2 CPU rows bounded and PASS: a 2^18-key cache at d = 16 (rel L2 of long sums, check.h)" "${BOUNDED[@]}" "$BUILD/phase2" --cpu --quiet --B 1 --H 1 --Hkv 1 --N 1 --Nkv 262144 --d 16 --csv "$T_ROOT/bound-phase2.csv"
