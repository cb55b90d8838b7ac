/*
 * gemm.h: matrix products for the CPU kernels, through BLAS.  Internal header.
 *
 * Row-major C = alpha * op(A) * op(B) + beta * C, with op(X) = X or Xᵀ.  og_gemm_f32 uses
 * oneDNN's sgemm when the build found it (OG_HAVE_DNNL), for single-threaded products that
 * are not thin or small (where it measured faster than OpenBLAS), and for all of them when
 * OpenBLAS runs its generic kernels on a CPU with AVX2 (a CPU model its version does not
 * know: gemm.c, blas_generic).  The thread count comes from the kernel context (the
 * session's), never from a global setting: with the session's workers (k->workers) a
 * large product is cut into one-thread parts that they share (gemm.c, gemm_on_workers);
 * without them, onnxgrad links OpenBLAS's OpenMP build, which follows the calling thread's
 * OpenMP thread count, and runs single-threaded when called inside a parallel region.
 */
#ifndef OG_GEMM_H
#define OG_GEMM_H

#include "kernels/cpu/kernel.h"

void og_gemm_f32(const og_kernel_ctx *k, bool trans_a, bool trans_b, int64_t m, int64_t n,
                 int64_t kk, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                 float beta, float *c, int64_t ldc);
/* C = alpha * A * op(B) + beta * C for 1 to 8 rows of A (not transposed) and a B of at
 * least 256 Ki values (8 Ki with sums of 64 values or more), on AVX-512: B read once in
 * place (gemm_small.c), where a BLAS packs it first.  Returns false, having done nothing,
 * for other products and CPUs.
 * og_gemm_f32 tries it first. */
bool og_gemm_small_f32(const og_kernel_ctx *k, bool trans_a, bool trans_b, int64_t m, int64_t n,
                       int64_t kk, float alpha, const float *a, int64_t lda, const float *b,
                       int64_t ldb, float beta, float *c, int64_t ldc);
/* A constant B (a model's weights) of at least 4 Ki values for products of 2 to 8 rows of A
 * (a classifier or a squeeze-excite's 1x1 Convs at a small batch), on AVX-512: packed once
 * (og_gemm_small_pack_f32: op(B) [k, n] in panels of 32 columns, zeros past n, k rows each,
 * og_gemm_small_pack_floats(n, k) floats), then C = alpha · A · op(B) +
 * beta · C reads it in one stream (og_gemm_small_packed_f32).  A classifier's B [n, k] read
 * in place went at 60-75 GFLOP/s for 8 rows, the packed one near the SGEMM peak.
 * og_gemm_small_packs: whether these apply to that product. */
bool og_gemm_small_packs(int64_t m, int64_t n, int64_t kk);
int64_t og_gemm_small_pack_floats(int64_t n, int64_t kk);
void og_gemm_small_pack_f32(bool trans_b, int64_t n, int64_t kk, const float *b, int64_t ldb,
                            float *bp);
void og_gemm_small_packed_f32(const og_kernel_ctx *k, int64_t m, int64_t n, int64_t kk, float alpha,
                              const float *a, int64_t lda, const float *bp, float beta, float *c,
                              int64_t ldc);
/* One product of a batch of small ones (attention's heads: a batched MatMul or Einsum),
 * C [m, n] = A · Bᵀ with B stored [n, k] (Q·Kᵀ and its gradients), C overwritten, on
 * AVX-512 (gemm_batch.c): A read in place, Bᵀ moved into a panel on the stack 32 columns
 * at a time by register transposes; no BLAS call.  og_gemm_batch_applies: whether it takes
 * a product of these sizes and layouts (B transposed and A not, rows a multiple of 8,
 * columns of 16, sums of 16 to OG_GEMM_BATCH_MAX_K values, OG_GEMM_BATCH_MAX_WORK
 * multiply-adds at most) on this CPU.  og_gemm_batch_f32 computes others too (op(A) and
 * op(B) either way, any sizes, but sums of at most OG_GEMM_BATCH_MAX_K values when B is
 * transposed: the panel's), as its test does, and returns false, having done nothing,
 * for the rest and on CPUs without AVX-512. */
#define OG_GEMM_BATCH_MAX_K    256
#define OG_GEMM_BATCH_MAX_WORK 524288.0
bool og_gemm_batch_applies(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t kk);
bool og_gemm_batch_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t kk, const float *a,
                       int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc);
/* The same through OpenBLAS always: for callers tuned to its kernels (the convolutions cut
 * their products to the sizes where OpenBLAS's small-matrix kernels apply). */
void og_gemm_f32_blas(const og_kernel_ctx *k, bool trans_a, bool trans_b, int64_t m, int64_t n,
                      int64_t kk, float alpha, const float *a, int64_t lda, const float *b,
                      int64_t ldb, float beta, float *c, int64_t ldc);
void og_gemm_f64(const og_kernel_ctx *k, bool trans_a, bool trans_b, int64_t m, int64_t n,
                 int64_t kk, double alpha, const double *a, int64_t lda, const double *b,
                 int64_t ldb, double beta, double *c, int64_t ldc);

#endif /* OG_GEMM_H */
