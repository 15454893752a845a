#define _GNU_SOURCE
#include "cli.h"
#include "gpu.h"
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

void cli_die(const char *phase, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", phase);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(CLI_EXIT_USAGE);
}

double host_memory_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    return (pages > 0 && size > 0) ? (double)pages * (double)size : 0.0;
}

static long long parse_int(const char *phase, const char *flag, const char *s,
                           long long lo, long long hi)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi)
        cli_die(phase, "--%s wants an integer in [%lld, %lld], got '%s'", flag, lo, hi, s);
    return v;
}

/* The host memory a run allocates (problem.h, attn_host_bytes): the CPU rows' problem
 * (attn_small_like: within the CPU bound, whatever p is), and, when a GPU runs, the GPU
 * rows' host buffers of the whole problem p. With --cpu, or without a usable GPU, a
 * problem far beyond this machine still runs its CPU rows on a smaller one. */
static double host_bytes_needed(const attn_problem_t *p, const cli_spec_t *spec, bool cpu_only)
{
    bool gpu_rows = false;   /* a phase whose only kernel is "cpu" (phase 0) has none */
    for (const char *const *k = spec->kernels; k && *k; k++) gpu_rows |= strcmp(*k, "cpu") != 0;
    attn_problem_t pc = attn_small_like(p, INFINITY);   /* the largest the CPU rows run */
    double need = attn_host_bytes(&pc, ATTN_HOST_CPU_ROWS);
    char why[8];
    if (gpu_rows && !cpu_only && gpu_available(why, sizeof why)) need += attn_host_bytes(p, ATTN_HOST_GPU_ROWS);
    return need;
}

/* ---- output probes ---------------------------------------------------------------------
 * What the probe creates it removes again: the folders it had to make (in reverse order) and
 * the file it created. An existing file is opened for append and closed, unchanged. */
#define PROBE_MAX_DIRS 64
typedef struct { char made[PROBE_MAX_DIRS][PATH_MAX]; int n; } probe_dirs_t;

static void probe_undo(probe_dirs_t *d)
{
    while (d->n > 0) rmdir(d->made[--d->n]);
}

/* mkdir -p dir, recording what it made; on failure fills why and returns -1. */
static int probe_mkdirs(const char *dir, probe_dirs_t *d, char *why, size_t len)
{
    char buf[PATH_MAX];
    size_t n = strlen(dir);
    if (n >= sizeof buf) { snprintf(why, len, "path too long"); return -1; }
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        if (buf[i - 1] == '/') continue;               /* "a//b", or a trailing "/" */
        char c = buf[i];
        buf[i] = '\0';
        struct stat st;
        if (stat(buf, &st) == 0) {
            if (!S_ISDIR(st.st_mode)) { snprintf(why, len, "%s is not a folder", buf); return -1; }
        } else if (errno != ENOENT) {
            snprintf(why, len, "cannot reach %s: %s", buf, strerror(errno)); return -1;
        } else if (mkdir(buf, 0755) != 0) {
            snprintf(why, len, "cannot create folder %s: %s", buf, strerror(errno)); return -1;
        } else if (d->n < PROBE_MAX_DIRS) {
            snprintf(d->made[d->n++], PATH_MAX, "%s", buf);
        }
        buf[i] = c;
    }
    return 0;
}

/* Could a CSV be written at path? 0, or -1 with why. */
static int probe_file(const char *path, char *why, size_t len)
{
    probe_dirs_t d = { .n = 0 };
    char dir[PATH_MAX];
    if (strlen(path) >= sizeof dir) { snprintf(why, len, "path too long"); return -1; }
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash[1] == '\0') { snprintf(why, len, "names a folder, not a file"); return -1; }
    if (slash && slash != dir) { *slash = '\0'; if (probe_mkdirs(dir, &d, why, len) != 0) { probe_undo(&d); return -1; } }
    int rc = 0;
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) { snprintf(why, len, "it is a folder"); rc = -1; }
        else {
            int fd = open(path, O_WRONLY | O_APPEND | O_NONBLOCK);
            if (fd < 0) { snprintf(why, len, "%s", strerror(errno)); rc = -1; } else close(fd);
        }
    } else if (errno != ENOENT) {
        snprintf(why, len, "%s", strerror(errno)); rc = -1;
    } else {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd < 0) { snprintf(why, len, "%s", strerror(errno)); rc = -1; }
        else { close(fd); unlink(path); }
    }
    probe_undo(&d);
    return rc;
}

/* Could files be written into folder dir (made with mkdir -p)? 0, or -1 with why. */
static int probe_dir(const char *dir, char *why, size_t len)
{
    probe_dirs_t d = { .n = 0 };
    char tmp[PATH_MAX];
    int rc = 0;
    if (strlen(dir) + 20 >= sizeof tmp) { snprintf(why, len, "path too long"); return -1; }
    if (probe_mkdirs(dir, &d, why, len) != 0) { probe_undo(&d); return -1; }
    snprintf(tmp, sizeof tmp, "%s/.cli-probe-XXXXXX", dir);
    int fd = mkstemp(tmp);
    if (fd < 0) { snprintf(why, len, "cannot write into %s: %s", dir, strerror(errno)); rc = -1; }
    else { close(fd); unlink(tmp); }
    probe_undo(&d);
    return rc;
}

/* The option argv names (without its dashes or =value), and the options it is a prefix of. */
static int prefix_matches(const char *arg, const struct option *opts, const cli_spec_t *spec,
                          char *names, size_t len)
{
    while (*arg == '-') arg++;
    size_t n = strcspn(arg, "=");
    int count = 0;
    names[0] = '\0';
    if (n == 0) return 0;
    for (const struct option *o = opts; o->name; o++) {
        if (strcmp(o->name, "sram") == 0 && !spec->takes_sram) continue;
        if (strcmp(o->name, "dump") == 0 && spec->no_dump) continue;
        if (strncmp(o->name, arg, n) != 0) continue;
        if (strlen(o->name) == n) return 1;            /* an exact match is never ambiguous */
        size_t used = strlen(names);
        snprintf(names + used, len - used, "%s--%s", count ? ", " : "", o->name);
        count++;
    }
    return count;
}

static void usage(const cli_spec_t *s, FILE *f)
{
    fprintf(f, "%s - %s\n\n"
               "usage: %s [--B b] [--H h] [--Hkv h] [--N n] [--Nkv n] [--d d] [--causal]\n"
               "          [--seed s] [--kernel name|all] [--iters k] [--sweep] [--csv file]\n"
               "          %s[--cpu] [--quiet]%s [--help]\n\n"
               "  d is one of 16, 32, 64, 128, 256; H must be a multiple of Hkv.\n",
            s->phase, s->summary, s->phase, s->no_dump ? "" : "[--dump dir] ",
            s->takes_sram ? " [--sram bytes]" : "");
    if (s->kernels) {
        fprintf(f, "  kernels:");
        for (const char *const *k = s->kernels; *k; k++) fprintf(f, " %s", *k);
        fprintf(f, " all\n");
    }
    fprintf(f, "  defaults: --B %d --H %d --N %d --d %d%s --seed 1 --iters 20\n",
            s->defaults.B, s->defaults.H, s->defaults.N_q, s->defaults.d,
            s->defaults.causal ? " --causal" : "");
    char conv[PATH_MAX];
    snprintf(conv, sizeof conv, "results/%s/%s.csv", s->phase, s->phase);
    const char *def = s->default_csv ? s->default_csv : conv;
    fprintf(f, "  --csv defaults to %s", def);
    if (s->default_sweep_csv) fprintf(f, " (with --sweep: %s)", s->default_sweep_csv);
    fprintf(f, "; outputs are checked writable before any work.\n");
}

void cli_parse(int argc, char **argv, const cli_spec_t *spec, cli_opts_t *o)
{
    const char *ph = spec->phase;
    enum { O_B = 256, O_H, O_HKV, O_N, O_NKV, O_D, O_CAUSAL, O_SEED, O_KERNEL, O_ITERS,
           O_SWEEP, O_CSV, O_DUMP, O_CPU, O_QUIET, O_SRAM, O_HELP };
    static const struct option opts[] = {
        {"B", required_argument, 0, O_B},          {"H", required_argument, 0, O_H},
        {"Hkv", required_argument, 0, O_HKV},      {"N", required_argument, 0, O_N},
        {"Nkv", required_argument, 0, O_NKV},      {"d", required_argument, 0, O_D},
        {"causal", no_argument, 0, O_CAUSAL},      {"seed", required_argument, 0, O_SEED},
        {"kernel", required_argument, 0, O_KERNEL}, {"iters", required_argument, 0, O_ITERS},
        {"sweep", no_argument, 0, O_SWEEP},        {"csv", required_argument, 0, O_CSV},
        {"dump", required_argument, 0, O_DUMP},    {"cpu", no_argument, 0, O_CPU},
        {"quiet", no_argument, 0, O_QUIET},        {"sram", required_argument, 0, O_SRAM},
        {"help", no_argument, 0, O_HELP},          {0, 0, 0, 0}};

    memset(o, 0, sizeof *o);
    attn_problem_t p = spec->defaults;
    int H_kv = -1, N_kv = -1;        /* -1: not given */
    bool H_given = false, N_given = false;
    o->seed = 1;
    o->kernel = "all";
    o->iters = 20;

    opterr = 0;                      /* we print our own one-line errors */
    optind = 1;
    int c;
    while ((c = getopt_long_only(argc, argv, ":", opts, NULL)) != -1) {
        switch (c) {
        case O_B:      p.B = (int)parse_int(ph, "B", optarg, 1, INT_MAX); break;
        case O_H:      p.H = (int)parse_int(ph, "H", optarg, 1, INT_MAX); H_given = true; break;
        case O_HKV:    H_kv = (int)parse_int(ph, "Hkv", optarg, 1, INT_MAX); break;
        case O_N:      p.N_q = (int)parse_int(ph, "N", optarg, 1, INT_MAX); N_given = true; break;
        case O_NKV:    N_kv = (int)parse_int(ph, "Nkv", optarg, 1, INT_MAX); break;
        case O_D:      p.d = (int)parse_int(ph, "d", optarg, 1, INT_MAX); break;
        case O_CAUSAL: p.causal = true; break;
        case O_SEED:   o->seed = (uint64_t)parse_int(ph, "seed", optarg, 0, LLONG_MAX); break;
        case O_KERNEL:
            if (!spec->kernels) cli_die(ph, "--kernel is not taken here: %s has no kernels to pick from", ph);
            o->kernel = optarg;
            break;
        case O_ITERS:  o->iters = (int)parse_int(ph, "iters", optarg, 1, 100000); break;
        case O_SWEEP:  o->sweep = true; break;
        case O_CSV:    o->csv_path = optarg; break;
        case O_DUMP:
            if (spec->no_dump) cli_die(ph, "--dump is not taken here: %s writes no tensor dump", ph);
            o->dump_dir = optarg;
            break;
        case O_CPU:    o->cpu_only = true; break;
        case O_QUIET:  o->quiet = true; break;
        case O_SRAM:
            if (!spec->takes_sram) cli_die(ph, "unknown option '--sram' (see --help)");
            o->sram_bytes = parse_int(ph, "sram", optarg, 1024, 1LL << 30);
            break;
        case O_HELP:   usage(spec, stdout); exit(0);
        case ':':      cli_die(ph, "option '%s' needs a value (see --help)", argv[optind - 1]);
        default: {
            char names[256];
            const char *arg = argv[optind - 1];
            if (prefix_matches(arg, opts, spec, names, sizeof names) > 1)
                cli_die(ph, "ambiguous option '%.*s': it could be %s (see --help)",
                        (int)strcspn(arg, "="), arg, names);
            cli_die(ph, "unknown option '%s' (see --help)", arg);
        }
        }
    }
    if (optind < argc) cli_die(ph, "unexpected argument '%s' (see --help)", argv[optind]);

    if (p.d != 16 && p.d != 32 && p.d != 64 && p.d != 128 && p.d != 256)
        cli_die(ph, "head dimension d=%d is not supported (use 16, 32, 64, 128 or 256)", p.d);
    /* Hkv and Nkv not given: the phase's default problem's, unless H or N was given (then
     * one KV head per head, N_kv = N_q) */
    bool def_kv_heads = !H_given && spec->defaults.H_kv > 0, def_kv_len = !N_given && spec->defaults.N_kv > 0;
    p.H_kv = H_kv > 0 ? H_kv : def_kv_heads ? spec->defaults.H_kv : p.H;
    if (p.H % p.H_kv != 0)
        cli_die(ph, "H=%d is not a multiple of Hkv=%d (each KV head serves H/Hkv query heads)", p.H, p.H_kv);
    p.N_kv = N_kv > 0 ? N_kv : def_kv_len ? spec->defaults.N_kv : p.N_q;
    p.scale = (float)(1.0 / sqrt((double)p.d));

    if (spec->kernels && strcmp(o->kernel, "all") != 0) {
        bool known = false;
        for (const char *const *k = spec->kernels; *k; k++) known |= strcmp(*k, o->kernel) == 0;
        if (!known) cli_die(ph, "unknown kernel '%s' (see --help for the list)", o->kernel);
    }

    double need = host_bytes_needed(&p, spec, o->cpu_only);
    double have = host_memory_bytes();
    if (have > 0 && need > have)
        cli_die(ph, "this problem needs %.1f GiB of host memory but the machine has %.1f GiB",
                need / (1u << 30), have / (1u << 30));

    /* The outputs, last: every other mistake is reported first, and nothing is left behind. */
    char why[PATH_MAX + 128];
    if (o->csv_path) {
        if (!o->csv_path[0]) cli_die(ph, "--csv wants a file path, not an empty string");
        if (probe_file(o->csv_path, why, sizeof why) != 0)
            cli_die(ph, "cannot write the CSV %s: %s", o->csv_path, why);
    } else {
        static char conv[PATH_MAX];                    /* results/<phase>/<phase>.csv */
        snprintf(conv, sizeof conv, "results/%s/%s.csv", ph, ph);
        const char *def = spec->default_csv ? spec->default_csv : conv;
        o->csv_path = (o->sweep && spec->default_sweep_csv) ? spec->default_sweep_csv : def;
        if (probe_file(o->csv_path, why, sizeof why) != 0)
            cli_die(ph, "cannot write the CSV %s (the default; pass --csv FILE): %s", o->csv_path, why);
    }
    if (o->dump_dir) {
        if (!o->dump_dir[0]) cli_die(ph, "--dump wants a folder, not an empty string");
        if (probe_dir(o->dump_dir, why, sizeof why) != 0)
            cli_die(ph, "cannot write the dump into %s: %s", o->dump_dir, why);
    }
    o->p = p;
}

bool cli_kernel_selected(const cli_opts_t *o, const char *name)
{
    return strcmp(o->kernel, "all") == 0 || strcmp(o->kernel, name) == 0;
}
