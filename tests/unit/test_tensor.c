/* test_tensor.c: the tensor family's ops run node by node (parse, infer, kernel) against
 * naive references, on shapes that exercise the copy engine's fast paths (merged runs,
 * blocked transposes, fills), plus the error paths. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "ops/op.h"
#include "ops/tensor_shared.h"

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s (%s)\n", __FILE__, __LINE__, #cond,           \
                    og_last_error());                                                              \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* A node of `op` at since-version `since` with these attributes, no inputs yet. */
static void make_node(og_node *node, const char *op, int since, og_attr *attrs, int n_attrs,
                      int n_out)
{
    memset(node, 0, sizeof *node);
    node->name = (char *)"n";
    node->op_type = (char *)op;
    node->domain = (char *)"";
    node->n_out = n_out;
    node->attrs = attrs;
    node->n_attrs = n_attrs;
    node->since_version = since;
    node->opset = since;
    node->op = og_op_find("", op);
}

/* Run one node of `op` at since-version `since`: parse, infer at run time, allocate the
 * outputs, run the kernel (or make the view for alias ops).  Outputs are new tensors. */
static og_status run_node(const char *op, int since, og_attr *attrs, int n_attrs,
                          const og_tensor *const *in, int n_in, og_tensor **out, int n_out)
{
    og_node node;
    make_node(&node, op, since, attrs, n_attrs, n_out);
    node.n_in = n_in;
    int ins[8] = {0, 1, 2, 3, 4, 5, 6, 7}, outs[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    for (int i = 0; i < n_in; i++)
        if (!in[i]) ins[i] = -1;
    node.in = ins;
    node.out = outs;
    for (int i = 0; i < n_out; i++) out[i] = NULL;
    if (!node.op) return og_error(OG_ERR_UNSUPPORTED, "no op %s", op);
    const og_allocator *a = og_default_allocator();
    og_op_ctx c = {&node, a, NULL, false};
    og_status st = node.op->parse ? node.op->parse(&c, &node.params) : OG_OK;
    og_vinfo vi[8], vo[8];
    if (st) goto done;
    c.runtime = true;
    for (int i = 0; i < n_in; i++) {
        og_vinfo_unknown(&vi[i]);
        if (in[i]) {
            og_vinfo_set(&vi[i], in[i]->dtype, in[i]->rank, in[i]->dims);
            vi[i].value = in[i];
        }
    }
    for (int i = 0; i < n_out; i++) og_vinfo_unknown(&vo[i]);
    if ((st = node.op->infer(&c, vi, n_in, vo, n_out))) goto done;
    if (node.op->flags & OG_OP_ALIAS_INPUT0) {
        st = og_tensor_view(in[0], vo[0].rank, vo[0].dims, &out[0]);
        goto done;
    }
    for (int i = 0; i < n_out; i++)
        if ((st = og_tensor_alloc(vo[i].dtype, vo[i].rank, vo[i].dims, a, &out[i]))) goto done;
    og_kernel_ctx k = {&node, node.params, a, 4, NULL, 0};
    st = og_cpu_kernel_find("", op)(&k, in, n_in, out, n_out);
done:
    if (node.params) {
        if (node.op->free_params)
            node.op->free_params(a, node.params);
        else
            og_free(a, node.params);
    }
    if (st)
        for (int i = 0; i < n_out; i++) {
            og_tensor_free(out[i]);
            out[i] = NULL;
        }
    return st;
}

static og_attr ints_attr(const char *name, int64_t *v, int n)
{
    og_attr at;
    memset(&at, 0, sizeof at);
    at.name = (char *)name;
    at.type = OG_ATTR_INTS;
    at.ints = v;
    at.n = n;
    return at;
}

static og_attr string_attr(const char *name, const char *s)
{
    og_attr at;
    memset(&at, 0, sizeof at);
    at.name = (char *)name;
    at.type = OG_ATTR_STRING;
    at.s = (char *)s;
    at.s_len = strlen(s);
    return at;
}

static og_tensor *iota_f(int rank, const int64_t *dims)
{
    og_tensor *t;
    if (og_tensor_alloc(OG_FLOAT, rank, dims, NULL, &t)) return NULL;
    float *p = t->data;
    for (int64_t i = 0; i < t->numel; i++) p[i] = (float)i;
    return t;
}

static og_tensor *ints_t(int n, const int64_t *v)
{
    og_tensor *t;
    int64_t d = n;
    if (og_tensor_from_data(OG_INT64, 1, &d, v, (size_t)n * sizeof *v, NULL, &t)) return NULL;
    return t;
}

static void test_transpose(void)
{
    int64_t dims[3] = {3, 67, 129}, perm[3] = {2, 0, 1};
    og_tensor *x = iota_f(3, dims), *y;
    og_attr at = ints_attr("perm", perm, 3);
    const og_tensor *in[1] = {x};
    CHECK(run_node("Transpose", 21, &at, 1, in, 1, &y, 1) == OG_OK);
    if (y) {
        CHECK(y->dims[0] == 129 && y->dims[1] == 3 && y->dims[2] == 67);
        const float *p = y->data;
        int bad = 0;
        for (int64_t c = 0; c < 129; c++)
            for (int64_t a = 0; a < 3; a++)
                for (int64_t b = 0; b < 67; b++)
                    bad += p[(c * 3 + a) * 67 + b] != (float)((a * 67 + b) * 129 + c);
        CHECK(bad == 0);
    }
    og_tensor_free(y);
    /* default perm reverses */
    CHECK(run_node("Transpose", 13, NULL, 0, in, 1, &y, 1) == OG_OK);
    if (y) {
        const float *p = y->data;
        CHECK(y->dims[0] == 129 && p[1] == 129.0f * 67.0f && p[3] == 129.0f);
    }
    og_tensor_free(y);
    og_tensor_free(x);
}

static void test_slice(void)
{
    int64_t dims[2] = {5, 7};
    og_tensor *x = iota_f(2, dims), *y;
    int64_t s[2] = {-1, 1}, e[2] = {INT64_MIN, 1000}, ax[2] = {0, 1}, st[2] = {-2, 3};
    og_tensor *ts = ints_t(2, s), *te = ints_t(2, e), *ta = ints_t(2, ax), *tp = ints_t(2, st);
    const og_tensor *in[5] = {x, ts, te, ta, tp};
    CHECK(run_node("Slice", 13, NULL, 0, in, 5, &y, 1) == OG_OK);
    if (y) {
        /* rows 4, 2, 0; columns 1, 4 */
        const float *p = y->data;
        CHECK(y->dims[0] == 3 && y->dims[1] == 2);
        CHECK(p[0] == 29 && p[1] == 32 && p[2] == 15 && p[5] == 4);
    }
    og_tensor_free(y);
    int64_t bad[1] = {5};
    og_tensor *tb = ints_t(1, bad);
    const og_tensor *in2[4] = {x, ts, te, tb};
    CHECK(run_node("Slice", 13, NULL, 0, in2, 4, &y, 1) != OG_OK); /* counts differ */
    og_tensor *ts1 = ints_t(1, s), *te1 = ints_t(1, e);
    const og_tensor *in3[4] = {x, ts1, te1, tb};
    CHECK(run_node("Slice", 13, NULL, 0, in3, 4, &y, 1) == OG_ERR_MODEL); /* axis 5 */
    og_tensor *objs[] = {x, ts, te, ta, tp, tb, ts1, te1};
    for (size_t i = 0; i < sizeof objs / sizeof *objs; i++) og_tensor_free(objs[i]);
}

static int64_t ref_src(const char *mode, int64_t i, int64_t n)
{
    if (mode[0] == 'e') return i < 0 ? 0 : (i >= n ? n - 1 : i);
    if (mode[0] == 'w') return ((i % n) + n) % n;
    int64_t per = 2 * (n - 1), m = ((i % per) + per) % per;
    return m >= n ? per - m : m;
}

static void test_pad(void)
{
    static const char *const modes[] = {"reflect", "edge", "wrap", "constant"};
    int64_t dims[2] = {4, 3};
    og_tensor *x = iota_f(2, dims);
    for (int m = 0; m < 4; m++) {
        int64_t pads[4] = {5, 2, 3, 7}; /* larger than the input: several reflections */
        og_tensor *tp = ints_t(4, pads), *y;
        og_attr at = string_attr("mode", modes[m]);
        const og_tensor *in[2] = {x, tp};
        CHECK(run_node("Pad", 19, &at, 1, in, 2, &y, 1) == OG_OK);
        if (y) {
            CHECK(y->dims[0] == 12 && y->dims[1] == 12);
            const float *p = y->data;
            int bad = 0;
            for (int64_t i = 0; i < 12; i++)
                for (int64_t j = 0; j < 12; j++) {
                    int64_t a = i - 5, b = j - 2;
                    float want;
                    if (m == 3)
                        want = (a >= 0 && a < 4 && b >= 0 && b < 3) ? (float)(a * 3 + b) : 0.0f;
                    else
                        want = (float)(ref_src(modes[m], a, 4) * 3 + ref_src(modes[m], b, 3));
                    bad += p[i * 12 + j] != want;
                }
            CHECK(bad == 0);
        }
        og_tensor_free(y);
        og_tensor_free(tp);
    }
    og_tensor_free(x);
}

static void test_tile_expand(void)
{
    int64_t dims[2] = {2, 3}, rep[2] = {3, 2};
    og_tensor *x = iota_f(2, dims), *tr = ints_t(2, rep), *y;
    const og_tensor *in[2] = {x, tr};
    CHECK(run_node("Tile", 13, NULL, 0, in, 2, &y, 1) == OG_OK);
    if (y) {
        const float *p = y->data;
        int bad = 0;
        for (int64_t i = 0; i < 6; i++)
            for (int64_t j = 0; j < 6; j++) bad += p[i * 6 + j] != (float)((i % 2) * 3 + j % 3);
        CHECK(bad == 0);
    }
    og_tensor_free(y);
    int64_t d2[2] = {3, 1}, shp[3] = {2, 1, 4};
    og_tensor *x2 = iota_f(2, d2), *ts = ints_t(3, shp);
    const og_tensor *in2[2] = {x2, ts};
    CHECK(run_node("Expand", 13, NULL, 0, in2, 2, &y, 1) == OG_OK);
    if (y) {
        const float *p = y->data;
        CHECK(y->rank == 3 && y->dims[0] == 2 && y->dims[1] == 3 && y->dims[2] == 4);
        CHECK(p[0] == 0 && p[3] == 0 && p[4] == 1 && p[23] == 2);
    }
    og_tensor_free(y);
    og_tensor *objs[] = {x, tr, x2, ts};
    for (size_t i = 0; i < sizeof objs / sizeof *objs; i++) og_tensor_free(objs[i]);
}

static void test_cast_reshape(void)
{
    int64_t d = 5, v[5] = {-3, 0, 1, 2048, 4097};
    og_tensor *x, *h, *f, *b;
    og_tensor_from_data(OG_INT64, 1, &d, v, sizeof v, NULL, &x);
    og_attr at;
    memset(&at, 0, sizeof at);
    at.name = (char *)"to";
    at.type = OG_ATTR_INT;
    at.i = OG_FLOAT16;
    const og_tensor *in[1] = {x};
    CHECK(run_node("Cast", 19, &at, 1, in, 1, &h, 1) == OG_OK);
    at.i = OG_FLOAT;
    const og_tensor *in2[1] = {h};
    CHECK(run_node("Cast", 19, &at, 1, in2, 1, &f, 1) == OG_OK);
    if (f) {
        const float *p = f->data;
        CHECK(p[0] == -3 && p[1] == 0 && p[3] == 2048 && p[4] == 4096);
    }
    at.i = OG_BOOL;
    CHECK(run_node("Cast", 19, &at, 1, in, 1, &b, 1) == OG_OK);
    if (b) {
        const uint8_t *p = b->data;
        CHECK(p[0] == 1 && p[1] == 0 && p[2] == 1);
    }
    /* Reshape: 0 copies, -1 infers; a bad product fails */
    int64_t dims[3] = {2, 3, 4}, s1[2] = {0, -1}, s2[2] = {5, -1};
    og_tensor *y = iota_f(3, dims), *t1 = ints_t(2, s1), *t2 = ints_t(2, s2), *r;
    const og_tensor *in3[2] = {y, t1};
    CHECK(run_node("Reshape", 14, NULL, 0, in3, 2, &r, 1) == OG_OK);
    if (r) CHECK(r->rank == 2 && r->dims[0] == 2 && r->dims[1] == 12);
    og_tensor_free(r);
    const og_tensor *in4[2] = {y, t2};
    CHECK(run_node("Reshape", 14, NULL, 0, in4, 2, &r, 1) == OG_ERR_SHAPE);
    og_tensor *objs[] = {x, h, f, b, y, t1, t2};
    for (size_t i = 0; i < sizeof objs / sizeof *objs; i++) og_tensor_free(objs[i]);
}

static void test_split_concat(void)
{
    int64_t dims[2] = {3, 7};
    og_tensor *x = iota_f(2, dims), *parts[3], *y;
    og_attr at[2];
    memset(at, 0, sizeof at);
    at[0].name = (char *)"axis";
    at[0].type = OG_ATTR_INT;
    at[0].i = -1;
    at[1].name = (char *)"num_outputs";
    at[1].type = OG_ATTR_INT;
    at[1].i = 3;
    const og_tensor *in[1] = {x};
    CHECK(run_node("Split", 18, at, 2, in, 1, parts, 3) == OG_OK);
    if (parts[2]) {
        CHECK(parts[0]->dims[1] == 3 && parts[2]->dims[1] == 1);
        CHECK(((float *)parts[2]->data)[1] == 13.0f);
        const og_tensor *cin[3] = {parts[0], parts[1], parts[2]};
        CHECK(run_node("Concat", 13, at, 1, cin, 3, &y, 1) == OG_OK);
        if (y) CHECK(memcmp(y->data, x->data, og_tensor_nbytes(x)) == 0);
        og_tensor_free(y);
    }
    for (int i = 0; i < 3; i++) og_tensor_free(parts[i]);
    og_tensor_free(x);
}

/* Parse one node's attributes; the params (or NULL) into *params, freed by the caller with
 * parsed_free. */
static og_status parse_node(const char *op, int since, og_attr *attrs, int n_attrs, int n_out,
                            void **params)
{
    og_node node;
    make_node(&node, op, since, attrs, n_attrs, n_out);
    og_op_ctx c = {&node, og_default_allocator(), NULL, false};
    *params = NULL;
    return node.op->parse(&c, params);
}

static void parsed_free(void *params) { og_free(og_default_allocator(), params); }

static og_attr int_attr(const char *name, int64_t v)
{
    og_attr at;
    memset(&at, 0, sizeof at);
    at.name = (char *)name;
    at.type = OG_ATTR_INT;
    at.i = v;
    return at;
}

/* The attribute tables: versions, defaults, required attributes, limits, type checks. */
static void test_attr_parse(void)
{
    void *p;
    int64_t two[2] = {2, 5}, same[2] = {0, 0}, nine[9] = {0};
    og_attr a[3];
    a[0] = int_attr("axis", 1);
    CHECK(parse_node("Concat", 4, NULL, 0, 1, &p) == OG_ERR_MODEL);
    parsed_free(p);
    CHECK(parse_node("Concat", 1, NULL, 0, 1, &p) == OG_OK && ((og_axis_params *)p)->axis == 0);
    parsed_free(p);
    CHECK(parse_node("Concat", 13, a, 1, 1, &p) == OG_OK && ((og_axis_params *)p)->axis == 1);
    parsed_free(p);
    CHECK(parse_node("Flatten", 13, NULL, 0, 1, &p) == OG_OK && ((og_axis_params *)p)->axis == 1);
    parsed_free(p);
    /* Squeeze/Unsqueeze: the attribute before 13, required by Unsqueeze; empty is not absent */
    CHECK(parse_node("Unsqueeze", 11, NULL, 0, 1, &p) == OG_ERR_MODEL);
    parsed_free(p);
    CHECK(parse_node("Unsqueeze", 13, NULL, 0, 1, &p) == OG_OK);
    parsed_free(p);
    CHECK(parse_node("Squeeze", 11, NULL, 0, 1, &p) == OG_OK && ((og_axes_params *)p)->n_axes < 0);
    parsed_free(p);
    a[0] = ints_attr("axes", two, 0);
    CHECK(parse_node("Squeeze", 11, a, 1, 1, &p) == OG_OK && ((og_axes_params *)p)->n_axes == 0);
    parsed_free(p);
    a[0] = ints_attr("axes", two, 2);
    CHECK(parse_node("Squeeze", 13, a, 1, 1, &p) == OG_OK && ((og_axes_params *)p)->n_axes < 0);
    parsed_free(p);
    CHECK(parse_node("Unsqueeze", 1, a, 1, 1, &p) == OG_OK && ((og_axes_params *)p)->n_axes == 2 &&
          ((og_axes_params *)p)->axes[1] == 5);
    parsed_free(p);
    a[0] = ints_attr("axes", nine, 9);
    CHECK(parse_node("Squeeze", 11, a, 1, 1, &p) == OG_ERR_UNSUPPORTED);
    parsed_free(p);
    /* Transpose: absent reverses; a permutation is checked */
    CHECK(parse_node("Transpose", 13, NULL, 0, 1, &p) == OG_OK &&
          ((og_transpose_params *)p)->n_perm == 0);
    parsed_free(p);
    a[0] = ints_attr("perm", same, 2);
    CHECK(parse_node("Transpose", 13, a, 1, 1, &p) == OG_ERR_MODEL);
    parsed_free(p);
    a[0] = int_attr("perm", 1);
    CHECK(parse_node("Transpose", 13, a, 1, 1, &p) == OG_ERR_MODEL); /* not ints */
    parsed_free(p);
    /* Cast: 'to' required, an int, a known type */
    CHECK(parse_node("Cast", 13, NULL, 0, 1, &p) == OG_ERR_MODEL);
    parsed_free(p);
    a[0] = int_attr("to", 999);
    CHECK(parse_node("Cast", 13, a, 1, 1, &p) == OG_ERR_UNSUPPORTED);
    parsed_free(p);
    a[0] = int_attr("to", OG_DOUBLE);
    CHECK(parse_node("Cast", 13, a, 1, 1, &p) == OG_OK && ((og_cast_params *)p)->to == OG_DOUBLE);
    parsed_free(p);
    /* attributes read only from their version on keep the default before it */
    a[0] = int_attr("start", 1);
    a[1] = int_attr("end", -1);
    CHECK(parse_node("Shape", 13, a, 2, 1, &p) == OG_OK && ((og_shape_params *)p)->start == 0 &&
          ((og_shape_params *)p)->end == INT64_MAX);
    parsed_free(p);
    CHECK(parse_node("Shape", 15, a, 2, 1, &p) == OG_OK && ((og_shape_params *)p)->start == 1 &&
          ((og_shape_params *)p)->end == -1);
    parsed_free(p);
    a[0] = int_attr("allowzero", 1);
    CHECK(parse_node("Reshape", 13, a, 1, 1, &p) == OG_OK && !((og_reshape_params *)p)->allowzero);
    parsed_free(p);
    CHECK(parse_node("Reshape", 14, a, 1, 1, &p) == OG_OK && ((og_reshape_params *)p)->allowzero);
    parsed_free(p);
    a[0].type = OG_ATTR_FLOAT;
    CHECK(parse_node("Reshape", 5, a, 1, 1, &p) == OG_ERR_MODEL); /* type checked at any version */
    parsed_free(p);
    CHECK(parse_node("Trilu", 14, NULL, 0, 1, &p) == OG_OK && ((og_trilu_params *)p)->upper);
    parsed_free(p);
    /* Split: sizes as an attribute before 13 (into the flexible array), num_outputs from 18 */
    a[0] = ints_attr("split", two, 2);
    CHECK(parse_node("Split", 11, a, 1, 2, &p) == OG_OK && ((og_split_params *)p)->n_split == 2 &&
          ((og_split_params *)p)->split[1] == 5);
    parsed_free(p);
    CHECK(parse_node("Split", 13, a, 1, 2, &p) == OG_OK && ((og_split_params *)p)->n_split == -1);
    parsed_free(p);
    a[0] = int_attr("num_outputs", 2);
    CHECK(parse_node("Split", 18, a, 1, 3, &p) == OG_ERR_MODEL);
    parsed_free(p);
    CHECK(parse_node("Split", 13, a, 1, 3, &p) == OG_OK);
    parsed_free(p);
    /* Pad before 11: pads required; the mode checked */
    CHECK(parse_node("Pad", 2, NULL, 0, 1, &p) == OG_ERR_MODEL);
    parsed_free(p);
    a[0] = string_attr("mode", "wrap");
    CHECK(parse_node("Pad", 18, a, 1, 1, &p) == OG_ERR_MODEL);
    parsed_free(p);
    CHECK(parse_node("Pad", 19, a, 1, 1, &p) == OG_OK && ((og_pad_params *)p)->mode == OG_PAD_WRAP);
    parsed_free(p);
}

int main(void)
{
    test_attr_parse();
    test_transpose();
    test_slice();
    test_pad();
    test_tile_expand();
    test_cast_reshape();
    test_split_concat();
    if (failures) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("test_tensor: ok\n");
    return 0;
}
