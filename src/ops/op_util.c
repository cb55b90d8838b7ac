/* op_util.c: helpers shared by the ops' parse and infer functions. */
#include <stdio.h>
#include <string.h>

#include "ops/op.h"

const og_dtype og_types_float[] = {OG_FLOAT, OG_DOUBLE, OG_UNDEFINED};
const og_dtype og_types_numeric[] = {OG_FLOAT, OG_DOUBLE, OG_INT32, OG_INT64, OG_UNDEFINED};
const og_dtype og_types_all[] = {OG_FLOAT, OG_DOUBLE, OG_INT32, OG_INT64, OG_BOOL, OG_UNDEFINED};
const og_dtype og_types_all_int[] = {OG_FLOAT,  OG_DOUBLE, OG_INT32,    OG_INT64,
                                     OG_INT8,   OG_UINT8,  OG_INT16,    OG_UINT16,
                                     OG_UINT32, OG_UINT64, OG_UNDEFINED};

const og_dtype *og_types_with_half(const og_op_ctx *c, const og_dtype *allowed, int f16_from,
                                   int bf16_from, og_dtype types[23])
{
    int n = 0, v = c->node->since_version;
    while (allowed[n] != OG_UNDEFINED && n < 20) {
        types[n] = allowed[n];
        n++;
    }
    if (v >= f16_from) types[n++] = OG_FLOAT16;
    if (bf16_from > 0 && v >= bf16_from) types[n++] = OG_BFLOAT16;
    types[n] = OG_UNDEFINED;
    return types;
}

og_status og_op_error(const og_op_ctx *c, og_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    og_status st = og_node_verror(c->node, status, fmt, ap);
    va_end(ap);
    return st;
}

/* ---- attributes ------------------------------------------------------------------ */

int64_t og_attr_int(const og_node *n, const char *name, int64_t dflt)
{
    const og_attr *a = og_node_attr(n, name);
    return a && a->type == OG_ATTR_INT ? a->i : dflt;
}

float og_attr_float(const og_node *n, const char *name, float dflt)
{
    const og_attr *a = og_node_attr(n, name);
    if (!a) return dflt;
    if (a->type == OG_ATTR_FLOAT) return a->f;
    if (a->type == OG_ATTR_INT) return (float)a->i;
    return dflt;
}

const char *og_attr_string(const og_node *n, const char *name, const char *dflt)
{
    const og_attr *a = og_node_attr(n, name);
    return a && a->type == OG_ATTR_STRING ? a->s : dflt;
}

const int64_t *og_attr_ints(const og_node *n, const char *name, int *count)
{
    const og_attr *a = og_node_attr(n, name);
    if (!a || a->type != OG_ATTR_INTS) {
        *count = 0;
        return NULL;
    }
    *count = a->n;
    return a->ints;
}

const float *og_attr_floats(const og_node *n, const char *name, int *count)
{
    const og_attr *a = og_node_attr(n, name);
    if (!a || a->type != OG_ATTR_FLOATS) {
        *count = 0;
        return NULL;
    }
    *count = a->n;
    return a->floats;
}

const og_tensor *og_attr_tensor(const og_node *n, const char *name)
{
    const og_attr *a = og_node_attr(n, name);
    return a && a->type == OG_ATTR_TENSOR ? a->t : NULL;
}

og_status og_attr_auto_pad(const og_op_ctx *c, int *mode)
{
    static const char *const names[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    const char *ap = og_attr_string(c->node, "auto_pad", "NOTSET");
    if (ap[0] == '\0') ap = "NOTSET";
    for (int i = 0; i < 4; i++)
        if (strcmp(ap, names[i]) == 0) {
            *mode = i;
            return OG_OK;
        }
    return og_op_error(c, OG_ERR_MODEL,
                       "attribute 'auto_pad' is '%s', expected NOTSET, SAME_UPPER, SAME_LOWER "
                       "or VALID",
                       ap);
}

og_status og_attr_check_type(const og_op_ctx *c, const char *name, og_attr_type type)
{
    const og_attr *a = og_node_attr(c->node, name);
    if (a && a->type != type)
        return og_op_error(c, OG_ERR_MODEL, "attribute '%s' has type %d, expected %d", name,
                           (int)a->type, (int)type);
    return OG_OK;
}

/* ---- table-driven attribute parsing ---------------------------------------------- */

static bool field_read_here(const og_op_ctx *c, const og_attr_field *f)
{
    int v = c->node->since_version;
    return v >= f->from && (f->until == 0 || v < f->until);
}

og_status og_parse_attr_table(const og_op_ctx *c, const og_attr_table *tables, void **params)
{
    const og_attr_table *t = tables;
    while (t->op && strcmp(t->op, c->node->op_type) != 0) t++;
    if (!t->op) return og_op_error(c, OG_ERR_INTERNAL, "no attribute table for this op");
    const og_attr_field *end = t->f;
    while (end < t->f + OG_ATTR_FIELDS_MAX && end->name) end++;
    og_status st;
    size_t size = t->size;
    for (const og_attr_field *f = t->f; f < end; f++) {
        if ((st = og_attr_check_type(c, f->name, f->type))) return st;
        bool present = og_node_attr(c->node, f->name) != NULL;
        if (!field_read_here(c, f)) continue;
        if (!present && f->required_from && c->node->since_version >= f->required_from)
            return og_op_error(c, OG_ERR_MODEL, "attribute '%s' is required", f->name);
        int n = 0;
        if (f->kind == OG_FIELD_INTS && present) og_attr_ints(c->node, f->name, &n);
        if (f->kind == OG_FIELD_INTS && f->cap == 0) size += (size_t)n * sizeof(int64_t);
        if (f->kind == OG_FIELD_INTS && f->cap && n > f->cap)
            return og_op_error(c, OG_ERR_UNSUPPORTED, "attribute '%s' has %d entries, above %d",
                               f->name, n, f->cap);
    }
    char *p = og_calloc(c->alloc, 1, size);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    *params = p;
    for (const og_attr_field *f = t->f; f < end; f++) {
        bool here = field_read_here(c, f);
        int64_t v = here ? og_attr_int(c->node, f->name, f->dflt) : f->dflt;
        switch (f->kind) {
        case OG_FIELD_CHECK: break;
        case OG_FIELD_I64: memcpy(p + f->off, &v, sizeof v); break;
        case OG_FIELD_BOOL: *(bool *)(p + f->off) = v != 0; break;
        case OG_FIELD_INTS: {
            int n = -1;
            const int64_t *ints = here ? og_attr_ints(c->node, f->name, &n) : NULL;
            if (!ints) n = -1;
            if (n > 0) memcpy(p + f->off, ints, (size_t)n * sizeof *ints);
            memcpy(p + f->n_off, &n, sizeof n);
            break;
        }
        }
    }
    return t->finish ? t->finish(c, p) : OG_OK;
}

/* ---- inference helpers ----------------------------------------------------------- */

void og_vinfo_unknown(og_vinfo *v)
{
    v->dtype = OG_UNDEFINED;
    v->rank = -1;
    for (int i = 0; i < OG_MAX_RANK; i++) v->dims[i] = OG_DIM_UNKNOWN;
    v->value = NULL;
    v->kind = OG_KIND_TENSOR;
    v->type = NULL;
}

void og_vinfo_set_kind(og_vinfo *v, og_kind kind, const og_type *t)
{
    og_vinfo_unknown(v);
    v->kind = kind;
    v->type = t;
}

const og_type *og_op_type_tensor(const og_op_ctx *c, og_dtype dtype, int rank, const int64_t *dims)
{
    return c->graph ? og_graph_type_tensor(c->graph, dtype, rank, dims) : NULL;
}

const og_type *og_op_type_wrap(const og_op_ctx *c, og_kind kind, og_dtype key, const og_type *elem)
{
    return c->graph ? og_graph_type_wrap(c->graph, kind, key, elem) : NULL;
}

void og_vinfo_copy_shape(og_vinfo *dst, const og_vinfo *src)
{
    dst->dtype = src->dtype;
    dst->rank = src->rank;
    memcpy(dst->dims, src->dims, sizeof dst->dims);
    dst->kind = src->kind;
    dst->type = src->type;
}

void og_vinfo_set(og_vinfo *v, og_dtype dtype, int rank, const int64_t *dims)
{
    v->dtype = dtype;
    v->rank = rank;
    for (int i = 0; i < OG_MAX_RANK; i++)
        v->dims[i] = (i < rank && dims) ? dims[i] : OG_DIM_UNKNOWN;
}

bool og_vinfo_static(const og_vinfo *v)
{
    if (v->rank < 0) return false;
    for (int i = 0; i < v->rank; i++)
        if (v->dims[i] < 0) return false;
    return true;
}

int64_t og_vinfo_numel(const og_vinfo *v)
{
    int64_t n;
    return og_vinfo_static(v) && og_shape_numel(v->rank, v->dims, &n) ? n : -1;
}

og_status og_infer_broadcast(const og_op_ctx *c, const og_vinfo *const *in, int n, og_vinfo *out)
{
    int rank = 0;
    for (int i = 0; i < n; i++) {
        if (in[i]->rank < 0) {
            out->rank = -1;
            return OG_OK;
        }
        if (in[i]->rank > rank) rank = in[i]->rank;
    }
    out->rank = rank;
    for (int d = 0; d < rank; d++) {
        int64_t r = 1; /* broadcast result so far */
        bool unknown = false;
        for (int i = 0; i < n; i++) {
            int off = rank - in[i]->rank;
            if (d < off) continue;
            int64_t x = in[i]->dims[d - off];
            if (x == 1) continue;
            if (r == 1 && !unknown) {
                r = x;
            } else if (x >= 0 && r >= 0) {
                if (x != r) {
                    char a[128], b[128];
                    return og_op_error(c, OG_ERR_SHAPE,
                                       "inputs cannot broadcast: shape %s of input %d against "
                                       "dim %lld (axis %d of the result); other shape %s",
                                       og_shape_str(in[i]->rank, in[i]->dims, a, sizeof a), i,
                                       (long long)r, d,
                                       og_shape_str(in[0]->rank, in[0]->dims, b, sizeof b));
                }
            } else if (x >= 0 && r < 0) {
                r = x; /* a symbolic dim broadcast against a known one must equal it */
            } else if (x < 0 && r >= 0) {
                /* keep the known dim */
            } else if (x != r) {
                r = OG_DIM_UNKNOWN; /* two different symbols: could be either */
                unknown = true;
            }
        }
        out->dims[d] = r;
    }
    return OG_OK;
}

og_status og_norm_axis(const og_op_ctx *c, int64_t axis, int rank, const char *what, int *out)
{
    if (axis < -(int64_t)rank || axis >= rank) {
        if (!(rank == 0 && (axis == 0 || axis == -1)))
            return og_op_error(c, OG_ERR_MODEL, "%s %lld is out of range for rank %d", what,
                               (long long)axis, rank);
        *out = 0;
        return OG_OK;
    }
    *out = (int)(axis < 0 ? axis + rank : axis);
    return OG_OK;
}

og_status og_check_dtype(const og_op_ctx *c, const og_vinfo *in, int i, const og_dtype *allowed)
{
    og_dtype t = in[i].dtype;
    if (t == OG_UNDEFINED) return OG_OK;
    for (const og_dtype *a = allowed; *a != OG_UNDEFINED; a++)
        if (*a == t) return OG_OK;
    return og_op_error(c, c->runtime ? OG_ERR_TYPE : OG_ERR_UNSUPPORTED,
                       "input %d has element type %s, which this op does not support here", i,
                       og_dtype_name(t));
}

og_status og_check_same_dtype(const og_op_ctx *c, const og_vinfo *in, int i, int j)
{
    if (in[i].dtype != OG_UNDEFINED && in[j].dtype != OG_UNDEFINED && in[i].dtype != in[j].dtype)
        return og_op_error(c, OG_ERR_TYPE, "inputs %d and %d have different element types (%s, %s)",
                           i, j, og_dtype_name(in[i].dtype), og_dtype_name(in[j].dtype));
    return OG_OK;
}

og_status og_read_int_list(const og_op_ctx *c, const og_tensor *t, const char *what, int64_t **vals,
                           int *n)
{
    *vals = NULL;
    *n = 0;
    if (t->rank > 1)
        return og_op_error(c, OG_ERR_SHAPE, "%s must be 1-D, got rank %d", what, t->rank);
    if (t->dtype != OG_INT64 && t->dtype != OG_INT32)
        return og_op_error(c, OG_ERR_TYPE, "%s must be int64 or int32, got %s", what,
                           og_dtype_name(t->dtype));
    if (t->numel > 1 << 20)
        return og_op_error(c, OG_ERR_SHAPE, "%s has %lld entries", what, (long long)t->numel);
    int64_t *v = og_malloc(c->alloc, (size_t)(t->numel ? t->numel : 1) * sizeof *v);
    if (!v) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < t->numel; i++) v[i] = og_tensor_get_i64(t, i);
    *vals = v;
    *n = (int)t->numel;
    return OG_OK;
}
