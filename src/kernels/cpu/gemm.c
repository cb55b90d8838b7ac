/* gemm.c: BLAS-backed matrix products (see gemm.h). */
#include <cblas.h>

#include "kernels/cpu/gemm.h"

static void set_threads(const og_kernel_ctx *k)
{
#ifdef _OPENMP
    if (!omp_in_parallel()) omp_set_num_threads(k && k->threads > 0 ? k->threads : 1);
#else
    (void)k;
#endif
}

void og_gemm_f32(const og_kernel_ctx *k, bool trans_a, bool trans_b, int64_t m, int64_t n,
                 int64_t kk, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                 float beta, float *c, int64_t ldc)
{
    if (m == 0 || n == 0) return;
    set_threads(k);
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n, (blasint)kk, alpha, a,
                (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
}

void og_gemm_f64(const og_kernel_ctx *k, bool trans_a, bool trans_b, int64_t m, int64_t n,
                 int64_t kk, double alpha, const double *a, int64_t lda, const double *b,
                 int64_t ldb, double beta, double *c, int64_t ldc)
{
    if (m == 0 || n == 0) return;
    set_threads(k);
    cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n, (blasint)kk, alpha, a,
                (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
}
