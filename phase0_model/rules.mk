# phase0_model - the compute model and the fp64 oracle. Included by the top Makefile.
phase0_LIB  := phase0_model/oracle.c phase0_model/cost.c phase0_model/worked.c \
               phase0_model/roofline.c phase0_model/selfcheck.c \
               phase0_model/oracle_check.c
phase0_MAIN := phase0_model/main.c
phase0_TEST := phase0_model/test_phase0.c
phase0_CU   :=
phase0_USES :=

phase0-sweep:
	@echo "phase0 has no sweep: make phase0 run prints every table it has (memory wall over N included)"

phase0-profile phase0-sanitize:
	@echo "phase0 runs on the CPU only: nothing to $(@:phase0-%=%)"
