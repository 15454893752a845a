/* roofline.c - the roofline of chapter 0 (see roofline.h). */
#include "roofline.h"
#include "table.h"
#include <math.h>
#include <string.h>

void roofline_gpus(roofline_set_t *set, const machine_info_t *mi, int have_gpu, const char *why)
{
    memset(set, 0, sizeof *set);
    if (have_gpu) {
        const roofline_gpu_t *known = roofline_known_part(mi->gpu_name);
        if (known && mi->copy_gbps > 0) {
            snprintf(set->local_name, sizeof set->local_name, "%s (this GPU)", mi->gpu_name);
            set->gpu[set->n++] = (roofline_gpu_t){ set->local_name, mi->copy_gbps * 1e9,
                                                   known->fp16_tensor_flops, "measured" };
            snprintf(set->note, sizeof set->note,
                     "this GPU: bandwidth measured (device copy, %.0f GB/s; datasheet %.0f GB/s), "
                     "compute peak from the %s datasheet", mi->copy_gbps,
                     known->bw_bytes_per_s / 1e9, known->name);
        } else if (!known) {
            snprintf(set->note, sizeof set->note, "no compute peak known for '%s' (cost.c's "
                     "table of parts): showing the datasheet rows only", mi->gpu_name);
        } else {
            snprintf(set->note, sizeof set->note, "bandwidth of '%s' not measured: showing "
                     "the datasheet rows only", mi->gpu_name);
        }
    } else {
        snprintf(set->note, sizeof set->note, "no GPU here (%s), so the rows are datasheet figures",
                 why && why[0] ? why : "none found");
    }
    const roofline_gpu_t *rows;
    int n = roofline_datasheet(&rows);
    int local = set->n;
    for (int i = 0; i < n && set->n < ROOFLINE_MAX_GPUS; i++) set->gpu[set->n++] = rows[i];
    set->primary = local ? 0 : set->n - 1;
}

/* A CSV cell may not hold a comma. */
static const char *csv_safe(const char *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s", s);
    for (char *c = buf; *c; c++) if (*c == ',') *c = ';';
    return buf;
}

int roofline_report(FILE *out, const roofline_set_t *set, const char *dir,
                    const machine_info_t *mi, int argc, char **argv)
{
    static const int ds[2] = {64, 128};
    static const char *const kernels[2] = {"standard", "flash"};
    char path[OUT_PATH_MAX], c[12][TABLE_CELL], name[160];
    const char *h[] = {"GPU", "source", ">GB/s", ">TFLOP/s", ">ridge", "kernel", ">d",
                       ">FLOP/B", ">attainable", "bound", ">time >="};
    table_t t;
    table_init(&t, 11, h);

    FILE *f = NULL;   /* no CSVs (dir NULL) beside a --csv that is not a regular file */
    if (dir) {
        path_join(path, dir, "roofline.csv");   /* fits: cli_parse kept room (path.h) */
        f = csv_open(path, "phase0", mi, argc, argv,
                     "gpu,source,bw_gbps,peak_tflops,ridge_flop_per_byte,kernel,d,N,B,H,"
                     "flops,hbm_bytes,intensity,attainable_tflops,bound,min_time_ms,primary,label");
        if (!f) return -1;
    }
    for (int g = 0; g < set->n; g++) {
        const roofline_gpu_t *G = &set->gpu[g];
        for (int k = 0; k < 2; k++)
            for (int di = 0; di < 2; di++) {
                int d = ds[di], B = ROOFLINE_TOKENS / ROOFLINE_N, H = ROOFLINE_HIDDEN / d;
                attn_problem_t p = attn_problem(B, H, H, ROOFLINE_N, ROOFLINE_N, d, false);
                double bytes = k == 0 ? std_attn_traffic(&p, 2).total : fused_attn_min_bytes(&p, 2);
                double flops = attn_flops_fwd(&p), I = flops / bytes;
                double att = roofline_attainable(G, I);
                int mem = I * G->bw_bytes_per_s < G->fp16_tensor_flops;
                double tmin = fmax(flops / G->fp16_tensor_flops, bytes / G->bw_bytes_per_s) * 1e3;
                const char *cells[11] = {
                    G->name, G->source, fmt_cell(c[0], "%.0f", G->bw_bytes_per_s / 1e9),
                    fmt_cell(c[1], "%.1f", G->fp16_tensor_flops / 1e12),
                    fmt_cell(c[2], "%.0f", roofline_ridge(G)), kernels[k], fmt_cell(c[3], "%d", d),
                    fmt_cell(c[4], "%.1f", I), fmt_cell(c[5], "%.1f TFLOP/s", att / 1e12),
                    mem ? "memory" : "compute", fmt_cell(c[6], "%.3f ms", tmin) };
                table_add(&t, cells);
                /* the fused intensity is N/e whatever d is: one label for both points */
                char label[64];
                if (k == 1) snprintf(label, sizeof label, di == 0 ? "flash d=64 and 128" : "");
                else snprintf(label, sizeof label, "standard d=%d", d);
                if (f) fprintf(f, "%s,%s,%.1f,%.2f,%.2f,%s,%d,%d,%d,%d,%.0f,%.0f,%.4f,%.3f,%s,%.5f,%d,%s\n",
                        csv_safe(G->name, name, sizeof name), G->source, G->bw_bytes_per_s / 1e9,
                        G->fp16_tensor_flops / 1e12, roofline_ridge(G), kernels[k], d, ROOFLINE_N, B, H,
                        flops, bytes, I, att / 1e12, mem ? "memory" : "compute", tmin,
                        g == set->primary, label);
            }
    }
    if (f && csv_close(f, path, "phase0") != 0) return -1;

    /* Each GPU's roof, min(peak, I x bandwidth), from 1 to 10^4 FLOP/byte. */
    char cols[1024] = "intensity";
    for (int g = 0; g < set->n; g++) {
        size_t l = strlen(cols);
        snprintf(cols + l, sizeof cols - l, ",%s (%s)", csv_safe(set->gpu[g].name, name, sizeof name),
                 set->gpu[g].source);
    }
    if (dir) {
        path_join(path, dir, "roofline_lines.csv");
        f = csv_open(path, "phase0", mi, argc, argv, cols);
        if (!f) return -1;
    }
    for (int s = 0; f && s <= 400; s++) {
        double I = pow(10.0, s / 100.0);
        fprintf(f, "%.4f", I);
        for (int g = 0; g < set->n; g++) fprintf(f, ",%.4f", roofline_attainable(&set->gpu[g], I) / 1e12);
        fputc('\n', f);
    }
    if (f && csv_close(f, path, "phase0") != 0) return -1;

    if (out) {
        fprintf(out, "Roofline: forward attention, N = %d, fp16, B = %d (16k tokens), H = 2048/d;\n"
                     "  standard = S and P through HBM, flash = Q, K, V read once and O written once\n"
                     "  %s\n", ROOFLINE_N, ROOFLINE_TOKENS / ROOFLINE_N, set->note);
        table_print(&t, out);
        fprintf(out, "  ridge = peak / bandwidth: below it a kernel is memory-bound. 'time >=' is\n"
                     "  max(FLOPs / peak, bytes / bandwidth), the fastest the kernel could run.\n");
    }
    return 0;
}
