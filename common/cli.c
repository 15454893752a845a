#define _GNU_SOURCE
#include "cli.h"
#include "cleanup.h"
#include "dump.h"
#include "gpu.h"
#include "path.h"
#include <errno.h>
#include <math.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
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

/* A number is plain decimal digits: strtoll alone would also take "+2", " 2" and "-0". */
static long long parse_int(const char *phase, const char *flag, const char *s,
                           long long lo, long long hi)
{
    bool digits = s[0] != '\0';
    for (const char *c = s; *c; c++) digits &= *c >= '0' && *c <= '9';
    errno = 0;
    long long v = digits ? strtoll(s, NULL, 10) : 0;
    if (!digits || errno || v < lo || v > hi)
        cli_die(phase, "--%s wants a whole number in [%lld, %lld] in plain decimal digits, got '%s'",
                flag, lo, hi, s);
    return v;
}

/* A real number is plain decimal: an optional '-', digits with an optional fraction (or a
 * fraction alone), an optional exponent: "-1.5", "2", ".5", "1e3". strtof alone would also
 * take " 1", "+1", "0x10", "inf" and "nan". */
static bool plain_decimal(const char *s)
{
    const char *c = s + (*s == '-');
    size_t whole = strspn(c, "0123456789"), frac = 0;
    c += whole;
    if (*c == '.') { frac = strspn(c + 1, "0123456789"); c += 1 + frac; }
    if (whole + frac == 0) return false;
    if (*c == 'e' || *c == 'E') {
        c += 1 + (c[1] == '-' || c[1] == '+');
        size_t exp = strspn(c, "0123456789");
        if (exp == 0) return false;
        c += exp;
    }
    return *c == '\0';
}

static float parse_real(const char *phase, const char *flag, const char *s, float most, const char *most_text)
{
    const float f = plain_decimal(s) ? strtof(s, NULL) : NAN;
    if (!isfinite(f) || fabsf(f) > most)
        cli_die(phase, "--%s needs a finite number of magnitude at most %s, in plain decimal (-1.5, 2, 1e3), got '%s'",
                flag, most_text, s);
    return f;
}

/* The host memory a run allocates (problem.h, attn_host_bytes): the CPU rows' problem
 * (attn_small_like: within the CPU bound, whatever p is), and, when a GPU runs, the GPU
 * rows' host buffers of the whole problem p. With --cpu, or without a usable GPU, a
 * problem far beyond this machine still runs its CPU rows on a smaller one. */
/* Will this run have GPU rows: a phase with a GPU kernel (phase 0 has none), no --cpu,
 * and a usable device. */
static bool gpu_rows_run(const cli_spec_t *spec, bool cpu_only)
{
    bool gpu_rows = false;
    for (const char *const *k = spec->kernels; k && *k; k++) gpu_rows |= strcmp(*k, "cpu") != 0;
    char why[8];
    return gpu_rows && !cpu_only && gpu_available(why, sizeof why);
}

static double host_bytes_needed(const attn_problem_t *p, const cli_spec_t *spec, bool cpu_only)
{
    attn_problem_t pc = attn_small_like(p, INFINITY);   /* the largest the CPU rows run */
    double need = attn_host_bytes(&pc, ATTN_HOST_CPU_ROWS);
    if (gpu_rows_run(spec, cpu_only)) need += attn_host_bytes(p, ATTN_HOST_GPU_ROWS);
    return need;
}

/* ---- output probes ---------------------------------------------------------------------
 * What a probe creates it removes again: the folders it had to make (deepest first) and
 * the file it created. An existing file is opened for append and closed, unchanged. Both
 * run after path_check_*: every path they build fits in OUT_PATH_MAX. */

/* Folders are made for an output only inside the results tree (results/ of the current
 * folder: the default CSVs and `make phaseN run` write there), and, for --dump DIR, DIR
 * itself (the folder the user named). Anywhere else a missing folder is a typo as often
 * as not (--csv /nonexistent/x.csv, run as root, would make /nonexistent): refused.
 * 0, or -1 with why. */
static int may_make(const char *dir, bool named, char *why, size_t len)
{
    char missing[OUT_PATH_MAX];
    int k = path_first_missing(dir, missing);
    if (k == 0 || (k == 2 && named) || path_within(dir, "results")) return 0;
    snprintf(why, len, "the folder %s does not exist (folders are made only under results/%s: "
             "make it first)", missing, named ? " and for --dump DIR itself" : "");
    return -1;
}

/* Could a CSV be written at path: its folders made, its temporary created in its folder
 * (csv.c writes there, then renames), an existing file writable? An existing file that is
 * not a regular one (/dev/null, a FIFO with a reader) is written directly: it must take a
 * write of no bytes (/dev/full refuses it with ENOSPC; nothing is written). 0, or -1
 * with why. */
static int probe_file(const char *path, char *why, size_t len)
{
    path_mkdirs_t made = { .n = 0 };
    char dir[OUT_PATH_MAX], tmp[OUT_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash[1] == '\0') { snprintf(why, len, "names a folder, not a file"); return -1; }
    if (slash && slash != dir) {
        *slash = '\0';
        if (may_make(dir, false, why, len) != 0) return -1;
        if (path_mkdirs(&made, dir, why, len) != 0) { path_mkdirs_undo(&made); return -1; }
    }
    int rc = 0;
    struct stat st;
    bool exists = stat(path, &st) == 0, regular = !exists || S_ISREG(st.st_mode);
    if (exists && S_ISDIR(st.st_mode)) { snprintf(why, len, "it is a folder"); rc = -1; }
    else if (!exists && errno != ENOENT) { snprintf(why, len, "%s", strerror(errno)); rc = -1; }
    else if (exists) {
        int fd = open(path, O_WRONLY | O_APPEND | O_NONBLOCK);
        if (fd < 0) { snprintf(why, len, "%s", strerror(errno)); rc = -1; }
        else {
            if (!regular && write(fd, "", 0) != 0) { snprintf(why, len, "%s", strerror(errno)); rc = -1; }
            close(fd);
        }
    }
    if (rc == 0 && regular) {   /* a device (/dev/null) is written directly, no temporary */
        snprintf(tmp, sizeof tmp, "%s" OUT_TEMP_SUFFIX, path);
        int fd = mkstemp(tmp);
        if (fd < 0) { snprintf(why, len, "%s", strerror(errno)); rc = -1; }
        else { close(fd); unlink(tmp); }
    }
    path_mkdirs_undo(&made);
    return rc;
}

/* Could the dump be written into folder dir (made with mkdir -p), each of its files
 * (ATTN_DUMP_FILES) replaced? A file of that name that is there must be a regular file or
 * a link (attn_dump removes it first): a folder D/Q.npy is refused. 0, or -1 with why. */
static int probe_dir(const char *dir, char *why, size_t len)
{
    path_mkdirs_t made = { .n = 0 };
    char tmp[OUT_PATH_MAX];
    int rc = 0;
    if (may_make(dir, true, why, len) != 0) return -1;
    if (path_mkdirs(&made, dir, why, len) != 0) { path_mkdirs_undo(&made); return -1; }
    snprintf(tmp, sizeof tmp, "%s/.probe" OUT_TEMP_SUFFIX, dir);
    int fd = mkstemp(tmp);
    if (fd < 0) { snprintf(why, len, "cannot write into %s: %s", dir, strerror(errno)); rc = -1; }
    else { close(fd); unlink(tmp); }
    for (int i = 0; rc == 0 && ATTN_DUMP_FILES[i]; i++) {
        struct stat st;
        path_join(tmp, dir, ATTN_DUMP_FILES[i]);   /* fits: path_check_folder kept room */
        if (lstat(tmp, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
            snprintf(why, len, "%s is %s, not a file the dump can replace", tmp,
                     S_ISDIR(st.st_mode) ? "a folder" : "not a regular file");
            rc = -1;
        }
    }
    path_mkdirs_undo(&made);
    return rc;
}

/* A path as an error line shows it: whole, or its start when it is too long to read. */
static const char *shown(const char *path, char *buf, size_t len)
{
    if (strlen(path) <= 80) return path;
    snprintf(buf, len, "%.60s... (%zu characters)", path, strlen(path));
    return buf;
}

/* Where the path holds a control character (a newline would split the CSV's "# command:"
 * line and every line that names the path), or -1. */
static long control_at(const char *path)
{
    for (const unsigned char *c = (const unsigned char *)path; *c; c++)
        if (*c < 0x20 || *c == 0x7f) return (long)(c - (const unsigned char *)path);
    return -1;
}

/* Why the CSV and the dump folder cannot both be written, or NULL. The dump owns its
 * folder (Q.npy, K.npy, ... and tools/check_numpy.py reads the folder whole), so the CSV
 * may be neither that folder, nor a folder above it, nor anything inside it. */
static const char *outputs_collide(const char *csv, const char *dump)
{
    if (path_within(dump, csv)) return "is the dump folder %s or a folder above it";
    if (path_within(csv, dump)) return "is inside the dump folder %s (put the CSV beside it)";
    return NULL;
}

/* The CSV (o->csv_path, resolved), the files written beside it (spec->siblings, and
 * spec->sweep_siblings with --sweep) and the dump folder: room for every file they will
 * write, none in another's way, then each probed. Nothing is created or left behind.
 * Sets o->csv_dir: the CSV's folder, or NULL when the CSV is not a regular file (then
 * nothing is written beside it). */
static void check_outputs(const char *ph, const cli_spec_t *spec, cli_opts_t *o, bool csv_default)
{
    char why[OUT_PATH_MAX + 256], a[128], b[128];
    const char *csv = o->csv_path, *dump = o->dump_dir;
    const char *hint = csv_default ? " (the default; pass --csv FILE)" : "";
    long at;
    if (!csv[0]) cli_die(ph, "--csv wants a file path, not an empty string");
    if (dump && !dump[0]) cli_die(ph, "--dump wants a folder, not an empty string");
    if ((at = control_at(csv)) >= 0)
        cli_die(ph, "--csv: the path holds a control character (byte 0x%02x at offset %ld): refused",
                (unsigned char)csv[at], at);
    if (dump && (at = control_at(dump)) >= 0)
        cli_die(ph, "--dump: the path holds a control character (byte 0x%02x at offset %ld): refused",
                (unsigned char)dump[at], at);
    if (path_check_file(csv, why, sizeof why) != 0)
        cli_die(ph, "cannot write the CSV %s%s: %s", shown(csv, a, sizeof a), hint, why);
    if (dump && path_check_folder(dump, why, sizeof why) != 0)
        cli_die(ph, "cannot write the dump into %s: %s", shown(dump, a, sizeof a), why);
    const char *clash = dump ? outputs_collide(csv, dump) : NULL;
    if (clash) {
        char what[160];
        snprintf(what, sizeof what, clash, shown(dump, b, sizeof b));
        cli_die(ph, "the CSV %s%s %s: write the CSV elsewhere", shown(csv, a, sizeof a), hint, what);
    }
    if (probe_file(csv, why, sizeof why) != 0)
        cli_die(ph, "cannot write the CSV %s%s: %s", csv, hint, why);

    /* the CSVs beside it: in its folder, when it is a regular file (or a new one), not in /dev */
    static char dir[OUT_PATH_MAX];
    struct stat st;
    o->csv_dir = NULL;
    if (stat(csv, &st) != 0 || S_ISREG(st.st_mode)) {
        snprintf(dir, sizeof dir, "%s", csv);
        char *slash = strrchr(dir, '/');
        if (!slash) snprintf(dir, sizeof dir, ".");
        else if (slash == dir) dir[1] = '\0';   /* "/x.csv": the root */
        else *slash = '\0';
        /* never beside a path in /dev (/dev/stdout links to a regular file when redirected) */
        o->csv_dir = path_within(dir, "/dev") ? NULL : dir;
    }
    for (int set = 0; o->csv_dir && set < 2; set++) {
        const char *const *names = set == 0 ? spec->siblings : o->sweep ? spec->sweep_siblings : NULL;
        for (int i = 0; names && names[i]; i++) {
            char sib[OUT_PATH_MAX];
            path_join(sib, dir, names[i]);   /* fits: path_check_file kept room for a NAME beside it */
            char *x = path_normalise(sib), *y = path_normalise(csv);
            bool same = x && y && strcmp(x, y) == 0;
            free(x); free(y);
            if (same)
                cli_die(ph, "the CSV %s%s is the name of a file %s writes beside it: name the CSV otherwise",
                        shown(csv, a, sizeof a), hint, ph);
            clash = dump ? outputs_collide(sib, dump) : NULL;
            if (clash) {
                char what[160];
                snprintf(what, sizeof what, clash, shown(dump, b, sizeof b));
                cli_die(ph, "%s, written beside the CSV, %s: write the CSV elsewhere", sib, what);
            }
            if (probe_file(sib, why, sizeof why) != 0)
                cli_die(ph, "cannot write %s (beside the CSV %s%s): %s", sib, shown(csv, a, sizeof a), hint, why);
        }
    }
    if (dump && probe_dir(dump, why, sizeof why) != 0)
        cli_die(ph, "cannot write the dump into %s: %s", dump, why);
}

static void usage(const cli_spec_t *s, FILE *f)
{
    fprintf(f, "%s - %s\n\n"
               "usage: %s [--B b] [--H h] [--Hkv h] [--N n] [--Nkv n] [--d d] [--causal]\n"
               "          [--seed s] [--kernel name|all] [--iters k] [--sweep] [--csv file]\n"
               "          %s[--cpu] [--quiet]%s%s [--help]\n\n"
               "  d is one of 16, 32, 64, 128, 256; H must be a multiple of Hkv.\n",
            s->phase, s->summary, s->phase, s->no_dump ? "" : "[--dump dir] ",
            s->takes_sram ? " [--sram bytes]" : "", s->takes_mask ? " [--mask name[:p,...]]" : s->takes_phi ? " [--phi x]" : "");
    if (s->takes_mask) fprintf(f, "  masks (FlashMask's, common/mask.h): %s\n", mask_known_names());
    if (s->kernels) {
        fprintf(f, "  kernels:");
        for (const char *const *k = s->kernels; *k; k++) fprintf(f, " %s", *k);
        fprintf(f, " all\n");
    }
    fprintf(f, "  defaults: --B %d --H %d --N %d --d %d%s --seed 1 --iters 20\n",
            s->defaults.B, s->defaults.H, s->defaults.N_q, s->defaults.d,
            s->defaults.causal ? " --causal" : "");
    char conv[OUT_PATH_MAX];
    snprintf(conv, sizeof conv, "results/%s/%s.csv", s->phase, s->phase);
    const char *def = s->default_csv ? s->default_csv : conv;
    fprintf(f, "  --csv defaults to %s", def);
    if (s->default_sweep_csv) fprintf(f, " (with --sweep: %s)", s->default_sweep_csv);
    fprintf(f, "; outputs are checked writable before any work,\n"
               "  and missing folders are made only under results/ (and for --dump DIR itself).\n");
}

/* ---- the options ------------------------------------------------------------------------
 * "--name value", "--name=value", and one dash as well as two (-B 2). A name may be
 * shortened to any prefix that names one option (--it 5); a flag takes no value or one
 * of 1, 0, true, false (--causal=0 turns a phase's causal default off). */
enum { O_B, O_H, O_HKV, O_N, O_NKV, O_D, O_CAUSAL, O_SEED, O_KERNEL, O_ITERS, O_SWEEP,
       O_CSV, O_DUMP, O_CPU, O_QUIET, O_SRAM, O_MASK, O_PHI, O_HELP, O_COUNT };
typedef enum { A_FLAG, A_INT, A_TEXT } arg_kind_t;
static const struct { const char *name; arg_kind_t kind; long long lo, hi; } OPTS[O_COUNT] = {
    [O_B] = {"B", A_INT, 1, INT_MAX},           [O_H] = {"H", A_INT, 1, INT_MAX},
    [O_HKV] = {"Hkv", A_INT, 1, INT_MAX},       [O_N] = {"N", A_INT, 1, INT_MAX},
    [O_NKV] = {"Nkv", A_INT, 1, INT_MAX},       [O_D] = {"d", A_INT, 1, INT_MAX},
    [O_CAUSAL] = {"causal", A_FLAG, 0, 0},      [O_SEED] = {"seed", A_INT, 0, LLONG_MAX},
    [O_KERNEL] = {"kernel", A_TEXT, 0, 0},      [O_ITERS] = {"iters", A_INT, 1, 100000},
    [O_SWEEP] = {"sweep", A_FLAG, 0, 0},        [O_CSV] = {"csv", A_TEXT, 0, 0},
    [O_DUMP] = {"dump", A_TEXT, 0, 0},          [O_CPU] = {"cpu", A_FLAG, 0, 0},
    [O_QUIET] = {"quiet", A_FLAG, 0, 0},        [O_SRAM] = {"sram", A_INT, 1024, 1LL << 30},
    [O_MASK] = {"mask", A_TEXT, 0, 0},          [O_PHI] = {"phi", A_TEXT, 0, 0},
    [O_HELP] = {"help", A_FLAG, 0, 0},
};

/* Why this phase does not take option id, or NULL when it does. */
static const char *not_taken(const cli_spec_t *spec, int id)
{
    if (id == O_SRAM && !spec->takes_sram) return "it sets the SRAM size of phase 3's tiles";
    if (id == O_KERNEL && !spec->kernels) return "there are no kernels to pick from";
    if (id == O_DUMP && spec->no_dump) return "it writes no tensor dump";
    if (id == O_MASK && !spec->takes_mask) return "this phase's kernels have no mask path (--causal is its mask)";
    if (id == O_PHI && !spec->takes_phi) return "it sets FlashDecoding++'s unified max (phase 6)";
    return NULL;
}

/* The option that arg ("--nam" of "--nam=x") names: the one so called, else the one it is
 * a prefix of among those this phase takes. Anything else: one line that quotes arg. */
static int find_option(const char *ph, const cli_spec_t *spec, const char *arg)
{
    const char *name = arg + strspn(arg, "-");
    int n = (int)strcspn(name, "="), typed = (int)(name - arg) + n, found = -1, count = 0;
    char names[160] = "";
    for (int id = 0; id < O_COUNT && n > 0; id++) {
        if (strncmp(OPTS[id].name, name, (size_t)n) != 0) continue;
        if (OPTS[id].name[n] == '\0') {                /* exactly its name */
            if (not_taken(spec, id))
                cli_die(ph, "--%s is not taken here: %s", OPTS[id].name, not_taken(spec, id));
            return id;
        }
        if (not_taken(spec, id)) continue;
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s--%s", count ? ", " : "", OPTS[id].name);
        found = id;
        count++;
    }
    if (count > 1) cli_die(ph, "ambiguous option '%.*s': it could be %s (see --help)", typed, arg, names);
    if (count == 0) cli_die(ph, "unknown option '%.*s' (see --help)", typed, arg);
    return found;
}

static bool parse_flag(const char *ph, int id, const char *v)
{
    if (!v || strcmp(v, "1") == 0 || strcmp(v, "true") == 0) return true;
    if (strcmp(v, "0") == 0 || strcmp(v, "false") == 0) return false;
    cli_die(ph, "--%s is a flag: give it alone, or as --%s=1, =0, =true or =false; got '%s'",
            OPTS[id].name, OPTS[id].name, v);
}

/* With --sweep, each option given must be one the sweep honours (spec->sweep_takes, plus
 * --sweep, --csv, --cpu, --quiet, --help): any other is refused, never silently ignored. */
static void check_sweep_options(const cli_spec_t *spec, const bool given[O_COUNT])
{
    if (!spec->sweep_takes) cli_die(spec->phase, "--sweep is not taken here: %s has no sweep", spec->phase);
    char takes[256], word[32], list[256] = "", copy[256];
    snprintf(takes, sizeof takes, " sweep csv cpu quiet help %s ", spec->sweep_takes);
    snprintf(copy, sizeof copy, "%s", spec->sweep_takes);
    for (char *t = strtok(copy, " "); t; t = strtok(NULL, " "))
        snprintf(list + strlen(list), sizeof list - strlen(list), "--%s, ", t);
    for (int id = 0; id < O_COUNT; id++) {
        snprintf(word, sizeof word, " %s ", OPTS[id].name);
        if (given[id] && !strstr(takes, word))
            cli_die(spec->phase, "--sweep runs its own problems and ignores --%s (it takes %s--csv, --cpu, --quiet)",
                    OPTS[id].name, list);
    }
}

void cli_parse(int argc, char **argv, const cli_spec_t *spec, cli_opts_t *o)
{
    const char *ph = spec->phase;
    cleanup_set_name(ph);   /* the line a signal that ends the run prints (cleanup.h) */
    memset(o, 0, sizeof *o);
    attn_problem_t p = spec->defaults;
    int H_kv = -1, N_kv = -1;        /* -1: not given */
    bool given[O_COUNT] = { false };
    const char *mask_spec = NULL;
    o->seed = 1;
    o->kernel = "all";
    o->iters = 20;

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {                   /* the end of the options */
            if (i + 1 < argc) cli_die(ph, "unexpected argument '%s' (see --help)", argv[i + 1]);
            break;
        }
        if (arg[0] != '-' || arg[1] == '\0') cli_die(ph, "unexpected argument '%s' (see --help)", arg);
        int id = find_option(ph, spec, arg);
        const char *eq = strchr(arg, '='), *v = eq ? eq + 1 : NULL;
        if (OPTS[id].kind != A_FLAG && !v) {
            if (i + 1 >= argc) cli_die(ph, "option '--%s' needs a value (see --help)", OPTS[id].name);
            v = argv[++i];
        }
        given[id] = true;
        long long x = OPTS[id].kind == A_INT ? parse_int(ph, OPTS[id].name, v, OPTS[id].lo, OPTS[id].hi) : 0;
        bool on = OPTS[id].kind == A_FLAG && parse_flag(ph, id, v);
        switch (id) {
        case O_B:      p.B = (int)x; break;
        case O_H:      p.H = (int)x; break;
        case O_HKV:    H_kv = (int)x; break;
        case O_N:      p.N_q = (int)x; break;
        case O_NKV:    N_kv = (int)x; break;
        case O_D:      p.d = (int)x; break;
        case O_CAUSAL: p.causal = on; break;
        case O_SEED:   o->seed = (uint64_t)x; break;
        case O_KERNEL: o->kernel = v; break;
        case O_ITERS:  o->iters = (int)x; break;
        case O_SWEEP:  o->sweep = on; break;
        case O_CSV:    o->csv_path = v; break;
        case O_DUMP:   o->dump_dir = v; break;
        case O_CPU:    o->cpu_only = on; break;
        case O_QUIET:  o->quiet = on; break;
        case O_SRAM:   o->sram_bytes = x; break;
        case O_MASK:   mask_spec = v; break;
        case O_PHI:    o->phi = parse_real(ph, "phi", v, 1e4f, "10^4"); o->phi_given = true; break;
        case O_HELP:   if (on) { usage(spec, stdout); exit(0); } break;
        }
    }

    if (o->sweep) check_sweep_options(spec, given);
    /* what a sweep that takes --d or --causal was given (phase 4: the points it runs) */
    o->sweep_d = o->sweep && given[O_D] ? p.d : 0;
    o->sweep_causal = o->sweep && given[O_CAUSAL] ? (int)p.causal : -1;

    if (p.d != 16 && p.d != 32 && p.d != 64 && p.d != 128 && p.d != 256)
        cli_die(ph, "head dimension d=%d is not supported (use 16, 32, 64, 128 or 256)", p.d);
    /* Hkv and Nkv not given: the phase's default problem's, unless H or N was given (then
     * one KV head per head, N_kv = N_q) */
    bool def_kv_heads = !given[O_H] && spec->defaults.H_kv > 0, def_kv_len = !given[O_N] && spec->defaults.N_kv > 0;
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
    /* --mask: its four vectors are built for the problem asked for (the GPU rows need them;
     * the CPU rows sample them to their smaller problem), random_eviction's cache beside */
    const double mask_b = mask_spec ? mask_build_bytes(mask_spec, p.N_kv) : 0;
    need += mask_b;
    double have = host_memory_bytes();
    if (have > 0 && need > have)
        cli_die(ph, "this problem needs %.1f GiB of host memory but the machine has %.1f GiB",
                need / (1u << 30), have / (1u << 30));
    if (mask_b > CLI_MASK_CPU_MAX_BYTES && !gpu_rows_run(spec, o->cpu_only))
        cli_die(ph, "--mask at N_kv = %d builds %.1f GiB of vectors, but a run without GPU rows builds at most %.0f MiB "
                "of them (its CPU rows run a 256-key sample): use a smaller --N/--Nkv", p.N_kv,
                mask_b / (1u << 30), CLI_MASK_CPU_MAX_BYTES / (1u << 20));

    /* The outputs, last: every other mistake is reported first, and nothing is left behind. */
    bool csv_default = !o->csv_path;
    if (csv_default) {
        static char conv[OUT_PATH_MAX];                 /* results/<phase>/<phase>.csv */
        snprintf(conv, sizeof conv, "results/%s/%s.csv", ph, ph);
        const char *def = spec->default_csv ? spec->default_csv : conv;
        o->csv_path = (o->sweep && spec->default_sweep_csv) ? spec->default_sweep_csv : def;
    }
    /* no signal while a probe has a folder or a temporary made: one that arrives waits until
     * the probes have removed them (and then ends the run as it would have, leaving nothing) */
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    check_outputs(ph, spec, o, csv_default);
    sigprocmask(SIG_SETMASK, &old, NULL);
    /* --mask NAME[:p,...]: built for this N_q x N_kv (common/mask.h); last, as it allocates */
    if (mask_spec) {
        if (p.causal) cli_die(ph, "--mask and --causal together: the causal mask is --mask causal (or --causal alone)");
        static attn_mask_t mask;
        char why[200];
        if (mask_parse(mask_spec, p.N_q, p.N_kv, &mask, why, sizeof why) != 0) cli_die(ph, "%s", why);
        p.mask_id = mask_register(&mask);
    }
    o->p = p;
}

bool cli_kernel_selected(const cli_opts_t *o, const char *name)
{
    return strcmp(o->kernel, "all") == 0 || strcmp(o->kernel, name) == 0;
}
