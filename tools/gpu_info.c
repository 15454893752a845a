/* gpu_info.c - what GPU does this machine have, and can the project use it?
 *
 *   build/gpu_info           prints the device (name, SMs, clocks, L2, memory, CUDA
 *                            versions) and the measured device copy bandwidth
 *   build/gpu_info --probe   prints nothing and exits 0 when a usable CUDA device exists;
 *                            otherwise prints the reason and exits 1 (tools/testlib.sh
 *                            uses it to skip the GPU tests, with that reason)
 */
#include <stdio.h>
#include <string.h>
#include "gpu.h"

int main(int argc, char **argv)
{
    int probe = argc > 1 && strcmp(argv[1], "--probe") == 0;
    if (argc > 2 || (argc == 2 && !probe)) {
        fprintf(stderr, "usage: gpu_info [--probe]\n");
        return 2;
    }
    char why[256];
    if (!gpu_available(why, sizeof why)) {
        printf("%s\n", why);
        return 1;
    }
    if (probe) return 0;

    machine_info_t mi;
    gpu_copy_bandwidth_gbps();          /* measured once, then part of the info */
    if (gpu_machine_info(&mi) != 0) { printf("cannot query the device\n"); return 1; }
    size_t free_b = 0, total_b = 0;
    gpu_mem_info(&free_b, &total_b);
    printf("gpu:            %s\n", mi.gpu_name);
    printf("SMs:            %d\n", mi.sm_count);
    printf("SM clock:       %d MHz (peak)\n", mi.sm_clock_mhz);
    printf("memory clock:   %d MHz (peak)\n", mi.mem_clock_mhz);
    printf("L2:             %.1f MiB\n", mi.l2_bytes / 1048576.0);
    printf("memory:         %.2f GiB total, %.2f GiB free\n", total_b / 1073741824.0, free_b / 1073741824.0);
    printf("CUDA runtime:   %d, driver %d\n", mi.cuda_runtime, mi.cuda_driver);
    printf("copy bandwidth: %.0f GB/s (device-to-device, read + write, measured)\n", mi.copy_gbps);
    printf("read bandwidth: %.0f GB/s (a streaming read kernel, reads only: the decode roof, measured)\n",
           gpu_read_bandwidth_gbps());
    return 0;
}
