/* test_quant.c: QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear on small
 * hand-checked inputs (rounding half to even, saturation, per axis, blocked, 16-bit types),
 * and their errors. */
#include "unit/node_harness.h"

/* Run n and compare output 0 with want (count values); release everything. */
static void q_case(const nh_node *n, const char *what, int64_t count, const double *want,
                   og_dtype dt, og_tensor **in, int n_in)
{
    nh_result r;
    CHECK_OK(nh_run(n, &r));
    if (r.status == OG_OK) {
        nh_expect(what, r.out[0], count, want, 1e-6);
        CHECKF(r.out[0]->dtype == dt, "%s: dtype %s", what, og_dtype_name(r.out[0]->dtype));
    }
    nh_release(&r);
    nh_free_tensors(in, n_in);
}

static void test_quantize(void)
{
    double x[6] = {0, 1, 2.5, -1, 300, -3.5};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 1, (int64_t[]){6}, x), nh_scalar(OG_FLOAT, 1),
                       nh_scalar(OG_INT8, 0)};
    nh_node n = {.op = "QuantizeLinear", .opset = 10, .in = {in[0], in[1], in[2]}};
    q_case(&n, "int8, half to even, saturated", 6, (double[]){0, 1, 2, -1, 127, -4}, OG_INT8, in,
           3);
    og_tensor *u[] = {nh_tensor(OG_FLOAT, 1, (int64_t[]){6}, x), nh_scalar(OG_FLOAT, 2)};
    nh_node un = {.op = "QuantizeLinear", .opset = 13, .in = {u[0], u[1]}};
    q_case(&un, "uint8 by default", 6, (double[]){0, 0, 1, 0, 150, 0}, OG_UINT8, u, 2);
    /* per axis 1 of [2, 2]: scales 1 and 10, zero points 0 and 100 */
    og_tensor *a[] = {nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 2}, (double[]){4, 40, -4, -40}),
                      nh_tensor(OG_FLOAT, 1, (int64_t[]){2}, (double[]){1, 10}),
                      nh_tensor(OG_UINT8, 1, (int64_t[]){2}, (double[]){0, 100})};
    nh_node an = {.op = "QuantizeLinear", .opset = 13, .in = {a[0], a[1], a[2]}};
    q_case(&an, "per axis", 4, (double[]){4, 104, 0, 96}, OG_UINT8, a, 3);
    /* blocks of 2 along axis 0 of [3]: scales 1 (first two) and 2 (the last, partial) */
    og_tensor *b[] = {nh_tensor(OG_FLOAT, 1, (int64_t[]){3}, (double[]){5, 6, 7}),
                      nh_tensor(OG_FLOAT, 1, (int64_t[]){2}, (double[]){1, 2})};
    nh_node bn = {
        .op = "QuantizeLinear",
        .opset = 21,
        .attrs = {NH_INT("axis", 0), NH_INT("block_size", 2), NH_INT("output_dtype", OG_INT16)},
        .in = {b[0], b[1]}};
    q_case(&bn, "blocked to int16", 3, (double[]){5, 6, 4}, OG_INT16, b, 2);
}

static void test_dequantize(void)
{
    og_tensor *in[] = {nh_tensor(OG_INT8, 1, (int64_t[]){2}, (double[]){-128, 127}),
                       nh_scalar(OG_FLOAT, 0.5), nh_scalar(OG_INT8, -128)};
    nh_node n = {.op = "DequantizeLinear", .opset = 10, .in = {in[0], in[1], in[2]}};
    q_case(&n, "int8", 2, (double[]){0, 127.5}, OG_FLOAT, in, 3);
    og_tensor *u[] = {nh_tensor(OG_UINT16, 1, (int64_t[]){2}, (double[]){0, 34816}),
                      nh_scalar(OG_FLOAT16, 0.5), nh_scalar(OG_UINT16, 32768)};
    nh_node un = {.op = "DequantizeLinear", .opset = 21, .in = {u[0], u[1], u[2]}};
    q_case(&un, "uint16 to float16", 2, (double[]){-16384, 1024}, OG_FLOAT16, u, 3);
    og_tensor *i[] = {nh_tensor(OG_INT32, 1, (int64_t[]){2}, (double[]){-1000, 7}),
                      nh_scalar(OG_FLOAT, 0.25)};
    nh_node in32 = {.op = "DequantizeLinear", .opset = 13, .in = {i[0], i[1]}};
    q_case(&in32, "int32", 2, (double[]){-250, 1.75}, OG_FLOAT, i, 2);
}

static void test_dynamic_quantize(void)
{
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 1, (int64_t[]){3}, (double[]){0, 2, -1})};
    nh_node n = {.op = "DynamicQuantizeLinear", .opset = 11, .in = {in[0]}, .n_out = 3};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    /* [−1, 2] over 255 steps: scale 3/255, zero point 85 */
    nh_expect("dynamic y", r.out[0], 3, (double[]){85, 255, 0}, 0);
    nh_expect("dynamic scale", r.out[1], 1, (double[]){3.0 / 255}, 1e-6);
    nh_expect("dynamic zero point", r.out[2], 1, (double[]){85}, 0);
    nh_release(&r);
    nh_free_tensors(in, 1);
}

static void test_errors(void)
{
    og_tensor *x = nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 3}, NULL);
    og_tensor *s2 = nh_tensor(OG_FLOAT, 1, (int64_t[]){2}, (double[]){1, 1});
    og_tensor *s3 = nh_tensor(OG_FLOAT, 1, (int64_t[]){3}, (double[]){1, 1, 1});
    og_tensor *z32 = nh_scalar(OG_INT32, 0);
    /* a scale of 2 entries against an axis of 3 */
    nh_node n1 = {.op = "QuantizeLinear", .opset = 13, .in = {x, s2}};
    nh_expect_fail(&n1, NH_LOAD, OG_ERR_SHAPE, "one per entry of the axis");
    /* per axis before opset 13 */
    nh_node n2 = {.op = "QuantizeLinear", .opset = 10, .in = {x, s3}};
    nh_expect_fail(&n2, NH_LOAD, OG_ERR_SHAPE, "per-tensor only");
    /* an int32 zero point: not a quantized type */
    nh_node n3 = {.op = "QuantizeLinear", .opset = 13, .in = {x, nh_scalar(OG_FLOAT, 1), z32}};
    nh_expect_fail(&n3, NH_LOAD, OG_ERR_UNSUPPORTED, "quantized types");
    og_tensor_free((og_tensor *)n3.in[1]);
    /* blocked, but the scale's shape is not x's with ⌈D/B⌉ on the axis */
    nh_node n4 = {.op = "DequantizeLinear",
                  .opset = 21,
                  .attrs = {NH_INT("block_size", 2)},
                  .in = {nh_tensor(OG_INT8, 2, (int64_t[]){2, 3}, NULL), s3}};
    nh_expect_fail(&n4, NH_LOAD, OG_ERR_SHAPE, "blocked quantization");
    og_tensor_free((og_tensor *)n4.in[0]);
    nh_node n5 = {.op = "QuantizeLinear",
                  .opset = 21,
                  .attrs = {NH_INT("output_dtype", OG_FLOAT)},
                  .in = {x, s3}};
    nh_expect_fail(&n5, NH_LOAD, OG_ERR_UNSUPPORTED, "output_dtype");
    og_tensor_free(x);
    og_tensor_free(s2);
    og_tensor_free(s3);
    og_tensor_free(z32);
}

int main(void)
{
    test_quantize();
    test_dequantize();
    test_dynamic_quantize();
    test_errors();
    NH_DONE();
}
