/* csv.h - results as CSV, each file opened by a metadata header of '#' lines (gnuplot
 * and NumPy skip them) saying where the numbers came from:
 *   # phase: phase1
 *   # gpu: NVIDIA H100 80GB HBM3 | sm_count: 132 | sm_clock_mhz: 1980 | mem_clock_mhz: 2619
 *   # cuda_runtime: 13000 | driver: 13000 | l2_bytes: 52428800
 *   # git: 1a2b3c4 | date: 2026-11-23T01:02:03Z | host: name | cpu: ...
 *   # command: build/phase1 --sweep
 * then one header row of column names and one row per measurement. */
#ifndef COMMON_CSV_H
#define COMMON_CSV_H
#include <stdio.h>
#include "path.h"   /* OUT_PATH_MAX, mkdir_p */

/* What is known about the machine. GPU fields are empty/zero on a CPU-only run; the
 * GPU helpers (common/gpu.h) fill them in when a device is present. */
typedef struct {
    char gpu_name[128];
    int  sm_count;
    int  sm_clock_mhz, mem_clock_mhz;
    int  cuda_runtime, cuda_driver;
    long long l2_bytes, global_mem_bytes;
    double copy_gbps;   /* measured device copy bandwidth, 0 if not measured */
} machine_info_t;

void machine_info_cpu(machine_info_t *mi);  /* a CPU-only machine: gpu "none" */

/* Open a CSV for path (creating its parent folders), write the metadata header and the
 * column row. argc/argv are recorded as the command. Returns NULL (and says why on
 * stderr, removing any folder it made) if the file cannot be written.
 *
 * The rows go to a temporary beside it, <path>.tmp-XXXXXX, which csv_close renames over
 * path: until then a previous CSV at path stays as it was, so an interrupted run never
 * leaves it empty or half written. A run that exits without csv_close (exit(), or a
 * signal that ends it: SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGALRM, SIGUSR1, SIGXFSZ
 * ..., common/cleanup.h) removes its temporary; only SIGKILL can leave one behind.
 * A path that exists and is not a regular file (/dev/null, a FIFO) is written directly. */
FILE *csv_open(const char *path, const char *phase, const machine_info_t *mi,
               int argc, char **argv, const char *columns);
/* Close a CSV opened by csv_open and put it in place: 0 when every byte reached the file
 * and it was renamed over path; otherwise one line "<phase>: could not write <path>:
 * <reason>" on stderr, the temporary removed (a previous file at path kept) and -1 (the
 * run must then exit non-zero and never print "csv: <path>"). NULL f: nothing to close, 0. */
int csv_close(FILE *f, const char *path, const char *phase);
/* One numeric cell and its comma; an empty cell for NaN (a value not measured). */
void csv_num(FILE *f, const char *fmt, double x);
/* The commit of the source tree the binary was built from (short, "-dirty" when tracked
 * files had changes), baked in by make ($(BUILD)/gen/git_commit.h), whatever the current
 * folder is. A build from a copy without .git says "unknown" unless FA_GIT_COMMIT names
 * the commit, at build time (make) or, for such a build, at run time. */
void git_commit(char *buf, size_t len);
#endif
