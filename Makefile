# FlashAttention from scratch, in C and CUDA C.
#
#   make phase0 run      build and run one chapter (also: test, plot, sweep, profile, sanitize)
#   make run             every chapter that exists
#   make test            build everything and run all tests; last line "N passed, M failed"
#   make help            every target
#
# Non-recursive: each phase folder has a rules.mk that this file includes. A phase's
# rules.mk sets <phase>_LIB (sources of its library), <phase>_MAIN (driver), <phase>_TEST
# (unit-test program), <phase>_CU (CUDA sources), <phase>_USES (phases it links, e.g.
# "phase0"), <phase>_CUDA_LDLIBS (extra CUDA libraries, e.g. -lcublas) and
# defines the phase's actions <phase>-profile and -sanitize (run, test and plot are
# generic, below).

.DEFAULT_GOAL := all
SHELL   := /bin/bash

# gcc unless the user names a compiler (make's built-in CC is cc, so `CC ?= gcc` would never apply)
ifeq ($(origin CC),default)
CC      := gcc
endif
PYTHON  ?= python3
NVCC    ?= nvcc
GNUPLOT ?= gnuplot
CFLAGS  ?= -O2
LDLIBS  ?=
# The flags the project needs come on top of whatever CFLAGS the user sets.
ALL_CFLAGS := -std=c11 -Wall -Wextra -D_DEFAULT_SOURCE -MMD -MP $(CFLAGS)
ALL_LDLIBS := $(LDLIBS) -lm -lpthread

# ---- the chapters -------------------------------------------------------------------
PHASE_DIRS := phase0_model phase1_naive phase2_online_softmax phase3_fa1 phase4_fa2 \
              phase5_backward phase6_decoding
PHASES     := $(foreach d,$(PHASE_DIRS),$(firstword $(subst _, ,$(d))))
dir_of      = $(filter $(1)_%,$(PHASE_DIRS))
WRITTEN    := $(foreach p,$(PHASES),$(if $(wildcard $(call dir_of,$(p))/rules.mk),$(p)))
ACTIONS    := run test plot sweep profile sanitize grade

# `make phase1 run`: the phase and the action are two goals. A phase goal given with an
# action only selects; the action goal does the work for the selected phases.
SELECTED   := $(filter $(PHASES),$(MAKECMDGOALS))
ACTION     := $(filter $(ACTIONS),$(MAKECMDGOALS))
TARGET_PHASES := $(or $(SELECTED),$(WRITTEN))

# ---- a handout (make handout): the student tree, where the solutions come only as object
# code (ref/libfa_ref.a). Every build there is an exercise build: its sources are the
# student's, and without EX=1 a check's REF(f) would be the student's own f.
HANDOUT := $(if $(wildcard ref/libfa_ref.a),1)
ifneq ($(HANDOUT),)
EX ?= 1
endif

# ---- exercises: EX=1 builds the fill-in copies from exercises/ instead -----------------
# `make phase2 run EX=1` cuts only phase 2's exercises: the earlier phases it links (and
# the oracle it is checked against) stay the reference, so a FAIL points at phase 2.
# With no phase named (make run EX=1, make phase2-build EX=1) every exercise is cut.
# Each selection builds in its own folder, so objects never mix.
EXDIR  ?= exercises
EX_DIRS := $(if $(SELECTED),$(foreach p,$(SELECTED),$(call dir_of,$(p))),common $(PHASE_DIRS))
BUILD_ORIGIN := $(origin BUILD)
BUILD  ?= build$(if $(EX),/ex-$(if $(SELECTED),$(subst $(eval) ,-,$(SELECTED)),all))
RESULTS ?= results
# The source actually compiled for a reference file: its exercise copy under EX=1 when
# the file belongs to a selected phase.
in_ex   = $(filter $(EX_DIRS),$(firstword $(subst /, ,$(1))))
src     = $(if $(EX),$(if $(call in_ex,$(1)),$(or $(wildcard $(EXDIR)/$(1)),$(1)),$(1)),$(1))

CPPFLAGS += -Icommon $(addprefix -I,$(PHASE_DIRS)) $(if $(EX),-DEX_BUILD=1)
# FA_NO_VISITS=1: the kernels without their visit counters (common/gpu.h), only to measure
# what the counters cost (tools/visits_cost.sh); give it a BUILD folder of its own.
CPPFLAGS += $(if $(filter 1,$(FA_NO_VISITS)),-DFA_NO_VISITS=1)
# DEC_WARPS=8: phase 6's decode kernels with 8 warps a block and 128-key K/V tiles (FA2's and
# cuDNN's tile), only to measure it beside the default 4 warps and 64 keys; it needs the
# shared memory of Hopper (DEC_SMEM_CAP below), so a BUILD folder of its own and sm_90.
CPPFLAGS += $(if $(DEC_WARPS),-DDEC_WARPS=$(DEC_WARPS) -DDEC_SMEM_CAP=232448)
# DEC_STAGES=3: phase 6's K/V ring three tiles deep (default 2), only to measure it (tools/
# dec_stages_probe.sh); at d = 128 two blocks of it fit an SM of Hopper or Ampere, not sm_86/89
CPPFLAGS += $(if $(DEC_STAGES),-DDEC_STAGES=$(DEC_STAGES) -DDEC_SMEM_CAP=232448)
# SOFTMAX_PROBE=NO_RESCALE or NO_EXP: the Hopper steps' softmax with O~'s rescale, or its
# exp2 (an FFMA in its place), taken out: wrong results (the checks FAIL), only to measure
# what each costs (tools/softmax_probe.sh)
CPPFLAGS += $(if $(SOFTMAX_PROBE),-DSOFTMAX_PROBE_$(SOFTMAX_PROBE)=1)
# BWD_PROBE=NO_EXP, NO_DQ_ADD or ONE_BULK: the Hopper backward (steps 3-4) with P^T's exp2
# replaced by an FFMA, with the dQ writer's adds left out, or with one bulk reduce a tile in
# place of one a row (of the wrong bytes): wrong results, only to measure what each costs
# (tools/bwd_cost_probe.sh)
CPPFLAGS += $(if $(BWD_PROBE),-DBWD_PROBE_$(BWD_PROBE)=1)
# a probe's build times the rows its checks FAIL (common/driver.c)
CPPFLAGS += $(if $(SOFTMAX_PROBE)$(BWD_PROBE),-DFA_PROBE_BUILD=1)

# ---- CUDA: built when nvcc is on the PATH ---------------------------------------------
HAVE_NVCC := $(if $(NO_CUDA),,$(shell command -v $(NVCC) 2>/dev/null))
CUDA_ARCH ?= sm_80 sm_86 sm_89 sm_90
CUDA_PTX  ?= $(lastword $(CUDA_ARCH))
GENCODE   := $(foreach a,$(CUDA_ARCH),-gencode arch=compute_$(a:sm_%=%),code=$(a)) \
             -gencode arch=compute_$(CUDA_PTX:sm_%=%),code=compute_$(CUDA_PTX:sm_%=%)
NVCCFLAGS ?= -O3 -lineinfo
ALL_NVCCFLAGS = -std=c++17 $(NVCCFLAGS) $(GENCODE) -Xcompiler -Wall,-Wextra
ifneq ($(HAVE_NVCC),)
  CUDA_HOME ?= $(patsubst %/bin/,%,$(dir $(HAVE_NVCC)))
  CPPFLAGS  += -DHAVE_CUDA=1 -I$(CUDA_HOME)/include
  CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lstdc++
else
  CPPFLAGS  += -DHAVE_CUDA=0
endif

# ---- block sizes of the mma kernels: one make variable per choice ---------------------
# `make FA2_D64_BC=64 ...` (defaults and meaning: phase3_fa1/fa1_blocks.h,
# phase4_fa2/fa2_blocks.h). The variables that are set go into $(BUILD)/gen/<k>_blocks_set.h
# (k = fa1, fa2), rewritten only when its text changes; fa<k>_blocks.h includes it for gcc
# and nvcc alike, and the compilers' dependency files make exactly the objects that include
# it rebuild when a value changes.
BLOCK_VARS := FA1_WARP_KEYS FA1_D32_WR FA1_D32_WC FA1_D64_WR FA1_D64_WC FA1_D128_WR FA1_D128_WC \
              FA1_K_IN_REGISTERS FA1_SKIP_FULL_MASK \
              FA2_D32_MT FA2_D32_BC FA2_D64_MT FA2_D64_BC FA2_D128_MT FA2_D128_BC \
              FA2_D256_MT FA2_D256_BC FA2_D256_WARPS FA2_SMEM_CAP \
              FA2_D32_STAGES FA2_D64_STAGES FA2_D128_STAGES FA2_D256_STAGES \
              FA2_WS_D64_BC FA2_WS_D128_BC FA2_WS_OVERLAP_BC
BLOCK_KERNELS := fa1 fa2
BLOCKS_H := $(foreach k,$(BLOCK_KERNELS),$(BUILD)/gen/$(k)_blocks_set.h)
blocks_set = $(foreach v,$(filter $(1)_%,$(BLOCK_VARS)),$(if $($(v)),$(v)=$($(v))))
CPPFLAGS += -I$(BUILD)/gen -DFA_BLOCKS_GEN
define blocks_rule
$(BUILD)/gen/$(1)_blocks_set.h: FORCE
	@mkdir -p $$(@D)
	@{ echo '/* generated by make: the $(1) block-size variables that were set; do not edit */'; \
	   $$(foreach kv,$$(call blocks_set,$(shell echo $(1) | tr a-z A-Z)),echo '#define $$(subst =, ,$$(kv))';) } >$$@.tmp
	@if cmp -s $$@.tmp $$@; then rm -f $$@.tmp; else mv -f $$@.tmp $$@; echo "  GEN   $$@ $$(strip $$(call blocks_set,$(shell echo $(1) | tr a-z A-Z)))"; fi
endef
$(foreach k,$(BLOCK_KERNELS),$(eval $(call blocks_rule,$(k))))
.PHONY: FORCE
FORCE:

# The commit of this source tree, baked into the CSVs' "# git:" line (common/csv.c), so it
# names the tree the binary was built from wherever it runs: $(BUILD)/gen/git_commit.h,
# rewritten only when the text changes ("-dirty" when tracked files differ from HEAD). The
# tree itself must be the repository's top (a handout unpacked inside another repository
# is not that repository's commit); FA_GIT_COMMIT=... names it for a copy without .git.
SRC_ROOT := $(patsubst %/,%,$(dir $(abspath $(firstword $(MAKEFILE_LIST)))))
GIT_H    := $(BUILD)/gen/git_commit.h
git_here  = $(shell [ "$$(git -C '$(SRC_ROOT)' rev-parse --show-toplevel 2>/dev/null)" = '$(SRC_ROOT)' ] && \
              c=$$(git -C '$(SRC_ROOT)' rev-parse --short HEAD 2>/dev/null) && \
              { [ -z "$$(git -C '$(SRC_ROOT)' status --porcelain --untracked-files=no 2>/dev/null | head -c 1)" ] && echo $$c || echo $$c-dirty; })
$(GIT_H): FORCE
	@mkdir -p $(@D)
	@c='$(or $(FA_GIT_COMMIT),$(git_here),unknown)'; echo "/* generated by make: the commit this tree was built from; do not edit */" >$@.tmp; \
	 echo "#define FA_BUILD_COMMIT \"$$c\"" >>$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi
# every object waits for the generated headers (their dependency files then rebuild the
# objects that include one when it changes)
GEN_H := $(BLOCKS_H) $(GIT_H)

# Quiet build lines ("  CC  file"); V=1 shows the whole commands.
Q := $(if $(V),,@)
say = $(if $(V),,@printf '  %-5s %s\n' $(1) $(2))

# ---- common/ ------------------------------------------------------------------------
# common/*_nocuda.c stand in for common/*.cu (same functions, "no GPU" answers) when
# nvcc is missing, so every driver links either way.
COMMON_SRC    := $(filter-out %_nocuda.c common/test_%.c,$(wildcard common/*.c))
COMMON_CU     := $(wildcard common/*.cu)
COMMON_NOCUDA := $(wildcard common/*_nocuda.c)

obj_of    = $(BUILD)/obj/$(basename $(1)).o
objs_of   = $(foreach s,$(1),$(call obj_of,$(s)))

# One compile rule per source, so that an exercise copy can stand in for the reference.
define c_rule
$(call obj_of,$(1)): $(call src,$(1)) | $(GEN_H)
	@mkdir -p $$(@D)
	$$(call say,CC,$$<)
	$$(Q)$$(CC) $$(CPPFLAGS) -I$(dir $(1)) $$(ALL_CFLAGS) -c $$< -o $$@
endef
define cu_rule
$(call obj_of,$(1)): $(call src,$(1)) $(wildcard common/*.cuh) | $(GEN_H)
	@mkdir -p $$(@D)
	$$(call say,NVCC,$$<)
	$$(Q)$$(NVCC) $$(CPPFLAGS) -I$(dir $(1)) $$(ALL_NVCCFLAGS) -MMD -MP -c $$< -o $$@
endef

# The libraries of a link (the prerequisites after the first); in an exercise build one
# group, so the reference library and the phase libraries may call each other.
comma     := ,
LIB_GROUP  = $(if $(EX),-Wl$(comma)--start-group) $$(wordlist 2,999,$$^) $(if $(EX),-Wl$(comma)--end-group)

# ---- phases -------------------------------------------------------------------------
include $(foreach p,$(WRITTEN),$(call dir_of,$(p))/rules.mk)

# ---- the reference library: what an exercise build's checks compare with (common/ref.h)
# Every CPU source with an exercise region, compiled from its solution (never from an
# exercise copy) without debug information, all into one object whose global symbols f
# are renamed ref_f. An exercise build links it; a handout ships it prebuilt in ref/.
REF_SRC      := $(shell grep -l -E '^[[:space:]]*/\* EXERCISE ' $(foreach d,$(PHASE_DIRS),$(wildcard $(d)/*.c)) /dev/null)
# ... and the CPU sources those call into without a region of their own (a phase's rules.mk
# names them in REF_SRC_EXTRA: phase 6's closed forms and FD++ pieces beside decode_cpu.c)
REF_SRC      += $(REF_SRC_EXTRA)
REF_PREBUILT := $(wildcard ref/libfa_ref.a)
REF_LIB      := $(or $(REF_PREBUILT),$(BUILD)/ref/libfa_ref.a)
REF_OBJS     := $(patsubst %.c,$(BUILD)/ref/%.o,$(REF_SRC))
$(BUILD)/ref/%.o: %.c | $(GEN_H)
	@mkdir -p $(@D)
	$(call say,REF,$<)
	$(Q)$(CC) $(filter-out -DEX_BUILD=1 -DREF_GPU_BUILD=1 -DREF_GPU_SOLVED=1,$(CPPFLAGS)) -I$(dir $<) $(ALL_CFLAGS) -g0 -c $< -o $@
$(BUILD)/ref/libfa_ref.a: $(REF_OBJS)
	$(Q)$(LD) -r -o $(BUILD)/ref/solutions.o $^
	$(Q)nm -g --defined-only $(BUILD)/ref/solutions.o | awk '{ print $$3 " ref_" $$3 }' >$(BUILD)/ref/rename.map
	$(Q)objcopy --redefine-syms=$(BUILD)/ref/rename.map --strip-debug --discard-all \
	    $(BUILD)/ref/solutions.o $(BUILD)/ref/fa_ref.o
	@rm -f $@
	$(Q)$(AR) rcs $@ $(BUILD)/ref/fa_ref.o
-include $(REF_OBJS:.o=.d)

# ---- the GPU reference library (common/ref.h, REF_GPU): every .cu source with an
# exercise region, compiled from its solution for the build's GPUs, one object a source
# (a phase pulls only what it borrows), each global symbol f renamed ref_f, and so is
# every call it makes into the CPU reference (fa1_rescale -> ref_fa1_rescale). Linked
# where another phase's GPU kernels may be cut: a handout (ref/libfa_ref_gpu.a, shipped
# when it was made with nvcc) and a repository exercise build that cuts more than one
# phase (make run EX=1); one that cuts one phase borrows the others' own (REF_GPU_SOLVED).
# (and every .cu whose exercise regions sit in a header beside it: tools/ref_cu_src.sh)
REF_CU_SRC   := $(if $(wildcard tools/ref_cu_src.sh),$(shell bash tools/ref_cu_src.sh $(PHASE_DIRS)),$(shell grep -l -E '^[[:space:]]*/\* EXERCISE ' $(foreach d,$(PHASE_DIRS),$(wildcard $(d)/*.cu)) /dev/null))
REF_GPU_OBJS := $(patsubst %.cu,$(BUILD)/ref/%.o,$(REF_CU_SRC))
# The phases whose sources this exercise build cuts (their copies under EXDIR):
CUT_PHASE_DIRS := $(foreach d,$(filter-out common,$(EX_DIRS)),$(if $(wildcard $(EXDIR)/$(d)/*),$(d)))
REF_GPU_LIB  := $(if $(and $(EX),$(HAVE_NVCC)),$(or $(wildcard ref/libfa_ref_gpu.a),$(if $(HANDOUT),,$(if $(filter-out 0 1,$(words $(CUT_PHASE_DIRS))),$(BUILD)/ref/libfa_ref_gpu.a))))
CPPFLAGS     += $(if $(REF_GPU_LIB),-DREF_GPU_BUILD=1,$(if $(and $(EX),$(if $(HANDOUT),,$(filter 0 1,$(words $(CUT_PHASE_DIRS))))),-DREF_GPU_SOLVED=1))
$(BUILD)/ref/%.o: %.cu | $(GEN_H)
	@mkdir -p $(@D)
	$(call say,REF,$<)
	$(Q)$(NVCC) $(filter-out -DEX_BUILD=1 -DREF_GPU_BUILD=1 -DREF_GPU_SOLVED=1,$(CPPFLAGS)) -I$(dir $<) -std=c++17 -O3 $(GENCODE) -MMD -MP -c $< -o $@
$(BUILD)/ref/libfa_ref_gpu.a: $(REF_GPU_OBJS) $(BUILD)/ref/libfa_ref.a
	$(Q)nm -g --defined-only $(REF_GPU_OBJS) $(BUILD)/ref/solutions.o | awk 'NF == 3 { print $$3 " ref_" $$3 }' \
	    | sort -u >$(BUILD)/ref/rename_gpu.map
	@rm -rf $(BUILD)/ref/gpu && mkdir -p $(BUILD)/ref/gpu
	$(Q)for o in $(REF_GPU_OBJS); do \
	    objcopy --redefine-syms=$(BUILD)/ref/rename_gpu.map --strip-debug $$o $(BUILD)/ref/gpu/$$(echo $${o#$(BUILD)/ref/} | tr / _) || exit 1; done
	@rm -f $@
	$(Q)$(AR) rcs $@ $(BUILD)/ref/gpu/*.o
-include $(REF_GPU_OBJS:.o=.d)

# For each written phase: lib<phase>.a from its library sources (+ CUDA ones when nvcc
# exists), the driver build/<phase>, and the unit tests build/test_<phase>.
define phase_build
$(1)_OBJS := $$(call objs_of,$$($(1)_LIB)) $$(if $$(HAVE_NVCC),$$(call objs_of,$$($(1)_CU)))
$(1)_LINK := $(BUILD)/lib$(1).a $$(foreach u,$$($(1)_USES),$(BUILD)/lib$$(u).a) $(if $(EX),$(REF_LIB) $(if $$($(1)_CU),$(REF_GPU_LIB))) $(BUILD)/libcommon.a
$(BUILD)/lib$(1).a: $$($(1)_OBJS)
	@mkdir -p $$(@D)
	@rm -f $$@
	$$(Q)$$(AR) rcs $$@ $$^
$(BUILD)/$(1): $$(call obj_of,$$($(1)_MAIN)) $$($(1)_LINK)
	$$(call say,LINK,$$@)
	$$(Q)$$(CC) $$(ALL_CFLAGS) $$< $(LIB_GROUP) -o $$@ $$(if $$(HAVE_NVCC),$$($(1)_CUDA_LDLIBS) $$(CUDA_LIBS)) $$(ALL_LDLIBS)
$(BUILD)/test_$(1): $$(call obj_of,$$($(1)_TEST)) $$($(1)_LINK)
	$$(call say,LINK,$$@)
	$$(Q)$$(CC) $$(ALL_CFLAGS) $$< $(LIB_GROUP) -o $$@ $$(if $$(HAVE_NVCC),$$($(1)_CUDA_LDLIBS) $$(CUDA_LIBS)) $$(ALL_LDLIBS)
$(1)-build: $(BUILD)/$(1) $$(if $$($(1)_TEST),$(BUILD)/test_$(1))
$$(foreach s,$$($(1)_LIB) $$($(1)_MAIN) $$($(1)_TEST),$$(eval $$(call c_rule,$$(s))))
$$(if $$(HAVE_NVCC),$$(foreach s,$$($(1)_CU),$$(eval $$(call cu_rule,$$(s)))))
endef
$(foreach p,$(WRITTEN),$(eval $(call phase_build,$(p))))

COMMON_OBJS := $(call objs_of,$(COMMON_SRC)) \
               $(if $(HAVE_NVCC),$(call objs_of,$(COMMON_CU)),$(call objs_of,$(COMMON_NOCUDA)))
$(foreach s,$(COMMON_SRC) $(COMMON_NOCUDA),$(eval $(call c_rule,$(s))))
$(if $(HAVE_NVCC),$(foreach s,$(COMMON_CU),$(eval $(call cu_rule,$(s)))))
$(BUILD)/libcommon.a: $(COMMON_OBJS)
	@mkdir -p $(@D)
	@rm -f $@
	$(Q)$(AR) rcs $@ $^

$(eval $(call c_rule,common/test_common.c))
$(BUILD)/test_common: $(call obj_of,common/test_common.c) $(BUILD)/libcommon.a
	$(call say,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ -o $@ $(if $(HAVE_NVCC),$(CUDA_LIBS)) $(ALL_LDLIBS)
# test_mask: FlashMask's column-sparse masks (common/mask.h) against direct definitions
$(eval $(call c_rule,common/test_mask.c))
$(BUILD)/test_mask: $(call obj_of,common/test_mask.c) $(BUILD)/libcommon.a
	$(call say,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ -o $@ $(if $(HAVE_NVCC),$(CUDA_LIBS)) $(ALL_LDLIBS)

# The tools written in C (the exercise generator).
$(BUILD)/mkexercise: tools/mkexercise.c
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) $< -o $@

# gpu_info: the device, or why there is none (`--probe` is what the GPU tests ask).
$(BUILD)/gpu_info: $(call obj_of,tools/gpu_info.c) $(BUILD)/libcommon.a
	$(call say,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ -o $@ $(if $(HAVE_NVCC),$(CUDA_LIBS)) $(ALL_LDLIBS)
$(eval $(call c_rule,tools/gpu_info.c))

# mask_map: one FlashMask mask and its tile classes as data for chapter 4c's figure.
$(BUILD)/mask_map: $(call obj_of,tools/mask_map.c) $(BUILD)/libcommon.a
	$(call say,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ -o $@ $(if $(HAVE_NVCC),$(CUDA_LIBS)) $(ALL_LDLIBS)
$(eval $(call c_rule,tools/mask_map.c))

# fp8_accuracy: FlashAttention-3's FP8 accuracy table (chapter 4b) from the CPU model
# phase4_fa2/fa3_fp8.c, linked with phase 4's library like the phase's own driver.
$(BUILD)/fp8_accuracy: $(call obj_of,phase4_fa2/fp8_accuracy.c) $(phase4_LINK)
	$(call say,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(if $(EX),-Wl$(comma)--start-group) $^ $(if $(EX),-Wl$(comma)--end-group) -o $@ $(if $(HAVE_NVCC),$(phase4_CUDA_LDLIBS) $(CUDA_LIBS)) $(ALL_LDLIBS)
$(eval $(call c_rule,phase4_fa2/fp8_accuracy.c))

# test_fp8_quant: FlashAttention-3's FP8 pre-pass on the GPU (phase4_fa2/fp8_quant.cu) against
# the CPU model's quantisation, bit for bit (skipped without a GPU; phase4_fa2/tests.sh).
ifneq ($(HAVE_NVCC),)
$(BUILD)/test_fp8_quant: $(call obj_of,phase4_fa2/test_fp8_quant.c) $(phase4_LINK)
	$(call say,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(if $(EX),-Wl$(comma)--start-group) $^ $(if $(EX),-Wl$(comma)--end-group) -o $@ $(phase4_CUDA_LDLIBS) $(CUDA_LIBS) $(ALL_LDLIBS)
$(eval $(call c_rule,phase4_fa2/test_fp8_quant.c))
FP8_QUANT_TEST := $(BUILD)/test_fp8_quant
endif

# ---- make train-lib: $(BUILD)/libfa_train.so, phase 4's forward and phase 5's backward
# behind tools/fa_train.h's C API, for tools/train_check.py (PyTorch, through ctypes). The
# phase libraries are not position-independent, so what it needs is compiled again with
# -fPIC into $(BUILD)/pic/, into one archive (the linker takes only what is called).
# cudart is linked statically, so the library does not mind which one PyTorch loaded;
# --exclude-libs keeps every archive's symbols inside: it exports fa_train_* alone.
# -z defs: every symbol resolved now, not at dlopen time in the middle of a training script.
TRAIN_LIB := $(BUILD)/libfa_train.so
TRAIN_SRC := $(COMMON_SRC) $(phase3_LIB) $(phase4_LIB) $(phase5_LIB) \
             common/gpu.cu common/mask_gpu.cu phase4_fa2/fa2_mma.cu phase5_backward/bwd_mma.cu phase5_backward/bwd_simple.cu
pic_of     = $(patsubst %,$(BUILD)/pic/%.o,$(basename $(1)))
$(BUILD)/pic/%.o: %.c | $(GEN_H)
	@mkdir -p $(@D)
	$(call say,PIC,$<)
	$(Q)$(CC) $(CPPFLAGS) -I$(dir $<) $(ALL_CFLAGS) -fPIC -c $< -o $@
$(BUILD)/pic/%.o: %.cu | $(GEN_H)
	@mkdir -p $(@D)
	$(call say,PIC,$<)
	$(Q)$(NVCC) $(CPPFLAGS) -I$(dir $<) $(ALL_NVCCFLAGS) -Xcompiler -fPIC -MMD -MP -c $< -o $@
$(BUILD)/pic/libtrain.a: $(call pic_of,$(TRAIN_SRC))
	@rm -f $@
	$(Q)$(AR) rcs $@ $^
$(TRAIN_LIB): $(call pic_of,tools/fa_train.c) $(BUILD)/pic/libtrain.a
	$(call say,LINK,$@)
	$(Q)$(CC) -shared -Wl,-z,defs -Wl,--exclude-libs,ALL -o $@ $^ \
	    -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread -lstdc++ -lm
train-lib: $(if $(HAVE_NVCC),$(TRAIN_LIB),train-lib-no-nvcc)
train-lib-no-nvcc:
	@echo "make train-lib: needs nvcc (the library is the GPU kernels)$(if $(NO_CUDA), and NO_CUDA is set)"; exit 2
# make train-check: the library, then tools/train_check.py (skipped without PyTorch + CUDA)
# into $(RESULTS)/train/, then its plot (drawn even when the check FAILs; its exit code stays).
# TRAIN_ARGS: more options for the script (e.g. "--seeds 4 --steps 600", "--sync").
train-check: $(if $(HAVE_NVCC),$(TRAIN_LIB))
	@$(PYTHON) tools/train_check.py --lib $(TRAIN_LIB) --out $(RESULTS)/train/train_check.csv $(TRAIN_ARGS); rc=$$?; \
	 [ ! -f $(RESULTS)/train/train_check.csv ] || $(MAKE) --no-print-directory train-plot; exit $$rc
train-plot:
	@if [ -f $(RESULTS)/train/train_check.csv ]; then bash tools/plot.sh tools/train_check.gp $(RESULTS)/train; \
	 else echo "plots skipped: no $(RESULTS)/train/train_check.csv yet (make train-check writes it)"; fi

# ---- top-level goals ----------------------------------------------------------------
.PHONY: all run test deps clean help handout exercises grade list-ex-runs train-lib train-lib-no-nvcc train-check train-plot $(PHASES) $(ACTIONS) \
        $(foreach p,$(PHASES),$(addprefix $(p)-,build $(ACTIONS)))

all: $(foreach p,$(WRITTEN),$(p)-build) $(BUILD)/mkexercise $(BUILD)/gpu_info $(BUILD)/test_common $(BUILD)/test_mask $(BUILD)/mask_map $(BUILD)/fp8_accuracy $(FP8_QUANT_TEST)
	@$(if $(HAVE_NVCC),,echo "note: nvcc not found: built the CPU parts only; the GPU kernels were skipped")

# `make phase1` alone builds it; with an action goal it only selects.
$(PHASES):
	@$(if $(ACTION),:,$(if $(filter $@,$(WRITTEN)),$(MAKE) --no-print-directory $@-build,echo "$@ ($(call dir_of,$@)/) is not written yet: coming in a later chapter"))

NO_DEPS ?=
DEPS_STEP := $(if $(NO_DEPS),,deps)

run: $(DEPS_STEP) $(foreach p,$(TARGET_PHASES),$(p)-run)
test: $(DEPS_STEP) all
	@$(TEST_ENV) bash tools/run_tests.sh $(if $(SELECTED),$(SELECTED),$(WRITTEN))
plot: $(DEPS_STEP) $(foreach p,$(TARGET_PHASES),$(p)-plot)
sweep: $(foreach p,$(TARGET_PHASES),$(p)-sweep)
profile: $(foreach p,$(TARGET_PHASES),$(p)-profile)
sanitize: $(foreach p,$(TARGET_PHASES),$(p)-sanitize)

# run, test and plot are the same for every written phase; a phase's rules.mk adds
# profile, sanitize and any extra target (e.g. <phase>-sweep). <phase>_RUN_ARGS adds
# options to the default run.
# With EX=1, <phase>_EX_RUNS (argument sets separated by "|") are run after the default
# run, each printing its table into $(RESULTS)/<phase>/ex-<k>/: the shapes where a wrong
# edge case shows (tails, N_q != N_kv causal, fully masked rows, GQA). Every set runs;
# the run fails if any of them fails. The tests then test the exercise build ($(BUILD)),
# the phases' tests only (the project-wide tools/tests.sh need the reference sources).
# EX_BUILD=1 tells the tests that the code under test is the student's (a test of the
# shared code that runs a phase's driver must not need that phase solved); EXDIR where
# its fill-ins are (a test that compiles a header itself, the CPU emulator's, reads them;
# the summary lists the exercises still unfilled there).
TEST_ENV = BUILD=$(BUILD)$(if $(EX), SKIP_TOOLS=1 EX_BUILD=1 EXDIR=$(EXDIR) T_EXDIR=$(EXDIR))
define phase_actions
$(1)-run: $(1)-build
	@mkdir -p $(RESULTS)/$(1)
	$(if $(EX),@fail=0; echo "$(BUILD)/$(1) --csv $(RESULTS)/$(1)/$(1).csv $$($(1)_RUN_ARGS)"; \
	$(BUILD)/$(1) --csv $(RESULTS)/$(1)/$(1).csv $$($(1)_RUN_ARGS) || fail=1; \
	k=0; IFS='|' read -r -a sets <<<'$$($(1)_EX_RUNS)'; \
	for a in "$$$${sets[@]}"; do a=$$$$(echo $$$$a); [ -n "$$$$a" ] || continue; k=$$$$((k + 1)); \
	    mkdir -p $(RESULTS)/$(1)/ex-$$$$k; echo; echo "$(BUILD)/$(1) --csv $(RESULTS)/$(1)/ex-$$$$k/$(1).csv $$$$a"; \
	    $(BUILD)/$(1) --csv $(RESULTS)/$(1)/ex-$$$$k/$(1).csv $$$$a || fail=1; \
	done; \
	if [ $$$$fail -ne 0 ]; then echo; echo "$(1) run EX=1: FAIL (see the FAIL lines above: each names the exercises behind it)"; exit 1; fi; \
	[ $$$$k -eq 0 ] || echo "$(1) run EX=1: the default problem and $$$$k more shapes ($(1)_EX_RUNS) PASS",$(BUILD)/$(1) --csv $(RESULTS)/$(1)/$(1).csv $$($(1)_RUN_ARGS))
	@$$(MAKE) --no-print-directory $(1)-plot
$(1)-test: $(DEPS_STEP) all
	@$$(TEST_ENV) bash tools/run_tests.sh $(1)
$(1)-plot:
	@bash tools/plot.sh $(call dir_of,$(1))/plot.gp $(RESULTS)/$(1)
endef
$(foreach p,$(WRITTEN),$(eval $(call phase_actions,$(p))))

# The GPU phases' sweep, profile and sanitize, from the variables their rules.mk sets:
#   <phase>_SWEEP_ARGS  make <phase>-sweep: the driver's --sweep with them into
#                       results/<phase>/<phase>_sweep.csv; then <phase>_PEERS (a tools/ script:
#                       PyTorch's SDPA on the sweep's own points, <csv>.points, where torch
#                       imports) into <phase>_peers.csv; then the plots
#   <phase>_PROFILE     (any value) make <phase>-profile: Nsight Compute's DRAM bytes of one run
#                       of each kernel of the default problem, into its CSV (run first if missing)
#   <phase>_SAN_RUNS    make <phase>-sanitize: compute-sanitizer on the driver with
#                       <phase>_SAN_ARGS, once per TOOL:D:KERNEL:ENV (empty fields: not given,
#                       e.g. memcheck:128::FA_SPLITS=3); any error fails
define phase_sweep
$(1)-sweep: $(1)-build
	@mkdir -p $(RESULTS)/$(1)
	$(BUILD)/$(1) --sweep $($(1)_SWEEP_ARGS) --csv $(RESULTS)/$(1)/$(1)_sweep.csv
	$(if $($(1)_PEERS),@$(PYTHON) $($(1)_PEERS) $(RESULTS)/$(1)/$(1)_peers.csv $(RESULTS)/$(1)/$(1)_sweep.csv.points || true)
	@$$(MAKE) --no-print-directory $(1)-plot
endef
define phase_profile
$(1)-profile: $(1)-build
	@mkdir -p $(RESULTS)/$(1)
	@test -f $(RESULTS)/$(1)/$(1).csv || $(BUILD)/$(1) --quiet --csv $(RESULTS)/$(1)/$(1).csv
	@bash tools/profile.sh $(BUILD)/$(1) $(RESULTS)/$(1)/$(1).csv
endef
define phase_sanitize
$(1)-sanitize: $(1)-build
	@command -v compute-sanitizer >/dev/null || { echo "$(1) sanitize skipped: compute-sanitizer not found"; exit 0; }; \
	$(BUILD)/gpu_info --probe >/dev/null 2>&1 || { echo "$(1) sanitize skipped: no usable CUDA device"; exit 0; }; \
	mkdir -p $(RESULTS)/$(1); \
	for run in $($(1)_SAN_RUNS); do IFS=: read -r tool d k env mask <<<"$$$$run"; \
	    base="$($(1)_SAN_ARGS)"; [ -z "$$$$mask" ] || base="$$$${base/--causal/} --mask $$$${mask//=/:}"; \
	    args="$$$$base --d $$$$d$$$${k:+ --kernel $$$$k}"; \
	    echo "$$$${env:+$$$$env }compute-sanitizer --tool $$$$tool $(BUILD)/$(1) $$$$args"; \
	    env $$$$env compute-sanitizer --tool $$$$tool --error-exitcode 99 $(BUILD)/$(1) $$$$args \
	        --csv $(RESULTS)/$(1)/sanitize.csv || exit 1; \
	done
endef
$(foreach p,$(WRITTEN),$(if $($(p)_SWEEP_ARGS),$(eval $(call phase_sweep,$(p)))))
$(foreach p,$(WRITTEN),$(if $($(p)_PROFILE),$(eval $(call phase_profile,$(p)))))
$(foreach p,$(WRITTEN),$(if $($(p)_SAN_RUNS),$(eval $(call phase_sanitize,$(p)))))

# <phase>-spills: ptxas's register report for sm_90, with the build's own flags; fails if
# any kernel of the phase spills to local memory, or if ptxas says it serialised a file's
# wgmma.mma_async instructions (its "Potential Performance Loss" notes: the tensor cores
# then wait for each product in turn), except in the files <phase>_WGMMA_SERIAL_OK lists.
# Needs nvcc, not a GPU (tests run it); the kernels compile as in a CUDA build
# (HAVE_CUDA=1) even when NO_CUDA=1 builds the rest.
define phase_spills
$(1)-spills: $(BLOCKS_H)
	@command -v $(NVCC) >/dev/null || { echo "$(1) spills skipped: nvcc not found"; exit 0; }; \
	mkdir -p $(BUILD)/spills; fail=0; \
	for f in $($(1)_CU); do \
	    log=$(BUILD)/spills/$$$$(basename $$$$f).log; \
	    arch=-arch=sm_90; case $$$$f in *wgmma*) arch="-gencode arch=compute_90a,code=sm_90a";; esac; \
	    $(NVCC) $(filter-out -DHAVE_CUDA=%,$(CPPFLAGS)) -DHAVE_CUDA=1 -I$(call dir_of,$(1)) -std=c++17 $(NVCCFLAGS) $$$$arch -Xptxas -v \
	        -c $$$$f -o $(BUILD)/spills/$$$$(basename $$$$f).o 2>$$$$log || { cat $$$$log; exit 1; }; \
	    grep -E 'Used [0-9]+ registers' $$$$log | sed "s|^ptxas info *: |  $$$$(basename $$$$f): |"; \
	    if grep -E '[1-9][0-9]* bytes spill (stores|loads)' $$$$log; then fail=1; fi; \
	    case " $($(1)_WGMMA_SERIAL_OK) " in *" $$$$f "*) ;; \
	        *) if grep 'wgmma.mma_async instructions are serialized' $$$$log; then fail=1; fi;; esac; \
	done; \
	if [ $$$$fail -ne 0 ]; then echo "$(1) spills: FAIL (register spills or serialised wgmma above)"; exit 1; fi; \
	echo "$(1) spills: PASS (no spill stores or loads, no serialised wgmma on sm_90)"
endef
$(foreach p,$(WRITTEN),$(if $($(p)_CU),$(eval $(call phase_spills,$(p)))))
list-spills:
	@echo $(foreach p,$(WRITTEN),$(if $($(p)_CU),$(p)))
# list-ex-runs: "PHASE K" for each written phase, K the shapes of <phase>_EX_RUNS that
# `make PHASE run EX=1` runs after the default problem (README_STUDENT.md says so)
list-ex-runs:
	@$(foreach p,$(WRITTEN),echo "$(p) $$(awk -F'|' '{ n = 0; for (i = 1; i <= NF; i++) if ($$i ~ /[^ ]/) n++; print n }' <<<'$($(p)_EX_RUNS)')";)

# A phase not written yet answers every action with one line.
define phase_missing
$(1)-build $(addprefix $(1)-,$(ACTIONS)):
	@echo "$(1) ($(call dir_of,$(1))/) is not written yet: coming in a later chapter"
endef
$(foreach p,$(filter-out $(WRITTEN),$(PHASES)),$(eval $(call phase_missing,$(p))))

deps:
	@bash tools/deps.sh "$(PYTHON)" "$(GNUPLOT)"

ifeq ($(HANDOUT),)
exercises: $(BUILD)/mkexercise
	@bash tools/exercises.sh generate

handout: $(BUILD)/mkexercise
	@bash tools/exercises.sh handout
else
# the student tree has no solutions to cut: its sources are already the exercises. The
# chapters say `make exercises` (the repository's step): here it has nothing to do.
exercises:
	@echo "make exercises: nothing to generate in the student tree: the chapters' exercises/<path> files are <path> here, already cut (README_STUDENT.md)"
handout:
	@echo "make $@: not in the student tree (your sources are the exercises; README_STUDENT.md)"; exit 2
endif

# make grade: one row per exercise (PASS, FAIL, BLOCKED, UNFILLED, SKIPPED(no GPU)), its
# points and a total (tools/grade.sh); `make phase3 grade` grades one phase. In the
# repository it grades exercises/ (EX=1), each phase in the build `make phaseN run EX=1` uses.
grade: $(BUILD)/mkexercise $(if $(HAVE_NVCC),$(BUILD)/gpu_info)
	@$(if $(EX),,echo "make grade: grades the fill-in files: make grade EX=1 (exercises/)"; exit 2;) \
	GRADE_MAKE='$(MAKE)' GRADE_EXDIR='$(EXDIR)' GRADE_NVCC='$(HAVE_NVCC)' GRADE_GPU_INFO='$(BUILD)/gpu_info' \
	GRADE_BUILD='$(if $(HANDOUT),$(BUILD))' GRADE_BUILD_BASE='$(if $(filter command line,$(BUILD_ORIGIN)),$(BUILD),build)' \
	BUILD='$(BUILD)' bash tools/grade.sh $(SELECTED)

clean:
	rm -rf build results

help:
	@echo "FlashAttention from scratch - make targets"
	@echo ""
	@echo "  make phaseN run       build phase N, run it on its default problem, check it,"
	@echo "                        print the table, write results/phaseN/*.csv and plots"
	@echo "  make phaseN test      that phase's tests only"
	@echo "  make phaseN plot      draw results/phaseN/*.png from its CSV (gnuplot)"
	@echo "  make phaseN profile   Nsight Compute DRAM bytes into the CSV (GPU phases)"
	@echo "  make phaseN sanitize  compute-sanitizer memcheck + racecheck (GPU phases)"
	@echo "  make phaseN sweep     the phase's standard sweep, then its plots (GPU phases: the FA2 paper's setting)"
	@echo "  make phaseN-spills    ptxas -v for sm_90: fails if a kernel spills registers (no GPU needed)"
	@echo "  make phaseN           build phase N only"
	@echo "  make phaseN run EX=1  the same with the exercise (fill-in) sources$(if $(HANDOUT), (implied in this tree))"
	@echo "  make                  build everything (CPU parts only when nvcc is missing)"
	@echo "  make run              run every written phase"
	@echo "  make test             build everything and run every test (last line: N passed, M failed)"
	@echo "  make deps             install gnuplot and NumPy if missing (also run by run/test)"
	@echo "  make grade$(if $(HANDOUT),       , EX=1)      one row per exercise (PASS/FAIL/UNFILLED/SKIPPED(no GPU)), its points, a total"
	@echo "                        (make phaseN grade: one phase; the expected output of each phase: README_STUDENT.md)"
	@echo "  make train-lib        build/libfa_train.so: phase 4's forward + phase 5's backward for PyTorch (tools/fa_train.h)"
	@echo "  make train-check      train a small GQA transformer on them and on PyTorch's SDPA (tools/train_check.py;"
	@echo "                        needs PyTorch with CUDA, else skipped): results/train/*.csv, PASS/FAIL; make train-plot: its PNG"
	@echo "                        (TRAIN_ARGS=\"--seeds 4 --steps 600\": options of tools/train_check.py)"
	$(if $(HANDOUT),,@echo "  make exercises        regenerate exercises/ from the EXERCISE markers")
	$(if $(HANDOUT),,@echo "  make handout          build/handout.tar.gz: the student tree, solutions cut out")
	@echo "  make clean            remove build/ and results/"
	@echo ""
	@echo "  variables: CUDA_ARCH=\"sm_90\" (fast one-GPU build), EX=1, NO_DEPS=1, PYTHON=python3,"
	@echo "             NO_CUDA=1 (build as if nvcc were missing)"
	@echo "             FA_NO_VISITS=1 (the kernels' visited-block counters compiled out: tools/visits_cost.sh times both)"
	@echo "  block sizes of the mma kernels (one per choice; objects rebuild when one changes):"
	@echo "             $(wordlist 1,7,$(BLOCK_VARS))"
	@echo "             $(wordlist 8,16,$(BLOCK_VARS))"
	@echo "             $(wordlist 17,40,$(BLOCK_VARS))"
	@echo "             e.g. make phase4 FA2_D64_MT=1 FA2_D64_BC=128 (phase3_fa1/fa1_blocks.h, phase4_fa2/fa2_blocks.h)"
	@echo "  Hopper (chapter 4b): build/phase4 --kernel wgmma runs the nine fp16 steps, 1-6 and 8-10 (wgmma, -tma, -ws,"
	@echo "             -pingpong, -overlap, -persist, -fa3order, -fa3, -store); --kernel wgmma-fp8 the FP8 one (step 7),"
	@echo "             and its rows wgmma-fp8+q, -pingpong, -fmaex2 (the table: tools/kernels.sh phase4-hopper, phase4-fp8);"
	@echo "             sm_90a, skipped elsewhere; tools/mma_emu/run.sh hopper and fp8 check them on the CPU"
	@echo "             build/phase5 --kernel wgmma: the backward on wgmma (sm_90a; tools/mma_emu/run.sh wgmma checks it on the CPU)"
	@echo "  FA_TEST_VISIT_ALL=1 build/phaseN ...: every kernel that skips blocks visits them all (a deleted range): the"
	@echo "             visit counters must FAIL it (tools/visits_fail.sh); tools/handout_test.sh: the handout as a student meets it"
	@echo ""
	@echo "  phases written: $(WRITTEN)"
	@echo "  phases coming:  $(filter-out $(WRITTEN),$(PHASES))"

-include $(shell find $(BUILD)/obj $(BUILD)/pic -name '*.d' 2>/dev/null)
