/* tma_map.cuh - the host half of the copy engine (TMA): a tensor map describes a tensor in
 * global memory to the copy engine, which then moves boxes of it into shared memory
 * (common/wgmma.cuh: tma_load_3d). Used by phase 4's and phase 5's Hopper kernels.
 *
 * cuTensorMapEncodeTiled is a driver function; it is fetched through the runtime, so that
 * the programs link against the runtime alone.
 */
#ifndef COMMON_TMA_MAP_CUH
#define COMMON_TMA_MAP_CUH
#include <cuda.h>   /* CUtensorMap and its enums */
#include <cuda_fp16.h>
#include <stdio.h>
#include <stdlib.h>
#include "cuda_check.cuh"

typedef CUresult (*tma_encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                        const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                        CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

/* [heads][rows][cols] of elem_bytes-byte elements at base as a 3-D tensor: boxes of box_rows
 * rows x (128 / elem_bytes) columns (128 bytes, the swizzle's row), 128-byte swizzled as the
 * wgmma descriptors expect. A box stops at its head's last row and last column: the rest is
 * filled with zeros (tails need no care). who: the kernel, for the one line said when the
 * driver lacks the encoder. */
static inline CUtensorMap tma_map_3d(const void *base, CUtensorMapDataType type, int elem_bytes, int cols, int rows,
                                     int heads, int box_rows, const char *who)
{
    static tma_encode_tiled_fn encode = NULL;
    if (!encode) {
        void *fn = NULL;
        cudaDriverEntryPointQueryResult found;
        CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
        if (!fn || found != cudaDriverEntryPointSuccess) { fprintf(stderr, "%s: no cuTensorMapEncodeTiled in this driver\n", who); exit(1); }
        encode = (tma_encode_tiled_fn)fn;
    }
    CUtensorMap m;
    const cuuint64_t dims[3] = {(cuuint64_t)cols, (cuuint64_t)rows, (cuuint64_t)heads};
    const cuuint64_t strides[2] = {(cuuint64_t)cols * elem_bytes, (cuuint64_t)rows * cols * elem_bytes};   /* bytes */
    const cuuint32_t box[3] = {(cuuint32_t)(128 / elem_bytes), (cuuint32_t)box_rows, 1}, step[3] = {1, 1, 1};
    const CUresult rc = encode(&m, type, 3, (void *)base, dims, strides, box, step,
                               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (rc != CUDA_SUCCESS) { fprintf(stderr, "%s: cuTensorMapEncodeTiled failed (%d)\n", who, (int)rc); exit(1); }
    return m;
}

/* [heads][rows][d] fp16: boxes of box_rows rows x 64 columns */
static inline CUtensorMap tma_map_3d_f16(const void *base, int d, int rows, int heads, int box_rows, const char *who)
{
    return tma_map_3d(base, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, d, rows, heads, box_rows, who);
}

/* [heads][rows][cols] bytes (e4m3): boxes of box_rows rows x 128 bytes */
static inline CUtensorMap tma_map_3d_u8(const void *base, int cols, int rows, int heads, int box_rows, const char *who)
{
    return tma_map_3d(base, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, cols, rows, heads, box_rows, who);
}
#endif
