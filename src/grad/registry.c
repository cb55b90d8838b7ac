/* registry.c: the gradient-rule families, joined by (domain, name).
 *
 * The families are the op families of src/ops/registry.c: the rule of an op defined in
 * src/ops/<family>.c is in src/grad/<family>.c (a file that grows past ~1,500 lines splits
 * into src/grad/<family>_<part>.c), which exports `og_grad_<family>[]`, ending with a zeroed
 * entry (optim's is empty: optimizer updates are not differentiated).  Helpers that several
 * families use are in rule_util.c.  Adding a family means one line in OG_GRAD_FAMILIES. */
#include <string.h>

#include "grad/grad.h"

#define OG_GRAD_FAMILIES(X)                                                                        \
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
    X(random)                                                                                      \
    X(signal)                                                                                      \
    X(pool_lp_roi)                                                                                 \
    X(sequence)

#define OG_DECLARE(f) extern const og_grad_rule og_grad_##f[];
OG_GRAD_FAMILIES(OG_DECLARE)
#undef OG_DECLARE

#define OG_LIST(f) og_grad_##f,
static const og_grad_rule *const og_grad_tables[] = {OG_GRAD_FAMILIES(OG_LIST) NULL};

const og_grad_rule *og_grad_rule_find(const char *domain, const char *name)
{
    if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
    for (int t = 0; og_grad_tables[t]; t++)
        for (const og_grad_rule *r = og_grad_tables[t]; r->name; r++)
            if (strcmp(r->name, name) == 0 && strcmp(r->domain, domain) == 0) return r;
    return NULL;
}
