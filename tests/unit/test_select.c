/* test_select.c: Unique (strings, NaNs, int64 beyond double's precision, slices along an axis,
 * first-occurrence order, empty input) and NonMaxSuppression (suppression by IoU, score
 * threshold, the per-class limit, both box formats, no boxes, bad thresholds and shapes). */
#include "unit/node_harness.h"

static bool ints_are(const og_tensor *t, int64_t n, const int64_t *want)
{
    if (!t || t->dtype != OG_INT64 || t->numel != n) return false;
    return memcmp(t->data, want, (size_t)n * sizeof *want) == 0;
}

static void test_unique(void)
{
    const char *w[] = {"b", "a", "b", "", "a"};
    og_tensor *s = NULL;
    og_tensor_from_strings(1, (int64_t[]){5}, w, NULL, &s);
    nh_node n = {.op = "Unique", .opset = 11, .n_out = 4, .in = {s}};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    CHECK(r.out[0] && r.out[0]->numel == 3 && strcmp(og_tensor_string(r.out[0], 0), "") == 0 &&
          strcmp(og_tensor_string(r.out[0], 2), "b") == 0);
    CHECK(ints_are(r.out[1], 3, (int64_t[]){3, 1, 0}) &&
          ints_are(r.out[2], 5, (int64_t[]){2, 1, 2, 0, 1}) &&
          ints_are(r.out[3], 3, (int64_t[]){1, 2, 2}));
    nh_release(&r);
    n.attrs[0] = (nh_attr)NH_INT("sorted", 0);
    CHECK_OK(nh_run(&n, &r));
    CHECK(r.out[0] && strcmp(og_tensor_string(r.out[0], 0), "b") == 0 &&
          ints_are(r.out[1], 3, (int64_t[]){0, 1, 3}) &&
          ints_are(r.out[2], 5, (int64_t[]){0, 1, 0, 2, 1}));
    nh_release(&r);

    /* NaNs are one value, after the numbers; int64 compared exactly */
    og_tensor *f =
        nh_tensor(OG_FLOAT, 1, (int64_t[]){6}, (double[]){NAN, 1, -0.5, NAN, 1, -INFINITY});
    nh_node nf = {.op = "Unique", .opset = 11, .n_out = 4, .in = {f}};
    CHECK_OK(nh_run(&nf, &r));
    CHECK(nh_close("nan", r.out[0], 4, (double[]){-INFINITY, -0.5, 1, NAN}, 0, 0) &&
          ints_are(r.out[3], 4, (int64_t[]){1, 1, 2, 2}));
    nh_release(&r);
    int64_t big[] = {(int64_t)1 << 60, ((int64_t)1 << 60) + 1, (int64_t)1 << 60};
    og_tensor *bg = nh_tensor_raw(OG_INT64, 1, (int64_t[]){3}, big);
    nh_node nb = {.op = "Unique", .opset = 11, .in = {bg}};
    CHECK_OK(nh_run(&nb, &r));
    CHECK(r.out[0] && r.out[0]->numel == 2);
    nh_release(&r);

    /* slices along axis 1 of [2, 4]: columns (1,5) (0,2) (1,5) (0,1) */
    og_tensor *x = nh_tensor(OG_INT32, 2, (int64_t[]){2, 4}, (double[]){1, 0, 1, 0, 5, 2, 5, 1});
    nh_node na = {
        .op = "Unique", .opset = 11, .n_out = 4, .attrs = {NH_INT("axis", -1)}, .in = {x}};
    CHECK_OK(nh_run(&na, &r));
    CHECK(r.out[0] && r.out[0]->rank == 2 && r.out[0]->dims[1] == 3 &&
          nh_close("cols", r.out[0], 6, (double[]){0, 0, 1, 1, 2, 5}, 0, 0) &&
          ints_are(r.out[2], 4, (int64_t[]){2, 1, 2, 0}));
    nh_release(&r);
    na.attrs[0] = (nh_attr)NH_INT("axis", 2);
    nh_expect_fail(&na, NH_LOAD, OG_ERR_MODEL, "axis");
    og_tensor *e = nh_tensor(OG_FLOAT, 1, (int64_t[]){0}, NULL);
    nh_node ne = {.op = "Unique", .opset = 11, .n_out = 4, .in = {e}};
    CHECK_OK(nh_run(&ne, &r));
    CHECK(r.out[0] && r.out[0]->numel == 0 && r.out[2]->numel == 0);
    nh_release(&r);
    nh_free_tensors((og_tensor *[]){s, f, bg, x, e}, 5);
}

static void test_nms(void)
{
    /* boxes: 0 and 1 overlap (IoU 0.68), 2 far, 3 degenerate (zero area) on top of 0 */
    float bd[] = {0, 0, 1, 1, 0.1f, 0.1f, 1.1f, 1.1f, 5, 5, 6, 6, 0, 0, 0, 1};
    og_tensor *b = nh_tensor_raw(OG_FLOAT, 3, (int64_t[]){1, 4, 4}, bd),
              *s = nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 2, 4},
                             (double[]){0.9, 0.8, 0.7, 0.95, 0.1, 0.6, 0.6, 0.2}),
              *m = nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){10}),
              *iou = nh_tensor(OG_FLOAT, 1, (int64_t[]){1}, (double[]){0.5}),
              *st = nh_tensor(OG_FLOAT, 1, (int64_t[]){1}, (double[]){0.5}),
              *m1 = nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){1}),
              *bad = nh_tensor(OG_FLOAT, 1, (int64_t[]){1}, (double[]){1.5});
    nh_node n = {.op = "NonMaxSuppression", .opset = 11, .in = {b, s, m, iou}};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    /* class 0: 3 (0.95, degenerate: suppresses nothing), 0, 1 suppressed by 0, 2; class 1: 1
     * and 2 (tied 0.6: lower index first), 3, 0 suppressed by 1 */
    int64_t want[] = {0, 0, 3, 0, 0, 0, 0, 0, 2, 0, 1, 1, 0, 1, 2, 0, 1, 3};
    CHECK(r.out[0] && r.out[0]->dims[0] == 6 && ints_are(r.out[0], 18, want));
    nh_release(&r);
    n.in[4] = st; /* score threshold 0.5, one box per class */
    n.in[2] = m1;
    CHECK_OK(nh_run(&n, &r));
    CHECK(ints_are(r.out[0], 6, (int64_t[]){0, 0, 3, 0, 1, 1}));
    nh_release(&r);
    nh_node none = {.op = "NonMaxSuppression", .opset = 10, .in = {b, s}};
    CHECK_OK(nh_run(&none, &r)); /* max_output_boxes_per_class defaults to 0 */
    CHECK(r.out[0] && r.out[0]->rank == 2 && r.out[0]->dims[0] == 0 && r.out[0]->dims[1] == 3);
    nh_release(&r);
    nh_node bi = {.op = "NonMaxSuppression", .opset = 11, .in = {b, s, m, bad}};
    nh_expect_fail(&bi, NH_RUN, OG_ERR_RUNTIME, "iou_threshold");
    nh_node cp = {.op = "NonMaxSuppression",
                  .opset = 11,
                  .attrs = {NH_INT("center_point_box", 2)},
                  .in = {b, s}};
    nh_expect_fail(&cp, NH_LOAD, OG_ERR_MODEL, "center_point_box");
    og_tensor *s3 = nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 2, 3}, NULL);
    nh_node sh = {.op = "NonMaxSuppression", .opset = 11, .in = {b, s3}};
    nh_expect_fail(&sh, NH_LOAD, OG_ERR_SHAPE, "disagree");
    nh_free_tensors((og_tensor *[]){b, s, m, iou, st, m1, bad, s3}, 8);
}

int main(void)
{
    test_unique();
    test_nms();
    NH_DONE();
}
