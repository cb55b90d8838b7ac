/* signal.c: CPU kernels of DFT, STFT, the windows and MelWeightMatrix (src/ops/signal.c).
 *
 * Transforms run in double whatever the element type (float16, bfloat16, float, double), on
 * one complex row at a time: a radix-2 FFT when the length is a power of two, else the direct
 * sum over the nonzero inputs for the bins wanted (O(n * bins), with an exact twiddle index
 * (k n) mod L from one table of L cosines and sines).  Rows are split among the threads,
 * each with its own scratch row. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "ops/signal.h"

#define OG_PI 3.14159265358979323846

static const og_dtype types_float[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_BFLOAT16, OG_UNDEFINED};

/* The loads and stores a kernel is bound to (k->impl), or without a binding those of t; NULL
 * when the kernel has none for t. */
static const og_elem_io *io_bound(const og_kernel_ctx *k, og_dtype t)
{
    return k->impl ? (const og_elem_io *)k->impl : og_elem_io_of(t);
}

/* DFT and STFT: the signal's float type, in which they write too. */
static const void *select_signal(const og_node *n, og_dtype t)
{
    (void)n;
    return og_dtype_is_float(t) ? og_elem_io_of(t) : NULL;
}

/* The windows and MelWeightMatrix: an integer size (input 0) and the output_datatype
 * attribute's stores. */
static const void *select_generated(const og_node *n, og_dtype t)
{
    const og_signal_params *p = n->params;
    return t == OG_INT32 || t == OG_INT64 ? og_elem_io_of(p->out_dtype) : NULL;
}

static og_op_ctx op_ctx_of(const og_kernel_ctx *k)
{
    og_op_ctx c = {k->node, k->alloc, NULL, true};
    return c;
}

/* cos and sin of 2 pi j / L, j < L. */
typedef struct twiddles {
    int64_t L;
    double *cs, *sn;
} twiddles;

static og_status twiddles_make(const og_kernel_ctx *k, int64_t L, twiddles *t)
{
    size_t bytes;
    t->L = L;
    t->cs = NULL;
    if (L > ((int64_t)1 << 40) || !og_mul_size((size_t)L, 2 * sizeof(double), &bytes))
        return og_kernel_error(k, OG_ERR_SHAPE, "a transform of %lld is too long", (long long)L);
    t->cs = og_malloc(k->alloc, bytes);
    if (!t->cs)
        return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for a transform of %lld",
                               (long long)L);
    t->sn = t->cs + L;
    for (int64_t j = 0; j < L; j++) {
        /* exact at the quarter turns, so that the result of a 4-point transform is exact */
        int64_t q = 4 * j;
        if (q % L == 0) {
            int64_t m = (q / L) % 4;
            t->cs[j] = m == 0 ? 1 : m == 2 ? -1 : 0;
            t->sn[j] = m == 1 ? 1 : m == 3 ? -1 : 0;
        } else {
            double a = 2.0 * OG_PI * (double)j / (double)L;
            t->cs[j] = cos(a);
            t->sn[j] = sin(a);
        }
    }
    return OG_OK;
}

static bool power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

/* In place, length L = 2^m: y_k = sum_n x_n e^{s 2 pi i k n / L}, s = -1 (forward) or +1. */
static void fft_radix2(double *re, double *im, const twiddles *t, int s)
{
    int64_t L = t->L;
    for (int64_t i = 1, j = 0; i < L; i++) {
        int64_t bit = L >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) {
            double a = re[i], b = im[i];
            re[i] = re[j];
            im[i] = im[j];
            re[j] = a;
            im[j] = b;
        }
    }
    for (int64_t len = 2; len <= L; len <<= 1) {
        int64_t half = len / 2, step = L / len;
        for (int64_t i = 0; i < L; i += len)
            for (int64_t q = 0; q < half; q++) {
                double wr = t->cs[q * step], wi = s * t->sn[q * step];
                double *ar = re + i + q, *ai = im + i + q, *br = ar + half, *bi = ai + half;
                double vr = *br * wr - *bi * wi, vi = *br * wi + *bi * wr;
                *br = *ar - vr;
                *bi = *ai - vi;
                *ar += vr;
                *ai += vi;
            }
    }
}

/* One transform: n inputs (xr, xi; the rest of the L are zeros) to bins outputs (yr, yi).
 * Power-of-two lengths go through the FFT in xr/xi (which must hold L values). */
static void transform(double *xr, double *xi, int64_t n, int64_t bins, double *yr, double *yi,
                      const twiddles *t, int s)
{
    int64_t L = t->L;
    if (power_of_two(L)) {
        for (int64_t j = n; j < L; j++) xr[j] = xi[j] = 0;
        fft_radix2(xr, xi, t, s);
        memcpy(yr, xr, (size_t)bins * sizeof *yr);
        memcpy(yi, xi, (size_t)bins * sizeof *yi);
        return;
    }
    for (int64_t q = 0; q < bins; q++) {
        double ar = 0, ai = 0;
        int64_t idx = 0; /* (q j) mod L */
        for (int64_t j = 0; j < n; j++) {
            double c = t->cs[idx], sn = s * t->sn[idx];
            ar += xr[j] * c - xi[j] * sn;
            ai += xr[j] * sn + xi[j] * c;
            idx += q;
            if (idx >= L) idx %= L;
        }
        yr[q] = ar;
        yi[q] = ai;
    }
}

/* Scratch of `per` doubles for each of `parts` workers. */
static double *scratch(const og_kernel_ctx *k, int parts, int64_t per)
{
    size_t n;
    if (!og_mul_size((size_t)parts, (size_t)per, &n) || !og_mul_size(n, sizeof(double), &n))
        return NULL;
    return og_malloc(k->alloc, n);
}

static int workers(const og_kernel_ctx *k, int64_t rows, double cost)
{
    int t = k->threads > 1 ? k->threads : 1;
    if ((double)rows * cost < 32768.0) t = 1;
    return rows < t ? (int)(rows > 0 ? rows : 1) : t;
}

/* ---- DFT ----------------------------------------------------------------------------- */

/* The rows of a DFT: row = (o, i) over the dims before and after the axis. */
typedef struct dft_job {
    const og_elem_io *io; /* the element type's loads and stores (x and y have one dtype) */
    const og_tensor *x;
    og_tensor *y;
    const twiddles *tw;
    double *buf;
    int64_t per, chunk, rows, inner, nx, cx, n, bins;
    int sign;
    double scale;
} dft_job;

/* Worker w's rows. */
static void dft_rows(const dft_job *j, int64_t w)
{
    int64_t L = j->tw->L;
    double *xr = j->buf + w * j->per, *xi = xr + L, *yr = xi + L, *yi = yr + L;
    int64_t end = (w + 1) * j->chunk < j->rows ? (w + 1) * j->chunk : j->rows;
    for (int64_t row = w * j->chunk; row < end; row++) {
        int64_t o = row / j->inner, i = row % j->inner;
        /* x[o, t, i, c] for t < n: every inner * cx elements */
        int64_t at = (o * j->nx * j->inner + i) * j->cx, step = j->inner * j->cx;
        j->io->load(j->x->data, at, step, j->n, xr);
        if (j->cx == 2)
            j->io->load(j->x->data, at + 1, step, j->n, xi);
        else
            for (int64_t t = 0; t < j->n; t++) xi[t] = 0.0;
        transform(xr, xi, j->n, j->bins, yr, yi, j->tw, j->sign);
        for (int64_t q = 0; q < j->bins; q++) {
            yr[q] *= j->scale;
            yi[q] *= j->scale;
        }
        at = (o * j->bins * j->inner + i) * 2;
        j->io->store(j->y->data, at, j->inner * 2, j->bins, yr);
        j->io->store(j->y->data, at + 1, j->inner * 2, j->bins, yi);
    }
}

static og_status k_dft(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                       og_tensor *const *out, int n_out)
{
    const og_signal_params *p = k->params;
    og_op_ctx c = op_ctx_of(k);
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    og_dft_dims dd;
    og_status st = og_dft_dims_of(&c, x, n_in > 1 ? in[1] : NULL, n_in > 2 ? in[2] : NULL, &dd);
    if (st) return st;
    const og_elem_io *io = k->impl ? k->impl : select_signal(k->node, x->dtype);
    if (!io)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "input 0 is %s, not a float type",
                               og_dtype_name(x->dtype));
    int r = x->rank, a = dd.axis;
    int64_t cx = x->dims[r - 1], nx = x->dims[a], L = dd.length, bins = dd.out_length;
    int64_t outer = 1, inner = 1, n = nx < L ? nx : L;
    for (int d = 0; d < a; d++) outer *= x->dims[d];
    for (int d = a + 1; d < r - 1; d++) inner *= x->dims[d];
    int64_t rows = outer * inner;
    if (y->numel == 0 || rows == 0) return OG_OK;
    twiddles tw;
    if ((st = twiddles_make(k, L, &tw))) return st;
    int parts = workers(k, rows, (double)(power_of_two(L) ? L * 8 : n * bins));
    int64_t per = 4 * L;
    double *buf = scratch(k, parts, per);
    if (!buf) {
        og_free(k->alloc, tw.cs);
        return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for %d rows of %lld", parts,
                               (long long)L);
    }
    dft_job job = {io,
                   x,
                   y,
                   &tw,
                   buf,
                   per,
                   (rows + parts - 1) / parts,
                   rows,
                   inner,
                   nx,
                   cx,
                   n,
                   bins,
                   p->inverse ? 1 : -1,
                   p->inverse ? 1.0 / (double)L : 1.0};
    OG_PARALLEL_FOR(k, parts, 1e9, w, { dft_rows(&job, w); });
    og_free(k->alloc, buf);
    og_free(k->alloc, tw.cs);
    return OG_OK;
}

/* ---- STFT ---------------------------------------------------------------------------- */

typedef struct stft_job {
    const og_elem_io *io;
    const og_tensor *x;
    const double *win; /* the window's values, NULL for none */
    og_tensor *y;
    const twiddles *tw;
    double *buf;
    int64_t per, chunk, rows, len, cx, n;
    const og_stft_dims *sd;
} stft_job;

static void stft_rows(const stft_job *j, int64_t w)
{
    int64_t L = j->tw->L, bins = j->sd->bins;
    double *xr = j->buf + w * j->per, *xi = xr + L, *yr = xi + L, *yi = yr + L;
    int64_t end = (w + 1) * j->chunk < j->rows ? (w + 1) * j->chunk : j->rows;
    for (int64_t row = w * j->chunk; row < end; row++) {
        int64_t b = row / j->sd->frames, f = row % j->sd->frames;
        /* the samples inside the signal, times the window; zeros past its end */
        int64_t s0 = f * j->sd->step, in = j->len - s0 < j->n ? j->len - s0 : j->n;
        if (in < 0) in = 0;
        int64_t at = (b * j->len + s0) * j->cx;
        j->io->load(j->x->data, at, j->cx, in, xr);
        if (j->cx == 2) j->io->load(j->x->data, at + 1, j->cx, in, xi);
        for (int64_t t = 0; t < in; t++) {
            double wt = j->win ? j->win[t] : 1.0;
            xr[t] = wt * xr[t];
            xi[t] = j->cx == 2 ? wt * xi[t] : 0.0;
        }
        for (int64_t t = in; t < j->n; t++) xr[t] = xi[t] = 0.0;
        transform(xr, xi, j->n, bins, yr, yi, j->tw, -1);
        j->io->store(j->y->data, row * bins * 2, 2, bins, yr);
        j->io->store(j->y->data, row * bins * 2 + 1, 2, bins, yi);
    }
}

/* Frame f of batch b: samples f * step + j for j < min(window, frame), times window[j]
 * (zeros past the signal's end), into a DFT of length `frame`. */
static og_status k_stft(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                        og_tensor *const *out, int n_out)
{
    og_op_ctx c = op_ctx_of(k);
    const og_tensor *x = in[0], *win = n_in > 2 ? in[2] : NULL;
    og_tensor *y = out[0];
    og_stft_dims sd;
    og_status st = og_stft_dims_of(&c, x, in[1], win, n_in > 3 ? in[3] : NULL, &sd);
    if (st) return st;
    const og_elem_io *io = k->impl ? k->impl : select_signal(k->node, x->dtype);
    if (!io)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "input 0 is %s, not a float type",
                               og_dtype_name(x->dtype));
    if (win && win->dtype != x->dtype)
        return og_kernel_error(k, OG_ERR_TYPE, "the window is %s, the signal %s",
                               og_dtype_name(win->dtype), og_dtype_name(x->dtype));
    int64_t batch = x->dims[0], len = x->dims[1], cx = x->dims[2], L = sd.frame;
    int64_t n = sd.window < L ? sd.window : L, rows = batch * sd.frames;
    if (y->numel == 0) return OG_OK;
    twiddles tw;
    if ((st = twiddles_make(k, L, &tw))) return st;
    int parts = workers(k, rows, (double)(power_of_two(L) ? L * 8 : n * sd.bins));
    int64_t per = 4 * L;
    /* the workers' rows, then the window's n values */
    double *buf = scratch(k, parts, per + (parts ? (n + parts - 1) / parts : 0) + 1);
    if (!buf) {
        og_free(k->alloc, tw.cs);
        return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for %d frames of %lld", parts,
                               (long long)L);
    }
    double *wv = NULL;
    if (win) {
        wv = buf + (int64_t)parts * per;
        io->load(win->data, 0, 1, n, wv);
    }
    stft_job job = {io, x, wv, y, &tw, buf, per, (rows + parts - 1) / parts, rows, len, cx, n, &sd};
    OG_PARALLEL_FOR(k, parts, 1e9, w, { stft_rows(&job, w); });
    og_free(k->alloc, buf);
    og_free(k->alloc, tw.cs);
    return OG_OK;
}

/* ---- windows ------------------------------------------------------------------------- */

/* w_n for n < size over a period N (size when periodic, else size - 1; a window of one
 * symmetric point is 1, as PyTorch's). */
static og_status window(const og_kernel_ctx *k, const og_tensor *const *in, og_tensor *y, double a0,
                        double a1, double a2)
{
    const og_signal_params *p = k->params;
    const og_elem_io *io = io_bound(k, y->dtype);
    int64_t size = y->numel;
    double N = (double)(p->periodic ? size : size - 1), v[256];
    (void)in;
    if (!io)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "the output is %s, not a numeric type",
                               og_dtype_name(y->dtype));
    for (int64_t i0 = 0; i0 < size; i0 += 256) { /* 256 values at a time, then stored */
        int64_t m = size - i0 < 256 ? size - i0 : 256;
        for (int64_t j = 0; j < m; j++) {
            double t = N > 0 ? 2.0 * OG_PI * (double)(i0 + j) / N : 0.0;
            v[j] = N > 0 ? a0 - a1 * cos(t) + a2 * cos(2 * t) : 1.0;
        }
        io->store(y->data, i0, 1, m, v);
    }
    return OG_OK;
}

/* Hann: sin^2(pi n / N) = 0.5 - 0.5 cos(2 pi n / N). */
static og_status k_hann(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                        og_tensor *const *out, int n_out)
{
    return window(k, in, out[0], 0.5, 0.5, 0.0);
}

/* Hamming: alpha - beta cos(2 pi n / N), alpha = 25 / 46, beta = 21 / 46. */
static og_status k_hamming(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                           og_tensor *const *out, int n_out)
{
    return window(k, in, out[0], 25.0 / 46.0, 21.0 / 46.0, 0.0);
}

/* Blackman: 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N). */
static og_status k_blackman(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, int n_out)
{
    return window(k, in, out[0], 0.42, 0.5, 0.08);
}

/* ---- MelWeightMatrix ----------------------------------------------------------------- */

/* Triangles between num_mel_bins + 2 points equally spaced on the mel scale
 * (mel(f) = 2595 log10(1 + f / 700)) from lower to upper edge, each point mapped to the
 * spectrogram bin floor((dft_length + 1) f / sample_rate); triangle i rises from point i to
 * point i + 1 (peak 1) and falls to point i + 2, as the ONNX reference computes it. */
static og_status k_mel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                       og_tensor *const *out, int n_out)
{
    og_tensor *y = out[0];
    const og_elem_io *io = io_bound(k, y->dtype);
    if (!io)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "the output is %s, not a numeric type",
                               og_dtype_name(y->dtype));
    /* the parameters: five scalars read once */
    int64_t mels = og_tensor_get_i64(in[0], 0), len = og_tensor_get_i64(in[1], 0);
    double rate = (double)og_tensor_get_i64(in[2], 0), lo = og_tensor_get_f64(in[3], 0),
           hi = og_tensor_get_f64(in[4], 0);
    int64_t spec = len / 2 + 1;
    if (!(lo >= 0) || !(hi >= lo))
        return og_kernel_error(k, OG_ERR_RUNTIME,
                               "the edges must satisfy 0 <= lower <= upper, got "
                               "%g and %g",
                               lo, hi);
    /* the triangles' points, then the matrix in double (stored once in y's dtype) */
    size_t bytes;
    if (!og_mul_size((size_t)(mels + 2 + y->numel), 8, &bytes))
        return og_kernel_error(k, OG_ERR_SHAPE, "the matrix is too large");
    int64_t *pt = og_malloc(k->alloc, bytes);
    if (!pt) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    double *w = (double *)(pt + mels + 2);
    double mlo = 2595.0 * log10(1.0 + lo / 700.0), mhi = 2595.0 * log10(1.0 + hi / 700.0);
    double step = (mhi - mlo) / (double)(mels + 2);
    for (int64_t i = 0; i < mels + 2; i++) {
        double f = 700.0 * (pow(10.0, ((double)i * step + mlo) / 2595.0) - 1.0);
        double bin = floor((double)(len + 1) * f / rate);
        if (!(bin >= 0 && bin < (double)spec)) { /* NaN too; checked before the cast */
            og_free(k->alloc, pt);
            return og_kernel_error(k, OG_ERR_RUNTIME,
                                   "mel point %lld falls on spectrogram bin %g, outside [0, %lld]: "
                                   "the upper edge is above half the sample rate",
                                   (long long)i, bin, (long long)spec - 1);
        }
        pt[i] = (int64_t)bin;
    }
    for (int64_t i = 0; i < y->numel; i++) w[i] = 0.0;
    for (int64_t i = 0; i < mels; i++) {
        int64_t l = pt[i], m = pt[i + 1], h = pt[i + 2];
        if (m == l)
            w[m * mels + i] = 1.0;
        else
            for (int64_t j = l; j <= m; j++) w[j * mels + i] = (double)(j - l) / (double)(m - l);
        for (int64_t j = m; j < h; j++) w[j * mels + i] = (double)(h - j) / (double)(h - m);
    }
    io->store(y->data, 0, 1, y->numel, w);
    og_free(k->alloc, pt);
    return OG_OK;
}

/* DFT and STFT bind the loads and stores of the signal's float type; the windows and
 * MelWeightMatrix, whose input 0 is an integer size, the stores of output_datatype. */
const og_kernel_def og_cpu_signal[] = {
    {.name = "DFT", .domain = "", .fn = k_dft, .types = types_float, .select = select_signal},
    {.name = "STFT", .domain = "", .fn = k_stft, .types = types_float, .select = select_signal},
    {.name = "HannWindow", .domain = "", .fn = k_hann, .select = select_generated},
    {.name = "HammingWindow", .domain = "", .fn = k_hamming, .select = select_generated},
    {.name = "BlackmanWindow", .domain = "", .fn = k_blackman, .select = select_generated},
    {.name = "MelWeightMatrix", .domain = "", .fn = k_mel, .select = select_generated},
    {.name = NULL},
};
