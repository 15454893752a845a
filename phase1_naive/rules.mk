# phase1_naive - standard attention on the GPU, S and P in HBM. Included by the top Makefile.
phase1_LIB  := phase1_naive/naive_cpu.c phase1_naive/validate.c phase1_naive/check_fp16.c phase1_naive/fault_tests.c
phase1_MAIN := phase1_naive/main.c
phase1_TEST := phase1_naive/test_phase1.c
phase1_CU   := phase1_naive/naive.cu
phase1_USES := phase0
phase1_CUDA_LDLIBS := -lcublas
# `make phase1 run EX=1` also runs these shapes (Makefile, phase_actions): GQA with
# N_q != N_kv causal and tails, and fully masked rows (N_q > N_kv causal)
phase1_EX_RUNS := --B 1 --H 4 --Hkv 2 --N 50 --Nkv 70 --d 32 --causal | --B 1 --H 2 --N 80 --Nkv 50 --d 64 --causal

# The sweep (GPU): time, TFLOP/s and bytes vs N, and the memory wall. Profile: Nsight
# Compute's DRAM bytes of one run of each kernel, into the CSV's hbm_measured (the
# Makefile's phase_sweep and phase_profile).
phase1_SWEEP_ARGS := --iters 5
phase1_PROFILE    := default problem

# compute-sanitizer on a small shape (tails, causal, GQA, N_q != N_kv): any error fails.
PHASE1_SAN_ARGS := --B 1 --H 4 --Hkv 2 --N 77 --Nkv 93 --d 32 --causal --iters 1 --quiet
phase1-sanitize: phase1-build
	@command -v compute-sanitizer >/dev/null || { echo "phase1 sanitize skipped: compute-sanitizer not found"; exit 0; }; \
	for tool in memcheck racecheck; do \
	    extra=; [ $$tool = memcheck ] && extra="--leak-check full"; \
	    echo "compute-sanitizer --tool $$tool $$extra $(BUILD)/phase1 $(PHASE1_SAN_ARGS)"; \
	    compute-sanitizer --tool $$tool $$extra --error-exitcode 99 \
	        $(BUILD)/phase1 $(PHASE1_SAN_ARGS) --csv $(RESULTS)/phase1/sanitize.csv || exit 1; \
	done
