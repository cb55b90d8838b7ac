/* grad_internal.h: the builder's state, shared by builder.c and emit.c only. */
#ifndef OG_GRAD_INTERNAL_H
#define OG_GRAD_INTERNAL_H

#include "grad/grad.h"

/* The gradient contributions reaching one value: list[i] is a gradient of the whole value,
 * or for a sequence with pos[i] >= 0, of its item at the position value pos[i] only
 * (og_gb_item_gradient: SequenceAt's rule), summed by og_gb_sequence_total. */
typedef struct og_contribs {
    int *list;
    int *pos;
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
    bool unused_ok;     /* set by a rule that rightly leaves its sequence or optional output
                         * gradients unused (an empty sequence's): reset after each rule */
    og_node *current;   /* the builder's copy of the node whose rule runs (names emitted
                         * nodes; og_gb_forward_output keeps its outputs current) */
    const char *prefix; /* of new value and node names; NULL: "og_grad" */
    int64_t max_nodes;  /* the graph may not grow past this (OG_GB_NODES_PER_NODE); 0: set
                         * at the first node emitted */
    /* Copies of the values og_gb_value handed out, by value id (NULL: none yet).  Rules
     * keep og_gb_value's pointers while they emit, and emitting may move the graph's value
     * array: copies stay put whatever a rule emits.  Freed by og_gb_release. */
    og_value **snap;
    int n_snap;
    const char *name_prefix; /* of new value names, before prefix (og_grad_spec.prefix) */
};

/* Append a contribution (pos -1: of the whole value) to value v's list.  Errors:
 * OG_ERR_NOMEM (returned, not recorded). */
og_status og_gb_contribute(og_gb *b, int v, int grad, int pos);

/* A rule may emit many nodes for one (a Conv's gradient emits a dozen), but a count that
 * grows with an attribute (a window, a repeat) could make millions from one hostile node:
 * the graph being built may hold at most this many nodes per node it had when the emitter
 * opened, plus OG_GB_NODES_EXTRA; past that, building fails with OG_ERR_LIMIT. */
#define OG_GB_NODES_PER_NODE 64
#define OG_GB_NODES_EXTRA    (1 << 20)

/* Free what the emitter allocated for itself (the value copies). */
void og_gb_release(og_gb *b);

/* og_gb_op writing into an existing value (its producer until now must be dropped). */
int og_gb_op_to(og_gb *b, const char *op, int n_in, const int *in, int out_value);

#endif
