#define _GNU_SOURCE
#include "csv.h"
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

void machine_info_cpu(machine_info_t *mi)
{
    memset(mi, 0, sizeof *mi);
    snprintf(mi->gpu_name, sizeof mi->gpu_name, "none");
}

void csv_num(FILE *f, const char *fmt, double x)
{
    if (!isnan(x)) fprintf(f, fmt, x);
    fputc(',', f);
}

static void read_command(const char *cmd, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *p = popen(cmd, "r");
    if (!p) return;
    if (!fgets(buf, (int)len, p)) buf[0] = '\0';
    pclose(p);
    buf[strcspn(buf, "\n")] = '\0';
}

void git_commit(char *buf, size_t len)
{
    /* A copy of the tree without .git (e.g. sent to a lent GPU machine) can name its
     * commit through the environment: FA_GIT_COMMIT=$(git rev-parse --short HEAD). */
    const char *env = getenv("FA_GIT_COMMIT");
    if (env && env[0]) { snprintf(buf, len, "%s", env); return; }
    char dirty[8];
    read_command("git rev-parse --short HEAD 2>/dev/null", buf, len);
    if (!buf[0]) { snprintf(buf, len, "unknown"); return; }
    read_command("git status --porcelain --untracked-files=no 2>/dev/null | head -c 1", dirty, sizeof dirty);
    if (dirty[0]) strncat(buf, "-dirty", len - strlen(buf) - 1);
}

/* ---- CSVs being written ------------------------------------------------------------------
 * Each open CSV's temporary, its final name and the folders made for it. A run that ends
 * without csv_close removes them: at exit, or on a signal that would end it (the handler
 * calls only unlink and rmdir, which are async-signal-safe, then dies of the signal as it
 * would have). */
#define CSV_OPEN_MAX 8   /* phase 2 has three open at once */
static struct {
    FILE *f;
    char tmp[OUT_PATH_MAX], dst[OUT_PATH_MAX];
    path_mkdirs_t made;
    volatile sig_atomic_t live;      /* tmp exists and is not renamed yet */
} pending[CSV_OPEN_MAX];

static void discard(int slot)
{
    unlink(pending[slot].tmp);
    path_mkdirs_undo(&pending[slot].made);
    pending[slot].live = 0;
}

static void remove_temporaries(void)
{
    for (int i = CSV_OPEN_MAX - 1; i >= 0; i--)   /* later first: their files may be in a folder an earlier one made */
        if (pending[i].live) discard(i);
}

static void on_fatal_signal(int sig)
{
    remove_temporaries();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void clean_up_at_the_end(void)
{
    static int done;
    if (done) return;
    done = 1;
    atexit(remove_temporaries);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        /* a signal the caller ignores (nohup) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL) sigaction(sigs[i], &sa, NULL);
    }
}

/* Open the temporary for dst (a regular file, or none yet) in dst's folder, registered in
 * slot. The file gets the mode a plain fopen would give it, not mkstemp's 0600. */
static FILE *open_temporary(int slot, const char *dst)
{
    if (snprintf(pending[slot].tmp, OUT_PATH_MAX, "%s" OUT_TEMP_SUFFIX, dst) >= OUT_PATH_MAX) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    snprintf(pending[slot].dst, OUT_PATH_MAX, "%s", dst);
    clean_up_at_the_end();
    sigset_t all, old;   /* no signal between creating the file and recording it */
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    int fd = mkstemp(pending[slot].tmp);
    if (fd >= 0) pending[slot].live = 1;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) return NULL;
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    FILE *f = fdopen(fd, "w");
    if (!f) { int e = errno; close(fd); unlink(pending[slot].tmp); pending[slot].live = 0; errno = e; }
    return f;
}

FILE *csv_open(const char *path, const char *phase, const machine_info_t *mi,
               int argc, char **argv, const char *columns)
{
    int slot = 0;
    while (slot < CSV_OPEN_MAX && pending[slot].f) slot++;
    if (slot == CSV_OPEN_MAX) { fprintf(stderr, "%s: cannot write %s: too many CSVs open\n", phase, path); return NULL; }

    path_mkdirs_t *made = &pending[slot].made;
    char dir[OUT_PATH_MAX], why[OUT_PATH_MAX + 64];
    made->n = 0;
    if (strlen(path) >= sizeof dir) { fprintf(stderr, "%s: cannot write %s: %s\n", phase, path, strerror(ENAMETOOLONG)); return NULL; }
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) { *slash = '\0'; if (dir[0] && path_mkdirs(made, dir, why, sizeof why) != 0) {
        fprintf(stderr, "%s: %s\n", phase, why);
        path_mkdirs_undo(made);
        return NULL; } }

    /* A device or a FIFO (/dev/null) has nothing to keep and no folder to put a temporary
     * in: written directly. A link is followed: the file it names is replaced, not it. */
    struct stat st, lst;
    char *target = NULL;
    FILE *f;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) f = fopen(path, "w");
    else {
        if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) target = realpath(path, NULL);
        f = open_temporary(slot, target ? target : path);
    }
    int saved = errno;
    free(target);
    if (!f) {
        fprintf(stderr, "%s: cannot write %s: %s\n", phase, path, strerror(saved));
        path_mkdirs_undo(made);
        return NULL;
    }
    pending[slot].f = f;

    char commit[64], date[32], cpu[128];
    git_commit(commit, sizeof commit);
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    read_command("grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//'",
                 cpu, sizeof cpu);
    struct utsname u;
    if (uname(&u) != 0) snprintf(u.nodename, sizeof u.nodename, "unknown");

    fprintf(f, "# phase: %s\n", phase);
    fprintf(f, "# gpu: %s | sm_count: %d | sm_clock_mhz: %d | mem_clock_mhz: %d\n",
            mi->gpu_name, mi->sm_count, mi->sm_clock_mhz, mi->mem_clock_mhz);
    fprintf(f, "# cuda_runtime: %d | driver: %d | l2_bytes: %lld | global_mem_bytes: %lld | copy_gbps: %.1f\n",
            mi->cuda_runtime, mi->cuda_driver, mi->l2_bytes, mi->global_mem_bytes, mi->copy_gbps);
    fprintf(f, "# git: %s | date: %s | host: %s | cpu: %s\n", commit, date, u.nodename,
            cpu[0] ? cpu : "unknown");
    fprintf(f, "# command:");
    for (int i = 0; i < argc; i++) fprintf(f, " %s", argv[i]);
    fprintf(f, "\n%s\n", columns);
    return f;
}

int csv_close(FILE *f, const char *path, const char *phase)
{
    if (!f) return 0;
    int slot = 0;
    while (slot < CSV_OPEN_MAX && pending[slot].f != f) slot++;
    int bad = ferror(f);
    int saved = errno;
    if (fclose(f) != 0) { bad = 1; saved = errno; }
    if (slot < CSV_OPEN_MAX) {
        pending[slot].f = NULL;
        if (pending[slot].live && !bad && rename(pending[slot].tmp, pending[slot].dst) != 0) { bad = 1; saved = errno; }
        if (pending[slot].live && bad) discard(slot);   /* a previous file stays as it was */
        pending[slot].live = 0;
        pending[slot].made.n = 0;                       /* its folders are kept now */
    }
    if (!bad) return 0;
    fprintf(stderr, "%s: could not write %s: %s\n", phase, path, saved ? strerror(saved) : "write error");
    return -1;
}
