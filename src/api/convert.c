/* convert.c: a float64 copy of a model, for finite-difference checks. */
#include <string.h>

#include "api/api.h"
#include "onnx/onnx_io.h"
#include "ops/op.h"

/* float32 tensor -> new float64 tensor (others: NULL, nothing to do) */
static og_status widen(og_tensor **t, const og_allocator *a)
{
    og_tensor *src = *t, *d = NULL;
    if (!src || src->dtype != OG_FLOAT) return OG_OK;
    og_status st = og_tensor_alloc(OG_DOUBLE, src->rank, src->dims, a, &d);
    if (st) return st;
    for (int64_t i = 0; i < src->numel; i++) ((double *)d->data)[i] = ((const float *)src->data)[i];
    d->readonly = src->readonly;
    og_tensor_free(src);
    *t = d;
    return OG_OK;
}

/* Type t of graph g with its float32 tensors float64, interned in g (t itself when it has
 * none); NULL when out of memory.  Recursion follows the type's nesting (bounded). */
static const og_type *widen_type(og_graph *g, const og_type *t)
{
    if (!t) return NULL;
    if (t->kind == OG_KIND_TENSOR)
        return t->dtype == OG_FLOAT ? og_graph_type_tensor(g, OG_DOUBLE, t->rank, t->dims) : t;
    const og_type *e = widen_type(g, t->elem);
    if (t->elem && !e) return NULL;
    return e == t->elem ? t : og_graph_type_wrap(g, t->kind, t->dtype, e);
}

/* g's float32 values (tensor types and container types), initializers, Cast targets and
 * constants as float64, and its subgraphs'. */
static og_status widen_graph(og_graph *g, const og_allocator *a)
{
    og_status st;
    for (int v = 0; v < g->n_values; v++) {
        og_value *val = &g->values[v];
        if (val->dtype == OG_FLOAT) val->dtype = OG_DOUBLE;
        if (val->type) { /* seq(map(int64, float32)) -> seq(map(int64, float64)) */
            const og_type *t = widen_type(g, val->type);
            if (!t) return og_error(OG_ERR_NOMEM, "out of memory");
            val->type = t;
        }
        if ((st = widen(&val->init, a))) return st;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        og_node *n = &g->nodes[i];
        for (int j = 0; j < n->n_attrs; j++) {
            og_attr *at = &n->attrs[j];
            if (at->type == OG_ATTR_INT && at->i == OG_FLOAT &&
                (strcmp(at->name, "to") == 0 || strcmp(at->name, "dtype") == 0 ||
                 strcmp(at->name, "stash_type") == 0))
                at->i = OG_DOUBLE;
            if (at->type == OG_ATTR_TENSOR && (st = widen(&at->t, a))) return st;
            for (int k = 0; at->type == OG_ATTR_TENSORS && k < at->n; k++)
                if ((st = widen(&at->tensors[k], a))) return st;
            if (at->g && (st = widen_graph(at->g, a))) return st;
        }
    }
    return OG_OK;
}

og_status og_model_convert_float64(const og_model *m, og_model **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_model_convert_float64: out is NULL");
    *out = NULL;
    if (!m) return og_error(OG_ERR_INVALID_ARG, "og_model_convert_float64: model is NULL");
    og_model *c = NULL;
    og_status st = og_model_copy_graph(m, m->user_alloc, &c);
    if (st) return st;
    og_graph *g = c->graph;
    if ((st = widen_graph(g, &c->alloc))) goto fail;
    st = og_graph_finalize(g);
    if (!st) st = og_graph_resolve(g, true);
    if (st) goto fail;
    *out = c;
    return OG_OK;
fail:
    og_model_free(c);
    return st;
}
