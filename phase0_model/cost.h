/* cost.h - the cost model of standard attention: FLOPs, the size of S and P, the HBM
 * traffic of the three-kernel pipeline step by step, arithmetic intensity, and the
 * roofline. Every formula here is printed by `make phase0 run` and derived in
 * docs/00_model.md; phase 1's CPU model counts exactly these bytes.
 *
 * Standard attention (FlashAttention paper, Algorithm 0), e = element size in bytes,
 * per query head (so with GQA K and V are read once per query head):
 *   1. S = scale Q K^T : read Q (N_q d e) and K (N_kv d e), write S (N_q N_kv e)
 *   2. P = softmax(S)  : read S (N_q N_kv e),            write P (N_q N_kv e)
 *   3. O = P V         : read P (N_q N_kv e) and V (N_kv d e), write O (N_q d e)
 *   total = B H e (2 N_q d + 2 N_kv d + 4 N_q N_kv)
 */
#ifndef PHASE0_COST_H
#define PHASE0_COST_H
#include <stdint.h>
#include "problem.h"

typedef struct {
    double read_q, read_k, write_s;      /* step 1 */
    double read_s, write_p;              /* step 2 */
    double read_p, read_v, write_o;      /* step 3 */
    double total;
} std_traffic_t;

std_traffic_t std_attn_traffic(const attn_problem_t *p, int elem_bytes);
/* Bytes of one N_q x N_kv score matrix for all B*H heads (S; P is the same size). */
double std_attn_s_bytes(const attn_problem_t *p, int elem_bytes);
/* FLOPs / HBM bytes of the standard pipeline. */
double std_attn_intensity(const attn_problem_t *p, int elem_bytes);
/* The same for a fused kernel that reads Q, K, V once and writes O once (the ideal
 * FlashAttention reaches when K/V stay in cache: the lower bound of its traffic). */
double fused_attn_min_bytes(const attn_problem_t *p, int elem_bytes);
double fused_attn_intensity(const attn_problem_t *p, int elem_bytes);

/* A GPU's two ceilings. */
typedef struct {
    const char *name;
    double bw_bytes_per_s;      /* HBM bandwidth                     */
    double fp16_tensor_flops;   /* dense fp16 tensor-core FLOP/s     */
    const char *source;         /* "datasheet" or "measured"         */
} roofline_gpu_t;

/* Datasheet rows (A100 SXM4 80GB, H100 SXM5 80GB), with the sources cited in cost.c. */
int roofline_datasheet(const roofline_gpu_t **rows);
/* Known parts, for the local GPU's compute peak (its bandwidth is measured): the row
 * whose name pattern occurs in the CUDA device name (e.g. "NVIDIA H100 80GB HBM3"),
 * with its datasheet bandwidth for comparison; NULL for a part not in the table. */
const roofline_gpu_t *roofline_known_part(const char *device_name);
/* The ridge point: the intensity (FLOP/byte) above which a kernel is compute-bound. */
double roofline_ridge(const roofline_gpu_t *g);
/* Attainable FLOP/s at intensity I: min(peak, I * bandwidth). */
double roofline_attainable(const roofline_gpu_t *g, double intensity);
#endif
