# phase6_decoding/tests.sh - phase 6's tests (sourced by tools/run_tests.sh). CPU only:
# the GPU kernels of this phase are not written yet.
t_units "$BUILD/test_phase6"

P6="$BUILD/phase6"
T6=$(mktemp -d "${TMPDIR:-/tmp}/phase6-tests.XXXXXX")
# the shape list on the CPU: N_q = 1, 4, 16 against L = 1, 7, 1000, 4097 keys,
# causal and not (every row: splits, paged 16/64/256 in a shuffled pool, ragged with a
# zero-length sequence, against the oracle and phase 4's model, bytes == formula)
for Nq in 1 4 16; do
    for L in 1 7 1000 4097; do
        c=""; [ "$Nq" -gt 1 ] && c=--causal
        t_run "phase6 CPU rows pass (N_q=$Nq L=$L ${c:-full}, H=4/2 d=64)" "$P6" --cpu --quiet --B 1 --H 4 --Hkv 2 --N $Nq --Nkv $L --d 64 $c --csv "$T6/c.csv"
    done
done
t_run   "phase6 CPU rows pass (default problem: N_q=1 L=4096 GQA 32:8 d=128)" "$P6" --cpu --quiet --Nkv 4096 --Hkv 8 --csv "$T6/d.csv"
t_run   "phase6 CPU rows pass (GQA 32:4, N_q=4, causal)" "$P6" --cpu --quiet --H 32 --Hkv 4 --N 4 --Nkv 1000 --d 128 --causal --csv "$T6/g.csv"
t_run   "phase6 CPU rows pass (MQA H=8 Hkv=1, N_q=16, causal)" "$P6" --cpu --quiet --H 8 --Hkv 1 --N 16 --Nkv 777 --d 32 --causal --csv "$T6/m.csv"
t_run   "phase6 CPU rows pass (N_q > N_kv causal: fully masked rows)" "$P6" --cpu --quiet --H 4 --Hkv 1 --N 20 --Nkv 7 --d 64 --causal --csv "$T6/f.csv"
t_run   "phase6 sweep: bytes == formula, L = 1k..8k counted (S = 1, 8, 32; S = 1..128 at 4k), formula to 256k" bash -c "\"$P6\" --sweep --quiet --H 4 --Hkv 2 --csv \"$T6/sweep.csv\" >\"$T6/sweep.log\" && grep -q 'sweep PASS' \"$T6/sweep.log\""
t_run   "phase6 default run says the GPU kernels are not written yet" bash -c "\"$P6\" --csv \"$T6/n.csv\" | grep -q 'GPU kernels of this phase are not written yet'"
t_run   "phase6 default run: S=1 moves phase 4's bytes" bash -c "\"$P6\" --Nkv 4096 --Hkv 8 --csv \"$T6/n.csv\" | grep -q 'the same: one split is FA2'"
t_exit2 "phase6 rejects d=48"                "$P6" --d 48
t_exit2 "phase6 rejects H % Hkv != 0"        "$P6" --H 6 --Hkv 4
t_exit2 "phase6 rejects N=0"                 "$P6" --N 0
t_exit2 "phase6 rejects Nkv=0"               "$P6" --Nkv 0
t_exit2 "phase6 rejects --sram"              "$P6" --sram 4096
t_exit2 "phase6 rejects an unknown flag"     "$P6" --splits 4
t_exit2 "phase6 rejects --kernel (no GPU kernel to pick yet)" "$P6" --kernel mma
t_run   "phase6 default problem: N_q = 1 against a 4096-token cache, GQA 32:8" bash -c "\"$P6\" --cpu --quiet --csv \"$T_ROOT/p6d.csv\" | grep -q 'B1 H32/8 1x4096 d128'"

# The grader catches these mistakes: `make phase6 run EX=1` built from the reference with
# ONE mistake in an exercise must FAIL and name that exercise. CPU only.
F6=phase6_decoding/decode_cpu.c
ex_mistake "EX=1 catches dec.combine weighting by e^{L_s - m} without dividing by the sum" phase6 $F6 dec.combine 9 's/ - lse)/ - m)/'
ex_mistake "EX=1 catches dec.combine giving L = -inf for a row with no key" phase6 $F6 dec.combine 4 's/*L = INF/*L = -INF/'
ex_mistake "EX=1 catches dec.split_range with floor(Tc / S) blocks a split" phase6 $F6 dec.split_range 1 's/(Tc + S - 1) \/ S/(Tc \/ S > 0 ? Tc \/ S : 1)/'
ex_mistake "EX=1 catches dec.page_lookup ignoring the block table" phase6 $F6 dec.page_lookup 1 's/c->block_table\[\(.*\)\];/(int)(\1);/'
rm -rf "$T6"
