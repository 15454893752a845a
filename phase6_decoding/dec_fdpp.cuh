/* dec_fdpp.cuh - variant fdpp: FlashDecoding++'s unified max (decode.h) in the split kernel;
 * the command that runs it: build/phase6 --kernel fdpp
 *
 * What it adds: split-pack with the softmax policy FdppSm instead of OnlineSm. The weights are
 * e^(x - phi) against one phi fixed before the launch: no running max, so no rescale of O~ in
 * the loop, and the warps' merge is a plain sum. The partials are u_s (unnormalised) and l_s
 * carrying the safe window's flags in its value, written even for S = 1; then the FD++
 * combine (a sum and a divide) flags each row that left the window, and the fallback redoes
 * those rows with the online softmax (dec_fdpp_combine.cuh; decode.cu launches the three). */
#ifndef PHASE6_DEC_FDPP_CUH
#define PHASE6_DEC_FDPP_CUH
#include "dec_cfg.cuh"
#include "dec_split.cuh"

/* FD++'s softmax of rows g, g + 8 against the fixed phi (FlashDecoding++ Sec. 3.1). The
 * weights are 2^(sl2 S - phi2), phi2 = phi log2(e); the safe window's tests in the same
 * base-2 units; win[x]: bit 1 a score reached the bottom, bit 2 one passed the top. */
struct FdppSm {
    static constexpr bool FDPP = true;
    float m_i[2], l_i[2];     /* m carries the window's flags into the merge (there is no max) */
    float phi2, above2, below2;
    int win[2];
    __device__ __forceinline__ void init(const DecArgs &a)
    {
        m_i[0] = m_i[1] = -INFINITY;
        l_i[0] = l_i[1] = 0.0f;
        phi2 = a.phi * DEC_LOG2E;
        above2 = DEC_PHI_ABOVE * DEC_LOG2E;
        below2 = DEC_PHI_BELOW * DEC_LOG2E;
        win[0] = win[1] = 0;
    }
    template <int NT>
    __device__ __forceinline__ void block(float (&sc)[NT][4], float (&alpha)[2], float sl2)
    {
#pragma unroll
        for (int x = 0; x < 2; x++) {
            float row_sum = 0.0f;
#pragma unroll
            for (int nn = 0; nn < NT; nn++)
#pragma unroll
                for (int e = 2 * x; e <= 2 * x + 1; e++) {
                    const float z2 = fmaf(sc[nn][e], sl2, -phi2);   /* (x - phi) log2(e); -inf when masked */
                    win[x] |= (z2 >= -below2 ? 1 : 0) | (z2 > above2 ? 2 : 0);
                    /* l sums the fp16 weight that multiplies V below, not the fp32 one:
                     * with e^(x - phi) far from 1 the two differ by up to 2^-11, and a
                     * row of one key must come out as V itself (m-based weights dodge
                     * this: their largest is e^0 = 1, exact in fp16) */
                    sc[nn][e] = __half2float(__float2half_rn(sfu_ex2(z2)));
                    row_sum += sc[nn][e];
                }
            l_i[x] += row_sum;
            alpha[x] = 1.0f;
        }
    }
    template <int D>
    __device__ __forceinline__ void rescale(float (&)[D / 8][4], const float (&)[2]) {}   /* phi never moves */
    __device__ __forceinline__ void quad_flags(int x)   /* the quad's window flags, into m */
    {
        win[x] |= __shfl_xor_sync(0xffffffffu, win[x], 1);
        win[x] |= __shfl_xor_sync(0xffffffffu, win[x], 2);
        m_i[x] = (float)win[x];
    }
    /* FD++'s merge of the warps: sums; l_s signed by the window (decode.h) */
    template <int WR, int WK>
    static __device__ __forceinline__ void merge_row(const MergeArea &m, int tid, float, const DecArgs &)
    {
        const int w0 = tid / ROWS, rr = tid % ROWS;
        const float *Mm = m.Mm, *Lm = m.Lm;
        float *Wm = m.Wm;
        int w_or = 0;
        float l = 0.0f;
#pragma unroll
        for (int k = 0; k < WK; k++) {
            const int w = w0 + WR * k;
            w_or |= (int)Mm[w * ROWS + rr]; l += Lm[w * ROWS + rr]; Wm[w * ROWS + rr] = 1.0f;
        }
        m.Lrow[tid] = (w_or & 2) ? INFINITY : (w_or & 1) ? l : -l;
    }
    /* a split with no key: l_s = -0 (no key, none reached the window's bottom) */
    static __device__ __forceinline__ float empty_L(bool) { return -0.0f; }
};

/* The FD++ split kernel, on a contiguous cache or a paged one (Kv). */
template <int D, class Kv, int WR>
__global__ void __launch_bounds__(DTHREADS) dec_fdpp_kernel(const DecArgs a)
{
    dec_split_block<D, WR, Kv, FdppSm>(a);
}

#endif
