/* ml_tree.c: TreeEnsembleRegressor, TreeEnsembleClassifier (ai.onnx.ml 1 and 3) and
 * TreeEnsemble (ai.onnx.ml 5) parsed into one form (ml_params.h: og_tree_params): nodes by
 * index, each a split with two children or a leaf with its weights, one root per tree.
 * The kernel is src/kernels/cpu/ml_tree.c.
 *
 * Old form: nodes are (tree id, node id) pairs, a tree's nodes consecutive; its root is
 * the first of them (as onnxruntime reads it); children name node ids of the same tree;
 * weights (target or class entries) attach to leaves by (tree id, node id), and entries
 * naming a split node are ignored, as onnxruntime does.  New form (5): split nodes and leaves
 * in separate lists, children flagged as leaves or nodes, roots listed.  Every child must
 * exist and the nodes reachable from a root must not loop back (checked here, iteratively),
 * so that a traversal always ends at a leaf. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ml_params.h"

void og_ml_tree_free(const og_allocator *a, void *params)
{
    og_tree_params *p = params;
    if (!p) return;
    og_free(a, p->nodes);
    og_free(a, p->roots);
    og_free(a, p->weights);
    og_free(a, p->members);
    og_free(a, p->base);
    og_free(a, p);
}

/* Values of a float list attribute or of its _as_tensor (double) form, as doubles (owned by
 * *out; NULL and 0 when neither is given).  *as_tensor says which was. */
static og_status doubles(const og_op_ctx *c, const char *name, double **out, int64_t *n,
                         bool *as_tensor)
{
    char tname[64];
    *out = NULL;
    *n = 0;
    snprintf(tname, sizeof tname, "%s_as_tensor", name);
    int nf = 0;
    const float *f = og_attr_floats(c->node, name, &nf);
    const og_tensor *t = og_attr_tensor(c->node, tname);
    if (f && nf > 0 && t)
        return og_op_error(c, OG_ERR_MODEL, "attributes '%s' and '%s' are both given", name, tname);
    if (as_tensor) *as_tensor = t != NULL;
    int64_t count = t ? t->numel : nf;
    if (t && t->dtype != OG_DOUBLE && t->dtype != OG_FLOAT)
        return og_op_error(c, OG_ERR_MODEL, "attribute '%s' is %s; it must be float64", tname,
                           og_dtype_name(t->dtype));
    if (count == 0) return OG_OK;
    *out = og_malloc(c->alloc, (size_t)count * sizeof **out);
    if (!*out) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < count; i++) (*out)[i] = t ? og_tensor_get_f64(t, i) : (double)f[i];
    *n = count;
    return OG_OK;
}

/* A required (or optional: may be NULL) ints attribute of exactly n entries. */
static og_status ints_of(const og_op_ctx *c, const char *name, int64_t n, bool required,
                         const int64_t **out)
{
    int k = 0;
    *out = og_attr_ints(c->node, name, &k);
    if (!*out && !required && n >= 0) return OG_OK;
    if (!*out && n == 0) return OG_OK;
    if (!*out) return og_op_error(c, OG_ERR_MODEL, "attribute '%s' is missing", name);
    if (n >= 0 && k != n)
        return og_op_error(c, OG_ERR_MODEL, "attribute '%s' has %d entries; %lld are needed", name,
                           k, (long long)n);
    return OG_OK;
}

/* Every traversal from a root ends at a leaf: no node reachable from itself (iterative
 * depth-first search; state 1 on the stack, 2 done). */
static og_status check_acyclic(const og_op_ctx *c, og_tree_params *p)
{
    int64_t n = p->n_nodes;
    unsigned char *state = og_calloc(c->alloc, (size_t)n + 1, 1);
    int64_t *stack = og_malloc(c->alloc, (size_t)(2 * n + 1) * sizeof *stack);
    og_status st = OG_OK;
    if (!state || !stack) {
        st = og_op_error(c, OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int64_t s = 0; s < n && !st; s++) {
        if (state[s]) continue;
        int64_t top = 0;
        stack[top++] = s;
        while (top > 0 && !st) {
            int64_t v = stack[top - 1];
            if (state[v] == 0) {
                state[v] = 1;
                const og_tree_node *nd = &p->nodes[v];
                if (nd->mode == OG_TREE_LEAF) continue;
                int64_t kids[2] = {nd->t, nd->f};
                for (int k = 0; k < 2; k++) {
                    if (state[kids[k]] == 1) {
                        st = og_op_error(c, OG_ERR_MODEL,
                                         "the trees loop: node %lld leads back to node %lld",
                                         (long long)v, (long long)kids[k]);
                        break;
                    }
                    if (state[kids[k]] == 0) stack[top++] = kids[k];
                }
            } else {
                if (state[v] == 1) state[v] = 2;
                top--;
            }
        }
    }
done:
    og_free(c->alloc, state);
    og_free(c->alloc, stack);
    return st;
}

static og_tree_mode mode_of(const char *s)
{
    static const char *const names[] = {"BRANCH_LEQ", "BRANCH_LT",  "BRANCH_GTE",    "BRANCH_GT",
                                        "BRANCH_EQ",  "BRANCH_NEQ", "BRANCH_MEMBER", "LEAF"};
    for (int i = 0; i < 8; i++)
        if (strcmp(s, names[i]) == 0) return (og_tree_mode)i;
    return (og_tree_mode)-1;
}

typedef struct node_key {
    int64_t tree, node, index;
} node_key;

static int cmp_key(const void *a, const void *b)
{
    const node_key *x = a, *y = b;
    if (x->tree != y->tree) return x->tree < y->tree ? -1 : 1;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Index of node (tree, node) in the sorted keys, -1 if none. */
static int64_t find_node(const node_key *keys, int64_t n, int64_t tree, int64_t node)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        const node_key *k = &keys[mid];
        if (k->tree < tree || (k->tree == tree && k->node < node))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && keys[lo].tree == tree && keys[lo].node == node ? keys[lo].index : -1;
}

/* The old form: TreeEnsembleRegressor / TreeEnsembleClassifier 1 and 3. */
static og_status parse_old(const og_op_ctx *c, og_tree_params *p)
{
    const og_node *n = c->node;
    const og_attr *modes = og_node_attr(n, "nodes_modes");
    og_status st = OG_OK;
    node_key *keys = NULL, *wk = NULL;
    double *values = NULL, *weights = NULL;
    if (!modes || modes->type != OG_ATTR_STRINGS || modes->n == 0)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'nodes_modes' is missing or empty");
    int64_t nn = modes->n, nv = 0, nw = 0;
    const int64_t *treeids, *nodeids, *featureids, *trues, *falses, *missing;
    if ((st = ints_of(c, "nodes_treeids", nn, true, &treeids)) ||
        (st = ints_of(c, "nodes_nodeids", nn, true, &nodeids)) ||
        (st = ints_of(c, "nodes_featureids", nn, true, &featureids)) ||
        (st = ints_of(c, "nodes_truenodeids", nn, true, &trues)) ||
        (st = ints_of(c, "nodes_falsenodeids", nn, true, &falses)) ||
        (st = ints_of(c, "nodes_missing_value_tracks_true", nn, false, &missing)))
        return st;
    bool vt = false, wt = false, bt = false;
    if ((st = doubles(c, "nodes_values", &values, &nv, &vt))) return st;
    if (nv != nn) {
        st = og_op_error(c, OG_ERR_MODEL, "%lld node values for %lld nodes", (long long)nv,
                         (long long)nn);
        goto done;
    }
    const char *w_prefix = p->classifier ? "class" : "target";
    char an[64];
    snprintf(an, sizeof an, "%s_weights", w_prefix);
    if ((st = doubles(c, an, &weights, &nw, &wt))) goto done;
    const int64_t *w_tree, *w_node, *w_id;
    snprintf(an, sizeof an, "%s_treeids", w_prefix);
    if ((st = ints_of(c, an, nw, true, &w_tree))) goto done;
    snprintf(an, sizeof an, "%s_nodeids", w_prefix);
    if ((st = ints_of(c, an, nw, true, &w_node))) goto done;
    snprintf(an, sizeof an, "%s_ids", w_prefix);
    if ((st = ints_of(c, an, nw, true, &w_id))) goto done;
    int64_t nb = 0;
    if ((st = doubles(c, "base_values", &p->base, &nb, &bt))) goto done;
    /* sums accumulate in float unless the model gives float64 thresholds or weights */
    p->acc_double = vt || wt || bt;

    p->n_nodes = nn;
    p->nodes = og_calloc(c->alloc, (size_t)nn, sizeof *p->nodes);
    p->roots = og_malloc(c->alloc, (size_t)nn * sizeof *p->roots);
    keys = og_malloc(c->alloc, (size_t)nn * sizeof *keys);
    if (!p->nodes || !p->roots || !keys) goto nomem;
    for (int64_t i = 0; i < nn; i++) {
        keys[i] = (node_key){treeids[i], nodeids[i], i};
        if (i == 0 || treeids[i] != treeids[i - 1]) p->roots[p->n_trees++] = i;
    }
    qsort(keys, (size_t)nn, sizeof *keys, cmp_key);
    for (int64_t i = 1; i < nn; i++)
        if (keys[i].tree == keys[i - 1].tree && keys[i].node == keys[i - 1].node) {
            st = og_op_error(c, OG_ERR_MODEL, "node %lld of tree %lld is defined twice",
                             (long long)keys[i].node, (long long)keys[i].tree);
            goto done;
        }
    for (int64_t i = 0; i < nn; i++) {
        og_tree_node *d = &p->nodes[i];
        int m = mode_of(modes->strings[i]);
        if (m < 0 || m == OG_TREE_MEMBER) {
            st = og_op_error(c, OG_ERR_MODEL, "nodes_modes[%lld] is '%s'", (long long)i,
                             modes->strings[i]);
            goto done;
        }
        d->mode = m;
        d->feature = featureids[i];
        d->value = values[i];
        d->missing_true = missing && missing[i] == 1;
        if (m == OG_TREE_LEAF) continue;
        if (d->feature < 0) {
            st = og_op_error(c, OG_ERR_MODEL, "node %lld of tree %lld splits on feature %lld",
                             (long long)nodeids[i], (long long)treeids[i], (long long)d->feature);
            goto done;
        }
        d->t = find_node(keys, nn, treeids[i], trues[i]);
        d->f = find_node(keys, nn, treeids[i], falses[i]);
        if (d->t < 0 || d->f < 0 || d->t == i || d->f == i) {
            st = og_op_error(c, OG_ERR_MODEL,
                             "node %lld of tree %lld has children %lld and %lld; each must be "
                             "another node of the tree",
                             (long long)nodeids[i], (long long)treeids[i], (long long)trues[i],
                             (long long)falses[i]);
            goto done;
        }
    }
    /* weights, grouped by leaf in (tree, node, entry) order */
    wk = og_malloc(c->alloc, (size_t)(nw + 1) * sizeof *wk);
    p->weights = og_malloc(c->alloc, (size_t)(nw + 1) * sizeof *p->weights);
    if (!wk || !p->weights) goto nomem;
    for (int64_t i = 0; i < nw; i++) wk[i] = (node_key){w_tree[i], w_node[i], i};
    qsort(wk, (size_t)nw, sizeof *wk, cmp_key);
    for (int64_t k = 0; k < nw; k++) {
        int64_t i = wk[k].index, leaf = find_node(keys, nn, w_tree[i], w_node[i]);
        if (leaf < 0) {
            st = og_op_error(c, OG_ERR_MODEL,
                             "a weight names node %lld of tree %lld, which "
                             "does not exist",
                             (long long)w_node[i], (long long)w_tree[i]);
            goto done;
        }
        if (w_id[i] < 0 || w_id[i] >= p->n_targets) {
            st = og_op_error(c, OG_ERR_MODEL, "%s_ids[%lld] is %lld, outside 0..%lld", w_prefix,
                             (long long)i, (long long)w_id[i], (long long)p->n_targets - 1);
            goto done;
        }
        og_tree_node *d = &p->nodes[leaf];
        if (d->mode != OG_TREE_LEAF) continue; /* onnxruntime ignores them */
        if (d->nw == 0) d->w0 = p->n_weights;
        d->nw++;
        p->weights[p->n_weights++] = (og_tree_weight){w_id[i], weights[i]};
    }
    if (nb && nb != p->n_targets && !p->classifier) {
        /* onnxruntime's regressor uses base_values of one entry for one target, else only
         * a full list */
        if (!(nb == 1 && p->n_targets == 1)) {
            st = og_op_error(c, OG_ERR_MODEL, "%lld base values for %lld targets", (long long)nb,
                             (long long)p->n_targets);
            goto done;
        }
    }
    p->n_base = nb;
    goto done;
nomem:
    st = og_op_error(c, OG_ERR_NOMEM, "out of memory parsing the trees");
done:
    og_free(c->alloc, keys);
    og_free(c->alloc, wk);
    og_free(c->alloc, values);
    og_free(c->alloc, weights);
    return st;
}

/* The new form: TreeEnsemble (ai.onnx.ml 5). */
static og_status parse_new(const og_op_ctx *c, og_tree_params *p)
{
    const og_node *n = c->node;
    const og_tensor *splits = og_attr_tensor(n, "nodes_splits"),
                    *modes = og_attr_tensor(n, "nodes_modes"),
                    *lw = og_attr_tensor(n, "leaf_weights"),
                    *members = og_attr_tensor(n, "membership_values");
    if (!splits || !modes || !lw)
        return og_op_error(c, OG_ERR_MODEL,
                           "attributes 'nodes_splits', 'nodes_modes' and 'leaf_weights' are "
                           "required");
    int64_t ns = modes->numel, nl = lw->numel;
    if (modes->dtype != OG_UINT8 || splits->numel != ns)
        return og_op_error(c, OG_ERR_MODEL,
                           "'nodes_modes' must be uint8 and as long as 'nodes_splits' (%lld, %lld)",
                           (long long)ns, (long long)splits->numel);
    const int64_t *feat, *tn, *fn, *tl, *fl, *missing, *ltarget, *roots;
    og_status st;
    int nr = 0;
    if ((st = ints_of(c, "nodes_featureids", ns, true, &feat)) ||
        (st = ints_of(c, "nodes_truenodeids", ns, true, &tn)) ||
        (st = ints_of(c, "nodes_falsenodeids", ns, true, &fn)) ||
        (st = ints_of(c, "nodes_trueleafs", ns, true, &tl)) ||
        (st = ints_of(c, "nodes_falseleafs", ns, true, &fl)) ||
        (st = ints_of(c, "nodes_missing_value_tracks_true", ns, false, &missing)) ||
        (st = ints_of(c, "leaf_targetids", nl, true, &ltarget)))
        return st;
    roots = og_attr_ints(n, "tree_roots", &nr);
    if (!roots || nr == 0) return og_op_error(c, OG_ERR_MODEL, "attribute 'tree_roots' is missing");
    p->n_nodes = ns + nl;
    p->n_trees = nr;
    p->nodes = og_calloc(c->alloc, (size_t)p->n_nodes + 1, sizeof *p->nodes);
    p->roots = og_malloc(c->alloc, (size_t)nr * sizeof *p->roots);
    p->weights = og_malloc(c->alloc, (size_t)nl * sizeof *p->weights + 1);
    if (!p->nodes || !p->roots || !p->weights) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    p->acc_double = splits->dtype == OG_DOUBLE || lw->dtype == OG_DOUBLE;
    /* BRANCH_MEMBER sets: membership_values split at NaNs, in node order */
    int64_t m_at = 0, m_n = members ? members->numel : 0;
    if (m_n) {
        p->members = og_malloc(c->alloc, (size_t)m_n * sizeof *p->members);
        if (!p->members) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
        for (int64_t i = 0; i < m_n; i++) p->members[i] = og_tensor_get_f64(members, i);
    }
    for (int64_t i = 0; i < ns; i++) {
        og_tree_node *d = &p->nodes[i];
        int m = ((const uint8_t *)modes->data)[i];
        if (m > OG_TREE_MEMBER)
            return og_op_error(c, OG_ERR_MODEL, "nodes_modes[%lld] is %d (0 to 6 are modes)",
                               (long long)i, m);
        d->mode = m;
        d->feature = feat[i];
        d->value = og_tensor_get_f64(splits, i);
        d->missing_true = missing && missing[i] == 1;
        if (d->feature < 0)
            return og_op_error(c, OG_ERR_MODEL, "node %lld splits on feature %lld", (long long)i,
                               (long long)d->feature);
        int64_t lim_t = tl[i] ? nl : ns, lim_f = fl[i] ? nl : ns;
        if (tn[i] < 0 || tn[i] >= lim_t || fn[i] < 0 || fn[i] >= lim_f)
            return og_op_error(c, OG_ERR_MODEL, "node %lld has a child outside its list",
                               (long long)i);
        d->t = tl[i] ? ns + tn[i] : tn[i];
        d->f = fl[i] ? ns + fn[i] : fn[i];
        if (m == OG_TREE_MEMBER) {
            d->set0 = m_at;
            while (m_at < m_n && !isnan(p->members[m_at])) m_at++;
            d->nset = m_at - d->set0;
            m_at++; /* past the NaN */
        }
    }
    for (int64_t i = 0; i < nl; i++) {
        og_tree_node *d = &p->nodes[ns + i];
        d->mode = OG_TREE_LEAF;
        d->w0 = i;
        d->nw = 1;
        if (ltarget[i] < 0 || ltarget[i] >= p->n_targets)
            return og_op_error(c, OG_ERR_MODEL, "leaf_targetids[%lld] is %lld, outside 0..%lld",
                               (long long)i, (long long)ltarget[i], (long long)p->n_targets - 1);
        p->weights[i] = (og_tree_weight){ltarget[i], og_tensor_get_f64(lw, i)};
    }
    p->n_weights = nl;
    for (int i = 0; i < nr; i++) {
        if (roots[i] < 0 || roots[i] >= ns)
            return og_op_error(c, OG_ERR_MODEL, "tree_roots[%d] is %lld, outside 0..%lld", i,
                               (long long)roots[i], (long long)ns - 1);
        p->roots[i] = roots[i];
    }
    return OG_OK;
}

og_status og_ml_tree_parse(const og_op_ctx *c, void **params)
{
    const og_node *n = c->node;
    og_tree_params *p = og_calloc(c->alloc, 1, sizeof *p);
    *params = p;
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    og_status st;
    p->classifier = strcmp(n->op_type, "TreeEnsembleClassifier") == 0;
    bool new_form = strcmp(n->op_type, "TreeEnsemble") == 0;
    p->out_x_dtype = new_form;
    p->double_out = og_ml_declared_double(c, p->classifier ? 1 : 0);
    p->max_feature = -1;
    if (new_form) {
        int64_t agg = og_attr_int(n, "aggregate_function", 1),
                post = og_attr_int(n, "post_transform", 0);
        if (agg < 0 || agg > 3 || post < 0 || post > 4)
            return og_op_error(c, OG_ERR_MODEL,
                               "aggregate_function %lld (0 to 3) or post_transform %lld (0 to 4) "
                               "out of range",
                               (long long)agg, (long long)post);
        p->agg = (og_tree_agg)agg;
        p->post = (og_post)post;
        p->n_targets = og_attr_int(n, "n_targets", 1);
    } else {
        static const char *const aggs[] = {"AVERAGE", "SUM", "MIN", "MAX"};
        const char *a = og_attr_string(n, "aggregate_function", "SUM");
        p->agg = (og_tree_agg)-1;
        for (int i = 0; i < 4; i++)
            if (strcmp(a, aggs[i]) == 0) p->agg = (og_tree_agg)i;
        if ((int)p->agg < 0) return og_op_error(c, OG_ERR_MODEL, "aggregate_function is '%s'", a);
        if ((st = og_ml_post_transform(c, "post_transform", &p->post))) return st;
        if (p->classifier) {
            p->agg = OG_AGG_SUM;
            int ni = 0;
            p->labels_i = og_attr_ints(n, "classlabels_int64s", &ni);
            const og_attr *ls = og_node_attr(n, "classlabels_strings");
            int nl = ls && ls->type == OG_ATTR_STRINGS ? ls->n : 0;
            if ((ni > 0) == (nl > 0))
                return og_op_error(c, OG_ERR_MODEL,
                                   "exactly one of 'classlabels_int64s' and 'classlabels_strings' "
                                   "must be given (int64s: %d, strings: %d)",
                                   ni, nl);
            p->string_labels = nl > 0;
            p->labels_s = ls ? ls->strings : NULL;
            p->n_labels = nl > 0 ? nl : ni;
            p->n_targets = p->n_labels;
            if (p->n_labels < 2)
                return og_op_error(c, OG_ERR_UNSUPPORTED, "a classifier of %lld class",
                                   (long long)p->n_labels);
        } else {
            p->n_targets = og_attr_int(n, "n_targets", 1);
        }
    }
    if (p->n_targets < 1 || p->n_targets > (int64_t)1 << 24)
        return og_op_error(c, OG_ERR_MODEL, "n_targets is %lld", (long long)p->n_targets);
    st = new_form ? parse_new(c, p) : parse_old(c, p);
    if (st) return st;
    for (int64_t i = 0; i < p->n_nodes; i++) /* the largest feature a split reads */
        if (p->nodes[i].mode != OG_TREE_LEAF && p->nodes[i].feature > p->max_feature)
            p->max_feature = p->nodes[i].feature;
    if (p->classifier) {
        /* onnxruntime's binary case: two classes and weights for one class only */
        bool positive = true;
        int64_t first = -1;
        bool one_class = true;
        for (int64_t i = 0; i < p->n_weights; i++) {
            if (p->weights[i].weight < 0) positive = false;
            if (first < 0) first = p->weights[i].target;
            one_class = one_class && p->weights[i].target == first;
        }
        p->binary_case = p->n_targets == 2 && p->n_weights > 0 && one_class;
        p->all_positive = positive;
    }
    return check_acyclic(c, p);
}

og_status og_ml_tree_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    const og_tree_params *p = c->node->params;
    static const og_dtype old_types[] = {OG_FLOAT, OG_DOUBLE, OG_INT64, OG_INT32, OG_UNDEFINED};
    static const og_dtype new_types[] = {OG_FLOAT, OG_DOUBLE, OG_UNDEFINED};
    og_status st = og_check_dtype(c, in, 0, p->out_x_dtype ? new_types : old_types);
    if (st) return st;
    if (in[0].rank >= 0 && (in[0].rank < 1 || in[0].rank > 2))
        return og_op_error(c, c->runtime ? OG_ERR_SHAPE : OG_ERR_MODEL,
                           "input X has rank %d; it must be [N, F] or [F]", in[0].rank);
    int64_t n = in[0].rank == 2 ? in[0].dims[0] : in[0].rank == 1 ? 1 : OG_DIM_UNKNOWN;
    int64_t f = in[0].rank >= 1 ? in[0].dims[in[0].rank - 1] : OG_DIM_UNKNOWN;
    if (f >= 0 && p->max_feature >= f)
        return og_op_error(c, c->runtime ? OG_ERR_SHAPE : OG_ERR_MODEL,
                           "a split reads feature %lld but X has %lld features",
                           (long long)p->max_feature, (long long)f);
    og_dtype fd = p->out_x_dtype ? in[0].dtype : p->double_out ? OG_DOUBLE : OG_FLOAT;
    int64_t d[2] = {n, p->n_targets};
    int rank = in[0].rank >= 0 ? 2 : -1;
    if (!p->classifier) {
        og_vinfo_set(&out[0], fd, rank, d);
        return OG_OK;
    }
    og_vinfo_set(&out[0], p->string_labels ? OG_STRING : OG_INT64, rank >= 0 ? 1 : -1, &n);
    if (n_out > 1) og_vinfo_set(&out[1], fd, rank, d);
    return OG_OK;
}
