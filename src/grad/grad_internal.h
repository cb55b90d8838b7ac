/* grad_internal.h: the builder's state, shared by builder.c and emit.c only. */
#ifndef OG_GRAD_INTERNAL_H
#define OG_GRAD_INTERNAL_H

#include "grad/grad.h"

typedef struct og_contribs {
    int *list;
    int n, cap;
} og_contribs;

struct og_gb {
    og_graph *g;
    const og_allocator *a;
    og_status st;
    int64_t opset;
    int last_node;
    int counter;
    int n_state;    /* values with per-value state: the forward ones */
    bool *wants;    /* reachable from a differentiated source */
    bool *relevant; /* a selected output is reachable from it */
    og_contribs *contribs;
    og_node *current;   /* the builder's copy of the node whose rule runs (names emitted
                         * nodes; og_gb_forward_output keeps its outputs current) */
    const char *prefix; /* of new value and node names; NULL: "og_grad" */
    /* Copies of the values og_gb_value handed out, by value id (NULL: none yet).  Rules
     * keep og_gb_value's pointers while they emit, and emitting may move the graph's value
     * array: copies stay put whatever a rule emits.  Freed by og_gb_release. */
    og_value **snap;
    int n_snap;
    const char *name_prefix; /* of new value names, before prefix (og_grad_spec.prefix) */
};

/* Free what the emitter allocated for itself (the value copies). */
void og_gb_release(og_gb *b);

/* og_gb_op writing into an existing value (its producer until now must be dropped). */
int og_gb_op_to(og_gb *b, const char *op, int n_in, const int *in, int out_value);

#endif
