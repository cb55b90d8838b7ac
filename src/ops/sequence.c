/* sequence.c: the ops whose inputs or outputs are sequences or optionals (ONNX's
 * SequenceProto and OptionalProto values, og_tensor kinds in onnxgrad): SequenceEmpty,
 * SequenceConstruct, SequenceAt, SequenceInsert, SequenceErase, SequenceLength,
 * SplitToSequence, ConcatFromSequence, Optional, OptionalHasElement, OptionalGetElement.
 *
 * At load, inference reads and makes nested types (og_type: seq(tensor(float) [?, 3])); at
 * run time it reads the values themselves (in[i].value is the container) and says only the
 * kind of a container output, which the kernel fills.  Every op here declares OG_OP_ANY_KIND
 * and checks its inputs' kinds itself: a value of unknown type at load passes, the run
 * checks it again. */
#include <string.h>

#include "ops/sequence.h"

static const og_dtype pos_types[] = {OG_INT32, OG_INT64, OG_UNDEFINED};

/* ---- helpers ----------------------------------------------------------------------- */

/* At load, a value whose type nothing declared looks like a tensor of unknown dtype and
 * rank: it may be anything. */
static bool kind_unknown(const og_op_ctx *c, const og_vinfo *v)
{
    return !c->runtime && v->kind == OG_KIND_TENSOR && v->dtype == OG_UNDEFINED && v->rank < 0;
}

static og_status expect_kind(const og_op_ctx *c, const og_vinfo *in, int i, og_kind kind)
{
    if (in[i].kind == kind || kind_unknown(c, &in[i])) return OG_OK;
    return og_op_error(c, OG_ERR_TYPE, "input %d must be a %s, got a %s", i, og_kind_name(kind),
                       og_kind_name(in[i].kind));
}

/* The element type of a sequence or optional at load (NULL: unknown). */
static const og_type *elem_type(const og_vinfo *v)
{
    return v->kind != OG_KIND_TENSOR && v->type ? v->type->elem : NULL;
}

/* The type of tensor value v, for a container holding it. */
static const og_type *tensor_type(const og_op_ctx *c, const og_vinfo *v)
{
    return og_op_type_tensor(c, v->dtype, v->rank, v->dims);
}

/* A sequence of tensors of dtype and (rank, dims) as far as known. */
static void set_seq(const og_op_ctx *c, og_vinfo *out, og_dtype dtype, int rank,
                    const int64_t *dims)
{
    og_vinfo_set_kind(out, OG_KIND_SEQUENCE,
                      og_op_type_wrap(c, OG_KIND_SEQUENCE, OG_UNDEFINED,
                                      og_op_type_tensor(c, dtype, rank, dims)));
}

/* out becomes a value of type t (a tensor's dtype and shape, or a container). */
static void set_from_type(og_vinfo *out, const og_type *t)
{
    if (!t) return;
    if (t->kind == OG_KIND_TENSOR)
        og_vinfo_set(out, t->dtype, t->rank, t->dims);
    else
        og_vinfo_set_kind(out, t->kind, t);
}

og_status og_seq_position(const og_op_ctx *c, const og_tensor *p, int64_t len, bool insert,
                          int64_t *pos)
{
    if (p->kind != OG_KIND_TENSOR || (p->dtype != OG_INT32 && p->dtype != OG_INT64))
        return og_op_error(c, OG_ERR_TYPE, "position must be an int32 or int64 tensor");
    if (p->numel != 1 || p->rank > 1)
        return og_op_error(c, OG_ERR_SHAPE, "position must be a scalar, got %lld values",
                           (long long)p->numel);
    int64_t v = og_tensor_get_i64(p, 0), hi = insert ? len : len - 1;
    if (v < -len || v > hi)
        return og_op_error(c, OG_ERR_RUNTIME,
                           "position %lld is outside [%lld, %lld] for a sequence of %lld",
                           (long long)v, (long long)-len, (long long)hi, (long long)len);
    *pos = v < 0 ? v + len : v;
    return OG_OK;
}

static og_status check_position(const og_op_ctx *c, const og_vinfo *in, int i)
{
    og_status st = og_check_dtype(c, in, i, pos_types);
    if (!st && in[i].rank > 1)
        st = og_op_error(c, OG_ERR_SHAPE, "input %d (position) must be a scalar, got rank %d", i,
                         in[i].rank);
    return st;
}

/* ---- attributes ---------------------------------------------------------------------- */

static og_status seq_parse(const og_op_ctx *c, void **params)
{
    const og_node *n = c->node;
    og_status st = og_attr_check_type(c, "axis", OG_ATTR_INT);
    if (!st) st = og_attr_check_type(c, "keepdims", OG_ATTR_INT);
    if (!st) st = og_attr_check_type(c, "new_axis", OG_ATTR_INT);
    if (!st) st = og_attr_check_type(c, "dtype", OG_ATTR_INT);
    if (st) return st;
    og_seq_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    *params = p;
    p->axis = og_attr_int(n, "axis", 0);
    p->keepdims = og_attr_int(n, "keepdims", 1) != 0;
    p->new_axis = og_attr_int(n, "new_axis", 0) != 0;
    int64_t dt = og_attr_int(n, "dtype", OG_FLOAT);
    p->dtype = (og_dtype)dt;
    if (strcmp(n->op_type, "ConcatFromSequence") == 0 && !og_node_attr(n, "axis"))
        return og_op_error(c, OG_ERR_MODEL, "attribute 'axis' is required");
    if (strcmp(n->op_type, "SequenceEmpty") == 0 &&
        (dt < 1 || dt > OG_BFLOAT16 || !og_dtype_is_valid((og_dtype)dt)))
        return og_op_error(c, OG_ERR_UNSUPPORTED,
                           "attribute 'dtype' %lld is not a type onnxgrad has", (long long)dt);
    return OG_OK;
}

/* ---- sequences ------------------------------------------------------------------------ */

static og_status empty_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    const og_seq_params *p = c->node->params;
    set_seq(c, &out[0], p->dtype, -1, NULL);
    return OG_OK;
}

/* SequenceConstruct: tensors of one dtype; the items' type keeps the dims they share. */
static og_status construct_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                 int n_out)
{
    og_dtype dt = OG_UNDEFINED;
    int rank = in[0].rank;
    int64_t dims[OG_MAX_RANK];
    memcpy(dims, in[0].dims, sizeof dims);
    for (int i = 0; i < n_in; i++) {
        og_status st = expect_kind(c, in, i, OG_KIND_TENSOR);
        if (st) return st;
        if (in[i].dtype != OG_UNDEFINED) {
            if (dt != OG_UNDEFINED && in[i].dtype != dt)
                return og_op_error(c, OG_ERR_TYPE,
                                   "input %d is %s, input 0 %s: a sequence holds "
                                   "one element type",
                                   i, og_dtype_name(in[i].dtype), og_dtype_name(dt));
            dt = in[i].dtype;
        }
        if (in[i].rank != rank) rank = -1;
        for (int d = 0; rank >= 0 && d < rank; d++)
            if (in[i].dims[d] != dims[d]) dims[d] = OG_DIM_UNKNOWN;
    }
    set_seq(c, &out[0], dt, rank, dims);
    return OG_OK;
}

static og_status at_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                          int n_out)
{
    og_status st = expect_kind(c, in, 0, OG_KIND_SEQUENCE);
    if (!st) st = check_position(c, in, 1);
    if (st) return st;
    if (!c->runtime) {
        set_from_type(&out[0], elem_type(&in[0]));
        return OG_OK;
    }
    const og_tensor *s = in[0].value;
    int64_t pos;
    if ((st = og_seq_position(c, in[1].value, s->n_items, false, &pos))) return st;
    const og_tensor *t = s->items[pos];
    if (t->kind != OG_KIND_TENSOR)
        return og_op_error(c, OG_ERR_UNSUPPORTED, "item %lld is a %s: sequences of tensors only",
                           (long long)pos, og_kind_name(t->kind));
    og_vinfo_set(&out[0], t->dtype, t->rank, t->dims);
    return OG_OK;
}

/* SequenceInsert: the inserted tensor joins the items' type. */
static og_status insert_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    og_status st = expect_kind(c, in, 0, OG_KIND_SEQUENCE);
    if (!st) st = expect_kind(c, in, 1, OG_KIND_TENSOR);
    if (!st && n_in > 2 && in[2].dtype != OG_UNDEFINED) st = check_position(c, in, 2);
    if (st) return st;
    if (c->runtime) {
        const og_tensor *s = in[0].value;
        int64_t pos;
        if (n_in > 2 && in[2].value &&
            (st = og_seq_position(c, in[2].value, s->n_items, true, &pos)))
            return st;
        if (s->n_items && s->items[0]->dtype != in[1].dtype)
            return og_op_error(c, OG_ERR_TYPE,
                               "the sequence holds %s tensors, the tensor to insert is %s",
                               og_dtype_name(s->items[0]->dtype), og_dtype_name(in[1].dtype));
        og_vinfo_set_kind(&out[0], OG_KIND_SEQUENCE, NULL);
        return OG_OK;
    }
    const og_type *e = elem_type(&in[0]);
    if (e && e->kind == OG_KIND_TENSOR && e->dtype != OG_UNDEFINED && in[1].dtype != OG_UNDEFINED &&
        e->dtype != in[1].dtype)
        return og_op_error(c, OG_ERR_TYPE,
                           "the sequence holds %s tensors, the tensor to insert is %s",
                           og_dtype_name(e->dtype), og_dtype_name(in[1].dtype));
    og_dtype dt = in[1].dtype != OG_UNDEFINED ? in[1].dtype : e ? e->dtype : OG_UNDEFINED;
    int rank = in[1].rank;
    int64_t dims[OG_MAX_RANK];
    memcpy(dims, in[1].dims, sizeof dims);
    if (!e || e->kind != OG_KIND_TENSOR || e->rank != rank) {
        rank = -1; /* the items' ranks (or an empty sequence's) are not known to agree */
    } else {
        for (int d = 0; d < rank; d++)
            if (e->dims[d] != dims[d]) dims[d] = OG_DIM_UNKNOWN;
    }
    set_seq(c, &out[0], dt, rank, dims);
    return OG_OK;
}

static og_status erase_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    og_status st = expect_kind(c, in, 0, OG_KIND_SEQUENCE);
    if (!st && n_in > 1 && in[1].dtype != OG_UNDEFINED) st = check_position(c, in, 1);
    if (st) return st;
    if (c->runtime) {
        const og_tensor *s = in[0].value;
        int64_t pos;
        if (s->n_items == 0)
            return og_op_error(c, OG_ERR_RUNTIME, "cannot erase from an empty sequence");
        if (n_in > 1 && in[1].value &&
            (st = og_seq_position(c, in[1].value, s->n_items, false, &pos)))
            return st;
    }
    og_vinfo_set_kind(&out[0], OG_KIND_SEQUENCE,
                      in[0].kind == OG_KIND_SEQUENCE ? in[0].type : NULL);
    return OG_OK;
}

static og_status length_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    og_status st = expect_kind(c, in, 0, OG_KIND_SEQUENCE);
    if (st) return st;
    og_vinfo_set(&out[0], OG_INT64, 0, NULL);
    return OG_OK;
}

og_status og_seq_split_sizes(const og_op_ctx *c, const og_tensor *x, int axis,
                             const og_tensor *split, int64_t *n, int64_t **sizes)
{
    int64_t len = x->dims[axis], count, chunk = 1;
    if (sizes) *sizes = NULL;
    bool list = split && split->rank == 1;
    if (split) {
        if (split->dtype != OG_INT32 && split->dtype != OG_INT64)
            return og_op_error(c, OG_ERR_TYPE, "input 1 (split) must be int32 or int64, got %s",
                               og_dtype_name(split->dtype));
        if (split->rank > 1)
            return og_op_error(c, OG_ERR_SHAPE,
                               "input 1 (split) must be a scalar or 1-D, got rank %d", split->rank);
    }
    if (list) {
        count = split->numel;
        int64_t sum = 0;
        for (int64_t i = 0; i < count; i++) {
            int64_t v = og_tensor_get_i64(split, i);
            if (v < 0 || !og_add_i64(sum, v, &sum))
                return og_op_error(c, OG_ERR_SHAPE, "split entry %lld is %lld, not a length",
                                   (long long)i, (long long)v);
        }
        if (sum != len)
            return og_op_error(c, OG_ERR_SHAPE,
                               "the split lengths sum to %lld, but axis %d has %lld elements",
                               (long long)sum, axis, (long long)len);
    } else {
        if (split) chunk = og_tensor_get_i64(split, 0);
        if (chunk <= 0)
            return og_op_error(c, OG_ERR_SHAPE, "split must be positive, got %lld",
                               (long long)chunk);
        count = len / chunk + (len % chunk != 0);
    }
    *n = count;
    if (!sizes) return OG_OK;
    int64_t *s = og_malloc(c->alloc, (size_t)(count + 1) * sizeof *s);
    if (!s) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < count; i++)
        s[i] = list                     ? og_tensor_get_i64(split, i)
               : (i + 1) * chunk <= len ? chunk
                                        : len - i * chunk;
    *sizes = s;
    return OG_OK;
}

static og_status split_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    const og_seq_params *p = c->node->params;
    og_status st = expect_kind(c, in, 0, OG_KIND_TENSOR);
    if (!st && n_in > 1 && in[1].kind != OG_KIND_TENSOR) st = expect_kind(c, in, 1, OG_KIND_TENSOR);
    if (!st && n_in > 1) st = og_check_dtype(c, in, 1, pos_types);
    if (st) return st;
    bool has_split = n_in > 1 && (in[1].dtype != OG_UNDEFINED || in[1].rank >= 0 || in[1].value);
    if (in[0].rank < 0) {
        set_seq(c, &out[0], in[0].dtype, -1, NULL);
        return OG_OK;
    }
    if (in[0].rank == 0) return og_op_error(c, OG_ERR_SHAPE, "input 0 must not be a scalar");
    int axis;
    if ((st = og_norm_axis(c, p->axis, in[0].rank, "axis", &axis))) return st;
    if (c->runtime) {
        int64_t count;
        if ((st = og_seq_split_sizes(c, in[0].value, axis, has_split ? in[1].value : NULL, &count,
                                     NULL)))
            return st;
        og_vinfo_set_kind(&out[0], OG_KIND_SEQUENCE, NULL);
        return OG_OK;
    }
    int64_t dims[OG_MAX_RANK];
    int rank = in[0].rank;
    memcpy(dims, in[0].dims, sizeof dims);
    if (!has_split && !p->keepdims) {
        memmove(dims + axis, dims + axis + 1, (size_t)(rank - axis - 1) * sizeof *dims);
        rank--;
    } else {
        dims[axis] = has_split ? OG_DIM_UNKNOWN : 1;
    }
    set_seq(c, &out[0], in[0].dtype, rank, dims);
    return OG_OK;
}

/* ConcatFromSequence: the items share their shape but along axis (new_axis: entirely). */
static og_status concat_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    const og_seq_params *p = c->node->params;
    og_status st = expect_kind(c, in, 0, OG_KIND_SEQUENCE);
    if (st) return st;
    if (!c->runtime) {
        const og_type *e = elem_type(&in[0]);
        if (!e || e->kind != OG_KIND_TENSOR) return OG_OK;
        out[0].dtype = e->dtype;
        if (e->rank < 0) return OG_OK;
        int rank = e->rank + p->new_axis, axis;
        if ((st = og_norm_axis(c, p->axis, rank, "axis", &axis))) return st;
        int64_t dims[OG_MAX_RANK];
        for (int d = 0, s = 0; d < rank; d++)
            dims[d] = p->new_axis && d == axis ? OG_DIM_UNKNOWN : e->dims[s++];
        dims[axis] = OG_DIM_UNKNOWN;
        og_vinfo_set(&out[0], e->dtype, rank, dims);
        return OG_OK;
    }
    const og_tensor *s = in[0].value;
    if (s->n_items == 0)
        return og_op_error(c, OG_ERR_SHAPE, "cannot concatenate an empty sequence");
    const og_tensor *t0 = s->items[0];
    if (t0->kind != OG_KIND_TENSOR)
        return og_op_error(c, OG_ERR_UNSUPPORTED, "the sequence holds %ss, not tensors",
                           og_kind_name(t0->kind));
    int rank = t0->rank + p->new_axis, axis;
    if (rank == 0) return og_op_error(c, OG_ERR_SHAPE, "cannot concatenate scalars");
    if ((st = og_norm_axis(c, p->axis, rank, "axis", &axis))) return st;
    int64_t total = 0;
    for (int64_t i = 0; i < s->n_items; i++) {
        const og_tensor *t = s->items[i];
        bool same = t->kind == OG_KIND_TENSOR && t->rank == t0->rank;
        for (int d = 0; same && d < t->rank; d++)
            same = t->dims[d] == t0->dims[d] || (!p->new_axis && d == axis);
        if (!same) {
            char a[128], b[128];
            return og_op_error(c, OG_ERR_SHAPE,
                               "item %lld has shape %s, item 0 %s: they must agree%s", (long long)i,
                               og_shape_str(t->rank, t->dims, a, sizeof a),
                               og_shape_str(t0->rank, t0->dims, b, sizeof b),
                               p->new_axis ? "" : " but along the axis");
        }
        if (t->dtype != t0->dtype)
            return og_op_error(c, OG_ERR_TYPE, "item %lld is %s, item 0 %s", (long long)i,
                               og_dtype_name(t->dtype), og_dtype_name(t0->dtype));
        if (!og_add_i64(total, p->new_axis ? 1 : t->dims[axis], &total))
            return og_op_error(c, OG_ERR_SHAPE, "the concatenation is too long");
    }
    int64_t dims[OG_MAX_RANK];
    for (int d = 0, k = 0; d < rank; d++) dims[d] = p->new_axis && d == axis ? 1 : t0->dims[k++];
    dims[axis] = total;
    og_vinfo_set(&out[0], t0->dtype, rank, dims);
    return OG_OK;
}

/* ---- optionals ------------------------------------------------------------------------ */

static og_status optional_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                int n_out)
{
    const og_type *t = NULL;
    bool present = n_in > 0 && (c->runtime ? in[0].value != NULL : c->node->in[0] >= 0);
    if (present && in[0].kind == OG_KIND_OPTIONAL)
        return og_op_error(c, OG_ERR_TYPE, "input 0 is an optional: optionals do not nest");
    if (present && !kind_unknown(c, &in[0]))
        t = in[0].kind == OG_KIND_TENSOR ? tensor_type(c, &in[0]) : in[0].type;
    og_vinfo_set_kind(&out[0], OG_KIND_OPTIONAL,
                      og_op_type_wrap(c, OG_KIND_OPTIONAL, OG_UNDEFINED, t));
    return OG_OK;
}

static og_status has_element_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                   int n_out)
{
    if (c->node->since_version < 18 && n_in > 0) {
        og_status st = expect_kind(c, in, 0, OG_KIND_OPTIONAL);
        if (st) return st;
    }
    og_vinfo_set(&out[0], OG_BOOL, 0, NULL);
    return OG_OK;
}

static og_status get_element_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                   int n_out)
{
    if (in[0].kind != OG_KIND_OPTIONAL) {
        og_status st = OG_OK;
        if (c->node->since_version < 18) st = expect_kind(c, in, 0, OG_KIND_OPTIONAL);
        if (st || kind_unknown(c, &in[0])) return st;
        if (in[0].kind == OG_KIND_MAP)
            return og_op_error(c, OG_ERR_TYPE,
                               "input 0 is a map: an optional, tensor or sequence "
                               "is expected");
        og_vinfo_copy_shape(&out[0], &in[0]); /* opset 18: a tensor or sequence passes */
        return OG_OK;
    }
    if (!c->runtime) {
        set_from_type(&out[0], elem_type(&in[0]));
        return OG_OK;
    }
    const og_tensor *o = in[0].value;
    if (o->n_items == 0)
        return og_op_error(c, OG_ERR_RUNTIME,
                           "the optional input is empty: it has no element to get");
    const og_tensor *t = o->items[0];
    if (t->kind == OG_KIND_TENSOR)
        og_vinfo_set(&out[0], t->dtype, t->rank, t->dims);
    else
        og_vinfo_set_kind(&out[0], t->kind, NULL);
    return OG_OK;
}

#define SEQ_OP(name, lo, hi, parse, infer)                                                         \
    {                                                                                              \
#name, "", OG_SINCE(name), lo, hi, 1, 1, parse, NULL, infer, OG_OP_ANY_KIND                \
    }

const og_op_def og_ops_sequence[] = {
    SEQ_OP(SequenceEmpty, 0, 0, seq_parse, empty_infer),
    SEQ_OP(SequenceConstruct, 1, -1, NULL, construct_infer),
    SEQ_OP(SequenceAt, 2, 2, NULL, at_infer),
    SEQ_OP(SequenceInsert, 2, 3, NULL, insert_infer),
    SEQ_OP(SequenceErase, 1, 2, NULL, erase_infer),
    SEQ_OP(SequenceLength, 1, 1, NULL, length_infer),
    SEQ_OP(SplitToSequence, 1, 2, seq_parse, split_infer),
    SEQ_OP(ConcatFromSequence, 1, 1, seq_parse, concat_infer),
    SEQ_OP(Optional, 0, 1, NULL, optional_infer),
    SEQ_OP(OptionalHasElement, 0, 1, NULL, has_element_infer),
    SEQ_OP(OptionalGetElement, 1, 1, NULL, get_element_infer),
    {0},
};
