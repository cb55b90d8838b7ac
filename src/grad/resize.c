/* resize.c: gradients of Resize and Upsample (src/ops/resize.c).
 *
 * Every mode is separable and linear in x: each resized axis is a matrix M (out x in) and
 * dx = dy ·_axis M.  M is a constant built with the CPU kernel's taps where the axis's input
 * dim and roi/scales/sizes entries are known at build time (constants, or folded through
 * Shape/Gather/Slice/Concat/Cast/arithmetic of static shapes); else the node itself, applied
 * to an identity probe with the other axes' entries made identities, gives M at run time
 * (see g_resize).
 *
 * GridSample: Y[n, c, q] = Σ_taps Π_d w_d(x_d) · X[n, c, tap], x_d the input coordinate of
 * grid[n, q] along axis d (unnormalized: x = g·A + (L − 1)/2, A = (L − 1)/2 with
 * align_corners, L/2 without; rounded for nearest; clamped (border) or reflected
 * (reflection) for nearest and linear), the taps floor(x) + k with linear or cubic weights
 * of t = x − floor(x), read through the padding (masked for zeros, clamped, reflected):
 *   dX = the scatter-add of dY·Πw into the taps (one ScatterElements, reduction add, over
 *        every tap combination at once)
 *   dgrid_d = A · x'(g) · Σ_c dY · Σ_taps w'_d Π_(e≠d) w_e · X[tap], x' the derivative of
 *        the padding transform (0 where border clamps, ±1 for reflection); none for nearest
 * AffineGrid: grid = θ·[b, 1] is linear in θ: dθ[n, i, j] = Σ_pos dgrid[n, pos, i]·b_j(pos),
 *   the base coordinates b_j taken from AffineGrid itself on the unit matrices.
 */
#include <math.h>
#include <string.h>

#include "grad/rule_util.h"
#include "ops/resize_params.h"

/* ---- Resize -------------------------------------------------------------------------- */

/* M[x * in + i] += weight of input i in output x, for axis a (w, pos: scratch of the tap
 * count); true when M is the identity */
static bool resize_matrix(const og_resize_params *p, const og_resize_shape *sh, int a, int64_t in,
                          double *M, double *w, int64_t *pos)
{
    int64_t out = sh->out_dims[a];
    double scale = sh->scale[a];
    double s = p->antialias && scale < 1.0 ? scale : 1.0;
    bool normalize = p->antialias || p->exclude_outside;
    int start, nt = og_resize_tap_count(p, scale, &start);
    memset(M, 0, (size_t)(out * in) * sizeof *M);
    for (int64_t x = 0; x < out; x++) {
        double xo = og_resize_source_coord(p, sh, a, x, in), *row = M + x * in;
        if (p->coord == OG_COORD_TF_CROP_AND_RESIZE && !(xo >= 0.0 && xo <= (double)(in - 1)))
            continue; /* the extrapolation value: no gradient */
        if (!(xo > -1e15 && xo < 1e15)) xo = xo > 0 ? 1e15 : -1e15;
        if (p->mode == OG_RESIZE_NEAREST) {
            row[og_resize_clamp(og_resize_nearest_index(p, xo, scale), in)] += 1.0;
            continue;
        }
        double i0 = floor(xo), ratio = xo - i0, sum = 0.0;
        if (ratio == 0.0) i0 -= 1.0, ratio = 1.0;
        for (int j = 0; j < nt; j++) {
            pos[j] = (int64_t)i0 + start + j;
            double rel = ((double)(start + j) - ratio) * s;
            w[j] = p->mode == OG_RESIZE_LINEAR ? fmax(0.0, 1.0 - fabs(rel))
                                               : og_resize_cubic(rel, p->cubic_a);
            if (p->exclude_outside && (pos[j] < 0 || pos[j] >= in)) w[j] = 0.0;
            sum += w[j];
        }
        for (int j = 0; j < nt; j++)
            row[og_resize_clamp(pos[j], in)] += normalize && sum != 0.0 ? w[j] / sum : w[j];
    }
    if (out != in) return false;
    for (int64_t x = 0; x < out; x++)
        for (int64_t i = 0; i < in; i++)
            if (M[x * in + i] != (x == i ? 1.0 : 0.0)) return false;
    return true;
}

/* matrix M (out x in) as a constant of dtype dt: int64 fixed point (2^-40), cast, scaled
 * (for float16 and bfloat16 in float32, then rounded once: 2^40 overflows float16) */
static int matrix_const(og_gb *b, const double *M, int64_t out, int64_t in, og_dtype dt)
{
    size_t count = (size_t)(out * in);
    int64_t *q = og_malloc(og_gb_alloc(b), count * sizeof *q);
    if (!q) return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    const double one = 1099511627776.0; /* 2^40 */
    for (size_t i = 0; i < count; i++) q[i] = (int64_t)llround(M[i] * one);
    int c = og_gb_const_i64(b, q, (int)count);
    og_free(og_gb_alloc(b), q);
    int64_t shp[2] = {out, in};
    c = og_gb_op2(b, "Reshape", c, og_gb_const_i64(b, shp, 2));
    og_dtype ct = og_rule_is_half(dt) ? OG_FLOAT : dt;
    c = og_gb_op2(b, "Mul", og_rule_cast(b, c, ct), og_gb_scalar(b, 1.0 / one, ct));
    return ct == dt ? c : og_rule_cast(b, c, dt);
}

/* ---- Resize: roi, scales and sizes folded at build time ------------------------------ */

/* What the rule knows of a small 1-D integer or float value: per element a number, the
 * symbolic dim it equals (read from a Shape), or nothing. */
#define FOLD_MAX   (2 * OG_MAX_RANK)
#define FOLD_DEPTH 24

enum { F_UNKNOWN = 0, F_NUM = 1, F_DIM = 2 };

typedef struct fold_val {
    int n; /* elements */
    og_dtype dt;
    signed char kind[FOLD_MAX];
    double v[FOLD_MAX]; /* F_NUM: the number; F_DIM: the symbolic dim's code */
} fold_val;

/* x as a value of type dt holds it */
static double fold_round(double x, og_dtype dt)
{
    switch (dt) {
    case OG_FLOAT: return (double)(float)x;
    case OG_FLOAT16: return (double)og_half_to_float(og_float_to_half((float)x));
    case OG_DOUBLE: return x;
    default: return trunc(x);
    }
}

static int64_t fold_i64(double x)
{
    const double lim = 4611686018427387904.0; /* 2^62 */
    return x > lim ? (int64_t)lim : x < -lim ? -(int64_t)lim : (int64_t)x;
}

/* Is input i of n a fully known number list (one entry when one)? */
static bool fold_nums(og_gb *b, const og_node *n, int i, int depth, fold_val *f);

/* The elements of forward value v as far as they follow from constants and static shapes
 * through Shape, Gather, Slice, Concat, Cast, reshapes and scalar arithmetic (the
 * subgraphs exporters write for Resize's sizes and scales).  False when not even the
 * length is known. */
static bool fold(og_gb *b, int v, fold_val *f, int depth)
{
    memset(f, 0, sizeof *f);
    if (v < 0) return false;
    const og_value *val = og_gb_value(b, v);
    f->dt = val->dtype;
    const og_tensor *t = val->known;
    if (t) {
        if (t->rank > 1 || t->numel > FOLD_MAX) return false;
        f->n = (int)t->numel;
        f->dt = t->dtype;
        for (int i = 0; i < f->n; i++) {
            f->kind[i] = F_NUM;
            f->v[i] = og_tensor_get_f64(t, i);
        }
        return true;
    }
    bool len = false; /* the static length, values unknown */
    if (val->rank == 0 || (val->rank == 1 && val->dims[0] >= 0 && val->dims[0] <= FOLD_MAX)) {
        f->n = val->rank == 0 ? 1 : (int)val->dims[0];
        len = true;
    }
    const og_node *n = og_gb_producer(b, v);
    if (!n || depth <= 0 || n->domain[0] || n->n_in < 1 || n->out[0] != v) return len;
    const char *op = n->op_type;
    fold_val a, c;
    if (!strcmp(op, "Shape")) {
        const og_value *x = og_gb_value(b, IN(0));
        int64_t r = x->rank, s = 0, e = r;
        if (r < 0) return len;
        if (n->since_version >= 15) {
            s = og_attr_int(n, "start", 0);
            e = og_attr_int(n, "end", r);
        }
        s = s < 0 ? s + r : s;
        e = e < 0 ? e + r : e;
        s = s < 0 ? 0 : s > r ? r : s;
        e = e < 0 ? 0 : e > r ? r : e;
        f->n = e > s ? (int)(e - s) : 0;
        f->dt = OG_INT64;
        for (int i = 0; i < f->n; i++) {
            int64_t d = x->dims[s + i];
            f->kind[i] = d >= 0 ? F_NUM : d != OG_DIM_UNKNOWN ? F_DIM : F_UNKNOWN;
            f->v[i] = (double)d;
        }
        return true;
    }
    if (!strcmp(op, "Identity") || !strcmp(op, "Cast") || !strcmp(op, "Unsqueeze") ||
        !strcmp(op, "Squeeze") || !strcmp(op, "Reshape") || !strcmp(op, "Flatten")) {
        if (!fold(b, IN(0), &a, depth - 1)) return len;
        *f = a;
        if (!strcmp(op, "Cast")) {
            f->dt = (og_dtype)og_attr_int(n, "to", OG_UNDEFINED);
            for (int i = 0; i < f->n; i++)
                if (f->kind[i] == F_NUM) f->v[i] = fold_round(f->v[i], f->dt);
        }
        return true;
    }
    if (!strcmp(op, "Concat")) {
        if (og_attr_int(n, "axis", 0) != 0 && og_attr_int(n, "axis", 0) != -1) return len;
        f->n = 0;
        for (int i = 0; i < n->n_in; i++) {
            if (!fold(b, IN(i), &a, depth - 1) || f->n + a.n > FOLD_MAX) return len;
            if (i == 0) f->dt = a.dt;
            memcpy(f->kind + f->n, a.kind, (size_t)a.n * sizeof *a.kind);
            memcpy(f->v + f->n, a.v, (size_t)a.n * sizeof *a.v);
            f->n += a.n;
        }
        return true;
    }
    if (!strcmp(op, "Gather")) {
        if (og_attr_int(n, "axis", 0) != 0 || og_gb_value(b, IN(0))->rank != 1 ||
            !fold(b, IN(0), &a, depth - 1) || !fold_nums(b, n, 1, depth, &c))
            return len;
        f->n = c.n;
        f->dt = a.dt;
        for (int i = 0; i < c.n; i++) {
            int64_t k = fold_i64(c.v[i]);
            k = k < 0 ? k + a.n : k;
            if (k < 0 || k >= a.n) return len;
            f->kind[i] = a.kind[k];
            f->v[i] = a.v[k];
        }
        return true;
    }
    if (!strcmp(op, "Slice")) {
        int64_t st, en, step = 1;
        if (og_gb_value(b, IN(0))->rank != 1 || !fold(b, IN(0), &a, depth - 1)) return len;
        if (n->since_version < 10) {
            int ks, ke, ka;
            const int64_t *s = og_attr_ints(n, "starts", &ks), *e = og_attr_ints(n, "ends", &ke);
            const int64_t *ax = og_attr_ints(n, "axes", &ka);
            if (!s || !e || ks != 1 || ke != 1 || (ax && (ka != 1 || (ax[0] != 0 && ax[0] != -1))))
                return len;
            st = s[0];
            en = e[0];
        } else {
            fold_val q;
            if (!fold_nums(b, n, 1, depth, &c) || !fold_nums(b, n, 2, depth, &q) || c.n != 1 ||
                q.n != 1)
                return len;
            st = fold_i64(c.v[0]);
            en = fold_i64(q.v[0]);
            if (n->n_in > 3 && IN(3) >= 0 &&
                (!fold_nums(b, n, 3, depth, &q) || q.n != 1 || (q.v[0] != 0 && q.v[0] != -1)))
                return len;
            if (n->n_in > 4 && IN(4) >= 0) {
                if (!fold_nums(b, n, 4, depth, &q) || q.n != 1 || q.v[0] == 0) return len;
                step = fold_i64(q.v[0]);
            }
        }
        int64_t D = a.n;
        st = st < 0 ? st + D : st;
        en = en < 0 ? en + D : en;
        if (step > 0) {
            st = st < 0 ? 0 : st > D ? D : st;
            en = en < 0 ? 0 : en > D ? D : en;
        } else {
            st = st < 0 ? 0 : st > D - 1 ? D - 1 : st;
            en = en < -1 ? -1 : en > D - 1 ? D - 1 : en;
        }
        f->n = 0;
        f->dt = a.dt;
        for (int64_t k = st; step > 0 ? k < en : k > en; k += step) {
            f->kind[f->n] = a.kind[k];
            f->v[f->n++] = a.v[k];
        }
        return true;
    }
    bool add = !strcmp(op, "Add"), sub = !strcmp(op, "Sub"), mul = !strcmp(op, "Mul"),
         div = !strcmp(op, "Div");
    if (add || sub || mul || div) {
        if (n->n_in < 2 || !fold(b, IN(0), &a, depth - 1) || !fold(b, IN(1), &c, depth - 1) ||
            (a.n != c.n && a.n != 1 && c.n != 1))
            return len;
        f->n = a.n > c.n ? a.n : c.n;
        f->dt = a.dt;
        bool integer = !og_dtype_is_float(a.dt);
        for (int i = 0; i < f->n; i++) {
            int ia = a.n == 1 ? 0 : i, ic = c.n == 1 ? 0 : i;
            int ka = a.kind[ia], kc = c.kind[ic];
            double x = a.v[ia], y = c.v[ic], r;
            f->kind[i] = F_UNKNOWN;
            if (ka == F_NUM && kc == F_NUM) {
                if (div && (y == 0.0 || (integer && (x < 0 || y < 0)))) continue;
                r = add ? x + y : sub ? x - y : mul ? x * y : x / y;
                f->kind[i] = F_NUM;
                f->v[i] = fold_round(r, f->dt);
            } else if (ka == F_DIM && kc == F_DIM && div && x == y) {
                f->kind[i] = F_NUM; /* d / d */
                f->v[i] = 1.0;
            } else if (ka == F_DIM && kc == F_NUM &&
                       (((mul || div) && y == 1.0) || ((add || sub) && y == 0.0))) {
                f->kind[i] = F_DIM;
                f->v[i] = x;
            } else if (ka == F_NUM && kc == F_DIM && ((mul && x == 1.0) || (add && x == 0.0))) {
                f->kind[i] = F_DIM;
                f->v[i] = y;
            }
        }
        return true;
    }
    if (!strcmp(op, "Floor") || !strcmp(op, "Ceil")) {
        if (!fold(b, IN(0), &a, depth - 1)) return len;
        *f = a;
        for (int i = 0; i < f->n; i++) {
            if (f->kind[i] == F_DIM) f->kind[i] = F_UNKNOWN;
            f->v[i] = op[0] == 'F' ? floor(f->v[i]) : ceil(f->v[i]);
        }
        return true;
    }
    return len;
}

static bool fold_nums(og_gb *b, const og_node *n, int i, int depth, fold_val *f)
{
    if (i >= n->n_in || IN(i) < 0 || !fold(b, IN(i), f, depth - 1)) return false;
    for (int k = 0; k < f->n; k++)
        if (f->kind[k] != F_NUM) return false;
    return true;
}

/* Input i (roi, scales or sizes; -1: the version has none) folded.  *present: given and
 * not empty.  False when it is given but its length is unknown. */
static bool resize_param(og_gb *b, const og_node *n, int i, fold_val *f, bool *present)
{
    memset(f, 0, sizeof *f);
    *present = false;
    if (i < 0 || i >= n->n_in || IN(i) < 0) return true;
    bool ok = fold(b, IN(i), f, FOLD_DEPTH);
    *present = !ok || f->n > 0;
    return ok;
}

/* A 1-D tensor of type dt holding f's numbers, `dflt[i]` where unknown. */
static og_status fold_tensor(og_gb *b, const fold_val *f, const double *dflt, og_tensor **out)
{
    int64_t len = f->n;
    og_status st = og_tensor_create(f->dt, 1, &len, og_gb_alloc(b), out);
    if (st) return st;
    for (int i = 0; i < f->n; i++) {
        double x = f->kind[i] == F_NUM ? f->v[i] : dflt[i];
        void *d = (*out)->data;
        switch (f->dt) {
        case OG_FLOAT: ((float *)d)[i] = (float)x; break;
        case OG_DOUBLE: ((double *)d)[i] = x; break;
        case OG_FLOAT16: ((uint16_t *)d)[i] = og_float_to_half((float)x); break;
        case OG_INT64: ((int64_t *)d)[i] = fold_i64(x); break;
        case OG_INT32: ((int32_t *)d)[i] = (int32_t)fold_i64(x); break;
        default:
            og_tensor_free(*out);
            *out = NULL;
            return og_error(OG_ERR_UNSUPPORTED, "a Resize parameter of type %s",
                            og_dtype_name(f->dt));
        }
    }
    return OG_OK;
}

/* ---- Resize: the gradient ------------------------------------------------------------ */

typedef struct resize_ctx {
    const og_resize_params *p;
    int r, na, ax[OG_MAX_RANK], pos[OG_MAX_RANK]; /* pos[d]: d's entry in scales/sizes, or -1 */
    bool use_sizes, has_roi;
    bool either; /* scales and sizes both given, which one is empty known at run time only */
    og_dtype dt;
} resize_ctx;

/* 1-D int64 Concat of parts[0..n-1] */
static int concat_i64(og_gb *b, int n, const int *parts)
{
    if (n == 1) return parts[0];
    int c = og_gb_op(b, "Concat", n, parts);
    og_gb_attr_int(b, og_gb_last(b), "axis", 0);
    return c;
}

/* probe_matrix's shapes with axis d's input dim known at run time only (in < 0): D =
 * Shape(x)[d] and L = D or 2 D as [1] values, [1] constants elsewhere. */
static int probe_shape(og_gb *b, int r, int d, int bx, int D1, int L1)
{
    int64_t one = 1;
    int parts[OG_MAX_RANK];
    for (int a = 0; a < r; a++) parts[a] = a == d ? D1 : a == bx ? L1 : og_gb_const_i64(b, &one, 1);
    return concat_i64(b, r, parts);
}

/* The probe's scales or sizes: v where mask (axis d's entries), alt elsewhere; with
 * `either`, v may be empty (the other one is used), so mask and alt are cut to v's length
 * at run time (Slice with inputs: Resize takes both from opset 11). */
static int probe_param(og_gb *b, bool either, int mask, int v, int alt)
{
    if (!either) return og_gb_op3(b, "Where", mask, v, alt);
    int64_t zero = 0;
    int z = og_gb_const_i64(b, &zero, 1), k = og_gb_op1(b, "Shape", v);
    return og_gb_op3(b, "Where", og_gb_op3(b, "Slice", mask, z, k), v,
                     og_gb_op3(b, "Slice", alt, z, k));
}

/* The matrix M (out x in) of axis d read off the node itself at run time: the same Resize
 * applied to a probe holding the identity, [in at d, L at another axis bx], with every
 * entry of scales/sizes/roi but d's replaced by an identity (scale 1, size L or 1, roi
 * [0, 1]) and extrapolation 0, gives R[x, c] = M[x, c].  `dup`: tf_half_pixel_for_nn maps
 * c to c + 1 at scale 1 when it rounds up (the spec; onnxruntime leaves such an axis
 * alone), so the probe holds each identity column twice (L = 2 in) and the even columns
 * of R are M either way.  An input dim of d known only at run time gets the identity of
 * that size from an iota (og_rule_iota: Range, NonZero or a Loop by opset) compared with
 * itself; Upsample-7's scales attribute is replaced by one with 1 off d. */
static int probe_matrix(og_gb *b, const og_node *n, const resize_ctx *rc, int d, int64_t in,
                        bool dup)
{
    const og_resize_params *p = rc->p;
    int r = rc->r, na = rc->na, bx = d == 0 ? 1 : 0;
    int64_t L = dup ? 2 * in : in, ps[OG_MAX_RANK], id[2 * OG_MAX_RANK], mk[2 * OG_MAX_RANK];
    int idx = og_rule_iota_dim(b, IN(0), d), depth, D1 = -1, L1 = -1;
    if (in >= 0) {
        depth = og_gb_const_i64(b, &in, 1);
    } else { /* the run-time size D */
        int64_t dd = d, two = 2;
        D1 = og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", IN(0)), og_gb_const_i64(b, &dd, 1));
        L1 = dup ? og_gb_op2(b, "Mul", D1, og_gb_const_i64(b, &two, 1)) : D1;
        depth = D1;
    }
    int eye;
    if (og_gb_opset(b) >= 9) {
        eye = og_rule_one_hot(b, idx, depth, rc->dt, -1);
    } else { /* no OneHot: Equal(iota as a column, iota) */
        int64_t one = 1;
        eye =
            og_rule_cast(b, og_gb_op2(b, "Equal", og_rule_unsqueeze(b, idx, &one, 1), idx), rc->dt);
    }
    if (dup) { /* [in, in] -> [in, in, 2] (d first) or [in, 2, in] -> [in, 2 in] / [2 in, in] */
        int64_t ax = d < bx ? 2 : 1, reps[3] = {1, 1, 1};
        reps[ax] = 2;
        eye = og_gb_op2(b, "Tile", og_rule_unsqueeze(b, eye, &ax, 1), og_gb_const_i64(b, reps, 3));
    }
    for (int a = 0; a < r; a++) ps[a] = 1;
    ps[d] = in;
    ps[bx] = L;
    int ins[4] = {-1, -1, -1, -1};
    for (int i = 0; i < n->n_in && i < 4; i++) ins[i] = IN(i);
    ins[0] = og_gb_op2(b, "Reshape", eye,
                       in >= 0 ? og_gb_const_i64(b, ps, r) : probe_shape(b, r, d, bx, D1, L1));
    for (int j = 0; j < na; j++) mk[j] = mk[na + j] = rc->ax[j] == d;
    int mask = p->n_attr_scales > 0 ? -1 : og_rule_cast(b, og_gb_const_i64(b, mk, na), OG_BOOL);
    if (p->n_attr_scales > 0) { /* Upsample-7: the attribute, set below */
    } else {
        if (rc->use_sizes || rc->either) {
            int ids;
            if (in >= 0) {
                for (int j = 0; j < na; j++) id[j] = ps[rc->ax[j]];
                ids = og_gb_const_i64(b, id, na);
            } else { /* the probe's own dims (d's is masked) */
                int parts[OG_MAX_RANK];
                int64_t one = 1;
                for (int j = 0; j < na; j++)
                    parts[j] = rc->ax[j] == bx  ? L1
                               : rc->ax[j] == d ? D1
                                                : og_gb_const_i64(b, &one, 1);
                ids = concat_i64(b, na, parts);
            }
            ins[p->in_sizes] = probe_param(b, rc->either, mask, IN(p->in_sizes), ids);
        }
        if (!rc->use_sizes || rc->either) {
            og_dtype sdt = og_gb_value(b, IN(p->in_scales))->dtype;
            for (int j = 0; j < na; j++) id[j] = 1;
            ins[p->in_scales] = probe_param(b, rc->either, mask, IN(p->in_scales),
                                            og_rule_cast(b, og_gb_const_i64(b, id, na), sdt));
        }
    }
    if (rc->has_roi) {
        og_dtype rdt = og_gb_value(b, IN(p->in_roi))->dtype;
        for (int j = 0; j < na; j++) {
            id[j] = 0;
            id[na + j] = 1;
        }
        ins[p->in_roi] =
            og_gb_op3(b, "Where", og_rule_cast(b, og_gb_const_i64(b, mk, 2 * na), OG_BOOL),
                      IN(p->in_roi), og_rule_cast(b, og_gb_const_i64(b, id, 2 * na), rdt));
    }
    int res = og_gb_op(b, n->op_type, n->n_in, ins);
    int node = og_gb_last(b);
    og_gb_copy_attrs(b, node, n, p->n_attr_scales > 0 ? "scales" : "extrapolation_value");
    if (p->n_attr_scales > 0) {
        float f[OG_MAX_RANK];
        for (int a = 0; a < r; a++) f[a] = a == d ? (float)p->attr_scales[a] : 1.0f;
        og_gb_attr_floats(b, node, "scales", f, r);
    }
    if (p->coord == OG_COORD_TF_CROP_AND_RESIZE)
        og_gb_attr_float(b, node, "extrapolation_value", 0);
    int64_t s2[2] = {d < bx ? -1 : L, d < bx ? L : -1}, perm[2] = {1, 0}, m1 = -1;
    int s2v;
    if (in >= 0) {
        s2v = og_gb_const_i64(b, s2, 2);
    } else {
        int parts[2] = {og_gb_const_i64(b, &m1, 1), L1};
        if (d >= bx) parts[0] = L1, parts[1] = og_gb_const_i64(b, &m1, 1);
        s2v = concat_i64(b, 2, parts);
    }
    int m = og_gb_op2(b, "Reshape", res, s2v);
    if (d > bx) m = og_rule_transpose(b, m, perm, 2);
    if (dup) { /* the even columns */
        int64_t z = 0, one = 1, two = 2;
        int sl[5] = {m, og_gb_const_i64(b, &z, 1), in >= 0 ? og_gb_const_i64(b, &L, 1) : L1,
                     og_gb_const_i64(b, &one, 1), og_gb_const_i64(b, &two, 1)};
        m = og_gb_op(b, "Slice", 5, sl);
    }
    return m;
}

/* Resize is linear in x and separable: y = x ·_0 M_0ᵀ ... with one matrix M_d (out x in)
 * per axis, so dx = dy ·_d M_d over the axes.  M_d is a constant built with the CPU
 * kernel's taps when axis d's input dim and parameters are known at build time (constants,
 * or folded from Shape subgraphs of static shapes); an axis whose scale is 1 (or whose size
 * is its input dim, symbolic or not) under a mode that maps it identically is skipped;
 * otherwise M_d is computed at run time by probe_matrix (needs rank >= 2,
 * keep_aspect_ratio_policy stretch where sizes may be used, not tf_half_pixel_for_nn with
 * linear or cubic; scales and sizes both given with neither's length known statically are
 * both masked to their run-time length); an input dim of d known only at run time
 * gets the identity of that size built at run time, at any opset, and so does an axis whose
 * size may be its unknown input dim). */
static og_status g_resize(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!WANTS(0)) return og_gb_status(b);
    resize_ctx rc = {0};
    const og_resize_params *p = rc.p = n->params;
    if (!n->parsed || !p)
        return og_gb_fail(b, n, OG_ERR_INTERNAL, "Resize attributes are not parsed");
    /* copies: og_gb_value's pointers move as values are added */
    const og_value *xv0 = og_gb_value(b, IN(0));
    int r = rc.r = xv0->rank;
    rc.dt = xv0->dtype;
    int64_t xdims[OG_MAX_RANK], din[OG_MAX_RANK];
    if (r < 1) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "Resize gradient needs the rank");
    for (int d = 0; d < r; d++) {
        xdims[d] = xv0->dims[d];
        din[d] = xdims[d] >= 0 ? xdims[d] : 1; /* a stand-in where unknown */
        rc.pos[d] = p->n_axes ? -1 : d;
    }
    int na = rc.na = p->n_axes ? p->n_axes : r;
    for (int j = 0; j < na; j++) {
        int64_t a = p->n_axes ? p->axes[j] : j;
        a = a < 0 ? a + r : a;
        if (a < 0 || a >= r) return og_gb_fail(b, n, OG_ERR_MODEL, "axes entry out of range");
        rc.ax[j] = (int)a;
        rc.pos[a] = j;
    }
    bool crop = p->coord == OG_COORD_TF_CROP_AND_RESIZE, attr = p->n_attr_scales > 0;
    bool has_sc, has_sz, has_roi = false;
    fold_val sc, sz, roi, *use;
    bool len_sc = resize_param(b, n, p->in_scales, &sc, &has_sc);
    bool len_sz = resize_param(b, n, p->in_sizes, &sz, &has_sz);
    bool len_roi = crop ? resize_param(b, n, p->in_roi, &roi, &has_roi) : true;
    rc.has_roi = has_roi;
    if (!attr && !has_sc && !has_sz)
        return og_gb_fail(b, n, OG_ERR_MODEL, "neither scales nor sizes is given");
    if (has_sc && has_sz && len_sc && len_sz)
        return og_gb_fail(b, n, OG_ERR_MODEL, "scales and sizes are both given");
    /* both given, neither's length known: the one used is told at run time (its values
     * unknown, every resized axis gets its matrix at run time) */
    rc.either = has_sc && has_sz && !len_sc && !len_sz;
    rc.use_sizes = !attr && has_sz && (!has_sc || len_sz) && !rc.either;
    use = rc.use_sizes ? &sz : &sc;
    if (!attr && !(rc.use_sizes ? len_sz : len_sc)) use->n = na; /* values unknown */
    if (has_roi && !len_roi) roi.n = 2 * na;
    if (!attr && use->n != na)
        return og_gb_fail(b, n, OG_ERR_MODEL, "%s has %d entries, expected %d",
                          rc.use_sizes ? "sizes" : "scales", use->n, na);
    if (has_roi && roi.n != 2 * na)
        return og_gb_fail(b, n, OG_ERR_MODEL, "roi has %d entries, expected %d", roi.n, 2 * na);
    /* the plan, with stand-ins for what is not known (scale 1, roi [0, 1]) */
    og_tensor *ts = NULL, *troi = NULL;
    double dflt[FOLD_MAX];
    og_status st = OG_OK;
    if (!attr) {
        for (int j = 0; j < na; j++) dflt[j] = rc.use_sizes ? (double)din[rc.ax[j]] : 1.0;
        st = fold_tensor(b, use, dflt, &ts);
    }
    if (!st && has_roi) {
        for (int j = 0; j < na; j++) {
            dflt[j] = 0.0;
            dflt[na + j] = 1.0;
        }
        st = fold_tensor(b, &roi, dflt, &troi);
    }
    og_resize_shape sh;
    og_op_ctx c = {n, og_gb_alloc(b), NULL, true};
    if (!st)
        st = og_resize_plan(&c, p, r, din, troi, rc.use_sizes ? NULL : ts, rc.use_sizes ? ts : NULL,
                            &sh);
    og_tensor_free(ts);
    og_tensor_free(troi);
    if (st) return og_gb_fail(b, n, st, "%s", og_last_error());
    /* per axis: 0 skip (identity), 1 constant matrix, 2 matrix at run time */
    int how[OG_MAX_RANK];
    bool keep = (rc.use_sizes || rc.either) && p->keep != OG_KEEP_STRETCH, all_known = true,
         runtime = false;
    for (int j = 0; j < na; j++)
        all_known = all_known && use->kind[j] == F_NUM && xdims[rc.ax[j]] >= 0;
    for (int d = 0; d < r; d++) {
        int j = rc.pos[d];
        how[d] = 0;
        if (j < 0) continue; /* not resized */
        bool roi_known = !has_roi || (roi.kind[j] == F_NUM && roi.kind[na + j] == F_NUM);
        bool par = attr || (keep ? all_known : use->kind[j] == F_NUM);
        if (xdims[d] >= 0 && par && roi_known) {
            how[d] = 1;
            continue;
        }
        bool unit = attr           ? p->attr_scales[d] == 1.0
                    : rc.use_sizes ? !keep && use->kind[j] == F_DIM && use->v[j] == (double)xdims[d]
                                   : use->kind[j] == F_NUM && use->v[j] == 1.0;
        bool roi_unit = !has_roi || (roi_known && roi.v[j] == 0.0 && roi.v[na + j] == 1.0);
        if (unit && roi_unit && p->coord != OG_COORD_TF_HALF_PIXEL_FOR_NN) continue;
        how[d] = 2;
        runtime = true;
    }
    bool dup = false;
    if (runtime) {
        if (keep)
            return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                              "Resize gradient: keep_aspect_ratio_policy with sizes known only "
                              "at run time is not handled");
        if (r < 2)
            return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                              "Resize gradient: a rank-1 input with scales or sizes known only "
                              "at run time is not handled");
        if (p->coord == OG_COORD_TF_HALF_PIXEL_FOR_NN) {
            if (p->mode != OG_RESIZE_NEAREST)
                return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                                  "Resize gradient: tf_half_pixel_for_nn with linear or cubic "
                                  "mode and scales or sizes known only at run time is not "
                                  "handled");
            dup = true;
        }
    }
    int g = dy[0];
    for (int d = r - 1; d >= 0; d--) {
        int64_t in = xdims[d], out = sh.out_dims[d];
        if (how[d] == 2) {
            if (in > 4096) /* in x in > 2^24, asked without overflowing */
                return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                                  "Resize gradient: axis %d is too large (%lld)", d, (long long)in);
            g = og_rule_matmul_axis(b, g, probe_matrix(b, n, &rc, d, in, dup), r, d);
            continue;
        }
        if (how[d] == 0) continue;
        int64_t out_in;
        if (!og_mul_i64(out, in, &out_in) || out_in > ((int64_t)1 << 24))
            return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                              "Resize gradient: axis %d is too large (%lld x %lld)", d,
                              (long long)out, (long long)in);
        if (out == 0 || in == 0) continue;
        int start, nt = og_resize_tap_count(p, sh.scale[d], &start);
        size_t bytes = (size_t)(out * in) * sizeof(double) + (size_t)nt * 16;
        double *M = og_malloc(og_gb_alloc(b), bytes);
        if (!M) return og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
        double *w = M + out * in;
        bool ident = resize_matrix(p, &sh, d, in, M, w, (int64_t *)(w + nt));
        int m = ident ? -1 : matrix_const(b, M, out, in, rc.dt);
        og_free(og_gb_alloc(b), M);
        if (!ident) g = og_rule_matmul_axis(b, g, m, r, d);
    }
    dx[0] = g;
    return og_gb_status(b);
}

/* ---- GridSample ------------------------------------------------------------------------ */

#define GS_SP (OG_MAX_RANK - 2)

/* One axis's coordinate, after the padding transform: x, its derivative in the grid value
 * (A·x'(g)), and what the taps need. */
typedef struct gs_axis {
    int64_t L; /* OG_DIM_UNKNOWN when known only at run time */
    double lo; /* −0.5 or 0 */
    int hi;    /* [] L − 0.5 or L − 1 (a constant when L is static) */
    int Lm1;   /* [] L − 1 */
    int x;     /* [N, Q] coordinate */
    int dx;    /* [N, Q] d x / d g (or -1 when no grid gradient is needed) */
} gs_axis;

/* reflect(v) into [lo, hi]: d = |v − lo|, n = ⌊d / (hi − lo)⌋, r = d − n·(hi − lo); lo + r
 * for even n, hi − r for odd; *slope (when not NULL) gets its derivative sign(v − lo)·(±1) */
static int gs_reflect(og_gb *b, const gs_axis *a, int v, og_dtype dt, int *slope)
{
    double lo = a->lo;
    /* hi <= lo only for L = 1 with align_corners (lo = hi = 0) */
    bool flat = og_dim_known(a->L) && lo == 0 && a->L <= 1;
    if (flat) {
        if (slope) *slope = og_gb_scalar(b, 0.0, dt);
        return og_gb_op2(b, "Add", og_gb_op2(b, "Mul", v, og_gb_scalar(b, 0.0, dt)),
                         og_gb_scalar(b, lo, dt));
    }
    int hi = a->hi;
    int rng = og_gb_op2(b, "Sub", hi, og_gb_scalar(b, lo, dt));
    int deg = -1; /* run-time L: hi <= lo is decided at run time, the range kept nonzero */
    if (!og_dim_known(a->L) && lo == 0) {
        int zero = og_gb_scalar(b, 0.0, dt);
        deg = og_gb_op1(b, "Not", og_gb_op2(b, "Greater", rng, zero));
        rng = og_gb_op3(b, "Where", deg, og_gb_scalar(b, 1.0, dt), rng);
    }
    int dv = og_gb_op2(b, "Sub", v, og_gb_scalar(b, lo, dt));
    int d = og_gb_op1(b, "Abs", dv);
    int nn = og_gb_op1(b, "Floor", og_gb_op2(b, "Div", d, rng));
    int r = og_gb_op2(b, "Sub", d, og_gb_op2(b, "Mul", nn, rng));
    int odd = og_gb_op2(b, "Mod", nn, og_gb_scalar(b, 2.0, dt));
    og_gb_attr_int(b, og_gb_last(b), "fmod", 1);
    int even = og_gb_op2(b, "Equal", odd, og_gb_scalar(b, 0.0, dt));
    if (slope) {
        int par = og_gb_op2(b, "Sub", og_gb_scalar(b, 1.0, dt),
                            og_gb_op2(b, "Mul", odd, og_gb_scalar(b, 2.0, dt)));
        *slope = og_gb_op2(b, "Mul", og_gb_op1(b, "Sign", dv), par);
        if (deg >= 0) *slope = og_gb_op3(b, "Where", deg, og_gb_scalar(b, 0.0, dt), *slope);
    }
    int res = og_gb_op3(b, "Where", even, og_gb_op2(b, "Add", og_gb_scalar(b, lo, dt), r),
                        og_gb_op2(b, "Sub", hi, r));
    if (deg >= 0) res = og_gb_op3(b, "Where", deg, og_gb_scalar(b, lo, dt), res);
    return res;
}

/* The taps of one axis: count, flat-index contributions (int64 [N, Q], tap index times the
 * axis stride), weights and their derivatives in t ([N, Q], dw -1 when not needed), and the
 * in-range masks of zeros padding (-1: always in range). */
typedef struct gs_taps {
    int n;
    int idx[4], w[4], dw[4], valid[4];
} gs_taps;

/* Keys' cubic weights (a = −0.75) of taps x0 − 1 .. x0 + 2 and their derivatives in t, as
 * polynomials in t: w0 = a(t³ − 2t² + t), w1 = (a + 2)t³ − (a + 3)t² + 1, w2 = −(a + 2)t³
 * + (2a + 3)t² − a·t, w3 = a(t² − t³) */
static const double gs_cubic[4][4] = {
    /* c0, c1, c2, c3 of c0 + c1·t + c2·t² + c3·t³ */
    {0, -0.75, 1.5, -0.75},
    {1, 0, -2.25, 1.25},
    {0, 0.75, 1.5, -1.25},
    {0, 0, -0.75, 0.75},
};

static int gs_poly(og_gb *b, int t, const double *c, og_dtype dt)
{
    /* Horner: ((c3·t + c2)·t + c1)·t + c0 */
    int v = og_gb_scalar(b, c[3], dt);
    for (int k = 2; k >= 0; k--)
        v = og_gb_op2(b, "Add", og_gb_op2(b, "Mul", v, t), og_gb_scalar(b, c[k], dt));
    return v;
}

static void gs_axis_taps(og_gb *b, const og_grid_params *p, const gs_axis *ax, int stride,
                         bool want_dw, og_dtype dt, gs_taps *tp)
{
    int x0 = p->mode == OG_GRID_NEAREST ? ax->x : og_gb_op1(b, "Floor", ax->x);
    int t = p->mode == OG_GRID_NEAREST ? -1 : og_gb_op2(b, "Sub", ax->x, x0);
    int first = p->mode == OG_GRID_CUBIC ? -1 : 0;
    tp->n = p->mode == OG_GRID_NEAREST ? 1 : p->mode == OG_GRID_LINEAR ? 2 : 4;
    for (int k = 0; k < tp->n; k++) {
        /* the tap's index, through the padding, as a float, then int64 */
        int i = og_gb_op2(b, "Add", x0, og_gb_scalar(b, (double)(first + k), dt));
        int lo = og_gb_scalar(b, 0.0, dt), hi = ax->Lm1;
        tp->valid[k] = -1;
        if (p->padding == OG_GRID_ZEROS)
            tp->valid[k] =
                og_rule_cast(b,
                             og_gb_op2(b, "And", og_gb_op1(b, "Not", og_gb_op2(b, "Less", i, lo)),
                                       og_gb_op1(b, "Not", og_gb_op2(b, "Greater", i, hi))),
                             dt);
        else if (p->padding == OG_GRID_REFLECTION)
            i = gs_reflect(b, ax, i, dt, NULL);
        i = og_gb_op3(b, "Clip", i, lo, hi);
        int ii = og_rule_cast(b, i, OG_INT64);
        tp->idx[k] = stride < 0 ? ii : og_gb_op2(b, "Mul", ii, stride);
        tp->dw[k] = -1;
        if (p->mode == OG_GRID_NEAREST) {
            tp->w[k] = -1; /* weight 1 */
        } else if (p->mode == OG_GRID_LINEAR) {
            tp->w[k] = k ? t : og_gb_op2(b, "Sub", og_gb_scalar(b, 1.0, dt), t);
            if (want_dw) tp->dw[k] = og_gb_scalar(b, k ? 1.0 : -1.0, dt);
        } else {
            tp->w[k] = gs_poly(b, t, gs_cubic[k], dt);
            if (want_dw) {
                double d[4] = {gs_cubic[k][1], 2 * gs_cubic[k][2], 3 * gs_cubic[k][3], 0};
                tp->dw[k] = gs_poly(b, t, d, dt);
            }
        }
    }
}

/* a·b where either may be -1 (the constant 1) */
static int gs_mul(og_gb *b, int a, int c)
{
    if (a < 0) return c;
    if (c < 0) return a;
    return og_gb_op2(b, "Mul", a, c);
}

static og_status g_grid_sample(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_grid_params *p = n->params;
    int x = IN(0), grid = IN(1);
    const og_value *X = og_gb_value(b, x);
    int rank = X->rank, r = rank - 2;
    if (!p || !n->parsed) return og_gb_fail(b, n, OG_ERR_INTERNAL, "attributes not parsed");
    if (rank < 3 || r > GS_SP)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs X's rank");
    for (int d = 2; d < rank; d++)
        if (og_dim_known(X->dims[d]) && X->dims[d] < 1)
            return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient of an empty spatial axis");
    og_dtype dt = og_gb_value(b, grid)->dtype, xt = og_gb_value(b, OUT(0))->dtype;
    bool want_x = WANTS(0), want_g = WANTS(1) && p->mode != OG_GRID_NEAREST;
    int64_t taps_per = p->mode == OG_GRID_NEAREST ? 1 : p->mode == OG_GRID_LINEAR ? 2 : 4;
    int64_t combos = 1;
    for (int d = 0; d < r; d++) combos *= taps_per;
    if (combos > 4096)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient of a %d-D cubic GridSample", r);
    /* grid as [N, Q, r]; axis d reads entry r − 1 − d */
    int64_t gshape[3] = {0, -1, r}, xshape[3] = {0, 0, -1};
    int gf = og_rule_reshape_c(b, grid, gshape, 3);
    gs_axis ax[GS_SP];
    gs_taps tp[GS_SP];
    /* the flat index stride of each axis: static (sstat) while the sizes after it are,
     * else a run-time int64 scalar (st); −1 for 1 */
    int64_t sstat = 1;
    int st = -1, sx = -1;
    bool st_dyn = false;
    for (int d = r - 1; d >= 0; d--) {
        gs_axis *a = &ax[d];
        a->L = X->dims[2 + d];
        a->lo = p->align_corners ? 0 : -0.5;
        int Li = -1, Lf, A, half;
        if (og_dim_known(a->L)) {
            double L = (double)a->L;
            a->hi = og_gb_scalar(b, p->align_corners ? L - 1 : L - 0.5, dt);
            a->Lm1 = og_gb_scalar(b, L - 1, dt);
            A = og_gb_scalar(b, p->align_corners ? (L - 1) / 2 : L / 2, dt);
            half = og_gb_scalar(b, (L - 1) / 2, dt);
        } else { /* L = Shape(X)[2 + d] at run time (a scalar) */
            if (sx < 0) sx = og_gb_op1(b, "Shape", x);
            Li = og_gb_op2(b, "Gather", sx, og_gb_scalar(b, (double)(2 + d), OG_INT64));
            Lf = og_rule_cast(b, Li, dt);
            int one = og_gb_scalar(b, 1.0, dt), two = og_gb_scalar(b, 2.0, dt);
            a->Lm1 = og_gb_op2(b, "Sub", Lf, one);
            a->hi = p->align_corners ? a->Lm1 : og_gb_op2(b, "Sub", Lf, og_gb_scalar(b, 0.5, dt));
            A = og_gb_op2(b, "Div", p->align_corners ? a->Lm1 : Lf, two);
            half = og_gb_op2(b, "Div", a->Lm1, two);
        }
        int g = og_gb_op2(b, "Gather", gf, og_gb_scalar(b, (double)(r - 1 - d), OG_INT64));
        og_gb_attr_int(b, og_gb_last(b), "axis", 2);
        int v = og_gb_op2(b, "Add", og_gb_op2(b, "Mul", g, A), half);
        a->dx = want_g ? A : -1;
        if (p->mode == OG_GRID_NEAREST) v = og_gb_op1(b, "Round", v);
        if (p->mode != OG_GRID_CUBIC && p->padding == OG_GRID_BORDER) {
            int lo = og_gb_scalar(b, 0.0, dt), hi = a->Lm1;
            if (want_g) { /* slope 1 strictly inside [0, L − 1], 0 where clamped */
                int in = og_gb_op2(b, "And", og_gb_op2(b, "Greater", v, lo),
                                   og_gb_op2(b, "Less", v, hi));
                a->dx = og_gb_op2(b, "Mul", a->dx, og_rule_cast(b, in, dt));
            }
            v = og_gb_op3(b, "Clip", v, lo, hi);
        } else if (p->mode != OG_GRID_CUBIC && p->padding == OG_GRID_REFLECTION) {
            int slope;
            v = gs_reflect(b, a, v, dt, want_g ? &slope : NULL);
            if (want_g) a->dx = og_gb_op2(b, "Mul", a->dx, slope);
        }
        a->x = v;
        gs_axis_taps(b, p, a, st, want_g, dt, &tp[d]);
        if (og_gb_status(b)) return og_gb_status(b);
        if (og_dim_known(a->L) && !st_dyn) { /* still static */
            if (!og_mul_i64(sstat, a->L, &sstat))
                return og_gb_fail(b, n, OG_ERR_SHAPE,
                                  "the spatial sizes of input '%s' overflow int64", X->name);
            st = sstat == 1 ? -1 : og_gb_scalar(b, (double)sstat, OG_INT64);
        } else {
            if (Li < 0) Li = og_gb_scalar(b, (double)a->L, OG_INT64);
            st = st < 0 ? Li : og_gb_op2(b, "Mul", st, Li);
            st_dyn = true;
        }
    }
    int dy3 = og_rule_reshape_c(b, dy[0], xshape, 3); /* [N, C, Q] */
    int xf = og_rule_reshape_c(b, x, xshape, 3);      /* [N, C, P] */
    int64_t one = 1;
    int *idx_all = og_malloc(og_gb_alloc(b), (size_t)(2 * combos) * sizeof *idx_all);
    if (!idx_all) return og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
    int *upd_all = idx_all + combos, dgr[GS_SP];
    for (int d = 0; d < r; d++) dgr[d] = -1;
    int k[GS_SP] = {0};
    for (int64_t cmb = 0; cmb < combos; cmb++) {
        int f = -1, wt = -1;
        for (int d = 0; d < r; d++) {
            f = f < 0 ? tp[d].idx[k[d]] : og_gb_op2(b, "Add", f, tp[d].idx[k[d]]);
            wt = gs_mul(b, wt, gs_mul(b, tp[d].w[k[d]], tp[d].valid[k[d]]));
        }
        int fe =
            og_gb_op2(b, "Expand", og_rule_unsqueeze(b, f, &one, 1), og_gb_op1(b, "Shape", dy3));
        if (want_x) {
            int wx = wt < 0
                         ? -1
                         : og_rule_unsqueeze(b, dt == xt ? wt : og_rule_cast(b, wt, xt), &one, 1);
            idx_all[cmb] = fe;
            upd_all[cmb] = gs_mul(b, dy3, wx);
        }
        if (want_g) {
            /* S = Σ_c dY·X[tap], then each axis takes S·w'_d·Π_(e≠d) w_e */
            int v = og_gb_op2(b, "GatherElements", xf, fe);
            og_gb_attr_int(b, og_gb_last(b), "axis", 2);
            int sc = og_gb_reduce_sum(b, og_gb_op2(b, "Mul", dy3, v), &one, 1, false);
            if (dt != xt) sc = og_rule_cast(b, sc, dt);
            for (int d = 0; d < r; d++) {
                int term = gs_mul(b, sc, tp[d].dw[k[d]]);
                for (int e = 0; e < r; e++)
                    if (e != d) term = gs_mul(b, term, tp[e].w[k[e]]);
                for (int e = 0; e < r; e++) term = gs_mul(b, term, tp[e].valid[k[e]]);
                dgr[d] = og_rule_accumulate(b, dgr[d], term);
            }
        }
        for (int d = r - 1; d >= 0; d--) {
            if (++k[d] < tp[d].n) break;
            k[d] = 0;
        }
    }
    if (want_x) {
        int idx = idx_all[0], upd = upd_all[0];
        if (combos > 1) {
            idx = og_gb_op(b, "Concat", (int)combos, idx_all);
            og_gb_attr_int(b, og_gb_last(b), "axis", 2);
            upd = og_gb_op(b, "Concat", (int)combos, upd_all);
            og_gb_attr_int(b, og_gb_last(b), "axis", 2);
        }
        int zeros = og_gb_op2(b, "Expand", og_gb_scalar(b, 0.0, xt), og_gb_op1(b, "Shape", xf));
        int s = og_gb_op3(b, "ScatterElements", zeros, idx, upd);
        og_gb_attr_int(b, og_gb_last(b), "axis", 2);
        og_gb_attr_string(b, og_gb_last(b), "reduction", "add");
        dx[0] = og_gb_op2(b, "Reshape", s, og_gb_op1(b, "Shape", x));
    }
    og_free(og_gb_alloc(b), idx_all);
    if (want_g) {
        int parts[GS_SP];
        int64_t two = 2;
        for (int d = 0; d < r; d++) /* entry r − 1 − d of the grid */
            parts[r - 1 - d] = og_rule_unsqueeze(b, og_gb_op2(b, "Mul", dgr[d], ax[d].dx), &two, 1);
        int cat = r > 1 ? og_gb_op(b, "Concat", r, parts) : parts[0];
        if (r > 1) og_gb_attr_int(b, og_gb_last(b), "axis", 2);
        dx[1] = og_gb_op2(b, "Reshape", cat, og_gb_op1(b, "Shape", grid));
    }
    return og_gb_status(b);
}

/* ---- AffineGrid ------------------------------------------------------------------------ */

static og_status g_affine_grid(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_value *T = og_gb_value(b, IN(0)), *G = og_gb_value(b, OUT(0));
    const og_value *S = og_gb_value(b, IN(1));
    /* r (2 or 3 spatial axes): theta's [N, r, r + 1], else the grid's rank r + 2, else the
     * length of size ([N, C, spatial...]): one of them is static when theta's dims are not */
    int64_t r = T->rank == 3 && og_dim_known(T->dims[1])   ? T->dims[1]
                : G->rank >= 4                             ? G->rank - 2
                : S->rank == 1 && og_dim_known(S->dims[0]) ? S->dims[0] - 2
                                                           : -1;
    if (r < 2 || r > 3)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "gradient needs the number of spatial axes (theta's dim 1, the "
                          "grid's rank or the length of size)");
    int64_t h = r + 1;
    og_dtype dt = og_gb_value(b, OUT(0))->dtype;
    /* the unit matrices E_j (row 0 = e_j): AffineGrid(E_j)[..., 0] = b_j, b_r = 1 */
    int64_t e[4 * 3 * 4] = {0}, eshape[3] = {h, r, h}, first = 1, zero = 0;
    for (int64_t j = 0; j < h; j++) e[j * r * h + j] = 1;
    int basis = og_rule_cast(
        b, og_rule_reshape_c(b, og_gb_const_i64(b, e, (int)(h * r * h)), eshape, 3), dt);
    int rest = og_rule_slice(b, IN(1), &zero, &first, (int64_t[]){INT64_MAX}, NULL, 1);
    int size = og_gb_op(b, "Concat", 2, (int[]){og_gb_const_i64(b, &h, 1), rest});
    og_gb_attr_int(b, og_gb_last(b), "axis", 0);
    int ag = og_gb_op2(b, "AffineGrid", basis, size);
    og_gb_copy_attrs(b, og_gb_last(b), n, NULL);
    int base = og_gb_op2(b, "Gather", ag, og_gb_scalar(b, 0.0, OG_INT64)); /* [h, ..., ] */
    og_gb_attr_int(b, og_gb_last(b), "axis", (int64_t)(r + 1));
    int64_t bshape[2] = {h, -1}, gshape[3] = {0, -1, r}, perm[3] = {0, 2, 1};
    base = og_rule_reshape_c(b, base, bshape, 2);                                  /* [h, P] */
    int g = og_rule_transpose(b, og_rule_reshape_c(b, dy[0], gshape, 3), perm, 3); /* [N, r, P] */
    dx[0] = og_gb_op2(b, "MatMul", g, og_rule_transpose(b, base, (int64_t[]){1, 0}, 2));
    return og_gb_status(b);
}

const og_grad_rule og_grad_resize[] = {{"Resize", "", g_resize},
                                       {"Upsample", "", g_resize},
                                       {"GridSample", "", g_grid_sample},
                                       {"AffineGrid", "", g_affine_grid},
                                       {0}};
