/* timer.h - wall-clock time for CPU rows (clock_gettime, CLOCK_MONOTONIC), and the
 * median that every timing in the project reports. */
#ifndef COMMON_TIMER_H
#define COMMON_TIMER_H
#include <stddef.h>
double now_seconds(void);
/* Median of n values; sorts a copy, leaves x as it was. */
double median(const double *x, size_t n);
#endif
