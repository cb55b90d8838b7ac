/* registry.c: the CPU backend: its family tables and its allocator.
 *
 * Every family file src/kernels/cpu/<family>.c exports `og_cpu_<family>[]`, ending with a
 * zeroed entry, under the family names of src/ops/.  Adding a family means one line in
 * OG_CPU_FAMILIES. */
#include "kernels/cpu/kernel.h"

#define OG_CPU_FAMILIES(X)                                                                         \
    X(unary)                                                                                       \
    X(binary)                                                                                      \
    X(reduce)                                                                                      \
    X(linalg)                                                                                      \
    X(conv)                                                                                        \
    X(pool)                                                                                        \
    X(norm)                                                                                        \
    X(loss)                                                                                        \
    X(tensor)                                                                                      \
    X(tensor_cast)                                                                                 \
    X(resize)                                                                                      \
    X(index)                                                                                       \
    X(optim)                                                                                       \
    X(quant)                                                                                       \
    X(ml)                                                                                          \
    X(rnn)                                                                                         \
    X(sequence)                                                                                    \
    X(signal)                                                                                      \
    X(string)                                                                                      \
    X(select)                                                                                      \
    X(qlinear)                                                                                     \
    X(random)                                                                                      \
    X(conv_deform)                                                                                 \
    X(conv_col2im)                                                                                 \
    X(pool_lp_roi)                                                                                 \
    X(image)

#define OG_DECLARE(f) extern const og_kernel_def og_cpu_##f[];
OG_CPU_FAMILIES(OG_DECLARE)
#undef OG_DECLARE

#define OG_LIST(f) og_cpu_##f,
static const og_kernel_def *const cpu_tables[] = {OG_CPU_FAMILIES(OG_LIST) NULL};

/* Host memory is the CPU's memory. */
static const og_allocator *cpu_allocator(const og_allocator *host) { return host; }

const og_backend og_cpu_backend = {"CPU", cpu_tables, cpu_allocator};

og_kernel_fn og_cpu_kernel_find(const char *domain, const char *name)
{
    const og_kernel_def *d = og_backend_find(&og_cpu_backend, domain, name, 0);
    return d ? d->fn : NULL;
}
