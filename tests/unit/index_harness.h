/* index_harness.h: runs one hand-built node (parse, static infer, run-time infer, CPU
 * kernel) without the loader, for the index and resize families' unit tests. */
#ifndef OG_INDEX_HARNESS_H
#define OG_INDEX_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/kernel.h"

static int h_failures = 0;

#define H_CHECK(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__,      \
                    #cond, og_last_error());                                                       \
            h_failures++;                                                                          \
        }                                                                                          \
    } while (0)

/* One attribute: type 'i' (int), 'f' (float), 's' (string), 'I' (ints), 'F' (floats). */
typedef struct {
    const char *name;
    char type;
    int64_t i;
    float f;
    const char *s;
    int n;
    const int64_t *ints;
    const float *floats;
} h_attr;

static og_tensor *h_tensor(og_dtype t, int rank, const int64_t *dims, const void *data)
{
    og_tensor *x = NULL;
    size_t nb = 0;
    og_shape_nbytes(t, rank, dims, &nb);
    if (og_tensor_from_data(t, rank, dims, data, nb, NULL, &x)) return NULL;
    return x;
}

/* Run `op` (opset `opset`) on inputs (NULL: omitted); *out gets the output tensor. */
static og_status h_run(const char *op, int opset, const h_attr *attrs, int n_attrs,
                       og_tensor *const *inputs, int n_in, og_tensor **out)
{
    og_status st = OG_OK;
    *out = NULL;
    og_graph *g = og_graph_new(NULL);
    const og_allocator *a = g->alloc;
    g->opsets = og_calloc(a, 1, sizeof *g->opsets);
    g->opsets[0].domain = og_strdup(a, "");
    g->opsets[0].version = opset;
    g->n_opsets = 1;
    og_node *n = og_graph_add_node(g, op, "", "n0", n_in, 1);
    n = &g->nodes[0];
    for (int i = 0; i < n_in; i++) {
        if (!inputs[i]) continue;
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        int v = og_graph_add_value(g, name);
        og_value *val = &g->values[v];
        val->kind = OG_VALUE_INPUT;
        val->is_graph_input = true;
        val->dtype = inputs[i]->dtype;
        val->rank = inputs[i]->rank;
        memcpy(val->dims, inputs[i]->dims, sizeof val->dims);
        g->nodes[0].in[i] = v;
    }
    g->nodes[0].out[0] = og_graph_add_value(g, "y");
    n = &g->nodes[0];
    n->attrs = og_calloc(a, (size_t)(n_attrs ? n_attrs : 1), sizeof *n->attrs);
    n->n_attrs = n_attrs;
    for (int i = 0; i < n_attrs; i++) {
        og_attr *at = &n->attrs[i];
        at->name = og_strdup(a, attrs[i].name);
        switch (attrs[i].type) {
        case 'i': at->type = OG_ATTR_INT, at->i = attrs[i].i; break;
        case 'f': at->type = OG_ATTR_FLOAT, at->f = attrs[i].f; break;
        case 's':
            at->type = OG_ATTR_STRING;
            at->s = og_strdup(a, attrs[i].s);
            at->s_len = strlen(attrs[i].s);
            break;
        case 'F':
            at->type = OG_ATTR_FLOATS;
            at->n = attrs[i].n;
            at->floats = og_malloc(a, (size_t)attrs[i].n * sizeof(float));
            memcpy(at->floats, attrs[i].floats, (size_t)attrs[i].n * sizeof(float));
            break;
        default:
            at->type = OG_ATTR_INTS;
            at->n = attrs[i].n;
            at->ints = og_malloc(a, (size_t)attrs[i].n * sizeof(int64_t));
            memcpy(at->ints, attrs[i].ints, (size_t)attrs[i].n * sizeof(int64_t));
            break;
        }
    }
    if ((st = og_graph_resolve(g, true))) goto done;
    og_vinfo vin[8], vout[1];
    for (int i = 0; i < n_in; i++) {
        og_vinfo_unknown(&vin[i]);
        if (!inputs[i]) continue;
        og_vinfo_set(&vin[i], inputs[i]->dtype, inputs[i]->rank, inputs[i]->dims);
        vin[i].value = inputs[i];
    }
    og_vinfo_unknown(&vout[0]);
    og_op_ctx c = {n, a, NULL, true};
    if ((st = n->op->infer(&c, vin, n_in, vout, 1))) goto done;
    og_tensor *y = NULL;
    if ((st = og_tensor_create(vout[0].dtype, vout[0].rank, vout[0].dims, NULL, &y))) goto done;
    og_kernel_ctx k = {n, n->params, a, 2, NULL, 0};
    st = og_cpu_kernel_find("", op)(&k, (const og_tensor *const *)inputs, n_in, &y, 1);
    if (st)
        og_tensor_free(y);
    else
        *out = y;
done:
    og_graph_free(g);
    return st;
}

static bool h_close_f32(const og_tensor *t, const float *expect, int64_t n)
{
    if (!t || t->numel != n || t->dtype != OG_FLOAT) return false;
    const float *v = t->data;
    for (int64_t i = 0; i < n; i++)
        if (fabsf(v[i] - expect[i]) > 1e-5f + 1e-4f * fabsf(expect[i])) {
            fprintf(stderr, "element %lld: got %g, expected %g\n", (long long)i, v[i], expect[i]);
            return false;
        }
    return true;
}

static void h_free_all(og_tensor **t, int n)
{
    for (int i = 0; i < n; i++) og_tensor_free(t[i]);
}

#endif /* OG_INDEX_HARNESS_H */
