/* test_tensor.c: the tensor family's ops run node by node (parse, infer, kernel) against
 * naive references, on shapes that exercise the copy engine's fast paths (merged runs,
 * blocked transposes, fills), plus the error paths. */
#include "ops/tensor_shared.h"
#include "unit/node_harness.h"

/* Run `op` at opset `opset` with these attributes (n_attrs) on in[0..n_in-1] (NULL:
 * omitted), four threads; out[0..n_out-1] receive the outputs (owned by the caller, NULL
 * when the run fails). */
static og_status run_node(const char *op, int opset, const nh_attr *attrs, int n_attrs,
                          const og_tensor *const *in, int n_in, og_tensor **out, int n_out)
{
    nh_node n = {.op = op, .opset = opset, .n_in = n_in, .n_out = n_out, .threads = 4};
    for (int i = 0; i < n_attrs; i++) n.attrs[i] = attrs[i];
    for (int i = 0; i < n_in; i++) n.in[i] = in[i];
    nh_result r;
    og_status st = nh_run(&n, &r);
    for (int j = 0; j < n_out; j++) out[j] = nh_take(&r, j);
    nh_release(&r);
    return st;
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
    int64_t dims[3] = {3, 67, 129};
    og_tensor *x = iota_f(3, dims), *y;
    nh_attr at = NH_INTS("perm", 2, 0, 1);
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
        nh_attr at = NH_STRING("mode", modes[m]);
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
    og_tensor *x = nh_tensor_raw(OG_INT64, 1, &d, v), *h, *f, *b;
    nh_attr at = NH_INT("to", OG_FLOAT16);
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
    nh_attr at[2] = {NH_INT("axis", -1), NH_INT("num_outputs", 3)};
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

/* Parse one node's attributes (no inputs, n_out outputs) at `opset`: the status, and the
 * params (or NULL) in *params, until nh_release(r). */
static og_status parse_node(nh_result *r, const char *op, int opset, const nh_attr *attrs,
                            int n_attrs, int n_out, void **params)
{
    nh_node n = {.op = op, .opset = opset, .n_out = n_out};
    for (int i = 0; i < n_attrs; i++) n.attrs[i] = attrs[i];
    og_status st = nh_parse(&n, r);
    r->spec = NULL; /* n is gone */
    *params = r->node ? r->node->params : NULL;
    return st;
}

/* The attribute tables: versions, defaults, required attributes, limits, type checks. */
static void test_attr_parse(void)
{
    void *p;
    int64_t two[2] = {2, 5}, same[2] = {0, 0}, nine[9] = {0};
    nh_attr a[3];
    nh_result r;
    a[0] = (nh_attr)NH_INT("axis", 1);
    CHECK(parse_node(&r, "Concat", 4, NULL, 0, 1, &p) == OG_ERR_MODEL);
    nh_release(&r);
    CHECK(parse_node(&r, "Concat", 1, NULL, 0, 1, &p) == OG_OK && ((og_axis_params *)p)->axis == 0);
    nh_release(&r);
    CHECK(parse_node(&r, "Concat", 13, a, 1, 1, &p) == OG_OK && ((og_axis_params *)p)->axis == 1);
    nh_release(&r);
    CHECK(parse_node(&r, "Flatten", 13, NULL, 0, 1, &p) == OG_OK &&
          ((og_axis_params *)p)->axis == 1);
    nh_release(&r);
    /* Squeeze/Unsqueeze: the attribute before 13, required by Unsqueeze; empty is not absent */
    CHECK(parse_node(&r, "Unsqueeze", 11, NULL, 0, 1, &p) == OG_ERR_MODEL);
    nh_release(&r);
    CHECK(parse_node(&r, "Unsqueeze", 13, NULL, 0, 1, &p) == OG_OK);
    nh_release(&r);
    CHECK(parse_node(&r, "Squeeze", 11, NULL, 0, 1, &p) == OG_OK &&
          ((og_axes_params *)p)->n_axes < 0);
    nh_release(&r);
    a[0] = (nh_attr)NH_INTS_N("axes", 0, two);
    CHECK(parse_node(&r, "Squeeze", 11, a, 1, 1, &p) == OG_OK &&
          ((og_axes_params *)p)->n_axes == 0);
    nh_release(&r);
    a[0] = (nh_attr)NH_INTS_N("axes", 2, two);
    CHECK(parse_node(&r, "Squeeze", 13, a, 1, 1, &p) == OG_OK && ((og_axes_params *)p)->n_axes < 0);
    nh_release(&r);
    CHECK(parse_node(&r, "Unsqueeze", 1, a, 1, 1, &p) == OG_OK &&
          ((og_axes_params *)p)->n_axes == 2 && ((og_axes_params *)p)->axes[1] == 5);
    nh_release(&r);
    a[0] = (nh_attr)NH_INTS_N("axes", 9, nine);
    CHECK(parse_node(&r, "Squeeze", 11, a, 1, 1, &p) == OG_ERR_UNSUPPORTED);
    nh_release(&r);
    /* Transpose: absent reverses; a permutation is checked */
    CHECK(parse_node(&r, "Transpose", 13, NULL, 0, 1, &p) == OG_OK &&
          ((og_transpose_params *)p)->n_perm == 0);
    nh_release(&r);
    a[0] = (nh_attr)NH_INTS_N("perm", 2, same);
    CHECK(parse_node(&r, "Transpose", 13, a, 1, 1, &p) == OG_ERR_MODEL);
    nh_release(&r);
    a[0] = (nh_attr)NH_INT("perm", 1);
    CHECK(parse_node(&r, "Transpose", 13, a, 1, 1, &p) == OG_ERR_MODEL); /* not ints */
    nh_release(&r);
    /* Cast: 'to' required, an int, a known type */
    CHECK(parse_node(&r, "Cast", 13, NULL, 0, 1, &p) == OG_ERR_MODEL);
    nh_release(&r);
    a[0] = (nh_attr)NH_INT("to", 999);
    CHECK(parse_node(&r, "Cast", 13, a, 1, 1, &p) == OG_ERR_UNSUPPORTED);
    nh_release(&r);
    a[0] = (nh_attr)NH_INT("to", OG_DOUBLE);
    CHECK(parse_node(&r, "Cast", 13, a, 1, 1, &p) == OG_OK &&
          ((og_cast_params *)p)->to == OG_DOUBLE);
    nh_release(&r);
    /* attributes read only from their version on keep the default before it */
    a[0] = (nh_attr)NH_INT("start", 1);
    a[1] = (nh_attr)NH_INT("end", -1);
    CHECK(parse_node(&r, "Shape", 13, a, 2, 1, &p) == OG_OK && ((og_shape_params *)p)->start == 0 &&
          ((og_shape_params *)p)->end == INT64_MAX);
    nh_release(&r);
    CHECK(parse_node(&r, "Shape", 15, a, 2, 1, &p) == OG_OK && ((og_shape_params *)p)->start == 1 &&
          ((og_shape_params *)p)->end == -1);
    nh_release(&r);
    a[0] = (nh_attr)NH_INT("allowzero", 1);
    CHECK(parse_node(&r, "Reshape", 13, a, 1, 1, &p) == OG_OK &&
          !((og_reshape_params *)p)->allowzero);
    nh_release(&r);
    CHECK(parse_node(&r, "Reshape", 14, a, 1, 1, &p) == OG_OK &&
          ((og_reshape_params *)p)->allowzero);
    nh_release(&r);
    a[0].type = OG_ATTR_FLOAT;
    CHECK(parse_node(&r, "Reshape", 5, a, 1, 1, &p) ==
          OG_ERR_MODEL); /* type checked at any version */
    nh_release(&r);
    CHECK(parse_node(&r, "Trilu", 14, NULL, 0, 1, &p) == OG_OK && ((og_trilu_params *)p)->upper);
    nh_release(&r);
    /* Split: sizes as an attribute before 13 (into the flexible array), num_outputs from 18 */
    a[0] = (nh_attr)NH_INTS_N("split", 2, two);
    CHECK(parse_node(&r, "Split", 11, a, 1, 2, &p) == OG_OK &&
          ((og_split_params *)p)->n_split == 2 && ((og_split_params *)p)->split[1] == 5);
    nh_release(&r);
    CHECK(parse_node(&r, "Split", 13, a, 1, 2, &p) == OG_OK &&
          ((og_split_params *)p)->n_split == -1);
    nh_release(&r);
    a[0] = (nh_attr)NH_INT("num_outputs", 2);
    CHECK(parse_node(&r, "Split", 18, a, 1, 3, &p) == OG_ERR_MODEL);
    nh_release(&r);
    CHECK(parse_node(&r, "Split", 13, a, 1, 3, &p) == OG_OK);
    nh_release(&r);
    /* Pad before 11: pads required; the mode checked */
    CHECK(parse_node(&r, "Pad", 2, NULL, 0, 1, &p) == OG_ERR_MODEL);
    nh_release(&r);
    a[0] = (nh_attr)NH_STRING("mode", "wrap");
    CHECK(parse_node(&r, "Pad", 18, a, 1, 1, &p) == OG_ERR_MODEL);
    nh_release(&r);
    CHECK(parse_node(&r, "Pad", 19, a, 1, 1, &p) == OG_OK &&
          ((og_pad_params *)p)->mode == OG_PAD_WRAP);
    nh_release(&r);
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
    NH_DONE();
}
