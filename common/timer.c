#define _POSIX_C_SOURCE 200809L
#include "timer.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median(const double *x, size_t n)
{
    if (n == 0) return 0.0;
    double *c = malloc(n * sizeof *c);
    if (!c) return x[0];
    memcpy(c, x, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_double);
    double m = (n % 2) ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}
