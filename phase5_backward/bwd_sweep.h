/* bwd_sweep.h - phase 5's --sweep (bwd_sweep.c), called by main.c. */
#ifndef PHASE5_BWD_SWEEP_H
#define PHASE5_BWD_SWEEP_H
#include "driver.h"

/* The CPU rows of one problem (main.c's): std-bwd, std-bwd-fp32, fa2-bwd, with their bytes
 * against the formulas (checks: also against the oracle). Returns the rows written. */
typedef int (*bwd_cpu_rows_fn)(const attn_problem_t *pc, const cli_opts_t *o, const char *sweep, bool checks,
                               drv_row_t *rows);

/* The models' bytes vs N (cpu_rows counted up to N = 512, the formulas beyond), the
 * training memory wall at B = 32, H = 8, and with a GPU the FA2 paper's setting. */
int bwd_sweep(drv_t *D, const cli_opts_t *o, bwd_cpu_rows_fn cpu_rows);
#endif
