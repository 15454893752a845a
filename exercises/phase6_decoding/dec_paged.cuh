/* dec_paged.cuh - variant paged: split-pack reading K and V through the block table (a pool
 * of pages, PagedAttention's cache); the command that runs it: build/phase6 --kernel paged
 * (rows paged-p16, -p64, -p256; ragged-p16 on a ragged batch)
 *
 * What it adds: the page walk. The pool is [n_pages][H_kv][page][d]; key j of sequence b is
 * row j % page of pool page table[b][j / page]. Each thread looks up the pages of its rows of
 * the next tile a tile ahead (fetch_pages), so that the table's latency hides behind a tile's
 * compute; the tile loads (dec_kv.cuh) take the rows' offsets from PagedKv. */
#ifndef PHASE6_DEC_PAGED_CUH
#define PHASE6_DEC_PAGED_CUH
#include "dec_cfg.cuh"
#include "dec_split.cuh"

/* log2 of the page size (a power of two): key j's page is j >> page_shift(a), its row in
 * the page j & (a.page - 1). A divide by a run-time value would be a sequence of integer
 * instructions for every key row a thread copies. */
__device__ __forceinline__ int page_shift(const DecArgs &a) { return __ffs(a.page) - 1; }

#ifdef EX_BUILD
__device__ int dec_page_faults_d;   /* pool pages out of range looked up (an exercise build) */
#endif

/* The pool pages of this thread's rows of the tile at jt (keys at or past kend: page 0). */
template <int D>
__device__ __forceinline__ void fetch_pages(int (&pid)[KvRows<D>::N], const DecArgs &a, int b, int jt, int kend)
{
    constexpr int CH = D / 8;
#pragma unroll
    for (int k = 0; k < KvRows<D>::N; k++) {
        const int j = jt + (int)(threadIdx.x + k * DTHREADS) / CH;
        /* TODO EXERCISE dec.page_lookup_gpu: the pool page of key j of sequence b, through the block table
         * HINT: as dec.page_lookup: a.table holds a.pps pool pages per sequence (row b); the
         * HINT: entry of key j's page (j / a.page, written j >> page_shift(a)) is the pool page.
         * HINT: A key at or past kend is never read (set 0: its table entry may not exist). */
        pid[k] = b * a.pps + (j >> page_shift(a)); (void)kend;
        /* END EXERCISE dec.page_lookup_gpu */
#ifdef EX_BUILD   /* a wrong lookup reads page 0 instead of faulting, and is counted (dec_gpu_page_faults) */
        if (j < kend && (unsigned)pid[k] >= (unsigned)(a.p.B * a.pps)) { atomicAdd(&dec_page_faults_d, 1); pid[k] = 0; }
#endif
    }
}

/* The paged cache, as dec_kv.cuh's cache policies. */
struct PagedKv {
    template <int D>
    static __device__ __forceinline__ void fetch(int (&pid)[KvRows<D>::N], const DecArgs &a, int b, int jt, int kend)
    {
        fetch_pages<D>(pid, a, b, jt, kend);
    }
    /* row j % page of pool page pid, KV head kvh */
    template <int D>
    static __device__ __forceinline__ size_t row(const DecArgs &a, int pid, int, int kvh, int j)
    {
        return ((((size_t)pid * a.p.H_kv + kvh) << page_shift(a)) + (size_t)(j & (a.page - 1))) * D;
    }
    template <int D>
    static __device__ __forceinline__ size_t key_row(const DecArgs &a, int b, int kvh, int j)
    {
        return row<D>(a, a.table[(size_t)b * a.pps + (j >> page_shift(a))], b, kvh, j);
    }
};

/* The paged kernel: the split kernel over the pool (paged, ragged-p16). */
template <int D, int WR>
__global__ void __launch_bounds__(DTHREADS) dec_paged_kernel(const DecArgs a)
{
    dec_split_block<D, WR, PagedKv, OnlineSm>(a);
}

#endif
