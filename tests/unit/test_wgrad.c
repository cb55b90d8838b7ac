/* test_wgrad.c: a Conv's weight gradient from X and dY (og_exec_wgrad,
 * src/kernels/cpu/conv_wgrad.h), which the executor runs in place of the gradient builder's
 * Transpose -> Conv -> [Slice ->] Transpose (src/exec/fuse.h), against the definition
 * dW[m, c, j] = Σ_n Σ_o dY[n, m, o] · X[n, c, o·s + j·d − pb] summed in double: 1-D to 3-D,
 * strides, dilations, begin and end pads, kernels smaller than the inner Conv's output (the
 * Slice), images in several blocks (uneven), one and two threads, float and double; and
 * the errors for inputs that do not fit.  The gradient tests (grad_check, grad_ort,
 * grad_torch) check the pattern's plan through whole models. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/cpu/conv_wgrad.h"
#include "ops/conv_params.h"
#include "test.h"

typedef struct wcase {
    const char *name;
    int nsp;
    int64_t n, c, m;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
    og_dtype dt;
    int threads;
} wcase;

static uint32_t rng = 777;
static double rnd(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (double)(rng >> 8) / (double)(1u << 24) * 2.0 - 1.0;
}

static double get(const og_tensor *t, int64_t i)
{
    return t->dtype == OG_FLOAT ? ((const float *)t->data)[i] : ((const double *)t->data)[i];
}

static og_tensor *random_tensor(og_dtype dt, int rank, const int64_t *dims)
{
    og_tensor *t = NULL;
    CHECK_OK(og_tensor_alloc(dt, rank, dims, NULL, &t));
    for (int64_t i = 0; t && i < t->numel; i++) {
        double v = rnd();
        if (dt == OG_FLOAT)
            ((float *)t->data)[i] = (float)v;
        else
            ((double *)t->data)[i] = v;
    }
    return t;
}

static void run_case(const wcase *w)
{
    const int nsp = w->nsp, rank = nsp + 2;
    int64_t xd[5] = {w->n, w->c}, yd[5] = {w->n, w->m}, wd[5] = {w->m, w->c};
    int64_t os = 1, ks = 1;
    for (int i = 0; i < nsp; i++) {
        int64_t s = w->s[i] ? w->s[i] : 1, d = w->d[i] ? w->d[i] : 1;
        xd[2 + i] = w->in[i];
        wd[2 + i] = w->k[i];
        yd[2 + i] = (w->in[i] + w->pb[i] + w->pe[i] - (w->k[i] - 1) * d - 1) / s + 1;
        os *= yd[2 + i];
        ks *= w->k[i];
    }
    og_tensor *x = random_tensor(w->dt, rank, xd), *dy = random_tensor(w->dt, rank, yd), *dw = NULL;
    CHECK_OK(og_tensor_alloc(w->dt, rank, wd, NULL, &dw));
    if (!x || !dy || !dw) goto done;
    /* the gradient's inner Conv: its dilations are the forward strides, its strides the
     * forward dilations */
    og_conv_params p;
    memset(&p, 0, sizeof p);
    p.n_strides = p.n_dilations = nsp;
    p.n_pads = 2 * nsp;
    for (int i = 0; i < nsp; i++) {
        p.dilations[i] = w->s[i] ? w->s[i] : 1;
        p.strides[i] = w->d[i] ? w->d[i] : 1;
        p.pads[i] = w->pb[i];
        p.pads[nsp + i] = w->pe[i];
    }
    og_kernel_ctx k;
    memset(&k, 0, sizeof k);
    k.params = &p;
    k.alloc = og_default_allocator();
    k.threads = w->threads;
    og_status st = og_exec_wgrad(&k, x, dy, dw);
    CHECK(st == OG_OK);
    if (st) {
        fprintf(stderr, "%s: %s\n", w->name, og_last_error());
        goto done;
    }
    double worst = 0;
    for (int64_t m = 0; m < w->m; m++)
        for (int64_t c = 0; c < w->c; c++)
            for (int64_t j = 0; j < ks; j++) {
                int64_t jj[3] = {0}, r = j;
                for (int i = nsp - 1; i >= 0; i--) {
                    jj[i] = r % w->k[i];
                    r /= w->k[i];
                }
                double ref = 0, mag = 0;
                for (int64_t n = 0; n < w->n; n++)
                    for (int64_t o = 0; o < os; o++) {
                        int64_t oo[3] = {0}, q = o, xi = 0;
                        bool inside = true;
                        for (int i = nsp - 1; i >= 0; i--) {
                            oo[i] = q % yd[2 + i];
                            q /= yd[2 + i];
                        }
                        for (int i = 0; i < nsp; i++) {
                            int64_t s = w->s[i] ? w->s[i] : 1, d = w->d[i] ? w->d[i] : 1;
                            int64_t at = oo[i] * s + jj[i] * d - w->pb[i];
                            if (at < 0 || at >= w->in[i]) inside = false;
                            xi = xi * w->in[i] + at;
                        }
                        if (!inside) continue;
                        double a = get(dy, (n * w->m + m) * os + o);
                        double b = get(x, (n * w->c + c) * (x->numel / (w->n * w->c)) + xi);
                        ref += a * b;
                        mag += fabs(a * b);
                    }
                double got = get(dw, (m * w->c + c) * ks + j);
                double err = fabs(got - ref) / (mag > 1 ? mag : 1);
                if (err > worst) worst = err;
            }
    double tol = w->dt == OG_FLOAT ? 1e-5 : 1e-12;
    printf("%-28s largest error %.3g (relative to the sum of |terms|)\n", w->name, worst);
    CHECK(worst <= tol);
done:
    og_tensor_free(x);
    og_tensor_free(dy);
    og_tensor_free(dw);
}

static const wcase cases[] = {
    /* ResNet: 3x3, stride 1, pads 1; stride 2; the 1x1 stride-2 shortcut (the builder's
     * inner Conv gives 2x2 and a Slice keeps 1x1) */
    {"3x3_s1_p1", 2, 8, 16, 24, {16, 16}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, OG_FLOAT, 1},
    {"3x3_s2_p1_mt", 2, 4, 8, 12, {15, 16}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, OG_FLOAT, 2},
    {"1x1_s2", 2, 3, 5, 7, {9, 8}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, OG_FLOAT, 1},
    /* the stem: 7x7, stride 2, pads 3, 3 channels */
    {"7x7_s2_p3", 2, 2, 3, 8, {20, 18}, {7, 7}, {2, 2}, {1, 1}, {3, 3}, {3, 3}, OG_FLOAT, 1},
    /* dilations, asymmetric and large pads, a kernel larger than the input */
    {"dil2_asym", 2, 3, 4, 5, {11, 12}, {3, 2}, {1, 2}, {2, 3}, {2, 0}, {0, 3}, OG_DOUBLE, 1},
    {"kernel_beyond_input",
     2,
     2,
     2,
     3,
     {3, 4},
     {5, 5},
     {1, 1},
     {1, 1},
     {2, 2},
     {2, 2},
     OG_FLOAT,
     1},
    /* images in several blocks: 64 x 9 kernel rows and 16x16 outputs fit 7 images per 4 MB
     * block, so 13 images make blocks of 7 and 6 */
    {"blocks_uneven", 2, 13, 64, 8, {16, 16}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, OG_FLOAT, 1},
    {"blocks_uneven_mt_f64",
     2,
     13,
     64,
     8,
     {16, 16},
     {3, 3},
     {1, 1},
     {1, 1},
     {1, 1},
     {1, 1},
     OG_DOUBLE,
     2},
    /* deep layers: 2x2 outputs, many images per GEMM */
    {"deep_2x2", 2, 8, 32, 32, {4, 4}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, OG_FLOAT, 2},
    /* Winograd (conv_wino.c: 3x3, stride 1, 16 channels or more, 8x8 outputs or more, on
     * AVX-512; the column path elsewhere): odd outputs (partial tiles at the right and the
     * bottom), pads asymmetric, 0 and 2, tile rows of more than 16 tiles, channels not a
     * multiple of 16 (dW's last vector partial), blocks of 8 images and 3 (19 images of 32
     * + 32 channels and 16x16 outputs), 1, 2 and 3 threads */
    {"wino_odd_mt", 2, 3, 19, 17, {15, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, OG_FLOAT, 2},
    {"wino_asym", 2, 2, 16, 33, {17, 18}, {3, 3}, {1, 1}, {1, 1}, {0, 2}, {2, 1}, OG_FLOAT, 1},
    {"wino_nopad", 2, 2, 20, 16, {12, 11}, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, OG_FLOAT, 1},
    {"wino_pads2_wide", 2, 1, 16, 16, {9, 40}, {3, 3}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, OG_FLOAT, 3},
    {"wino_blk_mt", 2, 19, 32, 32, {16, 16}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, OG_FLOAT, 2},
    /* small planes (64 outputs or fewer: the column matrix by gathers and permutations,
     * og_conv_cols_images, in bands of input channels): ResNet-18 8x64x64's 4x4 and 2x2
     * layers, stride 2 to 2x2, channels in bands of 2 and 3 (20 / 8) */
    {"cols_4x4_mt", 2, 8, 32, 24, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, OG_FLOAT, 2},
    {"cols_2x2", 2, 8, 20, 16, {2, 2}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, OG_FLOAT, 1},
    {"cols_s2_mt", 2, 5, 20, 16, {4, 4}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, OG_FLOAT, 3},
    /* short sums over many columns (dWᵀ = col · dYᵀ): a stem of 3 channels by 7x7 taps at
     * stride 2, 7 images of 32x32 outputs in blocks of 6 and 1; a 1-D one */
    {"nn_stem_blocks", 2, 7, 3, 8, {64, 64}, {7, 7}, {2, 2}, {1, 1}, {3, 3}, {3, 3}, OG_FLOAT, 2},
    {"nn_1d", 1, 4, 5, 6, {1200}, {5}, {1}, {1}, {2}, {2}, OG_FLOAT, 1},
    /* one image; 1-D; 3-D */
    {"one_image", 2, 1, 6, 4, {7, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, OG_FLOAT, 1},
    {"conv1d", 1, 3, 4, 5, {17}, {5}, {2}, {2}, {3}, {1}, OG_DOUBLE, 1},
    {"conv3d_mt",
     3,
     2,
     3,
     4,
     {5, 6, 7},
     {3, 2, 3},
     {1, 2, 1},
     {1, 1, 2},
     {1, 0, 2},
     {1, 1, 0},
     OG_FLOAT,
     2},
};

/* X, dY and dW that do not fit: a status and a message, dW untouched. */
static void test_errors(void)
{
    int64_t xd[4] = {2, 3, 5, 5}, yd[4] = {2, 4, 3, 3}, wd[4] = {4, 3, 3, 3}, bad[4] = {2, 5, 5, 5};
    og_tensor *x = random_tensor(OG_FLOAT, 4, xd), *xb = random_tensor(OG_FLOAT, 4, bad);
    og_tensor *dy = random_tensor(OG_FLOAT, 4, yd), *dw = random_tensor(OG_FLOAT, 4, wd);
    og_tensor *di = NULL;
    CHECK_OK(og_tensor_alloc(OG_INT32, 4, yd, NULL, &di));
    og_conv_params p;
    memset(&p, 0, sizeof p);
    og_node node;
    memset(&node, 0, sizeof node);
    node.name = "wgrad";
    node.op_type = "Conv";
    node.domain = "";
    og_kernel_ctx k;
    memset(&k, 0, sizeof k);
    k.node = &node;
    k.params = &p;
    k.alloc = og_default_allocator();
    k.threads = 1;
    CHECK(og_exec_wgrad(&k, xb, dy, dw) == OG_ERR_SHAPE); /* X has 5 channels, dW 3 */
    CHECK(strstr(og_last_error(), "weight gradient") != NULL);
    CHECK(og_exec_wgrad(&k, x, di, dw) == OG_ERR_UNSUPPORTED);
    p.n_pads = 4;
    p.pads[0] = -1;
    CHECK(og_exec_wgrad(&k, x, dy, dw) == OG_ERR_UNSUPPORTED);
    og_tensor_free(x);
    og_tensor_free(xb);
    og_tensor_free(dy);
    og_tensor_free(dw);
    og_tensor_free(di);
}

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i]);
    test_errors();
    TEST_DONE();
}
