/* cleanup.h - outputs a run is in the middle of writing, removed when it ends before they
 * are complete: at exit() (silently), or on a signal that would end it.
 *
 * The signals: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2,
 * SIGXFSZ (a file over `ulimit -f`), SIGXCPU and SIGVTALRM; one that the caller ignores
 * (nohup, trap '' PIPE) stays ignored. The handler runs every registered function (they
 * call only async-signal-safe functions: unlink, rmdir), says on stderr in one line
 * "<phase>: stopped by SIGPIPE: the partial results were dropped (N unfinished files
 * removed)" when it removed anything, then dies of the signal as it would have.
 * Only SIGKILL (and SIGSTOP's company) can leave a partial output behind. */
#ifndef COMMON_CLEANUP_H
#define COMMON_CLEANUP_H
/* Removes what it has in progress; returns how many files it removed. Async-signal-safe. */
typedef int (*cleanup_fn)(void);
/* Register fn (once per fn; at most a few) and install the handlers on the first call. */
void cleanup_register(cleanup_fn fn);
/* The name the signal line starts with ("phase1"); cli_parse sets it. */
void cleanup_set_name(const char *phase);
#endif
