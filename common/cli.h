/* cli.h - the command line every driver shares (docs/design.md, "The driver contract"):
 *
 *   phaseN [--B b] [--H h] [--Hkv h] [--N n] [--Nkv n] [--d d] [--causal] [--seed s]
 *          [--kernel name|all] [--iters k] [--sweep] [--csv file] [--dump dir]
 *          [--cpu] [--quiet] [--help]   (+ the phase's own extras, e.g. --sram, --mask)
 *
 * An option is "--name value" or "--name=value" (one dash works too); a name may be cut to
 * any prefix that names one option (--it 5). A flag (--causal, --sweep, --cpu, --quiet,
 * --help) takes no value or one of =1, =0, =true, =false. Numbers are plain decimal
 * digits ("+2", " 2" and "-0" are refused).
 *
 * Anything wrong (an unknown or ambiguous option, quoted as typed: --s could be --seed or
 * --sweep; a missing or non-numeric value, N < 1, d outside {16, 32, 64, 128, 256},
 * H % Hkv != 0, a kernel name the phase does not have, an option the phase does not take
 * such as --dump in phase 2, a problem whose host buffers exceed this machine's memory, an
 * output that cannot be written) prints ONE line on stderr and exits with code 2, before
 * the driver allocates or computes anything.
 *
 * Outputs are checked up front and never left behind:
 *  - length: each path, with the longest file the run will write there (the CSV's
 *    temporary, a file beside the CSV, a file of the dump), fits in OUT_PATH_MAX
 *    (common/path.h), the size of every buffer that holds an output path;
 *  - overlap: the CSV may share the dump's folder, but may not be the dump folder, a
 *    folder above it, or a file the dump writes (D/Q.npy) (paths compared absolute,
 *    links resolved, "." and ".." removed);
 *  - writable: the CSV path (--csv, or the phase's default) is probed by creating its
 *    missing parent folders as the CSV writer would (mkdir -p), then its temporary in its
 *    folder, and opening an existing file for append (untouched; a device or FIFO must
 *    take a write of no bytes, which /dev/full refuses), then removing what the probe
 *    made; so is each file written beside the CSV (cli_spec_t.siblings; none beside a CSV
 *    that is not a regular file). --dump DIR is probed the same way with a temporary file
 *    inside DIR, and each dump file already there must be a file it can replace. An empty
 *    path, a control character in a path, a file used as a folder (/etc/passwd/x.csv),
 *    /proc/..., a folder without write permission: one line, exit 2;
 *  - folders: missing folders are made only under results/ (of the current folder: the
 *    default CSVs, `make phaseN run`) and for --dump DIR, DIR itself; any other missing
 *    folder (--csv /nonexistent/x.csv) is refused (one line, exit 2), never made.
 */
#ifndef COMMON_CLI_H
#define COMMON_CLI_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "problem.h"

#define CLI_EXIT_USAGE 2
/* A run without GPU rows builds at most this many bytes of --mask vectors (N_kv <= 2^25
 * keys): its CPU rows run a sample of 256 keys, and a run stays within 2 GB and seconds */
#define CLI_MASK_CPU_MAX_BYTES (512.0 * (1 << 20))

typedef struct {
    attn_problem_t p;
    uint64_t seed;
    const char *kernel;    /* "all" by default                   */
    int  iters;            /* timed repeats, median reported (20) */
    bool sweep;
    int  sweep_d;          /* --sweep with --d given (where the sweep takes it): D; else 0 */
    int  sweep_causal;     /* --sweep with --causal given: 0 or 1; else -1             */
    bool cpu_only;         /* skip the GPU rows                   */
    bool quiet;
    const char *csv_path;  /* never NULL after cli_parse: --csv, else the phase's
                              default (cli_spec_t.default_csv / default_sweep_csv);
                              probed writable                      */
    const char *csv_dir;   /* the CSV's folder, where phases 0 and 2 write their other CSVs
                              (cli_spec_t.siblings), probed; NULL when the CSV is not a
                              regular file (/dev/null, a FIFO) or is in /dev
                              (/dev/stdout): nothing is written beside it */
    const char *dump_dir;  /* NULL: no .npy dump; else probed writable, each file of it too */
    long long sram_bytes;  /* --sram (phases that take it), else 0 */
    bool  phi_given;       /* --phi (phases that take it): FlashDecoding++'s unified max, */
    float phi;             /* given instead of calibrated (phase 6)                       */
} cli_opts_t;

/* What a phase tells the parser about itself. */
typedef struct {
    const char *phase;             /* "phase0"                                     */
    const char *summary;           /* one line for --help                          */
    const char *const *kernels;    /* NULL-terminated kernel names, or NULL        */
    bool takes_sram;               /* accept --sram BYTES                          */
    bool takes_phi;                /* accept --phi X: a finite number, |X| <= 10^4       */
    bool takes_mask;               /* accept --mask NAME[:p,...] (common/mask.h): built
                                      for the problem's N_q x N_kv, o->p.mask_id; a bad
                                      spec, or --causal beside it, exits 2            */
    attn_problem_t defaults;       /* the default problem                          */
    /* The CSV written without --csv; NULL: "results/<phase>/<phase>.csv". */
    const char *default_csv;
    /* The CSV written with --sweep and without --csv; NULL: default_csv (its path
     * as just resolved). Phases 1, 3, 4: "results/phaseN/phaseN_sweep.csv". */
    const char *default_sweep_csv;
    /* The phase writes no tensor dump: --dump is refused (one line, exit 2). Phase 2.
     * (Named this way round so that a spec that says nothing keeps accepting --dump.) */
    bool no_dump;
    /* The options --sweep honours besides --sweep, --csv, --cpu, --quiet and --help: their
     * names, space-separated ("kernel iters seed"). With --sweep any other option given is
     * refused (one line, exit 2), never silently ignored. NULL: the phase has no --sweep. */
    const char *sweep_takes;
    /* The files the phase writes beside its CSV (NULL-terminated names, or NULL): phase 0's
     * memory_wall.csv ...; and those it writes there with --sweep. Each is probed with the
     * CSV, and none may be the CSV itself or collide with the dump. */
    const char *const *siblings;
    const char *const *sweep_siblings;
} cli_spec_t;

/* Parse argv into o; on any error prints one line and exits 2. --help prints usage
 * and exits 0. o->csv_path may point into a static buffer of cli.c (one parse per run). */
void cli_parse(int argc, char **argv, const cli_spec_t *spec, cli_opts_t *o);

/* Print one line "<phase>: <message>" on stderr and exit 2. */
void cli_die(const char *phase, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/* Is name one of the phase's kernels (or "all")? Does the selection include name? */
bool cli_kernel_selected(const cli_opts_t *o, const char *name);

/* Bytes of physical memory on this machine (sysconf). */
double host_memory_bytes(void);
#endif
