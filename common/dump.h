/* dump.h - `--dump DIR`: write a run's tensors as .npy plus params.txt, for the
 * independent NumPy cross-check (tools/check_numpy.py DIR). Shapes are 4-D
 * [B][H][N][d] (L: [B][H][N_q]). Any pointer may be NULL (not written). */
#ifndef COMMON_DUMP_H
#define COMMON_DUMP_H
#include "problem.h"
int attn_dump(const char *dir, const attn_inputs_t *in,
              const float *O, const float *L,
              const float *dQ, const float *dK, const float *dV);
#endif
