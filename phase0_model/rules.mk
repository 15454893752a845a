# phase0_model - the compute model and the fp64 oracle. Included by the top Makefile.
phase0_LIB  := phase0_model/oracle.c phase0_model/cost.c phase0_model/worked.c \
               phase0_model/roofline.c phase0_model/selfcheck.c
phase0_MAIN := phase0_model/main.c
phase0_TEST := phase0_model/test_phase0.c
phase0_CU   :=
phase0_USES :=

phase0-run: phase0-build
	@mkdir -p $(RESULTS)/phase0
	$(BUILD)/phase0 --csv $(RESULTS)/phase0/phase0.csv
	@$(MAKE) --no-print-directory phase0-plot

phase0-test: $(DEPS_STEP) all
	@bash tools/run_tests.sh phase0

phase0-plot:
	@bash tools/plot.sh phase0_model/plot.gp $(RESULTS)/phase0

phase0-profile phase0-sanitize:
	@echo "phase0 runs on the CPU only: nothing to $(@:phase0-%=%)"
