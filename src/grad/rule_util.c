/* rule_util.c: node-building helpers shared by the rules of several op families (see
 * rule_util.h). */
#include <string.h>

#include "grad/rule_util.h"
#include "grad/subgraph.h"

int og_rule_mul(og_gb *b, int x, int y) { return og_gb_op2(b, "Mul", x, y); }
int og_rule_add(og_gb *b, int x, int y) { return og_gb_op2(b, "Add", x, y); }
int og_rule_sub(og_gb *b, int x, int y) { return og_gb_op2(b, "Sub", x, y); }
int og_rule_div(og_gb *b, int x, int y) { return og_gb_op2(b, "Div", x, y); }

int og_rule_cast(og_gb *b, int x, og_dtype dt)
{
    int r = og_gb_op1(b, "Cast", x);
    og_gb_attr_int(b, og_gb_last(b), "to", dt);
    return r;
}

int og_rule_select(og_gb *b, int cond, int a, int c, int like)
{
    if (og_gb_opset(b) >= 9) return og_gb_op3(b, "Where", cond, a, c);
    og_dtype dt = og_gb_value(b, like)->dtype;
    int m = og_rule_cast(b, cond, dt);
    int nm = og_rule_cast(b, og_gb_op1(b, "Not", cond), dt);
    return og_rule_add(b, og_rule_mul(b, a, m), og_rule_mul(b, c, nm));
}

int og_rule_where0(og_gb *b, int cond, int v, int like)
{
    if (og_gb_opset(b) >= 9) return og_gb_op3(b, "Where", cond, v, og_gb_scalar_like(b, 0, like));
    return og_rule_mul(b, v, og_rule_cast(b, cond, og_gb_value(b, like)->dtype));
}

int og_rule_accumulate(og_gb *b, int a, int v) { return a == -1 ? v : og_gb_op2(b, "Add", a, v); }

int og_rule_zeros_like(og_gb *b, int v)
{
    int z = og_gb_scalar_like(b, 0.0, v);
    if (og_gb_opset(b) >= 8) return og_gb_op2(b, "Expand", z, og_gb_op1(b, "Shape", v));
    return og_gb_op2(b, "Mul", v, z);
}

int og_rule_reshape_c(og_gb *b, int x, const int64_t *shape, int k)
{
    return og_gb_op2(b, "Reshape", x, og_gb_const_i64(b, shape, k));
}

int og_rule_transpose(og_gb *b, int x, const int64_t *perm, int rank)
{
    int t = og_gb_op1(b, "Transpose", x);
    og_gb_attr_ints(b, og_gb_last(b), "perm", perm, rank);
    return t;
}

int og_rule_unsqueeze(og_gb *b, int x, const int64_t *axes, int k)
{
    if (k == 0) return x;
    if (og_gb_opset(b) >= 13) return og_gb_op2(b, "Unsqueeze", x, og_gb_const_i64(b, axes, k));
    int r = og_gb_op1(b, "Unsqueeze", x);
    og_gb_attr_ints(b, og_gb_last(b), "axes", axes, k);
    return r;
}

int og_rule_slice(og_gb *b, int x, const int64_t *axes, const int64_t *starts, const int64_t *ends,
                  const int64_t *steps, int k)
{
    if (og_gb_opset(b) >= 10) {
        int in[5] = {x, og_gb_const_i64(b, starts, k), og_gb_const_i64(b, ends, k),
                     og_gb_const_i64(b, axes, k), steps ? og_gb_const_i64(b, steps, k) : -1};
        return og_gb_op(b, "Slice", steps ? 5 : 4, in);
    }
    if (steps) return og_gb_fail(b, NULL, OG_ERR_INTERNAL, "Slice steps need opset >= 10");
    int r = og_gb_op1(b, "Slice", x);
    int node = og_gb_last(b);
    og_gb_attr_ints(b, node, "starts", starts, k);
    og_gb_attr_ints(b, node, "ends", ends, k);
    og_gb_attr_ints(b, node, "axes", axes, k);
    return r;
}

int og_rule_slice_rt(og_gb *b, int x, int starts, int ends, const int64_t *axes, int k)
{
    if (og_gb_status(b) || x < 0 || starts < 0 || ends < 0) return -1;
    if (og_gb_opset(b) >= 10) {
        int in[4] = {x, starts, ends, og_gb_const_i64(b, axes, k)};
        return og_gb_op(b, "Slice", 4, in);
    }
    for (int i = 0; i < k; i++) {
        int64_t zero = 0, lo = i, hi = i + 1;
        int s = k == 1 ? starts : og_rule_slice(b, starts, &zero, &lo, &hi, NULL, 1);
        int e = k == 1 ? ends : og_rule_slice(b, ends, &zero, &lo, &hi, NULL, 1);
        int len = og_rule_reshape_c(b, og_rule_sub(b, e, s), NULL, 0);
        x = og_gb_op2(b, "Gather", x, og_rule_add(b, og_rule_iota(b, len), s));
        og_gb_attr_int(b, og_gb_last(b), "axis", axes[i]);
    }
    return x;
}

int og_rule_pad_spatial_rt(og_gb *b, int x, int pb, int pe, int nsp, og_dtype dt)
{
    if (og_gb_opset(b) >= 11) {
        int64_t zz[2] = {0, 0};
        int z2 = og_gb_const_i64(b, zz, 2);
        int parts[4] = {z2, pb, z2, pe};
        int all = og_gb_op(b, "Concat", 4, parts);
        og_gb_attr_int(b, og_gb_last(b), "axis", 0);
        return og_gb_op2(b, "Pad", x, all);
    }
    for (int i = 0; i < nsp; i++) {
        int64_t a = 2 + i, zero = 0, one = 1, lo = i, hi = i + 1;
        int t = og_rule_slice(b, x, &a, &zero, &one, NULL, 1);
        int slab = og_rule_cast(b, og_gb_op2(b, "Less", t, t), dt), parts[3];
        for (int k = 0; k < 2; k++) {
            int cnt = og_rule_slice(b, k ? pe : pb, &zero, &lo, &hi, NULL, 1);
            int idx = og_rule_mul(b, og_rule_iota(b, og_rule_reshape_c(b, cnt, NULL, 0)),
                                  og_gb_scalar_i64(b, 0, OG_INT64));
            parts[k ? 2 : 0] = og_gb_op2(b, "Gather", slab, idx);
            og_gb_attr_int(b, og_gb_last(b), "axis", a);
        }
        parts[1] = x;
        x = og_gb_op(b, "Concat", 3, parts);
        og_gb_attr_int(b, og_gb_last(b), "axis", a);
    }
    return x;
}

int og_rule_one_hot(og_gb *b, int idx, int depth, og_dtype dt, int64_t axis)
{
    int64_t v[2] = {0, 1};
    og_dtype vt = dt == OG_BFLOAT16 ? OG_FLOAT : dt;
    int r = og_gb_op3(b, "OneHot", idx, depth, og_rule_cast(b, og_gb_const_i64(b, v, 2), vt));
    og_gb_attr_int(b, og_gb_last(b), "axis", axis);
    return vt == dt ? r : og_rule_cast(b, r, dt);
}

int og_rule_shape_tail(og_gb *b, int v, int64_t from)
{
    int64_t big = INT64_MAX, zero = 0;
    return og_rule_slice(b, og_gb_op1(b, "Shape", v), &zero, &from, &big, NULL, 1);
}

int og_rule_relu_i64(og_gb *b, int v)
{
    if (og_gb_opset(b) >= 9) {
        int z = og_gb_scalar_i64(b, 0, OG_INT64);
        return og_gb_op3(b, "Where", og_gb_op2(b, "Less", v, z), z, v);
    }
    return og_rule_cast(b, og_gb_op1(b, "Relu", og_rule_cast(b, v, OG_DOUBLE)), OG_INT64);
}

int og_rule_reduce(og_gb *b, const char *op, int x, const int64_t *axes, int k, bool keep)
{
    if (k == 0) return x;
    if (strcmp(op, "ReduceSum") == 0) return og_gb_reduce_sum(b, x, axes, k, keep);
    int r;
    if (og_gb_opset(b) >= 18) {
        r = og_gb_op2(b, op, x, og_gb_const_i64(b, axes, k));
    } else {
        r = og_gb_op1(b, op, x);
        og_gb_attr_ints(b, og_gb_last(b), "axes", axes, k);
    }
    og_gb_attr_int(b, og_gb_last(b), "keepdims", keep ? 1 : 0);
    return r;
}

int og_rule_reduced_count(og_gb *b, int x, const int64_t *axes, int k, int reduced, og_dtype dt)
{
    const og_value *v = og_gb_value(b, x);
    int64_t cnt = 1;
    for (int i = 0; i < k; i++) {
        if (!og_dim_known(v->dims[axes[i]])) {
            int c = og_gb_op2(b, "Div", og_gb_op1(b, "Size", x), og_gb_op1(b, "Size", reduced));
            return og_rule_cast(b, c, dt);
        }
        cnt *= v->dims[axes[i]];
    }
    return og_gb_scalar(b, (double)cnt, dt);
}

int og_rule_dim(og_gb *b, int v, int axis)
{
    if (og_gb_status(b) || v < 0) return -1;
    int64_t d = og_gb_value(b, v)->dims[axis];
    if (d >= 0) return og_gb_scalar_i64(b, d, OG_INT64);
    return og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", v), og_gb_scalar_i64(b, axis, OG_INT64));
}

/* A graph input of sub `name` (prefix + suffix) of type dt and rank `rank` (the next one) */
static int body_input(og_gb *eb, og_graph *B, const char *prefix, const char *suffix, og_dtype dt,
                      int rank)
{
    char *name = og_strfmt(B->alloc, "%s%s", prefix, suffix);
    if (!name) return og_gb_fail(eb, NULL, OG_ERR_NOMEM, "out of memory");
    return og_sub_input(eb, B, name, dt, rank);
}

/* The body of og_rule_iota's Loop, (i, cond, c) -> (cond, c, i), as attribute "body" of
 * node; value names start with prefix (the Loop's output name: no other value has it). */
static void iota_body(og_gb *b, int node, const char *prefix)
{
    og_graph *B = og_graph_new_sub(og_gb_graph(b));
    char *pre = B ? og_strfmt(B->alloc, "%s_body", prefix) : NULL;
    og_gb *eb = pre && (B->name = og_strdup(B->alloc, pre)) ? og_gb_open(B, pre) : NULL;
    og_status st = OG_ERR_NOMEM;
    if (!eb) {
        og_gb_fail(b, NULL, st, "out of memory");
        goto done;
    }
    int in[3], out[3];
    in[0] = body_input(eb, B, pre, "_i", OG_INT64, 0);
    in[1] = body_input(eb, B, pre, "_cond", OG_BOOL, 0);
    in[2] = body_input(eb, B, pre, "_c", OG_INT64, 0);
    og_dtype dt[3] = {OG_BOOL, OG_INT64, OG_INT64};
    for (int k = 0; k < 3; k++) out[k] = og_gb_op1(eb, "Identity", in[(k + 1) % 3]);
    int *outs = og_gb_status(eb) ? NULL : og_malloc(B->alloc, 3 * sizeof *outs);
    if (outs) {
        B->outputs = outs;
        B->n_outputs = 3;
        for (int k = 0; k < 3; k++) {
            outs[k] = out[k];
            B->values[out[k]].is_graph_output = B->values[out[k]].has_value_info = true;
            B->values[out[k]].dtype = dt[k];
        }
    } else {
        og_gb_fail(eb, NULL, OG_ERR_NOMEM, "out of memory");
    }
    st = og_gb_close(eb);
    if (!st) st = og_graph_finalize(B);
    if (st)
        og_gb_fail(b, NULL, st, "%s", og_last_error());
    else
        og_gb_attr_graph(b, node, "body", B);
done:
    if (B) og_free(B->alloc, pre);
    og_graph_free(B);
}

int og_rule_iota(og_gb *b, int n)
{
    if (og_gb_status(b) || n < 0) return -1;
    if (og_gb_opset(b) >= 11)
        return og_gb_op3(b, "Range", og_gb_scalar(b, 0.0, OG_INT64), n,
                         og_gb_scalar(b, 1.0, OG_INT64));
    int64_t one = 1, m1 = -1;
    if (og_gb_opset(b) >= 9) {
        int ones = og_gb_op2(b, "Expand", og_gb_scalar(b, 1.0, OG_INT64),
                             og_rule_reshape_c(b, n, &one, 1));
        return og_rule_reshape_c(b, og_gb_op1(b, "NonZero", ones), &m1, 1);
    }
    /* Loop-1 wants a carried value: n itself, passed through */
    int in[3] = {n, -1, n}, out[2];
    int node = og_gb_op_ext(b, "", "Loop", 3, in, 2, NULL, out);
    if (node < 0) return -1;
    char *prefix = og_strdup(og_gb_alloc(b), og_gb_value(b, out[1])->name);
    if (!prefix) return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    iota_body(b, node, prefix);
    og_free(og_gb_alloc(b), prefix);
    return og_gb_status(b) ? -1 : out[1];
}

int og_rule_iota_dim(og_gb *b, int v, int axis)
{
    if (og_gb_status(b) || v < 0) return -1;
    int64_t d = og_gb_value(b, v)->dims[axis];
    if (d < 0 || d > (1 << 24)) return og_rule_iota(b, og_rule_dim(b, v, axis));
    int64_t *iv = og_malloc(og_gb_alloc(b), (size_t)(d + 1) * sizeof *iv);
    if (!iv) return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    for (int64_t k = 0; k < d; k++) iv[k] = k;
    int r = og_gb_const_i64(b, iv, (int)d);
    og_free(og_gb_alloc(b), iv);
    return r;
}

int og_rule_matmul_axis(og_gb *b, int x, int m, int r, int axis)
{
    int64_t perm[OG_MAX_RANK], inv[OG_MAX_RANK];
    if (axis == r - 1) return og_gb_op2(b, "MatMul", x, m);
    int k = 0;
    for (int d = 0; d < r; d++)
        if (d != axis) perm[k++] = d;
    perm[r - 1] = axis;
    for (int d = 0; d < r; d++) inv[perm[d]] = d;
    int t = og_gb_op2(b, "MatMul", og_rule_transpose(b, x, perm, r), m);
    return og_rule_transpose(b, t, inv, r);
}

int og_rule_scatter_elements(og_gb *b, int data, int idx, int upd, int axis, const char *red)
{
    int in[3] = {data, idx, upd};
    if (data < 0 || idx < 0 || upd < 0) return -1;
    int r = og_gb_op(b, og_gb_opset(b) >= 11 ? "ScatterElements" : "Scatter", 3, in);
    og_gb_attr_int(b, og_gb_last(b), "axis", axis);
    if (red) og_gb_attr_string(b, og_gb_last(b), "reduction", red);
    return r;
}

void og_rule_conv_attrs(og_gb *b, int node, int nsp, const int64_t *strides, const int64_t *dil,
                        const int64_t *pads, int64_t group)
{
    og_gb_attr_ints(b, node, "strides", strides, nsp);
    og_gb_attr_ints(b, node, "dilations", dil, nsp);
    og_gb_attr_ints(b, node, "pads", pads, 2 * nsp);
    if (group != 1) og_gb_attr_int(b, node, "group", group);
}

int og_rule_conv_back(og_gb *b, int dy, int w, int nsp, const int64_t *in, const int64_t *out,
                      const int64_t *k, const int64_t *s, const int64_t *d, const int64_t *pb,
                      int64_t group)
{
    int64_t pads[2 * OG_MAX_RANK], opad[OG_MAX_RANK];
    bool any_op = false;
    for (int i = 0; i < nsp; i++) {
        int64_t ek = (k[i] - 1) * d[i] + 1;
        int64_t pe = s[i] * (out[i] - 1) + ek - in[i] - pb[i];
        opad[i] = 0;
        if (pe < 0) {
            opad[i] = -pe;
            pe = 0;
            any_op = true;
        }
        pads[i] = pb[i];
        pads[nsp + i] = pe;
    }
    int r = og_gb_op2(b, "ConvTranspose", dy, w);
    int node = og_gb_last(b);
    og_rule_conv_attrs(b, node, nsp, s, d, pads, group);
    if (any_op) og_gb_attr_ints(b, node, "output_padding", opad, nsp);
    return r;
}

int og_rule_rank_of(og_gb *b, const og_node *n, int v, const char *what)
{
    int r = og_gb_value(b, v)->rank;
    if (r < 0) og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs the rank of %s", what);
    return r;
}

int og_rule_axis(og_gb *b, const og_node *n, int64_t axis, int rank)
{
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return og_gb_fail(b, n, OG_ERR_MODEL, "axis out of range");
    return (int)axis;
}

double og_rule_tiny(og_dtype dt) { return dt == OG_FLOAT16 || dt == OG_BFLOAT16 ? 1e-7 : 1e-30; }

int og_rule_widen_as(og_gb *b, int x, int like)
{
    if (x < 0 || like < 0) return x;
    return og_rule_is_half(og_gb_value(b, like)->dtype) ? og_rule_cast(b, x, OG_FLOAT) : x;
}
