/* cli.h - the command line every driver shares (docs/design.md, "The driver contract"):
 *
 *   phaseN [--B b] [--H h] [--Hkv h] [--N n] [--Nkv n] [--d d] [--causal] [--seed s]
 *          [--kernel name|all] [--iters k] [--sweep] [--csv file] [--dump dir]
 *          [--cpu] [--quiet] [--help]   (+ the phase's own extras, e.g. --sram)
 *
 * Parsed with getopt_long. Anything wrong (unknown flag, missing or non-numeric value,
 * N < 1, d outside {16, 32, 64, 128, 256}, H % Hkv != 0, a kernel name the phase does not
 * have, a problem whose host buffers exceed this machine's memory) prints ONE line on
 * stderr and exits with code 2, before the driver allocates anything.
 */
#ifndef COMMON_CLI_H
#define COMMON_CLI_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "problem.h"

#define CLI_EXIT_USAGE 2

typedef struct {
    attn_problem_t p;
    uint64_t seed;
    const char *kernel;    /* "all" by default                   */
    int  iters;            /* timed repeats, median reported (20) */
    bool sweep;
    bool cpu_only;         /* skip the GPU rows                   */
    bool quiet;
    const char *csv_path;  /* NULL: results/<phase>/<phase>.csv   */
    const char *dump_dir;  /* NULL: no .npy dump                  */
    long long sram_bytes;  /* --sram (phases that take it), else 0 */
} cli_opts_t;

/* What a phase tells the parser about itself. */
typedef struct {
    const char *phase;             /* "phase0"                                     */
    const char *summary;           /* one line for --help                          */
    const char *const *kernels;    /* NULL-terminated kernel names, or NULL        */
    bool takes_sram;               /* accept --sram BYTES                          */
    attn_problem_t defaults;       /* the default problem                          */
    /* Host bytes the run would allocate for problem p (for the memory check),
     * or NULL to use the generic estimate (inputs + outputs in fp32 and fp16). */
    double (*host_bytes)(const attn_problem_t *p, const cli_opts_t *o);
} cli_spec_t;

/* Parse argv into o; on any error prints one line and exits 2. --help prints usage
 * and exits 0. */
void cli_parse(int argc, char **argv, const cli_spec_t *spec, cli_opts_t *o);

/* Print one line "<phase>: <message>" on stderr and exit 2. */
void cli_die(const char *phase, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/* Is name one of the phase's kernels (or "all")? Does the selection include name? */
bool cli_kernel_selected(const cli_opts_t *o, const char *name);

/* Bytes of physical memory on this machine (sysconf). */
double host_memory_bytes(void);
#endif
