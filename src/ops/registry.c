/* registry.c: the op families, joined into one lookup by (domain, name).
 *
 * Every family file src/ops/<family>.c exports `og_ops_<family>[]`, ending with a zeroed
 * entry.  Adding a family means one line in OG_FAMILIES.  How a device computes the ops is
 * not the op layer's business: each backend has its own tables (src/kernels/<device>/). */
#include <string.h>

#include "ops/op.h"

#define OG_FAMILIES(X)                                                                             \
    X(unary)                                                                                       \
    X(binary)                                                                                      \
    X(reduce)                                                                                      \
    X(linalg)                                                                                      \
    X(conv)                                                                                        \
    X(pool)                                                                                        \
    X(norm)                                                                                        \
    X(loss)                                                                                        \
    X(tensor)                                                                                      \
    X(resize)                                                                                      \
    X(index)                                                                                       \
    X(optim)                                                                                       \
    X(quant)                                                                                       \
    X(ml)                                                                                          \
    X(rnn)                                                                                         \
    X(control)                                                                                     \
    X(sequence)                                                                                    \
    X(signal)                                                                                      \
    X(string)                                                                                      \
    X(select)                                                                                      \
    X(qlinear)                                                                                     \
    X(random)                                                                                      \
    X(conv_deform)                                                                                 \
    X(pool_lp_roi)                                                                                 \
    X(image)

#define OG_DECLARE(f) extern const og_op_def og_ops_##f[];
OG_FAMILIES(OG_DECLARE)
#undef OG_DECLARE

#define OG_LIST_OPS(f) og_ops_##f,
static const og_op_def *const og_op_tables[] = {OG_FAMILIES(OG_LIST_OPS) NULL};

static bool same_domain(const char *a, const char *b)
{
    if (!a || strcmp(a, "ai.onnx") == 0) a = "";
    if (!b || strcmp(b, "ai.onnx") == 0) b = "";
    return strcmp(a, b) == 0;
}

const og_op_def *og_op_find(const char *domain, const char *name)
{
    for (int t = 0; og_op_tables[t]; t++)
        for (const og_op_def *d = og_op_tables[t]; d->name; d++)
            if (strcmp(d->name, name) == 0 && same_domain(d->domain, domain)) return d;
    return NULL;
}

int og_op_resolve_version(const og_op_def *def, int64_t opset)
{
    int best = 0;
    for (const int *v = def->since; *v; v++)
        if (*v <= opset) best = *v;
    return best;
}
