#include "dump.h"
#include "csv.h"
#include "npy.h"
#include <stdio.h>

static int dump_one(const char *dir, const char *name, const float *x, size_t b, size_t h,
                    size_t n, size_t d, int ndim)
{
    if (!x) return 0;
    char path[1200];
    size_t shape[4] = {b, h, n, d};
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    return npy_write_f32(path, x, shape, ndim);
}

int attn_dump(const char *dir, const attn_inputs_t *in, const float *O, const float *L,
              const float *dQ, const float *dK, const float *dV)
{
    const attn_problem_t *p = &in->p;
    if (mkdir_p(dir) != 0) return -1;
    int err = 0;
    err |= dump_one(dir, "Q", in->q, p->B, p->H, p->N_q, p->d, 4);
    err |= dump_one(dir, "K", in->k, p->B, p->H_kv, p->N_kv, p->d, 4);
    err |= dump_one(dir, "V", in->v, p->B, p->H_kv, p->N_kv, p->d, 4);
    err |= dump_one(dir, "dO", in->dO, p->B, p->H, p->N_q, p->d, 4);
    err |= dump_one(dir, "O", O, p->B, p->H, p->N_q, p->d, 4);
    err |= dump_one(dir, "L", L, p->B, p->H, p->N_q, 1, 3);
    err |= dump_one(dir, "dQ", dQ, p->B, p->H, p->N_q, p->d, 4);
    err |= dump_one(dir, "dK", dK, p->B, p->H_kv, p->N_kv, p->d, 4);
    err |= dump_one(dir, "dV", dV, p->B, p->H_kv, p->N_kv, p->d, 4);
    char path[1200];
    snprintf(path, sizeof path, "%s/params.txt", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "B=%d\nH=%d\nH_kv=%d\nN_q=%d\nN_kv=%d\nd=%d\ncausal=%d\nscale=%.9g\n",
            p->B, p->H, p->H_kv, p->N_q, p->N_kv, p->d, p->causal ? 1 : 0, (double)p->scale);
    return (fclose(f) == 0 && !err) ? 0 : -1;
}
