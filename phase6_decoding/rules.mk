# phase6_decoding - Flash-Decoding (split the KV cache, combine by log-sum-exp). Included
# by the top Makefile.
phase6_LIB  := phase6_decoding/decode_cpu.c phase6_decoding/decode_fdpp_cpu.c phase6_decoding/decode_bytes.c \
               phase6_decoding/decode_check.c phase6_decoding/decode_rows.c phase6_decoding/decode_sweep.c
phase6_MAIN := phase6_decoding/main.c
phase6_TEST := phase6_decoding/test_phase6.c
phase6_CU   := phase6_decoding/decode.cu
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

# The sweep: the model's bytes vs the cache length L and vs the number of splits S; with a
# GPU, time and GB/s vs L (fa2-mma, split, split-pack), time vs S, paged vs contiguous; and
# PyTorch's SDPA (flash, cuDNN) on the same decode shapes where torch imports.
# Profile: Nsight Compute's DRAM bytes of one run of each GPU kernel of the default problem.
# Sanitize: GQA packing with N_q = 4 causal (two heads a row tile), a cache of 1000 keys
# (a tail tile), every kernel (paged and ragged with a zero-length sequence); memcheck at
# d = 32, 64, 128 and 256, with partials and the combine (FA_SPLITS=3) and without (FA_SPLITS=1);
# racecheck and initcheck at d = 128, S = 3.
phase6_SWEEP_ARGS := --iters 10
phase6_PEERS      := tools/decode_peers.py
phase6_PROFILE    := default problem
phase6_SAN_ARGS   := --B 1 --H 8 --Hkv 2 --N 4 --Nkv 1000 --causal --iters 1 --quiet
phase6_SAN_RUNS   := memcheck:32::FA_SPLITS=3 memcheck:64::FA_SPLITS=3 memcheck:256::FA_SPLITS=3 memcheck:128::FA_SPLITS=1 memcheck:128::FA_SPLITS=3 \
                     racecheck:128::FA_SPLITS=3 initcheck:128::FA_SPLITS=3

# decode_cpu.c's exercises call these: the reference library (the Makefile's REF_SRC) holds them too
REF_SRC_EXTRA += phase6_decoding/decode_bytes.c phase6_decoding/decode_fdpp_cpu.c
