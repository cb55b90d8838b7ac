/* test_pool.c: AveragePool, MaxPool, GlobalAveragePool, GlobalMaxPool on small hand-checked
 * inputs, and the errors of bad attributes and shapes. */
#include "unit/node_harness.h"

static void test_maxpool_indices(int storage_order)
{
    double x[16];
    for (int i = 0; i < 16; i++) x[i] = i;
    og_tensor *t = nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 1, 4, 4}, x);
    nh_node n = {.op = "MaxPool",
                 .opset = 12,
                 .attrs = {NH_INTS("kernel_shape", 2, 2), NH_INTS("strides", 2, 2),
                           NH_INT("storage_order", storage_order)},
                 .in = {t},
                 .n_out = 2,
                 .threads = 2};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    double y[] = {5, 7, 13, 15}, row[] = {5, 7, 13, 15}, col[] = {5, 13, 7, 15};
    nh_expect("maxpool y", r.out[0], 4, y, 0);
    nh_expect("maxpool indices", r.out[1], 4, storage_order ? col : row, 0);
    CHECK(r.out[1] && r.out[1]->dtype == OG_INT64 && r.out[1]->rank == 4);
    nh_release(&r);
    og_tensor_free(t);
}

static void test_avgpool_pads(int include_pad)
{
    double ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    og_tensor *t = nh_tensor(OG_DOUBLE, 4, (int64_t[]){1, 1, 3, 3}, ones);
    nh_node n = {.op = "AveragePool",
                 .opset = 19,
                 .attrs = {NH_INTS("kernel_shape", 3, 3), NH_INTS("pads", 1, 1, 1, 1),
                           NH_INT("count_include_pad", include_pad)},
                 .in = {t},
                 .threads = 2};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    double inc[] = {4 / 9., 6 / 9., 4 / 9., 6 / 9., 1, 6 / 9., 4 / 9., 6 / 9., 4 / 9.};
    nh_expect("avgpool", r.out[0], 9, include_pad ? inc : ones, 1e-12);
    nh_release(&r);
    og_tensor_free(t);
}

/* 1-D, dilation 2, ceil_mode: input 0..6, kernel 2, stride 2: windows {0,2} {2,4} {4,6} */
static void test_maxpool_dilated_ceil(void)
{
    double x[] = {0, 6, 2, 5, 4, 3, 1};
    og_tensor *t = nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 1, 7}, x);
    nh_node n = {.op = "MaxPool",
                 .opset = 12,
                 .attrs = {NH_INTS("kernel_shape", 2), NH_INTS("strides", 2),
                           NH_INTS("dilations", 2), NH_INT("ceil_mode", 1)},
                 .in = {t},
                 .threads = 2};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    double y[] = {2, 4, 4};
    nh_expect("maxpool dilated ceil", r.out[0], 3, y, 0);
    nh_release(&r);
    og_tensor_free(t);
}

static void test_global(const char *op, double want0, double want1)
{
    double x[] = {1, 2, 3, 4, -1, -2, -3, -4};
    og_tensor *t = nh_tensor(OG_DOUBLE, 4, (int64_t[]){1, 2, 2, 2}, x);
    nh_node n = {.op = op, .opset = 13, .in = {t}, .threads = 2};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    double y[] = {want0, want1};
    nh_expect(op, r.out[0], 2, y, 1e-12);
    CHECK(r.out[0] && r.out[0]->rank == 4 && r.out[0]->dims[2] == 1 && r.out[0]->dims[3] == 1);
    nh_release(&r);
    og_tensor_free(t);
}

/* GlobalAveragePool of float planes of 7, 255, 256, 300 and 1001 values (8 lanes below 256,
 * 32 above, and tails) against a double reference: within float rounding of the mean. */
static void test_global_avg_planes(void)
{
    const int64_t sizes[] = {7, 255, 256, 300, 1001};
    for (int si = 0; si < 5; si++) {
        const int64_t n = sizes[si];
        float *x = malloc(sizeof(float) * (size_t)(3 * n));
        CHECK(x != NULL);
        if (!x) return;
        for (int64_t i = 0; i < 3 * n; i++) x[i] = (float)(sin(0.7 * (double)i) * 10.0 + 0.5);
        og_tensor *t = nh_tensor_raw(OG_FLOAT, 4, (int64_t[]){1, 3, 1, n}, x);
        nh_node nd = {.op = "GlobalAveragePool", .opset = 13, .in = {t}, .threads = 1};
        nh_result r;
        CHECK_OK(nh_run(&nd, &r));
        double want[3];
        for (int c = 0; c < 3; c++) {
            double acc = 0;
            for (int64_t i = 0; i < n; i++) acc += (double)x[c * n + i];
            want[c] = acc / (double)n;
        }
        nh_expect("GlobalAveragePool planes", r.out[0], 3, want, 1e-6);
        nh_release(&r);
        og_tensor_free(t);
        free(x);
    }
}

/* GlobalAveragePool of float planes of 1 to 8 values (pool.c's 8 planes at a time), 2
 * images of 21 channels (42 planes: 5 groups of 8 and a tail of 2), with a NaN and
 * an infinity in two planes: each mean is the float of its values' double sum in order
 * divided by n, bit for bit. */
static void test_global_avg_small(void)
{
    for (int64_t n = 1; n <= 8; n++) {
        const int64_t planes = 42;
        float x[42 * 8];
        for (int64_t i = 0; i < planes * n; i++)
            x[i] = (float)(sin(1.3 * (double)i + (double)n) * 7.0 - 0.25);
        x[5 * n] = NAN;               /* plane 5 */
        x[41 * n + n - 1] = INFINITY; /* plane 41 (the tail) */
        og_tensor *t = nh_tensor_raw(OG_FLOAT, 4, (int64_t[]){2, 21, 1, n}, x);
        nh_node nd = {.op = "GlobalAveragePool", .opset = 13, .in = {t}, .threads = 2};
        nh_result r;
        CHECK_OK(nh_run(&nd, &r));
        CHECK(r.out[0] && r.out[0]->numel == planes);
        for (int64_t pl = 0; r.out[0] && pl < planes; pl++) {
            double acc = 0;
            for (int64_t i = 0; i < n; i++) acc += (double)x[pl * n + i];
            const float want = (float)(acc / (double)n), got = ((const float *)r.out[0]->data)[pl];
            CHECKF(memcmp(&want, &got, sizeof want) == 0 || (isnan(want) && isnan(got)),
                   "GlobalAveragePool of %lld values, plane %lld: %g, expected %g", (long long)n,
                   (long long)pl, (double)got, (double)want);
        }
        nh_release(&r);
        og_tensor_free(t);
    }
}

/* GlobalAveragePool of float planes of 9 to 255 values (pool.c's four planes at a time on
 * AVX-512, GAP_SUM's loop elsewhere), 2 images of 7 channels (14 planes: 3 groups of 4 and
 * a tail of 2) on 1 and 2 threads, a NaN and an infinity in two planes: each mean is
 * GAP_SUM's, bit for bit: eight lanes of double sums over the whole groups of 8 values, then
 * from 0 the tail in order and the lanes in order, divided by n. */
static void test_global_avg_mid(void)
{
    const int64_t sizes[] = {9, 15, 16, 49, 196, 255};
    for (int si = 0; si < 6; si++)
        for (int threads = 1; threads <= 2; threads++) {
            const int64_t n = sizes[si], planes = 14;
            float *x = malloc(sizeof(float) * (size_t)(planes * n));
            CHECK(x != NULL);
            if (!x) return;
            for (int64_t i = 0; i < planes * n; i++)
                x[i] = (float)(sin(0.9 * (double)i + (double)n) * 5.0 + 0.125);
            x[6 * n + n / 2] = NAN;       /* plane 6 */
            x[13 * n + n - 1] = INFINITY; /* plane 13 (the tail) */
            /* sums whose order shows: lanes 0, 1, 2 of plane 3 hold 1, 2^60 and -2^60 (in
             * order 0, else 1); plane 4 has -2^60 in lane 0 and 2^60, 1 in its tail (the
             * tail first: 0, else 1) */
            const float big = 1152921504606846976.0f; /* 2^60 */
            x[3 * n] = 1.0f, x[3 * n + 1] = big, x[3 * n + 2] = -big;
            if (n % 8 >= 2) x[4 * n] = -big, x[4 * n + n - 2] = big, x[4 * n + n - 1] = 1.0f;
            og_tensor *t = nh_tensor_raw(OG_FLOAT, 4, (int64_t[]){2, 7, 1, n}, x);
            nh_node nd = {.op = "GlobalAveragePool", .opset = 13, .in = {t}, .threads = threads};
            nh_result r;
            CHECK_OK(nh_run(&nd, &r));
            CHECK(r.out[0] && r.out[0]->numel == planes);
            for (int64_t pl = 0; r.out[0] && pl < planes; pl++) {
                const float *p = x + pl * n;
                double lanes[8] = {0}, acc = 0;
                int64_t i = 0;
                for (; i + 8 <= n; i += 8)
                    for (int j = 0; j < 8; j++) lanes[j] += (double)p[i + j];
                for (; i < n; i++) acc += (double)p[i];
                for (int j = 0; j < 8; j++) acc += lanes[j];
                const float want = (float)(acc / (double)n),
                            got = ((const float *)r.out[0]->data)[pl];
                CHECKF(memcmp(&want, &got, sizeof want) == 0 || (isnan(want) && isnan(got)),
                       "GlobalAveragePool of %lld values on %d threads, plane %lld: %.9g, "
                       "expected %.9g",
                       (long long)n, threads, (long long)pl, (double)got, (double)want);
            }
            nh_release(&r);
            og_tensor_free(t);
            free(x);
        }
}

/* Naive reference of one 2-D pool output (plane-local input xp), the kernel's semantics:
 * max or mean over the taps inside the input; the mean divides by the kernel size when
 * count_include_pad is set.  Returns the flat index of the maximum in *at. */
static double ref_pool(const double *xp, const int64_t *in, const int64_t *k, const int64_t *s,
                       const int64_t *d, const int64_t *pb, int64_t oh, int64_t ow, bool avg,
                       bool include_pad, int64_t *at)
{
    double acc = 0;
    int64_t cnt = 0;
    *at = -1;
    for (int64_t a = 0; a < k[0]; a++)
        for (int64_t b = 0; b < k[1]; b++) {
            int64_t ih = oh * s[0] - pb[0] + a * d[0], iw = ow * s[1] - pb[1] + b * d[1];
            if (ih < 0 || ih >= in[0] || iw < 0 || iw >= in[1]) continue;
            double v = xp[ih * in[1] + iw];
            if (avg)
                acc += v;
            else if (*at < 0 || v > acc) {
                acc = v;
                *at = ih * in[1] + iw;
            }
            cnt++;
        }
    if (avg) return cnt ? acc / (double)(include_pad ? k[0] * k[1] : cnt) : 0;
    return acc;
}

/* Random 2-D pools (the 2x2 and 3x3 stride-2 fast paths among them) against ref_pool. */
static void test_random(void)
{
    unsigned seed = 12345;
    int ran = 0, refused = 0;
    for (int iter = 0; iter < 300; iter++) {
        int64_t v[16];
        for (int i = 0; i < 16; i++) {
            seed = seed * 1103515245u + 12345u;
            v[i] = (int64_t)((seed >> 16) & 0x7fff);
        }
        bool avg = v[0] % 2, include_pad = v[1] % 2, dbl = v[2] % 2,
             with_idx = !avg && v[3] % 3 == 0;
        int64_t k[2] = {2 + v[4] % 2, 2 + v[5] % 2}, s[2] = {1 + v[6] % 2, 1 + v[6] % 2};
        int64_t d[2] = {1, 1}, pads[4] = {v[7] % 2, v[8] % 2, v[7] % 2, v[9] % 2};
        if (v[10] % 5 == 0) d[0] = d[1] = 2;
        if (iter % 3 == 0) { /* the common CNN pools */
            k[1] = k[0];
            s[0] = s[1] = 2;
            if (k[0] == 2) pads[0] = pads[1] = pads[2] = pads[3] = 0;
        }
        for (int i = 0; i < 2; i++)
            if (pads[i] >= k[i] || pads[2 + i] >= k[i]) pads[i] = pads[2 + i] = 0;
        int64_t dims[4] = {1 + v[11] % 2, 1 + v[12] % 3, 4 + v[13] % 12, 4 + v[14] % 12};
        int64_t numel = dims[0] * dims[1] * dims[2] * dims[3];
        double *x = malloc((size_t)numel * sizeof *x);
        for (int64_t i = 0; i < numel; i++) x[i] = (double)((i * 7919 + iter * 31) % 101) - 50;
        og_tensor *t = nh_tensor(dbl ? OG_DOUBLE : OG_FLOAT, 4, dims, x);
        nh_node n = {.op = avg ? "AveragePool" : "MaxPool",
                     .opset = avg ? 19 : 12,
                     .attrs = {NH_INTS_N("kernel_shape", 2, k), NH_INTS_N("strides", 2, s),
                               NH_INTS_N("pads", 4, pads)},
                     .in = {t},
                     .n_out = with_idx ? 2 : 1,
                     .threads = 2};
        int na = 3;
        if (d[0] > 1) n.attrs[na++] = (nh_attr)NH_INTS_N("dilations", 2, d);
        if (avg) n.attrs[na++] = (nh_attr)NH_INT("count_include_pad", include_pad);
        nh_result r;
        og_status st = nh_run(&n, &r);
        og_tensor **out = r.out;
        if (st == OG_OK && out[0]) {
            const int64_t oh_n = out[0]->dims[2], ow_n = out[0]->dims[3], plane = dims[2] * dims[3];
            int64_t in2[2] = {dims[2], dims[3]}, pb[2] = {pads[0], pads[1]};
            int64_t bad = -1;
            for (int64_t o = 0; o < dims[0] * dims[1] * oh_n * ow_n && bad < 0; o++) {
                int64_t pl = o / (oh_n * ow_n), oh = o / ow_n % oh_n, ow = o % ow_n, at;
                double want_v =
                    ref_pool(x + pl * plane, in2, k, s, d, pb, oh, ow, avg, include_pad, &at);
                if (fabs(og_tensor_get_f64(out[0], o) - want_v) > 1e-5 * (1 + fabs(want_v)) ||
                    (with_idx && og_tensor_get_f64(out[1], o) != (double)(at + pl * plane)))
                    bad = o;
            }
            if (bad >= 0) {
                fprintf(stderr,
                        "random pool %d (%s k %lldx%lld s %lld d %lld pads %lld,%lld,%lld,%lld "
                        "in %lldx%lld): output %lld wrong\n",
                        iter, avg ? "avg" : "max", (long long)k[0], (long long)k[1],
                        (long long)s[0], (long long)d[0], (long long)pads[0], (long long)pads[1],
                        (long long)pads[2], (long long)pads[3], (long long)dims[2],
                        (long long)dims[3], (long long)bad);
                og_test_failures++;
            }
            ran++;
        } else {
            /* A refusal is right only when a window does not fit: an output dim below 1. */
            bool empty = false;
            for (int i = 0; i < 2; i++)
                empty |= dims[2 + i] + pads[i] + pads[2 + i] - ((k[i] - 1) * d[i] + 1) < 0;
            if (!empty) {
                fprintf(stderr, "random pool %d refused a valid configuration: %s\n", iter,
                        og_last_error());
                og_test_failures++;
            }
            refused++;
        }
        nh_release(&r);
        og_tensor_free(t);
        free(x);
    }
    printf("test_pool: %d random cases run, %d refused (a window larger than the padded input)\n",
           ran, refused);
}

/* MaxPool with Indices (what the MaxPool gradient recomputes) on the fast paths (2x2 stride
 * 2; windows inside the input along W, taps outermost) and around them: ties (the first
 * maximum wins), NaN and -inf, all-equal planes, pads, dilations, odd sizes, batch 1 and 3,
 * 1-D to 3-D, both storage orders; against a direct walk of every window in max_row's
 * order (D, H, W). */
static void test_maxpool_indices_paths(void)
{
    typedef struct {
        int nsp;
        int64_t k, s, p, d;
    } pcfg;
    const pcfg cfgs[] = {{2, 2, 2, 0, 1}, {2, 3, 2, 1, 1}, {2, 2, 2, 1, 1}, {2, 3, 1, 1, 1},
                         {2, 2, 1, 0, 2}, {2, 3, 3, 0, 1}, {1, 2, 2, 0, 1}, {1, 3, 2, 1, 1},
                         {3, 2, 2, 0, 1}, {3, 3, 2, 1, 1}};
    unsigned seed = 777;
    int ran = 0;
    for (int iter = 0; iter < 160; iter++) {
        const pcfg *c = &cfgs[iter % (int)(sizeof cfgs / sizeof cfgs[0])];
        int mode = iter / 10 % 3, storage = iter % 7 == 3;
        bool dbl = iter % 2;
        int64_t dims[5] = {iter % 4 == 0 ? 3 : 1, 2, 1, 1, 1}, k[3], st[3], dl[3], pads[6];
        int64_t in[3] = {1, 1, 1}, kk[3] = {1, 1, 1}, ss[3] = {1, 1, 1}, dd[3] = {1, 1, 1};
        int64_t pb[3] = {0, 0, 0};
        for (int i = 0; i < c->nsp; i++) {
            seed = seed * 1103515245u + 12345u;
            dims[2 + i] = (c->nsp == 3 ? 4 : 5) + (int64_t)((seed >> 16) % (c->nsp == 3 ? 5 : 13));
            k[i] = c->k;
            st[i] = c->s;
            dl[i] = c->d;
            pads[i] = pads[c->nsp + i] = c->p;
            int j = 3 - c->nsp + i;
            in[j] = dims[2 + i];
            kk[j] = c->k;
            ss[j] = c->s;
            dd[j] = c->d;
            pb[j] = c->p;
        }
        int64_t numel = dims[0] * dims[1] * in[0] * in[1] * in[2], plane = in[0] * in[1] * in[2];
        double *x = malloc((size_t)numel * sizeof *x);
        for (int64_t i = 0; i < numel; i++) {
            seed = seed * 1103515245u + 12345u;
            int r = (int)((seed >> 16) % 7) - 3;
            x[i] = mode == 2 ? 1.5 : r; /* ties everywhere */
            if (mode == 1 && r == 3) x[i] = NAN;
            if (mode == 1 && r == -3) x[i] = -INFINITY;
        }
        og_tensor *t = nh_tensor(dbl ? OG_DOUBLE : OG_FLOAT, 2 + c->nsp, dims, x);
        nh_node n = {
            .op = "MaxPool",
            .opset = 12,
            .attrs = {NH_INTS_N("kernel_shape", c->nsp, k), NH_INTS_N("strides", c->nsp, st),
                      NH_INTS_N("pads", 2 * c->nsp, pads), NH_INTS_N("dilations", c->nsp, dl),
                      NH_INT("storage_order", storage)},
            .in = {t},
            .n_out = 2,
            .threads = 2};
        nh_result r;
        og_status st2 = nh_run(&n, &r);
        og_tensor **out = r.out;
        CHECK(st2 == OG_OK && out[0] && out[1]);
        if (st2 == OG_OK && out[0] && out[1]) {
            int64_t on[3] = {1, 1, 1};
            for (int i = 0; i < c->nsp; i++) on[3 - c->nsp + i] = out[0]->dims[2 + i];
            int64_t n_out = out[0]->numel, bad = -1;
            for (int64_t o = 0; o < n_out && bad < 0; o++) {
                int64_t pl = o / (on[0] * on[1] * on[2]), od = o / (on[1] * on[2]) % on[0];
                int64_t oh = o / on[2] % on[1], ow = o % on[2], at = -1;
                double best = 0;
                for (int64_t a = 0; a < kk[0]; a++)
                    for (int64_t b = 0; b < kk[1]; b++)
                        for (int64_t e = 0; e < kk[2]; e++) {
                            int64_t p0 = od * ss[0] - pb[0] + a * dd[0];
                            int64_t p1 = oh * ss[1] - pb[1] + b * dd[1];
                            int64_t p2 = ow * ss[2] - pb[2] + e * dd[2];
                            if (p0 < 0 || p0 >= in[0] || p1 < 0 || p1 >= in[1] || p2 < 0 ||
                                p2 >= in[2])
                                continue;
                            int64_t pos = (p0 * in[1] + p1) * in[2] + p2;
                            double v = x[pl * plane + pos];
                            if (at < 0 || v > best) {
                                best = v;
                                at = storage ? p0 + p1 * in[0] + p2 * in[0] * in[1] : pos;
                            }
                        }
                double got = og_tensor_get_f64(out[0], o);
                bool same = isnan(best) ? isnan(got) : got == best;
                if (!same || og_tensor_get_f64(out[1], o) != (double)(pl * plane + at)) bad = o;
            }
            if (bad >= 0) {
                fprintf(stderr,
                        "maxpool indices %d (%dd k %lld s %lld p %lld d %lld, in %lldx%lldx%lld, "
                        "batch %lld, mode %d, order %d): output %lld wrong\n",
                        iter, c->nsp, (long long)c->k, (long long)c->s, (long long)c->p,
                        (long long)c->d, (long long)in[0], (long long)in[1], (long long)in[2],
                        (long long)dims[0], mode, storage, (long long)bad);
                og_test_failures++;
            }
            ran++;
        }
        nh_release(&r);
        og_tensor_free(t);
        free(x);
    }
    printf("test_pool: %d MaxPool-with-indices cases run\n", ran);
}

/* MaxPool 3x3 stride 2 of float (pool.c's mp3 path on AVX-512: 16 outputs of a row per
 * block, taps outside the input read as the nearest inside), without Indices and with them
 * (mp3_rows_idx): rows of 5 to 112 columns (one block and a partial one, lane 15's third
 * tap past the two loaded vectors, rows of one block plus one output), pads 0 and 1 on
 * each side, ceil_mode (with pads of 1 and an even size, a last window with one tap
 * inside), ties, NaN, -inf and signed zeros, 1 and 2 threads, an input of more than 1 MB;
 * bit for bit against the rows loop's fold (the first tap inside, then strictly greater
 * replaces), and each index that of the first maximum in that order. */
static void test_maxpool_3x3s2(void)
{
    static const int64_t widths[] = {5, 31, 32, 33, 34, 35, 63, 64, 65, 100, 112};
    unsigned seed = 4242;
    int ran = 0;
    for (int with_idx = 0; with_idx < 2; with_idx++)
        for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++)
            for (int v = 0; v < 8; v++) {
                const int64_t W = widths[wi], H = 5 + (int64_t)((wi * 3 + (size_t)v) % 9);
                const int64_t pads[4] = {v & 1 || v == 6, (v >> 1) & 1, (v >> 1) & 1,
                                         v & 1 || v == 6};
                const int ceil = v == 5 || v == 6;
                /* 1024 planes of 32 columns: more than 1 MB, each plane prefetched (kernel.h:
                 * og_prefetch_planes) at the first row of the one before */
                const int64_t planes = v == 7 && W == 32 ? 1024 : 3;
                int64_t dims[4] = {v == 3 ? 2 : 1, planes, H, W}, k[2] = {3, 3}, st[2] = {2, 2};
                const int64_t numel = dims[0] * dims[1] * H * W;
                double *x = malloc((size_t)numel * sizeof *x);
                for (int64_t i = 0; i < numel; i++) {
                    seed = seed * 1103515245u + 12345u;
                    const int r = (int)((seed >> 16) % 11) - 5;
                    x[i] = r == 5 ? NAN : r == -5 ? -INFINITY : r == 4 ? -0.0 : r == 3 ? 0.0 : r;
                }
                og_tensor *t = nh_tensor(OG_FLOAT, 4, dims, x);
                nh_node n = {.op = "MaxPool",
                             .opset = 12,
                             .attrs = {NH_INTS_N("kernel_shape", 2, k), NH_INTS_N("strides", 2, st),
                                       NH_INTS_N("pads", 4, pads), NH_INT("ceil_mode", ceil)},
                             .in = {t},
                             .n_out = 1 + with_idx,
                             .threads = 1 + v % 2};
                nh_result r;
                og_status rs = nh_run(&n, &r);
                CHECKF(rs == OG_OK && r.out[0], "maxpool 3x3s2 %lldx%lld: %s", (long long)H,
                       (long long)W, og_last_error());
                if (rs == OG_OK && r.out[0]) {
                    const og_tensor *y = r.out[0];
                    const int64_t OH = y->dims[2], OW = y->dims[3];
                    int64_t bad = -1;
                    for (int64_t o = 0; o < y->numel && bad < 0; o++) {
                        const int64_t pl = o / (OH * OW), oh = o / OW % OH, ow = o % OW;
                        float best = 0;
                        bool any = false;
                        int64_t at = -1; /* the first maximum's flattened index (row-major) */
                        for (int a = 0; a < 3; a++)
                            for (int b = 0; b < 3; b++) {
                                const int64_t ih = 2 * oh - pads[0] + a, iw = 2 * ow - pads[1] + b;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                const float xv = (float)x[(pl * H + ih) * W + iw];
                                if (!any || xv > best) {
                                    best = xv;
                                    at = (pl * H + ih) * W + iw;
                                }
                                any = true;
                            }
                        const float got = ((const float *)y->data)[o];
                        if (memcmp(&got, &best, sizeof got) && !(isnan(got) && isnan(best)))
                            bad = o;
                        if (with_idx && r.out[1] && ((const int64_t *)r.out[1]->data)[o] != at)
                            bad = o;
                    }
                    CHECKF(
                        bad < 0,
                        "maxpool 3x3s2 %lldx%lld pads %lld,%lld,%lld,%lld ceil %d%s: output %lld "
                        "wrong",
                        (long long)H, (long long)W, (long long)pads[0], (long long)pads[1],
                        (long long)pads[2], (long long)pads[3], ceil, with_idx ? " indices" : "",
                        (long long)bad);
                    ran++;
                }
                nh_release(&r);
                og_tensor_free(t);
                free(x);
            }
    printf("test_pool: %d MaxPool 3x3 stride-2 cases run\n", ran);
}

static void test_errors(void)
{
    og_tensor *x = nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 1, 4, 4}, NULL);
    /* no kernel_shape */
    nh_node avg = {.op = "AveragePool", .opset = 11, .in = {x}, .threads = 2};
    nh_expect_fail(&avg, 0, OG_ERR_MODEL, NULL);
    /* kernel rank does not match the input */
    nh_node max = {.op = "MaxPool",
                   .opset = 12,
                   .attrs = {NH_INTS("kernel_shape", 2, 2, 2)},
                   .in = {x},
                   .threads = 2};
    nh_expect_fail(&max, 0, OG_ERR_SHAPE, NULL);
    /* window larger than the input */
    max.attrs[0] = (nh_attr)NH_INTS("kernel_shape", 9, 9);
    nh_expect_fail(&max, 0, OG_ERR_SHAPE, NULL);
    /* bad auto_pad */
    max.attrs[0] = (nh_attr)NH_INTS("kernel_shape", 2, 2);
    max.attrs[1] = (nh_attr)NH_STRING("auto_pad", "SAME");
    nh_expect_fail(&max, 0, OG_ERR_MODEL, NULL);
    og_tensor_free(x);
}

/* ---- LpPool, MaxUnpool, RoiAlign (issue 12) ---- */

/* Run n and compare output 0 with want (count values); release everything. */
static void p12_case(const nh_node *n, const char *what, int64_t count, const double *want,
                     double tol, og_tensor **in, int n_in)
{
    nh_result r;
    CHECK_OK(nh_run(n, &r));
    if (r.status == OG_OK) nh_expect(what, r.out[0], count, want, tol);
    nh_release(&r);
    nh_free_tensors(in, n_in);
}

static void test_lppool_unpool(void)
{
    double v[3] = {3, 4, 0};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 1, 3}, v)};
    nh_node p2 = {
        .op = "LpPool", .opset = 18, .attrs = {NH_INTS("kernel_shape", 2)}, .in = {in[0]}};
    p12_case(&p2, "lppool p 2", 2, (double[]){5, 4}, 1e-6, in, 1);
    og_tensor *h[] = {nh_tensor(OG_FLOAT16, 3, (int64_t[]){1, 1, 3}, v)};
    nh_node p1 = {.op = "LpPool",
                  .opset = 11,
                  .attrs = {NH_INTS("kernel_shape", 2), NH_INT("p", 1)},
                  .in = {h[0]}};
    p12_case(&p1, "lppool p 1 float16", 2, (double[]){7, 4}, 1e-3, h, 1);
    og_tensor *u[] = {nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 1, 2}, (double[]){5, 6}),
                      nh_tensor(OG_INT64, 3, (int64_t[]){1, 1, 2}, (double[]){1, 3}),
                      nh_tensor(OG_INT64, 1, (int64_t[]){3}, (double[]){1, 1, 6})};
    nh_node up = {.op = "MaxUnpool",
                  .opset = 11,
                  .attrs = {NH_INTS("kernel_shape", 2), NH_INTS("strides", 2)},
                  .in = {u[0], u[1]}};
    nh_result r;
    CHECK_OK(nh_run(&up, &r));
    nh_expect("maxunpool", r.out[0], 4, (double[]){0, 5, 0, 6}, 0);
    nh_release(&r);
    nh_node up6 = {.op = "MaxUnpool",
                   .opset = 11,
                   .attrs = {NH_INTS("kernel_shape", 2), NH_INTS("strides", 2)},
                   .in = {u[0], u[1], u[2]}};
    CHECK_OK(nh_run(&up6, &r));
    nh_expect("maxunpool output_shape", r.out[0], 6, (double[]){0, 5, 0, 6, 0, 0}, 0);
    nh_release(&r);
    nh_free_tensors(u, 3);
    og_tensor *b[] = {nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 1, 2}, NULL),
                      nh_tensor(OG_INT64, 3, (int64_t[]){1, 1, 2}, (double[]){1, 9})};
    nh_node bad = {.op = "MaxUnpool",
                   .opset = 11,
                   .attrs = {NH_INTS("kernel_shape", 2), NH_INTS("strides", 2)},
                   .in = {b[0], b[1]}};
    nh_expect_fail(&bad, NH_RUN, OG_ERR_RUNTIME, "outside the 4 positions");
    nh_free_tensors(b, 2);
}

static void test_roi_align(void)
{
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 1, 2, 2}, (double[]){1, 2, 3, 4}),
                       nh_tensor(OG_FLOAT, 2, (int64_t[]){1, 4}, (double[]){0, 0, 1, 1}),
                       nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){0})};
    nh_node hp = {.op = "RoiAlign",
                  .opset = 16,
                  .attrs = {NH_INT("sampling_ratio", 1)},
                  .in = {in[0], in[1], in[2]}};
    nh_result r;
    CHECK_OK(nh_run(&hp, &r));
    nh_expect("roialign half_pixel", r.out[0], 1, (double[]){1}, 1e-6);
    nh_release(&r);
    nh_node ohp = {.op = "RoiAlign",
                   .opset = 16,
                   .attrs = {NH_INT("sampling_ratio", 1),
                             NH_STRING("coordinate_transformation_mode", "output_half_pixel")},
                   .in = {in[0], in[1], in[2]}};
    p12_case(&ohp, "roialign output_half_pixel", 1, (double[]){2.5}, 1e-6, in, 0);
    og_tensor *bi[] = {nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){2})};
    nh_node bad = {.op = "RoiAlign", .opset = 16, .in = {in[0], in[1], bi[0]}};
    nh_expect_fail(&bad, NH_RUN, OG_ERR_RUNTIME, "batch_indices");
    nh_free_tensors(bi, 1);
    nh_free_tensors(in, 3);
}

/* MaxPool-12 on int8 and uint8.  The pads never win: every window here holds only negative
 * values, so a zero from a pad would show (the reference pads with -inf, as onnxruntime,
 * whose values and indices these are).  With and without Indices (the border, interior and
 * masked-index paths); uint8 on the 2x2 stride 2 path; the types MaxPool-11, AveragePool and
 * GlobalMaxPool do not have are refused by type inference. */
static void test_maxpool_int8(void)
{
    og_tensor *x = nh_tensor(OG_INT8, 4, (int64_t[]){1, 1, 3, 3},
                             (double[]){-5, -3, -9, -7, -128, -2, -100, -1, -50});
    const double y[] = {-5, -3, -3, -9, -5, -3, -2, -2, -7, -1, -1, -2, -100, -1, -1, -50};
    const double idx[] = {0, 1, 1, 2, 0, 1, 5, 5, 3, 7, 7, 5, 6, 7, 7, 8};
    nh_node n = {.op = "MaxPool",
                 .opset = 12,
                 .attrs = {NH_INTS("kernel_shape", 2, 2), NH_INTS("pads", 1, 1, 1, 1)},
                 .in = {x}};
    nh_result r;
    for (int with_idx = 0; with_idx < 2; with_idx++) {
        n.n_out = 1 + with_idx;
        CHECK_OK(nh_run(&n, &r));
        CHECK(r.out[0] && r.out[0]->dtype == OG_INT8 && r.out[0]->dims[2] == 4);
        nh_expect_close("maxpool int8 pads", r.out[0], 16, y, 0, 0);
        if (with_idx) nh_expect_close("maxpool int8 indices", r.out[1], 16, idx, 0, 0);
        nh_release(&r);
    }
    og_tensor *u =
        nh_tensor(OG_UINT8, 4, (int64_t[]){1, 1, 4, 4},
                  (double[]){200, 255, 0, 17, 3, 254, 9, 128, 1, 2, 250, 251, 0, 0, 0, 255});
    nh_node nu = {.op = "MaxPool",
                  .opset = 12,
                  .attrs = {NH_INTS("kernel_shape", 2, 2), NH_INTS("strides", 2, 2)},
                  .in = {u}};
    CHECK_OK(nh_run(&nu, &r));
    nh_expect_close("maxpool uint8 2x2", r.out[0], 4, (double[]){255, 128, 2, 255}, 0, 0);
    nh_release(&r);
    n.opset = 11;
    nh_expect_fail(&n, NH_LOAD, OG_ERR_UNSUPPORTED, "element type int8");
    nh_node avg = {.op = "AveragePool",
                   .opset = 19,
                   .attrs = {NH_INTS("kernel_shape", 2, 2)},
                   .in = {u}},
            gmax = {.op = "GlobalMaxPool", .opset = 1, .in = {u}};
    nh_expect_fail(&avg, NH_LOAD, OG_ERR_UNSUPPORTED, "element type uint8");
    nh_expect_fail(&gmax, NH_LOAD, OG_ERR_UNSUPPORTED, "element type uint8");
    nh_free_tensors((og_tensor *[]){x, u}, 2);
}

int main(void)
{
    test_maxpool_indices(0);
    test_maxpool_indices(1);
    test_avgpool_pads(0);
    test_avgpool_pads(1);
    test_maxpool_dilated_ceil();
    test_maxpool_int8();
    test_global("GlobalAveragePool", 2.5, -2.5);
    test_global("GlobalMaxPool", 4, -1);
    test_global_avg_planes();
    test_global_avg_small();
    test_global_avg_mid();
    test_random();
    test_maxpool_indices_paths();
    test_maxpool_3x3s2();
    test_errors();
    test_lppool_unpool();
    test_roi_align();
    NH_DONE();
}
