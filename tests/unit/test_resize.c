/* test_resize.c: Resize and Upsample on one-node graphs: the bilinear fast path, the
 * separable path, nearest on integers, crop extrapolation, and bad scales/sizes; linear and
 * cubic on integers and bool, and GridSample on them (the values of the ONNX reference
 * evaluator, onnxruntime's too where it runs the case). */
#include "unit/node_harness.h"

static const int64_t d4[] = {1, 1, 2, 2};
static const double x4[] = {1, 2, 3, 4};
/* the ONNX example: 2x2 -> 4x4, linear, half_pixel */
static const double up_linear[] = {1,   1.25, 1.75, 2,   1.5, 1.75, 2.25, 2.5,
                                   2.5, 2.75, 3.25, 3.5, 3,   3.25, 3.75, 4};

/* y float32 of n elements, |y - want| <= 1e-5 + 1e-4 |want|. */
static bool close_f32(const og_tensor *y, const double *want, int64_t n)
{
    return y && y->dtype == OG_FLOAT && nh_close("values", y, n, want, 1e-5, 1e-4);
}

static void test_linear(void)
{
    int64_t ds[] = {4};
    og_tensor *in[3] = {nh_tensor(OG_FLOAT, 4, d4, x4), NULL,
                        nh_tensor(OG_FLOAT, 1, ds, (double[]){1, 1, 2, 2})};
    nh_node n = {.op = "Resize",
                 .opset = 13,
                 .attrs = {NH_STRING("mode", "linear")},
                 .in = {in[0], NULL, in[2]},
                 .threads = 2};
    nh_result r;
    CHECK(nh_run(&n, &r) == OG_OK);
    CHECK(r.out[0] && r.out[0]->dims[2] == 4 && r.out[0]->dims[3] == 4);
    CHECK(close_f32(r.out[0], up_linear, 16));
    nh_release(&r);

    /* the same through the separable path: resize axes 0 and 1 of a [2, 2] tensor viewed
     * with the resized axes first */
    int64_t d3[] = {2, 2, 1}, ds3[] = {3};
    og_tensor *in3[3] = {nh_tensor(OG_FLOAT, 3, d3, x4), NULL,
                         nh_tensor(OG_FLOAT, 1, ds3, (double[]){2, 2, 1})};
    nh_node sep = n;
    sep.in[0] = in3[0];
    sep.in[2] = in3[2];
    CHECK(nh_run(&sep, &r) == OG_OK);
    CHECK(close_f32(r.out[0], up_linear, 16));
    nh_release(&r);
    nh_free_tensors(in3, 3);

    /* Upsample-7 (scales attribute, asymmetric): rows 1, 1.5, 2, 2 and 3, 3.5, 4, 4 */
    nh_node up = {.op = "Upsample",
                  .opset = 7,
                  .attrs = {NH_STRING("mode", "linear"), NH_FLOATS("scales", 1, 1, 1, 2)},
                  .in = {in[0]},
                  .threads = 2};
    CHECK(nh_run(&up, &r) == OG_OK);
    CHECK(close_f32(r.out[0], (double[]){1, 1.5, 2, 2, 3, 3.5, 4, 4}, 8));
    nh_release(&r);
    nh_free_tensors(in, 3);
}

static void test_nearest_int_and_crop(void)
{
    int32_t xi[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    int64_t d3[] = {1, 3, 3}, sizes[] = {2, 5}, ds[] = {2}, dr[] = {4};
    /* roi: axis 2 runs past the input: extrapolation */
    og_tensor *in[4] = {nh_tensor_raw(OG_INT32, 3, d3, xi),
                        nh_tensor(OG_FLOAT, 1, dr, (double[]){0, 0.5, 1, 1.5}), NULL,
                        nh_tensor_raw(OG_INT64, 1, ds, sizes)};
    nh_node n = {.op = "Resize",
                 .opset = 18,
                 .attrs = {NH_STRING("mode", "nearest"), NH_INTS("axes", 1, 2),
                           NH_STRING("coordinate_transformation_mode", "tf_crop_and_resize"),
                           NH_FLOAT("extrapolation_value", -7.0f)},
                 .in = {in[0], in[1], NULL, in[3]},
                 .threads = 2};
    nh_result r;
    CHECK(nh_run(&n, &r) == OG_OK);
    og_tensor *y = r.out[0];
    CHECK(y && y->dtype == OG_INT32 && y->dims[1] == 2 && y->dims[2] == 5);
    if (y) {
        /* rows 0 and 2; columns at x = 1, 1.5, 2, 2.5, 3 (the last two outside) */
        const int32_t *v = y->data;
        int32_t expect[] = {2, 2, 3, -7, -7, 8, 8, 9, -7, -7};
        for (int i = 0; i < 10; i++) CHECK(v[i] == expect[i]);
    }
    nh_release(&r);

    /* linear on int32: the same rows and columns (x = 1 and 2 whole, 1.5 halfway between
     * 2 and 3, truncated) */
    n.attrs[0] = (nh_attr)NH_STRING("mode", "linear");
    CHECK_OK(nh_run(&n, &r));
    if (r.status == OG_OK)
        nh_expect("resize linear int32 crop", r.out[0], 10,
                  (double[]){2, 2, 3, -7, -7, 8, 8, 9, -7, -7}, 0);
    nh_release(&r);
    nh_free_tensors(in, 4);
}

/* Resize X (dtype t, [1, n]) with scales (1, s) in mode `mode`: want (m values) */
static void resize_int_case(const char *what, og_dtype t, const char *mode, int64_t n,
                            const double *x, double s, int64_t m, const double *want)
{
    og_tensor *in[3] = {nh_tensor(t, 2, (int64_t[]){1, n}, x), NULL,
                        nh_tensor(OG_FLOAT, 1, (int64_t[]){2}, (double[]){1, s})};
    nh_node node = {.op = "Resize",
                    .opset = 19,
                    .attrs = {NH_STRING("mode", mode)},
                    .in = {in[0], NULL, in[2]},
                    .n_in = 3};
    nh_result r;
    CHECK_OK(nh_run(&node, &r));
    if (r.status == OG_OK) {
        CHECK(r.out[0]->dtype == t && r.out[0]->dims[1] == m);
        nh_expect(what, r.out[0], m, want, 0);
    }
    nh_release(&r);
    nh_free_tensors(in, 3);
}

/* Linear and cubic on the integers and bool: computed in float64, truncated toward zero
 * (half_pixel, upsampled by 2 or 1.5) */
static void test_linear_cubic_integers(void)
{
    /* x_original -0.25, 0.25, 0.75, 1.25, 1.75, 2.25: 2.5 -> 2, 7.5 -> 7, 71.25, 193.75 */
    resize_int_case("resize linear uint8", OG_UINT8, "linear", 3, (double[]){0, 10, 255}, 2, 6,
                    (double[]){0, 2, 7, 71, 193, 255});
    /* -6.25 -> -6 (toward zero, not down), 1.25 -> 1 */
    resize_int_case("resize linear int8", OG_INT8, "linear", 2, (double[]){-10, 5}, 2, 4,
                    (double[]){-10, -6, 1, 5});
    /* the cubic's negative lobes: -8.x and -9.x truncated to -8 and -9 */
    resize_int_case("resize cubic int32", OG_INT32, "cubic", 4, (double[]){0, 100, 0, 0}, 1.5, 6,
                    (double[]){-8, 59, 94, 16, -9, 0});
    resize_int_case("resize cubic int64", OG_INT64, "cubic", 4, (double[]){0, 100, 0, 0}, 1.5, 6,
                    (double[]){-8, 59, 94, 16, -9, 0});
    /* an undershoot below 0 wraps, as numpy's cast of the reference: -8.96 -> -8 -> 248 */
    resize_int_case("resize cubic uint8", OG_UINT8, "cubic", 4, (double[]){0, 0, 255, 255}, 2, 8,
                    (double[]){0, 248, 230, 57, 197, 25, 7, 255});
    /* bool: true where the weighted sum is nonzero */
    resize_int_case("resize linear bool", OG_BOOL, "linear", 4, (double[]){1, 0, 0, 0}, 2, 8,
                    (double[]){1, 1, 1, 0, 0, 0, 0, 0});
}

static void test_bad_inputs(void)
{
    int64_t ds[] = {3}, d4s[] = {4};
    og_tensor *in[3] = {nh_tensor(OG_FLOAT, 4, d4, x4), NULL,
                        nh_tensor(OG_FLOAT, 1, ds, (double[]){1, 1, 2})};
    nh_node n = {.op = "Resize", .opset = 13, .in = {in[0], NULL, in[2]}, .threads = 2};
    nh_result r;
    CHECK(nh_run(&n, &r) == OG_ERR_SHAPE);
    CHECK(strstr(og_last_error(), "scales") != NULL);
    nh_release(&r);
    og_tensor_free(in[2]);
    n.in[2] = in[2] = nh_tensor(OG_FLOAT, 1, d4s, (double[]){1, 1, -2, 1});
    CHECK(nh_run(&n, &r) == OG_ERR_SHAPE);
    nh_release(&r);
    og_tensor_free(in[2]);
    n.in[2] = in[2] = NULL;
    n.n_in = 3; /* X, roi and scales omitted: neither scales nor sizes */
    CHECK(nh_run(&n, &r) == OG_ERR_MODEL);
    nh_release(&r);
    nh_free_tensors(in, 3);
}

/* ---- GridSample, AffineGrid (issue 12) ---- */

/* Run n and compare output 0 with want (count values); release everything. */
static void g12_case(const nh_node *n, const char *what, int64_t count, const double *want,
                     double tol, og_tensor **in, int n_in)
{
    nh_result r;
    CHECK_OK(nh_run(n, &r));
    if (r.status == OG_OK) nh_expect(what, r.out[0], count, want, tol);
    nh_release(&r);
    nh_free_tensors(in, n_in);
}

static void test_grid_sample(void)
{
    double x[4] = {1, 2, 3, 4};
    og_tensor *in[] = {
        nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 1, 2, 2}, x),
        nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 1, 3, 2}, (double[]){0, 0, -1, -1, -2, -2})};
    nh_node lin = {.op = "GridSample", .opset = 16, .in = {in[0], in[1]}};
    /* the centre (bilinear 2.5), a corner at the edge of the outer pixels (a quarter of
     * x[0,0] with zeros padding), outside (0) */
    nh_result r;
    CHECK_OK(nh_run(&lin, &r));
    nh_expect("gridsample bilinear zeros", r.out[0], 3, (double[]){2.5, 0.25, 0}, 1e-6);
    nh_release(&r);
    /* (x, y) = (1, 1), (−1, −1), and (3, −3), clamped to the top right corner */
    og_tensor *g2 =
        nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 1, 3, 2}, (double[]){1, 1, -1, -1, 3, -3});
    nh_node near = {.op = "GridSample",
                    .opset = 20,
                    .attrs = {NH_STRING("mode", "nearest"), NH_STRING("padding_mode", "border"),
                              NH_INT("align_corners", 1)},
                    .in = {in[0], g2}};
    CHECK_OK(nh_run(&near, &r));
    nh_expect("gridsample nearest border", r.out[0], 3, (double[]){4, 1, 2}, 0);
    nh_release(&r);
    og_tensor_free(g2);
    nh_node bad = {.op = "GridSample",
                   .opset = 20,
                   .attrs = {NH_STRING("mode", "bilinear")},
                   .in = {in[0], in[1]}};
    nh_expect_fail(&bad, NH_LOAD, OG_ERR_MODEL, "linear, nearest or cubic");
    nh_free_tensors(in, 2);
}

/* GridSample of X (dtype t, [1, 1, 2, 3]) at the 5 points of grid g (align_corners) */
static void grid_int_case(const char *what, og_dtype t, const char *mode, const char *pad,
                          const double *x, int64_t np, const double *g, const double *want)
{
    og_tensor *in[] = {nh_tensor(t, 4, (int64_t[]){1, 1, 2, 3}, x),
                       nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 1, np, 2}, g)};
    nh_node n = {.op = "GridSample",
                 .opset = 20,
                 .attrs = {NH_STRING("mode", mode), NH_STRING("padding_mode", pad),
                           NH_INT("align_corners", 1)},
                 .in = {in[0], in[1]}};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    if (r.status == OG_OK) {
        CHECK(r.out[0]->dtype == t);
        nh_expect(what, r.out[0], np, want, 0);
    }
    nh_release(&r);
    nh_free_tensors(in, 2);
}

/* GridSample on the integers and bool, as the reference evaluator: its weights are held in
 * X's type (truncated), so linear and cubic give the pixel at whole coordinates, 0 between;
 * bool ors the taps of nonzero weight */
static void test_grid_sample_integers(void)
{
    /* (x, y) = (0, 0), (1, 1), (2, 1), (0.5, 0.5), (1.5, 0) */
    const double g[10] = {-1, -1, 0, 1, 1, 1, -0.5, 0, 0.5, -1};
    const double x[6] = {40, 80, 120, 160, 200, 240}, xs[6] = {-20, -40, -60, -80, -100, -120};
    grid_int_case("gridsample linear int8", OG_INT8, "linear", "zeros", xs, 5, g,
                  (double[]){-20, -100, -120, 0, 0});
    grid_int_case("gridsample linear uint8", OG_UINT8, "linear", "zeros", x, 5, g,
                  (double[]){40, 200, 240, 0, 0});
    grid_int_case("gridsample linear int32", OG_INT32, "linear", "zeros", x, 5, g,
                  (double[]){40, 200, 240, 0, 0});
    grid_int_case("gridsample cubic int64", OG_INT64, "cubic", "zeros", x, 5, g,
                  (double[]){40, 200, 240, 0, 0});
    /* nearest rounds half to even: (0.5, 0.5) -> (0, 0), (1.5, 0) -> (2, 0) */
    grid_int_case("gridsample nearest int32", OG_INT32, "nearest", "zeros", x, 5, g,
                  (double[]){40, 200, 240, 40, 120});
    /* bool: (0.5, 0.5) ors the four corners, (1.5, 0) x[0, 1] and x[0, 2] */
    grid_int_case("gridsample linear bool", OG_BOOL, "linear", "zeros",
                  (double[]){1, 0, 0, 0, 0, 1}, 5, g, (double[]){1, 0, 1, 1, 0});
    /* reflection: x = 3 reflects to 1 (y halfway: 0), x = -2 to 2 (y = 1: x[1, 2]) */
    grid_int_case("gridsample linear uint8 reflection", OG_UINT8, "linear", "reflection",
                  (double[]){1, 2, 3, 4, 5, 6}, 2, (double[]){2, 0, -3, 1}, (double[]){0, 6});
}

static void test_affine_grid(void)
{
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 2, 3}, (double[]){1, 0, 0, 0, 1, 0}),
                       nh_tensor(OG_INT64, 1, (int64_t[]){4}, (double[]){1, 1, 1, 2})};
    nh_node n = {.op = "AffineGrid",
                 .opset = 20,
                 .attrs = {NH_INT("align_corners", 1)},
                 .in = {in[0], in[1]}};
    g12_case(&n, "affinegrid identity", 4, (double[]){-1, 0, 1, 0}, 1e-6, in, 2);
    og_tensor *b[] = {nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 3, 4}, NULL),
                      nh_tensor(OG_INT64, 1, (int64_t[]){4}, (double[]){1, 1, 2, 2})};
    nh_node bad = {.op = "AffineGrid", .opset = 20, .in = {b[0], b[1]}};
    nh_expect_fail(&bad, 0, OG_ERR_SHAPE, "theta");
    nh_free_tensors(b, 2);
}

int main(void)
{
    test_linear();
    test_nearest_int_and_crop();
    test_bad_inputs();
    test_linear_cubic_integers();
    test_grid_sample();
    test_grid_sample_integers();
    test_affine_grid();
    NH_DONE();
}
