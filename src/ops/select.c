/* select.c: ops whose output size depends on the data: Unique (11) and NonMaxSuppression
 * (10, 11).  At load, inference gives dtypes and ranks; at run time it computes the selection
 * (og_unique_run, og_nms_run) to size the outputs, and the kernel computes it again. */
#include <string.h>

#include "ops/select.h"

/* ---- Unique -------------------------------------------------------------------------- */

static og_status unique_parse(const og_op_ctx *c, void **params)
{
    og_status st = og_attr_check_type(c, "axis", OG_ATTR_INT);
    if (!st) st = og_attr_check_type(c, "sorted", OG_ATTR_INT);
    if (st) return st;
    og_unique_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    *params = p;
    p->has_axis = og_node_attr(c->node, "axis") != NULL;
    p->axis = og_attr_int(c->node, "axis", 0);
    int64_t s = og_attr_int(c->node, "sorted", 1);
    if (s != 0 && s != 1)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'sorted' must be 0 or 1, got %lld",
                           (long long)s);
    p->sorted = s == 1;
    return OG_OK;
}

/* Three-way comparisons of elements i and j of x, one per dtype: integers exactly, floats
 * with every NaN equal and after every number, strings by bytes. */
static int cmp_str(const og_tensor *x, int64_t i, int64_t j)
{
    int r = strcmp(og_tensor_str(x, i), og_tensor_str(x, j));
    return (r > 0) - (r < 0);
}

#define OG_CMP_INT(name, T)                                                                        \
    static int cmp_##name(const og_tensor *x, int64_t i, int64_t j)                                \
    {                                                                                              \
        T a = ((const T *)x->data)[i], b = ((const T *)x->data)[j];                                \
        return (a > b) - (a < b);                                                                  \
    }
OG_CMP_INT(i8, int8_t)
OG_CMP_INT(i16, int16_t)
OG_CMP_INT(i32, int32_t)
OG_CMP_INT(i64, int64_t)
OG_CMP_INT(u8, uint8_t) /* bool too */
OG_CMP_INT(u16, uint16_t)
OG_CMP_INT(u32, uint32_t)
OG_CMP_INT(u64, uint64_t)
#undef OG_CMP_INT

#define OG_CMP_FLOAT(name, T, to_float)                                                            \
    static int cmp_##name(const og_tensor *x, int64_t i, int64_t j)                                \
    {                                                                                              \
        const T *d = x->data;                                                                      \
        double a = (double)(to_float(d[i])), b = (double)(to_float(d[j]));                         \
        bool na = a != a, nb = b != b;                                                             \
        if (na || nb) return na - nb; /* NaNs equal, after every number */                         \
        return (a > b) - (a < b);                                                                  \
    }
#define OG_AS_IS(v) (v)
OG_CMP_FLOAT(f32, float, OG_AS_IS)
OG_CMP_FLOAT(f64, double, OG_AS_IS)
OG_CMP_FLOAT(f16, uint16_t, og_half_to_float)
OG_CMP_FLOAT(bf16, uint16_t, og_bfloat16_to_float)
#undef OG_AS_IS
#undef OG_CMP_FLOAT

/* The float8 and 4-bit types: through og_tensor_get_i64, as before the typed orders. */
static int cmp_other(const og_tensor *x, int64_t i, int64_t j)
{
    int64_t a = og_tensor_get_i64(x, i), b = og_tensor_get_i64(x, j);
    return (a > b) - (a < b);
}

static const og_unique_order orders[] = {{cmp_f32}, {cmp_f64}, {cmp_f16}, {cmp_bf16}, {cmp_i8},
                                         {cmp_i16}, {cmp_i32}, {cmp_i64}, {cmp_u8},   {cmp_u16},
                                         {cmp_u32}, {cmp_u64}, {cmp_str}, {cmp_other}};

const og_unique_order *og_unique_order_of(og_dtype t)
{
    switch (t) {
    case OG_FLOAT: return &orders[0];
    case OG_DOUBLE: return &orders[1];
    case OG_FLOAT16: return &orders[2];
    case OG_BFLOAT16: return &orders[3];
    case OG_INT8: return &orders[4];
    case OG_INT16: return &orders[5];
    case OG_INT32: return &orders[6];
    case OG_INT64: return &orders[7];
    case OG_UINT8:
    case OG_BOOL: return &orders[8];
    case OG_UINT16: return &orders[9];
    case OG_UINT32: return &orders[10];
    case OG_UINT64: return &orders[11];
    case OG_STRING: return &orders[12];
    default: return &orders[13];
    }
}

typedef struct items {
    const og_tensor *x;
    int (*cmp)(const og_tensor *x, int64_t i, int64_t j);
    int64_t outer, len, inner; /* item k: x[o, k, i] for o < outer, i < inner */
} items;

/* Items a and b lexicographically, then by position (a stable total order). */
static int cmp_items(const items *it, int64_t a, int64_t b)
{
    for (int64_t o = 0; o < it->outer; o++)
        for (int64_t i = 0; i < it->inner; i++) {
            int r = it->cmp(it->x, (o * it->len + a) * it->inner + i,
                            (o * it->len + b) * it->inner + i);
            if (r) return r;
        }
    return 0;
}

/* Merge sort of idx[0..n-1] by (item, position), using tmp[0..n-1]. */
static void sort_items(const items *it, int64_t *idx, int64_t *tmp, int64_t n)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi) {
                int r = cmp_items(it, idx[a], idx[b]);
                tmp[k++] = (r < 0 || (r == 0 && idx[a] < idx[b])) ? idx[a++] : idx[b++];
            }
            while (a < mid) tmp[k++] = idx[a++];
            while (b < hi) tmp[k++] = idx[b++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

void og_unique_free(const og_allocator *a, og_unique *u)
{
    og_free(a, u->first);
    og_free(a, u->count);
    og_free(a, u->inverse);
    memset(u, 0, sizeof *u);
}

og_status og_unique_run(const og_op_ctx *c, const og_tensor *x, const og_unique_order *order,
                        og_unique *u)
{
    const og_unique_params *p = c->node->params;
    memset(u, 0, sizeof *u);
    items it = {x, (order ? order : og_unique_order_of(x->dtype))->cmp, 1, x->numel, 1};
    u->axis = -1;
    if (p->has_axis) {
        int axis;
        og_status st = og_norm_axis(c, p->axis, x->rank, "axis", &axis);
        if (st) return st;
        u->axis = axis;
        it.len = x->dims[axis];
        for (int d = 0; d < axis; d++) it.outer *= x->dims[d];
        for (int d = axis + 1; d < x->rank; d++) it.inner *= x->dims[d];
        if (it.len && x->numel == 0) it.outer = 0; /* empty slices: all equal */
    }
    int64_t m = it.len;
    u->m = m;
    size_t n = (size_t)(m + 1);
    int64_t *idx = og_malloc(c->alloc, n * sizeof *idx),
            *tmp = og_malloc(c->alloc, n * sizeof *tmp);
    u->first = og_malloc(c->alloc, n * sizeof *u->first);
    u->count = og_malloc(c->alloc, n * sizeof *u->count);
    u->inverse = og_malloc(c->alloc, n * sizeof *u->inverse);
    if (!idx || !tmp || !u->first || !u->count || !u->inverse) {
        og_free(c->alloc, idx);
        og_free(c->alloc, tmp);
        og_unique_free(c->alloc, u);
        return og_op_error(c, OG_ERR_NOMEM, "out of memory for %lld items", (long long)m);
    }
    for (int64_t k = 0; k < m; k++) idx[k] = k;
    sort_items(&it, idx, tmp, m);
    /* groups of equal items in sorted order; tmp[k] = the group of sorted item k */
    int64_t g = -1;
    for (int64_t k = 0; k < m; k++) {
        if (k == 0 || cmp_items(&it, idx[k - 1], idx[k]) != 0) {
            g++;
            u->first[g] = idx[k]; /* the stable order puts the first occurrence first */
            u->count[g] = 0;
        }
        u->count[g]++;
        u->inverse[idx[k]] = g;
    }
    u->n_unique = g + 1;
    if (!p->sorted) {
        /* renumber the groups by first occurrence: walking the items in order, the first
         * item of each group comes up in that order (pos: the group an item is first of) */
        int64_t *pos = tmp, *rank = idx, r = 0;
        int64_t *nf = og_malloc(c->alloc, n * sizeof *nf);
        if (!nf) {
            og_free(c->alloc, idx);
            og_free(c->alloc, tmp);
            og_unique_free(c->alloc, u);
            return og_op_error(c, OG_ERR_NOMEM, "out of memory");
        }
        for (int64_t k = 0; k < m; k++) pos[k] = -1;
        for (int64_t q = 0; q < u->n_unique; q++) pos[u->first[q]] = q;
        for (int64_t k = 0; k < m; k++)
            if (pos[k] >= 0) rank[pos[k]] = r++;
        for (int64_t q = 0; q < u->n_unique; q++) nf[rank[q]] = u->first[q];
        memcpy(u->first, nf, (size_t)u->n_unique * sizeof *nf);
        for (int64_t q = 0; q < u->n_unique; q++) nf[rank[q]] = u->count[q];
        memcpy(u->count, nf, (size_t)u->n_unique * sizeof *nf);
        for (int64_t k = 0; k < m; k++) u->inverse[k] = rank[u->inverse[k]];
        og_free(c->alloc, nf);
    }
    og_free(c->alloc, idx);
    og_free(c->alloc, tmp);
    return OG_OK;
}

static og_status unique_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    const og_unique_params *p = c->node->params;
    int r = in[0].rank;
    og_dtype dt = in[0].dtype;
    if (dt != OG_UNDEFINED && !og_dtype_is_valid(dt))
        return og_op_error(c, OG_ERR_TYPE, "input 0 has element type %s", og_dtype_name(dt));
    for (int j = 1; j < n_out; j++) og_vinfo_set(&out[j], OG_INT64, 1, (int64_t[]){OG_DIM_UNKNOWN});
    out[0].dtype = dt;
    if (r < 0) return OG_OK;
    int axis = -1;
    if (p->has_axis) {
        og_status st = og_norm_axis(c, p->axis, r, "axis", &axis);
        if (st) return st;
    }
    int64_t dims[OG_MAX_RANK], m = 1;
    memcpy(dims, in[0].dims, sizeof dims);
    if (axis < 0) {
        for (int d = 0; d < r && m >= 0; d++) m = in[0].dims[d] >= 0 ? m * in[0].dims[d] : -1;
    } else {
        m = in[0].dims[axis];
    }
    if (n_out > 2) out[2].dims[0] = m >= 0 ? m : OG_DIM_UNKNOWN;
    int64_t nu = OG_DIM_UNKNOWN;
    if (in[0].value) {
        og_unique u;
        og_status st = og_unique_run(c, in[0].value, NULL, &u);
        if (st) return st;
        nu = u.n_unique;
        og_unique_free(c->alloc, &u);
    }
    if (axis < 0) {
        og_vinfo_set(&out[0], dt, 1, &nu);
    } else {
        dims[axis] = nu;
        og_vinfo_set(&out[0], dt, r, dims);
    }
    if (n_out > 1) out[1].dims[0] = nu;
    if (n_out > 3) out[3].dims[0] = nu;
    return OG_OK;
}

/* ---- NonMaxSuppression ---------------------------------------------------------------- */

static og_status nms_parse(const og_op_ctx *c, void **params)
{
    og_status st = og_attr_check_type(c, "center_point_box", OG_ATTR_INT);
    if (st) return st;
    int64_t v = og_attr_int(c->node, "center_point_box", 0);
    if (v != 0 && v != 1)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'center_point_box' must be 0 or 1, got %lld",
                           (long long)v);
    int *p = og_malloc(c->alloc, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    *p = (int)v;
    *params = p;
    return OG_OK;
}

/* A box as (y1, x1, y2, x2) with y1 <= y2, x1 <= x2. */
typedef struct box {
    double y1, x1, y2, x2;
} box;

static box box_at(const float *b, bool center)
{
    box r;
    if (center) {
        double w = b[2] / 2.0, h = b[3] / 2.0;
        r = (box){b[1] - h, b[0] - w, b[1] + h, b[0] + w};
    } else {
        r = (box){b[0] < b[2] ? b[0] : b[2], b[1] < b[3] ? b[1] : b[3], b[0] < b[2] ? b[2] : b[0],
                  b[1] < b[3] ? b[3] : b[1]};
    }
    return r;
}

/* Whether b overlaps a by more than thr (intersection over union; empty or degenerate boxes
 * never suppress). */
static bool suppresses(const box *a, const box *b, double thr)
{
    double iy1 = a->y1 > b->y1 ? a->y1 : b->y1, ix1 = a->x1 > b->x1 ? a->x1 : b->x1;
    double iy2 = a->y2 < b->y2 ? a->y2 : b->y2, ix2 = a->x2 < b->x2 ? a->x2 : b->x2;
    if (ix2 <= ix1 || iy2 <= iy1) return false;
    double inter = (ix2 - ix1) * (iy2 - iy1);
    double aa = (a->x2 - a->x1) * (a->y2 - a->y1), ab = (b->x2 - b->x1) * (b->y2 - b->y1);
    double uni = aa + ab - inter;
    if (inter <= 0 || aa <= 0 || ab <= 0 || uni <= 0) return false;
    return inter / uni > thr;
}

static og_status nms_shapes(const og_op_ctx *c, const og_vinfo *in, int n_in)
{
    static const og_dtype f32[] = {OG_FLOAT, OG_UNDEFINED}, i64[] = {OG_INT64, OG_UNDEFINED};
    og_status st = og_check_dtype(c, in, 0, f32);
    if (!st) st = og_check_dtype(c, in, 1, f32);
    if (!st && n_in > 2) st = og_check_dtype(c, in, 2, i64);
    for (int i = 3; !st && i < n_in; i++) st = og_check_dtype(c, in, i, f32);
    for (int i = 2; !st && i < n_in; i++)
        if (in[i].rank > 1 || (in[i].rank == 1 && in[i].dims[0] >= 0 && in[i].dims[0] != 1))
            st = og_op_error(c, OG_ERR_SHAPE, "input %d must be a scalar or hold one value", i);
    if (st) return st;
    const og_vinfo *b = &in[0], *s = &in[1];
    if ((b->rank >= 0 && b->rank != 3) || (s->rank >= 0 && s->rank != 3))
        return og_op_error(c, OG_ERR_SHAPE,
                           "boxes must be [batches, boxes, 4] and scores "
                           "[batches, classes, boxes], got ranks %d and %d",
                           b->rank, s->rank);
    if (b->rank == 3 && b->dims[2] >= 0 && b->dims[2] != 4)
        return og_op_error(c, OG_ERR_SHAPE, "boxes must have 4 coordinates, got %lld",
                           (long long)b->dims[2]);
    if (b->rank == 3 && s->rank == 3 &&
        ((b->dims[0] >= 0 && s->dims[0] >= 0 && b->dims[0] != s->dims[0]) ||
         (b->dims[1] >= 0 && s->dims[2] >= 0 && b->dims[1] != s->dims[2])))
        return og_op_error(c, OG_ERR_SHAPE,
                           "boxes [%lld, %lld, 4] and scores [%lld, C, %lld] "
                           "disagree",
                           (long long)b->dims[0], (long long)b->dims[1], (long long)s->dims[0],
                           (long long)s->dims[2]);
    return OG_OK;
}

/* Merge sort of box indices idx[0..n-1] by score, highest first, equal scores by index. */
static void sort_by_score(int64_t *idx, int64_t *tmp, int64_t n, const float *s)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi) {
                bool first = s[idx[a]] > s[idx[b]] || (s[idx[a]] == s[idx[b]] && idx[a] < idx[b]);
                tmp[k++] = first ? idx[a++] : idx[b++];
            }
            while (a < mid) tmp[k++] = idx[a++];
            while (b < hi) tmp[k++] = idx[b++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

og_status og_nms_run(const og_op_ctx *c, const og_tensor *const *in, int n_in, int64_t **sel,
                     int64_t *n)
{
    bool center = *(const int *)c->node->params == 1;
    const og_tensor *boxes = in[0], *scores = in[1];
    const og_tensor *mo = n_in > 2 ? in[2] : NULL, *iou = n_in > 3 ? in[3] : NULL,
                    *sth = n_in > 4 ? in[4] : NULL;
    int64_t B = boxes->dims[0], N = boxes->dims[1], C = scores->dims[1];
    int64_t max_out = mo && mo->numel ? og_tensor_get_i64(mo, 0) : 0;
    double thr = iou && iou->numel ? og_tensor_get_f64(iou, 0) : 0.0;
    bool has_sth = sth && sth->numel;
    double score_thr = has_sth ? og_tensor_get_f64(sth, 0) : 0.0;
    *sel = NULL;
    *n = 0;
    if (!(thr >= 0 && thr <= 1))
        return og_op_error(c, OG_ERR_RUNTIME, "iou_threshold must be in [0, 1], got %g", thr);
    if (max_out <= 0 || B == 0 || C == 0 || N == 0) return OG_OK;
    if (max_out > N) max_out = N;
    size_t cap = (size_t)(N + 1);
    int64_t *cand = og_malloc(c->alloc, cap * sizeof *cand),
            *kept = og_malloc(c->alloc, cap * sizeof *kept);
    int64_t *out = NULL, n_out = 0, out_cap = 0;
    og_status st = OG_OK;
    if (!cand || !kept) {
        st = og_op_error(c, OG_ERR_NOMEM, "out of memory for %lld boxes", (long long)N);
        goto done;
    }
    const float *bd = boxes->data, *sd = scores->data;
    for (int64_t b = 0; b < B; b++)
        for (int64_t k = 0; k < C; k++) {
            const float *s = sd + (b * C + k) * N;
            int64_t nc = 0, nk = 0;
            for (int64_t i = 0; i < N; i++)
                if (!has_sth || s[i] > score_thr) cand[nc++] = i;
            sort_by_score(cand, kept, nc, s); /* kept: scratch until the selection */
            for (int64_t i = 0; i < nc && nk < max_out; i++) {
                box a = box_at(bd + (b * N + cand[i]) * 4, center);
                bool keep = true;
                for (int64_t j = 0; j < nk && keep; j++) {
                    box q = box_at(bd + (b * N + kept[j]) * 4, center);
                    keep = !suppresses(&a, &q, thr);
                }
                if (!keep) continue;
                kept[nk++] = cand[i];
                if (n_out == out_cap) {
                    int64_t nc2 = out_cap ? 2 * out_cap : 16;
                    int64_t *q = og_realloc(c->alloc, out, (size_t)(3 * out_cap) * sizeof *q,
                                            (size_t)(3 * nc2) * sizeof *q);
                    if (!q) {
                        st = og_op_error(c, OG_ERR_NOMEM, "out of memory");
                        goto done;
                    }
                    out = q;
                    out_cap = nc2;
                }
                out[3 * n_out] = b;
                out[3 * n_out + 1] = k;
                out[3 * n_out + 2] = cand[i];
                n_out++;
            }
        }
done:
    og_free(c->alloc, cand);
    og_free(c->alloc, kept);
    if (st) {
        og_free(c->alloc, out);
        return st;
    }
    *sel = out;
    *n = n_out;
    return OG_OK;
}

static og_status nms_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    og_status st = nms_shapes(c, in, n_in);
    if (st) return st;
    int64_t n = OG_DIM_UNKNOWN;
    if (c->runtime) {
        const og_tensor *t[5] = {0};
        for (int i = 0; i < n_in && i < 5; i++) t[i] = in[i].value;
        int64_t *sel = NULL;
        if ((st = og_nms_run(c, t, n_in, &sel, &n))) return st;
        og_free(c->alloc, sel);
    }
    og_vinfo_set(&out[0], OG_INT64, 2, (int64_t[]){n, 3});
    return OG_OK;
}

const og_op_def og_ops_select[] = {
    {"Unique", "", OG_SINCE(Unique), 1, 1, 1, 4, unique_parse, NULL, unique_infer, 0},
    {"NonMaxSuppression", "", OG_SINCE(NonMaxSuppression), 2, 5, 1, 1, nms_parse, NULL, nms_infer,
     0},
    {0},
};
