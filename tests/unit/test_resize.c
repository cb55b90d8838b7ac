/* test_resize.c: Resize and Upsample on hand-built nodes: the bilinear fast path, the
 * separable path, nearest on integers, crop extrapolation, and bad scales/sizes. */
#include "unit/index_harness.h"

static const int64_t d4[] = {1, 1, 2, 2};
static const float x4[] = {1, 2, 3, 4};
/* the ONNX example: 2x2 -> 4x4, linear, half_pixel */
static const float up_linear[] = {1,    1.25f, 1.75f, 2,    1.5f, 1.75f, 2.25f, 2.5f,
                                  2.5f, 2.75f, 3.25f, 3.5f, 3,    3.25f, 3.75f, 4};

static void test_linear(void)
{
    float sc[] = {1, 1, 2, 2};
    int64_t ds[] = {4};
    og_tensor *in[3] = {h_tensor(OG_FLOAT, 4, d4, x4), NULL, h_tensor(OG_FLOAT, 1, ds, sc)};
    h_attr mode = {.name = "mode", .type = 's', .s = "linear"};
    og_tensor *y = NULL;
    H_CHECK(h_run("Resize", 13, &mode, 1, in, 3, &y) == OG_OK);
    H_CHECK(y && y->dims[2] == 4 && y->dims[3] == 4);
    H_CHECK(h_close_f32(y, up_linear, 16));
    og_tensor_free(y);

    /* the same through the separable path: resize axes 0 and 1 of a [2, 2] tensor viewed
     * with the resized axes first */
    int64_t d3[] = {2, 2, 1};
    float sc3[] = {2, 2, 1};
    int64_t ds3[] = {3};
    og_tensor *in3[3] = {h_tensor(OG_FLOAT, 3, d3, x4), NULL, h_tensor(OG_FLOAT, 1, ds3, sc3)};
    H_CHECK(h_run("Resize", 13, &mode, 1, in3, 3, &y) == OG_OK);
    H_CHECK(h_close_f32(y, up_linear, 16));
    og_tensor_free(y);
    h_free_all(in3, 3);

    /* Upsample-7 (scales attribute, asymmetric): rows 1, 1.5, 2, 2 and 3, 3.5, 4, 4 */
    static const float s7[] = {1, 1, 1, 2};
    h_attr a7[2] = {mode, {.name = "scales", .type = 'F', .n = 4, .floats = s7}};
    H_CHECK(h_run("Upsample", 7, a7, 2, in, 1, &y) == OG_OK);
    float expect7[] = {1, 1.5f, 2, 2, 3, 3.5f, 4, 4};
    H_CHECK(h_close_f32(y, expect7, 8));
    og_tensor_free(y);
    h_free_all(in, 3);
}

static void test_nearest_int_and_crop(void)
{
    int32_t xi[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    int64_t d3[] = {1, 3, 3};
    int64_t sizes[] = {2, 5};
    int64_t ds[] = {2};
    int64_t axes[] = {1, 2};
    float roi[] = {0, 0.5f, 1, 1.5f}; /* axis 2 runs past the input: extrapolation */
    int64_t dr[] = {4};
    og_tensor *in[4] = {h_tensor(OG_INT32, 3, d3, xi), h_tensor(OG_FLOAT, 1, dr, roi), NULL,
                        h_tensor(OG_INT64, 1, ds, sizes)};
    h_attr attrs[4] = {
        {.name = "mode", .type = 's', .s = "nearest"},
        {.name = "axes", .type = 'I', .n = 2, .ints = axes},
        {.name = "coordinate_transformation_mode", .type = 's', .s = "tf_crop_and_resize"},
        {.name = "extrapolation_value", .type = 'f', .f = -7.0f}};
    og_tensor *y = NULL;
    H_CHECK(h_run("Resize", 18, attrs, 4, in, 4, &y) == OG_OK);
    H_CHECK(y && y->dtype == OG_INT32 && y->dims[1] == 2 && y->dims[2] == 5);
    if (y) {
        /* rows 0 and 2; columns at x = 1, 1.5, 2, 2.5, 3 (the last two outside) */
        const int32_t *v = y->data;
        int32_t expect[] = {2, 2, 3, -7, -7, 8, 8, 9, -7, -7};
        for (int i = 0; i < 10; i++) H_CHECK(v[i] == expect[i]);
    }
    og_tensor_free(y);

    /* linear on int32 is refused */
    attrs[0].s = "linear";
    H_CHECK(h_run("Resize", 18, attrs, 4, in, 4, &y) != OG_OK);
    h_free_all(in, 4);
}

static void test_bad_inputs(void)
{
    float sc[] = {1, 1, 2};
    int64_t ds[] = {3};
    og_tensor *in[3] = {h_tensor(OG_FLOAT, 4, d4, x4), NULL, h_tensor(OG_FLOAT, 1, ds, sc)};
    og_tensor *y = NULL;
    H_CHECK(h_run("Resize", 13, NULL, 0, in, 3, &y) == OG_ERR_SHAPE);
    H_CHECK(strstr(og_last_error(), "scales") != NULL);
    og_tensor_free(in[2]);
    float neg[] = {1, 1, -2, 1};
    int64_t d4s[] = {4};
    in[2] = h_tensor(OG_FLOAT, 1, d4s, neg);
    H_CHECK(h_run("Resize", 13, NULL, 0, in, 3, &y) == OG_ERR_SHAPE);
    og_tensor_free(in[2]);
    in[2] = NULL;
    H_CHECK(h_run("Resize", 13, NULL, 0, in, 3, &y) == OG_ERR_MODEL);
    h_free_all(in, 3);
}

int main(void)
{
    test_linear();
    test_nearest_int_and_crop();
    test_bad_inputs();
    if (h_failures) {
        fprintf(stderr, "test_resize: %d failures\n", h_failures);
        return 1;
    }
    printf("test_resize: ok\n");
    return 0;
}
