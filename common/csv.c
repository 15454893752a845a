#define _POSIX_C_SOURCE 200809L
#include "csv.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>

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

int mkdir_p(const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *s = buf + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
        *s = '/';
    }
    return (mkdir(buf, 0755) == 0 || errno == EEXIST) ? 0 : -1;
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

FILE *csv_open(const char *path, const char *phase, const machine_info_t *mi,
               int argc, char **argv, const char *columns)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) { *slash = '\0'; if (dir[0] && mkdir_p(dir) != 0) {
        fprintf(stderr, "%s: cannot create folder %s: %s\n", phase, dir, strerror(errno));
        return NULL; } }
    FILE *f = fopen(path, "w");
    if (!f) { fprintf(stderr, "%s: cannot write %s: %s\n", phase, path, strerror(errno)); return NULL; }

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
    int bad = ferror(f);
    int saved = errno;
    if (fclose(f) != 0) { bad = 1; saved = errno; }
    if (!bad) return 0;
    fprintf(stderr, "%s: could not write %s: %s\n", phase, path, saved ? strerror(saved) : "write error");
    return -1;
}
