/* test_node_harness.c: what tests/unit/node_harness.h offers the op families' tests, shown
 * on small cases whose results are known: attributes of every kind, float16, bfloat16,
 * double, integer and string inputs, omitted inputs and outputs, several outputs, declared
 * shapes with symbols, and errors at load and at run time. */
#include "unit/node_harness.h"

/* Attributes of each kind reach the op: Constant takes one value attribute of any kind (a
 * tensor, floats, ints, strings, one float, one int), and refuses two at load. */
static void test_attribute_kinds(void)
{
    og_tensor *bf = nh_tensor(OG_BFLOAT16, 2, (int64_t[]){2, 2}, (double[]){1, -2, 0.5, 256});
    nh_node n = {.op = "Constant", .opset = 13, .attrs = {NH_TENSOR("value", bf)}};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    CHECK(r.out[0] && r.out[0]->dtype == OG_BFLOAT16 && r.out[0]->rank == 2);
    nh_expect("value (bfloat16)", r.out[0], 4, (double[]){1, -2, 0.5, 256}, 0);
    nh_release(&r);
    og_tensor_free(bf);

    n.attrs[0] = (nh_attr)NH_FLOATS("value_floats", 1.5f, -0.25f, 3);
    CHECK_OK(nh_run(&n, &r));
    nh_expect("value_floats", r.out[0], 3, (double[]){1.5, -0.25, 3}, 0);
    nh_release(&r);

    n.attrs[0] = (nh_attr)NH_INTS("value_ints", 7, -9000000000LL);
    CHECK_OK(nh_run(&n, &r));
    CHECK(r.out[0] && r.out[0]->dtype == OG_INT64 &&
          ((int64_t *)r.out[0]->data)[1] == -9000000000LL);
    nh_release(&r);

    n.attrs[0] = (nh_attr)NH_FLOAT("value_float", 0.75f);
    CHECK_OK(nh_run(&n, &r));
    CHECK(r.out[0] && r.out[0]->rank == 0);
    nh_expect("value_float", r.out[0], 1, (double[]){0.75}, 0);
    nh_release(&r);

    n.attrs[0] = (nh_attr)NH_INT("value_int", -3);
    CHECK_OK(nh_run(&n, &r));
    nh_expect("value_int", r.out[0], 1, (double[]){-3}, 0);
    nh_release(&r);

    n.attrs[0] = (nh_attr)NH_STRINGS("value_strings", "a", "bc");
    CHECK_OK(nh_run(&n, &r));
    const og_tensor *y = r.out[0];
    CHECK(y && y->dtype == OG_STRING && y->numel == 2 && strcmp(og_tensor_str(y, 1), "bc") == 0);
    nh_release(&r);

    /* two value attributes: the node is refused when it is parsed */
    n.attrs[1] = (nh_attr)NH_INT("value_int", 1);
    nh_expect_fail(&n, NH_LOAD, OG_ERR_MODEL, "exactly one value attribute");
}

/* float16 in, float64 out: Cast reads the halves exactly. */
static void test_float16_input(void)
{
    double v[] = {0.5, -2, 1024, 65504, 0.000061035156};
    og_tensor *h = nh_tensor(OG_FLOAT16, 1, (int64_t[]){5}, v);
    nh_node n = {.op = "Cast", .opset = 19, .attrs = {NH_INT("to", OG_DOUBLE)}, .in = {h}};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    CHECK(r.out[0] && r.out[0]->dtype == OG_DOUBLE);
    nh_expect("float16 -> float64", r.out[0], 5, v, 1e-12);
    nh_release(&r);
    og_tensor_free(h);
}

/* Several outputs (TopK: values and indices, int32 data), an omitted output (Dropout's
 * mask), an omitted optional input in the middle (Clip without min). */
static void test_outputs_and_omissions(void)
{
    og_tensor *x = nh_tensor(OG_INT32, 1, (int64_t[]){5}, (double[]){4, -1, 9, 0, 9});
    og_tensor *k = nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){2});
    nh_node topk = {.op = "TopK", .opset = 11, .in = {x, k}, .n_out = 2};
    nh_result r;
    CHECK_OK(nh_run(&topk, &r));
    nh_expect("TopK values", r.out[0], 2, (double[]){9, 9}, 0);
    nh_expect("TopK indices", r.out[1], 2, (double[]){2, 4}, 0);
    CHECK(r.out[0] && r.out[0]->dtype == OG_INT32 && r.out[1] && r.out[1]->dtype == OG_INT64);
    nh_release(&r);

    og_tensor *d = nh_tensor(OG_DOUBLE, 1, (int64_t[]){3}, (double[]){1, 2, 3});
    nh_node drop = {.op = "Dropout", .opset = 13, .in = {d}, .n_out = 2, .omit_out = 1u << 1};
    CHECK_OK(nh_run(&drop, &r));
    CHECK(r.y[1] < 0 && r.out[1] == NULL && r.node->out[1] < 0);
    nh_expect("Dropout output", r.out[0], 3, (double[]){1, 2, 3}, 0);
    nh_release(&r);

    og_tensor *hi = nh_scalar(OG_DOUBLE, 2.5);
    nh_node clip = {.op = "Clip", .opset = 13, .in = {d, NULL, hi}};
    CHECK_OK(nh_run(&clip, &r));
    CHECK(r.node->n_in == 3 && r.node->in[1] < 0);
    nh_expect("Clip without min", r.out[0], 3, (double[]){1, 2, 2.5}, 0);
    nh_release(&r);
    og_tensor *all[] = {x, k, d, hi};
    nh_free_tensors(all, 4);
}

/* Declared shapes: a symbol carries through static inference; "?" declares nothing. */
static void test_declarations(void)
{
    og_tensor *x = nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 3}, (double[]){-1, 2, -3, 4, -5, 6});
    nh_node n = {.op = "Relu", .opset = 14, .in = {x}, .decl = {"N,3"}};
    nh_result r;
    CHECK_OK(nh_load(&n, &r));
    const og_value *y = nh_static_out(&r, 0);
    CHECK(y && y->rank == 2 && y->dims[0] < 0 && y->dims[1] == 3);
    CHECK(y && strcmp(og_graph_dim_name(r.g, y->dims[0]), "N") == 0);
    CHECK_OK(nh_exec(&r));
    nh_expect("Relu", r.out[0], 6, (double[]){0, 2, 0, 4, 0, 6}, 0);
    nh_release(&r);

    n.decl[0] = "?";
    CHECK_OK(nh_load(&n, &r));
    y = nh_static_out(&r, 0);
    CHECK(y && y->rank == -1 && y->dtype == OG_UNDEFINED);
    CHECK_OK(nh_exec(&r));
    nh_release(&r);

    /* a declared dim the run does not match: the session says so */
    n.decl[0] = "2,4";
    nh_expect_fail(&n, NH_RUN, OG_ERR_SHAPE, "input 'x0' must have shape [2, 4]");
    og_tensor_free(x);
}

/* String tensors go in and come out (Gather moves them; the harness compares by content). */
static void test_strings(void)
{
    og_tensor *x = NULL;
    const char *words[] = {"zero", "one", "", "three"};
    CHECK_OK(og_tensor_from_strings(1, (int64_t[]){4}, words, NULL, &x));
    og_tensor *i = nh_tensor(OG_INT64, 1, (int64_t[]){3}, (double[]){3, 0, -3});
    nh_node n = {.op = "Gather", .opset = 13, .in = {x, i}};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    const og_tensor *y = r.out[0];
    CHECK(y && y->dtype == OG_STRING && y->numel == 3 &&
          strcmp(og_tensor_str(y, 0), "three") == 0 && strcmp(og_tensor_str(y, 1), "zero") == 0 &&
          strcmp(og_tensor_str(y, 2), "one") == 0);
    nh_release(&r);
    og_tensor *all[] = {x, i};
    nh_free_tensors(all, 2);
}

/* Run-time errors name the node: an index out of range, with the node named "gather". */
static void test_run_error(void)
{
    og_tensor *x = nh_tensor(OG_FLOAT, 1, (int64_t[]){3}, (double[]){1, 2, 3});
    og_tensor *i = nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){3});
    nh_node n = {.op = "Gather", .opset = 13, .name = "gather", .in = {x, i}};
    nh_expect_fail(&n, NH_RUN, OG_ERR_RUNTIME, "node 'gather' (Gather");
    og_tensor *all[] = {x, i};
    nh_free_tensors(all, 2);
}

int main(void)
{
    test_attribute_kinds();
    test_float16_input();
    test_outputs_and_omissions();
    test_declarations();
    test_strings();
    test_run_error();
    NH_DONE();
}
