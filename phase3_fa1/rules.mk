# phase3_fa1 - FlashAttention-1 (Alg. 1), KV-outer tiling. Included by the top Makefile.
phase3_LIB  := phase3_fa1/fa1_cpu.c
phase3_MAIN := phase3_fa1/main.c
phase3_TEST := phase3_fa1/test_phase3.c
phase3_CU   := phase3_fa1/fa1_simple.cu phase3_fa1/fa1_mma.cu
phase3_USES := phase2 phase1 phase0
phase3_CUDA_LDLIBS := -lcublas
# `make phase3 run EX=1` also runs these shapes (Makefile, phase_actions): GQA with
# N_q != N_kv causal; d = 128 with tails; fully masked rows (N_q > N_kv causal); and an
# SRAM size M that 4d does not divide, where Alg. 1 l.1's ceil and floor give two Bc
# (d = 32: ceil(12864 / 128) = 101 fits, floor gives 100)
phase3_EX_RUNS := --B 1 --H 4 --Hkv 2 --N 50 --Nkv 70 --d 32 --causal --sram 20000 \
                | --B 1 --H 2 --N 133 --d 128 --sram 40000 \
                | --B 1 --H 2 --N 150 --Nkv 40 --d 64 --causal \
                | --B 1 --H 2 --N 64 --d 32 --sram 51456

# The sweep: HBM bytes vs M and N (CPU model), and with a GPU the FA2 paper's setting
# (the Makefile's phase_sweep).
phase3_SWEEP_ARGS := --iters 5

# Nsight Compute: DRAM bytes of one run of each kernel next to the model's count, for the
# default problem and (when the GPU sweep has run) its d = 64 points at N = 512 and 2048.
phase3-profile: phase3-build
	@mkdir -p $(RESULTS)/phase3
	@test -f $(RESULTS)/phase3/phase3.csv || $(BUILD)/phase3 --quiet --csv $(RESULTS)/phase3/phase3.csv
	@bash tools/profile.sh $(BUILD)/phase3 $(RESULTS)/phase3/phase3.csv
	@if grep -q ',tokens16k,' $(RESULTS)/phase3/phase3_sweep.csv 2>/dev/null; then \
	    bash tools/profile.sh $(BUILD)/phase3 $(RESULTS)/phase3/phase3_sweep.csv 2048 "r['d'] == '64' and r['N_q'] in ('512', '2048')"; fi

# compute-sanitizer on a small shape (tails, causal, GQA, N_q != N_kv), every kernel:
# memcheck and racecheck at d = 64 and 128; any error fails (the Makefile's phase_sanitize).
phase3_SAN_ARGS := --B 1 --H 4 --Hkv 2 --N 77 --Nkv 300 --causal --iters 1 --quiet
phase3_SAN_RUNS := $(foreach d,64 128,$(foreach t,memcheck racecheck,$(t):$(d):all:))
