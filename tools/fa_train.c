/* fa_train.c - the C API of fa_train.h: checks a request up front, then calls phase 4's
 * forward (fa2_mma_launch, FA2_FULL) and phase 5's backward (bwd_mma_launch, BWD_ATOMIC).
 * Built only into $(BUILD)/libfa_train.so (make train-lib), with nvcc present. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <cuda_runtime_api.h>
#include "fa_train.h"
#include "fa2.h"
#include "bwd.h"

static _Thread_local char err[256];
static int device = -1;                 /* fa_train_init's */
#define MAX_D 256
static signed char config_known[MAX_D + 1], config_rc[MAX_D + 1];
static char config_why[MAX_D + 1][160];

const char *fa_train_error(void) { return err; }

/* Say why (printf-style) and return rc. */
static int fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, sizeof err, fmt, ap);
    va_end(ap);
    return rc;
}

int fa_train_init(int dev)
{
    err[0] = '\0';
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) return fail(1, "no CUDA device: %s", cudaGetErrorString(e));
    if (dev < 0 || dev >= count) return fail(-1, "no CUDA device %d (%d found)", dev, count);
    if (device >= 0 && dev != device)   /* the kernels' visit counters live on the first one */
        return fail(-1, "already bound to device %d, not %d", device, dev);
    if ((e = cudaSetDevice(dev)) != cudaSuccess)
        return fail(1, "cudaSetDevice(%d): %s", dev, cudaGetErrorString(e));
    device = dev;
    return 0;
}

/* The configs of both kernels for d, asked once (each asks the device). */
int fa_train_config(int d)
{
    err[0] = '\0';
    if (device < 0) return fail(-1, "fa_train_init() was not called");
    if (d < 1 || d > MAX_D) return fail(-1, "d = %d: the kernels take 32, 64, 128", d);
    if (!config_known[d]) {
        gpu_kernel_config_t c;
        int rc = fa2_mma_config(d, &c, config_why[d], sizeof config_why[d]);
        if (rc == 0) rc = bwd_mma_config(d, &c, config_why[d], sizeof config_why[d]);
        config_rc[d] = (signed char)rc;
        config_known[d] = 1;
    }
    if (config_rc[d] != 0) snprintf(err, sizeof err, "%s", config_why[d]);
    return config_rc[d];
}

/* The problem of a call, or why it cannot be one. */
static int problem_of(attn_problem_t *p, int B, int H, int H_kv, int N_q, int N_kv, int d, int causal,
                      float scale)
{
    if (B < 1 || H < 1 || H_kv < 1 || N_q < 1 || N_kv < 1)
        return fail(-1, "B=%d H=%d H_kv=%d N_q=%d N_kv=%d: each must be >= 1", B, H, H_kv, N_q, N_kv);
    if (H % H_kv != 0) return fail(-1, "H_kv = %d does not divide H = %d", H_kv, H);
    if ((long)B * H > 65535) return fail(-1, "B H = %ld: the grid's y holds 65535", (long)B * H);
    if (!(isfinite(scale))) return fail(-1, "scale is not finite");
    const int rc = fa_train_config(d);
    if (rc != 0) return rc;
    if (cudaSetDevice(device) != cudaSuccess)   /* the current device is per thread (autograd's too) */
        return fail(1, "cudaSetDevice(%d) failed", device);
    *p = attn_problem(B, H, H_kv, N_q, N_kv, d, causal != 0);
    if (scale > 0) p->scale = scale;
    return 0;
}

/* NULL or not 16-byte aligned: which one. */
static int bad_ptrs(const char *const *names, const void *const *ptrs, int n)
{
    for (int i = 0; i < n; i++)
        if (!ptrs[i] || (uintptr_t)ptrs[i] % 16 != 0)
            return fail(-1, "%s: %s pointer (want a device pointer aligned to 16 bytes)",
                            names[i], ptrs[i] ? "misaligned" : "NULL");
    return 0;
}

int fa_train_forward(int B, int H, int H_kv, int N_q, int N_kv, int d, int causal, float scale,
                     const void *q, const void *k, const void *v, float *o, float *L)
{
    err[0] = '\0';
    attn_problem_t p;
    int rc = problem_of(&p, B, H, H_kv, N_q, N_kv, d, causal, scale);
    if (rc != 0) return rc;
    static const char *const names[] = { "q", "k", "v", "o", "L" };
    const void *const ptrs[] = { q, k, v, o, L };
    if (bad_ptrs(names, ptrs, 5)) return -1;
    fa2_mma_launch(&p, FA2_FULL, q, k, v, o, L);
    return 0;
}

int fa_train_backward(int B, int H, int H_kv, int N_q, int N_kv, int d, int causal, float scale,
                      const void *q, const void *k, const void *v, const float *o, const float *L,
                      const void *dO, float *D, float *dQ, float *dK, float *dV)
{
    err[0] = '\0';
    attn_problem_t p;
    int rc = problem_of(&p, B, H, H_kv, N_q, N_kv, d, causal, scale);
    if (rc != 0) return rc;
    static const char *const names[] = { "q", "k", "v", "o", "L", "dO", "D", "dQ", "dK", "dV" };
    const void *const ptrs[] = { q, k, v, o, L, dO, D, dQ, dK, dV };
    if (bad_ptrs(names, ptrs, 10)) return -1;
    const bwd_gpu_args_t a = { .Q = q, .K = k, .V = v, .dO = dO, .O = o, .L = L,
                               .D = D, .dQ = dQ, .dK = dK, .dV = dV };
    bwd_mma_launch(&p, BWD_ATOMIC, &a);
    return 0;
}
