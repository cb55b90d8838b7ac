/* tensor.c: gradients of the shape ops: the gradient takes the input's shape back
 * (Reshape, Flatten, Squeeze, Unsqueeze) or the inverse permutation (Transpose). */
#include "grad/rule_util.h"

static og_status g_reshape_back(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (og_gb_wants(b, n, 0)) dx[0] = og_gb_reshape_like(b, dy[0], n->in[0]);
    return og_gb_status(b);
}

static og_status g_transpose(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int rank = og_gb_value(b, n->in[0])->rank;
    if (rank < 0)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "Transpose gradient needs the input's rank");
    int count = 0;
    const int64_t *perm = og_attr_ints(n, "perm", &count);
    int64_t inv[OG_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        int64_t p = perm && count == rank ? perm[i] : rank - 1 - i;
        if (p < 0) p += rank;
        if (p < 0 || p >= rank) return og_gb_fail(b, n, OG_ERR_MODEL, "bad perm");
        inv[p] = i;
    }
    dx[0] = og_rule_transpose(b, dy[0], inv, rank);
    return og_gb_status(b);
}

const og_grad_rule og_grad_tensor[] = {
    {"Reshape", "", g_reshape_back}, {"Flatten", "", g_reshape_back},
    {"Squeeze", "", g_reshape_back}, {"Unsqueeze", "", g_reshape_back},
    {"Transpose", "", g_transpose},  {0}};
