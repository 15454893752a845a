/* decode_rows.h - phase 6's rows and sweep, called by main.c (its header lists the rows and
 * their checks): decode_rows.c runs the rows of one problem, decode_sweep.c the --sweep. */
#ifndef PHASE6_DECODE_ROWS_H
#define PHASE6_DECODE_ROWS_H
#include "decode.h"
#include "driver.h"

#define DEC_PHASE         "phase6"
#define DEC_CPU_MAX_FLOPS 2e9     /* an exercise build's CPU copy of fa2-mma runs up to here */
#define DEC_CPU_ROWS_MAX_FLOPS 8e7  /* the CPU rows run a smaller problem like it above (13 rows, ~4 s) */
#define DEC_PAGED_S       4       /* the splits of the CPU's paged and ragged rows      */
#define DEC_ROWS_MAX      24

/* A row name that lives as long as the run (fmt with up to two ints). */
const char *dec_row_name(const char *fmt, int a, int b);

/* O and L of one problem, poisoned (exit 1 when out of host memory). */
typedef struct { float *O, *L; } dec_out_t;
dec_out_t dec_out_alloc(const attn_problem_t *p);
void dec_out_free(dec_out_t *o);

/* One run of the split model into out (c NULL: the contiguous cache): timed, its counted
 * bytes against decode_hbm_bytes, its SRAM peak against dec_sram_bytes. */
drv_row_t dec_run_split(const attn_inputs_t *in, const dec_cache_t *c, int S, const char *name,
                        const char *sweep, dec_out_t *out);
/* The same for FlashDecoding++'s model with the unified max phi (dec_cpu_fdpp): its bytes held
 * to dec_fdpp_hbm_bytes; the rows it recomputed in recomputed [B][H][N_q]. */
drv_row_t dec_run_fdpp(const attn_inputs_t *in, const dec_cache_t *c, int S, float phi, const char *name,
                       const char *sweep, dec_out_t *out, uint8_t *recomputed);
/* The CPU rows of problem pc: phase 4's model, the splits, FD++, the paged caches, ragged. */
int dec_cpu_rows(const attn_problem_t *pc, const cli_opts_t *o, drv_row_t *rows);
/* After dec_cpu_rows: the FD++ row's phi and how many rows it recomputed (one line). */
const char *dec_fdpp_note(void);
const char *dec_fdpp_gpu_note(void);   /* the GPU's fdpp row: phi and the rows recomputed ("" without it) */

/* FA_SPLITS: the number of splits of every GPU decode row instead of the heuristic's
 * (0: the heuristic). */
void dec_set_splits(int S);
/* FA_SPLIT_UNIT=sm: the heuristic counts waves in SMs instead of FA2's slots (SMs x
 * blocks per SM; FA_SPLIT_UNIT=slots, the default). */
void dec_set_split_unit(bool slots);
bool dec_split_unit_slots(void);

#if HAVE_CUDA
/* One GPU launch: phase 4's fa2-mma on the decode shape, or a decode kernel. */
typedef struct {
    attn_problem_t p;
    bool fa2;                    /* phase 4's fa2-mma instead of the decode kernels */
    bool pack;
    int S;
    dec_gpu_args_t a;
    bool fdpp;                   /* FlashDecoding++ (dec_gpu_launch_fdpp) with phi */
    float phi;
} dec_launch_t;
void dec_launch(void *ctx);
/* The heuristic's S for the kernel that runs (decode.h; FA_SPLIT_UNIT picks its unit), or FA_SPLITS. */
int dec_pick_splits(const attn_problem_t *p, bool pack, bool paged);
/* The heuristic's unit count on this GPU: SMs, or slots when slots is true. */
int dec_split_units(const attn_problem_t *p, bool pack, bool paged, bool slots);
/* The GPU rows of the whole problem in; the S each kernel ran with. */
int dec_gpu_rows(const attn_inputs_t *in, const cli_opts_t *o, drv_row_t *rows, int *S_split, int *S_pack,
                 int *S_paged);
#endif

/* --sweep (decode_sweep.c): the model's bytes vs L and S, then with a GPU the timings. */
int dec_sweep(drv_t *D, const cli_opts_t *o);
#endif
