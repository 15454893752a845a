#include "problem.h"
#include "fp16.h"
#include "rng.h"
#include "par.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

attn_problem_t attn_problem(int B, int H, int H_kv, int N_q, int N_kv, int d, bool causal)
{
    attn_problem_t p = { B, H, H_kv > 0 ? H_kv : H, N_q, N_kv > 0 ? N_kv : N_q, d, causal,
                         0, d > 0 ? (float)(1.0 / sqrt((double)d)) : 1.0f };
    return p;
}

size_t attn_q_elems(const attn_problem_t *p)  { return (size_t)p->B * p->H * p->N_q * p->d; }
size_t attn_kv_elems(const attn_problem_t *p) { return (size_t)p->B * p->H_kv * p->N_kv * p->d; }
size_t attn_l_elems(const attn_problem_t *p)  { return (size_t)p->B * p->H * p->N_q; }

mask_blocks_t attn_mask_blocks(const attn_problem_t *p, int Bc)
{
    mask_blocks_t mb = { 0 };
    if (attn_mask(p) && mask_blocks(attn_mask(p), Bc, &mb) != 0) { fprintf(stderr, "mask_blocks: out of host memory\n"); exit(1); }
    return mb;
}

int attn_visible_count(const attn_problem_t *p, int i)
{
    if (attn_mask(p)) {
        int n = 0;
        for (int j = 0; j < p->N_kv; j++) n += mask_visible(attn_mask(p), i, j);
        return n;
    }
    if (!p->causal) return p->N_kv;
    long last = (long)i + (p->N_kv - p->N_q);          /* last visible column */
    if (last < 0) return 0;
    return last + 1 < p->N_kv ? (int)(last + 1) : p->N_kv;
}

double attn_flops_fwd(const attn_problem_t *p)
{
    if (attn_mask(p)) return 4.0 * p->B * p->H * p->d * mask_pairs(attn_mask(p));
    double f = 4.0 * p->B * p->H * (double)p->N_q * p->N_kv * p->d;
    return (p->causal && p->N_q == p->N_kv) ? f / 2 : f;
}

double attn_flops_bwd(const attn_problem_t *p) { return 2.5 * attn_flops_fwd(p); }

void attn_problem_str(const attn_problem_t *p, char *buf, size_t len)
{
    snprintf(buf, len, "B=%d H=%d Hkv=%d Nq=%d Nkv=%d d=%d%s%s%s", p->B, p->H, p->H_kv,
             p->N_q, p->N_kv, p->d, p->causal ? " causal" : "", attn_mask(p) ? " mask=" : "", attn_mask(p) ? attn_mask(p)->spec : "");
}

/* The inputs are one stream of N(0,1) draws from the seed, Q's elements first, then K's, V's
 * (and dO's), each rounded to fp16: h holds the bits, f the value the GPU sees, exactly.
 * At N = 32768 that is 2 x 10^8 draws, seconds of log, sqrt and sin/cos on one core, so the
 * stream is cut into chunks of FILL_CHUNK draws that run on every core (par.h): one serial
 * pass steps the generator through the stream (rng_u64 alone, cheap) and keeps its state at
 * each chunk's start. Every pair of draws takes two uniforms (rng_normal's Box-Muller) and a
 * chunk starts at an even draw, so a chunk's generator is where the serial loop's would be:
 * the values are the same as one loop over the stream, bit for bit. */
#define FILL_CHUNK ((size_t)1 << 20)   /* draws a chunk (even) */
typedef struct { uint16_t *h; float *f; size_t n; } fill_seg_t;
typedef struct { const fill_seg_t *seg; int nseg; size_t total; const rng_t *starts; } fill_job_t;

static void fill_chunk(int c, void *ctx)
{
    const fill_job_t *job = ctx;
    rng_t r = job->starts[c];
    size_t i = (size_t)c * FILL_CHUNK, end = i + FILL_CHUNK < job->total ? i + FILL_CHUNK : job->total;
    size_t base = 0;   /* the first draw of segment k */
    for (int k = 0; k < job->nseg && i < end; base += job->seg[k].n, k++)
        for (; i < end && i < base + job->seg[k].n; i++) {
            const size_t e = i - base;
            job->seg[k].h[e] = f32_to_f16((float)rng_normal(&r));
            job->seg[k].f[e] = f16_to_f32(job->seg[k].h[e]);
        }
}

static int fill_fp16_normal(rng_t *r, const fill_seg_t *seg, int nseg)
{
    size_t total = 0;
    for (int k = 0; k < nseg; k++) total += seg[k].n;
    const size_t chunks = (total + FILL_CHUNK - 1) / FILL_CHUNK;
    rng_t *starts = malloc((chunks ? chunks : 1) * sizeof *starts);
    if (!starts) return -1;
    for (size_t c = 0; c < chunks; c++) {   /* the generator at draw c FILL_CHUNK: one u64 a draw */
        starts[c] = *r;
        for (size_t k = 0; k < FILL_CHUNK; k++) rng_u64(r);
    }
    fill_job_t job = { seg, nseg, total, starts };
    par_for((int)chunks, fill_chunk, &job);
    free(starts);
    return 0;
}

int attn_inputs_make(attn_inputs_t *in, const attn_problem_t *p, uint64_t seed, bool with_grad)
{
    memset(in, 0, sizeof *in);
    in->p = *p;
    size_t nq = attn_q_elems(p), nkv = attn_kv_elems(p);
    in->q_h = malloc(nq * 2);  in->q = malloc(nq * 4);
    in->k_h = malloc(nkv * 2); in->k = malloc(nkv * 4);
    in->v_h = malloc(nkv * 2); in->v = malloc(nkv * 4);
    if (with_grad) { in->do_h = malloc(nq * 2); in->dO = malloc(nq * 4); }
    if (!in->q_h || !in->q || !in->k_h || !in->k || !in->v_h || !in->v ||
        (with_grad && (!in->do_h || !in->dO))) {
        attn_inputs_free(in);
        return -1;
    }
    rng_t r;
    rng_seed(&r, seed);
    const fill_seg_t seg[4] = { {in->q_h, in->q, nq}, {in->k_h, in->k, nkv}, {in->v_h, in->v, nkv}, {in->do_h, in->dO, nq} };
    if (fill_fp16_normal(&r, seg, with_grad ? 4 : 3) != 0) {
        attn_inputs_free(in);
        return -1;
    }
    return 0;
}

void attn_inputs_free(attn_inputs_t *in)
{
    free(in->q_h); free(in->k_h); free(in->v_h); free(in->do_h);
    free(in->q);   free(in->k);   free(in->v);   free(in->dO);
    memset(in, 0, sizeof *in);
}

int attn_check_rows(const attn_problem_t *p, int max_rows, int *bhi)
{
    double total = (double)p->B * p->H * p->N_q;
    int count = total < max_rows ? (int)total : max_rows;
    for (int k = 0; k < count; k++) {
        /* evenly spread over [0, total - 1], first and last included */
        double idx = count == 1 ? 0 : floor((double)k * (total - 1) / (count - 1) + 0.5);
        long long flat = (long long)idx;
        bhi[3 * k]     = (int)(flat / ((long long)p->H * p->N_q));
        bhi[3 * k + 1] = (int)(flat / p->N_q % p->H);
        bhi[3 * k + 2] = (int)(flat % p->N_q);
    }
    return count;
}

bool attn_cpu_fits(const attn_problem_t *p, double max_flops)
{
    return attn_flops_fwd(p) <= max_flops && (double)p->B * p->H * p->N_q <= (double)ATTN_CPU_MAX_ROWS &&
           (double)p->B * p->H * p->N_q * p->d <= (double)ATTN_CPU_MAX_ELEMS &&
           (double)p->B * p->H_kv * p->N_kv * p->d <= (double)ATTN_CPU_MAX_ELEMS;
}

attn_problem_t attn_small_like(const attn_problem_t *p, double max_flops)
{
    if (attn_cpu_fits(p, max_flops)) return *p;
    int G = p->H / p->H_kv, Hkv = p->H_kv < 2 ? p->H_kv : 2, big = p->N_q > p->N_kv ? p->N_q : p->N_kv;
    double f = big > 256 ? 256.0 / big : 1.0;
    int Nq = (int)(p->N_q * f), Nkv = (int)(p->N_kv * f);
    /* at most 4 heads x 256 rows x d <= 256: 2^18 elements, far inside every bound */
    attn_problem_t s = attn_problem(1, Hkv * (G < 2 ? G : 2), Hkv, Nq > 0 ? Nq : 1, Nkv > 0 ? Nkv : 1, p->d, p->causal);
    if (attn_mask(p)) {   /* the same mask, sampled to the smaller problem (mask_sample); one at a time */
        static attn_mask_t small;
        mask_free(&small);
        if (mask_sample(attn_mask(p), s.N_q, s.N_kv, &small)) { fprintf(stderr, "attn_small_like: out of host memory\n"); exit(1); }
        s.mask_id = mask_register(&small);
    }
    return s;
}

void attn_small_like_note(const char *phase, const attn_problem_t *p, const attn_problem_t *pc,
                          double max_flops)
{
    if (p->B == pc->B && p->H == pc->H && p->H_kv == pc->H_kv && p->N_q == pc->N_q && p->N_kv == pc->N_kv) return;
    char s[128];
    attn_problem_str(pc, s, sizeof s);
    printf("%s: the CPU rows run %s in place of this problem (%.3g FLOPs, %.0f rows, %.0f + %.0f "
           "elements of Q and K; their bound: %.3g FLOPs, %ld rows, %ld elements a tensor)\n",
           phase, s, attn_flops_fwd(p), (double)p->B * p->H * p->N_q, (double)p->B * p->H * p->N_q * p->d,
           (double)p->B * p->H_kv * p->N_kv * p->d, max_flops, ATTN_CPU_MAX_ROWS, ATTN_CPU_MAX_ELEMS);
}

double attn_host_bytes(const attn_problem_t *p, attn_host_t which)
{
    const double nq = (double)p->B * p->H * p->N_q * p->d, nkv = (double)p->B * p->H_kv * p->N_kv * p->d;
    const double nl = (double)p->B * p->H * p->N_q;
    /* Q, dO, K, V: fp16 + fp32; O, dQ, dK, dV and L back in fp32 */
    const double gpu = (2 * nq + 2 * nkv) * (2 + 4) + (2 * nq + 2 * nkv) * 4 + nl * 4;
    return which == ATTN_HOST_GPU_ROWS ? gpu : 8 * gpu;
}

void *xmalloc(size_t n, const char *who)
{
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "%s: out of host memory\n", who); exit(1); }
    return p;
}

int attn_range_units(attn_range_check_fn check, const attn_blocks_t *bl, int n_bl, char *why, size_t len)
{
    static const int NQ[] = {1, 2, 3, 17, 50, 63, 64, 65, 100, 133, 300};
    static const int NKV[] = {1, 2, 17, 40, 63, 64, 65, 129, 170, 333};
    for (size_t a = 0; a < sizeof NQ / sizeof NQ[0]; a++)
        for (size_t b = 0; b < sizeof NKV / sizeof NKV[0]; b++)
            for (int k = 0; k < n_bl; k++) {
                const attn_problem_t p = attn_problem(1, 1, 1, NQ[a], NKV[b], 16, true);
                char w[160];
                if (check(&p, bl[k], w, sizeof w) != 0) {
                    snprintf(why, len, "unit check, N_q = %d, N_kv = %d, Br x Bc = %d x %d: %s", NQ[a], NKV[b], bl[k].Br,
                             bl[k].Bc, w);
                    return -1;
                }
            }
    return 0;
}
