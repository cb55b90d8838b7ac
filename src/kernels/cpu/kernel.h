/*
 * kernel.h: what the CPU kernels share.  Internal header.
 *
 * The contract of a kernel, its table entry and how the executor binds it are in
 * src/kernels/kernel.h; the CPU's backend (its tables and allocator) is in registry.c.
 *
 * Threads: k->threads is the session's thread count.  Loops worth splitting (roughly > 32k
 * scalar operations) use og_par_range or og_par_for (below: the session's own workers, core.h),
 * or OG_PARALLEL_FOR, an OpenMP loop whose num_threads clause applies to that loop alone and
 * which runs on one thread beside polling workers (og_workers_poll: OpenMP's threads would
 * poll beside them); BLAS products go to the workers too, or set the calling thread's
 * OpenMP thread count for the call (gemm.c).  Nothing sets a process-wide thread setting.
 */
#ifndef OG_KERNEL_H
#define OG_KERNEL_H

#include <math.h>

#include "kernels/kernel.h"

/* The CPU backend (registry.c). */
extern const og_backend og_cpu_backend;

/* The kernel function of the CPU entry for (domain, name), NULL if none: for tests that
 * call a kernel directly. */
og_kernel_fn og_cpu_kernel_find(const char *domain, const char *name);

/* Common type constraints use the lists of ops/op.h (og_types_float, og_types_numeric). */

/* Parallel loop over [0, n): body sees `i`.  Threads only when n * work_per_item is above
 * min_work, and never more than n. */
#ifdef _OPENMP
#include <omp.h>
#define OG_PARALLEL_FOR_ABOVE(k, n, work_per_item, min_work, i, body)                              \
    do {                                                                                           \
        int64_t og_n__ = (n);                                                                      \
        int og_t__ = ((double)og_n__ * (double)(work_per_item) > (min_work)) ? (k)->threads : 1;   \
        if (og_t__ > og_n__) og_t__ = (int)og_n__;     /* never more threads than items */         \
        if (og_workers_poll((k)->workers)) og_t__ = 1; /* no OpenMP beside polling workers */      \
        if (og_t__ > 1) {                                                                          \
            _Pragma("omp parallel for num_threads(og_t__) schedule(static)") for (int64_t i = 0;   \
                                                                                  i < og_n__; i++) \
            {                                                                                      \
                body                                                                               \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < og_n__; i++) {                                                 \
                body                                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)
#else
#define OG_PARALLEL_FOR_ABOVE(k, n, work_per_item, min_work, i, body)                              \
    do {                                                                                           \
        int64_t og_n__ = (n);                                                                      \
        for (int64_t i = 0; i < og_n__; i++) {                                                     \
            body                                                                                   \
        }                                                                                          \
    } while (0)
#endif
/* Compute-bound loops: threads above 256 Ki units of work (a parallel region costs about
 * 44 us here when waiting threads block, OMP_WAIT_POLICY=passive: more than the work it
 * would split below that). */
#define OG_PAR_MIN_COMPUTE 262144.0
#define OG_PARALLEL_FOR(k, n, work_per_item, i, body)                                              \
    OG_PARALLEL_FOR_ABOVE(k, n, work_per_item, OG_PAR_MIN_COMPUTE, i, body)
/* Memory-bound loops (element-wise ops, reductions, copies), whose work is about one unit
 * per element: a second thread halves a pass over 1 Mi elements (4 MiB of float) by about
 * what waking it costs when waiting threads block.  Measured: a transformer block's 128
 * Ki-element Mul, Div, Add and ReduceSum took 1.7-5.6x longer on two threads than on one,
 * EfficientNet's 400 Ki-element Mul 2.9x longer, its GlobalAveragePools 4-10x. */
#ifndef OG_PAR_MIN_STREAM
#define OG_PAR_MIN_STREAM 1048576.0
#endif

/* The work below which a loop stays on one thread, for `min` measured where a job's
 * threads block between jobs: a fraction of it where the session's workers poll (core.h:
 * og_workers_poll), whose jobs then cost microseconds.  Below the old thresholds, a layer
 * kept on one thread also read what the layer before had written on two: half of it from
 * the other core's cache.  Two threads, per-node sums: MobileNet-v2 8x64x64's Convs 3.13
 * -> 2.78 ms at 1/16 (1/64: 3.25), EfficientNet-B0's squeeze-excite Muls and pools 1.10 ->
 * 0.62 ms at 1/16, 0.49 at 1/64. */
#define OG_POLL_PAR_DIV        16.0
#define OG_POLL_PAR_DIV_STREAM 64.0
double og_par_min(const og_kernel_ctx *k, double min);
/* og_par_min of OG_PAR_MIN_STREAM (memory-bound loops): OG_POLL_PAR_DIV_STREAM below it */
double og_par_min_stream(const og_kernel_ctx *k);

/* fn(ctx, i0, i1, slot) over [0, n) as OG_PARALLEL_FOR_ABOVE splits its loop: threads only
 * when n * work_per_item is above og_par_min(k, min_work) (og_par_min_stream for
 * OG_PAR_MIN_STREAM), never more than n; through og_par_range (the session's workers where
 * it has them), a few chunks a thread. */
void og_par_for(const og_kernel_ctx *k, int64_t n, double work_per_item, double min_work,
                og_range_fn fn, void *ctx);

/* fn(ctx, i0, i1, slot) over [0, items) in chunks of `grain` items, by at most `threads`
 * threads (and k->threads): the session's workers where k has them (core.h: og_workers,
 * whose caller never waits for a worker still asleep), else OpenMP's (chunks handed out
 * dynamically), else the caller alone.  slot < threads names the thread, for per-thread
 * scratch; a thread may get several chunks, not necessarily adjacent. */
void og_par_range(const og_kernel_ctx *k, int threads, int64_t items, int64_t grain, og_range_fn fn,
                  void *ctx);

/* Whether activation a is a clamp a float kernel can apply in registers before its store
 * (Relu: [0, inf), Clip: [lo, hi]; as E_CLIP in unary.c, x < lo ? lo : x > hi ? hi : x,
 * NaN passing), and its bounds. */
static inline bool og_act_clamp_f32(const og_act *a, float *lo, float *hi)
{
    switch (a->kind) {
    case OG_FUSE_RELU:
        *lo = 0.0f;
        *hi = INFINITY;
        return true;
    case OG_FUSE_CLIP:
        *lo = (float)a->lo;
        *hi = (float)a->hi;
        return true;
    default: return false;
    }
}

/* C-order strides of a shape (elements). */
void og_strides(int rank, const int64_t *dims, int64_t *strides);
/* Strides of `in` (rank in_rank) broadcast to out's shape (rank out_rank >= in_rank):
 * 0 where the input dim is 1 (or missing), else its C-order stride. */
void og_broadcast_strides(int in_rank, const int64_t *in_dims, int out_rank,
                          const int64_t *out_dims, int64_t *strides);

/* Iterates a multi-index over a shape; used by kernels that walk broadcast inputs.
 * Typical use: og_index_iter it; og_index_init(&it, rank, dims);
 *              do { ... it.idx[...] ... } while (og_index_next(&it)); */
typedef struct og_index_iter {
    int rank;
    int64_t dims[OG_MAX_RANK];
    int64_t idx[OG_MAX_RANK];
} og_index_iter;
void og_index_init(og_index_iter *it, int rank, const int64_t *dims);
bool og_index_next(og_index_iter *it);

/* Run fn with float32 copies of the float16 and bfloat16 tensors among in[] and out[]: the
 * inputs widened, the outputs computed in float32 and rounded back once.  For kernels
 * whose loops exist for float and double only (at most 8 inputs and 8 outputs). */
og_status og_kernel_via_f32(const og_kernel_ctx *k, og_kernel_fn fn, const og_tensor *const *in,
                            int n_in, og_tensor *const *out, int n_out);
/* Instruction sets beyond the build's baseline, for loops compiled more than once: 2 when
 * the CPU has AVX-512 (F and VL), 1 for AVX2 and FMA, 0 otherwise (and off x86-64). */
int og_cpu_isa(void);
/* The CPU's level-2 cache per core in bytes, as the C library reads it from the CPU (glibc:
 * CPUID, read once when the process starts); 0 when unknown.  For block sizes that depend
 * on it. */
int64_t og_cpu_l2_bytes(void);
#if defined(__GNUC__) && defined(__x86_64__)
#define OG_CPU_X86     1
#define OG_TARGET_AVX2 __attribute__((target("avx2,fma")))
#if defined(__clang__)
#define OG_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx2,fma")))
#else
#define OG_TARGET_AVX512                                                                           \
    __attribute__((target("avx512f,avx512vl,avx2,fma,prefer-vector-width=512")))
#endif
#endif

/* Kernels that read an input plane after plane, each plane a page or a few (at most
 * OG_PREFETCH_PLANE_MAX bytes), from an input larger than the core's L2 (og_cpu_l2_bytes;
 * OG_PREFETCH_INPUT_MIN where unknown), prefetch the next plane into L1 while they compute
 * on one: the hardware's stream prefetcher stays within a page and fetched little of such
 * planes (MobileNet-v2 at 8x64x64, 1 MB L2: its stride-2 depthwise layer read 3 MB of 32x32
 * planes in 0.38 ms on one thread, 0.12 with the prefetch; ResNet-18's MaxPool at 8x64x64
 * 0.099 -> 0.065, on two threads 0.139 -> 0.064).  Where the input was in L2 (one image's
 * planes from the layer before), prefetching gained nothing and lost: with a 2 MB L2 (Xeon
 * model 207), MobileNet-v2 224's 144-channel 56x56 depthwise layers (1.8 MB in) took 0.261
 * and 0.104 ms prefetching against 0.230 and 0.089 without, on one thread (per-node
 * medians of 150 alternating runs); the prefetches' bursts held the line-fill buffers.
 * The depthwise plane loops no longer prefetch (conv_dw.c: since they read planes in place
 * it lost on inputs larger than L2 too); the MaxPool's row loop does. */
#define OG_PREFETCH_PLANE_MAX 16384
#define OG_PREFETCH_INPUT_MIN 1048576.0
static inline bool og_prefetch_planes(int64_t plane_bytes, double input_bytes)
{
    const int64_t l2 = og_cpu_l2_bytes();
    return plane_bytes <= OG_PREFETCH_PLANE_MAX &&
           input_bytes > (l2 > 0 ? (double)l2 : OG_PREFETCH_INPUT_MIN);
}
/* Prefetch [p, p + bytes) into L1, a cache line at a time (only a hint: nothing is read). */
static inline void og_prefetch_l1(const void *p, int64_t bytes)
{
#if defined(__GNUC__)
    for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch((const char *)p + b, 0, 3);
#else
    (void)p, (void)bytes;
#endif
}

/* Apply activation a in place to the n values of dtype t (float or double; others are left
 * as they are) at y: the values the activation op's own kernel computes (unary.c). */
void og_cpu_act(const og_act *a, og_dtype t, void *y, int64_t n);

/* A float64 value converted to an integer type as a C cast compiles on x86-64 (cvttsd2si):
 * the way numpy's astype (the ONNX reference evaluator's cast back of its float results)
 * and onnxruntime's static_cast behave there, defined for every input where C leaves it
 * undefined.  Truncation toward zero; NaN and values outside the instruction's range give
 * its "integer indefinite" (INT32_MIN, INT64_MIN).  The 8- and 16-bit types take the low
 * bits of the 32-bit conversion, uint32 those of the 64-bit one; uint64 converts values
 * from 2^63 up by subtracting 2^63 first.  OG_CVT(T, d) picks the one for type T.  numpy's
 * float64 -> uint32 cast differs (2^32 + 5 gives 0, -inf and NaN 2^31, where its float32
 * cast gives these low bits): Resize, whose reference computes in float64, stores through
 * resize.c's np_cvt_u32 instead; the two are kept apart on purpose. */
static inline int64_t og_cvt_x64(double d)
{
    return d > -9223372036854777856.0 && d < 9223372036854775808.0 ? (int64_t)d : INT64_MIN;
}
static inline int32_t og_cvt_x32(double d)
{
    return d > -2147483649.0 && d < 2147483648.0 ? (int32_t)d : INT32_MIN;
}
static inline uint64_t og_cvt_xu64(double d)
{
    if (d < 9223372036854775808.0) return (uint64_t)og_cvt_x64(d);
    return (uint64_t)og_cvt_x64(d - 9223372036854775808.0) ^ ((uint64_t)1 << 63);
}
#define OG_CVT(T, d)                                                                               \
    ((T) _Generic((T)0, int8_t                                                                     \
                  : og_cvt_x32(d), uint8_t                                                         \
                  : og_cvt_x32(d), int16_t                                                         \
                  : og_cvt_x32(d), uint16_t                                                        \
                  : og_cvt_x32(d), int32_t                                                         \
                  : og_cvt_x32(d), uint32_t                                                        \
                  : og_cvt_x64(d), int64_t                                                         \
                  : og_cvt_x64(d), default                                                         \
                  : og_cvt_xu64(d)))

/* True for float16 and bfloat16. */
static inline bool og_is_half(og_dtype t) { return t == OG_FLOAT16 || t == OG_BFLOAT16; }

/* The binding of a kernel whose loops exist for float32 and float64 and that computes
 * float16 and bfloat16 through float32 (og_kernel_via_f32): for float32 and float64,
 * `loops` is the kernel's own typed loops (of the kernel's own type); for a 16-bit float,
 * `loops` is NULL and `f32` is the binding the kernel runs with on float32 copies.  An
 * entry's table is four of them, for float32, float64, float16 and bfloat16, which
 * OG_FLOAT_IMPLS defines; the entry's select is then og_float_impl_of on that table.  The
 * widening copies read each tensor's dtype (which of them are 16-bit); the computation does
 * not. */
typedef struct og_float_impl {
    const void *loops;
    const struct og_float_impl *f32;
} og_float_impl;
#define OG_FLOAT_IMPLS(name, loops_f32, loops_f64)                                                 \
    static const og_float_impl name[4] = {                                                         \
        {(loops_f32), NULL}, {(loops_f64), NULL}, {NULL, &name[0]}, {NULL, &name[0]}}
/* The entry of such a table for dtype t, NULL for a dtype it lacks. */
const og_float_impl *og_float_impl_of(const og_float_impl *impls, og_dtype t);
/* The binding of this call: k->impl, or without one (a direct call, a run whose dtype was
 * not known at bind time), the table's entry for t; NULL when it has none. */
static inline const og_float_impl *og_float_bound(const og_kernel_ctx *k,
                                                  const og_float_impl *impls, og_dtype t)
{
    return k->impl ? (const og_float_impl *)k->impl : og_float_impl_of(impls, t);
}
/* og_kernel_via_f32 for binding im of a 16-bit float: fn is called with k->impl = im->f32. */
og_status og_kernel_via_f32_bound(const og_kernel_ctx *k, const og_float_impl *im, og_kernel_fn fn,
                                  const og_tensor *const *in, int n_in, og_tensor *const *out,
                                  int n_out);

/* og_kernel_via_f32 for an op bound to a "through float32" marker: fn is called without a
 * binding (k->impl = NULL), so the float32 copies pick their loops. */
og_status og_kernel_via_f32_unbound(const og_kernel_ctx *k, og_kernel_fn fn,
                                    const og_tensor *const *in, int n_in, og_tensor *const *out,
                                    int n_out);

/* Typed loads and stores of one dtype, for kernels that compute in float64 between them
 * (signal, random): load converts n elements of x, from element off every `stride`
 * elements, into doubles (as og_tensor_get_f64 does); store writes n doubles into y the
 * same way in y's dtype (as og_tensor_set_f64 does: floats rounded once, integers saturated,
 * NaN to 0, bool v != 0).  A kernel's select binds the table's entry for a dtype, so the
 * element loops do not switch on it. */
typedef struct og_elem_io {
    og_dtype dtype;
    void (*load)(const void *x, int64_t off, int64_t stride, int64_t n, double *d);
    void (*store)(void *y, int64_t off, int64_t stride, int64_t n, const double *d);
} og_elem_io;
/* float32, float64, float16, bfloat16, the signed and unsigned integers, bool */
enum { OG_ELEM_IO_N = 13 };
extern const og_elem_io og_elem_ios[OG_ELEM_IO_N];
/* The entry for dtype t, NULL for another (string, float8, int4). */
const og_elem_io *og_elem_io_of(og_dtype t);

#endif /* OG_KERNEL_H */
