/* cleanup.c - partial outputs removed at exit and on fatal signals (cleanup.h). */
#define _GNU_SOURCE
#include "cleanup.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLEANUP_MAX 4
static cleanup_fn fns[CLEANUP_MAX];
static volatile sig_atomic_t nfns;
static char name[64] = "fa";

static const struct { int sig; const char *name; } SIGNALS[] = {
    {SIGINT, "SIGINT"}, {SIGTERM, "SIGTERM"}, {SIGHUP, "SIGHUP"}, {SIGQUIT, "SIGQUIT"},
    {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"},
    {SIGXFSZ, "SIGXFSZ"}, {SIGXCPU, "SIGXCPU"}, {SIGVTALRM, "SIGVTALRM"},
};
#define NSIGNALS (sizeof SIGNALS / sizeof SIGNALS[0])

void cleanup_set_name(const char *phase) { snprintf(name, sizeof name, "%s", phase); }

static int run_all(void)
{
    int removed = 0;
    for (int i = nfns - 1; i >= 0; i--) removed += fns[i]();   /* later first */
    return removed;
}

static void at_exit(void) { run_all(); }

/* Async-signal-safe: unlink and rmdir (in the functions), write, signal, raise. */
static void on_fatal_signal(int sig)
{
    int removed = run_all();
    if (removed > 0) {
        char line[256], num[16];
        const char *signame = "a signal";
        for (size_t i = 0; i < NSIGNALS; i++) if (SIGNALS[i].sig == sig) signame = SIGNALS[i].name;
        int k = (int)sizeof num;
        num[--k] = '\0';
        do { num[--k] = (char)('0' + removed % 10); removed /= 10; } while (removed && k > 0);
        const char *parts[] = {name, ": stopped by ", signame, ": the partial results were dropped (",
                               num + k, strcmp(num + k, "1") ? " unfinished files removed)\n"
                                                             : " unfinished file removed)\n"};
        size_t n = 0;
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
            for (const char *c = parts[i]; *c && n < sizeof line; c++) line[n++] = *c;
        ssize_t w = write(STDERR_FILENO, line, n);
        (void)w;
    }
    signal(sig, SIG_DFL);
    raise(sig);   /* blocked in the handler: delivered, with the default action, on return */
}

void cleanup_register(cleanup_fn fn)
{
    for (int i = 0; i < nfns; i++) if (fns[i] == fn) return;
    if (nfns == CLEANUP_MAX) { fprintf(stderr, "%s: cleanup_register: too many\n", name); abort(); }
    if (nfns == 0) {
        atexit(at_exit);
        for (size_t i = 0; i < NSIGNALS; i++) {
            struct sigaction old, sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_fatal_signal;
            sigfillset(&sa.sa_mask);   /* one handler at a time: a second signal waits */
            /* a signal the caller ignores (nohup, trap '' PIPE) stays ignored */
            if (sigaction(SIGNALS[i].sig, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
                sigaction(SIGNALS[i].sig, &sa, NULL);
        }
    }
    fns[nfns] = fn;
    nfns = nfns + 1;
}
