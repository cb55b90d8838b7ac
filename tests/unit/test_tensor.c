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

/* Transposes whose inner run is short and moves as one element by tiles (plan_fold_run):
 * swapping the outer axes of weight-gradient shapes [C, M, k, k], odd sizes that leave
 * partial tiles, runs of 1-byte elements (a multiple of 4 bytes folds, 3 bytes does not),
 * and a run that stays inner while two outer axes rotate. */
static void test_transpose_runs(void)
{
    static const struct {
        og_dtype dt;
        int rank;
        int64_t dims[4];
        int64_t perm[4];
    } cases[] = {
        {OG_FLOAT, 4, {67, 45, 3, 3}, {1, 0, 2, 3}}, {OG_FLOAT, 4, {33, 70, 1, 5}, {1, 0, 2, 3}},
        {OG_FLOAT, 4, {5, 7, 9, 2}, {2, 0, 1, 3}},   {OG_DOUBLE, 3, {37, 41, 4}, {1, 0, 2}},
        {OG_UINT8, 3, {40, 33, 4}, {1, 0, 2}},       {OG_UINT8, 3, {40, 33, 12}, {1, 0, 2}},
        {OG_INT8, 3, {19, 23, 3}, {1, 0, 2}},        {OG_FLOAT, 3, {3, 5, 17}, {1, 0, 2}},
        {OG_FLOAT, 4, {2, 3, 4, 5}, {3, 2, 1, 0}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int rank = cases[c].rank;
        const int64_t *dims = cases[c].dims, *perm = cases[c].perm;
        og_tensor *x, *y = NULL;
        CHECK(og_tensor_alloc(cases[c].dt, rank, dims, NULL, &x) == OG_OK);
        if (!x) continue;
        size_t es = og_dtype_size(cases[c].dt);
        unsigned char *xb = x->data;
        for (int64_t i = 0; i < x->numel * (int64_t)es; i++) xb[i] = (unsigned char)(i * 7 + 3);
        nh_attr at = NH_INTS_N("perm", rank, perm);
        const og_tensor *in[1] = {x};
        CHECK(run_node("Transpose", 13, &at, 1, in, 1, &y, 1) == OG_OK);
        int bad = 0;
        int64_t xs[4], ys[4], yd[4];
        og_strides(rank, dims, xs);
        for (int i = 0; i < rank; i++) yd[i] = dims[perm[i]];
        og_strides(rank, yd, ys);
        for (int64_t i = 0; y && i < x->numel; i++) {
            int64_t rem = i, src = 0;
            for (int d = 0; d < rank; d++) { /* y index i -> x offset */
                int64_t idx = rem / ys[d];
                rem %= ys[d];
                src += idx * xs[perm[d]];
            }
            bad += memcmp((const char *)y->data + i * (int64_t)es, xb + src * (int64_t)es, es) != 0;
        }
        CHECK(y && bad == 0);
        og_tensor_free(y);
        og_tensor_free(x);
    }
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

/* ---- CastLike, DepthToSpace, SpaceToDepth, CenterCropPad, EyeLike (issue 12) ---- */

/* Run n and compare output 0 with want (count values); release everything. */
static void t12_case(const nh_node *n, const char *what, int64_t count, const double *want,
                     double tol, og_tensor **in, int n_in)
{
    nh_result r;
    CHECK_OK(nh_run(n, &r));
    if (r.status == OG_OK) nh_expect(what, r.out[0], count, want, tol);
    nh_release(&r);
    nh_free_tensors(in, n_in);
}

static void test_castlike(void)
{
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 1, (int64_t[]){3}, (double[]){1.7, -2.2, 0.5}),
                       nh_tensor(OG_INT64, 1, (int64_t[]){1}, NULL)};
    nh_node n = {.op = "CastLike", .opset = 15, .in = {in[0], in[1]}};
    t12_case(&n, "castlike to int64", 3, (double[]){1, -2, 0}, 0, in, 2);
    og_tensor *s[] = {nh_tensor(OG_FLOAT, 1, (int64_t[]){1}, NULL),
                      nh_tensor_raw(OG_STRING, 0, NULL, NULL)};
    if (s[1]) {
        nh_node bad = {.op = "CastLike", .opset = 21, .in = {s[0], s[1]}};
        nh_expect_fail(&bad, 0, OG_ERR_UNSUPPORTED, NULL);
    }
    nh_free_tensors(s, 2);
}

static void test_depth_space(void)
{
    double v[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 8, 1, 1}, v)};
    nh_node dcr = {
        .op = "DepthToSpace", .opset = 13, .attrs = {NH_INT("blocksize", 2)}, .in = {in[0]}};
    nh_result r;
    CHECK_OK(nh_run(&dcr, &r));
    nh_expect("depthtospace DCR", r.out[0], 8, (double[]){0, 2, 4, 6, 1, 3, 5, 7}, 0);
    CHECK(r.out[0] && r.out[0]->dims[1] == 2 && r.out[0]->dims[2] == 2 && r.out[0]->dims[3] == 2);
    nh_release(&r);
    nh_node crd = {.op = "DepthToSpace",
                   .opset = 11,
                   .attrs = {NH_INT("blocksize", 2), NH_STRING("mode", "CRD")},
                   .in = {in[0]}};
    t12_case(&crd, "depthtospace CRD", 8, v, 0, in, 1);
    og_tensor *x[] = {nh_tensor(OG_INT64, 4, (int64_t[]){1, 1, 2, 2}, (double[]){0, 1, 2, 3})};
    nh_node s2d = {
        .op = "SpaceToDepth", .opset = 13, .attrs = {NH_INT("blocksize", 2)}, .in = {x[0]}};
    t12_case(&s2d, "spacetodepth", 4, (double[]){0, 1, 2, 3}, 0, x, 1);
    og_tensor *bad[] = {nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 1, 3, 2}, NULL)};
    nh_node b1 = {
        .op = "SpaceToDepth", .opset = 13, .attrs = {NH_INT("blocksize", 2)}, .in = {bad[0]}};
    nh_expect_fail(&b1, NH_LOAD, OG_ERR_SHAPE, "not a multiple of blocksize");
    nh_node b2 = {
        .op = "DepthToSpace", .opset = 13, .attrs = {NH_INT("blocksize", 0)}, .in = {bad[0]}};
    nh_expect_fail(&b2, NH_LOAD, OG_ERR_MODEL, "blocksize");
    nh_free_tensors(bad, 1);
}

static void test_center_crop_pad(void)
{
    double v[5] = {1, 2, 3, 4, 5};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 1, (int64_t[]){5}, v),
                       nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){3})};
    nh_node crop = {.op = "CenterCropPad", .opset = 18, .in = {in[0], in[1]}};
    t12_case(&crop, "crop", 3, (double[]){2, 3, 4}, 0, in, 2);
    og_tensor *p[] = {nh_tensor(OG_INT32, 1, (int64_t[]){5}, v),
                      nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){8})};
    nh_node pad = {.op = "CenterCropPad", .opset = 18, .in = {p[0], p[1]}};
    t12_case(&pad, "pad", 8, (double[]){0, 1, 2, 3, 4, 5, 0, 0}, 0, p, 2);
    og_tensor *b[] = {nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 2}, NULL),
                      nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){1})};
    nh_node bad = {.op = "CenterCropPad", .opset = 18, .in = {b[0], b[1]}};
    nh_expect_fail(&bad, 0, OG_ERR_SHAPE, "entries");
    nh_free_tensors(b, 2);
}

static void test_eyelike(void)
{
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 3}, NULL)};
    nh_node n = {.op = "EyeLike",
                 .opset = 9,
                 .attrs = {NH_INT("k", 1), NH_INT("dtype", OG_INT64)},
                 .in = {in[0]}};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    nh_expect("eyelike", r.out[0], 6, (double[]){0, 1, 0, 0, 0, 1}, 0);
    CHECK(r.out[0] && r.out[0]->dtype == OG_INT64);
    nh_release(&r);
    nh_free_tensors(in, 1);
    og_tensor *b[] = {nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 2, 2}, NULL)};
    nh_node bad = {.op = "EyeLike", .opset = 9, .in = {b[0]}};
    nh_expect_fail(&bad, NH_LOAD, OG_ERR_SHAPE, "rank 3");
    nh_free_tensors(b, 1);
}

int main(void)
{
    test_attr_parse();
    test_transpose();
    test_transpose_runs();
    test_slice();
    test_pad();
    test_tile_expand();
    test_cast_reshape();
    test_split_concat();
    test_castlike();
    test_depth_space();
    test_center_crop_pad();
    test_eyelike();
    NH_DONE();
}
