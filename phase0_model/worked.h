/* worked.h - the two worked examples of chapter 0, computed step by step, printed, and
 * checked against the numbers worked out by hand (docs/00_model.md) and against the
 * fp64 oracle.
 *
 * (a) Tiles: Q = [[1,0],[0,1],[2,1],[1,2]], K = [[1,1],[0,2],[1,0],[2,1]], V = Q,
 *     no 1/sqrt(d) scaling, Br = Bc = 2: the online softmax over K/V blocks.
 * (b) Streaming softmax of the scores [3,1,2] with values v1, v2, v3, one at a time.
 */
#ifndef PHASE0_WORKED_H
#define PHASE0_WORKED_H
#include <stdio.h>

typedef struct {
    /* query block 1 (rows 1-2), after K/V block 1 and after K/V block 2 */
    double m1[2], l1[2], Ot1[2][2], O1[2][2];   /* Ot: unnormalised O~, O = O~ / l */
    double m2[2], l2[2], Ot2[2][2], O2[2][2];
    double O[4][2];                             /* the tiled result, every row     */
    double O_ref[4][2], L_ref[4];               /* the oracle on the same inputs   */
    double L[4];                                /* m + log(l) of the tiled run     */
} worked_tile_t;

typedef struct {
    double m[3], l[3], o[3][3];   /* after element 1, 2, 3; o in the basis v1, v2, v3 */
    double w[3];                  /* final weights o / l                               */
    double L;                     /* m + log(l)                                        */
    double w_ref[3], L_ref;       /* oracle_softmax_row on the same scores             */
} worked_stream_t;

/* Compute (and print the steps to out, unless out is NULL). */
void worked_tile(FILE *out, worked_tile_t *r);
void worked_stream(FILE *out, worked_stream_t *r);

/* Check both against the hand-computed numbers and the oracle: one "PASS name" or
 * "FAIL name: why" line per check on out (NULL: silent). Returns the number of FAILs;
 * *nchecks (if not NULL) gets the number of checks. */
int worked_check(FILE *out, const worked_tile_t *t, const worked_stream_t *s, int *nchecks);
#endif
