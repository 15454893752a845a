# phase6_decoding/tests.sh - phase 6's tests (sourced by tools/run_tests.sh): the CPU
# model's, then the GPU kernels' (skipped, with the reason, without a GPU).
t_units "$BUILD/test_phase6"
# The decode kernels' code without a GPU: the dec_*.cuh headers' split, split-pack, fused,
# paged, ragged, the combine and FlashDecoding++ (its combine and fallback) on emulated
# ldmatrix, mma.sync, cp.async and warp shuffles (tools/mma_emu), against an fp64 attention, at d = 32 and 256
# (the tiles that differ most: one K/V stage and Q from shared memory at 256); and a
# planted mistake in FD++'s merge of the warps (the last warp's l kept, not the sum) FAILs, and
# so does one in the 64-row block (each warp's causal limits taken from the block's first m-tile)
# (t_emu: skipped, naming them, while the decode headers' GPU regions are stubs: testlib.sh)
EMU6="phase6_decoding/dec_bounds.cuh phase6_decoding/dec_combine.cuh phase6_decoding/dec_paged.cuh"
if [ -f "${CUDA_HOME:-/usr/local/cuda}/include/cuda_fp16.h" ]; then
    t_emu "$EMU6" t_run "phase6 decode kernels on the CPU emulator (d = 32, 256): O, L and FD++'s recomputed rows against fp64" \
        bash tools/mma_emu/run.sh decode 32 256
    t_emu "$EMU6" t_teeth "phase6 decode emulator FAILs FD++ with a planted mistake in the warps' merge" \
        env EMU_OUT="$BUILD/mma_emu_mutant" EMU_MUTATE_DECODE='l += Lm[w * ROWS + rr]; Wm=>l = Lm[w * ROWS + rr]; Wm' \
        bash tools/mma_emu/run.sh decode 64
    t_emu "$EMU6" t_teeth "phase6 decode emulator FAILs the 64-row block with its warps' causal limits all of the first m-tile" \
        env EMU_OUT="$BUILD/mma_emu_mutant" EMU_MUTATE_DECODE='(r0 + wr * ROWS + g=>(r0 + g' \
        bash tools/mma_emu/run.sh decode 64
    t_emu "$EMU6" t_teeth "phase6 decode emulator FAILs the fused combine when no split counts itself last" \
        env EMU_OUT="$BUILD/mma_emu_mutant" EMU_MUTATE_DECODE='atomicAdd(&a.done[tile], 1) == a.S - 1=>atomicAdd(&a.done[tile], 1) == a.S' \
        bash tools/mma_emu/run.sh decode 64
    t_emu "$EMU6" t_teeth "phase6 decode emulator FAILs the fused combine when the last split leaves its count set" \
        env EMU_OUT="$BUILD/mma_emu_mutant" EMU_MUTATE_DECODE='if (threadIdx.x == 0) a.done[tile] = 0;=>' \
        bash tools/mma_emu/run.sh decode 64
else
    t_skip "phase6 decode kernels on the CPU emulator" "no CUDA headers (cuda_fp16.h)"
    t_skip "phase6 decode emulator FAILs FD++ with a planted mistake" "no CUDA headers (cuda_fp16.h)"
fi

P6="$BUILD/phase6"
T6=$(mktemp -d "${TMPDIR:-/tmp}/phase6-tests.XXXXXX")
# decode.h's variant table (DEC_VARIANTS): --help lists its names after fa2-mma, and each
# row's file opens with "variant NAME:" and names the command that runs it
t_run "phase6 variant table: --help lists DEC_VARIANTS, each file opens with its variant and command" bash -c '
    rows=$(sed -n "s/^ *X([A-Z_]*, *\"\([a-z-]*\)\", *\"\([a-z_]*\.cuh\)\").*/\1 \2/p" phase6_decoding/decode.h)
    [ "$(wc -l <<<"$rows")" -eq 6 ] || { echo "want 6 rows in DEC_VARIANTS, got: $rows"; exit 1; }
    want="kernels: fa2-mma $(cut -d" " -f1 <<<"$rows" | paste -sd" ") all"
    "$0" --help 2>&1 | grep -qxF "  $want" || { echo "--help does not say: $want"; exit 1; }
    while read -r name file; do
        head -1 "phase6_decoding/$file" | grep -q "variant $name:" && grep -q "build/phase6 --kernel $name" "phase6_decoding/$file" ||
            { echo "phase6_decoding/$file does not open with variant $name and its command"; exit 1; }
    done <<<"$rows"' "$P6"
# the decode shape list on the CPU: N_q = 1, 4, 16 against L = 1, 7, 1000, 4097 keys,
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
t_run   "phase6 --cpu run says the GPU rows were skipped, and why" bash -c "\"$P6\" --cpu --csv \"$T6/n.csv\" | grep -q 'GPU rows skipped: '"
t_run   "phase6 default run: S=1 moves phase 4's bytes" bash -c "\"$P6\" --Nkv 4096 --Hkv 8 --csv \"$T6/n.csv\" | grep -q 'the same: one split is FA2'"
t_exit2 "phase6 rejects d=48"                "$P6" --d 48
t_exit2 "phase6 rejects H % Hkv != 0"        "$P6" --H 6 --Hkv 4
t_exit2 "phase6 rejects N=0"                 "$P6" --N 0
t_exit2 "phase6 rejects Nkv=0"               "$P6" --Nkv 0
t_exit2 "phase6 rejects --sram"              "$P6" --sram 4096
t_exit2 "phase6 rejects an unknown flag"     "$P6" --splits 4
t_exit2 "phase6 rejects an unknown kernel"   "$P6" --kernel mma
t_exit2_says "phase6 --sweep refuses --kernel (it times its own kernels)" "sweep.*ignores --kernel" "$P6" --sweep --kernel split
t_exit2_says "phase6 --sweep refuses --Nkv (it sweeps L)" "sweep.*ignores --Nkv" "$P6" --sweep --Nkv 100
# the CPU sweep runs the problem of the options, bounded: one line says which problem ran
t_bounded "phase6 --cpu --sweep --B 12 --H 64: within 10 s and 2 GB, says the problem it ran" 10 2048 bash -c "
    \"$P6\" --cpu --sweep --B 12 --H 64 --csv \"$T6/b1.csv\" | grep -q 'CPU sweep: the CPU runs B=1 H=2 Hkv=2 .* for B=12 H=64'"
t_bounded "phase6 --cpu --sweep --B 2000000 --N 1 --d 16: within 10 s and 2 GB" 10 2048 "$P6" --cpu --sweep --quiet --B 2000000 --N 1 --d 16 --csv "$T6/b2.csv"
t_bounded "phase6 --cpu --sweep --N 100000 --d 256 --causal: within 10 s and 2 GB" 10 2048 "$P6" --cpu --sweep --quiet --N 100000 --d 256 --causal --csv "$T6/b3.csv"
# FlashDecoding++'s phi: calibrated (no row recomputed on N(0,1) scores), or given by --phi;
# a phi far from the scores sends every row through the fallback, and every row still PASSes
t_run "phase6 fdpp-S4: phi calibrated from the inputs, no row recomputed" bash -c "\"$P6\" --cpu --csv \"$T6/f1.csv\" \
    | grep -q 'fdpp-S4: phi = .* (calibrated from the inputs.*); 0 of 32 rows' && grep -q '^fdpp-S4,.*,PASS,' \"$T6/f1.csv\""
t_run "phase6 --phi 100: every row left the window, recomputed, and right" bash -c "\"$P6\" --cpu --phi 100 --csv \"$T6/f2.csv\" \
    | grep -q 'fdpp-S4: phi = 100.000 (given by --phi); 32 of 32 rows' && grep -q '^fdpp-S4,.*,PASS,' \"$T6/f2.csv\""
t_run "phase6 --phi -50 --causal --N 4: every row recomputed, and right" bash -c "\"$P6\" --cpu --phi -50 --causal --N 4 --csv \"$T6/f3.csv\" \
    | grep -q '128 of 128 rows' && grep -q '^fdpp-S4,.*,PASS,' \"$T6/f3.csv\""
t_exit2_says "phase6 rejects a --phi that is not a finite number" "phi needs a finite number" "$P6" --cpu --phi nan
t_exit2_says "phase6 rejects --phi beyond 10^4" "phi needs a finite number" "$P6" --cpu --phi 1e5
t_exit2_says "phase4 refuses --phi (phase 6's)" "not taken here" "$BUILD/phase4" --cpu --phi 3
t_exit2_says "phase6 --sweep refuses --phi" "sweep.*ignores --phi" "$P6" --sweep --phi 3
t_exit2_says "phase6 rejects FA_SPLITS=0 (one line, exit 2)" 'FA_SPLITS' env FA_SPLITS=0 "$P6" --cpu
t_exit2_says "phase6 rejects FA_SPLITS=abc (one line, exit 2)" 'FA_SPLITS' env FA_SPLITS=abc "$P6" --cpu
t_exit2_says "phase6 rejects FA_SPLIT_UNIT=waves (one line, exit 2)" 'FA_SPLIT_UNIT' env FA_SPLIT_UNIT=waves "$P6" --cpu
t_run   "phase6 default problem: N_q = 1 against a 4096-token cache, GQA 32:8" bash -c "\"$P6\" --cpu --quiet --csv \"$T_ROOT/p6d.csv\" | grep -q 'B1 H32/8 1x4096 d128'"

# GPU: every decode row (split, split-pack, paged 16/64/256 in a shuffled pool, ragged
# with a zero-length sequence, contiguous and paged) against the oracle (2x rule) and
# phase 4's fa2-mma on the same inputs, on the decode shape list
for Nq in 1 4 16; do
    for L in 1 7 1000 4097; do
        c=""; [ "$Nq" -gt 1 ] && c=--causal
        t_gpu "phase6 gpu N_q=$Nq L=$L ${c:-full} GQA 32:8 d=128" "$P6" --quiet --iters 2 --H 32 --Hkv 8 --N $Nq --Nkv $L --d 128 $c --csv "$T6/g.csv"
    done
done
# L = 100000: the oracle checks every row in fp64 (and phase 1's fp16 pipeline), ~ rows x L x d each
# the run `make phase6 run` does, not --quiet: every row, the notes; the other
# GPU tests are --quiet, and a table one row too long once overflowed only here
t_gpu "phase6 gpu: the default run, not quiet, PASSes" "$P6" --csv "$T6/default.csv"
t_gpu "phase6 gpu N_q=1 L=100000 GQA 32:8 d=128" "$P6" --quiet --iters 2 --H 32 --Hkv 8 --N 1 --Nkv 100000 --d 128 --csv "$T6/g.csv"
t_gpu "phase6 gpu N_q=4 L=100000 causal GQA 8:2 d=128" "$P6" --quiet --iters 2 --H 8 --Hkv 2 --N 4 --Nkv 100000 --d 128 --causal --csv "$T6/g.csv"
t_gpu "phase6 gpu N_q=1 L=1000 d=64 GQA 32:8 (GPU rows, CPU rows too)" "$P6" --quiet --iters 2 --H 32 --Hkv 8 --N 1 --Nkv 1000 --d 64 --csv "$T6/g.csv"
t_gpu "phase6 gpu GQA 32:4 N_q=4 L=4097 causal" "$P6" --quiet --iters 2 --H 32 --Hkv 4 --N 4 --Nkv 4097 --d 128 --causal --csv "$T6/g.csv"
t_gpu "phase6 gpu MQA 32:1 N_q=16 L=1000 causal (two row tiles a block group)" "$P6" --quiet --iters 2 --H 32 --Hkv 1 --N 16 --Nkv 1000 --d 128 --causal --csv "$T6/g.csv"
t_gpu "phase6 gpu MHA B=3 N_q=1 L=100000 d=64" "$P6" --quiet --iters 2 --B 3 --H 8 --Hkv 8 --N 1 --Nkv 100000 --d 64 --csv "$T6/g.csv"
t_gpu "phase6 gpu N_q > N_kv causal (fully masked rows) d=64" "$P6" --quiet --iters 2 --H 4 --Hkv 1 --N 16 --Nkv 7 --d 64 --causal --csv "$T6/g.csv"
for S in 1 3 64 1024; do
    t_gpu "phase6 gpu FA_SPLITS=$S (empty splits when S exceeds the blocks)" env FA_SPLITS=$S "$P6" --quiet --iters 2 --B 2 --H 8 --Hkv 2 --N 4 --Nkv 3000 --d 128 --causal --csv "$T6/g.csv"
done
t_gpu "phase6 gpu d=32: every row PASSes (the decode kernels at d = 32)" "$P6" --quiet --iters 2 --H 4 --Hkv 2 --N 4 --Nkv 500 --d 32 --causal --csv "$T6/g32.csv"
t_gpu "phase6 gpu d=32 GQA 32:8 L=4097 FA_SPLITS=5 (the combine at d = 32)" env FA_SPLITS=5 "$P6" --quiet --iters 2 --H 32 --Hkv 8 --N 1 --Nkv 4097 --d 32 --csv "$T6/g32.csv"
t_gpu "phase6 gpu d=256: every row PASSes (one K/V stage, Q's fragments from shared memory)" "$P6" --quiet --iters 2 --H 8 --Hkv 2 --N 4 --Nkv 1000 --d 256 --causal --csv "$T6/g256.csv"
t_gpu "phase6 gpu FA_SPLIT_UNIT=sm (the heuristic counting SMs) GQA 32:8 L=4097" env FA_SPLIT_UNIT=sm "$P6" --quiet --iters 2 --H 32 --Hkv 8 --N 1 --Nkv 4097 --d 128 --csv "$T6/gsm.csv"
t_gpu "phase6 gpu d=256 MHA L=4097 FA_SPLITS=3 (the combine at d = 256)" env FA_SPLITS=3 "$P6" --quiet --iters 2 --H 4 --Hkv 4 --N 1 --Nkv 4097 --d 256 --csv "$T6/g256.csv"
t_gpu "phase6 gpu default run passes (B=1 L=4096 GQA 32:8)" bash -c "
    \"$P6\" --iters 5 --csv \"$T6/gd.csv\" >\"$T6/gd.log\" 2>&1 || exit 1; cat \"$T6/gd.log\"
    awk '\$1 == \"split-pack\" && \$2 == \"gpu\" { ok = \$NF == \"PASS\" } END { exit !ok }' \"$T6/gd.log\""

# FlashDecoding++ on the GPU (fdpp): phi calibrated on N(0,1) scores recomputes no row; a phi
# far above or below every score sends every row through the fallback (dec_recompute_kernel),
# and the row still PASSes against the oracle and phase 4's fa2-mma
fdpp_gpu_case() {   # NAME GREP ARGS...: the note line matches GREP and the fdpp row PASSes
    local name=$1 want=$2; shift 2
    if [ -n "$(gpu_skip_reason)" ]; then t_skip "$name" "$(gpu_skip_reason)"; return; fi
    t_run "$name" bash -c "\"\$0\" --kernel fdpp --iters 2 \"\$@\" --csv '$T6/fg.csv' >'$T6/fg.log' 2>&1; rc=\$?; cat '$T6/fg.log'
        [ \$rc -eq 0 ] && grep -q '$want' '$T6/fg.log' &&
        awk '\$1 == \"fdpp\" && \$2 == \"gpu\" { ok = \$NF == \"PASS\" } END { exit !ok }' '$T6/fg.log'" "$P6" "$@"
}
fdpp_gpu_case "phase6 gpu fdpp: phi calibrated, no row recomputed" "^fdpp: phi = .*; 0 of 32 rows recomputed" \
    --H 32 --Hkv 8 --N 1 --Nkv 4096 --d 128
fdpp_gpu_case "phase6 gpu fdpp --phi 100: every row recomputed, and right" "^fdpp: phi = 100.000; 32 of 32 rows" \
    --phi 100 --H 32 --Hkv 8 --N 1 --Nkv 4096 --d 128
fdpp_gpu_case "phase6 gpu fdpp --phi -50 causal N_q=4 d=64: every row recomputed, and right" "^fdpp: phi = -50.000; 128 of 128 rows" \
    --phi -50 --causal --H 32 --Hkv 8 --N 4 --Nkv 4097 --d 64
fdpp_gpu_case "phase6 gpu fdpp N_q=16 MQA L=100000 causal" "^fdpp: phi = " --causal --H 32 --Hkv 1 --N 16 --Nkv 100000 --d 128
fdpp_gpu_case "phase6 gpu fdpp L=7, N_q > N_kv causal (rows with no key: O = 0, L = +inf)" "^fdpp: phi = " \
    --causal --H 4 --Hkv 1 --N 16 --Nkv 7 --d 64
FA_SPLITS=1 fdpp_gpu_case "phase6 gpu fdpp FA_SPLITS=1 (partials at S = 1)" "^fdpp: phi = " --H 8 --Hkv 2 --N 4 --Nkv 1000 --d 128
FA_SPLITS=7 fdpp_gpu_case "phase6 gpu fdpp FA_SPLITS=7, ragged tail (L = 4097)" "^fdpp: phi = " --B 2 --H 8 --Hkv 2 --N 4 --Nkv 4097 --d 64

# The visit counters (common/gpu.h): with the split ranges deleted (FA_TEST_VISIT_ALL=1:
# every split walks the whole cache) only the counters name the split (its O is still the
# attention's, its L off by log S); 4 splits so that there are ranges to delete.
t_gpu "phase6 gpu split, split-pack, paged, ragged: a deleted split range FAILs on the visit counters" env FA_SPLITS=4 \
    bash tools/visits_fail.sh "split split-pack fdpp paged-p16 paged-p64 paged-p256 ragged ragged-p16" \
    "$P6" --quiet --iters 1 --B 2 --H 8 --Hkv 2 --N 4 --Nkv 3000 --d 128 --causal --csv "$T6/va.csv"

# The grader catches these mistakes: `make phase6 run EX=1` built from the reference with
# ONE mistake in an exercise must FAIL and name that exercise. CPU only.
F6=phase6_decoding/decode_cpu.c
ex_mistake "EX=1 catches dec.combine weighting by e^{L_s - m} without dividing by the sum" phase6 $F6 dec.combine 9 's/ - lse)/ - m)/'
ex_mistake "EX=1 catches dec.combine giving L = -inf for a row with no key" phase6 $F6 dec.combine 4 's/*L = INF/*L = -INF/'
ex_mistake "EX=1 catches dec.split_range with floor(Tc / S) blocks a split" phase6 $F6 dec.split_range 1 's/(Tc + S - 1) \/ S/(Tc \/ S > 0 ? Tc \/ S : 1)/'
ex_mistake "EX=1 catches dec.page_lookup ignoring the block table" phase6 $F6 dec.page_lookup 1 's/c->block_table\[\(.*\)\];/(int)(\1);/'

# ---- bounded, and valid means PASS : every accepted problem's CPU rows end
# within 10 s under 2 GB (ulimit -v + timeout 10) and PASS; shapes cheap in FLOPs but
# huge in rows or elements run a smaller problem (problem.h: ATTN_CPU_MAX_ROWS, _ELEMS)
t_run "phase6 CPU rows bounded and PASS: N_q = 10^6 rows against 1 key" "${BOUNDED[@]}" "$P6" --cpu --quiet --N 1000000 --Nkv 1 --H 1 --Hkv 1 --csv "$T_ROOT/bound-phase6.csv"
t_run "phase6 CPU rows bounded and PASS: B = 2x10^6 single-token sequences" "${BOUNDED[@]}" "$P6" --cpu --quiet --B 2000000 --N 1 --Nkv 1 --d 16 --csv "$T_ROOT/bound-phase6.csv"
t_run "phase6 CPU rows bounded and PASS: H = Hkv = 10^6 heads (host check: the CPU rows' problem, not the whole)" "${BOUNDED[@]}" "$P6" --cpu --quiet --H 1000000 --Hkv 1000000 --csv "$T_ROOT/bound-phase6.csv"
t_run "phase6 CPU rows bounded and PASS: N_q = 1 against 10^6 keys" "${BOUNDED[@]}" "$P6" --cpu --quiet --N 1 --Nkv 1000000 --H 1 --Hkv 1 --d 16 --csv "$T_ROOT/bound-phase6.csv"
t_run "phase6 CPU rows bounded and PASS: a 2^18-key cache at d = 16 (rel L2 of long sums, check.h)" "${BOUNDED[@]}" "$P6" --cpu --quiet --B 1 --H 1 --Hkv 1 --N 1 --Nkv 262144 --d 16 --csv "$T_ROOT/bound-phase6.csv"
t_run "phase6 says in one line which smaller problem the CPU rows ran" bash -c "[ \$(\"$P6\" --cpu --N 1000000 --Nkv 1 --H 1 --Hkv 1 --csv \"$T_ROOT/bound-l.csv\" | grep -c 'the CPU rows run B=1 H=1 Hkv=1 Nq=256 Nkv=1 d=128 in place of this problem') -eq 1 ]"
t_run "phase6 default problem runs whole on the CPU (no smaller-problem line)" bash -c "! \"$P6\" --cpu --csv \"$T_ROOT/bound-l.csv\" | grep -q 'the CPU rows run'"
if [ -z "$(gpu_skip_reason)" ]; then
    t_exit2_says "phase6 with a GPU: H = Hkv = 10^6 exits 2 up front (the GPU rows' host buffers)" 'host memory' "$P6" --H 1000000 --Hkv 1000000
else t_skip "phase6 with a GPU: H = Hkv = 10^6 exits 2 up front (the GPU rows' host buffers)" "$(gpu_skip_reason)"; fi
rm -rf "$T6"
