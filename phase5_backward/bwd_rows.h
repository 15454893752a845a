/* bwd_rows.h - the GPU rows of phase 5's driver (bwd_rows.c). */
#ifndef PHASE5_BWD_ROWS_H
#define PHASE5_BWD_ROWS_H
#include <stddef.h>
#include "driver.h"

/* The GPU rows of one problem: phase 4's forward on the device (O, L), then std (the
 * yardstick and the previous kernel, always run; a row when selected) and each selected
 * kernel of o (simple only when simple_ok), poisoned, checked, timed. Returns the rows
 * written; *rerun_diff (may be NULL): the gradient elements a rerun of mma changed. */
int bwd_gpu_rows(const attn_inputs_t *in, const cli_opts_t *o, const char *sweep, bool simple_ok,
                 drv_row_t *rows, size_t *rerun_diff);
#endif
