/* par.c - par.h's parallel for: a counter the threads take items from (par.h says why). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>
#include "par.h"

#define PAR_MAX_THREADS 32

int par_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    const char *e = getenv("FA_THREADS");
    if (e && atoi(e) > 0 && atoi(e) < n) n = atoi(e);
    if (n < 1) n = 1;
    return n > PAR_MAX_THREADS ? PAR_MAX_THREADS : (int)n;
}

typedef struct {
    int n;
    atomic_int next;   /* the next item not yet taken */
    par_fn fn;
    void *ctx;
} par_job_t;

static void *worker(void *arg)
{
    par_job_t *job = arg;
    for (int i; (i = atomic_fetch_add(&job->next, 1)) < job->n;) job->fn(i, job->ctx);
    return NULL;
}

void par_for(int n, par_fn fn, void *ctx)
{
    int threads = par_threads();
    if (threads > n) threads = n;
    par_job_t job = { n, 0, fn, ctx };
    pthread_t t[PAR_MAX_THREADS];
    int started = 0;
    for (int k = 1; k < threads; k++)   /* this thread is worker 0 */
        if (pthread_create(&t[started], NULL, worker, &job) == 0) started++;
    worker(&job);
    for (int k = 0; k < started; k++) pthread_join(t[k], NULL);
}
