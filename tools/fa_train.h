/* fa_train.h - phase 4's forward and phase 5's backward behind a small C API, for training
 * a model through PyTorch: `make train-lib` builds $(BUILD)/libfa_train.so, and
 * tools/train_check.py loads it with ctypes and wraps the two calls in a
 * torch.autograd.Function.
 *
 * Every pointer is a DEVICE pointer (a torch tensor's data_ptr()), every tensor contiguous in
 * the layouts of common/problem.h, aligned to 16 bytes (cp.async moves 16-byte pieces):
 *   q, o, dO, dQ  [B][H   ][N_q ][d]        L, D  [B][H][N_q]
 *   k, v, dK, dV  [B][H_kv][N_kv][d]        (GQA: H_kv divides H, nothing is repeated)
 * q, k, v and dO are fp16; o, L, D, dQ, dK, dV fp32. causal is the bottom-right mask
 * (problem.h; PyTorch's is_causal=True only where N_q = N_kv). scale <= 0: 1/sqrt(d).
 *
 * The calls are asynchronous on the CUDA legacy default stream (stream 0), the stream PyTorch
 * uses unless told otherwise, so they are ordered with PyTorch's own kernels. The library
 * carries its own CUDA runtime (linked statically): it shares the device's primary context
 * with PyTorch, so device pointers pass freely, but it has its own "current device", hence
 * fa_train_init(). A CUDA error inside a launch prints file:line and ends the process, as
 * in the drivers (common/cuda_check.cuh); what can be checked up front returns an error.
 *
 * Return values: 0 on success; -1 the request is wrong or the kernels are not built for it
 * (bad shape, unsupported d, a NULL or misaligned pointer); 1 the kernels are built for it
 * but cannot run here (no device, too little shared memory). fa_train_error() says why.
 */
#ifndef TOOLS_FA_TRAIN_H
#define TOOLS_FA_TRAIN_H

/* Use this CUDA device (the index PyTorch gives it) for every later call, from any thread.
 * Call once, first. */
int fa_train_init(int device);

/* Can head dimension d run both ways here: fa2_mma_config() and bwd_mma_config() both 0. */
int fa_train_config(int d);

/* O = softmax(scale Q K^T + mask) V and L = its row log-sum-exp (+inf on a fully masked
 * row): phase 4's fa2_mma_launch(FA2_FULL). */
int fa_train_forward(int B, int H, int H_kv, int N_q, int N_kv, int d, int causal, float scale,
                     const void *q, const void *k, const void *v, float *o, float *L);

/* dQ, dK, dV from the forward's o and L and the incoming gradient dO: phase 5's
 * bwd_mma_launch(BWD_ATOMIC) (preprocess D = rowsum(dO * o) into the scratch D, dQ zeroed
 * and accumulated with atomics; dK, dV written once). Every output is overwritten. */
int fa_train_backward(int B, int H, int H_kv, int N_q, int N_kv, int d, int causal, float scale,
                      const void *q, const void *k, const void *v, const float *o, const float *L,
                      const void *dO, float *D, float *dQ, float *dK, float *dV);

/* Why the last call of this thread failed ("" after a success). */
const char *fa_train_error(void);

#endif
