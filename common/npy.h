/* npy.h - writes NumPy .npy files (format version 1.0, little-endian, C order) so that
 * tools/check_numpy.py can recompute a phase's results independently. */
#ifndef COMMON_NPY_H
#define COMMON_NPY_H
#include <stddef.h>
int npy_write_f32(const char *path, const float *data, const size_t *shape, int ndim);
int npy_write_f64(const char *path, const double *data, const size_t *shape, int ndim);
#endif
