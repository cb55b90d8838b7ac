/* conv_col2im.c: the CPU kernel of Col2Im (src/ops/conv.c), the conv family's fold: in a file
 * of its own so that conv.c holds Conv and ConvTranspose.  Its float32 and float64 loops are
 * bound when the session is created (og_float_impl: float16 and bfloat16 through float32's
 * loop on widened copies). */
#include "kernels/cpu/kernel.h"
#include "ops/conv_params.h"

/* y[n, c, pos] = Σ x[n, c·K + t, l] over the kernel taps t and block positions l with
 * pos = l·stride − pad_begin + t·dilation inside the image (K = Πblock, both multi-indices
 * row-major): the adjoint of im2col, PyTorch's fold. */
#define DEF_COL2IM(T)                                                                              \
    static void col2im_##T(const void *xv, void *yv, int nsp, const int64_t *image,                \
                           const int64_t *block, const int64_t *blocks, const int64_t *s,          \
                           const int64_t *d, const int64_t *pb, int64_t planes, int64_t K,         \
                           int64_t L, int64_t HW)                                                  \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        for (int64_t pl = 0; pl < planes; pl++) {                                                  \
            T *yp = y + pl * HW;                                                                   \
            for (int64_t i = 0; i < HW; i++) yp[i] = 0;                                            \
            for (int64_t t = 0; t < K; t++) {                                                      \
                const T *xr = x + (pl * K + t) * L;                                                \
                int64_t tt[OG_CONV_MAX_SP], rem = t;                                               \
                for (int i = nsp - 1; i >= 0; i--) {                                               \
                    tt[i] = rem % block[i];                                                        \
                    rem /= block[i];                                                               \
                }                                                                                  \
                for (int64_t l = 0; l < L; l++) {                                                  \
                    int64_t off = 0, r2 = l;                                                       \
                    bool in = true;                                                                \
                    int64_t ll[OG_CONV_MAX_SP];                                                    \
                    for (int i = nsp - 1; i >= 0; i--) {                                           \
                        ll[i] = r2 % blocks[i];                                                    \
                        r2 /= blocks[i];                                                           \
                    }                                                                              \
                    for (int i = 0; i < nsp && in; i++) {                                          \
                        int64_t q = ll[i] * s[i] - pb[i] + tt[i] * d[i];                           \
                        in = q >= 0 && q < image[i];                                               \
                        off = off * image[i] + q;                                                  \
                    }                                                                              \
                    if (in) yp[off] += xr[l];                                                      \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
DEF_COL2IM(float)
DEF_COL2IM(double)

typedef void (*col2im_fn)(const void *x, void *y, int nsp, const int64_t *image,
                          const int64_t *block, const int64_t *blocks, const int64_t *s,
                          const int64_t *d, const int64_t *pb, int64_t planes, int64_t K, int64_t L,
                          int64_t HW);
static const col2im_fn col2im_loops[2] = {col2im_float, col2im_double};
OG_FLOAT_IMPLS(col2im_impls, &col2im_loops[0], &col2im_loops[1]);

static const void *select_col2im(const og_node *n, og_dtype t)
{
    (void)n;
    return og_float_impl_of(col2im_impls, t);
}

static og_status col2im_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                               og_tensor *const *out, int n_out)
{
    const og_conv_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    const og_float_impl *im = og_float_bound(k, col2im_impls, x->dtype);
    if (!im)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    if (!im->loops) return og_kernel_via_f32_bound(k, im, col2im_kernel, in, n_in, out, n_out);
    int nsp = y->rank - 2;
    int64_t image[OG_CONV_MAX_SP], block[OG_CONV_MAX_SP], blocks[OG_CONV_MAX_SP], C;
    int64_t s[OG_CONV_MAX_SP], d[OG_CONV_MAX_SP], pb[OG_CONV_MAX_SP], K = 1, HW = 1;
    /* image_shape and block_shape: a few integers, read once per call */
    for (int i = 0; i < nsp; i++) {
        image[i] = og_tensor_get_i64(in[1], i);
        block[i] = og_tensor_get_i64(in[2], i);
        s[i] = p->n_strides ? p->strides[i] : 1;
        d[i] = p->n_dilations ? p->dilations[i] : 1;
        pb[i] = p->n_pads ? p->pads[i] : 0;
        K *= block[i];
        HW *= image[i];
    }
    og_status st = og_col2im_geometry(k->node, p, nsp, image, block, x->dims, &C, blocks);
    if (st || y->numel == 0) return st;
    (*(const col2im_fn *)im->loops)(x->data, y->data, nsp, image, block, blocks, s, d, pb,
                                    x->dims[0] * C, K, x->dims[2], HW);
    return OG_OK;
}

/* float32, float64, float16 and bfloat16 (select_col2im) */
const og_kernel_def og_cpu_conv_col2im[] = {
    {.name = "Col2Im", .domain = "", .fn = col2im_kernel, .select = select_col2im}, {.name = NULL}};
