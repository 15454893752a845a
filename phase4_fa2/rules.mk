# phase4_fa2 - FlashAttention-2 forward (Q outer, K/V inner). Included by the top Makefile.
phase4_LIB  := phase4_fa2/fa2_cpu.c phase4_fa2/fa2_check.c phase4_fa2/fa2_rows.c phase4_fa2/fa2_sweep.c phase4_fa2/fa3_fp8.c
phase4_MAIN := phase4_fa2/main.c
phase4_TEST := phase4_fa2/test_phase4.c
phase4_CU   := phase4_fa2/fa2_simple.cu phase4_fa2/fa2_mma.cu phase4_fa2/fa2_wgmma.cu phase4_fa2/fp8_quant.cu
# wgmma exists on sm_90a alone: that file is built for that target only (its config says
# "skipped" on any other GPU), whatever CUDA_ARCH lists
$(call obj_of,phase4_fa2/fa2_wgmma.cu): GENCODE := -gencode arch=compute_90a,code=sm_90a
# `make phase4-spills` fails on a serialised wgmma (ptxas note C7520) in any of this phase's
# files: step 4 had one while its warpgroup index was computed per lane (chapter 4b)
phase4_USES := phase3 phase2 phase1 phase0
phase4_CUDA_LDLIBS := -lcublas
# `make phase4 run`: the causal default problem (the ladder is causal too)
phase4_RUN_ARGS := --causal
# `make phase4 run EX=1` also runs these shapes (Makefile, phase_actions): tails (not
# causal, d = 128); GQA 8:1 with N_q < N_kv causal (bottom-right diagonal); fully masked
# rows and Q blocks (N_q > N_kv causal); two FlashMask masks (chapter 4c: fa2.mask_tile,
# fa2.mask_element; their unit checks, fa2_check.c, run random masks in every run as well)
phase4_EX_RUNS := --B 1 --H 2 --N 133 --d 128 \
                | --B 1 --H 8 --Hkv 1 --N 50 --Nkv 170 --d 32 --causal \
                | --B 1 --H 2 --N 300 --Nkv 40 --d 64 --causal \
                | --B 1 --H 2 --N 300 --Nkv 333 --d 64 --mask causal_document:100,150,60 \
                | --B 1 --H 2 --Hkv 1 --N 200 --Nkv 230 --d 32 --mask global_sliding:10,40

# The sweep: the model's bytes and non-matmul counts vs N, then with a GPU the FA2 paper's
# setting (fp16, hidden 2048, B x N = 16k tokens, d = 64 and 128, causal and not) for
# cuBLAS, fa1-simple, fa1-mma, fa2-simple, fa2-mma; PyTorch's SDPA where torch imports.
# Profile: Nsight Compute's DRAM bytes of one run of each kernel of the default problem.
# Sanitize: a small shape (tails, causal, GQA, N_q != N_kv, fully masked rows), memcheck,
# racecheck and initcheck. (The targets: the Makefile's phase_sweep, _profile, _sanitize.)
phase4_SWEEP_ARGS := --iters 5
phase4_PEERS      := tools/peers.py
phase4_PROFILE    := default problem
phase4_SAN_ARGS   := --B 1 --H 4 --Hkv 2 --N 200 --Nkv 77 --causal --iters 1 --quiet
phase4_SAN_RUNS   := $(foreach d,64 128,$(foreach t,memcheck racecheck initcheck,$(foreach k,simple mma wgmma,$(t):$(d):$(k):)))
# d = 256 (steps 3 and 6), and FP8 with its pre-pass (wgmma-fp8+q: the pre-pass's shared tile, the kernel)
phase4_SAN_RUNS   += $(foreach t,memcheck racecheck initcheck,$(t):256:wgmma-ws: $(t):256:wgmma-persist: $(t):128:wgmma-fp8+q: $(t):256:wgmma-fp8+q:)
# FlashMask's masks (chapter 4c) through every kernel with a mask path: TOOL:D:KERNEL:ENV:MASK,
# the mask's ':' written '=' (the run's fields are ':'-separated); --causal gives way to it
phase4_SAN_RUNS   += $(foreach d,64 128,$(foreach t,memcheck racecheck,$(foreach k,mma wgmma-ws,$(t):$(d):$(k)::sliding=40 $(t):$(d):$(k)::document=30)))

# The Hopper building block (common/wgmma.cuh): wgmma needs sm_90a, so this one program is
# built for that target alone, whatever CUDA_ARCH says; on any other GPU it says skipped.
ifneq ($(HAVE_NVCC),)
$(BUILD)/test_wgmma: phase4_fa2/test_wgmma.cu common/wgmma.cuh common/mma.cuh common/cuda_check.cuh
	@mkdir -p $(@D)
	$(call say,NVCC,$<)
	$(Q)$(NVCC) $(CPPFLAGS) -std=c++17 $(NVCCFLAGS) -gencode arch=compute_90a,code=sm_90a -Xcompiler -Wall,-Wextra $< -o $@
phase4-build: $(BUILD)/test_wgmma
endif
