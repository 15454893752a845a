/* dec_ragged.cuh - variant ragged: a batch of sequences of their own lengths, the split
 * kernel (split-pack, or paged) with a.seqlens; the command that runs it:
 * build/phase6 --kernel ragged (rows ragged and ragged-p16)
 *
 * What it adds: sequence b has seqlens_k[b] keys (0 allowed), not N_kv: its splits cut its
 * own keys (an empty sequence's every split empty: O = 0, L = +inf), and causal rows are
 * bottom-right aligned on its own length (dec_softmax.cuh's row_limits take n). */
#ifndef PHASE6_DEC_RAGGED_CUH
#define PHASE6_DEC_RAGGED_CUH
#include "dec_cfg.cuh"

/* This sequence's keys. */
__device__ __forceinline__ int seq_keys(const DecArgs &a, int b) { return a.seqlens ? a.seqlens[b] : a.p.N_kv; }

/* Does row q (of N_q) of sequence b see any key (causal: bottom-right on its own length)? */
__device__ __forceinline__ bool row_has_keys(const attn_problem_t &p, const int *seqlens, int b, int q, int *n_out)
{
    const int n = seqlens ? seqlens[b] : p.N_kv;
    *n_out = n;
    return n > 0 && (!p.causal || q + (n - p.N_q) >= 0);
}

#endif
