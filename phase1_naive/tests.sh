# phase1_naive/tests.sh - phase 1's tests (sourced by tools/run_tests.sh).
t_units "$BUILD/test_phase1"

P1="$BUILD/phase1"
T1=$(mktemp -d "${TMPDIR:-/tmp}/phase1-tests.XXXXXX")   # under testlib's run folder, removed at exit
t_run   "phase1 CPU rows pass (--cpu, default problem)" "$P1" --cpu --quiet --csv "$T1/cpu.csv"
t_run   "phase1 CPU rows pass (GQA, N_q != N_kv, causal)" "$P1" --cpu --quiet --B 1 --H 4 --Hkv 2 --N 50 --Nkv 70 --d 32 --causal --csv "$T1/cpu2.csv"
t_exit2 "phase1 rejects an unknown kernel"   "$P1" --kernel flash
t_exit2 "phase1 rejects d=48"               "$P1" --d 48
t_exit2 "phase1 rejects H % Hkv != 0"        "$P1" --H 6 --Hkv 4
t_exit2 "phase1 rejects N=0"                 "$P1" --N 0
t_exit2 "phase1 rejects an unknown flag"     "$P1" --frobnicate
# --sweep runs its own problems: an option it would ignore is refused, not ignored
t_exit2_says "phase1 --sweep refuses --N (its problems are its own)" "sweep.*ignores --N" "$P1" --sweep --N 64
t_bounded "phase1 --cpu --sweep ends within 10 s and 2 GB" 10 2048 "$P1" --cpu --sweep --quiet --csv "$T1/bound.csv"

# The CPU path of a CUDA build under valgrind: the CUDA runtime and cuBLAS load (dlopen) at
# start, where the system loader over-reads; tools/valgrind.supp suppresses exactly that.
if command -v valgrind >/dev/null 2>&1; then
    t_run "phase1 --cpu under valgrind (no invalid access, no leak; loader suppressed)" \
          valgrind -q --error-exitcode=1 --leak-check=full --suppressions=tools/valgrind.supp \
          "$P1" --cpu --quiet --B 1 --H 2 --Hkv 1 --N 20 --Nkv 30 --d 16 --causal --dump "$T1/vg" --csv "$T1/vg.csv"
else
    t_skip "phase1 --cpu under valgrind" "valgrind not found (install: sudo apt-get install valgrind)"
fi

# GPU: the issue's shapes, both variants (skipped with the reason where there is no GPU)
for d in 32 64 128; do
    for N in 1 17 128 1000 4096; do
        for c in "" --causal; do
            B=2; H=2; [ "$N" -ge 1000 ] && B=1
            t_gpu "phase1 gpu d=$d N=$N ${c:-full} (simple, cublas)" \
                "$P1" --quiet --iters 2 --B $B --H $H --N $N --d $d $c --csv "$T1/g.csv"
        done
    done
done
t_gpu "phase1 gpu N_q=300 N_kv=1000 causal" "$P1" --quiet --iters 2 --B 2 --H 2 --N 300 --Nkv 1000 --d 64 --causal --csv "$T1/g.csv"
t_gpu "phase1 gpu N_q=1000 N_kv=300 causal (masked rows)" "$P1" --quiet --iters 2 --B 2 --H 2 --N 1000 --Nkv 300 --d 64 --causal --csv "$T1/g.csv"
t_gpu "phase1 gpu GQA H=8 Hkv=2 d=128 causal" "$P1" --quiet --iters 2 --B 2 --H 8 --Hkv 2 --N 333 --d 128 --causal --csv "$T1/g.csv"
t_gpu "phase1 gpu MQA H=6 Hkv=1 N_q != N_kv" "$P1" --quiet --iters 2 --B 3 --H 6 --Hkv 1 --N 100 --Nkv 257 --d 64 --csv "$T1/g.csv"
# the memory wall: S and P of B=1 H=64 N=65536 (1 TiB; the inputs only 2 GiB) cannot fit: exit 2, one line
t_gpu "phase1 gpu memory wall exits 2 with one line" bash -c \
    "\"$P1\" --B 1 --H 64 --N 65536 --d 16 >\"$T1/wall.out\" 2>\"$T1/wall.err\"; rc=\$?; cat \"$T1/wall.err\"; [ \$rc -eq 2 ] && [ \$(wc -l <\"$T1/wall.err\") -eq 1 ] && grep -q 'GiB free' \"$T1/wall.err\""

# ---- bounded, and valid means PASS : every accepted problem's CPU rows end
# within 10 s under 2 GB (ulimit -v + timeout 10) and PASS; shapes cheap in FLOPs but
# huge in rows or elements run a smaller problem (problem.h: ATTN_CPU_MAX_ROWS, _ELEMS)
t_run "phase1 CPU rows bounded and PASS: N_q = 10^6 rows against 1 key" "${BOUNDED[@]}" "$P1" --cpu --quiet --N 1000000 --Nkv 1 --H 1 --Hkv 1 --csv "$T_ROOT/bound-phase1.csv"
t_run "phase1 CPU rows bounded and PASS: B = 2x10^6 single-token sequences" "${BOUNDED[@]}" "$P1" --cpu --quiet --B 2000000 --N 1 --Nkv 1 --d 16 --csv "$T_ROOT/bound-phase1.csv"
t_run "phase1 CPU rows bounded and PASS: H = Hkv = 10^6 heads (host check: the CPU rows' problem, not the whole)" "${BOUNDED[@]}" "$P1" --cpu --quiet --H 1000000 --Hkv 1000000 --csv "$T_ROOT/bound-phase1.csv"
t_run "phase1 CPU rows bounded and PASS: 4096 rows (the row cap) against 1 key (L of fp16 scores: |s| up to 4, validate.c)" "${BOUNDED[@]}" "$P1" --cpu --quiet --B 1 --H 1 --Hkv 1 --N 4096 --Nkv 1 --csv "$T_ROOT/bound-phase1.csv"
t_run "phase1 CPU rows bounded and PASS: a 2^18-key cache at d = 16 (rel L2 of long sums, check.h)" "${BOUNDED[@]}" "$P1" --cpu --quiet --B 1 --H 1 --Hkv 1 --N 1 --Nkv 262144 --d 16 --csv "$T_ROOT/bound-phase1.csv"
