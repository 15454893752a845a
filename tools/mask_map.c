/* tools/mask_map.c - one FlashMask mask as data for a picture (chapter 4c's figure,
 * phase4_fa2/masks.gp): the mask itself, sampled to a grid of at most 256 x 256 points
 * (common/mask.h's mask_sample), and its tile classes at Br x Bc (mask_tile_class).
 *
 *   build/mask_map SPEC N Br Bc PREFIX
 *     PREFIX.grid   rows of 0/1 (1: visible), the sampled mask, query rows top to bottom
 *     PREFIX.tiles  "r0 r1 c0 c1 class" per tile (class: 0 unmasked, 1 partial, 2 fully
 *                   masked), in the full problem's rows and keys
 *     stdout        "SPEC density fully partial unmasked", one line
 *   build/mask_map --runs SPEC N_q N_kv OUT.npy
 *     OUT.npy       the four vectors as rows of [4][N_kv] float32 (lts, lte, uts, ute; exact
 *                   below 2^24), the mask a peer is given (tools/mask_peers.py): the same
 *                   mask as ours, from the same constructor, not a second implementation
 *     stdout        "SPEC density pairs", one line
 * A spec mask_parse refuses: its sentence on stderr, exit 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mask.h"
#include "npy.h"

static int write_runs(int argc, char **argv)
{
    if (argc != 6) { fprintf(stderr, "usage: mask_map --runs SPEC N_q N_kv OUT.npy\n"); return 2; }
    const int N_q = atoi(argv[3]), N_kv = atoi(argv[4]);
    if (N_q < 1 || N_kv < 1 || N_kv >= (1 << 24)) { fprintf(stderr, "mask_map: N_q and N_kv must be in 1 .. 2^24 - 1\n"); return 2; }
    attn_mask_t m;
    char why[200];
    if (mask_parse(argv[2], N_q, N_kv, &m, why, sizeof why) != 0) { fprintf(stderr, "mask_map: %s\n", why); return 2; }
    const size_t n = (size_t)N_kv, shape[2] = { 4, n };
    float *runs = malloc(4 * n * sizeof *runs);
    if (!runs) { fprintf(stderr, "mask_map: out of memory\n"); return 1; }
    const int32_t *vec[4] = { m.lts, m.lte, m.uts, m.ute };
    for (int k = 0; k < 4; k++)
        for (size_t j = 0; j < n; j++) runs[k * n + j] = (float)vec[k][j];
    const int rc = npy_write_f32(argv[5], runs, shape, 2);
    if (rc != 0) fprintf(stderr, "mask_map: could not write %s\n", argv[5]);
    else printf("%s %.4f %.0f\n", m.spec, mask_pairs(&m) / ((double)N_q * N_kv), mask_pairs(&m));
    free(runs);
    mask_free(&m);
    return rc != 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--runs") == 0) return write_runs(argc, argv);
    if (argc != 6) { fprintf(stderr, "usage: mask_map SPEC N Br Bc PREFIX\n"); return 2; }
    const int N = atoi(argv[2]), Br = atoi(argv[3]), Bc = atoi(argv[4]);
    if (N < 1 || Br < 1 || Bc < 1) { fprintf(stderr, "mask_map: N, Br and Bc must be positive\n"); return 2; }
    attn_mask_t m, g;
    char why[200], path[512];
    if (mask_parse(argv[1], N, N, &m, why, sizeof why) != 0) { fprintf(stderr, "mask_map: %s\n", why); return 2; }
    const int G = N < 256 ? N : 256;
    if (mask_sample(&m, G, G, &g) != 0) { fprintf(stderr, "mask_map: out of memory\n"); return 1; }
    snprintf(path, sizeof path, "%s.grid", argv[5]);
    FILE *f = fopen(path, "w");
    if (!f) { perror(path); return 1; }
    for (int i = 0; i < G; i++)
        for (int j = 0; j < G; j++) fprintf(f, "%d%c", mask_visible(&g, i, j), j + 1 < G ? ' ' : '\n');
    fclose(f);
    mask_blocks_t b;
    if (mask_blocks(&m, Bc, &b) != 0) { fprintf(stderr, "mask_map: out of memory\n"); return 1; }
    snprintf(path, sizeof path, "%s.tiles", argv[5]);
    if (!(f = fopen(path, "w"))) { perror(path); return 1; }
    long count[3] = { 0, 0, 0 };
    for (int r0 = 0; r0 < N; r0 += Br)
        for (int c = 0; c < b.n_blocks; c++) {
            const int r1 = r0 + Br < N ? r0 + Br : N, c0 = c * Bc, c1 = c0 + Bc < N ? c0 + Bc : N;
            const mask_tile_t t = mask_tile_class(&b, r0, r1, c);
            count[t]++;
            fprintf(f, "%d %d %d %d %d\n", r0, r1, c0, c1, (int)t);
        }
    fclose(f);
    printf("%s %.3f %ld %ld %ld\n", m.spec, mask_pairs(&m) / ((double)N * N), count[MASK_TILE_FULLY_MASKED],
           count[MASK_TILE_PARTIAL], count[MASK_TILE_UNMASKED]);
    mask_blocks_free(&b);
    mask_free(&g);
    mask_free(&m);
    return 0;
}
