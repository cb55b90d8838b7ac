/* linalg_einsum.c: the CPU kernel of Einsum.
 *
 * Axes of size 1 are dropped first (they only broadcast).  One operand: a strided sum over
 * the labels not in the output (diagonals come from adding the strides of a repeated
 * label).  Several: contracted pairwise, greedily the pair with the smallest result first.
 * Each pair first loses, by such a sum, the labels only it carries and its repeated labels;
 * what is left is a batched GEMM: batch labels (in both and kept), M (only in A), N (only
 * in B), K (in both, summed).  Operands and the output are used in place, at any batch
 * strides, when their M, N and K labels each form one strided dim; else they are copied
 * to [batch, M, K] / [batch, K, N] / [batch, M, N] order. */
#include <string.h>

#include "kernels/cpu/linalg_impl.h"

/* An operand: data with one label per axis. */
typedef struct ein_opnd {
    const void *data;
    int rank;
    int64_t dims[OG_MAX_RANK];
    int lab[OG_MAX_RANK];
    void *owned; /* scratch holding data, freed by the kernel; NULL for an input */
} ein_opnd;

static uint64_t ein_mask(const ein_opnd *x)
{
    uint64_t m = 0;
    for (int d = 0; d < x->rank; d++) m |= 1ull << x->lab[d];
    return m;
}

/* ---- strided sum: y[out labels] = sum over the others of x ------------------------ */

/* A loop nest over x's labels: dim d has `size` steps of xs elements in x and ys in y
 * (ys 0: summed).  Dims are ordered outermost first, innermost having the smallest x
 * stride; dim `par` is split into ranges of `chunk` across work items (it is an output
 * dim, so items write disjoint parts of y).  With `tile`, a pure permutation, the two
 * innermost dims (the y-contiguous one, then the x-contiguous one) go in square tiles so
 * that neither side is read or written with a large stride across cache lines. */
enum { EIN_TILE = 32 };

typedef struct ein_loop {
    const void *x;
    void *y;
    int nd, par;
    bool accum, tile;
    int64_t size[OG_MAX_RANK], xs[OG_MAX_RANK], ys[OG_MAX_RANK];
    int64_t chunk;
} ein_loop;

#define DEF_EIN_LOOP(S, T, U)                                                                      \
    static void ein_inner_##S(const ein_loop *L, const T *xp, T *yp, int64_t n0, int64_t n1)       \
    {                                                                                              \
        const int in = L->nd - 1;                                                                  \
        const int64_t xs0 = L->xs[in], ys0 = L->ys[in];                                            \
        if (!L->accum) {                                                                           \
            for (int64_t t = n0; t < n1; t++) yp[t * ys0] = xp[t * xs0];                           \
        } else if (ys0 == 0) {                                                                     \
            U acc = (U)*yp;                                                                        \
            for (int64_t t = n0; t < n1; t++) acc += (U)xp[t * xs0];                               \
            *yp = (T)acc;                                                                          \
        } else if (xs0 == 1 && ys0 == 1) {                                                         \
            T *restrict yr = yp;                                                                   \
            for (int64_t t = n0; t < n1; t++) yr[t] = (T)((U)yr[t] + (U)xp[t]);                    \
        } else {                                                                                   \
            for (int64_t t = n0; t < n1; t++) yp[t * ys0] = (T)((U)yp[t * ys0] + (U)xp[t * xs0]);  \
        }                                                                                          \
    }                                                                                              \
    static void ein_loop_item_##S(const ein_loop *L, int64_t item)                                 \
    {                                                                                              \
        int64_t lo[OG_MAX_RANK], hi[OG_MAX_RANK], idx[OG_MAX_RANK], xo = 0, yo = 0;                \
        for (int d = 0; d < L->nd; d++) {                                                          \
            lo[d] = 0;                                                                             \
            hi[d] = L->size[d];                                                                    \
        }                                                                                          \
        lo[L->par] = item * L->chunk;                                                              \
        if (hi[L->par] > lo[L->par] + L->chunk) hi[L->par] = lo[L->par] + L->chunk;                \
        const int in = L->nd - 1, outer = L->tile ? L->nd - 2 : L->nd - 1;                         \
        for (int d = 0; d < outer; d++) {                                                          \
            idx[d] = lo[d];                                                                        \
            xo += lo[d] * L->xs[d];                                                                \
            yo += lo[d] * L->ys[d];                                                                \
        }                                                                                          \
        const T *x = L->x;                                                                         \
        T *y = L->y;                                                                               \
        for (;;) {                                                                                 \
            if (!L->tile) {                                                                        \
                ein_inner_##S(L, x + xo, y + yo, lo[in], hi[in]);                                  \
            } else {                                                                               \
                const int b = in - 1;                                                              \
                for (int64_t b0 = lo[b]; b0 < hi[b]; b0 += EIN_TILE)                               \
                    for (int64_t i0 = lo[in]; i0 < hi[in]; i0 += EIN_TILE) {                       \
                        int64_t b1 = b0 + EIN_TILE < hi[b] ? b0 + EIN_TILE : hi[b];                \
                        int64_t i1 = i0 + EIN_TILE < hi[in] ? i0 + EIN_TILE : hi[in];              \
                        for (int64_t bb = b0; bb < b1; bb++)                                       \
                            ein_inner_##S(L, x + xo + bb * L->xs[b], y + yo + bb * L->ys[b], i0,   \
                                          i1);                                                     \
                    }                                                                              \
            }                                                                                      \
            int d = outer - 1;                                                                     \
            for (; d >= 0; d--) {                                                                  \
                xo += L->xs[d];                                                                    \
                yo += L->ys[d];                                                                    \
                if (++idx[d] < hi[d]) break;                                                       \
                xo -= (hi[d] - lo[d]) * L->xs[d];                                                  \
                yo -= (hi[d] - lo[d]) * L->ys[d];                                                  \
                idx[d] = lo[d];                                                                    \
            }                                                                                      \
            if (d < 0) break;                                                                      \
        }                                                                                          \
    }
DEF_EIN_LOOP(f32, float, float)
DEF_EIN_LOOP(f64, double, double)
DEF_EIN_LOOP(i32, int32_t, uint32_t)
DEF_EIN_LOOP(i64, int64_t, uint64_t)
DEF_EIN_LOOP(u32, uint32_t, uint32_t)
DEF_EIN_LOOP(u64, uint64_t, uint64_t)
DEF_EIN_LOOP(i8, int8_t, uint32_t)
DEF_EIN_LOOP(u8, uint8_t, uint32_t)
DEF_EIN_LOOP(i16, int16_t, uint32_t)
DEF_EIN_LOOP(u16, uint16_t, uint32_t)

/* The loops of one element type: Einsum's binding (og_einsum_select), so that a run does
 * not branch on the dtype. */
typedef struct ein_type {
    og_dtype dtype;
    size_t size;
    void (*loop_item)(const ein_loop *L, int64_t item);
    const og_linalg_type *mm; /* the products' loops */
} ein_type;

static const ein_type ein_types[] = {
    {OG_FLOAT, sizeof(float), ein_loop_item_f32, &og_linalg_f32},
    {OG_DOUBLE, sizeof(double), ein_loop_item_f64, &og_linalg_f64},
    {OG_INT32, sizeof(int32_t), ein_loop_item_i32, &og_linalg_i32},
    {OG_INT64, sizeof(int64_t), ein_loop_item_i64, &og_linalg_i64},
    {OG_UINT32, sizeof(uint32_t), ein_loop_item_u32, &og_linalg_u32},
    {OG_UINT64, sizeof(uint64_t), ein_loop_item_u64, &og_linalg_u64},
    {OG_INT8, sizeof(int8_t), ein_loop_item_i8, &og_linalg_i8},
    {OG_UINT8, sizeof(uint8_t), ein_loop_item_u8, &og_linalg_u8},
    {OG_INT16, sizeof(int16_t), ein_loop_item_i16, &og_linalg_i16},
    {OG_UINT16, sizeof(uint16_t), ein_loop_item_u16, &og_linalg_u16}};

static const ein_type *ein_type_of(og_dtype t)
{
    for (size_t i = 0; i < sizeof ein_types / sizeof *ein_types; i++)
        if (ein_types[i].dtype == t) return &ein_types[i];
    return NULL;
}

const void *og_einsum_select(const og_node *n, og_dtype t)
{
    (void)n;
    return og_is_half(t) ? (const void *)&og_linalg_via_f32 : (const void *)ein_type_of(t);
}

/* y (contiguous, axes labelled ol[0..no-1]) = sum of x over its labels not in ol.  Every
 * label of ol must be in x. */
static void ein_sum(const og_kernel_ctx *k, const ein_type *T, const ein_opnd *x, int no,
                    const int *ol, const int64_t *size, void *y)
{
    ein_loop L = {.x = x->data, .y = y};
    int64_t xst[OG_MAX_RANK], yst[OG_MAX_RANK], lxs[OG_EIN_LABELS] = {0}, lys[OG_EIN_LABELS] = {0};
    og_strides(x->rank, x->dims, xst);
    for (int d = 0; d < x->rank; d++) lxs[x->lab[d]] += xst[d]; /* a repeated label: diagonal */
    int64_t ydims[OG_MAX_RANK], total = 1, iters = 1;
    for (int d = 0; d < no; d++) ydims[d] = size[ol[d]];
    og_strides(no, ydims, yst);
    for (int d = 0; d < no; d++) {
        lys[ol[d]] = yst[d];
        total *= ydims[d];
    }
    /* one dim per distinct label of x (those of ol included) */
    uint64_t seen = 0;
    int nd = 0;
    for (int d = 0; d < x->rank; d++) {
        int l = x->lab[d];
        if (seen & (1ull << l)) continue;
        seen |= 1ull << l;
        L.size[nd] = size[l];
        L.xs[nd] = lxs[l];
        L.ys[nd] = lys[l];
        L.accum |= lys[l] == 0;
        iters *= size[l];
        nd++;
    }
    if (total == 0) return;
    if (iters == 0 || L.accum) memset(y, 0, (size_t)total * T->size);
    if (iters == 0) return;
    /* order: x stride descending (insertion sort, at most 8 dims) */
    for (int i = 1; i < nd; i++)
        for (int j = i; j > 0 && L.xs[j - 1] < L.xs[j]; j--) {
            int64_t t;
            t = L.size[j], L.size[j] = L.size[j - 1], L.size[j - 1] = t;
            t = L.xs[j], L.xs[j] = L.xs[j - 1], L.xs[j - 1] = t;
            t = L.ys[j], L.ys[j] = L.ys[j - 1], L.ys[j - 1] = t;
        }
    /* merge neighbours that walk both x and y as one dim */
    int m = 0;
    for (int d = 0; d < nd; d++) {
        if (m > 0 && L.xs[m - 1] == L.xs[d] * L.size[d] && L.ys[m - 1] == L.ys[d] * L.size[d]) {
            L.size[m - 1] *= L.size[d];
            L.xs[m - 1] = L.xs[d];
            L.ys[m - 1] = L.ys[d];
        } else {
            L.size[m] = L.size[d];
            L.xs[m] = L.xs[d];
            L.ys[m++] = L.ys[d];
        }
    }
    L.nd = nd = m > 0 ? m : 1;
    if (m == 0) { /* a scalar */
        L.size[0] = 1;
        L.xs[0] = L.ys[0] = 0;
    }
    /* a permutation whose y-contiguous dim is not innermost: tile it with the innermost */
    if (!L.accum && nd >= 2 && L.ys[nd - 1] != 1 && L.size[nd - 1] >= EIN_TILE) {
        for (int d = 0; d < nd - 1; d++)
            if (L.ys[d] == 1 && L.size[d] >= EIN_TILE) {
                int64_t s = L.size[d], xs = L.xs[d];
                for (int e = d; e < nd - 2; e++) {
                    L.size[e] = L.size[e + 1];
                    L.xs[e] = L.xs[e + 1];
                    L.ys[e] = L.ys[e + 1];
                }
                L.size[nd - 2] = s;
                L.xs[nd - 2] = xs;
                L.ys[nd - 2] = 1;
                L.tile = true;
                break;
            }
    }
    /* split the outermost output dim that gives every thread work, else the largest */
    int threads = k->threads > 1 ? k->threads : 1;
    L.par = -1;
    for (int d = 0; d < nd && L.par < 0; d++)
        if (L.ys[d] != 0 && L.size[d] >= 4 * threads) L.par = d;
    for (int d = 0; d < nd && L.par < 0; d++)
        if (L.ys[d] != 0 || nd == 1) L.par = d;
    if (L.par < 0) L.par = 0; /* every dim summed: y is one element, one item */
    int64_t items = threads > 1 && L.ys[L.par] != 0 ? L.size[L.par] : 1;
    if (items > 4 * threads) items = 4 * threads;
    L.chunk = (L.size[L.par] + items - 1) / items;
    items = (L.size[L.par] + L.chunk - 1) / L.chunk;
    OG_PARALLEL_FOR(k, items, (double)iters / (double)items, it, { T->loop_item(&L, it); });
}

/* Replace x by y = sum of x over the labels of x not in ol (ol: labels of x, no repeats). */
static og_status ein_resum(const og_kernel_ctx *k, const ein_type *T, ein_opnd *x, int no,
                           const int *ol, const int64_t *size)
{
    double n = 1;
    for (int d = 0; d < no; d++) n *= (double)size[ol[d]];
    if (n * (double)T->size > 9e18)
        return og_kernel_error(k, OG_ERR_NOMEM, "intermediate of %g elements is too large", n);
    void *y = og_malloc(k->alloc, (size_t)(n > 0 ? n : 1) * T->size);
    if (!y) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for an intermediate");
    ein_sum(k, T, x, no, ol, size, y);
    og_free(k->alloc, x->owned);
    x->data = x->owned = y;
    x->rank = no;
    for (int d = 0; d < no; d++) {
        x->lab[d] = ol[d];
        x->dims[d] = size[ol[d]];
    }
    return OG_OK;
}

/* Drop x's repeated labels and those not in `needed` (summing over them). */
static og_status ein_prereduce(const og_kernel_ctx *k, const ein_type *T, ein_opnd *x,
                               uint64_t needed, const int64_t *size)
{
    int ul[OG_MAX_RANK], nu = 0;
    uint64_t seen = 0;
    bool change = false;
    for (int d = 0; d < x->rank; d++) {
        uint64_t bit = 1ull << x->lab[d];
        if ((seen & bit) || !(needed & bit)) {
            change = true;
        } else {
            ul[nu++] = x->lab[d];
        }
        seen |= bit;
    }
    return change ? ein_resum(k, T, x, nu, ul, size) : OG_OK;
}

/* dst = a ++ b ++ c; returns the length. */
static int ein_cat(int *dst, const int *a, int na, const int *b, int nb, const int *c, int nc)
{
    memcpy(dst, a, (size_t)na * sizeof *a);
    memcpy(dst + na, b, (size_t)nb * sizeof *b);
    memcpy(dst + na + nb, c, (size_t)nc * sizeof *c);
    return na + nb + nc;
}

static int64_t ein_prod(const int *l, int n, const int64_t *size)
{
    int64_t p = 1;
    for (int d = 0; d < n; d++) p *= size[l[d]];
    return p;
}

/* Element stride of each label of a contiguous operand (0 for labels it lacks). */
static void ein_label_strides(int rank, const int *lab, const int64_t *dims, int64_t *ls)
{
    int64_t st[OG_MAX_RANK];
    memset(ls, 0, OG_EIN_LABELS * sizeof *ls);
    og_strides(rank, dims, st);
    for (int d = 0; d < rank; d++) ls[lab[d]] = st[d];
}

/* Whether the labels l[0..n-1], in this order, walk the operand as one dim; its stride in
 * *s (1 for no labels). */
static bool ein_group(const int64_t *ls, const int *l, int n, const int64_t *size, int64_t *s)
{
    *s = n ? ls[l[n - 1]] : 1;
    for (int d = 0; d + 1 < n; d++)
        if (ls[l[d]] != ls[l[d + 1]] * size[l[d + 1]]) return false;
    return true;
}

/* How a product operand X (rows labelled r, columns c) is read in place: row stride *ld
 * with columns contiguous (*trans false), or the transpose.  False if it cannot be. */
static bool ein_in_place(const int64_t *ls, const int *r, int nr, const int *c, int nc,
                         const int64_t *size, bool *trans, int64_t *ld)
{
    int64_t sr, sc;
    if (!ein_group(ls, r, nr, size, &sr) || !ein_group(ls, c, nc, size, &sc)) return false;
    int64_t rows = ein_prod(r, nr, size), cols = ein_prod(c, nc, size);
    if (nc == 0 || sc == 1) {
        *trans = false;
        *ld = nr ? sr : (cols > 1 ? cols : 1);
        return *ld >= cols;
    }
    if (nr == 0 || sr == 1) {
        *trans = true;
        *ld = nc ? sc : (rows > 1 ? rows : 1);
        return *ld >= rows;
    }
    return false;
}

/* Contract A and B, keeping the labels in `keep`.  Final step (fout != NULL): write the
 * result to fout with axes fl[0..nf-1]; else hand it back in *res. */
static og_status ein_contract(const og_kernel_ctx *k, const ein_type *T, const int64_t *size,
                              ein_opnd *A, ein_opnd *B, uint64_t keep, int nf, const int *fl,
                              void *fout, ein_opnd *res)
{
    og_status st = ein_prereduce(k, T, A, ein_mask(B) | keep, size);
    if (!st) st = ein_prereduce(k, T, B, ein_mask(A) | keep, size);
    if (st) return st;
    uint64_t ma = ein_mask(A), mb = ein_mask(B);
    int bl[OG_MAX_RANK], ml[OG_MAX_RANK], nl[OG_MAX_RANK], kl[OG_MAX_RANK];
    int nbl = 0, nml = 0, nnl = 0, nkl = 0;
    if (fout) {
        /* batch, M and N in the output's order, so the output can be written in place */
        for (int d = 0; d < nf; d++) {
            uint64_t bit = 1ull << fl[d];
            if ((ma & bit) && (mb & bit))
                bl[nbl++] = fl[d];
            else if (ma & bit)
                ml[nml++] = fl[d];
            else if (mb & bit)
                nl[nnl++] = fl[d];
        }
    } else {
        for (int d = 0; d < A->rank; d++) {
            uint64_t bit = 1ull << A->lab[d];
            if (!(mb & bit))
                ml[nml++] = A->lab[d];
            else if (keep & bit)
                bl[nbl++] = A->lab[d];
        }
        for (int d = 0; d < B->rank; d++)
            if (!(ma & (1ull << B->lab[d]))) nl[nnl++] = B->lab[d];
    }
    for (int d = 0; d < A->rank; d++)
        if ((mb & (1ull << A->lab[d])) && !(keep & (1ull << A->lab[d]))) kl[nkl++] = A->lab[d];
    if (nbl + nml + nnl > OG_MAX_RANK)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED,
                               "contracting operands left to right needs an intermediate of "
                               "rank %d, above %d",
                               nbl + nml + nnl, OG_MAX_RANK);

    og_bgemm g = {0};
    g.type = T->mm;
    g.m = ein_prod(ml, nml, size);
    g.n = ein_prod(nl, nnl, size);
    g.k = ein_prod(kl, nkl, size);
    int want[OG_MAX_RANK];
    int64_t lsa[OG_EIN_LABELS], lsb[OG_EIN_LABELS], lsc[OG_EIN_LABELS];
    /* A as [M, K] matrices at any batch strides, else copied to [batch, M, K] */
    ein_label_strides(A->rank, A->lab, A->dims, lsa);
    if (!ein_in_place(lsa, ml, nml, kl, nkl, size, &g.ta, &g.lda)) {
        if ((st = ein_resum(k, T, A, ein_cat(want, bl, nbl, ml, nml, kl, nkl), want, size)))
            return st;
        ein_label_strides(A->rank, A->lab, A->dims, lsa);
        g.ta = false;
        g.lda = g.k;
    }
    /* B as [K, N] matrices, else copied to [batch, K, N] */
    ein_label_strides(B->rank, B->lab, B->dims, lsb);
    if (!ein_in_place(lsb, kl, nkl, nl, nnl, size, &g.tb, &g.ldb)) {
        if ((st = ein_resum(k, T, B, ein_cat(want, bl, nbl, kl, nkl, nl, nnl), want, size)))
            return st;
        ein_label_strides(B->rank, B->lab, B->dims, lsb);
        g.tb = false;
        g.ldb = g.n;
    }
    g.a = A->data;
    g.b = B->data;
    /* C: the output itself where its M and N labels allow, else a [batch, M, N] scratch */
    int rl[OG_MAX_RANK], ffl[OG_MAX_RANK], nff = 0;
    int nr = ein_cat(rl, bl, nbl, ml, nml, nl, nnl);
    for (int d = 0; d < nf; d++)
        if ((ma | mb) & (1ull << fl[d])) ffl[nff++] = fl[d];
    void *c = NULL;
    bool trans_c = true;
    if (fout) {
        int64_t fdims[OG_MAX_RANK];
        for (int d = 0; d < nff; d++) fdims[d] = size[ffl[d]];
        ein_label_strides(nff, ffl, fdims, lsc);
        if (ein_in_place(lsc, ml, nml, nl, nnl, size, &trans_c, &g.ldc) && !trans_c) g.c = fout;
    }
    if (!g.c) {
        double n = (double)ein_prod(bl, nbl, size) * (double)g.m * (double)g.n;
        if (n * (double)T->size > 9e18)
            return og_kernel_error(k, OG_ERR_NOMEM, "intermediate of %g elements is too large", n);
        c = og_malloc(k->alloc, (size_t)(n > 0 ? n : 1) * T->size);
        if (!c) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for an intermediate");
        int64_t rdims[OG_MAX_RANK];
        for (int d = 0; d < nr; d++) rdims[d] = size[rl[d]];
        ein_label_strides(nr, rl, rdims, lsc);
        g.c = c;
        g.ldc = g.n;
    }
    g.nb = nbl;
    for (int d = 0; d < nbl; d++) {
        g.bdims[d] = size[bl[d]];
        g.sa[d] = lsa[bl[d]];
        g.sb[d] = lsb[bl[d]];
        g.sc[d] = lsc[bl[d]];
    }
    og_bgemm_run(k, &g);
    if (!c) return OG_OK;
    ein_opnd r = {.data = c, .rank = nr, .owned = c};
    for (int d = 0; d < nr; d++) {
        r.lab[d] = rl[d];
        r.dims[d] = size[rl[d]];
    }
    if (fout) {
        ein_sum(k, T, &r, nff, ffl, size, fout); /* a pure transpose */
        og_free(k->alloc, c);
    } else {
        *res = r;
    }
    return OG_OK;
}

og_status og_einsum_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                           og_tensor *const *out, int n_out)
{
    const og_einsum_params *p = k->params;
    og_tensor *y = out[0];
    bool done;
    og_status hs = og_linalg_half(k, og_einsum_kernel, in, n_in, out, n_out, &done);
    if (done) return hs;
    /* k->impl: the loops bound at session creation for input 0's dtype (the output's);
     * without a binding, pick them here */
    const ein_type *T = k->impl ? k->impl : ein_type_of(y->dtype);
    if (!T)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "Einsum of %s is not implemented",
                               og_dtype_name(y->dtype));
    og_dtype dt = y->dtype;
    if (n_in != p->n_in)
        return og_kernel_error(k, OG_ERR_INTERNAL, "%d inputs for %d terms", n_in, p->n_in);
    int ell_rank = 0;
    for (int i = 0; i < n_in; i++) {
        if (in[i]->dtype != dt)
            return og_kernel_error(k, OG_ERR_TYPE, "input %d is %s, the output %s", i,
                                   og_dtype_name(in[i]->dtype), og_dtype_name(dt));
        int e = in[i]->rank - p->in[i].n;
        if (p->in[i].ell >= 0 && e > ell_rank) ell_rank = e;
    }
    ein_opnd *ops = og_calloc(k->alloc, (size_t)n_in, sizeof *ops);
    if (!ops) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    og_status st = OG_OK;
    int64_t size[OG_EIN_LABELS];
    for (int l = 0; l < OG_EIN_LABELS; l++) size[l] = 1;
    for (int i = 0; i < n_in; i++) {
        int lab[OG_MAX_RANK];
        if (!og_einsum_axes(&p->in[i], in[i]->rank, ell_rank, lab)) {
            st = og_kernel_error(k, OG_ERR_SHAPE, "input %d of rank %d does not fit its term", i,
                                 in[i]->rank);
            goto done;
        }
        ein_opnd *x = &ops[i];
        x->data = in[i]->data;
        for (int d = 0; d < in[i]->rank; d++) {
            int64_t n = in[i]->dims[d];
            if (n == 1) continue; /* broadcasts: dropping it does not move any element */
            if (size[lab[d]] != 1 && size[lab[d]] != n) {
                st = og_kernel_error(k, OG_ERR_SHAPE, "input %d axis %d has size %lld, not %lld", i,
                                     d, (long long)n, (long long)size[lab[d]]);
                goto done;
            }
            size[lab[d]] = n;
            x->lab[x->rank] = lab[d];
            x->dims[x->rank++] = n;
        }
    }
    int olab[OG_MAX_RANK], fl[OG_MAX_RANK], nf = 0;
    if (!og_einsum_axes(&p->out, y->rank, ell_rank, olab)) {
        st = og_kernel_error(k, OG_ERR_INTERNAL, "output rank %d does not fit", y->rank);
        goto done;
    }
    uint64_t fmask = 0;
    for (int d = 0; d < y->rank; d++) {
        if (y->dims[d] != size[olab[d]]) {
            st = og_kernel_error(k, OG_ERR_INTERNAL, "output axis %d has size %lld, not %lld", d,
                                 (long long)y->dims[d], (long long)size[olab[d]]);
            goto done;
        }
        if (size[olab[d]] != 1) {
            fl[nf++] = olab[d];
            fmask |= 1ull << olab[d];
        }
    }
    if (y->numel == 0) goto done;
    if (n_in == 1) {
        ein_sum(k, T, &ops[0], nf, fl, size, y->data);
        goto done;
    }
    /* greedy order: each step contracts the pair with the smallest result */
    for (int live = n_in; live > 1 && !st; live--) {
        int bi = 0, bj = 1;
        double best = -1, best_flops = 0;
        for (int i = 0; i < live && live > 2; i++)
            for (int j = i + 1; j < live; j++) {
                uint64_t keep = fmask, both = ein_mask(&ops[i]) | ein_mask(&ops[j]);
                for (int u = 0; u < live; u++)
                    if (u != i && u != j) keep |= ein_mask(&ops[u]);
                double rsize = 1, flops = 1;
                int rank = 0;
                for (int l = 0; l < OG_EIN_LABELS; l++) {
                    if (!(both & (1ull << l))) continue;
                    flops *= (double)size[l];
                    if (keep & (1ull << l)) {
                        rsize *= (double)size[l];
                        rank++;
                    }
                }
                if (rank > OG_MAX_RANK) continue;
                if (best < 0 || rsize < best || (rsize == best && flops < best_flops)) {
                    best = rsize;
                    best_flops = flops;
                    bi = i;
                    bj = j;
                }
            }
        uint64_t keep = fmask;
        for (int u = 0; u < live; u++)
            if (u != bi && u != bj) keep |= ein_mask(&ops[u]);
        bool last = live == 2;
        ein_opnd res = {0};
        st = ein_contract(k, T, size, &ops[bi], &ops[bj], keep, last ? nf : 0, fl,
                          last ? y->data : NULL, &res);
        og_free(k->alloc, ops[bi].owned);
        og_free(k->alloc, ops[bj].owned);
        ops[bi] = res;
        ops[bj] = ops[live - 1];
        memset(&ops[live - 1], 0, sizeof ops[live - 1]);
    }
done:
    for (int i = 0; i < n_in; i++) og_free(k->alloc, ops[i].owned);
    og_free(k->alloc, ops);
    return st;
}
