/*
 * kernel.h: how the CPU computes an op.  Internal header.
 *
 * A kernel receives its inputs and its outputs already allocated with the shapes and
 * dtypes that the op's infer computed (omitted optional inputs and outputs are NULL).  It
 * writes every element of every non-NULL output.  It dispatches on dtype itself and
 * returns OG_ERR_UNSUPPORTED (through og_kernel_error) for a dtype it lacks.
 *
 * Threads: k->threads is the session's thread count; use OG_PARALLEL_FOR for loops worth
 * splitting (roughly > 32k scalar operations), never global thread settings.
 */
#ifndef OG_KERNEL_H
#define OG_KERNEL_H

#include "ops/op.h"

typedef struct og_kernel_ctx {
    const og_node *node;
    const void *params;        /* == node->params */
    const og_allocator *alloc; /* for scratch memory */
    int threads;
} og_kernel_ctx;

typedef og_status (*og_kernel_fn)(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                  og_tensor *const *out, int n_out);

typedef struct og_kernel_def {
    const char *name;
    const char *domain;
    og_kernel_fn fn;
} og_kernel_def;

/* A family's table is `const og_kernel_def og_cpu_<family>[] = {..., {0}};`. */

/* NULL if no CPU kernel. */
og_kernel_fn og_cpu_kernel_find(const char *domain, const char *name);

/* og_error with the node label before the message. */
og_status og_kernel_error(const og_kernel_ctx *k, og_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Parallel loop over [0, n): body sees `i`.  Threads only when n*cost_per_item is large,
 * and never more than n. */
#ifdef _OPENMP
#include <omp.h>
#define OG_PARALLEL_FOR(k, n, work_per_item, i, body)                                              \
    do {                                                                                           \
        int64_t og_n__ = (n);                                                                      \
        int og_t__ = ((double)og_n__ * (double)(work_per_item) > 32768.0) ? (k)->threads : 1;      \
        if (og_t__ > og_n__) og_t__ = (int)og_n__; /* never more threads than items */             \
        if (og_t__ > 1) {                                                                          \
            _Pragma("omp parallel for num_threads(og_t__) schedule(static)") for (int64_t i = 0;   \
                                                                                  i < og_n__; i++) \
            {                                                                                      \
                body                                                                               \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < og_n__; i++) {                                                 \
                body                                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)
#else
#define OG_PARALLEL_FOR(k, n, work_per_item, i, body)                                              \
    do {                                                                                           \
        int64_t og_n__ = (n);                                                                      \
        for (int64_t i = 0; i < og_n__; i++) {                                                     \
            body                                                                                   \
        }                                                                                          \
    } while (0)
#endif

/* C-order strides of a shape (elements). */
void og_strides(int rank, const int64_t *dims, int64_t *strides);
/* Strides of `in` (rank in_rank) broadcast to out's shape (rank out_rank >= in_rank):
 * 0 where the input dim is 1 (or missing), else its C-order stride. */
void og_broadcast_strides(int in_rank, const int64_t *in_dims, int out_rank,
                          const int64_t *out_dims, int64_t *strides);

/* Iterates a multi-index over a shape; used by kernels that walk broadcast inputs.
 * Typical use: og_index_iter it; og_index_init(&it, rank, dims);
 *              do { ... it.idx[...] ... } while (og_index_next(&it)); */
typedef struct og_index_iter {
    int rank;
    int64_t dims[OG_MAX_RANK];
    int64_t idx[OG_MAX_RANK];
} og_index_iter;
void og_index_init(og_index_iter *it, int rank, const int64_t *dims);
bool og_index_next(og_index_iter *it);

#endif /* OG_KERNEL_H */
