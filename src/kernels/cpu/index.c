/* index.c: CPU kernels of Gather, GatherElements, GatherND, OneHot, Scatter,
 * ScatterElements, ScatterND, NonZero, Compress and ReverseSequence.
 *
 * Every kernel first turns its indices into validated int64 element offsets (one pass,
 * failing with the offending value on an index out of range), then moves elements by
 * element size (1/2/4/8 bytes) or applies a typed reduction, so no kernel ever reads or
 * writes out of bounds and the data movement loops stay free of checks. */
#include <stdio.h>
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "ops/index_params.h"

/* ---- helpers --------------------------------------------------------------------- */

static int64_t numel_of(int rank, const int64_t *dims, int from, int to)
{
    int64_t n = 1;
    for (int d = from; d < to && d < rank; d++) n *= dims[d];
    return n;
}

/* Index v normalized into [0, limit) in *out (a negative one counts from the end); false if
 * out of range (*out is then left as it was). */
static inline bool norm_index(int64_t v, int64_t limit, int64_t *out)
{
    int64_t w = v < 0 ? v + limit : v;
    if (w < 0 || w >= limit) return false;
    *out = w;
    return true;
}

/* Index element i, of value v, is out of range. */
static og_status index_error(const og_kernel_ctx *k, int64_t v, int64_t i, int64_t limit,
                             const char *what)
{
    return og_kernel_error(k, OG_ERR_RUNTIME,
                           "input 1 (indices) element %lld has value %lld, out of range "
                           "[%lld, %lld) for %s of size %lld",
                           (long long)i, (long long)v, (long long)-limit, (long long)limit, what,
                           (long long)limit);
}

static og_status check_index_type(const og_kernel_ctx *k, const og_tensor *t)
{
    if (t->dtype != OG_INT32 && t->dtype != OG_INT64)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED,
                               "input 1 (indices) must be int32 or int64, got %s",
                               og_dtype_name(t->dtype));
    return OG_OK;
}

/* The indices' typed read: n int32 or int64 indices from element `from`, widened to int64.
 * Gather, GatherElements and GatherND bind it (select_index); the Scatter kernels bind it
 * together with their update loop (select_scatter). */
typedef struct index_read {
    void (*widen)(const void *ind, int64_t from, int64_t n, int64_t *out);
    /* the n indices normalized into [0, limit) in out: the first out of range, or -1 */
    int64_t (*normalize)(const void *ind, int64_t n, int64_t limit, int64_t *out);
} index_read;
#define INDEX_READ(S, T)                                                                           \
    static void widen_##S(const void *ind, int64_t from, int64_t n, int64_t *out)                  \
    {                                                                                              \
        const T *v = (const T *)ind + from;                                                        \
        for (int64_t i = 0; i < n; i++) out[i] = v[i];                                             \
    }                                                                                              \
    static int64_t normalize_##S(const void *ind, int64_t n, int64_t limit, int64_t *out)          \
    {                                                                                              \
        const T *v = ind;                                                                          \
        for (int64_t i = 0; i < n; i++) {                                                          \
            int64_t w = v[i] < 0 ? (int64_t)v[i] + limit : (int64_t)v[i];                          \
            if (w < 0 || w >= limit) return i;                                                     \
            out[i] = w;                                                                            \
        }                                                                                          \
        return -1;                                                                                 \
    }
INDEX_READ(i32, int32_t)
INDEX_READ(i64, int64_t)
static const index_read index_reads[2] = {{widen_i32, normalize_i32}, {widen_i64, normalize_i64}};

static const void *select_index(const og_node *n, og_dtype t)
{
    (void)n;
    return t == OG_INT32 ? &index_reads[0] : t == OG_INT64 ? &index_reads[1] : NULL;
}

/* The read of a Gather call k: its binding when bound, else the one of the indices' dtype
 * (after check_index_type). */
static const index_read *index_read_of(const og_kernel_ctx *k, const og_tensor *ind)
{
    return k->impl ? k->impl : select_index(k->node, ind->dtype);
}

static int64_t *alloc_offsets(const og_kernel_ctx *k, int64_t n)
{
    return og_malloc(k->alloc, (size_t)(n > 0 ? n : 1) * sizeof(int64_t));
}

/* out[i] = src[off[i]] (elements of esize bytes). */
#define OG_GATHER_T(T)                                                                             \
    static void gather_##T(const og_kernel_ctx *k, T *restrict o, const T *restrict s,             \
                           const int64_t *restrict off, int64_t n)                                 \
    {                                                                                              \
        OG_PARALLEL_FOR(k, (n + 4095) / 4096, 4096, b, {                                           \
            int64_t e = (b + 1) * 4096 < n ? (b + 1) * 4096 : n;                                   \
            for (int64_t i = b * 4096; i < e; i++) o[i] = s[off[i]];                               \
        });                                                                                        \
    }                                                                                              \
    /* Gather along an inner axis: row r of the output takes src row r at the n offsets. */        \
    static void gather_rows_##T(const og_kernel_ctx *k, T *restrict o, const T *restrict s,        \
                                const int64_t *restrict off, int64_t rows, int64_t n,              \
                                int64_t row_len)                                                   \
    {                                                                                              \
        OG_PARALLEL_FOR(k, rows, n, r, {                                                           \
            for (int64_t j = 0; j < n; j++) o[r * n + j] = s[r * row_len + off[j]];                \
        });                                                                                        \
    }
OG_GATHER_T(uint8_t)
OG_GATHER_T(uint16_t)
OG_GATHER_T(uint32_t)
OG_GATHER_T(uint64_t)

static void gather_elems(const og_kernel_ctx *k, size_t esize, void *o, const void *s,
                         const int64_t *off, int64_t n)
{
    switch (esize) {
    case 1: gather_uint8_t(k, o, s, off, n); break;
    case 2: gather_uint16_t(k, o, s, off, n); break;
    case 4: gather_uint32_t(k, o, s, off, n); break;
    default: gather_uint64_t(k, o, s, off, n); break;
    }
}

static void gather_rows(const og_kernel_ctx *k, size_t esize, void *o, const void *s,
                        const int64_t *off, int64_t rows, int64_t n, int64_t row_len)
{
    switch (esize) {
    case 1: gather_rows_uint8_t(k, o, s, off, rows, n, row_len); break;
    case 2: gather_rows_uint16_t(k, o, s, off, rows, n, row_len); break;
    case 4: gather_rows_uint32_t(k, o, s, off, rows, n, row_len); break;
    default: gather_rows_uint64_t(k, o, s, off, rows, n, row_len); break;
    }
}

/* Copy blocks of `blk` bytes: output block i = r * n + j takes src block
 * r * row_len + off[j]. */
static inline void copy_block(char *o, const char *s, const int64_t *off, int64_t i, int64_t n,
                              int64_t row_len, size_t blk)
{
    int64_t r = i / n, j = i % n;
    memcpy(o + (size_t)i * blk, s + (size_t)(r * row_len + off[j]) * blk, blk);
}

/* gather_blocks' items for og_par_for: output block i */
typedef struct blocks_job {
    char *o;
    const char *s;
    const int64_t *off;
    int64_t n, row_len;
    size_t blk;
} blocks_job;

static void blocks_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const blocks_job *j = ctx;
    (void)slot;
    for (int64_t i = i0; i < i1; i++) copy_block(j->o, j->s, j->off, i, j->n, j->row_len, j->blk);
}

static void gather_blocks(const og_kernel_ctx *k, char *o, const char *s, const int64_t *off,
                          int64_t rows, int64_t n, int64_t row_len, size_t blk)
{
    blocks_job j = {o, s, off, n, row_len, blk};
    og_par_for(k, rows * n, (double)blk / 4.0, OG_PAR_MIN_COMPUTE, blocks_range, &j);
}

/* Scatter updates: out[off[i]*L + j] op= upd[i*L + j] in index order (duplicates resolve
 * as the spec's sequential loop does, so no threads). */
#define OG_SCATTER_T(T)                                                                            \
    static inline void scatter_t_##T(T *restrict o, const T *restrict u,                           \
                                     const int64_t *restrict off, int64_t n, int64_t L,            \
                                     og_scatter_reduction red)                                     \
    {                                                                                              \
        switch (red) {                                                                             \
        case OG_SCATTER_NONE:                                                                      \
            if (L == 1) /* one element per index: no copy loop (a library call) per element */     \
                for (int64_t i = 0; i < n; i++) o[off[i]] = u[i];                                  \
            else                                                                                   \
                for (int64_t i = 0; i < n; i++)                                                    \
                    for (int64_t j = 0; j < L; j++) o[off[i] * L + j] = u[i * L + j];              \
            break;                                                                                 \
        case OG_SCATTER_ADD:                                                                       \
            for (int64_t i = 0; i < n; i++)                                                        \
                for (int64_t j = 0; j < L; j++) o[off[i] * L + j] += u[i * L + j];                 \
            break;                                                                                 \
        case OG_SCATTER_MUL:                                                                       \
            for (int64_t i = 0; i < n; i++)                                                        \
                for (int64_t j = 0; j < L; j++) o[off[i] * L + j] *= u[i * L + j];                 \
            break;                                                                                 \
        case OG_SCATTER_MAX:                                                                       \
            for (int64_t i = 0; i < n; i++)                                                        \
                for (int64_t j = 0; j < L; j++) {                                                  \
                    T a = o[off[i] * L + j], b = u[i * L + j];                                     \
                    o[off[i] * L + j] = b > a ? b : a;                                             \
                }                                                                                  \
            break;                                                                                 \
        case OG_SCATTER_MIN:                                                                       \
            for (int64_t i = 0; i < n; i++)                                                        \
                for (int64_t j = 0; j < L; j++) {                                                  \
                    T a = o[off[i] * L + j], b = u[i * L + j];                                     \
                    o[off[i] * L + j] = b < a ? b : a;                                             \
                }                                                                                  \
            break;                                                                                 \
        }                                                                                          \
    }                                                                                              \
    static void scatter_##T(void *o, const void *u, const int64_t *off, int64_t n, int64_t L,      \
                            og_scatter_reduction red)                                              \
    {                                                                                              \
        scatter_t_##T(o, u, off, n, L, red);                                                       \
    }
OG_SCATTER_T(float)
OG_SCATTER_T(double)
OG_SCATTER_T(int32_t)
OG_SCATTER_T(int64_t)
OG_SCATTER_T(uint8_t)
OG_SCATTER_T(uint16_t)

/* Scatter's loop: without a reduction, the element size's (any element type); with one,
 * the dtype's (float32/64 and int32/64, which infer enforced).  Bound at session creation
 * from the data's dtype (input 0; the type constraint reads the indices', input 1). */
typedef struct scatter_loop {
    void (*fn)(void *o, const void *u, const int64_t *off, int64_t n, int64_t L,
               og_scatter_reduction red);
} scatter_loop;
/* [0..3]: by element size (1, 2, 4, 8 bytes); [4..7]: float32, float64, int32, int64 */
static const scatter_loop scatter_loops[8] = {
    {scatter_uint8_t}, {scatter_uint16_t}, {scatter_int32_t}, {scatter_int64_t},
    {scatter_float},   {scatter_double},   {scatter_int32_t}, {scatter_int64_t}};

/* The index into scatter_loops of data dtype t's loop, -1 if none. */
static int scatter_loop_index(og_dtype t, og_scatter_reduction red)
{
    if (red == OG_SCATTER_NONE) {
        switch (og_dtype_size(t)) {
        case 1: return 0;
        case 2: return 1;
        case 4: return 2;
        case 8: return 3;
        default: return -1;
        }
    }
    switch (t) {
    case OG_FLOAT: return 4;
    case OG_DOUBLE: return 5;
    case OG_INT32: return 6;
    case OG_INT64: return 7;
    default: return -1;
    }
}

static const scatter_loop *scatter_loop_of(og_dtype t, og_scatter_reduction red)
{
    int i = scatter_loop_index(t, red);
    return i < 0 ? NULL : &scatter_loops[i];
}

/* What a Scatter node binds: its update loop and the read of its indices' dtype, one entry
 * per (index dtype int32/int64, loop of scatter_loops). */
typedef struct scatter_bound {
    const scatter_loop *loop;
    const index_read *read;
} scatter_bound;
#define SCATTER_BOUND_ROW(R)                                                                       \
    {                                                                                              \
        {&scatter_loops[0], R}, {&scatter_loops[1], R}, {&scatter_loops[2], R},                    \
            {&scatter_loops[3], R}, {&scatter_loops[4], R}, {&scatter_loops[5], R},                \
            {&scatter_loops[6], R},                                                                \
        {                                                                                          \
            &scatter_loops[7], R                                                                   \
        }                                                                                          \
    }
static const scatter_bound scatter_bounds[2][8] = {SCATTER_BOUND_ROW(&index_reads[0]),
                                                   SCATTER_BOUND_ROW(&index_reads[1])};

/* Two type variables: the indices' (the constraint, whose read is bound) and the data's (the
 * update loop). */
static const void *select_scatter(const og_node *n, const og_dtype *t, const og_dtype *out)
{
    (void)out; /* the inputs' dtypes (and attributes) fix the outputs' */
    const og_index_params *p = n->params;
    if (t[0] == OG_UNDEFINED) return OG_KERNEL_AT_RUN;
    int i = scatter_loop_index(t[0], p->reduction);
    int r = t[1] == OG_INT32 ? 0 : t[1] == OG_INT64 ? 1 : -1;
    return i < 0 || r < 0 ? NULL : &scatter_bounds[r][i];
}

/* The indices' read of a Scatter call: its binding's, else the one of the indices' dtype
 * (after check_index_type). */
static const index_read *scatter_read_of(const og_kernel_ctx *k, const og_tensor *ind)
{
    const scatter_bound *b = k->impl;
    return b ? b->read : select_index(k->node, ind->dtype);
}

static og_status scatter_apply(const og_kernel_ctx *k, og_tensor *out, const og_tensor *upd,
                               const int64_t *off, int64_t n, int64_t L, og_scatter_reduction red)
{
    const scatter_bound *b = k->impl;
    const scatter_loop *l = b ? b->loop : scatter_loop_of(out->dtype, red);
    if (!l)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported here",
                               og_dtype_name(out->dtype));
    l->fn(out->data, upd->data, off, n, L, red);
    return OG_OK;
}

static og_status copy_input(const og_tensor *src, og_tensor *dst)
{
    if (dst->data != src->data && src->numel > 0)
        memcpy(dst->data, src->data, (size_t)src->numel * og_dtype_size(src->dtype));
    return OG_OK;
}

static int norm_axis(int64_t axis, int rank) { return (int)(axis < 0 ? axis + rank : axis); }

/* ---- Gather ---------------------------------------------------------------------- */

static og_status k_gather(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    const og_index_params *p = k->params;
    const og_tensor *data = in[0], *ind = in[1];
    og_tensor *y = out[0];
    og_status st = k->impl ? OG_OK : check_index_type(k, ind);
    if (st) return st;
    const index_read *rd = index_read_of(k, ind);
    int r = data->rank, axis = norm_axis(p->axis, r);
    int64_t outer = numel_of(r, data->dims, 0, axis), n_axis = data->dims[axis];
    int64_t inner = numel_of(r, data->dims, axis + 1, r), n_ind = ind->numel;
    if (y->numel == 0) return OG_OK;
    int64_t *off = alloc_offsets(k, n_ind);
    if (!off) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    int64_t bad = rd->normalize(ind->data, n_ind, n_axis, off);
    if (bad >= 0) {
        rd->widen(ind->data, bad, 1, off);
        st = index_error(k, off[0], bad, n_axis, "data axis");
        goto done;
    }
    size_t es = og_dtype_storage_size(data->dtype);
    if (inner == 1)
        gather_rows(k, es, y->data, data->data, off, outer, n_ind, n_axis);
    else
        gather_blocks(k, y->data, data->data, off, outer, n_ind, n_axis, (size_t)inner * es);
    /* strings: the char * moved as 8-byte elements; the output takes copies */
    if (y->dtype == OG_STRING) st = og_tensor_own_strings(y);
done:
    og_free(k->alloc, off);
    return st;
}

/* ---- GatherElements / ScatterElements ---------------------------------------------- */

/* Offsets into data (element units) of every element of indices, along `axis`. */
static og_status element_offsets(const og_kernel_ctx *k, const og_tensor *data,
                                 const og_tensor *ind, const index_read *rd, int axis, int64_t *off)
{
    int r = data->rank;
    int64_t ds[OG_MAX_RANK];
    og_strides(r, data->dims, ds);
    int64_t last = ind->dims[r - 1], rows = ind->numel / (last ? last : 1),
            n_axis = data->dims[axis];
    if (ind->numel == 0) return OG_OK;
    for (int64_t row = 0; row < rows; row++) {
        /* data offset of this row, axis coordinate left at 0 */
        int64_t base = 0, rem = row;
        for (int d = r - 2; d >= 0; d--) {
            int64_t c = rem % ind->dims[d];
            rem /= ind->dims[d];
            if (d != axis) base += c * ds[d];
        }
        int64_t *o = off + row * last;
        int64_t i0 = row * last;
        rd->widen(ind->data, i0, last, o);
        if (axis == r - 1) {
            for (int64_t j = 0; j < last; j++) {
                int64_t v;
                if (!norm_index(o[j], n_axis, &v))
                    return index_error(k, o[j], i0 + j, n_axis, "data axis");
                o[j] = base + v;
            }
        } else {
            int64_t sa = ds[axis];
            for (int64_t j = 0; j < last; j++) {
                int64_t v;
                if (!norm_index(o[j], n_axis, &v))
                    return index_error(k, o[j], i0 + j, n_axis, "data axis");
                o[j] = base + j + v * sa;
            }
        }
    }
    return OG_OK;
}

static og_status k_gather_elements(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                   og_tensor *const *out, int n_out)
{
    const og_index_params *p = k->params;
    og_status st = k->impl ? OG_OK : check_index_type(k, in[1]);
    if (st) return st;
    if (out[0]->numel == 0) return OG_OK;
    int64_t *off = alloc_offsets(k, in[1]->numel);
    if (!off) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    st = element_offsets(k, in[0], in[1], index_read_of(k, in[1]), norm_axis(p->axis, in[0]->rank),
                         off);
    if (!st)
        gather_elems(k, og_dtype_storage_size(in[0]->dtype), out[0]->data, in[0]->data, off,
                     in[1]->numel);
    if (!st && out[0]->dtype == OG_STRING) st = og_tensor_own_strings(out[0]);
    og_free(k->alloc, off);
    return st;
}

static og_status k_scatter_elements(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                    og_tensor *const *out, int n_out)
{
    const og_index_params *p = k->params;
    og_status st = k->impl ? OG_OK : check_index_type(k, in[1]);
    if (st) return st;
    copy_input(in[0], out[0]);
    if (in[1]->numel == 0) return OG_OK;
    int64_t *off = alloc_offsets(k, in[1]->numel);
    if (!off) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    st = element_offsets(k, in[0], in[1], scatter_read_of(k, in[1]),
                         norm_axis(p->axis, in[0]->rank), off);
    if (!st) st = scatter_apply(k, out[0], in[2], off, in[1]->numel, 1, p->reduction);
    og_free(k->alloc, off);
    return st;
}

/* ---- GatherND / ScatterND -------------------------------------------------------- */

/* Offsets (in units of `slice`-element blocks of data) of every index tuple of `ind`
 * (shape [batch..., n..., m]) into data, batch_dims b. */
static og_status nd_offsets(const og_kernel_ctx *k, const og_tensor *data, const og_tensor *ind,
                            const index_read *rd, int b, int64_t *off)
{
    int q = ind->rank;
    int64_t m = ind->dims[q - 1];
    int64_t batch = numel_of(q, ind->dims, 0, b);
    int64_t tuples = numel_of(q, ind->dims, b, q - 1); /* per batch */
    /* block strides of the indexed data dims, b..b+m-1 */
    int64_t bs[OG_MAX_RANK], s = 1;
    for (int d = (int)(b + m) - 1; d >= b; d--) {
        bs[d] = s;
        s *= data->dims[d];
    }
    int64_t batch_blocks = s; /* blocks per batch entry */
    for (int64_t bi = 0; bi < batch; bi++)
        for (int64_t t = 0; t < tuples; t++) {
            int64_t i = bi * tuples + t, o = bi * batch_blocks, tv[OG_MAX_RANK];
            rd->widen(ind->data, i * m, m, tv);
            for (int64_t c = 0; c < m; c++) {
                int64_t v, lim = data->dims[b + c];
                if (!norm_index(tv[c], lim, &v)) {
                    char what[64];
                    snprintf(what, sizeof what, "data axis %d", (int)(b + c));
                    return index_error(k, tv[c], i * m + c, lim, what);
                }
                o += v * bs[b + c];
            }
            off[i] = o;
        }
    return OG_OK;
}

static og_status k_gather_nd(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out)
{
    const og_index_params *p = k->params;
    const og_tensor *data = in[0], *ind = in[1];
    og_status st = k->impl ? OG_OK : check_index_type(k, ind);
    if (st) return st;
    if (out[0]->numel == 0) return OG_OK;
    int b = (int)p->batch_dims, q = ind->rank;
    int64_t m = ind->dims[q - 1];
    int64_t n = numel_of(q, ind->dims, 0, q - 1);
    int64_t slice = numel_of(data->rank, data->dims, b + (int)m, data->rank);
    int64_t *off = alloc_offsets(k, n);
    if (!off) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    st = nd_offsets(k, data, ind, index_read_of(k, ind), b, off);
    if (!st) {
        size_t es = og_dtype_size(data->dtype);
        if (slice == 1)
            gather_elems(k, es, out[0]->data, data->data, off, n);
        else
            gather_blocks(k, out[0]->data, data->data, off, 1, n, 0, (size_t)slice * es);
    }
    og_free(k->alloc, off);
    return st;
}

static og_status k_scatter_nd(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                              og_tensor *const *out, int n_out)
{
    const og_index_params *p = k->params;
    const og_tensor *data = in[0], *ind = in[1];
    og_status st = k->impl ? OG_OK : check_index_type(k, ind);
    if (st) return st;
    copy_input(data, out[0]);
    int q = ind->rank;
    int64_t m = ind->dims[q - 1];
    int64_t n = numel_of(q, ind->dims, 0, q - 1);
    int64_t slice = numel_of(data->rank, data->dims, (int)m, data->rank);
    if (n == 0 || slice == 0) return OG_OK;
    int64_t *off = alloc_offsets(k, n);
    if (!off) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    st = nd_offsets(k, data, ind, scatter_read_of(k, ind), 0, off);
    if (!st) st = scatter_apply(k, out[0], in[2], off, n, slice, p->reduction);
    og_free(k->alloc, off);
    return st;
}

/* ---- OneHot ---------------------------------------------------------------------- */

/* Fill n elements of esize bytes with *v. */
#define OG_FILL_T(T)                                                                               \
    static void fill_##T(T *restrict o, T v, int64_t n)                                            \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) o[i] = v;                                                  \
    }
OG_FILL_T(uint8_t)
OG_FILL_T(uint16_t)
OG_FILL_T(uint32_t)
OG_FILL_T(uint64_t)

static void fill_elems(void *o, const void *v, size_t es, int64_t n)
{
    switch (es) {
    case 1: fill_uint8_t(o, *(const uint8_t *)v, n); break;
    case 2: fill_uint16_t(o, *(const uint16_t *)v, n); break;
    case 4: fill_uint32_t(o, *(const uint32_t *)v, n); break;
    default: fill_uint64_t(o, *(const uint64_t *)v, n); break;
    }
}

/* OneHot's stores, by element size: for the m indices from flat index s0 (index s is at
 * (a, i) = (s / inner, s % inner)), output element (a·depth + pos[e])·inner + i := v where
 * pos[e] >= 0. */
#define OG_SET_AT_T(T)                                                                             \
    static void set_at_##T(T *restrict o, int64_t s0, int64_t inner, int64_t depth,                \
                           const int64_t *pos, int64_t m, T v)                                     \
    {                                                                                              \
        int64_t a = s0 / inner, i = s0 % inner;                                                    \
        for (int64_t e = 0; e < m; e++) {                                                          \
            if (pos[e] >= 0) o[(a * depth + pos[e]) * inner + i] = v;                              \
            if (++i == inner) {                                                                    \
                i = 0;                                                                             \
                a++;                                                                               \
            }                                                                                      \
        }                                                                                          \
    }
OG_SET_AT_T(uint8_t)
OG_SET_AT_T(uint16_t)
OG_SET_AT_T(uint32_t)
OG_SET_AT_T(uint64_t)

static void set_at(void *o, int64_t s0, int64_t inner, int64_t depth, const int64_t *pos, int64_t m,
                   const void *v, size_t es)
{
    switch (es) {
    case 1: {
        uint8_t b;
        memcpy(&b, v, 1);
        set_at_uint8_t(o, s0, inner, depth, pos, m, b);
    } break;
    case 2: {
        uint16_t b;
        memcpy(&b, v, 2);
        set_at_uint16_t(o, s0, inner, depth, pos, m, b);
    } break;
    case 4: {
        uint32_t b;
        memcpy(&b, v, 4);
        set_at_uint32_t(o, s0, inner, depth, pos, m, b);
    } break;
    default: {
        uint64_t b;
        memcpy(&b, v, 8);
        set_at_uint64_t(o, s0, inner, depth, pos, m, b);
    } break;
    }
}

/* OneHot's loop for indices of C type T: n positions from element off, each normalised
 * into [0, depth) (a negative one counts from the end) or -1 when outside [-depth, depth)
 * (a float, read by TO_D, is truncated after a range check, so that no cast overflows). */
#define OH_POS(NAME, T, IS_FLOAT, TO_D)                                                            \
    static void NAME(const void *iv, int64_t off, int64_t n, int64_t depth, int64_t *pos)          \
    {                                                                                              \
        const T *ind = (const T *)iv + off;                                                        \
        for (int64_t i = 0; i < n; i++) {                                                          \
            int64_t v;                                                                             \
            if (IS_FLOAT) {                                                                        \
                double f = (double)TO_D(ind[i]);                                                   \
                if (!(f > -(double)depth - 1.0 && f < (double)depth + 1.0)) {                      \
                    pos[i] = -1;                                                                   \
                    continue;                                                                      \
                }                                                                                  \
                v = (int64_t)f;                                                                    \
            } else {                                                                               \
                v = (int64_t)ind[i];                                                               \
            }                                                                                      \
            if (v < 0) v += depth;                                                                 \
            pos[i] = v < 0 || v >= depth ? -1 : v;                                                 \
        }                                                                                          \
    }
#define OH_SAME(x) (x)
OH_POS(oh_pos_f32, float, 1, OH_SAME)
OH_POS(oh_pos_f64, double, 1, OH_SAME)
OH_POS(oh_pos_f16, uint16_t, 1, og_half_to_float)
OH_POS(oh_pos_i8, int8_t, 0, OH_SAME)
OH_POS(oh_pos_i16, int16_t, 0, OH_SAME)
OH_POS(oh_pos_i32, int32_t, 0, OH_SAME)
OH_POS(oh_pos_i64, int64_t, 0, OH_SAME)
OH_POS(oh_pos_u8, uint8_t, 0, OH_SAME)
OH_POS(oh_pos_u16, uint16_t, 0, OH_SAME)
OH_POS(oh_pos_u32, uint32_t, 0, OH_SAME)
OH_POS(oh_pos_u64, uint64_t, 0, OH_SAME)

typedef struct oh_loops {
    og_dtype t;
    void (*pos)(const void *ind, int64_t off, int64_t n, int64_t depth, int64_t *pos);
} oh_loops;
/* the indices' dtypes OneHot's inference admits */
static const oh_loops oh_t[] = {
    {OG_FLOAT, oh_pos_f32},  {OG_DOUBLE, oh_pos_f64}, {OG_FLOAT16, oh_pos_f16},
    {OG_INT8, oh_pos_i8},    {OG_INT16, oh_pos_i16},  {OG_INT32, oh_pos_i32},
    {OG_INT64, oh_pos_i64},  {OG_UINT8, oh_pos_u8},   {OG_UINT16, oh_pos_u16},
    {OG_UINT32, oh_pos_u32}, {OG_UINT64, oh_pos_u64}};

static const void *select_onehot(const og_node *n, og_dtype t)
{
    (void)n;
    for (size_t i = 0; i < sizeof oh_t / sizeof oh_t[0]; i++)
        if (oh_t[i].t == t) return &oh_t[i];
    return NULL;
}

/* The indices are read by the loop bound to their dtype; the values (off, on) are moved by
 * their element size. */
static og_status k_onehot(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    const og_index_params *p = k->params;
    const og_tensor *ind = in[0], *vals = in[2];
    og_tensor *y = out[0];
    const oh_loops *l = k->impl ? k->impl : select_onehot(k->node, ind->dtype);
    if (!l)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "input 0 (indices) is %s, not supported",
                               og_dtype_name(ind->dtype));
    int axis = norm_axis(p->axis, ind->rank + 1);
    int64_t depth = y->dims[axis];
    int64_t outer = numel_of(ind->rank, ind->dims, 0, axis);
    int64_t inner = numel_of(ind->rank, ind->dims, axis, ind->rank);
    size_t es = og_dtype_size(y->dtype);
    if (y->numel == 0) return OG_OK;
    if (!es) return og_kernel_error(k, OG_ERR_UNSUPPORTED, "values type not supported");
    const char *off_v = vals->data, *on_v = off_v + es;
    fill_elems(y->data, off_v, es, y->numel);
    char *o = y->data;
    int64_t pos[256]; /* the positions of a block of indices, in flat order */
    for (int64_t s0 = 0; s0 < outer * inner; s0 += 256) {
        int64_t m = outer * inner - s0 < 256 ? outer * inner - s0 : 256;
        l->pos(ind->data, s0, m, depth, pos);
        set_at(o, s0, inner, depth, pos, m, on_v, es);
    }
    return OG_OK;
}

/* ---- table ----------------------------------------------------------------------- */

/* NonZero's loop for x of C type T: the flat indices of the nonzero elements of [from, n),
 * at most cap of them, into idx; returns how many, and in *next where the scan stopped.
 * NZ(v) says whether element v is nonzero: floats compare with 0 (NaN is nonzero, -0 is
 * zero), the 16-bit floats by their bits less the sign, the 8-bit floats as numbers. */
#define NZ_LOOP(NAME, T, NZ)                                                                       \
    static int64_t NAME(const void *xv, int64_t from, int64_t n, int64_t *idx, int64_t cap,        \
                        int64_t *next)                                                             \
    {                                                                                              \
        const T *x = xv;                                                                           \
        int64_t c = 0, i = from;                                                                   \
        for (; i < n && c < cap; i++) {                                                            \
            T v = x[i];                                                                            \
            if (NZ) idx[c++] = i;                                                                  \
        }                                                                                          \
        *next = i;                                                                                 \
        return c;                                                                                  \
    }
NZ_LOOP(nz_f32, float, v != 0.0f)
NZ_LOOP(nz_f64, double, v != 0.0)
NZ_LOOP(nz_half, uint16_t, (v & 0x7fff) != 0) /* float16 and bfloat16 */
NZ_LOOP(nz_b1, uint8_t, v != 0)               /* int8, uint8, bool, int4, uint4 (a byte each) */
NZ_LOOP(nz_b2, uint16_t, v != 0)
NZ_LOOP(nz_b4, uint32_t, v != 0)
NZ_LOOP(nz_b8, uint64_t, v != 0)
NZ_LOOP(nz_e4m3fn, uint8_t, og_float8_to_double(v, OG_FLOAT8E4M3FN) != 0.0)
NZ_LOOP(nz_e4m3fnuz, uint8_t, og_float8_to_double(v, OG_FLOAT8E4M3FNUZ) != 0.0)
NZ_LOOP(nz_e5m2, uint8_t, og_float8_to_double(v, OG_FLOAT8E5M2) != 0.0)
NZ_LOOP(nz_e5m2fnuz, uint8_t, og_float8_to_double(v, OG_FLOAT8E5M2FNUZ) != 0.0)

typedef struct nz_loop {
    og_dtype t;
    int64_t (*find)(const void *x, int64_t from, int64_t n, int64_t *idx, int64_t cap,
                    int64_t *next);
} nz_loop;
static const nz_loop nz_t[] = {{OG_FLOAT, nz_f32},
                               {OG_DOUBLE, nz_f64},
                               {OG_FLOAT16, nz_half},
                               {OG_BFLOAT16, nz_half},
                               {OG_INT8, nz_b1},
                               {OG_INT16, nz_b2},
                               {OG_INT32, nz_b4},
                               {OG_INT64, nz_b8},
                               {OG_UINT8, nz_b1},
                               {OG_UINT16, nz_b2},
                               {OG_UINT32, nz_b4},
                               {OG_UINT64, nz_b8},
                               {OG_BOOL, nz_b1},
                               {OG_INT4, nz_b1},
                               {OG_UINT4, nz_b1},
                               {OG_FLOAT8E4M3FN, nz_e4m3fn},
                               {OG_FLOAT8E4M3FNUZ, nz_e4m3fnuz},
                               {OG_FLOAT8E5M2, nz_e5m2},
                               {OG_FLOAT8E5M2FNUZ, nz_e5m2fnuz}};

static const void *select_nonzero(const og_node *n, og_dtype t)
{
    (void)n;
    for (size_t i = 0; i < sizeof nz_t / sizeof nz_t[0]; i++)
        if (nz_t[i].t == t) return &nz_t[i];
    return NULL;
}

static og_status k_nonzero(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                           og_tensor *const *out, int n_out)
{
    (void)n_in;
    (void)n_out;
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    const nz_loop *l = k->impl ? k->impl : select_nonzero(k->node, x->dtype);
    if (!l)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    int64_t *idx = y->data, count = y->dims[1], c = 0, from = 0;
    int64_t strides[OG_MAX_RANK], flat[256];
    og_strides(x->rank, x->dims, strides);
    while (c < count && from < x->numel) {
        int64_t cap = count - c < 256 ? count - c : 256;
        int64_t got = l->find(x->data, from, x->numel, flat, cap, &from);
        for (int64_t e = 0; e < got; e++, c++) {
            int64_t rem = flat[e];
            for (int d = 0; d < x->rank; d++) {
                idx[d * count + c] = rem / strides[d];
                rem %= strides[d];
            }
            if (x->rank == 0) idx[c] = 0;
        }
    }
    return OG_OK;
}

/* What check_index_type admits for the indices. */
static const og_dtype index_types[] = {OG_INT32, OG_INT64, 0};

/* Gather* and Scatter* move data of any dtype by element size: their constraint is on the
 * indices, input 1, whose typed read Gather* bind (select_index), Scatter* with their update
 * loop (select_scatter).  A Scatter reduction other than
 * none needs float32, float64, int32 or int64 data (it depends on the attribute; scatter_apply
 * checks it).  NonZero binds the scan of its input's dtype (select_nonzero).  OneHot binds the loop
 * of its indices' dtype (select_onehot) and moves its values' bytes. */
/* ---- Compress, ReverseSequence ----------------------------------------------------- */

/* y = the slices of x along the axis (the elements of flattened x) where condition holds:
 * x seen as [outer, len, inner], each selected j copies its inner block. */
static og_status k_compress(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, int n_out)
{
    const og_index_params *p = k->params;
    const og_tensor *x = in[0], *cond = in[1];
    og_tensor *y = out[0];
    size_t es = og_dtype_size(x->dtype);
    int axis = p->has_axis ? (int)(p->axis < 0 ? p->axis + x->rank : p->axis) : 0;
    int64_t outer = p->has_axis ? numel_of(x->rank, x->dims, 0, axis) : 1;
    int64_t len = p->has_axis ? x->dims[axis] : x->numel;
    int64_t inner = p->has_axis ? numel_of(x->rank, x->dims, axis + 1, x->rank) : 1;
    int64_t n = cond->numel < len ? cond->numel : len,
            ylen = y->numel ? y->numel / outer / inner : 0;
    const uint8_t *cv = cond->data;
    const char *xs = x->data;
    char *ys = y->data;
    size_t blk = (size_t)inner * es;
    if (y->numel == 0) return OG_OK;
    for (int64_t o = 0; o < outer; o++) {
        int64_t q = 0;
        for (int64_t j = 0; j < n; j++)
            if (cv[j])
                memcpy(ys + ((o * ylen + q++) * inner) * (int64_t)es,
                       xs + ((o * len + j) * inner) * (int64_t)es, blk);
    }
    return OG_OK;
}

/* y = x with the first sequence_lens[b] steps of batch entry b reversed along the time
 * axis: x seen as [a0, a1, inner] with {a0, a1} = {time, batch}. */
static og_status k_reverse_sequence(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                    og_tensor *const *out, int n_out)
{
    const og_index_params *p = k->params;
    const og_tensor *x = in[0], *lens = in[1];
    og_tensor *y = out[0];
    size_t es = og_dtype_size(x->dtype);
    int64_t B = x->dims[p->batch_axis], T = x->dims[p->time_axis];
    int64_t inner = numel_of(x->rank, x->dims, 2, x->rank);
    if (lens->numel != B)
        return og_kernel_error(k, OG_ERR_SHAPE,
                               "input 1 (sequence_lens) has %lld entries, the batch axis %lld",
                               (long long)lens->numel, (long long)B);
    const int64_t *lv = lens->data;
    for (int64_t b = 0; b < B; b++)
        if (lv[b] < 0 || lv[b] > T)
            return og_kernel_error(k, OG_ERR_RUNTIME,
                                   "input 1 (sequence_lens) entry %lld is %lld, outside [0, %lld]",
                                   (long long)b, (long long)lv[b], (long long)T);
    /* strides of the time and batch axes, in elements */
    int64_t ts = p->time_axis == 0 ? B * inner : inner, bs = p->batch_axis == 0 ? T * inner : inner;
    const char *xs = x->data;
    char *ys = y->data;
    size_t blk = (size_t)inner * es;
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) {
            int64_t src = t < lv[b] ? lv[b] - 1 - t : t;
            memcpy(ys + (b * bs + t * ts) * (int64_t)es, xs + (b * bs + src * ts) * (int64_t)es,
                   blk);
        }
    return OG_OK;
}

const og_kernel_def og_cpu_index[] = {
    {.name = "NonZero", .domain = "", .fn = k_nonzero, .select = select_nonzero},
    {.name = "Compress", .domain = "", .fn = k_compress},
    {.name = "ReverseSequence", .domain = "", .fn = k_reverse_sequence},
    {.name = "Gather",
     .domain = "",
     .fn = k_gather,
     .types = index_types,
     .select = select_index,
     .type_input = 1,
     .strings = 1},
    {.name = "GatherElements",
     .domain = "",
     .fn = k_gather_elements,
     .types = index_types,
     .select = select_index,
     .type_input = 1,
     .strings = 1},
    {.name = "GatherND",
     .domain = "",
     .fn = k_gather_nd,
     .types = index_types,
     .select = select_index,
     .type_input = 1},
    {.name = "OneHot", .domain = "", .fn = k_onehot, .select = select_onehot},
    {.name = "Scatter",
     .domain = "",
     .fn = k_scatter_elements,
     .types = index_types,
     .select_types = select_scatter,
     .type_input = 1},
    {.name = "ScatterElements",
     .domain = "",
     .fn = k_scatter_elements,
     .types = index_types,
     .select_types = select_scatter,
     .type_input = 1},
    {.name = "ScatterND",
     .domain = "",
     .fn = k_scatter_nd,
     .types = index_types,
     .select_types = select_scatter,
     .type_input = 1},
    {.name = NULL},
};
