/* dump.h - `--dump DIR`: write a run's tensors as .npy plus params.txt, for the
 * independent NumPy cross-check (tools/check_numpy.py DIR). Shapes are 4-D
 * [B][H][N][d] (L: [B][H][N_q]). Any pointer may be NULL (not written). The file names
 * (params.txt the longest) fit in OUT_NAME_MAX (path.h), which cli_parse keeps room for.
 *
 * The folder holds one run's dump, never a mix: attn_dump first removes every file of
 * ATTN_DUMP_FILES that is there (a previous run's dQ.npy or mask_runs.npy, which this run
 * may not write and check_numpy would read), and nothing else. A run that ends before the
 * dump is complete (exit, or a signal: common/cleanup.h) removes the files it wrote and
 * the folders it made, so a half-written dump is never left to be checked. */
#ifndef COMMON_DUMP_H
#define COMMON_DUMP_H
#include "problem.h"
/* The names a dump may write into its folder, NULL-terminated (cli_parse probes each). */
extern const char *const ATTN_DUMP_FILES[];
/* 0, or -1 when any file could not be written (the caller says so on stderr). */
int attn_dump(const char *dir, const attn_inputs_t *in,
              const float *O, const float *L,
              const float *dQ, const float *dK, const float *dV);
/* How many attn_dump calls of this run failed: drv_finish and drv_sweep_end then FAIL the
 * run, so that a dump that was not written never ends in exit 0. */
int attn_dump_failures(void);
#endif
