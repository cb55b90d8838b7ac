/* subgraph.c: building a subgraph of the graph a gradient emitter writes (the bodies and
 * branches of the backward If, Loop and Scan, src/grad/control.c; the Loops of the sequence
 * rules, src/grad/sequence.c).  See subgraph.h. */
#include <string.h>

#include "grad/subgraph.h"

/* A new subgraph of the training graph holding T's values and nodes, T's inputs left to
 * define (by the caller) or, when nothing defines them, read from the enclosing graph by
 * name; with an emitter on it.  NULL after an error. */
og_graph *og_sub_open(og_gb *b, const og_graph *T, const char *prefix, og_gb **eb)
{
    *eb = NULL;
    og_graph *B = og_graph_new_sub(og_gb_graph(b));
    if (!B) {
        og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
        return NULL;
    }
    og_status st = og_graph_copy_into(T, B);
    if (!st) {
        og_free(B->alloc, B->name); /* T's */
        if (!(B->name = og_strdup(B->alloc, prefix))) st = OG_ERR_NOMEM;
    }
    if (st || !(*eb = og_gb_open(B, prefix))) {
        og_graph_free(B);
        og_gb_fail(b, NULL, st ? st : OG_ERR_NOMEM, "%s", st ? og_last_error() : "out of memory");
        return NULL;
    }
    for (int i = 0; i < B->n_inputs; i++) {
        og_value *v = &B->values[B->inputs[i]];
        v->kind = OG_VALUE_INTERMEDIATE;
        v->is_graph_input = false;
        v->has_value_info = false;
    }
    for (int i = 0; i < B->n_outputs; i++) B->values[B->outputs[i]].is_graph_output = false;
    B->n_inputs = B->n_outputs = 0;
    return B;
}

/* Value `name` of the enclosing graph, read in subgraph B. */
int og_sub_outer(og_gb *eb, og_graph *B, const char *name)
{
    int v = og_graph_find_value(B, name);
    if (v < 0 && (v = og_graph_add_value(B, name)) < 0)
        return og_gb_fail(eb, NULL, OG_ERR_NOMEM, "out of memory");
    return v;
}

/* Make value v of B its next graph input (-1 after an error). */
int og_sub_make_input(og_gb *eb, og_graph *B, int v)
{
    int *in = v >= 0 ? og_realloc(B->alloc, B->inputs, (size_t)B->n_inputs * sizeof *in,
                                  (size_t)(B->n_inputs + 1) * sizeof *in)
                     : NULL;
    if (!in) return og_gb_fail(eb, NULL, OG_ERR_NOMEM, "out of memory");
    B->inputs = in;
    in[B->n_inputs++] = v;
    og_value *val = &B->values[v];
    val->kind = OG_VALUE_INPUT;
    val->is_graph_input = val->has_value_info = true;
    return v;
}

/* A graph input of B named name (allocated, freed here; NULL: an error is set) of type dt
 * (rank: -1 unknown, 0 scalar). */
int og_sub_input(og_gb *eb, og_graph *B, char *name, og_dtype dt, int rank)
{
    if (!name) return -1;
    int v = og_graph_add_value(B, name);
    og_free(og_gb_alloc(eb), name);
    if ((v = og_sub_make_input(eb, B, v)) < 0) return -1;
    B->values[v].dtype = dt;
    B->values[v].rank = rank;
    return v;
}

/* Whether a node of B (emitted, so the producer is not recorded yet) computes value v. */
static bool computed_in(const og_graph *B, int v)
{
    for (int i = B->n_nodes - 1; i >= 0; i--)
        for (int j = 0; j < B->nodes[i].n_out; j++)
            if (B->nodes[i].out[j] == v) return true;
    return false;
}

/* Make v the next graph output of B, of type dt (an Identity when v is already one, or an
 * input, or read from the enclosing graph; not otherwise, so that a sequence can be an
 * output before opset 14, where Identity takes tensors only). */
void og_sub_output(og_gb *eb, og_graph *B, int v, og_dtype dt)
{
    if (v < 0 || og_gb_status(eb)) return;
    bool taken = B->values[v].is_graph_output || B->values[v].kind == OG_VALUE_INPUT ||
                 (B->values[v].producer < 0 && !computed_in(B, v));
    for (int i = 0; i < B->n_outputs && !taken; i++) taken = B->outputs[i] == v;
    if (taken) v = og_gb_op1(eb, "Identity", v);
    int *out = v >= 0 ? og_realloc(B->alloc, B->outputs, (size_t)B->n_outputs * sizeof *out,
                                   (size_t)(B->n_outputs + 1) * sizeof *out)
                      : NULL;
    if (!out) {
        og_gb_fail(eb, NULL, OG_ERR_NOMEM, "out of memory");
        return;
    }
    B->outputs = out;
    out[B->n_outputs++] = v;
    B->values[v].is_graph_output = true;
    B->values[v].has_value_info = true;
    if (dt != OG_UNDEFINED) B->values[v].dtype = dt;
}

/* Close B's emitter and prune B (false after an error, set on b). */
bool og_sub_finish(og_gb *b, og_gb *eb, og_graph *B)
{
    og_status st = og_gb_close(eb);
    if (!st) st = og_graph_finalize(B); /* sorted: pruning walks back from the outputs */
    if (!st) st = og_graph_prune(B);
    if (!st) st = og_graph_finalize(B);
    if (st) og_gb_fail(b, NULL, st, "%s", og_last_error());
    return !st;
}

/* Close B's emitter, prune B, put a copy as attribute `name` of node; free B. */
void og_sub_attach(og_gb *b, og_gb *eb, og_graph *B, int node, const char *name)
{
    if (og_sub_finish(b, eb, B)) og_gb_attr_graph(b, node, name, B);
    og_graph_free(B);
}
