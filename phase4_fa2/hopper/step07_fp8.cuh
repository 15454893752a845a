/* step 7, wgmma-fp8: FlashAttention-3's FP8 (Sec. 3.3) on step 8's schedule.
 *                                   build/phase4 --kernel wgmma-fp8 (and wgmma-fp8+q)
 *
 * Step 3 with e4m3 operands: the tensor cores run k32 e4m3 products at twice fp16's rate.
 * The pre-pass (fp8_quant.cu) has left Q M and K M (incoherent processing) and V in e4m3
 * with one scale a tile: Q's of Br = 128 rows (one Q block), K's and V's of Bc = 128 keys
 * (one K/V block). A tile's bytes are its values divided by its scale, so
 *
 *   S_ij  = (Q8_i K8_j^T) sq_i sk_j          the factor folded into softmax_block's sl2
 *   O~_i  = sum_j P~_ij (V8_j sv_j)          kept in units of the current block's sv_j:
 *                                            O~ *= alpha sv_(j-1) / sv_j before P~ V8_j
 *   O_i   = O~_i sv_last / l_i               (finish_rows' o_factor)
 *
 * P~ (fp32, <= 1) is rounded to e4m3 for the product, as FA3 does (no scale: e4m3 keeps
 * 2^-9 .. 1 with 3 bits), while l sums the fp32 P~, as the CPU model fa3_fp8.c does.
 *
 * LAYOUTS. 8-bit wgmma takes K-major operands only. Q and K are K-major as stored (d
 * contiguous). For O = P V the contraction runs over keys, so V is stored transposed: V^T
 * [d][N_kv_pad], keys contiguous (the pre-pass writes it, as it quantises V). A tile row is
 * 128 bytes either way: a d = 128 row of Q or K, or Bc = 128 keys of V^T, one swizzle atom
 * wide:
 *
 *   Q_i (a consumer's 64 rows)   K_j (128 keys)          V^T_j (d rows of 128 keys)
 *   64 x d bytes                 2 x [64 x d bytes]      d / 64 x [64 rows x 128 bytes]
 *   S = Q K^T: A = Q, B = K      (both k = d contiguous) O = P V: A = P (registers), B = V^T
 *
 * P's bytes. The S accumulator gives thread (g, t) of a warp, in a k32 slice of keys, the
 * columns 2t, 2t+1, 8+2t, 9+2t, 16+2t, 17+2t, 24+2t, 25+2t; the e4m3 A fragment wants k =
 * 4t..4t+3 and 16+4t..16+4t+3 (wgmma.cuh). Converting the accumulators four at a time in
 * their own order (p_to_a_e4m3) puts key perm(kappa) at k = kappa:
 *
 *   k (kappa):   0  1  2  3 |  4  5  6  7 | ... | 16 17 18 19 | 20 21 22 23 | ...
 *   key:         0  1  8  9 |  2  3 10 11 | ... | 16 17 24 25 | 18 19 26 27 | ...
 *                thread t = 0  thread t = 1        t = 0          t = 1
 *
 * and the pre-pass stores V^T's keys in that same order (fp8_quant.h), so P~ V needs no
 * shuffle of P: FA3 permutes P's bytes in registers instead, because its V arrives as is. */
#pragma once
#include <type_traits>
#include "step09_fa3.cuh"

#define FP8_BC 128   /* the pre-pass's K/V tile: one scale a K/V block */
/* d = 256 holds O~ in 128 registers a thread beside S's 64: the consumers take 240 (the
 * producer, one thread issuing copies, keeps 24): 128 x 24 + 256 x 240 = 64512 */
#define FP8_PRODUCER_REGS 24
#define FP8_CONSUMER_REGS 240

/* e4m3 products (mma_ops.cuh); block j's S carries sq_i sk_j, O~ is kept in units of the
 * current block's sv_j. FMA_EX2_: of each 16 exponentials, this many by fma_ex2 (the FMA
 * pipe) instead of the SFU. */
template <int D, int BC, int FMA_EX2_>
struct Fp8Ops {
    static constexpr int FMA_EX2 = FMA_EX2_;
    using PA = uint32_t[BC / 32][4];
    float sl2_q;                /* scale log2(e) sq_i */
    const float *sk, *sv;       /* this K/V head's tile scales */
    float sk_j, sv_j, sv_prev;  /* block j's scales; O~'s units, the last block's V scale */
#if FA_HAVE_WGMMA
    __device__ __forceinline__ void issue_s(float (&s)[BC / 64][32], const unsigned char *Qt, const unsigned char *Kj) const
    {
        ::issue_s<D, BC, 1>(s, Qt, Kj);   /* e4m3: one byte a value */
    }
    __device__ __forceinline__ void issue_pv(RowTile<D> &t, const PA &pa, const unsigned char *Vt) const { issue_pv_e4m3<D, BC>(t, pa, Vt); }
    __device__ __forceinline__ void p_to_a(PA &pa, const float (&s)[BC / 64][32]) const { p_to_a_e4m3<BC>(pa, s); }
    __device__ __forceinline__ float first_s_scale() const { return sl2_q * __ldg(sk); }
    __device__ __forceinline__ void load_scales(int j) { sk_j = __ldg(sk + j); sv_j = __ldg(sv + j); }
    __device__ __forceinline__ float s_scale() const { return sl2_q * sk_j; }
    __device__ __forceinline__ float o_ratio()   /* alpha_j sv_(j-1) / sv_j: O~ into block j's units */
    {
        const float r = sv_prev / sv_j;
        sv_prev = sv_j;
        return r;
    }
    __device__ __forceinline__ float o_factor() const { return sv_prev; }   /* O_i = O~_i sv_last / l_i */
#endif
};

/* Turn: Pingpong for step 9's turn on top, one a warpgroup's iteration, so that one
 * warpgroup's exp2 runs under the other's products (at d = 128 the SM's exp2 take as long as
 * its FP8 products); FMA_EX2: Fp8Ops's. Each is a row of its own (steps.h). */
template <int D, class Turn = NoTurns, int FMA_EX2 = 0>
struct Step7 {
    static constexpr int BC = FP8_BC, RING_D = D / 2;   /* an e4m3 row of D is D / 2 fp16 columns wide in bytes */
    static constexpr int PRODUCER_REGS = FP8_PRODUCER_REGS, CONSUMER_REGS = FP8_CONSUMER_REGS;
    using Ring = WsRing<D / 2, BC>;
#if FA_HAVE_WGMMA
    /* step 3's producer with the e4m3 boxes (128 bytes x 64 rows) and V^T */
    static __device__ __forceinline__ void produce(const Ring &ring, const WgArgs &args, const CtaTile &ct, int n_blocks)
    {
        load_q_halves<D / 128, 128>(ring, &args.tq, ct.i0, ct.bh);
        for (int j = 0; j < n_blocks; j++) load_kv_fp8<D, BC>(ring, args, {j}, j, ct.kv_head);
    }
    static __device__ __forceinline__ void consume(const WsContext<Ring> &x)
    {
        const WgArgs &args = x.args;
        const CtaTile &ct = x.ct;
        const attn_problem_t &p = args.p;
        const int Tr = (p.N_q + WS_BR - 1) / WS_BR, Tc = (p.N_kv + BC - 1) / BC;
        Fp8Ops<D, BC, FMA_EX2> ops;
        ops.sl2_q = p.scale * FA_LOG2E * __ldg(args.sq + (size_t)ct.bh * Tr + ct.i);
        ops.sk = args.sk + (size_t)ct.kv_head * Tc;
        ops.sv = args.sv + (size_t)ct.kv_head * Tc;
        ops.sv_prev = __ldg(ops.sv);
        RowTile<D> tile;
        Turn turns(x.me.c, x.n_blocks + 1);
        fa3_order_loop<D, BC>(tile, x.ring, x.me, p, x.n_blocks, ops, turns);
        RegisterEpilogue::finish<D>(tile, x, ops.o_factor());
    }
#endif
};

/* a row of FA2_HOPPER_FP8_ROWS (steps.h): its PINGPONG and FMA_EX2 columns */
template <int D, bool PINGPONG, int FMA_EX2>
using Fp8Row = Step7<D, std::conditional_t<PINGPONG, Pingpong, NoTurns>, FMA_EX2>;
