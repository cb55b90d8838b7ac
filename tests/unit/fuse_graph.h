/*
 * fuse_graph.h: graphs built node by node for the tests of the executor's fusion plans
 * (test_fuse.c, test_fuse_ew.c): values by name, nodes of the default domain, initializers
 * of pseudo-random values, a graph with input X, and the counts of a session's log line.
 */
#ifndef OG_TEST_FUSE_GRAPH_H
#define OG_TEST_FUSE_GRAPH_H

#include "unit/node_harness.h"

typedef struct fg {
    og_graph *g;
    og_dtype dt;
} fg;

static inline void set(og_tensor *t, int64_t i, double v)
{
    if (t->dtype == OG_FLOAT)
        ((float *)t->data)[i] = (float)v;
    else if (t->dtype == OG_INT32)
        ((int32_t *)t->data)[i] = isfinite(v) ? (int32_t)(8 * v) : 0;
    else
        ((double *)t->data)[i] = v;
}

static inline int value(fg *f, const char *name)
{
    int v = og_graph_find_value(f->g, name);
    return v >= 0 ? v : og_graph_add_value(f->g, name);
}

/* Node op(ins) -> outs; names "" leave an input out.  Returns its index. */
static inline int node(fg *f, const char *op, int n_in, const char *const *ins, int n_out,
                       const char *const *outs)
{
    char name[32];
    snprintf(name, sizeof name, "n%d", f->g->n_nodes);
    og_node *n = og_graph_add_node(f->g, op, "", name, n_in, n_out);
    if (!n) return -1;
    int idx = (int)(n - f->g->nodes);
    for (int i = 0; i < n_in; i++) n->in[i] = ins[i][0] ? value(f, ins[i]) : -1;
    for (int j = 0; j < n_out; j++) n->out[j] = value(f, outs[j]);
    return idx;
}

/* An initializer (graph input too when overridable) of the given shape, pseudo-random. */
static inline void init(fg *f, const char *name, int rank, const int64_t *dims, double scale,
                        double bias, bool overridable)
{
    og_tensor *t = NULL;
    og_tensor_alloc(f->dt, rank, dims, NULL, &t);
    for (int64_t i = 0; i < t->numel; i++) {
        set(t, i, bias + scale * sin(0.7 * (double)i + (double)name[0]));
    }
    int v = value(f, name);
    f->g->values[v].kind = OG_VALUE_INITIALIZER;
    f->g->values[v].init = t;
    f->g->values[v].dtype = t->dtype;
    f->g->values[v].rank = rank;
    if (rank > 0) memcpy(f->g->values[v].dims, dims, (size_t)rank * sizeof *dims);
    og_graph_add_initializer(f->g, v);
    if (overridable) {
        f->g->values[v].is_graph_input = true;
        f->g->inputs[f->g->n_inputs++] = v;
    }
}

/* The default domain at `opset`, room for 8 inputs and outputs, and input X (returned). */
static inline int start_graph(fg *f, int opset)
{
    og_graph *g = f->g;
    const og_allocator *a = g->alloc;
    g->n_opsets = 1;
    g->opsets = og_calloc(a, 1, sizeof *g->opsets);
    g->opsets[0].domain = og_strdup(a, "");
    g->opsets[0].version = opset;
    g->inputs = og_calloc(a, 8, sizeof *g->inputs);
    g->outputs = og_calloc(a, 8, sizeof *g->outputs);
    int x = value(f, "X");
    g->values[x].kind = OG_VALUE_INPUT;
    g->values[x].is_graph_input = true;
    g->inputs[g->n_inputs++] = x;
    return x;
}

/* The count before `what` in a session's log line (og_session_options.log), or keeps
 * *count. */
static inline void log_count(const char *msg, const char *what, int *count)
{
    const char *p = strstr(msg, what);
    if (p) {
        while (p > msg && p[-1] != ' ') p--;
        *count = atoi(p);
    }
}

#endif /* OG_TEST_FUSE_GRAPH_H */
