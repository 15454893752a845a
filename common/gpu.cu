/* gpu.cu - the GPU helpers of common/gpu.h: device query, memory, poisoning and event
 * timing with an L2 flush between repeats. Built only when nvcc exists (gpu_nocuda.c
 * answers "no GPU" otherwise). Every runtime call goes through CUDA_CHECK, except in
 * gpu_available(), whose job is to turn a failure into a reason instead of an exit. */
/* csv.h (machine_info_cpu) is plain C without extern "C" guards */
extern "C" {
#include "csv.h"
}
#include "gpu.h"
#include "cuda_check.cuh"
#include <cuda_fp16.h>
#include <cuda_profiler_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {

static int  avail_known = 0, avail_ok = 0;
static char avail_why[256];

int gpu_available(char *why, size_t len)
{
    if (!avail_known) {
        int count = 0;
        cudaError_t e = cudaGetDeviceCount(&count);
        if (e != cudaSuccess)
            snprintf(avail_why, sizeof avail_why, "no CUDA device: cudaGetDeviceCount says %s",
                     cudaGetErrorString(e));
        else if (count == 0)
            snprintf(avail_why, sizeof avail_why, "no CUDA device: cudaGetDeviceCount found 0");
        else if ((e = cudaFree(0)) != cudaSuccess)   /* creates the context: can it run? */
            snprintf(avail_why, sizeof avail_why, "CUDA device unusable: %s", cudaGetErrorString(e));
        else
            avail_ok = 1;
        avail_known = 1;
    }
    if (why && len) snprintf(why, len, "%s", avail_ok ? "" : avail_why);
    return avail_ok;
}

static double copy_gbps_cached = 0.0;

int gpu_machine_info(machine_info_t *mi)
{
    machine_info_cpu(mi);
    if (!gpu_available(NULL, 0)) return -1;
    int dev, v;
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    snprintf(mi->gpu_name, sizeof mi->gpu_name, "%.127s", prop.name);
    mi->sm_count = prop.multiProcessorCount;
    /* the clock fields left cudaDeviceProp in CUDA 13: ask for the attributes (kHz) */
    CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, dev));       mi->sm_clock_mhz = v / 1000;
    CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, dev)); mi->mem_clock_mhz = v / 1000;
    mi->l2_bytes = prop.l2CacheSize;
    mi->global_mem_bytes = (long long)prop.totalGlobalMem;
    CUDA_CHECK(cudaRuntimeGetVersion(&mi->cuda_runtime));
    CUDA_CHECK(cudaDriverGetVersion(&mi->cuda_driver));
    mi->copy_gbps = copy_gbps_cached;
    return 0;
}

int gpu_mem_info(size_t *free_bytes, size_t *total_bytes)
{
    size_t f = 0, t = 0;
    if (!gpu_available(NULL, 0)) { if (free_bytes) *free_bytes = 0; if (total_bytes) *total_bytes = 0; return -1; }
    CUDA_CHECK(cudaMemGetInfo(&f, &t));
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
    return 0;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static float median_f(float *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_float);
    return (n % 2) ? x[n / 2] : 0.5f * (x[n / 2 - 1] + x[n / 2]);
}

double gpu_copy_bandwidth_gbps(void)
{
    if (copy_gbps_cached > 0 || !gpu_available(NULL, 0)) return copy_gbps_cached;
    const size_t bytes = (size_t)512 << 20;   /* 512 MiB, ten times an H100's 50 MB L2 */
    const int reps = 10;
    void *a, *b;
    cudaEvent_t e0, e1;
    float ms[10];
    CUDA_CHECK(cudaMalloc(&a, bytes));
    CUDA_CHECK(cudaMalloc(&b, bytes));
    CUDA_CHECK(cudaMemset(a, 0, bytes));
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    CUDA_CHECK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));   /* warm-up */
    for (int r = 0; r < reps; r++) {
        CUDA_CHECK(cudaEventRecord(e0));
        CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
        CUDA_CHECK(cudaEventRecord(e1));
        CUDA_CHECK(cudaEventSynchronize(e1));
        CUDA_CHECK(cudaEventElapsedTime(&ms[r], e0, e1));
    }
    /* a copy reads and writes every byte: 2 x bytes of traffic */
    copy_gbps_cached = 2.0 * (double)bytes / (median_f(ms, reps) * 1e-3) / 1e9;
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    return copy_gbps_cached;
}

/* Every thread streams 16-byte words, four loads in flight (a grid-stride loop of four
 * words a step), folds them into one word, and writes it only if it is impossible: the
 * loads cannot be dropped, and nothing is written. */
__global__ void read_stream_kernel(const int4 *__restrict__ a, size_t n, int *sink)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    int acc = 0;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const int4 w0 = __ldcs(a + i), w1 = __ldcs(a + i + stride), w2 = __ldcs(a + i + 2 * stride),
                   w3 = __ldcs(a + i + 3 * stride);
        acc ^= w0.x ^ w0.y ^ w0.z ^ w0.w ^ w1.x ^ w1.y ^ w1.z ^ w1.w ^ w2.x ^ w2.y ^ w2.z ^ w2.w ^ w3.x ^ w3.y ^ w3.z ^ w3.w;
    }
    for (; i < n; i += stride) { const int4 w = __ldcs(a + i); acc ^= w.x ^ w.y ^ w.z ^ w.w; }
    if (acc == 0x7f123456) *sink = acc;   /* never, for the buffer's 0x01 bytes */
}

static double read_gbps_cached = 0.0;

double gpu_read_bandwidth_gbps(void)
{
    if (read_gbps_cached > 0 || !gpu_available(NULL, 0)) return read_gbps_cached;
    int dev, sms, l2;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    size_t bytes = (size_t)40 * (size_t)(l2 > 0 ? l2 : (50 << 20)), free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (bytes > free_b / 2) bytes = free_b / 2;
    bytes &= ~(size_t)15;
    int4 *a;
    int *sink;
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaMalloc(&a, bytes));
    CUDA_CHECK(cudaMalloc(&sink, sizeof *sink));
    CUDA_CHECK(cudaMemset(a, 1, bytes));
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    const size_t n = bytes / sizeof(int4);
    const int blocks_per_sm[] = { 2, 4, 8, 16 };
    for (int c = 0; c < 4; c++) {
        const int grid = sms * blocks_per_sm[c];
        float ms[10];
        read_stream_kernel<<<grid, 256>>>(a, n, sink);   /* warm-up */
        CUDA_CHECK(cudaGetLastError());
        for (int r = 0; r < 10; r++) {
            CUDA_CHECK(cudaEventRecord(e0));
            read_stream_kernel<<<grid, 256>>>(a, n, sink);
            CUDA_CHECK(cudaEventRecord(e1));
            CUDA_CHECK(cudaEventSynchronize(e1));
            CUDA_CHECK(cudaEventElapsedTime(&ms[r], e0, e1));
        }
        const double gbps = (double)bytes / (median_f(ms, 10) * 1e-3) / 1e9;
        if (gbps > read_gbps_cached) read_gbps_cached = gbps;
    }
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    CUDA_CHECK(cudaFree(sink));
    CUDA_CHECK(cudaFree(a));
    return read_gbps_cached;
}

/* The L2 flush buffer: twice the L2, allocated once and kept for the process; freed at
 * exit (registered after the CUDA runtime's own exit handler, so it runs before it) so
 * that compute-sanitizer's leak check stays clean. */
static void  *flush_buf = NULL;
static size_t flush_bytes = 0;
static void flush_buf_free(void) { if (flush_buf) cudaFree(flush_buf); flush_buf = NULL; }

double gpu_time_ms(gpu_timed_fn fn, void *ctx, int warmup, int iters)
{
    if (iters < 1) iters = 1;
    if (!flush_buf) {
        int dev, l2;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
        flush_bytes = 2 * (size_t)(l2 > 0 ? l2 : (8 << 20));
        CUDA_CHECK(cudaMalloc(&flush_buf, flush_bytes));
        atexit(flush_buf_free);
    }
    for (int w = 0; w < warmup; w++) fn(ctx);
    CUDA_CHECK(cudaDeviceSynchronize());

    float *ms = (float *)malloc((size_t)iters * sizeof *ms);
    if (!ms) { fprintf(stderr, "gpu_time_ms: out of host memory\n"); exit(1); }
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    for (int r = 0; r < iters; r++) {
        /* write an L2-sized buffer so each repeat starts with a cold cache, as a layer
         * of a real model would (its inputs were evicted by the layers before) */
        CUDA_CHECK(cudaMemsetAsync(flush_buf, r & 0xff, flush_bytes));
        CUDA_CHECK(cudaEventRecord(e0));
        fn(ctx);
        CUDA_CHECK(cudaEventRecord(e1));
        CUDA_CHECK(cudaEventSynchronize(e1));
        CUDA_CHECK(cudaEventElapsedTime(&ms[r], e0, e1));
    }
    double med = median_f(ms, iters);
    free(ms);
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    return med;
}

void *gpu_malloc(size_t bytes)
{
    void *p = NULL;
    CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
}

void gpu_free(void *p) { if (p) CUDA_CHECK(cudaFree(p)); }
void gpu_upload(void *dst, const void *src, size_t bytes)
{ CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice)); }
void gpu_download(void *dst, const void *src, size_t bytes)
{ CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost)); }
void gpu_sync(void) { CUDA_CHECK(cudaDeviceSynchronize()); }

/* fp16 NaN is 0x7e00: both bytes differ, so fill 16-bit words with a kernel. */
__global__ void poison_u16_kernel(unsigned short *p, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = 0x7e00;
}

void gpu_poison_f16(void *p, size_t n)
{
    if (n == 0) return;
    size_t blocks = (n + 255) / 256;
    poison_u16_kernel<<<(unsigned)(blocks < 65536 ? blocks : 65536), 256>>>((unsigned short *)p, n);
    CUDA_CHECK_LAUNCH();
}

/* 0xff bytes make 0xffffffff, a quiet NaN in fp32. */
void gpu_poison_f32(void *p, size_t n) { CUDA_CHECK(cudaMemset(p, 0xff, n * sizeof(float))); }
void gpu_zero(void *p, size_t bytes) { CUDA_CHECK(cudaMemset(p, 0, bytes)); }
int gpu_sm_count(void)
{
    int dev = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    return sms;
}

/* ---- the visit counters (gpu.h) ---- */
#ifndef FA_NO_VISITS
#define FA_NO_VISITS 0
#endif
static unsigned long long *visit_buf = NULL;
static size_t visit_cap = 0;
static void visit_buf_free(void) { if (visit_buf) cudaFree(visit_buf); visit_buf = NULL; }

gpu_visits_t gpu_visits(size_t ntiles)
{
    static int all = -1;
    if (all < 0) {
        const char *e = getenv("FA_TEST_VISIT_ALL");
        all = e && strcmp(e, "1") == 0;
    }
    gpu_visits_t v = { NULL, all };
    if (FA_NO_VISITS) { v.visit_all = 0; return v; }
    if (ntiles > visit_cap) {   /* the first launch of a larger problem: never inside a timed loop
                                   (the checked run of the same problem asked first) */
        if (!visit_buf) atexit(visit_buf_free);
        else CUDA_CHECK(cudaFree(visit_buf));   /* waits for the kernels that used it */
        visit_cap = ntiles > 2 * visit_cap ? ntiles : 2 * visit_cap;
        CUDA_CHECK(cudaMalloc(&visit_buf, visit_cap * sizeof *visit_buf));
        CUDA_CHECK(cudaMemset(visit_buf, 0, visit_cap * sizeof *visit_buf));
    }
    v.counts = visit_buf;
    return v;
}

void gpu_visits_zero(void)
{
    if (visit_buf) CUDA_CHECK(cudaMemsetAsync(visit_buf, 0, visit_cap * sizeof *visit_buf));
}

void gpu_visits_read(unsigned long long *counts, size_t n)
{
    const size_t have = n < visit_cap ? n : visit_cap;
    if (have) CUDA_CHECK(cudaMemcpy(counts, visit_buf, have * sizeof *counts, cudaMemcpyDeviceToHost));
    for (size_t k = have; k < n; k++) counts[k] = 0;
}

int gpu_visits_on(void) { return !FA_NO_VISITS && gpu_available(NULL, 0); }

} /* extern "C" */

void gpu_profile_range(int on)
{
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(on ? cudaProfilerStart() : cudaProfilerStop());
}

size_t gpu_smem_optin_bytes(void)
{
    int dev = 0, optin = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    size_t limit = (size_t)optin;
    const char *env = getenv("FA_SMEM_LIMIT");   /* pretend to be a smaller GPU */
    if (env && *env) {
        char *end;
        unsigned long long v = strtoull(env, &end, 10);
        if (*end == '\0' && v < limit) limit = (size_t)v;
    }
    return limit;
}

int gpu_config_fits(const gpu_kernel_config_t *c, int sm90a, char *why, size_t len)
{
    if (!gpu_available(why, len)) return 1;
    if (sm90a) {
        int dev = 0, major = 0, minor = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
            snprintf(why, len, "no CUDA device");
            return 1;
        }
        if (major != 9 || minor != 0) {   /* wgmma exists nowhere else */
            snprintf(why, len, "kernel %s needs sm_90a (Hopper: H100, H200); this GPU is sm_%d%d", c->name, major, minor);
            return 1;
        }
    }
    return gpu_kernel_fits(c, why, len) ? 0 : 1;
}

int gpu_kernel_fits(const gpu_kernel_config_t *c, char *why, size_t len)
{
    size_t limit = gpu_smem_optin_bytes();
    if (c->smem_bytes <= limit) return 1;
    snprintf(why, len, "needs %.1f KiB of shared memory a block, this device gives %.1f KiB%s",
             c->smem_bytes / 1024.0, limit / 1024.0, getenv("FA_SMEM_LIMIT") ? " (FA_SMEM_LIMIT)" : "");
    return 0;
}
