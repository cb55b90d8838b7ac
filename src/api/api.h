/* api.h: the structs behind the public handles.  Internal header. */
#ifndef OG_API_H
#define OG_API_H

#include "ir/ir.h"

struct og_model {
    og_allocator alloc;             /* a copy, used for the model's own memory */
    const og_allocator *user_alloc; /* the caller's (or the default): outputs use it */
    og_graph *graph;
};

/* A deep copy of m's graph (og_graph_clone, in memory) as a new model allocated with a
 * (NULL: the default allocator).  The copy is as finalized as m's graph but not resolved:
 * for building a changed model (call og_graph_finalize and og_graph_resolve after the
 * changes).  Errors: OG_ERR_NOMEM, nothing allocated then. */
og_status og_model_copy_graph(const og_model *m, const og_allocator *a, og_model **out);

/* og_session_create without the rewrites for inference (activations fused into the
 * convolutions before them): for training graphs, whose halves run separately and whose
 * saved state may be any value.  Their initializers (the weights) may change between runs
 * (og_exec_set_init_mutable). */
og_status og_session_create_plain(const og_model *m, const og_session_options *opts,
                                  og_session **out);

/* og_session_create for a model whose initializers may change between runs (the eval
 * graph of a gradient object, whose weights training and og_grad_set_weight write in
 * place): kernels keep nothing derived from them. */
og_status og_session_create_mutable(const og_model *m, const og_session_options *opts,
                                    og_session **out);

/* Whether 0 <= i < n; if not, the thread's error says that `fn` got `what` index i and the
 * valid range (callers then return OG_ERR_INVALID_ARG, or NULL where no status fits). */
bool og_api_index_ok(const char *fn, const char *what, int i, int n);

#endif /* OG_API_H */
