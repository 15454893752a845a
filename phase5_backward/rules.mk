# phase5_backward - the backward pass (FlashAttention-2 Alg. 2: K/V outer, Q inner). Included
# by the top Makefile. CPU models only so far: the GPU kernels come in a later session.
phase5_LIB  := phase5_backward/bwd_cpu.c phase5_backward/bwd_check.c phase5_backward/bwd_worked.c
phase5_MAIN := phase5_backward/main.c
phase5_TEST := phase5_backward/test_phase5.c
phase5_CU   :=
phase5_USES := phase4 phase3 phase2 phase1 phase0
phase5_CUDA_LDLIBS :=
# `make phase5 run`: the causal default problem (the causal range is exercised)
phase5_RUN_ARGS := --causal
# `make phase5 run EX=1` also runs these shapes: tails (not causal, d = 128); GQA 8:1 with
# N_q < N_kv causal; fully masked rows (N_q > N_kv causal)
phase5_EX_RUNS := --B 1 --H 2 --N 133 --d 128 \
                | --B 1 --H 8 --Hkv 1 --N 50 --Nkv 170 --d 32 --causal \
                | --B 1 --H 2 --N 150 --Nkv 40 --d 64 --causal

# The sweep: the model's bytes vs N (standard vs FA2 backward) and the training memory wall.
phase5-sweep: phase5-build
	@mkdir -p $(RESULTS)/phase5
	$(BUILD)/phase5 --sweep --csv $(RESULTS)/phase5/phase5_sweep.csv
	@$(MAKE) --no-print-directory phase5-plot

phase5-profile:
	@echo "phase5 profile skipped: the GPU kernels of this phase are not written yet"
phase5-sanitize:
	@echo "phase5 sanitize skipped: the GPU kernels of this phase are not written yet"
