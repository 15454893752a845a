/* cost.c - the cost model of standard attention (formulas in cost.h and
 * docs/00_model.md) and the roofline's two ceilings per GPU. */
#include "cost.h"
#include <math.h>
#include <stddef.h>
#include <string.h>

std_traffic_t std_attn_traffic(const attn_problem_t *p, int elem_bytes)
{
    /* Per query head: under GQA every query head's kernel reads its K and V again. */
    const double heads = (double)p->B * p->H, e = elem_bytes;
    const double qd = heads * p->N_q * p->d * e;        /* one [N_q][d] tensor, all heads  */
    const double kd = heads * p->N_kv * p->d * e;       /* one [N_kv][d] tensor per q head */
    const double s = heads * p->N_q * (double)p->N_kv * e;
    std_traffic_t t;
    t.read_q = qd;  t.read_k = kd;  t.write_s = s;      /* 1. S = scale Q K^T */
    t.read_s = s;   t.write_p = s;                      /* 2. P = softmax(S)  */
    t.read_p = s;   t.read_v = kd;  t.write_o = qd;     /* 3. O = P V         */
    t.total = t.read_q + t.read_k + t.write_s + t.read_s + t.write_p + t.read_p + t.read_v + t.write_o;
    return t;
}

double std_attn_s_bytes(const attn_problem_t *p, int elem_bytes)
{
    return (double)p->B * p->H * p->N_q * (double)p->N_kv * elem_bytes;
}

double std_attn_intensity(const attn_problem_t *p, int elem_bytes)
{
    return attn_flops_fwd(p) / std_attn_traffic(p, elem_bytes).total;
}

/* Q and O once per query head, K and V once per KV head (under GQA the query heads that
 * share a KV head can share its loads: this is the lower bound). */
double fused_attn_min_bytes(const attn_problem_t *p, int elem_bytes)
{
    const double e = elem_bytes;
    return e * (2.0 * p->B * p->H * p->N_q * p->d + 2.0 * p->B * p->H_kv * p->N_kv * (double)p->d);
}

double fused_attn_intensity(const attn_problem_t *p, int elem_bytes)
{
    return attn_flops_fwd(p) / fused_attn_min_bytes(p, elem_bytes);
}

/* ---- the roofline's ceilings -------------------------------------------------------
 * Dense fp16 tensor-core peak (fp32 accumulate, no 2:4 sparsity: the datasheets print
 * the sparse figure, twice the dense one, with an asterisk) and HBM bandwidth, 1 GB/s =
 * 1e9 B/s. Sources:
 *   A100 SXM4 80GB : 312 TFLOP/s, 2039 GB/s - NVIDIA A100 Tensor Core GPU datasheet
 *                    (2021); 40GB SXM4 1555 GB/s, 80GB PCIe 1935 GB/s, 40GB PCIe 1555 GB/s
 *   H100 SXM5 80GB : 989.4 TFLOP/s (1979 sparse), 3350 GB/s - NVIDIA H100 Tensor Core
 *                    GPU datasheet; H100 PCIe 756 TFLOP/s (1513 sparse), 2000 GB/s;
 *                    H100 NVL 835.5 TFLOP/s (1671 sparse), 3900 GB/s
 *   H200 SXM 141GB : 989.4 TFLOP/s (1979 sparse), 4800 GB/s - NVIDIA H200 datasheet;
 *                    H200 NVL 835.5 TFLOP/s (1671 sparse), 4800 GB/s
 *   L4             : 121 TFLOP/s (242 sparse), 300 GB/s - NVIDIA L4 datasheet
 *   RTX 4090       : 165.2 TFLOP/s (fp16 tensor with fp32 accumulate), 1008 GB/s -
 *                    NVIDIA Ada Lovelace GPU architecture whitepaper, Table 2 */
static const roofline_gpu_t datasheet_rows[] = {
    { "A100 SXM4 80GB", 2039e9, 312e12, "datasheet" },
    { "H100 SXM5 80GB", 3350e9, 989.4e12, "datasheet" },
};

static const struct { const char *pattern; roofline_gpu_t row; } known_parts[] = {
    /* most specific pattern first: "H100 NVL" must win over "H100" */
    { "A100-SXM4-80GB", { "A100 SXM4 80GB", 2039e9, 312e12, "datasheet" } },
    { "A100-SXM4-40GB", { "A100 SXM4 40GB", 1555e9, 312e12, "datasheet" } },
    { "A100 80GB PCIe", { "A100 PCIe 80GB", 1935e9, 312e12, "datasheet" } },
    { "A100-PCIE-40GB", { "A100 PCIe 40GB", 1555e9, 312e12, "datasheet" } },
    { "H100 NVL",       { "H100 NVL",       3900e9, 835.5e12, "datasheet" } },
    { "H100 PCIe",      { "H100 PCIe",      2000e9, 756e12, "datasheet" } },
    { "H100",           { "H100 SXM5 80GB", 3350e9, 989.4e12, "datasheet" } },
    { "H200 NVL",       { "H200 NVL",       4800e9, 835.5e12, "datasheet" } },
    { "H200",           { "H200 SXM",       4800e9, 989.4e12, "datasheet" } },
    { "L4",             { "L4",             300e9,  121e12, "datasheet" } },
    { "RTX 4090",       { "RTX 4090",       1008e9, 165.2e12, "datasheet" } },
};

int roofline_datasheet(const roofline_gpu_t **rows)
{
    *rows = datasheet_rows;
    return (int)(sizeof datasheet_rows / sizeof datasheet_rows[0]);
}

/* The pattern must end at a word boundary: "L4" is not "L40S". */
static int name_has(const char *name, const char *pattern)
{
    size_t n = strlen(pattern);
    for (const char *s = strstr(name, pattern); s; s = strstr(s + 1, pattern)) {
        char after = s[n];
        if (after == '\0' || after == ' ' || after == '-') return 1;
    }
    return 0;
}

const roofline_gpu_t *roofline_known_part(const char *device_name)
{
    if (!device_name) return NULL;
    for (size_t i = 0; i < sizeof known_parts / sizeof known_parts[0]; i++)
        if (name_has(device_name, known_parts[i].pattern)) return &known_parts[i].row;
    return NULL;
}

double roofline_ridge(const roofline_gpu_t *g) { return g->fp16_tensor_flops / g->bw_bytes_per_s; }

double roofline_attainable(const roofline_gpu_t *g, double intensity)
{
    return fmin(g->fp16_tensor_flops, intensity * g->bw_bytes_per_s);
}
