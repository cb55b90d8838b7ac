/* type.c: the types of values that are not plain tensors (ir.h: og_type), interned per
 * graph, printed, and matched against run-time values.  Recursion over a type or a value is
 * bounded by OG_MAX_NESTING, which og_graph_type and og_value_append enforce. */
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"

static bool same_type(const og_type *a, const og_type *b)
{
    if (a->kind != b->kind || a->dtype != b->dtype || a->elem != b->elem || a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return true;
}

const og_type *og_graph_type(og_graph *g, const og_type *t)
{
    g = og_graph_root(g);
    int depth = t->kind == OG_KIND_TENSOR ? 0 : 1 + (t->elem ? t->elem->depth : 0);
    if (depth > OG_MAX_NESTING) return NULL;
    /* a linear scan: models hold a handful of distinct types */
    for (int i = 0; i < g->n_types; i++)
        if (same_type(g->types[i], t)) return g->types[i];
    if (g->n_types + 1 >= g->cap_types) {
        int cap = g->cap_types ? 2 * g->cap_types : 8;
        og_type **p =
            og_realloc(g->alloc, g->types, (size_t)g->n_types * sizeof *p, (size_t)cap * sizeof *p);
        if (!p) return NULL;
        g->types = p;
        g->cap_types = cap;
    }
    og_type *c = og_malloc(g->alloc, sizeof *c);
    if (!c) return NULL;
    *c = *t;
    if (c->kind != OG_KIND_TENSOR) c->rank = -1;
    c->depth = depth;
    c->id = g->n_types;
    g->types[g->n_types++] = c;
    return c;
}

const og_type *og_graph_type_tensor(og_graph *g, og_dtype dtype, int rank, const int64_t *dims)
{
    og_type t;
    memset(&t, 0, sizeof t);
    t.kind = OG_KIND_TENSOR;
    t.dtype = dtype;
    t.rank = rank < 0 || rank > OG_MAX_RANK ? -1 : rank;
    for (int d = 0; d < OG_MAX_RANK; d++) t.dims[d] = d < t.rank ? dims[d] : 0;
    return og_graph_type(g, &t);
}

const og_type *og_graph_type_wrap(og_graph *g, og_kind kind, og_dtype key, const og_type *elem)
{
    og_type t;
    memset(&t, 0, sizeof t);
    t.kind = kind;
    t.dtype = kind == OG_KIND_MAP ? key : OG_UNDEFINED;
    t.rank = -1;
    t.elem = elem;
    return og_graph_type(g, &t);
}

/* Appends to a fixed buffer, never past its end. */
typedef struct sbuf {
    char *p;
    size_t n, used;
} sbuf;

static void put(sbuf *b, const char *s)
{
    while (*s && b->used + 1 < b->n) b->p[b->used++] = *s++;
    b->p[b->used] = 0;
}

static void put_shape(sbuf *b, const og_graph *g, int rank, const int64_t *dims)
{
    char num[32];
    put(b, " [");
    if (rank < 0) put(b, "?");
    for (int d = 0; d < rank; d++) {
        if (d) put(b, ", ");
        const char *sym = g ? og_graph_dim_name(g, dims[d]) : NULL;
        if (dims[d] >= 0) {
            snprintf(num, sizeof num, "%lld", (long long)dims[d]);
            put(b, num);
        } else {
            put(b, sym ? sym : "?");
        }
    }
    put(b, "]");
}

static void put_type(sbuf *b, const og_graph *g, const og_type *t, bool top)
{
    /* iterative over the chain of containers, closing parentheses at the end */
    int open = 0;
    for (; t && t->kind != OG_KIND_TENSOR; t = t->elem, open++) {
        switch (t->kind) {
        case OG_KIND_SEQUENCE: put(b, "seq("); break;
        case OG_KIND_OPTIONAL: put(b, "optional("); break;
        case OG_KIND_MAP:
            put(b, "map(");
            put(b, og_dtype_name(t->dtype));
            put(b, ", ");
            break;
        default: put(b, "?("); break;
        }
        top = false;
    }
    if (!t) {
        put(b, "?");
    } else {
        put(b, og_dtype_name(t->dtype));
        if (top || t->rank >= 0) put_shape(b, g, t->rank, t->dims);
    }
    while (open-- > 0) put(b, ")");
}

char *og_type_str(const og_graph *g, const og_type *t, char *buf, size_t n)
{
    sbuf b = {buf, n, 0};
    if (!n) return buf;
    buf[0] = 0;
    put_type(&b, g, t, true);
    return buf;
}

char *og_value_type_str(const og_graph *g, const og_value *v, char *buf, size_t n)
{
    if (v->type) return og_type_str(g, v->type, buf, n);
    sbuf b = {buf, n, 0};
    if (!n) return buf;
    buf[0] = 0;
    put(&b, og_dtype_name(v->dtype));
    put_shape(&b, g, v->rank, v->dims);
    return buf;
}

static bool fits(const og_tensor *v, const og_type *t, bool shapes, char *why, size_t n)
{
    if (!t) return true;
    if (v->kind != t->kind) {
        snprintf(why, n, "a %s where a %s is declared", og_kind_name(v->kind),
                 og_kind_name(t->kind));
        return false;
    }
    switch (t->kind) {
    case OG_KIND_TENSOR:
        if (t->dtype != OG_UNDEFINED && v->dtype != t->dtype) {
            snprintf(why, n, "a %s tensor where %s is declared", og_dtype_name(v->dtype),
                     og_dtype_name(t->dtype));
            return false;
        }
        if (!shapes) return true;
        if (t->rank >= 0 && v->rank != t->rank) {
            snprintf(why, n, "a tensor of rank %d where rank %d is declared", v->rank, t->rank);
            return false;
        }
        for (int d = 0; t->rank >= 0 && d < t->rank; d++)
            if (t->dims[d] >= 0 && v->dims[d] != t->dims[d]) {
                snprintf(why, n, "a tensor whose dim %d is %lld where %lld is declared", d,
                         (long long)v->dims[d], (long long)t->dims[d]);
                return false;
            }
        return true;
    case OG_KIND_MAP:
        if (v->keys && t->dtype != OG_UNDEFINED && v->keys->dtype != t->dtype) {
            snprintf(why, n, "a map with %s keys where %s keys are declared",
                     og_dtype_name(v->keys->dtype), og_dtype_name(t->dtype));
            return false;
        }
        break;
    default: break;
    }
    for (int64_t i = 0; i < v->n_items; i++) {
        if (fits(v->items[i], t->elem, shapes, why, n)) continue;
        char inner[256];
        snprintf(inner, sizeof inner, "%s", why);
        snprintf(why, n, "item %lld of the %s: %s", (long long)i, og_kind_name(t->kind), inner);
        return false;
    }
    return true;
}

bool og_value_fits(const og_tensor *v, const og_type *t, char *why, size_t n)
{
    return fits(v, t, true, why, n);
}

bool og_value_fits_kind(const og_tensor *v, const og_type *t, char *why, size_t n)
{
    return fits(v, t, false, why, n);
}
