/* decode_bytes.c - phase 6's closed forms: the HBM bytes of the CPU model and of the GPU
 * kernels (decode.h), FD++'s recomputed rows, the split kernel's blocks and visit counts,
 * and the number of splits (FlashAttention-2's heuristic). Nothing here is metered: these
 * are the formulas the model's meter and the kernels are held to.
 */
#include "decode.h"
#include <math.h>
#include <string.h>
#include "decode_model.h"
#include "fa2.h"
#include "ref.h"

int dec_gpu_block_rows(const attn_problem_t *p, bool pack)
{
    const int G = pack ? p->H / p->H_kv : 1;
    return G * p->N_q > DEC_GPU_ROWS && p->d <= 128 ? DEC_GPU_ROWS_WIDE : DEC_GPU_ROWS;
}

/* The split kernel's blocks of one split for one sequence: its groups (heads, or with
 * packing KV heads) x the row tiles of a group's G x N_q rows. */
static int blocks_per_split(const attn_problem_t *p, bool pack)
{
    const int G = pack ? p->H / p->H_kv : 1, groups = pack ? p->H_kv : p->H, rows = dec_gpu_block_rows(p, pack);
    return groups * ((G * p->N_q + rows - 1) / rows);
}

int dec_gpu_done_ints(const attn_problem_t *p, bool pack) { return p->B * blocks_per_split(p, pack); }

void dec_visits_want(drv_visits_t *v, const attn_problem_t *p, const int *seqlens, int Bc, bool pack, int S)
{
    const unsigned long long blocks = (unsigned long long)blocks_per_split(p, pack);
    drv_visits_init(v, S, "split", "K/V tiles", "the split range", "dec.split_range_gpu");
    for (int b = 0; b < p->B; b++) {
        const int n = seqlens ? seqlens[b] : p->N_kv;
        for (int s = 0; s < S; s++) {
            int k0, k1;
            REF(dec_split_range)(n, Bc, S, s, &k0, &k1);   /* the reference's, never the student's */
            v->want[s] += blocks * ((k1 - k0 + DEC_GPU_TILE_KEYS - 1) / DEC_GPU_TILE_KEYS);
        }
    }
}

/* The keys [0, n) Q block i (rows i0 .. i0 + qr - 1) can see, rounded up to whole Bc
 * blocks (as phase 4's fa2_kv_blocks) and capped at the sequence's n keys. */
int dec_visible_keys(const attn_problem_t *p, int n, int i0, int qr, int Bc)
{
    long last = p->causal ? (long)(i0 + qr - 1) + (n - p->N_q) : (long)n - 1;   /* last row's last key */
    if (last < 0) return 0;
    if (last > n - 1) last = n - 1;
    const long blocks = last / Bc + 1;
    return blocks * Bc < n ? (int)(blocks * Bc) : n;
}

/* The key range split s of Q block i reads: [k0, k1), empty when it sees no key. */
void dec_split_keys(const attn_problem_t *p, int n, int i0, int qr, attn_blocks_t bl, int S, int s,
                    int *k0, int *k1)
{
    dec_split_range(n, bl.Bc, S, s, k0, k1);
    const int kv = dec_visible_keys(p, n, i0, qr, bl.Bc);
    if (*k1 > kv) *k1 = kv;
    if (*k1 < *k0) *k1 = *k0;
}

/* Pages a K/V block of keys [j0, j0 + kr) spans: the block-table entries it reads. */
int dec_pages_spanned(int j0, int kr, int page) { return (j0 + kr - 1) / page - j0 / page + 1; }

dec_traffic_t dec_hbm_traffic(const attn_problem_t *p, const dec_cache_t *c, attn_blocks_t bl, int S)
{
    dec_traffic_t t;
    memset(&t, 0, sizeof t);
    const double d = p->d, H = p->H;
    const int Tr = (p->N_q + bl.Br - 1) / bl.Br;
    const bool paged = c && c->page > 0, ragged = c && c->seqlens_k;
    for (int b = 0; b < p->B; b++) {
        const int n = dec_seqlen(p, c, b);
        for (int i = 0; i < Tr; i++) {
            const int qr = p->N_q - i * bl.Br < bl.Br ? p->N_q - i * bl.Br : bl.Br;
            for (int s = 0; s < S; s++) {
                int k0, k1;
                dec_split_keys(p, n, i * bl.Br, qr, bl, S, s, &k0, &k1);
                if (ragged) t.read_seqlens += H * 4.0;
                if (k1 > k0) {
                    t.read_q += H * 2.0 * qr * d;
                    t.read_kv += H * 4.0 * (k1 - k0) * d;
                    if (paged)
                        for (int j0 = k0; j0 < k1; j0 += bl.Bc)
                            t.read_table += H * 4.0 * dec_pages_spanned(j0, k1 - j0 < bl.Bc ? k1 - j0 : bl.Bc, c->page);
                }
                if (S > 1) t.write_part += H * 4.0 * qr * (d + 1);
            }
            if (S > 1) {
                if (ragged) t.read_seqlens += H * 4.0;
                t.read_part += H * 4.0 * qr * S * (d + 1);
            }
            t.write_o += H * 4.0 * qr * (d + 1);
        }
    }
    t.total = t.read_q + t.read_kv + t.read_table + t.read_seqlens + t.write_part + t.read_part + t.write_o;
    return t;
}

double decode_hbm_bytes(const attn_problem_t *p, const dec_cache_t *c, attn_blocks_t b, int S)
{
    return dec_hbm_traffic(p, c, b, S).total;
}

/* The GPU kernels' bytes: the model's terms per block of the launch (decode.h). A block
 * holds dec_gpu_block_rows rows of a group (one query head, or with packing the G heads of a KV
 * head, N_q rows each) and the keys of its split; it reads Q's rows once and the split's
 * K/V rows once for all of them. The kernels take N_q <= DEC_GPU_MAX_NQ <= Br: one Q block,
 * which sees every key of its sequence (split_keys with i0 = 0, qr = N_q). */
dec_traffic_t dec_hbm_traffic_gpu(const attn_problem_t *p, const dec_cache_t *c, attn_blocks_t bl, int S, bool pack)
{
    dec_traffic_t t;
    memset(&t, 0, sizeof t);
    const double d = p->d;
    const bool paged = c && c->page > 0, ragged = c && c->seqlens_k;
    const int G = pack ? p->H / p->H_kv : 1, groups = pack ? p->H_kv : p->H, R = G * p->N_q;
    const int rows = dec_gpu_block_rows(p, pack);
    for (int b = 0; b < p->B; b++) {
        const int n = dec_seqlen(p, c, b);
        for (int grp = 0; grp < groups; grp++)
            for (int r0 = 0; r0 < R; r0 += rows) {
                const int nrows = R - r0 < rows ? R - r0 : rows;
                for (int s = 0; s < S; s++) {
                    int k0, k1;
                    dec_split_keys(p, n, 0, p->N_q, bl, S, s, &k0, &k1);
                    if (ragged) t.read_seqlens += 4.0;
                    if (k1 > k0) {
                        t.read_q += 2.0 * nrows * d;
                        t.read_kv += 4.0 * (k1 - k0) * d;
                        if (paged)
                            for (int j0 = k0; j0 < k1; j0 += bl.Bc)
                                t.read_table += 4.0 * dec_pages_spanned(j0, k1 - j0 < bl.Bc ? k1 - j0 : bl.Bc, c->page);
                    }
                    if (S > 1) t.write_part += 4.0 * nrows * (d + 1);
                }
                if (S > 1) t.read_part += 4.0 * nrows * S * (d + 1);
                t.write_o += 4.0 * nrows * (d + 1);
            }
    }
    t.total = t.read_q + t.read_kv + t.read_table + t.read_seqlens + t.write_part + t.read_part + t.write_o;
    return t;
}


int dec_num_splits_heuristic(int work, int slots, int n_blocks, int max_splits)
{
    if (work >= 0.8 * slots) return 1;   /* one split already nearly fills the GPU */
    if (max_splits > slots) max_splits = slots;
    if (max_splits > n_blocks) max_splits = n_blocks;
    double best = 0.0;
    for (int pass = 0; pass < 2; pass++)
        for (int S = 1; S <= max_splits; S++) {
            /* a split count that gives every split as many blocks as S - 1 did only adds
             * empty splits */
            if (S > 1 && (n_blocks + S - 1) / S == (n_blocks + S - 2) / (S - 1)) continue;
            const double waves = (double)work * S / slots, eff = waves / ceil(waves);
            if (pass == 0 && eff > best) best = eff;
            if (pass == 1 && eff >= DEC_SPLIT_EFF * best) return S;
        }
    return 1;
}

int dec_num_splits(const attn_problem_t *p, bool pack, int slots)
{
    const int Bc = fa2_mma_blocks(p->d).Bc;
    return dec_num_splits_heuristic(p->B * blocks_per_split(p, pack), slots, (p->N_kv + Bc - 1) / Bc, 128);
}

double dec_recompute_bytes(const attn_problem_t *p, const dec_cache_t *c, attn_blocks_t bl, int bseq, int row)
{
    const int d = p->d, Bc = bl.Bc, n = dec_seqlen(p, c, bseq), kv = dec_visible_keys(p, n, row, 1, Bc);
    double bytes = (c && c->seqlens_k ? 4.0 : 0.0) + (kv > 0 ? 2.0 * d : 0.0) + 4.0 * d * kv + 4.0 * (d + 1);
    if (c && c->page > 0)   /* a table entry at each block's first key and each page boundary inside it */
        for (int j0 = 0; j0 < kv; j0 += Bc) {
            const int kr = kv - j0 < Bc ? kv - j0 : Bc;
            bytes += 4.0 * (1 + dec_pages_spanned(j0, kr, c->page) - 1);
        }
    return bytes;
}

/* The bytes of every row recomputed marks ([B][H][N_q]; NULL: none), and their number. */
static double recomputed_bytes(const attn_problem_t *p, const dec_cache_t *c, attn_blocks_t bl,
                               const uint8_t *recomputed, long *n_recomputed)
{
    double bytes = 0;
    long n = 0;
    for (int b = 0; recomputed && b < p->B; b++)
        for (int h = 0; h < p->H; h++)
            for (int row = 0; row < p->N_q; row++)
                if (recomputed[attn_l_offset(p, b, h) + row]) {
                    n++;
                    bytes += dec_recompute_bytes(p, c, bl, b, row);
                }
    if (n_recomputed) *n_recomputed = n;
    return bytes;
}

double dec_fdpp_hbm_bytes(const attn_problem_t *p, const dec_cache_t *c, attn_blocks_t bl, int S,
                          const uint8_t *recomputed, long *n_recomputed)
{
    return decode_hbm_bytes(p, c, bl, S) + recomputed_bytes(p, c, bl, recomputed, n_recomputed);
}

double dec_fdpp_hbm_bytes_gpu(const attn_problem_t *p, const dec_cache_t *c, attn_blocks_t bl, int S, const uint8_t *flags)
{
    double bytes = dec_hbm_traffic_gpu(p, c, bl, S, true).total;
    if (S == 1) bytes += 2.0 * 4.0 * p->B * p->H * p->N_q * (p->d + 1);   /* u_1, l_1 written and read */
    return bytes + recomputed_bytes(p, c, bl, flags, NULL);
}
