/* random.c: gradients of the random ops of src/ops/random.c.  Their outputs are draws: the
 * Like ops read only their input's shape, Bernoulli's output is 0 or 1 whatever the
 * probability's small changes (a step function almost everywhere), so no gradient reaches
 * their inputs (dx = 0, emitted as nothing); a gradient path through them is not an error,
 * which lets models that draw masks (dropout written as RandomUniformLike and Less) be
 * differentiated. */
#include "grad/rule_util.h"

static og_status g_none(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    (void)n;
    (void)dy;
    (void)dx; /* every dx stays -1: no contribution */
    return og_gb_status(b);
}

const og_grad_rule og_grad_random[] = {{"RandomUniformLike", "", g_none},
                                       {"RandomNormalLike", "", g_none},
                                       {"Bernoulli", "", g_none},
                                       {0}};
