#include "dump.h"
#include "cleanup.h"
#include "csv.h"
#include "npy.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* the order attn_dump writes them in; params.txt last */
const char *const ATTN_DUMP_FILES[] = {"Q.npy", "K.npy", "V.npy", "dO.npy", "O.npy", "L.npy", "dQ.npy",
                                       "dK.npy", "dV.npy", "mask_runs.npy", "params.txt", NULL};
#define NFILES (sizeof ATTN_DUMP_FILES / sizeof ATTN_DUMP_FILES[0] - 1)

static int failures;   /* dumps of this run that could not be written */

int attn_dump_failures(void) { return failures; }

/* The dump being written: its files' paths and the folders made for it. A run that ends
 * before it is complete removes them (cleanup.h: unlink and rmdir only). */
static struct {
    char path[NFILES][OUT_PATH_MAX];
    path_mkdirs_t made;
    volatile sig_atomic_t live;
} cur;

static int remove_partial_dump(void)
{
    if (!cur.live) return 0;
    int removed = 0;
    for (size_t i = 0; i < NFILES; i++) removed += unlink(cur.path[i]) == 0;
    path_mkdirs_undo(&cur.made);
    cur.live = 0;
    return removed;
}

static int dump_one(int k, const float *x, size_t b, size_t h, size_t n, size_t d, int ndim)
{
    if (!x) return 0;
    size_t shape[4] = {b, h, n, d};
    return npy_write_f32(cur.path[k], x, shape, ndim);
}

int attn_dump(const char *dir, const attn_inputs_t *in, const float *O, const float *L,
              const float *dQ, const float *dK, const float *dV)
{
    const attn_problem_t *p = &in->p;
    char why[OUT_PATH_MAX + 64];
    for (size_t i = 0; i < NFILES; i++)
        if (path_join(cur.path[i], dir, ATTN_DUMP_FILES[i]) != 0) { failures++; return -1; }
    cleanup_register(remove_partial_dump);
    sigset_t all, old;   /* no signal between making a folder and recording it */
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    int made = path_mkdirs(&cur.made, dir, why, sizeof why);
    cur.live = 1;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (made != 0) { fprintf(stderr, "dump: %s\n", why); remove_partial_dump(); failures++; return -1; }
    /* a previous dump's files: this one may not write them all (dQ, mask_runs ...) */
    for (size_t i = 0; i < NFILES; i++) unlink(cur.path[i]);
    int err = 0;
    err |= dump_one(0, in->q, p->B, p->H, p->N_q, p->d, 4);
    err |= dump_one(1, in->k, p->B, p->H_kv, p->N_kv, p->d, 4);
    err |= dump_one(2, in->v, p->B, p->H_kv, p->N_kv, p->d, 4);
    err |= dump_one(3, in->dO, p->B, p->H, p->N_q, p->d, 4);
    err |= dump_one(4, O, p->B, p->H, p->N_q, p->d, 4);
    err |= dump_one(5, L, p->B, p->H, p->N_q, 1, 3);
    err |= dump_one(6, dQ, p->B, p->H, p->N_q, p->d, 4);
    err |= dump_one(7, dK, p->B, p->H_kv, p->N_kv, p->d, 4);
    err |= dump_one(8, dV, p->B, p->H_kv, p->N_kv, p->d, 4);
    if (attn_mask(p)) {   /* a FlashMask mask: its four vectors, lts, lte, uts, ute, as rows of [4][N_kv] */
        const size_t n = (size_t)p->N_kv;
        float *runs = malloc(4 * n * sizeof *runs);
        const int32_t *vec[4] = { attn_mask(p)->lts, attn_mask(p)->lte, attn_mask(p)->uts, attn_mask(p)->ute };
        if (runs)
            for (int k = 0; k < 4; k++)
                for (size_t j = 0; j < n; j++) runs[k * n + j] = (float)vec[k][j];   /* exact below 2^24 */
        err |= runs ? dump_one(9, runs, 4, n, 0, 0, 2) : -1;
        free(runs);
    }
    FILE *f = err ? NULL : fopen(cur.path[10], "w");
    /* grads=: whether dO, dQ, dK, dV are part of this dump (tools/check_numpy.py reads only
     * what params.txt lists, so files an older run left in the folder are not taken) */
    if (f) fprintf(f, "B=%d\nH=%d\nH_kv=%d\nN_q=%d\nN_kv=%d\nd=%d\ncausal=%d\nscale=%.9g\ngrads=%d\n%s%s%s",
                   p->B, p->H, p->H_kv, p->N_q, p->N_kv, p->d, p->causal ? 1 : 0, (double)p->scale,
                   in->dO && dQ && dK && dV ? 1 : 0,
                   attn_mask(p) ? "mask=" : "", attn_mask(p) ? attn_mask(p)->spec : "", attn_mask(p) ? "\n" : "");
    if (f && ferror(f)) err = -1;
    if (!f || fclose(f) != 0 || err) { remove_partial_dump(); failures++; return -1; }
    cur.live = 0;          /* complete: kept, and its folders with it */
    cur.made.n = 0;
    return 0;
}
