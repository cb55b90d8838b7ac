/* sequence.c: CPU kernels of the sequence and optional ops (src/ops/sequence.c).
 *
 * A container output arrives empty (the executor makes it from inference's kind) and the
 * kernel appends to it.  Items that pass through unchanged (SequenceConstruct, Insert,
 * Erase, Optional, OptionalGetElement of a sequence) are shared, not copied
 * (og_value_share: views of the same reference-counted buffers), so building a sequence
 * costs nothing per element.  SplitToSequence makes new tensors, ConcatFromSequence and
 * SequenceAt copy into the executor's output; all move elements by size, strings included
 * (their pointers are copied, then owned: og_tensor_own_strings). */
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "ops/sequence.h"

static og_op_ctx op_ctx_of(const og_kernel_ctx *k)
{
    og_op_ctx c = {k->node, k->alloc, NULL, true};
    return c;
}

static og_status append_share(const og_kernel_ctx *k, og_tensor *c, const og_tensor *item)
{
    og_tensor *t = NULL;
    og_status st = og_value_share(item, k->alloc, &t);
    return st ? st : og_value_append(c, t);
}

static og_status need_kind(const og_kernel_ctx *k, const og_tensor *v, int i, og_kind kind)
{
    if (v && v->kind == kind) return OG_OK;
    return og_kernel_error(k, OG_ERR_TYPE, "input %d must be a %s, got a %s", i, og_kind_name(kind),
                           v ? og_kind_name(v->kind) : "nothing");
}

/* Copy tensor src's elements into dst (same dtype and element count). */
static og_status copy_tensor(og_tensor *dst, const og_tensor *src)
{
    if (dst->numel == 0) return OG_OK;
    memcpy(dst->data, src->data, (size_t)src->numel * og_dtype_storage_size(src->dtype));
    return src->dtype == OG_STRING ? og_tensor_own_strings(dst) : OG_OK;
}

/* Copy a block of rows: rows of `n` elements from src (row stride ss) to dst (row stride ds),
 * elements of es bytes; the caller owns strings afterwards. */
static void copy_rows(char *dst, const char *src, int64_t rows, int64_t n, int64_t ds, int64_t ss,
                      size_t es)
{
    for (int64_t r = 0; r < rows; r++)
        memcpy(dst + r * ds * (int64_t)es, src + r * ss * (int64_t)es, (size_t)n * es);
}

static og_status k_empty(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                         og_tensor *const *out, int n_out)
{
    return OG_OK; /* the executor's container is the empty sequence */
}

static og_status k_construct(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out)
{
    og_status st = need_kind(k, out[0], -1, OG_KIND_SEQUENCE);
    for (int i = 0; !st && i < n_in; i++) {
        if ((st = need_kind(k, in[i], i, OG_KIND_TENSOR))) break;
        if (in[i]->dtype != in[0]->dtype)
            return og_kernel_error(k, OG_ERR_TYPE, "input %d is %s, input 0 %s", i,
                                   og_dtype_name(in[i]->dtype), og_dtype_name(in[0]->dtype));
        st = append_share(k, out[0], in[i]);
    }
    return st;
}

static og_status k_at(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                      og_tensor *const *out, int n_out)
{
    og_op_ctx c = op_ctx_of(k);
    int64_t pos;
    og_status st = need_kind(k, in[0], 0, OG_KIND_SEQUENCE);
    if (!st) st = og_seq_position(&c, in[1], in[0]->n_items, false, &pos);
    if (st) return st;
    const og_tensor *t = in[0]->items[pos];
    if (t->kind != OG_KIND_TENSOR || t->dtype != out[0]->dtype || t->numel != out[0]->numel)
        return og_kernel_error(k, OG_ERR_INTERNAL, "item %lld does not fit the output",
                               (long long)pos);
    return copy_tensor(out[0], t);
}

static og_status k_insert(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    og_op_ctx c = op_ctx_of(k);
    const og_tensor *s = in[0];
    og_status st = need_kind(k, s, 0, OG_KIND_SEQUENCE);
    if (!st) st = need_kind(k, in[1], 1, OG_KIND_TENSOR);
    if (st) return st;
    int64_t pos = s->n_items;
    if (n_in > 2 && in[2] && (st = og_seq_position(&c, in[2], s->n_items, true, &pos))) return st;
    if (s->n_items && s->items[0]->dtype != in[1]->dtype)
        return og_kernel_error(k, OG_ERR_TYPE, "the sequence holds %s tensors, not %s",
                               og_dtype_name(s->items[0]->dtype), og_dtype_name(in[1]->dtype));
    for (int64_t i = 0; !st && i <= s->n_items; i++) {
        if (i == pos) st = append_share(k, out[0], in[1]);
        if (!st && i < s->n_items) st = append_share(k, out[0], s->items[i]);
    }
    return st;
}

static og_status k_erase(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                         og_tensor *const *out, int n_out)
{
    og_op_ctx c = op_ctx_of(k);
    const og_tensor *s = in[0];
    og_status st = need_kind(k, s, 0, OG_KIND_SEQUENCE);
    if (st) return st;
    if (s->n_items == 0)
        return og_kernel_error(k, OG_ERR_RUNTIME, "cannot erase from an empty sequence");
    int64_t pos = s->n_items - 1;
    if (n_in > 1 && in[1] && (st = og_seq_position(&c, in[1], s->n_items, false, &pos))) return st;
    for (int64_t i = 0; !st && i < s->n_items; i++)
        if (i != pos) st = append_share(k, out[0], s->items[i]);
    return st;
}

static og_status k_length(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    og_status st = need_kind(k, in[0], 0, OG_KIND_SEQUENCE);
    if (st) return st;
    *(int64_t *)out[0]->data = in[0]->n_items;
    return OG_OK;
}

/* SplitToSequence: part i is x[..., off_i : off_i + len_i, ...] along the axis, a new tensor
 * (without the axis when keepdims is 0 and there is no split input). */
static og_status k_split(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                         og_tensor *const *out, int n_out)
{
    const og_seq_params *p = k->params;
    og_op_ctx c = op_ctx_of(k);
    const og_tensor *x = in[0], *split = n_in > 1 ? in[1] : NULL;
    og_status st = need_kind(k, x, 0, OG_KIND_TENSOR);
    if (st) return st;
    if (x->rank == 0) return og_kernel_error(k, OG_ERR_SHAPE, "input 0 must not be a scalar");
    int axis = (int)(p->axis < 0 ? p->axis + x->rank : p->axis);
    if (axis < 0 || axis >= x->rank)
        return og_kernel_error(k, OG_ERR_INVALID_ARG, "axis %lld is outside [-%d, %d]",
                               (long long)p->axis, x->rank, x->rank - 1);
    int64_t count = 0, *sizes = NULL;
    if ((st = og_seq_split_sizes(&c, x, axis, split, &count, &sizes))) return st;
    bool drop = !split && !p->keepdims;
    size_t es = og_dtype_storage_size(x->dtype);
    int64_t outer = 1, inner = 1, off = 0;
    for (int d = 0; d < axis; d++) outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
    for (int64_t i = 0; !st && i < count; i++) {
        int64_t dims[OG_MAX_RANK];
        int rank = x->rank;
        memcpy(dims, x->dims, sizeof dims);
        dims[axis] = sizes[i];
        if (drop) {
            memmove(dims + axis, dims + axis + 1, (size_t)(rank - axis - 1) * sizeof *dims);
            rank--;
        }
        og_tensor *t = NULL;
        if ((st = og_tensor_alloc(x->dtype, rank, dims, k->alloc, &t))) break;
        if (t->numel)
            copy_rows(t->data, (const char *)x->data + off * inner * (int64_t)es, outer,
                      sizes[i] * inner, sizes[i] * inner, x->dims[axis] * inner, es);
        if (x->dtype == OG_STRING && (st = og_tensor_own_strings(t))) {
            og_tensor_free(t);
            break;
        }
        off += sizes[i];
        st = og_value_append(out[0], t);
    }
    og_free(k->alloc, sizes);
    return st;
}

/* ConcatFromSequence: item i fills rows of len_i * inner elements at offset off_i * inner of
 * each of the outer rows (new_axis: len_i = 1). */
static og_status k_concat(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    const og_seq_params *p = k->params;
    const og_tensor *s = in[0];
    og_tensor *o = out[0];
    og_status st = need_kind(k, s, 0, OG_KIND_SEQUENCE);
    if (st) return st;
    if (s->n_items == 0) return og_kernel_error(k, OG_ERR_SHAPE, "empty sequence");
    int axis = (int)(p->axis < 0 ? p->axis + o->rank : p->axis);
    size_t es = og_dtype_storage_size(o->dtype);
    int64_t outer = 1, inner = 1, off = 0;
    for (int d = 0; d < axis; d++) outer *= o->dims[d];
    for (int d = axis + 1; d < o->rank; d++) inner *= o->dims[d];
    for (int64_t i = 0; i < s->n_items; i++) {
        const og_tensor *t = s->items[i];
        if (t->kind != OG_KIND_TENSOR || t->dtype != o->dtype)
            return og_kernel_error(k, OG_ERR_TYPE, "item %lld does not match item 0", (long long)i);
        int64_t len = p->new_axis ? 1 : t->dims[axis];
        if (t->numel)
            copy_rows((char *)o->data + off * inner * (int64_t)es, t->data, outer, len * inner,
                      o->dims[axis] * inner, len * inner, es);
        off += len;
    }
    return o->dtype == OG_STRING && o->numel ? og_tensor_own_strings(o) : OG_OK;
}

static og_status k_optional(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, int n_out)
{
    og_status st = need_kind(k, out[0], -1, OG_KIND_OPTIONAL);
    if (st || n_in == 0 || !in[0]) return st; /* no input: the empty optional */
    if (in[0]->kind == OG_KIND_OPTIONAL)
        return og_kernel_error(k, OG_ERR_TYPE, "input 0 is an optional: optionals do not nest");
    return append_share(k, out[0], in[0]);
}

static og_status k_has_element(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                               og_tensor *const *out, int n_out)
{
    const og_tensor *v = n_in > 0 ? in[0] : NULL;
    *(uint8_t *)out[0]->data = v && (v->kind != OG_KIND_OPTIONAL || v->n_items > 0);
    return OG_OK;
}

static og_status k_get_element(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                               og_tensor *const *out, int n_out)
{
    const og_tensor *v = in[0];
    if (v->kind == OG_KIND_OPTIONAL) {
        if (v->n_items == 0)
            return og_kernel_error(k, OG_ERR_RUNTIME, "the optional input is empty");
        v = v->items[0];
    }
    if (v->kind != out[0]->kind)
        return og_kernel_error(k, OG_ERR_INTERNAL, "the element is a %s, the output a %s",
                               og_kind_name(v->kind), og_kind_name(out[0]->kind));
    if (v->kind == OG_KIND_TENSOR) return copy_tensor(out[0], v);
    og_status st = OG_OK;
    for (int64_t i = 0; !st && i < v->n_items; i++) st = append_share(k, out[0], v->items[i]);
    return st;
}

/* No type constraint, on purpose: these kernels move tensors (shared into a sequence or out
 * of it) or copy their bytes by element size, for every dtype, strings included; they check
 * only that a sequence's items agree with each other.  There is no typed loop to bind. */
#define SEQ_K(op, f)                                                                               \
    {                                                                                              \
        .name = #op, .domain = "", .fn = f, .strings = 1                                           \
    }

const og_kernel_def og_cpu_sequence[] = {
    SEQ_K(SequenceEmpty, k_empty),
    SEQ_K(SequenceConstruct, k_construct),
    SEQ_K(SequenceAt, k_at),
    SEQ_K(SequenceInsert, k_insert),
    SEQ_K(SequenceErase, k_erase),
    SEQ_K(SequenceLength, k_length),
    SEQ_K(SplitToSequence, k_split),
    SEQ_K(ConcatFromSequence, k_concat),
    SEQ_K(Optional, k_optional),
    SEQ_K(OptionalHasElement, k_has_element),
    SEQ_K(OptionalGetElement, k_get_element),
    {.name = NULL},
};
