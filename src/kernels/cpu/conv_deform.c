/* conv_deform.c: the CPU kernel of DeformConv (src/ops/conv_deform.c).
 *
 * Per image and group, a deformable im2col: column p of row (c, q) holds
 *   mask[n, g_o, q, p] * sample(X[n, c], p * stride - pad_begin + q * dilation + offset[n, g_o, q,
 * :, p]) where g_o is the offset group of channel c and sample interpolates multilinearly between
 * the 2^nsp neighbours (those outside the input count as 0, as GridSample's bilinear mode with
 * align_corners and zero padding).  Then Y[n, m, p] = B[m] + sum_r W[m, r] col[r][p], all in
 * double, stored in X's dtype. */
#include <math.h>

#include "kernels/cpu/kernel.h"
#include "ops/conv_params.h"

static double sample(const double *x, const og_conv_geom *g, const double *pos)
{
    int nsp = g->nsp;
    double acc = 0;
    for (int i = 0; i < nsp; i++) /* far outside (or NaN): zeros, and no out-of-range cast */
        if (!(pos[i] > -2.0 && pos[i] < (double)g->in[i] + 1.0)) return 0.0;
    for (int corner = 0; corner < (1 << nsp); corner++) {
        double w = 1;
        int64_t off = 0, span = 1;
        bool inside = true;
        for (int i = nsp - 1; i >= 0; i--) {
            double f = floor(pos[i]);
            int64_t at = (int64_t)f + ((corner >> i) & 1);
            double t = pos[i] - f;
            w *= (corner >> i) & 1 ? t : 1 - t;
            if (at < 0 || at >= g->in[i]) inside = false;
            off += at * span;
            span *= g->in[i];
        }
        if (inside && w != 0) acc += w * x[off];
    }
    return acc;
}

/* The bound loads and stores of X's dtype (og_elem_io: float32, float64 and float16 read
 * into doubles and written back as og_tensor_get_f64 / og_tensor_set_f64 would). */
static const void *select_deform(const og_node *n, og_dtype t)
{
    (void)n;
    return og_elem_io_of(t);
}

/* Per image: X's image, its offsets and mask read into doubles by the bound load, the
 * columns built, then each output row computed in double and stored by the bound store. */
static og_status k_deform(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0], *w = in[1], *off = in[2], *b = n_in > 3 ? in[3] : NULL,
                    *mask = n_in > 4 ? in[4] : NULL;
    og_tensor *y = out[0];
    const og_elem_io *io = k->impl ? k->impl : og_elem_io_of(x->dtype);
    if (!io || !og_dtype_is_float(io->dtype))
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    for (int i = 1; i < n_in; i++) /* inference: every input has X's dtype */
        if (in[i] && og_dtype_size(in[i]->dtype) != og_dtype_size(x->dtype))
            return og_kernel_error(k, OG_ERR_TYPE, "input %d is %s, input 0 (X) %s", i,
                                   og_dtype_name(in[i]->dtype), og_dtype_name(x->dtype));
    og_conv_geom g;
    og_status st = og_conv_geometry(k->node, k->params, true, x->rank, x->dims, w->rank, w->dims,
                                    b ? b->numel : -1, &g);
    if (st) return st;
    int nsp = g.nsp;
    int64_t OG = og_attr_int(k->node, "offset_group", 1), cg = g.c / g.group, mg = g.m / g.group;
    int64_t P = 1, Q = 1, I = 1;
    for (int i = 0; i < nsp; i++) {
        P *= g.out[i];
        Q *= g.kernel[i];
        I *= g.in[i];
    }
    int64_t K = cg * Q, cpo = g.c / OG; /* channels per offset group */
    if (off->numel != g.n * OG * Q * nsp * P || (mask && mask->numel != g.n * OG * Q * P))
        return og_kernel_error(k, OG_ERR_SHAPE, "offset or mask does not match the output's shape");
    /* doubles: the columns (K·P), W, B (M), one image of X (C·I), of offsets (OG·Q·nsp·P)
     * and of mask (OG·Q·P), one output row (P) */
    int64_t n_off = OG * Q * nsp * P, n_mask = mask ? OG * Q * P : 0;
    size_t total = (size_t)(K * P + w->numel + g.m + g.c * I + n_off + n_mask + P + 1);
    double *col = og_malloc(k->alloc, total * sizeof *col);
    if (!col)
        return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for %lld x %lld columns",
                               (long long)K, (long long)P);
    double *wd = col + K * P, *bd = wd + w->numel, *xd = bd + g.m, *od = xd + g.c * I,
           *md = od + n_off, *yr = md + n_mask;
    io->load(w->data, 0, 1, w->numel, wd);
    if (b) io->load(b->data, 0, 1, g.m, bd);
    for (int64_t n = 0; n < g.n; n++) {
        io->load(x->data, n * g.c * I, 1, g.c * I, xd);
        io->load(off->data, n * n_off, 1, n_off, od);
        if (mask) io->load(mask->data, n * n_mask, 1, n_mask, md);
        for (int64_t gr = 0; gr < g.group; gr++) {
            for (int64_t r = 0; r < K; r++) {
                int64_t c = gr * cg + r / Q, q = r % Q, qi[OG_CONV_MAX_SP], oq = q;
                int64_t og = c / cpo;
                for (int i = nsp - 1; i >= 0; i--) {
                    qi[i] = oq % g.kernel[i];
                    oq /= g.kernel[i];
                }
                for (int64_t p = 0; p < P; p++) {
                    double pos[OG_CONV_MAX_SP];
                    int64_t pp = p;
                    for (int i = nsp - 1; i >= 0; i--) {
                        int64_t o = pp % g.out[i];
                        pp /= g.out[i];
                        int64_t oi = ((og * Q + q) * nsp + i) * P + p;
                        pos[i] =
                            (double)(o * g.stride[i] - g.pad_begin[i] + qi[i] * g.dil[i]) + od[oi];
                    }
                    double m = mask ? md[(og * Q + q) * P + p] : 1.0;
                    col[r * P + p] = m == 0 ? 0 : m * sample(xd + c * I, &g, pos);
                }
            }
            for (int64_t mm = 0; mm < mg; mm++) {
                int64_t m = gr * mg + mm;
                double bias = b ? bd[m] : 0.0;
                const double *wm = wd + m * K;
                for (int64_t p = 0; p < P; p++) {
                    double acc = bias;
                    for (int64_t r = 0; r < K; r++) acc += wm[r] * col[r * P + p];
                    yr[p] = acc;
                }
                io->store(y->data, (n * g.m + m) * P, 1, P, yr);
            }
        }
    }
    og_free(k->alloc, col);
    return OG_OK;
}

static const og_dtype deform_types[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_UNDEFINED};

/* float32, float64 and float16 (the spec's), bound by select to og_elem_io */
const og_kernel_def og_cpu_conv_deform[] = {
    {.name = "DeformConv",
     .domain = "",
     .fn = k_deform,
     .types = deform_types,
     .select = select_deform},
    {.name = NULL},
};
