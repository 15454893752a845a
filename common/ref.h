/* ref.h - what the checks of an exercise build compare with.
 *
 * In an exercise build (make phaseN run EX=1, and every build of a student's handout tree)
 * a check must never compare a student's output with code the student writes in another
 * exercise, nor take its tolerance from it: phase 3's check would otherwise pass an empty
 * fa1.ml against an empty p0.softmax_row. So a check calls REF(f) for the reference it
 * needs (the fp64 oracle, phase 1's fp16 pipeline, an earlier phase's CPU model):
 *
 *   reference build   REF(f) is f itself
 *   exercise build    REF(f) is ref_f, the solution of f compiled into the reference
 *                     library libfa_ref.a: every CPU source with an exercise region,
 *                     compiled from the solutions, each global symbol f renamed ref_f
 *                     (the Makefile's "reference library"); a handout ships it prebuilt
 *                     as ref/libfa_ref.a, object code only, so no solution is in its text.
 *
 * A GPU row borrowed from another phase (phase 4's table shows phase 3's fa1-mma; phases
 * 5 and 6 run phase 4's fa2-mma for the forward) calls REF_GPU(f), for the same reason:
 *
 *   REF_GPU(f) is ref_f    where the build links the GPU reference library
 *                          libfa_ref_gpu.a (REF_GPU_BUILD): every .cu source with an
 *                          exercise region, compiled from its solution for the build's
 *                          GPUs, renamed the same way. A handout made with nvcc ships it as
 *                          ref/libfa_ref_gpu.a; in the repository it is linked when more
 *                          than one phase is cut (make run EX=1).
 *   REF_GPU(f) is f        otherwise: make phaseN ... EX=1 in the repository cuts phase N
 *                          alone, so the kernels it borrows are the solutions themselves
 *                          (the Makefile says so with REF_GPU_SOLVED).
 *
 * REF_PROTO(ret, f, (args)) declares f and ref_f together. */
#ifndef COMMON_REF_H
#define COMMON_REF_H
#ifdef EX_BUILD
#define REF(f) ref_##f
#define EX_BUILD_ON 1
#else
#define REF(f) f
#define EX_BUILD_ON 0
#endif
#ifdef REF_GPU_BUILD
#define REF_GPU(f) ref_##f
#else
#define REF_GPU(f) f
#endif
/* REF_GPU_ON: is REF_GPU(f) a solution? Yes outside an exercise build, with the GPU
 * reference library, and in a repository exercise build of one phase (REF_GPU_SOLVED: the
 * other phases are whole). No in a handout made without nvcc: a borrowed GPU row is then
 * not run ("n/a"), as it would run the student's own earlier kernel. */
#if !EX_BUILD_ON || defined(REF_GPU_BUILD) || defined(REF_GPU_SOLVED)
#define REF_GPU_ON 1
#else
#define REF_GPU_ON 0
#endif
#define REF_PROTO(ret, f, args) ret f args; ret ref_##f args
#endif
