/* fa3_fp8.h - FlashAttention-3's FP8 forward as a CPU model: what its numbers do, not its
 * speed (Shah et al., "FlashAttention-3: Fast and Accurate Attention with Asynchrony and
 * Low-precision", arXiv 2407.08608, Sec. 3.3 and Table 3).
 *
 * FP8 E4M3 (common/fp8.h) keeps 3 mantissa bits and a range of 2^-9 .. 448, so a tensor is
 * stored as e4m3(x / s) with a scale s = amax / 448 that maps its largest magnitude to the
 * top of the range; a product of two such tensors is rescaled by s_a s_b. Two choices decide
 * the error:
 *
 *   BLOCK QUANTISATION: one scale per Br x d tile of Q and per Bc x d tile of K and V, instead
 *     of one per tensor, so that one large value costs the precision of its own tile only.
 *   INCOHERENT PROCESSING: Q and K multiplied by M = H diag(s) first, H the normalised d x d
 *     Hadamard matrix and s a random vector of +-1. M is orthogonal, so (QM)(KM)^T = QK^T
 *     exactly in real arithmetic, while an outlier's mass is spread over all d coordinates:
 *     the tile's amax falls and every other value keeps more of its bits. H x costs
 *     O(d log d) (the fast Walsh-Hadamard transform, fp8_hadamard_rows).
 *
 * The model (per head, Q block of Br rows, K/V blocks of Bc keys, FA2's loop):
 *   S = (Q_q K_q^T) s_Q s_K scale            fp32 accumulation of fp8 products
 *   m, l: the online softmax in fp32; P = e^{S - m} in fp32, l += rowsum(P)
 *   O~ = O~ e^{m_old - m} + e4m3(P) V_q s_V   P rounded to fp8 for the P V product (FA3
 *                                             casts its P accumulator to e4m3; P <= 1 needs no scale)
 *   O = O~ / l
 * FA3_FP16 is the same loop with the fp16 inputs as they are and P rounded to fp16: the fp16
 * kernels' own rounding, the baseline of Table 3. */
#ifndef PHASE4_FA3_FP8_H
#define PHASE4_FA3_FP8_H
#include <stdint.h>
#include "problem.h"

typedef enum {
    FA3_FP16,                /* fp16 Q, K, V; P rounded to fp16                           */
    FA3_FP8_TENSOR,          /* one scale per tensor (Q, K, V)                            */
    FA3_FP8_BLOCK,           /* one scale per Br x d tile of Q, Bc x d tile of K and V    */
    FA3_FP8_BLOCK_HADAMARD,  /* block scales after Q M and K M (incoherent processing)    */
    FA3_MODES
} fa3_mode_t;

extern const char *const FA3_MODE_NAME[FA3_MODES];

/* fp8_hadamard_rows, fp8_quantise, fp8_signs: the model's quantisation (common/fp8.h). */

/* The forward of in's problem in one mode, O [B][H][N_q][d] (fp32). seed draws the signs of
 * incoherent processing. Returns 0, or -1 when out of memory or d is not a power of 2 with
 * FA3_FP8_BLOCK_HADAMARD. */
int fa3_fp8_cpu(const attn_inputs_t *in, fa3_mode_t mode, int Br, int Bc, uint64_t seed, float *O);

/* The same, with the sums as an FP8 tensor core forms them (Bc <= 256, d a multiple of 32):
 * k32 steps, each aligning its 32 products and the accumulator to the largest and keeping
 * acc_bits of fraction, cut toward zero. The H100's keeps 13 (FA2_FP8_ACC_BITS), not
 * fp32's 23: DeepSeek-V3's report (arXiv 2412.19437, Sec. 3.3.2) measured "around 14 bits"
 * on the H800. O~ is kept as the kernel keeps it, in the current block's V scale. */
int fa3_fp8_cpu_tc(const attn_inputs_t *in, fa3_mode_t mode, int Br, int Bc, uint64_t seed, int acc_bits, float *O);

/* FlashAttention-4's conditional rescaling (Zadouri, Hoehnerbach, Shah, Liu, Thakkar and Dao,
 * together.ai/blog/flashattention-4, 2025): the running max m, and with it the rescale of O~
 * and l, moves only when a block's max rises past m by more than tau (log2 units; FA4's
 * forward uses 8), so most blocks skip the rescale; P = e^(S - m) then reaches up to 2^tau. An FP8 kernel also
 * shifts P up by 2^p_shift to use e4m3's top binades: P reaches 2^(p_shift + tau), and past
 * e4m3's 448 = 2^8.81 it saturates, silently (flash-attention issues #2577, #2716: cos-sim
 * 0.86). fp8_bound keeps p_shift + tau <= log2(448). */
typedef struct {
    float tau_log2;       /* the rise m may lag behind, in log2 units; 0: rescale at every rise */
    float p_shift_log2;   /* P taken as 2^p_shift e^(S - m) (the 2^p_shift cancels in O~ / l)  */
    int fp8_bound;        /* tau cut to log2(448) - p_shift                                     */
} fa3_cond_t;
typedef struct {
    long blocks;          /* (row, K/V block) steps with a visible key                          */
    long rescaled;        /* of them, those that moved m (and rescaled O~ and l)               */
    long p_saturated;     /* P values at or past 448 before the e4m3 cast (FP8 modes)           */
} fa3_cond_stats_t;

/* The threshold fa3_fp8_cpu_cond uses, natural-log units (tau cut by the bound). */
float fa3_cond_threshold(const fa3_cond_t *c);

/* fa3_fp8_cpu with the conditional softmax of cond, counting its steps into stats (or NULL). */
int fa3_fp8_cpu_cond(const attn_inputs_t *in, fa3_mode_t mode, int Br, int Bc, uint64_t seed, const fa3_cond_t *cond,
                     fa3_cond_stats_t *stats, float *O);

/* FA3's Table 3 inputs: in's N(0,1) draws plus N(0, 100) Bernoulli(0.001) on Q, K and V (an
 * outlier of standard deviation 10 in one element of a thousand), rounded to fp16 again. */
void fa3_add_outliers(attn_inputs_t *in, uint64_t seed);
#endif
