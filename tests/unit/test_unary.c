/* test_unary.c: the unary family's ops, one node at a time (node_harness.h: static
 * inference, a session's run), against libm references. */
#include "kernels/cpu/fast_math.h"
#include "kernels/cpu/kernel.h"
#include "kernels/cpu/vact.h"
#include "unit/node_harness.h"

/* Run a one-node graph of `op` (opset) over the given inputs (NULL: omitted) with `threads`
 * threads.  Returns the status; *out gets the output (NULL on failure). */
static og_status run_op(const char *op, int opset, const nh_attr *attrs, int n_attrs,
                        const og_tensor *const *inputs, int n_in, int threads, og_tensor **out)
{
    nh_node n = {.op = op, .opset = opset, .n_in = n_in, .threads = threads};
    for (int i = 0; i < n_attrs; i++) n.attrs[i] = attrs[i];
    for (int i = 0; i < n_in; i++) n.in[i] = inputs[i];
    nh_result r;
    og_status st = nh_run(&n, &r);
    *out = nh_take(&r, 0);
    nh_release(&r);
    return st;
}

static og_tensor *vec(og_dtype dt, int64_t n, const double *vals)
{
    return nh_tensor(dt, 1, &n, vals);
}

static og_tensor *scalar(og_dtype dt, double v) { return nh_scalar(dt, v); }

static bool close_to(double got, double want, double rtol)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= rtol * fabs(want) + 1e-6;
}

/* ---- references ---------------------------------------------------------------------- */

static double r_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double r_softplus(double x) { return x > 30 ? x : log(1.0 + exp(x)); }
static double r_relu(double x) { return x > 0 ? x : 0; }
static double r_sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }
static double r_neg(double x) { return -x; }
static double r_recip(double x) { return 1.0 / x; }
static double r_softsign(double x) { return x / (1 + fabs(x)); }
static double r_round(double x) { return nearbyint(x); }
static double r_hardswish(double x) { return x * fmin(1, fmax(0, x / 6 + 0.5)); }
static double r_mish(double x) { return x * tanh(r_softplus(x)); }
static double r_elu(double x) { return x >= 0 ? x : 2.0 * (exp(x) - 1); }
static double r_hardsigmoid(double x) { return fmin(1, fmax(0, 0.2 * x + 0.5)); }
static double r_leakyrelu(double x) { return x >= 0 ? x : 0.01 * x; }
static double r_selu(double x)
{
    const double a = 1.67326319217681884765625, g = 1.05070102214813232421875;
    return x > 0 ? g * x : g * (a * exp(x) - a);
}
static double r_gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double r_gelu_tanh(double x)
{
    return 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}
static double r_celu(double x) { return fmax(0, x) + fmin(0, 2.0 * (exp(x / 2.0) - 1)); }
static double r_thresholded(double x) { return x > 1.0 ? x : 0; }
static double r_shrink(double x) { return x < -0.5 ? x + 0.25 : x > 0.5 ? x - 0.25 : 0; }

typedef struct ref_case {
    const char *op;
    int opset;
    double (*ref)(double);
    double lo, hi; /* input domain */
    nh_attr attr[2];
    int n_attr;
} ref_case;

static const ref_case ref_cases[] = {
    {"Abs", 13, fabs, -5, 5, {{0}}, 0},
    {"Neg", 13, r_neg, -5, 5, {{0}}, 0},
    {"Sign", 13, r_sign, -5, 5, {{0}}, 0},
    {"Relu", 13, r_relu, -5, 5, {{0}}, 0},
    {"Ceil", 13, ceil, -5, 5, {{0}}, 0},
    {"Floor", 13, floor, -5, 5, {{0}}, 0},
    {"Round", 11, r_round, -5, 5, {{0}}, 0},
    {"Reciprocal", 13, r_recip, 0.5, 5, {{0}}, 0},
    {"Sqrt", 13, sqrt, 0, 9, {{0}}, 0},
    {"Exp", 13, exp, -10, 10, {{0}}, 0},
    {"Log", 13, log, 0.01, 100, {{0}}, 0},
    {"Erf", 13, erf, -3, 3, {{0}}, 0},
    {"Sigmoid", 13, r_sigmoid, -20, 20, {{0}}, 0},
    {"Tanh", 13, tanh, -5, 5, {{0}}, 0},
    {"Softplus", 7, r_softplus, -20, 20, {{0}}, 0},
    {"Softsign", 7, r_softsign, -5, 5, {{0}}, 0},
    {"Sin", 7, sin, -5, 5, {{0}}, 0},
    {"Cos", 7, cos, -5, 5, {{0}}, 0},
    {"Tan", 7, tan, -1.2, 1.2, {{0}}, 0},
    {"Asin", 7, asin, -0.99, 0.99, {{0}}, 0},
    {"Acos", 7, acos, -0.99, 0.99, {{0}}, 0},
    {"Atan", 7, atan, -5, 5, {{0}}, 0},
    {"Sinh", 9, sinh, -5, 5, {{0}}, 0},
    {"Cosh", 9, cosh, -5, 5, {{0}}, 0},
    {"Asinh", 9, asinh, -5, 5, {{0}}, 0},
    {"Acosh", 9, acosh, 1, 5, {{0}}, 0},
    {"Atanh", 9, atanh, -0.99, 0.99, {{0}}, 0},
    {"HardSwish", 14, r_hardswish, -5, 5, {{0}}, 0},
    {"Mish", 18, r_mish, -5, 5, {{0}}, 0},
    {"Elu", 7, r_elu, -5, 5, {NH_FLOAT("alpha", 2.0f)}, 1},
    {"HardSigmoid", 7, r_hardsigmoid, -5, 5, {{0}}, 0},
    {"LeakyRelu", 16, r_leakyrelu, -5, 5, {{0}}, 0},
    {"Selu", 7, r_selu, -5, 5, {{0}}, 0},
    {"Celu", 12, r_celu, -5, 5, {NH_FLOAT("alpha", 2.0f)}, 1},
    {"ThresholdedRelu", 10, r_thresholded, -5, 5, {{0}}, 0},
    {"Shrink", 9, r_shrink, -5, 5, {NH_FLOAT("bias", 0.25f), NH_FLOAT("lambd", 0.5f)}, 2},
    {"Gelu", 20, r_gelu, -5, 5, {{0}}, 0},
    {"Gelu", 20, r_gelu_tanh, -5, 5, {NH_STRING("approximate", "tanh")}, 1},
};

static void test_refs(int64_t n, int threads)
{
    double *vals = malloc((size_t)n * sizeof *vals);
    for (size_t c = 0; c < sizeof ref_cases / sizeof ref_cases[0]; c++) {
        const ref_case *rc = &ref_cases[c];
        for (int64_t i = 0; i < n; i++)
            vals[i] = rc->lo + (rc->hi - rc->lo) * (double)i / (double)(n > 1 ? n - 1 : 1);
        for (int d = 0; d < 2; d++) {
            og_dtype dt = d ? OG_DOUBLE : OG_FLOAT;
            og_tensor *x = vec(dt, n, vals), *y = NULL;
            const og_tensor *ins[1] = {x};
            og_status st = run_op(rc->op, rc->opset, rc->attr, rc->n_attr, ins, 1, threads, &y);
            CHECKF(st == OG_OK, "%s %s: %s", rc->op, og_dtype_name(dt), og_last_error());
            if (st == OG_OK) {
                int bad = 0;
                for (int64_t i = 0; i < n && bad < 3; i++) {
                    double xin = og_tensor_get_f64(x, i);
                    double got = og_tensor_get_f64(y, i), want = rc->ref(xin);
                    if (!close_to(got, want, d ? 1e-12 : 2e-6)) {
                        bad++;
                        CHECKF(0, "%s %s: x=%.9g got %.9g want %.9g", rc->op, og_dtype_name(dt),
                               xin, got, want);
                    }
                }
                CHECKF(y->dtype == dt && y->numel == n, "%s: output shape/dtype", rc->op);
            }
            og_tensor_free(x);
            og_tensor_free(y);
        }
    }
    free(vals);
}

/* ---- special cases ------------------------------------------------------------------- */

static void expect(const char *what, og_tensor *y, const double *want, int64_t n)
{
    CHECKF(y != NULL, "%s: no output (%s)", what, og_last_error());
    if (!y) return;
    CHECKF(y->numel == n, "%s: %lld elements, want %lld", what, (long long)y->numel, (long long)n);
    for (int64_t i = 0; i < n && i < y->numel; i++) {
        double got = og_tensor_get_f64(y, i);
        CHECKF(close_to(got, want[i], 1e-6), "%s[%lld]: got %.17g want %.17g", what, (long long)i,
               got, want[i]);
    }
    og_tensor_free(y);
}

static void test_sigmoid_extremes(void)
{
    const double x[] = {-1000, -100, -88, 0, 88, 100, 1000, -INFINITY, INFINITY};
    for (int d = 0; d < 2; d++) {
        og_tensor *t = vec(d ? OG_DOUBLE : OG_FLOAT, 9, x), *y;
        const og_tensor *ins[1] = {t};
        run_op("Sigmoid", 13, NULL, 0, ins, 1, 1, &y);
        for (int i = 0; y && i < 9; i++) {
            double v = og_tensor_get_f64(y, i);
            CHECKF(v >= 0 && v <= 1 && !isnan(v), "Sigmoid(%g) = %g", x[i], v);
        }
        og_tensor_free(y);
        run_op("Softplus", 7, NULL, 0, ins, 1, 1, &y);
        for (int i = 0; y && i < 9; i++) {
            double v = og_tensor_get_f64(y, i);
            CHECKF(!isnan(v) && v >= 0, "Softplus(%g) = %g", x[i], v);
        }
        og_tensor_free(y);
        og_tensor_free(t);
    }
}

static void test_clip(void)
{
    const double x[] = {-5, -1, 0, 1, 5};
    og_tensor *y;
    /* opset 6..10: attributes */
    {
        og_tensor *t = vec(OG_FLOAT, 5, x);
        const og_tensor *ins[1] = {t};
        nh_attr at[2] = {NH_FLOAT("min", -1.5f), NH_FLOAT("max", 2.0f)};
        run_op("Clip", 7, at, 2, ins, 1, 1, &y);
        expect("Clip-6 attrs", y, (const double[]){-1.5, -1, 0, 1, 2}, 5);
        run_op("Clip", 7, at + 1, 1, ins, 1, 1, &y);
        expect("Clip-6 max only", y, (const double[]){-5, -1, 0, 1, 2}, 5);
        og_tensor_free(t);
    }
    /* opset 11+: inputs, each optional; float, int32, int64 */
    og_dtype types[] = {OG_FLOAT, OG_DOUBLE, OG_INT32, OG_INT64};
    for (int ti = 0; ti < 4; ti++) {
        og_dtype dt = types[ti];
        og_tensor *t = vec(dt, 5, x), *lo = scalar(dt, -2), *hi = scalar(dt, 3);
        const og_tensor *both[3] = {t, lo, hi}, *no_min[3] = {t, NULL, hi}, *no_max[2] = {t, lo};
        const og_tensor *crossed[3] = {t, hi, lo}, *none[1] = {t};
        og_status st = run_op("Clip", 13, NULL, 0, both, 3, 1, &y);
        CHECKF(st == OG_OK, "Clip-13 %s: %s", og_dtype_name(dt), og_last_error());
        expect("Clip-13 both", y, (const double[]){-2, -1, 0, 1, 3}, 5);
        run_op("Clip", 13, NULL, 0, no_min, 3, 1, &y);
        expect("Clip-13 no min", y, (const double[]){-5, -1, 0, 1, 3}, 5);
        run_op("Clip", 13, NULL, 0, no_max, 2, 1, &y);
        expect("Clip-13 no max", y, (const double[]){-2, -1, 0, 1, 5}, 5);
        run_op("Clip", 13, NULL, 0, crossed, 3, 1, &y);
        expect("Clip-13 min > max", y, (const double[]){-2, -2, -2, -2, -2}, 5);
        run_op("Clip", 13, NULL, 0, none, 1, 1, &y);
        expect("Clip-13 none", y, x, 5);
        og_tensor_free(t);
        og_tensor_free(lo);
        og_tensor_free(hi);
    }
    /* opset 12+: the narrow integer types, each bound optional, min > max gives max */
    {
        og_dtype nt[] = {OG_INT8, OG_INT16, OG_UINT8, OG_UINT16, OG_UINT32, OG_UINT64};
        const double xu[] = {0, 1, 5, 100, 255};
        for (int ti = 0; ti < 6; ti++) {
            og_dtype dt = nt[ti];
            bool sig = dt == OG_INT8 || dt == OG_INT16;
            const double *xv = sig ? (const double[]){-128, -1, 0, 1, 127} : xu;
            og_tensor *t = vec(dt, 5, xv), *lo = scalar(dt, sig ? -2 : 2),
                      *hi = scalar(dt, sig ? 3 : 100);
            const og_tensor *both[3] = {t, lo, hi}, *no_min[3] = {t, NULL, hi};
            const og_tensor *no_max[2] = {t, lo}, *crossed[3] = {t, hi, lo};
            og_status st = run_op("Clip", 13, NULL, 0, both, 3, 1, &y);
            CHECKF(st == OG_OK, "Clip-13 %s: %s", og_dtype_name(dt), og_last_error());
            CHECKF(!st && y && y->dtype == dt, "Clip-13 %s: output dtype", og_dtype_name(dt));
            expect("Clip-13 narrow both", y,
                   sig ? (const double[]){-2, -1, 0, 1, 3} : (const double[]){2, 2, 5, 100, 100},
                   5);
            run_op("Clip", 12, NULL, 0, no_min, 3, 1, &y);
            expect("Clip-12 narrow no min", y,
                   sig ? (const double[]){-128, -1, 0, 1, 3} : (const double[]){0, 1, 5, 100, 100},
                   5);
            run_op("Clip", 13, NULL, 0, no_max, 2, 1, &y);
            expect("Clip-13 narrow no max", y,
                   sig ? (const double[]){-2, -1, 0, 1, 127} : (const double[]){2, 2, 5, 100, 255},
                   5);
            run_op("Clip", 13, NULL, 0, crossed, 3, 1, &y);
            expect("Clip-13 narrow min > max", y,
                   sig ? (const double[]){-2, -2, -2, -2, -2} : (const double[]){2, 2, 2, 2, 2}, 5);
            /* before opset 12 Clip takes float types only */
            st = run_op("Clip", 11, NULL, 0, both, 3, 1, &y);
            CHECKF(st == OG_ERR_UNSUPPORTED && !y && strstr(og_last_error(), og_dtype_name(dt)),
                   "Clip-11 %s: %d %s", og_dtype_name(dt), st, og_last_error());
            og_tensor_free(t);
            og_tensor_free(lo);
            og_tensor_free(hi);
        }
    }
    /* errors: bound of two elements; int input at opset 11; bound of another dtype */
    {
        og_tensor *t = vec(OG_FLOAT, 5, x), *lo2 = vec(OG_FLOAT, 2, x), *lod = scalar(OG_DOUBLE, 0);
        og_tensor *ti = vec(OG_INT32, 5, x), *loi = scalar(OG_INT32, 0);
        const og_tensor *a[2] = {t, lo2}, *b[2] = {ti, loi}, *c[2] = {t, lod};
        og_status st = run_op("Clip", 13, NULL, 0, a, 2, 1, &y);
        CHECKF(st == OG_ERR_SHAPE && !y, "Clip with 2-element min: %d %s", st, og_last_error());
        st = run_op("Clip", 11, NULL, 0, b, 2, 1, &y);
        CHECKF(st == OG_ERR_UNSUPPORTED && !y, "Clip-11 int32: %d %s", st, og_last_error());
        st = run_op("Clip", 13, NULL, 0, c, 2, 1, &y);
        CHECKF(st == OG_ERR_TYPE && !y, "Clip float/double: %d %s", st, og_last_error());
        og_tensor_free(t);
        og_tensor_free(lo2);
        og_tensor_free(lod);
        og_tensor_free(ti);
        og_tensor_free(loi);
    }
}

static void test_ints(void)
{
    const double x[] = {-7, -1, 0, 1, 7};
    for (int ti = 0; ti < 2; ti++) {
        og_dtype dt = ti ? OG_INT64 : OG_INT32;
        og_tensor *t = vec(dt, 5, x), *y;
        const og_tensor *ins[1] = {t};
        run_op("Abs", 13, NULL, 0, ins, 1, 1, &y);
        expect("Abs int", y, (const double[]){7, 1, 0, 1, 7}, 5);
        run_op("Neg", 13, NULL, 0, ins, 1, 1, &y);
        expect("Neg int", y, (const double[]){7, 1, 0, -1, -7}, 5);
        run_op("Sign", 13, NULL, 0, ins, 1, 1, &y);
        expect("Sign int", y, (const double[]){-1, -1, 0, 1, 1}, 5);
        run_op("Relu", 14, NULL, 0, ins, 1, 1, &y);
        expect("Relu-14 int", y, (const double[]){0, 0, 0, 1, 7}, 5);
        og_status st = run_op("Relu", 13, NULL, 0, ins, 1, 1, &y);
        CHECKF(st == OG_ERR_UNSUPPORTED && !y, "Relu-13 int: %d", st);
        st = run_op("Exp", 13, NULL, 0, ins, 1, 1, &y);
        CHECKF(st == OG_ERR_UNSUPPORTED && !y, "Exp int: %d", st);
        og_tensor_free(t);
    }
    /* INT_MIN wraps instead of trapping */
    {
        int64_t dims[1] = {2};
        int32_t v[2] = {INT32_MIN, INT32_MAX};
        og_tensor *t, *y;
        og_tensor_from_data(OG_INT32, 1, dims, v, sizeof v, NULL, &t);
        const og_tensor *ins[1] = {t};
        run_op("Abs", 13, NULL, 0, ins, 1, 1, &y);
        expect("Abs INT32_MIN", y, (const double[]){INT32_MIN, INT32_MAX}, 2);
        og_tensor_free(t);
    }
    /* the narrow signed types (Abs of the minimum wraps) and the unsigned ones (Abs is x,
     * Sign is x != 0) */
    {
        const double xs[] = {-128, -5, 0, 5, 127}, xu[] = {0, 1, 200, 255, 7};
        static const og_dtype signed_t[] = {OG_INT8, OG_INT16},
                              unsigned_t[] = {OG_UINT8, OG_UINT16, OG_UINT32, OG_UINT64};
        for (int ti = 0; ti < 2; ti++) {
            og_tensor *t = vec(signed_t[ti], 5, xs), *y;
            const og_tensor *ins[1] = {t};
            run_op("Abs", 13, NULL, 0, ins, 1, 1, &y);
            expect("Abs narrow", y,
                   (const double[]){signed_t[ti] == OG_INT8 ? -128 : 128, 5, 0, 5, 127}, 5);
            run_op("Sign", 13, NULL, 0, ins, 1, 1, &y);
            expect("Sign narrow", y, (const double[]){-1, -1, 0, 1, 1}, 5);
            og_tensor_free(t);
        }
        for (int ti = 0; ti < 4; ti++) {
            og_tensor *t = vec(unsigned_t[ti], 5, xu), *y;
            const og_tensor *ins[1] = {t};
            run_op("Abs", 13, NULL, 0, ins, 1, 1, &y);
            expect("Abs unsigned", y, xu, 5);
            run_op("Sign", 13, NULL, 0, ins, 1, 1, &y);
            expect("Sign unsigned", y, (const double[]){0, 1, 1, 1, 1}, 5);
            og_tensor_free(t);
        }
    }
}

static void test_bool_out(void)
{
    const double x[] = {0, 1, 1, 0};
    og_tensor *t = vec(OG_BOOL, 4, x), *y;
    const og_tensor *ins[1] = {t};
    run_op("Not", 7, NULL, 0, ins, 1, 1, &y);
    CHECKF(y && y->dtype == OG_BOOL, "Not dtype");
    expect("Not", y, (const double[]){1, 0, 0, 1}, 4);
    og_tensor_free(t);

    const double f[] = {NAN, INFINITY, -INFINITY, 0, 1e38};
    for (int d = 0; d < 2; d++) {
        t = vec(d ? OG_DOUBLE : OG_FLOAT, 5, f);
        const og_tensor *in2[1] = {t};
        run_op("IsNaN", 13, NULL, 0, in2, 1, 1, &y);
        CHECKF(y && y->dtype == OG_BOOL, "IsNaN dtype");
        expect("IsNaN", y, (const double[]){1, 0, 0, 0, 0}, 5);
        run_op("IsInf", 10, NULL, 0, in2, 1, 1, &y);
        expect("IsInf", y, (const double[]){0, 1, 1, 0, 0}, 5);
        nh_attr at[1] = {NH_INT("detect_negative", 0)};
        run_op("IsInf", 20, at, 1, in2, 1, 1, &y);
        expect("IsInf positive only", y, (const double[]){0, 1, 0, 0, 0}, 5);
        og_tensor_free(t);
    }
    /* float16 and bfloat16 (bit patterns): a negative NaN, the largest finite half, a
     * subnormal; IsInf takes them from opset 20, IsNaN float16 from 9 and bfloat16 from 13 */
    const double h[] = {-NAN, INFINITY, -INFINITY, 65504, 6e-8, 0};
    for (int d = 0; d < 2; d++) {
        og_dtype dt = d ? OG_BFLOAT16 : OG_FLOAT16;
        t = vec(dt, 6, h);
        const og_tensor *in2[1] = {t};
        og_status st = run_op("IsNaN", 13, NULL, 0, in2, 1, 1, &y);
        CHECKF(!st && y && y->dtype == OG_BOOL, "IsNaN %s: %s", og_dtype_name(dt), og_last_error());
        expect("IsNaN half", y, (const double[]){1, 0, 0, 0, 0, 0}, 6);
        run_op("IsInf", 20, NULL, 0, in2, 1, 1, &y);
        expect("IsInf half", y, (const double[]){0, 1, 1, 0, 0, 0}, 6);
        nh_attr at[1] = {NH_INT("detect_positive", 0)};
        run_op("IsInf", 20, at, 1, in2, 1, 1, &y);
        expect("IsInf half negative only", y, (const double[]){0, 0, 1, 0, 0, 0}, 6);
        st = run_op("IsInf", 10, NULL, 0, in2, 1, 1, &y);
        CHECKF(st == OG_ERR_UNSUPPORTED && !y, "IsInf-10 %s: %d", og_dtype_name(dt), st);
        st = run_op("IsNaN", 9, NULL, 0, in2, 1, 1, &y);
        CHECKF(d ? st == OG_ERR_UNSUPPORTED && !y : st == OG_OK, "IsNaN-9 %s: %d",
               og_dtype_name(dt), st);
        og_tensor_free(y);
        og_tensor_free(t);
    }
}

static void test_bad_attrs(void)
{
    const double x[] = {1};
    og_tensor *t = vec(OG_FLOAT, 1, x), *y;
    const og_tensor *ins[1] = {t};
    nh_attr g[1] = {NH_STRING("approximate", "erf")};
    og_status st = run_op("Gelu", 20, g, 1, ins, 1, 1, &y);
    CHECKF(st == OG_ERR_MODEL && !y, "Gelu approximate=erf: %d", st);
    nh_attr e[1] = {NH_INT("alpha", 2)};
    st = run_op("Elu", 7, e, 1, ins, 1, 1, &y);
    CHECKF(st == OG_ERR_MODEL && !y, "Elu int alpha: %d", st);
    st = run_op("Gelu", 19, NULL, 0, ins, 1, 1, &y);
    CHECKF(st == OG_ERR_UNSUPPORTED && !y, "Gelu at opset 19: %d", st);
    og_tensor_free(t);
}

/* The float kernels use their own vectorizable exp/log/tanh/erf: check them over wide
 * ranges (log-spaced magnitudes, both signs) against double libm, in relative error. */
typedef struct wide_case {
    const char *op;
    int opset;
    double (*ref)(double);
    double lo, hi; /* magnitude range, log-spaced */
    int sign;      /* -1: negative only, 1: positive only, 0: both */
} wide_case;

static double r_softplus_exact(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
static double r_elu1(double x) { return x >= 0 ? x : expm1(x); }

static void test_wide(void)
{
    static const wide_case cases[] = {
        {"Exp", 13, exp, 1e-30, 89, 0},
        {"Exp", 13, exp, 80, 110, -1},
        {"Log", 13, log, 1e-45, 3e38, 1},
        {"Tanh", 13, tanh, 1e-30, 20, 0},
        {"Sigmoid", 13, r_sigmoid, 1e-30, 100, 0},
        {"Erf", 13, erf, 1e-30, 10, 0},
        {"Softplus", 7, r_softplus_exact, 1e-30, 100, 0},
        {"Elu", 7, r_elu1, 1e-30, 110, -1},
    };
    enum { N = 20001 };
    double *vals = malloc(N * sizeof *vals);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const wide_case *wc = &cases[c];
        for (int i = 0; i < N; i++) {
            double t = (double)(i / 2) / (double)(N / 2);
            double mag = exp(log(wc->lo) + (log(wc->hi) - log(wc->lo)) * t);
            int neg = wc->sign < 0 || (wc->sign == 0 && (i & 1));
            vals[i] = neg ? -mag : mag;
        }
        og_tensor *x = vec(OG_FLOAT, N, vals), *y = NULL;
        const og_tensor *ins[1] = {x};
        og_status st = run_op(wc->op, wc->opset, NULL, 0, ins, 1, 1, &y);
        CHECKF(st == OG_OK, "%s: %s", wc->op, og_last_error());
        double worst = 0, at = 0;
        for (int i = 0; y && i < N; i++) {
            double xin = og_tensor_get_f64(x, i), got = og_tensor_get_f64(y, i);
            double want = wc->ref(xin);
            if (fabs(want) > 3.4028234663852886e38) want = want > 0 ? INFINITY : -INFINITY;
            double err =
                isinf(want) ? (got == want ? 0 : 1) : fabs(got - want) / (fabs(want) + 1e-37);
            if (!(err <= worst)) {
                worst = err;
                at = xin;
            }
        }
        if (getenv("UNARY_VERBOSE")) printf("%s worst %.3g at %.9g\n", wc->op, worst, at);
        CHECKF(worst < 4e-6, "%s float: relative error %.3g at x=%.9g", wc->op, worst, at);
        og_tensor_free(x);
        og_tensor_free(y);
    }
    free(vals);

    /* special values */
    const double sx[] = {0, -0.0, INFINITY, -INFINITY, NAN, -1, 1e-45};
    og_tensor *x = vec(OG_FLOAT, 7, sx), *y;
    const og_tensor *ins[1] = {x};
    run_op("Log", 13, NULL, 0, ins, 1, 1, &y);
    expect("Log specials", y,
           (const double[]){-INFINITY, -INFINITY, INFINITY, NAN, NAN, NAN, log(1e-45f)}, 7);
    run_op("Exp", 13, NULL, 0, ins, 1, 1, &y);
    expect("Exp specials", y, (const double[]){1, 1, INFINITY, 0, NAN, exp(-1.0), 1}, 7);
    run_op("Tanh", 13, NULL, 0, ins, 1, 1, &y);
    expect("Tanh specials", y, (const double[]){0, 0, 1, -1, NAN, tanh(-1.0), 1e-45f}, 7);
    run_op("Sigmoid", 13, NULL, 0, ins, 1, 1, &y);
    expect("Sigmoid specials", y, (const double[]){0.5, 0.5, 1, 0, NAN, r_sigmoid(-1), 0.5}, 7);
    run_op("Softplus", 7, NULL, 0, ins, 1, 1, &y);
    expect("Softplus specials", y,
           (const double[]){log(2.0), log(2.0), INFINITY, 0, NAN, r_softplus_exact(-1), log(2.0)},
           7);
    og_tensor_free(x);

    /* Celu with a negative alpha takes expm1 of positive arguments */
    {
        const double cx[] = {-80, -10, -1, -1e-5, 0, 3};
        double cw[6];
        for (int i = 0; i < 6; i++) cw[i] = cx[i] > 0 ? cx[i] : -expm1(-cx[i]);
        nh_attr ca[1] = {NH_FLOAT("alpha", -1.0f)};
        x = vec(OG_FLOAT, 6, cx);
        const og_tensor *cin[1] = {x};
        run_op("Celu", 12, ca, 1, cin, 1, 1, &y);
        for (int i = 0; y && i < 6; i++) {
            double got = og_tensor_get_f64(y, i);
            CHECKF(fabs(got - cw[i]) <= 4e-6 * fabs(cw[i]), "Celu(alpha=-1, %g) = %.9g, want %.9g",
                   cx[i], got, cw[i]);
        }
        og_tensor_free(y);
        og_tensor_free(x);
    }

    /* Round: ties to even, large and special values unchanged */
    const double rx[] = {0.5, 1.5, 2.5, -0.5, -2.5, 8388609, 1e30, INFINITY, NAN, 2.4999999};
    const double rw[] = {0, 2, 2, 0, -2, 8388609, 1e30, INFINITY, NAN, 2};
    for (int d = 0; d < 2; d++) {
        x = vec(d ? OG_DOUBLE : OG_FLOAT, 10, rx);
        const og_tensor *rin[1] = {x};
        run_op("Round", 11, NULL, 0, rin, 1, 1, &y);
        expect("Round specials", y, rw, 10);
        og_tensor_free(x);
    }
}

/* float16 and bfloat16 in the everyday unary ops: computed on a float32 copy, rounded once
 * (within half a step: 2^-11 relative for float16, 2^-8 for bfloat16); bfloat16 from opset
 * 13, refused before. */
static void test_half_everyday(void)
{
    for (int d = 0; d < 2; d++) {
        og_dtype t = d ? OG_BFLOAT16 : OG_FLOAT16;
        double hs = d ? 1.0 / 256 : 1.0 / 2048;
        og_tensor *x = nh_tensor(t, 1, (int64_t[]){4}, (double[]){4, 0.25, 2, 1.5}),
                  *z = nh_tensor(t, 1, (int64_t[]){3}, (double[]){-1.5, 0, 2.5});
        struct {
            const char *op;
            og_tensor *in;
            double want[4];
        } cases[] = {
            {"Sqrt", x, {2, 0.5, 1.4142135623730951, 1.2247448713915890}},
            {"Exp",
             x,
             {54.598150033144236, 1.2840254166877414, 7.38905609893065, 4.4816890703380645}},
            {"Log",
             x,
             {1.3862943611198906, -1.3862943611198906, 0.6931471805599453, 0.4054651081081644}},
            {"Reciprocal", x, {0.25, 4, 0.5, 0.6666666666666666}},
            {"Tanh",
             x,
             {0.999329299739067, 0.24491866240370913, 0.9640275800758169, 0.9051482536448664}},
            {"Sigmoid",
             x,
             {0.9820137900379085, 0.5621765008857981, 0.8807970779778823, 0.8175744761936437}},
            {"Relu", z, {0, 0, 2.5}},
            {"Neg", z, {1.5, 0, -2.5}},
            {"Abs", z, {1.5, 0, 2.5}},
            {"Floor", z, {-2, 0, 2}},
            {"Ceil", z, {-1, 0, 3}},
            {"Sign", z, {-1, 0, 1}},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            nh_node n = {.op = cases[i].op, .opset = 13, .in = {cases[i].in}};
            nh_result r;
            CHECK_OK(nh_run(&n, &r));
            CHECKF(r.out[0] && r.out[0]->dtype == t, "%s %s dtype", cases[i].op, og_dtype_name(t));
            CHECKF(nh_close(cases[i].op, r.out[0], cases[i].in->numel, cases[i].want, 0, hs),
                   "%s %s", cases[i].op, og_dtype_name(t));
            nh_release(&r);
        }
        if (d) {
            nh_node old = {.op = "Sqrt", .opset = 12, .in = {x}};
            nh_expect_fail(&old, NH_LOAD, OG_ERR_UNSUPPORTED, "bfloat16");
        }
        nh_free_tensors((og_tensor *[]){x, z}, 2);
    }
}

/* ---- ulp sweep of the float exp family --------------------------------------------------
 * Exp, Sigmoid, and x*Sigmoid(x) (SiLU as a fused Conv activation computes it; here the
 * product is formed in float by the test, as og_cpu_act does) run on float inputs spaced
 * every 2^12 bit patterns over the whole float line (about a million values: every
 * binade, the subnormals, both signs) plus the edges, against double references.  The
 * error is counted in units in the last place of the float result (2^-149 among the
 * subnormals); a reference that overflows float must give +inf, NaN must give NaN.
 * Measured: Exp 0.96 ulp, Sigmoid 2.03 ulp, x*Sigmoid(x) 2.83 ulp where sigmoid(x) is normal
 * (bounds 2, 3, 4). */
static float bits_f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* |got - want| in ulps of the float nearest to want */
static double ulp_err(float got, double want)
{
    if (isnan(want)) return isnan(got) ? 0 : INFINITY;
    float wf = (float)want;
    if (isinf(wf)) return got == wf ? 0 : INFINITY;
    if (isnan(got) || isinf(got)) return INFINITY;
    int e;
    frexp(fabs(want) > 0 ? fabs(want) : 1e-300, &e);
    double ulp = ldexp(1.0, e - 24);
    if (ulp < 0x1p-149) ulp = 0x1p-149;
    return fabs((double)got - want) / ulp;
}

static double r_exp(double x) { return exp(x); }
static double r_sigmoid_exact(double x)
{
    return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
}

static void test_exp_ulp(void)
{
    static const float edges[] = {
        0.0f,       -0.0f,         INFINITY,       -INFINITY, NAN,         -NAN,         88.7f,
        -88.7f,     88.72283f,     88.72284f,      88.4f,     88.0f,       -87.33655f,   -87.4f,
        -103.2789f, -103.9720f,    -104.0f,        -105.0f,   89.0f,       1e-45f,       -1e-45f,
        1e-38f,     -1e-38f,       1e-10f,         -1e-10f,   0.34657359f, -0.34657359f, 1.0f,
        -1.0f,      3.4028235e38f, -3.4028235e38f, 16.0f,     -16.0f,      0.5f,         -0.5f};
    const int n_edge = (int)(sizeof edges / sizeof edges[0]);
    const int64_t n_sweep = (int64_t)1 << 20; /* 2^32 / 2^12 */
    const int64_t n = n_sweep + n_edge;
    float *xs = malloc((size_t)n * sizeof *xs);
    CHECK(xs != NULL);
    if (!xs) return;
    for (int64_t i = 0; i < n_sweep; i++) xs[i] = bits_f((uint32_t)i << 12 | 0x5a5);
    for (int i = 0; i < n_edge; i++) xs[n_sweep + i] = edges[i];
    og_tensor *x = nh_tensor_raw(OG_FLOAT, 1, &n, xs);
    CHECK(x != NULL);
    if (!x) {
        free(xs);
        return;
    }
    const og_tensor *ins[1] = {x};
    struct {
        const char *op;
        double (*ref)(double);
        double bound; /* ulps */
    } cases[] = {{"Exp", r_exp, 2}, {"Sigmoid", r_sigmoid_exact, 3}};
    for (int c = 0; c < 2; c++) {
        og_tensor *y = NULL;
        CHECK(run_op(cases[c].op, 13, NULL, 0, ins, 1, 2, &y) == OG_OK && y);
        if (!y) continue;
        const float *ys = y->data;
        double worst = 0, worst_silu = 0;
        float at = 0, at_silu = 0;
        for (int64_t i = 0; i < n; i++) {
            double want = cases[c].ref((double)xs[i]);
            double e = ulp_err(ys[i], want);
            if (!(e <= worst)) worst = e, at = xs[i];
            /* SiLU = x * sigmoid(x), the product rounded once more; where sigmoid(x) itself
             * is subnormal (x < -87.3) the graph's float Sigmoid output has lost relative
             * precision before the Mul, whatever the kernel: not counted */
            if (c == 1 && want >= 0x1p-126) {
                double es = ulp_err(xs[i] * ys[i], (double)xs[i] * want);
                if (!(es <= worst_silu)) worst_silu = es, at_silu = xs[i];
            }
        }
        printf("%s: max error %.3f ulp (at x = %.9g) over %lld floats\n", cases[c].op, worst,
               (double)at, (long long)n);
        if (c == 0) { /* the op's loop (on AVX-512 vact.h's og_v_exp) gives fast_expf's bits */
            int64_t differ = 0;
            for (int64_t i = 0; i < n; i++) {
                const float want = fast_expf(xs[i]);
                differ += memcmp(&want, &ys[i], sizeof want) != 0;
            }
            CHECKF(!differ, "Exp: %lld values differ from fast_expf's", (long long)differ);
        }
        CHECKF(worst <= cases[c].bound, "%s: %.3f ulp at x = %.9g (bound %g)", cases[c].op, worst,
               (double)at, cases[c].bound);
        if (c == 1) {
            printf("x*Sigmoid(x): max error %.3f ulp (at x = %.9g)\n", worst_silu, (double)at_silu);
            CHECKF(worst_silu <= cases[c].bound + 1, "SiLU: %.3f ulp at x = %.9g", worst_silu,
                   (double)at_silu);
            /* the fused activations (og_cpu_act: on AVX-512 vact.h's loop, elsewhere the
             * op's own) give the op's bits, and x times them for SiLU; NaN for NaN */
            float *fa = malloc((size_t)n * 2 * sizeof *fa);
            CHECK(fa != NULL);
            if (fa) {
                memcpy(fa, xs, (size_t)n * sizeof *fa);
                memcpy(fa + n, xs, (size_t)n * sizeof *fa);
                og_act sg = {.kind = OG_FUSE_SIGMOID}, sl = {.kind = OG_FUSE_SILU};
                og_cpu_act(&sg, OG_FLOAT, fa, n);
                og_cpu_act(&sl, OG_FLOAT, fa + n, n);
                int64_t bad_sg = 0, bad_sl = 0, first = -1;
                for (int64_t i = 0; i < n; i++) {
                    const float silu = xs[i] * ys[i];
                    const bool ok_sg = isnan(ys[i]) ? isnan(fa[i]) : !memcmp(&fa[i], &ys[i], 4);
                    const bool ok_sl =
                        isnan(silu) ? isnan(fa[n + i]) : !memcmp(&fa[n + i], &silu, 4);
                    bad_sg += !ok_sg;
                    bad_sl += !ok_sl;
                    if ((!ok_sg || !ok_sl) && first < 0) first = i;
                }
                CHECKF(bad_sg == 0 && bad_sl == 0,
                       "fused Sigmoid / SiLU: %lld / %lld values differ from the op's (first at "
                       "x = %.9g)",
                       (long long)bad_sg, (long long)bad_sl, first >= 0 ? (double)xs[first] : 0.0);
                free(fa);
            }
        }
        og_tensor_free(y);
    }
    /* HardSwish the same way: the fused activation gives the op's bits */
    og_tensor *hy = NULL;
    float *ha = malloc((size_t)n * sizeof *ha);
    CHECK(run_op("HardSwish", 14, NULL, 0, ins, 1, 1, &hy) == OG_OK && hy && ha);
    if (hy && ha) {
        const float *hs = hy->data;
        memcpy(ha, xs, (size_t)n * sizeof *ha);
        og_act hw = {.kind = OG_FUSE_HARDSWISH};
        og_cpu_act(&hw, OG_FLOAT, ha, n);
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++)
            bad += isnan(hs[i]) ? !isnan(ha[i]) : memcmp(&ha[i], &hs[i], 4) != 0;
        CHECKF(bad == 0, "fused HardSwish: %lld values differ from the op's", (long long)bad);
    }
    og_tensor_free(hy);
    free(ha);
    og_tensor_free(x);
    free(xs);
}

#ifdef OG_CPU_X86
/* vact.h's og_v_clamp (the clamp of the fused Relu and Clip in the AVX-512 conv loops)
 * against unary.c's E_CLIP, bit for bit, on every lane: NaN, signed zeros, infinities and
 * a sweep of 2^20 floats, for bounds with lo <= hi (equal, signed zeros, infinite) and NaN
 * ones. */
static OG_TARGET_AVX512 int64_t clamp_mismatches(const float *xs, int64_t n, float lo, float hi)
{
    int64_t bad = 0;
    for (int64_t i = 0; i + 16 <= n; i += 16) {
        float v[16];
        _mm512_storeu_ps(
            v, og_v_clamp(_mm512_loadu_ps(xs + i), _mm512_set1_ps(lo), _mm512_set1_ps(hi)));
        for (int l = 0; l < 16; l++) {
            const float x = xs[i + l], want = x < lo ? lo : x > hi ? hi : x;
            bad += memcmp(&want, &v[l], sizeof want) != 0;
        }
    }
    return bad;
}

static void test_vclamp(void)
{
    if (og_cpu_isa() < 2) {
        printf("og_v_clamp: no AVX-512 here, skipped\n");
        return;
    }
    const float edges[] = {NAN,  -NAN,  0.0f,    -0.0f,   INFINITY,   -INFINITY,
                           6.0f, -1.5f, 1e-45f,  -1e-45f, 6.0000005f, 5.9999995f,
                           1.0f, -1.0f, 3.4e38f, -3.4e38f};
    const int64_t n_sweep = (int64_t)1 << 20, n = n_sweep + 16;
    float *xs = malloc((size_t)n * sizeof *xs);
    CHECK(xs != NULL);
    if (!xs) return;
    for (int64_t i = 0; i < n_sweep; i++) xs[i] = bits_f((uint32_t)i << 12 | 0x3c3);
    memcpy(xs + n_sweep, edges, sizeof edges);
    const float bounds[][2] = {{0.0f, 6.0f},  {0.0f, INFINITY}, {-1.5f, -1.5f},
                               {-0.0f, 0.0f}, {0.0f, -0.0f},    {-INFINITY, 1.0f},
                               {NAN, 1.0f},   {-2.0f, NAN},     {0.0f, 0.0f}};
    for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
        const int64_t bad = clamp_mismatches(xs, n, bounds[b][0], bounds[b][1]);
        CHECKF(bad == 0, "og_v_clamp [%g, %g]: %lld lanes differ from E_CLIP", (double)bounds[b][0],
               (double)bounds[b][1], (long long)bad);
    }
    free(xs);
}
#else
static void test_vclamp(void) {}
#endif

int main(void)
{
    test_exp_ulp();
    test_vclamp();
    test_refs(257, 1);
    test_refs(100003, 4); /* several chunks, threaded */
    test_sigmoid_extremes();
    test_wide();
    test_clip();
    test_ints();
    test_bool_out();
    test_bad_attrs();
    test_half_everyday();
    NH_DONE();
}
