/* api.h: the structs behind the public handles.  Internal header. */
#ifndef OG_API_H
#define OG_API_H

#include "ir/ir.h"

struct og_model {
    og_allocator alloc;             /* a copy, used for the model's own memory */
    const og_allocator *user_alloc; /* the caller's (or the default): outputs use it */
    og_graph *graph;
};

#endif /* OG_API_H */
