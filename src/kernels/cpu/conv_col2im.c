/* conv_col2im.c: the CPU kernel of Col2Im (src/ops/conv.c), the conv family's fold: in a file
 * of its own so that conv.c holds Conv and ConvTranspose.  Its loops are bound when the
 * session is created: float32 and float64 (og_float_impl: float16 and bfloat16 through
 * float32's loop on widened copies), the integers through the unsigned loop of their width
 * (sums wrap modulo 2^bits, as the reference evaluator's numpy additions in the element
 * type), and bool, whose sum is a logical or (numpy's bool addition). */
#include "kernels/cpu/kernel.h"
#include "ops/conv_params.h"

/* What the loops read: the spatial rank, the image, block, block-count, stride, dilation
 * and begin-pad per spatial axis, and the sizes (planes = N·C, K = Πblock taps, L blocks,
 * HW = Πimage). */
typedef struct col2im_geom {
    int nsp;
    int64_t image[OG_CONV_MAX_SP], block[OG_CONV_MAX_SP], blocks[OG_CONV_MAX_SP];
    int64_t s[OG_CONV_MAX_SP], d[OG_CONV_MAX_SP], pb[OG_CONV_MAX_SP];
    int64_t planes, K, L, HW;
} col2im_geom;

/* y[n, c, pos] = Σ x[n, c·K + t, l] over the kernel taps t and block positions l with
 * pos = l·stride − pad_begin + t·dilation inside the image (K = Πblock, both multi-indices
 * row-major): the adjoint of im2col, PyTorch's fold. */
#define DEF_COL2IM(T, NAME, ADD)                                                                   \
    static void col2im_##NAME(const col2im_geom *g, const void *xv, void *yv)                      \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        const col2im_geom G = *g; /* a local copy: stores into y cannot change it */               \
        for (int64_t pl = 0; pl < G.planes; pl++) {                                                \
            T *yp = y + pl * G.HW;                                                                 \
            for (int64_t i = 0; i < G.HW; i++) yp[i] = 0;                                          \
            for (int64_t t = 0; t < G.K; t++) {                                                    \
                const T *xr = x + (pl * G.K + t) * G.L;                                            \
                int64_t tt[OG_CONV_MAX_SP], rem = t;                                               \
                for (int i = G.nsp - 1; i >= 0; i--) {                                             \
                    tt[i] = rem % G.block[i];                                                      \
                    rem /= G.block[i];                                                             \
                }                                                                                  \
                for (int64_t l = 0; l < G.L; l++) {                                                \
                    int64_t off = 0, r2 = l;                                                       \
                    bool in = true;                                                                \
                    int64_t ll[OG_CONV_MAX_SP];                                                    \
                    for (int i = G.nsp - 1; i >= 0; i--) {                                         \
                        ll[i] = r2 % G.blocks[i];                                                  \
                        r2 /= G.blocks[i];                                                         \
                    }                                                                              \
                    for (int i = 0; i < G.nsp && in; i++) {                                        \
                        int64_t q = ll[i] * G.s[i] - G.pb[i] + tt[i] * G.d[i];                     \
                        in = q >= 0 && q < G.image[i];                                             \
                        off = off * G.image[i] + q;                                                \
                    }                                                                              \
                    if (in) yp[off] = (T)(ADD(yp[off], xr[l]));                                    \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
#define COL2IM_ADD(a, b) ((a) + (b))
#define COL2IM_OR(a, b)  ((a) | (b))
DEF_COL2IM(float, float, COL2IM_ADD)
DEF_COL2IM(double, double, COL2IM_ADD)
/* the integers: unsigned arithmetic of the width (a signed type's sums have the same bits) */
DEF_COL2IM(uint8_t, u8, COL2IM_ADD)
DEF_COL2IM(uint16_t, u16, COL2IM_ADD)
DEF_COL2IM(uint32_t, u32, COL2IM_ADD)
DEF_COL2IM(uint64_t, u64, COL2IM_ADD)
DEF_COL2IM(uint8_t, b8, COL2IM_OR)

typedef void (*col2im_fn)(const col2im_geom *g, const void *x, void *y);
static const col2im_fn col2im_loops[2] = {col2im_float, col2im_double};
OG_FLOAT_IMPLS(col2im_impls, &col2im_loops[0], &col2im_loops[1]);
/* the integer and bool bindings: their own loops, nothing widened */
static const col2im_fn col2im_int_loops[5] = {col2im_u8, col2im_u16, col2im_u32, col2im_u64,
                                              col2im_b8};
static const og_float_impl col2im_int_impls[5] = {{&col2im_int_loops[0], NULL},
                                                  {&col2im_int_loops[1], NULL},
                                                  {&col2im_int_loops[2], NULL},
                                                  {&col2im_int_loops[3], NULL},
                                                  {&col2im_int_loops[4], NULL}};

/* The binding for dtype t: the float table's entry, an integer width's, bool's; NULL else. */
static const og_float_impl *col2im_impl_of(og_dtype t)
{
    switch (t) {
    case OG_INT8:
    case OG_UINT8: return &col2im_int_impls[0];
    case OG_INT16:
    case OG_UINT16: return &col2im_int_impls[1];
    case OG_INT32:
    case OG_UINT32: return &col2im_int_impls[2];
    case OG_INT64:
    case OG_UINT64: return &col2im_int_impls[3];
    case OG_BOOL: return &col2im_int_impls[4];
    default: return og_float_impl_of(col2im_impls, t);
    }
}

static const void *select_col2im(const og_node *n, og_dtype t)
{
    (void)n;
    return col2im_impl_of(t);
}

static og_status col2im_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                               og_tensor *const *out, int n_out)
{
    const og_conv_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    const og_float_impl *im = k->impl ? k->impl : col2im_impl_of(x->dtype);
    if (!im)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    if (!im->loops) return og_kernel_via_f32_bound(k, im, col2im_kernel, in, n_in, out, n_out);
    col2im_geom g = {.nsp = y->rank - 2, .K = 1, .HW = 1};
    int64_t C;
    /* image_shape and block_shape: a few integers, read once per call */
    for (int i = 0; i < g.nsp; i++) {
        g.image[i] = og_tensor_get_i64(in[1], i);
        g.block[i] = og_tensor_get_i64(in[2], i);
        g.s[i] = p->n_strides ? p->strides[i] : 1;
        g.d[i] = p->n_dilations ? p->dilations[i] : 1;
        g.pb[i] = p->n_pads ? p->pads[i] : 0;
        g.K *= g.block[i];
        g.HW *= g.image[i];
    }
    og_status st = og_col2im_geometry(k->node, p, g.nsp, g.image, g.block, x->dims, &C, g.blocks);
    if (st || y->numel == 0) return st;
    g.planes = x->dims[0] * C;
    g.L = x->dims[2];
    (*(const col2im_fn *)im->loops)(&g, x->data, y->data);
    return OG_OK;
}

/* float32, float64, float16, bfloat16, the integers and bool (select_col2im) */
const og_kernel_def og_cpu_conv_col2im[] = {
    {.name = "Col2Im", .domain = "", .fn = col2im_kernel, .select = select_col2im}, {.name = NULL}};
