/* linalg_einsum.c: the CPU kernel of Einsum.
 *
 * Axes of size 1 are dropped first (they only broadcast).  One operand: a strided sum over
 * the labels not in the output (diagonals come from adding the strides of a repeated
 * label).  Several: contracted pairwise, left to right.  Each pair first loses, by such a
 * sum, the labels only it carries and its repeated labels; what is left is a batched GEMM:
 * batch labels (in both and kept), M (only in A), N (only in B), K (in both, summed).  An
 * operand whose axes are already in [batch, M, K] or [batch, K, M] order is used in place. */
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

enum { EIN_CHUNK = 4096 };

typedef struct ein_sum_job {
    const void *x;
    void *y;
    int no, ns;
    int64_t odims[OG_MAX_RANK], ostr[OG_MAX_RANK]; /* output axes, their strides in x */
    int64_t sdims[OG_MAX_RANK], sstr[OG_MAX_RANK]; /* summed labels, their strides in x */
    int64_t total;
} ein_sum_job;

/* Output elements [c*EIN_CHUNK, ...) of the job; odometers instead of divisions. */
#define DEF_EIN_SUM(S, T, U)                                                                       \
    static void ein_sum_chunk_##S(const ein_sum_job *j, int64_t c)                                 \
    {                                                                                              \
        int64_t start = c * EIN_CHUNK, end = start + EIN_CHUNK;                                    \
        if (end > j->total) end = j->total;                                                        \
        int64_t idx[OG_MAX_RANK], off = 0, rem = start;                                            \
        for (int d = j->no - 1; d >= 0; d--) {                                                     \
            idx[d] = rem % j->odims[d];                                                            \
            rem /= j->odims[d];                                                                    \
            off += idx[d] * j->ostr[d];                                                            \
        }                                                                                          \
        const T *x = j->x;                                                                         \
        T *y = j->y;                                                                               \
        const int ns = j->ns;                                                                      \
        const int64_t in_n = ns ? j->sdims[ns - 1] : 1, in_s = ns ? j->sstr[ns - 1] : 0;           \
        for (int64_t e = start; e < end; e++) {                                                    \
            U acc = 0;                                                                             \
            int64_t sidx[OG_MAX_RANK] = {0}, so = off;                                             \
            for (;;) {                                                                             \
                const T *xp = x + so;                                                              \
                for (int64_t t = 0; t < in_n; t++) acc += (U)xp[t * in_s];                         \
                int d = ns - 2;                                                                    \
                for (; d >= 0; d--) {                                                              \
                    so += j->sstr[d];                                                              \
                    if (++sidx[d] < j->sdims[d]) break;                                            \
                    so -= j->sstr[d] * j->sdims[d];                                                \
                    sidx[d] = 0;                                                                   \
                }                                                                                  \
                if (d < 0) break;                                                                  \
            }                                                                                      \
            y[e] = (T)acc;                                                                         \
            for (int d = j->no - 1; d >= 0; d--) {                                                 \
                off += j->ostr[d];                                                                 \
                if (++idx[d] < j->odims[d]) break;                                                 \
                off -= j->ostr[d] * j->odims[d];                                                   \
                idx[d] = 0;                                                                        \
            }                                                                                      \
        }                                                                                          \
    }
DEF_EIN_SUM(f32, float, float)
DEF_EIN_SUM(f64, double, double)
DEF_EIN_SUM(i32, int32_t, uint32_t)
DEF_EIN_SUM(i64, int64_t, uint64_t)

static void ein_sum_chunk(og_dtype dt, const ein_sum_job *j, int64_t c)
{
    switch (dt) {
    case OG_FLOAT: ein_sum_chunk_f32(j, c); break;
    case OG_DOUBLE: ein_sum_chunk_f64(j, c); break;
    case OG_INT32: ein_sum_chunk_i32(j, c); break;
    case OG_INT64: ein_sum_chunk_i64(j, c); break;
    default: break;
    }
}

/* y (contiguous, axes labelled ol[0..no-1]) = sum of x over its labels not in ol.  Every
 * label of ol must be in x. */
static void ein_sum(const og_kernel_ctx *k, og_dtype dt, const ein_opnd *x, int no, const int *ol,
                    const int64_t *size, void *y)
{
    ein_sum_job j = {.x = x->data, .y = y, .no = no, .total = 1};
    int64_t xs[OG_MAX_RANK], lstr[OG_EIN_LABELS] = {0};
    og_strides(x->rank, x->dims, xs);
    for (int d = 0; d < x->rank; d++) lstr[x->lab[d]] += xs[d]; /* a repeated label: diagonal */
    uint64_t in_out = 0;
    for (int d = 0; d < no; d++) {
        j.odims[d] = size[ol[d]];
        j.ostr[d] = lstr[ol[d]];
        j.total *= j.odims[d];
        in_out |= 1ull << ol[d];
    }
    int64_t nsum = 1;
    for (int d = 0; d < x->rank; d++) {
        uint64_t bit = 1ull << x->lab[d];
        if (in_out & bit) continue;
        in_out |= bit;
        j.sdims[j.ns] = size[x->lab[d]];
        j.sstr[j.ns++] = lstr[x->lab[d]];
        nsum *= size[x->lab[d]];
    }
    if (j.total == 0) return;
    if (nsum == 0) {
        memset(y, 0, (size_t)j.total * og_dtype_size(dt));
        return;
    }
    OG_PARALLEL_FOR(k, (j.total + EIN_CHUNK - 1) / EIN_CHUNK, (double)EIN_CHUNK * (double)nsum, c,
                    { ein_sum_chunk(dt, &j, c); });
}

/* Replace x by y = sum of x over the labels of x not in ol (ol: labels of x, no repeats). */
static og_status ein_resum(const og_kernel_ctx *k, og_dtype dt, ein_opnd *x, int no, const int *ol,
                           const int64_t *size)
{
    double n = 1;
    for (int d = 0; d < no; d++) n *= (double)size[ol[d]];
    if (n * (double)og_dtype_size(dt) > 9e18)
        return og_kernel_error(k, OG_ERR_NOMEM, "intermediate of %g elements is too large", n);
    void *y = og_malloc(k->alloc, (size_t)(n > 0 ? n : 1) * og_dtype_size(dt));
    if (!y) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for an intermediate");
    ein_sum(k, dt, x, no, ol, size, y);
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
static og_status ein_prereduce(const og_kernel_ctx *k, og_dtype dt, ein_opnd *x, uint64_t needed,
                               const int64_t *size)
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
    return change ? ein_resum(k, dt, x, nu, ul, size) : OG_OK;
}

/* dst = a ++ b ++ c; returns the length. */
static int ein_cat(int *dst, const int *a, int na, const int *b, int nb, const int *c, int nc)
{
    memcpy(dst, a, (size_t)na * sizeof *a);
    memcpy(dst + na, b, (size_t)nb * sizeof *b);
    memcpy(dst + na + nb, c, (size_t)nc * sizeof *c);
    return na + nb + nc;
}

static bool ein_same(const int *a, int na, const int *b, int nb)
{
    return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof *a) == 0);
}

static int64_t ein_prod(const int *l, int n, const int64_t *size)
{
    int64_t p = 1;
    for (int d = 0; d < n; d++) p *= size[l[d]];
    return p;
}

/* Contract A and B, keeping the labels in `keep`.  Final step (fout != NULL): write the
 * result to fout with axes fl[0..nf-1]; else hand it back in *res. */
static og_status ein_contract(const og_kernel_ctx *k, og_dtype dt, const int64_t *size, ein_opnd *A,
                              ein_opnd *B, uint64_t keep, int nf, const int *fl, void *fout,
                              ein_opnd *res)
{
    og_status st = ein_prereduce(k, dt, A, ein_mask(B) | keep, size);
    if (!st) st = ein_prereduce(k, dt, B, ein_mask(A) | keep, size);
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

    og_bgemm g = {0};
    g.dtype = dt;
    int want[OG_MAX_RANK], alt[OG_MAX_RANK], nw;
    /* A as [batch, M, K], or [batch, K, M] through transA */
    nw = ein_cat(want, bl, nbl, ml, nml, kl, nkl);
    ein_cat(alt, bl, nbl, kl, nkl, ml, nml);
    if (!ein_same(A->lab, A->rank, want, nw)) {
        if (ein_same(A->lab, A->rank, alt, nw))
            g.ta = true;
        else if ((st = ein_resum(k, dt, A, nw, want, size)))
            return st;
    }
    /* B as [batch, K, N], or [batch, N, K] through transB */
    nw = ein_cat(want, bl, nbl, kl, nkl, nl, nnl);
    ein_cat(alt, bl, nbl, nl, nnl, kl, nkl);
    if (!ein_same(B->lab, B->rank, want, nw)) {
        if (ein_same(B->lab, B->rank, alt, nw))
            g.tb = true;
        else if ((st = ein_resum(k, dt, B, nw, want, size)))
            return st;
    }
    int64_t nbatch = ein_prod(bl, nbl, size);
    g.m = ein_prod(ml, nml, size);
    g.n = ein_prod(nl, nnl, size);
    g.k = ein_prod(kl, nkl, size);
    g.a = A->data;
    g.b = B->data;
    g.lda = g.ta ? g.m : g.k;
    g.ldb = g.tb ? g.k : g.n;
    g.nb = 1;
    g.bdims[0] = nbatch;
    g.sa[0] = g.m * g.k;
    g.sb[0] = g.k * g.n;

    int rl[OG_MAX_RANK], ffl[OG_MAX_RANK], nff = 0;
    int nr = ein_cat(rl, bl, nbl, ml, nml, nl, nnl);
    for (int d = 0; d < nf; d++)
        if ((ma | mb) & (1ull << fl[d])) ffl[nff++] = fl[d];
    if (fout && ein_same(rl, nr, ffl, nff)) {
        g.c = fout;
        og_bgemm_run(k, &g);
        return OG_OK;
    }
    double n = (double)nbatch * (double)g.m * (double)g.n;
    if (n * (double)og_dtype_size(dt) > 9e18)
        return og_kernel_error(k, OG_ERR_NOMEM, "intermediate of %g elements is too large", n);
    void *c = og_malloc(k->alloc, (size_t)(n > 0 ? n : 1) * og_dtype_size(dt));
    if (!c) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for an intermediate");
    g.c = c;
    og_bgemm_run(k, &g);
    ein_opnd r = {.data = c, .rank = nr, .owned = c};
    for (int d = 0; d < nr; d++) {
        r.lab[d] = rl[d];
        r.dims[d] = size[rl[d]];
    }
    if (fout) {
        ein_sum(k, dt, &r, nff, ffl, size, fout); /* a pure transpose */
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
    og_dtype dt = y->dtype;
    if (dt != OG_FLOAT && dt != OG_DOUBLE && dt != OG_INT32 && dt != OG_INT64)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "Einsum of %s is not implemented",
                               og_dtype_name(dt));
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
        ein_sum(k, dt, &ops[0], nf, fl, size, y->data);
        goto done;
    }
    for (int t = 1; t < n_in && !st; t++) {
        uint64_t keep = fmask;
        for (int u = t + 1; u < n_in; u++) keep |= ein_mask(&ops[u]);
        bool last = t == n_in - 1;
        ein_opnd res = {0};
        st = ein_contract(k, dt, size, &ops[0], &ops[t], keep, last ? nf : 0, fl,
                          last ? y->data : NULL, &res);
        og_free(k->alloc, ops[0].owned);
        og_free(k->alloc, ops[t].owned);
        ops[t].owned = NULL;
        ops[0] = res; /* the running product lives in slot 0 */
    }
done:
    for (int i = 0; i < n_in; i++) og_free(k->alloc, ops[i].owned);
    og_free(k->alloc, ops);
    return st;
}
