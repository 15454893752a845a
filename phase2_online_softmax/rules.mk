# phase2_online_softmax - softmax 3-pass -> 2-pass -> 1-pass. Included by the top Makefile.
phase2_LIB  := phase2_online_softmax/online_cpu.c phase2_online_softmax/demos.c
phase2_MAIN := phase2_online_softmax/main.c
phase2_TEST := phase2_online_softmax/test_phase2.c
phase2_CU   := phase2_online_softmax/softmax.cu
phase2_USES := phase1 phase0
phase2_CUDA_LDLIBS := $(phase1_CUDA_LDLIBS)
# `make phase2 run EX=1` also runs these shapes (Makefile, phase_actions): causal GQA
# with fully masked rows (N_q > N_kv), and one row of d = 128
phase2_EX_RUNS := --B 2 --H 4 --Hkv 2 --N 80 --Nkv 50 --d 32 --causal | --N 1 --d 128

# DRAM bytes of the two softmax kernels measured by Nsight Compute over the sweep's row
# lengths (caches flushed before each profiled launch): the model counts 16 (safe) and
# 12 (online) bytes per element; ncu shows how much of it reaches DRAM past the L2.
phase2-profile: phase2-build
	@mkdir -p $(RESULTS)/phase2
	@if ! command -v ncu >/dev/null 2>&1; then echo "phase2-profile skipped: ncu (Nsight Compute) not found"; \
	 elif ! $(BUILD)/gpu_info --probe >/dev/null 2>&1; then echo "phase2-profile skipped: no usable CUDA device"; \
	 else ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum -k 'regex:softmax_(safe|online)_kernel' \
	      --csv --log-file $(RESULTS)/phase2/phase2_ncu.csv \
	      $(BUILD)/phase2 --sweep --iters 1 --quiet --csv $(RESULTS)/phase2/profiled/phase2.csv \
	      && bash tools/profile.sh --stamp $(RESULTS)/phase2/phase2_ncu.csv phase2 ncu $(BUILD)/phase2 --sweep --iters 1 \
	      && echo "ncu: $(RESULTS)/phase2/phase2_ncu.csv"; fi

phase2-sanitize: phase2-build
	@if ! command -v compute-sanitizer >/dev/null 2>&1; then echo "phase2-sanitize skipped: compute-sanitizer not found"; \
	 elif ! $(BUILD)/gpu_info --probe >/dev/null 2>&1; then echo "phase2-sanitize skipped: no usable CUDA device"; \
	 else compute-sanitizer --tool memcheck $(BUILD)/test_phase2 && \
	      compute-sanitizer --tool racecheck $(BUILD)/test_phase2; fi

# The sweep (GPU): GB/s of the safe and online kernels vs row length -> phase2_sweep.csv.
phase2-sweep: phase2-build
	@mkdir -p $(RESULTS)/phase2
	$(BUILD)/phase2 --sweep --csv $(RESULTS)/phase2/phase2.csv
	@$(MAKE) --no-print-directory phase2-plot
