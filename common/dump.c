#include "dump.h"
#include "csv.h"
#include "npy.h"
#include <stdio.h>
#include <stdlib.h>

static int failures;   /* dumps of this run that could not be written */

int attn_dump_failures(void) { return failures; }

static int dump_one(const char *dir, const char *name, const float *x, size_t b, size_t h,
                    size_t n, size_t d, int ndim)
{
    if (!x) return 0;
    char path[OUT_PATH_MAX];
    size_t shape[4] = {b, h, n, d};
    if (path_join(path, dir, name) != 0) return -1;
    return npy_write_f32(path, x, shape, ndim);
}

int attn_dump(const char *dir, const attn_inputs_t *in, const float *O, const float *L,
              const float *dQ, const float *dK, const float *dV)
{
    const attn_problem_t *p = &in->p;
    char path[OUT_PATH_MAX];
    if (mkdir_p(dir) != 0 || path_join(path, dir, "params.txt") != 0) { failures++; return -1; }
    int err = 0;
    err |= dump_one(dir, "Q.npy", in->q, p->B, p->H, p->N_q, p->d, 4);
    err |= dump_one(dir, "K.npy", in->k, p->B, p->H_kv, p->N_kv, p->d, 4);
    err |= dump_one(dir, "V.npy", in->v, p->B, p->H_kv, p->N_kv, p->d, 4);
    err |= dump_one(dir, "dO.npy", in->dO, p->B, p->H, p->N_q, p->d, 4);
    err |= dump_one(dir, "O.npy", O, p->B, p->H, p->N_q, p->d, 4);
    err |= dump_one(dir, "L.npy", L, p->B, p->H, p->N_q, 1, 3);
    err |= dump_one(dir, "dQ.npy", dQ, p->B, p->H, p->N_q, p->d, 4);
    err |= dump_one(dir, "dK.npy", dK, p->B, p->H_kv, p->N_kv, p->d, 4);
    err |= dump_one(dir, "dV.npy", dV, p->B, p->H_kv, p->N_kv, p->d, 4);
    if (attn_mask(p)) {   /* a FlashMask mask: its four vectors, lts, lte, uts, ute, as rows of [4][N_kv] */
        const size_t n = (size_t)p->N_kv;
        float *runs = malloc(4 * n * sizeof *runs);
        const int32_t *vec[4] = { attn_mask(p)->lts, attn_mask(p)->lte, attn_mask(p)->uts, attn_mask(p)->ute };
        if (runs)
            for (int k = 0; k < 4; k++)
                for (size_t j = 0; j < n; j++) runs[k * n + j] = (float)vec[k][j];   /* exact below 2^24 */
        err |= runs ? dump_one(dir, "mask_runs.npy", runs, 4, n, 0, 0, 2) : -1;
        free(runs);
    }
    FILE *f = fopen(path, "w");
    /* grads=: whether dO, dQ, dK, dV are part of this dump (tools/check_numpy.py reads only
     * what params.txt lists, so files an older run left in the folder are not taken) */
    if (f) fprintf(f, "B=%d\nH=%d\nH_kv=%d\nN_q=%d\nN_kv=%d\nd=%d\ncausal=%d\nscale=%.9g\ngrads=%d\n%s%s%s",
                   p->B, p->H, p->H_kv, p->N_q, p->N_kv, p->d, p->causal ? 1 : 0, (double)p->scale,
                   in->dO && dQ && dK && dV ? 1 : 0,
                   attn_mask(p) ? "mask=" : "", attn_mask(p) ? attn_mask(p)->spec : "", attn_mask(p) ? "\n" : "");
    if (!f || fclose(f) != 0 || err) { failures++; return -1; }
    return 0;
}
