# phase5_backward - the backward pass (FlashAttention-2 Alg. 2: K/V outer, Q inner). Included
# by the top Makefile.
phase5_LIB  := phase5_backward/bwd_cpu.c phase5_backward/bwd_check.c phase5_backward/bwd_worked.c \
               phase5_backward/bwd_rows.c phase5_backward/bwd_sweep.c
phase5_MAIN := phase5_backward/main.c
phase5_TEST := phase5_backward/test_phase5.c
phase5_CU   := phase5_backward/bwd_std.cu phase5_backward/bwd_simple.cu phase5_backward/bwd_mma.cu \
               phase5_backward/bwd_mma2d.cu phase5_backward/bwd_wgmma.cu phase5_backward/bwd_wgmma_ws.cu
# wgmma exists on sm_90a alone: those files are built for that target only (their configs say
# "skipped" on any other GPU), whatever CUDA_ARCH lists (as phase 4's fa2_wgmma.cu)
$(call obj_of,phase5_backward/bwd_wgmma.cu): GENCODE := -gencode arch=compute_90a,code=sm_90a
$(call obj_of,phase5_backward/bwd_wgmma_ws.cu): GENCODE := -gencode arch=compute_90a,code=sm_90a
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
# 128, causal and not) for std, simple, mma, mma2d, wgmma, wgmma-dq, wgmma-ws, wgmma-det, two-pass and fwd-bwd; PyTorch's SDPA backward
# (flash, cuDNN) where torch imports. Profile: Nsight Compute's DRAM bytes of one run of
# each kernel of the default problem. Sanitize: a small shape (tails, causal, GQA,
# N_q != N_kv, fully masked rows), memcheck, racecheck and initcheck.
phase5_SWEEP_ARGS := --iters 5
phase5_PEERS      := tools/bwd_peers.py
phase5_PROFILE    := default problem
phase5_SAN_ARGS   := --B 1 --H 4 --Hkv 2 --N 200 --Nkv 77 --causal --iters 1 --quiet
phase5_SAN_RUNS   := $(foreach d,64 128,$(foreach t,memcheck racecheck initcheck,$(foreach k,simple mma mma2d wgmma wgmma-ws wgmma-det two-pass,$(t):$(d):$(k):)))
# FlashMask's masks (chapter 4c) through every kernel with a mask path: TOOL:D:KERNEL:ENV:MASK,
# the mask's ':' written '=' (the run's fields are ':'-separated); --causal gives way to it
phase5_SAN_RUNS   += $(foreach d,64 128,$(foreach t,memcheck racecheck,$(foreach k,mma wgmma-ws,$(t):$(d):$(k)::sliding=40 $(t):$(d):$(k)::document=30)))
