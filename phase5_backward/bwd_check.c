/* bwd_check.c - the causal range of bwd_q_block_first() against a brute-force scan of the
 * mask: whatever a shape's N_q, N_kv and blocks, K/V block j must visit exactly the Q
 * blocks that hold an entry of its columns some row may see, and no more. */
#include <stdio.h>
#include "bwd.h"

int bwd_check_causal_range(const attn_problem_t *p, attn_blocks_t bl, char *why, size_t len)
{
    attn_problem_t pm = *p;
    pm.causal = true;
    const int Tr = (p->N_q + bl.Br - 1) / bl.Br, Tc = (p->N_kv + bl.Bc - 1) / bl.Bc;
    for (int j = 0; j < Tc; j++) {
        int want = Tr;   /* the first Q block with a visible entry in column block j */
        for (int i = 0; i < Tr && want == Tr; i++)
            for (int row = i * bl.Br; row < p->N_q && row < (i + 1) * bl.Br; row++)
                if (attn_visible(&pm, row, j * bl.Bc)) { want = i; break; }   /* its first key */
        int got = bwd_q_block_first(&pm, j, bl.Br, bl.Bc);
        if (got != want) {
            snprintf(why, len, "causal range: K/V block %d starts at Q block %d, not %d", j, got, want);
            return -1;
        }
    }
    return 0;
}
