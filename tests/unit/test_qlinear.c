/* test_qlinear.c: MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv against sums
 * written out here: zero points per tensor, row, column and output channel, broadcast batch
 * dims, padding counted as the zero point, requantization rounding half to even and
 * saturating at both ends; the errors of mismatched types and shapes. */
#include "unit/node_harness.h"

static void test_matmul(void)
{
    /* A [2, 2, 3] uint8 with a per-row zero point [2, 1]... as [2, 2, 1]; B [3, 2] int8 with a
     * per-column zero point [2] */
    double av[12] = {10, 20, 30, 1, 2, 3, 200, 100, 0, 255, 255, 255};
    double bv[6] = {1, -1, 2, -2, 3, 127};
    double az[4] = {10, 2, 100, 0}, bz[2] = {1, -1};
    og_tensor *a = nh_tensor(OG_UINT8, 3, (int64_t[]){2, 2, 3}, av),
              *b = nh_tensor(OG_INT8, 2, (int64_t[]){3, 2}, bv),
              *za = nh_tensor(OG_UINT8, 3, (int64_t[]){2, 2, 1}, az),
              *zb = nh_tensor(OG_INT8, 1, (int64_t[]){2}, bz);
    nh_node n = {.op = "MatMulInteger", .opset = 10, .in = {a, b, za, zb}};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    double want[8];
    for (int t = 0; t < 4; t++)
        for (int c = 0; c < 2; c++) {
            double acc = 0;
            for (int k = 0; k < 3; k++) acc += (av[t * 3 + k] - az[t]) * (bv[k * 2 + c] - bz[c]);
            want[t * 2 + c] = acc;
        }
    CHECK(r.out[0] && r.out[0]->dtype == OG_INT32 && nh_close("mmi", r.out[0], 8, want, 0, 0));
    nh_release(&r);
    nh_node mixed = {.op = "MatMulInteger", .opset = 10, .in = {a, b, zb}};
    nh_expect_fail(&mixed, NH_LOAD, OG_ERR_TYPE, "different element types");
    og_tensor *zbad = nh_tensor(OG_INT8, 1, (int64_t[]){3}, NULL);
    nh_node shape = {.op = "MatMulInteger", .opset = 10, .in = {a, b, NULL, zbad}};
    nh_expect_fail(&shape, NH_RUN, OG_ERR_SHAPE, "zero point of B");

    /* QLinearMatMul: y = saturate(round_even(acc * sa sb / sy) + zy) */
    og_tensor *sa = nh_scalar(OG_FLOAT, 0.5), *sb = nh_scalar(OG_FLOAT, 1.0),
              *sy = nh_scalar(OG_FLOAT, 2.0), *zy = nh_scalar(OG_INT8, -100),
              *za0 = nh_scalar(OG_UINT8, 0), *zb0 = nh_scalar(OG_INT8, 0);
    og_tensor *a1 = nh_tensor(OG_UINT8, 2, (int64_t[]){1, 2}, (double[]){2, 3}),
              *b1 = nh_tensor(OG_INT8, 2, (int64_t[]){2, 4},
                              (double[]){1, 5, 127, -128, 1, 1, 127, -128});
    /* acc = [5, 13, 635, -640] * 0.25 = 1.25, 3.25, 158.75, -160 -> 1, 3, 159, -160; -100 ->
     * -99, -97, 59, -260 -> saturated -128; a tie: 0.5 and 2.5 round to even below */
    nh_node q = {.op = "QLinearMatMul", .opset = 10, .in = {a1, sa, za0, b1, sb, zb0, sy, zy}};
    CHECK_OK(nh_run(&q, &r));
    CHECK(r.out[0] && r.out[0]->dtype == OG_INT8 &&
          nh_close("q", r.out[0], 4, (double[]){-99, -97, 59, -128}, 0, 0));
    nh_release(&r);
    og_tensor *a2 = nh_tensor(OG_UINT8, 2, (int64_t[]){1, 1}, (double[]){1}),
              *b2 = nh_tensor(OG_INT8, 2, (int64_t[]){1, 2}, (double[]){2, 10}),
              *sb2 = nh_scalar(OG_FLOAT, 0.5), *zy0 = nh_scalar(OG_UINT8, 0);
    nh_node tie = {.op = "QLinearMatMul", .opset = 10, .in = {a2, sb, za0, b2, sb2, zb0, sy, zy0}};
    CHECK_OK(nh_run(&tie, &r)); /* 2 * 0.25 = 0.5 -> 0; 10 * 0.25 = 2.5 -> 2 */
    CHECK(r.out[0] && r.out[0]->dtype == OG_UINT8 &&
          nh_close("tie", r.out[0], 2, (double[]){0, 2}, 0, 0));
    nh_release(&r);
    /* float16 scales from opset 21 only */
    og_tensor *h = nh_scalar(OG_FLOAT16, 0.5);
    nh_node q21 = {.op = "QLinearMatMul", .opset = 21, .in = {a2, h, za0, b2, h, zb0, h, zy0}};
    CHECK_OK(nh_run(&q21, &r));
    CHECK(nh_close("f16 scales", r.out[0], 2, (double[]){1, 5}, 0, 0)); /* acc * 0.5 0.5 / 0.5 */
    nh_release(&r);
    q21.opset = 10;
    nh_expect_fail(&q21, NH_LOAD, OG_ERR_UNSUPPORTED, "float16");
    nh_free_tensors(
        (og_tensor *[]){a, b, za, zb, zbad, sa, sb, sy, zy, za0, zb0, a1, b1, a2, b2, sb2, zy0, h},
        18);
}

static void test_conv(void)
{
    /* x [1, 1, 3, 3] uint8, zero point 5; w [2, 1, 2, 2] int8 per-channel zero points; pads 1 */
    double xv[9] = {5, 6, 7, 8, 9, 10, 11, 12, 255}, wv[8] = {1, 2, 3, 4, -1, 0, 1, 0},
           wz[2] = {1, -1};
    og_tensor *x = nh_tensor(OG_UINT8, 4, (int64_t[]){1, 1, 3, 3}, xv),
              *w = nh_tensor(OG_INT8, 4, (int64_t[]){2, 1, 2, 2}, wv), *xz = nh_scalar(OG_UINT8, 5),
              *z = nh_tensor(OG_INT8, 1, (int64_t[]){2}, wz);
    nh_node n = {.op = "ConvInteger",
                 .opset = 10,
                 .attrs = {NH_INTS("pads", 1, 1, 1, 1)},
                 .in = {x, w, xz, z}};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    double want[2 * 16];
    for (int m = 0; m < 2; m++)
        for (int oy = 0; oy < 4; oy++)
            for (int ox = 0; ox < 4; ox++) {
                double acc = 0;
                for (int ky = 0; ky < 2; ky++)
                    for (int kx = 0; kx < 2; kx++) {
                        int iy = oy - 1 + ky, ix = ox - 1 + kx;
                        double xvv = iy < 0 || iy > 2 || ix < 0 || ix > 2 ? 0 : xv[iy * 3 + ix] - 5;
                        acc += xvv * (wv[m * 4 + ky * 2 + kx] - wz[m]);
                    }
                want[m * 16 + oy * 4 + ox] = acc;
            }
    CHECK(r.out[0] && r.out[0]->dims[2] == 4 && nh_close("convint", r.out[0], 32, want, 0, 0));
    nh_release(&r);
    /* QLinearConv of the same with scales, a bias and saturation */
    og_tensor *xs = nh_scalar(OG_FLOAT, 0.5),
              *ws = nh_tensor(OG_FLOAT, 1, (int64_t[]){2}, (double[]){1, 0.25}),
              *ys = nh_scalar(OG_FLOAT, 1), *yz = nh_scalar(OG_UINT8, 128),
              *bias = nh_tensor(OG_INT32, 1, (int64_t[]){2}, (double[]){10, -4});
    nh_node q = {.op = "QLinearConv",
                 .opset = 10,
                 .attrs = {NH_INTS("pads", 1, 1, 1, 1)},
                 .in = {x, xs, xz, w, ws, z, ys, yz, bias}};
    CHECK_OK(nh_run(&q, &r));
    double qw[32];
    for (int i = 0; i < 32; i++) {
        int m = i / 16;
        double v = nearbyint((want[i] + (m ? -4 : 10)) * 0.5 * (m ? 0.25 : 1.0)) + 128;
        qw[i] = v < 0 ? 0 : v > 255 ? 255 : v;
    }
    CHECK(r.out[0] && r.out[0]->dtype == OG_UINT8 && nh_close("qconv", r.out[0], 32, qw, 0, 0));
    nh_release(&r);
    og_tensor *bf = nh_tensor(OG_FLOAT, 1, (int64_t[]){2}, NULL);
    q.in[8] = bf;
    nh_expect_fail(&q, NH_LOAD, OG_ERR_UNSUPPORTED, "float32");
    nh_free_tensors((og_tensor *[]){x, w, xz, z, xs, ws, ys, yz, bias, bf}, 10);
}

int main(void)
{
    test_matmul();
    test_conv();
    NH_DONE();
}
