# phase5_backward - the backward pass (FlashAttention-2 Alg. 2: K/V outer, Q inner). Included
# by the top Makefile.
phase5_LIB  := phase5_backward/bwd_cpu.c phase5_backward/bwd_check.c phase5_backward/bwd_worked.c \
               phase5_backward/bwd_rows.c
phase5_MAIN := phase5_backward/main.c
phase5_TEST := phase5_backward/test_phase5.c
phase5_CU   := phase5_backward/bwd_std.cu phase5_backward/bwd_simple.cu phase5_backward/bwd_mma.cu
phase5_USES := phase4 phase3 phase2 phase1 phase0
phase5_CUDA_LDLIBS := -lcublas
# `make phase5 run`: the causal default problem (the causal range is exercised)
phase5_RUN_ARGS := --causal
# `make phase5 run EX=1` also runs these shapes: tails (not causal, d = 128); GQA 8:1 with
# N_q < N_kv causal; fully masked rows (N_q > N_kv causal)
phase5_EX_RUNS := --B 1 --H 2 --N 133 --d 128 \
                | --B 1 --H 8 --Hkv 1 --N 50 --Nkv 170 --d 32 --causal \
                | --B 1 --H 2 --N 150 --Nkv 40 --d 64 --causal

# The sweep: the model's bytes vs N (standard vs FA2 backward), the training memory wall,
# and with a GPU the FA2 paper's setting (fp16, hidden 2048, B x N = 16k tokens, d = 64 and
# 128, causal and not) for std, simple, mma, two-pass and fwd-bwd; PyTorch's SDPA backward
# (flash, cuDNN) where torch imports.
phase5-sweep: phase5-build
	@mkdir -p $(RESULTS)/phase5
	$(BUILD)/phase5 --sweep --iters 5 --csv $(RESULTS)/phase5/phase5_sweep.csv
	@$(PYTHON) tools/bwd_peers.py $(RESULTS)/phase5/phase5_peers.csv || true
	@$(MAKE) --no-print-directory phase5-plot

# Nsight Compute: DRAM bytes of one run of each kernel of the default problem.
phase5-profile: phase5-build
	@mkdir -p $(RESULTS)/phase5
	@test -f $(RESULTS)/phase5/phase5.csv || $(BUILD)/phase5 --quiet --csv $(RESULTS)/phase5/phase5.csv
	@bash tools/profile.sh $(BUILD)/phase5 $(RESULTS)/phase5/phase5.csv

# compute-sanitizer on a small shape (tails, causal, GQA, N_q != N_kv, fully masked rows):
# memcheck, racecheck and initcheck; any error fails.
PHASE5_SAN_ARGS := --B 1 --H 4 --Hkv 2 --N 200 --Nkv 77 --causal --iters 1 --quiet
phase5-sanitize: phase5-build
	@command -v compute-sanitizer >/dev/null || { echo "phase5 sanitize skipped: compute-sanitizer not found"; exit 0; }; \
	$(BUILD)/gpu_info --probe >/dev/null 2>&1 || { echo "phase5 sanitize skipped: no usable CUDA device"; exit 0; }; \
	mkdir -p $(RESULTS)/phase5; \
	for d in 64 128; do for tool in memcheck racecheck initcheck; do for k in simple mma two-pass; do \
	    echo "compute-sanitizer --tool $$tool $(BUILD)/phase5 $(PHASE5_SAN_ARGS) --d $$d --kernel $$k"; \
	    compute-sanitizer --tool $$tool --error-exitcode 99 $(BUILD)/phase5 $(PHASE5_SAN_ARGS) --d $$d \
	        --kernel $$k --csv $(RESULTS)/phase5/sanitize.csv || exit 1; \
	done; done; done
