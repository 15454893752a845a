/* roofline.h - where standard attention and FlashAttention sit on the roofline.
 *
 * The GPUs: the local one when present (its copy bandwidth measured by common/gpu.h,
 * its compute peak from cost.c's table of known parts), then the A100 and H100 datasheet
 * rows. The points: forward attention at N = 4096, d = 64 and 128, in the setting of the
 * FlashAttention-2 paper's benchmarks (16k tokens per batch, B = 16384 / N = 4, hidden
 * size 2048, H = 2048 / d): standard (S and P through HBM, cost.h) and fused (Q, K, V
 * read once, O written once). Arithmetic intensity depends on N and d only, not on B, H.
 */
#ifndef PHASE0_ROOFLINE_H
#define PHASE0_ROOFLINE_H
#include <stdio.h>
#include "cost.h"
#include "csv.h"

#define ROOFLINE_N 4096
#define ROOFLINE_TOKENS 16384
#define ROOFLINE_HIDDEN 2048
#define ROOFLINE_MAX_GPUS 4

typedef struct {
    roofline_gpu_t gpu[ROOFLINE_MAX_GPUS];
    int n;
    int primary;      /* the row plot.gp labels: the local GPU, else the H100 datasheet row */
    char local_name[160];
    char note[512];   /* why there is no local row, or "" */
} roofline_set_t;

/* mi: the machine (gpu_name "none" without a GPU; copy_gbps measured when there is one);
 * why: gpu_available()'s reason when there is none. */
void roofline_gpus(roofline_set_t *set, const machine_info_t *mi, int have_gpu, const char *why);

/* Print the table of ceilings and points; write roofline.csv (the points) and
 * roofline_lines.csv (each GPU's roof, for plot.gp) into dir (none when dir is NULL).
 * Returns 0, -1 if a CSV could not be written. */
int roofline_report(FILE *out, const roofline_set_t *set, const char *dir,
                    const machine_info_t *mi, int argc, char **argv);
#endif
