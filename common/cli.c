#define _GNU_SOURCE
#include "cli.h"
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Inputs (fp16 bits + fp32 copies), an fp32 output, an fp64 reference output, and L. */
static double generic_host_bytes(const attn_problem_t *p)
{
    double nq = (double)p->B * p->H * p->N_q * p->d;
    double nkv = (double)p->B * p->H_kv * p->N_kv * p->d;
    double nl = (double)p->B * p->H * p->N_q;
    return nq * (2 + 4 + 4 + 8) + 2 * nkv * (2 + 4) + nl * (4 + 8);
}

static void usage(const cli_spec_t *s, FILE *f)
{
    fprintf(f, "%s - %s\n\n"
               "usage: %s [--B b] [--H h] [--Hkv h] [--N n] [--Nkv n] [--d d] [--causal]\n"
               "          [--seed s] [--kernel name|all] [--iters k] [--sweep] [--csv file]\n"
               "          [--dump dir] [--cpu] [--quiet]%s [--help]\n\n"
               "  d is one of 16, 32, 64, 128, 256; H must be a multiple of Hkv.\n",
            s->phase, s->summary, s->phase, s->takes_sram ? " [--sram bytes]" : "");
    if (s->kernels) {
        fprintf(f, "  kernels:");
        for (const char *const *k = s->kernels; *k; k++) fprintf(f, " %s", *k);
        fprintf(f, " all\n");
    }
    fprintf(f, "  defaults: --B %d --H %d --N %d --d %d%s --seed 1 --iters 20\n",
            s->defaults.B, s->defaults.H, s->defaults.N_q, s->defaults.d,
            s->defaults.causal ? " --causal" : "");
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
    int H_kv = -1, N_kv = -1;        /* -1: follow H and N */
    o->seed = 1;
    o->kernel = "all";
    o->iters = 20;

    opterr = 0;                      /* we print our own one-line errors */
    optind = 1;
    int c;
    while ((c = getopt_long_only(argc, argv, ":", opts, NULL)) != -1) {
        switch (c) {
        case O_B:      p.B = (int)parse_int(ph, "B", optarg, 1, INT_MAX); break;
        case O_H:      p.H = (int)parse_int(ph, "H", optarg, 1, INT_MAX); break;
        case O_HKV:    H_kv = (int)parse_int(ph, "Hkv", optarg, 1, INT_MAX); break;
        case O_N:      p.N_q = (int)parse_int(ph, "N", optarg, 1, INT_MAX); break;
        case O_NKV:    N_kv = (int)parse_int(ph, "Nkv", optarg, 1, INT_MAX); break;
        case O_D:      p.d = (int)parse_int(ph, "d", optarg, 1, INT_MAX); break;
        case O_CAUSAL: p.causal = true; break;
        case O_SEED:   o->seed = (uint64_t)parse_int(ph, "seed", optarg, 0, LLONG_MAX); break;
        case O_KERNEL: o->kernel = optarg; break;
        case O_ITERS:  o->iters = (int)parse_int(ph, "iters", optarg, 1, 100000); break;
        case O_SWEEP:  o->sweep = true; break;
        case O_CSV:    o->csv_path = optarg; break;
        case O_DUMP:   o->dump_dir = optarg; break;
        case O_CPU:    o->cpu_only = true; break;
        case O_QUIET:  o->quiet = true; break;
        case O_SRAM:
            if (!spec->takes_sram) cli_die(ph, "unknown option '--sram' (see --help)");
            o->sram_bytes = parse_int(ph, "sram", optarg, 1024, 1LL << 30);
            break;
        case O_HELP:   usage(spec, stdout); exit(0);
        case ':':      cli_die(ph, "option '%s' needs a value (see --help)", argv[optind - 1]);
        default:       cli_die(ph, "unknown option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) cli_die(ph, "unexpected argument '%s' (see --help)", argv[optind]);

    if (p.d != 16 && p.d != 32 && p.d != 64 && p.d != 128 && p.d != 256)
        cli_die(ph, "head dimension d=%d is not supported (use 16, 32, 64, 128 or 256)", p.d);
    p.H_kv = H_kv > 0 ? H_kv : p.H;                     /* default: one KV head per head */
    if (p.H % p.H_kv != 0)
        cli_die(ph, "H=%d is not a multiple of Hkv=%d (each KV head serves H/Hkv query heads)", p.H, p.H_kv);
    p.N_kv = N_kv > 0 ? N_kv : p.N_q;
    p.scale = (float)(1.0 / sqrt((double)p.d));

    if (spec->kernels && strcmp(o->kernel, "all") != 0) {
        bool known = false;
        for (const char *const *k = spec->kernels; *k; k++) known |= strcmp(*k, o->kernel) == 0;
        if (!known) cli_die(ph, "unknown kernel '%s' (see --help for the list)", o->kernel);
    }

    double need = spec->host_bytes ? spec->host_bytes(&p, o) : generic_host_bytes(&p);
    double have = host_memory_bytes();
    if (have > 0 && need > have)
        cli_die(ph, "this problem needs %.1f GiB of host memory but the machine has %.1f GiB",
                need / (1u << 30), have / (1u << 30));
    o->p = p;
}

bool cli_kernel_selected(const cli_opts_t *o, const char *name)
{
    return strcmp(o->kernel, "all") == 0 || strcmp(o->kernel, name) == 0;
}
