/* cuda_check.cuh - error checking for .cu files (common/gpu.h describes the contract).
 *
 *   CUDA_CHECK(cudaMalloc(&p, n));     every runtime call
 *   kernel<<<grid, block>>>(...);
 *   CUDA_CHECK_LAUNCH();               after every launch: a bad launch configuration
 *                                      shows up here, not three calls later
 *   CUBLAS_CHECK(cublasGemmEx(...));   every cuBLAS call (where cublas_api.h is included)
 *
 * On error: "file:line: CUDA error <name>: <message> in <call>" on stderr and exit(1).
 * A kernel's own faults (out-of-bounds reads...) surface at the next synchronising call.
 */
#ifndef COMMON_CUDA_CHECK_CUH
#define COMMON_CUDA_CHECK_CUH
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDA_CHECK(call)                                                                  \
    do {                                                                                  \
        cudaError_t err_ = (call);                                                        \
        if (err_ != cudaSuccess) {                                                        \
            fprintf(stderr, "%s:%d: CUDA error %s: %s in %s\n", __FILE__, __LINE__,       \
                    cudaGetErrorName(err_), cudaGetErrorString(err_), #call);             \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

#ifdef CUBLAS_API_H_
#define CUBLAS_CHECK(call)                                                                \
    do {                                                                                  \
        cublasStatus_t st_ = (call);                                                      \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                               \
            fprintf(stderr, "%s:%d: cuBLAS error %d (%s) in %s\n", __FILE__, __LINE__,    \
                    (int)st_, cublasGetStatusString(st_), #call);                         \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)
#endif
#endif
