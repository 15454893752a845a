/* bwd_rows.c - phase 5's GPU rows: one problem's buffers, the forward that feeds the
 * backward, and each backward kernel poisoned, run, checked, then timed (bwd.h). The
 * driver (main.c) calls bwd_gpu_rows() once per problem; no algorithm lives here.
 *
 * The checks of a kernel's dQ, dK, dV (docs/05_backward.md, "Checking a backward"):
 *   - against the fp64 oracle: every element when the problem is small enough for
 *     oracle_bwd on the CPU (BWD_FULL_ORACLE_FLOPS), else a spread sample of dQ rows
 *     (bwd_oracle_dq_row: a row's dQ needs only that row);
 *   - the flash-attention test suite's rule: rel L2 < 1e-2 and max abs <= 2x the
 *     standard fp16 backward's (std, run first, on the same elements) + 1e-4;
 *   - against std's gradients on every element (the previous kernel): rel L2 < 1e-2.
 *   - once more on a problem whose scores all lie near 128, past exp's fp32 range
 *     (check_hot): no NaN or infinity, rel L2 < 1e-2.
 * A FAIL names the exercise behind it: dV, then dK, then dQ (EX_MMA_T).
 * No NaN or inf passes (common/check.c). Outputs are poisoned before every checked run.
 *
 * With a FlashMask mask (--mask, chapter 4c) the rows are the kernels with a mask path (mma,
 * wgmma-ws), under the same checks and tolerances: the oracle applies the mask (attn_visible),
 * the visit counters are held to the mask's tile classes (bwd_visits_want), the bytes are
 * the mask-aware formula (bwd_hbm_bytes). std (cuBLAS, bwd_std.cu) has no mask path, so its
 * yardstick and its gradients (vs prev) come from its fp16 passes on the CPU (bwd_std_cpu,
 * or on sampled rows masked_dq_rows below), as where std does not fit. --mask causal also
 * reruns the --causal path: dK and dV must match bit for bit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bwd.h"
#include "bwd_rows.h"
#include "dump.h"
#include "fa2.h"
#include "fp16.h"
#include "par.h"
#ifndef FA_PROBE_BUILD
#define FA_PROBE_BUILD 0   /* Makefile: 1 in a probe's build */
#endif

#if HAVE_CUDA
#define PHASE "phase5"
#define BWD_FULL_ORACLE_FLOPS 4e9   /* backward FLOPs up to which oracle_bwd checks everything */
#define DQ_SAMPLE_ROWS 192          /* else: this many dQ rows, spread (attn_check_rows)       */
#define BWD_REL_L2 1e-2             /* flash-attention's test suite's rel L2 bound          */

typedef enum { K_STD, K_SIMPLE, K_MMA, K_MMA2D, K_WGMMA, K_WGMMA_DQ, K_WGMMA_WS, K_WGMMA_DET, K_TWO_PASS, K_NOSKIP, K_FWD_BWD } kind_t;
static const char *const KIND[] = {"std", "simple", "mma", "mma2d", "wgmma", "wgmma-dq", "wgmma-ws", "wgmma-det", "two-pass", "noskip", "fwd-bwd"};
static const char *const EX_SIMPLE = "bwd.causal_range_gpu, bwd.recompute_P_gpu";
static const char *const EX_MMA = "bwd.causal_range_gpu, bwd.recompute_P_mma, bwd.dS_mma, bwd.dQ_mma";
/* mma2d (bwd_mma2d.cu) and wgmma, wgmma-dq, wgmma-ws, wgmma-det (bwd_wgmma*.cu) hold no
 * exercise: only the causal range they share with the others */
static const char *const EX_MMA2D = "bwd.causal_range_gpu";
static const char *const EX_MMA_MASKED = "bwd.recompute_P_mma, bwd.dS_mma, bwd.dQ_mma";
static bool causal_range_only(kind_t k)
{
    return k == K_MMA2D || k == K_WGMMA || k == K_WGMMA_DQ || k == K_WGMMA_WS || k == K_WGMMA_DET;
}
/* With every element checked, dV, dK, dQ in that order, each naming what the ones before
 * it have not cleared: dV = P^T dO needs only P (and the range of Q blocks); dK needs dS
 * too; dQ its own accumulation as well (D comes from the preprocess, no exercise). */
static const char *const EX_MMA_T[3] = { "bwd.dQ_mma", "bwd.dS_mma", "bwd.causal_range_gpu, bwd.recompute_P_mma" };

typedef struct {
    const attn_inputs_t *in;
    drv_gpu_bufs_t fw;          /* Q, K, V, and the forward's O, L                       */
    bwd_gpu_args_t a;           /* + dO, D, dQ, dK, dV                                   */
    void *sp;                   /* std's S, P, dP, dS (fp16), NULL when they do not fit  */
    double *ref[3];             /* the oracle's dQ, dK, dV (all), or NULL                */
    int nrows, *bhi;            /* else: the sampled dQ rows (b, h, i) ...               */
    double *refq;               /* ... and their oracle dQ                               */
    double yard[3];             /* std's max abs per tensor: the 2x rule's yardstick     */
    float *prev[3];             /* std's gradients (host), or NULL                       */
} bctx_t;

typedef struct { attn_problem_t p; kind_t kind; const bctx_t *c; } launch_t;

static void launch(void *ctx)
{
    const launch_t *x = ctx;
    const bwd_gpu_args_t *a = &x->c->a;
    switch (x->kind) {
    case K_STD:      bwd_std_gpu(&x->p, a, x->c->sp); break;
    case K_SIMPLE:   bwd_simple_launch(&x->p, a); break;
    case K_MMA:      bwd_mma_launch(&x->p, BWD_ATOMIC, a); break;
    case K_MMA2D:    bwd_mma2d_launch(&x->p, a); break;
    case K_WGMMA:    bwd_wgmma_launch(&x->p, false, a); break;
    case K_WGMMA_DQ: bwd_wgmma_launch(&x->p, true, a); break;
    case K_WGMMA_WS: bwd_wgmma_ws_launch(&x->p, false, a); break;
    case K_WGMMA_DET: bwd_wgmma_ws_launch(&x->p, true, a); break;
    case K_TWO_PASS: bwd_mma_launch(&x->p, BWD_TWO_PASS, a); break;
    case K_NOSKIP:   bwd_mma_launch(&x->p, BWD_NOSKIP, a); break;
    case K_FWD_BWD:  /* the training step: phase 4's forward, then this backward */
        REF_GPU(fa2_mma_launch)(&x->p, FA2_FULL, a->Q, a->K, a->V, (float *)a->O, (float *)a->L);
        bwd_mma_launch(&x->p, BWD_ATOMIC, a);
        break;
    }
}

static size_t n_of(const attn_problem_t *p, int t) { return t == 0 ? attn_q_elems(p) : attn_kv_elems(p); }

static bool has_mask_path(kind_t k) { return bwd_kernel_has_mask_path(KIND[k]); }

/* One row's dQ under a FlashMask mask, sampled for a problem too big for oracle_bwd: the fp64
 * oracle's (dq) and the standard fp16 backward's emulated on the CPU (dq16: S, P, dP, dS
 * rounded to fp16 as bwd_std.cu stores them, fp32 sums), the 2x rule's yardstick. The same
 * arithmetic as bwd_oracle_dq_row and bwd_std16_dq_row (bwd_check.c), which walk the keys
 * 0 .. n-1 a causal row sees; a mask's visible keys need not be a prefix (sliding, document,
 * qk_sparse), so these walk the keys attn_visible lets through. */
static void masked_dq_rows(const attn_inputs_t *in, int b, int h, int i, double *dq, float *dq16)
{
    const attn_problem_t *p = &in->p;
    const int d = p->d;
    const float *q = in->q + attn_q_offset(p, b, h) + (size_t)i * d, *g = in->dO + attn_q_offset(p, b, h) + (size_t)i * d;
    const float *K = in->k + attn_kv_offset(p, b, h), *V = in->v + attn_kv_offset(p, b, h);
    int *key = xmalloc(((size_t)p->N_kv + 1) * sizeof(int), PHASE), n = 0;
    for (int j = 0; j < p->N_kv; j++) if (attn_visible(p, i, j)) key[n++] = j;
    for (int k = 0; k < d; k++) { dq[k] = 0.0; dq16[k] = 0.0f; }
    if (n == 0) { free(key); return; }   /* a row that sees no key: no gradient */
    double *s = xmalloc(2 * (size_t)n * sizeof(double), PHASE), *dp = s + n;
    float *s16 = xmalloc(2 * (size_t)n * sizeof(float), PHASE), *dp16 = s16 + n;
    double m = -INFINITY, m16 = -INFINITY;
    for (int x = 0; x < n; x++) {
        const float *kr = K + (size_t)key[x] * d, *vr = V + (size_t)key[x] * d;
        double a = 0.0, c = 0.0;
        float a16 = 0.0f, c16 = 0.0f;
        for (int k = 0; k < d; k++) {
            a += (double)q[k] * kr[k]; c += (double)g[k] * vr[k];
            a16 += q[k] * kr[k]; c16 += g[k] * vr[k];
        }
        s[x] = (double)p->scale * a; dp[x] = c;
        s16[x] = p->scale * a16; dp16[x] = f16_round(c16);   /* 1, 3: S, dP as cuBLAS leaves them */
        if (s[x] > m) m = s[x];
        if (s16[x] > m16) m16 = s16[x];
    }
    double l = 0.0, l16 = 0.0, D = 0.0;
    for (int x = 0; x < n; x++) { l += exp(s[x] - m); l16 += exp(s16[x] - m16); }
    const float L16 = (float)(m16 + log(l16));   /* the forward's L (fp32) */
    float D16 = 0.0f;
    for (int x = 0; x < n; x++) {   /* P; D = rowsum(P dP) (= rowsum(dO O)); 2, 4 in fp16 */
        s[x] = exp(s[x] - m) / l;
        D += s[x] * dp[x];
        s16[x] = f16_round(expf(f16_round(s16[x]) - L16));
        D16 += s16[x] * dp16[x];
    }
    for (int x = 0; x < n; x++) {   /* dS, dQ = scale dS K */
        const float *kr = K + (size_t)key[x] * d;
        const double ds = s[x] * (dp[x] - D);
        const float ds16 = f16_round(s16[x] * (dp16[x] - D16));
        for (int k = 0; k < d; k++) {
            dq[k] += (double)p->scale * ds * kr[k];
            dq16[k] += p->scale * ds16 * kr[k];
        }
    }
    free(s); free(s16); free(key);
}

/* One sampled dQ row k of the large-problem check, for par_for: the oracle's row into refq
 * (with a mask, masked_dq_rows: and the max abs of std's fp16 passes on it into worst[k]). */
typedef struct { const attn_inputs_t *in; const bctx_t *c; bool masked; double *worst; } dq_rows_job_t;
static void dq_rows_one(int k, void *ctx)
{
    const dq_rows_job_t *job = ctx;
    const bctx_t *c = job->c;
    const int d = job->in->p.d, b = c->bhi[3 * k], h = c->bhi[3 * k + 1], i = c->bhi[3 * k + 2];
    double *ref = c->refq + (size_t)k * d;
    if (!job->masked) { bwd_oracle_dq_row(job->in, b, h, i, ref); return; }
    float *dq = xmalloc((size_t)d * sizeof(float), PHASE);
    masked_dq_rows(job->in, b, h, i, ref, dq);
    double w = 0;
    for (int e = 0; e < d; e++) w = fmax(w, fabs(dq[e] - ref[e]));
    job->worst[k] = w;
    free(dq);
}

static void fetch(const bctx_t *c, float *g[3])
{
    const float *src[3] = { c->a.dQ, c->a.dK, c->a.dV };
    for (int t = 0; t < 3; t++) gpu_download(g[t], src[t], n_of(&c->in->p, t) * sizeof(float));
}

/* dQ, dK, dV of one run against the oracle and std's; the row keeps the largest errors. */
static void check(drv_row_t *r, bctx_t *c, float *const g[3], kind_t kind, const char *ex)
{
    static const char *const NAME[3] = {"dQ", "dK", "dV"};
    const attn_problem_t *p = &c->in->p;
    double ma = 0, rl = 0;
    int compared = 0;
    for (int t = 2; t >= 0; t--) {   /* dV first: see EX_MMA_T */
        const char *ext = ex == EX_MMA && c->ref[0] ? EX_MMA_T[t] : ex;
        /* std is the yardstick: held to the fp16 pipeline's rel L2 (its max abs is what the
         * others are measured by); the flash kernels to the 2x rule */
        tol_t tol = { TOL_FP16_REL_L2, 0.05, false };
        if (kind != K_STD) {   /* the yardstick is always there: std's, or its emulation (below) */
            tol.rel_l2 = BWD_REL_L2;
            tol.max_abs = 2.0 * c->yard[t] + TOL_ABS_SLACK;
        }
        if (c->ref[0]) {
            drv_compare(r, "vs the fp64 oracle_bwd", NAME[t], g[t], c->ref[t], n_of(p, t), p->d, tol, true, ext);
        } else if (t == 0) {   /* the sampled dQ rows */
            float *rowsv = xmalloc((size_t)c->nrows * p->d * sizeof(float), PHASE);
            for (int k = 0; k < c->nrows; k++)
                memcpy(rowsv + (size_t)k * p->d, g[0] + attn_q_offset(p, c->bhi[3 * k], c->bhi[3 * k + 1]) +
                       (size_t)c->bhi[3 * k + 2] * p->d, p->d * sizeof(float));
            drv_compare(r, "vs the fp64 oracle (sampled dQ rows)", "dQ", rowsv, c->refq, (size_t)c->nrows * p->d,
                        p->d, tol, true, ex);
            free(rowsv);
        } else continue;
        if (kind == K_STD) c->yard[t] = r->max_abs;
        ma = fmax(ma, r->max_abs); rl = fmax(rl, r->rel_l2);
        compared++;
    }
    if (compared) { r->max_abs = ma; r->rel_l2 = rl; }
    r->rows_checked = c->ref[0] ? (int)attn_l_elems(p) : c->nrows;
    if (kind != K_STD && c->prev[0]) {
        static const char *const PREV[3] = {"std's dQ", "std's dK", "std's dV"};
        for (int t = 0; t < 3; t++) {
            /* a gradient the oracle says is exactly 0 (one key a row: dS = P (dP - D) = 0)
             * has no relative error (check.c's rule): the max abs above judged it, and two
             * kernels' rounding noise around 0 is no measure of either */
            bool zero = c->ref[0] != NULL;
            for (size_t e = 0; zero && e < n_of(p, t); e++) zero = c->ref[t][e] == 0.0;
            if (!zero) drv_compare_prev(r, PREV[t], g[t], c->prev[t], n_of(p, t), BWD_REL_L2);
        }
    }
    drv_blame(r, ex);
}

/* One kernel: its blocks and bytes, the checked run, the timing. */
static drv_row_t run_kernel(bctx_t *c, kind_t kind, const char *sweep, int iters, size_t *rerun_diff,
                            const char *dump_dir)
{
    const attn_problem_t *p = &c->in->p;
    drv_row_t r = drv_row(KIND[kind], "gpu", sweep, p);
    r.flops = attn_flops_bwd(p);
    r.hbm_std = bwd_std_bytes(p, 2);
    r.sp_bytes = 4.0 * attn_l_elems(p);   /* D: the flash kernels' only extra memory */
    launch_t x = { *p, kind, c };
    const char *ex = kind == K_SIMPLE ? EX_SIMPLE : kind == K_STD ? NULL
                   : causal_range_only(kind) ? EX_MMA2D : EX_MMA;
    if (attn_mask(p))   /* the mask path has no causal range: mma's step exercises alone, wgmma-ws none */
        ex = kind == K_MMA ? EX_MMA_MASKED : NULL;
    gpu_kernel_config_t cfg;
    char why[200];
    if (kind == K_STD) {
        r.hbm_model = r.hbm_formula = bwd_std_bytes(p, 2);
        r.sp_bytes = bwd_std_sp_bytes(p, 2);
        if (!c->sp) { drv_not_run(&r, "OOM", "S, P, dP, dS (fp16) do not fit in device memory"); return r; }
    } else {
        int rc = kind == K_SIMPLE ? bwd_simple_config(p->d, &cfg, why, sizeof why)
               : kind == K_MMA2D ? bwd_mma2d_config(p->d, &cfg, why, sizeof why)
               : kind == K_WGMMA || kind == K_WGMMA_DQ   /* skipped off sm_90 */
                   ? bwd_wgmma_config(p->d, kind == K_WGMMA_DQ, &cfg, why, sizeof why)
               : kind == K_WGMMA_WS || kind == K_WGMMA_DET ? bwd_wgmma_ws_config(p->d, kind == K_WGMMA_DET, &cfg, why, sizeof why)
               : bwd_mma_config(p->d, &cfg, why, sizeof why);
        if (rc != 0) { drv_not_run(&r, rc < 0 ? "n/a" : "skipped", why); return r; }
        if (kind == K_FWD_BWD && !fa2_mma_supports(p->d)) { drv_not_run(&r, "n/a", "phase 4's fa2-mma is not built for this d"); return r; }
        if (attn_mask(p) && (p->N_q + cfg.blocks.Br - 1) / cfg.blocks.Br > BWD_MASK_MAX_TR) {
            drv_not_run(&r, "n/a", "a mask over more than BWD_MASK_MAX_TR Q blocks (bwd.h): the Q-block list's shared memory");
            return r;
        }
        r.blocks = cfg.blocks;
        attn_problem_t pf = *p;
        if (kind == K_NOSKIP) pf.causal = false;   /* every Q block read: a full mask's bytes */
        r.hbm_model = r.hbm_formula = kind == K_TWO_PASS
            ? bwd_hbm_bytes_two_pass(p, cfg.blocks, (attn_blocks_t){ BWD_DQ_BR, BWD_DQ_BC })
            : bwd_hbm_bytes(&pf, cfg.blocks);
        if (kind == K_FWD_BWD) {
            r.flops = attn_flops_fwd(p) + attn_flops_bwd(p);
            r.hbm_model = r.hbm_formula = NAN;
        }
    }
    float *g[3];
    for (int t = 0; t < 3; t++) g[t] = xmalloc(n_of(p, t) * sizeof(float), PHASE);
    gpu_poison_f32(c->a.dQ, attn_q_elems(p));
    gpu_poison_f32(c->a.dK, attn_kv_elems(p));
    gpu_poison_f32(c->a.dV, attn_kv_elems(p));
    /* a kernel that visits too many Q blocks still gets the right answer (the mask zeroes
     * them): its visit counters catch it (common/driver.h). fwd-bwd's forward counts into
     * the same counters (its Q blocks): its backward is mma's, compared on that row. */
    drv_visits_t vis = { 0 };
    const attn_blocks_t dq = { BWD_DQ_BR, BWD_DQ_BC };
    if (kind != K_STD && kind != K_FWD_BWD) bwd_visits_want(&vis, p, r.blocks, kind != K_NOSKIP, kind == K_TWO_PASS ? &dq : NULL);
    gpu_visits_zero();
    /* the checked run of a row (std only when it is one, not as the yardstick) inside the
     * profiler's range: tools/profile.sh and ncu --profile-from-start off see this launch */
    const bool profile = kind != K_STD || iters > 0;
    if (profile) gpu_profile_range(1);
    launch(&x);
    if (profile) gpu_profile_range(0);
    gpu_sync();
    drv_check_visits(&r, &vis);   /* first: the most precise reason there is */
    drv_visits_free(&vis);
    fetch(c, g);
    check(&r, c, g, kind, ex);
    if (kind == K_TWO_PASS || kind == K_MMA || kind == K_WGMMA_DET) {   /* determinism: a second run, bit for bit */
        float *g2[3];
        for (int t = 0; t < 3; t++) g2[t] = xmalloc(n_of(p, t) * sizeof(float), PHASE);
        launch(&x);
        gpu_sync();
        fetch(c, g2);
        size_t diff = 0;
        for (int t = 0; t < 3; t++)
            for (size_t e = 0; e < n_of(p, t); e++) diff += memcmp(&g[t][e], &g2[t][e], sizeof(float)) != 0;
        if ((kind == K_TWO_PASS || kind == K_WGMMA_DET) && diff)
            drv_fail(&r, "not deterministic: a rerun changed %zu gradient elements", diff);
        if (rerun_diff) *rerun_diff = diff;
        for (int t = 0; t < 3; t++) free(g2[t]);
    }
    if (attn_mask(p) && strcmp(attn_mask(p)->name, "causal") == 0 && drv_passed(&r)) {
        /* the causal mask through the mask path == --causal's path, bit for bit (as phase 4's
         * forward, fa2_rows.c): the same Q blocks in the same order, the same entries zeroed.
         * dK and dV only: each is summed on chip in a fixed order and written once, while
         * dQ's shares are added with atomics (mma) or bulk reduces (wgmma-ws) in whatever
         * order the K/V blocks arrive, so its last bits change from run to run. */
        launch_t xc = x;
        xc.p.mask_id = 0;
        xc.p.causal = true;
        float *gc[3];
        for (int t = 0; t < 3; t++) gc[t] = xmalloc(n_of(p, t) * sizeof(float), PHASE);
        gpu_poison_f32(c->a.dQ, attn_q_elems(p));
        gpu_poison_f32(c->a.dK, attn_kv_elems(p));
        gpu_poison_f32(c->a.dV, attn_kv_elems(p));
        launch(&xc);
        gpu_sync();
        fetch(c, gc);
        size_t diff = 0;
        for (int t = 1; t < 3; t++)
            for (size_t e = 0; e < n_of(p, t); e++) diff += memcmp(&g[t][e], &gc[t][e], sizeof(float)) != 0;
        if (diff) drv_fail(&r, "--mask causal: %zu elements of dK, dV differ from the causal path's (--causal) in some bit", diff);
        for (int t = 0; t < 3; t++) free(gc[t]);
    }
    if (dump_dir) {   /* --dump: the inputs, the forward's O and L, and these gradients */
        float *O = xmalloc(attn_q_elems(p) * sizeof(float), PHASE), *L = xmalloc(attn_l_elems(p) * sizeof(float), PHASE);
        gpu_download(O, c->a.O, attn_q_elems(p) * sizeof(float));
        gpu_download(L, c->a.L, attn_l_elems(p) * sizeof(float));
        if (attn_dump(dump_dir, c->in, O, L, g[0], g[1], g[2]) != 0)
            fprintf(stderr, "%s: could not write the dump to %s\n", PHASE, dump_dir);
        free(O); free(L);
    }
    if (kind == K_STD && drv_passed(&r))
        for (int t = 0; t < 3; t++) { c->prev[t] = g[t]; g[t] = NULL; }   /* the previous kernel */
    /* timed once its check PASSed (a probe's build, Makefile's BWD_PROBE, times its FAILed
     * rows too: wrong by design, only to measure them) */
    if ((drv_passed(&r) || FA_PROBE_BUILD) && iters > 0) r.time_ms = gpu_time_ms(launch, &x, 2, iters);
    for (int t = 0; t < 3; t++) free(g[t]);
    return r;
}

/* One problem's device buffers (inputs, dO, the forward's O and L by phase 4's kernel,
 * D, the gradients, the visits counter). */
static void ctx_open(bctx_t *c, const attn_inputs_t *in)
{
    const attn_problem_t *p = &in->p;
    memset(c, 0, sizeof *c);
    c->in = in;
    for (int t = 0; t < 3; t++) c->yard[t] = NAN;
    /* the forward on the GPU: phase 4's kernel (its simple one for a d mma lacks) */
    c->fw = drv_gpu_alloc(in, DRV_SP_NONE);
    c->a.Q = c->fw.Q; c->a.K = c->fw.K; c->a.V = c->fw.V;
    c->a.O = c->fw.O; c->a.L = c->fw.L;
    void *dO = gpu_malloc(attn_q_elems(p) * 2);
    gpu_upload(dO, in->do_h, attn_q_elems(p) * 2);
    c->a.dO = dO;
    c->a.D = gpu_malloc(attn_l_elems(p) * sizeof(float));
    c->a.dQ = gpu_malloc(attn_q_elems(p) * sizeof(float));
    c->a.dK = gpu_malloc(attn_kv_elems(p) * sizeof(float));
    c->a.dV = gpu_malloc(attn_kv_elems(p) * sizeof(float));
    if (fa2_mma_supports(p->d)) REF_GPU(fa2_mma_launch)(p, FA2_FULL, c->a.Q, c->a.K, c->a.V, c->fw.O, c->fw.L);
    else REF_GPU(fa2_simple_launch)(p, c->a.Q, c->a.K, c->a.V, c->fw.O, c->fw.L);
}

static void ctx_close(bctx_t *c)
{
    for (int t = 0; t < 3; t++) { free(c->ref[t]); free(c->prev[t]); }
    free(c->bhi); free(c->refq);
    if (c->sp) gpu_free(c->sp);
    gpu_free((void *)c->a.dO); gpu_free(c->a.D); gpu_free(c->a.dQ); gpu_free(c->a.dK); gpu_free(c->a.dV);
    drv_gpu_free(&c->fw);
}

/* The flash kernel rows that passed, once more on scores past exp's fp32 range
 * (bwd_hot_inputs: every score near 128, S - L small; N = 200, causal): dQ, dK, dV
 * against the fp64 oracle, no NaN or infinity and rel L2 < 1e-2 (the flash-attention
 * suite's bound, held on every problem). exp(S) / exp(L) gives inf / inf there: a FAIL
 * names the kernel's recompute_P exercise. */
static void check_hot(drv_row_t *rows, int n, int d, uint64_t seed)
{
    attn_inputs_t hin;
    const double smin = bwd_hot_inputs(&hin, d, 200, seed);
    const attn_problem_t *p = &hin.p;
    bctx_t h;
    ctx_open(&h, &hin);
    for (int t = 0; t < 3; t++) h.ref[t] = xmalloc(n_of(p, t) * sizeof(double), PHASE);
    REF(oracle_bwd)(p, hin.q, hin.k, hin.v, hin.dO, h.ref[0], h.ref[1], h.ref[2]);
    float *g[3];
    for (int t = 0; t < 3; t++) g[t] = xmalloc(n_of(p, t) * sizeof(float), PHASE);
    for (int k = 0; k < n; k++) {
        drv_row_t *r = &rows[k];
        kind_t kind = K_STD;
        for (kind_t q = K_SIMPLE; q <= K_NOSKIP; q++) if (strcmp(r->kernel, KIND[q]) == 0) kind = q;
        if (kind == K_STD || !drv_passed(r)) continue;
        if (!(smin > BWD_EXP_MAX)) drv_fail(r, "the check's own problem: a score of %.1f, not past exp's fp32 range", smin);
        launch_t x = { *p, kind, &h };
        gpu_poison_f32(h.a.dQ, attn_q_elems(p));
        gpu_poison_f32(h.a.dK, attn_kv_elems(p));
        gpu_poison_f32(h.a.dV, attn_kv_elems(p));
        launch(&x);
        gpu_sync();
        fetch(&h, g);
        for (int t = 0; t < 3; t++) {
            static const char *const NAME[3] = {"dQ", "dK", "dV"};
            const err_stats_t e = err_compare(g[t], h.ref[t], n_of(p, t), (tol_t){ BWD_REL_L2, INFINITY, false });
            if (e.nan_count || e.inf_mismatch || !(e.rel_l2 < BWD_REL_L2))
                drv_fail(r, "scores near 128 (exp(S) overflows past 88): %s rel L2 %.3g vs the fp64 oracle "
                         "(%zu NaN, %zu inf), bound %.0e", NAME[t], e.rel_l2, e.nan_count, e.inf_mismatch, BWD_REL_L2);
        }
        drv_blame(r, kind == K_SIMPLE ? "bwd.recompute_P_gpu"
                     : causal_range_only(kind) ? EX_MMA2D : "bwd.recompute_P_mma");
    }
    for (int t = 0; t < 3; t++) free(g[t]);
    ctx_close(&h);
    attn_inputs_free(&hin);
}

int bwd_gpu_rows(const attn_inputs_t *in, const cli_opts_t *o, const char *sweep, bool simple_ok,
                 drv_row_t *rows, size_t *rerun_diff)
{
    const attn_problem_t *p = &in->p;
    const bool masked = attn_mask(p) != NULL;
    int n = 0;
    if (masked) {   /* FlashMask: the kernels with a mask path alone (main.c refuses the others) */
        bool any = false;
        for (kind_t k = K_MMA; k <= K_FWD_BWD; k++) any |= has_mask_path(k) && cli_kernel_selected(o, KIND[k]);
        if (!any) return 0;   /* --kernel cpu */
        /* the forward that feeds them: phase 4's fa2-mma mask path, where it has one */
        const attn_blocks_t b4 = fa2_mma_blocks(p->d);
        if (!fa2_mma_supports(p->d) || p->d > FA2_MASK_MAX_D || (p->N_kv + b4.Bc - 1) / b4.Bc > FA2_MASK_MAX_TC) {
            for (kind_t k = K_MMA; k <= K_FWD_BWD; k++)
                if (has_mask_path(k) && cli_kernel_selected(o, KIND[k])) {
                    rows[n] = drv_row(KIND[k], "gpu", sweep, p);
                    drv_not_run(&rows[n++], "n/a", "phase 4's forward (fa2-mma) has no mask path for this d or N_kv (fa2.h)");
                }
            return n;
        }
    }
    bctx_t c;
    ctx_open(&c, in);
    /* std's S, P, dP, dS when they fit with 1 GiB to spare (with a mask std does not run) */
    size_t free_b = 0, total_b = 0;
    const double sp = bwd_std_sp_bytes(p, 2);
    if (!masked && gpu_mem_info(&free_b, &total_b) == 0 && sp + (1u << 30) < (double)free_b) c.sp = gpu_malloc((size_t)sp);
    /* the oracle */
    if (attn_flops_bwd(p) <= BWD_FULL_ORACLE_FLOPS) {
        for (int t = 0; t < 3; t++) c.ref[t] = xmalloc(n_of(p, t) * sizeof(double), PHASE);
        REF(oracle_bwd)(p, in->q, in->k, in->v, in->dO, c.ref[0], c.ref[1], c.ref[2]);
    } else {
        c.bhi = xmalloc(3 * DQ_SAMPLE_ROWS * sizeof(int), PHASE);
        c.nrows = attn_check_rows(p, DQ_SAMPLE_ROWS, c.bhi);
        c.refq = xmalloc((size_t)c.nrows * p->d * sizeof(double), PHASE);
        /* the sampled rows on every core (par.h), each into its own row of refq (and, with a
         * mask, std's fp16 passes on the same row: the yardstick, its max reduced after) */
        double *worst = xmalloc((size_t)c.nrows * sizeof(double), PHASE);
        dq_rows_job_t job = { in, &c, masked, worst };
        par_for(c.nrows, dq_rows_one, &job);
        if (masked) {
            c.yard[0] = 0;
            for (int k = 0; k < c.nrows; k++) c.yard[0] = fmax(c.yard[0], worst[k]);
        }
        free(worst);
    }
    const int its = o->sweep && o->iters > 2 ? 2 : o->iters;   /* simple takes seconds at 16k tokens */
    /* std: the yardstick and the previous kernel, always run; timed and a row when asked */
    const bool want_std = cli_kernel_selected(o, "std") && !masked;
    if (masked && c.ref[0]) {   /* no mask path in bwd_std.cu: its fp16 passes on the CPU, on the GPU forward's L */
        float *L = xmalloc(attn_l_elems(p) * sizeof(float), PHASE), *g[3];
        gpu_download(L, c.a.L, attn_l_elems(p) * sizeof(float));
        for (int t = 0; t < 3; t++) g[t] = xmalloc(n_of(p, t) * sizeof(float), PHASE);
        if (bwd_std_cpu(in, L, 2, g[0], g[1], g[2], NULL) == 0) {
            for (int t = 0; t < 3; t++) {   /* its max abs against the oracle, per tensor; its gradients: vs prev */
                c.yard[t] = err_compare(g[t], c.ref[t], n_of(p, t), (tol_t){ INFINITY, 1.0, false }).max_abs;
                c.prev[t] = g[t];
            }
        } else {
            for (int t = 0; t < 3; t++) free(g[t]);
            rows[n] = drv_row("std", "cpu", sweep, p);   /* the missing yardstick is shown (and FAILs the rows) */
            drv_not_run(&rows[n++], "OOM", "the standard backward's fp16 passes (the 2x rule's yardstick) do not fit in host memory");
        }
        free(L);
    } else if (!masked) {
        rows[n] = run_kernel(&c, K_STD, sweep, want_std ? o->iters : 0, NULL, NULL);
        if (want_std || !drv_passed(&rows[n])) n++;   /* a missing yardstick is always shown */
    }
    if (!masked && isnan(c.yard[0]) && c.refq) {   /* std did not fit: its fp16 passes emulated on the sampled rows */
        float *dq = xmalloc((size_t)p->d * sizeof(float), PHASE);
        double worst = 0;
        for (int k = 0; k < c.nrows; k++) {
            bwd_std16_dq_row(in, c.bhi[3 * k], c.bhi[3 * k + 1], c.bhi[3 * k + 2], dq);
            for (int e = 0; e < p->d; e++) worst = fmax(worst, fabs(dq[e] - c.refq[(size_t)k * p->d + e]));
        }
        c.yard[0] = worst;
        free(dq);
    }
    if (cli_kernel_selected(o, "simple") && simple_ok && !masked) rows[n++] = run_kernel(&c, K_SIMPLE, sweep, its, NULL, NULL);
    for (kind_t k = K_MMA; k <= K_FWD_BWD; k++)   /* --dump: mma's gradients (the sweep dumps nothing) */
        if (cli_kernel_selected(o, KIND[k]) && (!masked || has_mask_path(k)))
            rows[n++] = run_kernel(&c, k, sweep, o->iters, k == K_MMA ? rerun_diff : NULL,
                                   k == K_MMA && !o->sweep ? o->dump_dir : NULL);
    ctx_close(&c);
    if (!o->sweep) check_hot(rows, n, p->d, o->seed);
    return n;
}
#endif
