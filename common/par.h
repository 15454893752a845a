/* par.h - a parallel for over independent items on the host's cores (POSIX threads), for
 * the checks' own work: the fp64 oracle's rows of a large problem take seconds each run
 * on one core, and every row is independent of the others.
 *
 *   par_for(n, fn, ctx)   calls fn(i, ctx) once for every i in [0, n), from up to
 *                         par_threads() threads (items handed out in order, one at a time);
 *                         returns when all have run.
 *
 * fn must write only what item i owns (its row of an output array): the result is then the
 * same as a serial loop's, bit for bit, whatever the thread count. FA_THREADS=k caps the
 * threads (1: the plain serial loop). */
#ifndef COMMON_PAR_H
#define COMMON_PAR_H

typedef void (*par_fn)(int i, void *ctx);
int  par_threads(void);
void par_for(int n, par_fn fn, void *ctx);
#endif
