/* ml_tree.c: the CPU kernel of TreeEnsembleRegressor, TreeEnsembleClassifier and
 * TreeEnsemble (the parsed form: src/ops/ml_tree.c, ml_params.h).
 *
 * Per row, each tree is walked from its root to a leaf (a split goes to its true child when
 * x[feature] <mode> threshold holds, or when x is NaN and the node tracks missing values as
 * true), and the leaves' weights are aggregated per target.  Then, as onnxruntime does:
 *  - one target: SUM and AVERAGE (divided by the tree count) of each leaf's first weight,
 *    MIN and MAX over the trees; base_values[0] added when there is exactly one; PROBIT is
 *    the only post transform applied;
 *  - several targets: each leaf weight adds to (or takes the min or max of) its target;
 *    base_values added when there is one per target; the post transform on each row;
 *  - a classifier adds the weights per class, then picks its label and writes its scores
 *    with onnxruntime's binary-case rules (classify below);
 *  - with several targets or classes, one that no leaf gave a weight (and no base value
 *    marked, for more than two classes) is written 0 and enters a post transform as 0:
 *    onnxruntime reads a score without a value that way.
 * Sums accumulate in float unless the model gives float64 thresholds, weights or base
 * values (or is a float64 TreeEnsemble), rounding as onnxruntime's float scores do. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/ml.h"

/* a + b rounded as the accumulator's type: float sums round every step (a double sum of two
 * floats rounded once to float is their float sum). */
static inline double add(const og_tree_params *p, double a, double b)
{
    return p->acc_double ? a + b : (double)((float)a + (float)b);
}

static inline double rnd(const og_tree_params *p, double a)
{
    return p->acc_double ? a : (double)(float)a;
}

static bool member(const og_tree_params *p, const og_tree_node *nd, double v)
{
    for (int64_t i = 0; i < nd->nset; i++)
        if (p->members[nd->set0 + i] == v) return true;
    return false;
}

/* The leaf a row x reaches from node `root` (the parse guarantees every walk ends). */
static const og_tree_node *walk(const og_tree_params *p, int64_t root, const double *x)
{
    const og_tree_node *nd = &p->nodes[root];
    while (nd->mode != OG_TREE_LEAF) {
        double v = x[nd->feature], th = nd->value;
        bool c;
        switch (nd->mode) {
        case OG_TREE_LEQ: c = v <= th; break;
        case OG_TREE_LT: c = v < th; break;
        case OG_TREE_GTE: c = v >= th; break;
        case OG_TREE_GT: c = v > th; break;
        case OG_TREE_EQ: c = v == th; break;
        case OG_TREE_NEQ: c = v != th; break;
        default: c = member(p, nd, v); break;
        }
        if (!c && nd->missing_true && isnan(v)) c = true;
        nd = &p->nodes[c ? nd->t : nd->f];
    }
    return nd;
}

/* One target: the aggregated score of a row. */
static double one_target(const og_tree_params *p, const double *x)
{
    double s = 0;
    bool has = false;
    for (int64_t t = 0; t < p->n_trees; t++) {
        const og_tree_node *leaf = walk(p, p->roots[t], x);
        double w = leaf->nw ? p->weights[leaf->w0].weight : leaf->value;
        switch (p->agg) {
        case OG_AGG_MIN: s = !has || w < s ? w : s; break;
        case OG_AGG_MAX: s = !has || w > s ? w : s; break;
        default: s = add(p, s, w); break;
        }
        has = true;
    }
    double origin = p->n_base == 1 ? p->base[0] : 0;
    if (p->agg == OG_AGG_AVERAGE) s = rnd(p, s / (double)(float)p->n_trees);
    if ((p->agg == OG_AGG_MIN || p->agg == OG_AGG_MAX) && !has) s = 0;
    s = add(p, s, origin);
    if (p->post == OG_POST_PROBIT) {
        og_ml_post_row(&s, 1, OG_POST_PROBIT);
    }
    return s;
}

/* Several targets or classes: aggregated scores into s[0..n_targets-1], has[] marking the
 * targets some leaf gave a weight. */
static void targets(const og_tree_params *p, const double *x, double *s, bool *has)
{
    for (int64_t j = 0; j < p->n_targets; j++) {
        s[j] = 0;
        has[j] = false;
    }
    for (int64_t t = 0; t < p->n_trees; t++) {
        const og_tree_node *leaf = walk(p, p->roots[t], x);
        for (int64_t k = 0; k < leaf->nw; k++) {
            const og_tree_weight *w = &p->weights[leaf->w0 + k];
            double *d = &s[w->target];
            switch (p->agg) {
            case OG_AGG_MIN: *d = !has[w->target] || w->weight < *d ? w->weight : *d; break;
            case OG_AGG_MAX: *d = !has[w->target] || w->weight > *d ? w->weight : *d; break;
            default: *d = add(p, *d, w->weight); break;
            }
            has[w->target] = true;
        }
    }
}

/* Several targets: a target no leaf gave a weight is 0 whatever its base value, as
 * onnxruntime's scores without a value read. */
static void regress(const og_tree_params *p, double *s, const bool *has)
{
    bool base = p->n_base == p->n_targets;
    for (int64_t j = 0; j < p->n_targets; j++) {
        double b = base ? p->base[j] : 0;
        switch (p->agg) {
        case OG_AGG_AVERAGE: s[j] = add(p, rnd(p, s[j] / (double)(float)p->n_trees), b); break;
        case OG_AGG_SUM: s[j] = add(p, s[j], b); break;
        default: s[j] = add(p, b, has[j] ? s[j] : 0); break;
        }
        if (!has[j]) s[j] = 0;
    }
    og_ml_post_row(s, p->n_targets, p->post);
}

/* A classifier's label index (into the labels; onnxruntime's literal 1 / 0 in the binary
 * case without binary weights) and its scores, written to z (n_targets columns). */
static int64_t classify(const og_tree_params *p, double *s, bool *has, double *z)
{
    int64_t c = p->n_targets, label = 0;
    if (c > 2) {
        for (int64_t k = 0; k < p->n_base && k < c; k++) {
            s[k] = has[k] ? add(p, s[k], p->base[k]) : p->base[k];
            has[k] = true;
        }
        int64_t best = -1;
        for (int64_t k = 0; k < c; k++)
            if (has[k] && (best < 0 || s[k] > s[best])) best = k;
        label = best < 0 ? 0 : best;
        for (int64_t k = 0; k < c; k++)
            if (!has[k]) s[k] = 0;
        og_ml_post_row(s, c, p->post);
        memcpy(z, s, (size_t)c * sizeof *z);
        return label;
    }
    /* two classes */
    int size = 2, extra = -1;
    if (p->n_base == 2) {
        if (has[1]) {
            /* onnxruntime uses base_values[1] and class 0's score here */
            s[1] = add(p, p->base[1], s[0]);
            s[0] = -s[1];
        } else {
            s[1] = add(p, s[1], p->base[1]);
            s[0] = add(p, s[0], p->base[0]);
        }
    } else if (p->n_base == 1) {
        s[0] = add(p, s[0], p->base[0]);
        if (!has[1]) size = 1;
    } else if (p->n_base == 0) {
        extra = 3;
        if (!has[1]) size = 1;
    }
    double pos = size == 2 && has[1] ? s[1] : has[0] ? s[0] : 0;
    if (p->binary_case) {
        if (p->all_positive) {
            extra = pos > 0.5 ? 0 : 1;
            label = pos > 0.5 ? 1 : 0;
        } else {
            extra = pos > 0 ? 2 : 3;
            label = pos > 0 ? 1 : 0;
        }
    } else {
        label = pos > 0 ? -2 : -1; /* literal 1 / 0 */
    }
    /* a class no leaf scored counts as 0 from here (its base value set aside) */
    for (int k = 0; k < 2; k++)
        if (!has[k]) s[k] = 0;
    z[0] = z[1] = 0;
    if (size == 2) {
        og_ml_post_row(s, 2, p->post);
        z[0] = s[0];
        z[1] = s[1];
    } else if (p->post == OG_POST_PROBIT) {
        og_ml_post_row(s, 1, OG_POST_PROBIT);
        z[0] = s[0];
    } else if (extra == 0 || extra == 1) {
        z[0] = 1 - s[0];
        z[1] = s[0];
    } else if (extra == 2 || extra == 3) {
        if (p->post == OG_POST_LOGISTIC) {
            double a = -s[0], b = s[0];
            og_ml_post_row(&a, 1, OG_POST_LOGISTIC);
            og_ml_post_row(&b, 1, OG_POST_LOGISTIC);
            z[0] = a;
            z[1] = b;
        } else {
            z[0] = -s[0];
            z[1] = s[0];
        }
    } else {
        z[0] = s[0];
    }
    return label;
}

/* Y (z) has X's dtype (TreeEnsemble) or float64 where the model says so, else float32 */
static bool out_double(const og_tree_params *p, og_dtype x)
{
    return p->out_x_dtype ? x == OG_DOUBLE : p->double_out;
}

const void *og_ml_tree_select(const og_node *n, og_dtype t)
{
    return og_ml_io_of(t, out_double(n->params, t));
}

og_status og_ml_tree_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, int n_out)
{
    const og_tree_params *p = k->params;
    const og_tensor *x = in[0];
    int64_t n = x->rank == 1 ? 1 : x->dims[0], f = x->dims[x->rank - 1], nt = p->n_targets;
    og_tensor *y = p->classifier ? out[0] : NULL,
              *z = p->classifier ? (n_out > 1 ? out[1] : NULL) : out[0];
    const og_ml_io *io = og_ml_io_bound(k, x->dtype, out_double(p, x->dtype));
    if (!io)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    if (n > 0 && p->max_feature >= f)
        return og_kernel_error(k, OG_ERR_SHAPE, "a split reads feature %lld, X has %lld",
                               (long long)p->max_feature, (long long)f);
    /* the scores (2 nt), then one row of X in float64 (f) */
    double *s = og_malloc(k->alloc, ((size_t)nt * 2 + (size_t)f + 1) * sizeof *s), *xr = s + nt * 2;
    bool *has = og_malloc(k->alloc, (size_t)nt * sizeof *has);
    og_status st = OG_OK;
    if (!s || !has) {
        st = og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int64_t r = 0; r < n && !st; r++) {
        io->load(x->data, r * f, f, xr);
        if (!p->classifier && nt == 1) {
            double v = one_target(p, xr);
            io->store(z->data, r, 1, &v);
            continue;
        }
        targets(p, xr, s, has);
        if (!p->classifier) {
            regress(p, s, has);
            io->store(z->data, r * nt, nt, s);
            continue;
        }
        double *zr = s + nt;
        int64_t label = classify(p, s, has, zr);
        if (z) io->store(z->data, r * nt, nt, zr);
        if (p->string_labels) {
            const char *l = p->labels_s[label < 0 ? -1 - label : label];
            st = og_tensor_set_str(y, r, l, strlen(l));
        } else {
            ((int64_t *)y->data)[r] = label < 0 ? -1 - label : p->labels_i[label];
        }
    }
done:
    og_free(k->alloc, s);
    og_free(k->alloc, has);
    return st;
}
