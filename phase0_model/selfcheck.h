/* selfcheck.h - the checks that make `build/phase0` PASS or FAIL: the oracle against
 * finite differences and against facts that hold by construction (GQA = repeated KV
 * heads, a fully masked row, a row that sees one key), and the cost model against the
 * memory-wall figures the FlashAttention write-ups quote. test_phase0.c uses the same
 * finite-difference helper. */
#ifndef PHASE0_SELFCHECK_H
#define PHASE0_SELFCHECK_H
#include <stdint.h>
#include <stdio.h>
#include "problem.h"

/* Print "PASS name" or "FAIL name: why" (why from fmt) on out (NULL: silent).
 * Returns 1 on FAIL, 0 on PASS, so callers can sum failures. */
int sc_line(FILE *out, const char *name, int ok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* In an EX=1 build, after a failed check, name the exercises it depends on (common/check.h);
 * returns failed. */
int sc_hint(FILE *out, int failed, const char *exercises);

/* Relative L2 error of oracle_bwd's dQ, dK, dV against central finite differences of
 * the loss sum(dO * O) (oracle_fwd), Richardson-extrapolated, on seeded inputs of the
 * (tiny!) problem p. An all-zero gradient is compared in absolute terms. */
typedef struct { double dq, dk, dv; } sc_grad_err_t;
sc_grad_err_t sc_fd_check(const attn_problem_t *p, uint64_t seed);
#define SC_FD_TOL 1e-6

/* The oracle's checks and the cost model's; each returns its FAIL count and adds the
 * number of checks it ran to *nchecks. */
int sc_oracle_checks(FILE *out, int *nchecks);
/* The unit check of p0.softmax_row against the reference library (run it first). */
int sc_unit_checks(FILE *out, int *nchecks);
int sc_cost_checks(FILE *out, int *nchecks);
#endif
