/* gpu.h - the GPU helpers every CUDA phase uses, callable from C.
 *
 * Implemented in common/gpu.cu when nvcc exists; common/gpu_nocuda.c stands in
 * otherwise, answering "no GPU" so the drivers still run their CPU rows.
 * In .cu files, CUDA_CHECK(call) wraps every runtime call and CUDA_CHECK_LAUNCH() follows
 * every kernel launch: on error they print file:line and the CUDA message and exit(1).
 */
#ifndef COMMON_GPU_H
#define COMMON_GPU_H
#include <stddef.h>
#include "csv.h"
#include "problem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a tiled attention kernel needs to launch for one head dimension (each phase's
 * <kernel>_config() fills it in). */
typedef struct {
    const char *name;       /* the --kernel name                                */
    attn_blocks_t blocks;   /* Br x Bc it uses for this d                       */
    size_t smem_bytes;      /* shared memory per thread block                   */
    int threads;            /* threads per block                                */
} gpu_kernel_config_t;

/* Bracket one kernel run for `ncu --profile-from-start off` (tools/profile.sh):
 * cudaProfilerStart() / Stop(). Nothing without a GPU. */
void gpu_profile_range(int on);

/* Is there a usable CUDA device? 1 yes; 0 no, with the reason in why (e.g. "built
 * without nvcc", "no CUDA device: cudaGetDeviceCount says ..."). Cheap after the first call. */
int gpu_available(char *why, size_t len);

/* Fill mi with the device's name, SMs, clocks, L2, memory, runtime/driver versions
 * (and copy_gbps if gpu_copy_bandwidth_gbps() was called). 0 on success. */
int gpu_machine_info(machine_info_t *mi);

/* Device-to-device copy bandwidth in GB/s (bytes read + bytes written per second),
 * measured once on a buffer much larger than L2 and cached. 0 without a GPU. */
double gpu_copy_bandwidth_gbps(void);

/* The read ceiling in GB/s: a streaming kernel that only reads (16-byte loads, four in
 * flight a thread, every SM busy) a buffer forty times the L2, the best of a few grid
 * sizes, each the median of 10 runs; measured once and cached; 0 without a GPU. A decode
 * kernel reads K and V and writes almost nothing: this, not the copy, is its roof. */
double gpu_read_bandwidth_gbps(void);

/* The most shared memory one thread block may have after opting in
 * (cudaDevAttrMaxSharedMemoryPerBlockOptin): 227 KiB on an H100, 163 KiB on an A100,
 * 99 KiB on an RTX 30xx/40xx or an L4. The environment variable FA_SMEM_LIMIT (bytes)
 * lowers it, to see what a smaller GPU would do. 0 without a GPU. */
size_t gpu_smem_optin_bytes(void);

/* Can a kernel with c's shared memory run here? 1 yes; 0 no, with a one-line reason in
 * why ("needs 203.5 KiB of shared memory a block, this device gives 163.0 KiB"). */
int gpu_kernel_fits(const gpu_kernel_config_t *c, char *why, size_t len);

/* The last step of every kernel's *_config(): 0 when c can run here, else 1 with why (no
 * usable device, too little shared memory, or, with sm90a set, a GPU other than compute
 * capability 9.0: the wgmma kernels are built for sm_90a alone). */
int gpu_config_fits(const gpu_kernel_config_t *c, int sm90a, char *why, size_t len);

/* Free and total device memory in bytes. */
int gpu_mem_info(size_t *free_bytes, size_t *total_bytes);

/* Event timing: runs fn(ctx) `warmup` times, then `iters` times each timed with CUDA
 * events, flushing L2 between repeats (writing an L2-sized buffer); returns the median
 * in milliseconds. */
typedef void (*gpu_timed_fn)(void *ctx);
double gpu_time_ms(gpu_timed_fn fn, void *ctx, int warmup, int iters);

/* Device memory helpers for C drivers (exit with a message on failure). */
void *gpu_malloc(size_t bytes);
void  gpu_free(void *p);
void  gpu_upload(void *dst, const void *src, size_t bytes);
void  gpu_download(void *dst, const void *src, size_t bytes);
/* Fill with fp16 NaN (0x7e00) / fp32 NaN so unwritten outputs fail the check. */
void  gpu_poison_f16(void *p, size_t n);
void  gpu_poison_f32(void *p, size_t n);
/* Fill with zero bytes (counters a kernel expects at 0). */
void  gpu_zero(void *p, size_t bytes);
int   gpu_sm_count(void);   /* the current device's SMs */
void  gpu_sync(void);

/* ---- visit counters: kernels prove which blocks they visit (docs/design.md) ----------
 * A kernel that skips blocks (a causal range, a split's range) adds, once per thread
 * block, the number of blocks it visited into counts[tile] of one process-wide device
 * buffer. A tile is the Q block of a Q-outer kernel, the K/V block of a K/V-outer one, the
 * split of a decode kernel; every batch and head of a tile adds into the same counter.
 * Its launcher asks for gpu_visits(number of tiles) at every launch and passes it to the
 * kernel by value (the device side is common/visits.cuh). Every launch counts, timed ones
 * too; the driver zeroes the counters before its checked run and compares them after with
 * the reference model's counts (driver.h: drv_visits_t). The cost is one atomic add per
 * thread block; a build with FA_NO_VISITS=1 (make FA_NO_VISITS=1) leaves it out, to measure
 * that cost, and then nothing is compared.
 * FA_TEST_VISIT_ALL=1 in the environment makes every counting kernel visit every block, as
 * a deleted range would: the output stays right (the mask hides the extra blocks), only
 * the counts tell. The tests use it to prove the check has teeth. */
typedef struct {
    unsigned long long *counts;   /* device: at least the launch's tiles, or NULL (FA_NO_VISITS) */
    int visit_all;                /* FA_TEST_VISIT_ALL: ignore the range, visit every block     */
} gpu_visits_t;
/* The counters for a launch of ntiles tiles (the buffer grows, zeroed, when it is smaller). */
gpu_visits_t gpu_visits(size_t ntiles);
/* Zero every counter (asynchronous, in order with the kernels). */
void gpu_visits_zero(void);
/* Copy the first n counters to host (synchronises); counters the buffer does not hold
 * (no launch asked for them) read 0. */
void gpu_visits_read(unsigned long long *counts, size_t n);
/* 1 when the kernels count (a GPU, and a build without FA_NO_VISITS), else 0. */
int gpu_visits_on(void);

#ifdef __cplusplus
}
#endif
#endif
