/* linalg.c: CPU kernels of MatMul, Gemm, Einsum and Det.
 *
 * All three end in one batched matrix product (bgemm below): BLAS for float32/float64
 * (gemm_batch.c for a batch's small float products with B transposed),
 * a plain loop for the integer types (and for float matrices too small to be worth a BLAS
 * call).
 * Einsum contracts its operands pairwise, left to right; each pairwise contraction is a
 * (copy-free where the layouts allow) transpose + batched GEMM.  The loops of one element
 * type form an og_linalg_type, which the session binds to each node when it is created.
 * Det: LU with partial pivoting. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/linalg_impl.h"

/* Integer products wrap (two's complement) instead of overflowing into UB: they are
 * computed in the unsigned type of the same width (uint32 for the 8- and 16-bit types,
 * which C would promote to int), and the result is cast back to the type's width.  MatMul
 * and Gemm have the 32- and 64-bit types; Einsum the 8- and 16-bit ones too. */
#define LINALG_TYPES(X)                                                                            \
    X(f32, float, float)                                                                           \
    X(f64, double, double)                                                                         \
    X(i32, int32_t, uint32_t)                                                                      \
    X(i64, int64_t, uint64_t)                                                                      \
    X(u32, uint32_t, uint32_t)                                                                     \
    X(u64, uint64_t, uint64_t)                                                                     \
    X(i8, int8_t, uint32_t)                                                                        \
    X(u8, uint8_t, uint32_t)                                                                       \
    X(i16, int16_t, uint32_t)                                                                      \
    X(u16, uint16_t, uint32_t)

/* ---- plain loops ----------------------------------------------------------------- */

/* How one product's operands are laid out: A(i,p) = a[i*sai + p*sak],
 * B(p,j) = b[p*sbk + j*sbj], row i of C at c + i*ldc. */
typedef struct mm_view {
    int64_t n, k, sai, sak, sbk, sbj, ldc;
} mm_view;

/* Rows [m0, m1) of C = A·B. */
#define DEF_NAIVE_MM(S, T, U)                                                                      \
    static void naive_mm_##S(const mm_view *v, int64_t m0, int64_t m1, const T *a, const T *b,     \
                             T *c)                                                                 \
    {                                                                                              \
        const int64_t n = v->n, sbj = v->sbj;                                                      \
        for (int64_t i = m0; i < m1; i++) {                                                        \
            T *restrict cr = c + i * v->ldc;                                                       \
            for (int64_t j = 0; j < n; j++) cr[j] = 0;                                             \
            for (int64_t p = 0; p < v->k; p++) {                                                   \
                const U av = (U)a[i * v->sai + p * v->sak];                                        \
                const T *restrict br = b + p * v->sbk;                                             \
                if (sbj == 1) {                                                                    \
                    for (int64_t j = 0; j < n; j++) cr[j] = (T)((U)cr[j] + av * (U)br[j]);         \
                } else {                                                                           \
                    for (int64_t j = 0; j < n; j++) cr[j] = (T)((U)cr[j] + av * (U)br[j * sbj]);   \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
LINALG_TYPES(DEF_NAIVE_MM)

/* c[i*sc] = a[i*sa] * b[i*sb]: batches of 1x1 products (Einsum's elementwise products). */
#define DEF_MUL(S, T, U)                                                                           \
    static void mul_##S(int64_t n, const T *a, int64_t sa, const T *b, int64_t sb, T *c,           \
                        int64_t sc)                                                                \
    {                                                                                              \
        if (sa == 1 && sb == 1 && sc == 1) {                                                       \
            T *restrict cc = c;                                                                    \
            for (int64_t i = 0; i < n; i++) cc[i] = (T)((U)a[i] * (U)b[i]);                        \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) c[i * sc] = (T)((U)a[i * sa] * (U)b[i * sb]);          \
        }                                                                                          \
    }
LINALG_TYPES(DEF_MUL)

/* y = alpha*y + beta*C (C broadcast with strides rs, cs; NULL: none), wrapping. */
#define DEF_AXPBY(S, T, U)                                                                         \
    static void axpby_##S(T *y, int64_t m, int64_t n, U alpha, U beta, const T *c, int64_t rs,     \
                          int64_t cs)                                                              \
    {                                                                                              \
        for (int64_t i = 0; i < m; i++)                                                            \
            for (int64_t j = 0; j < n; j++) {                                                      \
                U v = alpha * (U)y[i * n + j];                                                     \
                if (c) v += beta * (U)c[i * rs + j * cs];                                          \
                y[i * n + j] = (T)v;                                                               \
            }                                                                                      \
    }
/* Gemm's integer types: */
#define GEMM_INT_TYPES(X)                                                                          \
    X(i32, int32_t, uint32_t)                                                                      \
    X(i64, int64_t, uint64_t)                                                                      \
    X(u32, uint32_t, uint32_t)                                                                     \
    X(u64, uint64_t, uint64_t)
GEMM_INT_TYPES(DEF_AXPBY)

/* ---- batched GEMM ---------------------------------------------------------------- */

/* Element offsets of batch `bi` in A, B and C. */
static void bgemm_offsets(const og_bgemm *g, int64_t bi, int64_t *o)
{
    o[0] = o[1] = o[2] = 0;
    for (int d = g->nb - 1; d >= 0; d--) {
        int64_t q = bi % g->bdims[d];
        bi /= g->bdims[d];
        o[0] += q * g->sa[d];
        o[1] += q * g->sb[d];
        o[2] += q * g->sc[d];
    }
}

/* ---- the loops of each type ------------------------------------------------------ */

struct og_linalg_type {
    size_t size; /* bytes per element */
    /* rows [item*ROWS_PER_ITEM, ...) of all batches' rows of C = A·B, through the plain
     * loops */
    void (*rows)(const og_bgemm *g, int64_t item, int64_t rows);
    /* products [item*MULS_PER_ITEM, ...) of a one-dim batch of 1x1 products */
    void (*muls)(const og_bgemm *g, int64_t item, int64_t n);
    /* Float types: C = alpha op(A) op(B) + beta C through BLAS, and y *= beta (n elements)
     * for Gemm with K = 0; NULL for the integer types. */
    void (*gemm)(const og_kernel_ctx *k, bool ta, bool tb, int64_t m, int64_t n, int64_t kk,
                 float alpha, const void *a, int64_t lda, const void *b, int64_t ldb, float beta,
                 void *c, int64_t ldc);
    void (*scale)(void *y, int64_t n, float beta);
    /* Integer types: Gemm's y = alpha*y + beta*C, wrapping; NULL for the float types. */
    void (*axpby)(void *y, int64_t m, int64_t n, int64_t alpha, int64_t beta, const void *c,
                  int64_t rs, int64_t cs);
};

enum { ROWS_PER_ITEM = 64, MULS_PER_ITEM = 16384 };

#define DEF_ROWS(S, T, U)                                                                          \
    static void bgemm_rows_##S(const og_bgemm *g, int64_t item, int64_t rows)                      \
    {                                                                                              \
        const size_t es = sizeof(T);                                                               \
        mm_view v = {g->n,                                                                         \
                     g->k,                                                                         \
                     g->ta ? 1 : g->lda,                                                           \
                     g->ta ? g->lda : 1,                                                           \
                     g->tb ? 1 : g->ldb,                                                           \
                     g->tb ? g->ldb : 1,                                                           \
                     g->ldc};                                                                      \
        int64_t u = item * ROWS_PER_ITEM;                                                          \
        int64_t end = u + ROWS_PER_ITEM < rows ? u + ROWS_PER_ITEM : rows;                         \
        while (u < end) {                                                                          \
            int64_t bi = u / g->m, i = u % g->m, o[3];                                             \
            int64_t i1 = g->m - i < end - u ? g->m : i + (end - u);                                \
            bgemm_offsets(g, bi, o);                                                               \
            naive_mm_##S(&v, i, i1, (const void *)((const char *)g->a + o[0] * es),                \
                         (const void *)((const char *)g->b + o[1] * es),                           \
                         (void *)((char *)g->c + o[2] * es));                                      \
            u += i1 - i;                                                                           \
        }                                                                                          \
    }                                                                                              \
    static void bgemm_muls_##S(const og_bgemm *g, int64_t item, int64_t n)                         \
    {                                                                                              \
        const T *a = g->a, *b = g->b;                                                              \
        T *c = g->c;                                                                               \
        int64_t i0 = item * MULS_PER_ITEM, cnt = n - i0 < MULS_PER_ITEM ? n - i0 : MULS_PER_ITEM;  \
        mul_##S(cnt, a + i0 * g->sa[0], g->sa[0], b + i0 * g->sb[0], g->sb[0], c + i0 * g->sc[0],  \
                g->sc[0]);                                                                         \
    }
LINALG_TYPES(DEF_ROWS)

/* float: alpha and beta as given (Gemm's attributes are float32) */
static void gemm_any_f32(const og_kernel_ctx *k, bool ta, bool tb, int64_t m, int64_t n, int64_t kk,
                         float alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                         float beta, void *c, int64_t ldc)
{
    og_gemm_f32(k, ta, tb, m, n, kk, alpha, a, lda, b, ldb, beta, c, ldc);
}
static void gemm_any_f64(const og_kernel_ctx *k, bool ta, bool tb, int64_t m, int64_t n, int64_t kk,
                         float alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                         float beta, void *c, int64_t ldc)
{
    og_gemm_f64(k, ta, tb, m, n, kk, (double)alpha, a, lda, b, ldb, (double)beta, c, ldc);
}
static void scale_f32(void *y, int64_t n, float beta)
{
    float *yy = y;
    for (int64_t i = 0; i < n; i++) yy[i] *= beta;
}
static void scale_f64(void *y, int64_t n, float beta)
{
    double *yy = y;
    for (int64_t i = 0; i < n; i++) yy[i] *= (double)beta;
}
/* alpha and beta are integral (gemm_kernel checks): wrapping, in the unsigned type */
#define DEF_AXPBY_ANY(S, T, U)                                                                     \
    static void axpby_any_##S(void *y, int64_t m, int64_t n, int64_t alpha, int64_t beta,          \
                              const void *c, int64_t rs, int64_t cs)                               \
    {                                                                                              \
        axpby_##S(y, m, n, (U)alpha, (U)beta, c, rs, cs);                                          \
    }
GEMM_INT_TYPES(DEF_AXPBY_ANY)

const og_linalg_type og_linalg_f32 = {4,   bgemm_rows_f32, bgemm_muls_f32, gemm_any_f32, scale_f32,
                                      NULL};
const og_linalg_type og_linalg_f64 = {8,   bgemm_rows_f64, bgemm_muls_f64, gemm_any_f64, scale_f64,
                                      NULL};
#define DEF_INT_TYPE(S, T, U)                                                                      \
    const og_linalg_type og_linalg_##S = {sizeof(T), bgemm_rows_##S, bgemm_muls_##S,               \
                                          NULL,      NULL,           axpby_any_##S};
GEMM_INT_TYPES(DEF_INT_TYPE)
/* Einsum's narrow types: no Gemm */
#define DEF_NARROW_TYPE(S, T)                                                                      \
    const og_linalg_type og_linalg_##S = {sizeof(T), bgemm_rows_##S, bgemm_muls_##S,               \
                                          NULL,      NULL,           NULL};
DEF_NARROW_TYPE(i8, int8_t)
DEF_NARROW_TYPE(u8, uint8_t)
DEF_NARROW_TYPE(i16, int16_t)
DEF_NARROW_TYPE(u16, uint16_t)

const og_linalg_type *og_linalg_type_of(og_dtype t)
{
    switch (t) {
    case OG_FLOAT: return &og_linalg_f32;
    case OG_DOUBLE: return &og_linalg_f64;
    case OG_INT32: return &og_linalg_i32;
    case OG_INT64: return &og_linalg_i64;
    case OG_UINT32: return &og_linalg_u32;
    case OG_UINT64: return &og_linalg_u64;
    default: return NULL;
    }
}

const char og_linalg_via_f32 = 'h';

static const void *select_linalg(const og_node *n, og_dtype t)
{
    (void)n;
    return og_is_half(t) ? (const void *)&og_linalg_via_f32 : (const void *)og_linalg_type_of(t);
}

og_status og_linalg_half(const og_kernel_ctx *k, og_kernel_fn fn, const og_tensor *const *in,
                         int n_in, og_tensor *const *out, int n_out, bool *done)
{
    *done = k->impl == (const void *)&og_linalg_via_f32 || og_is_half(in[0]->dtype);
    if (!*done) return OG_OK;
    for (int i = 1; i < n_in; i++)
        if (in[i] && in[i]->dtype != in[0]->dtype)
            return og_kernel_error(k, OG_ERR_TYPE,
                                   "inputs 0 and %d have different element types "
                                   "(%s, %s)",
                                   i, og_dtype_name(in[0]->dtype), og_dtype_name(in[i]->dtype));
    return og_kernel_via_f32_unbound(k, fn, in, n_in, out, n_out);
}

static void bgemm_blas(const og_kernel_ctx *k, const og_bgemm *g, int64_t m, const void *a,
                       const void *b, void *c)
{
    g->type->gemm(k, g->ta, g->tb, m, g->n, g->k, 1.0f, a, g->lda, b, g->ldb, 0.0f, c, g->ldc);
}

static void bgemm_one_blas(const og_kernel_ctx *k, const og_bgemm *g, int64_t bi)
{
    size_t es = g->type->size;
    int64_t o[3];
    bgemm_offsets(g, bi, o);
    /* a product per thread (the batch over the threads): small ones with B transposed by
     * gemm_batch.c, whose packing of Bᵀ is cheaper than the BLAS's */
    if (k->threads <= 1 && g->type == &og_linalg_f32 &&
        og_gemm_batch_applies(g->ta, g->tb, g->m, g->n, g->k) &&
        og_gemm_batch_f32(g->ta, g->tb, g->m, g->n, g->k, (const float *)g->a + o[0], g->lda,
                          (const float *)g->b + o[1], g->ldb, (float *)g->c + o[2], g->ldc))
        return;
    bgemm_blas(k, g, g->m, (const char *)g->a + o[0] * es, (const char *)g->b + o[1] * es,
               (char *)g->c + o[2] * es);
}

/* The batched product's parallel loops (og_par_for): items of MULS_PER_ITEM products of
 * 1x1 matrices, of ROWS_PER_ITEM rows, or of one matrix product each (on `one`, the
 * caller's context on one thread). */
typedef struct bgemm_par {
    const og_bgemm *g;
    og_kernel_ctx one;
    int64_t n; /* products (muls) or rows of every batch (rows) */
} bgemm_par;

static void bgemm_muls_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const bgemm_par *p = ctx;
    (void)slot;
    for (int64_t it = i0; it < i1; it++) p->g->type->muls(p->g, it, p->n);
}

static void bgemm_rows_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const bgemm_par *p = ctx;
    (void)slot;
    for (int64_t it = i0; it < i1; it++) p->g->type->rows(p->g, it, p->n);
}

static void bgemm_one_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const bgemm_par *p = ctx;
    (void)slot;
    for (int64_t bi = i0; bi < i1; bi++) bgemm_one_blas(&p->one, p->g, bi);
}

/* Drop batch dims of 1 and merge neighbours that step A, B and C alike. */
static void bgemm_coalesce(og_bgemm *g)
{
    int m = 0;
    for (int d = 0; d < g->nb; d++) {
        if (g->bdims[d] == 1) continue;
        if (m > 0) {
            int64_t n = g->bdims[d];
            if (g->sa[m - 1] == g->sa[d] * n && g->sb[m - 1] == g->sb[d] * n &&
                g->sc[m - 1] == g->sc[d] * n) {
                g->bdims[m - 1] *= n;
                g->sa[m - 1] = g->sa[d];
                g->sb[m - 1] = g->sb[d];
                g->sc[m - 1] = g->sc[d];
                continue;
            }
        }
        g->bdims[m] = g->bdims[d];
        g->sa[m] = g->sa[d];
        g->sb[m] = g->sb[d];
        g->sc[m++] = g->sc[d];
    }
    g->nb = m;
}

/* True when A's and C's batches follow each other as one [batch*m, k] and [batch*m, n]
 * matrix and B is shared: then the whole product is one GEMM ([B,M,K] x [K,N]). */
static bool bgemm_collapses(const og_bgemm *g)
{
    if (g->ta || g->lda != g->k || g->ldc != g->n) return false;
    int64_t sa = g->m * g->k, sc = g->m * g->n;
    for (int d = g->nb - 1; d >= 0; d--) {
        if (g->sb[d] != 0 || g->sa[d] != sa || g->sc[d] != sc) return false;
        sa *= g->bdims[d];
        sc *= g->bdims[d];
    }
    return true;
}

void og_bgemm_run(const og_kernel_ctx *k, const og_bgemm *g0)
{
    og_bgemm g = *g0;
    bgemm_coalesce(&g);
    int64_t nbatch = 1;
    for (int d = 0; d < g.nb; d++) nbatch *= g.bdims[d];
    if (nbatch == 0 || g.m == 0 || g.n == 0) return;
    size_t es = g.type->size;
    if (g.k == 0) {
        for (int64_t bi = 0; bi < nbatch; bi++) {
            int64_t o[3];
            bgemm_offsets(&g, bi, o);
            for (int64_t i = 0; i < g.m; i++)
                memset((char *)g.c + (o[2] + i * g.ldc) * (int64_t)es, 0, (size_t)g.n * es);
        }
        return;
    }
    double work = (double)g.m * (double)g.n * (double)g.k;
    bool blas = g.type->gemm && work >= 512.0;
    bgemm_par par = {.g = &g, .one = *k};
    par.one.threads = 1;
    par.one.workers = NULL;
    if (g.m == 1 && g.n == 1 && g.k == 1 && g.nb == 1) {
        par.n = nbatch;
        og_par_for(k, (nbatch + MULS_PER_ITEM - 1) / MULS_PER_ITEM, (double)MULS_PER_ITEM,
                   OG_PAR_MIN_COMPUTE, bgemm_muls_range, &par);
    } else if (!blas) {
        /* rows of all batches are independent work items */
        par.n = nbatch * g.m;
        og_par_for(k, (par.n + ROWS_PER_ITEM - 1) / ROWS_PER_ITEM,
                   (double)ROWS_PER_ITEM * (double)g.n * (double)g.k, OG_PAR_MIN_COMPUTE,
                   bgemm_rows_range, &par);
    } else if (nbatch == 1 || bgemm_collapses(&g)) {
        bgemm_blas(k, &g, nbatch * g.m, g.a, g.b, g.c);
    } else if (nbatch >= (int64_t)k->threads || work < 65536.0) {
        /* a product per thread, BLAS single-threaded inside; BLAS would not split products
         * this small itself */
        og_par_for(k, nbatch, work, OG_PAR_MIN_COMPUTE, bgemm_one_range, &par);
    } else {
        for (int64_t bi = 0; bi < nbatch; bi++) bgemm_one_blas(k, &g, bi);
    }
}

/* ---- MatMul ---------------------------------------------------------------------- */

/* Operand t of a MatMul as the product reads it: its dims and their element strides, t
 * itself (perm NULL) or Transpose(t, perm) (dims[i] = t's dims[perm[i]], strides[i] t's
 * stride along axis perm[i]). */
static void mm_operand(const og_tensor *t, const int64_t *perm, int64_t *dims, int64_t *st)
{
    int64_t ts[OG_MAX_RANK];
    og_strides(t->rank, t->dims, ts);
    for (int i = 0; i < t->rank; i++) {
        const int64_t p = perm ? perm[i] : i;
        dims[i] = t->dims[p];
        st[i] = ts[p];
    }
}

/* How BLAS reads a matrix of r rows and c columns whose elements lie rs and cs apart: as
 * stored (*trans false) or transposed, with leading dimension *ld; false when neither (no
 * unit stride). */
static bool mm_layout(int64_t r, int64_t c, int64_t rs, int64_t cs, bool *trans, int64_t *ld)
{
    if ((c == 1 || cs == 1) && (r == 1 || rs >= c)) {
        *trans = false;
        *ld = r == 1 ? (c > 1 ? c : 1) : rs;
        return true;
    }
    if ((r == 1 || rs == 1) && (c == 1 || cs >= r)) {
        *trans = true;
        *ld = c == 1 ? (r > 1 ? r : 1) : cs;
        return true;
    }
    return false;
}

static og_status matmul_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                               og_tensor *const *out, int n_out)
{
    bool done;
    og_status hs = og_linalg_half(k, matmul_kernel, in, n_in, out, n_out, &done);
    if (done) return hs;
    const og_tensor *a = in[0], *b = in[1];
    og_tensor *y = out[0];
    og_bgemm g = {0};
    /* k->impl: the loops bound at session creation; without a binding, pick them here */
    g.type = k->impl ? k->impl : og_linalg_type_of(a->dtype);
    if (!g.type)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "MatMul of %s is not implemented",
                               og_dtype_name(a->dtype));
    /* the operands as the product reads them: A [..., M, K], B [..., K, N] (a 1-D A is the
     * row [1, K], a 1-D B the column [K, 1]) */
    int64_t ad[OG_MAX_RANK], as[OG_MAX_RANK], bd[OG_MAX_RANK], bs[OG_MAX_RANK];
    mm_operand(a, k->perm[0], ad, as);
    mm_operand(b, k->perm[1], bd, bs);
    const int ra = a->rank, rb = b->rank;
    g.m = ra >= 2 ? ad[ra - 2] : 1;
    g.k = ad[ra - 1];
    g.n = rb >= 2 ? bd[rb - 1] : 1;
    if (!mm_layout(g.m, g.k, ra >= 2 ? as[ra - 2] : g.k, as[ra - 1], &g.ta, &g.lda) ||
        !mm_layout(g.k, g.n, bs[rb >= 2 ? rb - 2 : 0], rb >= 2 ? bs[rb - 1] : 1, &g.tb, &g.ldb))
        return og_kernel_error(k, OG_ERR_INTERNAL,
                               "an operand's transpose leaves neither matrix axis contiguous");
    g.ldc = g.n;
    g.a = a->data;
    g.b = b->data;
    g.c = y->data;
    g.nb = y->rank - (ra >= 2) - (rb >= 2);
    memcpy(g.bdims, y->dims, (size_t)g.nb * sizeof *y->dims);
    const int ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0;
    if (g.nb < ba || g.nb < bb)
        return og_kernel_error(k, OG_ERR_INTERNAL, "output rank %d does not fit inputs", y->rank);
    og_strides(g.nb, g.bdims, g.sc);
    for (int d = 0; d < g.nb; d++) { /* aligned on the right; 0 along a broadcast axis */
        const int ia = d - (g.nb - ba), ib = d - (g.nb - bb);
        g.sa[d] = ia >= 0 && ad[ia] != 1 ? as[ia] : 0;
        g.sb[d] = ib >= 0 && bd[ib] != 1 ? bs[ib] : 0;
        g.sc[d] *= g.m * g.n;
    }
    og_bgemm_run(k, &g);
    return OG_OK;
}

/* ---- Gemm ------------------------------------------------------------------------ */

/* y[i,j] = C[i*rs + j*cs] for an [m,n] y (element size es). */
static void fill_bias(char *y, const char *c, int64_t m, int64_t n, int64_t rs, int64_t cs,
                      size_t es)
{
    for (int64_t i = 0; i < m; i++) {
        char *row = y + (size_t)(i * n) * es;
        const char *src = c + (size_t)(i * rs) * es;
        if (cs == 1) {
            memcpy(row, src, (size_t)n * es);
        } else if (es == 4) {
            uint32_t v;
            memcpy(&v, src, 4);
            uint32_t *r = (uint32_t *)(void *)row;
            for (int64_t j = 0; j < n; j++) r[j] = v;
        } else {
            uint64_t v;
            memcpy(&v, src, 8);
            uint64_t *r = (uint64_t *)(void *)row;
            for (int64_t j = 0; j < n; j++) r[j] = v;
        }
    }
}

static bool integral(float x) { return x == (float)(int64_t)x && x > -9e18f && x < 9e18f; }

/* B values from which, and rows of A above which, a constant transposed B is kept
 * transposed (og_kcache) */
#define GEMM_KEEP_BT_MIN   65536
#define GEMM_KEEP_BT_MIN_M 8

/* dst [cols, rows] = src [rows, cols] (rows ld apart), in 32x32 blocks. */
static void transpose_f32(const float *src, int64_t rows, int64_t cols, int64_t ld, float *dst)
{
    for (int64_t i0 = 0; i0 < rows; i0 += 32)
        for (int64_t j0 = 0; j0 < cols; j0 += 32) {
            const int64_t i1 = i0 + 32 < rows ? i0 + 32 : rows,
                          j1 = j0 + 32 < cols ? j0 + 32 : cols;
            for (int64_t i = i0; i < i1; i++)
                for (int64_t j = j0; j < j1; j++) dst[j * rows + i] = src[i * ld + j];
        }
}

static og_status gemm_compute(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                              og_tensor *const *out, int n_out)
{
    bool done;
    og_status hs = og_linalg_half(k, gemm_compute, in, n_in, out, n_out, &done);
    if (done) return hs;
    const og_gemm_params *p = k->params;
    const og_tensor *a = in[0], *b = in[1], *c = n_in > 2 ? in[2] : NULL;
    og_tensor *y = out[0];
    const og_linalg_type *t = k->impl ? k->impl : og_linalg_type_of(a->dtype);
    if (!t)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "Gemm of %s is not implemented",
                               og_dtype_name(a->dtype));
    bool is_int = !t->gemm;
    if (is_int && (!integral(p->alpha) || !integral(p->beta)))
        return og_kernel_error(k, OG_ERR_UNSUPPORTED,
                               "integer Gemm with non-integral alpha %g or beta %g",
                               (double)p->alpha, (double)p->beta);
    og_bgemm g = {0};
    g.type = t;
    g.ta = p->trans_a;
    g.tb = p->trans_b;
    g.m = y->dims[0];
    g.n = y->dims[1];
    g.k = a->dims[p->trans_a ? 0 : 1];
    g.lda = a->dims[1];
    g.ldb = b->dims[1];
    g.ldc = g.n;
    g.a = a->data;
    g.b = b->data;
    g.c = y->data;
    if (c && p->beta == 0.0f) c = NULL; /* beta 0 ignores C (as BLAS does) */
    int64_t rs = 0, cs = 0;
    if (c) {
        int64_t st[2];
        og_broadcast_strides(c->rank, c->dims, 2, y->dims, st);
        rs = st[0];
        cs = st[1];
    }
    size_t es = t->size;
    if (y->numel == 0) return OG_OK;
    if (is_int) {
        og_bgemm_run(k, &g);
        t->axpby(y->data, g.m, g.n, (int64_t)p->alpha, (int64_t)p->beta, c ? c->data : NULL, rs,
                 cs);
        return OG_OK;
    }
    if (c)
        fill_bias(y->data, c->data, g.m, g.n, rs, cs, es);
    else if (g.k == 0)
        memset(y->data, 0, (size_t)y->numel * es);
    if (g.k == 0) {
        /* BLAS may skip the beta scaling when K is 0 */
        t->scale(y->data, y->numel, p->beta);
        return OG_OK;
    }
    float beta = c ? p->beta : 0.0f;
    if (a->dtype == OG_FLOAT && (k->const_in & 2u) && !g.ta && og_gemm_small_packs(g.m, g.n, g.k)) {
        /* B is the model's and A has 2 to 8 rows (a classifier on a small batch): B packed
         * once per session, read in one stream.  MobileNet-v3 8x64x64's classifier (8 x 576
         * by 1024 x 576, 8 x 1024 by 1000 x 1024) 0.38 -> 0.23 ms on one thread, the network
         * 1.73 -> 1.52 ms (AMD EPYC, Zen 4); B read in place by rows (gemm_small.c) went at
         * 60-75 GFLOP/s, Bᵀ kept by the oneDNN / OpenBLAS path slower still where B is cold */
        bool fresh;
        const size_t bytes = (size_t)og_gemm_small_pack_floats(g.n, g.k) * sizeof(float);
        float *bp = og_kcache_get(k, (const char *)b->data + 1, bytes, &fresh);
        if (bp) {
            if (fresh) og_gemm_small_pack_f32(g.tb, g.n, g.k, g.b, g.ldb, bp);
            og_gemm_small_packed_f32(k, g.m, g.n, g.k, p->alpha, g.a, g.lda, bp, beta, g.c, g.n);
            return OG_OK;
        }
    }
    if (g.tb && a->dtype == OG_FLOAT && (k->const_in & 2u) && g.m > GEMM_KEEP_BT_MIN_M &&
        g.n * g.k >= GEMM_KEEP_BT_MIN) {
        /* B [N, K] is the model's: Bᵀ [K, N] once per session, for the faster untransposed
         * product (oneDNN's 64x512x784: 227 against 202 GFLOP/s).  Not for a few rows
         * (packed above, or gemm.h's og_gemm_small_f32), where a cold Bᵀ read by columns
         * was slow: MobileNet-v2's 8x1280 by 1000x1280 classifier took 1.2 ms on Bᵀ, 0.2 on
         * B. */
        bool fresh;
        float *bt = og_kcache_get(k, b->data, (size_t)(g.n * g.k) * sizeof(float), &fresh);
        if (bt) {
            if (fresh) transpose_f32(b->data, g.n, g.k, g.ldb, bt);
            g.b = bt;
            g.tb = false;
            g.ldb = g.n;
        }
    }
    t->gemm(k, g.ta, g.tb, g.m, g.n, g.k, p->alpha, g.a, g.lda, g.b, g.ldb, beta, g.c, g.n);
    return OG_OK;
}

/* Gemm, then the activation fused into it (og_fusion_plan: float and double outputs; an
 * MLP's Relu), applied to Y while it is in cache instead of by a node of its own. */
static og_status gemm_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out)
{
    const og_status st = gemm_compute(k, in, n_in, out, n_out);
    if (st == OG_OK && k->act.kind != OG_FUSE_NONE)
        og_cpu_act(&k->act, out[0]->dtype, out[0]->data, out[0]->numel);
    return st;
}

/* ---- Det ------------------------------------------------------------------------------ */

/* The determinant of the m×m matrix a (row-major, copied into w, m² doubles): Gaussian
 * elimination with partial pivoting, the product of the pivots with the swaps' sign. */
static double det_lu(double *w, int64_t m)
{
    double det = 1;
    for (int64_t c = 0; c < m; c++) {
        int64_t piv = c;
        for (int64_t r = c + 1; r < m; r++)
            if (fabs(w[r * m + c]) > fabs(w[piv * m + c])) piv = r;
        if (w[piv * m + c] == 0) return 0;
        if (piv != c) {
            for (int64_t j = 0; j < m; j++) {
                double t = w[c * m + j];
                w[c * m + j] = w[piv * m + j];
                w[piv * m + j] = t;
            }
            det = -det;
        }
        double d = w[c * m + c];
        det *= d;
        for (int64_t r = c + 1; r < m; r++) {
            double f = w[r * m + c] / d;
            if (f != 0)
                for (int64_t j = c + 1; j < m; j++) w[r * m + j] -= f * w[c * m + j];
        }
    }
    return det;
}

/* The determinants of n matrices of m² elements of a's type, each widened into w. */
#define DEF_DET(T)                                                                                 \
    static void det_##T(const void *av, void *yv, int64_t n, int64_t m, double *w)                 \
    {                                                                                              \
        const T *a = av;                                                                           \
        T *y = yv;                                                                                 \
        for (int64_t b = 0; b < n; b++) {                                                          \
            for (int64_t i = 0; i < m * m; i++) w[i] = (double)a[b * m * m + i];                   \
            y[b] = (T)det_lu(w, m);                                                                \
        }                                                                                          \
    }
DEF_DET(float)
DEF_DET(double)

typedef void (*det_fn)(const void *a, void *y, int64_t n, int64_t m, double *w);
static const det_fn det_loops[2] = {det_float, det_double};
OG_FLOAT_IMPLS(det_impls, &det_loops[0], &det_loops[1]);

/* float32, float64, and the 16-bit floats through float32's binding (og_float_impl) */
static const void *select_det(const og_node *n, og_dtype t)
{
    (void)n;
    return og_float_impl_of(det_impls, t);
}

static og_status det_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, int n_out)
{
    const og_tensor *a = in[0];
    og_tensor *y = out[0];
    const og_float_impl *im = og_float_bound(k, det_impls, a->dtype);
    if (!im)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(a->dtype));
    if (!im->loops) return og_kernel_via_f32_bound(k, im, det_kernel, in, n_in, out, n_out);
    int64_t m = a->dims[a->rank - 1], mm = m * m;
    double *w = og_malloc(k->alloc, (size_t)(mm > 0 ? mm : 1) * sizeof *w);
    if (!w) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    (*(const det_fn *)im->loops)(a->data, y->data, y->numel, m, w);
    og_free(k->alloc, w);
    return OG_OK;
}

/* float32, float64, int32, int64 (and MatMul and Gemm float16 and bfloat16 through
 * float32), on input 0, whose loops the selects bind (Einsum checks
 * that every input has input 0's dtype, which inference gives the output).  Integer Gemm's
 * alpha and beta must be integral: the kernel checks those attributes. */
const og_kernel_def og_cpu_linalg[] = {
    {.name = "MatMul", .domain = "", .fn = matmul_kernel, .select = select_linalg, .perm_in = 1},
    {.name = "Gemm", .domain = "", .fn = gemm_kernel, .select = select_linalg, .act = 1},
    {.name = "Einsum", .domain = "", .fn = og_einsum_kernel, .select = og_einsum_select},
    {.name = "Det", .domain = "", .fn = det_kernel, .select = select_det},
    {.name = NULL}};
