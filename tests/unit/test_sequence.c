/* test_sequence.c: the sequence and optional ops on one-node graphs (values, positions at
 * both ends, strings, empty sequences and optionals, the errors of bad positions, kinds and
 * shapes), and the bit ops (BitwiseAnd/Or/Xor/Not, BitShift) on every integer width. */
#include "unit/node_harness.h"

static og_tensor *seq_of(og_tensor **items, int n)
{
    og_tensor *s = NULL;
    og_sequence_create((const og_tensor *const *)items, n, NULL, &s);
    return s;
}

static og_tensor *i64s(int n, const int64_t *v)
{
    int64_t d = n;
    return nh_tensor_raw(OG_INT64, 1, &d, v);
}

static og_tensor *pos64(int64_t p) { return nh_scalar(OG_INT64, (double)p); }

/* a [2, k] float tensor holding base, base + 1, ... */
static og_tensor *rows(int64_t k, double base)
{
    double v[16];
    for (int i = 0; i < 2 * k; i++) v[i] = base + i;
    return nh_tensor(OG_FLOAT, 2, (int64_t[]){2, k}, v);
}

static bool seq_is(const og_tensor *s, int64_t n)
{
    return s && s->kind == OG_KIND_SEQUENCE && s->n_items == n;
}

static void test_construct_at_length(void)
{
    og_tensor *a = rows(1, 0), *b = rows(2, 10), *c = rows(3, 20);
    nh_node n = {.op = "SequenceConstruct", .opset = 11, .in = {a, b, c}};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    og_tensor *s = nh_take(&r, 0);
    CHECK(seq_is(s, 3) && og_value_equal(s->items[1], b));
    /* the static type keeps the dtype and rank the items share, not the differing dim */
    const og_value *v = nh_static_out(&r, 0);
    CHECK(v && v->type && v->type->kind == OG_KIND_SEQUENCE && v->type->elem &&
          v->type->elem->dtype == OG_FLOAT && v->type->elem->rank == 2 &&
          v->type->elem->dims[0] == 2 && v->type->elem->dims[1] < 0);
    nh_release(&r);

    int64_t positions[] = {0, 2, -1, -3};
    og_tensor *want[] = {a, c, c, a};
    for (int i = 0; i < 4; i++) {
        og_tensor *p = pos64(positions[i]);
        nh_node at = {.op = "SequenceAt", .opset = 11, .in = {s, p}};
        CHECK_OK(nh_run(&at, &r));
        CHECK(og_value_equal(r.out[0], want[i]));
        nh_release(&r);
        og_tensor_free(p);
    }
    og_tensor *p = pos64(3);
    nh_node at = {.op = "SequenceAt", .opset = 11, .in = {s, p}};
    nh_expect_fail(&at, NH_RUN, OG_ERR_RUNTIME, "position 3 is outside [-3, 2]");
    og_tensor_free(p);
    p = nh_scalar(OG_INT32, -4);
    at.in[1] = p;
    nh_expect_fail(&at, NH_RUN, OG_ERR_RUNTIME, "position -4");
    og_tensor_free(p);
    p = nh_tensor(OG_FLOAT, 0, NULL, (double[]){1});
    at.in[1] = p;
    nh_expect_fail(&at, NH_LOAD, OG_ERR_UNSUPPORTED, "element type float32");
    og_tensor_free(p);
    /* a tensor where a sequence is expected */
    p = pos64(0);
    at.in[0] = a;
    at.in[1] = p;
    nh_expect_fail(&at, NH_LOAD, OG_ERR_TYPE, "must be a sequence");
    og_tensor_free(p);

    nh_node len = {.op = "SequenceLength", .opset = 11, .in = {s}};
    CHECK_OK(nh_run(&len, &r));
    CHECK(nh_close("length", r.out[0], 1, (double[]){3}, 0, 0) && r.out[0]->dtype == OG_INT64);
    nh_release(&r);

    /* mixed dtypes */
    og_tensor *d = nh_tensor(OG_DOUBLE, 1, (int64_t[]){1}, (double[]){1});
    nh_node bad = {.op = "SequenceConstruct", .opset = 11, .in = {a, d}};
    nh_expect_fail(&bad, NH_LOAD, OG_ERR_TYPE, "one element type");
    og_tensor_free(d);
    og_tensor_free(s);
    og_tensor_free(a);
    og_tensor_free(b);
    og_tensor_free(c);
}

static void test_insert_erase_empty(void)
{
    og_tensor *a = rows(1, 0), *b = rows(2, 10), *t = rows(1, 100);
    og_tensor *s = seq_of((og_tensor *[]){a, b}, 2);
    nh_result r;
    struct {
        int64_t pos; /* INT64_MIN: omitted */
        int at;      /* where t lands */
    } cases[] = {{INT64_MIN, 2}, {0, 0}, {2, 2}, {-1, 1}, {-2, 0}};
    for (int i = 0; i < 5; i++) {
        og_tensor *p = cases[i].pos == INT64_MIN ? NULL : pos64(cases[i].pos);
        nh_node n = {.op = "SequenceInsert", .opset = 11, .in = {s, t, p}};
        CHECK_OK(nh_run(&n, &r));
        CHECK(seq_is(r.out[0], 3) && og_value_equal(r.out[0]->items[cases[i].at], t));
        nh_release(&r);
        og_tensor_free(p);
    }
    og_tensor *p = pos64(3);
    nh_node n = {.op = "SequenceInsert", .opset = 11, .in = {s, t, p}};
    nh_expect_fail(&n, NH_RUN, OG_ERR_RUNTIME, "outside [-2, 2]");
    og_tensor_free(p);
    og_tensor *i = nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){1});
    n.in[1] = i;
    n.in[2] = NULL;
    nh_expect_fail(&n, NH_LOAD, OG_ERR_TYPE, "holds float32 tensors");
    og_tensor_free(i);

    /* erase: the last by default, or by position */
    nh_node e = {.op = "SequenceErase", .opset = 11, .in = {s}};
    CHECK_OK(nh_run(&e, &r));
    CHECK(seq_is(r.out[0], 1) && og_value_equal(r.out[0]->items[0], a));
    nh_release(&r);
    p = pos64(-2);
    e.in[1] = p;
    CHECK_OK(nh_run(&e, &r));
    CHECK(seq_is(r.out[0], 1) && og_value_equal(r.out[0]->items[0], b));
    nh_release(&r);
    og_tensor_free(p);

    /* an empty sequence: made, measured, grown, and refused by erase and concat */
    nh_node em = {.op = "SequenceEmpty", .opset = 11, .attrs = {NH_INT("dtype", OG_INT64)}};
    CHECK_OK(nh_run(&em, &r));
    og_tensor *empty = nh_take(&r, 0);
    CHECK(seq_is(empty, 0));
    const og_value *v = nh_static_out(&r, 0);
    CHECK(v && v->type && v->type->elem && v->type->elem->dtype == OG_INT64);
    nh_release(&r);
    nh_node bad_dt = {.op = "SequenceEmpty", .opset = 11, .attrs = {NH_INT("dtype", 99)}};
    nh_expect_fail(&bad_dt, NH_LOAD, OG_ERR_UNSUPPORTED, "dtype");
    nh_node len = {.op = "SequenceLength", .opset = 11, .in = {empty}};
    CHECK_OK(nh_run(&len, &r));
    CHECK(nh_close("length", r.out[0], 1, (double[]){0}, 0, 0));
    nh_release(&r);
    nh_node e0 = {.op = "SequenceErase", .opset = 11, .in = {empty}};
    nh_expect_fail(&e0, NH_RUN, OG_ERR_RUNTIME, "empty sequence");
    nh_node c0 = {
        .op = "ConcatFromSequence", .opset = 11, .attrs = {NH_INT("axis", 0)}, .in = {empty}};
    nh_expect_fail(&c0, NH_RUN, OG_ERR_SHAPE, "empty sequence");
    nh_node ins = {.op = "SequenceInsert", .opset = 11, .in = {empty, t}};
    /* its items' dtype is not declared once the value is an input: the run accepts it */
    CHECK_OK(nh_run(&ins, &r));
    CHECK(seq_is(r.out[0], 1) && og_value_equal(r.out[0]->items[0], t));
    nh_release(&r);

    og_tensor_free(empty);
    og_tensor_free(s);
    og_tensor_free(a);
    og_tensor_free(b);
    og_tensor_free(t);
}

static void test_split_concat(void)
{
    double v[24];
    for (int i = 0; i < 24; i++) v[i] = i;
    og_tensor *x = nh_tensor(OG_FLOAT, 3, (int64_t[]){2, 3, 4}, v);
    nh_result r;

    /* default: parts of 1 along axis 1, kept */
    nh_node n = {.op = "SplitToSequence", .opset = 11, .attrs = {NH_INT("axis", 1)}, .in = {x}};
    CHECK_OK(nh_run(&n, &r));
    CHECK(seq_is(r.out[0], 3));
    if (seq_is(r.out[0], 3)) {
        const og_tensor *p1 = r.out[0]->items[1];
        CHECK(p1->rank == 3 && p1->dims[1] == 1);
        CHECK(nh_close("part 1", p1, 8, (double[]){4, 5, 6, 7, 16, 17, 18, 19}, 0, 0));
    }
    og_tensor *parts = nh_take(&r, 0);
    nh_release(&r);
    /* and back: ConcatFromSequence gives x again */
    nh_node cat = {
        .op = "ConcatFromSequence", .opset = 11, .attrs = {NH_INT("axis", -2)}, .in = {parts}};
    CHECK_OK(nh_run(&cat, &r));
    CHECK(og_value_equal(r.out[0], x));
    nh_release(&r);
    og_tensor_free(parts);

    /* keepdims 0: the axis goes, and new_axis stacks them back */
    n.attrs[1] = (nh_attr)NH_INT("keepdims", 0);
    n.attrs[0] = (nh_attr)NH_INT("axis", 2);
    CHECK_OK(nh_run(&n, &r));
    CHECK(seq_is(r.out[0], 4) && r.out[0]->items[0]->rank == 2);
    parts = nh_take(&r, 0);
    nh_release(&r);
    nh_node stack = {.op = "ConcatFromSequence",
                     .opset = 11,
                     .attrs = {NH_INT("axis", -1), NH_INT("new_axis", 1)},
                     .in = {parts}};
    CHECK_OK(nh_run(&stack, &r));
    CHECK(og_value_equal(r.out[0], x));
    nh_release(&r);
    og_tensor_free(parts);

    /* a scalar split: chunks of 3 over 4 -> 3, 1; a list split: 1, 3; errors */
    og_tensor *s3 = nh_scalar(OG_INT64, 3), *s13 = i64s(2, (int64_t[]){1, 3}),
              *bad = i64s(2, (int64_t[]){1, 2}), *zero = nh_scalar(OG_INT32, 0);
    nh_node sp = {
        .op = "SplitToSequence", .opset = 11, .attrs = {NH_INT("axis", 2)}, .in = {x, s3}};
    CHECK_OK(nh_run(&sp, &r));
    CHECK(seq_is(r.out[0], 2) && r.out[0]->items[1]->dims[2] == 1 &&
          r.out[0]->items[0]->dims[2] == 3);
    nh_release(&r);
    sp.in[1] = s13;
    CHECK_OK(nh_run(&sp, &r));
    CHECK(seq_is(r.out[0], 2) && r.out[0]->items[1]->dims[2] == 3);
    if (seq_is(r.out[0], 2))
        CHECK(nh_close("part 1", r.out[0]->items[1], 18,
                       (double[]){1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22, 23},
                       0, 0));
    nh_release(&r);
    sp.in[1] = bad;
    nh_expect_fail(&sp, NH_RUN, OG_ERR_SHAPE, "sum to 3");
    sp.in[1] = zero;
    nh_expect_fail(&sp, NH_RUN, OG_ERR_SHAPE, "positive");
    sp.in[1] = NULL;
    sp.attrs[0] = (nh_attr)NH_INT("axis", 3);
    nh_expect_fail(&sp, NH_LOAD, OG_ERR_MODEL, "axis 3 is out of range");

    /* concat of items that disagree off the axis */
    og_tensor *a = rows(2, 0), *b = nh_tensor(OG_FLOAT, 2, (int64_t[]){3, 2}, NULL);
    og_tensor *ab = seq_of((og_tensor *[]){a, b}, 2);
    nh_node cb = {
        .op = "ConcatFromSequence", .opset = 11, .attrs = {NH_INT("axis", 1)}, .in = {ab}};
    nh_expect_fail(&cb, NH_RUN, OG_ERR_SHAPE, "must agree");
    cb.attrs[0] = (nh_attr)NH_INT("axis", 0);
    CHECK_OK(nh_run(&cb, &r));
    CHECK(r.out[0] && r.out[0]->dims[0] == 5 && r.out[0]->dims[1] == 2);
    nh_release(&r);
    nh_node noaxis = {.op = "ConcatFromSequence", .opset = 11, .in = {ab}};
    nh_expect_fail(&noaxis, NH_LOAD, OG_ERR_MODEL, "'axis' is required");

    og_tensor_free(ab);
    og_tensor_free(a);
    og_tensor_free(b);
    og_tensor_free(s3);
    og_tensor_free(s13);
    og_tensor_free(bad);
    og_tensor_free(zero);
    og_tensor_free(x);
}

static void test_strings(void)
{
    const char *w[] = {"alpha", "", "gamma", "delta"};
    og_tensor *x = NULL;
    og_tensor_from_strings(2, (int64_t[]){2, 2}, w, NULL, &x);
    nh_node n = {.op = "SplitToSequence", .opset = 11, .attrs = {NH_INT("keepdims", 0)}, .in = {x}};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    CHECK(seq_is(r.out[0], 2));
    if (seq_is(r.out[0], 2)) CHECK(strcmp(og_tensor_string(r.out[0]->items[1], 0), "gamma") == 0);
    og_tensor *parts = nh_take(&r, 0);
    nh_release(&r);
    og_tensor *p = pos64(1);
    nh_node at = {.op = "SequenceAt", .opset = 11, .in = {parts, p}};
    CHECK_OK(nh_run(&at, &r));
    CHECK(r.out[0] && strcmp(og_tensor_string(r.out[0], 1), "delta") == 0);
    nh_release(&r);
    nh_node cat = {.op = "ConcatFromSequence",
                   .opset = 11,
                   .attrs = {NH_INT("axis", 0), NH_INT("new_axis", 1)},
                   .in = {parts}};
    CHECK_OK(nh_run(&cat, &r));
    CHECK(og_value_equal(r.out[0], x));
    nh_release(&r);
    og_tensor_free(p);
    og_tensor_free(parts);
    og_tensor_free(x);
}

static void test_optional(void)
{
    og_tensor *a = rows(2, 1), *s = seq_of((og_tensor *[]){a}, 1), *none = NULL;
    og_optional_create(NULL, NULL, &none);
    nh_result r;

    /* Optional of a tensor, of a sequence, and the empty one */
    nh_node o = {.op = "Optional", .opset = 15, .in = {a}};
    CHECK_OK(nh_run(&o, &r));
    og_tensor *oa = nh_take(&r, 0);
    CHECK(oa && oa->kind == OG_KIND_OPTIONAL && og_value_equal(og_optional_value(oa), a));
    nh_release(&r);
    o.in[0] = s;
    CHECK_OK(nh_run(&o, &r));
    og_tensor *os = nh_take(&r, 0);
    CHECK(os && og_value_equal(og_optional_value(os), s));
    nh_release(&r);
    nh_node o0 = {.op = "Optional", .opset = 15};
    CHECK_OK(nh_run(&o0, &r));
    CHECK(r.out[0] && r.out[0]->kind == OG_KIND_OPTIONAL && !og_optional_value(r.out[0]));
    nh_release(&r);
    o.in[0] = oa;
    nh_expect_fail(&o, NH_LOAD, OG_ERR_TYPE, "do not nest");

    /* HasElement: optionals; from 18 anything, and nothing at all */
    struct {
        og_tensor *in;
        int opset;
        double want;
    } has[] = {{oa, 15, 1}, {os, 15, 1}, {none, 15, 0}, {a, 18, 1}, {s, 18, 1}, {NULL, 18, 0}};
    for (int i = 0; i < 6; i++) {
        nh_node h = {.op = "OptionalHasElement", .opset = has[i].opset, .in = {has[i].in}};
        CHECK_OK(nh_run(&h, &r));
        CHECK(r.out[0] && r.out[0]->dtype == OG_BOOL &&
              nh_close("has", r.out[0], 1, &has[i].want, 0, 0));
        nh_release(&r);
    }
    nh_node h15 = {.op = "OptionalHasElement", .opset = 15, .in = {a}};
    nh_expect_fail(&h15, NH_LOAD, OG_ERR_TYPE, "must be a optional");

    /* GetElement: the value, a pass-through from 18, an error for the empty one */
    nh_node g = {.op = "OptionalGetElement", .opset = 15, .in = {oa}};
    CHECK_OK(nh_run(&g, &r));
    CHECK(og_value_equal(r.out[0], a));
    nh_release(&r);
    g.in[0] = os;
    CHECK_OK(nh_run(&g, &r));
    CHECK(og_value_equal(r.out[0], s));
    nh_release(&r);
    g.in[0] = none;
    nh_expect_fail(&g, NH_RUN, OG_ERR_RUNTIME, "empty");
    g.in[0] = a;
    nh_expect_fail(&g, NH_LOAD, OG_ERR_TYPE, "optional");
    g.opset = 18;
    CHECK_OK(nh_run(&g, &r));
    CHECK(og_value_equal(r.out[0], a));
    nh_release(&r);

    og_tensor_free(oa);
    og_tensor_free(os);
    og_tensor_free(none);
    og_tensor_free(s);
    og_tensor_free(a);
}

/* Every integer width and signedness through the bit ops, with broadcasting. */
static void test_bit_ops(void)
{
    og_dtype types[] = {OG_UINT8, OG_UINT16, OG_UINT32, OG_UINT64,
                        OG_INT8,  OG_INT16,  OG_INT32,  OG_INT64};
    nh_result r;
    for (int i = 0; i < 8; i++) {
        og_dtype t = types[i];
        og_tensor *a = nh_tensor(t, 2, (int64_t[]){2, 3}, (double[]){0, 1, 5, 6, 12, 127}),
                  *b = nh_tensor(t, 1, (int64_t[]){3}, (double[]){3, 10, 6});
        const char *ops[] = {"BitwiseAnd", "BitwiseOr", "BitwiseXor"};
        double want[3][6] = {{0, 0, 4, 2, 8, 6}, {3, 11, 7, 7, 14, 127}, {3, 11, 3, 5, 6, 121}};
        for (int o = 0; o < 3; o++) {
            nh_node n = {.op = ops[o], .opset = 18, .in = {a, b}, .threads = 2};
            CHECK_OK(nh_run(&n, &r));
            CHECK(r.out[0] && r.out[0]->dtype == t && nh_close(ops[o], r.out[0], 6, want[o], 0, 0));
            nh_release(&r);
        }
        nh_node no = {.op = "BitwiseNot", .opset = 18, .in = {a}};
        CHECK_OK(nh_run(&no, &r));
        double nw[6];
        for (int k = 0; k < 6; k++) {
            double x = og_tensor_get_f64(a, k);
            nw[k] = t == OG_UINT8    ? 255 - x
                    : t == OG_UINT16 ? 65535 - x
                    : t == OG_UINT32 ? 4294967295.0 - x
                    : t == OG_UINT64 ? 18446744073709551615.0 - x
                                     : -x - 1;
        }
        CHECK(nh_close("not", r.out[0], 6, nw, 0, 0));
        nh_release(&r);
        og_tensor_free(a);
        og_tensor_free(b);
    }
    /* shifts: unsigned only; by the width or more gives 0 */
    og_tensor *x = nh_tensor(OG_UINT8, 1, (int64_t[]){4}, (double[]){1, 2, 128, 255}),
              *s = nh_tensor(OG_UINT8, 1, (int64_t[]){4}, (double[]){1, 7, 8, 200});
    nh_node l = {
        .op = "BitShift", .opset = 11, .attrs = {NH_STRING("direction", "LEFT")}, .in = {x, s}};
    CHECK_OK(nh_run(&l, &r));
    CHECK(nh_close("shl", r.out[0], 4, (double[]){2, 0, 0, 0}, 0, 0));
    nh_release(&r);
    l.attrs[0] = (nh_attr)NH_STRING("direction", "RIGHT");
    CHECK_OK(nh_run(&l, &r));
    CHECK(nh_close("shr", r.out[0], 4, (double[]){0, 0, 0, 0}, 0, 0));
    nh_release(&r);
    og_tensor *x64 = nh_tensor(OG_UINT64, 1, (int64_t[]){2}, (double[]){1, 4096}),
              *s64 = nh_tensor(OG_UINT64, 1, (int64_t[]){1}, (double[]){63});
    l.in[0] = x64;
    l.in[1] = s64;
    l.attrs[0] = (nh_attr)NH_STRING("direction", "LEFT");
    CHECK_OK(nh_run(&l, &r));
    CHECK(r.out[0] && ((const uint64_t *)r.out[0]->data)[0] == (uint64_t)1 << 63 &&
          ((const uint64_t *)r.out[0]->data)[1] == 0);
    nh_release(&r);
    l.attrs[0] = (nh_attr)NH_STRING("direction", "UP");
    nh_expect_fail(&l, NH_LOAD, OG_ERR_MODEL, "LEFT or RIGHT");
    nh_node nodir = {.op = "BitShift", .opset = 11, .in = {x, s}};
    nh_expect_fail(&nodir, NH_LOAD, OG_ERR_MODEL, "required");
    og_tensor *i8 = nh_tensor(OG_INT8, 1, (int64_t[]){1}, (double[]){1});
    nh_node signd = {
        .op = "BitShift", .opset = 11, .attrs = {NH_STRING("direction", "LEFT")}, .in = {i8, i8}};
    nh_expect_fail(&signd, NH_LOAD, OG_ERR_UNSUPPORTED, "int8");
    og_tensor *f = nh_tensor(OG_FLOAT, 1, (int64_t[]){1}, (double[]){1});
    nh_node fl = {.op = "BitwiseAnd", .opset = 18, .in = {f, f}};
    nh_expect_fail(&fl, NH_LOAD, OG_ERR_UNSUPPORTED, "float32");
    nh_node mixed = {.op = "BitwiseOr", .opset = 18, .in = {x, i8}};
    nh_expect_fail(&mixed, NH_LOAD, OG_ERR_TYPE, "different element types");
    og_tensor_free(f);
    og_tensor_free(i8);
    og_tensor_free(x);
    og_tensor_free(s);
    og_tensor_free(x64);
    og_tensor_free(s64);
}

int main(void)
{
    test_construct_at_length();
    test_insert_erase_empty();
    test_split_concat();
    test_strings();
    test_optional();
    test_bit_ops();
    NH_DONE();
}
