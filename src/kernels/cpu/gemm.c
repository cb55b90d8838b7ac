/* gemm.c: BLAS-backed matrix products (see gemm.h): oneDNN's sgemm for float32 when the build
 * found it (OG_HAVE_DNNL), OpenBLAS otherwise and for float64. */
#include <cblas.h>
#include <stdint.h>
#include <string.h>
#ifdef OG_HAVE_DNNL
#include <dnnl.h>
#endif

#include "kernels/cpu/gemm.h"

/* OpenBLAS's and oneDNN's OpenMP builds size their parallel regions from the calling
 * thread's nthreads-var (omp_set_num_threads; a per-thread setting, not a process one).
 * The session's count is set for one call and the caller's own value put back after, so
 * a program that uses OpenMP on the same thread keeps its setting. */
/* Products of fewer multiply-adds than this run on one thread: a BLAS parallel region costs
 * tens of microseconds when waiting threads block (ResNet-18's 1000x512 classifier at batch
 * 1: 0.09 ms on one thread, 0.13 on two), more than splitting such a product saves. */
#define GEMM_PAR_MIN 4194304.0

static int set_threads(const og_kernel_ctx *k, double work)
{
#ifdef _OPENMP
    int prev = omp_get_max_threads();
    int t = k && k->threads > 0 ? k->threads : 1;
    if (work < GEMM_PAR_MIN || (k && og_workers_poll(k->workers))) t = 1;
    if (!omp_in_parallel()) omp_set_num_threads(t);
    return prev;
#else
    (void)k, (void)work;
    return 1;
#endif
}

static void restore_threads(int prev)
{
#ifdef _OPENMP
    if (!omp_in_parallel()) omp_set_num_threads(prev);
#else
    (void)prev;
#endif
}

/* Whether OpenBLAS runs its generic kernels on a CPU that has AVX2.  OpenBLAS chooses its
 * kernels when it loads, by the CPU's model number; a model its version does not know gets
 * the SSE3 kernels of the Pentium 4 ("Prescott"): Debian's 0.3.21 on Intel's 5th-generation
 * Xeon (family 6, model 207).  There an MLP's products on two threads took 2.4-2.6 ms
 * against 0.73 with OpenBLAS told its AVX-512 kernels (OPENBLAS_CORETYPE=SkylakeX) and 0.76
 * with oneDNN, which chooses by the CPU's features.  Then oneDNN does every float product. */
static bool blas_generic(void)
{
#if defined(OG_HAVE_DNNL) && defined(OG_CPU_X86)
    static const char *const tuned[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake",
                                        "SapphireRapids"};
    if (og_cpu_isa() < 1) return false;
    const char *core = openblas_get_corename();
    for (size_t i = 0; core && i < sizeof tuned / sizeof tuned[0]; i++)
        if (strcmp(core, tuned[i]) == 0) return false;
    return true;
#else
    return false;
#endif
}

/* One row of C (a classifier on one image): a matrix-vector product, c = op(B)ᵀ · a.  The
 * GEMM would copy (pack) all of B for it at every call, a pass more over the largest
 * operand.  With beta 0 C is cleared first: BLAS may scale what C held by 0, and 0 · NaN
 * (C's memory is not initialized) is NaN. */
#define GEMV_ROW(gemv)                                                                             \
    do {                                                                                           \
        if (beta == 0)                                                                             \
            for (int64_t j = 0; j < n; j++) c[j] = 0;                                              \
        int prev = set_threads(k, (double)n * (double)kk);                                         \
        if (trans_b) /* B [n, kk] */                                                               \
            gemv(CblasRowMajor, CblasNoTrans, (blasint)n, (blasint)kk, alpha, b, (blasint)ldb, a,  \
                 (blasint)(trans_a ? lda : 1), beta, c, 1);                                        \
        else /* B [kk, n] */                                                                       \
            gemv(CblasRowMajor, CblasTrans, (blasint)kk, (blasint)n, alpha, b, (blasint)ldb, a,    \
                 (blasint)(trans_a ? lda : 1), beta, c, 1);                                        \
        restore_threads(prev);                                                                     \
    } while (0)

/* A product on a session's workers (core.h: og_workers): C cut into parts along M or N,
 * each part a one-thread product, the parts claimed by the caller and the workers.  BLAS's
 * own threads (OpenMP's) stay idle: beside workers that poll between jobs they made three
 * threads spinning on two cores.  The part cut along N repacks all of A, along M all of
 * B: the cut is along the dimension whose other operand is smaller. */
typedef void gemm_f32_fn(const og_kernel_ctx *k, bool trans_a, bool trans_b, int64_t m, int64_t n,
                         int64_t kk, float alpha, const float *a, int64_t lda, const float *b,
                         int64_t ldb, float beta, float *c, int64_t ldc);
typedef void gemm_f64_fn(const og_kernel_ctx *k, bool trans_a, bool trans_b, int64_t m, int64_t n,
                         int64_t kk, double alpha, const double *a, int64_t lda, const double *b,
                         int64_t ldb, double beta, double *c, int64_t ldc);

typedef struct gemm_split {
    og_kernel_ctx one; /* the caller's context on one thread, without workers */
    gemm_f32_fn *f32;  /* the one-thread product, of this type or */
    gemm_f64_fn *f64;  /* of this */
    bool trans_a, trans_b, along_m;
    int64_t m, n, kk, lda, ldb, ldc, step; /* parts of `step` rows (along_m) or columns */
    double alpha, beta;
    const void *a, *b;
    void *c;
} gemm_split;

/* parts of at least this many multiply-adds, of a multiple of 16 rows or columns */
#define GEMM_PART_MIN 1048576.0
/* one part a thread from this many multiply-adds a part (gemm_on_workers) */
#define GEMM_PART_ONE 33554432.0

static void gemm_part(void *ctx, int64_t p0, int64_t p1, int slot)
{
    const gemm_split *g = ctx;
    (void)slot;
    const int64_t len = g->along_m ? g->m : g->n;
    const int64_t i0 = p0 * g->step, i1 = p1 * g->step < len ? p1 * g->step : len;
    if (i0 >= i1) return;
    /* where part i0 starts in A (along M) or B (along N), and in C */
    const int64_t ao = g->along_m ? (g->trans_a ? i0 : i0 * g->lda) : 0;
    const int64_t bo = g->along_m ? 0 : (g->trans_b ? i0 * g->ldb : i0);
    const int64_t co = g->along_m ? i0 * g->ldc : i0;
    const int64_t pm = g->along_m ? i1 - i0 : g->m, pn = g->along_m ? g->n : i1 - i0;
    if (g->f32)
        g->f32(&g->one, g->trans_a, g->trans_b, pm, pn, g->kk, (float)g->alpha,
               (const float *)g->a + ao, g->lda, (const float *)g->b + bo, g->ldb, (float)g->beta,
               (float *)g->c + co, g->ldc);
    else
        g->f64(&g->one, g->trans_a, g->trans_b, pm, pn, g->kk, g->alpha, (const double *)g->a + ao,
               g->lda, (const double *)g->b + bo, g->ldb, g->beta, (double *)g->c + co, g->ldc);
}

/* Runs C = alpha * op(A) * op(B) + beta * C in parts on k's workers, each by f32 (float
 * operands) or f64 (double), when k has workers and the product is worth splitting (false:
 * the caller computes it). */
static bool gemm_on_workers(const og_kernel_ctx *k, gemm_f32_fn *f32, gemm_f64_fn *f64,
                            bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t kk,
                            double alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                            double beta, void *c, int64_t ldc)
{
    const double work = (double)m * (double)n * (double)kk;
    /* not lowered for polling workers (og_par_min): each part repacks an operand, and the
     * MLP's training step on two threads took 6 % longer with products of 256 Ki
     * multiply-adds cut */
    if (!k || !k->workers || k->threads < 2 || work < GEMM_PAR_MIN) return false;
    const bool along_m = n < m;
    const int64_t len = along_m ? m : n;
    /* one part a thread where the workers poll (og_workers_poll: each starts at once) and
     * the operand every part packs again is a transposed one (its packing the costly kind)
     * or a part is long (GEMM_PART_ONE): a transformer block's training step on two threads
     * (its weight gradients' and input gradients' products) 0.974 of its time with one part
     * a thread everywhere, ResNet-18's 1.006, MobileNet-v2's 0.94-1.02 (noisy), but the MLP's
     * untransposed 128 x 512 x 784 inference product 2 % slower; else two where each keeps
     * GEMM_PART_MIN, so that a thread that wakes late finds half its share left */
    const bool shared_t = along_m ? trans_b : trans_a;
    const bool one =
        og_workers_poll(k->workers) && (shared_t || work / (double)k->threads >= GEMM_PART_ONE);
    int64_t parts = (one ? 1 : 2) * (int64_t)k->threads;
    if (work / (double)parts < GEMM_PART_MIN) parts = k->threads;
    int64_t step = (len + parts - 1) / parts;
    step = (step + 15) / 16 * 16;
    if (step >= len) return false;
    gemm_split g = {.one = *k, .f32 = f32, .f64 = f64, .trans_a = trans_a, .trans_b = trans_b};
    g.one.threads = 1;
    g.one.workers = NULL;
    g.along_m = along_m;
    g.m = m, g.n = n, g.kk = kk, g.step = step;
    g.lda = lda, g.ldb = ldb, g.ldc = ldc;
    g.alpha = alpha, g.beta = beta;
    g.a = a, g.b = b, g.c = c;
    og_par_range(k, k->threads, (len + step - 1) / step, 1, gemm_part, &g);
    return true;
}

void og_gemm_f32_blas(const og_kernel_ctx *k, bool trans_a, bool trans_b, int64_t m, int64_t n,
                      int64_t kk, float alpha, const float *a, int64_t lda, const float *b,
                      int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (m == 0 || n == 0) return;
    if (gemm_on_workers(k, og_gemm_f32_blas, NULL, trans_a, trans_b, m, n, kk, alpha, a, lda, b,
                        ldb, beta, c, ldc))
        return;
    if (m == 1 && kk > 0) {
        GEMV_ROW(cblas_sgemv);
        return;
    }
    int prev = set_threads(k, (double)m * (double)n * (double)kk);
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n, (blasint)kk, alpha, a,
                (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
    restore_threads(prev);
}

void og_gemm_f32(const og_kernel_ctx *k, bool trans_a, bool trans_b, int64_t m, int64_t n,
                 int64_t kk, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                 float beta, float *c, int64_t ldc)
{
    if (og_gemm_small_f32(k, trans_a, trans_b, m, n, kk, alpha, a, lda, b, ldb, beta, c, ldc))
        return;
    if (gemm_on_workers(k, og_gemm_f32, NULL, trans_a, trans_b, m, n, kk, alpha, a, lda, b, ldb,
                        beta, c, ldc))
        return;
#ifdef OG_HAVE_DNNL
    /* oneDNN where it measured faster than OpenBLAS on this project's shapes: one thread,
     * and no thin or small product (with two threads and for thin products OpenBLAS won) */
    bool one_thread = !k || k->threads <= 1;
#ifdef _OPENMP
    one_thread = one_thread || omp_in_parallel();
#endif
    bool large = one_thread && m >= 32 && n >= 32 && kk >= 32 &&
                 (double)m * (double)n * (double)kk >= 262144.0;
    if ((large || blas_generic()) && m <= INT32_MAX && n <= INT32_MAX && kk <= INT32_MAX) {
        int prev = set_threads(k, (double)m * (double)n * (double)kk);
        dnnl_status_t ds = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, kk, alpha, a,
                                      lda, b, ldb, beta, c, ldc);
        restore_threads(prev);
        if (ds == dnnl_success) return;
    }
#endif
    og_gemm_f32_blas(k, trans_a, trans_b, m, n, kk, alpha, a, lda, b, ldb, beta, c, ldc);
}

void og_gemm_f64(const og_kernel_ctx *k, bool trans_a, bool trans_b, int64_t m, int64_t n,
                 int64_t kk, double alpha, const double *a, int64_t lda, const double *b,
                 int64_t ldb, double beta, double *c, int64_t ldc)
{
    if (m == 0 || n == 0) return;
    if (gemm_on_workers(k, NULL, og_gemm_f64, trans_a, trans_b, m, n, kk, alpha, a, lda, b, ldb,
                        beta, c, ldc))
        return;
    if (m == 1 && kk > 0) {
        GEMV_ROW(cblas_dgemv);
        return;
    }
    int prev = set_threads(k, (double)m * (double)n * (double)kk);
    cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n, (blasint)kk, alpha, a,
                (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
    restore_threads(prev);
}
