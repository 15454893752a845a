# phase6_decoding - Flash-Decoding (split the KV cache, combine by log-sum-exp). Included
# by the top Makefile. The CPU half: the GPU kernels are not written yet (no _CU).
phase6_LIB  := phase6_decoding/decode_cpu.c phase6_decoding/decode_check.c
phase6_MAIN := phase6_decoding/main.c
phase6_TEST := phase6_decoding/test_phase6.c
phase6_CU   :=
phase6_USES := phase4 phase3 phase2 phase1 phase0
# `make phase6 run`: the driver's default problem, one token against a 4096-key cache,
# GQA 32:8, d = 128
# `make phase6 run EX=1` also runs these shapes (Makefile, phase_actions): a few query
# tokens, causal, on a short cache of a tail block (the bottom-right diagonal inside the
# last split); GQA 4:1 on a cache of one key (most splits empty); MQA, N_q > N_kv causal
# (fully masked rows: O = 0, L = +inf through the combine)
phase6_EX_RUNS := --B 1 --H 4 --Hkv 2 --N 16 --Nkv 1000 --d 64 --causal \
                | --B 2 --H 8 --Hkv 2 --N 1 --Nkv 1 --d 128 \
                | --B 1 --H 4 --Hkv 1 --N 20 --Nkv 7 --d 32 --causal

# The sweep: the model's bytes vs the cache length L and vs the number of splits S.
phase6-sweep: phase6-build
	@mkdir -p $(RESULTS)/phase6
	$(BUILD)/phase6 --sweep --csv $(RESULTS)/phase6/phase6_sweep.csv
	@$(MAKE) --no-print-directory phase6-plot

phase6-profile: phase6-build
	@echo "phase6 profile skipped: the GPU kernels of phase 6 are not written yet"

phase6-sanitize: phase6-build
	@echo "phase6 sanitize skipped: the GPU kernels of phase 6 are not written yet"
