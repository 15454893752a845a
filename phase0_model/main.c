/* main.c - build/phase0: the compute model of attention (chapter 0, docs/00_model.md).
 *
 *   build/phase0 [--B b] [--H h] [--Hkv h] [--N n] [--Nkv n] [--d d] [--causal]
 *                [--csv results/phase0/phase0.csv] [--dump DIR] [--quiet]
 *
 * Prints, in order: the memory wall (S and P over N), the HBM traffic of standard
 * attention step by step for the chosen problem, the two worked examples, the roofline,
 * then the self-checks and one verdict line (exit 1 on any FAIL, a CSV not written among
 * them). Writes phase0.csv (the traffic breakdown), memory_wall.csv, roofline.csv and
 * roofline_lines.csv into the folder of --csv (all four probed before any work; the three
 * are not written when --csv is not a regular file or is in /dev, e.g. /dev/null). --dump DIR runs the fp64 oracle forward and backward on the chosen
 * problem and writes Q, K, V, dO, O, L, dQ, dK, dV as .npy for tools/check_numpy.py.
 */
#include "check.h"
#include "cli.h"
#include "cost.h"
#include "csv.h"
#include "dump.h"
#include "gpu.h"
#include "oracle.h"
#include "problem.h"
#include "roofline.h"
#include "selfcheck.h"
#include "table.h"
#include "worked.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DUMP_MAX_FLOPS 4e9    /* the fp64 oracle does ~1 GFLOP/s: keep --dump within ~4 s (the CPU bound) */

/* Each writer returns 0, or -1 when its CSV could not be written (said on stderr). A NULL
 * dir (a --csv that is not a regular file) writes no CSV beside it. */
static int memory_wall(FILE *out, const char *dir, const machine_info_t *mi, int argc, char **argv)
{
    const char *h[] = {">N", ">S, 1 head", ">S+P, 1 head", ">S, B=32 H=8", ">S+P, B=32 H=8",
                       ">S+P fp32, B=32 H=8", ">fp16 S+P fits in 80 GB?"};
    char path[OUT_PATH_MAX], c[6][32];
    table_t t;
    int wall16 = 0, wall32 = 0;   /* the first N whose S + P (B=32 H=8) passes 80 GB */
    table_init(&t, 7, h);
    FILE *f = NULL;
    int rc = 0;
    if (dir) {
        path_join(path, dir, "memory_wall.csv");   /* fits: cli_parse kept room (path.h) */
        f = csv_open(path, "phase0", mi, argc, argv,
                     "N,s_1head_fp16,sp_1head_fp16,s_b32h8_fp16,sp_b32h8_fp16,sp_b32h8_fp32");
        if (!f) rc = -1;
    }
    for (int N = 256; N <= 131072; N *= 2) {
        attn_problem_t one = attn_problem(1, 1, 1, N, N, 64, false);
        attn_problem_t big = attn_problem(32, 8, 8, N, N, 64, false);
        double s1 = std_attn_s_bytes(&one, 2), sb = std_attn_s_bytes(&big, 2);
        const char *cells[7] = { fmt_cell(c[0], "%d", N), fmt_bytes(s1, c[1]), fmt_bytes(2 * s1, c[2]),
                                 fmt_bytes(sb, c[3]), fmt_bytes(2 * sb, c[4]), fmt_bytes(4 * sb, c[5]),
                                 2 * sb <= 80e9 ? "yes" : "no" };
        table_add(&t, cells);
        if (!wall16 && 2 * sb > 80e9) wall16 = N;
        if (!wall32 && 4 * sb > 80e9) wall32 = N;
        if (f) fprintf(f, "%d,%.0f,%.0f,%.0f,%.0f,%.0f\n", N, s1, 2 * s1, sb, 2 * sb, 4 * sb);
    }
    if (f && csv_close(f, path, "phase0") != 0) rc = -1;
    if (!out) return rc;
    fprintf(out, "Memory wall: the N x N score matrix S (and P, the same size) that standard\n"
                 "attention writes to HBM, fp16 unless marked; bytes = B * H * N^2 * 2\n");
    table_print(&t, out);
    fprintf(out, "  80 GB = the HBM of an A100/H100 80GB. At B=32 H=8, S and P alone no longer fit\n"
                 "  from N = %d on in fp16 (N = %d in fp32): the memory wall.\n\n", wall16, wall32);
    return rc;
}

static int traffic(FILE *out, const attn_problem_t *p, const char *csv_path,
                    const machine_info_t *mi, int argc, char **argv)
{
    std_traffic_t t = std_attn_traffic(p, 2);
    const char *h[] = {"step", "operation", "HBM access", "shape", ">bytes (fp16)"};
    char sq[64], sk[64], ss[64], b[8][32], pstr[128];
    snprintf(sq, sizeof sq, "[%d,%d,%d,%d]", p->B, p->H, p->N_q, p->d);
    if (p->H == p->H_kv) snprintf(sk, sizeof sk, "[%d,%d,%d,%d]", p->B, p->H_kv, p->N_kv, p->d);
    else snprintf(sk, sizeof sk, "[%d,%d,%d,%d] x%d (GQA)", p->B, p->H_kv, p->N_kv, p->d, p->H / p->H_kv);
    snprintf(ss, sizeof ss, "[%d,%d,%d,%d]", p->B, p->H, p->N_q, p->N_kv);
    struct { const char *step, *op, *acc, *shape; double bytes; } rows[8] = {
        {"1", "S = scale Q K^T", "read Q", sq, t.read_q}, {"1", "", "read K", sk, t.read_k},
        {"1", "", "write S", ss, t.write_s}, {"2", "P = softmax(S)", "read S", ss, t.read_s},
        {"2", "", "write P", ss, t.write_p}, {"3", "O = P V", "read P", ss, t.read_p},
        {"3", "", "read V", sk, t.read_v}, {"3", "", "write O", sq, t.write_o} };
    table_t tab;
    table_init(&tab, 5, h);
    FILE *f = csv_open(csv_path, "phase0", mi, argc, argv, "step,operation,access,bytes_fp16,bytes_fp32");
    int rc = f ? 0 : -1;
    const char *op = "";
    for (int r = 0; r < 8; r++) {
        const char *cells[5] = {rows[r].step, rows[r].op, rows[r].acc, rows[r].shape, fmt_bytes(rows[r].bytes, b[r])};
        table_add(&tab, cells);
        if (rows[r].op[0]) op = rows[r].op;   /* the table shows a step's operation once; every CSV row names it */
        if (f) fprintf(f, "%s,%s,%s,%.0f,%.0f\n", rows[r].step, op, rows[r].acc, rows[r].bytes, 2 * rows[r].bytes);
    }
    if (f) { fprintf(f, "total,standard attention,all,%.0f,%.0f\n", t.total, 2 * t.total);
             fprintf(f, "fused,FlashAttention lower bound,Q K V once + O,%.0f,%.0f\n",
                     fused_attn_min_bytes(p, 2), fused_attn_min_bytes(p, 4));
             if (csv_close(f, csv_path, "phase0") != 0) rc = -1; }
    if (!out) return rc;
    const roofline_gpu_t *ds;
    roofline_datasheet(&ds);
    const roofline_gpu_t *h100 = &ds[1];
    double flops = attn_flops_fwd(p), I = std_attn_intensity(p, 2), If = fused_attn_intensity(p, 2);
    attn_problem_str(p, pstr, sizeof pstr);
    fprintf(out, "HBM traffic of standard attention (three kernels, S and P through HBM), %s:\n", pstr);
    table_print(&tab, out);
    fprintf(out, "  total = B H e (2 N_q d + 2 N_kv d + 4 N_q N_kv) = %s (%.4g bytes)\n",
            fmt_bytes(t.total, b[0]), t.total);
    fprintf(out, "  FLOPs = 4 B H N_q N_kv d%s = %.4g;  intensity = %.1f FLOP/byte\n",
            p->causal && p->N_q == p->N_kv ? " / 2 (causal)" : "", flops, I);
    fprintf(out, "  fused (FlashAttention: Q, K, V read once, O written once): %s, %.1f FLOP/byte\n",
            fmt_bytes(fused_attn_min_bytes(p, 2), b[1]), If);
    fprintf(out, "  on an %s (datasheet): ridge %.0f FLOP/byte, so standard attention is %s-bound:\n"
                 "  bytes / bandwidth = %.3g us vs FLOPs / peak = %.3g us\n\n",
            h100->name, roofline_ridge(h100), I < roofline_ridge(h100) ? "memory" : "compute",
            t.total / h100->bw_bytes_per_s * 1e6, flops / h100->fp16_tensor_flops * 1e6);
    return rc;
}

/* --dump: the oracle on the chosen problem, rounded to fp32 as a phase's outputs are. */
static int dump(const attn_problem_t *p, uint64_t seed, const char *dir)
{
    attn_inputs_t in;
    size_t nq = attn_q_elems(p), nkv = attn_kv_elems(p), nl = attn_l_elems(p);
    if (attn_inputs_make(&in, p, seed, true) != 0) return -1;
    double *d64 = malloc((2 * nq + nl + 2 * nkv) * sizeof *d64);
    float *f32 = malloc((2 * nq + nl + 2 * nkv) * sizeof *f32);
    int rc = -1;
    if (d64 && f32) {
        double *O = d64, *L = O + nq, *dQ = L + nl, *dK = dQ + nq, *dV = dK + nkv;
        oracle_fwd(p, in.q, in.k, in.v, O, L);
        oracle_bwd(p, in.q, in.k, in.v, in.dO, dQ, dK, dV);
        for (size_t i = 0; i < 2 * nq + nl + 2 * nkv; i++) f32[i] = (float)d64[i];
        rc = attn_dump(dir, &in, f32, f32 + nq, f32 + nq + nl, f32 + 2 * nq + nl,
                       f32 + 2 * nq + nl + nkv);
    }
    free(d64); free(f32);
    attn_inputs_free(&in);
    return rc;
}

int main(int argc, char **argv)
{
    static const char *const kernels[] = {"cpu", NULL};
    static const char *const SIBLINGS[] = {"memory_wall.csv", "roofline.csv", "roofline_lines.csv", NULL};
    const cli_spec_t spec = {
        .phase = "phase0",
        .summary = "the compute model: memory wall, HBM traffic, worked examples, roofline, and the fp64 oracle's self-checks",
        .kernels = kernels,
        .defaults = attn_problem(1, 1, 1, 1024, 1024, 64, false),
        .siblings = SIBLINGS,
    };
    cli_opts_t o;
    cli_parse(argc, argv, &spec, &o);
    const attn_problem_t *p = &o.p;
    /* --dump runs on the problem itself: within the CPU bound on rows and elements too */
    if (o.dump_dir && (attn_flops_fwd(p) + attn_flops_bwd(p) > DUMP_MAX_FLOPS || !attn_cpu_fits(p, INFINITY)))
        cli_die("phase0", "--dump runs the fp64 oracle on the CPU: %.3g FLOPs (at most %.0g), %.0f rows and "
                "%.0f + %.0f elements of Q and K (at most %ld and %ld a tensor); pass a smaller --B/--H/--N/--Nkv",
                attn_flops_fwd(p) + attn_flops_bwd(p), DUMP_MAX_FLOPS, (double)p->B * p->H * p->N_q,
                (double)p->B * p->H * p->N_q * p->d, (double)p->B * p->H_kv * p->N_kv * p->d,
                ATTN_CPU_MAX_ROWS, ATTN_CPU_MAX_ELEMS);
    FILE *out = o.quiet ? NULL : stdout;

    /* The machine: the local GPU's bandwidth, when there is one, feeds the roofline. */
    machine_info_t mi;
    char why[256] = "";
    int have_gpu = gpu_available(why, sizeof why);
    if (have_gpu) { gpu_copy_bandwidth_gbps(); gpu_machine_info(&mi); }
    else machine_info_cpu(&mi);

    /* the CSV (cli_parse resolved and probed it, and the three beside it in o.csv_dir) */
    const char *csv_path = o.csv_path, *dir = o.csv_dir;

    if (out) fprintf(out, "phase0 - the compute model of attention (docs/00_model.md)\n\n");
    int bad_csv = memory_wall(out, dir, &mi, argc, argv) != 0;
    bad_csv |= traffic(out, p, csv_path, &mi, argc, argv) != 0;

    worked_tile_t wt;
    worked_stream_t ws;
    if (out) fprintf(out, "Worked examples\n");
    worked_tile(out, &wt);
    worked_stream(out, &ws);
    if (out) fputc('\n', out);

    roofline_set_t rs;
    roofline_gpus(&rs, &mi, have_gpu, why);
    bad_csv |= roofline_report(out, &rs, dir, &mi, argc, argv) != 0;
    if (out && dir) fprintf(out, "\nCSV: %s, %s/memory_wall.csv, %s/roofline.csv, %s/roofline_lines.csv\n\n",
                            csv_path, dir, dir, dir);
    else if (out) fprintf(out, "\nCSV: %s (not a regular file, or in /dev: memory_wall.csv, roofline.csv and "
                          "roofline_lines.csv are not written beside it)\n\n", csv_path);

    if (o.dump_dir) {
        if (dump(p, o.seed, o.dump_dir) != 0) { fprintf(stderr, "phase0: cannot write the dump to %s\n", o.dump_dir); return 1; }
        if (out) fprintf(out, "dump: the fp64 oracle's O, L, dQ, dK, dV (as fp32) and the inputs in %s\n"
                              "      check them with: python3 tools/check_numpy.py %s\n\n", o.dump_dir, o.dump_dir);
    }

    /* Self-checks: every line PASS or FAIL, then the verdict. */
    printf("Self-checks\n");
    int n = 0, nn = 0;
    int fails = sc_unit_checks(stdout, &nn);   /* first: it clears or names p0.softmax_row */
    fails += worked_check(stdout, &wt, &ws, &n);
    fails += sc_oracle_checks(stdout, &nn);
    fails += sc_cost_checks(stdout, &nn);
    n += nn;
    if (bad_csv) { fails++; n++; printf("FAIL csv: a CSV could not be written (%s%s; said above)\n", csv_path,
                                        dir ? " and the three beside it" : ""); }
    if (fails) printf("phase0: FAIL (%d of %d checks failed)\n", fails, n);
    else printf("phase0: PASS (%d checks)\n", n);
    return fails ? 1 : 0;
}
