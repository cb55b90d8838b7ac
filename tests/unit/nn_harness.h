/*
 * nn_harness.h: one-node graphs built by hand for the unit tests of the pool, norm and loss
 * families: attributes, input tensors, static and run-time inference, then the CPU kernel.
 */
#ifndef OG_TEST_NN_HARNESS_H
#define OG_TEST_NN_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/kernel.h"

static int h_failures;

#define H_CHECK(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            h_failures++;                                                                          \
        }                                                                                          \
    } while (0)

/* A one-node graph of op `op` at `opset` with n_in inputs "i0".. and n_out outputs "o0".. */
static inline og_node *h_node(og_graph **gp, const char *op, int opset, int n_in, int n_out)
{
    og_graph *g = og_graph_new(NULL);
    *gp = g;
    g->opsets = og_calloc(g->alloc, 1, sizeof *g->opsets);
    g->opsets[0].domain = og_strdup(g->alloc, "");
    g->opsets[0].version = opset;
    g->n_opsets = 1;
    og_node *n = og_graph_add_node(g, op, "", "n0", n_in, n_out);
    char name[16];
    for (int i = 0; i < n_in; i++) {
        snprintf(name, sizeof name, "i%d", i);
        int v = og_graph_add_value(g, name);
        g->nodes[0].in[i] = v;
        g->values[v].kind = OG_VALUE_INPUT;
        g->values[v].is_graph_input = true;
    }
    for (int i = 0; i < n_out; i++) {
        snprintf(name, sizeof name, "o%d", i);
        int v = og_graph_add_value(g, name);
        g->nodes[0].out[i] = v;
        g->values[v].is_graph_output = true;
    }
    g->inputs = og_malloc(g->alloc, (size_t)(n_in + 1) * sizeof *g->inputs);
    g->outputs = og_malloc(g->alloc, (size_t)(n_out + 1) * sizeof *g->outputs);
    for (int i = 0; i < n_in; i++) g->inputs[i] = g->nodes[0].in[i];
    for (int i = 0; i < n_out; i++) g->outputs[i] = g->nodes[0].out[i];
    g->n_inputs = n_in;
    g->n_outputs = n_out;
    n = &g->nodes[0];
    return n;
}

static inline og_attr *h_attr(og_graph *g, const char *name, og_attr_type type)
{
    og_node *n = &g->nodes[0];
    n->attrs = og_realloc(g->alloc, n->attrs, (size_t)n->n_attrs * sizeof *n->attrs,
                          (size_t)(n->n_attrs + 1) * sizeof *n->attrs);
    og_attr *a = &n->attrs[n->n_attrs++];
    memset(a, 0, sizeof *a);
    a->name = og_strdup(g->alloc, name);
    a->type = type;
    return a;
}
static inline void h_attr_int(og_graph *g, const char *name, int64_t v)
{
    h_attr(g, name, OG_ATTR_INT)->i = v;
}
static inline void h_attr_float(og_graph *g, const char *name, float v)
{
    h_attr(g, name, OG_ATTR_FLOAT)->f = v;
}
static inline void h_attr_string(og_graph *g, const char *name, const char *s)
{
    og_attr *a = h_attr(g, name, OG_ATTR_STRING);
    a->s = og_strdup(g->alloc, s);
    a->s_len = strlen(s);
}
static inline void h_attr_ints(og_graph *g, const char *name, int n, const int64_t *v)
{
    og_attr *a = h_attr(g, name, OG_ATTR_INTS);
    a->ints = og_malloc(g->alloc, (size_t)(n ? n : 1) * sizeof *a->ints);
    memcpy(a->ints, v, (size_t)n * sizeof *v);
    a->n = n;
}

/* A tensor of dtype with the values vals (converted). */
static inline og_tensor *h_tensor(og_dtype dt, int rank, const int64_t *dims, const double *vals)
{
    og_tensor *t = NULL;
    if (og_tensor_create(dt, rank, dims, NULL, &t)) return NULL;
    for (int64_t i = 0; i < t->numel && vals; i++) {
        switch (dt) {
        case OG_FLOAT: ((float *)t->data)[i] = (float)vals[i]; break;
        case OG_DOUBLE: ((double *)t->data)[i] = vals[i]; break;
        case OG_INT32: ((int32_t *)t->data)[i] = (int32_t)vals[i]; break;
        case OG_INT64: ((int64_t *)t->data)[i] = (int64_t)vals[i]; break;
        case OG_BOOL: ((uint8_t *)t->data)[i] = vals[i] != 0; break;
        default: break;
        }
    }
    return t;
}

/* Resolve the graph with the inputs' shapes, infer at run time, run the kernel.  in[i] NULL
 * is an omitted input, want[j] false an omitted output; out[j] gets a new tensor. */
static inline og_status h_run(og_graph *g, og_tensor *const *in, const bool *want, og_tensor **out)
{
    og_node *n = &g->nodes[0];
    og_vinfo vin[8], vout[8];
    og_status st;
    for (int i = 0; i < n->n_in; i++) {
        if (!in[i]) {
            n->in[i] = -1;
            continue;
        }
        og_value *v = &g->values[n->in[i]];
        v->dtype = in[i]->dtype;
        v->rank = in[i]->rank;
        memcpy(v->dims, in[i]->dims, sizeof v->dims);
    }
    for (int j = 0; j < n->n_out; j++) {
        out[j] = NULL;
        if (!want[j]) n->out[j] = -1;
    }
    if ((st = og_graph_finalize(g))) return st;
    if ((st = og_graph_resolve(g, true))) return st;
    n = &g->nodes[0]; /* finalize re-sorts the node array */
    for (int i = 0; i < n->n_in; i++) {
        og_vinfo_unknown(&vin[i]);
        if (!in[i]) continue;
        og_vinfo_set(&vin[i], in[i]->dtype, in[i]->rank, in[i]->dims);
        vin[i].value = in[i];
    }
    for (int j = 0; j < n->n_out; j++) og_vinfo_unknown(&vout[j]);
    og_op_ctx c = {n, g->alloc, NULL, true};
    if ((st = n->op->infer(&c, vin, n->n_in, vout, n->n_out))) return st;
    for (int j = 0; j < n->n_out; j++) {
        if (!want[j]) continue;
        if ((st = og_tensor_alloc(vout[j].dtype, vout[j].rank, vout[j].dims, NULL, &out[j])))
            return st;
    }
    og_kernel_fn fn = og_cpu_kernel_find("", n->op_type);
    og_kernel_ctx k = {n, n->params, g->alloc, 2, NULL, 0};
    return fn(&k, (const og_tensor *const *)in, n->n_in, out, n->n_out);
}

/* Compare a float/double/int tensor with expected values. */
static inline void h_expect(const char *what, const og_tensor *t, int64_t n, const double *want,
                            double tol)
{
    if (!t || t->numel != n) {
        fprintf(stderr, "%s: expected %lld elements, got %lld\n", what, (long long)n,
                t ? (long long)t->numel : -1LL);
        h_failures++;
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double v = og_tensor_get_f64(t, i);
        if (!(fabs(v - want[i]) <= tol * (1 + fabs(want[i])))) {
            fprintf(stderr, "%s: element %lld is %.9g, expected %.9g\n", what, (long long)i, v,
                    want[i]);
            h_failures++;
            return;
        }
    }
}

static inline void h_free(og_graph *g, og_tensor **ts, int n)
{
    for (int i = 0; i < n; i++) og_tensor_free(ts[i]);
    og_graph_free(g);
}

#endif /* OG_TEST_NN_HARNESS_H */
