#include "npy.h"
#include <stdio.h>
#include <string.h>

/* .npy v1.0: magic "\x93NUMPY", version 1.0, a little-endian uint16 header length,
 * then a Python dict literal padded with spaces and ending in '\n' so that the data
 * starts at a multiple of 64 bytes, then the raw data. */
static int npy_write(const char *path, const void *data, size_t elem, const char *descr,
                     const size_t *shape, int ndim)
{
    char dict[256], dims[160] = "";
    size_t n = 1, used = 0;
    for (int i = 0; i < ndim; i++) {          /* a Python tuple: "(4, 8)" or "(5,)" */
        used += (size_t)snprintf(dims + used, sizeof dims - used, "%s%zu", i ? ", " : "", shape[i]);
        n *= shape[i];
    }
    if (ndim == 1) snprintf(dims + used, sizeof dims - used, ",");
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                       descr, dims);
    size_t total = 10 + (size_t)len + 1;              /* magic+version+hlen, dict, '\n' */
    size_t pad = (64 - total % 64) % 64;
    unsigned hlen = (unsigned)(len + pad + 1);

    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                              (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
    fwrite(head, 1, 10, f);
    fwrite(dict, 1, (size_t)len, f);
    for (size_t i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    size_t wrote = fwrite(data, elem, n, f);
    int bad = ferror(f) || wrote != n;   /* any write of the header or the data */
    return (fclose(f) == 0 && !bad) ? 0 : -1;
}

int npy_write_f32(const char *path, const float *d, const size_t *shape, int ndim)
{ return npy_write(path, d, 4, "<f4", shape, ndim); }

int npy_write_f64(const char *path, const double *d, const size_t *shape, int ndim)
{ return npy_write(path, d, 8, "<f8", shape, ndim); }
