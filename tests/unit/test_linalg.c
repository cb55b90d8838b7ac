/* test_linalg.c: MatMul, Gemm and Einsum through parse, static and run-time inference and
 * the CPU kernel, against plain reference loops, plus error cases. */
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_panel.h"
#include "unit/node_harness.h"

static uint32_t rng = 12345;
static double rnd(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (double)(rng >> 8) / (double)(1u << 24) * 2.0 - 1.0;
}

/* Run `op` (opset) on in[0..n_in-1] with the attributes (up to one without a name, or
 * NULL); *y gets the output (caller frees; NULL when the run fails). */
static og_status run(const char *op, int opset, const og_tensor *const *in, int n_in,
                     const nh_attr *attrs, int threads, og_tensor **y)
{
    nh_node n = {.op = op, .opset = opset, .n_in = n_in, .threads = threads};
    for (int i = 0; i < n_in; i++) n.in[i] = in[i];
    for (int i = 0; attrs && attrs[i].name; i++) n.attrs[i] = attrs[i];
    nh_result r;
    og_status st = nh_run(&n, &r);
    *y = nh_take(&r, 0);
    nh_release(&r);
    return st;
}

static og_tensor *mk(og_dtype dt, int rank, const int64_t *dims)
{
    og_tensor *t = NULL;
    og_tensor_alloc(dt, rank, dims, NULL, &t);
    for (int64_t i = 0; i < t->numel; i++) {
        double v = rnd();
        switch (dt) {
        case OG_FLOAT: ((float *)t->data)[i] = (float)v; break;
        case OG_DOUBLE: ((double *)t->data)[i] = v; break;
        case OG_INT32: ((int32_t *)t->data)[i] = (int32_t)(v * 5); break;
        default: ((int64_t *)t->data)[i] = (int64_t)(v * 5); break;
        }
    }
    return t;
}

/* MatMul [3] x [2,3,4] -> [2,4] and [2,1,2,3] x [3,3,2] -> [2,3,2,2]. */
static void test_matmul(void)
{
    static const og_dtype dts[] = {OG_FLOAT, OG_DOUBLE, OG_INT32, OG_INT64};
    for (int di = 0; di < 4; di++) {
        og_dtype dt = dts[di];
        int64_t da[] = {2, 1, 2, 3}, db[] = {3, 3, 2};
        og_tensor *in[2] = {mk(dt, 4, da), mk(dt, 3, db)}, *y = NULL;
        og_status st = run("MatMul", 13, (const og_tensor *const *)in, 2, NULL, 2, &y);
        CHECKF(!st, "MatMul: %s", og_last_error());
        if (!st) {
            CHECKF(y->rank == 4 && y->dims[0] == 2 && y->dims[1] == 3 && y->dims[2] == 2 &&
                       y->dims[3] == 2,
                   "MatMul shape");
            for (int b0 = 0; b0 < 2; b0++)
                for (int b1 = 0; b1 < 3; b1++)
                    for (int i = 0; i < 2; i++)
                        for (int j = 0; j < 2; j++) {
                            double s = 0;
                            for (int p = 0; p < 3; p++)
                                s += og_tensor_get_f64(in[0], (b0 * 2 + i) * 3 + p) *
                                     og_tensor_get_f64(in[1], (b1 * 3 + p) * 2 + j);
                            double got = og_tensor_get_f64(y, ((b0 * 3 + b1) * 2 + i) * 2 + j);
                            CHECKF(fabs(got - s) < 1e-5, "MatMul %s: %g vs %g", og_dtype_name(dt),
                                   got, s);
                        }
        }
        og_tensor_free(y);
        og_tensor_free(in[0]);
        og_tensor_free(in[1]);
    }
    /* 1-D x 3-D and a K mismatch */
    int64_t d1[] = {3}, d3[] = {2, 3, 4}, d4[] = {2, 4, 4};
    og_tensor *a = mk(OG_FLOAT, 1, d1), *b = mk(OG_FLOAT, 3, d3), *c = mk(OG_FLOAT, 3, d4), *y;
    const og_tensor *ab[2] = {a, b}, *ac[2] = {a, c};
    CHECKF(!run("MatMul", 9, ab, 2, NULL, 1, &y) && y->rank == 2 && y->dims[0] == 2 &&
               y->dims[1] == 4,
           "MatMul 1-D x 3-D");
    og_tensor_free(y);
    CHECKF(run("MatMul", 13, ac, 2, NULL, 1, &y) == OG_ERR_SHAPE, "K mismatch not caught");
    og_tensor_free(y);
    /* wrapping int32 products (no UB under -fsanitize=undefined) */
    int64_t d2[] = {1, 2}, d21[] = {2, 1};
    og_tensor *ia = mk(OG_INT32, 2, d2), *ib = mk(OG_INT32, 2, d21);
    ((int32_t *)ia->data)[0] = ((int32_t *)ia->data)[1] = 1 << 30;
    ((int32_t *)ib->data)[0] = ((int32_t *)ib->data)[1] = 4;
    const og_tensor *iab[2] = {ia, ib};
    CHECKF(!run("MatMul", 13, iab, 2, NULL, 1, &y) && ((int32_t *)y->data)[0] == 0, "int wrap");
    og_tensor_free(y);
    og_tensor_free(ia);
    og_tensor_free(ib);
    og_tensor_free(a);
    og_tensor_free(b);
    og_tensor_free(c);
}

/* Gemm with transA, C of shape [M,1], and the opset rules on C. */
static void test_gemm(void)
{
    int64_t da[] = {5, 3}, db[] = {5, 4}, dc[] = {3, 1};
    og_tensor *a = mk(OG_DOUBLE, 2, da), *b = mk(OG_DOUBLE, 2, db), *c = mk(OG_DOUBLE, 2, dc), *y;
    const nh_attr at[] = {NH_INT("transA", 1), NH_FLOAT("alpha", 0.5f), NH_FLOAT("beta", 2), {0}};
    const og_tensor *abc[3] = {a, b, c};
    og_status st = run("Gemm", 11, abc, 3, at, 2, &y);
    CHECKF(!st, "Gemm: %s", og_last_error());
    if (!st)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) {
                double s = 0;
                for (int p = 0; p < 5; p++)
                    s += og_tensor_get_f64(a, p * 3 + i) * og_tensor_get_f64(b, p * 4 + j);
                s = 0.5 * s + 2 * og_tensor_get_f64(c, i);
                CHECKF(fabs(og_tensor_get_f64(y, i * 4 + j) - s) < 1e-9, "Gemm value");
            }
    og_tensor_free(y);
    const og_tensor *ab[2] = {a, b};
    CHECKF(run("Gemm", 9, ab, 2, at, 1, &y) == OG_ERR_MODEL, "Gemm-9 without C accepted");
    og_tensor_free(y);
    const og_tensor *ba[3] = {b, a, c};
    CHECKF(run("Gemm", 13, ba, 3, NULL, 1, &y) == OG_ERR_SHAPE, "Gemm K mismatch accepted");
    og_tensor_free(y);
    og_tensor_free(a);
    og_tensor_free(b);
    og_tensor_free(c);
}

/* Gemm of one row (gemm.c computes it as a matrix-vector product): transA and transB,
 * float and double, with and without C. */
static void test_gemm_row(void)
{
    for (int v = 0; v < 16; v++) {
        const int ta = v & 1, tb = (v >> 1) & 1, with_c = (v >> 2) & 1;
        const og_dtype dt = v & 8 ? OG_DOUBLE : OG_FLOAT;
        const int64_t K = 37, N = 21;
        int64_t da[2] = {ta ? K : 1, ta ? 1 : K}, db[2] = {tb ? N : K, tb ? K : N}, dc[2] = {1, N};
        og_tensor *a = mk(dt, 2, da), *b = mk(dt, 2, db), *c = mk(dt, 2, dc), *y = NULL;
        const nh_attr at[] = {NH_INT("transA", ta),
                              NH_INT("transB", tb),
                              NH_FLOAT("alpha", 0.5f),
                              NH_FLOAT("beta", 2),
                              {0}};
        const og_tensor *abc[3] = {a, b, c};
        og_status st = run("Gemm", 13, abc, with_c ? 3 : 2, at, 1 + (v & 1), &y);
        CHECKF(!st, "Gemm row %d: %s", v, og_last_error());
        for (int64_t j = 0; !st && j < N; j++) {
            double s = 0;
            for (int64_t p = 0; p < K; p++)
                s += og_tensor_get_f64(a, p) * og_tensor_get_f64(b, tb ? j * K + p : p * N + j);
            s = 0.5 * s + (with_c ? 2 * og_tensor_get_f64(c, j) : 0);
            CHECKF(fabs(og_tensor_get_f64(y, j) - s) < 1e-5 * (1 + fabs(s)),
                   "Gemm row %d: y[%lld] = %g, expected %g", v, (long long)j,
                   og_tensor_get_f64(y, j), s);
        }
        og_tensor_free(y);
        og_tensor_free(a);
        og_tensor_free(b);
        og_tensor_free(c);
    }
}

/* A constant B packed in panels (og_gemm_small_packs: 2 to 8 rows of A, on AVX-512 CPUs):
 * the products of test_gemm_small from the packed B, against a double sum, C's padding
 * untouched; untransposed, the bits of og_gemm_small_f32 (the same sums in the same order).
 * One row is not packed. */
static void test_gemm_small_packed(void)
{
    static const int64_t shapes[][3] = {{2, 300, 1001}, {3, 1000, 263},  {4, 17, 16384},
                                        {5, 333, 1024}, {8, 1000, 1280}, {7, 513, 517}};
    const bool avx512 = og_cpu_isa() >= 2;
    CHECKF(!og_gemm_small_packs(1, 1000, 1024), "gemm_small_packs: one row packed");
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int v = 0; v < 8; v++) {
            const int64_t m = shapes[si][0], n = shapes[si][1], kk = shapes[si][2];
            const bool tb = v & 1;
            const int threads = v & 4 ? 2 : 1;
            const bool packs = og_gemm_small_packs(m, n, kk);
            CHECKF(packs == avx512, "gemm_small_packs %lldx%lldx%lld: %d on isa %d", (long long)m,
                   (long long)n, (long long)kk, packs, og_cpu_isa());
            if (!packs) continue;
            const int64_t lda = kk + 3, ldb = (tb ? kk : n) + 5, ldc = n + 2;
            const size_t pbytes =
                ((size_t)og_gemm_small_pack_floats(n, kk) * sizeof(float) + 63) / 64 * 64;
            float *a = malloc(sizeof(float) * (size_t)(m * lda));
            float *b = malloc(sizeof(float) * (size_t)((tb ? n : kk) * ldb));
            float *c0 = malloc(sizeof(float) * (size_t)(m * ldc));
            float *c = malloc(sizeof(float) * (size_t)(m * ldc));
            float *cs = malloc(sizeof(float) * (size_t)(m * ldc));
            float *bp = aligned_alloc(64, pbytes);
            CHECKF(a && b && c0 && c && cs && bp, "gemm_small packed: out of memory");
            if (a && b && c0 && c && cs && bp) {
                for (int64_t i = 0; i < m * lda; i++) a[i] = (float)rnd();
                for (int64_t i = 0; i < (tb ? n : kk) * ldb; i++) b[i] = (float)rnd();
                for (int64_t i = 0; i < m * ldc; i++) c0[i] = (float)rnd();
                memcpy(c, c0, sizeof(float) * (size_t)(m * ldc));
                memcpy(cs, c0, sizeof(float) * (size_t)(m * ldc));
                og_kernel_ctx k = {.threads = threads};
                const float alpha = 0.5f, beta = v & 2 ? 2.0f : 0.0f;
                og_gemm_small_pack_f32(tb, n, kk, b, ldb, bp);
                og_gemm_small_packed_f32(&k, m, n, kk, alpha, a, lda, bp, beta, c, ldc);
                int bad = 0;
                for (int64_t i = 0; i < m; i++) {
                    for (int64_t j = 0; j < n; j++) {
                        double s = 0, mag = 0;
                        for (int64_t p = 0; p < kk; p++) {
                            const double t = (double)a[i * lda + p] *
                                             (double)(tb ? b[j * ldb + p] : b[p * ldb + j]);
                            s += t;
                            mag += fabs(t);
                        }
                        const double want = alpha * s + beta * (double)c0[i * ldc + j];
                        if (!(fabs(c[i * ldc + j] - want) <= 2e-6 * (mag + 1) + 1e-6 * fabs(want)))
                            bad++;
                    }
                    for (int64_t j = n; j < ldc; j++) /* the padding of C's rows */
                        if (memcmp(&c[i * ldc + j], &c0[i * ldc + j], sizeof(float))) bad++;
                }
                CHECKF(!bad,
                       "gemm_small packed %lldx%lldx%lld transB %d beta %g threads %d: %d bad",
                       (long long)m, (long long)n, (long long)kk, tb, beta, threads, bad);
                if (!tb) { /* B in place: the same bits */
                    og_gemm_small_f32(&k, false, false, m, n, kk, alpha, a, lda, b, ldb, beta, cs,
                                      ldc);
                    CHECKF(!memcmp(c, cs, sizeof(float) * (size_t)(m * ldc)),
                           "gemm_small packed %lldx%lldx%lld: not the bits of B in place",
                           (long long)m, (long long)n, (long long)kk);
                }
            }
            free(a), free(b), free(c0), free(c), free(cs), free(bp);
        }
}

/* Products of 1 to 8 rows by a large B (gemm_small.c, on AVX-512 CPUs), or a smaller one
 * with sums of 64 values or more (a squeeze-excite's 1x1 Convs at batch 8: 576 x 144 and
 * 144 x 576; 130 x 64, the least it takes): called directly, with leading dimensions wider
 * than the matrices (the padding must stay untouched), columns and sums with partial
 * vectors, alpha, beta with C read or (beta 0) never read (NaN there must not leak), 1 and
 * 2 threads; then through Gemm and MatMul.  Shorter sums of a small B are not taken. */
static void test_gemm_small(void)
{
    static const int64_t shapes[][3] = {
        {2, 300, 1001}, {3, 1000, 263}, {4, 17, 16384},  {5, 333, 1024}, {8, 1000, 1280},
        {8, 64, 4100},  {7, 513, 517},  {1, 1000, 1024}, {1, 331, 1033}, {8, 576, 144},
        {8, 144, 576},  {3, 130, 64},   {1, 16, 700},    {1, 19, 4096}};
    static const int64_t not_taken[][3] = {{8, 480, 20}, {8, 127, 64}, {2, 4000, 63}};
    const bool avx512 = og_cpu_isa() >= 2;
    for (size_t si = 0; si < sizeof not_taken / sizeof not_taken[0]; si++) {
        const int64_t m = not_taken[si][0], n = not_taken[si][1], kk = not_taken[si][2];
        float *a = calloc((size_t)(m * kk), sizeof(float)), *b = calloc((size_t)(n * kk), 4);
        float *c = calloc((size_t)(m * n), sizeof(float));
        og_kernel_ctx k = {.threads = 1};
        CHECKF(a && b && c &&
                   !og_gemm_small_f32(&k, false, true, m, n, kk, 1.0f, a, kk, b, kk, 0.0f, c, n),
               "gemm_small %lldx%lldx%lld: taken", (long long)m, (long long)n, (long long)kk);
        free(a), free(b), free(c);
    }
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int v = 0; v < 8; v++) {
            const int64_t m = shapes[si][0], n = shapes[si][1], kk = shapes[si][2];
            const bool tb = v & 1, with_beta = v & 2;
            const int threads = v & 4 ? 2 : 1;
            const int64_t lda = kk + 3, ldb = (tb ? kk : n) + 5, ldc = n + 2;
            float *a = malloc(sizeof(float) * (size_t)(m * lda));
            float *b = malloc(sizeof(float) * (size_t)((tb ? n : kk) * ldb));
            float *c = malloc(sizeof(float) * (size_t)(m * ldc));
            CHECKF(a && b && c, "gemm_small: out of memory");
            if (!a || !b || !c) {
                free(a), free(b), free(c);
                return;
            }
            for (int64_t i = 0; i < m * lda; i++) a[i] = (float)rnd();
            for (int64_t i = 0; i < (tb ? n : kk) * ldb; i++) b[i] = (float)rnd();
            for (int64_t i = 0; i < m * ldc; i++) c[i] = with_beta ? (float)rnd() : NAN;
            og_kernel_ctx k = {.threads = threads};
            const float alpha = 0.5f, beta = with_beta ? 2.0f : 0.0f;
            const bool took =
                og_gemm_small_f32(&k, false, tb, m, n, kk, alpha, a, lda, b, ldb, beta, c, ldc);
            CHECKF(took == avx512, "gemm_small %lldx%lldx%lld: taken %d on isa %d", (long long)m,
                   (long long)n, (long long)kk, took, og_cpu_isa());
            int bad = 0;
            for (int64_t i = 0; took && i < m; i++) {
                for (int64_t j = 0; j < n; j++) {
                    double s = 0, mag = 0;
                    for (int64_t p = 0; p < kk; p++) {
                        const double t =
                            (double)a[i * lda + p] * (double)(tb ? b[j * ldb + p] : b[p * ldb + j]);
                        s += t;
                        mag += fabs(t);
                    }
                    if (with_beta) continue; /* checked below against a second product */
                    if (!(fabs(c[i * ldc + j] - alpha * s) <= 2e-6 * (mag + 1))) bad++;
                }
                for (int64_t j = n; j < ldc; j++) /* the padding of C's rows */
                    if (!isnan(c[i * ldc + j]) && !with_beta) bad++;
            }
            CHECKF(!bad, "gemm_small %lldx%lldx%lld transB %d beta %g threads %d: %d bad values",
                   (long long)m, (long long)n, (long long)kk, tb, beta, threads, bad);
            if (with_beta && took) { /* C = alpha·AB + 2·C0: against alpha·AB from beta 0 */
                float *c0 = malloc(sizeof(float) * (size_t)(m * ldc));
                float *ab = malloc(sizeof(float) * (size_t)(m * ldc));
                CHECKF(c0 && ab, "gemm_small: out of memory");
                if (c0 && ab) {
                    srand(7);
                    for (int64_t i = 0; i < m * ldc; i++) c0[i] = (float)rand() / RAND_MAX;
                    memcpy(c, c0, sizeof(float) * (size_t)(m * ldc));
                    og_gemm_small_f32(&k, false, tb, m, n, kk, alpha, a, lda, b, ldb, beta, c, ldc);
                    og_gemm_small_f32(&k, false, tb, m, n, kk, alpha, a, lda, b, ldb, 0.0f, ab,
                                      ldc);
                    int bad2 = 0;
                    for (int64_t i = 0; i < m; i++)
                        for (int64_t j = 0; j < ldc; j++) {
                            const double want =
                                j < n ? (double)ab[i * ldc + j] + 2.0 * c0[i * ldc + j]
                                      : (double)c0[i * ldc + j];
                            if (!(fabs(c[i * ldc + j] - want) <= 1e-5 * (fabs(want) + 1))) bad2++;
                        }
                    CHECKF(!bad2, "gemm_small %lldx%lldx%lld transB %d with beta: %d bad values",
                           (long long)m, (long long)n, (long long)kk, tb, bad2);
                }
                free(c0);
                free(ab);
            }
            free(a);
            free(b);
            free(c);
        }
    /* through the ops: Gemm with transB and a C row, MatMul, against the reference */
    for (int v = 0; v < 4; v++) {
        const int tb = v & 1, threads = 1 + (v >> 1);
        const int64_t M = 6, K = 700, N = 400;
        int64_t da[2] = {M, K}, db[2] = {tb ? N : K, tb ? K : N}, dc[1] = {N};
        og_tensor *a = mk(OG_FLOAT, 2, da), *b = mk(OG_FLOAT, 2, db), *c = mk(OG_FLOAT, 1, dc);
        og_tensor *y = NULL, *y2 = NULL;
        const nh_attr at[] = {
            NH_INT("transB", tb), NH_FLOAT("alpha", 0.5f), NH_FLOAT("beta", 2), {0}};
        const og_tensor *abc[3] = {a, b, c};
        og_status st = run("Gemm", 13, abc, 3, at, threads, &y);
        CHECKF(!st, "Gemm small: %s", og_last_error());
        og_status st2 = tb ? OG_OK : run("MatMul", 13, abc, 2, NULL, threads, &y2);
        CHECKF(!st2, "MatMul small: %s", og_last_error());
        int bad = 0;
        for (int64_t i = 0; !st && i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0, mag = 0;
                for (int64_t p = 0; p < K; p++) {
                    const double t = og_tensor_get_f64(a, i * K + p) *
                                     og_tensor_get_f64(b, tb ? j * K + p : p * N + j);
                    s += t;
                    mag += fabs(t);
                }
                const double g = 0.5 * s + 2 * og_tensor_get_f64(c, j);
                if (!(fabs(og_tensor_get_f64(y, i * N + j) - g) <= 2e-6 * (mag + 1))) bad++;
                if (y2 && !(fabs(og_tensor_get_f64(y2, i * N + j) - s) <= 2e-6 * (mag + 1))) bad++;
            }
        CHECKF(!bad, "Gemm/MatMul small, transB %d, %d threads: %d bad values", tb, threads, bad);
        nh_free_tensors((og_tensor *[]){a, b, c, y, y2}, 5);
    }
}

/* Einsum: three operands with a diagonal and a summed-only label, and bad equations. */
/* gemm_batch.c: og_gemm_batch_f32 on every layout (A and B transposed or not, strided rows,
 * sizes that leave tails of rows, columns and sums) against a double reference, C's
 * padding untouched; which products og_gemm_batch_applies takes; and the batched
 * products of an Einsum (B read transposed: Q·Kᵀ's layout) on one and two threads. */
static void test_gemm_batch(void)
{
    static const int64_t shapes[][3] = {{8, 16, 16},  {64, 64, 64}, {24, 48, 33},
                                        {13, 77, 50}, {8, 17, 16},  {40, 96, 256},
                                        {9, 5, 3},    {16, 32, 1},  {128, 64, 64}};
    const bool avx512 = og_cpu_isa() >= 2;
    CHECKF(og_gemm_batch_applies(false, true, 64, 64, 64) == avx512 &&
               og_gemm_batch_applies(false, true, 128, 32, 128) == avx512,
           "gemm_batch: 64x64x64 and 128x32x128 with B transposed not taken");
    static const int64_t no[][3] = {
        {12, 64, 64}, {64, 24, 64}, {64, 64, 8}, {64, 64, 257}, {128, 128, 64}};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        CHECKF(!og_gemm_batch_applies(false, true, no[i][0], no[i][1], no[i][2]),
               "gemm_batch: %lldx%lldx%lld taken", (long long)no[i][0], (long long)no[i][1],
               (long long)no[i][2]);
    /* Bᵀ's panel holds sums of OG_GEMM_BATCH_MAX_K values at most: longer ones refused */
    {
        float one = 1.0f, out = NAN;
        CHECKF(!og_gemm_batch_f32(false, true, 1, 1, OG_GEMM_BATCH_MAX_K + 1, &one, 1, &one, 1,
                                  &out, 1) &&
                   isnan(out),
               "gemm_batch: a transposed B of %d-value sums taken", OG_GEMM_BATCH_MAX_K + 1);
    }
    CHECKF(!og_gemm_batch_applies(true, true, 64, 64, 64) &&
               !og_gemm_batch_applies(false, false, 64, 64, 64),
           "gemm_batch: A transposed or B not: taken");
    for (size_t si = 0; avx512 && si < sizeof shapes / sizeof shapes[0]; si++)
        for (int v = 0; v < 4; v++) {
            const int64_t m = shapes[si][0], n = shapes[si][1], kk = shapes[si][2];
            const bool ta = v & 1, tb = v & 2;
            const int64_t lda = (ta ? m : kk) + 3, ldb = (tb ? kk : n) + 5, ldc = n + 2;
            float *a = malloc(sizeof(float) * (size_t)((ta ? kk : m) * lda));
            float *b = malloc(sizeof(float) * (size_t)((tb ? n : kk) * ldb));
            float *c = malloc(sizeof(float) * (size_t)(m * ldc));
            CHECKF(a && b && c, "gemm_batch: out of memory");
            if (!a || !b || !c) {
                free(a), free(b), free(c);
                return;
            }
            for (int64_t i = 0; i < (ta ? kk : m) * lda; i++) a[i] = (float)rnd();
            for (int64_t i = 0; i < (tb ? n : kk) * ldb; i++) b[i] = (float)rnd();
            for (int64_t i = 0; i < m * ldc; i++) c[i] = NAN;
            CHECKF(og_gemm_batch_f32(ta, tb, m, n, kk, a, lda, b, ldb, c, ldc),
                   "gemm_batch %lldx%lldx%lld: refused", (long long)m, (long long)n, (long long)kk);
            int bad = 0;
            for (int64_t i = 0; i < m; i++) {
                for (int64_t j = 0; j < n; j++) {
                    double s = 0, mag = 0;
                    for (int64_t p = 0; p < kk; p++) {
                        const double t = (double)(ta ? a[p * lda + i] : a[i * lda + p]) *
                                         (double)(tb ? b[j * ldb + p] : b[p * ldb + j]);
                        s += t;
                        mag += fabs(t);
                    }
                    if (!(fabs(c[i * ldc + j] - s) <= 2e-6 * (mag + 1))) bad++;
                }
                for (int64_t j = n; j < ldc; j++) bad += !isnan(c[i * ldc + j]);
            }
            CHECKF(!bad, "gemm_batch %lldx%lldx%lld transA %d transB %d: %d bad values",
                   (long long)m, (long long)n, (long long)kk, ta, tb, bad);
            free(a), free(b), free(c);
        }
    /* Einsum bij,bkj->bik: six products of 64 x 48 x 40 with B transposed */
    int64_t da[] = {6, 64, 40}, db[] = {6, 48, 40};
    og_tensor *in[2] = {mk(OG_FLOAT, 3, da), mk(OG_FLOAT, 3, db)};
    for (int threads = 1; threads <= 2; threads++) {
        og_tensor *y = NULL;
        const nh_attr eq[] = {{.name = "equation", .type = OG_ATTR_STRING, .s = "bij,bkj->bik"},
                              {0}};
        og_status st = run("Einsum", 12, (const og_tensor *const *)in, 2, eq, threads, &y);
        CHECKF(!st && y && y->numel == 6 * 64 * 48, "Einsum bij,bkj->bik: %s", og_last_error());
        int bad = 0;
        for (int64_t bi = 0; !st && y && bi < 6; bi++)
            for (int64_t i = 0; i < 64; i++)
                for (int64_t kx = 0; kx < 48; kx++) {
                    double s = 0, mag = 0;
                    for (int64_t j = 0; j < 40; j++) {
                        const double t = og_tensor_get_f64(in[0], (bi * 64 + i) * 40 + j) *
                                         og_tensor_get_f64(in[1], (bi * 48 + kx) * 40 + j);
                        s += t;
                        mag += fabs(t);
                    }
                    const double got = og_tensor_get_f64(y, (bi * 64 + i) * 48 + kx);
                    bad += !(fabs(got - s) <= 2e-6 * (mag + 1));
                }
        CHECKF(!bad, "Einsum bij,bkj->bik on %d threads: %d bad values", threads, bad);
        og_tensor_free(y);
    }
    og_tensor_free(in[0]);
    og_tensor_free(in[1]);
}

/* Products of a packed A by few columns (gemm_panel.c), called directly: A of 1 to 70 rows
 * (partial panels: their zero rows come out as zeros), sums of 0 to 300 steps (over two
 * blocks of 128 and a partial third), 1 to 49 columns (groups of up to 12, unequal ones),
 * B with a leading dimension wider than its columns, panels [p0, p1) that start past 0
 * into a Ct wider than they are (the rest must stay untouched); against double sums, and
 * the same bits for every split of the panels. */
static void test_gemm_panel(void)
{
    static const int64_t shapes[][3] = {{70, 49, 300},   {32, 16, 256}, {1, 1, 1},   {33, 13, 129},
                                        {64, 25, 0},     {40, 12, 40},  {5, 7, 131}, {48, 27, 200},
                                        {112, 196, 672}, {80, 50, 130}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t m = shapes[si][0], n = shapes[si][1], kk = shapes[si][2];
        const int64_t np = og_panel_count(m), lda = kk + 3, ldb = n + 5, ldc = np * OG_PANEL_MR + 7;
        float *a = malloc(sizeof(float) * (size_t)(m * lda + 1));
        float *b = malloc(sizeof(float) * (size_t)(kk * ldb + 1));
        float *p = malloc(sizeof(float) * (og_panel_floats(m, kk) + 1));
        float *c = malloc(sizeof(float) * (size_t)(n * ldc));
        float *c2 = malloc(sizeof(float) * (size_t)(n * ldc));
        CHECKF(a && b && p && c && c2, "gemm_panel: out of memory");
        if (!a || !b || !p || !c || !c2) {
            free(a), free(b), free(p), free(c), free(c2);
            return;
        }
        for (int64_t i = 0; i < m * lda; i++) a[i] = (float)rnd();
        for (int64_t i = 0; i < kk * ldb; i++) b[i] = (float)rnd();
        for (int64_t i = 0; i < n * ldc; i++) c[i] = c2[i] = NAN;
        og_panel_pack_f32(m, kk, a, lda, p);
        og_panel_gemm_f32(0, np, n, kk, p, b, ldb, c, ldc, NULL);
        int bad = 0;
        for (int64_t j = 0; j < n; j++) {
            for (int64_t i = 0; i < np * OG_PANEL_MR; i++) {
                double s = 0, mag = 0;
                for (int64_t q = 0; i < m && q < kk; q++) {
                    const double t = (double)a[i * lda + q] * (double)b[q * ldb + j];
                    s += t;
                    mag += fabs(t);
                }
                if (!(fabs(c[j * ldc + i] - s) <= 2e-6 * (mag + 1))) bad++;
            }
            for (int64_t i = np * OG_PANEL_MR; i < ldc; i++) bad += !isnan(c[j * ldc + i]);
        }
        CHECKF(!bad, "gemm_panel %lldx%lldx%lld: %d bad values", (long long)m, (long long)n,
               (long long)kk, bad);
        /* panels one at a time, from the last, each into its own columns of c2 (the one
         * before named as the next: prefetched, which changes nothing) */
        for (int64_t pi = np - 1; pi >= 0; pi--)
            og_panel_gemm_f32(pi, pi + 1, n, kk, p, b, ldb, c2 + pi * OG_PANEL_MR, ldc,
                              pi > 0 ? p + (pi - 1) * kk * OG_PANEL_MR : NULL);
        CHECKF(!memcmp(c, c2, sizeof(float) * (size_t)(n * ldc)) || n * ldc == 0,
               "gemm_panel %lldx%lldx%lld: panel by panel differs", (long long)m, (long long)n,
               (long long)kk);
        /* given A's rows (og_panel_gemm_m_f32): a last panel of at most 16 of them by half
         * tiles, its rows 16-31 untouched (NaN); the rows below m the bits above, whole or
         * panel by panel */
        for (int v = 0; v < 2; v++) {
            for (int64_t i = 0; i < n * ldc; i++) c2[i] = NAN;
            if (v == 0)
                og_panel_gemm_m_f32(0, np, n, kk, p, b, ldb, c2, ldc, NULL, m);
            else
                for (int64_t pi = 0; pi < np; pi++)
                    og_panel_gemm_m_f32(pi, pi + 1, n, kk, p, b, ldb, c2 + pi * OG_PANEL_MR, ldc,
                                        pi + 1 < np ? p + (pi + 1) * kk * OG_PANEL_MR : NULL, m);
            const bool half = m - (np - 1) * OG_PANEL_MR <= 16;
            int diff = 0;
            for (int64_t j = 0; j < n; j++)
                for (int64_t i = 0; i < ldc; i++) {
                    const float x = c[j * ldc + i], y = c2[j * ldc + i];
                    const bool untouched =
                        i >= np * OG_PANEL_MR || (half && i >= (np - 1) * OG_PANEL_MR + 16);
                    diff += untouched ? !isnan(y) : i < m ? memcmp(&x, &y, sizeof x) != 0 : 0;
                }
            CHECKF(!diff, "gemm_panel_m %lldx%lldx%lld (%s): %d values differ", (long long)m,
                   (long long)n, (long long)kk, v ? "panel by panel" : "whole", diff);
        }
        free(a), free(b), free(p), free(c), free(c2);
    }
}

static void test_einsum(void)
{
    int64_t da[] = {2, 3, 3}, db[] = {3, 4}, dc[] = {4, 5};
    og_tensor *a = mk(OG_FLOAT, 3, da), *b = mk(OG_FLOAT, 2, db), *c = mk(OG_FLOAT, 2, dc), *y;
    const og_tensor *abc[3] = {a, b, c};
    const nh_attr eq[] = {NH_STRING("equation", "zii, ij ,jk->k"), {0}};
    og_status st = run("Einsum", 12, abc, 3, eq, 2, &y);
    CHECKF(!st, "Einsum: %s", og_last_error());
    if (!st) {
        CHECKF(y->rank == 1 && y->dims[0] == 5, "Einsum shape");
        for (int kk = 0; kk < 5; kk++) {
            double s = 0;
            for (int z = 0; z < 2; z++)
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 4; j++)
                        s += og_tensor_get_f64(a, (z * 3 + i) * 3 + i) *
                             og_tensor_get_f64(b, i * 4 + j) * og_tensor_get_f64(c, j * 5 + kk);
            CHECKF(fabs(og_tensor_get_f64(y, kk) - s) < 1e-4, "Einsum value %g vs %g",
                   og_tensor_get_f64(y, kk), s);
        }
    }
    og_tensor_free(y);
    static const char *bad[] = {"zii,ij->k",    "zii,ij,jk->kk", "z.i,ij,jk",
                                "zii,ij,jk->q", "zi,ij,jk",      "zii,ij,j9"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const nh_attr e2[] = {NH_STRING("equation", bad[i]), {0}};
        st = run("Einsum", 12, abc, 3, e2, 1, &y);
        CHECKF(st == OG_ERR_MODEL || st == OG_ERR_SHAPE, "'%s' accepted (%d)", bad[i], (int)st);
        og_tensor_free(y);
    }
    og_tensor_free(a);
    og_tensor_free(b);
    og_tensor_free(c);
}

/* ---- Det (issue 12) ---- */

/* Run n and compare output 0 with want (count values); release everything. */
static void l12_case(const nh_node *n, const char *what, int64_t count, const double *want,
                     double tol, og_tensor **in, int n_in)
{
    nh_result r;
    CHECK_OK(nh_run(n, &r));
    if (r.status == OG_OK) nh_expect(what, r.out[0], count, want, tol);
    nh_release(&r);
    nh_free_tensors(in, n_in);
}

static void test_det(void)
{
    og_tensor *in[] = {
        nh_tensor(OG_FLOAT, 3, (int64_t[]){2, 2, 2}, (double[]){1, 2, 3, 4, 2, 0, 0, 5})};
    nh_node n = {.op = "Det", .opset = 11, .in = {in[0]}};
    l12_case(&n, "det batch", 2, (double[]){-2, 10}, 1e-6, in, 1);
    og_tensor *d[] = {
        nh_tensor(OG_DOUBLE, 2, (int64_t[]){3, 3}, (double[]){0, 3, 0, 2, 0, 0, 0, 0, 4})};
    nh_node n3 = {.op = "Det", .opset = 11, .in = {d[0]}};
    l12_case(&n3, "det with a row swap", 1, (double[]){-24}, 1e-12, d, 1);
    og_tensor *b[] = {nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 3}, NULL)};
    nh_node bad = {.op = "Det", .opset = 11, .in = {b[0]}};
    nh_expect_fail(&bad, NH_LOAD, OG_ERR_SHAPE, "square");
    nh_free_tensors(b, 1);
}

/* MatMul and Gemm of float16 and bfloat16: computed on float32 copies, rounded once (the
 * values here are exact in both types); bfloat16 from opset 13, refused before. */
static void test_half_matmul_gemm(void)
{
    for (int d = 0; d < 2; d++) {
        og_dtype t = d ? OG_BFLOAT16 : OG_FLOAT16;
        og_tensor *a = nh_tensor(t, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, -1, 0.5, 4}),
                  *b = nh_tensor(t, 2, (int64_t[]){3, 2}, (double[]){2, 0, 1, -1, 0.5, 3}),
                  *c = nh_tensor(t, 1, (int64_t[]){2}, (double[]){1, -2});
        nh_node mm = {.op = "MatMul", .opset = 13, .in = {a, b}},
                gemm = {.op = "Gemm",
                        .opset = 13,
                        .attrs = {NH_FLOAT("alpha", 2), NH_FLOAT("beta", 0.5)},
                        .in = {a, b, c}};
        nh_result r;
        CHECK_OK(nh_run(&mm, &r));
        CHECKF(r.out[0] && r.out[0]->dtype == t, "matmul %s dtype", og_dtype_name(t));
        /* [1 2 3; -1 .5 4] [2 0; 1 -1; .5 3] = [5.5 7; 0.5 11.5] */
        CHECKF(nh_close("matmul", r.out[0], 4, (double[]){5.5, 7, 0.5, 11.5}, 0, 0), "matmul %s",
               og_dtype_name(t));
        nh_release(&r);
        CHECK_OK(nh_run(&gemm, &r));
        CHECKF(nh_close("gemm", r.out[0], 4, (double[]){11.5, 13, 1.5, 22}, 0, 0), "gemm %s",
               og_dtype_name(t));
        nh_release(&r);
        if (d) {
            mm.opset = 12;
            nh_expect_fail(&mm, NH_LOAD, OG_ERR_UNSUPPORTED, "bfloat16");
        }
        nh_free_tensors((og_tensor *[]){a, b, c}, 3);
    }
}

/* Products on a session's workers (gemm.c, gemm_on_workers): cut along M (more rows than
 * columns) or N, transposed operands, padded leading dimensions, beta 0 and 2, the
 * float32 entries (og_gemm_f32, og_gemm_f32_blas) and float64's; one row (a matrix-vector
 * product, cut along N) and a product too small to cut.  Against sums in double, C's
 * padding untouched. */
static void test_gemm_workers(void)
{
    static const int64_t shapes[][3] = {{700, 96, 80},  {96, 700, 80}, {1, 4200, 1000},
                                        {333, 257, 65}, {64, 64, 64},  {2048, 17, 130}};
    og_workers *w = og_workers_new(NULL, 2);
    CHECKF(w != NULL, "gemm workers: no workers");
    if (!w) return;
    const og_kernel_ctx k = {.threads = 2, .workers = w};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int v = 0; v < 24; v++) {
            const int64_t m = shapes[si][0], n = shapes[si][1], kk = shapes[si][2];
            const bool ta = v & 1, tb = v & 2, with_beta = v & 4;
            const int entry = v / 8; /* og_gemm_f32, og_gemm_f32_blas, og_gemm_f64 */
            if (m == 1 && ta) continue;
            const int64_t lda = (ta ? m : kk) + 3, ldb = (tb ? kk : n) + 5, ldc = n + 2;
            const int64_t na = (ta ? kk : m) * lda, nb = (tb ? n : kk) * ldb, nc = m * ldc;
            double *a = malloc(sizeof(double) * (size_t)na),
                   *b = malloc(sizeof(double) * (size_t)nb);
            double *c = malloc(sizeof(double) * (size_t)nc);
            float *af = malloc(sizeof(float) * (size_t)na),
                  *bf = malloc(sizeof(float) * (size_t)nb);
            float *cf = malloc(sizeof(float) * (size_t)nc);
            double *c0 = malloc(sizeof(double) * (size_t)nc);
            CHECKF(a && b && c && af && bf && cf && c0, "gemm workers: out of memory");
            if (a && b && c && af && bf && cf && c0) {
                for (int64_t i = 0; i < na; i++) af[i] = (float)(a[i] = (float)rnd());
                for (int64_t i = 0; i < nb; i++) bf[i] = (float)(b[i] = (float)rnd());
                for (int64_t i = 0; i < nc; i++) {
                    c0[i] = (i % ldc) >= n ? NAN : with_beta ? (float)rnd() : NAN;
                    c[i] = c0[i];
                    cf[i] = (float)c0[i];
                }
                const double alpha = 0.5, beta = with_beta ? 2.0 : 0.0;
                if (entry == 0)
                    og_gemm_f32(&k, ta, tb, m, n, kk, (float)alpha, af, lda, bf, ldb, (float)beta,
                                cf, ldc);
                else if (entry == 1)
                    og_gemm_f32_blas(&k, ta, tb, m, n, kk, (float)alpha, af, lda, bf, ldb,
                                     (float)beta, cf, ldc);
                else
                    og_gemm_f64(&k, ta, tb, m, n, kk, alpha, a, lda, b, ldb, beta, c, ldc);
                int bad = 0;
                for (int64_t i = 0; i < m; i++) {
                    for (int64_t j = 0; j < n; j++) {
                        double sum = 0, mag = 0;
                        for (int64_t p = 0; p < kk; p++) {
                            const double t = a[ta ? p * lda + i : i * lda + p] *
                                             b[tb ? j * ldb + p : p * ldb + j];
                            sum += t;
                            mag += fabs(t);
                        }
                        const double want = alpha * sum + (with_beta ? beta * c0[i * ldc + j] : 0);
                        const double got = entry == 2 ? c[i * ldc + j] : (double)cf[i * ldc + j];
                        const double tol = (entry == 2 ? 1e-12 : 2e-6) * (mag + fabs(want) + 1);
                        if (!(fabs(got - want) <= tol)) bad++;
                    }
                    for (int64_t j = n; j < ldc; j++) /* the padding of C's rows */
                        if (!isnan(entry == 2 ? c[i * ldc + j] : cf[i * ldc + j])) bad++;
                }
                CHECKF(!bad,
                       "gemm on workers %lldx%lldx%lld entry %d transA %d transB %d beta %g: %d "
                       "bad values",
                       (long long)m, (long long)n, (long long)kk, entry, ta, tb, beta, bad);
            }
            free(a), free(b), free(c), free(af), free(bf), free(cf), free(c0);
        }
    og_workers_free(w);
}

int main(void)
{
    test_matmul();
    test_gemm_workers();
    test_gemm();
    test_gemm_row();
    test_gemm_small();
    test_gemm_small_packed();
    test_gemm_panel();
    test_gemm_batch();
    test_einsum();
    test_det();
    test_half_matmul_gemm();
    NH_DONE();
}
