/* test_fp8_quant.c - FlashAttention-3's FP8 pre-pass on the GPU (fp8_quant.cu) against the
 * CPU model's quantisation (common/fp8.c: fp8_hadamard_rows, fp8_quantise), bit for bit: every
 * e4m3 byte of Q, K and V and every tile's scale, with and without incoherent processing,
 * at d = 32, 64, 128 and 256, on FlashAttention-3's Table 3 inputs (fa3_add_outliers: a few
 * large values, so that the tiles' scales differ), with tail tiles and GQA. And V's transposed,
 * permuted copy v8t (fp8_quant.h) against common/fp8.c's fp8_transpose_keys: every byte, its
 * zero padding included, at N_kv = 333, 300, 77, 7, 1 and 256 (no padding), with the bytes
 * just past the buffer untouched; a Bc that v8t cannot take is refused. The outputs are
 * poisoned (0xff bytes: e4m3 NaN; NaN scales) before each run.
 *
 *   build/test_fp8_quant      (make phase4-build builds it; phase4_fa2/tests.sh runs it)
 *
 * Without a usable GPU it prints "skipped: <why>" and exits 0 (the tests report a skip). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"
#include "fa3_fp8.h"
#include "fp8.h"
#include "fp8_quant.h"
#include "gpu.h"

static int failures, checks;

#define GUARD FP8_V8T_BC_MAX   /* bytes past v8t, poisoned: a tile's overrun would reach into them */

/* One tensor: the GPU's bytes and scales against the CPU's, head by head; x8t (V only, NULL:
 * not written): its transposed copy, heads x d x fp8_pad16(rows) bytes and GUARD more. */
static void compare(const char *what, const float *x, int heads, int rows, int d, int tile, bool had, const float *sign,
                    const uint8_t *x8, const float *scale, const uint8_t *x8t)
{
    const size_t per = (size_t)rows * d, tiles = fp8_tiles(rows, tile), per_t = (size_t)d * fp8_pad16(rows);
    float *h = malloc(per * sizeof(float)), *s = malloc(tiles * sizeof(float));
    uint8_t *b = malloc(per), *bt = malloc(per_t);
    if (!h || !s || !b || !bt) { fprintf(stderr, "test_fp8_quant: out of host memory\n"); exit(1); }
    size_t bad = 0, first = 0, bad_s = 0, bad_t = 0, first_t = 0, bad_guard = 0;
    for (int g = 0; g < heads; g++) {
        memcpy(h, x + (size_t)g * per, per * sizeof(float));
        if (had) fp8_hadamard_rows(h, (size_t)rows, d, sign);
        fp8_quantise(h, (size_t)rows, d, tile, 0, s);
        for (size_t i = 0; i < per; i++) b[i] = f32_to_e4m3(h[i]);
        for (size_t i = 0; i < per; i++)
            if (b[i] != x8[(size_t)g * per + i] && bad++ == 0) first = (size_t)g * per + i;
        for (size_t t = 0; t < tiles; t++)
            if (memcmp(&s[t], &scale[(size_t)g * tiles + t], sizeof(float)) != 0) bad_s++;
        if (x8t) {   /* the model's bytes, transposed and permuted by the model */
            fp8_transpose_keys(b, rows, d, bt);
            for (size_t i = 0; i < per_t; i++)
                if (bt[i] != x8t[(size_t)g * per_t + i] && bad_t++ == 0) first_t = (size_t)g * per_t + i;
        }
    }
    for (size_t i = 0; x8t && i < GUARD; i++) bad_guard += x8t[(size_t)heads * per_t + i] != 0xff;
    checks++;
    if (x8t) {
        checks++;
        if (bad_t || bad_guard) {
            failures++;
            printf("FAIL %s, v8t: %zu of %zu bytes differ from the CPU model's, %zu of %d bytes past it written", what, bad_t,
                   per_t * heads, bad_guard, GUARD);
            if (bad_t) {   /* head, row n (V's column), position and the key it holds */
                const size_t pos = first_t % fp8_pad16(rows);
                printf(" (first: head %zu row %zu position %zu, key %d: GPU 0x%02x)", first_t / per_t,
                       first_t % per_t / fp8_pad16(rows), pos, fp8_key_at((int)pos), x8t[first_t]);
            }
            printf("\n");
        } else {
            printf("PASS %s, v8t: %zu bytes (N_kv_pad = %d) equal the CPU model's\n", what, per_t * heads, fp8_pad16(rows));
        }
    }
    if (bad || bad_s) {
        failures++;
        printf("FAIL %s: %zu of %zu bytes and %zu of %zu scales differ from the CPU model's", what, bad, per * heads, bad_s,
               tiles * heads);
        if (bad) printf(" (first at %zu: GPU 0x%02x)", first, x8[first]);
        printf("\n");
    } else {
        printf("PASS %s: %zu bytes, %zu scales equal the CPU model's\n", what, per * heads, tiles * heads);
    }
    free(h); free(s); free(b); free(bt);
}

/* trans: V's transposed copy v8t too. */
static void run(int B, int H, int Hkv, int Nq, int Nkv, int d, int Br, int Bc, bool had, bool trans)
{
    attn_problem_t p = attn_problem(B, H, Hkv, Nq, Nkv, d, false);
    attn_inputs_t in;
    drv_inputs(&in, &p, 7, false, "test_fp8_quant");
    fa3_add_outliers(&in, 11);
    float sign[256];
    fp8_signs(5, d, sign);
    const size_t nq = attn_q_elems(&p), nk = attn_kv_elems(&p);
    const size_t tq = (size_t)B * H * fp8_tiles(Nq, Br), tk = (size_t)B * Hkv * fp8_tiles(Nkv, Bc);
    void *q = gpu_malloc(2 * nq), *k = gpu_malloc(2 * nk), *v = gpu_malloc(2 * nk);
    float *sg = gpu_malloc(sizeof sign);
    gpu_upload(q, in.q_h, 2 * nq); gpu_upload(k, in.k_h, 2 * nk); gpu_upload(v, in.v_h, 2 * nk);
    gpu_upload(sg, sign, sizeof sign);
    const size_t nt = trans ? (size_t)B * Hkv * d * fp8_pad16(Nkv) + GUARD : 0;   /* v8t and its guard */
    fp8_tensors_t o = { .q8 = gpu_malloc(nq), .k8 = gpu_malloc(nk), .v8 = gpu_malloc(nk), .sq = gpu_malloc(4 * tq),
                        .sk = gpu_malloc(4 * tk), .sv = gpu_malloc(4 * tk), .v8t = trans ? gpu_malloc(nt) : NULL };
    const size_t most = nq > nk ? (nq > nt ? nq : nt) : (nk > nt ? nk : nt);
    uint8_t *poison = malloc(most);
    float *nan = malloc(4 * (tq > tk ? tq : tk));
    if (!poison || !nan) { fprintf(stderr, "test_fp8_quant: out of host memory\n"); exit(1); }
    memset(poison, 0xff, most);
    for (size_t i = 0; i < (tq > tk ? tq : tk); i++) nan[i] = NAN;
    gpu_upload(o.q8, poison, nq); gpu_upload(o.k8, poison, nk); gpu_upload(o.v8, poison, nk);
    gpu_upload(o.sq, nan, 4 * tq); gpu_upload(o.sk, nan, 4 * tk); gpu_upload(o.sv, nan, 4 * tk);
    if (trans) gpu_upload(o.v8t, poison, nt);
    if (fp8_quant_gpu(&p, q, k, v, Br, Bc, had, sg, &o) != 0) { printf("FAIL d = %d is not built\n", d); failures++; return; }
    gpu_sync();
    uint8_t *q8 = malloc(nq), *k8 = malloc(nk), *v8 = malloc(nk), *v8t = malloc(nt ? nt : 1);
    float *sq = malloc(4 * tq), *sk = malloc(4 * tk), *sv = malloc(4 * tk);
    if (!q8 || !k8 || !v8 || !v8t || !sq || !sk || !sv) { fprintf(stderr, "test_fp8_quant: out of host memory\n"); exit(1); }
    gpu_download(q8, o.q8, nq); gpu_download(k8, o.k8, nk); gpu_download(v8, o.v8, nk);
    gpu_download(sq, o.sq, 4 * tq); gpu_download(sk, o.sk, 4 * tk); gpu_download(sv, o.sv, 4 * tk);
    if (trans) gpu_download(v8t, o.v8t, nt);
    char what[160];
    const char *m = had ? "block scales + Hadamard" : "block scales";
    snprintf(what, sizeof what, "Q  d=%d B=%d H=%d N_q=%d Br=%d, %s", d, B, H, Nq, Br, m);
    compare(what, in.q, B * H, Nq, d, Br, had, sign, q8, sq, NULL);
    snprintf(what, sizeof what, "K  d=%d B=%d H_kv=%d N_kv=%d Bc=%d, %s", d, B, Hkv, Nkv, Bc, m);
    compare(what, in.k, B * Hkv, Nkv, d, Bc, had, sign, k8, sk, NULL);
    snprintf(what, sizeof what, "V  d=%d B=%d H_kv=%d N_kv=%d Bc=%d, block scales", d, B, Hkv, Nkv, Bc);
    compare(what, in.v, B * Hkv, Nkv, d, Bc, false, sign, v8, sv, trans ? v8t : NULL);
    free(q8); free(k8); free(v8); free(v8t); free(sq); free(sk); free(sv); free(poison); free(nan);
    gpu_free(q); gpu_free(k); gpu_free(v); gpu_free(sg);
    gpu_free(o.q8); gpu_free(o.k8); gpu_free(o.v8); gpu_free(o.sq); gpu_free(o.sk); gpu_free(o.sv);
    if (trans) gpu_free(o.v8t);
    attn_inputs_free(&in);
}

/* v8t with a Bc it cannot take (not whole groups of 32 keys, or more than it stages): -1,
 * and nothing launched (v8 still poisoned). */
static void refused(int Bc)
{
    attn_problem_t p = attn_problem(1, 1, 1, 64, 64, 64, false);
    const size_t n = attn_q_elems(&p);
    void *x = gpu_malloc(2 * n);
    uint8_t *poison = malloc(n), *back = malloc(n);
    if (!poison || !back) { fprintf(stderr, "test_fp8_quant: out of host memory\n"); exit(1); }
    memset(poison, 0xff, n);
    fp8_tensors_t o = { .q8 = gpu_malloc(n), .k8 = gpu_malloc(n), .v8 = gpu_malloc(n), .sq = gpu_malloc(4 * 64),
                        .sk = gpu_malloc(4 * 64), .sv = gpu_malloc(4 * 64), .v8t = gpu_malloc(n) };
    gpu_upload(o.v8, poison, n);
    const int rc = fp8_quant_gpu(&p, x, x, x, 64, Bc, false, NULL, &o);
    gpu_sync();
    gpu_download(back, o.v8, n);
    checks++;
    if (rc == -1 && memcmp(back, poison, n) == 0) {
        printf("PASS v8t with Bc=%d refused (-1), nothing written\n", Bc);
    } else {
        failures++;
        printf("FAIL v8t with Bc=%d: fp8_quant_gpu returned %d%s\n", Bc, rc, memcmp(back, poison, n) ? ", v8 written" : "");
    }
    gpu_free(x); gpu_free(o.q8); gpu_free(o.k8); gpu_free(o.v8); gpu_free(o.sq); gpu_free(o.sk); gpu_free(o.sv); gpu_free(o.v8t);
    free(poison); free(back);
}

int main(void)
{
    char why[256];
    if (!gpu_available(why, sizeof why)) {
        printf("test_fp8_quant: skipped: %s\n", why);
        return 0;
    }
    const int ds[] = {32, 64, 128, 256};
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++)
        for (int had = 0; had <= 1; had++)   /* tail tiles, GQA 2:1; v8t in one of the two */
            run(2, 4, 2, 300, 333, ds[i], 128, ds[i] == 256 ? 64 : 128, had, !had);
    run(1, 2, 2, 1, 7, 128, 128, 128, true, true);   /* one row, one short tile */
    /* v8t's padding: N_kv_pad - N_kv = 3 (77: inside a group's first half), 4 (300: its
     * second half), 15 (1), 0 (256); tiles of 32 to 128 */
    const int tails[][3] = {{77, 64, 64}, {300, 128, 128}, {1, 128, 256}, {256, 128, 128}, {333, 32, 64}, {77, 128, 256}};
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++)
        run(1, 2, 2, 64, tails[i][0], tails[i][2], 64, tails[i][1], false, true);
    refused(48);    /* not whole groups of 32 */
    refused(256);   /* more than a staged tile */
    printf("test_fp8_quant: %d checks, %d failed\n", checks, failures);
    return failures != 0;
}
