/* bwd_wgmma_pipe.cuh - the Hopper backward's protocols as types, for every step
 * (bwd_wgmma_step1.cuh to _step4.cuh): the block's shared memory aligned for the 128-byte
 * swizzle, the ring of mbarrier slots that steps 3-4's producer and consumers share, the
 * named barriers between their MMA warpgroups, and the register budget of their warp
 * specialisation.
 */
#ifndef PHASE5_BWD_WGMMA_PIPE_CUH
#define PHASE5_BWD_WGMMA_PIPE_CUH
#include "wgmma.cuh"

#define WGB_THREADS 128          /* a warpgroup */

/* The 128-byte swizzle acts on address bits 4-9 (common/wgmma.cuh): a swizzled tile starts on
 * a multiple of 1024 bytes. The dynamic block is 16-aligned; a layout asks for SW_ALIGN more
 * bytes and starts at raw + swizzle_pad(raw). (The kernel adds the pad to its own shared
 * array: a pointer this function returned would leave the compiler unsure it points into
 * shared memory, and the code it generates would change.) */
#define SW_ALIGN 1024
#define SW_ROW 128               /* bytes of a swizzled tile row: 64 fp16 */
#define SW_GROUP (8 * SW_ROW)    /* 8 rows: one swizzle atom, the descriptors' stride offset */
#define K16_ROWS_MN (16 * SW_ROW)   /* the next k16 slice of an MN-major operand: 16 rows on */

__device__ __forceinline__ uint32_t swizzle_pad(const void *raw)
{
    return (SW_ALIGN - (smem_u32(raw) & (SW_ALIGN - 1))) & (SW_ALIGN - 1);
}

/* Steps 3-4's named barriers between the two MMA warpgroups (ids 1-15; 0 is __syncthreads) */
enum BwdNamedBarrier : int {
    BWD_BAR_DS_READY = 1,     /* both warpgroups' dS^T rows are in shared memory: dQ reads all 128 keys */
    BWD_BAR_DQ_PARTIAL = 2,   /* + stage: warpgroup 1's partial dQ_i is in that tile stage (d = 64, Br = 64) */
};

/* Steps 3-4's registers: the producer warpgroup gives its registers away (setmaxnreg.dec), the
 * two MMA warpgroups take them (setmaxnreg.inc); together at most the SM's 64 K. */
#define WS_PRODUCER_REGS 24
#define WS_MMA_REGS 240
static_assert(WGB_THREADS * WS_PRODUCER_REGS + 2 * WGB_THREADS * WS_MMA_REGS <= 65536,
              "wgmma-ws bwd: the warpgroups' registers above the SM's 64 K");

#if FA_HAVE_WGMMA
/* A ring of SLOTS shared-memory slots, each with a full and an empty mbarrier (FlashAttention-3's
 * pipeline state). Every side walks the same positions, one advance() a step: position n is
 * slot n % SLOTS in its use n / SLOTS (the times the ring has gone round before it). Use u of
 * a slot waits for the phase of parity u & 1 of its full barrier; the filler's u-th fill first
 * waits for the (u - 1)-th release of the slot (none before the first). */
template <int SLOTS>
struct BwdRing {
    uint64_t *full, *empty;
    int n = 0;
    __device__ __forceinline__ BwdRing(uint64_t *full_bars, uint64_t *empty_bars) : full(full_bars), empty(empty_bars) {}
    __device__ __forceinline__ void advance() { n++; }
    __device__ __forceinline__ int slot() const { return n % SLOTS; }
    __device__ __forceinline__ int use() const { return n / SLOTS; }
    __device__ __forceinline__ uint32_t phase() const { return use() & 1; }
    __device__ __forceinline__ void wait_full() const { mbar_wait(full + slot(), phase()); }
    __device__ __forceinline__ void wait_empty() const   /* the slot's last fill was released */
    {
        if (use() > 0) mbar_wait(empty + slot(), (use() - 1) & 1);
    }
    __device__ __forceinline__ void arrive_full() const { mbar_arrive(full + slot()); }
    __device__ __forceinline__ void release() const { mbar_arrive(empty + slot()); }
};
#endif
#endif
