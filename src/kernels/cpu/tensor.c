/* tensor.c: CPU kernels of the shape and data-movement ops.  They move bytes by element
 * size (1, 2, 4 or 8), so one code path serves every dtype, strings included (their char *
 * are moved, then copied: own_strings); Cast, which looks at values, is in tensor_cast.c.  Most ops
 * are expressed as one strided copy (copy_plan) that merges contiguous dims and then copies runs
 * with memcpy, fills broadcast runs, or transposes 2-D tiles. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cast.h"
#include "kernels/cpu/kernel.h"
#include "ops/tensor_shared.h"

/* ---- strided copy engine ------------------------------------------------------------ */

/* Tile needs two dims per input dim. */
#define PLAN_MAX (2 * OG_MAX_RANK)

typedef struct copy_plan {
    int rank;
    int64_t dims[PLAN_MAX];
    int64_t ss[PLAN_MAX], ds[PLAN_MAX]; /* source and destination strides, in elements */
} copy_plan;

/* Drop size-1 dims and merge neighbours that are contiguous in both source and
 * destination.  False when the copy is empty. */
static bool plan_simplify(copy_plan *p)
{
    int k = 0;
    for (int i = 0; i < p->rank; i++) {
        if (p->dims[i] == 0) return false;
        if (p->dims[i] == 1) continue;
        if (k > 0 && p->ss[k - 1] == p->ss[i] * p->dims[i] &&
            p->ds[k - 1] == p->ds[i] * p->dims[i]) {
            p->dims[k - 1] *= p->dims[i];
            p->ss[k - 1] = p->ss[i];
            p->ds[k - 1] = p->ds[i];
            continue;
        }
        p->dims[k] = p->dims[i];
        p->ss[k] = p->ss[i];
        p->ds[k] = p->ds[i];
        k++;
    }
    p->rank = k;
    return true;
}

/* One run of n elements: gather with source stride ss (0: fill) into stride ds. */
#define ROW_CASE(ES)                                                                               \
    case ES:                                                                                       \
        if (ss == 0) {                                                                             \
            unsigned char v[ES];                                                                   \
            memcpy(v, s, ES);                                                                      \
            for (int64_t i = 0; i < n; i++) memcpy(d + i * ds * ES, v, ES);                        \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) memcpy(d + i * ds * ES, s + i * ss * ES, ES);          \
        }                                                                                          \
        break;

static void copy_row(char *restrict d, const char *restrict s, int64_t n, int64_t ds, int64_t ss,
                     size_t es)
{
    if (ds == 1 && ss == 1) {
        memcpy(d, s, (size_t)n * es);
        return;
    }
    switch (es) {
        ROW_CASE(1)
        ROW_CASE(2)
        ROW_CASE(4)
        ROW_CASE(8)
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(d + i * ds * (int64_t)es, s + i * ss * (int64_t)es, es);
    }
}

/* Blocked 2-D transpose: source (a, b) at s[a + b*ssb], destination at d[a*dsa + b]; tiles
 * keep both sides in cache. */
#define TILE 32
#define T2D_CASE(ES)                                                                               \
    case ES:                                                                                       \
        for (int64_t a0 = 0; a0 < na; a0 += TILE)                                                  \
            for (int64_t b0 = 0; b0 < nb; b0 += TILE) {                                            \
                int64_t a1 = a0 + TILE < na ? a0 + TILE : na,                                      \
                        b1 = b0 + TILE < nb ? b0 + TILE : nb;                                      \
                for (int64_t a = a0; a < a1; a++)                                                  \
                    for (int64_t b = b0; b < b1; b++)                                              \
                        memcpy(d + (a * dsa + b) * ES, s + (a + b * ssb) * ES, ES);                \
            }                                                                                      \
        break;

/* One element of es bytes, a multiple of 4 (a short run of smaller elements, see
 * plan_copy), by 4-byte words: a call of memcpy per element costs more than the copy. */
static inline void copy_words(char *restrict d, const char *restrict s, size_t es)
{
    for (size_t w = 0; w < es; w += 4) memcpy(d + w, s + w, 4);
}

static void transpose_2d(char *restrict d, const char *restrict s, int64_t na, int64_t nb,
                         int64_t dsa, int64_t ssb, size_t es)
{
    switch (es) {
        T2D_CASE(1)
        T2D_CASE(2)
        T2D_CASE(4)
        T2D_CASE(8)
    default:
        for (int64_t a0 = 0; a0 < na; a0 += TILE)
            for (int64_t b0 = 0; b0 < nb; b0 += TILE) {
                int64_t a1 = a0 + TILE < na ? a0 + TILE : na, b1 = b0 + TILE < nb ? b0 + TILE : nb;
                for (int64_t a = a0; a < a1; a++)
                    for (int64_t b = b0; b < b1; b++) {
                        char *dd = d + (a * dsa + b) * (int64_t)es;
                        const char *ss = s + (a + b * ssb) * (int64_t)es;
                        if (es % 4 == 0)
                            copy_words(dd, ss, es);
                        else
                            memcpy(dd, ss, es);
                    }
            }
    }
}

/* Runs of at most this many bytes contiguous on both sides are moved as one element by
 * tiles when another dim steps over exactly one run in the source (swapping the two outer
 * axes of a [C, M, 3, 3] weight gradient): one small memcpy per run, in destination order,
 * strides the source by a page or more per run and measured 29x slower at 512x512x3x3
 * than at 256x256x3x3. */
#define RUN_AS_ELEM_MAX 64

/* Fold p's inner dim into the element (*es grows by its size) when RUN_AS_ELEM_MAX allows
 * and a tiled transpose then applies; true when folded. */
static bool plan_fold_run(copy_plan *p, size_t *es)
{
    int inner = p->rank - 1;
    if (p->rank < 2 || p->ds[inner] != 1 || p->ss[inner] != 1) return false;
    int64_t run = p->dims[inner];
    if (run < 2 || (uint64_t)run * *es > RUN_AS_ELEM_MAX || (run * (int64_t)*es) % 4 != 0)
        return false;
    bool tile = false;
    for (int j = 0; j < inner; j++) {
        if (p->ss[j] % run != 0 || p->ds[j] % run != 0) return false;
        tile = tile || p->ss[j] == run;
    }
    if (!tile) return false;
    for (int j = 0; j < inner; j++) {
        p->ss[j] /= run;
        p->ds[j] /= run;
    }
    p->rank = inner;
    *es *= (size_t)run;
    return true;
}

typedef struct plan_run {
    const copy_plan *p;
    char *dst;
    const char *src;
    size_t es;
    int tj;           /* the transposed dim (source stride 1), or -1 */
    int n_od;         /* outer dims, iterated one by one */
    int od[PLAN_MAX]; /* their indices in p */
    int64_t n_outer;
} plan_run;

/* Outer indices [b, e) of a plan: decode b once, then step like an odometer. */
static void plan_chunk(const plan_run *r, int64_t b, int64_t e)
{
    const copy_plan *p = r->p;
    int inner = p->rank - 1;
    int64_t idx[PLAN_MAX], so = 0, dof = 0, rem = b;
    for (int t = r->n_od - 1; t >= 0; t--) {
        int64_t n = p->dims[r->od[t]];
        idx[t] = rem % n;
        rem /= n;
        so += idx[t] * p->ss[r->od[t]];
        dof += idx[t] * p->ds[r->od[t]];
    }
    int64_t es = (int64_t)r->es;
    for (int64_t o = b; o < e; o++) {
        if (r->tj >= 0)
            transpose_2d(r->dst + dof * es, r->src + so * es, p->dims[r->tj], p->dims[inner],
                         p->ds[r->tj], p->ss[inner], r->es);
        else
            copy_row(r->dst + dof * es, r->src + so * es, p->dims[inner], p->ds[inner],
                     p->ss[inner], r->es);
        for (int t = r->n_od - 1; t >= 0; t--) {
            int a = r->od[t];
            so += p->ss[a];
            dof += p->ds[a];
            if (++idx[t] < p->dims[a]) break;
            so -= p->ss[a] * p->dims[a];
            dof -= p->ds[a] * p->dims[a];
            idx[t] = 0;
        }
    }
}

/* plan_copy's chunks for og_par_range: chunk ci of n of the outer rows */
typedef struct plan_par {
    const plan_run *r;
    int64_t chunks;
} plan_par;

static void plan_range(void *ctx, int64_t c0, int64_t c1, int slot)
{
    const plan_par *pp = ctx;
    const int64_t n_outer = pp->r->n_outer;
    (void)slot;
    for (int64_t ci = c0; ci < c1; ci++)
        plan_chunk(pp->r, n_outer * ci / pp->chunks, n_outer * (ci + 1) / pp->chunks);
}

/* Copy according to plan p (modified: simplified in place). */
static void plan_copy(const og_kernel_ctx *k, copy_plan *p, char *dst, const char *src, size_t es)
{
    if (!plan_simplify(p)) return;
    if (p->rank == 0) {
        memcpy(dst, src, es);
        return;
    }
    plan_fold_run(p, &es);
    plan_run r = {p, dst, src, es, -1, 0, {0}, 1};
    int inner = p->rank - 1;
    if (p->ds[inner] == 1 && p->ss[inner] > 1)
        for (int j = 0; j < inner; j++)
            if (p->ss[j] == 1) r.tj = j;
    int64_t total = p->dims[inner];
    for (int i = 0; i < inner; i++) {
        total *= p->dims[i];
        if (i == r.tj) continue;
        r.od[r.n_od++] = i;
        r.n_outer *= p->dims[i];
    }
    int64_t chunks = 1;
    if (k->threads > 1 && (double)total * (double)es / 4.0 > og_par_min_stream(k)) {
        chunks = (int64_t)k->threads * 4;
        if (chunks > r.n_outer) chunks = r.n_outer;
    }
    plan_par pp = {&r, chunks};
    og_par_range(k, k->threads, chunks, 1, plan_range, &pp);
}

/* A plan over `rank` dims with C-order contiguous destination. */
static void plan_init(copy_plan *p, int rank, const int64_t *dims)
{
    p->rank = rank;
    memcpy(p->dims, dims, (size_t)rank * sizeof *dims);
    og_strides(rank, dims, p->ds);
    og_strides(rank, dims, p->ss);
}

/* Fill n elements of size es with the element at v. */
#define FILL_CASE(ES)                                                                              \
    case ES: {                                                                                     \
        unsigned char x[ES];                                                                       \
        memcpy(x, v, ES);                                                                          \
        for (int64_t i = 0; i < n; i++) memcpy(d + i * ES, x, ES);                                 \
    } break;

static void fill_elems(char *restrict d, int64_t n, const void *v, size_t es)
{
    switch (es) {
        FILL_CASE(1)
        FILL_CASE(2)
        FILL_CASE(4)
        FILL_CASE(8)
    default:
        for (int64_t i = 0; i < n; i++) memcpy(d + i * (int64_t)es, v, es);
    }
}

/* fill_parallel's blocks of FILL_BLOCK elements for og_par_for */
#define FILL_BLOCK ((int64_t)1 << 16)
typedef struct fill_job {
    char *d;
    const void *v;
    size_t es;
    int64_t n;
} fill_job;

static void fill_range(void *ctx, int64_t b0, int64_t b1, int slot)
{
    const fill_job *j = ctx;
    (void)slot;
    const int64_t s0 = b0 * FILL_BLOCK, s1 = b1 * FILL_BLOCK < j->n ? b1 * FILL_BLOCK : j->n;
    fill_elems(j->d + s0 * (int64_t)j->es, s1 - s0, j->v, j->es);
}

static og_status fill_parallel(const og_kernel_ctx *k, og_tensor *t, const void *v)
{
    size_t es = og_dtype_size(t->dtype);
    int64_t n = t->numel, nb = (n + FILL_BLOCK - 1) / FILL_BLOCK;
    fill_job j = {t->data, v, es, n};
    og_par_for(k, nb, (double)FILL_BLOCK, OG_PAR_MIN_COMPUTE, fill_range, &j);
    return OG_OK;
}

/* The copy kernels move strings' char * like any 8-byte element; the outputs then take
 * copies of the strings they point to (core.h: og_tensor_own_strings). */
static og_status own_strings(og_tensor *const *out, int n_out)
{
    for (int j = 0; j < n_out; j++) {
        if (!out[j] || out[j]->dtype != OG_STRING) continue;
        og_status st = og_tensor_own_strings(out[j]);
        if (st) return st;
    }
    return OG_OK;
}

/* Views of kernel arguments as inference sees them, for the shared resolve helpers. */
static void tensors_to_vinfo(const og_tensor *const *in, int n_in, og_vinfo *vi)
{
    for (int i = 0; i < n_in; i++) {
        og_vinfo_unknown(&vi[i]);
        if (!in[i]) continue;
        og_vinfo_set(&vi[i], in[i]->dtype, in[i]->rank, in[i]->dims);
        vi[i].value = in[i];
    }
}

static og_op_ctx op_ctx_of(const og_kernel_ctx *k)
{
    og_op_ctx c = {k->node, k->alloc, NULL, true};
    return c;
}

/* ---- Concat, Split ------------------------------------------------------------------ */

/* Axis of Concat/Split's attribute, normalized (inference has checked it). */
static int norm_axis_k(int64_t axis, int rank) { return (int)(axis < 0 ? axis + rank : axis); }

static og_status concat_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                               og_tensor *const *out, int n_out)
{
    const og_axis_params *p = k->params;
    og_tensor *o = out[0];
    int axis = norm_axis_k(p->axis, o->rank);
    size_t es = og_dtype_storage_size(o->dtype);
    int64_t ostr[OG_MAX_RANK], off = 0;
    og_strides(o->rank, o->dims, ostr);
    for (int i = 0; i < n_in; i++) {
        if (in[i]->numel) {
            copy_plan pl;
            plan_init(&pl, in[i]->rank, in[i]->dims);
            memcpy(pl.ds, ostr, sizeof ostr);
            plan_copy(k, &pl, (char *)o->data + off * ostr[axis] * (int64_t)es, in[i]->data, es);
        }
        off += in[i]->dims[axis];
    }
    return own_strings(out, n_out);
}

static og_status split_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                              og_tensor *const *out, int n_out)
{
    const og_split_params *p = k->params;
    const og_tensor *x = in[0];
    int axis = norm_axis_k(p->axis, x->rank);
    size_t es = og_dtype_storage_size(x->dtype);
    int64_t istr[OG_MAX_RANK], off = 0;
    og_strides(x->rank, x->dims, istr);
    og_vinfo vi[2], *vo = NULL;
    bool omitted = false;
    for (int i = 0; i < n_out; i++) omitted |= !out[i];
    if (omitted) {
        /* an omitted output still takes its part of the axis: ask inference for sizes */
        og_op_ctx c = op_ctx_of(k);
        vo = og_malloc(k->alloc, (size_t)n_out * sizeof *vo);
        if (!vo) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
        tensors_to_vinfo(in, n_in < 2 ? n_in : 2, vi);
        for (int i = 0; i < n_out; i++) og_vinfo_unknown(&vo[i]);
        og_status st = k->node->op->infer(&c, vi, n_in, vo, n_out);
        if (st) {
            og_free(k->alloc, vo);
            return st;
        }
    }
    for (int i = 0; i < n_out; i++) {
        if (!out[i]) {
            off += vo[i].dims[axis];
            continue;
        }
        if (out[i]->numel) {
            copy_plan pl;
            plan_init(&pl, out[i]->rank, out[i]->dims);
            memcpy(pl.ss, istr, sizeof istr);
            plan_copy(k, &pl, out[i]->data, (const char *)x->data + off * istr[axis] * (int64_t)es,
                      es);
        }
        off += out[i]->dims[axis];
    }
    og_free(k->alloc, vo);
    return own_strings(out, n_out);
}

/* ---- Constant, ConstantOfShape ------------------------------------------------------ */

static og_status constant_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                 og_tensor *const *out, int n_out)
{
    const og_constant_params *p = k->params;
    if (p->t->dtype == OG_STRING) {
        if (out[0]->dtype != OG_STRING || out[0]->numel != p->t->numel)
            return og_kernel_error(k, OG_ERR_INTERNAL, "output size does not match the constant");
        og_status st = OG_OK;
        for (int64_t i = 0; !st && i < p->t->numel; i++) {
            const char *e = og_tensor_str(p->t, i);
            if (e[0]) st = og_tensor_set_str(out[0], i, e, strlen(e));
        }
        return st;
    }
    size_t nb = og_tensor_nbytes(p->t);
    if (nb != og_tensor_nbytes(out[0]))
        return og_kernel_error(k, OG_ERR_INTERNAL, "output size does not match the constant");
    if (nb) memcpy(out[0]->data, p->t->data, nb);
    return OG_OK;
}

static og_status cos_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, int n_out)
{
    const og_cos_params *p = k->params;
    return fill_parallel(k, out[0], p->bytes);
}

/* ---- Expand, Tile, Transpose, Slice ------------------------------------------------- */

static og_status expand_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                               og_tensor *const *out, int n_out)
{
    og_tensor *o = out[0];
    if (!o->numel) return OG_OK;
    copy_plan pl;
    plan_init(&pl, o->rank, o->dims);
    og_broadcast_strides(in[0]->rank, in[0]->dims, o->rank, o->dims, pl.ss);
    plan_copy(k, &pl, o->data, in[0]->data, og_dtype_storage_size(o->dtype));
    return own_strings(out, n_out);
}

static og_status tile_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0];
    og_tensor *o = out[0];
    if (!o->numel) return OG_OK;
    int64_t istr[OG_MAX_RANK], ostr[OG_MAX_RANK];
    og_strides(x->rank, x->dims, istr);
    og_strides(o->rank, o->dims, ostr);
    copy_plan pl;
    pl.rank = 2 * x->rank;
    for (int d = 0; d < x->rank; d++) {
        /* output index t*dim + j: repeat t reads the same input */
        pl.dims[2 * d] = o->dims[d] / x->dims[d];
        pl.ss[2 * d] = 0;
        pl.ds[2 * d] = x->dims[d] * ostr[d];
        pl.dims[2 * d + 1] = x->dims[d];
        pl.ss[2 * d + 1] = istr[d];
        pl.ds[2 * d + 1] = ostr[d];
    }
    plan_copy(k, &pl, o->data, x->data, og_dtype_storage_size(o->dtype));
    return own_strings(out, n_out);
}

static og_status transpose_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                  og_tensor *const *out, int n_out)
{
    const og_transpose_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *o = out[0];
    if (!o->numel) return OG_OK;
    int r = x->rank;
    int64_t istr[OG_MAX_RANK];
    og_strides(r, x->dims, istr);
    copy_plan pl;
    plan_init(&pl, r, o->dims);
    for (int d = 0; d < r; d++) pl.ss[d] = istr[p->n_perm ? p->perm[d] : r - 1 - d];
    plan_copy(k, &pl, o->data, x->data, og_dtype_storage_size(o->dtype));
    return own_strings(out, n_out);
}

static og_status slice_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                              og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0];
    og_tensor *o = out[0];
    if (!o->numel) return OG_OK;
    og_vinfo vi[5];
    og_op_ctx c = op_ctx_of(k);
    int64_t starts[OG_MAX_RANK], steps[OG_MAX_RANK], dims[OG_MAX_RANK];
    bool known;
    tensors_to_vinfo(in, n_in, vi);
    og_status st = og_tensor_slice_resolve(&c, vi, n_in, starts, steps, dims, &known);
    if (st) return st;
    int64_t istr[OG_MAX_RANK], off = 0;
    og_strides(x->rank, x->dims, istr);
    copy_plan pl;
    plan_init(&pl, o->rank, o->dims);
    for (int d = 0; d < x->rank; d++) {
        if (dims[d] != o->dims[d])
            return og_kernel_error(k, OG_ERR_INTERNAL, "slice output dim %d mismatch", d);
        /* with two or more outputs |step| < dim, so only a single one could overflow */
        pl.ss[d] = o->dims[d] > 1 ? istr[d] * steps[d] : 0;
        off += starts[d] * istr[d];
    }
    size_t es = og_dtype_storage_size(o->dtype);
    plan_copy(k, &pl, o->data, (const char *)x->data + off * (int64_t)es, es);
    return own_strings(out, n_out);
}

/* ---- Range, Shape, Size ------------------------------------------------------------- */

#define RANGE_LOOP(NAME, T)                                                                        \
    static void NAME(const void *start, const void *delta, void *out, int64_t n)                   \
    {                                                                                              \
        T s0 = *(const T *)start, dl = *(const T *)delta;                                          \
        T *restrict o = out;                                                                       \
        for (int64_t i = 0; i < n; i++) o[i] = (T)(s0 + (T)i * dl);                                \
    }

/* Integers step in unsigned arithmetic: i * delta may pass the type's range even where
 * start + i * delta (which inference keeps inside [start, limit)) does not. */
#define RANGE_INT_LOOP(NAME, T, U)                                                                 \
    static void NAME(const void *start, const void *delta, void *out, int64_t n)                   \
    {                                                                                              \
        U s0 = (U) * (const T *)start, dl = (U) * (const T *)delta;                                \
        T *restrict o = out;                                                                       \
        for (int64_t i = 0; i < n; i++) o[i] = (T)(U)(s0 + (U)i * dl);                             \
    }
RANGE_LOOP(range_f32, float)
RANGE_LOOP(range_f64, double)
RANGE_INT_LOOP(range_i16, int16_t, uint16_t)
RANGE_INT_LOOP(range_i32, int32_t, uint32_t)
RANGE_INT_LOOP(range_i64, int64_t, uint64_t)

typedef struct range_loop {
    void (*fn)(const void *start, const void *delta, void *out, int64_t n);
} range_loop;
static const range_loop range_loops[5] = {
    {range_f32}, {range_f64}, {range_i16}, {range_i32}, {range_i64}};

/* The loop of start's dtype (the output's), bound at session creation. */
static const void *select_range(const og_node *n, og_dtype t)
{
    (void)n;
    switch (t) {
    case OG_FLOAT: return &range_loops[0];
    case OG_DOUBLE: return &range_loops[1];
    case OG_INT16: return &range_loops[2];
    case OG_INT32: return &range_loops[3];
    case OG_INT64: return &range_loops[4];
    default: return NULL;
    }
}

static og_status range_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                              og_tensor *const *out, int n_out)
{
    const range_loop *l = k->impl ? k->impl : select_range(k->node, out[0]->dtype);
    if (!l)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "Range of %s is not supported",
                               og_dtype_name(out[0]->dtype));
    l->fn(in[0]->data, in[2]->data, out[0]->data, out[0]->numel);
    return OG_OK;
}

static og_status shape_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                              og_tensor *const *out, int n_out)
{
    int64_t s, e;
    og_shape_range(k->params, in[0]->rank, &s, &e);
    int64_t *o = out[0]->data;
    for (int64_t i = s; i < e; i++) o[i - s] = in[0]->dims[i];
    return OG_OK;
}

static og_status size_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out)
{
    *(int64_t *)out[0]->data = in[0]->numel;
    return OG_OK;
}

/* ---- Trilu -------------------------------------------------------------------------- */

/* Row r (of all matrices stacked): keep columns [k0, k1), zero the rest (all-zero bytes
 * are 0 in every dtype). */
static void trilu_row(char *d, const char *s, int64_t r, int64_t rows, int64_t cols, int64_t kk,
                      bool upper, size_t es)
{
    int64_t lim = r % rows + kk, k0 = 0, k1 = cols;
    if (upper)
        k0 = lim < 0 ? 0 : (lim > cols ? cols : lim);
    else
        k1 = lim + 1 < 0 ? 0 : (lim + 1 > cols ? cols : lim + 1);
    int64_t e = (int64_t)es, row = r * cols * e;
    d += row;
    s += row;
    if (k0 > 0) memset(d, 0, (size_t)(k0 * e));
    if (k1 > k0) memcpy(d + k0 * e, s + k0 * e, (size_t)((k1 - k0) * e));
    if (cols > k1) memset(d + k1 * e, 0, (size_t)((cols - k1) * e));
}

static og_status trilu_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                              og_tensor *const *out, int n_out)
{
    const og_trilu_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *o = out[0];
    if (!o->numel) return OG_OK;
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    int64_t kk = 0;
    if (n_in > 1 && in[1]) {
        if (in[1]->numel != 1)
            return og_kernel_error(k, OG_ERR_SHAPE, "input 1 (k) has %lld elements, expected 1",
                                   (long long)in[1]->numel);
        kk = og_tensor_get_i64(in[1], 0);
    }
    /* clamp so that i + k cannot overflow */
    if (kk > cols + 1) kk = cols + 1;
    if (kk < -rows - 1) kk = -rows - 1;
    size_t es = og_dtype_size(o->dtype);
    int64_t n_rows = x->numel / cols;
    const char *s = x->data;
    char *d = o->data;
    bool upper = p->upper;
    OG_PARALLEL_FOR(k, n_rows, cols, r, { trilu_row(d, s, r, rows, cols, kk, upper, es); });
    return OG_OK;
}

/* ---- Pad ---------------------------------------------------------------------------- */

/* Source index inside an interior of n elements for padded position i (relative to it). */
static int64_t pad_source(og_pad_fill mode, int64_t i, int64_t n)
{
    if (mode == OG_PAD_EDGE) return i < 0 ? 0 : (i >= n ? n - 1 : i);
    if (mode == OG_PAD_WRAP) return ((i % n) + n) % n;
    if (n == 1) return 0; /* reflect */
    int64_t period = 2 * (n - 1), m = ((i % period) + period) % period;
    return m >= n ? period - m : m;
}

/* Pad's constant: before version 11 the attribute `value` (a float) converted to the data's
 * dtype by the function bound to it (as Cast converts: saturating, NaN to 0, through float
 * for the 16-bit floats); from 11 on, input 2's bytes as they are (of_float NULL). */
typedef struct pad_value {
    void (*of_float)(float v, void *out);
} pad_value;
#define PAD_OF_FLOAT(C, DE, DT, DB, DF, DMIN, DMAX)                                                \
    static void pad_of_##DE(float v, void *out)                                                    \
    {                                                                                              \
        DT d = DB                    ? (DT)(v != 0)                                                \
               : DF                  ? (DT)v                                                       \
               : v != v              ? (DT)0                                                       \
               : v <= (double)(DMIN) ? (DT)(DMIN)                                                  \
               : v >= (double)(DMAX) ? (DT)(DMAX)                                                  \
                                     : (DT)v;                                                      \
        memcpy(out, &d, sizeof d);                                                                 \
    }
CAST_TYPES(_, PAD_OF_FLOAT)
static void pad_of_half(float v, void *out)
{
    uint16_t h = og_float_to_half(v);
    memcpy(out, &h, sizeof h);
}
static void pad_of_bf16(float v, void *out)
{
    uint16_t h = og_float_to_bfloat16(v);
    memcpy(out, &h, sizeof h);
}
#define PAD_ENTRY(C, DE, DT, DB, DF, DMIN, DMAX) {DE, {pad_of_##DE}},
static const struct {
    og_dtype t;
    pad_value v;
} pad_values[] = {CAST_TYPES(_, PAD_ENTRY){OG_FLOAT16, {pad_of_half}},
                  {OG_BFLOAT16, {pad_of_bf16}}};
static const pad_value pad_bytes = {NULL};

static const void *select_pad(const og_node *n, og_dtype t)
{
    if (n->since_version >= 11) return og_dtype_size(t) ? &pad_bytes : NULL;
    for (size_t i = 0; i < sizeof pad_values / sizeof pad_values[0]; i++)
        if (pad_values[i].t == t) return &pad_values[i].v;
    return NULL;
}

static og_status pad_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, int n_out)
{
    const og_pad_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *o = out[0];
    if (!o->numel) return OG_OK;
    og_vinfo vi[4];
    og_op_ctx c = op_ctx_of(k);
    int64_t pb[OG_MAX_RANK], pe[OG_MAX_RANK];
    bool known, any_pad = false, empty = false;
    tensors_to_vinfo(in, n_in, vi);
    og_status st = og_tensor_pad_resolve(&c, vi, n_in, pb, pe, &known);
    if (st) return st;
    int r = x->rank;
    size_t es = og_dtype_size(o->dtype);
    int64_t istr[OG_MAX_RANK], ostr[OG_MAX_RANK], cnt[OG_MAX_RANK], db[OG_MAX_RANK];
    int64_t soff = 0, doff = 0;
    og_strides(r, x->dims, istr);
    og_strides(r, o->dims, ostr);
    for (int d = 0; d < r; d++) {
        int64_t sb = pb[d] < 0 ? -pb[d] : 0;
        db[d] = pb[d] > 0 ? pb[d] : 0;
        cnt[d] = x->dims[d] - sb - (pe[d] < 0 ? -pe[d] : 0);
        if (cnt[d] <= 0) empty = true;
        any_pad |= pb[d] > 0 || pe[d] > 0;
        soff += sb * istr[d];
        doff += db[d] * ostr[d];
    }
    if (p->mode == OG_PAD_CONSTANT) {
        unsigned char val[8] = {0};
        const pad_value *pv = k->impl ? k->impl : select_pad(k->node, x->dtype);
        if (!pv)
            return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                                   og_dtype_name(x->dtype));
        if (pv->of_float) /* before 11: the float attribute in the data's dtype */
            pv->of_float(p->value, val);
        else if (n_in > 2 && in[2] && in[2]->numel == 1)
            memcpy(val, in[2]->data, es);
        if (any_pad || empty) fill_parallel(k, o, val);
    } else if (empty) {
        return og_kernel_error(k, OG_ERR_SHAPE, "cannot pad an empty tensor in this mode");
    }
    if (empty) return OG_OK;
    char *ob = o->data;
    copy_plan pl;
    plan_init(&pl, r, cnt);
    memcpy(pl.ss, istr, sizeof istr);
    memcpy(pl.ds, ostr, sizeof ostr);
    plan_copy(k, &pl, ob + doff * (int64_t)es, (const char *)x->data + soff * (int64_t)es, es);
    if (p->mode == OG_PAD_CONSTANT) return OG_OK;
    /* Axis by axis, fill the pad zones from the interior: axes before d are complete over
     * the whole output, axes after d only over the interior. */
    for (int d = 0; d < r; d++) {
        int64_t lo = db[d], n = cnt[d], base = 0;
        if (lo == 0 && lo + n == o->dims[d]) continue;
        int64_t dims[OG_MAX_RANK];
        for (int a = 0; a < r; a++) {
            dims[a] = a < d ? o->dims[a] : (a == d ? 1 : cnt[a]);
            if (a > d) base += db[a] * ostr[a];
        }
        for (int64_t q = 0; q < o->dims[d]; q++) {
            if (q == lo) q = lo + n;
            if (q >= o->dims[d]) break;
            int64_t srcq = lo + pad_source(p->mode, q - lo, n);
            plan_init(&pl, r, dims);
            memcpy(pl.ss, ostr, sizeof ostr);
            memcpy(pl.ds, ostr, sizeof ostr);
            plan_copy(k, &pl, ob + (base + q * ostr[d]) * (int64_t)es,
                      ob + (base + srcq * ostr[d]) * (int64_t)es, es);
        }
    }
    return OG_OK;
}

/* ---- DepthToSpace, SpaceToDepth ----------------------------------------------------- */

/* One strided copy: the output walked as [N, C', H, b, W, b] (DepthToSpace) or
 * [N, b, b, C, H', W'] (SpaceToDepth), each index's stride in the input beside it.
 *   DepthToSpace DCR: out (n, c', h·b+i, w·b+j) = in (n, (i·b + j)·C' + c', h, w)
 *                CRD: out (n, c', h·b+i, w·b+j) = in (n, c'·b² + i·b + j, h, w)
 *   SpaceToDepth:     out (n, (i·b + j)·C + c, h', w') = in (n, c, h'·b + i, w'·b + j) */
static og_status d2s_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, int n_out)
{
    const og_d2s_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    int64_t b = p->blocksize, N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    if (y->numel == 0) return OG_OK;
    copy_plan pl;
    pl.rank = 6;
    if (strcmp(k->node->op_type, "DepthToSpace") == 0) {
        int64_t Co = C / (b * b), HW = H * W;
        int64_t dims[6] = {N, Co, H, b, W, b};
        int64_t dcr[6] = {C * HW, HW, W, b * Co * HW, 1, Co * HW};
        int64_t crd[6] = {C * HW, b * b * HW, W, b * HW, 1, HW};
        memcpy(pl.dims, dims, sizeof dims);
        memcpy(pl.ss, p->crd ? crd : dcr, sizeof dcr);
    } else {
        int64_t Ho = H / b, Wo = W / b;
        int64_t dims[6] = {N, b, b, C, Ho, Wo};
        int64_t ss[6] = {C * H * W, W, 1, H * W, b * W, b};
        memcpy(pl.dims, dims, sizeof dims);
        memcpy(pl.ss, ss, sizeof ss);
    }
    og_strides(6, pl.dims, pl.ds);
    plan_copy(k, &pl, y->data, x->data, og_dtype_size(x->dtype));
    return OG_OK;
}

/* ---- CenterCropPad ------------------------------------------------------------------ */

static og_status ccp_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    og_op_ctx c = op_ctx_of(k);
    int64_t shape[OG_MAX_RANK], od[OG_MAX_RANK], crop[OG_MAX_RANK], pad[OG_MAX_RANK];
    int r = x->rank;
    if (in[1]->numel > OG_MAX_RANK)
        return og_kernel_error(k, OG_ERR_SHAPE, "input 1 (shape) has %lld entries, above %d",
                               (long long)in[1]->numel, OG_MAX_RANK);
    for (int64_t i = 0; i < in[1]->numel; i++) shape[i] = og_tensor_get_i64(in[1], i);
    og_status st =
        og_tensor_ccp_resolve(&c, k->params, r, x->dims, shape, (int)in[1]->numel, od, crop, pad);
    if (st || y->numel == 0) return st;
    size_t es = og_dtype_size(x->dtype);
    memset(y->data, 0, (size_t)y->numel * es); /* zero bits: 0, 0.0 or false in every dtype */
    if (x->numel == 0) return OG_OK;
    /* the block both share: the input's from crop, the output's from pad */
    copy_plan pl;
    int64_t xs[OG_MAX_RANK], ys[OG_MAX_RANK], soff = 0, doff = 0;
    og_strides(r, x->dims, xs);
    og_strides(r, y->dims, ys);
    pl.rank = r;
    for (int d = 0; d < r; d++) {
        pl.dims[d] = x->dims[d] < y->dims[d] ? x->dims[d] : y->dims[d]; /* crop or pad */
        pl.ss[d] = xs[d];
        pl.ds[d] = ys[d];
        soff += crop[d] * xs[d];
        doff += pad[d] * ys[d];
    }
    plan_copy(k, &pl, (char *)y->data + doff * (int64_t)es,
              (const char *)x->data + soff * (int64_t)es, es);
    return OG_OK;
}

/* ---- EyeLike ------------------------------------------------------------------------ */

/* EyeLike's loops: ones of the output's dtype at (i, i + k) of a zeroed R x C matrix. */
#define EYE_DIAG(NAME, T, ONE)                                                                     \
    static void NAME(void *yv, int64_t R, int64_t C, int64_t k)                                    \
    {                                                                                              \
        T *y = yv, one = ONE;                                                                      \
        for (int64_t i = k < 0 ? -k : 0; i < R && i + k < C; i++) y[i * C + i + k] = one;          \
    }
EYE_DIAG(eye_f32, float, 1.0f)
EYE_DIAG(eye_f64, double, 1.0)
EYE_DIAG(eye_f16, uint16_t, og_float_to_half(1.0f))
EYE_DIAG(eye_bf16, uint16_t, og_float_to_bfloat16(1.0f))
EYE_DIAG(eye_i8, int8_t, 1)
EYE_DIAG(eye_i16, int16_t, 1)
EYE_DIAG(eye_i32, int32_t, 1)
EYE_DIAG(eye_i64, int64_t, 1)
EYE_DIAG(eye_u8, uint8_t, 1) /* uint8 and bool */
EYE_DIAG(eye_u16, uint16_t, 1)
EYE_DIAG(eye_u32, uint32_t, 1)
EYE_DIAG(eye_u64, uint64_t, 1)

typedef struct eye_loop {
    og_dtype t;
    void (*diag)(void *y, int64_t R, int64_t C, int64_t k);
} eye_loop;
/* the spec's dtypes (both the input's and the output's): the numbers and bool */
static const eye_loop eye_t[] = {
    {OG_FLOAT, eye_f32}, {OG_DOUBLE, eye_f64}, {OG_FLOAT16, eye_f16}, {OG_BFLOAT16, eye_bf16},
    {OG_INT8, eye_i8},   {OG_INT16, eye_i16},  {OG_INT32, eye_i32},   {OG_INT64, eye_i64},
    {OG_UINT8, eye_u8},  {OG_UINT16, eye_u16}, {OG_UINT32, eye_u32},  {OG_UINT64, eye_u64},
    {OG_BOOL, eye_u8}};

static const eye_loop *eye_of(og_dtype t)
{
    for (size_t i = 0; i < sizeof eye_t / sizeof eye_t[0]; i++)
        if (eye_t[i].t == t) return &eye_t[i];
    return NULL;
}

/* the loop of the output's dtype: the attribute dtype, else the input's (t) */
static const void *select_eyelike(const og_node *n, og_dtype t)
{
    og_dtype o = ((const og_eyelike_params *)n->params)->dtype;
    return eye_of(t) ? eye_of(o != OG_UNDEFINED ? o : t) : NULL;
}

static og_status eyelike_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                og_tensor *const *out, int n_out)
{
    const og_eyelike_params *p = k->params;
    og_tensor *y = out[0];
    const eye_loop *l = k->impl ? k->impl : select_eyelike(k->node, in[0]->dtype);
    if (!l || l->t != y->dtype)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element types %s -> %s are not supported",
                               og_dtype_name(in[0]->dtype), og_dtype_name(y->dtype));
    if (y->numel == 0) return OG_OK;
    memset(y->data, 0, (size_t)y->numel * og_dtype_size(y->dtype));
    l->diag(y->data, y->dims[0], y->dims[1], p->k);
    return OG_OK;
}

/* ---- the table ---------------------------------------------------------------------- */

/* Range's loops (select_range): its output has the dtype of start, input 0. */
static const og_dtype range_types[] = {OG_FLOAT, OG_DOUBLE, OG_INT16, OG_INT32, OG_INT64, 0};

/* The entries without types move bytes of any dtype by element size (Concat, Expand, Slice,
 * Split, Tile, Transpose, Trilu, DepthToSpace, SpaceToDepth, CenterCropPad; Constant and
 * ConstantOfShape copy their attribute's bytes) or read only shapes (Shape, Size).  Pad
 * moves bytes too, its constant bound (select_pad: before version 11 the conversion of the
 * float attribute to the data's dtype); EyeLike binds the loop writing ones of its output's
 * dtype (select_eyelike). */
const og_kernel_def og_cpu_tensor[] = {
    {.name = "Concat", .domain = "", .fn = concat_kernel, .strings = 1},
    {.name = "Constant", .domain = "", .fn = constant_kernel},
    {.name = "ConstantOfShape", .domain = "", .fn = cos_kernel},
    {.name = "Expand", .domain = "", .fn = expand_kernel, .strings = 1},
    {.name = "Range",
     .domain = "",
     .fn = range_kernel,
     .types = range_types,
     .select = select_range},
    {.name = "Shape", .domain = "", .fn = shape_kernel, .strings = 1},
    {.name = "Size", .domain = "", .fn = size_kernel, .strings = 1},
    {.name = "Split", .domain = "", .fn = split_kernel, .strings = 1},
    {.name = "Slice", .domain = "", .fn = slice_kernel, .strings = 1},
    {.name = "Tile", .domain = "", .fn = tile_kernel, .strings = 1},
    {.name = "Transpose", .domain = "", .fn = transpose_kernel, .strings = 1},
    {.name = "Trilu", .domain = "", .fn = trilu_kernel},
    {.name = "Pad", .domain = "", .fn = pad_kernel, .select = select_pad},
    {.name = "DepthToSpace", .domain = "", .fn = d2s_kernel},
    {.name = "SpaceToDepth", .domain = "", .fn = d2s_kernel},
    {.name = "CenterCropPad", .domain = "", .fn = ccp_kernel},
    {.name = "EyeLike", .domain = "", .fn = eyelike_kernel, .select = select_eyelike},
    {.name = NULL}};
