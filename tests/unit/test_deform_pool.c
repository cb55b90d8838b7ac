/* test_deform_pool.c: DeformConv (zero offsets and a mask of ones give Conv; a whole-pixel
 * offset shifts the taps; half-pixel offsets interpolate; zeros outside; offset groups; 1-D
 * and 3-D), GlobalLpPool (p 1, 2, 3 against sums written out) and MaxRoiPool (bins of a
 * region, an empty bin, a bad batch index). */
#include "unit/node_harness.h"

static void test_deform(void)
{
    double xv[16], wv[8];
    for (int i = 0; i < 16; i++) xv[i] = i * 0.5 - 3;
    for (int i = 0; i < 8; i++) wv[i] = (i % 3) - 0.75;
    og_tensor *x = nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 1, 4, 4}, xv),
              *w = nh_tensor(OG_FLOAT, 4, (int64_t[]){2, 1, 2, 2}, wv),
              *off0 = nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 8, 3, 3}, NULL);
    nh_result r, c;
    nh_node conv = {.op = "Conv", .opset = 11, .in = {x, w}};
    nh_node dc = {.op = "DeformConv", .opset = 19, .in = {x, w, off0}};
    CHECK_OK(nh_run(&conv, &c));
    CHECK_OK(nh_run(&dc, &r));
    double cw[18];
    for (int i = 0; c.out[0] && i < 18; i++) cw[i] = og_tensor_get_f64(c.out[0], i);
    CHECK(nh_close("zero offsets", r.out[0], 18, cw, 1e-6, 1e-6));
    nh_release(&r);

    /* offsets of +1 row for every tap: output (i, j) reads rows i + 1, i + 2 (zeros past the
     * end); +0.5 column: the mean of neighbours */
    double ov[72], hv[72];
    for (int i = 0; i < 72; i++) {
        int d = (i / 9) % 2; /* channel = tap * 2 + d; d 0: rows, 1: columns */
        ov[i] = d == 0 ? 1.0 : 0.0;
        hv[i] = d == 1 ? 0.5 : 0.0;
    }
    og_tensor *off1 = nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 8, 3, 3}, ov),
              *offh = nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 8, 3, 3}, hv);
    dc.in[2] = off1;
    CHECK_OK(nh_run(&dc, &r));
    double want[18], wh[18];
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double a = 0, h = 0;
                for (int ky = 0; ky < 2; ky++)
                    for (int kx = 0; kx < 2; kx++) {
                        int y = i + ky + 1, xx = j + kx;
                        a += (y < 4 ? xv[y * 4 + xx] : 0) * wv[m * 4 + ky * 2 + kx];
                        int y2 = i + ky;
                        double v0 = xv[y2 * 4 + j + kx],
                               v1 = j + kx + 1 < 4 ? xv[y2 * 4 + j + kx + 1] : 0;
                        h += 0.5 * (v0 + v1) * wv[m * 4 + ky * 2 + kx];
                    }
                want[m * 9 + i * 3 + j] = a;
                wh[m * 9 + i * 3 + j] = h;
            }
    CHECK(nh_close("shifted taps", r.out[0], 18, want, 1e-5, 1e-5));
    nh_release(&r);
    dc.in[2] = offh;
    CHECK_OK(nh_run(&dc, &r));
    CHECK(nh_close("half-pixel taps", r.out[0], 18, wh, 1e-5, 1e-5));
    nh_release(&r);
    /* a mask of 0.5 and a bias */
    double mv[36];
    for (int i = 0; i < 36; i++) mv[i] = 0.5;
    og_tensor *mask = nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 4, 3, 3}, mv),
              *b = nh_tensor(OG_FLOAT, 1, (int64_t[]){2}, (double[]){1, -2});
    nh_node dm = {.op = "DeformConv", .opset = 19, .in = {x, w, off0, b, mask}};
    CHECK_OK(nh_run(&dm, &r));
    for (int i = 0; i < 18; i++) cw[i] = 0.5 * cw[i] + (i < 9 ? 1 : -2);
    CHECK(nh_close("mask and bias", r.out[0], 18, cw, 1e-5, 1e-5));
    nh_release(&r);
    nh_release(&c);
    /* offsets of the wrong size; offset_group that does not divide C */
    og_tensor *offbad = nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 6, 3, 3}, NULL);
    nh_node e1 = {.op = "DeformConv", .opset = 19, .in = {x, w, offbad}};
    nh_expect_fail(&e1, NH_LOAD, OG_ERR_SHAPE, "offset");
    nh_node e2 = {
        .op = "DeformConv", .opset = 19, .attrs = {NH_INT("offset_group", 2)}, .in = {x, w, off0}};
    nh_expect_fail(&e2, NH_LOAD, OG_ERR_SHAPE, "offset_group");
    /* 1-D: x [1, 2, 5], two offset groups, group 2 */
    og_tensor *x1 = nh_tensor(OG_DOUBLE, 3, (int64_t[]){1, 2, 5},
                              (double[]){1, 2, 3, 4, 5, 10, 20, 30, 40, 50}),
              *w1 = nh_tensor(OG_DOUBLE, 3, (int64_t[]){2, 1, 2}, (double[]){1, 1, 1, -1}),
              *o1 = nh_tensor(OG_DOUBLE, 3, (int64_t[]){1, 4, 4},
                              (double[]){0, 0, 0, 0, 0, 0, 0, 0, 0.5, 0.5, 0.5, 0.5, 0, 0, 0, 0});
    nh_node d1 = {.op = "DeformConv",
                  .opset = 19,
                  .attrs = {NH_INT("group", 2), NH_INT("offset_group", 2)},
                  .in = {x1, w1, o1}};
    CHECK_OK(nh_run(&d1, &r));
    /* channel 0: x[j] + x[j + 1]; channel 1: tap 0 at j + 0.5 (interpolated), tap 1 at j + 1 */
    CHECK(nh_close("1-D", r.out[0], 8, (double[]){3, 5, 7, 9, 15 - 20, 25 - 30, 35 - 40, 45 - 50},
                   1e-12, 1e-12));
    nh_release(&r);
    nh_free_tensors((og_tensor *[]){x, w, off0, off1, offh, mask, b, offbad, x1, w1, o1}, 11);
}

static void test_pools(void)
{
    double xv[2 * 3 * 2 * 2];
    for (int i = 0; i < 24; i++) xv[i] = (i % 5) - 2.5 + 0.1 * i;
    og_tensor *x = nh_tensor(OG_FLOAT, 4, (int64_t[]){2, 3, 2, 2}, xv);
    nh_result r;
    for (int p = 1; p <= 3; p++) {
        nh_node n = {.op = "GlobalLpPool", .opset = 2, .attrs = {NH_INT("p", p)}, .in = {x}};
        CHECK_OK(nh_run(&n, &r));
        double want[6];
        for (int c = 0; c < 6; c++) {
            double s = 0;
            for (int k = 0; k < 4; k++) s += pow(fabs(xv[c * 4 + k]), p);
            want[c] = pow(s, 1.0 / p);
        }
        CHECKF(r.out[0] && r.out[0]->rank == 4 && r.out[0]->dims[3] == 1 &&
                   nh_close("lp", r.out[0], 6, want, 1e-5, 1e-5),
               "p %d", p);
        nh_release(&r);
    }
    nh_node p0 = {.op = "GlobalLpPool", .opset = 2, .attrs = {NH_INT("p", 0)}, .in = {x}};
    nh_expect_fail(&p0, NH_LOAD, OG_ERR_MODEL, "'p'");

    /* MaxRoiPool on a 4x4 ramp: the region (x 1..3, y 0..1) in 2x2 bins */
    double img[16];
    for (int i = 0; i < 16; i++) img[i] = i;
    og_tensor *im = nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 1, 4, 4}, img),
              *rois = nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 5},
                                (double[]){0, 1, 0, 3, 1, 0, 9, 9, 9, 9}),
              *bad = nh_tensor(OG_FLOAT, 2, (int64_t[]){1, 5}, (double[]){1, 0, 0, 1, 1});
    nh_node m = {
        .op = "MaxRoiPool", .opset = 1, .attrs = {NH_INTS("pooled_shape", 2, 2)}, .in = {im, rois}};
    CHECK_OK(nh_run(&m, &r));
    /* region rows 0..1, cols 1..3 (3 wide): bins cols [1, 3) and [2, 4), rows 0 and 1; the
     * second region lies outside: empty bins give 0 */
    CHECK(nh_close("roi", r.out[0], 8, (double[]){2, 3, 6, 7, 0, 0, 0, 0}, 0, 0));
    nh_release(&r);
    m.in[1] = bad;
    nh_expect_fail(&m, NH_RUN, OG_ERR_RUNTIME, "batch index");
    nh_node noshape = {.op = "MaxRoiPool", .opset = 1, .in = {im, rois}};
    nh_expect_fail(&noshape, NH_LOAD, OG_ERR_MODEL, "pooled_shape");
    nh_free_tensors((og_tensor *[]){x, im, rois, bad}, 4);
}

int main(void)
{
    test_deform();
    test_pools();
    NH_DONE();
}
