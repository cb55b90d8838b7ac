/* kernel_util.c: helpers shared by the CPU kernels. */
#include <string.h>
#include <unistd.h>

#include "kernels/cpu/kernel.h"

void og_par_range(const og_kernel_ctx *k, int threads, int64_t items, int64_t grain, og_range_fn fn,
                  void *ctx)
{
    if (items <= 0) return;
    if (grain < 1) grain = 1;
    if (threads > k->threads) threads = k->threads;
    if (threads < 2 || items <= grain) {
        fn(ctx, 0, items, 0);
        return;
    }
    if (k->workers) {
        og_workers_run(k->workers, threads, items, grain, fn, ctx);
        return;
    }
#ifdef _OPENMP
    const int64_t chunks = (items + grain - 1) / grain;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int64_t c = 0; c < chunks; c++)
        fn(ctx, c * grain, c * grain + grain < items ? c * grain + grain : items,
           omp_get_thread_num());
#else
    fn(ctx, 0, items, 0);
#endif
}

double og_par_min(const og_kernel_ctx *k, double min)
{
    return k && og_workers_poll(k->workers) ? min / OG_POLL_PAR_DIV : min;
}

double og_par_min_stream(const og_kernel_ctx *k)
{
    return k && og_workers_poll(k->workers) ? OG_PAR_MIN_STREAM / OG_POLL_PAR_DIV_STREAM
                                            : OG_PAR_MIN_STREAM;
}

void og_par_for(const og_kernel_ctx *k, int64_t n, double work_per_item, double min_work,
                og_range_fn fn, void *ctx)
{
    if (n <= 0) return;
    const double lim =
        min_work == OG_PAR_MIN_STREAM ? og_par_min_stream(k) : og_par_min(k, min_work);
    int threads = (double)n * work_per_item > lim ? k->threads : 1;
    if (threads > n) threads = (int)n;
    if (threads < 2) {
        fn(ctx, 0, n, 0);
        return;
    }
    /* two chunks a thread where there are items enough: a thread that starts late finds
     * half its share still there */
    const int64_t parts = n >= 2 * (int64_t)threads ? 2 * (int64_t)threads : threads;
    og_par_range(k, threads, n, (n + parts - 1) / parts, fn, ctx);
}

void og_strides(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

void og_broadcast_strides(int in_rank, const int64_t *in_dims, int out_rank,
                          const int64_t *out_dims, int64_t *strides)
{
    int64_t s = 1;
    int off = out_rank - in_rank;
    for (int i = out_rank - 1; i >= 0; i--) {
        if (i < off) {
            strides[i] = 0;
            continue;
        }
        int64_t d = in_dims[i - off];
        strides[i] = (d == 1 && out_dims[i] != 1) ? 0 : s;
        s *= d;
    }
}

void og_index_init(og_index_iter *it, int rank, const int64_t *dims)
{
    it->rank = rank;
    memcpy(it->dims, dims, (size_t)rank * sizeof *dims);
    memset(it->idx, 0, sizeof it->idx);
}

bool og_index_next(og_index_iter *it)
{
    for (int i = it->rank - 1; i >= 0; i--) {
        if (++it->idx[i] < it->dims[i]) return true;
        it->idx[i] = 0;
    }
    return false;
}

/* Widen a 16-bit float tensor into float t (same shape), or round t back into h. */
static void half_to_f32(const og_tensor *h, og_tensor *t)
{
    const uint16_t *s = h->data;
    float *d = t->data;
    if (h->dtype == OG_FLOAT16)
        for (int64_t i = 0; i < h->numel; i++) d[i] = og_half_to_float(s[i]);
    else
        for (int64_t i = 0; i < h->numel; i++) d[i] = og_bfloat16_to_float(s[i]);
}

static void f32_to_half(const og_tensor *t, og_tensor *h)
{
    const float *s = t->data;
    uint16_t *d = h->data;
    if (h->dtype == OG_FLOAT16)
        for (int64_t i = 0; i < h->numel; i++) d[i] = og_float_to_half(s[i]);
    else
        for (int64_t i = 0; i < h->numel; i++) d[i] = og_float_to_bfloat16(s[i]);
}

static og_status via_f32(const og_kernel_ctx *k, const og_kernel_ctx *call, og_kernel_fn fn,
                         const og_tensor *const *in, int n_in, og_tensor *const *out, int n_out);

og_status og_kernel_via_f32(const og_kernel_ctx *k, og_kernel_fn fn, const og_tensor *const *in,
                            int n_in, og_tensor *const *out, int n_out)
{
    return via_f32(k, k, fn, in, n_in, out, n_out);
}

const og_float_impl *og_float_impl_of(const og_float_impl *impls, og_dtype t)
{
    switch (t) {
    case OG_FLOAT: return &impls[0];
    case OG_DOUBLE: return &impls[1];
    case OG_FLOAT16: return &impls[2];
    case OG_BFLOAT16: return &impls[3];
    default: return NULL;
    }
}

og_status og_kernel_via_f32_bound(const og_kernel_ctx *k, const og_float_impl *im, og_kernel_fn fn,
                                  const og_tensor *const *in, int n_in, og_tensor *const *out,
                                  int n_out)
{
    og_kernel_ctx call = *k;
    call.impl = im->f32;
    return via_f32(k, &call, fn, in, n_in, out, n_out);
}

og_status og_kernel_via_f32_unbound(const og_kernel_ctx *k, og_kernel_fn fn,
                                    const og_tensor *const *in, int n_in, og_tensor *const *out,
                                    int n_out)
{
    og_kernel_ctx call = *k;
    call.impl = NULL;
    return via_f32(k, &call, fn, in, n_in, out, n_out);
}

/* og_kernel_via_f32, calling fn with context `call` (k's, or k's with a float32 binding). */
static og_status via_f32(const og_kernel_ctx *k, const og_kernel_ctx *call, og_kernel_fn fn,
                         const og_tensor *const *in, int n_in, og_tensor *const *out, int n_out)
{
    enum { MAX_IO = 8 };
    const og_tensor *ins[MAX_IO] = {0};
    og_tensor *outs[MAX_IO] = {0}, *tmp[2 * MAX_IO] = {0};
    og_status st = OG_OK;
    if (n_in > MAX_IO || n_out > MAX_IO)
        return og_kernel_error(k, OG_ERR_INTERNAL, "too many tensors to widen");
    for (int i = 0; i < n_in + n_out && !st; i++) {
        const og_tensor *t = i < n_in ? in[i] : out[i - n_in];
        if (i < n_in)
            ins[i] = t;
        else
            outs[i - n_in] = (og_tensor *)t;
        if (!t || !og_is_half(t->dtype)) continue;
        st = og_tensor_alloc(OG_FLOAT, t->rank, t->dims, k->alloc, &tmp[i]);
        if (st) break;
        if (i < n_in) {
            half_to_f32(t, tmp[i]);
            ins[i] = tmp[i];
        } else {
            outs[i - n_in] = tmp[i];
        }
    }
    if (!st) st = fn(call, ins, n_in, outs, n_out);
    for (int j = 0; j < n_out && !st; j++)
        if (tmp[n_in + j]) f32_to_half(tmp[n_in + j], out[j]);
    for (int i = 0; i < n_in + n_out; i++) og_tensor_free(tmp[i]);
    return st;
}

int og_cpu_isa(void)
{
#ifdef OG_CPU_X86
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) return 2;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 1;
#endif
    return 0;
}

int64_t og_cpu_l2_bytes(void)
{
#ifdef _SC_LEVEL2_CACHE_SIZE
    long b = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return b > 0 ? (int64_t)b : 0;
#else
    return 0;
#endif
}

/* ---- typed element loads and stores (og_elem_io) -------------------------------------- */

/* double -> integer as og_tensor_set_f64 converts: NaN gives 0, out-of-range values
 * saturate (C leaves both undefined). */
#define OG_SAT(T, lo, hi)                                                                          \
    (v != v ? (T)0 : v <= (double)(lo) ? (T)(lo) : v >= (double)(hi) ? (T)(hi) : (T)v)

#define OG_ELEM_IO(name, T, to_double, from_double)                                                \
    static void load_##name(const void *x, int64_t off, int64_t stride, int64_t n, double *d)      \
    {                                                                                              \
        const T *p = (const T *)x + off;                                                           \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T e = p[i * stride];                                                                   \
            d[i] = (to_double);                                                                    \
        }                                                                                          \
    }                                                                                              \
    static void store_##name(void *y, int64_t off, int64_t stride, int64_t n, const double *d)     \
    {                                                                                              \
        T *p = (T *)y + off;                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                          \
            double v = d[i];                                                                       \
            p[i * stride] = (from_double);                                                         \
        }                                                                                          \
    }

OG_ELEM_IO(f32, float, (double)e, (float)v)
OG_ELEM_IO(f64, double, e, v)
OG_ELEM_IO(f16, uint16_t, (double)og_half_to_float(e), og_float_to_half((float)v))
OG_ELEM_IO(bf16, uint16_t, (double)og_bfloat16_to_float(e), og_float_to_bfloat16((float)v))
OG_ELEM_IO(i8, int8_t, (double)e, OG_SAT(int8_t, INT8_MIN, INT8_MAX))
OG_ELEM_IO(i16, int16_t, (double)e, OG_SAT(int16_t, INT16_MIN, INT16_MAX))
OG_ELEM_IO(i32, int32_t, (double)e, OG_SAT(int32_t, INT32_MIN, INT32_MAX))
OG_ELEM_IO(i64, int64_t, (double)e, OG_SAT(int64_t, INT64_MIN, INT64_MAX))
OG_ELEM_IO(u8, uint8_t, (double)e, OG_SAT(uint8_t, 0, UINT8_MAX))
OG_ELEM_IO(u16, uint16_t, (double)e, OG_SAT(uint16_t, 0, UINT16_MAX))
OG_ELEM_IO(u32, uint32_t, (double)e, OG_SAT(uint32_t, 0, UINT32_MAX))
OG_ELEM_IO(u64, uint64_t, (double)e, OG_SAT(uint64_t, 0, UINT64_MAX))
OG_ELEM_IO(b8, uint8_t, (double)e, (uint8_t)(v != 0))
#undef OG_ELEM_IO
#undef OG_SAT

#define OG_IO(t, name)                                                                             \
    {                                                                                              \
        t, load_##name, store_##name                                                               \
    }
const og_elem_io og_elem_ios[OG_ELEM_IO_N] = {
    OG_IO(OG_FLOAT, f32), OG_IO(OG_DOUBLE, f64), OG_IO(OG_FLOAT16, f16), OG_IO(OG_BFLOAT16, bf16),
    OG_IO(OG_INT8, i8),   OG_IO(OG_INT16, i16),  OG_IO(OG_INT32, i32),   OG_IO(OG_INT64, i64),
    OG_IO(OG_UINT8, u8),  OG_IO(OG_UINT16, u16), OG_IO(OG_UINT32, u32),  OG_IO(OG_UINT64, u64),
    OG_IO(OG_BOOL, b8)};
#undef OG_IO

const og_elem_io *og_elem_io_of(og_dtype t)
{
    for (int i = 0; i < OG_ELEM_IO_N; i++)
        if (og_elem_ios[i].dtype == t) return &og_elem_ios[i];
    return NULL;
}
