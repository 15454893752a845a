/* fa2_check.c - the causal range of fa2_kv_blocks() against a brute-force scan of the
 * mask: whatever a shape's N_q, N_kv and blocks, Q block i must visit exactly the K/V
 * blocks that hold an entry one of its rows may see, and no more. */
#include <stdio.h>
#include "fa2.h"

int fa2_check_causal_range(const attn_problem_t *p, attn_blocks_t bl, char *why, size_t len)
{
    attn_problem_t pm = *p;
    pm.causal = true;
    pm.mask_id = 0;   /* the causal rule alone, whatever mask the problem has */
    const int Tr = (p->N_q + bl.Br - 1) / bl.Br, Tc = (p->N_kv + bl.Bc - 1) / bl.Bc;
    for (int i = 0; i < Tr; i++) {
        int want = 0;   /* one past the last K/V block with a visible entry */
        for (int j = 0; j < Tc; j++)
            for (int row = i * bl.Br; row < p->N_q && row < (i + 1) * bl.Br; row++)
                if (attn_visible(&pm, row, j * bl.Bc)) { want = j + 1; break; }   /* its first key */
        int got = fa2_kv_blocks(&pm, i, bl.Br, bl.Bc);
        if (got != want) {
            snprintf(why, len, "causal range: Q block %d visits %d K/V blocks, not %d", i, got, want);
            return -1;
        }
    }
    return 0;
}
