/* registry.c: the gradient-rule families, joined by (domain, name).  Each family file
 * src/grad/<family>.c exports `og_grad_<family>[]`, ending with a zeroed entry. */
#include <string.h>

#include "grad/grad.h"

#define OG_GRAD_FAMILIES(X)                                                                        \
    X(elementwise) X(linalg) X(reduce) X(activation) X(movement) X(index) X(stats) X(nn)

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
