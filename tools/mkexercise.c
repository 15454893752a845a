/* mkexercise.c - cut the solutions out of a marked source file.
 *
 *   mkexercise [--only NAME] [--list] [--solutions] FILE
 *
 * writes the fill-in version of FILE to stdout (--list: the exercise names; --solutions:
 * the reference lines that the fill-in version cuts, for the test that greps a handout).
 *
 * A marked region in a .c/.cu/.h file looks like this:
 *
 *       / * EXERCISE p0.softmax: normalise one row with the safe softmax
 *        * HINT: subtract the row max before exp(), then divide by the sum * /
 *       ... the reference lines ...
 *       / * STUB: l = 1.0; * /           (optional, any number: code the skeleton keeps
 *                                          so that it still compiles)
 *       / * END EXERCISE * /
 *
 * (written here with "/ *" so this comment does not end early). The fill-in version
 * keeps the opening comment as a TODO ("/ * TODO EXERCISE p0.softmax: ..."), drops the
 * reference lines, turns each STUB comment into code and ends the region with
 * "/ * END EXERCISE p0.softmax * /" (its name: a region whose lines between are still the
 * stub is not filled in, tools/exercises.sh unfilled). --only NAME cuts only that exercise (the tests use it to show each
 * one on its own makes the phase's check fail); --list prints the exercise names.
 * Exit 2 on a malformed file (unterminated region, nested regions).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINE 4096

static const char *skip_space(const char *s) { while (*s == ' ' || *s == '\t') s++; return s; }

/* Is this line the start of a region? Copies the exercise name into name. */
static int is_begin(const char *line, char *name, size_t len)
{
    const char *s = skip_space(line);
    if (strncmp(s, "/* EXERCISE ", 12) != 0) return 0;
    s += 12;
    size_t n = strcspn(s, ": \n");
    if (n == 0 || n >= len) return 0;
    memcpy(name, s, n);
    name[n] = '\0';
    return 1;
}

static int is_end(const char *line) { return strncmp(skip_space(line), "/* END EXERCISE */", 18) == 0; }

/* "/ * STUB: code * /" -> code (with the line's indentation), else NULL. */
static int stub_code(const char *line, char *out, size_t len)
{
    const char *s = skip_space(line);
    if (strncmp(s, "/* STUB: ", 9) != 0) return 0;
    const char *code = s + 9, *end = strstr(code, " */");
    if (!end) return 0;
    snprintf(out, len, "%.*s%.*s\n", (int)(s - line), line, (int)(end - code), code);
    return 1;
}

int main(int argc, char **argv)
{
    const char *only = NULL, *path = NULL;
    int list = 0, solutions = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else if (strcmp(argv[i], "--list") == 0) list = 1;
        else if (strcmp(argv[i], "--solutions") == 0) solutions = list = 1;
        else if (argv[i][0] != '-' && !path) path = argv[i];
        else { fprintf(stderr, "usage: mkexercise [--only NAME] [--list] [--solutions] FILE\n"); return 2; }
    }
    if (!path) { fprintf(stderr, "usage: mkexercise [--only NAME] [--list] [--solutions] FILE\n"); return 2; }
    FILE *f = fopen(path, "r");
    if (!f) { fprintf(stderr, "mkexercise: cannot read %s\n", path); return 2; }

    char line[MAX_LINE], name[256], stub[MAX_LINE];
    int in_region = 0, cutting = 0, in_head = 0, lineno = 0, begin_line = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (is_begin(line, name, sizeof name)) {
            if (in_region) { fprintf(stderr, "%s:%d: EXERCISE inside EXERCISE\n", path, lineno); return 2; }
            in_region = 1; begin_line = lineno;
            cutting = !only || strcmp(only, name) == 0;
            in_head = strstr(line, "*/") == NULL;          /* the comment goes on */
            if (list) { if (!solutions) printf("%s\n", name); continue; }
            if (!cutting) { fputs(line, stdout); continue; }
            /* the opening comment becomes the TODO the student reads */
            const char *s = skip_space(line);
            printf("%.*s/* TODO %s", (int)(s - line), line, s + 3);
            continue;
        }
        if (in_region && in_head) {                           /* rest of the opening comment */
            in_head = strstr(line, "*/") == NULL;
            if (!list) fputs(line, stdout);
            continue;
        }
        if (in_region && is_end(line)) {
            in_region = 0;
            if (!list && !cutting) fputs(line, stdout);
            /* the end of a cut region stays marked, with its name: the student sees where
             * the region ends, and tools/exercises.sh unfilled finds the stub between */
            else if (!list) printf("%.*s/* END EXERCISE %s */\n", (int)(skip_space(line) - line), line, name);
            continue;
        }
        if (list) {
            if (solutions && in_region && cutting && !stub_code(line, stub, sizeof stub)) fputs(line, stdout);
            continue;
        }
        if (in_region && cutting) {
            if (stub_code(line, stub, sizeof stub)) fputs(stub, stdout);
            continue;                                         /* a reference line: cut */
        }
        fputs(line, stdout);
    }
    fclose(f);
    if (in_region) { fprintf(stderr, "%s:%d: EXERCISE without END EXERCISE\n", path, begin_line); return 2; }
    return 0;
}
