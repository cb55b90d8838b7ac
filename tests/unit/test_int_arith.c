/* test_int_arith.c: the integer types of the arithmetic ops whose schemas list them (issue
 * 12) one node at a time (node_harness.h): Neg, Relu, Erf, Shrink, PRelu, ReduceL2,
 * ReduceLogSum, ReduceLogSumExp, CumSum, TopK, MatMul, Gemm, Einsum and QuantizeLinear with
 * an int32 x and scale.
 *
 * The expected values are those of the ONNX reference evaluator (onnx 1.16,
 * onnx.reference.ReferenceEvaluator) on the same node and inputs, or of onnxruntime 1.32's
 * CPU provider where the reference evaluator fails on the type (ReduceLogSum,
 * ReduceLogSumExp): integer overflow wraps, float-valued results are cast back by truncation
 * (and the log of 0, -inf, to INT_MIN as on x86-64). */
#include <string.h>

#include "unit/node_harness.h"

/* Element i of an integer tensor as its 64 bits (signed types sign-extended). */
static uint64_t bits(const og_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case OG_INT8: return (uint64_t)(int64_t)((const int8_t *)t->data)[i];
    case OG_UINT8: return ((const uint8_t *)t->data)[i];
    case OG_INT16: return (uint64_t)(int64_t)((const int16_t *)t->data)[i];
    case OG_UINT16: return ((const uint16_t *)t->data)[i];
    case OG_INT32: return (uint64_t)(int64_t)((const int32_t *)t->data)[i];
    case OG_UINT32: return ((const uint32_t *)t->data)[i];
    case OG_INT64: return (uint64_t)((const int64_t *)t->data)[i];
    case OG_UINT64: return ((const uint64_t *)t->data)[i];
    default: return 0xdeadbeefull;
    }
}

/* out has dtype dt, n elements, exactly want (as 64-bit patterns: -1 is all ones). */
#define EXPECT_INTS(what, out, dt, n, ...)                                                         \
    expect_ints(__LINE__, what, out, dt, n, (const uint64_t[]){__VA_ARGS__})
static void expect_ints(int line, const char *what, const og_tensor *t, og_dtype dt, int64_t n,
                        const uint64_t *want)
{
    CHECKF(t != NULL, "line %d %s: no output", line, what);
    if (!t) return;
    CHECKF(t->dtype == dt && t->numel == n, "line %d %s: dtype %s, %lld elements", line, what,
           og_dtype_name(t->dtype), (long long)t->numel);
    if (t->dtype != dt || t->numel != n) return;
    for (int64_t i = 0; i < n; i++)
        CHECKF(bits(t, i) == want[i], "line %d %s: element %lld is %lld, expected %lld", line, what,
               (long long)i, (long long)bits(t, i), (long long)want[i]);
}

/* A tensor of dtype dt from 64-bit patterns (truncated to the type's width). */
static og_tensor *ints(og_dtype dt, int rank, const int64_t *dims, const uint64_t *v)
{
    og_tensor *t = nh_tensor(dt, rank, dims, NULL);
    if (!t) return NULL;
    for (int64_t i = 0; i < t->numel; i++) {
        switch (dt) {
        case OG_INT8:
        case OG_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)v[i]; break;
        case OG_INT16:
        case OG_UINT16: ((uint16_t *)t->data)[i] = (uint16_t)v[i]; break;
        case OG_INT32:
        case OG_UINT32: ((uint32_t *)t->data)[i] = (uint32_t)v[i]; break;
        default: ((uint64_t *)t->data)[i] = v[i]; break;
        }
    }
    return t;
}
#define INTS(dt, rank, dims, ...) ints(dt, rank, dims, (const uint64_t[]){__VA_ARGS__})
#define DIMS(...)                 ((const int64_t[]){__VA_ARGS__})
#define M(v)                      ((uint64_t)(int64_t)(v)) /* a negative value's pattern */

/* Run n (owning its inputs), check output j against want, free everything. */
static void run_check(int line, const char *what, nh_node *n, int j, og_dtype dt, int64_t cnt,
                      const uint64_t *want)
{
    nh_result r;
    og_status st = nh_run(n, &r);
    CHECKF(st == OG_OK, "line %d %s: status %d", line, what, (int)st);
    if (st == OG_OK) expect_ints(line, what, r.out[j], dt, cnt, want);
    nh_release(&r);
    for (int i = 0; i < NH_MAX_IO; i++) og_tensor_free((og_tensor *)n->in[i]);
}
#define RUN_CHECK(what, n, j, dt, cnt, ...)                                                        \
    run_check(__LINE__, what, n, j, dt, cnt, (const uint64_t[]){__VA_ARGS__})

static void test_neg_relu(void)
{
    nh_node n = {
        .op = "Neg", .opset = 13, .in = {INTS(OG_INT8, 1, DIMS(5), M(-128), M(-1), 0, 5, 127)}};
    RUN_CHECK("Neg int8", &n, 0, OG_INT8, 5, M(-128), 1, 0, M(-5), M(-127));
    nh_node n2 = {
        .op = "Neg", .opset = 6, .in = {INTS(OG_INT16, 1, DIMS(5), M(-32768), M(-1), 0, 5, 32767)}};
    RUN_CHECK("Neg int16", &n2, 0, OG_INT16, 5, M(-32768), 1, 0, M(-5), M(-32767));
    nh_node n3 = {
        .op = "Relu", .opset = 14, .in = {INTS(OG_INT8, 1, DIMS(5), M(-128), M(-1), 0, 5, 127)}};
    RUN_CHECK("Relu int8", &n3, 0, OG_INT8, 5, 0, 0, 0, 5, 127);
    nh_node n4 = {.op = "Relu", .opset = 14, .in = {INTS(OG_INT16, 1, DIMS(3), M(-300), 0, 300)}};
    RUN_CHECK("Relu int16", &n4, 0, OG_INT16, 3, 0, 0, 300);
    /* Relu before 14 has float types only */
    nh_node n5 = {.op = "Relu", .opset = 13, .in = {INTS(OG_INT8, 1, DIMS(1), 1)}};
    nh_expect_fail(&n5, NH_LOAD, OG_ERR_UNSUPPORTED, "element type int8");
    og_tensor_free((og_tensor *)n5.in[0]);
}

static void test_erf_shrink(void)
{
    /* erf in float64 truncated: 0 but where erf rounds to +-1 (|x| >= 6) */
    nh_node n = {.op = "Erf",
                 .opset = 13,
                 .in = {INTS(OG_INT8, 1, DIMS(7), M(-100), M(-1), 0, 1, 5, 6, 100)}};
    RUN_CHECK("Erf int8", &n, 0, OG_INT8, 7, M(-1), 0, 0, 0, 0, 1, 1);
    nh_node n2 = {.op = "Erf", .opset = 9, .in = {INTS(OG_UINT16, 1, DIMS(5), 0, 1, 5, 6, 65535)}};
    RUN_CHECK("Erf uint16", &n2, 0, OG_UINT16, 5, 0, 0, 0, 1, 1);
    nh_node n3 = {
        .op = "Erf", .opset = 13, .in = {INTS(OG_INT64, 1, DIMS(5), M(-7), M(-3), 0, 3, 7)}};
    RUN_CHECK("Erf int64", &n3, 0, OG_INT64, 5, M(-1), 0, 0, 0, 1);
    /* Shrink: x -+ bias in float64, truncated; below zero wraps in an unsigned type */
    nh_node n4 = {.op = "Shrink",
                  .opset = 9,
                  .attrs = {NH_FLOAT("lambd", 0.5f), NH_FLOAT("bias", 3.0f)},
                  .in = {INTS(OG_UINT8, 1, DIMS(5), 0, 1, 2, 3, 200)}};
    RUN_CHECK("Shrink uint8", &n4, 0, OG_UINT8, 5, 0, 254, 255, 0, 197);
    nh_node n5 = {.op = "Shrink",
                  .opset = 9,
                  .attrs = {NH_FLOAT("lambd", 1.5f), NH_FLOAT("bias", 1.5f)},
                  .in = {INTS(OG_INT8, 1, DIMS(9), M(-128), M(-3), M(-2), M(-1), 0, 1, 2, 3, 127)}};
    RUN_CHECK("Shrink int8", &n5, 0, OG_INT8, 9, M(-126), M(-1), 0, 0, 0, 0, 0, 1, 125);
    nh_node n6 = {.op = "Shrink",
                  .opset = 9,
                  .attrs = {NH_FLOAT("lambd", 1.0f), NH_FLOAT("bias", 0.5f)},
                  .in = {INTS(OG_INT32, 1, DIMS(7), M(-9), M(-2), M(-1), 0, 1, 2, 9)}};
    RUN_CHECK("Shrink int32", &n6, 0, OG_INT32, 7, M(-8), M(-1), 0, 0, 0, 1, 8);
}

static void test_prelu(void)
{
    nh_node n = {
        .op = "PRelu",
        .opset = 16,
        .in = {INTS(OG_UINT32, 1, DIMS(3), 0, 5, 4000000000u), INTS(OG_UINT32, 1, DIMS(1), 2)}};
    RUN_CHECK("PRelu uint32", &n, 0, OG_UINT32, 3, 0, 5, 4000000000u);
    nh_node n2 = {.op = "PRelu",
                  .opset = 9,
                  .in = {INTS(OG_UINT64, 1, DIMS(3), 0, 5, 1ull << 63),
                         INTS(OG_UINT64, 1, DIMS(3), 3, 3, 3)}};
    RUN_CHECK("PRelu uint64", &n2, 0, OG_UINT64, 3, 0, 5, 1ull << 63);
}

static void test_reduce(void)
{
    /* L2: squares wrapped in the type (70000^2 in 32 bits), summed in 64 */
    nh_node n = {.op = "ReduceL2",
                 .opset = 18,
                 .in = {INTS(OG_INT32, 2, DIMS(3, 3), 3, 4, 100, 1, 2, 2, 70000, 0, 0),
                        INTS(OG_INT64, 1, DIMS(1), 1)}};
    RUN_CHECK("ReduceL2 int32", &n, 0, OG_INT32, 3, 100, 3, 24597);
    nh_node n2 = {.op = "ReduceL2",
                  .opset = 18,
                  .in = {INTS(OG_UINT32, 2, DIMS(3, 3), 3, 4, 100, 1, 2, 2, 70000, 0, 0),
                         INTS(OG_INT64, 1, DIMS(1), 1)}};
    RUN_CHECK("ReduceL2 uint32", &n2, 0, OG_UINT32, 3, 100, 3, 24597);
    nh_node n3 = {.op = "ReduceL2",
                  .opset = 13,
                  .attrs = {NH_INTS("axes", 1), NH_INT("keepdims", 0)},
                  .in = {INTS(OG_INT64, 2, DIMS(3, 3), 3, 4, 100, 1, 2, 2, 70000, 0, 0)}};
    RUN_CHECK("ReduceL2 int64", &n3, 0, OG_INT64, 3, 100, 3, 70000);
    /* LogSum (onnxruntime's): log of the sum truncated, log(0) = -inf gives INT_MIN */
    nh_node n4 = {.op = "ReduceLogSum",
                  .opset = 18,
                  .in = {INTS(OG_INT32, 2, DIMS(4, 2), 0, 0, 1, 2, M(-5), 1, 100, 7),
                         INTS(OG_INT64, 1, DIMS(1), 1)}};
    RUN_CHECK("ReduceLogSum int32", &n4, 0, OG_INT32, 4, M(INT32_MIN), 1, M(INT32_MIN), 4);
    nh_node n5 = {.op = "ReduceLogSum",
                  .opset = 11,
                  .attrs = {NH_INTS("axes", 1)},
                  .in = {INTS(OG_INT64, 2, DIMS(4, 2), 0, 0, 1, 2, M(-5), 1, 100, 7)}};
    RUN_CHECK("ReduceLogSum int64", &n5, 0, OG_INT64, 4, M(INT64_MIN), 1, M(INT64_MIN), 4);
    /* LogSumExp, signed (onnxruntime's): max + (T)log(how many reach the max) */
    nh_node n6 = {.op = "ReduceLogSumExp",
                  .opset = 18,
                  .in = {INTS(OG_INT32, 2, DIMS(3, 7), 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0,
                              M(-5), 3, 3, 3, 3, M(-9), 3),
                         INTS(OG_INT64, 1, DIMS(1), 1)}};
    RUN_CHECK("ReduceLogSumExp int32", &n6, 0, OG_INT32, 3, 2, 3, 4);
    /* unsigned: max + log(sum exp(x - max)) in float64, truncated */
    nh_node n7 = {.op = "ReduceLogSumExp",
                  .opset = 18,
                  .in = {INTS(OG_UINT64, 2, DIMS(3, 7), 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0, 4,
                              4, 4, 4, 4, 4, 5),
                         INTS(OG_INT64, 1, DIMS(1), 1)}};
    RUN_CHECK("ReduceLogSumExp uint64", &n7, 0, OG_UINT64, 3, 3, 3, 6);
    nh_node n8 = {.op = "ReduceLogSumExp",
                  .opset = 18,
                  .in = {INTS(OG_UINT32, 2, DIMS(3, 7), 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0, 4,
                              4, 4, 4, 4, 4, 5),
                         INTS(OG_INT64, 1, DIMS(1), 0)}};
    RUN_CHECK("ReduceLogSumExp uint32 axis 0", &n8, 0, OG_UINT32, 7, 4, 4, 4, 4, 4, 4, 5);
}

static void test_cumsum_topk(void)
{
    nh_node n = {
        .op = "CumSum",
        .opset = 14,
        .in = {INTS(OG_UINT32, 1, DIMS(4), 1, 4294967295u, 3, 7), INTS(OG_INT32, 0, NULL, 0)}};
    RUN_CHECK("CumSum uint32 (wraps)", &n, 0, OG_UINT32, 4, 1, 0, 3, 10);
    nh_node n2 = {
        .op = "CumSum",
        .opset = 11,
        .attrs = {NH_INT("exclusive", 1), NH_INT("reverse", 1)},
        .in = {INTS(OG_UINT64, 2, DIMS(3, 2), 1, 2, 3, 4, 5, 6), INTS(OG_INT64, 0, NULL, 0)}};
    RUN_CHECK("CumSum uint64 exclusive reverse", &n2, 0, OG_UINT64, 6, 8, 10, 5, 6, 0, 0);
    /* TopK: ties go to the lower index (onnxruntime's order) */
    nh_node n3 = {
        .op = "TopK",
        .opset = 11,
        .n_out = 2,
        .attrs = {NH_INT("axis", 0)},
        .in = {INTS(OG_INT8, 1, DIMS(5), 3, M(-1), 7, 7, M(-128)), INTS(OG_INT64, 1, DIMS(1), 2)}};
    {
        nh_result r;
        CHECK_OK(nh_run(&n3, &r));
        EXPECT_INTS("TopK int8 values", r.out[0], OG_INT8, 2, 7, 7);
        EXPECT_INTS("TopK int8 indices", r.out[1], OG_INT64, 2, 2, 3);
        nh_release(&r);
        nh_free_tensors((og_tensor **)n3.in, 2);
    }
    nh_node n4 = {.op = "TopK",
                  .opset = 11,
                  .n_out = 2,
                  .attrs = {NH_INT("axis", 1), NH_INT("largest", 0)},
                  .in = {INTS(OG_UINT16, 2, DIMS(2, 3), 3, 65535, 7, 9, 0, 8),
                         INTS(OG_INT64, 1, DIMS(1), 2)}};
    {
        nh_result r;
        CHECK_OK(nh_run(&n4, &r));
        EXPECT_INTS("TopK uint16 values", r.out[0], OG_UINT16, 4, 3, 7, 0, 8);
        EXPECT_INTS("TopK uint16 indices", r.out[1], OG_INT64, 4, 0, 2, 1, 2);
        nh_release(&r);
        nh_free_tensors((og_tensor **)n4.in, 2);
    }
    nh_node n5 = {.op = "TopK",
                  .opset = 21,
                  .n_out = 2,
                  .in = {INTS(OG_UINT64, 1, DIMS(4), UINT64_MAX, 0, 1ull << 63, 5),
                         INTS(OG_INT64, 1, DIMS(1), 3)}};
    {
        nh_result r;
        CHECK_OK(nh_run(&n5, &r));
        EXPECT_INTS("TopK uint64 values", r.out[0], OG_UINT64, 3, UINT64_MAX, 1ull << 63, 5);
        EXPECT_INTS("TopK uint64 indices", r.out[1], OG_INT64, 3, 0, 2, 3);
        nh_release(&r);
        nh_free_tensors((og_tensor **)n5.in, 2);
    }
}

static void test_linalg(void)
{
    nh_node n = {.op = "MatMul",
                 .opset = 13,
                 .in = {INTS(OG_UINT32, 2, DIMS(2, 2), 1, 2, 3, 4),
                        INTS(OG_UINT32, 2, DIMS(2, 1), 5, 4294967295u)}};
    RUN_CHECK("MatMul uint32 (wraps)", &n, 0, OG_UINT32, 2, 3, 11);
    nh_node n2 = {.op = "MatMul",
                  .opset = 9,
                  .in = {INTS(OG_UINT64, 2, DIMS(2, 2), 1, 2, 3, 4),
                         INTS(OG_UINT64, 2, DIMS(2, 2), 5, 1, UINT64_MAX, 2)}};
    RUN_CHECK("MatMul uint64 (wraps)", &n2, 0, OG_UINT64, 4, 3, 5, 11, 11);
    nh_node n3 = {.op = "Gemm",
                  .opset = 13,
                  .attrs = {NH_FLOAT("alpha", 2.0f), NH_FLOAT("beta", 1.0f), NH_INT("transB", 1)},
                  .in = {INTS(OG_UINT32, 2, DIMS(2, 2), 1, 2, 3, 4),
                         INTS(OG_UINT32, 2, DIMS(2, 2), 5, 4294967295u, 1, 1),
                         INTS(OG_UINT32, 1, DIMS(2), 10, 20)}};
    RUN_CHECK("Gemm uint32", &n3, 0, OG_UINT32, 4, 16, 26, 32, 34);
    nh_node n4 = {.op = "Gemm",
                  .opset = 11,
                  .attrs = {NH_FLOAT("alpha", 1.0f), NH_FLOAT("beta", 3.0f)},
                  .in = {INTS(OG_UINT64, 2, DIMS(1, 2), 2, 3), INTS(OG_UINT64, 2, DIMS(2, 1), 4, 5),
                         INTS(OG_UINT64, 0, NULL, 1)}};
    RUN_CHECK("Gemm uint64", &n4, 0, OG_UINT64, 1, 26);
    /* Einsum in the narrow types: products and sums wrap in the type */
    nh_node n5 = {.op = "Einsum",
                  .opset = 12,
                  .attrs = {NH_STRING("equation", "ij,jk->ik")},
                  .in = {INTS(OG_INT8, 2, DIMS(2, 2), 100, 100, M(-1), 2),
                         INTS(OG_INT8, 2, DIMS(2, 2), 1, 2, 1, M(-3))}};
    RUN_CHECK("Einsum int8", &n5, 0, OG_INT8, 4, M(-56), M(-100), 1, M(-8));
    nh_node n6 = {.op = "Einsum",
                  .opset = 12,
                  .attrs = {NH_STRING("equation", "ij->j")},
                  .in = {INTS(OG_UINT16, 2, DIMS(2, 2), 65535, 3, 1, 4)}};
    RUN_CHECK("Einsum uint16", &n6, 0, OG_UINT16, 2, 0, 7);
    nh_node n7 = {.op = "Einsum",
                  .opset = 12,
                  .attrs = {NH_STRING("equation", "i,i->")},
                  .in = {INTS(OG_UINT8, 1, DIMS(2), 200, 100), INTS(OG_UINT8, 1, DIMS(2), 2, 1)}};
    RUN_CHECK("Einsum uint8", &n7, 0, OG_UINT8, 1, 244);
}

static void test_quantize_int32(void)
{
    /* x and scale int32 (QuantizeLinear-19 and 21): x / scale in float64, half to even */
    nh_node n = {.op = "QuantizeLinear",
                 .opset = 19,
                 .in = {INTS(OG_INT32, 1, DIMS(5), 7, M(-7), 5, 6, 1000),
                        INTS(OG_INT32, 0, NULL, 2), INTS(OG_UINT8, 0, NULL, 128)}};
    RUN_CHECK("QuantizeLinear-19 int32 scale", &n, 0, OG_UINT8, 5, 132, 124, 130, 131, 255);
    nh_node n2 = {.op = "QuantizeLinear",
                  .opset = 21,
                  .in = {INTS(OG_INT32, 1, DIMS(5), 7, M(-7), 5, 6, 1000),
                         INTS(OG_INT32, 0, NULL, 2), INTS(OG_INT8, 0, NULL, 0)}};
    RUN_CHECK("QuantizeLinear-21 int32 scale", &n2, 0, OG_INT8, 5, 4, M(-4), 2, 3, 127);
    /* a zero int32 scale: x / 0 is +-inf or NaN, whose int32 cast (INT32_MIN, the reference
     * evaluator's astype on x86-64) saturates to 0 with the zero point added */
    nh_node n5 = {.op = "QuantizeLinear",
                  .opset = 19,
                  .in = {INTS(OG_INT32, 1, DIMS(4), M(-2), 0, 2, 7), INTS(OG_INT32, 0, NULL, 0),
                         INTS(OG_UINT8, 0, NULL, 5)}};
    RUN_CHECK("QuantizeLinear-19 int32 zero scale", &n5, 0, OG_UINT8, 4, 0, 0, 0, 0);
    /* an int32 x over a float scale divides in float64 (numpy's int32 / float32):
     * 16842753 / 2^17 is 128.5000076 (129), where float32 would round x to 16842752 and give
     * the tie 128.5 (128) */
    og_tensor *s = nh_scalar(OG_FLOAT, 131072.0);
    nh_node n3 = {.op = "QuantizeLinear",
                  .opset = 13,
                  .in = {INTS(OG_INT32, 1, DIMS(2), 16842753, 3), s, INTS(OG_UINT8, 0, NULL, 0)}};
    RUN_CHECK("QuantizeLinear-13 int32 x", &n3, 0, OG_UINT8, 2, 129, 0);
    /* before 19 the scale is float only */
    nh_node n4 = {.op = "QuantizeLinear",
                  .opset = 13,
                  .in = {INTS(OG_INT32, 1, DIMS(1), 7), INTS(OG_INT32, 0, NULL, 2)}};
    nh_expect_fail(&n4, NH_LOAD, OG_ERR_UNSUPPORTED, "input 1 has element type int32");
    nh_free_tensors((og_tensor **)n4.in, 2);
}

/* QLinearMatMul-21 with float16 scales: the multiplier a_scale * b_scale / y_scale computed
 * in float16 (the reference evaluator's numpy arithmetic) gives 47 for y[0][2], where the
 * same multiplier in float32 gave 46 */
static void test_qlinear_matmul_f16(void)
{
    nh_node n = {.op = "QLinearMatMul",
                 .opset = 21,
                 .in = {INTS(OG_UINT8, 2, DIMS(2, 4), 81, 109, 0, 111, 0, 87, 0, 0),
                        nh_tensor(OG_FLOAT16, 1, DIMS(1), (const double[]){0.00659942626953125}),
                        INTS(OG_UINT8, 1, DIMS(1), 0),
                        INTS(OG_INT8, 2, DIMS(4, 3), 25, M(-76), 117, M(-67), M(-101), M(-128),
                             M(-127), 0, 119, 0, 127, 120),
                        nh_tensor(OG_FLOAT16, 1, DIMS(1), (const double[]){0.007049560546875}),
                        INTS(OG_INT8, 1, DIMS(1), M(-13)),
                        nh_tensor(OG_FLOAT16, 1, DIMS(1), (const double[]){0.0106964111328125}),
                        INTS(OG_INT8, 1, DIMS(1), M(-9))}};
    RUN_CHECK("QLinearMatMul-21 float16 scales", &n, 0, OG_INT8, 6, M(-15), M(-5), 47, M(-29),
              M(-42), M(-53));
}

int main(void)
{
    test_neg_relu();
    test_erf_shrink();
    test_prelu();
    test_reduce();
    test_cumsum_topk();
    test_linalg();
    test_quantize_int32();
    test_qlinear_matmul_f16();
    NH_DONE();
}
