/* gpu_nocuda.c - stands in for common/gpu.cu when the project is built without nvcc:
 * every query answers "no GPU", so the drivers run their CPU rows and say why the GPU
 * rows were skipped. The memory and timing calls are never reached (drivers check
 * gpu_available() first); if one is, it says so and exits. */
#include "gpu.h"
#include <stdio.h>
#include <stdlib.h>

static const char *NO_GPU = "built without nvcc (no CUDA toolkit found at build time)";

int gpu_available(char *why, size_t len) { if (why && len) snprintf(why, len, "%s", NO_GPU); return 0; }
int gpu_machine_info(machine_info_t *mi) { machine_info_cpu(mi); return -1; }
double gpu_copy_bandwidth_gbps(void) { return 0.0; }
double gpu_read_bandwidth_gbps(void) { return 0.0; }
size_t gpu_smem_optin_bytes(void) { return 0; }
int gpu_kernel_fits(const gpu_kernel_config_t *c, char *why, size_t len)
{ (void)c; if (why && len) snprintf(why, len, "%s", NO_GPU); return 0; }
int gpu_config_fits(const gpu_kernel_config_t *c, int sm90a, char *why, size_t len)
{ (void)c; (void)sm90a; if (why && len) snprintf(why, len, "%s", NO_GPU); return 1; }
void gpu_profile_range(int on) { (void)on; }
int gpu_mem_info(size_t *free_bytes, size_t *total_bytes) { *free_bytes = *total_bytes = 0; return -1; }

static void unreachable(const char *what)
{
    fprintf(stderr, "%s called in a build without CUDA: %s\n", what, NO_GPU);
    exit(1);
}
double gpu_time_ms(gpu_timed_fn fn, void *ctx, int warmup, int iters)
{ (void)fn; (void)ctx; (void)warmup; (void)iters; unreachable("gpu_time_ms"); return 0; }
void *gpu_malloc(size_t bytes) { (void)bytes; unreachable("gpu_malloc"); return NULL; }
void gpu_free(void *p) { (void)p; }
void gpu_upload(void *dst, const void *src, size_t bytes) { (void)dst; (void)src; (void)bytes; unreachable("gpu_upload"); }
void gpu_download(void *dst, const void *src, size_t bytes) { (void)dst; (void)src; (void)bytes; unreachable("gpu_download"); }
void gpu_poison_f16(void *p, size_t n) { (void)p; (void)n; unreachable("gpu_poison_f16"); }
void gpu_poison_f32(void *p, size_t n) { (void)p; (void)n; unreachable("gpu_poison_f32"); }
void gpu_zero(void *p, size_t bytes) { (void)p; (void)bytes; unreachable("gpu_zero"); }
int gpu_sm_count(void) { unreachable("gpu_sm_count"); return 0; }
void gpu_sync(void) {}
gpu_visits_t gpu_visits(size_t ntiles) { (void)ntiles; gpu_visits_t v = { NULL, 0 }; return v; }
void gpu_visits_zero(void) {}
void gpu_visits_read(unsigned long long *counts, size_t n) { for (size_t k = 0; k < n; k++) counts[k] = 0; }
int gpu_visits_on(void) { return 0; }
