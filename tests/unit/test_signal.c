/* test_signal.c: DFT, STFT, the windows and MelWeightMatrix on one-node graphs, against sums
 * written out here (the definition, in double), for lengths that take the FFT (powers of two)
 * and the direct sum, float16 and float64, and the errors of bad axes, lengths and onesided
 * complex input. */
#include "unit/node_harness.h"

#define PI 3.14159265358979323846

/* The DFT of n complex values (re, im interleaved) over length L (zero-padded or cut), bins
 * of it, forward or inverse (1/L), into out (bins pairs). */
static void dft_ref(const double *x, int n, int L, int bins, bool inverse, double *out)
{
    for (int k = 0; k < bins; k++) {
        double re = 0, im = 0;
        for (int j = 0; j < n && j < L; j++) {
            double a = (inverse ? 2 : -2) * PI * (double)k * j / L;
            re += x[2 * j] * cos(a) - x[2 * j + 1] * sin(a);
            im += x[2 * j] * sin(a) + x[2 * j + 1] * cos(a);
        }
        out[2 * k] = inverse ? re / L : re;
        out[2 * k + 1] = inverse ? im / L : im;
    }
}

static void test_dft(void)
{
    /* one real signal of 6 (direct sum) and one of 8 (FFT), with every option */
    for (int n = 6; n <= 8; n += 2) {
        double xr[8], xc[16];
        for (int j = 0; j < n; j++) {
            xr[j] = sin(1.3 * j) + 0.25 * j;
            xc[2 * j] = xr[j];
            xc[2 * j + 1] = 0;
        }
        og_tensor *x = nh_tensor(OG_FLOAT, 3, (int64_t[]){1, n, 1}, xr);
        struct {
            int len; /* 0: none */
            bool onesided, inverse;
        } v[] = {{0, false, false},  {0, true, false}, {0, false, true},
                 {11, false, false}, {4, true, false}, {16, true, true}};
        for (int i = 0; i < 6; i++) {
            og_tensor *len = v[i].len ? nh_scalar(OG_INT64, v[i].len) : NULL;
            int L = v[i].len ? v[i].len : n, bins = v[i].onesided ? L / 2 + 1 : L;
            for (int opset = 17; opset <= 20; opset += 3) {
                nh_node node = {
                    .op = "DFT",
                    .opset = opset,
                    .attrs = {NH_INT("onesided", v[i].onesided), NH_INT("inverse", v[i].inverse)},
                    .in = {x, len}};
                nh_result r;
                CHECK_OK(nh_run(&node, &r));
                double want[64];
                dft_ref(xc, n, L, bins, v[i].inverse, want);
                CHECKF(r.out[0] && r.out[0]->dims[1] == bins && r.out[0]->dims[2] == 2 &&
                           nh_close("dft", r.out[0], 2 * bins, want, 1e-5, 1e-5),
                       "DFT n %d, case %d, opset %d", n, i, opset);
                nh_release(&r);
            }
            og_tensor_free(len);
        }
        og_tensor_free(x);
    }
    /* a complex signal along axis 2 (opset 20's axis input) in float64 and float16 */
    double v[2 * 3 * 5 * 2];
    for (int i = 0; i < 60; i++) v[i] = cos(0.7 * i) - 0.1 * (i % 7);
    for (int t = 0; t < 2; t++) {
        og_dtype dt = t ? OG_FLOAT16 : OG_DOUBLE;
        og_tensor *x = nh_tensor(dt, 4, (int64_t[]){2, 3, 5, 2}, v), *ax = nh_scalar(OG_INT64, -2);
        nh_node node = {.op = "DFT", .opset = 20, .in = {x, NULL, ax}};
        nh_result r;
        CHECK_OK(nh_run(&node, &r));
        double want[60];
        for (int row = 0; row < 6; row++) dft_ref(v + 10 * row, 5, 5, 5, false, want + 10 * row);
        CHECK(r.out[0] && r.out[0]->dtype == dt &&
              nh_close("dft complex", r.out[0], 60, want, t ? 0.05 : 1e-12, t ? 0.01 : 1e-12));
        nh_release(&r);
        /* onesided of a complex signal is refused, as the spec says */
        nh_node os = {.op = "DFT", .opset = 20, .attrs = {NH_INT("onesided", 1)}, .in = {x}};
        nh_expect_fail(&os, NH_LOAD, OG_ERR_MODEL, "real input");
        og_tensor_free(x);
        og_tensor_free(ax);
    }
    /* errors: the last axis, a zero length, an axis input before 20, a bad last dim */
    og_tensor *x = nh_tensor(OG_FLOAT, 3, (int64_t[]){2, 4, 1}, NULL), *ax = nh_scalar(OG_INT64, 2),
              *zero = nh_scalar(OG_INT64, 0), *x3 = nh_tensor(OG_FLOAT, 2, (int64_t[]){4, 3}, NULL);
    nh_node e1 = {.op = "DFT", .opset = 20, .in = {x, NULL, ax}};
    nh_expect_fail(&e1, NH_RUN, OG_ERR_SHAPE, "axis");
    nh_node e2 = {.op = "DFT", .opset = 17, .in = {x, zero}};
    nh_expect_fail(&e2, NH_RUN, OG_ERR_SHAPE, "dft_length must be positive");
    nh_node e3 = {.op = "DFT", .opset = 17, .in = {x, NULL, ax}};
    nh_expect_fail(&e3, NH_LOAD, OG_ERR_MODEL, "from opset 20");
    nh_node e4 = {.op = "DFT", .opset = 17, .in = {x3}};
    nh_expect_fail(&e4, NH_LOAD, OG_ERR_SHAPE, "1 (real) or 2 (complex)");
    nh_free_tensors((og_tensor *[]){x, ax, zero, x3}, 4);
}

static void test_stft(void)
{
    double s[20], w[6];
    for (int i = 0; i < 20; i++) s[i] = sin(0.45 * i) + 0.05 * i;
    for (int i = 0; i < 6; i++) w[i] = 0.5 + 0.1 * i;
    og_tensor *x = nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 20, 1}, s),
              *win = nh_tensor(OG_FLOAT, 1, (int64_t[]){6}, w), *step = nh_scalar(OG_INT64, 4),
              *fl = nh_scalar(OG_INT32, 8);
    /* window 6, frame 6: frames at 0, 4, 8, 12 (a 5th would pass the end), 4 bins */
    nh_node n1 = {.op = "STFT", .opset = 17, .in = {x, step, win}};
    nh_result r;
    CHECK_OK(nh_run(&n1, &r));
    double want[4 * 4 * 2];
    for (int f = 0; f < 4; f++) {
        double fr[12];
        for (int j = 0; j < 6; j++) {
            fr[2 * j] = w[j] * s[4 * f + j];
            fr[2 * j + 1] = 0;
        }
        dft_ref(fr, 6, 6, 4, false, want + 8 * f);
    }
    CHECK(r.out[0] && r.out[0]->dims[1] == 4 && r.out[0]->dims[2] == 4 &&
          nh_close("stft", r.out[0], 32, want, 1e-5, 1e-5));
    nh_release(&r);
    /* frame_length 8 with a window of 6: 6 weighted samples padded to 8, onesided off */
    nh_node n2 = {
        .op = "STFT", .opset = 17, .attrs = {NH_INT("onesided", 0)}, .in = {x, step, win, fl}};
    CHECK_OK(nh_run(&n2, &r));
    double want2[4 * 8 * 2];
    for (int f = 0; f < 4; f++) {
        double fr[12];
        for (int j = 0; j < 6; j++) {
            fr[2 * j] = w[j] * s[4 * f + j];
            fr[2 * j + 1] = 0;
        }
        dft_ref(fr, 6, 8, 8, false, want2 + 16 * f);
    }
    CHECK(r.out[0] && r.out[0]->dims[1] == 4 && r.out[0]->dims[2] == 8 &&
          nh_close("stft frame 8", r.out[0], 64, want2, 1e-5, 1e-5));
    nh_release(&r);
    og_tensor *bad = nh_scalar(OG_INT64, 0), *long_fl = nh_scalar(OG_INT64, 21);
    nh_node e1 = {.op = "STFT", .opset = 17, .in = {x, bad, win}};
    nh_expect_fail(&e1, NH_RUN, OG_ERR_SHAPE, "frame_step must be positive");
    nh_node e2 = {.op = "STFT", .opset = 17, .in = {x, step, NULL, long_fl}};
    nh_expect_fail(&e2, NH_RUN, OG_ERR_SHAPE, "frame length 21");
    nh_free_tensors((og_tensor *[]){x, win, step, fl, bad, long_fl}, 6);
}

static void test_windows_mel(void)
{
    const char *ops[] = {"HannWindow", "HammingWindow", "BlackmanWindow"};
    double a0[] = {0.5, 25.0 / 46.0, 0.42}, a1[] = {0.5, 21.0 / 46.0, 0.5}, a2[] = {0, 0, 0.08};
    og_tensor *n7 = nh_scalar(OG_INT64, 7);
    for (int o = 0; o < 3; o++)
        for (int periodic = 0; periodic <= 1; periodic++) {
            nh_node n = {
                .op = ops[o],
                .opset = 17,
                .attrs = {NH_INT("periodic", periodic), NH_INT("output_datatype", OG_DOUBLE)},
                .in = {n7}};
            nh_result r;
            CHECK_OK(nh_run(&n, &r));
            double want[7], N = periodic ? 7 : 6;
            for (int i = 0; i < 7; i++)
                want[i] = a0[o] - a1[o] * cos(2 * PI * i / N) + a2[o] * cos(4 * PI * i / N);
            CHECKF(r.out[0] && r.out[0]->dtype == OG_DOUBLE &&
                       nh_close(ops[o], r.out[0], 7, want, 1e-12, 1e-12),
                   "%s periodic %d", ops[o], periodic);
            nh_release(&r);
        }
    /* a symmetric window of one point is 1; negative sizes fail */
    og_tensor *one = nh_scalar(OG_INT32, 1), *neg = nh_scalar(OG_INT64, -2);
    nh_node n1 = {.op = "HannWindow", .opset = 17, .attrs = {NH_INT("periodic", 0)}, .in = {one}};
    nh_result r;
    CHECK_OK(nh_run(&n1, &r));
    CHECK(nh_close("one point", r.out[0], 1, (double[]){1}, 0, 0));
    nh_release(&r);
    n1.in[0] = neg;
    nh_expect_fail(&n1, NH_RUN, OG_ERR_SHAPE, "size must be >= 0");
    nh_node bad_dt = {.op = "HannWindow",
                      .opset = 17,
                      .attrs = {NH_INT("output_datatype", OG_STRING)},
                      .in = {n7}};
    nh_expect_fail(&bad_dt, NH_LOAD, OG_ERR_UNSUPPORTED, "output_datatype");

    /* MelWeightMatrix: triangles peaking at 1, each column's rise and fall */
    og_tensor *bins = nh_scalar(OG_INT64, 4), *len = nh_scalar(OG_INT64, 32),
              *rate = nh_scalar(OG_INT64, 8000), *lo = nh_scalar(OG_FLOAT, 0),
              *hi = nh_scalar(OG_FLOAT, 4000), *hi_bad = nh_scalar(OG_FLOAT, 9000);
    nh_node mel = {.op = "MelWeightMatrix", .opset = 17, .in = {bins, len, rate, lo, hi}};
    CHECK_OK(nh_run(&mel, &r));
    CHECK(r.out[0] && r.out[0]->dims[0] == 17 && r.out[0]->dims[1] == 4);
    for (int c = 0; r.out[0] && c < 4; c++) {
        double mx = 0;
        for (int i = 0; i < 17; i++) mx = fmax(mx, og_tensor_get_f64(r.out[0], i * 4 + c));
        CHECKF(mx == 1.0, "mel column %d peaks at %g", c, mx);
    }
    nh_release(&r);
    mel.in[4] = hi_bad;
    nh_expect_fail(&mel, NH_RUN, OG_ERR_RUNTIME, "half the sample rate");
    nh_free_tensors((og_tensor *[]){n7, one, neg, bins, len, rate, lo, hi, hi_bad}, 9);
}

int main(void)
{
    test_dft();
    test_stft();
    test_windows_mel();
    NH_DONE();
}
